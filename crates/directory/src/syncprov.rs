//! The provider's records of changes (slapd's syncprov overlay, built in): the session log of deletes and
//! renames kept in the store inside each write, and the changes published to the database's feed
//! (`feed.rs`) that persistent sync searches follow (docs/design/replication.md).
//!
//! Both act on local and replicated writes alike: a consumer that is itself a provider (cascading)
//! passes on what it receives.

use std::sync::Arc;

use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::sync::{uuid_from_text, Csn, CsnSet};
use canopy_proto::ResultCode;

use crate::database::Directory;
use crate::error::store_error;
use crate::event::{after_commit, Event, Kind, Origin};
use crate::feed::Change;
use crate::pipeline::WriteHook;

/// Session log records kept when the configuration says nothing (`syncprov_sessionlog`).
pub const DEFAULT_SESSIONLOG: u64 = 10_000;

/// The meta key of the highest CSNs (per server ID) trimmed from the session log.
const TRIMMED: &[u8] = b"synclog/trimmed";

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
            old_dn: Some(old.dn.to_string().into()),
            new_dn: Some(new.dn.to_string().into()),
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
        let (old_dn, new_dn) = dns(event.old, event.new);
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
            old_dn,
            new_dn,
            entry,
            context: None,
        };
        after_commit(move || feed.publish(change));
        Ok(())
    }
}

/// The DNs of a change as text, before and after; the same DN (a modify's) is written out once.
fn dns(old: Option<&Entry>, new: Option<&Entry>) -> (Option<Arc<str>>, Option<Arc<str>>) {
    let old_dn: Option<Arc<str>> = old.map(|e| e.dn.to_string().into());
    let new_dn = match (old, new, &old_dn) {
        (Some(old), Some(new), Some(text)) if old.dn == new.dn => Some(text.clone()),
        (_, new, _) => new.map(|e| e.dn.to_string().into()),
    };
    (old_dn, new_dn)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
