//! RFC 4514 string to DN, with the leniencies of OpenLDAP's parser (spaces around separators,
//! quoted values, RFC 1779's `;` between RDNs).

use canopy_ber::Reader;

use super::{Ava, Dn, DnError, Rdn};
use crate::filter::string::{hex_digit, is_oid};

impl Dn {
    /// Parses an RFC 4514 DN. Values are unescaped; `#hexstring` values keep the contents of the
    /// BER element they encode.
    pub fn parse(s: &[u8]) -> Result<Dn, DnError> {
        let mut p = Parser { s, pos: 0 };
        p.skip_spaces();
        let mut rdns = Vec::new();
        if p.peek().is_none() {
            return Ok(Dn { rdns });
        }
        loop {
            rdns.push(p.rdn()?);
            match p.peek() {
                None => return Ok(Dn { rdns }),
                // `;` as RFC 1779 wrote it, which OpenLDAP still takes (`cn=a;dc=b`).
                Some(b',' | b';') => p.pos += 1,
                Some(_) => return Err(p.error("expected ',' between RDNs")),
            }
        }
    }
}

impl Rdn {
    /// Parses one RDN (`cn=a+sn=b`).
    pub fn parse(s: &[u8]) -> Result<Rdn, DnError> {
        let mut p = Parser { s, pos: 0 };
        let rdn = p.rdn()?;
        if p.peek().is_some() {
            return Err(p.error("unexpected characters after the RDN"));
        }
        Ok(rdn)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, reason: &'static str) -> DnError {
        DnError::Syntax {
            offset: self.pos,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn rdn(&mut self) -> Result<Rdn, DnError> {
        let mut avas = vec![self.ava()?];
        while self.peek() == Some(b'+') {
            self.pos += 1;
            avas.push(self.ava()?);
        }
        Ok(Rdn { avas })
    }

    fn ava(&mut self) -> Result<Ava, DnError> {
        self.skip_spaces();
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
        {
            self.pos += 1;
        }
        let attr = std::str::from_utf8(self.s.get(start..self.pos).unwrap_or_default())
            .unwrap_or_default();
        if !is_oid(attr) {
            self.pos = start;
            return Err(self.error("invalid attribute type"));
        }
        let attr = attr.to_owned();
        self.skip_spaces();
        if self.peek() != Some(b'=') {
            return Err(self.error("expected '='"));
        }
        self.pos += 1;
        self.skip_spaces();
        let value = match self.peek() {
            Some(b'#') => self.hex_value()?,
            Some(b'"') => self.quoted_value()?,
            _ => self.string_value()?,
        };
        Ok(Ava { attr, value })
    }

    /// `#` hexpairs: a BER element whose primitive contents are the value.
    fn hex_value(&mut self) -> Result<Vec<u8>, DnError> {
        let start = self.pos;
        self.pos += 1;
        let mut ber = Vec::new();
        while let Some(hi) = self.peek().and_then(hex_digit) {
            let Some(lo) = self.s.get(self.pos + 1).copied().and_then(hex_digit) else {
                self.pos += 1;
                return Err(self.error("odd number of hex digits"));
            };
            ber.push(hi << 4 | lo);
            self.pos += 2;
        }
        self.skip_spaces();
        if !matches!(self.peek(), None | Some(b',' | b'+' | b';')) {
            return Err(self.error("invalid character in hex string"));
        }
        let mut reader = Reader::new(&ber);
        match reader.read_tlv() {
            Ok((tag, contents)) if tag & canopy_ber::tag::CONSTRUCTED == 0 && reader.is_empty() => {
                Ok(contents.to_vec())
            }
            _ => Err(DnError::Syntax {
                offset: start,
                reason: "hex string is not one primitive BER element",
            }),
        }
    }

    /// A `"`-quoted value (RFC 1779 style, still accepted by OpenLDAP).
    fn quoted_value(&mut self) -> Result<Vec<u8>, DnError> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated quoted value")),
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        self.skip_spaces();
        if !matches!(self.peek(), None | Some(b',' | b'+' | b';')) {
            return Err(self.error("unexpected character after quoted value"));
        }
        self.utf8(out)
    }

    fn string_value(&mut self) -> Result<Vec<u8>, DnError> {
        let mut out = Vec::new();
        // Unescaped trailing spaces are dropped; `keep` is the length up to the last significant byte.
        let mut keep = 0;
        loop {
            match self.peek() {
                None | Some(b',' | b'+' | b';') => break,
                Some(b'\\') => {
                    self.escape(&mut out)?;
                    keep = out.len();
                }
                Some(b'"' | b'<' | b'>' | 0) => return Err(self.error("character must be escaped")),
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                    if c != b' ' {
                        keep = out.len();
                    }
                }
            }
        }
        out.truncate(keep);
        self.utf8(out)
    }

    /// Reads `\X` or `\XX` at the current position into `out`.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), DnError> {
        let next = self.s.get(self.pos + 1).copied();
        let hi = next.and_then(hex_digit);
        let lo = self.s.get(self.pos + 2).copied().and_then(hex_digit);
        if let (Some(hi), Some(lo)) = (hi, lo) {
            out.push(hi << 4 | lo);
            self.pos += 3;
            return Ok(());
        }
        match next {
            Some(c @ (b'"' | b'+' | b',' | b';' | b'<' | b'>' | b'\\' | b' ' | b'#' | b'=')) => {
                out.push(c);
                self.pos += 2;
                Ok(())
            }
            _ => Err(self.error("invalid escape sequence")),
        }
    }

    fn utf8(&self, value: Vec<u8>) -> Result<Vec<u8>, DnError> {
        match std::str::from_utf8(&value) {
            Ok(_) => Ok(value),
            Err(_) => Err(self.error("value is not valid UTF-8")),
        }
    }
}
