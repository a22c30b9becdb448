//! Server-wide directives: the global section, slapd's cn=config and monitor databases, the frontend.

use std::path::Path;

use super::access::{access, Rules};
use super::limits::{limits, search_limit};
use super::{slapdd, Directive, Model, Remark, Section};

/// The schema Canopy has built in, by file stem.
const BUILT_IN_SCHEMA: [&str; 4] = ["core", "cosine", "inetorgperson", "nis"];

/// Modules whose work Canopy does without them, besides the overlays and backends it has built in
/// (`canopy_server::overlays::module_overlay`): the password schemes and cn=config.
const BUILT_IN_MODULES: [&str; 4] = ["pw-sha2", "argon2", "pw-pbkdf2", "back_config"];

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
pub(super) fn at_default(name: &str, d: &Directive) -> bool {
    let value = d.args.join(" ").to_ascii_lowercase();
    SLAPD_DEFAULTS
        .iter()
        .any(|(n, values)| *n == name && values.contains(&value.as_str()))
}

pub(super) fn config_directive(m: &mut Model, d: &Directive, name: &str) {
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

pub(super) fn monitor_directive(m: &mut Model, d: &Directive, name: &str) {
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

/// Access rules, limits and search limits outside any data database: the frontend's, which slapd
/// applies after (rules) or in the absence of (limits) each database's own.
pub(super) fn frontend_directive(m: &mut Model, d: &Directive, name: &str) -> bool {
    match name {
        "access" => access(m, d, Rules::Frontend),
        "limits" => limits(m, d, None),
        "sizelimit" | "timelimit" => search_limit(m, d, name, None),
        _ => return false,
    }
    true
}

pub(super) fn global_directive(m: &mut Model, d: &Directive, name: &str, section: Section) {
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
                m.note(
                    d,
                    "built into Canopy; named in builtin_schema, so that cn=schema,cn=config lists it",
                );
                if !m.builtin_schema.contains(&stem) {
                    m.builtin_schema.push(stem);
                }
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
        "authzpolicy" | "saslauthzpolicy" if single => {
            match canopy_server::authz::AuthzPolicy::parse(&one) {
                Some(policy) => m.authz_policy = Some(policy.as_str()),
                None => m.leave(d, "expected none, from, to, any or all"),
            }
        }
        "authzregexp" | "saslregexp" => match d.args.as_slice() {
            [pattern, replace] => m.authz_regexp.push((pattern.clone(), replace.clone())),
            _ => m.leave(d, "expected a pattern and a replacement"),
        },
        "saslhost" if single => {
            // slapd's GSSAPI reads the keytab KRB5_KTNAME names, else MIT's default.
            let keytab = std::env::var("KRB5_KTNAME").unwrap_or_else(|_| "/etc/krb5.keytab".into());
            let keytab = keytab.strip_prefix("FILE:").unwrap_or(&keytab).to_string();
            m.note(d, format!("GSSAPI with the keytab {keytab} (`[sasl] keytab`)"));
            m.sasl.push(("keytab", super::render::q(&keytab)));
            m.sasl.push(("host", super::render::q(&one)));
        }
        "saslrealm" if single => m.sasl.push(("realm", super::render::q(&one))),
        "saslsecprops" if single => {
            let mut rest = Vec::new();
            for prop in one.split(',').map(str::trim) {
                match prop.strip_prefix("maxssf=").map(str::parse::<u32>) {
                    Some(Ok(max)) => m.sasl.push(("gssapi_max_ssf", max.to_string())),
                    _ if matches!(prop, "noplain" | "noanonymous" | "none" | "") => {}
                    _ => rest.push(prop),
                }
            }
            if !rest.is_empty() {
                m.leave(d, format!("Canopy takes only maxssf from sasl-secprops (GSSAPI's `[sasl] gssapi_max_ssf`); not {}", rest.join(",")));
            }
        }
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
            if BUILT_IN_MODULES.contains(&module.as_str())
                || canopy_server::overlays::module_overlay(&module).is_some()
            {
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
