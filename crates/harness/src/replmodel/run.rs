//! Runs a scenario on real servers and judges it: each event in order (client writes through
//! ldapmodify/ldapdelete, applied to the model only when acknowledged; kill -9, restart, SIGSTOP,
//! SIGCONT, cuts and heals), then everything healed and started, then the three invariants, and a
//! report with the replay command, the scenario, the violations and the servers' log excerpts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::directory::{key, Model, Write};
use super::generate::{describe_event, everywhere_at_start, generate, Event, Scenario};
use super::setup::{self, Cluster};
use crate::client::Bind;
use crate::server::Server;

/// What the comparison of servers leaves out: the SCRAM secrets canopy derives into `authPassword`
/// (slapd has no schema for them). Everything else the servers return for `*`, entryUUID and
/// entryCSN must be equal.
pub const IGNORED: &[&str] = &["authPassword"];

/// Attributes the model does not predict: the identifiers each server assigns.
const NOT_MODELLED: &[&str] = &["entryuuid", "entrycsn", "authpassword"];

fn converge_limit() -> Duration {
    let secs = std::env::var("CANOPY_REPL_CONVERGE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(90);
    Duration::from_secs(secs)
}

/// One seed's outcome: the one-line summary, the full text, and whether it passed.
#[derive(Debug, Clone)]
pub struct SeedReport {
    pub seed: u64,
    pub passed: bool,
    pub seconds: f64,
    pub summary: String,
    pub text: String,
}

pub fn slapd_installed() -> bool {
    std::path::Path::new(crate::server::SLAPD).exists()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Up,
    Down,
    Paused,
}

struct Violation {
    /// The server it concerns, when one.
    server: Option<usize>,
    text: String,
}

/// Generates, runs and judges `seed`. Never panics for a failing run: a panic inside (a server that
/// will not start) becomes a violation of the report.
pub fn run_seed(seed: u64) -> SeedReport {
    let started = Instant::now();
    let scenario = generate(seed);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(&scenario)));
    let (transcript, violations, logs) = match result {
        Ok(Ok(done)) => done,
        Ok(Err(setup)) => (
            String::new(),
            vec![Violation {
                server: None,
                text: format!("setup failed: {setup}"),
            }],
            String::new(),
        ),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".to_string());
            (
                String::new(),
                vec![Violation {
                    server: None,
                    text: format!("the run panicked: {what}"),
                }],
                String::new(),
            )
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let passed = violations.is_empty();
    let topology: Vec<String> = (0..scenario.nodes.len())
        .map(|i| scenario.node_name(i))
        .collect();
    let summary = format!(
        "seed {seed}: {} in {seconds:.0} s: {:?}, preload {:?}: {}{}",
        if passed { "PASS" } else { "FAIL" },
        scenario.shape,
        scenario.preload,
        topology.join(", "),
        violations
            .first()
            .map(|v| format!(" | {}", v.text.lines().next().unwrap_or("")))
            .unwrap_or_default()
    );
    let mut text = format!("=== replication model: {summary}\n");
    if !passed {
        text.push_str(&format!("replay:\n  {}\n", super::replay_commands(seed)));
    }
    text.push_str(&scenario.describe());
    text.push_str(&transcript);
    if !passed {
        text.push_str(&format!("violations ({}):\n", violations.len()));
        for v in &violations {
            text.push_str(&format!("  - {}\n", v.text.replace('\n', "\n    ")));
        }
        text.push_str(&logs);
    }
    SeedReport {
        seed,
        passed,
        seconds,
        summary,
        text,
    }
}

type Done = (String, Vec<Violation>, String);

fn execute(s: &Scenario) -> Result<Done, String> {
    let mut cluster = setup::start(s)?;
    let mut model = Model::from_entries(&s.directory);
    model.mark_everywhere(&everywhere_at_start(s));
    let mut states = vec![State::Up; s.nodes.len()];
    let mut transcript = String::from("run:\n");
    for (n, event) in s.events.iter().enumerate() {
        let outcome = run_event(&mut cluster, &mut states, &mut model, event);
        transcript.push_str(&format!(
            "  {:>3}. {} -> {outcome}\n",
            n + 1,
            describe_event(event)
        ));
    }
    // Everything back: processes continued and started, links healed.
    for (i, state) in states.iter_mut().enumerate() {
        match state {
            State::Paused => signal(&cluster.servers[i], "-CONT"),
            State::Down => cluster.servers[i].relaunch_same_port(),
            State::Up => {}
        }
        *state = State::Up;
    }
    for proxy in &cluster.proxies {
        proxy.heal();
    }
    transcript.push_str(&closing_writes(s, &cluster, &mut model));
    let mut violations = Vec::new();
    let (texts, converged) = wait_converged(&cluster.servers, converge_limit());
    transcript.push_str(&format!("final: {converged}\n"));
    for (i, server) in cluster.servers.iter().enumerate() {
        if !server.alive() {
            violations.push(Violation {
                server: Some(i),
                text: format!("{} is not running at the end", s.node_name(i)),
            });
        }
    }
    if let Some(diff) = converged.strip_prefix("NOT CONVERGED: ") {
        violations.push(Violation {
            server: None,
            text: format!("no convergence within {:?}: {diff}", converge_limit()),
        });
    }
    for (i, text) in texts.iter().enumerate() {
        check_model(s, i, &model, text, &mut violations);
    }
    let logs = log_excerpts(s, &cluster, &violations);
    drop(cluster);
    Ok((transcript, violations, logs))
}

/// One more acknowledged write on every writable server once everything is back, as an operator's
/// next change would be: a slapd provider killed with -9 restarts with its last checkpointed
/// contextCSN and refuses newer consumers until its next write (docs/replication.md, Recovery).
/// Each server changes the description of an entry only it writes: the suffix for a single
/// provider, its first own unit in a multi-provider group.
fn closing_writes(s: &Scenario, c: &Cluster, model: &mut Model) -> String {
    let mut out = String::new();
    for i in (0..s.nodes.len()).filter(|&i| s.nodes[i].writable) {
        let dn = if s.is_mesh() {
            let Some((unit, _)) = s.owners.iter().find(|(_, o)| *o == i) else {
                continue;
            };
            match model.get(unit) {
                Some(held) => held.entry.dn.clone(),
                None => continue,
            }
        } else {
            crate::base::SUFFIX.to_string()
        };
        let write = Write::Modify {
            dn,
            mods: vec![super::model::Mod {
                kind: super::model::ModKind::Replace,
                attr: "description".into(),
                values: vec![format!("closing write of s{i}")],
            }],
        };
        out.push_str(&format!(
            "closing: s{i}: {} -> {}\n",
            write.describe(),
            run_write(&c.servers[i], model, &write)
        ));
    }
    out
}

fn signal(server: &Server, sig: &str) {
    if let Some(pid) = server.pid() {
        let _ = std::process::Command::new("kill")
            .arg(sig)
            .arg(pid.to_string())
            .status();
    }
}

fn run_event(c: &mut Cluster, states: &mut [State], model: &mut Model, event: &Event) -> String {
    match event {
        Event::Write { server, write } => run_write(&c.servers[*server], model, write),
        Event::Conflict { servers, writes } => {
            let (a, b) = (&c.servers[servers[0]], &c.servers[servers[1]]);
            let codes = std::thread::scope(|scope| {
                let ta = scope.spawn(|| a.modify(&Bind::Root, &writes[0].ldif()).code);
                let tb = scope.spawn(|| b.modify(&Bind::Root, &writes[1].ldif()).code);
                (ta.join().unwrap_or(-1), tb.join().unwrap_or(-1))
            });
            if codes.0 == 0 || codes.1 == 0 {
                match &writes[0] {
                    Write::Add(e) => model.add_uncertain(e, "description"),
                    w => model.mark_uncertain(w.dn(), "description"),
                }
            }
            format!(
                "codes {} and {} (only convergence checked)",
                codes.0, codes.1
            )
        }
        Event::Kill(i) => {
            c.servers[*i].kill9();
            states[*i] = State::Down;
            "killed".into()
        }
        Event::Restart(i) => {
            c.servers[*i].relaunch_same_port();
            states[*i] = State::Up;
            "answering".into()
        }
        Event::Pause(i) => {
            signal(&c.servers[*i], "-STOP");
            states[*i] = State::Paused;
            "stopped".into()
        }
        Event::Resume(i) => {
            signal(&c.servers[*i], "-CONT");
            states[*i] = State::Up;
            "continued".into()
        }
        Event::Cut(l) => {
            c.proxies[*l].cut();
            "cut".into()
        }
        Event::Heal(l) => {
            c.proxies[*l].heal();
            "healed".into()
        }
        Event::Sleep(ms) => {
            std::thread::sleep(Duration::from_millis(*ms));
            "slept".into()
        }
        Event::Settle => {
            let (_, how) = wait_converged(&c.servers, Duration::from_secs(20));
            how.lines().next().unwrap_or("").to_string()
        }
    }
}

/// Sends one write; the model takes it only when the server acknowledged it.
fn run_write(server: &Server, model: &mut Model, write: &Write) -> String {
    if let Write::DeleteSubtree { dn, recursive } = write {
        return run_subtree_delete(server, model, dn, *recursive);
    }
    let out = server.modify(&Bind::Root, &write.ldif());
    if out.code != 0 {
        return format!(
            "refused {} {}",
            out.code,
            out.stderr.trim().replace('\n', " ")
        );
    }
    match model.apply(write) {
        Ok(()) => "ok".into(),
        Err(e) => format!("ok, but the model finds it impossible: {e}"),
    }
}

fn run_subtree_delete(server: &Server, model: &mut Model, dn: &str, recursive: bool) -> String {
    if !recursive {
        let mut done = 0;
        let dns = model.subtree(dn);
        for d in &dns {
            let out = server.modify(&Bind::Root, &format!("dn: {d}\nchangetype: delete\n"));
            if out.code == 0 {
                model.remove(d);
                done += 1;
            }
        }
        return format!("{done} of {} deleted", dns.len());
    }
    let out = server.tool("ldapdelete", &Bind::Root, &["-r", dn], None);
    // What is gone is what the server no longer holds (this server alone writes the subtree).
    let left = server.search(
        &Bind::Root,
        &["-b", dn, "-s", "sub", "(objectClass=*)", "1.1"],
    );
    let held: BTreeSet<String> = match left.code {
        0 => left.records().iter().map(|r| key(&r.dn())).collect(),
        32 => BTreeSet::new(),
        code => return format!("exit {}; the search after it failed ({code})", out.code),
    };
    let mut gone = 0;
    for d in model.subtree(dn) {
        if !held.contains(&key(&d)) {
            model.remove(&d);
            gone += 1;
        }
    }
    format!("exit {}, {gone} entries gone", out.code)
}

/// Polls every server's contents until all are equal on two polls in a row, or `limit` passes.
/// The last contents, and `converged after N s` or `NOT CONVERGED: <first difference>`.
fn wait_converged(servers: &[Server], limit: Duration) -> (Vec<String>, String) {
    let started = Instant::now();
    let mut stable = 0;
    loop {
        let texts: Vec<String> = servers
            .iter()
            .map(|s| crate::replication::contents(s, IGNORED))
            .collect();
        let differ = texts.iter().position(|t| *t != texts[0]);
        match differ {
            None => {
                stable += 1;
                if stable >= 2 {
                    let how = format!(
                        "converged after {:.1} s ({} entries)",
                        started.elapsed().as_secs_f64(),
                        crate::ldif::parse(&texts[0]).len()
                    );
                    return (texts, how);
                }
            }
            Some(_) => stable = 0,
        }
        if started.elapsed() > limit {
            let how = match differ {
                Some(k) => format!(
                    "NOT CONVERGED: s0 and s{k} differ; {}",
                    count_summary(&texts)
                        + "\n"
                        + &crate::replication::first_difference(&texts[0], &texts[k])
                ),
                None => format!("NOT CONVERGED: flapping; {}", count_summary(&texts)),
            };
            return (texts, how);
        }
        std::thread::sleep(Duration::from_millis(700));
    }
}

fn count_summary(texts: &[String]) -> String {
    let counts: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| format!("s{i} holds {}", crate::ldif::parse(t).len()))
        .collect();
    counts.join(", ")
}

/// One server's entries: lowercased DN to lowercased attribute sets, modelled attributes only.
fn entries_of(text: &str) -> BTreeMap<String, (String, BTreeMap<String, BTreeSet<String>>)> {
    let mut out = BTreeMap::new();
    for r in crate::ldif::parse(text) {
        let mut attrs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for name in r.attr_names() {
            let lower = name.to_ascii_lowercase();
            if NOT_MODELLED.contains(&lower.as_str()) || attrs.contains_key(&lower) {
                continue;
            }
            let values = r
                .values(&name)
                .iter()
                .map(|v| v.to_ascii_lowercase())
                .collect();
            attrs.insert(lower, values);
        }
        out.insert(key(&r.dn()), (r.dn(), attrs));
    }
    out
}

/// Checks server `i`'s final contents against the model: no acknowledged write lost, nothing kept
/// that a client deleted, and no DN that every server held at the start missing.
fn check_model(s: &Scenario, i: usize, model: &Model, text: &str, out: &mut Vec<Violation>) {
    let held = entries_of(text);
    let name = s.node_name(i);
    let mut lost_everywhere = Vec::new();
    let mut lost = Vec::new();
    let mut differ = Vec::new();
    for h in model.held() {
        let k = key(&h.entry.dn);
        let Some((_, attrs)) = held.get(&k) else {
            if h.everywhere {
                lost_everywhere.push(h.entry.dn.clone());
            } else {
                lost.push(h.entry.dn.clone());
            }
            continue;
        };
        let want = h.entry.normalized();
        let names: BTreeSet<&String> = want.keys().chain(attrs.keys()).collect();
        for attr in names {
            if h.uncertain.contains(attr) {
                continue;
            }
            if want.get(attr) != attrs.get(attr) {
                differ.push(format!(
                    "{} {attr}: expected {:?}, holds {:?}",
                    h.entry.dn,
                    want.get(attr).map(|v| v.iter().collect::<Vec<_>>()),
                    attrs.get(attr).map(|v| v.iter().collect::<Vec<_>>())
                ));
            }
        }
    }
    let extra: Vec<String> = held
        .iter()
        .filter(|(k, _)| !model.contains(k))
        .map(|(_, (dn, _))| dn.clone())
        .collect();
    let listed = |v: &[String]| {
        let shown: Vec<&String> = v.iter().take(6).collect();
        let more = v.len().saturating_sub(6);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!("{shown:?}{tail}")
    };
    if !lost_everywhere.is_empty() {
        out.push(Violation {
            server: Some(i),
            text: format!(
                "{name} lost {} of the DNs every server held at the start and no client deleted \
                 (holds {} entries, the model {}): {}",
                lost_everywhere.len(),
                held.len(),
                model.len(),
                listed(&lost_everywhere)
            ),
        });
    }
    if !lost.is_empty() {
        out.push(Violation {
            server: Some(i),
            text: format!(
                "{name} misses {} entries acknowledged writes left in place: {}",
                lost.len(),
                listed(&lost)
            ),
        });
    }
    if !extra.is_empty() {
        out.push(Violation {
            server: Some(i),
            text: format!(
                "{name} holds {} entries the provider does not have or a client deleted: {}",
                extra.len(),
                listed(&extra)
            ),
        });
    }
    if !differ.is_empty() {
        out.push(Violation {
            server: Some(i),
            text: format!(
                "{name} has {} attributes other than acknowledged writes left them: {}",
                differ.len(),
                listed(&differ)
            ),
        });
    }
}

/// Log lines worth reading for replication, from each server a violation names (every server when
/// none is named): errors, warnings, conflicts, refresh summaries, slapd's sync complaints.
fn log_excerpts(s: &Scenario, c: &Cluster, violations: &[Violation]) -> String {
    if violations.is_empty() {
        return String::new();
    }
    let named: BTreeSet<usize> = violations.iter().filter_map(|v| v.server).collect();
    let which: Vec<usize> = if named.is_empty() || violations.iter().any(|v| v.server.is_none()) {
        (0..c.servers.len()).collect()
    } else {
        named.into_iter().collect()
    };
    let mut out = String::from("log excerpts:\n");
    for i in which {
        out.push_str(&format!(
            "--- {} ({})\n",
            s.node_name(i),
            c.servers[i].dir().display()
        ));
        out.push_str(&excerpt(&c.servers[i].log(), 30));
    }
    out
}

const INTERESTING: &[&str] = &[
    "error",
    "warn",
    "conflict",
    "refresh ended",
    "session failed",
    "too old",
    "glue",
    "invalid",
    "nosuchobject",
    "newer than",
    "panicked",
    "duplicate",
    "do_syncrep2",
    "syncrepl_del",
];

/// The last `n` interesting lines of `log`, and how often each repeated kind occurred.
pub fn excerpt(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            INTERESTING.iter().any(|w| lower.contains(w))
        })
        .collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        let lower = l.to_ascii_lowercase();
        for w in INTERESTING {
            if lower.contains(w) {
                *counts.entry(w).or_default() += 1;
            }
        }
    }
    let mut out = format!(
        "  ({} log lines, {} of interest: {})\n",
        log.lines().count(),
        lines.len(),
        counts
            .iter()
            .map(|(w, c)| format!("{w:?} x{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for l in &lines[lines.len().saturating_sub(n)..] {
        let short: String = l.chars().take(400).collect();
        out.push_str(&format!("  {short}\n"));
    }
    out
}
