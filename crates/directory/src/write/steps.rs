//! The storage steps every write takes, a client's or a provider's (`Origin`): the pipeline's hooks
//! around storing an added, changed, renamed or removed entry, and its dn2id key, children and index
//! keys kept in step (docs/design/write-pipeline.md). The one place a write builds its hooks' events.

use std::collections::BTreeSet;

use canopy_core::check::{attribute_types, check_entry_typed};
use canopy_core::desc::split_stored;
use canopy_core::index::{entry_keys, IndexSpec, Resolved};
use canopy_core::wire::{encode_entry, encode_entry_typed, StoredEntry};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Change, Dn, ResultCode};
use canopy_schema::NormDn;

use super::failed;
use crate::database::Directory;
use crate::event::{Event, Kind, Origin, Proposed};
use crate::keys::dn_key;
use crate::opattrs::Stamp;

/// The presence key of an index (docs/design/index-keys.md).
const PRESENCE_KEY: u8 = 0x01;
/// objectClass, whose equality keys are not one per value.
const OBJECT_CLASS: &str = "2.5.4.0";

/// Who makes a change, as the hooks see it: its stamp, the requester, where it comes from.
#[derive(Clone, Copy)]
pub(crate) struct By<'a> {
    pub stamp: &'a Stamp,
    /// The requester's DN (empty for a change received from a provider).
    pub requester: &'a str,
    pub origin: Origin,
}

/// Whether the entry must fit the schema once the hooks have seen it: a client's change is checked
/// after its overlays (slapd's order: a constraint broken by a value that also removes the RDN's is
/// 19, not 64); an entry received from a provider was checked as received.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    AfterHooks,
    AsReceived,
}

impl<'a> By<'a> {
    /// A change received from a provider, stamped `stamp` here.
    pub fn replica(stamp: &'a Stamp) -> Self {
        By {
            stamp,
            requester: "",
            origin: Origin::Replica,
        }
    }

    /// The change as stored, for the commit hooks.
    fn event<'e>(
        &'e self,
        kind: Kind,
        id: u64,
        old: Option<&'e Entry>,
        new: Option<&'e Entry>,
        changes: &'e [Change],
    ) -> Event<'e> {
        Event {
            kind,
            id,
            old,
            new,
            changes,
            stamp: self.stamp,
            requester: self.requester,
            origin: self.origin,
        }
    }
}

impl Directory {
    /// Runs the pipeline's prepare hooks on a change about to be stored.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn hooks_prepare(
        &self,
        txn: &WriteTxn<'_>,
        by: By<'_>,
        kind: Kind,
        id: u64,
        old: Option<&Entry>,
        new: Option<&mut Entry>,
        changes: &[Change],
    ) -> Result<(), LdapError> {
        let mut proposed = Proposed {
            kind,
            id,
            old,
            new,
            changes,
            stamp: by.stamp,
            requester: by.requester,
            origin: by.origin,
        };
        self.pipeline().prepare(self, txn, &mut proposed)
    }

    /// Runs the pipeline's commit hooks on a change just stored.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn hooks_commit(
        &self,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        kind: Kind,
        id: u64,
        old: Option<&Entry>,
        new: Option<&Entry>,
        changes: &[Change],
    ) -> Result<(), LdapError> {
        let event = by.event(kind, id, old, new, changes);
        self.pipeline().commit(self, txn, &event)
    }

    /// Runs the commit hook named `hook` alone, on a change of `old` no other hook is to see.
    pub(crate) fn hooks_commit_only(
        &self,
        hook: &str,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        kind: Kind,
        old: Option<&Entry>,
    ) -> Result<(), LdapError> {
        let event = by.event(kind, 0, old, None, &[]);
        self.pipeline().commit_only(hook, self, txn, &event)
    }

    /// Stores `entry` as a new child of `parent_id` (0: the suffix entry, or an entry of a database
    /// without a suffix entry) under a new ID, which it returns.
    pub(crate) fn store_added(
        &self,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        parent_id: u64,
        entry: &mut Entry,
    ) -> Result<u64, LdapError> {
        let id = txn.next_id().map_err(failed)?;
        self.hooks_prepare(txn, by, Kind::Add, id, None, Some(entry), &[])?;
        self.put(txn, id, entry)?;
        txn.put_dn(&dn_key(&entry.ndn), id).map_err(failed)?;
        txn.add_child(parent_id, id).map_err(failed)?;
        self.reindex(txn, id, None, Some(entry))?;
        self.hooks_commit(txn, by, Kind::Add, id, None, Some(entry), &[])?;
        Ok(id)
    }

    /// Replaces the entry `id`, `old`, with `entry` at the same DN; `changes` are a modify's as
    /// requested (empty for a received entry).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_changed(
        &self,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        id: u64,
        old: &Entry,
        entry: &mut Entry,
        changes: &[Change],
        check: Check,
    ) -> Result<(), LdapError> {
        let kind = Kind::Modify;
        self.store_replaced(txn, by, kind, id, old, entry, changes, check)?;
        self.hooks_commit(txn, by, kind, id, Some(old), Some(entry), changes)
    }

    /// The steps a modify and a rename share: the prepare hooks, the schema check when asked, the
    /// entry stored over `old` and its index keys.
    #[allow(clippy::too_many_arguments)]
    fn store_replaced(
        &self,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        kind: Kind,
        id: u64,
        old: &Entry,
        entry: &mut Entry,
        changes: &[Change],
        check: Check,
    ) -> Result<(), LdapError> {
        self.hooks_prepare(txn, by, kind, id, Some(old), Some(entry), changes)?;
        // The attributes' types, looked up once for the check and the encoding.
        let types = attribute_types(self.schema(), entry);
        if check == Check::AfterHooks {
            check_entry_typed(self.schema(), entry, &types)?;
        }
        let mut bytes = Vec::with_capacity(512);
        encode_entry_typed(self.schema(), entry, &types, &mut bytes);
        txn.put_entry(id, &bytes).map_err(failed)?;
        self.reindex(txn, id, Some(old), Some(entry))
    }

    /// Renames (and perhaps moves) the entry `id`, `old`, to `entry`'s DN, now a child of `parent_id`
    /// (it was one of `old_parent_id`); its descendants follow. A new DN that differs only in spelling
    /// rewrites the descendants' stored DNs too, which are built from it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_renamed(
        &self,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        id: u64,
        old: &Entry,
        entry: &mut Entry,
        (old_parent_id, parent_id): (u64, u64),
        check: Check,
    ) -> Result<(), LdapError> {
        self.store_replaced(txn, by, Kind::Rename, id, old, entry, &[], check)?;
        if entry.ndn != old.ndn {
            self.move_subtree(txn, &old.ndn, &entry.ndn, &entry.dn, id)?;
            if parent_id != old_parent_id {
                txn.del_child(old_parent_id, id).map_err(failed)?;
                txn.add_child(parent_id, id).map_err(failed)?;
            }
        } else if entry.dn.to_string() != old.dn.to_string()
            && txn.has_children(id).map_err(failed)?
        {
            self.move_subtree(txn, &old.ndn, &entry.ndn, &entry.dn, id)?;
        }
        self.hooks_commit(txn, by, Kind::Rename, id, Some(old), Some(entry), &[])
    }

    /// Removes the leaf entry `id`, `entry`, a child of `parent_id`.
    pub(crate) fn store_removed(
        &self,
        txn: &mut WriteTxn<'_>,
        by: By<'_>,
        id: u64,
        entry: &Entry,
        parent_id: u64,
    ) -> Result<(), LdapError> {
        self.hooks_prepare(txn, by, Kind::Delete, id, Some(entry), None, &[])?;
        self.reindex(txn, id, Some(entry), None)?;
        txn.del_entry(id).map_err(failed)?;
        txn.del_dn(&dn_key(&entry.ndn)).map_err(failed)?;
        txn.del_child(parent_id, id).map_err(failed)?;
        self.hooks_commit(txn, by, Kind::Delete, id, Some(entry), None, &[])
    }

    pub(crate) fn put(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        entry: &Entry,
    ) -> Result<(), LdapError> {
        let mut bytes = Vec::with_capacity(512);
        encode_entry(self.schema(), entry, &mut bytes);
        txn.put_entry(id, &bytes).map_err(failed)
    }

    fn index_keys(&self, specs: &Resolved<'_>, entry: &Entry) -> Vec<BTreeSet<Vec<u8>>> {
        specs
            .keys(entry)
            .into_iter()
            .map(|keys| keys.into_iter().collect())
            .collect()
    }

    /// Adds the index keys of `new` that `old` lacks and removes those `old` has that `new` lacks.
    /// When both exist, only the values that changed are turned into keys: adding one member to a
    /// group of 100 000 costs one value, not the group.
    pub(crate) fn reindex(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        old: Option<&Entry>,
        new: Option<&Entry>,
    ) -> Result<(), LdapError> {
        // Building indexes too: from the moment one is added, every write keeps it.
        let specs = self.maintained_indexes();
        let resolved = Resolved::new(self.schema(), &specs);
        let (Some(old), Some(new)) = (old, new) else {
            let empty = || vec![BTreeSet::new(); specs.len()];
            let old_keys = old
                .map(|e| self.index_keys(&resolved, e))
                .unwrap_or_else(empty);
            let new_keys = new
                .map(|e| self.index_keys(&resolved, e))
                .unwrap_or_else(empty);
            for ((spec, before), after) in specs.iter().zip(&old_keys).zip(&new_keys) {
                for key in before.difference(after) {
                    txn.index_del(&spec.attr, key, id).map_err(failed)?;
                }
                for key in after.difference(before) {
                    txn.index_add(&spec.attr, key, id).map_err(failed)?;
                }
            }
            return Ok(());
        };
        let (gone, came) = changed_values(old, new);
        if gone.attrs.is_empty() && came.attrs.is_empty() {
            return Ok(());
        }
        let gone_keys = self.index_keys(&resolved, &gone);
        let came_keys = self.index_keys(&resolved, &came);
        for ((spec, gone), came) in specs.iter().zip(&gone_keys).zip(&came_keys) {
            // A key of a removed value may still come from a value that stayed (another spelling of
            // it, another attribute under the same index, the attribute's presence): only keys the
            // whole new entry lacks go. Which ones those are is plain without looking at the other
            // values when the index covers one attribute type held without options: its equality
            // keys are distinct values (no two values of an attribute are equal), and its presence
            // key stays while any value does.
            let lost: Vec<&Vec<u8>> = gone.iter().filter(|k| !came.contains(*k)).collect();
            // (Asked only when a key may go: the question walks both entries.)
            let kept: BTreeSet<Vec<u8>> = if lost.is_empty() {
                BTreeSet::new()
            } else {
                match self.plain_index(spec, old, new) {
                    // Only equality keys, which go, and the presence key, which stays with any value.
                    Some(true) => BTreeSet::from([vec![PRESENCE_KEY]]),
                    Some(false) => BTreeSet::new(),
                    None => entry_keys(self.schema(), spec, new).into_iter().collect(),
                }
            };
            for key in lost {
                if !kept.contains(key) {
                    txn.index_del(&spec.attr, key, id).map_err(failed)?;
                }
            }
            // Adding a key the entry already has is a no-op.
            for key in came {
                txn.index_add(&spec.attr, key, id).map_err(failed)?;
            }
        }
        Ok(())
    }

    /// For an index of equality and presence keys on one attribute type without subtypes, held by
    /// neither entry under an option: whether `new` still holds a value of it. None for any other
    /// index, whose kept keys come from the whole new entry.
    fn plain_index(&self, spec: &IndexSpec, old: &Entry, new: &Entry) -> Option<bool> {
        if spec.sub || spec.ord || spec.approx {
            return None;
        }
        let schema = self.schema();
        let at = schema.attribute_type(&spec.attr)?;
        // objectClass values also give the keys of their superclasses, which another class may share.
        if at.has_subtypes() || at.oid == OBJECT_CLASS {
            return None;
        }
        // Without subtypes, only descriptions naming the type itself are of it: no lookup needed.
        let of_type = |desc: &str| at.is_named(split_stored(desc).0);
        let optioned = |e: &Entry| {
            e.attrs.iter().any(|a| {
                // A description with a ';' (options, even empty ones) of the type.
                let name = split_stored(&a.desc).0;
                name.len() < a.desc.len() && at.is_named(name)
            })
        };
        if optioned(old) || optioned(new) {
            return None;
        }
        Some(
            new.attrs
                .iter()
                .any(|a| of_type(&a.desc) && !a.values.is_empty()),
        )
    }

    /// Rewrites the dn2id keys of the renamed entry and every descendant, and the DNs stored in descendants.
    pub(crate) fn move_subtree(
        &self,
        txn: &mut WriteTxn<'_>,
        old_ndn: &NormDn,
        new_ndn: &NormDn,
        new_dn: &Dn,
        id: u64,
    ) -> Result<(), LdapError> {
        let old_key = dn_key(old_ndn);
        let new_key = dn_key(new_ndn);
        let members = txn.subtree(&old_key).map_err(failed)?;
        let depth = old_ndn.rdns().len();
        for (key, member) in members {
            let suffix_part = key.get(old_key.len()..).unwrap_or(&[]).to_vec();
            txn.del_dn(&key).map_err(failed)?;
            let mut moved = new_key.clone();
            moved.extend_from_slice(&suffix_part);
            txn.put_dn(&moved, member).map_err(failed)?;
            if member == id {
                continue;
            }
            let bytes = txn.get_entry(member).map_err(failed)?.ok_or_else(|| {
                LdapError::new(ResultCode::Other, "dn2id points to a missing entry")
            })?;
            let stored: StoredEntry<'_> = Directory::parse_stored(bytes)?;
            let mut entry = stored
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            let own = entry.dn.rdns.len().saturating_sub(depth);
            let mut dn = Dn {
                rdns: entry.dn.rdns.get(..own).unwrap_or(&[]).to_vec(),
            };
            dn.rdns.extend(new_dn.rdns.iter().cloned());
            let mut ndn = new_ndn.clone();
            for rdn in entry.ndn.rdns().get(..own).unwrap_or(&[]).iter().rev() {
                ndn = ndn.child(rdn);
            }
            entry.dn = dn;
            entry.ndn = ndn;
            self.put(txn, member, &entry)?;
        }
        Ok(())
    }
}

/// The values `old` has that `new` lacks and those `new` has that `old` lacks, attribute by attribute
/// (byte for byte), as two entries without a name.
///
/// A write keeps the order of the values it leaves and appends what it adds, so one walk in step
/// through both lists finds the difference without hashing every value of a large attribute. When the
/// order changed (a replace), a value may come out on both sides: it then counts as neither removed nor
/// added, since the callers compare the two sides' keys.
fn changed_values(old: &Entry, new: &Entry) -> (Entry, Entry) {
    // Index keys come from the attributes alone: the two sides need no name.
    let empty = || Entry {
        dn: Dn::default(),
        ndn: NormDn::root(),
        attrs: Vec::new(),
    };
    let (mut gone, mut came) = (empty(), empty());
    let push = |into: &mut Entry, desc: &str, values: Vec<Vec<u8>>| {
        if !values.is_empty() {
            into.attrs.push(Attribute {
                desc: desc.to_string(),
                values,
            });
        }
    };
    // A write keeps the attributes in their order (a replaced one may move to the end): each is
    // looked for where the last one was found, then everywhere, so the usual walk compares a few
    // descriptions per attribute instead of searching the whole other entry each time.
    let mut in_new = Cursor::default();
    for attr in &old.attrs {
        let Some(now) = in_new.find(&new.attrs, &attr.desc) else {
            push(&mut gone, &attr.desc, attr.values.clone());
            continue;
        };
        if attr.values == now.values {
            continue;
        }
        let (mut removed, mut j) = (Vec::new(), 0);
        for value in &attr.values {
            if now.values.get(j) == Some(value) {
                j += 1;
            } else {
                removed.push(value.clone());
            }
        }
        push(&mut gone, &attr.desc, removed);
        push(
            &mut came,
            &attr.desc,
            now.values.get(j..).unwrap_or(&[]).to_vec(),
        );
    }
    let mut in_old = Cursor::default();
    for attr in &new.attrs {
        if in_old.find(&old.attrs, &attr.desc).is_none() {
            push(&mut came, &attr.desc, attr.values.clone());
        }
    }
    (gone, came)
}

/// Where the last attribute looked for was found in a list of attributes.
#[derive(Default)]
struct Cursor(usize);

impl Cursor {
    /// The attribute named `desc` (any case) in `attrs`: next to the last one found, else anywhere.
    fn find<'a>(&mut self, attrs: &'a [Attribute], desc: &str) -> Option<&'a Attribute> {
        let named = |a: &Attribute| a.desc == desc || a.desc.eq_ignore_ascii_case(desc);
        let near = (self.0..attrs.len().min(self.0 + 2)).find(|&k| attrs.get(k).is_some_and(named));
        let at = near.or_else(|| attrs.iter().position(named))?;
        self.0 = at + 1;
        attrs.get(at)
    }
}
