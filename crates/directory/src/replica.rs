//! Changes received from a syncrepl provider (RFC 4533), applied by a consumer: entries found by their
//! entryUUID, a same-UUID new DN turned into a rename, whole subtrees deleted leaf first, and the
//! provider's cookie stored with the changes it covers, all in one write transaction
//! (docs/design/replication.md).

use std::collections::HashSet;

use canopy_core::check::check_entry;
use canopy_core::index::entry_keys;
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::sync::{uuid_to_text, Cookie, Csn};
use canopy_proto::ResultCode;
use canopy_schema::NormDn;

use crate::attrcsn::{self, Merge};
use crate::database::Directory;
use crate::error::OpError;
use crate::event::Kind;
use crate::keys::dn_key;
use crate::opattrs::Stamp;
use crate::write::{failed, By, Check};

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
    /// The DNs (hashed by [`dn_hash`]) the provider sent during the refresh under way: a delete of
    /// this batch spares an entry at one of them, and what is below it (a refreshDeletes set or a
    /// present phase must never delete what the provider has just sent, issue 30).
    pub sent: std::sync::Arc<HashSet<u64>>,
    /// The batch ends a full refresh (one started without a cookie) of a plain consumer: the cookie's
    /// CSNs replace the contextCSN's for their server IDs, even lower ones, since the database now
    /// holds the provider's state and nothing newer (an offline import before the first refresh
    /// stamps a contextCSN later than the provider's, which would hide its changes from cascaded
    /// consumers).
    pub reset_context: bool,
}

/// The hash of a normalized DN that [`ReplicaBatch::sent`] holds: 8 bytes per entry of a refresh
/// instead of the DN (a collision keeps one entry that should have gone: 2^-64).
pub fn dn_hash(ndn: &NormDn) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    ndn.as_str().hash(&mut h);
    h.finish()
}

/// What a batch did.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub added: u64,
    pub modified: u64,
    pub renamed: u64,
    pub deleted: u64,
    /// Changes not applied: already held (a change back around the ring) or lost a conflict.
    pub skipped: u64,
    /// Received entries whose DN an entry of another entryUUID held here (a consumer loaded from
    /// the same LDIF as its provider, an add of one DN on two providers): the received one took
    /// its place.
    pub replaced: u64,
    /// Deletes not applied because the provider sent an entry at that DN (or below it) in the
    /// refresh under way ([`ReplicaBatch::sent`]).
    pub spared: u64,
    /// Glue entries made for parents the provider never sent.
    pub glued: u64,
    /// Received entries merged attribute by attribute with the held version (both carried
    /// per-attribute CSNs, docs/design/replication.md) into an entry that neither version was,
    /// and stored.
    pub merged: u64,
    /// Merges whose result the schema refused (an objectClass change on one server against an
    /// attribute change on another, an RDN value removed on one side ...): the whole newer version
    /// was kept instead, as at entry level.
    pub merge_fallbacks: u64,
    /// The CSN with this server's own ID that the batch's cookie carries and this server never made
    /// (higher than its own contextCSN for its ID): another server has the same `server_id`, or this
    /// one was restored from an old backup (docs/replication.md, Safety).
    pub own_sid_ahead: Option<String>,
    /// Puts whose parent is not here yet: not applied; the caller offers them again with a later batch
    /// (a refresh sends entries in the provider's order, which may put a child before its parent).
    pub deferred: Vec<ReplicaChange>,
}

/// An entry held in a consumer's scope: its entryUUID and entryCSN.
pub type HeldCsn = ([u8; 16], Option<Csn>);

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
    /// Lost a conflict (docs/design/replication.md, multi-provider rules), or already held: nothing
    /// written.
    Skipped,
}

/// How a received entry was reconciled with the held version of the same entryUUID.
#[derive(Default)]
struct Reconciled {
    merged: bool,
    fallback: bool,
    /// The DN was held here by an entry of another entryUUID, which the received one replaced.
    replaced: bool,
}

/// Meta key prefixes of the multi-provider records: tombstones by entryUUID and by DN, and the old
/// DNs of renamed entries.
const TOMB_UUID: &str = "tomb/";
const TOMB_DN: &str = "tombdn/";
const RENAMED: &str = "renamed/";

impl Directory {
    /// The cookie a consumer stored with the last batch it applied.
    pub fn replica_cookie(
        &self,
        txn: &impl crate::View,
        rid: u16,
    ) -> Result<Option<Cookie>, LdapError> {
        let txn = crate::view::txn(txn);
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
        txn: &impl crate::View,
        base: &NormDn,
        one_level: bool,
    ) -> Result<Vec<[u8; 16]>, LdapError> {
        Ok(self
            .replica_scope_csns(txn, base, one_level)?
            .into_iter()
            .map(|(uuid, _)| uuid)
            .collect())
    }

    /// Like [`Directory::replica_scope`], with each entry's entryCSN: a multi-provider consumer
    /// deletes at the end of a present phase only what its provider had seen (docs/replication.md).
    pub fn replica_scope_csns(
        &self,
        txn: &impl crate::View,
        base: &NormDn,
        one_level: bool,
    ) -> Result<Vec<HeldCsn>, LdapError> {
        let txn = crate::view::txn(txn);
        let depth = base.rdns().len();
        let mut held = Vec::new();
        for (_, id) in txn.subtree(&dn_key(base)).map_err(crate::store_error)? {
            let Some(bytes) = txn.get_entry(id).map_err(crate::store_error)? else {
                continue;
            };
            let entry = Directory::parse_stored(bytes)?
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            // Glue entries are this server's own placeholders, which no provider names.
            if (one_level && entry.ndn.rdns().len() > depth + 1) || glue(&entry) {
                continue;
            }
            if let Some(uuid) = entry_uuid(&entry) {
                held.push((uuid, entry_csn(&entry)));
            }
        }
        Ok(held)
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
            self.apply_one(txn, change, &batch.sent, stamp, &mut applied, &mut pending)?;
        }
        // Orphans whose parent came later in the batch, until no more progress.
        loop {
            let before = pending.len();
            let round = std::mem::take(&mut pending);
            for change in round {
                self.apply_one(txn, change, &batch.sent, stamp, &mut applied, &mut pending)?;
            }
            if pending.is_empty() || pending.len() == before {
                break;
            }
        }
        // A child added under an entry that a concurrent delete removed: the delete wins.
        let mut kept = Vec::new();
        for change in pending {
            if let ReplicaChange::Put { entry, .. } = change {
                if self.parent_deleted(txn, &entry.ndn)? {
                    tracing::info!(dn = %entry.dn,
                        "syncrepl: dropped an entry whose parent a concurrent delete removed");
                    applied.skipped += 1;
                    continue;
                }
            }
            kept.push(change);
        }
        let mut pending = kept;
        if batch.cookie.is_some() && !pending.is_empty() {
            // The cookie claims these entries, and their parents never came: slapd's provider does
            // not send its glue entries, and a subset (a filter, access rules) may leave a parent
            // out. As slapd's consumer does, a glue entry stands in for each missing ancestor (the
            // real one takes its place if it comes: it has no entryCSN, so it loses every conflict).
            for change in &pending {
                if let ReplicaChange::Put { entry, .. } = change {
                    applied.glued += self.glue_ancestors(txn, entry, stamp)?;
                }
            }
            for change in std::mem::take(&mut pending) {
                self.apply_one(txn, change, &batch.sent, stamp, &mut applied, &mut pending)?;
            }
        }
        if let Some(cookie) = &batch.cookie {
            if let Some(ReplicaChange::Put { entry, .. }) = pending.first() {
                return Err(LdapError::new(
                    ResultCode::NoSuchObject,
                    format!("the parent of {} was never sent", entry.dn),
                ));
            }
            let own = self.server_id();
            if own != 0 {
                if let Some(theirs) = cookie.csns.get(own) {
                    let ours = self.context_csn(txn)?;
                    if ours
                        .get(own)
                        .is_none_or(|mine| theirs.as_str() > mine.as_str())
                    {
                        applied.own_sid_ahead = Some(theirs.as_str().to_string());
                    }
                }
            }
            // Merged per server ID with the stored one: a provider's cookie may carry only the CSN of
            // the change it comes with (slapd's, and Canopy's for a local change), and the stored
            // cookie must still speak for every server ID (a full refresh starts it afresh).
            let mut stored = cookie.clone();
            if !batch.reset_context {
                if let Some(old) = self.replica_cookie(txn, batch.rid)? {
                    for csn in old.csns.csns() {
                        stored.csns.observe(csn);
                    }
                }
            }
            txn.put_meta(&cookie_key(batch.rid), &stored.to_bytes())
                .map_err(failed)?;
            if batch.reset_context && !self.multiprovider() {
                if self.reset_context_csn(txn, &cookie.csns)? {
                    self.publish_context(&cookie.csns);
                }
            } else if self.raise_context_csn(txn, &cookie.csns)? {
                self.publish_context(&cookie.csns);
            }
        }
        applied.deferred = pending.into_iter().cloned().collect();
        Ok(applied)
    }

    #[allow(clippy::too_many_arguments)]
    fn apply_one<'c>(
        &self,
        txn: &mut WriteTxn<'_>,
        change: &'c ReplicaChange,
        sent: &HashSet<u64>,
        stamp: &Stamp,
        applied: &mut Applied,
        pending: &mut Vec<&'c ReplicaChange>,
    ) -> Result<(), LdapError> {
        match change {
            ReplicaChange::Put { uuid, entry } => {
                let mut how = Reconciled::default();
                let outcome = self.put_replica(txn, uuid, entry, stamp, &mut how)?;
                if !matches!(outcome, Outcome::Skipped | Outcome::Orphan) {
                    applied.merged += u64::from(how.merged);
                }
                applied.merge_fallbacks += u64::from(how.fallback);
                if !matches!(outcome, Outcome::Skipped | Outcome::Orphan) {
                    applied.replaced += u64::from(how.replaced);
                }
                match outcome {
                    Outcome::Added => applied.added += 1,
                    Outcome::Modified => applied.modified += 1,
                    Outcome::Renamed => applied.renamed += 1,
                    Outcome::Orphan => pending.push(change),
                    Outcome::Skipped => applied.skipped += 1,
                }
            }
            ReplicaChange::Delete { uuid } => {
                let (deleted, spared) = self.delete_replica(txn, uuid, stamp, sent)?;
                applied.deleted += deleted;
                applied.spared += spared;
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
        self.id_in(txn, &parent).map_err(failed)
    }

    fn put_replica(
        &self,
        txn: &mut WriteTxn<'_>,
        uuid: &[u8; 16],
        received: &Entry,
        stamp: &Stamp,
        how: &mut Reconciled,
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
        // slapd's glue entries (a placeholder parent; an entry its consumer could not delete) carry
        // nothing but objectClass glue, not even their RDN's value: stored as received, as slapd's
        // consumer stores them without a schema check (issue 30).
        if !glue(received) {
            check_entry(self.schema(), received)?;
        }
        if self.multiprovider()
            && txn
                .get_meta(&tomb_uuid_key(uuid))
                .map_err(failed)?
                .is_some()
        {
            // Rule 3: a delete wins against a concurrent modify; no resurrection. The sender had not
            // seen the delete (it may have missed it in a present phase, which cannot name deletes):
            // announce it again, to the session log and the persistent searches, so that it follows.
            if self.find_uuid(txn, uuid)?.is_none() {
                let by = By::replica(stamp);
                self.hooks_commit(txn, by, Kind::Delete, 0, Some(received), None, &[])?;
            }
            return Ok(Outcome::Skipped);
        }
        let by_uuid = self.find_uuid(txn, uuid)?;
        let merged;
        let mut received = received;
        if let Some(id) = by_uuid {
            let held = self.load_id(txn, id)?;
            match held {
                // Both versions carry per-attribute CSNs (Canopy providers): merged attribute by
                // attribute; nothing new in it is a change seen already (a loop).
                Some(held) if attrcsn::stamps(received).is_some() => {
                    match attrcsn::merge(&held, received) {
                        Merge::Unchanged => return Ok(Outcome::Skipped),
                        // The received version itself (the usual case: newer in every attribute
                        // it changed) was checked above.
                        Merge::Merged(entry) if attrcsn::same(&entry, received) => {
                            merged = entry;
                            received = &merged;
                        }
                        Merge::Merged(entry) => match check_entry(self.schema(), &entry) {
                            Ok(()) => {
                                how.merged = true;
                                merged = entry;
                                received = &merged;
                            }
                            Err(e) => {
                                // Deterministic: the whole newer version, as at entry level.
                                how.fallback = true;
                                tracing::info!(dn = %received.dn, reason = %e.message,
                                    "syncrepl: conflict: the per-attribute merge breaks the schema; the newer version wins whole");
                                if !newer(entry_csn(received).as_ref(), entry_csn(&held).as_ref()) {
                                    return Ok(Outcome::Skipped);
                                }
                            }
                        },
                    }
                }
                // Rule 1 (and loops): the newer entryCSN wins; between peers an equal one is a
                // change seen already. A plain consumer ignores only an older one, as slapd's does:
                // an equal entryCSN with other contents is the provider's entry changed without a
                // new CSN (a slapd provider that is itself a consumer turns an entry its present
                // phase could not delete into glue that way; found by the replication harness,
                // seed 87).
                held => {
                    let (theirs, ours) = (entry_csn(received), held.as_ref().and_then(entry_csn));
                    let skip = if self.multiprovider() {
                        !newer(theirs.as_ref(), ours.as_ref())
                    } else {
                        newer(ours.as_ref(), theirs.as_ref())
                            || (theirs == ours
                                && held
                                    .as_ref()
                                    .is_none_or(|held| attrcsn::same(held, received)))
                    };
                    if skip {
                        return Ok(Outcome::Skipped);
                    }
                }
            }
        }
        let mut rehomed;
        let parent_id = match self.parent_of(txn, &received.ndn)? {
            Some(id) => id,
            None => match self.renamed_parent(txn, &received.ndn)? {
                // Rule 4: the parent was renamed; the child follows it.
                Some((dn, ndn, id)) => {
                    let (Some(rdn), Some(nrdn)) =
                        (received.dn.rdns.first(), received.ndn.rdns().first())
                    else {
                        return Ok(Outcome::Orphan);
                    };
                    rehomed = received.clone();
                    let mut rdns = vec![rdn.clone()];
                    rdns.extend(dn.rdns);
                    rehomed.dn = canopy_proto::Dn { rdns };
                    rehomed.ndn = ndn.child(nrdn);
                    tracing::info!(from = %received.dn, to = %rehomed.dn,
                        "syncrepl: an entry follows its renamed parent");
                    received = &rehomed;
                    id
                }
                None => return Ok(Outcome::Orphan),
            },
        };
        let key = dn_key(&received.ndn);
        let at_dn = txn.get_id(&key).map_err(failed)?;
        // Rule 2: the DN is held by an entry of another UUID. A plain consumer takes the provider's
        // entry, whatever the CSNs (the provider is the authority; slapd turns the failed add into a
        // modify the same way). Between multi-provider peers the higher (entryCSN, entryUUID) keeps
        // it, on every server alike.
        let mut at_dn = at_dn;
        if let Some(other) = at_dn.filter(|other| Some(*other) != by_uuid) {
            if self.multiprovider() {
                let holder = self.load_id(txn, other)?;
                if !wins(received, holder.as_ref()) {
                    tracing::info!(dn = %received.dn,
                        "syncrepl: conflict: an entry of another entryUUID with a newer entryCSN holds this DN; the received one loses");
                    if let Some(id) = by_uuid {
                        self.remove_subtree(txn, id, stamp, false)?;
                    }
                    return Ok(Outcome::Skipped);
                }
                tracing::info!(dn = %received.dn,
                    "syncrepl: conflict: the entry of another entryUUID holding this DN is older and gives way");
            } else {
                tracing::debug!(dn = %received.dn,
                    "syncrepl: an entry of another entryUUID held here takes the provider's entryUUID and contents");
            }
            how.replaced = true;
            if by_uuid.is_some() {
                // The received entry is renamed onto the DN: the holder goes, with what is below it.
                self.remove_subtree(txn, other, stamp, false)?;
                at_dn = None;
            }
            // Otherwise the received entry takes the holder's place (an add of the same DN): what
            // was added below the DN stays below it, as on the servers where the winner came first.
        }
        let by = By::replica(stamp);
        let Some(id) = by_uuid.or(at_dn) else {
            self.store_added(txn, by, parent_id, &mut received.clone())?;
            return Ok(Outcome::Added);
        };
        let old = self
            .load_id(txn, id)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "entryUUID index points nowhere"))?;
        let mut entry = received.clone();
        if old.ndn == entry.ndn {
            self.store_changed(txn, by, id, &old, &mut entry, &[], Check::AsReceived)?;
            if entry_uuid(&old) != entry_uuid(&entry) {
                self.announce_replaced(txn, stamp, &old)?;
            }
            return Ok(Outcome::Modified);
        }
        // A rename (and perhaps a move): the new DN is free (rule 2 removed an older holder).
        debug_assert!(at_dn.is_none_or(|other| other == id));
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
        let parents = (old_parent, parent_id);
        self.store_renamed(txn, by, id, &old, &mut entry, parents, Check::AsReceived)?;
        Ok(Outcome::Renamed)
    }

    /// Adds a glue entry (objectClass glue, a new entryUUID, no entryCSN) for every missing ancestor
    /// of `entry` inside the suffix, highest first; how many.
    fn glue_ancestors(
        &self,
        txn: &mut WriteTxn<'_>,
        entry: &Entry,
        stamp: &Stamp,
    ) -> Result<u64, LdapError> {
        let mut missing = Vec::new();
        let (mut dn, mut ndn) = (entry.dn.clone(), entry.ndn.clone());
        while ndn != *self.suffix() {
            let Some(parent) = ndn.parent() else {
                break;
            };
            if !self.holds(&parent) {
                break;
            }
            dn = canopy_proto::Dn {
                rdns: dn.rdns.get(1..).unwrap_or_default().to_vec(),
            };
            ndn = parent;
            if self.id_in(txn, &ndn).map_err(failed)?.is_some() {
                break;
            }
            missing.push((dn.clone(), ndn.clone()));
        }
        let mut made = 0;
        for (dn, ndn) in missing.into_iter().rev() {
            let Some(parent_id) = self.parent_of(txn, &ndn)? else {
                break;
            };
            let uuid = uuid::Uuid::new_v4().hyphenated().to_string();
            let mut glue = Entry {
                dn: dn.clone(),
                ndn: ndn.clone(),
                attrs: vec![
                    Attribute {
                        desc: "objectClass".to_string(),
                        values: vec![b"top".to_vec(), b"glue".to_vec()],
                    },
                    Attribute {
                        desc: "structuralObjectClass".to_string(),
                        values: vec![b"glue".to_vec()],
                    },
                    Attribute {
                        desc: "entryUUID".to_string(),
                        values: vec![uuid.into_bytes()],
                    },
                ],
            };
            self.store_added(txn, By::replica(stamp), parent_id, &mut glue)?;
            tracing::info!(dn = %dn, "syncrepl: a glue entry stands for a parent the provider did not send");
            made += 1;
        }
        Ok(made)
    }

    /// The entry `old` was replaced in place by one of another entryUUID (rule 2): its entryUUID
    /// is gone from this server, which the session log and the persistent searches learn as a
    /// delete, after the change of the new one (found by the multi-provider mesh test: a peer that
    /// held the old entry under another DN, where no change of the new one reaches it, kept it
    /// for ever). Only syncprov keeps the record: for the other hooks nothing was deleted (the DN
    /// is still there), and no tombstone is left (the loser of rule 2 may compete again).
    fn announce_replaced(
        &self,
        txn: &mut WriteTxn<'_>,
        stamp: &Stamp,
        old: &Entry,
    ) -> Result<(), LdapError> {
        self.hooks_commit_only("syncprov", txn, By::replica(stamp), Kind::Delete, Some(old))
    }

    /// Deletes the entry of `uuid` and whatever is below it, deepest first, unless it or an entry
    /// below it is at a DN of `sent` (the provider sent an entry for that DN in the refresh under
    /// way: it is kept, logged); the numbers deleted and spared.
    fn delete_replica(
        &self,
        txn: &mut WriteTxn<'_>,
        uuid: &[u8; 16],
        stamp: &Stamp,
        sent: &HashSet<u64>,
    ) -> Result<(u64, u64), LdapError> {
        let Some(id) = self.find_uuid(txn, uuid)? else {
            return Ok((0, 0));
        };
        if !sent.is_empty() {
            let Some(entry) = self.load_id(txn, id)? else {
                return Ok((0, 0));
            };
            let hit = if sent.contains(&dn_hash(&entry.ndn)) {
                Some(entry.dn.to_string())
            } else {
                let mut hit = None;
                for (_, member) in txn.subtree(&dn_key(&entry.ndn)).map_err(failed)? {
                    if let Some(below) = self.load_id(txn, member)? {
                        if sent.contains(&dn_hash(&below.ndn)) {
                            hit = Some(below.dn.to_string());
                            break;
                        }
                    }
                }
                hit
            };
            if let Some(kept) = hit {
                tracing::warn!(dn = %entry.dn, sent = %kept,
                    "syncrepl: a delete from the provider spared: the provider sent an entry at this DN (or below it) in this refresh");
                return Ok((0, 1));
            }
        }
        Ok((self.remove_subtree(txn, id, stamp, true)?, 0))
    }

    /// Removes the entry `id` and everything below it, deepest first, leaving tombstones when
    /// `tombstone` (a delete; not a conflict's loser); the number removed.
    fn remove_subtree(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        stamp: &Stamp,
        tombstone: bool,
    ) -> Result<u64, LdapError> {
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
                if tombstone {
                    if let Some(gone) = self.load_id(txn, member)? {
                        self.record_tombstone(txn, &gone, &stamp.csn)?;
                    }
                }
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
        self.store_removed(txn, By::replica(stamp), id, &entry, parent_id)
    }
}

fn tomb_uuid_key(uuid: &[u8; 16]) -> Vec<u8> {
    format!("{TOMB_UUID}{}", uuid_to_text(uuid)).into_bytes()
}

/// Whether the received entry beats `holder`, an entry of another entryUUID at the same DN: the higher
/// entryCSN, and on equal ones (two imports of one export) the higher entryUUID, so that every server
/// of a group picks the same one whatever the order the versions reach it in.
fn wins(received: &Entry, holder: Option<&Entry>) -> bool {
    let Some(holder) = holder else {
        return true;
    };
    let (mine, theirs) = (entry_csn(received), entry_csn(holder));
    if mine.as_ref().map(Csn::as_str) == theirs.as_ref().map(Csn::as_str) {
        return entry_uuid(received) > entry_uuid(holder);
    }
    newer(mine.as_ref(), theirs.as_ref())
}

/// Whether `csn` is newer than `held` (an entry without an entryCSN is older than any with one).
fn newer(csn: Option<&Csn>, held: Option<&Csn>) -> bool {
    match (csn, held) {
        (Some(c), Some(h)) => c.as_str() > h.as_str(),
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// An entry's entryCSN.
pub fn entry_csn(entry: &Entry) -> Option<Csn> {
    let value = entry.get("entryCSN")?.values.first()?;
    Csn::parse(std::str::from_utf8(value).ok()?)
}

impl Directory {
    /// Records that `entry` was deleted (by a delete with CSN `csn`): its entryUUID and its DN.
    pub(crate) fn record_tombstone(
        &self,
        txn: &mut WriteTxn<'_>,
        entry: &Entry,
        csn: &str,
    ) -> Result<(), LdapError> {
        if !self.multiprovider() {
            return Ok(());
        }
        if let Some(uuid) = entry_uuid(entry) {
            txn.put_meta(&tomb_uuid_key(&uuid), csn.as_bytes())
                .map_err(failed)?;
        }
        let key = format!("{TOMB_DN}{}", entry.ndn.as_str()).into_bytes();
        txn.put_meta(&key, csn.as_bytes()).map_err(failed)
    }

    /// Records that the entry `uuid` left the DN `old` by a rename with CSN `csn`.
    pub(crate) fn record_rename(
        &self,
        txn: &mut WriteTxn<'_>,
        old: &NormDn,
        uuid: &[u8; 16],
        csn: &str,
    ) -> Result<(), LdapError> {
        if !self.multiprovider() {
            return Ok(());
        }
        let key = format!("{RENAMED}{}", old.as_str()).into_bytes();
        let value = format!("{csn} {}", uuid_to_text(uuid));
        txn.put_meta(&key, value.as_bytes()).map_err(failed)
    }

    /// The CSN of the delete that removed the DN `ndn`, if one did.
    fn tomb_dn(&self, txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<Option<String>, LdapError> {
        if !self.multiprovider() {
            return Ok(None);
        }
        let key = format!("{TOMB_DN}{}", ndn.as_str()).into_bytes();
        Ok(txn
            .get_meta(&key)
            .map_err(failed)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// The CSN and entryUUID of the last rename away from the DN `ndn`, if one happened.
    fn renamed_from(
        &self,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
    ) -> Result<Option<(String, [u8; 16])>, LdapError> {
        if !self.multiprovider() {
            return Ok(None);
        }
        let key = format!("{RENAMED}{}", ndn.as_str()).into_bytes();
        let Some(value) = txn.get_meta(&key).map_err(failed)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&value).into_owned();
        let Some((csn, uuid)) = text.split_once(' ') else {
            return Ok(None);
        };
        Ok(canopy_proto::sync::uuid_from_text(uuid).map(|u| (csn.to_string(), u)))
    }

    /// Whether the missing parent of `ndn` was deleted (later than it was last renamed away).
    fn parent_deleted(&self, txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<bool, LdapError> {
        let Some(parent) = ndn.parent() else {
            return Ok(false);
        };
        if self.id_in(txn, &parent).map_err(failed)?.is_some() {
            return Ok(false);
        }
        let Some(deleted) = self.tomb_dn(txn, &parent)? else {
            return Ok(false);
        };
        Ok(match self.renamed_from(txn, &parent)? {
            Some((renamed, _)) => deleted > renamed,
            None => true,
        })
    }

    /// The current DN and ID of the entry that was renamed away from the (missing) parent DN of `ndn`,
    /// when the rename is the last thing that happened at that DN and the entry still exists.
    fn renamed_parent(
        &self,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
    ) -> Result<Option<(canopy_proto::Dn, NormDn, u64)>, LdapError> {
        let Some(parent) = ndn.parent() else {
            return Ok(None);
        };
        let Some((renamed, uuid)) = self.renamed_from(txn, &parent)? else {
            return Ok(None);
        };
        if let Some(deleted) = self.tomb_dn(txn, &parent)? {
            if deleted > renamed {
                return Ok(None);
            }
        }
        let Some(id) = self.find_uuid(txn, &uuid)? else {
            return Ok(None);
        };
        let Some(entry) = self.load_id(txn, id)? else {
            return Ok(None);
        };
        Ok(Some((entry.dn, entry.ndn, id)))
    }
}

/// Whether `entry` is one of slapd's glue entries (objectClass glue).
fn glue(entry: &Entry) -> bool {
    entry.get("objectClass").is_some_and(|a| {
        a.values
            .iter()
            .any(|v| v.eq_ignore_ascii_case(b"glue") || v == b"1.3.6.1.4.1.4203.666.3.4")
    })
}

/// An entry's entryUUID as 16 bytes.
pub fn entry_uuid(entry: &Entry) -> Option<[u8; 16]> {
    let value = entry.get("entryUUID")?.values.first()?;
    canopy_proto::sync::uuid_from_text(std::str::from_utf8(value).ok()?)
}

/// The CSN text of the moment `age` ago: CSNs of changes made before it sort below it.
fn csn_before(age: std::time::Duration) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let then = now.saturating_sub(age);
    let (y, mo, d, h, mi, s) = crate::opattrs::civil(then.as_secs() as i64);
    format!(
        "{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}.{:06}Z",
        then.subsec_micros()
    )
}

impl Directory {
    /// Deletes the multi-provider conflict records (tombstones by entryUUID and by DN, renamed-DN
    /// records) whose CSN is older than `age`, in one write; how many (`tombstone_purge`,
    /// docs/replication.md). A peer that comes back after being cut off longer than `age` may then
    /// bring back an entry deleted meanwhile, or place a child under a renamed parent's old DN: such a
    /// peer must be reinitialized by a full refresh.
    pub async fn purge_conflict_records(
        &self,
        age: std::time::Duration,
    ) -> Result<usize, LdapError> {
        let cutoff = csn_before(age);
        self.run_write(move |_dir, txn, _stamp| -> Result<usize, OpError> {
            let mut old = Vec::new();
            for prefix in [TOMB_UUID, TOMB_DN, RENAMED] {
                for (key, value) in txn.meta_prefix(prefix.as_bytes()).map_err(failed)? {
                    // Tombstones hold the CSN; renamed records "CSN entryUUID".
                    let csn = value.split(|b| *b == b' ').next().unwrap_or(&[]);
                    if csn < cutoff.as_bytes() {
                        old.push(key);
                    }
                }
            }
            for key in &old {
                txn.del_meta(key).map_err(failed)?;
            }
            Ok(old.len())
        })
        .await
        .map_err(OpError::into_ldap)
    }
}
