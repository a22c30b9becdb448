//! `[[database]]` tables: the databases a server holds besides the first one (slapd's `database mdb`
//! sections), each with its own suffix, LMDB environment, indexes, limits, access rules, root DN,
//! read-only flag and overlays (docs/configuration.md).
//!
//! The top-level keys (`suffix`, `root_dn`, `root_password`, `indexes`, `access`, `overlay`,
//! `read_only`, `[limits]`) are database 1, in `data_dir`; each `[[database]]` table adds one more,
//! numbered 2, 3, ... in file order (the numbers `--database N` of the offline tools take).
//!
//! This module holds the tables and their checks; `dbview` cuts a configuration into one view per
//! database.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::limits::{LimitRule, LimitValue, Limits};
use crate::overlays::OverlayConfig;

/// One `[[database]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// The naming context this database holds.
    pub suffix: String,
    /// The database's root DN (not subject to its access rules or limits); none when absent.
    #[serde(default)]
    pub root_dn: Option<String>,
    /// The root DN's password, cleartext or a `{SCHEME}` hash; only for a root DN inside the suffix
    /// (as slapd's `rootpw`). Without it the root DN binds through whichever database holds its entry.
    #[serde(default)]
    pub root_password: Option<String>,
    /// The LMDB environment's directory: relative to `data_dir`, or absolute. Default `db<N>`.
    #[serde(default)]
    pub directory: Option<PathBuf>,
    /// Attributes to index; absent: the same defaults as the first database.
    #[serde(default = "default_indexes")]
    pub indexes: Vec<IndexConfig>,
    /// Access rules (`to <what> by <who> <access>`); empty: Debian's default list.
    #[serde(default)]
    pub access: Vec<String>,
    /// This database's search limits; absent ones are the server-wide `[limits]` values.
    #[serde(default)]
    pub limits: DatabaseLimits,
    /// This database's overlays, in order.
    #[serde(default)]
    pub overlay: Vec<OverlayConfig>,
    /// Clients may read it but not write it: updates answer unwillingToPerform (slapd's `readonly on`).
    #[serde(default)]
    pub read_only: bool,
    /// For a suffix inside another database's: `true` glues it into that database's subtree and
    /// one-level searches (slapd's `subordinate`), `false` keeps it apart (its entries are not seen
    /// from the outer database, as in slapd without `subordinate`). Required for such a suffix.
    #[serde(default)]
    pub subordinate: Option<bool>,
    /// This database's syncrepl consumers (`[[database.syncrepl]]`, the keys of `[[syncrepl]]`):
    /// each feeds this database, with its cookie stored in it (docs/replication.md).
    #[serde(default)]
    pub syncrepl: Vec<crate::syncrepl::SyncreplConfig>,
    /// The referral this database answers client writes with when it has consumers (slapd's
    /// per-database `updateref`).
    #[serde(default)]
    pub updateref: Option<String>,
    /// This database takes client writes beside its consumers' changes (slapd's per-database
    /// `multiprovider on`); needs the server's `server_id`.
    #[serde(default)]
    pub multiprovider: bool,
}

/// The search limits a `[[database]]` may set for itself (slapd's per-database `sizelimit`,
/// `timelimit` and `limits`). The connection-level limits stay server-wide.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseLimits {
    pub size_limit: Option<u32>,
    pub time_limit: Option<u32>,
    pub lookthrough_limit: Option<u64>,
    pub paged_size_limit: Option<u64>,
    pub paged_total_limit: Option<LimitValue>,
    pub rules: Option<Vec<LimitRule>>,
}

impl DatabaseLimits {
    /// The server-wide limits with this database's own values in place.
    pub fn over(&self, global: &Limits) -> Limits {
        let mut limits = global.clone();
        if let Some(v) = self.size_limit {
            limits.size_limit = v;
        }
        if let Some(v) = self.time_limit {
            limits.time_limit = v;
        }
        if let Some(v) = self.lookthrough_limit {
            limits.lookthrough_limit = v;
        }
        if let Some(v) = self.paged_size_limit {
            limits.paged_size_limit = v;
        }
        if let Some(v) = self.paged_total_limit {
            limits.paged_total_limit = Some(v);
        }
        if let Some(rules) = &self.rules {
            limits.rules = rules.clone();
        }
        limits
    }
}

/// One index line: `{ attr = "cn", kinds = ["eq", "sub"] }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub attr: String,
    pub kinds: Vec<String>,
}

/// The indexes of a database that names none: canopy's defaults (docs/configuration.md).
pub fn default_indexes() -> Vec<IndexConfig> {
    let index = |attr: &str, kinds: &[&str]| IndexConfig {
        attr: attr.to_string(),
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
    };
    vec![
        index("objectClass", &["eq"]),
        index("uid", &["eq", "sub"]),
        index("cn", &["eq", "sub"]),
        index("sn", &["eq", "sub"]),
        index("mail", &["eq", "sub"]),
        index("member", &["eq"]),
        index("memberUid", &["eq"]),
        index("uidNumber", &["eq"]),
        index("gidNumber", &["eq"]),
        index("entryUUID", &["eq"]),
        index("entryCSN", &["eq"]),
    ]
}

/// An index line's kinds.
pub(crate) fn check_index(index: &IndexConfig) -> Result<(), String> {
    for kind in &index.kinds {
        if !matches!(kind.as_str(), "eq" | "pres" | "sub" | "ord" | "approx") {
            return Err(format!(
                "index on {}: unknown kind {kind:?} (expected eq, pres, sub, ord or approx)",
                index.attr
            ));
        }
    }
    Ok(())
}

/// A DN's RDNs, lower-cased, outermost last: the comparison the configuration check can make before
/// the schema is loaded (suffixes are compared again, normalized by the schema, when databases open).
pub fn rough_rdns(dn: &str) -> Result<Vec<String>, String> {
    let parsed = canopy_proto::Dn::parse(dn.as_bytes()).map_err(|e| e.to_string())?;
    Ok(parsed
        .rdns
        .iter()
        .map(|rdn| {
            let one = canopy_proto::Dn {
                rdns: vec![rdn.clone()],
            };
            one.to_string().to_lowercase()
        })
        .collect())
}

/// Whether `inner` lies strictly inside `outer` (both as `rough_rdns` gives them).
pub fn strictly_inside(inner: &[String], outer: &[String]) -> bool {
    inner.len() > outer.len() && inner.ends_with(outer)
}

/// A problem with `[[database]]` table `index` (0-based among the tables), or with the first database
/// when None.
pub struct DatabaseError {
    pub table: Option<usize>,
    pub message: String,
}

/// The line of the `index`-th `[[database]]` header of `text` (1-based), 0 when not found.
pub fn table_line(text: &str, index: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let t = line.trim();
            t.starts_with("[[database]]") || t.replace(' ', "").starts_with("[[database]]")
        })
        .nth(index)
        .map_or(0, |(n, _)| n + 1)
}

/// Checks every `[[database]]` table and how the suffixes of all databases fit together: no two
/// alike, a suffix inside another only with `subordinate` set, `subordinate = true` only inside
/// another, directories distinct, a root password only for a root DN inside its suffix.
pub fn check(
    first_suffix: &str,
    first_directory: &Path,
    data_dir: &Path,
    tables: &[DatabaseConfig],
) -> Result<(), DatabaseError> {
    let at = |table: Option<usize>, message: String| DatabaseError { table, message };
    let first =
        rough_rdns(first_suffix).map_err(|e| at(None, format!("suffix {first_suffix:?}: {e}")))?;
    let mut suffixes = vec![first];
    for (i, db) in tables.iter().enumerate() {
        let table = Some(i);
        let rdns = rough_rdns(&db.suffix)
            .map_err(|e| at(table, format!("suffix {:?}: {e}", db.suffix)))?;
        if rdns.is_empty() {
            return Err(at(
                table,
                "suffix: empty: a database with the empty suffix holds every name the others do \
                 not, so it must be the top-level (first) one"
                    .into(),
            ));
        }
        if let Some(root) = db.root_dn.as_deref().filter(|r| !r.is_empty()) {
            let root_rdns =
                rough_rdns(root).map_err(|e| at(table, format!("root_dn {root:?}: {e}")))?;
            if db.root_password.is_some() && !root_rdns.ends_with(&rdns) {
                return Err(at(
                    table,
                    format!(
                        "root_password: root_dn {root:?} is not inside suffix {:?} (as slapd's rootpw)",
                        db.suffix
                    ),
                ));
            }
        } else if db.root_password.is_some() {
            return Err(at(table, "root_password without root_dn".into()));
        }
        for index in &db.indexes {
            check_index(index).map_err(|e| at(table, e))?;
        }
        crate::overlays::check(&db.overlay).map_err(|e| at(table, e))?;
        if let Some(rules) = &db.limits.rules {
            crate::limits::check_rules(rules).map_err(|e| at(table, e))?;
        }
        if let Some(dir) = &db.directory {
            check_directory(dir).map_err(|e| at(table, e))?;
        }
        check_consumers(&db.syncrepl, db.updateref.as_deref(), &db.suffix)
            .map_err(|e| at(table, e))?;
        suffixes.push(rdns);
    }
    let dirs: Vec<PathBuf> = std::iter::once(first_directory.to_path_buf())
        .chain((2..=tables.len() + 1).map(|n| directory_of(data_dir, n, tables)))
        .collect();
    for (i, rdns) in suffixes.iter().enumerate() {
        let table = i.checked_sub(1);
        let name = |n: usize| match n {
            0 => format!("database 1 (suffix {first_suffix:?})"),
            _ => format!("database {} (suffix {:?})", n + 1, tables[n - 1].suffix),
        };
        if let Some(j) = (0..i).find(|&j| suffixes[j] == *rdns) {
            return Err(at(table, format!("suffix: the same as {}", name(j))));
        }
        if let Some(j) = (0..i).find(|&j| dirs[j] == dirs[i]) {
            return Err(at(
                table,
                format!("directory {}: also {}'s", dirs[i].display(), name(j)),
            ));
        }
        let outer = (0..suffixes.len())
            .filter(|&j| strictly_inside(rdns, &suffixes[j]))
            .max_by_key(|&j| suffixes[j].len());
        let subordinate = i.checked_sub(1).and_then(|k| tables[k].subordinate);
        match (outer, subordinate) {
            (Some(j), None) => {
                return Err(at(
                    table,
                    format!(
                        "suffix lies inside {}: set `subordinate = true` to glue it into that database's \
                         searches (slapd's subordinate), or `subordinate = false` to keep it apart{}",
                        name(j),
                        if i == 0 { " (list the outer database first, as the top-level one)" } else { "" }
                    ),
                ))
            }
            (None, Some(true)) => {
                return Err(at(
                    table,
                    "subordinate = true: no other database's suffix contains this one".into(),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The consumer tables of one database (suffix `suffix`) and its `updateref`: each table as
/// `syncrepl::config::check` checks it, and, as slapd, its `searchbase` inside the suffix (compared
/// without the schema here; a session compares it normalized again).
pub fn check_consumers(
    tables: &[crate::syncrepl::SyncreplConfig],
    updateref: Option<&str>,
    suffix: &str,
) -> Result<(), String> {
    crate::syncrepl::config::check(tables, updateref, suffix)?;
    let Ok(own) = rough_rdns(suffix) else {
        return Ok(());
    };
    for table in tables {
        let Some(base) = &table.searchbase else {
            continue;
        };
        if !rough_rdns(base).is_ok_and(|b| b.ends_with(&own)) {
            return Err(format!(
                "syncrepl rid={}: searchbase {base:?} is not within the database's suffix {suffix:?}",
                table.rid
            ));
        }
    }
    Ok(())
}

/// A database's `directory` (a `[[database]]` table's, or the first database's): not the data
/// directory itself, nor its `monitor/`, `tls/` or `config/` (the cn=config store).
pub fn check_directory(dir: &Path) -> Result<(), String> {
    let name = dir.to_string_lossy();
    if dir.as_os_str().is_empty()
        || dir == Path::new(".")
        || ["monitor", "tls", "config"].contains(&name.trim_end_matches('/'))
    {
        return Err(format!(
            "directory {name:?}: the data directory and its monitor/, tls/ and config/ are not \
             available to a database"
        ));
    }
    Ok(())
}

/// The directory of database `number`'s LMDB environment: `data_dir` for the first, else the table's
/// `directory` (relative to `data_dir`) or `data_dir/db<N>`.
pub fn directory_of(data_dir: &Path, number: usize, tables: &[DatabaseConfig]) -> PathBuf {
    let configured = number
        .checked_sub(2)
        .and_then(|i| tables.get(i))
        .and_then(|db| db.directory.clone());
    match configured {
        None if number <= 1 => data_dir.to_path_buf(),
        None => data_dir.join(format!("db{number}")),
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => data_dir.join(dir),
    }
}
