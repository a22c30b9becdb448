//! Nested groups (`member+memberOf@<static-oc>*`, slapd 2.5): the groups of one operation as a graph
//! (which group holds which, through static members and URLs alike), memberOf through every level, and
//! the members of the groups a group holds. Each walk keeps a visited set, so a cycle ends; as in slapd,
//! a group in a cycle holds (and is a member of) itself.

use std::collections::HashMap;

use canopy_core::wire::{StoredEntry, StoredView};
use canopy_core::{Entry, LdapError};
use canopy_proto::{Dn, Filter};
use canopy_schema::NormDn;

use super::{add_value, class_filter, prepare, unreadable, values_of, Expander, Requester, Url};

/// One group of a nested set: a dynamic group (entries of the set's class with URLs) or a static one
/// (entries of the static class).
struct Node {
    /// The DN as stored: the value memberOf takes.
    dn: Vec<u8>,
    /// Which set and member map it belongs to.
    set: usize,
    map: usize,
    /// Member values as stored (static groups), and normalized.
    statics: Vec<Vec<u8>>,
    static_ndns: Vec<NormDn>,
    /// What its URLs find, as the requester: (DN as stored, normalized).
    found: Vec<(Vec<u8>, NormDn)>,
    /// An entry of the static class is a group by its members only (slapd tests it so).
    static_only: bool,
    /// Groups it holds, and groups that hold it.
    subs: Vec<usize>,
    sups: Vec<usize>,
}

/// The groups of the nested sets in one operation's snapshot, as its requester finds them.
pub(super) struct Graph {
    nodes: Vec<Node>,
    by_ndn: HashMap<NormDn, usize>,
}

impl Expander<'_> {
    /// Whether a set nests groups.
    pub(super) fn nests(&self, set: usize) -> bool {
        self.config.sets[set].members.iter().any(|m| m.nested)
    }

    fn any_nested(&self) -> bool {
        (0..self.config.sets.len()).any(|i| self.nests(i))
    }

    fn graph(&mut self, who: &mut dyn Requester) -> Result<Option<&Graph>, LdapError> {
        if self.graph.is_none() && self.any_nested() {
            self.graph = Some(self.load_graph(who)?);
        }
        Ok(self.graph.as_ref())
    }

    /// Reads every group of the nested sets, runs their URLs, and links them.
    fn load_graph(&self, who: &mut dyn Requester) -> Result<Graph, LdapError> {
        let schema = self.dir.schema();
        let mut graph = Graph {
            nodes: Vec::new(),
            by_ndn: HashMap::new(),
        };
        for (set_index, set) in self.config.sets.iter().enumerate() {
            for (map_index, map) in set.members.iter().enumerate() {
                let (true, Some(static_class)) = (map.nested, &map.static_class) else {
                    continue;
                };
                let filter = Filter::Or(vec![
                    class_filter(&set.group_class),
                    class_filter(static_class),
                ]);
                let static_filter =
                    canopy_core::filter::PreparedFilter::new(schema, &class_filter(static_class));
                // Each group found runs its URLs as the requester, inside the lookup.
                self.lookup(&filter, &mut |_, ndn, stored| {
                    if graph.by_ndn.contains_key(ndn) {
                        return Ok(());
                    }
                    let view = StoredView::new(stored);
                    let dynamic = self.is_dynamic(set_index, ndn, &view, stored);
                    let is_static = static_filter.evaluate(&view, &[]).is_true();
                    if !dynamic && !is_static {
                        return Ok(());
                    }
                    let entry = stored.to_entry().map_err(|_| unreadable())?;
                    let statics = if is_static {
                        values_of(schema, &entry, &map.member_attr)
                    } else {
                        Vec::new()
                    };
                    let static_ndns = statics
                        .iter()
                        .filter_map(|v| Dn::parse(v).ok())
                        .filter_map(|dn| schema.normalize_dn(&dn).ok())
                        .collect();
                    let found = if dynamic {
                        self.url_members(&entry, set_index, who)?
                    } else {
                        Vec::new()
                    };
                    // A static group without members is no group (slapd lists only those with some).
                    if !dynamic && statics.is_empty() {
                        return Ok(());
                    }
                    graph.by_ndn.insert(ndn.clone(), graph.nodes.len());
                    graph.nodes.push(Node {
                        dn: stored.dn.to_vec(),
                        set: set_index,
                        map: map_index,
                        statics,
                        static_ndns,
                        found,
                        static_only: is_static,
                        subs: Vec::new(),
                        sups: Vec::new(),
                    });
                    Ok(())
                })?;
            }
        }
        // Link: a group holds the groups among its static members and among what its URLs find.
        for holder in 0..graph.nodes.len() {
            let node = &graph.nodes[holder];
            let held: Vec<usize> = node
                .static_ndns
                .iter()
                .chain(node.found.iter().map(|(_, n)| n))
                .filter_map(|n| graph.by_ndn.get(n).copied())
                .collect();
            for sub in held {
                if !graph.nodes[holder].subs.contains(&sub) {
                    graph.nodes[holder].subs.push(sub);
                    graph.nodes[sub].sups.push(holder);
                }
            }
        }
        Ok(graph)
    }

    /// What the URLs of the dynamic group `entry` (of set `set`) find, as `who`.
    fn url_members(
        &self,
        entry: &Entry,
        set: usize,
        who: &mut dyn Requester,
    ) -> Result<Vec<(Vec<u8>, NormDn)>, LdapError> {
        let schema = self.dir.schema();
        let mut found = Vec::new();
        for text in values_of(schema, entry, &self.config.sets[set].url_attr) {
            let Some(search) = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| Url::parse(t).ok())
                .and_then(|url| prepare(schema, &url))
            else {
                continue;
            };
            if !self.dir.holds(&search.base) || !search.attrs.is_empty() {
                continue;
            }
            self.search(&search, who, &mut |_, ndn, stored| {
                found.push((stored.dn.to_vec(), ndn.clone()));
                Ok(())
            })?;
        }
        Ok(found)
    }

    /// Adds to `entry` (named `ndn`) the memberOf values of the nested sets: every group holding it at
    /// any depth. Whether any was added.
    pub(super) fn add_nested_memberof(
        &mut self,
        ndn: &NormDn,
        entry: &mut Entry,
        who: &mut dyn Requester,
    ) -> Result<bool, LdapError> {
        let schema = self.dir.schema();
        let config = self.config;
        let Some(graph) = self.graph(who)? else {
            return Ok(false);
        };
        // A group's memberOf are the groups holding it; any other entry's, the groups it is a member of.
        let start: Vec<usize> = match graph.by_ndn.get(ndn) {
            Some(&node) => graph.nodes[node].sups.clone(),
            None => (0..graph.nodes.len())
                .filter(|&i| {
                    let node = &graph.nodes[i];
                    if node.static_only {
                        node.static_ndns.contains(ndn)
                    } else {
                        node.found.iter().any(|(_, n)| n == ndn)
                    }
                })
                .collect(),
        };
        let mut seen = vec![false; graph.nodes.len()];
        let mut queue = start;
        let mut changed = false;
        while let Some(group) = queue.pop() {
            if std::mem::replace(&mut seen[group], true) {
                continue;
            }
            let node = &graph.nodes[group];
            let map = &config.sets[node.set].members[node.map];
            if let Some(attr) = &map.memberof_attr {
                changed |= add_value(schema, entry, attr, node.dn.clone());
            }
            queue.extend(node.sups.iter().copied());
        }
        Ok(changed)
    }

    /// Adds to the group `entry` (named `ndn`) the members of the groups it holds, at any depth.
    /// Whether any was added.
    pub(super) fn add_nested_members(
        &mut self,
        ndn: &NormDn,
        entry: &mut Entry,
        who: &mut dyn Requester,
    ) -> Result<bool, LdapError> {
        let schema = self.dir.schema();
        let config = self.config;
        let Some(graph) = self.graph(who)? else {
            return Ok(false);
        };
        let Some(&root) = graph.by_ndn.get(ndn) else {
            return Ok(false);
        };
        let member_attr =
            &config.sets[graph.nodes[root].set].members[graph.nodes[root].map].member_attr;
        let mut seen = vec![false; graph.nodes.len()];
        let mut queue = graph.nodes[root].subs.clone();
        let mut changed = false;
        while let Some(group) = queue.pop() {
            if std::mem::replace(&mut seen[group], true) {
                continue;
            }
            let node = &graph.nodes[group];
            for value in node
                .statics
                .iter()
                .chain(node.found.iter().map(|(dn, _)| dn))
            {
                changed |= add_value(schema, entry, member_attr, value.clone());
            }
            queue.extend(node.subs.iter().copied());
        }
        Ok(changed)
    }

    /// Whether `ndn` names a group of a nested set (read before the graph exists: a class test).
    pub(super) fn may_be_nested_group(&self, stored: &StoredEntry<'_>) -> bool {
        let view = StoredView::new(stored);
        self.config.sets.iter().enumerate().any(|(i, set)| {
            set.members.iter().any(|m| {
                m.nested
                    && (self.is_class(i, &view)
                        || m.static_class.as_deref().is_some_and(|c| {
                            canopy_core::filter::PreparedFilter::new(
                                self.dir.schema(),
                                &class_filter(c),
                            )
                            .evaluate(&view, &[])
                            .is_true()
                        }))
            })
        })
    }
}
