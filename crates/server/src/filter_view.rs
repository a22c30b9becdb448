//! Filters as slapd evaluates them where that departs from the plain rules: value assertions on the
//! computed subschemaSubentry attribute, and tests of attributes the requester may not read.

use std::borrow::Cow;

use canopy_proto::Filter;
use canopy_schema::Schema;

/// The filter as slapd evaluates it: subschemaSubentry is present in every entry, but slapd compares its
/// value un-normalized with the normalized assertion, so no value assertion on it holds unless it names
/// another matching rule. Those become absolute FALSE (RFC 4526); everything else is left as it is.
pub fn as_slapd_sees<'f>(schema: &Schema, filter: &'f Filter) -> Cow<'f, Filter> {
    if value_assertions_on_subschema(schema, filter) {
        Cow::Owned(without_subschema_values(schema, filter))
    } else {
        Cow::Borrowed(filter)
    }
}

fn is_subschema(schema: &Schema, desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    schema
        .attribute_type(name)
        .is_some_and(|at| at.name().eq_ignore_ascii_case("subschemaSubentry"))
}

/// The attribute an equality-like value assertion tests; None for presence, the boolean combinations, and
/// ordering and substrings, which subschemaSubentry has no rule for (they stay Undefined, as in slapd).
pub(crate) fn asserted_attribute(filter: &Filter) -> Option<&str> {
    match filter {
        Filter::Equality(attr, _) | Filter::Approx(attr, _) => Some(attr),
        // The attribute's own equality rule (by default or by name) compares as equality does; other
        // rules take their own course.
        Filter::Extensible(mra)
            if mra.rule.as_deref().is_none_or(|rule| {
                rule.eq_ignore_ascii_case("distinguishedNameMatch") || rule == "2.5.13.1"
            }) =>
        {
            mra.attr.as_deref()
        }
        // Presence, the boolean combinations and whatever else tests no value of a named attribute.
        _ => None,
    }
}

/// A filter item slapd never finds TRUE on any entry (see `as_slapd_sees`).
fn never_holds(schema: &Schema, item: &Filter) -> bool {
    asserted_attribute(item).is_some_and(|attr| is_subschema(schema, attr))
}

fn value_assertions_on_subschema(schema: &Schema, filter: &Filter) -> bool {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => parts
            .iter()
            .any(|f| value_assertions_on_subschema(schema, f)),
        Filter::Not(inner) => value_assertions_on_subschema(schema, inner),
        other => never_holds(schema, other),
    }
}

fn without_subschema_values(schema: &Schema, filter: &Filter) -> Filter {
    let each = |parts: &[Filter]| {
        parts
            .iter()
            .map(|f| without_subschema_values(schema, f))
            .collect()
    };
    match filter {
        Filter::And(parts) => Filter::And(each(parts)),
        Filter::Or(parts) => Filter::Or(each(parts)),
        Filter::Not(inner) => Filter::Not(Box::new(without_subschema_values(schema, inner))),
        other if never_holds(schema, other) => Filter::Or(Vec::new()),
        other => other.clone(),
    }
}

/// The filter for an entry some of whose attributes the requester may not search: slapd finds every test
/// of them Undefined, presence included, whether the entry holds one or not.
///
/// `hidden` gets the attribute and, for items that assert one value (equality, ordering, approximate,
/// extensible), that value, which `val=` rules decide on as slapd does.
pub fn without_attrs<'f>(
    filter: &'f Filter,
    hidden: impl Fn(&str, Option<&[u8]>) -> bool,
) -> Cow<'f, Filter> {
    if tests_hidden(filter, &hidden) {
        Cow::Owned(hide(filter, &hidden))
    } else {
        Cow::Borrowed(filter)
    }
}

fn tested_attribute(filter: &Filter) -> Option<&str> {
    match filter {
        Filter::Present(attr)
        | Filter::Equality(attr, _)
        | Filter::Approx(attr, _)
        | Filter::GreaterOrEqual(attr, _)
        | Filter::LessOrEqual(attr, _) => Some(attr),
        Filter::Substrings(sub) => Some(&sub.attr),
        Filter::Extensible(mra) => mra.attr.as_deref(),
        _ => None,
    }
}

/// The value an item asserts, for items that assert one.
fn asserted_value(filter: &Filter) -> Option<&[u8]> {
    match filter {
        Filter::Equality(_, v)
        | Filter::Approx(_, v)
        | Filter::GreaterOrEqual(_, v)
        | Filter::LessOrEqual(_, v) => Some(v),
        Filter::Extensible(mra) => Some(&mra.value),
        _ => None,
    }
}

fn item_hidden(item: &Filter, hidden: &impl Fn(&str, Option<&[u8]>) -> bool) -> bool {
    tested_attribute(item).is_some_and(|attr| hidden(attr, asserted_value(item)))
}

fn tests_hidden(filter: &Filter, hidden: &impl Fn(&str, Option<&[u8]>) -> bool) -> bool {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => parts.iter().any(|f| tests_hidden(f, hidden)),
        Filter::Not(inner) => tests_hidden(inner, hidden),
        other => item_hidden(other, hidden),
    }
}

fn hide(filter: &Filter, hidden: &impl Fn(&str, Option<&[u8]>) -> bool) -> Filter {
    let each = |parts: &[Filter]| parts.iter().map(|f| hide(f, hidden)).collect();
    match filter {
        Filter::And(parts) => Filter::And(each(parts)),
        Filter::Or(parts) => Filter::Or(each(parts)),
        Filter::Not(inner) => Filter::Not(Box::new(hide(inner, hidden))),
        other if item_hidden(other, hidden) => Filter::Undefined,
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::is_secret;

    #[test]
    fn value_assertions_on_subschema_subentry_become_false() {
        let schema = Schema::builtin();
        let cases = [
            ("(subschemaSubentry=cn=Subschema)", "(|)"),
            ("(subschemaSubentry=*)", "(subschemaSubentry=*)"),
            ("(!(2.5.18.10=cn=x))", "(!(|))"),
            ("(&(cn=a)(subschemaSubentry~=x))", "(&(cn=a)(|))"),
            (
                "(|(cn=a)(subschemaSubentry:dn:=cn=Subschema))",
                "(|(cn=a)(|))",
            ),
            (
                "(subschemaSubentry:caseIgnoreMatch:=cn=Subschema)",
                "(subschemaSubentry:caseIgnoreMatch:=cn=Subschema)",
            ),
            ("(subschemaSubentry:dn:2.5.13.1:=cn=Subschema)", "(|)"),
            ("(cn=subschemaSubentry)", "(cn=subschemaSubentry)"),
            // No ordering or substrings rule: those stay, and are Undefined.
            (
                "(!(subschemaSubentry>=cn=S))",
                "(!(subschemaSubentry>=cn=S))",
            ),
            ("(subschemaSubentry=c*a)", "(subschemaSubentry=c*a)"),
        ];
        for (input, expected) in cases {
            let filter = Filter::parse(input).unwrap();
            assert_eq!(
                as_slapd_sees(&schema, &filter).to_string(),
                expected,
                "{input}"
            );
        }
        let plain = Filter::parse("(cn=a)").unwrap();
        assert!(matches!(as_slapd_sees(&schema, &plain), Cow::Borrowed(_)));
    }

    #[test]
    fn secret_tests_become_undefined() {
        let schema = Schema::builtin();
        let cases = [
            ("(userPassword=x)", "(?=undefined)"),
            ("(!(userPassword=*))", "(!(?=undefined))"),
            ("(|(cn=a)(userPassword;x-opt>=x))", "(|(cn=a)(?=undefined))"),
            ("(userPassword:caseExactMatch:=x)", "(?=undefined)"),
            ("(cn=userPassword)", "(cn=userPassword)"),
        ];
        for (input, expected) in cases {
            let filter = Filter::parse(input).unwrap();
            assert_eq!(
                without_attrs(&filter, |attr, _| is_secret(&schema, attr)).to_string(),
                expected,
                "{input}"
            );
        }
        // The replacement is Undefined, so its negation is too.
        let entry = canopy_core::Entry {
            dn: canopy_proto::Dn::default(),
            ndn: canopy_schema::NormDn::root(),
            attrs: Vec::new(),
        };
        for filter in [Filter::Undefined, Filter::Not(Box::new(Filter::Undefined))] {
            let text = filter.to_string();
            assert_eq!(
                canopy_core::filter::evaluate(&schema, &entry, &[], &filter),
                canopy_core::filter::Ternary::Undefined,
                "{text}"
            );
        }
    }
}
