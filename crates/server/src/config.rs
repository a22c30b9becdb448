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
    /// Scheme for passwords set through the Password Modify operation.
    pub password_hash: String,
    /// Fsync every commit (LMDB's default). Turning it off trades durability for speed.
    pub durable: bool,
    /// Access rules in OpenLDAP's `to <what> by <who> <access>` language, first match wins
    /// (docs/access-control.md). Empty: Debian's default list.
    pub access: Vec<String>,
}

/// One index line: `{ attr = "cn", kinds = ["eq", "sub"] }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub attr: String,
    pub kinds: Vec<String>,
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
            password_hash: "{SSHA}".to_string(),
            durable: true,
            access: Vec::new(),
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
