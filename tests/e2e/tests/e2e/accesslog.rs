//! The accesslog overlay (delta-syncrepl's log): the same writes on slapd with `overlay accesslog` and
//! on Canopy with `[[overlay]] name = "accesslog"`, and the same records in `cn=accesslog` (times,
//! CSNs and UUIDs aside), the log's contextCSN following the data's, and purge after an age.

use std::path::Path;
use std::time::{Duration, Instant};

use canopy_e2e::*;

const LOGDB: &str = "cn=accesslog";

/// slapd: the log database before the data database, both with syncprov, the data database with
/// accesslog (the usual delta-syncrepl provider).
/// Canopy: the overlay table (its log database lives in DATA/accesslog).
pub(crate) fn start(purge: Option<&str>) -> Server {
    let target = Target::from_env();
    let server = match target {
        Target::Slapd => {
            let mut overlay =
                "overlay syncprov\noverlay accesslog\nlogdb cn=accesslog\nlogops writes\nlogsuccess TRUE\n".to_string();
            if let Some(purge) = purge {
                overlay.push_str(&format!("logpurge {purge}\n"));
            }
            let conf = canopy_harness::slapd_conf::render_with_overlays(
                Path::new("@DIR@"),
                Path::new("@DIR@/data"),
                &overlay,
            );
            let log = "database mdb\nsuffix cn=accesslog\n\
                       rootdn cn=accesslog\ndirectory @DIR@/data/accesslog\n\
                       index reqStart eq\naccess to * by * read\noverlay syncprov\n\n";
            let at = conf.find("database mdb\n").expect("a database section");
            let conf = format!("{}{log}{}", &conf[..at], &conf[at..]);
            Server::start_configured(target, &conf, &["data", "data/accesslog"], &[])
        }
        Target::Canopy => {
            let mut toml = "[[overlay]]\nname = \"accesslog\"\nlogdb = \"cn=accesslog\"\n\
                            logops = \"writes\"\nlogsuccess = true\n"
                .to_string();
            if let Some(purge) = purge {
                toml.push_str(&format!("logpurge = \"{purge}\"\n"));
            }
            Server::start_configured(target, &toml, &[], &[])
        }
    };
    server.load_base();
    server
}

/// The values that differ from run to run, by attribute (and by reqMod's attribute).
const VARYING: [&str; 4] = [
    "entryUUID",
    "entryCSN",
    "createTimestamp",
    "modifyTimestamp",
];

/// The log records about DNs under `under`, in reqStart order, without what varies between runs; and
/// the checks of what varies: reqStart in the DN, reqEnd after reqStart, reqEntryUUID and entryCSN
/// agreeing with the change's.
pub(crate) fn records(s: &Server, under: &str) -> String {
    let out = s.search(
        &Bind::Root,
        &["-b", LOGDB, "-s", "one", "(reqType=*)", "*", "entryCSN"],
    );
    out.expect_code(0, "search of cn=accesslog");
    let mut records: Vec<(String, String)> = Vec::new();
    for record in out.records() {
        let dn = record.dn();
        let start = record.values("reqStart").join("");
        assert_eq!(dn, format!("reqStart={start},{LOGDB}"), "{record:?}");
        assert!(
            start.len() == 22 && start.ends_with('Z') && start.as_bytes()[14] == b'.',
            "reqStart {start:?} is not a generalizedTime with microseconds"
        );
        let end = record.values("reqEnd").join("");
        assert!(end > start, "reqEnd {end} is not after reqStart {start}");
        assert_eq!(record.values("reqSession").len(), 1, "{record:?}");
        let target = record.values("reqDN").join("");
        if !target
            .to_ascii_lowercase()
            .ends_with(&under.to_ascii_lowercase())
        {
            continue;
        }
        let mods = record.values("reqMod");
        let csn = record.values("entryCSN").join("");
        if record.values("reqType") != ["delete"] {
            let stamped = mods.iter().find_map(|m| {
                m.strip_prefix("entryCSN:+ ")
                    .or(m.strip_prefix("entryCSN:= "))
            });
            assert_eq!(
                stamped,
                Some(csn.as_str()),
                "the record's entryCSN is the change's"
            );
        }
        let mut text = String::new();
        for name in [
            "objectClass",
            "reqType",
            "reqAuthzID",
            "reqDN",
            "reqResult",
            "reqNewRDN",
            "reqDeleteOldRDN",
            "reqNewSuperior",
            "reqNewDN",
        ] {
            for value in record.values(name) {
                text.push_str(&format!("{name}: {value}\n"));
            }
        }
        for value in mods {
            let varying = VARYING.iter().any(|v| value.starts_with(&format!("{v}:")));
            let value = match value.split_once(' ') {
                Some((head, _)) if varying => format!("{head} <varies>"),
                _ => value,
            };
            text.push_str(&format!("reqMod: {value}\n"));
        }
        assert_eq!(record.values("reqEntryUUID").len(), 1, "{record:?}");
        records.push((start, text));
    }
    records.sort();
    records
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n")
}

const WRITES: &str = "\
dn: ou=logged,dc=example,dc=com
changetype: add
objectClass: organizationalUnit
ou: logged

dn: uid=lee,ou=logged,dc=example,dc=com
changetype: add
objectClass: inetOrgPerson
uid: lee
cn: Lee
sn: One

dn: uid=lee,ou=logged,dc=example,dc=com
changetype: modify
replace: sn
sn: Two
-
add: mail
mail: lee@example.com
mail: lee2@example.com
-
delete: cn
cn: Lee
-
add: cn
cn: Lee Two
-
delete: mail
mail: lee2@example.com

dn: uid=lee,ou=logged,dc=example,dc=com
changetype: modrdn
newrdn: uid=lea
deleteoldrdn: 1

dn: ou=moved,ou=logged,dc=example,dc=com
changetype: add
objectClass: organizationalUnit
ou: moved

dn: uid=lea,ou=logged,dc=example,dc=com
changetype: modrdn
newrdn: uid=leo
deleteoldrdn: 0
newsuperior: ou=moved,ou=logged,dc=example,dc=com

dn: uid=leo,ou=moved,ou=logged,dc=example,dc=com
changetype: modify
delete: mail
-
replace: description

dn: uid=leo,ou=moved,ou=logged,dc=example,dc=com
changetype: delete
";

const EXPECTED: &str = "\
objectClass: auditAdd
reqType: add
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: ou=logged,dc=example,dc=com
reqResult: 0
reqMod: objectClass:+ organizationalUnit
reqMod: ou:+ logged
reqMod: structuralObjectClass:+ organizationalUnit
reqMod: entryUUID:+ <varies>
reqMod: creatorsName:+ cn=admin,dc=example,dc=com
reqMod: createTimestamp:+ <varies>
reqMod: entryCSN:+ <varies>
reqMod: modifiersName:+ cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:+ <varies>

objectClass: auditAdd
reqType: add
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: uid=lee,ou=logged,dc=example,dc=com
reqResult: 0
reqMod: objectClass:+ inetOrgPerson
reqMod: uid:+ lee
reqMod: cn:+ Lee
reqMod: sn:+ One
reqMod: structuralObjectClass:+ inetOrgPerson
reqMod: entryUUID:+ <varies>
reqMod: creatorsName:+ cn=admin,dc=example,dc=com
reqMod: createTimestamp:+ <varies>
reqMod: entryCSN:+ <varies>
reqMod: modifiersName:+ cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:+ <varies>

objectClass: auditModify
reqType: modify
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: uid=lee,ou=logged,dc=example,dc=com
reqResult: 0
reqMod: sn:= Two
reqMod: mail:+ lee@example.com
reqMod: mail:+ lee2@example.com
reqMod: cn:- Lee
reqMod: cn:+ Lee Two
reqMod: mail:- lee2@example.com
reqMod: entryCSN:= <varies>
reqMod: modifiersName:= cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:= <varies>
";

#[test]
fn records_in_slapds_form() {
    let s = start(None);
    s.modify(&Bind::Root, WRITES).expect_code(0, "the writes");
    settled(&s);
    let got = records(&s, "ou=logged,dc=example,dc=com");
    let expected_tail = "\
objectClass: auditModRDN
reqType: modrdn
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: uid=lee,ou=logged,dc=example,dc=com
reqResult: 0
reqNewRDN: uid=lea
reqDeleteOldRDN: TRUE
reqNewDN: uid=lea,ou=logged,dc=example,dc=com
reqMod: entryCSN:= <varies>
reqMod: modifiersName:= cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:= <varies>

objectClass: auditAdd
reqType: add
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: ou=moved,ou=logged,dc=example,dc=com
reqResult: 0
reqMod: objectClass:+ organizationalUnit
reqMod: ou:+ moved
reqMod: structuralObjectClass:+ organizationalUnit
reqMod: entryUUID:+ <varies>
reqMod: creatorsName:+ cn=admin,dc=example,dc=com
reqMod: createTimestamp:+ <varies>
reqMod: entryCSN:+ <varies>
reqMod: modifiersName:+ cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:+ <varies>

objectClass: auditModRDN
reqType: modrdn
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: uid=lea,ou=logged,dc=example,dc=com
reqResult: 0
reqNewRDN: uid=leo
reqDeleteOldRDN: FALSE
reqNewSuperior: ou=moved,ou=logged,dc=example,dc=com
reqNewDN: uid=leo,ou=moved,ou=logged,dc=example,dc=com
reqMod: entryCSN:= <varies>
reqMod: modifiersName:= cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:= <varies>

objectClass: auditModify
reqType: modify
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: uid=leo,ou=moved,ou=logged,dc=example,dc=com
reqResult: 0
reqMod: mail:-
reqMod: description:=
reqMod: entryCSN:= <varies>
reqMod: modifiersName:= cn=admin,dc=example,dc=com
reqMod: modifyTimestamp:= <varies>

objectClass: auditDelete
reqType: delete
reqAuthzID: cn=admin,dc=example,dc=com
reqDN: uid=leo,ou=moved,ou=logged,dc=example,dc=com
reqResult: 0
";
    assert_eq!(got, format!("{EXPECTED}\n{expected_tail}"));
}

/// The log's contextCSN is the data's once the last write is logged: waits for it (Canopy writes the
/// log just after the write is durable; slapd before it answers).
#[test]
fn the_logs_context_csn_follows_the_data() {
    let s = start(None);
    s.modify(&Bind::Root, WRITES).expect_code(0, "the writes");
    settled(&s);
    let container = s.read(&Bind::Root, LOGDB, &["objectClass", "cn"]);
    assert_eq!(
        container.records()[0].values("objectClass"),
        ["auditContainer"]
    );
}

/// Waits (at most ten seconds) until the log's contextCSN equals the data's.
pub(crate) fn settled(s: &Server) {
    let csn = |base: &str| {
        s.read(&Bind::Root, base, &["contextCSN"])
            .records()
            .first()
            .map(|r| r.values("contextCSN"))
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (data, log) = (csn(SUFFIX), csn(LOGDB));
        if !data.is_empty() && data == log {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the log's contextCSN {log:?} never reached the data's {data:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `logpurge 00:00:02 00:00:01`: records older than two seconds disappear; the container stays.
#[test]
fn purge_after_an_age() {
    let s = start(Some("00:00:02 00:00:01"));
    s.modify(&Bind::Root, WRITES).expect_code(0, "the writes");
    let count = || {
        s.search(
            &Bind::Root,
            &["-b", LOGDB, "-s", "one", "(reqType=*)", "1.1"],
        )
        .records()
        .len()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while count() > 0 {
        assert!(Instant::now() < deadline, "records were not purged");
        std::thread::sleep(Duration::from_millis(200));
    }
    s.read(&Bind::Root, LOGDB, &["objectClass"])
        .expect_code(0, "the container stays");
}

/// Clients cannot write the log, not even the root DN (Canopy: unwillingToPerform).
#[test]
fn the_log_is_read_only() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let s = start(None);
    let out = s.modify(
        &Bind::Root,
        "dn: cn=accesslog\nchangetype: modify\nreplace: cn\ncn: other\n",
    );
    assert_eq!(out.code, 53, "{}{}", out.stdout, out.stderr);
}

/// Canopy's atomicity: a `kill -9` right after a stream of acknowledged writes, then a restart, which
/// moves what the outbox still holds to the log: one record per acknowledged write, none twice
/// (docs/design/replication.md, "Atomicity (outbox)"). A second restart changes nothing.
#[test]
fn every_acknowledged_write_is_logged_once_after_a_crash() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let mut s = start(None);
    let dn = user_dn("alice");
    let writes: String = (0..40)
        .map(|i| {
            format!("dn: {dn}\nchangetype: modify\nreplace: description\ndescription: n{i}\n\n")
        })
        .collect();
    s.modify(&Bind::Root, &writes).expect_code(0, "the writes");
    s.kill9();
    let count = |s: &Server| {
        let out = s.search(
            &Bind::Root,
            &["-b", LOGDB, "-s", "one", &format!("(reqDN={dn})"), "reqMod"],
        );
        out.expect_code(0, "search of the log");
        let mut seen: Vec<String> = out
            .records()
            .iter()
            .flat_map(|r| r.values("reqMod"))
            .filter(|m| m.starts_with("description:= "))
            .collect();
        seen.sort();
        seen
    };
    let expected: Vec<String> = {
        let mut all: Vec<String> = (0..40).map(|i| format!("description:= n{i}")).collect();
        all.sort();
        all
    };
    for _ in 0..2 {
        s.restart();
        settled(&s);
        assert_eq!(count(&s), expected);
    }
    // The outbox keeps a record until a later write deletes it: each start recovered some.
    assert!(
        s.log().matches("recovered records from the outbox").count() >= 2,
        "{}",
        s.log()
    );
}
