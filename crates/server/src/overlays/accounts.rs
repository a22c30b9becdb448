//! The options of the account overlays: ppolicy's and homedir's.

use canopy_directory::overlay::homedir;
use canopy_directory::overlay::ppolicy;

use super::values::{dn, string, strings};

/// slapd's `ppolicy_*` options without the prefix.
pub(super) fn ppolicy_config(
    options: &toml::Table,
    root_dn: &str,
) -> Result<ppolicy::Config, String> {
    let mut config = ppolicy::Config {
        modifier: root_dn.to_string(),
        ..ppolicy::Config::default()
    };
    for (key, value) in options {
        let flag = || {
            value
                .as_bool()
                .ok_or_else(|| format!("{key}: expected true or false"))
        };
        match key.as_str() {
            "default" => config.default = Some(dn(key, value)?),
            "hash_cleartext" => config.hash_cleartext = flag()?,
            "use_lockout" => config.use_lockout = flag()?,
            "forward_updates" => config.forward_updates = flag()?,
            "send_netscape_controls" => config.send_netscape_controls = flag()?,
            other => {
                return Err(format!(
                    "unknown option {other:?} (ppolicy takes default, hash_cleartext, use_lockout, \
                     forward_updates, send_netscape_controls)"
                ))
            }
        }
    }
    Ok(config)
}

/// slapd's `homedir-skeleton-path`, `homedir-min-uidnumber`, `homedir-regexp` (lines of a regular
/// expression and a path), `homedir-delete-style` and `homedir-archive-path`, without the prefix.
pub(super) fn homedir_config(options: &toml::Table) -> Result<homedir::Config, String> {
    let mut config = homedir::Config {
        skeleton: None,
        min_uid: 0,
        rules: Vec::new(),
        delete_style: homedir::DeleteStyle::Ignore,
        archive: None,
    };
    for (key, value) in options {
        match key.as_str() {
            "skeleton-path" => config.skeleton = Some(string(key, value)?.into()),
            "min-uidnumber" => {
                let number = match value {
                    toml::Value::Integer(n) => u64::try_from(*n).ok(),
                    toml::Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                };
                config.min_uid =
                    number.ok_or_else(|| format!("{key}: expected a number from 0 up"))?;
            }
            "regexp" => {
                for line in strings(key, value)? {
                    config.rules.push(homedir::Config::rule(&line)?);
                }
            }
            "delete-style" => {
                config.delete_style = match string(key, value)?.to_ascii_uppercase().as_str() {
                    "IGNORE" => homedir::DeleteStyle::Ignore,
                    "DELETE" => homedir::DeleteStyle::Delete,
                    "ARCHIVE" => homedir::DeleteStyle::Archive,
                    other => {
                        return Err(format!("{key}: {other:?} is not IGNORE, DELETE or ARCHIVE"))
                    }
                }
            }
            "archive-path" => config.archive = Some(string(key, value)?.into()),
            other => {
                return Err(format!(
                    "unknown option {other:?} (homedir takes skeleton-path, min-uidnumber, regexp, \
                     delete-style, archive-path)"
                ))
            }
        }
    }
    if config.rules.is_empty() {
        return Err("no regexp: without one no homeDirectory value is acted on".into());
    }
    if config.delete_style == homedir::DeleteStyle::Archive && config.archive.is_none() {
        // slapo-homedir(5): ARCHIVE without an archive path functions as IGNORE.
        tracing::warn!(
            "homedir: delete-style ARCHIVE without archive-path: deleted accounts' homes are left"
        );
    }
    Ok(config)
}
