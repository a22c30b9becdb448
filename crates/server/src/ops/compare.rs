//! RFC 4511 §4.10 Compare.

use canopy_core::desc::AttrDesc;
use canopy_core::filter::{evaluate, Ternary};
use canopy_core::LdapError;
use canopy_proto::{CompareRequest, Filter, ResultCode};

use crate::access::Who;
use crate::state::State;

/// Answers compareTrue or compareFalse as Ok, everything else as Err.
pub fn compare(state: &State, who: &Who, req: &CompareRequest) -> Result<ResultCode, LdapError> {
    let dir = &state.directory;
    let (dn, ndn) = dir.normalize(&req.dn)?;
    if !dir.holds(&ndn) {
        return Err(state.outside_naming_context(&ndn));
    }
    let schema = dir.schema();
    let desc = AttrDesc::parse(schema, &req.attr)?;
    let txn = dir.read()?;
    let Some((_, bytes)) = dir.lookup(&txn, &ndn)? else {
        return Err(dir.no_such_object(&txn, &ndn, &dn));
    };
    if !who.may_read(schema, &desc.to_desc_string(), &ndn) {
        return Err(LdapError::new(ResultCode::InsufficientAccessRights, ""));
    }
    let entry = canopy_core::wire::StoredEntry::parse(bytes)
        .and_then(|s| s.to_entry())
        .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
    let Some(at) = schema.attribute_type(&desc.type_name) else {
        return Err(LdapError::new(ResultCode::UndefinedAttributeType, ""));
    };
    let Some(rule) = at.equality else {
        return Err(LdapError::new(
            ResultCode::InappropriateMatching,
            "no equality matching rule",
        ));
    };
    schema
        .normalize_value(rule, &req.value)
        .map_err(|e| LdapError::new(ResultCode::InvalidAttributeSyntax, e.to_string()))?;
    let present = Filter::Present(req.attr.clone());
    if evaluate(schema, &entry, &[], &present) != Ternary::True {
        return Err(LdapError::new(ResultCode::NoSuchAttribute, ""));
    }
    // The filter rules decide, so compare agrees with search (subtypes, options, objectClass superclasses).
    let assertion = Filter::Equality(req.attr.clone(), req.value.clone());
    Ok(match evaluate(schema, &entry, &[], &assertion) {
        Ternary::True => ResultCode::CompareTrue,
        Ternary::False | Ternary::Undefined => ResultCode::CompareFalse,
    })
}
