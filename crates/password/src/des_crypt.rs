//! Traditional DES crypt(3) and its bigcrypt extension, verify only: what Debian's slappasswd
//! writes for `{CRYPT}` by default, so directories built with it are full of these.
//!
//! The DES tables are those of FIPS 46-3; bits are numbered 1..=n from the most significant end,
//! as the standard numbers them.

use subtle::ConstantTimeEq;

use crate::crypt_alphabet::CRYPT_ALPHABET;

/// Length of one DES crypt result: 2 salt characters and 11 for the 64-bit block.
pub(crate) const DES_CHARS: usize = 13;
/// Length of each further bigcrypt segment.
pub(crate) const SEGMENT_CHARS: usize = 11;
/// libxcrypt hashes at most 16 segments (128 password bytes).
const MAX_SEGMENTS: usize = 16;

#[rustfmt::skip]
const IP: [u8; 64] = [
    58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4,
    62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
    57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3,
    61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
];

#[rustfmt::skip]
const FP: [u8; 64] = [
    40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31,
    38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29,
    36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19, 59, 27,
    34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25,
];

#[rustfmt::skip]
const E: [u8; 48] = [
    32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
    16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1,
];

#[rustfmt::skip]
const P: [u8; 32] = [
    16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10,
    2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25,
];

#[rustfmt::skip]
const PC1: [u8; 56] = [
    57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18,
    10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
    63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22,
    14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
];

#[rustfmt::skip]
const PC2: [u8; 48] = [
    14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
    41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32,
];

const SHIFTS: [u32; 16] = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];

#[rustfmt::skip]
const S: [[u8; 64]; 8] = [
    [14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7,
     0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
     4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0,
     15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13],
    [15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10,
     3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
     0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15,
     13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9],
    [10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8,
     13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
     13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7,
     1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12],
    [7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15,
     13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
     10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4,
     3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14],
    [2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9,
     14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
     4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14,
     11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3],
    [12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11,
     10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
     9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6,
     4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13],
    [4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1,
     13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
     1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2,
     6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12],
    [13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7,
     1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
     7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8,
     2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11],
];

/// Output bit i is input bit `table[i]`, for an input `width` bits wide.
fn permute(input: u64, width: u32, table: &[u8]) -> u64 {
    table.iter().fold(0, |out, &pos| {
        (out << 1) | ((input >> (width - u32::from(pos))) & 1)
    })
}

fn subkeys(key: u64) -> [u64; 16] {
    const MASK28: u64 = (1 << 28) - 1;
    let cd = permute(key, 64, &PC1);
    let (mut c, mut d) = (cd >> 28, cd & MASK28);
    let mut keys = [0u64; 16];
    for (k, shift) in keys.iter_mut().zip(SHIFTS) {
        c = ((c << shift) | (c >> (28 - shift))) & MASK28;
        d = ((d << shift) | (d >> (28 - shift))) & MASK28;
        *k = permute((c << 28) | d, 56, &PC2);
    }
    keys
}

fn feistel(r: u32, subkey: u64, e: &[u8; 48]) -> u32 {
    let x = permute(u64::from(r), 32, e) ^ subkey;
    let mut out = 0u64;
    for (i, sbox) in S.iter().enumerate() {
        let six = (x >> (42 - 6 * i)) & 0x3f;
        let row = ((six & 0x20) >> 4) | (six & 1);
        let col = (six >> 1) & 0xf;
        let value = sbox.get((row * 16 + col) as usize).copied().unwrap_or(0);
        out = (out << 4) | u64::from(value);
    }
    permute(out, 32, &P) as u32
}

fn encrypt(block: u64, keys: &[u64; 16], e: &[u8; 48]) -> u64 {
    let b = permute(block, 64, &IP);
    let (mut l, mut r) = ((b >> 32) as u32, b as u32);
    for &k in keys {
        let next = l ^ feistel(r, k, e);
        l = r;
        r = next;
    }
    permute((u64::from(r) << 32) | u64::from(l), 64, &FP)
}

/// Index of a crypt alphabet character (its 6-bit value); callers have checked the alphabet.
fn value_of(c: u8) -> u32 {
    CRYPT_ALPHABET.iter().position(|&a| a == c).unwrap_or(0) as u32
}

/// One DES crypt: 25 encryptions of a zero block under the first 8 password bytes, with the
/// E expansion perturbed by the 12-bit salt. Returns the 11 hash characters.
fn des_segment(key_bytes: &[u8], salt: [u8; 2]) -> [u8; SEGMENT_CHARS] {
    // Seven bits per character, shifted into the top of each key byte (parity bit unused).
    let key = (0..8).fold(0u64, |key, i| {
        let c = key_bytes.get(i).copied().unwrap_or(0);
        (key << 8) | u64::from(c << 1)
    });
    let salt_bits = value_of(salt[0]) | (value_of(salt[1]) << 6);
    let mut e = E;
    for bit in 0..12 {
        if salt_bits & (1 << bit) != 0 {
            e.swap(bit, bit + 24);
        }
    }
    let keys = subkeys(key);
    let block = (0..25).fold(0u64, |block, _| encrypt(block, &keys, &e));
    // 64 bits plus two zero bits make 11 characters, most significant first.
    let mut out = [b'.'; SEGMENT_CHARS];
    for (i, slot) in out.iter_mut().enumerate() {
        let shift = 58 - 6 * i as i32;
        let six = if shift >= 0 {
            block >> shift
        } else {
            block << -shift
        };
        *slot = CRYPT_ALPHABET[(six & 0x3f) as usize];
    }
    out
}

/// Checks `password` against a DES (13 characters) or bigcrypt (13 + 11n) string. Callers have
/// checked that `stored` has such a length and only crypt alphabet characters.
pub(crate) fn verify(stored: &[u8], password: &[u8]) -> bool {
    let (Some(&s0), Some(&s1)) = (stored.first(), stored.get(1)) else {
        return false;
    };
    let mut computed = vec![s0, s1];
    let mut salt = [s0, s1];
    let segments = if stored.len() == DES_CHARS {
        // Traditional DES reads only the first 8 bytes: longer passwords still match.
        1
    } else {
        password.len().div_ceil(8).clamp(1, MAX_SEGMENTS)
    };
    let mut chunks = password.chunks(8);
    for _ in 0..segments {
        let hash = des_segment(chunks.next().unwrap_or_default(), salt);
        salt = [hash[0], hash[1]];
        computed.extend_from_slice(&hash);
    }
    computed.ct_eq(stored).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_des_known_answer() {
        // The worked example of DES found in most textbooks (salt 0 leaves E unchanged).
        let keys = subkeys(0x1334_5779_9BBC_DFF1);
        assert_eq!(
            encrypt(0x0123_4567_89AB_CDEF, &keys, &E),
            0x85E8_1354_0F0A_B405
        );
    }

    #[test]
    fn libxcrypt_vectors() {
        // python3: ctypes.CDLL("libcrypt.so.1").crypt(PW, SETTING) on this machine.
        let check = |password: &[u8], stored: &str| {
            assert!(verify(stored.as_bytes(), password), "{stored}");
            assert!(!verify(stored.as_bytes(), b"wrong"), "{stored}");
        };
        check(b"correct horse", "i2QVfcYfjAVZg");
        check(b"correct ", "i2QVfcYfjAVZg");
        check(b"", "abmF1QH4PEr.E");
        check(b"ia", "abha4dQFjfS9o");
        // Bytes above 0x7f lose their top bit.
        check(b"\xe9\xff\x80abc", "ab2Xwuxxu3p6o");
        // bigcrypt, SETTING being a longer string (slappasswd's default {CRYPT}).
        check(b"correct horse", "i2QVfcYfjAVZgFfBWT/qcvIo");
        check(
            b"correct horse and more text here",
            "i2QVfcYfjAVZg6PrCacDQwj2pERN6AgpNXkQe20kSZgLuQ",
        );
        // slappasswd -h '{CRYPT}' -s 'a password that is longer than thirty two characters'
        check(
            b"a password that is longer than thirty two characters",
            "VFR3z8VYYRCTsIBjyBxZ/Hr24SySgSJ.Vk.D82wcStKqMYSQSU.CffEFgmwwQIMFpiJkZwkYCI/1GGo",
        );
        // PW = bytes 33..123 then 60 'x' (150 bytes), SETTING 'abxxxxxxxxxxxxxx': libxcrypt
        // stops after 16 segments, 128 bytes.
        let mut long: Vec<u8> = (33..123).collect();
        long.extend_from_slice(&[b'x'; 60]);
        let stored = "abiRtYIveiFM65RCcc2pG45Et/KiQU5rh9.JMX4xws9CVwVC28lek7vDUgP1zGI1nTm..4VBIX29jZgsDnATodTngULjuD1ghknGgNrooJgKpcLE3XqLqnwl2TI1jq8flTxwigJk71k.2J0HINc69oYZ.TtQFzuK.4ASRwsXt35x3wfjY.";
        check(&long, stored);
        check(&long[..128], stored);
    }

    #[test]
    fn bigcrypt_needs_the_whole_password() {
        assert!(!verify(b"i2QVfcYfjAVZgFfBWT/qcvIo", b"correct "));
        assert!(!verify(b"i2QVfcYfjAVZgFfBWT/qcvIo", b"correct horse plus"));
    }
}
