//! Numbering of the data databases in the tree: an entry moved, and the numbers a crash left set right.

use super::{database_child_of, database_dn, database_number, same_dn_text, ConfigEntry};
use crate::config::Config;

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
