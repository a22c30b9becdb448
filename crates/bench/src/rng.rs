//! A small deterministic random number generator (SplitMix64), so data and key choices depend only on the seed.

/// SplitMix64: tiny, fast, and good enough for picking keys and names; not for anything secret.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// A generator for stream `stream` of `seed`: entry i of the data, or client k of a run, gets its own
    /// independent sequence without generating the ones before it.
    pub fn for_stream(seed: u64, stream: u64) -> Rng {
        let mut base = Rng::new(seed ^ 0x5851_f42d_4c95_7f2d);
        let mixed = base.next_u64() ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = Rng::new(mixed);
        // One step so that neighbouring streams do not start from neighbouring states.
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (0 when n is 0). Multiply-shift keeps the bias below 2^-32 for any n this tool uses.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// One element of `items` (an empty string for an empty slice; callers pass non-empty constants).
    pub fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        let i = self.below(items.len() as u64) as usize;
        items.get(i).copied().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_streams_differ() {
        let a: Vec<u64> = (0..5).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut s1 = Rng::for_stream(42, 1);
        let mut s2 = Rng::for_stream(42, 2);
        assert_ne!(s1.next_u64(), s2.next_u64());
        let mut again = Rng::for_stream(42, 1);
        let mut s1b = Rng::for_stream(42, 1);
        assert_eq!(again.next_u64(), s1b.next_u64());
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let v = rng.below(10) as usize;
            seen[v] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
        assert_eq!(rng.below(0), 0);
        for _ in 0..1000 {
            assert!((5..=9).contains(&rng.range(5, 9)));
        }
    }
}
