//! `canopy bench`: a load generator for any LDAP server (seed 001's bench master with the workloads of seeds
//! 000 and 002), the DirectoryMark-like data generator, and the SVG charts of saved results.
//!
//! Owns: load generation and reports, and the storage-free limit server (`canned`). Must never: link the
//! server or the store: it measures any server only through LDAP on a socket.

pub mod canned;
pub mod chart;
pub mod client;
pub mod cpu;
pub mod gen;
pub mod histogram;
pub mod ldap;
pub mod report;
pub mod rng;
pub mod run;
pub mod stats;
pub mod workload;

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::report::StepResult;
use crate::workload::{Session, Workload};

/// `canopy bench ...`
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Generate DirectoryMark-like LDIF (deterministic for the same arguments).
    Gen(Box<GenArgs>),
    /// Load one or more LDAP servers with a workload and report throughput, latency and CPU.
    Run(Box<RunArgs>),
    /// Redraw the SVG charts from saved --json results.
    Chart(ChartArgs),
    /// A storage-free LDAP server on canopy's codec and connection loop that answers every search with one
    /// fixed entry: the physical limit of the messaging workloads on this machine (docs/PERFORMANCE.md).
    Canned(canned::CannedArgs),
    /// Internal: a client process started by `run --processes K` (job on stdin, report on stdout).
    #[command(hide = true)]
    Worker,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Number of people (inetOrgPerson entries uid=user0000000 ...).
    #[arg(long)]
    pub entries: u64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Approximate size of one person's LDIF record in bytes (seed 001 used 488 and 4880).
    #[arg(long, default_value_t = 500)]
    pub entry_size: usize,
    #[arg(long, default_value = "dc=example,dc=com")]
    pub suffix: String,
    /// Give every person userPassword {SSHA} of "pw-userNNNNNNN".
    #[arg(long)]
    pub passwords: bool,
    /// Output file ("-" for standard output).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Server to measure, ldap://HOST:PORT (repeatable: measured one after another).
    #[arg(long = "url", required = true)]
    pub urls: Vec<String>,
    #[arg(long, value_enum)]
    pub workload: Workload,
    /// Number of people in the loaded directory: the key range of random picks.
    #[arg(long)]
    pub entries: u64,
    /// Concurrent clients; a list (1,4,16,64) measures each count in turn.
    #[arg(long, value_delimiter = ',', default_value = "16")]
    pub clients: Vec<usize>,
    /// Spread the clients over this many worker processes.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Measured time per server and step, e.g. 30s, 500ms, 2m.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Unmeasured time before each step.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub warmup: Duration,
    #[arg(long, value_enum, default_value = "persistent")]
    pub session: Session,
    /// Open loop: offered requests per second over all clients.
    #[arg(long, conflicts_with = "rate_steps")]
    pub rate: Option<f64>,
    /// Open loop in steps: one measured run per rate, e.g. 1000,2000,4000.
    #[arg(long, value_delimiter = ',')]
    pub rate_steps: Vec<f64>,
    /// Identity for writes (and messaging sessions when people have no passwords).
    #[arg(long, default_value = "cn=admin,dc=example,dc=com")]
    pub bind_dn: String,
    #[arg(long, default_value = "secret")]
    pub bind_pw: String,
    /// Seed of the generated data (addressing recomputes names from it) and of the key choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[arg(long, default_value = "dc=example,dc=com")]
    pub suffix: String,
    /// Label of each --url, in order (default canopy, slapd, server3, ...).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// PID of each server, in --url order, to report its CPU from /proc/PID/stat.
    #[arg(long = "server-pid")]
    pub server_pids: Vec<u32>,
    /// Write every figure as JSON (an array with one object per server and step).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the Markdown table to this file as well.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write SVG charts into this directory.
    #[arg(long)]
    pub svg_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ChartArgs {
    /// Results written by `run --json` (repeatable).
    #[arg(long = "json", required = true)]
    pub json: Vec<PathBuf>,
    #[arg(long)]
    pub svg_dir: PathBuf,
}

/// "30s", "500ms", "2m", "1h" or plain seconds ("30", "0.5").
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?} (e.g. 30s, 500ms, 2m)"))?;
    if !v.is_finite() || v < 0.0 || v * scale > 1e7 {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// Runs a `canopy bench` subcommand.
pub fn main(args: BenchArgs) -> Result<()> {
    match args.command {
        BenchCommand::Gen(a) => gen_cmd(&a),
        BenchCommand::Run(a) => run_cmd(&a),
        BenchCommand::Chart(a) => chart_cmd(&a),
        BenchCommand::Canned(a) => canned::main(&a),
        BenchCommand::Worker => run::worker_main(),
    }
}

fn gen_cmd(a: &GenArgs) -> Result<()> {
    if a.entries > 10_000_000 {
        bail!("--entries must be at most 10000000 (uids have seven digits)");
    }
    let params = gen::GenParams {
        entries: a.entries,
        seed: a.seed,
        entry_size: a.entry_size,
        suffix: a.suffix.clone(),
        passwords: a.passwords,
    };
    if a.out.as_os_str() == "-" {
        let mut out = BufWriter::new(std::io::stdout().lock());
        gen::write_ldif(&params, &mut out)?;
    } else {
        let file = File::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        gen::write_ldif(&params, &mut out)
            .with_context(|| format!("writing {}", a.out.display()))?;
    }
    Ok(())
}

fn run_cmd(a: &RunArgs) -> Result<()> {
    if a.server_pids.len() > a.urls.len() || a.labels.len() > a.urls.len() {
        bail!("more --label or --server-pid than --url");
    }
    if a.rate
        .iter()
        .chain(&a.rate_steps)
        .any(|r| r.is_nan() || *r <= 0.0)
    {
        bail!("rates must be positive");
    }
    let rates = if !a.rate_steps.is_empty() {
        a.rate_steps.iter().map(|r| Some(*r)).collect()
    } else {
        vec![a.rate]
    };
    let plan = run::RunPlan {
        urls: a.urls.clone(),
        labels: a.labels.clone(),
        server_pids: a.server_pids.clone(),
        workload: a.workload,
        session: a.session,
        entries: a.entries,
        clients: a.clients.clone(),
        processes: a.processes,
        duration: a.duration,
        warmup: a.warmup,
        rates,
        bind_dn: a.bind_dn.clone(),
        bind_pw: a.bind_pw.clone(),
        seed: a.seed,
        suffix: a.suffix.clone(),
    };
    let results = run::run_plan(&plan, &mut |r| {
        eprintln!(
            "bench: {} {} {} clients{}: {:.0}/s, response p50 {:.3} ms p99 {:.3} ms, {} errors",
            r.label,
            r.workload,
            r.clients,
            r.offered_rate
                .map_or(String::new(), |x| format!(" at {x:.0}/s offered")),
            r.throughput,
            r.response.p50_ms,
            r.response.p99_ms,
            r.error_total
        );
    })?;
    let table = report::markdown(&results);
    print!("{table}");
    std::io::stdout().flush()?;
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&results)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.markdown {
        std::fs::write(path, &table).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = &a.svg_dir {
        chart::write_charts(&results, dir)
            .with_context(|| format!("writing charts to {}", dir.display()))?;
    }
    Ok(())
}

/// Reads results saved by `run --json` (one array per file).
pub fn read_results(paths: &[PathBuf]) -> Result<Vec<StepResult>> {
    let mut all = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        let mut rs: Vec<StepResult> =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        all.append(&mut rs);
    }
    Ok(all)
}

fn chart_cmd(a: &ChartArgs) -> Result<()> {
    let results = read_results(&a.json)?;
    for p in chart::write_charts(&results, &a.svg_dir)? {
        println!("{}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let check = |s: &str, want: Option<f64>| {
            assert_eq!(parse_duration(s).ok().map(|d| d.as_secs_f64()), want, "{s}");
        };
        check("30s", Some(30.0));
        check("500ms", Some(0.5));
        check("2m", Some(120.0));
        check("1h", Some(3600.0));
        check("2.5", Some(2.5));
        check("abc", None);
        check("-1s", None);
        check("", None);
    }

    #[test]
    fn command_line_parses() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: BenchArgs,
        }
        let cli = Cli::try_parse_from([
            "canopy-bench",
            "run",
            "--url",
            "ldap://127.0.0.1:1",
            "--url",
            "ldap://127.0.0.1:2",
            "--workload",
            "messaging",
            "--entries",
            "100",
            "--rate-steps",
            "100,200",
            "--session",
            "per-op",
            "--label",
            "a",
            "--server-pid",
            "1",
        ])
        .unwrap();
        let BenchCommand::Run(r) = cli.args.command else {
            panic!()
        };
        assert_eq!(r.urls.len(), 2);
        assert_eq!(r.rate_steps, vec![100.0, 200.0]);
        assert_eq!(r.session, Session::PerOp);
        assert_eq!(r.duration, Duration::from_secs(30));
        assert!(Cli::try_parse_from([
            "canopy-bench",
            "run",
            "--url",
            "ldap://x",
            "--workload",
            "search",
            "--entries",
            "1",
            "--rate",
            "5",
            "--rate-steps",
            "1,2",
        ])
        .is_err());
        assert!(
            Cli::try_parse_from(["canopy-bench", "gen", "--entries", "5", "--out", "-"]).is_ok()
        );
        // As the canopy binary embeds it: a `bench` variant beside global options.
        #[derive(Parser)]
        struct Canopy {
            #[arg(long, global = true)]
            data: Option<PathBuf>,
            #[command(subcommand)]
            command: CanopyCommand,
        }
        #[derive(clap::Subcommand)]
        enum CanopyCommand {
            Bench(BenchArgs),
        }
        let c = Canopy::try_parse_from(["canopy", "--data", "d", "bench", "worker"]).unwrap();
        assert!(c.data.is_some());
        let CanopyCommand::Bench(b) = c.command;
        assert!(matches!(b.command, BenchCommand::Worker));
        assert!(Canopy::try_parse_from([
            "canopy",
            "bench",
            "chart",
            "--json",
            "a",
            "--svg-dir",
            "d"
        ])
        .is_ok());
    }
}
