//! `$N` substitutions (slapd's `expand`): a `<who>` DN pattern filled in, entry by entry, with the parts
//! of the entry's DN that the rule's `<what>` DN pattern matched.

use canopy_schema::NormDn;

use super::dn_matches;
use super::parse::{dn_pattern, regex, DnPattern};

/// A `dn.regex=` or `dn[.style],expand=` pattern of a `<who>` clause, expanded per entry.
#[derive(Debug)]
pub struct Expanding {
    /// The DN style the expanded text is read in (`regex`, `exact`, `subtree`, `level{n}`...).
    pub style: String,
    /// The pattern as written, with its `$N` and `${N}` references.
    pub pattern: String,
}

/// Whether `pattern` refers to submatches (`$N`, `${N}`) or writes `$$`; a `$` before anything else
/// (a regular expression's end anchor) is no reference.
pub fn has_references(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    bytes
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_digit() || w[1] == b'{' || w[1] == b'$'))
}

impl Expanding {
    /// Checks the parts that do not depend on the entry: the style, and `${v<n>}` (value submatches,
    /// which Canopy does not offer). A regular expression is compiled with every reference empty.
    pub fn new(style: &str, pattern: &str) -> Result<Expanding, String> {
        if pattern.contains("${v") || pattern.contains("${V") {
            return Err("${v<n>} value submatches are not supported".into());
        }
        let known = matches!(
            style,
            "" | "base"
                | "baseobject"
                | "exact"
                | "one"
                | "onelevel"
                | "sub"
                | "subtree"
                | "children"
                | "regex"
        ) || style
            .strip_prefix("level{")
            .and_then(|l| l.strip_suffix('}'))
            .is_some_and(|l| l.parse::<usize>().is_ok());
        if !known {
            return Err("unknown DN style".into());
        }
        if style == "regex" {
            regex(&substitute(pattern, &[]).ok_or("bad $ reference")?)?;
        }
        Ok(Expanding {
            style: style.to_string(),
            pattern: pattern.to_string(),
        })
    }

    /// The pattern filled in with the submatches of `what` on the entry `ndn`; None when `what`
    /// does not match the entry or a reference is malformed.
    pub fn expand(&self, what: &DnPattern, ndn: &NormDn) -> Option<String> {
        substitute(&self.pattern, &submatches(what, ndn)?)
    }

    /// Whether the requester `me` matches the pattern expanded for the entry `ndn`. A text that is no
    /// DN (or no regular expression), or the empty DN, once expanded matches no one, as in slapd.
    pub fn matches(
        &self,
        schema: &canopy_schema::Schema,
        what: &DnPattern,
        ndn: &NormDn,
        me: &NormDn,
    ) -> bool {
        let Some(text) = self.expand(what, ndn) else {
            return false;
        };
        match dn_pattern(schema, &self.style, &text) {
            // slapd compares the DN strings: an empty pattern (a reference to no submatch) leaves no
            // separator before the requester's DN's tail, and nobody matches.
            Ok(
                DnPattern::Base(dn)
                | DnPattern::One(dn)
                | DnPattern::Subtree(dn)
                | DnPattern::Children(dn)
                | DnPattern::Level(dn, _),
            ) if dn.is_root() => false,
            Ok(pattern) => dn_matches(&pattern, me),
            Err(_) => false,
        }
    }
}

/// slapd's submatches of a `<what>` DN pattern: a regular expression's groups; `$0` the entry's DN
/// for the other styles, and `$1` its part the pattern DN matched for one, subtree and children.
pub(super) fn submatches(what: &DnPattern, ndn: &NormDn) -> Option<Vec<Option<String>>> {
    if !dn_matches(what, ndn) {
        return None;
    }
    let text = ndn.as_str();
    Some(match what {
        DnPattern::Regex(re) => {
            let mut caps = re.create_captures();
            re.captures(text, &mut caps);
            (0..caps.group_len())
                .map(|i| caps.get_group(i).map(|span| text[span.range()].to_string()))
                .collect()
        }
        DnPattern::One(dn) | DnPattern::Subtree(dn) | DnPattern::Children(dn) => {
            let tail = text
                .len()
                .checked_sub(dn.as_str().len())
                .and_then(|at| text.get(at..))
                .unwrap_or(dn.as_str());
            vec![Some(text.to_string()), Some(tail.to_string())]
        }
        _ => vec![Some(text.to_string())],
    })
}

/// slapd's `acl_string_expand`: `$N` and `${N}` become submatch N (empty when there is none),
/// `$$` a `$`; a `$` before anything else is dropped with that character, and a final `$` kept.
pub(super) fn substitute(pattern: &str, subs: &[Option<String>]) -> Option<String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let n = match chars.next() {
            None => {
                out.push('$');
                break;
            }
            Some('$') => {
                out.push('$');
                continue;
            }
            Some(d) if d.is_ascii_digit() => d.to_digit(10)? as usize,
            Some('{') => {
                let mut n = 0usize;
                loop {
                    match chars.next()? {
                        '}' => break,
                        d if d.is_ascii_digit() => n = n * 10 + d.to_digit(10)? as usize,
                        _ => {}
                    }
                }
                n
            }
            Some(_) => continue,
        };
        if n >= 100 {
            return None;
        }
        if let Some(Some(sub)) = subs.get(n) {
            out.push_str(sub);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_follows_slapd() {
        let subs = [Some("all".to_string()), Some("one".to_string()), None];
        assert_eq!(substitute("a$1b${1}c$$d$", &subs).unwrap(), "aonebonec$d$");
        assert_eq!(substitute("$0-$2-$7", &subs).unwrap(), "all--");
        assert_eq!(substitute("x$)y", &subs).unwrap(), "xy");
        assert!(substitute("${1", &subs).is_none());
        assert!(has_references("uid=$1,dc=x") && has_references("a${12}"));
        assert!(!has_references("^uid=[^,]+,dc=x$"));
    }
}
