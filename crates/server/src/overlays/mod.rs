//! `[[overlay]]` tables: slapd's overlay names and options (without their prefix), checked and turned
//! into the backend's write hooks, in the order they are listed (docs/overlays.md).
//!
//! Here the tables and their assembly (the checks, the pipeline, the settings a database carries); the
//! options of each family of overlays in a file of its own: `replication.rs` (syncprov, accesslog),
//! `groups.rs` (dynlist, memberof), `integrity.rs` (constraint, refint, unique), `accounts.rs` (ppolicy,
//! homedir), with the kinds of value they share in `values.rs`.

mod accounts;
mod dds;
mod groups;
mod integrity;
mod replication;
#[cfg(test)]
mod tests;
mod values;

use std::sync::Arc;

use canopy_directory::dynlist::Dynlist;
use canopy_directory::overlay::accesslog;
use canopy_directory::overlay::auditlog::AuditLog;
use canopy_directory::overlay::constraint::Constraint;
use canopy_directory::overlay::homedir::Homedir;
use canopy_directory::overlay::memberof::{self, MemberOf};
use canopy_directory::overlay::ppolicy::{self, PPolicy};
use canopy_directory::overlay::refint::Refint;
use canopy_directory::overlay::unique::Unique;
use canopy_directory::{Pipeline, WriteHook};
use canopy_proto::Dn;
use canopy_schema::Schema;
use serde::Deserialize;

use accounts::{homedir_config, ppolicy_config};
use groups::{dynlist_config, memberof_config};
use integrity::{constraint_config, refint_config, unique_config};
use replication::{accesslog_config, syncprov_config};
use values::string;

/// One `[[overlay]]` table: `name` and the overlay's options.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OverlayConfig {
    pub name: String,
    #[serde(flatten)]
    pub options: toml::Table,
}

/// The overlays Canopy has, by slapd's name. `syncprov` is no hook of its own (every database is a
/// provider, docs/replication.md): its table, or `olcOverlay` entry, sets the database's session log.
pub const KNOWN: [&str; 16] = [
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
    "retcode",
    "valsort",
    "otp",
    "sssvlv",
    "dds",
    "deref",
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
            "retcode" => crate::retcode::Retcode::from_options(&overlay.options).map(|_| ()),
            // valsort's options are checked against the schema when its database opens.
            "valsort" => Ok(()),
            "otp" => match overlay.options.keys().next() {
                None => Ok(()),
                Some(key) => Err(format!("unknown option {key:?} (otp takes none)")),
            },
            "sssvlv" => crate::sssvlv::SssvlvHook::from_options(&overlay.options).map(|_| ()),
            "deref" => match overlay.options.keys().next() {
                None => Ok(()),
                Some(key) => Err(format!("unknown option {key:?} (deref takes none)")),
            },
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
    if overlays.iter().any(|o| o.name == "otp") {
        schema.push(canopy_directory::overlay::otp::OTP_SCHEMA);
    }
    if overlays.iter().any(|o| o.name == "dds") {
        schema.push(canopy_directory::overlay::dds::DDS_SCHEMA);
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
    // dynlist is a read-time step; accesslog comes with its log database (`accesslog` below);
    // retcode, valsort, sssvlv, otp and deref are frontend hooks only.
    for overlay in overlays.iter().filter(|o| {
        !matches!(
            o.name.as_str(),
            "dynlist"
                | "accesslog"
                | "syncprov"
                | "retcode"
                | "valsort"
                | "sssvlv"
                | "otp"
                | "deref"
        )
    }) {
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
        "dds" => Ok(Arc::new(canopy_directory::overlay::dds::Dds::new(
            dds::dds_config(&overlay.options)?,
        ))),
        other => Err(format!(
            "unknown overlay {other:?} (known: {})",
            KNOWN.join(", ")
        )),
    }
}

/// The dds overlay's settings, when one is configured: the Refresh operation and the expiry task
/// read them.
pub fn dds_settings(
    overlays: &[OverlayConfig],
) -> Result<Option<canopy_directory::overlay::dds::Config>, String> {
    overlays
        .iter()
        .find(|o| o.name == "dds")
        .map(|o| dds::dds_config(&o.options).map_err(|e| format!("[[overlay]] \"dds\": {e}")))
        .transpose()
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
