//! `canopy migrate`: translates an OpenLDAP slapd.conf or slapd.d (cn=config LDIF) into Canopy's TOML
//! configuration, listing line by line what it leaves out and why (docs/migration.md).
//!
//! Both inputs become one list of slapd.conf-style directives (`conf.rs`, `slapdd.rs`), which
//! [`translate`] reads section by section (global, `database frontend|config|monitor|mdb|...`, `overlay`)
//! into a model of the databases and server-wide settings that [`Model::render`] writes as TOML.

mod conf;
mod slapdd;

use std::fmt::Write as _;
use std::path::Path;

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
    schema_files: Vec<String>,
    password_hash: Option<String>,
    /// slapd's default referral (`referral`).
    referral: Option<String>,
    authz_regexp: Vec<(String, String)>,
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

/// The schema Canopy has built in, by file stem.
const BUILT_IN_SCHEMA: [&str; 4] = ["core", "cosine", "inetorgperson", "nis"];

/// Modules whose work Canopy does without them.
const BUILT_IN_MODULES: [&str; 16] = [
    "back_mdb",
    "accesslog",
    "back_monitor",
    "memberof",
    "refint",
    "unique",
    "constraint",
    "dynlist",
    "homedir",
    "auditlog",
    "ppolicy",
    "syncprov",
    "pw-sha2",
    "argon2",
    "pw-pbkdf2",
    "back_config",
];

/// The syncrepl keywords Canopy's `[[syncrepl]]` tables take (issue 11), and whether each is a number.
const SYNCREPL_KEYS: [(&str, bool); 19] = [
    ("syncdata", false),
    ("logbase", false),
    ("logfilter", false),
    ("rid", true),
    ("provider", false),
    ("searchbase", false),
    ("scope", false),
    ("filter", false),
    ("attrs", false),
    ("type", false),
    ("interval", false),
    ("bindmethod", false),
    ("saslmech", false),
    ("binddn", false),
    ("credentials", false),
    ("retry", false),
    ("tls_cacert", false),
    ("timeout", true),
    ("starttls", false),
];

/// How an overlay option is carried: slapd's name (normalized), the overlay, Canopy's key and the kind.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Bool,
    /// Words, or several lines, gathered into one list.
    Words,
    /// The whole line as one string, several lines gathered into a list.
    Line,
}

const OVERLAY_OPTIONS: [(&str, &str, &str, Kind); 37] = [
    ("logdb", "accesslog", "logdb", Kind::Str),
    ("logops", "accesslog", "logops", Kind::Words),
    ("logsuccess", "accesslog", "logsuccess", Kind::Bool),
    ("logpurge", "accesslog", "logpurge", Kind::Line),
    ("memberofgroupoc", "memberof", "group-oc", Kind::Str),
    ("memberofmemberad", "memberof", "member-ad", Kind::Str),
    ("memberofmemberofad", "memberof", "memberof-ad", Kind::Str),
    ("memberofdangling", "memberof", "dangling", Kind::Str),
    (
        "memberofdanglingerror",
        "memberof",
        "dangling-error",
        Kind::Str,
    ),
    ("memberofrefint", "memberof", "refint", Kind::Bool),
    ("memberofdn", "memberof", "dn", Kind::Str),
    ("refintattributes", "refint", "attributes", Kind::Words),
    ("refintattribute", "refint", "attributes", Kind::Words),
    ("refintnothing", "refint", "nothing", Kind::Str),
    ("refintmodifiersname", "refint", "modifiersname", Kind::Str),
    ("uniqueuri", "unique", "uri", Kind::Line),
    ("uniqueattributes", "unique", "attributes", Kind::Words),
    ("uniqueattribute", "unique", "attributes", Kind::Words),
    ("uniqueignore", "unique", "ignore", Kind::Words),
    ("uniquebase", "unique", "base", Kind::Str),
    ("uniquestrict", "unique", "strict", Kind::Bool),
    (
        "constraintattribute",
        "constraint",
        "constraints",
        Kind::Line,
    ),
    ("dynlistattrset", "dynlist", "attrset", Kind::Line),
    ("homedirskeletonpath", "homedir", "skeleton-path", Kind::Str),
    ("skeletonpath", "homedir", "skeleton-path", Kind::Str),
    ("homedirminuidnumber", "homedir", "min-uidnumber", Kind::Str),
    ("minimumuidnumber", "homedir", "min-uidnumber", Kind::Str),
    ("homedirregexp", "homedir", "regexp", Kind::Line),
    ("homedirdeletestyle", "homedir", "delete-style", Kind::Str),
    ("homedirarchivepath", "homedir", "archive-path", Kind::Str),
    ("archivepath", "homedir", "archive-path", Kind::Str),
    ("auditlog", "auditlog", "file", Kind::Str),
    ("auditlogfile", "auditlog", "file", Kind::Str),
    ("ppolicydefault", "ppolicy", "default", Kind::Str),
    (
        "ppolicyhashcleartext",
        "ppolicy",
        "hash_cleartext",
        Kind::Bool,
    ),
    ("ppolicyuselockout", "ppolicy", "use_lockout", Kind::Bool),
    (
        "ppolicyforwardupdates",
        "ppolicy",
        "forward_updates",
        Kind::Bool,
    ),
];

/// Options of ppolicy not in the table above for want of room in a fixed-size array.
const PPOLICY_NETSCAPE: &str = "ppolicysendnetscapecontrols";

/// Settings at slapd's default value that Canopy matches or that change no answer (slapd.d files and
/// `slaptest` write every default out): noted, not reported as left out. (normalized name, values.)
const SLAPD_DEFAULTS: [(&str, &[&str]); 27] = [
    ("ppolicydisablewrite", &["false", "off"]),
    ("maxfilterdepth", &["1000"]),
    ("attributeoptions", &["lang-"]),
    ("concurrency", &["0"]),
    ("connmaxpending", &["100"]),
    ("connmaxpendingauth", &["1000"]),
    ("indexsubstrifmaxlen", &["4"]),
    ("indexsubstrifminlen", &["2"]),
    ("indexsubstranylen", &["4"]),
    ("indexsubstranystep", &["2"]),
    ("indexhash64", &["false", "off"]),
    ("indexintlen", &["4"]),
    ("localssf", &["71"]),
    ("reverselookup", &["false", "off"]),
    ("saslauxpropsdontusecopyignore", &["false", "off"]),
    ("saslsecprops", &["noplain,noanonymous"]),
    ("writetimeout", &["0"]),
    ("addcontentacl", &["false", "off"]),
    ("lastbind", &["false", "off"]),
    ("maxderefdepth", &["15", "0"]),
    ("schemadn", &["cn=subschema"]),
    ("syncusesubentry", &["false", "off"]),
    ("maxentrysize", &["0"]),
    ("tlsprotocolmin", &["0.0"]),
    ("tlscrlcheck", &["none"]),
    ("authzpolicy", &["none"]),
    ("threadqueues", &["1"]),
];

/// Whether `d` sets one of [`SLAPD_DEFAULTS`] to its default.
fn at_default(name: &str, d: &Directive) -> bool {
    let value = d.args.join(" ").to_ascii_lowercase();
    SLAPD_DEFAULTS
        .iter()
        .any(|(n, values)| *n == name && values.contains(&value.as_str()))
}

fn boolean(word: &str) -> Option<bool> {
    match word.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// A slapd limit value: a number, `unlimited` (or `none`), or `disabled`.
fn limit_value(word: &str) -> Option<Val> {
    match word.to_ascii_lowercase().as_str() {
        "unlimited" | "none" => Some(Val::Str("unlimited".into())),
        "disabled" => Some(Val::Str("disabled".into())),
        _ => word.parse::<i64>().ok().filter(|n| *n >= 0).map(Val::Int),
    }
}

/// An access-rule word as slapd read it, written back so that Canopy's reader splits it the same way:
/// a value with white space or quotes is quoted again.
fn requote(word: &str) -> String {
    let needs = word.is_empty()
        || word.ends_with('=')
        || word.contains(|c: char| c.is_whitespace() || c == '"');
    if !needs {
        return word.to_string();
    }
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    match word.split_once('=') {
        Some((key, value)) if !key.is_empty() && !key.contains(char::is_whitespace) => {
            format!("{key}=\"{}\"", escape(value))
        }
        _ => format!("\"{}\"", escape(word)),
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

fn config_directive(m: &mut Model, d: &Directive, name: &str) {
    let value = d.args.join(" ").to_ascii_lowercase();
    match name {
        // slapd's defaults for cn=config: no rules but the root DN's, and that is cn=config itself.
        "access" if value == "to * by * none" => m.note(d, "slapd's default for cn=config"),
        "rootdn" | "rootpw" if d.args.len() == 1 => {
            // Canopy's live configuration tree has its own root (config_root_dn and
            // config_root_password), as slapd's cn=config database has.
            let arg = d.args[0].clone();
            if name == "rootdn" {
                m.config_root_dn = Some((arg, d.clone()));
            } else {
                m.config_root_pw = Some(arg);
            }
        }
        "access" | "rootdn" | "rootpw" | "limits" => m.leave(
            d,
            "protects slapd's cn=config database: Canopy's configuration is its TOML file, \
             changed by whoever may write that file",
        ),
        _ => m.note(
            d,
            "a setting of slapd's cn=config database, which Canopy does not have; no effect on data",
        ),
    }
}

fn monitor_directive(m: &mut Model, d: &Directive, name: &str) {
    match name {
        "rootdn" | "rootpw" => m.note(
            d,
            "cn=Monitor is readable by the root DN of the first database and the ldapi root peer",
        ),
        "access" => access(m, d, Rules::Monitor),
        _ => m.leave(
            d,
            "a setting of slapd's monitor database that Canopy does not have",
        ),
    }
}

/// Options of the current overlay. Returns false when `name` is not one, so that it is read as a database
/// directive (slapd does the same: overlay options first, then the database's).
fn overlay_option(m: &mut Model, d: &Directive, name: &str, overlay: &str, known: bool) -> bool {
    if overlay == "syncprov" && name.starts_with("syncprov") {
        m.note(
            d,
            "Canopy's provider keeps its own session log and checkpoints (docs/replication.md)",
        );
        return true;
    }
    if !known {
        if name.starts_with(&norm(overlay)) || !is_known_directive(name) {
            m.leave(
                d,
                format!("an option of the `{overlay}` overlay, which is not translated"),
            );
            return true;
        }
        return false;
    }
    let found = OVERLAY_OPTIONS
        .iter()
        .find(|(slapd, o, _, _)| *slapd == name && *o == overlay)
        .map(|(_, _, key, kind)| (*key, *kind))
        .or_else(|| {
            (overlay == "ppolicy" && name == PPOLICY_NETSCAPE)
                .then_some(("send_netscape_controls", Kind::Bool))
        });
    let Some((key, kind)) = found else {
        if name.starts_with(&norm(overlay))
            || (overlay == "auditlog" && name.starts_with("auditlog"))
        {
            m.leave(
                d,
                format!("Canopy's `{overlay}` overlay has no such option (docs/overlays.md)"),
            );
            return true;
        }
        return false;
    };
    let value = match kind {
        Kind::Str => match d.args.as_slice() {
            [one] => Val::Str(one.clone()),
            _ => {
                m.leave(d, "expected one value");
                return true;
            }
        },
        Kind::Bool => match d.args.as_slice() {
            [] => Val::Bool(true),
            [one] => match boolean(one) {
                Some(b) => Val::Bool(b),
                None => {
                    m.leave(d, "expected TRUE or FALSE");
                    return true;
                }
            },
            _ => {
                m.leave(d, "expected one value");
                return true;
            }
        },
        Kind::Words => Val::List(
            d.args
                .iter()
                .flat_map(|a| a.split([',', ' ']))
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        Kind::Line => Val::List(vec![d
            .args
            .iter()
            .map(|a| requote(a))
            .collect::<Vec<_>>()
            .join(" ")]),
    };
    let Some(db) = m.databases.last_mut() else {
        return true;
    };
    let Some(target) = db.overlays.last_mut() else {
        return true;
    };
    match (target.options.iter_mut().find(|(k, _)| k == key), value) {
        (Some((_, Val::List(have))), Val::List(more)) => have.extend(more),
        (Some(_), _) => m.leave(d, format!("`{key}` given twice; the first is kept")),
        (None, value) => target.options.push((key.to_string(), value)),
    }
    true
}

/// Directives this translator knows outside overlays: after an overlay it does not translate, these still
/// go to the database or the global settings (as slapd hands an overlay only what it recognizes).
fn is_known_directive(name: &str) -> bool {
    is_database_directive(name)
        || name.starts_with("tls")
        || matches!(
            name,
            "include"
                | "passwordhash"
                | "authzregexp"
                | "saslregexp"
                | "serverid"
                | "idletimeout"
                | "sockbufmaxincoming"
                | "sockbufmaxincomingauth"
                | "maxfilterdepth"
                | "moduleload"
                | "modulepath"
                | "pidfile"
                | "argsfile"
                | "loglevel"
                | "threads"
                | "toolthreads"
        )
}

/// Directives that belong to a database section.
fn is_database_directive(name: &str) -> bool {
    matches!(
        name,
        "suffix"
            | "rootdn"
            | "rootpw"
            | "directory"
            | "index"
            | "access"
            | "limits"
            | "sizelimit"
            | "timelimit"
            | "readonly"
            | "subordinate"
            | "syncrepl"
            | "updateref"
            | "maxsize"
            | "checkpoint"
            | "dbnosync"
            | "nosync"
            | "lastmod"
            | "monitoring"
            | "mirrormode"
            | "multiprovider"
            | "envflags"
            | "maxreaders"
            | "mode"
            | "searchstack"
    )
}

fn database_directive(m: &mut Model, d: &Directive, name: &str) -> bool {
    let one = d.args.first().cloned().unwrap_or_default();
    let single = d.args.len() == 1;
    let db_index = m.databases.len() - 1;
    match name {
        "suffix" if single => {
            let db = &mut m.databases[db_index];
            if db.suffix.is_some() {
                m.leave(d, "Canopy's databases have one suffix each; only the first is kept");
            } else {
                db.suffix = Some(one);
            }
        }
        "rootdn" if single => m.databases[db_index].root_dn = Some(one),
        "rootpw" if single => m.databases[db_index].root_pw = Some(one),
        "directory" if single => m.databases[db_index].directory = Some(one),
        "index" => index(m, d),
        "access" => access(m, d, Rules::Database(db_index)),
        "limits" => limits(m, d, Some(db_index)),
        "sizelimit" | "timelimit" => search_limit(m, d, name, Some(db_index)),
        "readonly" => match d.args.as_slice() {
            [v] if boolean(v).is_some() => m.databases[db_index].read_only = boolean(v),
            _ => m.leave(d, "expected on or off"),
        },
        "subordinate" => match d.args.as_slice() {
            [] => m.databases[db_index].subordinate = true,
            [v] if boolean(v) == Some(true) => m.databases[db_index].subordinate = true,
            [v] if boolean(v) == Some(false) => {}
            _ => {
                m.databases[db_index].subordinate = true;
                m.leave(d, "`advertise` (listing the glued database in the root DSE) is not supported; glued without it");
            }
        },
        "syncrepl" => syncrepl(m, d, db_index),
        "updateref" if single => {
            if m.databases[db_index].updateref.is_some() {
                m.leave(d, "one updateref per database; the first is kept");
            } else {
                m.databases[db_index].updateref = Some(one);
            }
        }
        "dbnosync" | "nosync" => match d.args.as_slice() {
            [] => m.databases[db_index].nosync = true,
            [v] if boolean(v).is_some() => m.databases[db_index].nosync = boolean(v) == Some(true),
            _ => m.leave(d, "expected TRUE or FALSE"),
        },
        "maxsize" | "checkpoint" | "maxreaders" | "searchstack" | "mode" | "monitoring" | "rtxnsize" => {
            m.note(d, "LMDB tuning that Canopy does itself (its map grows as needed, commits are durable per transaction)")
        }
        "lastmod" => match d.args.first().and_then(|v| boolean(v)) {
            Some(true) => m.note(d, "Canopy always keeps the operational attributes"),
            _ => m.leave(d, "Canopy always keeps createTimestamp, modifiersName, entryCSN and the like"),
        },
        "mirrormode" | "multiprovider" => match d.args.first().and_then(|v| boolean(v)) {
            Some(false) => m.note(d, "off, as in Canopy"),
            Some(true) => m.databases[db_index].multiprovider = true,
            None => m.leave(d, "expected TRUE or FALSE"),
        },
        _ => return false,
    }
    true
}

/// Access rules, limits and search limits outside any data database: the frontend's, which slapd
/// applies after (rules) or in the absence of (limits) each database's own.
fn frontend_directive(m: &mut Model, d: &Directive, name: &str) -> bool {
    match name {
        "access" => access(m, d, Rules::Frontend),
        "limits" => limits(m, d, None),
        "sizelimit" | "timelimit" => search_limit(m, d, name, None),
        _ => return false,
    }
    true
}

fn global_directive(m: &mut Model, d: &Directive, name: &str, section: Section) {
    let one = d.args.first().cloned().unwrap_or_default();
    let single = d.args.len() == 1;
    match name {
        "include" if single => {
            let stem = Path::new(&one)
                .file_stem()
                .map(|s| s.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            // slapd.d's schema entries are named cn={N}core.
            let stem = slapdd::strip_ordinal(stem.trim_start_matches("cn=")).to_string();
            if BUILT_IN_SCHEMA.contains(&stem.as_str()) {
                m.note(d, "built into Canopy");
            } else if stem == "schema" || stem == "cn=schema" {
                m.note(d, "the built-in schema");
            } else {
                m.schema_files.push(one);
            }
        }
        "referral" if single => m.referral = Some(one),
        "passwordhash" => {
            if let Some(first) = d.args.first() {
                m.password_hash = Some(first.clone());
                if d.args.len() > 1 {
                    m.leave(d, "Canopy hashes new passwords with one scheme; the first is used");
                }
            } else {
                m.leave(d, "no scheme given");
            }
        }
        "authzregexp" | "saslregexp" => match d.args.as_slice() {
            [pattern, replace] => m.authz_regexp.push((pattern.clone(), replace.clone())),
            _ => m.leave(d, "expected a pattern and a replacement"),
        },
        "tlscertificatefile" if single => m.tls.push(("cert_file", one)),
        "tlscertificatekeyfile" if single => m.tls.push(("key_file", one)),
        "tlscacertificatefile" if single => m.tls.push(("ca_file", one)),
        "tlsverifyclient" if single => match one.to_ascii_lowercase().as_str() {
            v @ ("never" | "allow" | "try" | "demand" | "hard" | "true") => {
                let v = if matches!(v, "hard" | "true") { "demand" } else { v };
                m.tls.push(("verify_client", v.to_string()));
                m.tls_verify = Some(Remark {
                    origin: d.origin.clone(),
                    text: d.text.clone(),
                    reason: String::new(),
                });
            }
            _ => m.leave(d, "expected never, allow, try or demand"),
        },
        "tlscacertificatepath" => m.leave(d, "Canopy reads client CAs from one PEM file (`[tls] ca_file`): concatenate the directory's certificates into one"),
        "tlsciphersuite" | "tlsprotocolmin" | "tlsdhparamfile" | "tlseccname" | "tlscrlcheck" | "tlscrlfile" | "tlsrandfile" => {
            m.leave(d, "Canopy's TLS (rustls) offers TLS 1.2 and 1.3 with its own safe cipher list; not configurable")
        }
        "serverid" => match d.args.as_slice() {
            [id] => match id.parse::<i64>() {
                Ok(n) if (0..=4095).contains(&n) => m.server_id = Some(n),
                _ => m.leave(d, "expected a number from 0 to 4095"),
            },
            [id, _url] => {
                if let Ok(n) = id.parse::<i64>() {
                    m.server_id.get_or_insert(n);
                }
                m.leave(d, "server IDs with URLs (one line per server of a group, slapd picking the one whose URL it listens on): Canopy takes one server_id per server, and the first number is used; set each server's own")
            }
            _ => m.leave(d, "expected a number"),
        },
        "idletimeout" => match one.parse::<i64>() {
            Ok(n) if n >= 0 && single => m.idle_timeout = Some(n),
            _ => m.leave(d, "expected a number of seconds"),
        },
        "maxfilterdepth" => match one.parse::<i64>() {
            Ok(n) if (1..=1024).contains(&n) && single => m.filter_depth = Some(n),
            _ => m.leave(d, "Canopy accepts filter depths up to 1024"),
        },
        "sockbufmaxincoming" => match one.parse::<i64>() {
            Ok(n) if n > 0 && single => m.pdu_anonymous = Some(n),
            _ => m.leave(d, "expected a number of bytes"),
        },
        "sockbufmaxincomingauth" => match one.parse::<i64>() {
            Ok(n) if n > 0 && single => m.pdu_bound = Some(n),
            _ => m.leave(d, "expected a number of bytes"),
        },
        "moduleload" => {
            let module = Path::new(&one)
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            let module = module.strip_suffix(".so").unwrap_or(&module).to_string();
            let module = module.strip_suffix(".la").unwrap_or(&module).to_string();
            if BUILT_IN_MODULES.contains(&module.as_str()) {
                m.note(d, "built into Canopy");
            } else {
                m.leave(d, format!("Canopy loads no modules; `{module}` has no built-in counterpart"));
            }
        }
        "modulepath" | "pidfile" | "argsfile" | "loglevel" | "threads" | "toolthreads" | "gentlehup"
        | "logfile" | "logfileonly" | "logfilerotate" | "tooldb" | "listenerthreads" | "configfile"
        | "configdir" => m.note(
            d,
            "process, logging or module setting, no effect on answers: Canopy keeps canopy.pid in its data directory, logs through CANOPY_LOG and sizes its own threads (docs/operations.md)",
        ),
        "backend" => m.note(d, "backend settings: Canopy has the one LMDB backend"),
        "rootdn" | "rootpw" | "suffix" | "index" | "directory" if section != Section::Mdb => {
            m.leave(d, "outside a `database mdb` section")
        }
        "readonly" if section != Section::Mdb => {
            m.leave(d, "a global read-only switch: set `read_only` on each database instead")
        }
        _ => m.leave(d, "Canopy has no counterpart"),
    }
}

fn index(m: &mut Model, d: &Directive) {
    let (attrs, kinds) = match d.args.as_slice() {
        [attrs] => (attrs, "eq"),
        [attrs, kinds] => (attrs, kinds.as_str()),
        _ => return m.leave(d, "expected attributes and index kinds"),
    };
    let mut canopy = Vec::new();
    for kind in kinds.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let k = match kind.to_ascii_lowercase().as_str() {
            "eq" | "equality" => "eq",
            "pres" | "present" => "pres",
            "sub" | "substr" | "substring" | "subinitial" | "subany" | "subfinal" => "sub",
            "approx" | "approximate" => "approx",
            "nolang" | "nosubtypes" | "notags" => {
                m.note(
                    d,
                    format!(
                        "`{kind}`: Canopy's indexes hold subtypes; results are the same either way"
                    ),
                );
                continue;
            }
            _ => return m.leave(d, format!("unknown index kind `{kind}`")),
        };
        if !canopy.contains(&k) {
            canopy.push(k);
        }
    }
    if attrs
        .split(',')
        .any(|a| a.trim().eq_ignore_ascii_case("default"))
    {
        m.note(d, "`index default` sets the kinds of later index lines without kinds; Canopy lists kinds on each");
    }
    let Some(db) = m.databases.last_mut() else {
        return;
    };
    for attr in attrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if attr.eq_ignore_ascii_case("default") {
            continue;
        }
        match db
            .indexes
            .iter_mut()
            .find(|(a, _)| a.eq_ignore_ascii_case(attr))
        {
            Some((_, have)) => {
                for k in &canopy {
                    if !have.iter().any(|h| h == k) {
                        have.push(k.to_string());
                    }
                }
            }
            None => db.indexes.push((
                attr.to_string(),
                canopy.iter().map(|k| k.to_string()).collect(),
            )),
        }
    }
}

/// Access-rule features Canopy refuses (docs/access-control.md, "Not supported"), found by their words.
fn unsupported_access(words: &[String]) -> Option<String> {
    for w in words {
        let lower = w.to_ascii_lowercase();
        let key = lower.split('=').next().unwrap_or("");
        if lower.starts_with("attrs=!") || lower.starts_with("attr=!") {
            return Some("negated attribute lists (`attrs=!...`)".into());
        }
        if key.starts_with("dn.level") || key.contains(".level{") {
            return Some("`dn.level{n}`".into());
        }
        if key.starts_with("val.") && !matches!(key, "val.exact" | "val.regex") {
            return Some(format!("the DN styles of `val` (`{key}`)"));
        }
        if matches!(
            key.split('.').next().unwrap_or(""),
            "set"
                | "dnattr"
                | "domain"
                | "sockurl"
                | "sockname"
                | "realanonymous"
                | "realusers"
                | "realself"
                | "realdn"
                | "aci"
                | "dynacl"
        ) {
            return Some(format!("`{key}` clauses"));
        }
        if (key.starts_with("dn") || key.starts_with("group"))
            && w.contains('$')
            && key.contains("expand")
        {
            return Some("`$1` substitutions".into());
        }
    }
    None
}

/// Which list an `access` line goes to.
#[derive(Clone, Copy)]
enum Rules {
    Frontend,
    Database(usize),
    Monitor,
}

fn access(m: &mut Model, d: &Directive, to: Rules) {
    let words: Vec<String> = d.args.clone();
    if words.first().map(|w| w.eq_ignore_ascii_case("to")) != Some(true) {
        return m.leave(d, "expected `to <what> by <who> <access>`");
    }
    let rule = words
        .iter()
        .map(|w| requote(w))
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(feature) = unsupported_access(&words) {
        m.leave(d, format!("Canopy's access rules do not support {feature}; the rule is left out, which may grant or deny more than slapd did: review the list"));
        if let Rules::Database(i) = to {
            m.databases[i].dropped_access.push(rule);
        }
        return;
    }
    match to {
        Rules::Database(i) => {
            m.databases[i].access.push(rule);
            m.databases[i].access_origin.push(remark(d));
        }
        Rules::Monitor => m.monitor_access.push(rule),
        Rules::Frontend => {
            // Rules for the root DSE and cn=Subschema: Canopy serves both to everyone, as these rules do.
            let special = words
                .get(1)
                .and_then(|w| w.split_once('='))
                .is_some_and(|(k, v)| {
                    matches!(
                        k.to_ascii_lowercase().as_str(),
                        "dn" | "dn.exact" | "dn.base" | "dn.baseobject"
                    ) && (v.is_empty() || v.eq_ignore_ascii_case("cn=subschema"))
                })
                && words.get(2).is_some_and(|w| w.eq_ignore_ascii_case("by"));
            if special {
                m.note(d, "Canopy serves the root DSE and cn=Subschema to everyone");
            } else {
                m.frontend_access.push(rule);
                m.frontend_access_origin.push(remark(d));
            }
        }
    }
}

/// `limits <who> <limit>...` → a `[[limits.rules]]` table.
fn limits(m: &mut Model, d: &Directive, db: Option<usize>) {
    let Some((who, specs)) = d.args.split_first() else {
        return m.leave(d, "expected `limits <who> <limit>...`");
    };
    let who_lower = who.to_ascii_lowercase();
    let canopy_who = match who_lower.as_str() {
        "anonymous" | "users" | "*" => Some(who_lower.clone()),
        _ => match who.split_once('=') {
            Some((style, dn)) => match style.to_ascii_lowercase().as_str() {
                "dn" | "dn.exact" | "dn.base" | "dn.baseobject" => Some(format!("dn.exact:{dn}")),
                "dn.sub" | "dn.subtree" => Some(format!("dn.subtree:{dn}")),
                "group" | "group/groupofnames" | "group/groupofnames/member" => {
                    Some(format!("group:{dn}"))
                }
                _ => None,
            },
            None => None,
        },
    };
    let Some(canopy_who) = canopy_who else {
        return m.leave(d, "Canopy's limit rules name anonymous, users, *, dn.exact, dn.subtree or group (groupOfNames/member)");
    };
    let mut rule = LimitRule {
        who: canopy_who,
        values: Vec::new(),
    };
    for spec in specs {
        let Some((kind, value)) = spec.split_once('=') else {
            return m.leave(d, format!("`{spec}`: expected KIND=VALUE"));
        };
        let key = match kind.to_ascii_lowercase().as_str() {
            "size" | "size.soft" | "size.hard" => "size",
            "time" | "time.soft" | "time.hard" => "time",
            "size.unchecked" => "lookthrough",
            "size.pr" => "paged_size",
            "size.prtotal" => "paged_total",
            other => return m.leave(d, format!("`{other}` limits have no counterpart in Canopy")),
        };
        let Some(v) = limit_value(value) else {
            return m.leave(
                d,
                format!("`{spec}`: expected a number, unlimited or disabled"),
            );
        };
        if kind.ends_with(".hard") && rule.values.iter().any(|(k, _)| *k == key) {
            // soft given first: Canopy has one value per limit, the soft one (what a client gets
            // without asking); a client may ask for less.
            m.note(d, format!("`{kind}`: Canopy has one value per limit (the soft one); clients may ask for less, not more"));
            continue;
        }
        if let Some(have) = rule.values.iter_mut().find(|(k, _)| *k == key) {
            if !kind.ends_with(".hard") {
                have.1 = v;
            }
            continue;
        }
        rule.values.push((key, v));
    }
    match db {
        Some(i) => m.databases[i].limits.rules.push(rule),
        None => m.frontend_limits.rules.push(rule),
    }
}

/// `sizelimit N` / `timelimit N`, or their `size.soft=N ...` forms.
fn search_limit(m: &mut Model, d: &Directive, name: &str, db: Option<usize>) {
    let mut limits = match db {
        Some(i) => m.databases[i].limits.clone(),
        None => m.frontend_limits.clone(),
    };
    for spec in &d.args {
        let (kind, value) = match spec.split_once('=') {
            Some((k, v)) => (k.to_ascii_lowercase(), v),
            None => (name.trim_end_matches("limit").to_string(), spec.as_str()),
        };
        let Some(v) = limit_value(value) else {
            return m.leave(d, format!("`{spec}`: expected a number or unlimited"));
        };
        let v = match v {
            Val::Str(s) if s == "unlimited" => Val::Int(0),
            other => other,
        };
        match kind.as_str() {
            "size" | "size.soft" => limits.size = Some(v),
            "time" | "time.soft" => limits.time = Some(v),
            "size.hard" | "time.hard" => {
                m.note(d, "Canopy has one value per limit (the soft one)");
            }
            "size.unchecked" => limits.lookthrough = Some(v),
            "size.pr" => limits.paged_size = Some(v),
            "size.prtotal" => limits.paged_total = Some(v),
            other => return m.leave(d, format!("`{other}` has no counterpart in Canopy")),
        }
    }
    match db {
        Some(i) => m.databases[i].limits = limits,
        None => m.frontend_limits = limits,
    }
}

fn syncrepl(m: &mut Model, d: &Directive, db: usize) {
    let mut table: Vec<(String, Val)> = Vec::new();
    let mut unknown = Vec::new();
    for arg in &d.args {
        let Some((key, value)) = arg.split_once('=') else {
            unknown.push(arg.clone());
            continue;
        };
        let key = key.to_ascii_lowercase();
        // slapd's defaults, which slapd.d files spell out: the same as leaving them out.
        let default = matches!(
            (key.as_str(), value.to_ascii_lowercase().as_str()),
            ("timeout" | "network-timeout" | "tcp-user-timeout", "0")
                | ("starttls", "no")
                | ("filter", "(objectclass=*)")
                | ("scope", "sub" | "subtree")
                | ("keepalive", "0:0:0")
                | ("schemachecking", "off")
                | ("syncdata", "default")
        );
        if default {
            continue;
        }
        match SYNCREPL_KEYS.iter().find(|(k, _)| *k == key) {
            Some((k, true)) => match value.parse::<i64>() {
                Ok(n) => table.push((k.to_string(), Val::Int(n))),
                Err(_) => unknown.push(arg.clone()),
            },
            Some((k, false)) => table.push((k.to_string(), Val::Str(value.to_string()))),
            None => unknown.push(key),
        }
    }
    if !table.iter().any(|(k, _)| k == "provider") {
        return m.leave(d, "a syncrepl line without provider=");
    }
    if !unknown.is_empty() {
        m.leave(
            d,
            format!(
                "syncrepl keywords Canopy does not take, left out of the table: {}",
                unknown.join(", ")
            ),
        );
    }
    m.databases[db].syncrepl.push(table);
}

fn remark(d: &Directive) -> Remark {
    Remark {
        origin: d.origin.clone(),
        text: d.text.clone(),
        reason: String::new(),
    }
}

/// Access rules Canopy's own compiler refuses (what the word check in [`access`] cannot tell: an unknown
/// attribute, a bad DN or regular expression...), each left out with the compiler's reason. Needs the
/// schema: when the schema files do not load here, the rules are not checked (a note says so;
/// `canopy serve --check` checks them where the files are).
fn check_access(m: &mut Model) {
    let config = canopy_server::Config {
        schema_files: m
            .schema_files
            .iter()
            .map(std::path::PathBuf::from)
            .collect(),
        overlay: m
            .databases
            .iter()
            .flat_map(|db| &db.overlays)
            .map(|o| canopy_server::config::OverlayConfig {
                name: o.name.clone(),
                options: Default::default(),
            })
            .collect(),
        ..canopy_server::Config::default()
    };
    let schema = match canopy_server::load_schema(&config) {
        Ok(schema) => schema,
        Err(e) => {
            m.notes.push(Remark {
                origin: "schema".into(),
                text: m.schema_files.join(" "),
                reason: format!(
                    "access rules not checked against the schema, which does not load here: {e}"
                ),
            });
            return;
        }
    };
    let refused = |rule: &str| {
        canopy_server::acl::Acl::compile(&schema, &[rule.to_string()], Vec::new()).err()
    };
    let mut left_out = Vec::new();
    let mut check = |rules: &mut Vec<String>,
                     origins: &mut Vec<Remark>,
                     dropped: &mut Vec<String>| {
        let mut kept = (Vec::new(), Vec::new());
        for (rule, origin) in rules.drain(..).zip(origins.drain(..)) {
            match refused(&rule) {
                Some(why) => {
                    let why = why
                        .strip_prefix("access rule 0: ")
                        .unwrap_or(&why)
                        .to_string();
                    left_out.push(Remark {
                        reason: format!(
                            "Canopy refuses this rule ({why}); it is left out, which may grant or deny more \
                             than slapd did: review the list"
                        ),
                        ..origin
                    });
                    dropped.push(rule);
                }
                None => {
                    kept.0.push(rule);
                    kept.1.push(origin);
                }
            }
        }
        *rules = kept.0;
        *origins = kept.1;
    };
    let mut frontend_dropped = Vec::new();
    check(
        &mut m.frontend_access,
        &mut m.frontend_access_origin,
        &mut frontend_dropped,
    );
    for db in &mut m.databases {
        check(
            &mut db.access,
            &mut db.access_origin,
            &mut db.dropped_access,
        );
        db.dropped_access.extend(frontend_dropped.iter().cloned());
    }
    m.left_out.extend(left_out);
}

/// The log database of an `overlay accesslog` (its `logdb`): Canopy's overlay makes it itself, so its
/// `database` section becomes the overlay's `access` (its rules), with a note.
fn fold_log_databases(m: &mut Model) {
    let logdbs: Vec<(usize, String)> = m
        .databases
        .iter()
        .enumerate()
        .flat_map(|(i, db)| {
            db.overlays
                .iter()
                .filter(|o| o.name == "accesslog")
                .filter_map(
                    move |o| match o.options.iter().find(|(k, _)| k == "logdb") {
                        Some((_, Val::Str(dn))) => Some((i, dn.clone())),
                        _ => None,
                    },
                )
        })
        .collect();
    let same = |a: &str, b: &str| {
        let squeeze = |t: &str| t.replace(' ', "").to_ascii_lowercase();
        squeeze(a) == squeeze(b)
    };
    for (owner, dn) in logdbs {
        let Some(log) = m
            .databases
            .iter()
            .position(|db| db.suffix.as_deref().is_some_and(|s| same(s, &dn)))
        else {
            continue;
        };
        let removed = m.databases.remove(log);
        let owner = if log < owner { owner - 1 } else { owner };
        if let Some(overlay) = m.databases[owner]
            .overlays
            .iter_mut()
            .find(|o| o.name == "accesslog")
        {
            if !removed.access.is_empty() {
                overlay
                    .options
                    .push(("access".into(), Val::List(removed.access.clone())));
            }
        }
        m.notes.push(Remark {
            origin: removed.origin.clone(),
            text: format!("database with suffix {dn}"),
            reason: "the accesslog overlay's log database: Canopy's overlay opens it itself \
                     (DATA/accesslog, syncprov included); its access rules became the overlay's `access`"
                .into(),
        });
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

/// A TOML basic string.
fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn val(v: &Val) -> String {
    match v {
        Val::Str(s) => q(s),
        Val::Int(n) => n.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::List(items) => format!(
            "[{}]",
            items.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn comment_lines(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "#   {line}");
    }
}

impl Model {
    fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# Canopy configuration written by `canopy migrate` (docs/migration.md).\n");
        out.push_str("# Check it with `canopy serve --check --config FILE` before serving.\n");
        if self.left_out.is_empty() {
            out.push_str("# Everything was translated.\n");
        } else {
            out.push_str("#\n# NOT TRANSLATED (review each):\n");
            for r in &self.left_out {
                let _ = writeln!(out, "# - {}: {}", r.origin, r.text.replace('\n', " "));
                comment_lines(&mut out, &format!("  {}", r.reason));
            }
        }
        if !self.notes.is_empty() {
            out.push_str("#\n# Carried over without a setting (no effect on answers):\n");
            for r in &self.notes {
                let _ = writeln!(
                    out,
                    "# - {}: {}: {}",
                    r.origin,
                    r.text.replace('\n', " "),
                    r.reason
                );
            }
        }
        out.push('\n');
        // slapd's config database has no password unless given one; its root DN is cn=config.
        if let Some(pw) = &self.config_root_pw {
            let dn = self
                .config_root_dn
                .as_ref()
                .map_or("cn=config", |(dn, _)| dn.as_str());
            let _ = writeln!(out, "config_root_dn = {}", q(dn));
            let _ = writeln!(out, "config_root_password = {}", q(pw));
        }
        let Some(first) = self.databases.first() else {
            out.push_str("# No `database mdb` section was found: Canopy's defaults apply.\n");
            return out;
        };
        let _ = writeln!(out, "# {}", first.origin);
        self.database_keys(&mut out, first, true);
        if !self.schema_files.is_empty() {
            let _ = writeln!(
                out,
                "schema_files = [{}]",
                self.schema_files
                    .iter()
                    .map(|s| q(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if let Some(h) = &self.password_hash {
            let _ = writeln!(out, "password_hash = {}", q(h));
        }
        if let Some(url) = &self.referral {
            let _ = writeln!(out, "referral = {}", q(url));
        }
        if !self.databases.is_empty() && self.databases.iter().all(|db| db.nosync) {
            out.push_str("durable = false\n");
        }
        let _ = writeln!(out, "monitor = {}", self.monitor);
        if self.monitor {
            access_list(
                &mut out,
                "monitor_access",
                &self.monitor_access,
                &self.frontend_access,
            );
        }
        if let Some(id) = self.server_id {
            let _ = writeln!(out, "server_id = {id}");
        }
        if self.databases.first().is_some_and(|db| db.multiprovider) {
            out.push_str("multiprovider = true\n");
        }
        // [limits]: the first database's, else the frontend's.
        let limits = self.effective_limits(first);
        let mut section = String::new();
        limit_keys(&mut section, &limits);
        // Connection settings at slapd's defaults are left to Canopy's (docs/limits.md).
        if let Some(n) = self.idle_timeout.filter(|n| *n != 0) {
            let _ = writeln!(section, "idle_timeout = {n}");
        }
        if let Some(n) = self.pdu_anonymous.filter(|n| *n != 262_143) {
            let _ = writeln!(section, "max_pdu_anonymous = {n}");
        }
        if let Some(n) = self.pdu_bound.filter(|n| *n != 16_777_215) {
            let _ = writeln!(section, "max_pdu_bound = {n}");
        }
        if let Some(n) = self.filter_depth {
            let _ = writeln!(section, "max_filter_depth = {}", n.min(1024));
        }
        if !section.is_empty() {
            out.push_str("\n[limits]\n");
            out.push_str(&section);
        }
        for rule in &limits.rules {
            rule_table(&mut out, "limits.rules", rule);
        }
        if self
            .tls
            .iter()
            .any(|(k, v)| *k != "verify_client" || v != "never")
        {
            out.push_str("\n[tls]\n");
            for (k, v) in &self.tls {
                let _ = writeln!(out, "{k} = {}", q(v));
            }
        }
        for (pattern, replace) in &self.authz_regexp {
            let _ = writeln!(
                out,
                "\n[[sasl.authz_regexp]]\nmatch = {}\nreplace = {}",
                q(pattern),
                q(replace)
            );
        }
        database_tables(&mut out, first, "");
        let first_limits = limits;
        for db in &self.databases[1..] {
            let _ = writeln!(out, "\n# {}\n[[database]]", db.origin);
            self.database_keys(&mut out, db, false);
            let limits = self.effective_limits(db);
            let mut section = String::new();
            for (key, mine, theirs) in [
                ("size_limit", &limits.size, &first_limits.size),
                ("time_limit", &limits.time, &first_limits.time),
                (
                    "lookthrough_limit",
                    &limits.lookthrough,
                    &first_limits.lookthrough,
                ),
                (
                    "paged_size_limit",
                    &limits.paged_size,
                    &first_limits.paged_size,
                ),
                (
                    "paged_total_limit",
                    &limits.paged_total,
                    &first_limits.paged_total,
                ),
            ] {
                // slapd's defaults where neither says: 500 entries, 3600 s (Canopy's as well).
                let default = match key {
                    "size_limit" => Some(Val::Int(500)),
                    "time_limit" => Some(Val::Int(3600)),
                    "lookthrough_limit" | "paged_size_limit" => Some(Val::Int(0)),
                    _ => None,
                };
                let mine = mine.clone().or(default.clone());
                let theirs = theirs.clone().or(default);
                if mine != theirs {
                    match mine {
                        Some(v) => {
                            let _ = writeln!(section, "{key} = {}", val(&v));
                        }
                        None => {
                            let _ =
                                writeln!(section, "# {key}: as the size limit (slapd's default)");
                        }
                    }
                }
            }
            if !section.is_empty() || !limits.rules.is_empty() {
                out.push_str("[database.limits]\n");
                out.push_str(&section);
            }
            for rule in &limits.rules {
                rule_table(&mut out, "database.limits.rules", rule);
            }
            database_tables(&mut out, db, "database.");
        }
        out
    }

    /// A database's limits with the frontend's where it sets none (slapd's inheritance).
    fn effective_limits(&self, db: &Database) -> Limits {
        let f = &self.frontend_limits;
        let l = &db.limits;
        Limits {
            size: l.size.clone().or(f.size.clone()),
            time: l.time.clone().or(f.time.clone()),
            lookthrough: l.lookthrough.clone().or(f.lookthrough.clone()),
            paged_size: l.paged_size.clone().or(f.paged_size.clone()),
            paged_total: l.paged_total.clone().or(f.paged_total.clone()),
            rules: if l.rules.is_empty() {
                f.rules.clone()
            } else {
                l.rules.clone()
            },
        }
    }

    /// The keys of a database, plain (they precede its sub-tables).
    fn database_keys(&self, out: &mut String, db: &Database, first: bool) {
        if let Some(dir) = &db.directory {
            let _ = writeln!(
                out,
                "{} = {}",
                if first { "data_dir" } else { "directory" },
                q(dir)
            );
        }
        let _ = writeln!(
            out,
            "suffix = {}",
            q(db.suffix.as_deref().unwrap_or_default())
        );
        let _ = writeln!(
            out,
            "root_dn = {}",
            q(db.root_dn.as_deref().unwrap_or_default())
        );
        if let Some(pw) = &db.root_pw {
            let _ = writeln!(out, "root_password = {}", q(pw));
        }
        if db.read_only == Some(true) {
            out.push_str("read_only = true\n");
        }
        if !first {
            let _ = writeln!(out, "subordinate = {}", db.subordinate);
        }
        access_list(out, "access", &db.access, &self.frontend_access);
        for r in &db.dropped_access {
            let _ = writeln!(out, "# left out (see the top of this file): {r}");
        }
        if !db.indexes.is_empty() {
            out.push_str("indexes = [\n");
            for (attr, kinds) in &db.indexes {
                let _ = writeln!(
                    out,
                    "  {{ attr = {}, kinds = [{}] }},",
                    q(attr),
                    kinds.iter().map(|k| q(k)).collect::<Vec<_>>().join(", ")
                );
            }
            out.push_str("]\n");
        }
        if let Some(url) = &db.updateref {
            let _ = writeln!(out, "updateref = {}", q(url));
        }
    }
}

/// `key = [...]`: a database's own rules, then the frontend's, as slapd appends them to each
/// database's; with none at all slapd lets everyone read everything (Canopy's default list would
/// hide userPassword).
fn access_list(out: &mut String, key: &str, own: &[String], frontend: &[String]) {
    let default_rule = "to * by * read".to_string();
    let mut rules: Vec<&String> = own.iter().chain(frontend).collect();
    if rules.is_empty() {
        rules.push(&default_rule);
    }
    let _ = writeln!(out, "{key} = [");
    for r in rules {
        let _ = writeln!(out, "  {},", q(r));
    }
    out.push_str("]\n");
}

fn limit_keys(out: &mut String, limits: &Limits) {
    // slapd's defaults, which are Canopy's too, are left out.
    let size = limits.size.clone().filter(|v| *v != Val::Int(500));
    let time = limits.time.clone().filter(|v| *v != Val::Int(3600));
    for (key, v) in [
        ("size_limit", &size),
        ("time_limit", &time),
        ("lookthrough_limit", &limits.lookthrough),
        ("paged_size_limit", &limits.paged_size),
        ("paged_total_limit", &limits.paged_total),
    ] {
        if let Some(v) = v {
            let _ = writeln!(out, "{key} = {}", val(v));
        }
    }
}

fn rule_table(out: &mut String, table: &str, rule: &LimitRule) {
    let _ = writeln!(out, "\n[[{table}]]\nwho = {}", q(&rule.who));
    for (k, v) in &rule.values {
        let _ = writeln!(out, "{k} = {}", val(v));
    }
}

/// Canopy's consumers feed the first database only, and need an equality index on entryUUID to find
/// the entries they receive: a consumer of another database is left out (with its `updateref`), and the
/// first database's index list gains `entryUUID eq` when it names its indexes without it. Runs after
/// the outermost database has moved to the front.
fn finish_replication(m: &mut Model) {
    let mut left = Vec::new();
    for db in m.databases.iter_mut().skip(1) {
        if !db.syncrepl.is_empty() {
            left.push(Remark {
                origin: db.origin.clone(),
                text: "syncrepl".into(),
                reason:
                    "Canopy's [[syncrepl]] consumers feed the first database only \
                         (docs/replication.md); this database's consumer and updateref are left out"
                        .into(),
            });
            db.syncrepl.clear();
            db.updateref = None;
        }
        if db.multiprovider {
            left.push(Remark {
                origin: db.origin.clone(),
                text: "multiprovider on".into(),
                reason: "Canopy's multi-provider replication is the first database's \
                         (docs/replication.md); this database's is left out"
                    .into(),
            });
            db.multiprovider = false;
        }
    }
    m.left_out.extend(left);
    if let Some(first) = m.databases.first_mut() {
        let indexed = |(attr, kinds): &(String, Vec<String>)| {
            attr.eq_ignore_ascii_case("entryUUID") && kinds.iter().any(|k| k == "eq")
        };
        if !first.syncrepl.is_empty()
            && !first.indexes.is_empty()
            && !first.indexes.iter().any(indexed)
        {
            first.indexes.push(("entryUUID".into(), vec!["eq".into()]));
        }
    }
}

/// A database's overlay and syncrepl tables (`prefix` is `database.` inside a `[[database]]`).
fn database_tables(out: &mut String, db: &Database, prefix: &str) {
    for o in &db.overlays {
        let _ = writeln!(out, "\n[[{prefix}overlay]]\nname = {}", q(&o.name));
        for (k, v) in &o.options {
            let _ = writeln!(out, "{k} = {}", val(v));
        }
    }
    for table in &db.syncrepl {
        let _ = writeln!(out, "\n[[{prefix}syncrepl]]");
        for (k, v) in table {
            let _ = writeln!(out, "{k} = {}", val(v));
        }
    }
}

#[cfg(test)]
mod tests;
