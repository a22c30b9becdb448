//! The index sets of one database: what the planner and the write path read (complete, maintained,
//! wanted), replaced as a whole on every change; their definitions in the meta table; and what the
//! builds running on them share. `indexing/` adds, drops and builds indexes with them
//! (docs/design/online-indexing.md).

mod definition;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::JoinHandle;

use canopy_core::index::{plan, IndexSpec, Plan};
use canopy_mdb::{ReadOps, StoreError};
use canopy_proto::Filter;
use canopy_schema::Schema;

pub(crate) use definition::{definition_key, Definition, DEFINITION_PREFIX, RECORDED};
pub use definition::{kinds_text, IndexState};

/// Entries a build visits per write transaction unless told otherwise.
pub const DEFAULT_BUILD_BATCH: usize = 500;

/// The index sets of one database and the builds running on it.
pub(crate) struct Indexes {
    set: RwLock<Arc<IndexSet>>,
    /// Serializes additions, drops and the start reconciliation.
    admin: Mutex<()>,
    builds: Mutex<HashMap<String, Build>>,
    /// Entries a build visits per write transaction.
    pub(crate) batch: AtomicUsize,
}

/// A build running in this process.
pub(crate) struct Build {
    pub(crate) progress: Arc<Progress>,
    pub(crate) thread: Option<JoinHandle<()>>,
}

/// What a running build shares with the frontend.
#[derive(Default)]
pub(crate) struct Progress {
    pub(crate) cancel: AtomicBool,
    pub(crate) visited: AtomicU64,
    pub(crate) total: AtomicU64,
    pub(crate) next_id: AtomicU64,
    pub(crate) error: Mutex<Option<String>>,
}

/// One consistent view of the indexes, replaced as a whole when one is added, completes or is dropped.
#[derive(Clone)]
pub(crate) struct IndexSet {
    /// What the database should have (configuration at open, then additions and drops), with state.
    pub(crate) wanted: Vec<(IndexSpec, IndexState)>,
    /// Kept up to date by every write: complete and building.
    pub(crate) maintained: Arc<[IndexSpec]>,
    /// Complete: the planner's indexes.
    usable: Arc<[IndexSpec]>,
    /// For each index completed while open, the transaction that completed it: an older snapshot
    /// must not use it (its copy of the table is partial).
    pub(crate) completed_at: Vec<(String, usize)>,
    /// The newest transaction of `completed_at`: a snapshot at least this new may use every
    /// complete index.
    pub(crate) newest: usize,
    pub(crate) alias_plan: Arc<Plan>,
    pub(crate) referral_plan: Arc<Plan>,
}

/// The candidate plan of `(objectClass=CLASS)` with `indexes`.
pub(crate) fn class_plan(schema: &Schema, indexes: &[IndexSpec], class: &str) -> Plan {
    let filter = Filter::Equality("objectClass".into(), class.as_bytes().to_vec());
    plan(schema, indexes, &filter)
}

/// Whether two attribute names are one (ASCII case-insensitively).
pub(crate) fn same_attr(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

impl IndexSet {
    pub(crate) fn new(
        schema: &Schema,
        wanted: Vec<(IndexSpec, IndexState)>,
        completed_at: Vec<(String, usize)>,
    ) -> Self {
        let maintained: Arc<[IndexSpec]> = wanted
            .iter()
            .filter(|(_, s)| *s != IndexState::Pending)
            .map(|(spec, _)| spec.clone())
            .collect();
        let usable: Arc<[IndexSpec]> = wanted
            .iter()
            .filter(|(_, s)| *s == IndexState::Complete)
            .map(|(spec, _)| spec.clone())
            .collect();
        let completed_at: Vec<(String, usize)> = completed_at
            .into_iter()
            .filter(|(attr, _)| usable.iter().any(|s| same_attr(&s.attr, attr)))
            .collect();
        let newest = completed_at.iter().map(|(_, t)| *t).max().unwrap_or(0);
        IndexSet {
            alias_plan: Arc::new(class_plan(schema, &usable, "alias")),
            referral_plan: Arc::new(class_plan(schema, &usable, "referral")),
            wanted,
            maintained,
            usable,
            completed_at,
            newest,
        }
    }

    /// The complete indexes a snapshot of transaction ID `snapshot` may use.
    pub(crate) fn usable_at(&self, snapshot: usize) -> Arc<[IndexSpec]> {
        if snapshot >= self.newest {
            return Arc::clone(&self.usable);
        }
        self.usable
            .iter()
            .filter(|spec| {
                !self
                    .completed_at
                    .iter()
                    .any(|(attr, at)| same_attr(attr, &spec.attr) && *at > snapshot)
            })
            .cloned()
            .collect()
    }

    pub(crate) fn with(
        &self,
        schema: &Schema,
        f: impl FnOnce(&mut Vec<(IndexSpec, IndexState)>, &mut Vec<(String, usize)>),
    ) -> IndexSet {
        let mut wanted = self.wanted.clone();
        let mut completed_at = self.completed_at.clone();
        f(&mut wanted, &mut completed_at);
        IndexSet::new(schema, wanted, completed_at)
    }
}

/// The stored definitions (lower-case attribute → definition) and whether any were ever recorded.
pub(crate) fn stored_definitions(
    txn: &impl ReadOps,
) -> Result<(bool, HashMap<String, Definition>), StoreError> {
    let recorded = txn.get_meta(RECORDED)?.is_some();
    let mut found = HashMap::new();
    for (key, value) in txn.meta_prefix(DEFINITION_PREFIX)? {
        match Definition::decode(&value) {
            Some(def) => {
                found.insert(def.spec.attr.to_ascii_lowercase(), def);
            }
            None => {
                tracing::error!(key = %String::from_utf8_lossy(&key), "unreadable index definition; the index is rebuilt at the next start")
            }
        }
    }
    Ok((recorded, found))
}

impl Indexes {
    /// The sets of a database just opened with the `configured` indexes, from what the store records,
    /// without writing: a configured index is usable when the store records it complete with the same
    /// kinds (or when the store records no definitions at all: a database of an earlier version, whose
    /// configured indexes were kept by every write); maintained when recorded as building; otherwise it
    /// waits for [`Directory::start_index_builds`].
    pub(crate) fn open(
        schema: &Schema,
        configured: &[IndexSpec],
        txn: &impl ReadOps,
    ) -> Result<Indexes, StoreError> {
        let (recorded, stored) = stored_definitions(txn)?;
        let wanted = configured
            .iter()
            .map(|spec| {
                let state = match stored.get(&spec.attr.to_ascii_lowercase()) {
                    _ if !recorded => IndexState::Complete,
                    Some(def) if def.spec == *spec => def.state,
                    _ => IndexState::Pending,
                };
                (spec.clone(), state)
            })
            .collect();
        Ok(Indexes {
            set: RwLock::new(Arc::new(IndexSet::new(schema, wanted, Vec::new()))),
            admin: Mutex::new(()),
            builds: Mutex::new(HashMap::new()),
            batch: AtomicUsize::new(DEFAULT_BUILD_BATCH),
        })
    }

    pub(crate) fn current(&self) -> Arc<IndexSet> {
        Arc::clone(&self.set.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn replace(&self, set: IndexSet) {
        *self.set.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(set);
    }

    pub(crate) fn admin(&self) -> MutexGuard<'_, ()> {
        self.admin.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn builds(&self) -> MutexGuard<'_, HashMap<String, Build>> {
        self.builds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
