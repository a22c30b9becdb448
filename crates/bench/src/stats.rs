//! What clients measure in one phase (step) of a run, mergeable across threads and worker processes, and
//! its serialized form for the worker-to-master pipe.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{Histogram, SparseHistogram};

/// Measurements of one phase. Times are microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseStats {
    pub connect: Histogram,
    pub processing: Histogram,
    pub response: Histogram,
    /// Completed requests per second of the measured window.
    pub per_second: Vec<u64>,
    /// Failed requests by result code or transport failure.
    pub errors: BTreeMap<String, u64>,
    /// Requests that got a response (any result code).
    pub completed: u64,
    /// Search entries and response bytes received.
    pub entries: u64,
    pub bytes: u64,
    /// Open-loop sends that were due in the window but never went out because the client was behind.
    pub missed: u64,
    /// Clients of the delete workload that ran out of entries to delete.
    pub exhausted: u64,
    /// Client CPU seconds (user + system) spent during the measured window.
    pub cpu_seconds: f64,
}

impl PhaseStats {
    pub fn new(seconds: usize) -> PhaseStats {
        PhaseStats {
            connect: Histogram::new(),
            processing: Histogram::new(),
            response: Histogram::new(),
            per_second: vec![0; seconds.max(1)],
            errors: BTreeMap::new(),
            completed: 0,
            entries: 0,
            bytes: 0,
            missed: 0,
            exhausted: 0,
            cpu_seconds: 0.0,
        }
    }

    pub fn error(&mut self, key: String) {
        *self.errors.entry(key).or_insert(0) += 1;
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn merge(&mut self, other: &PhaseStats) {
        self.connect.merge(&other.connect);
        self.processing.merge(&other.processing);
        self.response.merge(&other.response);
        if self.per_second.len() < other.per_second.len() {
            self.per_second.resize(other.per_second.len(), 0);
        }
        for (a, b) in self.per_second.iter_mut().zip(&other.per_second) {
            *a += b;
        }
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += v;
        }
        self.completed += other.completed;
        self.entries += other.entries;
        self.bytes += other.bytes;
        self.missed += other.missed;
        self.exhausted += other.exhausted;
        self.cpu_seconds += other.cpu_seconds;
    }

    pub fn to_wire(&self) -> WireStats {
        WireStats {
            connect: self.connect.to_sparse(),
            processing: self.processing.to_sparse(),
            response: self.response.to_sparse(),
            per_second: self.per_second.clone(),
            errors: self.errors.clone(),
            completed: self.completed,
            entries: self.entries,
            bytes: self.bytes,
            missed: self.missed,
            exhausted: self.exhausted,
            cpu_seconds: self.cpu_seconds,
        }
    }

    pub fn from_wire(w: &WireStats) -> PhaseStats {
        PhaseStats {
            connect: Histogram::from_sparse(&w.connect),
            processing: Histogram::from_sparse(&w.processing),
            response: Histogram::from_sparse(&w.response),
            per_second: w.per_second.clone(),
            errors: w.errors.clone(),
            completed: w.completed,
            entries: w.entries,
            bytes: w.bytes,
            missed: w.missed,
            exhausted: w.exhausted,
            cpu_seconds: w.cpu_seconds,
        }
    }
}

/// `PhaseStats` with sparse histograms, as a worker process prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireStats {
    pub connect: SparseHistogram,
    pub processing: SparseHistogram,
    pub response: SparseHistogram,
    pub per_second: Vec<u64>,
    pub errors: BTreeMap<String, u64>,
    pub completed: u64,
    pub entries: u64,
    pub bytes: u64,
    pub missed: u64,
    pub exhausted: u64,
    pub cpu_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_and_wire_round_trip() {
        let mut a = PhaseStats::new(2);
        a.response.record(100);
        a.per_second[1] = 5;
        a.completed = 5;
        a.error("32 NoSuchObject".into());
        let mut b = PhaseStats::new(3);
        b.response.record(300);
        b.per_second[2] = 7;
        b.completed = 7;
        b.error("32 NoSuchObject".into());
        b.cpu_seconds = 0.25;
        a.merge(&b);
        assert_eq!(a.per_second, vec![0, 5, 7]);
        assert_eq!(a.completed, 12);
        assert_eq!(a.error_count(), 2);
        assert_eq!(a.response.count(), 2);
        let json = serde_json::to_string(&a.to_wire()).unwrap();
        let back: WireStats = serde_json::from_str(&json).unwrap();
        assert_eq!(PhaseStats::from_wire(&back), a);
    }
}
