//! Entry construction and schema check tables, texts as slapd answers them.

use canopy_proto::{Dn, PartialAttribute, ResultCode};
use canopy_schema::Schema;

use super::{check_entry, entry_from_attributes, entry_from_attributes_with, structural_class};
use crate::entry::Entry;
use crate::error::LdapError;
use crate::filter::testutil::{entry, values};

type Attrs<'a> = &'a [(&'a str, &'a [&'a str])];
type Expected<'a> = Result<(), (ResultCode, &'a str)>;

fn build(schema: &Schema, dn: &str, attrs: Attrs<'_>) -> Result<Entry, LdapError> {
    let dn = Dn::parse(dn.as_bytes()).unwrap();
    let ndn = schema.normalize_dn(&dn).unwrap();
    let attrs: Vec<PartialAttribute> = attrs
        .iter()
        .map(|(name, vals)| PartialAttribute {
            name: name.to_string(),
            values: vals.iter().map(|v| v.as_bytes().to_vec()).collect(),
        })
        .collect();
    entry_from_attributes(schema, dn, ndn, &attrs)
}

/// An add as the server runs it: build, then check.
fn add(schema: &Schema, dn: &str, attrs: Attrs<'_>) -> Result<Entry, LdapError> {
    let e = build(schema, dn, attrs)?;
    check_entry(schema, &e)?;
    Ok(e)
}

fn check_add(dn: &str, attrs: Attrs<'_>, expected: Result<(), (ResultCode, &str)>) {
    let schema = Schema::builtin();
    let got = add(&schema, dn, attrs)
        .map(|_| ())
        .map_err(|e| (e.code, e.message));
    let expected = expected.map_err(|(c, t)| (c, t.to_string()));
    assert_eq!(got, expected, "{dn} {attrs:?}");
}

#[test]
fn add_table() {
    use ResultCode::*;
    let table: Vec<(&str, Attrs<'_>, Expected<'_>)> = vec![
        ("cn=a,dc=x", &[("cn", &["a"]), ("sn", &["x"])], Err((ObjectClassViolation, "no objectClass attribute"))),
        ("cn=a,dc=x", &[("objectClass", &["person", "fooClass"]), ("sn", &["x"])], Err((InvalidAttributeSyntax, "objectClass: value #1 invalid per syntax"))),
        ("uid=x,dc=x", &[("objectClass", &["uidObject"]), ("uid", &["x"])], Err((ObjectClassViolation, "no structural object class provided"))),
        ("cn=a,dc=x", &[("objectClass", &["top"])], Err((ObjectClassViolation, "no structural object class provided"))),
        ("cn=k,dc=x", &[("objectClass", &["extensibleObject"])], Err((ObjectClassViolation, "no structural object class provided"))),
        ("cn=a,dc=x", &[("objectClass", &["person", "organization"]), ("sn", &["x"]), ("o", &["o"])], Err((ObjectClassViolation, "invalid structural object class chain (person/organization)"))),
        ("cn=a,dc=x", &[("objectClass", &["person", "inetOrgPerson"]), ("sn", &["x"])], Ok(())),
        ("cn=o,dc=x", &[("objectClass", &["2.5.6.6"]), ("sn", &["x"])], Ok(())),
        ("cn=b,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("description", &[])], Err((ProtocolError, "no values for attribute type"))),
        ("cn=b,dc=x", &[("objectClass", &["person"]), ("fooBar", &[]), ("sn", &[])], Err((ProtocolError, "no values for attribute type"))),
        ("cn=b,dc=x", &[("objectClass", &["person"]), ("sn", &["x", "y", "X"])], Err((AttributeOrValueExists, "sn: value #0 provided more than once"))),
        ("cn=b,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("SN", &["y"])], Err((AttributeOrValueExists, "attribute 'sn' provided more than once"))),
        ("cn=b,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("2.5.4.4", &["y"])], Err((AttributeOrValueExists, "attribute 'sn' provided more than once"))),
        ("cn=d,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("description", &["a", ""])], Err((InvalidAttributeSyntax, "description: value #1 invalid per syntax"))),
        ("cn=d,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("fooBar", &["a"])], Err((UndefinedAttributeType, "fooBar: attribute type undefined"))),
        ("cn=d,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("cn;binary", &["a"])], Err((UndefinedAttributeType, "cn;binary: option \"binary\" not supported with type"))),
        ("cn=d,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("mail", &["a"])], Err((ObjectClassViolation, "attribute 'mail' not allowed"))),
        ("cn=d,dc=x", &[("objectClass", &["person"])], Err((ObjectClassViolation, "object class 'person' requires attribute 'sn'"))),
        ("description=e,dc=x", &[("objectClass", &["person"]), ("sn", &["x"])], Err((ObjectClassViolation, "object class 'person' requires attribute 'cn'"))),
        ("mail=r,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("cn", &["r"])], Err((ObjectClassViolation, "attribute 'mail' not allowed"))),
        ("displayName=b,dc=x", &[("objectClass", &["inetOrgPerson"]), ("sn", &["x"]), ("cn", &["r"]), ("displayName", &["a"])], Err((NamingViolation, "value of single-valued naming attribute 'displayName' conflicts with value present in entry"))),
        ("displayName=A,dc=x", &[("objectClass", &["inetOrgPerson"]), ("sn", &["x"]), ("cn", &["r"]), ("displayName", &["a"])], Ok(())),
        ("cn=f,dc=x", &[("objectClass", &["inetOrgPerson"]), ("sn", &["x"]), ("displayName", &["a", "b"])], Err((ConstraintViolation, "displayName: multiple values provided"))),
        ("cn=g,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("entryUUID", &["3f1b1a2e-0000-0000-0000-000000000000"])], Err((ConstraintViolation, "entryUUID: no user modification allowed"))),
        ("cn=g,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("structuralObjectClass", &["person"])], Err((ConstraintViolation, "structuralObjectClass: no user modification allowed"))),
        ("cn=h,dc=x", &[("objectClass", &["person", "extensibleObject"]), ("sn", &["x"]), ("mail", &["a"])], Ok(())),
        ("cn=i,dc=x", &[("objectClass", &["alias", "extensibleObject"]), ("aliasedObjectName", &["cn=h,dc=x"])], Ok(())),
        ("cn=j,dc=x", &[("objectClass", &["referral", "extensibleObject"]), ("ref", &["ldap://x/"])], Ok(())),
        ("uid=l,dc=x", &[("objectClass", &["account", "posixAccount"]), ("cn", &["l"]), ("uidNumber", &["1"]), ("gidNumber", &["1"]), ("homeDirectory", &["/"])], Ok(())),
        ("cn=p,dc=x", &[("objectClass", &["person"]), ("sn", &["x"]), ("cn;lang-en", &["p"])], Ok(())),
        ("cn=q,dc=x", &[("objectClass", &["inetOrgPerson"]), ("sn", &["x"]), ("telephoneNumber", &["+1 555 0100"]), ("jpegPhoto", &["a", "a"])], Err((AttributeOrValueExists, "jpegPhoto: value #0 provided more than once"))),
    ];
    for (dn, attrs, expected) in table {
        check_add(dn, attrs, expected);
    }
}

#[test]
fn rdn_values_are_completed_like_slapd() {
    let schema = Schema::builtin();
    let e = add(
        &schema,
        "cn=e,dc=x",
        &[
            ("objectClass", &["person"]),
            ("sn", &["x"]),
            ("cn", &["other"]),
        ],
    )
    .unwrap();
    assert_eq!(values(&e, "cn"), vec!["other", "e"]);
    let e = add(
        &schema,
        "cn=n+sn=y,dc=x",
        &[("objectClass", &["person"]), ("sn", &["x"])],
    )
    .unwrap();
    assert_eq!(values(&e, "sn"), vec!["x", "y"]);
    assert_eq!(values(&e, "cn"), vec!["n"]);
    assert_eq!(e.attrs.last().map(|a| a.desc.as_str()), Some("cn"));
    // An equal value under the equality rule is not added again.
    let e = add(
        &schema,
        "CN=Bob,dc=x",
        &[
            ("objectClass", &["person"]),
            ("sn", &["x"]),
            ("cn", &["bob"]),
        ],
    )
    .unwrap();
    assert_eq!(values(&e, "cn"), vec!["bob"]);
    assert_eq!(structural_class(&schema, &e).unwrap(), "person");
}

#[test]
fn trusted_builds_accept_operational_attributes() {
    let schema = Schema::builtin();
    let dn = Dn::parse(b"cn=g,dc=x").unwrap();
    let ndn = schema.normalize_dn(&dn).unwrap();
    let attrs = vec![
        PartialAttribute {
            name: "objectClass".into(),
            values: vec![b"person".to_vec()],
        },
        PartialAttribute {
            name: "sn".into(),
            values: vec![b"x".to_vec()],
        },
        PartialAttribute {
            name: "entryUUID".into(),
            values: vec![b"3f1b1a2e-0000-0000-0000-000000000000".to_vec()],
        },
        PartialAttribute {
            name: "structuralObjectClass".into(),
            values: vec![b"person".to_vec()],
        },
    ];
    let e = entry_from_attributes_with(&schema, dn, ndn, &attrs, true).unwrap();
    check_entry(&schema, &e).unwrap();
}

fn check_stored(text: &str, expected: Result<(), (ResultCode, &str)>) {
    let schema = Schema::builtin();
    let e = entry(&schema, text);
    let got = check_entry(&schema, &e).map_err(|e| (e.code, e.message));
    assert_eq!(got, expected.map_err(|(c, t)| (c, t.to_string())), "{text}");
}

#[test]
fn checks_of_modified_entries() {
    use ResultCode::*;
    check_stored(
        "dn: uid=jdoe,dc=x
         objectClass: inetOrgPerson
         uid: jdoe
         cn;lang-en: John
         sn: Doe
         telephoneNumber: +1 555 0100
         createTimestamp: 20240101000000Z
         structuralObjectClass: inetOrgPerson",
        Ok(()),
    );
    check_stored(
        "dn: uid=jdoe,dc=x
         objectClass: inetOrgPerson
         uid: jdoe
         cn: John
         sn: Doe
         displayName: a
         displayName: b",
        Err((
            ConstraintViolation,
            "attribute 'displayName' cannot have multiple values",
        )),
    );
    check_stored(
        "dn: uid=jdoe,dc=x
         objectClass: person
         uid: jdoe
         cn: John
         sn: Doe
         structuralObjectClass: inetOrgPerson",
        Err((
            ObjectClassModsProhibited,
            "structural object class modification from 'inetOrgPerson' to 'person' not allowed",
        )),
    );
    check_stored(
        "dn: uid=jdoe,dc=x
         objectClass: inetOrgPerson
         uid: other
         cn: John
         sn: Doe",
        Err((
            NamingViolation,
            "value of naming attribute 'uid' is not present in entry",
        )),
    );
    // Naming is checked before MUST, as in slapd.
    check_stored(
        "dn: uid=jdoe,dc=x
         objectClass: inetOrgPerson
         cn: John",
        Err((
            NamingViolation,
            "naming attribute 'uid' is not present in entry",
        )),
    );
    check_stored(
        "dn: cn=John,dc=x
         objectClass: inetOrgPerson
         cn: John",
        Err((
            ObjectClassViolation,
            "object class 'inetOrgPerson' requires attribute 'sn'",
        )),
    );
    check_stored(
        "dn: cn=John,dc=x
         objectClass: person
         objectClass: noSuchClass
         cn: John
         sn: Doe",
        Err((
            ObjectClassViolation,
            "unrecognized objectClass 'noSuchClass'",
        )),
    );
    check_stored(
        "dn: cn=John,dc=x
         objectClass: inetOrgPerson
         objectClass: organization
         cn: John
         sn: Doe
         o: x",
        Err((
            ObjectClassViolation,
            "invalid structural object class chain (inetOrgPerson/organization)",
        )),
    );
}
