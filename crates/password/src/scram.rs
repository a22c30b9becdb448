//! SCRAM (RFC 5802, RFC 7677) secrets in RFC 5803's authPassword format, and the server's proof checks.
//!
//! A secret is `SCRAM-SHA-256$<iterations>:<b64 salt>$<b64 StoredKey>:<b64 ServerKey>`; it lets the
//! server check a client proof and sign its answer without knowing the password.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use crate::{random_bytes, PasswordError};

/// Default iteration count of new secrets: RFC 7677's minimum for SCRAM-SHA-256, and Cyrus SASL's default.
pub const SCRAM_ITERATIONS: u32 = 4096;
/// Fewest iterations accepted in configuration (RFC 7677 §4: at least 4096).
pub const MIN_SCRAM_ITERATIONS: u32 = 4096;
/// Most iterations a stored secret may ask for: a user writing their own authPassword must not make
/// a bind spin for minutes.
pub const MAX_SCRAM_ITERATIONS: u32 = 1_000_000;
const SALT_LEN: usize = 16;

/// The SCRAM hash functions Canopy offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramHash {
    Sha256,
    Sha512,
}

impl ScramHash {
    pub const ALL: [ScramHash; 2] = [ScramHash::Sha256, ScramHash::Sha512];

    /// The SASL mechanism name, also the authPassword scheme.
    pub fn mechanism(self) -> &'static str {
        match self {
            ScramHash::Sha256 => "SCRAM-SHA-256",
            ScramHash::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The hash for a mechanism name (any case).
    pub fn from_mechanism(name: &str) -> Option<ScramHash> {
        ScramHash::ALL
            .into_iter()
            .find(|h| h.mechanism().eq_ignore_ascii_case(name))
    }

    fn h(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramHash::Sha512 => {
                let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            ScramHash::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

/// A parsed SCRAM secret. Its Debug form leaves the keys out.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramSecret {
    pub hash: ScramHash,
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramSecret")
            .field("hash", &self.hash)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// The salt shown for a user without a secret: the same for the same name while `key` stays (RFC 5802
/// §5.1 suggests it), so asking twice does not tell unknown users from known ones.
pub fn mock_salt(key: &[u8], name: &str) -> Vec<u8> {
    let mut salt = ScramHash::Sha256.hmac(key, name.as_bytes());
    salt.truncate(SALT_LEN);
    salt
}

impl ScramSecret {
    /// Derives a secret from a password with a fresh random salt.
    pub fn derive(hash: ScramHash, password: &[u8], iterations: u32) -> ScramSecret {
        let salt = random_bytes::<SALT_LEN>().to_vec();
        ScramSecret::derive_with_salt(hash, password, &salt, iterations)
    }

    /// Derives a secret with a given salt (tests and known-answer checks).
    pub fn derive_with_salt(
        hash: ScramHash,
        password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> ScramSecret {
        let salted = hash.salted_password(password, salt, iterations);
        let client_key = hash.hmac(&salted, b"Client Key");
        ScramSecret {
            hash,
            iterations,
            salt: salt.to_vec(),
            stored_key: hash.h(&client_key),
            server_key: hash.hmac(&salted, b"Server Key"),
        }
    }

    /// The RFC 5803 authPassword value.
    pub fn encode(&self) -> String {
        format!(
            "{}${}:{}${}:{}",
            self.hash.mechanism(),
            self.iterations,
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key)
        )
    }

    /// Parses an RFC 5803 authPassword value; other schemes are `Ok(None)`.
    pub fn parse(value: &[u8]) -> Result<Option<ScramSecret>, PasswordError> {
        let text = std::str::from_utf8(value)
            .map_err(|_| PasswordError::Malformed("authPassword is not text"))?;
        let (scheme, rest) = text
            .split_once('$')
            .ok_or(PasswordError::Malformed("authPassword without scheme"))?;
        let Some(hash) = ScramHash::from_mechanism(scheme.trim()) else {
            return Ok(None);
        };
        let bad = PasswordError::Malformed("invalid SCRAM secret");
        let (auth_info, auth_value) = rest.split_once('$').ok_or(bad.clone())?;
        let (iterations, salt) = auth_info.split_once(':').ok_or(bad.clone())?;
        let (stored_key, server_key) = auth_value.split_once(':').ok_or(bad.clone())?;
        let iterations: u32 = iterations.trim().parse().map_err(|_| bad.clone())?;
        if iterations == 0 || iterations > MAX_SCRAM_ITERATIONS {
            return Err(PasswordError::Malformed(
                "SCRAM iteration count out of range",
            ));
        }
        let decode = |s: &str| B64.decode(s.trim()).map_err(|_| bad.clone());
        let secret = ScramSecret {
            hash,
            iterations,
            salt: decode(salt)?,
            stored_key: decode(stored_key)?,
            server_key: decode(server_key)?,
        };
        let len = hash.h(b"").len();
        if secret.stored_key.len() != len || secret.server_key.len() != len {
            return Err(bad);
        }
        Ok(Some(secret))
    }

    /// Whether `password` derives this secret (constant-time comparison).
    pub fn matches_password(&self, password: &[u8]) -> bool {
        let other = ScramSecret::derive_with_salt(self.hash, password, &self.salt, self.iterations);
        other.stored_key.ct_eq(&self.stored_key).into()
    }

    /// Checks a client proof over `auth_message` (RFC 5802 §3). On success returns the ServerSignature.
    pub fn check_proof(&self, auth_message: &[u8], proof: &[u8]) -> Option<Vec<u8>> {
        let client_signature = self.hash.hmac(&self.stored_key, auth_message);
        if proof.len() != client_signature.len() {
            return None;
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        let ok: bool = self.hash.h(&client_key).ct_eq(&self.stored_key).into();
        ok.then(|| self.hash.hmac(&self.server_key, auth_message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 §3's example: user "user", password "pencil".
    #[test]
    fn rfc7677_example() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let secret = ScramSecret::derive_with_salt(ScramHash::Sha256, b"pencil", &salt, 4096);
        let auth = "n=user,r=rOprNGfwEbeRWgbNEkqO,\
                    r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,\
                    c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let proof = B64
            .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        let signature = secret.check_proof(auth.as_bytes(), &proof).unwrap();
        assert_eq!(
            B64.encode(signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        let mut wrong = proof.clone();
        wrong[0] ^= 1;
        assert!(secret.check_proof(auth.as_bytes(), &wrong).is_none());
        assert!(secret.matches_password(b"pencil"));
        assert!(!secret.matches_password(b"pencil2"));
    }

    #[test]
    fn mock_salt_is_stable_per_name_and_key() {
        assert_eq!(mock_salt(b"k", "alice"), mock_salt(b"k", "alice"));
        assert_ne!(mock_salt(b"k", "alice"), mock_salt(b"k", "bob"));
        assert_ne!(mock_salt(b"k", "alice"), mock_salt(b"j", "alice"));
        assert_eq!(mock_salt(b"k", "alice").len(), SALT_LEN);
        let secret = ScramSecret::derive(ScramHash::Sha256, b"pw", 4096);
        assert!(!format!("{secret:?}").contains("stored_key"));
    }

    #[test]
    fn encode_parse_round_trip() {
        for hash in ScramHash::ALL {
            let secret = ScramSecret::derive(hash, b"secret", 4096);
            let text = secret.encode();
            assert!(text.starts_with(hash.mechanism()));
            assert_eq!(ScramSecret::parse(text.as_bytes()), Ok(Some(secret)));
        }
        assert_eq!(ScramSecret::parse(b"MD5$abc$def"), Ok(None));
        assert!(ScramSecret::parse(b"SCRAM-SHA-256$0:AA==$AA==:AA==").is_err());
        assert!(ScramSecret::parse(b"SCRAM-SHA-256$4096:AA==$AA==:AA==").is_err());
        assert!(ScramSecret::parse(b"SCRAM-SHA-256$4096").is_err());
    }
}
