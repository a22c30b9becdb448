//! LDAPv3 protocol types (RFC 4511), filters (RFC 4515), DNs (RFC 4514) and LDIF (RFC 2849).
//!
//! Owns: LDAP's messages, controls, filters, DNs and LDIF as bytes and values. Must never: know the
//! schema, the store, or a connection (no I/O, no async runtime).

pub mod codec;
pub mod control;
pub mod decoding;
pub mod dn;
pub mod exop;
pub mod filter;
pub mod ldif;
pub mod message;
pub mod oid;
pub mod ppolicy;
pub mod result;
pub mod sort;
pub mod sync;
pub mod txn;
pub mod url;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

pub use codec::{
    attach_controls, encode_partial_attribute, encode_search_result_done_raw,
    encode_search_result_entry_parts, encode_search_result_entry_raw, frame_len, FrameError,
};
pub use control::{
    decode_assertion, decode_values_return, encode_assertion, encode_read_entry_response,
    encode_values_return, PagedResults, ReadEntryRequest,
};
pub use decoding::{Answer, DecodeError, DecodeLimits, RequestKind};
pub use dn::{Ava, Dn, DnError, Rdn};
pub use exop::{encode_passwd_modify_response, PasswdModifyRequest};
pub use filter::{Filter, FilterError, MatchingRuleAssertion, SubstringFilter};
pub use ldif::{write_ldif_entry, LdifChange, LdifError, LdifReader, LdifRecord};
pub use message::*;
pub use result::ResultCode;
