//! Runs every workload for about two seconds against a real canopy server (imported from `bench gen` data)
//! and checks that each makes progress without errors; then drives the standalone binary end to end with
//! worker processes, open-loop steps, JSON, Markdown and charts.
//!
//! Needs the canopy binary: `cargo build -p canopy` into the same target directory, or set CANOPY_BIN.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use canopy_bench::gen::{write_ldif, GenParams};
use canopy_bench::report::StepResult;
use canopy_bench::run::{run_plan, RunPlan};
use canopy_bench::workload::{Session, Workload};

const ENTRIES: u64 = 300;

fn canopy_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("CANOPY_BIN") {
        return PathBuf::from(p);
    }
    // Test executables live in <target>/debug/deps/; the canopy binary in <target>/debug/.
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("canopy");
    assert!(
        bin.exists(),
        "canopy binary not found at {}: run `cargo build -p canopy` with the same CARGO_TARGET_DIR, or set CANOPY_BIN",
        bin.display()
    );
    bin
}

struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_canopy() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let ldif = dir.path().join("data.ldif");
    let params = GenParams {
        entries: ENTRIES,
        seed: 42,
        entry_size: 500,
        suffix: "dc=example,dc=com".into(),
        passwords: true,
    };
    let mut out = std::io::BufWriter::new(std::fs::File::create(&ldif).unwrap());
    write_ldif(&params, &mut out).unwrap();
    drop(out);
    let data = dir.path().join("db");
    let status = Command::new(canopy_bin())
        .arg("--data")
        .arg(&data)
        .arg("import")
        .arg("--no-sync")
        .arg(&ldif)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "canopy import failed");
    let port = free_port();
    let child = Command::new(canopy_bin())
        .arg("--data")
        .arg(&data)
        .arg("serve")
        .arg("--listen")
        .arg(format!("ldap://127.0.0.1:{port}"))
        .env("CANOPY_ROOTPW", "secret")
        .env("CANOPY_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        port,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "canopy did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

fn plan(port: u16, pid: u32, workload: Workload, session: Session) -> RunPlan {
    RunPlan {
        urls: vec![format!("ldap://127.0.0.1:{port}")],
        labels: vec![],
        server_pids: vec![pid],
        workload,
        session,
        entries: ENTRIES,
        clients: vec![4],
        processes: 1,
        duration: Duration::from_secs(2),
        warmup: Duration::from_millis(300),
        rates: vec![None],
        bind_dn: "cn=admin,dc=example,dc=com".into(),
        bind_pw: "secret".into(),
        seed: 42,
        suffix: "dc=example,dc=com".into(),
    }
}

fn check(r: &StepResult) {
    let what = format!("{} {}: {r:#?}", r.workload, r.session);
    assert!(
        r.completed > 0 && r.throughput > 0.0,
        "no throughput: {what}"
    );
    assert_eq!(r.error_total, 0, "errors: {what}");
    assert_eq!(r.exhausted_clients, 0, "{what}");
    assert_eq!(r.response.count, r.completed, "{what}");
    assert!(
        r.response.p50_ms > 0.0 && r.response.max_ms >= r.response.p99_ms,
        "{what}"
    );
    assert!(r.server_cpu_s.is_some(), "{what}");
    assert_eq!(r.per_second.iter().sum::<u64>(), r.completed, "{what}");
}

#[test]
fn every_workload_against_canopy() {
    let server = start_canopy();
    let pid = server.child.id();
    let cases = [
        (Workload::Search, Session::Persistent),
        (Workload::Messaging, Session::Persistent),
        (Workload::Messaging, Session::PerOp),
        (Workload::Addressing, Session::Persistent),
        (Workload::Modify, Session::Persistent),
        (Workload::Add, Session::Persistent),
        (Workload::Delete, Session::Persistent),
        (Workload::Bind, Session::Persistent),
        (Workload::Bind, Session::PerOp),
        (Workload::Mixed, Session::Persistent),
        (Workload::Scan, Session::Persistent),
    ];
    for (workload, session) in cases {
        let results = run_plan(&plan(server.port, pid, workload, session), &mut |_| {}).unwrap();
        assert_eq!(results.len(), 1);
        let r = &results[0];
        check(r);
        match workload {
            Workload::Search | Workload::Messaging => {
                assert_eq!(
                    r.entries_returned, r.completed,
                    "one entry per exact uid search"
                )
            }
            // The suffix, ten units and every person, each time.
            Workload::Scan => assert_eq!(r.entries_returned, r.completed * (ENTRIES + 11)),
            _ => {}
        }
        if session == Session::PerOp {
            assert_eq!(r.connect.count, r.completed, "one connect per request");
            assert!(r.response.p50_ms >= r.processing.p50_ms);
        }
    }
    // Adds and deletes cleaned up after themselves: no bench entries are left.
    let left = count_bench_entries(server.port);
    assert_eq!(
        left, 0,
        "entries added by the add/delete workloads were left behind"
    );
}

/// Entries under ou=Accounting whose uid starts with "bench-".
fn count_bench_entries(port: u16) -> u64 {
    use canopy_proto::{
        DerefAliases, Filter, LdapMessage, ProtocolOp, SearchRequest, SearchScope, SubstringFilter,
    };
    let mut conn =
        canopy_bench::ldap::Conn::connect(&format!("127.0.0.1:{port}").parse().unwrap()).unwrap();
    conn.simple_bind(b"cn=admin,dc=example,dc=com", b"secret")
        .unwrap();
    let mut msg = LdapMessage {
        message_id: 0,
        op: ProtocolOp::SearchRequest(SearchRequest {
            base: b"ou=Accounting,dc=example,dc=com".to_vec(),
            scope: SearchScope::WholeSubtree,
            deref: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: Filter::Substrings(SubstringFilter {
                attr: "uid".into(),
                initial: Some(b"bench-".to_vec()),
                any: vec![],
                final_: None,
            }),
            attributes: vec!["1.1".into()],
        }),
        controls: vec![],
    };
    conn.request(&mut msg).unwrap().entries
}

fn run_cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_canopy-bench"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn command_line_with_worker_processes_and_rate_steps() {
    let server = start_canopy();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let svg = dir.path().join("svg");
    let url = format!("ldap://127.0.0.1:{}", server.port);
    let pid = server.child.id().to_string();
    let entries = ENTRIES.to_string();
    let (ok, stdout, stderr) = run_cli(&[
        "run",
        "--url",
        &url,
        "--workload",
        "search",
        "--entries",
        &entries,
        "--clients",
        "4",
        "--processes",
        "2",
        "--rate-steps",
        "50,100",
        "--duration",
        "1500ms",
        "--warmup",
        "200ms",
        "--label",
        "mine",
        "--server-pid",
        &pid,
        "--json",
        path(&json),
        "--markdown",
        path(&md),
        "--svg-dir",
        path(&svg),
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    assert!(
        stdout.contains("| mine | search | persistent | 4 | 50.0 |"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&md).unwrap(), stdout);
    let results: Vec<StepResult> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(results.len(), 2);
    for (r, rate) in results.iter().zip([50.0, 100.0]) {
        check(r);
        assert_eq!(r.offered_rate, Some(rate));
        assert_eq!(r.processes, 2);
        // Open loop: every send scheduled in the window either got its answer or is counted as missed
        // (one per client may straddle the window's edges).
        let scheduled = r.completed + r.missed_sends + r.error_total;
        let want = (rate * r.duration_s) as u64;
        assert!(
            scheduled.abs_diff(want) <= 4,
            "{scheduled} vs {want}: {r:#?}"
        );
        assert!(r.client_cpu_s > 0.0);
    }
    for (name, line) in [
        ("search-throughput-vs-rate.svg", ">mine</text>"),
        ("search-latency-vs-rate.svg", ">mine p99</text>"),
    ] {
        let text = std::fs::read_to_string(svg.join(name)).unwrap();
        assert!(text.contains(line), "{name}");
    }
    // `chart` redraws the same charts from the saved JSON.
    let again = dir.path().join("again");
    let (ok, stdout, stderr) =
        run_cli(&["chart", "--json", path(&json), "--svg-dir", path(&again)]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 2);
    assert_eq!(
        std::fs::read_to_string(again.join("search-throughput-vs-rate.svg")).unwrap(),
        std::fs::read_to_string(svg.join("search-throughput-vs-rate.svg")).unwrap()
    );
    // A list of client counts is measured one count after another.
    let json2 = dir.path().join("c.json");
    let (ok, stdout, stderr) = run_cli(&[
        "run",
        "--url",
        &url,
        "--workload",
        "messaging",
        "--entries",
        &entries,
        "--clients",
        "1,3",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--server-pid",
        &pid,
        "--json",
        path(&json2),
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    let results: Vec<StepResult> =
        serde_json::from_str(&std::fs::read_to_string(&json2).unwrap()).unwrap();
    assert_eq!(
        results.iter().map(|r| r.clients).collect::<Vec<_>>(),
        [1, 3]
    );
    results.iter().for_each(check);
    // A bad URL is an error, not a hang.
    let (ok, _, stderr) = run_cli(&[
        "run",
        "--url",
        "ldaps://x",
        "--workload",
        "search",
        "--entries",
        "1",
    ]);
    assert!(!ok && stderr.contains("bad LDAP URL"), "{stderr}");
}

#[test]
fn gen_command_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.ldif");
    let b = dir.path().join("b.ldif");
    for p in [&a, &b] {
        let (ok, _, stderr) = run_cli(&[
            "gen",
            "--entries",
            "50",
            "--seed",
            "7",
            "--passwords",
            "--out",
            path(p),
        ]);
        assert!(ok, "{stderr}");
    }
    let text = std::fs::read(&a).unwrap();
    assert_eq!(text, std::fs::read(&b).unwrap());
    assert!(text.starts_with(b"dn: dc=example,dc=com\n"));
    assert_eq!(text.windows(4).filter(|w| w == b"\ndn:").count(), 10 + 50);
}
