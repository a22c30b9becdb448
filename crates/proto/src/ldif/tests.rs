//! LDIF tables: output of Debian's slapcat and ldapsearch, hand-written change records, errors,
//! and writer output compared with slapcat's.

use super::*;
use crate::message::{Change, Control, ModifyOperation, PartialAttribute};

fn read_all(text: &[u8]) -> Result<Vec<LdifRecord>, LdifError> {
    LdifReader::new(text).collect()
}

fn content(dn: &str, attrs: &[(&str, &[u8])]) -> LdifRecord {
    LdifRecord::Content {
        dn: dn.as_bytes().to_vec(),
        attrs: attrs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.to_vec()))
            .collect(),
    }
}

fn change(dn: &str, change: LdifChange) -> LdifRecord {
    LdifRecord::Change {
        dn: dn.as_bytes().to_vec(),
        controls: Vec::new(),
        change,
    }
}

fn modification(operation: ModifyOperation, name: &str, values: &[&[u8]]) -> Change {
    Change {
        operation,
        modification: PartialAttribute {
            name: name.into(),
            values: values.iter().map(|v| v.to_vec()).collect(),
        },
    }
}

fn value<'a>(record: &'a LdifRecord, name: &str) -> Vec<&'a [u8]> {
    match record {
        LdifRecord::Content { attrs, .. } => attrs
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
            .collect(),
        LdifRecord::Change { .. } => Vec::new(),
    }
}

#[test]
fn reads_what_openldap_tools_write() {
    let files: &[(&str, &[u8])] = &[
        ("slapcat", include_bytes!("testdata/slapcat.ldif")),
        (
            "slapcat -o ldif-wrap=76",
            include_bytes!("testdata/slapcat-wrap76.ldif"),
        ),
        (
            "ldapsearch -LLL",
            include_bytes!("testdata/ldapsearch-LLL.ldif"),
        ),
        (
            "ldapsearch -L with paging",
            include_bytes!("testdata/ldapsearch-L.ldif"),
        ),
    ];
    let photo: Vec<u8> = (0..=255).collect();
    let long = vec![b'x'; 150];
    for (tool, text) in files {
        let records = read_all(text).unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert_eq!(records.len(), 3, "{tool}");
        let person = records
            .iter()
            .find(|r| matches!(r, LdifRecord::Content { dn, .. } if dn.starts_with("cn=J".as_bytes())))
            .unwrap_or_else(|| panic!("{tool}: no person"));
        let LdifRecord::Content { dn, .. } = person else {
            unreachable!()
        };
        assert_eq!(
            dn.as_slice(),
            "cn=Jürgen Müller,dc=example,dc=com".as_bytes(),
            "{tool}"
        );
        assert_eq!(
            value(person, "cn"),
            vec!["Jürgen Müller".as_bytes()],
            "{tool}"
        );
        assert_eq!(value(person, "jpegPhoto"), vec![photo.as_slice()], "{tool}");
        assert_eq!(
            value(person, "description"),
            vec![
                long.as_slice(),
                b"trailing space ",
                b":colon",
                b"<angle",
                b"leading"
            ],
            "{tool}"
        );
        assert_eq!(value(person, "title"), vec![b"".as_slice()], "{tool}");
        assert_eq!(
            value(person, "userPassword"),
            vec![b"secret".as_slice()],
            "{tool}"
        );
    }
}

#[test]
fn reads_slapcat_of_cn_config() {
    let records = read_all(include_bytes!("testdata/slapcat-config.ldif")).unwrap();
    let dns: Vec<String> = records
        .iter()
        .map(|r| match r {
            LdifRecord::Content { dn, .. } => String::from_utf8_lossy(dn).into_owned(),
            LdifRecord::Change { .. } => panic!("change record in slapcat output"),
        })
        .collect();
    assert_eq!(
        dns,
        [
            "cn=config",
            "cn=module{0},cn=config",
            "olcDatabase={-1}frontend,cn=config",
            "olcDatabase={0}config,cn=config",
            "olcDatabase={1}mdb,cn=config",
        ]
    );
    assert_eq!(
        value(&records[4], "olcDbDirectory"),
        vec![b"/tmp/sl/db".as_slice()]
    );
}

#[test]
fn content_records() {
    let cases: Vec<(&str, Vec<LdifRecord>)> = vec![
        ("", vec![]),
        ("\n\n# only a comment\n\n", vec![]),
        ("version: 1\n", vec![]),
        ("version: 1\ndn: cn=a\ncn: a\n", vec![content("cn=a", &[("cn", b"a")])]),
        ("version: 1\n\ndn: cn=a\ncn: a\n", vec![content("cn=a", &[("cn", b"a")])]),
        // No trailing newline, attribute options, OIDs, empty values, FILL spaces.
        (
            "dn: cn=a\ncn;lang-en:   x y\n2.5.4.4:\ndescription:: \n",
            vec![content("cn=a", &[("cn;lang-en", b"x y"), ("2.5.4.4", b""), ("description", b"")])],
        ),
        // Folding: a leading space continues the previous line, even mid-word and in base64 and the dn.
        (
            "dn: cn=very long na\n me,dc=x\ndescription: one\n  two\ncn:: SsO8cmdl\n bg==\n",
            vec![content("cn=very long name,dc=x", &[("description", b"one two"), ("cn", "Jürgen".as_bytes())])],
        ),
        // CRLF, comments (folded comments too), several blank lines between records.
        (
            "# header\r\n#  folded\r\n comment\r\ndn: cn=a\r\n# inside\r\ncn: a\r\n\r\n\r\n\r\ndn: cn=b\r\ncn: b\r\n",
            vec![content("cn=a", &[("cn", b"a")]), content("cn=b", &[("cn", b"b")])],
        ),
        ("dn:: Y249YQ==\ncn: a\n", vec![content("cn=a", &[("cn", b"a")])]),
        ("DN: cn=a\n", vec![content("cn=a", &[])]),
        ("dn: cn=a\nuserPassword: {SSHA}abc=\n", vec![content("cn=a", &[("userPassword", b"{SSHA}abc=")])]),
        // An entry named like a keyword is still content when not right after dn.
        ("dn: cn=a\ncn: a\nchangetype: x\n", vec![content("cn=a", &[("cn", b"a"), ("changetype", b"x")])]),
    ];
    for (text, expected) in cases {
        assert_eq!(
            read_all(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}")),
            expected,
            "{text:?}"
        );
    }
}

#[test]
fn url_values_are_read_from_files() {
    let path = std::env::temp_dir().join(format!("canopy-ldif-url-{}", std::process::id()));
    std::fs::write(&path, b"\x00binary\xff").unwrap();
    let text = format!("dn: cn=a\njpegPhoto:< file://{}\n", path.display());
    let records = read_all(text.as_bytes());
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        records.unwrap(),
        vec![content("cn=a", &[("jpegPhoto", b"\x00binary\xff")])]
    );
    let err = read_all(b"dn: cn=a\nx:< http://example.com/x\n").unwrap_err();
    assert_eq!(err.line, 2);
    let err = read_all(b"dn: cn=a\n\nx:< file:///nonexistent/canopy/file\ndn: cn=b\n").unwrap_err();
    assert_eq!(err.line, 3);
}

#[test]
fn change_records() {
    use ModifyOperation::*;
    let text = "\
version: 1

# RFC 2849 example 6 style
dn: cn=new,dc=x
changetype: add
objectClass: person
cn: new
sn:: bg==

dn: cn=old,dc=x
changetype: delete

dn: cn=m,dc=x
changetype: modify
add: postaladdress
postaladdress: 123 Anystreet $ Sunnyvale, CA $ 94086
-
delete: description
-
replace: telephonenumber
telephonenumber: +1 408 555 1234
telephonenumber: +1 408 555 5678
-
delete: facsimiletelephonenumber
facsimiletelephonenumber: +1 408 555 9876
-
increment: uidNumber
uidNumber: 1
-
replace: title
-

dn: cn=m2,dc=x
changetype: modify
replace: cn;lang-en
CN;LANG-EN: x

dn: cn=r,dc=x
changetype: modrdn
newrdn: cn=r2
deleteoldrdn: 1

dn: cn=r,dc=x
changetype: moddn
newrdn:: Y249csO8
deleteoldrdn: 0
newsuperior: ou=people,dc=x

dn: cn=c,dc=x
control: 1.2.840.113556.1.4.805 true
control: 1.3.6.1.1.13.1 false: some value
control: 1.2.3:: AAE=
control: 2.16.840.1.113730.3.4.2
changetype: delete
";
    let expected = vec![
        change(
            "cn=new,dc=x",
            LdifChange::Add(vec![
                ("objectClass".into(), b"person".to_vec()),
                ("cn".into(), b"new".to_vec()),
                ("sn".into(), b"n".to_vec()),
            ]),
        ),
        change("cn=old,dc=x", LdifChange::Delete),
        change(
            "cn=m,dc=x",
            LdifChange::Modify(vec![
                modification(
                    Add,
                    "postaladdress",
                    &[b"123 Anystreet $ Sunnyvale, CA $ 94086"],
                ),
                modification(Delete, "description", &[]),
                modification(
                    Replace,
                    "telephonenumber",
                    &[b"+1 408 555 1234", b"+1 408 555 5678"],
                ),
                modification(Delete, "facsimiletelephonenumber", &[b"+1 408 555 9876"]),
                modification(Increment, "uidNumber", &[b"1"]),
                modification(Replace, "title", &[]),
            ]),
        ),
        change(
            "cn=m2,dc=x",
            LdifChange::Modify(vec![modification(Replace, "cn;lang-en", &[b"x"])]),
        ),
        change(
            "cn=r,dc=x",
            LdifChange::ModDn {
                new_rdn: b"cn=r2".to_vec(),
                delete_old_rdn: true,
                new_superior: None,
            },
        ),
        change(
            "cn=r,dc=x",
            LdifChange::ModDn {
                new_rdn: "cn=rü".as_bytes().to_vec(),
                delete_old_rdn: false,
                new_superior: Some(b"ou=people,dc=x".to_vec()),
            },
        ),
        LdifRecord::Change {
            dn: b"cn=c,dc=x".to_vec(),
            controls: vec![
                Control {
                    oid: "1.2.840.113556.1.4.805".into(),
                    critical: true,
                    value: None,
                },
                Control {
                    oid: "1.3.6.1.1.13.1".into(),
                    critical: false,
                    value: Some(b"some value".to_vec()),
                },
                Control {
                    oid: "1.2.3".into(),
                    critical: false,
                    value: Some(vec![0, 1]),
                },
                Control {
                    oid: "2.16.840.1.113730.3.4.2".into(),
                    critical: false,
                    value: None,
                },
            ],
            change: LdifChange::Delete,
        },
    ];
    let records = read_all(text.as_bytes()).unwrap();
    assert_eq!(records.len(), expected.len());
    for (got, want) in records.iter().zip(&expected) {
        assert_eq!(got, want);
    }
}

#[test]
fn errors_carry_line_numbers() {
    let cases: &[(&str, usize, &str)] = &[
        (" folded first\n", 1, "continuation"),
        ("cn: a\n", 1, "dn:"),
        ("dn: cn=a\ncn a\n", 2, "attribute: value"),
        (
            "dn: cn=a\n\ndn: cn=b\nbad name: x\n",
            4,
            "attribute description",
        ),
        ("dn: cn=a\ncn:: !!!\n", 2, "base64"),
        ("version: 2\ndn: cn=a\n", 1, "version"),
        ("dn: cn=a\ncontrol: 1.2.3\ncn: a\n", 2, "without changetype"),
        (
            "dn: cn=a\ncontrol: 1..2 true\nchangetype: delete\n",
            2,
            "control OID",
        ),
        ("dn: cn=a\nchangetype: rename\n", 2, "changetype"),
        ("dn: cn=a\nchangetype: delete\ncn: a\n", 3, "delete record"),
        ("dn: cn=a\nchangetype: add\n", 2, "without attributes"),
        (
            "dn: cn=a\nchangetype: modify\nadd: cn\nsn: x\n-\n",
            4,
            "expected a value of cn",
        ),
        (
            "dn: cn=a\nchangetype: modify\nfrobnicate: cn\n-\n",
            3,
            "add:, delete:",
        ),
        (
            "dn: cn=a\nchangetype: modify\nadd: c n\n-\n",
            3,
            "attribute description",
        ),
        (
            "dn: cn=a\nchangetype: modrdn\ndeleteoldrdn: 1\n",
            2,
            "missing newrdn",
        ),
        (
            "dn: cn=a\nchangetype: modrdn\nnewrdn: cn=b\ndeleteoldrdn: yes\n",
            2,
            "0 or 1",
        ),
        (
            "dn: cn=a\nchangetype: modrdn\nnewrdn: cn=b\ndeleteoldrdn: 1\nfoo: bar\n",
            5,
            "unexpected line",
        ),
        (
            "# c\n\n\ndn: cn=a\ncn: a\n\n\ndn: cn=b\n cn: b\nx\n",
            10,
            "attribute: value",
        ),
    ];
    for &(text, line, reason) in cases {
        let err = read_all(text.as_bytes()).expect_err(text);
        assert_eq!(err.line, line, "{text:?}: {err}");
        assert!(err.reason.contains(reason), "{text:?}: {err}");
        assert!(err.to_string().starts_with(&format!("line {line}: ")));
    }
    // Records before a bad one are still delivered, and the reader tracks physical lines.
    let mut reader = LdifReader::new(&b"dn: cn=a\ncn: a\n\ndn: cn=b\nbroken\n"[..]);
    assert!(reader.next().unwrap().is_ok());
    assert_eq!(reader.line(), 3);
    assert_eq!(reader.next().unwrap().unwrap_err().line, 5);
}

#[test]
fn writer_matches_slapcat() {
    // The second record of `slapcat -o ldif-wrap=76`, without the operational attributes.
    let photo: Vec<u8> = (0..=255).collect();
    let long = "x".repeat(150);
    let attrs: Vec<(&str, &[u8])> = vec![
        ("objectClass", b"inetOrgPerson"),
        ("cn", "Jürgen Müller".as_bytes()),
        ("sn", "Müller".as_bytes()),
        ("description", long.as_bytes()),
        ("description", b"trailing space "),
        ("description", b":colon"),
        ("description", b"<angle"),
        ("description", b"leading"),
        ("userPassword:", b""),
        ("jpegPhoto", &photo),
        ("title", b""),
    ];
    // userPassword is base64 in slapcat output because OpenLDAP always hides it; check it apart.
    let attrs: Vec<(&str, &[u8])> = attrs
        .into_iter()
        .filter(|(n, _)| *n != "userPassword:")
        .collect();
    let mut out = Vec::new();
    write_ldif_entry(
        &mut out,
        "cn=Jürgen Müller,dc=example,dc=com".as_bytes(),
        &attrs,
    );
    let slapcat =
        String::from_utf8(include_bytes!("testdata/slapcat-wrap76.ldif").to_vec()).unwrap();
    let record = slapcat.split("\n\n").nth(1).unwrap();
    let expected: String = record
        .lines()
        .filter(|l| {
            !l.starts_with("userPassword")
                && !l.contains("Timestamp")
                && !l.contains("Name:")
                && !l.starts_with("entry")
                && !l.starts_with("structural")
        })
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + "\n";
    assert_eq!(String::from_utf8(out).unwrap(), expected);
}

#[test]
fn writer_safe_strings_and_folding() {
    let cases: &[(&[u8], &str)] = &[
        (b"plain", "v: plain\n"),
        (b"", "v:\n"),
        (b" lead", "v:: IGxlYWQ=\n"),
        (b"trail ", "v:: dHJhaWwg\n"),
        (b":x", "v:: Ong=\n"),
        (b"<x", "v:: PHg=\n"),
        (b"a:b<c", "v: a:b<c\n"),
        (b"line\nbreak", "v:: bGluZQpicmVhaw==\n"),
        (b"cr\r", "v:: Y3IN\n"),
        (b"nul\0", "v:: bnVsAA==\n"),
        ("é".as_bytes(), "v:: w6k=\n"),
        (b"#ok", "v: #ok\n"),
    ];
    for &(value, expected) in cases {
        let mut out = Vec::new();
        write_ldif_entry(&mut out, b"", &[("v", value)]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("dn:\n{expected}\n"),
            "{value:?}"
        );
    }
    // Every physical line is at most 76 bytes and a reader restores the values.
    for len in [0, 1, 70, 71, 72, 73, 74, 75, 76, 77, 150, 151, 152, 1000] {
        let value = "y".repeat(len);
        let binary: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut out = Vec::new();
        write_ldif_entry(
            &mut out,
            b"cn=a",
            &[("v", value.as_bytes()), ("b", &binary)],
        );
        assert!(out.split(|&c| c == b'\n').all(|l| l.len() <= 76), "{len}");
        let records = read_all(&out).unwrap();
        assert_eq!(
            records,
            vec![content("cn=a", &[("v", value.as_bytes()), ("b", &binary)])],
            "{len}"
        );
    }
}
