//! Entries the server makes up rather than stores: the root DSE (RFC 4512 §5.1) and cn=Subschema (§4.2).

use canopy_core::{Attribute, Entry};
use canopy_proto::oid::{
    CONTROL_ASSERTION, CONTROL_DONT_USE_COPY, CONTROL_MANAGE_DSA_IT, CONTROL_PAGED_RESULTS,
    CONTROL_POST_READ, CONTROL_PRE_READ, CONTROL_PROXY_AUTHZ, CONTROL_RELAX, CONTROL_SUBENTRIES,
    CONTROL_VALUES_RETURN, EXOP_CANCEL, EXOP_PASSWORD_MODIFY, EXOP_START_TLS, EXOP_TXN_END,
    EXOP_TXN_START, EXOP_WHO_AM_I,
};
use canopy_proto::sync::CONTROL_SYNC_REQUEST;
use canopy_proto::{Dn, SearchScope};
use canopy_schema::NormDn;

use crate::state::ServerState;

pub use canopy_directory::search::SUBSCHEMA_DN;

/// RFC 4512 §5.1 feature OIDs slapd lists: all operational attributes (RFC 3673), objectClass lists in
/// attribute lists (RFC 4529), true/false filters (RFC 4526), increment (RFC 4525).
const FEATURES: &[&str] = &[
    "1.3.6.1.1.14",
    "1.3.6.1.4.1.4203.1.5.1",
    "1.3.6.1.4.1.4203.1.5.2",
    "1.3.6.1.4.1.4203.1.5.3",
];

/// The special entry a base-scope search of `base` reads, if any.
pub fn entry_for(state: &ServerState, base: &NormDn, scope: SearchScope) -> Option<Entry> {
    if scope != SearchScope::BaseObject {
        return None;
    }
    if base.is_root() {
        return Some(root_dse(state));
    }
    let subschema = state
        .databases
        .schema()
        .normalize_dn(&Dn::parse(SUBSCHEMA_DN.as_bytes()).ok()?)
        .ok()?;
    (*base == subschema).then(|| subschema_entry(state))
}

fn attr(desc: &str, values: impl IntoIterator<Item = String>) -> Attribute {
    Attribute {
        desc: desc.to_string(),
        values: values.into_iter().map(String::into_bytes).collect(),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The request controls the server acts on, as slapd lists them: the frontend's always, the Sync
/// Request control (RFC 4533) when a database can be followed, a hook's (the password policy's) when
/// a database runs it, as slapd lists an overlay's control once its module is loaded.
fn supported_controls(state: &ServerState) -> Vec<String> {
    let mut controls = strings(&[
        CONTROL_ASSERTION,
        CONTROL_PRE_READ,
        CONTROL_POST_READ,
        CONTROL_MANAGE_DSA_IT,
        CONTROL_PAGED_RESULTS,
        CONTROL_VALUES_RETURN,
        CONTROL_RELAX,
        CONTROL_DONT_USE_COPY,
        CONTROL_PROXY_AUTHZ,
        CONTROL_SUBENTRIES,
    ]);
    let followed = state.databases.iter().any(|db| {
        state
            .backend(db)
            .is_none_or(|backend| backend.provides_sync())
    });
    if followed {
        controls.push(CONTROL_SYNC_REQUEST.to_string());
    }
    controls.extend(
        state
            .databases
            .hook_controls()
            .into_iter()
            .map(str::to_string),
    );
    controls
}

fn root_dse(state: &ServerState) -> Entry {
    Entry {
        dn: Dn::default(),
        ndn: NormDn::root(),
        attrs: vec![
            attr("objectClass", strings(&["top", "OpenLDAProotDSE"])),
            attr("structuralObjectClass", strings(&["OpenLDAProotDSE"])),
            attr(
                "namingContexts",
                state
                    .databases
                    .iter()
                    // slapd lists every database in configuration order but cn=Monitor (its
                    // monitorContext) and glued subordinates (part of their superior's context).
                    .filter(|db| {
                        !db.is_monitor()
                            && !db.is_config()
                            && db.subordinate() != crate::databases::Subordinate::Glued
                    })
                    .map(|db| db.suffix_dn().to_string()),
            ),
            attr("subschemaSubentry", strings(&[SUBSCHEMA_DN])),
            attr("supportedControl", supported_controls(state)),
            attr("supportedExtension", extensions(state)),
            attr("supportedFeatures", strings(FEATURES)),
            attr("supportedLDAPVersion", strings(&["3"])),
            attr(
                "supportedSASLMechanisms",
                crate::sasl::mechanisms(&state.config.sasl),
            ),
            attr("vendorName", strings(&["Canopy"])),
            attr(
                "vendorVersion",
                [format!("Canopy {}", env!("CARGO_PKG_VERSION"))],
            ),
            attr("entryDN", [String::new()]),
        ]
        .into_iter()
        .chain(
            state
                .monitor
                .is_some()
                .then(|| attr("monitorContext", strings(&[crate::monitor::SUFFIX]))),
        )
        .chain(
            state
                .config_tree
                .is_some()
                .then(|| attr("configContext", strings(&[crate::config_tree::SUFFIX]))),
        )
        .collect(),
    }
}

/// The extended operations offered; StartTLS only while a certificate is available.
fn extensions(state: &ServerState) -> Vec<String> {
    let mut oids = Vec::new();
    if state.tls.is_some() {
        oids.push(EXOP_START_TLS.to_string());
    }
    // Cancel, and RFC 5805's End and Start Transaction, in slapd's order.
    oids.extend(strings(&[
        EXOP_PASSWORD_MODIFY,
        EXOP_WHO_AM_I,
        EXOP_CANCEL,
        EXOP_TXN_END,
        EXOP_TXN_START,
    ]));
    oids
}

/// slapd publishes neither its authz syntax nor authzTo and authzFrom.
const AUTHZ_SYNTAX: &str = canopy_schema::authz::SYNTAX_OID;
const UNPUBLISHED: [&str; 2] = [
    canopy_schema::authz::AUTHZ_TO_OID,
    canopy_schema::authz::AUTHZ_FROM_OID,
];

fn subschema_entry(state: &ServerState) -> Entry {
    let schema = state.databases.schema();
    let dn = Dn::parse(SUBSCHEMA_DN.as_bytes()).unwrap_or_default();
    let ndn = schema.normalize_dn(&dn).unwrap_or_else(|_| NormDn::root());
    Entry {
        dn,
        ndn,
        attrs: vec![
            attr("structuralObjectClass", strings(&["subentry"])),
            attr(
                "objectClass",
                strings(&["top", "subentry", "subschema", "extensibleObject"]),
            ),
            attr("cn", strings(&["Subschema"])),
            attr(
                "ldapSyntaxes",
                schema
                    .syntaxes()
                    .filter(|s| s.oid != AUTHZ_SYNTAX)
                    .map(|s| s.definition()),
            ),
            attr(
                "matchingRules",
                schema.matching_rules().map(|m| m.definition()),
            ),
            attr(
                "attributeTypes",
                schema
                    .attribute_types()
                    .filter(|a| !UNPUBLISHED.contains(&a.oid.as_str()))
                    .map(|a| a.definition()),
            ),
            attr(
                "objectClasses",
                schema.object_classes().map(|o| o.definition()),
            ),
            attr("entryDN", [SUBSCHEMA_DN.to_string()]),
            attr("subschemaSubentry", strings(&[SUBSCHEMA_DN])),
        ],
    }
}
