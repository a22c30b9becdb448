//! Server limits (docs/limits.md): connection counts in total and per IP address, the idle timeout,
//! through raw sockets (tests/e2e/py/conn_limits.py). These use canopy's configuration file and are
//! skipped with a printed reason when the suite targets slapd.

use canopy_e2e::*;

/// False (with the reason printed) when the suite runs against slapd.
fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} is set in canopy's configuration file");
        return false;
    }
    true
}

fn run(s: &Server, args: &[&str]) -> String {
    let out = s.python("conn_limits.py", args);
    assert_eq!(
        out.code,
        0,
        "conn_limits.py {args:?} failed:\n{}\n{}\nserver log:\n{}",
        out.stdout,
        out.stderr,
        s.log()
    );
    assert!(s.alive(), "the server died; its log:\n{}", s.log());
    out.stdout
}

#[test]
fn max_connections_refuses_with_busy() {
    if !canopy_target("max_connections") {
        return;
    }
    let s = Server::start_canopy_with_config("[limits]\nmax_connections = 4\n");
    let out = run(&s, &["total", "4"]);
    assert_eq!(
        out,
        "4 connections answer: True\n\
         connection 5 from 127.0.0.1: notice 51, closed\n\
         after one closed, a new connection answers: True\n"
    );
    assert!(
        s.log().contains("too many connections (max_connections = 4)"),
        "the refusal is not logged:\n{}",
        s.log()
    );
}

#[test]
fn max_connections_per_ip() {
    if !canopy_target("max_connections_per_ip") {
        return;
    }
    let s = Server::start_canopy_with_config("[limits]\nmax_connections_per_ip = 3\n");
    let out = run(&s, &["per_ip", "3"]);
    assert_eq!(
        out,
        "3 connections answer: True\n\
         connection 4 from 127.0.0.1: notice 51, closed\n\
         connection from 127.0.0.2 answers: True\n\
         after one closed, a new connection answers: True\n"
    );
}

#[test]
fn idle_timeout_closes_silent_connections() {
    if !canopy_target("idle_timeout") {
        return;
    }
    let s = Server::start_canopy_with_config("[limits]\nidle_timeout = 2\n");
    let out = run(&s, &["idle", "2"]);
    assert_eq!(
        out,
        "a connection sending every 1.0s stays open for 4s: True\n\
         a silent connection: notice 52, closed\n"
    );
}
