//! Helpers shared by the storage integration tests.
#![allow(dead_code)]

use canopy_mdb::{Store, StoreConfig};

/// A small deterministic PRNG (xorshift64*), so failures reproduce from the seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn bytes(&mut self, alphabet: &[u8], min: usize, max: usize) -> Vec<u8> {
        let len = min + self.below((max - min + 1) as u64) as usize;
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize])
            .collect()
    }
}

pub fn config(dir: &std::path::Path, indexes: &[&str]) -> StoreConfig {
    let mut cfg = StoreConfig::new(dir);
    cfg.indexes = indexes.iter().map(|s| s.to_string()).collect();
    cfg.durable = false;
    cfg
}

pub fn open(dir: &std::path::Path, indexes: &[&str]) -> Store {
    Store::open(config(dir, indexes)).unwrap()
}
