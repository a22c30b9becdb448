//! RFC 4511 §4.10 Compare.

use canopy_core::desc::AttrDesc;
use canopy_core::filter::{evaluate, Ternary};
use canopy_core::LdapError;
use canopy_proto::{CompareRequest, Filter, ResultCode, SearchScope};
use canopy_schema::Schema;

use crate::access::Who;
use crate::acl::ops::{allows, hide_matched, unless_disclosed};
use canopy_directory::referral::governing;
use canopy_directory::Directory;

use crate::acl::{privileges, AttrRef, GroupReader, SearchAccess, Seen};
use crate::ops::search::SearchRequester;
use crate::ops::OpError;
use crate::readentry::{check_assertion, load_for};
use crate::reqctl::RequestControls;
use crate::special;
use crate::state::State;

/// Computed attributes slapd adds only to search results: a compare of them is unwillingToPerform.
const NOT_COMPARABLE: [&str; 2] = ["entryDN", "subschemaSubentry"];

/// Answers compareTrue or compareFalse as Ok, everything else as Err.
pub fn compare(
    state: &State,
    who: &Who,
    req: &CompareRequest,
    ctl: &RequestControls,
) -> Result<ResultCode, OpError> {
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    let schema = state.databases.schema();
    let desc = AttrDesc::parse(schema, &req.attr)?;
    if let Some(mut entry) = special::entry_for(state, &ndn, SearchScope::BaseObject) {
        // The root DSE and the subschema entry are compared as slapd holds them, without the
        // attributes it adds only to search results.
        entry.attrs.retain(|a| {
            !NOT_COMPARABLE
                .iter()
                .any(|n| a.desc.eq_ignore_ascii_case(n))
        });
        let seen = Seen::public(entry);
        if let Some(filter) = &ctl.assertion {
            check_assertion(schema, &seen, filter)?;
        }
        return decide(schema, &seen, req);
    }
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(state.outside(&dn.to_string(), None, state.outside_naming_context(&ndn)));
    };
    let who = dir.requester(who);
    let who = who.as_ref();
    let txn = dir.read()?;
    if let Some(referral) = governing(dir, &txn, &dn, &ndn, ctl.manage_dsa_it, None)? {
        return Err(referral.into());
    }
    if ctl.dont_use_copy {
        if let Some(refused) = state.copy_refused(dir, &dn.to_string(), None) {
            return Err(refused);
        }
    }
    let Some((id, bytes)) = dir.lookup(&txn, &ndn)? else {
        let missing = dir.no_such_object(&txn, &ndn, &dn);
        return Err(hide_matched(dir, &txn, who, missing).into());
    };
    let full = Directory::parse_stored(bytes)?
        .to_entry()
        .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
    // slapd checks the asserted value, so `val=` rules apply.
    let attr = AttrRef::Value(&req.attr, &req.value);
    if !allows(dir, &txn, who, &full, attr, privileges::COMPARE) {
        let refused = LdapError::new(ResultCode::InsufficientAccessRights, "");
        return Err(unless_disclosed(dir, &txn, who, &full, refused).into());
    }
    // The read hook's expansion: a dynamic group compares with every member its URLs find. slapd
    // tests the asserted member against the URLs without access control (only search results are
    // the requester's); access to the group itself was decided above, on the entry as stored.
    let expanded;
    let none = |_: &str| false;
    let hook = dir.read_hook(ctl.manage_dsa_it);
    let bytes = match dir.backend().expander(&txn, hook, &none, &none) {
        Some(mut expander) => {
            let groups = GroupReader { dir, txn: &txn };
            let access = SearchAccess::new(dir.acl().checker(schema, who, &groups));
            let mut requester = SearchRequester::new(&access, true, false);
            let stored = Directory::parse_stored(bytes)?;
            match expander.expand(&ndn, &stored, &mut requester)? {
                Some(bytes) => {
                    expanded = bytes;
                    &expanded[..]
                }
                None => bytes,
            }
        }
        None => bytes,
    };
    let mut seen = load_for(dir, &txn, who, id, bytes, privileges::COMPARE)?;
    if let Some(filter) = &ctl.assertion {
        check_assertion(schema, &seen, filter)?;
    }
    let canonical = schema
        .attribute_type(&desc.type_name)
        .map(|at| at.name())
        .unwrap_or(&desc.type_name);
    if NOT_COMPARABLE
        .iter()
        .any(|name| name.eq_ignore_ascii_case(canonical))
    {
        return Err(LdapError::new(ResultCode::UnwillingToPerform, "").into());
    }
    seen.drop_computed(|a| {
        NOT_COMPARABLE
            .iter()
            .any(|n| a.desc.eq_ignore_ascii_case(n))
    });
    decide(schema, &seen, req)
}

/// The comparison itself, on an entry the requester may read.
fn decide(schema: &Schema, seen: &Seen, req: &CompareRequest) -> Result<ResultCode, OpError> {
    let desc = AttrDesc::parse(schema, &req.attr)?;
    let Some(at) = schema.attribute_type(&desc.type_name) else {
        return Err(LdapError::new(ResultCode::UndefinedAttributeType, "").into());
    };
    let Some(rule) = at.equality else {
        return Err(LdapError::new(
            ResultCode::InappropriateMatching,
            "no equality matching rule",
        )
        .into());
    };
    schema
        .normalize_assertion(rule, &req.value)
        .map_err(|e| LdapError::new(ResultCode::InvalidAttributeSyntax, e.to_string()))?;
    let present = Filter::Present(req.attr.clone());
    if evaluate(schema, seen.entry(), seen.computed(), &present) != Ternary::True {
        return Err(LdapError::new(ResultCode::NoSuchAttribute, "").into());
    }
    // The filter rules decide, so compare agrees with search (subtypes, options, objectClass superclasses).
    let assertion = Filter::Equality(req.attr.clone(), req.value.clone());
    Ok(
        match evaluate(schema, seen.entry(), seen.computed(), &assertion) {
            Ternary::True => ResultCode::CompareTrue,
            Ternary::False | Ternary::Undefined => ResultCode::CompareFalse,
        },
    )
}
