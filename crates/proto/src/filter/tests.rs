//! RFC 4515 filter strings: parse tables, error tables and generated round trips.

use super::*;
use crate::decoding::DecodeLimits;
use crate::testutil::Gen;

fn eq(attr: &str, value: &[u8]) -> Filter {
    Filter::Equality(attr.into(), value.to_vec())
}

fn sub(attr: &str, initial: Option<&[u8]>, any: &[&[u8]], final_: Option<&[u8]>) -> Filter {
    Filter::Substrings(SubstringFilter {
        attr: attr.into(),
        initial: initial.map(<[u8]>::to_vec),
        any: any.iter().map(|a| a.to_vec()).collect(),
        final_: final_.map(<[u8]>::to_vec),
    })
}

fn ext(attr: Option<&str>, dn: bool, rule: Option<&str>, value: &[u8]) -> Filter {
    Filter::Extensible(MatchingRuleAssertion {
        rule: rule.map(Into::into),
        attr: attr.map(Into::into),
        value: value.to_vec(),
        dn_attributes: dn,
    })
}

#[test]
fn parse_table() {
    // (input, expected, canonical display)
    let cases: Vec<(&str, Filter, &str)> = vec![
        (
            "(cn=Babs Jensen)",
            eq("cn", b"Babs Jensen"),
            "(cn=Babs Jensen)",
        ),
        (
            "(!(cn=Tim Howes))",
            Filter::Not(Box::new(eq("cn", b"Tim Howes"))),
            "(!(cn=Tim Howes))",
        ),
        (
            "(&(objectClass=Person)(|(sn=Jensen)(cn=Babs J*)))",
            Filter::And(vec![
                eq("objectClass", b"Person"),
                Filter::Or(vec![
                    eq("sn", b"Jensen"),
                    sub("cn", Some(b"Babs J"), &[], None),
                ]),
            ]),
            "(&(objectClass=Person)(|(sn=Jensen)(cn=Babs J*)))",
        ),
        (
            "(o=univ*of*mich*)",
            sub("o", Some(b"univ"), &[b"of", b"mich"], None),
            "(o=univ*of*mich*)",
        ),
        ("(seeAlso=)", eq("seeAlso", b""), "(seeAlso=)"),
        (
            "(cn:caseExactMatch:=Fred Flintstone)",
            ext(
                Some("cn"),
                false,
                Some("caseExactMatch"),
                b"Fred Flintstone",
            ),
            "(cn:caseExactMatch:=Fred Flintstone)",
        ),
        (
            "(cn:=Betty Rubble)",
            ext(Some("cn"), false, None, b"Betty Rubble"),
            "(cn:=Betty Rubble)",
        ),
        (
            "(sn:dn:2.4.6.8.10:=Barney Rubble)",
            ext(Some("sn"), true, Some("2.4.6.8.10"), b"Barney Rubble"),
            "(sn:dn:2.4.6.8.10:=Barney Rubble)",
        ),
        (
            "(o:dn:=Ace Industry)",
            ext(Some("o"), true, None, b"Ace Industry"),
            "(o:dn:=Ace Industry)",
        ),
        (
            "(:1.2.3:=Wilma Flintstone)",
            ext(None, false, Some("1.2.3"), b"Wilma Flintstone"),
            "(:1.2.3:=Wilma Flintstone)",
        ),
        (
            "(:DN:2.4.6.8.10:=Dino)",
            ext(None, true, Some("2.4.6.8.10"), b"Dino"),
            "(:dn:2.4.6.8.10:=Dino)",
        ),
        (
            "(cn:dn:2.5.13.5:=x)",
            ext(Some("cn"), true, Some("2.5.13.5"), b"x"),
            "(cn:dn:2.5.13.5:=x)",
        ),
        (
            "(:caseExactMatch:=x)",
            ext(None, false, Some("caseExactMatch"), b"x"),
            "(:caseExactMatch:=x)",
        ),
        (
            "(o=Parens R Us \\28for all your parenthetical needs\\29)",
            eq("o", b"Parens R Us (for all your parenthetical needs)"),
            "(o=Parens R Us \\28for all your parenthetical needs\\29)",
        ),
        ("(cn=*\\2A*)", sub("cn", None, &[b"*"], None), "(cn=*\\2a*)"),
        (
            "(filename=C:\\5cMyFile)",
            eq("filename", b"C:\\MyFile"),
            "(filename=C:\\5cMyFile)",
        ),
        (
            "(bin=\\00\\00\\00\\04)",
            eq("bin", b"\0\0\0\x04"),
            "(bin=\\00\\00\\00\\04)",
        ),
        (
            "(sn=Lu\\c4\\8di\\c4\\87)",
            eq("sn", "Lučić".as_bytes()),
            "(sn=Lučić)",
        ),
        ("(sn=Lučić)", eq("sn", "Lučić".as_bytes()), "(sn=Lučić)"),
        ("(bin=\\ff\\fe)", eq("bin", b"\xff\xfe"), "(bin=\\ff\\fe)"),
        (
            "(1.3.6.1.4.1.1466.0=\\04\\02\\48\\69)",
            eq("1.3.6.1.4.1.1466.0", b"\x04\x02Hi"),
            "(1.3.6.1.4.1.1466.0=\\04\\02Hi)",
        ),
        ("(cn;lang-en=x)", eq("cn;lang-en", b"x"), "(cn;lang-en=x)"),
        (
            "(objectClass=*)",
            Filter::Present("objectClass".into()),
            "(objectClass=*)",
        ),
        ("(cn=a*)", sub("cn", Some(b"a"), &[], None), "(cn=a*)"),
        ("(cn=*a)", sub("cn", None, &[], Some(b"a")), "(cn=*a)"),
        ("(cn=*a*)", sub("cn", None, &[b"a"], None), "(cn=*a*)"),
        (
            "(cn=a*b)",
            sub("cn", Some(b"a"), &[], Some(b"b")),
            "(cn=a*b)",
        ),
        (
            "(cn=a*b*c*d)",
            sub("cn", Some(b"a"), &[b"b", b"c"], Some(b"d")),
            "(cn=a*b*c*d)",
        ),
        (
            "(uidNumber>=1000)",
            Filter::GreaterOrEqual("uidNumber".into(), b"1000".to_vec()),
            "(uidNumber>=1000)",
        ),
        (
            "(uidNumber<=1000)",
            Filter::LessOrEqual("uidNumber".into(), b"1000".to_vec()),
            "(uidNumber<=1000)",
        ),
        (
            "(sn~=jensen)",
            Filter::Approx("sn".into(), b"jensen".to_vec()),
            "(sn~=jensen)",
        ),
        ("(&)", Filter::And(vec![]), "(&)"),
        ("(|)", Filter::Or(vec![]), "(|)"),
        ("(cn=a=b)", eq("cn", b"a=b"), "(cn=a=b)"),
        ("(cn=ab\\29)", eq("cn", b"ab)"), "(cn=ab\\29)"),
    ];
    for (input, expected, display) in cases {
        let parsed = Filter::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(parsed, expected, "{input}");
        assert_eq!(parsed.to_string(), display, "{input}");
        assert_eq!(Filter::parse(display).unwrap(), expected, "{display}");
    }
}

#[test]
fn parse_errors() {
    let cases: &[(&str, usize)] = &[
        ("", 0),
        ("cn=x", 0),
        ("(cn=x", 5),
        ("(cn=x))", 6),
        ("(cn=x)(sn=y)", 6),
        ("( cn=x)", 1),
        ("(cn =x)", 3),
        ("(=x)", 1),
        ("(cn)", 3),
        ("(cn=a(b)", 5),
        ("(cn=\\4)", 4),
        ("(cn=\\zz)", 4),
        ("(cn=\\)", 4),
        ("(cn~x)", 4),
        ("(cn>=a*)", 6),
        ("(cn=a**b)", 8),
        ("(cn:=a*)", 6),
        ("(:=x)", 3),
        ("(:dn:=x)", 6),
        ("(cn:foo bar:=x)", 7),
        ("(cn:1.2.3:dn:=x)", 10),
        ("(1cn=x)", 1),
        ("(cn;=x)", 1),
        ("(1.02=x)", 1),
        ("(&(cn=x)", 8),
        ("(!)", 2),
        ("(!(a=b)(c=d))", 7),
        ("(cn=a\0)", 5),
    ];
    let mut wrong = Vec::new();
    for &(input, offset) in cases {
        match Filter::parse(input) {
            Err(FilterError::Syntax { offset: got, .. }) if got == offset => {}
            other => wrong.push(format!("{input:?}: {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn deep_filters_are_refused() {
    let nest = |n: usize| format!("{}(a=b){}", "(!".repeat(n), ")".repeat(n));
    assert!(Filter::parse(&nest(MAX_PARSE_DEPTH - 1)).is_ok());
    assert_eq!(
        Filter::parse(&nest(MAX_PARSE_DEPTH)),
        Err(FilterError::TooDeep(MAX_PARSE_DEPTH))
    );
    assert_eq!(
        Filter::parse(&nest(100_000)),
        Err(FilterError::TooDeep(MAX_PARSE_DEPTH))
    );
}

#[test]
fn generated_filters_round_trip_through_strings_and_ber() {
    let mut g = Gen::new(4515);
    for _ in 0..5000 {
        let filter = random_filter(&mut g, 4);
        let text = filter.to_string();
        assert_eq!(
            Filter::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}")),
            filter,
            "{text}"
        );
        let mut ber = Vec::new();
        filter.encode_ber(&mut canopy_ber::Writer::new(&mut ber));
        let mut reader = canopy_ber::Reader::new(&ber);
        assert_eq!(
            Filter::decode_ber(&mut reader, &DecodeLimits::default()).unwrap(),
            filter
        );
        assert!(reader.is_empty());
    }
}

/// A filter whose string form round-trips (non-empty substring pieces, valid names).
pub(crate) fn random_filter(g: &mut Gen, depth: usize) -> Filter {
    let choice = if depth == 0 {
        3 + g.below(7)
    } else {
        g.below(10)
    };
    match choice {
        0 => Filter::And(
            (0..g.below(4))
                .map(|_| random_filter(g, depth - 1))
                .collect(),
        ),
        1 => Filter::Or(
            (0..g.below(4))
                .map(|_| random_filter(g, depth - 1))
                .collect(),
        ),
        2 => Filter::Not(Box::new(random_filter(g, depth - 1))),
        3 => Filter::Equality(g.attr(), maybe_empty_value(g)),
        4 => Filter::GreaterOrEqual(g.attr(), maybe_empty_value(g)),
        5 => Filter::LessOrEqual(g.attr(), maybe_empty_value(g)),
        6 => Filter::Approx(g.attr(), maybe_empty_value(g)),
        7 => Filter::Present(g.attr()),
        8 => {
            let initial = g.chance(50).then(|| g.value());
            let any = (0..g.below(3)).map(|_| g.value()).collect::<Vec<_>>();
            let final_ = (g.chance(50) || (initial.is_none() && any.is_empty())).then(|| g.value());
            Filter::Substrings(SubstringFilter {
                attr: g.attr(),
                initial,
                any,
                final_,
            })
        }
        _ => {
            let attr = g.chance(70).then(|| g.attr());
            let rule = (attr.is_none() || g.chance(50)).then(|| {
                ["2.5.13.5", "caseExactMatch", "1.2.840.113556.1.4.803"][g.below(3)].to_owned()
            });
            Filter::Extensible(MatchingRuleAssertion {
                rule,
                attr,
                value: maybe_empty_value(g),
                dn_attributes: g.chance(30),
            })
        }
    }
}

/// A value, sometimes empty.
fn maybe_empty_value(g: &mut Gen) -> Vec<u8> {
    if g.chance(10) {
        Vec::new()
    } else {
        g.value()
    }
}
