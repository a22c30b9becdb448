//! Reading: the operations shared by read and write transactions, and the read transaction itself.

use std::mem::ManuallyDrop;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use heed::types::Bytes;
use heed::{MdbError, RoIter, RoPrefix, RoTxn};

use crate::chunk::{assemble, is_head, unescape, Arena, MARK};
use crate::error::StoreError;
use crate::keys::{decode_id, id_key};
use crate::pool::Snapshot;
use crate::shared::Shared;
use crate::tables::{Tables, DN2CHILDREN, DN2ID, ID2ENTRY};

pub(crate) mod sealed {
    use super::*;

    /// What a transaction must expose for [`ReadOps`](super::ReadOps); private so that only this
    /// crate's transactions implement it.
    pub trait Access {
        fn ro_txn(&self) -> &RoTxn<'_>;
        fn tables(&self) -> &Tables;
        /// Values put back together from chunks during this transaction.
        fn arena(&self) -> &Arena;
    }
}

use sealed::Access;

/// Reads available on both [`ReadTxn`] (a committed snapshot) and [`WriteTxn`](crate::WriteTxn) (which
/// also sees its own uncommitted writes). Returned slices borrow the memory map: no copy.
pub trait ReadOps: Access {
    /// The ID stored under a DN key.
    fn get_id(&self, dn_key: &[u8]) -> Result<Option<u64>, StoreError> {
        if !self.tables().storable(dn_key) {
            return Ok(None);
        }
        match self.tables().dn2id.get(self.ro_txn(), dn_key)? {
            Some(raw) => decode_id(DN2ID, raw).map(Some),
            None => Ok(None),
        }
    }

    /// The entry bytes stored under an ID (put back together when stored in chunks).
    fn get_entry(&self, id: u64) -> Result<Option<&[u8]>, StoreError> {
        match self.tables().id2entry.get(self.ro_txn(), &id_key(id))? {
            Some(raw) => self.whole(id, raw).map(Some),
            None => Ok(None),
        }
    }

    /// The value of entry `id` whose `id2entry` record is `raw`: `raw` itself, or for a chunk head the
    /// chunks put together (kept until the transaction ends).
    fn whole<'s>(&'s self, id: u64, raw: &'s [u8]) -> Result<&'s [u8], StoreError> {
        if !is_head(raw) {
            return Ok(unescape(raw));
        }
        let value = assemble(self.ro_txn(), self.tables(), id, raw)?;
        Ok(self.arena().keep(value))
    }

    /// The IDs of the direct children of `parent`, ascending.
    fn children(&self, parent: u64) -> Result<Vec<u64>, StoreError> {
        let mut ids = Vec::new();
        if let Some(dups) = self
            .tables()
            .dn2children
            .get_duplicates(self.ro_txn(), &id_key(parent))?
        {
            for item in dups {
                let (_, raw) = item?;
                ids.push(decode_id(DN2CHILDREN, raw)?);
            }
        }
        Ok(ids)
    }

    /// Whether `parent` has at least one child.
    fn has_children(&self, parent: u64) -> Result<bool, StoreError> {
        Ok(self
            .tables()
            .dn2children
            .get(self.ro_txn(), &id_key(parent))?
            .is_some())
    }

    /// Every (DN key, ID) whose DN key starts with `dn_key_prefix`, in key order. With the server's DN
    /// key format (RDNs from the root down, each followed by 0x00) this is the subtree of the base,
    /// base included. Owned keys, so the caller may rewrite dn2id while walking them (modrdn).
    fn subtree(&self, dn_key_prefix: &[u8]) -> Result<Vec<(Vec<u8>, u64)>, StoreError> {
        self.subtree_iter(dn_key_prefix)?
            .map(|item| item.map(|(key, id)| (key.to_vec(), id)))
            .collect()
    }

    /// The IDs of [`subtree`](Self::subtree), in DN-key order (not sorted by ID).
    fn subtree_ids(&self, dn_key_prefix: &[u8]) -> Result<Vec<u64>, StoreError> {
        self.subtree_iter(dn_key_prefix)?
            .map(|item| item.map(|(_, id)| id))
            .collect()
    }

    /// [`subtree`](Self::subtree) as a streaming iterator borrowing the map.
    fn subtree_iter(&self, dn_key_prefix: &[u8]) -> Result<SubtreeIter<'_>, StoreError> {
        let dn2id = &self.tables().dn2id;
        let inner = if dn_key_prefix.is_empty() {
            SubtreeInner::All(dn2id.iter(self.ro_txn())?)
        } else if !self.tables().storable(dn_key_prefix) {
            SubtreeInner::Empty
        } else {
            SubtreeInner::Prefix(dn2id.prefix_iter(self.ro_txn(), dn_key_prefix)?)
        };
        Ok(SubtreeIter { inner })
    }

    /// The IDs indexed under exactly `key`, ascending; empty if `attr` has no index.
    fn index_get(&self, attr: &str, key: &[u8]) -> Result<Vec<u64>, StoreError> {
        Ok(self
            .index_get_capped(attr, key, usize::MAX)?
            .unwrap_or_default())
    }

    /// `index_get`, giving up (None) as soon as more than `cap` IDs are found: a key that common costs more
    /// to read than the candidates it would rule out.
    fn index_get_capped(
        &self,
        attr: &str,
        key: &[u8],
        cap: usize,
    ) -> Result<Option<Vec<u64>>, StoreError> {
        let Some(table) = self.tables().index(attr) else {
            return Ok(Some(Vec::new()));
        };
        if !self.tables().storable(key) {
            return Ok(Some(Vec::new()));
        }
        let mut ids = Vec::new();
        if let Some(dups) = table.get_duplicates(self.ro_txn(), key)? {
            if !collect_ids(dups, &mut ids, cap)? {
                return Ok(None);
            }
        }
        Ok(Some(ids))
    }

    /// The union of the IDs under every key starting with `key_prefix`, ascending and deduplicated.
    fn index_prefix(&self, attr: &str, key_prefix: &[u8]) -> Result<Vec<u64>, StoreError> {
        let Some(table) = self.tables().index(attr) else {
            return Ok(Vec::new());
        };
        let mut ids = Vec::new();
        if key_prefix.is_empty() {
            collect_ids(table.iter(self.ro_txn())?, &mut ids, usize::MAX)?;
        } else if !self.tables().storable(key_prefix) {
            // No stored key is that long, so none starts with it.
        } else {
            collect_ids(
                table.prefix_iter(self.ro_txn(), key_prefix)?,
                &mut ids,
                usize::MAX,
            )?;
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// The union of the IDs under every key within the bounds, ascending and deduplicated.
    fn index_range(
        &self,
        attr: &str,
        from: Bound<&[u8]>,
        to: Bound<&[u8]>,
    ) -> Result<Vec<u64>, StoreError> {
        Ok(self
            .index_range_capped(attr, from, to, usize::MAX)?
            .unwrap_or_default())
    }

    /// `index_range`, giving up (None) once more than `cap` (key, ID) pairs are read.
    fn index_range_capped(
        &self,
        attr: &str,
        from: Bound<&[u8]>,
        to: Bound<&[u8]>,
        cap: usize,
    ) -> Result<Option<Vec<u64>>, StoreError> {
        let Some(table) = self.tables().index(attr) else {
            return Ok(Some(Vec::new()));
        };
        // Stored keys are 1..=max bytes long. An empty lower bound is no bound; an empty upper bound
        // admits nothing. Against keys of at most `max` bytes, `k >= b` (or `k > b`) with `b` longer
        // than `max` is exactly `k > b[..max]`, and `k <= b` (or `k < b`) is exactly `k <= b[..max]`.
        let max = self.tables().max_key;
        let from = match from {
            Bound::Included([]) | Bound::Excluded([]) => Bound::Unbounded,
            Bound::Included(b) | Bound::Excluded(b) if b.len() > max => {
                Bound::Excluded(b.get(..max).unwrap_or(b))
            }
            other => other,
        };
        let to = match to {
            Bound::Included([]) | Bound::Excluded([]) => return Ok(Some(Vec::new())),
            Bound::Included(b) | Bound::Excluded(b) if b.len() > max => {
                Bound::Included(b.get(..max).unwrap_or(b))
            }
            other => other,
        };
        let mut ids = Vec::new();
        if !collect_ids(table.range(self.ro_txn(), &(from, to))?, &mut ids, cap)? {
            return Ok(None);
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(Some(ids))
    }

    /// Every entry ID, ascending (the full scan, without the entry bytes).
    fn entry_ids(&self) -> Result<Vec<u64>, StoreError> {
        let mut ids = Vec::new();
        for item in self.tables().id2entry.iter(self.ro_txn())? {
            let (key, _) = item?;
            ids.push(decode_id(ID2ENTRY, key)?);
        }
        Ok(ids)
    }

    /// Every (ID, entry bytes) in ID order: the full scan.
    fn entries(&self) -> Result<EntryIter<'_>, StoreError>
    where
        Self: Sized,
    {
        Ok(EntryIter {
            inner: self.tables().id2entry.iter(self.ro_txn())?,
            owner: self,
        })
    }

    /// The stored bytes of each of `ids` (ascending), in order; None for an ID with no entry. When the IDs are
    /// most of those between the first and the last, one cursor walk over id2entry reads them (skipping the
    /// others) instead of one B-tree lookup each: the full-scan case.
    fn candidate_entries<'t>(&'t self, ids: &'t [u64]) -> Result<CandidateEntries<'t>, StoreError>
    where
        Self: Sized,
    {
        let dense = match (ids.first(), ids.last()) {
            (Some(first), Some(last)) => {
                ids.len() >= DENSE_MIN && last.saturating_sub(*first) / 2 < ids.len() as u64
            }
            _ => false,
        };
        let walk = match ids.first() {
            Some(first) if dense => Some(self.entries_from(*first)?.peekable()),
            _ => None,
        };
        Ok(CandidateEntries {
            ops: self,
            ids,
            next: 0,
            walk,
        })
    }

    /// Every (ID, entry bytes) with `from <= ID`, in ID order.
    fn entries_from(&self, from: u64) -> Result<EntryRangeIter<'_>, StoreError>
    where
        Self: Sized,
    {
        let start = id_key(from);
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Included(&start[..]), Bound::Unbounded);
        Ok(EntryRangeIter {
            inner: self.tables().id2entry.range(self.ro_txn(), &bounds)?,
            owner: self,
        })
    }

    /// The number of entries (O(1): LMDB keeps the count).
    fn entry_count(&self) -> Result<u64, StoreError> {
        Ok(self.tables().id2entry.len(self.ro_txn())?)
    }

    /// The highest entry ID stored, if any.
    fn last_id(&self) -> Result<Option<u64>, StoreError> {
        match self.tables().id2entry.last(self.ro_txn())? {
            Some((raw, _)) => decode_id(ID2ENTRY, raw).map(Some),
            None => Ok(None),
        }
    }

    /// Every (key, value) pair of one table as stored, in LMDB's order (a dup-sort table yields one pair
    /// per duplicate), without decoding: for consistency checks (`canopy verify`), which must report
    /// records of the wrong shape instead of failing on them. A configured index without a table yields
    /// nothing.
    fn raw_pairs(&self, table: RawTable<'_>) -> Result<RawPairs<'_>, StoreError>
    where
        Self: Sized,
    {
        let tables = self.tables();
        let handle = match table {
            RawTable::Id2Entry => Some(tables.id2entry),
            RawTable::Dn2Id => Some(tables.dn2id),
            RawTable::Dn2Children => Some(tables.dn2children),
            RawTable::Meta => Some(tables.meta),
            RawTable::Index(attr) => tables.index(attr),
        };
        Ok(RawPairs {
            inner: match handle {
                Some(table) => Some(table.iter(self.ro_txn())?),
                None => None,
            },
            // Chunked entries are put back together: a consistency check sees whole values.
            owner: matches!(table, RawTable::Id2Entry).then_some(self as &dyn Whole),
        })
    }

    /// Chunks of large values (docs/design/storage.md, "id2chunk"): how many the chunk heads in
    /// `id2entry` list, and how many `id2chunk` holds. They differ only in a damaged file.
    fn chunk_counts(&self) -> Result<(u64, u64), StoreError> {
        let tables = self.tables();
        let mut listed = 0u64;
        for item in tables.id2entry.iter(self.ro_txn())? {
            let (_, raw) = item?;
            if is_head(raw) {
                listed += crate::chunk::Head::parse(raw).map_or(0, |h| h.chunks.len() as u64);
            }
        }
        Ok((listed, tables.id2chunk.len(self.ro_txn())?))
    }

    /// The number of records of one table (for dup-sort tables: key/value pairs); O(1).
    fn raw_len(&self, table: RawTable<'_>) -> Result<u64, StoreError> {
        let tables = self.tables();
        let handle = match table {
            RawTable::Id2Entry => Some(tables.id2entry),
            RawTable::Dn2Id => Some(tables.dn2id),
            RawTable::Dn2Children => Some(tables.dn2children),
            RawTable::Meta => Some(tables.meta),
            RawTable::Index(attr) => tables.index(attr),
        };
        match handle {
            Some(table) => Ok(table.len(self.ro_txn())?),
            None => Ok(0),
        }
    }

    /// The session log records whose keys are above `after` (all with None), ascending: (key, record).
    fn synclog_after(&self, after: Option<&[u8]>) -> Result<Vec<SyncLogRecord>, StoreError> {
        let table = &self.tables().synclog;
        let mut out = Vec::new();
        let bounds = (
            after.map_or(Bound::Unbounded, Bound::Excluded),
            Bound::Unbounded,
        );
        for item in table.range(self.ro_txn(), &bounds)? {
            let (key, value) = item?;
            out.push((key.to_vec(), value.to_vec()));
        }
        Ok(out)
    }

    /// The number of records of the session log.
    fn synclog_len(&self) -> Result<u64, StoreError> {
        Ok(self.tables().synclog.len(self.ro_txn())?)
    }

    /// A value stored with `put_meta` (or an internal one, whose keys start with 0x00).
    fn get_meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        if !self.tables().storable(key) {
            return Ok(None);
        }
        Ok(self
            .tables()
            .meta
            .get(self.ro_txn(), key)?
            .map(<[u8]>::to_vec))
    }

    /// Every setting whose key starts with `prefix` (non-empty, not reserved), in key order.
    fn meta_prefix(&self, prefix: &[u8]) -> Result<Vec<MetaRecord>, StoreError> {
        if !self.tables().storable(prefix) {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for item in self.tables().meta.prefix_iter(self.ro_txn(), prefix)? {
            let (key, value) = item?;
            found.push((key.to_vec(), value.to_vec()));
        }
        Ok(found)
    }

    /// LMDB's ID of this transaction: a read snapshot sees what a write transaction committed when
    /// its ID is at least the writer's [`WriteTxn::txn_id`](crate::WriteTxn::txn_id).
    fn txn_id(&self) -> usize {
        self.ro_txn().id()
    }
}

impl<T: Access> ReadOps for T {}

/// One caller setting as stored: (key, value).
pub type MetaRecord = (Vec<u8>, Vec<u8>);

/// One record of the session log as stored: (key, value).
pub type SyncLogRecord = (Vec<u8>, Vec<u8>);

/// Appends the IDs of `iter`; false, with the collection cut short, once more than `cap` are read.
fn collect_ids<'t, I>(iter: I, ids: &mut Vec<u64>, cap: usize) -> Result<bool, StoreError>
where
    I: Iterator<Item = heed::Result<(&'t [u8], &'t [u8])>>,
{
    for item in iter {
        if ids.len() >= cap {
            return Ok(false);
        }
        let (_, raw) = item?;
        ids.push(decode_id("idx", raw)?);
    }
    Ok(true)
}

/// One table of the store, named for [`ReadOps::raw_pairs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawTable<'a> {
    Id2Entry,
    Dn2Id,
    Dn2Children,
    Meta,
    /// The `idx.<attr>` table of a configured index.
    Index(&'a str),
}

impl std::fmt::Display for RawTable<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RawTable::Id2Entry => f.write_str(ID2ENTRY),
            RawTable::Dn2Id => f.write_str(DN2ID),
            RawTable::Dn2Children => f.write_str(DN2CHILDREN),
            RawTable::Meta => f.write_str(crate::tables::META),
            RawTable::Index(attr) => f.write_str(&crate::tables::index_table_name(attr)),
        }
    }
}

/// Iterator returned by [`ReadOps::raw_pairs`]: (key, value) as stored.
pub struct RawPairs<'t> {
    inner: Option<RoIter<'t, Bytes, Bytes>>,
    owner: Option<&'t dyn Whole>,
}

impl<'t> Iterator for RawPairs<'t> {
    type Item = Result<(&'t [u8], &'t [u8]), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.as_mut()?.next()?.map_err(StoreError::from);
        Some(match (item, self.owner) {
            // A head whose chunks cannot be read is given as stored, for the check to report.
            (Ok((key, raw)), Some(owner)) if raw.first() == Some(&MARK) => Ok((
                key,
                decode_id(ID2ENTRY, key)
                    .and_then(|id| owner.whole_value(id, raw))
                    .unwrap_or(raw),
            )),
            (item, _) => item,
        })
    }
}

/// [`ReadOps::whole`], object-safe, for the iterators.
trait Whole {
    fn whole_value<'s>(&'s self, id: u64, raw: &'s [u8]) -> Result<&'s [u8], StoreError>;
}

impl<T: ReadOps> Whole for T {
    fn whole_value<'s>(&'s self, id: u64, raw: &'s [u8]) -> Result<&'s [u8], StoreError> {
        self.whole(id, raw)
    }
}

enum SubtreeInner<'t> {
    Empty,
    All(RoIter<'t, Bytes, Bytes>),
    Prefix(RoPrefix<'t, Bytes, Bytes>),
}

/// Iterator returned by [`ReadOps::subtree_iter`]: (DN key, ID).
pub struct SubtreeIter<'t> {
    inner: SubtreeInner<'t>,
}

impl<'t> Iterator for SubtreeIter<'t> {
    type Item = Result<(&'t [u8], u64), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match &mut self.inner {
            SubtreeInner::Empty => return None,
            SubtreeInner::All(iter) => iter.next()?,
            SubtreeInner::Prefix(iter) => iter.next()?,
        };
        Some(match item {
            Ok((key, raw)) => decode_id(DN2ID, raw).map(|id| (key, id)),
            Err(err) => Err(err.into()),
        })
    }
}

fn decode_entry<'t>(
    item: heed::Result<(&'t [u8], &'t [u8])>,
    owner: &'t dyn Whole,
) -> Result<(u64, &'t [u8]), StoreError> {
    let (key, raw) = item?;
    let id = decode_id(ID2ENTRY, key)?;
    Ok((id, owner.whole_value(id, raw)?))
}

/// Iterator returned by [`ReadOps::entries`]: (ID, entry bytes).
pub struct EntryIter<'t> {
    inner: RoIter<'t, Bytes, Bytes>,
    owner: &'t dyn Whole,
}

impl<'t> Iterator for EntryIter<'t> {
    type Item = Result<(u64, &'t [u8]), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let owner = self.owner;
        self.inner.next().map(|item| decode_entry(item, owner))
    }
}

/// Iterator returned by [`ReadOps::entries_from`]: (ID, entry bytes).
pub struct EntryRangeIter<'t> {
    inner: heed::RoRange<'t, Bytes, Bytes>,
    owner: &'t dyn Whole,
}

impl<'t> Iterator for EntryRangeIter<'t> {
    type Item = Result<(u64, &'t [u8]), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let owner = self.owner;
        self.inner.next().map(|item| decode_entry(item, owner))
    }
}

/// Fewer candidates than this are always read one lookup each.
const DENSE_MIN: usize = 256;

/// Iterator returned by [`ReadOps::candidate_entries`]: (ID, entry bytes if stored), one per candidate.
pub struct CandidateEntries<'t> {
    ops: &'t dyn ReadLookup,
    ids: &'t [u64],
    next: usize,
    walk: Option<std::iter::Peekable<EntryRangeIter<'t>>>,
}

/// The one lookup [`CandidateEntries`] needs, object-safe.
trait ReadLookup {
    fn lookup(&self, id: u64) -> Result<Option<&[u8]>, StoreError>;
}

impl<T: ReadOps> ReadLookup for T {
    fn lookup(&self, id: u64) -> Result<Option<&[u8]>, StoreError> {
        self.get_entry(id)
    }
}

impl<'t> Iterator for CandidateEntries<'t> {
    type Item = Result<(u64, Option<&'t [u8]>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let id = *self.ids.get(self.next)?;
        self.next += 1;
        let Some(walk) = &mut self.walk else {
            return Some(self.ops.lookup(id).map(|bytes| (id, bytes)));
        };
        // Skip the stored entries that are not candidates; stop at the first at or past `id`.
        loop {
            match walk.peek() {
                None => return Some(Ok((id, None))),
                Some(Err(_)) => {
                    return match walk.next() {
                        Some(Err(e)) => Some(Err(e)),
                        _ => Some(Ok((id, None))),
                    }
                }
                Some(Ok((stored, _))) if *stored < id => {
                    walk.next();
                }
                Some(Ok((stored, bytes))) if *stored == id => {
                    let bytes = *bytes;
                    walk.next();
                    return Some(Ok((id, Some(bytes))));
                }
                Some(Ok(_)) => return Some(Ok((id, None))),
            }
        }
    }
}

/// A consistent snapshot of the committed database. `Send`, so a search can move between threads;
/// keep it short-lived: an open snapshot keeps the pages it sees from being reused, and delays map growth.
///
/// Dropping it hands its LMDB transaction to the store's pool while no commit has happened since it
/// began, so that the next reader takes the same snapshot without beginning a transaction
/// (`pool.rs`). What it put together from chunks (its arena) stays with the handle and is freed.
pub struct ReadTxn {
    // Taken out only in `drop`.
    snapshot: ManuallyDrop<Snapshot>,
    shared: Arc<Shared>,
    arena: Arena,
}

impl ReadTxn {
    pub(crate) fn new(snapshot: Snapshot, shared: Arc<Shared>) -> Self {
        ReadTxn {
            snapshot: ManuallyDrop::new(snapshot),
            shared,
            arena: Arena::default(),
        }
    }

    /// The LMDB transaction ID of this snapshot: shared by the readers of one committed state, higher after
    /// every commit. Answers read under one ID hold for every reader of it.
    pub fn snapshot_id(&self) -> usize {
        self.snapshot.txn.id()
    }
}

impl Drop for ReadTxn {
    fn drop(&mut self) {
        // SAFETY: `snapshot` is taken here only, once, and not used afterwards.
        let snapshot = unsafe { ManuallyDrop::take(&mut self.snapshot) };
        // A snapshot the pool does not keep is aborted here, outside the pool's lock.
        drop(self.shared.pool.put(snapshot, &self.shared.env));
    }
}

/// A read transaction of `shared`: an idle snapshot of the newest commit from the pool, or a new
/// one (adopting the map size first when another process grew the map).
pub(crate) fn read_shared(shared: &Arc<Shared>) -> Result<ReadTxn, StoreError> {
    if let Some(snapshot) = shared.pool.take(&shared.env) {
        return Ok(ReadTxn::new(snapshot, Arc::clone(shared)));
    }
    let mut adopted = false;
    loop {
        // Read before the transaction begins: see `Snapshot::new`.
        let epoch = shared.pool.epoch();
        let pass = shared.gate.pass();
        match shared.env.clone().static_read_txn() {
            Ok(txn) => {
                shared.pool.begun.fetch_add(1, Ordering::Relaxed);
                let snapshot = Snapshot::new(txn, epoch, pass);
                return Ok(ReadTxn::new(snapshot, Arc::clone(shared)));
            }
            Err(heed::Error::Mdb(MdbError::MapResized)) if !adopted => {
                drop(pass);
                shared.adopt_map_size()?;
                adopted = true;
            }
            Err(err) => return Err(err.into()),
        }
    }
}

impl Access for ReadTxn {
    fn ro_txn(&self) -> &RoTxn<'_> {
        &self.snapshot.txn
    }

    fn tables(&self) -> &Tables {
        &self.shared.tables
    }

    fn arena(&self) -> &Arena {
        &self.arena
    }
}
