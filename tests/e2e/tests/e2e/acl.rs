//! Configured access lists (`access = [...]`; slapd: `access` lines): self-service passwords, a
//! read-only service account, a hidden attribute, group-based write, `disclose`, peername. The same
//! rule text goes to both servers, so every assertion here holds for slapd too.

#[path = "acl/matrix.rs"]
mod matrix;
#[path = "acl/sets.rs"]
mod sets;

use canopy_e2e::server::canopy_command;
use canopy_e2e::*;

const PEOPLE: &str = "ou=people,dc=example,dc=com";
const GROUPS: &str = "ou=groups,dc=example,dc=com";
const APOLLO: &str = "ou=apollo,ou=projects,dc=example,dc=com";

/// The list every test here runs with.
const RULES: [&str; 5] = [
    "to attrs=userPassword by self write by anonymous auth by * none",
    r#"to attrs=employeeNumber by dn.exact="uid=mallory,ou=people,dc=example,dc=com" read by * none"#,
    r#"to dn.subtree="ou=projects,dc=example,dc=com"
        by group.exact="cn=managers,ou=groups,dc=example,dc=com" write
        by users read by * none"#,
    r#"to dn.subtree="ou=groups,dc=example,dc=com" by users disclose by * none"#,
    r#"to * by dn.exact="uid=judy,ou=people,dc=example,dc=com" read
        by self write by users read by peername.ip=127.0.0.1 read by * none"#,
];

fn start() -> Server {
    Server::start_with_access(&RULES)
}

fn replace(dn: &str, attr: &str, value: &str) -> String {
    format!("dn: {dn}\nchangetype: modify\nreplace: {attr}\n{attr}: {value}\n-\n")
}

fn dns(out: &Out) -> Vec<String> {
    let mut dns: Vec<String> = out.records().iter().map(|r| r.dn()).collect();
    dns.sort();
    dns
}

/// Everything a client printed (ldapsearch -LLL reports results on standard error).
fn said(out: &Out) -> String {
    format!("{}{}", out.stdout, out.stderr)
}

fn compare(s: &Server, bind: &Bind, dn: &str, assertion: &str) -> Out {
    s.tool("ldapcompare", bind, &[dn, assertion], None)
}

#[test]
fn self_service_password_change() {
    let s = start();
    let alice = user_dn("alice");
    s.modify(
        &Bind::user("bob"),
        &replace(&alice, "userPassword", "stolen"),
    )
    .expect_code(50, "bob sets alice's password");
    s.modify(
        &Bind::user("alice"),
        &replace(&alice, "userPassword", "alice-2"),
    )
    .expect_code(0, "alice sets her own password");
    s.whoami(Via::Ldap, &Bind::Simple(alice.clone(), "alice-2".into()))
        .expect_code(0, "alice binds with the new password");
    s.whoami(Via::Ldap, &Bind::user("alice"))
        .expect_code(49, "the old password no longer binds");
    // Read back: the owner (write includes read) sees it, others do not.
    let own = s.read(
        &Bind::Simple(alice.clone(), "alice-2".into()),
        &alice,
        &["userPassword"],
    );
    own.expect_code(0, "alice reads her password");
    assert!(own.stdout.contains("userPassword:"), "{}", own.stdout);
    let other = s.read(&Bind::user("bob"), &alice, &["userPassword"]);
    other.expect_code(0, "bob reads alice");
    assert!(!other.stdout.contains("userPassword"), "{}", other.stdout);
    // `self write` on other attributes (the last rule).
    s.modify(
        &Bind::user("bob"),
        &replace(&user_dn("bob"), "mail", "b@example.com"),
    )
    .expect_code(0, "bob changes his own mail");
    s.modify(
        &Bind::user("bob"),
        &replace(&alice, "mail", "b@example.com"),
    )
    .expect_code(50, "bob changes alice's mail");
}

#[test]
fn read_only_service_account() {
    let s = start();
    let judy = Bind::user("judy");
    let all = s.search(
        &judy,
        &["-b", PEOPLE, "(objectClass=inetOrgPerson)", "mail"],
    );
    all.expect_code(0, "judy searches people");
    assert!(dns(&all).len() >= 10, "judy sees everyone: {}", all.stdout);
    assert!(
        all.stdout.contains("mail: alice@example.com"),
        "{}",
        all.stdout
    );
    s.modify(&judy, &replace(&user_dn("bob"), "mail", "j@example.com"))
        .expect_code(50, "judy changes bob's mail");
    s.modify(&judy, &replace(&user_dn("judy"), "mail", "j@example.com"))
        .expect_code(
            50,
            "judy changes her own mail (her read clause comes first)",
        );
    let entry = format!("dn: cn=svc-new,{PEOPLE}\nobjectClass: organizationalRole\ncn: svc-new\n");
    s.add(&judy, &entry).expect_code(50, "judy adds an entry");
    s.tool("ldapdelete", &judy, &[&user_dn("bob")], None)
        .expect_code(50, "judy deletes an entry");
}

#[test]
fn hidden_attribute() {
    let s = start();
    let alice = user_dn("alice");
    let bob = Bind::user("bob");
    let read = s.read(&bob, &alice, &["employeeNumber", "cn"]);
    read.expect_code(0, "bob reads alice");
    assert!(read.stdout.contains("cn: Alice Adams"), "{}", read.stdout);
    assert!(!read.stdout.contains("employeeNumber"), "{}", read.stdout);
    let filtered = s.search(&bob, &["-b", PEOPLE, "(employeeNumber=1)", "1.1"]);
    filtered.expect_code(0, "bob filters on employeeNumber");
    assert!(dns(&filtered).is_empty(), "{}", filtered.stdout);
    let negated = s.search(&bob, &["-b", PEOPLE, "(!(employeeNumber=1))", "1.1"]);
    negated.expect_code(0, "bob filters on its negation");
    assert!(
        dns(&negated).is_empty(),
        "Undefined negated stays Undefined: {}",
        negated.stdout
    );
    compare(&s, &bob, &alice, "employeeNumber:1")
        .expect_code(50, "bob compares alice's employeeNumber");
    // The one who may read it sees, matches and compares it.
    let mallory = Bind::user("mallory");
    let seen = s.search(
        &mallory,
        &["-b", PEOPLE, "(employeeNumber=1)", "employeeNumber"],
    );
    seen.expect_code(0, "mallory filters on employeeNumber");
    assert_eq!(dns(&seen), vec![alice.clone()], "{}", seen.stdout);
    assert!(seen.stdout.contains("employeeNumber: 1"), "{}", seen.stdout);
    compare(&s, &mallory, &alice, "employeeNumber:1").expect_code(6, "mallory compares");
}

#[test]
fn group_based_write() {
    let s = start();
    let entry = format!("dn: cn=plan,{APOLLO}\nobjectClass: organizationalRole\ncn: plan\n");
    s.add(&Bind::user("bob"), &entry)
        .expect_code(50, "bob (not a manager) adds under projects");
    s.add(&Bind::user("alice"), &entry)
        .expect_code(0, "alice (a manager) adds under projects");
    let lead = format!("cn=lead,{APOLLO}");
    s.modify(
        &Bind::user("alice"),
        &replace(&lead, "description", "by alice"),
    )
    .expect_code(0, "alice modifies under projects");
    s.modify(&Bind::user("bob"), &replace(&lead, "description", "by bob"))
        .expect_code(50, "bob modifies under projects");
    let read = s.read(&Bind::user("bob"), &lead, &["description"]);
    read.expect_code(0, "bob reads under projects");
    assert!(
        read.stdout.contains("description: by alice"),
        "{}",
        read.stdout
    );
    let plan = format!("cn=plan,{APOLLO}");
    s.tool("ldapdelete", &Bind::user("bob"), &[&plan], None)
        .expect_code(50, "bob deletes under projects");
    s.tool("ldapdelete", &Bind::user("alice"), &[&plan], None)
        .expect_code(0, "alice deletes under projects");
    let docs = format!("cn=docs,{APOLLO}");
    s.tool(
        "ldapmodrdn",
        &Bind::user("bob"),
        &["-r", &docs, "cn=manuals"],
        None,
    )
    .expect_code(50, "bob renames under projects");
    s.tool(
        "ldapmodrdn",
        &Bind::user("alice"),
        &["-r", &docs, "cn=manuals"],
        None,
    )
    .expect_code(0, "alice renames under projects");
    // Moving out of projects needs write on the new parent's children, which she lacks.
    let manuals = format!("cn=manuals,{APOLLO}");
    let args = ["-s", PEOPLE, &manuals, "cn=manuals"];
    s.tool("ldapmodrdn", &Bind::user("alice"), &args, None)
        .expect_code(50, "alice moves an entry into people");
}

#[test]
fn disclose() {
    let s = start();
    let staff = format!("cn=staff,{GROUPS}");
    // Users may know the groups exist (disclose) but not read or compare them.
    let base = s.read(&Bind::user("bob"), &staff, &[]);
    base.expect_code(50, "bob searches a group he may only disclose");
    compare(&s, &Bind::user("bob"), &staff, "cn:staff").expect_code(50, "bob compares in a group");
    let under = s.search(
        &Bind::user("bob"),
        &["-b", "dc=example,dc=com", "(cn=staff)", "1.1"],
    );
    under.expect_code(0, "bob searches the whole tree for it");
    assert!(dns(&under).is_empty(), "{}", under.stdout);
    // Anonymous clients may not even know: noSuchObject, no matched DN.
    let anon = s.read(&Bind::Anonymous, &staff, &[]);
    anon.expect_code(32, "anonymous searches a group");
    assert!(!said(&anon).contains("Matched DN"), "{}", said(&anon));
    compare(&s, &Bind::Anonymous, &staff, "cn:staff").expect_code(32, "anonymous compares");
    // A missing entry names its nearest ancestor only to those who may know of it.
    let ghost = format!("cn=ghost,{GROUPS}");
    let anon = s.read(&Bind::Anonymous, &ghost, &[]);
    anon.expect_code(32, "anonymous reads a missing group");
    assert!(!said(&anon).contains("Matched DN"), "{}", said(&anon));
    let user = s.read(&Bind::user("bob"), &ghost, &[]);
    user.expect_code(32, "bob reads a missing group");
    let matched = format!("Matched DN: {GROUPS}");
    assert!(said(&user).contains(&matched), "{}", said(&user));
    let gone =
        format!("dn: {ghost}\nchangetype: modify\nreplace: description\ndescription: x\n-\n");
    let anon = s.modify(&Bind::user("judy"), &gone);
    anon.expect_code(32, "judy modifies a missing group");
}

#[test]
fn peername() {
    let s = start();
    let alice = user_dn("alice");
    // Anonymous over TCP from 127.0.0.1 reads (peername.ip), over ldapi it gets nothing at all.
    let tcp = s.read(&Bind::Anonymous, &alice, &["cn"]);
    tcp.expect_code(0, "anonymous read over 127.0.0.1");
    assert!(tcp.stdout.contains("cn: Alice Adams"), "{}", tcp.stdout);
    let args = ["-LLL", "-b", &alice, "-s", "base", "(objectClass=*)", "cn"];
    let local = s.tool_via(Via::Ldapi, "ldapsearch", &Bind::Anonymous, &args, None);
    local.expect_code(32, "anonymous read over ldapi");
}

#[test]
fn path_and_ssf_clauses() {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        "to attrs=description by peername.path={ldapi} read by * none",
        "to attrs=mail by ssf=71 read by * none",
        "to * by * read",
    ];
    let s = Server::start_with_access(&rules);
    let top = "dc=example,dc=com";
    let alice = user_dn("alice");
    let base = ["-LLL", "-s", "base", "(objectClass=*)"];
    let over = |via: Via, dn: &str, attr: &str| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["-b", dn, attr]);
        s.tool_via(via, "ldapsearch", &Bind::Anonymous, &args, None)
    };
    let tcp = over(Via::Ldap, top, "description");
    tcp.expect_code(0, "description over TCP");
    assert!(!tcp.stdout.contains("description:"), "{}", tcp.stdout);
    let local = over(Via::Ldapi, top, "description");
    local.expect_code(0, "description over ldapi");
    assert!(
        local.stdout.contains("description: The test suffix"),
        "{}",
        local.stdout
    );
    let tcp = over(Via::Ldap, &alice, "mail");
    assert!(
        !tcp.stdout.contains("mail:"),
        "mail over TCP: {}",
        tcp.stdout
    );
    let local = over(Via::Ldapi, &alice, "mail");
    assert!(
        local.stdout.contains("mail: alice@example.com"),
        "mail over ldapi: {}",
        local.stdout
    );
}

#[test]
fn acl_check_explains() {
    if Target::from_env() == Target::Slapd {
        println!(
            "skipped for slapd: `canopy acl-check` is canopy's own (slapacl differs in output)"
        );
        return;
    }
    let s = start();
    let config = s.dir().join("canopy.toml");
    let check = |args: &[&str]| {
        let mut cmd = canopy_command();
        cmd.arg("acl-check")
            .arg("--config")
            .arg(&config)
            .arg("--data")
            .arg(s.data_dir())
            .args(args);
        client::run(cmd, None)
    };
    let alice = user_dn("alice");
    let out = check(&[
        "--as",
        &user_dn("bob"),
        "--entry",
        &alice,
        "--attr",
        "employeeNumber",
    ]);
    out.expect_code(1, "bob reading alice's employeeNumber is denied");
    for needle in [
        "rule 1: to attrs=employeeNumber",
        "by clause 1 matched: by * none",
        "granted: none",
        "read access to employeeNumber: DENIED",
    ] {
        assert!(
            out.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            out.stdout
        );
    }
    let out = check(&[
        "--as",
        "",
        "--entry",
        &alice,
        "--attr",
        "userPassword",
        "--level",
        "auth",
    ]);
    out.expect_code(0, "anonymous auth on userPassword");
    assert!(
        out.stdout
            .contains("by clause 1 matched: by anonymous auth"),
        "{}",
        out.stdout
    );
    let out = check(&[
        "--as",
        &alice,
        "--entry",
        &format!("cn=lead,{APOLLO}"),
        "--attr",
        "children",
        "--level",
        "write",
    ]);
    out.expect_code(0, "alice (a manager) writes under projects");
    assert!(out.stdout.contains("group.exact="), "{}", out.stdout);
    assert!(out.stdout.contains("granted: write"), "{}", out.stdout);
    let out = check(&["--as", "", "--entry", &alice, "--peer", "127.0.0.1"]);
    out.expect_code(0, "anonymous from 127.0.0.1 reads");
    assert!(
        out.stdout.contains("peername.ip=127.0.0.1"),
        "{}",
        out.stdout
    );
    let out = check(&[
        "--as",
        "cn=admin,dc=example,dc=com",
        "--entry",
        &alice,
        "--attr",
        "userPassword",
    ]);
    out.expect_code(0, "the root DN reads anything");
    assert!(out.stdout.contains("root DN"), "{}", out.stdout);
    let out = check(&["--as", "", "--entry", "cn=nobody,dc=example,dc=com"]);
    out.expect_code(1, "a missing entry");
    assert!(out.stderr.contains("no entry"), "{}", out.stderr);
}

#[test]
fn bad_rules_fail_the_start() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: canopy's configuration errors");
        return;
    }
    let dir = canopy_e2e::tempdir::TempDir::new("acl-bad");
    let path = dir.path().join("canopy.toml");
    std::fs::write(&path, "access = [\"to * by * read\", \"to * by * reed\"]\n").unwrap();
    let mut cmd = canopy_command();
    cmd.arg("--config")
        .arg(&path)
        .arg("--data")
        .arg(dir.path().join("data"))
        .arg("export");
    let out = client::run(cmd, None);
    assert_ne!(out.code, 0, "a bad rule must fail: {}", out.stdout);
    let file = path.display().to_string();
    for needle in [file.as_str(), "access rule 1", "\"reed\""] {
        assert!(
            out.stderr.contains(needle),
            "missing {needle:?} in {}",
            out.stderr
        );
    }
}

/// A value rule that grants read where the whole attribute gets less (OpenLDAP's test006: a value
/// of `cn` readable by one user, the attribute only searchable): the readable values are sent, as
/// slapd decides each value it sends.
#[test]
fn value_rules_grant_more_than_the_attribute() {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        r#"to dn.exact="uid=alice,ou=people,dc=example,dc=com" attrs=description val="for bob"
            by dn.exact="uid=bob,ou=people,dc=example,dc=com" read by * break"#,
        r#"to dn.exact="uid=alice,ou=people,dc=example,dc=com" attrs=description val.regex="^for c"
            by dn.exact="uid=carol,ou=people,dc=example,dc=com" read by * break"#,
        r#"to dn.exact="uid=alice,ou=people,dc=example,dc=com" attrs=description by * search"#,
        "to * by users read by * none",
    ];
    let s = Server::start_with_access(&rules);
    let alice = user_dn("alice");
    let add = format!(
        "dn: {alice}\nchangetype: modify\nadd: description\ndescription: for bob\ndescription: for carol\n-\n"
    );
    s.modify(&Bind::Root, &add)
        .expect_code(0, "root adds two descriptions");
    for (uid, shown, hidden) in [
        ("bob", Some("for bob"), "for carol"),
        ("carol", Some("for carol"), "for bob"),
        ("dave", None, "for"),
    ] {
        let out = s.read(&Bind::user(uid), &alice, &["description"]);
        out.expect_code(0, "a read of alice's descriptions");
        if let Some(value) = shown {
            assert!(
                out.stdout.contains(&format!("description: {value}")),
                "{uid}: {}",
                out.stdout
            );
        }
        assert!(
            !out.stdout.contains(&format!("description: {hidden}")),
            "{uid}: {}",
            out.stdout
        );
    }
    // Types only: the attribute as a whole, which nobody reads.
    let out = s.search(
        &Bind::user("bob"),
        &[
            "-A",
            "-b",
            &alice,
            "-s",
            "base",
            "(objectClass=*)",
            "description",
        ],
    );
    out.expect_code(0, "a types-only read");
    assert!(!out.stdout.contains("description"), "{}", out.stdout);
}

#[test]
fn value_rules() {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        r#"to attrs=description val.regex="^secret" by * none"#,
        "to * by self write by users read by * none",
    ];
    let s = Server::start_with_access(&rules);
    let alice = user_dn("alice");
    let add = format!(
        "dn: {alice}\nchangetype: modify\nadd: description\ndescription: secret plan\ndescription: public note\n-\n"
    );
    s.modify(&Bind::Root, &add)
        .expect_code(0, "root adds two descriptions");
    let bob = Bind::user("bob");
    let read = s.read(&bob, &alice, &["description"]);
    read.expect_code(0, "bob reads alice's descriptions");
    assert!(
        read.stdout.contains("description: public note"),
        "{}",
        read.stdout
    );
    assert!(!read.stdout.contains("secret"), "{}", read.stdout);
    let hidden = s.search(&bob, &["-b", PEOPLE, "(description=secret plan)", "1.1"]);
    hidden.expect_code(0, "bob filters on the hidden value");
    assert!(dns(&hidden).is_empty(), "{}", hidden.stdout);
    let shown = s.search(&bob, &["-b", PEOPLE, "(description=public note)", "1.1"]);
    assert_eq!(dns(&shown), vec![alice.clone()], "{}", shown.stdout);
    compare(&s, &bob, &alice, "description:secret plan").expect_code(50, "compare a hidden value");
    compare(&s, &bob, &alice, "description:public note").expect_code(6, "compare a shown value");
    let own = |value: &str| {
        format!("dn: {alice}\nchangetype: modify\nadd: description\ndescription: {value}\n-\n")
    };
    s.modify(&Bind::user("alice"), &own("secret two"))
        .expect_code(50, "alice adds a value the value rule denies");
    s.modify(&Bind::user("alice"), &own("mine"))
        .expect_code(0, "alice adds another value (self write)");
}

#[test]
fn read_controls_and_assertion_respect_read() {
    let s = start();
    let alice = user_dn("alice");
    let change = replace(&alice, "mail", "alice@new.example.com");
    let postread = s.tool(
        "ldapmodify",
        &Bind::user("alice"),
        &["-e", "postread=mail,employeeNumber,userPassword"],
        Some(&change),
    );
    postread.expect_code(0, "alice changes her mail with a post-read");
    let said = said(&postread);
    assert!(said.contains("mail: alice@new.example.com"), "{said}");
    assert!(
        !said.contains("employeeNumber"),
        "hidden from alice: {said}"
    );
    assert!(
        said.contains("userPassword"),
        "her own password (self write): {said}"
    );
    // An assertion on an attribute alice may not read fails; on one she reads, it holds.
    let hidden = s.tool(
        "ldapmodify",
        &Bind::user("alice"),
        &["-e", "assert=(employeeNumber=1)"],
        Some(&replace(&alice, "mail", "a2@example.com")),
    );
    hidden.expect_code(122, "assertion on a hidden attribute");
    let shown = s.tool(
        "ldapmodify",
        &Bind::user("alice"),
        &["-e", "assert=(uid=alice)"],
        Some(&replace(&alice, "mail", "a2@example.com")),
    );
    shown.expect_code(0, "assertion on a readable attribute");
}

#[test]
fn styles_filters_and_break() {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        r#"to dn.one="ou=people,dc=example,dc=com" attrs=telephoneNumber
            by self read by users break by * none"#,
        r#"to dn.regex="^uid=(alice|bob),ou=people,dc=example,dc=com$" attrs=telephoneNumber
            by users read"#,
        "to attrs=telephoneNumber by * none",
        "to filter=(objectClass=posixGroup) by * none",
        "to * by users read by * none",
    ];
    let s = Server::start_with_access(&rules);
    let carol = Bind::user("carol");
    let phone = |uid: &str| {
        let out = s.read(&carol, &user_dn(uid), &["telephoneNumber"]);
        out.expect_code(0, &format!("carol reads {uid}"));
        out.stdout.contains("telephoneNumber:")
    };
    assert!(phone("carol"), "her own (self read)");
    assert!(phone("alice"), "alice's (break, then the regex rule)");
    assert!(!phone("dave"), "dave's (break, then none)");
    let groups = s.search(&carol, &["-b", GROUPS, "(objectClass=*)", "1.1"]);
    groups.expect_code(0, "carol lists the groups");
    let mut expected: Vec<String> = ["cn=engineering", "cn=managers"]
        .iter()
        .map(|cn| format!("{cn},{GROUPS}"))
        .chain([GROUPS.to_string()])
        .collect();
    expected.sort();
    assert_eq!(
        dns(&groups),
        expected,
        "posixGroups hidden by the filter rule"
    );
}

/// The same list through python-ldap: reads, filters, compares and writes as a user, the owner and an
/// anonymous client.
#[test]
fn python_ldap_sees_the_rules() {
    let s = start();
    let out = s.python("acl_rules.py", &[]);
    out.expect_code(0, "acl_rules.py");
    println!("{}", out.stdout);
    let expected = [
        "bob reads alice ok cn,gidnumber,givenname,homedirectory,loginshell,mail,objectclass,sn,\
         telephonenumber,uid,uidnumber",
        "bob reads alice employeeNumber ok ",
        "bob filters on userPassword ok 0",
        "bob compares alice userPassword INSUFFICIENT_ACCESS (50)",
        "bob modifies alice INSUFFICIENT_ACCESS (50)",
        "bob modifies himself ok ",
        "alice changes her password ok ",
        "alice binds with it ok dn:uid=alice,ou=people,dc=example,dc=com",
        "anonymous reads alice ok cn",
        "anonymous searches the groups NO_SUCH_OBJECT (32)",
    ];
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines, expected, "python-ldap under the access list");
}

/// Rules whose `<what>` names no DN and no filter: entries differ only in being the requester's own
/// (canopy then decides `self` from the stored name, without building each entry's normalized DN).
#[test]
fn self_rules_in_a_search_of_many_entries() {
    let rules = [
        "to attrs=userPassword by self read by anonymous auth by * none",
        "to attrs=mail,telephoneNumber by self read by * none",
        "to * by users read by * none",
    ];
    let s = Server::start_with_access(&rules);
    let alice = user_dn("alice");
    let bob = user_dn("bob");
    let all = s.search(
        &Bind::user("alice"),
        &[
            "-b",
            PEOPLE,
            "(objectClass=inetOrgPerson)",
            "mail",
            "userPassword",
            "cn",
        ],
    );
    all.expect_code(0, "alice lists the people");
    let records = all.records();
    let own = records
        .iter()
        .find(|r| r.dn() == alice)
        .expect("alice's entry");
    assert_eq!(
        own.values("mail"),
        vec!["alice@example.com"],
        "{}",
        all.stdout
    );
    assert_eq!(own.values("userPassword").len(), 1, "{}", all.stdout);
    let other = records.iter().find(|r| r.dn() == bob).expect("bob's entry");
    assert_eq!(other.values("cn"), vec!["Bob Brown"], "{}", all.stdout);
    assert!(other.values("mail").is_empty(), "{}", all.stdout);
    assert!(other.values("userPassword").is_empty(), "{}", all.stdout);
    // A filter on an attribute only its owner may search finds the owner's entry only.
    let mails = s.search(&Bind::user("bob"), &["-b", PEOPLE, "(mail=*)", "1.1"]);
    mails.expect_code(0, "bob filters on mail");
    assert_eq!(dns(&mails), vec![bob.clone()], "{}", mails.stdout);
    let phone = s.search(
        &Bind::user("bob"),
        &["-b", PEOPLE, "(telephoneNumber=+1 555 010 1001)", "1.1"],
    );
    phone.expect_code(0, "bob filters on alice's number");
    assert!(dns(&phone).is_empty(), "{}", phone.stdout);
}

/// Searches on one connection under identities that change by rebinding: each answer follows the
/// identity of the moment (canopy keeps a connection's access decisions across its searches, per
/// identity and configuration).
#[test]
fn rebinding_changes_what_searches_see() {
    // Users may read ou=people itself; below it, alice reads every entry and anyone else only their
    // own: a decision kept from one identity would show the next one too much or too little.
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        r#"to dn.base="ou=people,dc=example,dc=com" by users read by * none"#,
        r#"to * by dn.exact="uid=alice,ou=people,dc=example,dc=com" read by self read by * none"#,
    ];
    let s = Server::start_with_access(&rules);
    let out = s.python("acl_rebind.py", &[]);
    out.expect_code(0, "acl_rebind.py");
    let alice = user_dn("alice");
    let expected = [
        format!("alice 0 15 entries {alice}"),
        format!("alice 1 15 entries {alice}"),
        "bob 0 bob@example.com ".to_string(),
        "bob 1 bob@example.com ".to_string(),
        // Anonymous may not even see ou=people, the search's base.
        "anonymous NO_SUCH_OBJECT (32)".to_string(),
        "alice again 15 entries".to_string(),
    ];
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines, expected, "{}", out.stderr);
}

/// slapd's `self` access modifier: `selfwrite` on a group's `member` lets a user add and delete their
/// own DN there, and nothing else (not another DN, not a replace of the whole attribute); `selfadd`
/// only adds. Every answer is slapd's (the same rules run on both servers).
#[test]
fn selfwrite_on_members() {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        r#"to dn.exact="cn=engineering,ou=groups,dc=example,dc=com" attrs=member by dn.exact="uid=carol,ou=people,dc=example,dc=com" selfadd by users selfwrite by * read"#,
        "to * by users read by * none",
    ];
    let s = Server::start_with_access(&rules);
    let group = format!("cn=engineering,{GROUPS}");
    let change = |op: &str, value: &str| {
        format!("dn: {group}\nchangetype: modify\n{op}: member\nmember: {value}\n")
    };
    let mut t = Transcript::new("acl_selfwrite");
    let dave = user_dn("dave");
    let erin = user_dn("erin");
    let carol = user_dn("carol");
    let bob = user_dn("bob");
    let steps: Vec<(&str, Bind, String)> = vec![
        (
            "dave adds himself",
            Bind::user("dave"),
            change("add", &dave),
        ),
        ("dave adds erin", Bind::user("dave"), change("add", &erin)),
        (
            "dave deletes himself, spelled in capitals",
            Bind::user("dave"),
            change("delete", &dave.to_uppercase()),
        ),
        (
            "dave deletes bob",
            Bind::user("dave"),
            change("delete", &bob),
        ),
        (
            "bob deletes himself",
            Bind::user("bob"),
            change("delete", &bob),
        ),
        (
            "erin replaces every member with herself",
            Bind::user("erin"),
            format!("dn: {group}\nchangetype: modify\nreplace: member\nmember: {erin}\n"),
        ),
        (
            "carol adds herself (selfadd)",
            Bind::user("carol"),
            change("add", &carol),
        ),
        (
            "carol deletes herself (selfadd)",
            Bind::user("carol"),
            change("delete", &carol),
        ),
        ("anonymous adds erin", Bind::Anonymous, change("add", &erin)),
    ];
    for (title, bind, ldif) in steps {
        let out = s.modify(&bind, &ldif);
        t.text(title, &format!("# rc: {}", out.code));
    }
    t.section(
        "members afterwards",
        &s.read(&Bind::Root, &group, &["member"]),
    );
    t.check();
}
