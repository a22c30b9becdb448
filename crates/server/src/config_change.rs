//! A client's write of cn=config (the tree is `config_tree`, docs/design/config-tree.md): apply it to a copy of the tree, build the whole new running
//! configuration from that copy (any failure refuses the write, naming the attribute), refuse a change
//! that leaves nobody able to change cn=config, store it durably through the configuration database
//! (its access rules decide first), then swap the new snapshot in (`state::Live`). A modify, an add (a
//! database, a schema under cn=schema) or a delete (a schema element or child, a database added live);
//! a schema change re-makes every database under the new schema in the next snapshot.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::{OpError, WriteOp};
use canopy_proto::{Change, Control, ModifyOperation, ResultCode};

use crate::access::Who;
use crate::config::Config;
use crate::config_tree::{
    live_attributes, numbered, split_ordinal, to_config, ConfigEntry, Refusal,
};
use crate::databases::{Database, Databases, WriteControls};
use crate::state::{ServerState, State};

/// Attributes whose values carry `{N}` positions (X-ORDERED 'VALUES'), with the overlays' and
/// modules' (`config_tree::OVERLAY_ORDERED`).
const ORDERED: [&str; 6] = [
    "olcAccess",
    "olcLimits",
    "olcSyncrepl",
    "olcObjectIdentifier",
    "olcAttributeTypes",
    "olcObjectClasses",
];

fn is_ordered(name: &str) -> bool {
    ORDERED
        .iter()
        .chain(crate::config_tree::OVERLAY_ORDERED.iter())
        .any(|o| o.eq_ignore_ascii_case(name))
}

fn refusal_error(refusal: Refusal) -> LdapError {
    LdapError::new(refusal.code, refusal.message)
}

/// cn=config's backend: a client's write goes through [`write`].
pub struct ConfigBackend;

impl crate::state::Backend for ConfigBackend {
    fn update<'a>(
        &'a self,
        state: &'a State,
        dir: &'a Database,
        op: WriteOp,
        who: &'a Who,
        ctl: &'a WriteControls,
    ) -> crate::state::Pending<'a, Result<Vec<Control>, OpError>> {
        Box::pin(write(state, dir, who, op, ctl))
    }
}

/// Runs a client's write of the configuration database `dir`.
pub async fn write(
    state: &State,
    dir: &Database,
    who: &Who,
    op: WriteOp,
    ctl: &WriteControls,
) -> Result<Vec<Control>, OpError> {
    let Some(tree) = &state.config_tree else {
        return Err(LdapError::new(ResultCode::UnwillingToPerform, "no cn=config here").into());
    };
    let mut entries = tree.entries.lock().await;
    // The snapshot as it is now: a change that raced this one has been swapped in meanwhile.
    let state = state.current();
    let planned = plan(&state, tree, &entries, dir, who, ctl, &op).await?;
    let (stored_op, verdict) = match planned {
        Ok(planned) => (planned.stored.clone(), Ok(planned)),
        // An add in place of the default database stores as a modify of its entry: a refusal
        // must not meet the entry that is there already.
        Err(refusal) => match &op {
            WriteOp::Add(entry)
                if replaces_default_database(&entry.dn.to_string(), &tree.base(), &state) =>
            {
                let (dn, ndn) = (entry.dn.clone(), entry.ndn.clone());
                let changes = Vec::new();
                (
                    WriteOp::Modify { dn, ndn, changes },
                    Err(refusal_error(refusal)),
                )
            }
            _ => (op.clone(), Err(refusal_error(refusal))),
        },
    };
    // A schema change fences every database first (once access control allows the change): writes
    // of the running snapshot that commit from then on must fit the new schema, and the usage check
    // runs again over everything committed before.
    let fenced = match &verdict {
        Ok(planned) if !Arc::ptr_eq(state.databases.schema(), planned.next.databases.schema()) => {
            probe_access(dir, who, ctl, &planned.stored).await?;
            fence_schema(&state, &planned.next)
                .await
                .map_err(refusal_error)?;
            true
        }
        _ => false,
    };
    // A first database over the default one: recorded before it is stored (the record alone
    // changes nothing while the tree holds the default's entry).
    if let Ok(Planned {
        first_added: Some(base),
        ..
    }) = &verdict
    {
        tree.record_first_added(base.clone()).map_err(|e| {
            LdapError::new(
                ResultCode::Other,
                format!("DATA/config/first-database cannot be written: {e}"),
            )
        })?;
    }
    // Access control decides first: a refusal reaches only who may write the entry.
    let controls = match dir
        .update_with_verdict(stored_op, who, ctl, verdict.as_ref().err().cloned())
        .await
    {
        Ok(controls) => controls,
        Err(error) => {
            if let (true, Ok(planned)) = (fenced, &verdict) {
                unfence_schema(&state, &planned.next);
            }
            return Err(error);
        }
    };
    let Planned {
        committed,
        tree: new_tree,
        next,
        deleted_file_db,
        ..
    } = verdict?;
    // A database of the file: recorded before the renumbering, so that a start after a crash at any
    // point finds the numbering it expects (`config_tree::align_databases`).
    let recorded = match &deleted_file_db {
        None => Ok(()),
        Some((base, table)) => tree.record_deleted(base.clone(), table).map_err(|e| {
            tracing::error!(error = %e, suffix = %table.suffix, "cn=config: the deletion of a database of the configuration file could not be recorded");
            LdapError::new(
                ResultCode::Other,
                format!(
                    "the database {} is deleted, but its deletion could not be recorded in \
                     DATA/config/deleted.toml ({e}): the configuration file brings it back at the \
                     next start",
                    table.suffix
                ),
            )
        }),
    };
    // Siblings after a deleted entry move up one position (X-ORDERED 'SIBLINGS'). The tree with a
    // gap runs the same configuration (`to_config` reads positions in order), so a failure here, or a
    // crash, leaves the gap for the next start to close; the delete itself is durable already.
    let renumbered = match committed == new_tree {
        true => Ok(()),
        false => {
            crate::config_tree::store::Writer {
                directory: &tree.directory,
            }
            .store(&committed, &new_tree)
            .await
        }
    };
    *entries = match renumbered {
        Ok(()) => new_tree,
        Err(error) => {
            tracing::error!(error = %error.message, "cn=config: renumbering after a delete failed; the next start closes the gap");
            committed
        }
    };
    let indexed = change_indexes(&state, &next).await;
    let tls = switch_certificate(&state, &next);
    let next = Arc::new(next);
    for db in next.databases.iter() {
        db.backend().set_server_id(next.config.server_id);
    }
    let logged = set_log_level(&state, &next);
    state.live.swap(next.clone());
    // The syncrepl consumers take the database under the new schema from the next session on.
    if !Arc::ptr_eq(state.databases.schema(), next.databases.schema()) {
        for consumer in &next.syncrepl {
            consumer.schema_changed();
        }
    }
    // A database deleted live: its index builds stop; operations that hold it finish first.
    for db in state.databases.iter() {
        if db.is_configured()
            && !next
                .databases
                .iter()
                .any(|d| d.backend().same_database(db.backend()))
        {
            db.backend().stop_index_builds();
            tracing::info!(suffix = %db.suffix_dn(), directory = %db.directory().display(), "database deleted (cn=config); its data directory is kept");
        }
    }
    logged?;
    indexed?;
    tls?;
    recorded?;
    Ok(controls)
}

/// A change ready to store: the write of the client's entry, the tree once it is committed, the
/// tree after the siblings that follow a deleted entry are renumbered, and the snapshot to swap in.
struct Planned {
    stored: WriteOp,
    committed: Vec<ConfigEntry>,
    tree: Vec<ConfigEntry>,
    next: ServerState,
    /// A database of the file deleted: the file's configuration without it, and its table.
    deleted_file_db: Option<(Config, crate::config::DatabaseConfig)>,
    /// A first database added over the default one: the file's configuration that says so.
    first_added: Option<Config>,
}

/// Works out the change `op` makes: Ok(Err) is a refusal, given only to who may make the change.
async fn plan(
    state: &State,
    tree: &crate::config_tree::ConfigTree,
    entries: &[ConfigEntry],
    dir: &Database,
    who: &Who,
    ctl: &WriteControls,
    op: &WriteOp,
) -> Result<Result<Planned, Refusal>, OpError> {
    Ok(match op {
        WriteOp::Modify { dn, ndn, changes } => (|| {
            let (new_tree, new_entry) =
                modified_tree(entries, &dn.to_string(), changes, &tree.base())?;
            let next = next_state(state, &tree.base(), &new_tree, None)?;
            check_schema_removals(state, &next)?;
            let old = entries
                .iter()
                .find(|e| e.dn.eq_ignore_ascii_case(&new_entry.dn))
                .cloned()
                .unwrap_or_else(|| new_entry.clone());
            let stored = WriteOp::Modify {
                dn: dn.clone(),
                ndn: ndn.clone(),
                changes: crate::config_tree::store::changes(&old, &new_entry),
            };
            Ok(Planned {
                stored,
                committed: new_tree.clone(),
                tree: new_tree,
                next,
                deleted_file_db: None,
                first_added: None,
            })
        })(),
        WriteOp::Add(entry)
            if crate::config_tree::schema_child_of(&entry.dn.to_string()).is_some()
                || is_schema_child_name(&entry.dn.to_string()) =>
        {
            added_schema_child(entries, entry, tree).and_then(|(new_tree, stored)| {
                let next = next_state(state, &tree.base(), &new_tree, None)?;
                Ok(Planned {
                    stored,
                    committed: new_tree.clone(),
                    tree: new_tree,
                    next,
                    deleted_file_db: None,
                    first_added: None,
                })
            })
        }
        WriteOp::Add(entry) if is_overlay_name(&entry.dn.to_string()) => (|| {
            let attrs = text_attributes(entry)?;
            let added = crate::config_tree::added_overlay(entries, &entry.dn.to_string(), &attrs)?;
            let stored = crate::config_tree::store::Writer {
                directory: &tree.directory,
            }
            .add(&added.added)
            .map_err(|e| Refusal::new(e.code, e.message))?;
            let next = next_state(state, &tree.base(), &added.tree, None)?;
            Ok(Planned {
                stored,
                committed: added.committed,
                tree: added.tree,
                next,
                deleted_file_db: None,
                first_added: None,
            })
        })(),
        WriteOp::Add(entry) if crate::config_tree::module_of(&entry.dn.to_string()).is_some() => {
            added_module(entries, entry, tree).and_then(|(new_tree, stored)| {
                let next = next_state(state, &tree.base(), &new_tree, None)?;
                Ok(Planned {
                    stored,
                    committed: new_tree.clone(),
                    tree: new_tree,
                    next,
                    deleted_file_db: None,
                    first_added: None,
                })
            })
        }
        WriteOp::Add(entry) => {
            match match replaces_default_database(&entry.dn.to_string(), &tree.base(), state) {
                true => adopted_tree(entries, entry, state).map(|(t, s)| {
                    let mut base = Config::clone(&tree.base());
                    base.first_added = true;
                    (t, s, Some(base))
                }),
                false => added_tree(entries, entry, tree).map(|(t, s)| (t, s, None)),
            } {
                Ok((new_tree, stored, first_added)) => {
                    // Opening the new database's environment is the one step with an effect on disk:
                    // only who may add the entry gets that far.
                    probe_access(dir, who, ctl, &stored).await?;
                    let base = first_added
                        .clone()
                        .unwrap_or_else(|| Config::clone(&tree.base()));
                    next_state(state, &base, &new_tree, None).map(|next| Planned {
                        stored,
                        committed: new_tree.clone(),
                        tree: new_tree,
                        next,
                        deleted_file_db: None,
                        first_added,
                    })
                }
                Err(refusal) => Err(refusal),
            }
        }
        WriteOp::Delete { .. } => (|| {
            let base = tree.base();
            let deletion = deleted_tree(entries, &op_dn(op), &base)?;
            let next_base = match &deletion.file_db {
                Some(_) => {
                    let mut without = Config::clone(&base);
                    let number = deletion.database.unwrap_or_default();
                    without.database.remove(number - 2);
                    without
                }
                None => Config::clone(&base),
            };
            let next = next_state(state, &next_base, &deletion.tree, deletion.database)?;
            check_schema_removals(state, &next)?;
            Ok(Planned {
                stored: op.clone(),
                committed: deletion.committed,
                tree: deletion.tree,
                next,
                deleted_file_db: deletion.file_db.map(|table| (next_base, table)),
                first_added: None,
            })
        })(),
        WriteOp::ModifyDn(_) => Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            "renaming entries of cn=config is not supported",
        )),
    })
}

/// Whether `dn` names an overlay entry (`olcOverlay=...,PARENT`), with a position or without.
fn is_overlay_name(dn: &str) -> bool {
    dn.split_once('=')
        .is_some_and(|(kind, _)| kind.trim().eq_ignore_ascii_case("olcOverlay"))
}

/// An added entry's attributes as text (operational ones left out).
fn text_attributes(entry: &canopy_core::Entry) -> Result<Vec<(String, Vec<String>)>, Refusal> {
    let mut attrs = Vec::new();
    for attr in &entry.attrs {
        let name = attr.desc.as_str();
        if crate::config_tree::store::OPERATIONAL
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name))
        {
            continue;
        }
        let values = attr
            .values
            .iter()
            .map(|raw| {
                String::from_utf8(raw.clone()).map_err(|_| {
                    Refusal::new(
                        ResultCode::InvalidAttributeSyntax,
                        format!("{name}: value is not UTF-8"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        attrs.push((name.to_string(), values));
    }
    Ok(attrs)
}

/// The tree with a new module list (`cn=module,cn=config`, or `cn=module{N}` with the next
/// number, which slapd also gives the former), and the write that stores it.
fn added_module(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let dn = entry.dn.to_string();
    let next = entries
        .iter()
        .filter_map(|e| crate::config_tree::module_of(&e.dn).flatten())
        .map(|n| n + 1)
        .max()
        .unwrap_or(0);
    match crate::config_tree::module_of(&dn) {
        Some(Some(n)) if n != next => {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!("{dn}: a module list is added after the last one (cn=module{{{next}}})"),
            ))
        }
        _ => {}
    }
    let target = crate::config_tree::module_dn(next);
    let mut added = ConfigEntry {
        dn: target,
        attrs: vec![
            ("objectClass".to_string(), vec!["olcModuleList".to_string()]),
            ("cn".to_string(), vec![format!("module{{{next}}}")]),
        ],
    };
    for (name, values) in text_attributes(entry)? {
        if name.eq_ignore_ascii_case("cn") {
            continue;
        }
        if name.eq_ignore_ascii_case("objectClass") {
            if let Some(other) = values.iter().find(|c| {
                !matches!(
                    c.to_ascii_lowercase().as_str(),
                    "olcmodulelist" | "olcconfig" | "top"
                )
            }) {
                return Err(Refusal::new(
                    ResultCode::ObjectClassViolation,
                    format!("objectClass: {other} is not the class of a module list"),
                ));
            }
            continue;
        }
        let stored = match name.to_ascii_lowercase().as_str() {
            "olcmoduleload" => (
                "olcModuleLoad".to_string(),
                numbered(
                    &values
                        .iter()
                        .map(|v| split_ordinal(v).1.to_string())
                        .collect::<Vec<_>>(),
                ),
            ),
            "olcmodulepath" => ("olcModulePath".to_string(), values),
            _ => {
                return Err(Refusal::new(
                    ResultCode::ObjectClassViolation,
                    format!("attribute '{name}' not allowed"),
                ))
            }
        };
        added.attrs.push(stored);
    }
    stored_addition(entries, added, tree)
}

fn op_dn(op: &WriteOp) -> String {
    match op {
        WriteOp::Delete { dn, .. } | WriteOp::Modify { dn, .. } => dn.to_string(),
        WriteOp::Add(entry) => entry.dn.to_string(),
        WriteOp::ModifyDn(request) => request.dn.to_string(),
    }
}

/// Whether `dn` is `cn=NAME,cn=schema,cn=config` without a position (slapd gives it the next one).
fn is_schema_child_name(dn: &str) -> bool {
    normalize_dn(dn).ends_with(",cn=schema,cn=config") && normalize_dn(dn).starts_with("cn=")
}

/// What a schema child added live holds, and changes live.
const SCHEMA_ATTRIBUTES: [&str; 3] = [
    "olcObjectIdentifier",
    "olcAttributeTypes",
    "olcObjectClasses",
];

/// The tree with a new schema child `entry` (`cn=NAME,cn=schema,cn=config`, or `cn={N}NAME` with the
/// next position, which slapd also gives the former), and the write that stores it.
fn added_schema_child(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let dn = entry.dn.to_string();
    // After the last one (a gap a failed renumbering left is closed at the next start).
    let next = entries
        .iter()
        .filter_map(|e| crate::config_tree::schema_child_of(&e.dn))
        .map(|(n, _)| n + 1)
        .max()
        .unwrap_or(0);
    let rdn_value = dn
        .split_once(',')
        .and_then(|(rdn, _)| rdn.split_once('='))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let name = match split_ordinal(&rdn_value) {
        (None, name) => name.to_string(),
        (Some(n), name) if n == next => name.to_string(),
        (Some(_), _) => {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{dn}: a schema is added after the last one (cn={{{next}}}NAME, or cn=NAME)"
                ),
            ))
        }
    };
    if !crate::config_tree::valid_schema_name(&name)
        || normalize_dn(&dn) != normalize_dn(&format!("cn={rdn_value},cn=schema,cn=config"))
    {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "{dn}: a schema is named cn=NAME,cn=schema,cn=config, NAME of letters, digits, \
                 '-' and '_'"
            ),
        ));
    }
    if entries
        .iter()
        .filter_map(|e| crate::config_tree::schema_child_of(&e.dn))
        .any(|(_, other)| other.eq_ignore_ascii_case(&name))
    {
        return Err(Refusal::new(
            ResultCode::EntryAlreadyExists,
            format!("a schema named {name:?} exists already"),
        ));
    }
    let target_dn = format!("cn={{{next}}}{name},{}", crate::config_tree::SCHEMA_DN);
    let mut added = ConfigEntry {
        dn: target_dn,
        attrs: vec![
            (
                "objectClass".to_string(),
                vec!["olcSchemaConfig".to_string()],
            ),
            ("cn".to_string(), vec![format!("{{{next}}}{name}")]),
        ],
    };
    let mut is_schema = false;
    for attr in &entry.attrs {
        let name = attr.desc.as_str();
        let text = |raw: &Vec<u8>| {
            String::from_utf8(raw.clone()).map_err(|_| {
                Refusal::new(
                    ResultCode::InvalidAttributeSyntax,
                    format!("{name}: value is not UTF-8"),
                )
            })
        };
        if crate::config_tree::store::OPERATIONAL
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name))
            || name.eq_ignore_ascii_case("cn")
        {
            continue;
        }
        if name.eq_ignore_ascii_case("objectClass") {
            for value in &attr.values {
                let class = text(value)?;
                match class.to_ascii_lowercase().as_str() {
                    "olcschemaconfig" => is_schema = true,
                    "top" | "olcconfig" => {}
                    _ => {
                        return Err(Refusal::new(
                            ResultCode::ObjectClassViolation,
                            format!("objectClass: {class} is not a class of a schema entry"),
                        ))
                    }
                }
            }
            continue;
        }
        let Some(known) = SCHEMA_ATTRIBUTES
            .iter()
            .find(|k| k.eq_ignore_ascii_case(name))
        else {
            return Err(Refusal::new(
                ResultCode::ObjectClassViolation,
                format!("attribute '{name}' not allowed"),
            ));
        };
        let plain = attr
            .values
            .iter()
            .map(|v| text(v).map(|t| split_ordinal(&t).1.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        added.attrs.push((known.to_string(), numbered(&plain)));
    }
    if !is_schema {
        return Err(Refusal::new(
            ResultCode::ObjectClassViolation,
            "a schema entry has objectClass olcSchemaConfig",
        ));
    }
    stored_addition(entries, added, tree)
}

/// A delete of an entry of cn=config: the tree without it (`committed`), the tree once the siblings
/// after it moved up a position (`tree`), and the number of the data database it removes.
struct Deletion {
    committed: Vec<ConfigEntry>,
    tree: Vec<ConfigEntry>,
    database: Option<usize>,
    /// The `[[database]]` table of a database of the file the delete removes.
    file_db: Option<crate::config::DatabaseConfig>,
}

/// What a delete of `dn` leaves. Deletes a schema child or a data database added live; the file's
/// schemas and databases, the overlays, cn=config, cn=schema, the frontend and the config database
/// are refused.
fn deleted_tree(entries: &[ConfigEntry], dn: &str, base: &Config) -> Result<Deletion, Refusal> {
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

/// The schema of the configuration `config`: the running one when its `[[schema]]` tables did not
/// change, else the file's schema with the tables added live, each definition checked as slapd
/// checks a value of olcAttributeTypes or olcObjectClasses (other, naming the attribute).
fn next_schema(
    state: &ServerState,
    config_tree: &crate::config_tree::ConfigTree,
    config: &Config,
) -> Result<Arc<canopy_schema::Schema>, Refusal> {
    // What overlays and modules bring (memberOf, the password policy classes): loaded with the
    // first overlay or module that needs it and kept for the life of the process, as slapd keeps a
    // module's schema; those of the file are in its schema already.
    let texts = |c: &Config| crate::overlays::schema(&crate::overlay_and_module_tables(c));
    let (running, wanted, file) = (
        texts(&state.config),
        texts(config),
        texts(&config_tree.base()),
    );
    let grows = wanted.iter().any(|t| !running.contains(t));
    if config.schema == state.config.schema && !grows {
        return Ok(state.databases.schema().clone());
    }
    let mut schema = canopy_schema::Schema::clone(&config_tree.file_schema);
    let mut loaded: Vec<&str> = Vec::new();
    for text in running.iter().chain(&wanted) {
        if file.contains(text) || loaded.contains(text) {
            continue;
        }
        loaded.push(text);
        schema.load_text(text, "overlay schema").map_err(|e| {
            Refusal::new(
                ResultCode::Other,
                format!("<olcOverlay> the overlay's schema does not load: {e}"),
            )
        })?;
    }
    let live = config
        .schema
        .get(config_tree.base().schema.len()..)
        .unwrap_or_default();
    match crate::load_schema_tables(&mut schema, live) {
        Ok(()) => Ok(Arc::new(schema)),
        Err(error) => {
            // A definition that named an element the change removes: a dependency.
            let before: Vec<&String> = state
                .config
                .schema
                .iter()
                .flat_map(|t| t.attribute_types.iter().chain(&t.object_classes))
                .collect();
            let removes = before.iter().any(|d| {
                !config
                    .schema
                    .iter()
                    .any(|t| t.attribute_types.contains(d) || t.object_classes.contains(d))
            });
            Err(match removes {
                true => Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "{}: another schema element depends on what this change removes \
                         (schema {:?}: {})",
                        error.attr, error.table, error.message
                    ),
                ),
                false => Refusal::new(
                    ResultCode::Other,
                    format!("{}: {}", error.attr, error.message),
                ),
            })
        }
    }
}

/// Refuses a change that removes an attribute type or an object class some entry still uses: each
/// data database is asked (`Directory::attribute_in_use`, `object_class_in_use`: an index when one
/// answers, else a scan), under the schema that still knows the element.
fn check_schema_removals(state: &ServerState, next: &ServerState) -> Result<(), Refusal> {
    let (old, new) = (state.databases.schema(), next.databases.schema());
    if Arc::ptr_eq(old, new) {
        return Ok(());
    }
    let databases: Vec<&Database> = state
        .databases
        .iter()
        .filter(|db| !db.is_config() && !db.is_monitor())
        .collect();
    let failed = |e: LdapError| Refusal::new(e.code, format!("schema usage check: {}", e.message));
    for at in old.attribute_types() {
        if new.attribute_type(&at.oid).is_some() {
            continue;
        }
        for db in &databases {
            if let Some(user) = db.backend().attribute_in_use(&at.oid).map_err(failed)?.user {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "olcAttributeTypes: attribute type {:?} is in use (entry \"{user}\"); \
                         remove its values from every entry first",
                        at.name()
                    ),
                ));
            }
        }
    }
    for class in old.object_classes() {
        if new.object_class(&class.oid).is_some() {
            continue;
        }
        for db in &databases {
            if let Some(user) = db
                .backend()
                .object_class_in_use(&class.oid)
                .map_err(failed)?
                .user
            {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "olcObjectClasses: object class {:?} is in use (entry \"{user}\"); \
                         remove it from every entry first",
                        class.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The databases a schema change fences: every data and log database of `next`.
fn fenced(next: &ServerState) -> impl Iterator<Item = &Database> {
    next.databases
        .iter()
        .filter(|db| !db.is_config() && !db.is_monitor())
}

/// Closes the race between the usage check of a schema change and the swap: each database's
/// writer takes the next schema as the one writes must fit (`Directory::fence_schema`, after
/// every write queued before it has committed), then the usage check runs again, so an entry an
/// operation of the running snapshot stored meanwhile is found, and one it would store from now on
/// is refused. A refusal undoes the fences.
async fn fence_schema(state: &ServerState, next: &ServerState) -> Result<(), Refusal> {
    let schema = next.databases.schema().clone();
    for db in fenced(next) {
        if let Err(e) = db.backend().fence_schema(schema.clone()).await {
            unfence_schema(state, next);
            return Err(Refusal::new(
                e.code,
                format!("schema change: {}", e.message),
            ));
        }
    }
    check_schema_removals(state, next).inspect_err(|_| unfence_schema(state, next))
}

/// Undoes [`fence_schema`]: writes fit the running schema again.
fn unfence_schema(state: &ServerState, next: &ServerState) {
    for db in fenced(next) {
        db.backend()
            .unfence_schema(state.databases.schema().clone());
    }
}

/// The answer a write gets when access control lets it through and `probe_access` stops it.
fn probe_error() -> LdapError {
    LdapError::new(ResultCode::Other, "access probe (never sent)")
}

/// Access control of `op` alone, nothing written: Ok when the requester may make it.
async fn probe_access(
    dir: &Database,
    who: &Who,
    ctl: &WriteControls,
    op: &WriteOp,
) -> Result<(), OpError> {
    match dir
        .update_with_verdict(op.clone(), who, ctl, Some(probe_error()))
        .await
    {
        Err(OpError::Ldap(error)) if error == probe_error() => Ok(()),
        Err(other) => Err(other),
        Ok(_) => Err(LdapError::new(ResultCode::Other, "the access probe wrote").into()),
    }
}

/// The tree with a new data database `entry` (`olcDatabase={N}mdb,cn=config` with the next number, or
/// `olcDatabase=mdb,cn=config`, which gets it), and the write that stores it.
/// The store's write of a new entry of cn=config, and the tree with it at the end.
fn stored_addition(
    entries: &[ConfigEntry],
    added: ConfigEntry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let stored = crate::config_tree::store::Writer {
        directory: &tree.directory,
    }
    .add(&added)
    .map_err(|e| Refusal::new(e.code, e.message))?;
    let mut new_tree = entries.to_vec();
    new_tree.push(added);
    Ok((new_tree, stored))
}

fn added_tree(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    tree: &crate::config_tree::ConfigTree,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let dn = entry.dn.to_string();
    let next = 1 + entries
        .iter()
        .filter(|e| {
            let dn = e.dn.to_ascii_lowercase();
            dn.starts_with("olcdatabase={") && dn.ends_with("}mdb,cn=config")
        })
        .count();
    let target_dn = crate::config_tree::database_dn(next);
    let lower = normalize_dn(&dn);
    if lower != normalize_dn(&target_dn) && lower != "olcdatabase=mdb,cn=config" {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "{dn}: only a new mdb database can be added, numbered after the last one \
                 ({target_dn})"
            ),
        ));
    }
    let added = new_database_entry(entry, &target_dn, next)?;
    stored_addition(entries, added, tree)
}

/// The entry of a new data database `olcDatabase={number}mdb` (`target_dn`) from the client's `entry`:
/// the attributes a new database may carry, ordered values numbered.
fn new_database_entry(
    entry: &canopy_core::Entry,
    target_dn: &str,
    next: usize,
) -> Result<ConfigEntry, Refusal> {
    let mut added = ConfigEntry {
        dn: target_dn.to_string(),
        attrs: Vec::new(),
    };
    let live = live_attributes(target_dn);
    for attr in &entry.attrs {
        let name = attr.desc.as_str();
        if crate::config_tree::store::OPERATIONAL
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name))
        {
            continue;
        }
        let known = [
            "objectClass",
            "olcDatabase",
            "olcSuffix",
            "olcDbDirectory",
            "olcSubordinate",
        ];
        if !known
            .iter()
            .chain(live)
            .any(|k| k.eq_ignore_ascii_case(name))
        {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!("{name}: not supported on a new database"),
            ));
        }
        let mut values = Vec::new();
        for raw in &attr.values {
            values.push(String::from_utf8(raw.clone()).map_err(|_| {
                Refusal::new(
                    ResultCode::InvalidAttributeSyntax,
                    format!("{name}: value is not UTF-8"),
                )
            })?);
        }
        if name.eq_ignore_ascii_case("olcDatabase") {
            values = vec![format!("{{{next}}}mdb")];
        }
        if is_ordered(name) {
            let plain: Vec<String> = values
                .iter()
                .map(|v| split_ordinal(v).1.to_string())
                .collect();
            values = numbered(&plain);
        }
        added.attrs.push((name.to_string(), values));
    }
    if added.get("olcDbDirectory").is_empty() {
        return Err(Refusal::new(
            ResultCode::ObjectClassViolation,
            "object class 'olcMdbConfig' requires attribute 'olcDbDirectory'",
        ));
    }
    Ok(added)
}

/// Whether an add of `dn` is the first data database added to a server whose file has none: the
/// default database Canopy runs then (`Config::default_database`) gives way to it, as slapd, started
/// without a data database, numbers the first one added `{1}`.
fn replaces_default_database(dn: &str, base: &Config, state: &ServerState) -> bool {
    base.default_database
        && !base.first_added
        && state.config.database_count() == 1
        && state.config.directory.is_none()
        && normalize_dn(dn) == normalize_dn(&crate::config_tree::database_dn(1))
}

/// The tree with the client's `olcDatabase={1}mdb` in place of the default database's entry, and the
/// store's write of it (a modify of the entry the default database had). Refused while the default
/// database holds entries (they would be hidden) or when the new one names its directory.
fn adopted_tree(
    entries: &[ConfigEntry],
    entry: &canopy_core::Entry,
    state: &ServerState,
) -> Result<(Vec<ConfigEntry>, WriteOp), Refusal> {
    let target_dn = crate::config_tree::database_dn(1);
    let held = state
        .databases
        .iter()
        .find(|db| db.is_configured())
        .map(|db| db.backend().figures().map(|f| f.entries))
        .transpose()
        .map_err(|e| Refusal::new(e.code, e.message))?
        .unwrap_or(0);
    if held > 0 {
        return Err(Refusal::new(
            ResultCode::EntryAlreadyExists,
            format!(
                "{target_dn}: the first database ({}, Canopy's default as the configuration file                  names none) holds {held} entries; add the new database as the next one, or set                  it in the file",
                state.config.suffix
            ),
        ));
    }
    let added = new_database_entry(entry, &target_dn, 1)?;
    let directory = added.single("olcDbDirectory").unwrap_or_default();
    if std::path::Path::new(directory) == state.config.data_dir {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "<olcDbDirectory> {directory} is the server's data directory, where the default                  database lies; name a directory of the new database's own"
            ),
        ));
    }
    let old = entries
        .iter()
        .find(|e| e.dn.eq_ignore_ascii_case(&target_dn))
        .ok_or_else(|| Refusal::new(ResultCode::Other, format!("{target_dn} is missing")))?;
    let changes = crate::config_tree::store::changes(old, &added);
    let new_tree = entries
        .iter()
        .map(|e| match e.dn.eq_ignore_ascii_case(&target_dn) {
            true => added.clone(),
            false => e.clone(),
        })
        .collect();
    let (dn, ndn) = (entry.dn.clone(), entry.ndn.clone());
    Ok((new_tree, WriteOp::Modify { dn, ndn, changes }))
}

/// Sets the log filter `next`'s olcLogLevel names, when it changed (checked before it was stored).
fn set_log_level(state: &State, next: &ServerState) -> Result<(), LdapError> {
    if next.config.log_level == state.config.log_level {
        return Ok(());
    }
    let Some(control) = &state.log_control else {
        return Ok(());
    };
    let filter = crate::config::log_filter(&next.config.log_level)
        .ok()
        .flatten()
        .map_or_else(
            || std::env::var("CANOPY_LOG").unwrap_or_else(|_| "info".to_string()),
            str::to_string,
        );
    control(&filter)
        .map_err(|e| LdapError::new(ResultCode::Other, format!("<olcLogLevel> {e}")))?;
    tracing::warn!(filter = %filter, "log level changed (cn=config)");
    Ok(())
}

/// Serves the certificate `next` names, when it names another one (validated before the change was
/// stored; a failure now, say a file removed meanwhile, keeps the one in use and is retried at start).
fn switch_certificate(state: &State, next: &ServerState) -> Result<(), LdapError> {
    let (old, new) = (&state.config.tls, &next.config.tls);
    if (&old.cert_file, &old.key_file) == (&new.cert_file, &new.key_file) {
        return Ok(());
    }
    let Some(tls) = &state.tls else {
        return Ok(());
    };
    tls.switch(&next.config).map_err(|e| {
        tracing::error!(error = %e, "olcTLSCertificateFile: the change is stored, the certificate in use is kept");
        LdapError::new(
            ResultCode::Other,
            format!("<olcTLSCertificateFile> {e} (the change is stored; the certificate in use is kept until the next start)"),
        )
    })
}
/// Starts the online builds of the indexes `next` adds and drops those it removes, in each data
/// database (docs/design/online-indexing.md): a build goes on in the background, and the planner uses
/// an index only once it is complete. The change is stored already; an index whose start fails here is
/// built again at the next start, which reconciles every database with its configured indexes.
async fn change_indexes(state: &State, next: &ServerState) -> Result<(), LdapError> {
    let (old_schema, new_schema) = (state.databases.schema(), next.databases.schema());
    let configured = |s: &ServerState| -> Vec<(usize, Database)> {
        s.databases
            .iter()
            .filter(|db| db.is_configured())
            .cloned()
            .enumerate()
            .map(|(i, db)| (i + 1, db))
            .collect()
    };
    let before = configured(state);
    let mut work = Vec::new();
    for (number, db) in configured(next) {
        // A database the change added builds its indexes from its own start.
        let Some((old_number, _)) = before
            .iter()
            .find(|(_, old)| old.backend().same_database(db.backend()))
        else {
            continue;
        };
        let (Some(old), Some(new)) = (
            state.config.database_view(*old_number),
            next.config.database_view(number),
        ) else {
            continue;
        };
        let (Ok(old), Ok(new)) = (
            crate::index_specs(old_schema, &old),
            crate::index_specs(new_schema, &new),
        ) else {
            continue;
        };
        let add: Vec<_> = new.iter().filter(|s| !old.contains(s)).cloned().collect();
        let drop: Vec<String> = old
            .iter()
            .filter(|o| !new.iter().any(|s| s.attr == o.attr))
            .map(|o| o.attr.clone())
            .collect();
        if !add.is_empty() || !drop.is_empty() {
            work.push((db.backend().clone(), add, drop));
        }
    }
    if work.is_empty() {
        return Ok(());
    }
    let done = tokio::task::spawn_blocking(move || -> Result<(), String> {
        for (directory, add, drop) in work {
            for attr in drop {
                directory.drop_index(&attr).map_err(|e| e.to_string())?;
                tracing::info!(suffix = %directory.suffix_dn(), index = %attr, "index dropped (cn=config)");
            }
            for spec in add {
                let attr = spec.attr.clone();
                directory.add_index(spec).map_err(|e| e.to_string())?;
                tracing::info!(suffix = %directory.suffix_dn(), index = %attr, "index build started (cn=config)");
            }
        }
        Ok(())
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    done.map_err(|e| {
        tracing::error!(error = %e, "olcDbIndex: the change is stored, the index is retried at the next start");
        LdapError::new(
            ResultCode::Other,
            format!("<olcDbIndex> {e} (the change is stored; the index is retried at the next start)"),
        )
    })
}

/// The tree after `changes` to the entry `dn`, and that entry.
fn modified_tree(
    entries: &[ConfigEntry],
    dn: &str,
    changes: &[Change],
    base: &Config,
) -> Result<(Vec<ConfigEntry>, ConfigEntry), Refusal> {
    let normalized = normalize_dn(dn);
    let Some(position) = entries
        .iter()
        .position(|e| normalize_dn(&e.dn) == normalized)
    else {
        return Err(Refusal::new(ResultCode::NoSuchObject, ""));
    };
    let old = &entries[position];
    let mut entry = old.clone();
    for change in changes {
        apply(&mut entry, change)?;
    }
    let schema_child = crate::config_tree::schema_child_of(&old.dn);
    let file_schema = schema_child
        .as_ref()
        .is_some_and(|(n, _)| *n < crate::config_tree::file_schema_count(base));
    let overlay = crate::config_tree::overlay_child_of(&old.dn);
    let overlay_attributes = crate::config_tree::live_overlay_attributes(&old.dn);
    let live: &[&str] = match (schema_child, &overlay) {
        (Some(_), _) if !file_schema => &SCHEMA_ATTRIBUTES,
        (_, Some(_)) => &overlay_attributes,
        _ => live_attributes(&old.dn),
    };
    for (name, _) in entry.attrs.iter().chain(old.attrs.iter()) {
        if old.get(name) == entry.get(name) {
            continue;
        }
        if let Some((_, _, overlay_name)) = &overlay {
            if overlay_name == "accesslog" {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "{name}: the accesslog overlay (and its log database) is set in the \
                         configuration file; change it there and restart"
                    ),
                ));
            }
            if !live.iter().any(|l| l.eq_ignore_ascii_case(name)) {
                return Err(Refusal::new(
                    match name.eq_ignore_ascii_case("olcOverlay") {
                        true => ResultCode::NotAllowedOnRdn,
                        false => ResultCode::ObjectClassViolation,
                    },
                    format!("attribute '{name}' not allowed"),
                ));
            }
        }
        if file_schema {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{name}: this schema is defined in the configuration file (schema_files or \
                     [[schema]]); add a schema of your own under cn=schema,cn=config, or change \
                     the file and restart"
                ),
            ));
        }
        if !live.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{name}: cannot be changed on a running server; change the configuration \
                     file and restart"
                ),
            ));
        }
    }
    entry.attrs.retain(|(_, values)| !values.is_empty());
    let mut tree = entries.to_vec();
    tree[position] = entry.clone();
    Ok((tree, entry))
}

/// A DN of the tree compared loosely: lower case, no spaces after commas.
fn normalize_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| rdn.trim().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",")
}

/// One change of a modify, with slapd's `{N}` handling of ordered values: an added `{N}value` goes to
/// position N (the end without a prefix), a deleted `{N}` removes position N, and the values are
/// numbered again afterwards.
fn apply(entry: &mut ConfigEntry, change: &Change) -> Result<(), Refusal> {
    let name = change.modification.name.clone();
    let mut values = Vec::new();
    for raw in &change.modification.values {
        values.push(String::from_utf8(raw.clone()).map_err(|_| {
            Refusal::new(
                ResultCode::InvalidAttributeSyntax,
                format!("{name}: value is not UTF-8"),
            )
        })?);
    }
    let ordered = is_ordered(&name);
    let position = entry
        .attrs
        .iter()
        .position(|(n, _)| n.eq_ignore_ascii_case(&name));
    let mut current: Vec<String> = match (position, ordered) {
        (Some(p), true) => entry.attrs[p]
            .1
            .iter()
            .map(|v| split_ordinal(v).1.to_string())
            .collect(),
        (Some(p), false) => entry.attrs[p].1.clone(),
        (None, _) => Vec::new(),
    };
    match change.operation {
        ModifyOperation::Add => {
            for value in values {
                let (at, text) = match ordered {
                    true => split_ordinal(&value),
                    false => (None, value.as_str()),
                };
                if current.iter().any(|v| v == text) {
                    return Err(Refusal::new(
                        ResultCode::AttributeOrValueExists,
                        format!("modify/add: {name}: value #0 already exists"),
                    ));
                }
                match at {
                    Some(n) if n < current.len() => current.insert(n, text.to_string()),
                    _ => current.push(text.to_string()),
                }
            }
        }
        ModifyOperation::Delete if values.is_empty() => {
            if current.is_empty() {
                return Err(Refusal::new(
                    ResultCode::NoSuchAttribute,
                    format!("modify/delete: {name}: no such attribute"),
                ));
            }
            current.clear();
        }
        ModifyOperation::Delete => {
            for value in values {
                let (at, text) = match ordered {
                    true => split_ordinal(&value),
                    false => (None, value.as_str()),
                };
                let found = match at {
                    Some(n) if n < current.len() && (text.is_empty() || current[n] == text) => {
                        Some(n)
                    }
                    Some(_) => None,
                    None => current.iter().position(|v| v.eq_ignore_ascii_case(text)),
                };
                match found {
                    Some(n) => {
                        current.remove(n);
                    }
                    None => {
                        return Err(Refusal::new(
                            ResultCode::NoSuchAttribute,
                            format!("modify/delete: {name}: no such value"),
                        ))
                    }
                }
            }
        }
        ModifyOperation::Replace => {
            let mut with_positions: Vec<(Option<usize>, String)> = values
                .iter()
                .map(|v| match ordered {
                    true => {
                        let (at, text) = split_ordinal(v);
                        (at, text.to_string())
                    }
                    false => (None, v.clone()),
                })
                .collect();
            // Values that name their positions take them in that order; the others follow as sent.
            with_positions.sort_by_key(|(at, _)| at.unwrap_or(usize::MAX));
            current = with_positions.into_iter().map(|(_, v)| v).collect();
        }
        ModifyOperation::Increment => {
            return Err(Refusal::new(
                ResultCode::UnwillingToPerform,
                format!("{name}: increment is not supported in cn=config"),
            ))
        }
    }
    let stored = match ordered {
        true => numbered(&current),
        false => current,
    };
    match position {
        Some(p) => entry.attrs[p].1 = stored,
        None => entry.attrs.push((name, stored)),
    }
    Ok(())
}

/// The snapshot the server runs after a change to `tree` (which removes data database
/// `removed_db`, when given): every database's settings and the frontend's built from the new
/// configuration, under the new schema when it changed, or the refusal naming what fails.
fn next_state(
    state: &State,
    base: &Config,
    tree: &[ConfigEntry],
    removed_db: Option<usize>,
) -> Result<ServerState, Refusal> {
    let Some(config_tree) = &state.config_tree else {
        return Err(Refusal::new(ResultCode::UnwillingToPerform, "no cn=config"));
    };
    let (config, first_password) = to_config(base, tree)?;
    let schema = next_schema(state, config_tree, &config)?;
    let schema_changed = !Arc::ptr_eq(&schema, state.databases.schema());
    let mut list = Vec::new();
    let mut old_number = 0;
    let mut number = 0;
    for db in state.databases.iter() {
        let db = match schema_changed {
            true => db.clone().with_schema(schema.clone()),
            false => db.clone(),
        };
        if db.is_monitor() || (!db.is_configured() && !db.is_config()) {
            list.push(db);
            continue;
        }
        if db.is_config() {
            // Rebuilt from the store's own handle: the running schema goes with it.
            let rebuilt = config_tree.database(&config)?.with_schema(schema.clone());
            list.push(rebuilt);
            continue;
        }
        old_number += 1;
        if removed_db == Some(old_number) {
            continue;
        }
        number += 1;
        let view = config.database_view(number).ok_or_else(|| {
            Refusal::new(ResultCode::Other, format!("database {number} is missing"))
        })?;
        if number == 1 && view.data_dir != db.directory() {
            // The default database gives way to a first database added live: a store of its own.
            list.push(open_added(
                &config,
                &schema,
                1,
                &list,
                first_password.clone(),
            )?);
            continue;
        }
        crate::index_specs(&schema, &view).map_err(|e| match e {
            crate::StartError::Open(canopy_directory::OpenError::IndexAttribute(attr)) => {
                Refusal::new(
                    ResultCode::Other,
                    format!("<olcDbIndex> index attribute \"{attr}\" undefined"),
                )
            }
            other => Refusal::new(ResultCode::Other, format!("<olcDbIndex> {other}")),
        })?;
        let acl = crate::access_list(&schema, &view)
            .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcAccess> {e}")))?;
        let root = match view.root_dn.as_str() {
            "" => None,
            text => {
                let ndn = normalize_root(&schema, text)?;
                let password = match number {
                    1 => first_password.clone(),
                    _ => view.root_password.clone().unwrap_or_default().into_bytes(),
                };
                Some((ndn, password))
            }
        };
        let before = state.config.database_view(old_number);
        let db = match before.is_some_and(|old| old.overlay == view.overlay) {
            true => db,
            false => crate::with_overlays(&db, &view)
                .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcOverlay> {e}")))?,
        };
        let subordinate = db.subordinate();
        let directory = db.directory().to_path_buf();
        list.push(db.with_acl(acl).with_settings(
            root,
            view.limits.clone(),
            view.read_only,
            subordinate,
            directory,
        ));
    }
    check_lockout(&config, &schema, &list, tree)?;
    // Databases added by this change: opened last, once everything else is known to be good.
    let opened = number;
    let mut added = Vec::new();
    for number in opened + 1..=config.database_count() {
        let password = config
            .database_view(number)
            .and_then(|v| v.root_password)
            .unwrap_or_default()
            .into_bytes();
        added.push(open_added(&config, &schema, number, &list, password)?);
    }
    let tail = list.split_off(opened.min(list.len()));
    list.extend(added);
    list.extend(tail);
    let tls_changed = (&config.tls.cert_file, &config.tls.key_file)
        != (&state.config.tls.cert_file, &state.config.tls.key_file);
    if tls_changed {
        crate::tls::Tls::check_files(&config, config.tls.verify_client)
            .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcTLSCertificateFile> {e}")))?;
    }
    let mut next = ServerState::clone(state);
    next.root_ndn = match config.root_dn.as_str() {
        "" => next.root_ndn,
        text => normalize_root(&schema, text)?,
    };
    next.root_password = first_password;
    if config.password_hash != state.config.password_hash {
        next.dummy_hash = crate::dummy_hash(&config)
            .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcPasswordHash> {e}")))?;
    }
    next.databases = Databases::new(list);
    next.config = config;
    Ok(next)
}

/// Opens database `number`, added live: its environment (created when new), its settings, and the
/// online builds of its indexes.
fn open_added(
    config: &Config,
    schema: &Arc<canopy_schema::Schema>,
    number: usize,
    existing: &[Database],
    root_password: Vec<u8>,
) -> Result<Database, Refusal> {
    let view = config
        .database_view(number)
        .ok_or_else(|| Refusal::new(ResultCode::Other, format!("database {number} is missing")))?;
    let (db, log) = crate::open_directory_in(&view, schema.clone(), config.durable, false)
        .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcDbDirectory> {e}")))?;
    if log.is_some() {
        // A database added live has no overlays (olcOverlay children cannot be added yet), so no
        // accesslog; refuse rather than serve a log database nobody writes.
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            "<olcOverlay> the accesslog overlay cannot be added live".to_string(),
        ));
    }
    if let Some(same) = existing.iter().find(|d| d.suffix() == db.suffix()) {
        return Err(Refusal::new(
            ResultCode::Other,
            format!(
                "<olcSuffix> {} is already served by another database",
                same.suffix_dn()
            ),
        ));
    }
    db.backend()
        .start_index_builds()
        .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcDbIndex> {e}")))?;
    let root = match view.root_dn.as_str() {
        "" => None,
        text => Some((normalize_root(schema, text)?, root_password)),
    };
    tracing::info!(number, suffix = %view.suffix, "database added (cn=config)");
    Ok(db.with_settings(
        root,
        view.limits.clone(),
        view.read_only,
        config.subordinate(number),
        view.data_dir.clone(),
    ))
}

fn normalize_root(
    schema: &canopy_schema::Schema,
    text: &str,
) -> Result<canopy_schema::NormDn, Refusal> {
    canopy_proto::Dn::parse(text.as_bytes())
        .ok()
        .and_then(|dn| schema.normalize_dn(&dn).ok())
        .ok_or_else(|| {
            Refusal::new(
                ResultCode::InvalidAttributeSyntax,
                "olcRootDN: value #0 invalid per syntax",
            )
        })
}

/// Refuses a configuration in which nobody can change cn=config: no config root DN with a password,
/// and the access engine, with the rules of `olcDatabase={0}config` in `databases`, lets no identity
/// that can authenticate write its `olcAccess` or `olcRootPW` (`lockout::first_administrator`).
fn check_lockout(
    config: &Config,
    schema: &canopy_schema::Schema,
    databases: &[Database],
    tree: &[ConfigEntry],
) -> Result<(), Refusal> {
    let root = config.config_root_dn.is_some()
        && config
            .config_root_password
            .as_deref()
            .is_some_and(|p| !p.is_empty());
    if root {
        return Ok(());
    }
    let Some(config_db) = databases.iter().find(|db| db.is_config()) else {
        return Ok(());
    };
    let data: Vec<Database> = databases
        .iter()
        .filter(|db| db.is_configured())
        .cloned()
        .collect();
    let dn_text = crate::config_tree::CONFIG_DB_DN;
    let (dn, ndn) = normalize_config_dn(schema, dn_text)?;
    let entry = tree
        .iter()
        .find(|e| e.dn.eq_ignore_ascii_case(dn_text))
        .and_then(|e| {
            let attrs: Vec<canopy_proto::PartialAttribute> = e
                .attrs
                .iter()
                .map(|(name, values)| canopy_proto::PartialAttribute {
                    name: name.clone(),
                    values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
                })
                .collect();
            canopy_core::check::entry_from_attributes_with(schema, dn, ndn.clone(), &attrs, true)
                .ok()
        });
    let target = crate::acl::Target {
        ndn: &ndn,
        entry: entry.as_ref(),
    };
    let named_may_bind = if !config.sasl.authz_regexp.is_empty() {
        Some("a SASL identity the [[sasl.authz_regexp]] rules may map to")
    } else if config.tls.verify_client != crate::config::VerifyClient::Never {
        Some("a client certificate's subject")
    } else {
        None
    };
    match crate::lockout::first_administrator(
        schema,
        config_db.acl(),
        target,
        &data,
        named_may_bind,
    ) {
        Some(who) => {
            tracing::debug!(administrator = %who, "cn=config lock-out check passed");
            Ok(())
        }
        None => Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            "olcAccess/olcRootDN/olcRootPW: this change would leave no identity able to modify \
             cn=config (keep olcRootDN with olcRootPW on olcDatabase={0}config, or a rule that lets \
             write olcAccess someone who can bind: root over ldapi, a root DN, an entry with a \
             password)",
        )),
    }
}

fn normalize_config_dn(
    schema: &canopy_schema::Schema,
    text: &str,
) -> Result<(canopy_proto::Dn, canopy_schema::NormDn), Refusal> {
    canopy_proto::Dn::parse(text.as_bytes())
        .ok()
        .and_then(|dn| schema.normalize_dn(&dn).ok().map(|ndn| (dn, ndn)))
        .ok_or_else(|| Refusal::new(ResultCode::Other, format!("{text}: does not normalize")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::PartialAttribute;

    fn change(operation: ModifyOperation, name: &str, values: &[&str]) -> Change {
        Change {
            operation,
            modification: PartialAttribute {
                name: name.into(),
                values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            },
        }
    }

    #[test]
    fn ordered_values_move_and_renumber_as_slapd() {
        let mut entry = ConfigEntry {
            dn: crate::config_tree::database_dn(1),
            attrs: vec![],
        };
        apply(
            &mut entry,
            &change(
                ModifyOperation::Add,
                "olcAccess",
                &[
                    "to * by * read",
                    "{0}to attrs=userPassword by self write by * auth",
                ],
            ),
        )
        .unwrap();
        assert_eq!(
            entry.get("olcAccess"),
            [
                "{0}to attrs=userPassword by self write by * auth",
                "{1}to * by * read"
            ]
        );
        apply(
            &mut entry,
            &change(ModifyOperation::Delete, "olcAccess", &["{0}"]),
        )
        .unwrap();
        assert_eq!(entry.get("olcAccess"), ["{0}to * by * read"]);
        let err = apply(
            &mut entry,
            &change(ModifyOperation::Delete, "olcAccess", &["{5}"]),
        )
        .unwrap_err();
        assert_eq!(err.code, ResultCode::NoSuchAttribute);
    }
}
