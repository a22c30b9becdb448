//! Access rules: slapd's `access` lines requoted, features Canopy refuses, and its compiler's check.

use super::{remark, Directive, Model, Remark};

/// An access-rule word as slapd read it, written back so that Canopy's reader splits it the same way:
/// a value with white space or quotes is quoted again.
pub(super) fn requote(word: &str) -> String {
    let needs = word.is_empty()
        || word.ends_with('=')
        || word.contains(|c: char| c.is_whitespace() || c == '"');
    if !needs {
        return word.to_string();
    }
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    match word.split_once('=') {
        Some((key, value)) if !key.is_empty() && !key.contains(char::is_whitespace) => {
            format!("{key}=\"{}\"", escape(value))
        }
        _ => format!("\"{}\"", escape(word)),
    }
}

/// Access-rule features Canopy refuses (docs/access-control.md, "Not supported"), found by their words.
fn unsupported_access(words: &[String]) -> Option<String> {
    for w in words {
        let lower = w.to_ascii_lowercase();
        let key = lower.split('=').next().unwrap_or("");
        // `dn.level{n}` and `realdn.level{n}` in `<who>` are supported (in `<what>` slapd refuses
        // them, and so does Canopy's compiler); `self.level{n}` (and `realself.`) is not.
        if key.contains("self.level{") {
            return Some("`self.level{n}`".into());
        }
        if key.starts_with("val.") && !matches!(key, "val.exact" | "val.regex") {
            return Some(format!("the DN styles of `val` (`{key}`)"));
        }
        if matches!(
            key.split('.').next().unwrap_or(""),
            "domain" | "sockurl" | "sockname" | "aci" | "dynacl"
        ) {
            return Some(format!("`{key}` clauses"));
        }
        // `$N` in `dn` (and `realdn`) patterns is supported; in group DNs, and value submatches, not.
        if key.starts_with("group") && key.contains("expand") {
            return Some("`group.expand` substitutions".into());
        }
        if lower.contains("${v") {
            return Some("`${v<n>}` value substitutions".into());
        }
    }
    None
}

/// Which list an `access` line goes to.
#[derive(Clone, Copy)]
pub(super) enum Rules {
    Frontend,
    Database(usize),
    Monitor,
}

pub(super) fn access(m: &mut Model, d: &Directive, to: Rules) {
    let words: Vec<String> = d.args.clone();
    if words.first().map(|w| w.eq_ignore_ascii_case("to")) != Some(true) {
        return m.leave(d, "expected `to <what> by <who> <access>`");
    }
    let rule = words
        .iter()
        .map(|w| requote(w))
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(feature) = unsupported_access(&words) {
        m.leave(d, format!("Canopy's access rules do not support {feature}; the rule is left out, which may grant or deny more than slapd did: review the list"));
        if let Rules::Database(i) = to {
            m.databases[i].dropped_access.push(rule);
        }
        return;
    }
    match to {
        Rules::Database(i) => {
            m.databases[i].access.push(rule);
            m.databases[i].access_origin.push(remark(d));
        }
        Rules::Monitor => m.monitor_access.push(rule),
        Rules::Frontend => {
            // Rules for the root DSE and cn=Subschema: Canopy serves both to everyone, as these rules do.
            let special = words
                .get(1)
                .and_then(|w| w.split_once('='))
                .is_some_and(|(k, v)| {
                    matches!(
                        k.to_ascii_lowercase().as_str(),
                        "dn" | "dn.exact" | "dn.base" | "dn.baseobject"
                    ) && (v.is_empty() || v.eq_ignore_ascii_case("cn=subschema"))
                })
                && words.get(2).is_some_and(|w| w.eq_ignore_ascii_case("by"));
            if special {
                m.note(d, "Canopy serves the root DSE and cn=Subschema to everyone");
            } else {
                m.frontend_access.push(rule);
                m.frontend_access_origin.push(remark(d));
            }
        }
    }
}

/// Access rules Canopy's own compiler refuses (what the word check in [`access`] cannot tell: an unknown
/// attribute, a bad DN or regular expression...), each left out with the compiler's reason. Needs the
/// schema: when the schema files do not load here, the rules are not checked (a note says so;
/// `canopy serve --check` checks them where the files are).
pub(super) fn check_access(m: &mut Model) {
    let config = canopy_server::Config {
        schema_files: m
            .schema_files
            .iter()
            .map(std::path::PathBuf::from)
            .collect(),
        overlay: m
            .databases
            .iter()
            .flat_map(|db| &db.overlays)
            .map(|o| canopy_server::config::OverlayConfig {
                name: o.name.clone(),
                options: Default::default(),
            })
            .collect(),
        ..canopy_server::Config::default()
    };
    let schema = match canopy_server::load_schema(&config) {
        Ok(schema) => schema,
        Err(e) => {
            m.notes.push(Remark {
                origin: "schema".into(),
                text: m.schema_files.join(" "),
                reason: format!(
                    "access rules not checked against the schema, which does not load here: {e}"
                ),
            });
            return;
        }
    };
    let refused = |rule: &str| {
        canopy_server::acl::Acl::compile(&schema, &[rule.to_string()], Vec::new()).err()
    };
    let mut left_out = Vec::new();
    let mut check = |rules: &mut Vec<String>,
                     origins: &mut Vec<Remark>,
                     dropped: &mut Vec<String>| {
        let mut kept = (Vec::new(), Vec::new());
        for (rule, origin) in rules.drain(..).zip(origins.drain(..)) {
            match refused(&rule) {
                Some(why) => {
                    let why = why
                        .strip_prefix("access rule 0: ")
                        .unwrap_or(&why)
                        .to_string();
                    left_out.push(Remark {
                        reason: format!(
                            "Canopy refuses this rule ({why}); it is left out, which may grant or deny more \
                             than slapd did: review the list"
                        ),
                        ..origin
                    });
                    dropped.push(rule);
                }
                None => {
                    kept.0.push(rule);
                    kept.1.push(origin);
                }
            }
        }
        *rules = kept.0;
        *origins = kept.1;
    };
    let mut frontend_dropped = Vec::new();
    check(
        &mut m.frontend_access,
        &mut m.frontend_access_origin,
        &mut frontend_dropped,
    );
    for db in &mut m.databases {
        check(
            &mut db.access,
            &mut db.access_origin,
            &mut db.dropped_access,
        );
        db.dropped_access.extend(frontend_dropped.iter().cloned());
    }
    m.left_out.extend(left_out);
}
