//! One configuration cut into databases: the view of each database as a configuration of its own
//! (`Config::database_view`), which the server and the offline tools open, and the questions about
//! how the databases fit together (which are glued into which, which lie inside which).

use std::path::PathBuf;

use crate::config::Config;
use crate::databases::Subordinate;
use crate::dbconfig::{rough_rdns, strictly_inside};
use crate::overlays::OverlayConfig;

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
            let mut view = self.clone();
            view.data_dir = self.database_directory(1);
            return Some(view);
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
        view.syncrepl = db.syncrepl.clone();
        view.updateref = db.updateref.clone();
        view.multiprovider = db.multiprovider;
        view.data_dir = self.database_directory(number);
        view.database = Vec::new();
        view.whole = Some(std::sync::Arc::new(self.clone()));
        Some(view)
    }

    /// The directory of database `number`'s LMDB environment.
    pub fn database_directory(&self, number: usize) -> PathBuf {
        if let (1, Some(dir)) = (number, &self.directory) {
            return self.data_dir.join(dir);
        }
        crate::dbconfig::directory_of(&self.data_dir, number, &self.database)
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

    /// The number of the database that holds `dn` (the longest suffix containing it), 1 when none
    /// does or the DN does not parse: what an offline question about one entry opens.
    pub fn database_holding(&self, dn: &str) -> usize {
        let Ok(target) = rough_rdns(dn) else {
            return 1;
        };
        self.all_suffixes()
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, rough_rdns(s).ok()?)))
            .filter(|(_, s)| target.ends_with(s))
            .max_by_key(|(_, s)| s.len())
            .map_or(1, |(i, _)| i + 1)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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
        assert_eq!(c.database_holding("cn=x,ou=sub,dc=example,dc=com"), 3);
        assert_eq!(c.database_holding("cn=x,dc=example,dc=com"), 1);
        assert_eq!(c.database_holding("cn=boss,dc=other,dc=org"), 2);
        assert_eq!(c.database_holding("dc=nowhere"), 1);
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
