//! Who is asking, and the rule every update shares: anonymous clients do not write. The access rules
//! themselves live in `acl/`.

use canopy_core::LdapError;
use canopy_proto::ResultCode;
use canopy_schema::{NormDn, Schema};

use crate::session::Link;

/// Who is asking: the identity a connection is bound as, or the one an operation runs as under the
/// proxied authorization control (RFC 4370).
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
    /// Under proxied authorization, the normalized DN the connection itself is bound as (slapd's
    /// `c_ndn`), which the `real...` forms of access rules test; None when the operation runs as the
    /// connection's own identity (or the connection has no DN).
    pub real: Option<NormDn>,
}

impl Who {
    pub fn anonymous() -> Who {
        Who::default()
    }

    /// The DN the `real...` forms of access rules test: the connection's own under proxied
    /// authorization, otherwise this identity's (as slapd falls back to the operation's DN).
    pub fn real_ndn(&self) -> Option<&NormDn> {
        self.real.as_ref().or(self.ndn.as_ref())
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
