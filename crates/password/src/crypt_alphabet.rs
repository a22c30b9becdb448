//! The crypt(3) base-64 alphabet, shared by every crypt(3) method (SHA-crypt, md5-crypt, DES).

/// The crypt(3) base-64 alphabet, used for salts and hashes alike.
pub(crate) const CRYPT_ALPHABET: &[u8; 64] =
    b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
