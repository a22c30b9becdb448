//! What decoding a PDU may cost and how it fails: the limits, the error (with the answer a sound
//! request carrying an undefined value still gets) and UTF-8 checks of decoded strings.

use crate::result::ResultCode;

/// Limits applied while decoding a request, so hostile input costs bounded work and stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Deepest nesting of and/or/not filters accepted; the outermost filter is depth 1.
    pub max_filter_depth: usize,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_filter_depth: 64,
        }
    }
}

/// A PDU that could not be decoded. `message_id` is set when the message ID was readable, so the
/// server can still answer that operation (or at least log it) before ending the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct DecodeError {
    pub message_id: Option<i32>,
    pub reason: String,
    /// Set when the BER is sound but a value is one the protocol leaves open (an unknown scope, modify
    /// operation or authentication choice, a negative limit): the request is answered with this code and
    /// the connection goes on, as slapd does. None means the PDU is broken and the connection must end.
    pub answer: Option<Answer>,
}

/// How to answer a well-formed request that carries an undefined value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub request: RequestKind,
    pub code: ResultCode,
}

/// The request operations that have a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Bind,
    Search,
    Modify,
    Add,
    Delete,
    ModifyDn,
    Compare,
    Extended,
}

impl DecodeError {
    pub fn new(reason: impl Into<String>) -> Self {
        DecodeError {
            message_id: None,
            reason: reason.into(),
            answer: None,
        }
    }

    /// An undefined value in otherwise sound BER; the request kind is filled in by the caller.
    pub(crate) fn undefined(code: ResultCode, reason: impl Into<String>) -> Self {
        DecodeError {
            message_id: None,
            reason: reason.into(),
            answer: Some(Answer {
                request: RequestKind::Search,
                code,
            }),
        }
    }
}

impl From<canopy_ber::BerError> for DecodeError {
    fn from(e: canopy_ber::BerError) -> Self {
        DecodeError::new(e.to_string())
    }
}

/// `bytes` as a string, or an error saying that `what` is not UTF-8.
pub(crate) fn utf8(bytes: &[u8], what: &str) -> Result<String, DecodeError> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| DecodeError::new(format!("{what} is not valid UTF-8")))
}
