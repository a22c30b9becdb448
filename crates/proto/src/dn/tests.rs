//! RFC 4514 DN tables: parsing, escaping, errors and generated round trips.

use super::*;
use crate::testutil::Gen;

fn dn(rdns: &[&[(&str, &[u8])]]) -> Dn {
    Dn {
        rdns: rdns
            .iter()
            .map(|avas| Rdn {
                avas: avas
                    .iter()
                    .map(|(a, v)| Ava {
                        attr: (*a).into(),
                        value: v.to_vec(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[test]
fn parse_table() {
    // (input, expected, display)
    let cases: Vec<(&str, Dn, &str)> = vec![
        ("", dn(&[]), ""),
        ("   ", dn(&[]), ""),
        (
            "dc=example,dc=com",
            dn(&[&[("dc", b"example")], &[("dc", b"com")]]),
            "dc=example,dc=com",
        ),
        (
            "UID=jsmith,DC=example,DC=net",
            dn(&[
                &[("UID", b"jsmith")],
                &[("DC", b"example")],
                &[("DC", b"net")],
            ]),
            "UID=jsmith,DC=example,DC=net",
        ),
        (
            "OU=Sales+CN=J.  Smith,DC=example,DC=net",
            dn(&[
                &[("OU", b"Sales"), ("CN", b"J.  Smith")],
                &[("DC", b"example")],
                &[("DC", b"net")],
            ]),
            "OU=Sales+CN=J.  Smith,DC=example,DC=net",
        ),
        (
            "CN=James \\\"Jim\\\" Smith\\, III,DC=example,DC=net",
            dn(&[
                &[("CN", b"James \"Jim\" Smith, III")],
                &[("DC", b"example")],
                &[("DC", b"net")],
            ]),
            "CN=James \\22Jim\\22 Smith\\2C III,DC=example,DC=net",
        ),
        (
            "CN=Before\\0dAfter,DC=example,DC=net",
            dn(&[
                &[("CN", b"Before\rAfter")],
                &[("DC", b"example")],
                &[("DC", b"net")],
            ]),
            "CN=Before\rAfter,DC=example,DC=net",
        ),
        (
            "1.3.6.1.4.1.1466.0=#04024869",
            dn(&[&[("1.3.6.1.4.1.1466.0", b"Hi")]]),
            "1.3.6.1.4.1.1466.0=Hi",
        ),
        (
            "CN=Lu\\C4\\8Di\\C4\\87",
            dn(&[&[("CN", "Lučić".as_bytes())]]),
            "CN=Lučić",
        ),
        ("cn=Lučić", dn(&[&[("cn", "Lučić".as_bytes())]]), "cn=Lučić"),
        (
            "cn = a , dc = x",
            dn(&[&[("cn", b"a")], &[("dc", b"x")]]),
            "cn=a,dc=x",
        ),
        (
            " cn=a+ sn = b ,dc=x ",
            dn(&[&[("cn", b"a"), ("sn", b"b")], &[("dc", b"x")]]),
            "cn=a+sn=b,dc=x",
        ),
        ("cn=a\\2cb", dn(&[&[("cn", b"a,b")]]), "cn=a\\2Cb"),
        ("cn=a=b", dn(&[&[("cn", b"a=b")]]), "cn=a\\3Db"),
        ("cn=a\\=b", dn(&[&[("cn", b"a=b")]]), "cn=a\\3Db"),
        ("cn=", dn(&[&[("cn", b"")]]), "cn="),
        (
            "cn=,dc=x",
            dn(&[&[("cn", b"")], &[("dc", b"x")]]),
            "cn=,dc=x",
        ),
        ("cn=\\ a", dn(&[&[("cn", b" a")]]), "cn=\\20a"),
        ("cn=a b\\ ", dn(&[&[("cn", b"a b ")]]), "cn=a b\\20"),
        ("cn=a\\20", dn(&[&[("cn", b"a ")]]), "cn=a\\20"),
        ("cn=\\20\\20", dn(&[&[("cn", b"  ")]]), "cn=\\20\\20"),
        ("cn=\\ ", dn(&[&[("cn", b" ")]]), "cn=\\20"),
        ("cn=\\#x", dn(&[&[("cn", b"#x")]]), "cn=\\23x"),
        ("cn=x#y", dn(&[&[("cn", b"x#y")]]), "cn=x#y"),
        (
            "cn=\\<\\>\\;\\+\\\\",
            dn(&[&[("cn", b"<>;+\\")]]),
            "cn=\\3C\\3E\\3B\\2B\\5C",
        ),
        ("cn=a\\00b", dn(&[&[("cn", b"a\0b")]]), "cn=a\\00b"),
        ("cn=\"a,b\"", dn(&[&[("cn", b"a,b")]]), "cn=a\\2Cb"),
        (
            "cn=\"a\\\"b\" , dc=x",
            dn(&[&[("cn", b"a\"b")], &[("dc", b"x")]]),
            "cn=a\\22b,dc=x",
        ),
        ("2.5.4.3=x", dn(&[&[("2.5.4.3", b"x")]]), "2.5.4.3=x"),
        ("cn=#0400", dn(&[&[("cn", b"")]]), "cn="),
        (
            "cn=#0c02c3a9 ,dc=x",
            dn(&[&[("cn", "é".as_bytes())], &[("dc", b"x")]]),
            "cn=é,dc=x",
        ),
        (
            "cn=#0402FFFE",
            dn(&[&[("cn", b"\xff\xfe")]]),
            "cn=#0402fffe",
        ),
        ("x-attr-1=v", dn(&[&[("x-attr-1", b"v")]]), "x-attr-1=v"),
        // RFC 1779's `;` between RDNs, which OpenLDAP takes; an escaped one stays in the value.
        (
            "CN = a ; dc=b;dc=c",
            dn(&[&[("CN", b"a")], &[("dc", b"b")], &[("dc", b"c")]]),
            "CN=a,dc=b,dc=c",
        ),
        ("cn=a\\;b", dn(&[&[("cn", b"a;b")]]), "cn=a\\3Bb"),
    ];
    for (input, expected, display) in cases {
        let parsed = Dn::parse(input.as_bytes()).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(parsed, expected, "{input:?}");
        assert_eq!(parsed.to_string(), display, "{input:?}");
        assert_eq!(
            Dn::parse(display.as_bytes()).unwrap(),
            expected,
            "{display:?}"
        );
    }
}

#[test]
fn parse_errors() {
    let cases: &[(&[u8], usize)] = &[
        (b"cn", 2),
        (b"=a", 0),
        (b"cn=a,", 5),
        (b"cn=a, ", 6),
        (b",cn=a", 0),
        (b"cn=a;;dc=b", 5),
        (b"cn=a<b", 4),
        (b"cn=a\"b", 4),
        (b"cn=a\\", 4),
        (b"cn=a\\x", 4),
        (b"cn=a\\4", 4),
        (b"cn=\\ff", 6),
        (b"cn=\xff", 4),
        (b"cn=a\0", 4),
        (b"1cn=a", 0),
        (b"c_n=a", 1),
        (b"1.02=a", 0),
        (b"cn=#", 3),
        (b"cn=#0", 5),
        (b"cn=#04", 3),
        (b"cn=#0401", 3),
        (b"cn=#3000", 3),
        (b"cn=#040100 x", 11),
        (b"cn=#0401zz", 8),
        (b"cn=\"abc", 7),
        (b"cn=\"a\"b", 6),
        (b"cn=a+", 5),
        (b"OID.2.5.4.3=x", 0),
    ];
    let mut wrong = Vec::new();
    for &(input, offset) in cases {
        match Dn::parse(input) {
            Err(DnError::Syntax { offset: got, .. }) if got == offset => {}
            other => wrong.push(format!("{:?}: {other:?}", String::from_utf8_lossy(input))),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn rdn_parse_and_parent() {
    assert_eq!(Rdn::parse(b"cn=a+sn=b").unwrap().to_string(), "cn=a+sn=b");
    assert!(Rdn::parse(b"cn=a,dc=b").is_err());
    assert!(Rdn::parse(b"").is_err());
    let d = Dn::parse(b"cn=a,ou=b,dc=c").unwrap();
    assert_eq!(d.parent().to_string(), "ou=b,dc=c");
    assert_eq!(d.parent().parent().parent(), Dn::default());
    assert!(d.parent().parent().parent().is_empty());
    assert!(Dn::default().parent().is_empty());
}

#[test]
fn generated_dns_round_trip() {
    let mut g = Gen::new(4514);
    const ATTRS: &[&str] = &["cn", "dc", "OU", "2.5.4.3", "x-a1"];
    for _ in 0..5000 {
        let rdns = (0..g.below(4))
            .map(|_| Rdn {
                avas: (0..1 + g.below(2))
                    .map(|_| Ava {
                        attr: ATTRS[g.below(ATTRS.len())].into(),
                        value: if g.chance(10) { Vec::new() } else { g.value() },
                    })
                    .collect(),
            })
            .collect();
        let original = Dn { rdns };
        let text = original.to_string();
        assert_eq!(
            Dn::parse(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}")),
            original,
            "{text:?}"
        );
    }
}

#[test]
fn display_escapes_edges_and_keeps_runs() {
    let one = |value: &[u8]| dn(&[&[("cn", value)]]).to_string();
    assert_eq!(one(b" a"), "cn=\\20a");
    assert_eq!(one(b"#a"), "cn=\\23a");
    assert_eq!(one(b"a "), "cn=a\\20");
    assert_eq!(one(b" "), "cn=\\20");
    assert_eq!(one(b"  "), "cn=\\20\\20");
    assert_eq!(one(b"a#b c"), "cn=a#b c");
    assert_eq!(one(b"a#"), "cn=a#");
    assert_eq!(one("é ".as_bytes()), "cn=é\\20");
    assert_eq!(
        one("Smith, John é+x".as_bytes()),
        "cn=Smith\\2C John é\\2Bx"
    );
    assert_eq!(one(b"=\\\"<>;"), "cn=\\3D\\5C\\22\\3C\\3E\\3B");
}
