//! Tests of DN normalization and of `NormDn`.

use super::*;
use canopy_proto::{Ava, Rdn};

/// Builds a DN from RDNs given as lists of (attribute, value).
fn dn(rdns: &[&[(&str, &[u8])]]) -> Dn {
    Dn {
        rdns: rdns
            .iter()
            .map(|avas| Rdn {
                avas: avas
                    .iter()
                    .map(|(attr, value)| Ava {
                        attr: attr.to_string(),
                        value: value.to_vec(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn check(input: Dn, expected: &str) {
    let norm = Schema::builtin()
        .normalize_dn(&input)
        .unwrap_or_else(|e| panic!("{input:?}: {e}"));
    assert_eq!(norm.as_str(), expected, "{input:?}");
    assert!(!norm.as_str().contains('\0'));
}

#[test]
fn normalize_table() {
    check(dn(&[]), "");
    check(
        dn(&[
            &[("CN", b"John  Smith ")],
            &[("DC", b"Example")],
            &[("dc", b"COM")],
        ]),
        "cn=john smith,dc=example,dc=com",
    );
    check(dn(&[&[("commonName", b"x")]]), "cn=x");
    check(dn(&[&[("2.5.4.3", b"X")]]), "cn=x");
    check(dn(&[&[("0.9.2342.19200300.100.1.25", b"Org")]]), "dc=org");
    check(dn(&[&[("userid", b"Alice")]]), "uid=alice");
    check(dn(&[&[("uidNumber", b"1000")]]), "uidnumber=1000");
    check(dn(&[&[("memberUid", b"Alice")]]), "memberuid=Alice");
    check(
        dn(&[&[("cn", b"a,b+c\"d\\e<f>g;h=i")]]),
        "cn=a\\,b\\+c\\\"d\\\\e\\<f\\>g\\;h\\=i",
    );
    check(dn(&[&[("cn", b"#hash")]]), "cn=\\#hash");
    check(dn(&[&[("cn", b"in#side")]]), "cn=in#side");
    check(dn(&[&[("cn", b"nul\0byte")]]), "cn=nul\\00byte");
    check(
        dn(&[&[("userPassword", b"nul\0 ")]]),
        "userpassword=nul\\00\\ ",
    );
    check(dn(&[&[("userPassword", b" lead")]]), "userpassword=\\ lead");
    check(
        dn(&[&[("userPassword", b"\xff\x01")]]),
        "userpassword=\\FF\\01",
    );
    check(dn(&[&[("cn", "Jürgen".as_bytes())]]), "cn=jürgen");
    check(
        dn(&[&[("uid", b"b"), ("CN", b"Z")], &[("o", b"x")]]),
        "cn=z+uid=b,o=x",
    );
    check(
        dn(&[&[("sn", b"A"), ("cn", b"B"), ("uid", b"C")]]),
        "cn=b+sn=a+uid=c",
    );
    check(
        dn(&[&[("seeAlso", b"CN=Nested,DC=Example")]]),
        "seealso=cn\\=nested\\,dc\\=example",
    );
    check(dn(&[&[("objectClass", b"Person")]]), "objectclass=2.5.6.6");
    check(
        dn(&[&[("telephoneNumber", b"+1 555-0100")]]),
        "telephonenumber=\\+15550100",
    );
}

#[test]
fn normalize_errors() {
    let schema = Schema::builtin();
    match schema.normalize_dn(&dn(&[&[("noSuchAttr", b"x")]])) {
        Err(SchemaError::UnknownAttributeType(a)) => assert_eq!(a, "noSuchAttr"),
        other => panic!("{other:?}"),
    }
    match schema.normalize_dn(&dn(&[&[("cn", b"x")], &[("cn;lang-en", b"y")]])) {
        Err(SchemaError::UnknownAttributeType(a)) => assert_eq!(a, "cn;lang-en"),
        other => panic!("{other:?}"),
    }
    for (attr, value) in [
        ("uidNumber", &b"abc"[..]),
        ("uidNumber", b"007"),
        ("cn", b""),
        ("cn", b"\xff"),
        ("dc", "\u{E9}".as_bytes()),
        ("createTimestamp", b"yesterday"),
        ("seeAlso", b"not a dn"),
    ] {
        match schema.normalize_dn(&dn(&[&[(attr, value)]])) {
            Err(SchemaError::InvalidValue { attr: a, .. }) => {
                assert_eq!(schema.attribute_type(attr).unwrap().name(), a)
            }
            other => panic!("{attr}={value:?}: {other:?}"),
        }
    }
}

#[test]
fn normalize_value_uses_the_schema() {
    let schema = Schema::builtin();
    let check = |rule: MatchingRule, value: &str, expected: &str| {
        assert_eq!(
            schema.normalize_value(rule, value.as_bytes()).unwrap(),
            expected.as_bytes(),
            "{} {value}",
            rule.name()
        )
    };
    check(
        MatchingRule::ObjectIdentifierMatch,
        "inetOrgPerson",
        "2.16.840.1.113730.3.2.2",
    );
    check(
        MatchingRule::ObjectIdentifierMatch,
        "2.16.840.1.113730.3.2.2",
        "2.16.840.1.113730.3.2.2",
    );
    check(MatchingRule::ObjectIdentifierMatch, "commonName", "2.5.4.3");
    check(
        MatchingRule::ObjectIdentifierMatch,
        "caseIgnoreMatch",
        "2.5.13.2",
    );
    check(
        MatchingRule::ObjectIdentifierMatch,
        "unknownThing",
        "unknownthing",
    );
    check(
        MatchingRule::ObjectIdentifierFirstComponentMatch,
        "( 2.5.4.3 NAME 'cn' )",
        "2.5.4.3",
    );
    check(
        MatchingRule::ObjectIdentifierFirstComponentMatch,
        "cn",
        "2.5.4.3",
    );
    check(
        MatchingRule::DistinguishedNameMatch,
        "commonName=A\\2CB,  uidNumber=10",
        "cn=a\\,b,uidnumber=10",
    );
    check(
        MatchingRule::UniqueMemberMatch,
        "UID=Bob,DC=Example#'1'B",
        "uid=bob,dc=example#'1'B",
    );
    check(MatchingRule::CaseIgnoreMatch, " A  B ", "a b");
    assert!(schema
        .normalize_value(MatchingRule::DistinguishedNameMatch, b"uidNumber=x")
        .is_err());
    assert!(schema
        .normalize_value(MatchingRule::DistinguishedNameMatch, b"bogus=1")
        .is_err());
}

#[test]
fn norm_dn_navigation() {
    let schema = Schema::builtin();
    let base = schema
        .normalize_dn(&dn(&[&[("dc", b"Example")], &[("dc", b"com")]]))
        .unwrap();
    let child = base.child("ou=people");
    assert_eq!(child.as_str(), "ou=people,dc=example,dc=com");
    assert_eq!(child.to_string(), child.as_str());
    assert_eq!(child.rdns(), ["ou=people", "dc=example", "dc=com"]);
    assert_eq!(child.parent(), Some(base.clone()));
    assert!(base.is_suffix_of(&child));
    assert!(base.is_suffix_of(&base));
    assert!(!child.is_suffix_of(&base));
    assert!(NormDn::root().is_suffix_of(&child));
    assert!(NormDn::root().is_root());
    assert_eq!(NormDn::root().as_str(), "");
    assert_eq!(NormDn::root().parent(), None);
    let top = base.parent().unwrap().parent().unwrap();
    assert!(top.is_root());
    assert_eq!(NormDn::root().child("dc=com").as_str(), "dc=com");
    let other = schema
        .normalize_dn(&dn(&[&[("dc", b"xexample")], &[("dc", b"com")]]))
        .unwrap();
    assert!(!base.is_suffix_of(&other));
    assert!(!other.is_suffix_of(&base));
}

#[test]
fn legacy_semicolon_separator() {
    let schema = Schema::builtin();
    let norm = |v: &str| {
        schema
            .normalize_value(MatchingRule::DistinguishedNameMatch, v.as_bytes())
            .map(|n| String::from_utf8(n).unwrap())
    };
    assert_eq!(
        norm("CN=Foo;dc=Example; DC=com").unwrap(),
        norm("cn=foo,dc=example,dc=com").unwrap()
    );
    // An escaped ';' stays part of the value.
    assert_eq!(
        norm("cn=a\\;b,dc=com").unwrap(),
        norm("cn=a\\3Bb,dc=com").unwrap()
    );
    assert!(norm("cn=a;;dc=com").is_err());
    assert!(crate::syntax::validate(
        "1.3.6.1.4.1.1466.115.121.1.12",
        b"cn=a;dc=com"
    ));
}
