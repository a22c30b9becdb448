//! The change feed of one database: the changes persistent sync searches follow, each published
//! once its write is durable, with bounded queues and a bounded weight of carried entries.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::sync::{Csn, CsnSet};

use crate::event::{Kind, Origin};

/// Changes a persistent search may have waiting before it is dropped (and its consumer comes back with
/// its cookie).
pub const FEED_QUEUE: usize = 1024;

/// The bytes of committed entries all the changes waiting in a database's feed may carry together
/// ([`Carried`]); a change over it is published without its entry.
pub const FEED_BYTES: usize = 16 << 20;

/// One change as the feed publishes it, once the write is durable.
#[derive(Debug)]
pub struct Change {
    pub kind: Kind,
    /// The entry's ID (still valid after a rename; gone after a delete).
    pub id: u64,
    /// Where the change comes from: a persistent search advances its cookie with local changes only.
    pub origin: Origin,
    /// The CSN of the change: the write's own for a local one, the entry's for a replicated one (None
    /// for a replicated delete, which carries none).
    pub csn: Option<Csn>,
    /// The entry's entryUUID (16 raw bytes).
    pub uuid: Option<[u8; 16]>,
    /// The entry's DN before the write (None for an add).
    pub old_dn: Option<Arc<str>>,
    /// The entry's DN after the write (None for a delete); a modify's shares `old_dn`'s text.
    pub new_dn: Option<Arc<str>>,
    /// The entry as this write stored it, taken inside the write's transaction while the feed has
    /// subscribers (None for a delete, with no subscriber at the time, or over [`FEED_BYTES`]): what
    /// a persistent search sends for this change, as slapd's syncprov sends its copy of the entry.
    pub entry: Option<Carried>,
    /// Not a change of an entry but the contextCSN a replicated batch raised (what its cookie said),
    /// published after the batch's changes: a persistent search passes it on as a new cookie, so a
    /// consumer of a consumer (cascading) advances with it.
    pub context: Option<CsnSet>,
}

/// The stored bytes of an entry a [`Change`] carries, counted against its feed's [`FEED_BYTES`]
/// until the last subscriber is done with the change.
pub struct Carried {
    bytes: Box<[u8]>,
    held: Arc<AtomicUsize>,
}

impl Carried {
    /// The entry in its stored form (docs/design/entry-format.md).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Carried {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes.len(), Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Carried({} bytes)", self.bytes.len())
    }
}

/// The subscribers of one database's changes.
///
/// Memory: every live subscriber receives every change, in publish order, so each queue holds the
/// newest changes its search has not taken yet, at most [`FEED_QUEUE`] of them, and the changes are
/// shared (`Arc`) between queues: at most `FEED_QUEUE` changes wait in all the queues together
/// (plus the one each search is sending), and the entries they carry weigh at most [`FEED_BYTES`]
/// together.
#[derive(Default)]
pub struct Feed {
    subs: Mutex<Vec<Sub>>,
    count: AtomicUsize,
    next: AtomicU64,
    /// The bytes of the entries carried by changes not yet dropped by every subscriber.
    carried: Arc<AtomicUsize>,
}

struct Sub {
    id: u64,
    tx: SyncSender<Arc<Change>>,
    dropped: Arc<AtomicBool>,
}

/// A persistent search's place in the feed: changes in commit order, at most [`FEED_QUEUE`] waiting.
pub struct Subscription {
    feed: Arc<Feed>,
    id: u64,
    rx: Receiver<Arc<Change>>,
    dropped: Arc<AtomicBool>,
}

/// What waiting on a subscription gave.
pub enum Next {
    Change(Arc<Change>),
    /// Nothing within the wait.
    Idle,
    /// The subscriber fell behind and was dropped: what was queued has been read.
    Dropped,
}

impl Feed {
    /// Subscribes with a queue of `capacity` changes (at least 1).
    pub fn subscribe(self: &Arc<Self>, capacity: usize) -> Subscription {
        let (tx, rx) = sync_channel(capacity.max(1));
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let dropped = Arc::new(AtomicBool::new(false));
        let mut subs = self.lock();
        subs.push(Sub {
            id,
            tx,
            dropped: dropped.clone(),
        });
        self.count.store(subs.len(), Ordering::Relaxed);
        Subscription {
            feed: self.clone(),
            id,
            rx,
            dropped,
        }
    }

    /// The number of subscribed searches.
    pub fn subscribers(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    fn has_subscribers(&self) -> bool {
        self.subscribers() > 0
    }

    /// The entry `id` as `txn` holds it (the write's own transaction, after the change is stored),
    /// copied for the feed's change while someone subscribes and [`FEED_BYTES`] allow. A search
    /// that subscribes after this decision gets the change without its entry and reads the entry
    /// when it sends the change.
    pub(crate) fn carry(&self, txn: &WriteTxn<'_>, id: u64) -> Option<Carried> {
        if !self.has_subscribers() {
            return None;
        }
        let bytes = match txn.get_entry(id) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(%error, id, "the feed could not read back a changed entry");
                return None;
            }
        };
        let before = self.carried.fetch_add(bytes.len(), Ordering::Relaxed);
        let carried = Carried {
            bytes: bytes.into(),
            held: self.carried.clone(),
        };
        // Over the budget: dropping it gives its bytes back.
        (before + carried.bytes.len() <= FEED_BYTES).then_some(carried)
    }

    /// The bytes of entries the changes waiting in this feed carry.
    pub fn carried_bytes(&self) -> usize {
        self.carried.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Sub>> {
        self.subs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a change to every subscriber without ever waiting: one whose queue is full is dropped.
    pub fn publish(&self, change: Change) {
        if !self.has_subscribers() {
            return;
        }
        let change = Arc::new(change);
        let mut subs = self.lock();
        subs.retain(|sub| match sub.tx.try_send(change.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                sub.dropped.store(true, Ordering::Relaxed);
                tracing::info!(
                    subscriber = sub.id,
                    "a persistent sync search fell behind: ended, its consumer will refresh"
                );
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
        self.count.store(subs.len(), Ordering::Relaxed);
    }

    fn unsubscribe(&self, id: u64) {
        let mut subs = self.lock();
        subs.retain(|sub| sub.id != id);
        self.count.store(subs.len(), Ordering::Relaxed);
    }
}

impl Subscription {
    /// The next change, waiting at most `wait`.
    pub fn next(&self, wait: Duration) -> Next {
        match self.rx.recv_timeout(wait) {
            Ok(change) => Next::Change(change),
            Err(RecvTimeoutError::Timeout) => Next::Idle,
            Err(RecvTimeoutError::Disconnected) => Next::Dropped,
        }
    }

    /// Whether the feed dropped this subscriber (it may still have changes queued).
    pub fn was_dropped(&self) -> bool {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.feed.unsubscribe(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(n: u64) -> Change {
        Change {
            kind: Kind::Modify,
            id: n,
            origin: Origin::Local,
            csn: None,
            uuid: None,
            old_dn: None,
            new_dn: None,
            entry: None,
            context: None,
        }
    }

    #[test]
    fn a_slow_subscriber_is_dropped_and_the_publisher_never_waits() {
        let feed = Arc::new(Feed::default());
        let slow = feed.subscribe(2);
        let fast = feed.subscribe(100);
        for n in 0..5 {
            feed.publish(change(n));
            assert!(matches!(fast.next(Duration::ZERO), Next::Change(c) if c.id == n));
        }
        assert!(slow.was_dropped());
        assert_eq!(feed.subscribers(), 1);
        // What was queued before the drop is still read, then the end.
        assert!(matches!(slow.next(Duration::ZERO), Next::Change(c) if c.id == 0));
        assert!(matches!(slow.next(Duration::ZERO), Next::Change(c) if c.id == 1));
        assert!(matches!(slow.next(Duration::ZERO), Next::Dropped));
        drop(fast);
        assert_eq!(feed.subscribers(), 0);
    }
}
