//! Applying a ModifyRequest's changes to an entry (RFC 4511 §4.6, RFC 4525 increment) with slapd's result
//! codes and texts.
//!
//! The checks run in slapd's order: protocol-level value counts of every change first, then each change's
//! description and values, then the no-user-modification rule, then the changes one by one against the
//! entry. Whole-entry rules (object classes, naming attributes, SINGLE-VALUE across changes) belong to
//! [`crate::check::check_entry`], which the caller runs on the result, as slapd does after modifying.

use canopy_proto::{Change, ModifyOperation, ResultCode};
use canopy_schema::{AttributeType, Schema};

use crate::check::values::{
    has_equality, reject_duplicates, reject_multiple, reject_unless_relaxed, validate_values,
    value_key,
};
use crate::desc::AttrDesc;
use crate::entry::{Attribute, Entry};
use crate::error::LdapError;

/// Syntax OID of INTEGER (RFC 4517 §3.3.16), the only syntax increment applies to.
const INTEGER_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.27";

/// Who is modifying: users may not touch NO-USER-MODIFICATION attributes, the server itself (operational
/// attributes, replication, tools) may.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModifyOptions {
    pub allow_no_user_modification: bool,
    /// The Relax Rules control: the manageable bookkeeping attributes may be written
    /// ([`crate::check::manageable`]).
    pub relax: bool,
    /// Positions of Add changes whose values the caller has found absent from the entry (through an
    /// equality index): their check against every value the entry holds is skipped, so adding one
    /// member to a large group does not normalize the whole group.
    pub absent_adds: Vec<usize>,
    /// The Permissive Modify control (1.2.840.113556.1.4.1413), as slapd 2.5 answers it: adding a
    /// value the attribute holds adds nothing, deleting from an attribute the entry lacks deletes
    /// nothing; deleting a value a present attribute lacks is still noSuchAttribute, without text.
    pub permissive: bool,
}

/// Applies all changes atomically to `entry` as a user request: on error the entry is unchanged.
pub fn apply_modifications(
    schema: &Schema,
    entry: &mut Entry,
    changes: &[Change],
) -> Result<(), LdapError> {
    apply_modifications_with(schema, entry, changes, ModifyOptions::default())
}

/// [`apply_modifications`] with explicit options.
pub fn apply_modifications_with(
    schema: &Schema,
    entry: &mut Entry,
    changes: &[Change],
    options: ModifyOptions,
) -> Result<(), LdapError> {
    let mut working = entry.attrs.clone();
    apply_all(schema, &mut working, changes, &options)?;
    entry.attrs = working;
    Ok(())
}

/// [`apply_modifications_with`] on an entry the caller gives up (it keeps the original): the changes
/// are made in place, with no copy of the entry kept to restore on an error.
pub fn modified(
    schema: &Schema,
    mut entry: Entry,
    changes: &[Change],
    options: &ModifyOptions,
) -> Result<Entry, LdapError> {
    apply_all(schema, &mut entry.attrs, changes, options)?;
    Ok(entry)
}

/// The checks slapd makes on a ModifyRequest before looking at the directory (`slap_mods_check`): value
/// counts, then each change's description, increment syntax, values' syntax, several values for a
/// SINGLE-VALUE type and values given twice, change by change.
pub fn check_changes(schema: &Schema, changes: &[Change]) -> Result<(), LdapError> {
    check_value_counts(changes)?;
    for change in changes {
        resolve(schema, change)?;
    }
    Ok(())
}

/// slapd's no-user-modification check, which its frontend makes after the referral check. Expects changes
/// [`check_changes`] accepted.
pub fn check_no_user_modification(
    schema: &Schema,
    changes: &[Change],
    relax: bool,
) -> Result<(), LdapError> {
    for change in changes {
        let given = &change.modification.name;
        if let Ok(desc) = AttrDesc::parse(schema, given) {
            if let Some(at) = desc.attribute_type(schema) {
                reject_unless_relaxed(at, given, relax)?;
            }
        }
    }
    Ok(())
}

fn apply_all(
    schema: &Schema,
    attrs: &mut Vec<Attribute>,
    changes: &[Change],
    options: &ModifyOptions,
) -> Result<(), LdapError> {
    check_value_counts(changes)?;
    let mut resolved = Vec::with_capacity(changes.len());
    for change in changes {
        resolved.push(resolve(schema, change)?);
    }
    if !options.allow_no_user_modification {
        for (change, (_, at)) in changes.iter().zip(&resolved) {
            reject_unless_relaxed(at, &change.modification.name, options.relax)?;
        }
    }
    for (i, (change, (desc, at))) in changes.iter().zip(&resolved).enumerate() {
        let absent = options.absent_adds.contains(&i);
        let target = Target {
            desc: &desc.to_desc_string(),
            at,
            absent,
            permissive: options.permissive,
        };
        apply_one(schema, attrs, change, &target)?;
    }
    Ok(())
}

/// What slapd rejects while decoding the request, before looking at any description.
fn check_value_counts(changes: &[Change]) -> Result<(), LdapError> {
    for change in changes {
        let count = change.modification.values.len();
        let problem = match change.operation {
            ModifyOperation::Add if count == 0 => Some("modify/add operation requires values"),
            ModifyOperation::Increment if count == 0 => {
                Some("modify/increment operation requires value")
            }
            ModifyOperation::Increment if count > 1 => {
                Some("modify/increment operation requires single value")
            }
            _ => None,
        };
        if let Some(text) = problem {
            return Err(LdapError::new(ResultCode::ProtocolError, text));
        }
    }
    Ok(())
}

fn resolve<'s>(
    schema: &'s Schema,
    change: &Change,
) -> Result<(AttrDesc, &'s AttributeType), LdapError> {
    let given = &change.modification.name;
    let values = &change.modification.values;
    let desc = AttrDesc::parse(schema, given)?;
    desc.check_transfer(schema, given)?;
    let at = desc.attribute_type(schema).ok_or_else(|| {
        LdapError::new(
            ResultCode::UndefinedAttributeType,
            format!("{given}: attribute type undefined"),
        )
    })?;
    if change.operation == ModifyOperation::Increment && at.syntax != INTEGER_SYNTAX {
        return Err(LdapError::new(
            ResultCode::ConstraintViolation,
            format!("{given}: attribute syntax inappropriate for increment"),
        ));
    }
    validate_values(schema, at, given, values)?;
    if matches!(
        change.operation,
        ModifyOperation::Add | ModifyOperation::Replace
    ) {
        reject_multiple(at, given, values)?;
        reject_duplicates(schema, at, given, values)?;
    }
    Ok((desc, at))
}

/// The attribute one change applies to, and how.
struct Target<'a> {
    desc: &'a str,
    at: &'a AttributeType,
    /// The change adds values the caller found absent (`ModifyOptions::absent_adds`).
    absent: bool,
    permissive: bool,
}

fn apply_one(
    schema: &Schema,
    attrs: &mut Vec<Attribute>,
    change: &Change,
    target: &Target<'_>,
) -> Result<(), LdapError> {
    let (desc, at, absent) = (target.desc, target.at, target.absent);
    let given = &change.modification.name;
    let values = &change.modification.values;
    let position = attrs.iter().position(|a| a.desc.eq_ignore_ascii_case(desc));
    match change.operation {
        ModifyOperation::Add => {
            let Some(pos) = position else {
                attrs.push(Attribute {
                    desc: desc.to_string(),
                    values: values.clone(),
                });
                return Ok(());
            };
            if !has_equality(at) {
                return Err(inappropriate("modify/add", given));
            }
            let attr = attrs
                .get_mut(pos)
                .ok_or_else(|| no_such("modify/add", given))?;
            if absent {
                attr.values.extend(values.iter().cloned());
                return Ok(());
            }
            let existing: Vec<Vec<u8>> = attr
                .values
                .iter()
                .map(|v| value_key(schema, at, v))
                .collect();
            if target.permissive {
                // Only the values the attribute lacks (the request holds no two equal ones).
                let fresh: Vec<Vec<u8>> = values
                    .iter()
                    .filter(|v| !existing.contains(&value_key(schema, at, v)))
                    .cloned()
                    .collect();
                attr.values.extend(fresh);
                return Ok(());
            }
            for (index, value) in values.iter().enumerate() {
                if existing.contains(&value_key(schema, at, value)) {
                    return Err(LdapError::new(
                        ResultCode::AttributeOrValueExists,
                        format!("modify/add: {given}: value #{index} already exists"),
                    ));
                }
            }
            attr.values.extend(values.iter().cloned());
        }
        ModifyOperation::Delete => {
            let Some(pos) = position else {
                if target.permissive {
                    return Ok(());
                }
                return Err(no_such("modify/delete", given));
            };
            if values.is_empty() {
                attrs.remove(pos);
                return Ok(());
            }
            if !has_equality(at) {
                return Err(inappropriate("modify/delete", given));
            }
            let attr = attrs
                .get_mut(pos)
                .ok_or_else(|| no_such("modify/delete", given))?;
            // A value given exactly as stored is the one to remove: an attribute's values are
            // distinct under its equality rule (every write refuses equal values), so no other
            // value can match it, and the others need not be normalized (a member removed from a
            // large group).
            let exact: Option<Vec<usize>> = values
                .iter()
                .map(|v| attr.values.iter().position(|have| have == v))
                .collect();
            if let Some(positions) = exact {
                let mut index = 0;
                attr.values.retain(|_| {
                    index += 1;
                    !positions.contains(&(index - 1))
                });
                if attr.values.is_empty() {
                    attrs.remove(pos);
                }
                return Ok(());
            }
            let existing: Vec<Vec<u8>> = attr
                .values
                .iter()
                .map(|v| value_key(schema, at, v))
                .collect();
            let mut remove = vec![false; existing.len()];
            for value in values {
                let key = value_key(schema, at, value);
                let mut found = false;
                for (slot, have) in remove.iter_mut().zip(&existing) {
                    if *have == key {
                        *slot = true;
                        found = true;
                    }
                }
                if !found {
                    // slapd 2.5 refuses this one under Permissive Modify too, with no text.
                    let text = match target.permissive {
                        true => String::new(),
                        false => format!("modify/delete: {given}: no such value"),
                    };
                    return Err(LdapError::new(ResultCode::NoSuchAttribute, text));
                }
            }
            let mut flags = remove.iter();
            attr.values
                .retain(|_| !flags.next().copied().unwrap_or(false));
            if attr.values.is_empty() {
                attrs.remove(pos);
            }
        }
        ModifyOperation::Replace => {
            if let Some(pos) = position {
                attrs.remove(pos);
            }
            if !values.is_empty() {
                attrs.push(Attribute {
                    desc: desc.to_string(),
                    values: values.clone(),
                });
            }
        }
        ModifyOperation::Increment => {
            let attr = position
                .and_then(|pos| attrs.get_mut(pos))
                .ok_or_else(|| no_such("modify/increment", given))?;
            let delta = values
                .first()
                .and_then(|v| parse_integer(v))
                .ok_or_else(|| invalid_increment(given))?;
            for value in attr.values.iter_mut() {
                let current = parse_integer(value).ok_or_else(|| invalid_increment(given))?;
                let sum = current.checked_add(delta).ok_or_else(|| {
                    LdapError::new(
                        ResultCode::ConstraintViolation,
                        format!("modify/increment: {given}: value out of range"),
                    )
                })?;
                *value = sum.to_string().into_bytes();
            }
        }
    }
    Ok(())
}

/// RFC 4517 §3.3.16 INTEGER: optional '-', no leading zeros; already syntax-checked, parsed here.
fn parse_integer(value: &[u8]) -> Option<i128> {
    std::str::from_utf8(value).ok()?.trim().parse::<i128>().ok()
}

fn invalid_increment(given: &str) -> LdapError {
    LdapError::new(
        ResultCode::ConstraintViolation,
        format!("modify/increment: {given}: value is not an integer"),
    )
}

fn no_such(op: &str, given: &str) -> LdapError {
    LdapError::new(
        ResultCode::NoSuchAttribute,
        format!("{op}: {given}: no such attribute"),
    )
}

fn inappropriate(op: &str, given: &str) -> LdapError {
    LdapError::new(
        ResultCode::InappropriateMatching,
        format!("{op}: {given}: no equality matching rule"),
    )
}

#[cfg(test)]
mod tests;
