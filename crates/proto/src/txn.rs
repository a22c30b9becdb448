//! RFC 5805 transactions: the End Transaction request value and the response value naming the
//! update that failed.

use canopy_ber::{tag, Reader, Writer};

use crate::decoding::DecodeError;
use crate::ResultCode;

/// OpenLDAP's result code for an unknown transaction identifier (LDAP_X_TXN_ID_INVALID).
pub const TXN_ID_INVALID: ResultCode = ResultCode::Unknown(0x4121);

/// RFC 5805 §2.3 txnEndReq: commit (default TRUE) or abort the transaction `identifier`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnEndRequest {
    pub commit: bool,
    pub identifier: Vec<u8>,
}

impl TxnEndRequest {
    pub fn decode(value: &[u8]) -> Result<TxnEndRequest, DecodeError> {
        let mut outer = Reader::new(value);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let commit = match seq.peek_tag() {
            Some(tag::BOOLEAN) => seq.read_bool(tag::BOOLEAN)?,
            _ => true,
        };
        let identifier = seq.read_octet_string(tag::OCTET_STRING)?.to_vec();
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new(
                "unexpected data in end transaction request",
            ));
        }
        Ok(TxnEndRequest { commit, identifier })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            if !self.commit {
                w.boolean(tag::BOOLEAN, false);
            }
            w.octet_string(tag::OCTET_STRING, &self.identifier);
        });
        out
    }
}

/// RFC 5805 §2.3 txnEndRes naming the message ID of the update that failed (no update controls).
pub fn encode_txn_end_failed(message_id: i32) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
        w.integer(tag::INTEGER, i64::from(message_id))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{hex, unhex};

    #[test]
    fn end_request_vectors() {
        let cases = [
            ("30 02 04 00", true, ""),
            ("30 05 01 01 ff 04 00", true, ""),
            ("30 05 01 01 00 04 00", false, ""),
            ("30 06 01 01 00 04 01 78", false, "x"),
        ];
        for (bytes, commit, id) in cases {
            let request = TxnEndRequest::decode(&unhex(bytes)).unwrap();
            assert_eq!(request.commit, commit, "{bytes}");
            assert_eq!(request.identifier, id.as_bytes(), "{bytes}");
        }
        let abort = TxnEndRequest {
            commit: false,
            identifier: Vec::new(),
        };
        assert_eq!(hex(&abort.encode()), "30 05 01 01 00 04 00");
        for bad in [
            "",
            "01 02",
            "30 00",
            "30 03 01 01 ff",
            "30 02 04 00 00",
            "30 04 04 00 04 00",
        ] {
            assert!(TxnEndRequest::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn end_response_names_the_failed_update() {
        assert_eq!(hex(&encode_txn_end_failed(5)), "30 03 02 01 05");
        assert_eq!(hex(&encode_txn_end_failed(300)), "30 04 02 02 01 2c");
    }
}
