//! What the frontend reads in: a [`Snapshot`] of the committed database, or [`InWrite`], the view from
//! inside a write's transaction; [`View`] stands for either. They wrap the store's transactions
//! without cost (a newtype, a borrow) so that `canopy-server` names no storage type and reads stored
//! entries only through [`Directory`](crate::Directory)'s methods.

use canopy_mdb::{ReadOps, ReadTxn, WriteTxn};

/// A consistent snapshot of the committed database, from [`Directory::read`](crate::Directory::read).
/// `Send`, so a search can move between threads; keep it short-lived: an open snapshot keeps the pages it
/// sees from being reused and delays map growth. Dropping it ends the read (the store may keep the
/// transaction for the next reader of the same snapshot).
#[repr(transparent)]
pub struct Snapshot(ReadTxn);

impl Snapshot {
    pub(crate) fn new(txn: ReadTxn) -> Snapshot {
        Snapshot(txn)
    }

    /// The store's read transaction, for the backend's own reads.
    pub(crate) fn txn(&self) -> &ReadTxn {
        &self.0
    }

    /// Shared by every snapshot of one committed state, higher after every commit: an answer read in
    /// one holds for every snapshot with the same ID.
    pub fn id(&self) -> usize {
        self.0.snapshot_id()
    }
}

/// The database as a write sees it from inside its own transaction (its uncommitted changes included),
/// handed to a [`Guard`](crate::Guard) so that its access checks are atomic with the write.
#[derive(Clone, Copy)]
pub struct InWrite<'t>(&'t WriteTxn<'t>);

impl<'t> InWrite<'t> {
    pub(crate) fn new(txn: &'t WriteTxn<'t>) -> InWrite<'t> {
        InWrite(txn)
    }
}

mod sealed {
    use super::*;

    /// The store's transaction behind a view; private so that only this crate's views implement
    /// [`View`](super::View) and only this crate reads through them.
    pub trait Txn {
        type Txn: ReadOps + Txn;
        fn txn(&self) -> &Self::Txn;
        /// The committed state the view reads ([`Snapshot::id`]), under which answers may be
        /// remembered; None inside a write, whose own changes no other reader sees.
        #[inline]
        fn committed(&self) -> Option<usize> {
            None
        }
    }

    impl Txn for Snapshot {
        type Txn = ReadTxn;
        #[inline]
        fn txn(&self) -> &ReadTxn {
            &self.0
        }
        #[inline]
        fn committed(&self) -> Option<usize> {
            Some(self.0.snapshot_id())
        }
    }

    impl<'t> Txn for InWrite<'t> {
        type Txn = WriteTxn<'t>;
        #[inline]
        fn txn(&self) -> &WriteTxn<'t> {
            self.0
        }
    }

    impl Txn for ReadTxn {
        type Txn = ReadTxn;
        #[inline]
        fn txn(&self) -> &ReadTxn {
            self
        }
        #[inline]
        fn committed(&self) -> Option<usize> {
            Some(self.snapshot_id())
        }
    }

    impl<'a> Txn for WriteTxn<'a> {
        type Txn = WriteTxn<'a>;
        #[inline]
        fn txn(&self) -> &WriteTxn<'a> {
            self
        }
    }
}

/// A consistent view of one database: a [`Snapshot`], or [`InWrite`] inside a write. Code that must
/// decide the same way in both (access control on a search and in a write's [`Guard`](crate::Guard))
/// is generic over it; calls are resolved at compile time, nothing is boxed.
pub trait View: sealed::Txn {}

impl<T: sealed::Txn> View for T {}

/// The store's transaction behind `view`, for the backend's own reads.
#[inline]
pub(crate) fn txn<V: View>(view: &V) -> &V::Txn {
    sealed::Txn::txn(view)
}

/// The committed state `view` reads, under which per-snapshot answers are remembered; None inside
/// a write.
#[inline]
pub(crate) fn committed<V: View>(view: &V) -> Option<usize> {
    sealed::Txn::committed(view)
}
