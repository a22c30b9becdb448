//! A log-linear latency histogram in the spirit of HdrHistogram: fixed relative precision, constant-time
//! record, mergeable across threads and processes, and a sparse serialized form.

use serde::{Deserialize, Serialize};

/// Values below 2^(SUB_BITS+1) get one bucket each; above, every power of two is split into 2^SUB_BITS
/// buckets, so a bucket is at most 1/32 (about 3%) wider than its lower bound.
const SUB_BITS: u32 = 5;
const SUB_COUNT: u64 = 1 << SUB_BITS;
const LINEAR: u64 = SUB_COUNT * 2;
const BUCKETS: usize = (LINEAR + (64 - SUB_BITS as u64 - 1) * SUB_COUNT) as usize;

/// Counts of u64 values (this tool records microseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// Bucket index of `v`.
fn index(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let top = v >> shift; // in SUB_COUNT..2*SUB_COUNT
    (LINEAR + u64::from(shift - 1) * SUB_COUNT + (top - SUB_COUNT)) as usize
}

/// Highest value that falls in bucket `i`.
fn upper_bound(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR {
        return i;
    }
    let shift = (i - LINEAR) / SUB_COUNT + 1;
    let top = (i - LINEAR) % SUB_COUNT + SUB_COUNT;
    ((top + 1) << shift).wrapping_sub(1)
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub fn record(&mut self, v: u64) {
        if let Some(c) = self.counts.get_mut(index(v)) {
            *c += 1;
        }
        self.total += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn min(&self) -> u64 {
        if self.total == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The value at quantile `q` (0..=1): the upper bound of the bucket holding it, never above the maximum
    /// seen. 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper_bound(i).min(self.max).max(self.min());
            }
        }
        self.max
    }

    pub fn to_sparse(&self) -> SparseHistogram {
        SparseHistogram {
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u32, c))
                .collect(),
            sum: self.sum.min(u128::from(u64::MAX)) as u64,
            min: self.min(),
            max: self.max,
        }
    }

    /// Rebuilds a histogram from its sparse form; bucket numbers out of range are ignored.
    pub fn from_sparse(s: &SparseHistogram) -> Histogram {
        let mut h = Histogram::new();
        for &(i, c) in &s.buckets {
            if let Some(slot) = h.counts.get_mut(i as usize) {
                *slot += c;
                h.total += c;
            }
        }
        h.sum = u128::from(s.sum);
        if h.total > 0 {
            h.min = s.min;
            h.max = s.max;
        }
        h
    }
}

/// The serialized form: only non-empty buckets, as (bucket, count) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SparseHistogram {
    pub buckets: Vec<(u32, u64)>,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_bounds_agree() {
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            100,
            1000,
            12_345,
            1 << 40,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let i = index(v);
            assert!(i < BUCKETS, "{v}");
            assert!(upper_bound(i) >= v, "{v}");
            if i > 0 {
                assert!(upper_bound(i - 1) < v, "{v}");
            }
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn relative_error_is_bounded() {
        for v in (64..2_000_000u64).step_by(997) {
            let ub = upper_bound(index(v));
            assert!((ub - v) as f64 <= v as f64 / 32.0 + 1.0, "{v} -> {ub}");
        }
    }

    #[test]
    fn quantiles_of_uniform_values() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let check = |q: f64, want: u64| {
            let got = h.quantile(q) as f64;
            assert!(
                (got - want as f64).abs() <= want as f64 * 0.035,
                "q{q}: {got} vs {want}"
            );
        };
        check(0.5, 5000);
        check(0.9, 9000);
        check(0.99, 9900);
        assert_eq!(h.quantile(1.0), 10_000);
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.count(), 10_000);
        assert!((h.mean() - 5000.5).abs() < 1e-9);
    }

    #[test]
    fn empty_histogram_is_zero() {
        let h = Histogram::new();
        assert_eq!((h.quantile(0.5), h.max(), h.min(), h.count()), (0, 0, 0, 0));
        assert_eq!(h.mean(), 0.0);
    }

    #[test]
    fn merge_equals_recording_everything_once() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in 0..5000u64 {
            let x = v * v % 100_003;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a, all);
    }

    #[test]
    fn sparse_round_trip() {
        let mut h = Histogram::new();
        for v in [3u64, 3, 70, 5000, 123_456_789] {
            h.record(v);
        }
        let s = h.to_sparse();
        assert_eq!(s.buckets.len(), 4);
        let json = serde_json::to_string(&s).unwrap();
        let back: SparseHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(Histogram::from_sparse(&back), h);
        let bad = SparseHistogram {
            buckets: vec![(u32::MAX, 5)],
            ..Default::default()
        };
        assert_eq!(Histogram::from_sparse(&bad).count(), 0);
    }
}
