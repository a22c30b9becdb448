//! `[[overlay]]` tables: slapd's overlay names and options (without their prefix), checked and turned
//! into the backend's write hooks, in the order they are listed (docs/overlays.md).

use std::sync::Arc;

use canopy_directory::dynlist::Dynlist;
use canopy_directory::overlay::accesslog;
use canopy_directory::overlay::auditlog::AuditLog;
use canopy_directory::overlay::constraint::{self, Constraint};
use canopy_directory::overlay::homedir::{self, Homedir};
use canopy_directory::overlay::memberof::{self, Dangling, MemberOf};
use canopy_directory::overlay::ppolicy::{self, PPolicy};
use canopy_directory::overlay::refint::{self, Refint};
use canopy_directory::overlay::unique::{self, Domain, Scope, Unique, Uri};
use canopy_directory::{Pipeline, WriteHook};
use canopy_proto::{Dn, ResultCode};
use canopy_schema::Schema;
use serde::Deserialize;

/// One `[[overlay]]` table: `name` and the overlay's options.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OverlayConfig {
    pub name: String,
    #[serde(flatten)]
    pub options: toml::Table,
}

/// The overlays Canopy has, by slapd's name. `syncprov` is no hook of its own (every database is a
/// provider, docs/replication.md): its table, or `olcOverlay` entry, sets the database's session log.
pub const KNOWN: [&str; 10] = [
    "syncprov",
    "memberof",
    "refint",
    "unique",
    "constraint",
    "dynlist",
    "ppolicy",
    "auditlog",
    "accesslog",
    "homedir",
];

/// The database the overlays are built for: what their attribute names and DNs are checked against.
pub struct Target<'a> {
    pub schema: &'a Schema,
    pub suffix: &'a str,
}

/// Checks every table: a known overlay, known options with values of the right kind, each overlay once.
pub fn check(overlays: &[OverlayConfig]) -> Result<(), String> {
    for (i, overlay) in overlays.iter().enumerate() {
        if overlays[..i].iter().any(|o| o.name == overlay.name) {
            return Err(format!(
                "[[overlay]] {:?} is configured twice",
                overlay.name
            ));
        }
        let checked = match overlay.name.as_str() {
            "dynlist" => dynlist_config(&overlay.options).map(|_| ()),
            "syncprov" => syncprov_config(&overlay.options).map(|_| ()),
            "accesslog" => accesslog_config(&overlay.options).map(|_| ()),
            _ => hook(overlay, "cn=check", None).map(|_| ()),
        };
        checked.map_err(|e| format!("[[overlay]] {:?}: {e}", overlay.name))?;
    }
    Ok(())
}

/// The overlay a module of slapd's (`moduleload memberof.la`, `olcModuleLoad: {0}memberof`) holds,
/// when Canopy has it built in: the module's name without directory, `.la`/`.so` and version.
pub fn module_overlay(module: &str) -> Option<&'static str> {
    let file = module.rsplit('/').next().unwrap_or(module);
    // `memberof.la`, `memberof-2.5.so.0`, `back_mdb`: the name ends at the first '.' or '-'.
    let stem = file.split(['.', '-']).next().unwrap_or(file);
    KNOWN
        .iter()
        .chain(BACKENDS.iter())
        .find(|k| k.eq_ignore_ascii_case(stem))
        .copied()
}

/// The backends a slapd module may hold that Canopy has built in (every database is an mdb one;
/// cn=Monitor is always there).
const BACKENDS: [&str; 2] = ["back_mdb", "back_monitor"];

/// The pretend overlay tables of the modules `modules` names, for [`schema`]: a module's schema is
/// defined once it is loaded, as in slapd.
pub fn module_tables(modules: &[String]) -> Vec<OverlayConfig> {
    modules
        .iter()
        .filter_map(|m| module_overlay(m))
        .map(|name| OverlayConfig {
            name: name.to_string(),
            options: toml::Table::new(),
        })
        .collect()
}

/// The session log size a `syncprov` table sets (`sessionlog`), if any.
pub fn sessionlog(overlays: &[OverlayConfig]) -> Result<Option<u64>, String> {
    overlays
        .iter()
        .find(|o| o.name == "syncprov")
        .map(|o| syncprov_config(&o.options).map(|s| s.sessionlog))
        .transpose()
        .map(Option::flatten)
}

/// slapd's syncprov options, as far as they mean anything to Canopy's provider.
struct SyncprovOptions {
    sessionlog: Option<u64>,
}

/// `checkpoint` ("OPS MINUTES": accepted and kept; Canopy writes contextCSN with every commit),
/// `sessionlog` (deletes and renames kept), `nopresent` and `reloadhint` (flags, kept).
fn syncprov_config(options: &toml::Table) -> Result<SyncprovOptions, String> {
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

/// The schema an overlay brings (slapd's module defines it), to load before anything uses it:
/// memberOf, defined by slapd's memberof and dynlist modules alike (once).
pub fn schema(overlays: &[OverlayConfig]) -> Vec<&'static str> {
    let memberof = overlays.iter().any(|o| {
        o.name == "memberof"
            || (o.name == "dynlist"
                && dynlist_config(&o.options).is_ok_and(|d| {
                    d.memberof_attrs()
                        .any(|a| a.eq_ignore_ascii_case("memberOf"))
                }))
    });
    let mut schema = Vec::new();
    if memberof {
        schema.push(memberof::MEMBEROF_SCHEMA);
    }
    if overlays.iter().any(|o| o.name == "ppolicy") {
        schema.push(ppolicy::PPOLICY_SCHEMA);
    }
    if overlays.iter().any(|o| o.name == "accesslog") {
        schema.push(accesslog::ACCESSLOG_SCHEMA);
    }
    schema
}

/// The dynlist overlay's settings, checked against `target`; None when it is not configured. It is
/// no write hook: searches expand what it names when they read (docs/design/read-path.md).
pub fn dynlist(overlays: &[OverlayConfig], target: &Target<'_>) -> Result<Option<Dynlist>, String> {
    let Some(overlay) = overlays.iter().find(|o| o.name == "dynlist") else {
        return Ok(None);
    };
    let checked = dynlist_config(&overlay.options).and_then(|config| {
        let suffix = Dn::parse(target.suffix.as_bytes())
            .ok()
            .and_then(|dn| target.schema.normalize_dn(&dn).ok())
            .ok_or_else(|| format!("suffix {:?} is not a DN", target.suffix))?;
        config.check(target.schema, &suffix)?;
        Ok(config)
    });
    checked
        .map(Some)
        .map_err(|e| format!("[[overlay]] \"dynlist\": {e}"))
}

/// slapd's `dynlist-attrset` lines: `attrset`, a list (or one string).
fn dynlist_config(options: &toml::Table) -> Result<Dynlist, String> {
    let mut lines = None;
    for (key, value) in options {
        match key.as_str() {
            "attrset" => lines = Some(strings(key, value)?),
            other => {
                return Err(format!(
                    "unknown option {other:?} (dynlist takes attrset, a list of dynlist-attrset \
                     lines)"
                ))
            }
        }
    }
    let lines = lines.ok_or(
        "attrset: missing (a list of dynlist-attrset lines, e.g. \"groupOfURLs memberURL member\")",
    )?;
    Dynlist::parse(lines.iter().map(String::as_str)).map_err(|e| format!("attrset: {e}"))
}

/// The ppolicy overlay's settings, when one is configured: binds and password changes consult them.
pub fn ppolicy(overlays: &[OverlayConfig], root_dn: &str) -> Result<Option<Arc<PPolicy>>, String> {
    overlays
        .iter()
        .find(|o| o.name == "ppolicy")
        .map(|o| {
            ppolicy_config(&o.options, root_dn)
                .map(|c| Arc::new(PPolicy::new(c)))
                .map_err(|e| format!("[[overlay]] \"ppolicy\": {e}"))
        })
        .transpose()
}

/// The standard pipeline with the configured overlays after it; `root_dn` records their own changes
/// (memberof's); names and DNs in their options are checked against `target`.
pub fn pipeline(
    overlays: &[OverlayConfig],
    root_dn: &str,
    target: &Target<'_>,
) -> Result<Pipeline, String> {
    let mut pipeline = Pipeline::standard();
    // dynlist is a read-time step; accesslog comes with its log database (`accesslog` below).
    for overlay in overlays
        .iter()
        .filter(|o| !matches!(o.name.as_str(), "dynlist" | "accesslog" | "syncprov"))
    {
        let hook = hook(overlay, root_dn, Some(target))
            .map_err(|e| format!("[[overlay]] {:?}: {e}", overlay.name))?;
        pipeline = pipeline.then(hook);
    }
    Ok(pipeline)
}

/// The hook of one table; its options are checked against `target` when one is given (at start; the
/// configuration check before it has no schema yet).
fn hook(
    overlay: &OverlayConfig,
    root_dn: &str,
    target: Option<&Target<'_>>,
) -> Result<Arc<dyn WriteHook>, String> {
    match overlay.name.as_str() {
        "memberof" => Ok(Arc::new(MemberOf::new(memberof_config(
            &overlay.options,
            root_dn,
        )?))),
        "ppolicy" => Ok(Arc::new(PPolicy::new(ppolicy_config(
            &overlay.options,
            root_dn,
        )?))),
        "constraint" => Ok(Arc::new(Constraint::new(constraint_config(
            &overlay.options,
        )?))),
        "refint" => {
            let config = refint_config(&overlay.options)?;
            if let Some(target) = target {
                config.check(target.schema)?;
            }
            Ok(Arc::new(Refint::new(config)))
        }
        "unique" => {
            let config = unique_config(&overlay.options)?;
            if let Some(target) = target {
                let suffix = Dn::parse(target.suffix.as_bytes())
                    .ok()
                    .and_then(|dn| target.schema.normalize_dn(&dn).ok())
                    .ok_or_else(|| format!("suffix {:?} is not a DN", target.suffix))?;
                config.check(target.schema, &suffix)?;
            }
            Ok(Arc::new(Unique::new(config)))
        }
        "auditlog" => {
            let mut file = None;
            for (key, value) in &overlay.options {
                match key.as_str() {
                    "file" => file = Some(string(key, value)?),
                    other => return Err(format!("unknown option {other:?} (auditlog takes file)")),
                }
            }
            let file = file.ok_or("auditlog needs file = \"/path/to/audit.ldif\"")?;
            Ok(Arc::new(AuditLog::new(file.into())))
        }
        "homedir" => Ok(Arc::new(Homedir::new(homedir_config(&overlay.options)?))),
        other => Err(format!(
            "unknown overlay {other:?} (known: {})",
            KNOWN.join(", ")
        )),
    }
}

/// The accesslog overlay's settings, when one is configured: the server opens its log database and
/// appends the hook after the other overlays (crate::logdb).
pub fn accesslog(overlays: &[OverlayConfig]) -> Result<Option<accesslog::Config>, String> {
    overlays
        .iter()
        .find(|o| o.name == "accesslog")
        .map(|o| {
            accesslog_config(&o.options).map_err(|e| format!("[[overlay]] \"accesslog\": {e}"))
        })
        .transpose()
}

/// slapd's `logdb`, `logops`, `logsuccess` and `logpurge` (two `[DD+]HH:MM[:SS]` durations: age and
/// interval).
fn accesslog_config(options: &toml::Table) -> Result<accesslog::Config, String> {
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

/// slapd's `memberof-*` options without the prefix.
fn memberof_config(options: &toml::Table, root_dn: &str) -> Result<memberof::Config, String> {
    let mut config = memberof::Config::new(root_dn);
    let mut error_code = ResultCode::ConstraintViolation;
    let mut dangling = "ignore".to_string();
    for (key, value) in options {
        match key.as_str() {
            "group-oc" => config.group_class = string(key, value)?,
            "member-ad" => config.member_attr = string(key, value)?,
            "memberof-ad" => config.memberof_attr = string(key, value)?,
            "dn" => config.modifier = string(key, value)?,
            "refint" => {
                config.refint = value
                    .as_bool()
                    .ok_or_else(|| format!("{key}: expected true or false"))?
            }
            "dangling" => dangling = string(key, value)?,
            "dangling-error" => error_code = result_code(key, value)?,
            other => {
                return Err(format!(
                    "unknown option {other:?} (memberof takes group-oc, member-ad, memberof-ad, \
                     dangling, dangling-error, refint, dn)"
                ))
            }
        }
    }
    config.dangling = match dangling.as_str() {
        "ignore" => Dangling::Ignore,
        "drop" => Dangling::Drop,
        "error" => Dangling::Error(error_code),
        other => return Err(format!("dangling: {other:?} is not ignore, drop or error")),
    };
    Ok(config)
}

/// slapd's `ppolicy_*` options without the prefix.
fn ppolicy_config(options: &toml::Table, root_dn: &str) -> Result<ppolicy::Config, String> {
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

/// `constraints`: one string per slapd `constraint_attribute` line, without the keyword. The syntax
/// is checked here; the names against the schema when the database opens (`WriteHook::check`).
fn constraint_config(options: &toml::Table) -> Result<Vec<constraint::Rule>, String> {
    let mut rules = None;
    for (key, value) in options {
        match key.as_str() {
            "constraints" => {
                let lines = value
                    .as_array()
                    .ok_or_else(|| format!("{key}: expected a list of strings"))?;
                let mut parsed = Vec::with_capacity(lines.len());
                for (i, line) in lines.iter().enumerate() {
                    let line = line
                        .as_str()
                        .ok_or_else(|| format!("{key}[{i}]: expected a string"))?;
                    let rule = constraint::Rule::parse(line)
                        .map_err(|e| format!("{key}[{i}] {line:?}: {e}"))?;
                    parsed.push(rule);
                }
                rules = Some(parsed);
            }
            other => {
                return Err(format!(
                    "unknown option {other:?} (constraint takes constraints, a list of \
                     constraint_attribute lines)"
                ))
            }
        }
    }
    rules.ok_or_else(|| {
        "constraints: missing (a list of constraint_attribute lines, e.g. \"mail size 256\")".into()
    })
}

/// slapd's `refint_*` options without the prefix.
fn refint_config(options: &toml::Table) -> Result<refint::Config, String> {
    let mut config = refint::Config::new(Vec::new());
    for (key, value) in options {
        match key.as_str() {
            "attributes" => config.attributes = names(key, value)?,
            "nothing" => config.nothing = Some(dn(key, value)?),
            "modifiersname" => config.modifier = dn(key, value)?,
            other => {
                return Err(format!(
                    "unknown option {other:?} (refint takes attributes, nothing, modifiersname)"
                ))
            }
        }
    }
    if config.attributes.is_empty() {
        return Err(
            "attributes: name the attributes to keep intact (slapd's refint_attributes)".into(),
        );
    }
    Ok(config)
}

/// slapd's `unique_*` options without the prefix: `uri` domains, or the older single domain of
/// `attributes` (or `ignore`), `base` and `strict`.
fn unique_config(options: &toml::Table) -> Result<unique::Config, String> {
    let mut config = unique::Config::default();
    let (mut attributes, mut ignore) = (None, None);
    let (mut base, mut strict) = (None, None);
    for (key, value) in options {
        match key.as_str() {
            "uri" => {
                for text in strings(key, value)? {
                    config
                        .domains
                        .push(Domain::parse(&text).map_err(|e| format!("uri: {e}"))?);
                }
            }
            "attributes" => attributes = Some(names(key, value)?),
            "ignore" => ignore = Some(names(key, value)?),
            "base" => {
                let text = dn(key, value)?;
                base = Some(Dn::parse(text.as_bytes()).map_err(|e| format!("{key}: {e}"))?);
            }
            "strict" => {
                strict = Some(
                    value
                        .as_bool()
                        .ok_or_else(|| format!("{key}: expected true or false"))?,
                )
            }
            other => {
                return Err(format!(
                "unknown option {other:?} (unique takes uri, or attributes, ignore, base, strict)"
            ))
            }
        }
    }
    let legacy = attributes.is_some() || ignore.is_some() || base.is_some() || strict.is_some();
    if legacy && !config.domains.is_empty() {
        return Err("uri cannot be combined with attributes, ignore, base or strict".into());
    }
    if attributes.is_some() && ignore.is_some() {
        return Err("attributes and ignore cannot both be set".into());
    }
    if legacy {
        config.domains.push(Domain {
            uris: vec![Uri {
                base,
                attributes: attributes.or_else(|| ignore.clone()).unwrap_or_default(),
                scope: Scope::Sub,
                filter: None,
            }],
            ignore: ignore.is_some(),
            strict: strict.unwrap_or(false),
        });
    }
    if config.domains.is_empty() {
        return Err("no domain: set uri (or attributes)".into());
    }
    Ok(config)
}

/// slapd's `homedir-skeleton-path`, `homedir-min-uidnumber`, `homedir-regexp` (lines of a regular
/// expression and a path), `homedir-delete-style` and `homedir-archive-path`, without the prefix.
fn homedir_config(options: &toml::Table) -> Result<homedir::Config, String> {
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

/// A list of strings: a TOML array, or one string.
fn strings(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    match value {
        toml::Value::String(s) => Ok(vec![s.clone()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{key}: expected strings"))
            })
            .collect(),
        _ => Err(format!("{key}: expected a string or an array of strings")),
    }
}

/// Attribute names: an array, or one string of names separated by spaces (slapd's form).
fn names(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let names: Vec<String> = strings(key, value)?
        .iter()
        .flat_map(|s| s.split_whitespace())
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(format!("{key}: name at least one attribute"));
    }
    Ok(names)
}

/// A DN option's value, checked for DN syntax.
fn dn(key: &str, value: &toml::Value) -> Result<String, String> {
    let text = string(key, value)?;
    Dn::parse(text.as_bytes()).map_err(|e| format!("{key}: {text:?} is not a DN: {e}"))?;
    Ok(text)
}

fn string(key: &str, value: &toml::Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key}: expected a string"))
}

/// A result code by number or by its RFC 4511 name (`constraintViolation`).
fn result_code(key: &str, value: &toml::Value) -> Result<ResultCode, String> {
    if let Some(n) = value.as_integer() {
        return u32::try_from(n)
            .ok()
            .map(ResultCode::from_code)
            .filter(|c| !matches!(c, ResultCode::Unknown(_) | ResultCode::Success))
            .ok_or_else(|| format!("{key}: {n} is not an LDAP error code"));
    }
    let name = string(key, value)?;
    (1..=122)
        .map(ResultCode::from_code)
        .find(|c| {
            !matches!(c, ResultCode::Unknown(_)) && format!("{c:?}").eq_ignore_ascii_case(&name)
        })
        .ok_or_else(|| format!("{key}: {name:?} is not an LDAP result code name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlay(text: &str) -> OverlayConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn accesslog_options_as_slapd_names_them() {
        let config = accesslog(&[overlay(
            "name = \"accesslog\"\nlogdb = \"cn=accesslog\"\nlogops = \"add modify\"\n\
             logsuccess = true\nlogpurge = \"07+00:00 01+00:00\"",
        )])
        .unwrap()
        .unwrap();
        assert_eq!(config.logdb, "cn=accesslog");
        assert!(config.ops.add && config.ops.modify && !config.ops.delete && !config.ops.modrdn);
        assert_eq!(
            config.purge,
            Some((
                std::time::Duration::from_secs(7 * 86_400),
                std::time::Duration::from_secs(86_400)
            ))
        );
        assert_eq!(config.access, [accesslog::DEFAULT_ACCESS]);
        let bad = |text: &str, want: &str| {
            let err = check(&[overlay(text)]).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        };
        bad("name = \"accesslog\"", "needs logdb");
        bad(
            "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogops = \"reads\"",
            "writes only",
        );
        bad(
            "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogsuccess = false",
            "logsuccess",
        );
        bad(
            "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogpurge = \"07+00:00\"",
            "an age and an interval",
        );
        bad(
            "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogpurge = \"1+00:00 00:00\"",
            "must not be zero",
        );
        bad(
            "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogold = \"x\"",
            "unknown option \"logold\"",
        );
    }

    #[test]
    fn memberof_options_as_slapd_names_them() {
        let o = overlay(
            "name = \"memberof\"\ngroup-oc = \"groupOfUniqueNames\"\nmember-ad = \"uniqueMember\"\n\
             dangling = \"error\"\ndangling-error = \"noSuchObject\"\nrefint = true\n",
        );
        let config = memberof_config(&o.options, "cn=admin").unwrap();
        assert_eq!(config.group_class, "groupOfUniqueNames");
        assert_eq!(config.member_attr, "uniqueMember");
        assert_eq!(config.memberof_attr, "memberOf");
        assert_eq!(config.dangling, Dangling::Error(ResultCode::NoSuchObject));
        assert!(config.refint);
        assert_eq!(config.modifier, "cn=admin");
        let numbered = overlay("name = \"memberof\"\ndangling = \"error\"\ndangling-error = 53\n");
        assert_eq!(
            memberof_config(&numbered.options, "x").unwrap().dangling,
            Dangling::Error(ResultCode::UnwillingToPerform)
        );
    }

    #[test]
    fn ppolicy_options_as_slapd_names_them() {
        let o = overlay(
            "name = \"ppolicy\"\ndefault = \"cn=pp,dc=example,dc=com\"\nhash_cleartext = true\n\
             use_lockout = true\nforward_updates = false\nsend_netscape_controls = true\n",
        );
        let config = ppolicy_config(&o.options, "cn=admin").unwrap();
        assert_eq!(config.default.as_deref(), Some("cn=pp,dc=example,dc=com"));
        assert!(config.hash_cleartext && config.use_lockout && config.send_netscape_controls);
        assert!(!config.forward_updates);
        assert_eq!(config.modifier, "cn=admin");
        let bad = |text: &str, want: &str| {
            let err = check(&[overlay(text)]).unwrap_err();
            assert!(err.contains(want), "{err}");
        };
        bad("name = \"ppolicy\"\ndefault = \"not a dn\"", "default");
        bad("name = \"ppolicy\"\nuse_lockout = \"yes\"", "use_lockout");
        bad(
            "name = \"ppolicy\"\nlockout = true",
            "unknown option \"lockout\"",
        );
        assert_eq!(schema(&[o]), [ppolicy::PPOLICY_SCHEMA]);
    }

    #[test]
    fn bad_tables_are_refused_with_the_reason() {
        let bad = |text: &str, want: &str| {
            let err = check(&[overlay(text)]).unwrap_err();
            assert!(err.contains(want), "{err}");
        };
        bad("name = \"nosuch\"", "unknown overlay");
        bad("name = \"memberof\"\nbogus = 1", "unknown option \"bogus\"");
        bad("name = \"memberof\"\ndangling = \"sometimes\"", "dangling");
        bad("name = \"memberof\"\nrefint = \"yes\"", "refint");
        bad(
            "name = \"memberof\"\ndangling-error = \"nope\"",
            "dangling-error",
        );
        bad("name = \"memberof\"\ndangling-error = 0", "dangling-error");
        let twice = [
            overlay("name = \"memberof\""),
            overlay("name = \"memberof\""),
        ];
        assert!(check(&twice).unwrap_err().contains("twice"));
        let schema = Schema::builtin();
        let target = Target {
            schema: &schema,
            suffix: "dc=example,dc=com",
        };
        assert_eq!(
            pipeline(&[overlay("name = \"memberof\"")], "cn=admin", &target)
                .unwrap()
                .names(),
            ["stamping", "memberof"]
        );
    }

    #[test]
    fn refint_options_as_slapd_names_them() {
        let o = overlay(
            "name = \"refint\"\nattributes = [\"member\", \"seeAlso\"]\n\
             nothing = \"cn=nobody,dc=example,dc=com\"\nmodifiersname = \"cn=refint\"\n",
        );
        let config = refint_config(&o.options).unwrap();
        assert_eq!(config.attributes, ["member", "seeAlso"]);
        assert_eq!(
            config.nothing.as_deref(),
            Some("cn=nobody,dc=example,dc=com")
        );
        assert_eq!(config.modifier, "cn=refint");
        // slapd's space-separated list, and its default modifiersName.
        let o = overlay("name = \"refint\"\nattributes = \"member uniqueMember\"\n");
        let config = refint_config(&o.options).unwrap();
        assert_eq!(config.attributes, ["member", "uniqueMember"]);
        assert_eq!(config.nothing, None);
        assert_eq!(config.modifier, refint::MODIFIERS_NAME);
    }

    #[test]
    fn unique_options_as_slapd_names_them() {
        let o = overlay(
            "name = \"unique\"\nuri = [\"ldap:///ou=people,dc=example,dc=com?uid,mail?sub\", \
             \"strict ldap:///?cn?one?(objectClass=person)\"]\n",
        );
        let config = unique_config(&o.options).unwrap();
        assert_eq!(config.domains.len(), 2);
        assert!(!config.domains[0].strict && config.domains[1].strict);
        assert_eq!(config.domains[0].uris[0].attributes, ["uid", "mail"]);
        assert_eq!(config.domains[1].uris[0].scope, Scope::One);
        // The older single-domain form.
        let o = overlay(
            "name = \"unique\"\nignore = [\"objectClass\", \"cn\"]\n\
             base = \"ou=people,dc=example,dc=com\"\nstrict = true\n",
        );
        let config = unique_config(&o.options).unwrap();
        let domain = &config.domains[0];
        assert!(domain.ignore && domain.strict);
        assert_eq!(domain.uris[0].attributes, ["objectClass", "cn"]);
        assert_eq!(domain.uris[0].scope, Scope::Sub);
        assert!(domain.uris[0].base.is_some());
        let one = overlay("name = \"unique\"\nuri = \"ldap:///?mail\"\n");
        assert_eq!(unique_config(&one.options).unwrap().domains.len(), 1);
    }

    #[test]
    fn bad_refint_and_unique_tables_are_refused_with_the_reason() {
        let bad = |text: &str, want: &str| {
            let err = check(&[overlay(text)]).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        };
        bad("name = \"refint\"", "attributes");
        bad("name = \"refint\"\nattributes = []", "attributes");
        bad("name = \"refint\"\nattributes = [1]", "attributes");
        bad(
            "name = \"refint\"\nattributes = \"member\"\nnothing = \"not a dn\"",
            "nothing",
        );
        bad(
            "name = \"refint\"\nattributes = \"member\"\nmodifiersname = 3",
            "modifiersname",
        );
        bad(
            "name = \"refint\"\nattributes = \"member\"\nrefint_nothing = \"cn=x\"",
            "unknown option \"refint_nothing\"",
        );
        bad("name = \"unique\"", "no domain");
        bad("name = \"unique\"\nuri = \"ldap:///?uid?base\"", "uri");
        bad("name = \"unique\"\nuri = \"ldap://host/?uid\"", "host");
        bad(
            "name = \"unique\"\nuri = \"ldap:///?uid?sub?(uid=\"",
            "filter",
        );
        bad("name = \"unique\"\nuri = 7", "uri");
        bad(
            "name = \"unique\"\nuri = \"ldap:///?uid\"\nattributes = \"mail\"",
            "cannot be combined",
        );
        bad(
            "name = \"unique\"\nattributes = \"mail\"\nignore = \"cn\"",
            "attributes and ignore",
        );
        bad(
            "name = \"unique\"\nattributes = \"mail\"\nstrict = \"on\"",
            "strict",
        );
        bad("name = \"unique\"\nbase = \"=x\"", "base");
        bad(
            "name = \"unique\"\nunique_uri = \"ldap:///?uid\"",
            "unknown option",
        );
    }

    #[test]
    fn names_and_dns_are_checked_against_the_schema_at_start() {
        let schema = Schema::builtin();
        let target = Target {
            schema: &schema,
            suffix: "dc=example,dc=com",
        };
        let build = |text: &str| pipeline(&[overlay(text)], "cn=admin", &target);
        let names = build("name = \"unique\"\nuri = \"ldap:///?mail\"").unwrap();
        assert_eq!(names.names(), ["stamping", "unique"]);
        let names =
            build("name = \"refint\"\nattributes = \"member uniqueMember seeAlso\"").unwrap();
        assert_eq!(names.names(), ["stamping", "refint"]);
        let err = |text: &str, want: &str| {
            let err = build(text).err().unwrap();
            assert!(err.contains(want), "{text}: {err}");
        };
        err(
            "name = \"refint\"\nattributes = \"member nosuch\"",
            "\"nosuch\"",
        );
        err(
            "name = \"refint\"\nattributes = \"cn\"",
            "does not hold DNs",
        );
        err("name = \"unique\"\nuri = \"ldap:///?nosuch\"", "\"nosuch\"");
        err(
            "name = \"unique\"\nuri = \"ldap:///dc=elsewhere?mail\"",
            "not within the suffix",
        );
    }

    #[test]
    fn dynlist_tables() {
        let mut schema = Schema::builtin();
        schema
            .load_text(memberof::MEMBEROF_SCHEMA, "memberof")
            .unwrap();
        let target = Target {
            schema: &schema,
            suffix: "dc=example,dc=com",
        };
        let tables = [overlay(
            "name = \"dynlist\"\nattrset = [\"groupOfURLs memberURL member+memberOf@groupOfNames\", \
             \"labeledURIObject labeledURI\"]",
        )];
        check(&tables).unwrap();
        let config = dynlist(&tables, &target).unwrap().unwrap();
        assert_eq!(config.sets.len(), 2);
        assert_eq!(
            schema_of(&tables),
            1,
            "memberOf is defined for the memberOf attribute"
        );
        assert_eq!(
            pipeline(&tables, "cn=admin", &target).unwrap().names(),
            ["stamping"],
            "dynlist is no write hook"
        );
        let one = [overlay(
            "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL\"",
        )];
        assert_eq!(dynlist(&one, &target).unwrap().unwrap().sets.len(), 1);
        assert_eq!(schema_of(&one), 0);
        assert!(dynlist(&[], &target).unwrap().is_none());
        let bad = |text: &str, want: &str| {
            let err = check(&[overlay(text)]).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        };
        bad("name = \"dynlist\"", "attrset: missing");
        bad("name = \"dynlist\"\nattrset = []", "at least one");
        bad("name = \"dynlist\"\nattrset = 3", "expected a string");
        bad(
            "name = \"dynlist\"\nnesting = true",
            "unknown option \"nesting\"",
        );
        bad(
            "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL member+memberOf*\"",
            "follows a static class",
        );
        bad(
            "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL cn:member member\"",
            "mapped attributes",
        );
        let at_start = |text: &str, want: &str| {
            let err = dynlist(&[overlay(text)], &target).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        };
        at_start(
            "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL nosuch\"",
            "unknown attribute \"nosuch\"",
        );
        at_start(
            "name = \"dynlist\"\nattrset = \"groupOfURLs description\"",
            "labeledURI",
        );
    }

    fn schema_of(tables: &[OverlayConfig]) -> usize {
        schema(tables).len()
    }

    #[test]
    fn constraint_tables() {
        // The example of docs/overlays.md.
        let table = r#"
            name = "constraint"
            constraints = [
              'jpegPhoto size 131072',
              'userPassword count 3',
              'mail regex ^[[:alnum:]]+@mydomain\\.com$',
              'mail negregex ^[[:alnum:]]+@notallowed\\.com$',
              'departmentNumber uri ldap:///ou=departments,dc=example,dc=com?ou?one?(objectClass=organizationalUnit)',
              'cn,sn,givenName set "(this/givenName + [ ] + this/sn) & this/cn" restrict="ldap:///ou=People,dc=example,dc=com??sub?(objectClass=inetOrgPerson)"',
            ]
        "#;
        let rules = constraint_config(&overlay(table).options).unwrap();
        assert_eq!(rules.len(), 6);
        assert_eq!(rules[2].text(), r"mail regex ^[[:alnum:]]+@mydomain\\.com$");
        let built = hook(&overlay(table), "cn=admin", None).unwrap();
        let schema = canopy_schema::Schema::builtin();
        let suffix =
            canopy_schema::NormDn::from_normalized_rdns(vec!["dc=example".into(), "dc=com".into()]);
        built.check(&schema, &suffix).unwrap();
        assert_eq!(
            pipeline(
                &[overlay(table)],
                "cn=admin",
                &Target {
                    schema: &schema,
                    suffix: "dc=example,dc=com"
                }
            )
            .unwrap()
            .names(),
            ["stamping", "constraint"]
        );
        let empty = overlay("name = \"constraint\"\nconstraints = []");
        assert!(constraint_config(&empty.options).unwrap().is_empty());

        // Each problem names the constraint and what is wrong with it.
        let bad = |lines: &str, want: &str| {
            let text = format!("name = \"constraint\"\nconstraints = [{lines}]");
            let err = check(&[overlay(&text)]).unwrap_err();
            assert!(
                err.contains("\"constraint\"") && err.contains(want),
                "{err}"
            );
        };
        bad(
            "'mail regex ^(a'",
            "constraints[0] \"mail regex ^(a\": bad regular expression",
        );
        bad("'mail size big'", "expected a number");
        bad(
            "'mail uri ldap://elsewhere/dc=x?mail'",
            "host is not allowed",
        );
        bad("'mail uri ldap:///dc=x???(mail=a'", "filter");
        bad("'mail uri ldap:///dc=x'", "names no attribute");
        bad("'cn set \"this/cn &\"'", "set");
        bad("'cn set \"this/cn % [x]\"'", "set");
        bad(
            "'mail size 1', 'mail neguri ldap:///dc=x?mail'",
            "constraints[1]",
        );
        bad("'mail size 1 restrict=ldap:///dc=x?cn'", "restrict URI");
        bad("'mail'", "expected ATTR");
        bad("1", "constraints[0]: expected a string");
        let missing = check(&[overlay("name = \"constraint\"")]).unwrap_err();
        assert!(missing.contains("constraints: missing"), "{missing}");
        let extra = check(&[overlay("name = \"constraint\"\nconstraints = []\nattr = 1")]);
        assert!(extra.unwrap_err().contains("unknown option \"attr\""));
        let listed = check(&[overlay(
            "name = \"constraint\"\nconstraints = \"mail size 1\"",
        )]);
        assert!(listed.unwrap_err().contains("expected a list"));

        // Names are checked against the schema and the suffix when the database opens.
        let unknown = |line: &str, want: &str| {
            let text = format!("name = \"constraint\"\nconstraints = ['{line}']");
            let err = hook(&overlay(&text), "cn=admin", None)
                .unwrap()
                .check(&schema, &suffix)
                .unwrap_err();
            assert!(err.contains(line) && err.contains(want), "{err}");
        };
        unknown("nosuch size 1", "attribute \"nosuch\"");
        unknown(
            "mail uri ldap:///dc=example,dc=com?nosuch?sub",
            "uri attribute",
        );
        unknown("mail uri ldap:///dc=other?mail?sub", "outside the database");
        unknown("entryCSN count 1", "operational");
    }
}
