//! The children of cn=schema,cn=config: built from schema files and `[[schema]]` tables, and read back.

use canopy_proto::ResultCode;

use super::from_config::one;
use super::{numbered, split_ordinal, ConfigEntry, Refusal, SCHEMA_DN};
use crate::config::Config;

/// One `cn={i}NAME,cn=schema,cn=config` entry per built-in file the configuration names
/// (`builtin_schema`, as slapd's includes of them), then one per file of `schema_files`, named after
/// the file, with the attribute types and object classes it defines (`olcAttributeTypes`,
/// `olcObjectClasses`, in `{N}` order), then one per `[[schema]]` table (the file's, then those
/// added live). The built-in files not named are not listed.
pub(super) fn schema_children(config: &Config) -> Vec<ConfigEntry> {
    let names = file_schema_names(config);
    let mut children = Vec::new();
    for (i, name) in config.builtin_schema.iter().enumerate() {
        let (types, classes) = canopy_schema::Schema::builtin_file(name).unwrap_or_default();
        children.push(schema_child(i, name, &[], &types, &classes));
    }
    let builtin = config.builtin_schema.len();
    if !config.schema_files.is_empty() {
        let mut without_files = config.clone();
        without_files.schema_files.clear();
        without_files.schema.clear();
        let mut schema = match crate::load_schema(&without_files) {
            Ok(schema) => schema,
            Err(error) => {
                tracing::warn!(%error, "cn=schema,cn=config: the schema does not load");
                return Vec::new();
            }
        };
        for (i, path) in config.schema_files.iter().enumerate() {
            let types: Vec<String> = schema.attribute_types().map(|a| a.oid.clone()).collect();
            let classes: Vec<String> = schema.object_classes().map(|c| c.oid.clone()).collect();
            if let Err(error) = schema.load_file(path) {
                tracing::warn!(%error, file = %path.display(), "cn=schema,cn=config: a schema file does not load");
                break;
            }
            let new_types: Vec<String> = schema
                .attribute_types()
                .filter(|a| !types.contains(&a.oid))
                .map(|a| a.definition())
                .collect();
            let new_classes: Vec<String> = schema
                .object_classes()
                .filter(|c| !classes.contains(&c.oid))
                .map(|c| c.definition())
                .collect();
            let name = names.get(builtin + i).cloned().unwrap_or_default();
            children.push(schema_child(
                builtin + i,
                &name,
                &[],
                &new_types,
                &new_classes,
            ));
        }
    }
    let offset = builtin + config.schema_files.len();
    for (i, table) in config.schema.iter().enumerate() {
        children.push(schema_child(
            offset + i,
            &table.name,
            &table.object_identifiers,
            &table.attribute_types,
            &table.object_classes,
        ));
    }
    children
}

fn schema_child(
    number: usize,
    name: &str,
    macros: &[String],
    types: &[String],
    classes: &[String],
) -> ConfigEntry {
    ConfigEntry::new(format!("cn={{{number}}}{name},{SCHEMA_DN}"))
        .with("objectClass", one("olcSchemaConfig"))
        .with("cn", one(format!("{{{number}}}{name}")))
        .with("olcObjectIdentifier", numbered(macros))
        .with("olcAttributeTypes", numbered(types))
        .with("olcObjectClasses", numbered(classes))
}

/// The names of the schema children a configuration file defines, in order: each built-in file it
/// names, each schema file's stem (characters a DN would escape replaced by `-`), then each
/// `[[schema]]` table's name.
fn file_schema_names(config: &Config) -> Vec<String> {
    let files = config.schema_files.iter().enumerate().map(|(i, path)| {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("schema{i}"));
        name.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
    });
    config
        .builtin_schema
        .iter()
        .cloned()
        .chain(files)
        .chain(config.schema.iter().map(|t| t.name.clone()))
        .collect()
}

/// The position and name of a `cn={N}NAME,cn=schema,cn=config` DN; None for any other DN.
pub fn schema_child_of(dn: &str) -> Option<(usize, String)> {
    let (rdn, parent) = dn.split_once(',')?;
    let parent: String = parent
        .split(',')
        .map(|r| r.trim().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",");
    if parent != SCHEMA_DN {
        return None;
    }
    let (kind, value) = rdn.split_once('=')?;
    if !kind.trim().eq_ignore_ascii_case("cn") {
        return None;
    }
    match split_ordinal(value.trim()) {
        (Some(n), name) => Some((n, name.to_string())),
        (None, _) => None,
    }
}

/// How many schema children the configuration file `base` defines: those numbered below are the
/// file's (read-only live), those from there on were added live.
pub fn file_schema_count(base: &Config) -> usize {
    base.builtin_schema.len() + base.schema_files.len() + base.schema.len()
}

/// A name a schema child may take: letters, digits, `-` and `_` (no character a DN escapes).
pub fn valid_schema_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The `[[schema]]` tables of the schema children added live: those numbered after the file's, in
/// their order. A child numbered among the file's whose name is not the file's is one added live
/// before the file gained a schema: refused, as the schema would be lost.
pub(super) fn live_schema(
    base: &Config,
    tree: &[ConfigEntry],
) -> Result<Vec<crate::config::SchemaConfig>, Refusal> {
    let file_names = file_schema_names(base);
    let mut children: Vec<(usize, String, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| schema_child_of(&e.dn).map(|(n, name)| (n, name, e)))
        .collect();
    children.sort_by_key(|(n, _, _)| *n);
    let mut tables = Vec::new();
    for (n, name, entry) in children {
        match file_names.get(n) {
            Some(file_name) if file_name.eq_ignore_ascii_case(&name) => continue,
            Some(file_name) => {
                return Err(Refusal::new(
                    ResultCode::Other,
                    format!(
                        "<olcAttributeTypes> the schema cn={{{n}}}{name} was added live, but the \
                         configuration file now defines cn={{{n}}}{file_name} (schema added live \
                         is numbered after the file's; add schema_files and [[schema]] tables \
                         after them, or export the live configuration first)"
                    ),
                ))
            }
            // A copy left by a crash in the middle of a renumbering counts once.
            None if tables
                .iter()
                .any(|t: &crate::config::SchemaConfig| t.name.eq_ignore_ascii_case(&name)) => {}
            None => tables.push(crate::config::SchemaConfig {
                name,
                object_identifiers: entry.ordered("olcObjectIdentifier"),
                attribute_types: entry.ordered("olcAttributeTypes"),
                object_classes: entry.ordered("olcObjectClasses"),
            }),
        }
    }
    Ok(tables)
}
