//! A lock-free histogram of integer observations in fixed buckets, kept by the writer thread (group
//! sizes, commit times) and by the server's counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// A histogram of integer observations in fixed buckets: lock-free, one relaxed addition per bucket hit.
pub struct Histogram {
    /// Upper bounds, ascending, in the observation's unit.
    bounds: &'static [u64],
    /// One count per bound plus the overflow (+Inf) bucket.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl Histogram {
    pub fn new(bounds: &'static [u64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: u64) {
        let slot = self.bounds.partition_point(|&bound| bound < value);
        if let Some(count) = self.counts.get(slot) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// (sum, count, buckets as (upper bound, observations in that bucket alone)), with bounds and sum
    /// divided by `divisor` (1e6 turns microseconds into seconds). The last bound is +Inf.
    pub fn snapshot(&self, divisor: f64) -> (f64, u64, Vec<(f64, u64)>) {
        let mut total = 0u64;
        let mut buckets = Vec::with_capacity(self.counts.len());
        for (slot, count) in self.counts.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            total += count;
            let bound = match self.bounds.get(slot) {
                Some(&b) => b as f64 / divisor,
                None => f64::INFINITY,
            };
            buckets.push((bound, count));
        }
        let sum = self.sum.load(Ordering::Relaxed) as f64 / divisor;
        (sum, total, buckets)
    }
}

/// Group-commit batch sizes (write requests per commit).
pub const BATCH_SIZES: &[u64] = &[1, 2, 4, 8, 16, 32, 64, 128, 256];
/// Commit (fsync) times in microseconds: 100 µs to 5 s.
pub const COMMIT_US: &[u64] = &[
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
    5_000_000,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_count_each_range_with_an_overflow_bucket() {
        let h = Histogram::new(&[1, 10]);
        for v in [0, 1, 5, 10, 11, 100] {
            h.observe(v);
        }
        let (sum, count, buckets) = h.snapshot(1.0);
        assert_eq!(count, 6);
        assert_eq!(sum, 127.0);
        assert_eq!(buckets, vec![(1.0, 2), (10.0, 2), (f64::INFINITY, 2)]);
    }
}
