//! The accesslog overlay's log database (slapd's `logdb`): opened beside the data database it logs,
//! served read-only with syncprov so delta-syncrepl consumers can follow it, and its log writer and
//! purge task started once the server runs (docs/design/replication.md, "delta-syncrepl").

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use canopy_core::index::IndexSpec;
use canopy_directory::overlay::accesslog::{self, AccessLog, LogWriter};
use canopy_directory::{Directory, OpenError, OpenOptions, Pipeline};
use canopy_schema::{NormDn, Schema};

use crate::acl::Acl;
use crate::config::Config;
use crate::databases::{Database, Subordinate};

/// A log database and what keeps it: the data database it logs, its writer (taken when started) and
/// `logpurge`.
pub struct LogDb {
    data: Directory,
    log: Database,
    writer: Mutex<Option<LogWriter>>,
    purge: Option<(Duration, Duration)>,
}

/// The log database's directory: `accesslog` inside the data database's.
pub fn path(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join("accesslog")
}

/// The accesslog hook to append to the data database's pipeline, and what opens its log database after
/// the data database is open.
pub struct Pending {
    config: accesslog::Config,
    writer: LogWriter,
}

/// The hook of `config`, and the pending log database.
pub fn hook(config: accesslog::Config) -> (Arc<AccessLog>, Pending) {
    let (hook, writer) = AccessLog::new(config.clone());
    (Arc::new(hook), Pending { config, writer })
}

fn index(attr: &str) -> IndexSpec {
    IndexSpec::equality(attr)
}

impl Pending {
    /// The log database's access rules, in slapd's language (`access` of the overlay's table).
    pub fn access(&self) -> &[String] {
        &self.config.access
    }

    /// Opens the log database of data database `data` (configured by `view`): its own durable store in
    /// `DATA/accesslog`, its own access rules (`acl`), the data database's root DN (without password) and limits,
    /// read-only to clients, syncprov last in its pipeline.
    pub fn open(
        self,
        view: &Config,
        schema: Arc<Schema>,
        data: &Directory,
        acl: Acl,
        root: Option<NormDn>,
        durable: bool,
    ) -> Result<LogDb, OpenError> {
        let path = path(&view.data_dir);
        let options = OpenOptions {
            durable,
            initial_map_size: 256 << 20,
            ..OpenOptions::new(path.clone())
        };
        let pipeline = Pipeline::standard().then(Arc::new(
            canopy_directory::syncprov::SyncProv::ordered(view.syncprov_sessionlog),
        ));
        let backend = Directory::open(
            schema,
            &self.config.logdb,
            vec![
                index("objectClass"),
                index("entryUUID"),
                index("entryCSN"),
                index("reqStart"),
            ],
            options,
            pipeline,
        )?;
        backend.set_server_id(data.server_id());
        let log = Database::new(backend, acl)
            .with_settings(
                root.map(|ndn| (ndn, Vec::new())),
                view.limits.clone(),
                true,
                Subordinate::No,
                path,
            )
            .as_log();
        Ok(LogDb {
            data: data.clone(),
            log,
            writer: Mutex::new(Some(self.writer)),
            purge: self.config.purge,
        })
    }
}

impl LogDb {
    /// The log database, for the registry.
    pub fn database(&self) -> &Database {
        &self.log
    }

    /// Starts the log writer (after recovering the data store's outbox) and the purge task on the
    /// server's runtime. Once only.
    pub fn start(&self) {
        let Some(writer) = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let (data, log) = (self.data.clone(), self.log.backend().clone());
        tokio::spawn(async move {
            if let Err(error) = writer.recover(&data, &log).await {
                tracing::error!(%error, "accesslog: recovery of the outbox failed");
            }
            writer.run(log).await;
        });
        if let Some((age, interval)) = self.purge {
            let log = self.log.backend().clone();
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(interval);
                ticks.tick().await;
                loop {
                    ticks.tick().await;
                    match accesslog::writer::purge(&log, age).await {
                        Ok(0) => {}
                        Ok(count) => tracing::info!(records = count, "accesslog: purged"),
                        Err(error) => tracing::error!(%error, "accesslog: purge failed"),
                    }
                }
            });
        }
    }
}

/// Starts every log database's writer and purge task.
pub fn start(logs: &[LogDb]) {
    logs.iter().for_each(LogDb::start);
}
