//! Tables for every matching rule: normal forms, ordering, substrings and approximate keys.

use super::*;
use MatchingRule::*;

fn norm(rule: MatchingRule, value: &str) -> Option<String> {
    rule.normalize(value.as_bytes())
        .ok()
        .map(|v| String::from_utf8(v).unwrap())
}

fn check_normalize(rule: MatchingRule, table: &[(&str, Option<&str>)]) {
    for (input, expected) in table {
        assert_eq!(
            norm(rule, input).as_deref(),
            *expected,
            "{} of {input:?}",
            rule.name()
        );
    }
}

/// Every pair of neighbouring values must be in ascending order.
fn check_order(rule: MatchingRule, ascending: &[&str]) {
    let normal: Vec<Vec<u8>> = ascending
        .iter()
        .map(|v| rule.normalize(v.as_bytes()).unwrap())
        .collect();
    for (i, pair) in normal.windows(2).enumerate() {
        assert_eq!(
            rule.compare(&pair[0], &pair[1]),
            Ordering::Less,
            "{}: {:?} < {:?}",
            rule.name(),
            ascending[i],
            ascending[i + 1]
        );
        assert_eq!(rule.compare(&pair[1], &pair[0]), Ordering::Greater);
        assert_eq!(rule.compare(&pair[0], &pair[0]), Ordering::Equal);
    }
}

type Substrings<'a> = (
    &'a str,
    Option<&'a str>,
    &'a [&'a str],
    Option<&'a str>,
    bool,
);

fn check_substrings(rule: MatchingRule, table: &[Substrings<'_>]) {
    for (value, initial, any, final_, expected) in table {
        let any: Vec<Vec<u8>> = any.iter().map(|a| a.as_bytes().to_vec()).collect();
        let got = rule
            .matches_substrings(
                value.as_bytes(),
                initial.map(str::as_bytes),
                &any,
                final_.map(str::as_bytes),
            )
            .unwrap();
        assert_eq!(
            got,
            *expected,
            "{} {value:?} {initial:?} {any:?} {final_:?}",
            rule.name()
        );
    }
}

#[test]
fn metadata() {
    for rule in MatchingRule::all() {
        assert_eq!(MatchingRule::by_name_or_oid(rule.oid()), Some(rule));
        assert_eq!(MatchingRule::by_name_or_oid(rule.name()), Some(rule));
        assert_eq!(
            MatchingRule::by_name_or_oid(&rule.name().to_ascii_uppercase()),
            Some(rule)
        );
        assert!(crate::values::is_numeric_oid(rule.oid()));
        assert!(rule
            .definition()
            .starts_with(&format!("( {} NAME '", rule.oid())));
    }
    assert_eq!(
        MatchingRule::by_name_or_oid("2.5.13.2"),
        Some(CaseIgnoreMatch)
    );
    assert_eq!(MatchingRule::by_name_or_oid("nosuchMatch"), None);
    assert_eq!(CaseIgnoreOrderingMatch.kind(), MatchKind::Ordering);
    assert_eq!(CaseIgnoreSubstringsMatch.kind(), MatchKind::Substrings);
    assert_eq!(
        CaseIgnoreMatch.definition(),
        "( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"
    );
}

#[test]
fn case_ignore() {
    let table = [
        ("John Smith", Some("john smith")),
        ("  JOHN   SMITH  ", Some("john smith")),
        ("  John\u{00A0}Smith\u{3000}", Some("john smith")),
        ("\tJohn\r\n", Some("\tjohn\r\n")),
        ("Stra\u{DF}e \u{C4}rger", Some("stra\u{DF}e \u{E4}rger")),
        ("\u{200B}x\u{AD}y", Some("\u{200B}x\u{AD}y")),
        ("\u{FF26}ull Cafe\u{301}", Some("full caf\u{E9}")),
        ("   ", Some(" ")),
        ("", None),
    ];
    check_normalize(CaseIgnoreMatch, &table);
    check_normalize(CaseIgnoreOrderingMatch, &table);
    check_normalize(CaseIgnoreSubstringsMatch, &table);
    assert!(CaseIgnoreMatch.normalize(b"\xff").is_err());
    check_order(
        CaseIgnoreOrderingMatch,
        &["Alpha", "beta", "GAMMA", "gamma z"],
    );
    check_substrings(
        CaseIgnoreSubstringsMatch,
        &[
            ("John Smith", Some("jo"), &[], None, true),
            ("John Smith", Some("JOHN  "), &[], Some("smith"), true),
            ("John Smith", None, &["N S"], None, true),
            ("John Smith", None, &["ns"], None, false),
            ("John Smith", Some("smith"), &[], None, false),
            ("John Smith", None, &["o", "i"], Some("h"), true),
            ("John Smith", None, &["i", "o"], None, false),
            ("John Smith", Some("john"), &[], Some("john"), false),
            ("aaa", Some("aa"), &[], Some("aa"), false),
            ("abcabc", Some("a"), &["c", "b"], Some("c"), true),
            ("  padded  ", Some(" pad"), &[], Some("ded  "), true),
        ],
    );
    assert_eq!(
        CaseIgnoreSubstringsMatch
            .normalize_substring(b"  Foo  BAR ")
            .unwrap(),
        b" foo bar "
    );
}

#[test]
fn case_exact() {
    check_normalize(
        CaseExactMatch,
        &[
            ("John  Smith ", Some("John Smith")),
            (" x ", Some("x")),
            ("", None),
        ],
    );
    check_order(CaseExactOrderingMatch, &["B", "a", "b"]);
    check_substrings(
        CaseExactSubstringsMatch,
        &[
            ("John Smith", Some("John"), &[], None, true),
            ("John Smith", Some("john"), &[], None, false),
            ("John Smith", None, &["n  S"], None, true),
        ],
    );
}

#[test]
fn ia5() {
    check_normalize(
        CaseIgnoreIA5Match,
        &[
            ("User@Example.COM", Some("user@example.com")),
            (" a  b ", Some("a b")),
            ("caf\u{E9}", None),
        ],
    );
    check_normalize(
        CaseExactIA5Match,
        &[("/home/Alice", Some("/home/Alice")), ("\u{E9}", None)],
    );
    check_substrings(
        CaseIgnoreIA5SubstringsMatch,
        &[
            ("user@Example.com", None, &["EXAMPLE"], Some(".com"), true),
            ("user@example.com", Some("admin"), &[], None, false),
        ],
    );
    check_substrings(
        CaseExactIA5SubstringsMatch,
        &[
            ("alice", Some("al"), &[], None, true),
            ("alice", Some("AL"), &[], None, false),
        ],
    );
}

#[test]
fn numeric_string() {
    check_normalize(
        NumericStringMatch,
        &[
            ("123 456", Some("123456")),
            (" 1 2 ", Some("12")),
            ("12a", None),
            ("", None),
        ],
    );
    check_order(NumericStringOrderingMatch, &["0 1", "1", "1 0", "2"]);
    check_substrings(
        NumericStringSubstringsMatch,
        &[
            ("123 456 789", Some("1234"), &["6 7"], Some("89"), true),
            ("123456", None, &["35"], None, false),
        ],
    );
}

#[test]
fn telephone_number() {
    check_normalize(
        TelephoneNumberMatch,
        &[
            ("+1 555-0100", Some("+15550100")),
            ("+1 (555) 0100", Some("+1(555)0100")),
            ("--", None),
            ("555_0100", None),
        ],
    );
    assert_eq!(
        norm(TelephoneNumberMatch, "+49 30 1234-5"),
        norm(TelephoneNumberMatch, "+4930-12345")
    );
    check_substrings(
        TelephoneNumberSubstringsMatch,
        &[
            ("+1 555-0100", Some("+1555"), &[], None, true),
            ("+1 555-0100", None, &["5-5"], Some("01 00"), true),
            ("+1 555-0100", Some("555"), &[], None, false),
        ],
    );
}

#[test]
fn integer() {
    check_normalize(
        IntegerMatch,
        &[
            ("0", Some("0")),
            ("42", Some("42")),
            ("-42", Some("-42")),
            ("042", None),
            ("+42", None),
            ("-0", None),
            ("4 2", None),
            ("", None),
            ("-", None),
            ("abc", None),
        ],
    );
    check_order(
        IntegerOrderingMatch,
        &[
            "-1000",
            "-999",
            "-10",
            "-9",
            "0",
            "9",
            "10",
            "999",
            "1000",
            "123456789012345678901234567890",
        ],
    );
    assert_eq!(
        norm(IntegerFirstComponentMatch, "( 17 NAME 'rule' )").as_deref(),
        Some("17")
    );
}

/// (rule, stored value, assertion value, expected match); `None` when either value is invalid.
#[test]
fn value_matches_table() {
    let table: &[(MatchingRule, &str, &str, Option<bool>)] = &[
        (IntegerBitAndMatch, "7", "5", Some(true)),
        (IntegerBitAndMatch, "5", "7", Some(false)),
        (IntegerBitAndMatch, "514", "2", Some(true)),
        (IntegerBitAndMatch, "514", "514", Some(true)),
        (IntegerBitAndMatch, "512", "2", Some(false)),
        (IntegerBitAndMatch, "0", "0", Some(true)),
        (IntegerBitAndMatch, "-1", "4096", Some(true)),
        (IntegerBitAndMatch, "-2", "1", Some(false)),
        (
            IntegerBitAndMatch,
            "9223372036854775807",
            "4611686018427387904",
            Some(true),
        ),
        (IntegerBitAndMatch, "9223372036854775808", "1", None),
        (IntegerBitAndMatch, "3", "0x1", None),
        (IntegerBitAndMatch, "03", "1", None),
        (IntegerBitOrMatch, "6", "3", Some(true)),
        (IntegerBitOrMatch, "4", "3", Some(false)),
        (IntegerBitOrMatch, "0", "0", Some(false)),
        (
            IntegerBitOrMatch,
            "-9223372036854775808",
            "-9223372036854775808",
            Some(true),
        ),
        (IntegerBitOrMatch, "1", "abc", None),
        (IntegerMatch, "42", "42", Some(true)),
        (IntegerMatch, "42", "43", Some(false)),
        (IntegerOrderingMatch, "42", "43", Some(true)),
        (IntegerOrderingMatch, "43", "43", Some(false)),
        (CaseIgnoreMatch, "Foo  Bar", "foo bar", Some(true)),
        (CaseIgnoreSubstringsMatch, "foo", "foo", Some(false)),
        (RdnMatch, "CN=Foo+uid=x", "uid=x+cn=foo", Some(true)),
        (RdnMatch, "cn=foo", "cn=bar", Some(false)),
        (RdnMatch, "cn=foo,dc=com", "cn=foo", None),
        (RdnMatch, "", "", None),
        (
            CertificateListExactMatch,
            "\x30\x01",
            "\x30\x01",
            Some(true),
        ),
        (
            CertificateListExactMatch,
            "\x30\x01",
            "\x30\x02",
            Some(false),
        ),
        (AttributeCertificateExactMatch, "ac", "ac", Some(true)),
        (AttributeCertificateExactMatch, "ac", "AC", Some(false)),
        (CertificatePairExactMatch, "p", "p", Some(true)),
    ];
    for (rule, value, assertion, expected) in table {
        let got = match (
            rule.normalize(value.as_bytes()),
            rule.normalize(assertion.as_bytes()),
        ) {
            (Ok(v), Ok(a)) => Some(rule.value_matches(&v, &a)),
            _ => None,
        };
        assert_eq!(got, *expected, "{} {value:?} {assertion:?}", rule.name());
    }
}

#[test]
fn openldap_extra_rules_metadata() {
    for (name, oid, syntax) in [
        (
            "integerBitAndMatch",
            "1.2.840.113556.1.4.803",
            "1.3.6.1.4.1.1466.115.121.1.27",
        ),
        (
            "integerBitOrMatch",
            "1.2.840.113556.1.4.804",
            "1.3.6.1.4.1.1466.115.121.1.27",
        ),
        (
            "rdnMatch",
            "1.2.36.79672281.1.13.3",
            "1.2.36.79672281.1.5.0",
        ),
        ("certificateListExactMatch", "2.5.13.38", "1.3.6.1.1.15.5"),
        (
            "attributeCertificateExactMatch",
            "2.5.13.45",
            "1.3.6.1.4.1.4203.666.11.10.2.2",
        ),
    ] {
        let rule = MatchingRule::by_name_or_oid(name).unwrap();
        assert_eq!(MatchingRule::by_name_or_oid(oid), Some(rule));
        assert_eq!((rule.oid(), rule.syntax_oid()), (oid, syntax));
        assert_eq!(rule.kind(), MatchKind::Equality);
        assert_eq!(
            rule.definition(),
            format!("( {oid} NAME '{name}' SYNTAX {syntax} )")
        );
    }
}

#[test]
fn generalized_time() {
    check_normalize(
        GeneralizedTimeMatch,
        &[
            ("20240102030405Z", Some("20240102030405Z")),
            ("20240102030405.500Z", Some("20240102030405.5Z")),
            ("20240102030405,25Z", Some("20240102030405.25Z")),
            ("20240102030405.000Z", Some("20240102030405Z")),
            ("202401020304Z", Some("20240102030400Z")),
            ("2024010203Z", Some("20240102030000Z")),
            ("2024010203.5Z", Some("20240102033000Z")),
            (
                "2024010203.999999999999Z",
                Some("20240102035959.999999996Z"),
            ),
            ("202401020304.25Z", Some("20240102030415Z")),
            ("20240102030405+0100", Some("20240102020405Z")),
            ("20240102030405-0130", Some("20240102043405Z")),
            ("20240101003000+01", Some("20231231233000Z")),
            ("20231231233000-0100", Some("20240101003000Z")),
            ("20240228230000-0200", Some("20240229010000Z")),
            ("20240102030405", None),
            ("20241302030405Z", None),
            ("20240132030405Z", None),
            ("20240102250405Z", None),
            ("20240102030405.Z", None),
            ("20240102030405+2400", None),
            ("20240102030405Zx", None),
            ("2024", None),
        ],
    );
    check_order(
        GeneralizedTimeOrderingMatch,
        &[
            "19991231235959Z",
            "20240102030405Z",
            "20240102030405.05Z",
            "20240102030405.5Z",
            "20240102020406-0100",
        ],
    );
}

#[test]
fn octet_string() {
    assert_eq!(OctetStringMatch.normalize(b"\x00Ab ").unwrap(), b"\x00Ab ");
    check_order(OctetStringOrderingMatch, &["A", "AB", "a"]);
    check_substrings(
        OctetStringSubstringsMatch,
        &[
            ("secret", Some("sec"), &[], None, true),
            ("secret", Some("SEC"), &[], None, false),
            ("a  b", None, &["a  b"], None, true),
        ],
    );
}

#[test]
fn boolean_bit_string_uuid_csn() {
    check_normalize(
        BooleanMatch,
        &[
            ("TRUE", Some("TRUE")),
            ("FALSE", Some("FALSE")),
            ("true", None),
            ("", None),
        ],
    );
    check_normalize(
        BitStringMatch,
        &[
            ("'0101'B", Some("'0101'B")),
            ("''B", Some("''B")),
            ("'2'B", None),
            ("0101", None),
        ],
    );
    check_normalize(
        UuidMatch,
        &[
            (
                "597AE2F6-16A6-1027-98F4-D28B5365DC14",
                Some("597ae2f6-16a6-1027-98f4-d28b5365dc14"),
            ),
            ("597ae2f616a6102798f4d28b5365dc14", None),
        ],
    );
    check_order(
        UuidOrderingMatch,
        &[
            "00000000-0000-0000-0000-000000000001",
            "0000000A-0000-0000-0000-000000000000",
        ],
    );
    check_normalize(
        CsnMatch,
        &[
            (
                "20240102030405.123456Z#000000#000#000000",
                Some("20240102030405.123456Z#000000#000#000000"),
            ),
            ("20240102030405.123456Z#000000#000", None),
            ("junk", None),
        ],
    );
    check_order(
        CsnOrderingMatch,
        &[
            "20240102030405.123456Z#000000#000#000000",
            "20240102030405.123456Z#000001#000#000000",
            "20240102030405.123457Z#000000#000#000000",
        ],
    );
}

#[test]
fn oid_and_lists() {
    check_normalize(
        ObjectIdentifierMatch,
        &[
            ("2.5.4.3", Some("2.5.4.3")),
            ("CN", Some("cn")),
            (" cn ", None), // slapd: `(objectClass= person)` is Undefined
            ("1.", None),
        ],
    );
    check_normalize(
        ObjectIdentifierFirstComponentMatch,
        &[
            ("( 2.5.4.3 NAME 'cn' SUP name )", Some("2.5.4.3")),
            ("(2.5.4.3)", Some("2.5.4.3")),
            ("2.5.4.3", Some("2.5.4.3")),
        ],
    );
    check_normalize(
        CaseIgnoreListMatch,
        &[
            ("1 Main  St $ Springfield", Some("1 main st$springfield")),
            ("", None),
        ],
    );
    check_normalize(
        UniqueMemberMatch,
        &[
            ("CN=Alice,DC=Example", Some("cn=alice,dc=example")),
            (
                "cn=Alice,dc=example#'0101'B",
                Some("cn=alice,dc=example#'0101'B"),
            ),
            ("cn=Alice#'0102'B", None),
        ],
    );
    check_normalize(
        DistinguishedNameMatch,
        &[(
            " CN = Alice + SN=B , DC=Example ",
            Some("cn=alice+sn=b,dc=example"),
        )],
    );
}

#[test]
fn substrings_need_a_substrings_rule() {
    assert!(IntegerMatch
        .matches_substrings(b"12", Some(b"1"), &[], None)
        .is_err());
    assert!(BooleanMatch.normalize_substring(b"T").is_err());
    assert!(CaseIgnoreMatch
        .matches_substrings(b"\xff", Some(b"a"), &[], None)
        .is_err());
}

#[test]
fn approx_keys() {
    let key = |rule: MatchingRule, v: &str| rule.approx_key(v.as_bytes()).unwrap();
    assert_eq!(
        key(CaseIgnoreMatch, "Jon Smyth"),
        key(CaseIgnoreMatch, "john  SMITH")
    );
    assert_ne!(
        key(CaseIgnoreMatch, "John Smith"),
        key(CaseIgnoreMatch, "Jane Doe")
    );
    // Observed on slapd: robert ~ robart but not rupert (codes RBRT, RPRT).
    assert_eq!(
        key(CaseIgnoreIA5Match, "Robert"),
        key(CaseIgnoreIA5Match, "robart")
    );
    assert_ne!(
        key(CaseIgnoreIA5Match, "Robert"),
        key(CaseIgnoreIA5Match, "rupert")
    );
    assert_eq!(key(IntegerMatch, "42"), b"42");
    assert!(IntegerMatch.approx_key(b"x").is_err());
    assert!(!IntegerMatch.has_phonetic_approx());
    assert!(TelephoneNumberMatch.approx_value_codes(b"1").is_err());
    let codes = |v: &str| CaseExactMatch.approx_assertion_codes(v.as_bytes()).unwrap();
    assert_eq!(codes("\u{6F22}\u{5B57}"), Vec::<String>::new());
    assert!(!MatchingRule::approx_codes_match(
        &CaseExactMatch.approx_value_codes(b"x").unwrap(),
        &codes("\u{6F22}")
    ));
    assert!(MatchingRule::approx_codes_match(
        &CaseExactMatch.approx_value_codes(b"John Smith").unwrap(),
        &codes("SMYTH")
    ));
}

/// Substring preparation differences observed on slapd 2.5.
#[test]
fn substrings_as_slapd_prepares_them() {
    // IA5 rules trim the ends of every part; an all-space part matches anything.
    check_substrings(
        CaseIgnoreIA5Match,
        &[
            ("John.Smith@Example.COM", Some("john "), &[], None, true),
            ("John.Smith@Example.COM", None, &[" john"], None, true),
            ("John.Smith@Example.COM", None, &["n.s "], None, true),
            ("John.Smith@Example.COM", None, &[" "], None, true),
            ("John.Smith@Example.COM", None, &["jo hn"], None, false),
        ],
    );
    // Directory strings keep a part's inner and end spaces significant.
    check_substrings(
        CaseIgnoreSubstringsMatch,
        &[
            ("John Smith", None, &[" "], None, true),
            ("JohnSmith", None, &[" "], None, false),
            ("John Smith", Some("john "), &[], None, true),
            ("Caf\u{E9} \u{FF46}ull", None, &["E\u{301} F"], None, true),
        ],
    );
    // Postal addresses: value lines prepared one by one, parts as plain strings.
    check_substrings(
        CaseIgnoreListSubstringsMatch,
        &[
            ("1 Main St $ Springfield", None, &["st$spr"], None, true),
            ("1 Main St $ Springfield", None, &["st $ spr"], None, false),
            (
                "1 Main St $ Springfield",
                Some("1 main st $"),
                &[],
                None,
                false,
            ),
        ],
    );
    // Numeric and telephone parts with nothing left are invalid (slapd: Undefined).
    assert!(TelephoneNumberSubstringsMatch
        .normalize_substring(b"- ")
        .is_err());
    assert!(NumericStringSubstringsMatch
        .normalize_substring(b"  ")
        .is_err());
    assert!(TelephoneNumberSubstringsMatch
        .matches_substrings(b"555-1234", None, &[b"-".to_vec()], None)
        .is_err());
    assert_eq!(
        TelephoneNumberSubstringsMatch
            .normalize_substring(b"5-5 5")
            .unwrap(),
        b"555"
    );
}

#[test]
fn ascii_normal_form_is_what_normalize_says() {
    let values: &[&[u8]] = &[
        b"user0001234",
        b"User0001234",
        b"USER0001234",
        b"a",
        b"A",
        b"",
        b" ",
        b"a b",
        b" a",
        b"a ",
        b"a\tb",
        b"\x01",
        b"caf\xc3\xa9",
        b"CAF\xc3\x89",
        b"\xff",
        b"x=y,+<>#;\"\\",
        b"0123456789",
    ];
    let rules = [
        CaseIgnoreMatch,
        CaseIgnoreOrderingMatch,
        CaseIgnoreSubstringsMatch,
        DirectoryStringFirstComponentMatch,
        CaseIgnoreIA5Match,
        CaseIgnoreIA5SubstringsMatch,
        CaseExactMatch,
        CaseExactOrderingMatch,
        CaseExactSubstringsMatch,
        CaseExactIA5Match,
        CaseExactIA5SubstringsMatch,
        IntegerMatch,
        OctetStringMatch,
        DistinguishedNameMatch,
        TelephoneNumberMatch,
    ];
    let mut fast = 0;
    for rule in rules {
        // Every normal form of every value, and a few that are no value's normal form.
        let mut norms: Vec<Vec<u8>> = values
            .iter()
            .filter_map(|v| rule.normalize(v).ok())
            .collect();
        norms.extend([
            b"".to_vec(),
            b"USER0001234".to_vec(),
            b"user000123".to_vec(),
        ]);
        for value in values {
            for norm in &norms {
                let slow = rule.normalize(value).ok().map(|n| n == *norm);
                if let Some(answer) = rule.ascii_normal_form_is(value, norm) {
                    fast += 1;
                    assert_eq!(Some(answer), slow, "{} {value:?} {norm:?}", rule.name());
                }
            }
        }
    }
    assert!(fast > 500, "the fast path was taken {fast} times");
}
