//! Reading slapd.conf as slapd reads it: logical lines (a line starting with white space continues the
//! previous one, `#` starts a comment line), words split on white space with double quotes grouping and
//! a backslash taking the next character literally, and `include` of further configuration files.

use std::path::{Path, PathBuf};

use super::Directive;

/// Splits one logical line into words, as slapd's `strtok_quote`: double quotes group (and are removed),
/// a backslash takes the next character as it is. An unterminated quote is an error.
pub fn words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(next) => word.push(next),
                    None => word.push('\\'),
                }
            }
            '"' => {
                in_word = true;
                quoted = !quoted;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if quoted {
        return Err("unterminated double quote".into());
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The logical lines of a slapd.conf text with the number of the physical line each starts on.
pub fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    // Whether the last logical line is a comment (its continuations are comment too).
    let mut comment = false;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.trim().is_empty() {
            continue;
        }
        if raw.starts_with([' ', '\t']) {
            if comment {
                continue;
            }
            if let Some((_, last)) = lines.last_mut() {
                last.push(' ');
                last.push_str(raw.trim_start());
                continue;
            }
            lines.push((number, raw.trim_start().to_string()));
            continue;
        }
        comment = raw.starts_with('#');
        if !comment {
            lines.push((number, raw.to_string()));
        }
    }
    lines
}

/// The directives of a slapd.conf file, with those of the configuration files it includes in place
/// (schema files, `.schema` and `.ldif`, stay `include` directives). Errors: a file that cannot be read,
/// an include loop, a line that does not split.
pub fn read(
    path: &Path,
    shown: &str,
    depth: usize,
    out: &mut Vec<Directive>,
) -> Result<(), String> {
    if depth > 16 {
        return Err(format!("{shown}: includes nested more than 16 deep"));
    }
    let text = std::fs::read(path).map_err(|e| format!("{shown}: {e}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("{shown}: not UTF-8 text"))?;
    for (line, logical) in logical_lines(&text) {
        let origin = format!("{shown}:{line}");
        let args = words(&logical).map_err(|e| format!("{origin}: {e}"))?;
        let Some((name, rest)) = args.split_first() else {
            continue;
        };
        if name.eq_ignore_ascii_case("include") && rest.len() == 1 && !is_schema_file(&rest[0]) {
            let included = PathBuf::from(&rest[0]);
            let resolved = if included.is_relative() {
                path.parent().unwrap_or(Path::new(".")).join(&included)
            } else {
                included.clone()
            };
            read(&resolved, &rest[0], depth + 1, out)?;
            continue;
        }
        out.push(Directive {
            origin,
            name: name.clone(),
            args: rest.to_vec(),
            text: logical.trim().to_string(),
        });
    }
    Ok(())
}

/// A schema file by its name: slapd.conf includes them like configuration, Canopy loads them as schema.
pub fn is_schema_file(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".schema") || lower.ends_with(".ldif")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_as_slapd_splits_them() {
        assert_eq!(
            words(r#"access to dn.subtree="ou=a b,dc=x"  by * read"#).unwrap(),
            ["access", "to", "dn.subtree=ou=a b,dc=x", "by", "*", "read"]
        );
        assert_eq!(words(r#"a "b \" c" d\ e"#).unwrap(), ["a", "b \" c", "d e"]);
        assert_eq!(words(r#"x """#).unwrap(), ["x", ""]);
        assert!(words(r#"suffix "dc=x"#).is_err());
        assert_eq!(words("   ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn continuation_and_comment_lines() {
        let text =
            "# comment\n  continued comment\nsuffix\n  \"dc=x\"\n\n\tindex cn eq\n#x\nrootdn a\r\n";
        let lines = logical_lines(text);
        assert_eq!(
            lines,
            [
                (3, "suffix \"dc=x\" index cn eq".to_string()),
                (8, "rootdn a".to_string())
            ]
        );
    }

    #[test]
    fn includes_are_followed_and_schema_includes_kept() {
        let dir = std::env::temp_dir().join(format!("canopy-migrate-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("main.conf"),
            "include part.conf\ninclude /x/y.schema\n",
        )
        .unwrap();
        std::fs::write(dir.join("part.conf"), "serverID 3\n").unwrap();
        let mut out = Vec::new();
        read(&dir.join("main.conf"), "main.conf", 0, &mut out).unwrap();
        let names: Vec<_> = out
            .iter()
            .map(|d| (d.origin.as_str(), d.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [("part.conf:1", "serverID"), ("main.conf:2", "include")]
        );
        std::fs::write(dir.join("loop.conf"), "include loop.conf\n").unwrap();
        assert!(read(&dir.join("loop.conf"), "loop.conf", 0, &mut Vec::new()).is_err());
        assert!(read(
            &dir.join("missing.conf"),
            "missing.conf",
            0,
            &mut Vec::new()
        )
        .is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
