//! The options of the overlays replication reads: syncprov's (the session log) and accesslog's (the
//! log database delta-syncrepl consumers follow).

use canopy_directory::overlay::accesslog;

use super::values::{dn, string, strings};

/// slapd's syncprov options, as far as they mean anything to Canopy's provider.
pub(super) struct SyncprovOptions {
    pub(super) sessionlog: Option<u64>,
}

/// `checkpoint` ("OPS MINUTES": accepted and kept; Canopy writes contextCSN with every commit),
/// `sessionlog` (deletes and renames kept), `nopresent` and `reloadhint` (flags, kept).
pub(super) fn syncprov_config(options: &toml::Table) -> Result<SyncprovOptions, String> {
    let mut sessionlog = None;
    for (key, value) in options {
        match key.as_str() {
            "checkpoint" => {
                let text = string(key, value)?;
                let words: Vec<&str> = text.split_whitespace().collect();
                if words.len() != 2 || words.iter().any(|w| w.parse::<u32>().is_err()) {
                    return Err(format!(
                        "checkpoint {text:?}: expected two numbers, operations and minutes"
                    ));
                }
            }
            "sessionlog" => {
                let number = match value {
                    toml::Value::Integer(n) => u64::try_from(*n).ok(),
                    toml::Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                };
                sessionlog =
                    Some(number.ok_or_else(|| format!("{key}: expected a number from 0 up"))?);
            }
            "nopresent" | "reloadhint" => {
                value
                    .as_bool()
                    .ok_or_else(|| format!("{key}: expected true or false"))?;
            }
            other => {
                return Err(format!(
                    "unknown option {other:?} (syncprov takes checkpoint, sessionlog, nopresent,                      reloadhint)"
                ))
            }
        }
    }
    Ok(SyncprovOptions { sessionlog })
}

/// slapd's `logdb`, `logops`, `logsuccess` and `logpurge` (two `[DD+]HH:MM[:SS]` durations: age and
/// interval).
pub(super) fn accesslog_config(options: &toml::Table) -> Result<accesslog::Config, String> {
    let mut logdb = None;
    let mut ops = accesslog::Ops::parse(["writes"])?;
    let mut purge = None;
    let mut access = vec![accesslog::DEFAULT_ACCESS.to_string()];
    for (key, value) in options {
        match key.as_str() {
            "logdb" => logdb = Some(dn(key, value)?),
            "access" => access = strings(key, value)?,
            "logops" => {
                let words = strings(key, value)?;
                let words: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
                ops = accesslog::Ops::parse(words)?;
            }
            "logsuccess" => match value.as_bool() {
                Some(true) => {}
                Some(false) => {
                    return Err("logsuccess = false: Canopy logs successful writes only \
                                (failed ones change nothing a consumer could replay)"
                        .into())
                }
                None => return Err("logsuccess: expected true or false".into()),
            },
            "logpurge" => {
                let text = strings(key, value)?.join(" ");
                let parts: Vec<&str> = text.split_whitespace().collect();
                let [age, interval] = parts.as_slice() else {
                    return Err(format!(
                        "logpurge {text:?}: expected an age and an interval, e.g. \"07+00:00 01+00:00\""
                    ));
                };
                let age = accesslog::parse_age(age).map_err(|e| format!("logpurge: {e}"))?;
                let interval =
                    accesslog::parse_age(interval).map_err(|e| format!("logpurge: {e}"))?;
                if interval.is_zero() {
                    return Err("logpurge: the interval must not be zero".into());
                }
                purge = Some((age, interval));
            }
            other => {
                return Err(format!(
                    "unknown option {other:?} (accesslog takes logdb, logops, logsuccess, logpurge, access)"
                ))
            }
        }
    }
    let logdb = logdb.ok_or("accesslog needs logdb = \"cn=accesslog\"")?;
    Ok(accesslog::Config {
        logdb,
        ops,
        purge,
        access,
    })
}
