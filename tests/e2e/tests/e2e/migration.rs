//! `canopy migrate` (docs/migration.md): a hand-written slapd.conf with two databases, access rules,
//! indexes, limits and a syncrepl consumer is translated, then Debian's slapd (from the slapd.conf) and
//! canopy (from the translation) serve the same LDIF data and must give the same answers to the same
//! searches as anonymous, a user, each database's root DN. A representative slapd.d (Debian's default
//! layout, tests/e2e/data/migrate/slapd.d) translates into a configuration `canopy serve --check` accepts.
//! These tests run both servers themselves, so they run once: in the canopy pass (skipped, with a line
//! saying so, when CANOPY_E2E_TARGET=slapd).

use canopy_e2e::tempdir::TempDir;
use canopy_e2e::*;
use std::path::{Path, PathBuf};

const OTHER: &str = "dc=other,dc=org";
const BOSS: &str = "cn=boss,dc=other,dc=org";

/// The slapd.conf under test; `@DIR@` is each server's scratch directory, `@PORT@` a closed loopback
/// port for the syncrepl consumer (slapd retries it harmlessly; canopy's table is checked, not run).
const SLAPD_CONF: &str = r#"# A hand-written slapd.conf: two databases, rules, indexes, limits, a consumer.
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload pw-sha2
moduleload argon2
moduleload pw-pbkdf2
pidfile @DIR@/slapd.pid
argsfile @DIR@/slapd.args
sizelimit 500
access to dn.exact="" by * read
access to dn.base="cn=Subschema" by * read

database mdb
suffix "dc=example,dc=com"
rootdn "cn=admin,dc=example,dc=com"
rootpw secret
directory @DIR@/data
maxsize 1073741824
index objectClass eq
index uid,cn,sn,mail eq,sub
index member,memberUid eq
access to attrs=userPassword
  by self write
  by anonymous auth
  by * none
access to dn.subtree="ou=groups,dc=example,dc=com"
  by users read
  by * none
access to attrs=mail,telephoneNumber by self read by users read by * none
access to * by self write by users read by anonymous read
limits anonymous size=4
limits dn.exact="uid=bob,ou=people,dc=example,dc=com" size=2
syncrepl rid=001 provider=ldap://127.0.0.1:@PORT@ searchbase="dc=example,dc=com"
  type=refreshOnly interval=00:01:00:00 bindmethod=simple
  binddn="cn=admin,dc=example,dc=com" credentials=secret retry="3600 +"

database mdb
suffix "dc=other,dc=org"
rootdn "cn=boss,dc=other,dc=org"
rootpw boss-pw
directory @DIR@/data/db2
index cn eq
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
sizelimit 3
"#;

const OTHER_LDIF: &str = "dn: dc=other,dc=org
objectClass: dcObject
objectClass: organization
dc: other
o: Other

dn: ou=people,dc=other,dc=org
objectClass: organizationalUnit
ou: people

dn: uid=ann,ou=people,dc=other,dc=org
objectClass: inetOrgPerson
uid: ann
cn: Ann
sn: Other
userPassword: ann-pw

dn: uid=ben,ou=people,dc=other,dc=org
objectClass: inetOrgPerson
uid: ben
cn: Ben
sn: Other

dn: uid=cy,ou=people,dc=other,dc=org
objectClass: inetOrgPerson
uid: cy
cn: Cy
sn: Other
";

/// False (with the reason printed) in the suite's slapd pass: these tests compare both servers already.
fn once() -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: the migration tests start slapd and canopy themselves");
        return false;
    }
    true
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `canopy migrate` with `args`; (exit code, the written TOML, stderr).
fn migrate(args: &[&str], out: &Path) -> (i32, String, String) {
    let mut cmd = server::canopy_command();
    cmd.arg("migrate").args(args).arg("--out").arg(out);
    let result = client::run(cmd, None);
    let toml = std::fs::read_to_string(out).unwrap_or_default();
    (result.code, toml, result.stderr)
}

/// `canopy serve --check --config FILE`.
fn check(path: &Path) -> Out {
    let mut cmd = server::canopy_command();
    cmd.arg("serve").arg("--check").arg("--config").arg(path);
    client::run(cmd, None)
}

/// The TOML without the replication keys (`server_id`, `updateref`, `[[syncrepl]]` tables), so that the
/// canopy compared with slapd is no consumer of the closed port the test's syncrepl line names (its
/// client writes would be referred); what is stripped is returned for its own checks.
fn split_replication(toml: &str) -> (String, String) {
    let (mut kept, mut replication) = (String::new(), String::new());
    let mut in_table = false;
    for line in toml.lines() {
        if line.starts_with("[[syncrepl]]") || line.starts_with("[[database.syncrepl]]") {
            in_table = true;
        } else if line.starts_with('[') || line.is_empty() {
            in_table = false;
        }
        let target =
            if in_table || line.starts_with("server_id =") || line.starts_with("updateref =") {
                &mut replication
            } else {
                &mut kept
            };
        target.push_str(line);
        target.push('\n');
    }
    (kept, replication)
}

#[test]
fn slapd_conf_translates_and_serves_the_same_answers() {
    if !once() {
        return;
    }
    let work = TempDir::new("migrate");
    let port = closed_port().to_string();
    let conf = SLAPD_CONF.replace("@PORT@", &port);
    let conf_path = work.path().join("slapd.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    let out = work.path().join("canopy.toml");
    let (code, toml, stderr) = migrate(&["--slapd-conf", conf_path.to_str().unwrap()], &out);
    // Everything in this file has a counterpart; the module, pid and size lines are notes.
    assert_eq!(code, 0, "migrate failed:\n{stderr}\n{toml}");
    assert!(
        stderr.contains("note:") && stderr.contains("moduleload back_mdb"),
        "{stderr}"
    );
    let (served, replication) = split_replication(&toml);
    assert!(
        replication.contains("[[syncrepl]]\nrid = 1\n")
            && replication.contains(&format!("provider = \"ldap://127.0.0.1:{port}\""))
            && replication.contains("type = \"refreshOnly\"")
            && replication.contains("interval = \"00:01:00:00\"")
            && replication.contains("retry = \"3600 +\""),
        "{replication}"
    );
    // The translation as canopy checks it (with the paths of this scratch directory).
    let checked = work.path().join("checked.toml");
    std::fs::write(
        &checked,
        served.replace("@DIR@", &work.path().display().to_string()),
    )
    .unwrap();
    check(&checked).expect_code(0, "serve --check of the translation");
    // And the whole translation, the consumer's table included.
    let full = work.path().join("full.toml");
    std::fs::write(
        &full,
        toml.replace("@DIR@", &work.path().display().to_string()),
    )
    .unwrap();
    check(&full).expect_code(0, "serve --check of the translation with [[syncrepl]]");

    let other = work.path().join("other.ldif");
    std::fs::write(&other, OTHER_LDIF).unwrap();
    let base = base_ldif();
    let loads: [(&str, &Path); 2] = [(SUFFIX, base.as_path()), (OTHER, other.as_path())];
    let slapd = Server::start_configured(Target::Slapd, &conf, &["data/db2"], &loads);
    let canopy = Server::start_configured(Target::Canopy, &served, &["data/db2"], &loads);

    let anonymous = Bind::Anonymous;
    let bob = Bind::user("bob");
    let alice = Bind::user("alice");
    let boss = Bind::Simple(BOSS.into(), "boss-pw".into());
    let ann = Bind::Simple("uid=ann,ou=people,dc=other,dc=org".into(), "ann-pw".into());
    let people = "ou=people,dc=example,dc=com";
    let queries: Vec<(&str, &Bind, Vec<&str>)> = vec![
        (
            "root DSE naming contexts",
            &anonymous,
            vec!["-b", "", "-s", "base", "namingContexts"],
        ),
        (
            "anonymous, one user",
            &anonymous,
            vec!["-b", SUFFIX, "(uid=alice)"],
        ),
        (
            "anonymous, beyond its size limit",
            &anonymous,
            vec!["-b", people, "-s", "one", "1.1"],
        ),
        (
            "anonymous, groups hidden",
            &anonymous,
            vec!["-b", SUFFIX, "(objectClass=groupOfNames)"],
        ),
        (
            "anonymous, groups base",
            &anonymous,
            vec!["-b", "ou=groups,dc=example,dc=com", "-s", "base"],
        ),
        (
            "anonymous, passwords and mail",
            &anonymous,
            vec!["-b", SUFFIX, "(uid=carol)", "userPassword", "mail"],
        ),
        ("anonymous, second database", &anonymous, vec!["-b", OTHER]),
        (
            "bob, limited to 2",
            &bob,
            vec!["-b", people, "-s", "one", "1.1"],
        ),
        (
            "bob, own password",
            &bob,
            vec!["-b", SUFFIX, "(uid=bob)", "userPassword", "mail"],
        ),
        (
            "bob, others' passwords",
            &bob,
            vec!["-b", SUFFIX, "(uid=carol)", "userPassword", "mail"],
        ),
        (
            "alice, groups",
            &alice,
            vec!["-b", "ou=groups,dc=example,dc=com", "(cn=staff)"],
        ),
        (
            "alice, users limit",
            &alice,
            vec!["-b", people, "-s", "one", "(uid=a*)", "uid"],
        ),
        (
            "alice, second database",
            &alice,
            vec!["-b", OTHER, "-s", "one"],
        ),
        (
            "alice, second database's size limit",
            &alice,
            vec!["-b", OTHER, "(objectClass=*)", "1.1"],
        ),
        (
            "root DN, everything",
            &Bind::Root,
            vec!["-b", SUFFIX, "(uid=*)", "uid", "userPassword"],
        ),
        (
            "root DN in the second database",
            &Bind::Root,
            vec!["-b", OTHER, "(uid=ann)", "userPassword"],
        ),
        (
            "second root DN",
            &boss,
            vec!["-b", OTHER, "(objectClass=*)", "userPassword"],
        ),
        (
            "ann, her password",
            &ann,
            vec!["-b", OTHER, "(uid=ann)", "userPassword"],
        ),
        (
            "ann, first database",
            &ann,
            vec!["-b", SUFFIX, "(uid=alice)", "cn", "mail"],
        ),
    ];
    let mut differences = Vec::new();
    for (what, bind, args) in &queries {
        let a = slapd.search(bind, args);
        let b = canopy.search(bind, args);
        // A size-limited answer may pick different entries; the count and the code must agree.
        let (left, right) = if a.code == 4 {
            (a.records().len().to_string(), b.records().len().to_string())
        } else {
            (ldif::sorted(&a.stdout), ldif::sorted(&b.stdout))
        };
        if a.code != b.code || left != right {
            differences.push(format!(
                "{what}: slapd {} / canopy {}\n--- slapd\n{left}{}\n--- canopy\n{right}{}",
                a.code, b.code, a.stderr, b.stderr
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "answers differ:\n{}\ntranslation:\n{toml}",
        differences.join("\n")
    );
    // Binds answer alike as well: a right and a wrong password in each database.
    for (dn, pw) in [
        (user_dn("alice"), "alice-pw"),
        (user_dn("alice"), "wrong"),
        ("uid=ann,ou=people,dc=other,dc=org".to_string(), "ann-pw"),
        (BOSS.to_string(), "boss-pw"),
        (BOSS.to_string(), "nope"),
    ] {
        let bind = Bind::Simple(dn.clone(), pw.into());
        assert_eq!(
            slapd.whoami(Via::Ldap, &bind).code,
            canopy.whoami(Via::Ldap, &bind).code,
            "bind as {dn} with {pw}"
        );
    }
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/migrate")
}

#[test]
fn debian_default_slapd_d_translates() {
    if !once() {
        return;
    }
    let work = TempDir::new("migrate-d");
    let tree = data_dir().join("slapd.d");
    let out = work.path().join("canopy.toml");
    let (code, toml, stderr) = migrate(&["--slapd-d", tree.to_str().unwrap()], &out);
    // cn=config's own access rule has no counterpart: listed, exit status 1, output still written.
    assert_eq!(code, 1, "{stderr}\n{toml}");
    assert!(
        stderr.contains("not translated: cn=config/olcDatabase={0}config.ldif:")
            && stderr.contains("olcAccess: {0}to * by dn.exact=gidNumber=0+uidNumber=0"),
        "{stderr}"
    );
    assert!(
        toml.contains("# NOT TRANSLATED (review each):\n# - cn=config/olcDatabase={0}config.ldif:")
    );
    for expected in [
        "suffix = \"dc=nodomain\"",
        "root_dn = \"cn=admin,dc=nodomain\"",
        "root_password = \"{SSHA}",
        "data_dir = \"/var/lib/ldap\"",
        "\"to attrs=userPassword by self write by anonymous auth by * none\",",
        "\"to attrs=shadowLastChange by self write by * read\",",
        "{ attr = \"cn\", kinds = [\"eq\"] },",
        "monitor = false",
    ] {
        assert!(toml.contains(expected), "{expected} missing from\n{toml}");
    }
    // The translation is a configuration canopy accepts (data_dir made writable for the check).
    let (served, _) = split_replication(&toml);
    let checked = work.path().join("checked.toml");
    let data = work.path().join("data");
    std::fs::write(
        &checked,
        served.replace(
            "\"/var/lib/ldap\"",
            &format!("{:?}", data.display().to_string()),
        ),
    )
    .unwrap();
    check(&checked).expect_code(0, "serve --check of the slapd.d translation");
    // Unreadable input: exit status 2, no output file.
    let missing = work.path().join("nothing-here");
    let (code, _, stderr) = migrate(
        &["--slapd-d", missing.to_str().unwrap()],
        &work.path().join("x.toml"),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(!work.path().join("x.toml").exists());
    let (code, _, _) = migrate(
        &["--slapd-conf", missing.to_str().unwrap()],
        &work.path().join("x.toml"),
    );
    assert_eq!(code, 2);
}

/// slapd's own conversion of the slapd.conf above into a slapd.d (`slaptest -f -F`) translates into
/// the same configuration as the slapd.conf itself, comments and schema paths aside.
#[test]
fn slaptest_converted_slapd_d_translates_like_its_slapd_conf() {
    if !once() {
        return;
    }
    let work = TempDir::new("migrate-slaptest");
    let conf = SLAPD_CONF
        .replace("@PORT@", "9")
        .replace("@DIR@", &work.path().display().to_string());
    let conf_path = work.path().join("slapd.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    std::fs::create_dir_all(work.path().join("data/db2")).unwrap();
    let tree = work.path().join("slapd.d");
    std::fs::create_dir_all(&tree).unwrap();
    let mut cmd = std::process::Command::new("/usr/sbin/slaptest");
    cmd.arg("-n")
        .arg("0")
        .arg("-f")
        .arg(&conf_path)
        .arg("-F")
        .arg(&tree);
    client::run(cmd, None).expect_code(0, "slaptest -n 0 -f slapd.conf -F slapd.d");
    let (code_conf, from_conf, e1) = migrate(
        &["--slapd-conf", conf_path.to_str().unwrap()],
        &work.path().join("a.toml"),
    );
    let (code_d, from_d, e2) = migrate(
        &["--slapd-d", tree.to_str().unwrap()],
        &work.path().join("b.toml"),
    );
    assert_eq!(code_conf, 0, "{e1}");
    // slaptest spells out every default (cn=config's database, thread and index tuning...): notes only.
    assert_eq!(code_d, 0, "{e2}");
    // Lines in order, but slapd.d may list index attributes in another order.
    let settings = |toml: &str| -> Vec<String> {
        let mut lines: Vec<String> = toml
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(
        settings(&from_conf),
        settings(&from_d),
        "\nslapd.d stderr:\n{e2}"
    );
}

/// Debian's own default configuration: the postinst's template (/usr/share/slapd/slapd.init.ldif) loaded
/// into a slapd.d by `slapadd -F ... -b cn=config` as the postinst does, with the suffix dc=example,dc=com
/// and the root password "secret" (hashed). slapd serves from that tree, canopy from its translation, both on
/// base.ldif; searches as anonymous, users, the root DN and the ldapi root peer (which Debian's frontend
/// rule gives manage) must answer alike. The hand-written copy in tests/e2e/data translates the same way.
#[test]
fn debian_postinst_slapd_d_serves_like_slapd() {
    if !once() {
        return;
    }
    let template = Path::new("/usr/share/slapd/slapd.init.ldif");
    let Ok(init) = std::fs::read_to_string(template) else {
        panic!("{} is missing: install Debian's slapd", template.display());
    };
    let init = init
        .replace("@SUFFIX@", SUFFIX)
        // slappasswd -s secret
        .replace("@PASSWORD@", "{SSHA}2R+ZlobMnamN8EwKFdak7Dckz6jnWkwp")
        .replace("/var/lib/ldap", "@DIR@/data")
        // The pid and args files in the scratch directory, not /var/run/slapd.
        .replace("/var/run/slapd/", "@DIR@/");
    let base = base_ldif();
    let loads: [(&str, &Path); 1] = [(SUFFIX, base.as_path())];
    let slapd = Server::start_slapd_d(&init, &["data"], &loads);

    let work = TempDir::new("migrate-debian");
    let out = work.path().join("canopy.toml");
    let tree = slapd.dir().join("slapd.d");
    let (code, toml, stderr) = migrate(&["--slapd-d", tree.to_str().unwrap()], &out);
    // Only cn=config's own rule and root DN are left out.
    assert_eq!(code, 1, "{stderr}\n{toml}");
    let left: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("not translated: "))
        .collect();
    assert_eq!(left.len(), 2, "{stderr}");
    assert!(
        left.iter()
            .all(|l| l.contains("olcDatabase={0}config.ldif")),
        "{stderr}"
    );
    let (served, replication) = split_replication(&toml);
    assert_eq!(replication, "");
    check(&out).expect_code(0, "serve --check of Debian's default translated");

    // The test data's copy of this tree gives the same settings (its suffix and password aside).
    let (_, copy, _) = migrate(
        &["--slapd-d", data_dir().join("slapd.d").to_str().unwrap()],
        &work.path().join("copy.toml"),
    );
    let settings = |toml: &str| -> Vec<String> {
        toml.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter(|l| !l.starts_with("data_dir") && !l.starts_with("root_password"))
            .map(|l| l.replace("dc=nodomain", SUFFIX))
            .collect()
    };
    assert_eq!(settings(&toml), settings(&copy));

    let canopy = Server::start_configured(Target::Canopy, &served, &[], &loads);
    let alice = Bind::user("alice");
    let bob = Bind::user("bob");
    let queries: Vec<(&str, &Bind, Vec<&str>)> = vec![
        (
            "anonymous, everything",
            &Bind::Anonymous,
            vec!["-b", SUFFIX],
        ),
        (
            "anonymous, passwords",
            &Bind::Anonymous,
            vec!["-b", SUFFIX, "(uid=alice)", "userPassword"],
        ),
        (
            "alice, her password",
            &alice,
            vec!["-b", SUFFIX, "(uid=alice)", "userPassword"],
        ),
        (
            "bob, alice's password",
            &bob,
            vec!["-b", SUFFIX, "(uid=alice)", "userPassword", "cn"],
        ),
        (
            "root DN, passwords",
            &Bind::Root,
            vec!["-b", SUFFIX, "(uid=*)", "userPassword"],
        ),
        (
            "ldapi root peer, passwords",
            &Bind::External,
            vec!["-b", SUFFIX, "(uid=*)", "userPassword"],
        ),
    ];
    for (what, bind, args) in &queries {
        let a = slapd.search(bind, args);
        let b = canopy.search(bind, args);
        assert_eq!(
            (a.code, ldif::sorted(&a.stdout)),
            (b.code, ldif::sorted(&b.stdout)),
            "{what}\nslapd: {}\ncanopy: {}",
            a.stderr,
            b.stderr
        );
    }
    // The answers compared are not empty ones. The frontend's peercred rule comes after the database's
    // rules, so the ldapi root peer, like everyone but alice and the root DN, reads no password (on
    // both servers, as compared above); the root DN reads them all.
    let root = canopy.search(&Bind::Root, &["-b", SUFFIX, "(uid=alice)", "userPassword"]);
    assert_eq!(
        root.records()
            .first()
            .map(|r| r.values("userPassword").len()),
        Some(1),
        "{root:?}"
    );
    let anonymous = canopy.search(
        &Bind::Anonymous,
        &["-b", SUFFIX, "(uid=alice)", "userPassword", "cn"],
    );
    let record = anonymous.records();
    assert!(
        record.len() == 1
            && record[0].values("userPassword").is_empty()
            && !record[0].values("cn").is_empty()
    );
    // shadowLastChange: alice may write her own, bob may not.
    let change = "dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\nreplace: shadowLastChange\nshadowLastChange: 20000\n";
    assert_eq!(
        slapd.modify(&alice, change).code,
        canopy.modify(&alice, change).code
    );
    assert_eq!(
        slapd.modify(&bob, change).code,
        canopy.modify(&bob, change).code
    );
}

/// Every overlay Canopy has, with options, in a slapd.conf and in the slapd.d `slaptest` makes of it
/// (olcMemberOfDangling, olcRefintAttribute, olcUniqueURI, olcConstraintAttribute, olcDynListAttrSet,
/// olcPPolicyDefault, olcAuditlogFile...): both translate to the same `[[overlay]]` tables (the slapd.d one
/// spells out defaults too), and `canopy serve --check` accepts them.
#[test]
fn overlays_translate_from_slapd_conf_and_slapd_d_alike() {
    if !once() {
        return;
    }
    let work = TempDir::new("migrate-overlays");
    let dir = work.path().display().to_string();
    let conf = format!(
        r#"include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/dyngroup.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
moduleload refint
moduleload unique
moduleload constraint
moduleload auditlog
moduleload dynlist
moduleload ppolicy
database mdb
suffix "dc=example,dc=com"
rootdn "cn=admin,dc=example,dc=com"
directory {dir}/data
overlay memberof
memberof-refint TRUE
memberof-dangling error
overlay refint
refint_attributes member owner
refint_nothing "cn=nobody,dc=example,dc=com"
overlay unique
unique_uri ldap:///ou=people,dc=example,dc=com?uid,mail?sub
overlay constraint
constraint_attribute mail regex "^[a-z]+@example\\.com$"
overlay dynlist
dynlist-attrset groupOfURLs memberURL member+memberOf
overlay ppolicy
ppolicy_default "cn=default,ou=policies,dc=example,dc=com"
ppolicy_use_lockout
overlay auditlog
auditlog {dir}/audit.ldif
"#
    );
    let conf_path = work.path().join("slapd.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    std::fs::create_dir_all(work.path().join("data")).unwrap();
    let tree = work.path().join("slapd.d");
    std::fs::create_dir_all(&tree).unwrap();
    let mut cmd = std::process::Command::new("/usr/sbin/slaptest");
    cmd.arg("-n")
        .arg("0")
        .arg("-f")
        .arg(&conf_path)
        .arg("-F")
        .arg(&tree);
    client::run(cmd, None).expect_code(0, "slaptest -n 0 -f slapd.conf -F slapd.d");
    let a = work.path().join("a.toml");
    let b = work.path().join("b.toml");
    let (code_conf, from_conf, e1) = migrate(&["--slapd-conf", conf_path.to_str().unwrap()], &a);
    let (code_d, from_d, e2) = migrate(&["--slapd-d", tree.to_str().unwrap()], &b);
    assert_eq!((code_conf, code_d), (0, 0), "{e1}\n{e2}");
    assert!(
        from_conf.contains("constraints = [\"mail regex ^[a-z]+@example\\\\.com$\"]"),
        "{from_conf}"
    );
    // slapd writes the regular expression into slapd.d as it holds it (`\.`), and splits the value
    // like a slapd.conf line when it reads it back, backslash escapes included: the slapd.d says `.`.
    assert!(
        from_d.contains("constraints = [\"mail regex ^[a-z]+@example.com$\"]"),
        "{from_d}"
    );
    for line in from_conf.lines() {
        if line.starts_with('#')
            || line.is_empty()
            || line.starts_with("schema_files")
            || line.starts_with("constraints")
        {
            continue;
        }
        assert!(
            from_d.lines().any(|l| l == line),
            "{line} missing from the slapd.d translation:\n{from_d}"
        );
    }
    check(&a).expect_code(0, "serve --check of the slapd.conf translation");
    check(&b).expect_code(0, "serve --check of the slapd.d translation");
}
