//! A database under two schemas at once (cn=schema changed live): each handle normalizes, checks and
//! writes under its own schema, while both share one store, so an operation of the old snapshot never
//! sees the new schema half-way and the new snapshot uses it at once.

mod support;

use std::sync::Arc;

use canopy_proto::ResultCode;
use canopy_schema::Schema;
use support::{add, open_with, SUFFIX};

const LIVE: &str = "attributetype ( 1.3.6.1.4.1.99999.3.1 NAME 'liveCode' EQUALITY caseIgnoreMatch \
                    SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n\
                    objectclass ( 1.3.6.1.4.1.99999.3.2 NAME 'liveThing' SUP top AUXILIARY MAY liveCode )\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_handle_reads_its_own_schema_over_one_store() {
    let path = tempfile::tempdir().unwrap();
    let old = open_with(
        path.path(),
        Schema::builtin(),
        Vec::new(),
        canopy_directory::Pipeline::standard(),
    );
    add(
        &old,
        SUFFIX,
        &[("objectClass", "domain"), ("dc", "example")],
    )
    .await
    .unwrap();
    let mut schema = Schema::builtin();
    schema.load_text(LIVE, "live").unwrap();
    let new = old.with_schema(Arc::new(schema));
    assert!(new.same_database(&old));
    let rdn = format!("liveCode=a1,{SUFFIX}");
    // The old handle does not know the type, even right after the new one normalized the DN (the
    // memo of the last DN is kept per schema).
    assert!(new.normalize(rdn.as_bytes()).is_ok());
    assert_eq!(
        old.normalize(rdn.as_bytes()).unwrap_err().code,
        ResultCode::InvalidDnSyntax
    );
    assert!(new.normalize(rdn.as_bytes()).is_ok());
    let entry = [
        ("objectClass", "device"),
        ("objectClass", "liveThing"),
        ("cn", "printer"),
        ("liveCode", "X7"),
    ];
    let dn = format!("cn=printer,{SUFFIX}");
    let refused = add(&old, &dn, &entry).await.unwrap_err();
    assert_ne!(refused.code, ResultCode::Success);
    add(&new, &dn, &entry).await.unwrap();
    // Both read the one store: the entry is there for the old handle too.
    let txn = old.read().unwrap();
    let (_, ndn) = old.normalize(dn.as_bytes()).unwrap();
    assert!(old.entry_at(&txn, &ndn).is_some());
    assert!(new.attribute_in_use("liveCode").unwrap().user.is_some());
}

/// A schema change that removes elements fences the store (`fence_schema`): a write still made
/// through a handle of the old schema is refused when it would store what the new schema no longer
/// defines, so nothing commits an unknown element between the usage check and the swap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_store_refuses_old_handles_writes_of_removed_elements() {
    let path = tempfile::tempdir().unwrap();
    let mut with_live = Schema::builtin();
    with_live.load_text(LIVE, "live").unwrap();
    let old = open_with(
        path.path(),
        with_live,
        Vec::new(),
        canopy_directory::Pipeline::standard(),
    );
    add(
        &old,
        SUFFIX,
        &[("objectClass", "domain"), ("dc", "example")],
    )
    .await
    .unwrap();
    let new = old.with_schema(Arc::new(Schema::builtin()));
    old.fence_schema(new.schema().clone()).await.unwrap();
    let live_entry = [
        ("objectClass", "device"),
        ("objectClass", "liveThing"),
        ("cn", "racer"),
        ("liveCode", "R1"),
    ];
    let dn = format!("cn=racer,{SUFFIX}");
    let refused = add(&old, &dn, &live_entry).await.unwrap_err();
    assert_eq!(
        refused.code,
        ResultCode::ObjectClassViolation,
        "{refused:?}"
    );
    let refused = add(
        &old,
        &dn,
        &[
            ("objectClass", "device"),
            ("cn", "racer"),
            ("liveCode", "R1"),
        ],
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused.code,
        ResultCode::UndefinedAttributeType,
        "{refused:?}"
    );
    assert!(old.attribute_in_use("liveCode").unwrap().user.is_none());
    // What the new schema defines is written through either handle.
    add(&old, &dn, &[("objectClass", "device"), ("cn", "racer")])
        .await
        .unwrap();
    add(
        &new,
        &format!("cn=other,{SUFFIX}"),
        &[("objectClass", "device"), ("cn", "other")],
    )
    .await
    .unwrap();
    // The change refused after all: the fence is lifted, the old schema's writes pass again.
    old.unfence_schema(old.schema().clone());
    add(
        &old,
        &format!("cn=late,{SUFFIX}"),
        &[
            ("objectClass", "device"),
            ("objectClass", "liveThing"),
            ("cn", "late"),
            ("liveCode", "L1"),
        ],
    )
    .await
    .unwrap();
}
