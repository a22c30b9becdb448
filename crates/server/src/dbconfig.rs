//! `[[database]]` tables: the databases a server holds besides the first one (slapd's `database mdb`
//! sections), each with its own suffix, LMDB environment, indexes, limits, access rules, root DN,
//! read-only flag and overlays (docs/configuration.md).
//!
//! The top-level keys (`suffix`, `root_dn`, `root_password`, `indexes`, `access`, `overlay`,
//! `read_only`, `[limits]`) are database 1, in `data_dir`; each `[[database]]` table adds one more,
//! numbered 2, 3, ... in file order (the numbers `--database N` of the offline tools take).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::{Config, IndexConfig};
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
    #[serde(default = "crate::config::default_indexes")]
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

/// What routing needs to know of a database besides its view: whether it is glued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subordinate {
    /// A naming context of its own (the first database always is).
    #[default]
    No,
    /// Inside another database's suffix, glued into its searches.
    Glued,
    /// Inside another database's suffix, kept apart.
    Apart,
}

impl Config {
    /// How many data databases the configuration holds: the first plus one per `[[database]]`.
    pub fn database_count(&self) -> usize {
        self.database.len() + 1
    }

    /// Database `number` (1-based: 1 is the top-level keys, as slapadd's `-n 1` is the first data
    /// database) as a configuration of its own: its suffix, root DN, indexes, access rules, limits and
    /// overlays in the top-level keys and its directory as `data_dir`. Offline tools and the server open
    /// a database through this view. None when there is no such database.
    pub fn database_view(&self, number: usize) -> Option<Config> {
        if number == 1 {
            return Some(self.clone());
        }
        let db = self.database.get(number.checked_sub(2)?)?;
        let mut view = self.clone();
        view.suffix = db.suffix.clone();
        view.root_dn = db.root_dn.clone().unwrap_or_default();
        view.root_password = db.root_password.clone();
        view.indexes = db.indexes.clone();
        view.access = db.access.clone();
        view.overlay = db.overlay.clone();
        view.limits = db.limits.over(&self.limits);
        view.read_only = db.read_only;
        view.data_dir = self.database_directory(number);
        view.database = Vec::new();
        view.whole = Some(std::sync::Arc::new(self.clone()));
        Some(view)
    }

    /// The directory of database `number`'s LMDB environment.
    pub fn database_directory(&self, number: usize) -> PathBuf {
        let configured = number
            .checked_sub(2)
            .and_then(|i| self.database.get(i))
            .and_then(|db| db.directory.clone());
        match configured {
            None if number <= 1 => self.data_dir.clone(),
            None => self.data_dir.join(format!("db{number}")),
            Some(dir) if dir.is_absolute() => dir,
            Some(dir) => self.data_dir.join(dir),
        }
    }

    /// Whether database `number` is glued into or kept apart from an outer one.
    pub fn subordinate(&self, number: usize) -> Subordinate {
        let db = number.checked_sub(2).and_then(|i| self.database.get(i));
        match db.and_then(|db| db.subordinate) {
            Some(true) => Subordinate::Glued,
            Some(false) => Subordinate::Apart,
            None => Subordinate::No,
        }
    }

    /// The number of the database whose suffix is `suffix` (compared as `check` compares them), for
    /// the offline tools' `-b SUFFIX`.
    pub fn database_by_suffix(&self, suffix: &str) -> Option<usize> {
        let wanted = rough_rdns(suffix).ok()?;
        (1..=self.database_count()).find(|&n| {
            let own = match n {
                1 => &self.suffix,
                _ => &self.database[n - 2].suffix,
            };
            rough_rdns(own).is_ok_and(|r| r == wanted)
        })
    }

    /// The suffixes of every database, by number (index 0 is database 1), of the whole configuration.
    fn all_suffixes(&self) -> Vec<String> {
        let whole = self.whole.as_deref().unwrap_or(self);
        std::iter::once(whole.suffix.clone())
            .chain(whole.database.iter().map(|db| db.suffix.clone()))
            .collect()
    }

    /// The suffixes of the other databases inside this (view's) database's suffix: entries there
    /// belong to them, not to this one.
    pub fn suffixes_inside(&self) -> Vec<String> {
        let Ok(own) = rough_rdns(&self.suffix) else {
            return Vec::new();
        };
        self.all_suffixes()
            .into_iter()
            .filter(|s| rough_rdns(s).is_ok_and(|r| strictly_inside(&r, &own)))
            .collect()
    }

    /// The views of the databases glued into this (view's) database, directly or through other glued
    /// ones, outer ones first: what slapcat also writes for a superior unless told `-g`.
    pub fn glued_views(&self) -> Vec<Config> {
        let whole = self.whole.as_deref().unwrap_or(self);
        let suffixes: Vec<Vec<String>> = whole
            .all_suffixes()
            .iter()
            .map(|s| rough_rdns(s).unwrap_or_default())
            .collect();
        let Ok(own) = rough_rdns(&self.suffix) else {
            return Vec::new();
        };
        let Some(me) = suffixes.iter().position(|s| *s == own) else {
            return Vec::new();
        };
        // The database whose suffix most closely contains database `i`'s.
        let superior = |i: usize| {
            (0..suffixes.len())
                .filter(|&j| strictly_inside(&suffixes[i], &suffixes[j]))
                .max_by_key(|&j| suffixes[j].len())
        };
        let mut glued: Vec<usize> = (0..suffixes.len())
            .filter(|&i| {
                let mut current = i;
                for _ in 0..suffixes.len() {
                    if whole.subordinate(current + 1) != Subordinate::Glued {
                        return false;
                    }
                    match superior(current) {
                        Some(j) if j == me => return true,
                        Some(j) => current = j,
                        None => return false,
                    }
                }
                false
            })
            .collect();
        glued.sort_by_key(|&i| suffixes[i].len());
        glued
            .into_iter()
            .filter_map(|i| whole.database_view(i + 1))
            .collect()
    }

    /// The names of database `number`'s overlays, in order (none for a number past the last).
    pub fn overlay_names(&self, number: usize) -> Vec<String> {
        let overlays = match number {
            1 => &self.overlay,
            n => match n.checked_sub(2).and_then(|i| self.database.get(i)) {
                Some(db) => &db.overlay,
                None => return Vec::new(),
            },
        };
        overlays.iter().map(|o| o.name.clone()).collect()
    }

    /// Every overlay of every database, for the schema they bring (one schema for all databases).
    pub fn all_overlays(&self) -> Vec<OverlayConfig> {
        let whole = self.whole.as_deref().unwrap_or(self);
        let mut all = whole.overlay.clone();
        for db in &whole.database {
            all.extend(db.overlay.iter().cloned());
        }
        all
    }
}

/// A DN's RDNs, lower-cased, outermost last: the comparison the configuration check can make before
/// the schema is loaded (suffixes are compared again, normalized by the schema, when databases open).
fn rough_rdns(dn: &str) -> Result<Vec<String>, String> {
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
fn strictly_inside(inner: &[String], outer: &[String]) -> bool {
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
pub fn check(config: &Config) -> Result<(), DatabaseError> {
    let at = |table: Option<usize>, message: String| DatabaseError { table, message };
    let first = rough_rdns(&config.suffix)
        .map_err(|e| at(None, format!("suffix {:?}: {e}", config.suffix)))?;
    let mut suffixes = vec![first];
    for (i, db) in config.database.iter().enumerate() {
        let table = Some(i);
        let rdns = rough_rdns(&db.suffix)
            .map_err(|e| at(table, format!("suffix {:?}: {e}", db.suffix)))?;
        if rdns.is_empty() {
            return Err(at(
                table,
                "suffix: empty (the root DSE is not a database)".into(),
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
            crate::config::check_index(index).map_err(|e| at(table, e))?;
        }
        crate::overlays::check(&db.overlay).map_err(|e| at(table, e))?;
        if let Some(rules) = &db.limits.rules {
            crate::limits::check_rules(rules).map_err(|e| at(table, e))?;
        }
        if let Some(dir) = &db.directory {
            let name = dir.to_string_lossy();
            if dir.as_os_str().is_empty()
                || dir == Path::new(".")
                || ["monitor", "tls"].contains(&name.trim_end_matches('/'))
            {
                return Err(at(
                    table,
                    format!("directory {name:?}: the data directory and its monitor/ and tls/ are not available to a database"),
                ));
            }
        }
        suffixes.push(rdns);
    }
    let dirs: Vec<PathBuf> = (1..=config.database_count())
        .map(|n| config.database_directory(n))
        .collect();
    for (i, rdns) in suffixes.iter().enumerate() {
        let table = i.checked_sub(1);
        let name = |n: usize| match n {
            0 => format!("database 1 (suffix {:?})", config.suffix),
            _ => format!(
                "database {} (suffix {:?})",
                n + 1,
                config.database[n - 1].suffix
            ),
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
        let subordinate = i
            .checked_sub(1)
            .and_then(|k| config.database[k].subordinate);
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

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "data_dir = \"/d\"\n\
        suffix = \"dc=example,dc=com\"\n\
        \n\
        [[database]]\n\
        suffix = \"dc=other,dc=org\"\n\
        root_dn = \"cn=boss,dc=other,dc=org\"\n\
        root_password = \"pw\"\n\
        access = [\"to * by * read\"]\n\
        read_only = true\n\
        [database.limits]\n\
        size_limit = 7\n\
        \n\
        [[database]]\n\
        suffix = \"ou=Sub,dc=Example,dc=com\"\n\
        subordinate = true\n\
        directory = \"sub\"\n";

    fn refused(text: &str, line: usize, want: &str) {
        let err = Config::parse(text, "c.toml").unwrap_err().to_string();
        assert!(err.starts_with(&format!("c.toml:{line}:")), "{err}");
        assert!(err.contains(want), "{err}");
    }

    #[test]
    fn tables_are_databases_after_the_first() {
        let c = Config::parse(TWO, "t").unwrap();
        assert_eq!(c.database_count(), 3);
        let first = c.database_view(1).unwrap();
        assert_eq!(first.suffix, "dc=example,dc=com");
        assert_eq!(first.data_dir, PathBuf::from("/d"));
        let other = c.database_view(2).unwrap();
        assert_eq!(other.suffix, "dc=other,dc=org");
        assert_eq!(other.root_dn, "cn=boss,dc=other,dc=org");
        assert_eq!(other.root_password.as_deref(), Some("pw"));
        assert_eq!(other.data_dir, PathBuf::from("/d/db2"));
        assert!(other.read_only && other.database.is_empty());
        assert_eq!(other.limits.size_limit, 7);
        assert_eq!(other.limits.time_limit, c.limits.time_limit);
        assert_eq!(other.indexes.len(), c.indexes.len());
        let sub = c.database_view(3).unwrap();
        assert_eq!(sub.data_dir, PathBuf::from("/d/sub"));
        assert_eq!(sub.root_dn, "");
        assert!(c.database_view(4).is_none() && c.database_view(0).is_none());
        assert_eq!(c.subordinate(3), Subordinate::Glued);
        assert_eq!(c.subordinate(2), Subordinate::No);
        assert_eq!(c.database_by_suffix("DC=Other, dc=org"), Some(2));
        assert_eq!(c.database_by_suffix("dc=nowhere"), None);
        assert_eq!(c.suffixes_inside(), vec!["ou=Sub,dc=Example,dc=com"]);
        let glued: Vec<String> = first.glued_views().into_iter().map(|v| v.suffix).collect();
        assert_eq!(glued, vec!["ou=Sub,dc=Example,dc=com"]);
        assert!(other.glued_views().is_empty());
    }

    #[test]
    fn a_configuration_without_tables_is_one_database() {
        let c = Config::parse("suffix = \"dc=x\"\n", "t").unwrap();
        assert_eq!(c.database_count(), 1);
        assert!(c.glued_views().is_empty() && c.suffixes_inside().is_empty());
    }

    #[test]
    fn suffixes_that_clash_are_refused_at_their_table() {
        let base = "suffix = \"dc=example,dc=com\"\n";
        refused(
            &format!("{base}[[database]]\nsuffix = \"DC=example, dc=com\"\n"),
            2,
            "the same as database 1",
        );
        refused(
            &format!("{base}[[database]]\nsuffix = \"ou=x,dc=example,dc=com\"\n"),
            2,
            "subordinate = true",
        );
        refused(
            &format!("{base}\n[[database]]\nsuffix = \"dc=other\"\nsubordinate = true\n"),
            3,
            "no other database's suffix contains",
        );
        assert!(Config::parse(
            &format!(
                "{base}[[database]]\nsuffix = \"ou=x,dc=example,dc=com\"\nsubordinate = false\n"
            ),
            "t"
        )
        .is_ok());
        // The first database inside another: it has no `subordinate` key, so the outer one goes first.
        let err = Config::parse(
            "suffix = \"ou=x,dc=e\"\n[[database]]\nsuffix = \"dc=e\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("list the outer database first"), "{err}");
    }

    #[test]
    fn table_settings_are_checked() {
        let base = "suffix = \"dc=example,dc=com\"\n";
        refused(
            &format!("{base}[[database]]\nsuffix = \"dc=o\"\nroot_dn = \"cn=a,dc=example,dc=com\"\nroot_password = \"x\"\n"),
            2,
            "not inside suffix",
        );
        refused(
            &format!("{base}[[database]]\nsuffix = \"dc=o\"\nroot_password = \"x\"\n"),
            2,
            "without root_dn",
        );
        refused(
            &format!("{base}[[database]]\nsuffix = \"dc=o\"\ndirectory = \"monitor\"\n"),
            2,
            "monitor",
        );
        refused(
            &format!("{base}[[database]]\nsuffix = \"dc=o\"\ndirectory = \"a\"\n[[database]]\nsuffix = \"dc=p\"\ndirectory = \"a\"\n"),
            5,
            "also database 2",
        );
        refused(
            &format!("{base}[[database]]\nsuffix = \"dc=o\"\nindexes = [{{ attr = \"cn\", kinds = [\"fast\"] }}]\n"),
            2,
            "unknown kind",
        );
        refused(
            &format!(
                "{base}[[database]]\nsuffix = \"dc=o\"\n[[database.overlay]]\nname = \"nosuch\"\n"
            ),
            2,
            "nosuch",
        );
        refused(
            &format!("{base}[[database]]\nsuffix = \"dc=o\"\nbogus = 1\n"),
            4,
            "bogus",
        );
        refused(
            &format!(
                "{base}[[database]]\nsuffix = \"dc=o\"\n[database.limits]\nmax_connections = 1\n"
            ),
            5,
            "max_connections",
        );
    }
}
