//! Directory semantics shared by the backend and the server: entries, their wire form, filters, modifications.
//!
//! Owns: what an entry is and how it is checked, filtered, modified, stored on the wire and indexed. Must
//! never: open a transaction, decide access, or do I/O (no async runtime).

pub mod check;
pub mod classes;
pub mod desc;
pub mod entry;
pub mod error;
pub mod filter;
pub mod index;
pub mod modify;
pub mod sets;
pub mod wire;

pub use entry::{Attribute, Entry};
pub use error::LdapError;
