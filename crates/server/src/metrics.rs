//! The server's counters: one set of atomics, read by `cn=Monitor` (`monitor_tree.rs`) and by the
//! Prometheus exporter (`exporter.rs`). Counting is a few relaxed atomic additions per operation, always
//! on, into per-thread shards that only a read adds up.

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

/// Latency bounds in microseconds: 50 µs to 10 s.
pub const LATENCY_US: &[u64] = &[
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 10_000_000,
];
/// Result codes counted one by one; anything at or above this (e.g. 4096) is counted as "other".
const CODES: usize = 128;
const OP_TYPES: usize = OpType::ALL.len();
/// Latency buckets: one per bound of `LATENCY_US` and the overflow.
const LATENCY_SLOTS: usize = LATENCY_US.len() + 1;
/// Counter shards: each thread adds to its own (threads beyond this share), so that two cores never
/// fight over one cache line on the hot path; reading sums the shards.
const SHARDS: usize = 16;

/// The counters one thread adds to.
#[repr(align(128))]
struct Shard {
    initiated: [AtomicU64; OP_TYPES],
    /// Completions without a response (unbind, abandon, an abandoned search), per type.
    silent: [AtomicU64; OP_TYPES],
    /// Completions with a response, per type and result code.
    results: [[AtomicU64; CODES]; OP_TYPES],
    latency: [[AtomicU64; LATENCY_SLOTS]; OP_TYPES],
    /// Microseconds, per type.
    latency_sum: [AtomicU64; OP_TYPES],
    entries: AtomicU64,
    references: AtomicU64,
    bytes: AtomicU64,
}

fn zeros<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

impl Shard {
    fn new() -> Shard {
        Shard {
            initiated: zeros(),
            silent: zeros(),
            results: std::array::from_fn(|_| zeros()),
            latency: std::array::from_fn(|_| zeros()),
            latency_sum: zeros(),
            entries: AtomicU64::new(0),
            references: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }
}

static NEXT_SHARD: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static SHARD: usize = usize::try_from(NEXT_SHARD.fetch_add(1, Ordering::Relaxed)).unwrap_or(0) % SHARDS;
}

/// Every counter of the server.
pub struct Metrics {
    pub started: SystemTime,
    shards: Box<[Shard]>,
    pub unindexed_searches: AtomicU64,
    /// Searches with the Sync Request control (RFC 4533), refreshOnly and refreshAndPersist.
    pub sync_searches: AtomicU64,
    /// Persistent sync searches ended because their consumer fell behind.
    pub sync_dropped: AtomicU64,
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

fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics {
            started: SystemTime::now(),
            shards: (0..SHARDS).map(|_| Shard::new()).collect(),
            unindexed_searches: AtomicU64::new(0),
            sync_searches: AtomicU64::new(0),
            sync_dropped: AtomicU64::new(0),
            connections_total: AtomicU64::new(0),
            connections_refused: AtomicU64::new(0),
            tls_handshakes: AtomicU64::new(0),
            tls_handshake_failures: AtomicU64::new(0),
            connections: Mutex::new(BTreeMap::new()),
        }
    }

    /// This thread's shard.
    fn shard(&self) -> &Shard {
        let slot = SHARD.with(|slot| *slot);
        // `shards` has SHARDS elements and `slot` < SHARDS.
        &self.shards[slot % self.shards.len()]
    }

    fn sum(&self, f: impl Fn(&Shard) -> u64) -> u64 {
        self.shards.iter().map(f).sum()
    }

    pub fn initiated(&self, op: OpType) {
        self.shard().initiated[op.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// An operation finished: its result code (None: no response, as for unbind and abandon) and how long
    /// it took.
    pub fn completed(&self, op: OpType, code: Option<ResultCode>, took: Duration) {
        let i = op.index();
        let shard = self.shard();
        match code {
            Some(code) => {
                let slot = usize::try_from(code.code()).map_or(CODES - 1, |c| c.min(CODES - 1));
                shard.results[i][slot].fetch_add(1, Ordering::Relaxed);
            }
            None => {
                shard.silent[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let bucket = LATENCY_US.partition_point(|&bound| bound < micros);
        shard.latency[i][bucket.min(LATENCY_SLOTS - 1)].fetch_add(1, Ordering::Relaxed);
        shard.latency_sum[i].fetch_add(micros, Ordering::Relaxed);
    }

    /// Entries and continuation references a search sent (each is a PDU).
    pub fn search_sent(&self, entries: u64, references: u64) {
        let shard = self.shard();
        if entries > 0 {
            shard.entries.fetch_add(entries, Ordering::Relaxed);
        }
        if references > 0 {
            shard.references.fetch_add(references, Ordering::Relaxed);
        }
    }

    /// Bytes written to a client.
    pub fn sent_bytes(&self, n: usize) {
        self.shard().bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn initiated_count(&self, op: OpType) -> u64 {
        self.sum(|s| load(&s.initiated[op.index()]))
    }

    pub fn completed_count(&self, op: OpType) -> u64 {
        let i = op.index();
        self.sum(|s| load(&s.silent[i]) + s.results[i].iter().map(load).sum::<u64>())
    }

    /// (result code label, count) of one operation type, only the codes seen.
    pub fn results_of(&self, op: OpType) -> Vec<(String, u64)> {
        let i = op.index();
        (0..CODES)
            .filter_map(|code| {
                let n = self.sum(|s| load(&s.results[i][code]));
                let label = if code == CODES - 1 {
                    "other".to_string()
                } else {
                    code.to_string()
                };
                (n > 0).then_some((label, n))
            })
            .collect()
    }

    /// One operation type's latency: (sum in seconds, count, per-bucket counts with upper bounds in
    /// seconds, the last +Inf).
    pub fn latency_of(&self, op: OpType) -> (f64, u64, Vec<(f64, u64)>) {
        let i = op.index();
        let mut total = 0;
        let buckets = (0..LATENCY_SLOTS)
            .map(|slot| {
                let n = self.sum(|s| load(&s.latency[i][slot]));
                total += n;
                let bound = LATENCY_US
                    .get(slot)
                    .map_or(f64::INFINITY, |&b| b as f64 / 1e6);
                (bound, n)
            })
            .collect();
        let sum = self.sum(|s| load(&s.latency_sum[i])) as f64 / 1e6;
        (sum, total, buckets)
    }

    pub fn entries_sent(&self) -> u64 {
        self.sum(|s| load(&s.entries))
    }

    pub fn references_sent(&self) -> u64 {
        self.sum(|s| load(&s.references))
    }

    pub fn bytes_sent(&self) -> u64 {
        self.sum(|s| load(&s.bytes))
    }

    /// LDAP messages sent: every result, entry and reference.
    pub fn pdus_sent(&self) -> u64 {
        let results: u64 = OpType::ALL
            .iter()
            .map(|&op| self.results_of(op).iter().map(|(_, n)| n).sum::<u64>())
            .sum();
        results + self.entries_sent() + self.references_sent()
    }

    /// Binds answered with anything but success or saslBindInProgress.
    pub fn bind_failures(&self) -> u64 {
        let i = OpType::Bind.index();
        self.sum(|s| {
            s.results[i]
                .iter()
                .enumerate()
                .filter(|(code, _)| {
                    *code != ResultCode::Success.code() as usize
                        && *code != ResultCode::SaslBindInProgress.code() as usize
                })
                .map(|(_, n)| load(n))
                .sum()
        })
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
        assert_eq!(m.bind_failures(), 1);
        assert_eq!(m.completed_count(OpType::Unbind), 1);
        assert_eq!(m.completed_count(OpType::Bind), 2);
        assert_eq!(m.pdus_sent(), 2);
        let (_, count, buckets) = m.latency_of(OpType::Bind);
        assert_eq!(count, 2);
        assert_eq!(buckets.first(), Some(&(50e-6, 2)));
        assert_eq!(buckets.last().map(|b| b.0), Some(f64::INFINITY));
    }

    #[test]
    fn threads_add_to_their_own_shards_and_reads_sum_them() {
        let m = Arc::new(Metrics::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = Arc::clone(&m);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        m.initiated(OpType::Search);
                        m.search_sent(2, 0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(m.initiated_count(OpType::Search), 4000);
        assert_eq!(m.entries_sent(), 8000);
    }
}
