//! The target entry of an operation as its requester sees it: the assertion control's test (RFC 4528) and
//! the entries the pre-read and post-read controls return (RFC 4527).

use canopy_core::filter::{evaluate, Ternary};
use canopy_core::{Entry, LdapError};
use canopy_directory::search::{computed, decoded};
use canopy_directory::Directory;
use canopy_directory::View;
use canopy_proto::{
    encode_partial_attribute, encode_read_entry_response, Control, Filter, ResultCode,
};
use canopy_schema::Schema;

use crate::access::Who;
use crate::acl::{privileges, Guarded, Mask, Seen};
use crate::filter_view::as_slapd_sees;
use crate::select::Selection;

/// Reads a stored entry for `who`: the attributes it may read.
pub fn load<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    id: u64,
    bytes: &[u8],
) -> Result<Seen, LdapError> {
    load_for(dir, txn, who, id, bytes, privileges::READ)
}

/// Reads a stored entry for `who`: the attributes (computed ones too) it holds `need` on.
pub fn load_for<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    id: u64,
    bytes: &[u8],
    need: Mask,
) -> Result<Seen, LdapError> {
    let stored = Directory::parse_stored(bytes)?;
    let entry = decoded(&stored, true)?;
    let computed = dir.computed_attributes(txn, id, stored.dn)?;
    Ok(Seen::through(dir, txn, who, entry, computed, need))
}

/// [`load`], with the computed attributes (entryDN) of the entry named `dn` instead of its stored DN: a
/// renamed entry as slapd's post-read shows it.
pub fn load_named<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    id: u64,
    bytes: &[u8],
    dn: &[u8],
) -> Result<Seen, LdapError> {
    let stored = Directory::parse_stored(bytes)?;
    let entry = decoded(&stored, true)?;
    let computed = dir.computed_attributes(txn, id, dn)?;
    Ok(Seen::through(
        dir,
        txn,
        who,
        entry,
        computed,
        privileges::READ,
    ))
}

/// An entry not yet stored (an add), as `who` sees it.
pub fn unstored<T: View>(dir: &impl Guarded, txn: &T, who: &Who, entry: &Entry) -> Seen {
    let computed = computed(false, entry.dn.to_string().as_bytes());
    Seen::proposed(dir, txn, who, entry.clone(), computed)
}

/// The assertion control's test: anything but TRUE fails the operation with assertionFailed.
pub fn check_assertion(schema: &Schema, seen: &Seen, filter: &Filter) -> Result<(), LdapError> {
    match evaluate(
        schema,
        seen.entry(),
        seen.computed(),
        &as_slapd_sees(schema, filter),
    ) {
        Ternary::True => Ok(()),
        Ternary::False | Ternary::Undefined => Err(LdapError::new(
            ResultCode::AssertionFailed,
            "assertion control failed",
        )),
    }
}

/// A pre-read or post-read response control holding the selected attributes of the entry, named `dn`.
pub fn read_control(
    schema: &Schema,
    oid: &str,
    attributes: &[String],
    seen: &Seen,
    dn: &[u8],
) -> Control {
    let selection = Selection::parse(schema, attributes);
    let mut attrs = Vec::new();
    for attr in &seen.entry().attrs {
        if selection.wants(schema, &attr.desc) {
            let values: Vec<&[u8]> = attr.values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut attrs, &attr.desc, &values);
        }
    }
    for attr in seen.computed() {
        if selection.wants_computed(&attr.desc) {
            let values: Vec<&[u8]> = attr.values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut attrs, &attr.desc, &values);
        }
    }
    Control {
        oid: oid.to_string(),
        critical: false,
        value: Some(encode_read_entry_response(dn, &attrs)),
    }
}
