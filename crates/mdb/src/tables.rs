//! The named LMDB tables and their creation at open time.

use heed::types::Bytes;
use heed::{CommitOrAbort, CommitToken, Database, DatabaseFlags, Env, OnCommit, RwTxn, WithoutTls};

use std::sync::{PoisonError, RwLock};

use crate::error::StoreError;
use crate::keys::{FORMAT_VERSION, META_FORMAT, READABLE_FORMATS};

/// Every table maps bytes to bytes; the encodings live in `keys`.
pub(crate) type Table = Database<'static, Bytes, Bytes>;

pub(crate) const ID2ENTRY: &str = "id2entry";
/// The chunks of large entry values (docs/design/storage.md, `chunk.rs`).
pub(crate) const ID2CHUNK: &str = "id2chunk";
pub(crate) const DN2ID: &str = "dn2id";
pub(crate) const DN2CHILDREN: &str = "dn2children";
pub(crate) const META: &str = "meta";
/// The replication session log: deletes and renames keyed by CSN (docs/design/replication.md).
pub(crate) const SYNCLOG: &str = "synclog";
/// Prefix of the per-attribute index tables.
pub(crate) const INDEX_PREFIX: &str = "idx.";

/// Fixed tables plus room for the configured indexes and for tables of indexes no longer configured.
pub(crate) fn max_dbs(index_count: usize) -> u32 {
    u32::try_from(index_count)
        .unwrap_or(u32::MAX - 64)
        .saturating_add(64)
}

/// The table handles of one environment (internal; not reachable from outside the crate).
pub struct Tables {
    pub(crate) id2entry: Table,
    pub(crate) id2chunk: Table,
    pub(crate) dn2id: Table,
    pub(crate) dn2children: Table,
    pub(crate) meta: Table,
    pub(crate) synclog: Table,
    /// One per `StoreConfig::indexes` position, named as configured, then the tables created while
    /// open (`Store::add_index_table`). Only ever grows while open: a handle is never closed under a
    /// transaction that may use it.
    pub(crate) indexes: RwLock<Vec<(String, Table)>>,
    /// LMDB's key-length limit: longer lookups cannot match and must not reach LMDB (MDB_BAD_VALSIZE).
    pub(crate) max_key: usize,
}

impl Tables {
    /// The index table of `attr`; attribute names compare ASCII-case-insensitively, as LDAP's do.
    pub(crate) fn index(&self, attr: &str) -> Option<Table> {
        self.index_list()
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(attr))
            .map(|(_, table)| *table)
    }

    /// The index tables, in creation order.
    pub(crate) fn index_list(&self) -> std::sync::RwLockReadGuard<'_, Vec<(String, Table)>> {
        self.indexes.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether LMDB can hold (and so look up) this key.
    pub(crate) fn storable(&self, key: &[u8]) -> bool {
        !key.is_empty() && key.len() <= self.max_key
    }

    /// (table name, table) for every table, for statistics.
    pub(crate) fn named(&self) -> Vec<(String, Table)> {
        let mut all = vec![
            (ID2ENTRY.to_string(), self.id2entry),
            (ID2CHUNK.to_string(), self.id2chunk),
            (DN2ID.to_string(), self.dn2id),
            (DN2CHILDREN.to_string(), self.dn2children),
            (META.to_string(), self.meta),
            (SYNCLOG.to_string(), self.synclog),
        ];
        for (attr, table) in self.index_list().iter() {
            let name = index_table_name(attr);
            if !all.iter().any(|(n, _)| *n == name) {
                all.push((name, *table));
            }
        }
        all
    }
}

pub(crate) fn index_table_name(attr: &str) -> String {
    format!("{INDEX_PREFIX}{}", attr.to_ascii_lowercase())
}

pub(crate) fn check_index_name(attr: &str) -> Result<(), StoreError> {
    if attr.is_empty() || attr.len() > 200 || attr.contains('\0') {
        return Err(StoreError::InvalidIndexName(attr.to_string()));
    }
    Ok(())
}

struct Opening<'e> {
    id2entry: Database<'e, Bytes, Bytes>,
    id2chunk: Database<'e, Bytes, Bytes>,
    dn2id: Database<'e, Bytes, Bytes>,
    dn2children: Database<'e, Bytes, Bytes>,
    meta: Database<'e, Bytes, Bytes>,
    synclog: Database<'e, Bytes, Bytes>,
    indexes: Vec<(String, Database<'e, Bytes, Bytes>)>,
    max_key: usize,
}

impl OnCommit for Opening<'_> {
    type Committed = Tables;

    fn on_commit(self, token: &CommitToken) -> Tables {
        Tables {
            max_key: self.max_key,
            id2entry: self.id2entry.on_commit(token),
            id2chunk: self.id2chunk.on_commit(token),
            dn2id: self.dn2id.on_commit(token),
            dn2children: self.dn2children.on_commit(token),
            meta: self.meta.on_commit(token),
            synclog: self.synclog.on_commit(token),
            indexes: RwLock::new(
                self.indexes
                    .into_iter()
                    .map(|(attr, table)| (attr, table.on_commit(token)))
                    .collect(),
            ),
        }
    }
}

/// Creates the missing tables (dropping none), checks or records the format version, and commits.
pub(crate) fn create_tables(env: &Env<WithoutTls>, attrs: &[String]) -> Result<Tables, StoreError> {
    for attr in attrs {
        check_index_name(attr)?;
    }
    let wtxn = env.write_txn()?;
    let opened = env.create_databases_and_commit(wtxn, |opener, wtxn: &mut RwTxn<'_>| {
        let plain = |name: &str, wtxn: &mut RwTxn<'_>| {
            opener
                .database_options()
                .types::<Bytes, Bytes>()
                .name(name)
                .create(wtxn)
        };
        let id_list = |name: &str, wtxn: &mut RwTxn<'_>| {
            opener
                .database_options()
                .types::<Bytes, Bytes>()
                .flags(DatabaseFlags::DUP_SORT | DatabaseFlags::DUP_FIXED)
                .name(name)
                .create(wtxn)
        };
        let id2entry = plain(ID2ENTRY, wtxn)?;
        let id2chunk = plain(ID2CHUNK, wtxn)?;
        let dn2id = plain(DN2ID, wtxn)?;
        let dn2children = id_list(DN2CHILDREN, wtxn)?;
        let meta = plain(META, wtxn)?;
        let synclog = plain(SYNCLOG, wtxn)?;
        let mut indexes = Vec::with_capacity(attrs.len());
        for attr in attrs {
            indexes.push((attr.clone(), id_list(&index_table_name(attr), wtxn)?));
        }
        match meta.get(wtxn, META_FORMAT)? {
            None => meta.put(wtxn, META_FORMAT, &FORMAT_VERSION.to_be_bytes())?,
            Some(raw) => {
                let found = <[u8; 4]>::try_from(raw)
                    .map(u32::from_be_bytes)
                    .map_err(|_| StoreError::Corrupt {
                        table: META,
                        detail: "format version is not 4 bytes".into(),
                    })?;
                if !READABLE_FORMATS.contains(&found) {
                    return Err(StoreError::UnsupportedFormat {
                        found,
                        supported: FORMAT_VERSION,
                    });
                }
                if found != FORMAT_VERSION {
                    // Older builds must not open a file that may now hold chunked values.
                    meta.put(wtxn, META_FORMAT, &FORMAT_VERSION.to_be_bytes())?;
                }
            }
        }
        Ok::<_, StoreError>(CommitOrAbort::<_, ()>::Commit(Opening {
            id2entry,
            id2chunk,
            dn2id,
            dn2children,
            meta,
            synclog,
            indexes,
            max_key: env.max_key_size(),
        }))
    })?;
    match opened {
        CommitOrAbort::Commit(tables) => Ok(tables),
        // The closure above never asks to abort.
        CommitOrAbort::Abort(()) => Err(StoreError::Corrupt {
            table: META,
            detail: "table creation aborted".into(),
        }),
    }
}

/// Creates (or opens, when the file already has it) the index table of `attr` in a transaction of its
/// own, for an index added while the store is open. The caller holds a gate pass and must be the only
/// thread opening tables (LMDB: one `mdb_dbi_open` transaction at a time).
pub(crate) fn create_index_table(env: &Env<WithoutTls>, attr: &str) -> Result<Table, StoreError> {
    check_index_name(attr)?;
    let wtxn = env.write_txn()?;
    let name = index_table_name(attr);
    let created = env.create_databases_and_commit(wtxn, |opener, wtxn: &mut RwTxn<'_>| {
        opener
            .database_options()
            .types::<Bytes, Bytes>()
            .flags(DatabaseFlags::DUP_SORT | DatabaseFlags::DUP_FIXED)
            .name(&name)
            .create(wtxn)
            .map(CommitOrAbort::<_, ()>::Commit)
    })?;
    match created {
        CommitOrAbort::Commit(table) => Ok(table),
        CommitOrAbort::Abort(()) => Err(StoreError::Corrupt {
            table: META,
            detail: "index table creation aborted".into(),
        }),
    }
}
