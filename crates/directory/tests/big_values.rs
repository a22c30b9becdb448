//! Values added to a large attribute take the splice path (docs/design/big-values.md): the stored
//! entry is what the general path would store, memberOf and the index follow, and the general path
//! still answers what the splice path leaves to it (a value held already, deletes, small groups).

mod support;

use std::sync::Arc;

use canopy_core::wire::encode_entry;
use canopy_directory::overlay::memberof::{self, Dangling, MemberOf, MEMBEROF_SCHEMA};
use canopy_directory::write::{spliced_modifies, SPLICE_MIN_BYTES};
use canopy_directory::{Directory, Pipeline};
use canopy_mdb::ReadOps;
use canopy_proto::{ModifyOperation, ResultCode};
use canopy_schema::Schema;
use support::{add, index, values, ADMIN, SUFFIX};

const GROUP: &str = "cn=big,ou=groups,dc=example,dc=com";

fn open(path: &std::path::Path, dangling: Dangling, member_index: bool) -> Directory {
    let mut schema = Schema::builtin();
    schema.load_text(MEMBEROF_SCHEMA, "memberof").unwrap();
    let mut config = memberof::Config::new(ADMIN);
    config.dangling = dangling;
    let pipeline = Pipeline::standard().then(Arc::new(MemberOf::new(config)));
    let mut indexes = vec![
        index("memberOf", false, false),
        index("entryCSN", false, false),
    ];
    if member_index {
        indexes.push(index("member", true, true));
    }
    support::open_with(path, schema, indexes, pipeline)
}

fn person(i: usize) -> String {
    format!("uid=person{i:05},ou=people,{SUFFIX}")
}

/// The suffix, two OUs, `people` people, and cn=big holding the first `members` of them.
async fn fill(dir: &Directory, people: usize, members: usize) {
    let suffix = [
        ("objectClass", "dcObject"),
        ("objectClass", "organization"),
        ("dc", "example"),
        ("o", "Example"),
    ];
    add(dir, SUFFIX, &suffix).await.unwrap();
    for ou in ["people", "groups"] {
        let dn = format!("ou={ou},{SUFFIX}");
        add(
            dir,
            &dn,
            &[("objectClass", "organizationalUnit"), ("ou", ou)],
        )
        .await
        .unwrap();
    }
    for i in 0..people {
        let uid = format!("person{i:05}");
        let attrs = [
            ("objectClass", "inetOrgPerson"),
            ("uid", uid.as_str()),
            ("cn", uid.as_str()),
            ("sn", "Person"),
        ];
        add(dir, &person(i), &attrs).await.unwrap();
    }
    let names: Vec<String> = (0..members).map(person).collect();
    let mut attrs = vec![("objectClass", "groupOfNames"), ("cn", "big")];
    attrs.extend(names.iter().map(|m| ("member", m.as_str())));
    add(dir, GROUP, &attrs).await.unwrap();
}

async fn member(dir: &Directory, op: ModifyOperation, who: &[String]) -> Result<(), ResultCode> {
    support::modify(dir, GROUP, op, "member", who)
        .await
        .map_err(|e| e.code)
}

/// The group's stored bytes, and whether they are what encoding the decoded entry gives.
fn stored_is_canonical(dir: &Directory) -> bool {
    let txn = dir.store().read().unwrap();
    let id = txn
        .get_id(&canopy_directory::dn_key(
            &dir.normalize(GROUP.as_bytes()).unwrap().1,
        ))
        .unwrap()
        .unwrap();
    let bytes = txn.get_entry(id).unwrap().unwrap();
    let entry = Directory::parse_stored(bytes).unwrap().to_entry().unwrap();
    let mut again = Vec::new();
    encode_entry(dir.schema(), &entry, &mut again);
    again == bytes
}

/// One member is ~40 bytes: enough of them make the attribute large.
const BIG: usize = SPLICE_MIN_BYTES / 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_members_are_spliced_into_a_large_group() {
    spliced_into(BIG).await;
}

/// Past 256 KiB the store keeps the group in chunks, and a splice rewrites only those at its edits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_members_are_spliced_into_a_chunked_group() {
    spliced_into(7000).await;
}

async fn spliced_into(big: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), Dangling::Ignore, true);
    fill(&dir, big + 10, big).await;
    let before = values(&dir, GROUP, "entryCSN");
    let spliced = spliced_modifies();
    // One at a time, then two in one change.
    member(&dir, ModifyOperation::Add, &[person(big)])
        .await
        .unwrap();
    member(
        &dir,
        ModifyOperation::Add,
        &[person(big + 1), person(big + 2)],
    )
    .await
    .unwrap();
    assert!(
        spliced_modifies() >= spliced + 2,
        "the splice path was not taken"
    );
    assert!(stored_is_canonical(&dir));
    let members = values(&dir, GROUP, "member");
    let expected: Vec<String> = (0..big + 3).map(person).collect();
    assert_eq!(members.len(), expected.len());
    for (got, want) in members.iter().zip(&expected) {
        assert!(got.eq_ignore_ascii_case(want), "{got} != {want}");
    }
    assert_ne!(values(&dir, GROUP, "entryCSN"), before);
    assert_eq!(
        values(&dir, GROUP, "modifiersName"),
        vec![ADMIN.to_string()]
    );
    for i in [big, big + 1, big + 2, 0] {
        assert_eq!(
            values(&dir, &person(i), "memberOf"),
            vec![GROUP.to_string()]
        );
    }
    // The member index has the added values: adding one again is refused (by the general path).
    assert_eq!(
        member(&dir, ModifyOperation::Add, &[person(big + 1)]).await,
        Err(ResultCode::AttributeOrValueExists)
    );
    // Deletes take the general path; the splice path works on what it leaves.
    member(&dir, ModifyOperation::Delete, &[person(1)])
        .await
        .unwrap();
    assert!(values(&dir, &person(1), "memberOf").is_empty());
    member(&dir, ModifyOperation::Add, &[person(1)])
        .await
        .unwrap();
    assert_eq!(
        values(&dir, &person(1), "memberOf"),
        vec![GROUP.to_string()]
    );
    assert!(stored_is_canonical(&dir));
    assert_eq!(values(&dir, GROUP, "member").len(), big + 3);
    // `canopy verify` finds nothing wrong: entries, indexes and (for a chunked group) its chunks.
    let mut problems = Vec::new();
    dir.verify(&mut |_, _, _| {}, &mut |p| problems.push(p.to_string()))
        .unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    // The member index answers for an added value.
    let txn = dir.store().read().unwrap();
    let (_, ndn) = dir.normalize(person(big + 2).as_bytes()).unwrap();
    let key = [&[0x02u8][..], ndn.as_str().as_bytes()].concat();
    assert_eq!(txn.index_get("member", &key).unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_general_path_stores_the_same_group() {
    // Without an index on member the splice path cannot tell an added value is new.
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let spliced = open(a.path(), Dangling::Ignore, true);
    let general = open(b.path(), Dangling::Ignore, false);
    for dir in [&spliced, &general] {
        fill(dir, BIG + 5, BIG).await;
        for i in BIG..BIG + 5 {
            member(dir, ModifyOperation::Add, &[person(i)])
                .await
                .unwrap();
        }
    }
    let strip = |dir: &Directory| {
        let mut entry = support::entry(dir, GROUP).unwrap();
        entry.attrs.retain(|a| {
            ![
                "modifyTimestamp",
                "createTimestamp",
                "entryCSN",
                "entryUUID",
            ]
            .contains(&a.desc.as_str())
        });
        entry
    };
    assert_eq!(strip(&spliced), strip(&general));
    assert!(stored_is_canonical(&spliced) && stored_is_canonical(&general));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangling_members_are_refused_on_the_splice_path_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        Dangling::Error(ResultCode::ConstraintViolation),
        true,
    );
    fill(&dir, BIG, BIG).await;
    let ghost = format!("uid=ghost,ou=people,{SUFFIX}");
    assert_eq!(
        member(&dir, ModifyOperation::Add, &[ghost]).await,
        Err(ResultCode::ConstraintViolation)
    );
    assert_eq!(values(&dir, GROUP, "member").len(), BIG);
}
