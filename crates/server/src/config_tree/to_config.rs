//! A tree's live settings applied over the configuration file: the configuration the server runs.

use canopy_proto::ResultCode;

use super::schema_children::live_schema;
use super::{
    database_dn, database_number, same_dn_text, ConfigEntry, Refusal, CONFIG_DB_DN, FRONTEND_DN,
    SUFFIX,
};
use crate::config::Config;

/// The live settings of a tree (the attributes `live_attributes` lists), applied over `base`: the whole
/// configuration the server runs with this tree, and the first database's root password. Checks what
/// can be checked without the schema; `change::build` checks the rest by building the databases' settings.
pub fn to_config(base: &Config, tree: &[ConfigEntry]) -> Result<(Config, Vec<u8>), Refusal> {
    let mut config = base.clone();
    let mut first_root_password = Vec::new();
    let find = |dn: &str| tree.iter().find(|e| e.dn.eq_ignore_ascii_case(dn));
    if let Some(global) = find(SUFFIX) {
        config.server_id = match global.single("olcServerID") {
            None => 0,
            Some(text) => text
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|n| *n <= canopy_proto::sync::SID_MAX)
                .ok_or_else(|| {
                    Refusal::handler("olcServerID", format!("invalid server ID {text:?}"))
                })?,
        };
    }
    if let Some(global) = find(SUFFIX) {
        config.sasl.authz_policy = match global.single("olcAuthzPolicy") {
            None => crate::authz::AuthzPolicy::None,
            Some(text) => crate::authz::AuthzPolicy::parse(text).ok_or_else(|| {
                Refusal::handler("olcAuthzPolicy", format!("unknown policy {text:?}"))
            })?,
        };
        config.log_level = global.get("olcLogLevel").to_vec();
        crate::config::log_filter(&config.log_level)
            .map_err(|e| Refusal::handler("olcLogLevel", e))?;
        let cert = global.single("olcTLSCertificateFile");
        let key = global.single("olcTLSCertificateKeyFile");
        if cert.is_some() != key.is_some() {
            return Err(Refusal::handler(
                "olcTLSCertificateFile",
                "olcTLSCertificateFile and olcTLSCertificateKeyFile go together",
            ));
        }
        config.tls.cert_file = cert.map(std::path::PathBuf::from);
        config.tls.key_file = key.map(std::path::PathBuf::from);
    }
    if let Some(frontend) = find(FRONTEND_DN) {
        if let Some(v) = frontend.single("olcSizeLimit") {
            config.limits.size_limit = parse_limit("olcSizeLimit", v)?;
        }
        if let Some(v) = frontend.single("olcTimeLimit") {
            config.limits.time_limit = parse_limit("olcTimeLimit", v)?;
        }
        match frontend.get("olcPasswordHash") {
            [] => {}
            [one] => {
                if canopy_password::Scheme::from_name(one).is_none() {
                    return Err(Refusal::handler("olcPasswordHash", "no valid hashes found"));
                }
                one.clone_into(&mut config.password_hash);
            }
            _ => {
                return Err(Refusal::handler(
                    "olcPasswordHash",
                    "Canopy hashes new passwords with one scheme only",
                ))
            }
        }
    }
    if let Some(db) = find(CONFIG_DB_DN) {
        config.config_access = db.ordered("olcAccess");
        config.config_root_dn = db.single("olcRootDN").map(str::to_string);
        config.config_root_password = db.single("olcRootPW").map(str::to_string);
    }
    // Databases added live follow the file's, numbered on, in the order of their numbers. A gap (a
    // crash between a delete and the renumbering after it) is closed; a copy left by a crash in the
    // middle of a renumbering (the same suffix and directory twice) counts once.
    // A file without a first database of its own leaves it to the live configuration: a database
    // added live in place of the default one has its own suffix and directory (slapd's
    // `olcDatabase={1}mdb` added to a configuration that had none).
    if base.default_database && base.first_added {
        if let Some(db) = find(&database_dn(1)) {
            if let Some(suffix) = db.single("olcSuffix") {
                config.suffix = suffix.to_string();
            }
            config.directory = db
                .single("olcDbDirectory")
                .map(std::path::PathBuf::from)
                .filter(|dir| *dir != config.data_dir);
        }
    }
    let file_count = config.database_count();
    let mut live: Vec<(usize, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| database_number(&e.dn).map(|n| (n, e)))
        .filter(|(n, _)| *n > file_count)
        .collect();
    live.sort_by_key(|(n, _)| *n);
    let mut added: Vec<&ConfigEntry> = Vec::new();
    for (_, db) in live {
        let same = |other: &&ConfigEntry| {
            same_dn_text(
                db.single("olcSuffix").unwrap_or_default(),
                other.single("olcSuffix").unwrap_or_default(),
            ) && db.single("olcDbDirectory") == other.single("olcDbDirectory")
        };
        if !added.iter().any(same) {
            config.database.push(added_database(db)?);
            added.push(db);
        }
    }
    for number in 1..=config.database_count() {
        let entry = match number.checked_sub(file_count + 1) {
            None => find(&database_dn(number)),
            Some(i) => added.get(i).copied(),
        };
        let Some(db) = entry else {
            continue;
        };
        if let Some(suffix) = db.single("olcSuffix") {
            let file = config
                .database_view(number)
                .map(|v| v.suffix)
                .unwrap_or_default();
            if !same_dn_text(suffix, &file) {
                return Err(Refusal::new(
                    ResultCode::Other,
                    format!(
                        "<olcSuffix> database {number} holds {suffix:?} in the live configuration \
                         but {file:?} in the configuration file (databases added live are numbered \
                         after the file's; add new [[database]] tables after them)"
                    ),
                ));
            }
        }
        let read_only = match db.single("olcReadOnly") {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("TRUE") => true,
            Some(v) if v.eq_ignore_ascii_case("FALSE") => false,
            Some(_) => return Err(Refusal::syntax("olcReadOnly")),
        };
        let access = db.ordered("olcAccess");
        let root_dn = db.single("olcRootDN").map(str::to_string);
        let root_password = db.single("olcRootPW").map(str::to_string);
        let size = db
            .single("olcSizeLimit")
            .map(|v| parse_limit("olcSizeLimit", v))
            .transpose()?;
        let time = db
            .single("olcTimeLimit")
            .map(|v| parse_limit("olcTimeLimit", v))
            .transpose()?;
        let indexes = parse_indexes(db.get("olcDbIndex"))?;
        let own_number = database_number(&db.dn).unwrap_or(number);
        let overlays = super::overlays_of(tree, own_number, super::file_overlays(base, number))?;
        let rules = db
            .ordered("olcLimits")
            .iter()
            .map(|text| crate::limits::parse_limit_rule(text))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Refusal::handler("olcLimits", e))?;
        match number
            .checked_sub(2)
            .and_then(|i| config.database.get_mut(i))
        {
            None => {
                config.indexes = indexes;
                config.overlay = overlays;
                config.limits.rules = rules;
                config.read_only = read_only;
                config.access = access;
                config.root_dn = root_dn.unwrap_or_default();
                first_root_password = root_password.unwrap_or_default().into_bytes();
                if size.is_some() || time.is_some() {
                    return Err(Refusal::new(
                        ResultCode::UnwillingToPerform,
                        "olcSizeLimit/olcTimeLimit: the first database takes the server-wide \
                         limits; set them on olcDatabase={-1}frontend,cn=config",
                    ));
                }
            }
            Some(table) => {
                table.indexes = indexes;
                table.overlay = overlays;
                table.limits.rules = (!rules.is_empty()).then_some(rules);
                table.read_only = read_only;
                table.access = access;
                table.root_dn = root_dn;
                table.root_password = root_password;
                table.limits.size_limit = size;
                table.limits.time_limit = time;
            }
        }
    }
    if find(SUFFIX).is_some() {
        config.modules = super::overlay_children::modules_of(tree)?;
    }
    config.schema.extend(live_schema(base, tree)?);
    crate::dbconfig::check(
        &config.suffix,
        &config.database_directory(1),
        &config.data_dir,
        &config.database,
    )
    .map_err(|e| {
        // The table checks name TOML keys; the attribute is the one they are about.
        let attr = match e.message.as_str() {
            m if m.starts_with("root_") => "olcRootDN",
            m if m.starts_with("directory") => "olcDbDirectory",
            _ => "olcSuffix",
        };
        Refusal::new(ResultCode::Other, format!("<{attr}> {}", e.message))
    })?;
    Ok((config, first_root_password))
}

/// The `[[database]]` table of a database added live: its suffix, directory and glue (the settings
/// that change live are applied by `to_config` like any database's).
fn added_database(db: &ConfigEntry) -> Result<crate::config::DatabaseConfig, Refusal> {
    let suffix = db.single("olcSuffix").ok_or_else(|| {
        Refusal::new(
            ResultCode::ObjectClassViolation,
            "olcSuffix: a new database needs its suffix",
        )
    })?;
    let subordinate = match db.single("olcSubordinate") {
        None => None,
        Some(v) if v.eq_ignore_ascii_case("TRUE") => Some(true),
        Some(_) => {
            return Err(Refusal::handler(
                "olcSubordinate",
                "only TRUE (glued into the superior database) is supported",
            ))
        }
    };
    Ok(crate::config::DatabaseConfig {
        suffix: suffix.to_string(),
        root_dn: None,
        root_password: None,
        directory: db.single("olcDbDirectory").map(std::path::PathBuf::from),
        indexes: Vec::new(),
        access: Vec::new(),
        limits: Default::default(),
        overlay: Vec::new(),
        read_only: false,
        subordinate,
        syncrepl: Vec::new(),
        updateref: None,
        multiprovider: false,
    })
}

/// `olcDbIndex` values in slapd's words: `ATTR[,ATTR...] [KIND[,KIND...]]` (no kinds: eq), kinds `eq`
/// (`equality`), `pres` (`present`), `sub` (`substr`, `subinitial`, `subany`, `subfinal`), `approx`
/// (`approximate`) and Canopy's `ord`. Attribute names are checked against the schema later.
pub fn parse_indexes(values: &[String]) -> Result<Vec<crate::config::IndexConfig>, Refusal> {
    let mut indexes: Vec<crate::config::IndexConfig> = Vec::new();
    // slapd's `default KINDS`: the kinds of the indexes after it that name none (eq without it).
    let mut default_kinds = vec!["eq".to_string()];
    for value in values {
        let mut words = value.split_whitespace();
        let attrs = words.next().unwrap_or("");
        let kinds_text = words.collect::<Vec<_>>().join("");
        let mut kinds: Vec<String> = Vec::new();
        for kind in kinds_text.split(',').filter(|k| !k.is_empty()) {
            let canonical = match kind.to_ascii_lowercase().as_str() {
                "eq" | "equality" => "eq",
                "pres" | "present" => "pres",
                "sub" | "substr" | "substring" | "subinitial" | "subany" | "subfinal" => "sub",
                "approx" | "approximate" => "approx",
                "ord" | "ordering" => "ord",
                _ => {
                    return Err(Refusal::new(
                        ResultCode::Other,
                        format!("<olcDbIndex> index type \"{kind}\" undefined"),
                    ))
                }
            };
            if !kinds.iter().any(|k| k == canonical) {
                kinds.push(canonical.to_string());
            }
        }
        if attrs.eq_ignore_ascii_case("default") {
            if kinds.is_empty() {
                return Err(Refusal::new(
                    ResultCode::Other,
                    "<olcDbIndex> default: no index type given",
                ));
            }
            default_kinds = kinds;
            continue;
        }
        if kinds.is_empty() {
            kinds = default_kinds.clone();
        }
        for attr in attrs.split(',').filter(|a| !a.is_empty()) {
            if attr.eq_ignore_ascii_case("default") {
                return Err(Refusal::new(
                    ResultCode::Other,
                    "<olcDbIndex> \"default\" stands alone: olcDbIndex: default KINDS",
                ));
            }
            match indexes
                .iter_mut()
                .find(|i| i.attr.eq_ignore_ascii_case(attr))
            {
                Some(index) => {
                    for kind in &kinds {
                        if !index.kinds.contains(kind) {
                            index.kinds.push(kind.clone());
                        }
                    }
                }
                None => indexes.push(crate::config::IndexConfig {
                    attr: attr.to_string(),
                    kinds: kinds.clone(),
                }),
            }
        }
    }
    Ok(indexes)
}

/// slapd's size or time limit words: a number or `unlimited` (0 here, as in `[limits]`).
fn parse_limit(attr: &str, text: &str) -> Result<u32, Refusal> {
    let text = text.trim();
    let number = text
        .strip_prefix("size=")
        .or_else(|| text.strip_prefix("time="))
        .unwrap_or(text);
    if number.eq_ignore_ascii_case("unlimited") || number == "-1" {
        return Ok(0);
    }
    number
        .parse::<u32>()
        .map_err(|_| Refusal::handler(attr, "unable to parse limit"))
}
