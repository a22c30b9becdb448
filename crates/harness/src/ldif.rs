//! Normalizes LDIF printed by `ldapsearch -LLL` so outputs of two correct servers compare equal.
//!
//! What is normalized: line folding, comments, the order of entries (LDAP gives none), the order of
//! attributes and of values (both are sets in LDAP), and the values of attributes that change on
//! every write (CSNs, UUIDs, timestamps), which are checked against their syntax and replaced by a
//! placeholder. A value of the wrong shape is kept verbatim so the comparison shows it. Everything
//! else (attribute-name spelling, DN spelling, values, which attributes are returned) is compared
//! byte for byte, because those are things a client sees.

/// Tells whether a value has the syntax its attribute promises.
type ShapeCheck = fn(&str) -> bool;

/// Volatile operational attributes: (lowercased name, check, placeholder).
const VOLATILE: &[(&str, ShapeCheck, &str)] = &[
    ("entryuuid", is_uuid, "<uuid>"),
    ("entrycsn", is_csn, "<csn>"),
    ("contextcsn", is_csn, "<csn>"),
    ("createtimestamp", is_generalized_time, "<generalizedTime>"),
    ("modifytimestamp", is_generalized_time, "<generalizedTime>"),
    ("pwdchangedtime", is_generalized_time, "<generalizedTime>"),
];

/// One entry of LDIF: the `dn:` line and its attribute lines, as printed (unfolded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub dn_line: String,
    pub attrs: Vec<String>,
}

impl Record {
    /// The DN as text (decoded when the server sent it base64-encoded).
    pub fn dn(&self) -> String {
        value_of(&self.dn_line)
    }

    /// The attribute names in this record, in print order (duplicates kept).
    pub fn attr_names(&self) -> Vec<String> {
        self.attrs.iter().map(|l| name_of(l).to_string()).collect()
    }

    /// The values of attribute `name` (case-insensitive), decoded from base64 when needed.
    pub fn values(&self, name: &str) -> Vec<String> {
        self.attrs
            .iter()
            .filter(|l| name_of(l).eq_ignore_ascii_case(name))
            .map(|l| value_of(l))
            .collect()
    }
}

/// Splits LDIF into records, unfolding continuation lines and dropping comments and `version:`.
pub fn parse(text: &str) -> Vec<Record> {
    let mut lines: Vec<String> = Vec::new();
    for raw in text.lines() {
        if let Some(cont) = raw.strip_prefix(' ') {
            if let Some(last) = lines.last_mut() {
                // A folded comment stays a comment: it is dropped below with its first line.
                last.push_str(cont);
                continue;
            }
        }
        lines.push(raw.to_string());
    }
    let mut records = Vec::new();
    let mut current: Option<Record> = None;
    for line in lines {
        if line.starts_with('#') || line.starts_with("version:") {
            continue;
        }
        if line.is_empty() {
            records.extend(current.take());
            continue;
        }
        match current.as_mut() {
            None => {
                current = Some(Record {
                    dn_line: line,
                    attrs: Vec::new(),
                })
            }
            Some(r) => r.attrs.push(line),
        }
    }
    records.extend(current);
    records
}

/// The canonical form: records sorted by DN (parents before children), attributes by name, values
/// sorted, volatile values masked.
pub fn normalize(text: &str) -> String {
    canonical(text, true)
}

/// Like [`normalize`] but keeps volatile values, for comparing a database with its own copy.
pub fn sorted(text: &str) -> String {
    canonical(text, false)
}

fn canonical(text: &str, mask: bool) -> String {
    let mut records = parse(text);
    for r in &mut records {
        if mask {
            for line in &mut r.attrs {
                *line = mask_volatile(line);
            }
        }
        r.attrs
            .sort_by_key(|l| (name_of(l).to_ascii_lowercase(), l.clone()));
    }
    records.sort_by_key(|r| (dn_sort_key(&r.dn()), r.dn_line.clone()));
    let mut out = String::new();
    for (i, r) in records.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&r.dn_line);
        out.push('\n');
        for a in &r.attrs {
            out.push_str(a);
            out.push('\n');
        }
    }
    out
}

/// The attribute description of an LDIF line (the text before the first colon).
pub fn name_of(line: &str) -> &str {
    line.split(':').next().unwrap_or(line)
}

/// The value of an LDIF line, base64-decoded for `name:: value` when it is valid UTF-8.
pub fn value_of(line: &str) -> String {
    let Some((_, rest)) = line.split_once(':') else {
        return String::new();
    };
    if let Some(b64) = rest.strip_prefix(':') {
        let b64 = b64.trim_start();
        if let Some(s) = decode_base64(b64).and_then(|b| String::from_utf8(b).ok()) {
            return s;
        }
        return b64.to_string();
    }
    rest.strip_prefix(' ').unwrap_or(rest).to_string()
}

/// The text after `name:` or `name::` (still base64-encoded for the latter).
pub fn value_of_raw(line: &str) -> &str {
    let rest = line.split_once(':').map_or("", |(_, r)| r);
    rest.strip_prefix(':').unwrap_or(rest).trim_start()
}

fn mask_volatile(line: &str) -> String {
    let name = name_of(line).to_ascii_lowercase();
    for (attr, check, placeholder) in VOLATILE {
        if name == *attr {
            let value = value_of(line);
            if check(&value) {
                return format!("{}: {placeholder}", name_of(line));
            }
        }
    }
    line.to_string()
}

/// Sort key putting a DN after its ancestors: RDNs from the root down, compared case-insensitively.
fn dn_sort_key(dn: &str) -> Vec<String> {
    let mut rdns = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in dn.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            cur.push(c);
            escaped = true;
        } else if c == ',' {
            rdns.push(cur.trim().to_lowercase());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    rdns.push(cur.trim().to_lowercase());
    rdns.reverse();
    rdns
}

fn is_uuid(v: &str) -> bool {
    let groups: Vec<&str> = v.split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    lens == [8, 4, 4, 4, 12]
        && groups.iter().all(|g| {
            g.chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        })
}

/// `YYYYmmddHHMMSS.uuuuuuZ#cccccc#sid#mmmmmm` (RFC 4533-style CSN as OpenLDAP writes it).
fn is_csn(v: &str) -> bool {
    let parts: Vec<&str> = v.split('#').collect();
    let [time, count, sid, modn] = parts.as_slice() else {
        return false;
    };
    let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
    let t = time.as_bytes();
    let time_ok = t.len() == 22
        && t[..14].iter().all(u8::is_ascii_digit)
        && t[14] == b'.'
        && t[15..21].iter().all(u8::is_ascii_digit)
        && t[21] == b'Z';
    time_ok && hex(count, 6) && hex(sid, 3) && hex(modn, 6)
}

/// `YYYYmmddHHMMSSZ`, the form slapd uses for its operational timestamps.
fn is_generalized_time(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 15 && b[14] == b'Z' && b[..14].iter().all(u8::is_ascii_digit)
}

/// Standard base64 with padding, as ldapsearch prints it; `None` on anything else.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut acc: u32 = 0;
    let mut bits = 0;
    let body = s.trim_end_matches('=');
    if s.len() % 4 != 0 || s.len() - body.len() > 2 {
        return None;
    }
    for c in body.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(normalize(input), expected, "input:\n{input}");
    }

    #[test]
    fn normalizes() {
        let cases: &[(&str, &str)] = &[
            // Entries sorted parent-first, attributes by name, values sorted.
            (
                "dn: uid=b,dc=x\nsn: z\ncn: b\n\ndn: dc=x\ndc: x\n",
                "dn: dc=x\ndc: x\n\ndn: uid=b,dc=x\ncn: b\nsn: z\n",
            ),
            ("dn: dc=x\ncn: b\ncn: a\n", "dn: dc=x\ncn: a\ncn: b\n"),
            // Folded lines are unfolded; comments and version lines dropped.
            (
                "version: 1\n# c\ndn: dc=x\ndescription: ab\n c\n",
                "dn: dc=x\ndescription: abc\n",
            ),
            // Volatile values of the right shape are masked ...
            (
                "dn: dc=x\nentryUUID: 0e7b4a8e-5c2a-103f-8a8b-1b7c2d5e6f70\n\
                 entryCSN: 20261121143000.123456Z#000000#000#000000\n\
                 createTimestamp: 20261121143000Z\n",
                "dn: dc=x\ncreateTimestamp: <generalizedTime>\n\
                 entryCSN: <csn>\nentryUUID: <uuid>\n",
            ),
            // ... and kept when malformed, so the difference shows.
            (
                "dn: dc=x\ncreateTimestamp: 20261121143000.5Z\n",
                "dn: dc=x\ncreateTimestamp: 20261121143000.5Z\n",
            ),
            // Escaped commas do not split RDNs: the entry sorts under ou=p.
            (
                "dn: cn=Smith\\, John,ou=p,dc=x\n\ndn: ou=p,dc=x\n\ndn: ou=q,dc=x\n",
                "dn: ou=p,dc=x\n\ndn: cn=Smith\\, John,ou=p,dc=x\n\ndn: ou=q,dc=x\n",
            ),
            ("", ""),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
    }

    #[test]
    fn sorted_keeps_volatile_values() {
        let input = "dn: dc=x\nentryUUID: 0e7b4a8e-5c2a-103f-8a8b-1b7c2d5e6f70\ncn: a\n";
        let want = "dn: dc=x\ncn: a\nentryUUID: 0e7b4a8e-5c2a-103f-8a8b-1b7c2d5e6f70\n";
        assert_eq!(sorted(input), want);
    }

    #[test]
    fn decodes_values() {
        let cases: &[(&str, &str)] = &[
            ("cn: plain", "plain"),
            ("cn:: Sm9zw6k=", "José"),
            ("cn::Sm9zw6k=", "José"),
            ("cn:", ""),
            ("cn:: !!", "!!"),
        ];
        for (line, expected) in cases {
            assert_eq!(value_of(line), *expected, "{line}");
        }
    }

    #[test]
    fn checks_shapes() {
        assert!(is_csn("20261121143000.123456Z#000000#000#000000"));
        assert!(!is_csn("20261121143000Z#000000#000#000000"));
        assert!(is_uuid("0e7b4a8e-5c2a-103f-8a8b-1b7c2d5e6f70"));
        assert!(!is_uuid("0E7B4A8E-5C2A-103F-8A8B-1B7C2D5E6F70"));
        assert!(is_generalized_time("20261121143000Z"));
        assert!(!is_generalized_time("2026112114300Z"));
        assert_eq!(decode_base64("YWI="), Some(b"ab".to_vec()));
        assert_eq!(decode_base64("YWI"), None);
        assert_eq!(value_of_raw("jpegPhoto:: AAE="), "AAE=");
        assert_eq!(value_of_raw("cn: x"), "x");
    }
}
