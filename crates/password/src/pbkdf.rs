//! {PBKDF2}, {PBKDF2-SHA1}, {PBKDF2-SHA256}, {PBKDF2-SHA512} in the format of OpenLDAP's pw-pbkdf2.
//!
//! Observed from `slappasswd -o module-load=pw-pbkdf2`: `<iterations>$<salt>$<derived key>`, both
//! in "adapted base64" (standard alphabet with `.` for `+`, no padding), 16-byte salt, 10000
//! iterations, and a derived key as long as the HMAC's digest (20, 32 or 64 bytes).

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;
use subtle::ConstantTimeEq;

use crate::{random_bytes, PasswordError, Scheme};

/// pw-pbkdf2's default iteration count.
pub const PBKDF2_ITERATIONS: u32 = 10_000;
/// Refuse stored iteration counts above this: a self-written userPassword must not stall binds.
pub const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;
const SALT_LEN: usize = 16;
/// Longest derived key we agree to recompute; pw-pbkdf2 writes at most 64 bytes.
const MAX_KEY_LEN: usize = 256;

#[derive(Debug, Clone, Copy)]
enum Prf {
    Sha1,
    Sha256,
    Sha512,
}

impl Prf {
    fn of(scheme: Scheme) -> Option<Prf> {
        match scheme {
            Scheme::Pbkdf2Sha1 => Some(Prf::Sha1),
            Scheme::Pbkdf2Sha256 => Some(Prf::Sha256),
            Scheme::Pbkdf2Sha512 => Some(Prf::Sha512),
            _ => None,
        }
    }

    fn key_len(self) -> usize {
        match self {
            Prf::Sha1 => 20,
            Prf::Sha256 => 32,
            Prf::Sha512 => 64,
        }
    }

    fn derive(self, password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
        match self {
            Prf::Sha1 => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, out),
            Prf::Sha256 => pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, out),
            Prf::Sha512 => pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password, salt, iterations, out),
        }
    }
}

/// Decodes adapted base64. `+` and trailing `=` are tolerated too, for values that other tools
/// wrote in plain base64.
fn ab64_decode(text: &str) -> Option<Vec<u8>> {
    let plain: String = text
        .trim_end_matches('=')
        .chars()
        .map(|c| if c == '.' { '+' } else { c })
        .collect();
    STANDARD_NO_PAD.decode(plain).ok()
}

fn ab64_encode(bytes: &[u8]) -> String {
    STANDARD_NO_PAD.encode(bytes).replace('+', ".")
}

/// Checks `password` against a pw-pbkdf2 payload.
pub(crate) fn verify(
    scheme: Scheme,
    payload: &[u8],
    password: &[u8],
) -> Result<bool, PasswordError> {
    let prf = Prf::of(scheme).ok_or(PasswordError::Malformed("not a PBKDF2 scheme"))?;
    let text = std::str::from_utf8(payload)
        .map_err(|_| PasswordError::Malformed("PBKDF2 value is not text"))?;
    let mut fields = text.split('$');
    let (Some(iterations), Some(salt), Some(stored), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(PasswordError::Malformed(
            "PBKDF2 value is not iterations$salt$hash",
        ));
    };
    if iterations.is_empty() || !iterations.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PasswordError::Malformed(
            "PBKDF2 iterations is not a number",
        ));
    }
    let iterations = iterations.parse::<u32>().unwrap_or(u32::MAX);
    if iterations == 0 {
        return Err(PasswordError::Malformed("PBKDF2 iterations is zero"));
    }
    if iterations > MAX_PBKDF2_ITERATIONS {
        return Err(PasswordError::Malformed(
            "PBKDF2 iterations above Canopy's limit",
        ));
    }
    let salt =
        ab64_decode(salt).ok_or(PasswordError::Malformed("invalid base64 in PBKDF2 salt"))?;
    if salt.is_empty() {
        return Err(PasswordError::Malformed("PBKDF2 salt is empty"));
    }
    let stored =
        ab64_decode(stored).ok_or(PasswordError::Malformed("invalid base64 in PBKDF2 hash"))?;
    if stored.is_empty() || stored.len() > MAX_KEY_LEN {
        return Err(PasswordError::Malformed("PBKDF2 hash has the wrong length"));
    }
    let mut computed = vec![0u8; stored.len()];
    prf.derive(password, &salt, iterations, &mut computed);
    Ok(computed.ct_eq(&stored).into())
}

/// A fresh pw-pbkdf2 value with its default parameters.
pub(crate) fn hash(scheme: Scheme, password: &[u8]) -> Result<String, PasswordError> {
    let prf = Prf::of(scheme).ok_or(PasswordError::Malformed("not a PBKDF2 scheme"))?;
    let salt = random_bytes::<SALT_LEN>();
    let mut key = vec![0u8; prf.key_len()];
    prf.derive(password, &salt, PBKDF2_ITERATIONS, &mut key);
    Ok(format!(
        "{}{}${}${}",
        scheme.name(),
        PBKDF2_ITERATIONS,
        ab64_encode(&salt),
        ab64_encode(&key)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapted_base64() {
        assert_eq!(ab64_encode(&[0xfb, 0xef, 0xbe]), "....");
        assert_eq!(ab64_decode("...."), Some(vec![0xfb, 0xef, 0xbe]));
        assert_eq!(ab64_decode("++++"), Some(vec![0xfb, 0xef, 0xbe]));
        assert_eq!(ab64_decode("AA=="), Some(vec![0]));
        assert_eq!(ab64_decode("A"), None);
        assert_eq!(ab64_decode("A!"), None);
    }

    #[test]
    fn malformed_table() {
        let check = |payload: &str, message: &'static str| {
            assert_eq!(
                verify(Scheme::Pbkdf2Sha256, payload.as_bytes(), b"pw"),
                Err(PasswordError::Malformed(message)),
                "{payload}"
            );
        };
        check("", "PBKDF2 value is not iterations$salt$hash");
        check("10000$salt", "PBKDF2 value is not iterations$salt$hash");
        check("10000$a$b$c", "PBKDF2 value is not iterations$salt$hash");
        check("x$c2FsdA$aGFzaA", "PBKDF2 iterations is not a number");
        check("$c2FsdA$aGFzaA", "PBKDF2 iterations is not a number");
        check("0$c2FsdA$aGFzaA", "PBKDF2 iterations is zero");
        check(
            "99999999999$c2FsdA$aGFzaA",
            "PBKDF2 iterations above Canopy's limit",
        );
        check("1000$c2F!dA$aGFzaA", "invalid base64 in PBKDF2 salt");
        check("1000$$aGFzaA", "PBKDF2 salt is empty");
        check("1000$c2FsdA$a", "invalid base64 in PBKDF2 hash");
        check("1000$c2FsdA$", "PBKDF2 hash has the wrong length");
    }
}
