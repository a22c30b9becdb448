//! python-ldap clients: paged results with real cookies, controls, abandon, pipelined requests,
//! concurrent connections, and an application's life cycle (tests/e2e/py/*.py).

use canopy_e2e::*;

fn run_script(script: &str, expected: &str) {
    Server::start().check_python(script, expected);
}

#[test]
fn paged_with_cookies() {
    run_script("paged.py", "python_paged");
}

#[test]
fn controls_and_abandon() {
    run_script("controls_abandon.py", "python_controls_abandon");
}

#[test]
fn pipelining_and_connections() {
    run_script("concurrency.py", "python_concurrency");
}

#[test]
fn application() {
    run_script("app.py", "python_app");
}

/// Answers the server writes itself and answers from its queue (streamed searches) on one connection
/// to a client that stops reading: every answer whole, nothing of a search after its
/// SearchResultDone; a search, an abandon and an unbind in one write (py/ordered_answers.py).
#[test]
fn answers_to_a_stalled_reader() {
    let server = Server::start();
    let out = server.python("ordered_answers.py", &["stalled"]);
    out.expect_code(0, "ordered_answers.py stalled");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "pipelined to a stalled reader: 300 of 300 answered, 0 with the wrong number of entries",
            "problems: none",
            "search, abandon and unbind at once: closed True, stray messages none",
        ],
        "{}",
        out.stderr
    );
}
