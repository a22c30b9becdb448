//! Idle LMDB read transactions, kept for the next reader while their snapshot is still the newest.
//!
//! Beginning a read transaction costs a reader-table slot, a copy of the per-table state of every open
//! table, and on first use of each named table a descent of the main B-tree to refresh its record.
//! When nothing has been committed since a transaction began, the next reader would see exactly the
//! same snapshot, so [`ReadTxn`](crate::ReadTxn) hands its transaction back here when it drops and
//! [`read`](crate::Store::read) takes it again (docs/design/storage.md, "Reused read snapshots").
//!
//! Invariants:
//! - A transaction is held by one owner at a time: an open `ReadTxn` or this pool, never both (LMDB
//!   lets an `MDB_NOTLS` read transaction move between threads, not serve two at once: its lazy
//!   per-table refresh writes transaction state).
//! - Only a snapshot of the newest commit is handed out: its ID equals the environment's last
//!   committed transaction ID (`mdb_env_info`) when it is taken, and its table epoch equals the
//!   current one (opening a table that already exists commits nothing, yet a transaction begun before
//!   must not use the new handle).
//! - Stale transactions do not stay: one is never put back after a commit (the check runs under the
//!   pool's lock, which the writer takes after every commit to drop what went stale).
//! - While a map resize is pending the pool is closed and empty, so the resize waits only for
//!   transactions in use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use heed::{Env, RoTxn, WithoutTls};

use crate::gate::Pass;

/// A read transaction with the gate pass that keeps the map from being resized under it.
pub(crate) struct Snapshot {
    // Field order matters: the LMDB transaction must end before the gate pass is returned.
    pub(crate) txn: RoTxn<'static, WithoutTls>,
    /// The pool's table epoch read before the transaction began.
    epoch: u64,
    _pass: Pass,
}

impl Snapshot {
    /// `epoch` must be read (with [`Pool::epoch`]) before `txn` began, so that a transaction that might
    /// predate a table opening is never tagged as newer.
    pub(crate) fn new(txn: RoTxn<'static, WithoutTls>, epoch: u64, pass: Pass) -> Self {
        Snapshot {
            txn,
            epoch,
            _pass: pass,
        }
    }
}

#[derive(Default)]
struct Idle {
    snapshots: Vec<Snapshot>,
    /// Pending map resizes: while above zero nothing is kept.
    closed: u32,
}

pub(crate) struct Pool {
    idle: Mutex<Idle>,
    /// Idle transactions kept at most (each holds a reader-table slot).
    cap: usize,
    /// Bumped after a table is opened in the environment.
    epoch: AtomicU64,
    /// Transactions begun (not taken from the pool), for the statistics.
    pub(crate) begun: AtomicU64,
}

impl Pool {
    /// A pool of at most a few transactions per core, and at most a quarter of the reader slots.
    pub(crate) fn new(max_readers: u32) -> Pool {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let slots = usize::try_from(max_readers).unwrap_or(usize::MAX) / 4;
        Pool::with_cap(cores.saturating_mul(4).min(slots))
    }

    pub(crate) fn with_cap(cap: usize) -> Pool {
        Pool {
            idle: Mutex::new(Idle::default()),
            cap,
            epoch: AtomicU64::new(0),
            begun: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Idle> {
        // A list and a counter that every critical section leaves consistent.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn fresh(&self, snapshot: &Snapshot, newest: usize) -> bool {
        snapshot.txn.id() == newest && snapshot.epoch == self.epoch()
    }

    /// An idle transaction of the newest snapshot, if one is kept. Stale ones met are aborted.
    pub(crate) fn take(&self, env: &Env<WithoutTls>) -> Option<Snapshot> {
        let mut stale = Vec::new();
        let found = {
            let mut idle = self.lock();
            if idle.snapshots.is_empty() {
                return None;
            }
            let newest = newest(&idle, env)?;
            loop {
                match idle.snapshots.pop() {
                    Some(snapshot) if self.fresh(&snapshot, newest) => break Some(snapshot),
                    Some(snapshot) => stale.push(snapshot),
                    None => break None,
                }
            }
        };
        // Aborted outside the lock: each abort returns a reader slot and a gate pass.
        drop(stale);
        found
    }

    /// Keeps `snapshot` for the next reader if it is still the newest and there is room; otherwise
    /// gives it back to be aborted (by the caller, outside the lock).
    pub(crate) fn put(&self, snapshot: Snapshot, env: &Env<WithoutTls>) -> Option<Snapshot> {
        let mut idle = self.lock();
        if idle.snapshots.len() >= self.cap {
            return Some(snapshot);
        }
        // Read under the lock: the writer's `drop_stale` after a commit then either sees this
        // snapshot in the list or this check sees that commit.
        match newest(&idle, env) {
            Some(newest) if self.fresh(&snapshot, newest) => {
                idle.snapshots.push(snapshot);
                None
            }
            _ => Some(snapshot),
        }
    }

    /// Aborts the idle transactions older than the last commit. Called after every commit of this
    /// process, so that idle snapshots never pin pages a later write could reuse.
    pub(crate) fn drop_stale(&self, env: &Env<WithoutTls>) {
        let stale: Vec<Snapshot> = {
            let mut idle = self.lock();
            if idle.snapshots.is_empty() {
                return;
            }
            let Some(newest) = newest(&idle, env) else {
                return;
            };
            let (keep, stale) = std::mem::take(&mut idle.snapshots)
                .into_iter()
                .partition(|snapshot| self.fresh(snapshot, newest));
            idle.snapshots = keep;
            stale
        };
        drop(stale);
    }

    /// After a table was opened: no transaction begun before may be handed out again.
    pub(crate) fn table_opened(&self, env: &Env<WithoutTls>) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.drop_stale(env);
    }

    /// Empties the pool and keeps it empty until [`reopen`](Self::reopen): a map resize is pending.
    pub(crate) fn close(&self) {
        let all = {
            let mut idle = self.lock();
            idle.closed = idle.closed.saturating_add(1);
            std::mem::take(&mut idle.snapshots)
        };
        drop(all);
    }

    pub(crate) fn reopen(&self) {
        let mut idle = self.lock();
        idle.closed = idle.closed.saturating_sub(1);
    }

    /// Idle transactions kept now.
    pub(crate) fn idle(&self) -> usize {
        self.lock().snapshots.len()
    }
}

/// The ID of the last committed transaction, or None while a map resize is pending.
///
/// `mdb_env_info` reads the meta pages through the map, which a resize unmaps: it may only run while
/// no resize can. Every resize closes the pool (under its lock) before it takes the gate and reopens
/// it after, so under the lock of an open pool no resize is running or can begin.
fn newest(idle: &MutexGuard<'_, Idle>, env: &Env<WithoutTls>) -> Option<usize> {
    (idle.closed == 0).then(|| env.info().last_txn_id)
}
