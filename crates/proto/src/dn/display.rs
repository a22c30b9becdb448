//! DN to RFC 4514 string, escaping as §2.4 requires.

use std::fmt::{self, Write};

use super::{Ava, Dn, Rdn};

impl fmt::Display for Dn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rdn) in self.rdns.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            fmt::Display::fmt(rdn, f)?;
        }
        Ok(())
    }
}

impl fmt::Display for Rdn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, ava) in self.avas.iter().enumerate() {
            if i > 0 {
                f.write_char('+')?;
            }
            fmt::Display::fmt(ava, f)?;
        }
        Ok(())
    }
}

impl fmt::Display for Ava {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.attr)?;
        f.write_char('=')?;
        let Ok(text) = std::str::from_utf8(&self.value) else {
            // Binary values only survive as a hexstring of a BER OCTET STRING (RFC 4514 §2.4).
            f.write_char('#')?;
            let mut ber = Vec::with_capacity(self.value.len() + 6);
            canopy_ber::Writer::new(&mut ber)
                .octet_string(canopy_ber::tag::OCTET_STRING, &self.value);
            for b in ber {
                write!(f, "{b:02x}")?;
            }
            return Ok(());
        };
        // Specials as hex pairs, the way slapd writes DNs (`cn=Smith\2C John`), so clients see the same text.
        // They are all ASCII, so the text between them goes out in runs, cut at character boundaries;
        // a space is the last character exactly when it is the last byte.
        let bytes = text.as_bytes();
        let last = bytes.len().saturating_sub(1);
        let mut run = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let special = match b {
                b'"' | b'+' | b',' | b';' | b'<' | b'>' | b'\\' | b'=' | 0 => true,
                b' ' | b'#' => i == 0 || (b == b' ' && i == last),
                _ => false,
            };
            if special {
                f.write_str(text.get(run..i).unwrap_or_default())?;
                write!(f, "\\{b:02X}")?;
                run = i + 1;
            }
        }
        f.write_str(text.get(run..).unwrap_or_default())
    }
}
