//! Directory semantics shared by the backend and the server: entries, their wire form, filters, modifications.

pub mod entry;
pub mod error;

pub use entry::{Attribute, Entry};
pub use error::LdapError;
