//! `set=` clauses (slapd's set language): group membership through nested groups and a cycle of
//! groups, user/manager chains, `set.regex` with `$1`, intersection, union and concatenation, and
//! `user` for an anonymous requester. The same rules and data go to both servers; the transcript
//! is recorded from slapd, and the key answers are asserted as well.

use canopy_e2e::*;

const MANAGERS: &str = "cn=managers,ou=groups,dc=example,dc=com";
const ENGINEERING: &str = "cn=engineering,ou=groups,dc=example,dc=com";
const PROJECTS: &str = "ou=projects,dc=example,dc=com";

const RULES: [&str; 6] = [
    "to attrs=userPassword by anonymous auth by * none",
    // Members of managers, through engineering (which holds managers again: a cycle).
    r#"to dn.exact="cn=managers,ou=groups,dc=example,dc=com" attrs=description
        by set="[cn=managers,ou=groups,dc=example,dc=com]/member* & user" write by * read"#,
    // A person's manager writes the description, the manager's manager reads and compares it.
    r#"to dn.regex="^uid=([^,]+),ou=people,dc=example,dc=com$" attrs=description
        by set.regex="[uid=$1,ou=people,dc=example,dc=com]/manager & user" write
        by set="this/manager/manager & user" =rcsd
        by * none"#,
    // One's own title, found by concatenation; alice and bob (a union of literals) read titles.
    r#"to dn.children="ou=people,dc=example,dc=com" attrs=title
        by set="[uid=] + user/uid + [,ou=people,dc=example,dc=com] & this" write
        by set="user/uid & ([alice] | [bob])" read
        by * none"#,
    // `user` alone: slapd's empty DN for anonymous is still an element.
    r#"to dn.subtree="ou=projects,dc=example,dc=com" by set="user" read by * none"#,
    "to * by * read",
];

fn replace(dn: &str, attr: &str, value: &str) -> String {
    format!("dn: {dn}\nchangetype: modify\nreplace: {attr}\n{attr}: {value}\n-\n")
}

fn add(dn: &str, attr: &str, value: &str) -> String {
    format!("dn: {dn}\nchangetype: modify\nadd: {attr}\n{attr}: {value}\n-\n")
}

/// base.ldif and: managers holds engineering and dave, engineering holds managers; alice's manager is
/// bob, bob's is carol; alice and erin have titles.
fn start() -> Server {
    let s = Server::start_with_access(&RULES);
    let changes = [
        add(MANAGERS, "member", ENGINEERING),
        add(MANAGERS, "member", &user_dn("dave")),
        add(ENGINEERING, "member", MANAGERS),
        add(&user_dn("alice"), "manager", &user_dn("bob")),
        add(&user_dn("bob"), "manager", &user_dn("carol").to_uppercase()),
        add(&user_dn("alice"), "title", "engineer"),
        add(&user_dn("erin"), "title", "writer"),
    ];
    for change in changes {
        s.modify(&Bind::Root, &change)
            .expect_code(0, "the root DN sets up the tree");
    }
    s
}

#[test]
fn set_clauses_decide_as_slapd() {
    let s = start();
    let mut t = Transcript::new("acl_sets");
    let requesters = [
        ("anonymous", Bind::Anonymous),
        ("alice", Bind::user("alice")),
        ("bob", Bind::user("bob")),
        ("carol", Bind::user("carol")),
        ("dave", Bind::user("dave")),
        ("erin", Bind::user("erin")),
    ];
    for (who, bind) in &requesters {
        let at = |what: &str| format!("{who}: {what}");
        let out = s.modify(
            bind,
            &replace(MANAGERS, "description", &format!("by {who}")),
        );
        t.text(
            &at("modify managers's description"),
            &format!("# rc: {}", out.code),
        );
        let out = s.modify(
            bind,
            &replace(&user_dn("alice"), "description", &format!("by {who}")),
        );
        t.text(
            &at("modify alice's description"),
            &format!("# rc: {}", out.code),
        );
        let out = s.tool(
            "ldapcompare",
            bind,
            &[&user_dn("alice"), "description:nothing"],
            None,
        );
        t.raw(&at("compare alice's description"), &out);
        for uid in ["alice", "erin"] {
            let out = s.modify(
                bind,
                &replace(&user_dn(uid), "title", &format!("set by {who}")),
            );
            t.text(
                &at(&format!("modify {uid}'s title")),
                &format!("# rc: {}", out.code),
            );
        }
        t.section(
            &at("read people's titles and descriptions"),
            &s.search(
                bind,
                &[
                    "-b",
                    "ou=people,dc=example,dc=com",
                    "(|(uid=alice)(uid=bob)(uid=erin))",
                    "title",
                    "description",
                ],
            ),
        );
        t.section(
            &at("search the projects"),
            &s.search(bind, &["-b", PROJECTS, "(objectClass=*)", "1.1"]),
        );
    }
    t.check();

    // The answers that matter, spelled out.
    let modify =
        |bind: &Bind, dn: &str, attr: &str| s.modify(bind, &replace(dn, attr, "checked")).code;
    // carol is no member of managers; alice is, through engineering; dave directly.
    assert_eq!(modify(&Bind::user("alice"), MANAGERS, "description"), 0);
    assert_eq!(modify(&Bind::user("dave"), MANAGERS, "description"), 0);
    assert_eq!(modify(&Bind::user("carol"), MANAGERS, "description"), 50);
    // bob manages alice ($1 from the <what> match); carol manages bob, not alice.
    assert_eq!(
        modify(&Bind::user("bob"), &user_dn("alice"), "description"),
        0
    );
    assert_eq!(
        modify(&Bind::user("carol"), &user_dn("alice"), "description"),
        50
    );
    // The concatenation names the requester's own entry.
    assert_eq!(modify(&Bind::user("erin"), &user_dn("erin"), "title"), 0);
    assert_eq!(modify(&Bind::user("erin"), &user_dn("alice"), "title"), 50);
}

/// `canopy acl-check` shows what a set clause gave; a set that is no expression stops the start.
#[test]
fn acl_check_explains_sets_and_bad_sets_are_refused() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: acl-check is canopy's own, and slapd accepts any set text");
        return;
    }
    let s = start();
    let config = s.dir().join("canopy.toml");
    let check = |who: &str, entry: &str, attr: &str, level: &str| {
        let mut cmd = canopy_e2e::server::canopy_command();
        cmd.arg("acl-check")
            .arg("--config")
            .arg(&config)
            .arg("--data")
            .arg(s.data_dir())
            .args(["--as", &user_dn(who), "--entry", entry])
            .args(["--attr", attr, "--level", level]);
        client::run(cmd, None)
    };
    let out = check("alice", MANAGERS, "description", "write");
    out.expect_code(0, "alice writes managers's description");
    let member = format!(
        "set=\"[{MANAGERS}]/member* & user\": the set holds 1 element(s) (\"{}\"), so it matches",
        user_dn("alice")
    );
    assert!(
        out.stdout.contains(&member),
        "missing {member:?} in\n{}",
        out.stdout
    );
    let out = check("carol", &user_dn("alice"), "description", "=rc");
    out.expect_code(
        0,
        "carol, the manager's manager, compares alice's description",
    );
    let chain = format!(
        "set=\"this/manager/manager & user\": the set holds 1 element(s) (\"{}\"), so it matches",
        user_dn("carol")
    );
    assert!(
        out.stdout.contains(&chain),
        "missing {chain:?} in\n{}",
        out.stdout
    );
    let out = check("dave", &user_dn("alice"), "description", "=rc");
    out.expect_code(1, "dave compares nothing of alice's");
    for needle in [
        "set.expand=\"[uid=$1,ou=people,dc=example,dc=com]/manager & user\": the set is empty",
        "by clause 2 matched: by * none",
    ] {
        assert!(
            out.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            out.stdout
        );
    }
    let out = check("carol", &user_dn("bob"), "description", "write");
    out.expect_code(0, "carol manages bob");
    drop(s);

    let dir = canopy_e2e::tempdir::TempDir::new("acl-bad-set");
    let path = dir.path().join("canopy.toml");
    std::fs::write(&path, "access = ['to * by set=\"user/uid & \" read']\n").unwrap();
    let mut cmd = canopy_e2e::server::canopy_command();
    cmd.arg("--config")
        .arg(&path)
        .arg("--data")
        .arg(dir.path().join("data"))
        .arg("export");
    let out = client::run(cmd, None);
    assert_ne!(out.code, 0, "a bad set must fail: {}", out.stdout);
    for needle in ["access rule 0", "bad set", "at the end"] {
        assert!(
            out.stderr.contains(needle),
            "missing {needle:?} in {}",
            out.stderr
        );
    }
}

/// A set rule added live through cn=config takes effect at once on both servers; a set that is no
/// expression is refused by canopy with `other` (80), as slapd refuses the `olcAccess` values it
/// cannot read (slapd itself takes this one and never matches it).
#[test]
fn set_rules_through_cn_config() {
    let s = Server::start_with_config_tree();
    let mdb = "olcDatabase={1}mdb,cn=config";
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let engineering = "cn=engineering,ou=groups,dc=example,dc=com";
    let rule = format!(
        "{{0}}to dn.exact=\"{engineering}\" attrs=description \
         by set=\"[{engineering}]/member & user\" write by * read"
    );
    s.modify(
        &admin,
        &format!("dn: {mdb}\nchangetype: modify\nadd: olcAccess\nolcAccess: {rule}\n"),
    )
    .expect_code(0, "a set rule is added live");
    let describe = |uid: &str| {
        s.modify(&Bind::user(uid), &replace(engineering, "description", uid))
            .code
    };
    assert_eq!(describe("alice"), 0, "a member writes the description");
    assert_eq!(describe("carol"), 50, "a non-member does not");
    if Target::from_env() == Target::Slapd {
        return;
    }
    let out = s.modify(
        &admin,
        &format!(
            "dn: {mdb}\nchangetype: modify\nadd: olcAccess\n\
             olcAccess: to * by set=\"user/uid & & this\" read\n"
        ),
    );
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(
        out.stderr.contains("olcAccess") && out.stderr.contains("bad set"),
        "{}",
        out.stderr
    );
}
