//! The syncrepl consumers of a configuration: each database's tables (`[[syncrepl]]` for the first,
//! `[[database.syncrepl]]` for the others) compiled into the handles the server starts, each bound
//! to its own database, and the databases whose multi-provider conflict records age out.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::syncrepl::Handle;

/// Compiles the consumers of every database of `config`: the first database's `[[syncrepl]]` tables
/// (with its `updateref`), then each `[[database]]`'s `[[database.syncrepl]]` tables, in database
/// order. Each feeds its own database and keeps its cookie there.
pub fn handles(config: &Config) -> Result<Vec<Arc<Handle>>, String> {
    let mut all = Vec::new();
    for number in 1..=config.database_count() {
        let Some(view) = config.database_view(number) else {
            continue;
        };
        let at = |e: String| match number {
            1 => e,
            n => format!("database {n}: {e}"),
        };
        crate::dbconfig::check_consumers(&view.syncrepl, view.updateref.as_deref(), &view.suffix)
            .map_err(at)?;
        let elsewhere = view.suffixes_inside();
        for table in &view.syncrepl {
            let consumer = table.compile(&view.suffix).map_err(at)?;
            all.push(Arc::new(Handle::of(
                consumer,
                number,
                view.suffix.clone(),
                view.data_dir.clone(),
                elsewhere.clone(),
            )));
        }
    }
    Ok(all)
}

/// The directories of the databases of `config` that are multi-provider (`multiprovider = true`):
/// those whose conflict records `tombstone_purge` ages out.
pub fn multiprovider_directories(config: &Config) -> Vec<PathBuf> {
    (1..=config.database_count())
        .filter_map(|n| config.database_view(n))
        .filter(|view| view.multiprovider)
        .map(|view| view.data_dir)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<Config, String> {
        Config::parse(text, "t").map_err(|e| e.to_string())
    }

    /// Each database's tables become consumers of that database, with the suffixes of the databases
    /// inside it; tables are checked per database (a rid twice in one database is refused, in two
    /// databases allowed, as slapd), and a multi-provider database anywhere needs a server ID.
    #[test]
    fn every_database_has_its_own_consumers() {
        let text = "suffix = \"dc=x\"\n\
                    [[syncrepl]]\nrid = 1\nprovider = \"ldap://127.0.0.1:9\"\n\
                    [[database]]\nsuffix = \"ou=sub,dc=x\"\nsubordinate = true\n\
                    [[database.syncrepl]]\nrid = 1\nprovider = \"ldap://127.0.0.1:8\"\n\
                    [[database]]\nsuffix = \"dc=z\"\n";
        let c = config(text).unwrap();
        let all = handles(&c).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].database, all[0].suffix.as_str()), (1, "dc=x"));
        assert_eq!(all[0].elsewhere, vec!["ou=sub,dc=x".to_string()]);
        assert_eq!(all[0].directory, c.database_directory(1));
        assert_eq!(
            (all[1].database, all[1].suffix.as_str()),
            (2, "ou=sub,dc=x")
        );
        assert!(all[1].elsewhere.is_empty());
        assert_eq!(all[1].directory, c.database_directory(2));
        // The second database's consumer takes its suffix as the default search base.
        assert_eq!(all[1].consumer.searchbase, "ou=sub,dc=x");
        let view = c.database_view(3).unwrap();
        assert!(view.syncrepl.is_empty() && view.updateref.is_none());

        let twice = text.replace(
            "[[database]]\nsuffix = \"dc=z\"",
            "[[database.syncrepl]]\nrid = 1\nprovider = \"ldap://127.0.0.1:7\"",
        );
        assert!(config(&twice).unwrap_err().contains("appears twice"));
        let bad = text.replace("ldap://127.0.0.1:8", "http://x");
        assert!(config(&bad).unwrap_err().contains("provider"));
        let outside = text.replace(
            "provider = \"ldap://127.0.0.1:8\"\n",
            "provider = \"ldap://127.0.0.1:8\"\nsearchbase = \"dc=x\"\n",
        );
        assert!(config(&outside).unwrap_err().contains("not within"));
        let multi = text.replace(
            "subordinate = true\n",
            "subordinate = true\nmultiprovider = true\n",
        );
        assert!(config(&multi).unwrap_err().contains("server_id"));
        let c = config(&format!("server_id = 2\n{multi}")).unwrap();
        assert_eq!(multiprovider_directories(&c), vec![c.database_directory(2)]);
        assert!(c.database_view(2).unwrap().multiprovider && !c.multiprovider);
    }
}
