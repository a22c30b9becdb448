//! What cn=Monitor and the metrics exporter show about a database's store: its size and reader figures,
//! and the group commits' size and time distributions, read at the moment they are asked for.

use std::time::SystemTime;

use canopy_core::LdapError;

use crate::database::Directory;
use crate::error::store_error;

/// Size and activity figures of one database's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figures {
    /// Entries stored.
    pub entries: u64,
    /// The memory map's size in bytes.
    pub map_size: usize,
    /// Bytes up to and including the last page ever used.
    pub map_used: usize,
    pub page_size: u32,
    /// Reader-table slots in use or used before, across every process.
    pub readers: u32,
    pub max_readers: u32,
    /// Read transactions this process began (the other snapshots handed out were reused ones).
    pub read_txns_begun: u64,
    /// Idle read transactions kept for reuse now (each holds a reader slot).
    pub read_txns_idle: usize,
    /// When this process last committed a write to it.
    pub last_commit: Option<SystemTime>,
}

/// Observations in fixed buckets, read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    pub sum: f64,
    pub count: u64,
    /// (upper bound, observations in that bucket alone), ascending; the last bound is +Inf.
    pub buckets: Vec<(f64, u64)>,
}

impl Distribution {
    fn of(histogram: &canopy_mdb::Histogram, divisor: f64) -> Distribution {
        let (sum, count, buckets) = histogram.snapshot(divisor);
        Distribution {
            sum,
            count,
            buckets,
        }
    }
}

impl Directory {
    /// The store's figures now.
    pub fn figures(&self) -> Result<Figures, LdapError> {
        let store = self.store();
        let stats = store.stats().map_err(store_error)?;
        Ok(Figures {
            entries: stats.entries,
            map_size: stats.map_size,
            map_used: stats.map_used,
            page_size: stats.page_size,
            readers: stats.readers,
            max_readers: stats.max_readers,
            read_txns_begun: stats.read_txns_begun,
            read_txns_idle: stats.read_txns_idle,
            last_commit: store.last_commit(),
        })
    }

    /// Write requests per group commit.
    pub fn group_commit_sizes(&self) -> Distribution {
        Distribution::of(self.store().commit_histograms().0, 1.0)
    }

    /// Seconds each group commit took, its fsync included when durable.
    pub fn group_commit_seconds(&self) -> Distribution {
        Distribution::of(self.store().commit_histograms().1, 1e6)
    }
}
