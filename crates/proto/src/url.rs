//! Percent-encoding of LDAP URLs (RFC 4516, RFC 3986 §2.1) and `ldapi://` paths.

/// Characters an LDAP URL's DN carries as they are (RFC 3986 unreserved, sub-delims, ":" "@" "/").
fn is_url_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b)
}

/// Percent-encodes every byte outside the URL-safe set (a DN in an LDAP URL).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if is_url_safe(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes, keeping a malformed escape as it is (stored `ref` values are not checked).
pub fn percent_decode_lossy(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(value)) => {
                out.push(value);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decodes `%XX` escapes (ldapi paths, LDAP URLs) strictly: a bad escape or a result that is not
/// UTF-8 is an error.
pub fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .ok_or_else(|| format!("bad escape in {s:?}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape in {s:?}"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("bad UTF-8 in {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_round_trip() {
        for s in ["", "cn=x", "a b", "é%", "%zz", "%4"] {
            assert_eq!(percent_decode_lossy(&percent_encode(s)), s);
            assert_eq!(percent_decode(&percent_encode(s)).as_deref(), Ok(s));
        }
        assert_eq!(percent_decode_lossy("%41%4a%4A"), "AJJ");
        assert_eq!(percent_decode_lossy("%zz%4"), "%zz%4");
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%ff").is_err());
    }
}
