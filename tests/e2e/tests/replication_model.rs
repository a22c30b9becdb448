//! The randomized replication harness (crates/harness/src/replmodel): each seed generates a topology
//! with canopy and Debian's slapd, preloaded data, client writes and faults, runs it on real servers
//! and checks convergence, that no acknowledged write is lost and that no server is emptied.
//! Slow, so ignored by a plain `cargo test`; scripts/test.sh runs a bounded set of seeds and
//! scripts/soak-replication many more. `CANOPY_REPL_SEED=N` replays one seed, `CANOPY_REPL_SEEDS`
//! takes a count (`8`), a range (`20-40`) or a list (`3,17`); `CANOPY_REPL_VERBOSE=1` prints the
//! whole scenario and run of passing seeds too.

use canopy_harness::replmodel;

/// The seeds a run without `CANOPY_REPL_SEED(S)` takes: every shape, with and without slapd.
const DEFAULT_SEEDS: &str = "10";

#[test]
#[ignore = "slow (about half a minute per seed): scripts/test.sh and scripts/soak-replication run it"]
fn random_replication_scenarios() {
    let seeds = replmodel::seeds_from_env(DEFAULT_SEEDS).unwrap_or_else(|e| panic!("{e}"));
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let slapd = replmodel::slapd_installed();
    assert!(
        slapd || !ci,
        "Debian's slapd is not installed (CI=true): install it (scripts/test.sh does)"
    );
    let mut reports = Vec::new();
    for seed in seeds {
        let scenario = replmodel::generate(seed);
        if scenario.needs_slapd() && !slapd {
            println!("seed {seed}: skipped, slapd is not installed");
            continue;
        }
        let report = replmodel::run_seed(seed);
        if report.passed && std::env::var_os("CANOPY_REPL_VERBOSE").is_none() {
            println!("{}", report.summary);
        } else {
            println!("{}", report.text);
        }
        reports.push(report);
    }
    println!("=== replication model summary ({} seeds)", reports.len());
    for r in &reports {
        println!("  {}", r.summary);
    }
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.seed.to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} seeds failed: {} (replay one with CANOPY_REPL_SEED=N cargo test -p canopy-e2e \
         --test replication_model -- --ignored --nocapture)",
        failed.len(),
        reports.len(),
        failed.join(" ")
    );
}
