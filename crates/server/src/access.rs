//! Who is asking, and the rule every update shares: anonymous clients do not write. The access rules
//! themselves live in `acl/`.

use canopy_core::LdapError;
use canopy_proto::ResultCode;
use canopy_schema::{NormDn, Schema};

use crate::session::Link;

/// Who is asking: the identity a connection is bound as.
#[derive(Debug, Clone, Default)]
pub struct Who {
    /// The bound DN in the form the client gave (empty for anonymous).
    pub dn: String,
    /// The normalized bound DN; None for anonymous.
    pub ndn: Option<NormDn>,
    /// Bound as the configured root DN.
    pub root: bool,
    /// The connection this identity acts over.
    pub link: Link,
}

impl Who {
    pub fn anonymous() -> Who {
        Who::default()
    }

    /// slapd refuses every update from an anonymous client before looking at the target.
    pub fn require_authenticated(&self) -> Result<(), LdapError> {
        if self.ndn.is_none() && !self.root {
            return Err(LdapError::new(
                ResultCode::StrongerAuthRequired,
                "modifications require authentication",
            ));
        }
        Ok(())
    }
}

/// The attributes a user may change on their own entry: userPassword and the SCRAM secrets in authPassword
/// that follow it.
fn is_password_name(desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    name.eq_ignore_ascii_case("userPassword")
        || name == "2.5.4.35"
        || name.eq_ignore_ascii_case("authPassword")
        || name == canopy_core::wire::AUTH_PASSWORD_OID
}

/// authPassword (SCRAM secrets): read by the root DN only, not even by the entry itself.
pub fn is_auth_password(schema: &Schema, desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    match schema.attribute_type(name) {
        Some(at) => at.oid == canopy_core::wire::AUTH_PASSWORD_OID,
        None => name.eq_ignore_ascii_case("authPassword"),
    }
}

/// The password attributes, kept in the stored entry's own section: userPassword and its subtypes, and
/// authPassword.
pub fn is_secret(schema: &Schema, desc: &str) -> bool {
    if is_auth_password(schema, desc) {
        return true;
    }
    let name = desc.split(';').next().unwrap_or(desc);
    match (schema.attribute_type(name), schema.user_password()) {
        (Some(at), Some(pw)) => schema.is_subtype_of(at, pw),
        _ => is_password_name(name),
    }
}

/// An update whose access slapd checks before the assertion control: delete and modify DN.
#[derive(Debug, Clone)]
pub enum Action {
    Delete,
    /// A modify DN, with the new superior when it moves the entry.
    Rename(Option<NormDn>),
}
