//! One-time passwords: HOTP (RFC 4226) and TOTP (RFC 6238) codes with the HMAC algorithms slapd's otp
//! overlay accepts, named by their RFC 8018 OIDs as the OATH-LDAP schema's `oathHMACAlgorithm` holds them.

use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Sha224, Sha256, Sha384, Sha512};
use subtle::ConstantTimeEq;

/// An HMAC algorithm of RFC 8018 (PKCS #5 v2.1, appendix B.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HmacAlgorithm {
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl HmacAlgorithm {
    /// The algorithm of an `oathHMACAlgorithm` value: hmacWithSHA1 1.2.840.113549.2.7 to
    /// hmacWithSHA512 1.2.840.113549.2.11.
    pub fn from_oid(oid: &str) -> Option<HmacAlgorithm> {
        Some(match oid.trim() {
            "1.2.840.113549.2.7" => HmacAlgorithm::Sha1,
            "1.2.840.113549.2.8" => HmacAlgorithm::Sha224,
            "1.2.840.113549.2.9" => HmacAlgorithm::Sha256,
            "1.2.840.113549.2.10" => HmacAlgorithm::Sha384,
            "1.2.840.113549.2.11" => HmacAlgorithm::Sha512,
            _ => return None,
        })
    }

    fn mac(self, key: &[u8], message: &[u8]) -> Vec<u8> {
        fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], message: &[u8]) -> Vec<u8> {
            // Any key length is valid for HMAC.
            let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
                .expect("HMAC takes keys of any length");
            mac.update(message);
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            HmacAlgorithm::Sha1 => run::<Hmac<Sha1>>(key, message),
            HmacAlgorithm::Sha224 => run::<Hmac<Sha224>>(key, message),
            HmacAlgorithm::Sha256 => run::<Hmac<Sha256>>(key, message),
            HmacAlgorithm::Sha384 => run::<Hmac<Sha384>>(key, message),
            HmacAlgorithm::Sha512 => run::<Hmac<Sha512>>(key, message),
        }
    }
}

/// Most digits a code may have: 10^9 still fits the 31 bits RFC 4226's truncation yields.
pub const MAX_DIGITS: u32 = 9;

/// The `digits`-digit code of `counter` under `secret` (RFC 4226 §5.3: HMAC of the counter as eight
/// big-endian bytes, dynamic truncation, modulo 10^digits, zero-padded). None for more than
/// [`MAX_DIGITS`] or no digits.
pub fn hotp(algorithm: HmacAlgorithm, secret: &[u8], counter: u64, digits: u32) -> Option<String> {
    if digits == 0 || digits > MAX_DIGITS {
        return None;
    }
    let mac = algorithm.mac(secret, &counter.to_be_bytes());
    let offset = (mac[mac.len() - 1] & 0x0f) as usize;
    let number = u32::from_be_bytes([
        mac[offset],
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]) & 0x7fff_ffff;
    let code = number % 10u32.pow(digits);
    Some(format!("{code:0width$}", width = digits as usize))
}

/// Whether `given` is the code of `counter`, compared in constant time.
pub fn hotp_matches(
    algorithm: HmacAlgorithm,
    secret: &[u8],
    counter: u64,
    digits: u32,
    given: &[u8],
) -> bool {
    hotp(algorithm, secret, counter, digits)
        .is_some_and(|code| bool::from(code.as_bytes().ct_eq(given)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4226 appendix D: the secret "12345678901234567890", six digits.
    #[test]
    fn rfc_4226_test_values() {
        let secret = b"12345678901234567890";
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583",
            "399871", "520489",
        ];
        for (counter, want) in expected.iter().enumerate() {
            assert_eq!(
                hotp(HmacAlgorithm::Sha1, secret, counter as u64, 6).as_deref(),
                Some(*want)
            );
        }
    }

    /// RFC 6238 appendix B: eight digits at T = 59 s (step 1), with the SHA-256 and SHA-512 seeds.
    #[test]
    fn rfc_6238_test_values() {
        let sha1 = b"12345678901234567890";
        let sha256 = b"12345678901234567890123456789012";
        let sha512 = b"1234567890123456789012345678901234567890123456789012345678901234";
        assert_eq!(
            hotp(HmacAlgorithm::Sha1, sha1, 1, 8).as_deref(),
            Some("94287082")
        );
        assert_eq!(
            hotp(HmacAlgorithm::Sha256, sha256, 1, 8).as_deref(),
            Some("46119246")
        );
        assert_eq!(
            hotp(HmacAlgorithm::Sha512, sha512, 1, 8).as_deref(),
            Some("90693936")
        );
        // T = 1111111109 s: step 37037036.
        assert_eq!(
            hotp(HmacAlgorithm::Sha1, sha1, 37_037_036, 8).as_deref(),
            Some("07081804")
        );
    }

    #[test]
    fn algorithms_by_oid() {
        assert_eq!(
            HmacAlgorithm::from_oid("1.2.840.113549.2.7"),
            Some(HmacAlgorithm::Sha1)
        );
        assert_eq!(
            HmacAlgorithm::from_oid("1.2.840.113549.2.11"),
            Some(HmacAlgorithm::Sha512)
        );
        assert_eq!(HmacAlgorithm::from_oid("1.2.840.113549.2.5"), None);
    }

    #[test]
    fn digits_out_of_range() {
        assert_eq!(hotp(HmacAlgorithm::Sha1, b"k", 1, 0), None);
        assert_eq!(hotp(HmacAlgorithm::Sha1, b"k", 1, 10), None);
        assert!(!hotp_matches(
            HmacAlgorithm::Sha1,
            b"k",
            1,
            10,
            b"0000000000"
        ));
    }

    #[test]
    fn matching_is_exact() {
        let secret = b"12345678901234567890";
        assert!(hotp_matches(HmacAlgorithm::Sha1, secret, 0, 6, b"755224"));
        assert!(!hotp_matches(HmacAlgorithm::Sha1, secret, 0, 6, b"755225"));
        assert!(!hotp_matches(HmacAlgorithm::Sha1, secret, 0, 6, b"0755224"));
    }
}
