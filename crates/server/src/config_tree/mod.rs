//! The cn=config tree (docs/design/config-tree.md): the running configuration as entries in slapd's
//! shape and names (`cn=config`, `olcDatabase={-1}frontend`, `olcDatabase={0}config`,
//! `olcDatabase={N}mdb`, `cn=schema`), the mapping from a [`Config`] to those entries and back for the
//! attributes that change live, and the olc* schema they need.
//!
//! The tree is a database of its own in the registry (`store` keeps it durable in `DATA/config`);
//! `crate::config_change` runs a client's write of it: validate the whole new configuration, store it, swap it in.

pub mod export;
pub mod store;

pub use store::{differences, read_live, set_aside_stale, ConfigTree};

use canopy_proto::ResultCode;

use crate::config::Config;
use crate::limits::{LimitRule, LimitValue};

/// The naming context of the configuration database.
pub const SUFFIX: &str = "cn=config";

/// The peer-credential identity of root over ldapi, which Debian's slapd lets manage cn=config.
pub const LDAPI_ROOT: &str = "gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth";

/// The access rule of `olcDatabase={0}config` when the configuration names none (`config_access`):
/// root over ldapi manages it, nobody else sees it (the config root DN is above every rule).
pub fn default_access() -> String {
    format!("to * by dn.exact=\"{LDAPI_ROOT}\" manage by * none")
}

/// The attributes an entry of the tree changes live; every other change is unwillingToPerform.
pub fn live_attributes(dn: &str) -> &'static [&'static str] {
    let dn = dn.to_ascii_lowercase();
    if dn == SUFFIX {
        &[
            "olcServerID",
            "olcLogLevel",
            "olcTLSCertificateFile",
            "olcTLSCertificateKeyFile",
        ]
    } else if dn == FRONTEND_DN.to_ascii_lowercase() {
        &["olcSizeLimit", "olcTimeLimit", "olcPasswordHash"]
    } else if dn == CONFIG_DB_DN.to_ascii_lowercase() {
        &["olcAccess", "olcRootDN", "olcRootPW"]
    } else if dn.starts_with("olcdatabase={") && dn.ends_with("}mdb,cn=config") {
        &[
            "olcAccess",
            "olcRootDN",
            "olcRootPW",
            "olcReadOnly",
            "olcSizeLimit",
            "olcTimeLimit",
            "olcDbIndex",
            "olcLimits",
        ]
    } else {
        &[]
    }
}

/// The olc* attribute types and object classes the tree uses, with OpenLDAP's OIDs and names (as
/// slapd 2.5 publishes them in cn=Subschema); the classes list only the attributes Canopy knows.
pub const SCHEMA: &str = "\
attributetype ( 1.3.6.1.4.1.4203.1.12.2.1 NAME 'configContext' DESC 'config context' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.1 NAME 'olcAccess' DESC 'Access Control List' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.4 NAME 'olcAttributeTypes' DESC 'OpenLDAP attributeTypes' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.9 NAME 'olcBackend' DESC 'A type of backend' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE X-ORDERED 'SIBLINGS' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.13 NAME 'olcDatabase' DESC 'The backend type for a database instance' SUP olcBackend SINGLE-VALUE X-ORDERED 'SIBLINGS' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.5 NAME 'olcLimits' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.28 NAME 'olcLogLevel' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.32 NAME 'olcObjectClasses' DESC 'OpenLDAP object classes' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.34 NAME 'olcOverlay' SUP olcDatabase SINGLE-VALUE X-ORDERED 'SIBLINGS' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.36 NAME 'olcPasswordHash' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.40 NAME 'olcReadOnly' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.8 NAME 'olcRootDN' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.9 NAME 'olcRootPW' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.81 NAME 'olcServerID' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.60 NAME 'olcSizeLimit' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.15 NAME 'olcSubordinate' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.10 NAME 'olcSuffix' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.11 NAME 'olcSyncrepl' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.67 NAME 'olcTimeLimit' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.68 NAME 'olcTLSCACertificateFile' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.70 NAME 'olcTLSCertificateFile' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.71 NAME 'olcTLSCertificateKeyFile' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.75 NAME 'olcTLSVerifyClient' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.13 NAME 'olcUpdateRef' SUP labeledURI EQUALITY caseIgnoreMatch )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.1 NAME 'olcDbDirectory' DESC 'Directory for database content' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.2 NAME 'olcDbIndex' DESC 'Attribute index parameters' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.0 NAME 'olcConfig' DESC 'OpenLDAP configuration object' SUP top ABSTRACT )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.1 NAME 'olcGlobal' DESC 'OpenLDAP Global configuration options' SUP olcConfig STRUCTURAL MAY ( cn $ olcLogLevel $ olcPasswordHash $ olcReadOnly $ olcServerID $ olcSizeLimit $ olcTimeLimit $ olcTLSCACertificateFile $ olcTLSCertificateFile $ olcTLSCertificateKeyFile $ olcTLSVerifyClient $ olcAttributeTypes $ olcObjectClasses ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.2 NAME 'olcSchemaConfig' DESC 'OpenLDAP schema object' SUP olcConfig STRUCTURAL MAY ( cn $ olcAttributeTypes $ olcObjectClasses ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.4 NAME 'olcDatabaseConfig' DESC 'OpenLDAP Database-specific options' SUP olcConfig STRUCTURAL MUST olcDatabase MAY ( olcSuffix $ olcSubordinate $ olcAccess $ olcLimits $ olcReadOnly $ olcRootDN $ olcRootPW $ olcSizeLimit $ olcSyncrepl $ olcTimeLimit $ olcUpdateRef ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.5 NAME 'olcOverlayConfig' DESC 'OpenLDAP Overlay-specific options' SUP olcConfig STRUCTURAL MUST olcOverlay )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.7 NAME 'olcFrontendConfig' DESC 'OpenLDAP frontend configuration' AUXILIARY MAY olcPasswordHash )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.2.12.1 NAME 'olcMdbConfig' DESC 'MDB database configuration' SUP olcDatabaseConfig STRUCTURAL MUST olcDbDirectory MAY olcDbIndex )
";

/// One entry of the tree: its DN and attributes in order, values as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub dn: String,
    pub attrs: Vec<(String, Vec<String>)>,
}

impl ConfigEntry {
    fn new(dn: impl Into<String>) -> ConfigEntry {
        ConfigEntry {
            dn: dn.into(),
            attrs: Vec::new(),
        }
    }

    fn with(mut self, name: &str, values: Vec<String>) -> ConfigEntry {
        if !values.is_empty() {
            self.attrs.push((name.to_string(), values));
        }
        self
    }

    /// The values of `name` (ASCII case-insensitive); none when absent.
    pub fn get(&self, name: &str) -> &[String] {
        self.attrs
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// The values of `name` without their `{N}` prefixes, in order.
    pub fn ordered(&self, name: &str) -> Vec<String> {
        self.get(name)
            .iter()
            .map(|v| split_ordinal(v).1.to_string())
            .collect()
    }

    pub(crate) fn single(&self, name: &str) -> Option<&str> {
        self.get(name).first().map(String::as_str)
    }
}

/// A value's `{N}` prefix, if any, and the rest.
pub fn split_ordinal(value: &str) -> (Option<usize>, &str) {
    if let Some(rest) = value.strip_prefix('{') {
        if let Some((number, tail)) = rest.split_once('}') {
            if let Ok(n) = number.parse::<usize>() {
                return (Some(n), tail);
            }
        }
    }
    (None, value)
}

/// `values` numbered `{0}`, `{1}`, ... as slapd shows X-ORDERED 'VALUES' attributes.
pub fn numbered(values: &[String]) -> Vec<String> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{{{i}}}{v}"))
        .collect()
}

/// The number of a data database's DN (`olcDatabase={N}mdb,cn=config`), None for any other DN.
pub fn database_number(dn: &str) -> Option<usize> {
    dn.to_ascii_lowercase()
        .replace(", ", ",")
        .strip_prefix("olcdatabase={")
        .and_then(|rest| rest.strip_suffix("}mdb,cn=config"))
        .and_then(|n| n.parse::<usize>().ok())
}

/// The number of the data database `dn` is a child of (`olcOverlay={i}x,olcDatabase={N}mdb,cn=config`).
pub fn database_child_of(dn: &str) -> Option<usize> {
    dn.split_once(',')
        .and_then(|(_, parent)| database_number(parent))
}

/// `entry` (a data database or a child of one) moved to database number `to`.
pub(crate) fn moved_to_database(entry: &ConfigEntry, to: usize) -> ConfigEntry {
    let mut moved = entry.clone();
    match database_number(&entry.dn) {
        Some(_) => {
            moved.dn = database_dn(to);
            for (name, values) in &mut moved.attrs {
                if name.eq_ignore_ascii_case("olcDatabase") {
                    *values = vec![format!("{{{to}}}mdb")];
                }
            }
        }
        None => {
            let rdn = entry.dn.split_once(',').map_or("", |(rdn, _)| rdn);
            moved.dn = format!("{rdn},{}", database_dn(to));
        }
    }
    moved
}

/// The stored `tree` with its data databases numbered as `base` (the file without the databases
/// deleted live) numbers them, after a crash between a delete and what follows it: copies a
/// renumbering left count once, the numbers close up, and a database of the file the tree lacks
/// (a delete committed but not yet recorded in `deleted.toml`) keeps its place, to be served from
/// the file. A tree that matches the file otherwise is left for `to_config` to judge.
pub(crate) fn align_databases(base: &Config, tree: &[ConfigEntry]) -> Vec<ConfigEntry> {
    let mut dbs: Vec<(usize, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| database_number(&e.dn).map(|n| (n, e)))
        .collect();
    dbs.sort_by_key(|(n, _)| *n);
    let suffix = |e: &ConfigEntry| e.single("olcSuffix").unwrap_or_default().to_string();
    let mut kept: Vec<(usize, &ConfigEntry)> = Vec::new();
    for (n, e) in dbs {
        let copy = kept.iter().any(|(_, k)| {
            same_dn_text(&suffix(k), &suffix(e))
                && k.single("olcDbDirectory") == e.single("olcDbDirectory")
        });
        if !copy {
            kept.push((n, e));
        }
    }
    let file: Vec<String> = (1..=base.database_count())
        .filter_map(|n| base.database_view(n).map(|v| v.suffix))
        .collect();
    let mut map: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut i = 0;
    for (f, file_suffix) in file.iter().enumerate() {
        let Some((n, e)) = kept.get(i) else {
            break;
        };
        if same_dn_text(&suffix(e), file_suffix) {
            next += 1;
            map.push((*n, next));
            i += 1;
            continue;
        }
        let absent = !kept[i..]
            .iter()
            .any(|(_, e)| same_dn_text(&suffix(e), file_suffix));
        let later = file[f + 1..].iter().any(|s| same_dn_text(s, &suffix(e)));
        if absent && later {
            next += 1;
            continue;
        }
        break;
    }
    for (n, _) in &kept[i..] {
        next += 1;
        map.push((*n, next));
    }
    if map.iter().all(|(a, b)| a == b)
        && map.len()
            == tree
                .iter()
                .filter(|e| database_number(&e.dn).is_some())
                .count()
    {
        return tree.to_vec();
    }
    let to = |n: usize| map.iter().find(|(old, _)| *old == n).map(|(_, new)| *new);
    tree.iter()
        .filter_map(
            |e| match database_number(&e.dn).or_else(|| database_child_of(&e.dn)) {
                None => Some(e.clone()),
                Some(n) => to(n).map(|new| moved_to_database(e, new)),
            },
        )
        .collect()
}

/// The DN of data database `number` (1-based, as `--database N`).
pub fn database_dn(number: usize) -> String {
    format!("olcDatabase={{{number}}}mdb,cn=config")
}

pub const FRONTEND_DN: &str = "olcDatabase={-1}frontend,cn=config";
pub const CONFIG_DB_DN: &str = "olcDatabase={0}config,cn=config";
pub const SCHEMA_DN: &str = "cn=schema,cn=config";

fn one(value: impl ToString) -> Vec<String> {
    vec![value.to_string()]
}

fn limit_text(value: u32) -> String {
    match value {
        0 => "unlimited".to_string(),
        n => n.to_string(),
    }
}

fn boolean(value: bool) -> Vec<String> {
    one(if value { "TRUE" } else { "FALSE" })
}

/// The tree of a configuration. `first_root_password` is the first database's root password as
/// `serve` resolved it (the file, `CANOPY_ROOTPW` or a generated one).
pub fn from_config(config: &Config, first_root_password: &[u8]) -> Vec<ConfigEntry> {
    let tls = &config.tls;
    let path = |p: &Option<std::path::PathBuf>| {
        p.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
    };
    let verify = match tls.verify_client {
        crate::config::VerifyClient::Never => Vec::new(),
        crate::config::VerifyClient::Allow => one("allow"),
        crate::config::VerifyClient::Try => one("try"),
        crate::config::VerifyClient::Demand => one("demand"),
    };
    let server_id = match config.server_id {
        0 => Vec::new(),
        n => one(n),
    };
    let mut tree = vec![
        ConfigEntry::new(SUFFIX)
            .with("objectClass", one("olcGlobal"))
            .with("cn", one("config"))
            .with("olcServerID", server_id)
            .with("olcLogLevel", config.log_level.clone())
            .with("olcTLSCertificateFile", path(&tls.cert_file))
            .with("olcTLSCertificateKeyFile", path(&tls.key_file))
            .with("olcTLSCACertificateFile", path(&tls.ca_file))
            .with("olcTLSVerifyClient", verify),
        ConfigEntry::new(SCHEMA_DN)
            .with("objectClass", one("olcSchemaConfig"))
            .with("cn", one("schema")),
    ];
    tree.extend(schema_children(config));
    tree.extend([ConfigEntry::new(FRONTEND_DN)
        .with(
            "objectClass",
            vec!["olcDatabaseConfig".into(), "olcFrontendConfig".into()],
        )
        .with("olcDatabase", one("{-1}frontend"))
        .with("olcSizeLimit", one(limit_text(config.limits.size_limit)))
        .with("olcTimeLimit", one(limit_text(config.limits.time_limit)))
        .with("olcPasswordHash", one(&config.password_hash))]);
    let config_access = match config.config_access.is_empty() {
        true => vec![default_access()],
        false => config.config_access.clone(),
    };
    tree.push(
        ConfigEntry::new(CONFIG_DB_DN)
            .with("objectClass", one("olcDatabaseConfig"))
            .with("olcDatabase", one("{0}config"))
            .with("olcAccess", numbered(&config_access))
            .with("olcRootDN", config.config_root_dn.iter().cloned().collect())
            .with(
                "olcRootPW",
                config.config_root_password.iter().cloned().collect(),
            ),
    );
    for number in 1..=config.database_count() {
        let Some(view) = config.database_view(number) else {
            continue;
        };
        let own = number
            .checked_sub(2)
            .and_then(|i| config.database.get(i))
            .map(|db| &db.limits);
        let root_password = match number {
            1 => match first_root_password.is_empty() {
                true => Vec::new(),
                false => one(String::from_utf8_lossy(first_root_password)),
            },
            _ => view.root_password.iter().cloned().collect(),
        };
        let subordinate = match config.subordinate(number) {
            crate::databases::Subordinate::Glued => one("TRUE"),
            _ => Vec::new(),
        };
        let indexes = view
            .indexes
            .iter()
            .map(|i| format!("{} {}", i.attr, i.kinds.join(",")))
            .collect();
        tree.push(
            ConfigEntry::new(database_dn(number))
                .with(
                    "objectClass",
                    vec!["olcDatabaseConfig".into(), "olcMdbConfig".into()],
                )
                .with("olcDatabase", one(format!("{{{number}}}mdb")))
                .with("olcDbDirectory", one(view.data_dir.display()))
                .with("olcSuffix", one(&view.suffix))
                .with("olcSubordinate", subordinate)
                .with(
                    "olcAccess",
                    // No rules configured: Debian's default list, which is what runs.
                    match view.access.is_empty() {
                        true => numbered(&crate::acl::DEFAULT_RULES.map(String::from)),
                        false => numbered(&view.access),
                    },
                )
                .with(
                    "olcLimits",
                    // A database's own rules (the first database's are `[[limits.rules]]`).
                    numbered(
                        &match number {
                            1 => config.limits.rules.clone(),
                            _ => own.and_then(|l| l.rules.clone()).unwrap_or_default(),
                        }
                        .iter()
                        .map(limit_rule)
                        .collect::<Vec<_>>(),
                    ),
                )
                .with("olcReadOnly", boolean(view.read_only))
                .with(
                    "olcRootDN",
                    match view.root_dn.as_str() {
                        "" => Vec::new(),
                        dn => one(dn),
                    },
                )
                .with("olcRootPW", root_password)
                .with(
                    "olcSizeLimit",
                    own.and_then(|l| l.size_limit)
                        .map(limit_text)
                        .into_iter()
                        .collect(),
                )
                .with(
                    "olcTimeLimit",
                    own.and_then(|l| l.time_limit)
                        .map(limit_text)
                        .into_iter()
                        .collect(),
                )
                .with("olcUpdateRef", view.updateref.iter().cloned().collect())
                .with("olcDbIndex", indexes),
        );
        // Each overlay as a child, in the order it applies (its options stay in the file for now).
        for (i, overlay) in view.overlay.iter().enumerate() {
            tree.push(
                ConfigEntry::new(format!(
                    "olcOverlay={{{i}}}{},{}",
                    overlay.name,
                    database_dn(number)
                ))
                .with("objectClass", one("olcOverlayConfig"))
                .with("olcOverlay", one(format!("{{{i}}}{}", overlay.name))),
            );
        }
    }
    tree
}

/// One `cn={i}NAME,cn=schema,cn=config` entry per file of `schema_files`, named after the file, with
/// the attribute types and object classes it defines (`olcAttributeTypes`, `olcObjectClasses`, in
/// `{N}` order), then one per `[[schema]]` table (the file's, then those added live). The built-in
/// schema is not listed.
fn schema_children(config: &Config) -> Vec<ConfigEntry> {
    let names = file_schema_names(config);
    let mut children = Vec::new();
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
            let name = names.get(i).cloned().unwrap_or_default();
            children.push(schema_child(i, &name, &new_types, &new_classes));
        }
    }
    let offset = config.schema_files.len();
    for (i, table) in config.schema.iter().enumerate() {
        children.push(schema_child(
            offset + i,
            &table.name,
            &table.attribute_types,
            &table.object_classes,
        ));
    }
    children
}

fn schema_child(number: usize, name: &str, types: &[String], classes: &[String]) -> ConfigEntry {
    ConfigEntry::new(format!("cn={{{number}}}{name},{SCHEMA_DN}"))
        .with("objectClass", one("olcSchemaConfig"))
        .with("cn", one(format!("{{{number}}}{name}")))
        .with("olcAttributeTypes", numbered(types))
        .with("olcObjectClasses", numbered(classes))
}

/// The names of the schema children a configuration file defines, in order: each schema file's
/// stem (characters a DN would escape replaced by `-`), then each `[[schema]]` table's name.
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
    files
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
    base.schema_files.len() + base.schema.len()
}

/// A name a schema child may take: letters, digits, `-` and `_` (no character a DN escapes).
pub fn valid_schema_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A `[[limits.rules]]` entry in slapd's `olcLimits` words.
fn limit_rule(rule: &LimitRule) -> String {
    let who = match rule.who.split_once(':') {
        Some((kind, dn)) => format!("{kind}=\"{dn}\""),
        None => rule.who.clone(),
    };
    let mut text = who;
    let value = |v: &LimitValue| match v {
        LimitValue::Limited(n) => n.to_string(),
        LimitValue::Unlimited => "unlimited".to_string(),
        LimitValue::Disabled => "disabled".to_string(),
    };
    for (word, limit) in [
        ("size", &rule.size),
        ("time", &rule.time),
        ("size.unchecked", &rule.lookthrough),
        ("size.pr", &rule.paged_size),
        ("size.prtotal", &rule.paged_total),
    ] {
        if let Some(v) = limit {
            text.push_str(&format!(" {word}={}", value(v)));
        }
    }
    text
}

/// Why a configuration tree cannot be run: the result code slapd gives and a message naming the
/// attribute and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ResultCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ResultCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }

    /// slapd's answer to a value its handler rejects: other (80), `<attr> problem`.
    fn handler(attr: &str, problem: impl std::fmt::Display) -> Refusal {
        Refusal::new(ResultCode::Other, format!("<{attr}> {problem}"))
    }

    /// slapd's answer to a value its syntax rejects: invalidAttributeSyntax.
    fn syntax(attr: &str) -> Refusal {
        Refusal::new(
            ResultCode::InvalidAttributeSyntax,
            format!("{attr}: value #0 invalid per syntax"),
        )
    }
}

/// The live settings of a tree (the attributes `live_attributes` lists), applied over `base`: the whole
/// configuration the server runs with this tree, and the first database's root password. Checks what
/// can be checked without the schema; `change::build` checks the rest by building the databases' settings.
pub fn to_config(base: &Config, tree: &[ConfigEntry]) -> Result<(Config, Vec<u8>), Refusal> {
    let mut config = base.clone();
    let mut first_root_password = Vec::new();
    let find = |dn: &str| tree.iter().find(|e| e.dn.eq_ignore_ascii_case(dn));
    if let Some(global) = find(SUFFIX) {
        config.server_id = match global.single("olcServerID") {
            None => 0,
            Some(text) => text
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|n| *n <= canopy_proto::sync::SID_MAX)
                .ok_or_else(|| {
                    Refusal::handler("olcServerID", format!("invalid server ID {text:?}"))
                })?,
        };
    }
    if let Some(global) = find(SUFFIX) {
        config.log_level = global.get("olcLogLevel").to_vec();
        crate::config::log_filter(&config.log_level)
            .map_err(|e| Refusal::handler("olcLogLevel", e))?;
        let cert = global.single("olcTLSCertificateFile");
        let key = global.single("olcTLSCertificateKeyFile");
        if cert.is_some() != key.is_some() {
            return Err(Refusal::handler(
                "olcTLSCertificateFile",
                "olcTLSCertificateFile and olcTLSCertificateKeyFile go together",
            ));
        }
        config.tls.cert_file = cert.map(std::path::PathBuf::from);
        config.tls.key_file = key.map(std::path::PathBuf::from);
    }
    if let Some(frontend) = find(FRONTEND_DN) {
        if let Some(v) = frontend.single("olcSizeLimit") {
            config.limits.size_limit = parse_limit("olcSizeLimit", v)?;
        }
        if let Some(v) = frontend.single("olcTimeLimit") {
            config.limits.time_limit = parse_limit("olcTimeLimit", v)?;
        }
        match frontend.get("olcPasswordHash") {
            [] => {}
            [one] => {
                if canopy_password::Scheme::from_name(one).is_none() {
                    return Err(Refusal::handler("olcPasswordHash", "no valid hashes found"));
                }
                one.clone_into(&mut config.password_hash);
            }
            _ => {
                return Err(Refusal::handler(
                    "olcPasswordHash",
                    "Canopy hashes new passwords with one scheme only",
                ))
            }
        }
    }
    if let Some(db) = find(CONFIG_DB_DN) {
        config.config_access = db.ordered("olcAccess");
        config.config_root_dn = db.single("olcRootDN").map(str::to_string);
        config.config_root_password = db.single("olcRootPW").map(str::to_string);
    }
    // Databases added live follow the file's, numbered on, in the order of their numbers. A gap (a
    // crash between a delete and the renumbering after it) is closed; a copy left by a crash in the
    // middle of a renumbering (the same suffix and directory twice) counts once.
    let file_count = config.database_count();
    let mut live: Vec<(usize, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| database_number(&e.dn).map(|n| (n, e)))
        .filter(|(n, _)| *n > file_count)
        .collect();
    live.sort_by_key(|(n, _)| *n);
    let mut added: Vec<&ConfigEntry> = Vec::new();
    for (_, db) in live {
        let same = |other: &&ConfigEntry| {
            same_dn_text(
                db.single("olcSuffix").unwrap_or_default(),
                other.single("olcSuffix").unwrap_or_default(),
            ) && db.single("olcDbDirectory") == other.single("olcDbDirectory")
        };
        if !added.iter().any(same) {
            config.database.push(added_database(db)?);
            added.push(db);
        }
    }
    for number in 1..=config.database_count() {
        let entry = match number.checked_sub(file_count + 1) {
            None => find(&database_dn(number)),
            Some(i) => added.get(i).copied(),
        };
        let Some(db) = entry else {
            continue;
        };
        if let Some(suffix) = db.single("olcSuffix") {
            let file = config
                .database_view(number)
                .map(|v| v.suffix)
                .unwrap_or_default();
            if !same_dn_text(suffix, &file) {
                return Err(Refusal::new(
                    ResultCode::Other,
                    format!(
                        "<olcSuffix> database {number} holds {suffix:?} in the live configuration \
                         but {file:?} in the configuration file (databases added live are numbered \
                         after the file's; add new [[database]] tables after them)"
                    ),
                ));
            }
        }
        let read_only = match db.single("olcReadOnly") {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("TRUE") => true,
            Some(v) if v.eq_ignore_ascii_case("FALSE") => false,
            Some(_) => return Err(Refusal::syntax("olcReadOnly")),
        };
        let access = db.ordered("olcAccess");
        let root_dn = db.single("olcRootDN").map(str::to_string);
        let root_password = db.single("olcRootPW").map(str::to_string);
        let size = db
            .single("olcSizeLimit")
            .map(|v| parse_limit("olcSizeLimit", v))
            .transpose()?;
        let time = db
            .single("olcTimeLimit")
            .map(|v| parse_limit("olcTimeLimit", v))
            .transpose()?;
        let indexes = parse_indexes(db.get("olcDbIndex"))?;
        let rules = db
            .ordered("olcLimits")
            .iter()
            .map(|text| crate::limits::parse_limit_rule(text))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Refusal::handler("olcLimits", e))?;
        match number
            .checked_sub(2)
            .and_then(|i| config.database.get_mut(i))
        {
            None => {
                config.indexes = indexes;
                config.limits.rules = rules;
                config.read_only = read_only;
                config.access = access;
                config.root_dn = root_dn.unwrap_or_default();
                first_root_password = root_password.unwrap_or_default().into_bytes();
                if size.is_some() || time.is_some() {
                    return Err(Refusal::new(
                        ResultCode::UnwillingToPerform,
                        "olcSizeLimit/olcTimeLimit: the first database takes the server-wide \
                         limits; set them on olcDatabase={-1}frontend,cn=config",
                    ));
                }
            }
            Some(table) => {
                table.indexes = indexes;
                table.limits.rules = (!rules.is_empty()).then_some(rules);
                table.read_only = read_only;
                table.access = access;
                table.root_dn = root_dn;
                table.root_password = root_password;
                table.limits.size_limit = size;
                table.limits.time_limit = time;
            }
        }
    }
    config.schema.extend(live_schema(base, tree)?);
    crate::dbconfig::check(&config.suffix, &config.data_dir, &config.database).map_err(|e| {
        // The table checks name TOML keys; the attribute is the one they are about.
        let attr = match e.message.as_str() {
            m if m.starts_with("root_") => "olcRootDN",
            m if m.starts_with("directory") => "olcDbDirectory",
            _ => "olcSuffix",
        };
        Refusal::new(ResultCode::Other, format!("<{attr}> {}", e.message))
    })?;
    Ok((config, first_root_password))
}

/// The `[[schema]]` tables of the schema children added live: those numbered after the file's, in
/// their order. A child numbered among the file's whose name is not the file's is one added live
/// before the file gained a schema: refused, as the schema would be lost.
fn live_schema(
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
                attribute_types: entry.ordered("olcAttributeTypes"),
                object_classes: entry.ordered("olcObjectClasses"),
            }),
        }
    }
    Ok(tables)
}

/// Two DNs as text, compared without case and spaces after commas (the schema compares them again
/// when the database opens).
pub(crate) fn same_dn_text(a: &str, b: &str) -> bool {
    let rough =
        |dn: &str| crate::dbconfig::rough_rdns(dn).unwrap_or_else(|_| vec![dn.to_lowercase()]);
    rough(a) == rough(b)
}

/// The `[[database]]` table of a database added live: its suffix, directory and glue (the settings
/// that change live are applied by `to_config` like any database's).
fn added_database(db: &ConfigEntry) -> Result<crate::config::DatabaseConfig, Refusal> {
    let suffix = db.single("olcSuffix").ok_or_else(|| {
        Refusal::new(
            ResultCode::ObjectClassViolation,
            "olcSuffix: a new database needs its suffix",
        )
    })?;
    let subordinate = match db.single("olcSubordinate") {
        None => None,
        Some(v) if v.eq_ignore_ascii_case("TRUE") => Some(true),
        Some(_) => {
            return Err(Refusal::handler(
                "olcSubordinate",
                "only TRUE (glued into the superior database) is supported",
            ))
        }
    };
    Ok(crate::config::DatabaseConfig {
        suffix: suffix.to_string(),
        root_dn: None,
        root_password: None,
        directory: db.single("olcDbDirectory").map(std::path::PathBuf::from),
        indexes: Vec::new(),
        access: Vec::new(),
        limits: Default::default(),
        overlay: Vec::new(),
        read_only: false,
        subordinate,
    })
}

/// `olcDbIndex` values in slapd's words: `ATTR[,ATTR...] [KIND[,KIND...]]` (no kinds: eq), kinds `eq`
/// (`equality`), `pres` (`present`), `sub` (`substr`, `subinitial`, `subany`, `subfinal`), `approx`
/// (`approximate`) and Canopy's `ord`. Attribute names are checked against the schema later.
pub fn parse_indexes(values: &[String]) -> Result<Vec<crate::config::IndexConfig>, Refusal> {
    let mut indexes: Vec<crate::config::IndexConfig> = Vec::new();
    for value in values {
        let mut words = value.split_whitespace();
        let attrs = words.next().unwrap_or("");
        let kinds_text = words.collect::<Vec<_>>().join("");
        let mut kinds: Vec<String> = Vec::new();
        for kind in kinds_text.split(',').filter(|k| !k.is_empty()) {
            let canonical = match kind.to_ascii_lowercase().as_str() {
                "eq" | "equality" => "eq",
                "pres" | "present" => "pres",
                "sub" | "substr" | "substring" | "subinitial" | "subany" | "subfinal" => "sub",
                "approx" | "approximate" => "approx",
                "ord" | "ordering" => "ord",
                _ => {
                    return Err(Refusal::new(
                        ResultCode::Other,
                        format!("<olcDbIndex> index type \"{kind}\" undefined"),
                    ))
                }
            };
            if !kinds.iter().any(|k| k == canonical) {
                kinds.push(canonical.to_string());
            }
        }
        if kinds.is_empty() {
            kinds.push("eq".to_string());
        }
        for attr in attrs.split(',').filter(|a| !a.is_empty()) {
            if attr.eq_ignore_ascii_case("default") {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    "<olcDbIndex> \"default\" is not supported: list the kinds on each index",
                ));
            }
            match indexes
                .iter_mut()
                .find(|i| i.attr.eq_ignore_ascii_case(attr))
            {
                Some(index) => {
                    for kind in &kinds {
                        if !index.kinds.contains(kind) {
                            index.kinds.push(kind.clone());
                        }
                    }
                }
                None => indexes.push(crate::config::IndexConfig {
                    attr: attr.to_string(),
                    kinds: kinds.clone(),
                }),
            }
        }
    }
    Ok(indexes)
}

/// slapd's size or time limit words: a number or `unlimited` (0 here, as in `[limits]`).
fn parse_limit(attr: &str, text: &str) -> Result<u32, Refusal> {
    let text = text.trim();
    let number = text
        .strip_prefix("size=")
        .or_else(|| text.strip_prefix("time="))
        .unwrap_or(text);
    if number.eq_ignore_ascii_case("unlimited") || number == "-1" {
        return Ok(0);
    }
    number
        .parse::<u32>()
        .map_err(|_| Refusal::handler(attr, "unable to parse limit"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_reads_back_into_the_same_configuration() {
        let config = Config::parse(
            "suffix = \"dc=x\"\nroot_dn = \"cn=admin,dc=x\"\naccess = [\"to * by * read\"]\n\
             config_root_dn = \"cn=admin,cn=config\"\n[limits]\nsize_limit = 7\n\
             [[database]]\nsuffix = \"dc=y\"\nread_only = true\n[database.limits]\ntime_limit = 9\n",
            "t",
        )
        .unwrap();
        let tree = from_config(&config, b"secret");
        let db1 = tree.iter().find(|e| e.dn == database_dn(1)).unwrap();
        assert_eq!(db1.get("olcAccess"), ["{0}to * by * read"]);
        assert_eq!(db1.get("olcRootPW"), ["secret"]);
        // The file as it was before the live changes the tree holds.
        let mut base = config.clone();
        base.access.clear();
        base.limits.size_limit = 1;
        base.database[0].read_only = false;
        base.database[0].limits.time_limit = None;
        base.config_root_dn = None;
        let (back, password) = to_config(&base, &tree).unwrap();
        assert_eq!(password, b"secret");
        assert_eq!(from_config(&back, &password), tree);
        assert_eq!(back.limits.size_limit, 7);
        assert!(back.database[0].read_only);
        assert_eq!(back.database[0].limits.time_limit, Some(9));
    }

    #[test]
    fn schema_added_live_reads_back_as_tables_after_the_file_s() {
        let file = Config::parse(
            "[[schema]]\nname = \"site\"\nattribute_types = [\"( 1.3.6.1.4.1.99999.7.1 NAME 'siteCode' \
             SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\"]\n",
            "t",
        )
        .unwrap();
        let mut live = file.clone();
        live.schema.push(crate::config::SchemaConfig {
            name: "local".into(),
            attribute_types: vec!["( 1.3.6.1.4.1.99999.8.1 NAME 'localCode' SUP siteCode )".into()],
            object_classes: vec![
                "( 1.3.6.1.4.1.99999.8.2 NAME 'localThing' SUP top AUXILIARY MAY localCode )"
                    .into(),
            ],
        });
        let tree = from_config(&live, b"");
        let child = tree
            .iter()
            .find(|e| e.dn == "cn={1}local,cn=schema,cn=config")
            .unwrap();
        assert_eq!(child.get("cn"), ["{1}local"]);
        assert_eq!(
            child.get("olcAttributeTypes"),
            ["{0}( 1.3.6.1.4.1.99999.8.1 NAME 'localCode' SUP siteCode )"]
        );
        assert_eq!(schema_child_of(&child.dn), Some((1, "local".to_string())));
        let (back, _) = to_config(&file, &tree).unwrap();
        assert_eq!(back.schema, live.schema);
        let schema = crate::load_schema(&back).unwrap();
        assert!(schema.object_class("localThing").is_some());
        // A file that now defines a schema where the live one is numbered: refused, not lost.
        let mut grown = file.clone();
        grown.schema.push(crate::config::SchemaConfig {
            name: "other".into(),
            ..Default::default()
        });
        let refusal = to_config(&grown, &tree).unwrap_err();
        assert!(
            refusal.message.contains("cn={1}local"),
            "{}",
            refusal.message
        );
    }

    #[test]
    fn gaps_and_copies_a_crash_leaves_are_closed() {
        let file = Config::default();
        let mut live = file.clone();
        for (suffix, dir) in [("dc=a", "/tmp/a"), ("dc=b", "/tmp/b"), ("dc=c", "/tmp/c")] {
            live.database.push(crate::config::DatabaseConfig {
                suffix: suffix.into(),
                root_dn: None,
                root_password: None,
                directory: Some(dir.into()),
                indexes: Vec::new(),
                access: Vec::new(),
                limits: Default::default(),
                overlay: Vec::new(),
                read_only: false,
                subordinate: None,
            });
        }
        live.schema = ["one", "two"]
            .map(|name| crate::config::SchemaConfig {
                name: name.into(),
                ..Default::default()
            })
            .to_vec();
        let tree = from_config(&live, b"");
        // Database 2 and schema {0} deleted, the crash came before the renumbering.
        let gap: Vec<ConfigEntry> = tree
            .iter()
            .filter(|e| e.dn != database_dn(2) && !e.dn.starts_with("cn={0}one"))
            .cloned()
            .collect();
        let (back, _) = to_config(&file, &gap).unwrap();
        let suffixes: Vec<&str> = back.database.iter().map(|d| d.suffix.as_str()).collect();
        assert_eq!(suffixes, ["dc=b", "dc=c"]);
        assert_eq!(back.schema.len(), 1);
        assert_eq!(back.schema[0].name, "two");
        // In the middle of a renumbering: database 3 copied to 2 and schema {1} to {0}, not yet
        // deleted.
        let mut copies = gap.clone();
        let mut moved = gap.iter().find(|e| e.dn == database_dn(3)).unwrap().clone();
        moved.dn = database_dn(2);
        copies.push(moved);
        let mut child = gap
            .iter()
            .find(|e| e.dn.starts_with("cn={1}two"))
            .unwrap()
            .clone();
        child.dn = format!("cn={{0}}two,{SCHEMA_DN}");
        copies.push(child);
        let (back, _) = to_config(&file, &copies).unwrap();
        let suffixes: Vec<&str> = back.database.iter().map(|d| d.suffix.as_str()).collect();
        assert_eq!(suffixes, ["dc=b", "dc=c"]);
        assert_eq!(back.schema.len(), 1);
    }

    #[test]
    fn a_start_after_a_crash_in_a_database_delete_finds_the_numbering() {
        let file = Config::parse(
            "[[database]]\nsuffix = \"dc=b\"\ndirectory = \"/tmp/b\"\n\
             [[database]]\nsuffix = \"dc=c\"\ndirectory = \"/tmp/c\"\n\
             [[database]]\nsuffix = \"dc=d\"\ndirectory = \"/tmp/d\"\n",
            "t",
        )
        .unwrap();
        let mut tree = from_config(&file, b"");
        let c = tree.iter_mut().find(|e| e.dn == database_dn(3)).unwrap();
        c.attrs.push(("olcReadOnly".into(), vec!["TRUE".into()]));
        c.attrs
            .retain(|(n, v)| n != "olcReadOnly" || v[0] == "TRUE");
        let without_b: Vec<ConfigEntry> = tree
            .iter()
            .filter(|e| e.dn != database_dn(2))
            .cloned()
            .collect();
        let suffixes = |config: &Config| -> Vec<String> {
            config.database.iter().map(|d| d.suffix.clone()).collect()
        };
        // The delete committed, not yet recorded: the file's dc=b comes back from the file.
        let aligned = align_databases(&file, &without_b);
        let (back, _) = to_config(&file, &aligned).unwrap();
        assert_eq!(suffixes(&back), ["dc=b", "dc=c", "dc=d"]);
        assert!(back.database[1].read_only, "dc=c keeps its live setting");
        // Recorded, not yet renumbered (or half renumbered: dc=c copied to 2).
        let mut base = file.clone();
        base.database.remove(0);
        let mut half = without_b.clone();
        let copy = moved_to_database(half.iter().find(|e| e.dn == database_dn(3)).unwrap(), 2);
        half.push(copy);
        for stored in [without_b, half] {
            let aligned = align_databases(&base, &stored);
            let (back, _) = to_config(&base, &aligned).unwrap();
            assert_eq!(suffixes(&back), ["dc=c", "dc=d"]);
            assert!(back.database[0].read_only, "dc=c keeps its live setting");
            assert!(!back.database[1].read_only);
        }
        // A tree that matches the file is left as it is.
        assert_eq!(align_databases(&file, &tree), tree);
    }

    #[test]
    fn schema_tables_are_checked_in_slapd_s_words() {
        let mut schema = crate::load_schema(&Config::default()).unwrap();
        let table = |types: &[&str], classes: &[&str]| crate::config::SchemaConfig {
            name: "t".into(),
            attribute_types: types.iter().map(|t| t.to_string()).collect(),
            object_classes: classes.iter().map(|c| c.to_string()).collect(),
        };
        for (types, classes, message) in [
            (
                &["( 1.3.6.1.4.1.99999.9.1 NAME 'x1' SYNTAX 1.2.3.4 )"][..],
                &[][..],
                "Syntax not found: \"1.2.3.4\"",
            ),
            (
                &["( 1.3.6.1.4.1.99999.9.2 NAME 'x2' SUP nope )"],
                &[],
                "AttributeType not found: \"nope\"",
            ),
            (
                &["( 1.3.6.1.4.1.99999.9.3 NAME 'cn' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"],
                &[],
                "Inconsistent duplicate attributeType: \"cn\"",
            ),
            (
                &[],
                &["( 1.3.6.1.4.1.99999.9.4 NAME 'x4' SUP nope AUXILIARY )"],
                "ObjectClass not found: \"nope\"",
            ),
        ] {
            let error = crate::load_schema_tables(&mut schema.clone(), &[table(types, classes)])
                .unwrap_err();
            assert_eq!(error.message, message);
        }
        crate::load_schema_tables(
            &mut schema,
            &[table(
                &["( 1.3.6.1.4.1.99999.9.5 NAME 'x5' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"],
                &["( 1.3.6.1.4.1.99999.9.6 NAME 'x6' SUP top AUXILIARY MAY x5 )"],
            )],
        )
        .unwrap();
        assert!(schema.object_class("x6").is_some());
    }

    #[test]
    fn limit_rules_read_back_in_slapd_words() {
        let rule = crate::limits::parse_limit_rule(
            "dn.exact=\"uid=a,dc=x\" size=5 time=unlimited size.prtotal=disabled",
        )
        .unwrap();
        assert_eq!(rule.who, "dn.exact:uid=a,dc=x");
        assert_eq!(rule.size, Some(LimitValue::Limited(5)));
        assert_eq!(rule.time, Some(LimitValue::Unlimited));
        assert_eq!(
            crate::limits::parse_limit_rule(&limit_rule(&rule))
                .unwrap()
                .who,
            rule.who
        );
        assert!(crate::limits::parse_limit_rule("users").is_err());
        assert!(crate::limits::parse_limit_rule("dn.regex=\".*\" size=1").is_err());
        assert!(crate::limits::parse_limit_rule("users size=lots").is_err());
    }

    #[test]
    fn bad_values_name_the_attribute() {
        let config = Config::default();
        let mut tree = from_config(&config, b"");
        let frontend = tree.iter_mut().find(|e| e.dn == FRONTEND_DN).unwrap();
        frontend.attrs.retain(|(n, _)| n != "olcSizeLimit");
        frontend
            .attrs
            .push(("olcSizeLimit".into(), vec!["lots".into()]));
        let refusal = to_config(&config, &tree).unwrap_err();
        assert_eq!(refusal.code, ResultCode::Other);
        assert_eq!(refusal.message, "<olcSizeLimit> unable to parse limit");
        assert_eq!(split_ordinal("{12}to *"), (Some(12), "to *"));
        assert_eq!(split_ordinal("{x}to *"), (None, "{x}to *"));
    }
}
