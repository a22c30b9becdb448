//! Secrets stay secret: passwords, their hashes, SCRAM secrets and the TLS private key never show up in the
//! server's log (at trace level, with the access log), or in the texts of results, whatever operation carries them (canopy only:
//! the log is canopy's).

use canopy_e2e::*;
use std::process::Command;

/// Every password this test sends; none may appear anywhere but in the requests.
const ADD: &str = "Marker-Add-7f3a91";
const WRONG: &str = "Marker-Wrong-1c2d84";
const NEW: &str = "Marker-New-9e8f27";
const FILTER: &str = "Marker-Filter-5b6c03";
const COMPARE: &str = "Marker-Compare-2a3b55";
const SCRAM_WRONG: &str = "Marker-Scram-4d4e66";
const PLAIN_WRONG: &str = "Marker-Plain-8a8b77";
const MARKERS: [&str; 7] = [ADD, WRONG, NEW, FILTER, COMPARE, SCRAM_WRONG, PLAIN_WRONG];

fn assert_clean(what: &str, text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{what} contains the secret {secret:?}:\n{text}"
        );
    }
}

fn whoami_sasl(url: &str, mech: &str, user: &str, pw: &str) -> Out {
    let mut cmd = Command::new("ldapwhoami");
    cmd.args(["-H", url, "-Q", "-Y", mech, "-U", user, "-w", pw]);
    client::run(cmd, None)
}

/// Values of `attr` of `dn` as the root DN reads them (LDIF values, base64 ones included as written).
fn root_values(s: &Server, dn: &str, attr: &str) -> Vec<String> {
    let out = s.read(&Bind::Root, dn, &[attr]);
    out.expect_code(0, "reading as root");
    out.stdout
        .lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(": ")?;
            let name = name.trim_end_matches(':');
            name.eq_ignore_ascii_case(attr)
                .then(|| value.trim().to_string())
        })
        .filter(|v| v.len() >= 16)
        .collect()
}

#[test]
fn secrets_never_reach_logs_or_results() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: this test reads canopy's own log");
        return;
    }
    // Trace level: everything any module of the server logs, and the access log beside it.
    let s = Server::start_canopy_logging("access_log = \"stderr\"\n", "trace");
    let dn = user_dn("sec");
    let mut outputs: Vec<(String, Out)> = Vec::new();

    let add = format!(
        "dn: {dn}\nobjectClass: inetOrgPerson\nuid: sec\ncn: Sec Ret\nsn: Ret\nuserPassword: {ADD}\n"
    );
    let out = s.add(&Bind::Root, &add);
    out.expect_code(0, "adding a user with a cleartext password");
    outputs.push(("add".into(), out));

    let out = s.whoami(Via::Ldap, &Bind::Simple(dn.clone(), WRONG.into()));
    assert_eq!(out.code, 49, "wrong password: {}", out.stderr);
    outputs.push(("wrong bind".into(), out));
    let out = s.whoami(Via::Ldap, &Bind::Simple(dn.clone(), ADD.into()));
    out.expect_code(0, "bind with the added password");
    outputs.push(("bind".into(), out));

    let out = s.tool("ldappasswd", &Bind::Root, &["-s", NEW, &dn], None);
    out.expect_code(0, "ldappasswd");
    outputs.push(("ldappasswd".into(), out));

    // An unindexed search is logged with its filter.
    let filter = format!("(|(userPassword={FILTER})(userPassword={FILTER}*)(description=x))");
    let out = s.search(&Bind::Root, &["-b", SUFFIX, &filter, "1.1"]);
    out.expect_code(0, "search on userPassword");
    outputs.push(("search".into(), out));

    let out = s.tool(
        "ldapcompare",
        &Bind::user("alice"),
        &[&dn, &format!("userPassword:{COMPARE}")],
        None,
    );
    assert_ne!(out.code, 6, "compare must not succeed: {}", out.stdout);
    outputs.push(("compare".into(), out));

    let out = whoami_sasl(&s.ldap_url(), "SCRAM-SHA-256", "sec", SCRAM_WRONG);
    assert_eq!(out.code, 49, "SCRAM with a wrong password: {}", out.stderr);
    outputs.push(("scram".into(), out));
    let out = whoami_sasl(&s.ldapi_url(), "PLAIN", "sec", PLAIN_WRONG);
    assert_eq!(out.code, 49, "PLAIN with a wrong password: {}", out.stderr);
    outputs.push(("plain".into(), out));
    whoami_sasl(&s.ldap_url(), "SCRAM-SHA-512", "sec", NEW)
        .expect_code(0, "SCRAM with the new password");

    // What others read of the entry.
    for bind in [Bind::Anonymous, Bind::user("alice")] {
        let out = s.read(&bind, &dn, &["*", "+", "userPassword", "authPassword"]);
        out.expect_code(0, "reading the entry");
        assert!(
            !out.stdout.to_ascii_lowercase().contains("password"),
            "password attributes shown to {bind:?}:\n{}",
            out.stdout
        );
        outputs.push(("read".into(), out));
    }

    // The stored forms, as only the root DN reads them, are secrets too.
    let mut secrets: Vec<String> = MARKERS.iter().map(|m| m.to_string()).collect();
    let stored = root_values(&s, &dn, "userPassword");
    assert!(!stored.is_empty(), "the root DN reads the stored hash");
    secrets.extend(stored);
    secrets.extend(root_values(&s, &dn, "authPassword"));
    // The private key of the generated TLS certificate.
    let key = std::fs::read_to_string(s.data_dir().join("tls").join("key.pem"))
        .expect("the self-signed key exists after a first start");
    secrets.extend(
        key.lines()
            .filter(|l| !l.starts_with("-----") && l.len() >= 16)
            .map(str::to_string),
    );

    for (what, out) in &outputs {
        assert_clean(what, &out.stdout, &secrets);
        assert_clean(what, &out.stderr, &secrets);
    }
    let log = s.log();
    assert!(
        log.contains("unindexed search") && log.contains("<redacted>"),
        "the trace log has the search line, its password values redacted:\n{log}"
    );
    for word in [" BIND ", " SRCH ", " CMP ", " EXT ", " ADD "] {
        assert!(
            log.lines().any(|l| l.contains(" op=") && l.contains(word)),
            "the access log has a{word}line:\n{log}"
        );
    }
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log written to a file"
    );
    assert_clean("the server log", &log, &secrets);
}

/// Even an access list that lets everyone read everything keeps authPassword (the SCRAM secrets) to the root
/// DN, while a user may still change their own password, which rewrites those secrets.
#[test]
fn scram_secrets_stay_hidden_under_open_rules() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: authPassword SCRAM secrets are canopy's");
        return;
    }
    let s = Server::start_with_access(&["to * by self write by * read"]);
    let dn = user_dn("alice");
    s.tool("ldappasswd", &Bind::Root, &["-s", ADD, &dn], None)
        .expect_code(0, "ldappasswd as root");
    assert_eq!(
        root_values(&s, &dn, "authPassword").len(),
        2,
        "SHA-256 and SHA-512 secrets"
    );
    let me = Bind::Simple(dn.clone(), ADD.into());
    for bind in [Bind::Anonymous, Bind::user("bob"), me.clone()] {
        let read = s.read(&bind, &dn, &["*", "authPassword"]);
        read.expect_code(0, "reading the entry");
        assert!(
            read.stdout.contains("userPassword"),
            "the open rules show userPassword to {bind:?}:\n{}",
            read.stdout
        );
        assert!(
            !read.stdout.contains("authPassword"),
            "authPassword shown to {bind:?}:\n{}",
            read.stdout
        );
        let found = s.search(&bind, &["-b", &dn, "-s", "base", "(authPassword=*)", "1.1"]);
        found.expect_code(0, "filtering on authPassword");
        assert!(
            !found.stdout.contains("dn:"),
            "(authPassword=*) matched for {bind:?}"
        );
    }
    // Changing one's own password rewrites the secrets: write access follows userPassword's rules.
    s.tool("ldappasswd", &me, &["-s", NEW], None)
        .expect_code(0, "changing one's own password");
    whoami_sasl(&s.ldap_url(), "SCRAM-SHA-256", "alice", NEW)
        .expect_code(0, "SCRAM with the new password");
}
