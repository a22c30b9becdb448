//! Access decisions for the entries of one search, cached so the common lists cost almost nothing per entry.
//!
//! Which rules' `<what>` match an entry and how the requester stands to it are the only things that
//! vary between entries (the `<who>` parts are fixed for a search); entries that agree on both share one
//! [`EntryView`], which caches per-attribute decisions.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use canopy_core::wire::{section_of, Section, StoredEntry};
use canopy_core::Entry;
use canopy_schema::{AttributeType, NormDn};

use super::{privileges, AttrRef, Checker, Mask, Relation, Rule, Target};
use crate::access::Who;

/// The cached decisions of a search.
pub struct SearchAccess<'a> {
    checker: Checker<'a>,
    /// Rules whose `<what>` depends on the entry (a DN pattern or a filter).
    varying: Vec<usize>,
    views: RefCell<Vec<(u64, Relation, Rc<EntryView>)>>,
    /// The connection's memo of views' first decisions, when they may be kept across searches.
    memo: Option<MemoKey<'a>>,
}

/// A connection's memo of the first decisions of its searches' views (privileges on the entry, on
/// every unlisted attribute and on the password section, per kind of entry), so that a connection
/// running search after search under one identity decides them once. Valid for one configuration
/// snapshot, one access list and one identity: when any of them differs the memo starts over. Never
/// used when a rule's `<who>` reads the directory (`group=`), whose answer may change between
/// searches.
#[derive(Default)]
pub struct ViewMemo {
    memo: Mutex<Memo>,
}

#[derive(Default)]
struct Memo {
    /// Weak, so that a memo keeps no snapshot's databases open; it still keeps the allocations, so
    /// an address compared here is never that of a newer snapshot or identity.
    state: Option<Weak<dyn Any + Send + Sync>>,
    who: Weak<Who>,
    /// The access list's address inside `state`'s databases.
    acl: usize,
    seeds: Vec<(u64, Relation, Seed)>,
    /// Privileges on the pseudo-attribute `entry` of search bases, by DN (`SearchAccess::base_entry`).
    bases: Vec<(Arc<NormDn>, Mask)>,
}

/// Kinds of entries a memo keeps decisions for; a search meeting more kinds decides the rest itself.
const MEMO_SEEDS: usize = 16;
/// Search bases a memo keeps the `entry` decision for.
const MEMO_BASES: usize = 4;

/// What a view's construction decides.
#[derive(Clone, Copy)]
struct Seed {
    entry: Mask,
    plain: Option<Mask>,
    secret: Option<Mask>,
}

/// The configuration snapshot a search runs in, as the memo knows it (implemented by `state::State`;
/// this module does not name the server's state, which depends on it).
pub trait Snapshot {
    /// The snapshot's address, compared with the remembered one.
    fn address(&self) -> *const ();
    /// A weak reference that keeps the snapshot's allocation, so that its address is never reused for
    /// a newer snapshot while the memo names it.
    fn keep(&self) -> Weak<dyn Any + Send + Sync>;
}

/// What a search's views may be remembered under: the connection's memo, the configuration snapshot
/// the search runs in, and the identity it runs as (the one the checker was made for).
pub struct MemoKey<'a> {
    pub memo: &'a ViewMemo,
    pub state: &'a dyn Snapshot,
    pub who: &'a Arc<Who>,
}

impl Memo {
    fn is_for(&self, key: &MemoKey<'_>, acl: usize) -> bool {
        self.state
            .as_ref()
            .is_some_and(|w| std::ptr::eq(w.as_ptr().cast::<()>(), key.state.address()))
            && std::ptr::eq(self.who.as_ptr(), Arc::as_ptr(key.who))
            && self.acl == acl
    }
}

/// What the requester may do with the entries of one kind.
pub struct EntryView {
    /// Privileges on the pseudo-attribute `entry`.
    pub entry: Mask,
    /// Privileges on every attribute no `attrs=` list of a matching rule names, when those lists name only
    /// password attributes and pseudo-attributes: then every other attribute has exactly these.
    pub plain: Option<Mask>,
    /// Privileges on every password attribute (the stored entry's password section) when no matching rule
    /// names a proper subtype of userPassword or a password value: then they all have exactly these.
    pub secret: Option<Mask>,
    /// The view's number in its search, when entries share it; None for a view of one entry only.
    pub shared: Option<usize>,
    signature: Signature,
    attrs: RefCell<HashMap<String, Mask>>,
}

#[derive(Clone)]
enum Signature {
    Bits(u64, Relation),
    /// More varying rules than bits: the view is built for one entry.
    Entry(Vec<bool>, Relation),
}

impl<'a> SearchAccess<'a> {
    pub fn new(checker: Checker<'a>) -> SearchAccess<'a> {
        let varying = checker
            .acl()
            .rules()
            .iter()
            .enumerate()
            .filter(|(_, r)| !matches!(r.what.dn, super::DnPattern::Any) || r.what.filter.is_some())
            .map(|(i, _)| i)
            .collect();
        SearchAccess {
            checker,
            varying,
            views: RefCell::new(Vec::new()),
            memo: None,
        }
    }

    /// Remembers the views' first decisions in the connection's memo, and takes them from it. `key.who`
    /// must be the identity the checker decides for; nothing is remembered for the root DN (which
    /// needs no decision) or when a rule's `<who>` reads the directory.
    pub fn with_memo(mut self, key: MemoKey<'a>) -> SearchAccess<'a> {
        if !self.is_root()
            && !self.checker.acl().reads_directory()
            && std::ptr::eq(Arc::as_ptr(key.who), self.checker.who())
        {
            self.memo = Some(key);
        }
        self
    }

    fn acl_address(&self) -> usize {
        std::ptr::from_ref(self.checker.acl()) as usize
    }

    fn remembered(&self, bits: u64, relation: Relation) -> Option<Seed> {
        let key = self.memo.as_ref()?;
        let memo = key.memo.memo.lock().unwrap_or_else(PoisonError::into_inner);
        if !memo.is_for(key, self.acl_address()) {
            return None;
        }
        memo.seeds
            .iter()
            .find(|(b, s, _)| *b == bits && *s == relation)
            .map(|(_, _, seed)| *seed)
    }

    fn remember(&self, bits: u64, relation: Relation, seed: Seed) {
        self.with_memo_for_update(|memo| {
            if memo.seeds.len() < MEMO_SEEDS {
                memo.seeds.push((bits, relation, seed));
            }
        });
    }

    /// Runs `update` on the connection's memo, started over first when it is for another snapshot,
    /// access list or identity; nothing when the search keeps no memo.
    fn with_memo_for_update(&self, update: impl FnOnce(&mut Memo)) {
        let Some(key) = &self.memo else { return };
        let acl = self.acl_address();
        let mut memo = key.memo.memo.lock().unwrap_or_else(PoisonError::into_inner);
        if !memo.is_for(key, acl) {
            *memo = Memo {
                state: Some(key.state.keep()),
                who: Arc::downgrade(key.who),
                acl,
                seeds: Vec::new(),
                bases: Vec::new(),
            };
        }
        update(&mut memo);
    }

    /// The requester's privileges on the pseudo-attribute `entry` of the entry at `ndn`, decided from
    /// its DN alone: for access lists whose rules do not look at an entry's attributes
    /// ([`super::Acl::needs_entry`] false; the caller decides with the entry otherwise). A search
    /// decides this for its base; the connection's memo keeps it, under the same conditions as the
    /// views' first decisions, so a connection searching one base again and again decides it once.
    pub fn base_entry(&self, ndn: &Arc<NormDn>) -> Mask {
        debug_assert!(!self.checker.acl().needs_entry());
        if let Some(key) = self.memo.as_ref() {
            let memo = key.memo.memo.lock().unwrap_or_else(PoisonError::into_inner);
            if memo.is_for(key, self.acl_address()) {
                // The same base DN is usually the same allocation (`Directory::normalize_shared`).
                let same = |dn: &Arc<NormDn>| Arc::ptr_eq(dn, ndn) || **dn == **ndn;
                if let Some((_, mask)) = memo.bases.iter().find(|(dn, _)| same(dn)) {
                    return *mask;
                }
            }
        }
        let target = Target { ndn, entry: None };
        let mask = self.checker.decide(target, AttrRef::Entry).mask;
        self.with_memo_for_update(|memo| {
            if memo.bases.len() < MEMO_BASES {
                memo.bases.push((Arc::clone(ndn), mask));
            }
        });
        mask
    }

    pub fn checker(&self) -> &Checker<'a> {
        &self.checker
    }

    /// Whether the requester bypasses access control.
    pub fn is_root(&self) -> bool {
        self.checker.who().root
    }

    /// Whether a view needs the entry's normalized DN: some rule's `<what>` depends on the entry (a DN
    /// pattern or a filter) or a `<who>` pattern has `$N` references. When none does, the only thing
    /// that varies between entries is whether the entry is the requester's own, which
    /// [`SearchAccess::view_stored`] reads from the stored RDNs.
    pub fn needs_ndn(&self) -> bool {
        !self.varying.is_empty() || self.checker.acl().has_expansions()
    }

    /// The view for an entry; `entry` is needed only when [`super::Acl::needs_entry`].
    pub fn view(&self, ndn: &NormDn, entry: Option<&Entry>) -> Rc<EntryView> {
        let target = Target { ndn, entry };
        let relation = self.checker.relation(target);
        if self.varying.len() > 64 {
            let all = (0..self.checker.acl().rules().len())
                .map(|i| self.checker.what_entry_matches(i, target))
                .collect();
            return Rc::new(self.build(Signature::Entry(all, relation), None));
        }
        let mut bits = 0u64;
        for (bit, rule) in self.varying.iter().enumerate() {
            if self.checker.what_entry_matches(*rule, target) {
                bits |= 1 << bit;
            }
        }
        self.shared_view(bits, relation)
    }

    /// The view for an entry as stored, without its normalized DN: None when one is needed
    /// ([`SearchAccess::needs_ndn`], or the rules read the entry itself), and [`SearchAccess::view`]
    /// must decide.
    pub fn view_stored(&self, stored: &StoredEntry<'_>) -> Option<Rc<EntryView>> {
        if self.needs_ndn() || self.checker.acl().needs_entry() {
            return None;
        }
        let who = self.checker.who();
        let is_entry =
            |dn: Option<&NormDn>| dn.is_some_and(|own| stored.below(own.rdns()) == Some(0));
        let is_self = is_entry(who.ndn.as_ref());
        let real_is_self = match who.real {
            Some(_) => is_entry(who.real_ndn()),
            None => is_self,
        };
        // No `dnattr` clause: it would need the entry ([`super::Acl::needs_entry`]).
        // No `$N` pattern either: its rule's DN pattern would make the view need the DN.
        let relation = Relation {
            is_self,
            dnattrs: 0,
            expanded: 0,
            sets: 0,
            real_is_self,
            real_dnattrs: 0,
        };
        Some(self.shared_view(0, relation))
    }

    /// The view shared by the entries with these `<what>` matches and self-ness, built on first use.
    fn shared_view(&self, bits: u64, relation: Relation) -> Rc<EntryView> {
        let mut views = self.views.borrow_mut();
        if let Some((_, _, view)) = views.iter().find(|(b, s, _)| *b == bits && *s == relation) {
            return Rc::clone(view);
        }
        let view = Rc::new(self.build(Signature::Bits(bits, relation), Some(views.len())));
        if views.capacity() == 0 {
            // Made at its size rather than grown: most searches meet one or two kinds of entries.
            *views = Vec::with_capacity(2);
        }
        views.push((bits, relation, Rc::clone(&view)));
        view
    }

    fn matches(&self, signature: &Signature, rule: usize) -> bool {
        match signature {
            Signature::Entry(all, _) => all.get(rule).copied().unwrap_or(false),
            Signature::Bits(bits, _) => match self.varying.iter().position(|r| *r == rule) {
                Some(bit) => bits & (1 << bit) != 0,
                None => true,
            },
        }
    }

    fn decide(&self, signature: &Signature, attr: AttrRef<'_>) -> Mask {
        if self.is_root() {
            return privileges::cumulative(privileges::MANAGE);
        }
        let relation = match signature {
            Signature::Bits(_, r) | Signature::Entry(_, r) => *r,
        };
        self.checker
            .decide_with(|i| self.matches(signature, i), relation, attr)
            .mask
    }

    /// Whether a rule matching entries of `signature` lists an attribute type for which `test` holds (given
    /// the type, None when the schema does not know it, and the rule).
    fn some_rule_lists(
        &self,
        signature: &Signature,
        test: impl Fn(Option<&AttributeType>, &Rule) -> bool,
    ) -> bool {
        let schema = self.checker.schema();
        self.checker
            .acl()
            .rules()
            .iter()
            .enumerate()
            .any(|(i, rule)| {
                self.matches(signature, i)
                    && rule.what.attrs.as_ref().is_some_and(|items| {
                        items.iter().any(|item| match item {
                            super::AttrItem::Type(name) => test(schema.attribute_type(name), rule),
                            // Covers attributes of every kind: no one decision holds for a section.
                            super::AttrItem::NotClass { .. } => test(None, rule),
                            _ => false,
                        })
                    })
            })
    }

    fn build(&self, signature: Signature, shared: Option<usize>) -> EntryView {
        let remembered = match &signature {
            Signature::Bits(bits, relation) => Some((*bits, *relation)),
            Signature::Entry(..) => None,
        };
        if let Some(seed) = remembered.and_then(|(bits, relation)| self.remembered(bits, relation))
        {
            return EntryView {
                entry: seed.entry,
                plain: seed.plain,
                secret: seed.secret,
                shared,
                signature,
                attrs: RefCell::new(HashMap::new()),
            };
        }
        let view = self.decide_view(signature, shared);
        if let Some((bits, relation)) = remembered {
            let seed = Seed {
                entry: view.entry,
                plain: view.plain,
                secret: view.secret,
            };
            self.remember(bits, relation, seed);
        }
        view
    }

    fn decide_view(&self, signature: Signature, shared: Option<usize>) -> EntryView {
        let schema = self.checker.schema();
        let password = schema.user_password();
        // Lists naming only password types and pseudo-attributes leave every other attribute to the rules
        // without a list, so one decision covers them all.
        let lists_plain = self.some_rule_lists(&signature, |at, _| match (at, password) {
            (Some(at), Some(pw)) => !schema.is_subtype_of(at, pw),
            _ => true,
        });
        let plain = (!lists_plain).then(|| self.decide(&signature, AttrRef::Unlisted));
        // Likewise one decision covers the password section unless a rule names a subtype or a value of it.
        let lists_password_parts =
            self.some_rule_lists(&signature, |at, rule| match (at, password) {
                (Some(at), Some(pw)) => {
                    schema.is_subtype_of(at, pw)
                        && (!std::ptr::eq(at, pw) || rule.what.val.is_some())
                }
                _ => true,
            });
        let secret =
            (!lists_password_parts).then(|| self.decide(&signature, AttrRef::Attr("userPassword")));
        EntryView {
            entry: self.decide(&signature, AttrRef::Entry),
            plain,
            secret,
            shared,
            signature,
            attrs: RefCell::new(HashMap::new()),
        }
    }

    /// Privileges on one attribute (by description) of the entries of `view`.
    pub fn attr(&self, view: &EntryView, desc: &str) -> Mask {
        // Outside the password section `plain`, when known, is the decision (see its definition).
        if let Some(plain) = view.plain {
            if section_of(self.checker.schema(), desc) != Section::Secret {
                return plain;
            }
        }
        if let Some(mask) = view.attrs.borrow().get(desc) {
            return *mask;
        }
        let mask = self.decide(&view.signature, AttrRef::Attr(desc));
        view.attrs.borrow_mut().insert(desc.to_string(), mask);
        mask
    }

    /// Whether `need` is granted on one value of an attribute (not cached: only `val=` rules need it).
    pub fn allows_value(&self, view: &EntryView, desc: &str, value: &[u8], need: Mask) -> bool {
        if self.is_root() {
            return true;
        }
        let relation = match &view.signature {
            Signature::Bits(_, r) | Signature::Entry(_, r) => *r,
        };
        let decision = self.checker.decide_with(
            |i| self.matches(&view.signature, i),
            relation,
            AttrRef::Value(desc, value),
        );
        decision.mask & need == need
    }

    /// Whether values of this attribute are subject to `val=` rules.
    pub fn value_ruled(&self, desc: &str) -> bool {
        let acl = self.checker.acl();
        acl.has_value_rules() && acl.value_ruled(self.checker.schema(), desc)
    }

    /// Whether `need` is granted on the attribute; attributes of the user and operational sections are
    /// answered by `plain` when it is known.
    pub fn allows_attr(&self, view: &EntryView, desc: &str, need: Mask) -> bool {
        self.attr(view, desc) & need == need
    }
}

impl EntryView {
    pub fn allows_entry(&self, need: Mask) -> bool {
        self.entry & need == need
    }

    /// Whether every attribute outside the password section has `need`.
    pub fn plain_allows(&self, need: Mask) -> bool {
        self.plain.is_some_and(|m| m & need == need)
    }
}
