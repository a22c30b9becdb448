//! Failed-bind counters per bind DN and per client address, and the delay they impose on further
//! failures. Tables are capped; an entry older than the window no longer counts.

use serde::Deserialize;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `[bind_backoff]`: after `threshold` failures within `window_secs` for one DN or one client address,
/// each further failed bind is answered after a delay doubling from `initial_ms` up to `max_ms`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BindBackoff {
    pub threshold: u32,
    pub window_secs: u64,
    pub initial_ms: u64,
    pub max_ms: u64,
    /// Most DNs and most addresses tracked (each table); the oldest entries are dropped beyond it.
    pub max_tracked: usize,
}

impl Default for BindBackoff {
    fn default() -> Self {
        BindBackoff {
            threshold: 5,
            window_secs: 300,
            initial_ms: 250,
            max_ms: 8000,
            max_tracked: 10_000,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Counter {
    failures: u32,
    first: Instant,
    last: Instant,
}

/// The two failure tables.
#[derive(Debug)]
pub struct Backoff {
    config: BindBackoff,
    by_dn: Mutex<HashMap<String, Counter>>,
    by_ip: Mutex<HashMap<IpAddr, Counter>>,
}

impl Backoff {
    pub fn new(config: BindBackoff) -> Backoff {
        Backoff {
            config,
            by_dn: Mutex::new(HashMap::new()),
            by_ip: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failed bind and returns how long to hold its answer back.
    pub fn failed(&self, ndn: Option<&str>, ip: Option<IpAddr>) -> Duration {
        let now = Instant::now();
        let dn_count = ndn.map_or(0, |dn| self.record(&self.by_dn, dn.to_string(), now));
        let ip_count = ip.map_or(0, |ip| self.record(&self.by_ip, ip, now));
        self.delay(dn_count.max(ip_count))
    }

    /// A successful bind clears the DN's counter (the address keeps its own, so guessing many
    /// accounts from one address is still slowed down).
    pub fn succeeded(&self, ndn: &str) {
        let mut table = lock(&self.by_dn);
        // Most binds succeed with no failure on record: skip hashing the DN then.
        if !table.is_empty() {
            table.remove(ndn);
        }
    }

    fn delay(&self, failures: u32) -> Duration {
        let threshold = self.config.threshold;
        if threshold == 0 || failures <= threshold {
            return Duration::ZERO;
        }
        let doublings = (failures - threshold - 1).min(32);
        let ms = self
            .config
            .initial_ms
            .saturating_mul(1u64 << doublings)
            .min(self.config.max_ms);
        Duration::from_millis(ms)
    }

    fn record<K: Eq + Hash>(
        &self,
        table: &Mutex<HashMap<K, Counter>>,
        key: K,
        now: Instant,
    ) -> u32 {
        let window = Duration::from_secs(self.config.window_secs);
        let mut table = lock(table);
        if !table.contains_key(&key) && table.len() >= self.config.max_tracked.max(1) {
            table.retain(|_, c| now.duration_since(c.first) < window);
            if table.len() >= self.config.max_tracked.max(1) {
                evict_oldest(&mut table);
            }
        }
        let counter = table.entry(key).or_insert(Counter {
            failures: 0,
            first: now,
            last: now,
        });
        if now.duration_since(counter.first) >= window {
            *counter = Counter {
                failures: 0,
                first: now,
                last: now,
            };
        }
        counter.failures = counter.failures.saturating_add(1);
        counter.last = now;
        counter.failures
    }
}

fn evict_oldest<K: Eq + Hash>(table: &mut HashMap<K, Counter>) {
    // A tenth of the table at a time, so a full table is not scanned on every failure.
    let mut ages: Vec<Instant> = table.values().map(|c| c.last).collect();
    ages.sort_unstable();
    let cut = ages
        .get(ages.len() / 10)
        .copied()
        .unwrap_or_else(Instant::now);
    table.retain(|_, c| c.last > cut);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff(max_tracked: usize) -> Backoff {
        Backoff::new(BindBackoff {
            threshold: 2,
            window_secs: 60,
            initial_ms: 100,
            max_ms: 350,
            max_tracked,
        })
    }

    #[test]
    fn delays_double_after_the_threshold_up_to_the_cap() {
        let b = backoff(10);
        let ms: Vec<u128> = (0..6)
            .map(|_| b.failed(Some("uid=a"), None).as_millis())
            .collect();
        assert_eq!(ms, [0, 0, 100, 200, 350, 350]);
        b.succeeded("uid=a");
        assert_eq!(b.failed(Some("uid=a"), None), Duration::ZERO);
    }

    #[test]
    fn address_counts_across_names() {
        let b = backoff(10);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        for name in ["uid=a", "uid=b"] {
            assert_eq!(b.failed(Some(name), Some(ip)), Duration::ZERO);
        }
        assert_eq!(b.failed(Some("uid=c"), Some(ip)).as_millis(), 100);
    }

    #[test]
    fn tables_stay_bounded() {
        let b = backoff(50);
        for i in 0..1000 {
            b.failed(Some(&format!("uid={i}")), None);
        }
        assert!(lock(&b.by_dn).len() <= 50);
    }
}
