//! Index keys of entries and candidate plans for filters. The byte format is fixed in
//! docs/design/index-keys.md; a plan always yields a superset of the matching entries, and the caller
//! decides each candidate with the filter test.

use std::ops::Bound;

use canopy_proto::Filter;
use canopy_schema::{AttributeType, MatchingRule, Schema};

use crate::classes::{with_superclasses, OBJECT_CLASS_OID};
use crate::desc::split_stored;
use crate::entry::Entry;
use crate::filter::{normalize, Node, PreparedFilter, Target};

/// Key kind tags: the first byte of every key.
pub const TAG_PRESENT: u8 = 0x01;
pub const TAG_EQUALITY: u8 = 0x02;
pub const TAG_SUBSTR_INITIAL: u8 = 0x03;
pub const TAG_SUBSTR_FINAL: u8 = 0x04;
pub const TAG_SUBSTR_ANY: u8 = 0x05;
pub const TAG_ORDERING: u8 = 0x06;
pub const TAG_APPROX: u8 = 0x07;

/// Length of substring grams, and the anchored prefix/suffix lengths stored for each value.
const GRAM: usize = 3;
const ANCHOR_LENGTHS: [usize; 2] = [2, 3];

/// Which index kinds exist for one attribute type (canonical name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSpec {
    pub attr: String,
    pub eq: bool,
    pub pres: bool,
    pub sub: bool,
    /// Order-preserving keys under the type's ORDERING rule, for `>=` and `<=`.
    pub ord: bool,
    /// Phonetic word codes, for `~=` on the string types (others answer `~=` from `eq`).
    pub approx: bool,
}

impl IndexSpec {
    /// An equality index of `attr` alone (the tables the server keeps for itself: objectClass of
    /// cn=config and cn=Monitor, the accesslog database's lookups).
    pub fn equality(attr: &str) -> IndexSpec {
        IndexSpec {
            attr: attr.to_string(),
            eq: true,
            pres: false,
            sub: false,
            ord: false,
            approx: false,
        }
    }
}

/// How to find candidate entries: a superset of the entries the filter matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Unindexed: every entry in scope is a candidate.
    All,
    /// No entry can match.
    Empty,
    /// The intersection of the ID lists of `keys` in the index of `attr`.
    Keys {
        attr: String,
        keys: Vec<Vec<u8>>,
    },
    /// The union of the ID lists of every key of the index of `attr` within the bounds.
    Range {
        attr: String,
        from: Bound<Vec<u8>>,
        to: Bound<Vec<u8>>,
    },
    And(Vec<Plan>),
    Or(Vec<Plan>),
}

/// The keys `entry` contributes to the index of `spec.attr`: from the values of that type and its subtypes,
/// options ignored. Sorted and without duplicates.
pub fn entry_keys(schema: &Schema, spec: &IndexSpec, entry: &Entry) -> Vec<Vec<u8>> {
    entry_keys_all(schema, std::slice::from_ref(spec), entry)
        .pop()
        .unwrap_or_default()
}

/// The keys of `entry` for each of `specs`, in the order of `specs`: [`entry_keys`] for many indexes at
/// once, resolving each attribute type of the entry once instead of once per index.
pub fn entry_keys_all(schema: &Schema, specs: &[IndexSpec], entry: &Entry) -> Vec<Vec<Vec<u8>>> {
    Resolved::new(schema, specs).keys(entry)
}

/// Indexes with their attribute types looked up once, for the keys of several entries (a write's
/// old and new entry, every entry of an import).
pub struct Resolved<'a> {
    schema: &'a Schema,
    specs: &'a [IndexSpec],
    types: Vec<Option<&'a AttributeType>>,
}

impl<'a> Resolved<'a> {
    pub fn new(schema: &'a Schema, specs: &'a [IndexSpec]) -> Self {
        let types = specs
            .iter()
            .map(|spec| schema.attribute_type(&spec.attr))
            .collect();
        Resolved {
            schema,
            specs,
            types,
        }
    }

    /// The keys of `entry` for each index, in their order ([`entry_keys_all`]).
    pub fn keys(&self, entry: &Entry) -> Vec<Vec<Vec<u8>>> {
        let schema = self.schema;
        // An attribute is of an indexed type without subtypes only when it names that type: its own
        // type need be looked up only when some indexed type has subtypes.
        let subtypes = self.types.iter().flatten().any(|at| at.has_subtypes());
        let types: Vec<Option<&AttributeType>> = match subtypes {
            true => entry
                .attrs
                .iter()
                .map(|attr| schema.attribute_type(split_stored(&attr.desc).0))
                .collect(),
            false => Vec::new(),
        };
        self.specs
            .iter()
            .zip(&self.types)
            .map(|(spec, spec_at)| match spec_at {
                Some(spec_at) => spec_keys(schema, spec, spec_at, entry, &types),
                None => Vec::new(),
            })
            .collect()
    }
}

fn spec_keys(
    schema: &Schema,
    spec: &IndexSpec,
    spec_at: &AttributeType,
    entry: &Entry,
    types: &[Option<&AttributeType>],
) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for (i, attr) in entry.attrs.iter().enumerate() {
        if attr.values.is_empty() {
            continue;
        }
        // `types` is empty when no indexed type has subtypes (`Resolved::keys`): then the names
        // decide, as a lookup would.
        let of_spec = match types.get(i) {
            Some(at) => at.is_some_and(|at| schema.is_subtype_of(at, spec_at)),
            None => types.is_empty() && spec_at.is_named(split_stored(&attr.desc).0),
        };
        if !of_spec {
            continue;
        }
        if spec.pres {
            keys.push(vec![TAG_PRESENT]);
        }
        for value in &attr.values {
            if spec.eq {
                equality_keys(schema, spec_at, value, &mut keys);
            }
            if spec.sub {
                if let Some(rule) = spec_at.substr {
                    value_substring_keys(rule, value, &mut keys);
                }
            }
            if spec.ord {
                if let Some(rule) = spec_at.ordering {
                    if let Some(norm) = normalize(schema, rule, value) {
                        keys.push(tagged(TAG_ORDERING, &rule.ordering_key(&norm)));
                    }
                }
            }
            if spec.approx {
                approx_keys(spec_at, value, &mut keys);
            }
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

fn equality_keys(schema: &Schema, spec_at: &AttributeType, value: &[u8], keys: &mut Vec<Vec<u8>>) {
    let Some(rule) = spec_at.equality else {
        return;
    };
    if let Some(norm) = normalize(schema, rule, value) {
        keys.push(tagged(TAG_EQUALITY, &norm));
    }
    // objectClass matches superclasses too, so each class is indexed under the OIDs of its whole chain.
    if spec_at.oid == OBJECT_CLASS_OID {
        if let Some(class) = std::str::from_utf8(value)
            .ok()
            .and_then(|name| schema.object_class(name))
        {
            for ancestor in with_superclasses(schema, class) {
                keys.push(tagged(TAG_EQUALITY, ancestor.oid.as_bytes()));
            }
        }
    }
}

/// One key per word code of the value, for the phonetic string rules only.
fn approx_keys(spec_at: &AttributeType, value: &[u8], keys: &mut Vec<Vec<u8>>) {
    let Some(rule) = spec_at.equality.filter(|r| r.has_phonetic_approx()) else {
        return;
    };
    if let Ok(codes) = rule.approx_value_codes(value) {
        keys.extend(codes.iter().map(|c| tagged(TAG_APPROX, c.as_bytes())));
    }
}

/// Longest key payload. LMDB keys are bounded (the store refuses longer ones), and a long value must not make
/// its entry unstorable: payloads are cut here, for entries and assertions alike, so two values that share
/// their first bytes share a key. Plans only need a superset; the filter test tells them apart.
pub const MAX_KEY_PAYLOAD: usize = 255;

fn tagged(tag: u8, payload: &[u8]) -> Vec<u8> {
    let payload = payload.get(..MAX_KEY_PAYLOAD).unwrap_or(payload);
    let mut key = Vec::with_capacity(payload.len() + 1);
    key.push(tag);
    key.extend_from_slice(payload);
    key
}

/// The substring form keys are cut from: the rule's normal form of the part with every space removed,
/// because the rule treats spaces at part boundaries differently from spaces inside a value, and removing
/// them on both sides keeps "P occurs in V" true.
fn key_form(rule: MatchingRule, part: &[u8]) -> Option<Vec<u8>> {
    let mut form = rule.normalize_substring(part).ok()?;
    form.retain(|b| *b != b' ');
    Some(form)
}

fn value_substring_keys(rule: MatchingRule, value: &[u8], keys: &mut Vec<Vec<u8>>) {
    let Some(form) = key_form(rule, value) else {
        return;
    };
    for len in ANCHOR_LENGTHS {
        if let Some(prefix) = form.get(..len) {
            keys.push(tagged(TAG_SUBSTR_INITIAL, prefix));
        }
        if let Some(suffix) = form
            .len()
            .checked_sub(len)
            .and_then(|start| form.get(start..))
        {
            keys.push(tagged(TAG_SUBSTR_FINAL, suffix));
        }
    }
    for gram in form.windows(GRAM) {
        keys.push(tagged(TAG_SUBSTR_ANY, gram));
    }
}

/// Keys every value matching the substring assertion must have; empty when the parts are too short.
fn assertion_substring_keys(
    rule: MatchingRule,
    initial: Option<&[u8]>,
    any: &[Vec<u8>],
    final_: Option<&[u8]>,
) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    let grams = |form: &[u8], keys: &mut Vec<Vec<u8>>| {
        for gram in form.windows(GRAM) {
            keys.push(tagged(TAG_SUBSTR_ANY, gram));
        }
    };
    if let Some(form) = initial.and_then(|p| key_form(rule, p)) {
        let anchor = form.len().min(GRAM);
        if anchor >= ANCHOR_LENGTHS[0] {
            if let Some(prefix) = form.get(..anchor) {
                keys.push(tagged(TAG_SUBSTR_INITIAL, prefix));
            }
        }
        grams(&form, &mut keys);
    }
    for part in any {
        if let Some(form) = key_form(rule, part) {
            grams(&form, &mut keys);
        }
    }
    if let Some(form) = final_.and_then(|p| key_form(rule, p)) {
        let anchor = form.len().min(GRAM);
        if anchor >= ANCHOR_LENGTHS[0] {
            if let Some(suffix) = form.get(form.len() - anchor..) {
                keys.push(tagged(TAG_SUBSTR_FINAL, suffix));
            }
        }
        grams(&form, &mut keys);
    }
    keys.sort();
    keys.dedup();
    keys
}

/// A plan whose result is a superset of the entries matching `filter`. NOT, extensible components,
/// and ordering or approx components without their index use the presence index of their type when
/// there is one, else give All.
pub fn plan(schema: &Schema, specs: &[IndexSpec], filter: &Filter) -> Plan {
    let prepared = PreparedFilter::new(schema, filter);
    plan_node(schema, specs, prepared.root())
}

/// [`plan`] of a filter already prepared (a search prepares its filter once, for the plan and the test).
pub fn plan_prepared(schema: &Schema, specs: &[IndexSpec], prepared: &PreparedFilter<'_>) -> Plan {
    plan_node(schema, specs, prepared.root())
}

fn plan_node(schema: &Schema, specs: &[IndexSpec], node: &Node<'_>) -> Plan {
    match node {
        Node::And(parts) => and(parts.iter().map(|p| plan_node(schema, specs, p)).collect()),
        Node::Or(parts) => or(parts.iter().map(|p| plan_node(schema, specs, p)).collect()),
        Node::Not(_) => Plan::All,
        // Undefined is never TRUE, so no entry can be selected by this component.
        Node::Undefined => Plan::Empty,
        Node::Present { target } => presence(schema, specs, target),
        Node::Equality { target, rule, norm } => {
            match find_spec(schema, specs, target.at, |s, at| {
                s.eq && at.equality == Some(*rule)
            }) {
                Some(spec) => keys(spec, vec![tagged(TAG_EQUALITY, norm)]),
                None => presence(schema, specs, target),
            }
        }
        Node::ObjectClassEquality {
            target,
            class,
            rule,
            norm,
        } => {
            let spec = find_spec(schema, specs, target.at, |s, at| {
                s.eq && at.equality == Some(*rule) && at.oid == OBJECT_CLASS_OID
            });
            match (spec, class) {
                (Some(spec), Some(class)) => {
                    keys(spec, vec![tagged(TAG_EQUALITY, class.oid.as_bytes())])
                }
                (Some(spec), None) => keys(spec, vec![tagged(TAG_EQUALITY, norm)]),
                (None, _) => presence(schema, specs, target),
            }
        }
        Node::Substrings {
            target,
            rule,
            initial,
            any,
            final_,
        } => {
            let spec = find_spec(schema, specs, target.at, |s, at| {
                s.sub && at.substr == Some(*rule)
            });
            let found = spec.map(|spec| {
                let k = assertion_substring_keys(*rule, initial.as_deref(), any, final_.as_deref());
                (spec, k)
            });
            let grams = match found {
                Some((spec, k)) if !k.is_empty() => keys(spec, k),
                _ => presence(schema, specs, target),
            };
            let prefix = initial
                .as_deref()
                .and_then(|initial| equality_prefix(schema, specs, target, *rule, initial));
            match prefix {
                // The range comes first: it is usually the narrowest, and the grams are then read only
                // if they are few (see the budget in the server's candidates.rs).
                Some(range) => and(vec![range, grams]),
                None => grams,
            }
        }
        Node::Ordering {
            target,
            rule,
            norm,
            greater,
        } => match find_spec(schema, specs, target.at, |s, at| {
            s.ord && at.ordering == Some(*rule)
        }) {
            Some(spec) => {
                let bound = tagged(TAG_ORDERING, &rule.ordering_key(norm));
                let (from, to) = if *greater {
                    (
                        Bound::Included(bound),
                        Bound::Excluded(vec![TAG_ORDERING + 1]),
                    )
                } else {
                    (Bound::Included(vec![TAG_ORDERING]), Bound::Included(bound))
                };
                Plan::Range {
                    attr: spec.attr.clone(),
                    from,
                    to,
                }
            }
            None => presence(schema, specs, target),
        },
        Node::Approx {
            target,
            rule,
            codes,
        } => {
            if codes.is_empty() {
                // An assertion with no words left matches no value.
                return Plan::Empty;
            }
            match find_spec(schema, specs, target.at, |s, at| {
                s.approx && at.equality == Some(*rule)
            }) {
                Some(spec) => {
                    let mut k: Vec<Vec<u8>> = codes
                        .iter()
                        .map(|c| tagged(TAG_APPROX, c.as_bytes()))
                        .collect();
                    k.sort();
                    k.dedup();
                    keys(spec, k)
                }
                None => presence(schema, specs, target),
            }
        }
        Node::Extensible {
            target: Some(target),
            dn_attributes: false,
            ..
        } => presence(schema, specs, target),
        Node::Extensible { .. } => Plan::All,
    }
}

/// An initial substring as a range of equality keys. For the directory and IA5 string rules the equality
/// form of every value matching `initial*` starts with the form of `initial`, so the equality index finds
/// them by prefix, far more narrowly than short substring keys do. Parts with spaces at their ends are
/// left to the substring keys (equality and substrings treat such spaces differently), and so are parts too
/// long for a key.
fn equality_prefix(
    schema: &Schema,
    specs: &[IndexSpec],
    target: &Target<'_>,
    rule: MatchingRule,
    initial: &[u8],
) -> Option<Plan> {
    use MatchingRule::*;
    let equality = match rule {
        CaseIgnoreSubstringsMatch => CaseIgnoreMatch,
        CaseExactSubstringsMatch => CaseExactMatch,
        CaseIgnoreIA5SubstringsMatch => CaseIgnoreIA5Match,
        _ => return None,
    };
    let spec = find_spec(schema, specs, target.at, |s, at| {
        s.eq && at.equality == Some(equality)
    })?;
    let form = rule.normalize_substring(initial).ok()?;
    if form.is_empty()
        || form.len() >= MAX_KEY_PAYLOAD
        || form.first() == Some(&b' ')
        || form.last() == Some(&b' ')
    {
        return None;
    }
    let from = tagged(TAG_EQUALITY, &form);
    // The first key after every key that starts with `from`: its last byte below 0xff, raised by one.
    let mut to = from.clone();
    while to.last() == Some(&0xff) {
        to.pop();
    }
    *to.last_mut()? += 1;
    Some(Plan::Range {
        attr: spec.attr.clone(),
        from: Bound::Included(from),
        to: Bound::Excluded(to),
    })
}

fn keys(spec: &IndexSpec, keys: Vec<Vec<u8>>) -> Plan {
    Plan::Keys {
        attr: spec.attr.clone(),
        keys,
    }
}

fn presence(schema: &Schema, specs: &[IndexSpec], target: &Target<'_>) -> Plan {
    match find_spec(schema, specs, target.at, |s, _| s.pres) {
        Some(spec) => keys(spec, vec![vec![TAG_PRESENT]]),
        None => Plan::All,
    }
}

/// An index usable for a component on `filter_at`: on that type or a supertype (whose index also holds the
/// subtype's values), with the same matching rule as the component uses. The exact type is preferred.
fn find_spec<'a>(
    schema: &Schema,
    specs: &'a [IndexSpec],
    filter_at: &AttributeType,
    usable: impl Fn(&IndexSpec, &AttributeType) -> bool,
) -> Option<&'a IndexSpec> {
    // A type without a supertype is served only by an index on itself, which a spec names exactly when
    // the type has that name (names are unique in a schema): no schema lookup per spec.
    if filter_at.sup.is_none() {
        return specs
            .iter()
            .find(|spec| filter_at.is_named(&spec.attr) && usable(spec, filter_at));
    }
    let mut fallback = None;
    for spec in specs {
        let Some(spec_at) = schema.attribute_type(&spec.attr) else {
            continue;
        };
        if !usable(spec, spec_at) || !schema.is_subtype_of(filter_at, spec_at) {
            continue;
        }
        if spec_at.oid == filter_at.oid {
            return Some(spec);
        }
        fallback.get_or_insert(spec);
    }
    fallback
}

fn and(parts: Vec<Plan>) -> Plan {
    let mut kept = Vec::new();
    for part in parts {
        match part {
            Plan::Empty => return Plan::Empty,
            Plan::All => {}
            Plan::And(inner) => kept.extend(inner),
            other => kept.push(other),
        }
    }
    match kept.len() {
        0 => Plan::All,
        1 => kept.pop().unwrap_or(Plan::All),
        _ => Plan::And(kept),
    }
}

fn or(parts: Vec<Plan>) -> Plan {
    let mut kept = Vec::new();
    for part in parts {
        match part {
            Plan::All => return Plan::All,
            Plan::Empty => {}
            Plan::Or(inner) => kept.extend(inner),
            other => kept.push(other),
        }
    }
    match kept.len() {
        0 => Plan::Empty,
        1 => kept.pop().unwrap_or(Plan::Empty),
        _ => Plan::Or(kept),
    }
}

#[cfg(test)]
mod tests;
