//! Schema checks of whole entries (RFC 4512 §2.4, §4.1): object classes, required and allowed attributes,
//! SINGLE-VALUE and naming attributes, with slapd's result codes and texts.

mod build;
pub(crate) mod values;

pub use values::manageable;

use canopy_proto::ResultCode;
use canopy_schema::{AttributeType, ObjectClass, ObjectClassKind, Schema};

use crate::classes::{with_superclasses, OBJECT_CLASS_OID};
use crate::desc::split_stored;
use crate::entry::Entry;
use crate::error::LdapError;

pub use build::{add_restrictions, build_entry, entry_from_attributes, entry_from_attributes_with};

/// The structural class of the entry: the most specific of its structural classes, which must all lie on
/// one SUP chain (RFC 4512 §2.4.2).
pub fn structural_class(schema: &Schema, entry: &Entry) -> Result<String, LdapError> {
    let classes = entry_classes(schema, entry)?;
    structural_of(schema, &classes).map(|c| c.name().to_string())
}

/// Full schema check after an add or modify. In slapd's order: SINGLE-VALUE types, objectClass present,
/// classes known, `ref` only in a referral object and `aliasedObjectName` only in an alias, one structural
/// chain, structural class unchanged (against a stored structuralObjectClass), naming attributes, MUST,
/// MAY.
pub fn check_entry(schema: &Schema, entry: &Entry) -> Result<(), LdapError> {
    check_entry_typed(schema, entry, &attribute_types(schema, entry))
}

/// The type of each attribute of `entry`, in its order (None for a type the schema lacks): looked up
/// once for the checks and the encoding of one entry ([`check_entry_typed`],
/// [`crate::wire::encode_entry_typed`]).
pub fn attribute_types<'s>(schema: &'s Schema, entry: &Entry) -> Vec<Option<&'s AttributeType>> {
    entry
        .attrs
        .iter()
        .map(|attr| schema.attribute_type(split_stored(&attr.desc).0))
        .collect()
}

/// [`check_entry`] with the types of the entry's attributes already looked up
/// ([`attribute_types`], for this entry as it is now).
pub fn check_entry_typed(
    schema: &Schema,
    entry: &Entry,
    types: &[Option<&AttributeType>],
) -> Result<(), LdapError> {
    if types.len() != entry.attrs.len() {
        return check_entry(schema, entry);
    }
    // slapd's first pass over the attributes: a SINGLE-VALUE type holding several values, before it
    // looks at the object classes.
    for (attr, at) in entry.attrs.iter().zip(types) {
        if let Some(at) = at {
            single_value(at, attr.values.len())?;
        }
    }
    let classes = typed_classes(schema, entry, types)?;
    // slapd refuses `ref` outside a referral object and `aliasedObjectName` outside an alias before it
    // compares structural classes.
    for (attr, class) in [("ref", "referral"), ("aliasedObjectName", "alias")] {
        let has = entry.attrs.iter().any(|a| {
            let (name, _) = split_stored(&a.desc);
            name.eq_ignore_ascii_case(attr)
        });
        if has && !classes.iter().any(|c| c.name().eq_ignore_ascii_case(class)) {
            return Err(violation(format!(
                "attribute \"{attr}\" only allowed in the {class}"
            )));
        }
    }
    // Each class's chain of superclasses, built once for the structural class and the lineage.
    let chains: Vec<Vec<&ObjectClass>> = classes
        .iter()
        .map(|class| with_superclasses(schema, class))
        .collect();
    let structural = structural_among(&classes, &chains)?;
    check_structural_unchanged(schema, entry, structural)?;
    check_naming(schema, entry)?;
    // Each class with each of its superclasses, and every class once.
    let mut lineage: Vec<(&ObjectClass, &ObjectClass)> = Vec::new();
    let mut all: Vec<&ObjectClass> = Vec::new();
    for (class, chain) in classes.iter().zip(chains) {
        for ancestor in chain {
            lineage.push((class, ancestor));
            if !all.iter().any(|c| c.oid == ancestor.oid) {
                all.push(ancestor);
            }
        }
    }
    // An ancestor shared by several classes is checked at its first pair: a later pair of it would
    // find what the first found.
    let mut checked: Vec<&ObjectClass> = Vec::new();
    for (class, ancestor) in &lineage {
        if checked.iter().any(|c| std::ptr::eq(*c, *ancestor)) {
            continue;
        }
        checked.push(ancestor);
        for must in &ancestor.must {
            let present = schema.attribute_type(must).is_some_and(|wanted| {
                entry.attrs.iter().zip(types).any(|(attr, at)| {
                    !attr.values.is_empty() && at.is_some_and(|at| same(at, wanted))
                })
            });
            if !present {
                return Err(violation(format!(
                    "object class '{}' requires attribute '{}'",
                    class.name(),
                    display_name(schema, must)
                )));
            }
        }
    }
    let extensible = all
        .iter()
        .any(|c| c.name().eq_ignore_ascii_case("extensibleObject"));
    // authPassword holds the SCRAM secrets of userPassword: allowed wherever userPassword is, so the
    // server need not add RFC 3112's authPasswordObject class to every entry with a password.
    let mut password_allowed = None;
    for (attr, at) in entry.attrs.iter().zip(types) {
        let at = at.ok_or_else(|| {
            let (type_name, _) = split_stored(&attr.desc);
            LdapError::new(
                ResultCode::UndefinedAttributeType,
                format!("{type_name}: attribute type undefined"),
            )
        })?;
        if !extensible && !at.is_operational() && !allowed(&all, at) {
            let secret_of_password = at.oid == crate::wire::AUTH_PASSWORD_OID
                && *password_allowed.get_or_insert_with(|| {
                    schema
                        .attribute_type("userPassword")
                        .is_some_and(|pw| allowed(&all, pw))
                });
            if !secret_of_password {
                return Err(violation(format!("attribute '{}' not allowed", at.name())));
            }
        }
        single_value(at, attr.values.len())?;
    }
    Ok(())
}

fn single_value(at: &AttributeType, count: usize) -> Result<(), LdapError> {
    if at.single_value && count > 1 {
        return Err(LdapError::new(
            ResultCode::ConstraintViolation,
            format!("attribute '{}' cannot have multiple values", at.name()),
        ));
    }
    Ok(())
}

/// The same attribute type (types are unique by OID in a schema).
fn same(a: &AttributeType, b: &AttributeType) -> bool {
    std::ptr::eq(a, b) || a.oid == b.oid
}

fn violation(text: String) -> LdapError {
    LdapError::new(ResultCode::ObjectClassViolation, text)
}

/// The classes named by the entry's objectClass values (any options), in stored order.
fn entry_classes<'s>(schema: &'s Schema, entry: &Entry) -> Result<Vec<&'s ObjectClass>, LdapError> {
    typed_classes(schema, entry, &attribute_types(schema, entry))
}

/// [`entry_classes`] with the attributes' types looked up.
fn typed_classes<'s>(
    schema: &'s Schema,
    entry: &Entry,
    types: &[Option<&AttributeType>],
) -> Result<Vec<&'s ObjectClass>, LdapError> {
    let mut seen_attr = false;
    let mut classes: Vec<&ObjectClass> = Vec::new();
    for (attr, at) in entry.attrs.iter().zip(types) {
        if !at.is_some_and(|at| at.oid == OBJECT_CLASS_OID) {
            continue;
        }
        seen_attr = true;
        for value in &attr.values {
            let name = String::from_utf8_lossy(value);
            let class = schema
                .object_class(&name)
                .ok_or_else(|| violation(format!("unrecognized objectClass '{name}'")))?;
            if !classes.iter().any(|c| c.oid == class.oid) {
                classes.push(class);
            }
        }
    }
    if !seen_attr || classes.is_empty() {
        return Err(violation("no objectClass attribute".to_string()));
    }
    Ok(classes)
}

fn structural_of<'s>(
    schema: &'s Schema,
    classes: &[&'s ObjectClass],
) -> Result<&'s ObjectClass, LdapError> {
    let chains: Vec<Vec<&ObjectClass>> = classes
        .iter()
        .map(|class| with_superclasses(schema, class))
        .collect();
    structural_among(classes, &chains)
}

/// [`structural_of`] with each class's chain of superclasses (`with_superclasses`, in the order
/// of `classes`).
fn structural_among<'s>(
    classes: &[&'s ObjectClass],
    chains: &[Vec<&'s ObjectClass>],
) -> Result<&'s ObjectClass, LdapError> {
    // Whether the class at `a` is `b` or derives from it.
    let derives = |a: usize, b: &ObjectClass| {
        chains
            .get(a)
            .is_some_and(|chain| chain.iter().any(|c| c.oid == b.oid))
    };
    let mut current: Option<(usize, &ObjectClass)> = None;
    for (i, class) in classes.iter().enumerate() {
        if class.kind != ObjectClassKind::Structural {
            continue;
        }
        current = match current {
            None => Some((i, class)),
            Some((_, best)) if derives(i, best) => Some((i, class)),
            Some((b, best)) if derives(b, class) => Some((b, best)),
            Some((_, best)) => {
                return Err(violation(format!(
                    "invalid structural object class chain ({}/{})",
                    best.name(),
                    class.name()
                )))
            }
        };
    }
    current
        .map(|(_, class)| class)
        .ok_or_else(|| violation("no structural object class provided".to_string()))
}

/// slapd keeps an entry's structural class for life: a modify that would change it is refused.
fn check_structural_unchanged(
    schema: &Schema,
    entry: &Entry,
    structural: &ObjectClass,
) -> Result<(), LdapError> {
    let stored = entry
        .attrs
        .iter()
        .find(|a| {
            split_stored(&a.desc)
                .0
                .eq_ignore_ascii_case("structuralObjectClass")
        })
        .and_then(|a| a.values.first());
    let Some(stored) = stored else {
        return Ok(());
    };
    let stored_name = String::from_utf8_lossy(stored);
    let same = schema
        .object_class(&stored_name)
        .is_some_and(|c| c.oid == structural.oid);
    if same {
        return Ok(());
    }
    Err(LdapError::new(
        ResultCode::ObjectClassModsProhibited,
        format!(
            "structural object class modification from '{}' to '{}' not allowed",
            stored_name,
            structural.name()
        ),
    ))
}

/// Every AVA of the entry's RDN must be a value of the entry (RFC 4512 §2.3).
fn check_naming(schema: &Schema, entry: &Entry) -> Result<(), LdapError> {
    let Some(rdn) = entry.dn.rdns.first() else {
        return Ok(());
    };
    for ava in &rdn.avas {
        let at = schema.attribute_type(&ava.attr).ok_or_else(|| {
            LdapError::new(
                ResultCode::UndefinedAttributeType,
                format!("{}: attribute type undefined", ava.attr),
            )
        })?;
        let attr = entry
            .attrs
            .iter()
            .find(|a| a.desc.eq_ignore_ascii_case(at.name()));
        let Some(attr) = attr else {
            return Err(LdapError::new(
                ResultCode::NamingViolation,
                format!("naming attribute '{}' is not present in entry", ava.attr),
            ));
        };
        let wanted = values::value_key(schema, at, &ava.value);
        if !attr
            .values
            .iter()
            .any(|v| values::value_key(schema, at, v) == wanted)
        {
            return Err(LdapError::new(
                ResultCode::NamingViolation,
                format!(
                    "value of naming attribute '{}' is not present in entry",
                    ava.attr
                ),
            ));
        }
    }
    Ok(())
}

/// Whether one of `classes` lists `at` in MUST or MAY (the schema keeps each class's list as positions).
fn allowed(classes: &[&ObjectClass], at: &AttributeType) -> bool {
    classes.iter().any(|class| class.allows(at))
}

fn display_name(schema: &Schema, name: &str) -> String {
    schema
        .attribute_type(name)
        .map(|at| at.name().to_string())
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests;
