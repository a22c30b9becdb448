//! The write transaction handed to write closures: one LMDB nested transaction inside a group commit.

use heed::{RoTxn, RwTxn};

use crate::error::StoreError;
use crate::keys::{check_key, check_meta_key, decode_id, id_key, META_NEXT_ID};
use crate::read::sealed::Access;
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
}

impl<'a> WriteTxn<'a> {
    pub(crate) fn new(txn: RwTxn<'a>, tables: &'a Tables, max_key: usize) -> Self {
        WriteTxn {
            txn,
            tables,
            max_key,
            poison: None,
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

    /// Stores (or replaces) the entry bytes of `id`.
    pub fn put_entry(&mut self, id: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.guard(|txn, t| t.id2entry.put(txn, &id_key(id), bytes))
    }

    /// Stores (or replaces) the entry bytes of `id` given in parts: the value is their concatenation,
    /// written straight into LMDB's reserved space (no joined copy first).
    pub fn put_entry_parts(&mut self, id: u64, parts: &[&[u8]]) -> Result<(), StoreError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.guard(|txn, t| {
            t.id2entry.put_reserved(txn, &id_key(id), len, |space| {
                use std::io::Write;
                for part in parts {
                    space.write_all(part)?;
                }
                Ok(())
            })
        })
    }

    /// Removes the entry bytes of `id` (no error if absent).
    pub fn del_entry(&mut self, id: u64) -> Result<(), StoreError> {
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

    /// Appends a record to the session log under `key` (a CSN: keys order as their bytes).
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
}
