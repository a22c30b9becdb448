//! Random write sequences checked against an in-memory model of every table.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use canopy_mdb::{ReadOps, Store, WriteTxn};
use common::{open, Rng};

const ATTRS: [&str; 2] = ["cn", "mail"];

#[derive(Debug, Clone)]
enum Op {
    PutEntry(u64, Vec<u8>),
    DelEntry(u64),
    PutDn(Vec<u8>, u64),
    DelDn(Vec<u8>),
    AddChild(u64, u64),
    DelChild(u64, u64),
    IndexAdd(usize, Vec<u8>, u64),
    IndexDel(usize, Vec<u8>, u64),
    PutMeta(Vec<u8>, Vec<u8>),
    NextId,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Model {
    entries: BTreeMap<u64, Vec<u8>>,
    dns: BTreeMap<Vec<u8>, u64>,
    children: BTreeSet<(u64, u64)>,
    index: [BTreeSet<(Vec<u8>, u64)>; 2],
    meta: BTreeMap<Vec<u8>, Vec<u8>>,
    next_id: u64,
}

impl Model {
    fn apply(&mut self, op: &Op) -> Option<u64> {
        match op {
            Op::PutEntry(id, v) => drop(self.entries.insert(*id, v.clone())),
            Op::DelEntry(id) => drop(self.entries.remove(id)),
            Op::PutDn(k, id) => drop(self.dns.insert(k.clone(), *id)),
            Op::DelDn(k) => drop(self.dns.remove(k)),
            Op::AddChild(p, c) => drop(self.children.insert((*p, *c))),
            Op::DelChild(p, c) => drop(self.children.remove(&(*p, *c))),
            Op::IndexAdd(a, k, id) => drop(self.index[*a].insert((k.clone(), *id))),
            Op::IndexDel(a, k, id) => drop(self.index[*a].remove(&(k.clone(), *id))),
            Op::PutMeta(k, v) => drop(self.meta.insert(k.clone(), v.clone())),
            Op::NextId => {
                let id = self.next_id;
                self.next_id += 1;
                return Some(id);
            }
        }
        None
    }
}

fn random_op(rng: &mut Rng) -> Op {
    let id = 1 + rng.below(20);
    let key = |rng: &mut Rng| rng.bytes(b"abc", 1, 3);
    match rng.below(10) {
        0 => Op::PutEntry(id, rng.bytes(b"xyz", 0, 40)),
        1 => Op::DelEntry(id),
        2 => Op::PutDn(rng.bytes(b"ab\0", 1, 4), id),
        3 => Op::DelDn(rng.bytes(b"ab\0", 0, 4)),
        4 => Op::AddChild(rng.below(4), id),
        5 => Op::DelChild(rng.below(4), id),
        6 => Op::IndexAdd(rng.below(2) as usize, key(rng), id),
        7 => Op::IndexDel(rng.below(2) as usize, key(rng), id),
        8 => Op::PutMeta(rng.bytes(b"pq", 1, 2), rng.bytes(b"v", 0, 3)),
        _ => Op::NextId,
    }
}

fn apply_store(txn: &mut WriteTxn<'_>, op: &Op) -> Option<u64> {
    match op {
        Op::PutEntry(id, v) => txn.put_entry(*id, v).unwrap(),
        Op::DelEntry(id) => txn.del_entry(*id).unwrap(),
        Op::PutDn(k, id) => txn.put_dn(k, *id).unwrap(),
        Op::DelDn(k) => txn.del_dn(k).unwrap(),
        Op::AddChild(p, c) => txn.add_child(*p, *c).unwrap(),
        Op::DelChild(p, c) => txn.del_child(*p, *c).unwrap(),
        Op::IndexAdd(a, k, id) => txn.index_add(ATTRS[*a], k, *id).unwrap(),
        Op::IndexDel(a, k, id) => txn.index_del(ATTRS[*a], k, *id).unwrap(),
        Op::PutMeta(k, v) => txn.put_meta(k, v).unwrap(),
        Op::NextId => return Some(txn.next_id().unwrap()),
    }
    None
}

/// Reads everything back through `ReadOps` into a model.
fn snapshot(r: &impl ReadOps, next_id: u64) -> Model {
    let mut m = Model {
        next_id,
        ..Model::default()
    };
    for item in r.entries().unwrap() {
        let (id, bytes) = item.unwrap();
        m.entries.insert(id, bytes.to_vec());
    }
    for (k, id) in r.subtree(b"").unwrap() {
        m.dns.insert(k, id);
    }
    for parent in 0..4 {
        let kids = r.children(parent).unwrap();
        assert_eq!(r.has_children(parent).unwrap(), !kids.is_empty());
        assert!(kids.windows(2).all(|w| w[0] < w[1]));
        m.children.extend(kids.into_iter().map(|c| (parent, c)));
    }
    for (a, attr) in ATTRS.iter().enumerate() {
        for k in all_keys() {
            for id in r.index_get(attr, &k).unwrap() {
                m.index[a].insert((k.clone(), id));
            }
        }
    }
    for k in [&b"p"[..], b"q", b"pp", b"pq", b"qp", b"qq"] {
        if let Some(v) = r.get_meta(k).unwrap() {
            m.meta.insert(k.to_vec(), v);
        }
    }
    m
}

fn all_keys() -> Vec<Vec<u8>> {
    let mut keys = vec![Vec::new()];
    let mut out = Vec::new();
    for _ in 0..3 {
        keys = keys
            .iter()
            .flat_map(|k| b"abc".iter().map(move |c| [k.as_slice(), &[*c]].concat()))
            .collect();
        out.extend(keys.iter().cloned());
    }
    out
}

fn check_queries(r: &impl ReadOps, model: &Model, rng: &mut Rng) {
    assert_eq!(r.entry_count().unwrap(), model.entries.len() as u64);
    for id in 0..22 {
        assert_eq!(
            r.get_entry(id).unwrap(),
            model.entries.get(&id).map(|v| v.as_slice())
        );
    }
    for _ in 0..10 {
        let prefix = rng.bytes(b"ab\0", 0, 2);
        let got = r.subtree(&prefix).unwrap();
        let streamed: Vec<(Vec<u8>, u64)> = r
            .subtree_iter(&prefix)
            .unwrap()
            .map(|i| i.map(|(k, id)| (k.to_vec(), id)).unwrap())
            .collect();
        assert_eq!(streamed, got);
        let ids: Vec<u64> = got.iter().map(|e| e.1).collect();
        assert_eq!(r.subtree_ids(&prefix).unwrap(), ids);
        let want: Vec<(Vec<u8>, u64)> = model
            .dns
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(got, want, "subtree {prefix:?}");
        let dn = rng.bytes(b"ab\0", 0, 3);
        assert_eq!(r.get_id(&dn).unwrap(), model.dns.get(&dn).copied());
    }
    for (a, attr) in ATTRS.iter().enumerate() {
        let set = &model.index[a];
        for _ in 0..10 {
            let prefix = rng.bytes(b"abc", 0, 2);
            let want: BTreeSet<u64> = set
                .iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .map(|e| e.1)
                .collect();
            assert_eq!(
                r.index_prefix(attr, &prefix).unwrap(),
                want.into_iter().collect::<Vec<_>>()
            );
            let lo = rng.bytes(b"abc", 0, 2);
            let hi = rng.bytes(b"abc", 0, 3);
            fn bound(k: &[u8], incl: bool) -> Bound<&[u8]> {
                match (k.is_empty(), incl) {
                    (true, _) => Bound::Unbounded,
                    (false, true) => Bound::Included(k),
                    (false, false) => Bound::Excluded(k),
                }
            }
            let (li, hi_incl) = (rng.below(2) == 0, rng.below(2) == 0);
            let from = bound(&lo, li);
            let to = bound(&hi, hi_incl);
            let want: BTreeSet<u64> = set
                .iter()
                .filter(|(k, _)| match from {
                    Bound::Included(b) => k.as_slice() >= b,
                    Bound::Excluded(b) => k.as_slice() > b,
                    Bound::Unbounded => true,
                })
                .filter(|(k, _)| match to {
                    Bound::Included(b) => k.as_slice() <= b,
                    Bound::Excluded(b) => k.as_slice() < b,
                    Bound::Unbounded => true,
                })
                .map(|e| e.1)
                .collect();
            assert_eq!(
                r.index_range(attr, from, to).unwrap(),
                want.into_iter().collect::<Vec<_>>()
            );
        }
    }
    // Unindexed attributes read as empty.
    assert!(r.index_get("sn", b"a").unwrap().is_empty());
}

#[test]
fn random_writes_match_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &ATTRS);
    let mut rng = Rng::new(0x5eed);
    let mut model = Model {
        next_id: 1,
        ..Model::default()
    };
    for round in 0..300 {
        let ops: Vec<Op> = (0..1 + rng.below(8)).map(|_| random_op(&mut rng)).collect();
        let fail = rng.below(5) == 0;
        let mut expected = model.clone();
        let expected_ids: Vec<Option<u64>> = ops.iter().map(|op| expected.apply(op)).collect();
        let (ops2, check_model) = (ops.clone(), expected.clone());
        let outcome = store
            .write(move |txn| {
                let ids: Vec<Option<u64>> = ops2.iter().map(|op| apply_store(txn, op)).collect();
                // The transaction sees its own writes.
                assert_eq!(snapshot(txn, check_model.next_id), check_model);
                if fail {
                    Err("closure failed")
                } else {
                    Ok(ids)
                }
            })
            .unwrap();
        match outcome {
            Ok(ids) => {
                assert!(!fail);
                assert_eq!(ids, expected_ids, "round {round}");
                model = expected;
            }
            Err(msg) => {
                assert!(fail);
                assert_eq!(msg, "closure failed");
            }
        }
        let r = store.read().unwrap();
        assert_eq!(snapshot(&r, model.next_id), model, "round {round}");
        check_queries(&r, &model, &mut rng);
    }
    // Persisted next_id continues after reopening.
    drop(store);
    let store = open(dir.path(), &ATTRS);
    let id = store
        .write(|txn| txn.next_id().map_err(|e| e.to_string()))
        .unwrap()
        .unwrap();
    assert_eq!(id, model.next_id);
    assert_eq!(snapshot(&store.read().unwrap(), model.next_id), model);
}

#[test]
fn async_writes_in_one_group_see_each_other_and_aborts_are_isolated() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &ATTRS);
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..200u64 {
        let tx = tx.clone();
        store.write_then(
            move |txn| {
                txn.put_entry(i, &i.to_be_bytes()).unwrap();
                // Every 3rd request fails: its write must vanish, its neighbours' must stay.
                if i % 3 == 0 {
                    Err(i)
                } else {
                    Ok(txn.get_entry(i).unwrap().map(|b| b.to_vec()))
                }
            },
            move |outcome| tx.send((i, outcome)).unwrap(),
        );
    }
    drop(tx);
    let mut seen = 0;
    for (i, outcome) in rx {
        match outcome.unwrap() {
            Ok(bytes) => assert_eq!(bytes, Some(i.to_be_bytes().to_vec())),
            Err(failed) => assert_eq!(failed, i),
        }
        seen += 1;
    }
    assert_eq!(seen, 200);
    let r = store.read().unwrap();
    for i in 0..200u64 {
        assert_eq!(r.get_entry(i).unwrap().is_some(), i % 3 != 0, "{i}");
    }
}

#[test]
fn store_rejects_bad_keys_without_breaking_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let store: Store = open(dir.path(), &ATTRS);
    let max = store.max_key_len();
    let long = vec![b'a'; max + 1];
    let out = store
        .write(move |txn| {
            assert!(txn.put_dn(&long, 1).is_err());
            assert!(txn.index_add("cn", &long, 1).is_err());
            assert!(txn.index_add("cn", b"", 1).is_err());
            assert!(txn.put_meta(b"\0format", b"x").is_err());
            assert!(txn.put_meta(b"", b"x").is_err());
            assert!(matches!(
                txn.put_dn(b"", 1),
                Err(canopy_mdb::StoreError::EmptyKey)
            ));
            // Not poisoned: later writes still work.
            txn.put_dn(&long[..max], 7)?;
            txn.index_add("CN", b"k", 7)?; // attribute names are case-insensitive
            txn.index_add("sn", b"k", 7)?; // unindexed: a no-op
            Ok::<_, canopy_mdb::StoreError>(())
        })
        .unwrap();
    out.unwrap();
    let r = store.read().unwrap();
    assert_eq!(r.get_id(&vec![b'a'; max]).unwrap(), Some(7));
    assert_eq!(r.index_get("cn", b"k").unwrap(), vec![7]);
    assert_eq!(
        r.get_meta(b"\0format").unwrap(),
        Some(canopy_mdb::FORMAT_VERSION.to_be_bytes().to_vec())
    );
}

#[test]
fn panicking_closure_is_contained() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let out = store.write(|txn| -> Result<(), ()> {
        txn.put_entry(1, b"x").unwrap();
        panic!("closure bug");
    });
    assert!(matches!(out, Err(canopy_mdb::StoreError::Panicked)));
    assert!(store.read().unwrap().get_entry(1).unwrap().is_none());
    store.write(|txn| txn.put_entry(2, b"y")).unwrap().unwrap();
    assert_eq!(store.read().unwrap().get_entry(2).unwrap(), Some(&b"y"[..]));
}

#[test]
fn blocking_write_from_a_callback_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let (tx, rx) = std::sync::mpsc::channel();
    let inner = store.clone();
    store.write_then(
        |_txn| Ok::<_, ()>(()),
        move |_| {
            let nested = inner.write(|txn| txn.put_entry(1, b"x"));
            tx.send(matches!(nested, Err(canopy_mdb::StoreError::WouldDeadlock)))
                .unwrap();
        },
    );
    assert!(rx.recv().unwrap());
}

#[test]
fn lookups_with_keys_beyond_the_limit_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &ATTRS);
    let max = store.max_key_len();
    let k1 = vec![b'a'; max];
    let k2 = [vec![b'a'; max - 1], vec![b'b']].concat();
    let (s1, s2) = (k1.clone(), k2.clone());
    store
        .write(move |txn| -> Result<(), canopy_mdb::StoreError> {
            txn.index_add("cn", &s1, 1)?;
            txn.index_add("cn", &s2, 2)?;
            txn.index_add("cn", b"b", 3)?;
            txn.put_dn(&s1, 1)
        })
        .unwrap()
        .unwrap();
    let r = store.read().unwrap();
    let long = vec![b'a'; max + 1];
    assert_eq!(r.get_id(&long).unwrap(), None);
    assert_eq!(r.get_meta(&long).unwrap(), None);
    assert!(r.index_get("cn", &long).unwrap().is_empty());
    assert!(r.index_prefix("cn", &long).unwrap().is_empty());
    assert!(r.subtree(&long).unwrap().is_empty());
    assert_eq!(r.subtree(&k1).unwrap(), vec![(k1.clone(), 1)]);
    let range = |from: Bound<&[u8]>, to: Bound<&[u8]>| r.index_range("cn", from, to).unwrap();
    // k1 is a prefix of `long`, so it sorts below it; k2 sorts above it.
    assert_eq!(range(Bound::Included(&long), Bound::Unbounded), vec![2, 3]);
    assert_eq!(range(Bound::Excluded(&long), Bound::Unbounded), vec![2, 3]);
    assert_eq!(range(Bound::Unbounded, Bound::Included(&long)), vec![1]);
    assert_eq!(range(Bound::Unbounded, Bound::Excluded(&long)), vec![1]);
    assert_eq!(
        range(Bound::Included(&k1), Bound::Included(&k2)),
        vec![1, 2]
    );
    assert_eq!(
        range(Bound::Unbounded, Bound::Excluded(b"")),
        Vec::<u64>::new()
    );
    assert_eq!(range(Bound::Excluded(b""), Bound::Unbounded), vec![1, 2, 3]);
}
