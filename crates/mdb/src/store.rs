//! The store: opening the environment, read snapshots, the write queue, map growth and statistics.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle, ThreadId};
use std::time::Duration;

use heed::{Env, EnvFlags, EnvOpenOptions, MdbError, WithoutTls};

use crate::bulk::BulkLoader;
use crate::error::StoreError;
use crate::gate::{Exclusive, Gate};
use crate::pool::{Pool, Snapshot};
use crate::read::ReadTxn;
use crate::tables::{create_tables, max_dbs, Tables};
use crate::writer::{run_writer, Job, Request};
use crate::WriteTxn;

const MIB: usize = 1 << 20;

/// How to open a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The database directory (holds LMDB's `data.mdb` and `lock.mdb`); created if missing.
    pub path: PathBuf,
    /// Attributes with an `idx.<attr>` table, compared ASCII-case-insensitively. Tables of attributes
    /// missing here are kept on disk but not maintained.
    pub indexes: Vec<String>,
    /// The initial memory-map size. Address space only, not disk; the map grows by itself.
    pub initial_map_size: usize,
    /// fsync every group commit (LMDB's default). `false` sets MDB_NOSYNC: a crash may lose the last
    /// commits (never the database's consistency); meant for imports and tests.
    pub durable: bool,
    /// LMDB reader-table slots: the most read transactions open at once across every process.
    pub max_readers: u32,
    /// MDB_WRITEMAP: pages are written in place in the map instead of being copied out and written at
    /// commit, as `slapadd -q` opens its database. For offline loads only: a stray write through the map
    /// could reach the file, and the data file is extended to the map size (sparse).
    pub write_map: bool,
}

impl StoreConfig {
    /// Defaults for `path`: no indexes, 1 GiB initial map, durable, 1024 readers.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        StoreConfig {
            path: path.into(),
            indexes: Vec::new(),
            initial_map_size: 1 << 30,
            durable: true,
            max_readers: 1024,
            write_map: false,
        }
    }
}

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

pub(crate) struct Counters {
    pub(crate) groups: AtomicU64,
    pub(crate) ops: AtomicU64,
    pub(crate) max_group: AtomicU64,
    pub(crate) grows: AtomicU64,
    /// Write requests per committed group.
    pub(crate) batch_sizes: crate::Histogram,
    /// Microseconds each group's commit (its fsync, when durable) took.
    pub(crate) commit_us: crate::Histogram,
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
            batch_sizes: crate::Histogram::new(crate::BATCH_SIZES),
            commit_us: crate::Histogram::new(crate::COMMIT_US),
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
fn round_map_size(size: usize) -> usize {
    size.max(MIB).div_ceil(MIB).saturating_mul(MIB)
}

struct StoreInner {
    shared: Arc<Shared>,
    indexes: Vec<String>,
    jobs: Option<Sender<Box<dyn Job>>>,
    writer: Option<JoinHandle<()>>,
    writer_id: ThreadId,
}

impl Drop for StoreInner {
    fn drop(&mut self) {
        // Closing the queue lets the writer finish what is queued and exit; waiting for it releases
        // the environment, so the same directory can be opened again right after.
        drop(self.jobs.take());
        if thread::current().id() != self.writer_id {
            if let Some(writer) = self.writer.take() {
                if writer.join().is_err() {
                    tracing::error!("the LMDB writer thread panicked");
                }
            }
        }
    }
}

/// An open database. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

impl Store {
    /// Opens (creating if needed) the database directory, creates missing index tables, drops none.
    pub fn open(cfg: StoreConfig) -> Result<Store, StoreError> {
        fs::create_dir_all(&cfg.path)?;
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options
            .map_size(round_map_size(cfg.initial_map_size))
            .max_dbs(max_dbs(cfg.indexes.len()))
            .max_readers(cfg.max_readers.max(1));
        let mut flags = EnvFlags::empty();
        if !cfg.durable {
            // NO_SYNC: a process crash loses nothing (the writes are in the page cache), but a machine
            // crash can lose recent commits and, on a file system that does not keep write order, leave
            // a meta page pointing at pages never written (LMDB's MDB_NOSYNC; docs/design/storage.md).
            flags |= EnvFlags::NO_SYNC;
        }
        if cfg.write_map {
            flags |= EnvFlags::WRITE_MAP;
        }
        // SAFETY: see the flags above; WRITE_MAP is asked for by offline loads only (`write_map`).
        unsafe { options.flags(flags) };
        // SAFETY: heed refuses to open one directory twice in a process, and the data file is only
        // ever changed through LMDB (by this or another process, coordinated by lock.mdb).
        let env = unsafe { options.open(&cfg.path) }?;
        // Reader slots left behind by crashed processes would pin old pages forever.
        let stale = env.clear_stale_readers()?;
        if stale > 0 {
            tracing::warn!(stale, "cleared stale LMDB reader slots");
        }
        let tables = create_tables(&env, &cfg.indexes)?;
        let shared = Arc::new(Shared {
            max_key: env.max_key_size(),
            env,
            tables,
            gate: Arc::new(Gate::default()),
            // Headroom kept free before each group: a quarter of the map, and at least 64 MiB once the
            // map is that large (a quarter of the initial size for small test maps).
            min_free: (64 * MIB).min(round_map_size(cfg.initial_map_size) / 4),
            durable: cfg.durable,
            counters: Counters::default(),
            bulk_active: AtomicBool::new(false),
            max_dbs: max_dbs(cfg.indexes.len()),
            creating: std::sync::Mutex::new(()),
            pool: Pool::new(cfg.max_readers.max(1)),
        });
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        let writer_shared = Arc::clone(&shared);
        let writer = thread::Builder::new()
            .name("canopy-mdb-writer".into())
            .spawn(move || run_writer(&writer_shared, &queue))?;
        let writer_id = writer.thread().id();
        Ok(Store {
            inner: Arc::new(StoreInner {
                shared,
                indexes: cfg.indexes,
                jobs: Some(jobs),
                writer: Some(writer),
                writer_id,
            }),
        })
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// A consistent snapshot of the committed state.
    pub fn read(&self) -> Result<ReadTxn, StoreError> {
        read_shared(self.shared())
    }

    /// Queues `f` for the writer thread and returns at once. `f` runs in its own nested transaction
    /// inside a group commit; `Err` from `f` undoes only `f`'s writes. `done` runs on the writer thread
    /// once the group is durably committed (or with the error that failed the commit, in which case
    /// nothing of the group was stored). If the store is shutting down, `done` gets
    /// [`StoreError::WriterGone`] on the calling thread.
    pub fn write_then<T, E, F, C>(&self, f: F, done: C)
    where
        F: FnOnce(&mut WriteTxn<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        C: FnOnce(Result<Result<T, E>, StoreError>) + Send + 'static,
    {
        let job: Box<dyn Job> = Box::new(Request::new(f, done));
        match &self.inner.jobs {
            Some(jobs) => {
                if let Err(mpsc::SendError(job)) = jobs.send(job) {
                    job.complete(Err(StoreError::WriterGone));
                }
            }
            None => job.complete(Err(StoreError::WriterGone)),
        }
    }

    /// Like [`write_then`](Self::write_then), waiting for the outcome. Must not be called from the
    /// writer thread (from a `write_then` callback): that returns [`StoreError::WouldDeadlock`].
    pub fn write<T, E, F>(&self, f: F) -> Result<Result<T, E>, StoreError>
    where
        F: FnOnce(&mut WriteTxn<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        if thread::current().id() == self.inner.writer_id {
            return Err(StoreError::WouldDeadlock);
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.write_then(f, move |outcome| {
            // The waiting side only disappears if its thread is gone; nothing to report to then.
            let _ = tx.send(outcome);
        });
        rx.recv().unwrap_or(Err(StoreError::WriterGone))
    }

    /// Makes sure the index table of `attr` exists and is open, creating it in a transaction of its own
    /// when needed (an index added while the server runs). Until it is written to, the table is empty
    /// (or holds what an earlier index of that name left: the caller clears it before building).
    /// Transactions begun before the table was created must not read it (LMDB refuses the handle).
    pub fn add_index_table(&self, attr: &str) -> Result<(), StoreError> {
        let shared = self.shared();
        if shared.tables.index(attr).is_some() {
            return Ok(());
        }
        let _creating = shared
            .creating
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if shared.tables.index(attr).is_some() {
            return Ok(());
        }
        // Five fixed tables plus the index tables; leave one spare for LMDB's bookkeeping.
        let open = u32::try_from(shared.tables.index_list().len()).unwrap_or(u32::MAX);
        if open.saturating_add(6) > shared.max_dbs {
            return Err(StoreError::TooManyIndexes {
                max: shared.max_dbs.saturating_sub(6),
            });
        }
        let table = {
            // Like the writer's group transaction, hold a pass so no map resize runs under it.
            let _pass = shared.gate.pass();
            crate::tables::create_index_table(&shared.env, attr)?
        };
        // Opening a table that the file already has commits nothing, so the snapshot ID alone would
        // not tell older transactions (which LMDB refuses the new handle) from newer ones.
        shared.pool.table_opened(&shared.env);
        shared
            .tables
            .indexes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((attr.to_string(), table));
        Ok(())
    }

    /// An offline bulk loader (like `slapadd -q`). No other write may run until it is finished.
    pub fn bulk_loader(&self) -> Result<BulkLoader, StoreError> {
        BulkLoader::new(Arc::clone(self.shared()), self.inner.indexes.len())
    }

    /// The configured index attributes, in configuration order (bulk-load positions refer to it).
    pub fn indexes(&self) -> &[String] {
        &self.inner.indexes
    }

    /// The longest DN key (`dn_key` bytes) or index key accepted.
    pub fn max_key_len(&self) -> usize {
        self.shared().max_key
    }

    /// Flushes the OS buffers of a non-durable store to disk (a no-op cost-wise when durable).
    pub fn sync(&self) -> Result<(), StoreError> {
        Ok(self.shared().env.force_sync()?)
    }

    /// Write requests per committed group, and how long each group's commit took (µs).
    pub fn commit_histograms(&self) -> (&crate::Histogram, &crate::Histogram) {
        let counters = &self.shared().counters;
        (&counters.batch_sizes, &counters.commit_us)
    }

    /// When this process's writer last committed a group.
    pub fn last_commit(&self) -> Option<std::time::SystemTime> {
        match self.shared().counters.last_commit.load(Ordering::Relaxed) {
            0 => None,
            micros => Some(std::time::UNIX_EPOCH + std::time::Duration::from_micros(micros)),
        }
    }

    /// Size and activity figures.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        stats_of(self.shared())
    }
}

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
