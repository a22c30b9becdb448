//! RFC 4515 string representation of filters: a strict parser and the matching Display.

use std::fmt::{self, Write};

use super::{Filter, FilterError, MatchingRuleAssertion, SubstringFilter, MAX_PARSE_DEPTH};

impl Filter {
    /// Parses an RFC 4515 filter string. Attribute options (`cn;lang-en`) and numeric OIDs are
    /// accepted as attribute descriptions; `(&)` and `(|)` are the RFC 4526 absolute true/false.
    pub fn parse(s: &str) -> Result<Filter, FilterError> {
        let mut p = Parser {
            s: s.as_bytes(),
            pos: 0,
        };
        let filter = p.filter(1)?;
        if p.pos != p.s.len() {
            return Err(p.error("unexpected characters after the filter"));
        }
        Ok(filter)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, reason: &'static str) -> FilterError {
        FilterError::Syntax {
            offset: self.pos,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8, reason: &'static str) -> Result<(), FilterError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(reason))
        }
    }

    fn filter(&mut self, depth: usize) -> Result<Filter, FilterError> {
        if depth > MAX_PARSE_DEPTH {
            return Err(FilterError::TooDeep(MAX_PARSE_DEPTH));
        }
        self.expect(b'(', "expected '('")?;
        let filter = match self.peek() {
            Some(b'&') => {
                self.pos += 1;
                Filter::And(self.list(depth)?)
            }
            Some(b'|') => {
                self.pos += 1;
                Filter::Or(self.list(depth)?)
            }
            Some(b'!') => {
                self.pos += 1;
                Filter::Not(Box::new(self.filter(depth + 1)?))
            }
            _ => self.item()?,
        };
        self.expect(b')', "expected ')'")?;
        Ok(filter)
    }

    fn list(&mut self, depth: usize) -> Result<Vec<Filter>, FilterError> {
        let mut list = Vec::new();
        while self.peek() == Some(b'(') {
            list.push(self.filter(depth + 1)?);
        }
        Ok(list)
    }

    /// Reads a run of characters allowed in attribute descriptions and OIDs.
    fn token(&mut self) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b';') {
                self.pos += 1;
            } else {
                break;
            }
        }
        // The run is ASCII, so it is valid UTF-8.
        std::str::from_utf8(self.s.get(start..self.pos).unwrap_or_default()).unwrap_or_default()
    }

    fn item(&mut self) -> Result<Filter, FilterError> {
        let attr = if self.peek() == Some(b':') {
            None
        } else {
            let start = self.pos;
            let attr = self.token().to_owned();
            if !is_attribute_description(&attr) {
                self.pos = start;
                return Err(self.error("invalid attribute description"));
            }
            Some(attr)
        };
        let op = self.peek();
        match (op, attr) {
            (Some(b':'), attr) => self.extensible(attr),
            (Some(b'='), Some(attr)) => {
                self.pos += 1;
                let mut pieces = self.value(true)?;
                if pieces.len() == 1 {
                    return Ok(Filter::Equality(attr, pieces.pop().unwrap_or_default()));
                }
                if pieces.len() == 2 && pieces.iter().all(Vec::is_empty) {
                    return Ok(Filter::Present(attr));
                }
                let final_ = pieces.pop().filter(|p| !p.is_empty());
                let mut rest = pieces.into_iter();
                let initial = rest.next().filter(|p| !p.is_empty());
                let any: Vec<Vec<u8>> = rest.collect();
                if any.iter().any(Vec::is_empty) {
                    return Err(self.error("empty substring between '*'"));
                }
                Ok(Filter::Substrings(SubstringFilter {
                    attr,
                    initial,
                    any,
                    final_,
                }))
            }
            (Some(c @ (b'~' | b'>' | b'<')), Some(attr)) => {
                self.pos += 1;
                self.expect(b'=', "expected '=' after '~', '>' or '<'")?;
                let value = self.single_value()?;
                Ok(match c {
                    b'~' => Filter::Approx(attr, value),
                    b'>' => Filter::GreaterOrEqual(attr, value),
                    _ => Filter::LessOrEqual(attr, value),
                })
            }
            _ => Err(self.error("expected a filter type")),
        }
    }

    fn extensible(&mut self, attr: Option<String>) -> Result<Filter, FilterError> {
        let mut dn_attributes = false;
        let mut rule: Option<String> = None;
        loop {
            self.expect(b':', "expected ':'")?;
            if self.peek() == Some(b'=') {
                self.pos += 1;
                break;
            }
            let start = self.pos;
            let token = self.token().to_owned();
            if rule.is_some() {
                self.pos = start;
                return Err(self.error("expected ':=' after the matching rule"));
            }
            if !dn_attributes && token.eq_ignore_ascii_case("dn") {
                dn_attributes = true;
            } else if is_oid(&token) {
                rule = Some(token);
            } else {
                self.pos = start;
                return Err(self.error("invalid matching rule"));
            }
        }
        if attr.is_none() && rule.is_none() {
            return Err(self.error("extensible match needs an attribute or a matching rule"));
        }
        let value = self.single_value()?;
        Ok(Filter::Extensible(MatchingRuleAssertion {
            rule,
            attr,
            value,
            dn_attributes,
        }))
    }

    fn single_value(&mut self) -> Result<Vec<u8>, FilterError> {
        let mut pieces = self.value(false)?;
        Ok(pieces.pop().unwrap_or_default())
    }

    /// Reads an assertion value up to the closing ')', split at unescaped '*' when allowed.
    fn value(&mut self, allow_star: bool) -> Result<Vec<Vec<u8>>, FilterError> {
        let mut pieces = vec![Vec::new()];
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("unterminated value"));
            };
            match c {
                b')' => return Ok(pieces),
                b'(' | 0 => return Err(self.error("character must be escaped in a value")),
                b'*' if allow_star => {
                    self.pos += 1;
                    pieces.push(Vec::new());
                }
                b'*' => return Err(self.error("'*' not allowed in this value")),
                b'\\' => {
                    let hi = self.s.get(self.pos + 1).copied().and_then(hex_digit);
                    let lo = self.s.get(self.pos + 2).copied().and_then(hex_digit);
                    let (Some(hi), Some(lo)) = (hi, lo) else {
                        return Err(self.error("'\\' must be followed by two hex digits"));
                    };
                    self.pos += 3;
                    if let Some(piece) = pieces.last_mut() {
                        piece.push(hi << 4 | lo);
                    }
                }
                _ => {
                    self.pos += 1;
                    if let Some(piece) = pieces.last_mut() {
                        piece.push(c);
                    }
                }
            }
        }
    }
}

pub(crate) fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// RFC 4512 descr (keystring) or numericoid.
pub(crate) fn is_oid(s: &str) -> bool {
    let bytes = s.as_bytes();
    match bytes.first() {
        Some(c) if c.is_ascii_alphabetic() => bytes
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-'),
        Some(c) if c.is_ascii_digit() => s.split('.').all(|n| {
            !n.is_empty()
                && n.bytes().all(|c| c.is_ascii_digit())
                && (n.len() == 1 || !n.starts_with('0'))
        }),
        _ => false,
    }
}

/// RFC 4512 attributedescription: an OID followed by `;option`s.
pub(crate) fn is_attribute_description(s: &str) -> bool {
    let mut parts = s.split(';');
    parts.next().is_some_and(is_oid)
        && parts.all(|o| !o.is_empty() && o.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'))
}

fn write_value(f: &mut fmt::Formatter<'_>, value: &[u8]) -> fmt::Result {
    for chunk in value.utf8_chunks() {
        for c in chunk.valid().chars() {
            if matches!(c, '\0' | '(' | ')' | '*' | '\\') || c.is_ascii_control() {
                write!(f, "\\{:02x}", c as u32)?;
            } else {
                f.write_char(c)?;
            }
        }
        for b in chunk.invalid() {
            write!(f, "\\{b:02x}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filter::And(list) | Filter::Or(list) => {
                f.write_str(if matches!(self, Filter::And(_)) {
                    "(&"
                } else {
                    "(|"
                })?;
                for item in list {
                    write!(f, "{item}")?;
                }
                f.write_char(')')
            }
            Filter::Not(inner) => write!(f, "(!{inner})"),
            Filter::Equality(attr, value)
            | Filter::GreaterOrEqual(attr, value)
            | Filter::LessOrEqual(attr, value)
            | Filter::Approx(attr, value) => {
                let op = match self {
                    Filter::Equality(..) => "=",
                    Filter::GreaterOrEqual(..) => ">=",
                    Filter::LessOrEqual(..) => "<=",
                    _ => "~=",
                };
                write!(f, "({attr}{op}")?;
                write_value(f, value)?;
                f.write_char(')')
            }
            Filter::Present(attr) => write!(f, "({attr}=*)"),
            // slapd's spelling of such an item in its logs.
            Filter::Undefined => f.write_str("(?=undefined)"),
            Filter::Substrings(sub) => {
                write!(f, "({}=", sub.attr)?;
                if let Some(initial) = &sub.initial {
                    write_value(f, initial)?;
                }
                f.write_char('*')?;
                for any in &sub.any {
                    write_value(f, any)?;
                    f.write_char('*')?;
                }
                if let Some(final_) = &sub.final_ {
                    write_value(f, final_)?;
                }
                f.write_char(')')
            }
            Filter::Extensible(mra) => {
                f.write_char('(')?;
                if let Some(attr) = &mra.attr {
                    f.write_str(attr)?;
                }
                if mra.dn_attributes {
                    f.write_str(":dn")?;
                }
                if let Some(rule) = &mra.rule {
                    write!(f, ":{rule}")?;
                }
                f.write_str(":=")?;
                write_value(f, &mra.value)?;
                f.write_char(')')
            }
        }
    }
}
