//! Large values stored in chunks (docs/design/storage.md, "id2chunk"): whole reads through every read
//! path, splices that rewrite only the chunks at their edits, deletes, and values that begin with the
//! chunk mark.

mod common;

use canopy_mdb::{RawTable, ReadOps, Store, StoreError};
use common::{open, Rng};

/// A value of `len` bytes that tells its own positions apart.
fn value(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| 1 + rng.below(250) as u8).collect()
}

fn put(store: &Store, id: u64, bytes: &[u8]) {
    let bytes = bytes.to_vec();
    store
        .write(move |txn| txn.put_entry(id, &bytes))
        .unwrap()
        .unwrap();
}

fn splice(store: &Store, id: u64, head: &[u8], keep: std::ops::Range<usize>, tail: &[u8]) {
    let (head, tail) = (head.to_vec(), tail.to_vec());
    store
        .write(move |txn| txn.splice_entry(id, &head, keep, &tail))
        .unwrap()
        .unwrap();
}

/// Every read path gives `want` for `id`.
fn check(store: &Store, id: u64, want: &[u8]) {
    let txn = store.read().unwrap();
    assert_eq!(txn.get_entry(id).unwrap().unwrap(), want, "get_entry");
    let scanned: Vec<(u64, Vec<u8>)> = txn
        .entries()
        .unwrap()
        .map(|item| item.map(|(id, bytes)| (id, bytes.to_vec())).unwrap())
        .collect();
    let found = scanned.iter().find(|(i, _)| *i == id).unwrap();
    assert_eq!(found.1, want, "entries");
    let ranged = txn.entries_from(id).unwrap().next().unwrap().unwrap();
    assert_eq!(ranged, (id, want), "entries_from");
    let ids: Vec<u64> = (1..=3).collect();
    let candidates: Vec<_> = txn
        .candidate_entries(&ids)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let candidate = candidates.iter().find(|(i, _)| *i == id).unwrap();
    assert_eq!(candidate.1, Some(want), "candidate_entries");
    let raw = txn
        .raw_pairs(RawTable::Id2Entry)
        .unwrap()
        .map(Result::unwrap)
        .find(|(key, _)| *key == id.to_be_bytes())
        .unwrap();
    assert_eq!(raw.1, want, "raw_pairs");
}

fn chunk_records(store: &Store) -> usize {
    store
        .stats()
        .unwrap()
        .tables
        .iter()
        .find(|t| t.name == "id2chunk")
        .map_or(0, |t| t.entries)
}

#[test]
fn large_values_read_back_whole_and_splice_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    put(&store, 1, b"small");
    let mut big = value(1 << 20, 7);
    put(&store, 2, &big);
    put(&store, 3, &[0, 0, 1, 2]);
    check(&store, 1, b"small");
    check(&store, 2, &big);
    check(&store, 3, &[0, 0, 1, 2]);
    let chunks = chunk_records(&store);
    assert!(chunks >= 64, "a 1 MiB value is in chunks ({chunks})");
    // Appends in the middle, the way a big group grows: a new head, most of the value kept, a new tail.
    for round in 0..40u8 {
        let keep = 10..big.len() - 20;
        let head = vec![round; 12];
        let mut tail = vec![0xee; 7 + round as usize];
        tail.extend_from_slice(&big[big.len() - 20..]);
        splice(&store, 2, &head, keep.clone(), &tail);
        big = [&head[..], &big[keep], &tail[..]].concat();
        check(&store, 2, &big);
    }
    // The chunk count stays about the same: splices do not pile up small chunks; the heads list
    // exactly the chunks stored (no orphan left by a splice).
    let after = chunk_records(&store);
    let (listed, stored) = store.read().unwrap().chunk_counts().unwrap();
    assert_eq!((listed, stored), (after as u64, after as u64));
    assert!(
        after <= chunks + 8,
        "{chunks} chunks before the splices, {after} after"
    );
    // A value that shrinks below the threshold is stored whole again; its chunks go.
    put(&store, 2, b"short again");
    check(&store, 2, b"short again");
    assert_eq!(chunk_records(&store), 0);
    // A delete of a chunked value takes its chunks.
    put(&store, 2, &big);
    store.write(|txn| txn.del_entry(2)).unwrap().unwrap();
    assert_eq!(chunk_records(&store), 0);
    assert!(store.read().unwrap().get_entry(2).unwrap().is_none());
}

#[test]
fn a_splice_of_a_value_stored_whole_writes_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let small = value(1000, 3);
    put(&store, 1, &small);
    splice(&store, 1, b"[", 1..999, b"]");
    check(&store, 1, &[b"[", &small[1..999], b"]"].concat());
    // Growing past the threshold by a splice puts the value in chunks.
    let big = value(300 * 1024, 4);
    put(&store, 1, &big[..1000]);
    let tail = big[1000..].to_vec();
    splice(&store, 1, b"", 0..1000, &tail);
    check(&store, 1, &big);
    assert!(chunk_records(&store) > 0);
    // A range beyond the value is refused, and the value stays.
    let beyond = big.len() + 1;
    let refused = store.write(move |txn| txn.splice_entry(1, b"", 0..beyond, b""));
    assert!(matches!(refused, Ok(Err(StoreError::Corrupt { .. }))));
    check(&store, 1, &big);
}

#[test]
fn chunked_values_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let big = value(700 * 1024, 9);
    {
        let store = open(dir.path(), &[]);
        put(&store, 1, &big);
        splice(&store, 1, b"h", 1..big.len() - 1, b"t");
    }
    let store = open(dir.path(), &[]);
    check(&store, 1, &[b"h", &big[1..big.len() - 1], b"t"].concat());
}
