//! Canopy's LMDB storage layer, in the spirit of OpenLDAP's back-mdb, byte-level.
//!
//! It stores opaque entry bytes under 64-bit IDs (`id2entry`; values of 256 KiB and up in chunks,
//! `id2chunk`, so that a splice rewrites only the chunks it touches), maps caller-built DN keys to IDs
//! (`dn2id`, where a subtree is a key prefix), lists children per parent (`dn2children`), keeps one
//! ID-list table per indexed attribute (`idx.<attr>`) and a few settings (`meta`). It knows nothing of
//! LDAP: the server builds every key and value (keys must be non-empty: LMDB has no empty key). The
//! layout is specified in `docs/design/storage.md`.
//!
//! Reads are lock-free LMDB snapshots ([`Store::read`]). Writes go to one writer thread that commits
//! concurrent requests together ([`Store::write_then`]). The map grows by itself.
//!
//! Owns: LMDB, its tables and the writer thread. Must never: know an LDAP type (it stores bytes under
//! keys the backend builds), or be called by anything above `canopy-directory` but the offline tools.

mod bulk;
mod chunk;
mod error;
mod gate;
mod histogram;
mod keys;
mod pool;
mod read;
mod shared;
mod snapshot;
mod stats;
mod store;
mod tables;
mod write;
mod writer;

pub use bulk::BulkLoader;
pub use error::StoreError;
pub use heed::MdbError;
pub use histogram::{Histogram, BATCH_SIZES, COMMIT_US};
pub use keys::{FORMAT_VERSION, READABLE_FORMATS};
pub use read::{
    CandidateEntries, EntryIter, EntryRangeIter, RawPairs, RawTable, ReadOps, ReadTxn, SubtreeIter,
};
pub use snapshot::{copy_compact, describe, in_use_by, Described, DATA_FILE, LOCK_FILE};
pub use stats::{Stats, TableStats};
pub use store::{Store, StoreConfig};
pub use write::WriteTxn;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<Store>();
        send_sync::<StoreError>();
        send::<ReadTxn>();
        send::<BulkLoader>();
    }
}
