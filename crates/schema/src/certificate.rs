//! RFC 4523 certificateExactMatch as slapd implements it: a stored certificate and an asserted serial
//! number and issuer brought to one normal form, `{ serialNumber 'HEX'H, issuer rdnSequence:"DN" }`.

use crate::error::InvalidValue;
use crate::schema::Schema;
use crate::x509;

impl Schema {
    /// The normal form of a stored certificate (DER) under certificateExactMatch: its serial number and
    /// its issuer, normalized as a DN. None when the value is no certificate Canopy can read, or its
    /// issuer uses an attribute type the schema does not know.
    pub(crate) fn certificate_value(&self, der: &[u8]) -> Option<Vec<u8>> {
        let (serial, issuer) = x509::serial_and_issuer(der)?;
        let issuer = self.normalize_dn_value(issuer.as_bytes()).ok()?;
        Some(normal_form(&hex_of_content(&serial), &issuer))
    }

    /// The normal form of a CertificateExactAssertion (RFC 4523 §2.1): GSER
    /// `{ serialNumber N, issuer rdnSequence:"DN" }` (the two in either order, `rdnSequence:` optional,
    /// `""` for a quote inside the DN) or slapd's older `N$DN`. The serial number is decimal, `0x` hex or
    /// `'...'H` hex, without leading zeros, as slapd's `checkNum` accepts it.
    pub fn certificate_assertion(&self, value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
        let text = std::str::from_utf8(value)
            .map_err(|_| InvalidValue::new("certificate assertion is not UTF-8"))?;
        let (serial, issuer) = parse_assertion(text)?;
        let issuer = self.normalize_dn_value(issuer.as_bytes())?;
        Ok(normal_form(&serial, &issuer))
    }
}

fn normal_form(serial: &str, issuer: &[u8]) -> Vec<u8> {
    let mut out = format!("{{ serialNumber '{serial}'H, issuer rdnSequence:\"").into_bytes();
    out.extend_from_slice(issuer);
    out.extend_from_slice(b"\" }");
    out
}

fn invalid() -> InvalidValue {
    InvalidValue::new("not a certificate exact assertion")
}

/// The serial number and the issuer DN (quotes undoubled) of an assertion.
fn parse_assertion(text: &str) -> Result<(String, String), InvalidValue> {
    if text.len() < 3 {
        return Err(invalid());
    }
    if !(text.starts_with('{') && text.ends_with('}')) {
        // slapd's old form: decimal digits (leading zeros ignored), '$', the issuer.
        let (serial, issuer) = text.split_once('$').ok_or_else(invalid)?;
        if serial.is_empty() || !serial.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        return Ok((hex_of_decimal(serial, false), issuer.to_string()));
    }
    let mut rest = &text[1..text.len() - 1];
    let (mut serial, mut issuer) = (None, None);
    loop {
        rest = rest.trim_start_matches(' ');
        if let Some(after) = strip_prefix_ignore_case(rest, "issuer") {
            if issuer.is_some() {
                return Err(invalid());
            }
            let after = after.strip_prefix(' ').ok_or_else(invalid)?;
            let after = after.trim_start_matches(' ');
            let after = strip_prefix_ignore_case(after, "rdnSequence:").unwrap_or(after);
            let body = after.strip_prefix('"').ok_or_else(invalid)?;
            let (dn, tail) = quoted(body).ok_or_else(invalid)?;
            issuer = Some(dn);
            rest = tail;
        } else if let Some(after) = strip_prefix_ignore_case(rest, "serialNumber") {
            if serial.is_some() {
                return Err(invalid());
            }
            let after = after.strip_prefix(' ').ok_or_else(invalid)?;
            let after = after.trim_start_matches(' ');
            let (hex, tail) = number(after).ok_or_else(invalid)?;
            serial = Some(hex);
            rest = tail;
        } else {
            return Err(invalid());
        }
        rest = rest.trim_start_matches(' ');
        if let (Some(serial), Some(issuer)) = (&serial, &issuer) {
            return if rest.is_empty() {
                Ok((serial.clone(), issuer.clone()))
            } else {
                Err(invalid())
            };
        }
        rest = rest.strip_prefix(',').ok_or_else(invalid)?;
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A GSER string's body up to its closing quote (`""` is a quote): the text and what follows.
fn quoted(body: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '"' {
            out.push(c);
            continue;
        }
        if chars.peek().map(|&(_, n)| n) == Some('"') {
            chars.next();
            out.push('"');
            continue;
        }
        return Some((out, &body[i + 1..]));
    }
    None
}

/// A serial number as slapd's `checkNum` reads it: the canonical hex of its value and what follows.
fn number(s: &str) -> Option<(String, &str)> {
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (digits, hex, tail) = if let Some(rest) = strip_prefix_ignore_case(s, "0x") {
        let end = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        (&rest[..end], true, &rest[end..])
    } else if let Some(rest) = s.strip_prefix('\'') {
        let end = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        let tail = rest[end..].strip_prefix("'H")?;
        (&rest[..end], true, tail)
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        (&s[..end], false, &s[end..])
    };
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    let text = if hex {
        canonical_hex(&digits.to_ascii_uppercase(), negative)
    } else {
        hex_of_decimal(digits, negative)
    };
    Some((text, tail))
}

/// The content octets of a DER INTEGER as slapd's `slap_bin2hex` writes them: a leading zero octet
/// before a high bit dropped, upper-case hex, no leading zero nibble.
fn hex_of_content(bytes: &[u8]) -> String {
    let bytes = match bytes {
        [0, next, ..] if next & 0x80 != 0 => &bytes[1..],
        _ => bytes,
    };
    let hex: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
    canonical_hex(&hex, false)
}

fn canonical_hex(hex: &str, negative: bool) -> String {
    let trimmed = hex.trim_start_matches('0');
    let body = if trimmed.is_empty() { "0" } else { trimmed };
    if negative {
        format!("-{body}")
    } else {
        body.to_string()
    }
}

/// A decimal number's canonical hex.
fn hex_of_decimal(digits: &str, negative: bool) -> String {
    // Big-endian base-256 digits, by repeated multiply-and-add.
    let mut bytes: Vec<u8> = vec![0];
    for d in digits.bytes() {
        let mut carry = u32::from(d - b'0');
        for byte in bytes.iter_mut().rev() {
            let v = u32::from(*byte) * 10 + carry;
            *byte = (v & 0xff) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            bytes.insert(0, (carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
    canonical_hex(&hex, negative)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertion_forms() {
        let dn = "o=Example,cn=Alice Adams";
        let want = (
            "AC1283C108081B09EA9684C1AAF5533B756886B".to_string(),
            dn.to_string(),
        );
        for text in [
            "{ serialNumber 0xAC1283C108081B09EA9684C1AAF5533B756886B, issuer rdnSequence:\"o=Example,cn=Alice Adams\" }",
            "{issuer \"o=Example,cn=Alice Adams\",serialNumber 61397456461868983529371523187255419072905906283}",
            "{ SERIALNUMBER 'ac1283c108081b09ea9684c1aaf5533b756886b'H, ISSUER rdnSequence:\"o=Example,cn=Alice Adams\" }",
            "0061397456461868983529371523187255419072905906283$o=Example,cn=Alice Adams",
        ] {
            assert_eq!(parse_assertion(text).unwrap(), want, "{text}");
        }
        assert_eq!(
            parse_assertion("{ serialNumber 0, issuer \"cn=a \"\"b\"\"\" }").unwrap(),
            ("0".to_string(), "cn=a \"b\"".to_string())
        );
        for bad in [
            "",
            "{}",
            "{ serialNumber 0x0A, issuer \"cn=a\" }",
            "{ serialNumber 012, issuer \"cn=a\" }",
            "{ serialNumber 12 }",
            "{ serialNumber 12, issuer \"cn=a\", x }",
            "{ serialNumber 12, serialNumber 13 }",
            "{ serialNumber 12, issuer \"cn=a }",
            "{ serialNumber 12,issuer cn=a }",
            "12x$cn=a",
            "no dollar",
        ] {
            assert!(parse_assertion(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serial_octets_as_slapd_prints_them() {
        assert_eq!(hex_of_content(&[0x00, 0x8f]), "8F");
        assert_eq!(hex_of_content(&[0x0a, 0xc1]), "AC1");
        assert_eq!(hex_of_content(&[0x00]), "0");
        assert_eq!(hex_of_decimal("143", false), "8F");
        assert_eq!(hex_of_decimal("0", false), "0");
        assert_eq!(hex_of_decimal("256", false), "100");
    }
}
