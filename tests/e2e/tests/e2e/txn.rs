//! LDAP transactions (RFC 5805) through raw messages (tests/e2e/py/txn.py): Start Transaction,
//! writes carrying the Transaction Specification control, End Transaction committing (all or
//! nothing) or aborting, and the errors slapd answers around them.

use canopy_e2e::*;

#[test]
fn transactions() {
    let s = Server::start();
    let out = s.python("txn.py", &[]);
    assert_eq!(
        out.code, 0,
        "txn.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    assert!(s.alive(), "the server died; its log:\n{}", s.log());
    let mut t = Transcript::new("txn");
    t.raw("txn.py", &out);
    // Start and End Transaction are offered; the specification control is not listed.
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "(objectClass=*)", "+"],
    );
    let records = dse.records();
    let listed = |attr: &str| -> Vec<String> {
        records[0]
            .values(attr)
            .into_iter()
            .filter(|oid| oid.starts_with("1.3.6.1.1.21."))
            .collect()
    };
    t.text(
        "root DSE",
        &format!(
            "supportedExtension: {:?}\nsupportedControl: {:?}",
            listed("supportedExtension"),
            listed("supportedControl")
        ),
    );
    t.check();
}

/// A transaction stays in one database: a write routed to another one is refused when it is
/// queued, and the end commits the rest.
#[test]
fn one_database_per_transaction() {
    const GLUED: &str = "ou=glued,dc=example,dc=com";
    let s = Server::start_with_databases(&[slapd_conf::ExtraDatabase {
        suffix: GLUED.into(),
        root_dn: Some(ROOT_DN.into()),
        subordinate: Some(true),
        ..Default::default()
    }]);
    let out = s.python("txn.py", &[GLUED]);
    assert_eq!(
        out.code, 0,
        "txn.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let mut t = Transcript::new("txn_databases");
    t.raw("txn.py", &out);
    t.check();
}
