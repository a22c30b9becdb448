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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};
    use std::thread;
    use std::time::Duration;

    use super::*;
    use crate::{ReadOps, Store, StoreConfig, StoreError};

    const MIB: usize = 1 << 20;

    fn open(dir: &std::path::Path, map: usize, indexes: &[&str]) -> Store {
        let mut cfg = StoreConfig::new(dir);
        cfg.durable = false;
        cfg.initial_map_size = map;
        cfg.indexes = indexes.iter().map(|s| s.to_string()).collect();
        Store::open(cfg).unwrap()
    }

    fn put(store: &Store, id: u64, bytes: &[u8]) {
        let bytes = bytes.to_vec();
        store
            .write(move |txn| txn.put_entry(id, &bytes))
            .unwrap()
            .unwrap();
    }

    fn begun(store: &Store) -> u64 {
        store.shared().pool.begun.load(Ordering::Relaxed)
    }

    fn idle(store: &Store) -> usize {
        store.shared().pool.idle()
    }

    #[test]
    fn a_snapshot_is_reused_while_nothing_is_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 64 * MIB, &[]);
        put(&store, 1, b"one");
        let first = store.read().unwrap();
        let snapshot = first.snapshot_id();
        let before = begun(&store);
        drop(first);
        assert_eq!(idle(&store), 1);
        for _ in 0..100 {
            let r = store.read().unwrap();
            assert_eq!(r.snapshot_id(), snapshot);
            assert_eq!(r.get_entry(1).unwrap(), Some(&b"one"[..]));
        }
        assert_eq!(
            begun(&store),
            before,
            "every read took the idle transaction"
        );
        // Two readers at once never share one transaction: the second begins its own.
        let (a, b) = (store.read().unwrap(), store.read().unwrap());
        assert_eq!(begun(&store), before + 1);
        assert_eq!(idle(&store), 0);
        assert_eq!(a.snapshot_id(), b.snapshot_id());
        drop((a, b));
        assert_eq!(idle(&store), 2);
    }

    #[test]
    fn no_snapshot_is_reused_across_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 64 * MIB, &[]);
        put(&store, 1, b"one");
        let old = store.read().unwrap().snapshot_id();
        assert_eq!(idle(&store), 1);
        put(&store, 1, b"two");
        // The writer dropped the stale snapshot before acknowledging the write.
        assert_eq!(idle(&store), 0);
        let before = begun(&store);
        let r = store.read().unwrap();
        assert!(r.snapshot_id() > old);
        assert_eq!(r.get_entry(1).unwrap(), Some(&b"two"[..]));
        assert_eq!(begun(&store), before + 1);
    }

    #[test]
    fn a_snapshot_in_use_during_a_commit_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 64 * MIB, &[]);
        put(&store, 1, b"one");
        let held = store.read().unwrap();
        put(&store, 1, b"two");
        assert_eq!(held.get_entry(1).unwrap(), Some(&b"one"[..]));
        drop(held);
        assert_eq!(idle(&store), 0);
        assert_eq!(
            store.read().unwrap().get_entry(1).unwrap(),
            Some(&b"two"[..])
        );
    }

    #[test]
    fn idle_snapshots_pin_no_pages_under_writes() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 256 * MIB, &[]);
        put(&store, 1, &[0; 50_000]);
        drop((store.read().unwrap(), store.read().unwrap()));
        assert_eq!(idle(&store), 2);
        let rewrite = |round: u8| {
            let start = store.stats().unwrap().map_used;
            for i in 0..200u8 {
                put(&store, 1, &[i ^ round; 50_000]);
            }
            store.stats().unwrap().map_used - start
        };
        // Each rewrite frees the 13 pages of the value before; nothing old is read, so they are reused.
        let grown = rewrite(0);
        assert!(grown < 2 * MIB, "{grown} bytes for 200 rewrites");
        // A snapshot in use does keep its pages and everything freed after it (the contrast that shows
        // the figure above can tell).
        let held = store.read().unwrap();
        let pinned = rewrite(1);
        assert!(
            pinned > 5 * MIB,
            "{pinned} bytes for 200 rewrites under a reader"
        );
        drop(held);
    }

    #[test]
    fn map_growth_does_not_wait_for_idle_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), MIB, &[]);
        put(&store, 1, b"small");
        drop(store.read().unwrap());
        assert_eq!(idle(&store), 1);
        let shared = store.shared();
        assert!(shared.grow(4 * MIB, Duration::from_millis(500)));
        assert_eq!(idle(&store), 0);
        assert!(store.stats().unwrap().map_size >= 4 * MIB);
        // A snapshot in use still holds a resize up, and the pool opens again after it gave up.
        let held = store.read().unwrap();
        assert!(!shared.grow(64 * MIB, Duration::from_millis(50)));
        drop(held);
        assert_eq!(idle(&store), 1);
        // Through the writer: a value larger than the map fails once, grows the map (past the idle
        // snapshot: the failed group commits nothing, so the snapshot stays the newest), then fits.
        let big = vec![7u8; 5 * MIB];
        let attempt = |bytes: Vec<u8>| store.write(move |txn| txn.put_entry(2, &bytes));
        assert!(matches!(attempt(big.clone()), Err(StoreError::MapFull)));
        drop(store.read().unwrap());
        attempt(big.clone()).unwrap().unwrap();
        assert_eq!(store.read().unwrap().get_entry(2).unwrap(), Some(&big[..]));
    }

    #[test]
    fn a_write_acknowledged_is_seen_by_every_later_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 64 * MIB, &[]);
        put(&store, 1, &0u32.to_be_bytes());
        // Readers on other threads keep the pool full of snapshots that each commit makes stale.
        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..2)
            .map(|_| {
                let (store, stop) = (store.clone(), Arc::clone(&stop));
                thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let r = store.read().unwrap();
                        assert!(r.get_entry(1).unwrap().is_some());
                    }
                })
            })
            .collect();
        let (to_checker, written) = mpsc::channel::<u32>();
        let (to_writer, checked) = mpsc::channel::<()>();
        let checker = {
            let store = store.clone();
            thread::spawn(move || {
                for value in written {
                    let r = store.read().unwrap();
                    assert_eq!(r.get_entry(1).unwrap(), Some(&value.to_be_bytes()[..]));
                    to_writer.send(()).unwrap();
                }
            })
        };
        for value in 1..=300u32 {
            if value % 2 == 0 {
                put(&store, 1, &value.to_be_bytes());
            } else {
                // Acknowledged by a completion on the writer thread, which reads it back there too.
                let (done, acked) = mpsc::channel();
                let reader = store.clone();
                store.write_then(
                    move |txn| txn.put_entry(1, &value.to_be_bytes()),
                    move |outcome| {
                        outcome.unwrap().unwrap();
                        let seen = reader
                            .read()
                            .unwrap()
                            .get_entry(1)
                            .unwrap()
                            .map(<[u8]>::to_vec);
                        done.send(seen).unwrap();
                    },
                );
                assert_eq!(acked.recv().unwrap(), Some(value.to_be_bytes().to_vec()));
            }
            to_checker.send(value).unwrap();
            checked.recv().unwrap();
        }
        drop(to_checker);
        checker.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        for thread in busy {
            thread.join().unwrap();
        }
    }

    #[test]
    fn a_table_opened_later_is_read_through_a_new_transaction() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path(), 64 * MIB, &["cn"]);
            store
                .write(|txn| txn.index_add("cn", b"x", 1))
                .unwrap()
                .unwrap();
        }
        // idx.cn stays in the file but is not open; opening it again commits nothing new.
        let store = open(dir.path(), 64 * MIB, &[]);
        let old = store.read().unwrap().snapshot_id();
        assert_eq!(idle(&store), 1);
        store.add_index_table("cn").unwrap();
        let before = begun(&store);
        let r = store.read().unwrap();
        assert_eq!(r.snapshot_id(), old);
        assert_eq!(begun(&store), before + 1);
        assert_eq!(r.index_get("cn", b"x").unwrap(), vec![1]);
    }

    #[test]
    fn the_pool_keeps_at_most_a_quarter_of_the_reader_slots() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = StoreConfig::new(dir.path());
        cfg.durable = false;
        cfg.max_readers = 4;
        let store = Store::open(cfg).unwrap();
        drop((
            store.read().unwrap(),
            store.read().unwrap(),
            store.read().unwrap(),
        ));
        assert_eq!(idle(&store), 1);
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = StoreConfig::new(dir.path());
        cfg.max_readers = 3;
        let store = Store::open(cfg).unwrap();
        drop(store.read().unwrap());
        assert_eq!(idle(&store), 0);
        assert!(store.read().unwrap().get_entry(1).unwrap().is_none());
    }
}
