//! The gate every slow password check and hash passes (Argon2id, PBKDF2, crypt): a bound on how many
//! run at once in the whole server, since each holds its memory cost (19 MiB for the default Argon2id)
//! and a core, and a fair turn for each client address, so that a flood of binds from a few addresses
//! queues behind itself instead of in front of everyone else.
//!
//! While checks are waiting, each freed slot goes to the next address in turn (round robin over the
//! addresses with waiting checks, first come first served within one address): a bind from a quiet
//! address waits for at most one check of each busy address before its own runs. A lone client still
//! gets every slot. Memory held by hashing is bounded by `parallel` times the hash's memory cost,
//! whatever the load.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::session::{Link, Peer};

/// Who is asking, for the turns: a TCP client's address, or every local (ldapi) client together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Address(IpAddr),
    Local,
}

impl Source {
    /// The source of a request on `link`; None for work not made for a connection (offline tools,
    /// internal writes), which takes its turns as one more source.
    pub fn of(link: &Link) -> Option<Source> {
        match link.peer.as_ref()? {
            Peer::Tcp(addr) => Some(Source::Address(canonical(addr.ip()))),
            Peer::Unix { .. } => Some(Source::Local),
        }
    }
}

/// An IPv4 client reaching an IPv6 listener is still the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// The bound and the queues.
#[derive(Debug)]
pub struct HashGate {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    parallel: usize,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    running: usize,
    /// Each source's waiting checks, oldest first; a source is here only while it has some.
    waiting: HashMap<Option<Source>, VecDeque<oneshot::Sender<Slot>>>,
    /// The sources with waiting checks, in turn order.
    turns: VecDeque<Option<Source>>,
}

/// One of the `parallel` slots; dropping it hands the slot to the next waiting check, or frees it.
#[derive(Debug)]
struct Slot {
    inner: Option<Arc<Inner>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.release();
        }
    }
}

impl Inner {
    fn release(self: &Arc<Self>) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(source) = queue.turns.pop_front() {
            let Some(mine) = queue.waiting.get_mut(&source) else {
                continue;
            };
            let next = mine.pop_front();
            if mine.is_empty() {
                queue.waiting.remove(&source);
            } else {
                queue.turns.push_back(source);
            }
            let Some(next) = next else {
                continue;
            };
            let slot = Slot {
                inner: Some(Arc::clone(self)),
            };
            match next.send(slot) {
                Ok(()) => return,
                // That check gave up waiting (its connection closed): the slot is not dropped (which
                // would release it again under this lock) but offered to the next one.
                Err(mut slot) => slot.inner = None,
            }
        }
        queue.running -= 1;
    }
}

impl HashGate {
    /// `parallel` checks at once (0: one per core).
    pub fn new(parallel: usize) -> HashGate {
        let parallel = match parallel {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        HashGate {
            inner: Arc::new(Inner {
                parallel,
                queue: Mutex::default(),
            }),
        }
    }

    async fn enter(&self, source: Option<Source>) -> Slot {
        let waiting = {
            let mut queue = self.inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.running < self.inner.parallel && queue.turns.is_empty() {
                queue.running += 1;
                None
            } else {
                let (tx, rx) = oneshot::channel();
                let mine = queue.waiting.entry(source).or_default();
                mine.push_back(tx);
                if mine.len() == 1 {
                    queue.turns.push_back(source);
                }
                Some(rx)
            }
        };
        match waiting {
            None => Slot {
                inner: Some(Arc::clone(&self.inner)),
            },
            // The sender is dropped only by a release that sent through it.
            Some(rx) => rx.await.expect("a waiting check is handed a slot"),
        }
    }

    /// Runs `work` (a slow check or hash) on a blocking thread when its turn comes. The slot is held
    /// until the work ends, even if the caller stops waiting for it. None if the work panicked.
    pub async fn run<T, F>(&self, source: Option<Source>, work: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = self.enter(source).await;
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work()
        })
        .await
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn addr(last: u8) -> Option<Source> {
        Some(Source::Address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))))
    }

    /// How many checks ran at once at most.
    #[derive(Default, Clone)]
    struct Watch {
        now: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
    }

    /// Runs `jobs` checks of `sleep_ms` each from `source`, all queued at once.
    async fn busy(
        gate: Arc<HashGate>,
        source: Option<Source>,
        jobs: usize,
        sleep_ms: u64,
        w: Watch,
    ) {
        let mut all = Vec::new();
        for _ in 0..jobs {
            let (gate, w) = (gate.clone(), w.clone());
            all.push(tokio::spawn(async move {
                gate.run(source, move || {
                    let at = w.now.fetch_add(1, Ordering::SeqCst) + 1;
                    w.peak.fetch_max(at, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(sleep_ms));
                    w.now.fetch_sub(1, Ordering::SeqCst);
                })
                .await
            }));
        }
        for job in all {
            job.await.unwrap().unwrap();
        }
    }

    fn idle(gate: &HashGate) -> bool {
        let queue = gate.inner.queue.lock().unwrap();
        queue.running == 0 && queue.waiting.is_empty() && queue.turns.is_empty()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_than_the_bound_run_at_once() {
        let gate = Arc::new(HashGate::new(3));
        let w = Watch::default();
        let mut floods = Vec::new();
        for last in 2..6 {
            floods.push(tokio::spawn(busy(
                gate.clone(),
                addr(last),
                8,
                5,
                w.clone(),
            )));
        }
        for flood in floods {
            flood.await.unwrap();
        }
        assert_eq!(w.peak.load(Ordering::SeqCst), 3);
        assert!(idle(&gate), "every slot is given back");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lone_client_gets_every_slot() {
        let gate = Arc::new(HashGate::new(4));
        let w = Watch::default();
        busy(gate.clone(), addr(2), 12, 30, w.clone()).await;
        assert_eq!(w.peak.load(Ordering::SeqCst), 4);
    }

    /// A flood of slow checks from one address: a check from another address runs after at most the
    /// flood's running check and one more, not after its whole queue.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_quiet_address_does_not_wait_behind_a_flood() {
        let gate = Arc::new(HashGate::new(1));
        let flood = tokio::spawn(busy(gate.clone(), addr(2), 40, 20, Watch::default()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        gate.run(addr(1), || ()).await.unwrap();
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_millis(200),
            "waited {waited:?} behind a flood of 40 checks of 20 ms"
        );
        flood.await.unwrap();
        assert!(idle(&gate));
    }

    /// A check whose client gave up while it waited does not take a slot with it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiter_that_gives_up_loses_no_slot() {
        let gate = Arc::new(HashGate::new(1));
        let holder = {
            let gate = gate.clone();
            tokio::spawn(async move {
                gate.run(addr(2), || std::thread::sleep(Duration::from_millis(100)))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let quitter = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.run(addr(3), || ()).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        quitter.abort();
        holder.await.unwrap().unwrap();
        let later = tokio::time::timeout(Duration::from_secs(5), gate.run(addr(4), || 7)).await;
        assert_eq!(later.unwrap(), Some(7));
        assert!(idle(&gate));
    }

    #[test]
    fn defaults_follow_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(HashGate::new(0).inner.parallel, cores);
        assert_eq!(HashGate::new(5).inner.parallel, 5);
    }

    #[test]
    fn a_mapped_ipv4_address_is_the_ipv4_address() {
        let v6: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
        assert_eq!(canonical(v6), "10.0.0.7".parse::<IpAddr>().unwrap());
    }
}
