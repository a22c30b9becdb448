//! What the replication tests of canopy consumers share: the gate that skips them when the target is
//! slapd (both ends are started by the test), and a convergence assert that shows the consumer's log.

use std::time::Duration;

use canopy_harness::consumer_support::wait_converged;
use canopy_harness::{Server, Target};

/// Whether the target is canopy; prints why the test is skipped when it is slapd.
pub fn canopy_only(why: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {why}");
        return false;
    }
    true
}

/// Panics unless `consumer` holds `provider`'s contextCSN and contents within `limit`.
#[track_caller]
pub fn assert_converged(provider: &Server, consumer: &Server, limit: Duration, what: &str) {
    if let Err(diff) = wait_converged(provider, consumer, limit) {
        panic!(
            "{what}: no convergence within {limit:?}:\n{diff}\nconsumer log:\n{}",
            consumer.log()
        );
    }
}
