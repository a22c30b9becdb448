//! Tests of the translation: slapd.conf texts in, TOML out, read back by Canopy's own configuration parser.

use super::access::requote;
use super::render::q;
use super::*;

fn directives(text: &str) -> Vec<Directive> {
    conf::logical_lines(text)
        .into_iter()
        .map(|(line, logical)| {
            let mut args = conf::words(&logical).unwrap();
            let name = args.remove(0);
            Directive {
                origin: format!("slapd.conf:{line}"),
                name,
                args,
                text: logical,
            }
        })
        .collect()
}

fn parse(toml: &str) -> canopy_server::Config {
    canopy_server::Config::parse(toml, "migrated.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"))
}

const TWO_DATABASES: &str = r#"
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /srv/schema/local.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile /run/slapd.pid
serverID 7
password-hash {SSHA}
authz-regexp "uid=([^,]*),cn=[^,]*,cn=auth" "ldap:///dc=example,dc=com??sub?(uid=$1)"
authz-policy to
TLSCertificateFile /etc/ssl/c.pem
TLSCertificateKeyFile /etc/ssl/k.pem
TLSCACertificateFile /etc/ssl/ca.pem
TLSVerifyClient try
sizelimit 100
access to dn.exact="" by * read

database mdb
suffix "ou=archive,dc=example,dc=com"
subordinate
rootdn "cn=admin,dc=example,dc=com"
directory /var/lib/ldap/archive
readonly on
access to * by users read
  by * none

database mdb
suffix "dc=example,dc=com"
rootdn "cn=admin,dc=example,dc=com"
rootpw {SSHA}abcdefgh
directory /var/lib/ldap
index objectClass eq
index cn,sn eq,sub
index cn pres
access to attrs=userPassword by self write by anonymous auth by * none
access to dn.subtree="ou=people,dc=example,dc=com" by group="cn=admins, ou=groups,dc=example,dc=com" write by * read
limits anonymous size.soft=10 size.hard=20 time=5
limits dn.exact="cn=rep,dc=example,dc=com" size=unlimited size.unchecked=1000
timelimit 60
syncrepl rid=001 provider=ldap://127.0.0.1:9 searchbase="dc=example,dc=com" type=refreshAndPersist
  bindmethod=simple binddn="cn=rep,dc=example,dc=com" credentials=secret retry="5 5 60 +" schemachecking=on
updateref ldap://127.0.0.1:9
overlay memberof
memberof-dangling error
memberof-refint TRUE
overlay refint
refint_attributes member owner
overlay pcache
pcache mdb 100 2 1000 100

database monitor
"#;

#[test]
fn two_databases_translate_in_canopy_order() {
    let m = translate(&directives(TWO_DATABASES));
    let c = parse(&m.toml);
    // The outer database comes first (slapd lists the inner one first).
    assert_eq!(c.suffix, "dc=example,dc=com");
    assert_eq!(c.root_password.as_deref(), Some("{SSHA}abcdefgh"));
    assert_eq!(c.data_dir, std::path::PathBuf::from("/var/lib/ldap"));
    assert_eq!(c.database.len(), 1);
    let archive = &c.database[0];
    assert_eq!(archive.suffix, "ou=archive,dc=example,dc=com");
    assert_eq!(archive.subordinate, Some(true));
    assert!(archive.read_only);
    assert_eq!(archive.access, ["to * by users read by * none"]);
    // The frontend rule for the root DSE is Canopy's own behaviour; not appended.
    assert_eq!(
        c.access,
        [
            "to attrs=userPassword by self write by anonymous auth by * none",
            "to dn.subtree=ou=people,dc=example,dc=com by group=\"cn=admins, ou=groups,dc=example,dc=com\" write by * read",
        ]
    );
    let idx: Vec<(String, Vec<String>)> = c
        .indexes
        .iter()
        .map(|i| (i.attr.clone(), i.kinds.clone()))
        .collect();
    assert_eq!(
        idx,
        [
            ("objectClass".to_string(), vec!["eq".to_string()]),
            (
                "cn".to_string(),
                vec!["eq".into(), "sub".into(), "pres".into()]
            ),
            ("sn".to_string(), vec!["eq".into(), "sub".into()]),
            // The consumer finds what it receives by entryUUID.
            ("entryUUID".to_string(), vec!["eq".into()]),
        ]
    );
    assert_eq!(
        c.schema_files,
        [std::path::PathBuf::from("/srv/schema/local.schema")]
    );
    assert_eq!(c.builtin_schema, ["core", "cosine"]);
    assert_eq!(c.password_hash, "{SSHA}");
    assert_eq!(c.sasl.authz_regexp.len(), 1);
    assert_eq!(c.sasl.authz_policy, canopy_server::authz::AuthzPolicy::To);
    assert_eq!(
        c.sasl.authz_regexp[0].replace,
        "ldap:///dc=example,dc=com??sub?(uid=$1)"
    );
    assert_eq!(
        c.tls.cert_file.as_deref(),
        Some(std::path::Path::new("/etc/ssl/c.pem"))
    );
    assert_eq!(
        c.tls.verify_client,
        canopy_server::config::VerifyClient::Try
    );
    assert_eq!(c.limits.size_limit, 100);
    assert_eq!(c.limits.time_limit, 60);
    assert_eq!(c.limits.rules.len(), 2);
    assert_eq!(c.limits.rules[0].who, "anonymous");
    assert_eq!(c.limits.rules[1].who, "dn.exact:cn=rep,dc=example,dc=com");
    assert!(c.monitor);
    // No rule of its own, none in the frontend (the root DSE's is Canopy's anyway): slapd lets
    // everyone read cn=Monitor.
    assert_eq!(c.monitor_access, vec!["to * by * read".to_string()]);
    assert_eq!(c.overlay.len(), 2);
    assert_eq!(c.overlay[0].name, "memberof");
    assert_eq!(
        c.overlay[0]
            .options
            .get("dangling")
            .and_then(|v| v.as_str()),
        Some("error")
    );
    assert_eq!(
        c.overlay[0].options.get("refint").and_then(|v| v.as_bool()),
        Some(true)
    );
    assert_eq!(
        c.overlay[1]
            .options
            .get("attributes")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The archive database inherits the frontend's size limit but not database 1's time limit.
    assert!(
        m.toml.contains("[database.limits]\ntime_limit = 3600\n"),
        "{}",
        m.toml
    );
    // Replication keys, as issue 11 names them.
    assert!(m.toml.contains("server_id = 7\n"));
    assert!(m.toml.contains("updateref = \"ldap://127.0.0.1:9\"\n"));
    assert!(m.toml.contains(
        "[[syncrepl]]\nrid = 1\nprovider = \"ldap://127.0.0.1:9\"\nsearchbase = \"dc=example,dc=com\"\n\
         type = \"refreshAndPersist\"\nbindmethod = \"simple\"\nbinddn = \"cn=rep,dc=example,dc=com\"\n\
         credentials = \"secret\"\nretry = \"5 5 60 +\"\n"
    ), "{}", m.toml);
    // What was left out, by line.
    let left: Vec<(&str, &str)> = m
        .left_out
        .iter()
        .map(|r| (r.origin.as_str(), r.text.as_str()))
        .collect();
    assert!(
        left.iter()
            .any(|(o, t)| o.ends_with(":41") && t.starts_with("syncrepl")),
        "{left:?}"
    );
    assert!(
        left.iter()
            .any(|(o, t)| o.ends_with(":49") && *t == "overlay pcache"),
        "{left:?}"
    );
    assert!(
        left.iter()
            .any(|(o, t)| o.ends_with(":50") && *t == "pcache mdb 100 2 1000 100"),
        "{left:?}"
    );
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(m.toml.contains("# - slapd.conf:49: overlay pcache\n"));
    // Harmless settings are notes, not omissions.
    assert!(m.notes.iter().any(|n| n.text == "pidfile /run/slapd.pid"));
    assert!(m.notes.iter().any(|n| n.text == "moduleload back_mdb"));
}

#[test]
fn defaults_and_nothing_left_out() {
    let m = translate(&directives("database mdb\nsuffix dc=x\ndirectory /d\n"));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    assert!(m.toml.contains("# Everything was translated."));
    let c = parse(&m.toml);
    // slapd with no rules lets everyone read everything; no monitor database, no monitor.
    assert_eq!(c.access, ["to * by * read"]);
    assert!(!c.monitor);
    assert_eq!(c.root_dn, "");
}

#[test]
fn unsupported_things_are_listed_with_reasons() {
    let text = "moduleload back_sql\ndatabase ldap\nuri ldap://x\ndatabase mdb\nsuffix dc=x\n\
                access to * by domain=x read\naccess to * by sockurl=x read\nlimits dn.regex=x size=1\n\
                index cn bogus\nsizelimit size.hard=5\nbogus directive\nTLSCipherSuite HIGH\n";
    let m = translate(&directives(text));
    let lines: Vec<&str> = m.left_out.iter().map(|r| r.origin.as_str()).collect();
    assert_eq!(
        lines,
        [
            "slapd.conf:1",
            "slapd.conf:2",
            "slapd.conf:3",
            "slapd.conf:6",
            "slapd.conf:7",
            "slapd.conf:8",
            "slapd.conf:9",
            "slapd.conf:11",
            "slapd.conf:12"
        ]
    );
    assert!(m.left_out[3].reason.contains("`domain` clauses"));
    assert!(m.left_out[4].reason.contains("`sockurl` clauses"));
    // The dropped rules stay visible as comments; the rest still parses.
    assert!(m
        .toml
        .contains("# left out (see the top of this file): to * by domain=x read"));
    parse(&m.toml);
    let tls = translate(&directives(
        "TLSVerifyClient demand\ndatabase mdb\nsuffix dc=x\n",
    ));
    assert_eq!(tls.left_out.len(), 1);
    assert!(tls.left_out[0].reason.contains("ca_file"));
    parse(&tls.toml);
}

/// The clauses of issue 34 (`$N` in DN patterns too) are kept, not left out; a rule Canopy's compiler refuses still is, with its
/// reason (`!` names an object class, and `cn` is none).
#[test]
fn dnattr_real_level_negated_lists_and_expansions_are_kept() {
    let kept = [
        "to dn.subtree=ou=groups,dc=x by dnattr=member write by * break",
        "to dn.one=dc=x attrs=!person by realdn.level{2}=dc=x read by realanonymous auth",
        "to * by realself write by realusers read by realdnattr=owner read",
        "to dn.regex=^(.+,)?uid=([^,]+),dc=x$ by dn.exact,expand=uid=$2,dc=x write",
    ];
    let mut text = String::from("database mdb\nsuffix dc=x\n");
    for rule in kept {
        text.push_str(&format!("access {rule}\n"));
    }
    text.push_str("access to attrs=!cn by * read\naccess to * by self.level{1} read\n");
    text.push_str("access to dn.regex=^cn=([^,]+),dc=x$ by group.expand=cn=$1,dc=x read\n");
    let m = translate(&directives(&text));
    let reasons: Vec<&str> = m.left_out.iter().map(|r| r.reason.as_str()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("`group.expand`")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("`self.level{n}`")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("object class")),
        "{reasons:?}"
    );
    let c = parse(&m.toml);
    assert_eq!(c.access, kept);
}

#[test]
fn config_and_frontend_sections() {
    let text = "database frontend\naccess to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * break\n\
                sizelimit 42\ndatabase config\naccess to * by dn.exact=cn=x manage\ndatabase mdb\nsuffix dc=x\naccess to * by * read\n";
    let m = translate(&directives(text));
    let c = parse(&m.toml);
    assert_eq!(
        c.access,
        ["to * by * read", "to * by dn.exact=gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth manage by * break"]
    );
    assert_eq!(c.limits.size_limit, 42);
    assert_eq!(m.left_out.len(), 1);
    assert_eq!(m.left_out[0].origin, "slapd.conf:5");
}

#[test]
fn requoting_keeps_words_whole() {
    assert_eq!(requote("dn.exact=cn=a b,dc=x"), "dn.exact=\"cn=a b,dc=x\"");
    assert_eq!(requote("by"), "by");
    assert_eq!(requote("val=a\"b c"), "val=\"a\\\"b c\"");
    assert_eq!(requote(""), "\"\"");
    assert_eq!(q("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
}

#[test]
fn norm_matches_slapd_and_olc_names() {
    assert_eq!(norm("password-hash"), norm("passwordhash"));
    assert_eq!(norm("refint_attributes"), "refintattributes");
    assert_eq!(norm("TLSCertificateFile"), "tlscertificatefile");
}

#[test]
fn slapd_d_tree_translates() {
    let dir = std::env::temp_dir().join(format!("canopy-migrate-d-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sub = dir.join("cn=config");
    std::fs::create_dir_all(sub.join("cn=schema")).unwrap();
    std::fs::create_dir_all(sub.join("olcDatabase={1}mdb")).unwrap();
    std::fs::write(dir.join("cn=config.ldif"), "# AUTO-GENERATED FILE - DO NOT EDIT!! Use ldapmodify.\n# CRC32 0\ndn: cn=config\nobjectClass: olcGlobal\ncn: config\nolcPidFile: /run/slapd.pid\nolcServerID: 2\n").unwrap();
    std::fs::write(
        sub.join("cn=schema").join("cn={0}core.ldif"),
        "dn: cn={0}core\n",
    )
    .unwrap();
    std::fs::write(
        sub.join("cn=schema").join("cn={4}local.ldif"),
        "dn: cn={4}local\n",
    )
    .unwrap();
    std::fs::write(sub.join("olcDatabase={-1}frontend.ldif"), "dn: olcDatabase={-1}frontend\nolcAccess: {0}to dn.exact=\"\" by * read\nolcPasswordHash: {SSHA}\n").unwrap();
    std::fs::write(sub.join("olcDatabase={1}mdb.ldif"), "dn: olcDatabase={1}mdb\nolcDatabase: {1}mdb\nolcSuffix: dc=nodomain\nolcRootDN: cn=admin,dc=nodomain\nolcRootPW:: e1NTSEF9eHl6\nolcDbIndex: cn,uid eq\nolcAccess: {0}to attrs=userPassword by self write by anonymous auth by * none\nolcAccess: {1}to * by * read\nolcLimits: {0}users size=7\nolcDbMaxSize: 1073741824\n").unwrap();
    std::fs::write(sub.join("olcDatabase={1}mdb").join("olcOverlay={0}memberof.ldif"), "dn: olcOverlay={0}memberof\nolcOverlay: {0}memberof\nolcMemberOfDangling: drop\nolcMemberOfRefInt: TRUE\n").unwrap();
    // A glued subordinate with a consumer of its own (olcSyncrepl of olcDatabase={2}mdb).
    std::fs::write(sub.join("olcDatabase={2}mdb.ldif"), "dn: olcDatabase={2}mdb\nolcDatabase: {2}mdb\nolcSuffix: ou=sub,dc=nodomain\nolcSubordinate: TRUE\nolcRootDN: cn=admin,dc=nodomain\nolcDbDirectory: /var/lib/ldap/sub\nolcDbIndex: entryUUID eq\nolcSyncrepl: {0}rid=007 provider=ldap://127.0.0.1:9 bindmethod=simple binddn=\"cn=r,dc=nodomain\" credentials=s searchbase=\"ou=sub,dc=nodomain\" type=refreshAndPersist retry=\"5 +\"\nolcUpdateRef: ldap://127.0.0.1:9\n").unwrap();
    let m = from_slapd_d(&dir).unwrap();
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert_eq!(c.suffix, "dc=nodomain");
    assert!(c.syncrepl.is_empty(), "{}", m.toml);
    let glued = &c.database[0];
    assert_eq!(glued.suffix, "ou=sub,dc=nodomain");
    assert_eq!(glued.syncrepl.len(), 1, "{}", m.toml);
    assert_eq!(glued.syncrepl[0].rid, 7);
    assert_eq!(glued.syncrepl[0].kind, "refreshAndPersist");
    assert_eq!(glued.updateref.as_deref(), Some("ldap://127.0.0.1:9"));
    assert_eq!(c.root_password.as_deref(), Some("{SSHA}xyz"));
    assert_eq!(c.access.len(), 2);
    assert_eq!(c.schema_files.len(), 1);
    assert!(c.schema_files[0].ends_with("cn={4}local.ldif"));
    assert_eq!(c.limits.rules[0].who, "users");
    assert_eq!(
        c.overlay[0]
            .options
            .get("dangling")
            .and_then(|v| v.as_str()),
        Some("drop")
    );
    assert!(m.toml.contains("server_id = 2"));
    assert!(from_slapd_d(&dir.join("cn=config")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rules_canopy_refuses_are_left_out_with_its_reason() {
    let text = "database mdb\nsuffix dc=x\naccess to dn.regex=\"(\" by * read\n\
                access to attrs=cn by dn.exact=\"not a dn\" read\naccess to * by * read\n";
    let m = translate(&directives(text));
    let lines: Vec<&str> = m.left_out.iter().map(|r| r.origin.as_str()).collect();
    assert_eq!(lines, ["slapd.conf:3", "slapd.conf:4"], "{:?}", m.left_out);
    assert!(m
        .left_out
        .iter()
        .all(|r| r.reason.starts_with("Canopy refuses this rule (")));
    let c = parse(&m.toml);
    assert_eq!(c.access, ["to * by * read"]);
    assert!(m
        .toml
        .contains("# left out (see the top of this file): to dn.regex=( by * read"));
}

#[test]
fn after_an_overlay_canopy_lacks_known_directives_still_count() {
    let text = "overlay rwm\nrwm-suffixmassage a b\nTLSCertificateFile /c.pem\nTLSCertificateKeyFile /k.pem\n\
                database mdb\nsuffix dc=x\noverlay pcache\npcacheAttrset 0 cn\nindex cn eq\n\
                database mdb\nsuffix dc=y\nsyncrepl rid=2 provider=ldap://127.0.0.1:9 searchbase=dc=y\n";
    let m = translate(&directives(text));
    let lines: Vec<&str> = m.left_out.iter().map(|r| r.origin.as_str()).collect();
    assert_eq!(
        lines,
        [
            "slapd.conf:1",
            "slapd.conf:2",
            "slapd.conf:7",
            "slapd.conf:8",
        ],
        "{:?}",
        m.left_out
    );
    assert!(
        m.toml
            .contains("[tls]\ncert_file = \"/c.pem\"\nkey_file = \"/k.pem\"\n"),
        "{}",
        m.toml
    );
    assert!(
        m.toml
            .contains("indexes = [\n  { attr = \"cn\", kinds = [\"eq\"] },\n]"),
        "{}",
        m.toml
    );
    // A later database's consumer is that database's `[[database.syncrepl]]` table.
    assert!(
        m.toml.contains("\n[[database.syncrepl]]\nrid = 2\n"),
        "{}",
        m.toml
    );
    let c = parse(&m.toml);
    assert_eq!(c.database.len(), 1, "{}", m.toml);
    assert_eq!(c.database[0].syncrepl.len(), 1, "{}", m.toml);
    assert!(c.syncrepl.is_empty());
}

const DELTA: &str = r#"
database mdb
suffix cn=accesslog
directory /var/lib/ldap/accesslog
rootdn cn=accesslog
index reqStart eq
access to * by dn.exact="cn=replicator,dc=example,dc=com" read by * none
overlay syncprov

database mdb
suffix "dc=example,dc=com"
rootdn "cn=admin,dc=example,dc=com"
directory /var/lib/ldap/data
overlay syncprov
overlay accesslog
logdb cn=accesslog
logops writes
logsuccess TRUE
logpurge 07+00:00 01+00:00
syncrepl rid=002 provider=ldap://127.0.0.1:9 searchbase="dc=example,dc=com" syncdata=accesslog logbase="cn=accesslog" logfilter="(&(objectClass=auditWriteObject)(reqResult=0))"
"#;

#[test]
fn accesslog_and_delta_syncrepl() {
    let m = translate(&directives(DELTA));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    // The log database is the overlay's own: no [[database]] of its own, its rules on the overlay.
    assert!(!m.toml.contains("cn=accesslog\"\ndata_dir"), "{}", m.toml);
    assert!(!m.toml.contains("[[database]]"), "{}", m.toml);
    for line in [
        "name = \"accesslog\"\n",
        "logdb = \"cn=accesslog\"\n",
        "logsuccess = true\n",
        "logpurge = [\"07+00:00 01+00:00\"]\n",
        "syncdata = \"accesslog\"\n",
        "logbase = \"cn=accesslog\"\n",
    ] {
        assert!(m.toml.contains(line), "{line}{}", m.toml);
    }
    assert!(m.toml.contains("read by * none"), "{}", m.toml);
    assert!(m.notes.iter().any(|n| n.reason.contains("log database")));
    parse(&m.toml);
}

/// `rootpw` of `database config` (and its `rootdn`, cn=config by default) becomes the root of Canopy's
/// live configuration tree: OpenLDAP's scripts bind as cn=config with it (issue 31).
#[test]
fn config_database_root_becomes_the_config_root() {
    let conf = "database config\nrootpw secret\ndatabase mdb\nsuffix dc=x\nrootdn cn=admin,dc=x\n";
    let m = translate(&directives(conf));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert_eq!(c.config_root_dn.as_deref(), Some("cn=config"));
    assert_eq!(c.config_root_password.as_deref(), Some("secret"));
    let m = translate(&directives(
        "database config\nrootdn cn=boss,cn=config\nrootpw {SSHA}xyz\ndatabase mdb\nsuffix dc=x\n",
    ));
    let c = parse(&m.toml);
    assert_eq!(c.config_root_dn.as_deref(), Some("cn=boss,cn=config"));
    assert_eq!(c.config_root_password.as_deref(), Some("{SSHA}xyz"));
    // Without a password the config database has no root to bind as, in slapd as here.
    let c = parse(&translate(&directives("database config\ndatabase mdb\nsuffix dc=x\n")).toml);
    assert_eq!(c.config_root_password, None);
    // A root DN without one (bound through SASL in slapd) is reported, not dropped in silence.
    let m = translate(&directives(
        "database config\nrootdn cn=admin,cn=config\ndatabase mdb\nsuffix dc=x\n",
    ));
    assert_eq!(m.left_out.len(), 1, "{:?}", m.left_out);
    assert_eq!(parse(&m.toml).config_root_dn, None);
}

/// A slapd.d with only the config database (databases come later over LDAP, as in OpenLDAP's
/// test049): the config root is still carried over.
#[test]
fn config_root_without_a_data_database() {
    let m = translate(&directives("database config\nrootpw secret\n"));
    let c = parse(&m.toml);
    assert_eq!(c.config_root_password.as_deref(), Some("secret"));
}

/// `database monitor`'s access lines become `monitor_access`, followed by the frontend's, as slapd
/// appends the frontend's rules to every database's.
#[test]
fn monitor_access_is_translated() {
    let text = "access to * by users read\ndatabase mdb\nsuffix dc=x\n\
                database monitor\naccess to dn.subtree=\"cn=Monitor\" by dn.exact=\"cn=mon,dc=x\" read by * none\n";
    let m = translate(&directives(text));
    let c = parse(&m.toml);
    assert_eq!(
        c.monitor_access,
        vec![
            "to dn.subtree=cn=Monitor by dn.exact=cn=mon,dc=x read by * none".to_string(),
            "to * by users read".to_string(),
        ]
    );
}

/// slapd's default referral becomes `referral`.
#[test]
fn default_referral_is_translated() {
    let text = "referral \"ldap://localhost:29011/\"\ndatabase mdb\nsuffix dc=x\n";
    let m = translate(&directives(text));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert_eq!(c.referral.as_deref(), Some("ldap://localhost:29011/"));
}

/// `multiprovider on` (and its old name `mirrormode on`) on the database with the consumers becomes
/// Canopy's `multiprovider = true`, in that database's `[[database]]` table for a later one (issue 31:
/// OpenLDAP's delta multi-provider scripts).
#[test]
fn multiprovider_is_translated() {
    let conf = format!("serverID 1\n{DELTA}multiprovider on\n");
    let m = translate(&directives(&conf));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert!(c.multiprovider, "{}", m.toml);
    let mirror =
        format!("serverID 2\n{DELTA}").replace("syncrepl rid", "mirrormode TRUE\nsyncrepl rid");
    let m = translate(&directives(&mirror));
    assert!(parse(&m.toml).multiprovider, "{}", m.toml);
    let apart = "serverID 3\ndatabase mdb\nsuffix dc=x\nrootdn cn=admin,dc=x\n\
                 database mdb\nsuffix dc=y\nindex cn eq\n\
                 syncrepl rid=1 provider=ldap://127.0.0.1:9 searchbase=dc=y\n\
                 multiprovider on\nupdateref ldap://127.0.0.1:9\n";
    let m = translate(&directives(apart));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert!(!c.multiprovider, "{}", m.toml);
    let second = &c.database[0];
    assert!(second.multiprovider, "{}", m.toml);
    assert_eq!(second.syncrepl.len(), 1, "{}", m.toml);
    assert_eq!(second.updateref.as_deref(), Some("ldap://127.0.0.1:9"));
    // A consumer needs entryUUID eq: the database's own index list gains it.
    assert!(
        second.indexes.iter().any(|i| i.attr == "entryUUID"),
        "{}",
        m.toml
    );
}

/// A database with the empty suffix (OpenLDAP's test027) holds every other name: it becomes the
/// top-level database, and the one slapd listed first becomes a `[[database]]` kept apart (issue 31).
#[test]
fn an_empty_suffix_becomes_the_top_level_database() {
    let conf =
        "database mdb\nsuffix \"dc=example,dc=com\"\nrootdn \"cn=Manager,dc=example,dc=com\"\n\
                directory /srv/a\n\
                database mdb\nsuffix \"\"\nrootdn \"cn=Manager,c=US\"\ndirectory /srv/b\n";
    let m = translate(&directives(conf));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert_eq!(c.suffix, "");
    assert_eq!(c.root_dn, "cn=Manager,c=US");
    assert_eq!(c.database.len(), 1, "{}", m.toml);
    assert_eq!(c.database[0].suffix, "dc=example,dc=com");
    assert_eq!(c.database[0].subordinate, Some(false), "{}", m.toml);
}

/// slapd's homedir overlay and its options, as OpenLDAP's test085 writes them (issue 31).
#[test]
fn homedir_is_translated() {
    let conf = "moduleload homedir.la\ndatabase mdb\nsuffix dc=x\nrootdn cn=admin,dc=x\n\
                overlay homedir\nhomedir-min-uidnumber 1000\nhomedir-skeleton-path /etc/skel\n\
                homedir-regexp ^(/home/[-_/a-z0-9]+)$ /export$1\nhomedir-delete-style ARCHIVE\n\
                homedir-archive-path /var/archive\n";
    let m = translate(&directives(conf));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    for line in [
        "name = \"homedir\"\n",
        "min-uidnumber = \"1000\"\n",
        "skeleton-path = \"/etc/skel\"\n",
        "regexp = [\"^(/home/[-_/a-z0-9]+)$ /export$1\"]\n",
        "delete-style = \"ARCHIVE\"\n",
        "archive-path = \"/var/archive\"\n",
    ] {
        assert!(m.toml.contains(line), "{line}{}", m.toml);
    }
    parse(&m.toml);
}

#[test]
fn sssvlv_limits_are_translated() {
    let text = "moduleload sssvlv\ndatabase mdb\nsuffix dc=x\ndirectory /d\noverlay sssvlv\n\
                sssvlv-max 12\nsssvlv-maxkeys 3\nsssvlv-maxperconn 4\n";
    let m = translate(&directives(text));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let config = parse(&m.toml);
    let sssvlv = config
        .overlay
        .iter()
        .find(|o| o.name == "sssvlv")
        .unwrap_or_else(|| panic!("{}", m.toml));
    for (key, value) in [("max", "12"), ("maxkeys", "3"), ("maxperconn", "4")] {
        assert_eq!(
            sssvlv.options.get(key).and_then(|v| v.as_str()),
            Some(value),
            "{}",
            m.toml
        );
    }
    canopy_server::sssvlv::SssvlvHook::from_options(&sssvlv.options).unwrap();
}

/// slapd's dds directives become the `dds` overlay's options, read back by Canopy's checks.
#[test]
fn dds_directives() {
    let text = "database mdb\nsuffix \"dc=example,dc=com\"\ndirectory /var/lib/ldap\n\
                overlay dds\ndds-max-ttl 1d\ndds-min-ttl 10\ndds-default-ttl 1h\n\
                dds-interval 60\ndds-tolerance 5\ndds-max-dynamicObjects 100\ndds-state TRUE\n";
    let m = translate(&directives(text));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    for line in [
        "name = \"dds\"\n",
        "max-ttl = \"1d\"\n",
        "min-ttl = \"10\"\n",
        "default-ttl = \"1h\"\n",
        "interval = \"60\"\n",
        "tolerance = \"5\"\n",
        "max-dynamicObjects = \"100\"\n",
        "state = true\n",
    ] {
        assert!(m.toml.contains(line), "{line}{}", m.toml);
    }
    let config = parse(&m.toml);
    canopy_server::overlays::check(&config.overlay).unwrap();
}

#[test]
fn gssapi_settings_translate() {
    let text = "sasl-host ldap.example.com\nsasl-realm EXAMPLE.COM\n\
                sasl-secprops noplain,noanonymous,maxssf=0\nauthz-regexp \"uid=(.*),cn=gssapi,cn=auth\" \"uid=$1,dc=x\"\n\
                database mdb\nsuffix dc=x\ndirectory /d\n";
    let m = translate(&directives(text));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    let c = parse(&m.toml);
    let gssapi = canopy_server::sasl::gssapi::Settings::of(&c.sasl).unwrap();
    assert_eq!(gssapi.host.as_deref(), Some("ldap.example.com"));
    assert_eq!(gssapi.realm.as_deref(), Some("EXAMPLE.COM"));
    assert_eq!(gssapi.max_ssf, Some(0));
    assert!(gssapi.keytab.is_absolute());
    assert_eq!(c.sasl.authz_regexp.len(), 1);
    let other = translate(&directives(
        "sasl-secprops minssf=56\ndatabase mdb\nsuffix dc=x\ndirectory /d\n",
    ));
    assert_eq!(other.left_out.len(), 1);
    assert!(other.left_out[0].reason.contains("minssf=56"));
}

/// slapd's deref overlay, which has no options: its module and its `overlay` line.
#[test]
fn deref_is_translated() {
    let conf = "moduleload deref.la\ndatabase mdb\nsuffix dc=x\nrootdn cn=admin,dc=x\n\
                overlay deref\n";
    let m = translate(&directives(conf));
    assert!(m.left_out.is_empty(), "{:?}", m.left_out);
    assert!(m.toml.contains("name = \"deref\"\n"), "{}", m.toml);
    let config = parse(&m.toml);
    assert!(
        config.overlay.iter().any(|o| o.name == "deref"),
        "{}",
        m.toml
    );
}

#[test]
fn set_clauses_are_translated() {
    let text = "database mdb\nsuffix dc=x\n\
                access to dn.exact=\"cn=Staff,dc=x\" by set=\"[cn=Staff,dc=x]/member* & user\" write by * read\n\
                access to dn.regex=\"^uid=([^,]+),dc=x$\" by set.regex=\"[uid=$1,dc=x]/manager & user\" write by * break\n\
                access to * by set=\"user/uid &\" read\naccess to * by * read\n";
    let m = translate(&directives(text));
    let lines: Vec<&str> = m.left_out.iter().map(|r| r.origin.as_str()).collect();
    assert_eq!(lines, ["slapd.conf:5"], "{:?}", m.left_out);
    assert!(m.left_out[0].reason.contains("bad set"), "{:?}", m.left_out);
    let c = parse(&m.toml);
    assert_eq!(
        c.access,
        [
            "to dn.exact=cn=Staff,dc=x by set=\"[cn=Staff,dc=x]/member* & user\" write by * read",
            "to dn.regex=^uid=([^,]+),dc=x$ by set.regex=\"[uid=$1,dc=x]/manager & user\" write by * break",
            "to * by * read"
        ]
    );
}
