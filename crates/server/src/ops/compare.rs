//! RFC 4511 §4.10 Compare.

use canopy_core::desc::AttrDesc;
use canopy_core::LdapError;
use canopy_proto::{CompareRequest, ResultCode};

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
    if !who.may_read(schema, &desc.to_desc_string()) {
        return Err(LdapError::new(ResultCode::InsufficientAccessRights, ""));
    }
    let entry = canopy_core::wire::StoredEntry::parse(bytes)
        .and_then(|s| s.to_entry())
        .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
    let Some(at) = schema.attribute_type(&desc.type_name) else {
        return Err(LdapError::new(ResultCode::UndefinedAttributeType, ""));
    };
    let Some(rule) = at.equality else {
        return Err(LdapError::new(ResultCode::InappropriateMatching, "no equality matching rule"));
    };
    let wanted = schema
        .normalize_value(rule, &req.value)
        .map_err(|e| LdapError::new(ResultCode::InvalidAttributeSyntax, e.to_string()))?;
    let mut seen = false;
    for attr in &entry.attrs {
        let Ok(attr_desc) = AttrDesc::parse(schema, &attr.desc) else { continue };
        let Some(attr_type) = schema.attribute_type(&attr_desc.type_name) else { continue };
        if !schema.is_subtype_of(attr_type, at) || !desc.options.iter().all(|o| attr_desc.options.contains(o)) {
            continue;
        }
        seen = true;
        for value in &attr.values {
            if schema.normalize_value(rule, value).is_ok_and(|v| v == wanted) {
                return Ok(ResultCode::CompareTrue);
            }
        }
    }
    if seen {
        Ok(ResultCode::CompareFalse)
    } else {
        Err(LdapError::new(ResultCode::NoSuchAttribute, ""))
    }
}
