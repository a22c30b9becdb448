//! `bench run`: the bench master. For each server it probes the data, lays out the timeline (fill, warm-up
//! and measured steps), runs the clients as threads or as worker processes (re-executing this binary), samples
//! client and server CPU at the step boundaries and merges everything into one result per server and step.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use canopy_proto::{
    DerefAliases, Filter, LdapMessage, ProtocolOp, ResultCode, SearchRequest, SearchScope,
};
use serde::{Deserialize, Serialize};

use crate::client::{run_client, ClientId, PhaseTimes, Timeline};
use crate::cpu;
use crate::gen;
use crate::ldap::{resolve_url, Conn};
use crate::report::{StepContext, StepResult};
use crate::stats::{PhaseStats, WireStats};
use crate::workload::{Keyspace, Workload};

/// Everything a worker process needs; sent as JSON on its standard input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerJob {
    pub keyspace: Keyspace,
    pub addr: SocketAddr,
    pub first_client: usize,
    pub client_count: usize,
    pub total_clients: usize,
    /// Wall-clock start of the timeline (ms since the epoch): processes share no clock but this one.
    pub start_unix_ms: u64,
    pub fill_ms: u64,
    pub steps: Vec<StepSpec>,
}

/// One load step.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct StepSpec {
    pub rate: Option<f64>,
    pub warmup_ms: u64,
    pub duration_ms: u64,
}

/// A worker's answer on standard output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerReport {
    pub steps: Vec<WireStats>,
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The local instant of wall-clock time `unix_ms`.
fn instant_of(unix: u64) -> Instant {
    let now_unix = unix_ms();
    let now = Instant::now();
    if unix >= now_unix {
        now.checked_add(Duration::from_millis(unix - now_unix))
            .unwrap_or(now)
    } else {
        now.checked_sub(Duration::from_millis(now_unix - unix))
            .unwrap_or(now)
    }
}

impl WorkerJob {
    fn timeline(&self) -> Timeline {
        let start = instant_of(self.start_unix_ms);
        let fill_end = start + Duration::from_millis(self.fill_ms);
        let mut t = fill_end;
        let phases = self
            .steps
            .iter()
            .map(|s| {
                let warm = t;
                let begin = warm + Duration::from_millis(s.warmup_ms);
                let end = begin + Duration::from_millis(s.duration_ms);
                t = end;
                PhaseTimes {
                    rate: s.rate,
                    warm,
                    start: begin,
                    end,
                }
            })
            .collect();
        Timeline { fill_end, phases }
    }
}

/// Runs this job's clients as threads of this process; the phase CPU figures are this process's.
fn run_threads(job: &WorkerJob, server_pid: Option<u32>) -> (Vec<PhaseStats>, Vec<Option<f64>>) {
    let tl = job.timeline();
    let (stats, (own_cpu, server_cpu)) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..job.client_count)
            .map(|k| {
                let (job, tl) = (&job, &tl);
                let id = ClientId {
                    index: job.first_client + k,
                    total: job.total_clients,
                };
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn_scoped(scope, move || run_client(&job.keyspace, &job.addr, id, tl))
            })
            .collect();
        let cpu = sample_both(&tl, server_pid);
        let mut merged: Vec<PhaseStats> = tl
            .phases
            .iter()
            .map(|p| PhaseStats::new(p.seconds()))
            .collect();
        for h in handles.into_iter().flatten() {
            if let Ok(per_phase) = h.join() {
                for (m, s) in merged.iter_mut().zip(&per_phase) {
                    m.merge(s);
                }
            }
        }
        (merged, cpu)
    });
    let mut stats = stats;
    for (s, c) in stats.iter_mut().zip(&own_cpu) {
        s.cpu_seconds += c.unwrap_or(0.0);
    }
    (stats, server_cpu)
}

/// Sleeps to each phase boundary and samples this process's CPU and (given a PID) the server's there;
/// returns both as growth over each measured window.
fn sample_both(tl: &Timeline, server_pid: Option<u32>) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    let sleep_until = |t: Instant| {
        let now = Instant::now();
        if t > now {
            std::thread::sleep(t - now);
        }
    };
    let sample = || {
        (
            cpu::self_cpu_seconds(),
            server_pid.and_then(cpu::process_cpu_seconds),
        )
    };
    let (mut own, mut server) = (Vec::new(), Vec::new());
    for p in &tl.phases {
        sleep_until(p.start);
        let (ta, a) = (Instant::now(), sample());
        sleep_until(p.end);
        let (tb, b) = (Instant::now(), sample());
        // On a busy machine this thread can wake late; scale what was seen to the window it stands for.
        let window = p.end.saturating_duration_since(p.start).as_secs_f64();
        let seen = tb.saturating_duration_since(ta).as_secs_f64();
        let scale = if seen > 0.0 { window / seen } else { 1.0 };
        own.push(Some((b.0 - a.0) * scale));
        server.push(match (a.1, b.1) {
            (Some(x), Some(y)) => Some((y - x) * scale),
            _ => None,
        });
    }
    (own, server)
}

/// The hidden `worker` subcommand: reads a job on stdin, runs it, prints the report on stdout.
pub fn worker_main() -> Result<()> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("reading the worker job")?;
    let job: WorkerJob = serde_json::from_str(&input).context("parsing the worker job")?;
    let (stats, _) = run_threads(&job, None);
    let report = WorkerReport {
        steps: stats.iter().map(PhaseStats::to_wire).collect(),
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &report)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The arguments that run the `worker` subcommand of this same program: everything between the program
/// name and `run` in our own arguments (so it works as `canopy-bench run` and as `canopy bench run`), then
/// `worker`.
pub fn worker_args(own: &[String]) -> Option<Vec<String>> {
    let pos = own.iter().position(|a| a == "run")?;
    let mut args: Vec<String> = own.get(1..pos)?.to_vec();
    args.push("worker".into());
    Some(args)
}

fn worker_command() -> Result<Command> {
    let exe = std::env::current_exe().context("finding the current executable")?;
    let own: Vec<String> = std::env::args().collect();
    let args =
        worker_args(&own).context("--processes needs the `run` subcommand on the command line")?;
    let mut cmd = Command::new(exe);
    cmd.args(args);
    Ok(cmd)
}

/// Runs the clients split over `processes` worker processes; CPU is the workers' own plus this process's.
fn run_processes(
    job: &WorkerJob,
    processes: usize,
    server_pid: Option<u32>,
) -> Result<(Vec<PhaseStats>, Vec<Option<f64>>)> {
    let tl = job.timeline();
    let mut children = Vec::new();
    let per = job.client_count / processes;
    let extra = job.client_count % processes;
    let mut first = job.first_client;
    for p in 0..processes {
        let count = per + usize::from(p < extra);
        let sub = WorkerJob {
            first_client: first,
            client_count: count,
            ..job.clone()
        };
        first += count;
        let mut child = worker_command()?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting a worker process")?;
        if let Some(mut stdin) = child.stdin.take() {
            serde_json::to_writer(&mut stdin, &sub)?;
        }
        children.push(child);
    }
    let (own_cpu, server_cpu) = sample_both(&tl, server_pid);
    let mut merged: Vec<PhaseStats> = tl
        .phases
        .iter()
        .map(|p| PhaseStats::new(p.seconds()))
        .collect();
    for child in children {
        let out = child
            .wait_with_output()
            .context("waiting for a worker process")?;
        if !out.status.success() {
            bail!("a worker process failed ({})", out.status);
        }
        let report: WorkerReport =
            serde_json::from_slice(&out.stdout).context("reading a worker's report")?;
        for (m, w) in merged.iter_mut().zip(&report.steps) {
            m.merge(&PhaseStats::from_wire(w));
        }
    }
    for (s, c) in merged.iter_mut().zip(&own_cpu) {
        s.cpu_seconds += c.unwrap_or(0.0);
    }
    Ok((merged, server_cpu))
}

/// Whether person 0 can bind with the generated password (data made with `gen --passwords`).
fn users_can_bind(addr: &SocketAddr, suffix: &str, entries: u64) -> Result<bool> {
    if entries == 0 {
        return Ok(false);
    }
    let mut conn = Conn::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    let code = conn.simple_bind(
        gen::user_dn(0, suffix).as_bytes(),
        gen::password(0).as_bytes(),
    )?;
    conn.unbind();
    Ok(code == ResultCode::Success)
}

/// Whether person 0's cn in the directory is the one `gen --seed seed` gives it: the addressing workload
/// recomputes names from the seed, and a different seed would silently turn its searches into misses.
fn names_match_seed(addr: &SocketAddr, suffix: &str, seed: u64) -> Result<bool> {
    let (given, sn) = gen::person_names(seed, 0);
    let cn = format!("{given} {sn}");
    let mut msg = LdapMessage {
        message_id: 0,
        op: ProtocolOp::SearchRequest(SearchRequest {
            base: suffix.as_bytes().to_vec(),
            scope: SearchScope::WholeSubtree,
            deref: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: Filter::And(vec![
                Filter::Equality("uid".into(), gen::uid(0).into_bytes()),
                Filter::Equality("cn".into(), cn.into_bytes()),
            ]),
            attributes: vec!["1.1".into()],
        }),
        controls: Vec::new(),
    };
    let mut conn = Conn::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    let outcome = conn.request(&mut msg)?;
    conn.unbind();
    Ok(outcome.entries == 1)
}

/// What `bench run` was asked to do, independent of the command-line parser.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub urls: Vec<String>,
    pub labels: Vec<String>,
    pub server_pids: Vec<u32>,
    pub workload: Workload,
    pub session: crate::workload::Session,
    pub entries: u64,
    /// Client counts, measured one after another (each with fresh sessions).
    pub clients: Vec<usize>,
    pub processes: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub rates: Vec<Option<f64>>,
    pub bind_dn: String,
    pub bind_pw: String,
    pub seed: u64,
    pub suffix: String,
}

/// The default label of the i-th server.
pub fn default_label(i: usize) -> String {
    match i {
        0 => "canopy".into(),
        1 => "slapd".into(),
        n => format!("server{}", n + 1),
    }
}

/// Measures every server in turn, at each client count and rate step; returns one result per server, client
/// count and step.
pub fn run_plan(plan: &RunPlan, progress: &mut dyn FnMut(&StepResult)) -> Result<Vec<StepResult>> {
    if plan.clients.is_empty() || plan.clients.contains(&0) {
        bail!("--clients must be at least 1");
    }
    if plan
        .rates
        .iter()
        .flatten()
        .any(|r| !r.is_finite() || *r < 0.001)
    {
        bail!("rates must be positive numbers of requests per second");
    }
    let mut results = Vec::new();
    for (i, url) in plan.urls.iter().enumerate() {
        let addr = resolve_url(url)?;
        let label = plan
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| default_label(i));
        let needs_users = matches!(plan.workload, Workload::Messaging | Workload::Bind);
        let user_binds = needs_users && users_can_bind(&addr, &plan.suffix, plan.entries)?;
        if plan.workload == Workload::Bind && !user_binds {
            bail!(
                "{url}: {} cannot bind with password {:?}; the bind workload needs data from `bench gen --passwords`",
                gen::user_dn(0, &plan.suffix),
                gen::password(0)
            );
        }
        if plan.workload == Workload::Addressing
            && !names_match_seed(&addr, &plan.suffix, plan.seed)?
        {
            eprintln!(
                "bench: {url}: {} does not have the cn that `gen --seed {}` gives it; \
                 cn/sn searches will find nothing (pass the seed the data was generated with)",
                gen::user_dn(0, &plan.suffix),
                plan.seed
            );
        }
        if plan.workload == Workload::Messaging && !user_binds {
            eprintln!("bench: {url}: people cannot bind (data without --passwords); messaging sessions bind as {}", plan.bind_dn);
        }
        let server_pid = plan.server_pids.get(i).copied();
        for &clients in &plan.clients {
            let processes = plan.processes.clamp(1, clients);
            let keyspace = Keyspace {
                workload: plan.workload,
                session: plan.session,
                entries: plan.entries,
                seed: plan.seed,
                suffix: plan.suffix.clone(),
                admin_dn: plan.bind_dn.clone(),
                admin_pw: plan.bind_pw.clone(),
                user_binds,
                run_id: unix_ms() % 100_000_000,
            };
            let steps: Vec<StepSpec> = plan
                .rates
                .iter()
                .map(|&rate| StepSpec {
                    rate,
                    warmup_ms: plan.warmup.as_millis() as u64,
                    duration_ms: plan.duration.as_millis() as u64,
                })
                .collect();
            let measured_ms: u64 = steps.iter().map(|s| s.duration_ms + s.warmup_ms).sum();
            // The delete workload first adds what it will delete: 1.5 times the measured time, so that deletes
            // (usually no slower than adds) rarely run out.
            let fill_ms = if plan.workload == Workload::Delete {
                measured_ms * 3 / 2
            } else {
                0
            };
            // Time for threads or processes to start and open their sessions before the clock starts.
            let setup_ms = 300 + 4 * clients as u64 + if processes > 1 { 700 } else { 0 };
            let job = WorkerJob {
                keyspace,
                addr,
                first_client: 0,
                client_count: clients,
                total_clients: clients,
                start_unix_ms: unix_ms() + setup_ms,
                fill_ms,
                steps: steps.clone(),
            };
            let (stats, server_cpu) = if processes > 1 {
                run_processes(&job, processes, server_pid)?
            } else {
                run_threads(&job, server_pid)
            };
            for ((s, step), server_cpu) in stats.iter().zip(&steps).zip(server_cpu) {
                let ctx = StepContext {
                    label: label.clone(),
                    url: url.clone(),
                    workload: plan.workload.name().into(),
                    session: plan.session.name().into(),
                    clients,
                    processes,
                    entries: plan.entries,
                    offered_rate: step.rate,
                    duration_s: step.duration_ms as f64 / 1000.0,
                    server_cpu_s: server_cpu,
                };
                let r = StepResult::new(ctx, s);
                progress(&r);
                results.push(r);
            }
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_arguments() {
        let check = |own: &[&str], want: Option<&[&str]>| {
            let own: Vec<String> = own.iter().map(|s| s.to_string()).collect();
            let want = want.map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(worker_args(&own), want, "{own:?}");
        };
        check(&["canopy-bench", "run", "--url", "x"], Some(&["worker"]));
        check(
            &["canopy", "bench", "run", "--label", "run"],
            Some(&["bench", "worker"]),
        );
        check(
            &["canopy", "--config", "c.toml", "bench", "run"],
            Some(&["--config", "c.toml", "bench", "worker"]),
        );
        check(&["canopy-bench", "gen"], None);
        check(&[], None);
    }

    #[test]
    fn timeline_follows_the_steps() {
        let job = WorkerJob {
            keyspace: Keyspace {
                workload: Workload::Search,
                session: crate::workload::Session::Persistent,
                entries: 1,
                seed: 1,
                suffix: "dc=x".into(),
                admin_dn: String::new(),
                admin_pw: String::new(),
                user_binds: false,
                run_id: 1,
            },
            addr: "127.0.0.1:1".parse().unwrap(),
            first_client: 0,
            client_count: 1,
            total_clients: 1,
            start_unix_ms: unix_ms() + 1000,
            fill_ms: 500,
            steps: vec![
                StepSpec {
                    rate: None,
                    warmup_ms: 100,
                    duration_ms: 2000,
                },
                StepSpec {
                    rate: Some(5.0),
                    warmup_ms: 0,
                    duration_ms: 1000,
                },
            ],
        };
        let tl = job.timeline();
        let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_millis() as i64;
        assert_eq!(ms(tl.fill_end, tl.phases[0].warm), 0);
        assert_eq!(ms(tl.phases[0].warm, tl.phases[0].start), 100);
        assert_eq!(ms(tl.phases[0].start, tl.phases[0].end), 2000);
        assert_eq!(ms(tl.phases[0].end, tl.phases[1].warm), 0);
        assert_eq!(tl.phases[1].rate, Some(5.0));
        assert_eq!(tl.phases[1].seconds(), 1);
        let lead = ms(Instant::now(), tl.fill_end);
        assert!((1000..=1500).contains(&lead), "{lead}");
    }
}
