//! Tests of the RFC 4512 description parser.

use super::*;

#[test]
fn attribute_type_full() {
    let at = parse_attribute_type(
        "( 2.5.4.3 NAME ( 'cn' 'commonName' ) DESC 'it\\27s \\5C here' OBSOLETE SUP name \
         EQUALITY caseIgnoreMatch ORDERING caseIgnoreOrderingMatch SUBSTR caseIgnoreSubstringsMatch \
         SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32768} SINGLE-VALUE COLLECTIVE NO-USER-MODIFICATION \
         USAGE directoryOperation X-ORIGIN ( 'RFC 4519' 'x' ) x-ordered 'VALUES' )",
    )
    .unwrap();
    assert_eq!(at.oid, "2.5.4.3");
    assert_eq!(at.names, ["cn", "commonName"]);
    assert_eq!(at.desc.as_deref(), Some("it's \\ here"));
    assert!(at.obsolete && at.single_value && at.collective && at.no_user_modification);
    assert_eq!(at.sup.as_deref(), Some("name"));
    assert_eq!(at.equality.as_deref(), Some("caseIgnoreMatch"));
    assert_eq!(at.ordering.as_deref(), Some("caseIgnoreOrderingMatch"));
    assert_eq!(at.substr.as_deref(), Some("caseIgnoreSubstringsMatch"));
    assert_eq!(
        at.syntax.as_deref(),
        Some("1.3.6.1.4.1.1466.115.121.1.15{32768}")
    );
    assert_eq!(at.usage, Some(Usage::DirectoryOperation));
    assert_eq!(
        at.extensions,
        vec![
            (
                "X-ORIGIN".to_string(),
                vec!["RFC 4519".to_string(), "x".to_string()]
            ),
            ("X-ORDERED".to_string(), vec!["VALUES".to_string()]),
        ]
    );
}

#[test]
fn attribute_type_minimal_forms() {
    for (text, oid, names) in [
        ("(1.2.3 SYNTAX 1.2)", "1.2.3", vec![]),
        ("( 1.2.3 NAME 'a' SUP b )", "1.2.3", vec!["a"]),
        ("(\n1.2.3\tNAME('a''b')SUP b)", "1.2.3", vec!["a", "b"]),
        ("( MyOid:1 NAME a SUP b )", "MyOid:1", vec!["a"]),
        ("( 1.2.3 name 'a' sup b )", "1.2.3", vec!["a"]),
        ("( '1.2.3' SYNTAX '1.2' )", "1.2.3", vec![]),
    ] {
        let at = parse_attribute_type(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(at.oid, oid, "{text}");
        assert_eq!(at.names, names, "{text}");
    }
}

#[test]
fn object_class_full() {
    let oc = parse_object_class(
        "( 2.5.6.6 NAME 'person' DESC 'a person' SUP top STRUCTURAL MUST ( sn $ cn ) \
         MAY ( userPassword $ telephoneNumber$seeAlso $ description ) X-ORIGIN 'RFC 4519' )",
    )
    .unwrap();
    assert_eq!(oc.oid, "2.5.6.6");
    assert_eq!(oc.names, ["person"]);
    assert_eq!(oc.sup, ["top"]);
    assert_eq!(oc.kind, ObjectClassKind::Structural);
    assert_eq!(oc.must, ["sn", "cn"]);
    assert_eq!(
        oc.may,
        ["userPassword", "telephoneNumber", "seeAlso", "description"]
    );
    let oc = parse_object_class("( 1.2 NAME 'x' SUP ( a $ b ) AUXILIARY )").unwrap();
    assert_eq!(oc.sup, ["a", "b"]);
    assert_eq!(oc.kind, ObjectClassKind::Auxiliary);
    let oc = parse_object_class("( 1.2 ABSTRACT )").unwrap();
    assert_eq!(oc.kind, ObjectClassKind::Abstract);
    let oc = parse_object_class("( 1.2 )").unwrap();
    assert_eq!(oc.kind, ObjectClassKind::Structural);
}

fn check_at_error(text: &str, offset: usize, reason_part: &str) {
    let err = parse_attribute_type(text).expect_err(text);
    assert_eq!(err.offset, offset, "{text}: {err:?}");
    assert!(err.reason.contains(reason_part), "{text}: {err:?}");
}

#[test]
fn attribute_type_errors() {
    check_at_error("1.2.3 NAME 'a'", 0, "must start with '('");
    check_at_error("( 1.2.3 NAME 'a'", 16, "unexpected end");
    check_at_error("( 1.2.3 NAME 'a )", 13, "unterminated");
    check_at_error("( 1.2.3 FOO )", 8, "unknown or repeated keyword FOO");
    check_at_error("( 1.2.3 SYNTAX 1.2 SYNTAX 1.3 )", 19, "SYNTAX given twice");
    check_at_error("( 1.2.3 USAGE sideways )", 14, "unknown USAGE");
    check_at_error("( 1.2.3 DESC x )", 13, "expected quoted description");
    check_at_error("( 1.2.3 ) trailing", 10, "after the closing");
    check_at_error("( 1.2.3 DESC 'bad \\zz' )", 13, "bad escape");
    check_at_error("( 1.2.3 NAME ( ) )", 16, "empty name list");
    check_at_error("( ( 1.2 ) )", 2, "expected numeric OID");
    check_at_error("( 1.2.3 SYNTAX ( 1.2 ) )", 15, "expected syntax OID");
}

#[test]
fn object_class_errors() {
    for (text, offset, part) in [
        ("( 1.2 MUST ( a $ ) )", 17, "malformed oid list"),
        ("( 1.2 MUST ( a b ) )", 15, "malformed oid list"),
        ("( 1.2 MUST a MUST b )", 13, "MUST given twice"),
        ("( 1.2 ABSTRACT AUXILIARY )", 15, "kind given twice"),
        ("( 1.2 EQUALITY x )", 6, "unknown keyword EQUALITY"),
        ("( 1.2 SUP $ )", 10, "expected oid"),
    ] {
        let err = parse_object_class(text).expect_err(text);
        assert_eq!(err.offset, offset, "{text}: {err:?}");
        assert!(err.reason.contains(part), "{text}: {err:?}");
    }
}

#[test]
fn object_identifier_directive() {
    assert_eq!(
        parse_object_identifier("OLcfg 1.3.6.1.4.1.4203.1.12.2").unwrap(),
        ("OLcfg".to_string(), "1.3.6.1.4.1.4203.1.12.2".to_string())
    );
    assert!(parse_object_identifier("onlyname").is_err());
    assert!(parse_object_identifier("a b c").is_err());
}

#[test]
fn syntax_descriptions() {
    let syntax = parse_syntax(
        "( 1.2.3 NAME 'Named' DESC 'a \\27quoted\\27 one' X-SUBST '1.2' X-NOT-HUMAN-READABLE 'TRUE' )",
    )
    .unwrap();
    assert_eq!(syntax.oid, "1.2.3");
    assert_eq!(syntax.desc.as_deref(), Some("a 'quoted' one"));
    assert_eq!(
        syntax.extensions,
        vec![
            ("X-SUBST".to_string(), vec!["1.2".to_string()]),
            ("X-NOT-HUMAN-READABLE".to_string(), vec!["TRUE".to_string()]),
        ]
    );
    assert_eq!(parse_syntax("(1.2.3)").unwrap().desc, None);
    for (text, offset) in [
        ("( 1.2.3 DESC 'a' DESC 'b' )", 17),
        ("( 1.2.3 SYNTAX 1.2 )", 8),
        ("( 1.2.3 DESC 'a'", 16),
        ("( 1.2.3 ) extra", 10),
    ] {
        assert_eq!(parse_syntax(text).unwrap_err().offset, offset, "{text}");
    }
}
