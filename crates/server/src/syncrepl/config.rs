//! `[[syncrepl]]` tables: a consumer's settings under slapd's `syncrepl` keyword names, so that an
//! administrator translates a slapd.conf line key for key (docs/configuration.md), and the checked form
//! the consumer runs from.

use std::path::PathBuf;
use std::time::Duration;

use canopy_proto::sync::{SyncMode, RID_MAX};
use canopy_proto::{Filter, SearchScope};
use serde::Deserialize;

/// One `[[syncrepl]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncreplConfig {
    /// The replica ID, 0 to 999, unique per server (slapd's `rid`).
    pub rid: u16,
    /// `ldap://HOST[:PORT]` or `ldaps://HOST[:PORT]`.
    pub provider: String,
    /// The base of the replicated content; the database's suffix when absent.
    pub searchbase: Option<String>,
    #[serde(default = "default_scope")]
    pub scope: String,
    #[serde(default = "default_filter")]
    pub filter: String,
    /// Attribute list, comma-separated as slapd writes it.
    #[serde(default = "default_attrs")]
    pub attrs: String,
    #[serde(rename = "type", default = "default_type")]
    pub kind: String,
    /// refreshOnly's polling interval, `dd:hh:mm:ss` (or plain seconds).
    #[serde(default = "default_interval")]
    pub interval: String,
    #[serde(default = "default_bindmethod")]
    pub bindmethod: String,
    pub binddn: Option<String>,
    pub credentials: Option<String>,
    pub saslmech: Option<String>,
    pub authcid: Option<String>,
    pub authzid: Option<String>,
    /// `"no"` (default), `"yes"` (try, go on in the clear when refused) or `"critical"`.
    #[serde(default = "default_starttls")]
    pub starttls: String,
    /// slapd's retry schedule: pairs of seconds and count, `+` for ever: `"5 10 60 +"`.
    #[serde(default = "default_retry")]
    pub retry: String,
    pub tls_cacert: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// `"demand"` (default): the provider's certificate must verify against `tls_cacert`; `"never"`:
    /// not checked (tests only).
    #[serde(default = "default_reqcert")]
    pub tls_reqcert: String,
    /// Seconds a bind, StartTLS or search answer may take (0: no limit). Refresh results stream
    /// without this limit once entries flow.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// Seconds a TCP connect and TLS handshake may take.
    #[serde(rename = "network-timeout", default = "default_network_timeout")]
    pub network_timeout: u64,
    /// delta-syncrepl (slapd's `syncdata`): `"default"` replicates entries; `"accesslog"` follows the
    /// provider's access log at `logbase`, records chosen by `logfilter` (crate::syncrepl::delta).
    pub syncdata: Option<String>,
    pub logbase: Option<String>,
    pub logfilter: Option<String>,
}

fn default_scope() -> String {
    "sub".into()
}
fn default_filter() -> String {
    "(objectClass=*)".into()
}
fn default_attrs() -> String {
    "*,+".into()
}
fn default_type() -> String {
    "refreshOnly".into()
}
fn default_interval() -> String {
    "01:00:00:00".into()
}
fn default_bindmethod() -> String {
    "simple".into()
}
fn default_starttls() -> String {
    "no".into()
}
fn default_retry() -> String {
    "60 +".into()
}
fn default_reqcert() -> String {
    "demand".into()
}
fn default_timeout() -> u64 {
    30
}
fn default_network_timeout() -> u64 {
    10
}

/// How the consumer reaches its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Plain,
    Ldaps,
    /// StartTLS; `critical` refuses to go on in the clear when the provider refuses it.
    StartTls {
        critical: bool,
    },
}

/// How the consumer binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindMethod {
    /// A simple bind (anonymous when `dn` is empty).
    Simple { dn: String, password: String },
    /// SASL EXTERNAL: the TLS client certificate (`tls_cert`/`tls_key`) is the identity.
    External { authzid: Option<String> },
    /// SASL PLAIN with `authcid` (or `binddn`), `credentials` and an optional `authzid`.
    Plain {
        authcid: String,
        authzid: Option<String>,
        password: String,
    },
}

/// One retry step: wait `delay`, `count` times (None: for ever).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryStep {
    pub delay: Duration,
    pub count: Option<u32>,
}

/// A checked `[[syncrepl]]` table.
#[derive(Debug, Clone)]
pub struct Consumer {
    pub rid: u16,
    pub provider: String,
    pub host: String,
    pub port: u16,
    pub transport: Transport,
    /// The search base as configured (the suffix when absent).
    pub searchbase: String,
    pub scope: SearchScope,
    pub filter: Filter,
    pub attrs: Vec<String>,
    pub mode: SyncMode,
    pub interval: Duration,
    pub bind: BindMethod,
    pub retry: Vec<RetryStep>,
    pub tls_cacert: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub verify_provider: bool,
    pub timeout: Option<Duration>,
    pub network_timeout: Duration,
    /// `syncdata = "accesslog"`: the log to follow.
    pub delta: Option<super::delta::Log>,
}

impl SyncreplConfig {
    /// Checks the table; `suffix` is the database's, the default search base.
    pub fn compile(&self, suffix: &str) -> Result<Consumer, String> {
        let at = |what: String| format!("syncrepl rid={}: {what}", self.rid);
        if self.rid > RID_MAX {
            return Err(at(format!("rid {} is not 0 to {RID_MAX}", self.rid)));
        }
        let (transport, rest) = if let Some(rest) = self.provider.strip_prefix("ldaps://") {
            (Transport::Ldaps, rest)
        } else if let Some(rest) = self.provider.strip_prefix("ldap://") {
            (Transport::Plain, rest)
        } else {
            return Err(at(format!(
                "provider {:?}: expected ldap://HOST[:PORT] or ldaps://HOST[:PORT]",
                self.provider
            )));
        };
        let hostport = rest.trim_end_matches('/');
        if hostport.is_empty() || hostport.contains('/') || hostport.contains('?') {
            return Err(at(format!(
                "provider {:?}: expected ldap://HOST[:PORT] with no DN or options",
                self.provider
            )));
        }
        let default_port = if transport == Transport::Ldaps {
            636
        } else {
            389
        };
        let (host, port) = split_host_port(hostport, default_port)
            .ok_or_else(|| at(format!("provider {:?}: bad port", self.provider)))?;
        let transport = match (self.starttls.as_str(), transport) {
            ("no", t) => t,
            ("yes" | "critical", Transport::Ldaps) => {
                return Err(at(
                    "starttls makes no sense with an ldaps:// provider".into()
                ))
            }
            ("yes", _) => Transport::StartTls { critical: false },
            ("critical", _) => Transport::StartTls { critical: true },
            (other, _) => {
                return Err(at(format!(
                    "starttls {other:?}: expected \"no\", \"yes\" or \"critical\""
                )))
            }
        };
        let scope = match self.scope.as_str() {
            "sub" | "subtree" => SearchScope::WholeSubtree,
            "one" | "onelevel" => SearchScope::SingleLevel,
            "base" => SearchScope::BaseObject,
            "subord" | "children" => SearchScope::SubordinateSubtree,
            other => {
                return Err(at(format!(
                    "scope {other:?}: expected sub, one, base or subord"
                )))
            }
        };
        let filter = Filter::parse(&self.filter)
            .map_err(|e| at(format!("filter {:?}: {e}", self.filter)))?;
        let attrs: Vec<String> = self
            .attrs
            .split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if attrs.is_empty() {
            return Err(at("attrs is empty (slapd's default is \"*,+\")".into()));
        }
        let mode = match self.kind.as_str() {
            "refreshOnly" => SyncMode::RefreshOnly,
            "refreshAndPersist" => SyncMode::RefreshAndPersist,
            other => {
                return Err(at(format!(
                    "type {other:?}: expected refreshOnly or refreshAndPersist"
                )))
            }
        };
        let interval = parse_interval(&self.interval).map_err(|e| at(format!("interval: {e}")))?;
        let bind = match self.bindmethod.as_str() {
            "simple" => {
                if self.saslmech.is_some() {
                    return Err(at("saslmech goes with bindmethod = \"sasl\"".into()));
                }
                let dn = self.binddn.clone().unwrap_or_default();
                if !dn.is_empty() && self.credentials.is_none() {
                    return Err(at("binddn without credentials".into()));
                }
                BindMethod::Simple {
                    dn,
                    password: self.credentials.clone().unwrap_or_default(),
                }
            }
            "sasl" => match self
                .saslmech
                .as_deref()
                .map(str::to_ascii_uppercase)
                .as_deref()
            {
                Some("EXTERNAL") => {
                    if self.tls_cert.is_none() || transport == Transport::Plain {
                        return Err(at(
                            "saslmech EXTERNAL needs TLS (ldaps:// or starttls) and tls_cert/tls_key"
                                .into(),
                        ));
                    }
                    BindMethod::External {
                        authzid: self.authzid.clone(),
                    }
                }
                Some("PLAIN") => {
                    let authcid = self
                        .authcid
                        .clone()
                        .or_else(|| self.binddn.clone())
                        .ok_or_else(|| at("saslmech PLAIN needs authcid".into()))?;
                    let password = self
                        .credentials
                        .clone()
                        .ok_or_else(|| at("saslmech PLAIN needs credentials".into()))?;
                    BindMethod::Plain {
                        authcid,
                        authzid: self.authzid.clone(),
                        password,
                    }
                }
                Some(other) => {
                    return Err(at(format!(
                        "saslmech {other:?}: supported are EXTERNAL and PLAIN"
                    )))
                }
                None => return Err(at("bindmethod = \"sasl\" needs saslmech".into())),
            },
            other => return Err(at(format!("bindmethod {other:?}: expected simple or sasl"))),
        };
        let retry =
            parse_retry(&self.retry).map_err(|e| at(format!("retry {:?}: {e}", self.retry)))?;
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err(at("tls_cert and tls_key go together".into()));
        }
        let verify_provider = match self.tls_reqcert.as_str() {
            "demand" | "hard" => true,
            "never" | "allow" => false,
            other => {
                return Err(at(format!(
                    "tls_reqcert {other:?}: expected demand or never"
                )))
            }
        };
        if transport != Transport::Plain && verify_provider && self.tls_cacert.is_none() {
            return Err(at(
                "TLS to the provider needs tls_cacert (or tls_reqcert = \"never\")".into(),
            ));
        }
        for path in [&self.tls_cacert, &self.tls_cert, &self.tls_key]
            .into_iter()
            .flatten()
        {
            if !path.is_file() {
                return Err(at(format!("{} is not a readable file", path.display())));
            }
        }
        if self.network_timeout == 0 {
            return Err(at("network-timeout must be at least 1 second".into()));
        }
        Ok(Consumer {
            rid: self.rid,
            provider: self.provider.clone(),
            host,
            port,
            transport,
            searchbase: self
                .searchbase
                .clone()
                .unwrap_or_else(|| suffix.to_string()),
            scope,
            filter,
            attrs,
            mode,
            interval,
            bind,
            retry,
            tls_cacert: self.tls_cacert.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            verify_provider,
            timeout: (self.timeout > 0).then(|| Duration::from_secs(self.timeout)),
            network_timeout: Duration::from_secs(self.network_timeout),
            delta: super::delta::Log::compile(
                self.syncdata.as_deref(),
                self.logbase.as_deref(),
                self.logfilter.as_deref(),
            )
            .map_err(at)?,
        })
    }
}

fn split_host_port(hostport: &str, default_port: u16) -> Option<(String, u16)> {
    // [v6]:port, host:port, host
    if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok().filter(|p| *p != 0)?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok().filter(|p| *p != 0)?)),
        None => Some((hostport.to_string(), default_port)),
    }
}

/// slapd's interval: `dd:hh:mm:ss`, `hh:mm:ss`, `mm:ss` or seconds; never zero.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 4 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!("{text:?} is not dd:hh:mm:ss"));
    }
    let limits = [u64::MAX, 23, 59, 59];
    let units = [86_400u64, 3_600, 60, 1];
    let offset = 4 - parts.len();
    let mut secs = 0u64;
    for (i, part) in parts.iter().enumerate() {
        let value: u64 = part
            .parse()
            .map_err(|_| format!("{text:?} is not dd:hh:mm:ss"))?;
        let slot = i + offset;
        if i > 0 && value > limits[slot] {
            return Err(format!("{text:?}: {value} is out of range"));
        }
        secs = secs.saturating_add(value.saturating_mul(units[slot]));
    }
    if secs == 0 {
        return Err("an interval of zero".into());
    }
    Ok(Duration::from_secs(secs))
}

/// slapd's retry list: `"delay count [delay count ...]"`, the last count may be `+` (for ever).
pub fn parse_retry(text: &str) -> Result<Vec<RetryStep>, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if text.trim() == "undefined" {
        return Ok(Vec::new());
    }
    if words.is_empty() || !words.len().is_multiple_of(2) {
        return Err("expected pairs of seconds and count, e.g. \"5 10 60 +\"".into());
    }
    let mut steps = Vec::new();
    for (i, pair) in words.chunks(2).enumerate() {
        let delay: u64 = pair[0]
            .parse()
            .map_err(|_| format!("{:?} is not a number of seconds", pair[0]))?;
        if delay == 0 {
            return Err("a retry delay of zero seconds".into());
        }
        let count = match pair[1] {
            "+" if i == words.len() / 2 - 1 => None,
            "+" => return Err("only the last count may be \"+\"".into()),
            n => Some(
                n.parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("{n:?} is not a positive count or \"+\""))?,
            ),
        };
        steps.push(RetryStep {
            delay: Duration::from_secs(delay),
            count,
        });
    }
    Ok(steps)
}

/// Checks every table and the database's `updateref` (the configuration's semantic check).
pub fn check(
    tables: &[SyncreplConfig],
    updateref: Option<&str>,
    suffix: &str,
) -> Result<(), String> {
    let mut rids = std::collections::HashSet::new();
    for table in tables {
        table.compile(suffix)?;
        if !rids.insert(table.rid) {
            return Err(format!("syncrepl rid={} appears twice", table.rid));
        }
    }
    if let Some(url) = updateref {
        if !(url.starts_with("ldap://") || url.starts_with("ldaps://")) || url.len() < 8 {
            return Err(format!(
                "updateref {url:?}: expected an ldap:// or ldaps:// URL"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(extra: &str) -> Result<Consumer, String> {
        let text = format!("rid = 1\nprovider = \"ldap://127.0.0.1:3890\"\n{extra}");
        let config: SyncreplConfig = toml::from_str(&text).map_err(|e| e.to_string())?;
        config.compile("dc=example,dc=com")
    }

    #[test]
    fn defaults_and_keys() {
        let c = table("").unwrap();
        assert_eq!(c.searchbase, "dc=example,dc=com");
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 3890));
        assert_eq!(c.mode, SyncMode::RefreshOnly);
        assert_eq!(c.interval, Duration::from_secs(86_400));
        assert_eq!(c.attrs, vec!["*", "+"]);
        let c = table(
            "type = \"refreshAndPersist\"\nstarttls = \"critical\"\ntls_reqcert = \"never\"\nbinddn = \"cn=r\"\ncredentials = \"s\"\nretry = \"5 10 60 +\"\nscope = \"one\"",
        )
        .unwrap();
        assert_eq!(c.transport, Transport::StartTls { critical: true });
        assert_eq!(c.scope, SearchScope::SingleLevel);
        assert_eq!(c.retry.len(), 2);
        assert_eq!(c.retry[1].count, None);
    }

    #[test]
    fn bad_values_are_named() {
        for (extra, needle) in [
            ("type = \"persist\"", "type"),
            ("interval = \"00:25:00:00\"", "interval"),
            ("retry = \"5\"", "retry"),
            ("retry = \"5 + 10 3\"", "retry"),
            ("bindmethod = \"sasl\"", "saslmech"),
            ("bindmethod = \"sasl\"\nsaslmech = \"GSSAPI\"", "GSSAPI"),
            ("starttls = \"maybe\"", "starttls"),
            ("starttls = \"yes\"", "tls_cacert"),
            ("filter = \"(cn=\"", "filter"),
            ("scope = \"deep\"", "scope"),
            ("binddn = \"cn=x\"", "credentials"),
        ] {
            let e = table(extra).unwrap_err();
            assert!(e.contains(needle), "{extra}: {e}");
        }
        let bad: SyncreplConfig = toml::from_str("rid = 1\nprovider = \"http://x\"").unwrap();
        assert!(bad.compile("o=x").unwrap_err().contains("provider"));
    }

    #[test]
    fn intervals_and_retries() {
        assert_eq!(
            parse_interval("00:00:00:05").unwrap(),
            Duration::from_secs(5)
        );
        assert_eq!(parse_interval("01:02:03:04").unwrap().as_secs(), 93_784);
        assert_eq!(parse_interval("30").unwrap().as_secs(), 30);
        assert!(parse_interval("00:00:00:00").is_err());
        assert!(parse_interval("a:b").is_err());
        let steps = parse_retry("5 10 60 +").unwrap();
        assert_eq!(
            steps,
            vec![
                RetryStep {
                    delay: Duration::from_secs(5),
                    count: Some(10)
                },
                RetryStep {
                    delay: Duration::from_secs(60),
                    count: None
                }
            ]
        );
        assert!(parse_retry("0 +").is_err());
    }
}
