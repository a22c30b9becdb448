//! The dynlist overlay (slapd's `slapo-dynlist`): dynamic lists and dynamic groups, expanded when they
//! are read (docs/design/read-path.md). Not a write hook: nothing is stored. A search asks an
//! [`Expander`] to turn each entry it examines into the entry as the requester sees it — a dynamic
//! group with the DNs its `memberURL` finds as `member` values, a dynamic list with the attributes of
//! the entries its URLs find, a member with the `memberOf` values of the dynamic (and static) groups
//! that hold it — before the search's one filter test and its encoding.
//!
//! The URLs are searched in the read snapshot of the operation, as the requester: the frontend's
//! [`Requester`] says which entries it finds and which attributes it may read, as slapd runs its
//! internal searches with the requester's identity. Entries found are not expanded in turn (slapd's
//! "no recursion"), except through nested groups (`@<static-oc>*`, `nested.rs`). Those searches, and
//! the lookups of the groups memberOf consults, run through the backend's one search loop with a
//! reader of the backend's own searches (`crates/directory/src/find.rs`). The overlay is the database's [`ReadHook`].

mod config;
mod nested;

pub use config::{AttrSet, Dynlist, MemberMap, Url};

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::{encode_entry, StoredEntry, StoredView};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::ReadOps;
use canopy_proto::{Dn, Filter, ResultCode, SearchScope};
use canopy_schema::{NormDn, Schema};

use crate::alias::Base;
use crate::database::Directory;
use crate::error::store_error;
use crate::find::{As, Find};
use crate::search::computed;
use crate::search_loop::{Expansion, ReadHook, Requester};
use crate::Snapshot;

/// What an entry found is handed to: the requester the search runs as, the entry's normalized DN and
/// the entry as stored. An error ends the search.
type Each<'e> =
    dyn FnMut(&mut dyn Requester, &NormDn, &StoredEntry<'_>) -> Result<(), LdapError> + 'e;

/// A URL ready to search: its base (as written and normalized), scope and prepared filter.
struct Search<'s> {
    dn: Arc<Dn>,
    base: Arc<NormDn>,
    scope: SearchScope,
    filter: PreparedFilter<'s>,
    raw: Filter,
    attrs: Vec<String>,
}

/// A dynamic group of a set with memberOf, read once per operation.
struct Group<'s> {
    set: usize,
    dn: Vec<u8>,
    searches: Vec<Search<'s>>,
}

/// The expansion of the entries one operation reads, in its snapshot.
pub struct Expander<'a> {
    dir: &'a Directory,
    txn: &'a Snapshot,
    config: &'a Dynlist,
    /// Per set: `(objectClass=<group-oc>)`.
    classes: Vec<PreparedFilter<'a>>,
    /// Per set: the restricting URI.
    restricts: Vec<Option<Search<'a>>>,
    /// Compute memberOf attributes (the operation reads or tests them).
    memberof: bool,
    /// The dynamic groups of the sets with memberOf, loaded when first needed.
    groups: Option<Vec<Group<'a>>>,
    /// Add the members of nested groups to a group's members (slapd does when the operation asks
    /// for the member attribute and memberOf together, or tests memberOf).
    nested_members: bool,
    /// The groups of the nested sets, loaded when first needed.
    graph: Option<nested::Graph>,
    /// The suffix entry, the base of the lookups of groups (None when it does not exist), found
    /// when first needed.
    suffix: OnceCell<Option<Base>>,
}

impl<'a> Expander<'a> {
    /// An expander for one operation; `memberof`: whether it reads or tests a memberOf attribute
    /// (computing it costs a test of every dynamic group per entry).
    pub fn new(dir: &'a Directory, txn: &'a Snapshot, config: &'a Dynlist, memberof: bool) -> Self {
        let schema: &'a Schema = dir.schema();
        let classes = config
            .sets
            .iter()
            .map(|set| PreparedFilter::new(schema, &class_filter(&set.group_class)))
            .collect();
        let restricts = config
            .sets
            .iter()
            .map(|set| set.restrict.as_ref().and_then(|url| prepare(schema, url)))
            .collect();
        let memberof = memberof && config.memberof_attrs().next().is_some();
        Expander {
            dir,
            txn,
            config,
            classes,
            restricts,
            memberof,
            groups: None,
            nested_members: false,
            graph: None,
            suffix: OnceCell::new(),
        }
    }

    /// Whether a nested set's groups also list the members of the groups they hold, at any depth:
    /// slapd 2.5 does it when the operation asks for a member attribute and memberOf together, or
    /// tests memberOf in its filter (the frontend decides). Needs `memberof`.
    pub fn with_nested_members(mut self, on: bool) -> Self {
        self.nested_members = on && self.memberof;
        self
    }

    /// Whether [`Expander::expand`] has work to do on this entry (it is dynamic, or memberOf is
    /// computed for it): a cheap test, without searching.
    pub fn applies(&self, ndn: &NormDn, stored: &StoredEntry<'_>) -> bool {
        let (dynamic, memberof) = self.work(ndn, stored);
        dynamic.is_some() || memberof
    }

    /// The set that expands the entry (the first whose class and URI it matches: slapd applies one
    /// attrset per entry), and whether memberOf is computed for it (not for the entries of a set
    /// that computes it, as slapd).
    fn work(&self, ndn: &NormDn, stored: &StoredEntry<'_>) -> (Option<usize>, bool) {
        let view = StoredView::new(stored);
        let dynamic = (0..self.config.sets.len()).find(|&i| self.is_dynamic(i, ndn, &view, stored));
        let memberof = self.memberof
            && !self
                .config
                .sets
                .iter()
                .enumerate()
                .any(|(i, set)| has_memberof(set) && !self.nests(i) && self.is_class(i, &view));
        (dynamic, memberof)
    }

    /// The entry `stored` (named `ndn`) as `who` reads it, encoded in the stored form; None when
    /// nothing changes (not a dynamic entry, or nothing found).
    pub fn expand(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        who: &mut dyn Requester,
    ) -> Result<Option<Vec<u8>>, LdapError> {
        let (dynamic, memberof) = self.work(ndn, stored);
        if dynamic.is_none() && !memberof {
            return Ok(None);
        }
        let mut entry = stored.to_entry().map_err(|_| unreadable())?;
        let mut changed = false;
        if let Some(set) = dynamic {
            changed |= self.expand_set(set, &mut entry, who)?;
        }
        if memberof {
            changed |= self.add_memberof(ndn, stored, &mut entry, who)?;
            changed |= self.add_nested_memberof(ndn, &mut entry, who)?;
        }
        if self.nested_members && self.may_be_nested_group(stored) {
            changed |= self.add_nested_members(ndn, &mut entry, who)?;
        }
        if !changed {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(1024);
        encode_entry(self.dir.schema(), &entry, &mut out);
        Ok(Some(out))
    }

    fn is_class(&self, set: usize, view: &StoredView<'_>) -> bool {
        self.classes
            .get(set)
            .is_some_and(|c| c.evaluate(view, &[]).is_true())
    }

    /// Whether the entry is one set `set` expands: its class, within its restricting URI.
    fn is_dynamic(
        &self,
        set: usize,
        ndn: &NormDn,
        view: &StoredView<'_>,
        stored: &StoredEntry<'_>,
    ) -> bool {
        if !self.is_class(set, view) {
            return false;
        }
        match self.restricts.get(set) {
            Some(Some(r)) => {
                Url::holds(&r.base, r.scope, ndn)
                    && r.filter
                        .evaluate(view, &computed(false, stored.dn))
                        .is_true()
            }
            Some(None) => self.config.sets[set].restrict.is_none(),
            None => false,
        }
    }

    /// Adds what the URLs of `entry` find under set `set`; whether anything was added.
    fn expand_set(
        &self,
        set: usize,
        entry: &mut Entry,
        who: &mut dyn Requester,
    ) -> Result<bool, LdapError> {
        let config = &self.config.sets[set];
        let schema = self.dir.schema();
        let urls = values_of(schema, entry, &config.url_attr);
        let mut added: Vec<(String, Vec<u8>)> = Vec::new();
        for text in urls {
            let Some(search) = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| {
                    Url::parse(t)
                        .map_err(|e| tracing::debug!(%e, "dynlist URL"))
                        .ok()
                })
                .and_then(|url| prepare(schema, &url))
            else {
                continue;
            };
            // A group's URLs name entries, not attributes: slapd skips one that lists attributes.
            if !self.dir.holds(&search.base) || (config.is_group() && !search.attrs.is_empty()) {
                continue;
            }
            self.search(&search, who, &mut |who, ndn, stored| {
                if !config.is_group() {
                    for item in canopy_core::wire::attributes(stored.user) {
                        let Ok((desc, values)) = item else { continue };
                        if !wanted(schema, &search.attrs, desc) || !who.reads(ndn, stored, desc) {
                            continue;
                        }
                        let target = mapped(schema, config, desc);
                        for value in values {
                            added.push((target.clone(), value.to_vec()));
                        }
                    }
                } else {
                    for map in &config.members {
                        added.push((map.member_attr.clone(), stored.dn.to_vec()));
                    }
                }
                Ok(())
            })?;
        }
        let mut changed = false;
        for (desc, value) in added {
            changed |= add_value(schema, entry, &desc, value);
        }
        Ok(changed)
    }

    /// Runs `search` as `who` through the backend's search loop, handing every entry it finds to
    /// `each` (nothing when its base does not exist).
    fn search(
        &self,
        search: &Search<'_>,
        who: &mut dyn Requester,
        each: &mut Each<'_>,
    ) -> Result<(), LdapError> {
        let Some(id) = self.dir.id_of(self.txn, &search.base)? else {
            return Ok(());
        };
        let base = Base {
            dn: search.dn.clone(),
            ndn: search.base.clone(),
            id,
        };
        let find = Find {
            base: &base,
            scope: search.scope,
            filter: &search.raw,
            prepared: &search.filter,
        };
        let mut each = |who: &mut dyn Requester, ndn: &NormDn, stored: &StoredEntry<'_>| {
            each(who, ndn, stored).map(|()| true)
        };
        find.run(self.dir, self.txn, As::Requester(who), &mut each)
    }

    /// Looks up, as the server, the entries of the whole database that `filter` matches, handing
    /// each to `each` (the requester it is given is the server's).
    fn lookup(&self, filter: &Filter, each: &mut Each<'_>) -> Result<(), LdapError> {
        if self.suffix.get().is_none() {
            let found = self.dir.id_of(self.txn, self.dir.suffix())?.map(|id| Base {
                dn: Arc::new(self.dir.suffix_dn().clone()),
                ndn: Arc::new(self.dir.suffix().clone()),
                id,
            });
            let _ = self.suffix.set(found);
        }
        let Some(base) = self.suffix.get().and_then(Option::as_ref) else {
            return Ok(());
        };
        let prepared = PreparedFilter::new(self.dir.schema(), filter);
        let find = Find {
            base,
            scope: SearchScope::WholeSubtree,
            filter,
            prepared: &prepared,
        };
        let mut each = |who: &mut dyn Requester, ndn: &NormDn, stored: &StoredEntry<'_>| {
            each(who, ndn, stored).map(|()| true)
        };
        find.run(self.dir, self.txn, As::Server, &mut each)
    }

    /// Adds the memberOf values of the entry; whether any was added.
    fn add_memberof(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        entry: &mut Entry,
        who: &mut dyn Requester,
    ) -> Result<bool, LdapError> {
        if self.groups.is_none() {
            self.groups = Some(self.load_groups()?);
        }
        let schema = self.dir.schema();
        let mut values: Vec<(String, Vec<u8>)> = Vec::new();
        let children = match self.dir.id_of(self.txn, ndn)? {
            Some(id) => self.txn.txn().has_children(id).map_err(store_error)?,
            None => false,
        };
        let extra = computed(children, stored.dn);
        for group in self.groups.iter().flatten() {
            let member = group.searches.iter().any(|s| {
                Url::holds(&s.base, s.scope, ndn) && who.finds(ndn, stored, &s.filter, &extra)
            });
            if member {
                for map in &self.config.sets[group.set].members {
                    if let Some(attr) = &map.memberof_attr {
                        values.push((attr.clone(), group.dn.clone()));
                    }
                }
            }
        }
        for set in &self.config.sets {
            // Nested sets: every level, from the group graph (`add_nested_memberof`).
            for map in set.members.iter().filter(|m| !m.nested) {
                let (Some(attr), Some(class)) = (&map.memberof_attr, &map.static_class) else {
                    continue;
                };
                for dn in self.static_groups(class, &map.member_attr, &entry.dn)? {
                    values.push((attr.clone(), dn));
                }
            }
        }
        let mut changed = false;
        for (attr, value) in values {
            changed |= add_value(schema, entry, &attr, value);
        }
        Ok(changed)
    }

    /// Every dynamic group of the sets with memberOf, with its URLs prepared.
    fn load_groups(&self) -> Result<Vec<Group<'a>>, LdapError> {
        let schema: &'a Schema = self.dir.schema();
        let mut groups = Vec::new();
        for (i, set) in self.config.sets.iter().enumerate() {
            if !has_memberof(set) || self.nests(i) {
                continue;
            }
            self.lookup(&class_filter(&set.group_class), &mut |_, ndn, stored| {
                if !self.is_dynamic(i, ndn, &StoredView::new(stored), stored) {
                    return Ok(());
                }
                let entry = stored.to_entry().map_err(|_| unreadable())?;
                let searches = values_of(schema, &entry, &set.url_attr)
                    .iter()
                    .filter_map(|v| std::str::from_utf8(v).ok())
                    .filter_map(|t| Url::parse(t).ok())
                    .filter_map(|url| prepare(schema, &url))
                    .filter(|s| self.dir.holds(&s.base) && s.attrs.is_empty())
                    .collect();
                groups.push(Group {
                    set: i,
                    dn: stored.dn.to_vec(),
                    searches,
                });
                Ok(())
            })?;
        }
        Ok(groups)
    }

    /// The DNs of the entries of class `class` whose `member_attr` names the entry `dn`.
    fn static_groups(
        &self,
        class: &str,
        member_attr: &str,
        dn: &Dn,
    ) -> Result<Vec<Vec<u8>>, LdapError> {
        let filter = Filter::And(vec![
            class_filter(class),
            Filter::Equality(member_attr.into(), dn.to_string().into_bytes()),
        ]);
        let mut found = Vec::new();
        self.lookup(&filter, &mut |_, _, stored| {
            found.push(stored.dn.to_vec());
            Ok(())
        })?;
        Ok(found)
    }
}

impl Expansion for Expander<'_> {
    fn applies(&self, ndn: &NormDn, stored: &StoredEntry<'_>) -> bool {
        Expander::applies(self, ndn, stored)
    }

    fn expand(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        who: &mut dyn Requester,
    ) -> Result<Option<Vec<u8>>, LdapError> {
        Expander::expand(self, ndn, stored, who)
    }
}

/// The overlay as the database's read hook: the planning filter of a search, and an [`Expander`] for
/// the entries one operation reads, computing memberOf when the operation asks for it or tests it
/// (slapd 2.5 lists the members of nested groups when memberOf and the member attribute are both
/// asked for, or memberOf is tested: docs/overlays.md).
impl ReadHook for Dynlist {
    fn planning_filter(&self, schema: &Schema, filter: &Filter) -> Option<Filter> {
        Dynlist::planning_filter(self, schema, filter)
    }

    fn expansion<'a>(
        &'a self,
        dir: &'a Directory,
        txn: &'a Snapshot,
        asked: &dyn Fn(&str) -> bool,
        tested: &dyn Fn(&str) -> bool,
    ) -> Box<dyn Expansion + 'a> {
        let memberof = self
            .memberof_attrs()
            .any(|attr| asked(attr) || tested(attr));
        let nested_members =
            self.nested_member_attrs().any(asked) || self.memberof_attrs().any(tested);
        Box::new(Expander::new(dir, txn, self, memberof).with_nested_members(nested_members))
    }
}

impl Dynlist {
    /// The filter a search plans its candidates with: a superset of what the expanded entries
    /// match. An assertion a dynamic entry may satisfy through expansion also takes the entries of
    /// the set's class (`(|(member=X)(objectClass=groupOfURLs))`); one on a memberOf attribute takes
    /// the whole scope. None when the filter needs no change.
    pub fn planning_filter(&self, schema: &Schema, filter: &Filter) -> Option<Filter> {
        match self.plan_node(schema, filter) {
            Cow::Borrowed(_) => None,
            Cow::Owned(f) => Some(f),
        }
    }

    fn plan_node<'f>(&self, schema: &Schema, filter: &'f Filter) -> Cow<'f, Filter> {
        let attr = match filter {
            Filter::And(parts) | Filter::Or(parts) => {
                let planned: Vec<Cow<'_, Filter>> =
                    parts.iter().map(|p| self.plan_node(schema, p)).collect();
                if planned.iter().all(|p| matches!(p, Cow::Borrowed(_))) {
                    return Cow::Borrowed(filter);
                }
                let parts = planned.into_iter().map(Cow::into_owned).collect();
                return Cow::Owned(match filter {
                    Filter::And(_) => Filter::And(parts),
                    _ => Filter::Or(parts),
                });
            }
            // A negation's candidates are never narrowed by an index (the scope is read).
            Filter::Not(_) | Filter::Undefined => return Cow::Borrowed(filter),
            Filter::Equality(attr, _)
            | Filter::GreaterOrEqual(attr, _)
            | Filter::LessOrEqual(attr, _)
            | Filter::Approx(attr, _)
            | Filter::Present(attr) => Some(attr.as_str()),
            Filter::Substrings(sub) => Some(sub.attr.as_str()),
            Filter::Extensible(mra) => mra.attr.as_deref(),
        };
        let same = |a: &str, b: &str| match (schema.attribute_type(a), schema.attribute_type(b)) {
            (Some(x), Some(y)) => std::ptr::eq(x, y),
            _ => a.eq_ignore_ascii_case(b),
        };
        let name = attr.map(|a| a.split(';').next().unwrap_or(a));
        let memberof = self
            .memberof_attrs()
            .any(|m| name.is_none_or(|n| same(n, m)));
        if memberof {
            return Cow::Owned(Filter::Present("objectClass".into()));
        }
        let mut classes: Vec<Filter> = self
            .sets
            .iter()
            .filter(|set| {
                !set.is_group()
                    || set
                        .members
                        .iter()
                        .any(|m| name.is_none_or(|n| same(n, &m.member_attr)))
            })
            .map(|set| class_filter(&set.group_class))
            .collect();
        // A static group of a nested set may hold a value through a group it holds.
        for map in self.sets.iter().flat_map(|s| &s.members) {
            if let (true, Some(class)) = (map.nested, &map.static_class) {
                if name.is_none_or(|n| same(n, &map.member_attr)) {
                    classes.push(class_filter(class));
                }
            }
        }
        if classes.is_empty() {
            return Cow::Borrowed(filter);
        }
        let mut any = vec![filter.clone()];
        any.extend(classes);
        Cow::Owned(Filter::Or(any))
    }
}

/// The description a list adds a found value of `desc` under: its mapping's (options kept), or
/// itself.
fn mapped(schema: &Schema, set: &AttrSet, desc: &str) -> String {
    let (name, options) = match desc.split_once(';') {
        Some((name, options)) => (name, Some(options)),
        None => (desc, None),
    };
    let found = schema.attribute_type(name);
    let Some(to) = set.members.iter().find_map(|m| {
        m.mapped
            .as_ref()
            .filter(|_| same_type(schema, found, &m.member_attr, name))
    }) else {
        return desc.to_string();
    };
    match options {
        Some(options) => format!("{to};{options}"),
        None => to.clone(),
    }
}

fn has_memberof(set: &AttrSet) -> bool {
    set.members.iter().any(|m| m.memberof_attr.is_some())
}

fn class_filter(class: &str) -> Filter {
    Filter::Equality("objectClass".into(), class.as_bytes().to_vec())
}

fn prepare<'s>(schema: &'s Schema, url: &Url) -> Option<Search<'s>> {
    let base = schema.normalize_dn(&url.base).ok()?;
    Some(Search {
        dn: Arc::new(url.base.clone()),
        base: Arc::new(base),
        scope: url.scope,
        filter: PreparedFilter::new(schema, &url.filter),
        raw: url.filter.clone(),
        attrs: url.attrs.clone(),
    })
}

/// Whether a dynamic list copies attribute `desc`: one the URL lists (or a subtype), or any user
/// attribute when it lists none.
fn wanted(schema: &Schema, attrs: &[String], desc: &str) -> bool {
    if attrs.is_empty() || attrs.iter().any(|a| a == "*") {
        return true;
    }
    let name = desc.split(';').next().unwrap_or(desc);
    let Some(at) = schema.attribute_type(name) else {
        return attrs.iter().any(|a| a.eq_ignore_ascii_case(name));
    };
    attrs.iter().any(|a| {
        let mut current = Some(at);
        for _ in 0..64 {
            let Some(t) = current else { return false };
            if schema
                .attribute_type(a)
                .is_some_and(|wanted| std::ptr::eq(wanted, t))
            {
                return true;
            }
            current = t.sup.as_deref().and_then(|s| schema.attribute_type(s));
        }
        false
    })
}

/// The values of attribute type `attr` (any options) in `entry`.
fn values_of(schema: &Schema, entry: &Entry, attr: &str) -> Vec<Vec<u8>> {
    let wanted = schema.attribute_type(attr);
    entry
        .attrs
        .iter()
        .filter(|a| same_type(schema, wanted, &a.desc, attr))
        .flat_map(|a| a.values.iter().cloned())
        .collect()
}

fn same_type(
    schema: &Schema,
    wanted: Option<&canopy_schema::AttributeType>,
    desc: &str,
    attr: &str,
) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    match (wanted, schema.attribute_type(name)) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        _ => name.eq_ignore_ascii_case(attr),
    }
}

/// Adds `value` to attribute `desc` of `entry` unless it holds an equal value (by the attribute's
/// equality rule); a single-valued attribute that already has a value keeps it, as slapd keeps the
/// first value found. Whether the value was added.
fn add_value(schema: &Schema, entry: &mut Entry, desc: &str, value: Vec<u8>) -> bool {
    let at = schema.attribute_type(desc.split(';').next().unwrap_or(desc));
    let normalize = |v: &[u8]| -> Vec<u8> {
        at.and_then(|at| at.equality)
            .and_then(|rule| schema.normalize_value(rule, v).ok())
            .unwrap_or_else(|| v.to_vec())
    };
    // The same description: the same type by any of its names, with the same options.
    let (name, options) = desc.split_once(';').unwrap_or((desc, ""));
    let slot = entry.attrs.iter_mut().find(|a| {
        let (other, other_options) = a.desc.split_once(';').unwrap_or((&a.desc, ""));
        same_type(schema, at, other, name) && other_options.eq_ignore_ascii_case(options)
    });
    match slot {
        Some(attribute) => {
            if at.is_some_and(|at| at.single_value) && !attribute.values.is_empty() {
                return false;
            }
            let wanted = normalize(&value);
            if attribute.values.iter().any(|v| normalize(v) == wanted) {
                return false;
            }
            attribute.values.push(value);
        }
        None => entry.attrs.push(Attribute {
            desc: desc.to_string(),
            values: vec![value],
        }),
    }
    true
}

fn unreadable() -> LdapError {
    LdapError::new(ResultCode::Other, "stored entry is unreadable")
}
