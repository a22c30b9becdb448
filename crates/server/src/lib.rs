//! The Canopy server, the LDAP frontend: listeners, connections, one module per operation, access
//! control, limits, SASL, TLS and the configuration, over the databases of `canopy-directory`.
//!
//! It owns decoding, normalising, limits, access control and encoding; everything that reads or
//! writes a database goes through `databases::Databases` (the one router by suffix) to the backend. It
//! must never open an LMDB transaction itself or store anything but through `Directory::write`.

pub mod access;
pub mod acl;
pub mod authz;
pub mod backoff;
pub mod bind_cache;
pub mod cancel;
pub mod completion;
pub mod config;
pub mod config_change;
pub mod config_tree;
pub mod conn;
pub mod consumers;
pub mod ctlvalue;
pub mod databases;
pub mod dbconfig;
pub mod dbview;
pub mod dds;
pub mod deref;
pub mod exporter;
pub mod extensions;
pub mod filter_view;
pub mod hash_gate;
pub mod limits;
pub mod listener;
pub mod lockout;
pub mod logdb;
pub mod metrics;
pub mod monitor;
pub mod monitor_tree;
pub mod oplog;
pub mod ops;
pub mod otp;
pub mod out;
pub mod overlays;
pub mod ppolicy;
pub mod readentry;
pub mod redact;
pub mod reqctl;
pub mod retcode;
pub mod sasl;
pub mod saslauthd;
pub mod security;
pub mod select;
pub mod session;
mod slapd_line;
pub mod sorting;
pub mod special;
pub mod sssvlv;
pub mod state;
pub mod syncrepl;
pub mod tls;
pub mod transport;
pub mod txn;
pub mod valsort;

use std::sync::Arc;

use canopy_core::index::IndexSpec;
use canopy_directory::{Directory, OpenError, OpenOptions};
use canopy_schema::Schema;

pub use config::{Config, ConfigError, ListenUrl};
pub use databases::{Database, Databases};
pub use state::{ServerState, State};

/// Failure to start: configuration, schema or database.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("schema: {0}")]
    Schema(#[from] canopy_schema::SchemaError),
    #[error("{0}")]
    Open(#[from] OpenError),
    #[error("{0}")]
    Sasl(String),
    #[error("root DN {0:?}: {1}")]
    RootDn(String, String),
    #[error("{0}")]
    Access(String),
    #[error("listener {0}: {1}")]
    Listen(String, std::io::Error),
    #[error("{0}")]
    Tls(#[from] tls::TlsError),
    #[error("{0}")]
    Overlay(String),
    #[error("{0}")]
    Invalid(String),
    #[error("cn=Monitor: {0}")]
    Monitor(String),
    #[error("access_log {0}: {1}")]
    OpLog(String, std::io::Error),
}

/// Loads the built-in schema plus the configured schema files.
pub fn load_schema(config: &Config) -> Result<Schema, StartError> {
    let mut schema = Schema::builtin();
    // Always loaded, so that offline tools and servers with or without cn=Monitor agree on names.
    schema.load_text(monitor::schema::MONITOR_SCHEMA, "monitor schema")?;
    schema.load_text(config_tree::SCHEMA, "cn=config schema")?;
    schema.load_text(config_tree::OVERLAY_SCHEMA, "cn=config overlay schema")?;
    // One schema for every database: what any database's overlays bring, once each, and what the
    // modules loaded define (slapd's module brings its schema when it loads).
    let mut texts: Vec<&str> = Vec::new();
    for text in overlays::schema(&overlay_and_module_tables(config)) {
        if !texts.contains(&text) {
            texts.push(text);
        }
    }
    for text in texts {
        schema.load_text(text, "overlay schema")?;
    }
    for path in &config.schema_files {
        schema.load_file(path)?;
    }
    load_schema_tables(&mut schema, &config.schema)
        .map_err(|e| StartError::Invalid(format!("[[schema]] {:?}: {}", e.table, e.message)))?;
    Ok(schema)
}

/// Every overlay table of `config`'s databases, and one per module it loads that holds an overlay.
pub(crate) fn overlay_and_module_tables(config: &Config) -> Vec<overlays::OverlayConfig> {
    let mut tables = config.all_overlays();
    let whole = config.whole.as_deref().unwrap_or(config);
    let modules: Vec<String> = whole.modules.iter().flat_map(|m| m.load.clone()).collect();
    tables.extend(overlays::module_tables(&modules));
    tables
}

/// Why a `[[schema]]` table (a cn=schema child) does not load: the attribute holding the definition
/// and the problem in slapd's words (`AttributeType not found: "x"`, `Syntax not found: "1.2.3"`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaTableError {
    pub table: String,
    pub attr: &'static str,
    pub message: String,
}

/// Loads `tables` into `schema` after what it holds, one definition at a time, attribute types of a
/// table before its object classes; unlike a schema file, an attribute type's syntax must be known.
/// On an error `schema` holds part of the tables and is to be dropped.
pub fn load_schema_tables(
    schema: &mut Schema,
    tables: &[config::SchemaConfig],
) -> Result<(), SchemaTableError> {
    for table in tables {
        let fail = |attr: &'static str, message: String| SchemaTableError {
            table: table.name.clone(),
            attr,
            message,
        };
        for definition in &table.object_identifiers {
            schema
                .load_text(&format!("objectidentifier {definition}\n"), &table.name)
                .map_err(|e| fail("olcObjectIdentifier", schema_words(e)))?;
        }
        for definition in &table.attribute_types {
            let before = schema.attribute_types().count();
            schema
                .load_text(&format!("attributetype {definition}\n"), &table.name)
                .map_err(|e| fail("olcAttributeTypes", schema_words(e)))?;
            if let Some(added) = schema.attribute_types().nth(before) {
                let syntax = added.syntax.clone();
                if !schema.syntaxes().any(|s| s.oid == syntax) {
                    return Err(fail(
                        "olcAttributeTypes",
                        format!("Syntax not found: \"{syntax}\""),
                    ));
                }
            }
        }
        for definition in &table.object_classes {
            schema
                .load_text(&format!("objectclass {definition}\n"), &table.name)
                .map_err(|e| fail("olcObjectClasses", schema_words(e)))?;
        }
    }
    Ok(())
}

/// A schema error in the words slapd's cn=config uses for the same problem.
fn schema_words(error: canopy_schema::SchemaError) -> String {
    use canopy_schema::SchemaError;
    let quoted = |text: &str, prefix: &str| {
        text.strip_prefix(prefix)
            .map(|rest| rest.trim_matches('"').to_string())
    };
    match error {
        SchemaError::Parse { reason, .. } => {
            if let Some(name) = quoted(&reason, "unknown supertype ") {
                format!("AttributeType not found: \"{name}\"")
            } else if let Some(name) = quoted(&reason, "unknown attribute type ") {
                format!("AttributeType not found: \"{name}\"")
            } else if let Some(name) = quoted(&reason, "unknown superclass ") {
                format!("ObjectClass not found: \"{name}\"")
            } else {
                reason
            }
        }
        SchemaError::Duplicate { what, .. } => {
            let key = |rest: &str| rest.split(' ').next().unwrap_or(rest).to_string();
            if let Some(rest) = what.strip_prefix("attribute type ") {
                format!("Inconsistent duplicate attributeType: \"{}\"", key(rest))
            } else if let Some(rest) = what.strip_prefix("object class ") {
                format!("Inconsistent duplicate objectClass: \"{}\"", key(rest))
            } else {
                format!("duplicate definition of {what}")
            }
        }
        SchemaError::Io { path, source } => format!("{path}: {source}"),
        SchemaError::UnknownAttributeType(name) => format!("AttributeType not found: \"{name}\""),
        SchemaError::InvalidValue { attr, reason } => format!("{attr}: {reason}"),
    }
}

/// The index specifications of a configuration, with attribute names made canonical.
pub fn index_specs(schema: &Schema, config: &Config) -> Result<Vec<IndexSpec>, StartError> {
    let mut specs = Vec::new();
    for index in &config.indexes {
        let Some(at) = schema.attribute_type(&index.attr) else {
            return Err(StartError::Open(OpenError::IndexAttribute(
                index.attr.clone(),
            )));
        };
        let has = |k: &str| index.kinds.iter().any(|x| x == k);
        specs.push(IndexSpec {
            attr: at.name().to_string(),
            eq: has("eq"),
            pres: has("pres"),
            sub: has("sub"),
            ord: has("ord"),
            approx: has("approx"),
        });
    }
    Ok(specs)
}

/// Opens the database a configuration names, with its access rules.
pub fn open_directory(config: &Config, durable: bool) -> Result<Database, StartError> {
    open_directory_with(config, durable, false)
}

/// [`open_directory`] for `canopy import`, an offline load: LMDB writes pages in place in its map
/// (MDB_WRITEMAP, as `slapadd -q` does), saving a copy of every page the load touches.
pub fn open_directory_for_import(config: &Config, durable: bool) -> Result<Database, StartError> {
    open_directory_with(config, durable, true)
}

fn open_directory_with(
    config: &Config,
    durable: bool,
    write_map: bool,
) -> Result<Database, StartError> {
    // An offline tool has no log writer: what its writes log waits in the data store's outbox for the
    // next start of the server, which moves it to the log database.
    open_directory_in(config, Arc::new(load_schema(config)?), durable, write_map).map(|(db, _)| db)
}

/// Opens the database of `config` (a database's view, `Config::database_view`) with the shared schema;
/// with the accesslog overlay, the log database still to open.
pub(crate) fn open_directory_in(
    config: &Config,
    schema: Arc<Schema>,
    durable: bool,
    write_map: bool,
) -> Result<(Database, Option<logdb::Pending>), StartError> {
    let specs = index_specs(&schema, config)?;
    let options = OpenOptions {
        path: config.data_dir.clone(),
        initial_map_size: 1 << 30,
        durable,
        max_readers: 1024,
        write_map,
    };
    let acl = access_list(&schema, config)?;
    let target = overlays::Target {
        schema: &schema,
        suffix: &config.suffix,
    };
    // The access log records what the other overlays made of a write (docs/overlays.md).
    let (accesslog, pending) =
        match overlays::accesslog(&config.overlay).map_err(StartError::Overlay)? {
            Some(log_config) => {
                let (hook, pending) = logdb::hook(log_config);
                (
                    Some(hook as Arc<dyn canopy_directory::WriteHook>),
                    Some(pending),
                )
            }
            None => (None, None),
        };
    let pipeline = write_pipeline(config, &target, accesslog).map_err(StartError::Overlay)?;
    let dynlist = overlays::dynlist(&config.overlay, &target).map_err(StartError::Overlay)?;
    let backend = Directory::open(schema, &config.suffix, specs, options, pipeline)?;
    backend.set_server_id(config.server_id);
    backend.set_multiprovider(config.multiprovider);
    let front_hooks = front_hooks(config, backend.schema()).map_err(StartError::Overlay)?;
    let dds = overlays::dds_settings(&config.overlay).map_err(StartError::Overlay)?;
    Ok((
        Database::new(backend, acl)
            .with_dynlist(dynlist)
            .with_dds(dds)
            .with_front_hooks(front_hooks),
        pending,
    ))
}

/// The write hooks of the database `config` (a database's view): stamping, its overlays in order,
/// the access log's `accesslog` hook after them, and the provider's session log and change feed
/// last (docs/replication.md), with the session log a `syncprov` table sets.
fn write_pipeline(
    config: &Config,
    target: &overlays::Target<'_>,
    accesslog: Option<Arc<dyn canopy_directory::WriteHook>>,
) -> Result<canopy_directory::Pipeline, String> {
    let mut pipeline = overlays::pipeline(&config.overlay, &config.root_dn, target)?;
    if let Some(hook) = accesslog {
        pipeline = pipeline.then(hook);
    }
    let sessionlog = overlays::sessionlog(&config.overlay)
        .map_err(|e| format!("[[overlay]] \"syncprov\": {e}"))?
        .unwrap_or(config.syncprov_sessionlog);
    Ok(
        pipeline.then(Arc::new(canopy_directory::syncprov::SyncProv::new(
            sessionlog,
        ))),
    )
}

/// The overlays' parts in the frontend: the password policy's checks of binds and changes, the
/// retcode overlay's answers and the valsort overlay's order of values (checked against `schema`).
fn front_hooks(
    config: &Config,
    schema: &Schema,
) -> Result<Vec<Arc<dyn databases::FrontHook>>, String> {
    let ppolicy = overlays::ppolicy(&config.overlay, &config.root_dn)?;
    let mut hooks: Vec<Arc<dyn databases::FrontHook>> = ppolicy
        .into_iter()
        .map(|pp| Arc::new(ppolicy::PolicyHook(pp)) as Arc<dyn databases::FrontHook>)
        .collect();
    for table in config.overlay.iter().filter(|o| o.name == "retcode") {
        let retcode = retcode::Retcode::from_options(&table.options)
            .map_err(|e| format!("[[overlay]] \"retcode\": {e}"))?;
        hooks.push(Arc::new(retcode::RetcodeHook(retcode)));
    }
    if config.overlay.iter().any(|o| o.name == "otp") {
        let otp = canopy_directory::overlay::otp::Otp::new(&config.root_dn);
        hooks.push(Arc::new(otp::OtpHook(Arc::new(otp))));
    }
    for table in config.overlay.iter().filter(|o| o.name == "sssvlv") {
        let sssvlv = sssvlv::SssvlvHook::from_options(&table.options)
            .map_err(|e| format!("[[overlay]] \"sssvlv\": {e}"))?;
        hooks.push(Arc::new(sssvlv));
    }
    if config.overlay.iter().any(|o| o.name == "dds") {
        hooks.push(Arc::new(dds::DdsHook));
    }
    if config.overlay.iter().any(|o| o.name == "deref") {
        hooks.push(Arc::new(deref::DerefHook));
    }
    for table in config.overlay.iter().filter(|o| o.name == "valsort") {
        let valsort = valsort::Valsort::from_options(&table.options, schema)
            .map_err(|e| format!("[[overlay]] \"valsort\": {e}"))?;
        hooks.push(Arc::new(valsort::ValsortHook(valsort)));
    }
    Ok(hooks)
}

/// The running database `db` with the overlays of `config` (its view) in place of its own (an
/// `olcOverlay` entry added, changed or deleted live): new write hooks on the same store, the
/// dynlist expansion and the password policy's frontend checks. The accesslog overlay does not
/// change live: `db`'s own `accesslog` hook, which feeds its log database, is kept.
pub(crate) fn with_overlays(db: &Database, config: &Config) -> Result<Database, String> {
    let schema = db.backend().schema().clone();
    let target = overlays::Target {
        schema: &schema,
        suffix: &config.suffix,
    };
    let accesslog = db.backend().pipeline().hook("accesslog").cloned();
    let pipeline = write_pipeline(config, &target, accesslog)?;
    let backend = db
        .backend()
        .with_pipeline(pipeline)
        .map_err(|e| e.to_string())?;
    let dynlist = overlays::dynlist(&config.overlay, &target)?;
    Ok(db
        .clone()
        .with_backend(backend)
        .with_dynlist(dynlist)
        .with_dds(overlays::dds_settings(&config.overlay)?)
        .with_front_hooks(front_hooks(config, &schema)?))
}

/// Opens every data database of `config` in configuration order, with their root DNs (the first
/// database's password is `first_password`; the others' are in their tables), limits, read-only
/// flags and glue.
fn open_databases(
    config: &Config,
    schema: &Arc<Schema>,
    first_password: Vec<u8>,
) -> Result<(Vec<Database>, Vec<logdb::LogDb>), StartError> {
    let mut list = Vec::new();
    let mut logs = Vec::new();
    let mut first_password = Some(first_password);
    for number in 1..=config.database_count() {
        let view = config
            .database_view(number)
            .ok_or_else(|| StartError::Invalid(format!("database {number} is missing")))?;
        let (db, pending) = open_directory_in(&view, schema.clone(), config.durable, false)?;
        let root = match view.root_dn.as_str() {
            "" => None,
            text => {
                let ndn = normalize_root(schema, text)?;
                let password = match number {
                    1 => first_password.take().unwrap_or_default(),
                    _ => view.root_password.clone().unwrap_or_default().into_bytes(),
                };
                Some((ndn, password))
            }
        };
        if let Some(pending) = pending {
            let mut log_view = view.clone();
            log_view.access = pending.access().to_vec();
            let acl = access_list(schema, &log_view)?;
            let log_root = root.as_ref().map(|(ndn, _)| ndn.clone());
            logs.push(pending.open(
                &view,
                schema.clone(),
                db.backend(),
                acl,
                log_root,
                config.durable,
            )?);
        }
        list.push(db.with_settings(
            root,
            view.limits.clone(),
            view.read_only,
            config.subordinate(number),
            view.data_dir.clone(),
        ));
    }
    // The log databases after the data databases: the first database stays the first data database.
    list.extend(logs.iter().map(|log| log.database().clone()));
    // The configuration check compared suffixes without the schema; compare them normalized too.
    for (i, db) in list.iter().enumerate() {
        if let Some(j) = (0..i).find(|&j| list[j].suffix() == db.suffix()) {
            return Err(StartError::Invalid(format!(
                "database {} has the same suffix as database {}: {}",
                i + 1,
                j + 1,
                db.suffix_dn()
            )));
        }
    }
    Ok((list, logs))
}

fn normalize_root(schema: &Schema, text: &str) -> Result<canopy_schema::NormDn, StartError> {
    canopy_proto::Dn::parse(text.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|dn| schema.normalize_dn(&dn).map_err(|e| e.to_string()))
        .map_err(|e| StartError::RootDn(text.to_string(), e))
}

/// Everything a start checks before it opens the database and binds its listeners, for
/// `canopy serve --check`: schema files, indexes, access rules, overlays, suffix and root DN, SASL rules,
/// the password scheme, listener URLs and TLS files. Opens no database, binds nothing, writes nothing.
pub fn check_config(config: &Config) -> Result<(), StartError> {
    for number in 2..=config.database_count() {
        if let Some(view) = config.database_view(number) {
            check_database(&view)
                .map_err(|e| StartError::Invalid(format!("database {number}: {e}")))?;
        }
    }
    check_database(config)?;
    for number in 1..=config.database_count() {
        let Some(view) = config.database_view(number) else {
            continue;
        };
        if view.syncrepl.is_empty() {
            continue;
        }
        // A consumer finds the entries it receives by entryUUID (docs/replication.md).
        let schema = load_schema(&view)?;
        let uuid = schema.attribute_type("entryUUID").map(|at| at.oid.as_str());
        let indexed = index_specs(&schema, &view)?.iter().any(|spec| {
            spec.eq && schema.attribute_type(&spec.attr).map(|at| at.oid.as_str()) == uuid
        });
        if !indexed {
            let message =
                "a syncrepl consumer needs an equality index on entryUUID (indexes: entryUUID eq)";
            return Err(StartError::Invalid(match number {
                1 => message.to_string(),
                n => format!("database {n}: {message}"),
            }));
        }
    }
    authz::Rules::compile(&config.sasl).map_err(StartError::Sasl)?;
    if canopy_password::Scheme::from_name(&config.password_hash).is_none() {
        return Err(StartError::Invalid(format!(
            "password_hash: unknown scheme {:?}",
            config.password_hash
        )));
    }
    if config.listen.is_empty() {
        return Err(StartError::Invalid("no listeners configured".into()));
    }
    for url in &config.listen {
        ListenUrl::parse(url).map_err(|e| StartError::Invalid(format!("listener {url}: {e}")))?;
    }
    tls::check(config)?;
    Ok(())
}

/// The checks of one database's view: indexes, access rules, overlays, suffix and root DN.
fn check_database(config: &Config) -> Result<(), StartError> {
    let schema = load_schema(config)?;
    index_specs(&schema, config)?;
    access_list(&schema, config)?;
    let target = overlays::Target {
        schema: &schema,
        suffix: &config.suffix,
    };
    let pipeline = overlays::pipeline(&config.overlay, &config.root_dn, &target)
        .map_err(StartError::Overlay)?;
    overlays::dynlist(&config.overlay, &target).map_err(StartError::Overlay)?;
    overlays::ppolicy(&config.overlay, &config.root_dn).map_err(StartError::Overlay)?;
    overlays::accesslog(&config.overlay).map_err(StartError::Overlay)?;
    let suffix = canopy_proto::Dn::parse(config.suffix.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|dn| schema.normalize_dn(&dn).map_err(|e| e.to_string()))
        .map_err(|e| StartError::Open(OpenError::Suffix(config.suffix.clone(), e)))?;
    pipeline
        .check(&schema, &suffix)
        .map_err(|(hook, e)| StartError::Open(OpenError::Overlay(hook, e)))?;
    if !config.root_dn.is_empty() {
        normalize_root(&schema, &config.root_dn)?;
    }
    Ok(())
}

/// Opens the cn=Monitor database: a small store of its own in `DATA/monitor`, emptied at each start,
/// never fsynced (its content is recomputed), with its own access rules (monitor::ACCESS).
fn open_monitor(
    config: &Config,
    schema: Arc<Schema>,
    root_ndn: Option<canopy_schema::NormDn>,
) -> Result<Database, StartError> {
    let path = config.data_dir.join("monitor");
    for file in ["data.mdb", "lock.mdb"] {
        match std::fs::remove_file(path.join(file)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StartError::Monitor(format!("{}: {e}", path.display()))),
        }
    }
    let index = IndexSpec::equality;
    let options = OpenOptions {
        path,
        initial_map_size: 16 << 20,
        durable: false,
        max_readers: 1024,
        write_map: false,
    };
    let mut monitor_config = config.clone();
    monitor_config.access = if config.monitor_access.is_empty() {
        vec![monitor::ACCESS.to_string()]
    } else {
        config.monitor_access.clone()
    };
    let acl = access_list(&schema, &monitor_config)?;
    let backend = Directory::open(
        schema,
        monitor::SUFFIX,
        vec![index("objectClass"), index("cn")],
        options,
        canopy_directory::Pipeline::standard(),
    )?;
    // The first database's root DN reads cn=Monitor, which no rule restricts.
    let root = root_ndn.map(|ndn| (ndn, Vec::new()));
    Ok(Database::read_only(backend, acl).with_settings(
        root,
        config.limits.clone(),
        true,
        databases::Subordinate::No,
        config.data_dir.join("monitor"),
    ))
}

/// Compiles the configured access list (Debian's default when none is configured).
pub fn access_list(schema: &Schema, config: &Config) -> Result<acl::Acl, StartError> {
    let ldapi_paths = config
        .listen
        .iter()
        .filter_map(|url| match ListenUrl::parse(url) {
            Ok(ListenUrl::Unix(path)) => Some(path.display().to_string()),
            _ => None,
        })
        .collect();
    acl::Acl::compile(schema, &config.access, ldapi_paths).map_err(StartError::Access)
}

/// Builds the shared state for serving.
pub fn build_state(config: Config, root_password: Vec<u8>) -> Result<State, StartError> {
    let schema = Arc::new(load_schema(&config)?);
    let (mut list, accesslog) = open_databases(&config, &schema, root_password.clone())?;
    // Indexes the store lacks are built online, stored ones no longer configured dropped
    // (docs/design/online-indexing.md).
    for db in &list {
        db.backend()
            .start_index_builds()
            .map_err(StartError::Open)?;
    }
    let root_ndn = normalize_root(&schema, &config.root_dn)?;
    // Each database's consumers (`[[syncrepl]]` for the first, `[[database.syncrepl]]` for the
    // others) feed it; a database with consumers then refers client writes to its `updateref`,
    // unless it is multi-provider (it takes its clients' writes as well as its peers' changes).
    let syncrepl = consumers::handles(&config).map_err(StartError::Invalid)?;
    for number in 1..=config.database_count() {
        let Some(view) = config.database_view(number) else {
            continue;
        };
        if view.syncrepl.is_empty() {
            continue;
        }
        if let Some(db) = list.get_mut(number - 1) {
            if !view.multiprovider {
                *db = db.clone().with_shadow(view.updateref.clone());
            }
            db.check_replica().map_err(|e| match number {
                1 => StartError::Invalid(e),
                n => StartError::Invalid(format!("database {n}: {e}")),
            })?;
        }
    }
    let tls = Some(Arc::new(tls::Tls::setup(&config)?));
    let sasl_rules = authz::Rules::compile(&config.sasl).map_err(StartError::Sasl)?;
    let backoff = backoff::Backoff::new(config.bind_backoff.clone());
    let dummy_hash = dummy_hash(&config)?;
    let op_log = oplog::OpLog::open(&config)
        .map_err(|e| StartError::OpLog(config.access_log.clone().unwrap_or_default(), e))?;
    let monitor = match config.monitor {
        true => {
            let db = open_monitor(&config, schema.clone(), Some(root_ndn.clone()))?;
            list.push(db.clone());
            Some(Arc::new(monitor::Monitor::new(db, config.root_dn.clone())))
        }
        false => None,
    };
    let mut backends = state::Backends::default();
    if monitor.is_some() {
        backends = backends.with(
            databases::Engine::Monitor,
            Arc::new(monitor_tree::MonitorBackend),
        );
    }
    let hash_gate = Arc::new(hash_gate::HashGate::new(
        config.passwords.max_parallel_hashes,
    ));
    let bind_cache = bind_cache::BindCache::new(
        config.passwords.bind_cache_secs,
        config.passwords.bind_cache_entries,
    )
    .map(Arc::new);
    Ok(Arc::new(ServerState {
        databases: Databases::new(list),
        backends,
        monitor,
        tls,
        config,
        root_ndn,
        root_password,
        connections: Default::default(),
        sasl_rules: Arc::new(sasl_rules),
        backoff: Arc::new(backoff),
        dummy_hash,
        hash_gate,
        bind_cache,
        metrics: Arc::new(metrics::Metrics::new()),
        op_log: op_log.map(Arc::new),
        syncrepl,
        accesslog: accesslog.into(),
        config_tree: None,
        live: Default::default(),
        log_control: None,
    }))
}

/// Builds the shared state for serving with the live configuration tree (`config_tree`): opens or
/// seeds `DATA/config`, runs the configuration it holds and adds cn=config to the registry.
/// `log_control` changes the log filter for `olcLogLevel` (the live level applies at once).
pub async fn build_live_state(
    config: Config,
    root_password: Vec<u8>,
    log_control: Option<state::LogControl>,
) -> Result<State, StartError> {
    let schema = Arc::new(load_schema(&config)?);
    let (tree, running, password) =
        config_tree::ConfigTree::open(&config, schema, &root_password).await?;
    let state = build_state(running.clone(), password)?;
    let db = tree
        .database(&running)
        .map_err(|r| StartError::Invalid(format!("cn=config: {}", r.message)))?;
    let mut state = Arc::try_unwrap(state)
        .map_err(|_| StartError::Invalid("the new state is shared already".into()))?;
    let mut list: Vec<Database> = state.databases.iter().cloned().collect();
    list.push(db);
    state.databases = Databases::new(list);
    state.config_tree = Some(Arc::new(tree));
    state.backends = std::mem::take(&mut state.backends).with(
        databases::Engine::Config,
        Arc::new(config_change::ConfigBackend),
    );
    if let (Some(control), Some(filter)) = (
        &log_control,
        config::log_filter(&running.log_level)
            .map_err(|e| StartError::Invalid(format!("log_level: {e}")))?,
    ) {
        control(filter).map_err(|e| StartError::Invalid(format!("log_level: {e}")))?;
    }
    state.log_control = log_control;
    Ok(Arc::new(state))
}

/// Reopens the operation log (`access_log`) and the audit logs (SIGHUP, after logrotate moved them).
pub fn reopen_logs(state: &State) -> std::io::Result<()> {
    if let Some(log) = &state.op_log {
        log.reopen()?;
    }
    canopy_directory::overlay::auditlog::reopen_all()
}

/// A hash of a random password with the configured scheme and costs.
pub(crate) fn dummy_hash(config: &Config) -> Result<Vec<u8>, StartError> {
    let scheme = canopy_password::Scheme::from_name(&config.password_hash)
        .ok_or_else(|| StartError::Sasl("password_hash: unknown scheme".into()))?;
    let password = canopy_password::generate_password();
    canopy_password::hash_with(scheme, password.as_bytes(), &config.passwords.argon2())
        .map(String::into_bytes)
        .map_err(|e| StartError::Sasl(format!("password_hash: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constraint_on_an_unknown_attribute_stops_the_database_from_opening() {
        let tmp = tempfile::tempdir().unwrap();
        let text = format!(
            "data_dir = {:?}\n[[overlay]]\nname = \"constraint\"\nconstraints = [\"mial size 10\"]\n",
            tmp.path().display()
        );
        let config = Config::parse(&text, "c.toml").unwrap();
        let err = open_directory(&config, false).err().unwrap().to_string();
        assert!(
            err.contains("constraint") && err.contains("mial size 10") && err.contains("\"mial\""),
            "{err}"
        );
    }

    /// The retcode overlay's answers (`retcode.rs`) for a database with it, through `Databases::answer` as the connection
    /// asks for them.
    #[test]
    fn retcode_answers_in_the_databases_place() {
        use crate::retcode::{Retcode, RetcodeHook};
        use canopy_proto::{CompareRequest, DerefAliases, Filter, ProtocolOp, SearchRequest};
        use canopy_proto::{ResultCode, SearchScope};
        use std::sync::Arc;
        let tmp = tempfile::tempdir().unwrap();
        let text = format!(
            "suffix = \"dc=example,dc=com\"\ndata_dir = {:?}\n",
            tmp.path().display()
        );
        let config = Config::parse(&text, "c.toml").unwrap();
        let retcode = Retcode::from_options(
            &r#"
parent = "ou=RetCodes,dc=example,dc=com"
item = [
  '"cn=timelimitExceeded" 0x03 op=search',
  '"cn=unwillingToPerform" 0x35 text="no way" matched="dc=example,dc=com"',
  '"cn=success w/ delay" 0x00 sleeptime=2',
  '"cn=referral" 0x0a',
  '"cn=elsewhere" 0x0a ref="ldap://b.example.net/"',
]
"#
            .parse::<toml::Table>()
            .unwrap(),
        )
        .unwrap();
        let db = crate::open_directory(&config, false)
            .unwrap()
            .with_front_hooks(vec![Arc::new(RetcodeHook(retcode))]);
        let databases = crate::databases::Databases::new(vec![db]);
        let search = |base: &str, scope: SearchScope| {
            ProtocolOp::SearchRequest(SearchRequest {
                base: base.as_bytes().to_vec(),
                scope,
                deref: DerefAliases::Never,
                size_limit: 0,
                time_limit: 0,
                types_only: false,
                filter: Filter::parse("(objectClass=*)").unwrap(),
                attributes: Vec::new(),
            })
        };
        let compare = |dn: &str| {
            ProtocolOp::CompareRequest(CompareRequest {
                dn: dn.as_bytes().to_vec(),
                attr: "cn".into(),
                value: b"x".to_vec(),
            })
        };
        let under = |rdn: &str| format!("{rdn},ou=RetCodes,dc=example,dc=com");
        let result = |op: &ProtocolOp, referral: Option<&str>| {
            databases
                .answer(op, referral)
                .map(|a| (a.delay.as_secs(), a.result.unwrap()))
        };
        let base = SearchScope::BaseObject;

        let (delay, r) = result(&search(&under("cn=timelimitExceeded"), base), None).unwrap();
        assert_eq!((delay, r.code), (0, ResultCode::TimeLimitExceeded));
        // op=search: a compare goes on to the database.
        assert!(databases
            .answer(&compare(&under("cn=timelimitExceeded")), None)
            .is_none());
        let delete = ProtocolOp::DelRequest(under("cn=unwillingToPerform").into_bytes());
        let (_, r) = result(&delete, None).unwrap();
        assert_eq!(r.code, ResultCode::UnwillingToPerform);
        assert_eq!(
            (r.message.as_str(), r.matched_dn.as_slice()),
            ("no way", &b"dc=example,dc=com"[..])
        );
        let (delay, r) = result(&compare(&under("cn=Success w/ Delay")), None).unwrap();
        assert_eq!((delay, r.code), (2, ResultCode::Success));
        // Unknown items and deeper names: noSuchObject, matched at the parent.
        for dn in [under("cn=nothing"), under("cn=x,cn=referral")] {
            let (_, r) = result(&compare(&dn), None).unwrap();
            assert_eq!(r.code, ResultCode::NoSuchObject, "{dn}");
            assert_eq!(r.matched_dn, b"ou=RetCodes,dc=example,dc=com", "{dn}");
        }
        // Referrals: the item's, else the default one, naming the target.
        let (_, r) = result(&compare(&under("cn=elsewhere")), None).unwrap();
        assert_eq!(r.code, ResultCode::Referral);
        assert_eq!(
            r.referral,
            ["ldap://b.example.net/cn=elsewhere,ou=RetCodes,dc=example,dc=com"]
        );
        let (_, r) = result(
            &compare(&under("cn=referral")),
            Some("ldap://a.example.net"),
        )
        .unwrap();
        assert_eq!(r.code, ResultCode::Referral);
        assert!(
            r.referral[0].starts_with("ldap://a.example.net/"),
            "{:?}",
            r.referral
        );
        let (_, r) = result(&compare(&under("cn=referral")), None).unwrap();
        assert_eq!(
            (r.code, r.message.as_str()),
            (ResultCode::Other, "bad referral object")
        );
        // Outside the parent, and a subtree search of the parent: the database answers.
        assert!(databases
            .answer(&compare("dc=example,dc=com"), None)
            .is_none());
        let subtree = search("ou=RetCodes,dc=example,dc=com", SearchScope::WholeSubtree);
        assert!(databases.answer(&subtree, None).is_none());
    }
}
