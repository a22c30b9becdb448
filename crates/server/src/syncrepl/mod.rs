//! The syncrepl consumer (OpenLDAP's `syncrepl` directive, RFC 4533): one task per `[[syncrepl]]`
//! table that connects to its provider, runs the refresh and persist phases, applies what arrives
//! through `Directory::apply_replica` with the cookie in the same transaction, polls by `interval`
//! in refreshOnly mode and retries per `retry` (docs/replication.md).

pub mod client;
pub mod config;
mod delta;
mod session;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::databases::Database;

pub use config::{Consumer, SyncreplConfig};

/// What a consumer reports: cn=Monitor and the logs read it.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// connecting, refreshing, persisting, waiting (refreshOnly between polls), retrying, stopped.
    pub state: &'static str,
    /// The cookie last stored.
    pub cookie: String,
    /// When a refresh last ended or a persist-mode change was last applied.
    pub last_success: Option<SystemTime>,
    /// The last error, with when it happened.
    pub last_error: Option<(SystemTime, String)>,
    /// Seconds between the entryCSN time of the last change applied and when it was applied.
    pub lag: Option<f64>,
    /// Entries added, modified, renamed, deleted since the start.
    pub counts: [u64; 4],
    /// Received changes not applied since the start: already held (a change back around a
    /// multi-provider ring) or lost a conflict (docs/design/replication.md).
    pub skipped: u64,
    /// Received entries merged attribute by attribute with the held version into one neither was,
    /// and merges the schema refused, so that the newer version won whole (docs/design/replication.md).
    pub merged: u64,
    pub merge_fallbacks: u64,
    /// Received entries that took the place of an entry of another entryUUID at their DN (a
    /// consumer loaded from the same data as its provider), and deletes of a refresh spared because
    /// the provider had just sent their DN (docs/replication.md, Starting a replica).
    pub replaced: u64,
    pub spared: u64,
    /// The last present phase that deleted more than half the entries in scope: when, how many,
    /// of how many held.
    pub mass_delete: Option<(SystemTime, u64, u64)>,
    /// Connections made since the start.
    pub connects: u64,
    /// When a change from the future (a peer's clock ahead) was last logged: once a minute at most.
    pub future_warned: Option<SystemTime>,
}

/// One consumer: its settings and its status.
pub struct Handle {
    pub consumer: Consumer,
    status: Mutex<Status>,
    /// Counts the schema changes made live (cn=config): each ends the running session, and the
    /// next one works on the database of the snapshot that holds the new schema.
    schema: tokio::sync::watch::Sender<u64>,
}

impl Handle {
    pub fn new(consumer: Consumer) -> Handle {
        Handle {
            consumer,
            status: Mutex::new(Status {
                state: "starting",
                ..Status::default()
            }),
            schema: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Called once the snapshot with a schema changed live is swapped in.
    pub fn schema_changed(&self) {
        self.schema.send_modify(|n| *n += 1);
    }

    /// Whether a refresh from the provider ended since this server started.
    pub fn refreshed(&self) -> bool {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last_success
            .is_some()
    }

    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn update(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Compiles the configuration's `[[syncrepl]]` tables (all of them belong to the first database, whose
/// suffix is `suffix`), with its `updateref`.
pub fn handles(
    tables: &[SyncreplConfig],
    updateref: Option<&str>,
    suffix: &str,
) -> Result<Vec<Arc<Handle>>, String> {
    config::check(tables, updateref, suffix)?;
    tables
        .iter()
        .map(|table| table.compile(suffix).map(|c| Arc::new(Handle::new(c))))
        .collect()
}

/// Starts one task per consumer of the first database on the current runtime.
pub fn start(current: &Current, handles: &[Arc<Handle>]) {
    for handle in handles {
        let (current, handle) = (current.clone(), handle.clone());
        tokio::spawn(async move { run(current, handle).await });
    }
}

/// Starts the purge of a multi-provider database's old conflict records (`tombstone_purge`: age,
/// interval) on the current runtime: every interval, in one write, through the first database of the
/// snapshot current at that moment.
pub fn start_purge(current: &Current, purge: Option<(std::time::Duration, std::time::Duration)>) {
    let Some((age, interval)) = purge else {
        return;
    };
    let current = current.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        loop {
            ticks.tick().await;
            // The current snapshot's handle, as the consumers take it (a schema changed live).
            match current().purge_conflict_records(age).await {
                Ok(0) => {}
                Ok(count) => {
                    tracing::info!(
                        records = count,
                        "syncrepl: purged old tombstones and rename records"
                    )
                }
                Err(error) => {
                    tracing::error!(error = %error.message, "syncrepl: purging old tombstones failed")
                }
            }
        }
    });
}

/// The database a session works on: the first one of the configuration snapshot current when it is
/// called (the server's `State::current`), so that a session started after a live schema change
/// replicates under the new schema. A function, since this module does not name the server's state,
/// which holds the consumers' handles.
pub type Current = Arc<dyn Fn() -> Database + Send + Sync>;

/// A consumer's life: sessions, polls and retries, until its retry schedule runs out.
async fn run(current: Current, handle: Arc<Handle>) {
    let c = &handle.consumer;
    let mut schema = handle.schema.subscribe();
    if let Err(e) = current().check_replica() {
        tracing::error!(rid = c.rid, provider = %c.provider, error = %e, "syncrepl: cannot start");
        handle.update(|s| {
            s.state = "stopped";
            s.last_error = Some((SystemTime::now(), e));
        });
        return;
    }
    // Index into the retry schedule and tries made at that step.
    let (mut step, mut tries) = (0usize, 0u32);
    let mut reload = false;
    loop {
        handle.update(|s| {
            s.state = "connecting";
            s.connects += 1;
        });
        schema.borrow_and_update();
        let db = current();
        // A delta consumer (`syncdata = "accesslog"`) follows the provider's log (delta/). A schema
        // changed live ends the session (what it applied is committed with its cookie); the next
        // one goes on from the stored cookie under the new schema.
        let ended = tokio::select! {
            ended = delta::run(&db, &handle, reload) => ended,
            _ = schema.changed() => {
                tracing::info!(rid = c.rid, provider = %c.provider,
                    "syncrepl: the schema changed (cn=config); the session starts again under it");
                continue;
            }
        };
        match ended {
            Ok(session::End::Polled) => {
                (step, tries, reload) = (0, 0, false);
                handle.update(|s| s.state = "waiting");
                tokio::time::sleep(c.interval).await;
                continue;
            }
            Ok(session::End::RefreshRequired) => {
                tracing::warn!(rid = c.rid, provider = %c.provider,
                    "syncrepl: the provider asks for a full reload (e-syncRefreshRequired)");
                reload = true;
                continue;
            }
            Err(e) => {
                tracing::error!(rid = c.rid, provider = %c.provider, error = %e.message, "syncrepl: session failed");
                handle.update(|s| s.last_error = Some((SystemTime::now(), e.message.clone())));
                if e.progressed {
                    (step, tries) = (0, 0);
                }
            }
        }
        // The retry schedule: each step's delay, its count of times (or for ever).
        let Some(delay) = next_delay(&c.retry, &mut step, &mut tries) else {
            tracing::error!(rid = c.rid, provider = %c.provider,
                "syncrepl: retries exhausted; this consumer stops until the server restarts");
            handle.update(|s| s.state = "stopped");
            return;
        };
        handle.update(|s| s.state = "retrying");
        tracing::info!(rid = c.rid, provider = %c.provider, delay = delay.as_secs(), "syncrepl: retrying");
        tokio::time::sleep(delay).await;
    }
}

/// The next delay of a slapd retry schedule, moving through it.
fn next_delay(steps: &[config::RetryStep], step: &mut usize, tries: &mut u32) -> Option<Duration> {
    loop {
        let current = steps.get(*step)?;
        match current.count {
            None => return Some(current.delay),
            Some(n) if *tries < n => {
                *tries += 1;
                return Some(current.delay);
            }
            Some(_) => {
                *step += 1;
                *tries = 0;
            }
        }
    }
}

/// A session's failure: what went wrong, and whether anything was applied first (which restarts the
/// retry schedule, as a working provider that later fails deserves the short delays again).
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub progressed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_schedule_moves_on() {
        let steps = config::parse_retry("5 2 60 +").unwrap();
        let (mut step, mut tries) = (0, 0);
        let delays: Vec<u64> = (0..5)
            .map(|_| next_delay(&steps, &mut step, &mut tries).unwrap().as_secs())
            .collect();
        assert_eq!(delays, vec![5, 5, 60, 60, 60]);
        let steps = config::parse_retry("1 1").unwrap();
        let (mut step, mut tries) = (0, 0);
        assert!(next_delay(&steps, &mut step, &mut tries).is_some());
        assert!(next_delay(&steps, &mut step, &mut tries).is_none());
    }
}
