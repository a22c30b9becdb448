//! Offline bulk loading (`canopy import`, like `slapadd -q`).
//!
//! The caller's thread validates, buffers and sorts each full batch; a flusher thread writes it, so
//! parsing the input and writing the database overlap. Batches share one write transaction until
//! `RETAIN_BYTES` of them are pending or the map needs to grow; then it commits and the committed
//! batches' buffers go back to the caller's thread to be filled again (fresh memory costs the kernel a
//! zeroing of every page, which was the load's largest single cost when all batches were new). Every
//! commit leaves the pages the next transaction copies as free pages in the file; `canopy import`
//! ends with a compacting copy of the file, which drops them. Pages fill completely where LMDB is told
//! the order: id2entry takes MDB_APPEND (IDs ascend); in dn2id and the ID-list tables, keys beyond the
//! table's last key take MDB_APPEND, and every ID takes MDB_APPENDDUP (IDs of a load ascend and exceed
//! every stored ID); one cursor per table writes a batch, so a sorted key is found from the cursor's
//! leaf page rather than from the root. Commits skip fsync; one sync at the end makes the whole load
//! durable. A write that hits MDB_MAP_FULL aborts the transaction; the map is grown and the
//! uncommitted batches, kept in memory for this, are written again, so nothing is lost.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use heed::types::Bytes;
use heed::{EnvFlags, FlagSetMode, PutFlags, RwTxn};

use crate::gate::Pass;
use crate::tables::Table;

use crate::error::StoreError;
use crate::keys::{check_key, decode_id, id_key, META_NEXT_ID};
use crate::read::ReadOps;
use crate::shared::Shared;
use crate::stats::{stats_of, Stats};
use crate::tables::META;

/// A batch is handed to the flusher once it holds this many bytes... (16 MiB: the last batch, which
/// the flusher sorts and writes after the input has ended, is the part of the load that nothing
/// overlaps; 64 MiB batches left about a fifth of the flusher's work to that tail at 100 000 entries.)
const BATCH_BYTES: usize = 16 << 20;
/// ...or this many entries.
const BATCH_ENTRIES: usize = 100_000;
/// Attempts at writing the uncommitted batches, each after growing the map.
const BATCH_ATTEMPTS: usize = 12;
/// Batches written but not committed are kept (for a replay after MDB_MAP_FULL) up to this many bytes;
/// the transaction commits before it would hold more, and the committed batches' buffers go back to
/// the loader for the batches after them.
const RETAIN_BYTES: usize = 64 << 20;
/// Committed batches waiting to be filled again, at most (more are freed).
const RECYCLED_BATCHES: usize = RETAIN_BYTES / BATCH_BYTES + 2;

/// Where a key lies in its batch's arena. 16 bytes with the ID beside it, against 24 for a
/// `Range<usize>`: a load holds about 75 index keys per entry, and their records are most of its memory.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    len: u32,
}

/// A batch's key arena is cut before it would pass this offset (a batch holds about 16 MiB).
const ARENA_LIMIT: usize = u32::MAX as usize;

#[derive(Default)]
struct KeyedIds {
    arena: Vec<u8>,
    items: Vec<(Span, u64)>,
}

impl KeyedIds {
    /// Empty, with room for what a batch like `previous` held and an eighth more: a batch's buffers
    /// grow to tens of MiB, and growing them by doubling copied each one and faulted in fresh pages
    /// at every step.
    fn sized_like(previous: &KeyedIds) -> Self {
        KeyedIds {
            arena: Vec::with_capacity(grown(previous.arena.len())),
            items: Vec::with_capacity(grown(previous.items.len())),
        }
    }

    /// The caller keeps the arena under [`ARENA_LIMIT`] (see `BulkLoader::add`).
    fn push(&mut self, key: &[u8], id: u64) {
        let start = self.arena.len();
        self.arena.extend_from_slice(key);
        let span = Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            len: u32::try_from(key.len()).unwrap_or(0),
        };
        self.items.push((span, id));
    }

    /// Empties it, keeping its buffers.
    fn clear(&mut self) {
        self.arena.clear();
        self.items.clear();
    }

    fn key(&self, span: Span) -> &[u8] {
        let start = span.start as usize;
        self.arena
            .get(start..start + span.len as usize)
            .unwrap_or_default()
    }

    /// Sorts by (key, id) and drops exact repeats. With `last_wins`, only the last id pushed for a key
    /// survives (dn2id: a DN added twice maps to its latest ID).
    fn sort(&mut self, last_wins: bool) {
        let mut items = std::mem::take(&mut self.items);
        if last_wins {
            // Stable: among equal keys, push order is kept, so the last is the latest.
            items.sort_by(|a, b| self.key(a.0).cmp(self.key(b.0)));
            // `dedup_by` keeps the first of a run (`kept`); the later one (`later`) is copied over it.
            items.dedup_by(|later, kept| {
                let same = self.key(later.0) == self.key(kept.0);
                if same {
                    *kept = *later;
                }
                same
            });
            self.items = items;
        } else {
            items.sort_unstable_by(|a, b| self.key(a.0).cmp(self.key(b.0)).then(a.1.cmp(&b.1)));
            items.dedup_by(|a, b| a.1 == b.1 && self.key(a.0) == self.key(b.0));
            self.items = items;
        }
    }
}

/// Capacity for a buffer that held `len` in the previous batch; bounded, so that a batch cut early by one
/// huge entry does not reserve its size again for the next.
fn grown(len: usize) -> usize {
    len.saturating_add(len / 8).min(2 * BATCH_BYTES)
}

#[derive(Default)]
struct Batch {
    entry_bytes: Vec<u8>,
    entries: Vec<(u64, Range<usize>)>,
    dns: KeyedIds,
    children: Vec<(u64, u64)>,
    indexes: Vec<KeyedIds>,
    bytes: usize,
    max_id: u64,
}

impl Batch {
    fn new(index_count: usize) -> Self {
        Batch {
            indexes: (0..index_count).map(|_| KeyedIds::default()).collect(),
            ..Batch::default()
        }
    }

    /// The next batch after `previous`, its buffers sized like the previous one's (see
    /// [`KeyedIds::sized_like`]).
    fn sized_like(previous: &Batch) -> Self {
        Batch {
            entry_bytes: Vec::with_capacity(grown(previous.entry_bytes.len())),
            entries: Vec::with_capacity(grown(previous.entries.len())),
            dns: KeyedIds::sized_like(&previous.dns),
            children: Vec::with_capacity(grown(previous.children.len())),
            indexes: previous.indexes.iter().map(KeyedIds::sized_like).collect(),
            bytes: 0,
            max_id: 0,
        }
    }

    /// Empties it for the next batch, keeping its buffers (their pages are already faulted in).
    fn clear(&mut self) {
        self.entry_bytes.clear();
        self.entries.clear();
        self.dns.clear();
        self.children.clear();
        for index in &mut self.indexes {
            index.clear();
        }
        self.bytes = 0;
        self.max_id = 0;
    }

    /// Puts its keys in the order the flusher writes them.
    fn sort(&mut self) {
        self.dns.sort(true);
        self.children.sort_unstable();
        self.children.dedup();
        for index in &mut self.indexes {
            index.sort(false);
        }
    }

    fn is_full(&self, max_entries: usize) -> bool {
        self.bytes >= BATCH_BYTES || self.entries.len() >= max_entries
    }
}

/// Loads entries in ascending ID order without other writers running; see [`Store::bulk_loader`].
///
/// Dropping it without [`finish`](Self::finish) discards the entries not yet flushed (batches already
/// written stay) and skips the final sync.
///
/// [`Store::bulk_loader`]: crate::Store::bulk_loader
pub struct BulkLoader {
    shared: Arc<Shared>,
    batch: Batch,
    index_count: usize,
    batch_entries: usize,
    last_id: u64,
    next_id_floor: u64,
    batches: Option<SyncSender<Batch>>,
    /// Committed batches, emptied, to be filled again.
    recycled: Option<Receiver<Batch>>,
    flusher: Option<JoinHandle<Result<(), StoreError>>>,
    restore_sync: bool,
}

impl BulkLoader {
    pub(crate) fn new(shared: Arc<Shared>, index_count: usize) -> Result<Self, StoreError> {
        if shared.bulk_active.swap(true, Ordering::AcqRel) {
            return Err(StoreError::BulkLoadActive);
        }
        let mut loader = BulkLoader {
            shared: Arc::clone(&shared),
            batch: Batch::new(index_count),
            index_count,
            batch_entries: BATCH_ENTRIES,
            last_id: 0,
            next_id_floor: 1,
            batches: None,
            recycled: None,
            flusher: None,
            restore_sync: false,
        };
        {
            let rtxn = crate::read::read_shared(&shared)?;
            loader.last_id = rtxn.last_id()?.unwrap_or(0);
            loader.next_id_floor = match rtxn.get_meta(META_NEXT_ID)? {
                Some(raw) => decode_id(META, &raw)?,
                None => 1,
            };
        }
        if shared.durable {
            // SAFETY: `bulk_active` makes this loader the only caller of set_flags on this env.
            unsafe { shared.env.set_flags(EnvFlags::NO_SYNC, FlagSetMode::Enable) }?;
            loader.restore_sync = true;
        }
        let (batches, queue) = mpsc::sync_channel::<Batch>(1);
        let (recycle, recycled) = mpsc::sync_channel::<Batch>(RECYCLED_BATCHES);
        let flusher_shared = Arc::clone(&shared);
        loader.flusher = Some(
            thread::Builder::new()
                .name("canopy-mdb-bulk".into())
                .spawn(move || run_flusher(&flusher_shared, &queue, &recycle))?,
        );
        loader.batches = Some(batches);
        loader.recycled = Some(recycled);
        Ok(loader)
    }

    /// The lowest ID `add` accepts next: above every stored ID and every ID handed out before.
    pub fn next_id(&self) -> u64 {
        self.last_id.saturating_add(1).max(self.next_id_floor)
    }

    /// Sets how many entries go into one transaction (default 100,000; a batch also closes at 64 MiB).
    pub fn set_batch_entries(&mut self, entries: usize) {
        self.batch_entries = entries.max(1);
    }

    /// Buffers one entry: its ID (strictly ascending), DN key, parent ID (`None` for a suffix entry),
    /// entry bytes, and index keys as (position in `StoreConfig::indexes`, key).
    pub fn add<K: AsRef<[u8]>>(
        &mut self,
        id: u64,
        dn_key: &[u8],
        parent: Option<u64>,
        entry: &[u8],
        index_keys: &[(usize, K)],
    ) -> Result<(), StoreError> {
        if id < self.next_id() {
            return Err(StoreError::IdNotAscending {
                id,
                previous: self.last_id,
            });
        }
        let max_key = self.shared.max_key;
        check_key(dn_key, max_key)?;
        for (position, key) in index_keys {
            if *position >= self.index_count {
                return Err(StoreError::UnknownIndex(*position));
            }
            check_key(key.as_ref(), max_key)?;
        }
        // Key arenas stay addressable by u32 offsets (`Span`): a batch that would pass the limit goes first.
        let more: usize = dn_key.len()
            + index_keys
                .iter()
                .map(|(_, key)| key.as_ref().len())
                .sum::<usize>();
        let over = |batch: &Batch| {
            std::iter::once(&batch.dns)
                .chain(&batch.indexes)
                .any(|ids| ids.arena.len().saturating_add(more) > ARENA_LIMIT)
        };
        if over(&self.batch) {
            if !self.batch.entries.is_empty() {
                self.send_batch()?;
            }
            if over(&self.batch) {
                return Err(StoreError::Io(Arc::new(std::io::Error::other(format!(
                    "entry {id}: its index keys exceed the bulk loader's {ARENA_LIMIT} bytes per index"
                )))));
            }
        }
        let batch = &mut self.batch;
        let start = batch.entry_bytes.len();
        batch.entry_bytes.extend_from_slice(entry);
        batch.entries.push((id, start..batch.entry_bytes.len()));
        batch.dns.push(dn_key, id);
        if let Some(parent) = parent {
            batch.children.push((parent, id));
        }
        let mut key_bytes = 0;
        for (position, key) in index_keys {
            if let Some(index) = batch.indexes.get_mut(*position) {
                let key = key.as_ref();
                index.push(key, id);
                key_bytes += key.len() + 24;
            }
        }
        batch.bytes += entry.len() + dn_key.len() + key_bytes + 64;
        batch.max_id = id;
        self.last_id = id;
        if batch.is_full(self.batch_entries) {
            self.send_batch()?;
        }
        Ok(())
    }

    fn send_batch(&mut self) -> Result<(), StoreError> {
        // A committed batch's buffers when one is back (no fresh pages to fault in and zero), else new
        // buffers sized like this batch's.
        let next = match self.recycled.as_ref().and_then(|r| r.try_recv().ok()) {
            Some(recycled) if recycled.indexes.len() == self.index_count => recycled,
            _ => Batch::sized_like(&self.batch),
        };
        let mut batch = std::mem::replace(&mut self.batch, next);
        // Sorted here, on the loader's thread, so that the flusher (the load's busiest thread) only writes.
        batch.sort();
        let sent = match &self.batches {
            Some(batches) => batches.send(batch).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The flusher stopped: it failed, and its error explains why.
        Err(self.stop_flusher().err().unwrap_or(StoreError::WriterGone))
    }

    fn stop_flusher(&mut self) -> Result<(), StoreError> {
        drop(self.batches.take());
        match self.flusher.take() {
            Some(flusher) => flusher.join().unwrap_or(Err(StoreError::Panicked)),
            None => Ok(()),
        }
    }

    fn restore_sync_flag(&mut self) -> Result<(), StoreError> {
        if std::mem::take(&mut self.restore_sync) {
            // SAFETY: as in `new`; the flusher has stopped.
            unsafe {
                self.shared
                    .env
                    .set_flags(EnvFlags::NO_SYNC, FlagSetMode::Disable)
            }?;
        }
        Ok(())
    }

    /// Writes what is buffered, syncs once, and reports the resulting figures.
    pub fn finish(self) -> Result<Stats, StoreError> {
        self.end(true)
    }

    /// [`BulkLoader::finish`] without the final sync, for a caller that copies the data file into a fresh
    /// one and syncs that instead (`canopy import`): the load is complete in the page cache, not yet on disk.
    pub fn finish_unsynced(self) -> Result<Stats, StoreError> {
        self.end(false)
    }

    fn end(mut self, sync: bool) -> Result<Stats, StoreError> {
        let flushed = if self.batch.entries.is_empty() {
            Ok(())
        } else {
            self.send_batch()
        };
        let stopped = self.stop_flusher();
        flushed?;
        stopped?;
        if sync {
            self.shared.env.force_sync()?;
        }
        self.restore_sync_flag()?;
        stats_of(&self.shared)
    }
}

impl Drop for BulkLoader {
    fn drop(&mut self) {
        if let Err(err) = self.stop_flusher() {
            tracing::error!(%err, "bulk load failed");
        }
        if let Err(err) = self.restore_sync_flag() {
            tracing::error!(%err, "could not restore MDB_NOSYNC after a bulk load");
        }
        self.shared.bulk_active.store(false, Ordering::Release);
    }
}

/// The open transaction of the flusher and the gate pass that keeps the map from moving under it.
struct Open<'e> {
    // Declared first so that it ends (aborts, if not committed) before the pass is returned.
    txn: RwTxn<'e>,
    _pass: Pass,
}

/// Empties committed batches and hands them back to the loader (as many as it keeps; the rest are freed).
fn recycle_all(pending: &mut Vec<Batch>, recycle: &SyncSender<Batch>) {
    for mut batch in pending.drain(..) {
        batch.clear();
        // Full (or the loader is gone): this one is freed.
        let _ = recycle.try_send(batch);
    }
}

fn run_flusher(
    shared: &Shared,
    queue: &Receiver<Batch>,
    recycle: &SyncSender<Batch>,
) -> Result<(), StoreError> {
    let mut pending: Vec<Batch> = Vec::new();
    let mut pending_bytes = 0usize;
    let mut open: Option<Open<'_>> = None;
    for batch in queue.iter() {
        let total = pending_bytes.saturating_add(batch.bytes);
        let fits = total <= RETAIN_BYTES && has_room(shared, total);
        if let Some(mut current) = open.take() {
            if fits {
                match put_batch(shared, &mut current.txn, &batch) {
                    Ok(()) => {
                        open = Some(current);
                        pending_bytes = total;
                        pending.push(batch);
                        continue;
                    }
                    Err(StoreError::MapFull) => drop(current),
                    Err(err) => return Err(err),
                }
            } else {
                current.txn.commit()?;
                shared.committed();
                recycle_all(&mut pending, recycle);
                pending_bytes = 0;
            }
        }
        pending_bytes = pending_bytes.saturating_add(batch.bytes);
        pending.push(batch);
        open = Some(write_fresh(shared, &pending, pending_bytes)?);
    }
    if let Some(current) = open {
        current.txn.commit()?;
        shared.committed();
    }
    Ok(())
}

/// Whether the map has room for `bytes` of batches beside the committed pages, without growing.
fn has_room(shared: &Shared, bytes: usize) -> bool {
    let (map, used) = shared.usage();
    map.saturating_sub(used) >= room_needed(bytes)
}

/// B-tree pages are at best full and at worst half full after splits: twice the raw size suffices.
fn room_needed(bytes: usize) -> usize {
    bytes.saturating_mul(2)
}

/// Begins a transaction and writes `batches` into it, growing the map and starting over on
/// MDB_MAP_FULL.
fn write_fresh<'e>(
    shared: &'e Shared,
    batches: &[Batch],
    bytes: usize,
) -> Result<Open<'e>, StoreError> {
    shared.ensure_headroom(room_needed(bytes), Duration::from_secs(5));
    for _ in 0..BATCH_ATTEMPTS {
        let pass = shared.gate.pass();
        let mut txn = shared.env.write_txn()?;
        match batches
            .iter()
            .try_for_each(|batch| put_batch(shared, &mut txn, batch))
        {
            Ok(()) => return Ok(Open { txn, _pass: pass }),
            Err(StoreError::MapFull) => {
                drop(txn);
                drop(pass);
                let (map, _) = shared.usage();
                shared.grow(map.saturating_mul(2), Duration::from_secs(5));
            }
            Err(err) => return Err(err),
        }
    }
    Err(StoreError::MapFull)
}

fn put_batch(shared: &Shared, txn: &mut RwTxn<'_>, batch: &Batch) -> Result<(), StoreError> {
    let tables = &shared.tables;
    let mut id2entry = tables.id2entry.iter_mut(txn)?;
    for (id, range) in &batch.entries {
        let bytes = batch.entry_bytes.get(range.clone()).unwrap_or_default();
        // A value beginning with the chunk mark is stored after one more (chunk.rs); loaded values
        // are never chunked.
        let escaped;
        let bytes = if bytes.first() == Some(&crate::chunk::MARK) {
            escaped = [&[crate::chunk::MARK][..], bytes].concat();
            &escaped[..]
        } else {
            bytes
        };
        // SAFETY: the key and value are the batch's, not borrowed from the database.
        unsafe {
            id2entry.put_current_with_options::<Bytes>(PutFlags::APPEND, &id_key(*id), bytes)
        }?;
    }
    drop(id2entry);
    let last_dn = last_key(&tables.dn2id, txn)?;
    let mut dn2id = tables.dn2id.iter_mut(txn)?;
    for (span, id) in &batch.dns.items {
        let key = batch.dns.key(*span);
        let flags = match beyond(last_dn.as_deref(), key) {
            true => PutFlags::APPEND,
            false => PutFlags::empty(),
        };
        // SAFETY: as above.
        unsafe { dn2id.put_current_with_options::<Bytes>(flags, key, &id_key(*id)) }?;
    }
    drop(dn2id);
    put_ids(
        &tables.dn2children,
        txn,
        batch
            .children
            .iter()
            .map(|(parent, child)| (id_key(*parent), *child)),
    )?;
    for (ids, (_, table)) in batch.indexes.iter().zip(tables.index_list().iter()) {
        put_ids(
            table,
            txn,
            ids.items.iter().map(|(span, id)| (ids.key(*span), *id)),
        )?;
    }
    let stored_next = match tables.meta.get(txn, META_NEXT_ID)? {
        Some(raw) => decode_id(META, raw)?,
        None => 1,
    };
    let next = batch.max_id.saturating_add(1).max(stored_next);
    tables.meta.put(txn, META_NEXT_ID, &id_key(next))?;
    Ok(())
}

/// Writes (key, ID) pairs sorted by key then ID into an ID-list table. Every ID of a load exceeds the
/// IDs already stored, so each is appended to its key's list (MDB_APPENDDUP); a key beyond the table's
/// last key is appended to the table too (MDB_APPEND). One cursor writes them all: LMDB looks a key up
/// from the cursor's leaf page when it lies there (sorted keys mostly do) instead of from the root.
fn put_ids<K: AsRef<[u8]>>(
    table: &Table,
    txn: &mut RwTxn<'_>,
    items: impl Iterator<Item = (K, u64)>,
) -> Result<(), StoreError> {
    let last = last_key(table, txn)?;
    let mut cursor = table.iter_mut(txn)?;
    let mut previous: Option<Vec<u8>> = None;
    for (key, id) in items {
        let key = key.as_ref();
        let new_key = previous.as_deref() != Some(key);
        let flags = if new_key && beyond(last.as_deref(), key) {
            PutFlags::APPEND | PutFlags::APPEND_DUP
        } else {
            PutFlags::APPEND_DUP
        };
        // SAFETY: the key and ID are the batch's, not borrowed from the database.
        unsafe { cursor.put_current_with_options::<Bytes>(flags, key, &id_key(id)) }?;
        if new_key {
            let buffer = previous.get_or_insert_with(Vec::new);
            buffer.clear();
            buffer.extend_from_slice(key);
        }
    }
    Ok(())
}

/// The last key of a table, copied out of the transaction.
fn last_key(table: &Table, txn: &RwTxn<'_>) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(table.last(txn)?.map(|(key, _)| key.to_vec()))
}

/// Whether `key` sorts after every key of a table whose last key is `last`.
fn beyond(last: Option<&[u8]>, key: &[u8]) -> bool {
    last.is_none_or(|last| key > last)
}

#[cfg(test)]
mod tests {
    use super::KeyedIds;

    fn sorted(pushed: &[(&[u8], u64)], last_wins: bool) -> Vec<(Vec<u8>, u64)> {
        let mut ids = KeyedIds::default();
        for (key, id) in pushed {
            ids.push(key, *id);
        }
        ids.sort(last_wins);
        ids.items
            .iter()
            .map(|(span, id)| (ids.key(*span).to_vec(), *id))
            .collect()
    }

    #[test]
    fn sort_orders_by_key_then_id_and_drops_repeats() {
        let pushed: &[(&[u8], u64)] = &[(b"b", 3), (b"a", 2), (b"b", 1), (b"a", 2), (b"ab", 9)];
        assert_eq!(
            sorted(pushed, false),
            vec![
                (b"a".to_vec(), 2),
                (b"ab".to_vec(), 9),
                (b"b".to_vec(), 1),
                (b"b".to_vec(), 3)
            ]
        );
    }

    #[test]
    fn sort_breaks_ties_of_the_first_eight_bytes_on_the_whole_key() {
        let keys: [&[u8]; 8] = [
            b"abcdefghz",
            b"abcdefgh\0",
            b"abcdefgh",
            b"a\0",
            b"a",
            b"",
            b"abcdefgha",
            b"\xff",
        ];
        let pushed: Vec<(&[u8], u64)> = keys.iter().map(|k| (*k, 1)).collect();
        let mut want: Vec<(Vec<u8>, u64)> = keys.iter().map(|k| (k.to_vec(), 1)).collect();
        want.sort();
        assert_eq!(sorted(&pushed, false), want);
        assert_eq!(sorted(&pushed, true), want);
    }

    #[test]
    fn sort_with_last_wins_keeps_the_latest_id_of_a_key() {
        let pushed: &[(&[u8], u64)] = &[(b"x", 1), (b"a", 2), (b"x", 3), (b"x", 4), (b"a", 5)];
        assert_eq!(
            sorted(pushed, true),
            vec![(b"a".to_vec(), 5), (b"x".to_vec(), 4)]
        );
    }
}
