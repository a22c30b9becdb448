//! Generated hostile input (tests/e2e/py/robustness.py, seeded): hundreds of malformed PDUs on
//! fresh connections and pipelined on one. The server must answer each with a result code or a
//! clean disconnect, never panic, keep serving and keep its memory bounded. Against slapd the same
//! run passes, except that slapd closes a pipelining connection past its conn_max_pending.

use canopy_e2e::*;

#[test]
fn generated_malformed_pdus() {
    let s = Server::start();
    let rss_before = s.rss_kib();
    let target = match s.target {
        Target::Canopy => "canopy",
        Target::Slapd => "slapd",
    };
    let out = s.python("robustness.py", &[target]);
    println!("{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.code,
        0,
        "robustness.py failed:\n{}\n{}\nserver log (tail):\n{}",
        out.stdout,
        out.stderr,
        tail(&s.log())
    );
    assert!(s.alive(), "the server died; its log:\n{}", tail(&s.log()));
    assert!(
        !s.log().contains("panicked"),
        "the server panicked:\n{}",
        tail(&s.log())
    );
    let all = s.search(&Bind::Root, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    all.expect_code(0, "search after the attacks");
    assert_eq!(all.records().len(), 27, "entries after the attacks");
    println!("RSS before {rss_before:?} KiB, after {:?} KiB", s.rss_kib());
}

fn tail(log: &str) -> &str {
    let start = log.len().saturating_sub(8000);
    let start = (start..log.len())
        .find(|&i| log.is_char_boundary(i))
        .unwrap_or(0);
    &log[start..]
}
