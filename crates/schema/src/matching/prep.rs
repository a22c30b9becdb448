//! RFC 4518 string preparation: map, fold, and insignificant space handling.
//!
//! Normalization to NFKC is not done (no Unicode tables without a dependency); case folding is
//! `char::to_lowercase`, which covers what directory data uses in practice.

/// How characters are case folded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fold {
    None,
    Ascii,
    Unicode,
}

/// How spaces are handled after mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spaces {
    /// Attribute values: leading and trailing spaces removed, inner runs collapsed to one space.
    Trim,
    /// Substring assertion parts: runs collapsed to one space, a space at either end kept.
    CollapseKeepEnds,
}

/// RFC 4518 §2.2 mapping: `None` drops the character, `Some(' ')` maps it to SPACE.
fn map_char(c: char) -> Option<char> {
    match c {
        '\u{09}'..='\u{0D}' | '\u{85}' => Some(' '),
        '\u{00}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => None,
        '\u{AD}' | '\u{34F}' | '\u{1806}' | '\u{180B}'..='\u{180E}' | '\u{FE00}'..='\u{FE0F}' => {
            None
        }
        '\u{FFFC}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' => None,
        '\u{2060}'..='\u{2064}'
        | '\u{206A}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}' => None,
        '\u{A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => Some(' '),
        _ => Some(c),
    }
}

/// Prepares `s` for matching. With `Spaces::Trim`, a string of only spaces becomes one space, as
/// RFC 4518 §2.6.1 asks, so that it still differs from nothing at all.
pub(crate) fn prepare(s: &str, fold: Fold, spaces: Spaces) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    let mut saw_space = false;
    for c in s.chars() {
        let Some(c) = map_char(c) else { continue };
        if c == ' ' {
            pending_space = true;
            saw_space = true;
            continue;
        }
        if pending_space && (!out.is_empty() || spaces == Spaces::CollapseKeepEnds) {
            out.push(' ');
        }
        pending_space = false;
        match fold {
            Fold::None => out.push(c),
            Fold::Ascii => out.push(c.to_ascii_lowercase()),
            Fold::Unicode => out.extend(c.to_lowercase()),
        }
    }
    match spaces {
        Spaces::Trim if out.is_empty() && saw_space => out.push(' '),
        Spaces::CollapseKeepEnds if pending_space => out.push(' '),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, fold: Fold, spaces: Spaces, expected: &str) {
        assert_eq!(prepare(input, fold, spaces), expected, "input {input:?}");
    }

    #[test]
    fn preparation_table() {
        use Fold::*;
        use Spaces::*;
        check("  John   Smith ", Unicode, Trim, "john smith");
        check("John\tSmith", None, Trim, "John Smith");
        check("A\u{00A0}B", Ascii, Trim, "a b");
        check("soft\u{AD}hyphen", None, Trim, "softhyphen");
        check("zero\u{200B}width", None, Trim, "zerowidth");
        check("nul\u{0}byte", None, Trim, "nulbyte");
        check("ÄÖÜ", Unicode, Trim, "äöü");
        check("ÄB", Ascii, Trim, "Äb");
        check("   ", None, Trim, " ");
        check("", None, Trim, "");
        check("  a  b  ", Unicode, CollapseKeepEnds, " a b ");
        check("a", Unicode, CollapseKeepEnds, "a");
        check("  ", Unicode, CollapseKeepEnds, " ");
    }
}
