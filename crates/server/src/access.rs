//! The default access policy, as Debian's slapd package ships it, until configurable rules arrive.
//!
//! `userPassword` (and its subtypes) can be used to bind and be changed by its owner, but is read by no one
//! except the root DN; everything else is readable by all; apart from that only the root DN writes.

use canopy_core::LdapError;
use canopy_proto::ResultCode;
use canopy_schema::{NormDn, Schema};

/// Who is asking: the identity a connection is bound as.
#[derive(Debug, Clone, Default)]
pub struct Who {
    /// The bound DN in the form the client gave (empty for anonymous).
    pub dn: String,
    /// The normalized bound DN; None for anonymous.
    pub ndn: Option<NormDn>,
    /// Bound as the configured root DN.
    pub root: bool,
}

impl Who {
    pub fn anonymous() -> Who {
        Who::default()
    }

    /// Checks a write to `target`. `attrs` lists the attributes a modify touches; a user may change only their
    /// own password attribute. Everyone else gets insufficientAccessRights, as slapd answers.
    pub fn require_write(&self, target: &NormDn, attrs: Option<&[&str]>) -> Result<(), LdapError> {
        if self.root {
            return Ok(());
        }
        if let (Some(me), Some(attrs)) = (&self.ndn, attrs) {
            if me == target && !attrs.is_empty() && attrs.iter().all(|a| is_password_name(a)) {
                return Ok(());
            }
        }
        let what = match attrs {
            Some(_) => "modify",
            None => "write",
        };
        Err(LdapError::new(ResultCode::InsufficientAccessRights, format!("no {what} access to entry")))
    }

    /// Whether this identity may read the values of an attribute (by canonical description).
    pub fn may_read(&self, schema: &Schema, desc: &str) -> bool {
        self.root || !is_secret(schema, desc)
    }
}

fn is_password_name(desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    name.eq_ignore_ascii_case("userPassword") || name == "2.5.4.35"
}

/// Attributes only the root DN reads: userPassword and its subtypes.
pub fn is_secret(schema: &Schema, desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    match (schema.attribute_type(name), schema.attribute_type("userPassword")) {
        (Some(at), Some(pw)) => schema.is_subtype_of(at, pw),
        _ => is_password_name(name),
    }
}
