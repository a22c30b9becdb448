//! Writes: add, delete, modify and modifyDN, each run in one nested transaction on the store's writer
//! thread: locate the target, ask the request's [`Guard`], apply the change, run the [`Pipeline`]'s
//! hooks around storing it (docs/design/write-pipeline.md).

use std::sync::Arc;

use canopy_core::check::structural_class;
use canopy_core::index::entry_keys;
use canopy_core::modify::{apply_modifications, modified, ModifyOptions};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, StoreError, WriteTxn};
use canopy_proto::{Change, Dn, ModifyOperation, PartialAttribute, Rdn, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::database::Directory;
use crate::error::{store_error, OpError};
use crate::event::Origin;
use crate::keys::dn_key;
use crate::opattrs::Stamp;
use crate::referral::{is_referral, referral_for};
use crate::view::InWrite;

mod batch;
mod splice;
mod steps;

pub use batch::BatchError;

pub(crate) use steps::{By, Check};

pub use splice::{spliced_modifies, SPLICE_MIN_BYTES};

/// The first byte of an equality index key (docs/design/index-keys.md).
const EQUALITY_KEY: u8 = 0x02;
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
        txn: InWrite<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError>;

    /// Whether the request carries ManageDsaIT: referral objects are then entries like any other. Offline
    /// tools and tests manage them.
    fn manage_dsa_it(&self) -> bool {
        true
    }

    /// The request's own tests and reads of the target before the change, in the write's transaction so
    /// they are atomic with it (RFC 4528's assertion, RFC 4527's pre-read): `id` is None for an add, whose
    /// `entry` is not stored yet. An error fails the write.
    fn before_change(
        &self,
        dir: &Directory,
        txn: InWrite<'_>,
        id: Option<u64>,
        entry: &Entry,
    ) -> Result<(), LdapError> {
        let _ = (dir, txn, id, entry);
        Ok(())
    }

    /// The request's read of the entry `id` as this write leaves it (RFC 4527's post-read), named `dn`.
    fn after_change(&self, dir: &Directory, txn: InWrite<'_>, id: u64, dn: &Dn) {
        let _ = (dir, txn, id, dn);
    }

    /// Whether [`Guard::authorize`] decides a modify the same without the values of the target's
    /// attributes that the modify only adds to (docs/design/big-values.md): true when the requester's
    /// rights do not depend on the entry's contents (the root DN, offline tools).
    fn authorizes_without_values(&self) -> bool {
        false
    }

    /// Whether a modify may change NO-USER-MODIFICATION attributes: only for writes the server makes
    /// itself (cn=Monitor's counters), never for a client's request.
    fn server_internal(&self) -> bool {
        false
    }

    /// The Relax Rules control: the bookkeeping attributes may be written, the structural class
    /// changed (the guard checks manage access to them).
    fn relax(&self) -> bool {
        false
    }

    /// The Permissive Modify control: a modify adding a value the entry holds, or deleting from
    /// an attribute it lacks, skips that part (`ModifyOptions::permissive`).
    fn permissive(&self) -> bool {
        false
    }

    /// The No-Op control: the write runs every check and hook, then its transaction is aborted and
    /// it fails with noOperation, so nothing it did is stored or published.
    fn no_op(&self) -> bool {
        false
    }

    /// A noSuchObject error as the requester may see it (the matched DN only where disclosed).
    fn conceal(&self, dir: &Directory, txn: InWrite<'_>, error: LdapError) -> LdapError {
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
    /// Renaming or moving the entry at `ndn` out of its parent: the parent's children (slapd checks
    /// this before looking at the entry itself).
    RenameFrom {
        ndn: &'a NormDn,
        moving: bool,
    },
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

    fn authorize(&self, _: &Directory, _: InWrite<'_>, _: Action<'_>) -> Result<(), LdapError> {
        Ok(())
    }

    fn authorizes_without_values(&self) -> bool {
        true
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

impl<'a> Ctx<'a> {
    /// The write as its hooks see it: a client's (or a tool's), by its requester.
    fn by(&self) -> By<'a> {
        By {
            stamp: self.stamp,
            requester: self.guard.requester(),
            origin: Origin::Local,
        }
    }
}

/// Why a write closure gave up.
enum Retry<E> {
    Ldap(E),
    MapFull,
}

thread_local! {
    /// Set when a storage call inside a write closure met a full map. Closures run one at a time on the
    /// store's single writer thread, so the flag belongs to the closure that is running.
    static MAP_FULL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Maps a storage failure inside a write closure, noting a full map so the write is retried.
pub(crate) fn failed(error: StoreError) -> LdapError {
    if matches!(error, StoreError::MapFull) {
        MAP_FULL.with(|seen| seen.set(true));
    }
    store_error(error)
}

/// Refuses a write of an older snapshot that would store an attribute type or object class the
/// schema changed live (`fence`) no longer defines (docs/design/config-tree.md, "Deletes").
fn fits_schema(fence: &canopy_schema::Schema, op: &WriteOp) -> Result<(), LdapError> {
    let gone_type = |name: &str| {
        let base = name.split(';').next().unwrap_or(name);
        (fence.attribute_type(base).is_none()).then(|| {
            LdapError::new(
                ResultCode::UndefinedAttributeType,
                format!("{base}: attribute type undefined (removed from the schema by a change of cn=config)"),
            )
        })
    };
    let gone_class = |value: &[u8]| {
        let name = String::from_utf8_lossy(value);
        (fence.object_class(&name).is_none()).then(|| {
            LdapError::new(
                ResultCode::ObjectClassViolation,
                format!("objectClass: {name}: object class undefined (removed from the schema by a change of cn=config)"),
            )
        })
    };
    let check = |name: &str, values: &[Vec<u8>]| -> Result<(), LdapError> {
        if let Some(error) = gone_type(name) {
            return Err(error);
        }
        if name.eq_ignore_ascii_case("objectClass") {
            if let Some(error) = values.iter().find_map(|v| gone_class(v)) {
                return Err(error);
            }
        }
        Ok(())
    };
    match op {
        WriteOp::Add(entry) => {
            for attr in &entry.attrs {
                check(&attr.desc, &attr.values)?;
            }
        }
        WriteOp::Modify { changes, .. } => {
            for change in changes {
                let m = &change.modification;
                let adds = !matches!(change.operation, ModifyOperation::Delete);
                if adds && !m.values.is_empty() {
                    check(&m.name, &m.values)?;
                }
            }
        }
        WriteOp::ModifyDn(request) => {
            for ava in &request.new_rdn.avas {
                check(&ava.attr, &[])?;
            }
        }
        WriteOp::Delete { .. } => {}
    }
    Ok(())
}

impl Directory {
    /// Runs a write and returns once it is durable (or failed). Existence is checked before the guard,
    /// as slapd does, so a missing entry is noSuchObject for everyone.
    pub async fn write(&self, request: WriteRequest) -> Result<(), OpError> {
        self.run_write(move |dir, txn, stamp| {
            let request = request.clone();
            dir.apply(txn, request.op, &*request.guard, stamp)?;
            // An error aborts the write's nested transaction and drops what its hooks left to do
            // after the commit (the feed, the logs): the no-op's answer is one.
            match request.guard.no_op() {
                true => Err(LdapError::new(ResultCode::NoOperation, "").into()),
                false => Ok(()),
            }
        })
        .await
    }

    /// Makes `schema` the one every later write must fit (a schema changed live, docs/design/
    /// config-tree.md): from the next write on, a write made through a handle of another schema (an
    /// operation of an older snapshot) is refused when it would store an attribute type or object
    /// class `schema` does not define. Runs on the writer thread, so every write queued before it
    /// is committed when this returns: a usage check that reads afterwards sees them all.
    pub async fn fence_schema(&self, schema: Arc<Schema>) -> Result<(), LdapError> {
        self.run_write(move |dir, _txn, _stamp| {
            dir.set_write_schema(schema.clone());
            Ok::<(), LdapError>(())
        })
        .await
    }

    /// Runs `work` in a nested transaction on the writer thread with a stamp taken there, and returns
    /// its result once the group commit holding it is durable. Storage calls inside `work` must map
    /// their errors through this module (`rewrite`), so a full map is noticed and `work` runs again
    /// after the map grows: `work` must be repeatable.
    pub(crate) async fn run_write<T, E, F>(&self, work: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<LdapError> + Send + 'static,
        F: Fn(&Directory, &mut WriteTxn<'_>, &Stamp) -> Result<T, E> + Send + Sync + 'static,
    {
        // The store grows the map before it fills; a write that still meets a full map (a reader held the
        // growth off) is run again after the growth, so no client ever sees MDB_MAP_FULL.
        let work = Arc::new(work);
        for _ in 0..MAP_FULL_RETRIES {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let dir = self.clone();
            let work = work.clone();
            self.store().write_then(
                move |txn: &mut WriteTxn<'_>| {
                    MAP_FULL.with(|seen| seen.set(false));
                    crate::event::clear_after_commit();
                    // Taken here, on the writer thread: CSNs ascend in commit order.
                    let stamp = Stamp::now_for(dir.server_id());
                    let result = work(&dir, txn, &stamp);
                    let actions = crate::event::take_after_commit();
                    match MAP_FULL.with(|seen| seen.get()) {
                        true => Err(Retry::MapFull),
                        false => result.map(|value| (value, actions)).map_err(Retry::Ldap),
                    }
                },
                move |result| {
                    // On the writer thread, once the group is durable: the hooks' records, in commit order.
                    let result = result.map(|outcome| {
                        outcome.map(|(value, actions)| {
                            for action in actions {
                                action();
                            }
                            value
                        })
                    });
                    let _ = tx.send(result);
                },
            );
            match rx.await {
                Ok(Ok(Ok(value))) => return Ok(value),
                Ok(Ok(Err(Retry::Ldap(e)))) => return Err(e),
                Ok(Ok(Err(Retry::MapFull))) | Ok(Err(StoreError::MapFull)) => continue,
                Ok(Err(store)) => return Err(store_error(store).into()),
                Err(_) => {
                    return Err(LdapError::new(ResultCode::Unavailable, "writer stopped").into())
                }
            }
        }
        Err(LdapError::new(
            ResultCode::Busy,
            "the database could not grow in time; try again",
        )
        .into())
    }

    fn apply(
        &self,
        txn: &mut WriteTxn<'_>,
        op: WriteOp,
        guard: &dyn Guard,
        stamp: &Stamp,
    ) -> Result<(), OpError> {
        if let Some(fence) = self.stale_schema_fence() {
            fits_schema(&fence, &op)?;
        }
        let ctx = Ctx { guard, stamp };
        match op {
            WriteOp::Add(entry) => self.add(txn, entry, ctx),
            WriteOp::Delete { dn, ndn } => self.delete(txn, &dn, &ndn, ctx),
            WriteOp::Modify { dn, ndn, changes } => self.modify(txn, &dn, &ndn, &changes, ctx),
            WriteOp::ModifyDn(m) => self.modify_dn(txn, m, ctx),
        }
    }

    /// Replaces the stored entry `id` (`old`) with `new`, keeping its index keys in step: for hooks that
    /// change other entries inside a write. The DN must not change. In a multi-provider database a
    /// rewrite that gave the entry a new entryCSN (the hook's `Stamp::touch`) stamps the attributes it
    /// changed with that CSN, as a write of the entry itself would, so the change survives a merge
    /// with a concurrent version from a peer (docs/design/replication.md).
    pub fn rewrite(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        old: &Entry,
        mut new: Entry,
    ) -> Result<(), LdapError> {
        if self.multiprovider() {
            let csn = crate::attrcsn::csn_of(&new)
                .filter(|csn| crate::attrcsn::csn_of(old).as_ref() != Some(csn));
            if let Some(csn) = csn {
                crate::attrcsn::stamp_write(Some(old), &mut new, &csn);
            }
        }
        self.put(txn, id, &new)?;
        self.reindex(txn, id, Some(old), Some(&new))?;
        self.publish_rewrite(txn, id, old, &new);
        Ok(())
    }

    /// The target of a write. A missing one is noSuchObject, or the referral of a referral object above it
    /// (slapd's back-mdb answers so whatever the controls).
    fn load(
        &self,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
        dn: &Dn,
        ctx: Ctx<'_>,
    ) -> Result<(u64, Entry), OpError> {
        let found = txn.get_id(&dn_key(ndn)).map_err(failed)?;
        self.load_found(txn, found, ndn, dn, ctx, false)
    }

    /// [`Directory::load`] of the ID `found` under `ndn` (None: missing), and with `referral`, then
    /// [`Directory::referral_object`]'s answer, from the one read of the stored entry.
    fn load_found(
        &self,
        txn: &WriteTxn<'_>,
        found: Option<u64>,
        ndn: &NormDn,
        dn: &Dn,
        ctx: Ctx<'_>,
        referral: bool,
    ) -> Result<(u64, Entry), OpError> {
        let Some(id) = found else {
            return Err(self.missing(txn, ndn, dn, ctx)?);
        };
        let bytes = txn
            .get_entry(id)
            .map_err(failed)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "dn2id points to a missing entry"))?;
        let stored = Directory::parse_stored(bytes)?;
        let entry = stored.to_entry().map_err(|e| {
            tracing::error!(error = %e, "corrupt entry");
            LdapError::new(ResultCode::Other, "stored entry is unreadable")
        })?;
        if referral && !ctx.guard.manage_dsa_it() && is_referral(&stored) {
            return Err(referral_for(&stored, dn, 0, None, None).into());
        }
        Ok((id, entry))
    }

    /// Why `ndn` cannot be found: the referral of the nearest existing entry above it when that is a
    /// referral object, noSuchObject with the matched DN the requester may see otherwise.
    fn missing(
        &self,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
        dn: &Dn,
        ctx: Ctx<'_>,
    ) -> Result<OpError, LdapError> {
        let mut candidate = ndn.parent();
        let mut below = 1;
        while let Some(current) = candidate {
            if !self.holds(&current) {
                break;
            }
            if let Some(id) = txn.get_id(&dn_key(&current)).map_err(failed)? {
                if let Some(bytes) = txn.get_entry(id).map_err(failed)? {
                    let stored = Directory::parse_stored(bytes)?;
                    if is_referral(&stored) {
                        return Ok(referral_for(&stored, dn, below, None, None).into());
                    }
                }
                break;
            }
            candidate = current.parent();
            below += 1;
        }
        Ok(ctx
            .guard
            .conceal(self, InWrite::new(txn), self.no_such_object(txn, ndn, dn))
            .into())
    }

    /// The referral answer for a write on the referral object `id` itself, without ManageDsaIT.
    fn referral_object(
        &self,
        txn: &WriteTxn<'_>,
        id: u64,
        dn: &Dn,
        ctx: Ctx<'_>,
    ) -> Result<(), OpError> {
        if ctx.guard.manage_dsa_it() {
            return Ok(());
        }
        if let Some(bytes) = txn.get_entry(id).map_err(failed)? {
            let stored = Directory::parse_stored(bytes)?;
            if is_referral(&stored) {
                return Err(referral_for(&stored, dn, 0, None, None).into());
            }
        }
        Ok(())
    }

    /// slapd's order (back-mdb's add): an existing entry first, then the parent (missing, the access
    /// rules, an alias), then the store.
    fn add(&self, txn: &mut WriteTxn<'_>, mut entry: Entry, ctx: Ctx<'_>) -> Result<(), OpError> {
        ctx.guard
            .before_change(self, InWrite::new(txn), None, &entry)?;
        let key = dn_key(&entry.ndn);
        if txn.get_id(&key).map_err(failed)?.is_some() {
            return Err(LdapError::new(ResultCode::EntryAlreadyExists, "").into());
        }
        let parent_id = if entry.ndn == *self.suffix() {
            0
        } else {
            let parent_ndn = entry.ndn.parent().unwrap_or_else(NormDn::root);
            match self.id_in(txn, &parent_ndn).map_err(failed)? {
                Some(id) => id,
                None => return Err(self.missing(txn, &entry.ndn, &entry.dn, ctx)?),
            }
        };
        ctx.guard
            .authorize(self, InWrite::new(txn), Action::Add(&entry))?;
        if parent_id != 0 {
            self.under_parent(txn, parent_id, &mut entry.dn)?;
        }
        let id = self.store_added(txn, ctx.by(), parent_id, &mut entry)?;
        ctx.guard
            .after_change(self, InWrite::new(txn), id, &entry.dn);
        Ok(())
    }

    /// The stored DN of the parent an entry is renamed under; a new superior must be neither an alias
    /// (aliasProblem) nor a referral object (other, as slapd answers).
    fn superior_dn(
        &self,
        txn: &WriteTxn<'_>,
        parent_id: u64,
        moving: bool,
    ) -> Result<Dn, LdapError> {
        // The virtual root of a database whose suffix is empty (`Directory::id_in`).
        if parent_id == 0 && self.suffix().is_root() {
            return Ok(Dn::default());
        }
        let bytes = txn
            .get_entry(parent_id)
            .map_err(failed)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "dn2id points to a missing entry"))?;
        let parent = Directory::parse_stored(bytes)?;
        if moving && crate::referral::is_alias(&parent) {
            return Err(LdapError::new(
                ResultCode::AliasProblem,
                "new superior is an alias",
            ));
        }
        if moving && crate::referral::is_referral(&parent) {
            return Err(LdapError::new(
                ResultCode::Other,
                "new superior is a referral",
            ));
        }
        Dn::parse(parent.dn)
            .map_err(|_| LdapError::new(ResultCode::Other, "stored DN is unreadable"))
    }

    /// Refuses a new child of an alias (aliasProblem) or of a referral object (its referral, ManageDsaIT or
    /// not), as slapd, and spells `dn` as its own RDN under the parent's stored DN: slapd keeps one RDN per
    /// entry and builds DNs from them, so the parent part of a DN is always the parent's own spelling,
    /// whatever the client wrote.
    fn under_parent(&self, txn: &WriteTxn<'_>, parent_id: u64, dn: &mut Dn) -> Result<(), OpError> {
        let bytes = txn
            .get_entry(parent_id)
            .map_err(failed)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "dn2id points to a missing entry"))?;
        let parent = Directory::parse_stored(bytes)?;
        if crate::referral::is_alias(&parent) {
            return Err(LdapError::new(ResultCode::AliasProblem, "parent is an alias").into());
        }
        if is_referral(&parent) {
            return Err(referral_for(&parent, dn, 1, None, None).into());
        }
        if let Ok(parent_dn) = Dn::parse(parent.dn) {
            dn.rdns.truncate(1);
            dn.rdns.extend(parent_dn.rdns);
        }
        Ok(())
    }

    fn delete(
        &self,
        txn: &mut WriteTxn<'_>,
        dn: &Dn,
        ndn: &NormDn,
        ctx: Ctx<'_>,
    ) -> Result<(), OpError> {
        let (id, entry) = self.load(txn, ndn, dn, ctx)?;
        ctx.guard
            .authorize(self, InWrite::new(txn), Action::Delete(&entry))?;
        ctx.guard
            .before_change(self, InWrite::new(txn), Some(id), &entry)?;
        self.referral_object(txn, id, dn, ctx)?;
        if txn.has_children(id).map_err(failed)? {
            return Err(LdapError::new(
                ResultCode::NotAllowedOnNonLeaf,
                "subordinate objects must be deleted first",
            )
            .into());
        }
        let parent_id = self.parent_id(txn, ndn)?;
        Ok(self.store_removed(txn, ctx.by(), id, &entry, parent_id)?)
    }

    fn parent_id(&self, txn: &WriteTxn<'_>, ndn: &NormDn) -> Result<u64, LdapError> {
        if ndn == self.suffix() {
            return Ok(0);
        }
        let parent = ndn.parent().unwrap_or_else(NormDn::root);
        self.id_in(txn, &parent)
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
    ) -> Result<(), OpError> {
        // Values added to a large attribute: spliced into the stored bytes (docs/design/big-values.md).
        let found = txn.get_id(&dn_key(ndn)).map_err(failed)?;
        if let Some(id) = found {
            if self.modify_spliced(txn, id, dn, changes, ctx)?.is_some() {
                return Ok(());
            }
        }
        // The entry, then whether it is a referral object (`referral_object`), from one read.
        let (id, old) = self.load_found(txn, found, ndn, dn, ctx, true)?;
        ctx.guard
            .before_change(self, InWrite::new(txn), Some(id), &old)?;
        ctx.guard
            .authorize(self, InWrite::new(txn), Action::Modify(&old, changes))?;
        let options = ModifyOptions {
            absent_adds: self.absent_adds(txn, id, &old, changes)?,
            allow_no_user_modification: ctx.guard.server_internal(),
            relax: ctx.guard.relax(),
            permissive: ctx.guard.permissive(),
        };
        let mut entry = modified(self.schema(), old.clone(), changes, &options)?;
        if options.relax {
            // Under relax an entry may change its structural class (slapd's ITS#5792): the new
            // one is recorded, and the schema check then holds the entry to it.
            if let Ok(class) = structural_class(self.schema(), &entry) {
                let name = class.into_bytes();
                if let Some(attr) = entry.get_mut("structuralObjectClass") {
                    attr.values = vec![name];
                }
            }
        }
        // The overlays first, then the schema (`Check::AfterHooks`).
        self.store_changed(
            txn,
            ctx.by(),
            id,
            &old,
            &mut entry,
            changes,
            Check::AfterHooks,
        )?;
        ctx.guard
            .after_change(self, InWrite::new(txn), id, &entry.dn);
        Ok(())
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
            // Only a complete index can tell that a value is absent.
            let usable = self.indexes(txn);
            let Some(spec) = usable.iter().find(|s| s.eq && same(&s.attr)) else {
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

    /// slapd's order (back-mdb's modrdn): the suffix, the parent and its access rules, the entry and its
    /// own, then the new superior (missing, an alias, a referral), then the new name.
    fn modify_dn(&self, txn: &mut WriteTxn<'_>, m: ModifyDn, ctx: Ctx<'_>) -> Result<(), OpError> {
        if m.ndn == *self.suffix() {
            return Err(
                LdapError::new(ResultCode::NamingViolation, "cannot rename suffix entry").into(),
            );
        }
        let old_parent_ndn = m.ndn.parent().unwrap_or_else(NormDn::root);
        // A missing parent is noSuchObject without a matched DN, as back-mdb answers.
        let Some(old_parent_id) = self.id_in(txn, &old_parent_ndn).map_err(failed)? else {
            return Err(LdapError::new(ResultCode::NoSuchObject, "").into());
        };
        let moving = m.new_superior.is_some();
        ctx.guard.authorize(
            self,
            InWrite::new(txn),
            Action::RenameFrom {
                ndn: &m.ndn,
                moving,
            },
        )?;
        let (id, old) = self.load(txn, &m.ndn, &m.dn, ctx)?;
        ctx.guard
            .before_change(self, InWrite::new(txn), Some(id), &old)?;
        let moved_to = m.new_superior.as_ref().map(|(_, ndn)| ndn);
        let rdn_attrs: Vec<&str> = m.new_rdn.avas.iter().map(|a| a.attr.as_str()).collect();
        let action = Action::Rename {
            entry: &old,
            new_parent: moved_to,
            rdn_attrs: &rdn_attrs,
        };
        ctx.guard.authorize(self, InWrite::new(txn), action)?;
        self.referral_object(txn, id, &m.dn, ctx)?;
        // A new superior that is the old parent is no move.
        let new_superior = m
            .new_superior
            .as_ref()
            .filter(|(_, sup)| *sup != old_parent_ndn);
        let (parent_ndn, parent_id) = match new_superior {
            Some((_, sup_ndn)) => {
                if !self.holds(sup_ndn) {
                    return Err(LdapError::new(
                        ResultCode::AffectsMultipleDsas,
                        "cannot rename between DSAs",
                    )
                    .into());
                }
                let missing = || LdapError::new(ResultCode::NoSuchObject, "new superior not found");
                if m.ndn.is_suffix_of(sup_ndn) {
                    return Err(missing().into());
                }
                let sup_id = self
                    .id_in(txn, sup_ndn)
                    .map_err(failed)?
                    .ok_or_else(missing)?;
                (sup_ndn.clone(), sup_id)
            }
            None => (old_parent_ndn.clone(), old_parent_id),
        };
        let parent_dn = self.superior_dn(txn, parent_id, new_superior.is_some())?;
        let rdn_dn = Dn {
            rdns: vec![m.new_rdn.clone()],
        };
        let rdn_ndn = self
            .schema()
            .normalize_dn(&rdn_dn)
            .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN"))?;
        let new_rdn_norm = rdn_ndn.rdns().first().cloned().unwrap_or_default();
        let new_ndn = parent_ndn.child(&new_rdn_norm);
        let mut new_dn = rdn_dn.clone();
        self.pretty(&mut new_dn);
        new_dn.rdns.extend(parent_dn.rdns);
        let same_dn = new_ndn == m.ndn;
        if !same_dn && txn.get_id(&dn_key(&new_ndn)).map_err(failed)?.is_some() {
            return Err(LdapError::new(ResultCode::EntryAlreadyExists, "").into());
        }

        // Old RDN values are removed when asked, then the new ones added, through the ordinary modify rules
        // (slapd's order): a new RDN that names an old value in another spelling leaves the new spelling.
        let rdn_change = |operation, ava: &canopy_proto::Ava| Change {
            operation,
            modification: PartialAttribute {
                name: ava.attr.clone(),
                values: vec![ava.value.clone()],
            },
        };
        let mut entry = old.clone();
        entry.dn = new_dn.clone();
        entry.ndn = new_ndn.clone();
        if m.delete_old_rdn {
            if let Some(old_rdn) = m.dn.rdns.first() {
                let removals: Vec<Change> = old_rdn
                    .avas
                    .iter()
                    .map(|ava| rdn_change(ModifyOperation::Delete, ava))
                    .collect();
                apply_rdn_changes(self, &mut entry, &removals, true)?;
            }
        }
        let additions: Vec<Change> = m
            .new_rdn
            .avas
            .iter()
            .map(|ava| rdn_change(ModifyOperation::Add, ava))
            .collect();
        apply_rdn_changes(self, &mut entry, &additions, false)?;
        // The overlays first, then the schema (as `modify`).
        let parents = (old_parent_id, parent_id);
        self.store_renamed(
            txn,
            ctx.by(),
            id,
            &old,
            &mut entry,
            parents,
            Check::AfterHooks,
        )?;
        // slapd's post-read names a renamed entry as the request did: the new RDN under the new
        // superior's stored DN, or under the parent as the request spelled it.
        let shown = match new_superior {
            Some(_) => new_dn.clone(),
            None => {
                let mut shown = rdn_dn.clone();
                self.pretty(&mut shown);
                let mut parent = m.dn.parent();
                self.pretty(&mut parent);
                shown.rdns.extend(parent.rdns);
                shown
            }
        };
        ctx.guard.after_change(self, InWrite::new(txn), id, &shown);
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

/// Stamps the structural class on a new entry.
pub fn structural(dir: &Directory, entry: &Entry) -> Result<String, LdapError> {
    structural_class(dir.schema(), entry)
}
