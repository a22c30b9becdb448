//! Bind (RFC 4511 §4.2, RFC 4513): anonymous, unauthenticated, root, every password scheme of
//! base.ldif, wrong credentials, SASL EXTERNAL over ldapi.

use canopy_e2e::*;
use std::os::unix::fs::MetadataExt;

/// Users of base.ldif by the scheme their userPassword uses.
const USERS_BY_SCHEME: &[(&str, &str)] = &[
    ("{SSHA}", "alice"),
    ("{SHA}", "bob"),
    ("{SSHA256}", "carol"),
    ("{SSHA384}", "dave"),
    ("{SSHA512}", "erin"),
    ("{CRYPT} sha512-crypt", "frank"),
    ("{CRYPT} sha256-crypt", "grace"),
    ("{ARGON2} argon2i", "heidi"),
    ("{ARGON2} argon2id", "ivan"),
    ("{PBKDF2-SHA1}", "judy"),
    ("{PBKDF2-SHA256}", "mallory"),
    ("{PBKDF2-SHA512}", "niaj"),
    ("cleartext", "olivia"),
    ("{SSHA}, UTF-8 entry", "jose"),
];

#[test]
fn simple_binds() {
    let s = Server::start();
    let mut t = Transcript::new("bind_simple");
    t.raw("anonymous", &s.whoami(Via::Ldap, &Bind::Anonymous));
    t.raw("root DN", &s.whoami(Via::Ldap, &Bind::Root));
    for (scheme, uid) in USERS_BY_SCHEME {
        let out = s.whoami(Via::Ldap, &Bind::user(uid));
        t.raw(&format!("{uid} by {scheme}"), &out);
    }
    let smith = Bind::Simple(
        format!("cn=Smith\\, John,ou=people,{SUFFIX}"),
        "jsmith-pw".into(),
    );
    t.raw("escaped DN, cleartext", &s.whoami(Via::Ldap, &smith));
    let upper = Bind::Simple(format!("UID=Alice,OU=People,{SUFFIX}"), "alice-pw".into());
    t.raw("DN in other case", &s.whoami(Via::Ldap, &upper));
    t.check();
}

#[test]
fn refused_binds() {
    let s = Server::start();
    let mut t = Transcript::new("bind_refused");
    let cases = [
        (
            "unauthenticated (DN, empty password)",
            Bind::Simple(user_dn("alice"), String::new()),
        ),
        (
            "wrong password",
            Bind::Simple(user_dn("alice"), "bob-pw".into()),
        ),
        (
            "wrong password for a hash scheme",
            Bind::Simple(user_dn("frank"), "x".into()),
        ),
        (
            "wrong root password",
            Bind::Simple(ROOT_DN.into(), "not-secret".into()),
        ),
        ("no such entry", Bind::Simple(user_dn("nobody"), "x".into())),
        (
            "entry without userPassword",
            Bind::Simple(user_dn("nopass"), "x".into()),
        ),
        (
            "password hash itself",
            Bind::Simple(user_dn("bob"), "{SHA}bOWgjgJew8XNjPXTyFghAc+ha1M=".into()),
        ),
        (
            "entry outside the suffix",
            Bind::Simple("cn=x,o=elsewhere".into(), "x".into()),
        ),
    ];
    for (title, bind) in &cases {
        t.raw(title, &s.whoami(Via::Ldap, bind));
    }
    t.check();
}

#[test]
fn binds_over_ldapi() {
    let s = Server::start();
    let out = s.whoami(Via::Ldapi, &Bind::External);
    out.expect_code(0, "ldapwhoami -Y EXTERNAL over ldapi");
    // The peer credentials are this process's effective uid/gid, which are those of files it makes.
    let probe = s.dir().join("uid-probe");
    std::fs::write(&probe, b"").unwrap();
    let meta = std::fs::metadata(&probe).unwrap();
    let want = format!(
        "dn:gidNumber={}+uidNumber={},cn=peercred,cn=external,cn=auth",
        meta.gid(),
        meta.uid()
    );
    assert_eq!(out.stdout.trim(), want);

    let mut t = Transcript::new("bind_ldapi");
    t.raw(
        "simple bind as root over ldapi",
        &s.whoami(Via::Ldapi, &Bind::Root),
    );
    t.raw(
        "simple bind as alice over ldapi",
        &s.whoami(Via::Ldapi, &Bind::user("alice")),
    );
    t.raw(
        "anonymous over ldapi",
        &s.whoami(Via::Ldapi, &Bind::Anonymous),
    );
    // EXTERNAL identity can read what any authenticated user can.
    let read = s.tool(
        "ldapsearch",
        &Bind::External,
        &[
            "-LLL",
            "-b",
            &user_dn("alice"),
            "-s",
            "base",
            "(objectClass=*)",
            "uid",
            "userPassword",
        ],
        None,
    );
    t.section("search as the EXTERNAL identity", &read);
    t.check();
}

#[test]
fn external_refused_over_tcp() {
    let s = Server::start();
    let out = s.tool_via(Via::Ldap, "ldapwhoami", &Bind::External, &[], None);
    assert_ne!(
        out.code, 0,
        "SASL EXTERNAL over TCP without TLS must fail: {out:?}"
    );
}
