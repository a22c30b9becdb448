//! Modification tables: every result code path, atomicity, and the resulting values.

use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::Schema;

use super::{apply_modifications, apply_modifications_with, ModifyOptions};
use crate::entry::Entry;
use crate::filter::testutil::{entry, values};

use ModifyOperation::{Add, Delete, Increment, Replace};

fn base(schema: &Schema) -> Entry {
    entry(
        schema,
        "dn: uid=jdoe,dc=example,dc=com
         objectClass: inetOrgPerson
         objectClass: posixAccount
         uid: jdoe
         cn: John Doe
         cn;lang-en: John
         sn: Doe
         uidNumber: 1000
         gidNumber: 100
         homeDirectory: /home/jdoe
         jpegPhoto: JFIF",
    )
}

fn change(operation: ModifyOperation, name: &str, vals: &[&str]) -> Change {
    Change {
        operation,
        modification: PartialAttribute {
            name: name.to_string(),
            values: vals.iter().map(|v| v.as_bytes().to_vec()).collect(),
        },
    }
}

/// Applies `changes`; on failure checks code and text and that the entry is untouched.
fn check(changes: &[Change], expected: Result<(), (ResultCode, &str)>) -> Entry {
    let schema = Schema::builtin();
    let mut e = base(&schema);
    let before = e.clone();
    let got = apply_modifications(&schema, &mut e, changes);
    match expected {
        Ok(()) => assert_eq!(got, Ok(()), "{changes:?}"),
        Err((code, text)) => {
            let err = got.expect_err("expected an error");
            assert_eq!(
                (err.code, err.message.as_str()),
                (code, text),
                "{changes:?}"
            );
            assert_eq!(e, before, "entry changed on error");
        }
    }
    e
}

#[test]
fn error_paths_with_slapd_texts() {
    use ResultCode::*;
    let table: Vec<(Vec<Change>, (ResultCode, &str))> = vec![
        (
            vec![change(Add, "cn", &["john doe"])],
            (
                AttributeOrValueExists,
                "modify/add: cn: value #0 already exists",
            ),
        ),
        (
            vec![change(Add, "cn", &["a", "b", "JOHN DOE", "c"])],
            (
                AttributeOrValueExists,
                "modify/add: cn: value #2 already exists",
            ),
        ),
        (
            vec![change(Add, "description", &["y", "x", "z", "X"])],
            (
                AttributeOrValueExists,
                "description: value #1 provided more than once",
            ),
        ),
        (
            vec![change(Replace, "description", &["a", "A"])],
            (
                AttributeOrValueExists,
                "description: value #0 provided more than once",
            ),
        ),
        (
            vec![change(Delete, "cn", &["nope"])],
            (NoSuchAttribute, "modify/delete: cn: no such value"),
        ),
        (
            vec![change(Delete, "telephoneNumber", &[])],
            (
                NoSuchAttribute,
                "modify/delete: telephoneNumber: no such attribute",
            ),
        ),
        (
            vec![change(Delete, "telephoneNumber", &["123"])],
            (
                NoSuchAttribute,
                "modify/delete: telephoneNumber: no such attribute",
            ),
        ),
        (
            vec![change(Delete, "uidNumber", &["12"])],
            (NoSuchAttribute, "modify/delete: uidNumber: no such value"),
        ),
        (
            vec![change(Delete, "uidNumber", &["abc"])],
            (
                InvalidAttributeSyntax,
                "uidNumber: value #0 invalid per syntax",
            ),
        ),
        (
            vec![change(Add, "fooBar", &["x"])],
            (UndefinedAttributeType, "fooBar: attribute type undefined"),
        ),
        (
            vec![change(Add, "cn;x-foo", &["x"])],
            (UndefinedAttributeType, "cn;x-foo: unrecognized option"),
        ),
        (
            vec![change(Add, "userCertificate", &["x"])],
            (
                UndefinedAttributeType,
                "userCertificate: requires ;binary transfer",
            ),
        ),
        (
            vec![change(Replace, "createTimestamp", &["20200101000000Z"])],
            (
                ConstraintViolation,
                "createTimestamp: no user modification allowed",
            ),
        ),
        (
            vec![change(
                Replace,
                "entryUUID",
                &["3f1b1a2e-0000-0000-0000-000000000000"],
            )],
            (
                ConstraintViolation,
                "entryUUID: no user modification allowed",
            ),
        ),
        (
            vec![change(Increment, "cn", &["1"])],
            (
                ConstraintViolation,
                "cn: attribute syntax inappropriate for increment",
            ),
        ),
        (
            vec![change(Increment, "objectClass", &["1"])],
            (
                ConstraintViolation,
                "objectClass: attribute syntax inappropriate for increment",
            ),
        ),
        (
            vec![change(Increment, "uidNumber", &["abc"])],
            (
                InvalidAttributeSyntax,
                "uidNumber: value #0 invalid per syntax",
            ),
        ),
        (
            vec![change(Increment, "uidNumber", &["+10"])],
            (
                InvalidAttributeSyntax,
                "uidNumber: value #0 invalid per syntax",
            ),
        ),
        (
            vec![change(Increment, "uidNumber", &["1", "2"])],
            (
                ProtocolError,
                "modify/increment operation requires single value",
            ),
        ),
        (
            vec![change(Increment, "uidNumber", &[])],
            (ProtocolError, "modify/increment operation requires value"),
        ),
        (
            vec![change(Increment, "uidNumber;lang-en", &["1"])],
            (
                NoSuchAttribute,
                "modify/increment: uidNumber;lang-en: no such attribute",
            ),
        ),
        (
            vec![change(Increment, "fooo", &["1"])],
            (UndefinedAttributeType, "fooo: attribute type undefined"),
        ),
        (
            vec![change(Add, "description", &[])],
            (ProtocolError, "modify/add operation requires values"),
        ),
        // The protocol check of every change comes before any description is looked at.
        (
            vec![change(Add, "fooBar", &["x"]), change(Add, "foo", &[])],
            (ProtocolError, "modify/add operation requires values"),
        ),
        (
            vec![change(Add, "uidNumber", &["abc"])],
            (
                InvalidAttributeSyntax,
                "uidNumber: value #0 invalid per syntax",
            ),
        ),
        (
            vec![change(Replace, "description", &["a", ""])],
            (
                InvalidAttributeSyntax,
                "description: value #1 invalid per syntax",
            ),
        ),
        (
            vec![change(Add, "objectClass", &["fooClass"])],
            (
                InvalidAttributeSyntax,
                "objectClass: value #0 invalid per syntax",
            ),
        ),
        (
            vec![change(Add, "displayName", &["a", "b"])],
            (ConstraintViolation, "displayName: multiple values provided"),
        ),
        (
            vec![change(Add, "displayName", &["a", "A"])],
            (ConstraintViolation, "displayName: multiple values provided"),
        ),
        (
            vec![change(Replace, "uidNumber", &["1", "2"])],
            (ConstraintViolation, "uidNumber: multiple values provided"),
        ),
        (
            vec![change(Add, "jpegPhoto", &["x"])],
            (
                InappropriateMatching,
                "modify/add: jpegPhoto: no equality matching rule",
            ),
        ),
        (
            vec![change(Delete, "jpegPhoto", &["JFIF"])],
            (
                InappropriateMatching,
                "modify/delete: jpegPhoto: no equality matching rule",
            ),
        ),
        // Changes apply in order: a value deleted earlier is gone for a later change.
        (
            vec![change(Delete, "sn", &[]), change(Delete, "sn", &["Doe"])],
            (NoSuchAttribute, "modify/delete: sn: no such attribute"),
        ),
        (
            vec![
                change(Add, "description", &["q"]),
                change(Add, "description", &["Q"]),
            ],
            (
                AttributeOrValueExists,
                "modify/add: description: value #0 already exists",
            ),
        ),
        // A failing later change leaves the entry as it was, including the earlier changes.
        (
            vec![
                change(Replace, "sn", &["Smith"]),
                change(Delete, "cn", &["nope"]),
            ],
            (NoSuchAttribute, "modify/delete: cn: no such value"),
        ),
    ];
    for (changes, (code, text)) in table {
        check(&changes, Err((code, text)));
    }
}

#[test]
fn successful_changes() {
    // Deleting by an equal value under the equality rule; duplicates in a delete are fine.
    let e = check(&[change(Delete, "cn", &["JOHN DOE", "john  doe"])], Ok(()));
    assert_eq!(values(&e, "cn"), Vec::<String>::new());
    assert_eq!(values(&e, "cn;lang-en"), vec!["John"]);

    // Options select the attribute exactly; descriptions are stored canonically.
    let e = check(&[change(Add, "CN;Lang-DE", &["Hans"])], Ok(()));
    assert_eq!(values(&e, "cn;lang-de"), vec!["Hans"]);
    let e = check(&[change(Delete, "commonName;LANG-EN", &["john"])], Ok(()));
    assert!(e.get("cn;lang-en").is_none());
    assert_eq!(values(&e, "cn"), vec!["John Doe"]);

    // Replace puts the new values at the end; replace with nothing deletes, or does nothing.
    let e = check(&[change(Replace, "uid", &["JDOE"])], Ok(()));
    assert_eq!(e.attrs.last().map(|a| a.desc.as_str()), Some("uid"));
    assert_eq!(values(&e, "uid"), vec!["JDOE"]);
    let e = check(&[change(Replace, "cn", &[])], Ok(()));
    assert!(e.get("cn").is_none());
    check(&[change(Replace, "telephoneNumber", &[])], Ok(()));

    // Increment adds to every value, negative deltas included.
    let e = check(&[change(Increment, "uidNumber", &["5"])], Ok(()));
    assert_eq!(values(&e, "uidNumber"), vec!["1005"]);
    let e = check(
        &[
            change(Increment, "uidNumber", &["5"]),
            change(Increment, "uidNumber", &["-1010"]),
        ],
        Ok(()),
    );
    assert_eq!(values(&e, "uidNumber"), vec!["-5"]);

    // Add then delete in one request; values without an equality rule are added when new.
    let e = check(
        &[
            change(Add, "description", &["q"]),
            change(Delete, "description", &["Q"]),
        ],
        Ok(()),
    );
    assert!(e.get("description").is_none());
    let e = check(
        &[
            change(Delete, "jpegPhoto", &[]),
            change(Add, "jpegPhoto", &["a", "a2"]),
        ],
        Ok(()),
    );
    assert_eq!(values(&e, "jpegPhoto"), vec!["a", "a2"]);

    // objectClass values compare by class: OID and name are the same value.
    check(
        &[change(Add, "objectClass", &["2.16.840.1.113730.3.2.2"])],
        Err((
            ResultCode::AttributeOrValueExists,
            "modify/add: objectClass: value #0 already exists",
        )),
    );
    let e = check(
        &[change(Delete, "objectClass", &["1.3.6.1.1.1.2.0"])],
        Ok(()),
    );
    assert_eq!(values(&e, "objectClass"), vec!["inetOrgPerson"]);
}

#[test]
fn removing_rdn_values_is_left_to_the_schema_check() {
    // slapd applies the change and then answers namingViolation from its entry check.
    let schema = Schema::builtin();
    let mut e = base(&schema);
    apply_modifications(&schema, &mut e, &[change(Delete, "uid", &["jdoe"])]).unwrap();
    let err = crate::check::check_entry(&schema, &e).unwrap_err();
    assert_eq!(err.code, ResultCode::NamingViolation);
    assert_eq!(
        err.message,
        "naming attribute 'uid' is not present in entry"
    );
}

#[test]
fn internal_modifications_may_touch_operational_attributes() {
    let schema = Schema::builtin();
    let mut e = base(&schema);
    let options = ModifyOptions {
        allow_no_user_modification: true,
        ..ModifyOptions::default()
    };
    let changes = [change(Replace, "modifyTimestamp", &["20240101000000Z"])];
    apply_modifications_with(&schema, &mut e, &changes, options).unwrap();
    assert_eq!(values(&e, "modifyTimestamp"), vec!["20240101000000Z"]);
}

#[test]
fn adds_known_absent_skip_the_check_against_the_entry() {
    let schema = Schema::builtin();
    let changes = [change(Add, "description", &["new"])];
    // The caller's word is taken: the value is appended without comparing it with the others.
    let mut e = base(&schema);
    apply_modifications(&schema, &mut e, &[change(Add, "description", &["old"])]).unwrap();
    let options = ModifyOptions {
        absent_adds: vec![0],
        ..ModifyOptions::default()
    };
    apply_modifications_with(&schema, &mut e, &changes, options).unwrap();
    assert_eq!(values(&e, "description"), vec!["old", "new"]);
    // Without it, a present value is refused as always.
    let refused = apply_modifications(&schema, &mut e, &[change(Add, "description", &["NEW"])]);
    assert_eq!(
        refused.unwrap_err().code,
        ResultCode::AttributeOrValueExists
    );
}

/// The Permissive Modify control, as slapd 2.5 answers it.
#[test]
fn permissive_modify() {
    let schema = Schema::builtin();
    let permissive = ModifyOptions {
        permissive: true,
        ..ModifyOptions::default()
    };
    let run = |changes: &[Change]| {
        let mut e = base(&schema);
        apply_modifications_with(&schema, &mut e, changes, permissive.clone())
            .map(|()| e)
            .map_err(|err| (err.code, err.message))
    };
    // A present value (in another case) is skipped, the new one added.
    let e = run(&[change(Add, "sn", &["DOE", "Roe"])]).unwrap();
    assert_eq!(values(&e, "sn"), ["Doe", "Roe"]);
    // Deleting from an absent attribute, by value or whole, deletes nothing.
    let e = run(&[
        change(Delete, "description", &["x"]),
        change(Delete, "mail", &[]),
        change(Replace, "sn", &["Zed"]),
    ])
    .unwrap();
    assert_eq!(values(&e, "sn"), ["Zed"]);
    // A value a present attribute lacks is still refused, without text.
    assert_eq!(
        run(&[change(Delete, "sn", &["Roe"])]).unwrap_err(),
        (ResultCode::NoSuchAttribute, String::new())
    );
    // A value given twice in the request is refused as without the control.
    assert_eq!(
        run(&[change(Add, "sn", &["x", "x"])]).unwrap_err().0,
        ResultCode::AttributeOrValueExists
    );
}
