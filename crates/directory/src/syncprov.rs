//! The provider's records of changes (slapd's syncprov overlay, built in): the session log of deletes and
//! renames kept in the store inside each write, and the change feed persistent sync searches follow
//! (docs/design/replication.md).
//!
//! Both act on local and replicated writes alike: a consumer that is itself a provider (cascading)
//! passes on what it receives.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::sync::{uuid_from_text, Csn, CsnSet};
use canopy_proto::ResultCode;

use crate::database::Directory;
use crate::error::store_error;
use crate::pipeline::{after_commit, Event, Kind, Origin, WriteHook};

/// Session log records kept when the configuration says nothing (`syncprov_sessionlog`).
pub const DEFAULT_SESSIONLOG: u64 = 10_000;

/// Changes a persistent search may have waiting before it is dropped (and its consumer comes back with
/// its cookie).
pub const FEED_QUEUE: usize = 1024;

/// The bytes of committed entries all the changes waiting in a database's feed may carry together
/// ([`Carried`]); a change over it is published without its entry.
pub const FEED_BYTES: usize = 16 << 20;

/// The meta key of the highest CSNs (per server ID) trimmed from the session log.
const TRIMMED: &[u8] = b"synclog/trimmed";

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
    pub old_dn: Option<String>,
    /// The entry's DN after the write (None for a delete).
    pub new_dn: Option<String>,
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

/// One record of the session log: a delete (no new DN) or a rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub csn: Csn,
    pub uuid: [u8; 16],
    pub old_dn: String,
    pub new_dn: Option<String>,
}

impl LogRecord {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + self.old_dn.len());
        out.push(if self.new_dn.is_some() { b'R' } else { b'D' });
        out.extend_from_slice(&self.uuid);
        let old = self.old_dn.as_bytes();
        out.extend_from_slice(&(old.len() as u32).to_be_bytes());
        out.extend_from_slice(old);
        if let Some(new) = &self.new_dn {
            out.extend_from_slice(new.as_bytes());
        }
        out
    }

    /// The record's key: its CSN, then a 0 byte and its entryUUID. One write may log several
    /// records under one CSN (the deletes of a replicated batch, which carry no CSN of their own
    /// and share the write's stamp; a subtree delete): the entryUUID keeps each one (found by the
    /// replication harness, seed 92: a cascaded consumer kept three of four deletes' entries).
    /// Keys still sort by CSN first.
    fn key(&self) -> Vec<u8> {
        let mut key = Vec::with_capacity(41 + 16);
        key.extend_from_slice(self.csn.as_str().as_bytes());
        key.push(0);
        key.extend_from_slice(&self.uuid);
        key
    }

    /// The CSN of a record's key (keys written before the entryUUID was added are the CSN alone).
    fn key_csn(key: &[u8]) -> Option<Csn> {
        let text = key.split(|&b| b == 0).next()?;
        Csn::parse(std::str::from_utf8(text).ok()?)
    }

    fn decode(key: &[u8], value: &[u8]) -> Option<LogRecord> {
        let csn = LogRecord::key_csn(key)?;
        let (&kind, rest) = value.split_first()?;
        let uuid: [u8; 16] = rest.get(..16)?.try_into().ok()?;
        let len = u32::from_be_bytes(rest.get(16..20)?.try_into().ok()?) as usize;
        let old_dn = String::from_utf8(rest.get(20..20 + len)?.to_vec()).ok()?;
        let tail = rest.get(20 + len..)?;
        let new_dn = match kind {
            b'D' => None,
            b'R' => Some(String::from_utf8(tail.to_vec()).ok()?),
            _ => return None,
        };
        Some(LogRecord {
            csn,
            uuid,
            old_dn,
            new_dn,
        })
    }
}

/// What the session log can tell a consumer whose cookie holds `since`.
#[derive(Debug)]
pub enum LogReplay {
    /// Every delete and rename newer than the cookie, oldest first.
    Complete(Vec<LogRecord>),
    /// The log was trimmed past the cookie: the refresh needs the present phase.
    TooOld,
}

impl Directory {
    /// The session log records new to `since`, or [`LogReplay::TooOld`] when records the cookie has not
    /// seen were trimmed (or the log is off).
    pub fn replay_log(
        &self,
        txn: &impl crate::View,
        since: &CsnSet,
    ) -> Result<LogReplay, LdapError> {
        let txn = crate::view::txn(txn);
        let trimmed = self.log_trimmed(txn)?;
        if trimmed.csns().iter().any(|csn| since.is_new(csn)) {
            return Ok(LogReplay::TooOld);
        }
        let mut out = Vec::new();
        for (key, value) in txn.synclog_after(None).map_err(store_error)? {
            let record = LogRecord::decode(&key, &value).ok_or_else(|| {
                LdapError::new(ResultCode::Other, "a session log record is damaged")
            })?;
            if since.is_new(&record.csn) {
                out.push(record);
            }
        }
        Ok(LogReplay::Complete(out))
    }

    /// The highest CSNs trimmed from the session log.
    pub fn log_trimmed(&self, txn: &impl crate::View) -> Result<CsnSet, LdapError> {
        let txn = crate::view::txn(txn);
        let Some(bytes) = txn.get_meta(TRIMMED).map_err(store_error)? else {
            return Ok(CsnSet::new());
        };
        let text = String::from_utf8_lossy(&bytes);
        Ok(text.split(';').filter_map(Csn::parse).collect())
    }
}

impl Directory {
    /// For a local write made without the pipeline (the password policy's bind state): raises the
    /// contextCSN with the write's stamp, as [`crate::pipeline::Stamping`] does for every other write.
    pub fn raise_context_with(
        &self,
        txn: &mut WriteTxn<'_>,
        stamp: &crate::opattrs::Stamp,
    ) -> Result<(), LdapError> {
        if let Some(csn) = Csn::parse(&stamp.csn) {
            self.raise_context_csn(txn, &std::iter::once(csn).collect())?;
        }
        Ok(())
    }

    /// For a replicated batch: once durable, its subscribers learn the contextCSN it raised to
    /// (after the batch's own changes, which were published as they were stored).
    pub(crate) fn publish_context(&self, csns: &CsnSet) {
        let feed = self.feed().clone();
        let change = Change {
            kind: Kind::Modify,
            id: 0,
            origin: Origin::Replica,
            csn: None,
            uuid: None,
            old_dn: None,
            new_dn: None,
            entry: None,
            context: Some(csns.clone()),
        };
        after_commit(move || feed.publish(change));
    }

    /// For [`Directory::rewrite`], once `new` is stored as `id` in `txn`: an entry another write
    /// changed (memberof, refint, the password policy's bind state) reaches persistent searches once
    /// durable when its entryCSN changed, carrying the entry as stored.
    pub(crate) fn publish_rewrite(&self, txn: &WriteTxn<'_>, id: u64, old: &Entry, new: &Entry) {
        let csn = entry_csn(Some(new));
        if csn.is_none() || csn == entry_csn(Some(old)) {
            return;
        }
        let feed = self.feed().clone();
        let change = Change {
            kind: Kind::Modify,
            id,
            origin: Origin::Local,
            csn,
            uuid: entry_uuid(Some(new)),
            old_dn: Some(old.dn.to_string()),
            new_dn: Some(new.dn.to_string()),
            entry: feed.carry(txn, id),
            context: None,
        };
        after_commit(move || feed.publish(change));
    }
}

/// The write hook that keeps the session log and publishes changes to the feed. It runs last in every
/// database's pipeline, so a refusal by an overlay leaves nothing behind.
pub struct SyncProv {
    /// Session log records kept (0: no log, every cookie refresh uses the present phase).
    sessionlog: u64,
    /// Replicated writes arrive in CSN order and are this database's own changes (the accesslog's
    /// log database, written through the replica path): published as local ones, so persistent
    /// searches advance their cookie with each of them.
    ordered: bool,
}

impl SyncProv {
    pub fn new(sessionlog: u64) -> SyncProv {
        SyncProv {
            sessionlog,
            ordered: false,
        }
    }

    /// The syncprov of a database whose replicated writes come in CSN order (an access log).
    pub fn ordered(sessionlog: u64) -> SyncProv {
        SyncProv {
            sessionlog,
            ordered: true,
        }
    }
}

fn entry_csn(entry: Option<&Entry>) -> Option<Csn> {
    let value = entry?.get("entryCSN")?.values.first()?;
    Csn::parse(std::str::from_utf8(value).ok()?)
}

fn entry_uuid(entry: Option<&Entry>) -> Option<[u8; 16]> {
    let value = entry?.get("entryUUID")?.values.first()?;
    uuid_from_text(std::str::from_utf8(value).ok()?)
}

impl WriteHook for SyncProv {
    fn name(&self) -> &'static str {
        "syncprov"
    }

    /// Reads only the DN, entryUUID and entryCSN of the entries; the entry a change carries is read
    /// back from the transaction, where even a spliced modify's is whole.
    fn accepts_partial(&self) -> bool {
        true
    }

    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let stamp_csn = Csn::parse(&event.stamp.csn);
        let csn = match event.origin {
            Origin::Local => stamp_csn.clone(),
            Origin::Replica => entry_csn(event.new),
        };
        // A replicated delete carries no CSN of its own: the local stamp orders it in the log.
        let log_csn = csn.clone().or(stamp_csn);
        // The entry as it is now: a multi-provider conflict may replace an entry in place by one of
        // another entryUUID (docs/design/replication.md, rule 2).
        let uuid = entry_uuid(event.new).or_else(|| entry_uuid(event.old));
        // Multi-provider records (docs/design/replication.md, conflict rules 3 and 4): a local delete
        // leaves a tombstone (a replicated one leaves it in `apply_replica`, where a conflict's loser
        // is told apart from a delete), a rename the old DN.
        if let (Some(csn), Some(old)) = (&log_csn, event.old) {
            match (event.kind, event.origin) {
                (Kind::Delete, Origin::Local) => dir.record_tombstone(txn, old, csn.as_str())?,
                (Kind::Rename, _) => {
                    if let Some(uuid) = uuid {
                        dir.record_rename(txn, &old.ndn, &uuid, csn.as_str())?;
                    }
                }
                _ => {}
            }
        }
        if matches!(event.kind, Kind::Delete | Kind::Rename) && self.sessionlog > 0 {
            if let (Some(csn), Some(uuid), Some(old)) = (&log_csn, uuid, event.old) {
                let record = LogRecord {
                    csn: csn.clone(),
                    uuid,
                    old_dn: old.dn.to_string(),
                    new_dn: event.new.map(|e| e.dn.to_string()),
                };
                txn.put_synclog(&record.key(), &record.encode())
                    .map_err(store_error)?;
                if let Some(key) = txn.trim_synclog(self.sessionlog).map_err(store_error)? {
                    let mut trimmed = dir.log_trimmed(txn)?;
                    if let Some(gone) = LogRecord::key_csn(&key) {
                        trimmed.observe(&gone);
                    }
                    let texts: Vec<&str> = trimmed.csns().iter().map(Csn::as_str).collect();
                    txn.put_meta(TRIMMED, texts.join(";").as_bytes())
                        .map_err(store_error)?;
                }
            }
        }
        // Small without subscribers (no entry); with them, bounded by FEED_QUEUE and FEED_BYTES.
        let feed = dir.feed().clone();
        let entry = match event.kind {
            Kind::Delete => None,
            Kind::Add | Kind::Modify | Kind::Rename => feed.carry(txn, event.id),
        };
        let change = Change {
            kind: event.kind,
            id: event.id,
            origin: if self.ordered {
                Origin::Local
            } else {
                event.origin
            },
            csn,
            uuid,
            old_dn: event.old.map(|e| e.dn.to_string()),
            new_dn: event.new.map(|e| e.dn.to_string()),
            entry,
            context: None,
        };
        after_commit(move || feed.publish(change));
        Ok(())
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
    fn carry(&self, txn: &WriteTxn<'_>, id: u64) -> Option<Carried> {
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
    fn records_round_trip() {
        let csn = Csn::new("20261125053916", 1, 0, 2);
        for new_dn in [None, Some("cn=b,dc=x".to_string())] {
            let record = LogRecord {
                csn: csn.clone(),
                uuid: [7; 16],
                old_dn: "cn=a,dc=x".into(),
                new_dn,
            };
            let back = LogRecord::decode(csn.as_str().as_bytes(), &record.encode());
            assert_eq!(back, Some(record));
        }
        assert_eq!(LogRecord::decode(csn.as_str().as_bytes(), b"X"), None);
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
