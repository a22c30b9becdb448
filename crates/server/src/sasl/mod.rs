//! SASL binds (RFC 4422, RFC 4513 §5.2.1): PLAIN, SCRAM-SHA-256/512 with stored secrets, GSSAPI with a
//! keytab and its security layers, name mapping, proxy authorization checks. EXTERNAL stays in `ops/bind.rs`; the rules are `crate::authz`'s, the
//! failed-bind back-off `crate::backoff`'s.

mod gss_ffi;
pub mod gssapi;
pub mod layer;
pub mod mapping;
pub mod proxy;
pub mod scram;
pub mod store;

use canopy_core::LdapError;
use canopy_password::scram::{ScramHash, ScramSecret};
use canopy_proto::ResultCode;
use canopy_schema::NormDn;

/// The mechanisms the root DSE lists; each of them works.
pub const MECHANISMS: [&str; 4] = ["EXTERNAL", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// The mechanisms offered under `sasl`: GSSAPI too when a keytab is configured.
pub fn mechanisms(sasl: &crate::config::Sasl) -> Vec<String> {
    let gssapi = gssapi::Settings::of(sasl).map(|_| "GSSAPI");
    MECHANISMS
        .iter()
        .copied()
        .chain(gssapi)
        .map(String::from)
        .collect()
}

/// A multi-step exchange waiting for the client's next BindRequest, kept per connection.
#[derive(Debug)]
pub enum Exchange {
    /// PLAIN started without an initial response: the client's response comes next.
    PlainStart,
    /// SCRAM started without an initial response: the client's first message comes next.
    ScramStart(ScramHash),
    Scram(Box<scram::Waiting>),
    /// A GSSAPI exchange after its first step (None: started without an initial token).
    Gssapi(Option<gssapi::Waiting>),
}

impl Exchange {
    /// The mechanism this exchange runs.
    pub fn mechanism(&self) -> &'static str {
        match self {
            Exchange::PlainStart => "PLAIN",
            Exchange::ScramStart(hash) => hash.mechanism(),
            Exchange::Scram(w) => w.hash.mechanism(),
            Exchange::Gssapi(_) => "GSSAPI",
        }
    }
}

/// RFC 4616 message: `[authzid] NUL authcid NUL passwd`.
pub fn parse_plain(message: &[u8]) -> Result<(Option<String>, String, Vec<u8>), LdapError> {
    let bad = || {
        LdapError::new(
            ResultCode::InvalidCredentials,
            "SASL(-13): malformed PLAIN message",
        )
    };
    // A message without its two separators is a protocol failure of the mechanism (slapd: other);
    // one with an empty name or password fails like a wrong password.
    let unparsable = || LdapError::new(ResultCode::Other, "SASL(-1): malformed PLAIN message");
    let mut parts = message.splitn(3, |b| *b == 0);
    let authz = parts.next().ok_or_else(unparsable)?;
    let authc = parts.next().ok_or_else(unparsable)?;
    let password = parts.next().ok_or_else(unparsable)?;
    if authc.is_empty() || password.is_empty() || password.contains(&0) {
        return Err(bad());
    }
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| bad());
    let authz = if authz.is_empty() {
        None
    } else {
        Some(text(authz)?)
    };
    Ok((authz, text(authc)?, password.to_vec()))
}

/// The SCRAM secret of `hash` among an entry's authPassword values, if it has one.
pub fn scram_secret(values: &[Vec<u8>], hash: ScramHash) -> Option<ScramSecret> {
    values
        .iter()
        .filter_map(|v| match ScramSecret::parse(v) {
            Ok(secret) => secret,
            Err(error) => {
                tracing::warn!(%error, "unusable authPassword value");
                None
            }
        })
        .find(|s| s.hash == hash)
}

/// The authPassword values for a new cleartext password: one secret per SCRAM hash.
pub fn scram_values(password: &[u8], iterations: u32) -> Vec<Vec<u8>> {
    ScramHash::ALL
        .into_iter()
        .map(|hash| {
            ScramSecret::derive(hash, password, iterations)
                .encode()
                .into_bytes()
        })
        .collect()
}

/// The refusal of an authorization identity the rules do not allow (slapd's text).
pub fn authz_failure() -> LdapError {
    LdapError::new(
        ResultCode::InsufficientAccessRights,
        "SASL(-14): authorization failure",
    )
}

/// Whether `authc` may act as `authz` (the same identity always may): [`proxy::authorizes`].
pub fn may_authorize(
    state: &crate::state::State,
    authc: &crate::access::Who,
    authz: &NormDn,
) -> bool {
    proxy::authorizes(state, authc, authz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gssapi_is_offered_only_with_a_keytab() {
        let mut sasl = crate::config::Sasl::default();
        assert!(!mechanisms(&sasl).iter().any(|m| m == "GSSAPI"));
        sasl.keytab = Some("/etc/ldap.keytab".into());
        assert!(mechanisms(&sasl).iter().any(|m| m == "GSSAPI"));
    }

    #[test]
    fn plain_messages() {
        assert_eq!(
            parse_plain(b"\0alice\0secret").unwrap(),
            (None, "alice".into(), b"secret".to_vec())
        );
        assert_eq!(
            parse_plain(b"u:bob\0alice\0secret").unwrap().0.as_deref(),
            Some("u:bob")
        );
        for bad in [
            &b""[..],
            b"alice",
            b"\0alice",
            b"\0\0pw",
            b"\0alice\0",
            b"\0alice\0p\0w",
        ] {
            assert!(parse_plain(bad).is_err(), "{bad:?}");
        }
    }
}
