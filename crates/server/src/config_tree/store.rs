//! The durable store of the cn=config tree: an LMDB environment of its own in `DATA/config`, fsynced on
//! every commit, read through the ordinary database code and written only by this module and
//! `crate::config_change` (docs/design/config-tree.md).
//!
//! At the first start the configuration file seeds it. At every later start the stored tree is the
//! truth for the settings that change live (`live_attributes`); the file still gives everything else,
//! and where the file disagrees with a stored live setting a log line says so (the stored one runs).

use std::collections::HashMap;
use std::sync::Arc;

use canopy_core::check::entry_from_attributes_with;
use canopy_core::index::IndexSpec;
use canopy_core::wire::StoredEntry;
use canopy_core::LdapError;
use canopy_directory::{
    structural, Action, Directory, Guard, InWrite, OpError, OpenOptions, Stamp, WriteOp,
    WriteRequest,
};
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::Schema;

use super::{from_config, to_config, ConfigEntry, SUFFIX};
use crate::config::{Config, DatabaseConfig};
use crate::databases::Database;
use crate::StartError;

/// The cn=config database and the tree it holds.
pub struct ConfigTree {
    /// The configuration database as opened (its settings at start; the registry holds the live one).
    pub(crate) directory: Directory,
    /// The tree as stored, parents first; its lock also serializes configuration changes.
    pub(crate) entries: tokio::sync::Mutex<Vec<ConfigEntry>>,
    /// The configuration file as read at start, without the databases deleted live (`deleted.toml`):
    /// every setting the tree does not change live. A delete of one of the file's databases replaces it.
    pub(crate) base: std::sync::RwLock<Arc<Config>>,
    /// The schema the file defines (built-in, overlays', `schema_files`, its `[[schema]]` tables):
    /// a schema changed live is this one plus the tables added live.
    pub(crate) file_schema: Arc<Schema>,
}

/// Operational attributes the store adds, left out of the tree's settings.
pub(crate) const OPERATIONAL: [&str; 8] = [
    "entryUUID",
    "entryCSN",
    "creatorsName",
    "createTimestamp",
    "modifiersName",
    "modifyTimestamp",
    "structuralObjectClass",
    "contextCSN",
];

fn internal(what: &str, e: impl std::fmt::Display) -> StartError {
    StartError::Invalid(format!("cn=config store: {what}: {e}"))
}

impl ConfigTree {
    /// The configuration file's settings the tree runs over (see `base`).
    pub(crate) fn base(&self) -> Arc<Config> {
        self.base.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records that the file's database `table` was deleted live (`deleted.toml`, durably) and
    /// makes `base` the file's configuration without it.
    pub(crate) fn record_deleted(
        &self,
        base: Config,
        table: &DatabaseConfig,
    ) -> std::io::Result<()> {
        let dir = base.data_dir.join("config");
        let mut deleted = read_deleted(&dir);
        deleted.push(Deleted::of(table));
        write_deleted(&dir, &deleted)?;
        *self.base.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(base);
        Ok(())
    }

    /// Records (in `DATA/config/first-database`, fsynced) that the first database is the one added
    /// live over the default, before the change is stored: until the tree holds it, its entry is the
    /// default's, which names `DATA` and the default suffix, so the record alone changes nothing.
    pub(crate) fn record_first_added(&self, base: Config) -> std::io::Result<()> {
        let dir = base.data_dir.join("config");
        let path = dir.join(FIRST_ADDED);
        {
            let file = std::fs::File::create(&path)?;
            file.sync_all()?;
        }
        std::fs::File::open(&dir)?.sync_all()?;
        *self.base.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(base);
        Ok(())
    }

    /// Opens (or seeds) the store in `DATA/config` and returns it with the configuration the server
    /// runs: `config` with the stored live settings in place, and the first database's root password.
    pub async fn open(
        config: &Config,
        schema: Arc<Schema>,
        first_root_password: &[u8],
    ) -> Result<(ConfigTree, Config, Vec<u8>), StartError> {
        set_aside_stale(config)?;
        let path = config.data_dir.join("config");
        std::fs::create_dir_all(&path).map_err(|e| internal("create", e))?;
        let index = IndexSpec::equality("objectClass");
        let options = OpenOptions {
            path,
            initial_map_size: 16 << 20,
            durable: true,
            max_readers: 1024,
            write_map: false,
        };
        let directory = Directory::open(
            schema.clone(),
            SUFFIX,
            vec![index],
            options,
            canopy_directory::Pipeline::standard(),
        )?;
        let stored = read_tree(&directory)?;
        let dir = config.data_dir.join("config");
        // The file's databases deleted live stay deleted while the file lists them unchanged.
        let mut base = match stored.is_empty() {
            true => {
                remove_deleted(&dir).map_err(|e| internal(DELETED, e))?;
                match std::fs::remove_file(dir.join(FIRST_ADDED)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(internal(FIRST_ADDED, e))
                    }
                    _ => {}
                }
                config.clone()
            }
            false => without_deleted(config, &dir, true).map_err(|e| internal(DELETED, e))?,
        };
        base.first_added = dir.join(FIRST_ADDED).exists();
        let from_file = from_config(&base, first_root_password);
        let (running, password) = match stored.is_empty() {
            true => (base.clone(), first_root_password.to_vec()),
            false => {
                let baseline = read_baseline(&dir);
                let aligned = super::align_databases(&base, &stored);
                let merged = merge_file_changes(&from_file, baseline.as_ref(), &aligned);
                to_config(&base, &merged).map_err(|r| {
                    StartError::Invalid(format!(
                        "the stored cn=config in {} cannot run: {}",
                        dir.display(),
                        r.message
                    ))
                })?
            }
        };
        // The file's settings that do not change live, refreshed in the stored tree.
        let tree = from_config(&running, &password);
        let writer = Writer {
            directory: &directory,
        };
        writer
            .store(&stored, &tree)
            .await
            .map_err(|e| internal("write", e.message))?;
        // What the file said, so that the next start can tell which settings the file changed.
        write_baseline(&dir, &from_file).map_err(|e| internal("baseline.toml", e))?;
        let config_tree = ConfigTree {
            directory,
            entries: tokio::sync::Mutex::new(tree),
            base: std::sync::RwLock::new(Arc::new(base)),
            file_schema: schema,
        };
        Ok((config_tree, running, password))
    }

    /// The registry's cn=config database for `config`: its access rules (`config_access`, or root over
    /// ldapi only) and its root DN.
    pub fn database(&self, config: &Config) -> Result<Database, super::Refusal> {
        let schema = self.directory.schema();
        let mut rules = config.clone();
        rules.access = match config.config_access.is_empty() {
            true => vec![super::default_access()],
            false => config.config_access.clone(),
        };
        let acl = crate::access_list(schema, &rules)
            .map_err(|e| super::Refusal::new(ResultCode::Other, format!("<olcAccess> {e}")))?;
        let root = match &config.config_root_dn {
            None => None,
            Some(text) => {
                let ndn = canopy_proto::Dn::parse(text.as_bytes())
                    .ok()
                    .and_then(|dn| schema.normalize_dn(&dn).ok())
                    .ok_or_else(|| {
                        super::Refusal::new(
                            ResultCode::InvalidAttributeSyntax,
                            "olcRootDN: value #0 invalid per syntax",
                        )
                    })?;
                let password = config.config_root_password.clone().unwrap_or_default();
                Some((ndn, password.into_bytes()))
            }
        };
        Ok(Database::new(self.directory.clone(), acl)
            .as_config()
            .with_settings(
                root,
                config.limits.clone(),
                false,
                crate::databases::Subordinate::No,
                config.data_dir.join("config"),
            ))
    }
}

/// Every entry of the store, in the order they were added (parents first), as tree entries.
fn read_tree(directory: &Directory) -> Result<Vec<ConfigEntry>, StartError> {
    let txn = directory.read().map_err(|e| internal("read", e.message))?;
    let mut tree = Vec::new();
    for item in directory
        .stored_entries(&txn)
        .map_err(|e| internal("read", e.message))?
    {
        let (_, bytes) = item.map_err(|e| internal("read", e.message))?;
        let entry = StoredEntry::parse(bytes)
            .and_then(|stored| stored.to_entry())
            .map_err(|e| internal("decode", e))?;
        tree.push(ConfigEntry {
            dn: entry.dn.to_string(),
            attrs: entry
                .attrs
                .iter()
                .filter(|a| !OPERATIONAL.iter().any(|o| o.eq_ignore_ascii_case(&a.desc)))
                .map(|a| {
                    let values = a
                        .values
                        .iter()
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                        .collect();
                    (a.desc.clone(), values)
                })
                .collect(),
        });
    }
    Ok(tree)
}

/// The live settings the file gave at the last start: DN -> attribute -> values.
type Baseline = toml::Table;

const BASELINE: &str = "baseline.toml";

fn read_baseline(dir: &std::path::Path) -> Option<Baseline> {
    let text = std::fs::read_to_string(dir.join(BASELINE)).ok()?;
    match toml::from_str(&text) {
        Ok(table) => Some(table),
        Err(error) => {
            tracing::warn!(%error, "cn=config: {BASELINE} unreadable; the file's changes are not applied");
            None
        }
    }
}

/// What the baseline holds for `entry`'s `attr`. A data database is found by its suffix
/// (`olcsuffix`), as its number moves when one before it is deleted; a baseline written before it
/// held suffixes is read by DN.
fn baseline_values<'a>(baseline: &'a Baseline, entry: &ConfigEntry, attr: &str) -> Vec<&'a str> {
    let first = |t: &'a toml::Table, key: &str| -> Option<&'a str> {
        t.get(key)
            .and_then(|v| v.as_array())
            .and_then(|a| a.first())
            .and_then(|v| v.as_str())
    };
    let by_dn = || {
        baseline
            .get(&entry.dn.to_ascii_lowercase())
            .and_then(|v| v.as_table())
    };
    let table = match (super::database_number(&entry.dn), entry.single("olcSuffix")) {
        (Some(_), Some(suffix)) => {
            let tables = || baseline.values().filter_map(|v| v.as_table());
            match tables().any(|t| t.contains_key("olcsuffix")) {
                true => tables().find(|t| {
                    first(t, "olcsuffix").is_some_and(|s| super::same_dn_text(s, suffix))
                }),
                false => by_dn(),
            }
        }
        _ => by_dn(),
    };
    table
        .and_then(|t| t.get(&attr.to_ascii_lowercase()))
        .and_then(|v| v.as_array())
        .map(|values| values.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default()
}

/// The baseline's key for a database's overlays (its `olcOverlay` children, each as one text).
const OVERLAYS_KEY: &str = "olcoverlay";

/// The `olcOverlay` children of data database `number` in `tree`, in their order.
fn overlay_children(tree: &[ConfigEntry], number: usize) -> Vec<&ConfigEntry> {
    let mut children: Vec<(usize, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| super::overlay_child_of(&e.dn).map(|(n, i, _)| (n, i, e)))
        .filter(|(n, _, _)| *n == number)
        .map(|(_, i, e)| (i, e))
        .collect();
    children.sort_by_key(|(i, _)| *i);
    children.into_iter().map(|(_, e)| e).collect()
}

/// Each overlay child of database `number` as one comparable text: its name and settings.
fn overlay_texts(tree: &[ConfigEntry], number: usize) -> Vec<String> {
    overlay_children(tree, number)
        .iter()
        .map(|e| {
            let mut attrs: Vec<String> = e
                .attrs
                .iter()
                .map(|(name, values)| {
                    format!("{}={}", name.to_ascii_lowercase(), values.join("\u{1}"))
                })
                .collect();
            attrs.sort();
            attrs.join("\n")
        })
        .collect()
}

/// Whether a baseline records the databases' overlays (written by a Canopy whose overlays change
/// live).
fn holds_overlays(baseline: &Baseline) -> bool {
    baseline
        .values()
        .filter_map(|v| v.as_table())
        .any(|t| t.contains_key(OVERLAYS_KEY))
}

/// `stored` with every database's overlay entries replaced by those of `from_file`.
fn with_overlays_of(from_file: &[ConfigEntry], stored: &[ConfigEntry]) -> Vec<ConfigEntry> {
    let mut tree: Vec<ConfigEntry> = stored
        .iter()
        .filter(|e| super::overlay_child_of(&e.dn).is_none())
        .cloned()
        .collect();
    tree.extend(
        from_file
            .iter()
            .filter(|e| super::overlay_child_of(&e.dn).is_some())
            .cloned(),
    );
    tree
}

/// Writes what the file says for every live setting, durably (a new file renamed over the old one).
fn write_baseline(dir: &std::path::Path, from_file: &[ConfigEntry]) -> std::io::Result<()> {
    let mut table = Baseline::new();
    for entry in from_file {
        let mut attrs = toml::Table::new();
        for attr in super::live_attributes(&entry.dn) {
            let values = entry
                .get(attr)
                .iter()
                .cloned()
                .map(toml::Value::String)
                .collect();
            attrs.insert(attr.to_ascii_lowercase(), toml::Value::Array(values));
        }
        if let Some(number) = super::database_number(&entry.dn) {
            let overlays = overlay_texts(from_file, number);
            attrs.insert(
                OVERLAYS_KEY.to_string(),
                toml::Value::Array(overlays.into_iter().map(toml::Value::String).collect()),
            );
            let suffix = entry.get("olcSuffix").iter().cloned();
            attrs.insert(
                "olcsuffix".to_string(),
                toml::Value::Array(suffix.map(toml::Value::String).collect()),
            );
        }
        table.insert(entry.dn.to_ascii_lowercase(), toml::Value::Table(attrs));
    }
    let text = toml::to_string(&table).map_err(std::io::Error::other)?;
    let fresh = dir.join(format!("{BASELINE}.new"));
    {
        let mut file = std::fs::File::create(&fresh)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&fresh, dir.join(BASELINE))?;
    std::fs::File::open(dir)?.sync_all()
}

/// The file's databases deleted live (docs/design/config-tree.md, "Deletes"): one table per database,
/// its suffix and a fingerprint of its `[[database]]` table as the file had it then.
const DELETED: &str = "deleted.toml";

/// The record of a first database added live over the default one (`Config::first_added`).
const FIRST_ADDED: &str = "first-database";

/// A database of the file deleted live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deleted {
    suffix: String,
    fingerprint: String,
}

impl Deleted {
    fn of(table: &DatabaseConfig) -> Deleted {
        Deleted {
            suffix: table.suffix.clone(),
            fingerprint: fingerprint(table),
        }
    }
}

/// A SHA-256 of everything a `[[database]]` table says: a table the administrator edited (any
/// key) no longer matches.
fn fingerprint(table: &DatabaseConfig) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{table:?}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_deleted(dir: &std::path::Path) -> Vec<Deleted> {
    let Ok(text) = std::fs::read_to_string(dir.join(DELETED)) else {
        return Vec::new();
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(error) => {
            tracing::error!(%error, "cn=config: {DELETED} unreadable; the databases it records are served again");
            return Vec::new();
        }
    };
    let list = table.get("database").and_then(|v| v.as_array());
    list.into_iter()
        .flatten()
        .filter_map(|t| {
            let text = |key: &str| t.get(key).and_then(|v| v.as_str()).map(str::to_string);
            Some(Deleted {
                suffix: text("suffix")?,
                fingerprint: text("fingerprint")?,
            })
        })
        .collect()
}

/// Writes the records durably (a new file renamed over the old one), or removes the file when none.
fn write_deleted(dir: &std::path::Path, deleted: &[Deleted]) -> std::io::Result<()> {
    if deleted.is_empty() {
        return remove_deleted(dir);
    }
    let list = deleted
        .iter()
        .map(|d| {
            let mut t = toml::Table::new();
            t.insert("suffix".into(), toml::Value::String(d.suffix.clone()));
            t.insert(
                "fingerprint".into(),
                toml::Value::String(d.fingerprint.clone()),
            );
            toml::Value::Table(t)
        })
        .collect();
    let mut table = toml::Table::new();
    table.insert("database".into(), toml::Value::Array(list));
    let text = toml::to_string(&table).map_err(std::io::Error::other)?;
    let fresh = dir.join(format!("{DELETED}.new"));
    {
        let mut file = std::fs::File::create(&fresh)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&fresh, dir.join(DELETED))?;
    std::fs::File::open(dir)?.sync_all()
}

fn remove_deleted(dir: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(DELETED)) {
        Ok(()) => std::fs::File::open(dir)?.sync_all(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The file's configuration `file` without its databases deleted live whose `[[database]]` tables
/// it still lists unchanged. A record whose table the file changed since (or no longer lists) is
/// dropped: the file wins, the database is served again. With `apply`, each decision is logged and
/// `deleted.toml` rewritten when a record was dropped (the server's start); without, nothing is
/// written (the offline tools).
fn without_deleted(file: &Config, dir: &std::path::Path, apply: bool) -> std::io::Result<Config> {
    let deleted = read_deleted(dir);
    if deleted.is_empty() {
        return Ok(file.clone());
    }
    let mut base = file.clone();
    let mut kept = Vec::new();
    for record in &deleted {
        let position = base
            .database
            .iter()
            .position(|t| super::same_dn_text(&t.suffix, &record.suffix));
        match position {
            Some(i) if fingerprint(&base.database[i]) == record.fingerprint => {
                base.database.remove(i);
                kept.push(record.clone());
                if apply {
                    tracing::info!(
                        suffix = %record.suffix,
                        "database deleted live (cn=config) and listed unchanged in the \
                         configuration file: it stays deleted (edit or remove its [[database]] \
                         table to change that)"
                    );
                }
            }
            Some(_) if apply => tracing::warn!(
                suffix = %record.suffix,
                "database deleted live (cn=config), but its [[database]] table changed in the \
                 configuration file since: the file wins, the database is served again"
            ),
            None if apply => tracing::info!(
                suffix = %record.suffix,
                "database deleted live (cn=config) and no longer in the configuration file: its \
                 deletion record is dropped"
            ),
            _ => {}
        }
    }
    if apply && kept != deleted {
        write_deleted(dir, &kept)?;
    }
    Ok(base)
}

/// The suffixes of the file's databases that stay deleted (for `config check`).
fn deleted_suffixes(file: &Config) -> Vec<String> {
    let dir = file.data_dir.join("config");
    let Ok(base) = without_deleted(file, &dir, false) else {
        return Vec::new();
    };
    file.database
        .iter()
        .filter(|t| !base.database.iter().any(|b| b.suffix == t.suffix))
        .map(|t| t.suffix.clone())
        .collect()
}

/// The stored tree with the live settings the file changed since the last start taken from the file
/// (the administrator edited them), each logged; where the file differs without having changed, the
/// live value stays and a warning says so. Without a baseline every live value stays.
fn merge_file_changes(
    from_file: &[ConfigEntry],
    baseline: Option<&Baseline>,
    stored: &[ConfigEntry],
) -> Vec<ConfigEntry> {
    let mut merged = stored.to_vec();
    // A database's overlays are one setting: the file's list replaces the live one when the file
    // changed it since the last start.
    for file_entry in from_file {
        let Some(number) = super::database_number(&file_entry.dn) else {
            continue;
        };
        if !merged
            .iter()
            .any(|e| e.dn.eq_ignore_ascii_case(&file_entry.dn))
        {
            continue;
        }
        let in_file = overlay_texts(from_file, number);
        if in_file == overlay_texts(&merged, number) {
            continue;
        }
        let edited =
            baseline.is_some_and(|b| baseline_values(b, file_entry, OVERLAYS_KEY) != in_file);
        if edited {
            tracing::info!(
                dn = %file_entry.dn,
                "overlays changed in the configuration file since the last start: the file's \
                 overlays replace the live ones"
            );
            merged.retain(|e| super::overlay_child_of(&e.dn).map(|(n, _, _)| n) != Some(number));
            merged.extend(overlay_children(from_file, number).into_iter().cloned());
        } else {
            tracing::warn!(
                dn = %file_entry.dn,
                "the configuration file's overlays differ from the live ones (cn=config in \
                 DATA/config); the live overlays are used (canopy config export shows them)"
            );
        }
    }
    for file_entry in from_file {
        let Some(live) = merged
            .iter_mut()
            .find(|e| e.dn.eq_ignore_ascii_case(&file_entry.dn))
        else {
            continue;
        };
        for attr in super::live_attributes(&file_entry.dn) {
            let in_file = file_entry.get(attr);
            if in_file == live.get(attr) {
                continue;
            }
            let edited = baseline.is_some_and(|b| {
                baseline_values(b, file_entry, attr)
                    != in_file.iter().map(String::as_str).collect::<Vec<_>>()
            });
            if edited {
                tracing::info!(
                    dn = %file_entry.dn,
                    attribute = attr,
                    "changed in the configuration file since the last start: the file's value \
                     replaces the live one"
                );
                live.attrs.retain(|(n, _)| !n.eq_ignore_ascii_case(attr));
                if !in_file.is_empty() {
                    live.attrs.push((attr.to_string(), in_file.to_vec()));
                }
            } else {
                tracing::warn!(
                    dn = %file_entry.dn,
                    attribute = attr,
                    "the configuration file differs from the live configuration (cn=config in \
                     DATA/config); the live value is used (canopy config export shows it)"
                );
            }
        }
    }
    merged
}

/// Writes the store with the server's own identity (no access rules).
pub(crate) struct Writer<'a> {
    pub(crate) directory: &'a Directory,
}

impl Writer<'_> {
    /// Writes the difference between `old` and `new`: new entries added (parents first), changed
    /// attributes replaced, vanished entries deleted (children first). Each write is durable.
    pub(crate) async fn store(
        &self,
        old: &[ConfigEntry],
        new: &[ConfigEntry],
    ) -> Result<(), LdapError> {
        let before: HashMap<String, &ConfigEntry> =
            old.iter().map(|e| (e.dn.to_ascii_lowercase(), e)).collect();
        for entry in new {
            match before.get(&entry.dn.to_ascii_lowercase()) {
                None => self.write(self.add(entry)?).await?,
                Some(previous) => {
                    let changes = changes(previous, entry);
                    if !changes.is_empty() {
                        let (dn, ndn) = self.directory.normalize(entry.dn.as_bytes())?;
                        self.write(WriteOp::Modify { dn, ndn, changes }).await?;
                    }
                }
            }
        }
        for gone in old.iter().rev() {
            if !new.iter().any(|e| e.dn.eq_ignore_ascii_case(&gone.dn)) {
                let (dn, ndn) = self.directory.normalize(gone.dn.as_bytes())?;
                self.write(WriteOp::Delete { dn, ndn }).await?;
            }
        }
        Ok(())
    }

    async fn write(&self, op: WriteOp) -> Result<(), LdapError> {
        self.directory
            .write(WriteRequest {
                op,
                guard: Arc::new(ServerWrite),
            })
            .await
            .map_err(OpError::into_ldap)
    }

    pub(crate) fn add(&self, entry: &ConfigEntry) -> Result<WriteOp, LdapError> {
        let dir = self.directory;
        let (dn, ndn) = dir.normalize(entry.dn.as_bytes())?;
        let attrs = partial(entry);
        let mut stored = entry_from_attributes_with(dir.schema(), dn, ndn, &attrs, true)?;
        let class = structural(dir, &stored)?;
        Stamp::identify(&mut stored, "cn=config", &class);
        Ok(WriteOp::Add(stored))
    }
}

/// The guard of the server's own writes of the store: everything allowed.
struct ServerWrite;

impl Guard for ServerWrite {
    fn requester(&self) -> &str {
        ""
    }

    fn authorize(&self, _: &Directory, _: InWrite<'_>, _: Action<'_>) -> Result<(), LdapError> {
        Ok(())
    }

    fn server_internal(&self) -> bool {
        true
    }
}

fn partial(entry: &ConfigEntry) -> Vec<PartialAttribute> {
    entry
        .attrs
        .iter()
        .map(|(name, values)| PartialAttribute {
            name: name.clone(),
            values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
        })
        .collect()
}

/// The changes between two versions of an entry (same DN): each changed attribute replaced whole.
pub(crate) fn changes(old: &ConfigEntry, new: &ConfigEntry) -> Vec<Change> {
    let mut changes = Vec::new();
    for (name, values) in &new.attrs {
        if old.get(name) != values.as_slice() {
            changes.push(Change {
                operation: ModifyOperation::Replace,
                modification: PartialAttribute {
                    name: name.clone(),
                    values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
                },
            });
        }
    }
    for (name, _) in &old.attrs {
        if new.get(name).is_empty() {
            changes.push(Change {
                operation: ModifyOperation::Replace,
                modification: PartialAttribute {
                    name: name.clone(),
                    values: Vec::new(),
                },
            });
        }
    }
    changes
}

/// The live configuration a data directory's store holds, read offline (beside a running server, as
/// LMDB allows): `config` (the file) with the stored live settings in place, and the first database's
/// root password; None when the data directory has no store yet.
pub fn read_live(config: &Config) -> Result<Option<(Config, Vec<u8>)>, StartError> {
    match live_from_store(config)? {
        None => Ok(None),
        Some(Ok(live)) => Ok(Some(live)),
        Some(Err(message)) => Err(StartError::Invalid(format!(
            "the stored cn=config cannot run: {message}"
        ))),
    }
}

/// Sets aside a store left behind by databases whose files were removed (`rm DATA/*.mdb` before an
/// import from LDIF, as OpenLDAP's scripts and many reload procedures do) when it cannot run with the
/// file: `DATA/config` becomes `DATA/config.stale-<seconds>` and the file seeds a new store. A store
/// that still runs with the file is kept (its live settings apply to the new data), and nothing is moved
/// while the first database's `data.mdb` exists. Returns where the store went.
pub fn set_aside_stale(config: &Config) -> Result<Option<std::path::PathBuf>, StartError> {
    let dir = config.data_dir.join("config");
    if !dir.join("data.mdb").exists() || config.data_dir.join("data.mdb").exists() {
        return Ok(None);
    }
    let Some(Err(message)) = live_from_store(config)? else {
        return Ok(None);
    };
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = config.data_dir.join(format!("config.stale-{seconds}"));
    std::fs::rename(&dir, &aside).map_err(|e| internal("setting aside", e))?;
    tracing::warn!(
        store = %aside.display(),
        reason = %message,
        "the stored cn=config belonged to databases whose files are gone and does not run with the \
         configuration file: set aside, the file seeds a new one"
    );
    Ok(Some(aside))
}

/// The live configuration and the first database's root password, or why the store cannot run.
type Live = Result<(Config, Vec<u8>), String>;

/// The live configuration a store holds, or why it cannot run with `config` (None without a store).
fn live_from_store(config: &Config) -> Result<Option<Live>, StartError> {
    let path = config.data_dir.join("config");
    if !path.join("data.mdb").exists() {
        return Ok(None);
    }
    let schema = Arc::new(crate::load_schema(config)?);
    let options = OpenOptions {
        path,
        initial_map_size: 16 << 20,
        durable: false,
        max_readers: 1024,
        write_map: false,
    };
    let directory = Directory::open(
        schema,
        SUFFIX,
        Vec::new(),
        options,
        canopy_directory::Pipeline::standard(),
    )?;
    let stored = read_tree(&directory)?;
    if stored.is_empty() {
        return Ok(None);
    }
    let mut base = without_deleted(config, &config.data_dir.join("config"), false)
        .map_err(|e| internal(DELETED, e))?;
    base.first_added = config.data_dir.join("config").join(FIRST_ADDED).exists();
    let aligned = super::align_databases(&base, &stored);
    // A store written before overlays changed live holds overlay entries without their options:
    // the file's overlays run until the next start stores them (as that start does).
    let baseline = read_baseline(&config.data_dir.join("config"));
    let aligned = match baseline.as_ref().is_some_and(holds_overlays) {
        true => aligned,
        false => with_overlays_of(&from_config(&base, b""), &aligned),
    };
    Ok(Some(to_config(&base, &aligned).map_err(|r| r.message)))
}

/// The live settings that differ between the file's configuration and the store's: (entry, attribute).
/// Each with what the next start does: `"live value kept"`, or `"file value applies"` for a setting the
/// file changed since the last start (`baseline.toml`).
pub fn differences(
    file: &Config,
    live: &Config,
    live_password: &[u8],
) -> Vec<(String, String, &'static str)> {
    let deleted = deleted_suffixes(file);
    let mut file = file.clone();
    file.database
        .retain(|t| !deleted.iter().any(|d| d == &t.suffix));
    let file = &file;
    let from_file = from_config(file, live_password);
    let stored = from_config(live, live_password);
    let baseline = read_baseline(&live.data_dir.join("config"));
    let mut found = Vec::new();
    for entry in &from_file {
        let Some(other) = stored.iter().find(|e| e.dn == entry.dn) else {
            continue;
        };
        for attr in super::live_attributes(&entry.dn) {
            if entry.get(attr) != other.get(attr) && !attr.eq_ignore_ascii_case("olcRootPW") {
                let edited = baseline.as_ref().is_some_and(|b| {
                    baseline_values(b, entry, attr)
                        != entry
                            .get(attr)
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                });
                let outcome = match edited {
                    true => "file value applies",
                    false => "live value kept",
                };
                found.push((entry.dn.clone(), attr.to_string(), outcome));
            }
        }
    }
    let from_file_tree = &from_file;
    for number in 1..=file.database_count().min(live.database_count()) {
        let (in_file, in_live) = (
            overlay_texts(from_file_tree, number),
            overlay_texts(&stored, number),
        );
        if in_file != in_live {
            let dn = super::database_dn(number);
            let edited = baseline.as_ref().is_some_and(|b| {
                from_file_tree
                    .iter()
                    .find(|e| e.dn == dn)
                    .is_some_and(|entry| baseline_values(b, entry, OVERLAYS_KEY) != in_file)
            });
            let outcome = match edited {
                true => "file value applies",
                false => "live value kept",
            };
            found.push((dn, "olcOverlay".to_string(), outcome));
        }
    }
    for table in live.schema.iter().skip(file.schema.len()) {
        found.push((
            format!("cn={},cn=schema,cn=config", table.name),
            "(added live)".to_string(),
            "kept",
        ));
    }
    for suffix in deleted {
        found.push((
            format!("[[database]] suffix = {suffix:?}"),
            "(deleted live)".to_string(),
            "stays deleted while the file lists it unchanged",
        ));
    }
    for number in file.database_count() + 1..=live.database_count() {
        found.push((
            super::database_dn(number),
            "(added live)".to_string(),
            "kept",
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Vec<ConfigEntry> {
        from_config(&Config::parse(text, "t").unwrap(), b"")
    }

    #[test]
    fn a_store_from_before_live_overlays_takes_the_file_s_and_a_newer_one_its_own() {
        let file =
            tree("suffix = \"dc=x\"\n[[overlay]]\nname = \"refint\"\nattributes = [\"member\"]\n");
        // An older store: the overlay entry without its options, and a baseline without overlays.
        let mut old = file.clone();
        for entry in &mut old {
            if super::super::overlay_child_of(&entry.dn).is_some() {
                entry.attrs.retain(|(n, _)| n != "olcRefintAttribute");
            }
        }
        let old_baseline: Baseline =
            toml::from_str("[\"olcdatabase={1}mdb,cn=config\"]\nolcaccess = []\n").unwrap();
        assert!(!holds_overlays(&old_baseline));
        assert_eq!(
            overlay_texts(&with_overlays_of(&file, &old), 1),
            overlay_texts(&file, 1)
        );
        // The start's merge does the same, through the missing key.
        let merged = merge_file_changes(&file, Some(&old_baseline), &old);
        assert_eq!(overlay_texts(&merged, 1), overlay_texts(&file, 1));
        // A baseline that records the file's overlays: a live change the file did not make stays.
        let dir = tempfile::tempdir().unwrap();
        write_baseline(dir.path(), &file).unwrap();
        let baseline = read_baseline(dir.path()).unwrap();
        assert!(holds_overlays(&baseline));
        let live = tree(
            "suffix = \"dc=x\"\n[[overlay]]\nname = \"refint\"\nattributes = [\"member\", \"owner\"]\n",
        );
        let merged = merge_file_changes(&file, Some(&baseline), &live);
        assert_eq!(overlay_texts(&merged, 1), overlay_texts(&live, 1));
        // The file edited since: its overlays win.
        let edited = tree("suffix = \"dc=x\"\n[[overlay]]\nname = \"memberof\"\n");
        let merged = merge_file_changes(&edited, Some(&baseline), &live);
        assert_eq!(overlay_texts(&merged, 1), overlay_texts(&edited, 1));
    }
}
