//! Server-side sorting (RFC 2891) and virtual list view (draft-ietf-ldapext-ldapv3-vlv-09): the
//! request and response control values.

use canopy_ber::{tag, Reader, Writer};

use crate::DecodeError;

/// RFC 2891 §1.1: the sort request control.
pub const CONTROL_SORT_REQUEST: &str = "1.2.840.113556.1.4.473";
/// RFC 2891 §1.2: the sort response control.
pub const CONTROL_SORT_RESPONSE: &str = "1.2.840.113556.1.4.474";
/// draft-ietf-ldapext-ldapv3-vlv-09 §6.1: the VLV request control.
pub const CONTROL_VLV_REQUEST: &str = "2.16.840.1.113730.3.4.9";
/// draft-ietf-ldapext-ldapv3-vlv-09 §6.2: the VLV response control.
pub const CONTROL_VLV_RESPONSE: &str = "2.16.840.1.113730.3.4.10";

/// Context tags of the SortKey (`orderingRule [0]`, `reverseOrder [1]`) and of the sort result's
/// `attributeType [0]`.
const TAG_ORDERING_RULE: u8 = 0x80;
const TAG_REVERSE_ORDER: u8 = 0x81;
const TAG_ATTRIBUTE_TYPE: u8 = 0x80;
/// The VLV request's target: `byOffset [0] SEQUENCE`, `greaterThanOrEqual [1] AssertionValue`.
const TAG_BY_OFFSET: u8 = 0xa0;
const TAG_GREATER_OR_EQUAL: u8 = 0x81;

/// One `SortKey` of RFC 2891 §1.1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub attribute: String,
    pub ordering_rule: Option<String>,
    pub reverse: bool,
}

/// RFC 2891 §1.1: `SortKeyList ::= SEQUENCE OF SEQUENCE { attributeType AttributeDescription,
/// orderingRule [0] MatchingRuleId OPTIONAL, reverseOrder [1] BOOLEAN DEFAULT FALSE }`.
pub fn decode_sort_request(value: &[u8]) -> Result<Vec<SortKey>, DecodeError> {
    let mut outer = Reader::new(value);
    let mut list = outer.read_constructed(tag::SEQUENCE)?;
    if !outer.is_empty() {
        return Err(DecodeError::new("unexpected data after the sort key list"));
    }
    let mut keys = Vec::new();
    while !list.is_empty() {
        let mut key = list.read_constructed(tag::SEQUENCE)?;
        let attribute = utf8(
            key.read_octet_string(tag::OCTET_STRING)?,
            "sort key attribute",
        )?;
        let ordering_rule = key
            .read_optional(TAG_ORDERING_RULE)?
            .map(|rule| utf8(rule, "sort key ordering rule"))
            .transpose()?;
        let reverse = match key.read_optional(TAG_REVERSE_ORDER)? {
            Some([b]) => *b != 0,
            Some(_) => return Err(DecodeError::new("sort key reverseOrder is not a boolean")),
            None => false,
        };
        if !key.is_empty() {
            return Err(DecodeError::new("unexpected data in a sort key"));
        }
        keys.push(SortKey {
            attribute,
            ordering_rule,
            reverse,
        });
    }
    if keys.is_empty() {
        return Err(DecodeError::new("the sort key list is empty"));
    }
    Ok(keys)
}

/// The value of a sort request control with `keys` (clients' and tests' side).
pub fn encode_sort_request(keys: &[SortKey]) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
        for key in keys {
            w.constructed(tag::SEQUENCE, |w| {
                w.octet_string(tag::OCTET_STRING, key.attribute.as_bytes());
                if let Some(rule) = &key.ordering_rule {
                    w.octet_string(TAG_ORDERING_RULE, rule.as_bytes());
                }
                if key.reverse {
                    w.boolean(TAG_REVERSE_ORDER, true);
                }
            });
        }
    });
    out
}

/// RFC 2891 §1.2: `SortResult ::= SEQUENCE { sortResult ENUMERATED, attributeType [0]
/// AttributeDescription OPTIONAL }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortResult {
    pub code: u32,
    pub attribute: Option<String>,
}

impl SortResult {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::ENUMERATED, i64::from(self.code));
            if let Some(attribute) = &self.attribute {
                w.octet_string(TAG_ATTRIBUTE_TYPE, attribute.as_bytes());
            }
        });
        out
    }

    pub fn decode(value: &[u8]) -> Result<SortResult, DecodeError> {
        let mut outer = Reader::new(value);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let code = u32::try_from(seq.read_integer(tag::ENUMERATED)?)
            .map_err(|_| DecodeError::new("sortResult out of range"))?;
        let attribute = seq
            .read_optional(TAG_ATTRIBUTE_TYPE)?
            .map(|a| utf8(a, "sort result attribute"))
            .transpose()?;
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in the sort result"));
        }
        Ok(SortResult { code, attribute })
    }
}

/// Where a VLV request's window is centred.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VlvTarget {
    /// `byOffset`: the offset (1 the first entry) in a list the client believes holds
    /// `content_count` entries (0: it does not know).
    ByOffset { offset: u32, content_count: u32 },
    /// `greaterThanOrEqual`: the first entry whose first sort key is at least this value.
    GreaterOrEqual(Vec<u8>),
}

/// draft-ietf-ldapext-ldapv3-vlv-09 §6.1: `VirtualListViewRequest ::= SEQUENCE { beforeCount
/// INTEGER (0..maxInt), afterCount INTEGER (0..maxInt), target CHOICE { byOffset [0] SEQUENCE {
/// offset INTEGER, contentCount INTEGER }, greaterThanOrEqual [1] AssertionValue }, contextID
/// OCTET STRING OPTIONAL }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlvRequest {
    pub before: u32,
    pub after: u32,
    pub target: VlvTarget,
    pub context: Option<Vec<u8>>,
}

impl VlvRequest {
    pub fn decode(value: &[u8]) -> Result<VlvRequest, DecodeError> {
        let mut outer = Reader::new(value);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let before = count(seq.read_integer(tag::INTEGER)?, "beforeCount")?;
        let after = count(seq.read_integer(tag::INTEGER)?, "afterCount")?;
        let target = match seq.peek_tag() {
            Some(TAG_BY_OFFSET) => {
                let mut by = seq.read_constructed(TAG_BY_OFFSET)?;
                let offset = count(by.read_integer(tag::INTEGER)?, "offset")?;
                let content_count = count(by.read_integer(tag::INTEGER)?, "contentCount")?;
                if !by.is_empty() {
                    return Err(DecodeError::new("unexpected data in the VLV byOffset"));
                }
                VlvTarget::ByOffset {
                    offset,
                    content_count,
                }
            }
            Some(TAG_GREATER_OR_EQUAL) => {
                VlvTarget::GreaterOrEqual(seq.read_octet_string(TAG_GREATER_OR_EQUAL)?.to_vec())
            }
            _ => {
                return Err(DecodeError::new(
                    "VLV target is neither byOffset nor greaterThanOrEqual",
                ))
            }
        };
        let context = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in the VLV request"));
        }
        Ok(VlvRequest {
            before,
            after,
            target,
            context,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::INTEGER, i64::from(self.before));
            w.integer(tag::INTEGER, i64::from(self.after));
            match &self.target {
                VlvTarget::ByOffset {
                    offset,
                    content_count,
                } => w.constructed(TAG_BY_OFFSET, |w| {
                    w.integer(tag::INTEGER, i64::from(*offset));
                    w.integer(tag::INTEGER, i64::from(*content_count));
                }),
                VlvTarget::GreaterOrEqual(value) => w.octet_string(TAG_GREATER_OR_EQUAL, value),
            }
            if let Some(context) = &self.context {
                w.octet_string(tag::OCTET_STRING, context);
            }
        });
        out
    }
}

/// draft-ietf-ldapext-ldapv3-vlv-09 §6.2: `VirtualListViewResponse ::= SEQUENCE { targetPosition
/// INTEGER (0..maxInt), contentCount INTEGER (0..maxInt), virtualListViewResult ENUMERATED,
/// contextID OCTET STRING OPTIONAL }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlvResponse {
    pub target_position: u32,
    pub content_count: u32,
    pub result: u32,
    pub context: Option<Vec<u8>>,
}

impl VlvResponse {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::INTEGER, i64::from(self.target_position));
            w.integer(tag::INTEGER, i64::from(self.content_count));
            w.integer(tag::ENUMERATED, i64::from(self.result));
            if let Some(context) = &self.context {
                w.octet_string(tag::OCTET_STRING, context);
            }
        });
        out
    }

    pub fn decode(value: &[u8]) -> Result<VlvResponse, DecodeError> {
        let mut outer = Reader::new(value);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let target_position = count(seq.read_integer(tag::INTEGER)?, "targetPosition")?;
        let content_count = count(seq.read_integer(tag::INTEGER)?, "contentCount")?;
        let result = count(seq.read_integer(tag::ENUMERATED)?, "virtualListViewResult")?;
        let context = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in the VLV response"));
        }
        Ok(VlvResponse {
            target_position,
            content_count,
            result,
            context,
        })
    }
}

/// An INTEGER (0..maxInt).
fn count(n: i64, what: &str) -> Result<u32, DecodeError> {
    u32::try_from(n)
        .ok()
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or_else(|| DecodeError::new(format!("{what} {n} out of range")))
}

fn utf8(bytes: &[u8], what: &str) -> Result<String, DecodeError> {
    std::str::from_utf8(bytes)
        .map(str::to_string)
        .map_err(|_| DecodeError::new(format!("{what} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{hex, unhex};

    fn key(attribute: &str, rule: Option<&str>, reverse: bool) -> SortKey {
        SortKey {
            attribute: attribute.into(),
            ordering_rule: rule.map(str::to_string),
            reverse,
        }
    }

    #[test]
    fn sort_requests() {
        for (keys, expected) in [
            (vec![key("cn", None, false)], "3006 3004 0402636e"),
            (
                vec![key("sn", Some("caseIgnoreOrderingMatch"), true)],
                "302230200402736e80176361736549676e6f72654f72646572696e674d617463688101ff",
            ),
            (
                vec![key("sn", None, false), key("cn", None, true)],
                "300f 3004 0402736e 3007 0402636e 8101ff",
            ),
        ] {
            let expected: String = expected.split_whitespace().collect();
            assert_eq!(hex(&encode_sort_request(&keys)).replace(' ', ""), expected);
            assert_eq!(decode_sort_request(&unhex(&expected)).unwrap(), keys);
        }
    }

    #[test]
    fn sort_requests_rejected() {
        for bad in [
            "",
            "3000",
            "3002 3000",
            "3006 3004 0402636e 00",
            "3007 3005 0402636e 8100",
            "3008 3006 0402636e 0400",
            "3006 3004 0402ffff",
        ] {
            let bad: String = bad.split_whitespace().collect();
            assert!(decode_sort_request(&unhex(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn sort_results() {
        for (result, expected) in [
            (
                SortResult {
                    code: 0,
                    attribute: None,
                },
                "30030a0100",
            ),
            (
                SortResult {
                    code: 18,
                    attribute: Some("cn".into()),
                },
                "30070a01128002636e",
            ),
        ] {
            let expected: String = expected.split_whitespace().collect();
            assert_eq!(hex(&result.encode()).replace(' ', ""), expected);
            assert_eq!(SortResult::decode(&unhex(&expected)).unwrap(), result);
        }
    }

    #[test]
    fn vlv_requests() {
        for (request, expected) in [
            (
                VlvRequest {
                    before: 1,
                    after: 2,
                    target: VlvTarget::ByOffset {
                        offset: 3,
                        content_count: 0,
                    },
                    context: None,
                },
                "300e 020101 020102 a006 020103 020100",
            ),
            (
                VlvRequest {
                    before: 0,
                    after: 5,
                    target: VlvTarget::GreaterOrEqual(b"jo".to_vec()),
                    context: Some(b"\x01\x02".to_vec()),
                },
                "300e 020100 020105 81026a6f 04020102",
            ),
        ] {
            let expected: String = expected.split_whitespace().collect();
            assert_eq!(hex(&request.encode()).replace(' ', ""), expected);
            assert_eq!(VlvRequest::decode(&unhex(&expected)).unwrap(), request);
        }
        for bad in [
            "",
            "3006 020100 020100",
            "3009 0201ff 020100 810100",
            "3009 020100 020100 820100",
            "300b 020100 020100 a003 020100",
            "300b 020100 020100 810100 0500",
        ] {
            let bad: String = bad.split_whitespace().collect();
            assert!(VlvRequest::decode(&unhex(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn vlv_responses() {
        let response = VlvResponse {
            target_position: 2,
            content_count: 4,
            result: 0,
            context: Some(vec![0xab]),
        };
        let expected = "300c0201020201040a01000401ab";
        assert_eq!(hex(&response.encode()).replace(' ', ""), expected);
        assert_eq!(VlvResponse::decode(&unhex(expected)).unwrap(), response);
        // slapd's answer to VLV without sort: no context.
        let bare = VlvResponse::decode(&unhex("30090201000201000a014c")).unwrap();
        assert_eq!(bare.result, 76);
        assert_eq!(bare.context, None);
    }
}
