//! The running configuration a change leads to: the next schema, every database's settings, the
//! databases added live opened, the frontend's settings; any failure is a refusal naming the attribute.

use std::sync::Arc;

use canopy_proto::ResultCode;

use crate::config::Config;
use crate::config_tree::{to_config, ConfigEntry, Refusal};
use crate::databases::{Database, Databases};
use crate::state::{ServerState, State};

use super::checks::check_lockout;

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

/// The snapshot the server runs after a change to `tree` (which removes data database
/// `removed_db`, when given): every database's settings and the frontend's built from the new
/// configuration, under the new schema when it changed, or the refusal naming what fails.
pub(super) fn next_state(
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
    if config.sasl.authz_policy != state.config.sasl.authz_policy {
        let rules = crate::authz::Rules::compile(&config.sasl)
            .map_err(|e| Refusal::new(ResultCode::Other, format!("<olcAuthzPolicy> {e}")))?;
        next.sasl_rules = Arc::new(rules);
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
