//! The cn=config tree (docs/design/config-tree.md): the running configuration as entries in slapd's
//! shape and names (`cn=config`, `olcDatabase={-1}frontend`, `olcDatabase={0}config`,
//! `olcDatabase={N}mdb`, `cn=schema`), the mapping from a [`Config`](crate::config::Config) to those
//! entries (`from_config`, `schema_children`) and back for the attributes that change live
//! (`to_config`), and the olc* schema they need.
//!
//! The tree is a database of its own in the registry (`store` keeps it durable in `DATA/config`);
//! `crate::config_change` runs a client's write of it: validate the whole new configuration, store it, swap it in.

pub mod export;
mod from_config;
mod numbering;
mod overlay_children;
mod schema_children;
pub mod store;
mod to_config;

pub use from_config::from_config;
pub(crate) use numbering::{align_databases, moved_to_database};
pub use overlay_children::{
    added_overlay, live_overlay_attributes, module_dn, module_of, overlay_child_of,
    without_overlay, OVERLAY_SCHEMA,
};
pub(crate) use overlay_children::{file_overlays, overlays_of, ORDERED as OVERLAY_ORDERED};
pub use schema_children::{file_schema_count, schema_child_of, valid_schema_name};
pub use store::{differences, read_live, set_aside_stale, ConfigTree};
pub use to_config::{parse_indexes, to_config};

use canopy_proto::ResultCode;

/// The naming context of the configuration database.
pub const SUFFIX: &str = "cn=config";

/// The peer-credential identity of root over ldapi, which Debian's slapd lets manage cn=config.
pub const LDAPI_ROOT: &str = "gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth";

/// The access rule of `olcDatabase={0}config` when the configuration names none (`config_access`):
/// root over ldapi manages it, nobody else sees it (the config root DN is above every rule).
pub fn default_access() -> String {
    format!("to * by dn.exact=\"{LDAPI_ROOT}\" manage by * none")
}

/// The attributes an entry of the tree changes live; every other change is unwillingToPerform.
pub fn live_attributes(dn: &str) -> &'static [&'static str] {
    let dn = dn.to_ascii_lowercase();
    if dn == SUFFIX {
        &[
            "olcServerID",
            "olcLogLevel",
            "olcAuthzPolicy",
            "olcTLSCertificateFile",
            "olcTLSCertificateKeyFile",
        ]
    } else if dn == FRONTEND_DN.to_ascii_lowercase() {
        &["olcSizeLimit", "olcTimeLimit", "olcPasswordHash"]
    } else if dn == CONFIG_DB_DN.to_ascii_lowercase() {
        &["olcAccess", "olcRootDN", "olcRootPW"]
    } else if module_of(&dn).is_some() {
        &["olcModuleLoad", "olcModulePath"]
    } else if dn.starts_with("olcdatabase={") && dn.ends_with("}mdb,cn=config") {
        &[
            "olcAccess",
            "olcRootDN",
            "olcRootPW",
            "olcReadOnly",
            "olcSizeLimit",
            "olcTimeLimit",
            "olcDbIndex",
            "olcLimits",
        ]
    } else {
        &[]
    }
}

/// The olc* attribute types and object classes the tree uses, with OpenLDAP's OIDs and names (as
/// slapd 2.5 publishes them in cn=Subschema); the classes list only the attributes Canopy knows.
pub const SCHEMA: &str = "\
attributetype ( 1.3.6.1.4.1.4203.1.12.2.1 NAME 'configContext' DESC 'config context' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.1 NAME 'olcAccess' DESC 'Access Control List' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.4 NAME 'olcAttributeTypes' DESC 'OpenLDAP attributeTypes' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.7 NAME 'olcAuthzPolicy' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.9 NAME 'olcBackend' DESC 'A type of backend' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE X-ORDERED 'SIBLINGS' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.13 NAME 'olcDatabase' DESC 'The backend type for a database instance' SUP olcBackend SINGLE-VALUE X-ORDERED 'SIBLINGS' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.5 NAME 'olcLimits' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.28 NAME 'olcLogLevel' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.33 NAME 'olcObjectIdentifier' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.32 NAME 'olcObjectClasses' DESC 'OpenLDAP object classes' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.34 NAME 'olcOverlay' SUP olcDatabase SINGLE-VALUE X-ORDERED 'SIBLINGS' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.36 NAME 'olcPasswordHash' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.40 NAME 'olcReadOnly' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.8 NAME 'olcRootDN' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.9 NAME 'olcRootPW' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.81 NAME 'olcServerID' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.60 NAME 'olcSizeLimit' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.15 NAME 'olcSubordinate' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.10 NAME 'olcSuffix' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.11 NAME 'olcSyncrepl' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.67 NAME 'olcTimeLimit' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.68 NAME 'olcTLSCACertificateFile' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.70 NAME 'olcTLSCertificateFile' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.71 NAME 'olcTLSCertificateKeyFile' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.75 NAME 'olcTLSVerifyClient' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.13 NAME 'olcUpdateRef' SUP labeledURI EQUALITY caseIgnoreMatch )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.1 NAME 'olcDbDirectory' DESC 'Directory for database content' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.2.0.2 NAME 'olcDbIndex' DESC 'Attribute index parameters' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.0 NAME 'olcConfig' DESC 'OpenLDAP configuration object' SUP top ABSTRACT )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.1 NAME 'olcGlobal' DESC 'OpenLDAP Global configuration options' SUP olcConfig STRUCTURAL MAY ( cn $ olcAuthzPolicy $ olcLogLevel $ olcPasswordHash $ olcReadOnly $ olcServerID $ olcSizeLimit $ olcTimeLimit $ olcTLSCACertificateFile $ olcTLSCertificateFile $ olcTLSCertificateKeyFile $ olcTLSVerifyClient $ olcAttributeTypes $ olcObjectClasses ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.2 NAME 'olcSchemaConfig' DESC 'OpenLDAP schema object' SUP olcConfig STRUCTURAL MAY ( cn $ olcObjectIdentifier $ olcAttributeTypes $ olcObjectClasses ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.4 NAME 'olcDatabaseConfig' DESC 'OpenLDAP Database-specific options' SUP olcConfig STRUCTURAL MUST olcDatabase MAY ( olcSuffix $ olcSubordinate $ olcAccess $ olcLimits $ olcReadOnly $ olcRootDN $ olcRootPW $ olcSizeLimit $ olcSyncrepl $ olcTimeLimit $ olcUpdateRef ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.5 NAME 'olcOverlayConfig' DESC 'OpenLDAP Overlay-specific options' SUP olcConfig STRUCTURAL MUST olcOverlay )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.7 NAME 'olcFrontendConfig' DESC 'OpenLDAP frontend configuration' AUXILIARY MAY olcPasswordHash )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.2.12.1 NAME 'olcMdbConfig' DESC 'MDB database configuration' SUP olcDatabaseConfig STRUCTURAL MUST olcDbDirectory MAY olcDbIndex )
";

/// One entry of the tree: its DN and attributes in order, values as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub dn: String,
    pub attrs: Vec<(String, Vec<String>)>,
}

impl ConfigEntry {
    fn new(dn: impl Into<String>) -> ConfigEntry {
        ConfigEntry {
            dn: dn.into(),
            attrs: Vec::new(),
        }
    }

    fn with(mut self, name: &str, values: Vec<String>) -> ConfigEntry {
        if !values.is_empty() {
            self.attrs.push((name.to_string(), values));
        }
        self
    }

    /// The values of `name` (ASCII case-insensitive); none when absent.
    pub fn get(&self, name: &str) -> &[String] {
        self.attrs
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// The values of `name` without their `{N}` prefixes, in order.
    pub fn ordered(&self, name: &str) -> Vec<String> {
        self.get(name)
            .iter()
            .map(|v| split_ordinal(v).1.to_string())
            .collect()
    }

    pub(crate) fn single(&self, name: &str) -> Option<&str> {
        self.get(name).first().map(String::as_str)
    }
}

/// A value's `{N}` prefix, if any, and the rest.
pub fn split_ordinal(value: &str) -> (Option<usize>, &str) {
    if let Some(rest) = value.strip_prefix('{') {
        if let Some((number, tail)) = rest.split_once('}') {
            if let Ok(n) = number.parse::<usize>() {
                return (Some(n), tail);
            }
        }
    }
    (None, value)
}

/// `values` numbered `{0}`, `{1}`, ... as slapd shows X-ORDERED 'VALUES' attributes.
pub fn numbered(values: &[String]) -> Vec<String> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{{{i}}}{v}"))
        .collect()
}

/// The number of a data database's DN (`olcDatabase={N}mdb,cn=config`), None for any other DN.
pub fn database_number(dn: &str) -> Option<usize> {
    dn.to_ascii_lowercase()
        .replace(", ", ",")
        .strip_prefix("olcdatabase={")
        .and_then(|rest| rest.strip_suffix("}mdb,cn=config"))
        .and_then(|n| n.parse::<usize>().ok())
}

/// The number of the data database `dn` is a child of (`olcOverlay={i}x,olcDatabase={N}mdb,cn=config`).
pub fn database_child_of(dn: &str) -> Option<usize> {
    dn.split_once(',')
        .and_then(|(_, parent)| database_number(parent))
}

/// The DN of data database `number` (1-based, as `--database N`).
pub fn database_dn(number: usize) -> String {
    format!("olcDatabase={{{number}}}mdb,cn=config")
}

pub const FRONTEND_DN: &str = "olcDatabase={-1}frontend,cn=config";
pub const CONFIG_DB_DN: &str = "olcDatabase={0}config,cn=config";
pub const SCHEMA_DN: &str = "cn=schema,cn=config";

/// Why a configuration tree cannot be run: the result code slapd gives and a message naming the
/// attribute and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ResultCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ResultCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
        }
    }

    /// slapd's answer to a value its handler rejects: other (80), `<attr> problem`.
    fn handler(attr: &str, problem: impl std::fmt::Display) -> Refusal {
        Refusal::new(ResultCode::Other, format!("<{attr}> {problem}"))
    }

    /// slapd's answer to a value its syntax rejects: invalidAttributeSyntax.
    fn syntax(attr: &str) -> Refusal {
        Refusal::new(
            ResultCode::InvalidAttributeSyntax,
            format!("{attr}: value #0 invalid per syntax"),
        )
    }
}

/// Two DNs as text, compared without case and spaces after commas (the schema compares them again
/// when the database opens).
pub(crate) fn same_dn_text(a: &str, b: &str) -> bool {
    let rough =
        |dn: &str| crate::dbconfig::rough_rdns(dn).unwrap_or_else(|_| vec![dn.to_lowercase()]);
    rough(a) == rough(b)
}

#[cfg(test)]
mod tests;
