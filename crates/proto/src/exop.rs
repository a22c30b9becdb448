//! Values of the extended operations Canopy implements.

use canopy_ber::{tag, Reader, Writer};

use crate::decoding::DecodeError;

const USER_IDENTITY: u8 = 0x80;
const OLD_PASSWD: u8 = 0x81;
const NEW_PASSWD: u8 = 0x82;
const GEN_PASSWD: u8 = 0x80;

/// RFC 3062 PasswdModifyRequestValue. An absent request value decodes as all fields None.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PasswdModifyRequest {
    pub user_identity: Option<Vec<u8>>,
    pub old_passwd: Option<Vec<u8>>,
    pub new_passwd: Option<Vec<u8>>,
}

impl PasswdModifyRequest {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let user_identity = seq.read_optional(USER_IDENTITY)?.map(<[u8]>::to_vec);
        let old_passwd = seq.read_optional(OLD_PASSWD)?.map(<[u8]>::to_vec);
        let new_passwd = seq.read_optional(NEW_PASSWD)?.map(<[u8]>::to_vec);
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new(
                "unexpected data in password modify request",
            ));
        }
        Ok(PasswdModifyRequest {
            user_identity,
            old_passwd,
            new_passwd,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            let fields = [
                (USER_IDENTITY, &self.user_identity),
                (OLD_PASSWD, &self.old_passwd),
                (NEW_PASSWD, &self.new_passwd),
            ];
            for (field_tag, value) in fields {
                if let Some(value) = value {
                    w.octet_string(field_tag, value);
                }
            }
        });
        out
    }
}

/// RFC 3062 PasswdModifyResponseValue carrying a server-generated password.
pub fn encode_passwd_modify_response(gen_passwd: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(gen_passwd.len() + 8);
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| w.octet_string(GEN_PASSWD, gen_passwd));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{hex, unhex};

    #[test]
    fn passwd_modify_request_vectors() {
        let some = |s: &str| Some(s.as_bytes().to_vec());
        let cases = [
            (PasswdModifyRequest::default(), "30 00"),
            (
                PasswdModifyRequest {
                    user_identity: some("u"),
                    old_passwd: None,
                    new_passwd: some("n"),
                },
                "30 06 80 01 75 82 01 6e",
            ),
            (
                PasswdModifyRequest {
                    user_identity: None,
                    old_passwd: some("o"),
                    new_passwd: None,
                },
                "30 03 81 01 6f",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(hex(&value.encode()), expected);
            assert_eq!(
                PasswdModifyRequest::decode(&unhex(expected)).unwrap(),
                value
            );
        }
        // Fields out of order or unknown are refused.
        for bad in ["30 06 82 01 6e 80 01 75", "30 03 83 01 00", "", "31 00"] {
            assert!(PasswdModifyRequest::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwd_modify_response() {
        assert_eq!(
            hex(&encode_passwd_modify_response(b"pw")),
            "30 04 80 02 70 77"
        );
    }
}
