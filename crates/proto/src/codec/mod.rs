//! BER encoding and decoding of LDAP messages, framing and the fast SearchResultEntry path.

mod decode;
mod encode;
mod frame;

#[cfg(test)]
mod tests;

pub use frame::{
    attach_controls, encode_partial_attribute, encode_search_result_done_raw,
    encode_search_result_entry_parts, encode_search_result_entry_raw, frame_len, FrameError,
};
