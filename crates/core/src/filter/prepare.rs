//! Resolving a filter against the schema: descriptions to types, assertion values to normal forms.

use canopy_proto::{Filter, MatchingRuleAssertion, SubstringFilter};
use canopy_schema::{AttributeType, MatchKind, MatchingRule, Schema};

use super::{Node, Target};
use crate::desc::AttrDesc;

/// Syntaxes an equality or ordering rule also accepts besides its own assertion syntax, as slapd's
/// compatibility lists do: directory string rules take printable, country and telephone number
/// strings (observed: `(telephoneNumber:caseIgnoreMatch:=5551234)` matches on slapd).
const COMPATIBLE_SYNTAXES: &[(&str, &str)] = &[
    (
        "1.3.6.1.4.1.1466.115.121.1.15",
        "1.3.6.1.4.1.1466.115.121.1.44",
    ),
    (
        "1.3.6.1.4.1.1466.115.121.1.15",
        "1.3.6.1.4.1.1466.115.121.1.11",
    ),
    (
        "1.3.6.1.4.1.1466.115.121.1.15",
        "1.3.6.1.4.1.1466.115.121.1.50",
    ),
    // IA5 rules take country strings (observed: `(c:caseIgnoreIA5Match:=de)` matches).
    (
        "1.3.6.1.4.1.1466.115.121.1.26",
        "1.3.6.1.4.1.1466.115.121.1.11",
    ),
];

/// Whether an extensible match with `rule` can be applied to values of `at` (RFC 4511 §4.5.1.7.7: the rule
/// must be usable with the attribute's syntax). A type's own rules always apply.
pub fn rule_applies(rule: MatchingRule, at: &AttributeType) -> bool {
    if at.equality == Some(rule) || at.ordering == Some(rule) || at.substr == Some(rule) {
        return true;
    }
    // The first-component rules take the first component's syntax as assertion but apply only to
    // description syntaxes (RFC 4517 §4.2.14-16): never to a plain INTEGER or string attribute.
    if matches!(
        rule,
        MatchingRule::IntegerFirstComponentMatch
            | MatchingRule::ObjectIdentifierFirstComponentMatch
            | MatchingRule::DirectoryStringFirstComponentMatch
    ) {
        return false;
    }
    let rule_syntax = rule.syntax_oid();
    rule_syntax == at.syntax
        || COMPATIBLE_SYNTAXES
            .iter()
            .any(|(r, s)| *r == rule_syntax && *s == at.syntax)
}

pub(super) fn prepare<'s>(schema: &'s Schema, filter: &Filter) -> Node<'s> {
    match filter {
        Filter::And(parts) => Node::And(parts.iter().map(|f| prepare(schema, f)).collect()),
        Filter::Or(parts) => Node::Or(parts.iter().map(|f| prepare(schema, f)).collect()),
        Filter::Not(inner) => Node::Not(Box::new(prepare(schema, inner))),
        Filter::Equality(desc, value) => equality(schema, desc, value),
        Filter::GreaterOrEqual(desc, value) => ordering(schema, desc, value, true),
        Filter::LessOrEqual(desc, value) => ordering(schema, desc, value, false),
        Filter::Substrings(sub) => substrings(schema, sub),
        Filter::Present(desc) => match target(schema, desc) {
            Some(target) => Node::Present { target },
            None => Node::Undefined,
        },
        Filter::Approx(desc, value) => approx(schema, desc, value),
        Filter::Extensible(mra) => extensible(schema, mra),
        Filter::Undefined => Node::Undefined,
    }
}

pub(super) fn target<'s>(schema: &'s Schema, desc: &str) -> Option<Target<'s>> {
    let (desc, at) = AttrDesc::parse_for_filter_typed(schema, desc).ok()?;
    Some(Target { at, desc })
}

/// The normal form of an assertion value, or None when the filter component is Undefined. The certificate
/// rules assert a serial number and issuer (RFC 4523 §2), not a certificate: certificateExactMatch's
/// assertion is read as slapd reads it; the pair, list and attribute-certificate rules' assertions are not
/// implemented, and anything else is invalid for them, so both evaluate to Undefined.
fn assertion(schema: &Schema, rule: MatchingRule, value: &[u8]) -> Option<Vec<u8>> {
    use MatchingRule::*;
    match rule {
        CertificateExactMatch => schema.normalize_assertion(rule, value).ok(),
        CertificatePairExactMatch | CertificateListExactMatch | AttributeCertificateExactMatch => {
            None
        }
        _ => super::normalize(schema, rule, value),
    }
}

fn equality<'s>(schema: &'s Schema, desc: &str, value: &[u8]) -> Node<'s> {
    let Some(target) = target(schema, desc) else {
        return Node::Undefined;
    };
    let Some(rule) = target.at.equality else {
        return Node::Undefined;
    };
    if is_class_valued(target.at) {
        // slapd's objectSubClassMatch: a class the schema does not know, or a value with spaces
        // around the name, is Undefined (observed: `(!(objectClass=topx))` matches nothing).
        let class = std::str::from_utf8(value)
            .ok()
            .and_then(|name| schema.object_class(name));
        let norm = assertion(schema, rule, value);
        return match (class, norm) {
            (Some(class), Some(norm)) => Node::ObjectClassEquality {
                target,
                class: Some(class),
                rule,
                norm,
            },
            _ => Node::Undefined,
        };
    }
    match assertion(schema, rule, value) {
        Some(norm) => Node::Equality { target, rule, norm },
        None => Node::Undefined,
    }
}

fn ordering<'s>(schema: &'s Schema, desc: &str, value: &[u8], greater: bool) -> Node<'s> {
    let Some(target) = target(schema, desc) else {
        return Node::Undefined;
    };
    let Some(rule) = target.at.ordering else {
        return Node::Undefined;
    };
    match assertion(schema, rule, value) {
        Some(norm) => Node::Ordering {
            target,
            rule,
            norm,
            greater,
        },
        None => Node::Undefined,
    }
}

fn substrings<'s>(schema: &'s Schema, sub: &SubstringFilter) -> Node<'s> {
    let Some(target) = target(schema, &sub.attr) else {
        return Node::Undefined;
    };
    let Some(rule) = target.at.substr else {
        return Node::Undefined;
    };
    // An assertion part the rule cannot prepare makes the whole component Undefined, checked once here.
    // slapd also validates each part with the attribute's equality rule (the syntax of its assertion
    // value): a no-break space in a telephoneNumber part is not a PrintableString character, so
    // Undefined; a countryName part is a Directory String (caseIgnoreMatch), of any length.
    let parts = sub
        .initial
        .iter()
        .chain(sub.any.iter())
        .chain(sub.final_.iter());
    for part in parts {
        let valid = target.at.equality.is_none_or(|eq| eq.validates(part));
        if rule.normalize_substring(part).is_err() || !valid {
            return Node::Undefined;
        }
    }
    Node::Substrings {
        target,
        rule,
        initial: sub.initial.clone(),
        any: sub.any.clone(),
        final_: sub.final_.clone(),
    }
}

fn approx<'s>(schema: &'s Schema, desc: &str, value: &[u8]) -> Node<'s> {
    let Some(target) = target(schema, desc) else {
        return Node::Undefined;
    };
    let Some(rule) = target.at.equality else {
        return Node::Undefined;
    };
    // slapd answers `~=` like `=` for every rule but the phonetic string ones (observed with
    // telephoneNumber, postalAddress, integer, generalizedTime, DN and objectClass).
    if !rule.has_phonetic_approx() {
        return equality(schema, desc, value);
    }
    match rule.approx_assertion_codes(value) {
        Ok(codes) => Node::Approx {
            target,
            rule,
            codes,
        },
        Err(_) => Node::Undefined,
    }
}

/// objectClass and structuralObjectClass: slapd matches their values as classes, superclasses
/// included (`(structuralObjectClass=person)` matches inetOrgPerson entries).
pub(crate) fn is_class_valued(at: &AttributeType) -> bool {
    at.oid == "2.5.4.0" || at.oid == "2.5.21.9"
}

fn extensible<'s>(schema: &'s Schema, mra: &MatchingRuleAssertion) -> Node<'s> {
    let target = match &mra.attr {
        Some(desc) => match target(schema, desc) {
            Some(t) => Some(t),
            None => return Node::Undefined,
        },
        None => None,
    };
    // Observed on slapd: on the class-valued types, `(objectClass:=top)` and
    // `(objectClass:dn:=top)` are the equality filter (with superclasses), while naming
    // objectIdentifierMatch, with or without a type, is Undefined.
    // Without a type, a numeric OID (one arc is enough) is FALSE and a name is Undefined.
    if mra.rule.as_deref().and_then(MatchingRule::by_name_or_oid)
        == Some(MatchingRule::ObjectIdentifierMatch)
    {
        let numeric =
            !mra.value.is_empty() && mra.value.iter().all(|b| b.is_ascii_digit() || *b == b'.');
        match &target {
            Some(t) if is_class_valued(t.at) => return Node::Undefined,
            None if !numeric => return Node::Undefined,
            None => {
                return Node::Extensible {
                    target: None,
                    rule: MatchingRule::ObjectIdentifierMatch,
                    norm: mra.value.clone(),
                    dn_attributes: mra.dn_attributes,
                }
            }
            Some(_) => {}
        }
    }
    if let (Some(desc), Some(t), None) = (&mra.attr, &target, &mra.rule) {
        if is_class_valued(t.at) {
            return equality(schema, desc, &mra.value);
        }
    }
    let rule = match (&mra.rule, &target) {
        (Some(name), _) => match MatchingRule::by_name_or_oid(name) {
            Some(rule) => rule,
            None => return Node::Undefined,
        },
        (None, Some(t)) => match t.at.equality {
            Some(rule) => rule,
            None => return Node::Undefined,
        },
        (None, None) => return Node::Undefined,
    };
    // Substring rules take a SubstringAssertion, which a plain assertion value cannot carry.
    if rule.kind() == MatchKind::Substrings {
        return Node::Undefined;
    }
    if let Some(t) = &target {
        if !rule_applies(rule, t.at) {
            return Node::Undefined;
        }
    }
    match assertion(schema, rule, &mra.value) {
        Some(norm) => Node::Extensible {
            target,
            rule,
            norm,
            dn_attributes: mra.dn_attributes,
        },
        None => Node::Undefined,
    }
}
