//! Phonetic keys for approximate matching: a Soundex-style code per word.

/// One code per word of an already prepared (case folded, space collapsed) string, joined by spaces.
/// Characters outside ASCII letters are kept as they are so that non-Latin text still compares.
pub(crate) fn phonetic_key(prepared: &str) -> String {
    prepared
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(word_code)
        .collect::<Vec<_>>()
        .join(" ")
}

fn digit(c: char) -> Option<char> {
    match c {
        'b' | 'f' | 'p' | 'v' => Some('1'),
        'c' | 'g' | 'j' | 'k' | 'q' | 's' | 'x' | 'z' => Some('2'),
        'd' | 't' => Some('3'),
        'l' => Some('4'),
        'm' | 'n' => Some('5'),
        'r' => Some('6'),
        _ => None,
    }
}

fn word_code(word: &str) -> String {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let mut out = String::new();
    out.push(first);
    let mut last = digit(first);
    for c in chars {
        if !c.is_ascii() {
            out.push(c);
            last = None;
            continue;
        }
        let d = digit(c);
        // 'h' and 'w' do not separate equal codes; vowels do.
        if d.is_some() && d != last {
            out.extend(d);
        }
        if c != 'h' && c != 'w' {
            last = d;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::phonetic_key;

    #[test]
    fn phonetic_table() {
        for (a, b) in [
            ("robert", "rupert"),
            ("smith", "smyth"),
            ("john smith", "jon smith"),
            ("ashcraft", "ashcroft"),
        ] {
            assert_eq!(phonetic_key(a), phonetic_key(b), "{a} ~ {b}");
        }
        for (a, b) in [("smith", "jones"), ("john", "john smith")] {
            assert_ne!(phonetic_key(a), phonetic_key(b), "{a} !~ {b}");
        }
    }
}
