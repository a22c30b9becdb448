//! Size and activity figures of a store: per-table pages and records, the map, readers, and the
//! writer's and the read pool's counters.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::StoreError;
use crate::read::read_shared;
use crate::shared::Shared;

/// Size and activity figures of a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Entries in id2entry.
    pub entries: u64,
    /// Current memory-map size in bytes.
    pub map_size: usize,
    /// Bytes up to and including the last page ever used (the high-water mark of the file).
    pub map_used: usize,
    /// Size of data.mdb on disk.
    pub file_size: u64,
    pub page_size: u32,
    /// Reader-table slots in use or used before, across every process (LMDB's me_numreaders).
    pub readers: u32,
    pub max_readers: u32,
    /// Per table: pages and records.
    pub tables: Vec<TableStats>,
    /// Group commits done by this process's writer thread.
    pub groups_committed: u64,
    /// Write requests in those groups (including closures that returned `Err`).
    pub ops_committed: u64,
    /// The largest number of write requests committed together.
    pub max_group_size: u64,
    /// Times this process grew the map.
    pub map_grows: u64,
    /// Read transactions this process began; the other snapshots handed out were reused.
    pub read_txns_begun: u64,
    /// Idle read transactions kept for reuse now (each holds a reader slot).
    pub read_txns_idle: usize,
}

/// Page figures of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStats {
    pub name: String,
    pub depth: u32,
    pub branch_pages: usize,
    pub leaf_pages: usize,
    pub overflow_pages: usize,
    /// Records (for dup-sort tables: key/ID pairs).
    pub entries: usize,
}

pub(crate) fn stats_of(shared: &Arc<Shared>) -> Result<Stats, StoreError> {
    use crate::read::sealed::Access;
    use crate::ReadOps;
    let rtxn = read_shared(shared)?;
    let mut tables = Vec::new();
    for (name, table) in shared.tables.named() {
        let stat = table.stat(rtxn.ro_txn())?;
        tables.push(TableStats {
            name,
            depth: stat.depth,
            branch_pages: stat.branch_pages,
            leaf_pages: stat.leaf_pages,
            overflow_pages: stat.overflow_pages,
            entries: stat.entries,
        });
    }
    let entries = rtxn.entry_count()?;
    // Counted after this snapshot went back, so that it shows among the idle ones when kept.
    drop(rtxn);
    let info = shared.env.info();
    let (map_size, map_used) = shared.usage();
    let counters = &shared.counters;
    Ok(Stats {
        entries,
        map_size,
        map_used,
        file_size: shared.env.real_disk_size()?,
        page_size: shared.env.unnamed_database_stat().page_size,
        readers: info.number_of_readers,
        max_readers: info.maximum_number_of_readers,
        tables,
        groups_committed: counters.groups.load(Ordering::Relaxed),
        ops_committed: counters.ops.load(Ordering::Relaxed),
        max_group_size: counters.max_group.load(Ordering::Relaxed),
        map_grows: counters.grows.load(Ordering::Relaxed),
        read_txns_begun: shared.pool.begun.load(Ordering::Relaxed),
        read_txns_idle: shared.pool.idle(),
    })
}
