//! The set language's parser: the syntax slapd's evaluator accepts, without the schema (attribute
//! types are checked by `SetExpr::check`).

use super::{AttrPath, SetExpr, SetOp, MAX_DEPTH, MAX_PARENT_LEVEL};

/// Parses a set expression's syntax; the error says what was expected and where (a byte offset).
pub fn parse_syntax(text: &str) -> Result<SetExpr, String> {
    let mut parser = Parser {
        text: text.as_bytes(),
        at: 0,
    };
    let expr = parser.expr(0)?;
    parser.blanks();
    match parser.peek() {
        None => Ok(expr),
        Some(b')') => Err(parser.fail("a \")\" without its \"(\"")),
        Some(_) => Err(parser.fail("an operator (|, & or +)")),
    }
}

/// slapd's AD_CHAR: what an attribute description (a name or an OID, with options) holds after its
/// first character, a letter or a digit.
fn desc_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b';' | b'-' | b'.')
}

struct Parser<'s> {
    text: &'s [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.at + ahead).copied()
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn fail(&self, expected: &str) -> String {
        match self.peek() {
            None => format!("expected {expected} at the end"),
            Some(_) => {
                let rest = String::from_utf8_lossy(&self.text[self.at..]);
                format!("expected {expected} at offset {}: {rest:?}", self.at)
            }
        }
    }

    /// term (op term)*, left to right.
    fn expr(&mut self, depth: usize) -> Result<SetExpr, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "parentheses nested more than {MAX_DEPTH} deep at offset {}",
                self.at
            ));
        }
        let mut left = self.term(depth)?;
        loop {
            self.blanks();
            let op = match self.peek() {
                Some(b'|') => SetOp::Union,
                Some(b'&') => SetOp::Intersection,
                Some(b'+') => SetOp::Concat,
                _ => return Ok(left),
            };
            self.at += 1;
            let right = self.term(depth)?;
            left = SetExpr::Join(Box::new(left), op, Box::new(right));
        }
    }

    /// A primary followed by path steps.
    fn term(&mut self, depth: usize) -> Result<SetExpr, String> {
        self.blanks();
        let mut expr = match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let inner = self.expr(depth + 1)?;
                self.blanks();
                if self.peek() != Some(b')') {
                    return Err(self.fail("\")\""));
                }
                self.at += 1;
                inner
            }
            Some(b'[') => {
                let start = self.at + 1;
                let Some(len) = self.text[start..].iter().position(|b| *b == b']') else {
                    return Err(self.fail("a \"]\" closing the literal"));
                };
                self.at = start + len + 1;
                SetExpr::Literal(self.text[start..start + len].to_vec())
            }
            Some(c) if c.is_ascii_alphanumeric() => {
                let start = self.at;
                match self.name() {
                    "this" => SetExpr::This,
                    "user" => SetExpr::User,
                    _ => {
                        self.at = start;
                        return Err(self.fail("this, user, a [literal] or \"(\" (an attribute needs a \"/\" before it)"));
                    }
                }
            }
            _ => return Err(self.fail("this, user, a [literal] or \"(\"")),
        };
        loop {
            self.blanks();
            match (self.peek(), self.peek_at(1)) {
                (Some(b'/'), _) => self.at += 1,
                (Some(b'-'), Some(b'>')) => self.at += 2,
                _ => return Ok(expr),
            }
            self.blanks();
            expr = self.step(expr)?;
        }
    }

    /// What follows a `/`: `-*`, `-N`, or an attribute description with an optional `*`.
    fn step(&mut self, of: SetExpr) -> Result<SetExpr, String> {
        let of = Box::new(of);
        match (self.peek(), self.peek_at(1)) {
            (Some(b'-'), Some(b'*')) => {
                self.at += 2;
                return Ok(SetExpr::Ancestors(of));
            }
            (Some(b'-'), Some(d)) if d.is_ascii_digit() => {
                self.at += 1;
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.at += 1;
                }
                let digits = std::str::from_utf8(&self.text[start..self.at]).unwrap_or("0");
                let level = digits
                    .parse::<usize>()
                    .unwrap_or(usize::MAX)
                    .min(MAX_PARENT_LEVEL);
                return Ok(match level {
                    0 => *of,
                    n => SetExpr::Parent(of, n),
                });
            }
            _ => {}
        }
        if !self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            return Err(self.fail("an attribute name, -N or -* after \"/\""));
        }
        let start = self.at;
        let desc = self.name().to_string();
        if desc == "this" || desc == "user" {
            self.at = start;
            return Err(self.fail("an attribute name (this and user start an expression)"));
        }
        let mut parts = desc.split(';');
        let name = parts.next().unwrap_or_default().to_string();
        let mut options: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
        if options.iter().any(String::is_empty) {
            self.at = start;
            return Err(self.fail("an attribute description"));
        }
        options.sort();
        let closure = self.peek() == Some(b'*');
        if closure {
            self.at += 1;
        }
        Ok(SetExpr::Chase {
            of,
            attr: AttrPath {
                text: desc,
                name,
                options,
            },
            closure,
        })
    }

    /// A name: a letter or digit, then letters, digits, `;`, `.` and `-` (a `-` not followed by one
    /// of them, as in `->`, ends it).
    fn name(&mut self) -> &str {
        let start = self.at;
        self.at += 1;
        while let Some(c) = self.peek() {
            if !desc_char(c) || (c == b'-' && !self.peek_at(1).is_some_and(desc_char)) {
                break;
            }
            self.at += 1;
        }
        std::str::from_utf8(&self.text[start..self.at]).unwrap_or_default()
    }
}
