//! The deletes of cn=config: what a delete of an entry removes (a schema child, a data database, an
//! overlay), and the siblings after it moved up a position.

use canopy_proto::ResultCode;

use crate::config::Config;
use crate::config_tree::{ConfigEntry, Refusal};

use super::names::normalize_dn;

/// A delete of an entry of cn=config: the tree without it (`committed`), the tree once the siblings
/// after it moved up a position (`tree`), and the number of the data database it removes.
pub(super) struct Deletion {
    pub(super) committed: Vec<ConfigEntry>,
    pub(super) tree: Vec<ConfigEntry>,
    pub(super) database: Option<usize>,
    /// The `[[database]]` table of a database of the file the delete removes.
    pub(super) file_db: Option<crate::config::DatabaseConfig>,
}

/// What a delete of `dn` leaves. Deletes a schema child or a data database added live; the file's
/// schemas and databases, the overlays, cn=config, cn=schema, the frontend and the config database
/// are refused.
pub(super) fn deleted_tree(
    entries: &[ConfigEntry],
    dn: &str,
    base: &Config,
) -> Result<Deletion, Refusal> {
    let target = normalize_dn(dn);
    let Some(position) = entries.iter().position(|e| normalize_dn(&e.dn) == target) else {
        return Err(Refusal::new(ResultCode::NoSuchObject, ""));
    };
    let unwilling = |message: String| Err(Refusal::new(ResultCode::UnwillingToPerform, message));
    if target == normalize_dn(crate::config_tree::FRONTEND_DN)
        || target == normalize_dn(crate::config_tree::CONFIG_DB_DN)
    {
        return unwilling("Cannot delete config or frontend database".to_string());
    }
    if target == crate::config_tree::SUFFIX || target == crate::config_tree::SCHEMA_DN {
        return unwilling(format!("{dn}: cannot be deleted"));
    }
    if crate::config_tree::overlay_child_of(dn).is_some() {
        let mut committed = entries.to_vec();
        committed.remove(position);
        let tree = crate::config_tree::without_overlay(entries, dn)?;
        return Ok(Deletion {
            committed,
            tree,
            database: None,
            file_db: None,
        });
    }
    if crate::config_tree::module_of(dn).is_some() {
        return unwilling(format!(
            "{dn}: a module stays loaded until the server stops (as in slapd); remove the \
             olcModuleLoad values that are not needed"
        ));
    }
    let mut committed = entries.to_vec();
    committed.remove(position);
    if let Some((n, _)) = crate::config_tree::schema_child_of(dn) {
        if n < crate::config_tree::file_schema_count(base) {
            return unwilling(format!(
                "{dn}: this schema is defined in the configuration file (schema_files or \
                 [[schema]]); remove it there and restart"
            ));
        }
        let tree = committed
            .iter()
            .map(|e| match crate::config_tree::schema_child_of(&e.dn) {
                Some((m, name)) if m > n => renamed_child(e, m - 1, &name),
                _ => e.clone(),
            })
            .collect();
        return Ok(Deletion {
            committed,
            tree,
            database: None,
            file_db: None,
        });
    }
    let number = target
        .strip_prefix("olcdatabase={")
        .and_then(|rest| rest.strip_suffix("}mdb,cn=config"))
        .and_then(|n| n.parse::<usize>().ok());
    let Some(number) = number else {
        return unwilling(format!(
            "{dn}: only a schema added live, a database or an overlay can be deleted"
        ));
    };
    if number == 1 {
        return unwilling(format!(
            "{dn}: the first database (the configuration file's top-level suffix) cannot be \
             deleted: it holds the server-wide settings (root DN, limits, syncrepl); change the \
             file and restart"
        ));
    }
    let file_db = match number <= base.database_count() {
        true => base.database.get(number - 2).cloned(),
        false => None,
    };
    if file_db.as_ref().is_some_and(|db| !db.syncrepl.is_empty()) {
        // Its consumers' sessions hold the database; olcSyncrepl does not change live.
        return unwilling(format!(
            "{dn}: the database has syncrepl consumers ([[database.syncrepl]]), which do not \
             change live: remove them from the configuration file and restart first"
        ));
    }
    if entries
        .iter()
        .any(|e| normalize_dn(&e.dn).ends_with(&format!(",{target}")))
    {
        return Err(Refusal::new(
            ResultCode::NotAllowedOnNonLeaf,
            format!("{dn}: delete its olcOverlay children first"),
        ));
    }
    // The databases after it (and their overlay children) move up one number.
    let tree = committed
        .iter()
        .map(|e| {
            let of = crate::config_tree::database_number(&e.dn)
                .or_else(|| crate::config_tree::database_child_of(&e.dn));
            match of {
                Some(m) if m > number => crate::config_tree::moved_to_database(e, m - 1),
                _ => e.clone(),
            }
        })
        .collect();
    Ok(Deletion {
        committed,
        tree,
        database: Some(number),
        file_db,
    })
}

/// A schema child moved to position `number`.
fn renamed_child(entry: &ConfigEntry, number: usize, name: &str) -> ConfigEntry {
    let mut moved = entry.clone();
    moved.dn = format!("cn={{{number}}}{name},{}", crate::config_tree::SCHEMA_DN);
    for (attr, values) in &mut moved.attrs {
        if attr.eq_ignore_ascii_case("cn") {
            *values = vec![format!("{{{number}}}{name}")];
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database of the file with consumers of its own is not deleted live (its sessions hold it);
    /// the same database without them is.
    #[test]
    fn a_database_with_consumers_stays() {
        let text = "suffix = \"dc=x\"\n[[database]]\nsuffix = \"dc=y\"\n\
                    [[database.syncrepl]]\nrid = 1\nprovider = \"ldap://127.0.0.1:9\"\n";
        let with = Config::parse(text, "t").unwrap();
        let tree = crate::config_tree::from_config(&with, b"");
        let dn = crate::config_tree::database_dn(2);
        let refused = deleted_tree(&tree, &dn, &with).err().unwrap();
        assert_eq!(refused.code, ResultCode::UnwillingToPerform);
        assert!(refused.message.contains("syncrepl"), "{}", refused.message);
        let without =
            Config::parse("suffix = \"dc=x\"\n[[database]]\nsuffix = \"dc=y\"\n", "t").unwrap();
        let tree = crate::config_tree::from_config(&without, b"");
        assert!(deleted_tree(&tree, &dn, &without).is_ok());
    }
}
