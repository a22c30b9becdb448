//! The default access policy, as Debian's slapd package ships it, until configurable rules arrive.
//!
//! `userPassword` (and its subtypes) can be used to bind and be changed by its owner, but is read by no one
//! except the root DN; everything else is readable by all; apart from that only the root DN writes.

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

    /// Checks a write to `target`. `attrs` lists the attributes a modify touches; a user may change only their
    /// own password attribute. Everyone else gets insufficientAccessRights, as slapd answers.
    pub fn require_write(&self, target: &NormDn, action: Action<'_>) -> Result<(), LdapError> {
        self.require_authenticated()?;
        if self.root {
            return Ok(());
        }
        if let (Some(me), Action::Modify(attrs)) = (&self.ndn, action) {
            if me == target && !attrs.is_empty() && attrs.iter().all(|a| is_password_name(a)) {
                return Ok(());
            }
        }
        let text = match action {
            Action::Add | Action::Rename => "no write access to parent's children",
            Action::Delete => "no write access to parent",
            Action::Modify(_) => "no write access to entry",
        };
        Err(LdapError::new(ResultCode::InsufficientAccessRights, text))
    }

    /// Whether this identity may read the secret attributes (userPassword) of `target`: the root DN, and
    /// the entry itself (`by self write` implies read).
    pub fn may_read_secrets(&self, target: &NormDn) -> bool {
        self.root || self.ndn.as_ref() == Some(target)
    }

    /// Whether this identity may read the values of an attribute (by canonical description) of `target`.
    pub fn may_read(&self, schema: &Schema, desc: &str, target: &NormDn) -> bool {
        if is_auth_password(schema, desc) {
            return self.root;
        }
        self.may_read_secrets(target) || !is_secret(schema, desc)
    }
}

/// The kind of write being checked.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    Add,
    Delete,
    Rename,
    /// A modify, with the attribute descriptions it touches.
    Modify(&'a [&'a str]),
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

/// Attributes only the root DN reads: userPassword and its subtypes, and authPassword.
pub fn is_secret(schema: &Schema, desc: &str) -> bool {
    if is_auth_password(schema, desc) {
        return true;
    }
    let name = desc.split(';').next().unwrap_or(desc);
    match (
        schema.attribute_type(name),
        schema.attribute_type("userPassword"),
    ) {
        (Some(at), Some(pw)) => schema.is_subtype_of(at, pw),
        _ => is_password_name(name),
    }
}
