//! Changes received from a syncrepl provider (RFC 4533), applied by a consumer: entries found by their
//! entryUUID, a same-UUID new DN turned into a rename, whole subtrees deleted leaf first, and the
//! provider's cookie stored with the changes it covers, all in one write transaction
//! (docs/design/replication.md).

use std::collections::HashSet;

use canopy_core::check::check_entry;
use canopy_core::index::entry_keys;
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::sync::{uuid_to_text, Cookie};
use canopy_proto::ResultCode;
use canopy_schema::NormDn;

use crate::database::Directory;
use crate::error::OpError;
use crate::keys::dn_key;
use crate::opattrs::Stamp;
use crate::pipeline::{Event, Kind, Origin, Proposed};
use crate::write::failed;

/// The first byte of an equality index key (docs/design/index-keys.md).
const EQUALITY_KEY: u8 = 0x02;

/// One change a provider sent.
#[derive(Debug, Clone)]
pub enum ReplicaChange {
    /// An entry in the add or modify state: the whole entry as the provider holds it, its operational
    /// attributes (entryUUID, entryCSN, timestamps, creators and modifiers) included.
    Put { uuid: [u8; 16], entry: Entry },
    /// The entry with this entryUUID is gone (with whatever is still below it here).
    Delete { uuid: [u8; 16] },
}

impl ReplicaChange {
    pub fn uuid(&self) -> &[u8; 16] {
        match self {
            ReplicaChange::Put { uuid, .. } | ReplicaChange::Delete { uuid } => uuid,
        }
    }
}

/// Changes to apply in one transaction, and the cookie that covers them (stored, and raising the
/// contextCSN, in the same transaction).
#[derive(Debug, Clone, Default)]
pub struct ReplicaBatch {
    /// The consumer's replica ID: the cookie is kept under `syncrepl/<rid>`.
    pub rid: u16,
    pub changes: Vec<ReplicaChange>,
    pub cookie: Option<Cookie>,
}

/// What a batch did.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub added: u64,
    pub modified: u64,
    pub renamed: u64,
    pub deleted: u64,
    /// Puts whose parent is not here yet: not applied; the caller offers them again with a later batch
    /// (a refresh sends entries in the provider's order, which may put a child before its parent).
    pub deferred: Vec<ReplicaChange>,
}

/// The meta key of a consumer's cookie.
fn cookie_key(rid: u16) -> Vec<u8> {
    format!("syncrepl/{rid}").into_bytes()
}

/// What a put found before it ran.
enum Outcome {
    Added,
    Modified,
    Renamed,
    /// The parent is missing.
    Orphan,
}

impl Directory {
    /// The cookie a consumer stored with the last batch it applied.
    pub fn replica_cookie(
        &self,
        txn: &impl ReadOps,
        rid: u16,
    ) -> Result<Option<Cookie>, LdapError> {
        let Some(bytes) = txn.get_meta(&cookie_key(rid)).map_err(crate::store_error)? else {
            return Ok(None);
        };
        Cookie::parse(&bytes).map(Some).map_err(|e| {
            LdapError::new(
                ResultCode::Other,
                format!("the stored syncrepl cookie of rid {rid} is damaged: {e}"),
            )
        })
    }

    /// Checks that this database can find entries by entryUUID (an equality index on it).
    pub fn check_replica(&self) -> Result<(), String> {
        let configured = self.configured_indexes();
        let uuid = configured
            .iter()
            .find(|s| s.eq && s.attr.eq_ignore_ascii_case("entryUUID"));
        uuid.map(|_| ()).ok_or_else(|| {
            "a syncrepl consumer needs an equality index on entryUUID (indexes: entryUUID eq)"
                .to_string()
        })
    }

    /// The entryUUIDs of every entry at or below `base` (to `one_level` only the base's children and
    /// the base), with each entry's depth: for the end of a present phase, which deletes what the
    /// provider did not name.
    pub fn replica_scope(
        &self,
        txn: &impl ReadOps,
        base: &NormDn,
        one_level: bool,
    ) -> Result<Vec<[u8; 16]>, LdapError> {
        let depth = base.rdns().len();
        let mut uuids = Vec::new();
        for (_, id) in txn.subtree(&dn_key(base)).map_err(crate::store_error)? {
            let Some(bytes) = txn.get_entry(id).map_err(crate::store_error)? else {
                continue;
            };
            let entry = Directory::parse_stored(bytes)?
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            if one_level && entry.ndn.rdns().len() > depth + 1 {
                continue;
            }
            if let Some(uuid) = entry_uuid(&entry) {
                uuids.push(uuid);
            }
        }
        Ok(uuids)
    }

    /// Applies a batch in one durable write: every change or none, with the cookie. Puts whose parent is
    /// missing are retried after the rest of the batch and returned in [`Applied::deferred`] when still
    /// orphaned; a batch with a cookie and orphans left fails instead, since the cookie would claim them.
    pub async fn apply_replica(&self, batch: ReplicaBatch) -> Result<Applied, LdapError> {
        self.check_replica()
            .map_err(|e| LdapError::new(ResultCode::UnwillingToPerform, e))?;
        let batch = std::sync::Arc::new(batch);
        self.run_write(move |dir, txn, stamp| -> Result<Applied, OpError> {
            dir.apply_batch(txn, &batch, stamp).map_err(OpError::from)
        })
        .await
        .map_err(OpError::into_ldap)
    }

    fn apply_batch(
        &self,
        txn: &mut WriteTxn<'_>,
        batch: &ReplicaBatch,
        stamp: &Stamp,
    ) -> Result<Applied, LdapError> {
        let mut applied = Applied::default();
        let mut pending: Vec<&ReplicaChange> = Vec::new();
        for change in &batch.changes {
            self.apply_one(txn, change, stamp, &mut applied, &mut pending)?;
        }
        // Orphans whose parent came later in the batch, until no more progress.
        loop {
            let before = pending.len();
            let round = std::mem::take(&mut pending);
            for change in round {
                self.apply_one(txn, change, stamp, &mut applied, &mut pending)?;
            }
            if pending.is_empty() || pending.len() == before {
                break;
            }
        }
        if let Some(cookie) = &batch.cookie {
            if let Some(ReplicaChange::Put { entry, .. }) = pending.first() {
                return Err(LdapError::new(
                    ResultCode::NoSuchObject,
                    format!("the parent of {} was never sent", entry.dn),
                ));
            }
            txn.put_meta(&cookie_key(batch.rid), &cookie.to_bytes())
                .map_err(failed)?;
            if self.raise_context_csn(txn, &cookie.csns)? {
                self.publish_context(&cookie.csns);
            }
        }
        applied.deferred = pending.into_iter().cloned().collect();
        Ok(applied)
    }

    fn apply_one<'c>(
        &self,
        txn: &mut WriteTxn<'_>,
        change: &'c ReplicaChange,
        stamp: &Stamp,
        applied: &mut Applied,
        pending: &mut Vec<&'c ReplicaChange>,
    ) -> Result<(), LdapError> {
        match change {
            ReplicaChange::Put { uuid, entry } => {
                match self.put_replica(txn, uuid, entry, stamp)? {
                    Outcome::Added => applied.added += 1,
                    Outcome::Modified => applied.modified += 1,
                    Outcome::Renamed => applied.renamed += 1,
                    Outcome::Orphan => pending.push(change),
                }
            }
            ReplicaChange::Delete { uuid } => {
                applied.deleted += self.delete_replica(txn, uuid, stamp)?;
            }
        }
        Ok(())
    }

    /// The entryUUID equality index, once complete.
    fn uuid_index(&self, txn: &WriteTxn<'_>) -> Option<canopy_core::index::IndexSpec> {
        self.indexes(txn)
            .iter()
            .find(|s| s.eq && s.attr.eq_ignore_ascii_case("entryUUID"))
            .cloned()
    }

    /// The entry holding `uuid`, by the entryUUID equality index.
    fn find_uuid(&self, txn: &WriteTxn<'_>, uuid: &[u8; 16]) -> Result<Option<u64>, LdapError> {
        let Some(spec) = self.uuid_index(txn) else {
            // The index is being built (configured since the last start): read every entry until
            // it is complete, slow but right.
            let ids = txn.entry_ids().map_err(failed)?;
            for id in ids {
                if let Some(entry) = self.load_id(txn, id)? {
                    if entry_uuid(&entry).as_ref() == Some(uuid) {
                        return Ok(Some(id));
                    }
                }
            }
            return Ok(None);
        };
        let probe = Entry {
            dn: canopy_proto::Dn { rdns: Vec::new() },
            ndn: NormDn::root(),
            attrs: vec![Attribute {
                desc: "entryUUID".to_string(),
                values: vec![uuid_to_text(uuid).into_bytes()],
            }],
        };
        let keys: Vec<Vec<u8>> = entry_keys(self.schema(), &spec, &probe)
            .into_iter()
            .filter(|k| k.first() == Some(&EQUALITY_KEY))
            .collect();
        for key in keys {
            for id in txn.index_get(&spec.attr, &key).map_err(failed)? {
                // The key may be cut short: compare the value itself.
                if let Some(entry) = self.load_id(txn, id)? {
                    if entry_uuid(&entry).as_ref() == Some(uuid) {
                        return Ok(Some(id));
                    }
                }
            }
        }
        Ok(None)
    }

    fn load_id(&self, txn: &WriteTxn<'_>, id: u64) -> Result<Option<Entry>, LdapError> {
        let Some(bytes) = txn.get_entry(id).map_err(failed)? else {
            return Ok(None);
        };
        Directory::parse_stored(bytes)?
            .to_entry()
            .map(Some)
            .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))
    }

    fn parent_of(&self, txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<Option<u64>, LdapError> {
        if ndn == self.suffix() {
            return Ok(Some(0));
        }
        let parent = ndn.parent().unwrap_or_else(NormDn::root);
        txn.get_id(&dn_key(&parent)).map_err(failed)
    }

    fn hooks_prepare(
        &self,
        txn: &WriteTxn<'_>,
        stamp: &Stamp,
        kind: Kind,
        id: u64,
        old: Option<&Entry>,
        new: Option<&mut Entry>,
    ) -> Result<(), LdapError> {
        let mut proposed = Proposed {
            kind,
            id,
            old,
            new,
            changes: &[],
            stamp,
            requester: "",
            origin: Origin::Replica,
        };
        self.pipeline().prepare(self, txn, &mut proposed)
    }

    #[allow(clippy::too_many_arguments)]
    fn hooks_commit(
        &self,
        txn: &mut WriteTxn<'_>,
        stamp: &Stamp,
        kind: Kind,
        id: u64,
        old: Option<&Entry>,
        new: Option<&Entry>,
    ) -> Result<(), LdapError> {
        let event = Event {
            kind,
            id,
            old,
            new,
            changes: &[],
            stamp,
            requester: "",
            origin: Origin::Replica,
        };
        self.pipeline().commit(self, txn, &event)
    }

    fn put_replica(
        &self,
        txn: &mut WriteTxn<'_>,
        uuid: &[u8; 16],
        received: &Entry,
        stamp: &Stamp,
    ) -> Result<Outcome, LdapError> {
        if !self.holds(&received.ndn) {
            return Err(LdapError::new(
                ResultCode::NoSuchObject,
                format!("{} is outside this database's suffix", received.dn),
            ));
        }
        if entry_uuid(received).as_ref() != Some(uuid) {
            return Err(LdapError::new(
                ResultCode::ProtocolError,
                format!(
                    "{}: the entry's entryUUID differs from its Sync State control's",
                    received.dn
                ),
            ));
        }
        check_entry(self.schema(), received)?;
        let Some(parent_id) = self.parent_of(txn, &received.ndn)? else {
            return Ok(Outcome::Orphan);
        };
        let key = dn_key(&received.ndn);
        let at_dn = txn.get_id(&key).map_err(failed)?;
        let existing = match self.find_uuid(txn, uuid)? {
            Some(id) => Some(id),
            // The DN is held by an entry of another UUID (a stale one): it becomes this entry.
            None => at_dn,
        };
        let Some(id) = existing else {
            let id = txn.next_id().map_err(failed)?;
            let mut entry = received.clone();
            self.hooks_prepare(txn, stamp, Kind::Add, id, None, Some(&mut entry))?;
            self.put(txn, id, &entry)?;
            txn.put_dn(&key, id).map_err(failed)?;
            txn.add_child(parent_id, id).map_err(failed)?;
            self.reindex(txn, id, None, Some(&entry))?;
            self.hooks_commit(txn, stamp, Kind::Add, id, None, Some(&entry))?;
            return Ok(Outcome::Added);
        };
        let old = self
            .load_id(txn, id)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "entryUUID index points nowhere"))?;
        let mut entry = received.clone();
        if old.ndn == entry.ndn {
            self.hooks_prepare(txn, stamp, Kind::Modify, id, Some(&old), Some(&mut entry))?;
            self.put(txn, id, &entry)?;
            self.reindex(txn, id, Some(&old), Some(&entry))?;
            self.hooks_commit(txn, stamp, Kind::Modify, id, Some(&old), Some(&entry))?;
            return Ok(Outcome::Modified);
        }
        // A rename (and perhaps a move): the new DN must be free, or held by a stale leaf.
        if let Some(other) = at_dn.filter(|other| *other != id) {
            if txn.has_children(other).map_err(failed)? {
                return Err(LdapError::new(
                    ResultCode::EntryAlreadyExists,
                    format!(
                        "{} is renamed onto an entry of another entryUUID that has children",
                        entry.dn
                    ),
                ));
            }
            tracing::warn!(dn = %entry.dn, "syncrepl: a stale entry gives way to a renamed one");
            self.remove(txn, other, stamp)?;
        }
        if entry.ndn.is_suffix_of(&old.ndn) || old.ndn.is_suffix_of(&entry.ndn) {
            return Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                format!(
                    "{} cannot move below itself or above its own parent",
                    old.dn
                ),
            ));
        }
        let old_parent = self.parent_of(txn, &old.ndn)?.unwrap_or(0);
        self.hooks_prepare(txn, stamp, Kind::Rename, id, Some(&old), Some(&mut entry))?;
        self.put(txn, id, &entry)?;
        self.reindex(txn, id, Some(&old), Some(&entry))?;
        self.move_subtree(txn, &old.ndn, &entry.ndn, &entry.dn, id)?;
        if parent_id != old_parent {
            txn.del_child(old_parent, id).map_err(failed)?;
            txn.add_child(parent_id, id).map_err(failed)?;
        }
        self.hooks_commit(txn, stamp, Kind::Rename, id, Some(&old), Some(&entry))?;
        Ok(Outcome::Renamed)
    }

    /// Deletes the entry of `uuid` and whatever is below it, deepest first; the number deleted.
    fn delete_replica(
        &self,
        txn: &mut WriteTxn<'_>,
        uuid: &[u8; 16],
        stamp: &Stamp,
    ) -> Result<u64, LdapError> {
        let Some(id) = self.find_uuid(txn, uuid)? else {
            return Ok(0);
        };
        let Some(entry) = self.load_id(txn, id)? else {
            return Ok(0);
        };
        let mut members = txn.subtree(&dn_key(&entry.ndn)).map_err(failed)?;
        // dn2id keys of descendants extend their ancestors' keys: longest first is leaf first.
        members.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(b.0.cmp(&a.0)));
        let mut seen = HashSet::new();
        let mut count = 0;
        for (_, member) in members {
            if seen.insert(member) {
                self.remove(txn, member, stamp)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// Removes the leaf entry `id`.
    fn remove(&self, txn: &mut WriteTxn<'_>, id: u64, stamp: &Stamp) -> Result<(), LdapError> {
        let Some(entry) = self.load_id(txn, id)? else {
            return Ok(());
        };
        let parent_id = self.parent_of(txn, &entry.ndn)?.unwrap_or(0);
        self.hooks_prepare(txn, stamp, Kind::Delete, id, Some(&entry), None)?;
        self.reindex(txn, id, Some(&entry), None)?;
        txn.del_entry(id).map_err(failed)?;
        txn.del_dn(&dn_key(&entry.ndn)).map_err(failed)?;
        txn.del_child(parent_id, id).map_err(failed)?;
        self.hooks_commit(txn, stamp, Kind::Delete, id, Some(&entry), None)
    }
}

/// An entry's entryUUID as 16 bytes.
pub fn entry_uuid(entry: &Entry) -> Option<[u8; 16]> {
    let value = entry.get("entryUUID")?.values.first()?;
    canopy_proto::sync::uuid_from_text(std::str::from_utf8(value).ok()?)
}
