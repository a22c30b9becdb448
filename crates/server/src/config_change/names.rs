//! What the kinds of change share: a DN of the tree compared loosely, the attributes whose values carry
//! `{N}` positions, what a schema child holds.

/// Attributes whose values carry `{N}` positions (X-ORDERED 'VALUES'), with the overlays' and
/// modules' (`config_tree::OVERLAY_ORDERED`).
const ORDERED: [&str; 6] = [
    "olcAccess",
    "olcLimits",
    "olcSyncrepl",
    "olcObjectIdentifier",
    "olcAttributeTypes",
    "olcObjectClasses",
];

/// Whether the values of `name` carry `{N}` positions.
pub(super) fn is_ordered(name: &str) -> bool {
    ORDERED
        .iter()
        .chain(crate::config_tree::OVERLAY_ORDERED.iter())
        .any(|o| o.eq_ignore_ascii_case(name))
}

/// What a schema child added live holds, and changes live.
pub(super) const SCHEMA_ATTRIBUTES: [&str; 3] = [
    "olcObjectIdentifier",
    "olcAttributeTypes",
    "olcObjectClasses",
];

/// A DN of the tree compared loosely: lower case, no spaces after commas.
pub(super) fn normalize_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| rdn.trim().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",")
}
