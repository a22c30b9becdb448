//! The Canopy server, the LDAP frontend: listeners, connections, one module per operation, access
//! control, limits, SASL, TLS and the configuration, over the databases of `canopy-directory`.
//!
//! It owns decoding, normalising, limits, access control and encoding; everything that reads or
//! writes a database goes through `databases::Databases` (the one router by suffix) to the backend. It
//! must never open an LMDB transaction itself or store anything but through `Directory::write`.

pub mod access;
pub mod accesslog;
pub mod acl;
pub mod authz;
pub mod backoff;
pub mod completion;
pub mod config;
pub mod conn;
pub mod databases;
pub mod exporter;
pub mod filter_view;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod monitor;
pub mod monitor_tree;
pub mod ops;
pub mod overlays;
pub mod ppolicy;
pub mod readentry;
pub mod redact;
pub mod reqctl;
pub mod sasl;
pub mod security;
pub mod select;
pub mod session;
pub mod special;
pub mod state;
pub mod syncrepl;
pub mod tls;
pub mod x509name;

use std::sync::Arc;

use canopy_core::index::IndexSpec;
use canopy_directory::{Directory, OpenError};
use canopy_mdb::StoreConfig;
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
    AccessLog(String, std::io::Error),
}

/// Loads the built-in schema plus the configured schema files.
pub fn load_schema(config: &Config) -> Result<Schema, StartError> {
    let mut schema = Schema::builtin();
    // Always loaded, so that offline tools and servers with or without cn=Monitor agree on names.
    schema.load_text(monitor::schema::MONITOR_SCHEMA, "monitor schema")?;
    for text in overlays::schema(&config.overlay) {
        schema.load_text(text, "overlay schema")?;
    }
    for path in &config.schema_files {
        schema.load_file(path)?;
    }
    Ok(schema)
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
    let schema = Arc::new(load_schema(config)?);
    let specs = index_specs(&schema, config)?;
    let store_config = StoreConfig {
        path: config.data_dir.clone(),
        indexes: Vec::new(),
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
    let pipeline = overlays::pipeline(&config.overlay, &config.root_dn, &target)
        .map_err(StartError::Overlay)?;
    let dynlist = overlays::dynlist(&config.overlay, &target).map_err(StartError::Overlay)?;
    let backend = Directory::open(schema, &config.suffix, specs, store_config, pipeline)?;
    let ppolicy =
        overlays::ppolicy(&config.overlay, &config.root_dn).map_err(StartError::Overlay)?;
    Ok(Database::new(backend, acl)
        .with_dynlist(dynlist)
        .with_ppolicy(ppolicy))
}

/// Everything a start checks before it opens the database and binds its listeners, for
/// `canopy serve --check`: schema files, indexes, access rules, overlays, suffix and root DN, SASL rules,
/// the password scheme, listener URLs and TLS files. Opens no database, binds nothing, writes nothing.
pub fn check_config(config: &Config) -> Result<(), StartError> {
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
    let suffix = canopy_proto::Dn::parse(config.suffix.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|dn| schema.normalize_dn(&dn).map_err(|e| e.to_string()))
        .map_err(|e| StartError::Open(OpenError::Suffix(config.suffix.clone(), e)))?;
    pipeline
        .check(&schema, &suffix)
        .map_err(|(hook, e)| StartError::Open(OpenError::Overlay(hook, e)))?;
    canopy_proto::Dn::parse(config.root_dn.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|dn| schema.normalize_dn(&dn).map_err(|e| e.to_string()))
        .map_err(|e| StartError::RootDn(config.root_dn.clone(), e))?;
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

/// Opens the cn=Monitor database: a small store of its own in `DATA/monitor`, emptied at each start,
/// never fsynced (its content is recomputed), with its own access rules (monitor::ACCESS).
fn open_monitor(config: &Config, schema: Arc<Schema>) -> Result<Database, StartError> {
    let path = config.data_dir.join("monitor");
    for file in ["data.mdb", "lock.mdb"] {
        match std::fs::remove_file(path.join(file)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StartError::Monitor(format!("{}: {e}", path.display()))),
        }
    }
    let index = |attr: &str| IndexSpec {
        attr: attr.to_string(),
        eq: true,
        pres: false,
        sub: false,
        ord: false,
        approx: false,
    };
    let store_config = StoreConfig {
        path,
        indexes: Vec::new(),
        initial_map_size: 16 << 20,
        durable: false,
        max_readers: 1024,
        write_map: false,
    };
    let mut monitor_config = config.clone();
    monitor_config.access = vec![monitor::ACCESS.to_string()];
    let acl = access_list(&schema, &monitor_config)?;
    let backend = Directory::open(
        schema,
        monitor::SUFFIX,
        vec![index("objectClass"), index("cn")],
        store_config,
        canopy_directory::Pipeline::standard(),
    )?;
    Ok(Database::read_only(backend, acl))
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
    let syncrepl = syncrepl::handles(
        &config.syncrepl,
        config.updateref.as_deref(),
        &config.suffix,
    )
    .map_err(StartError::Invalid)?;
    let mut database = open_directory(&config, config.durable)?;
    if !syncrepl.is_empty() {
        database = database.with_shadow(config.updateref.clone());
        database.check_replica().map_err(StartError::Invalid)?;
    }
    let root_dn = canopy_proto::Dn::parse(config.root_dn.as_bytes())
        .map_err(|e| StartError::RootDn(config.root_dn.clone(), e.to_string()))?;
    let root_ndn = database
        .schema()
        .normalize_dn(&root_dn)
        .map_err(|e| StartError::RootDn(config.root_dn.clone(), e.to_string()))?;
    let tls = Some(Arc::new(tls::Tls::setup(&config)?));
    let sasl_rules = authz::Rules::compile(&config.sasl).map_err(StartError::Sasl)?;
    let backoff = backoff::Backoff::new(config.bind_backoff.clone());
    let dummy_hash = dummy_hash(&config)?;
    let access_log = accesslog::AccessLog::open(&config)
        .map_err(|e| StartError::AccessLog(config.access_log.clone().unwrap_or_default(), e))?;
    let mut list = vec![database];
    let monitor = match config.monitor {
        true => {
            let db = open_monitor(&config, list[0].schema().clone())?;
            list.push(db.clone());
            Some(monitor::Monitor::new(db, config.root_dn.clone()))
        }
        false => None,
    };
    Ok(Arc::new(ServerState {
        databases: Databases::new(list),
        monitor,
        tls,
        config,
        root_ndn,
        root_password,
        connections: Default::default(),
        sasl_rules,
        backoff,
        dummy_hash,
        metrics: Arc::new(metrics::Metrics::new()),
        access_log,
        syncrepl,
    }))
}

/// Reopens the access log and the audit logs (SIGHUP, after logrotate moved them).
pub fn reopen_logs(state: &State) -> std::io::Result<()> {
    if let Some(log) = &state.access_log {
        log.reopen()?;
    }
    canopy_directory::overlay::auditlog::reopen_all()
}

/// A hash of a random password with the configured scheme and costs.
fn dummy_hash(config: &Config) -> Result<Vec<u8>, StartError> {
    let scheme = canopy_password::Scheme::from_name(&config.password_hash)
        .ok_or_else(|| StartError::Sasl("password_hash: unknown scheme".into()))?;
    let password = canopy_password::generate_password();
    canopy_password::hash_with(scheme, password.as_bytes(), &config.passwords.argon2())
        .map(String::into_bytes)
        .map_err(|e| StartError::Sasl(format!("password_hash: {e}")))
}
