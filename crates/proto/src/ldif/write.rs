//! Writing LDIF content records the way slapcat does: base64 for unsafe values, 76-column folding.

use base64::Engine;

const LINE_WIDTH: usize = 76;

/// Writes one content record; values that are not SAFE-STRING (RFC 2849) are base64 (`::`); lines folded at 76.
pub fn write_ldif_entry(out: &mut Vec<u8>, dn: &[u8], attrs: &[(&str, &[u8])]) {
    write_attrval(out, "dn", dn);
    for (name, value) in attrs {
        write_attrval(out, name, value);
    }
    out.push(b'\n');
}

/// RFC 2849 SAFE-STRING, plus no trailing space (which readers would otherwise be free to drop).
fn is_safe_string(value: &[u8]) -> bool {
    let Some((&first, rest)) = value.split_first() else {
        return true;
    };
    let safe_char = |c: u8| c != 0 && c != b'\n' && c != b'\r' && c < 0x80;
    safe_char(first)
        && !matches!(first, b' ' | b':' | b'<')
        && rest.iter().all(|&c| safe_char(c))
        && value.last() != Some(&b' ')
}

/// Writes one `name: value` line (base64 `::` for unsafe values), folded at 76 columns.
pub fn write_attrval(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    let mut line = Folder { out, column: 0 };
    line.write(name.as_bytes());
    if value.is_empty() {
        line.write(b":");
    } else if is_safe_string(value) {
        line.write(b": ");
        line.write(value);
    } else {
        line.write(b":: ");
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        line.write(encoded.as_bytes());
    }
    out.push(b'\n');
}

/// Appends bytes, starting a continuation line whenever the current line is full. Everything
/// written is ASCII, so a fold never splits a character.
struct Folder<'a> {
    out: &'a mut Vec<u8>,
    column: usize,
}

impl Folder<'_> {
    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.column == LINE_WIDTH {
                self.out.extend_from_slice(b"\n ");
                self.column = 1;
            }
            let take = (LINE_WIDTH - self.column).min(bytes.len());
            let (now, later) = bytes.split_at(take);
            self.out.extend_from_slice(now);
            self.column += take;
            bytes = later;
        }
    }
}
