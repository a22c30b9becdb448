//! The modifies of cn=config: each change applied to a copy of the entry, slapd's `{N}` positions of
//! ordered values included, and only the attributes that change on a running server.

use canopy_proto::{Change, ModifyOperation, ResultCode};

use crate::config::Config;
use crate::config_tree::{live_attributes, numbered, split_ordinal, ConfigEntry, Refusal};

use super::names::{is_ordered, normalize_dn, SCHEMA_ATTRIBUTES};

/// The tree after `changes` to the entry `dn`, and that entry.
pub(super) fn modified_tree(
    entries: &[ConfigEntry],
    dn: &str,
    changes: &[Change],
    base: &Config,
) -> Result<(Vec<ConfigEntry>, ConfigEntry), Refusal> {
    let normalized = normalize_dn(dn);
    let Some(position) = entries
        .iter()
        .position(|e| normalize_dn(&e.dn) == normalized)
    else {
        return Err(Refusal::new(ResultCode::NoSuchObject, ""));
    };
    let old = &entries[position];
    let mut entry = old.clone();
    for change in changes {
        apply(&mut entry, change)?;
    }
    let schema_child = crate::config_tree::schema_child_of(&old.dn);
    let file_schema = schema_child
        .as_ref()
        .is_some_and(|(n, _)| *n < crate::config_tree::file_schema_count(base));
    let overlay = crate::config_tree::overlay_child_of(&old.dn);
    let overlay_attributes = crate::config_tree::live_overlay_attributes(&old.dn);
    let live: &[&str] = match (schema_child, &overlay) {
        (Some(_), _) if !file_schema => &SCHEMA_ATTRIBUTES,
        (_, Some(_)) => &overlay_attributes,
        _ => live_attributes(&old.dn),
    };
    for (name, _) in entry.attrs.iter().chain(old.attrs.iter()) {
        if old.get(name) == entry.get(name) {
            continue;
        }
        if let Some((_, _, overlay_name)) = &overlay {
            if overlay_name == "accesslog" {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "{name}: the accesslog overlay (and its log database) is set in the \
                         configuration file; change it there and restart"
                    ),
                ));
            }
            if !live.iter().any(|l| l.eq_ignore_ascii_case(name)) {
                return Err(Refusal::new(
                    match name.eq_ignore_ascii_case("olcOverlay") {
                        true => ResultCode::NotAllowedOnRdn,
                        false => ResultCode::ObjectClassViolation,
                    },
                    format!("attribute '{name}' not allowed"),
                ));
            }
        }
        if file_schema {
            // A definition that does not parse is refused as slapd refuses it (other); a good
            // one is still not taken live.
            check_definitions(&entry, name)?;
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{name}: this schema is defined in the configuration file (schema_files or \
                     [[schema]]); add a schema of your own under cn=schema,cn=config, or change \
                     the file and restart"
                ),
            ));
        }
        if !live.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{name}: cannot be changed on a running server; change the configuration \
                     file and restart"
                ),
            ));
        }
    }
    entry.attrs.retain(|(_, values)| !values.is_empty());
    let mut tree = entries.to_vec();
    tree[position] = entry.clone();
    Ok((tree, entry))
}

/// One change of a modify, with slapd's `{N}` handling of ordered values: an added `{N}value` goes to
/// position N (the end without a prefix), a deleted `{N}` removes position N, and the values are
/// numbered again afterwards.
fn apply(entry: &mut ConfigEntry, change: &Change) -> Result<(), Refusal> {
    let name = change.modification.name.clone();
    let mut values = Vec::new();
    for raw in &change.modification.values {
        values.push(String::from_utf8(raw.clone()).map_err(|_| {
            Refusal::new(
                ResultCode::InvalidAttributeSyntax,
                format!("{name}: value is not UTF-8"),
            )
        })?);
    }
    let ordered = is_ordered(&name);
    let position = entry
        .attrs
        .iter()
        .position(|(n, _)| n.eq_ignore_ascii_case(&name));
    let mut current: Vec<String> = match (position, ordered) {
        (Some(p), true) => entry.attrs[p]
            .1
            .iter()
            .map(|v| split_ordinal(v).1.to_string())
            .collect(),
        (Some(p), false) => entry.attrs[p].1.clone(),
        (None, _) => Vec::new(),
    };
    match change.operation {
        ModifyOperation::Add => {
            for value in values {
                let (at, text) = match ordered {
                    true => split_ordinal(&value),
                    false => (None, value.as_str()),
                };
                if current.iter().any(|v| v == text) {
                    return Err(Refusal::new(
                        ResultCode::AttributeOrValueExists,
                        format!("modify/add: {name}: value #0 already exists"),
                    ));
                }
                match at {
                    Some(n) if n < current.len() => current.insert(n, text.to_string()),
                    _ => current.push(text.to_string()),
                }
            }
        }
        ModifyOperation::Delete if values.is_empty() => {
            if current.is_empty() {
                return Err(Refusal::new(
                    ResultCode::NoSuchAttribute,
                    format!("modify/delete: {name}: no such attribute"),
                ));
            }
            current.clear();
        }
        ModifyOperation::Delete => {
            for value in values {
                let (at, text) = match ordered {
                    true => split_ordinal(&value),
                    false => (None, value.as_str()),
                };
                let found = match at {
                    Some(n) if n < current.len() && (text.is_empty() || current[n] == text) => {
                        Some(n)
                    }
                    Some(_) => None,
                    None => current.iter().position(|v| v.eq_ignore_ascii_case(text)),
                };
                match found {
                    Some(n) => {
                        current.remove(n);
                    }
                    None => {
                        return Err(Refusal::new(
                            ResultCode::NoSuchAttribute,
                            format!("modify/delete: {name}: no such value"),
                        ))
                    }
                }
            }
        }
        ModifyOperation::Replace => {
            let mut with_positions: Vec<(Option<usize>, String)> = values
                .iter()
                .map(|v| match ordered {
                    true => {
                        let (at, text) = split_ordinal(v);
                        (at, text.to_string())
                    }
                    false => (None, v.clone()),
                })
                .collect();
            // Values that name their positions take them in that order; the others follow as sent.
            with_positions.sort_by_key(|(at, _)| at.unwrap_or(usize::MAX));
            current = with_positions.into_iter().map(|(_, v)| v).collect();
        }
        ModifyOperation::Increment => {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!("{name}: increment is not supported in cn=config"),
            ))
        }
    }
    let stored = match ordered {
        true => numbered(&current),
        false => current,
    };
    match position {
        Some(p) => entry.attrs[p].1 = stored,
        None => entry.attrs.push((name, stored)),
    }
    Ok(())
}

/// Each value of the schema attribute `name` of `entry` well formed, its own OID numeric or a
/// macro: a refusal with slapd's code (other) naming the value otherwise.
fn check_definitions(entry: &ConfigEntry, name: &str) -> Result<(), Refusal> {
    let keyword = match name.to_ascii_lowercase().as_str() {
        "olcattributetypes" => "attributetype",
        "olcobjectclasses" => "objectclass",
        "olcobjectidentifier" => "objectidentifier",
        _ => return Ok(()),
    };
    let schema = canopy_schema::Schema::builtin();
    for (i, value) in entry.ordered(name).iter().enumerate() {
        if let Err(e) = schema.check_definition(keyword, value) {
            return Err(Refusal::new(
                ResultCode::Other,
                format!("{name}: value #{i} invalid: {e}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::PartialAttribute;

    fn change(operation: ModifyOperation, name: &str, values: &[&str]) -> Change {
        Change {
            operation,
            modification: PartialAttribute {
                name: name.into(),
                values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            },
        }
    }

    #[test]
    fn ordered_values_move_and_renumber_as_slapd() {
        let mut entry = ConfigEntry {
            dn: crate::config_tree::database_dn(1),
            attrs: vec![],
        };
        apply(
            &mut entry,
            &change(
                ModifyOperation::Add,
                "olcAccess",
                &[
                    "to * by * read",
                    "{0}to attrs=userPassword by self write by * auth",
                ],
            ),
        )
        .unwrap();
        assert_eq!(
            entry.get("olcAccess"),
            [
                "{0}to attrs=userPassword by self write by * auth",
                "{1}to * by * read"
            ]
        );
        apply(
            &mut entry,
            &change(ModifyOperation::Delete, "olcAccess", &["{0}"]),
        )
        .unwrap();
        assert_eq!(entry.get("olcAccess"), ["{0}to * by * read"]);
        let err = apply(
            &mut entry,
            &change(ModifyOperation::Delete, "olcAccess", &["{5}"]),
        )
        .unwrap_err();
        assert_eq!(err.code, ResultCode::NoSuchAttribute);
    }
}
