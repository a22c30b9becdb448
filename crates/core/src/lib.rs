//! Directory semantics shared by the backend and the server: entries, their wire form, filters, modifications.

pub mod check;
pub mod desc;
pub mod entry;
pub mod error;
pub mod filter;
pub mod index;
pub mod modify;
pub mod wire;

pub use entry::{Attribute, Entry};
pub use error::LdapError;
