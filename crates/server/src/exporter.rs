//! The Prometheus exporter: `metrics_listen` serves `GET /metrics` in the Prometheus text format
//! (version 0.0.4), encoded by the `prometheus-client` crate from the counters of `metrics` and the
//! stores' figures. The HTTP side is a minimal HTTP/1.1 responder: one request per connection.

use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use canopy_directory::{Distribution, Figures};

use crate::metrics::OpType;
use crate::state::State;

/// A gauge of a store: name, help and how to read it from the store's figures.
type Figure = (&'static str, &'static str, fn(&Figures) -> i64);

/// Reads everything at scrape time: nothing is copied on the hot path.
struct StateCollector(State);

impl fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateCollector")
    }
}

fn counter(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), fmt::Error> {
    let metric = ConstCounter::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: i64,
) -> Result<(), fmt::Error> {
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn histogram(
    family: &mut prometheus_client::encoding::MetricEncoder<'_>,
    labels: &[(&str, &str)],
    h: &Distribution,
) -> Result<(), fmt::Error> {
    // The encoder accumulates the buckets itself.
    family
        .encode_family(&labels)?
        .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            h.sum, h.count, &h.buckets, None,
        )
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let state = &self.0;
        let m = &state.metrics;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);

        let mut family = encoder.encode_descriptor(
            "canopy_operations_initiated",
            "Operations received, by type.",
            None,
            MetricType::Counter,
        )?;
        for op in OpType::ALL {
            let labels = [("op", op.label())];
            ConstCounter::new(m.initiated_count(op)).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "canopy_operations",
            "Operations completed, by type and LDAP result code (\"none\": no response, as for unbind and abandon).",
            None,
            MetricType::Counter,
        )?;
        for op in OpType::ALL {
            let results = m.results_of(op);
            let answered: u64 = results.iter().map(|(_, n)| n).sum();
            for (code, n) in &results {
                let labels = [("op", op.label()), ("code", code.as_str())];
                ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
            }
            let silent = m.completed_count(op).saturating_sub(answered);
            if silent > 0 {
                let labels = [("op", op.label()), ("code", "none")];
                ConstCounter::new(silent).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "canopy_operation_duration_seconds",
            "Time from decoding a request to its result, by operation type.",
            None,
            MetricType::Histogram,
        )?;
        for op in OpType::ALL {
            let (sum, count, buckets) = m.latency_of(op);
            family
                .encode_family(&[("op", op.label())])?
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    sum, count, &buckets, None,
                )?;
        }
        counter(
            &mut encoder,
            "canopy_unindexed_searches",
            "Searches whose filter no index could serve (the scope was scanned).",
            load(&m.unindexed_searches),
        )?;
        counter(
            &mut encoder,
            "canopy_sync_searches",
            "Sync searches (RFC 4533 consumers' refreshOnly and refreshAndPersist requests).",
            load(&m.sync_searches),
        )?;
        counter(
            &mut encoder,
            "canopy_sync_dropped",
            "Persistent sync searches ended with e-syncRefreshRequired because their consumer fell behind.",
            load(&m.sync_dropped),
        )?;
        counter(
            &mut encoder,
            "canopy_search_entries_sent",
            "Search result entries sent.",
            m.entries_sent(),
        )?;
        counter(
            &mut encoder,
            "canopy_search_references_sent",
            "Search continuation references sent.",
            m.references_sent(),
        )?;
        counter(
            &mut encoder,
            "canopy_bind_failures",
            "Bind operations that did not succeed.",
            m.bind_failures(),
        )?;
        counter(
            &mut encoder,
            "canopy_sent_bytes",
            "Bytes written to clients.",
            m.bytes_sent(),
        )?;
        counter(
            &mut encoder,
            "canopy_sent_pdus",
            "LDAP messages sent to clients.",
            m.pdus_sent(),
        )?;
        counter(
            &mut encoder,
            "canopy_connections_accepted",
            "Connections accepted since start.",
            load(&m.connections_total),
        )?;
        counter(
            &mut encoder,
            "canopy_connections_refused",
            "Connections refused by max_connections or max_connections_per_ip.",
            load(&m.connections_refused),
        )?;
        let current = i64::try_from(m.open_connections().len()).unwrap_or(i64::MAX);
        gauge(
            &mut encoder,
            "canopy_connections_current",
            "Connections open now.",
            current,
        )?;
        let mut family = encoder.encode_descriptor(
            "canopy_tls_handshakes",
            "TLS handshakes (ldaps and StartTLS), by outcome.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(load(&m.tls_handshakes))
            .encode(family.encode_family(&[("result", "ok")])?)?;
        ConstCounter::new(load(&m.tls_handshake_failures))
            .encode(family.encode_family(&[("result", "failed")])?)?;

        // The LMDB databases (cn=Monitor's own small store is left out): one family per figure, one
        // sample per database.
        let stores: Vec<(String, Figures, &canopy_directory::Directory)> = state
            .databases
            .iter()
            .filter(|db| !db.is_monitor() && !db.is_config())
            .filter_map(|db| {
                let figures = db.figures().ok()?;
                Some((db.suffix_dn().to_string(), figures, db.backend()))
            })
            .collect();
        let figures: [Figure; 5] = [
            (
                "canopy_lmdb_map_size_bytes",
                "The LMDB memory map's size.",
                |s| i64::try_from(s.map_size).unwrap_or(i64::MAX),
            ),
            (
                "canopy_lmdb_pages_used",
                "Pages up to the last one LMDB has used.",
                |s| i64::try_from(s.map_used / (s.page_size.max(1) as usize)).unwrap_or(i64::MAX),
            ),
            (
                "canopy_lmdb_readers",
                "LMDB reader-table slots in use.",
                |s| i64::from(s.readers),
            ),
            ("canopy_entries", "Entries in the database.", |s| {
                i64::try_from(s.entries).unwrap_or(i64::MAX)
            }),
            (
                "canopy_lmdb_read_txns_idle",
                "Idle LMDB read transactions kept for reuse (each holds a reader slot).",
                |s| i64::try_from(s.read_txns_idle).unwrap_or(i64::MAX),
            ),
        ];
        for (name, help, value) in figures {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (suffix, stats, _) in &stores {
                let labels = [("suffix", suffix.as_str())];
                ConstGauge::new(value(stats)).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "canopy_lmdb_read_txns_begun",
            "LMDB read transactions begun; the other snapshots searches used were reused ones.",
            None,
            MetricType::Counter,
        )?;
        for (suffix, stats, _) in &stores {
            ConstCounter::new(stats.read_txns_begun)
                .encode(family.encode_family(&[("suffix", suffix.as_str())])?)?;
        }
        let mut family = encoder.encode_descriptor(
            "canopy_group_commit_size",
            "Write requests per group commit.",
            None,
            MetricType::Histogram,
        )?;
        for (suffix, _, store) in &stores {
            histogram(
                &mut family,
                &[("suffix", suffix.as_str())],
                &store.group_commit_sizes(),
            )?;
        }
        let mut family = encoder.encode_descriptor(
            "canopy_group_commit_seconds",
            "Time each group commit took, its fsync included when durable.",
            None,
            MetricType::Histogram,
        )?;
        for (suffix, _, store) in &stores {
            histogram(
                &mut family,
                &[("suffix", suffix.as_str())],
                &store.group_commit_seconds(),
            )?;
        }
        Ok(())
    }
}

/// The text a scrape returns, from the configuration snapshot current at the scrape: a database added
/// or deleted live through cn=config is in it (or gone) from the next scrape on.
pub fn render(state: &State) -> Result<String, fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(StateCollector(state.current())));
    let mut out = String::with_capacity(16 * 1024);
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    Ok(out)
}

/// Serves `/metrics` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    state: State,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(answer(stream, state.clone()));
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// Reads one request head (bounded in size and time) and answers it.
async fn answer(mut stream: TcpStream, state: State) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(buf.get(..n).unwrap_or(&[])),
            }
        }
        true
    })
    .await;
    if !matches!(read, Ok(true)) {
        return;
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (parts.next().unwrap_or(&[]), parts.next().unwrap_or(&[]));
    let path = target.split(|&b| b == b'?').next().unwrap_or(&[]);
    let (status, content_type, body) = match (method, path) {
        (b"GET", b"/metrics") => match render(&state) {
            Ok(body) => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body),
            Err(_) => (
                "500 Internal Server Error",
                "text/plain",
                "encoding failed\n".into(),
            ),
        },
        (b"GET", _) => ("404 Not Found", "text/plain", "try /metrics\n".into()),
        _ => ("405 Method Not Allowed", "text/plain", "only GET\n".into()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
