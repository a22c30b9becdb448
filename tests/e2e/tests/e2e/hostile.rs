//! Hostile input (tests/e2e/py/hostile.py, raw sockets): malformed BER, PDUs over the anonymous
//! size limit, a filter nested 10000 deep and invalid DNs. The server must refuse each one
//! without dying, and keep answering new connections; requests that are valid BER but break a
//! rule get a result code, as from OpenLDAP.

use canopy_e2e::*;

#[test]
fn hostile_input() {
    let s = Server::start();
    let out = s.python("hostile.py", &[]);
    assert_eq!(
        out.code,
        0,
        "hostile.py failed:\n{}\n{}\nserver log:\n{}",
        out.stdout,
        out.stderr,
        s.log()
    );
    assert!(s.alive(), "the server died; its log:\n{}", s.log());
    // The whole directory is still there and readable.
    let all = s.search(&Bind::Root, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    all.expect_code(0, "search after the attacks");
    assert_eq!(all.records().len(), 27, "entries after the attacks");
    let mut t = Transcript::new("hostile");
    t.raw("hostile.py", &out);
    t.check();
}

/// Valid BER that breaks a rule of RFC 4511 (tests/e2e/py/protocol_errors.py): out-of-range
/// values of the extensible enumerations (scope, modify operation) and of derefAliases, negative
/// limits, an unknown authentication choice, an add without attributes, a delete of the empty
/// DN. OpenLDAP answers each with a result code and keeps the session usable.
#[test]
fn protocol_errors_in_valid_ber() {
    let s = Server::start();
    let out = s.python("protocol_errors.py", &[]);
    assert_eq!(
        out.code, 0,
        "protocol_errors.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    assert!(s.alive(), "the server died; its log:\n{}", s.log());
    let mut t = Transcript::new("hostile_protocol_errors");
    t.raw("protocol_errors.py", &out);
    t.check();
}
