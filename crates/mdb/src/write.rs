//! The write transaction handed to write closures: one LMDB nested transaction inside a group commit.

use heed::{RoTxn, RwTxn};

use crate::chunk::{self, is_head, Arena, Head, CHUNKED_MIN, MARK};
use crate::error::StoreError;
use crate::keys::{check_key, check_meta_key, decode_id, id_key, META_NEXT_ID};
use crate::read::sealed::Access;
use crate::read::ReadOps;
use crate::tables::{Tables, META};

/// A write transaction. Reads through [`ReadOps`](crate::ReadOps) see its own uncommitted writes.
///
/// It is nested inside the group's transaction: if the closure returns `Err`, only its own writes are
/// undone. After an LMDB failure (e.g. map full) every later call fails too, and the writes are
/// undone whatever the closure returns.
pub struct WriteTxn<'a> {
    txn: RwTxn<'a>,
    tables: &'a Tables,
    max_key: usize,
    poison: Option<StoreError>,
    arena: Arena,
}

impl<'a> WriteTxn<'a> {
    pub(crate) fn new(txn: RwTxn<'a>, tables: &'a Tables, max_key: usize) -> Self {
        WriteTxn {
            txn,
            tables,
            max_key,
            poison: None,
            arena: Arena::default(),
        }
    }

    pub(crate) fn into_parts(self) -> (RwTxn<'a>, Option<StoreError>) {
        (self.txn, self.poison)
    }

    /// Runs one LMDB write and remembers failures that leave the transaction unusable.
    fn guard<T>(
        &mut self,
        op: impl FnOnce(&mut RwTxn<'a>, &Tables) -> heed::Result<T>,
    ) -> Result<T, StoreError> {
        if let Some(err) = &self.poison {
            return Err(err.clone());
        }
        op(&mut self.txn, self.tables).map_err(|err| {
            let err = StoreError::from(err);
            if err.poisons_txn() {
                self.poison = Some(err.clone());
            }
            err
        })
    }

    /// [`Self::guard`] for storage-layer steps made of several LMDB calls.
    fn guard_store<T>(
        &mut self,
        op: impl FnOnce(&mut RwTxn<'a>, &Tables) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Some(err) = &self.poison {
            return Err(err.clone());
        }
        op(&mut self.txn, self.tables).inspect_err(|err| {
            if err.poisons_txn() {
                self.poison = Some(err.clone());
            }
        })
    }

    /// Hands out the next entry ID: 1 on a new database, then ascending; never reused once committed.
    pub fn next_id(&mut self) -> Result<u64, StoreError> {
        let current = match self.tables.meta.get(&self.txn, META_NEXT_ID)? {
            Some(raw) => decode_id(META, raw)?,
            None => 1,
        };
        let following = current.checked_add(1).ok_or_else(|| StoreError::Corrupt {
            table: META,
            detail: "entry IDs exhausted".into(),
        })?;
        self.guard(|txn, t| t.meta.put(txn, META_NEXT_ID, &id_key(following)))?;
        Ok(current)
    }

    /// Stores (or replaces) the entry bytes of `id`: in chunks from `CHUNKED_MIN` bytes on
    /// (docs/design/storage.md, "id2chunk"). A value may not begin with `0x00`, the chunk head's mark.
    pub fn put_entry(&mut self, id: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.put_entry_parts(id, &[bytes])
    }

    /// Stores (or replaces) the entry bytes of `id` given in parts, their concatenation: a small value
    /// is written straight into LMDB's reserved space (no joined copy first), a large one in chunks.
    pub fn put_entry_parts(&mut self, id: u64, parts: &[&[u8]]) -> Result<(), StoreError> {
        self.drop_chunks(id, &[])?;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len >= CHUNKED_MIN {
            let chunks = self.guard_store(|txn, t| chunk::put_chunked(txn, t, id, parts, 0))?;
            let head = Head { chunks }.encode();
            return self.guard(|txn, t| t.id2entry.put(txn, &id_key(id), &head));
        }
        // A value beginning with the mark is stored after one more (chunk.rs).
        let escape = parts.iter().find(|p| !p.is_empty()).and_then(|p| p.first()) == Some(&MARK);
        let escape: &[u8] = if escape { &[MARK] } else { &[] };
        self.guard(|txn, t| {
            t.id2entry
                .put_reserved(txn, &id_key(id), escape.len() + len, |space| {
                    use std::io::Write;
                    space.write_all(escape)?;
                    for part in parts {
                        space.write_all(part)?;
                    }
                    Ok(())
                })
        })
    }

    /// Replaces the entry bytes of `id` by `head ++ old[keep] ++ tail`, where `old` is the value stored
    /// now: for a value stored in chunks, only the chunks at the two edits are written
    /// (docs/design/big-values.md).
    pub fn splice_entry(
        &mut self,
        id: u64,
        head: &[u8],
        keep: std::ops::Range<usize>,
        tail: &[u8],
    ) -> Result<(), StoreError> {
        let key = id_key(id);
        let raw = self.tables.id2entry.get(&self.txn, &key)?;
        let old = match raw {
            Some(raw) if is_head(raw) => Some(Head::parse(raw)?),
            _ => None,
        };
        let spliced = match &old {
            Some(old) => {
                self.guard_store(|txn, t| chunk::splice(txn, t, id, old, head, keep.clone(), tail))?
            }
            _ => None,
        };
        if let Some(new) = spliced {
            let encoded = new.encode();
            return self.guard(|txn, t| t.id2entry.put(txn, &key, &encoded));
        }
        // Not in chunks yet (or nothing to keep): the value is written whole.
        let value = self
            .get_entry(id)?
            .ok_or_else(|| StoreError::Corrupt {
                table: crate::tables::ID2ENTRY,
                detail: format!("splice of a missing entry {id}"),
            })?
            .get(keep)
            .ok_or_else(|| StoreError::Corrupt {
                table: crate::tables::ID2ENTRY,
                detail: "splice range beyond the stored value".into(),
            })?
            .to_vec();
        self.put_entry_parts(id, &[head, &value, tail])
    }

    /// Deletes the chunks of entry `id`, if it is stored in chunks, except the serials in `keep`.
    fn drop_chunks(&mut self, id: u64, keep: &[u32]) -> Result<(), StoreError> {
        let head = match self.tables.id2entry.get(&self.txn, &id_key(id))? {
            Some(raw) if is_head(raw) => Head::parse(raw)?,
            _ => return Ok(()),
        };
        self.guard_store(|txn, t| chunk::delete_chunks(txn, t, id, &head, keep))
    }

    /// Removes the entry bytes of `id` (no error if absent).
    pub fn del_entry(&mut self, id: u64) -> Result<(), StoreError> {
        self.drop_chunks(id, &[])?;
        self.guard(|txn, t| t.id2entry.delete(txn, &id_key(id)).map(drop))
    }

    /// Maps a (non-empty) DN key to `id`, replacing any previous mapping.
    pub fn put_dn(&mut self, dn_key: &[u8], id: u64) -> Result<(), StoreError> {
        check_key(dn_key, self.max_key)?;
        self.guard(|txn, t| t.dn2id.put(txn, dn_key, &id_key(id)))
    }

    /// Removes a DN key (no error if absent).
    pub fn del_dn(&mut self, dn_key: &[u8]) -> Result<(), StoreError> {
        if check_key(dn_key, self.max_key).is_err() {
            return Ok(());
        }
        self.guard(|txn, t| t.dn2id.delete(txn, dn_key).map(drop))
    }

    /// Records `child` under `parent` (idempotent).
    pub fn add_child(&mut self, parent: u64, child: u64) -> Result<(), StoreError> {
        self.guard(|txn, t| t.dn2children.put(txn, &id_key(parent), &id_key(child)))
    }

    /// Removes `child` from `parent` (no error if absent).
    pub fn del_child(&mut self, parent: u64, child: u64) -> Result<(), StoreError> {
        self.guard(|txn, t| {
            t.dn2children
                .delete_one_duplicate(txn, &id_key(parent), &id_key(child))
                .map(drop)
        })
    }

    /// Adds `id` under `key` in the index of `attr` (idempotent); a no-op if `attr` is not indexed.
    pub fn index_add(&mut self, attr: &str, key: &[u8], id: u64) -> Result<(), StoreError> {
        let tables = self.tables;
        let Some(table) = tables.index(attr) else {
            return Ok(());
        };
        check_key(key, self.max_key)?;
        self.guard(|txn, _| table.put(txn, key, &id_key(id)))
    }

    /// Removes `id` from `key` in the index of `attr`; a no-op if absent or `attr` is not indexed.
    pub fn index_del(&mut self, attr: &str, key: &[u8], id: u64) -> Result<(), StoreError> {
        let tables = self.tables;
        let Some(table) = tables.index(attr) else {
            return Ok(());
        };
        if check_key(key, self.max_key).is_err() {
            return Ok(());
        }
        self.guard(|txn, _| table.delete_one_duplicate(txn, key, &id_key(id)).map(drop))
    }

    /// Empties the index of `attr` (for a reindex); a no-op if `attr` is not indexed.
    pub fn clear_index(&mut self, attr: &str) -> Result<(), StoreError> {
        let tables = self.tables;
        let Some(table) = tables.index(attr) else {
            return Ok(());
        };
        self.guard(|txn, _| table.clear(txn))
    }

    /// Stores a caller setting. Keys must be non-empty and must not start with 0x00 (reserved).
    pub fn put_meta(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        check_meta_key(key)?;
        check_key(key, self.max_key)?;
        self.guard(|txn, t| t.meta.put(txn, key, value))
    }

    /// Appends a record to the session log under `key` (keys order as their bytes: the caller's start with a CSN).
    pub fn put_synclog(&mut self, key: &[u8], record: &[u8]) -> Result<(), StoreError> {
        check_key(key, self.max_key)?;
        self.guard(|txn, t| t.synclog.put(txn, key, record))
    }

    /// Removes the oldest session log records until at most `keep` remain; the key of the last one
    /// removed (None when none was).
    pub fn trim_synclog(&mut self, keep: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let len = self.tables.synclog.len(&self.txn)?;
        let mut excess = len.saturating_sub(keep);
        let mut last = None;
        while excess > 0 {
            let first = self
                .tables
                .synclog
                .first(&self.txn)?
                .map(|(k, _)| k.to_vec());
            let Some(key) = first else { break };
            self.guard(|txn, t| t.synclog.delete(txn, &key).map(drop))?;
            last = Some(key);
            excess -= 1;
        }
        Ok(last)
    }

    /// Removes a caller setting (no error if absent).
    pub fn del_meta(&mut self, key: &[u8]) -> Result<(), StoreError> {
        check_meta_key(key)?;
        if key.len() > self.max_key {
            return Ok(());
        }
        self.guard(|txn, t| t.meta.delete(txn, key).map(drop))
    }
}

impl Access for WriteTxn<'_> {
    fn ro_txn(&self) -> &RoTxn<'_> {
        &self.txn
    }

    fn tables(&self) -> &Tables {
        self.tables
    }

    fn arena(&self) -> &Arena {
        &self.arena
    }
}
