//! Splitting a byte stream into LDAPMessages, and the pre-encoded SearchResultEntry fast path.

use canopy_ber::{encoded_len, integer_len, parse_header, tag, write_header, BerError, Headers};

use super::encode::{ctx, encode_control, op_tag};
use crate::message::Control;

/// Why the bytes at the start of a stream cannot be an LDAPMessage. Either way the connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("message of {len} bytes exceeds the limit of {max}")]
    TooLarge { len: usize, max: usize },
    #[error("malformed message header: {0}")]
    Malformed(&'static str),
}

/// Length in bytes of the first complete LDAPMessage in `buf`, None if more bytes are needed.
/// Err(TooLarge) when the announced length (header included) exceeds `max_len`, known as soon as
/// the header is in; Err(Malformed) for a bad tag/length header (indefinite length, length of more
/// than 4 octets, tag not 0x30).
pub fn frame_len(buf: &[u8], max_len: usize) -> Result<Option<usize>, FrameError> {
    if let Some(&first) = buf.first() {
        if first != tag::SEQUENCE {
            return Err(FrameError::Malformed("tag is not SEQUENCE"));
        }
    }
    let header = match parse_header(buf) {
        Ok(Some(header)) => header,
        Ok(None) => return Ok(None),
        Err(BerError::IndefiniteLength) => return Err(FrameError::Malformed("indefinite length")),
        Err(BerError::LengthTooLong) => {
            return Err(FrameError::Malformed("length of more than 4 octets"))
        }
        Err(_) => return Err(FrameError::Malformed("bad header")),
    };
    let len = header.header_len.saturating_add(header.content_len);
    if len > max_len {
        return Err(FrameError::TooLarge { len, max: max_len });
    }
    Ok((buf.len() >= len).then_some(len))
}

/// SearchResultEntry with pre-encoded attributes: `attrs` is the concatenation of complete PartialAttribute
/// TLVs (each `30 len 04 type 31 len vals...`); this writes the LDAPMessage, op header and SEQUENCE OF header.
pub fn encode_search_result_entry_raw(out: &mut Vec<u8>, message_id: i32, dn: &[u8], attrs: &[u8]) {
    encode_search_result_entry_parts(out, message_id, dn, &[attrs]);
}

/// [`encode_search_result_entry_raw`] with the PartialAttribute TLVs in several runs (such as the stored
/// sections of an entry), copied once each straight after the headers.
pub fn encode_search_result_entry_parts(
    out: &mut Vec<u8>,
    message_id: i32,
    dn: &[u8],
    parts: &[&[u8]],
) {
    // Lengths are known up front, so the headers go out first and the attributes are copied exactly once.
    let attrs_len: usize = parts.iter().map(|p| p.len()).sum();
    let op_len = encoded_len(dn.len()) + encoded_len(attrs_len);
    let message_len = encoded_len(integer_len(i64::from(message_id))) + encoded_len(op_len);
    out.reserve(encoded_len(message_len));
    // The headers before the DN, and the one after it, each appended in one copy.
    let mut headers = Headers::new();
    headers.header(tag::SEQUENCE, message_len);
    headers.integer(tag::INTEGER, i64::from(message_id));
    headers.header(op_tag::SEARCH_RESULT_ENTRY, op_len);
    headers.header(tag::OCTET_STRING, dn.len());
    out.extend_from_slice(headers.as_bytes());
    out.extend_from_slice(dn);
    let mut headers = Headers::new();
    headers.header(tag::SEQUENCE, attrs_len);
    out.extend_from_slice(headers.as_bytes());
    for part in parts {
        out.extend_from_slice(part);
    }
}

/// A SearchResultDone without referral or controls (the usual end of a search), appended to `out`: the
/// same bytes as encoding `LdapMessage { op: SearchResultDone(result), controls: [] }`, without building
/// the message first.
pub fn encode_search_result_done_raw(
    out: &mut Vec<u8>,
    message_id: i32,
    code: u32,
    matched_dn: &[u8],
    message: &[u8],
) {
    let code_len = encoded_len(integer_len(i64::from(code)));
    let op_len = code_len + encoded_len(matched_dn.len()) + encoded_len(message.len());
    let message_len = encoded_len(integer_len(i64::from(message_id))) + encoded_len(op_len);
    out.reserve(encoded_len(message_len));
    let mut headers = Headers::new();
    headers.header(tag::SEQUENCE, message_len);
    headers.integer(tag::INTEGER, i64::from(message_id));
    headers.header(op_tag::SEARCH_RESULT_DONE, op_len);
    headers.integer(tag::ENUMERATED, i64::from(code));
    headers.header(tag::OCTET_STRING, matched_dn.len());
    if matched_dn.is_empty() {
        // The usual result: every header in one copy.
        headers.header(tag::OCTET_STRING, message.len());
        out.extend_from_slice(headers.as_bytes());
    } else {
        out.extend_from_slice(headers.as_bytes());
        out.extend_from_slice(matched_dn);
        let mut headers = Headers::new();
        headers.header(tag::OCTET_STRING, message.len());
        out.extend_from_slice(headers.as_bytes());
    }
    out.extend_from_slice(message);
}

/// Gives the LDAPMessage that starts at `start` in `out` (the last one there, encoded without controls,
/// such as a pre-encoded SearchResultEntry) the response `controls`: its length is rewritten and the
/// Controls element appended. A message that does not parse is left as it is.
pub fn attach_controls(out: &mut Vec<u8>, start: usize, controls: &[Control]) {
    if controls.is_empty() || start > out.len() {
        return;
    }
    let Ok(Some(header)) = parse_header(&out[start..]) else {
        return;
    };
    if header.tag != tag::SEQUENCE || start + header.header_len + header.content_len != out.len() {
        return;
    }
    let mut tail = Vec::new();
    canopy_ber::Writer::new(&mut tail).constructed(ctx::CONTROLS, |w| {
        for control in controls {
            encode_control(w, control);
        }
    });
    let content = out.split_off(start + header.header_len);
    out.truncate(start);
    write_header(out, tag::SEQUENCE, content.len() + tail.len());
    out.extend_from_slice(&content);
    out.extend_from_slice(&tail);
}

/// Encodes one PartialAttribute TLV.
pub fn encode_partial_attribute(out: &mut Vec<u8>, name: &str, values: &[&[u8]]) {
    let set_len: usize = values.iter().map(|v| encoded_len(v.len())).sum();
    let seq_len = encoded_len(name.len()) + encoded_len(set_len);
    out.reserve(encoded_len(seq_len));
    write_header(out, tag::SEQUENCE, seq_len);
    write_header(out, tag::OCTET_STRING, name.len());
    out.extend_from_slice(name.as_bytes());
    write_header(out, tag::SET, set_len);
    for value in values {
        write_header(out, tag::OCTET_STRING, value.len());
        out.extend_from_slice(value);
    }
}
