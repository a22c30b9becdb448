//! Group commit, map growth, bulk loading and reopening, through the public API.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use canopy_mdb::{ReadOps, Store, StoreConfig, StoreError};
use common::{config, open, Rng};

/// Writes one entry, retrying on `MapFull` as callers are meant to: growth is postponed while readers
/// hold passes for long, which a loaded test machine can cause.
fn put_one(store: &Store, id: u64, bytes: Vec<u8>) {
    for _ in 0..5 {
        let bytes = bytes.clone();
        let outcome = store.write(move |txn| -> Result<(), StoreError> {
            txn.put_entry(id, &bytes)?;
            txn.put_dn(format!("e{id:08}\0").as_bytes(), id)?;
            txn.add_child(0, id)
        });
        match outcome {
            Err(StoreError::MapFull) | Ok(Err(StoreError::MapFull)) => continue,
            other => return other.unwrap().unwrap(),
        }
    }
    panic!("entry {id}: still MapFull after 5 attempts");
}

#[test]
fn concurrent_writers_are_group_committed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), &["cn"]);
    cfg.durable = true;
    let store = Store::open(cfg).unwrap();
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..40u64 {
                    let id = 1 + t * 1000 + i;
                    let acked = store
                        .write(move |txn| -> Result<u64, StoreError> {
                            txn.put_entry(id, &id.to_le_bytes())?;
                            txn.index_add("cn", b"all", id)?;
                            Ok(id)
                        })
                        .unwrap()
                        .unwrap();
                    assert_eq!(acked, id);
                    // Acknowledged means committed: visible to a new snapshot at once.
                    assert!(store.read().unwrap().get_entry(id).unwrap().is_some());
                }
            })
        })
        .collect();
    // A burst of non-blocking requests queues up behind the running commit.
    let (tx, rx) = mpsc::channel();
    for i in 0..300u64 {
        let tx = tx.clone();
        let id = 100_000 + i;
        store.write_then(
            move |txn| txn.put_entry(id, b"burst"),
            move |r| tx.send(r).unwrap(),
        );
    }
    drop(tx);
    assert_eq!(rx.iter().map(|r| r.unwrap().unwrap()).count(), 300);
    for t in threads {
        t.join().unwrap();
    }
    let r = store.read().unwrap();
    assert_eq!(r.entry_count().unwrap(), 8 * 40 + 300);
    assert_eq!(r.index_get("cn", b"all").unwrap().len(), 8 * 40);
    let stats = store.stats().unwrap();
    assert!(stats.max_group_size > 1, "{stats:?}");
    assert!(stats.groups_committed < stats.ops_committed, "{stats:?}");
    assert_eq!(stats.ops_committed, 8 * 40 + 300);
}

#[test]
fn map_grows_under_load_with_concurrent_readers() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), &[]);
    cfg.initial_map_size = 1 << 20;
    let store = Store::open(cfg).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop) = (store.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let r = store.read().unwrap();
                    // Writers interleave IDs, so look at whatever entry follows a probe ID.
                    if let Some(item) = r.entries_from(1 + checks % 1000).unwrap().next() {
                        let (id, bytes) = item.unwrap();
                        assert_eq!(bytes.len(), 50_000);
                        assert!(bytes.iter().all(|b| *b == id as u8));
                    }
                    checks += 1;
                    drop(r);
                    thread::sleep(Duration::from_micros(200));
                }
                checks
            })
        })
        .collect();
    // 50 MB in 50 KB entries, written by two threads.
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..500u64 {
                    let id = 1 + i * 2 + w;
                    put_one(&store, id, vec![id as u8; 50_000]);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let stats = store.stats().unwrap();
    assert_eq!(stats.entries, 1000);
    assert!(stats.map_size >= 50_000_000, "{stats:?}");
    assert!(stats.map_grows >= 5, "{stats:?}");
    let r = store.read().unwrap();
    assert_eq!(r.children(0).unwrap(), (1..=1000).collect::<Vec<_>>());
}

#[test]
fn map_full_is_reported_after_growing_so_a_retry_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), &[]);
    cfg.initial_map_size = 1 << 20;
    let store = Store::open(cfg).unwrap();
    let big = vec![7u8; 1_200_000];
    let attempt = |bytes: Vec<u8>| store.write(move |txn| txn.put_entry(1, &bytes));
    match attempt(big.clone()) {
        Err(StoreError::MapFull) => {}
        other => panic!("expected MapFull, got {other:?}"),
    }
    attempt(big.clone()).unwrap().unwrap();
    assert_eq!(store.read().unwrap().get_entry(1).unwrap(), Some(&big[..]));
    assert!(store.stats().unwrap().map_grows >= 1);
}

#[test]
fn a_held_reader_postpones_growth_without_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), &[]);
    cfg.initial_map_size = 1 << 20;
    let store = Store::open(cfg).unwrap();
    let held = store.read().unwrap();
    // 800 KB: past the 75% mark, so growth is wanted, but it fits, so the writes succeed anyway.
    for id in 1..=8 {
        put_one(&store, id, vec![1; 100_000]);
    }
    let stats = store.stats().unwrap();
    assert_eq!(stats.map_grows, 0);
    assert!(stats.map_used > stats.map_size / 4 * 3, "{stats:?}");
    assert_eq!(held.entry_count().unwrap(), 0);
    drop(held);
    thread::sleep(Duration::from_millis(600)); // past the growth back-off
    put_one(&store, 9, vec![1; 10]);
    assert!(store.stats().unwrap().map_grows >= 1);
}

/// Builds a tree: id 1 is the suffix, ids 2..=n hang below pseudo-random earlier ids.
fn tree(n: u64, rng: &mut Rng) -> Vec<(u64, Vec<u8>, Option<u64>)> {
    let mut nodes: Vec<(u64, Vec<u8>, Option<u64>)> = vec![(1, b"dc=example\0".to_vec(), None)];
    for id in 2..=n {
        let parent = 1 + rng.below(id - 1);
        let mut key = nodes[(parent - 1) as usize].1.clone();
        key.extend_from_slice(format!("cn=n{id}\0").as_bytes());
        nodes.push((id, key, Some(parent)));
    }
    nodes
}

#[test]
fn bulk_load_then_read_back_and_keep_writing() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), &["objectclass", "cn"]);
    cfg.initial_map_size = 1 << 20; // forces growth inside the load too
    cfg.durable = true;
    let store = Store::open(cfg).unwrap();
    let mut rng = Rng::new(42);
    let nodes = tree(5000, &mut rng);
    let mut loader = store.bulk_loader().unwrap();
    assert!(matches!(
        store.bulk_loader(),
        Err(StoreError::BulkLoadActive)
    ));
    loader.set_batch_entries(700);
    assert_eq!(loader.next_id(), 1);
    for (id, key, parent) in &nodes {
        let entry = format!("entry {id} ").repeat(1 + (*id as usize % 50));
        let keys = vec![
            (0, b"person".to_vec()),
            (1, format!("n{}", id % 100).into_bytes()),
        ];
        loader
            .add(*id, key, *parent, entry.as_bytes(), &keys)
            .unwrap();
    }
    assert!(matches!(
        loader.add(3, b"x\0", None, b"", &[] as &[(usize, &[u8])]),
        Err(StoreError::IdNotAscending { .. })
    ));
    assert!(matches!(
        loader.add(9000, b"x\0", None, b"", &[(2, vec![1])]),
        Err(StoreError::UnknownIndex(2))
    ));
    let stats = loader.finish().unwrap();
    assert_eq!(stats.entries, 5000);

    let check = |store: &Store| {
        let r = store.read().unwrap();
        for (id, key, parent) in &nodes {
            assert_eq!(r.get_id(key).unwrap(), Some(*id));
            let entry = format!("entry {id} ").repeat(1 + (*id as usize % 50));
            assert_eq!(r.get_entry(*id).unwrap(), Some(entry.as_bytes()));
            if let Some(p) = parent {
                assert!(r.children(*p).unwrap().binary_search(id).is_ok());
            }
        }
        let subtree = r.subtree_ids(b"dc=example\0").unwrap();
        assert_eq!(subtree.len(), 5000);
        assert_eq!(subtree[0], 1); // the base comes first
        assert_eq!(r.entry_ids().unwrap(), (1..=5000).collect::<Vec<_>>());
        assert_eq!(r.index_get("objectClass", b"person").unwrap().len(), 5000);
        let n7: Vec<u64> = (1..=5000).filter(|id| id % 100 == 7).collect();
        assert_eq!(r.index_get("cn", b"n7").unwrap(), n7);
        // A capped read gives up beyond its budget and is whole within it.
        assert_eq!(
            r.index_get_capped("cn", b"n7", n7.len()).unwrap(),
            Some(n7.clone())
        );
        assert_eq!(r.index_get_capped("cn", b"n7", n7.len() - 1).unwrap(), None);
        assert_eq!(
            r.index_get_capped("objectClass", b"person", 4999).unwrap(),
            None
        );
        let all = std::ops::Bound::Unbounded;
        assert_eq!(r.index_range_capped("cn", all, all, 10).unwrap(), None);
        assert_eq!(
            r.index_range_capped("cn", all, all, usize::MAX)
                .unwrap()
                .map(|v| v.len()),
            Some(r.index_range("cn", all, all).unwrap().len())
        );
        let total: usize = nodes.iter().filter(|(id, _, _)| *id > 1).count();
        let children: usize = (1..=5000).map(|p| r.children(p).unwrap().len()).sum();
        assert_eq!(children, total);
    };
    check(&store);
    // Normal writes continue above the loaded IDs.
    let next = store.write(|txn| txn.next_id()).unwrap().unwrap();
    assert_eq!(next, 5001);
    drop(store);
    let store = open(dir.path(), &["objectclass", "cn"]);
    check(&store);
    let mut loader = store.bulk_loader().unwrap();
    assert_eq!(loader.next_id(), 5002);
    loader
        .add(5002, b"dc=other\0", None, b"more", &[] as &[(usize, &[u8])])
        .unwrap();
    drop(loader); // not finished: the unflushed entry is discarded
    assert!(store.read().unwrap().get_entry(5002).unwrap().is_none());
}

/// A second load into a filled store: its keys land before, between, on and after the stored ones,
/// so the appending fast paths and the ordinary inserts both run.
#[test]
fn second_bulk_load_merges_with_stored_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path(), &["cn"])).unwrap();
    let load = |store: &Store, ids: std::ops::RangeInclusive<u64>, batch: usize| {
        let mut loader = store.bulk_loader().unwrap();
        loader.set_batch_entries(batch);
        for id in ids {
            let dn = format!("dn{:05}\0", (id * 7919) % 10007);
            let keys = vec![
                (0, format!("k{}", id % 13).into_bytes()),
                (0, format!("z{id}").into_bytes()),
            ];
            loader
                .add(id, dn.as_bytes(), Some(1 + id % 3), b"e", &keys)
                .unwrap();
        }
        loader.finish().unwrap();
    };
    load(&store, 1..=3000, 1000);
    load(&store, 3001..=6000, 700);
    let r = store.read().unwrap();
    for id in 1..=6000u64 {
        let dn = format!("dn{:05}\0", (id * 7919) % 10007);
        assert_eq!(r.get_id(dn.as_bytes()).unwrap(), Some(id));
        assert_eq!(
            r.index_get("cn", format!("z{id}").as_bytes()).unwrap(),
            vec![id]
        );
    }
    for k in 0..13u64 {
        let want: Vec<u64> = (1..=6000).filter(|id| id % 13 == k).collect();
        assert_eq!(r.index_get("cn", format!("k{k}").as_bytes()).unwrap(), want);
    }
    for parent in 1..=3u64 {
        let want: Vec<u64> = (1..=6000).filter(|id| 1 + id % 3 == parent).collect();
        assert_eq!(r.children(parent).unwrap(), want);
    }
}

#[test]
fn reopen_keeps_data_and_adds_new_index_tables() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), &["cn"]);
        store
            .write(|txn| -> Result<(), StoreError> {
                let id = txn.next_id()?;
                txn.put_entry(id, b"one")?;
                txn.put_dn(b"\x01", id)?; // the server's key of the root DN
                txn.index_add("cn", b"x", id)?;
                txn.put_meta(b"suffix", b"dc=example")
            })
            .unwrap()
            .unwrap();
        // A reader outliving its store still works.
        let r = store.read().unwrap();
        drop(store);
        assert_eq!(r.get_entry(1).unwrap(), Some(&b"one"[..]));
    }
    let store = open(dir.path(), &["cn", "mail"]);
    assert_eq!(store.indexes(), ["cn".to_string(), "mail".to_string()]);
    let r = store.read().unwrap();
    assert_eq!(r.get_entry(1).unwrap(), Some(&b"one"[..]));
    assert_eq!(r.get_id(b"\x01").unwrap(), Some(1));
    assert_eq!(r.get_id(b"").unwrap(), None);
    assert_eq!(r.index_get("cn", b"x").unwrap(), vec![1]);
    assert!(r.index_get("mail", b"x").unwrap().is_empty());
    assert_eq!(r.get_meta(b"suffix").unwrap(), Some(b"dc=example".to_vec()));
    let names: Vec<String> = store
        .stats()
        .unwrap()
        .tables
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        [
            "id2entry",
            "id2chunk",
            "dn2id",
            "dn2children",
            "meta",
            "synclog",
            "idx.cn",
            "idx.mail"
        ]
    );
    drop(r);
    store
        .write(|txn| -> Result<(), StoreError> {
            txn.clear_index("cn")?;
            assert!(txn.index_get("cn", b"x")?.is_empty());
            txn.clear_index("unindexed")
        })
        .unwrap()
        .unwrap();
    assert!(store
        .read()
        .unwrap()
        .index_get("cn", b"x")
        .unwrap()
        .is_empty());
    // Opening the same directory twice in one process is refused, not undefined.
    assert!(matches!(
        Store::open(StoreConfig::new(dir.path())),
        Err(StoreError::AlreadyOpen)
    ));
}

#[test]
fn key_limit_follows_the_page_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    // With heed's `longer-keys`, 4 KiB pages allow keys far beyond LMDB's default 511 bytes.
    let max = store.max_key_len();
    assert!(max > 1000, "{max}");
    let key = vec![b'k'; max];
    let k2 = key.clone();
    store.write(move |txn| txn.put_dn(&k2, 1)).unwrap().unwrap();
    assert_eq!(store.read().unwrap().get_id(&key).unwrap(), Some(1));
}

/// Another process grows the map while this one has the database open: this process's next read and
/// next write adopt the new size (MDB_MAP_RESIZED) instead of failing.
#[test]
fn map_grown_by_another_process_is_adopted() {
    const CHILD: &str = "CANOPY_MDB_TEST_CHILD_DIR";
    let small = |dir: &std::path::Path| {
        let mut cfg = config(dir, &[]);
        cfg.initial_map_size = 1 << 20;
        Store::open(cfg).unwrap()
    };
    if let Ok(dir) = std::env::var(CHILD) {
        // The child: write 8 MB through a map that starts at 1 MiB.
        let store = small(std::path::Path::new(&dir));
        for id in 100..260 {
            put_one(&store, id, vec![id as u8; 50_000]);
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = small(dir.path());
    put_one(&store, 1, vec![1; 1000]);
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "map_grown_by_another_process_is_adopted",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let r = store.read().unwrap();
    assert_eq!(r.entry_count().unwrap(), 161);
    assert_eq!(r.get_entry(259).unwrap().unwrap().len(), 50_000);
    drop(r);
    put_one(&store, 2, vec![2; 1000]);
    assert!(store.stats().unwrap().map_size >= 8 << 20);
}

/// Candidates read by lookups (sparse) and by one cursor walk (dense) give the same answers, missing IDs
/// included.
#[test]
fn candidate_entries_dense_and_sparse() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    // IDs 1..=600, every seventh one missing.
    store
        .write(|txn| -> Result<(), StoreError> {
            for id in (1..=600u64).filter(|id| id % 7 != 0) {
                txn.put_entry(id, format!("entry {id}").as_bytes())?;
            }
            Ok(())
        })
        .unwrap()
        .unwrap();
    let txn = store.read().unwrap();
    let expect = |ids: &[u64]| -> Vec<(u64, Option<Vec<u8>>)> {
        ids.iter()
            .map(|id| {
                (
                    *id,
                    (id % 7 != 0 && *id <= 600).then(|| format!("entry {id}").into_bytes()),
                )
            })
            .collect()
    };
    let got = |ids: &[u64]| -> Vec<(u64, Option<Vec<u8>>)> {
        txn.candidate_entries(ids)
            .unwrap()
            .map(|item| {
                item.map(|(id, bytes)| (id, bytes.map(<[u8]>::to_vec)))
                    .unwrap()
            })
            .collect()
    };
    let dense: Vec<u64> = (3..=650).filter(|id| id % 5 != 0).collect();
    let sparse: Vec<u64> = vec![2, 7, 99, 100, 600, 601, 5000];
    let empty: Vec<u64> = Vec::new();
    for ids in [&dense, &sparse, &empty] {
        assert_eq!(got(ids), expect(ids), "{} candidates", ids.len());
    }
}

/// `canopy import` loads through MDB_WRITEMAP (as `slapadd -q` does); the server then opens the same files
/// without it, reads everything back and writes on.
#[test]
fn write_map_bulk_load_reopens_for_ordinary_use() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), &["cn"]);
    cfg.initial_map_size = 1 << 20; // the map grows during the load
    cfg.write_map = true;
    {
        let store = Store::open(cfg).unwrap();
        let mut loader = store.bulk_loader().unwrap();
        loader.set_batch_entries(500);
        for id in 1..=4000u64 {
            let dn = format!("dn{id:05}\0");
            let entry = format!("entry {id} ").repeat(1 + (id as usize % 40));
            let keys = vec![(0, format!("k{}", id % 7).into_bytes())];
            loader
                .add(id, dn.as_bytes(), None, entry.as_bytes(), &keys)
                .unwrap();
        }
        assert_eq!(loader.finish().unwrap().entries, 4000);
    }
    let store = open(dir.path(), &["cn"]);
    {
        let r = store.read().unwrap();
        assert_eq!(r.entry_count().unwrap(), 4000);
        for id in (1..=4000u64).step_by(97) {
            let entry = format!("entry {id} ").repeat(1 + (id as usize % 40));
            assert_eq!(r.get_entry(id).unwrap(), Some(entry.as_bytes()));
            assert_eq!(
                r.get_id(format!("dn{id:05}\0").as_bytes()).unwrap(),
                Some(id)
            );
        }
        let want: Vec<u64> = (1..=4000).filter(|id| id % 7 == 3).collect();
        assert_eq!(r.index_get("cn", b"k3").unwrap(), want);
    }
    store
        .write(|txn| -> Result<(), StoreError> {
            let id = txn.next_id()?;
            assert_eq!(id, 4001);
            txn.put_entry(id, b"after")?;
            txn.put_dn(b"dn04001\0", id)
        })
        .unwrap()
        .unwrap();
    assert_eq!(
        store.read().unwrap().get_entry(4001).unwrap(),
        Some(&b"after"[..])
    );
}
