//! The live configuration tree, cn=config (docs/configuration.md, docs/design/config-tree.md): its
//! shape and who may read it, each kind of live change made with ldapmodify and seen by another
//! client at once, invalid values refused with the running configuration untouched, changes kept
//! across a restart and across kill -9 in the middle of a stream of changes. The same LDIF runs
//! against Debian's slapd started from a slapd.d; the lock-out check and the refusal of changes
//! Canopy cannot make live are Canopy's own (docs/compatibility.md) and skipped for slapd.

use canopy_e2e::*;

const FRONTEND: &str = "olcDatabase={-1}frontend,cn=config";
const CONFIG_DB: &str = "olcDatabase={0}config,cn=config";
const MDB1: &str = "olcDatabase={1}mdb,cn=config";
const PEOPLE: &str = "ou=people,dc=example,dc=com";

fn admin() -> Bind {
    Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into())
}

/// Applies `ldif` (an ldapmodify change record) as the config root DN.
fn change(s: &Server, ldif: &str) -> Out {
    s.modify(&admin(), ldif)
}

/// The values of `attr` in `dn` as the config root DN reads them.
fn values(s: &Server, dn: &str, attr: &str) -> Vec<String> {
    let out = s.read(&admin(), dn, &[attr]);
    out.expect_code(0, &format!("read {attr} of {dn}"));
    let prefix = format!("{}: ", attr.to_ascii_lowercase());
    out.stdout
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with(&prefix))
        .map(|l| l[prefix.len()..].to_string())
        .collect()
}

/// How many entries an anonymous subtree search of `base` for `filter` returns (another client, a new
/// connection each time).
fn anonymous_count(s: &Server, base: &str, filter: &str) -> usize {
    let out = s.search(&Bind::Anonymous, &["-b", base, filter, "1.1"]);
    out.stdout.lines().filter(|l| l.starts_with("dn:")).count()
}

/// Waits (at most 30 s) until cn=Monitor says the build of the index `what` ("attr kinds") is complete.
fn wait_for_index(s: &Server, what: &str) {
    let attr = what.split(' ').next().unwrap_or(what);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let monitor = s.search(
            &Bind::External,
            &[
                "-b",
                "cn=Databases,cn=Monitor",
                &format!("(description=index {attr}*)"),
                "description",
            ],
        );
        if monitor.stdout.contains(&format!("index {what}: complete")) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the build of {what} did not complete in 30 s:\n{}",
            monitor.stdout
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn canopy_only(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} is Canopy's own (docs/compatibility.md)");
        return false;
    }
    true
}

#[test]
fn tree_shape_root_dse_and_who_may_read_it() {
    let s = Server::start_with_config_tree();
    let out = s.search(&admin(), &["-b", "cn=config", "(objectClass=*)", "1.1"]);
    out.expect_code(0, "the config root DN reads cn=config");
    for dn in [
        "cn=config",
        "cn=schema,cn=config",
        FRONTEND,
        CONFIG_DB,
        MDB1,
    ] {
        assert!(
            out.stdout.contains(&format!("dn: {dn}\n")),
            "{dn} missing:\n{}",
            out.stdout
        );
    }
    assert_eq!(values(&s, MDB1, "olcSuffix"), [SUFFIX]);
    assert_eq!(values(&s, MDB1, "olcRootDN"), [ROOT_DN]);
    assert_eq!(values(&s, CONFIG_DB, "olcRootDN"), [CONFIG_ROOT_DN]);
    let dse = s.read(&Bind::Anonymous, "", &["configContext"]);
    assert!(
        dse.stdout.contains("configContext: cn=config"),
        "{}",
        dse.stdout
    );
    // Nobody else sees it: anonymous, an ordinary user, even the data root DN.
    for who in [Bind::Anonymous, Bind::user("alice"), Bind::Root] {
        let out = s.read(&who, "cn=config", &[]);
        assert_eq!(out.code, 32, "{who:?} reads cn=config: {}", out.stdout);
    }
    // Root over ldapi does (SASL EXTERNAL), as in Debian's slapd.
    let out = s.read(&Bind::External, "cn=config", &["1.1"]);
    out.expect_code(0, "ldapi root reads cn=config");
    assert!(out.stdout.contains("dn: cn=config"), "{}", out.stdout);
}

#[test]
fn access_rules_change_live_with_positions() {
    let s = Server::start_with_config_tree();
    let before = values(&s, MDB1, "olcAccess").len();
    assert_eq!(anonymous_count(&s, PEOPLE, "(uid=alice)"), 1);
    change(
        &s,
        &format!(
            "dn: {MDB1}\nchangetype: modify\nadd: olcAccess\n\
             olcAccess: {{0}}to dn.subtree=\"{PEOPLE}\" by * none\n"
        ),
    )
    .expect_code(0, "insert a rule at {0}");
    let rules = values(&s, MDB1, "olcAccess");
    assert_eq!(rules.len(), before + 1);
    assert_eq!(
        rules[0],
        format!("{{0}}to dn.subtree=\"{PEOPLE}\" by * none")
    );
    // Every later rule moved down one place.
    for (i, rule) in rules.iter().enumerate() {
        assert!(rule.starts_with(&format!("{{{i}}}")), "{rules:?}");
    }
    assert_eq!(anonymous_count(&s, SUFFIX, "(uid=alice)"), 0);
    // Users may still read the rest.
    assert_eq!(anonymous_count(&s, SUFFIX, "(ou=groups)"), 1);
    change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\ndelete: olcAccess\nolcAccess: {{0}}\n"),
    )
    .expect_code(0, "delete the rule at {0}");
    assert_eq!(values(&s, MDB1, "olcAccess").len(), before);
    assert_eq!(anonymous_count(&s, SUFFIX, "(uid=alice)"), 1);
}

#[test]
fn limits_read_only_and_root_password_change_live() {
    let s = Server::start_with_config_tree();
    assert!(anonymous_count(&s, SUFFIX, "(objectClass=*)") > 3);
    change(
        &s,
        &format!("dn: {FRONTEND}\nchangetype: modify\nreplace: olcSizeLimit\nolcSizeLimit: 3\n"),
    )
    .expect_code(0, "olcSizeLimit");
    let out = s.search(&Bind::Anonymous, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    assert_eq!(
        out.code, 4,
        "the new size limit applies at once: {}",
        out.stdout
    );
    change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\nreplace: olcReadOnly\nolcReadOnly: TRUE\n"),
    )
    .expect_code(0, "olcReadOnly");
    let add = format!("dn: cn=new,{SUFFIX}\nobjectClass: person\ncn: new\nsn: new\n");
    assert_eq!(
        s.add(&Bind::Root, &add).code,
        53,
        "read-only refuses writes"
    );
    change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\nreplace: olcReadOnly\nolcReadOnly: FALSE\n"),
    )
    .expect_code(0, "olcReadOnly back");
    s.add(&Bind::Root, &add).expect_code(0, "writable again");
    change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\nreplace: olcRootPW\nolcRootPW: new-root-pw\n"),
    )
    .expect_code(0, "olcRootPW");
    let new_root = Bind::Simple(ROOT_DN.into(), "new-root-pw".into());
    s.whoami(Via::Ldap, &new_root)
        .expect_code(0, "the new root password binds");
    assert_eq!(
        s.whoami(Via::Ldap, &Bind::Root).code,
        49,
        "the old root password no longer binds"
    );
}

#[test]
fn invalid_values_are_refused_and_change_nothing() {
    let s = Server::start_with_config_tree();
    let access = values(&s, MDB1, "olcAccess");
    let size = values(&s, FRONTEND, "olcSizeLimit");
    let cases = [
        (
            FRONTEND,
            "replace: olcSizeLimit\nolcSizeLimit: lots",
            80,
            "olcSizeLimit",
        ),
        (
            FRONTEND,
            "replace: olcPasswordHash\nolcPasswordHash: {BOGUS}",
            80,
            "olcPasswordHash",
        ),
        (
            MDB1,
            "add: olcAccess\nolcAccess: to * by nobody read",
            80,
            "olcAccess",
        ),
        (
            MDB1,
            "replace: olcReadOnly\nolcReadOnly: maybe",
            21,
            "olcReadOnly",
        ),
        (
            MDB1,
            "replace: olcRootDN\nolcRootDN: not a dn",
            21,
            "olcRootDN",
        ),
    ];
    for (dn, body, code, attr) in cases {
        let out = change(&s, &format!("dn: {dn}\nchangetype: modify\n{body}\n"));
        assert_eq!(out.code, code, "{body}: {}", out.stderr);
        assert!(out.stderr.contains(attr), "{body}: {}", out.stderr);
    }
    assert_eq!(values(&s, MDB1, "olcAccess"), access);
    assert_eq!(values(&s, FRONTEND, "olcSizeLimit"), size);
    assert_eq!(values(&s, MDB1, "olcReadOnly"), ["FALSE"]);
    // The running configuration is untouched too.
    assert_eq!(anonymous_count(&s, SUFFIX, "(uid=alice)"), 1);
    s.whoami(Via::Ldap, &Bind::Root)
        .expect_code(0, "root still binds");
}

#[test]
fn only_the_config_administrators_may_change_it() {
    let s = Server::start_with_config_tree();
    let body =
        format!("dn: {FRONTEND}\nchangetype: modify\nreplace: olcSizeLimit\nolcSizeLimit: 5\n");
    for who in [Bind::user("alice"), Bind::Root] {
        let out = s.modify(&who, &body);
        assert_eq!(out.code, 50, "{who:?}: {}", out.stderr);
    }
    assert_eq!(s.modify(&Bind::Anonymous, &body).code, 8);
    // Root over ldapi manages it.
    s.modify(&Bind::External, &body)
        .expect_code(0, "ldapi root changes cn=config");
    assert_eq!(values(&s, FRONTEND, "olcSizeLimit"), ["5"]);
}

#[test]
fn lock_out_is_refused() {
    if !canopy_only("the lock-out check") {
        return;
    }
    let s = Server::start_with_config_tree();
    let out = change(
        &s,
        &format!(
            "dn: {CONFIG_DB}\nchangetype: modify\nreplace: olcAccess\nolcAccess: to * by * read\n\
             -\ndelete: olcRootPW\n"
        ),
    );
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(
        out.stderr.contains("no identity able to modify"),
        "{}",
        out.stderr
    );
    // Either half alone leaves someone in charge.
    change(
        &s,
        &format!(
            "dn: {CONFIG_DB}\nchangetype: modify\nreplace: olcAccess\nolcAccess: to * by * read\n"
        ),
    )
    .expect_code(0, "rules without write, root DN kept");
    assert_eq!(s.read(&Bind::user("alice"), "cn=config", &["1.1"]).code, 0);
    let out = change(
        &s,
        &format!("dn: {CONFIG_DB}\nchangetype: modify\ndelete: olcRootPW\n"),
    );
    assert_eq!(out.code, 53, "{}", out.stderr);
    s.whoami(Via::Ldap, &admin())
        .expect_code(0, "the config root still binds");
}

#[test]
fn the_lock_out_check_runs_the_access_rules() {
    if !canopy_only("the lock-out check") {
        return;
    }
    let s = Server::start_with_config_tree();
    let without_root_password = |rules: &[&str]| {
        let rules: String = rules.iter().map(|r| format!("olcAccess: {r}\n")).collect();
        change(
            &s,
            &format!(
                "dn: {CONFIG_DB}\nchangetype: modify\nreplace: olcAccess\n{rules}-\ndelete: olcRootPW\n"
            ),
        )
    };
    let ldapi_root = "gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth";
    // A rule that grants write, but after one that stops every request first: nobody.
    let out = without_root_password(&[
        "to * by * none",
        &format!("to * by dn.exact=\"{ldapi_root}\" manage"),
    ]);
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(
        out.stderr.contains("no identity able to modify"),
        "{}",
        out.stderr
    );
    // Write granted to a DN nobody can bind as: nobody.
    let out =
        without_root_password(&["to * by dn.exact=\"cn=ghost,dc=example,dc=com\" write by * none"]);
    assert_eq!(out.code, 53, "{}", out.stderr);
    // Write only over TLS for root over ldapi (ssf 71 < 128): nobody.
    let out = without_root_password(&[&format!(
        "to * by dn.exact=\"{ldapi_root}\" ssf=128 manage by * none"
    )]);
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert_eq!(
        values(&s, CONFIG_DB, "olcRootPW").len(),
        1,
        "nothing changed"
    );
    // Write granted to a user who can bind: accepted, and that user is now in charge.
    let alice = user_dn("alice");
    without_root_password(&[&format!("to * by dn.exact=\"{alice}\" write by * none")])
        .expect_code(0, "a user with a password may administer cn=config");
    s.modify(
        &Bind::user("alice"),
        &format!(
            "dn: {CONFIG_DB}\nchangetype: modify\nadd: olcRootPW\nolcRootPW: {CONFIG_ROOT_PW}\n"
        ),
    )
    .expect_code(0, "alice changes cn=config");
    s.whoami(Via::Ldap, &admin())
        .expect_code(0, "the config root binds again");
}

#[test]
fn changes_canopy_cannot_make_live_are_refused() {
    if !canopy_only("refusing olcSuffix and olcDbDirectory changes") {
        return;
    }
    let s = Server::start_with_config_tree();
    for body in [
        "replace: olcSuffix\nolcSuffix: dc=other",
        "replace: olcDbDirectory\nolcDbDirectory: /tmp/elsewhere",
    ] {
        let attr = body.split(['\n', ':']).nth(1).unwrap().trim().to_string();
        let out = change(&s, &format!("dn: {MDB1}\nchangetype: modify\n{body}\n"));
        assert_eq!(out.code, 53, "{body}: {}", out.stderr);
        assert!(out.stderr.contains(&attr), "{body}: {}", out.stderr);
    }
    assert_eq!(values(&s, MDB1, "olcSuffix"), [SUFFIX]);
}

#[test]
fn changes_survive_a_restart() {
    let mut s = Server::start_with_config_tree();
    change(
        &s,
        &format!(
            "dn: {MDB1}\nchangetype: modify\nadd: olcAccess\n\
             olcAccess: {{0}}to dn.subtree=\"{PEOPLE}\" by * none\n-\n\
             replace: olcReadOnly\nolcReadOnly: TRUE\n\ndn: {FRONTEND}\nchangetype: modify\n\
             replace: olcSizeLimit\nolcSizeLimit: 7\n"
        ),
    )
    .expect_code(0, "changes");
    let access = values(&s, MDB1, "olcAccess");
    s.terminate();
    s.restart();
    assert_eq!(values(&s, MDB1, "olcAccess"), access);
    assert_eq!(values(&s, MDB1, "olcReadOnly"), ["TRUE"]);
    assert_eq!(values(&s, FRONTEND, "olcSizeLimit"), ["7"]);
    assert_eq!(anonymous_count(&s, SUFFIX, "(uid=alice)"), 0);
    let add = format!("dn: cn=new,{SUFFIX}\nobjectClass: person\ncn: new\nsn: new\n");
    assert_eq!(s.add(&Bind::Root, &add).code, 53);
}

#[test]
fn kill_9_during_a_stream_of_changes_keeps_every_acknowledged_one() {
    let mut s = Server::start_with_config_tree();
    let pid = s.pid().expect("running");
    let acknowledged = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|scope| {
        let stream = scope.spawn(|| {
            // Sizes 101, 102, ...: each one acknowledged before the next is sent.
            for size in 101..=400u32 {
                let out = change(
                    &s,
                    &format!(
                        "dn: {FRONTEND}\nchangetype: modify\nreplace: olcSizeLimit\n\
                         olcSizeLimit: {size}\n"
                    ),
                );
                if out.code != 0 {
                    return size;
                }
                acknowledged.store(size, std::sync::atomic::Ordering::SeqCst);
            }
            401
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while acknowledged.load(std::sync::atomic::Ordering::SeqCst) < 110
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill -9");
        let failed_at = stream.join().expect("the stream thread");
        assert!(failed_at <= 400, "the stream ended before the kill");
    });
    let last = acknowledged.load(std::sync::atomic::Ordering::SeqCst);
    assert!(last >= 110, "too few changes before the kill: {last}");
    s.kill9();
    s.restart();
    let size: u32 = values(&s, FRONTEND, "olcSizeLimit")[0].parse().unwrap();
    // The acknowledged change is there; the one in flight at the kill may be too.
    assert!(
        size == last || size == last + 1,
        "after restart olcSizeLimit is {size}, the last acknowledged was {last}"
    );
}

#[test]
fn export_and_check_show_the_live_configuration() {
    if !canopy_only("canopy config export and check") {
        return;
    }
    let s = Server::start_with_config_tree();
    change(
        &s,
        &format!(
            "dn: {FRONTEND}\nchangetype: modify\nreplace: olcSizeLimit\nolcSizeLimit: 42\n\n\
             dn: {MDB1}\nchangetype: modify\nreplace: olcReadOnly\nolcReadOnly: TRUE\n"
        ),
    )
    .expect_code(0, "changes");
    let out = s.canopy_tool("config", &["export"]);
    out.expect_code(0, "canopy config export beside the running server");
    assert!(out.stdout.contains("size_limit = 42"), "{}", out.stdout);
    assert!(out.stdout.contains("read_only = true"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("config_root_dn = \"cn=admin,cn=config\""),
        "{}",
        out.stdout
    );
    // The export is a configuration file that checks clean and matches the live tree.
    let exported = s.dir().join("exported.toml");
    std::fs::write(&exported, &out.stdout).unwrap();
    let path = exported.display().to_string();
    let out = s.canopy_tool("config", &["check", &path]);
    out.expect_code(0, "check the export");
    assert!(
        out.stdout.contains("the same as the live configuration"),
        "{}",
        out.stdout
    );
    // The original file differs in exactly the two live settings.
    let original = s.dir().join("canopy.toml").display().to_string();
    let out = s.canopy_tool("config", &["check", &original]);
    out.expect_code(0, "check the original");
    assert!(
        out.stdout.contains("{-1}frontend,cn=config olcSizeLimit"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("{1}mdb,cn=config olcReadOnly"),
        "{}",
        out.stdout
    );
    let bad = s.dir().join("bad.toml");
    std::fs::write(&bad, "access = [\"to * by nobody read\"]\n").unwrap();
    let out = s.canopy_tool("config", &["check", &bad.display().to_string()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stderr.contains("nobody"), "{}", out.stderr);
}

#[test]
fn indexes_are_added_and_dropped_live() {
    let s = Server::start_with_config_tree();
    let add = |value: &str| {
        change(
            &s,
            &format!("dn: {MDB1}\nchangetype: modify\nadd: olcDbIndex\nolcDbIndex: {value}\n"),
        )
    };
    let out = add("foo eq");
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(out.stderr.contains("\"foo\" undefined"), "{}", out.stderr);
    let out = add("description bogus");
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(out.stderr.contains("\"bogus\" undefined"), "{}", out.stderr);
    assert_eq!(add("sn eq,sub").code, 20, "the same index twice");
    add("description eq").expect_code(0, "add an index");
    assert!(values(&s, MDB1, "olcDbIndex").contains(&"description eq".to_string()));
    // Searches keep answering the same while (and after) it is built.
    let search = || anonymous_count(&s, SUFFIX, "(description=*)");
    let before = search();
    if Target::from_env() == Target::Canopy {
        wait_for_index(&s, "description eq");
    }
    assert_eq!(search(), before);
    change(
        &s,
        &format!(
            "dn: {MDB1}\nchangetype: modify\ndelete: olcDbIndex\nolcDbIndex: description eq\n"
        ),
    )
    .expect_code(0, "drop the index");
    assert!(!values(&s, MDB1, "olcDbIndex").contains(&"description eq".to_string()));
    assert_eq!(search(), before);
    let out = change(
        &s,
        &format!(
            "dn: {MDB1}\nchangetype: modify\ndelete: olcDbIndex\nolcDbIndex: description eq\n"
        ),
    );
    assert_eq!(out.code, 16, "{}", out.stderr);
}

/// A self-signed certificate for 127.0.0.1 made with the openssl CLI in `dir`: (cert, key).
fn server_certificate(dir: &std::path::Path, name: &str) -> (String, String) {
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let mut cmd = std::process::Command::new("openssl");
    cmd.args([
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        &format!("/CN={name}"),
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
    ])
    .arg(&key)
    .arg("-out")
    .arg(&cert);
    client::run(cmd, None).expect_code(0, "openssl req");
    (cert.display().to_string(), key.display().to_string())
}

/// `ldapwhoami -ZZ` (StartTLS required) trusting only `ca`: exit 0 when the server presents it.
fn starttls_trusting(s: &Server, ca: &str) -> i32 {
    let mut cmd = std::process::Command::new("ldapwhoami");
    cmd.args(["-x", "-ZZ", "-H", &s.ldap_url()])
        .env("LDAPTLS_CACERT", ca)
        .env("LDAPTLS_REQCERT", "demand");
    client::run(cmd, None).code
}

#[test]
fn the_tls_certificate_is_swapped_live() {
    let s = Server::start_with_config_tree();
    let (cert, key) = server_certificate(s.dir(), "swapped");
    assert_ne!(starttls_trusting(&s, &cert), 0, "not served yet");
    let out = change(
        &s,
        &format!(
            "dn: cn=config\nchangetype: modify\nreplace: olcTLSCertificateFile\n\
             olcTLSCertificateFile: {cert}\n-\nreplace: olcTLSCertificateKeyFile\n\
             olcTLSCertificateKeyFile: {key}\n"
        ),
    );
    out.expect_code(0, "swap the certificate");
    assert_eq!(
        starttls_trusting(&s, &cert),
        0,
        "the new certificate is served"
    );
    assert_eq!(values(&s, "cn=config", "olcTLSCertificateFile"), [cert]);
}

#[test]
fn a_certificate_that_does_not_load_is_refused() {
    if !canopy_only("checking the certificate before the change is stored") {
        return;
    }
    let s = Server::start_with_config_tree();
    let (cert, _) = server_certificate(s.dir(), "good");
    let bogus = s.dir().join("bogus.key");
    std::fs::write(&bogus, "not a key\n").unwrap();
    let out = change(
        &s,
        &format!(
            "dn: cn=config\nchangetype: modify\nreplace: olcTLSCertificateFile\n\
             olcTLSCertificateFile: {cert}\n-\nreplace: olcTLSCertificateKeyFile\n\
             olcTLSCertificateKeyFile: {}\n",
            bogus.display()
        ),
    );
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(
        out.stderr.contains("olcTLSCertificateFile"),
        "{}",
        out.stderr
    );
    assert!(values(&s, "cn=config", "olcTLSCertificateFile").is_empty());
    let out = change(
        &s,
        &format!(
            "dn: cn=config\nchangetype: modify\nreplace: olcTLSCertificateFile\n\
             olcTLSCertificateFile: {cert}\n"
        ),
    );
    assert_eq!(
        out.code, 80,
        "a certificate without its key: {}",
        out.stderr
    );
}

#[test]
fn a_database_is_added_live_and_kept() {
    let mut s = Server::start_with_config_tree();
    let directory = s.dir().join("live-db");
    std::fs::create_dir_all(&directory).unwrap();
    let add = format!(
        "dn: olcDatabase={{2}}mdb,cn=config\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
         olcDatabase: {{2}}mdb\nolcSuffix: dc=live,dc=org\nolcDbDirectory: {}\n\
         olcRootDN: cn=boss,dc=live,dc=org\nolcRootPW: boss-pw\nolcDbIndex: objectClass eq\n\
         olcAccess: to * by users read by * none\n",
        directory.display()
    );
    // A number past the next one is refused (slapd renumbers instead; Canopy only appends).
    if Target::from_env() == Target::Canopy {
        let out = s.add(&admin(), &add.replace("{2}", "{5}"));
        assert_eq!(out.code, 53, "{}", out.stderr);
        let out = s.add(&Bind::user("alice"), &add);
        assert_eq!(
            out.code, 50,
            "a user may not add a database: {}",
            out.stderr
        );
        assert!(
            std::fs::read_dir(&directory).unwrap().next().is_none(),
            "nothing opened"
        );
    }
    s.add(&admin(), &add).expect_code(0, "add a database");
    let boss = Bind::Simple("cn=boss,dc=live,dc=org".into(), "boss-pw".into());
    let base =
        "dn: dc=live,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: live\ndc: live\n";
    s.add(&boss, base).expect_code(0, "its root DN fills it");
    let dse = s.read(&Bind::Anonymous, "", &["namingContexts"]);
    assert!(
        dse.stdout.contains("namingContexts: dc=live,dc=org"),
        "{}",
        dse.stdout
    );
    assert_eq!(
        anonymous_count(&s, "dc=live,dc=org", "(objectClass=*)"),
        0,
        "its own rules"
    );
    let user = s.search(
        &Bind::user("alice"),
        &["-b", "dc=live,dc=org", "(objectClass=*)", "1.1"],
    );
    assert_eq!(user.stdout.matches("dn:").count(), 1, "{}", user.stdout);
    s.terminate();
    s.restart();
    assert_eq!(
        values(&s, "olcDatabase={2}mdb,cn=config", "olcSuffix"),
        ["dc=live,dc=org"]
    );
    let user = s.search(
        &Bind::user("alice"),
        &["-b", "dc=live,dc=org", "(objectClass=*)", "1.1"],
    );
    assert_eq!(
        user.stdout.matches("dn:").count(),
        1,
        "after a restart: {}",
        user.stdout
    );
    s.whoami(Via::Ldap, &boss)
        .expect_code(0, "its root DN binds after a restart");
}

#[test]
fn overlays_appear_as_children_of_their_database() {
    if !canopy_only("overlays of the configuration file") {
        return;
    }
    let mut s = Server::start_canopy_with_config(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n\
         [[overlay]]\nname = \"memberof\"\ngroup-oc = \"groupOfNames\"\n\
         [[overlay]]\nname = \"refint\"\nattributes = [\"member\", \"seeAlso\"]\n"
    ));
    let refint = format!("olcOverlay={{1}}refint,{MDB1}");
    let out = s.search(
        &admin(),
        &["-b", MDB1, "-s", "one", "(objectClass=olcOverlayConfig)"],
    );
    out.expect_code(0, "overlay children");
    assert!(
        out.stdout.contains(&format!(
            "dn: olcOverlay={{0}}memberof,{MDB1}\nobjectClass: olcOverlayConfig\n\
             objectClass: olcMemberOfConfig\nolcOverlay: {{0}}memberof\n\
             olcMemberOfGroupOC: groupOfNames"
        )),
        "the file's options in slapd's names: {}",
        out.stdout
    );
    assert_eq!(
        values(&s, &refint, "olcRefintAttribute"),
        ["member", "seeAlso"]
    );
    // The overlay's name is its RDN; an attribute of another overlay is not allowed.
    let out = change(
        &s,
        &format!(
            "dn: {refint}\nchangetype: modify\nreplace: olcOverlay\nolcOverlay: {{1}}unique\n"
        ),
    );
    assert_eq!(out.code, 67, "{}", out.stderr);
    let out = change(
        &s,
        &format!("dn: {refint}\nchangetype: modify\nadd: olcUniqueURI\nolcUniqueURI: ldap:///?mail?sub\n"),
    );
    assert_eq!(out.code, 65, "{}", out.stderr);
    // A file's overlay changes live, and the change outlives a restart.
    change(
        &s,
        &format!("dn: {refint}\nchangetype: modify\ndelete: olcRefintAttribute\nolcRefintAttribute: seeAlso\n"),
    )
    .expect_code(0, "drop seeAlso from refint");
    s.terminate();
    s.restart();
    assert_eq!(values(&s, &refint, "olcRefintAttribute"), ["member"]);
    let export = s.canopy_tool("config", &["export"]);
    export.expect_code(0, "config export");
    assert!(
        export.stdout.contains("attributes = [\"member\"]"),
        "the live overlay in the export: {}",
        export.stdout
    );
    // Deleted live, it stays deleted after a restart (the file has not changed).
    s.tool(
        "ldapdelete",
        &admin(),
        &[format!("olcOverlay={{0}}memberof,{MDB1}").as_str()],
        None,
    )
    .expect_code(0, "delete the memberof overlay");
    assert_eq!(
        values(&s, &format!("olcOverlay={{0}}refint,{MDB1}"), "olcOverlay"),
        ["{0}refint"],
        "the sibling after it moved up"
    );
    s.terminate();
    s.restart();
    let out = s.search(
        &admin(),
        &[
            "-b",
            MDB1,
            "-s",
            "one",
            "(objectClass=olcOverlayConfig)",
            "1.1",
        ],
    );
    assert_eq!(out.stdout.matches("dn:").count(), 1, "{}", out.stdout);
    // An edit of the file's overlays since the last start wins over the live ones.
    s.edit_canopy_config(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n\
         [[overlay]]\nname = \"refint\"\nattributes = [\"owner\"]\n"
    ));
    s.terminate();
    s.restart();
    assert_eq!(
        values(
            &s,
            &format!("olcOverlay={{0}}refint,{MDB1}"),
            "olcRefintAttribute"
        ),
        ["owner"]
    );
}

#[test]
fn a_password_policy_added_live_applies_at_once() {
    let s = Server::start_with_config_tree();
    s.modify(
        &Bind::External,
        "dn: cn=module{0},cn=config\nchangetype: modify\nadd: olcModuleLoad\n\
         olcModuleLoad: ppolicy.la\n",
    )
    .expect_code(0, "load the module (its schema comes with it)");
    let policy = "cn=short-policy,dc=example,dc=com";
    s.add(
        &Bind::Root,
        &format!(
            "dn: {policy}\nobjectClass: person\nobjectClass: pwdPolicy\ncn: short-policy\n\
             sn: policy\npwdAttribute: userPassword\npwdMinLength: 8\npwdCheckQuality: 2\n"
        ),
    )
    .expect_code(0, "a policy entry");
    s.add(
        &Bind::External,
        &format!(
            "dn: olcOverlay=ppolicy,{MDB1}\nobjectClass: olcOverlayConfig\n\
             objectClass: olcPPolicyConfig\nolcOverlay: ppolicy\nolcPPolicyDefault: {policy}\n"
        ),
    )
    .expect_code(0, "add the ppolicy overlay");
    let short = format!(
        "dn: {}\nchangetype: modify\nreplace: userPassword\nuserPassword: abc\n",
        user_dn("alice")
    );
    let out = s.modify(&Bind::user("alice"), &short);
    assert_eq!(out.code, 19, "too short under the policy: {}", out.stderr);
    s.tool(
        "ldapdelete",
        &Bind::External,
        &[format!("olcOverlay={{0}}ppolicy,{MDB1}").as_str()],
        None,
    )
    .expect_code(0, "delete the overlay");
    s.modify(&Bind::user("alice"), &short)
        .expect_code(0, "no policy once the overlay is gone");
}

/// The group alice is made a member of, and what she reads of her own memberOf.
fn alice_member_of(s: &Server) -> Vec<String> {
    let out = s.read(&Bind::Root, &user_dn("alice"), &["memberOf"]);
    out.expect_code(0, "read alice's memberOf");
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("memberOf: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_memberof_and_refint_recipe_works_over_ldapi() {
    // The container images' and tutorials' recipe, as root over ldapi, on slapd and Canopy alike.
    let mut s = Server::start_with_config_tree();
    s.modify(
        &Bind::External,
        "dn: cn=module{0},cn=config\nchangetype: modify\nadd: olcModuleLoad\n\
         olcModuleLoad: memberof.la\nolcModuleLoad: refint.la\n",
    )
    .expect_code(0, "load the modules");
    s.add(
        &Bind::External,
        &format!(
            "dn: olcOverlay=memberof,{MDB1}\nobjectClass: olcConfig\nobjectClass: olcOverlayConfig\n\
             objectClass: olcMemberOf\nobjectClass: top\nolcOverlay: memberof\n\
             olcMemberOfDangling: ignore\nolcMemberOfRefInt: TRUE\n\
             olcMemberOfGroupOC: groupOfNames\nolcMemberOfMemberAD: member\n\
             olcMemberOfMemberOfAD: memberOf\n"
        ),
    )
    .expect_code(0, "add the memberof overlay");
    s.add(
        &Bind::External,
        &format!(
            "dn: olcOverlay=refint,{MDB1}\nobjectClass: olcConfig\nobjectClass: olcOverlayConfig\n\
             objectClass: olcRefintConfig\nobjectClass: top\nolcOverlay: refint\n\
             olcRefintAttribute: memberof member manager owner\n"
        ),
    )
    .expect_code(0, "add the refint overlay");
    let out = s.search(
        &Bind::External,
        &[
            "-b",
            MDB1,
            "-s",
            "one",
            "(objectClass=olcOverlayConfig)",
            "olcOverlay",
        ],
    );
    assert!(
        out.stdout
            .contains(&format!("dn: olcOverlay={{0}}memberof,{MDB1}"))
            && out
                .stdout
                .contains(&format!("dn: olcOverlay={{1}}refint,{MDB1}")),
        "numbered as slapd numbers them: {}",
        out.stdout
    );
    let group = "cn=recipe,ou=groups,dc=example,dc=com";
    s.add(
        &Bind::Root,
        &format!(
            "dn: {group}\nobjectClass: groupOfNames\ncn: recipe\nmember: {}\nmember: {}\n",
            user_dn("alice"),
            user_dn("bob")
        ),
    )
    .expect_code(0, "add a group");
    assert!(
        alice_member_of(&s)
            .iter()
            .any(|g| g.eq_ignore_ascii_case(group)),
        "memberOf at once, no restart: {:?}",
        alice_member_of(&s)
    );
    // refint: a deleted member leaves the group.
    s.tool("ldapdelete", &Bind::Root, &[user_dn("bob").as_str()], None)
        .expect_code(0, "delete bob");
    let members = s.read(&Bind::Root, group, &["member"]);
    assert!(
        !members.stdout.to_ascii_lowercase().contains("uid=bob"),
        "refint removed bob: {}",
        members.stdout
    );
    // Removed live: a new group no longer gives memberOf.
    s.tool(
        "ldapdelete",
        &Bind::External,
        &[format!("olcOverlay={{0}}memberof,{MDB1}").as_str()],
        None,
    )
    .expect_code(0, "delete the memberof overlay");
    let other = "cn=later,ou=groups,dc=example,dc=com";
    s.add(
        &Bind::Root,
        &format!(
            "dn: {other}\nobjectClass: groupOfNames\ncn: later\nmember: {}\n",
            user_dn("alice")
        ),
    )
    .expect_code(0, "add another group");
    assert!(
        !alice_member_of(&s)
            .iter()
            .any(|g| g.eq_ignore_ascii_case(other)),
        "no memberOf once the overlay is gone: {:?}",
        alice_member_of(&s)
    );
    if Target::from_env() == Target::Canopy {
        // The overlay list outlives a restart.
        s.terminate();
        s.restart();
        let out = s.search(
            &Bind::External,
            &[
                "-b",
                MDB1,
                "-s",
                "one",
                "(objectClass=olcOverlayConfig)",
                "olcOverlay",
            ],
        );
        assert!(
            out.stdout
                .contains(&format!("dn: olcOverlay={{0}}refint,{MDB1}"))
                && !out.stdout.contains("memberof"),
            "{}",
            out.stdout
        );
        assert_eq!(
            values(&s, "cn=module{0},cn=config", "olcModuleLoad"),
            ["{0}memberof.la", "{1}refint.la"]
        );
    }
}

#[test]
fn overlay_values_are_checked_as_slapd_checks_them() {
    let s = Server::start_with_config_tree();
    s.modify(
        &Bind::External,
        "dn: cn=module{0},cn=config\nchangetype: modify\nadd: olcModuleLoad\n\
         olcModuleLoad: memberof.la\nolcModuleLoad: refint.la\nolcModuleLoad: unique.la\n\
         olcModuleLoad: ppolicy.la\n",
    )
    .expect_code(0, "load the modules");
    let overlay = |name: &str, class: &str, extra: &str| {
        format!(
            "dn: olcOverlay={name},{MDB1}\nobjectClass: olcOverlayConfig\nobjectClass: {class}\n\
             olcOverlay: {name}\n{extra}"
        )
    };
    let refused = |ldif: &str, code: i32, what: &str| {
        let out = s.add(&admin(), ldif);
        assert_eq!(out.code, code, "{what}: {}", out.stderr);
    };
    refused(
        &overlay(
            "refint",
            "olcRefintConfig",
            "olcRefintAttribute: nosuchattr\n",
        ),
        80,
        "an attribute type the schema lacks",
    );
    refused(
        &format!(
            "dn: olcOverlay=refint,{MDB1}\nobjectClass: olcOverlayConfig\nolcOverlay: refint\n\
             olcRefintAttribute: member\n"
        ),
        65,
        "an option without its overlay's class",
    );
    refused(
        &overlay("memberof", "olcMemberOf", "olcMemberOfRefInt: yes\n"),
        21,
        "a Boolean that is not one",
    );
    refused(
        &format!(
            "dn: olcOverlay=ppolicy,{MDB1}\nobjectClass: olcOverlayConfig\n\
             objectClass: olcPPolicyConfig\nolcOverlay: unique\n"
        ),
        64,
        "an RDN that is not the olcOverlay value",
    );
    s.add(&admin(), &overlay("memberof", "olcMemberOf", ""))
        .expect_code(0, "memberof");
    let memberof = format!("olcOverlay={{0}}memberof,{MDB1}");
    for (attr, value, code) in [
        ("olcMemberOfDangling", "sometimes", 80),
        ("olcMemberOfGroupOC", "nosuchclass", 80),
        ("olcMemberOfRefInt", "maybe", 21),
    ] {
        let out = change(
            &s,
            &format!("dn: {memberof}\nchangetype: modify\nreplace: {attr}\n{attr}: {value}\n"),
        );
        assert_eq!(out.code, code, "{attr}: {value}: {}", out.stderr);
    }
    // Inserted in front, the others move down (X-ORDERED 'SIBLINGS').
    s.add(
        &admin(),
        &format!(
            "dn: olcOverlay={{0}}unique,{MDB1}\nobjectClass: olcOverlayConfig\n\
             objectClass: olcUniqueConfig\nolcOverlay: {{0}}unique\n\
             olcUniqueURI: ldap:///?mail?sub\n"
        ),
    )
    .expect_code(0, "unique in front");
    assert_eq!(
        values(
            &s,
            &format!("olcOverlay={{1}}memberof,{MDB1}"),
            "olcOverlay"
        ),
        ["{1}memberof"]
    );
    let out = change(
        &s,
        &format!(
            "dn: olcOverlay={{0}}unique,{MDB1}\nchangetype: modify\nadd: olcUniqueURI\n\
             olcUniqueURI: notaurl\n"
        ),
    );
    assert_eq!(out.code, 80, "{}", out.stderr);
    // unique works at once: a second entry with alice's mail is refused.
    let mail = s.read(&Bind::Root, &user_dn("alice"), &["mail"]);
    let Some(address) = mail.stdout.lines().find_map(|l| l.strip_prefix("mail: ")) else {
        panic!("alice has a mail address: {}", mail.stdout);
    };
    let out = s.modify(
        &Bind::Root,
        &format!(
            "dn: {}\nchangetype: modify\nreplace: mail\nmail: {address}\n",
            user_dn("bob")
        ),
    );
    assert_eq!(
        out.code, 19,
        "unique refuses a second {address}: {}",
        out.stderr
    );
    if canopy_only("Canopy's message for a module it does not have") {
        let out = change(
            &s,
            "dn: cn=module{0},cn=config\nchangetype: modify\nadd: olcModuleLoad\n\
             olcModuleLoad: nosuch.la\n",
        );
        assert_eq!(out.code, 80, "{}", out.stderr);
    }
}

#[test]
fn schema_added_live_may_use_oid_macros() {
    let s = Server::start_with_config_tree();
    s.add(
        &admin(),
        "dn: cn=macros,cn=schema,cn=config\nobjectClass: olcSchemaConfig\ncn: macros\n\
         olcObjectIdentifier: ExampleOID 1.3.6.1.4.1.99999.7\n\
         olcObjectIdentifier: ExampleAttr ExampleOID:1\n\
         olcAttributeTypes: ( ExampleAttr:1 NAME 'macroAttr' EQUALITY caseIgnoreMatch \
         SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n\
         olcObjectClasses: ( ExampleOID:2 NAME 'macroClass' AUXILIARY MAY macroAttr )\n",
    )
    .expect_code(0, "a schema with OID macros");
    s.modify(
        &Bind::Root,
        &format!(
            "dn: {}\nchangetype: modify\nadd: objectClass\nobjectClass: macroClass\n\
             -\nadd: macroAttr\nmacroAttr: expanded\n",
            user_dn("alice")
        ),
    )
    .expect_code(0, "the new class and attribute in use");
    let out = s.search(&Bind::Root, &["-b", SUFFIX, "(macroAttr=expanded)", "1.1"]);
    assert_eq!(out.stdout.matches("dn:").count(), 1, "{}", out.stdout);
    let child = s.search(
        &admin(),
        &[
            "-b",
            "cn=schema,cn=config",
            "(cn=*macros)",
            "olcObjectIdentifier",
        ],
    );
    assert!(
        child
            .stdout
            .contains("olcObjectIdentifier: {1}ExampleAttr ExampleOID:1"),
        "{}",
        child.stdout
    );
}

#[test]
fn offline_tools_see_the_live_databases() {
    if !canopy_only("canopy's offline tools") {
        return;
    }
    let s = Server::start_with_config_tree();
    let directory = s.dir().join("tools-db");
    std::fs::create_dir_all(&directory).unwrap();
    s.add(
        &admin(),
        &format!(
            "dn: olcDatabase=mdb,cn=config\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
             olcDatabase: mdb\nolcSuffix: dc=tools,dc=org\nolcDbDirectory: {}\n\
             olcRootDN: cn=boss,dc=tools,dc=org\nolcRootPW: boss-pw\n",
            directory.display()
        ),
    )
    .expect_code(0, "add a database without a number");
    assert_eq!(
        values(&s, "olcDatabase={2}mdb,cn=config", "olcDatabase"),
        ["{2}mdb"]
    );
    let boss = Bind::Simple("cn=boss,dc=tools,dc=org".into(), "boss-pw".into());
    s.add(
        &boss,
        "dn: dc=tools,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: t\ndc: tools\n",
    )
    .expect_code(0, "fill it");
    let out = s.canopy_tool("export", &["-b", "dc=tools,dc=org"]);
    out.expect_code(0, "canopy export -b of a database added live");
    assert!(out.stdout.contains("dn: dc=tools,dc=org"), "{}", out.stdout);
}

#[test]
fn limits_by_identity_change_live() {
    let s = Server::start_with_config_tree();
    let alice = Bind::user("alice");
    let all = |who: &Bind| s.search(who, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    all(&alice).expect_code(0, "no limit for alice yet");
    change(
        &s,
        &format!(
            "dn: {MDB1}\nchangetype: modify\nadd: olcLimits\n\
             olcLimits: dn.exact=\"{}\" size=2\n",
            user_dn("alice")
        ),
    )
    .expect_code(0, "olcLimits");
    let out = all(&alice);
    assert_eq!(out.code, 4, "alice's own limit: {}", out.stdout);
    assert_eq!(out.stdout.matches("dn:").count(), 2);
    all(&Bind::user("bob")).expect_code(0, "bob is not limited");
    let out = change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\nadd: olcLimits\nolcLimits: users size=lots\n"),
    );
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(out.stderr.contains("olcLimits"), "{}", out.stderr);
    change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\ndelete: olcLimits\nolcLimits: {{0}}\n"),
    )
    .expect_code(0, "delete the rule");
    all(&alice).expect_code(0, "no limit for alice again");
}

/// Whether the server log mentions `text` within a short bound (the line is written as the search ends).
fn logged_soon(s: &Server, text: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        if s.log().contains(text) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn the_log_level_changes_live() {
    if !canopy_only("the server log's content") {
        return;
    }
    let s = Server::start_with_config_tree();
    let unindexed = |value: &str| {
        s.search(
            &Bind::Anonymous,
            &["-b", SUFFIX, &format!("(description={value})"), "1.1"],
        )
        .expect_code(0, "unindexed search");
    };
    unindexed("first");
    assert!(
        logged_soon(&s, "description=first"),
        "info is logged by default:\n{}",
        s.log()
    );
    let set = |level: &str| {
        change(
            &s,
            &format!(
                "dn: cn=config\nchangetype: modify\nreplace: olcLogLevel\nolcLogLevel: {level}\n"
            ),
        )
    };
    set("none").expect_code(0, "olcLogLevel none");
    unindexed("second");
    set("stats").expect_code(0, "olcLogLevel stats");
    unindexed("third");
    assert!(
        logged_soon(&s, "description=third"),
        "stats logs again:\n{}",
        s.log()
    );
    assert!(
        !s.log().contains("description=second"),
        "none kept it quiet:\n{}",
        s.log()
    );
    let out = set("chatty");
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(out.stderr.contains("olcLogLevel"), "{}", out.stderr);
    assert_eq!(values(&s, "cn=config", "olcLogLevel"), ["stats"]);
}

/// The built-in schema files the configuration includes are listed under cn=schema,cn=config as
/// slapd lists its includes (`cn={0}core` to `cn={3}nis`), with their definitions; a definition that
/// does not parse is refused there with other (80), as OpenLDAP's test051 checks, and the schema
/// keeps serving.
#[test]
fn builtin_schema_children_refuse_bad_definitions() {
    let s = Server::start_with_config_tree();
    let out = s.search(
        &admin(),
        &[
            "-b",
            "cn=schema,cn=config",
            "-s",
            "one",
            "(objectClass=olcSchemaConfig)",
            "cn",
        ],
    );
    out.expect_code(0, "the config root reads cn=schema's children");
    for (n, name) in ["core", "cosine", "inetorgperson", "nis"]
        .iter()
        .enumerate()
    {
        let dn = format!("dn: cn={{{n}}}{name},cn=schema,cn=config");
        assert!(out.stdout.contains(&dn), "{dn} in\n{}", out.stdout);
    }
    let types = values(&s, "cn={0}core,cn=schema,cn=config", "olcAttributeTypes");
    assert!(
        types
            .iter()
            .any(|t| t.contains("0.9.2342.19200300.100.1.25 NAME ( 'dc' 'domainComponent' )")),
        "{types:?}"
    );
    for attr in ["olcObjectClasses", "olcAttributeTypes"] {
        let out = change(
            &s,
            &format!(
                "dn: cn={{0}}core,cn=schema,cn=config\nchangetype: modify\nreplace: {attr}\n\
                 {attr}: ( rawr )\n-\n"
            ),
        );
        assert_eq!(out.code, 80, "{attr}: ( rawr ): {}", out.stderr);
    }
    s.add(
        &Bind::Root,
        &format!("dn: ou=after,{SUFFIX}\nobjectClass: organizationalUnit\nou: after\n"),
    )
    .expect_code(0, "the core schema still serves");
}

#[test]
fn schema_files_appear_under_cn_schema() {
    if !canopy_only("schema children of canopy's schema_files") {
        return;
    }
    let files = [std::path::PathBuf::from("/etc/ldap/schema/misc.schema")];
    let s = Server::start_with_schema(&files);
    let out = s.search(
        &Bind::External,
        &[
            "-b",
            "cn=schema,cn=config",
            "-s",
            "one",
            "(objectClass=olcSchemaConfig)",
        ],
    );
    out.expect_code(0, "root over ldapi reads cn=schema,cn=config");
    assert!(
        out.stdout.contains("dn: cn={0}misc,cn=schema,cn=config"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("olcAttributeTypes: {0}( 2.16.840.1.113730.3.1.13 NAME 'mailLocalAddress'"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("NAME 'inetLocalMailRecipient'"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_restart_keeps_live_changes_and_applies_file_edits() {
    if !canopy_only("how canopy's file and live tree meet at a restart") {
        return;
    }
    let mut s = Server::start_with_config_tree();
    change(
        &s,
        &format!("dn: {FRONTEND}\nchangetype: modify\nreplace: olcSizeLimit\nolcSizeLimit: 42\n"),
    )
    .expect_code(0, "a live change");
    s.terminate();
    // The administrator edits another setting in the file; the size limit stays as the file had it.
    s.edit_canopy_config(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n\
         [limits]\ntime_limit = 77\n"
    ));
    s.restart();
    assert_eq!(
        values(&s, FRONTEND, "olcSizeLimit"),
        ["42"],
        "the live change stays"
    );
    assert_eq!(
        values(&s, FRONTEND, "olcTimeLimit"),
        ["77"],
        "the file's edit applies"
    );
    let log = s.log();
    assert!(
        log.contains("changed in the configuration file since the last start"),
        "{log}"
    );
    assert!(log.contains("the live value is used"), "{log}");
}

const SCHEMA_DN: &str = "cn=schema,cn=config";

/// A schema entry named `name` with one attribute type and one auxiliary class that allows it
/// (OIDs under `arc`).
fn schema_ldif(name: &str, arc: u32, attr: &str, class: &str) -> String {
    format!(
        "dn: cn={name},{SCHEMA_DN}\nobjectClass: olcSchemaConfig\ncn: {name}\n\
         olcAttributeTypes: ( 1.3.6.1.4.1.99999.{arc}.1.1 NAME '{attr}' EQUALITY caseIgnoreMatch \
         SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n\
         olcObjectClasses: ( 1.3.6.1.4.1.99999.{arc}.2.1 NAME '{class}' SUP top AUXILIARY MAY {attr} )\n"
    )
}

/// The DNs of the children of cn=schema,cn=config whose cn ends with `name` (slapd numbers them
/// after its core, cosine, inetorgperson and nis; canopy's built-in schema has no children).
fn schema_children(s: &Server, name: &str) -> Vec<String> {
    let out = s.search(
        &admin(),
        &[
            "-b",
            SCHEMA_DN,
            "-s",
            "one",
            &format!("(cn=*{name})"),
            "1.1",
        ],
    );
    out.expect_code(0, "list the schema children");
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("dn: "))
        .map(str::to_string)
        .collect()
}

/// The number of children of cn=schema,cn=config.
fn schema_count(s: &Server) -> usize {
    let out = s.search(
        &admin(),
        &["-b", SCHEMA_DN, "-s", "one", "(objectClass=*)", "1.1"],
    );
    out.expect_code(0, "count the schema children");
    out.stdout.lines().filter(|l| l.starts_with("dn:")).count()
}

/// Whether cn=Subschema publishes an attribute type or object class named `name`.
fn published(s: &Server, name: &str) -> bool {
    let out = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "cn=Subschema",
            "-s",
            "base",
            "(objectClass=*)",
            "attributeTypes",
            "objectClasses",
        ],
    );
    out.expect_code(0, "read cn=Subschema");
    out.stdout.contains(&format!("NAME '{name}'"))
}

/// An entry below ou=people that carries the auxiliary `class` with `attr: value`.
fn user_of(rdn: &str, class: &str, attr: &str, value: &str) -> String {
    format!(
        "dn: ou={rdn},{PEOPLE}\nobjectClass: organizationalUnit\nobjectClass: {class}\nou: {rdn}\n\
         {attr}: {value}\n"
    )
}

#[test]
fn a_schema_added_live_is_used_at_once() {
    let s = Server::start_with_config_tree();
    assert!(!published(&s, "liveAttr"));
    s.add(&admin(), &schema_ldif("live", 1, "liveAttr", "liveObject"))
        .expect_code(0, "add a schema under cn=schema,cn=config");
    let dns = schema_children(&s, "live");
    assert_eq!(dns.len(), 1, "{dns:?}");
    let dn = &dns[0];
    assert!(
        dn.starts_with("cn={") && dn.ends_with("}live,cn=schema,cn=config"),
        "{dn}"
    );
    assert!(values(&s, dn, "olcAttributeTypes")[0]
        .starts_with("{0}( 1.3.6.1.4.1.99999.1.1.1 NAME 'liveAttr'"));
    // Another client uses it at once: an entry with the new class and attribute, and a search on it.
    assert!(published(&s, "liveAttr") && published(&s, "liveObject"));
    s.add(
        &Bind::Root,
        &user_of("live1", "liveObject", "liveAttr", "Hello World"),
    )
    .expect_code(0, "an entry with the new class");
    assert_eq!(anonymous_count(&s, SUFFIX, "(liveAttr=hello world)"), 1);
    assert_eq!(anonymous_count(&s, SUFFIX, "(liveAttr=hel*)"), 1);
    assert_eq!(anonymous_count(&s, SUFFIX, "(objectClass=liveObject)"), 1);
    // More definitions on the same entry, used at once too.
    change(
        &s,
        &format!(
            "dn: {dn}\nchangetype: modify\nadd: olcAttributeTypes\nolcAttributeTypes: ( \
             1.3.6.1.4.1.99999.1.1.2 NAME 'liveCode' EQUALITY caseExactMatch SYNTAX \
             1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )\n-\nadd: olcObjectClasses\n\
             olcObjectClasses: ( 1.3.6.1.4.1.99999.1.2.2 NAME 'liveCoded' SUP top AUXILIARY MUST liveCode )\n"
        ),
    )
    .expect_code(0, "add definitions to the schema entry");
    assert_eq!(values(&s, dn, "olcAttributeTypes").len(), 2);
    s.add(
        &Bind::Root,
        &user_of("live2", "liveCoded", "liveCode", "X1"),
    )
    .expect_code(0, "an entry with the second class");
    let out = s.add(
        &Bind::Root,
        &format!("dn: ou=live3,{PEOPLE}\nobjectClass: organizationalUnit\nobjectClass: liveCoded\nou: live3\n"),
    );
    assert_eq!(
        out.code, 65,
        "the new class's MUST is enforced: {}",
        out.stderr
    );
    // Indexed through olcDbIndex, and still found while and after the index builds.
    change(
        &s,
        &format!("dn: {MDB1}\nchangetype: modify\nadd: olcDbIndex\nolcDbIndex: liveAttr eq,sub\n"),
    )
    .expect_code(0, "index the new attribute");
    if Target::from_env() == Target::Canopy {
        wait_for_index(&s, "liveAttr eq,sub");
    }
    assert_eq!(anonymous_count(&s, SUFFIX, "(liveAttr=hello world)"), 1);
    assert_eq!(anonymous_count(&s, SUFFIX, "(liveAttr=*world)"), 1);
    // A rule of the database's access list may name it at once too.
    change(
        &s,
        &format!(
            "dn: {MDB1}\nchangetype: modify\nadd: olcAccess\nolcAccess: {{0}}to attrs=liveAttr by * none\n"
        ),
    )
    .expect_code(0, "an access rule on the new attribute");
    assert_eq!(anonymous_count(&s, SUFFIX, "(liveAttr=hello world)"), 0);
}

#[test]
fn an_invalid_schema_is_refused_and_changes_nothing() {
    let s = Server::start_with_config_tree();
    s.add(&admin(), &schema_ldif("good", 2, "goodAttr", "goodObject"))
        .expect_code(0, "a valid schema");
    let before = schema_count(&s);
    let cases = [
        (
            "olcAttributeTypes: ( 1.3.6.1.4.1.99999.2.9.1 NAME 'badSyntax' SYNTAX 1.2.3.4.5 )",
            "olcAttributeTypes: Syntax not found: \"1.2.3.4.5\"",
        ),
        (
            "olcAttributeTypes: ( 1.3.6.1.4.1.99999.2.9.2 NAME 'badSup' SUP noSuchType )",
            "olcAttributeTypes: AttributeType not found: \"noSuchType\"",
        ),
        (
            "olcAttributeTypes: ( 1.3.6.1.4.1.99999.2.9.3 NAME 'goodAttr' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )",
            "olcAttributeTypes: Inconsistent duplicate attributeType: \"goodAttr\"",
        ),
        (
            "olcObjectClasses: ( 1.3.6.1.4.1.99999.2.9.4 NAME 'badClass' SUP noSuchClass AUXILIARY )",
            "olcObjectClasses: ObjectClass not found: \"noSuchClass\"",
        ),
        (
            "olcObjectClasses: ( 1.3.6.1.4.1.99999.2.9.5 NAME 'badMay' SUP top AUXILIARY MAY noSuchAttr )",
            "olcObjectClasses: AttributeType not found: \"noSuchAttr\"",
        ),
    ];
    let good = schema_children(&s, "good").remove(0);
    for (definition, message) in cases {
        let add = format!(
            "dn: cn=bad,{SCHEMA_DN}\nobjectClass: olcSchemaConfig\ncn: bad\n{definition}\n"
        );
        let out = s.add(&admin(), &add);
        assert_eq!(out.code, 80, "{definition}: {}", out.stderr);
        assert!(out.stderr.contains(message), "{definition}: {}", out.stderr);
        // The same definition added to an existing schema entry is refused the same way.
        let (attr, value) = definition.split_once(": ").unwrap();
        let out = change(
            &s,
            &format!("dn: {good}\nchangetype: modify\nadd: {attr}\n{attr}: {value}\n"),
        );
        assert_eq!(out.code, 80, "{definition}: {}", out.stderr);
        assert!(out.stderr.contains(message), "{definition}: {}", out.stderr);
    }
    assert_eq!(schema_count(&s), before, "nothing added");
    assert_eq!(
        values(&s, &good, "olcAttributeTypes").len(),
        1,
        "nothing changed"
    );
    for name in ["badSyntax", "badSup", "badClass", "badMay"] {
        assert!(!published(&s, name), "{name} is not in cn=Subschema");
    }
    assert!(published(&s, "goodAttr"));
}

#[test]
fn a_schema_added_live_survives_a_restart() {
    let mut s = Server::start_with_config_tree();
    s.add(&admin(), &schema_ldif("kept", 3, "keptAttr", "keptObject"))
        .expect_code(0, "add a schema");
    s.add(
        &Bind::Root,
        &user_of("kept1", "keptObject", "keptAttr", "stays"),
    )
    .expect_code(0, "an entry using it");
    let dn = schema_children(&s, "kept").remove(0);
    s.terminate();
    s.restart();
    assert_eq!(
        schema_children(&s, "kept"),
        std::slice::from_ref(&dn),
        "the same entry"
    );
    assert!(values(&s, &dn, "olcObjectClasses")[0].contains("NAME 'keptObject'"));
    assert_eq!(anonymous_count(&s, SUFFIX, "(keptAttr=stays)"), 1);
    s.add(
        &Bind::Root,
        &user_of("kept2", "keptObject", "keptAttr", "too"),
    )
    .expect_code(0, "usable after the restart");
    if canopy_only("canopy config export of a schema added live") {
        let out = s.canopy_tool("config", &["export"]);
        out.expect_code(0, "canopy config export");
        assert!(out.stdout.contains("[[schema]]"), "{}", out.stdout);
        assert!(out.stdout.contains("name = \"kept\""), "{}", out.stdout);
        // The export, as a file, defines that schema itself: it checks clean and the same as live.
        let exported = s.dir().join("exported.toml");
        std::fs::write(&exported, &out.stdout).unwrap();
        let out = s.canopy_tool("config", &["check", &exported.display().to_string()]);
        out.expect_code(0, "check the export");
        assert!(
            out.stdout.contains("the same as the live configuration"),
            "{}",
            out.stdout
        );
        // The offline tools load it too.
        let out = s.canopy_tool("export", &[]);
        out.expect_code(0, "canopy export");
        assert!(out.stdout.contains("keptAttr: stays"), "{}", out.stdout);
    }
}

#[test]
fn schema_deletes_are_refused_while_used_and_accepted_when_unused() {
    if !canopy_only("deleting schema elements (slapd 2.5 refuses or does not check their use)") {
        return;
    }
    let s = Server::start_with_config_tree();
    s.add(
        &admin(),
        &schema_ldif("first", 4, "firstAttr", "firstObject"),
    )
    .expect_code(0, "a first schema");
    s.add(
        &admin(),
        &schema_ldif("second", 5, "secondAttr", "secondObject"),
    )
    .expect_code(0, "a second schema");
    let first = schema_children(&s, "first").remove(0);
    // After the four built-in files the configuration includes, as slapd numbers them.
    assert_eq!(first, format!("cn={{4}}first,{SCHEMA_DN}"));
    change(
        &s,
        &format!(
            "dn: {first}\nchangetype: modify\nadd: olcAttributeTypes\nolcAttributeTypes: ( \
             1.3.6.1.4.1.99999.4.1.2 NAME 'spareAttr' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n"
        ),
    )
    .expect_code(0, "an attribute type nothing uses");
    s.add(
        &Bind::Root,
        &user_of("used", "firstObject", "firstAttr", "x"),
    )
    .expect_code(0, "an entry using the first schema");
    // An unused element goes.
    change(&s, &format!("dn: {first}\nchangetype: modify\ndelete: olcAttributeTypes\nolcAttributeTypes: {{1}}\n"))
        .expect_code(0, "delete the unused attribute type");
    assert!(!published(&s, "spareAttr"));
    // One another element depends on (firstObject allows firstAttr): refused.
    let out = change(&s, &format!("dn: {first}\nchangetype: modify\ndelete: olcAttributeTypes\nolcAttributeTypes: {{0}}\n"));
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains("depends on"), "{}", out.stderr);
    // One an index names: refused until the index goes.
    let indexed =
        format!("dn: {MDB1}\nchangetype: modify\nadd: olcDbIndex\nolcDbIndex: secondAttr eq\n");
    change(&s, &indexed).expect_code(0, "index secondAttr");
    let second = schema_children(&s, "second").remove(0);
    let out = s.tool("ldapdelete", &admin(), &[&second], None);
    assert_eq!(out.code, 80, "{}", out.stderr);
    assert!(out.stderr.contains("<olcDbIndex>"), "{}", out.stderr);
    change(
        &s,
        &indexed.replace("add: olcDbIndex", "delete: olcDbIndex"),
    )
    .expect_code(0, "drop it");
    // One an entry uses: refused, naming the entry.
    let used = format!("ou=used,{PEOPLE}");
    let out = change(
        &s,
        &format!(
            "dn: {first}\nchangetype: modify\ndelete: olcObjectClasses\nolcObjectClasses: {{0}}\n"
        ),
    );
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(
        out.stderr.contains("is in use") && out.stderr.contains(&used),
        "{}",
        out.stderr
    );
    let out = s.tool("ldapdelete", &admin(), &[&first], None);
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains(&used), "{}", out.stderr);
    assert!(
        published(&s, "firstAttr") && published(&s, "firstObject"),
        "nothing changed"
    );
    // Once no entry uses it, the whole schema goes, and the next one moves up a position.
    s.tool("ldapdelete", &Bind::Root, &[&used], None)
        .expect_code(0, "delete the entry that uses it");
    s.tool("ldapdelete", &admin(), &[&first], None)
        .expect_code(0, "delete the unused schema");
    assert!(!published(&s, "firstAttr") && !published(&s, "firstObject"));
    assert!(schema_children(&s, "first").is_empty());
    assert_eq!(
        schema_children(&s, "second"),
        [format!("cn={{4}}second,{SCHEMA_DN}")]
    );
    let out = s.add(
        &Bind::Root,
        &user_of("gone", "firstObject", "firstAttr", "x"),
    );
    assert_eq!(out.code, 21, "the class is gone: {}", out.stderr);
    s.add(
        &Bind::Root,
        &user_of("second", "secondObject", "secondAttr", "y"),
    )
    .expect_code(0, "the second schema still serves");
}

#[test]
fn the_file_s_schema_and_databases_are_not_deleted_live() {
    if !canopy_only("which entries canopy deletes live (slapd 2.5 deletes databases, not schema)") {
        return;
    }
    let files = [std::path::PathBuf::from("/etc/ldap/schema/misc.schema")];
    let s = Server::start_with_schema(&files);
    let delete = |dn: &str| s.tool("ldapdelete", &Bind::External, &[dn], None);
    let out = delete("cn={0}misc,cn=schema,cn=config");
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains("configuration file"), "{}", out.stderr);
    let out = delete(MDB1);
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains("configuration file"), "{}", out.stderr);
    for dn in [FRONTEND, CONFIG_DB] {
        let out = delete(dn);
        assert_eq!(out.code, 53, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("Cannot delete config or frontend database"),
            "{}",
            out.stderr
        );
    }
    let out = s.modify(
        &Bind::External,
        "dn: cn={0}misc,cn=schema,cn=config\nchangetype: modify\ndelete: olcAttributeTypes\nolcAttributeTypes: {0}\n",
    );
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(published(&s, "mailLocalAddress"));
}

#[test]
fn a_database_added_live_is_deleted() {
    let mut s = Server::start_with_config_tree();
    let directory = s.dir().join("doomed-db");
    std::fs::create_dir_all(&directory).unwrap();
    let add = format!(
        "dn: olcDatabase={{2}}mdb,cn=config\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
         olcDatabase: {{2}}mdb\nolcSuffix: dc=doomed,dc=org\nolcDbDirectory: {}\n\
         olcRootDN: cn=boss,dc=doomed,dc=org\nolcRootPW: boss-pw\n",
        directory.display()
    );
    s.add(&admin(), &add).expect_code(0, "add a database");
    let boss = Bind::Simple("cn=boss,dc=doomed,dc=org".into(), "boss-pw".into());
    let base = "dn: dc=doomed,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: d\ndc: doomed\n";
    s.add(&boss, base).expect_code(0, "its root DN fills it");
    let held = |s: &Server| {
        let out = s.search(&boss, &["-b", "dc=doomed,dc=org", "(objectClass=*)", "1.1"]);
        out.expect_code(0, "its root DN reads it");
        out.stdout.matches("dn:").count()
    };
    assert_eq!(held(&s), 1);
    // A second one after it, which moves up a number when the first goes.
    let kept_dir = s.dir().join("kept-db");
    std::fs::create_dir_all(&kept_dir).unwrap();
    let kept = format!(
        "dn: olcDatabase={{3}}mdb,cn=config\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
         olcDatabase: {{3}}mdb\nolcSuffix: dc=kept,dc=org\nolcDbDirectory: {}\n\
         olcRootDN: cn=boss,dc=kept,dc=org\nolcRootPW: boss-pw\n",
        kept_dir.display()
    );
    s.add(&admin(), &kept)
        .expect_code(0, "add a second database");
    let kept_boss = Bind::Simple("cn=boss,dc=kept,dc=org".into(), "boss-pw".into());
    s.add(
        &kept_boss,
        "dn: dc=kept,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: k\ndc: kept\n",
    )
    .expect_code(0, "its root DN fills it");
    for dn in [FRONTEND, CONFIG_DB] {
        let out = s.tool("ldapdelete", &admin(), &[dn], None);
        assert_eq!(out.code, 53, "{dn}: {}", out.stderr);
    }
    s.tool(
        "ldapdelete",
        &admin(),
        &["olcDatabase={2}mdb,cn=config"],
        None,
    )
    .expect_code(0, "delete the database");
    let naming = |s: &Server| s.read(&Bind::Anonymous, "", &["namingContexts"]).stdout;
    let check_gone = |s: &Server, when: &str| {
        assert!(
            !naming(s).contains("dc=doomed,dc=org"),
            "{when}: {}",
            naming(s)
        );
        let out = s.read(&Bind::Anonymous, "dc=doomed,dc=org", &["1.1"]);
        assert_eq!(out.code, 32, "{when}: no longer served: {}", out.stdout);
        assert_eq!(
            values(s, "olcDatabase={2}mdb,cn=config", "olcSuffix"),
            ["dc=kept,dc=org"],
            "{when}: the next database moved up"
        );
        let out = s.read(&admin(), "olcDatabase={3}mdb,cn=config", &["1.1"]);
        assert_eq!(out.code, 32, "{when}: not in cn=config: {}", out.stdout);
        let out = s.search(
            &kept_boss,
            &["-b", "dc=kept,dc=org", "(objectClass=*)", "1.1"],
        );
        out.expect_code(0, "the second database still serves");
        assert_eq!(
            out.stdout.matches("dn:").count(),
            1,
            "{when}: {}",
            out.stdout
        );
        assert!(
            anonymous_count(s, SUFFIX, "(objectClass=*)") > 0,
            "{when}: the first database serves"
        );
    };
    check_gone(&s, "at once");
    s.terminate();
    s.restart();
    check_gone(&s, "after a restart");
    if canopy_only("canopy keeps a deleted database's data directory") {
        assert!(
            directory.join("data.mdb").exists(),
            "the data directory is kept"
        );
        // Added again over the same directory, it serves what it held.
        s.add(&admin(), &add.replace("{2}", "{3}"))
            .expect_code(0, "add it again");
        assert_eq!(held(&s), 1);
    }
}

#[test]
fn schema_tables_of_the_file_are_served_and_fixed_live() {
    if !canopy_only("canopy's [[schema]] tables") {
        return;
    }
    let s = Server::start_canopy_with_config(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n\
         [[schema]]\nname = \"site\"\nattribute_types = [\"( 1.3.6.1.4.1.99999.6.1 NAME 'siteCode' \
         EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\"]\n\
         object_classes = [\"( 1.3.6.1.4.1.99999.6.2 NAME 'siteThing' SUP top AUXILIARY MAY siteCode )\"]\n"
    ));
    let dn = format!("cn={{0}}site,{SCHEMA_DN}");
    assert_eq!(schema_children(&s, "site"), std::slice::from_ref(&dn));
    s.add(&Bind::Root, &user_of("site", "siteThing", "siteCode", "S1"))
        .expect_code(0, "the file's schema serves");
    let out = change(
        &s,
        &format!(
            "dn: {dn}\nchangetype: modify\ndelete: olcObjectClasses\nolcObjectClasses: {{0}}\n"
        ),
    );
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains("configuration file"), "{}", out.stderr);
    // A schema added live is numbered after it.
    s.add(&admin(), &schema_ldif("more", 7, "moreAttr", "moreObject"))
        .expect_code(0, "add a schema");
    assert_eq!(
        schema_children(&s, "more"),
        [format!("cn={{1}}more,{SCHEMA_DN}")]
    );
}

/// canopy's file with two `[[database]]` tables (dc=second and dc=third, in `@DIR@/second` and
/// `@DIR@/third`), `second_extra` added to the first of them.
fn two_file_databases(second_extra: &str) -> String {
    format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n\
         [[database]]\nsuffix = \"dc=second,dc=org\"\ndirectory = \"@DIR@/second\"\n\
         root_dn = \"cn=boss,dc=second,dc=org\"\nroot_password = \"boss-pw\"\n{second_extra}\
         [[database]]\nsuffix = \"dc=third,dc=org\"\ndirectory = \"@DIR@/third\"\n\
         root_dn = \"cn=boss,dc=third,dc=org\"\nroot_password = \"boss-pw\"\n"
    )
}

#[test]
fn a_database_of_the_file_is_deleted_and_stays_deleted_until_the_file_changes() {
    if !canopy_only("how canopy's file and a live database delete meet at a restart") {
        return;
    }
    let mut s = Server::start_configured(
        Target::Canopy,
        &two_file_databases(""),
        &["second", "third"],
        &[],
    );
    s.load_base();
    let dir = s.dir().display().to_string();
    let boss = |name: &str| Bind::Simple(format!("cn=boss,dc={name},dc=org"), "boss-pw".into());
    for name in ["second", "third"] {
        s.add(
            &boss(name),
            &format!(
                "dn: dc={name},dc=org\nobjectClass: dcObject\nobjectClass: organization\no: {name}\ndc: {name}\n"
            ),
        )
        .expect_code(0, "fill it");
    }
    let out = s.tool("ldapdelete", &admin(), &[MDB1], None);
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains("first database"), "{}", out.stderr);
    s.tool(
        "ldapdelete",
        &admin(),
        &["olcDatabase={2}mdb,cn=config"],
        None,
    )
    .expect_code(0, "delete the file's second database");
    let naming = |s: &Server| s.read(&Bind::Anonymous, "", &["namingContexts"]).stdout;
    let check_gone = |s: &Server, when: &str| {
        assert!(!naming(s).contains("dc=second"), "{when}: {}", naming(s));
        assert!(naming(s).contains("dc=third"), "{when}: {}", naming(s));
        let out = s.read(&Bind::Anonymous, "dc=second,dc=org", &["1.1"]);
        assert_eq!(out.code, 32, "{when}: not served: {}", out.stdout);
        assert_eq!(
            values(s, "olcDatabase={2}mdb,cn=config", "olcSuffix"),
            ["dc=third,dc=org"],
            "{when}: the next database moved up"
        );
        s.read(&boss("third"), "dc=third,dc=org", &["1.1"])
            .expect_code(0, "the third database still serves");
        // The offline tools number the databases as the server does; the export leaves it out.
        let out = s.canopy_tool("export", &["-n", "2"]);
        out.expect_code(0, "canopy export -n 2");
        assert!(
            out.stdout.contains("dn: dc=third,dc=org"),
            "{when}: {}",
            out.stdout
        );
        let out = s.canopy_tool("config", &["export"]);
        out.expect_code(0, "canopy config export");
        assert!(!out.stdout.contains("dc=second"), "{when}: {}", out.stdout);
        assert!(out.stdout.contains("dc=third"), "{when}: {}", out.stdout);
        let file = s.dir().join("canopy.toml").display().to_string();
        let out = s.canopy_tool("config", &["check", &file]);
        out.expect_code(0, "canopy config check");
        assert!(
            out.stdout.contains("(deleted live)"),
            "{when}: {}",
            out.stdout
        );
    };
    check_gone(&s, "at once");
    // A live change of the database that moved up survives the restart (the file's baseline is
    // matched by suffix, not by number).
    change(
        &s,
        "dn: olcDatabase={2}mdb,cn=config\nchangetype: modify\nreplace: olcReadOnly\nolcReadOnly: TRUE\n",
    )
    .expect_code(0, "a live change of the third database");
    s.terminate();
    s.restart();
    check_gone(&s, "after a restart");
    assert_eq!(
        values(&s, "olcDatabase={2}mdb,cn=config", "olcReadOnly"),
        ["TRUE"],
        "the live change stays"
    );
    assert!(
        s.log().contains("it stays deleted"),
        "the start says why: {}",
        s.log()
    );
    // The administrator edits the deleted database's table: the file wins.
    s.terminate();
    s.edit_canopy_config(
        &two_file_databases("[database.limits]\nsize_limit = 10\n").replace("@DIR@", &dir),
    );
    s.restart();
    assert!(naming(&s).contains("dc=second"), "{}", naming(&s));
    let out = s.read(&boss("second"), "dc=second,dc=org", &["o"]);
    out.expect_code(0, "served again with what it held");
    assert_eq!(
        values(&s, "olcDatabase={2}mdb,cn=config", "olcSuffix"),
        ["dc=second,dc=org"]
    );
    assert_eq!(
        values(&s, "olcDatabase={3}mdb,cn=config", "olcReadOnly"),
        ["TRUE"],
        "the third database's live change stays"
    );
    assert!(
        s.log()
            .contains("the file wins, the database is served again"),
        "{}",
        s.log()
    );
}

#[test]
fn a_syncrepl_consumer_replicates_under_a_schema_added_live() {
    if !canopy_only("Canopy replicating to Canopy") {
        return;
    }
    use canopy_e2e::consumer_support::{canopy_consumer, syncrepl_table, wait_converged};
    let provider = Server::start();
    let consumer = canopy_consumer(&syncrepl_table(
        &provider,
        1,
        "type = \"refreshAndPersist\"\n",
    ));
    let limit = std::time::Duration::from_secs(30);
    wait_converged(&provider, &consumer, limit).expect("the initial refresh");
    // The schema goes to the consumer first, then to the provider, as an administrator would.
    let schema = schema_ldif("replicated", 41, "replicatedCode", "replicatedThing");
    for s in [&consumer, &provider] {
        s.add(&Bind::External, &schema)
            .expect_code(0, "add a schema live");
    }
    provider
        .add(
            &Bind::Root,
            &user_of("carrier", "replicatedThing", "replicatedCode", "r-41"),
        )
        .expect_code(0, "an entry using it on the provider");
    if let Err(diff) = wait_converged(&provider, &consumer, limit) {
        panic!(
            "the consumer did not take the entry without a restart: {diff}\nconsumer log:\n{}\nprovider log:\n{}",
            consumer.log(),
            provider.log()
        );
    }
    let out = consumer.search(&Bind::Root, &["-b", PEOPLE, "(replicatedCode=r-41)", "1.1"]);
    out.expect_code(0, "search the consumer");
    assert!(out.stdout.contains("dn: ou=carrier"), "{}", out.stdout);
}

/// A reload that removes the database files (`rm -f DATA/*`, which leaves the `config` directory) and
/// imports data under another suffix, as OpenLDAP's test001 does: the store left behind cannot describe
/// the new database, so the import and the next start set it aside and the file seeds a new one. A
/// store that still runs with the file keeps its live settings; while the database files are there, a
/// changed suffix is refused as before.
#[test]
fn a_store_left_by_removed_database_files_gives_way_to_the_file() {
    if !canopy_only("canopy's store of cn=config in the data directory") {
        return;
    }
    let mut s = Server::start_with_config_tree();
    change(
        &s,
        &format!("dn: {FRONTEND}\nchangetype: modify\nreplace: olcSizeLimit\nolcSizeLimit: 42\n"),
    )
    .expect_code(0, "a live change");
    s.terminate();
    let remove_files = |data: &std::path::Path| {
        for entry in std::fs::read_dir(data).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                std::fs::remove_file(&path).unwrap();
            }
        }
    };
    let moved = |suffix: &str| {
        format!(
            "suffix = \"{suffix}\"\nroot_dn = \"cn=admin,{suffix}\"\n\
             config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n"
        )
    };
    let ldif = s.dir().join("moved.ldif");
    std::fs::write(
        &ldif,
        "dn: o=moved\nobjectClass: organization\no: moved\n\n\
         dn: ou=people,o=moved\nobjectClass: organizationalUnit\nou: people\n",
    )
    .unwrap();

    // With the database files still there, another suffix is refused: the store describes that data.
    s.edit_canopy_config(&moved("o=moved"));
    let refused = s.canopy_tool("import", &[ldif.to_str().unwrap()]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("cannot run"), "{}", refused.stderr);

    // The same file over removed files: the store runs with it and keeps the live setting.
    s.edit_canopy_config(&moved(SUFFIX));
    remove_files(&s.data_dir());
    s.restart();
    assert_eq!(
        values(&s, FRONTEND, "olcSizeLimit"),
        ["42"],
        "the store kept"
    );
    s.terminate();

    // Removed files and another suffix: the import sets the store aside and loads the new tree.
    remove_files(&s.data_dir());
    s.edit_canopy_config(&moved("o=moved"));
    let out = s.canopy_tool("import", &[ldif.to_str().unwrap()]);
    out.expect_code(0, "import under the new suffix");
    assert!(out.stderr.contains("moved to"), "{}", out.stderr);
    let aside: Vec<_> = std::fs::read_dir(s.data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("config.stale-"))
        .collect();
    assert_eq!(aside.len(), 1, "the old store is kept aside: {aside:?}");
    s.restart();
    let found = s.search(
        &Bind::Simple("cn=admin,o=moved".into(), ROOT_PW.into()),
        &["-b", "o=moved", "(ou=people)", "1.1"],
    );
    found.expect_code(0, "search the new suffix");
    assert!(
        found.stdout.contains("dn: ou=people,o=moved"),
        "{}",
        found.stdout
    );
    assert_eq!(
        values(&s, MDB1, "olcSuffix"),
        ["o=moved"],
        "the new store is the file's"
    );
    assert_ne!(
        values(&s, FRONTEND, "olcSizeLimit"),
        ["42"],
        "the file's settings, not the old store's"
    );
}

/// A server whose file has no data database of its own (Canopy then runs its default one, empty) takes
/// `olcDatabase={1}mdb` added live as slapd started without a data database does (OpenLDAP's
/// test053, test061, test086): created in its olcDbDirectory, served at once in place of the default,
/// and kept across a restart. A second `{1}` is refused as existing.
#[test]
fn a_first_database_added_live_replaces_the_empty_default() {
    if !canopy_only("a configuration file without a data database") {
        return;
    }
    let mut s = Server::start_canopy_empty(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n"
    ));
    let directory = s.dir().join("live-db");
    std::fs::create_dir_all(&directory).unwrap();
    let add = format!(
        "dn: {MDB1}\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
         olcDatabase: {{1}}mdb\nolcDbDirectory: {}\nolcSuffix: dc=live,dc=org\n\
         olcRootDN: cn=boss,dc=live,dc=org\nolcRootPW: boss-pw\n\
         olcDbIndex: objectClass eq\nolcAccess: {{0}}to * by * read\n",
        directory.display()
    );
    // A refusal of the new database is its own, not the default database's entry existing.
    let out = s.add(
        &admin(),
        &format!("{add}olcUpdateRef: ldap://127.0.0.1:1/\n"),
    );
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(out.stderr.contains("olcUpdateRef"), "{}", out.stderr);
    s.add(&admin(), &add)
        .expect_code(0, "add the first data database");
    assert!(
        directory.join("data.mdb").exists(),
        "created in its olcDbDirectory"
    );
    let boss = Bind::Simple("cn=boss,dc=live,dc=org".into(), "boss-pw".into());
    let base =
        "dn: dc=live,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: live\ndc: live\n";
    s.add(&boss, base).expect_code(0, "its root DN fills it");
    let dse = s.read(&Bind::Anonymous, "", &["namingContexts"]);
    assert!(
        dse.stdout.contains("namingContexts: dc=live,dc=org")
            && !dse.stdout.contains("dc=example,dc=com"),
        "the added database in place of the default: {}",
        dse.stdout
    );
    assert_eq!(anonymous_count(&s, "dc=live,dc=org", "(objectClass=*)"), 1);
    assert_eq!(values(&s, MDB1, "olcSuffix"), ["dc=live,dc=org"]);
    let again = s.add(&admin(), &add.replace("dc=live,dc=org", "dc=other,dc=org"));
    assert_eq!(again.code, 68, "{}", again.stderr);
    s.terminate();
    s.restart();
    assert_eq!(values(&s, MDB1, "olcSuffix"), ["dc=live,dc=org"]);
    assert_eq!(
        values(&s, MDB1, "olcDbDirectory"),
        [directory.display().to_string()]
    );
    assert_eq!(
        anonymous_count(&s, "dc=live,dc=org", "(objectClass=*)"),
        1,
        "after a restart"
    );
    s.whoami(Via::Ldap, &boss)
        .expect_code(0, "its root DN binds after a restart");
}

/// The default database that holds entries is a database like any other: `olcDatabase={1}mdb` added
/// over it is refused as existing (68), saying why, and the entries stay served.
#[test]
fn a_default_database_with_entries_is_not_replaced() {
    if !canopy_only("a configuration file without a data database") {
        return;
    }
    let s = Server::start_canopy_with_config(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n"
    ));
    let before = anonymous_count(&s, PEOPLE, "(objectClass=*)");
    assert!(before > 0, "the base data is loaded");
    let directory = s.dir().join("other-db");
    let out = s.add(
        &admin(),
        &format!(
            "dn: {MDB1}\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
             olcDatabase: {{1}}mdb\nolcDbDirectory: {}\nolcSuffix: dc=live,dc=org\n",
            directory.display()
        ),
    );
    assert_eq!(out.code, 68, "{}", out.stderr);
    assert!(out.stderr.contains("holds"), "{}", out.stderr);
    assert!(!directory.exists(), "nothing opened");
    assert_eq!(anonymous_count(&s, PEOPLE, "(objectClass=*)"), before);
}

/// The offline tools follow a first database added live over the default one (in a directory of
/// its own, outside DATA) as the next start would open it: `canopy export`, `verify` and `backup`
/// read its entries, not the empty default database left in DATA; the backup carries the cn=config
/// store that names it, so that `canopy restore` of it into an empty server brings the database,
/// its entries and its configuration back; `canopy config export` writes what reopens it.
#[test]
fn offline_tools_follow_a_first_database_added_live() {
    if !canopy_only("a configuration file without a data database") {
        return;
    }
    let mut s = Server::start_canopy_empty(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n"
    ));
    let directory = s.dir().join("live-db");
    std::fs::create_dir_all(&directory).unwrap();
    let first = |dir: &str| {
        format!(
            "dn: {MDB1}\nobjectClass: olcDatabaseConfig\nobjectClass: olcMdbConfig\n\
             olcDatabase: {{1}}mdb\nolcDbDirectory: {dir}\nolcSuffix: dc=live,dc=org\n\
             olcRootDN: cn=boss,dc=live,dc=org\nolcRootPW: boss-pw\n\
             olcDbIndex: objectClass eq\nolcAccess: {{0}}to * by * read\n"
        )
    };
    // The data directory under another name is still the default database's place.
    let out = s.add(&admin(), &first("../data"));
    assert_eq!(out.code, 53, "{}", out.stderr);
    assert!(
        out.stderr.contains("is the server's data directory"),
        "{}",
        out.stderr
    );
    s.add(&admin(), &first(&directory.display().to_string()))
        .expect_code(0, "add the first data database");
    let boss = Bind::Simple("cn=boss,dc=live,dc=org".into(), "boss-pw".into());
    s.add(
        &boss,
        "dn: dc=live,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: live\ndc: live\n\n\
         dn: ou=people,dc=live,dc=org\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: cn=ann,ou=people,dc=live,dc=org\nobjectClass: person\ncn: ann\nsn: Lee\n",
    )
    .expect_code(0, "entries in the live-added database");
    // A writing tool and the server exclude each other through the data directory's lock, also
    // for a database outside it.
    let out = s.canopy_tool("reindex", &[]);
    assert_eq!(out.code, 1, "reindex beside the server: {}", out.stderr);
    assert!(
        out.stderr.contains("in use by canopy process"),
        "{}",
        out.stderr
    );
    s.terminate();
    let live_dns = |ldif: &str| {
        ldif.lines()
            .filter(|l| l.starts_with("dn: "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let want = [
        "dn: dc=live,dc=org",
        "dn: ou=people,dc=live,dc=org",
        "dn: cn=ann,ou=people,dc=live,dc=org",
    ];

    let out = s.canopy_tool("export", &[]);
    out.expect_code(0, "canopy export");
    assert_eq!(live_dns(&out.stdout), want, "export: {}", out.stdout);
    let out = s.canopy_tool("export", &["-b", "dc=live,dc=org"]);
    out.expect_code(0, "canopy export -b dc=live,dc=org");
    assert_eq!(live_dns(&out.stdout), want, "export -b: {}", out.stdout);
    let out = s.canopy_tool("verify", &[]);
    out.expect_code(0, "canopy verify");
    assert!(out.stderr.contains("verify: 3 entries"), "{}", out.stderr);

    let backup = s.dir().join("backup");
    let out = s.canopy_tool("backup", &[&backup.display().to_string()]);
    out.expect_code(0, "canopy backup");
    assert!(
        out.stdout.contains("backup of dc=live,dc=org (3 entries")
            && out.stdout.contains("with the cn=config store"),
        "the live-added database and the store that names it: {}",
        out.stdout
    );

    let config = s.canopy_tool("config", &["export"]);
    config.expect_code(0, "canopy config export");
    assert!(
        config.stdout.contains("suffix = \"dc=live,dc=org\"")
            && config
                .stdout
                .contains(&format!("directory = \"{}\"", directory.display())),
        "the first database's suffix and directory: {}",
        config.stdout
    );

    // Everything lost: the data directory and the database's own directory. The restore of the
    // backup with the same configuration file brings back both.
    std::fs::remove_dir_all(s.data_dir()).unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
    std::fs::create_dir_all(s.data_dir()).unwrap();
    let out = s.canopy_tool("restore", &[&backup.display().to_string()]);
    out.expect_code(0, "canopy restore");
    assert!(
        directory.join("data.mdb").is_file(),
        "restored into its own directory: {}",
        out.stdout
    );
    s.restart();
    assert_eq!(
        anonymous_count(&s, "dc=live,dc=org", "(objectClass=*)"),
        3,
        "the entries are back"
    );
    assert_eq!(values(&s, MDB1, "olcSuffix"), ["dc=live,dc=org"]);
    s.whoami(Via::Ldap, &boss)
        .expect_code(0, "its root DN binds after the restore");
    s.terminate();

    // The exported configuration reopens the database on a server of its own (a new data
    // directory, nothing live): the suffix and the directory come from the file.
    let exported = s.dir().join("exported.toml");
    std::fs::write(&exported, &config.stdout).unwrap();
    let fresh = s.dir().join("fresh-data");
    let mut cmd = server::canopy_command();
    cmd.args(["export", "--config", &exported.display().to_string()])
        .arg("--data")
        .arg(&fresh);
    let out = client::run(cmd, None);
    out.expect_code(0, "canopy export with the exported configuration");
    assert_eq!(live_dns(&out.stdout), want, "{}", out.stdout);
}
