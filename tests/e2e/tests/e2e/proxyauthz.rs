//! Proxied authorization (RFC 4370) with `authz-policy` and the `authzTo`/`authzFrom` rules of
//! entries: Debian's `ldapwhoami`/`ldapsearch`/`ldapmodify -e '!authzid=...'` and python-ldap for
//! what those clients cannot send, against canopy and slapd alike.

use canopy_e2e::*;

/// Starts a server with `authz-policy POLICY` (slapd) / `[sasl] authz_policy` (canopy).
fn start(policy: &str) -> Server {
    start_with_access(policy, &[])
}

/// [`start`] with `rules` as the main database's access list (empty: Debian's).
fn start_with_access(policy: &str, rules: &[&str]) -> Server {
    Server::start_with_globals(
        &format!("authz-policy {policy}\n"),
        rules,
        &format!("[sasl]\nauthz_policy = \"{policy}\"\n"),
    )
}

/// Replaces `attr` of user `uid` with `values`, as the root DN.
fn set_rules(s: &Server, uid: &str, attr: &str, values: &[String]) {
    let mut ldif = format!(
        "dn: {}\nchangetype: modify\nreplace: {attr}\n",
        user_dn(uid)
    );
    for v in values {
        ldif.push_str(&format!("{attr}: {v}\n"));
    }
    s.modify(&Bind::Root, &ldif)
        .expect_code(0, &format!("{attr} of {uid}"));
}

/// `ldapwhoami` bound as `bind` with a critical control asking for `authzid`.
fn whoami_as(s: &Server, bind: &Bind, authzid: &str) -> Out {
    s.tool(
        "ldapwhoami",
        bind,
        &["-e", &format!("!authzid={authzid}")],
        None,
    )
}

/// The identity `who` may act as `target` (Who am I? answers it).
fn assumes(s: &Server, who: &str, target: &str) {
    let out = whoami_as(s, &Bind::user(who), &format!("dn:{target}"));
    out.expect_code(0, &format!("{who} acting as {target}"));
    assert_eq!(
        out.stdout.trim(),
        format!("dn:{}", target.to_ascii_lowercase())
    );
}

/// `who` may not act as `target`: proxiedAuthorizationDenied (123) with slapd's text.
fn refused(s: &Server, who: &str, target: &str) {
    let out = whoami_as(s, &Bind::user(who), &format!("dn:{target}"));
    assert_ne!(out.code, 0, "{who} acting as {target}: {}", out.stdout);
    assert!(
        out.stderr.contains("Proxied Authorization Denied (123)")
            && out.stderr.contains("not authorized to assume identity"),
        "{who} acting as {target}: {}",
        out.stderr
    );
}

const PEOPLE: &str = "ou=people,dc=example,dc=com";

/// `authz-policy to`: the forms of `authzTo` in the authenticated identity's entry; `authzFrom`
/// is not consulted.
#[test]
fn policy_to_reads_authz_to_forms() {
    let s = start("to");
    set_rules(
        &s,
        "alice",
        "authzTo",
        &[
            format!("dn.exact:{}", user_dn("bob")),
            format!("dn.regex:^uid=c[^,]*,{PEOPLE}$"),
            format!("ldap:///{PEOPLE}??one?(uid=dave)"),
            "dn.subtree:ou=groups,dc=example,dc=com".into(),
            // No filter: slapd never matches such a URL.
            format!("ldap:///{PEOPLE}??sub"),
        ],
    );
    set_rules(
        &s,
        "frank",
        "authzFrom",
        &[format!("dn:{}", user_dn("alice"))],
    );
    assumes(&s, "alice", &user_dn("bob"));
    assumes(&s, "alice", &user_dn("carol"));
    assumes(&s, "alice", &user_dn("dave"));
    assumes(&s, "alice", "cn=staff,ou=groups,dc=example,dc=com");
    assumes(&s, "alice", "ou=groups,dc=example,dc=com");
    refused(&s, "alice", &user_dn("erin"));
    refused(&s, "alice", &user_dn("frank"));
    // The rules are alice's, not bob's.
    refused(&s, "bob", &user_dn("carol"));
    // Acting as oneself needs no rule.
    assumes(&s, "erin", &user_dn("erin"));
}

/// `authz-policy from`: the target's `authzFrom` decides; `authzTo` is ignored.
#[test]
fn policy_from_reads_authz_from_forms() {
    let s = start("from");
    set_rules(&s, "alice", "authzTo", &[format!("dn:{}", user_dn("bob"))]);
    set_rules(&s, "frank", "authzFrom", &[format!("dn.onelevel:{PEOPLE}")]);
    set_rules(&s, "grace", "authzFrom", &["*".into()]);
    set_rules(&s, "heidi", "authzFrom", &[format!("dn.children:{PEOPLE}")]);
    assumes(&s, "alice", &user_dn("frank"));
    assumes(&s, "erin", &user_dn("grace"));
    assumes(&s, "bob", &user_dn("heidi"));
    refused(&s, "alice", &user_dn("bob"));
}

/// `authz-policy any` takes either rule, `all` needs both.
#[test]
fn policy_any_and_all() {
    for (policy, either, both) in [("any", true, true), ("all", false, true)] {
        let s = start(policy);
        set_rules(
            &s,
            "alice",
            "authzTo",
            &[
                format!("dn:{}", user_dn("bob")),
                format!("dn:{}", user_dn("frank")),
            ],
        );
        set_rules(
            &s,
            "carol",
            "authzFrom",
            &[format!("dn:{}", user_dn("alice"))],
        );
        set_rules(
            &s,
            "frank",
            "authzFrom",
            &[format!("dn:{}", user_dn("alice"))],
        );
        for (target, allowed) in [("bob", either), ("carol", either), ("frank", both)] {
            match allowed {
                true => assumes(&s, "alice", &user_dn(target)),
                false => refused(&s, "alice", &user_dn(target)),
            }
        }
        refused(&s, "alice", &user_dn("erin"));
    }
}

/// `authz-policy none` (slapd's default) ignores every rule; the root DN still acts as anyone in its
/// database, even a DN without an entry. The root DSE lists the control.
#[test]
fn policy_none_and_the_root_dn() {
    let s = start("none");
    set_rules(&s, "alice", "authzTo", &["*".into()]);
    set_rules(&s, "bob", "authzFrom", &["*".into()]);
    refused(&s, "alice", &user_dn("bob"));
    let root = whoami_as(&s, &Bind::Root, &format!("dn:{}", user_dn("bob")));
    root.expect_code(0, "root acting as bob");
    assert_eq!(root.stdout.trim(), format!("dn:{}", user_dn("bob")));
    let ghost = whoami_as(&s, &Bind::Root, &format!("dn:{}", user_dn("ghost")));
    ghost.expect_code(0, "root acting as a DN without an entry");
    assert_eq!(ghost.stdout.trim(), format!("dn:{}", user_dn("ghost")));
    let dse = s.search(
        &Bind::Anonymous,
        &["-s", "base", "-b", "", "supportedControl"],
    );
    dse.expect_code(0, "root DSE");
    assert!(
        dse.stdout
            .contains("supportedControl: 2.16.840.1.113730.3.4.18\n"),
        "{}",
        dse.stdout
    );
}

/// The rules are read only where the authenticated identity has `auth` access to them, as slapd
/// reads them (with the requester's access, not the server's).
#[test]
fn rules_need_auth_access() {
    for (rule, allowed) in [
        ("to attrs=authzTo by * none", false),
        ("to attrs=authzTo by * auth", true),
        ("to attrs=authzTo by self read by * none", true),
        ("to attrs=authzTo by users =c by * none", false),
    ] {
        let s = start_with_access("to", &[rule, "to * by * read"]);
        set_rules(&s, "alice", "authzTo", &[format!("dn:{}", user_dn("bob"))]);
        match allowed {
            true => assumes(&s, "alice", &user_dn("bob")),
            false => refused(&s, "alice", &user_dn("bob")),
        }
    }
}

/// A search and a write run as the proxied identity: its access rights, and its DN in
/// modifiersName.
#[test]
fn operations_run_as_the_proxied_identity() {
    let s = start("to");
    set_rules(&s, "alice", "authzTo", &[format!("dn.subtree:{PEOPLE}")]);
    let bob = format!("dn:{}", user_dn("bob"));
    // Debian's rules: only the entry itself reads userPassword.
    let read = s.tool(
        "ldapsearch",
        &Bind::user("alice"),
        &[
            "-LLL",
            "-e",
            &format!("!authzid={bob}"),
            "-b",
            &user_dn("bob"),
            "-s",
            "base",
            "userPassword",
        ],
        None,
    );
    read.expect_code(0, "search as bob");
    assert!(read.stdout.contains("userPassword"), "{}", read.stdout);
    // alice may not write bob's password; bob may (by self write).
    let change = format!(
        "dn: {}\nchangetype: modify\nreplace: userPassword\nuserPassword: new-pw\n",
        user_dn("bob")
    );
    let as_alice = s.modify(&Bind::user("alice"), &change);
    assert_eq!(as_alice.code, 50, "{}", as_alice.stderr);
    s.tool(
        "ldapmodify",
        &Bind::user("alice"),
        &["-e", &format!("!authzid={bob}")],
        Some(&change),
    )
    .expect_code(0, "modify as bob");
    let after = s.read(&Bind::Root, &user_dn("bob"), &["modifiersName"]);
    after.expect_code(0, "modifiersName");
    assert!(
        after
            .stdout
            .contains(&format!("modifiersName: {}\n", user_dn("bob"))),
        "{}",
        after.stdout
    );
    // Denied before the operation runs: the search answers 123 alone.
    let denied = s.tool(
        "ldapsearch",
        &Bind::user("alice"),
        &[
            "-e",
            "!authzid=dn:cn=admins,ou=groups,dc=example,dc=com",
            "-b",
            PEOPLE,
        ],
        None,
    );
    assert_eq!(denied.code, 123, "{}{}", denied.stdout, denied.stderr);
    assert!(!denied.stdout.contains("dn: "), "{}", denied.stdout);
}

/// Anonymous clients, the anonymous target, malformed identities, criticality, and the operations
/// the control does not apply to, through python-ldap.
#[test]
fn control_edges() {
    let s = start("any");
    set_rules(&s, "alice", "authzTo", &[format!("dn:{}", user_dn("bob"))]);
    let anonymous = whoami_as(&s, &Bind::Anonymous, &format!("dn:{}", user_dn("bob")));
    assert!(
        anonymous
            .stderr
            .contains("anonymous proxied authorization not allowed"),
        "{}",
        anonymous.stderr
    );
    let to_anonymous = whoami_as(&s, &Bind::user("alice"), "");
    to_anonymous.expect_code(0, "acting as anonymous");
    assert_eq!(to_anonymous.stdout.trim(), "anonymous");
    let out = s.python("proxyauthz.py", &[]);
    out.expect_code(0, "proxyauthz.py");
    let bob = user_dn("bob");
    let expected = format!(
        "non-critical: ok dn:{bob}
non-critical denied: 123 not authorized to assume identity
value absent: 2 proxy authorization control value absent
twice: 2 proxy authorization control specified multiple times
v1 control: 12 critical extension is not recognized
v1 non-critical: ok dn:{alice}
empty is anonymous: ok 
dn: is anonymous: ok 
bare DN: 123 authzId mapping failed
bad DN: 123 authzId mapping failed
case and spaces: ok dn:{bob}
bind critical: 12 critical extension is unavailable
bind non-critical: ok
unknown extended: 12 critical extension is unavailable
StartTLS: 12 critical extension is unavailable
compare denied: 123 not authorized to assume identity
compare as bob: ok
anonymous client: 123 anonymous proxied authorization not allowed
anonymous client, anonymous target: 123 anonymous proxied authorization not allowed
",
        alice = user_dn("alice"),
    );
    assert_eq!(out.stdout, expected);
}

/// A SASL bind's authorization identity goes through the same decision as the control: the policy
/// and the entries' rules beside Canopy's `[[sasl.proxy]]` (canopy only: slapd's test instance has no
/// SASL user database; the control's tests above prove the decision against slapd).
#[test]
fn sasl_authzid_follows_the_policy() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: needs canopy's SCRAM secrets");
        return;
    }
    let s = Server::start_canopy_with_config("[sasl]\nauthz_policy = \"to\"\n");
    s.tool(
        "ldappasswd",
        &Bind::Root,
        &["-s", "secret", &user_dn("alice")],
        None,
    )
    .expect_code(0, "alice's password");
    set_rules(
        &s,
        "alice",
        "authzTo",
        &[format!("dn.regex:^uid=b[^,]*,{PEOPLE}$")],
    );
    let sasl = |authzid: &str| {
        let mut cmd = std::process::Command::new("ldapwhoami");
        cmd.args(["-H", &s.ldap_url(), "-Q", "-Y", "SCRAM-SHA-256"])
            .args(["-U", "alice", "-w", "secret", "-X", authzid]);
        client::run(cmd, None)
    };
    let ok = sasl("u:bob");
    ok.expect_code(0, "SASL authzid allowed by authzTo");
    assert_eq!(ok.stdout.trim(), format!("dn:{}", user_dn("bob")));
    sasl(&format!("dn:{}", user_dn("erin"))).expect_code(50, "SASL authzid outside authzTo");
}

/// `olcAuthzPolicy` on cn=config: shown, changed live, an unknown value refused.
#[test]
fn policy_changes_live_in_cn_config() {
    let s = Server::start_with_config_tree();
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let policy = |s: &Server| {
        let out = s.read(&admin, "cn=config", &["olcAuthzPolicy"]);
        out.expect_code(0, "olcAuthzPolicy");
        out.stdout
            .lines()
            .filter_map(|l| l.strip_prefix("olcAuthzPolicy: "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(policy(&s), ["none"]);
    set_rules(&s, "alice", "authzTo", &[format!("dn:{}", user_dn("bob"))]);
    refused(&s, "alice", &user_dn("bob"));
    let set = |value: &str| {
        s.modify(
            &admin,
            &format!("dn: cn=config\nchangetype: modify\nreplace: olcAuthzPolicy\nolcAuthzPolicy: {value}\n"),
        )
    };
    set("to").expect_code(0, "olcAuthzPolicy: to");
    assert_eq!(policy(&s), ["to"]);
    assumes(&s, "alice", &user_dn("bob"));
    let bad = set("sideways");
    assert_eq!(bad.code, 80, "{}", bad.stderr);
    assert_eq!(policy(&s), ["to"]);
}

/// The `real...` forms of `<who>` test the connection's own identity (the proxy), the plain forms the
/// identity the operation runs as (the proxied one); without the control both are the bound one.
#[test]
fn real_forms_test_the_connection_identity() {
    let user = |uid: &str| user_dn(uid);
    let entry_rule =
        |uid: &str, who: &str| format!("to dn.base=\"{}\" by {who} read by * none", user(uid));
    let rules = [
        "to attrs=userPassword,authzTo by * auth".to_string(),
        format!("to dn.base=\"{PEOPLE}\" by * read"),
        entry_rule("carol", &format!("realdn.exact=\"{}\"", user("alice"))),
        entry_rule("dave", &format!("dn.exact=\"{}\"", user("alice"))),
        entry_rule("erin", &format!("dn.exact=\"{}\"", user("bob"))),
        entry_rule("frank", &format!("realdn.exact=\"{}\"", user("bob"))),
        entry_rule("alice", "realself"),
        entry_rule("bob", "self"),
        entry_rule("grace", "realusers"),
        entry_rule("heidi", "users"),
        entry_rule("ivan", "realanonymous"),
        entry_rule("judy", "anonymous"),
        entry_rule("olivia", &format!("realdn.regex=\"^uid=a[^,]*,{PEOPLE}$\"")),
        entry_rule("mallory", "realdnattr=manager"),
        entry_rule("niaj", "dnattr=manager"),
        format!("to dn.subtree=\"{PEOPLE}\" by * none"),
    ];
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let s = start_with_access("to", &rules);
    set_rules(&s, "alice", "authzTo", &[format!("dn.subtree:{PEOPLE}")]);
    set_rules(&s, "mallory", "manager", &[user("alice")]);
    set_rules(&s, "niaj", "manager", &[user("alice")]);
    // The uids of the people a search sees, bound as `uid`, acting as `authzid` when given.
    let visible = |uid: &str, authzid: Option<&str>| {
        let mut args = vec!["-LLL".to_string()];
        if let Some(authzid) = authzid {
            args.extend(["-e".into(), format!("!authzid={authzid}")]);
        }
        args.extend(["-b", PEOPLE, "-s", "one", "(objectClass=*)", "1.1"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = s.tool("ldapsearch", &Bind::user(uid), &args, None);
        out.expect_code(0, &format!("{uid} acting as {authzid:?}"));
        let mut uids: Vec<String> = out
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("dn: uid="))
            .filter_map(|l| l.split(',').next())
            .map(str::to_string)
            .collect();
        uids.sort();
        uids
    };
    let bob = format!("dn:{}", user("bob"));
    // alice acting as bob: realdn/realself/realusers see alice, dn/self/users see bob.
    assert_eq!(
        visible("alice", Some(&bob)),
        ["alice", "bob", "carol", "erin", "grace", "heidi", "mallory", "olivia"]
    );
    // alice acting as anonymous: the real forms still see alice.
    assert_eq!(
        visible("alice", Some("dn:")),
        ["alice", "carol", "grace", "judy", "mallory", "olivia"]
    );
    // Without the control the real forms see the bound identity.
    assert_eq!(
        visible("alice", None),
        ["alice", "carol", "dave", "grace", "heidi", "mallory", "niaj", "olivia"]
    );
    assert_eq!(
        visible("bob", None),
        ["bob", "erin", "frank", "grace", "heidi"]
    );
    // A compare runs under the same rules: 6 is compareTrue.
    let compare = |uid: &str| {
        s.tool(
            "ldapcompare",
            &Bind::user("alice"),
            &[
                "-e",
                &format!("!authzid={bob}"),
                &user(uid),
                &format!("uid:{uid}"),
            ],
            None,
        )
        .code
    };
    assert_eq!(compare("carol"), 6, "realdn: the proxy");
    assert_eq!(compare("erin"), 6, "dn: the proxied identity");
    for hidden in ["dave", "frank"] {
        let code = compare(hidden);
        assert!(code != 6 && code != 5, "{hidden}: {code}");
    }
}

/// The `realself` access modifier (`realselfwrite`) compares a value with the identity the operation
/// runs as, as `selfwrite` does: slapd 2.5 keeps no separate check for it.
#[test]
fn realself_modifier_compares_the_proxied_identity() {
    let group = "cn=proj,ou=groups,dc=example,dc=com";
    let rules = [
        "to attrs=userPassword,authzTo by * auth".to_string(),
        format!("to dn.base=\"{group}\" attrs=member by users realselfwrite by * read"),
        "to * by * read".to_string(),
    ];
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let s = start_with_access("to", &rules);
    set_rules(&s, "alice", "authzTo", &[format!("dn.subtree:{PEOPLE}")]);
    s.add(
        &Bind::Root,
        &format!(
            "dn: {group}\nobjectClass: groupOfNames\ncn: proj\nmember: {}\n",
            user_dn("erin")
        ),
    )
    .expect_code(0, "the group");
    let add = |uid: &str| {
        format!(
            "dn: {group}\nchangetype: modify\nadd: member\nmember: {}\n",
            user_dn(uid)
        )
    };
    let as_bob = format!("!authzid=dn:{}", user_dn("bob"));
    let proxied = |uid: &str| {
        s.tool(
            "ldapmodify",
            &Bind::user("alice"),
            &["-e", &as_bob],
            Some(&add(uid)),
        )
    };
    assert_eq!(proxied("alice").code, 50, "the proxy's own DN");
    assert_eq!(proxied("dave").code, 50, "another DN");
    proxied("bob").expect_code(0, "the proxied identity's DN");
    s.modify(&Bind::user("alice"), &add("alice"))
        .expect_code(0, "alice adding herself without the control");
}
