//! RFC 4512 §4.1 description parser (AttributeTypeDescription, ObjectClassDescription,
//! SyntaxDescription) and the
//! front ends that find descriptions in OpenLDAP `.schema` and `.ldif` files.

mod files;

pub(crate) use files::{statements, Directive, Statement};

use crate::model::{ObjectClassKind, Usage};

/// A parse failure at a byte offset of the description text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DescError {
    pub offset: usize,
    pub reason: String,
}

/// An attribute type description with its references still unresolved (names, macros).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawAttributeType {
    pub oid: String,
    pub names: Vec<String>,
    pub desc: Option<String>,
    pub obsolete: bool,
    pub sup: Option<String>,
    pub equality: Option<String>,
    pub ordering: Option<String>,
    pub substr: Option<String>,
    pub syntax: Option<String>,
    pub single_value: bool,
    pub collective: bool,
    pub no_user_modification: bool,
    pub usage: Option<Usage>,
    pub extensions: Vec<(String, Vec<String>)>,
}

/// An object class description with its references still unresolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawObjectClass {
    pub oid: String,
    pub names: Vec<String>,
    pub desc: Option<String>,
    pub obsolete: bool,
    pub sup: Vec<String>,
    pub kind: ObjectClassKind,
    pub must: Vec<String>,
    pub may: Vec<String>,
    pub extensions: Vec<(String, Vec<String>)>,
}

/// An LDAP syntax description (`ldapsyntax` directive, `olcLdapSyntaxes` value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawSyntax {
    pub oid: String,
    pub desc: Option<String>,
    pub extensions: Vec<(String, Vec<String>)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Dollar,
    Quoted(String),
    Word(String),
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn err(&self, offset: usize, reason: impl Into<String>) -> DescError {
        DescError {
            offset,
            reason: reason.into(),
        }
    }

    /// The next token and its offset; `None` at the end.
    fn next(&mut self) -> Result<Option<(usize, Token)>, DescError> {
        let rest = self.text.get(self.pos..).unwrap_or_default();
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let start = self.pos;
        let Some(c) = trimmed.chars().next() else {
            return Ok(None);
        };
        let token = match c {
            '(' => {
                self.pos += 1;
                Token::Open
            }
            ')' => {
                self.pos += 1;
                Token::Close
            }
            '$' => {
                self.pos += 1;
                Token::Dollar
            }
            '\'' => {
                let body = trimmed.get(1..).unwrap_or_default();
                let Some(end) = body.find('\'') else {
                    return Err(self.err(start, "unterminated quoted string"));
                };
                let raw = body.get(..end).unwrap_or_default();
                self.pos += end + 2;
                Token::Quoted(unescape(raw).map_err(|r| self.err(start, r))?)
            }
            _ => {
                let end = trimmed
                    .find(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '$' | '\''))
                    .unwrap_or(trimmed.len());
                self.pos += end;
                Token::Word(trimmed.get(..end).unwrap_or_default().to_string())
            }
        };
        Ok(Some((start, token)))
    }
}

/// RFC 4512 qdstring escapes: `\27` for `'` and `\5C` for `\` (any `\XX` is accepted).
fn unescape(raw: &str) -> Result<String, String> {
    if !raw.contains('\\') {
        return Ok(raw.to_string());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'\\' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("bad escape in quoted string (expected \\XX)")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "quoted string is not valid UTF-8".to_string())
}

struct Parser<'a> {
    lexer: Lexer<'a>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            lexer: Lexer { text, pos: 0 },
        }
    }

    fn end_offset(&self) -> usize {
        self.lexer.text.len()
    }

    fn next(&mut self) -> Result<(usize, Token), DescError> {
        let end = self.end_offset();
        self.lexer.next()?.ok_or(DescError {
            offset: end,
            reason: "unexpected end of definition (missing ')'?)".into(),
        })
    }

    /// A bare word; a quoted one is accepted too, as OpenLDAP does for OIDs.
    fn word(&mut self, what: &str) -> Result<String, DescError> {
        match self.next()? {
            (_, Token::Word(w)) | (_, Token::Quoted(w)) => Ok(w),
            (offset, t) => Err(DescError {
                offset,
                reason: format!("expected {what}, found {}", describe(&t)),
            }),
        }
    }

    fn quoted(&mut self, what: &str) -> Result<String, DescError> {
        match self.next()? {
            (_, Token::Quoted(s)) => Ok(s),
            (offset, t) => Err(DescError {
                offset,
                reason: format!("expected quoted {what}, found {}", describe(&t)),
            }),
        }
    }

    /// qdescrs, qdstrings: one item or a parenthesized list. Unquoted names are tolerated.
    fn strings(&mut self, what: &str) -> Result<Vec<String>, DescError> {
        match self.next()? {
            (_, Token::Quoted(s)) | (_, Token::Word(s)) => Ok(vec![s]),
            (_, Token::Open) => {
                let mut out = Vec::new();
                loop {
                    match self.next()? {
                        (_, Token::Close) => break,
                        (_, Token::Quoted(s)) | (_, Token::Word(s)) => out.push(s),
                        (offset, t) => {
                            return Err(DescError {
                                offset,
                                reason: format!("expected {what}, found {}", describe(&t)),
                            })
                        }
                    }
                }
                if out.is_empty() {
                    return Err(DescError {
                        offset: self.lexer.pos,
                        reason: format!("empty {what} list"),
                    });
                }
                Ok(out)
            }
            (offset, t) => Err(DescError {
                offset,
                reason: format!("expected {what}, found {}", describe(&t)),
            }),
        }
    }

    /// oids: one oid or `( oid $ oid ... )`.
    fn oids(&mut self) -> Result<Vec<String>, DescError> {
        match self.next()? {
            (_, Token::Word(w)) => Ok(vec![w]),
            (_, Token::Open) => {
                let mut out = Vec::new();
                let mut want_oid = true;
                loop {
                    match self.next()? {
                        (_, Token::Close) if !want_oid => break,
                        (_, Token::Word(w)) if want_oid => {
                            out.push(w);
                            want_oid = false;
                        }
                        (_, Token::Dollar) if !want_oid => want_oid = true,
                        (offset, t) => {
                            return Err(DescError {
                                offset,
                                reason: format!("malformed oid list at {}", describe(&t)),
                            })
                        }
                    }
                }
                Ok(out)
            }
            (offset, t) => Err(DescError {
                offset,
                reason: format!("expected oid or oid list, found {}", describe(&t)),
            }),
        }
    }

    fn open(&mut self) -> Result<String, DescError> {
        match self.next()? {
            (_, Token::Open) => {}
            (offset, t) => {
                return Err(DescError {
                    offset,
                    reason: format!("definition must start with '(', found {}", describe(&t)),
                })
            }
        }
        self.word("numeric OID")
    }

    fn finish(&mut self) -> Result<(), DescError> {
        match self.lexer.next()? {
            None => Ok(()),
            Some((offset, t)) => Err(DescError {
                offset,
                reason: format!("unexpected {} after the closing ')'", describe(&t)),
            }),
        }
    }
}

fn describe(t: &Token) -> String {
    match t {
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
        Token::Dollar => "'$'".into(),
        Token::Quoted(s) => format!("'{s}'"),
        Token::Word(w) => format!("\"{w}\""),
    }
}

fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    keyword: &str,
    offset: usize,
) -> Result<(), DescError> {
    if slot.is_some() {
        return Err(DescError {
            offset,
            reason: format!("{keyword} given twice"),
        });
    }
    *slot = Some(value);
    Ok(())
}

/// Parses an RFC 4512 AttributeTypeDescription. Keywords are matched case-insensitively.
pub(crate) fn parse_attribute_type(text: &str) -> Result<RawAttributeType, DescError> {
    let mut p = Parser::new(text);
    let mut at = RawAttributeType {
        oid: p.open()?,
        ..RawAttributeType::default()
    };
    let mut seen_names = false;
    loop {
        let (offset, token) = p.next()?;
        let keyword = match token {
            Token::Close => break,
            Token::Word(w) => w.to_ascii_uppercase(),
            t => {
                return Err(DescError {
                    offset,
                    reason: format!("expected a keyword, found {}", describe(&t)),
                })
            }
        };
        match keyword.as_str() {
            "NAME" if !seen_names => {
                at.names = p.strings("name")?;
                seen_names = true;
            }
            "DESC" => {
                let d = p.quoted("description")?;
                set_once(&mut at.desc, d, "DESC", offset)?;
            }
            "OBSOLETE" => at.obsolete = true,
            "SUP" => {
                let w = p.word("supertype")?;
                set_once(&mut at.sup, w, "SUP", offset)?;
            }
            "EQUALITY" => {
                let w = p.word("matching rule")?;
                set_once(&mut at.equality, w, "EQUALITY", offset)?;
            }
            "ORDERING" => {
                let w = p.word("matching rule")?;
                set_once(&mut at.ordering, w, "ORDERING", offset)?;
            }
            "SUBSTR" => {
                let w = p.word("matching rule")?;
                set_once(&mut at.substr, w, "SUBSTR", offset)?;
            }
            "SYNTAX" => {
                let w = p.word("syntax OID")?;
                set_once(&mut at.syntax, w, "SYNTAX", offset)?;
            }
            "SINGLE-VALUE" => at.single_value = true,
            "COLLECTIVE" => at.collective = true,
            "NO-USER-MODIFICATION" => at.no_user_modification = true,
            "USAGE" => {
                let (woffset, token) = p.next()?;
                let usage = match &token {
                    Token::Word(w) => Usage::from_keyword(w),
                    _ => None,
                }
                .ok_or(DescError {
                    offset: woffset,
                    reason: format!("unknown USAGE {}", describe(&token)),
                })?;
                set_once(&mut at.usage, usage, "USAGE", offset)?;
            }
            k if k.starts_with("X-") => {
                let values = p.strings("extension value")?;
                at.extensions.push((k.to_string(), values));
            }
            _ => {
                return Err(DescError {
                    offset,
                    reason: format!("unknown or repeated keyword {keyword} in attribute type"),
                })
            }
        }
    }
    p.finish()?;
    Ok(at)
}

/// Parses an RFC 4512 ObjectClassDescription.
pub(crate) fn parse_object_class(text: &str) -> Result<RawObjectClass, DescError> {
    let mut p = Parser::new(text);
    let mut oc = RawObjectClass {
        oid: p.open()?,
        names: Vec::new(),
        desc: None,
        obsolete: false,
        sup: Vec::new(),
        kind: ObjectClassKind::Structural,
        must: Vec::new(),
        may: Vec::new(),
        extensions: Vec::new(),
    };
    let mut kind: Option<ObjectClassKind> = None;
    let mut seen = std::collections::HashSet::new();
    loop {
        let (offset, token) = p.next()?;
        let keyword = match token {
            Token::Close => break,
            Token::Word(w) => w.to_ascii_uppercase(),
            t => {
                return Err(DescError {
                    offset,
                    reason: format!("expected a keyword, found {}", describe(&t)),
                })
            }
        };
        let repeatable = keyword.starts_with("X-") || keyword == "OBSOLETE";
        if !repeatable && !seen.insert(keyword.clone()) {
            return Err(DescError {
                offset,
                reason: format!("{keyword} given twice"),
            });
        }
        match keyword.as_str() {
            "NAME" => oc.names = p.strings("name")?,
            "DESC" => oc.desc = Some(p.quoted("description")?),
            "OBSOLETE" => oc.obsolete = true,
            "SUP" => oc.sup = p.oids()?,
            "ABSTRACT" => set_once(&mut kind, ObjectClassKind::Abstract, "kind", offset)?,
            "STRUCTURAL" => set_once(&mut kind, ObjectClassKind::Structural, "kind", offset)?,
            "AUXILIARY" => set_once(&mut kind, ObjectClassKind::Auxiliary, "kind", offset)?,
            "MUST" => oc.must = p.oids()?,
            "MAY" => oc.may = p.oids()?,
            k if k.starts_with("X-") => {
                let values = p.strings("extension value")?;
                oc.extensions.push((k.to_string(), values));
            }
            _ => {
                return Err(DescError {
                    offset,
                    reason: format!("unknown keyword {keyword} in object class"),
                })
            }
        }
    }
    p.finish()?;
    if let Some(kind) = kind {
        oc.kind = kind;
    }
    Ok(oc)
}

/// Parses an RFC 4512 SyntaxDescription. OpenLDAP's `.schema` files may also give a NAME, which
/// is checked for form and dropped: syntaxes are known by OID only.
pub(crate) fn parse_syntax(text: &str) -> Result<RawSyntax, DescError> {
    let mut p = Parser::new(text);
    let mut syntax = RawSyntax {
        oid: p.open()?,
        desc: None,
        extensions: Vec::new(),
    };
    let mut seen_names = false;
    loop {
        let (offset, token) = p.next()?;
        let keyword = match token {
            Token::Close => break,
            Token::Word(w) => w.to_ascii_uppercase(),
            t => {
                return Err(DescError {
                    offset,
                    reason: format!("expected a keyword, found {}", describe(&t)),
                })
            }
        };
        match keyword.as_str() {
            "NAME" if !seen_names => {
                p.strings("name")?;
                seen_names = true;
            }
            "DESC" => {
                let d = p.quoted("description")?;
                set_once(&mut syntax.desc, d, "DESC", offset)?;
            }
            k if k.starts_with("X-") => {
                let values = p.strings("extension value")?;
                syntax.extensions.push((k.to_string(), values));
            }
            _ => {
                return Err(DescError {
                    offset,
                    reason: format!("unknown or repeated keyword {keyword} in LDAP syntax"),
                })
            }
        }
    }
    p.finish()?;
    Ok(syntax)
}

/// Parses `NAME OID` of an `objectidentifier` directive (the OID may be `PREFIX:suffix`).
pub(crate) fn parse_object_identifier(text: &str) -> Result<(String, String), DescError> {
    let mut words = text.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some(name), Some(oid), None) => Ok((name.to_string(), oid.to_string())),
        _ => Err(DescError {
            offset: 0,
            reason: "objectidentifier needs exactly a name and an OID".into(),
        }),
    }
}

#[cfg(test)]
mod tests;
