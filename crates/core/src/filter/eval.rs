//! Testing one entry against a prepared filter.

use std::cmp::Ordering;

use canopy_schema::{AttributeType, MatchKind, MatchingRule, ObjectClass, Schema};

use super::prepare::is_class_valued;
use super::{normalize, rule_applies, Node, Subject, Target, Ternary, Values};
use crate::classes::with_superclasses;
use crate::desc::split_stored;
use crate::entry::Attribute;

pub(super) fn evaluate_node<E: Subject + ?Sized>(
    schema: &Schema,
    node: &Node<'_>,
    entry: &E,
    extra: &[Attribute],
) -> Ternary {
    match node {
        Node::And(parts) => {
            let mut result = Ternary::True;
            for part in parts {
                match evaluate_node(schema, part, entry, extra) {
                    Ternary::False => return Ternary::False,
                    Ternary::Undefined => result = Ternary::Undefined,
                    Ternary::True => {}
                }
            }
            result
        }
        Node::Or(parts) => {
            let mut result = Ternary::False;
            for part in parts {
                match evaluate_node(schema, part, entry, extra) {
                    Ternary::True => return Ternary::True,
                    Ternary::Undefined => result = Ternary::Undefined,
                    Ternary::False => {}
                }
            }
            result
        }
        Node::Not(inner) => !evaluate_node(schema, inner, entry, extra),
        Node::Undefined => Ternary::Undefined,
        Node::Present { target } => {
            let found = with_extra(entry, extra)
                .any(|(desc, values)| !values.is_empty() && applies_to(schema, target, desc));
            if found {
                Ternary::True
            } else {
                Ternary::False
            }
        }
        Node::Equality { target, rule, norm } => any_value(schema, target, entry, extra, |v| {
            // The usual string value is compared in place; anything else through its normal form.
            match rule.ascii_normal_form_is(v, norm) {
                Some(equal) => Some(equal),
                None => normalize(schema, *rule, v).map(|n| n == *norm),
            }
        }),
        Node::ObjectClassEquality {
            target,
            class,
            rule,
            norm,
        } => any_value(schema, target, entry, extra, |v| {
            if let Some(wanted) = class {
                let stored = std::str::from_utf8(v)
                    .ok()
                    .and_then(|name| schema.object_class(name));
                if let Some(stored) = stored {
                    return Some(is_subclass(schema, stored, wanted));
                }
            }
            normalize(schema, *rule, v).map(|n| n == *norm)
        }),
        Node::Ordering {
            target,
            rule,
            norm,
            greater,
        } => any_value(schema, target, entry, extra, |v| {
            normalize(schema, *rule, v).map(|n| {
                let ord = rule.compare(&n, norm);
                if *greater {
                    ord != Ordering::Less
                } else {
                    ord != Ordering::Greater
                }
            })
        }),
        Node::Substrings {
            target,
            rule,
            initial,
            any,
            final_,
        } => any_value(schema, target, entry, extra, |v| {
            rule.matches_substrings(v, initial.as_deref(), any, final_.as_deref())
                .ok()
        }),
        Node::Approx {
            target,
            rule,
            codes,
        } => any_value(schema, target, entry, extra, |v| {
            rule.approx_value_codes(v)
                .ok()
                .map(|value| MatchingRule::approx_codes_match(&value, codes))
        }),
        Node::Extensible {
            target,
            rule,
            norm,
            dn_attributes,
        } => extensible(
            schema,
            target.as_ref(),
            *rule,
            norm,
            *dn_attributes,
            entry,
            extra,
        ),
    }
}

/// Whether a filter component on `target` looks at a stored attribute: its type is the target's type or a
/// subtype of it, and it carries the target's options.
fn applies_to(schema: &Schema, target: &Target<'_>, desc: &str) -> bool {
    let (type_name, options) = split_stored(desc);
    target.desc.options_match(options) && type_matches(schema, type_name, target.at)
}

fn type_matches(schema: &Schema, stored_type: &str, wanted: &AttributeType) -> bool {
    if stored_type.eq_ignore_ascii_case(wanted.name()) {
        return true;
    }
    // Without subtypes only the type's own names (or OID) can match: no schema lookup per attribute.
    if !wanted.has_subtypes() {
        return wanted.is_named(stored_type);
    }
    match schema.attribute_type(stored_type) {
        Some(at) => schema.is_subtype_of(at, wanted),
        None => false,
    }
}

/// The entry's attributes followed by the computed ones.
fn with_extra<'a, E: Subject + ?Sized>(
    entry: &'a E,
    extra: &'a [Attribute],
) -> impl Iterator<Item = (&'a str, Values<'a>)> {
    entry.attributes().chain(
        extra
            .iter()
            .map(|a| (a.desc.as_str(), Values::Memory(a.values.iter()))),
    )
}

/// RFC 4511 §4.5.1.7: TRUE if some value matches, Undefined if none does but some could not be compared,
/// FALSE otherwise. `test` answers None for a value it cannot compare.
fn any_value<E: Subject + ?Sized>(
    schema: &Schema,
    target: &Target<'_>,
    entry: &E,
    extra: &[Attribute],
    test: impl Fn(&[u8]) -> Option<bool>,
) -> Ternary {
    let mut undefined = false;
    // slapd finds subschemaSubentry present on every entry but matches no value of it
    // (observed: `(subschemaSubentry=cn=Subschema)` selects nothing); it is computed, never stored.
    let looked_at = |desc: &str| {
        applies_to(schema, target, desc)
            && !split_stored(desc)
                .0
                .eq_ignore_ascii_case("subschemaSubentry")
    };
    for (desc, values) in with_extra(entry, extra) {
        if !looked_at(desc) {
            continue;
        }
        for value in values {
            match test(value) {
                Some(true) => return Ternary::True,
                Some(false) => {}
                None => undefined = true,
            }
        }
    }
    if undefined {
        Ternary::Undefined
    } else {
        Ternary::False
    }
}

/// Whether `class` is `ancestor` or inherits from it through its SUP chain.
fn is_subclass(schema: &Schema, class: &ObjectClass, ancestor: &ObjectClass) -> bool {
    with_superclasses(schema, class)
        .iter()
        .any(|c| c.oid == ancestor.oid)
}

/// One value under an extensible-match rule: equality rules compare normal forms, ordering rules are true
/// when the value sorts before the assertion (X.501 "less than").
fn rule_matches(schema: &Schema, rule: MatchingRule, norm: &[u8], value: &[u8]) -> Option<bool> {
    let value_norm = normalize(schema, rule, value)?;
    // The rule decides what "matches" means: byte equality, ordering, or the bitwise rules.
    match rule.kind() {
        MatchKind::Equality | MatchKind::Ordering => Some(rule.value_matches(&value_norm, norm)),
        MatchKind::Substrings => None,
    }
}

fn extensible<E: Subject + ?Sized>(
    schema: &Schema,
    target: Option<&Target<'_>>,
    rule: MatchingRule,
    norm: &[u8],
    dn_attributes: bool,
    entry: &E,
    extra: &[Attribute],
) -> Ternary {
    // slapd stops at the first value the rule cannot evaluate and answers Undefined for the whole
    // assertion, even when a later value would match (observed: `(:integerBitAndMatch:=1)` skips an
    // entry whose uidNumber exceeds 64 bits although its gidNumber 1 matches).
    // Without a type, slapd looks at the stored attributes only (not entryDN or hasSubordinates),
    // and objectIdentifierMatch never matches the class-valued types. With a type, it computes entryDN
    // but never hasSubordinates (observed: `(hasSubordinates:=TRUE)` matches nothing, while an invalid
    // assertion value such as `(!(hasSubordinates:=))` stays Undefined).
    let consider = |value: &[u8]| rule_matches(schema, rule, norm, value);
    let computed = match target {
        Some(_) => extra,
        None => &[],
    };
    let applies = |desc: &str| {
        let (type_name, options) = split_stored(desc);
        match target {
            Some(t) => t.desc.options_match(options) && type_matches(schema, type_name, t.at),
            None => schema.attribute_type(type_name).is_some_and(|at| {
                rule_applies(rule, at)
                    && !(rule == MatchingRule::ObjectIdentifierMatch && is_class_valued(at))
            }),
        }
    };
    let computed = computed
        .iter()
        .filter(|a| !a.desc.eq_ignore_ascii_case("hasSubordinates"))
        .map(|a| (a.desc.as_str(), Values::Memory(a.values.iter())));
    for (desc, values) in entry.attributes().chain(computed) {
        if !applies(desc) {
            continue;
        }
        for value in values {
            match consider(value) {
                Some(true) => return Ternary::True,
                Some(false) => {}
                None => return Ternary::Undefined,
            }
        }
    }
    let dn = if dn_attributes { entry.dn() } else { None };
    if let Some(dn) = dn {
        for ava in dn.rdns.iter().flat_map(|rdn| rdn.avas.iter()) {
            let Some(at) = schema.attribute_type(&ava.attr) else {
                continue;
            };
            let applies = match target {
                Some(t) => t.desc.options.is_empty() && schema.is_subtype_of(at, t.at),
                None => rule_applies(rule, at),
            };
            if !applies {
                continue;
            }
            match consider(&ava.value) {
                Some(true) => return Ternary::True,
                Some(false) => {}
                None => return Ternary::Undefined,
            }
        }
    }
    Ternary::False
}
