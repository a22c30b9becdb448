//! BER encoding and decoding of LDAP messages, framing and the fast SearchResultEntry path.

mod decode;
pub(crate) use decode::utf8;
mod encode;
mod frame;

#[cfg(test)]
pub(crate) mod tests;

pub use frame::{encode_partial_attribute, encode_search_result_entry_raw, frame_len, FrameError};

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
}

impl DecodeError {
    pub fn new(reason: impl Into<String>) -> Self {
        DecodeError {
            message_id: None,
            reason: reason.into(),
        }
    }
}

impl From<canopy_ber::BerError> for DecodeError {
    fn from(e: canopy_ber::BerError) -> Self {
        DecodeError::new(e.to_string())
    }
}
