//! The end-to-end suite's own helpers: expected-output files, the bulk data set and python-ldap
//! scripts, on top of the server harness in `canopy-harness` (re-exported here, so tests keep
//! writing `use canopy_e2e::*`).
//!
//! The target comes from `CANOPY_E2E_TARGET` (`canopy`, the default, or `slapd`); see
//! docs/testing.md.

pub mod bulk;
pub mod expect;
pub mod python;
pub mod replicas;

pub use canopy_harness::{
    client, consumer_support, ldif, mesh, preload, replication, server, slapd_conf, tempdir, tools,
};

pub use bulk::{bulk_base, bulk_ldif, Bulk, BULK};
pub use canopy_harness::{
    base_ldif, user_dn, Bind, Out, Server, Target, Via, CONFIG_ROOT_DN, CONFIG_ROOT_PW, ROOT_DN,
    ROOT_PW, SUFFIX,
};
pub use expect::Transcript;
pub use python::Python;

use std::path::PathBuf;

/// tests/e2e/data: LDIF inputs besides the base directory (which is [`base_ldif`]).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// tests/e2e/py: python-ldap scripts.
pub fn py_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("py")
}

/// Runs `attempt` once against Canopy, and up to three times against Debian's slapd while
/// `flaked` recognises in its answer one of slapd 2.5's known races (`why` names it, and each
/// retry is reported on stderr). A test stays strict for Canopy, which must never show them; the
/// reference run only proves the expectations, and a race inside slapd is not an expectation.
pub fn reference_retry<T>(
    why: &str,
    mut attempt: impl FnMut() -> T,
    flaked: impl Fn(&T) -> bool,
) -> T {
    let tries = if Target::from_env() == Target::Slapd {
        3
    } else {
        1
    };
    let mut answer = attempt();
    for n in 1..tries {
        if !flaked(&answer) {
            break;
        }
        eprintln!(
            "slapd showed its known race ({why}); attempt {} of {tries}",
            n + 1
        );
        answer = attempt();
    }
    answer
}

/// Runs a whole test body once against Canopy, and against Debian's slapd up to three times while it
/// fails, for checks where slapd 2.5 races under load (`why` names the race; each retry is reported
/// on stderr). The last failure is the test's.
pub fn reference_attempts(why: &str, body: impl Fn()) {
    let tries = if Target::from_env() == Target::Slapd {
        3
    } else {
        1
    };
    for n in 1..tries {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&body)) {
            Ok(()) => return,
            Err(_) => eprintln!(
                "slapd failed a check it races on ({why}); attempt {} of {tries}",
                n + 1
            ),
        }
    }
    body();
}
