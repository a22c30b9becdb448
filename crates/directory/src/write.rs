//! Writes: add, delete, modify and modifyDN, each run in one nested transaction on the store's writer
//! thread: locate the target, ask the request's [`Guard`], apply the change, run the [`Pipeline`]'s
//! hooks around storing it (docs/design/write-pipeline.md).

use std::collections::BTreeSet;
use std::sync::Arc;

use canopy_core::check::{check_entry, structural_class};
use canopy_core::index::{entry_keys, entry_keys_all};
use canopy_core::modify::{apply_modifications, modified, ModifyOptions};
use canopy_core::wire::{encode_entry, StoredEntry};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, StoreError, WriteTxn};
use canopy_proto::{Change, Dn, ModifyOperation, PartialAttribute, Rdn, ResultCode};
use canopy_schema::NormDn;

use crate::database::Directory;
use crate::error::store_error;
use crate::keys::dn_key;
use crate::opattrs::Stamp;
use crate::pipeline::{Event, Kind, Proposed};

/// The first byte of an equality index key, and the presence key (docs/design/index-keys.md).
const EQUALITY_KEY: u8 = 0x02;
const PRESENCE_KEY: u8 = 0x01;
/// objectClass, whose equality keys are not one per value.
const OBJECT_CLASS: &str = "2.5.4.0";

/// What a write is allowed to do: the frontend's access control, asked inside the write's transaction
/// once the target is found, as slapd's back-mdb asks `access_allowed`.
pub trait Guard: Send + Sync {
    /// The requester's DN as creatorsName and modifiersName record it.
    fn requester(&self) -> &str;

    /// Allows `action` or refuses it with the error the client gets.
    fn authorize(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError>;

    /// Whether a modify may change NO-USER-MODIFICATION attributes: only for writes the server makes
    /// itself (cn=Monitor's counters), never for a client's request.
    fn server_internal(&self) -> bool {
        false
    }

    /// A noSuchObject error as the requester may see it (the matched DN only where disclosed).
    fn conceal(&self, dir: &Directory, txn: &WriteTxn<'_>, error: LdapError) -> LdapError {
        let _ = (dir, txn);
        error
    }
}

/// What a write asks its [`Guard`] for.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    Add(&'a Entry),
    Delete(&'a Entry),
    Modify(&'a Entry, &'a [Change]),
    Rename {
        entry: &'a Entry,
        /// The new superior, when the entry moves.
        new_parent: Option<&'a NormDn>,
        /// The attribute types of the new RDN.
        rdn_attrs: &'a [&'a str],
    },
}

/// The guard of offline tools and tests: everything is allowed, recorded as done by `dn`.
pub struct Unrestricted {
    pub dn: String,
}

impl Guard for Unrestricted {
    fn requester(&self) -> &str {
        &self.dn
    }

    fn authorize(&self, _: &Directory, _: &WriteTxn<'_>, _: Action<'_>) -> Result<(), LdapError> {
        Ok(())
    }
}

/// A write as the frontend hands it over: the operation and who may do what.
#[derive(Clone)]
pub struct WriteRequest {
    pub op: WriteOp,
    pub guard: Arc<dyn Guard>,
}

/// One write operation, fully parsed; run by [`Directory::write`].
#[derive(Debug, Clone)]
pub enum WriteOp {
    /// A complete entry, operational attributes included.
    Add(Entry),
    Delete {
        dn: Dn,
        ndn: NormDn,
    },
    Modify {
        dn: Dn,
        ndn: NormDn,
        changes: Vec<Change>,
    },
    ModifyDn(ModifyDn),
}

#[derive(Debug, Clone)]
pub struct ModifyDn {
    pub dn: Dn,
    pub ndn: NormDn,
    pub new_rdn: Rdn,
    pub delete_old_rdn: bool,
    pub new_superior: Option<(Dn, NormDn)>,
}

const MAP_FULL_RETRIES: usize = 5;

/// What every step of one write shares.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    guard: &'a dyn Guard,
    stamp: &'a Stamp,
}

/// Why a write closure gave up.
enum Retry {
    Ldap(LdapError),
    MapFull,
}

thread_local! {
    /// Set when a storage call inside a write closure met a full map. Closures run one at a time on the
    /// store's single writer thread, so the flag belongs to the closure that is running.
    static MAP_FULL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Maps a storage failure inside a write closure, noting a full map so the write is retried.
fn failed(error: StoreError) -> LdapError {
    if matches!(error, StoreError::MapFull) {
        MAP_FULL.with(|seen| seen.set(true));
    }
    store_error(error)
}

impl Directory {
    /// Runs a write and returns once it is durable (or failed). Existence is checked before the guard,
    /// as slapd does, so a missing entry is noSuchObject for everyone.
    pub async fn write(&self, request: WriteRequest) -> Result<(), LdapError> {
        // The store grows the map before it fills; a write that still meets a full map (a reader held the
        // growth off) is run again after the growth, so no client ever sees MDB_MAP_FULL.
        for _ in 0..MAP_FULL_RETRIES {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let dir = self.clone();
            let request = request.clone();
            self.store().write_then(
                move |txn: &mut WriteTxn<'_>| {
                    MAP_FULL.with(|seen| seen.set(false));
                    crate::pipeline::clear_after_commit();
                    // Taken here, on the writer thread: CSNs ascend in commit order.
                    let stamp = Stamp::now();
                    let result = dir.apply(txn, request.op, &*request.guard, &stamp);
                    let actions = crate::pipeline::take_after_commit();
                    match MAP_FULL.with(|seen| seen.get()) {
                        true => Err(Retry::MapFull),
                        false => result.map(|()| actions).map_err(Retry::Ldap),
                    }
                },
                move |result| {
                    // On the writer thread, once the group is durable: the hooks' records, in commit order.
                    let result = result.map(|outcome| {
                        outcome.map(|actions| {
                            for action in actions {
                                action();
                            }
                        })
                    });
                    let _ = tx.send(result);
                },
            );
            match rx.await {
                Ok(Ok(Ok(()))) => return Ok(()),
                Ok(Ok(Err(Retry::Ldap(e)))) => return Err(e),
                Ok(Ok(Err(Retry::MapFull))) | Ok(Err(StoreError::MapFull)) => continue,
                Ok(Err(store)) => return Err(store_error(store)),
                Err(_) => return Err(LdapError::new(ResultCode::Unavailable, "writer stopped")),
            }
        }
        Err(LdapError::new(
            ResultCode::Busy,
            "the database could not grow in time; try again",
        ))
    }

    fn apply(
        &self,
        txn: &mut WriteTxn<'_>,
        op: WriteOp,
        guard: &dyn Guard,
        stamp: &Stamp,
    ) -> Result<(), LdapError> {
        let ctx = Ctx { guard, stamp };
        match op {
            WriteOp::Add(entry) => self.add(txn, entry, ctx),
            WriteOp::Delete { dn, ndn } => self.delete(txn, &dn, &ndn, ctx),
            WriteOp::Modify { dn, ndn, changes } => self.modify(txn, &dn, &ndn, &changes, ctx),
            WriteOp::ModifyDn(m) => self.modify_dn(txn, m, ctx),
        }
    }

    /// Runs the pipeline's prepare hooks on a change about to be stored.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        txn: &WriteTxn<'_>,
        ctx: Ctx<'_>,
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
            stamp: ctx.stamp,
            requester: ctx.guard.requester(),
        };
        self.pipeline().prepare(self, txn, &mut proposed)
    }

    /// Runs the pipeline's commit hooks on a change just stored.
    #[allow(clippy::too_many_arguments)]
    fn committed(
        &self,
        txn: &mut WriteTxn<'_>,
        ctx: Ctx<'_>,
        kind: Kind,
        id: u64,
        old: Option<&Entry>,
        new: Option<&Entry>,
        changes: &[Change],
    ) -> Result<(), LdapError> {
        let event = Event {
            kind,
            id,
            old,
            new,
            changes,
            stamp: ctx.stamp,
            requester: ctx.guard.requester(),
        };
        self.pipeline().commit(self, txn, &event)
    }

    /// Replaces the stored entry `id` (`old`) with `new`, keeping its index keys in step: for hooks that
    /// change other entries inside a write. The DN must not change.
    pub fn rewrite(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        old: &Entry,
        new: &Entry,
    ) -> Result<(), LdapError> {
        self.put(txn, id, new)?;
        self.reindex(txn, id, Some(old), Some(new))
    }

    fn load(
        &self,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
        dn: &Dn,
        ctx: Ctx<'_>,
    ) -> Result<(u64, Entry), LdapError> {
        let id = txn.get_id(&dn_key(ndn)).map_err(failed)?.ok_or_else(|| {
            ctx.guard
                .conceal(self, txn, self.no_such_object(txn, ndn, dn))
        })?;
        let bytes = txn
            .get_entry(id)
            .map_err(failed)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "dn2id points to a missing entry"))?;
        let entry = Directory::parse_stored(bytes)?.to_entry().map_err(|e| {
            tracing::error!(error = %e, "corrupt entry");
            LdapError::new(ResultCode::Other, "stored entry is unreadable")
        })?;
        Ok((id, entry))
    }

    fn put(&self, txn: &mut WriteTxn<'_>, id: u64, entry: &Entry) -> Result<(), LdapError> {
        let mut bytes = Vec::with_capacity(512);
        encode_entry(self.schema(), entry, &mut bytes);
        txn.put_entry(id, &bytes).map_err(failed)
    }

    fn index_keys(&self, entry: &Entry) -> Vec<BTreeSet<Vec<u8>>> {
        entry_keys_all(self.schema(), self.indexes(), entry)
            .into_iter()
            .map(|keys| keys.into_iter().collect())
            .collect()
    }

    /// Adds the index keys of `new` that `old` lacks and removes those `old` has that `new` lacks.
    /// When both exist, only the values that changed are turned into keys: adding one member to a
    /// group of 100 000 costs one value, not the group.
    fn reindex(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        old: Option<&Entry>,
        new: Option<&Entry>,
    ) -> Result<(), LdapError> {
        let (Some(old), Some(new)) = (old, new) else {
            let empty = || vec![BTreeSet::new(); self.indexes().len()];
            let old_keys = old.map(|e| self.index_keys(e)).unwrap_or_else(empty);
            let new_keys = new.map(|e| self.index_keys(e)).unwrap_or_else(empty);
            for ((spec, before), after) in self.indexes().iter().zip(&old_keys).zip(&new_keys) {
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
        let gone_keys = self.index_keys(&gone);
        let came_keys = self.index_keys(&came);
        for ((spec, gone), came) in self.indexes().iter().zip(&gone_keys).zip(&came_keys) {
            // A key of a removed value may still come from a value that stayed (another spelling of
            // it, another attribute under the same index, the attribute's presence): only keys the
            // whole new entry lacks go. Which ones those are is plain without looking at the other
            // values when the index covers one attribute type held without options: its equality
            // keys are distinct values (no two values of an attribute are equal), and its presence
            // key stays while any value does.
            let lost: Vec<&Vec<u8>> = gone.iter().filter(|k| !came.contains(*k)).collect();
            let kept: BTreeSet<Vec<u8>> = match (lost.is_empty(), self.plain_index(spec, old, new))
            {
                (true, _) => BTreeSet::new(),
                // Only equality keys, which go, and the presence key, which stays with any value.
                (false, Some(true)) => BTreeSet::from([vec![PRESENCE_KEY]]),
                (false, Some(false)) => BTreeSet::new(),
                (false, None) => entry_keys(self.schema(), spec, new).into_iter().collect(),
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

    fn add(&self, txn: &mut WriteTxn<'_>, mut entry: Entry, ctx: Ctx<'_>) -> Result<(), LdapError> {
        let key = dn_key(&entry.ndn);
        let parent_id = if entry.ndn == *self.suffix() {
            0
        } else {
            let parent_ndn = entry.ndn.parent().unwrap_or_else(NormDn::root);
            let parent_dn = entry.dn.parent();
            match txn.get_id(&dn_key(&parent_ndn)).map_err(failed)? {
                Some(id) => id,
                None => {
                    let missing = self.no_such_object(txn, &parent_ndn, &parent_dn);
                    return Err(ctx.guard.conceal(self, txn, missing));
                }
            }
        };
        ctx.guard.authorize(self, txn, Action::Add(&entry))?;
        if txn.get_id(&key).map_err(failed)?.is_some() {
            return Err(LdapError::new(ResultCode::EntryAlreadyExists, ""));
        }
        let id = txn.next_id().map_err(failed)?;
        self.prepare(txn, ctx, Kind::Add, id, None, Some(&mut entry), &[])?;
        self.put(txn, id, &entry)?;
        txn.put_dn(&key, id).map_err(failed)?;
        txn.add_child(parent_id, id).map_err(failed)?;
        self.reindex(txn, id, None, Some(&entry))?;
        self.committed(txn, ctx, Kind::Add, id, None, Some(&entry), &[])
    }

    fn delete(
        &self,
        txn: &mut WriteTxn<'_>,
        dn: &Dn,
        ndn: &NormDn,
        ctx: Ctx<'_>,
    ) -> Result<(), LdapError> {
        let (id, entry) = self.load(txn, ndn, dn, ctx)?;
        ctx.guard.authorize(self, txn, Action::Delete(&entry))?;
        if txn.has_children(id).map_err(failed)? {
            return Err(LdapError::new(
                ResultCode::NotAllowedOnNonLeaf,
                "subordinate objects must be deleted first",
            ));
        }
        let parent_id = self.parent_id(txn, ndn)?;
        self.prepare(txn, ctx, Kind::Delete, id, Some(&entry), None, &[])?;
        self.reindex(txn, id, Some(&entry), None)?;
        txn.del_entry(id).map_err(failed)?;
        txn.del_dn(&dn_key(ndn)).map_err(failed)?;
        txn.del_child(parent_id, id).map_err(failed)?;
        self.committed(txn, ctx, Kind::Delete, id, Some(&entry), None, &[])
    }

    fn parent_id(&self, txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<u64, LdapError> {
        if ndn == self.suffix() {
            return Ok(0);
        }
        let parent = ndn.parent().unwrap_or_else(NormDn::root);
        txn.get_id(&dn_key(&parent))
            .map_err(failed)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "entry without a parent"))
    }

    fn modify(
        &self,
        txn: &mut WriteTxn<'_>,
        dn: &Dn,
        ndn: &NormDn,
        changes: &[Change],
        ctx: Ctx<'_>,
    ) -> Result<(), LdapError> {
        let (id, old) = self.load(txn, ndn, dn, ctx)?;
        ctx.guard
            .authorize(self, txn, Action::Modify(&old, changes))?;
        let options = ModifyOptions {
            absent_adds: self.absent_adds(txn, id, &old, changes)?,
            allow_no_user_modification: ctx.guard.server_internal(),
        };
        let mut entry = modified(self.schema(), old.clone(), changes, &options)?;
        check_entry(self.schema(), &entry)?;
        let kind = Kind::Modify;
        self.prepare(txn, ctx, kind, id, Some(&old), Some(&mut entry), changes)?;
        self.put(txn, id, &entry)?;
        self.reindex(txn, id, Some(&old), Some(&entry))?;
        self.committed(txn, ctx, kind, id, Some(&old), Some(&entry), changes)
    }

    /// For an index of equality and presence keys on one attribute type without subtypes, held by
    /// neither entry under an option: whether `new` still holds a value of it. None for any other
    /// index, whose kept keys come from the whole new entry.
    fn plain_index(
        &self,
        spec: &canopy_core::index::IndexSpec,
        old: &Entry,
        new: &Entry,
    ) -> Option<bool> {
        if spec.sub || spec.ord || spec.approx {
            return None;
        }
        let schema = self.schema();
        let at = schema.attribute_type(&spec.attr)?;
        // objectClass values also give the keys of their superclasses, which another class may share.
        if at.has_subtypes() || at.oid == OBJECT_CLASS {
            return None;
        }
        let of_type = |desc: &str| {
            schema
                .attribute_type(desc.split(';').next().unwrap_or(desc))
                .is_some_and(|t| std::ptr::eq(t, at))
        };
        let optioned = |e: &Entry| {
            e.attrs
                .iter()
                .any(|a| of_type(&a.desc) && a.desc.contains(';'))
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

    /// The Add changes of a modify whose values the entry does not hold, as its equality index says:
    /// the only change to a type without subtypes, held by the entry under no option, indexed for
    /// equality by its own name. Anything else (or a value the index may hold: an equal value, a key
    /// cut short) is left to the full comparison.
    fn absent_adds(
        &self,
        txn: &WriteTxn<'_>,
        id: u64,
        old: &Entry,
        changes: &[Change],
    ) -> Result<Vec<usize>, LdapError> {
        let schema = self.schema();
        let type_of = |desc: &str| schema.attribute_type(desc.split(';').next().unwrap_or(desc));
        let mut absent = Vec::new();
        for (i, change) in changes.iter().enumerate() {
            let name = &change.modification.name;
            let values = &change.modification.values;
            if change.operation != ModifyOperation::Add || values.is_empty() || name.contains(';') {
                continue;
            }
            let Some(at) = schema.attribute_type(name) else {
                continue;
            };
            if at.has_subtypes() || at.equality.is_none() || at.oid == OBJECT_CLASS {
                continue;
            }
            let same = |desc: &str| type_of(desc).is_some_and(|t| std::ptr::eq(t, at));
            let others = changes
                .iter()
                .enumerate()
                .any(|(j, c)| j != i && same(&c.modification.name));
            let variants = old
                .attrs
                .iter()
                .any(|a| same(&a.desc) && a.desc.contains(';'));
            if others || variants {
                continue;
            }
            let Some(spec) = self.indexes().iter().find(|s| s.eq && same(&s.attr)) else {
                continue;
            };
            let mut all_absent = true;
            for value in values {
                let one = Entry {
                    dn: old.dn.clone(),
                    ndn: old.ndn.clone(),
                    attrs: vec![Attribute {
                        desc: at.name().to_string(),
                        values: vec![value.clone()],
                    }],
                };
                let keys: Vec<Vec<u8>> = entry_keys(schema, spec, &one)
                    .into_iter()
                    .filter(|k| k.first() == Some(&EQUALITY_KEY))
                    .collect();
                let [key] = keys.as_slice() else {
                    all_absent = false;
                    break;
                };
                if txn
                    .index_get(&spec.attr, key)
                    .map_err(failed)?
                    .contains(&id)
                {
                    all_absent = false;
                    break;
                }
            }
            if all_absent {
                absent.push(i);
            }
        }
        Ok(absent)
    }

    fn modify_dn(
        &self,
        txn: &mut WriteTxn<'_>,
        m: ModifyDn,
        ctx: Ctx<'_>,
    ) -> Result<(), LdapError> {
        let (id, old) = self.load(txn, &m.ndn, &m.dn, ctx)?;
        if m.ndn == *self.suffix() {
            return Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "cannot rename the suffix entry",
            ));
        }
        let moved_to = m.new_superior.as_ref().map(|(_, ndn)| ndn);
        let rdn_attrs: Vec<&str> = m.new_rdn.avas.iter().map(|a| a.attr.as_str()).collect();
        let action = Action::Rename {
            entry: &old,
            new_parent: moved_to,
            rdn_attrs: &rdn_attrs,
        };
        ctx.guard.authorize(self, txn, action)?;
        let old_parent_id = self.parent_id(txn, &m.ndn)?;
        let (parent_dn, parent_ndn, parent_id) = match &m.new_superior {
            Some((sup_dn, sup_ndn)) => {
                if !self.holds(sup_ndn) {
                    return Err(LdapError::new(
                        ResultCode::UnwillingToPerform,
                        "new superior is outside the naming context",
                    ));
                }
                if m.ndn.is_suffix_of(sup_ndn) {
                    return Err(LdapError::new(
                        ResultCode::UnwillingToPerform,
                        "cannot place an entry below itself",
                    ));
                }
                let sup_id = match txn.get_id(&dn_key(sup_ndn)).map_err(failed)? {
                    Some(id) => id,
                    None => {
                        return Err(LdapError::new(
                            ResultCode::NoSuchObject,
                            "new superior not found",
                        ))
                    }
                };
                (sup_dn.clone(), sup_ndn.clone(), sup_id)
            }
            None => (
                m.dn.parent(),
                m.ndn.parent().unwrap_or_else(NormDn::root),
                old_parent_id,
            ),
        };
        let rdn_dn = Dn {
            rdns: vec![m.new_rdn.clone()],
        };
        let rdn_ndn = self
            .schema()
            .normalize_dn(&rdn_dn)
            .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN"))?;
        let new_rdn_norm = rdn_ndn.rdns().first().cloned().unwrap_or_default();
        let new_ndn = parent_ndn.child(&new_rdn_norm);
        let mut new_dn = parent_dn.clone();
        new_dn.rdns.insert(0, m.new_rdn.clone());
        let same_dn = new_ndn == m.ndn;
        if !same_dn && txn.get_id(&dn_key(&new_ndn)).map_err(failed)?.is_some() {
            return Err(LdapError::new(ResultCode::EntryAlreadyExists, ""));
        }

        // New RDN values are added, old ones removed when asked, through the ordinary modify rules.
        let mut changes = Vec::new();
        for ava in &m.new_rdn.avas {
            changes.push(Change {
                operation: ModifyOperation::Add,
                modification: PartialAttribute {
                    name: ava.attr.clone(),
                    values: vec![ava.value.clone()],
                },
            });
        }
        let mut entry = old.clone();
        entry.dn = new_dn.clone();
        entry.ndn = new_ndn.clone();
        apply_rdn_changes(self, &mut entry, &changes, false)?;
        if m.delete_old_rdn {
            if let Some(old_rdn) = m.dn.rdns.first() {
                let mut removals = Vec::new();
                for ava in &old_rdn.avas {
                    let still_named = m.new_rdn.avas.iter().any(|n| {
                        n.attr.eq_ignore_ascii_case(&ava.attr)
                            && same_value(self, &n.attr, &n.value, &ava.value)
                    });
                    if !still_named {
                        removals.push(Change {
                            operation: ModifyOperation::Delete,
                            modification: PartialAttribute {
                                name: ava.attr.clone(),
                                values: vec![ava.value.clone()],
                            },
                        });
                    }
                }
                apply_rdn_changes(self, &mut entry, &removals, true)?;
            }
        }
        check_entry(self.schema(), &entry)?;
        let kind = Kind::Rename;
        self.prepare(txn, ctx, kind, id, Some(&old), Some(&mut entry), &[])?;
        self.put(txn, id, &entry)?;
        self.reindex(txn, id, Some(&old), Some(&entry))?;
        if !same_dn {
            self.move_subtree(txn, &m.ndn, &new_ndn, &new_dn, id)?;
            if parent_id != old_parent_id {
                txn.del_child(old_parent_id, id).map_err(failed)?;
                txn.add_child(parent_id, id).map_err(failed)?;
            }
        }
        self.committed(txn, ctx, kind, id, Some(&old), Some(&entry), &[])
    }

    /// Rewrites the dn2id keys of the renamed entry and every descendant, and the DNs stored in descendants.
    fn move_subtree(
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

fn same_value(dir: &Directory, attr: &str, a: &[u8], b: &[u8]) -> bool {
    let schema = dir.schema();
    match schema.attribute_type(attr).and_then(|at| at.equality) {
        Some(rule) => match (
            schema.normalize_value(rule, a),
            schema.normalize_value(rule, b),
        ) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
        None => a == b,
    }
}

/// Applies the single-value RDN changes whose value is present (`present`) or absent (`!present`) in
/// the entry: new RDN values are added unless already there (modifyDN must not fail on that), old ones
/// removed only when there. Removing a naming value passes the RDN check: the entry's DN already changed.
fn apply_rdn_changes(
    dir: &Directory,
    entry: &mut Entry,
    changes: &[Change],
    present: bool,
) -> Result<(), LdapError> {
    for change in changes {
        let name = &change.modification.name;
        let Some(value) = change.modification.values.first() else {
            continue;
        };
        let there = entry_values(dir, entry, name)
            .iter()
            .any(|v| same_value(dir, name, v, value));
        if there == present {
            apply_modifications(dir.schema(), entry, std::slice::from_ref(change))?;
        }
    }
    Ok(())
}

fn entry_values(dir: &Directory, entry: &Entry, name: &str) -> Vec<Vec<u8>> {
    let canonical = dir
        .schema()
        .attribute_type(name)
        .map(|at| at.name().to_string())
        .unwrap_or_else(|| name.to_string());
    entry
        .attrs
        .iter()
        .filter(|a: &&Attribute| a.desc.eq_ignore_ascii_case(&canonical))
        .flat_map(|a| a.values.clone())
        .collect()
}

/// The values `old` has that `new` lacks and those `new` has that `old` lacks, attribute by attribute
/// (byte for byte), as two entries with `new`'s name.
///
/// A write keeps the order of the values it leaves and appends what it adds, so one walk in step
/// through both lists finds the difference without hashing every value of a large attribute. When the
/// order changed (a replace), a value may come out on both sides: it then counts as neither removed nor
/// added, since the callers compare the two sides' keys.
fn changed_values(old: &Entry, new: &Entry) -> (Entry, Entry) {
    let empty = || Entry {
        dn: new.dn.clone(),
        ndn: new.ndn.clone(),
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
    for attr in &old.attrs {
        let Some(now) = new.get(&attr.desc) else {
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
    for attr in &new.attrs {
        if old.get(&attr.desc).is_none() {
            push(&mut came, &attr.desc, attr.values.clone());
        }
    }
    (gone, came)
}

/// Stamps the structural class on a new entry.
pub fn structural(dir: &Directory, entry: &Entry) -> Result<String, LdapError> {
    structural_class(dir.schema(), entry)
}
