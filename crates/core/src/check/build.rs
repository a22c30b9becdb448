//! Building an entry from an AddRequest's attribute list, with slapd's checks and its RDN completion.

use canopy_proto::{Dn, PartialAttribute, ResultCode};
use canopy_schema::{NormDn, Schema};

use super::values::{
    reject_duplicates, reject_multiple, reject_unless_relaxed, validate_values, value_key,
};
use crate::desc::AttrDesc;
use crate::entry::{Attribute, Entry};
use crate::error::LdapError;

/// Builds the entry of a user's AddRequest: descriptions resolved to canonical form, values checked
/// against their syntax, duplicates and repeated descriptions refused, NO-USER-MODIFICATION attributes
/// refused, and RDN values the client left out added (as slapd does). Run
/// [`check_entry`](super::check_entry) on the result.
pub fn entry_from_attributes(
    schema: &Schema,
    dn: Dn,
    ndn: NormDn,
    attrs: &[PartialAttribute],
) -> Result<Entry, LdapError> {
    entry_from_attributes_with(schema, dn, ndn, attrs, false)
}

/// [`entry_from_attributes`] for trusted sources (import, replication): NO-USER-MODIFICATION attributes such
/// as entryUUID or createTimestamp are accepted when `allow_no_user_modification` is set.
pub fn entry_from_attributes_with(
    schema: &Schema,
    dn: Dn,
    ndn: NormDn,
    attrs: &[PartialAttribute],
    allow_no_user_modification: bool,
) -> Result<Entry, LdapError> {
    let entry = build_entry(schema, dn, ndn, attrs)?;
    add_restrictions(schema, attrs, allow_no_user_modification, false)?;
    Ok(entry)
}

/// The first half of slapd's add checks, those it makes while decoding the request (`slap_mods_check`,
/// `slap_mods2entry`, `entry_naming_check`): each attribute's description, its values' syntax, several
/// values for a SINGLE-VALUE type, values given twice; then the RDN values the client left out are
/// added. A description given twice is merged here and refused by [`add_restrictions`], which slapd
/// runs only after its referral and authentication checks.
pub fn build_entry(
    schema: &Schema,
    dn: Dn,
    ndn: NormDn,
    attrs: &[PartialAttribute],
) -> Result<Entry, LdapError> {
    // slapd refuses empty value sets while decoding the PDU, before looking at any description.
    if attrs.iter().any(|a| a.values.is_empty()) {
        return Err(LdapError::new(
            ResultCode::ProtocolError,
            "no values for attribute type",
        ));
    }
    let mut built: Vec<Attribute> = Vec::with_capacity(attrs.len() + 1);
    for given in attrs {
        let desc = AttrDesc::parse(schema, &given.name)?;
        desc.check_transfer(schema, &given.name)?;
        let at = desc.attribute_type(schema).ok_or_else(|| {
            LdapError::new(
                ResultCode::UndefinedAttributeType,
                format!("{}: attribute type undefined", given.name),
            )
        })?;
        validate_values(schema, at, &given.name, &given.values)?;
        reject_multiple(at, &given.name, &given.values)?;
        reject_duplicates(schema, at, &given.name, &given.values)?;
        let desc_string = desc.to_desc_string();
        match built
            .iter_mut()
            .find(|a| a.desc.eq_ignore_ascii_case(&desc_string))
        {
            Some(earlier) => earlier.values.extend(given.values.iter().cloned()),
            None => built.push(Attribute {
                desc: desc_string,
                values: given.values.clone(),
            }),
        }
    }
    add_rdn_values(schema, &dn, &mut built)?;
    Ok(Entry {
        dn,
        ndn,
        attrs: built,
    })
}

/// The second half, slapd's `fe_op_add` checks after referrals: NO-USER-MODIFICATION attributes (unless
/// `allow_no_user_modification`), then a description given twice. Expects attributes [`build_entry`]
/// accepted.
pub fn add_restrictions(
    schema: &Schema,
    attrs: &[PartialAttribute],
    allow_no_user_modification: bool,
    relax: bool,
) -> Result<(), LdapError> {
    let resolved: Vec<(String, Option<&canopy_schema::AttributeType>)> = attrs
        .iter()
        .map(|given| match AttrDesc::parse(schema, &given.name) {
            Ok(desc) => (desc.to_desc_string(), desc.attribute_type(schema)),
            Err(_) => (given.name.clone(), None),
        })
        .collect();
    if !allow_no_user_modification {
        for (given, (_, at)) in attrs.iter().zip(&resolved) {
            if let Some(at) = at {
                reject_unless_relaxed(at, &given.name, relax)?;
            }
        }
    }
    for (index, (desc, _)) in resolved.iter().enumerate() {
        if resolved
            .iter()
            .take(index)
            .any(|(earlier, _)| earlier.eq_ignore_ascii_case(desc))
        {
            return Err(LdapError::new(
                ResultCode::AttributeOrValueExists,
                format!("attribute '{desc}' provided more than once"),
            ));
        }
    }
    Ok(())
}

/// RFC 4512 §2.3 wants each RDN value among the entry's values; slapd supplies the missing ones itself,
/// unless a SINGLE-VALUE type already holds a different value.
fn add_rdn_values(schema: &Schema, dn: &Dn, attrs: &mut Vec<Attribute>) -> Result<(), LdapError> {
    let Some(rdn) = dn.rdns.first() else {
        return Ok(());
    };
    for ava in &rdn.avas {
        let at = schema.attribute_type(&ava.attr).ok_or_else(|| {
            LdapError::new(
                ResultCode::UndefinedAttributeType,
                format!("{}: attribute type undefined", ava.attr),
            )
        })?;
        let wanted = value_key(schema, at, &ava.value);
        match attrs
            .iter_mut()
            .find(|a| a.desc.eq_ignore_ascii_case(at.name()))
        {
            Some(attr) => {
                if attr
                    .values
                    .iter()
                    .any(|v| value_key(schema, at, v) == wanted)
                {
                    continue;
                }
                if at.single_value {
                    return Err(LdapError::new(
                        ResultCode::NamingViolation,
                        format!(
                            "value of single-valued naming attribute '{}' conflicts with value \
                             present in entry",
                            ava.attr
                        ),
                    ));
                }
                attr.values.push(ava.value.clone());
            }
            None => attrs.push(Attribute {
                desc: at.name().to_string(),
                values: vec![ava.value.clone()],
            }),
        }
    }
    Ok(())
}
