//! The log writer: carries the accesslog hook's records from the data store's outbox to the log database
//! once their writes are durable, recovers what a crash left in the outbox, and purges old records
//! (docs/design/replication.md, "delta-syncrepl: the access log").

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use canopy_core::{Attribute, LdapError};
use canopy_mdb::{RawTable, ReadOps};
use canopy_proto::sync::{uuid_from_text, Cookie, Csn, CsnSet};
use canopy_proto::ResultCode;
use tokio::sync::mpsc;

use super::{csn_micros, format_micros, log_entry, StartClock, OUTBOX_PREFIX};
use crate::database::Directory;
use crate::error::store_error;
use crate::replica::{ReplicaBatch, ReplicaChange};

/// Records applied to the log database in one transaction at most.
const BATCH: usize = 512;

/// One log record as the outbox keeps it: everything but the log entry's DN and class, which follow
/// from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// reqStart, `YYYYMMDDHHMMSS.uuuuuuZ`.
    pub start: String,
    pub end: String,
    /// The change's CSN: the log entry's entryCSN.
    pub csn: String,
    /// The log entry's entryUUID, chosen once, so that applying a record twice changes nothing.
    pub uuid: String,
    pub attrs: Vec<Attribute>,
}

impl Record {
    /// Length-prefixed fields: start, end, csn, uuid, then each attribute's name and values.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut field = |bytes: &[u8]| {
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(bytes);
        };
        field(self.start.as_bytes());
        field(self.end.as_bytes());
        field(self.csn.as_bytes());
        field(self.uuid.as_bytes());
        for attr in &self.attrs {
            field(attr.desc.as_bytes());
            field(&(attr.values.len() as u32).to_be_bytes());
            for value in &attr.values {
                field(value);
            }
        }
        out
    }

    pub fn decode(mut bytes: &[u8]) -> Option<Record> {
        let mut field = || -> Option<Vec<u8>> {
            let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
            let value = bytes.get(4..4 + len)?.to_vec();
            bytes = &bytes[4 + len..];
            Some(value)
        };
        let text = |v: Vec<u8>| String::from_utf8(v).ok();
        let start = text(field()?)?;
        let end = text(field()?)?;
        let csn = text(field()?)?;
        let uuid = text(field()?)?;
        let mut attrs = Vec::new();
        while let Some(name) = field() {
            let count = u32::from_be_bytes(field()?.as_slice().try_into().ok()?);
            let mut values = Vec::new();
            for _ in 0..count {
                values.push(field()?);
            }
            attrs.push(Attribute {
                desc: text(name)?,
                values,
            });
        }
        Some(Record {
            start,
            end,
            csn,
            uuid,
            attrs,
        })
    }
}

/// What the hook (on the data store's writer thread) and the log writer share.
pub(crate) struct Shared {
    sender: mpsc::UnboundedSender<(Vec<u8>, Record)>,
    /// Outbox keys whose records the log database holds durably; the next data write deletes them.
    done: Mutex<Vec<Vec<u8>>>,
    clock: StartClock,
}

impl Shared {
    /// The outbox keys to delete in the running write (at most a batch of them): forgotten only once
    /// that write commits ([`Shared::forget`]), so a write that rolls back leaves them for the next.
    pub(crate) fn done(&self) -> Vec<Vec<u8>> {
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        done.iter().take(BATCH).cloned().collect()
    }

    pub(crate) fn forget(&self, keys: &[Vec<u8>]) {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|k| !keys.contains(k));
    }

    fn mark_done(&self, keys: impl IntoIterator<Item = Vec<u8>>) {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(keys);
    }

    pub(crate) fn next_start(&self, csn: &str) -> String {
        self.clock.next(csn)
    }

    /// reqEnd: now, and at least a microsecond after reqStart.
    pub(crate) fn end_after(&self, start: &str) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        format_micros(now.max(csn_micros(start).unwrap_or(0) + 1))
    }

    /// Hands a durable write's record to the log writer. When the writer is gone (the server is
    /// stopping) the record stays in the outbox for the next start's recovery.
    pub(crate) fn send(&self, key: Vec<u8>, record: Record) {
        if self.sender.send((key, record)).is_err() {
            tracing::warn!("accesslog: the log writer has stopped; the record waits in the outbox");
        }
    }
}

/// The log writer's side: started by the server once the data and log databases are open.
pub struct LogWriter {
    receiver: mpsc::UnboundedReceiver<(Vec<u8>, Record)>,
    shared: Arc<Shared>,
}

pub(crate) fn channel() -> (Arc<Shared>, LogWriter) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        sender,
        done: Mutex::default(),
        clock: StartClock::default(),
    });
    (shared.clone(), LogWriter { receiver, shared })
}

impl LogWriter {
    /// Creates the log's container entry when missing, then applies every record the data store's
    /// outbox still holds (a crash between the data commit and the log commit): a record already in
    /// the log is applied again as the same entry (its entryUUID), so recovery is idempotent.
    pub async fn recover(&self, data: &Directory, log: &Directory) -> Result<usize, LdapError> {
        ensure_container(log).await?;
        let pending: Vec<(Vec<u8>, Record)> = {
            let txn = data.read()?;
            let mut pending = Vec::new();
            for pair in txn.txn().raw_pairs(RawTable::Meta).map_err(store_error)? {
                let (key, value) = pair.map_err(store_error)?;
                if !key.starts_with(OUTBOX_PREFIX) {
                    continue;
                }
                let record = Record::decode(value).ok_or_else(|| {
                    LdapError::new(
                        ResultCode::Other,
                        format!(
                            "accesslog: the outbox record {} is damaged",
                            String::from_utf8_lossy(key)
                        ),
                    )
                })?;
                pending.push((key.to_vec(), record));
            }
            pending
        };
        let count = pending.len();
        for chunk in pending.chunks(BATCH) {
            apply(log, chunk).await?;
            self.shared.mark_done(chunk.iter().map(|(k, _)| k.clone()));
        }
        if count > 0 {
            tracing::info!(
                records = count,
                "accesslog: recovered records from the outbox"
            );
        }
        Ok(count)
    }

    /// Applies records as their writes become durable, in batches, until the hook is gone. A record
    /// the log database refuses is logged and left in the outbox (the next start retries it).
    pub async fn run(mut self, log: Directory) {
        let mut batch = Vec::new();
        while let Some(first) = self.receiver.recv().await {
            batch.push(first);
            while batch.len() < BATCH {
                match self.receiver.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            match apply(&log, &batch).await {
                Ok(()) => self.shared.mark_done(batch.drain(..).map(|(k, _)| k)),
                Err(error) => {
                    tracing::error!(%error, records = batch.len(),
                        "accesslog: cannot write to the log database; the records wait in the outbox");
                    batch.clear();
                }
            }
        }
    }
}

/// Writes records to the log database in one transaction, raising its contextCSN with their CSNs.
async fn apply(log: &Directory, records: &[(Vec<u8>, Record)]) -> Result<(), LdapError> {
    let mut csns = CsnSet::new();
    let mut changes = Vec::new();
    for (_, record) in records {
        let uuid = uuid_from_text(&record.uuid).ok_or_else(|| {
            LdapError::new(
                ResultCode::Other,
                "accesslog: a record has a malformed UUID",
            )
        })?;
        if let Some(csn) = Csn::parse(&record.csn) {
            csns.observe(&csn);
        }
        let entry = log_entry(log.schema(), log.suffix_dn(), record, &record.uuid)?;
        changes.push(ReplicaChange::Put { uuid, entry });
    }
    let cookie = (!csns.is_empty()).then_some(Cookie {
        rid: None,
        sid: None,
        csns,
    });
    log.apply_replica(ReplicaBatch {
        rid: 0,
        changes,
        cookie,
        ..Default::default()
    })
    .await?;
    Ok(())
}

/// The container entry of the log, `auditContainer`, as slapd creates it.
async fn ensure_container(log: &Directory) -> Result<(), LdapError> {
    let exists = {
        let txn = log.read()?;
        txn.txn()
            .get_id(&crate::keys::dn_key(log.suffix()))
            .map_err(store_error)?
            .is_some()
    };
    if exists {
        return Ok(());
    }
    let suffix = log.suffix_dn();
    let cn = suffix
        .rdns
        .first()
        .and_then(|rdn| rdn.avas.first())
        .filter(|ava| ava.attr.eq_ignore_ascii_case("cn"))
        .map(|ava| ava.value.clone());
    let stamp = crate::opattrs::Stamp::now_for(log.server_id());
    let uuid_text = uuid::Uuid::new_v4().hyphenated().to_string();
    let one = |desc: &str, value: &[u8]| Attribute {
        desc: desc.to_string(),
        values: vec![value.to_vec()],
    };
    let mut attrs = vec![one("objectClass", b"auditContainer")];
    if let Some(cn) = cn {
        attrs.push(one("cn", &cn));
    }
    attrs.extend([
        one("structuralObjectClass", b"auditContainer"),
        one("entryUUID", uuid_text.as_bytes()),
        one("creatorsName", suffix.to_string().as_bytes()),
        one("createTimestamp", stamp.time.as_bytes()),
        one("entryCSN", stamp.csn.as_bytes()),
        one("modifiersName", suffix.to_string().as_bytes()),
        one("modifyTimestamp", stamp.time.as_bytes()),
    ]);
    let uuid = uuid_from_text(&uuid_text)
        .ok_or_else(|| LdapError::new(ResultCode::Other, "accesslog: bad container UUID"))?;
    let entry = canopy_core::Entry {
        dn: suffix.clone(),
        ndn: log.suffix().clone(),
        attrs,
    };
    log.apply_replica(ReplicaBatch {
        rid: 0,
        changes: vec![ReplicaChange::Put { uuid, entry }],
        cookie: None,
        ..Default::default()
    })
    .await?;
    Ok(())
}

/// Deletes the log records whose reqStart is older than `age` (slapd's `logpurge`); how many.
pub async fn purge(log: &Directory, age: Duration) -> Result<usize, LdapError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let cutoff = now.saturating_sub(age.as_micros());
    let old: Vec<[u8; 16]> = {
        let txn = log.read()?;
        let mut old = Vec::new();
        for item in txn.txn().entries().map_err(store_error)? {
            let (_, bytes) = item.map_err(store_error)?;
            let entry = Directory::parse_stored(bytes)?
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            let start = entry
                .get("reqStart")
                .and_then(|a| a.values.first())
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(csn_micros);
            let uuid = crate::replica::entry_uuid(&entry);
            if let (Some(start), Some(uuid)) = (start, uuid) {
                if start < cutoff {
                    old.push(uuid);
                }
            }
        }
        old
    };
    let count = old.len();
    for chunk in old.chunks(BATCH) {
        log.apply_replica(ReplicaBatch {
            rid: 0,
            changes: chunk
                .iter()
                .map(|uuid| ReplicaChange::Delete { uuid: *uuid })
                .collect(),
            cookie: None,
            ..Default::default()
        })
        .await?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_detected() {
        let record = Record {
            start: "20261127033042.000001Z".into(),
            end: "20261127033042.000002Z".into(),
            csn: "20261127033042.122526Z#000000#000#000000".into(),
            uuid: "aaf2508a-7e5e-1041-9065-2b03ab297649".into(),
            attrs: vec![Attribute {
                desc: "reqMod".into(),
                values: vec![b"cn:+ A".to_vec(), b"sn:-".to_vec()],
            }],
        };
        let bytes = record.encode();
        assert_eq!(Record::decode(&bytes), Some(record));
        assert_eq!(Record::decode(&bytes[..bytes.len() - 3]), None);
    }
}
