//! The storage layer's error type.

use std::io;
use std::sync::Arc;

/// Everything that can go wrong in the storage layer.
///
/// `Clone` because one failed group commit is reported to every request of the group.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The write did not fit in the memory map. The map has been grown before this error is reported,
    /// so retrying the same request normally succeeds.
    #[error("the database map was full; it has been grown, retry the request")]
    MapFull,
    /// LMDB keys cannot be empty (DN keys, index keys and meta keys alike).
    #[error("empty key")]
    EmptyKey,
    /// A key is longer than LMDB accepts (see `Store::max_key_len`).
    #[error("key of {len} bytes is longer than the maximum of {max} bytes")]
    KeyTooLong { len: usize, max: usize },
    /// Meta keys may not be empty and may not start with the reserved 0x00 byte.
    #[error("meta key {0:?} is empty or reserved")]
    ReservedMetaKey(Vec<u8>),
    /// A stored record does not have the shape this layer writes.
    #[error("corrupt record in table {table}: {detail}")]
    Corrupt { table: &'static str, detail: String },
    /// The database was written by a newer, incompatible version.
    #[error("unsupported on-disk format version {found} (this build reads version {supported})")]
    UnsupportedFormat { found: u32, supported: u32 },
    /// The same database directory is already open in this process.
    #[error("the database is already open in this process")]
    AlreadyOpen,
    /// The writer thread is gone (the store is shutting down).
    #[error("the writer thread has stopped")]
    WriterGone,
    /// `Store::write` was called from the writer thread itself (from a `write_then` callback), which
    /// would wait for itself forever.
    #[error("blocking write called from the writer thread")]
    WouldDeadlock,
    /// The write closure panicked; its nested transaction was aborted.
    #[error("the write closure panicked")]
    Panicked,
    /// Bulk load: IDs must be strictly ascending and above every ID already stored.
    #[error("bulk load: id {id} is not above the previous id {previous}")]
    IdNotAscending { id: u64, previous: u64 },
    /// Bulk load: an index position outside `StoreConfig::indexes`.
    #[error("bulk load: no index at position {0}")]
    UnknownIndex(usize),
    /// A second bulk loader was requested while one is active.
    #[error("a bulk load is already running on this store")]
    BulkLoadActive,
    /// An index attribute name that cannot name an LMDB table (empty, over 200 bytes, or with a NUL).
    #[error("invalid index attribute name {0:?}")]
    InvalidIndexName(String),
    /// No room for another index table: the environment was opened for `max` named tables.
    #[error(
        "no room for another index table ({max} tables at most while open; restart to add more)"
    )]
    TooManyIndexes { max: u32 },
    /// An error reported by LMDB.
    #[error("LMDB: {0}")]
    Lmdb(heed::MdbError),
    /// An operating-system error.
    #[error("I/O: {0}")]
    Io(Arc<io::Error>),
}

impl From<heed::Error> for StoreError {
    fn from(err: heed::Error) -> Self {
        match err {
            heed::Error::Mdb(heed::MdbError::MapFull) => StoreError::MapFull,
            heed::Error::Mdb(code) => StoreError::Lmdb(code),
            heed::Error::Io(io) => StoreError::Io(Arc::new(io)),
            heed::Error::EnvAlreadyOpened => StoreError::AlreadyOpen,
            // Only byte-slice codecs are used, which cannot fail to encode or decode.
            heed::Error::Encoding(e) | heed::Error::Decoding(e) => StoreError::Corrupt {
                table: "(codec)",
                detail: e.to_string(),
            },
        }
    }
}

impl From<io::Error> for StoreError {
    fn from(err: io::Error) -> Self {
        StoreError::Io(Arc::new(err))
    }
}

impl StoreError {
    /// Whether the error leaves an LMDB write transaction unusable (it must be aborted).
    pub(crate) fn poisons_txn(&self) -> bool {
        match self {
            StoreError::MapFull | StoreError::Lmdb(_) | StoreError::Io(_) => true,
            StoreError::KeyTooLong { .. }
            | StoreError::EmptyKey
            | StoreError::ReservedMetaKey(_)
            | StoreError::Corrupt { .. }
            | StoreError::UnsupportedFormat { .. }
            | StoreError::AlreadyOpen
            | StoreError::WriterGone
            | StoreError::WouldDeadlock
            | StoreError::Panicked
            | StoreError::IdNotAscending { .. }
            | StoreError::UnknownIndex(_)
            | StoreError::BulkLoadActive
            | StoreError::InvalidIndexName(_)
            | StoreError::TooManyIndexes { .. } => false,
        }
    }
}
