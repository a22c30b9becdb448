//! A line of an overlay's slapd-form setting (`retcode-item`, `valsort-attr`) cut into its words.

/// Splits a line as slapd's configuration reader does: blanks separate words, double quotes group
/// (and are dropped), a backslash makes the next character literal.
pub(crate) fn words(line: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut quoted) = (Vec::new(), None::<String>, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            '\\' => word
                .get_or_insert_with(String::new)
                .push(chars.next().unwrap_or('\\')),
            ' ' | '\t' if !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    words.extend(word);
    Ok(words)
}
