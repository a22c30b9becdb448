//! A client's write of cn=config (the tree is `config_tree`, docs/design/config-tree.md): apply it to a copy of the tree, build the whole new running
//! configuration from that copy (any failure refuses the write, naming the attribute), refuse a change
//! that leaves nobody able to change cn=config, store it durably through the configuration database
//! (its access rules decide first), then swap the new snapshot in (`state::Live`).

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

/// Attributes whose values carry `{N}` positions (X-ORDERED 'VALUES').
const ORDERED: [&str; 3] = ["olcAccess", "olcLimits", "olcSyncrepl"];

fn is_ordered(name: &str) -> bool {
    ORDERED.iter().any(|o| o.eq_ignore_ascii_case(name))
}

fn refusal_error(refusal: Refusal) -> LdapError {
    LdapError::new(refusal.code, refusal.message)
}

/// Runs a client's write in `dir`: through [`write`] for cn=config, else as an ordinary update.
pub async fn update(
    state: &State,
    dir: &Database,
    op: WriteOp,
    who: &Who,
    ctl: &WriteControls,
) -> Result<Vec<Control>, OpError> {
    match dir.is_config() {
        true => write(state, dir, who, op, ctl).await,
        false => dir.update(op, who, ctl).await,
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
    let (stored_op, verdict) = match &op {
        WriteOp::Modify { dn, ndn, changes } => {
            match modified_tree(&entries, &dn.to_string(), changes)
                .and_then(|tree| next_state(&state, &tree.0, &tree.1).map(|s| (tree, s)))
            {
                Ok(((tree, new_entry), next)) => {
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
                    (stored, Ok((tree, next)))
                }
                Err(refusal) => (op.clone(), Err(refusal_error(refusal))),
            }
        }
        WriteOp::Add(entry) => match added_tree(&entries, entry, tree) {
            Ok((new_tree, stored)) => {
                // Opening the new database's environment is the one step with an effect on disk:
                // only who may add the entry gets that far.
                probe_access(dir, who, ctl, &stored).await?;
                match next_state(&state, &new_tree, &new_tree[new_tree.len() - 1]) {
                    Ok(next) => (stored, Ok((new_tree, next))),
                    Err(refusal) => (op.clone(), Err(refusal_error(refusal))),
                }
            }
            Err(refusal) => (op.clone(), Err(refusal_error(refusal))),
        },
        WriteOp::Delete { .. } => (
            op.clone(),
            Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "deleting entries of cn=config is not supported on a running server yet",
            )),
        ),
        WriteOp::ModifyDn(_) => (
            op.clone(),
            Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "renaming entries of cn=config is not supported",
            )),
        ),
    };
    // Access control decides first: a refusal reaches only who may write the entry.
    let controls = dir
        .update_with_verdict(stored_op, who, ctl, verdict.as_ref().err().cloned())
        .await?;
    let (tree, next) = verdict?;
    *entries = tree;
    let indexed = change_indexes(&state, &next).await;
    let tls = switch_certificate(&state, &next);
    let next = Arc::new(next);
    for db in next.databases.iter() {
        db.backend().set_server_id(next.config.server_id);
    }
    let logged = set_log_level(&state, &next);
    state.live.swap(next);
    logged?;
    indexed?;
    tls?;
    Ok(controls)
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
    let mut added = ConfigEntry {
        dn: target_dn.clone(),
        attrs: Vec::new(),
    };
    let live = live_attributes(&target_dn);
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
    let stored = crate::config_tree::store::Writer {
        directory: &tree.directory,
    }
    .add(&added)
    .map_err(|e| Refusal::new(e.code, e.message))?;
    let mut new_tree = entries.to_vec();
    new_tree.push(added);
    Ok((new_tree, stored))
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
    let schema = state.databases.schema().clone();
    let mut work = Vec::new();
    let mut number = 0;
    for db in state.databases.iter() {
        if !db.is_configured() {
            continue;
        }
        number += 1;
        let (Some(old), Some(new)) = (
            state.config.database_view(number),
            next.config.database_view(number),
        ) else {
            continue;
        };
        let (Ok(old), Ok(new)) = (
            crate::index_specs(&schema, &old),
            crate::index_specs(&schema, &new),
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
    let live = live_attributes(&old.dn);
    for (name, _) in entry.attrs.iter().chain(old.attrs.iter()) {
        if old.get(name) == entry.get(name) {
            continue;
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

/// The snapshot the server runs after a change to `tree`: every database's settings and the frontend's
/// built from the new configuration, or the refusal naming what fails.
fn next_state(
    state: &State,
    tree: &[ConfigEntry],
    _: &ConfigEntry,
) -> Result<ServerState, Refusal> {
    let Some(config_tree) = &state.config_tree else {
        return Err(Refusal::new(ResultCode::UnwillingToPerform, "no cn=config"));
    };
    let (config, first_password) = to_config(&config_tree.base, tree)?;
    check_lockout(&config)?;
    let schema = state.databases.schema().clone();
    let mut list = Vec::new();
    let mut number = 0;
    for db in state.databases.iter() {
        if db.is_monitor() || (!db.is_configured() && !db.is_config()) {
            list.push(db.clone());
            continue;
        }
        if db.is_config() {
            let rebuilt = config_tree.database(&config)?;
            list.push(rebuilt);
            continue;
        }
        number += 1;
        let view = config.database_view(number).ok_or_else(|| {
            Refusal::new(ResultCode::Other, format!("database {number} is missing"))
        })?;
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
        list.push(db.clone().with_acl(acl).with_settings(
            root,
            view.limits.clone(),
            view.read_only,
            db.subordinate(),
            db.directory().to_path_buf(),
        ));
    }
    // Databases added by this change: opened last, once everything else is known to be good.
    let opened = number;
    let mut added = Vec::new();
    for number in opened + 1..=config.database_count() {
        added.push(open_added(&config, &schema, number, &list)?);
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
        text => Some((
            normalize_root(schema, text)?,
            view.root_password.clone().unwrap_or_default().into_bytes(),
        )),
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

/// Refuses a configuration in which nobody can change cn=config: neither a config root DN with a
/// password nor an access rule of `olcDatabase={0}config` granting write or manage to someone.
fn check_lockout(config: &Config) -> Result<(), Refusal> {
    let root = config.config_root_dn.is_some()
        && config
            .config_root_password
            .as_deref()
            .is_some_and(|p| !p.is_empty());
    let rules = match config.config_access.is_empty() {
        true => vec![crate::config_tree::default_access()],
        false => config.config_access.clone(),
    };
    if root || rules.iter().any(|rule| grants_write(rule)) {
        return Ok(());
    }
    Err(Refusal::new(
        ResultCode::UnwillingToPerform,
        "olcAccess/olcRootDN/olcRootPW: this change would leave no identity able to modify \
         cn=config (keep olcRootDN with olcRootPW on olcDatabase={0}config, or a rule granting \
         write or manage)",
    ))
}

/// Whether some `by` clause of an access rule grants write or manage to someone other than nobody.
fn grants_write(rule: &str) -> bool {
    rule.split(" by ").skip(1).any(|clause| {
        let words: Vec<&str> = clause.split_whitespace().collect();
        let who = words.first().copied().unwrap_or("");
        let level = words.get(1).copied().unwrap_or("");
        let grants = matches!(level.to_ascii_lowercase().as_str(), "write" | "manage")
            || ((level.starts_with('=') || level.starts_with('+'))
                && level.chars().any(|c| c == 'w' || c == 'm'));
        grants && !who.eq_ignore_ascii_case("none")
    })
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

    #[test]
    fn lockout_is_recognised() {
        let mut config = Config::default();
        assert!(check_lockout(&config).is_ok());
        config.config_access = vec!["to * by * read".into()];
        assert_eq!(
            check_lockout(&config).unwrap_err().code,
            ResultCode::UnwillingToPerform
        );
        config.config_access = vec!["to * by dn.exact=\"cn=a\" write by * none".into()];
        assert!(check_lockout(&config).is_ok());
        config.config_access = vec!["to * by * none".into()];
        config.config_root_dn = Some("cn=admin,cn=config".into());
        assert!(check_lockout(&config).is_err());
        config.config_root_password = Some("secret".into());
        assert!(check_lockout(&config).is_ok());
    }
}
