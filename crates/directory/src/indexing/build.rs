//! The background build of one index: batches of entries, each its own write transaction through the
//! store's writer, the position stored with each batch, progress in the log and in [`Progress`].

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use canopy_core::index::{entry_keys, IndexSpec};
use canopy_core::wire::StoredEntry;
use canopy_mdb::{ReadOps, StoreError, WriteTxn};
use canopy_schema::Schema;

use crate::database::{Directory, WeakDirectory};
use crate::indexes::{
    definition_key, kinds_text, Build, Definition, IndexSet, IndexState, Progress,
};

/// How often a running build reports to the log.
const LOG_EVERY: Duration = Duration::from_secs(5);
/// Times a batch is tried again after the map grew (MDB_MAP_FULL) before the build gives up.
const MAP_FULL_RETRIES: u32 = 8;

/// What one batch did.
enum Step {
    /// The definition is gone or changed: the index was dropped (or replaced).
    Gone,
    Progress {
        visited: u64,
        next: u64,
    },
    Complete {
        visited: u64,
        txn_id: usize,
    },
}

impl Directory {
    /// Starts the build thread of `spec` from entry ID `next`.
    pub(super) fn spawn_build(&self, spec: IndexSpec, next: u64) {
        let progress = Arc::new(Progress::default());
        progress.next_id.store(next, Ordering::Relaxed);
        if let Ok(txn) = self.store().read() {
            progress
                .total
                .store(txn.entry_count().unwrap_or(0), Ordering::Relaxed);
        }
        let weak = self.downgrade();
        let shared = Arc::clone(&progress);
        let name = spec.attr.to_ascii_lowercase();
        let thread = std::thread::Builder::new()
            .name(format!("canopy-index-{name}"))
            .spawn(move || run(&weak, &spec, &shared));
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(err) => {
                tracing::error!(%err, attr = %name, "cannot start the index build thread; it resumes at the next start");
                *progress
                    .error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) =
                    Some(format!("cannot start the build thread: {err}"));
                None
            }
        };
        let mut builds = self.index_state().builds();
        if let Some(old) = builds.insert(name, Build { progress, thread }) {
            old.progress.cancel.store(true, Ordering::SeqCst);
        }
    }
}

fn run(weak: &WeakDirectory, spec: &IndexSpec, progress: &Progress) {
    let started = Instant::now();
    let mut logged = started;
    let mut map_full = 0;
    loop {
        if progress.cancel.load(Ordering::SeqCst) {
            return;
        }
        // A handle only for the batch: a database closed by everyone else ends the build.
        let Some(dir) = weak.upgrade() else { return };
        let batch = dir.index_state().batch.load(Ordering::Relaxed);
        let schema = Arc::clone(dir.schema());
        let job_spec = spec.clone();
        let outcome = dir
            .store()
            .write(move |txn| build_batch(txn, &schema, &job_spec, batch))
            .and_then(|inner| inner);
        match outcome {
            Ok(Step::Gone) => return,
            Ok(Step::Progress { visited, next }) => {
                map_full = 0;
                let done = progress.visited.fetch_add(visited, Ordering::Relaxed) + visited;
                progress.next_id.store(next, Ordering::Relaxed);
                if logged.elapsed() >= LOG_EVERY {
                    logged = Instant::now();
                    tracing::info!(
                        attr = %spec.attr,
                        visited = done,
                        of_about = progress.total.load(Ordering::Relaxed),
                        next_id = next,
                        "building index"
                    );
                }
            }
            Ok(Step::Complete { visited, txn_id }) => {
                let done = progress.visited.fetch_add(visited, Ordering::Relaxed) + visited;
                progress.next_id.store(0, Ordering::Relaxed);
                if dir.index_complete(spec, txn_id, progress) {
                    tracing::info!(
                        attr = %spec.attr,
                        kinds = %kinds_text(spec),
                        visited = done,
                        seconds = started.elapsed().as_secs_f64(),
                        "index complete; searches use it from now on"
                    );
                }
                return;
            }
            Err(StoreError::MapFull) if map_full < MAP_FULL_RETRIES => map_full += 1,
            Err(err) => {
                tracing::error!(attr = %spec.attr, %err, "index build stopped; it resumes at the next start");
                *progress
                    .error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(err.to_string());
                return;
            }
        }
    }
}

/// Visits up to `limit` entries from the stored position, adding their keys, and stores the new
/// position (or the state complete) in the same transaction. Each entry is read inside this write
/// transaction, so no client write can come between the read and the keys.
fn build_batch(
    txn: &mut WriteTxn<'_>,
    schema: &Schema,
    spec: &IndexSpec,
    limit: usize,
) -> Result<Step, StoreError> {
    let key = definition_key(&spec.attr);
    let Some(raw) = txn.get_meta(&key)? else {
        return Ok(Step::Gone);
    };
    let Some(mut def) = Definition::decode(&raw) else {
        return Err(StoreError::Corrupt {
            table: "meta",
            detail: format!("unreadable definition of the index on {}", spec.attr),
        });
    };
    if def.state != IndexState::Building || def.spec != *spec {
        return Ok(Step::Gone);
    }
    let mut keyed: Vec<(u64, Vec<Vec<u8>>)> = Vec::new();
    let mut resume = None;
    for item in txn.entries_from(def.next)? {
        let (id, bytes) = item?;
        if keyed.len() >= limit {
            resume = Some(id);
            break;
        }
        match StoredEntry::parse(bytes).and_then(|e| e.to_entry()) {
            Ok(entry) => keyed.push((id, entry_keys(schema, spec, &entry))),
            Err(err) => {
                // `canopy verify` reports it; the index simply lacks it, as a write would have.
                tracing::error!(id, %err, attr = %spec.attr, "unreadable entry skipped by the index build");
                keyed.push((id, Vec::new()));
            }
        }
    }
    let visited = u64::try_from(keyed.len()).unwrap_or(u64::MAX);
    for (id, keys) in keyed {
        for index_key in keys {
            txn.index_add(&spec.attr, &index_key, id)?;
        }
    }
    match resume {
        Some(next) => {
            def.next = next;
            txn.put_meta(&key, &def.encode())?;
            Ok(Step::Progress { visited, next })
        }
        None => {
            def.state = IndexState::Complete;
            def.next = 0;
            txn.put_meta(&key, &def.encode())?;
            Ok(Step::Complete {
                visited,
                txn_id: txn.txn_id(),
            })
        }
    }
}

impl Directory {
    /// Makes a finished build usable, unless it was dropped meanwhile. Returns whether it did.
    fn index_complete(&self, spec: &IndexSpec, txn_id: usize, progress: &Progress) -> bool {
        let state = self.index_state();
        // The builds lock orders this against a drop (which cancels under it).
        let builds = state.builds();
        if progress.cancel.load(Ordering::SeqCst) {
            return false;
        }
        let current = state.current();
        if !current.wanted.iter().any(|(s, _)| s == spec) {
            return false;
        }
        let set: IndexSet = current.with(self.schema(), |wanted, completed| {
            for (s, st) in wanted.iter_mut() {
                if s == spec {
                    *st = IndexState::Complete;
                }
            }
            completed.push((spec.attr.clone(), txn_id));
        });
        state.replace(set);
        drop(builds);
        true
    }
}
