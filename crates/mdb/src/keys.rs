//! Byte encodings of the keys and values this layer owns (see docs/design/storage.md).

use crate::error::StoreError;

/// Version of the on-disk layout, stored under [`META_FORMAT`].
pub const FORMAT_VERSION: u32 = 1;

/// Meta key of the layout version (u32 big-endian). Internal meta keys start with 0x00, which
/// `put_meta` refuses, so callers cannot collide with them.
pub(crate) const META_FORMAT: &[u8] = b"\x00format";
/// Meta key of the next entry ID to hand out (u64 big-endian; absent means 1).
pub(crate) const META_NEXT_ID: &[u8] = b"\x00next_id";

/// Every dn2id key starts with this byte, because LMDB forbids the empty key that the root DN has.
pub(crate) const DN_KEY_TAG: u8 = 0x01;

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

/// The stored dn2id key of a caller's DN key.
pub(crate) fn dn_key(caller_key: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(caller_key.len() + 1);
    key.push(DN_KEY_TAG);
    key.extend_from_slice(caller_key);
    key
}

/// The caller's DN key of a stored dn2id key.
pub(crate) fn strip_dn_key(stored: &[u8]) -> Result<&[u8], StoreError> {
    match stored.split_first() {
        Some((&DN_KEY_TAG, rest)) => Ok(rest),
        _ => Err(StoreError::Corrupt {
            table: "dn2id",
            detail: "key without the 0x01 tag byte".to_string(),
        }),
    }
}

pub(crate) fn check_meta_key(key: &[u8]) -> Result<(), StoreError> {
    match key.first() {
        None | Some(0) => Err(StoreError::ReservedMetaKey(key.to_vec())),
        Some(_) => Ok(()),
    }
}

pub(crate) fn check_key_len(len: usize, max: usize) -> Result<(), StoreError> {
    if len == 0 || len > max {
        return Err(StoreError::KeyTooLong { len, max });
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
            assert!(matches!(decode_id("t", bad), Err(StoreError::Corrupt { .. })));
        }
    }

    #[test]
    fn dn_keys() {
        let check = |caller: &[u8], stored: &[u8]| {
            assert_eq!(dn_key(caller), stored);
            assert_eq!(strip_dn_key(stored).unwrap(), caller);
        };
        check(b"", b"\x01");
        check(b"dc=com\x00", b"\x01dc=com\x00");
        check(b"dc=com\x00dc=example\x00", b"\x01dc=com\x00dc=example\x00");
        assert!(strip_dn_key(b"").is_err());
        assert!(strip_dn_key(b"\x02x").is_err());
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
