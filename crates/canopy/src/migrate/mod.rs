//! `canopy migrate`: translates an OpenLDAP slapd.conf or slapd.d (cn=config LDIF) into Canopy's TOML
//! configuration, listing line by line what it leaves out and why (docs/migration.md).
//!
//! Both inputs become one list of slapd.conf-style directives (`conf.rs`, `slapdd.rs`), which
//! [`translate`] reads section by section (global, `database frontend|config|monitor|mdb|...`, `overlay`)
//! into a model of the databases and server-wide settings that [`Model::render`] writes as TOML
//! (`render.rs`). Each kind of directive has its file: `global.rs`, `database.rs`, `overlays.rs`,
//! `access.rs`, `limits.rs` and `syncrepl.rs`.

mod access;
mod conf;
mod database;
mod global;
mod limits;
mod overlays;
mod render;
mod slapdd;
mod syncrepl;

use std::path::Path;

use access::check_access;
use database::database_directive;
use global::{
    at_default, config_directive, frontend_directive, global_directive, monitor_directive,
};
use overlays::{fold_log_databases, overlay_option};
use syncrepl::finish_replication;

/// One directive: its place (`file:line`), its name as written, its arguments (unquoted words) and
/// the line as written (for the report).
#[derive(Debug, Clone)]
pub struct Directive {
    pub origin: String,
    pub name: String,
    pub args: Vec<String>,
    pub text: String,
}

/// Something of the input not carried over (or carried over with a caveat).
#[derive(Debug, Clone, PartialEq)]
pub struct Remark {
    pub origin: String,
    pub text: String,
    pub reason: String,
}

/// The result: the TOML text, what was left out (exit status 1 when any), and notes on settings that have
/// no effect on Canopy's answers (pid files, log levels, modules built in).
#[derive(Debug)]
pub struct Migration {
    pub toml: String,
    pub left_out: Vec<Remark>,
    pub notes: Vec<Remark>,
}

/// Reads `slapd.conf` at `path` and translates it. Err: the input cannot be read at all.
pub fn from_slapd_conf(path: &Path) -> Result<Migration, String> {
    let shown = path.display().to_string();
    let mut directives = Vec::new();
    conf::read(path, &shown, 0, &mut directives)?;
    Ok(translate(&directives))
}

/// Reads the slapd.d tree at `dir` and translates it.
pub fn from_slapd_d(dir: &Path) -> Result<Migration, String> {
    Ok(translate(&slapdd::read(dir)?))
}

/// `canopy migrate`: writes the TOML to `out` (or standard output), the remarks to standard error; the
/// exit status is 0 when everything was translated, 1 when something was left out, 2 on unreadable input.
pub fn run(slapd_conf: Option<&Path>, slapd_d: Option<&Path>, out: Option<&Path>) -> i32 {
    let migration = match (slapd_conf, slapd_d) {
        (Some(path), None) => from_slapd_conf(path),
        (None, Some(dir)) => from_slapd_d(dir),
        _ => Err("give one of --slapd-conf FILE or --slapd-d DIR".to_string()),
    };
    let migration = match migration {
        Ok(m) => m,
        Err(e) => {
            eprintln!("canopy migrate: {e}");
            return 2;
        }
    };
    for note in &migration.notes {
        eprintln!("note: {}: {}: {}", note.origin, note.text, note.reason);
    }
    for left in &migration.left_out {
        eprintln!(
            "not translated: {}: {}: {}",
            left.origin, left.text, left.reason
        );
    }
    match out {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &migration.toml) {
                eprintln!("canopy migrate: {}: {e}", path.display());
                return 2;
            }
        }
        None => print!("{}", migration.toml),
    }
    if migration.left_out.is_empty() {
        0
    } else {
        eprintln!(
            "canopy migrate: {} setting{} not translated (listed above and at the top of the output)",
            migration.left_out.len(),
            if migration.left_out.len() == 1 { "" } else { "s" }
        );
        1
    }
}

/// Directive names compared as slapd compares them, and as olc attribute names line up with them:
/// case-insensitively, without `-` and `_` (`password-hash` = `olcPasswordHash`).
pub fn norm(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '-' && *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A value of an overlay option or a syncrepl key.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<String>),
}

#[derive(Debug, Default)]
struct Overlay {
    name: String,
    options: Vec<(String, Val)>,
}

#[derive(Debug, Default, Clone)]
struct LimitRule {
    who: String,
    values: Vec<(&'static str, Val)>,
}

/// Search limits of a database or the frontend.
#[derive(Debug, Default, Clone)]
struct Limits {
    size: Option<Val>,
    time: Option<Val>,
    lookthrough: Option<Val>,
    paged_size: Option<Val>,
    paged_total: Option<Val>,
    rules: Vec<LimitRule>,
}

#[derive(Debug, Default)]
struct Database {
    origin: String,
    suffix: Option<String>,
    root_dn: Option<String>,
    root_pw: Option<String>,
    directory: Option<String>,
    indexes: Vec<(String, Vec<String>)>,
    access: Vec<String>,
    /// Where each of `access` came from, for the report if Canopy's compiler refuses it.
    access_origin: Vec<Remark>,
    dropped_access: Vec<String>,
    limits: Limits,
    read_only: Option<bool>,
    subordinate: bool,
    overlays: Vec<Overlay>,
    syncrepl: Vec<Vec<(String, Val)>>,
    updateref: Option<String>,
    nosync: bool,
    /// `multiprovider on` (or `mirrormode on`): writes taken beside the consumers.
    multiprovider: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Section {
    Global,
    Frontend,
    Config,
    Monitor,
    Mdb,
    Other,
}

#[derive(Debug, Default)]
struct Model {
    databases: Vec<Database>,
    /// Frontend (global) access rules, limits and search limits.
    frontend_access: Vec<String>,
    frontend_access_origin: Vec<Remark>,
    frontend_limits: Limits,
    /// The built-in schema files included (`core`, `cosine`, ...), in order.
    builtin_schema: Vec<String>,
    schema_files: Vec<String>,
    password_hash: Option<String>,
    /// slapd's default referral (`referral`).
    referral: Option<String>,
    authz_regexp: Vec<(String, String)>,
    /// `authz-policy` other than slapd's default `none`.
    authz_policy: Option<&'static str>,
    /// `[sasl]` keys for GSSAPI (`sasl-host`, `sasl-realm`, `sasl-secprops maxssf`), as TOML values.
    sasl: Vec<(&'static str, String)>,
    tls: Vec<(&'static str, String)>,
    /// Where `TLSVerifyClient` was set: it needs a CA file in Canopy.
    tls_verify: Option<Remark>,
    server_id: Option<i64>,
    /// `rootdn` (with its directive, for the report) and `rootpw` of slapd's `database config`:
    /// Canopy's cn=config root.
    config_root_dn: Option<(String, Directive)>,
    config_root_pw: Option<String>,
    monitor: bool,
    /// The `access` lines of `database monitor`, translated.
    monitor_access: Vec<String>,
    idle_timeout: Option<i64>,
    pdu_anonymous: Option<i64>,
    pdu_bound: Option<i64>,
    filter_depth: Option<i64>,
    left_out: Vec<Remark>,
    notes: Vec<Remark>,
}

fn boolean(word: &str) -> Option<bool> {
    match word.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

impl Model {
    fn leave(&mut self, d: &Directive, reason: impl Into<String>) {
        self.left_out.push(Remark {
            origin: d.origin.clone(),
            text: d.text.clone(),
            reason: reason.into(),
        });
    }

    fn note(&mut self, d: &Directive, reason: impl Into<String>) {
        self.notes.push(Remark {
            origin: d.origin.clone(),
            text: d.text.clone(),
            reason: reason.into(),
        });
    }
}

/// Translates directives (slapd.conf's, or slapd.d's turned into them) into the model, then renders it.
pub fn translate(directives: &[Directive]) -> Migration {
    let mut m = Model::default();
    let mut section = Section::Global;
    // The overlay being configured in the current database: (name, Canopy has it).
    let mut overlay: Option<(String, bool)> = None;
    for d in directives {
        let name = norm(&d.name);
        if name == "database" {
            overlay = None;
            let kind = d
                .args
                .first()
                .map(|k| k.to_ascii_lowercase())
                .unwrap_or_default();
            section = match kind.as_str() {
                "frontend" => Section::Frontend,
                "config" => Section::Config,
                "monitor" => {
                    m.monitor = true;
                    Section::Monitor
                }
                "mdb" => {
                    m.databases.push(Database {
                        origin: d.origin.clone(),
                        ..Database::default()
                    });
                    Section::Mdb
                }
                _ => {
                    m.leave(
                        d,
                        format!(
                            "Canopy's databases are LMDB databases like back-mdb; a `{kind}` database has no \
                             counterpart, and nothing of its section is translated"
                        ),
                    );
                    Section::Other
                }
            };
            continue;
        }
        if at_default(&name, d) {
            m.note(
                d,
                "slapd's default, which Canopy matches or which changes no answer",
            );
            continue;
        }
        if section != Section::Mdb
            && matches!(name.as_str(), "readonly" | "lastmod" | "monitoring")
            && d.args.len() == 1
            && boolean(&d.args[0]) == Some(name != "readonly")
        {
            m.note(d, "slapd's default, which Canopy matches");
            continue;
        }
        if name == "monitoring" {
            m.note(d, "Canopy's cn=Monitor covers every database");
            continue;
        }
        match section {
            Section::Other => {
                m.leave(d, "belongs to a database that is not translated");
                continue;
            }
            Section::Config => {
                config_directive(&mut m, d, &name);
                continue;
            }
            Section::Monitor => {
                monitor_directive(&mut m, d, &name);
                continue;
            }
            _ => {}
        }
        if name == "overlay" {
            let oname = d
                .args
                .first()
                .cloned()
                .unwrap_or_default()
                .to_ascii_lowercase();
            let oname = oname.strip_prefix("slapo-").unwrap_or(&oname).to_string();
            if section != Section::Mdb {
                m.leave(d, "a global overlay: Canopy's overlays belong to a database; add it to each database that needs it");
                overlay = Some((oname, false));
                continue;
            }
            if oname == "syncprov" {
                m.note(d, "Canopy's syncrepl provider is built in and on for every database (docs/replication.md)");
                overlay = Some((oname, true));
                continue;
            }
            let known = canopy_server::overlays::KNOWN.contains(&oname.as_str());
            if known {
                if let Some(db) = m.databases.last_mut() {
                    db.overlays.push(Overlay {
                        name: oname.clone(),
                        options: Vec::new(),
                    });
                }
            } else {
                m.leave(
                    d,
                    format!(
                        "Canopy has no `{oname}` overlay (it has {})",
                        canopy_server::overlays::KNOWN.join(", ")
                    ),
                );
            }
            overlay = Some((oname, known));
            continue;
        }
        if let Some((oname, known)) = overlay.clone() {
            if overlay_option(&mut m, d, &name, &oname, known) {
                continue;
            }
        }
        if section == Section::Mdb && database_directive(&mut m, d, &name) {
            continue;
        }
        if section != Section::Mdb && frontend_directive(&mut m, d, &name) {
            continue;
        }
        global_directive(&mut m, d, &name, section);
    }
    finish(&mut m);
    let toml = m.render();
    Migration {
        toml,
        left_out: m.left_out,
        notes: m.notes,
    }
}

fn remark(d: &Directive) -> Remark {
    Remark {
        origin: d.origin.clone(),
        text: d.text.clone(),
        reason: String::new(),
    }
}

/// Cross-database decisions once everything is read.
fn finish(m: &mut Model) {
    if m.config_root_pw.is_none() {
        match m.config_root_dn.take() {
            Some((dn, d)) if dn.eq_ignore_ascii_case("cn=config") => {
                m.note(&d, "slapd's default for cn=config")
            }
            Some((_, d)) => m.leave(
                &d,
                "a root DN of slapd's cn=config without a rootpw (bound only through SASL): Canopy's \
                 cn=config is open to root over ldapi, and config_root_dn needs config_root_password \
                 (docs/configuration.md)",
            ),
            None => {}
        }
    }
    fold_log_databases(m);
    check_access(m);
    let asks = m
        .tls
        .iter()
        .any(|(k, v)| *k == "verify_client" && v != "never");
    if asks && !m.tls.iter().any(|(k, _)| *k == "ca_file") {
        m.tls.retain(|(k, _)| *k != "verify_client");
        if let Some(mut r) = m.tls_verify.take() {
            r.reason = "Canopy verifies client certificates against `[tls] ca_file` only (slapd may use the system's \
                        CAs): set TLSCACertificateFile, or ca_file and verify_client by hand"
                .into();
            m.left_out.push(r);
        }
    }
    let norm_dn = |dn: &str| -> String {
        dn.split(',')
            .map(|rdn| rdn.trim().to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join(",")
    };
    let suffixes: Vec<Option<String>> = m
        .databases
        .iter()
        .map(|db| db.suffix.as_deref().map(norm_dn))
        .collect();
    // An empty suffix (slapd's `suffix ""`) holds every name no other database holds.
    let inside = |a: &str, b: &str| {
        (b.is_empty() && !a.is_empty()) || (a.len() > b.len() && a.ends_with(&format!(",{b}")))
    };
    // The top-level keys must be a database inside no other (Canopy refuses the first database inside a
    // later one; slapd wants the inner database first). Move the first such database to the front.
    if let Some(outer) = suffixes.iter().position(|s| {
        s.as_ref()
            .is_some_and(|s| !suffixes.iter().flatten().any(|o| inside(s, o)))
    }) {
        if outer != 0 {
            let db = m.databases.remove(outer);
            m.databases.insert(0, db);
        }
    }
    let suffixes: Vec<Option<String>> = m
        .databases
        .iter()
        .map(|db| db.suffix.as_deref().map(norm_dn))
        .collect();
    let mut missing = Vec::new();
    for (i, db) in m.databases.iter_mut().enumerate() {
        let Some(s) = &suffixes[i] else {
            missing.push(db.origin.clone());
            continue;
        };
        let nested = suffixes.iter().flatten().any(|o| inside(s, o));
        if !nested {
            db.subordinate = false;
        }
    }
    for origin in missing {
        m.left_out.push(Remark {
            origin,
            text: "database mdb".into(),
            reason: "a database without a suffix is left out".into(),
        });
    }
    m.databases.retain(|db| db.suffix.is_some());
    for (i, db) in m.databases.iter().enumerate() {
        let place = |reason: String| Remark {
            origin: db.origin.clone(),
            text: format!(
                "database mdb (suffix {})",
                db.suffix.as_deref().unwrap_or_default()
            ),
            reason,
        };
        if db
            .directory
            .as_deref()
            .is_some_and(|d| Path::new(d).is_relative())
        {
            m.notes.push(place(format!(
                "the relative directory {:?} was slapd's, relative to its working directory; Canopy reads \
                 it relative to {}: check it",
                db.directory.as_deref().unwrap_or_default(),
                if i == 0 { "its own working directory" } else { "data_dir" }
            )));
        }
        if i == 0 && db.root_dn.is_some() && db.root_pw.is_none() {
            m.notes.push(place(
                "no rootpw: Canopy takes the root password from CANOPY_ROOTPW, or generates one on first start \
                 and prints it once (docs/configuration.md)"
                    .into(),
            ));
        }
    }
    finish_replication(m);
}

#[cfg(test)]
mod tests;
