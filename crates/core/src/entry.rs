//! An entry in memory: its DN (as given and normalized) and its attributes with their values.

use canopy_proto::Dn;
use canopy_schema::NormDn;

/// One attribute of an entry. `desc` is the schema's canonical name for the type (the first NAME of its
/// definition, in the schema's case) followed by any options in lower case, e.g. `cn` or `cn;lang-en`.
/// Values are kept exactly as the client gave them; matching normalizes on the fly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub desc: String,
    pub values: Vec<Vec<u8>>,
}

/// An entry with user and operational attributes together. Computed attributes (hasSubordinates,
/// entryDN, subschemaSubentry) are never stored here; the server adds them when it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub dn: Dn,
    pub ndn: NormDn,
    pub attrs: Vec<Attribute>,
}

impl Entry {
    /// The attribute whose description equals `desc` (ASCII case-insensitive), options included.
    pub fn get(&self, desc: &str) -> Option<&Attribute> {
        self.attrs
            .iter()
            .find(|a| a.desc.eq_ignore_ascii_case(desc))
    }

    pub fn get_mut(&mut self, desc: &str) -> Option<&mut Attribute> {
        self.attrs
            .iter_mut()
            .find(|a| a.desc.eq_ignore_ascii_case(desc))
    }
}
