//! The options of the overlays that keep entries consistent: constraint's rules, refint's attributes,
//! unique's domains.

use canopy_directory::overlay::constraint;
use canopy_directory::overlay::refint;
use canopy_directory::overlay::unique::{self, Domain, Scope, Uri};
use canopy_proto::Dn;

use super::values::{dn, names, strings};

/// `constraints`: one string per slapd `constraint_attribute` line, without the keyword. The syntax
/// is checked here; the names against the schema when the database opens (`WriteHook::check`).
pub(super) fn constraint_config(options: &toml::Table) -> Result<Vec<constraint::Rule>, String> {
    let mut rules = None;
    for (key, value) in options {
        match key.as_str() {
            "constraints" => {
                let lines = value
                    .as_array()
                    .ok_or_else(|| format!("{key}: expected a list of strings"))?;
                let mut parsed = Vec::with_capacity(lines.len());
                for (i, line) in lines.iter().enumerate() {
                    let line = line
                        .as_str()
                        .ok_or_else(|| format!("{key}[{i}]: expected a string"))?;
                    let rule = constraint::Rule::parse(line)
                        .map_err(|e| format!("{key}[{i}] {line:?}: {e}"))?;
                    parsed.push(rule);
                }
                rules = Some(parsed);
            }
            other => {
                return Err(format!(
                    "unknown option {other:?} (constraint takes constraints, a list of \
                     constraint_attribute lines)"
                ))
            }
        }
    }
    rules.ok_or_else(|| {
        "constraints: missing (a list of constraint_attribute lines, e.g. \"mail size 256\")".into()
    })
}

/// slapd's `refint_*` options without the prefix.
pub(super) fn refint_config(options: &toml::Table) -> Result<refint::Config, String> {
    let mut config = refint::Config::new(Vec::new());
    for (key, value) in options {
        match key.as_str() {
            "attributes" => config.attributes = names(key, value)?,
            "nothing" => config.nothing = Some(dn(key, value)?),
            "modifiersname" => config.modifier = dn(key, value)?,
            other => {
                return Err(format!(
                    "unknown option {other:?} (refint takes attributes, nothing, modifiersname)"
                ))
            }
        }
    }
    if config.attributes.is_empty() {
        return Err(
            "attributes: name the attributes to keep intact (slapd's refint_attributes)".into(),
        );
    }
    Ok(config)
}

/// slapd's `unique_*` options without the prefix: `uri` domains, or the older single domain of
/// `attributes` (or `ignore`), `base` and `strict`.
pub(super) fn unique_config(options: &toml::Table) -> Result<unique::Config, String> {
    let mut config = unique::Config::default();
    let (mut attributes, mut ignore) = (None, None);
    let (mut base, mut strict) = (None, None);
    for (key, value) in options {
        match key.as_str() {
            "uri" => {
                for text in strings(key, value)? {
                    config
                        .domains
                        .push(Domain::parse(&text).map_err(|e| format!("uri: {e}"))?);
                }
            }
            "attributes" => attributes = Some(names(key, value)?),
            "ignore" => ignore = Some(names(key, value)?),
            "base" => {
                let text = dn(key, value)?;
                base = Some(Dn::parse(text.as_bytes()).map_err(|e| format!("{key}: {e}"))?);
            }
            "strict" => {
                strict = Some(
                    value
                        .as_bool()
                        .ok_or_else(|| format!("{key}: expected true or false"))?,
                )
            }
            other => {
                return Err(format!(
                "unknown option {other:?} (unique takes uri, or attributes, ignore, base, strict)"
            ))
            }
        }
    }
    let legacy = attributes.is_some() || ignore.is_some() || base.is_some() || strict.is_some();
    if legacy && !config.domains.is_empty() {
        return Err("uri cannot be combined with attributes, ignore, base or strict".into());
    }
    if attributes.is_some() && ignore.is_some() {
        return Err("attributes and ignore cannot both be set".into());
    }
    if legacy {
        config.domains.push(Domain {
            uris: vec![Uri {
                base,
                attributes: attributes.or_else(|| ignore.clone()).unwrap_or_default(),
                scope: Scope::Sub,
                filter: None,
            }],
            ignore: ignore.is_some(),
            strict: strict.unwrap_or(false),
        });
    }
    if config.domains.is_empty() {
        return Err("no domain: set uri (or attributes)".into());
    }
    Ok(config)
}
