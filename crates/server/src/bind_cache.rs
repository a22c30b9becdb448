//! Recently verified bind passwords, kept in memory only and only as keyed digests, so that a client
//! binding again with the same password (a web application, SSSD, a mail server checking each login)
//! skips the slow hash: `[passwords] bind_cache_secs`, off by default (docs/authentication.md).
//!
//! What is kept per bind DN is SHA-256 over a random key made at start-up, the DN, the stored hash value
//! the password verified against, and the password. A later bind hits only with the same password
//! against the same stored value: a changed or deleted password, a new salt, a restart, or the entry's
//! time running out all make it miss and pay the full check. Only successes are remembered, so a wrong
//! password always costs the full hash, and an unknown DN the dummy one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;
use sha2::{Digest, Sha256};

#[derive(Debug)]
pub struct BindCache {
    key: [u8; 32],
    ttl: Duration,
    max: usize,
    seen: Mutex<HashMap<String, Seen>>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    digest: [u8; 32],
    at: Instant,
}

impl BindCache {
    /// None when `ttl_secs` is 0 (the cache is off).
    pub fn new(ttl_secs: u64, max: usize) -> Option<BindCache> {
        if ttl_secs == 0 || max == 0 {
            return None;
        }
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Some(BindCache {
            key,
            ttl: Duration::from_secs(ttl_secs),
            max,
            seen: Mutex::new(HashMap::new()),
        })
    }

    fn digest(&self, ndn: &str, stored: &[u8], password: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.key);
        for part in [ndn.as_bytes(), stored, password] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        h.finalize().into()
    }

    /// The index of the stored value `password` verified against when `ndn` last bound, if that was
    /// within the time to live and that value is still among `values`.
    pub fn hit(&self, ndn: &str, values: &[Vec<u8>], password: &[u8]) -> Option<usize> {
        let seen = {
            let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            *seen.get(ndn)?
        };
        if seen.at.elapsed() > self.ttl {
            return None;
        }
        values
            .iter()
            .position(|value| same(&self.digest(ndn, value, password), &seen.digest))
    }

    /// Remembers that `password` verified against the stored value `stored` of `ndn`.
    pub fn remember(&self, ndn: &str, stored: &[u8], password: &[u8]) {
        let digest = self.digest(ndn, stored, password);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= self.max && !seen.contains_key(ndn) {
            let ttl = self.ttl;
            seen.retain(|_, s| s.at.elapsed() <= ttl);
            if seen.len() >= self.max {
                // Still full: the oldest tenth goes.
                let mut ages: Vec<Instant> = seen.values().map(|s| s.at).collect();
                ages.sort_unstable();
                let cut = ages[(ages.len() / 10).min(ages.len() - 1)];
                seen.retain(|_, s| s.at > cut);
            }
        }
        seen.insert(
            ndn.to_string(),
            Seen {
                digest,
                at: Instant::now(),
            },
        );
    }
}

/// Constant-time equality of two digests.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Vec<Vec<u8>> {
        vec![b"{ARGON2}one".to_vec(), b"{ARGON2}two".to_vec()]
    }

    #[test]
    fn off_when_no_time_to_live() {
        assert!(BindCache::new(0, 100).is_none());
        assert!(BindCache::new(60, 0).is_none());
    }

    #[test]
    fn hits_only_the_same_password_against_the_same_value() {
        let cache = BindCache::new(60, 100).unwrap();
        let dn = "uid=a,dc=example,dc=com";
        assert_eq!(cache.hit(dn, &values(), b"secret"), None);
        cache.remember(dn, b"{ARGON2}two", b"secret");
        assert_eq!(cache.hit(dn, &values(), b"secret"), Some(1));
        assert_eq!(cache.hit(dn, &values(), b"Secret"), None);
        assert_eq!(
            cache.hit("uid=b,dc=example,dc=com", &values(), b"secret"),
            None
        );
        // The password was changed: its stored value is gone.
        assert_eq!(cache.hit(dn, &[b"{ARGON2}three".to_vec()], b"secret"), None);
    }

    #[test]
    fn entries_run_out() {
        let mut cache = BindCache::new(60, 100).unwrap();
        cache.ttl = Duration::from_millis(0);
        cache.remember("uid=a", b"{ARGON2}one", b"pw");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(cache.hit("uid=a", &values(), b"pw"), None);
    }

    #[test]
    fn the_table_stays_bounded() {
        let cache = BindCache::new(60, 50).unwrap();
        for n in 0..500 {
            cache.remember(&format!("uid={n}"), b"{ARGON2}one", b"pw");
        }
        let len = cache.seen.lock().unwrap().len();
        assert!(len <= 50, "{len} entries");
        assert_eq!(cache.hit("uid=499", &values(), b"pw"), Some(0));
    }

    #[test]
    fn two_caches_do_not_share_digests() {
        let a = BindCache::new(60, 10).unwrap();
        let b = BindCache::new(60, 10).unwrap();
        assert_ne!(a.digest("x", b"v", b"p"), b.digest("x", b"v", b"p"));
    }
}
