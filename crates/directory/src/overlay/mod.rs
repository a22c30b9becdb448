//! The overlays: optional write hooks a database runs in its `Pipeline`, with slapd's names and
//! behaviour, but inside the write's transaction (docs/overlays.md). The frontend reads their
//! configuration (`[[overlay]]` tables) and builds them with their typed settings.

pub mod accesslog;
pub mod auditlog;
pub mod constraint;
pub mod dds;
pub mod homedir;
pub mod memberof;
pub mod otp;
pub mod ppolicy;
pub mod refint;
pub mod unique;

use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Dn, Filter};
use canopy_schema::NormDn;

use crate::database::Directory;
use crate::error::store_error;
use crate::keys::dn_key;

/// Reads the entry named `ndn` in the write's transaction: its ID and the entry, None when missing.
pub(crate) fn load(txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<Option<(u64, Entry)>, LdapError> {
    let Some(id) = txn.get_id(&dn_key(ndn)).map_err(store_error)? else {
        return Ok(None);
    };
    Ok(entry(txn, id)?.map(|e| (id, e)))
}

/// Reads entry `id` in the write's transaction, None when there is none.
pub(crate) fn entry(txn: &WriteTxn<'_>, id: u64) -> Result<Option<Entry>, LdapError> {
    let Some(bytes) = txn.get_entry(id).map_err(store_error)? else {
        return Ok(None);
    };
    let entry = Directory::parse_stored(bytes)?.to_entry().map_err(|e| {
        tracing::error!(error = %e, "corrupt entry");
        LdapError::new(
            canopy_proto::ResultCode::Other,
            "stored entry is unreadable",
        )
    })?;
    Ok(Some(entry))
}

/// The IDs of the entries that may match `filter`, ascending: the index plan's candidates where the
/// filter's attributes are indexed, else every entry. A superset either way: the caller tests each one,
/// so an indexed and an unindexed database give the same answer.
pub(crate) fn candidates(
    dir: &Directory,
    txn: &WriteTxn<'_>,
    filter: &Filter,
) -> Result<Vec<u64>, LdapError> {
    let plan = canopy_core::index::plan(dir.schema(), &dir.indexes(txn), filter);
    match crate::candidates::resolve(txn, &plan)? {
        Some(ids) => Ok(ids),
        None => txn.entry_ids().map_err(store_error),
    }
}

/// The name `ndn` takes when the subtree at `from` moves to `to`; None when `ndn` is not in that subtree.
pub(crate) fn rebase(ndn: &NormDn, from: &NormDn, to: &NormDn) -> Option<NormDn> {
    if !from.is_suffix_of(ndn) {
        return None;
    }
    let own = ndn.rdns().len().checked_sub(from.rdns().len())?;
    let mut rdns = ndn.rdns().get(..own)?.to_vec();
    rdns.extend(to.rdns().iter().cloned());
    Some(NormDn::from_normalized_rdns(rdns))
}

/// The values of attribute type `attr` (any options, any spelling of its name) in `entry`.
pub(crate) fn values_of<'e>(dir: &Directory, entry: &'e Entry, attr: &str) -> Vec<&'e [u8]> {
    let schema = dir.schema();
    let Some(wanted) = schema.attribute_type(attr) else {
        return Vec::new();
    };
    entry
        .attrs
        .iter()
        .filter(|a| {
            let name = a.desc.split(';').next().unwrap_or(&a.desc);
            schema
                .attribute_type(name)
                .is_some_and(|at| std::ptr::eq(at, wanted))
        })
        .flat_map(|a| a.values.iter().map(Vec::as_slice))
        .collect()
}

/// A DN value normalized, None when it does not parse (left alone by the overlays).
pub(crate) fn dn_value(dir: &Directory, value: &[u8]) -> Option<(Dn, NormDn)> {
    let mut dn = Dn::parse(value).ok()?;
    dir.pretty(&mut dn);
    let ndn = dir.schema().normalize_dn(&dn).ok()?;
    Some((dn, ndn))
}

/// Whether `entry` lists object class `class` (by name or OID, any case).
pub(crate) fn has_class(dir: &Directory, entry: &Entry, class: &str) -> bool {
    let wanted = dir.schema().object_class(class);
    values_of(dir, entry, "objectClass").iter().any(|v| {
        let Ok(name) = std::str::from_utf8(v) else {
            return false;
        };
        match (wanted, dir.schema().object_class(name)) {
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => name.eq_ignore_ascii_case(class),
        }
    })
}
