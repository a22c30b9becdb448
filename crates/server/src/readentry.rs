//! The target entry of an operation as its requester sees it: the assertion control's test (RFC 4528) and
//! the entries the pre-read and post-read controls return (RFC 4527).

use canopy_core::filter::{evaluate, Ternary};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::ReadTxn;
use canopy_proto::{
    encode_partial_attribute, encode_read_entry_response, Control, Filter, ResultCode,
};
use canopy_schema::Schema;

use crate::access::Who;
use crate::acl::ops::retain_allowed;
use crate::acl::{privileges, Mask};
use crate::directory::Directory;
use crate::filter_view::as_slapd_sees;
use crate::ops::search::{computed_attributes, visible_entry};
use crate::select::Selection;

/// An entry with the attributes `who` may read, and its computed attributes.
pub struct Seen {
    pub entry: Entry,
    pub computed: Vec<Attribute>,
}

/// Reads a stored entry for `who`: the attributes it may read.
pub fn load(
    dir: &Directory,
    txn: &ReadTxn,
    who: &Who,
    id: u64,
    bytes: &[u8],
) -> Result<Seen, LdapError> {
    load_for(dir, txn, who, id, bytes, privileges::READ)
}

/// Reads a stored entry for `who`: the attributes (computed ones too) it holds `need` on.
pub fn load_for(
    dir: &Directory,
    txn: &ReadTxn,
    who: &Who,
    id: u64,
    bytes: &[u8],
    need: Mask,
) -> Result<Seen, LdapError> {
    let stored = Directory::parse_stored(bytes)?;
    let mut entry = visible_entry(&stored, true)?;
    let mut computed = computed_attributes(txn, id, stored.dn)?;
    if !who.root {
        let full = entry.clone();
        retain_allowed(dir, txn, who, &mut entry, need);
        let mut with_computed = Entry {
            attrs: std::mem::take(&mut computed),
            ..full
        };
        retain_allowed(dir, txn, who, &mut with_computed, need);
        computed = with_computed.attrs;
    }
    Ok(Seen { entry, computed })
}

/// An entry not yet stored (an add), as `who` sees it.
pub fn unstored(dir: &Directory, txn: &ReadTxn, who: &Who, entry: &Entry) -> Seen {
    let mut entry = entry.clone();
    retain_allowed(dir, txn, who, &mut entry, privileges::READ);
    let computed = vec![
        Attribute {
            desc: "hasSubordinates".into(),
            values: vec![b"FALSE".to_vec()],
        },
        Attribute {
            desc: "entryDN".into(),
            values: vec![entry.dn.to_string().into_bytes()],
        },
        Attribute {
            desc: "subschemaSubentry".into(),
            values: vec![crate::special::SUBSCHEMA_DN.as_bytes().to_vec()],
        },
    ];
    Seen { entry, computed }
}

/// The assertion control's test: anything but TRUE fails the operation with assertionFailed.
pub fn check_assertion(schema: &Schema, seen: &Seen, filter: &Filter) -> Result<(), LdapError> {
    match evaluate(
        schema,
        &seen.entry,
        &seen.computed,
        &as_slapd_sees(schema, filter),
    ) {
        Ternary::True => Ok(()),
        Ternary::False | Ternary::Undefined => Err(LdapError::new(
            ResultCode::AssertionFailed,
            "assertion control failed",
        )),
    }
}

/// A pre-read or post-read response control holding the selected attributes of the entry.
pub fn read_control(schema: &Schema, oid: &str, attributes: &[String], seen: &Seen) -> Control {
    let selection = Selection::parse(schema, attributes);
    let mut attrs = Vec::new();
    for attr in &seen.entry.attrs {
        if selection.wants(schema, &attr.desc) {
            let values: Vec<&[u8]> = attr.values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut attrs, &attr.desc, &values);
        }
    }
    for attr in &seen.computed {
        if selection.wants_computed(&attr.desc) {
            let values: Vec<&[u8]> = attr.values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut attrs, &attr.desc, &values);
        }
    }
    Control {
        oid: oid.to_string(),
        critical: false,
        value: Some(encode_read_entry_response(
            seen.entry.dn.to_string().as_bytes(),
            &attrs,
        )),
    }
}
