//! The adds of cn=config: a data database, a schema under cn=schema, a module list; each an entry
//! numbered after the last of its kind, and the write that stores it.

use canopy_directory::WriteOp;
use canopy_proto::ResultCode;

use crate::config::Config;
use crate::config_tree::{live_attributes, numbered, split_ordinal, ConfigEntry, Refusal};
use crate::state::ServerState;

use super::names::{is_ordered, normalize_dn, SCHEMA_ATTRIBUTES};

/// An added entry's attributes as text (operational ones left out).
pub(super) fn text_attributes(
    entry: &canopy_core::Entry,
) -> Result<Vec<(String, Vec<String>)>, Refusal> {
    let mut attrs = Vec::new();
    for attr in &entry.attrs {
        let name = attr.desc.as_str();
        if crate::config_tree::store::OPERATIONAL
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name))
        {
            continue;
        }
        let values = attr
            .values
            .iter()
            .map(|raw| {
                String::from_utf8(raw.clone()).map_err(|_| {
                    Refusal::new(
                        ResultCode::InvalidAttributeSyntax,
                        format!("{name}: value is not UTF-8"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        attrs.push((name.to_string(), values));
    }
    Ok(attrs)
}

/// The tree with a new module list (`cn=module,cn=config`, or `cn=module{N}` with the next
/// number, which slapd also gives the former), and the write that stores it.
pub(super) fn added_module(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let dn = entry.dn.to_string();
    let next = entries
        .iter()
        .filter_map(|e| crate::config_tree::module_of(&e.dn).flatten())
        .map(|n| n + 1)
        .max()
        .unwrap_or(0);
    match crate::config_tree::module_of(&dn) {
        Some(Some(n)) if n != next => {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!("{dn}: a module list is added after the last one (cn=module{{{next}}})"),
            ))
        }
        _ => {}
    }
    let target = crate::config_tree::module_dn(next);
    let mut added = ConfigEntry {
        dn: target,
        attrs: vec![
            ("objectClass".to_string(), vec!["olcModuleList".to_string()]),
            ("cn".to_string(), vec![format!("module{{{next}}}")]),
        ],
    };
    for (name, values) in text_attributes(entry)? {
        if name.eq_ignore_ascii_case("cn") {
            continue;
        }
        if name.eq_ignore_ascii_case("objectClass") {
            if let Some(other) = values.iter().find(|c| {
                !matches!(
                    c.to_ascii_lowercase().as_str(),
                    "olcmodulelist" | "olcconfig" | "top"
                )
            }) {
                return Err(Refusal::new(
                    ResultCode::ObjectClassViolation,
                    format!("objectClass: {other} is not the class of a module list"),
                ));
            }
            continue;
        }
        let stored = match name.to_ascii_lowercase().as_str() {
            "olcmoduleload" => (
                "olcModuleLoad".to_string(),
                numbered(
                    &values
                        .iter()
                        .map(|v| split_ordinal(v).1.to_string())
                        .collect::<Vec<_>>(),
                ),
            ),
            "olcmodulepath" => ("olcModulePath".to_string(), values),
            _ => {
                return Err(Refusal::new(
                    ResultCode::ObjectClassViolation,
                    format!("attribute '{name}' not allowed"),
                ))
            }
        };
        added.attrs.push(stored);
    }
    stored_addition(entries, added, tree)
}

/// The tree with a new schema child `entry` (`cn=NAME,cn=schema,cn=config`, or `cn={N}NAME` with the
/// next position, which slapd also gives the former), and the write that stores it.
pub(super) fn added_schema_child(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let dn = entry.dn.to_string();
    // After the last one (a gap a failed renumbering left is closed at the next start).
    let next = entries
        .iter()
        .filter_map(|e| crate::config_tree::schema_child_of(&e.dn))
        .map(|(n, _)| n + 1)
        .max()
        .unwrap_or(0);
    let rdn_value = dn
        .split_once(',')
        .and_then(|(rdn, _)| rdn.split_once('='))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let name = match split_ordinal(&rdn_value) {
        (None, name) => name.to_string(),
        (Some(n), name) if n == next => name.to_string(),
        (Some(_), _) => {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{dn}: a schema is added after the last one (cn={{{next}}}NAME, or cn=NAME)"
                ),
            ))
        }
    };
    if !crate::config_tree::valid_schema_name(&name)
        || normalize_dn(&dn) != normalize_dn(&format!("cn={rdn_value},cn=schema,cn=config"))
    {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "{dn}: a schema is named cn=NAME,cn=schema,cn=config, NAME of letters, digits, \
                 '-' and '_'"
            ),
        ));
    }
    if entries
        .iter()
        .filter_map(|e| crate::config_tree::schema_child_of(&e.dn))
        .any(|(_, other)| other.eq_ignore_ascii_case(&name))
    {
        return Err(Refusal::new(
            ResultCode::EntryAlreadyExists,
            format!("a schema named {name:?} exists already"),
        ));
    }
    let target_dn = format!("cn={{{next}}}{name},{}", crate::config_tree::SCHEMA_DN);
    let mut added = ConfigEntry {
        dn: target_dn,
        attrs: vec![
            (
                "objectClass".to_string(),
                vec!["olcSchemaConfig".to_string()],
            ),
            ("cn".to_string(), vec![format!("{{{next}}}{name}")]),
        ],
    };
    let mut is_schema = false;
    for attr in &entry.attrs {
        let name = attr.desc.as_str();
        let text = |raw: &Vec<u8>| {
            String::from_utf8(raw.clone()).map_err(|_| {
                Refusal::new(
                    ResultCode::InvalidAttributeSyntax,
                    format!("{name}: value is not UTF-8"),
                )
            })
        };
        if crate::config_tree::store::OPERATIONAL
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name))
            || name.eq_ignore_ascii_case("cn")
        {
            continue;
        }
        if name.eq_ignore_ascii_case("objectClass") {
            for value in &attr.values {
                let class = text(value)?;
                match class.to_ascii_lowercase().as_str() {
                    "olcschemaconfig" => is_schema = true,
                    "top" | "olcconfig" => {}
                    _ => {
                        return Err(Refusal::new(
                            ResultCode::ObjectClassViolation,
                            format!("objectClass: {class} is not a class of a schema entry"),
                        ))
                    }
                }
            }
            continue;
        }
        let Some(known) = SCHEMA_ATTRIBUTES
            .iter()
            .find(|k| k.eq_ignore_ascii_case(name))
        else {
            return Err(Refusal::new(
                ResultCode::ObjectClassViolation,
                format!("attribute '{name}' not allowed"),
            ));
        };
        let plain = attr
            .values
            .iter()
            .map(|v| text(v).map(|t| split_ordinal(&t).1.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        added.attrs.push((known.to_string(), numbered(&plain)));
    }
    if !is_schema {
        return Err(Refusal::new(
            ResultCode::ObjectClassViolation,
            "a schema entry has objectClass olcSchemaConfig",
        ));
    }
    stored_addition(entries, added, tree)
}

/// The store's write of a new entry of cn=config, and the tree with it at the end.
fn stored_addition(
    entries: &[ConfigEntry],
    added: ConfigEntry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let stored = crate::config_tree::store::Writer {
        directory: &tree.directory,
    }
    .add(&added)
    .map_err(|e| Refusal::new(e.code, e.message))?;
    let mut new_tree = entries.to_vec();
    new_tree.push(added);
    Ok((new_tree, stored))
}

/// The tree with a new data database `entry` (`olcDatabase={N}mdb,cn=config` with the next number, or
/// `olcDatabase=mdb,cn=config`, which gets it), and the write that stores it.
pub(super) fn added_tree(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let dn = entry.dn.to_string();
    let next = 1 + entries
        .iter()
        .filter(|e| {
            let dn = e.dn.to_ascii_lowercase();
            dn.starts_with("olcdatabase={") && dn.ends_with("}mdb,cn=config")
        })
        .count();
    let target_dn = crate::config_tree::database_dn(next);
    let lower = normalize_dn(&dn);
    if lower != normalize_dn(&target_dn) && lower != "olcdatabase=mdb,cn=config" {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "{dn}: only a new mdb database can be added, numbered after the last one \
                 ({target_dn})"
            ),
        ));
    }
    let added = new_database_entry(entry, &target_dn, next)?;
    stored_addition(entries, added, tree)
}

/// The entry of a new data database `olcDatabase={next}mdb` (`target_dn`) from the client's `entry`:
/// the attributes a new database may carry, ordered values numbered.
fn new_database_entry(
    entry: &canopy_core::Entry,
    target_dn: &str,
    next: usize,
) -> Result<ConfigEntry, Refusal> {
    let mut added = ConfigEntry {
        dn: target_dn.to_string(),
        attrs: Vec::new(),
    };
    let live = live_attributes(target_dn);
    for attr in &entry.attrs {
        let name = attr.desc.as_str();
        if crate::config_tree::store::OPERATIONAL
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name))
        {
            continue;
        }
        let known = [
            "objectClass",
            "olcDatabase",
            "olcSuffix",
            "olcDbDirectory",
            "olcSubordinate",
        ];
        if !known
            .iter()
            .chain(live)
            .any(|k| k.eq_ignore_ascii_case(name))
        {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!("{name}: not supported on a new database"),
            ));
        }
        let mut values = Vec::new();
        for raw in &attr.values {
            values.push(String::from_utf8(raw.clone()).map_err(|_| {
                Refusal::new(
                    ResultCode::InvalidAttributeSyntax,
                    format!("{name}: value is not UTF-8"),
                )
            })?);
        }
        if name.eq_ignore_ascii_case("olcDatabase") {
            values = vec![format!("{{{next}}}mdb")];
        }
        if is_ordered(name) {
            let plain: Vec<String> = values
                .iter()
                .map(|v| split_ordinal(v).1.to_string())
                .collect();
            values = numbered(&plain);
        }
        added.attrs.push((name.to_string(), values));
    }
    if added.get("olcDbDirectory").is_empty() {
        return Err(Refusal::new(
            ResultCode::ObjectClassViolation,
            "object class 'olcMdbConfig' requires attribute 'olcDbDirectory'",
        ));
    }
    Ok(added)
}

/// Whether an add of `dn` is the first data database added to a server whose file has none: the
/// default database Canopy runs then (`Config::default_database`) gives way to it, as slapd, started
/// without a data database, numbers the first one added `{1}`.
pub(super) fn replaces_default_database(dn: &str, base: &Config, state: &ServerState) -> bool {
    base.default_database
        && !base.first_added
        && state.config.database_count() == 1
        && state.config.directory.is_none()
        && normalize_dn(dn) == normalize_dn(&crate::config_tree::database_dn(1))
}

/// The tree with the client's `olcDatabase={1}mdb` in place of the default database's entry, and the
/// store's write of it (a modify of the entry the default database had). Refused while the default
/// database holds entries (they would be hidden) or when the new one names the data directory.
pub(super) fn adopted_tree(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    state: &ServerState,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let target_dn = crate::config_tree::database_dn(1);
    let held = state
        .databases
        .iter()
        .find(|db| db.is_configured())
        .map(|db| db.backend().figures().map(|f| f.entries))
        .transpose()
        .map_err(|e| Refusal::new(e.code, e.message))?
        .unwrap_or(0);
    if held > 0 {
        return Err(Refusal::new(
            ResultCode::EntryAlreadyExists,
            format!(
                "{target_dn}: the first database ({}, Canopy's default as the configuration file \
                 names none) holds {held} entries; add the new database as the next one, or set \
                 it in the file",
                state.config.suffix
            ),
        ));
    }
    let added = new_database_entry(entry, &target_dn, 1)?;
    let directory = added.single("olcDbDirectory").unwrap_or_default();
    // The same directory under another name (`../data`, a link) too.
    let data_dir = &state.config.data_dir;
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a == b
            || std::fs::canonicalize(a)
                .is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
    };
    if same(&data_dir.join(directory), data_dir) {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "<olcDbDirectory> {directory} is the server's data directory, where the default \
                 database lies; name a directory of the new database's own"
            ),
        ));
    }
    let old = entries
        .iter()
        .find(|e| e.dn.eq_ignore_ascii_case(&target_dn))
        .ok_or_else(|| Refusal::new(ResultCode::Other, format!("{target_dn} is missing")))?;
    let changes = crate::config_tree::store::changes(old, &added);
    let new_tree = entries
        .iter()
        .map(|e| match e.dn.eq_ignore_ascii_case(&target_dn) {
            true => added.clone(),
            false => e.clone(),
        })
        .collect();
    let (dn, ndn) = (entry.dn.clone(), entry.ndn.clone());
    Ok((new_tree, WriteOp::Modify { dn, ndn, changes }))
}
