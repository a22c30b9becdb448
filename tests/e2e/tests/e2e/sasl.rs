//! SASL PLAIN and SCRAM-SHA-256/512 with ldapwhoami and python-ldap, SCRAM secrets kept beside hashed
//! passwords, proxy authorization rules, constant-time failures and back-off (canopy only: slapd's
//! test instance has no SASL user database to compare with).

use canopy_e2e::*;
use std::process::Command;
use std::time::Instant;

fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} needs canopy's SASL user mapping and SCRAM secrets");
        return false;
    }
    true
}

/// `ldapwhoami -Y MECH -U USER -w PW [-X AUTHZ]` over `url`.
fn sasl_whoami(url: &str, mech: &str, user: &str, pw: &str, authz: Option<&str>) -> Out {
    let mut cmd = Command::new("ldapwhoami");
    cmd.args(["-H", url, "-Q", "-Y", mech, "-U", user, "-w", pw]);
    if let Some(authz) = authz {
        cmd.args(["-X", authz]);
    }
    client::run(cmd, None)
}

fn set_password(s: &Server, uid: &str, pw: &str) {
    s.tool("ldappasswd", &Bind::Root, &["-s", pw, &user_dn(uid)], None)
        .expect_code(0, "ldappasswd as root");
}

fn read_root(s: &Server, dn: &str, attr: &str) -> Vec<String> {
    let out = s.read(&Bind::Root, dn, &[attr]);
    out.expect_code(0, "reading as root");
    let prefix = format!("{attr}: ");
    let prefix64 = format!("{attr}:: ");
    out.stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix(&prefix)
                .map(str::to_string)
                .or_else(|| l.strip_prefix(&prefix64).map(|v| format!("b64:{v}")))
        })
        .collect()
}

#[test]
fn root_dse_lists_the_mechanisms() {
    if !canopy_target("the mechanism list") {
        return;
    }
    let s = Server::start();
    let out = s.search(
        &Bind::Anonymous,
        &["-s", "base", "-b", "", "supportedSASLMechanisms"],
    );
    out.expect_code(0, "root DSE");
    for mech in ["EXTERNAL", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        assert!(
            out.stdout
                .contains(&format!("supportedSASLMechanisms: {mech}\n")),
            "{mech} missing: {}",
            out.stdout
        );
    }
}

#[test]
fn plain_on_ldapi_refused_on_tcp() {
    if !canopy_target("SASL PLAIN") {
        return;
    }
    let s = Server::start();
    set_password(&s, "alice", "secret");
    let ldapi = s.ldapi_url();
    let ok = sasl_whoami(&ldapi, "PLAIN", "alice", "secret", None);
    ok.expect_code(0, "PLAIN over ldapi");
    assert_eq!(ok.stdout.trim(), format!("dn:{}", user_dn("alice")));
    sasl_whoami(&ldapi, "PLAIN", "alice", "wrong", None).expect_code(49, "wrong password");
    sasl_whoami(&ldapi, "PLAIN", "nobody", "secret", None).expect_code(49, "unknown user");
    // libldap itself refuses PLAIN on an unprotected link unless told otherwise (`-O none`).
    let mut cmd = Command::new("ldapwhoami");
    cmd.args(["-H", &s.ldap_url(), "-O", "none", "-Q", "-Y", "PLAIN"]);
    cmd.args(["-U", "alice", "-w", "secret"]);
    let out = client::run(cmd, None);
    out.expect_code(
        48,
        "PLAIN over plain TCP is not available (inappropriateAuthentication, as slapd)",
    );
    assert!(out.stderr.contains("protected link"), "{}", out.stderr);
    // An authentication identity is a user name: `dn:` is a form of authorization identities only, so
    // this names no user (slapd answers the same).
    let dn = format!("dn:{}", user_dn("alice"));
    sasl_whoami(&ldapi, "PLAIN", &dn, "secret", None).expect_code(49, "PLAIN with a dn: authcid");
}

#[test]
fn scram_sha_256_and_512_after_ldappasswd() {
    if !canopy_target("SASL SCRAM") {
        return;
    }
    let s = Server::start();
    let url = s.ldap_url();
    // base.ldif holds only hashes: no SCRAM secret, so SCRAM fails until a password is set.
    sasl_whoami(&url, "SCRAM-SHA-256", "alice", "alice-pw", None)
        .expect_code(49, "SCRAM for a user whose password exists only as a hash");
    set_password(&s, "alice", "s3cret pass");
    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let ok = sasl_whoami(&url, mech, "alice", "s3cret pass", None);
        ok.expect_code(0, mech);
        assert_eq!(ok.stdout.trim(), format!("dn:{}", user_dn("alice")));
        sasl_whoami(&url, mech, "alice", "wrong", None).expect_code(49, "wrong password");
        sasl_whoami(&url, mech, "nobody", "wrong", None).expect_code(49, "unknown user");
    }
    let stored = read_root(&s, &user_dn("alice"), "userPassword");
    assert!(
        stored.len() == 1 && stored[0].starts_with("b64:"),
        "{stored:?}"
    );
    let auth = read_root(&s, &user_dn("alice"), "authPassword");
    assert_eq!(auth.len(), 2, "{auth:?}");
    assert!(auth.iter().any(|v| v.starts_with("SCRAM-SHA-256$4096:")));
    assert!(auth.iter().any(|v| v.starts_with("SCRAM-SHA-512$4096:")));
    let py = s.python(
        "sasl_timing.py",
        &["scram", "alice", "s3cret pass", "SCRAM-SHA-256"],
    );
    py.expect_code(0, "python-ldap SCRAM-SHA-256");
    assert_eq!(py.stdout.trim(), format!("dn:{}", user_dn("alice")));
}

#[test]
fn add_with_cleartext_stores_argon2_and_scram() {
    if !canopy_target("password storage") {
        return;
    }
    let s = Server::start();
    let dn = "uid=zed,ou=people,dc=example,dc=com";
    let ldif = format!(
        "dn: {dn}\nobjectClass: inetOrgPerson\nuid: zed\ncn: Zed\nsn: Zed\nuserPassword: zed-secret\n"
    );
    s.add(&Bind::Root, &ldif)
        .expect_code(0, "add with cleartext");
    let out = s.search(
        &Bind::Root,
        &["-b", dn, "-s", "base", "-o", "ldif-wrap=no", "userPassword"],
    );
    out.expect_code(0, "read");
    let value = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("userPassword:: "))
        .expect("userPassword value");
    let decoded = String::from_utf8(base64_decode(value)).unwrap();
    assert!(
        decoded.starts_with("{ARGON2}$argon2id$v=19$m=19456,t=2,p=1$"),
        "{decoded}"
    );
    s.whoami(Via::Ldap, &Bind::Simple(dn.into(), "zed-secret".into()))
        .expect_code(0, "simple bind against the argon2 hash");
    sasl_whoami(&s.ldap_url(), "SCRAM-SHA-512", "zed", "zed-secret", None)
        .expect_code(0, "SCRAM after an add");
    // authPassword: root only; not anonymous, not other users, not the entry itself.
    assert_eq!(read_root(&s, dn, "authPassword").len(), 2);
    for who in [
        Bind::Anonymous,
        Bind::user("bob"),
        Bind::Simple(dn.into(), "zed-secret".into()),
    ] {
        let seen = s.search(&who, &["-b", dn, "-s", "base", "*", "authPassword"]);
        seen.expect_code(0, "read as non-root");
        assert!(
            !seen.stdout.contains("authPassword"),
            "{who:?}: {}",
            seen.stdout
        );
        let filtered = s.search(&who, &["-b", dn, "(authPassword=*)", "1.1"]);
        assert!(
            !filtered.stdout.contains("dn:"),
            "{who:?} filtered: {}",
            filtered.stdout
        );
    }
    // Deleting the cleartext value deletes its hash and SCRAM secrets.
    let del =
        format!("dn: {dn}\nchangetype: modify\ndelete: userPassword\nuserPassword: zed-secret\n");
    s.modify(&Bind::Root, &del)
        .expect_code(0, "delete by cleartext");
    assert!(read_root(&s, dn, "userPassword").is_empty());
    assert!(read_root(&s, dn, "authPassword").is_empty());
    s.whoami(Via::Ldap, &Bind::Simple(dn.into(), "zed-secret".into()))
        .expect_code(49, "bind after deletion");
}

fn base64_decode(text: &str) -> Vec<u8> {
    let out = Command::new("base64")
        .arg("-d")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .expect("base64");
    out.stdout
}

#[test]
fn proxy_authorization_needs_a_rule() {
    if !canopy_target("SASL proxy rules") {
        return;
    }
    let s = Server::start();
    set_password(&s, "alice", "secret");
    let url = s.ldap_url();
    sasl_whoami(&url, "SCRAM-SHA-256", "alice", "secret", Some("u:bob"))
        .expect_code(50, "proxy without a rule");
    sasl_whoami(&s.ldapi_url(), "PLAIN", "alice", "secret", Some("u:bob"))
        .expect_code(50, "PLAIN proxy without a rule");
    let config = "[[sasl.proxy]]\nfrom = \"dn:uid=alice,ou=people,dc=example,dc=com\"\n\
                  to = \"subtree:ou=people,dc=example,dc=com\"\n";
    let s = Server::start_canopy_with_config(config);
    set_password(&s, "alice", "secret");
    let ok = sasl_whoami(
        &s.ldap_url(),
        "SCRAM-SHA-256",
        "alice",
        "secret",
        Some("u:bob"),
    );
    ok.expect_code(0, "proxy allowed by a rule");
    assert_eq!(ok.stdout.trim(), format!("dn:{}", user_dn("bob")));
    sasl_whoami(
        &s.ldap_url(),
        "SCRAM-SHA-256",
        "alice",
        "secret",
        Some(&format!("dn:{ROOT_DN}")),
    )
    .expect_code(50, "proxy outside the rule");
}

#[test]
fn authz_regexp_maps_names() {
    if !canopy_target("authz_regexp") {
        return;
    }
    let config =
        "[[sasl.authz_regexp]]\nmatch = \"uid=([^,]*)@example\\\\.com,cn=[^,]*,cn=auth\"\n\
                  replace = \"ldap:///ou=people,dc=example,dc=com??sub?(uid=$1)\"\n";
    let s = Server::start_canopy_with_config(config);
    set_password(&s, "alice", "secret");
    let ok = sasl_whoami(
        &s.ldap_url(),
        "SCRAM-SHA-256",
        "alice@example.com",
        "secret",
        None,
    );
    ok.expect_code(0, "mapped by a rule");
    assert_eq!(ok.stdout.trim(), format!("dn:{}", user_dn("alice")));
}

#[test]
fn rehash_on_bind_upgrades_old_hashes() {
    if !canopy_target("rehash_on_bind") {
        return;
    }
    let s = Server::start_canopy_with_config("[passwords]\nrehash_on_bind = true\n");
    s.whoami(Via::Ldap, &Bind::user("alice"))
        .expect_code(0, "bind against the {SSHA} value");
    let stored = read_root(&s, &user_dn("alice"), "userPassword");
    let decoded = String::from_utf8(base64_decode(stored[0].trim_start_matches("b64:"))).unwrap();
    assert!(decoded.starts_with("{ARGON2}"), "{decoded}");
    sasl_whoami(&s.ldap_url(), "SCRAM-SHA-256", "alice", "alice-pw", None)
        .expect_code(0, "SCRAM after the rehash");
}

#[test]
fn unknown_user_costs_as_much_as_a_wrong_password() {
    if !canopy_target("bind timing") {
        return;
    }
    let s = Server::start_canopy_with_config("[bind_backoff]\nthreshold = 0\n");
    set_password(&s, "alice", "secret");
    let out = s.python(
        "sasl_timing.py",
        &[
            "medians",
            "31",
            &user_dn("alice"),
            "wrong",
            &user_dn("nobody-here"),
            "wrong",
        ],
    );
    out.expect_code(0, "timing script");
    let medians: Vec<f64> = out
        .stdout
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let (wrong, unknown) = (medians[0], medians[1]);
    println!("median failed bind: wrong password {wrong:.4}s, unknown DN {unknown:.4}s");
    assert!(wrong > 0.003, "an argon2 check takes milliseconds: {wrong}");
    // Without the dummy hash an unknown DN answers in well under a millisecond (ratio ~0.01); the
    // wide band only absorbs the noise of a loaded machine running other tests at once.
    let ratio = unknown / wrong;
    assert!(
        (0.5..2.0).contains(&ratio),
        "unknown user {unknown:.4}s vs wrong password {wrong:.4}s"
    );
}

#[test]
fn failed_binds_back_off() {
    if !canopy_target("bind back-off") {
        return;
    }
    let config =
        "[bind_backoff]\nthreshold = 3\nwindow_secs = 60\ninitial_ms = 400\nmax_ms = 800\n";
    let s = Server::start_canopy_with_config(config);
    let out = s.python("sasl_timing.py", &["series", "6", &user_dn("bob"), "wrong"]);
    out.expect_code(0, "timing script");
    let times: Vec<f64> = out.stdout.lines().map(|v| v.parse().unwrap()).collect();
    assert!(times[..3].iter().all(|t| *t < 0.35), "{times:?}");
    assert!(
        times[3] >= 0.4 && times[4] >= 0.8 && times[5] >= 0.8,
        "{times:?}"
    );
    assert!(times[5] < 1.5, "capped at max_ms: {times:?}");
    // A SCRAM failure for the same address is delayed too.
    let start = Instant::now();
    sasl_whoami(&s.ldap_url(), "SCRAM-SHA-256", "bob", "wrong", None).expect_code(49, "SCRAM");
    assert!(start.elapsed().as_secs_f64() >= 0.8);
}

#[test]
fn scram_exchange_by_hand() {
    if !canopy_target("SCRAM message handling") {
        return;
    }
    let s = Server::start();
    let out = s.python("sasl_raw.py", &[]);
    out.expect_code(0, "sasl_raw.py");
    let want = "in progress: 14\n\
                same mock salt twice: True\n\
                other name, other salt: True\n\
                search during exchange: 1\n\
                final message after the abort: 49\n\
                p= flag: 48\n\
                y flag: 14\n\
                first message again: 49\n\
                other mechanism: 7\n\
                unknown mechanism: 7\n";
    assert_eq!(out.stdout, want, "{}", out.stderr);
}

#[test]
fn external_proxy_follows_the_rules() {
    if !canopy_target("SASL proxy rules") {
        return;
    }
    let whoami = |s: &Server| {
        let mut cmd = Command::new("ldapwhoami");
        cmd.args(["-H", &s.ldapi_url(), "-Q", "-Y", "EXTERNAL", "-X", "u:bob"]);
        client::run(cmd, None)
    };
    let s = Server::start();
    whoami(&s).expect_code(50, "EXTERNAL proxy without a rule");
    let config = "[[sasl.proxy]]\nfrom = \"subtree:cn=peercred,cn=external,cn=auth\"\n\
                  to = \"dn:uid=bob,ou=people,dc=example,dc=com\"\n";
    let s = Server::start_canopy_with_config(config);
    let ok = whoami(&s);
    ok.expect_code(0, "EXTERNAL proxy allowed by a rule");
    assert_eq!(ok.stdout.trim(), format!("dn:{}", user_dn("bob")));
}

/// EXTERNAL identities go through the authz-regexp rules too, as every SASL identity does in slapd
/// (OpenLDAP's test068 maps a certificate subject to an entry by its mail): ldapi peer credentials
/// mapped to an entry bind as that entry (its normalized DN), a rule whose search finds nothing leaves
/// the identity as it was, and a peer no rule matches keeps its own DN.
#[test]
fn authz_regexp_maps_external_identities() {
    if !canopy_target("authz_regexp") {
        return;
    }
    let uid = process_uid();
    let config = format!(
        "[[sasl.authz_regexp]]\nmatch = \"gidNumber=[0-9]+\\\\+uidNumber={uid},cn=peercred,cn=external,cn=auth\"\n\
         replace = \"ldap:///ou=people,dc=example,dc=com??sub?(uid=alice)\"\n"
    );
    let s = Server::start_canopy_with_config(&config);
    let out = s.whoami(Via::Ldapi, &Bind::External);
    out.expect_code(0, "EXTERNAL over ldapi");
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));
    // Mapped to a search that finds nothing: the peer credentials stay the identity.
    let config = format!(
        "[[sasl.authz_regexp]]\nmatch = \"gidNumber=[0-9]+\\\\+uidNumber={uid},cn=peercred,cn=external,cn=auth\"\n\
         replace = \"ldap:///ou=people,dc=example,dc=com??sub?(uid=nobody-at-all)\"\n"
    );
    let s = Server::start_canopy_with_config(&config);
    let out = s.whoami(Via::Ldapi, &Bind::External);
    out.expect_code(0, "EXTERNAL over ldapi, not mapped");
    assert!(
        out.stdout
            .contains(&format!("uidNumber={uid},cn=peercred,cn=external,cn=auth")),
        "{}",
        out.stdout
    );
}

/// This process's user ID (the peer credentials the server sees over ldapi).
fn process_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}
