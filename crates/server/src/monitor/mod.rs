//! cn=Monitor: a database of its own in the registry (`databases.rs`), in OpenLDAP back-monitor's
//! shape. Its entries live in a small LMDB store of their own (`DATA/monitor`, not durable, recreated at
//! each start); `monitor_tree` computes them from the server's counters and [`Monitor::store`] writes
//! what changed just before a search or compare reads them, so every read of cn=Monitor runs through
//! the ordinary routing, access-control, scope, filter and attribute-selection code.
//!
//! Clients cannot write it: every update is unwillingToPerform, as slapd answers for back-monitor.

pub mod schema;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use canopy_core::check::entry_from_attributes_with;
use canopy_core::LdapError;
use canopy_directory::opattrs::civil;
use canopy_directory::InWrite;
use canopy_directory::{
    structural, Action, Directory, Guard, OpError, Stamp, WriteOp, WriteRequest,
};
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};

use crate::databases::Database;

/// The monitor's naming context.
pub const SUFFIX: &str = "cn=Monitor";

/// Who may read cn=Monitor besides the root DN (which no rule restricts): the ldapi peer running as
/// root, after a SASL EXTERNAL bind. Everybody else sees nothing (noSuchObject, as for a hidden entry).
pub const ACCESS: &str =
    "to * by dn.exact=\"gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth\" read by * none";

/// One monitor entry: its DN and attributes in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorEntry {
    pub dn: String,
    pub attrs: Vec<(&'static str, Vec<String>)>,
}

/// Generalized time of a moment, `YYYYMMDDHHMMSSZ`.
pub fn generalized(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, mo, d, h, mi, s) = civil(i64::try_from(secs).unwrap_or(0));
    format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z")
}

/// The monitor database and what was last written to it.
pub struct Monitor {
    db: Database,
    /// creatorsName and modifiersName of its entries (the root DN, as slapd records the monitor's).
    creator: String,
    /// The entries the store holds, parents first; the lock also serializes refreshes.
    written: tokio::sync::Mutex<Vec<MonitorEntry>>,
}

fn internal(what: &str, e: impl std::fmt::Display) -> LdapError {
    LdapError::new(ResultCode::Other, format!("cn=Monitor {what}: {e}"))
}

impl Monitor {
    pub fn new(db: Database, creator: String) -> Monitor {
        Monitor {
            db,
            creator,
            written: tokio::sync::Mutex::new(Vec::new()),
        }
    }

    /// Whether a request's raw base DN may lie in cn=Monitor: a cheap test before any refresh, made
    /// on every search and compare. Every DN of the tree ends with its suffix's value `Monitor` (in
    /// any case, perhaps followed by spaces), so the test reads the last bytes only.
    pub fn may_hold(raw_dn: &[u8]) -> bool {
        let end = raw_dn.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        end >= 7 && raw_dn[end - 7..end].eq_ignore_ascii_case(b"monitor")
    }

    /// Writes the difference between `entries` and what the store holds: new entries added (parents
    /// first), changed attributes replaced, vanished entries (closed connections) deleted.
    pub async fn store(&self, entries: Vec<MonitorEntry>) -> Result<(), LdapError> {
        let mut written = self.written.lock().await;
        let before: HashMap<&str, &MonitorEntry> =
            written.iter().map(|e| (e.dn.as_str(), e)).collect();
        let mut changes = Vec::new();
        for entry in &entries {
            match before.get(entry.dn.as_str()) {
                None => self.write(self.add(entry)?).await?,
                Some(old) if *old != entry => {
                    // Modifies are independent: the writer commits them together.
                    let dir = self.db.backend().clone();
                    let request = self.request(self.modify(old, entry)?);
                    changes.push(tokio::spawn(async move {
                        dir.write(request).await.map_err(OpError::into_ldap)
                    }));
                }
                Some(_) => {}
            }
        }
        for change in changes {
            change.await.map_err(|e| internal("refresh", e))??;
        }
        let now: HashMap<&str, ()> = entries.iter().map(|e| (e.dn.as_str(), ())).collect();
        for old in written.iter().rev() {
            if !now.contains_key(old.dn.as_str()) {
                let (dn, ndn) = self.db.normalize(old.dn.as_bytes())?;
                self.write(WriteOp::Delete { dn, ndn }).await?;
            }
        }
        *written = entries;
        Ok(())
    }

    fn request(&self, op: WriteOp) -> WriteRequest {
        WriteRequest {
            op,
            guard: Arc::new(ServerWrite {
                dn: self.creator.clone(),
            }),
        }
    }

    async fn write(&self, op: WriteOp) -> Result<(), LdapError> {
        self.db
            .backend()
            .write(self.request(op))
            .await
            .map_err(OpError::into_ldap)
    }

    fn add(&self, entry: &MonitorEntry) -> Result<WriteOp, LdapError> {
        let dir: &Directory = self.db.backend();
        let (dn, ndn) = dir.normalize(entry.dn.as_bytes())?;
        let attrs = partial(entry);
        let mut stored = entry_from_attributes_with(dir.schema(), dn, ndn, &attrs, true)?;
        let class = structural(dir, &stored)?;
        Stamp::identify(&mut stored, &self.creator, &class);
        Ok(WriteOp::Add(stored))
    }

    /// Replaces what changed between two versions of an entry.
    fn modify(&self, old: &MonitorEntry, new: &MonitorEntry) -> Result<WriteOp, LdapError> {
        let (dn, ndn) = self.db.normalize(new.dn.as_bytes())?;
        Ok(WriteOp::Modify {
            dn,
            ndn,
            changes: changes(old, new),
        })
    }
}

/// The guard of the monitor's own writes: everything allowed, operational counters included.
struct ServerWrite {
    dn: String,
}

impl Guard for ServerWrite {
    fn requester(&self) -> &str {
        &self.dn
    }

    fn authorize(&self, _: &Directory, _: InWrite<'_>, _: Action<'_>) -> Result<(), LdapError> {
        Ok(())
    }

    fn server_internal(&self) -> bool {
        true
    }
}

fn partial(entry: &MonitorEntry) -> Vec<PartialAttribute> {
    entry
        .attrs
        .iter()
        .map(|(name, values)| PartialAttribute {
            name: (*name).to_string(),
            values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
        })
        .collect()
}

/// The changes between two versions of an entry (same DN): changed attributes replaced.
fn changes(old: &MonitorEntry, new: &MonitorEntry) -> Vec<Change> {
    let mut changes = Vec::new();
    for attr in partial(new) {
        let same = old.attrs.iter().any(|(name, values)| {
            *name == attr.name
                && values
                    .iter()
                    .map(|v| v.as_bytes())
                    .eq(attr.values.iter().map(Vec::as_slice))
        });
        if !same {
            changes.push(Change {
                operation: ModifyOperation::Replace,
                modification: attr,
            });
        }
    }
    for (name, _) in &old.attrs {
        if !new.attrs.iter().any(|(n, _)| n == name) {
            changes.push(Change {
                operation: ModifyOperation::Replace,
                modification: PartialAttribute {
                    name: (*name).to_string(),
                    values: Vec::new(),
                },
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::Monitor;

    #[test]
    fn may_hold_finds_monitor_at_the_end_in_any_case() {
        for dn in [
            &b"cn=Monitor"[..],
            b"cn=Connections,CN=MONITOR",
            b"cn=x,cn=monitor",
            b"monitor",
            b"mmonitor",
            b"cn=x,cn=mOnItOr  ",
        ] {
            assert!(Monitor::may_hold(dn), "{dn:?}");
        }
        for dn in [
            &b""[..],
            b"dc=example,dc=com",
            b"cn=monito",
            b"cn=m,ou=onitor",
            b"uid=mmm",
            b"cn=mOnItOr,dc=example",
            b"      ",
        ] {
            assert!(!Monitor::may_hold(dn), "{dn:?}");
        }
    }
}
