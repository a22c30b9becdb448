//! The server's counters: one set of atomics, read by `cn=Monitor` (`monitor.rs`) and by the Prometheus
//! exporter (`exporter.rs`). Counting is a few relaxed atomic additions per operation, always on.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use canopy_proto::{ProtocolOp, ResultCode};

/// The operation types of slapd's `cn=Operations,cn=Monitor`, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpType {
    Bind,
    Unbind,
    Search,
    Compare,
    Modify,
    Modrdn,
    Add,
    Delete,
    Abandon,
    Extended,
}

impl OpType {
    pub const ALL: [OpType; 10] = [
        OpType::Bind,
        OpType::Unbind,
        OpType::Search,
        OpType::Compare,
        OpType::Modify,
        OpType::Modrdn,
        OpType::Add,
        OpType::Delete,
        OpType::Abandon,
        OpType::Extended,
    ];

    /// The type of a request; None for responses, which clients never send.
    pub fn of(op: &ProtocolOp) -> Option<OpType> {
        Some(match op {
            ProtocolOp::BindRequest(_) => OpType::Bind,
            ProtocolOp::UnbindRequest => OpType::Unbind,
            ProtocolOp::SearchRequest(_) => OpType::Search,
            ProtocolOp::CompareRequest(_) => OpType::Compare,
            ProtocolOp::ModifyRequest(_) => OpType::Modify,
            ProtocolOp::ModifyDnRequest(_) => OpType::Modrdn,
            ProtocolOp::AddRequest(_) => OpType::Add,
            ProtocolOp::DelRequest(_) => OpType::Delete,
            ProtocolOp::AbandonRequest(_) => OpType::Abandon,
            ProtocolOp::ExtendedRequest(_) => OpType::Extended,
            _ => return None,
        })
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The RDN value of its entry under `cn=Operations,cn=Monitor` (slapd's spelling).
    pub fn monitor_name(self) -> &'static str {
        match self {
            OpType::Bind => "Bind",
            OpType::Unbind => "Unbind",
            OpType::Search => "Search",
            OpType::Compare => "Compare",
            OpType::Modify => "Modify",
            OpType::Modrdn => "Modrdn",
            OpType::Add => "Add",
            OpType::Delete => "Delete",
            OpType::Abandon => "Abandon",
            OpType::Extended => "Extended",
        }
    }

    /// The `op` label of the metrics and the access log's JSON `op` field.
    pub fn label(self) -> &'static str {
        match self {
            OpType::Bind => "bind",
            OpType::Unbind => "unbind",
            OpType::Search => "search",
            OpType::Compare => "compare",
            OpType::Modify => "modify",
            OpType::Modrdn => "modrdn",
            OpType::Add => "add",
            OpType::Delete => "delete",
            OpType::Abandon => "abandon",
            OpType::Extended => "extended",
        }
    }

    /// slapd's access-log keyword (`loglevel stats`).
    pub fn log_word(self) -> &'static str {
        match self {
            OpType::Bind => "BIND",
            OpType::Unbind => "UNBIND",
            OpType::Search => "SRCH",
            OpType::Compare => "CMP",
            OpType::Modify => "MOD",
            OpType::Modrdn => "MODRDN",
            OpType::Add => "ADD",
            OpType::Delete => "DEL",
            OpType::Abandon => "ABANDON",
            OpType::Extended => "EXT",
        }
    }
}

pub use canopy_mdb::Histogram;

/// Latency bounds in microseconds: 50 µs to 10 s.
pub const LATENCY_US: &[u64] = &[
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 10_000_000,
];
/// Group-commit batch sizes (write requests per commit).
pub use canopy_mdb::{BATCH_SIZES, COMMIT_US};

/// Result codes counted one by one; anything at or above this (e.g. 4096) is counted as "other".
const CODES: usize = 128;

/// Every counter of the server.
pub struct Metrics {
    pub started: SystemTime,
    initiated: [AtomicU64; 10],
    completed: [AtomicU64; 10],
    /// Per operation type, per result code.
    results: Box<[[AtomicU64; CODES]]>,
    latency: Box<[Histogram]>,
    pub bytes_sent: AtomicU64,
    pub pdus_sent: AtomicU64,
    pub entries_sent: AtomicU64,
    pub referrals_sent: AtomicU64,
    pub unindexed_searches: AtomicU64,
    pub bind_failures: AtomicU64,
    pub connections_total: AtomicU64,
    pub connections_refused: AtomicU64,
    pub tls_handshakes: AtomicU64,
    pub tls_handshake_failures: AtomicU64,
    /// The open connections, by number.
    pub connections: Mutex<BTreeMap<u64, Arc<ConnInfo>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics {
            started: SystemTime::now(),
            initiated: Default::default(),
            completed: Default::default(),
            results: (0..OpType::ALL.len())
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
            latency: (0..OpType::ALL.len())
                .map(|_| Histogram::new(LATENCY_US))
                .collect(),
            bytes_sent: AtomicU64::new(0),
            pdus_sent: AtomicU64::new(0),
            entries_sent: AtomicU64::new(0),
            referrals_sent: AtomicU64::new(0),
            unindexed_searches: AtomicU64::new(0),
            bind_failures: AtomicU64::new(0),
            connections_total: AtomicU64::new(0),
            connections_refused: AtomicU64::new(0),
            tls_handshakes: AtomicU64::new(0),
            tls_handshake_failures: AtomicU64::new(0),
            connections: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn initiated(&self, op: OpType) {
        self.initiated[op.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// An operation finished: its result code (None: no response, as for unbind and abandon) and how long
    /// it took.
    pub fn completed(&self, op: OpType, code: Option<ResultCode>, took: Duration) {
        let i = op.index();
        self.completed[i].fetch_add(1, Ordering::Relaxed);
        if let Some(code) = code {
            let slot = usize::try_from(code.code()).map_or(CODES - 1, |c| c.min(CODES - 1));
            if let Some(row) = self.results.get(i) {
                row[slot].fetch_add(1, Ordering::Relaxed);
            }
            self.pdus_sent.fetch_add(1, Ordering::Relaxed);
            if op == OpType::Bind
                && !matches!(code, ResultCode::Success | ResultCode::SaslBindInProgress)
            {
                self.bind_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(h) = self.latency.get(i) {
            h.observe(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        }
    }

    /// Entries and continuation references a search sent (each is a PDU).
    pub fn search_sent(&self, entries: u64, references: u64) {
        self.entries_sent.fetch_add(entries, Ordering::Relaxed);
        self.referrals_sent.fetch_add(references, Ordering::Relaxed);
        self.pdus_sent
            .fetch_add(entries + references, Ordering::Relaxed);
    }

    pub fn initiated_count(&self, op: OpType) -> u64 {
        self.initiated[op.index()].load(Ordering::Relaxed)
    }

    pub fn completed_count(&self, op: OpType) -> u64 {
        self.completed[op.index()].load(Ordering::Relaxed)
    }

    /// (result code label, count) of one operation type, only the codes seen.
    pub fn results_of(&self, op: OpType) -> Vec<(String, u64)> {
        let Some(row) = self.results.get(op.index()) else {
            return Vec::new();
        };
        row.iter()
            .enumerate()
            .filter_map(|(code, n)| {
                let n = n.load(Ordering::Relaxed);
                let label = if code == CODES - 1 {
                    "other".to_string()
                } else {
                    code.to_string()
                };
                (n > 0).then_some((label, n))
            })
            .collect()
    }

    pub fn latency_of(&self, op: OpType) -> Option<&Histogram> {
        self.latency.get(op.index())
    }

    /// Registers a new connection and returns its record (numbered from 1000, as slapd does).
    pub fn open_connection(&self, peer: String) -> Arc<ConnInfo> {
        let number = 1000 + self.connections_total.fetch_add(1, Ordering::Relaxed);
        let info = Arc::new(ConnInfo {
            number,
            peer,
            started: SystemTime::now(),
            authz_dn: Mutex::new(String::new()),
            ops_received: AtomicU64::new(0),
            ops_completed: AtomicU64::new(0),
        });
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(number, info.clone());
        info
    }

    pub fn close_connection(&self, number: u64) {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&number);
    }

    pub fn open_connections(&self) -> Vec<Arc<ConnInfo>> {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

/// One open connection as cn=Monitor shows it.
pub struct ConnInfo {
    pub number: u64,
    /// slapd's form: `IP=127.0.0.1:4711` or `PATH=ldapi`.
    pub peer: String,
    pub started: SystemTime,
    pub authz_dn: Mutex<String>,
    pub ops_received: AtomicU64,
    pub ops_completed: AtomicU64,
}

impl ConnInfo {
    pub fn authz_dn(&self) -> String {
        self.authz_dn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_authz_dn(&self, dn: &str) {
        let mut current = self.authz_dn.lock().unwrap_or_else(|e| e.into_inner());
        if *current != dn {
            *current = dn.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_count_by_code_and_failed_binds() {
        let m = Metrics::new();
        m.completed(
            OpType::Bind,
            Some(ResultCode::InvalidCredentials),
            Duration::ZERO,
        );
        m.completed(OpType::Bind, Some(ResultCode::Success), Duration::ZERO);
        m.completed(OpType::Unbind, None, Duration::ZERO);
        assert_eq!(
            m.results_of(OpType::Bind),
            vec![("0".to_string(), 1), ("49".to_string(), 1)]
        );
        assert_eq!(m.bind_failures.load(Ordering::Relaxed), 1);
        assert_eq!(m.completed_count(OpType::Unbind), 1);
        assert_eq!(m.pdus_sent.load(Ordering::Relaxed), 2);
    }
}
