//! The base64 digest schemes: {SHA}/{SSHA}, the sha2 contrib module's {SHA256..SSHA512}, {MD5}/{SMD5}.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::{random_bytes, PasswordError, Scheme};

/// Salt length for the values we write. slappasswd uses 4 bytes for {SSHA}/{SMD5} and 8 for the
/// sha2 module; every verifier takes whatever follows the digest as salt, so 8 is safe everywhere.
pub(crate) const SALT_LEN: usize = 8;

/// Standard alphabet; padding optional and trailing bits tolerated on input, because values
/// written by other tools over the years are not all canonical and the digest decides anyway.
const B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

#[derive(Debug, Clone, Copy)]
enum Algorithm {
    Md5,
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    fn output_len(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Sha1 => 20,
            Algorithm::Sha256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
        }
    }

    fn digest(self, password: &[u8], salt: &[u8]) -> Vec<u8> {
        fn run<D: Digest>(password: &[u8], salt: &[u8]) -> Vec<u8> {
            let mut d = D::new();
            d.update(password);
            d.update(salt);
            d.finalize().to_vec()
        }
        match self {
            Algorithm::Md5 => run::<md5::Md5>(password, salt),
            Algorithm::Sha1 => run::<sha1::Sha1>(password, salt),
            Algorithm::Sha256 => run::<sha2::Sha256>(password, salt),
            Algorithm::Sha384 => run::<sha2::Sha384>(password, salt),
            Algorithm::Sha512 => run::<sha2::Sha512>(password, salt),
        }
    }
}

/// The digest algorithm of `scheme` and whether it is salted; `None` if it is no digest scheme.
fn algorithm(scheme: Scheme) -> Option<(Algorithm, bool)> {
    Some(match scheme {
        Scheme::Md5 => (Algorithm::Md5, false),
        Scheme::Smd5 => (Algorithm::Md5, true),
        Scheme::Sha => (Algorithm::Sha1, false),
        Scheme::Ssha => (Algorithm::Sha1, true),
        Scheme::Sha256 => (Algorithm::Sha256, false),
        Scheme::Ssha256 => (Algorithm::Sha256, true),
        Scheme::Sha384 => (Algorithm::Sha384, false),
        Scheme::Ssha384 => (Algorithm::Sha384, true),
        Scheme::Sha512 => (Algorithm::Sha512, false),
        Scheme::Ssha512 => (Algorithm::Sha512, true),
        _ => return None,
    })
}

/// Checks `password` against the base64 payload of a digest scheme value.
pub(crate) fn verify(
    scheme: Scheme,
    payload: &[u8],
    password: &[u8],
) -> Result<bool, PasswordError> {
    let (alg, salted) = algorithm(scheme).ok_or(PasswordError::Malformed("not a digest scheme"))?;
    let decoded = B64
        .decode(payload)
        .map_err(|_| PasswordError::Malformed("invalid base64 in digest"))?;
    let (stored, salt) = if salted {
        // At least one salt byte: a bare digest under a salted scheme is a corrupted value.
        if decoded.len() <= alg.output_len() {
            return Err(PasswordError::Malformed("salted digest is too short"));
        }
        decoded.split_at(alg.output_len())
    } else {
        if decoded.len() != alg.output_len() {
            return Err(PasswordError::Malformed("digest has the wrong length"));
        }
        (decoded.as_slice(), &[][..])
    };
    Ok(alg.digest(password, salt).ct_eq(stored).into())
}

/// Hashes `password` under a digest scheme, with a fresh salt if the scheme is salted.
pub(crate) fn hash(scheme: Scheme, password: &[u8]) -> Result<String, PasswordError> {
    let (alg, salted) = algorithm(scheme).ok_or(PasswordError::Malformed("not a digest scheme"))?;
    let salt = if salted {
        random_bytes::<SALT_LEN>().to_vec()
    } else {
        Vec::new()
    };
    let mut raw = alg.digest(password, &salt);
    raw.extend_from_slice(&salt);
    Ok(format!("{}{}", scheme.name(), B64.encode(raw)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_payloads_are_errors() {
        let check = |scheme: Scheme, payload: &str, message: &str| match verify(
            scheme,
            payload.as_bytes(),
            b"pw",
        ) {
            Err(PasswordError::Malformed(m)) => assert_eq!(m, message, "{scheme} {payload}"),
            other => panic!("{scheme} {payload}: {other:?}"),
        };
        check(Scheme::Ssha, "!!!!", "invalid base64 in digest");
        check(Scheme::Ssha, "a", "invalid base64 in digest");
        // 20 bytes: a SHA-1 digest with no salt.
        check(
            Scheme::Ssha,
            "L55TUjtiq8FBorTWAZ0jy6g129A=",
            "salted digest is too short",
        );
        check(Scheme::Ssha512, "", "salted digest is too short");
        check(
            Scheme::Sha,
            "L55TUjtiq8FBorTWAZ0jy6g12w==",
            "digest has the wrong length",
        );
        check(
            Scheme::Sha256,
            "L55TUjtiq8FBorTWAZ0jy6g129A=",
            "digest has the wrong length",
        );
        check(Scheme::Md5, "", "digest has the wrong length");
    }

    #[test]
    fn padding_is_optional_on_input() {
        // {SHA} of "correct horse" from slappasswd, with and without its '=' padding.
        assert!(verify(
            Scheme::Sha,
            b"L55TUjtiq8FBorTWAZ0jy6g129A=",
            b"correct horse"
        )
        .unwrap());
        assert!(verify(
            Scheme::Sha,
            b"L55TUjtiq8FBorTWAZ0jy6g129A",
            b"correct horse"
        )
        .unwrap());
    }

    #[test]
    fn salts_are_fresh() {
        let a = hash(Scheme::Ssha, b"pw").unwrap();
        let b = hash(Scheme::Ssha, b"pw").unwrap();
        assert_ne!(a, b);
        let decoded = B64.decode(a.trim_start_matches("{SSHA}")).unwrap();
        assert_eq!(decoded.len(), 20 + SALT_LEN);
    }
}
