//! {ARGON2}: PHC strings as OpenLDAP's argon2 module (libargon2) writes and reads them.

use argon2::password_hash::{PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use subtle::ConstantTimeEq;

use crate::{random_bytes, PasswordError};

/// Default parameters of the values we write: argon2id with OWASP's first Argon2id recommendation
/// (19 MiB, 2 passes, 1 lane), 16-byte salt and 32-byte hash as OpenLDAP's argon2 module writes.
pub const ARGON2_MEMORY_KIB: u32 = 19456;
pub const ARGON2_ITERATIONS: u32 = 2;
pub const ARGON2_PARALLELISM: u32 = 1;

/// Cost parameters for new argon2id values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argon2Params {
    pub memory_kib: u32,
    pub iterations: u32,
    pub parallelism: u32,
}

impl Default for Argon2Params {
    fn default() -> Self {
        Argon2Params {
            memory_kib: ARGON2_MEMORY_KIB,
            iterations: ARGON2_ITERATIONS,
            parallelism: ARGON2_PARALLELISM,
        }
    }
}

impl Argon2Params {
    /// Checks the parameters against argon2's own bounds and Canopy's limits on stored values.
    pub fn check(&self) -> Result<(), PasswordError> {
        if self.memory_kib > MAX_ARGON2_MEMORY_KIB
            || self.iterations > MAX_ARGON2_ITERATIONS
            || self.parallelism > MAX_ARGON2_PARALLELISM
        {
            return Err(PasswordError::Hash(
                "argon2 cost above Canopy's limit".into(),
            ));
        }
        self.params().map(|_| ())
    }

    fn params(&self) -> Result<Params, PasswordError> {
        Params::new(
            self.memory_kib,
            self.iterations,
            self.parallelism,
            Some(HASH_LEN),
        )
        .map_err(|e| PasswordError::Hash(format!("argon2: {e}")))
    }
}
const SALT_LEN: usize = 16;
const HASH_LEN: usize = 32;

/// Refuse stored costs above these: a user who may write their own userPassword must not be able
/// to make a bind allocate gigabytes (an allocation failure aborts the server) or spin for minutes.
pub const MAX_ARGON2_MEMORY_KIB: u32 = 1 << 20;
pub const MAX_ARGON2_ITERATIONS: u32 = 64;
pub const MAX_ARGON2_PARALLELISM: u32 = 64;

/// Checks `password` against an `$argon2...` PHC string.
pub(crate) fn verify(payload: &[u8], password: &[u8]) -> Result<bool, PasswordError> {
    let text = std::str::from_utf8(payload)
        .map_err(|_| PasswordError::Malformed("argon2 value is not text"))?;
    let phc =
        PasswordHash::new(text).map_err(|_| PasswordError::Malformed("invalid PHC string"))?;
    let algorithm = Algorithm::try_from(phc.algorithm)
        .map_err(|_| PasswordError::Malformed("PHC string names no argon2 variant"))?;
    // libargon2 reads a string without `v=` as version 1.0 (0x10), not the current 1.3.
    let version = match phc.version {
        None => Version::V0x10,
        Some(v) => {
            Version::try_from(v).map_err(|_| PasswordError::Malformed("unknown argon2 version"))?
        }
    };
    let params = Params::try_from(&phc)
        .map_err(|_| PasswordError::Malformed("invalid argon2 parameters"))?;
    if params.m_cost() > MAX_ARGON2_MEMORY_KIB
        || params.t_cost() > MAX_ARGON2_ITERATIONS
        || params.p_cost() > MAX_ARGON2_PARALLELISM
    {
        return Err(PasswordError::Malformed("argon2 cost above Canopy's limit"));
    }
    let salt = phc
        .salt
        .ok_or(PasswordError::Malformed("PHC string without salt"))?;
    let mut salt_buf = [0u8; 64];
    let salt = salt
        .decode_b64(&mut salt_buf)
        .map_err(|_| PasswordError::Malformed("invalid base64 in argon2 salt"))?;
    let stored = phc
        .hash
        .ok_or(PasswordError::Malformed("PHC string without hash"))?;
    let mut computed = vec![0u8; stored.len()];
    Argon2::new(algorithm, version, params)
        .hash_password_into(password, salt, &mut computed)
        .map_err(|e| PasswordError::Hash(format!("argon2: {e}")))?;
    Ok(computed.ct_eq(stored.as_bytes()).into())
}

/// A fresh argon2id PHC string with the given parameters.
pub(crate) fn hash(password: &[u8], params: &Argon2Params) -> Result<String, PasswordError> {
    use argon2::PasswordHasher as _;
    let params = params.params()?;
    let salt = SaltString::encode_b64(&random_bytes::<SALT_LEN>())
        .map_err(|e| PasswordError::Hash(format!("argon2 salt: {e}")))?;
    let phc = Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password, &salt)
        .map_err(|e| PasswordError::Hash(format!("argon2: {e}")))?;
    Ok(phc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_table() {
        let check = |payload: &str, message: &'static str| {
            assert_eq!(
                verify(payload.as_bytes(), b"pw"),
                Err(PasswordError::Malformed(message)),
                "{payload}"
            );
        };
        check("", "invalid PHC string");
        check("argon2id$v=19", "invalid PHC string");
        check(
            "$argon2id$v=19$m=4096,t=3,p=1$!!!!$DmDZ",
            "invalid PHC string",
        );
        check(
            "$scrypt$m=16$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "PHC string names no argon2 variant",
        );
        check(
            "$argon2id$v=17$m=4096,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "unknown argon2 version",
        );
        check(
            "$argon2id$v=19$m=1,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "invalid argon2 parameters",
        );
        check(
            "$argon2id$v=19$m=4194304,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "argon2 cost above Canopy's limit",
        );
        check(
            "$argon2id$v=19$m=4096,t=1000,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
            "argon2 cost above Canopy's limit",
        );
        check("$argon2id$v=19$m=4096,t=3,p=1", "PHC string without salt");
        check(
            "$argon2id$v=19$m=4096,t=3,p=1$c2FsdHNhbHQ",
            "PHC string without hash",
        );
    }
}
