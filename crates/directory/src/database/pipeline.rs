//! The write pipeline: an ordered chain of hooks that run inside a write's transaction on the writer
//! thread, before and after the change is stored (docs/design/write-pipeline.md).
//!
//! A hook is slapd's overlay made atomic: whatever it reads sees the write's own transaction, whatever it
//! writes commits or rolls back with the change itself, and an error from any hook refuses the whole
//! write with that error's result code.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_mdb::WriteTxn;
use canopy_schema::{NormDn, Schema};

use super::Directory;
use crate::event::{Event, Kind, Origin, Proposed};

/// What a hook does with a change received from a provider (`Origin::Replica`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnReplica {
    /// Runs as for a local change: the hooks that record every change (session log, change feed,
    /// access and audit logs).
    Run,
    /// Skipped: what the hook would make of the change arrived with it (unique, constraint, ppolicy).
    Skip,
    /// Runs in a plain consumer only, to derive what a slapd provider does not send (its memberof's and
    /// refint's changes to other entries are never replicated); skipped between multi-provider peers,
    /// where the writer's server derived and stamped it and the merge carries it.
    InPlainConsumer,
}

/// One step of the pipeline. Both methods run on the writer thread inside the write's nested
/// transaction; neither may block on anything but that transaction.
pub trait WriteHook: Send + Sync {
    /// The hook's name, as the configuration and the logs call it (slapd's overlay name where one exists).
    fn name(&self) -> &'static str;

    /// Checks the hook's settings against the database it runs in (attribute names, DNs inside the
    /// suffix) when the database opens, so that a bad setting is a configuration error, not a
    /// refusal of every write.
    fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        let _ = (schema, suffix);
        Ok(())
    }

    /// Before the change is stored: may read anything through `txn`, change the entry to be stored, or
    /// refuse the write with an error (its result code goes to the client).
    fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        let _ = (dir, txn, change);
        Ok(())
    }

    /// After the change is stored, in the same transaction: may write other entries (through
    /// [`Directory::rewrite`]) or its own records (`txn.put_meta`), or refuse the write with an error,
    /// which rolls back everything the write and the hooks before it did.
    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let _ = (dir, txn, event);
        Ok(())
    }

    /// Whether the hook works on a modify whose old and new entries are partial
    /// (docs/design/big-values.md): the modify only adds values to one large attribute, which the old
    /// entry lacks and the new one holds with the added values only. A hook that answers true computes
    /// what it does from the difference of the two entries or the changes, or does not look at that
    /// attribute; the default, false, sends such a modify through the path that decodes the whole entry.
    fn accepts_partial(&self) -> bool {
        false
    }

    /// Whether the hook sees changes received from a provider (`Origin::Replica`), and where: see
    /// [`OnReplica`]. A refusal of a received change would stop replication at it for good, so hooks
    /// that police a change skip them (slapd's unique and constraint skip a syncrepl session's writes
    /// the same way). The default runs the hook on them.
    fn on_replica(&self) -> OnReplica {
        OnReplica::Run
    }

    /// Recomputes from scratch what the hook keeps (offline: `canopy reindex`, after `canopy import`),
    /// in one transaction over the whole database; the number of entries it changed.
    fn rebuild(&self, dir: &Directory, txn: &mut WriteTxn<'_>) -> Result<u64, LdapError> {
        let _ = (dir, txn);
        Ok(0)
    }
}

/// The hooks of one database, in the order they run.
#[derive(Clone, Default)]
pub struct Pipeline {
    hooks: Vec<Arc<dyn WriteHook>>,
}

impl Pipeline {
    /// The hooks every database runs: [`Stamping`].
    pub fn standard() -> Pipeline {
        Pipeline::default().then(Arc::new(Stamping))
    }

    /// This pipeline with `hook` appended: it runs after every hook already in it.
    pub fn then(mut self, hook: Arc<dyn WriteHook>) -> Pipeline {
        self.hooks.push(hook);
        self
    }

    /// Whether every hook accepts partial entries ([`WriteHook::accepts_partial`]).
    pub fn accepts_partial(&self) -> bool {
        self.hooks.iter().all(|h| h.accepts_partial())
    }

    /// The first hook named `name` (an overlay kept as it is when the others change live).
    pub fn hook(&self, name: &str) -> Option<&Arc<dyn WriteHook>> {
        self.hooks.iter().find(|h| h.name() == name)
    }

    /// The hooks' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.hooks.iter().map(|h| h.name()).collect()
    }

    /// Every hook's [`WriteHook::check`]: the first problem, with the hook's name.
    pub fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), (&'static str, String)> {
        self.hooks
            .iter()
            .try_for_each(|hook| hook.check(schema, suffix).map_err(|e| (hook.name(), e)))
    }

    pub(crate) fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        let origin = change.origin;
        self.hooks
            .iter()
            .filter(|hook| runs(dir, hook.as_ref(), origin))
            .try_for_each(|hook| hook.prepare(dir, txn, change))?;
        stamp_attributes(dir, change);
        Ok(())
    }

    /// [`Pipeline::commit`] for the hook named `name` alone (for a record only that hook keeps).
    pub(crate) fn commit_only(
        &self,
        name: &str,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        self.hooks
            .iter()
            .filter(|hook| hook.name() == name)
            .try_for_each(|hook| hook.commit(dir, txn, event))
    }

    pub(crate) fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        self.hooks
            .iter()
            .filter(|hook| runs(dir, hook.as_ref(), event.origin))
            .try_for_each(|hook| hook.commit(dir, txn, event))
    }
}

/// Whether `hook` acts on a change of `origin` in `dir`.
fn runs(dir: &Directory, hook: &dyn WriteHook, origin: Origin) -> bool {
    match (origin, hook.on_replica()) {
        (Origin::Local, _) | (Origin::Replica, OnReplica::Run) => true,
        (Origin::Replica, OnReplica::Skip) => false,
        (Origin::Replica, OnReplica::InPlainConsumer) => !dir.multiprovider(),
    }
}

impl Directory {
    /// Runs every hook's [`WriteHook::rebuild`] in one durable write (offline tools; blocks).
    pub fn rebuild(&self) -> Result<u64, LdapError> {
        let dir = self.clone();
        let result = self.store().write(move |txn| -> Result<u64, LdapError> {
            let mut changed = 0;
            for hook in &dir.pipeline().hooks {
                changed += hook.rebuild(&dir, txn)?;
            }
            Ok(changed)
        });
        result.map_err(crate::error::store_error)?
    }
}

/// A local write to a multi-provider database stamps the attributes it changes (and the DN when it
/// changes) with its CSN in `canopyAttrCSN`, after every hook has made its changes to the entry, so
/// that concurrent writes on other servers merge attribute by attribute (docs/design/replication.md).
fn stamp_attributes(dir: &Directory, change: &mut Proposed<'_>) {
    if change.origin != Origin::Local || !dir.multiprovider() {
        return;
    }
    let old = change.old;
    if let Some(new) = change.new.as_deref_mut() {
        if old.is_none() && crate::attrcsn::stamps(new).is_some() {
            // An import of an exported entry: its stamps are kept as they were.
            return;
        }
        // The entry's own entryCSN: the stamp's, or the one an import supplied.
        let csn = crate::attrcsn::csn_of(new).unwrap_or_else(|| change.stamp.csn.clone());
        crate::attrcsn::stamp_write(old, new, &csn);
    }
}

/// The operational attributes of a write: createTimestamp, modifyTimestamp and entryCSN from the write's
/// stamp, and modifiersName. Taken on the writer thread, the CSNs of a database ascend in commit order.
pub struct Stamping;

impl WriteHook for Stamping {
    fn name(&self) -> &'static str {
        "stamping"
    }

    /// Stamps only operational attributes.
    fn accepts_partial(&self) -> bool {
        true
    }

    fn prepare(
        &self,
        _dir: &Directory,
        _txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        if change.origin == Origin::Replica {
            return Ok(());
        }
        let (stamp, requester) = (change.stamp, change.requester);
        match (change.kind, change.new.as_deref_mut()) {
            (Kind::Add, Some(entry)) => stamp.fill(entry),
            // Values the change itself writes (under the Relax Rules control) are kept.
            (Kind::Modify | Kind::Rename, Some(entry)) => {
                stamp.touch_unless_written(entry, requester, change.changes)
            }
            _ => {}
        }
        Ok(())
    }

    /// A local write raises the database's contextCSN with its own CSN, in its own transaction
    /// (docs/design/replication.md); a replicated one leaves that to the consumer's cookie.
    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        if event.origin == Origin::Replica {
            return Ok(());
        }
        let csn = canopy_proto::sync::Csn::parse(&event.stamp.csn).ok_or_else(|| {
            LdapError::new(canopy_proto::ResultCode::Other, "malformed local CSN")
        })?;
        dir.raise_context_csn(txn, &std::iter::once(csn).collect())?;
        Ok(())
    }
}
