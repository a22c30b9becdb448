//! The dds overlay (RFC 2589 dynamic entries, as slapd's dds): an entry of the auxiliary class
//! dynamicObject lives for its entryTtl seconds past its last refresh (entryExpireTimestamp), and
//! the server deletes it once that time is past ([`expire`]). The hook stamps new dynamic entries,
//! keeps static entries from living below dynamic ones and entries from changing kind, and counts
//! the dynamic entries of the database inside each write's transaction.

use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::NormDn;

use super::has_class;
use super::ppolicy::time::Instant;
use crate::database::Directory;
use crate::error::store_error;
use crate::event::{Event, Kind, Origin, Proposed};
use crate::pipeline::WriteHook;
use crate::{Unrestricted, WriteOp, WriteRequest};

/// The class that makes an entry dynamic (RFC 2589 §3).
pub const DYNAMIC_OBJECT: &str = "dynamicObject";
pub const ENTRY_TTL: &str = "entryTtl";
pub const ENTRY_EXPIRE_TIMESTAMP: &str = "entryExpireTimestamp";

/// The attribute slapd's dds module defines: when a dynamic entry expires. Loaded whenever a dds
/// overlay is configured; entryTtl, dynamicSubtrees and dynamicObject are in the operational schema.
pub const DDS_SCHEMA: &str = "\
attributetype ( 1.3.6.1.4.1.4203.666.1.57 NAME 'entryExpireTimestamp' \
 DESC 'RFC2589 OpenLDAP extension: expire time of a dynamic object, computed as now + entryTtl' \
 EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch \
 SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE dSAOperation )
";

/// The number of dynamic entries, kept in the store's meta table by the hook.
const COUNT_KEY: &[u8] = b"dds-count";

/// slapd's dds settings (`dds-*`, `olcDDS*`), in seconds; 0 means none for the minimum TTL and the
/// number of entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `dds-state`: off, the overlay does nothing (dynamic entries are stored as any other,
    /// never expire and cannot be refreshed).
    pub state: bool,
    pub max_ttl: u32,
    pub min_ttl: u32,
    /// The TTL of a new dynamic entry; 0 gives it `max_ttl`.
    pub default_ttl: u32,
    /// How often expired entries are looked for.
    pub interval: u32,
    /// How long past its expiry an entry is kept.
    pub tolerance: u32,
    pub max_dynamic_objects: u32,
}

impl Default for Config {
    /// slapd's defaults: a day at most, no minimum, every hour, no limit.
    fn default() -> Config {
        Config {
            state: true,
            max_ttl: 86_400,
            min_ttl: 0,
            default_ttl: 0,
            interval: 3_600,
            tolerance: 0,
            max_dynamic_objects: 0,
        }
    }
}

/// slapd's bounds on `dds-max-ttl`: a day to a year.
pub const MAX_TTL_RANGE: (u32, u32) = (86_400, 31_557_600);

impl Config {
    /// Refuses settings slapd refuses, in its words.
    pub fn check(&self) -> Result<(), String> {
        let (low, high) = MAX_TTL_RANGE;
        if !(low..=high).contains(&self.max_ttl) {
            return Err(format!(
                "invalid max-ttl={}; must be between {low} and {high}",
                self.max_ttl
            ));
        }
        if self.min_ttl > self.max_ttl {
            return Err(format!(
                "invalid min-ttl={}; must not exceed max-ttl={}",
                self.min_ttl, self.max_ttl
            ));
        }
        if self.default_ttl > self.max_ttl {
            return Err(format!(
                "invalid default-ttl={}; must not exceed max-ttl={}",
                self.default_ttl, self.max_ttl
            ));
        }
        if self.interval == 0 {
            return Err("invalid interval=0; must be positive".into());
        }
        Ok(())
    }

    /// The TTL of a new dynamic entry.
    pub fn initial_ttl(&self) -> u32 {
        match self.default_ttl {
            0 => self.max_ttl,
            ttl => ttl.max(self.min_ttl),
        }
    }

    /// The TTL a Refresh asking for `requested` seconds gets (RFC 2589 §4.1), or the error slapd
    /// answers.
    pub fn refreshed_ttl(&self, requested: i64) -> Result<u32, LdapError> {
        if requested <= 0 {
            return Err(LdapError::new(
                ResultCode::ProtocolError,
                "invalid time-to-live for dynamicObject",
            ));
        }
        if requested > i64::from(self.max_ttl) {
            return Err(LdapError::new(
                ResultCode::SizeLimitExceeded,
                "time-to-live for dynamicObject exceeds limit",
            ));
        }
        Ok((requested as u32).max(self.min_ttl))
    }
}

/// The changes that give an entry `ttl` seconds from `now`: entryTtl and entryExpireTimestamp.
pub fn refresh_changes(ttl: u32, now: Instant) -> Vec<Change> {
    let replace = |name: &str, value: String| Change {
        operation: ModifyOperation::Replace,
        modification: PartialAttribute {
            name: name.into(),
            values: vec![value.into_bytes()],
        },
    };
    vec![
        replace(ENTRY_TTL, ttl.to_string()),
        replace(
            ENTRY_EXPIRE_TIMESTAMP,
            now.plus(i64::from(ttl)).generalized(),
        ),
    ]
}

/// Whether `entry` is a dynamic object.
pub fn is_dynamic(dir: &Directory, entry: &Entry) -> bool {
    has_class(dir, entry, DYNAMIC_OBJECT)
}

/// The dds write hook.
pub struct Dds {
    config: Config,
}

impl Dds {
    pub fn new(config: Config) -> Dds {
        Dds { config }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The entry at `ndn`, if any, read inside the write.
    fn entry_at(
        dir: &Directory,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
    ) -> Result<Option<Entry>, LdapError> {
        let Some(id) = dir.id_in(txn, ndn).map_err(store_error)? else {
            return Ok(None);
        };
        let Some(bytes) = txn.get_entry(id).map_err(store_error)? else {
            return Ok(None);
        };
        let entry = Directory::parse_stored(bytes)?
            .to_entry()
            .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
        Ok(Some(entry))
    }

    fn parent_is_dynamic(
        dir: &Directory,
        txn: &WriteTxn<'_>,
        ndn: &NormDn,
    ) -> Result<bool, LdapError> {
        if ndn == dir.suffix() {
            return Ok(false);
        }
        let Some(parent) = ndn.parent() else {
            return Ok(false);
        };
        Ok(Self::entry_at(dir, txn, &parent)?.is_some_and(|p| is_dynamic(dir, &p)))
    }

    /// The number of dynamic entries: the hook's record, or a count of the whole database the
    /// first time (an overlay added to a database that already holds entries).
    fn count(dir: &Directory, txn: &impl ReadOps) -> Result<u64, LdapError> {
        if let Some(bytes) = txn.get_meta(COUNT_KEY).map_err(store_error)? {
            if let Ok(bytes) = <[u8; 8]>::try_from(bytes.as_slice()) {
                return Ok(u64::from_be_bytes(bytes));
            }
        }
        let mut count = 0;
        for item in txn.entries().map_err(store_error)? {
            let (_, bytes) = item.map_err(store_error)?;
            if let Ok(entry) = Directory::parse_stored(bytes)?.to_entry() {
                count += u64::from(is_dynamic(dir, &entry));
            }
        }
        Ok(count)
    }
}

fn violation(text: &str) -> LdapError {
    LdapError::new(ResultCode::ConstraintViolation, text)
}

fn class_violation(text: &str) -> LdapError {
    LdapError::new(ResultCode::ObjectClassViolation, text)
}

impl WriteHook for Dds {
    fn name(&self) -> &'static str {
        "dds"
    }

    fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        // A change received from a provider is stored as the provider made it (a refusal would stop
        // replication at it); the count below still follows it.
        if !self.config.state || change.origin == Origin::Replica {
            return Ok(());
        }
        match change.kind {
            Kind::Add => {
                let Some(new) = change.new.as_deref_mut() else {
                    return Ok(());
                };
                let dynamic = is_dynamic(dir, new);
                if !dynamic {
                    if Self::parent_is_dynamic(dir, txn, &new.ndn)? {
                        return Err(violation(
                            "no static subordinate entries allowed for dynamicObject",
                        ));
                    }
                    return Ok(());
                }
                let limit = u64::from(self.config.max_dynamic_objects);
                if limit > 0 && Self::count(dir, txn)? >= limit {
                    return Err(LdapError::new(
                        ResultCode::UnwillingToPerform,
                        "too many dynamicObjects in context",
                    ));
                }
                // A replicated entry arrives with its provider's times.
                if new.get(ENTRY_EXPIRE_TIMESTAMP).is_none() {
                    let now = Instant::now();
                    let ttl = self.config.initial_ttl();
                    for change in refresh_changes(ttl, now) {
                        new.attrs
                            .retain(|a| !a.desc.eq_ignore_ascii_case(&change.modification.name));
                        new.attrs.push(Attribute {
                            desc: change.modification.name,
                            values: change.modification.values,
                        });
                    }
                }
                Ok(())
            }
            Kind::Modify => {
                let (Some(old), Some(new)) = (change.old, change.new.as_deref()) else {
                    return Ok(());
                };
                match (is_dynamic(dir, old), is_dynamic(dir, new)) {
                    (true, false) => Err(class_violation(
                        "objectClass modification cannot turn dynamicObject into static entry",
                    )),
                    (false, true) => Err(class_violation(
                        "objectClass modification cannot turn static entry into dynamicObject",
                    )),
                    _ => Ok(()),
                }
            }
            Kind::Rename => {
                let Some(new) = change.new.as_deref() else {
                    return Ok(());
                };
                if !is_dynamic(dir, new) && Self::parent_is_dynamic(dir, txn, &new.ndn)? {
                    return Err(violation(
                        "static entry cannot have dynamicObject as newSuperior",
                    ));
                }
                Ok(())
            }
            Kind::Delete => Ok(()),
        }
    }

    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let delta: i64 = match event.kind {
            Kind::Add => i64::from(event.new.is_some_and(|e| is_dynamic(dir, e))),
            Kind::Delete => -i64::from(event.old.is_some_and(|e| is_dynamic(dir, e))),
            Kind::Modify | Kind::Rename => 0,
        };
        if delta == 0 {
            return Ok(());
        }
        // The count before this write: the stored entry is already in (or out of) the table.
        let stored = txn.get_meta(COUNT_KEY).map_err(store_error)?;
        let count = match stored.and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok()) {
            Some(bytes) => u64::from_be_bytes(bytes).saturating_add_signed(delta),
            None => Self::count(dir, txn)?,
        };
        txn.put_meta(COUNT_KEY, &count.to_be_bytes())
            .map_err(store_error)
    }

    fn rebuild(&self, dir: &Directory, txn: &mut WriteTxn<'_>) -> Result<u64, LdapError> {
        txn.del_meta(COUNT_KEY).map_err(store_error)?;
        let count = Self::count(dir, txn)?;
        txn.put_meta(COUNT_KEY, &count.to_be_bytes())
            .map_err(store_error)?;
        Ok(0)
    }
}

/// Deletes the dynamic entries of `dir` whose entryExpireTimestamp is more than `tolerance`
/// seconds past, deepest first, as `by` (the database's root DN); how many. An expired entry that
/// still has children (whose own time is not up) stays until they are gone.
pub async fn expire(dir: &Directory, tolerance: u32, by: &str) -> Result<usize, LdapError> {
    let cutoff = Instant::now().secs() - i64::from(tolerance);
    let mut expired: Vec<Entry> = {
        let snapshot = dir.read()?;
        let mut expired = Vec::new();
        for item in snapshot.txn().entries().map_err(store_error)? {
            let (_, bytes) = item.map_err(store_error)?;
            let Ok(entry) = Directory::parse_stored(bytes)?.to_entry() else {
                continue;
            };
            let expires = entry
                .get(ENTRY_EXPIRE_TIMESTAMP)
                .and_then(|a| a.values.first())
                .and_then(|v| Instant::parse(v));
            if expires.is_some_and(|at| at.secs() <= cutoff) && is_dynamic(dir, &entry) {
                expired.push(entry);
            }
        }
        expired
    };
    expired.sort_by_key(|e| std::cmp::Reverse(e.ndn.rdns().len()));
    let guard = std::sync::Arc::new(Unrestricted { dn: by.to_string() });
    let mut deleted = 0;
    for entry in expired {
        let request = WriteRequest {
            op: WriteOp::Delete {
                dn: entry.dn.clone(),
                ndn: entry.ndn.clone(),
            },
            guard: guard.clone(),
        };
        match dir.write(request).await {
            Ok(()) => deleted += 1,
            // Gone meanwhile, refreshed meanwhile is not checked: the next round sees it again
            // only if it is still expired; a parent waits for its children.
            Err(error) => tracing::debug!(dn = %entry.dn, ?error, "dds: expired entry kept"),
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_rules() {
        let config = Config {
            min_ttl: 2,
            default_ttl: 600,
            ..Config::default()
        };
        assert!(config.check().is_ok());
        assert_eq!(config.initial_ttl(), 600);
        assert_eq!(Config::default().initial_ttl(), 86_400);
        assert_eq!(config.refreshed_ttl(100).unwrap(), 100);
        assert_eq!(config.refreshed_ttl(1).unwrap(), 2);
        assert_eq!(
            config.refreshed_ttl(0).unwrap_err().code,
            ResultCode::ProtocolError
        );
        assert_eq!(
            config.refreshed_ttl(86_401).unwrap_err().code,
            ResultCode::SizeLimitExceeded
        );
        for bad in [
            Config {
                max_ttl: 3_600,
                ..Config::default()
            },
            Config {
                min_ttl: 90_000,
                ..Config::default()
            },
            Config {
                interval: 0,
                ..Config::default()
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refresh_sets_both_attributes() {
        let changes = refresh_changes(100, Instant::from_secs(0));
        assert_eq!(changes[0].modification.values, [b"100".to_vec()]);
        assert_eq!(
            changes[1].modification.values,
            [b"19700101000140Z".to_vec()]
        );
    }
}
