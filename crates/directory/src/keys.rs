//! DN keys of the dn2id table: a subtree is a key prefix (docs/design/storage.md).

use canopy_schema::NormDn;

/// 0x01, then the normalized RDNs from the root down, each followed by 0x00. The leading byte keeps the root
/// DN's key non-empty (LMDB refuses empty keys); normalized RDNs never contain 0x00, so a subtree's keys are
/// exactly those that start with its base's key.
pub fn dn_key(ndn: &NormDn) -> Vec<u8> {
    let rdns = ndn.rdns();
    let mut key = Vec::with_capacity(1 + ndn.as_str().len() + rdns.len());
    key.push(1);
    for rdn in rdns.iter().rev() {
        key.extend_from_slice(rdn.as_bytes());
        key.push(0);
    }
    key
}
