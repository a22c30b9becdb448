//! One conformance run: start both servers on the same data, run the random filters, the corpus and
//! the generated write sequences against each, compare, and write the report.

use crate::case::Case;
use crate::client::Outcome;
use crate::compare::{brief, diff, Kind};
use crate::corpus::{self, CorpusError};
use crate::data::{self, DataError};
use crate::generate::Generator;
use crate::report::Tally;
use crate::sequence::{Sequence, SequenceGen};
use crate::servers::{write_ldif, Endpoint, SetupError};
use crate::shrink;
use canopy_harness::Target;
use std::io::Write as _;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Options {
    /// Corpus files or directories (`*.corpus`).
    pub corpus: Vec<PathBuf>,
    /// Directory of data `*.ldif` files.
    pub data: PathBuf,
    pub seeds: Vec<u64>,
    /// Random filters per seed.
    pub filters: usize,
    /// Generated write sequences per seed (run after the corpus).
    pub sequences: usize,
    /// Also load `aliases*.ldif` and run `aliases*.corpus`.
    pub aliases: bool,
    pub report: PathBuf,
    /// Also print one line per agreeing case.
    pub verbose: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("report {path}: {source}")]
    Report {
        path: String,
        source: std::io::Error,
    },
}

/// Runs everything; returns the tally (differences are in the report, not errors).
pub fn run(opts: &Options) -> Result<Tally, RunError> {
    let mut cases: Vec<Case> = Vec::new();
    for path in &opts.corpus {
        let loaded = corpus::load(path)?;
        cases.extend(
            loaded
                .into_iter()
                .filter(|c| opts.aliases || !c.origin.starts_with("aliases")),
        );
    }
    let files = data::data_files(&opts.data, opts.aliases)?;
    let (ldif, pool) = data::load(&files)?;

    let scratch = std::env::temp_dir().join(format!("canopy-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|source| SetupError::Write {
        path: scratch.display().to_string(),
        source,
    })?;
    let result = run_in(opts, &scratch, &ldif, &files, &pool, &cases);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn run_in(
    opts: &Options,
    scratch: &std::path::Path,
    ldif: &[u8],
    files: &[PathBuf],
    pool: &crate::data::Pool,
    cases: &[Case],
) -> Result<Tally, RunError> {
    let ldif_path = write_ldif(scratch, ldif)?;
    let mut slapd = Endpoint::start(Target::Slapd, &ldif_path)?;
    let mut canopy = Endpoint::start(Target::Canopy, &ldif_path)?;

    let mut out = Reporter::new(&opts.report)?;
    out.line(&format!(
        "conformance run: data {} ({} entries), {} corpus cases, seeds {:?} x {} filters\n\
         write sequences: {} per seed\n\
         slapd {} in {}\ncanopy {} in {} ({})\n",
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        pool.entries.len(),
        cases.len(),
        opts.seeds,
        opts.filters,
        opts.sequences,
        slapd.url(),
        slapd.dir().display(),
        canopy.url(),
        canopy.dir().display(),
        binary_age(),
    ))?;

    let mut tally = Tally::default();
    // Random filters first: they sample the data as loaded, before the corpus writes to it.
    for &seed in &opts.seeds {
        let mut generator = Generator::new(pool, seed, opts.aliases);
        for _ in 0..opts.filters {
            let case = generator.next_case();
            run_one(
                &case,
                &mut slapd,
                &mut canopy,
                &mut tally,
                &mut out,
                opts.verbose,
            )?;
        }
    }
    for case in cases {
        run_one(
            case,
            &mut slapd,
            &mut canopy,
            &mut tally,
            &mut out,
            opts.verbose,
        )?;
    }
    // Write sequences last: their sandboxes would show up in the corpus's subtree searches.
    for &seed in &opts.seeds {
        let mut generator = SequenceGen::new(seed, opts.aliases);
        for _ in 0..opts.sequences {
            let sequence = generator.next_sequence();
            run_sequence(&sequence, &mut slapd, &mut canopy, &mut tally, &mut out)?;
        }
    }
    if !canopy.alive() {
        out.line("canopy is no longer running (crashed?)")?;
    }
    out.line(tally.summary().trim_end())?;
    Ok(tally)
}

fn run_one(
    case: &Case,
    slapd: &mut Endpoint,
    canopy: &mut Endpoint,
    tally: &mut Tally,
    out: &mut Reporter,
    verbose: bool,
) -> Result<(), RunError> {
    let mut reference = slapd.run(case);
    let candidate = canopy.run(case);
    // slapd 2.5's sssvlv may answer busy (51) to a sort that arrives before it has put away the
    // previous one on the connection (a race under load): asked again after a pause, it answers.
    let mut tries = 0;
    while tries < 3 && busy(&reference) && !busy(&candidate) {
        tries += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
        reference = slapd.run(case);
    }
    let diffs = diff(&reference, &candidate);
    let culprits = if diffs.iter().any(|d| d.kind != Kind::DnForm) {
        shrink::culprits(case, slapd, canopy)
    } else {
        Vec::new()
    };
    match tally.record(case, &diffs, &culprits) {
        Some(text) => out.line(&text)?,
        None if verbose => out.line(&format!("ok [{}] {}", case.origin, brief(&reference)))?,
        None => {}
    }
    Ok(())
}

/// Whether an answer (or a page of it) is busy (51).
fn busy(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Search { status, .. } | Outcome::Done(status) => status.code == 51,
        Outcome::Pages(pages) => pages.iter().any(busy),
        Outcome::Failed(_) => false,
    }
}

/// Runs one write sequence until its first difference: the two directories then hold different
/// sandboxes, so the steps after it would only repeat it. The report shows the writes that led there.
fn run_sequence(
    sequence: &Sequence,
    slapd: &mut Endpoint,
    canopy: &mut Endpoint,
    tally: &mut Tally,
    out: &mut Reporter,
) -> Result<(), RunError> {
    // A read-back after a write both servers refused would show what the previous one showed: skipped.
    let mut changed = true;
    for (i, case) in sequence.steps.iter().enumerate() {
        if !case.is_write() && !changed {
            continue;
        }
        let reference = slapd.run(case);
        let candidate = canopy.run(case);
        if case.is_write() {
            let done = |o: &Outcome| matches!(o, Outcome::Done(status) if status.code == 0);
            changed = done(&reference) || done(&candidate);
        }
        let diffs = diff(&reference, &candidate);
        let Some(text) = tally.record(case, &diffs, &[]) else {
            continue;
        };
        let mut context = format!(
            "  (step {} of {}; the writes before it, as root unless noted:)\n",
            i + 1,
            sequence.steps.len()
        );
        for earlier in sequence.steps[..i].iter().filter(|c| c.is_write()) {
            for line in earlier.replay("\"$URL\"").lines() {
                context.push_str("    ");
                context.push_str(line);
                context.push('\n');
            }
        }
        tally.skipped += sequence.steps.len() - i - 1;
        out.line(&format!("{text}{context}"))?;
        break;
    }
    Ok(())
}

/// Which canopy build ran, so readers of an old report can tell.
fn binary_age() -> String {
    let Some(bin) = std::env::var_os("CANOPY_BIN") else {
        return "binary unknown".into();
    };
    let age = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map(|d| format!("built {} min ago", d.as_secs() / 60))
        .unwrap_or_else(|| "build time unknown".into());
    format!("{}, {age}", std::path::Path::new(&bin).display())
}

/// Prints to stdout and to the report file as the run goes, so a long run can be watched.
struct Reporter {
    path: PathBuf,
    file: std::fs::File,
}

impl Reporter {
    fn new(path: &PathBuf) -> Result<Reporter, RunError> {
        let err = |source| RunError::Report {
            path: path.display().to_string(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let file = std::fs::File::create(path).map_err(err)?;
        Ok(Reporter {
            path: path.clone(),
            file,
        })
    }

    fn line(&mut self, text: &str) -> Result<(), RunError> {
        // A closed stdout (`| head`) must not stop the run; the file still gets everything.
        let _ = writeln!(std::io::stdout(), "{text}");
        writeln!(self.file, "{text}").map_err(|source| RunError::Report {
            path: self.path.display().to_string(),
            source,
        })
    }
}
