//! Normalized DNs (`NormDn`) and what needs no schema: RFC 4514 escaping of normalized values, and
//! DN-syntax values parsed and normalized without one (distinguishedNameMatch and rdnMatch for the
//! matching rules alone).

use crate::error::InvalidValue;
use crate::prep::{prepare, Fold, Spaces};
use canopy_proto::Dn;

/// A normalized DN: RDNs leftmost first, each `attr=value` with the canonical lower-case attribute
/// name and the normalized value escaped per RFC 4514 (never a raw 0x00, `,` or `+`), AVAs of a
/// multi-valued RDN sorted and joined with `+`. The string form joins RDNs with `,`; the root is "".
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NormDn {
    text: String,
    rdns: Vec<String>,
}

impl NormDn {
    pub fn root() -> NormDn {
        NormDn::default()
    }

    /// Builds a DN from normalized RDNs, leftmost first.
    pub(crate) fn from_rdns(rdns: Vec<String>) -> NormDn {
        NormDn {
            text: rdns.join(","),
            rdns,
        }
    }

    /// A DN from RDNs that are already normalized (as stored), leftmost first; what a chain of
    /// [`NormDn::child`] calls builds, without the copies.
    pub fn from_normalized_rdns(rdns: Vec<String>) -> NormDn {
        NormDn::from_rdns(rdns)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The string form, without a copy.
    pub(crate) fn into_text(self) -> String {
        self.text
    }

    /// Normalized RDNs, leftmost (most specific) first.
    pub fn rdns(&self) -> &[String] {
        &self.rdns
    }

    /// The DN one level up; `None` for the root.
    pub fn parent(&self) -> Option<NormDn> {
        let rest = self.rdns.get(1..)?;
        Some(NormDn::from_rdns(rest.to_vec()))
    }

    pub fn is_root(&self) -> bool {
        self.rdns.is_empty()
    }

    /// True if `self` equals `other` or is an ancestor of it.
    pub fn is_suffix_of(&self, other: &NormDn) -> bool {
        other.rdns.ends_with(&self.rdns)
    }

    /// `rdn` (already normalized) placed under `self`.
    pub fn child(&self, rdn: &str) -> NormDn {
        let mut rdns = Vec::with_capacity(self.rdns.len() + 1);
        rdns.push(rdn.to_string());
        rdns.extend(self.rdns.iter().cloned());
        NormDn::from_rdns(rdns)
    }
}

impl std::fmt::Display for NormDn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// One normalized AVA: `name=value`, the name lower-cased and the value escaped.
pub(crate) fn norm_ava(name: &str, value: &[u8]) -> String {
    let mut out = String::with_capacity(name.len() + 1 + value.len() + 2);
    out.extend(name.chars().map(|c| c.to_ascii_lowercase()));
    out.push('=');
    escape_into(&mut out, value);
    out
}

/// RFC 4514 §2.4 escaping of a normalized value. Bytes that are not UTF-8, NUL and other control
/// characters become `\XX`, so the result is always a valid string without raw 0x00.
#[cfg(test)]
fn escape_value(value: &[u8]) -> String {
    let mut out = String::with_capacity(value.len());
    escape_into(&mut out, value);
    out
}

/// [`escape_value`], appending to `out`.
fn escape_into(out: &mut String, value: &[u8]) {
    match needs_no_escape(value) {
        Some(plain) => out.push_str(plain),
        None => escape_chars(out, value),
    }
}

/// The escaping itself, character by character.
fn escape_chars(out: &mut String, value: &[u8]) {
    let Ok(text) = std::str::from_utf8(value) else {
        for b in value {
            push_hex(out, *b);
        }
        return;
    };
    let last = text.len().saturating_sub(1);
    for (i, c) in text.char_indices() {
        match c {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            // A space is one byte, so it is the last character exactly when it starts at the last byte.
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    push_hex(out, b);
                }
            }
            c => out.push(c),
        }
    }
}

/// The value as it is when escaping would not change it: printable ASCII without the special
/// characters, no leading `#` or space and no trailing space (the common case, checked bytewise).
fn needs_no_escape(value: &[u8]) -> Option<&str> {
    let (first, last) = (value.first()?, value.last()?);
    if matches!(first, b'#' | b' ') || *last == b' ' {
        return None;
    }
    let special = |b: &u8| matches!(b, b',' | b'+' | b'"' | b'\\' | b'<' | b'>' | b';' | b'=');
    if value
        .iter()
        .all(|b| matches!(b, 0x20..=0x7e) && !special(b))
    {
        std::str::from_utf8(value).ok()
    } else {
        None
    }
}

/// `\XX`, upper-case hex.
fn push_hex(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('\\');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 0x0f)]));
}

/// Sorts the normalized AVAs of one RDN and joins them with `+`.
pub(crate) fn join_avas(mut avas: Vec<String>) -> String {
    if avas.len() == 1 {
        return avas.pop().unwrap_or_default();
    }
    avas.sort();
    avas.dedup();
    avas.join("+")
}

/// Parses a DN-syntax value. Like slapd, an unescaped ';' is also accepted as the RDN separator
/// (the RFC 1779 form; observed: `(seeAlso=cn=foo;dc=example;dc=com)` matches on slapd). RFC 4514
/// requires ';' in a value to be escaped, so a string using it unescaped is tried that way only
/// when it does not parse as it is.
pub(crate) fn parse_dn_value(value: &[u8]) -> Result<Dn, InvalidValue> {
    let error = match Dn::parse(value) {
        Ok(dn) => return Ok(dn),
        Err(e) => InvalidValue::new(e.to_string()),
    };
    if !value.contains(&b';') {
        return Err(error);
    }
    let mut converted = Vec::with_capacity(value.len());
    let mut escaped = false;
    for &b in value {
        converted.push(if b == b';' && !escaped { b',' } else { b });
        escaped = !escaped && b == b'\\';
    }
    Dn::parse(&converted).map_err(|_| error)
}

/// distinguishedNameMatch without a schema: attribute names lower-cased, values prepared like
/// caseIgnoreMatch when they are UTF-8. Exact only for case-insensitive string attributes.
pub(crate) fn normalize_dn_without_schema(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let dn = parse_dn_value(value)?;
    let rdns = dn
        .rdns
        .iter()
        .map(|rdn| {
            join_avas(
                rdn.avas
                    .iter()
                    .map(|ava| {
                        let value = match std::str::from_utf8(&ava.value) {
                            Ok(s) => prepare(s, Fold::Unicode, Spaces::Trim).into_bytes(),
                            Err(_) => ava.value.clone(),
                        };
                        norm_ava(&ava.attr, &value)
                    })
                    .collect(),
            )
        })
        .collect();
    Ok(NormDn::from_rdns(rdns).text.into_bytes())
}

/// rdnMatch without a schema: like `normalize_dn_without_schema` for a value that must be exactly
/// one RDN.
pub(crate) fn normalize_rdn_without_schema(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    check_single_rdn(value)?;
    normalize_dn_without_schema(value)
}

pub(crate) fn check_single_rdn(value: &[u8]) -> Result<(), InvalidValue> {
    let dn = parse_dn_value(value)?;
    if dn.rdns.len() == 1 {
        Ok(())
    } else {
        Err(InvalidValue::new("not a single RDN"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_table() {
        for (input, expected) in [
            (&b"plain"[..], "plain"),
            (b" both ", "\\ both\\ "),
            (b" ", "\\ "),
            (b"#", "\\#"),
            (b"a\x00b", "a\\00b"),
            (b"tab\there", "tab\\09here"),
            (b"", ""),
        ] {
            assert_eq!(escape_value(input), expected, "{input:?}");
        }
    }

    #[test]
    fn escape_fast_path_agrees_with_the_full_escaping() {
        for input in [
            &b"user0000042"[..],
            b"Example Corp",
            b"a,b",
            b"a=b",
            b"#x",
            b"x#",
            b" x",
            b"x ",
            b"back\\slash",
            b"quote\"d",
            b"semi;colon",
            b"<angle>",
            b"del\x7f",
            b"\xc3\xa4",
            b"\xff",
        ] {
            let fast = needs_no_escape(input).map(str::to_string);
            let mut slow = String::new();
            escape_chars(&mut slow, input);
            if let Some(fast) = fast {
                assert_eq!(fast, slow, "{input:?}");
            }
        }
        assert_eq!(needs_no_escape(b"user0000042"), Some("user0000042"));
        assert_eq!(needs_no_escape(b"a,b"), None);
        assert_eq!(needs_no_escape(b""), None);
    }
}
