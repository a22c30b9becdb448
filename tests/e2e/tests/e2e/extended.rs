//! Compare (RFC 4511 §4.10) and the extended operations WhoAmI (RFC 4532) and Password Modify
//! (RFC 3062) through ldapcompare, ldapwhoami and ldappasswd.

use canopy_e2e::*;

#[test]
fn compare() {
    let s = Server::start();
    let mut t = Transcript::new("compare");
    let alice = user_dn("alice");
    let jose = user_dn("jose");
    let cases: &[(&str, &Bind, &str, &str)] = &[
        ("true", &Bind::Anonymous, &alice, "cn:Alice Adams"),
        (
            "true, other case",
            &Bind::Anonymous,
            &alice,
            "cn:alice ADAMS",
        ),
        ("false", &Bind::Anonymous, &alice, "cn:Bob"),
        ("integer true", &Bind::Anonymous, &alice, "uidNumber:1001"),
        ("integer false", &Bind::Anonymous, &alice, "uidNumber:1002"),
        (
            "objectClass through a superclass",
            &Bind::Anonymous,
            &alice,
            "objectClass:person",
        ),
        ("UTF-8 value", &Bind::Anonymous, &jose, "cn:josé müller"),
        (
            "attribute absent from the entry",
            &Bind::Anonymous,
            &alice,
            "description:x",
        ),
        (
            "undefined attribute type",
            &Bind::Anonymous,
            &alice,
            "fooBar:x",
        ),
        (
            "missing entry",
            &Bind::Anonymous,
            "uid=nobody,ou=people,dc=example,dc=com",
            "cn:x",
        ),
        (
            "userPassword anonymously",
            &Bind::Anonymous,
            &alice,
            "userPassword:alice-pw",
        ),
        (
            "userPassword as another user",
            &Bind::user("bob"),
            &alice,
            "userPassword:alice-pw",
        ),
        (
            "userPassword as root (hashed value)",
            &Bind::Root,
            &alice,
            "userPassword:alice-pw",
        ),
        (
            // Not a cleartext value: canopy stores cleartext passwords written over LDAP hashed.
            "stored userPassword value as root",
            &Bind::Root,
            &alice,
            "userPassword:{SSHA}izjtVAKbK55kOcBydBsKhyMWznXVpZAs",
        ),
        (
            "DN-valued attribute",
            &Bind::Anonymous,
            "cn=engineering,ou=groups,dc=example,dc=com",
            "member:UID=ALICE,ou=people,dc=example,dc=com",
        ),
    ];
    for (title, bind, dn, ava) in cases {
        let out = s.tool("ldapcompare", bind, &[dn, ava], None);
        t.raw(title, &out);
    }
    t.check();
}

#[test]
fn whoami() {
    let s = Server::start();
    let mut t = Transcript::new("whoami");
    t.raw("anonymous", &s.whoami(Via::Ldap, &Bind::Anonymous));
    t.raw("root", &s.whoami(Via::Ldap, &Bind::Root));
    t.raw("user", &s.whoami(Via::Ldap, &Bind::user("erin")));
    t.raw(
        "user over ldapi",
        &s.whoami(Via::Ldapi, &Bind::user("erin")),
    );
    t.check();
}

/// The stored userPassword of `uid`, read as root.
fn stored_password(s: &Server, uid: &str) -> Vec<String> {
    s.read(&Bind::Root, &user_dn(uid), &["userPassword"])
        .records()[0]
        .values("userPassword")
}

#[test]
fn password_modify() {
    let s = Server::start();
    let mut t = Transcript::new("passwd");
    let passwd = |bind: &Bind, args: &[&str]| s.tool("ldappasswd", bind, args, None);

    t.raw(
        "alice sets her own password (-s)",
        &passwd(&Bind::user("alice"), &["-s", "alice-new"]),
    );
    t.raw(
        "bind with the new password",
        &s.whoami(
            Via::Ldap,
            &Bind::Simple(user_dn("alice"), "alice-new".into()),
        ),
    );
    t.raw(
        "bind with the old password",
        &s.whoami(Via::Ldap, &Bind::user("alice")),
    );
    let stored = stored_password(&s, "alice");
    // The server stores a hash of its choosing (slapd: {SSHA}); never the cleartext.
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(
        stored[0].starts_with('{') && !stored[0].contains("alice-new"),
        "{stored:?}"
    );

    t.raw(
        "root sets bob's password",
        &passwd(&Bind::Root, &["-s", "bob-new", &user_dn("bob")]),
    );
    t.raw(
        "bob binds with it",
        &s.whoami(Via::Ldap, &Bind::Simple(user_dn("bob"), "bob-new".into())),
    );

    let generated = passwd(&Bind::user("carol"), &[]);
    generated.expect_code(0, "ldappasswd without -s (server generates)");
    let new_pw = generated
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("New password: "))
        .unwrap_or_else(|| panic!("no generated password in {:?}", generated.stdout))
        .to_string();
    assert!(!new_pw.is_empty());
    let bind = s.whoami(Via::Ldap, &Bind::Simple(user_dn("carol"), new_pw));
    t.raw("carol binds with the generated password", &bind);

    t.raw(
        "right old password given (-a)",
        &passwd(&Bind::user("dave"), &["-a", "dave-pw", "-s", "dave-new"]),
    );
    t.raw(
        "wrong old password given (-a)",
        &passwd(&Bind::user("erin"), &["-a", "wrong", "-s", "erin-new"]),
    );
    t.raw(
        "erin's password unchanged",
        &s.whoami(Via::Ldap, &Bind::user("erin")),
    );
    t.raw(
        "bob changes alice's password",
        &passwd(
            &Bind::Simple(user_dn("bob"), "bob-new".into()),
            &["-s", "x", &user_dn("alice")],
        ),
    );
    t.raw(
        "anonymous changes alice's password",
        &passwd(&Bind::Anonymous, &["-s", "x", &user_dn("alice")]),
    );
    t.raw(
        "root changes a missing entry's password",
        &passwd(&Bind::Root, &["-s", "x", &user_dn("nobody")]),
    );
    t.raw(
        "root changes its own password",
        &passwd(&Bind::Root, &["-s", "x"]),
    );
    t.raw(
        "alice still binds with hers",
        &s.whoami(
            Via::Ldap,
            &Bind::Simple(user_dn("alice"), "alice-new".into()),
        ),
    );
    t.check();
}
