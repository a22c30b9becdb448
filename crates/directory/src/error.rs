//! What a database operation fails with (an error, or a referral elsewhere), and the one mapping of
//! storage errors to LDAP result codes.

use canopy_core::LdapError;
use canopy_mdb::StoreError;
use canopy_proto::{LdapResult, ResultCode};

/// Why an operation did not succeed: an error, or a referral elsewhere (RFC 4511 §4.1.10).
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error(transparent)]
    Ldap(#[from] LdapError),
    #[error("referral to {}", .0.urls.join(" "))]
    Referral(Referral),
}

impl OpError {
    /// As a plain error, for callers that write internally and cannot send a referral on: a referral
    /// becomes its result code with the referral object's DN as matched DN.
    pub fn into_ldap(self) -> LdapError {
        match self {
            OpError::Ldap(e) => e,
            OpError::Referral(r) => {
                LdapError::new(ResultCode::Referral, r.urls.join(" ")).with_matched(r.matched)
            }
        }
    }

    /// The result code the client gets.
    pub fn code(&self) -> ResultCode {
        match self {
            OpError::Ldap(e) => e.code,
            OpError::Referral(_) => ResultCode::Referral,
        }
    }
}

impl From<Referral> for OpError {
    fn from(r: Referral) -> OpError {
        OpError::Referral(r)
    }
}

/// A referral answer: the referral object's DN and its adjusted URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Referral {
    pub matched: String,
    pub urls: Vec<String>,
}

impl Referral {
    pub fn into_result(self) -> LdapResult {
        let mut result = LdapResult::new(ResultCode::Referral, "");
        result.matched_dn = self.matched.into_bytes();
        result.referral = self.urls;
        result
    }
}

/// Maps a storage failure to what the client sees; the detail goes to the log. Every variant is named,
/// so a new one cannot silently become `other`.
pub fn store_error(error: StoreError) -> LdapError {
    let (code, text) = match &error {
        // Index keys are bounded by construction; only a DN can be too long to be a key.
        StoreError::KeyTooLong { .. } => {
            return LdapError::new(ResultCode::AdminLimitExceeded, "DN too long")
        }
        // The writer retries a full map after growing it; one that stays full is the server's limit.
        StoreError::MapFull => (ResultCode::Busy, "the database is full; try again"),
        // The server is shutting down, as slapd answers then.
        StoreError::WriterGone => (ResultCode::Unavailable, "the database writer stopped"),
        StoreError::BulkLoadActive => (ResultCode::Busy, "an offline load is running"),
        // Only an index addition meets it, and it reports its own error.
        StoreError::TooManyIndexes { .. } => (ResultCode::UnwillingToPerform, "too many indexes"),
        StoreError::EmptyKey
        | StoreError::ReservedMetaKey(_)
        | StoreError::Corrupt { .. }
        | StoreError::UnsupportedFormat { .. }
        | StoreError::AlreadyOpen
        | StoreError::WouldDeadlock
        | StoreError::Panicked
        | StoreError::IdNotAscending { .. }
        | StoreError::UnknownIndex(_)
        | StoreError::InvalidIndexName(_)
        | StoreError::Lmdb(_)
        | StoreError::Io(_) => (ResultCode::Other, "internal storage error"),
    };
    tracing::error!(%error, "storage error");
    LdapError::new(code, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_map_to_result_codes() {
        let cases = [
            (
                StoreError::KeyTooLong { len: 600, max: 511 },
                ResultCode::AdminLimitExceeded,
            ),
            (StoreError::MapFull, ResultCode::Busy),
            (StoreError::WriterGone, ResultCode::Unavailable),
            (StoreError::Panicked, ResultCode::Other),
            (StoreError::BulkLoadActive, ResultCode::Busy),
            (StoreError::EmptyKey, ResultCode::Other),
            (
                StoreError::Corrupt {
                    table: "id2entry",
                    detail: "x".into(),
                },
                ResultCode::Other,
            ),
        ];
        for (error, code) in cases {
            let text = error.to_string();
            assert_eq!(store_error(error).code, code, "{text}");
        }
    }
}
