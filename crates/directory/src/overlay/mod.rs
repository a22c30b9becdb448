//! The overlays: optional write hooks a database runs in its `Pipeline`, with slapd's names and
//! behaviour, but inside the write's transaction (docs/overlays.md). The frontend reads their
//! configuration (`[[overlay]]` tables) and builds them with their typed settings.

pub mod constraint;
pub mod memberof;

use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::Dn;
use canopy_schema::NormDn;

use crate::database::Directory;
use crate::error::store_error;
use crate::keys::dn_key;

/// Reads the entry named `ndn` in the write's transaction: its ID and the entry, None when missing.
pub(crate) fn load(txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<Option<(u64, Entry)>, LdapError> {
    let Some(id) = txn.get_id(&dn_key(ndn)).map_err(store_error)? else {
        return Ok(None);
    };
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
    Ok(Some((id, entry)))
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
