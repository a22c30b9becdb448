//! `$1$` md5-crypt (Poul-Henning Kamp's FreeBSD scheme), verify only: old Linux shadow files and
//! migrated NIS maps put these under {CRYPT}.

use md5::{Digest, Md5};
use subtle::ConstantTimeEq;

use crate::crypt_alphabet::CRYPT_ALPHABET;
use crate::PasswordError;

const MAGIC: &[u8] = b"$1$";
/// md5-crypt reads at most 8 salt characters.
const MAX_SALT: usize = 8;
const HASH_CHARS: usize = 22;

/// Checks `password` against `salt$hash`, the part of a `$1$` value after the magic.
pub(crate) fn verify(body: &str, password: &[u8]) -> Result<bool, PasswordError> {
    let (salt, stored) = body
        .split_once('$')
        .ok_or(PasswordError::Malformed("md5-crypt value without hash"))?;
    if stored.len() != HASH_CHARS || !stored.bytes().all(|b| CRYPT_ALPHABET.contains(&b)) {
        return Err(PasswordError::Malformed(
            "md5-crypt hash has the wrong length or alphabet",
        ));
    }
    let salt = salt.as_bytes();
    let salt = salt.get(..MAX_SALT).unwrap_or(salt);
    let computed = md5_crypt(password, salt);
    Ok(computed.ct_eq(stored.as_bytes()).into())
}

/// The 22-character hash part of md5-crypt for `password` and `salt`.
fn md5_crypt(password: &[u8], salt: &[u8]) -> [u8; HASH_CHARS] {
    let alternate = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();

    let mut ctx = Md5::new()
        .chain_update(password)
        .chain_update(MAGIC)
        .chain_update(salt);
    for chunk in password.chunks(16) {
        ctx.update(alternate.get(..chunk.len()).unwrap_or_default());
    }
    // The original walks the bits of the length and, by a long-standing quirk, feeds either a
    // zero byte or the first password byte; every implementation must repeat the quirk.
    let first = password.first().copied().unwrap_or(0);
    let mut bits = password.len();
    while bits != 0 {
        ctx.update([if bits & 1 != 0 { 0 } else { first }]);
        bits >>= 1;
    }
    let mut digest: [u8; 16] = ctx.finalize().into();

    // 1000 rounds, deliberately slow for 1990s hardware.
    for round in 0..1000 {
        let mut ctx = Md5::new();
        if round % 2 == 1 {
            ctx.update(password);
        } else {
            ctx.update(digest);
        }
        if round % 3 != 0 {
            ctx.update(salt);
        }
        if round % 7 != 0 {
            ctx.update(password);
        }
        if round % 2 == 1 {
            ctx.update(digest);
        } else {
            ctx.update(password);
        }
        digest = ctx.finalize().into();
    }

    // Output order: bytes permuted in triples, least significant 6 bits first.
    const GROUPS: [[usize; 3]; 5] = [[0, 6, 12], [1, 7, 13], [2, 8, 14], [3, 9, 15], [4, 10, 5]];
    let mut out = [b'.'; HASH_CHARS];
    let mut pos = 0;
    let mut emit = |mut value: u32, count: usize| {
        for _ in 0..count {
            if let Some(slot) = out.get_mut(pos) {
                *slot = CRYPT_ALPHABET[(value & 63) as usize];
            }
            value >>= 6;
            pos += 1;
        }
    };
    for [a, b, c] in GROUPS {
        emit(
            u32::from(digest[a]) << 16 | u32::from(digest[b]) << 8 | u32::from(digest[c]),
            4,
        );
    }
    emit(u32::from(digest[11]), 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libxcrypt_vectors() {
        // python3 -c "import crypt; print(crypt.crypt(PW, SALT))" on this machine.
        let check = |stored: &str, password: &[u8]| {
            let body = stored.strip_prefix("$1$").unwrap();
            assert!(verify(body, password).unwrap(), "{stored}");
            assert!(!verify(body, b"wrong").unwrap(), "{stored}");
        };
        check("$1$ASLgwzkg$X.XwD2x/AlQ9zU6BfYyGB1", b"correct horse");
        check("$1$$F0Fc2lbYpzr3KKdKkM0Wj.", b"pw");
        check("$1$abcdefgh$M55TzYaaccxVGbptZWaxX/", b"");
        // SALT '$1$abcdefghij': only 8 salt characters count; PW is 40 'a's (several chunks).
        check("$1$abcdefgh$VWPa5IBhJmBLChLT3OjfP1", &[b'a'; 40]);
        assert!(verify("abcdefghij$VWPa5IBhJmBLChLT3OjfP1", &[b'a'; 40]).unwrap());
    }

    #[test]
    fn malformed() {
        let check = |body: &str| {
            assert!(matches!(
                verify(body, b"pw"),
                Err(PasswordError::Malformed(_))
            ))
        };
        check("saltonly");
        check("salt$tooshort");
        check("salt$X.XwD2x/AlQ9zU6BfYyGB1x");
        check("salt$X.XwD2x/AlQ9zU6BfYyG!1");
    }
}
