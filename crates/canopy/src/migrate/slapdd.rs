//! Reading a slapd.d tree (cn=config as LDIF files): `cn=config.ldif`, `cn=config/cn=module{N}.ldif`,
//! `cn=config/cn=schema/cn={N}NAME.ldif`, `cn=config/olcDatabase={N}TYPE.ldif` and its
//! `olcOverlay={M}NAME.ldif` children, turned into the directives slapd.conf would have.

use std::path::{Path, PathBuf};

use base64::Engine;

use super::{conf, Directive};

/// One attribute value of a slapd.d file with the line it starts on.
#[derive(Debug, PartialEq)]
pub struct Value {
    pub line: usize,
    pub attr: String,
    pub value: String,
}

/// The attribute values of one slapd.d file (one entry): unfolded, comments skipped, `::` decoded.
pub fn parse_entry(text: &str, shown: &str) -> Result<Vec<Value>, String> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut comment = false;
    for (index, raw) in text.lines().enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(rest) = raw.strip_prefix(' ') {
            if comment {
                continue;
            }
            match lines.last_mut() {
                Some((_, last)) => last.push_str(rest),
                None => return Err(format!("{shown}:{}: continuation of nothing", index + 1)),
            }
            continue;
        }
        comment = raw.starts_with('#');
        if !comment && !raw.is_empty() {
            lines.push((index + 1, raw.to_string()));
        }
    }
    let mut values = Vec::new();
    for (line, text) in lines {
        let Some((attr, rest)) = text.split_once(':') else {
            return Err(format!("{shown}:{line}: not an attribute line: {text:?}"));
        };
        let value = if let Some(encoded) = rest.strip_prefix(':') {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .map_err(|e| format!("{shown}:{line}: {attr}: bad base64: {e}"))?;
            String::from_utf8(bytes).map_err(|_| format!("{shown}:{line}: {attr}: not UTF-8"))?
        } else if rest.starts_with('<') {
            return Err(format!("{shown}:{line}: {attr}: URL values are not read"));
        } else {
            rest.trim_start().to_string()
        };
        values.push(Value {
            line,
            attr: attr.trim().to_string(),
            value,
        });
    }
    Ok(values)
}

/// `{N}rest` → (N, rest); names without an ordinal sort as 0.
fn ordinal(name: &str) -> (i64, &str) {
    if let Some(rest) = name.strip_prefix('{') {
        if let Some((n, tail)) = rest.split_once('}') {
            if let Ok(n) = n.parse() {
                return (n, tail);
            }
        }
    }
    (0, name)
}

/// A value without its `{N}` ordering prefix.
pub fn strip_ordinal(value: &str) -> &str {
    let (_, rest) = ordinal(value);
    if value.starts_with('{') && rest.len() < value.len() {
        rest
    } else {
        value
    }
}

/// The `.ldif` files in `dir` whose names start with `prefix`, ordered by their `{N}`.
fn children(dir: &Path, prefix: &str) -> Result<Vec<PathBuf>, String> {
    let mut found: Vec<(i64, String, PathBuf)> = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix(prefix) {
            if let Some(stem) = rest.strip_suffix(".ldif") {
                let (n, _) = ordinal(stem);
                found.push((n, name.clone(), entry.path()));
            }
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, _, path)| path).collect())
}

/// Attributes that describe the entry itself rather than a setting.
fn bookkeeping(attr: &str) -> bool {
    matches!(
        attr.to_ascii_lowercase().as_str(),
        "dn" | "objectclass"
            | "structuralobjectclass"
            | "entryuuid"
            | "entrycsn"
            | "creatorsname"
            | "createtimestamp"
            | "modifiersname"
            | "modifytimestamp"
            | "cn"
            | "olcdatabase"
            | "olcoverlay"
            | "olcbackend"
    )
}

/// The slapd.conf directive an olc attribute stands for: `olcDbIndex` → `index`, `olcRootDN` → `rootdn`
/// (compared by [`super::norm`], so `olcPasswordHash` meets `password-hash`).
fn directive_name(attr: &str) -> String {
    let lower = attr.to_ascii_lowercase();
    let bare = lower.strip_prefix("olc").unwrap_or(&lower);
    match bare {
        "dbnosync" => "dbnosync".to_string(),
        // The accesslog overlay's olcAccessLog* are slapd.conf's log* (slapo-accesslog(5)).
        _ if bare.starts_with("accesslog") => format!("log{}", &bare["accesslog".len()..]),
        _ => bare.strip_prefix("db").unwrap_or(bare).to_string(),
    }
}

/// Settings whose value is one word however it is spelled (DNs, paths, passwords): not split.
fn single_valued(directive: &str) -> bool {
    matches!(
        directive,
        "suffix"
            | "rootdn"
            | "rootpw"
            | "directory"
            | "updateref"
            | "ppolicydefault"
            | "memberofdn"
            | "memberofgroupoc"
            | "memberofmemberad"
            | "memberofmemberofad"
            | "refintnothing"
            | "refintmodifiersname"
            | "uniquebase"
            | "auditlogfile"
            | "logdb"
            | "modulepath"
            | "pidfile"
            | "argsfile"
    ) || directive.ends_with("file")
        || directive.ends_with("path")
}

/// One entry's settings as directives.
fn entry_directives(path: &Path, shown: &str, out: &mut Vec<Directive>) -> Result<(), String> {
    let text = std::fs::read(path).map_err(|e| format!("{shown}: {e}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("{shown}: not UTF-8 text"))?;
    for value in parse_entry(&text, shown)? {
        if bookkeeping(&value.attr) {
            continue;
        }
        let name = directive_name(&value.attr);
        let origin = format!("{shown}:{}", value.line);
        let bare = strip_ordinal(&value.value);
        let args = if single_valued(&name) {
            vec![bare.to_string()]
        } else {
            conf::words(bare).map_err(|e| format!("{origin}: {}: {e}", value.attr))?
        };
        out.push(Directive {
            origin,
            name,
            args,
            text: format!("{}: {}", value.attr, value.value),
        });
    }
    Ok(())
}

/// The directives of the slapd.d tree in `dir`, in slapd's order: global settings, modules, schema,
/// then each database (`database TYPE` first) with its overlays (`overlay NAME` first).
pub fn read(dir: &Path) -> Result<Vec<Directive>, String> {
    let root = dir.join("cn=config.ldif");
    if !root.is_file() {
        return Err(format!(
            "{}: no cn=config.ldif: not a slapd.d directory",
            dir.display()
        ));
    }
    let sub = dir.join("cn=config");
    let mut out = Vec::new();
    entry_directives(&root, "cn=config.ldif", &mut out)?;
    for module in children(&sub, "cn=module")? {
        let shown = format!("cn=config/{}", file_name(&module));
        entry_directives(&module, &shown, &mut out)?;
    }
    for schema in children(&sub.join("cn=schema"), "cn=")? {
        let name = file_name(&schema);
        let shown = format!("cn=config/cn=schema/{name}");
        out.push(Directive {
            origin: format!("{shown}:1"),
            name: "include".into(),
            // Absolute, so that the output names the file wherever Canopy runs from.
            args: vec![std::fs::canonicalize(&schema)
                .unwrap_or_else(|_| schema.clone())
                .display()
                .to_string()],
            text: format!("dn: {}", name.trim_end_matches(".ldif")),
        });
    }
    for backend in children(&sub, "olcBackend=")? {
        let name = file_name(&backend);
        out.push(Directive {
            origin: format!("cn=config/{name}:1"),
            name: "backend".into(),
            args: vec![ordinal(
                name.trim_start_matches("olcBackend=")
                    .trim_end_matches(".ldif"),
            )
            .1
            .to_string()],
            text: format!("dn: {}", name.trim_end_matches(".ldif")),
        });
    }
    for database in children(&sub, "olcDatabase=")? {
        let name = file_name(&database);
        let stem = name.trim_end_matches(".ldif");
        let (_, kind) = ordinal(stem.trim_start_matches("olcDatabase="));
        let shown = format!("cn=config/{name}");
        out.push(Directive {
            origin: format!("{shown}:1"),
            name: "database".into(),
            args: vec![kind.to_string()],
            text: format!("dn: {stem},cn=config"),
        });
        entry_directives(&database, &shown, &mut out)?;
        let overlays = sub.join(stem);
        for overlay in children(&overlays, "olcOverlay=")? {
            let oname = file_name(&overlay);
            let ostem = oname.trim_end_matches(".ldif");
            let (_, kind) = ordinal(ostem.trim_start_matches("olcOverlay="));
            let shown = format!("cn=config/{stem}/{oname}");
            out.push(Directive {
                origin: format!("{shown}:1"),
                name: "overlay".into(),
                args: vec![kind.to_string()],
                text: format!("dn: {ostem},{stem},cn=config"),
            });
            entry_directives(&overlay, &shown, &mut out)?;
        }
    }
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_unfold_decode_and_keep_lines() {
        let text = "# AUTO-GENERATED FILE\n# CRC32 1234\ndn: olcDatabase={1}mdb\nolcAccess: {0}to * by\n  * read\nolcRootPW:: e1NTSEF9YWJj\n";
        let values = parse_entry(text, "x.ldif").unwrap();
        assert_eq!(
            values,
            [
                Value {
                    line: 3,
                    attr: "dn".into(),
                    value: "olcDatabase={1}mdb".into()
                },
                Value {
                    line: 4,
                    attr: "olcAccess".into(),
                    value: "{0}to * by * read".into()
                },
                Value {
                    line: 6,
                    attr: "olcRootPW".into(),
                    value: "{SSHA}abc".into()
                },
            ]
        );
        assert!(parse_entry("olcRootPW:: !!!\n", "x").is_err());
        assert!(parse_entry(" lonely\n", "x").is_err());
        assert!(parse_entry("novalue\n", "x").is_err());
    }

    #[test]
    fn ordinals_and_names() {
        assert_eq!(strip_ordinal("{12}to * by * read"), "to * by * read");
        assert_eq!(strip_ordinal("{SSHA}abc"), "{SSHA}abc");
        assert_eq!(strip_ordinal("to *"), "to *");
        assert_eq!(ordinal("{-1}frontend"), (-1, "frontend"));
        assert_eq!(directive_name("olcDbIndex"), "index");
        assert_eq!(directive_name("olcRootDN"), "rootdn");
        assert_eq!(directive_name("olcDbNoSync"), "dbnosync");
        assert_eq!(directive_name("olcMemberOfDangling"), "memberofdangling");
        assert_eq!(directive_name("olcAccessLogDB"), "logdb");
        assert_eq!(directive_name("olcAccessLogOps"), "logops");
        assert_eq!(directive_name("olcAccessLogPurge"), "logpurge");
    }
}
