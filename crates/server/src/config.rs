//! The configuration: a small TOML file (docs/configuration.md) with embedded defaults for every setting.

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::authz::{AuthzRegexp, ProxyRule, Sasl};
pub use crate::backoff::BindBackoff;
pub use crate::dbconfig::{default_indexes, DatabaseConfig, DatabaseLimits, IndexConfig};
pub use crate::limits::{LimitRule, LimitValue, Limits};
pub use crate::overlays::OverlayConfig;
use canopy_proto::url::percent_decode;

/// Everything `canopy` needs to run. Every field has a default, so an empty file is a valid configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Listener URLs: `ldap://HOST:PORT` or `ldapi://PATH` (percent-encoded path).
    pub listen: Vec<String>,
    /// The LMDB data directory, created on first start.
    pub data_dir: PathBuf,
    /// The naming context this server holds.
    pub suffix: String,
    /// The root DN: not subject to access control or limits.
    pub root_dn: String,
    /// The root DN's password, cleartext or a `{SCHEME}` hash. When absent, `CANOPY_ROOTPW` is used; when that
    /// is absent too, `serve` generates one and prints it once.
    pub root_password: Option<String>,
    /// Attributes to index and the kinds of index each gets.
    pub indexes: Vec<IndexConfig>,
    /// The built-in schema files the configuration names, as slapd's `include` of `core.schema`,
    /// `cosine.schema`, ... (`core`, `cosine`, `inetorgperson`, `nis`, `dyngroup`): each is listed as
    /// a `cn={N}NAME,cn=schema,cn=config` child, numbered before `schema_files`. Every built-in file
    /// is loaded whether it is named or not.
    pub builtin_schema: Vec<String>,
    /// Extra schema files (OpenLDAP `.schema` or `.ldif`), loaded after the built-in schema in order.
    pub schema_files: Vec<PathBuf>,
    /// Schema of its own: `[[schema]]` tables (a `cn={N}name,cn=schema,cn=config` child each, numbered
    /// after `schema_files`), loaded after the schema files in order. A schema added live over LDAP
    /// becomes one more table (`canopy config export` writes it out).
    pub schema: Vec<SchemaConfig>,
    pub limits: Limits,
    /// Scheme for cleartext passwords written by add, modify and Password Modify.
    pub password_hash: String,
    /// Hashing costs and password storage options (docs/authentication.md).
    pub passwords: Passwords,
    /// SASL name mapping and proxy authorization rules.
    pub sasl: Sasl,
    /// Delays for repeated failed binds.
    pub bind_backoff: BindBackoff,
    /// Fsync every commit (LMDB's default). Turning it off trades durability for speed.
    pub durable: bool,
    pub tls: TlsConfig,
    /// Access rules in OpenLDAP's `to <what> by <who> <access>` language, first match wins
    /// (docs/access-control.md). Empty: Debian's default list.
    pub access: Vec<String>,
    /// Overlays in the order they apply: `[[overlay]]` tables with slapd's names and options
    /// (docs/overlays.md).
    pub overlay: Vec<OverlayConfig>,
    /// `HOST:PORT` of the Prometheus `/metrics` listener; off when absent (docs/operations.md).
    pub metrics_listen: Option<String>,
    /// The access log, one line per completed operation: `"stderr"` or a file path; off when absent.
    pub access_log: Option<String>,
    /// The access log's line format.
    pub log_format: LogFormat,
    /// Serve the `cn=Monitor` database (readable by the root DN and the ldapi root peer only, unless
    /// `monitor_access` says otherwise).
    pub monitor: bool,
    /// Access rules of cn=Monitor, in the language of `access` (slapd's `access` lines of `database
    /// monitor`, followed by the frontend's). Empty: the root DN and the ldapi root peer only. The first
    /// database's root DN reads it whatever they say.
    pub monitor_access: Vec<String>,
    /// The first database refuses client writes (slapd's `readonly on`).
    pub read_only: bool,
    /// More databases: `[[database]]` tables, numbered 2, 3, ... (`dbconfig.rs`).
    pub database: Vec<DatabaseConfig>,
    /// In the view of one database (`Config::database_view`), the whole configuration it was cut
    /// from: the schema is one for all databases.
    #[serde(skip)]
    #[doc(hidden)]
    pub whole: Option<std::sync::Arc<Config>>,
    /// This server's ID (slapd's `serverID`, 0–4095): the `sid` field of the CSNs its writes make
    /// (docs/replication.md).
    pub server_id: u16,
    /// Deletes and renames the replication session log keeps (slapd's `syncprov-sessionlog`); a consumer
    /// whose cookie is older than the log refreshes through the present phase. 0 turns the log off.
    pub syncprov_sessionlog: u64,
    /// syncrepl consumers of the first database: `[[syncrepl]]` tables with slapd's keywords
    /// (docs/replication.md); another database's are its `[[database.syncrepl]]` tables.
    pub syncrepl: Vec<crate::syncrepl::SyncreplConfig>,
    /// The referral a consumer database answers client writes with (slapd's `updateref`).
    pub updateref: Option<String>,
    /// The referral for names outside every naming context (slapd's `referral`): an LDAP URL, to which
    /// the target DN is added when it names none; none: noSuchObject (32), and for an add
    /// unwillingToPerform (53), as slapd without one.
    pub referral: Option<String>,
    /// The root DN of the cn=config database (`olcRootDN` of `olcDatabase={0}config`); none: only
    /// `config_access` decides who reads and changes cn=config (docs/configuration.md).
    pub config_root_dn: Option<String>,
    /// Its password, cleartext or a `{SCHEME}` hash.
    pub config_root_password: Option<String>,
    /// The access rules of cn=config; empty: root over ldapi manages it, nobody else sees it.
    pub config_access: Vec<String>,
    /// The server log's verbosity in slapd's `loglevel` words (`olcLogLevel`: `none`, `stats`, `acl`,
    /// `trace`, `any`, numbers, ...); empty: `CANOPY_LOG`, else `info` (docs/configuration.md).
    pub log_level: Vec<String>,
    /// slapd's modules loaded (`moduleload`, `olcModuleLoad` of `cn=module{0},cn=config`): each one
    /// Canopy has built in (`memberof.la`, `refint.la`, `back_mdb.la`, ...), recorded; a module that
    /// holds an overlay defines that overlay's schema, as it does in slapd. One `[[modules]]` table
    /// per `cn=module{N},cn=config` entry.
    pub modules: Vec<ModuleList>,
    /// Multi-provider replication (slapd's `multiprovider on`, formerly `mirrormode on`): a database
    /// with `[[syncrepl]]` consumers still accepts client writes; needs a non-zero `server_id`
    /// (docs/replication.md).
    pub multiprovider: bool,
    /// An age bound for the multi-provider conflict records (tombstones, renamed DNs): `"AGE
    /// INTERVAL"`, two `[DD+]HH:MM[:SS]` durations as the accesslog's `logpurge`; every INTERVAL the
    /// records older than AGE are deleted. None: kept for the life of the database. A peer cut off
    /// longer than AGE must be reinitialized by a full refresh (docs/replication.md).
    pub tombstone_purge: Option<String>,
    /// The file leaves the first database to Canopy's default (it sets no `suffix`): as slapd started
    /// from a configuration without a data database, a live add of `olcDatabase={1}mdb,cn=config`
    /// takes its place while it holds no entry (docs/design/config-tree.md, "Adding a database").
    #[serde(skip)]
    pub default_database: bool,
    /// The first database's LMDB directory when it is not `data_dir`: relative to `data_dir`, or
    /// absolute. The `olcDbDirectory` of a first database added live over the default one is here
    /// in the live configuration, and `canopy config export` writes it (with `suffix`), so that the
    /// exported file reopens that database (docs/operations.md).
    pub directory: Option<PathBuf>,
    /// A first database was added live over the default one (`DATA/config/first-database` records
    /// it): the live configuration's `olcDatabase={1}mdb` names its suffix and directory.
    #[serde(skip)]
    pub first_added: bool,
}

/// A `[[modules]]` table: slapd's `cn=module{N},cn=config` (`olcModulePath`, `olcModuleLoad`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModuleList {
    /// slapd's `modulepath`: recorded only (Canopy's modules are built in).
    pub path: Option<String>,
    /// The modules loaded, by slapd's file names (`memberof.la`).
    pub load: Vec<String>,
}

/// A `[[schema]]` table: a named set of attribute types and object classes in RFC 4512 form, as the
/// values of `olcAttributeTypes` and `olcObjectClasses` (without their `{N}` positions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchemaConfig {
    pub name: String,
    /// OID macros (`olcObjectIdentifier`: `NAME OID` or `NAME OTHER:SUFFIX`) the definitions use.
    pub object_identifiers: Vec<String>,
    pub attribute_types: Vec<String>,
    pub object_classes: Vec<String>,
}

/// `log_format`: slapd's `conn=N op=M` text lines or one JSON object per line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The `[tls]` section (docs/tls.md). Without `cert_file`/`key_file` a self-signed certificate is generated in
/// the data directory, so StartTLS and `ldaps://` always work.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    /// The server certificate chain (PEM), leaf first.
    pub cert_file: Option<PathBuf>,
    /// The server's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// CA certificates (PEM) that verify client certificates.
    pub ca_file: Option<PathBuf>,
    /// Whether client certificates are asked for and required (OpenLDAP `TLSVerifyClient`).
    pub verify_client: VerifyClient,
    /// Where simple binds with a password and password changes are refused (confidentialityRequired).
    pub require_protected_passwords: PasswordProtection,
    /// Seconds a TLS handshake may take before the connection is dropped.
    pub handshake_timeout: u64,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            cert_file: None,
            key_file: None,
            ca_file: None,
            verify_client: VerifyClient::Never,
            require_protected_passwords: PasswordProtection::NonLoopback,
            handshake_timeout: 10,
        }
    }
}

/// OpenLDAP's `TLSVerifyClient` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyClient {
    /// No client certificate is asked for.
    Never,
    /// Asked for; a missing or unverifiable one is ignored.
    Allow,
    /// Asked for; a missing one is fine, an unverifiable one ends the handshake.
    Try,
    /// Required and verified (`hard` is the same).
    #[serde(alias = "hard")]
    Demand,
}

/// Which links count as safe for passwords.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PasswordProtection {
    /// TLS, ldapi and loopback TCP are fine; other plain TCP is refused.
    NonLoopback,
    /// Only TLS and ldapi.
    Always,
    /// Passwords are accepted on every link.
    Never,
}

/// How passwords are stored: `[passwords]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Passwords {
    /// Argon2id memory cost in KiB.
    pub argon2_memory_kib: u32,
    /// Argon2id passes.
    pub argon2_iterations: u32,
    /// Argon2id lanes.
    pub argon2_parallelism: u32,
    /// PBKDF2 iterations of the SCRAM secrets stored in authPassword.
    pub scram_iterations: u32,
    /// After a successful simple bind against a value in another scheme, store it in `password_hash`.
    pub rehash_on_bind: bool,
    /// Most slow password checks and hashes (Argon2id, PBKDF2, crypt) running at once (0: one per
    /// core): each holds its memory cost and a core (crate::hash_gate).
    pub max_parallel_hashes: usize,
    /// Seconds a verified bind password is remembered (as a keyed digest, in memory) so that the same
    /// DN binding again with it skips the slow hash; 0: off (crate::bind_cache).
    pub bind_cache_secs: u64,
    /// Most DNs remembered.
    pub bind_cache_entries: usize,
    /// saslauthd's socket, asked about `{SASL}user@realm` passwords (crate::saslauthd); Cyrus SASL's
    /// default path.
    pub saslauthd_socket: PathBuf,
}

impl Default for Passwords {
    fn default() -> Self {
        Passwords {
            argon2_memory_kib: canopy_password::ARGON2_MEMORY_KIB,
            argon2_iterations: canopy_password::ARGON2_ITERATIONS,
            argon2_parallelism: canopy_password::ARGON2_PARALLELISM,
            scram_iterations: canopy_password::scram::SCRAM_ITERATIONS,
            rehash_on_bind: false,
            max_parallel_hashes: 0,
            bind_cache_secs: 0,
            bind_cache_entries: 10_000,
            saslauthd_socket: PathBuf::from("/var/run/saslauthd/mux"),
        }
    }
}

impl Passwords {
    pub fn argon2(&self) -> canopy_password::Argon2Params {
        canopy_password::Argon2Params {
            memory_kib: self.argon2_memory_kib,
            iterations: self.argon2_iterations,
            parallelism: self.argon2_parallelism,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec!["ldap://127.0.0.1:3389".to_string()],
            data_dir: PathBuf::from("canopy-data"),
            suffix: "dc=example,dc=com".to_string(),
            root_dn: "cn=admin,dc=example,dc=com".to_string(),
            root_password: None,
            indexes: default_indexes(),
            builtin_schema: Vec::new(),
            schema_files: Vec::new(),
            schema: Vec::new(),
            limits: Limits::default(),
            password_hash: "{ARGON2}".to_string(),
            passwords: Passwords::default(),
            sasl: Sasl::default(),
            bind_backoff: BindBackoff::default(),
            durable: true,
            tls: TlsConfig::default(),
            access: Vec::new(),
            overlay: Vec::new(),
            metrics_listen: None,
            access_log: None,
            log_format: LogFormat::Text,
            monitor: true,
            monitor_access: Vec::new(),
            read_only: false,
            database: Vec::new(),
            whole: None,
            server_id: 0,
            syncprov_sessionlog: canopy_directory::syncprov::DEFAULT_SESSIONLOG,
            modules: Vec::new(),
            syncrepl: Vec::new(),
            updateref: None,
            referral: None,
            config_root_dn: None,
            config_root_password: None,
            config_access: Vec::new(),
            log_level: Vec::new(),
            multiprovider: false,
            tombstone_purge: None,
            default_database: false,
            directory: None,
            first_added: false,
        }
    }
}

/// A configuration problem, with the file and line when it came from a file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Semantic { path: String, message: String },
}

impl Config {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parses configuration text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(0);
            ConfigError::Invalid {
                path: origin.to_string(),
                line,
                message: e.message().to_string(),
            }
        })?;
        config.default_database =
            toml::from_str::<toml::Table>(text).is_ok_and(|table| !table.contains_key("suffix"));
        config.check().map_err(|message| ConfigError::Semantic {
            path: origin.to_string(),
            message,
        })?;
        crate::dbconfig::check(
            &config.suffix,
            &config.database_directory(1),
            &config.data_dir,
            &config.database,
        )
        .map_err(|e| match e.table {
            Some(table) => ConfigError::Invalid {
                path: origin.to_string(),
                line: crate::dbconfig::table_line(text, table),
                message: format!("[[database]] {}: {}", table + 2, e.message),
            },
            None => ConfigError::Semantic {
                path: origin.to_string(),
                message: e.message,
            },
        })?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        if self.server_id > canopy_proto::sync::SID_MAX {
            return Err(format!(
                "server_id: {} is above 4095 (slapd's serverID range)",
                self.server_id
            ));
        }
        for url in &self.listen {
            ListenUrl::parse(url)?;
        }
        if let Some(addr) = &self.metrics_listen {
            addr.parse::<std::net::SocketAddr>().map_err(|_| {
                format!(
                    "metrics_listen: {addr:?} is not an address and port (e.g. \"127.0.0.1:9389\")"
                )
            })?;
        }
        if self.access_log.as_deref() == Some("") {
            return Err("access_log: empty (use \"stderr\" or a file path)".into());
        }
        for index in &self.indexes {
            crate::dbconfig::check_index(index)?;
        }
        if self.limits.max_filter_depth > crate::limits::MAX_FILTER_DEPTH {
            return Err(format!(
                "limits.max_filter_depth: {} is deeper than the supported {}",
                self.limits.max_filter_depth,
                crate::limits::MAX_FILTER_DEPTH
            ));
        }
        crate::limits::check_rules(&self.limits.rules)?;
        if let Some(dir) = &self.directory {
            crate::dbconfig::check_directory(dir)?;
        }
        self.tls.check()?;
        crate::overlays::check(&self.overlay)?;
        if let Some(module) = self
            .modules
            .iter()
            .flat_map(|m| &m.load)
            .find(|m| crate::overlays::module_overlay(m).is_none())
        {
            return Err(format!(
                "modules: {module:?} is not a module Canopy has built in (overlays: {}; back_mdb)",
                crate::overlays::KNOWN.join(", ")
            ));
        }
        if canopy_password::Scheme::from_name(&self.password_hash).is_none() {
            return Err(format!(
                "password_hash: unknown scheme {:?}",
                self.password_hash
            ));
        }
        self.passwords
            .argon2()
            .check()
            .map_err(|e| format!("[passwords] argon2: {e}"))?;
        let scram = self.passwords.scram_iterations;
        if !(canopy_password::scram::MIN_SCRAM_ITERATIONS
            ..=canopy_password::scram::MAX_SCRAM_ITERATIONS)
            .contains(&scram)
        {
            return Err(format!(
                "[passwords] scram_iterations: {scram} is outside 4096..=1000000"
            ));
        }
        crate::authz::Rules::compile(&self.sasl)?;
        for (i, name) in self.builtin_schema.iter().enumerate() {
            if !canopy_schema::BUILTIN_FILES.contains(&name.as_str()) {
                return Err(format!(
                    "builtin_schema: {name:?} is not a built-in schema file (one of {})",
                    canopy_schema::BUILTIN_FILES.join(", ")
                ));
            }
            if self.builtin_schema[..i].contains(name) {
                return Err(format!("builtin_schema: {name:?} is named twice"));
            }
        }
        log_filter(&self.log_level).map_err(|e| format!("log_level: {e}"))?;
        crate::dbconfig::check_consumers(&self.syncrepl, self.updateref.as_deref(), &self.suffix)?;
        if let Some(url) = &self.referral {
            if !(url.starts_with("ldap://") || url.starts_with("ldaps://")) {
                return Err(format!(
                    "referral: {url:?} is not an ldap:// or ldaps:// URL"
                ));
            }
        }
        let multiprovider = self.multiprovider || self.database.iter().any(|db| db.multiprovider);
        if multiprovider && self.server_id == 0 {
            return Err(
                "multiprovider = true needs a server_id of 1-4095, distinct on every server of the group"
                    .to_string(),
            );
        }
        if self.tombstone_purge.is_some() {
            if !multiprovider {
                return Err(
                    "tombstone_purge: only a multiprovider = true database keeps tombstones".into(),
                );
            }
            self.tombstone_purge()?;
        }
        Ok(())
    }

    /// `tombstone_purge` as (age, interval), None when not set.
    pub fn tombstone_purge(
        &self,
    ) -> Result<Option<(std::time::Duration, std::time::Duration)>, String> {
        let Some(text) = &self.tombstone_purge else {
            return Ok(None);
        };
        let bad = || {
            format!(
                "tombstone_purge {text:?}: expected an age and an interval, e.g. \"180+00:00 01+00:00\""
            )
        };
        let mut words = text.split_whitespace();
        let (Some(age), Some(interval), None) = (words.next(), words.next(), words.next()) else {
            return Err(bad());
        };
        let parse = |t: &str| {
            canopy_directory::overlay::accesslog::parse_age(t)
                .map_err(|e| format!("tombstone_purge: {e}"))
        };
        let (age, interval) = (parse(age)?, parse(interval)?);
        if interval.is_zero() {
            return Err(format!("{}: the interval must not be zero", bad()));
        }
        Ok(Some((age, interval)))
    }
}

impl TlsConfig {
    fn check(&self) -> Result<(), String> {
        if self.cert_file.is_some() != self.key_file.is_some() {
            return Err("tls: cert_file and key_file go together".to_string());
        }
        if self.verify_client != VerifyClient::Never && self.ca_file.is_none() {
            return Err("tls: verify_client other than \"never\" needs ca_file".to_string());
        }
        if self.handshake_timeout == 0 {
            return Err("tls: handshake_timeout must be at least 1 second".to_string());
        }
        Ok(())
    }
}

/// A parsed listener URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenUrl {
    Tcp(String),
    /// `ldaps://`: TLS from the first byte.
    Tls(String),
    Unix(PathBuf),
}

impl ListenUrl {
    pub fn parse(url: &str) -> Result<ListenUrl, String> {
        let lower = url.to_ascii_lowercase();
        if lower.starts_with("ldaps://") {
            let host_port = url[8..].trim_end_matches('/');
            return Ok(ListenUrl::Tls(with_port(host_port, 636)));
        }
        if let Some(rest) = lower.strip_prefix("ldap://").map(|_| &url[7..]) {
            let host_port = rest.trim_end_matches('/');
            Ok(ListenUrl::Tcp(with_port(host_port, 389)))
        } else if lower.starts_with("ldapi://") {
            let encoded = url[8..].trim_end_matches('/');
            if encoded.is_empty() {
                return Err(format!("listener {url:?}: ldapi:// needs a socket path"));
            }
            Ok(ListenUrl::Unix(PathBuf::from(percent_decode(encoded)?)))
        } else {
            Err(format!(
                "listener {url:?}: expected ldap://HOST:PORT, ldaps://HOST:PORT or ldapi://PATH"
            ))
        }
    }
}

/// `HOST:PORT` with the scheme's default port added when none is given; an empty host listens everywhere.
fn with_port(host_port: &str, default_port: u16) -> String {
    if host_port.is_empty() {
        return format!("0.0.0.0:{default_port}");
    }
    if host_port
        .rsplit_once(':')
        .is_none_or(|(_, p)| p.parse::<u16>().is_err())
    {
        return format!("{host_port}:{default_port}");
    }
    host_port.to_string()
}

/// The tracing filter for slapd's `loglevel` words and numbers, the most verbose of them: `none` (0)
/// keeps warnings and errors; `stats`, `stats2`, `conns`, `acl`, `filter`, `config`, `sync`, `parse`,
/// `shell` (and their bits) give `info`; `trace`, `packets`, `args`, `BER` give `debug`; `any` (-1)
/// gives `trace`. None for an empty list (the binary's `CANOPY_LOG` or `info` then).
pub fn log_filter(levels: &[String]) -> Result<Option<&'static str>, String> {
    const NAMES: [(&str, i64); 15] = [
        ("trace", 1),
        ("packets", 2),
        ("args", 4),
        ("conns", 8),
        ("ber", 16),
        ("filter", 32),
        ("config", 64),
        ("acl", 128),
        ("stats", 256),
        ("stats2", 512),
        ("shell", 1024),
        ("parse", 2048),
        ("sync", 16384),
        ("none", 0),
        ("any", -1),
    ];
    let mut rank = None;
    for word in levels.iter().flat_map(|v| v.split_whitespace()) {
        let bits = match NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(word)) {
            Some((_, bits)) => *bits,
            None => match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
                Some(hex) => i64::from_str_radix(hex, 16),
                None => word.parse::<i64>(),
            }
            .map_err(|_| format!("unknown level \"{word}\""))?,
        };
        let this = match bits {
            -1 => 3,
            0 => 0,
            b if b & (1 | 2 | 4 | 16) != 0 => 2,
            _ => 1,
        };
        rank = rank.max(Some(this));
    }
    Ok(rank.map(|r| ["warn", "info", "debug", "trace"][r]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let c = Config::parse("", "t").unwrap();
        assert_eq!(c.suffix, "dc=example,dc=com");
        assert_eq!(c.limits.size_limit, 500);
    }

    #[test]
    fn tombstone_purge_is_checked() {
        let ok = Config::parse(
            "multiprovider = true\nserver_id = 1\ntombstone_purge = \"30+00:00 01+00:00\"\n",
            "t",
        )
        .unwrap();
        let (age, interval) = ok.tombstone_purge().unwrap().unwrap();
        assert_eq!((age.as_secs(), interval.as_secs()), (30 * 86_400, 86_400));
        for (text, why) in [
            ("tombstone_purge = \"30+00:00\"\n", "an age and an interval"),
            ("tombstone_purge = \"30+00:00 00:00\"\n", "must not be zero"),
            ("tombstone_purge = \"x 01:00\"\n", "is not a duration"),
        ] {
            let text = format!("multiprovider = true\nserver_id = 1\n{text}");
            let err = Config::parse(&text, "t").unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
        let err = Config::parse("tombstone_purge = \"1+00:00 01:00\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("only a multiprovider"), "{err}");
    }

    #[test]
    fn multiprovider_needs_a_server_id() {
        let err = Config::parse("multiprovider = true\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs a server_id"), "{err}");
        let c = Config::parse("multiprovider = true\nserver_id = 3\n", "t").unwrap();
        assert!(c.multiprovider);
        assert!(!Config::parse("", "t").unwrap().multiprovider);
    }

    #[test]
    fn authentication_settings() {
        let c = Config::parse("", "t").unwrap();
        assert_eq!(c.password_hash, "{ARGON2}");
        assert_eq!(c.passwords.argon2_memory_kib, 19456);
        assert_eq!(c.passwords.scram_iterations, 4096);
        assert_eq!(c.bind_backoff.threshold, 5);
        let text = "[passwords]\nrehash_on_bind = true\n[[sasl.authz_regexp]]\n\
                    match = \"uid=(.*),cn=plain,cn=auth\"\nreplace = \"uid=$1,dc=x\"\n\
                    [[sasl.proxy]]\nfrom = \"dn:uid=a,dc=x\"\nto = \"subtree:dc=x\"\n";
        let c = Config::parse(text, "t").unwrap();
        assert!(c.passwords.rehash_on_bind);
        assert_eq!(c.sasl.authz_regexp.len(), 1);
        assert_eq!(c.sasl.proxy[0].to, "subtree:dc=x");
        let bad = |text: &str, want: &str| {
            let err = Config::parse(text, "t").unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        };
        bad("[passwords]\nscram_iterations = 100\n", "scram_iterations");
        bad("[passwords]\nargon2_memory_kib = 4\n", "argon2");
        bad(
            "[[sasl.authz_regexp]]\nmatch = \"(\"\nreplace = \"x\"\n",
            "authz_regexp",
        );
        bad(
            "[[sasl.proxy]]\nfrom = \"uid=a\"\nto = \"dn:x\"\n",
            "sasl.proxy",
        );
    }

    #[test]
    fn observability_settings() {
        let c = Config::parse("", "t").unwrap();
        assert!(c.monitor && c.metrics_listen.is_none() && c.access_log.is_none());
        assert_eq!(c.log_format, LogFormat::Text);
        let c = Config::parse(
            "metrics_listen = \"127.0.0.1:9389\"\naccess_log = \"stderr\"\nlog_format = \"json\"\nmonitor = false\n",
            "t",
        )
        .unwrap();
        assert_eq!(c.metrics_listen.as_deref(), Some("127.0.0.1:9389"));
        assert_eq!(c.log_format, LogFormat::Json);
        assert!(!c.monitor);
        let bad = |text: &str, want: &str| {
            let err = Config::parse(text, "t").unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        };
        bad("metrics_listen = \"localhost\"\n", "metrics_listen");
        bad("access_log = \"\"\n", "access_log");
        bad("log_format = \"xml\"\n", "unknown variant");
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = Config::parse("suffix = \"dc=x\"\n\nbogus = 1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml:3:"), "{err}");
        let err = Config::parse("listen = [\"http://x\"]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected ldap://"), "{err}");
    }

    #[test]
    fn limit_rules() {
        let c = Config::parse(
            "[limits]\nlookthrough_limit = 10\n[[limits.rules]]\nwho = \"group:cn=g,dc=x\"\n\
             size = \"unlimited\"\npaged_size = 5\n",
            "t",
        )
        .unwrap();
        let rule = &c.limits.rules[0];
        assert_eq!(rule.size, Some(LimitValue::Unlimited));
        assert_eq!(rule.paged_size, Some(LimitValue::Limited(5)));
        assert_eq!(rule.time, None);
        let err = Config::parse("[[limits.rules]]\nwho = \"dn.regex:x\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("dn.regex"), "{err}");
        let err = Config::parse("[[limits.rules]]\nwho = \"users\"\nsize = \"lots\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unlimited"), "{err}");
        assert!(Config::parse("[limits]\nmax_filter_depth = 5000\n", "t").is_err());
        let err = Config::parse("[[limits.rules]]\nwho = \"*\"\nsize = \"disabled\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("only to paged_total"), "{err}");
        assert!(Config::parse("[limits]\npaged_total_limit = \"disabled\"\n", "t").is_ok());
    }

    #[test]
    fn slapd_log_levels_map_to_filters() {
        let filter =
            |words: &[&str]| log_filter(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        assert_eq!(filter(&[]), Ok(None));
        assert_eq!(filter(&["none"]), Ok(Some("warn")));
        assert_eq!(filter(&["stats"]), Ok(Some("info")));
        assert_eq!(filter(&["stats acl", "256"]), Ok(Some("info")));
        assert_eq!(filter(&["none", "trace"]), Ok(Some("debug")));
        assert_eq!(filter(&["0x4"]), Ok(Some("debug")));
        assert_eq!(filter(&["-1"]), Ok(Some("trace")));
        assert_eq!(filter(&["any"]), Ok(Some("trace")));
        assert!(filter(&["chatty"]).unwrap_err().contains("chatty"));
        let err = Config::parse("log_level = [\"loud\"]\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("log_level"), "{err}");
    }

    #[test]
    fn listen_urls() {
        assert_eq!(
            ListenUrl::parse("ldap://127.0.0.1:3389/"),
            Ok(ListenUrl::Tcp("127.0.0.1:3389".into()))
        );
        assert_eq!(
            ListenUrl::parse("ldapi://%2Ftmp%2Fs"),
            Ok(ListenUrl::Unix("/tmp/s".into()))
        );
        assert!(ListenUrl::parse("ldapi://").is_err());
        assert_eq!(
            ListenUrl::parse("ldaps://127.0.0.1"),
            Ok(ListenUrl::Tls("127.0.0.1:636".into()))
        );
        assert_eq!(
            ListenUrl::parse("LDAPS://127.0.0.1:6636/"),
            Ok(ListenUrl::Tls("127.0.0.1:6636".into()))
        );
    }

    #[test]
    fn tls_section() {
        let c = Config::parse("", "t").unwrap();
        assert_eq!(c.tls.verify_client, VerifyClient::Never);
        assert_eq!(
            c.tls.require_protected_passwords,
            PasswordProtection::NonLoopback
        );
        let c = Config::parse(
            "[tls]\nca_file = \"ca.pem\"\nverify_client = \"demand\"\nrequire_protected_passwords = \"always\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(c.tls.verify_client, VerifyClient::Demand);
        assert_eq!(
            c.tls.require_protected_passwords,
            PasswordProtection::Always
        );
        let err = Config::parse("[tls]\nverify_client = \"demand\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs ca_file"), "{err}");
        let err = Config::parse("[tls]\ncert_file = \"c.pem\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("go together"), "{err}");
        let err = Config::parse("[tls]\nverify_client = \"maybe\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t:2:"), "{err}");
    }
}
