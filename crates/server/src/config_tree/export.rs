//! `canopy config export`: the live configuration written back as the TOML file it started from,
//! with every setting that changes live (`config_tree::live_attributes`) set to its live value, so the
//! result can be diffed, reviewed and used to seed another server.

use toml::{Table, Value};

use crate::config::Config;
use crate::limits::Limits;

fn strings(list: &[String]) -> Value {
    Value::Array(list.iter().cloned().map(Value::String).collect())
}

fn set_or_remove(table: &mut Table, key: &str, value: Option<Value>) {
    match value {
        Some(v) => {
            table.insert(key.to_string(), v);
        }
        None => {
            table.remove(key);
        }
    }
}

/// Access rules as a TOML value; the default list (what an empty list means) is left out.
fn access(rules: &[String]) -> Option<Value> {
    let default = crate::acl::DEFAULT_RULES.map(String::from);
    match rules.is_empty() || rules == default.as_slice() {
        true => None,
        false => Some(strings(rules)),
    }
}

fn sub_table<'a>(table: &'a mut Table, key: &str) -> &'a mut Table {
    let entry = table
        .entry(key.to_string())
        .or_insert_with(|| Value::Table(Table::new()));
    if !entry.is_table() {
        *entry = Value::Table(Table::new());
    }
    match entry {
        Value::Table(t) => t,
        _ => unreachable!("replaced by a table just above"),
    }
}

/// `[[limits.rules]]` tables; None for no rules.
fn rules(list: &[crate::limits::LimitRule]) -> Option<Value> {
    use crate::limits::LimitValue;
    let value = |v: &LimitValue| match v {
        LimitValue::Limited(n) => Value::Integer(i64::try_from(*n).unwrap_or(i64::MAX)),
        LimitValue::Unlimited => Value::String("unlimited".into()),
        LimitValue::Disabled => Value::String("disabled".into()),
    };
    (!list.is_empty()).then(|| {
        Value::Array(
            list.iter()
                .map(|rule| {
                    let mut table = Table::new();
                    table.insert("who".into(), Value::String(rule.who.clone()));
                    for (key, limit) in [
                        ("size", &rule.size),
                        ("time", &rule.time),
                        ("lookthrough", &rule.lookthrough),
                        ("paged_size", &rule.paged_size),
                        ("paged_total", &rule.paged_total),
                    ] {
                        if let Some(v) = limit {
                            table.insert(key.into(), value(v));
                        }
                    }
                    Value::Table(table)
                })
                .collect(),
        )
    })
}

/// Indexes as `[{ attr = "cn", kinds = ["eq", "sub"] }, ...]`.
fn indexes(list: &[crate::config::IndexConfig]) -> Value {
    Value::Array(
        list.iter()
            .map(|index| {
                let mut table = Table::new();
                table.insert("attr".into(), Value::String(index.attr.clone()));
                table.insert("kinds".into(), strings(&index.kinds));
                Value::Table(table)
            })
            .collect(),
    )
}

/// `[[overlay]]` tables: each overlay's name and options.
fn overlays(list: &[crate::config::OverlayConfig]) -> Option<Value> {
    (!list.is_empty()).then(|| {
        Value::Array(
            list.iter()
                .map(|overlay| {
                    let mut table = overlay.options.clone();
                    table.insert("name".into(), Value::String(overlay.name.clone()));
                    Value::Table(table)
                })
                .collect(),
        )
    })
}

/// `[[modules]]` tables: `path` and `load` of each module list.
fn modules(list: &[crate::config::ModuleList]) -> Option<Value> {
    (!list.is_empty()).then(|| {
        Value::Array(
            list.iter()
                .map(|modules| {
                    let mut table = Table::new();
                    if let Some(path) = &modules.path {
                        table.insert("path".into(), Value::String(path.clone()));
                    }
                    table.insert("load".into(), strings(&modules.load));
                    Value::Table(table)
                })
                .collect(),
        )
    })
}

fn limit(value: u32) -> Value {
    Value::Integer(i64::from(value))
}

/// `file` (the configuration file as a TOML table) with the live settings of `live` in place.
pub fn export(mut file: Table, live: &Config, first_root_password: &[u8]) -> Table {
    let t = &mut file;
    // A first database added live over the default one: the file names none, the export names it
    // (its suffix, and its directory when it is not the data directory) so that it reopens it.
    if live.first_added {
        t.insert("suffix".into(), Value::String(live.suffix.clone()));
        set_or_remove(
            t,
            "directory",
            live.directory
                .as_ref()
                .map(|dir| Value::String(dir.display().to_string())),
        );
    }
    set_or_remove(t, "access", access(&live.access));
    set_or_remove(t, "root_dn", Some(Value::String(live.root_dn.clone())));
    set_or_remove(
        t,
        "root_password",
        (!first_root_password.is_empty())
            .then(|| Value::String(String::from_utf8_lossy(first_root_password).into_owned())),
    );
    t.insert("read_only".into(), Value::Boolean(live.read_only));
    t.insert(
        "password_hash".into(),
        Value::String(live.password_hash.clone()),
    );
    set_or_remove(
        t,
        "log_level",
        (!live.log_level.is_empty()).then(|| strings(&live.log_level)),
    );
    t.insert(
        "server_id".into(),
        Value::Integer(i64::from(live.server_id)),
    );
    set_or_remove(
        t,
        "config_root_dn",
        live.config_root_dn.clone().map(Value::String),
    );
    set_or_remove(
        t,
        "config_root_password",
        live.config_root_password.clone().map(Value::String),
    );
    set_or_remove(
        t,
        "config_access",
        (!live.config_access.is_empty() && live.config_access != [super::default_access()])
            .then(|| strings(&live.config_access)),
    );
    let limits: &Limits = &live.limits;
    let table = sub_table(t, "limits");
    table.insert("size_limit".into(), limit(limits.size_limit));
    table.insert("time_limit".into(), limit(limits.time_limit));
    set_or_remove(table, "rules", rules(&limits.rules));
    t.insert("indexes".into(), indexes(&live.indexes));
    set_or_remove(t, "overlay", overlays(&live.overlay));
    set_or_remove(t, "modules", modules(&live.modules));
    // Schema added live: `[[schema]]` tables after the file's (which do not change live).
    set_or_remove(
        t,
        "schema",
        (!live.schema.is_empty()).then(|| {
            Value::Array(
                live.schema
                    .iter()
                    .map(|table| {
                        let mut out = Table::new();
                        out.insert("name".into(), Value::String(table.name.clone()));
                        if !table.object_identifiers.is_empty() {
                            out.insert(
                                "object_identifiers".into(),
                                strings(&table.object_identifiers),
                            );
                        }
                        out.insert("attribute_types".into(), strings(&table.attribute_types));
                        out.insert("object_classes".into(), strings(&table.object_classes));
                        Value::Table(out)
                    })
                    .collect(),
            )
        }),
    );
    // Databases added live get tables of their own after the file's.
    let tables = t
        .entry("database".to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !tables.is_array() {
        *tables = Value::Array(Vec::new());
    }
    if let Value::Array(tables) = tables {
        // The file's databases deleted live are left out.
        tables.retain(|table| {
            let suffix = table
                .get("suffix")
                .and_then(Value::as_str)
                .unwrap_or_default();
            live.database
                .iter()
                .any(|db| super::same_dn_text(&db.suffix, suffix))
        });
        for db in live.database.iter().skip(tables.len()) {
            let mut table = Table::new();
            table.insert("suffix".into(), Value::String(db.suffix.clone()));
            if let Some(directory) = &db.directory {
                table.insert(
                    "directory".into(),
                    Value::String(directory.display().to_string()),
                );
            }
            if let Some(glued) = db.subordinate {
                table.insert("subordinate".into(), Value::Boolean(glued));
            }
            tables.push(Value::Table(table));
        }
        if tables.is_empty() {
            t.remove("database");
        }
    }
    if let Some(Value::Array(tables)) = t.get_mut("database") {
        for (table, db) in tables.iter_mut().zip(&live.database) {
            let Value::Table(table) = table else {
                continue;
            };
            table.insert("indexes".into(), indexes(&db.indexes));
            set_or_remove(table, "overlay", overlays(&db.overlay));
            set_or_remove(table, "access", access(&db.access));
            set_or_remove(table, "root_dn", db.root_dn.clone().map(Value::String));
            set_or_remove(
                table,
                "root_password",
                db.root_password.clone().map(Value::String),
            );
            table.insert("read_only".into(), Value::Boolean(db.read_only));
            let own = sub_table(table, "limits");
            set_or_remove(own, "size_limit", db.limits.size_limit.map(limit));
            set_or_remove(own, "time_limit", db.limits.time_limit.map(limit));
            set_or_remove(own, "rules", db.limits.rules.as_deref().and_then(rules));
            if own.is_empty() {
                table.remove("limits");
            }
        }
    }
    file
}

/// [`export`] from and to text: `file_text` is the configuration file (None: the defaults).
pub fn export_text(
    file_text: Option<&str>,
    live: &Config,
    first_root_password: &[u8],
) -> Result<String, String> {
    let file: Table = match file_text {
        Some(text) => toml::from_str(text).map_err(|e| e.to_string())?,
        None => Table::new(),
    };
    toml::to_string(&export(file, live, first_root_password)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_values_replace_the_file_ones_and_the_rest_stays() {
        let text =
            "suffix = \"dc=x\"\nlisten = [\"ldap://127.0.0.1:1\"]\n[limits]\nsize_limit = 10\n\
                    max_connections = 3\n[[database]]\nsuffix = \"dc=y\"\n";
        let mut live = Config::parse(text, "t").unwrap();
        live.limits.size_limit = 77;
        live.access = vec!["to * by * read".into()];
        live.database[0].read_only = true;
        live.database[0].limits.time_limit = Some(5);
        let out = export(toml::from_str(text).unwrap(), &live, b"pw");
        let again = Config::parse(&toml::to_string(&out).unwrap(), "export").unwrap();
        assert_eq!(again.limits.size_limit, 77);
        assert_eq!(again.limits.max_connections, 3);
        assert_eq!(again.access, ["to * by * read"]);
        assert_eq!(again.root_password.as_deref(), Some("pw"));
        assert!(again.database[0].read_only);
        assert_eq!(again.database[0].limits.time_limit, Some(5));
        assert_eq!(again.listen, ["ldap://127.0.0.1:1"]);
    }

    #[test]
    fn a_first_database_added_live_is_named_with_its_directory() {
        let text = "data_dir = \"/srv/data\"\n";
        let mut live = Config::parse(text, "t").unwrap();
        assert!(live.default_database);
        let file_only = export(toml::from_str(text).unwrap(), &live, b"");
        assert!(!file_only.contains_key("suffix") && !file_only.contains_key("directory"));
        live.first_added = true;
        live.suffix = "dc=live,dc=org".into();
        live.directory = Some("/srv/live".into());
        let out = export(toml::from_str(text).unwrap(), &live, b"");
        let again = Config::parse(&toml::to_string(&out).unwrap(), "export").unwrap();
        assert_eq!(again.suffix, "dc=live,dc=org");
        assert!(!again.default_database, "the file names its first database");
        assert_eq!(
            again.database_directory(1),
            std::path::Path::new("/srv/live")
        );
        let refused = Config::parse("directory = \"config\"\n", "t").unwrap_err();
        assert!(refused.to_string().contains("config/"), "{refused}");
        let clash = "directory = \"x\"\n[[database]]\nsuffix = \"dc=y\"\ndirectory = \"x\"\n";
        let refused = Config::parse(clash, "t").unwrap_err();
        assert!(refused.to_string().contains("also database 1"), "{refused}");
    }
}
