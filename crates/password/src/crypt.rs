//! {CRYPT}: crypt(3) strings as glibc/libxcrypt writes them: `$6$`, `$5$`, `$1$`, DES and bigcrypt.

use sha_crypt::{Sha256Params, Sha512Params};
use subtle::ConstantTimeEq;

use crate::crypt_alphabet::CRYPT_ALPHABET;
use crate::des_crypt::{self, DES_CHARS, SEGMENT_CHARS};
use crate::{md5_crypt, random_bytes, PasswordError};

/// glibc's bounds for `rounds=`; values outside are clamped, not rejected, and we do the same.
const ROUNDS_MIN: u64 = 1_000;
const ROUNDS_DEFAULT: u64 = 5_000;
/// glibc allows 999,999,999 rounds, minutes of CPU per bind; a user allowed to write their own
/// userPassword could stall the server that way, so Canopy refuses values above this.
pub const MAX_CRYPT_ROUNDS: u64 = 10_000_000;
/// Salt characters we write for `$6$`; glibc reads at most 16.
const SALT_CHARS: usize = 16;

/// Which SHA-crypt variant a `$5$`/`$6$` value uses.
#[derive(Debug, Clone, Copy)]
enum ShaCrypt {
    Sha256,
    Sha512,
}

impl ShaCrypt {
    fn hash_chars(self) -> usize {
        match self {
            ShaCrypt::Sha256 => 43,
            ShaCrypt::Sha512 => 86,
        }
    }

    fn compute(self, password: &[u8], salt: &[u8], rounds: u64) -> Result<String, PasswordError> {
        let rounds = usize::try_from(rounds).map_err(|_| PasswordError::Malformed("bad rounds"))?;
        let result = match self {
            ShaCrypt::Sha256 => Sha256Params::new(rounds)
                .and_then(|p| sha_crypt::sha256_crypt_b64(password, salt, &p)),
            ShaCrypt::Sha512 => Sha512Params::new(rounds)
                .and_then(|p| sha_crypt::sha512_crypt_b64(password, salt, &p)),
        };
        result.map_err(|e| PasswordError::Hash(format!("sha-crypt: {e:?}")))
    }
}

/// Checks `password` against the payload of a `{CRYPT}` value.
pub(crate) fn verify(payload: &[u8], password: &[u8]) -> Result<bool, PasswordError> {
    let text = std::str::from_utf8(payload)
        .map_err(|_| PasswordError::Malformed("crypt value is not text"))?;
    if let Some(body) = text.strip_prefix("$6$") {
        return verify_sha(ShaCrypt::Sha512, body, password);
    }
    if let Some(body) = text.strip_prefix("$5$") {
        return verify_sha(ShaCrypt::Sha256, body, password);
    }
    if let Some(body) = text.strip_prefix("$1$") {
        return md5_crypt::verify(body, password);
    }
    if let Some(body) = text.strip_prefix('$') {
        // bcrypt ($2b$), yescrypt ($y$), scrypt ($7$), sun-md5 ($md5) ...: real formats we lack.
        let id = body.split('$').next().unwrap_or_default();
        return Err(PasswordError::UnknownScheme(format!("{{CRYPT}}${id}$")));
    }
    if text.starts_with('_') {
        return Err(PasswordError::UnknownScheme(
            "{CRYPT} BSDi extended DES".into(),
        ));
    }
    let all_crypt_chars = text.bytes().all(|b| CRYPT_ALPHABET.contains(&b));
    let des_length = text
        .len()
        .checked_sub(DES_CHARS)
        .is_some_and(|extra| extra.is_multiple_of(SEGMENT_CHARS));
    if all_crypt_chars && des_length {
        return Ok(des_crypt::verify(text.as_bytes(), password));
    }
    Err(PasswordError::Malformed("unrecognized crypt(3) format"))
}

/// `[rounds=N$]salt$hash` after the `$5$`/`$6$` magic.
fn verify_sha(kind: ShaCrypt, body: &str, password: &[u8]) -> Result<bool, PasswordError> {
    let (rounds, rest) = match body.strip_prefix("rounds=") {
        Some(after) => {
            let (number, rest) = after
                .split_once('$')
                .ok_or(PasswordError::Malformed("crypt rounds without salt"))?;
            if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                return Err(PasswordError::Malformed("crypt rounds is not a number"));
            }
            // Saturate huge numbers: they are above our limit anyway.
            let rounds = number.parse::<u64>().unwrap_or(u64::MAX).max(ROUNDS_MIN);
            (rounds, rest)
        }
        None => (ROUNDS_DEFAULT, body),
    };
    if rounds > MAX_CRYPT_ROUNDS {
        return Err(PasswordError::Malformed(
            "crypt rounds above Canopy's limit",
        ));
    }
    let (salt, stored) = rest
        .split_once('$')
        .ok_or(PasswordError::Malformed("crypt value without hash"))?;
    if stored.len() != kind.hash_chars() || !stored.bytes().all(|b| CRYPT_ALPHABET.contains(&b)) {
        return Err(PasswordError::Malformed(
            "crypt hash has the wrong length or alphabet",
        ));
    }
    // glibc reads at most 16 salt characters and ignores the rest.
    let salt = salt.as_bytes();
    let salt = salt.get(..SALT_CHARS).unwrap_or(salt);
    let computed = kind.compute(password, salt, rounds)?;
    Ok(computed.as_bytes().ct_eq(stored.as_bytes()).into())
}

/// A fresh `$6$` sha512-crypt string with glibc's default 5000 rounds (so no `rounds=` field).
pub(crate) fn hash_sha512(password: &[u8]) -> Result<String, PasswordError> {
    let salt = random_salt_chars::<SALT_CHARS>();
    let computed = ShaCrypt::Sha512.compute(password, &salt, ROUNDS_DEFAULT)?;
    let salt = String::from_utf8_lossy(&salt);
    Ok(format!("$6${salt}${computed}"))
}

/// `N` random characters of the crypt alphabet.
pub(crate) fn random_salt_chars<const N: usize>() -> [u8; N] {
    // 64 divides 256, so masking keeps the characters uniform.
    random_bytes::<N>().map(|b| {
        CRYPT_ALPHABET
            .get(usize::from(b & 63))
            .copied()
            .unwrap_or(b'.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_table() {
        let check = |payload: &str, expected: PasswordError| {
            assert_eq!(
                verify(payload.as_bytes(), b"pw"),
                Err(expected),
                "{payload}"
            );
        };
        let malformed = PasswordError::Malformed;
        check("$6$salt", malformed("crypt value without hash"));
        check(
            "$6$salt$short",
            malformed("crypt hash has the wrong length or alphabet"),
        );
        check(
            "$5$salt$",
            malformed("crypt hash has the wrong length or alphabet"),
        );
        check(
            "$6$rounds=$salt$x",
            malformed("crypt rounds is not a number"),
        );
        check(
            "$6$rounds=-5$salt$x",
            malformed("crypt rounds is not a number"),
        );
        check("$6$rounds=5000", malformed("crypt rounds without salt"));
        check(
            "$6$rounds=999999999$salt$x",
            malformed("crypt rounds above Canopy's limit"),
        );
        check(
            "$6$rounds=99999999999999999999999$salt$x",
            malformed("crypt rounds above Canopy's limit"),
        );
        check("", malformed("unrecognized crypt(3) format"));
        check("abc", malformed("unrecognized crypt(3) format"));
        check("*", malformed("unrecognized crypt(3) format"));
        check("!locked", malformed("unrecognized crypt(3) format"));
        let unknown = |s: &str| PasswordError::UnknownScheme(s.to_string());
        check("$2b$10$abcdefghijklmnopqrstuv", unknown("{CRYPT}$2b$"));
        check("$y$j9T$salt$hash", unknown("{CRYPT}$y$"));
        check("_J9..abcd", unknown("{CRYPT} BSDi extended DES"));
        assert_eq!(
            verify(b"\xff$6$", b"pw"),
            Err(malformed("crypt value is not text"))
        );
    }

    #[test]
    fn glibc_vectors() {
        // python3 -c "import crypt; print(crypt.crypt(PW, SALT))" on this machine (libxcrypt).
        let check = |stored: &str, password: &[u8]| {
            assert!(verify(stored.as_bytes(), password).unwrap(), "{stored}");
            assert!(!verify(stored.as_bytes(), b"wrong").unwrap(), "{stored}");
        };
        check(
            "$5$rounds=1000$saltsalt$eNI.02a9Kos9UxzxjTLpNZ6kYHkRe9Z8OsGkDDoW/X2",
            b"pw",
        );
        check(
            "$5$rounds=5000$saltsalt$0rl.MZtoLLPP3X0Rdl8riRnphIcAXJY27/aOAyK2hB5",
            b"pw",
        );
        check(
            "$5$saltsalt$0rl.MZtoLLPP3X0Rdl8riRnphIcAXJY27/aOAyK2hB5",
            b"pw",
        );
        // SALT '$6$0123456789abcdefXYZ': only 16 salt characters are kept.
        check(
            "$6$0123456789abcdef$zAYvvEJcrKSqV2KUPTUM1K9eaGv20n9mUjWSDZW0QnwBRk0LSoTIT3PW7mCEa30acQuLwC1rnfhmbdGOSp.jX.",
            b"pw",
        );
        // libcrypt through ctypes: crypt(b"pw\xe9", b"$6$saltsalt"), a Latin-1 byte that is
        // not UTF-8, and crypt(b"pw\xc3\xa9", ...), its UTF-8 spelling: passwords are bytes.
        check(
            "$6$saltsalt$.h9wA9oNLvXqbbDRmEhW42Jy5AJ3Bt179ObIcDp7eXjLXyZa9JCeNaM78NZElDs5kpU.J4YbLemKJ6ATufmck1",
            b"pw\xe9",
        );
        check(
            "$6$saltsalt$8Drp88Yb/soKGfw7RnuuwQ2trfDrtOBsepcSTenFZBokD3tnH9MKmttm17MHowtzaiWzZhhRh5zjilDfva7AW1",
            "pw\u{e9}".as_bytes(),
        );
    }

    #[test]
    fn rounds_below_minimum_are_clamped() {
        // Drepper's spec (and classic glibc) clamps rounds=10 to 1000; libxcrypt refuses to
        // write such a value, so accepting it on input costs nothing.
        let clamped = "$5$rounds=10$saltsalt$eNI.02a9Kos9UxzxjTLpNZ6kYHkRe9Z8OsGkDDoW/X2";
        assert!(verify(clamped.as_bytes(), b"pw").unwrap());
    }

    #[test]
    fn generated_values_have_glibc_shape() {
        let generated = hash_sha512(b"pw").unwrap();
        assert!(verify(generated.as_bytes(), b"pw").unwrap());
        assert_eq!(generated.len(), 3 + SALT_CHARS + 1 + 86);
        assert_ne!(generated, hash_sha512(b"pw").unwrap());
    }
}
