//! The schema-usage queries: whether any entry uses an attribute type or an object class, through an
//! index (presence, equality, objectClass) or by a scan, with the same answers either way.

mod support;

use canopy_directory::{Directory, Usage};
use canopy_proto::{ModifyOperation, ResultCode};
use canopy_schema::Schema;
use support::{add, delete, index, modify, open_with, SUFFIX};

async fn fill(dir: &Directory) {
    add(dir, SUFFIX, &[("objectClass", "domain"), ("dc", "example")])
        .await
        .unwrap();
    add(
        dir,
        &format!("cn=printer,{SUFFIX}"),
        &[
            ("objectClass", "device"),
            ("cn", "printer"),
            ("description", "on the second floor"),
        ],
    )
    .await
    .unwrap();
    add(
        dir,
        &format!("uid=ann,{SUFFIX}"),
        &[
            ("objectClass", "inetOrgPerson"),
            ("uid", "ann"),
            ("cn", "Ann"),
            ("sn", "Lee"),
            ("givenName", "Ann"),
        ],
    )
    .await
    .unwrap();
}

fn used(usage: Usage) -> Option<String> {
    usage.user
}

/// The same questions on an indexed and an unindexed database: same answers, index or scan as expected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_answers_agree_with_and_without_indexes() {
    let indexed_dir = tempfile::tempdir().unwrap();
    let plain_dir = tempfile::tempdir().unwrap();
    let mut description = index("description", true, false);
    description.eq = false;
    let indexed = open_with(
        indexed_dir.path(),
        Schema::builtin(),
        vec![
            index("objectClass", false, false),
            description,
            index("givenName", false, false),
        ],
        canopy_directory::Pipeline::standard(),
    );
    let plain = open_with(
        plain_dir.path(),
        Schema::builtin(),
        Vec::new(),
        canopy_directory::Pipeline::standard(),
    );
    for dir in [&indexed, &plain] {
        fill(dir).await;
    }
    let printer = Some(format!("cn=printer,{SUFFIX}"));
    let ann = Some(format!("uid=ann,{SUFFIX}"));
    // (question, answer, whether the indexed database scans for it)
    type Ask = fn(&Directory, &str) -> Result<Usage, canopy_core::LdapError>;
    let attr: Ask = Directory::attribute_in_use;
    let class: Ask = Directory::object_class_in_use;
    let cases: Vec<(Ask, &str, Option<String>, bool)> = vec![
        (attr, "description", printer.clone(), false), // presence index
        (attr, "2.5.4.13", printer.clone(), false),    // description by OID
        (attr, "givenName", ann.clone(), false),       // equality index
        (attr, "gn", ann.clone(), false),              // another name
        (attr, "name", None, true),                    // a supertype: its subtypes do not count
        (attr, "mail", None, true),                    // unindexed, unused
        (attr, "sn", ann.clone(), true),               // unindexed, used
        (class, "device", printer.clone(), false),
        (class, "inetOrgPerson", ann.clone(), false),
        (class, "2.16.840.1.113730.3.2.2", ann.clone(), false),
        (class, "person", None, false), // a superclass only: not listed by ann
        (class, "groupOfNames", None, false),
    ];
    for (ask, element, want, scans) in cases {
        let on_indexed = ask(&indexed, element).unwrap();
        assert_eq!(on_indexed.user, want, "{element} (indexed)");
        assert_eq!(on_indexed.scanned, scans, "{element}: index or scan");
        let on_plain = ask(&plain, element).unwrap();
        assert_eq!(on_plain.user, want, "{element} (unindexed)");
        assert!(on_plain.scanned, "{element}: no index to use");
    }
    // Once the last user lets go, the element is free.
    for dir in [&indexed, &plain] {
        let dn = format!("cn=printer,{SUFFIX}");
        modify(dir, &dn, ModifyOperation::Delete, "description", &[])
            .await
            .unwrap();
        assert_eq!(used(dir.attribute_in_use("description").unwrap()), None);
        assert_eq!(used(dir.object_class_in_use("device").unwrap()), printer);
        delete(dir, &dn).await.unwrap();
        assert_eq!(used(dir.object_class_in_use("device").unwrap()), None);
    }
}

#[test]
fn unknown_elements_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open_with(
        tmp.path(),
        Schema::builtin(),
        Vec::new(),
        canopy_directory::Pipeline::standard(),
    );
    let err = dir.attribute_in_use("noSuchType").unwrap_err();
    assert_eq!(err.code, ResultCode::UndefinedAttributeType);
    let err = dir.object_class_in_use("noSuchClass").unwrap_err();
    assert_eq!(err.code, ResultCode::UnwillingToPerform);
}
