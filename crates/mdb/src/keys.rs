//! Byte encodings of the keys and values this layer owns (see docs/design/storage.md).

use crate::error::StoreError;

/// Version of the on-disk layout, stored under [`META_FORMAT`].
pub const FORMAT_VERSION: u32 = 2;
/// The layout versions this build opens: version 1 is version 2 without chunked values (`id2chunk`), and
/// is marked 2 when opened for writing.
pub const READABLE_FORMATS: std::ops::RangeInclusive<u32> = 1..=FORMAT_VERSION;

/// Meta key of the layout version (u32 big-endian). Internal meta keys start with 0x00, which
/// `put_meta` refuses, so callers cannot collide with them.
pub(crate) const META_FORMAT: &[u8] = b"\x00format";
/// Meta key of the next entry ID to hand out (u64 big-endian; absent means 1).
pub(crate) const META_NEXT_ID: &[u8] = b"\x00next_id";

pub(crate) fn id_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

pub(crate) fn decode_id(table: &'static str, bytes: &[u8]) -> Result<u64, StoreError> {
    match <[u8; 8]>::try_from(bytes) {
        Ok(raw) => Ok(u64::from_be_bytes(raw)),
        Err(_) => Err(StoreError::Corrupt {
            table,
            detail: format!("expected an 8-byte ID, found {} bytes", bytes.len()),
        }),
    }
}

pub(crate) fn check_meta_key(key: &[u8]) -> Result<(), StoreError> {
    match key.first() {
        None | Some(0) => Err(StoreError::ReservedMetaKey(key.to_vec())),
        Some(_) => Ok(()),
    }
}

/// LMDB refuses empty keys and keys over its limit; say which, before LMDB fails the transaction.
pub(crate) fn check_key(key: &[u8], max: usize) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::EmptyKey);
    }
    if key.len() > max {
        return Err(StoreError::KeyTooLong {
            len: key.len(),
            max,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_round_trip() {
        for id in [0u64, 1, 255, 256, u64::MAX] {
            assert_eq!(decode_id("t", &id_key(id)).unwrap(), id);
        }
        // Big-endian so that byte order is numeric order.
        assert!(id_key(255) < id_key(256));
    }

    #[test]
    fn decode_id_rejects_wrong_sizes() {
        for bad in [&b""[..], b"1234567", b"123456789"] {
            assert!(matches!(
                decode_id("t", bad),
                Err(StoreError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn key_limits() {
        let check = |key: &[u8], max: usize, ok: bool| {
            assert_eq!(check_key(key, max).is_ok(), ok, "{key:?}")
        };
        check(b"", 4, false);
        check(b"a", 4, true);
        check(b"abcd", 4, true);
        check(b"abcde", 4, false);
        assert!(matches!(check_key(b"", 4), Err(StoreError::EmptyKey)));
        assert!(matches!(
            check_key(b"abcde", 4),
            Err(StoreError::KeyTooLong { len: 5, max: 4 })
        ));
    }

    #[test]
    fn meta_keys() {
        let check = |key: &[u8], ok: bool| assert_eq!(check_meta_key(key).is_ok(), ok, "{key:?}");
        check(b"", false);
        check(b"\x00format", false);
        check(b"suffix", true);
        check(b"\x01", true);
    }
}
