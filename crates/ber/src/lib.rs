//! Zero-copy BER TLV reader and writer for the subset of BER that LDAP uses (RFC 4511 §5.1).
//!
//! Only single-byte tags and definite lengths exist in LDAP, so the reader rejects everything else.
//! The read path never allocates; the writer appends to a caller's `Vec<u8>` and backpatches lengths.
//!
//! Owns: BER TLVs and nothing else. Must never: know an LDAP type, allocate on the read path, do I/O.

mod reader;
mod writer;

pub use reader::{decode_integer, parse_header, Header, Reader};
pub use writer::{encoded_len, header_len, integer_len, write_header, Headers, Writer};

/// Universal tags used by LDAP.
pub mod tag {
    pub const BOOLEAN: u8 = 0x01;
    pub const INTEGER: u8 = 0x02;
    pub const OCTET_STRING: u8 = 0x04;
    pub const NULL: u8 = 0x05;
    pub const ENUMERATED: u8 = 0x0a;
    pub const SEQUENCE: u8 = 0x30;
    pub const SET: u8 = 0x31;
    /// Bit set in a tag octet when the encoding is constructed.
    pub const CONSTRUCTED: u8 = 0x20;
}

/// Why a BER encoding could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BerError {
    #[error("unexpected end of data")]
    UnexpectedEnd,
    #[error("length {len} exceeds the {remaining} bytes remaining")]
    LengthOverrun { len: usize, remaining: usize },
    #[error("indefinite length is not allowed")]
    IndefiniteLength,
    #[error("length uses more than 4 octets")]
    LengthTooLong,
    #[error("multi-byte tags are not used by LDAP")]
    MultiByteTag,
    #[error("expected tag 0x{expected:02x}, found 0x{found:02x}")]
    UnexpectedTag { expected: u8, found: u8 },
    #[error("integer of {0} octets is empty or too large")]
    BadInteger(usize),
    #[error("boolean must be one octet, found {0}")]
    BadBoolean(usize),
}
