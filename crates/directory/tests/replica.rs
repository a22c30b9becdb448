//! Changes received from a syncrepl provider: entries found by entryUUID, renames and moves, subtree
//! deletes, children sent before their parents, the cookie and contextCSN stored in the same
//! transaction, and a failing batch that leaves nothing behind.

mod support;

use canopy_core::check::entry_from_attributes_with;
use canopy_core::Entry;
use canopy_directory::{Directory, Pipeline, ReplicaBatch, ReplicaChange};
use canopy_proto::sync::{uuid_from_text, Cookie};
use canopy_proto::PartialAttribute;

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
        })
        .await
        .unwrap();
    assert_eq!(applied.deferred.len(), 1);
    let refused = dir
        .apply_replica(ReplicaBatch {
            rid: 7,
            changes: orphan,
            cookie: cookie(CSN1),
        })
        .await;
    assert!(refused.is_err());
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
    let dir = open(
        tmp.path(),
        &["objectClass", "entryUUID"],
        Pipeline::standard(),
    );
    dir.apply_replica(ReplicaBatch {
        rid: 7,
        changes: base(&dir),
        cookie: cookie(CSN1),
    })
    .await
    .unwrap();
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
        })
        .await
        .unwrap();
    assert_eq!((applied.added, applied.modified), (0, 1));
    assert_eq!(
        values(&dir, "cn=leaf,ou=a,dc=example,dc=com", "description"),
        vec!["found by a scan"]
    );
}
