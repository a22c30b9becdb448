//! Attribute descriptions (RFC 4512 §2.5): an attribute type plus options, parsed and checked against the schema.

use canopy_proto::ResultCode;
use canopy_schema::{AttributeType, Schema};

use crate::error::LdapError;

/// Syntaxes whose values travel only with the `;binary` option (RFC 4522), as OpenLDAP requires: certificate,
/// certificate list, certificate pair and supported algorithm.
const BINARY_SYNTAXES: [&str; 4] = [
    "1.3.6.1.4.1.1466.115.121.1.8",
    "1.3.6.1.4.1.1466.115.121.1.9",
    "1.3.6.1.4.1.1466.115.121.1.10",
    "1.3.6.1.4.1.1466.115.121.1.49",
];

/// A parsed attribute description: the type's canonical schema name and its options, lower-cased, sorted and
/// without duplicates (options are a set, RFC 4512 §2.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttrDesc {
    pub type_name: String,
    pub options: Vec<String>,
}

impl AttrDesc {
    /// Parses a description the way slapd does for adds and modifies: the type must be defined, options are
    /// `binary` (only for the binary syntaxes) and language tags `lang-xx`; anything else is
    /// undefinedAttributeType with slapd's text.
    pub fn parse(schema: &Schema, s: &str) -> Result<AttrDesc, LdapError> {
        Self::parse_inner(schema, s, false).map(|(desc, _)| desc)
    }

    /// Like [`AttrDesc::parse`], but also accepts language ranges (`cn;lang-`, RFC 3866 §2.3), which filters
    /// may use: an option ending in `-` matches every stored option that starts with it.
    pub fn parse_for_filter(schema: &Schema, s: &str) -> Result<AttrDesc, LdapError> {
        Self::parse_inner(schema, s, true).map(|(desc, _)| desc)
    }

    /// [`AttrDesc::parse_for_filter`] with the attribute type it names, found by the same lookup.
    pub fn parse_for_filter_typed<'s>(
        schema: &'s Schema,
        s: &str,
    ) -> Result<(AttrDesc, &'s AttributeType), LdapError> {
        Self::parse_inner(schema, s, true)
    }

    /// For values written by an add or modify: types of the binary syntaxes need `;binary`, as in slapd.
    pub fn check_transfer(&self, schema: &Schema, given: &str) -> Result<(), LdapError> {
        match schema.attribute_type(&self.type_name) {
            Some(at)
                if BINARY_SYNTAXES.contains(&at.syntax.as_str())
                    && !self.options.iter().any(|o| o == "binary") =>
            {
                Err(undefined(given, "requires ;binary transfer"))
            }
            _ => Ok(()),
        }
    }

    fn parse_inner<'s>(
        schema: &'s Schema,
        s: &str,
        allow_ranges: bool,
    ) -> Result<(AttrDesc, &'s AttributeType), LdapError> {
        let (type_part, options) = split_syntax(s)?;
        let at = schema
            .attribute_type(type_part)
            .ok_or_else(|| undefined(s, "attribute type undefined"))?;
        let mut opts: Vec<String> = Vec::with_capacity(options.len());
        for option in options {
            let lower = option.to_ascii_lowercase();
            if lower == "binary" {
                if !BINARY_SYNTAXES.contains(&at.syntax.as_str()) {
                    return Err(undefined(s, "option \"binary\" not supported with type"));
                }
            } else if let Some(tag) = lower.strip_prefix("lang-") {
                if (tag.is_empty() || tag.ends_with('-')) && !allow_ranges {
                    return Err(undefined(s, "inappropriate use of tag range option"));
                }
            } else {
                return Err(undefined(s, "unrecognized option"));
            }
            opts.push(lower);
        }
        opts.sort();
        opts.dedup();
        let desc = AttrDesc {
            type_name: at.name().to_string(),
            options: opts,
        };
        Ok((desc, at))
    }

    /// The form stored in `Attribute::desc`: canonical type name, then `;option` for each option.
    pub fn to_desc_string(&self) -> String {
        let mut out = self.type_name.clone();
        for option in &self.options {
            out.push(';');
            out.push_str(option);
        }
        out
    }

    pub fn attribute_type<'s>(&self, schema: &'s Schema) -> Option<&'s AttributeType> {
        schema.attribute_type(&self.type_name)
    }

    /// Whether an attribute stored with `stored` options (the lower-case `a;b` part of a stored
    /// description after the type) carries every option of this description; an option ending in `-` is
    /// a language range and matches by prefix.
    pub fn options_match(&self, stored: &str) -> bool {
        self.options.iter().all(|wanted| {
            let mut have = stored.split(';').filter(|o| !o.is_empty());
            if wanted.ends_with('-') {
                // `lang-en-` matches `lang-en` itself too (RFC 3866 §3.3).
                let tag = wanted.trim_end_matches('-');
                have.any(|o| o.starts_with(wanted.as_str()) || o == tag)
            } else {
                have.any(|o| o == wanted)
            }
        })
    }
}

/// Splits a stored (canonical) description `type;opt;opt` into its type and its options part (`opt;opt`,
/// empty without options), without any checks.
pub fn split_stored(desc: &str) -> (&str, &str) {
    // A byte loop: descriptions are short, and `split_once`'s searcher costs more than it saves here.
    match desc.bytes().position(|b| b == b';') {
        Some(at) => {
            let (type_name, rest) = desc.split_at(at);
            (type_name, rest.get(1..).unwrap_or(""))
        }
        None => (desc, ""),
    }
}

/// RFC 4512 §2.5 syntax: `oid *( ";" option )` where oid is a descr (ALPHA *keychar) or a numericoid and an
/// option is 1*keychar.
fn split_syntax(s: &str) -> Result<(&str, Vec<&str>), LdapError> {
    if s.is_empty() {
        return Err(undefined(s, "empty AttributeDescription"));
    }
    // Most descriptions have no option: one byte loop finds that, and no `Vec` is filled.
    let (type_part, options): (&str, Vec<&str>) = match s.bytes().position(|b| b == b';') {
        None => (s, Vec::new()),
        Some(at) => (&s[..at], s[at + 1..].split(';').collect()),
    };
    if !is_descr(type_part) && !is_numeric_oid(type_part) {
        return Err(undefined(
            s,
            "AttributeDescription contains inappropriate characters",
        ));
    }
    for option in &options {
        if option.is_empty() {
            return Err(undefined(s, "zero length option is invalid"));
        }
        if !option
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(undefined(
                s,
                "AttributeDescription contains inappropriate characters",
            ));
        }
    }
    Ok((type_part, options))
}

fn is_descr(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn is_numeric_oid(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|arc| {
            !arc.is_empty()
                && arc.bytes().all(|b| b.is_ascii_digit())
                && (arc.len() == 1 || !arc.starts_with('0'))
        })
}

fn undefined(given: &str, reason: &str) -> LdapError {
    LdapError::new(
        ResultCode::UndefinedAttributeType,
        format!("{given}: {reason}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_stored_splits_at_the_first_semicolon() {
        assert_eq!(split_stored("cn"), ("cn", ""));
        assert_eq!(split_stored("cn;lang-en"), ("cn", "lang-en"));
        assert_eq!(split_stored("cn;binary;lang-en"), ("cn", "binary;lang-en"));
        assert_eq!(split_stored("cn;"), ("cn", ""));
        assert_eq!(split_stored(";x"), ("", "x"));
        assert_eq!(split_stored(""), ("", ""));
        assert_eq!(split_stored("caf\u{e9};x"), ("caf\u{e9}", "x"));
    }

    fn check(input: &str, expected: Result<&str, &str>) {
        let schema = Schema::builtin();
        let got = AttrDesc::parse(&schema, input)
            .map(|d| d.to_desc_string())
            .map_err(|e| {
                assert_eq!(e.code, ResultCode::UndefinedAttributeType, "{input}");
                e.message
            });
        match expected {
            Ok(want) => assert_eq!(got, Ok(want.to_string()), "{input}"),
            Err(want) => assert_eq!(got, Err(want.to_string()), "{input}"),
        }
    }

    #[test]
    fn parse_table() {
        check("cn", Ok("cn"));
        check("CN", Ok("cn"));
        check("commonName", Ok("cn"));
        check("2.5.4.3", Ok("cn"));
        check("CN;Lang-EN", Ok("cn;lang-en"));
        check("cn;LANG-fr;lang-de", Ok("cn;lang-de;lang-fr"));
        check("cn;lang-fr;lang-fr", Ok("cn;lang-fr"));
        check("2.5.4.3;lang-en", Ok("cn;lang-en"));
        check("userCertificate;binary", Ok("userCertificate;binary"));
        check("", Err(": empty AttributeDescription"));
        check(
            "c n",
            Err("c n: AttributeDescription contains inappropriate characters"),
        );
        check(
            "cn;range=0-1",
            Err("cn;range=0-1: AttributeDescription contains inappropriate characters"),
        );
        check(
            "1cn",
            Err("1cn: AttributeDescription contains inappropriate characters"),
        );
        check(
            "2.5.04.3",
            Err("2.5.04.3: AttributeDescription contains inappropriate characters"),
        );
        check("cn;", Err("cn;: zero length option is invalid"));
        check("fooBar", Err("fooBar: attribute type undefined"));
        check("cn;foo", Err("cn;foo: unrecognized option"));
        check("cn;x-foo", Err("cn;x-foo: unrecognized option"));
        check(
            "cn;lang-",
            Err("cn;lang-: inappropriate use of tag range option"),
        );
        check(
            "cn;binary",
            Err("cn;binary: option \"binary\" not supported with type"),
        );
    }

    #[test]
    fn filter_ranges_and_option_matching() {
        let schema = Schema::builtin();
        let d = AttrDesc::parse_for_filter(&schema, "cn;lang-").unwrap();
        assert!(d.options_match("lang-en"));
        assert!(d.options_match("lang-en-us;x"));
        assert!(!d.options_match(""));
        let d = AttrDesc::parse_for_filter(&schema, "cn;lang-en-").unwrap();
        assert!(d.options_match("lang-en"));
        assert!(d.options_match("lang-en-us"));
        assert!(!d.options_match("lang-enx"));
        let d = AttrDesc::parse(&schema, "cn;lang-en").unwrap();
        assert!(d.options_match("lang-en"));
        assert!(!d.options_match("lang-en-us"));
        let plain = AttrDesc::parse(&schema, "cn").unwrap();
        assert!(plain.options_match("lang-en"));
    }

    #[test]
    fn binary_transfer_required() {
        let schema = Schema::builtin();
        let d = AttrDesc::parse(&schema, "userCertificate").unwrap();
        let e = d.check_transfer(&schema, "userCertificate").unwrap_err();
        assert_eq!(e.message, "userCertificate: requires ;binary transfer");
        let d = AttrDesc::parse(&schema, "userCertificate;binary").unwrap();
        assert!(d.check_transfer(&schema, "x").is_ok());
        let d = AttrDesc::parse(&schema, "cn").unwrap();
        assert!(d.check_transfer(&schema, "cn").is_ok());
    }
}
