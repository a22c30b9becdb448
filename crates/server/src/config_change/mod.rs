//! A client's write of cn=config (the tree is `config_tree`, docs/design/config-tree.md): apply it to a
//! copy of the tree, build the whole new running configuration from that copy (any failure refuses the
//! write, naming the attribute), refuse a change that leaves nobody able to change cn=config, store it
//! durably through the configuration database (its access rules decide first), then swap the new
//! snapshot in (`state::Live`). A modify, an add (a database, a schema under cn=schema) or a delete (a
//! schema element or child, a database added live); a schema change re-makes every database under the
//! new schema in the next snapshot.
//!
//! Here the backend and the write's flow; `plan.rs` works out what a write changes (`add.rs`,
//! `modify.rs`, `delete.rs` the tree after each kind, `names.rs` what they share), `next_state.rs`
//! builds the snapshot to swap in, `checks.rs` holds the safety checks (schema elements still in use,
//! the schema fence, the access probe, the lock-out) and `effects.rs` what a stored change starts on
//! the running server.

mod add;
mod checks;
mod delete;
mod effects;
mod modify;
mod names;
mod next_state;
mod plan;

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::{OpError, WriteOp};
use canopy_proto::{Control, ResultCode};

use crate::access::Who;
use crate::config_tree::Refusal;
use crate::databases::{Database, WriteControls};
use crate::state::State;

use checks::{fence_schema, probe_access, unfence_schema};
use effects::{change_indexes, set_log_level, switch_certificate};
use plan::{plan, Planned};

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
                if add::replaces_default_database(&entry.dn.to_string(), &tree.base(), &state) =>
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
