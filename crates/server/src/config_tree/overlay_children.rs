//! The `olcOverlay={i}name` children of a database in cn=config: each overlay table shown with
//! slapd's attribute and class names (`olcMemberOfGroupOC` in `olcMemberOfConfig`, ...), read back
//! into `[[overlay]]` tables, and the tree with one added or deleted (siblings renumbered as slapd's
//! X-ORDERED 'SIBLINGS'). The `cn=module{N}` entries (`olcModuleLoad`) are here too.

use canopy_proto::ResultCode;

use super::{database_dn, database_number, numbered, split_ordinal, ConfigEntry, Refusal};
use crate::config::{Config, ModuleList};
use crate::overlays::OverlayConfig;

/// How an option's TOML value and its olc values correspond.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// One string.
    Str,
    /// One DN.
    Dn,
    /// TRUE or FALSE; a TOML boolean.
    Bool,
    /// A number; a TOML integer.
    Int,
    /// A result code by name or number (memberof's dangling error).
    Code,
    /// Attribute names, one per value (a value may list several: slapd splits it).
    Words,
    /// One line per value; a TOML list of strings.
    Lines,
    /// One line per value with `{N}` positions (X-ORDERED 'VALUES'); a TOML list of strings.
    Ordered,
    /// slapd's, but Canopy's overlay has no such setting: refused, naming it.
    Refused,
}

/// (overlay, slapd's attribute, Canopy's option, kind).
const OPTIONS: [(&str, &str, &str, Kind); 58] = [
    ("memberof", "olcMemberOfDN", "dn", Kind::Dn),
    ("memberof", "olcMemberOfDangling", "dangling", Kind::Str),
    ("memberof", "olcMemberOfRefInt", "refint", Kind::Bool),
    ("memberof", "olcMemberOfGroupOC", "group-oc", Kind::Str),
    ("memberof", "olcMemberOfMemberAD", "member-ad", Kind::Str),
    (
        "memberof",
        "olcMemberOfMemberOfAD",
        "memberof-ad",
        Kind::Str,
    ),
    (
        "memberof",
        "olcMemberOfDanglingError",
        "dangling-error",
        Kind::Code,
    ),
    ("refint", "olcRefintAttribute", "attributes", Kind::Words),
    ("refint", "olcRefintNothing", "nothing", Kind::Dn),
    (
        "refint",
        "olcRefintModifiersName",
        "modifiersname",
        Kind::Dn,
    ),
    ("unique", "olcUniqueBase", "base", Kind::Dn),
    ("unique", "olcUniqueIgnore", "ignore", Kind::Words),
    ("unique", "olcUniqueAttribute", "attributes", Kind::Words),
    ("unique", "olcUniqueStrict", "strict", Kind::Bool),
    ("unique", "olcUniqueURI", "uri", Kind::Lines),
    (
        "constraint",
        "olcConstraintAttribute",
        "constraints",
        Kind::Lines,
    ),
    ("ppolicy", "olcPPolicyDefault", "default", Kind::Dn),
    (
        "ppolicy",
        "olcPPolicyHashCleartext",
        "hash_cleartext",
        Kind::Bool,
    ),
    ("ppolicy", "olcPPolicyUseLockout", "use_lockout", Kind::Bool),
    (
        "ppolicy",
        "olcPPolicyForwardUpdates",
        "forward_updates",
        Kind::Bool,
    ),
    ("ppolicy", "olcPPolicyDisableWrite", "", Kind::Refused),
    (
        "ppolicy",
        "olcPPolicySendNetscapeControls",
        "send_netscape_controls",
        Kind::Bool,
    ),
    ("dynlist", "olcDynListAttrSet", "attrset", Kind::Ordered),
    ("accesslog", "olcAccessLogDB", "logdb", Kind::Dn),
    ("accesslog", "olcAccessLogOps", "logops", Kind::Words),
    ("accesslog", "olcAccessLogPurge", "logpurge", Kind::Str),
    ("accesslog", "olcAccessLogSuccess", "logsuccess", Kind::Bool),
    ("accesslog", "olcAccessLogOld", "", Kind::Refused),
    ("accesslog", "olcAccessLogOldAttr", "", Kind::Refused),
    ("accesslog", "olcAccessLogBase", "", Kind::Refused),
    ("auditlog", "olcAuditlogFile", "file", Kind::Str),
    ("syncprov", "olcSpCheckpoint", "checkpoint", Kind::Str),
    ("syncprov", "olcSpSessionlog", "sessionlog", Kind::Int),
    ("syncprov", "olcSpNoPresent", "nopresent", Kind::Bool),
    ("syncprov", "olcSpReloadHint", "reloadhint", Kind::Bool),
    ("syncprov", "olcSpSessionlogSource", "", Kind::Refused),
    ("homedir", "olcSkeletonPath", "skeleton-path", Kind::Str),
    ("homedir", "olcMinimumUidNumber", "min-uidnumber", Kind::Int),
    ("homedir", "olcHomedirRegexp", "regexp", Kind::Ordered),
    (
        "homedir",
        "olcHomedirDeleteStyle",
        "delete-style",
        Kind::Str,
    ),
    (
        "homedir",
        "olcHomedirArchivePath",
        "archive-path",
        Kind::Str,
    ),
    ("retcode", "olcRetcodeParent", "parent", Kind::Dn),
    ("retcode", "olcRetcodeItem", "item", Kind::Ordered),
    ("retcode", "olcRetcodeInDir", "indir", Kind::Bool),
    ("retcode", "olcRetcodeSleep", "sleep", Kind::Int),
    ("valsort", "olcValSortAttr", "attr", Kind::Lines),
    ("sssvlv", "olcSssVlvMax", "max", Kind::Int),
    ("sssvlv", "olcSssVlvMaxKeys", "maxkeys", Kind::Int),
    ("sssvlv", "olcSssVlvMaxPerConn", "maxperconn", Kind::Int),
    ("dds", "olcDDSstate", "state", Kind::Bool),
    ("dds", "olcDDSmaxTtl", "max-ttl", Kind::Str),
    ("dds", "olcDDSminTtl", "min-ttl", Kind::Str),
    ("dds", "olcDDSdefaultTtl", "default-ttl", Kind::Str),
    ("dds", "olcDDSinterval", "interval", Kind::Str),
    ("dds", "olcDDStolerance", "tolerance", Kind::Str),
    (
        "dds",
        "olcDDSmaxDynamicObjects",
        "max-dynamicObjects",
        Kind::Int,
    ),
    // The overlay options without a slapd attribute: none but these two aliases slapd accepts.
    ("dynlist", "olcDlAttrSet", "attrset", Kind::Ordered),
    ("memberof", "olcMemberOfDNAD", "", Kind::Refused),
];

/// Each overlay's object class: the name shown first, then the other names slapd gives it.
const CLASSES: [(&str, &[&str]); 14] = [
    ("memberof", &["olcMemberOfConfig", "olcMemberOf"]),
    ("refint", &["olcRefintConfig"]),
    ("unique", &["olcUniqueConfig"]),
    ("constraint", &["olcConstraintConfig"]),
    ("ppolicy", &["olcPPolicyConfig"]),
    ("dynlist", &["olcDynListConfig", "olcDynamicList"]),
    ("accesslog", &["olcAccessLogConfig"]),
    ("auditlog", &["olcAuditlogConfig"]),
    ("syncprov", &["olcSyncProvConfig"]),
    ("homedir", &["olcHomedirConfig"]),
    ("retcode", &["olcRetcodeConfig"]),
    ("valsort", &["olcValSortConfig"]),
    ("sssvlv", &["olcSssVlvConfig"]),
    ("dds", &["olcDDSConfig"]),
];

/// The overlays' configuration attribute types and object classes with the OIDs, names and
/// syntaxes slapd 2.5's modules define (OLcfgOvAt = 1.3.6.1.4.1.4203.1.12.2.3.3, OLcfgOvOc =
/// 1.3.6.1.4.1.4203.1.12.2.4.3, homedir's OLcfgCtAt/Oc .3.4 and .4.4), and `cn=module{N}`'s.
pub const OVERLAY_SCHEMA: &str = "\
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.30 NAME 'olcModuleLoad' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.0.31 NAME 'olcModulePath' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.0 NAME 'olcMemberOfDN' DESC 'DN to be used as modifiersName' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.1 NAME 'olcMemberOfDangling' DESC 'Behavior with respect to dangling members, constrained to ignore, drop, error' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.2 NAME 'olcMemberOfRefInt' DESC 'Take care of referential integrity' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.3 NAME 'olcMemberOfGroupOC' DESC 'Group objectClass' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.4 NAME 'olcMemberOfMemberAD' DESC 'member attribute' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.5 NAME 'olcMemberOfMemberOfAD' DESC 'memberOf attribute' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.7 NAME 'olcMemberOfDanglingError' DESC 'Error code returned in case of dangling back reference' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.18.8 NAME 'olcMemberOfDNAD' DESC 'not supported by Canopy' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.11.1 NAME 'olcRefintAttribute' DESC 'Attributes for referential integrity' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.11.2 NAME 'olcRefintNothing' DESC 'Replacement DN to supply when needed' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.11.3 NAME 'olcRefintModifiersName' DESC 'The DN to use as modifiersName' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.10.1 NAME 'olcUniqueBase' DESC 'Subtree for uniqueness searches' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.10.2 NAME 'olcUniqueIgnore' DESC 'Attributes for which uniqueness shall not be enforced' EQUALITY caseIgnoreMatch ORDERING caseIgnoreOrderingMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.10.3 NAME 'olcUniqueAttribute' DESC 'Attributes for which uniqueness shall be enforced' EQUALITY caseIgnoreMatch ORDERING caseIgnoreOrderingMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.10.4 NAME 'olcUniqueStrict' DESC 'Enforce uniqueness of null values' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.10.5 NAME 'olcUniqueURI' DESC 'List of keywords and LDAP URIs for a uniqueness domain' EQUALITY caseExactMatch ORDERING caseExactOrderingMatch SUBSTR caseExactSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.13.1 NAME 'olcConstraintAttribute' DESC 'constraint for list of attributes' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.12.1 NAME 'olcPPolicyDefault' DESC 'DN of a pwdPolicy object for uncustomized objects' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.12.2 NAME 'olcPPolicyHashCleartext' DESC 'Hash passwords on add or modify' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.12.4 NAME 'olcPPolicyForwardUpdates' DESC 'Allow policy state updates to be forwarded via updateref' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.12.3 NAME 'olcPPolicyUseLockout' DESC 'Warn clients with AccountLocked' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.12.5 NAME 'olcPPolicyDisableWrite' DESC 'Prevent all policy overlay writes' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.12.6 NAME 'olcPPolicySendNetscapeControls' DESC 'Send Netscape policy controls' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.8.1 NAME ( 'olcDynListAttrSet' 'olcDlAttrSet' ) DESC 'Dynamic list: <group objectClass>, <URL attributeDescription>, <member attributeDescription>' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.1 NAME 'olcAccessLogDB' DESC 'Suffix of database for log content' EQUALITY distinguishedNameMatch SUP distinguishedName SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.2 NAME 'olcAccessLogOps' DESC 'Operation types to log' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.3 NAME 'olcAccessLogPurge' DESC 'Log cleanup parameters' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.4 NAME 'olcAccessLogSuccess' DESC 'Log successful ops only' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.5 NAME 'olcAccessLogOld' DESC 'Log old values when modifying entries matching the filter' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.6 NAME 'olcAccessLogOldAttr' DESC 'Log old values of these attributes even if unmodified' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.4.7 NAME 'olcAccessLogBase' DESC 'Operation types to log under a specific branch' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.15.1 NAME 'olcAuditlogFile' DESC 'Filename for auditlogging' EQUALITY caseExactMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.1.1 NAME 'olcSpCheckpoint' DESC 'ContextCSN checkpoint interval in ops and minutes' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.1.2 NAME 'olcSpSessionlog' DESC 'Session log size in ops' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.1.3 NAME 'olcSpNoPresent' DESC 'Omit Present phase processing' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.1.4 NAME 'olcSpReloadHint' DESC 'Observe Reload Hint in Request control' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.1.5 NAME 'olcSpSessionlogSource' DESC 'On startup, try loading sessionlog from this subtree' SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.4.8.1 NAME 'olcSkeletonPath' DESC 'Pathname for home directory skeleton template' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.4.8.2 NAME 'olcMinimumUidNumber' DESC 'Minimum uidNumber attribute to consider' SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.4.8.3 NAME 'olcHomedirRegexp' DESC 'Regular expression for matching and transforming paths' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.4.8.4 NAME 'olcHomedirDeleteStyle' DESC 'Action to perform when removing a home directory' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.4.8.5 NAME 'olcHomedirArchivePath' DESC 'Pathname for home directory archival' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.20.1 NAME 'olcRetcodeParent' DESC '' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.20.2 NAME 'olcRetcodeItem' DESC '' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORDERED 'VALUES' )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.20.3 NAME 'olcRetcodeInDir' DESC '' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.20.4 NAME 'olcRetcodeSleep' DESC '' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.5.1 NAME 'olcValSortAttr' DESC 'Sorting rule for attribute under given DN' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.21.1 NAME 'olcSssVlvMax' DESC 'Maximum number of concurrent Sort requests' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.21.2 NAME 'olcSssVlvMaxKeys' DESC 'Maximum number of Keys in a Sort request' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.21.3 NAME 'olcSssVlvMaxPerConn' DESC 'Maximum number of concurrent paged search requests per connection' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.0.8 NAME 'olcModuleList' DESC 'OpenLDAP dynamic module info' SUP olcConfig STRUCTURAL MAY ( cn $ olcModulePath $ olcModuleLoad ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.18.1 NAME ( 'olcMemberOfConfig' 'olcMemberOf' ) DESC 'Member-of configuration' SUP olcOverlayConfig MAY ( olcMemberOfDN $ olcMemberOfDangling $ olcMemberOfDanglingError $ olcMemberOfRefInt $ olcMemberOfGroupOC $ olcMemberOfMemberAD $ olcMemberOfMemberOfAD $ olcMemberOfDNAD ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.11.1 NAME 'olcRefintConfig' DESC 'Referential integrity configuration' SUP olcOverlayConfig MAY ( olcRefintAttribute $ olcRefintNothing $ olcRefintModifiersName ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.10.1 NAME 'olcUniqueConfig' DESC 'Attribute value uniqueness configuration' SUP olcOverlayConfig MAY ( olcUniqueBase $ olcUniqueIgnore $ olcUniqueAttribute $ olcUniqueStrict $ olcUniqueURI ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.13.1 NAME 'olcConstraintConfig' DESC 'Constraint overlay configuration' SUP olcOverlayConfig MAY ( olcConstraintAttribute ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.12.1 NAME 'olcPPolicyConfig' DESC 'Password Policy configuration' SUP olcOverlayConfig MAY ( olcPPolicyDefault $ olcPPolicyHashCleartext $ olcPPolicyUseLockout $ olcPPolicyForwardUpdates $ olcPPolicyDisableWrite $ olcPPolicySendNetscapeControls ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.8.1 NAME ( 'olcDynListConfig' 'olcDynamicList' ) DESC 'Dynamic list configuration' SUP olcOverlayConfig MAY olcDynListAttrSet )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.4.1 NAME 'olcAccessLogConfig' DESC 'Access log configuration' SUP olcOverlayConfig MUST olcAccessLogDB MAY ( olcAccessLogOps $ olcAccessLogPurge $ olcAccessLogSuccess $ olcAccessLogOld $ olcAccessLogOldAttr $ olcAccessLogBase ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.15.1 NAME 'olcAuditlogConfig' DESC 'Auditlog configuration' SUP olcOverlayConfig MAY ( olcAuditlogFile ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.1.1 NAME 'olcSyncProvConfig' DESC 'SyncRepl Provider configuration' SUP olcOverlayConfig MAY ( olcSpCheckpoint $ olcSpSessionlog $ olcSpNoPresent $ olcSpReloadHint $ olcSpSessionlogSource ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.20.1 NAME 'olcRetcodeConfig' DESC 'Retcode configuration' SUP olcOverlayConfig MAY ( olcRetcodeParent $ olcRetcodeItem $ olcRetcodeInDir $ olcRetcodeSleep ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.5.1 NAME 'olcValSortConfig' DESC 'Value Sorting configuration' SUP olcOverlayConfig MUST olcValSortAttr )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.21.1 NAME 'olcSssVlvConfig' DESC 'SSS VLV configuration' SUP olcOverlayConfig STRUCTURAL MAY ( olcSssVlvMax $ olcSssVlvMaxKeys $ olcSssVlvMaxPerConn ) )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.1 NAME 'olcDDSstate' DESC 'RFC2589 Dynamic directory services state' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.2 NAME 'olcDDSmaxTtl' DESC 'RFC2589 Dynamic directory services max TTL' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.3 NAME 'olcDDSminTtl' DESC 'RFC2589 Dynamic directory services min TTL' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.4 NAME 'olcDDSdefaultTtl' DESC 'RFC2589 Dynamic directory services default TTL' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.5 NAME 'olcDDSinterval' DESC 'RFC2589 Dynamic directory services expiration task run interval' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.6 NAME 'olcDDStolerance' DESC 'RFC2589 Dynamic directory services additional TTL in expiration scheduling' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4203.1.12.2.3.3.9.7 NAME 'olcDDSmaxDynamicObjects' DESC 'RFC2589 Dynamic directory services max number of dynamic objects' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.3.9.1 NAME 'olcDDSConfig' DESC 'RFC2589 Dynamic directory services configuration' SUP olcOverlayConfig STRUCTURAL MAY ( olcDDSstate $ olcDDSmaxTtl $ olcDDSminTtl $ olcDDSdefaultTtl $ olcDDSinterval $ olcDDStolerance $ olcDDSmaxDynamicObjects ) )
objectclass ( 1.3.6.1.4.1.4203.1.12.2.4.4.8.1 NAME 'olcHomedirConfig' DESC 'Homedir configuration' SUP olcOverlayConfig MAY ( olcSkeletonPath $ olcMinimumUidNumber $ olcHomedirRegexp $ olcHomedirDeleteStyle $ olcHomedirArchivePath ) )
";

/// The attributes with `{N}` positions among the overlays' and modules' (X-ORDERED 'VALUES').
pub const ORDERED: [&str; 5] = [
    "olcDynListAttrSet",
    "olcDlAttrSet",
    "olcHomedirRegexp",
    "olcModuleLoad",
    "olcRetcodeItem",
];

/// The olcOverlay entries of data database `number`, one per table, in the order they apply.
pub fn overlay_entries(number: usize, overlays: &[OverlayConfig]) -> Vec<ConfigEntry> {
    overlays
        .iter()
        .enumerate()
        .map(|(i, overlay)| {
            let mut classes = vec!["olcOverlayConfig".to_string()];
            if let Some((_, names)) = CLASSES.iter().find(|(o, _)| *o == overlay.name) {
                classes.extend(names.first().map(|n| n.to_string()));
            }
            let mut entry = ConfigEntry::new(format!(
                "olcOverlay={{{i}}}{},{}",
                overlay.name,
                database_dn(number)
            ))
            .with("objectClass", classes)
            .with("olcOverlay", vec![format!("{{{i}}}{}", overlay.name)]);
            for (key, value) in &overlay.options {
                let option = OPTIONS
                    .iter()
                    .find(|(o, _, k, _)| *o == overlay.name && k == key);
                // Options slapd has no attribute for (accesslog's `access`, the log database's
                // rules) stay in the file; the tree shows what slapd would.
                let Some((_, attr, _, kind)) = option else {
                    continue;
                };
                entry = entry.with(attr, olc_values(*kind, value));
            }
            entry
        })
        .collect()
}

/// A TOML option's values in slapd's form.
fn olc_values(kind: Kind, value: &toml::Value) -> Vec<String> {
    let texts: Vec<String> = match value {
        toml::Value::Array(items) => items.iter().map(scalar_text).collect(),
        other => vec![scalar_text(other)],
    };
    match kind {
        Kind::Words => texts
            .iter()
            .flat_map(|t| t.split([' ', ',']))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect(),
        Kind::Ordered => numbered(&texts),
        _ => texts,
    }
}

fn scalar_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Boolean(true) => "TRUE".to_string(),
        toml::Value::Boolean(false) => "FALSE".to_string(),
        other => other.to_string(),
    }
}

/// The database number, position and overlay name of `olcOverlay={i}name,olcDatabase={N}mdb,cn=config`.
pub fn overlay_child_of(dn: &str) -> Option<(usize, usize, String)> {
    let (rdn, parent) = dn.split_once(',')?;
    let number = database_number(parent.trim())?;
    let (kind, value) = rdn.split_once('=')?;
    if !kind.trim().eq_ignore_ascii_case("olcOverlay") {
        return None;
    }
    match split_ordinal(value.trim()) {
        (Some(i), name) => Some((number, i, name.to_string())),
        (None, _) => None,
    }
}

/// The attributes of an overlay entry that change live: every slapd attribute of its class.
pub fn live_overlay_attributes(dn: &str) -> Vec<&'static str> {
    let Some((_, _, name)) = overlay_child_of(dn) else {
        return Vec::new();
    };
    if name == "accesslog" {
        return Vec::new();
    }
    OPTIONS
        .iter()
        .filter(|(o, ..)| *o == name)
        .map(|(_, attr, ..)| *attr)
        .collect()
}

/// The `[[overlay]]` tables of data database `number` in `tree`, in the order of their positions.
/// `file` is the database's own overlays in the configuration file: the accesslog overlay, which
/// does not change live, is taken from there.
pub fn overlays_of(
    tree: &[ConfigEntry],
    number: usize,
    file: &[OverlayConfig],
) -> Result<Vec<OverlayConfig>, Refusal> {
    let mut children: Vec<(usize, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| overlay_child_of(&e.dn).map(|(n, i, _)| (n, i, e)))
        .filter(|(n, _, _)| *n == number)
        .map(|(_, i, e)| (i, e))
        .collect();
    children.sort_by_key(|(i, _)| *i);
    let mut tables = Vec::new();
    for (_, entry) in children {
        let table = overlay_table(entry)?;
        if table.name == "accesslog" {
            match file.iter().find(|o| o.name == "accesslog") {
                Some(own) => tables.push(own.clone()),
                None => {
                    return Err(Refusal::new(
                        ResultCode::UnwillingToPerform,
                        "<olcOverlay> the accesslog overlay (and its log database) is set in the \
                         configuration file; add it there and restart",
                    ))
                }
            }
            continue;
        }
        // A copy left by a crash in the middle of a renumbering counts once.
        if tables.iter().any(|t: &OverlayConfig| t.name == table.name) {
            continue;
        }
        tables.push(table);
    }
    Ok(tables)
}

/// One overlay entry as an `[[overlay]]` table, each value checked against its kind.
fn overlay_table(entry: &ConfigEntry) -> Result<OverlayConfig, Refusal> {
    let name = entry
        .single("olcOverlay")
        .map(|v| split_ordinal(v).1.to_string())
        .or_else(|| overlay_child_of(&entry.dn).map(|(_, _, name)| name))
        .unwrap_or_default();
    let mut options = toml::Table::new();
    for (attr, values) in &entry.attrs {
        if attr.eq_ignore_ascii_case("objectClass") || attr.eq_ignore_ascii_case("olcOverlay") {
            continue;
        }
        let Some((_, attr_name, key, kind)) = OPTIONS
            .iter()
            .find(|(o, a, ..)| *o == name && a.eq_ignore_ascii_case(attr))
        else {
            return Err(Refusal::new(
                ResultCode::ObjectClassViolation,
                format!("attribute '{attr}' not allowed"),
            ));
        };
        if values.is_empty() {
            continue;
        }
        let single = || -> Result<&str, Refusal> {
            match values.as_slice() {
                [one] => Ok(one.as_str()),
                _ => Err(Refusal::new(
                    ResultCode::ConstraintViolation,
                    format!("{attr_name}: multiple values provided"),
                )),
            }
        };
        let value = match kind {
            Kind::Refused => {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!("<{attr_name}> Canopy's {name} overlay has no such setting"),
                ))
            }
            Kind::Str => toml::Value::String(single()?.to_string()),
            Kind::Dn => {
                let text = single()?;
                canopy_proto::Dn::parse(text.as_bytes()).map_err(|_| Refusal::syntax(attr_name))?;
                toml::Value::String(text.to_string())
            }
            Kind::Bool => match single()? {
                v if v.eq_ignore_ascii_case("TRUE") => toml::Value::Boolean(true),
                v if v.eq_ignore_ascii_case("FALSE") => toml::Value::Boolean(false),
                _ => return Err(Refusal::syntax(attr_name)),
            },
            Kind::Int => {
                let number = single()?
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| Refusal::syntax(attr_name))?;
                toml::Value::Integer(number)
            }
            Kind::Code => {
                let text = single()?.trim();
                match text.parse::<i64>() {
                    Ok(n) => toml::Value::Integer(n),
                    Err(_) => toml::Value::String(text.to_string()),
                }
            }
            Kind::Words => toml::Value::Array(
                values
                    .iter()
                    .flat_map(|v| v.split([' ', ',']))
                    .filter(|w| !w.is_empty())
                    .map(|w| toml::Value::String(w.to_string()))
                    .collect(),
            ),
            Kind::Lines | Kind::Ordered => toml::Value::Array(
                values
                    .iter()
                    .map(|v| match kind {
                        Kind::Ordered => split_ordinal(v).1.to_string(),
                        _ => v.clone(),
                    })
                    .map(toml::Value::String)
                    .collect(),
            ),
        };
        // Two names of one attribute (olcDynListAttrSet, olcDlAttrSet) add up.
        match (options.get_mut(*key), value) {
            (Some(toml::Value::Array(have)), toml::Value::Array(more)) => have.extend(more),
            (_, value) => {
                options.insert(key.to_string(), value);
            }
        }
    }
    Ok(OverlayConfig { name, options })
}

/// The tree with the overlay entry `entry` added under its database, at the position its RDN asks
/// (`olcOverlay={N}name`: the siblings from N on move one down) or after the last one
/// (`olcOverlay=name`), as slapd does; the entry as it is stored, and the tree once stored (before
/// the siblings are renamed) for the store's write.
#[derive(Debug)]
pub struct AddedOverlay {
    pub added: ConfigEntry,
    pub committed: Vec<ConfigEntry>,
    pub tree: Vec<ConfigEntry>,
}

pub fn added_overlay(
    entries: &[ConfigEntry],
    dn: &str,
    attrs: &[(String, Vec<String>)],
) -> Result<AddedOverlay, Refusal> {
    let (rdn, parent) = dn.split_once(',').unwrap_or((dn, ""));
    let parent = parent.trim();
    let value = rdn.split_once('=').map(|(_, v)| v.trim()).unwrap_or("");
    let (asked, name) = split_ordinal(value);
    let Some(number) = database_number(parent) else {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "{dn}: overlays are added under a data database (olcDatabase={{N}}mdb,cn=config); \
                 Canopy's frontend and cn=config take none"
            ),
        ));
    };
    if !entries
        .iter()
        .any(|e| database_number(&e.dn) == Some(number))
    {
        return Err(Refusal::new(ResultCode::NoSuchObject, ""));
    }
    let known = crate::overlays::KNOWN.iter().find(|k| **k == name);
    let Some(name) = known.copied() else {
        return Err(Refusal::new(
            ResultCode::Other,
            format!(
                "<olcOverlay> no overlay {name:?} in Canopy (it has {})",
                crate::overlays::KNOWN.join(", ")
            ),
        ));
    };
    if name == "accesslog" {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            "<olcOverlay> the accesslog overlay (and its log database) is set in the \
             configuration file; add it there and restart",
        ));
    }
    let siblings: Vec<(usize, String)> = entries
        .iter()
        .filter_map(|e| overlay_child_of(&e.dn))
        .filter(|(n, _, _)| *n == number)
        .map(|(_, i, other)| (i, other))
        .collect();
    if siblings.iter().any(|(_, other)| other == name) {
        return Err(Refusal::new(
            ResultCode::ConstraintViolation,
            format!("<olcOverlay> overlay \"{name}\" already in list"),
        ));
    }
    let position = asked.unwrap_or(siblings.len()).min(siblings.len());
    let mut overlay_value_ok = false;
    let mut classes = vec!["olcOverlayConfig".to_string()];
    let own_class = CLASSES.iter().find(|(o, _)| *o == name).map(|(_, n)| *n);
    let mut options = Vec::new();
    // The classes first: an attribute is allowed by the overlay's class.
    let classes_first = attrs
        .iter()
        .filter(|(a, _)| a.eq_ignore_ascii_case("objectClass"))
        .chain(
            attrs
                .iter()
                .filter(|(a, _)| !a.eq_ignore_ascii_case("objectClass")),
        );
    for (attr, values) in classes_first {
        if attr.eq_ignore_ascii_case("objectClass") {
            for class in values {
                let lower = class.to_ascii_lowercase();
                if matches!(lower.as_str(), "top" | "olcconfig" | "olcoverlayconfig") {
                    continue;
                }
                match own_class {
                    Some(names) if names.iter().any(|n| n.eq_ignore_ascii_case(class)) => {
                        if classes.len() == 1 {
                            classes.push(names[0].to_string());
                        }
                    }
                    _ => {
                        return Err(Refusal::new(
                            ResultCode::ObjectClassViolation,
                            format!("objectClass: {class} is not the class of the {name} overlay"),
                        ))
                    }
                }
            }
            continue;
        }
        if attr.eq_ignore_ascii_case("olcOverlay") {
            overlay_value_ok = values
                .iter()
                .all(|v| split_ordinal(v).1.eq_ignore_ascii_case(name));
            continue;
        }
        let attr_name = OPTIONS
            .iter()
            .find(|(o, a, ..)| *o == name && a.eq_ignore_ascii_case(attr))
            .map(|(_, a, ..)| *a);
        let Some(attr_name) = attr_name else {
            return Err(Refusal::new(
                ResultCode::ObjectClassViolation,
                format!("attribute '{attr}' not allowed"),
            ));
        };
        if classes.len() == 1 {
            return Err(Refusal::new(
                ResultCode::ObjectClassViolation,
                format!("attribute '{attr_name}' not allowed"),
            ));
        }
        let values = match ORDERED.iter().any(|o| o.eq_ignore_ascii_case(attr_name)) {
            true => numbered(
                &values
                    .iter()
                    .map(|v| split_ordinal(v).1.to_string())
                    .collect::<Vec<_>>(),
            ),
            false => values.clone(),
        };
        options.push((attr_name.to_string(), values));
    }
    if !overlay_value_ok {
        return Err(Refusal::new(
            ResultCode::NamingViolation,
            "value of single-valued naming attribute 'olcOverlay' conflicts with value present \
             in entry",
        ));
    }
    let target = format!("olcOverlay={{{position}}}{name},{}", database_dn(number));
    let mut added = ConfigEntry::new(target)
        .with("objectClass", classes)
        .with("olcOverlay", vec![format!("{{{position}}}{name}")]);
    added.attrs.extend(options);
    let mut committed = entries.to_vec();
    committed.push(added.clone());
    let tree = committed
        .iter()
        .map(|e| match overlay_child_of(&e.dn) {
            Some((n, i, other)) if n == number && i >= position && other != name => {
                renamed_overlay(e, number, i + 1, &other)
            }
            _ => e.clone(),
        })
        .collect();
    Ok(AddedOverlay {
        added,
        committed,
        tree,
    })
}

/// The tree without the overlay entry at `position` of database `number`, the siblings after it
/// moved up one position.
pub fn without_overlay(entries: &[ConfigEntry], dn: &str) -> Result<Vec<ConfigEntry>, Refusal> {
    let Some((number, position, name)) = overlay_child_of(dn) else {
        return Err(Refusal::new(ResultCode::NoSuchObject, ""));
    };
    if name == "accesslog" {
        return Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            format!(
                "{dn}: the accesslog overlay (and its log database) is set in the configuration \
                 file; remove it there and restart"
            ),
        ));
    }
    Ok(entries
        .iter()
        .filter(|e| overlay_child_of(&e.dn) != Some((number, position, name.clone())))
        .map(|e| match overlay_child_of(&e.dn) {
            Some((n, i, other)) if n == number && i > position => {
                renamed_overlay(e, number, i - 1, &other)
            }
            _ => e.clone(),
        })
        .collect())
}

/// An overlay entry moved to position `position` of database `number`.
pub fn renamed_overlay(
    entry: &ConfigEntry,
    number: usize,
    position: usize,
    name: &str,
) -> ConfigEntry {
    let mut moved = entry.clone();
    moved.dn = format!("olcOverlay={{{position}}}{name},{}", database_dn(number));
    for (attr, values) in &mut moved.attrs {
        if attr.eq_ignore_ascii_case("olcOverlay") {
            *values = vec![format!("{{{position}}}{name}")];
        }
    }
    moved
}

/// The DN of module list `i`.
pub fn module_dn(i: usize) -> String {
    format!("cn=module{{{i}}},cn=config")
}

/// The position of a `cn=module{N},cn=config` DN (`Some(None)` for `cn=module,cn=config`, which
/// slapd numbers after the last); None for any other DN.
pub fn module_of(dn: &str) -> Option<Option<usize>> {
    let (rdn, parent) = dn.split_once(',')?;
    if !parent.trim().eq_ignore_ascii_case(super::SUFFIX) {
        return None;
    }
    let (kind, value) = rdn.split_once('=')?;
    if !kind.trim().eq_ignore_ascii_case("cn") {
        return None;
    }
    let value = value.trim();
    let tail = value
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("module"))
        .and_then(|_| value.get(6..))?;
    match split_ordinal(tail) {
        (Some(n), "") => Some(Some(n)),
        (None, "") => Some(None),
        _ => None,
    }
}

/// The `cn=module{N},cn=config` entries of `modules`; without any, one empty `cn=module{0}`, as
/// slapd always has one (Canopy's modules are built in), so that the common recipe that adds an
/// `olcModuleLoad` value to it works.
pub fn module_entries(modules: &[ModuleList]) -> Vec<ConfigEntry> {
    let empty = [ModuleList::default()];
    let modules = match modules.is_empty() {
        true => &empty[..],
        false => modules,
    };
    modules
        .iter()
        .enumerate()
        .map(|(i, list)| {
            ConfigEntry::new(module_dn(i))
                .with("objectClass", vec!["olcModuleList".to_string()])
                .with("cn", vec![format!("module{{{i}}}")])
                .with("olcModulePath", list.path.iter().cloned().collect())
                .with("olcModuleLoad", numbered(&list.load))
        })
        .collect()
}

/// The module lists of `tree`, in the order of their numbers; a module Canopy lacks is refused as
/// slapd refuses one it cannot load (other, `<olcModuleLoad> handler exited with 1`).
pub fn modules_of(tree: &[ConfigEntry]) -> Result<Vec<ModuleList>, Refusal> {
    let mut lists: Vec<(usize, &ConfigEntry)> = tree
        .iter()
        .filter_map(|e| module_of(&e.dn).flatten().map(|i| (i, e)))
        .collect();
    lists.sort_by_key(|(i, _)| *i);
    lists
        .into_iter()
        .map(|(_, entry)| {
            let load = entry.ordered("olcModuleLoad");
            if let Some(missing) = load
                .iter()
                .find(|m| crate::overlays::module_overlay(m).is_none())
            {
                return Err(Refusal::new(
                    ResultCode::Other,
                    format!(
                        "<olcModuleLoad> handler exited with 1: {missing:?} is not a module \
                         Canopy has built in (overlays: {}; back_mdb)",
                        crate::overlays::KNOWN.join(", ")
                    ),
                ));
            }
            Ok(ModuleList {
                path: entry.single("olcModulePath").map(str::to_string),
                load,
            })
        })
        // The empty list shown when none is configured is no list.
        .filter(|list| !matches!(list, Ok(l) if *l == ModuleList::default()))
        .collect()
}

/// The file's overlays of database `number` (1 the top level).
pub fn file_overlays(base: &Config, number: usize) -> &[OverlayConfig] {
    match number {
        1 => &base.overlay,
        n => base
            .database
            .get(n - 2)
            .map(|t| t.overlay.as_slice())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(text: &str) -> (Config, Vec<ConfigEntry>) {
        let config = Config::parse(text, "t").unwrap();
        let tree = super::super::from_config(&config, b"");
        (config, tree)
    }

    #[test]
    fn every_overlay_s_options_read_back_from_slapd_s_attributes() {
        let (config, tree) = tree_of(
            "suffix = \"dc=x\"\n\
             [[overlay]]\nname = \"memberof\"\ngroup-oc = \"groupOfUniqueNames\"\n\
             member-ad = \"uniqueMember\"\ndangling = \"error\"\ndangling-error = 53\nrefint = true\n\
             dn = \"cn=m,dc=x\"\n\
             [[overlay]]\nname = \"refint\"\nattributes = [\"member\", \"seeAlso\"]\n\
             nothing = \"cn=nobody,dc=x\"\n\
             [[overlay]]\nname = \"unique\"\nuri = [\"ldap:///?mail?sub\"]\n\
             [[overlay]]\nname = \"constraint\"\nconstraints = [\"mail size 256\"]\n\
             [[overlay]]\nname = \"ppolicy\"\ndefault = \"cn=p,dc=x\"\nuse_lockout = true\n\
             [[overlay]]\nname = \"dynlist\"\nattrset = [\"groupOfURLs memberURL member\"]\n\
             [[overlay]]\nname = \"auditlog\"\nfile = \"/tmp/audit.ldif\"\n\
             [[overlay]]\nname = \"syncprov\"\ncheckpoint = \"100 10\"\nsessionlog = 500\n\
             [[overlay]]\nname = \"dds\"\nmax-ttl = \"1d\"\nmax-dynamicObjects = 100\nstate = true\n",
        );
        let memberof = tree
            .iter()
            .find(|e| e.dn == "olcOverlay={0}memberof,olcDatabase={1}mdb,cn=config")
            .unwrap();
        assert_eq!(
            memberof.get("objectClass"),
            ["olcOverlayConfig", "olcMemberOfConfig"]
        );
        assert_eq!(memberof.get("olcMemberOfRefInt"), ["TRUE"]);
        assert_eq!(memberof.get("olcMemberOfDanglingError"), ["53"]);
        let dynlist = tree
            .iter()
            .find(|e| e.dn.starts_with("olcOverlay={5}dynlist"))
            .unwrap();
        assert_eq!(
            dynlist.get("olcDynListAttrSet"),
            ["{0}groupOfURLs memberURL member"]
        );
        let refint = tree
            .iter()
            .find(|e| e.dn.starts_with("olcOverlay={1}refint"))
            .unwrap();
        assert_eq!(refint.get("olcRefintAttribute"), ["member", "seeAlso"]);
        let dds = tree
            .iter()
            .find(|e| e.dn.starts_with("olcOverlay={8}dds"))
            .unwrap();
        assert_eq!(dds.get("objectClass"), ["olcOverlayConfig", "olcDDSConfig"]);
        assert_eq!(dds.get("olcDDSmaxTtl"), ["1d"]);
        assert_eq!(dds.get("olcDDSmaxDynamicObjects"), ["100"]);
        let back = overlays_of(&tree, 1, &config.overlay).unwrap();
        assert_eq!(back, config.overlay);
    }

    #[test]
    fn sssvlv_limits_read_back_from_slapd_s_attributes() {
        let (config, tree) = tree_of(
            "suffix = \"dc=x\"\n[[overlay]]\nname = \"sssvlv\"\nmax = 3\nmaxkeys = 2\nmaxperconn = 4\n",
        );
        let entry = tree
            .iter()
            .find(|e| e.dn == "olcOverlay={0}sssvlv,olcDatabase={1}mdb,cn=config")
            .unwrap();
        assert_eq!(
            entry.get("objectClass"),
            ["olcOverlayConfig", "olcSssVlvConfig"]
        );
        assert_eq!(entry.get("olcSssVlvMax"), ["3"]);
        assert_eq!(entry.get("olcSssVlvMaxKeys"), ["2"]);
        assert_eq!(entry.get("olcSssVlvMaxPerConn"), ["4"]);
        assert_eq!(
            overlays_of(&tree, 1, &config.overlay).unwrap(),
            config.overlay
        );
    }

    #[test]
    fn values_of_the_wrong_kind_are_refused_with_slapd_s_codes() {
        let (config, tree) = tree_of("suffix = \"dc=x\"\n[[overlay]]\nname = \"memberof\"\n");
        let check = |attr: &str, values: &[&str], code: ResultCode| {
            let mut changed = tree.clone();
            let entry = changed
                .iter_mut()
                .find(|e| e.dn.starts_with("olcOverlay={0}memberof"))
                .unwrap();
            entry.attrs.push((
                attr.to_string(),
                values.iter().map(|v| v.to_string()).collect(),
            ));
            let err = overlays_of(&changed, 1, &config.overlay).unwrap_err();
            assert_eq!(err.code, code, "{attr}: {}", err.message);
        };
        check(
            "olcMemberOfRefInt",
            &["yes"],
            ResultCode::InvalidAttributeSyntax,
        );
        check(
            "olcMemberOfDN",
            &["not a dn"],
            ResultCode::InvalidAttributeSyntax,
        );
        check(
            "olcMemberOfGroupOC",
            &["a", "b"],
            ResultCode::ConstraintViolation,
        );
        check(
            "olcRefintAttribute",
            &["member"],
            ResultCode::ObjectClassViolation,
        );
        check("olcMemberOfDNAD", &["x"], ResultCode::UnwillingToPerform);
    }

    #[test]
    fn an_added_overlay_takes_its_place_and_a_deleted_one_leaves_no_gap() {
        let (_, tree) = tree_of(
            "suffix = \"dc=x\"\n[[overlay]]\nname = \"memberof\"\n\
             [[overlay]]\nname = \"refint\"\nattributes = \"member\"\n",
        );
        let attrs = |name: &str| {
            vec![
                (
                    "objectClass".to_string(),
                    vec!["olcOverlayConfig".to_string()],
                ),
                ("olcOverlay".to_string(), vec![name.to_string()]),
            ]
        };
        let db = database_dn(1);
        let appended =
            added_overlay(&tree, &format!("olcOverlay=unique,{db}"), &attrs("unique")).unwrap();
        assert_eq!(appended.added.dn, format!("olcOverlay={{2}}unique,{db}"));
        let first = added_overlay(
            &tree,
            &format!("olcOverlay={{0}}unique,{db}"),
            &attrs("{0}unique"),
        )
        .unwrap();
        let names: Vec<String> = first
            .tree
            .iter()
            .filter_map(|e| overlay_child_of(&e.dn))
            .map(|(_, i, name)| format!("{i}{name}"))
            .collect();
        assert_eq!(names, ["1memberof", "2refint", "0unique"]);
        let err = added_overlay(
            &tree,
            &format!("olcOverlay=memberof,{db}"),
            &attrs("memberof"),
        )
        .unwrap_err();
        assert_eq!(err.code, ResultCode::ConstraintViolation);
        let err =
            added_overlay(&tree, &format!("olcOverlay=nosuch,{db}"), &attrs("nosuch")).unwrap_err();
        assert_eq!(err.code, ResultCode::Other);
        let err =
            added_overlay(&tree, &format!("olcOverlay=unique,{db}"), &attrs("refint")).unwrap_err();
        assert_eq!(err.code, ResultCode::NamingViolation);
        let without = without_overlay(&tree, &format!("olcOverlay={{0}}memberof,{db}")).unwrap();
        let names: Vec<String> = without
            .iter()
            .filter_map(|e| overlay_child_of(&e.dn))
            .map(|(_, i, name)| format!("{i}{name}"))
            .collect();
        assert_eq!(names, ["0refint"]);
    }

    #[test]
    fn modules_are_lists_of_built_in_ones() {
        let (_, tree) = tree_of("suffix = \"dc=x\"\n");
        let empty = tree.iter().find(|e| e.dn == module_dn(0)).unwrap();
        assert!(empty.get("olcModuleLoad").is_empty());
        assert_eq!(modules_of(&tree).unwrap(), []);
        let (config, tree) = tree_of(
            "suffix = \"dc=x\"\n[[modules]]\npath = \"/usr/lib/ldap\"\n\
             load = [\"memberof.la\", \"back_mdb\", \"refint-2.5.so.0\"]\n",
        );
        assert_eq!(modules_of(&tree).unwrap(), config.modules);
        let mut bad = tree.clone();
        for (attr, values) in &mut bad.iter_mut().find(|e| e.dn == module_dn(0)).unwrap().attrs {
            if attr == "olcModuleLoad" {
                values.push("{3}back_sql.la".into());
            }
        }
        assert_eq!(modules_of(&bad).unwrap_err().code, ResultCode::Other);
        assert_eq!(module_of("cn=module,cn=config"), Some(None));
        assert_eq!(module_of("cn=module{2},cn=config"), Some(Some(2)));
        assert_eq!(module_of("cn=modules,cn=config"), None);
    }
}
