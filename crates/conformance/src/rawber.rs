//! BER the codec does not build from its types: a filter on its own (the assertion control's
//! value) and a SearchRequest whose filter is arbitrary bytes (malformed-filter cases).

use canopy_ber::{tag, Reader, Writer};
use canopy_proto::{
    Control, DerefAliases, Filter, PartialAttribute, SearchRequest, SearchResultEntry, SearchScope,
};

/// [APPLICATION 3] SearchRequest.
const SEARCH_REQUEST: u8 = 0x63;
/// [APPLICATION 4] SearchResultEntry.
const SEARCH_RESULT_ENTRY: u8 = 0x64;
/// [0] controls of an LDAPMessage.
const CONTROLS: u8 = 0xa0;

/// The BER encoding of one filter (RFC 4528's assertion control value).
pub fn filter_ber(f: &Filter) -> Vec<u8> {
    let mut out = Vec::new();
    f.encode_ber(&mut Writer::new(&mut out));
    out
}

/// RFC 4527 AttributeSelection: the pre-read and post-read request control value.
pub fn attribute_selection(attrs: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
        for a in attrs {
            w.octet_string(tag::OCTET_STRING, a.as_bytes());
        }
    });
    out
}

/// The SearchResultEntry of a pre-read or post-read response control; None if malformed.
pub fn decode_entry(v: &[u8]) -> Option<SearchResultEntry> {
    let mut outer = Reader::new(v);
    let mut r = outer.read_constructed(SEARCH_RESULT_ENTRY).ok()?;
    let dn = r.read_octet_string(tag::OCTET_STRING).ok()?.to_vec();
    let mut list = r.read_constructed(tag::SEQUENCE).ok()?;
    let mut attributes = Vec::new();
    while !list.is_empty() {
        let mut a = list.read_constructed(tag::SEQUENCE).ok()?;
        let name = String::from_utf8(a.read_octet_string(tag::OCTET_STRING).ok()?.to_vec()).ok()?;
        let mut set = a.read_constructed(tag::SET).ok()?;
        let mut values = Vec::new();
        while !set.is_empty() {
            values.push(set.read_octet_string(tag::OCTET_STRING).ok()?.to_vec());
        }
        attributes.push(PartialAttribute { name, values });
    }
    Some(SearchResultEntry { dn, attributes })
}

/// A complete LDAPMessage holding `req` with `filter` spliced in as its filter TLV.
pub fn search_pdu(id: i32, req: &SearchRequest, filter: &[u8], controls: &[Control]) -> Vec<u8> {
    let scope = match req.scope {
        SearchScope::BaseObject => 0,
        SearchScope::SingleLevel => 1,
        SearchScope::WholeSubtree => 2,
        SearchScope::SubordinateSubtree => 3,
    };
    let deref = match req.deref {
        DerefAliases::Never => 0,
        DerefAliases::InSearching => 1,
        DerefAliases::FindingBaseObj => 2,
        DerefAliases::Always => 3,
    };
    let mut out = Vec::new();
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
        w.integer(tag::INTEGER, i64::from(id));
        w.constructed(SEARCH_REQUEST, |w| {
            w.octet_string(tag::OCTET_STRING, &req.base);
            w.integer(tag::ENUMERATED, scope);
            w.integer(tag::ENUMERATED, deref);
            w.integer(tag::INTEGER, i64::from(req.size_limit));
            w.integer(tag::INTEGER, i64::from(req.time_limit));
            w.boolean(tag::BOOLEAN, req.types_only);
            w.raw(filter);
            w.constructed(tag::SEQUENCE, |w| {
                for a in &req.attributes {
                    w.octet_string(tag::OCTET_STRING, a.as_bytes());
                }
            });
        });
        if !controls.is_empty() {
            w.constructed(CONTROLS, |w| {
                for c in controls {
                    w.constructed(tag::SEQUENCE, |w| {
                        w.octet_string(tag::OCTET_STRING, c.oid.as_bytes());
                        if c.critical {
                            w.boolean(tag::BOOLEAN, true);
                        }
                        if let Some(v) = &c.value {
                            w.octet_string(tag::OCTET_STRING, v);
                        }
                    });
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::{DecodeLimits, LdapMessage, ProtocolOp};

    #[test]
    fn entries_of_read_controls_decode() {
        let entry = SearchResultEntry {
            dn: b"cn=a,dc=x".to_vec(),
            attributes: vec![PartialAttribute {
                name: "cn".into(),
                values: vec![b"a".to_vec(), b"b".to_vec()],
            }],
        };
        // The entry as the codec frames it inside an LDAPMessage, without the message header.
        let mut msg = Vec::new();
        LdapMessage {
            message_id: 1,
            op: ProtocolOp::SearchResultEntry(entry.clone()),
            controls: vec![],
        }
        .encode(&mut msg);
        let mut r = Reader::new(&msg);
        let mut seq = r.read_constructed(tag::SEQUENCE).unwrap();
        seq.read_integer(tag::INTEGER).unwrap();
        let value = seq.remaining();
        assert_eq!(decode_entry(value), Some(entry));
        assert_eq!(decode_entry(b"\x64\x01"), None);
        assert_eq!(decode_entry(b""), None);
        assert_eq!(
            attribute_selection(&["cn".into()]),
            b"\x30\x04\x04\x02cn".to_vec()
        );
    }

    #[test]
    fn spliced_pdu_matches_the_codec() {
        let req = SearchRequest {
            base: b"dc=example,dc=com".to_vec(),
            scope: SearchScope::WholeSubtree,
            deref: DerefAliases::FindingBaseObj,
            size_limit: 5,
            time_limit: 0,
            types_only: false,
            filter: Filter::parse("(&(cn=a*)(!(sn=b)))").unwrap(),
            attributes: vec!["cn".into()],
        };
        let controls = vec![Control {
            oid: "1.2.3".into(),
            critical: true,
            value: Some(vec![1]),
        }];
        let raw = search_pdu(7, &req, &filter_ber(&req.filter), &controls);
        let mut want = Vec::new();
        LdapMessage {
            message_id: 7,
            op: ProtocolOp::SearchRequest(req),
            controls,
        }
        .encode(&mut want);
        assert_eq!(raw, want);
        assert!(LdapMessage::decode(&raw, &DecodeLimits::default()).is_ok());
    }
}
