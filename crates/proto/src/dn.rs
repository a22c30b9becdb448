//! RFC 4514 distinguished names: parsing and string form (raw, not normalized; the schema normalizes).

/// One attribute type and value of an RDN, value unescaped (raw bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ava {
    pub attr: String,
    pub value: Vec<u8>,
}

/// RFC 4514 relativeDistinguishedName: one or more AVAs joined with `+`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rdn {
    pub avas: Vec<Ava>,
}

/// RFC 4514 distinguishedName; `rdns[0]` is the leftmost (most specific) RDN. The empty DN has no RDNs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dn {
    pub rdns: Vec<Rdn>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnError {
    #[error("invalid DN at offset {offset}: {reason}")]
    Syntax { offset: usize, reason: &'static str },
}

mod display;
mod parse;

impl Dn {
    pub fn is_empty(&self) -> bool {
        self.rdns.is_empty()
    }

    /// The DN one level up; empty for the root and for single-RDN DNs.
    pub fn parent(&self) -> Dn {
        Dn {
            rdns: self.rdns.get(1..).unwrap_or_default().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests;
