//! The gate between read transactions and map resizing.
//!
//! LMDB remaps the file when the map size changes, which would pull the map out from under any open
//! transaction of this process, so `mdb_env_set_mapsize` may only run while none is open. Every read
//! transaction (and every bulk-load write transaction) holds a shared pass for its whole life; a resize
//! takes the gate exclusively. A pending resize stops new passes from being handed out so that readers
//! drain, but it only waits a bounded time: a thread that holds one read transaction while waiting for a
//! write (or for a second read transaction) must not deadlock, so the resize gives up instead and is
//! retried later.
//!
//! Idle read transactions kept for reuse (`pool.rs`) hold their passes too; a resize goes through
//! `Shared::exclusive`, which empties and closes that pool first, so it waits only for transactions in use.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    readers: usize,
    resizing: bool,
}

#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

/// Proof that no map resize can happen while it lives.
pub(crate) struct Pass {
    gate: Arc<Gate>,
}

/// Proof that no transaction of this process is open while it lives.
pub(crate) struct Exclusive<'a> {
    gate: &'a Gate,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is two plain counters that every critical section leaves consistent, so a panic
        // elsewhere cannot have corrupted it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits while a resize is pending (bounded by the resize's own timeout), then enters.
    pub(crate) fn pass(self: &Arc<Self>) -> Pass {
        let mut state = self.lock();
        while state.resizing {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.readers += 1;
        Pass {
            gate: Arc::clone(self),
        }
    }

    /// Waits up to `timeout` for every pass to be returned; `None` if they were not.
    pub(crate) fn exclusive(&self, timeout: Duration) -> Option<Exclusive<'_>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while state.resizing {
            // Another thread is resizing (e.g. a reader adopting a size grown by another process).
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.resizing = true;
        while state.readers > 0 {
            let now = Instant::now();
            if now >= deadline {
                state.resizing = false;
                drop(state);
                self.changed.notify_all();
                return None;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Some(Exclusive { gate: self })
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        state.readers = state.readers.saturating_sub(1);
        let wake = state.readers == 0 && state.resizing;
        drop(state);
        if wake {
            self.gate.changed.notify_all();
        }
    }
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        self.gate.lock().resizing = false;
        self.gate.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn exclusive_waits_for_passes() {
        let gate = Arc::new(Gate::default());
        let pass = gate.pass();
        assert!(gate.exclusive(Duration::from_millis(20)).is_none());
        // A timed-out resize lets readers in again.
        let second = gate.pass();
        drop((pass, second));
        assert!(gate.exclusive(Duration::from_millis(20)).is_some());
    }

    #[test]
    fn pending_resize_blocks_new_passes_until_done() {
        let gate = Arc::new(Gate::default());
        let pass = gate.pass();
        let g = Arc::clone(&gate);
        let resizer = thread::spawn(move || g.exclusive(Duration::from_secs(5)).is_some());
        thread::sleep(Duration::from_millis(50));
        let g = Arc::clone(&gate);
        let late_reader = thread::spawn(move || {
            let _pass = g.pass();
        });
        drop(pass);
        assert!(resizer.join().unwrap());
        late_reader.join().unwrap();
        assert_eq!(gate.lock().readers, 0);
        assert!(!gate.lock().resizing);
    }
}
