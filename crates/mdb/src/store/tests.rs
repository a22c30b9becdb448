//! Tests of the read pool through the store: when a snapshot is reused and when not, how many are
//! kept, and that idle ones hold up neither writes, map growth nor new tables.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use super::*;
use crate::read::ReadOps;

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
