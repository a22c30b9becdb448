//! Indexes added and dropped while the database serves, on the index sets of `indexes.rs`: the
//! indexes a snapshot may use, additions and drops, the rule that reconciles the store with the
//! configuration, and the background builds (docs/design/online-indexing.md).

mod build;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use canopy_core::index::IndexSpec;
use canopy_mdb::{ReadOps, StoreError, WriteTxn};

use crate::database::Directory;
use crate::indexes::{
    definition_key, same_attr, stored_definitions, Build, Definition, IndexSet, RECORDED,
};
pub use crate::indexes::{kinds_text, IndexState, DEFAULT_BUILD_BATCH};

/// Why an index cannot be added or dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("index on {0:?}: no such attribute type in the schema")]
    UnknownAttribute(String),
    #[error("index on {0:?}: no index kind given (eq, pres, sub, ord, approx)")]
    NoKinds(String),
    #[error("no index on {0:?}")]
    NotIndexed(String),
    #[error("index on {0:?}: {1}")]
    Store(String, String),
}

/// One index as the frontend shows it (cn=Monitor, cn=config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStatus {
    pub spec: IndexSpec,
    pub state: IndexState,
    /// Entries the build has visited since it (re)started in this process.
    pub visited: u64,
    /// Entries in the database when the build (re)started: `visited` out of about this many.
    pub total: u64,
    /// The ID the build continues from (0 when complete).
    pub next_id: u64,
    /// Why the build stopped, when it failed (it resumes at the next start).
    pub error: Option<String>,
}

impl Directory {
    /// The complete indexes, as the planner may use them in the snapshot (or write) `txn`: an index
    /// still building, or completed after `txn` began, is not among them.
    pub fn indexes(&self, txn: &impl crate::View) -> Arc<[IndexSpec]> {
        let txn = crate::view::txn(txn);
        self.index_state().current().usable_at(txn.txn_id())
    }

    /// The indexes every write keeps up to date: complete and building.
    pub fn maintained_indexes(&self) -> Arc<[IndexSpec]> {
        Arc::clone(&self.index_state().current().maintained)
    }

    /// The indexes this database should have (its configuration, then the additions and drops made
    /// while open), in order, whatever their state: what the offline tools build.
    pub fn configured_indexes(&self) -> Vec<IndexSpec> {
        self.index_state()
            .current()
            .wanted
            .iter()
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// Entries a build visits per write transaction (default [`DEFAULT_BUILD_BATCH`]); at least 1.
    pub fn set_index_build_batch(&self, entries: usize) {
        self.index_state()
            .batch
            .store(entries.max(1), Ordering::Relaxed);
    }

    /// The state of every wanted index, and the progress of the builds.
    pub fn index_status(&self) -> Vec<IndexStatus> {
        let set = self.index_state().current();
        let builds = self.index_state().builds();
        // Where a build not running in this process stands: its stored position.
        let stored_next = |attr: &str| -> u64 {
            let txn = self.store().read().ok();
            let raw = txn.and_then(|t| t.get_meta(&definition_key(attr)).ok().flatten());
            raw.and_then(|r| Definition::decode(&r))
                .map_or(0, |d| d.next)
        };
        set.wanted
            .iter()
            .map(|(spec, state)| {
                let progress = builds
                    .get(&spec.attr.to_ascii_lowercase())
                    .map(|b| &b.progress);
                let load = |v: &AtomicU64| v.load(Ordering::Relaxed);
                IndexStatus {
                    spec: spec.clone(),
                    state: *state,
                    visited: progress.map_or(0, |p| load(&p.visited)),
                    total: progress.map_or(0, |p| load(&p.total)),
                    next_id: match (state, progress) {
                        (IndexState::Building, Some(p)) => load(&p.next_id),
                        (IndexState::Building, None) => stored_next(&spec.attr),
                        _ => 0,
                    },
                    error: progress.and_then(|p| {
                        p.error
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .clone()
                    }),
                }
            })
            .collect()
    }

    /// Adds an index while the database serves. The definition is stored (state building) before this
    /// returns, every write from then on keeps the index, and a background thread fills it for the
    /// existing entries in batches, each its own write transaction, remembering where it is so that a
    /// restart resumes it. The planner uses it once complete. `spec.attr` may be any name of the type;
    /// it is stored under the canonical name. An index already there with the same kinds is left
    /// alone; with other kinds it is dropped and built again.
    pub fn add_index(&self, mut spec: IndexSpec) -> Result<IndexStatus, IndexError> {
        let Some(at) = self.schema().attribute_type(&spec.attr) else {
            return Err(IndexError::UnknownAttribute(spec.attr));
        };
        spec.attr = at.name().to_string();
        if !(spec.eq || spec.pres || spec.sub || spec.ord || spec.approx) {
            return Err(IndexError::NoKinds(spec.attr));
        }
        let state = self.index_state();
        let _admin = state.admin();
        let current = state.current();
        if let Some((old, old_state)) = current
            .wanted
            .iter()
            .find(|(s, _)| same_attr(&s.attr, &spec.attr))
        {
            match old_state {
                IndexState::Complete | IndexState::Building if *old == spec => {
                    return Ok(self.status_of(&spec.attr));
                }
                IndexState::Complete | IndexState::Building => self.drop_locked(&spec.attr)?,
                // Not yet in the store: what follows records and builds it.
                IndexState::Pending => {
                    let _builds = state.builds();
                    let set = state.current().with(self.schema(), |wanted, _| {
                        wanted.retain(|(s, _)| !same_attr(&s.attr, &spec.attr));
                    });
                    state.replace(set);
                }
            }
        }
        let fail = |e: StoreError| IndexError::Store(spec.attr.clone(), e.to_string());
        self.store().add_index_table(&spec.attr).map_err(fail)?;
        let def = Definition {
            spec: spec.clone(),
            state: IndexState::Building,
            next: 0,
        };
        let existing = state.current().wanted.clone();
        self.store()
            .write(move |txn| -> Result<(), StoreError> {
                record_existing(txn, &existing)?;
                txn.clear_index(&def.spec.attr)?;
                txn.put_meta(&definition_key(&def.spec.attr), &def.encode())
            })
            .map_err(fail)?
            .map_err(fail)?;
        // From here every write keeps the index; the build starts only now, so it visits every entry
        // written before.
        {
            let _builds = state.builds();
            let set = state.current().with(self.schema(), |wanted, _| {
                wanted.push((spec.clone(), IndexState::Building));
            });
            state.replace(set);
        }
        tracing::info!(attr = %spec.attr, kinds = %kinds_text(&spec), "index added; building it in the background");
        self.spawn_build(spec.clone(), 0);
        Ok(self.status_of(&spec.attr))
    }

    /// Drops an index: the planner stops using it at once, a build of it stops, and its table is
    /// emptied and its definition removed in one write transaction, before this returns.
    pub fn drop_index(&self, attr: &str) -> Result<(), IndexError> {
        let state = self.index_state();
        let _admin = state.admin();
        self.drop_locked(attr)
    }

    fn drop_locked(&self, attr: &str) -> Result<(), IndexError> {
        let state = self.index_state();
        let current = state.current();
        let Some((spec, _)) = current
            .wanted
            .iter()
            .find(|(s, _)| same_attr(&s.attr, attr))
        else {
            return Err(IndexError::NotIndexed(attr.to_string()));
        };
        let name = spec.attr.clone();
        let build = {
            // Under the builds lock, so that a build finishing now cannot make it usable again.
            let mut builds = state.builds();
            let build = builds.remove(&name.to_ascii_lowercase());
            if let Some(build) = &build {
                build.progress.cancel.store(true, Ordering::SeqCst);
            }
            let set = state.current().with(self.schema(), |wanted, completed| {
                wanted.retain(|(s, _)| !same_attr(&s.attr, &name));
                completed.retain(|(a, _)| !same_attr(a, &name));
            });
            state.replace(set);
            build
        };
        let fail = |e: StoreError| IndexError::Store(name.clone(), e.to_string());
        let cleared = name.clone();
        let existing = state.current().wanted.clone();
        self.store()
            .write(move |txn| -> Result<(), StoreError> {
                record_existing(txn, &existing)?;
                txn.clear_index(&cleared)?;
                txn.del_meta(&definition_key(&cleared))
            })
            .map_err(fail)?
            .map_err(fail)?;
        if let Some(Build {
            thread: Some(thread),
            ..
        }) = build
        {
            if thread.join().is_err() {
                tracing::error!(attr = %name, "an index build thread panicked");
            }
        }
        tracing::info!(attr = %name, "index dropped");
        Ok(())
    }

    fn status_of(&self, attr: &str) -> IndexStatus {
        self.index_status()
            .into_iter()
            .find(|s| same_attr(&s.spec.attr, attr))
            .unwrap_or_else(|| IndexStatus {
                spec: IndexSpec {
                    attr: attr.to_string(),
                    eq: false,
                    pres: false,
                    sub: false,
                    ord: false,
                    approx: false,
                },
                state: IndexState::Pending,
                visited: 0,
                total: 0,
                next_id: 0,
                error: None,
            })
    }

    /// Brings the store in line with the configuration and starts the builds (the server calls it once
    /// at start; offline tools do not). The rule: a configured index the store records complete with
    /// the same kinds is used; one recorded as building resumes where it stopped; one the store does
    /// not record, or records with other kinds, is emptied and built online; a recorded index the
    /// configuration no longer names is dropped. A database of an earlier version, which records no
    /// definitions, has its configured indexes recorded complete (every write kept them).
    pub fn start_index_builds(&self) -> Result<(), crate::OpenError> {
        let state = self.index_state();
        let _admin = state.admin();
        let wanted: Vec<IndexSpec> = state
            .current()
            .wanted
            .iter()
            .map(|(s, _)| s.clone())
            .collect();
        let (_, stored) = stored_definitions(&self.store().read()?)?;
        // Tables of dropped indexes must be open to be emptied.
        for (lower, def) in &stored {
            if !wanted.iter().any(|s| s.attr.eq_ignore_ascii_case(lower)) {
                self.store().add_index_table(&def.spec.attr)?;
            }
        }
        let specs = wanted.clone();
        let defs = self.store().write(move |txn| -> Result<Vec<Definition>, StoreError> {
            let (recorded, stored) = stored_definitions(txn)?;
            let mut defs = Vec::new();
            for spec in &specs {
                let def = match stored.get(&spec.attr.to_ascii_lowercase()) {
                    Some(def) if def.spec == *spec => def.clone(),
                    None if !recorded => {
                        let def = Definition { spec: spec.clone(), state: IndexState::Complete, next: 0 };
                        txn.put_meta(&definition_key(&spec.attr), &def.encode())?;
                        def
                    }
                    _ => {
                        tracing::info!(attr = %spec.attr, kinds = %kinds_text(spec), "configured index not built in the store: building it online");
                        let def = Definition { spec: spec.clone(), state: IndexState::Building, next: 0 };
                        txn.clear_index(&spec.attr)?;
                        txn.put_meta(&definition_key(&spec.attr), &def.encode())?;
                        def
                    }
                };
                defs.push(def);
            }
            for (lower, def) in &stored {
                if !specs.iter().any(|s| s.attr.eq_ignore_ascii_case(lower)) {
                    tracing::info!(attr = %def.spec.attr, "stored index no longer configured: dropping it");
                    txn.clear_index(&def.spec.attr)?;
                    txn.del_meta(&definition_key(&def.spec.attr))?;
                }
            }
            txn.put_meta(RECORDED, &[1])?;
            Ok(defs)
        })??;
        let wanted = defs.iter().map(|d| (d.spec.clone(), d.state)).collect();
        {
            let _builds = state.builds();
            let completed = state.current().completed_at.clone();
            state.replace(IndexSet::new(self.schema(), wanted, completed));
        }
        for def in defs {
            if def.state == IndexState::Building {
                tracing::info!(attr = %def.spec.attr, from_id = def.next, "resuming the index build");
                self.spawn_build(def.spec, def.next);
            }
        }
        Ok(())
    }

    /// Stops the builds of this process and waits for them (their progress is stored: the next
    /// [`start_index_builds`](Self::start_index_builds) resumes them).
    pub fn stop_index_builds(&self) {
        let builds: Vec<Build> = self
            .index_state()
            .builds()
            .drain()
            .map(|(_, b)| b)
            .collect();
        for build in &builds {
            build.progress.cancel.store(true, Ordering::SeqCst);
        }
        for build in builds {
            if let Some(thread) = build.thread {
                if thread.join().is_err() {
                    tracing::error!("an index build thread panicked");
                }
            }
        }
    }

    /// Records every index of [`configured_indexes`](Self::configured_indexes) as complete and removes
    /// the other definitions, in `txn`: for `canopy reindex`, which has just rebuilt them all.
    pub fn record_indexes_complete(&self, txn: &mut WriteTxn<'_>) -> Result<(), StoreError> {
        let specs = self.configured_indexes();
        let (_, stored) = stored_definitions(txn)?;
        for (lower, def) in &stored {
            if !specs.iter().any(|s| s.attr.eq_ignore_ascii_case(lower)) {
                txn.del_meta(&definition_key(&def.spec.attr))?;
            }
        }
        for spec in specs {
            let def = Definition {
                spec,
                state: IndexState::Complete,
                next: 0,
            };
            txn.put_meta(&definition_key(&def.spec.attr), &def.encode())?;
        }
        txn.put_meta(RECORDED, &[1])
    }
}

/// Before the first addition or drop on a database that records no definitions (one of an earlier
/// version, or never started by the server), records the complete indexes of `wanted`, so that the
/// next open does not take them for new ones.
fn record_existing(
    txn: &mut WriteTxn<'_>,
    wanted: &[(IndexSpec, IndexState)],
) -> Result<(), StoreError> {
    if txn.get_meta(RECORDED)?.is_some() {
        return Ok(());
    }
    for (spec, state) in wanted {
        if *state == IndexState::Complete {
            let def = Definition {
                spec: spec.clone(),
                state: IndexState::Complete,
                next: 0,
            };
            txn.put_meta(&definition_key(&spec.attr), &def.encode())?;
        }
    }
    txn.put_meta(RECORDED, &[1])
}
