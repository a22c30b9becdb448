//! The writer thread: group commit of queued write requests, each in its own nested transaction.
//!
//! Protocol: take every request queued (up to `MAX_GROUP`), grow the map if headroom is low, begin
//! one parent transaction, run each request in a nested transaction (committed into the parent if the
//! closure returns `Ok`, aborted otherwise), commit the parent once (one fsync), and only then call
//! the requests' callbacks. If the parent commit fails, every request of the group gets the error.
//! If a request hits MDB_MAP_FULL, its nested transaction is aborted, the requests before it are
//! committed, the ones after it stay queued for the next group, the map is grown, and only then is
//! the failed request told `MapFull` — so a retry finds room.
//!
//! Gathering: clients that wait for their write to be durable send their next request only once the
//! group holding it has committed. Taking only what is queued at that moment splits N closed-loop
//! clients into two cohorts that alternate, each fsync carrying about N/2 requests. So after a group of
//! `g` commits with `q` requests already queued, the writer waits for up to `g + q` requests before it
//! starts the next group, but never longer than a quarter of the last group's duration (bounded by
//! `MAX_GATHER`): a lone client never waits (it is the one request expected), clients that do not
//! come back cost at most that fraction of one commit, and after the writer sat idle for longer than
//! the window nobody is waited for.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::error::StoreError;
use crate::gate::Pass;
use crate::shared::Shared;
use crate::write::WriteTxn;

/// Bounds one group so that the first request's latency stays bounded under a flood.
const MAX_GROUP: usize = 1024;
/// The longest wait for the clients of the last group to send their next request.
const MAX_GATHER: Duration = Duration::from_millis(2);
/// How long proactive growth waits for readers to drain before trying again later.
const SOFT_GROW_WAIT: Duration = Duration::from_millis(50);
/// After a postponed proactive growth, the next attempt waits at least this long.
const SOFT_GROW_BACKOFF: Duration = Duration::from_millis(500);
/// How long growth after a real MDB_MAP_FULL waits for readers.
const HARD_GROW_WAIT: Duration = Duration::from_secs(2);

/// One queued write request, with its types erased.
pub(crate) trait Job: Send {
    /// Runs the closure; returns whether its nested transaction should be committed.
    fn run(&mut self, txn: &mut WriteTxn<'_>) -> bool;
    /// Reports the outcome: `Ok` once the group is committed, otherwise the error that failed it.
    fn complete(self: Box<Self>, outcome: Result<(), StoreError>);
}

pub(crate) struct Request<F, C, T, E> {
    f: Option<F>,
    result: Option<Result<T, E>>,
    done: C,
}

impl<F, C, T, E> Request<F, C, T, E> {
    pub(crate) fn new(f: F, done: C) -> Self {
        Request {
            f: Some(f),
            result: None,
            done,
        }
    }
}

impl<F, C, T, E> Job for Request<F, C, T, E>
where
    F: FnOnce(&mut WriteTxn<'_>) -> Result<T, E> + Send,
    C: FnOnce(Result<Result<T, E>, StoreError>) + Send,
    T: Send,
    E: Send,
{
    fn run(&mut self, txn: &mut WriteTxn<'_>) -> bool {
        let Some(f) = self.f.take() else { return false };
        // A panicking closure must not take the writer thread (and every later write) down with it;
        // its nested transaction is aborted like an `Err`.
        match catch_unwind(AssertUnwindSafe(|| f(txn))) {
            Ok(result) => {
                let commit = result.is_ok();
                self.result = Some(result);
                commit
            }
            Err(_) => false,
        }
    }

    fn complete(self: Box<Self>, outcome: Result<(), StoreError>) {
        let Request { result, done, .. } = *self;
        let reply = match (outcome, result) {
            (Err(err), _) => Err(err),
            (Ok(()), Some(result)) => Ok(result),
            (Ok(()), None) => Err(StoreError::Panicked),
        };
        if catch_unwind(AssertUnwindSafe(|| done(reply))).is_err() {
            tracing::error!("a write completion callback panicked");
        }
    }
}

pub(crate) fn run_writer(shared: &Shared, jobs: &Receiver<Box<dyn Job>>) {
    let mut queue: VecDeque<Box<dyn Job>> = VecDeque::new();
    let mut next_soft_grow = Instant::now();
    let mut gather = Gather::default();
    loop {
        if queue.is_empty() {
            let idle = Instant::now();
            match jobs.recv() {
                Ok(job) => queue.push_back(job),
                // Every handle is gone and the queue is drained.
                Err(_) => return,
            }
            // Idle for longer than the window: the last group's clients are not coming straight back.
            if idle.elapsed() > gather.window {
                gather = Gather::default();
            }
        }
        drain(jobs, &mut queue);
        gather.wait(jobs, &mut queue);
        if Instant::now() >= next_soft_grow && !shared.ensure_headroom(0, SOFT_GROW_WAIT) {
            next_soft_grow = Instant::now() + SOFT_GROW_BACKOFF;
        }
        let started = Instant::now();
        let size = run_group(shared, &mut queue);
        drain(jobs, &mut queue);
        gather.committed(size, queue.len(), started.elapsed());
    }
}

/// Moves every request already sent into the queue, up to `MAX_GROUP`.
fn drain(jobs: &Receiver<Box<dyn Job>>, queue: &mut VecDeque<Box<dyn Job>>) {
    while queue.len() < MAX_GROUP {
        match jobs.try_recv() {
            Ok(job) => queue.push_back(job),
            Err(_) => break,
        }
    }
}

/// How many requests the next group should wait for, and for how long (see the module comment).
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct Gather {
    expected: usize,
    window: Duration,
}

impl Gather {
    /// Records a committed group of `size` requests that took `took`, with `queued` waiting after it.
    pub(crate) fn committed(&mut self, size: usize, queued: usize, took: Duration) {
        self.expected = size.saturating_add(queued).min(MAX_GROUP);
        self.window = (took / 4).min(MAX_GATHER);
    }

    /// Waits until `expected` requests are queued or the window has passed.
    fn wait(&self, jobs: &Receiver<Box<dyn Job>>, queue: &mut VecDeque<Box<dyn Job>>) {
        let deadline = Instant::now() + self.window;
        while queue.len() < self.expected {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            match jobs.recv_timeout(left) {
                Ok(job) => queue.push_back(job),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
    }
}

/// Runs up to `MAX_GROUP` requests from the front of `queue` as one group; requests not run (after a
/// map-full) stay queued. Returns how many requests the group answered.
fn run_group(shared: &Shared, queue: &mut VecDeque<Box<dyn Job>>) -> usize {
    let group_len = queue.len().min(MAX_GROUP);
    let (pass, mut parent) = match begin(shared) {
        Ok(begun) => begun,
        Err(err) => {
            tracing::error!(%err, "cannot begin a write transaction");
            for job in queue.drain(..group_len) {
                job.complete(Err(err.clone()));
            }
            return group_len;
        }
    };
    let mut ran: Vec<(Box<dyn Job>, Option<StoreError>)> = Vec::with_capacity(group_len);
    let mut map_full = false;
    for _ in 0..group_len {
        let Some(mut job) = queue.pop_front() else {
            break;
        };
        let nested = match shared.env.nested_write_txn(&mut parent) {
            Ok(nested) => nested,
            Err(err) => {
                ran.push((job, Some(err.into())));
                break;
            }
        };
        let mut txn = WriteTxn::new(nested, &shared.tables, shared.max_key);
        let commit = job.run(&mut txn);
        let (nested, poison) = txn.into_parts();
        let failure = match poison {
            Some(err) => {
                nested.abort();
                Some(err)
            }
            None if commit => nested.commit().err().map(StoreError::from),
            None => {
                nested.abort();
                None
            }
        };
        let full = matches!(failure, Some(StoreError::MapFull));
        ran.push((job, failure));
        if full {
            map_full = true;
            break;
        }
    }
    let commit_started = Instant::now();
    let committed = parent.commit().map_err(StoreError::from);
    let commit_took = commit_started.elapsed();
    drop(pass);
    // Before any completion runs: idle snapshots from before this commit pin pages and must not be
    // handed out (the pool's own check refuses them too).
    shared.committed();
    if matches!(committed, Err(StoreError::MapFull)) {
        map_full = true;
    }
    if map_full {
        let (map, _) = shared.usage();
        if !shared.grow(map.saturating_mul(2), HARD_GROW_WAIT) {
            tracing::warn!("map full and growth blocked by long read transactions");
        }
    }
    let answered = ran.len();
    match committed {
        Ok(()) => {
            let counters = &shared.counters;
            let size = u64::try_from(ran.len()).unwrap_or(u64::MAX);
            counters.groups.fetch_add(1, Ordering::Relaxed);
            counters.ops.fetch_add(size, Ordering::Relaxed);
            counters.max_group.fetch_max(size, Ordering::Relaxed);
            counters.batch_sizes.observe(size);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
            counters.last_commit.store(now, Ordering::Relaxed);
            counters
                .commit_us
                .observe(u64::try_from(commit_took.as_micros()).unwrap_or(u64::MAX));
            for (job, failure) in ran {
                job.complete(failure.map_or(Ok(()), Err));
            }
        }
        Err(err) => {
            tracing::error!(%err, "group commit failed");
            for (job, _) in ran {
                job.complete(Err(err.clone()));
            }
        }
    }
    answered
}

/// Begins the group's parent transaction, adopting a map grown by another process if needed. The
/// transaction holds a gate pass like a reader, so that a resize from another thread (the bulk loader,
/// a reader adopting a new size) never runs under it.
fn begin(shared: &Shared) -> Result<(Pass, heed::RwTxn<'_>), StoreError> {
    let mut adopted = false;
    loop {
        let pass = shared.gate.pass();
        match shared.env.write_txn() {
            Ok(txn) => return Ok((pass, txn)),
            Err(heed::Error::Mdb(heed::MdbError::MapResized)) if !adopted => {
                drop(pass);
                shared.adopt_map_size()?;
                adopted = true;
            }
            Err(err) => return Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_expects_the_last_group_back_within_a_bounded_window() {
        let check = |size, queued, took_us, expected, window_us| {
            let mut gather = Gather::default();
            gather.committed(size, queued, Duration::from_micros(took_us));
            assert_eq!(
                gather,
                Gather {
                    expected,
                    window: Duration::from_micros(window_us)
                },
                "{size} {queued} {took_us}"
            );
        };
        // A lone client: one request expected, which the blocking receive already waited for.
        check(1, 0, 4000, 1, 1000);
        check(8, 8, 4000, 16, 1000);
        // A slow commit does not make the wait longer than MAX_GATHER.
        check(16, 0, 100_000, 16, 2000);
        // Without fsync, commits are quick and so is the wait.
        check(16, 0, 40, 16, 10);
        check(MAX_GROUP, 10, 1000, MAX_GROUP, 250);
    }

    #[test]
    fn gather_stops_at_the_deadline_or_when_enough_arrived() {
        struct Nop;
        impl Job for Nop {
            fn run(&mut self, _: &mut WriteTxn<'_>) -> bool {
                false
            }
            fn complete(self: Box<Self>, _: Result<(), StoreError>) {}
        }
        let (tx, rx) = std::sync::mpsc::channel::<Box<dyn Job>>();
        let mut queue = VecDeque::new();
        let gather = Gather {
            expected: 3,
            window: Duration::from_millis(20),
        };
        let started = Instant::now();
        gather.wait(&rx, &mut queue);
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert!(queue.is_empty());
        for _ in 0..3 {
            tx.send(Box::new(Nop)).unwrap();
        }
        let long = Gather {
            expected: 3,
            window: Duration::from_secs(10),
        };
        let started = Instant::now();
        long.wait(&rx, &mut queue);
        assert_eq!(queue.len(), 3);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
