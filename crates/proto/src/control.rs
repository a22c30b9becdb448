//! Values of the request and response controls Canopy understands.

use canopy_ber::{tag, Reader, Writer};

use crate::decoding::{DecodeError, DecodeLimits};
use crate::filter::Filter;

/// RFC 4511 §4.5.2 SearchResultEntry, the form of a read-entry response control's value.
const SEARCH_RESULT_ENTRY: u8 = 0x64;

/// RFC 2696 realSearchControlValue of the simple paged results control.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PagedResults {
    /// Requested page size in a request; estimated total (or 0) in a response.
    pub size: i32,
    /// Opaque server cookie; empty on the first request and on the last response.
    pub cookie: Vec<u8>,
}

impl PagedResults {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let size = seq.read_integer(tag::INTEGER)?;
        let size = i32::try_from(size)
            .ok()
            .filter(|s| *s >= 0)
            .ok_or_else(|| DecodeError::new(format!("paged results size {size} out of range")))?;
        let cookie = seq.read_octet_string(tag::OCTET_STRING)?.to_vec();
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in paged results control"));
        }
        Ok(PagedResults { size, cookie })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.cookie.len() + 12);
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::INTEGER, i64::from(self.size));
            w.octet_string(tag::OCTET_STRING, &self.cookie);
        });
        out
    }
}

/// RFC 4528 §3: the assertion control's value is a Filter, BER-encoded.
pub fn decode_assertion(v: &[u8], limits: &DecodeLimits) -> Result<Filter, DecodeError> {
    let mut r = Reader::new(v);
    let filter = Filter::decode_ber(&mut r, limits)?;
    if !r.is_empty() {
        return Err(DecodeError::new(
            "unexpected data after the assertion filter",
        ));
    }
    // A value that is no filter at all (an unknown choice at the top) is a malformed control, not an
    // assertion that fails.
    if filter == Filter::Undefined {
        return Err(DecodeError::new("the assertion value is not a filter"));
    }
    Ok(filter)
}

/// RFC 3876 §2: the Matched Values control's value, `ValuesReturnFilter ::= SEQUENCE OF
/// SimpleFilterItem`: filter items that are neither `and`, `or` nor `not`.
pub fn decode_values_return(v: &[u8], limits: &DecodeLimits) -> Result<Vec<Filter>, DecodeError> {
    let mut outer = Reader::new(v);
    let mut seq = outer.read_constructed(tag::SEQUENCE)?;
    let mut items = Vec::new();
    while !seq.is_empty() {
        match Filter::decode_ber(&mut seq, limits)? {
            Filter::And(_) | Filter::Or(_) | Filter::Not(_) => {
                return Err(DecodeError::new(
                    "a values return filter item is and, or or not",
                ))
            }
            item => items.push(item),
        }
    }
    if !outer.is_empty() {
        return Err(DecodeError::new(
            "unexpected data after the values return filter",
        ));
    }
    if items.is_empty() {
        return Err(DecodeError::new("the values return filter is empty"));
    }
    Ok(items)
}

/// The Matched Values control's value for `items` (simple filter items).
pub fn encode_values_return(items: &[Filter]) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
        for item in items {
            item.encode_ber(w);
        }
    });
    out
}

pub fn encode_assertion(filter: &Filter) -> Vec<u8> {
    let mut out = Vec::new();
    filter.encode_ber(&mut Writer::new(&mut out));
    out
}

/// RFC 4527 §3.1 request value of the pre-read and post-read controls: an AttributeSelection.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadEntryRequest {
    pub attributes: Vec<String>,
}

impl ReadEntryRequest {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let mut attributes = Vec::new();
        while !seq.is_empty() {
            let name = seq.read_octet_string(tag::OCTET_STRING)?;
            let name = std::str::from_utf8(name)
                .map_err(|_| DecodeError::new("attribute selector is not UTF-8"))?;
            attributes.push(name.to_string());
        }
        if !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in read-entry control"));
        }
        Ok(ReadEntryRequest { attributes })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            for name in &self.attributes {
                w.octet_string(tag::OCTET_STRING, name.as_bytes());
            }
        });
        out
    }
}

/// RFC 4527 §3.2 response value: a SearchResultEntry of `dn` whose `attrs` are complete PartialAttribute
/// TLVs, already encoded (as [`crate::encode_partial_attribute`] writes them).
pub fn encode_read_entry_response(dn: &[u8], attrs: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(dn.len() + attrs.len() + 12);
    Writer::new(&mut out).constructed(SEARCH_RESULT_ENTRY, |w| {
        w.octet_string(tag::OCTET_STRING, dn);
        w.constructed(tag::SEQUENCE, |w| w.raw(attrs));
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_return_filters() {
        let limits = DecodeLimits::default();
        let items = vec![
            Filter::parse("(cn=a*)").unwrap(),
            Filter::parse("(description=two)").unwrap(),
        ];
        let value = encode_values_return(&items);
        assert_eq!(decode_values_return(&value, &limits).unwrap(), items);
        for refused in ["(&(cn=a)(sn=b))", "(|(cn=a)(sn=b))", "(!(cn=a))"] {
            let value = encode_values_return(&[Filter::parse(refused).unwrap()]);
            assert!(decode_values_return(&value, &limits).is_err(), "{refused}");
        }
        assert!(decode_values_return(&encode_values_return(&[]), &limits).is_err());
        let mut trailing = value.clone();
        trailing.push(0);
        assert!(decode_values_return(&trailing, &limits).is_err());
        assert!(decode_values_return(b"\x04\x00", &limits).is_err());
    }
    use crate::testutil::{hex, unhex};

    #[test]
    fn paged_results_vectors() {
        let cases: &[(i32, &[u8], &str)] = &[
            (100, b"", "30 05 02 01 64 04 00"),
            (0, b"\x01\x02", "30 07 02 01 00 04 02 01 02"),
            (1000, b"ab", "30 08 02 02 03 e8 04 02 61 62"),
        ];
        for &(size, cookie, expected) in cases {
            let value = PagedResults {
                size,
                cookie: cookie.to_vec(),
            };
            assert_eq!(hex(&value.encode()), expected);
            assert_eq!(PagedResults::decode(&unhex(expected)).unwrap(), value);
        }
    }

    #[test]
    fn paged_results_rejects() {
        for bad in [
            "",
            "30 03 02 01 05",
            "30 05 02 01 ff 04 00",
            "30 06 02 01 05 04 00 00",
            "04 00",
        ] {
            assert!(PagedResults::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn assertion_vectors() {
        let limits = DecodeLimits::default();
        let cases: &[(&str, &str)] = &[
            ("(cn=a)", "a3 07 04 02 63 6e 04 01 61"),
            ("(objectClass=*)", "87 0b 6f 62 6a 65 63 74 43 6c 61 73 73"),
            ("(!(cn=a))", "a2 09 a3 07 04 02 63 6e 04 01 61"),
        ];
        for &(text, expected) in cases {
            let filter = Filter::parse(text).unwrap();
            assert_eq!(hex(&encode_assertion(&filter)), expected, "{text}");
            assert_eq!(decode_assertion(&unhex(expected), &limits).unwrap(), filter);
        }
        for bad in [
            "",
            "04 00",
            "30 00",
            "a3 07 04 02 63 6e 04 01 61 00",
            "a3 03 04 01",
        ] {
            assert!(decode_assertion(&unhex(bad), &limits).is_err(), "{bad}");
        }
    }

    #[test]
    fn read_entry_request_vectors() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "30 00"),
            (&["cn"], "30 04 04 02 63 6e"),
            (&["*", "+"], "30 06 04 01 2a 04 01 2b"),
        ];
        for &(names, expected) in cases {
            let value = ReadEntryRequest {
                attributes: names.iter().map(|s| s.to_string()).collect(),
            };
            assert_eq!(hex(&value.encode()), expected);
            assert_eq!(ReadEntryRequest::decode(&unhex(expected)).unwrap(), value);
        }
        for bad in ["", "04 00", "30 02 02 00", "30 00 00", "30 03 04 01 ff"] {
            assert!(ReadEntryRequest::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn read_entry_response_encoding() {
        let mut attrs = Vec::new();
        crate::encode_partial_attribute(&mut attrs, "cn", &[b"a"]);
        assert_eq!(
            hex(&encode_read_entry_response(b"cn=a", &attrs)),
            "64 13 04 04 63 6e 3d 61 30 0b 30 09 04 02 63 6e 31 03 04 01 61"
        );
        assert_eq!(
            hex(&encode_read_entry_response(b"", &[])),
            "64 04 04 00 30 00"
        );
    }
}
