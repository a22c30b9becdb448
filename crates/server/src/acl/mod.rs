//! Configurable access control: OpenLDAP's `access to <what> by <who> <access>` rules, compiled once and
//! evaluated as slapd does (first matching `to`, then the first matching `by`; no match is `none`).
//!
//! `parse.rs` reads the rule text, `view.rs` caches decisions for the entries of one search.

mod cleared;
mod expand;
mod groups;
pub mod ops;
mod parse;
mod sets;
mod view;

use std::cell::OnceCell;
use std::net::IpAddr;

use canopy_core::filter::{evaluate, Ternary};
use canopy_core::Entry;
use canopy_schema::{NormDn, Schema};

use crate::access::Who;
use crate::session::Peer;

pub use canopy_core::sets::{SetContext, SetFailure};
pub use cleared::{Cleared, Seen};
pub use expand::Expanding;
pub use groups::GroupReader;
pub use parse::{
    parse_access, AttrItem, By, Control, DnPattern, Modifier, Rule, Ssf, ValPattern, What, WhoSpec,
};
pub use sets::SetClause;
pub use view::{EntryView, MemoKey, SearchAccess, Snapshot, ViewMemo};

/// A set of privileges (slapd's `m w a z r s c x d` letters).
pub type Mask = u16;

/// The privilege bits and the cumulative levels.
pub mod privileges {
    use super::Mask;

    pub const DISCLOSE: Mask = 1;
    pub const AUTH: Mask = 1 << 1;
    pub const COMPARE: Mask = 1 << 2;
    pub const SEARCH: Mask = 1 << 3;
    pub const READ: Mask = 1 << 4;
    pub const ADD: Mask = 1 << 5;
    pub const DELETE: Mask = 1 << 6;
    pub const WRITE: Mask = ADD | DELETE;
    pub const MANAGE: Mask = 1 << 7;

    /// A level grants its own privileges and those of every lower level (`read` includes `search`...).
    pub fn cumulative(level: Mask) -> Mask {
        match level {
            0 => 0,
            MANAGE => MANAGE | cumulative(WRITE),
            WRITE | ADD | DELETE => level | cumulative(READ),
            l => l | (l - 1),
        }
    }

    /// The level names of a mask, the highest first, or its letters when it is no plain level.
    pub fn describe(mask: Mask) -> String {
        let levels = [
            ("manage", MANAGE),
            ("write", WRITE),
            ("add", ADD),
            ("delete", DELETE),
            ("read", READ),
            ("search", SEARCH),
            ("compare", COMPARE),
            ("auth", AUTH),
            ("disclose", DISCLOSE),
        ];
        if mask == 0 {
            return "none".into();
        }
        for (name, level) in levels {
            if mask == cumulative(level) {
                return name.into();
            }
        }
        let letters = [
            ('m', MANAGE),
            ('a', ADD),
            ('z', DELETE),
            ('r', READ),
            ('s', SEARCH),
            ('c', COMPARE),
            ('x', AUTH),
            ('d', DISCLOSE),
        ];
        let set: String = letters
            .iter()
            .filter(|(_, bit)| mask & bit != 0)
            .map(|(c, _)| *c)
            .collect();
        format!("={set}")
    }
}

/// Debian's slapd default: passwords used for binds and changed by their owners, all else readable.
pub const DEFAULT_RULES: [&str; 2] = [
    "to attrs=userPassword by self write by anonymous auth by * none",
    "to * by * read",
];

/// The compiled access list of a database.
#[derive(Debug)]
pub struct Acl {
    rules: Vec<Rule>,
    /// Whether some rule needs the entry's attributes (a filter in `<what>`, `dnattr=` in `<who>`).
    needs_entry: bool,
    /// The attribute types (canonical names) of the `dnattr=` clauses, in [`Relation::dnattrs`] order.
    dnattrs: Vec<String>,
    /// The `<who>` specifiers with `$N` references, by rule, `by` clause and place in the clause, in
    /// [`Relation::expanded`] order.
    expanding: Vec<(usize, usize, usize)>,
    /// The `set=` clauses that depend on the entry (`this`, `$N` references), by rule, `by` clause and
    /// place in the clause, in [`Relation::sets`] order.
    sets: Vec<(usize, usize, usize)>,
    /// The attribute types (canonical names) some `val=` rule is about.
    value_attrs: Vec<String>,
    /// The ldapi socket paths this server listens on, for `peername.path`.
    ldapi_paths: Vec<String>,
    /// Where each rule's `by` clauses start in a checker's one list of `<who>` answers, and their count.
    by_starts: Vec<usize>,
    by_count: usize,
}

/// What an access check is about: an entry (and, when a rule has a filter, its attributes).
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub ndn: &'a NormDn,
    pub entry: Option<&'a Entry>,
}

/// How the requester stands to one entry: the `<who>` answers that depend on the entry (`self`,
/// `dnattr=`, patterns with `$N` references). Entries of a search that agree on it and on the
/// matching `<what>`s share decisions; it is never kept in a checker's per-identity answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relation {
    /// The requester is the entry.
    pub is_self: bool,
    /// Bit `k`: the requester's DN is a value of the access list's `k`-th `dnattr` attribute type.
    pub dnattrs: u32,
    /// Bit `k`: the requester matches the access list's `k`-th `$N` pattern as expanded for the entry.
    pub expanded: u32,
    /// Bit `k`: the access list's `k`-th entry-dependent `set=` clause holds for the entry.
    pub sets: u32,
    /// `is_self` and `dnattrs` for the connection's own DN, which the `real...` forms test (the same
    /// as those outside proxied authorization).
    pub real_is_self: bool,
    pub real_dnattrs: u32,
}

/// At most this many attribute types in `dnattr=` clauses (one bit each in [`Relation::dnattrs`]), and
/// this many `<who>` patterns with `$N` references (one bit each in [`Relation::expanded`]).
const MAX_DNATTRS: usize = 32;
const MAX_EXPANDING: usize = 32;
/// At most this many `set=` clauses that depend on the entry (one bit each in [`Relation::sets`]).
const MAX_SETS: usize = 32;

/// The attribute an access check is about.
#[derive(Debug, Clone, Copy)]
pub enum AttrRef<'a> {
    /// The pseudo-attribute `entry`: the entry as a whole.
    Entry,
    /// The pseudo-attribute `children`: adding or deleting below the entry.
    Children,
    /// An attribute by description, as a whole (rules with `val=` do not apply).
    Attr(&'a str),
    /// One value of an attribute.
    Value(&'a str, &'a [u8]),
    /// An attribute no `attrs=` list names (used to decide many attributes at once).
    Unlisted,
}

/// A database as access control reads it: the backend's lookups and the rules that guard it.
pub trait Guarded: std::ops::Deref<Target = canopy_directory::Directory> {
    fn acl(&self) -> &Acl;
}

/// Reads group membership from the directory for `group=` clauses.
pub trait Groups {
    /// Whether the entry `group` has object class `class` and `member` among its `attr` values.
    fn is_member(&self, group: &NormDn, class: &str, attr: &str, member: &NormDn) -> bool;

    /// The entry named `ndn`, read without access control, for `set=` clauses; None when there is
    /// none (or nothing to read from).
    fn entry(&self, _ndn: &NormDn) -> Option<Entry> {
        None
    }
}

/// For identities that need no group lookups (tests, no group rules).
pub struct NoGroups;

impl Groups for NoGroups {
    fn is_member(&self, _: &NormDn, _: &str, _: &str, _: &NormDn) -> bool {
        false
    }
}

/// The outcome of one check: the privileges granted and the rule and clause that decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub mask: Mask,
    /// The rule (0-based) and `by` clause (0-based) that decided; None when no rule matched.
    pub rule: Option<usize>,
    pub by: Option<usize>,
    /// Every (rule, by) that applied, in order (several with continue or break); filled by
    /// [`Checker::explain`] only.
    pub steps: Vec<(usize, usize)>,
    /// Granted because the requester is the root DN.
    pub root: bool,
}

impl Acl {
    /// Compiles the configured rules; an empty list means Debian's default.
    pub fn compile(
        schema: &Schema,
        texts: &[String],
        ldapi_paths: Vec<String>,
    ) -> Result<Acl, String> {
        let mut rules = Vec::new();
        if texts.is_empty() {
            for (index, text) in DEFAULT_RULES.iter().enumerate() {
                rules.push(parse::parse_rule(schema, index, text)?);
            }
        } else {
            for (index, text) in texts.iter().enumerate() {
                rules.push(parse::parse_rule(schema, index, text)?);
            }
        }
        let mut dnattrs: Vec<String> = Vec::new();
        for rule in &rules {
            for who in rule.bys.iter().flat_map(|by| &by.who) {
                if let WhoSpec::DnAttr(attr) = who.unreal() {
                    if !dnattrs.contains(attr) {
                        dnattrs.push(attr.clone());
                    }
                }
            }
        }
        let mut expanding = Vec::new();
        let mut sets = Vec::new();
        let mut reads_this = false;
        for (r, rule) in rules.iter().enumerate() {
            for (b, by) in rule.bys.iter().enumerate() {
                for (w, who) in by.who.iter().enumerate() {
                    match who.unreal() {
                        WhoSpec::DnExpand(_) => expanding.push((r, b, w)),
                        WhoSpec::Set(set) if set.per_entry => {
                            reads_this |= set.reads_this;
                            sets.push((r, b, w));
                        }
                        _ => {}
                    }
                }
            }
        }
        if sets.len() > MAX_SETS {
            return Err(format!(
                "access rules: more than {MAX_SETS} set= clauses that depend on the entry"
            ));
        }
        if expanding.len() > MAX_EXPANDING {
            return Err(format!(
                "access rules: more than {MAX_EXPANDING} <who> patterns with $N references"
            ));
        }
        if dnattrs.len() > MAX_DNATTRS {
            return Err(format!(
                "access rules: more than {MAX_DNATTRS} attribute types in dnattr= clauses"
            ));
        }
        let needs_entry =
            !dnattrs.is_empty() || reads_this || rules.iter().any(|r| r.what.filter.is_some());
        let value_attrs = rules
            .iter()
            .filter(|r| r.what.val.is_some())
            .filter_map(|r| match r.what.attrs.as_deref() {
                Some([AttrItem::Type(name)]) => Some(name.clone()),
                _ => None,
            })
            .collect();
        let mut acl = Acl::with_rules(rules, needs_entry, value_attrs, ldapi_paths);
        acl.dnattrs = dnattrs;
        acl.expanding = expanding;
        acl.sets = sets;
        Ok(acl)
    }

    fn with_rules(
        rules: Vec<Rule>,
        needs_entry: bool,
        value_attrs: Vec<String>,
        ldapi_paths: Vec<String>,
    ) -> Acl {
        let mut by_starts = Vec::with_capacity(rules.len());
        let mut by_count = 0;
        for rule in &rules {
            by_starts.push(by_count);
            by_count += rule.bys.len();
        }
        Acl {
            rules,
            needs_entry,
            dnattrs: Vec::new(),
            expanding: Vec::new(),
            sets: Vec::new(),
            value_attrs,
            ldapi_paths,
            by_starts,
            by_count,
        }
    }

    /// Debian's default list.
    pub fn default_policy(schema: &Schema) -> Acl {
        match Acl::compile(schema, &[], Vec::new()) {
            Ok(acl) => acl,
            // The built-in rules name only built-in schema elements.
            Err(_) => Acl::with_rules(Vec::new(), false, Vec::new(), Vec::new()),
        }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether some `<who>` pattern has `$N` references or a `set=` clause names `this`: decisions
    /// then depend on the entry's DN even under `to *`.
    pub fn has_expansions(&self) -> bool {
        !self.expanding.is_empty() || !self.sets.is_empty()
    }

    /// The attribute types of the `dnattr=` clauses, in [`Relation::dnattrs`] bit order.
    pub fn dnattrs(&self) -> &[String] {
        &self.dnattrs
    }

    /// Whether checks need the entry's attributes, not only its DN.
    pub fn needs_entry(&self) -> bool {
        self.needs_entry
    }

    /// Whether some rule is about single values (`val=`).
    pub fn has_value_rules(&self) -> bool {
        !self.value_attrs.is_empty()
    }

    /// Whether values of this attribute (by description) are subject to `val=` rules.
    pub fn value_ruled(&self, schema: &Schema, desc: &str) -> bool {
        let name = desc.split(';').next().unwrap_or(desc);
        let Some(have) = schema.attribute_type(name) else {
            return false;
        };
        self.value_attrs.iter().any(|want| {
            schema
                .attribute_type(want)
                .is_some_and(|want| schema.is_subtype_of(have, want))
        })
    }

    /// Whether a decision may read the directory (a `group=` or `set=` clause in some `<who>`): its
    /// answer can then change between two searches of the same requester.
    pub fn reads_directory(&self) -> bool {
        self.rules.iter().any(|rule| {
            rule.bys.iter().any(|by| {
                by.who
                    .iter()
                    .any(|w| matches!(w.unreal(), WhoSpec::Group { .. } | WhoSpec::Set(_)))
            })
        })
    }

    /// A checker for one identity.
    pub fn checker<'a>(
        &'a self,
        schema: &'a Schema,
        who: &'a Who,
        groups: &'a dyn Groups,
    ) -> Checker<'a> {
        // One list for every rule's clauses (one allocation per checker, not one per rule).
        let static_who = (0..self.by_count).map(|_| OnceCell::new()).collect();
        Checker {
            acl: self,
            schema,
            who,
            groups,
            static_who,
        }
    }
}

/// Evaluates the access list for one identity; `who` parts not depending on the entry are computed once.
pub struct Checker<'a> {
    acl: &'a Acl,
    schema: &'a Schema,
    who: &'a Who,
    groups: &'a dyn Groups,
    /// The answer of each rule's `by` clause whose `<who>` does not depend on the entry, once asked
    /// (rule `r`'s clauses from `Acl::by_starts[r]`).
    static_who: Vec<OnceCell<bool>>,
}

impl<'a> Checker<'a> {
    pub fn who(&self) -> &'a Who {
        self.who
    }

    pub fn schema(&self) -> &'a Schema {
        self.schema
    }

    pub fn acl(&self) -> &'a Acl {
        self.acl
    }

    /// Whether every privilege in `need` is granted; the root DN always is.
    pub fn allows(&self, target: Target<'_>, attr: AttrRef<'_>, need: Mask) -> bool {
        self.who.root || self.decide(target, attr).mask & need == need
    }

    /// The full decision for `attr` of `target` (without [`Decision::steps`]).
    pub fn decide(&self, target: Target<'_>, attr: AttrRef<'_>) -> Decision {
        self.decide_target(target, attr, false)
    }

    /// [`Checker::decide`] with every (rule, by) that applied listed in [`Decision::steps`], for an
    /// explanation (`canopy acl-check`).
    pub fn explain(&self, target: Target<'_>, attr: AttrRef<'_>) -> Decision {
        self.decide_target(target, attr, true)
    }

    fn decide_target(&self, target: Target<'_>, attr: AttrRef<'_>, trace: bool) -> Decision {
        if self.who.root {
            return Decision {
                mask: privileges::cumulative(privileges::MANAGE),
                root: true,
                ..Decision::default()
            };
        }
        let relation = self.relation(target);
        self.decide_traced(
            |i| self.what_entry_matches(i, target),
            relation,
            attr,
            trace,
        )
    }

    /// How the requester stands to the target: whether it is the entry, which `dnattr` attribute
    /// types of the entry hold its DN (none without the entry's attributes), and which `$N` patterns it
    /// matches once filled in from the entry's DN.
    pub fn relation(&self, target: Target<'_>) -> Relation {
        let me = self.who.ndn.as_ref();
        let real = self.who.real_ndn();
        let dnattrs = self.dnattrs_holding(target, me);
        // Outside proxied authorization both identities are one: no second look at the entry.
        let real_dnattrs = match self.who.real {
            Some(_) => self.dnattrs_holding(target, real),
            None => dnattrs,
        };
        let mut expanded = 0;
        for (bit, (r, b, w)) in self.acl.expanding.iter().enumerate() {
            // A `realdn` pattern is filled in for the connection's own DN.
            let is_real = matches!(self.who_spec(*r, *b, *w), Some(WhoSpec::Real(_)));
            let identity = if is_real { real } else { me };
            if identity.is_some_and(|dn| self.expansion_matches(*r, *b, *w, target.ndn, dn)) {
                expanded |= 1 << bit;
            }
        }
        let mut sets = 0;
        for (bit, (r, b, w)) in self.acl.sets.iter().enumerate() {
            // Only for rules that apply to the entry: a set may read many entries.
            if !self.what_entry_matches(*r, target) {
                continue;
            }
            let spec = self
                .acl
                .rules
                .get(*r)
                .and_then(|rule| rule.bys.get(*b)?.who.get(*w));
            if let Some(WhoSpec::Set(set)) = spec.map(WhoSpec::unreal) {
                if self.set_holds(*r, set, target) {
                    sets |= 1 << bit;
                }
            }
        }
        Relation {
            is_self: me == Some(target.ndn),
            dnattrs,
            expanded,
            sets,
            real_is_self: real == Some(target.ndn),
            real_dnattrs,
        }
    }

    /// The bits of the access list's `dnattr` attribute types whose values in the target entry hold
    /// `dn` (none without the entry's attributes, or for no DN).
    fn dnattrs_holding(&self, target: Target<'_>, dn: Option<&NormDn>) -> u32 {
        let mut bits = 0;
        if let (Some(dn), Some(entry)) = (dn, target.entry) {
            for (bit, attr) in self.acl.dnattrs.iter().enumerate() {
                if holds_dn(self.schema, entry, attr, dn) {
                    bits |= 1 << bit;
                }
            }
        }
        bits
    }

    /// The `w`-th `<who>` specifier of rule `r`'s `b`-th `by` clause.
    fn who_spec(&self, r: usize, b: usize, w: usize) -> Option<&'a WhoSpec> {
        self.acl.rules.get(r)?.bys.get(b)?.who.get(w)
    }

    /// Evaluates a `set=` clause of rule `rule` for the target: the result set, or why the
    /// evaluation gave up (the clause then does not match). `$N` references are filled in from the
    /// rule's `<what>` DN match; None when it does not match the entry.
    pub fn evaluate_set(
        &self,
        rule: usize,
        set: &SetClause,
        target: Target<'_>,
    ) -> Option<Result<Vec<Vec<u8>>, SetFailure>> {
        let expanded = match set.expand {
            true => {
                let what = &self.acl.rules.get(rule)?.what.dn;
                let subs = expand::submatches(what, target.ndn)?;
                Some(expand::substitute(&set.text, &subs)?)
            }
            false => None,
        };
        let ctx = SetContext {
            schema: self.schema,
            user: self.who.ndn.as_ref(),
            this: target.ndn,
            this_entry: target.entry,
            reader: &sets::ViaGroups(self.groups),
        };
        Some(set.evaluate(&ctx, expanded.as_deref()))
    }

    fn set_holds(&self, rule: usize, set: &SetClause, target: Target<'_>) -> bool {
        match self.evaluate_set(rule, set, target) {
            Some(Ok(result)) => !result.is_empty(),
            Some(Err(SetFailure::Anonymous)) => false,
            Some(Err(failure)) => {
                tracing::warn!(set = %set.text, %failure, "access rule: a set clause gave up and does not match");
                false
            }
            None => false,
        }
    }

    fn expansion_matches(&self, r: usize, b: usize, w: usize, ndn: &NormDn, me: &NormDn) -> bool {
        let Some(rule) = self.acl.rules.get(r) else {
            return false;
        };
        let spec = rule.bys.get(b).and_then(|by| by.who.get(w));
        match spec.map(WhoSpec::unreal) {
            Some(WhoSpec::DnExpand(expanding)) => {
                expanding.matches(self.schema, &rule.what.dn, ndn, me)
            }
            _ => false,
        }
    }

    /// The text a `<who>` pattern with `$N` references becomes for the entry `ndn` under rule `rule`'s
    /// `<what>`; None when the rule's DN pattern does not match it (for `canopy acl-check`).
    pub fn expanded_text(&self, rule: usize, spec: &WhoSpec, ndn: &NormDn) -> Option<String> {
        let what = &self.acl.rules.get(rule)?.what.dn;
        match spec.unreal() {
            WhoSpec::DnExpand(expanding) => expanding.expand(what, ndn),
            _ => None,
        }
    }

    /// Whether rule `index`'s DN and filter parts match the target.
    pub fn what_entry_matches(&self, index: usize, target: Target<'_>) -> bool {
        let Some(rule) = self.acl.rules.get(index) else {
            return false;
        };
        if !dn_matches(&rule.what.dn, target.ndn) {
            return false;
        }
        match (&rule.what.filter, target.entry) {
            (None, _) => true,
            (Some(filter), Some(entry)) => {
                evaluate(self.schema, entry, &[], filter) == Ternary::True
            }
            (Some(_), None) => false,
        }
    }

    /// slapd's acl_get/acl_mask loop, with the entry part of each rule's `<what>` given by `entry_matches`.
    pub fn decide_with(
        &self,
        entry_matches: impl Fn(usize) -> bool,
        relation: Relation,
        attr: AttrRef<'_>,
    ) -> Decision {
        self.decide_traced(entry_matches, relation, attr, false)
    }

    /// `decide_with`, recording the steps only when `trace` is set: the list costs an allocation, and
    /// only an explanation reads it.
    fn decide_traced(
        &self,
        entry_matches: impl Fn(usize) -> bool,
        relation: Relation,
        attr: AttrRef<'_>,
        trace: bool,
    ) -> Decision {
        // authPassword holds the SCRAM secrets of userPassword: the same rules decide who may write it, and
        // no rule lets anyone but the root DN read, search or compare it.
        if let AttrRef::Attr(desc) | AttrRef::Value(desc, _) = attr {
            if crate::access::is_auth_password(self.schema, desc) {
                let mut decision = self.decide_traced(
                    entry_matches,
                    relation,
                    AttrRef::Attr("userPassword"),
                    trace,
                );
                decision.mask &= !(privileges::READ | privileges::SEARCH | privileges::COMPARE);
                return decision;
            }
        }
        let mut decision = Decision::default();
        for (i, rule) in self.acl.rules.iter().enumerate() {
            if !entry_matches(i) || !self.attr_matches(&rule.what, attr) {
                continue;
            }
            let mut broke = false;
            for (j, by) in rule.bys.iter().enumerate() {
                if !self.by_matches(i, j, by, relation) {
                    continue;
                }
                if by.self_only && !self.value_is_requester(attr) {
                    continue;
                }
                decision.mask = match by.modifier {
                    Modifier::Set => by.privileges,
                    Modifier::Add => decision.mask | by.privileges,
                    Modifier::Remove => decision.mask & !by.privileges,
                };
                decision.rule = Some(i);
                decision.by = Some(j);
                if trace {
                    decision.steps.push((i, j));
                }
                match by.control {
                    Control::Stop => return decision,
                    Control::Continue => continue,
                    Control::Break => {
                        broke = true;
                        break;
                    }
                }
            }
            if !broke {
                // slapd's implicit `by * none stop` closes every rule, even after `continue` clauses.
                decision.mask = 0;
                decision.rule = Some(i);
                decision.by = None;
                return decision;
            }
        }
        decision
    }

    fn attr_matches(&self, what: &What, attr: AttrRef<'_>) -> bool {
        let (desc, value) = match attr {
            AttrRef::Attr(desc) => (Some(desc), None),
            AttrRef::Value(desc, value) => (Some(desc), Some(value)),
            _ => (None, None),
        };
        // slapd skips value rules for checks of a whole attribute.
        if let Some(pattern) = &what.val {
            let (Some(desc), Some(value)) = (desc, value) else {
                return false;
            };
            if !self.value_matches(pattern, desc, value) {
                return false;
            }
        }
        let Some(items) = &what.attrs else {
            return true;
        };
        let have = match attr {
            AttrRef::Unlisted => return false,
            AttrRef::Entry | AttrRef::Children => None,
            AttrRef::Attr(desc) | AttrRef::Value(desc, _) => {
                let name = desc.split(';').next().unwrap_or(desc);
                match self.schema.attribute_type(name) {
                    Some(have) => Some(have),
                    None => return false,
                }
            }
        };
        let is_subtype = |have, name: &str| {
            self.schema
                .attribute_type(name)
                .is_some_and(|want| self.schema.is_subtype_of(have, want))
        };
        // In order, as slapd's ad_inlist: a listed type or pseudo-attribute matches, and a `!class`
        // item decides at once, whatever follows it (covered when the class does not allow it).
        for item in items {
            let decided = match (item, have) {
                (AttrItem::Entry, None) => matches!(attr, AttrRef::Entry).then_some(true),
                (AttrItem::Children, None) => matches!(attr, AttrRef::Children).then_some(true),
                (AttrItem::Type(want), Some(have)) => is_subtype(have, want).then_some(true),
                (AttrItem::NotClass { class, allowed }, have) => Some(
                    !is_extensible(class)
                        && !have.is_some_and(|have| allowed.iter().any(|a| is_subtype(have, a))),
                ),
                _ => None,
            };
            if let Some(decided) = decided {
                return decided;
            }
        }
        false
    }

    /// Whether `attr` is one value, and that value the requester's own DN (slapd's `self` access
    /// modifier: a whole attribute, or an anonymous requester, never is).
    fn value_is_requester(&self, attr: AttrRef<'_>) -> bool {
        let (AttrRef::Value(_, value), Some(me)) = (attr, self.who.ndn.as_ref()) else {
            return false;
        };
        canopy_proto::Dn::parse(value)
            .ok()
            .and_then(|dn| self.schema.normalize_dn(&dn).ok())
            .is_some_and(|dn| &dn == me)
    }

    fn value_matches(&self, pattern: &ValPattern, desc: &str, value: &[u8]) -> bool {
        match pattern {
            ValPattern::Exact(want) => {
                let name = desc.split(';').next().unwrap_or(desc);
                parse::normalize_value(self.schema, name, value).is_ok_and(|have| &have == want)
            }
            ValPattern::Regex(regex) => regex.is_match(value),
        }
    }

    fn by_matches(&self, rule: usize, index: usize, by: &By, relation: Relation) -> bool {
        // The parts that depend on the entry; the rest is the same for every entry, and cached.
        for (w, who) in by.who.iter().enumerate() {
            let real = matches!(who, WhoSpec::Real(_));
            let holds = match who.unreal() {
                WhoSpec::DnExpand(_) => self
                    .acl
                    .expanding
                    .iter()
                    .position(|at| *at == (rule, index, w))
                    .is_some_and(|bit| relation.expanded & (1 << bit) != 0),
                WhoSpec::SelfEntry if real => relation.real_is_self,
                WhoSpec::SelfEntry => relation.is_self,
                WhoSpec::Set(set) if set.per_entry => self
                    .acl
                    .sets
                    .iter()
                    .position(|at| *at == (rule, index, w))
                    .is_some_and(|bit| relation.sets & (1 << bit) != 0),
                WhoSpec::DnAttr(attr) => {
                    let bits = if real {
                        relation.real_dnattrs
                    } else {
                        relation.dnattrs
                    };
                    self.acl
                        .dnattrs
                        .iter()
                        .position(|a| a == attr)
                        .is_some_and(|bit| bits & (1 << bit) != 0)
                }
                _ => true,
            };
            if !holds {
                return false;
            }
        }
        let fixed = self
            .acl
            .by_starts
            .get(rule)
            .filter(|_| {
                self.acl
                    .rules
                    .get(rule)
                    .is_some_and(|r| index < r.bys.len())
            })
            .and_then(|start| self.static_who.get(start + index))
            .map(|cell| *cell.get_or_init(|| by.who.iter().all(|w| self.who_matches(w))));
        fixed.unwrap_or_else(|| by.who.iter().all(|w| self.who_matches(w)))
    }

    /// Whether a `<who>` specifier matches the requester; `self` and `dnattr` are decided per entry by
    /// the caller (`dnattr` never matches an anonymous requester).
    fn who_matches(&self, spec: &WhoSpec) -> bool {
        self.who_matches_as(spec, self.who.ndn.as_ref())
    }

    /// [`Checker::who_matches`] with `me` as the requester's DN: the operation's, or for the `real...`
    /// forms the connection's own (they differ under proxied authorization).
    fn who_matches_as(&self, spec: &WhoSpec, me: Option<&NormDn>) -> bool {
        let who = self.who;
        match spec {
            WhoSpec::Anyone | WhoSpec::SelfEntry => true,
            WhoSpec::DnAttr(_) | WhoSpec::DnExpand(_) => me.is_some(),
            WhoSpec::Real(inner) => self.who_matches_as(inner, who.real_ndn()),
            WhoSpec::Anonymous => me.is_none(),
            WhoSpec::Users => me.is_some(),
            WhoSpec::Dn(pattern) => me.is_some_and(|me| dn_matches(pattern, me)),
            WhoSpec::Group { dn, class, attr } => {
                me.is_some_and(|me| self.groups.is_member(dn, class, attr, me))
            }
            WhoSpec::PeerIp { addr, mask } => {
                who.link.ip().is_some_and(|ip| ip_matches(ip, *addr, *mask))
            }
            WhoSpec::PeerPath(path) => {
                matches!(who.link.peer, Some(Peer::Unix { .. }))
                    && self.acl.ldapi_paths.iter().any(|p| p == path)
            }
            WhoSpec::Ssf(kind, min) => who.ssf(*kind) >= *min,
            // Decided per entry by the caller.
            WhoSpec::Set(set) if set.per_entry => true,
            // No `this`: the target does not matter; the root DN stands in for it.
            WhoSpec::Set(set) => {
                let root = NormDn::root();
                let target = Target {
                    ndn: &root,
                    entry: None,
                };
                self.set_holds(0, set, target)
            }
        }
    }
}

impl Who {
    /// The security strength factor slapd would report: TLS 256, ldapi 71, plain TCP 0; a SASL layer's
    /// own (`sasl_ssf`), and the stronger of both for `ssf`.
    pub fn ssf(&self, kind: Ssf) -> u32 {
        let tls = if self.link.tls.is_some() { 256 } else { 0 };
        let local = if matches!(self.link.peer, Some(Peer::Unix { .. })) {
            71
        } else {
            0
        };
        match kind {
            Ssf::Any => tls.max(local).max(self.link.sasl_ssf),
            Ssf::Transport => tls.max(local),
            Ssf::Tls => tls,
            Ssf::Sasl => self.link.sasl_ssf,
        }
    }
}

pub(crate) fn dn_matches(pattern: &DnPattern, ndn: &NormDn) -> bool {
    match pattern {
        DnPattern::Any => true,
        DnPattern::Base(dn) => dn == ndn,
        DnPattern::One(dn) => ndn.parent().is_some_and(|p| &p == dn),
        DnPattern::Subtree(dn) => dn.is_suffix_of(ndn),
        DnPattern::Children(dn) => dn != ndn && dn.is_suffix_of(ndn),
        DnPattern::Level(dn, level) => {
            *level > 0 && ndn.rdns().len() == dn.rdns().len() + level && dn.is_suffix_of(ndn)
        }
        DnPattern::Regex(regex) => regex.is_match(ndn.as_str()),
    }
}

fn is_extensible(class: &str) -> bool {
    class.eq_ignore_ascii_case("extensibleObject")
}

/// Whether `entry` has `me` among the values of `attr` or its subtypes, compared as DNs (a
/// `#'...'B` UID of a name-and-optional-UID value is left out, as uniqueMemberMatch does for an
/// assertion without one).
fn holds_dn(schema: &Schema, entry: &Entry, attr: &str, me: &NormDn) -> bool {
    let Some(want) = schema.attribute_type(attr) else {
        return false;
    };
    let as_dn = |value: &[u8]| {
        canopy_proto::Dn::parse(value)
            .ok()
            .and_then(|dn| schema.normalize_dn(&dn).ok())
    };
    entry.attrs.iter().any(|a| {
        let name = a.desc.split(';').next().unwrap_or(&a.desc);
        let Some(have) = schema
            .attribute_type(name)
            .filter(|have| schema.is_subtype_of(have, want))
        else {
            return false;
        };
        let with_uid = have.syntax == parse::NAME_UID_SYNTAX;
        a.values.iter().any(|value| {
            let value = if with_uid { without_uid(value) } else { value };
            as_dn(value).as_ref() == Some(me)
        })
    })
}

/// A name-and-optional-UID value without its `#'0101'B` UID.
fn without_uid(value: &[u8]) -> &[u8] {
    let Some(at) = value.iter().rposition(|b| *b == b'#') else {
        return value;
    };
    let uid = &value[at + 1..];
    let bits = uid
        .strip_prefix(b"'")
        .and_then(|u| u.strip_suffix(b"'B"))
        .is_some_and(|bits| bits.iter().all(|b| matches!(b, b'0' | b'1')));
    if bits {
        &value[..at]
    } else {
        value
    }
}

fn ip_matches(ip: IpAddr, addr: IpAddr, mask: Option<IpAddr>) -> bool {
    match (ip, addr, mask) {
        (IpAddr::V4(ip), IpAddr::V4(addr), Some(IpAddr::V4(mask))) => {
            u32::from(ip) & u32::from(mask) == u32::from(addr) & u32::from(mask)
        }
        (IpAddr::V6(ip), IpAddr::V6(addr), Some(IpAddr::V6(mask))) => {
            u128::from(ip) & u128::from(mask) == u128::from(addr) & u128::from(mask)
        }
        (ip, addr, None) => ip == addr,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
