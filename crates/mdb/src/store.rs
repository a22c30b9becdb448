//! The store: opening the environment, read snapshots, the write queue and statistics.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle, ThreadId};

use heed::{EnvFlags, EnvOpenOptions};

use crate::bulk::BulkLoader;
use crate::error::StoreError;
use crate::gate::Gate;
use crate::histogram::Histogram;
use crate::pool::Pool;
use crate::read::{read_shared, ReadTxn};
use crate::shared::{round_map_size, Counters, Shared, MIB};
use crate::stats::{stats_of, Stats};
use crate::tables::{create_tables, max_dbs};
use crate::write::WriteTxn;
use crate::writer::{run_writer, Job, Request};

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
    pub fn commit_histograms(&self) -> (&Histogram, &Histogram) {
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

#[cfg(test)]
mod tests;
