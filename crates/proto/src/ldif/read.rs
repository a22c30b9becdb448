//! Streaming LDIF reader: physical lines to logical lines to records.

use std::io::BufRead;

use base64::Engine;

use super::{LdifChange, LdifError, LdifRecord};
use crate::filter::string::is_attribute_description;
use crate::message::{Change, Control, ModifyOperation, PartialAttribute};

/// Reads LDIF records one at a time from a buffered reader.
#[derive(Debug)]
pub struct LdifReader<R: BufRead> {
    input: R,
    line: usize,
    failed_io: bool,
}

/// A logical (unfolded) line and the physical line number where it starts.
type Line = (usize, Vec<u8>);

fn error(line: usize, reason: impl Into<String>) -> LdifError {
    LdifError {
        line,
        reason: reason.into(),
    }
}

impl<R: BufRead> LdifReader<R> {
    pub fn new(r: R) -> Self {
        LdifReader {
            input: r,
            line: 0,
            failed_io: false,
        }
    }

    /// Number of physical lines consumed so far.
    pub fn line(&self) -> usize {
        self.line
    }

    fn physical_line(&mut self) -> Result<Option<Line>, LdifError> {
        let mut buf = Vec::new();
        match self.input.read_until(b'\n', &mut buf) {
            Ok(0) => Ok(None),
            Ok(_) => {
                self.line += 1;
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                Ok(Some((self.line, buf)))
            }
            Err(e) => {
                self.failed_io = true;
                Err(error(self.line + 1, e.to_string()))
            }
        }
    }

    /// The unfolded, comment-free lines of the next record, or None at the end of input.
    fn record_lines(&mut self) -> Result<Option<Vec<Line>>, LdifError> {
        let mut lines: Vec<Line> = Vec::new();
        let mut in_comment = false;
        while let Some((number, line)) = self.physical_line()? {
            match line.split_first() {
                None if lines.is_empty() => in_comment = false,
                None => break,
                // A folded comment stays a comment.
                Some((b' ', _)) if in_comment => {}
                Some((b' ', rest)) => match lines.last_mut() {
                    Some((_, last)) => last.extend_from_slice(rest),
                    None => {
                        return Err(error(
                            number,
                            "continuation line without a line to continue",
                        ))
                    }
                },
                Some((b'#', _)) => in_comment = true,
                Some(_) => {
                    in_comment = false;
                    lines.push((number, line));
                }
            }
        }
        Ok((!lines.is_empty()).then_some(lines))
    }

    fn next_record(&mut self) -> Result<Option<LdifRecord>, LdifError> {
        loop {
            let Some(mut lines) = self.record_lines()? else {
                return Ok(None);
            };
            // `ldapsearch -L` repeats the version line for every page of a paged search, so it is
            // accepted at the start of any record, not only the first.
            if let Some((number, first)) = lines.first() {
                if starts_with_ignore_case(first, b"version:") {
                    let (_, version) = parse_attrval(*number, first)?;
                    if version != b"1" {
                        return Err(error(*number, "unsupported LDIF version"));
                    }
                    lines.remove(0);
                    if lines.is_empty() {
                        continue;
                    }
                }
            }
            return parse_record(lines).map(Some);
        }
    }
}

impl<R: BufRead> Iterator for LdifReader<R> {
    type Item = Result<LdifRecord, LdifError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed_io {
            return None;
        }
        self.next_record().transpose()
    }
}

fn starts_with_ignore_case(line: &[u8], prefix: &[u8]) -> bool {
    line.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// The attribute description before the first ':' of `line`, lower-cased for keyword tests.
fn line_name(line: &[u8]) -> Option<String> {
    let colon = line.iter().position(|&c| c == b':')?;
    line.get(..colon)
        .map(|name| String::from_utf8_lossy(name).to_ascii_lowercase())
}

/// Splits `name: value` / `name:: base64` / `name:< url`.
fn parse_attrval(number: usize, line: &[u8]) -> Result<(String, Vec<u8>), LdifError> {
    let colon = line
        .iter()
        .position(|&c| c == b':')
        .ok_or_else(|| error(number, "expected 'attribute: value'"))?;
    let (name, spec) = line.split_at(colon);
    let name = std::str::from_utf8(name)
        .ok()
        .filter(|n| is_attribute_description(n))
        .ok_or_else(|| error(number, "invalid attribute description"))?;
    Ok((name.to_owned(), parse_value_spec(number, spec)?))
}

fn skip_fill(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&c| c != b' ').unwrap_or(s.len());
    s.get(start..).unwrap_or_default()
}

/// Decodes a value-spec that starts at the ':' after the attribute description.
fn parse_value_spec(number: usize, spec: &[u8]) -> Result<Vec<u8>, LdifError> {
    match spec {
        [b':', b':', rest @ ..] => {
            let text: Vec<u8> = rest.iter().copied().filter(|&c| c != b' ').collect();
            base64::engine::general_purpose::STANDARD
                .decode(&text)
                .map_err(|e| error(number, format!("bad base64 value: {e}")))
        }
        [b':', b'<', rest @ ..] => {
            let url = skip_fill(rest);
            let path = url
                .strip_prefix(b"file://")
                .ok_or_else(|| error(number, "only file:// URLs are supported"))?;
            let path =
                std::str::from_utf8(path).map_err(|_| error(number, "URL is not valid UTF-8"))?;
            std::fs::read(path).map_err(|e| error(number, format!("cannot read {path}: {e}")))
        }
        [b':', rest @ ..] => Ok(skip_fill(rest).to_vec()),
        _ => Err(error(number, "expected ':'")),
    }
}

fn parse_record(lines: Vec<Line>) -> Result<LdifRecord, LdifError> {
    let last_number = lines.last().map_or(0, |(n, _)| *n);
    let mut lines = lines.into_iter().peekable();
    let Some((number, first)) = lines.next() else {
        return Err(error(last_number, "empty record"));
    };
    if line_name(&first).as_deref() != Some("dn") {
        return Err(error(number, "record does not start with 'dn:'"));
    }
    let (_, dn) = parse_attrval(number, &first)?;
    let mut controls = Vec::new();
    let mut first_control_line = None;
    while let Some((number, line)) =
        lines.next_if(|(_, l)| line_name(l).as_deref() == Some("control"))
    {
        first_control_line.get_or_insert(number);
        controls.push(parse_control(number, &line)?);
    }
    let Some((number, line)) =
        lines.next_if(|(_, l)| line_name(l).as_deref() == Some("changetype"))
    else {
        if let Some(number) = first_control_line {
            return Err(error(number, "control: without changetype:"));
        }
        let attrs = lines
            .map(|(n, l)| parse_attrval(n, &l))
            .collect::<Result<_, _>>()?;
        return Ok(LdifRecord::Content { dn, attrs });
    };
    let (_, changetype) = parse_attrval(number, &line)?;
    let change = match changetype.to_ascii_lowercase().as_slice() {
        b"add" => {
            let attrs: Vec<_> = lines
                .map(|(n, l)| parse_attrval(n, &l))
                .collect::<Result<_, _>>()?;
            if attrs.is_empty() {
                return Err(error(number, "add record without attributes"));
            }
            LdifChange::Add(attrs)
        }
        b"delete" => {
            if let Some((n, _)) = lines.next() {
                return Err(error(n, "unexpected line in delete record"));
            }
            LdifChange::Delete
        }
        b"modify" => LdifChange::Modify(parse_modify(lines)?),
        b"modrdn" | b"moddn" => parse_moddn(number, lines)?,
        _ => return Err(error(number, "unknown changetype")),
    };
    Ok(LdifRecord::Change {
        dn,
        controls,
        change,
    })
}

/// `control: oid [true|false] [value-spec]`.
fn parse_control(number: usize, line: &[u8]) -> Result<Control, LdifError> {
    let rest = line.get("control:".len()..).unwrap_or_default();
    let rest = skip_fill(rest);
    let oid_len = rest
        .iter()
        .position(|&c| c == b' ' || c == b':')
        .unwrap_or(rest.len());
    let (oid, rest) = rest.split_at(oid_len);
    let oid = std::str::from_utf8(oid)
        .ok()
        .filter(|o| crate::filter::string::is_oid(o))
        .ok_or_else(|| error(number, "invalid control OID"))?
        .to_owned();
    let mut rest = skip_fill(rest);
    let mut critical = false;
    for (word, value) in [(&b"true"[..], true), (&b"false"[..], false)] {
        if let Some(after) = rest.strip_prefix(word) {
            if after.first().is_none_or(|&c| c == b' ' || c == b':') {
                critical = value;
                rest = skip_fill(after);
            }
        }
    }
    let value = if rest.is_empty() {
        None
    } else {
        Some(parse_value_spec(number, rest)?)
    };
    Ok(Control {
        oid,
        critical,
        value,
    })
}

fn parse_modify(lines: impl Iterator<Item = Line>) -> Result<Vec<Change>, LdifError> {
    let mut lines = lines.peekable();
    let mut changes = Vec::new();
    while let Some((number, line)) = lines.next() {
        let (op, attr) = parse_attrval(number, &line)?;
        let operation = match op.to_ascii_lowercase().as_str() {
            "add" => ModifyOperation::Add,
            "delete" => ModifyOperation::Delete,
            "replace" => ModifyOperation::Replace,
            "increment" => ModifyOperation::Increment,
            _ => {
                return Err(error(
                    number,
                    "expected add:, delete:, replace: or increment:",
                ))
            }
        };
        let name = std::str::from_utf8(&attr)
            .ok()
            .map(str::trim_end)
            .filter(|a| is_attribute_description(a))
            .ok_or_else(|| error(number, "invalid attribute description"))?
            .to_owned();
        let mut values = Vec::new();
        // ldapmodify tolerates a missing '-' after the last modification, so do we.
        for (number, line) in lines.by_ref() {
            if line.trim_ascii_end() == b"-" {
                break;
            }
            let (attr, value) = parse_attrval(number, &line)?;
            if !attr.eq_ignore_ascii_case(&name) {
                return Err(error(number, format!("expected a value of {name} or '-'")));
            }
            values.push(value);
        }
        changes.push(Change {
            operation,
            modification: PartialAttribute { name, values },
        });
    }
    Ok(changes)
}

fn parse_moddn(
    changetype_line: usize,
    lines: impl Iterator<Item = Line>,
) -> Result<LdifChange, LdifError> {
    let mut lines = lines.peekable();
    let mut field = |name: &str, required: bool| -> Result<Option<Vec<u8>>, LdifError> {
        match lines.next_if(|(_, l)| line_name(l).as_deref() == Some(name)) {
            Some((n, l)) => parse_attrval(n, &l).map(|(_, v)| Some(v)),
            None if required => Err(error(changetype_line, format!("missing {name}:"))),
            None => Ok(None),
        }
    };
    let new_rdn = field("newrdn", true)?.unwrap_or_default();
    let delete_old_rdn = match field("deleteoldrdn", true)?.as_deref() {
        Some(b"1") => true,
        Some(b"0") => false,
        _ => return Err(error(changetype_line, "deleteoldrdn must be 0 or 1")),
    };
    let new_superior = field("newsuperior", false)?;
    if let Some((n, _)) = lines.next() {
        return Err(error(n, "unexpected line in modrdn record"));
    }
    Ok(LdifChange::ModDn {
        new_rdn,
        delete_old_rdn,
        new_superior,
    })
}
