//! RFC 4511 §4.5.1.7 filters in BER, decoded with a nesting limit.

use canopy_ber::{tag, Reader, Writer};

use super::{Filter, MatchingRuleAssertion, SubstringFilter};
use crate::codec::{DecodeError, DecodeLimits};

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
    crate::codec::utf8(bytes, "filter attribute description")
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
        NOT => Filter::Not(Box::new(decode(&mut c, depth + 1, max)?)),
        EQUALITY | GREATER_OR_EQUAL | LESS_OR_EQUAL | APPROX => {
            let attr = attr_string(c.read_octet_string(tag::OCTET_STRING)?)?;
            let value = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            match choice {
                EQUALITY => Filter::Equality(attr, value),
                GREATER_OR_EQUAL => Filter::GreaterOrEqual(attr, value),
                LESS_OR_EQUAL => Filter::LessOrEqual(attr, value),
                _ => Filter::Approx(attr, value),
            }
        }
        PRESENT => {
            c = Reader::new(&[]);
            Filter::Present(attr_string(contents)?)
        }
        SUBSTRINGS => Filter::Substrings(decode_substrings(&mut c)?),
        EXTENSIBLE => Filter::Extensible(decode_extensible(&mut c)?),
        other => {
            return Err(DecodeError::new(format!(
                "unknown filter choice 0x{other:02x}"
            )))
        }
    };
    if !c.is_empty() {
        return Err(DecodeError::new("unexpected data at end of filter"));
    }
    Ok(filter)
}

fn decode_substrings(c: &mut Reader<'_>) -> Result<SubstringFilter, DecodeError> {
    let attr = attr_string(c.read_octet_string(tag::OCTET_STRING)?)?;
    let mut parts = c.read_constructed(tag::SEQUENCE)?;
    let mut sub = SubstringFilter {
        attr,
        initial: None,
        any: Vec::new(),
        final_: None,
    };
    if parts.is_empty() {
        return Err(DecodeError::new("substring filter without substrings"));
    }
    while !parts.is_empty() {
        let (kind, value) = parts.read_tlv()?;
        // initial must come first and final last (RFC 4511 §4.5.1.7.2).
        if sub.final_.is_some() {
            return Err(DecodeError::new("substring after final"));
        }
        match kind {
            SUB_INITIAL if sub.initial.is_none() && sub.any.is_empty() => {
                sub.initial = Some(value.to_vec())
            }
            SUB_ANY => sub.any.push(value.to_vec()),
            SUB_FINAL => sub.final_ = Some(value.to_vec()),
            _ => {
                return Err(DecodeError::new(format!(
                    "bad substring choice 0x{kind:02x}"
                )))
            }
        }
    }
    Ok(sub)
}

fn decode_extensible(c: &mut Reader<'_>) -> Result<MatchingRuleAssertion, DecodeError> {
    let rule = match c.read_optional(MRA_RULE)? {
        Some(rule) => Some(crate::codec::utf8(rule, "matching rule")?),
        None => None,
    };
    let attr = match c.read_optional(MRA_TYPE)? {
        Some(attr) => Some(attr_string(attr)?),
        None => None,
    };
    let value = c.read_octet_string(MRA_VALUE)?.to_vec();
    let dn_attributes = match c.peek_tag() {
        Some(MRA_DN_ATTRIBUTES) => c.read_bool(MRA_DN_ATTRIBUTES)?,
        _ => false,
    };
    if rule.is_none() && attr.is_none() {
        return Err(DecodeError::new(
            "extensible match needs a matching rule or a type",
        ));
    }
    Ok(MatchingRuleAssertion {
        rule,
        attr,
        value,
        dn_attributes,
    })
}
