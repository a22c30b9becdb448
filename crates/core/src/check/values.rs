//! Value checks shared by adds and modifies: syntax validation, duplicate detection, value equality.

use canopy_proto::ResultCode;
use canopy_schema::{AttributeType, Schema};

use crate::classes::OBJECT_CLASS_OID;
use crate::error::LdapError;
use crate::filter::normalize;

/// The syntax check slapd applies to every value of an add or modify ("value #N invalid per syntax",
/// counting from 0). objectClass values must also name a known class, as in slapd.
pub(crate) fn validate_values(
    schema: &Schema,
    at: &AttributeType,
    given: &str,
    values: &[Vec<u8>],
) -> Result<(), LdapError> {
    for (index, value) in values.iter().enumerate() {
        let valid = if at.oid == OBJECT_CLASS_OID {
            std::str::from_utf8(value)
                .ok()
                .and_then(|name| schema.object_class(name))
                .is_some()
        } else {
            at.validate(value)
        };
        if !valid {
            return Err(LdapError::new(
                ResultCode::InvalidAttributeSyntax,
                format!("{given}: value #{index} invalid per syntax"),
            ));
        }
    }
    Ok(())
}

/// The form two values of `at` are compared in: the equality rule's normal form, the class OID for
/// objectClass, the bytes themselves when the type has no equality rule (or the value does not normalize).
pub(crate) fn value_key(schema: &Schema, at: &AttributeType, value: &[u8]) -> Vec<u8> {
    if at.oid == OBJECT_CLASS_OID {
        if let Some(class) = std::str::from_utf8(value)
            .ok()
            .and_then(|name| schema.object_class(name))
        {
            return class.oid.as_bytes().to_vec();
        }
    }
    at.equality
        .and_then(|rule| normalize(schema, rule, value))
        .unwrap_or_else(|| value.to_vec())
}

/// Whether values of `at` can be compared at all (slapd answers inappropriateMatching otherwise).
pub(crate) fn has_equality(at: &AttributeType) -> bool {
    at.equality.is_some() || at.oid == OBJECT_CLASS_OID
}

/// slapd's "value #N provided more than once": N is the first value that reappears later in the list.
/// Sorted, not compared pairwise: a request may carry a hundred thousand values.
pub(crate) fn reject_duplicates(
    schema: &Schema,
    at: &AttributeType,
    given: &str,
    values: &[Vec<u8>],
) -> Result<(), LdapError> {
    if values.len() < 2 {
        return Ok(());
    }
    let mut keyed: Vec<(Vec<u8>, usize)> = values
        .iter()
        .enumerate()
        .map(|(index, v)| (value_key(schema, at, v), index))
        .collect();
    keyed.sort();
    let first_repeated = keyed
        .windows(2)
        .filter(|pair| pair[0].0 == pair[1].0)
        .map(|pair| pair[0].1)
        .min();
    match first_repeated {
        Some(index) => Err(LdapError::new(
            ResultCode::AttributeOrValueExists,
            format!("{given}: value #{index} provided more than once"),
        )),
        None => Ok(()),
    }
}

/// slapd's check for a SINGLE-VALUE type given several values in one add or modify.
pub(crate) fn reject_multiple(
    at: &AttributeType,
    given: &str,
    values: &[Vec<u8>],
) -> Result<(), LdapError> {
    if at.single_value && values.len() > 1 {
        return Err(LdapError::new(
            ResultCode::ConstraintViolation,
            format!("{given}: multiple values provided"),
        ));
    }
    Ok(())
}

/// The server's bookkeeping attributes a client may write under the Relax Rules control (slapd's
/// `SLAP_AT_MANAGEABLE`): creatorsName, createTimestamp, modifiersName, modifyTimestamp, entryUUID.
/// entryCSN, entryDN, structuralObjectClass and the rest of NO-USER-MODIFICATION stay refused.
pub fn manageable(at: &AttributeType) -> bool {
    const MANAGEABLE: [&str; 5] = [
        "2.5.18.3",       // creatorsName
        "2.5.18.1",       // createTimestamp
        "2.5.18.4",       // modifiersName
        "2.5.18.2",       // modifyTimestamp
        "1.3.6.1.1.16.4", // entryUUID
    ];
    MANAGEABLE.contains(&at.oid.as_str())
}

/// A NO-USER-MODIFICATION attribute in a client's write is a constraint violation (slapd's
/// answer); a manageable one passes when `relax` (the Relax Rules control).
pub(crate) fn reject_unless_relaxed(
    at: &AttributeType,
    given: &str,
    relax: bool,
) -> Result<(), LdapError> {
    if at.no_user_modification && !(relax && manageable(at)) {
        return Err(LdapError::new(
            ResultCode::ConstraintViolation,
            format!("{given}: no user modification allowed"),
        ));
    }
    Ok(())
}
