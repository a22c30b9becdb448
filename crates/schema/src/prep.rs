//! String preparation for the string matching rules, as Debian's slapd 2.5 does it.
//!
//! slapd does not apply the RFC 4518 §2.2 mapping table: control, zero-width and other space
//! characters stay significant (observed: "a\u{200B}b", "a\tb" and "a\u{AD}b" each match only
//! themselves). It normalizes to NFKC, so full-width letters, no-break space and ideographic space
//! compare like their ASCII forms and precomposed é equals e + U+0301. Only U+0020 (after NFKC) is
//! an insignificant space. We follow slapd; see docs/design/index-keys.md.

use std::borrow::Cow;
use unicode_normalization::UnicodeNormalization;

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

/// NFKC followed by the case folding, recomposed when folding may have broken composition.
fn normalize_chars(s: &str, fold: Fold) -> Cow<'_, str> {
    if s.is_ascii() {
        return match fold {
            Fold::None => Cow::Borrowed(s),
            Fold::Ascii | Fold::Unicode => Cow::Owned(s.to_ascii_lowercase()),
        };
    }
    let composed: String = s.nfkc().collect();
    match fold {
        Fold::None => Cow::Owned(composed),
        Fold::Ascii => Cow::Owned(composed.to_ascii_lowercase()),
        Fold::Unicode => Cow::Owned(
            composed
                .chars()
                .flat_map(char::to_lowercase)
                .collect::<String>()
                .nfc()
                .collect(),
        ),
    }
}

/// Prepares `s` for matching. With `Spaces::Trim`, a string of only spaces becomes one space, so
/// that it still differs from nothing at all (RFC 4518 §2.6.1).
pub(crate) fn prepare(s: &str, fold: Fold, spaces: Spaces) -> String {
    match s.is_ascii() {
        true => prepare_ascii(s, fold, spaces),
        false => prepare_general(s, fold, spaces),
    }
}

/// `prepare` for any string: the Unicode normalisation, then the space handling.
fn prepare_general(s: &str, fold: Fold, spaces: Spaces) -> String {
    let chars = normalize_chars(s, fold);
    let mut out = String::with_capacity(chars.len());
    let mut pending_space = false;
    let mut saw_space = false;
    for c in chars.chars() {
        if c == ' ' {
            pending_space = true;
            saw_space = true;
            continue;
        }
        if pending_space && (!out.is_empty() || spaces == Spaces::CollapseKeepEnds) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    match spaces {
        Spaces::Trim if out.is_empty() && saw_space => out.push(' '),
        Spaces::CollapseKeepEnds if pending_space => out.push(' '),
        _ => {}
    }
    out
}

/// `prepare` of an ASCII string (NFKC leaves ASCII as it is, and both foldings are the ASCII one), a
/// byte at a time; a value without a space, the usual one, is one copy folded in place.
fn prepare_ascii(s: &str, fold: Fold, spaces: Spaces) -> String {
    let fold_byte = |b: u8| match fold {
        Fold::None => b,
        Fold::Ascii | Fold::Unicode => b.to_ascii_lowercase(),
    };
    if !s.as_bytes().contains(&b' ') {
        let mut out = s.to_owned();
        if fold != Fold::None {
            out.make_ascii_lowercase();
        }
        return out;
    }
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    let mut saw_space = false;
    for &b in s.as_bytes() {
        if b == b' ' {
            pending_space = true;
            saw_space = true;
            continue;
        }
        if pending_space && (!out.is_empty() || spaces == Spaces::CollapseKeepEnds) {
            out.push(' ');
        }
        pending_space = false;
        out.push(char::from(fold_byte(b)));
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
        // Observed on slapd 2.5: no RFC 4518 §2.2 mapping, NFKC, only U+0020 is a space.
        check("John\tSmith", None, Trim, "John\tSmith");
        check("A\u{00A0}B", Ascii, Trim, "a b");
        check("a\u{3000}b", Unicode, Trim, "a b");
        check("soft\u{AD}hyphen", None, Trim, "soft\u{AD}hyphen");
        check("zero\u{200B}width", None, Trim, "zero\u{200B}width");
        check("a\u{2028}b\u{85}c", None, Trim, "a\u{2028}b\u{85}c");
        check("\u{FF46}\u{FF35}LL", Unicode, Trim, "full");
        check("\u{FF46}\u{FF35}LL", None, Trim, "fULL");
        check("Cafe\u{301}", Unicode, Trim, "caf\u{E9}");
        check("CAF\u{C9}", Unicode, Trim, "caf\u{E9}");
        check("\u{DF}", Unicode, Trim, "\u{DF}");
        check("SS", Unicode, Trim, "ss");
        check(
            "\u{6F22}\u{5B57} \u{30C6}",
            Unicode,
            Trim,
            "\u{6F22}\u{5B57} \u{30C6}",
        );
        check("\u{212B}", Unicode, Trim, "\u{E5}");
        check("ÄÖÜ", Unicode, Trim, "äöü");
        check("ÄB", Ascii, Trim, "Äb");
        check("   ", None, Trim, " ");
        check("", None, Trim, "");
        check("  a  b  ", Unicode, CollapseKeepEnds, " a b ");
        check("a", Unicode, CollapseKeepEnds, "a");
        check("  ", Unicode, CollapseKeepEnds, " ");
        check("User0012345", Unicode, Trim, "user0012345");
        check("User0012345", None, Trim, "User0012345");
        check(" A ", Ascii, CollapseKeepEnds, " a ");
    }

    /// The ASCII path gives what the general one gives (NFKC of ASCII is itself).
    #[test]
    fn ascii_path_agrees_with_the_general_one() {
        for s in [
            "",
            " ",
            "   ",
            "a",
            " A",
            "B ",
            "  Ab  Cd  ",
            "x\tY",
            "MiXeD-Case.01",
            "a  b",
            "\u{7f}Z",
        ] {
            for fold in [Fold::None, Fold::Ascii, Fold::Unicode] {
                for spaces in [Spaces::Trim, Spaces::CollapseKeepEnds] {
                    assert_eq!(
                        prepare_ascii(s, fold, spaces),
                        prepare_general(s, fold, spaces),
                        "{s:?}"
                    );
                }
            }
        }
    }
}
