//! The cn=Monitor tree as it is now: every entry's DN and attributes, computed from the counters of
//! `metrics`, the open connections, the databases and the configuration, in back-monitor's shape;
//! `refresh` stores it in the monitor database before a search reads it.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use canopy_core::LdapError;

use crate::metrics::OpType;
use crate::monitor::{generalized, MonitorEntry, SUFFIX};
use crate::state::ServerState;

/// cn=Monitor's backend: its entries are computed and stored before a read that may find them;
/// clients never write it, and it has no sync provider.
pub struct MonitorBackend;

impl crate::state::Backend for MonitorBackend {
    fn read_needs_preparing(&self, raw_base: &[u8]) -> bool {
        crate::monitor::Monitor::may_hold(raw_base)
    }

    fn prepare_read<'a>(&'a self, state: &'a crate::state::State) -> crate::state::Pending<'a, ()> {
        Box::pin(async move {
            if let Err(error) = refresh(state).await {
                tracing::warn!(%error, "cn=Monitor refresh failed");
            }
        })
    }

    fn provides_sync(&self) -> bool {
        false
    }

    fn scans_by_design(&self) -> bool {
        true
    }
}

/// Brings the monitor database up to date (a no-op when it is not configured).
pub async fn refresh(state: &ServerState) -> Result<(), LdapError> {
    match &state.monitor {
        Some(monitor) => monitor.store(build(state)).await,
        None => Ok(()),
    }
}

struct Tree {
    entries: Vec<MonitorEntry>,
}

impl Tree {
    fn add(
        &mut self,
        rdn: &str,
        parent: &str,
        class: &str,
        attrs: Vec<(&'static str, Vec<String>)>,
    ) {
        let dn = if parent.is_empty() {
            rdn.to_string()
        } else {
            format!("{rdn},{parent}")
        };
        let cn = rdn.split_once('=').map(|(_, v)| v).unwrap_or(rdn);
        let mut all = vec![
            ("objectClass", vec![class.to_string()]),
            ("cn", vec![cn.to_string()]),
        ];
        all.extend(attrs);
        self.entries.push(MonitorEntry { dn, attrs: all });
    }

    fn container(&mut self, rdn: &str, description: &str) -> String {
        self.add(
            rdn,
            SUFFIX,
            "monitorContainer",
            vec![("description", vec![description.to_string()])],
        );
        format!("{rdn},{SUFFIX}")
    }

    fn counter(&mut self, rdn: &str, parent: &str, value: u64) {
        self.add(
            rdn,
            parent,
            "monitorCounterObject",
            vec![("monitorCounter", vec![value.to_string()])],
        );
    }
}

/// One `description` per index: `index mail eq,sub: building 1200/20000 entries (next id 1201)`.
fn index_lines(dir: &canopy_directory::Directory) -> Vec<String> {
    dir.index_status()
        .into_iter()
        .map(|s| {
            let head = format!(
                "index {} {}: {}",
                s.spec.attr,
                canopy_directory::indexing::kinds_text(&s.spec),
                s.state.as_str()
            );
            match (s.state, &s.error) {
                (_, Some(error)) => format!("{head}, stopped: {error}"),
                (canopy_directory::IndexState::Building, None) => format!(
                    "{head} {}/{} entries (next id {})",
                    s.visited, s.total, s.next_id
                ),
                _ => head,
            }
        })
        .collect()
}

fn one(value: impl ToString) -> Vec<String> {
    vec![value.to_string()]
}

/// The whole tree, parents before children.
fn build(state: &ServerState) -> Vec<MonitorEntry> {
    let m = &state.metrics;
    let mut t = Tree {
        entries: Vec::new(),
    };
    t.add(
        SUFFIX,
        "",
        "monitorServer",
        vec![
            (
                "description",
                vec![
                    "This subtree contains monitoring/managing objects.".into(),
                    "This object contains information about this server.".into(),
                    "Most of the information is held in operational attributes, which must be explicitly requested.".into(),
                ],
            ),
            ("monitoredInfo", one(format!("Canopy {}", env!("CARGO_PKG_VERSION")))),
        ],
    );

    // Backends: the kinds of database this server runs.
    let backends = t.container(
        "cn=Backends",
        "This subsystem contains information about available backends.",
    );
    for (i, kind) in ["mdb", "monitor"].iter().enumerate() {
        t.add(
            &format!("cn=Backend {i}"),
            &backends,
            "monitoredObject",
            vec![
                ("monitoredInfo", one(kind)),
                ("monitorRuntimeConfig", one("FALSE")),
            ],
        );
    }

    // Connections.
    let connections = t.container(
        "cn=Connections",
        "This subsystem contains information about connections.",
    );
    let open = m.open_connections();
    t.counter("cn=Max File Descriptors", &connections, max_descriptors());
    t.counter(
        "cn=Total",
        &connections,
        m.connections_total.load(Ordering::Relaxed),
    );
    t.counter("cn=Current", &connections, open.len() as u64);
    for conn in &open {
        let received = conn.ops_received.load(Ordering::Relaxed);
        let completed = conn.ops_completed.load(Ordering::Relaxed);
        let mut attrs = vec![
            ("monitorConnectionNumber", one(conn.number)),
            ("monitorConnectionProtocol", one(3)),
            ("monitorConnectionOpsReceived", one(received)),
            (
                "monitorConnectionOpsExecuting",
                one(received.saturating_sub(completed)),
            ),
            ("monitorConnectionOpsPending", one(0)),
            ("monitorConnectionOpsCompleted", one(completed)),
            ("monitorConnectionPeerAddress", one(&conn.peer)),
            ("monitorConnectionStartTime", one(generalized(conn.started))),
        ];
        let authz = conn.authz_dn();
        if !authz.is_empty() {
            attrs.push(("monitorConnectionAuthzDN", one(authz)));
        }
        t.add(
            &format!("cn=Connection {}", conn.number),
            &connections,
            "monitorConnection",
            attrs,
        );
    }

    // Databases: each with back-mdb's figures.
    let databases = t.container(
        "cn=Databases",
        "This subsystem contains information about configured databases.",
    );
    for (i, db) in state.databases.iter().enumerate() {
        let monitor = db.is_monitor();
        // Data databases come first in the registry, in configuration order (numbers from 1).
        let overlays = state.config.overlay_names(i + 1);
        let mut attrs = vec![
            (
                "monitoredInfo",
                one(match (monitor, db.is_config()) {
                    (true, _) => "monitor",
                    (false, true) => "config",
                    (false, false) => "mdb",
                }),
            ),
            (
                "monitorIsShadow",
                one(if db.is_shadow() { "TRUE" } else { "FALSE" }),
            ),
            ("namingContexts", one(db.suffix_dn())),
            (
                "readOnly",
                one(if db.is_read_only() { "TRUE" } else { "FALSE" }),
            ),
            (
                "seeAlso",
                one(format!(
                    "cn=Backend {},cn=Backends,{SUFFIX}",
                    usize::from(monitor)
                )),
            ),
        ];
        if !monitor {
            if !overlays.is_empty() {
                attrs.push(("monitorOverlay", overlays.clone()));
            }
            let figures = db.figures();
            if let Ok(stats) = &figures {
                let page = (stats.page_size.max(1)) as usize;
                attrs.push(("objectClass", one("olmMDBDatabase")));
                attrs.push(("olmDbDirectory", one(db.directory().display())));
                attrs.push(("olmMDBPagesMax", one(stats.map_size / page)));
                attrs.push(("olmMDBPagesUsed", one(stats.map_used / page)));
                attrs.push(("olmMDBReadersMax", one(stats.max_readers)));
                attrs.push(("olmMDBReadersUsed", one(stats.readers)));
                attrs.push(("olmMDBEntries", one(stats.entries)));
            }
            if let Some(at) = figures.as_ref().ok().and_then(|s| s.last_commit) {
                attrs.push(("monitorTimestamp", one(generalized(at))));
            }
            let indexes = index_lines(db.backend());
            if !indexes.is_empty() {
                attrs.push(("description", indexes));
            }
        }
        t.add(
            &format!("cn=Database {i}"),
            &databases,
            "monitoredObject",
            attrs,
        );
    }

    // Listeners, as configured.
    let listeners = t.container(
        "cn=Listeners",
        "This subsystem contains information about active listeners.",
    );
    for (i, url) in state.config.listen.iter().enumerate() {
        t.add(
            &format!("cn=Listener {i}"),
            &listeners,
            "monitoredObject",
            vec![("labeledURI", one(url))],
        );
    }

    // Operations.
    let total = |f: &dyn Fn(OpType) -> u64| OpType::ALL.iter().map(|&op| f(op)).sum::<u64>();
    t.add(
        "cn=Operations",
        SUFFIX,
        "monitorContainer",
        vec![
            (
                "description",
                one("This subsystem contains information about performed operations."),
            ),
            (
                "monitorOpInitiated",
                one(total(&|op| m.initiated_count(op))),
            ),
            (
                "monitorOpCompleted",
                one(total(&|op| m.completed_count(op))),
            ),
        ],
    );
    let operations = format!("cn=Operations,{SUFFIX}");
    for op in OpType::ALL {
        t.add(
            &format!("cn={}", op.monitor_name()),
            &operations,
            "monitorOperation",
            vec![
                ("monitorOpInitiated", one(m.initiated_count(op))),
                ("monitorOpCompleted", one(m.completed_count(op))),
            ],
        );
    }

    // Overlays: each one in use, once, in the order the databases name them.
    let mut overlays: Vec<String> = Vec::new();
    for number in 1..=state.config.database_count() {
        for name in state.config.overlay_names(number) {
            if !overlays.contains(&name) {
                overlays.push(name);
            }
        }
    }
    t.add("cn=Overlays", SUFFIX, "monitorContainer", {
        let mut attrs = vec![(
            "description",
            one("This subsystem contains information about available overlays."),
        )];
        if !overlays.is_empty() {
            attrs.push(("monitoredInfo", overlays.clone()));
        }
        attrs
    });
    let overlay_parent = format!("cn=Overlays,{SUFFIX}");
    for (i, name) in overlays.iter().enumerate() {
        t.add(
            &format!("cn=Overlay {i}"),
            &overlay_parent,
            "monitoredObject",
            vec![
                ("monitoredInfo", one(name)),
                ("monitorRuntimeConfig", one("FALSE")),
            ],
        );
    }

    // Replication: one entry per syncrepl consumer.
    let replication = t.container(
        "cn=Replication",
        "This subsystem contains information about replication sessions.",
    );
    consumers(&mut t, state, &replication);

    // Statistics.
    let statistics = t.container("cn=Statistics", "This subsystem contains statistics.");
    t.counter("cn=Bytes", &statistics, m.bytes_sent());
    t.counter("cn=PDU", &statistics, m.pdus_sent());
    t.counter("cn=Entries", &statistics, m.entries_sent());
    t.counter("cn=Referrals", &statistics, m.references_sent());

    // Threads: the runtime's workers and the one writer thread per database.
    let threads = t.container(
        "cn=Threads",
        "This subsystem contains information about threads.",
    );
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    t.add(
        "cn=Max",
        &threads,
        "monitoredObject",
        vec![
            ("monitoredInfo", one(workers)),
            (
                "description",
                one("Worker threads of the runtime (one per CPU)"),
            ),
        ],
    );
    t.add(
        "cn=Writers",
        &threads,
        "monitoredObject",
        vec![
            ("monitoredInfo", one(state.databases.iter().count())),
            ("description", one("Writer threads (one per database)")),
        ],
    );

    // Time.
    let time = t.container("cn=Time", "This subsystem contains information about time.");
    let now = SystemTime::now();
    t.add(
        "cn=Start",
        &time,
        "monitoredObject",
        vec![("monitorTimestamp", one(generalized(m.started)))],
    );
    t.add(
        "cn=Current",
        &time,
        "monitoredObject",
        vec![("monitorTimestamp", one(generalized(now)))],
    );
    let uptime = now.duration_since(m.started).map_or(0, |d| d.as_secs());
    t.add(
        "cn=Uptime",
        &time,
        "monitoredObject",
        vec![("monitoredInfo", one(uptime))],
    );
    for entry in &mut t.entries {
        merge_object_classes(Some(entry));
    }
    t.entries
}

/// `cn=Consumer <rid>,cn=Replication,cn=Monitor`: a syncrepl consumer's database, provider, state,
/// cookie, last success, last error and lag (docs/replication.md, Monitoring); `cn=Consumer <rid>
/// database <N>` for a rid an earlier database's consumer has too.
fn consumers(t: &mut Tree, state: &ServerState, parent: &str) {
    for handle in &state.syncrepl {
        let c = &handle.consumer;
        let s = handle.status();
        let now = SystemTime::now();
        let mut description = vec![
            format!("rid: {:03}", c.rid),
            format!("database: {} {}", handle.database, handle.suffix),
            format!("state: {}", s.state),
            format!("cookie: {}", s.cookie),
            format!("connects: {}", s.connects),
            format!(
                "applied: added {} modified {} renamed {} deleted {}",
                s.counts[0], s.counts[1], s.counts[2], s.counts[3]
            ),
            format!("skipped: {}", s.skipped),
            format!(
                "merged: {} (schema fallbacks {})",
                s.merged, s.merge_fallbacks
            ),
            format!("replaced: {} spared: {}", s.replaced, s.spared),
        ];
        if let Some((at, deleted, held)) = s.mass_delete {
            description.push(format!(
                "massDelete: {} a present phase deleted {deleted} of {held} entries",
                generalized(at)
            ));
        }
        if let Some(at) = s.last_success {
            description.push(format!("lastSuccess: {}", generalized(at)));
            let age = now.duration_since(at).map(|d| d.as_secs()).unwrap_or(0);
            description.push(format!("secondsSinceLastSuccess: {age}"));
        }
        if let Some((at, error)) = &s.last_error {
            description.push(format!("lastError: {} {error}", generalized(*at)));
        }
        if let Some(lag) = s.lag {
            description.push(format!("lag: {lag:.3}"));
        }
        let mut attrs = vec![
            ("monitoredInfo", one(&c.provider)),
            ("labeledURI", one(&c.provider)),
            ("description", description),
        ];
        if let Some(at) = s.last_success {
            attrs.push(("monitorTimestamp", one(generalized(at))));
        }
        // Two databases may use the same rid (as slapd allows): the later ones' names say which.
        let shared = state
            .syncrepl
            .iter()
            .any(|h| h.consumer.rid == c.rid && h.database < handle.database);
        let name = match shared {
            false => format!("cn=Consumer {:03}", c.rid),
            true => format!("cn=Consumer {:03} database {}", c.rid, handle.database),
        };
        t.add(&name, parent, "monitoredObject", attrs);
    }
}

/// Folds a second `objectClass` pair (an auxiliary class added later) into the first.
fn merge_object_classes(entry: Option<&mut MonitorEntry>) {
    let Some(entry) = entry else { return };
    let mut classes = Vec::new();
    entry.attrs.retain(|(name, values)| {
        if *name == "objectClass" {
            classes.extend(values.iter().cloned());
            false
        } else {
            true
        }
    });
    entry.attrs.insert(0, ("objectClass", classes));
}

/// The process's open-file limit (slapd's "Max File Descriptors").
fn max_descriptors() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a pointer to a live local.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if ok {
        limit.rlim_cur
    } else {
        0
    }
}
