//! The plan of a client's write of cn=config: which kind of change it is, the tree after it, the
//! snapshot it leads to and the write the configuration database stores, or the refusal.

use canopy_directory::{OpError, WriteOp};
use canopy_proto::ResultCode;

use crate::access::Who;
use crate::config::Config;
use crate::config_tree::{ConfigEntry, Refusal};
use crate::databases::{Database, WriteControls};
use crate::state::{ServerState, State};

use super::add::{
    added_module, added_schema_child, added_tree, adopted_tree, replaces_default_database,
    text_attributes,
};
use super::checks::{check_schema_removals, probe_access};
use super::delete::deleted_tree;
use super::modify::modified_tree;
use super::names::normalize_dn;
use super::next_state::next_state;

/// A change ready to store: the write of the client's entry, the tree once it is committed, the
/// tree after the siblings that follow a deleted entry are renumbered, and the snapshot to swap in.
pub(super) struct Planned {
    pub(super) stored: WriteOp,
    pub(super) committed: Vec<ConfigEntry>,
    pub(super) tree: Vec<ConfigEntry>,
    pub(super) next: ServerState,
    /// A database of the file deleted: the file's configuration without it, and its table.
    pub(super) deleted_file_db: Option<(Config, crate::config::DatabaseConfig)>,
    /// A first database added over the default one: the file's configuration that says so.
    pub(super) first_added: Option<Config>,
}

/// The plan of an add whose tree is `new_tree` once stored with `stored`: nothing renumbered after it.
fn planned_add(
    state: &State,
    tree: &crate::config_tree::ConfigTree,
    new_tree: Vec<ConfigEntry>,
    stored: WriteOp,
) -> Result<Planned, Refusal> {
    let next = next_state(state, &tree.base(), &new_tree, None)?;
    Ok(Planned {
        stored,
        committed: new_tree.clone(),
        tree: new_tree,
        next,
        deleted_file_db: None,
        first_added: None,
    })
}

/// Works out the change `op` makes: Ok(Err) is a refusal, given only to who may make the change.
pub(super) async fn plan(
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
            added_schema_child(entries, entry, tree)
                .and_then(|(new_tree, stored)| planned_add(state, tree, new_tree, stored))
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
            added_module(entries, entry, tree)
                .and_then(|(new_tree, stored)| planned_add(state, tree, new_tree, stored))
        }
        WriteOp::Add(entry)
            if replaces_default_database(&entry.dn.to_string(), &tree.base(), state) =>
        {
            match adopted_tree(entries, entry, state) {
                Ok((new_tree, stored)) => {
                    // As below: only who may write the default's entry opens the new environment.
                    probe_access(dir, who, ctl, &stored).await?;
                    let mut base = Config::clone(&tree.base());
                    base.first_added = true;
                    next_state(state, &base, &new_tree, None).map(|next| Planned {
                        stored,
                        committed: new_tree.clone(),
                        tree: new_tree,
                        next,
                        deleted_file_db: None,
                        first_added: Some(base),
                    })
                }
                Err(refusal) => Err(refusal),
            }
        }
        WriteOp::Add(entry) => match added_tree(entries, entry, tree) {
            Ok((new_tree, stored)) => {
                // Opening the new database's environment is the one step with an effect on disk:
                // only who may add the entry gets that far.
                probe_access(dir, who, ctl, &stored).await?;
                planned_add(state, tree, new_tree, stored)
            }
            Err(refusal) => Err(refusal),
        },
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
