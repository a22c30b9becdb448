//! A write as its hooks and the change feed see it: its kind and origin, the change about to be
//! stored and the change as stored, and actions to run once the write is durable.

use canopy_core::Entry;
use canopy_proto::Change;

use crate::opattrs::Stamp;

/// The kind of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Add,
    Delete,
    Modify,
    /// Modify DN: the event names the renamed entry; its descendants move with it.
    Rename,
}

/// Where a write comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// An operation of a client of this server (or a tool): stamped here, checked by every hook.
    Local,
    /// A change received from a syncrepl provider: its operational attributes (entryCSN, entryUUID,
    /// timestamps, modifiersName) and whatever overlays computed there (memberOf ...) arrive with it,
    /// so hooks that derive state from a change leave it alone (docs/design/replication.md).
    Replica,
}

/// A change about to be stored, as [`WriteHook::prepare`](crate::WriteHook::prepare) sees it: access control and the schema check
/// have passed.
pub struct Proposed<'a> {
    pub kind: Kind,
    /// The entry's ID (a new one for an add).
    pub id: u64,
    /// The entry before the write; None for an add.
    pub old: Option<&'a Entry>,
    /// The entry to be stored, which a hook may change; None for a delete.
    pub new: Option<&'a mut Entry>,
    /// A modify's changes as requested (empty for other kinds).
    pub changes: &'a [Change],
    /// The write's time and CSN, taken on the writer thread, so CSNs ascend in commit order.
    pub stamp: &'a Stamp,
    /// The requester's DN, as creatorsName and modifiersName record it.
    pub requester: &'a str,
    pub origin: Origin,
}

/// A change as stored, as [`WriteHook::commit`](crate::WriteHook::commit) sees it.
pub struct Event<'a> {
    pub kind: Kind,
    pub id: u64,
    pub old: Option<&'a Entry>,
    pub new: Option<&'a Entry>,
    pub changes: &'a [Change],
    pub stamp: &'a Stamp,
    pub requester: &'a str,
    pub origin: Origin,
}

impl Event<'_> {
    /// Gives `entry`, which a hook rewrites because of this change, the change's modifiersName,
    /// modifyTimestamp and entryCSN, when the change is local; a derivation from a received change
    /// leaves them as the provider made them (slapd's overlays' internal modifies touch none).
    pub fn touch(&self, entry: &mut Entry, modifier: &str) {
        if self.origin == Origin::Local {
            self.stamp.touch(entry, modifier);
        }
    }
}

/// Something to do once a write is durable, registered by a hook with [`after_commit`].
pub type AfterCommit = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Actions the running write's hooks registered. Write closures run one at a time on the store's
    /// single writer thread, so the list belongs to the closure that is running; `Directory::write`
    /// empties it before each attempt and takes it when the attempt succeeds.
    static AFTER_COMMIT: std::cell::RefCell<Vec<AfterCommit>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// For hooks: runs `action` on the writer thread once the group commit holding this write is durable,
/// in commit order; never when the write rolls back (a later hook's refusal, a failed commit) and only
/// once when a full map makes the write run again. This is how a hook records something outside the
/// transaction (slapd's auditlog) without ever recording a change that did not happen.
pub fn after_commit(action: impl FnOnce() + Send + 'static) {
    AFTER_COMMIT.with(|list| list.borrow_mut().push(Box::new(action)));
}

/// Forgets what the last write attempt registered.
pub(crate) fn clear_after_commit() {
    AFTER_COMMIT.with(|list| list.borrow_mut().clear());
}

/// Takes what the write that just succeeded registered.
pub(crate) fn take_after_commit() -> Vec<AfterCommit> {
    AFTER_COMMIT.with(|list| std::mem::take(&mut *list.borrow_mut()))
}
