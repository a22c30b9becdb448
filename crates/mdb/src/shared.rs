//! The state a store's handles, read transactions, writer thread and bulk loader share: the
//! environment, its tables, the gate and the read pool, the commit counters, and map growth.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use heed::{Env, MdbError, WithoutTls};

use crate::error::StoreError;
use crate::gate::{Exclusive, Gate};
use crate::histogram::{Histogram, BATCH_SIZES, COMMIT_US};
use crate::pool::Pool;
use crate::tables::Tables;

pub(crate) const MIB: usize = 1 << 20;

pub(crate) struct Counters {
    pub(crate) groups: AtomicU64,
    pub(crate) ops: AtomicU64,
    pub(crate) max_group: AtomicU64,
    pub(crate) grows: AtomicU64,
    /// Write requests per committed group.
    pub(crate) batch_sizes: Histogram,
    /// Microseconds each group's commit (its fsync, when durable) took.
    pub(crate) commit_us: Histogram,
    /// When the last group committed, in microseconds since the epoch (0: never).
    pub(crate) last_commit: AtomicU64,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            groups: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            max_group: AtomicU64::new(0),
            grows: AtomicU64::new(0),
            batch_sizes: Histogram::new(BATCH_SIZES),
            commit_us: Histogram::new(COMMIT_US),
            last_commit: AtomicU64::new(0),
        }
    }
}

/// State shared by handles, read transactions, the writer thread and the bulk loader.
pub(crate) struct Shared {
    pub(crate) env: Env<WithoutTls>,
    pub(crate) tables: Tables,
    pub(crate) gate: Arc<Gate>,
    /// The longest caller key (DN key, index key, meta key) accepted.
    pub(crate) max_key: usize,
    /// The least free space kept before each group commit (besides a quarter of the map).
    pub(crate) min_free: usize,
    pub(crate) durable: bool,
    pub(crate) counters: Counters,
    /// Set while a bulk loader exists.
    pub(crate) bulk_active: AtomicBool,
    /// The named tables the environment was opened for (LMDB's `max_dbs`).
    pub(crate) max_dbs: u32,
    /// Held while an index table is created: LMDB allows one table-opening transaction at a time.
    pub(crate) creating: std::sync::Mutex<()>,
    /// Idle read transactions of the newest snapshot.
    pub(crate) pool: Pool,
}

/// A pending or running map resize: the gate held exclusively and the read pool closed.
pub(crate) struct Resizing<'a> {
    _exclusive: Exclusive<'a>,
    pool: &'a Pool,
}

impl Drop for Resizing<'_> {
    fn drop(&mut self) {
        self.pool.reopen();
    }
}

impl Shared {
    pub(crate) fn page_size(&self) -> usize {
        usize::try_from(self.env.unnamed_database_stat().page_size).unwrap_or(4096)
    }

    /// (map size, bytes up to the last used page) of the last committed state.
    pub(crate) fn usage(&self) -> (usize, usize) {
        let info = self.env.info();
        let used = info
            .last_page_number
            .saturating_add(1)
            .saturating_mul(self.page_size());
        (info.map_size, used)
    }

    /// Grows the map when fewer than `extra` bytes plus the headroom rule are free. Returns false when
    /// growth was needed but readers did not drain within `wait`.
    pub(crate) fn ensure_headroom(&self, extra: usize, wait: Duration) -> bool {
        let (map, used) = self.usage();
        let free = map.saturating_sub(used);
        let want = (map / 4).max(self.min_free).saturating_add(extra);
        if free >= want {
            return true;
        }
        self.grow(used.saturating_add(want), wait)
    }

    /// Takes the gate exclusively (no transaction of this process open), waiting up to `wait` for the
    /// transactions in use. Idle pooled transactions are aborted first and none is kept until the
    /// returned guard drops, so they never hold a resize up.
    pub(crate) fn exclusive(&self, wait: Duration) -> Option<Resizing<'_>> {
        self.pool.close();
        match self.gate.exclusive(wait) {
            Some(exclusive) => Some(Resizing {
                _exclusive: exclusive,
                pool: &self.pool,
            }),
            None => {
                self.pool.reopen();
                None
            }
        }
    }

    /// After a commit of this process: idle snapshots older than it are aborted.
    pub(crate) fn committed(&self) {
        self.pool.drop_stale(&self.env);
    }

    /// Grows the map geometrically to at least `needed` bytes (and at least double).
    pub(crate) fn grow(&self, needed: usize, wait: Duration) -> bool {
        let Some(_exclusive) = self.exclusive(wait) else {
            tracing::debug!("map growth postponed: read transactions still open");
            return false;
        };
        // Re-read under the gate: another thread may have grown it meanwhile.
        let (map, _) = self.usage();
        if map >= needed && needed != 0 {
            return true;
        }
        let mut new_size = map.max(MIB).saturating_mul(2);
        while new_size < needed {
            new_size = new_size.saturating_mul(2);
        }
        let new_size = round_map_size(new_size);
        // SAFETY: the exclusive gate is held, so no transaction of this process is open: read
        // transactions (in use or idle in the pool), group-commit transactions and bulk-load
        // transactions all hold passes.
        match unsafe { self.env.resize(new_size) } {
            Ok(()) => {
                self.counters.grows.fetch_add(1, Ordering::Relaxed);
                tracing::info!(old = map, new = new_size, "grew the LMDB map");
                true
            }
            Err(err) => {
                tracing::error!(%err, "could not grow the LMDB map");
                false
            }
        }
    }

    /// After MDB_MAP_RESIZED (another process grew the map): adopt the size recorded in the file.
    pub(crate) fn adopt_map_size(&self) -> Result<(), StoreError> {
        let Some(_exclusive) = self.exclusive(Duration::from_secs(2)) else {
            return Err(StoreError::Lmdb(MdbError::MapResized));
        };
        // SAFETY: as in `grow`. Size 0 makes LMDB take the size from the meta page.
        unsafe { self.env.resize(0) }?;
        Ok(())
    }
}

/// Rounds up to a whole MiB, a multiple of every OS page size LMDB runs with.
pub(crate) fn round_map_size(size: usize) -> usize {
    size.max(MIB).div_ceil(MIB).saturating_mul(MIB)
}
