//! Changes received from a syncrepl provider: entries found by entryUUID, renames and moves, subtree
//! deletes, children sent before their parents, the cookie and contextCSN stored in the same
//! transaction, and a failing batch that leaves nothing behind.

mod support;

use canopy_core::check::entry_from_attributes_with;
use canopy_core::Entry;
use canopy_directory::{Directory, Pipeline, ReplicaBatch, ReplicaChange};
use canopy_proto::sync::{uuid_from_text, Cookie};
use canopy_proto::{ModifyOperation, PartialAttribute};

use support::{entries, entry, open, values, SUFFIX};

fn uuid(n: u8) -> String {
    format!("00000000-0000-0000-0000-0000000000{n:02x}")
}

/// An entry as a provider sends it: the attributes, with entryUUID and entryCSN.
fn sent(dir: &Directory, dn: &str, n: u8, csn: &str, attrs: &[(&str, &str)]) -> ReplicaChange {
    let (dn, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    let mut grouped: Vec<PartialAttribute> = Vec::new();
    let id = uuid(n);
    let all = attrs
        .iter()
        .copied()
        .chain([("entryUUID", id.as_str()), ("entryCSN", csn)]);
    for (name, value) in all {
        match grouped.iter_mut().find(|a| a.name == name) {
            Some(a) => a.values.push(value.as_bytes().to_vec()),
            None => grouped.push(PartialAttribute {
                name: name.into(),
                values: vec![value.as_bytes().to_vec()],
            }),
        }
    }
    let entry: Entry = entry_from_attributes_with(dir.schema(), dn, ndn, &grouped, true).unwrap();
    ReplicaChange::Put {
        uuid: uuid_from_text(&id).unwrap(),
        entry,
    }
}

fn gone(n: u8) -> ReplicaChange {
    ReplicaChange::Delete {
        uuid: uuid_from_text(&uuid(n)).unwrap(),
    }
}

const CSN1: &str = "20261125000000.000001Z#000000#000#000000";
const CSN2: &str = "20261125000000.000002Z#000000#000#000000";
const CSN3: &str = "20261125000000.000003Z#000000#000#000000";

fn cookie(csn: &str) -> Option<Cookie> {
    Some(Cookie::parse(format!("rid=007,csn={csn}").as_bytes()).unwrap())
}

fn base(dir: &Directory) -> Vec<ReplicaChange> {
    vec![
        sent(
            dir,
            "cn=leaf,ou=a,dc=example,dc=com",
            3,
            CSN1,
            &[("objectClass", "person"), ("cn", "leaf"), ("sn", "L")],
        ),
        sent(
            dir,
            SUFFIX,
            1,
            CSN1,
            &[
                ("objectClass", "dcObject"),
                ("objectClass", "organization"),
                ("dc", "example"),
                ("o", "Example"),
            ],
        ),
        sent(
            dir,
            "ou=a,dc=example,dc=com",
            2,
            CSN1,
            &[("objectClass", "organizationalUnit"), ("ou", "a")],
        ),
        sent(
            dir,
            "ou=b,dc=example,dc=com",
            4,
            CSN1,
            &[("objectClass", "organizationalUnit"), ("ou", "b")],
        ),
    ]
}

/// A consumer's database (entryUUID indexed) holding [`base`], applied with the cookie of CSN1.
async fn consumer_with_base(path: &std::path::Path) -> Directory {
    let dir = open(path, &["objectClass", "entryUUID"], Pipeline::standard());
    dir.apply_replica(ReplicaBatch {
        rid: 7,
        changes: base(&dir),
        cookie: cookie(CSN1),
        ..Default::default()
    })
    .await
    .unwrap();
    dir
}

#[tokio::test]
async fn batches_apply_by_uuid_with_the_cookie() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &["objectClass", "entryUUID"],
        Pipeline::standard(),
    );

    // A child before its parents: deferred within the batch, applied once they are there.
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: base(&dir),
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.added, 4);
    assert!(applied.deferred.is_empty());
    assert_eq!(
        values(&dir, "cn=leaf,ou=a,dc=example,dc=com", "entryUUID"),
        vec![uuid(3)]
    );
    let txn = dir.read().unwrap();
    assert_eq!(
        dir.replica_cookie(&txn, 7).unwrap().unwrap().to_text(),
        format!("rid=007,csn={CSN1}")
    );
    assert_eq!(dir.context_csn(&txn).unwrap().csns()[0].as_str(), CSN1);
    drop(txn);

    // A modify, then a rename with a new superior (same UUID, new DN), in one batch.
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![
                sent(
                    &dir,
                    "cn=leaf,ou=a,dc=example,dc=com",
                    3,
                    CSN2,
                    &[
                        ("objectClass", "person"),
                        ("cn", "leaf"),
                        ("sn", "L"),
                        ("description", "changed"),
                    ],
                ),
                sent(
                    &dir,
                    "cn=moved,ou=b,dc=example,dc=com",
                    3,
                    CSN3,
                    &[
                        ("objectClass", "person"),
                        ("cn", "moved"),
                        ("sn", "L"),
                        ("description", "changed"),
                    ],
                ),
            ],
            cookie: cookie(CSN3),
            ..Default::default()
        })
        .await
        .unwrap();
    // Each change carries its own CSN: one with the CSN the entry already holds would be a change
    // seen already, and skipped (docs/design/replication.md, conflict rule 1).
    assert_eq!((applied.modified, applied.renamed), (1, 1));
    assert!(entry(&dir, "cn=leaf,ou=a,dc=example,dc=com").is_none());
    assert_eq!(
        values(&dir, "cn=moved,ou=b,dc=example,dc=com", "description"),
        vec!["changed"]
    );
    assert_eq!(
        values(&dir, "cn=moved,ou=b,dc=example,dc=com", "entryCSN"),
        vec![CSN3]
    );

    // Deleting ou=b deletes what is below it too, leaf first; a delete of an unknown UUID is a no-op.
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![gone(4), gone(99)],
            cookie: None,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.deleted, 2);
    let left: Vec<String> = entries(&dir).iter().map(|e| e.dn.to_string()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[tokio::test]
async fn a_failing_batch_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &["objectClass", "entryUUID"],
        Pipeline::standard(),
    );
    let mut changes = base(&dir);
    // An entry that breaks the schema: the whole batch, cookie included, is refused.
    changes.push(sent(
        &dir,
        "cn=bad,dc=example,dc=com",
        9,
        CSN1,
        &[("objectClass", "person"), ("cn", "bad")],
    ));
    let result = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes,
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await;
    assert!(result.is_err());
    assert!(entries(&dir).is_empty());
    let txn = dir.read().unwrap();
    assert!(dir.replica_cookie(&txn, 7).unwrap().is_none());
    assert!(dir.context_csn(&txn).unwrap().is_empty());
    drop(txn);

    // An orphan whose parent never comes: kept for later without a cookie, refused with one.
    let orphan = vec![sent(
        &dir,
        "cn=x,ou=nowhere,dc=example,dc=com",
        5,
        CSN1,
        &[("objectClass", "person"), ("cn", "x"), ("sn", "X")],
    )];
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: orphan.clone(),
            cookie: None,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.deferred.len(), 1);
    // With a cookie, which claims it, glue entries stand for the missing ancestors, as slapd's
    // consumer makes them (slapd's provider never sends its own glue entries).
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: orphan,
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((applied.glued, applied.added), (2, 1));
    assert_eq!(
        values(&dir, "ou=nowhere,dc=example,dc=com", "objectClass"),
        vec!["top", "glue"]
    );
    assert_eq!(values(&dir, SUFFIX, "structuralObjectClass"), vec!["glue"]);
    // The real parent, when it comes, takes the glue entry's place; the child stays below it.
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![sent(
                &dir,
                "ou=nowhere,dc=example,dc=com",
                6,
                CSN2,
                &[("objectClass", "organizationalUnit"), ("ou", "nowhere")],
            )],
            cookie: cookie(CSN2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((applied.replaced, applied.modified), (1, 1));
    assert_eq!(
        values(&dir, "ou=nowhere,dc=example,dc=com", "entryUUID"),
        vec![uuid(6)]
    );
    assert_eq!(
        values(&dir, "cn=x,ou=nowhere,dc=example,dc=com", "entryUUID"),
        vec![uuid(5)]
    );
}

/// A glue entry slapd sends (objectClass glue and nothing else, not even its RDN's value) is stored.
#[tokio::test]
async fn a_glue_entry_from_slapd_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &["objectClass", "entryUUID"],
        Pipeline::standard(),
    );
    let mut changes = base(&dir);
    changes.push(sent(
        &dir,
        "ou=glued,dc=example,dc=com",
        9,
        CSN2,
        &[("objectClass", "glue")],
    ));
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes,
            cookie: cookie(CSN2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.added, 5);
    assert_eq!(
        values(&dir, "ou=glued,dc=example,dc=com", "entryUUID"),
        vec![uuid(9)]
    );
}

/// A slapd middle server whose present phase could not delete a non-leaf entry turns it into glue
/// without a new entryCSN and sends it so: a plain consumer takes an equal entryCSN with other
/// contents (slapd's consumer ignores only an older one), and skips an equal one it already holds.
#[tokio::test]
async fn an_equal_entrycsn_with_other_contents_is_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = consumer_with_base(tmp.path()).await;
    let again = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: base(&dir),
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((again.modified, again.skipped), (0, 4));
    let glued = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![sent(
                &dir,
                "ou=a,dc=example,dc=com",
                2,
                CSN1,
                &[("objectClass", "top"), ("objectClass", "glue")],
            )],
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(glued.modified, 1);
    assert_eq!(
        values(&dir, "ou=a,dc=example,dc=com", "objectClass"),
        vec!["top".to_string(), "glue".to_string()]
    );
    // An older one is still ignored.
    let older = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![sent(
                &dir,
                "ou=b,dc=example,dc=com",
                4,
                "20261124000000.000001Z#000000#000#000000",
                &[
                    ("objectClass", "organizationalUnit"),
                    ("ou", "b"),
                    ("description", "old"),
                ],
            )],
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((older.modified, older.skipped), (0, 1));
}

/// A plain consumer loaded from the same data as its provider (every entry under another entryUUID,
/// with a newer entryCSN): each received entry takes the held one's place, children stay.
#[tokio::test]
async fn a_plain_consumer_takes_the_providers_entry_at_a_held_dn() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &["objectClass", "entryUUID"],
        Pipeline::standard(),
    );
    // "Loaded here": the same DNs, UUIDs 101.., newer CSNs.
    let local: Vec<ReplicaChange> = base(&dir)
        .into_iter()
        .map(|c| match c {
            ReplicaChange::Put { entry, .. } => {
                let n = 100 + u8::try_from(entry.ndn.rdns().len()).unwrap() * 10 + 1;
                let mut attrs: Vec<(String, String)> = Vec::new();
                for a in &entry.attrs {
                    if ["entryUUID", "entryCSN"].contains(&a.desc.as_str()) {
                        continue;
                    }
                    for v in &a.values {
                        attrs.push((a.desc.clone(), String::from_utf8(v.clone()).unwrap()));
                    }
                }
                let borrowed: Vec<(&str, &str)> = attrs
                    .iter()
                    .map(|(a, v)| (a.as_str(), v.as_str()))
                    .collect();
                let n = if entry.dn.to_string().starts_with("ou=b") {
                    n + 1
                } else {
                    n
                };
                sent(&dir, &entry.dn.to_string(), n, CSN3, &borrowed)
            }
            other => other,
        })
        .collect();
    dir.apply_replica(ReplicaBatch {
        rid: 8,
        changes: local,
        cookie: None,
        ..Default::default()
    })
    .await
    .unwrap();
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: base(&dir),
            cookie: cookie(CSN1),
            reset_context: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((applied.replaced, applied.skipped), (4, 0));
    assert_eq!(values(&dir, SUFFIX, "entryUUID"), vec![uuid(1)]);
    assert_eq!(
        values(&dir, "cn=leaf,ou=a,dc=example,dc=com", "entryUUID"),
        vec![uuid(3)]
    );
    assert_eq!(entries(&dir).len(), 4);
    // The full refresh set the contextCSN to the provider's, below what the held data had.
    let txn = dir.read().unwrap();
    assert_eq!(dir.context_csn(&txn).unwrap().csns()[0].as_str(), CSN1);
}

/// No delete of a refresh removes an entry at a DN the provider sent in it, nor its ancestors.
#[tokio::test]
async fn a_delete_spares_what_the_refresh_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = consumer_with_base(tmp.path()).await;
    let (_, leaf) = dir.normalize(b"cn=leaf,ou=a,dc=example,dc=com").unwrap();
    let sent: std::collections::HashSet<u64> = [canopy_directory::replica::dn_hash(&leaf)].into();
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![gone(2), gone(4)],
            cookie: cookie(CSN2),
            sent: std::sync::Arc::new(sent),
            ..Default::default()
        })
        .await
        .unwrap();
    // ou=a holds the sent leaf: spared; ou=b goes.
    assert_eq!((applied.deleted, applied.spared), (1, 1));
    assert_eq!(entries(&dir).len(), 3);
}

/// The deletes of one received batch share the write's stamp (they carry no CSN of their own): the
/// session log keeps each one, so a cascaded consumer replaying it hears of all of them (the
/// replication harness's seed 92 kept three of four).
#[tokio::test]
async fn every_delete_of_a_batch_reaches_the_session_log() {
    use canopy_directory::syncprov::{LogReplay, SyncProv};
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = Pipeline::standard().then(std::sync::Arc::new(SyncProv::new(5)));
    let dir = open(tmp.path(), &["objectClass", "entryUUID"], pipeline);
    dir.apply_replica(ReplicaBatch {
        rid: 7,
        changes: base(&dir),
        cookie: cookie(CSN1),
        ..Default::default()
    })
    .await
    .unwrap();
    let before = dir.context_csn(&dir.read().unwrap()).unwrap();
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![gone(3), gone(4)],
            cookie: cookie(CSN2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.deleted, 2);
    let txn = dir.read().unwrap();
    let LogReplay::Complete(records) = dir.replay_log(&txn, &before).unwrap() else {
        panic!("the log reaches back to the cookie");
    };
    let mut gone_dns: Vec<&str> = records.iter().map(|r| r.old_dn.as_str()).collect();
    gone_dns.sort();
    assert_eq!(
        gone_dns,
        ["cn=leaf,ou=a,dc=example,dc=com", "ou=b,dc=example,dc=com"]
    );
}

#[tokio::test]
async fn without_an_entryuuid_index_the_consumer_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["objectClass"], Pipeline::standard());
    assert!(dir.check_replica().is_err());
}

/// While the entryUUID index is not complete (added to the configuration, not yet built), changes
/// still find their entries, by reading every entry.
#[tokio::test]
async fn entries_are_found_without_a_complete_uuid_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = consumer_with_base(tmp.path()).await;
    drop(dir);
    // A start without it in the configuration drops the index.
    let dir = open(tmp.path(), &["objectClass"], Pipeline::standard());
    dir.start_index_builds().unwrap();
    drop(dir);
    // Configured now, recorded nowhere: pending until the server starts its build.
    let dir = open(
        tmp.path(),
        &["objectClass", "entryUUID"],
        Pipeline::standard(),
    );
    let txn = dir.read().unwrap();
    assert!(dir.indexes(&txn).iter().all(|s| s.attr != "entryUUID"));
    drop(txn);
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: vec![sent(
                &dir,
                "cn=leaf,ou=a,dc=example,dc=com",
                3,
                CSN2,
                &[
                    ("objectClass", "person"),
                    ("cn", "leaf"),
                    ("sn", "L"),
                    ("description", "found by a scan"),
                ],
            )],
            cookie: cookie(CSN2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((applied.added, applied.modified), (0, 1));
    assert_eq!(
        values(&dir, "cn=leaf,ou=a,dc=example,dc=com", "description"),
        vec!["found by a scan"]
    );
}

/// A multi-provider server with ID `sid` (entryUUID indexed, as a consumer needs).
fn provider(path: &std::path::Path, sid: u16) -> Directory {
    let dir = open(path, &["objectClass", "entryUUID"], Pipeline::standard());
    dir.set_server_id(sid);
    dir.set_multiprovider(true);
    dir
}

/// The entry `dn` of `dir` as its provider sends it (a Put by its entryUUID).
fn put_of(dir: &Directory, dn: &str) -> ReplicaChange {
    let entry = entry(dir, dn).unwrap();
    let uuid = canopy_directory::replica::entry_uuid(&entry).unwrap();
    ReplicaChange::Put { uuid, entry }
}

async fn receive(dir: &Directory, changes: Vec<ReplicaChange>) -> canopy_directory::Applied {
    dir.apply_replica(ReplicaBatch {
        rid: 1,
        changes,
        cookie: None,
        ..Default::default()
    })
    .await
    .unwrap()
}

/// An entry's DN and its attributes, each with its values.
type Content = Vec<(String, Vec<(String, Vec<String>)>)>;

/// Every entry, attributes and values sorted: what must be identical on every server.
fn content(dir: &Directory) -> Content {
    let mut all: Vec<_> = entries(dir)
        .into_iter()
        .map(|e| {
            let mut attrs: Vec<(String, Vec<String>)> = e
                .attrs
                .iter()
                .map(|a| {
                    let mut v: Vec<String> = a
                        .values
                        .iter()
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                        .collect();
                    v.sort();
                    (a.desc.to_ascii_lowercase(), v)
                })
                .collect();
            attrs.sort();
            (e.dn.to_string(), attrs)
        })
        .collect();
    all.sort();
    all
}

const PERSON: &str = "cn=p,dc=example,dc=com";

/// Adds the suffix entry and PERSON (a person, cn p, sn P, and `extra`) as a client would.
async fn add_suffix_and_person(dir: &Directory, extra: &[(&str, &str)]) {
    support::add(
        dir,
        SUFFIX,
        &[
            ("objectClass", "organization"),
            ("objectClass", "dcObject"),
            ("o", "E"),
            ("dc", "example"),
        ],
    )
    .await
    .unwrap();
    let mut attrs = vec![("objectClass", "person"), ("cn", "p"), ("sn", "P")];
    attrs.extend_from_slice(extra);
    support::add(dir, PERSON, &attrs).await.unwrap();
}

/// Three servers hold the same two entries; each then modifies the person on its own.
async fn three_versions(
    tmp: &std::path::Path,
    writes: [&[(ModifyOperation, &str, &str)]; 3],
) -> (Vec<Directory>, Vec<ReplicaChange>, Vec<ReplicaChange>) {
    let servers: Vec<Directory> = (1..=3)
        .map(|sid| provider(&tmp.join(format!("s{sid}")), sid))
        .collect();
    add_suffix_and_person(&servers[0], &[("description", "zero")]).await;
    let base = vec![put_of(&servers[0], SUFFIX), put_of(&servers[0], PERSON)];
    for server in &servers[1..] {
        assert_eq!(receive(server, base.clone()).await.added, 2);
    }
    let mut versions = Vec::new();
    for (server, mods) in servers.iter().zip(writes) {
        for (op, attr, value) in mods {
            let values: Vec<String> = if value.is_empty() {
                Vec::new()
            } else {
                vec![value.to_string()]
            };
            support::modify(server, PERSON, *op, attr, &values)
                .await
                .unwrap();
        }
        versions.push(put_of(server, PERSON));
    }
    (servers, base, versions)
}

/// Every order of three items.
fn orders() -> Vec<[usize; 3]> {
    vec![
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ]
}

#[tokio::test]
async fn concurrent_modifies_merge_per_attribute_in_every_arrival_order() {
    use ModifyOperation::{Add, Replace};
    let tmp = tempfile::tempdir().unwrap();
    // Server 1 replaces description, server 2 adds a telephone number, server 3 (later) replaces
    // description too and deletes nothing else: different attributes both survive, the same
    // attribute goes to the higher CSN.
    let (servers, base, versions) = three_versions(
        tmp.path(),
        [
            &[(Replace, "description", "one")],
            &[(Add, "telephoneNumber", "555")],
            &[(Replace, "description", "three"), (Replace, "sn", "Q")],
        ],
    )
    .await;
    let stamps = values(&servers[1], PERSON, "canopyAttrCSN");
    assert_eq!(stamps.len(), 2, "one value per CSN: {stamps:?}");
    assert!(
        stamps
            .iter()
            .any(|v| v.ends_with("#002#000000 telephonenumber")),
        "{stamps:?}"
    );

    // Each server receives the other two versions, in both orders, and fresh servers every order.
    let mut results = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let others: Vec<usize> = (0..3).filter(|j| *j != i).collect();
        for j in others {
            receive(server, vec![versions[j].clone()]).await;
        }
        results.push(content(server));
    }
    for (n, order) in orders().into_iter().enumerate() {
        let fresh = provider(&tmp.path().join(format!("fresh{n}")), 9);
        receive(&fresh, base.clone()).await;
        for i in order {
            receive(&fresh, vec![versions[i].clone()]).await;
        }
        results.push(content(&fresh));
        // All three again: nothing new, every one skipped as a loop.
        let again = receive(&fresh, versions.clone()).await;
        assert_eq!((again.skipped, again.modified), (3, 0));
    }
    for result in &results[1..] {
        assert_eq!(result, &results[0]);
    }
    let merged = &servers[0];
    assert_eq!(values(merged, PERSON, "description"), vec!["three"]);
    assert_eq!(values(merged, PERSON, "telephoneNumber"), vec!["555"]);
    assert_eq!(values(merged, PERSON, "sn"), vec!["Q"]);
    // entryCSN is the highest of the three (server 3's).
    assert!(values(merged, PERSON, "entryCSN")[0].contains("#003#"));
}

#[tokio::test]
async fn an_attribute_delete_competes_by_its_csn() {
    use ModifyOperation::{Add, Delete, Replace};
    let tmp = tempfile::tempdir().unwrap();
    // Server 1 changes description, server 2 (later) deletes it, server 3 adds a seeAlso: the
    // delete is newer than the change and wins; the seeAlso stays.
    let (servers, _, versions) = three_versions(
        tmp.path(),
        [
            &[(Replace, "description", "one")],
            &[(Delete, "description", "")],
            &[(Add, "seeAlso", "cn=x,dc=example,dc=com")],
        ],
    )
    .await;
    for order in orders() {
        for (i, server) in servers.iter().enumerate() {
            for j in order.into_iter().filter(|j| *j != i) {
                receive(server, vec![versions[j].clone()]).await;
            }
        }
    }
    let first = content(&servers[0]);
    for server in &servers[1..] {
        assert_eq!(content(server), first);
    }
    assert!(values(&servers[0], PERSON, "description").is_empty());
    assert_eq!(values(&servers[0], PERSON, "seeAlso").len(), 1);
}

#[tokio::test]
async fn a_merge_the_schema_refuses_keeps_the_newer_version_whole() {
    use ModifyOperation::{Add, Delete, Replace};
    let tmp = tempfile::tempdir().unwrap();
    // Server 1 adds the auxiliary class labeledURIObject and a labeledURI; server 2 (later) adds
    // and removes the class (its objectClass stamp is newer) and changes description: the merge
    // (a labeledURI without its class) breaks the schema, so server 2's version wins whole, in
    // both orders.
    let (servers, _, versions) = three_versions(
        tmp.path(),
        [
            &[
                (Add, "objectClass", "labeledURIObject"),
                (Add, "labeledURI", "http://x"),
            ],
            &[
                (Add, "objectClass", "labeledURIObject"),
                (Delete, "objectClass", "labeledURIObject"),
                (Replace, "description", "two"),
            ],
            &[],
        ],
    )
    .await;
    let first = receive(&servers[0], vec![versions[1].clone()]).await;
    assert_eq!((first.merge_fallbacks, first.modified), (1, 1));
    let second = receive(&servers[1], vec![versions[0].clone()]).await;
    assert_eq!((second.merge_fallbacks, second.skipped), (1, 1));
    assert_eq!(content(&servers[0]), content(&servers[1]));
    assert!(values(&servers[0], PERSON, "labeledURI").is_empty());
    assert_eq!(values(&servers[0], PERSON, "description"), vec!["two"]);
}

#[tokio::test]
async fn a_rename_and_a_modify_of_another_attribute_both_survive() {
    use ModifyOperation::Replace;
    let tmp = tempfile::tempdir().unwrap();
    let (servers, _, _) = three_versions(tmp.path(), [&[], &[], &[]]).await;
    // Server 1 renames the person (keeping the old RDN value), server 2 then changes description.
    support::rename_with(&servers[0], PERSON, "cn=q", false, None)
        .await
        .unwrap();
    support::modify(
        &servers[1],
        PERSON,
        Replace,
        "description",
        &["two".to_string()],
    )
    .await
    .unwrap();
    let renamed = put_of(&servers[0], "cn=q,dc=example,dc=com");
    let modified = put_of(&servers[1], PERSON);
    receive(&servers[0], vec![modified.clone()]).await;
    receive(&servers[1], vec![renamed.clone()]).await;
    for change in [renamed, modified] {
        receive(&servers[2], vec![change]).await;
    }
    for server in &servers {
        assert_eq!(
            values(server, "cn=q,dc=example,dc=com", "description"),
            vec!["two"]
        );
        assert!(entry(server, PERSON).is_none());
    }
    assert_eq!(content(&servers[0]), content(&servers[1]));
    assert_eq!(content(&servers[0]), content(&servers[2]));
}

#[tokio::test]
async fn an_entry_without_attribute_csns_resolves_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = provider(tmp.path(), 1);
    receive(&dir, base(&dir)).await;
    // A slapd provider's entries carry no canopyAttrCSN: an older one loses whole (rule 1), even with
    // an attribute the held one lacks; a newer one wins whole.
    let older = sent(
        &dir,
        "ou=b,dc=example,dc=com",
        4,
        "20261124000000.000000Z#000000#002#000000",
        &[
            ("objectClass", "organizationalUnit"),
            ("ou", "b"),
            ("description", "old"),
        ],
    );
    assert_eq!(receive(&dir, vec![older]).await.skipped, 1);
    let newer = sent(
        &dir,
        "ou=b,dc=example,dc=com",
        4,
        CSN2,
        &[
            ("objectClass", "organizationalUnit"),
            ("ou", "b"),
            ("st", "x"),
        ],
    );
    assert_eq!(receive(&dir, vec![newer]).await.modified, 1);
    assert_eq!(values(&dir, "ou=b,dc=example,dc=com", "st"), vec!["x"]);
    assert!(values(&dir, "ou=b,dc=example,dc=com", "canopyAttrCSN").is_empty());
}

#[tokio::test]
async fn old_tombstones_are_purged_by_age() {
    use canopy_mdb::ReadOps;
    let tmp = tempfile::tempdir().unwrap();
    // The provider's hook (syncprov) records local deletes and renames, as in the server.
    let pipeline = Pipeline::standard().then(std::sync::Arc::new(
        canopy_directory::syncprov::SyncProv::new(100),
    ));
    let dir = open(tmp.path(), &["objectClass", "entryUUID"], pipeline);
    dir.set_server_id(1);
    dir.set_multiprovider(true);
    add_suffix_and_person(&dir, &[]).await;
    let stale = put_of(&dir, PERSON);
    support::rename_with(&dir, PERSON, "cn=q", false, None)
        .await
        .unwrap();
    support::delete(&dir, "cn=q,dc=example,dc=com")
        .await
        .unwrap();
    let records = |dir: &Directory| {
        let txn = dir.store().read().unwrap();
        ["tomb/", "tombdn/", "renamed/"]
            .iter()
            .map(|p| txn.meta_prefix(p.as_bytes()).unwrap().len())
            .sum::<usize>()
    };
    assert_eq!(records(&dir), 3);
    // Younger than a day: kept, and the tombstone still stops a stale version of the entry.
    let day = std::time::Duration::from_secs(86_400);
    assert_eq!(dir.purge_conflict_records(day).await.unwrap(), 0);
    assert_eq!(receive(&dir, vec![stale.clone()]).await.skipped, 1);
    // Older than the bound: gone, and the documented risk follows: the stale version comes back
    // (a peer cut off longer than the bound must be reinitialized).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let tiny = std::time::Duration::from_millis(1);
    assert_eq!(dir.purge_conflict_records(tiny).await.unwrap(), 3);
    assert_eq!(records(&dir), 0);
    assert_eq!(receive(&dir, vec![stale]).await.added, 1);
}

/// A multi-provider server with ID `sid` running the memberof overlay.
fn provider_with_memberof(path: &std::path::Path, sid: u16) -> Directory {
    use canopy_directory::overlay::memberof::{self, MemberOf, MEMBEROF_SCHEMA};
    let mut schema = canopy_schema::Schema::builtin();
    schema.load_text(MEMBEROF_SCHEMA, "memberof").unwrap();
    let pipeline = Pipeline::standard().then(std::sync::Arc::new(MemberOf::new(
        memberof::Config::new(support::ADMIN),
    )));
    let dir = support::open_with(
        path,
        schema,
        vec![support::index("entryUUID", false, false)],
        pipeline,
    );
    dir.set_server_id(sid);
    dir.set_multiprovider(true);
    dir
}

#[tokio::test]
async fn an_overlays_change_to_another_entry_survives_a_concurrent_write() {
    // Server 1 adds a group naming the person (memberof writes memberOf into the person, a change by
    // the overlay, not by the client); server 2 then changes the person's description, so its version
    // has the higher entryCSN. Both changes must survive the exchange on both servers: memberOf is
    // stamped with the group add's CSN in the person's canopyAttrCSN.
    let tmp = tempfile::tempdir().unwrap();
    let a = provider_with_memberof(&tmp.path().join("a"), 1);
    let b = provider_with_memberof(&tmp.path().join("b"), 2);
    add_suffix_and_person(&a, &[]).await;
    let base = vec![put_of(&a, SUFFIX), put_of(&a, PERSON)];
    assert_eq!(receive(&b, base).await.added, 2);
    let group = "cn=g,dc=example,dc=com";
    support::add(
        &a,
        group,
        &[
            ("objectClass", "groupOfNames"),
            ("cn", "g"),
            ("member", PERSON),
        ],
    )
    .await
    .unwrap();
    assert_eq!(values(&a, PERSON, "memberOf"), vec![group]);
    let csn = values(&a, PERSON, "entryCSN").remove(0);
    assert!(
        values(&a, PERSON, "canopyAttrCSN")
            .iter()
            .any(|v| v.starts_with(&csn) && v.split(' ').any(|n| n == "memberof")),
        "memberOf not stamped with the group add's CSN: {:?}",
        values(&a, PERSON, "canopyAttrCSN")
    );
    support::modify(
        &b,
        PERSON,
        ModifyOperation::Replace,
        "description",
        &["from b".to_string()],
    )
    .await
    .unwrap();
    let from_a = vec![put_of(&a, group), put_of(&a, PERSON)];
    let from_b = vec![put_of(&b, PERSON)];
    receive(&a, from_b).await;
    receive(&b, from_a).await;
    for (name, dir) in [("a", &a), ("b", &b)] {
        assert_eq!(
            values(dir, PERSON, "memberOf"),
            vec![group],
            "server {name}"
        );
        assert_eq!(
            values(dir, PERSON, "description"),
            vec!["from b"],
            "server {name}"
        );
    }
    assert_eq!(content(&a), content(&b));
}

#[tokio::test]
async fn replicated_changes_skip_the_overlays_that_police_or_derive() {
    // A consumer running unique (mail) and memberof (dangling members refused): what its provider
    // sends is applied as sent. A group arrives before its member and two people share a mail (two
    // providers accepted them concurrently): had the checks run, the batch would fail and
    // replication would stop. memberof still derives memberOf for the members of a received group
    // (a slapd provider does not send those changes), leaving their entryCSN as it was.
    use canopy_directory::overlay::memberof::{self, Dangling, MemberOf, MEMBEROF_SCHEMA};
    use canopy_directory::overlay::unique::{self, Domain, Unique};
    let mut schema = canopy_schema::Schema::builtin();
    schema.load_text(MEMBEROF_SCHEMA, "memberof").unwrap();
    let mut mo = memberof::Config::new(support::ADMIN);
    mo.dangling = Dangling::Error(canopy_proto::ResultCode::ConstraintViolation);
    let pipeline = Pipeline::standard()
        .then(std::sync::Arc::new(Unique::new(unique::Config {
            domains: vec![Domain::parse("ldap:///dc=example,dc=com?mail?sub").unwrap()],
        })))
        .then(std::sync::Arc::new(MemberOf::new(mo)));
    let tmp = tempfile::tempdir().unwrap();
    let dir = support::open_with(
        tmp.path(),
        schema,
        vec![
            support::index("entryUUID", false, false),
            support::index("mail", false, false),
        ],
        pipeline,
    );
    let suffix = sent(
        &dir,
        SUFFIX,
        1,
        CSN1,
        &[
            ("objectClass", "organization"),
            ("objectClass", "dcObject"),
            ("o", "E"),
            ("dc", "example"),
        ],
    );
    let person = |n: u8, cn: &str, memberof: Option<&str>| {
        let mut attrs = vec![
            ("objectClass", "inetOrgPerson"),
            ("cn", cn),
            ("sn", cn),
            ("mail", "same@example.com"),
        ];
        attrs.extend(memberof.map(|g| ("memberOf", g)));
        sent(&dir, &format!("cn={cn},{SUFFIX}"), n, CSN1, &attrs)
    };
    let group_dn = format!("cn=g,{SUFFIX}");
    let group = sent(
        &dir,
        &group_dn,
        2,
        CSN1,
        &[
            ("objectClass", "groupOfNames"),
            ("cn", "g"),
            ("member", &format!("cn=m,{SUFFIX}")),
        ],
    );
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 1,
            changes: vec![suffix, group, person(3, "x", None)],
            cookie: cookie(CSN1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.added, 3);
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 1,
            changes: vec![person(4, "m", Some(group_dn.as_str()))],
            cookie: cookie(CSN2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.added, 1);
    assert_eq!(
        values(&dir, &format!("cn=m,{SUFFIX}"), "memberOf"),
        vec![group_dn.clone()]
    );
    assert!(values(&dir, &format!("cn=x,{SUFFIX}"), "memberOf").is_empty());
    // The member's entryCSN is the provider's.
    assert_eq!(
        values(&dir, &format!("cn=m,{SUFFIX}"), "entryCSN"),
        vec![CSN1]
    );
    // A group received naming x, whose own version from this provider will not follow: x's memberOf
    // is derived here, and x keeps the provider's entryCSN.
    let other = format!("cn=h,{SUFFIX}");
    let applied = dir
        .apply_replica(ReplicaBatch {
            rid: 1,
            changes: vec![sent(
                &dir,
                &other,
                5,
                CSN3,
                &[
                    ("objectClass", "groupOfNames"),
                    ("cn", "h"),
                    ("member", &format!("cn=x,{SUFFIX}")),
                ],
            )],
            cookie: cookie(CSN3),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(applied.added, 1);
    assert_eq!(
        values(&dir, &format!("cn=x,{SUFFIX}"), "memberOf"),
        vec![other]
    );
    assert_eq!(
        values(&dir, &format!("cn=x,{SUFFIX}"), "entryCSN"),
        vec![CSN1]
    );
    // A local write still goes through both overlays.
    let local = support::add(
        &dir,
        &format!("cn=y,{SUFFIX}"),
        &[
            ("objectClass", "inetOrgPerson"),
            ("cn", "y"),
            ("sn", "y"),
            ("mail", "same@example.com"),
        ],
    )
    .await;
    assert_eq!(
        local.unwrap_err().code,
        canopy_proto::ResultCode::ConstraintViolation
    );
}

#[tokio::test]
async fn refint_repairs_received_deletes_in_a_plain_consumer_only() {
    // A consumer running refint on seeAlso receives the delete of an entry another entry names. A
    // plain consumer repairs the referrer as slapd's refint does on a consumer (its provider may be a
    // slapd, which does not send refint's changes), keeping the referrer's entryCSN; a multi-provider
    // peer leaves it to the writer's server, whose stamped repair the merge carries.
    use canopy_directory::overlay::refint::{self, Refint};
    for multiprovider in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let pipeline =
            Pipeline::standard().then(std::sync::Arc::new(Refint::new(refint::Config::new(vec![
                "seeAlso".to_string(),
            ]))));
        let dir = open(tmp.path(), &["objectClass", "entryUUID"], pipeline);
        dir.set_server_id(2);
        dir.set_multiprovider(multiprovider);
        let target = format!("cn=t,{SUFFIX}");
        let referrer = format!("cn=r,{SUFFIX}");
        // The suffix entry of `base`, then the two people.
        let mut changes = vec![base(&dir).remove(1)];
        changes.push(sent(
            &dir,
            &target,
            8,
            CSN1,
            &[("objectClass", "person"), ("cn", "t"), ("sn", "T")],
        ));
        changes.push(sent(
            &dir,
            &referrer,
            9,
            CSN1,
            &[
                ("objectClass", "person"),
                ("cn", "r"),
                ("sn", "R"),
                ("seeAlso", &target),
            ],
        ));
        let applied = dir
            .apply_replica(ReplicaBatch {
                rid: 1,
                changes,
                cookie: cookie(CSN1),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(applied.added, 3, "multiprovider {multiprovider}");
        dir.apply_replica(ReplicaBatch {
            rid: 1,
            changes: vec![gone(8)],
            cookie: cookie(CSN2),
            ..Default::default()
        })
        .await
        .unwrap();
        assert!(entry(&dir, &target).is_none());
        let see_also = values(&dir, &referrer, "seeAlso");
        if multiprovider {
            assert_eq!(
                see_also,
                vec![target.clone()],
                "left to the writer's server"
            );
        } else {
            assert!(see_also.is_empty(), "repaired here: {see_also:?}");
        }
        assert_eq!(values(&dir, &referrer, "entryCSN"), vec![CSN1]);
    }
}
