//! The values of the smaller request controls and of the Cancel request, decoded with slapd's
//! answers to bad ones (subentries, cancel).

use canopy_ber::Reader;
use canopy_core::LdapError;
use canopy_proto::oid::{
    CONTROL_DEREF, CONTROL_NO_OP, CONTROL_PERMISSIVE_MODIFY, CONTROL_SUBENTRIES,
};
use canopy_proto::ResultCode;

const SEQUENCE: u8 = 0x30;
const BOOLEAN: u8 = 0x01;
const INTEGER: u8 = 0x02;

fn protocol_error(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProtocolError, text)
}

/// slapd's text for a control given twice, for the controls that name themselves in it.
pub fn duplicate_text(oid: &str) -> Option<&'static str> {
    match oid {
        CONTROL_NO_OP => Some("noop control specified multiple times"),
        CONTROL_PERMISSIVE_MODIFY => Some("permissiveModify control specified multiple times"),
        CONTROL_SUBENTRIES => Some("subentries control specified multiple times"),
        CONTROL_DEREF => Some("Dereference control specified multiple times"),
        _ => None,
    }
}

/// RFC 3672 §3: the Subentries control's value, exactly one BOOLEAN (any non-zero octet is TRUE);
/// anything else, an absent value included, is slapd's protocolError.
pub fn subentries(value: Option<&[u8]>) -> Result<bool, LdapError> {
    let bogus = || protocol_error("subentries control value encoding is bogus");
    let value = value.ok_or_else(bogus)?;
    match value {
        [BOOLEAN, 1, octet] => Ok(*octet != 0),
        _ => Err(bogus()),
    }
}

/// The deref control's value as slapd first checks it (present, not empty); its specifications are
/// decoded against the schema by the search.
pub fn deref(value: Option<&[u8]>) -> Result<&[u8], LdapError> {
    match value {
        None => Err(protocol_error("Dereference control value is absent")),
        Some([]) => Err(protocol_error("Dereference control value is empty")),
        Some(value) => Ok(value),
    }
}

/// RFC 3909 §2: the Cancel request's value, `SEQUENCE { cancelID MessageID }`. As slapd, bytes after
/// the sequence are not looked at, and any ID is taken (one no operation has is noSuchOperation).
pub fn cancel_id(value: Option<&[u8]>) -> Result<i32, LdapError> {
    let value = value.ok_or_else(|| protocol_error("no message ID supplied"))?;
    let parse = || -> Option<i32> {
        let mut outer = Reader::new(value);
        let mut seq = outer.read_constructed(SEQUENCE).ok()?;
        let id = seq.read_integer(INTEGER).ok()?;
        i32::try_from(id).ok()
    };
    parse().ok_or_else(|| protocol_error("message ID parse failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subentries_values() {
        let cases: [(Option<&[u8]>, Option<bool>); 8] = [
            (Some(b"\x01\x01\xff"), Some(true)),
            (Some(b"\x01\x01\x05"), Some(true)),
            (Some(b"\x01\x01\x00"), Some(false)),
            (None, None),
            (Some(b""), None),
            (Some(b"\x04\x01\x00"), None),
            (Some(b"\x01\x02\x00\x00"), None),
            (Some(b"\x01\x01\x00\x00"), None),
        ];
        for (value, expected) in cases {
            let got = subentries(value);
            assert_eq!(got.as_ref().ok().copied(), expected, "{value:?}");
            if let Err(e) = got {
                assert_eq!(e.code, ResultCode::ProtocolError);
            }
        }
    }

    #[test]
    fn cancel_ids() {
        type Case<'a> = (Option<&'a [u8]>, Result<i32, &'a str>);
        let cases: [Case<'_>; 6] = [
            (Some(b"\x30\x03\x02\x01\x05"), Ok(5)),
            (Some(b"\x30\x03\x02\x01\x05\x00"), Ok(5)),
            (Some(b"\x30\x03\x02\x01\x00"), Ok(0)),
            (None, Err("no message ID supplied")),
            (Some(b"\x30\x00"), Err("message ID parse failed")),
            (Some(b"xx"), Err("message ID parse failed")),
        ];
        for (value, expected) in cases {
            let got = cancel_id(value).map_err(|e| e.message);
            assert_eq!(got, expected.map_err(String::from), "{value:?}");
        }
    }
}
