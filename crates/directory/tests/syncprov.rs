//! The provider's records: the contextCSN raised by every local write inside its transaction (with the
//! server ID in its CSNs), the session log of deletes and renames with its bound, and the change feed in
//! commit order.

mod support;

use std::sync::Arc;
use std::time::Duration;

use canopy_core::check::entry_from_attributes_with;
use canopy_core::{Entry, LdapError};
use canopy_directory::feed::Next;
use canopy_directory::syncprov::{LogReplay, SyncProv};
use canopy_directory::OpenOptions;
use canopy_directory::{structural, Directory, Kind, ModifyDn, Pipeline, Stamp, WriteOp};
use canopy_proto::sync::{Csn, CsnSet};
use canopy_proto::{Dn, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::Schema;

use support::{write, ADMIN};

fn open(path: &std::path::Path, sessionlog: u64) -> Directory {
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    let schema = Arc::new(Schema::builtin());
    let pipeline = Pipeline::standard().then(Arc::new(SyncProv::new(sessionlog)));
    let dir = Directory::open(schema, "dc=example,dc=com", Vec::new(), store, pipeline).unwrap();
    dir.set_server_id(0x12);
    dir
}

fn entry(dir: &Directory, dn: &str, attrs: &[(&str, &str)]) -> Entry {
    let (dn, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    let mut grouped: Vec<PartialAttribute> = Vec::new();
    for (name, value) in attrs {
        let value = value.as_bytes().to_vec();
        match grouped.iter_mut().find(|a| a.name == *name) {
            Some(attr) => attr.values.push(value),
            None => grouped.push(PartialAttribute {
                name: name.to_string(),
                values: vec![value],
            }),
        }
    }
    let mut entry = entry_from_attributes_with(dir.schema(), dn, ndn, &grouped, false).unwrap();
    let structural = structural(dir, &entry).unwrap();
    Stamp::identify(&mut entry, ADMIN, &structural);
    entry
}

async fn add(dir: &Directory, dn: &str, attrs: &[(&str, &str)]) -> Result<(), LdapError> {
    let entry = entry(dir, dn, attrs);
    write(dir, WriteOp::Add(entry)).await
}

async fn person(dir: &Directory, cn: &str) {
    add(
        dir,
        &format!("cn={cn},dc=example,dc=com"),
        &[("objectClass", "person"), ("cn", cn), ("sn", "S")],
    )
    .await
    .unwrap();
}

async fn delete(dir: &Directory, dn: &str) {
    let (dn, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    write(dir, WriteOp::Delete { dn, ndn }).await.unwrap();
}

async fn suffix(dir: &Directory) {
    add(
        dir,
        "dc=example,dc=com",
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "Example"),
        ],
    )
    .await
    .unwrap();
}

fn context(dir: &Directory) -> CsnSet {
    dir.context_csn(&dir.read().unwrap()).unwrap()
}

#[tokio::test]
async fn local_writes_raise_the_context_csn_with_their_server_id() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), 10);
    assert!(context(&dir).is_empty());
    suffix(&dir).await;
    let first = context(&dir);
    assert_eq!(first.csns().len(), 1);
    assert_eq!(first.csns()[0].sid(), 0x12);
    person(&dir, "a").await;
    let second = context(&dir);
    assert!(second.csns()[0] > first.csns()[0]);
    // The contextCSN is the entry's own entryCSN, written in the same transaction.
    let txn = dir.read().unwrap();
    let (_, ndn) = dir.normalize(b"cn=a,dc=example,dc=com").unwrap();
    let stored = dir.entry_at(&txn, &ndn).unwrap();
    let csn = stored.get("entryCSN").unwrap().values[0].clone();
    assert_eq!(
        Csn::parse(std::str::from_utf8(&csn).unwrap()),
        Some(second.csns()[0].clone())
    );
    drop(txn);
    // A refused write leaves it alone.
    let err = add(
        &dir,
        "cn=a,dc=example,dc=com",
        &[("objectClass", "person"), ("cn", "a"), ("sn", "S")],
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, ResultCode::EntryAlreadyExists);
    assert_eq!(context(&dir), second);
}

#[tokio::test]
async fn the_session_log_keeps_deletes_and_renames_within_its_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), 3);
    suffix(&dir).await;
    let start = context(&dir);
    for cn in ["a", "b", "c", "d", "e"] {
        person(&dir, cn).await;
    }
    let before_changes = context(&dir);
    delete(&dir, "cn=a,dc=example,dc=com").await;
    let (dn, ndn) = dir.normalize(b"cn=b,dc=example,dc=com").unwrap();
    write(
        &dir,
        WriteOp::ModifyDn(ModifyDn {
            dn,
            ndn,
            new_rdn: Dn::parse(b"cn=b2").unwrap().rdns[0].clone(),
            delete_old_rdn: true,
            new_superior: None,
        }),
    )
    .await
    .unwrap();
    let txn = dir.read().unwrap();
    let LogReplay::Complete(records) = dir.replay_log(&txn, &before_changes).unwrap() else {
        panic!("the log reaches back to the cookie");
    };
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].old_dn, "cn=a,dc=example,dc=com");
    assert_eq!(records[0].new_dn, None);
    assert_eq!(
        records[1].new_dn.as_deref(),
        Some("cn=b2,dc=example,dc=com")
    );
    drop(txn);
    // Two more deletes: four records, one more than the bound: the oldest goes.
    delete(&dir, "cn=c,dc=example,dc=com").await;
    delete(&dir, "cn=d,dc=example,dc=com").await;
    let txn = dir.read().unwrap();
    assert!(matches!(
        dir.replay_log(&txn, &before_changes).unwrap(),
        LogReplay::TooOld
    ));
    assert!(matches!(
        dir.replay_log(&txn, &start).unwrap(),
        LogReplay::TooOld
    ));
    let trimmed = dir.log_trimmed(&txn).unwrap();
    let LogReplay::Complete(records) = dir.replay_log(&txn, &trimmed).unwrap() else {
        panic!("a cookie at the trimmed point is served from the log");
    };
    assert_eq!(records.len(), 3);
}

#[tokio::test]
async fn the_feed_publishes_committed_changes_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), 10);
    suffix(&dir).await;
    let subscription = dir.feed().subscribe(16);
    person(&dir, "a").await;
    // A refused write publishes nothing.
    assert!(add(
        &dir,
        "cn=a,dc=example,dc=com",
        &[("objectClass", "person"), ("cn", "a"), ("sn", "S")]
    )
    .await
    .is_err());
    delete(&dir, "cn=a,dc=example,dc=com").await;
    let mut seen = Vec::new();
    while let Next::Change(change) = subscription.next(Duration::from_millis(200)) {
        seen.push((change.kind, change.csn.clone(), change.old_dn.clone()));
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, Kind::Add);
    assert_eq!(seen[1].0, Kind::Delete);
    assert_eq!(seen[1].2.as_deref(), Some("cn=a,dc=example,dc=com"));
    assert!(seen[0].1 < seen[1].1);
    assert_eq!(dir.feed().subscribers(), 1);
    drop(subscription);
    assert_eq!(dir.feed().subscribers(), 0);
}

/// The entry a change carries, decoded.
fn carried(change: &canopy_directory::feed::Change) -> Option<Entry> {
    let bytes = change.entry.as_ref()?.bytes();
    Some(Directory::parse_stored(bytes).unwrap().to_entry().unwrap())
}

fn first(entry: &Entry, attr: &str) -> String {
    String::from_utf8(entry.get(attr).unwrap().values[0].clone()).unwrap()
}

/// While the feed has a subscriber, a change carries the entry its write stored (read after every
/// change is made, each still shows its own state and DN); a delete carries none; the bytes are given
/// back once the last holder drops the change.
#[tokio::test]
async fn changes_carry_the_entry_they_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), 10);
    suffix(&dir).await;
    person(&dir, "a").await;
    let subscription = dir.feed().subscribe(16);
    let a = "cn=a,dc=example,dc=com";
    for sn in ["S1", "S2"] {
        support::modify(&dir, a, ModifyOperation::Replace, "sn", &[sn.into()])
            .await
            .unwrap();
    }
    support::rename(&dir, a, "cn=b", None).await.unwrap();
    support::delete(&dir, "cn=b,dc=example,dc=com")
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Next::Change(change) = subscription.next(Duration::from_millis(200)) {
        seen.push(change);
    }
    assert_eq!(seen.len(), 4);
    let states: Vec<(String, String)> = seen[..3]
        .iter()
        .map(|c| {
            let entry = carried(c).expect("a change carries its entry");
            (entry.dn.to_string(), first(&entry, "sn"))
        })
        .collect();
    assert_eq!(
        states,
        [
            (a.to_string(), "S1".to_string()),
            (a.to_string(), "S2".to_string()),
            ("cn=b,dc=example,dc=com".to_string(), "S2".to_string()),
        ]
    );
    assert_eq!(seen[3].kind, Kind::Delete);
    assert!(seen[3].entry.is_none());
    assert!(dir.feed().carried_bytes() > 0);
    drop(seen);
    assert_eq!(dir.feed().carried_bytes(), 0);
}

/// A modify that splices values into a large attribute (docs/design/big-values.md) hands its hooks
/// partial entries; the entry its change carries is read back from the transaction, whole.
#[tokio::test]
async fn a_spliced_modify_carries_the_whole_entry() {
    use canopy_directory::write::{spliced_modifies, SPLICE_MIN_BYTES};
    let tmp = tempfile::tempdir().unwrap();
    let pipeline = Pipeline::standard().then(Arc::new(SyncProv::new(10)));
    let indexes = vec![support::index("member", true, false)];
    let dir = support::open_with(tmp.path(), Schema::builtin(), indexes, pipeline);
    suffix(&dir).await;
    let count = SPLICE_MIN_BYTES / 20;
    let members: Vec<String> = (0..count)
        .map(|i| format!("cn=m{i:05},dc=example,dc=com"))
        .collect();
    let group = "cn=g,dc=example,dc=com";
    let mut attrs = vec![("objectClass", "groupOfNames"), ("cn", "g")];
    attrs.extend(members.iter().map(|m| ("member", m.as_str())));
    add(&dir, group, &attrs).await.unwrap();
    let subscription = dir.feed().subscribe(16);
    let spliced = spliced_modifies();
    let added = "cn=added,dc=example,dc=com".to_string();
    support::modify(&dir, group, ModifyOperation::Add, "member", &[added])
        .await
        .unwrap();
    assert!(
        spliced_modifies() > spliced,
        "the splice path was not taken"
    );
    let Next::Change(change) = subscription.next(Duration::from_secs(5)) else {
        panic!("no change published");
    };
    let entry = carried(&change).expect("the change carries its entry");
    assert_eq!(entry.get("member").unwrap().values.len(), count + 1);
    assert_eq!(entry.get("cn").unwrap().values, [b"g".to_vec()]);
}
