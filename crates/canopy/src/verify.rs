//! `canopy verify`: the consistency check of a database (a fsck), beside a live server or offline.

use anyhow::{anyhow, Result};
use canopy_server::Config;

use crate::progress::{Progress, Unit};

/// Checks every table; prints each problem on standard output, a summary on standard error. Returns
/// whether the database is consistent.
pub fn verify(config: &Config) -> Result<bool> {
    if !config.data_dir.join(canopy_mdb::DATA_FILE).is_file() {
        return Err(anyhow!(
            "no database at {}",
            config.data_dir.join(canopy_mdb::DATA_FILE).display()
        ));
    }
    let dir = canopy_server::open_directory(config, false)?;
    // The entry walk is most of the work (it computes every index key); the table walks after it
    // are reported in the summary.
    let mut bar: Option<Progress> = None;
    let mut progress = |phase: &str, done: u64, total: u64| {
        if phase != "entries" {
            return;
        }
        let bar = bar.get_or_insert_with(|| Progress::new("verify", Unit::Entries, Some(total)));
        if done >= total {
            bar.finish(done);
        } else {
            bar.set(done);
        }
    };
    let mut report = |problem: canopy_directory::verify::Problem| println!("{problem}");
    let summary = dir
        .backend()
        .verify(&mut progress, &mut report)
        .map_err(|e| anyhow!("reading {}: {e}", config.data_dir.display()))?;
    let tables: Vec<String> = summary
        .tables
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    eprintln!(
        "verify: {} entries; records read: {}; {} problem{}",
        summary.entries,
        tables.join(", "),
        summary.problems,
        if summary.problems == 1 { "" } else { "s" }
    );
    if !summary.building.is_empty() {
        eprintln!(
            "verify: not checked, still building: {}",
            summary.building.join(", ")
        );
    }
    Ok(summary.problems == 0)
}
