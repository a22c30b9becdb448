//! LDAP transactions (RFC 5805) through raw messages (tests/e2e/py/txn.py): Start Transaction,
//! writes carrying the Transaction Specification control, End Transaction committing (all or
//! nothing) or aborting, and the errors slapd answers around them.

use canopy_e2e::*;

#[test]
fn transactions() {
    // slapd 2.5 now and then closes the connection when ending a transaction whose third write
    // fails (tests/e2e/py/txn.py's second part); a fresh server then passes.
    let (s, out) = reference_retry(
        "connection closed at End Transaction",
        || {
            let s = Server::start();
            let out = s.python("txn.py", &[]);
            (s, out)
        },
        |(_, out)| out.code != 0 && out.stderr.contains("rawldap.Closed"),
    );
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

const TXN_WRITES: &str = "\
dn: ou=txn,dc=example,dc=com
changetype: add
objectClass: organizationalUnit
ou: txn

dn: uid=alice,ou=people,dc=example,dc=com
changetype: modify
replace: description
description: in a transaction

dn: ou=txn,dc=example,dc=com
changetype: modrdn
newrdn: ou=txn2
deleteoldrdn: 1
";

const FAILING_WRITES: &str = "\
dn: ou=never,dc=example,dc=com
changetype: add
objectClass: organizationalUnit
ou: never

dn: uid=bob,ou=people,dc=example,dc=com
changetype: modify
replace: description
description: never

dn: uid=nobody,ou=people,dc=example,dc=com
changetype: delete
";

/// `ldapmodify -E txn=commit` and `-E txn=abort` (the OpenLDAP client's transactions): the
/// accesslog overlay logs each write of a committed transaction as a change of its own, with a
/// CSN of its own, and nothing of a transaction that failed or was aborted.
#[test]
fn accesslog_sees_each_change() {
    // slapd 2.5's transactions race under load (see `transactions`): a commit there may apply
    // nothing, and the log never settles.
    reference_attempts(
        "a transaction's commit under load",
        accesslog_sees_each_change_once,
    );
}

fn accesslog_sees_each_change_once() {
    let s = super::accesslog::start(None);
    let mut t = Transcript::new("txn_accesslog");
    let csns = || -> Vec<String> {
        let log = s.search(
            &Bind::Root,
            &["-b", "cn=accesslog", "-s", "one", "(reqType=*)", "entryCSN"],
        );
        log.expect_code(0, "the log's CSNs");
        log.records()
            .iter()
            .flat_map(|r| r.values("entryCSN"))
            .collect()
    };
    super::accesslog::settled(&s);
    let logged_before = super::accesslog::records(&s, SUFFIX);
    let csns_before = csns();
    let txn = |mode: &str, ldif: &str| {
        s.tool(
            "ldapmodify",
            &Bind::Root,
            &["-E", &format!("txn={mode}")],
            Some(ldif),
        )
    };
    t.section("commit", &txn("commit", TXN_WRITES));
    super::accesslog::settled(&s);
    let logged = super::accesslog::records(&s, SUFFIX);
    let new = logged
        .strip_prefix(&logged_before)
        .expect("the log keeps its records");
    t.text("logged", new);
    // Each logged change has a CSN of its own; the data's contextCSN is the last.
    let mut added: Vec<String> = csns()
        .into_iter()
        .filter(|csn| !csns_before.contains(csn))
        .collect();
    added.sort();
    let count = added.len();
    added.dedup();
    assert_eq!((count, added.len()), (3, 3), "new CSNs: {added:?}");
    let context = s.read(&Bind::Root, SUFFIX, &["contextCSN"]).records()[0].values("contextCSN");
    assert_eq!(context.last(), added.last());

    t.section(
        "commit, the third write fails",
        &txn("commit", FAILING_WRITES),
    );
    t.section("abort", &txn("abort", FAILING_WRITES));
    t.section(
        "what the directory holds",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                "(|(ou=txn*)(ou=never)(description=*never*)(description=*transaction*))",
                "description",
            ],
        ),
    );
    // slapd 2.5 logs the writes of a transaction that failed, though none was applied; Canopy
    // logs only what it stored (docs/compatibility.md).
    if s.target == Target::Canopy {
        super::accesslog::settled(&s);
        assert_eq!(super::accesslog::records(&s, SUFFIX), logged);
    }
    t.check();
}

/// A persistent sync search sees each write of a committed transaction as a change of its own, in
/// order, and (on Canopy) nothing of a transaction that failed or was aborted (py/sync_txn.py).
#[test]
fn syncprov_sees_each_change() {
    let s = super::syncprov::provider(100);
    let mut out = s.python("sync_txn.py", &[]);
    assert_eq!(
        out.code, 0,
        "sync_txn.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let (shared, next) = out
        .stdout
        .trim_end()
        .rsplit_once('\n')
        .expect("several lines");
    // slapd 2.5's syncprov passes on the writes of a transaction that failed, though none was
    // applied; Canopy sends only what it stored (docs/compatibility.md).
    let expected = match s.target {
        Target::Canopy => "next notified uid=carol,ou=people,dc=example,dc=com ['after']",
        Target::Slapd => "next notified uid=bob,ou=people,dc=example,dc=com ['never']",
    };
    assert_eq!(next, expected, "{}", out.stdout);
    out.stdout = format!("{shared}\n");
    let mut t = Transcript::new("txn_syncprov");
    t.raw("sync_txn.py", &out);
    t.check();
}

/// A transaction's writes sent with proxied authorization run as the proxied identity: the root DN
/// acting as bob (who may write nothing under Debian's rules) commits nothing, as slapd refuses it.
#[test]
fn proxied_writes_in_a_transaction() {
    let s = Server::start();
    let alice = user_dn("alice");
    let bob = user_dn("bob");
    let change = |value: &str| {
        format!("dn: {alice}\nchangetype: modify\nreplace: description\ndescription: {value}\n")
    };
    let authz = format!("!authzid=dn:{bob}");
    let as_bob = s.tool(
        "ldapmodify",
        &Bind::Root,
        &["-E", "txn=commit", "-e", &authz],
        Some(&change("written as bob")),
    );
    assert_ne!(
        as_bob.code, 0,
        "a write as bob in a transaction: {as_bob:?}"
    );
    let as_root = s.tool(
        "ldapmodify",
        &Bind::Root,
        &["-E", "txn=commit"],
        Some(&change("written as root")),
    );
    as_root.expect_code(0, "the same transaction as the root DN itself");
    let now = s.read(&Bind::Root, &alice, &["description"]);
    assert!(
        now.stdout.contains("description: written as root")
            && !now.stdout.contains("written as bob"),
        "{}",
        now.stdout
    );
}
