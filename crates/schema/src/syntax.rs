//! LDAP syntaxes (RFC 4517 §3.3, RFC 4523, RFC 4530, RFC 2252's older ones, OpenLDAP's CSN): their
//! definitions and their value validators.

use crate::definition::{push_desc, push_extensions};
use crate::norm_dn::parse_dn_value;
use crate::prep::Fold;
use crate::values;

/// An LDAP syntax (RFC 4512 §4.1.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Syntax {
    pub oid: String,
    pub desc: String,
    /// `X-` extensions in definition order, e.g. `("X-NOT-HUMAN-READABLE", ["TRUE"])` or a loaded
    /// syntax's `("X-SUBST", ["1.3.6.1.4.1.1466.115.121.1.15"])`.
    pub extensions: Vec<(String, Vec<String>)>,
}

impl Syntax {
    /// RFC 4512 SyntaxDescription.
    pub fn definition(&self) -> String {
        let mut out = format!("( {}", self.oid);
        push_desc(&mut out, Some(&self.desc));
        push_extensions(&mut out, &self.extensions);
        out.push_str(" )");
        out
    }

    /// The syntax named by an `X-SUBST` extension: OpenLDAP's way of saying "check values of this
    /// syntax as values of that one".
    pub fn substitute(&self) -> Option<&str> {
        self.extensions
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("X-SUBST"))
            .and_then(|(_, values)| values.first())
            .map(String::as_str)
    }
}

/// How values of a syntax are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    Any,
    NonEmpty,
    DirectoryString,
    Ia5,
    Printable,
    Integer,
    Numeric,
    Telephone,
    Boolean,
    GeneralizedTime,
    UtcTime,
    Dn,
    Rdn,
    NameAndOptionalUid,
    Oid,
    BitString,
    Country,
    PostalAddress,
    Description,
    MailPreference,
    Uuid,
    Csn,
    /// OpenLDAP's authz rules (`authzTo`, `authzFrom`): `crate::authz`.
    Authz,
}

const PREFIX: &str = "1.3.6.1.4.1.1466.115.121.1.";

/// (OID, description, check). OIDs under `PREFIX` are written by their last arc. RFC 4517 §3.3
/// and, for the syntaxes it dropped that OpenLDAP's cosine schema still uses, RFC 2252 §6.
const SYNTAXES: &[(&str, &str, Check)] = &[
    ("3", "Attribute Type Description", Check::Description),
    ("4", "Audio", Check::Any),
    ("5", "Binary", Check::Any),
    ("6", "Bit String", Check::BitString),
    ("7", "Boolean", Check::Boolean),
    ("8", "Certificate", Check::Any),
    ("9", "Certificate List", Check::Any),
    ("10", "Certificate Pair", Check::Any),
    ("11", "Country String", Check::Country),
    ("12", "Distinguished Name", Check::Dn),
    ("13", "Data Quality Syntax", Check::NonEmpty),
    ("14", "Delivery Method", Check::NonEmpty),
    ("15", "Directory String", Check::DirectoryString),
    ("16", "DIT Content Rule Description", Check::Description),
    ("17", "DIT Structure Rule Description", Check::Description),
    ("19", "DSA Quality Syntax", Check::NonEmpty),
    ("21", "Enhanced Guide", Check::NonEmpty),
    ("22", "Facsimile Telephone Number", Check::NonEmpty),
    ("23", "Fax", Check::Any),
    ("24", "Generalized Time", Check::GeneralizedTime),
    ("25", "Guide", Check::NonEmpty),
    ("26", "IA5 String", Check::Ia5),
    ("27", "INTEGER", Check::Integer),
    ("28", "JPEG", Check::Any),
    ("30", "Matching Rule Description", Check::Description),
    ("31", "Matching Rule Use Description", Check::Description),
    ("32", "Mail Preference", Check::MailPreference),
    ("34", "Name And Optional UID", Check::NameAndOptionalUid),
    ("35", "Name Form Description", Check::Description),
    ("36", "Numeric String", Check::Numeric),
    ("37", "Object Class Description", Check::Description),
    ("38", "OID", Check::Oid),
    ("39", "Other Mailbox", Check::NonEmpty),
    ("40", "Octet String", Check::Any),
    ("41", "Postal Address", Check::PostalAddress),
    ("42", "Protocol Information", Check::Any),
    ("43", "Presentation Address", Check::Any),
    ("44", "Printable String", Check::Printable),
    // RFC 3672's subtree specification; its value is not parsed (docs/compatibility.md).
    ("45", "SubtreeSpecification", Check::NonEmpty),
    ("49", "Supported Algorithm", Check::Any),
    ("50", "Telephone Number", Check::Telephone),
    ("51", "Teletex Terminal Identifier", Check::NonEmpty),
    ("52", "Telex Number", Check::NonEmpty),
    ("53", "UTC Time", Check::UtcTime),
    ("54", "LDAP Syntax Description", Check::Description),
    ("58", "Substring Assertion", Check::DirectoryString),
    ("1.2.36.79672281.1.5.0", "RDN", Check::Rdn),
    ("1.3.6.1.1.16.1", "UUID", Check::Uuid),
    ("1.3.6.1.4.1.4203.666.11.2.1", "CSN", Check::Csn),
    (crate::authz::SYNTAX_OID, "OpenLDAP authz", Check::Authz),
    // RFC 4523 §2: assertion syntaxes of the certificate matching rules.
    ("1.3.6.1.1.15.1", "Certificate Exact Assertion", Check::Any),
    ("1.3.6.1.1.15.2", "Certificate Assertion", Check::Any),
    (
        "1.3.6.1.1.15.3",
        "Certificate Pair Exact Assertion",
        Check::Any,
    ),
    ("1.3.6.1.1.15.4", "Certificate Pair Assertion", Check::Any),
    (
        "1.3.6.1.1.15.5",
        "Certificate List Exact Assertion",
        Check::Any,
    ),
    ("1.3.6.1.1.15.6", "Certificate List Assertion", Check::Any),
    ("1.3.6.1.1.15.7", "Algorithm Identifier", Check::Any),
    // X.509 attribute certificates (OpenLDAP's OIDs, used by its pmi schema).
    (
        "1.3.6.1.4.1.4203.666.11.10.2.1",
        "X.509 AttributeCertificate",
        Check::Any,
    ),
    (
        "1.3.6.1.4.1.4203.666.11.10.2.2",
        "AttributeCertificate Exact Assertion",
        Check::Any,
    ),
    (
        "1.3.6.1.1.1.0.0",
        "RFC2307 NIS Netgroup Triple",
        Check::NonEmpty,
    ),
    ("1.3.6.1.1.1.0.1", "RFC2307 Boot Parameter", Check::NonEmpty),
];

/// Syntaxes published with `X-BINARY-TRANSFER-REQUIRED 'TRUE' X-NOT-HUMAN-READABLE 'TRUE'`: their
/// values are BER encodings to be transferred with `;binary` (RFC 4522), as OpenLDAP marks them.
const BINARY: &[&str] = &[
    "8",
    "9",
    "10",
    "49",
    "1.3.6.1.1.15.1",
    "1.3.6.1.1.15.2",
    "1.3.6.1.1.15.3",
    "1.3.6.1.1.15.4",
    "1.3.6.1.1.15.5",
    "1.3.6.1.1.15.6",
    "1.3.6.1.1.15.7",
    "1.3.6.1.4.1.4203.666.11.10.2.1",
    "1.3.6.1.4.1.4203.666.11.10.2.2",
];

/// Syntaxes published with `X-NOT-HUMAN-READABLE 'TRUE'` only.
const NOT_HUMAN_READABLE: &[&str] = &["4", "5", "23", "28"];

fn full_oid(short: &str) -> String {
    if short.contains('.') {
        short.to_string()
    } else {
        format!("{PREFIX}{short}")
    }
}

pub(crate) fn check_for(oid: &str) -> Option<Check> {
    let short = oid.strip_prefix(PREFIX).unwrap_or(oid);
    SYNTAXES
        .iter()
        .find(|(o, _, _)| *o == short)
        .map(|(_, _, check)| *check)
}

/// Whether this crate has a validator for the syntax `oid`.
pub(crate) fn is_known(oid: &str) -> bool {
    check_for(oid).is_some()
}

/// Every syntax with a validator, as published in the subschema entry.
pub(crate) fn known_syntaxes() -> Vec<Syntax> {
    let flag = |name: &str| (name.to_string(), vec!["TRUE".to_string()]);
    SYNTAXES
        .iter()
        .map(|(oid, desc, _)| {
            let mut extensions = Vec::new();
            if BINARY.contains(oid) {
                extensions.push(flag("X-BINARY-TRANSFER-REQUIRED"));
            }
            if BINARY.contains(oid) || NOT_HUMAN_READABLE.contains(oid) {
                extensions.push(flag("X-NOT-HUMAN-READABLE"));
            }
            Syntax {
                oid: full_oid(oid),
                desc: (*desc).to_string(),
                extensions,
            }
        })
        .collect()
}

/// Whether `value` is valid for the syntax `oid`; unknown syntaxes accept any value.
#[cfg(test)]
pub(crate) fn validate(oid: &str, value: &[u8]) -> bool {
    validate_with(check_for(oid), value)
}

/// [`validate`] with the syntax's check already looked up (`None`: unknown syntax, any value).
pub(crate) fn validate_with(check: Option<Check>, value: &[u8]) -> bool {
    let Some(check) = check else {
        return true;
    };
    match check {
        Check::Any => true,
        Check::NonEmpty => !value.is_empty(),
        Check::DirectoryString => values::directory_string(value, Fold::None).is_ok(),
        Check::Ia5 => value.is_ascii(),
        Check::Printable => !value.is_empty() && value.iter().all(|b| values::is_printable(*b)),
        Check::Integer => values::integer(value).is_ok(),
        Check::Numeric => values::numeric_string(value).is_ok(),
        Check::Telephone => values::telephone(value).is_ok(),
        Check::Boolean => values::boolean(value).is_ok(),
        Check::GeneralizedTime => values::generalized_time(value).is_ok(),
        Check::UtcTime => is_utc_time(value),
        Check::Dn => parse_dn_value(value).is_ok(),
        Check::Rdn => parse_dn_value(value).is_ok_and(|dn| dn.rdns.len() == 1),
        Check::NameAndOptionalUid => {
            let (dn, uid) = values::split_optional_uid(value);
            parse_dn_value(dn).is_ok() && uid.is_none_or(|u| values::bit_string(u).is_ok())
        }
        Check::Oid => values::oid(value).is_ok(),
        Check::BitString => values::bit_string(value).is_ok(),
        Check::Country => value.len() == 2 && value.iter().all(|b| values::is_printable(*b)),
        Check::PostalAddress => values::postal_address(value).is_ok(),
        Check::Description => {
            let trimmed = value.trim_ascii();
            trimmed.starts_with(b"(")
                && trimmed.ends_with(b")")
                && std::str::from_utf8(value).is_ok()
        }
        Check::MailPreference => matches!(value, b"NO-LISTS" | b"ANY-LIST" | b"PROFESSIONAL-LISTS"),
        Check::Uuid => values::uuid(value).is_ok(),
        Check::Csn => values::csn(value).is_ok(),
        Check::Authz => std::str::from_utf8(value)
            .is_ok_and(|text| crate::authz::AuthzValue::parse(text).is_ok()),
    }
}

/// UTC Time (RFC 4517 §3.3.34): YYmmddHHMM[SS](Z|+hhmm|-hhmm).
fn is_utc_time(value: &[u8]) -> bool {
    let digits_at = |from: usize, len: usize| {
        value
            .get(from..from + len)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let two = |from: usize| -> u32 {
        value.get(from..from + 2).map_or(99, |d| {
            d.iter().fold(0, |acc, c| acc * 10 + u32::from(c - b'0'))
        })
    };
    if !digits_at(0, 10) {
        return false;
    }
    let zone_at = if digits_at(10, 2) { 12 } else { 10 };
    let zone_ok = match value.get(zone_at) {
        Some(b'Z') => value.len() == zone_at + 1,
        Some(b'+' | b'-') => value.len() == zone_at + 5 && digits_at(zone_at + 1, 4),
        _ => false,
    };
    zone_ok
        && (1..=12).contains(&two(2))
        && (1..=31).contains(&two(4))
        && two(6) < 24
        && two(8) < 60
        && (zone_at == 10 || two(10) <= 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(syntax: &str, value: &[u8], expected: bool) {
        assert_eq!(
            validate(&full_oid(syntax), value),
            expected,
            "syntax {syntax} value {:?}",
            String::from_utf8_lossy(value)
        );
    }

    #[test]
    fn validator_table() {
        let table: &[(&str, &[u8], bool)] = &[
            ("15", b"hello", true),
            ("15", b"", false),
            ("15", b"\xff\xfe", false),
            ("26", b"ascii only", true),
            ("26", "caf\u{e9}".as_bytes(), false),
            ("44", b"Printable (1)", true),
            ("44", b"no_underscore", false),
            ("44", b"", false),
            ("27", b"0", true),
            ("27", b"-17", true),
            ("27", b"123", true),
            ("27", b"007", false),
            ("27", b"+5", false),
            ("27", b"-0", false),
            ("27", b"abc", false),
            ("27", b"", false),
            ("36", b"123 456", true),
            ("36", b"12a", false),
            ("50", b"+1 555-0100", true),
            ("50", b"", false),
            ("50", b"555_0100", false),
            ("7", b"TRUE", true),
            ("7", b"FALSE", true),
            ("7", b"true", false),
            ("24", b"20240102030405Z", true),
            ("24", b"20240102030405.123Z", true),
            ("24", b"202401020304+0100", true),
            ("24", b"2024010203Z", true),
            ("24", b"20240230000000Z", false),
            ("24", b"20240102030405", false),
            ("24", b"2024", false),
            ("53", b"2401020304Z", true),
            ("53", b"240102030405+0100", true),
            ("53", b"2413020304Z", false),
            ("53", b"24010203", false),
            ("12", b"cn=a,dc=example,dc=com", true),
            ("12", b"", true),
            ("34", b"cn=a,dc=example#'0101'B", true),
            ("38", b"2.5.4.3", true),
            ("38", b"cn", true),
            ("38", b"1.", false),
            ("38", b"1..2", false),
            ("38", b"-cn", false),
            ("6", b"'0101'B", true),
            ("6", b"'012'B", false),
            ("6", b"0101", false),
            ("11", b"DE", true),
            ("11", b"DEU", false),
            ("41", b"1 Main St$Springfield", true),
            ("41", b"", false),
            ("28", b"\xff\xd8\xff", true),
            ("8", b"\x30\x82", true),
            ("4", b"\x00", true),
            ("23", b"\x00", true),
            ("58", b"*foo*", true),
            ("3", b"( 2.5.4.3 NAME 'cn' )", true),
            ("37", b"no parens", false),
            (
                "1.3.6.1.1.16.1",
                b"597ae2f6-16a6-1027-98f4-d28b5365dc14",
                true,
            ),
            (
                "1.3.6.1.1.16.1",
                b"597ae2f6-16a6-1027-98f4-d28b5365dc1",
                false,
            ),
            (
                "1.3.6.1.4.1.4203.666.11.2.1",
                b"20240102030405.123456Z#000000#000#000000",
                true,
            ),
            ("1.3.6.1.4.1.4203.666.11.2.1", b"20240102030405Z#0#0", false),
            ("9.9.9.9", b"\x00anything", true),
            ("32", b"PROFESSIONAL-LISTS", true),
            ("32", b"no-lists", false),
            ("19", b"PILOT-SERVICE", true),
            ("19", b"", false),
            ("13", b"", false),
            ("1.2.36.79672281.1.5.0", b"cn=a+sn=b", true),
            ("1.2.36.79672281.1.5.0", b"cn=a,dc=b", false),
            ("1.2.36.79672281.1.5.0", b"", false),
            ("9", b"\x30\x00", true),
        ];
        for (syntax, value, expected) in table {
            check(syntax, value, *expected);
        }
    }

    #[test]
    fn every_syntax_is_listed_once() {
        let all = known_syntaxes();
        let mut oids: Vec<&str> = all.iter().map(|s| s.oid.as_str()).collect();
        oids.sort();
        oids.dedup();
        assert_eq!(oids.len(), all.len());
        assert!(all.iter().all(|s| values::is_numeric_oid(&s.oid)));
    }

    #[test]
    fn published_flags() {
        let find = |oid: &str| {
            known_syntaxes()
                .into_iter()
                .find(|s| s.oid == full_oid(oid))
                .unwrap()
                .definition()
        };
        assert_eq!(
            find("9"),
            "( 1.3.6.1.4.1.1466.115.121.1.9 DESC 'Certificate List' \
             X-BINARY-TRANSFER-REQUIRED 'TRUE' X-NOT-HUMAN-READABLE 'TRUE' )"
        );
        assert_eq!(
            find("28"),
            "( 1.3.6.1.4.1.1466.115.121.1.28 DESC 'JPEG' X-NOT-HUMAN-READABLE 'TRUE' )"
        );
        assert_eq!(
            find("19"),
            "( 1.3.6.1.4.1.1466.115.121.1.19 DESC 'DSA Quality Syntax' )"
        );
    }
}
