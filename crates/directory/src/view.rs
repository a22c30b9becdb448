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
    }

    impl Txn for Snapshot {
        type Txn = ReadTxn;
        #[inline]
        fn txn(&self) -> &ReadTxn {
            &self.0
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::{Directory, OpenOptions, Pipeline};

    /// Dropping a `Snapshot` ends its read the way dropping the store's transaction does: the next
    /// snapshot of the same commit reuses it instead of beginning another.
    #[test]
    fn a_dropped_snapshot_goes_back_to_the_pool() {
        let tmp = tempfile::tempdir().unwrap();
        let mut options = OpenOptions::new(tmp.path());
        options.durable = false;
        let schema = Arc::new(canopy_schema::Schema::builtin());
        let dir = Directory::open(
            schema,
            "dc=example,dc=com",
            Vec::new(),
            options,
            Pipeline::standard(),
        )
        .unwrap();
        let begun = || dir.store().stats().unwrap().read_txns_begun;
        dir.store()
            .write(|txn| txn.put_meta(b"probe", b"1"))
            .unwrap()
            .unwrap();
        // (The figures read in a snapshot of their own: taken only while no other is open.)
        drop(dir.read().unwrap());
        let before = begun();
        let id = dir.read().unwrap().id();
        for _ in 0..10 {
            let snapshot = dir.read().unwrap();
            assert_eq!(snapshot.id(), id);
        }
        assert_eq!(begun(), before, "every dropped snapshot was reused");
        // Two at once never share one transaction: the second begins its own.
        let (a, b) = (dir.read().unwrap(), dir.read().unwrap());
        assert_eq!(a.id(), b.id());
        drop((a, b));
        assert_eq!(begun(), before + 1);
    }
}
