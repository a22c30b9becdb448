//! The tree of a configuration: global, frontend, config and data database entries, overlays as children.

use super::schema_children::schema_children;
use super::{
    database_dn, default_access, numbered, ConfigEntry, CONFIG_DB_DN, FRONTEND_DN, SCHEMA_DN,
    SUFFIX,
};
use crate::config::Config;
use crate::limits::{LimitRule, LimitValue};

pub(super) fn one(value: impl ToString) -> Vec<String> {
    vec![value.to_string()]
}

fn limit_text(value: u32) -> String {
    match value {
        0 => "unlimited".to_string(),
        n => n.to_string(),
    }
}

fn boolean(value: bool) -> Vec<String> {
    one(if value { "TRUE" } else { "FALSE" })
}

/// The tree of a configuration. `first_root_password` is the first database's root password as
/// `serve` resolved it (the file, `CANOPY_ROOTPW` or a generated one).
pub fn from_config(config: &Config, first_root_password: &[u8]) -> Vec<ConfigEntry> {
    let tls = &config.tls;
    let path = |p: &Option<std::path::PathBuf>| {
        p.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
    };
    let verify = match tls.verify_client {
        crate::config::VerifyClient::Never => Vec::new(),
        crate::config::VerifyClient::Allow => one("allow"),
        crate::config::VerifyClient::Try => one("try"),
        crate::config::VerifyClient::Demand => one("demand"),
    };
    let server_id = match config.server_id {
        0 => Vec::new(),
        n => one(n),
    };
    let mut tree = vec![
        ConfigEntry::new(SUFFIX)
            .with("objectClass", one("olcGlobal"))
            .with("cn", one("config"))
            .with("olcServerID", server_id)
            .with("olcAuthzPolicy", one(config.sasl.authz_policy.as_str()))
            .with("olcLogLevel", config.log_level.clone())
            .with("olcTLSCertificateFile", path(&tls.cert_file))
            .with("olcTLSCertificateKeyFile", path(&tls.key_file))
            .with("olcTLSCACertificateFile", path(&tls.ca_file))
            .with("olcTLSVerifyClient", verify),
        ConfigEntry::new(SCHEMA_DN)
            .with("objectClass", one("olcSchemaConfig"))
            .with("cn", one("schema")),
    ];
    tree.extend(super::overlay_children::module_entries(&config.modules));
    tree.extend(schema_children(config));
    tree.extend([ConfigEntry::new(FRONTEND_DN)
        .with(
            "objectClass",
            vec!["olcDatabaseConfig".into(), "olcFrontendConfig".into()],
        )
        .with("olcDatabase", one("{-1}frontend"))
        .with("olcSizeLimit", one(limit_text(config.limits.size_limit)))
        .with("olcTimeLimit", one(limit_text(config.limits.time_limit)))
        .with("olcPasswordHash", one(&config.password_hash))]);
    let config_access = match config.config_access.is_empty() {
        true => vec![default_access()],
        false => config.config_access.clone(),
    };
    tree.push(
        ConfigEntry::new(CONFIG_DB_DN)
            .with("objectClass", one("olcDatabaseConfig"))
            .with("olcDatabase", one("{0}config"))
            .with("olcAccess", numbered(&config_access))
            .with("olcRootDN", config.config_root_dn.iter().cloned().collect())
            .with(
                "olcRootPW",
                config.config_root_password.iter().cloned().collect(),
            ),
    );
    for number in 1..=config.database_count() {
        let Some(view) = config.database_view(number) else {
            continue;
        };
        let own = number
            .checked_sub(2)
            .and_then(|i| config.database.get(i))
            .map(|db| &db.limits);
        let root_password = match number {
            1 => match first_root_password.is_empty() {
                true => Vec::new(),
                false => one(String::from_utf8_lossy(first_root_password)),
            },
            _ => view.root_password.iter().cloned().collect(),
        };
        let subordinate = match config.subordinate(number) {
            crate::databases::Subordinate::Glued => one("TRUE"),
            _ => Vec::new(),
        };
        let indexes = view
            .indexes
            .iter()
            .map(|i| format!("{} {}", i.attr, i.kinds.join(",")))
            .collect();
        tree.push(
            ConfigEntry::new(database_dn(number))
                .with(
                    "objectClass",
                    vec!["olcDatabaseConfig".into(), "olcMdbConfig".into()],
                )
                .with("olcDatabase", one(format!("{{{number}}}mdb")))
                .with("olcDbDirectory", one(view.data_dir.display()))
                .with("olcSuffix", one(&view.suffix))
                .with("olcSubordinate", subordinate)
                .with(
                    "olcAccess",
                    // No rules configured: Debian's default list, which is what runs.
                    match view.access.is_empty() {
                        true => numbered(&crate::acl::DEFAULT_RULES.map(String::from)),
                        false => numbered(&view.access),
                    },
                )
                .with(
                    "olcLimits",
                    // A database's own rules (the first database's are `[[limits.rules]]`).
                    numbered(
                        &match number {
                            1 => config.limits.rules.clone(),
                            _ => own.and_then(|l| l.rules.clone()).unwrap_or_default(),
                        }
                        .iter()
                        .map(limit_rule)
                        .collect::<Vec<_>>(),
                    ),
                )
                .with("olcReadOnly", boolean(view.read_only))
                .with(
                    "olcRootDN",
                    match view.root_dn.as_str() {
                        "" => Vec::new(),
                        dn => one(dn),
                    },
                )
                .with("olcRootPW", root_password)
                .with(
                    "olcSizeLimit",
                    own.and_then(|l| l.size_limit)
                        .map(limit_text)
                        .into_iter()
                        .collect(),
                )
                .with(
                    "olcTimeLimit",
                    own.and_then(|l| l.time_limit)
                        .map(limit_text)
                        .into_iter()
                        .collect(),
                )
                .with(
                    "olcSyncrepl",
                    numbered(&view.syncrepl.iter().map(syncrepl_text).collect::<Vec<_>>()),
                )
                .with("olcUpdateRef", view.updateref.iter().cloned().collect())
                .with("olcDbIndex", indexes),
        );
        // Each overlay as a child, in the order it applies, with its options in slapd's names.
        tree.extend(super::overlay_children::overlay_entries(
            number,
            &view.overlay,
        ));
    }
    tree
}

/// A `[[syncrepl]]` (or `[[database.syncrepl]]`) table in slapd's `olcSyncrepl` words, keys in the
/// order slapd writes them; values with other than plain characters quoted.
pub(super) fn syncrepl_text(table: &crate::syncrepl::SyncreplConfig) -> String {
    let quoted = |v: &str| format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
    let mut words = vec![
        format!("rid={:03}", table.rid),
        format!("provider={}", table.provider),
        format!("bindmethod={}", table.bindmethod),
        format!("timeout={}", table.timeout),
        format!("network-timeout={}", table.network_timeout),
    ];
    let keyed = [
        ("binddn", &table.binddn),
        ("credentials", &table.credentials),
        ("saslmech", &table.saslmech),
        ("authcid", &table.authcid),
        ("authzid", &table.authzid),
    ];
    for (key, value) in keyed {
        if let Some(v) = value {
            words.push(format!("{key}={}", quoted(v)));
        }
    }
    words.push(format!("starttls={}", table.starttls));
    let paths = [
        ("tls_cert", &table.tls_cert),
        ("tls_key", &table.tls_key),
        ("tls_cacert", &table.tls_cacert),
    ];
    for (key, value) in paths {
        if let Some(v) = value {
            words.push(format!("{key}={}", quoted(&v.display().to_string())));
        }
    }
    if table.tls_cert.is_some() || table.tls_cacert.is_some() {
        words.push(format!("tls_reqcert={}", table.tls_reqcert));
    }
    words.push(format!("filter={}", quoted(&table.filter)));
    if let Some(base) = &table.searchbase {
        words.push(format!("searchbase={}", quoted(base)));
    }
    words.push(format!("scope={}", table.scope));
    words.push(format!("attrs={}", quoted(&table.attrs)));
    words.push(format!("type={}", table.kind));
    if table.kind.eq_ignore_ascii_case("refreshOnly") {
        words.push(format!("interval={}", table.interval));
    }
    words.push(format!("retry={}", quoted(&table.retry)));
    if let Some(data) = &table.syncdata {
        words.push(format!("syncdata={data}"));
    }
    for (key, value) in [("logbase", &table.logbase), ("logfilter", &table.logfilter)] {
        if let Some(v) = value {
            words.push(format!("{key}={}", quoted(v)));
        }
    }
    words.join(" ")
}

/// A `[[limits.rules]]` entry in slapd's `olcLimits` words.
pub(super) fn limit_rule(rule: &LimitRule) -> String {
    let who = match rule.who.split_once(':') {
        Some((kind, dn)) => format!("{kind}=\"{dn}\""),
        None => rule.who.clone(),
    };
    let mut text = who;
    let value = |v: &LimitValue| match v {
        LimitValue::Limited(n) => n.to_string(),
        LimitValue::Unlimited => "unlimited".to_string(),
        LimitValue::Disabled => "disabled".to_string(),
    };
    for (word, limit) in [
        ("size", &rule.size),
        ("time", &rule.time),
        ("size.unchecked", &rule.lookthrough),
        ("size.pr", &rule.paged_size),
        ("size.prtotal", &rule.paged_total),
    ] {
        if let Some(v) = limit {
            text.push_str(&format!(" {word}={}", value(v)));
        }
    }
    text
}
