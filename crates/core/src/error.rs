//! The error an LDAP operation answers with: a result code, a short text and, where known, a matched DN.

use canopy_proto::ResultCode;

/// An operation failure that goes back to the client as an LDAPResult.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct LdapError {
    pub code: ResultCode,
    pub message: String,
    /// RFC 4511 §4.1.9 matchedDN, in its user form, for noSuchObject and alias problems.
    pub matched_dn: Option<String>,
}

impl LdapError {
    pub fn new(code: ResultCode, message: impl Into<String>) -> LdapError {
        LdapError {
            code,
            message: message.into(),
            matched_dn: None,
        }
    }

    pub fn with_matched(mut self, matched: impl Into<String>) -> LdapError {
        self.matched_dn = Some(matched.into());
        self
    }
}
