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
        s.log()
            .contains("too many connections (max_connections = 4)"),
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

/// Per-identity rules in the order slapd reads `limits` lines: the first match wins.
const RULES: &str = r#"
[limits]
size_limit = 20

[[limits.rules]]
who = "dn.exact:uid=olivia,ou=people,dc=example,dc=com"
size = 2

[[limits.rules]]
who = 'dn.exact:cn=Smith\, John,ou=people,dc=example,dc=com'
lookthrough = 5

[[limits.rules]]
who = "group:cn=managers,ou=groups,dc=example,dc=com"
size = "unlimited"

[[limits.rules]]
who = "dn.subtree:uid=bob,ou=people,dc=example,dc=com"
paged_total = "disabled"

[[limits.rules]]
who = "anonymous"
size = 3
paged_size = 4
paged_total = 6
"#;

const PEOPLE: &str = "ou=people,dc=example,dc=com";

fn jsmith() -> Bind {
    Bind::Simple(
        format!("cn=Smith\\, John,{PEOPLE}"),
        "jsmith-pw".to_string(),
    )
}

/// (exit code, entries) of an ldapsearch below ou=people.
fn people(s: &Server, bind: &Bind, extra: &[&str], filter: &str) -> (i32, usize) {
    let mut args = extra.to_vec();
    args.extend_from_slice(&["-b", PEOPLE, filter, "1.1"]);
    let out = s.search(bind, &args);
    (out.code, out.records().len())
}

#[test]
fn per_identity_size_limits() {
    if !canopy_target("[[limits.rules]]") {
        return;
    }
    let s = Server::start_canopy_with_config(RULES);
    let persons = "(objectClass=person)";
    let (code, all) = people(&s, &Bind::Root, &[], persons);
    assert_eq!(code, 0, "the root DN is unlimited");
    assert!(all > 6, "only {all} persons in base.ldif");
    // sizeLimitExceeded (4) after the identity's limit; the client may lower it, never raise it.
    assert_eq!(people(&s, &Bind::Anonymous, &[], persons), (4, 3));
    assert_eq!(people(&s, &Bind::Anonymous, &["-z", "2"], persons), (4, 2));
    assert_eq!(people(&s, &Bind::Anonymous, &["-z", "10"], persons), (4, 3));
    assert_eq!(people(&s, &Bind::user("olivia"), &[], persons), (4, 2));
    // alice is a member of cn=managers: unlimited, where the global limit would be 20.
    assert_eq!(people(&s, &Bind::user("alice"), &[], persons), (0, all));
    assert_eq!(
        people(&s, &Bind::user("alice"), &["-z", "1"], persons),
        (4, 1)
    );
}

#[test]
fn lookthrough_limit_answers_admin_limit_exceeded() {
    if !canopy_target("lookthrough limits") {
        return;
    }
    let s = Server::start_canopy_with_config(RULES);
    // Unindexed: the scan of the scope has more than 5 candidates; refused before examining them.
    assert_eq!(people(&s, &jsmith(), &[], "(description=*)"), (11, 0));
    // Indexed with more than 5 candidates: the same.
    assert_eq!(people(&s, &jsmith(), &[], "(objectClass=person)"), (11, 0));
    // Indexed with one candidate: answered.
    assert_eq!(people(&s, &jsmith(), &[], "(uid=alice)"), (0, 1));
    // Others have no lookthrough limit.
    assert_eq!(
        people(&s, &Bind::user("alice"), &[], "(description=*)").0,
        0
    );
}

#[test]
fn paged_results_limits() {
    if !canopy_target("paged results limits") {
        return;
    }
    let s = Server::start_canopy_with_config(RULES);
    let persons = "(objectClass=person)";
    // A page larger than paged_size: adminLimitExceeded, as slapd's size.pr.
    let out = s.search(
        &Bind::Anonymous,
        &["-E", "pr=5/noprompt", "-b", PEOPLE, persons, "1.1"],
    );
    assert_eq!(out.code, 11, "page of 5 over paged_size 4: {out:?}");
    assert!(
        out.stderr.contains("illegal pagedResults page size"),
        "{}",
        out.stderr
    );
    // Pages within paged_size run until paged_total (6), not the size limit of 3, then sizeLimitExceeded.
    assert_eq!(
        people(&s, &Bind::Anonymous, &["-E", "pr=2/noprompt"], persons),
        (4, 6)
    );
    assert_eq!(
        people(&s, &Bind::Anonymous, &["-E", "pr=4/noprompt"], persons),
        (4, 6)
    );
    // Without paging the size limit applies.
    assert_eq!(people(&s, &Bind::Anonymous, &[], persons), (4, 3));
    // paged_total = "disabled": the control is refused, plain searches are not.
    let out = s.search(
        &Bind::user("bob"),
        &["-E", "pr=2/noprompt", "-b", PEOPLE, persons, "1.1"],
    );
    assert_eq!(out.code, 11, "paging with paged_total disabled: {out:?}");
    assert!(
        out.stderr.contains("pagedResults control not allowed"),
        "{}",
        out.stderr
    );
    assert_eq!(people(&s, &Bind::user("bob"), &[], persons).0, 0);
}
