//! BER to LdapMessage. Every length is checked by the reader; nothing here indexes input bytes.

use canopy_ber::{decode_integer, tag, Reader};

use super::encode::{ctx, op_tag};
use crate::decoding::{utf8, Answer, DecodeError, DecodeLimits, RequestKind};
use crate::filter::Filter;
use crate::message::*;
use crate::result::ResultCode;

impl LdapMessage {
    /// Decodes one complete LDAPMessage; `frame` must hold exactly one message (see `frame_len`).
    pub fn decode(frame: &[u8], limits: &DecodeLimits) -> Result<LdapMessage, DecodeError> {
        let mut outer = Reader::new(frame);
        let mut msg = outer.read_constructed(tag::SEQUENCE)?;
        let id = msg.read_integer(tag::INTEGER)?;
        let message_id = i32::try_from(id)
            .ok()
            .filter(|id| *id >= 0)
            .ok_or_else(|| DecodeError::new(format!("message ID {id} out of range")))?;
        let with_id = |mut e: DecodeError| {
            e.message_id = Some(message_id);
            e
        };
        let op = decode_op(&mut msg, limits).map_err(with_id)?;
        let controls = match msg.read_optional(ctx::CONTROLS).map_err(DecodeError::from) {
            Ok(Some(contents)) => decode_controls(contents).map_err(with_id)?,
            Ok(None) => Vec::new(),
            Err(e) => return Err(with_id(e)),
        };
        if !msg.is_empty() {
            return Err(with_id(DecodeError::new("unexpected data after controls")));
        }
        if !outer.is_empty() {
            return Err(with_id(DecodeError::new(
                "trailing bytes after LDAPMessage",
            )));
        }
        Ok(LdapMessage {
            message_id,
            op,
            controls,
        })
    }
}

/// Requires that a SEQUENCE has no elements left: unknown extensions are not expected from peers.
fn finish(r: &Reader<'_>, what: &str) -> Result<(), DecodeError> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(DecodeError::new(format!(
            "unexpected data at end of {what}"
        )))
    }
}

fn decode_controls(contents: &[u8]) -> Result<Vec<Control>, DecodeError> {
    let mut r = Reader::new(contents);
    let mut controls = Vec::new();
    while !r.is_empty() {
        let mut c = r.read_constructed(tag::SEQUENCE)?;
        let oid = utf8(c.read_octet_string(tag::OCTET_STRING)?, "control type")?;
        let critical = match c.peek_tag() {
            Some(tag::BOOLEAN) => c.read_bool(tag::BOOLEAN)?,
            _ => false,
        };
        let value = c.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
        finish(&c, "control")?;
        controls.push(Control {
            oid,
            critical,
            value,
        });
    }
    Ok(controls)
}

fn decode_op(r: &mut Reader<'_>, limits: &DecodeLimits) -> Result<ProtocolOp, DecodeError> {
    use op_tag::*;
    let (op, contents) = r.read_tlv()?;
    let request = match op {
        BIND_REQUEST => Some(RequestKind::Bind),
        SEARCH_REQUEST => Some(RequestKind::Search),
        MODIFY_REQUEST => Some(RequestKind::Modify),
        ADD_REQUEST => Some(RequestKind::Add),
        DEL_REQUEST => Some(RequestKind::Delete),
        MODIFY_DN_REQUEST => Some(RequestKind::ModifyDn),
        COMPARE_REQUEST => Some(RequestKind::Compare),
        EXTENDED_REQUEST => Some(RequestKind::Extended),
        _ => None,
    };
    decode_op_contents(op, contents, limits).map_err(|mut e| {
        // Only requests can be answered; anything else stays a broken PDU.
        e.answer = match (e.answer, request) {
            (Some(answer), Some(request)) => Some(Answer { request, ..answer }),
            _ => None,
        };
        e
    })
}

fn decode_op_contents(
    op: u8,
    contents: &[u8],
    limits: &DecodeLimits,
) -> Result<ProtocolOp, DecodeError> {
    use op_tag::*;
    let mut c = Reader::new(contents);
    let decoded = match op {
        BIND_REQUEST => ProtocolOp::BindRequest(decode_bind_request(&mut c)?),
        BIND_RESPONSE => {
            let result = decode_result_fields(&mut c)?;
            let server_sasl_creds = c.read_optional(ctx::SERVER_SASL_CREDS)?.map(<[u8]>::to_vec);
            ProtocolOp::BindResponse(BindResponse {
                result,
                server_sasl_creds,
            })
        }
        UNBIND_REQUEST => {
            if !contents.is_empty() {
                return Err(DecodeError::new("UnbindRequest must be empty"));
            }
            ProtocolOp::UnbindRequest
        }
        SEARCH_REQUEST => ProtocolOp::SearchRequest(decode_search_request(&mut c, limits)?),
        SEARCH_RESULT_ENTRY => {
            let dn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            let attributes = decode_attribute_list(&mut c)?;
            ProtocolOp::SearchResultEntry(SearchResultEntry { dn, attributes })
        }
        SEARCH_RESULT_DONE => ProtocolOp::SearchResultDone(decode_result_fields(&mut c)?),
        SEARCH_RESULT_REFERENCE => {
            let mut uris = Vec::new();
            while !c.is_empty() {
                uris.push(lossy(c.read_octet_string(tag::OCTET_STRING)?));
            }
            ProtocolOp::SearchResultReference(uris)
        }
        MODIFY_REQUEST => ProtocolOp::ModifyRequest(decode_modify_request(&mut c)?),
        MODIFY_RESPONSE => ProtocolOp::ModifyResponse(decode_result_fields(&mut c)?),
        ADD_REQUEST => {
            let dn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            let attributes = decode_attribute_list(&mut c)?;
            ProtocolOp::AddRequest(AddRequest { dn, attributes })
        }
        ADD_RESPONSE => ProtocolOp::AddResponse(decode_result_fields(&mut c)?),
        DEL_REQUEST => ProtocolOp::DelRequest(contents.to_vec()),
        DEL_RESPONSE => ProtocolOp::DelResponse(decode_result_fields(&mut c)?),
        MODIFY_DN_REQUEST => {
            let dn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            let new_rdn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            let delete_old_rdn = c.read_bool(tag::BOOLEAN)?;
            let new_superior = c.read_optional(ctx::NEW_SUPERIOR)?.map(<[u8]>::to_vec);
            ProtocolOp::ModifyDnRequest(ModifyDnRequest {
                dn,
                new_rdn,
                delete_old_rdn,
                new_superior,
            })
        }
        MODIFY_DN_RESPONSE => ProtocolOp::ModifyDnResponse(decode_result_fields(&mut c)?),
        COMPARE_REQUEST => {
            let dn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
            let mut ava = c.read_constructed(tag::SEQUENCE)?;
            let attr = utf8(
                ava.read_octet_string(tag::OCTET_STRING)?,
                "attribute description",
            )?;
            let value = ava.read_octet_string(tag::OCTET_STRING)?.to_vec();
            finish(&ava, "AttributeValueAssertion")?;
            ProtocolOp::CompareRequest(CompareRequest { dn, attr, value })
        }
        COMPARE_RESPONSE => ProtocolOp::CompareResponse(decode_result_fields(&mut c)?),
        ABANDON_REQUEST => {
            let id = decode_integer(contents)?;
            let id = i32::try_from(id)
                .ok()
                .filter(|id| *id >= 0)
                .ok_or_else(|| DecodeError::new("abandoned message ID out of range"))?;
            ProtocolOp::AbandonRequest(id)
        }
        EXTENDED_REQUEST => {
            let name = utf8(c.read_octet_string(ctx::EXOP_REQUEST_NAME)?, "requestName")?;
            let value = c
                .read_optional(ctx::EXOP_REQUEST_VALUE)?
                .map(<[u8]>::to_vec);
            ProtocolOp::ExtendedRequest(ExtendedRequest { name, value })
        }
        EXTENDED_RESPONSE => {
            let result = decode_result_fields(&mut c)?;
            let name = match c.read_optional(ctx::EXOP_RESPONSE_NAME)? {
                Some(name) => Some(utf8(name, "responseName")?),
                None => None,
            };
            let value = c
                .read_optional(ctx::EXOP_RESPONSE_VALUE)?
                .map(<[u8]>::to_vec);
            ProtocolOp::ExtendedResponse(ExtendedResponse {
                result,
                name,
                value,
            })
        }
        INTERMEDIATE_RESPONSE => {
            let name = match c.read_optional(ctx::INTERMEDIATE_NAME)? {
                Some(name) => Some(utf8(name, "responseName")?),
                None => None,
            };
            let value = c
                .read_optional(ctx::INTERMEDIATE_VALUE)?
                .map(<[u8]>::to_vec);
            ProtocolOp::IntermediateResponse(IntermediateResponse { name, value })
        }
        other => {
            return Err(DecodeError::new(format!(
                "unknown protocolOp tag 0x{other:02x}"
            )))
        }
    };
    if op & tag::CONSTRUCTED != 0 {
        finish(&c, "protocolOp")?;
    }
    Ok(decoded)
}

/// Text from a peer that is only shown to people: a bad byte must not lose the whole response.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn decode_bind_request(c: &mut Reader<'_>) -> Result<BindRequest, DecodeError> {
    let version = c.read_integer(tag::INTEGER)?;
    let version =
        i32::try_from(version).map_err(|_| DecodeError::new("bind version out of range"))?;
    let name = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
    let auth = match c.read_tlv()? {
        (ctx::AUTH_SIMPLE, password) => BindAuth::Simple(password.to_vec()),
        (ctx::AUTH_SASL, contents) => {
            let mut s = Reader::new(contents);
            let mechanism = utf8(s.read_octet_string(tag::OCTET_STRING)?, "SASL mechanism")?;
            let credentials = s.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
            finish(&s, "SaslCredentials")?;
            BindAuth::Sasl {
                mechanism,
                credentials,
            }
        }
        (other, _) => {
            return Err(DecodeError::undefined(
                ResultCode::AuthMethodNotSupported,
                format!("unsupported authentication choice 0x{other:02x}"),
            ))
        }
    };
    Ok(BindRequest {
        version,
        name,
        auth,
    })
}

fn decode_search_request(
    c: &mut Reader<'_>,
    limits: &DecodeLimits,
) -> Result<SearchRequest, DecodeError> {
    let base = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
    let scope = match c.read_integer(tag::ENUMERATED)? {
        0 => SearchScope::BaseObject,
        1 => SearchScope::SingleLevel,
        2 => SearchScope::WholeSubtree,
        3 => SearchScope::SubordinateSubtree,
        other => {
            return Err(DecodeError::undefined(
                ResultCode::ProtocolError,
                format!("unknown search scope {other}"),
            ))
        }
    };
    let deref = match c.read_integer(tag::ENUMERATED)? {
        0 => DerefAliases::Never,
        1 => DerefAliases::InSearching,
        2 => DerefAliases::FindingBaseObj,
        3 => DerefAliases::Always,
        other => {
            return Err(DecodeError::undefined(
                ResultCode::ProtocolError,
                format!("unknown derefAliases {other}"),
            ))
        }
    };
    let size_limit = non_negative(c.read_integer(tag::INTEGER)?, "sizeLimit")?;
    let time_limit = non_negative(c.read_integer(tag::INTEGER)?, "timeLimit")?;
    let types_only = c.read_bool(tag::BOOLEAN)?;
    let filter = Filter::decode_ber(c, limits)?;
    let mut list = c.read_constructed(tag::SEQUENCE)?;
    let mut attributes = Vec::new();
    while !list.is_empty() {
        attributes.push(utf8(
            list.read_octet_string(tag::OCTET_STRING)?,
            "attribute selector",
        )?);
    }
    Ok(SearchRequest {
        base,
        scope,
        deref,
        size_limit,
        time_limit,
        types_only,
        filter,
        attributes,
    })
}

fn non_negative(value: i64, what: &str) -> Result<i32, DecodeError> {
    i32::try_from(value)
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| {
            DecodeError::undefined(
                ResultCode::ProtocolError,
                format!("{what} {value} out of range"),
            )
        })
}

fn decode_modify_request(c: &mut Reader<'_>) -> Result<ModifyRequest, DecodeError> {
    let dn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
    let mut list = c.read_constructed(tag::SEQUENCE)?;
    let mut changes = Vec::new();
    while !list.is_empty() {
        let mut change = list.read_constructed(tag::SEQUENCE)?;
        let operation = match change.read_integer(tag::ENUMERATED)? {
            0 => ModifyOperation::Add,
            1 => ModifyOperation::Delete,
            2 => ModifyOperation::Replace,
            3 => ModifyOperation::Increment,
            other => {
                return Err(DecodeError::undefined(
                    ResultCode::ProtocolError,
                    format!("unknown modify operation {other}"),
                ))
            }
        };
        let modification = decode_attribute(&mut change)?;
        finish(&change, "change")?;
        changes.push(Change {
            operation,
            modification,
        });
    }
    Ok(ModifyRequest { dn, changes })
}

fn decode_attribute_list(c: &mut Reader<'_>) -> Result<Vec<PartialAttribute>, DecodeError> {
    let mut list = c.read_constructed(tag::SEQUENCE)?;
    let mut attributes = Vec::new();
    while !list.is_empty() {
        attributes.push(decode_attribute(&mut list)?);
    }
    Ok(attributes)
}

fn decode_attribute(r: &mut Reader<'_>) -> Result<PartialAttribute, DecodeError> {
    let mut seq = r.read_constructed(tag::SEQUENCE)?;
    let name = utf8(
        seq.read_octet_string(tag::OCTET_STRING)?,
        "attribute description",
    )?;
    let mut set = seq.read_constructed(tag::SET)?;
    finish(&seq, "PartialAttribute")?;
    let mut values = Vec::new();
    while !set.is_empty() {
        values.push(set.read_octet_string(tag::OCTET_STRING)?.to_vec());
    }
    Ok(PartialAttribute { name, values })
}

fn decode_result_fields(c: &mut Reader<'_>) -> Result<LdapResult, DecodeError> {
    let code = c.read_integer(tag::ENUMERATED)?;
    let code = u32::try_from(code)
        .map_err(|_| DecodeError::new(format!("result code {code} out of range")))?;
    let matched_dn = c.read_octet_string(tag::OCTET_STRING)?.to_vec();
    let message = lossy(c.read_octet_string(tag::OCTET_STRING)?);
    let mut referral = Vec::new();
    if let Some(contents) = c.read_optional(ctx::REFERRAL)? {
        let mut uris = Reader::new(contents);
        while !uris.is_empty() {
            referral.push(lossy(uris.read_octet_string(tag::OCTET_STRING)?));
        }
    }
    Ok(LdapResult {
        code: ResultCode::from_code(code),
        matched_dn,
        message,
        referral,
    })
}
