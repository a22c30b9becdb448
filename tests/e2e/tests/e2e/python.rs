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
