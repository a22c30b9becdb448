//! Password schemes of userPassword values, compatible with OpenLDAP 2.5 and `slappasswd`.
//!
//! Owns: hashing and verifying secrets (and SCRAM). Must never: know entries, the store or a connection.
//!
//! A stored value is `{SCHEME}payload`; a value without a prefix is a cleartext password.
//! Scheme names match case-insensitively. Formats (all observed from Debian's slappasswd 2.5):
//!
//! | scheme | payload |
//! | --- | --- |
//! | `{SHA}` `{SHA256}` `{SHA384}` `{SHA512}` `{MD5}` | base64(digest(password)) |
//! | `{SSHA}` `{SSHA256}` `{SSHA384}` `{SSHA512}` `{SMD5}` | base64(digest(password + salt) + salt); any salt length on input, 8 bytes on output |
//! | `{CRYPT}` | crypt(3): `$6$[rounds=N$]salt$hash` and `$5$...` (SHA-crypt), `$1$salt$hash` (md5-crypt), DES/bigcrypt; we write `$6$` with a 16-character salt and 5000 rounds |
//! | `{ARGON2}` | PHC string `$argon2id$v=19$m=..,t=..,p=..$salt$hash` (also `$argon2i$`, `$argon2d$`); we write argon2id, by default m=19456 KiB, t=2, p=1 (OWASP) |
//! | `{PBKDF2-SHA1}` (alias `{PBKDF2}`) `{PBKDF2-SHA256}` `{PBKDF2-SHA512}` | pw-pbkdf2's `iterations$salt$hash`, "adapted base64" (`.` for `+`, no padding); we write 10000 iterations and a 16-byte salt |
//! | `{CLEARTEXT}` | the password |
//!
//! `{CRYPT}` also verifies traditional DES (13 characters) and bigcrypt (13 + 11n), which Debian's
//! slappasswd writes by default. Not supported, reported as [`PasswordError::UnknownScheme`]:
//! bcrypt, yescrypt, BSDi DES and other crypt(3) methods, and schemes such as `{SASL}` or
//! `{K5KEY}` that delegate to outside services.
//!
//! Digests are compared in constant time. Stored values whose cost parameters exceed the `MAX_*`
//! constants are refused as malformed, because users may often write their own userPassword.

mod argon;
mod crypt;
mod crypt_alphabet;
mod des_crypt;
mod digest;
mod md5_crypt;
pub mod otp;
mod pbkdf;
mod scheme;
pub mod scram;
#[cfg(test)]
mod tests;

use rand::distr::Alphanumeric;
use rand::{Rng, RngCore};
use subtle::ConstantTimeEq;

pub use argon::{
    Argon2Params, ARGON2_ITERATIONS, ARGON2_MEMORY_KIB, ARGON2_PARALLELISM, MAX_ARGON2_ITERATIONS,
    MAX_ARGON2_MEMORY_KIB, MAX_ARGON2_PARALLELISM,
};
pub use crypt::MAX_CRYPT_ROUNDS;
pub use pbkdf::{MAX_PBKDF2_ITERATIONS, PBKDF2_ITERATIONS};
pub use scheme::Scheme;

use scheme::{split_prefix, Prefix};

/// Why a stored value could not be checked or a password could not be hashed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// The value names a scheme (or crypt(3) method) this crate does not implement.
    #[error("unknown password scheme {0}")]
    UnknownScheme(String),
    /// The value names a known scheme but its payload does not parse.
    #[error("malformed password value: {0}")]
    Malformed(&'static str),
    /// The hash function itself failed.
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// Length of [`generate_password`]'s output: 16 letters and digits, about 95 bits.
pub const GENERATED_PASSWORD_LEN: usize = 16;

/// Verifies `password` against a stored userPassword value.
///
/// A wrong password is `Ok(false)`. An unknown scheme or an unparsable value is an error, so the
/// caller can log it; it must still treat the bind as failed. Values without a `{SCHEME}` prefix
/// are cleartext and compare in constant time.
pub fn verify(stored: &[u8], password: &[u8]) -> Result<bool, PasswordError> {
    match split_prefix(stored) {
        Prefix::None => Ok(stored.ct_eq(password).into()),
        Prefix::Unknown(name) => Err(PasswordError::UnknownScheme(name.to_string())),
        Prefix::Known(scheme, payload) => match scheme {
            Scheme::Cleartext => Ok(payload.ct_eq(password).into()),
            Scheme::Crypt => crypt::verify(payload, password),
            Scheme::Argon2 => argon::verify(payload, password),
            Scheme::Pbkdf2Sha1 | Scheme::Pbkdf2Sha256 | Scheme::Pbkdf2Sha512 => {
                pbkdf::verify(scheme, payload, password)
            }
            Scheme::Ssha
            | Scheme::Sha
            | Scheme::Ssha256
            | Scheme::Ssha384
            | Scheme::Ssha512
            | Scheme::Sha256
            | Scheme::Sha384
            | Scheme::Sha512
            | Scheme::Md5
            | Scheme::Smd5 => digest::verify(scheme, payload, password),
        },
    }
}

/// Whether checking a password against `stored` costs no more than a few microseconds: the digest
/// schemes, cleartext, and values that fail at once (unknown schemes). `{CRYPT}`, `{ARGON2}` and
/// `{PBKDF2-*}` are slow by design, and callers should keep them off latency-sensitive threads.
pub fn is_cheap(stored: &[u8]) -> bool {
    match split_prefix(stored) {
        Prefix::None | Prefix::Unknown(_) => true,
        Prefix::Known(scheme, _) => !matches!(
            scheme,
            Scheme::Crypt
                | Scheme::Argon2
                | Scheme::Pbkdf2Sha1
                | Scheme::Pbkdf2Sha256
                | Scheme::Pbkdf2Sha512
        ),
    }
}

/// Hashes `password` under `scheme` with a fresh random salt, in OpenLDAP's format for it.
/// [`Scheme::Cleartext`] returns the password as is (as slappasswd does), which must be UTF-8.
pub fn hash(scheme: Scheme, password: &[u8]) -> Result<String, PasswordError> {
    hash_with(scheme, password, &Argon2Params::default())
}

/// [`hash`] with explicit argon2 cost parameters (used only by [`Scheme::Argon2`]).
pub fn hash_with(
    scheme: Scheme,
    password: &[u8],
    argon2: &Argon2Params,
) -> Result<String, PasswordError> {
    match scheme {
        Scheme::Cleartext => String::from_utf8(password.to_vec())
            .map_err(|_| PasswordError::Hash("cleartext password is not UTF-8".into())),
        Scheme::Crypt => Ok(format!(
            "{}{}",
            scheme.name(),
            crypt::hash_sha512(password)?
        )),
        Scheme::Argon2 => Ok(format!(
            "{}{}",
            scheme.name(),
            argon::hash(password, argon2)?
        )),
        Scheme::Pbkdf2Sha1 | Scheme::Pbkdf2Sha256 | Scheme::Pbkdf2Sha512 => {
            pbkdf::hash(scheme, password)
        }
        Scheme::Ssha
        | Scheme::Sha
        | Scheme::Ssha256
        | Scheme::Ssha384
        | Scheme::Ssha512
        | Scheme::Sha256
        | Scheme::Sha384
        | Scheme::Sha512
        | Scheme::Md5
        | Scheme::Smd5 => digest::hash(scheme, password),
    }
}

/// A random password of letters and digits for the RFC 3062 password modify operation.
pub fn generate_password() -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(GENERATED_PASSWORD_LEN)
        .map(char::from)
        .collect()
}

/// Whether `value` starts with the `{SCHEME}` prefix of a known hashing scheme. `{CLEARTEXT}`
/// does not count: such a value still holds the password in the clear.
pub fn is_hashed(value: &[u8]) -> bool {
    matches!(split_prefix(value), Prefix::Known(scheme, _) if scheme != Scheme::Cleartext)
}

/// `N` bytes from the thread-local CSPRNG (ChaCha, seeded from the OS).
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}
