//! Tests across the modules of the crate.

use crate::matching::MatchingRule;
use crate::parse;
use crate::schema::Schema;

/// Deterministic pseudo-random inputs built from the characters the parsers care about: no rule
/// may panic on any of them.
#[test]
fn no_panics_on_odd_input() {
    let alphabet: &[&[u8]] = &[
        b"0",
        b"9",
        b"-",
        b"+",
        b".",
        b",",
        b"Z",
        b"#",
        b"'",
        b"B",
        b" ",
        b"(",
        b")",
        b"$",
        b"=",
        b"\\",
        b"a",
        b"\xff",
        b"\xc3\xa4",
        b"\x00",
        b"\xe2\x80\x8b",
        b"\t",
        b"cn=",
        b"2024",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let schema = Schema::builtin();
    for _ in 0..3000 {
        let len = next() % 24;
        let value: Vec<u8> = (0..len)
            .flat_map(|_| alphabet[next() % alphabet.len()].iter().copied())
            .collect();
        let part = value.get(..value.len() / 2).unwrap_or_default();
        for rule in MatchingRule::all() {
            if let Ok(a) = rule.normalize(&value) {
                let _ = rule.compare(&a, &a);
                let _ = rule.value_matches(&a, &a);
            }
            let _ = rule.value_matches(&value, part);
            let _ = schema.normalize_value(rule, &value);
            let _ = rule.approx_key(&value);
            let _ = rule.normalize_substring(&value);
            let _ = rule.matches_substrings(&value, Some(part), &[part.to_vec()], Some(part));
        }
        let text = String::from_utf8_lossy(&value);
        let _ = parse::parse_attribute_type(&text);
        let _ = parse::parse_object_class(&text);
        let _ = parse::parse_syntax(&text);
        let _ = schema
            .clone()
            .load_text(&format!("ldapsyntax {text}"), "fuzz");
        let _ = schema
            .clone()
            .load_text(&format!("attributetype {text}"), "fuzz");
        let _ = schema
            .clone()
            .load_text(&format!("dn: x\nolcObjectClasses:: {text}"), "fuzz");
    }
}

#[test]
fn builtin_files_list_their_own_definitions() {
    let (types, classes) = Schema::builtin_file("core").expect("core");
    assert!(types.iter().any(|t| t.contains("'dc'")), "{types:?}");
    assert!(
        classes.iter().any(|c| c.contains("'person'")),
        "{classes:?}"
    );
    let (types, _) = Schema::builtin_file("inetorgperson").expect("inetorgperson");
    assert!(types.iter().all(|t| !t.contains("'dc'")), "{types:?}");
    assert!(types
        .iter()
        .any(|t| t.contains("'mail'") || t.contains("'displayName'")));
    assert!(Schema::builtin_file("operational").is_none());
    assert!(Schema::builtin_file("local").is_none());
}

#[test]
fn definitions_are_checked_for_form_and_oid() {
    let schema = Schema::builtin();
    let check = |kind: &str, text: &str| schema.check_definition(kind, text);
    assert!(check("objectclass", "( rawr )").is_err());
    assert!(check("attributetype", "( rawr )").is_err());
    assert!(check("attributetype", "( 1.2.3 NAME 'y' ").is_err());
    assert!(check("objectclass", "( 1.2.3 NAME 'x' SUP nowhere )").is_ok());
    assert!(check("attributetype", "( 1.2.3 NAME 'y' )").is_ok());
    assert!(check("syntax", "( 1.2.3 )").is_err());
}
