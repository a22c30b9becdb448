//! What a stored change starts on the running server beside the swap: the log filter, the certificate
//! served, the online builds of the indexes.

use canopy_core::LdapError;
use canopy_proto::ResultCode;

use crate::databases::Database;
use crate::state::{ServerState, State};

/// Sets the log filter `next`'s olcLogLevel names, when it changed (checked before it was stored).
pub(super) fn set_log_level(state: &State, next: &ServerState) -> Result<(), LdapError> {
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
pub(super) fn switch_certificate(state: &State, next: &ServerState) -> Result<(), LdapError> {
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
pub(super) async fn change_indexes(state: &State, next: &ServerState) -> Result<(), LdapError> {
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
