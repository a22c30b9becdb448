//! The configuration: a small TOML file (docs/configuration.md) with embedded defaults for every setting.

use std::path::{Path, PathBuf};

use serde::Deserialize;

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
    /// Extra schema files (OpenLDAP `.schema` or `.ldif`), loaded after the built-in schema in order.
    pub schema_files: Vec<PathBuf>,
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
}

/// One index line: `{ attr = "cn", kinds = ["eq", "sub"] }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub attr: String,
    pub kinds: Vec<String>,
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
}

impl Default for Passwords {
    fn default() -> Self {
        Passwords {
            argon2_memory_kib: canopy_password::ARGON2_MEMORY_KIB,
            argon2_iterations: canopy_password::ARGON2_ITERATIONS,
            argon2_parallelism: canopy_password::ARGON2_PARALLELISM,
            scram_iterations: canopy_password::scram::SCRAM_ITERATIONS,
            rehash_on_bind: false,
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

/// `[sasl]`: how SASL names become entries and who may act as whom.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sasl {
    /// Ordered rules like OpenLDAP's `authz-regexp`; the first that matches decides.
    pub authz_regexp: Vec<AuthzRegexp>,
    /// Who may use an authorization identity other than their own.
    pub proxy: Vec<ProxyRule>,
}

/// `[[sasl.authz_regexp]]`: a regular expression over `uid=NAME,cn=MECH,cn=auth` and its replacement,
/// a DN or an `ldap:///base??sub?filter` URL with `$1`.. for the groups.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthzRegexp {
    #[serde(rename = "match")]
    pub pattern: String,
    pub replace: String,
}

/// `[[sasl.proxy]]`: identities under `from` may act as identities under `to`. Each side is
/// `dn:DN` (that entry) or `subtree:DN` (the entry and all below it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyRule {
    pub from: String,
    pub to: String,
}

/// `[bind_backoff]`: after `threshold` failures within `window_secs` for one DN or one client address,
/// each further failed bind is answered after a delay doubling from `initial_ms` up to `max_ms`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BindBackoff {
    pub threshold: u32,
    pub window_secs: u64,
    pub initial_ms: u64,
    pub max_ms: u64,
    /// Most DNs and most addresses tracked (each table); the oldest entries are dropped beyond it.
    pub max_tracked: usize,
}

impl Default for BindBackoff {
    fn default() -> Self {
        BindBackoff {
            threshold: 5,
            window_secs: 300,
            initial_ms: 250,
            max_ms: 8000,
            max_tracked: 10_000,
        }
    }
}

/// Server-wide limits. Zero means "no limit" where OpenLDAP's `unlimited` would be used.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Most entries a search returns (OpenLDAP `sizelimit`, default 500).
    pub size_limit: u32,
    /// Most seconds a search runs (OpenLDAP `timelimit`, default 3600).
    pub time_limit: u32,
    /// Largest request PDU from an anonymous client (OpenLDAP `sockbuf_max_incoming`).
    pub max_pdu_anonymous: usize,
    /// Largest request PDU from a bound client (OpenLDAP `sockbuf_max_incoming_auth`).
    pub max_pdu_bound: usize,
    /// Deepest nesting of a search filter.
    pub max_filter_depth: usize,
    /// Most requests one connection may have in progress at once.
    pub max_pending_per_connection: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            size_limit: 500,
            time_limit: 3600,
            max_pdu_anonymous: 262_143,
            max_pdu_bound: 4_194_303,
            max_filter_depth: 512,
            max_pending_per_connection: 256,
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
            schema_files: Vec::new(),
            limits: Limits::default(),
            password_hash: "{ARGON2}".to_string(),
            passwords: Passwords::default(),
            sasl: Sasl::default(),
            bind_backoff: BindBackoff::default(),
            durable: true,
        }
    }
}

fn default_indexes() -> Vec<IndexConfig> {
    let index = |attr: &str, kinds: &[&str]| IndexConfig {
        attr: attr.to_string(),
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
    };
    vec![
        index("objectClass", &["eq"]),
        index("uid", &["eq", "sub"]),
        index("cn", &["eq", "sub"]),
        index("sn", &["eq", "sub"]),
        index("mail", &["eq", "sub"]),
        index("member", &["eq"]),
        index("memberUid", &["eq"]),
        index("uidNumber", &["eq"]),
        index("gidNumber", &["eq"]),
        index("entryUUID", &["eq"]),
        index("entryCSN", &["eq"]),
    ]
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
        let config: Config = toml::from_str(text).map_err(|e| {
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
        config.check().map_err(|message| ConfigError::Semantic {
            path: origin.to_string(),
            message,
        })?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        for url in &self.listen {
            ListenUrl::parse(url)?;
        }
        for index in &self.indexes {
            for kind in &index.kinds {
                if !matches!(kind.as_str(), "eq" | "pres" | "sub" | "ord" | "approx") {
                    return Err(format!(
                        "index on {}: unknown kind {kind:?} (expected eq, pres, sub, ord or approx)",
                        index.attr
                    ));
                }
            }
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
        crate::sasl::mapping::Rules::compile(&self.sasl)?;
        Ok(())
    }
}

/// A parsed listener URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenUrl {
    Tcp(String),
    Unix(PathBuf),
}

impl ListenUrl {
    pub fn parse(url: &str) -> Result<ListenUrl, String> {
        let lower = url.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("ldap://").map(|_| &url[7..]) {
            let host_port = rest.trim_end_matches('/');
            if host_port.is_empty() {
                return Ok(ListenUrl::Tcp("0.0.0.0:389".to_string()));
            }
            if host_port
                .rsplit_once(':')
                .is_none_or(|(_, p)| p.parse::<u16>().is_err())
            {
                return Ok(ListenUrl::Tcp(format!("{host_port}:389")));
            }
            Ok(ListenUrl::Tcp(host_port.to_string()))
        } else if lower.starts_with("ldapi://") {
            let encoded = url[8..].trim_end_matches('/');
            if encoded.is_empty() {
                return Err(format!("listener {url:?}: ldapi:// needs a socket path"));
            }
            Ok(ListenUrl::Unix(PathBuf::from(percent_decode(encoded)?)))
        } else {
            Err(format!(
                "listener {url:?}: expected ldap://HOST:PORT or ldapi://PATH"
            ))
        }
    }
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .ok_or_else(|| format!("bad escape in {s:?}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad escape in {s:?}"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("bad UTF-8 in {s:?}"))
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
    }
}
