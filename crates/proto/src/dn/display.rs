//! DN to RFC 4514 string, escaping as §2.4 requires.

use std::fmt::{self, Write};

use super::{Ava, Dn, Rdn};

impl fmt::Display for Dn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, rdn) in self.rdns.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            write!(f, "{rdn}")?;
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
            write!(f, "{ava}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Ava {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.attr)?;
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
        let last = text.chars().count().saturating_sub(1);
        // Specials as hex pairs, the way slapd writes DNs (`cn=Smith\2C John`), so clients see the same text.
        for (i, c) in text.chars().enumerate() {
            match c {
                '"' | '+' | ',' | ';' | '<' | '>' | '\\' | '=' | '\0' => {
                    write!(f, "\\{:02X}", c as u32)?
                }
                ' ' | '#' if i == 0 => write!(f, "\\{:02X}", c as u32)?,
                ' ' if i == last => f.write_str("\\20")?,
                _ => f.write_char(c)?,
            }
        }
        Ok(())
    }
}
