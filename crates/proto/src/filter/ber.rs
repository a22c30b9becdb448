//! RFC 4511 §4.5.1.7 filters in BER, decoded with a nesting limit.

use canopy_ber::{tag, Reader, Writer};

use super::{Filter, MatchingRuleAssertion, SubstringFilter};
use crate::decoding::{DecodeError, DecodeLimits};

const AND: u8 = 0xa0;
const OR: u8 = 0xa1;
const NOT: u8 = 0xa2;
const EQUALITY: u8 = 0xa3;
const SUBSTRINGS: u8 = 0xa4;
const GREATER_OR_EQUAL: u8 = 0xa5;
const LESS_OR_EQUAL: u8 = 0xa6;
const PRESENT: u8 = 0x87;
const APPROX: u8 = 0xa8;
const EXTENSIBLE: u8 = 0xa9;

const SUB_INITIAL: u8 = 0x80;
const SUB_ANY: u8 = 0x81;
const SUB_FINAL: u8 = 0x82;

const MRA_RULE: u8 = 0x81;
const MRA_TYPE: u8 = 0x82;
const MRA_VALUE: u8 = 0x83;
const MRA_DN_ATTRIBUTES: u8 = 0x84;

impl Filter {
    /// Appends the BER encoding of this filter.
    pub fn encode_ber(&self, w: &mut Writer<'_>) {
        match self {
            Filter::And(list) => w.constructed(AND, |w| list.iter().for_each(|f| f.encode_ber(w))),
            Filter::Or(list) => w.constructed(OR, |w| list.iter().for_each(|f| f.encode_ber(w))),
            Filter::Not(inner) => w.constructed(NOT, |w| inner.encode_ber(w)),
            Filter::Equality(attr, value) => encode_ava(w, EQUALITY, attr, value),
            Filter::GreaterOrEqual(attr, value) => encode_ava(w, GREATER_OR_EQUAL, attr, value),
            Filter::LessOrEqual(attr, value) => encode_ava(w, LESS_OR_EQUAL, attr, value),
            Filter::Approx(attr, value) => encode_ava(w, APPROX, attr, value),
            Filter::Present(attr) => w.octet_string(PRESENT, attr.as_bytes()),
            Filter::Substrings(sub) => w.constructed(SUBSTRINGS, |w| {
                w.octet_string(tag::OCTET_STRING, sub.attr.as_bytes());
                w.constructed(tag::SEQUENCE, |w| {
                    if let Some(initial) = &sub.initial {
                        w.octet_string(SUB_INITIAL, initial);
                    }
                    for any in &sub.any {
                        w.octet_string(SUB_ANY, any);
                    }
                    if let Some(final_) = &sub.final_ {
                        w.octet_string(SUB_FINAL, final_);
                    }
                });
            }),
            // An extensible match with neither rule nor type decodes back as Undefined.
            Filter::Undefined => w.constructed(EXTENSIBLE, |w| w.octet_string(MRA_VALUE, b"")),
            Filter::Extensible(mra) => w.constructed(EXTENSIBLE, |w| {
                if let Some(rule) = &mra.rule {
                    w.octet_string(MRA_RULE, rule.as_bytes());
                }
                if let Some(attr) = &mra.attr {
                    w.octet_string(MRA_TYPE, attr.as_bytes());
                }
                w.octet_string(MRA_VALUE, &mra.value);
                if mra.dn_attributes {
                    w.boolean(MRA_DN_ATTRIBUTES, true);
                }
            }),
        }
    }

    /// Reads one filter TLV from `r`, refusing nesting deeper than `limits.max_filter_depth`.
    pub fn decode_ber(r: &mut Reader<'_>, limits: &DecodeLimits) -> Result<Filter, DecodeError> {
        decode(r, 1, limits.max_filter_depth)
    }
}

fn encode_ava(w: &mut Writer<'_>, choice: u8, attr: &str, value: &[u8]) {
    w.constructed(choice, |w| {
        w.octet_string(tag::OCTET_STRING, attr.as_bytes());
        w.octet_string(tag::OCTET_STRING, value);
    });
}

fn attr_string(bytes: &[u8]) -> Result<String, DecodeError> {
    crate::decoding::utf8(bytes, "filter attribute description")
}

fn decode(r: &mut Reader<'_>, depth: usize, max: usize) -> Result<Filter, DecodeError> {
    if depth > max {
        return Err(DecodeError::new(format!(
            "filter nested deeper than {max} levels"
        )));
    }
    let (choice, contents) = r.read_tlv()?;
    let mut c = Reader::new(contents);
    let filter = match choice {
        AND | OR => {
            let mut list = Vec::new();
            while !c.is_empty() {
                list.push(decode(&mut c, depth + 1, max)?);
            }
            if choice == AND {
                Filter::And(list)
            } else {
                Filter::Or(list)
            }
        }
        NOT => {
            let inner = decode(&mut c, depth + 1, max)?;
            // slapd reads the first filter of a NOT and ignores whatever follows it.
            c = Reader::new(&[]);
            Filter::Not(Box::new(inner))
        }
        EQUALITY | GREATER_OR_EQUAL | LESS_OR_EQUAL | APPROX => {
            let attr = c.read_octet_string(tag::OCTET_STRING)?;
            let value = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            match (attr_string(attr), choice) {
                (Err(_), _) => Filter::Undefined,
                (Ok(attr), EQUALITY) => Filter::Equality(attr, value),
                (Ok(attr), GREATER_OR_EQUAL) => Filter::GreaterOrEqual(attr, value),
                (Ok(attr), LESS_OR_EQUAL) => Filter::LessOrEqual(attr, value),
                (Ok(attr), _) => Filter::Approx(attr, value),
            }
        }
        PRESENT => {
            c = Reader::new(&[]);
            attr_string(contents).map_or(Filter::Undefined, Filter::Present)
        }
        SUBSTRINGS => decode_substrings(&mut c)?.map_or(Filter::Undefined, Filter::Substrings),
        EXTENSIBLE => decode_extensible(&mut c)?.map_or(Filter::Undefined, Filter::Extensible),
        // An unknown choice is skipped and Undefined, as in slapd.
        _ => {
            c = Reader::new(&[]);
            Filter::Undefined
        }
    };
    if !c.is_empty() {
        return Err(DecodeError::new("unexpected data at end of filter"));
    }
    Ok(filter)
}

/// A substring filter; `None` (Undefined) when its parts are absent, repeated or out of order, which is well-formed
/// BER that RFC 4511 §4.5.1.7.2 forbids.
fn decode_substrings(c: &mut Reader<'_>) -> Result<Option<SubstringFilter>, DecodeError> {
    let attr = c.read_octet_string(tag::OCTET_STRING)?;
    let mut parts = c.read_constructed(tag::SEQUENCE)?;
    let mut sub = SubstringFilter {
        attr: String::new(),
        initial: None,
        any: Vec::new(),
        final_: None,
    };
    let mut sane = !parts.is_empty();
    while !parts.is_empty() {
        let (kind, value) = parts.read_tlv()?;
        // initial must come first and final last (RFC 4511 §4.5.1.7.2).
        match kind {
            _ if sub.final_.is_some() => sane = false,
            SUB_INITIAL if sub.initial.is_none() && sub.any.is_empty() => {
                sub.initial = Some(value.to_vec())
            }
            SUB_ANY => sub.any.push(value.to_vec()),
            SUB_FINAL => sub.final_ = Some(value.to_vec()),
            _ => sane = false,
        }
    }
    match attr_string(attr) {
        Ok(attr) if sane => Ok(Some(SubstringFilter { attr, ..sub })),
        _ => Ok(None),
    }
}

/// An extensible match; `None` (Undefined) when it names neither a rule nor a type.
fn decode_extensible(c: &mut Reader<'_>) -> Result<Option<MatchingRuleAssertion>, DecodeError> {
    let rule = c.read_optional(MRA_RULE)?;
    let attr = c.read_optional(MRA_TYPE)?;
    let value = c.read_octet_string(MRA_VALUE)?.to_vec();
    let dn_attributes = match c.peek_tag() {
        Some(MRA_DN_ATTRIBUTES) => c.read_bool(MRA_DN_ATTRIBUTES)?,
        _ => false,
    };
    let rule = match rule
        .map(|r| crate::decoding::utf8(r, "matching rule"))
        .transpose()
    {
        Ok(rule) => rule,
        Err(_) => return Ok(None),
    };
    let attr = match attr.map(attr_string).transpose() {
        Ok(attr) => attr,
        Err(_) => return Ok(None),
    };
    if rule.is_none() && attr.is_none() {
        return Ok(None);
    }
    Ok(Some(MatchingRuleAssertion {
        rule,
        attr,
        value,
        dn_attributes,
    }))
}
