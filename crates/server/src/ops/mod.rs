//! One module per LDAP operation; each turns a decoded request into the responses it sends.

pub mod add;
pub mod bind;
pub mod compare;
pub mod delete;
pub mod extended;
pub mod modify;
pub mod modify_dn;
pub mod search;

use canopy_core::LdapError;
use canopy_proto::{Control, LdapMessage, LdapResult, ProtocolOp};

/// Encodes one response message.
pub fn encode(message_id: i32, op: ProtocolOp, controls: Vec<Control>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    LdapMessage {
        message_id,
        op,
        controls,
    }
    .encode(&mut out);
    out
}

/// The LDAPResult for an operation outcome.
pub fn result_of(outcome: Result<(), LdapError>) -> LdapResult {
    match outcome {
        Ok(()) => LdapResult::success(),
        Err(e) => error_result(e),
    }
}

pub fn error_result(e: LdapError) -> LdapResult {
    let mut result = LdapResult::new(e.code, e.message);
    if let Some(matched) = e.matched_dn {
        result.matched_dn = matched.into_bytes();
    }
    result
}
