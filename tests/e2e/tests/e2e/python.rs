//! python-ldap clients: paged results with real cookies, controls, abandon, pipelined requests,
//! concurrent connections, and an application's life cycle (tests/e2e/py/*.py).

use canopy_e2e::*;

fn run_script(script: &str, expected: &str) {
    let s = Server::start();
    let out = s.python(script, &[]);
    assert_eq!(
        out.code, 0,
        "{script} failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let mut t = Transcript::new(expected);
    t.raw(script, &out);
    t.check();
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
