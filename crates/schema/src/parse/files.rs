//! Front ends: split OpenLDAP `.schema` text and `.ldif` schema entries into directives with the
//! line numbers they came from.

use crate::error::SchemaError;

/// What a statement defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Directive {
    AttributeType,
    ObjectClass,
    ObjectIdentifier,
    LdapSyntax,
}

/// One definition: its text after the keyword, and where each physical line of it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Statement {
    pub directive: Directive,
    pub text: String,
    /// (byte offset in `text`, line number in the source), ascending.
    pub lines: Vec<(usize, usize)>,
}

impl Statement {
    /// The source line holding byte `offset` of `text`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.lines
            .iter()
            .take_while(|(start, _)| *start <= offset)
            .last()
            .or(self.lines.first())
            .map_or(0, |(_, line)| *line)
    }

    pub fn first_line(&self) -> usize {
        self.lines.first().map_or(0, |(_, line)| *line)
    }
}

fn parse_error(origin: &str, line: usize, reason: impl Into<String>) -> SchemaError {
    SchemaError::Parse {
        origin: origin.to_string(),
        line,
        reason: reason.into(),
    }
}

/// Splits schema text into statements, choosing the front end by content: LDIF when the first
/// meaningful line starts with `dn:` or `version:`.
pub(crate) fn statements(text: &str, origin: &str) -> Result<Vec<Statement>, SchemaError> {
    let first = text
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_default()
        .to_ascii_lowercase();
    if first.starts_with("dn:") || first.starts_with("version:") {
        ldif_statements(text, origin)
    } else {
        schema_statements(text, origin)
    }
}

/// slapd takes any keyword that begins with `attribute` for `attributetype` (it compares only that
/// much), so files that misspell the rest (Debian's dsee.schema has `attributeype`) load there; the
/// other keywords must be spelled out.
fn directive_for(keyword: &str) -> Option<Directive> {
    let lower = keyword.to_ascii_lowercase();
    if lower.starts_with("attribute") {
        return Some(Directive::AttributeType);
    }
    match lower.as_str() {
        "objectclass" | "objectclasses" => Some(Directive::ObjectClass),
        "objectidentifier" => Some(Directive::ObjectIdentifier),
        "ldapsyntax" => Some(Directive::LdapSyntax),
        _ => None,
    }
}

/// OpenLDAP `.schema` syntax: a line starting with whitespace continues the previous one; `#` lines
/// and blank lines are skipped, also inside a continued definition.
fn schema_statements(text: &str, origin: &str) -> Result<Vec<Statement>, SchemaError> {
    // Logical lines: (text, physical line starts).
    let mut logical: Vec<(String, Vec<(usize, usize)>)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let continues = line.starts_with(|c: char| c.is_whitespace());
        match logical.last_mut() {
            Some((buf, starts)) if continues => {
                buf.push(' ');
                starts.push((buf.len(), line_no));
                buf.push_str(trimmed);
            }
            _ if continues => {
                return Err(parse_error(
                    origin,
                    line_no,
                    "continuation line without a directive",
                ))
            }
            _ => logical.push((trimmed.to_string(), vec![(0, line_no)])),
        }
    }
    let mut out = Vec::with_capacity(logical.len());
    for (buf, starts) in logical {
        let keyword_end = buf.find(char::is_whitespace).unwrap_or(buf.len());
        let keyword = buf.get(..keyword_end).unwrap_or_default();
        let line_no = starts.first().map_or(0, |(_, l)| *l);
        let directive = directive_for(keyword).ok_or_else(|| {
            parse_error(origin, line_no, format!("unknown directive \"{keyword}\""))
        })?;
        let rest = buf.get(keyword_end..).unwrap_or_default();
        let body = rest.trim_start();
        let shift = keyword_end + (rest.len() - body.len());
        let lines = starts
            .into_iter()
            .map(|(offset, line)| (offset.saturating_sub(shift), line))
            .collect();
        out.push(Statement {
            directive,
            text: body.to_string(),
            lines,
        });
    }
    Ok(out)
}

/// OpenLDAP's cn=schema LDIF: `olcAttributeTypes:`, `olcObjectClasses:`, `olcObjectIdentifier:`,
/// `olcLdapSyntaxes:` values (plain or base64), folded lines, an optional `{N}` ordering prefix.
/// Other attributes and the entries' structure are not checked.
fn ldif_statements(text: &str, origin: &str) -> Result<Vec<Statement>, SchemaError> {
    // Unfolded lines with the physical line each starts on.
    let mut unfolded: Vec<(String, usize)> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(cont) = line.strip_prefix(' ') {
            match unfolded.last_mut() {
                Some((buf, _)) => buf.push_str(cont),
                None => {
                    return Err(parse_error(
                        origin,
                        index + 1,
                        "folded line without a start",
                    ))
                }
            }
            continue;
        }
        unfolded.push((line.to_string(), index + 1));
    }
    let mut out = Vec::new();
    for (line, line_no) in unfolded {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(colon) = line.find(':') else {
            return Err(parse_error(origin, line_no, "LDIF line without ':'"));
        };
        let attr = line.get(..colon).unwrap_or_default();
        let attr = attr.split(';').next().unwrap_or_default();
        let directive = match attr.to_ascii_lowercase().as_str() {
            "olcattributetypes" | "attributetypes" => Directive::AttributeType,
            "olcobjectclasses" | "objectclasses" => Directive::ObjectClass,
            "olcobjectidentifier" => Directive::ObjectIdentifier,
            "olcldapsyntaxes" | "ldapsyntaxes" => Directive::LdapSyntax,
            _ => continue,
        };
        let rest = line.get(colon + 1..).unwrap_or_default();
        let value = if let Some(b64) = rest.strip_prefix(':') {
            let bytes = decode_base64(b64.trim())
                .ok_or_else(|| parse_error(origin, line_no, "invalid base64 value"))?;
            String::from_utf8(bytes)
                .map_err(|_| parse_error(origin, line_no, "base64 value is not UTF-8"))?
        } else if rest.starts_with('<') {
            return Err(parse_error(origin, line_no, "URL values are not supported"));
        } else {
            rest.trim_start_matches(' ').to_string()
        };
        let value = strip_ordering_prefix(value.trim());
        out.push(Statement {
            directive,
            text: value.to_string(),
            lines: vec![(0, line_no)],
        });
    }
    Ok(out)
}

/// Removes the `{N}` that cn=config puts before ordered values.
fn strip_ordering_prefix(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('{') {
        if let Some(end) = rest.find('}') {
            if rest
                .get(..end)
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            {
                return rest.get(end + 1..).unwrap_or_default().trim_start();
            }
        }
    }
    value
}

/// RFC 4648 base64 with padding, whitespace ignored.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let clean: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for chunk in clean.chunks(4) {
        let pad = chunk.iter().rev().take_while(|b| **b == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            let v = if i >= 4 - pad { 0 } else { sextet(c)? };
            acc = (acc << 6) | v;
        }
        let bytes = acc.to_be_bytes();
        out.extend(bytes.get(1..4 - pad).unwrap_or_default());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_table() {
        for (input, expected) in [
            ("", Some(&b""[..])),
            ("Zm9v", Some(&b"foo"[..])),
            ("Zm8=", Some(&b"fo"[..])),
            ("Zg==", Some(&b"f"[..])),
            ("Zm9 vYg==", Some(&b"foob"[..])),
            ("Zm9", None),
            ("Z===", None),
            ("Zm!v", None),
        ] {
            assert_eq!(decode_base64(input).as_deref(), expected, "{input}");
        }
    }

    #[test]
    fn schema_front_end() {
        let text = "# comment\nattributetype ( 1.2.3 NAME 'a'\n# inner comment\n\n\tSYNTAX 1.2 )\nObjectClass ( 1.2.4 NAME 'c' )\nobjectidentifier X 1.2\n";
        let st = statements(text, "t").unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!(st[0].directive, Directive::AttributeType);
        assert_eq!(st[0].text, "( 1.2.3 NAME 'a' SYNTAX 1.2 )");
        assert_eq!(st[0].line_of(0), 2);
        assert_eq!(st[0].line_of(st[0].text.find("SYNTAX").unwrap()), 5);
        assert_eq!(st[1].directive, Directive::ObjectClass);
        assert_eq!(st[1].first_line(), 6);
        assert_eq!(st[2].directive, Directive::ObjectIdentifier);
        assert_eq!(st[2].text, "X 1.2");
    }

    #[test]
    fn schema_front_end_errors() {
        for (text, line) in [
            ("  ( 1.2 )", 1),
            ("attributetype ( 1.2 )\nfoo bar", 2),
            ("\n\nditcontentrule ( 1.2 )", 3),
        ] {
            match statements(text, "f.schema") {
                Err(SchemaError::Parse {
                    origin, line: l, ..
                }) => {
                    assert_eq!((origin.as_str(), l), ("f.schema", line), "{text:?}")
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn ldif_front_end() {
        let text = "dn: cn=x,cn=schema,cn=config\nobjectClass: olcSchemaConfig\ncn: x\nolcObjectIdentifier: {0}X 1.2\nolcAttributeTypes: {0}( 1.2.3 NAME 'a' S\n YNTAX 1.2 )\nolcObjectClasses:: KCAxLjIuNCBOQU1FICdjJyAp\n";
        let st = statements(text, "t").unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!(st[0].text, "X 1.2");
        assert_eq!(st[1].text, "( 1.2.3 NAME 'a' SYNTAX 1.2 )");
        assert_eq!(st[1].first_line(), 5);
        assert_eq!(st[2].directive, Directive::ObjectClass);
        assert_eq!(st[2].text, "( 1.2.4 NAME 'c' )");
        assert_eq!(st[2].first_line(), 7);
    }

    #[test]
    fn ldif_front_end_errors() {
        for (text, line) in [
            ("dn: cn=x\nolcObjectClasses:: !!!!\n", 2),
            ("dn: cn=x\nno colon here\n", 2),
            ("dn: cn=x\nolcAttributeTypes:< file:///x\n", 2),
        ] {
            match statements(text, "f.ldif") {
                Err(SchemaError::Parse { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }
}
