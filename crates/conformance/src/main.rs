//! `canopy-conformance`: compares canopy with Debian's slapd on the same data and requests.
//! Exit status 0 when they agree on every case, 1 on any difference, 2 when setup fails.

use canopy_conformance::run::{run, Options};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// tests/conformance in the source tree.
fn tests_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
    dir.canonicalize().unwrap_or(dir)
}

#[derive(Parser, Debug)]
#[command(about = "Differential conformance test: canopy against Debian's slapd")]
struct Args {
    /// Corpus file or directory of *.corpus files (repeatable) [default: tests/conformance/corpus]
    #[arg(long)]
    corpus: Vec<PathBuf>,
    /// Directory of data *.ldif files [default: tests/conformance/data]
    #[arg(long)]
    data: Option<PathBuf>,
    /// Random-filter seeds (repeatable, or several after one --seed) [default: 1 2 3]
    #[arg(long, num_args = 1..)]
    seed: Vec<u64>,
    /// Random filters per seed
    #[arg(long, default_value_t = 2000)]
    filters: usize,
    /// Generated write sequences per seed (each in a sandbox of its own, after the corpus)
    #[arg(long, default_value_t = 0)]
    sequences: usize,
    /// The canopy binary [default: `canopy` next to this executable]
    #[arg(long)]
    canopy_bin: Option<PathBuf>,
    /// Where to write the report (also printed)
    #[arg(long, default_value = "/tmp/conformance/report.txt")]
    report: PathBuf,
    /// Keep both servers' scratch directories
    #[arg(long)]
    keep: bool,
    /// Leave out aliases*.ldif (alias and referral entries) and aliases*.corpus
    #[arg(long)]
    no_aliases: bool,
    /// Also list every agreeing case with slapd's result
    #[arg(long, short)]
    verbose: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let bin = args.canopy_bin.clone().or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.join("canopy")))
    });
    // The test harness (canopy-harness) takes its settings from the environment; set before any thread starts.
    if let Some(bin) = bin {
        if !bin.exists() {
            eprintln!(
                "conformance setup failed: no canopy binary at {} (build it with `cargo build -p \
                 canopy` in the same target directory, or pass --canopy-bin)",
                bin.display()
            );
            return ExitCode::from(2);
        }
        std::env::set_var("CANOPY_BIN", bin);
    }
    if args.keep {
        std::env::set_var("CANOPY_E2E_KEEP", "1");
    }
    let opts = Options {
        corpus: if args.corpus.is_empty() {
            vec![tests_dir().join("corpus")]
        } else {
            args.corpus
        },
        data: args.data.unwrap_or_else(|| tests_dir().join("data")),
        seeds: if args.seed.is_empty() {
            vec![1, 2, 3]
        } else {
            args.seed
        },
        filters: args.filters,
        sequences: args.sequences,
        aliases: !args.no_aliases,
        report: args.report,
        verbose: args.verbose,
    };
    match run(&opts) {
        Ok(tally) if !tally.any_difference() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("conformance setup failed: {e}");
            ExitCode::from(2)
        }
    }
}
