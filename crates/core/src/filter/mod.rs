//! RFC 4511 §4.5.1.7 filter evaluation against an entry, three-valued (TRUE, FALSE, Undefined).
//!
//! A filter is first resolved against the schema ([`PreparedFilter`]): attribute descriptions are looked up
//! and assertion values normalized once, so testing many candidates of one search costs only the per-entry
//! work. Anything that cannot be resolved (unknown type, missing matching rule, invalid assertion value)
//! becomes an Undefined leaf, which is how slapd treats such filter components: never an error.

mod eval;
mod prepare;

use std::borrow::Cow;

use canopy_proto::{Dn, Filter};
use canopy_schema::{AttributeType, MatchingRule, ObjectClass, Schema};

use crate::classes::OBJECT_CLASS_OID;
use crate::desc::AttrDesc;
use crate::entry::{Attribute, Entry};
use crate::wire::StoredView;

pub use prepare::rule_applies;

/// RFC 4511 §4.5.1.7 result of a filter test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ternary {
    True,
    False,
    Undefined,
}

impl std::ops::Not for Ternary {
    type Output = Ternary;

    /// RFC 4511: NOT maps TRUE and FALSE to each other and leaves Undefined alone.
    fn not(self) -> Ternary {
        match self {
            Ternary::True => Ternary::False,
            Ternary::False => Ternary::True,
            Ternary::Undefined => Ternary::Undefined,
        }
    }
}

impl Ternary {
    pub fn is_true(self) -> bool {
        self == Ternary::True
    }
}

/// What a filter is tested against: attributes with their values (descriptions in the stored, canonical
/// form of [`Attribute::desc`]), and the DN for `dnAttributes` matches. An [`Entry`] in memory is one; a
/// stored entry read in place ([`StoredView`]) is another, so that a search tests its
/// candidates without decoding or copying them.
pub trait Subject {
    /// Every attribute: description and values.
    fn attributes(&self) -> impl Iterator<Item = (&str, Values<'_>)>;
    /// The DN, parsed; None when it cannot be.
    fn dn(&self) -> Option<Cow<'_, Dn>>;
}

impl Subject for Entry {
    fn attributes(&self) -> impl Iterator<Item = (&str, Values<'_>)> {
        self.attrs
            .iter()
            .map(|a| (a.desc.as_str(), Values::Memory(a.values.iter())))
    }
    fn dn(&self) -> Option<Cow<'_, Dn>> {
        Some(Cow::Borrowed(&self.dn))
    }
}

impl Subject for StoredView<'_> {
    fn attributes(&self) -> impl Iterator<Item = (&str, Values<'_>)> {
        self.attribute_sets()
            .map(|(desc, set)| (desc, Values::Stored(set)))
    }
    fn dn(&self) -> Option<Cow<'_, Dn>> {
        Dn::parse(self.stored().dn).ok().map(Cow::Owned)
    }
}

/// The values of one attribute as a filter reads them: in memory, or still inside their stored BER SET
/// (read one by one, only when a filter component looks at the attribute).
#[derive(Debug, Clone)]
pub enum Values<'a> {
    Memory(std::slice::Iter<'a, Vec<u8>>),
    Stored(canopy_ber::Reader<'a>),
}

impl Values<'_> {
    pub fn is_empty(&self) -> bool {
        match self {
            Values::Memory(values) => values.len() == 0,
            Values::Stored(reader) => reader.is_empty(),
        }
    }
}

impl<'a> Iterator for Values<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            Values::Memory(values) => values.next().map(Vec::as_slice),
            // A value that does not read ends the attribute (the stored form is written by us).
            Values::Stored(reader) if !reader.is_empty() => {
                reader.read_octet_string(canopy_ber::tag::OCTET_STRING).ok()
            }
            Values::Stored(_) => None,
        }
    }
}

/// Evaluates `filter` against `entry` plus the computed attributes in `extra` (entryDN, hasSubordinates,
/// subschemaSubentry...). Prefer [`PreparedFilter`] when testing many entries against one filter.
pub fn evaluate(schema: &Schema, entry: &Entry, extra: &[Attribute], filter: &Filter) -> Ternary {
    PreparedFilter::new(schema, filter).evaluate(entry, extra)
}

/// A filter resolved against one schema, ready to test entries.
#[derive(Debug, Clone)]
pub struct PreparedFilter<'s> {
    schema: &'s Schema,
    root: Node<'s>,
}

impl<'s> PreparedFilter<'s> {
    pub fn new(schema: &'s Schema, filter: &Filter) -> PreparedFilter<'s> {
        PreparedFilter {
            schema,
            root: prepare::prepare(schema, filter),
        }
    }

    pub fn evaluate(&self, entry: &impl Subject, extra: &[Attribute]) -> Ternary {
        eval::evaluate_node(self.schema, &self.root, entry, extra)
    }

    /// Whether every entry matches whatever it holds: `(objectClass=*)`, the usual "all entries" filter,
    /// since every entry has an object class. A search can then send entries without testing them.
    pub fn matches_every_entry(&self) -> bool {
        matches!(&self.root, Node::Present { target }
            if target.at.oid == OBJECT_CLASS_OID && target.desc.options.is_empty())
    }

    pub(crate) fn root(&self) -> &Node<'s> {
        &self.root
    }
}

/// The attribute a filter component is about: its type and the options the stored attribute must carry.
#[derive(Debug, Clone)]
pub(crate) struct Target<'s> {
    pub at: &'s AttributeType,
    pub desc: AttrDesc,
}

/// One resolved filter component.
#[derive(Debug, Clone)]
pub(crate) enum Node<'s> {
    And(Vec<Node<'s>>),
    Or(Vec<Node<'s>>),
    Not(Box<Node<'s>>),
    Undefined,
    Equality {
        target: Target<'s>,
        rule: MatchingRule,
        norm: Vec<u8>,
    },
    /// Equality on objectClass: also true when a stored class is a subclass of the asserted one, which is
    /// what slapd's objectSubClassMatch does (an inetOrgPerson entry matches `(objectClass=person)`).
    ObjectClassEquality {
        target: Target<'s>,
        class: Option<&'s ObjectClass>,
        rule: MatchingRule,
        norm: Vec<u8>,
    },
    Ordering {
        target: Target<'s>,
        rule: MatchingRule,
        norm: Vec<u8>,
        greater: bool,
    },
    Substrings {
        target: Target<'s>,
        rule: MatchingRule,
        initial: Option<Vec<u8>>,
        any: Vec<Vec<u8>>,
        final_: Option<Vec<u8>>,
    },
    Present {
        target: Target<'s>,
    },
    /// Phonetic approximate match (the string rules); other rules' `~=` is prepared as equality.
    Approx {
        target: Target<'s>,
        rule: MatchingRule,
        codes: Vec<String>,
    },
    Extensible {
        target: Option<Target<'s>>,
        rule: MatchingRule,
        norm: Vec<u8>,
        dn_attributes: bool,
    },
}

/// Normal form of `value` under `rule`, with what only the schema knows (DN and OID rules). Kept in one
/// place so that filters, modifications and index keys always agree on it.
pub(crate) fn normalize(schema: &Schema, rule: MatchingRule, value: &[u8]) -> Option<Vec<u8>> {
    schema.normalize_value(rule, value).ok()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;
