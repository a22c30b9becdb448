//! RFC 2849 LDIF: records in and out (content and change records).

mod read;
mod write;

pub use read::LdifReader;
pub use write::{write_attrval, write_ldif_entry};

use crate::message::{Change, Control};

/// One LDIF record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LdifRecord {
    /// An entry (`dn:` followed by attribute lines), as slapcat and ldapsearch write them.
    Content {
        dn: Vec<u8>,
        attrs: Vec<(String, Vec<u8>)>,
    },
    /// A `changetype:` record, as ldapmodify reads them.
    Change {
        dn: Vec<u8>,
        controls: Vec<Control>,
        change: LdifChange,
    },
}

/// The body of a change record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LdifChange {
    Add(Vec<(String, Vec<u8>)>),
    Delete,
    Modify(Vec<Change>),
    /// `changetype: modrdn` or `moddn`.
    ModDn {
        new_rdn: Vec<u8>,
        delete_old_rdn: bool,
        new_superior: Option<Vec<u8>>,
    },
}

/// A record that could not be read; `line` is the 1-based physical line where the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct LdifError {
    pub line: usize,
    pub reason: String,
}

#[cfg(test)]
mod tests;
