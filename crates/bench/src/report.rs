//! The figures of one server and step as the JSON and Markdown reports show them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;
use crate::stats::PhaseStats;

/// Latency summary in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn of(h: &Histogram) -> Latency {
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            count: h.count(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.quantile(0.50)),
            p90_ms: ms(h.quantile(0.90)),
            p99_ms: ms(h.quantile(0.99)),
            max_ms: ms(h.max()),
        }
    }

    fn cell(&self) -> String {
        if self.count == 0 {
            return "-".into();
        }
        format!(
            "{} / {} / {} / {}",
            fmt_ms(self.p50_ms),
            fmt_ms(self.p90_ms),
            fmt_ms(self.p99_ms),
            fmt_ms(self.max_ms)
        )
    }
}

fn fmt_rate(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn fmt_ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.3}")
    } else if v < 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    }
}

/// One server at one load step: every figure of the run, machine-readable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub label: String,
    pub url: String,
    pub workload: String,
    pub session: String,
    pub clients: usize,
    pub processes: usize,
    /// Size of the directory's key range (--entries).
    pub entries: u64,
    /// Offered load in requests per second (open loop); None for closed loop.
    pub offered_rate: Option<f64>,
    pub duration_s: f64,
    pub completed: u64,
    pub throughput: f64,
    pub errors: BTreeMap<String, u64>,
    pub error_total: u64,
    /// Open-loop sends the clients could not make in time (the client was the limit, not the server).
    pub missed_sends: u64,
    /// Delete-workload clients that ran out of entries before the end.
    pub exhausted_clients: u64,
    pub connect: Latency,
    pub processing: Latency,
    pub response: Latency,
    /// Completed requests in each second of the measured window.
    pub per_second: Vec<u64>,
    pub entries_returned: u64,
    pub bytes_received: u64,
    pub client_cpu_s: f64,
    pub client_cpu_pct: f64,
    pub client_cpu_us_per_op: f64,
    pub server_cpu_s: Option<f64>,
    pub server_cpu_pct: Option<f64>,
    pub server_cpu_us_per_op: Option<f64>,
}

/// What describes a step besides its measurements.
#[derive(Debug, Clone)]
pub struct StepContext {
    pub label: String,
    pub url: String,
    pub workload: String,
    pub session: String,
    pub clients: usize,
    pub processes: usize,
    pub entries: u64,
    pub offered_rate: Option<f64>,
    pub duration_s: f64,
    pub server_cpu_s: Option<f64>,
}

fn per_op(cpu_s: f64, ops: u64) -> f64 {
    if ops == 0 {
        0.0
    } else {
        cpu_s * 1e6 / ops as f64
    }
}

impl StepResult {
    pub fn new(ctx: StepContext, s: &PhaseStats) -> StepResult {
        let pct = |cpu: f64| {
            if ctx.duration_s > 0.0 {
                100.0 * cpu / ctx.duration_s
            } else {
                0.0
            }
        };
        let throughput = if ctx.duration_s > 0.0 {
            s.completed as f64 / ctx.duration_s
        } else {
            0.0
        };
        StepResult {
            throughput,
            completed: s.completed,
            errors: s.errors.clone(),
            error_total: s.error_count(),
            missed_sends: s.missed,
            exhausted_clients: s.exhausted,
            connect: Latency::of(&s.connect),
            processing: Latency::of(&s.processing),
            response: Latency::of(&s.response),
            per_second: s.per_second.clone(),
            entries_returned: s.entries,
            bytes_received: s.bytes,
            client_cpu_s: s.cpu_seconds,
            client_cpu_pct: pct(s.cpu_seconds),
            client_cpu_us_per_op: per_op(s.cpu_seconds, s.completed),
            server_cpu_pct: ctx.server_cpu_s.map(pct),
            server_cpu_us_per_op: ctx.server_cpu_s.map(|c| per_op(c, s.completed)),
            server_cpu_s: ctx.server_cpu_s,
            label: ctx.label,
            url: ctx.url,
            workload: ctx.workload,
            session: ctx.session,
            clients: ctx.clients,
            processes: ctx.processes,
            entries: ctx.entries,
            offered_rate: ctx.offered_rate,
            duration_s: ctx.duration_s,
        }
    }
}

fn errors_cell(r: &StepResult) -> String {
    if r.errors.is_empty() {
        return "0".into();
    }
    r.errors
        .iter()
        .map(|(k, v)| format!("{v}× {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cpu_cell(seconds: Option<f64>, pct: Option<f64>, per_op: Option<f64>) -> String {
    match (seconds, pct, per_op) {
        (Some(s), Some(p), Some(u)) => format!("{s:.2} s, {p:.0}%, {u:.1} µs/op"),
        _ => "-".into(),
    }
}

/// The Markdown table of a set of results (one row per server and step).
pub fn markdown(results: &[StepResult]) -> String {
    let mut out = String::new();
    out.push_str(
        "| server | workload | session | clients | offered/s | throughput/s | \
         connect ms p50/p90/p99/max | processing ms p50/p90/p99/max | \
         response ms p50/p90/p99/max | errors | client CPU | server CPU |\n",
    );
    out.push_str("|---|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|\n");
    for r in results {
        let offered = r.offered_rate.map_or("closed".to_string(), fmt_rate);
        let mut errors = errors_cell(r);
        if r.missed_sends > 0 {
            let _ = write!(errors, " ({} sends missed)", r.missed_sends);
        }
        if r.exhausted_clients > 0 {
            let _ = write!(
                errors,
                " ({} clients ran out of entries)",
                r.exhausted_clients
            );
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            r.workload,
            r.session,
            r.clients,
            offered,
            fmt_rate(r.throughput),
            r.connect.cell(),
            r.processing.cell(),
            r.response.cell(),
            errors,
            cpu_cell(
                Some(r.client_cpu_s),
                Some(r.client_cpu_pct),
                Some(r.client_cpu_us_per_op)
            ),
            cpu_cell(r.server_cpu_s, r.server_cpu_pct, r.server_cpu_us_per_op),
        );
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample(label: &str, clients: usize, rate: Option<f64>, tput: f64) -> StepResult {
        let mut s = PhaseStats::new(2);
        for v in [100u64, 200, 300, 4000] {
            s.response.record(v);
            s.processing.record(v);
        }
        s.completed = (tput * 2.0) as u64;
        s.cpu_seconds = 0.5;
        let ctx = StepContext {
            label: label.into(),
            url: "ldap://127.0.0.1:1".into(),
            workload: "search".into(),
            session: "persistent".into(),
            clients,
            processes: 1,
            entries: 1000,
            offered_rate: rate,
            duration_s: 2.0,
            server_cpu_s: Some(1.0),
        };
        StepResult::new(ctx, &s)
    }

    #[test]
    fn figures_derive_from_stats() {
        let r = sample("canopy", 16, None, 500.0);
        assert_eq!(r.completed, 1000);
        assert_eq!(r.throughput, 500.0);
        assert_eq!(r.client_cpu_pct, 25.0);
        assert_eq!(r.client_cpu_us_per_op, 500.0);
        assert_eq!(r.server_cpu_pct, Some(50.0));
        assert_eq!(r.server_cpu_us_per_op, Some(1000.0));
        assert_eq!(r.response.max_ms, 4.0);
        assert_eq!(r.connect.count, 0);
    }

    #[test]
    fn markdown_has_one_row_per_result() {
        let md = markdown(&[
            sample("canopy", 16, None, 500.0),
            sample("slapd", 16, Some(800.0), 400.0),
        ]);
        assert_eq!(md.lines().count(), 4);
        assert!(
            md.contains("| canopy | search | persistent | 16 | closed | 500 |"),
            "{md}"
        );
        assert!(
            md.contains("| slapd | search | persistent | 16 | 800 | 400 |"),
            "{md}"
        );
        assert!(md.contains("0.50 s, 25%, 500.0 µs/op"), "{md}");
    }

    #[test]
    fn json_round_trip() {
        let r = sample("canopy", 4, Some(100.0), 90.0);
        let text = serde_json::to_string(&vec![r.clone()]).unwrap();
        let back: Vec<StepResult> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, vec![r]);
    }
}
