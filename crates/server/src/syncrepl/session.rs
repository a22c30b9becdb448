//! One syncrepl session (RFC 4533 §3): the Sync Request search with the stored cookie, the refresh
//! phase (entries, present bookkeeping, refreshDeletes syncIdSets, newcookie messages), the end of a
//! present phase (what was not named is deleted) and the persist phase.

use std::collections::HashSet;
use std::time::{Instant, SystemTime};

use canopy_core::check::build_entry;
use canopy_core::LdapError;
use canopy_directory::{ReplicaBatch, ReplicaChange};
use canopy_proto::sync::{
    Cookie, SyncDone, SyncInfo, SyncMode, SyncRequest, SyncState, SyncStateKind, CONTROL_SYNC_DONE,
    CONTROL_SYNC_REQUEST, CONTROL_SYNC_STATE, RESULT_SYNC_REFRESH_REQUIRED, SYNC_INFO,
};
use canopy_proto::{
    Control, DerefAliases, LdapMessage, PartialAttribute, ProtocolOp, ResultCode, SearchRequest,
    SearchResultEntry, SearchScope,
};
use canopy_schema::NormDn;

use super::client::Connection;
use super::{Failure, Handle};
use crate::databases::Database;

/// Entries per write transaction during a refresh.
const BATCH: usize = 2000;
/// Attributes a provider computes when it sends an entry and nobody stores (slapd's dynamic ones, and
/// contextCSN, which Canopy keeps beside the data).
const COMPUTED: &[&str] = &[
    "hasSubordinates",
    "numSubordinates",
    "entryDN",
    "subschemaSubentry",
    "contextCSN",
    "pwdPolicySubentry",
];

/// How a session that did not fail ended.
pub enum End {
    /// refreshOnly: the refresh is done; poll again after `interval`.
    Polled,
    /// The provider answered e-syncRefreshRequired: start again without a cookie.
    RefreshRequired,
}

/// The bookkeeping of one session.
struct Run<'a> {
    db: &'a Database,
    handle: &'a Handle,
    base: NormDn,
    /// The suffixes of this server's other databases inside this one's, whose entries their own
    /// consumers apply (`Handle::elsewhere`).
    elsewhere: Vec<NormDn>,
    /// Changes not yet applied, orphans first.
    batch: Vec<ReplicaChange>,
    /// The UUIDs the provider named during a present phase (sent or present).
    present: HashSet<[u8; 16]>,
    /// Whether the refresh is still going.
    refreshing: bool,
    /// In the persist phase, the cookie of the last change received and not yet applied: the
    /// changes that are already waiting are applied together, in one transaction with it.
    held: Option<Cookie>,
    /// Counts of the current refresh: added, modified, renamed, deleted.
    counts: [u64; 4],
    /// Of the current refresh: entries that replaced one of another entryUUID at their DN, and
    /// deletes spared because the provider sent their DN.
    replaced: u64,
    spared: u64,
    /// The DNs (hashed) the provider sent during this refresh: no delete of this refresh (present
    /// phase, refreshDeletes) removes an entry at one of them.
    sent: std::sync::Arc<HashSet<u64>>,
    /// The refresh started without a cookie (a first start, a reload): its cookies set the
    /// contextCSN rather than raise it ([`ReplicaBatch::reset_context`]).
    full: bool,
    started: Instant,
    progressed: bool,
}

pub async fn run(db: &Database, handle: &Handle, reload: bool) -> Result<End, Failure> {
    let c = &handle.consumer;
    let fail = |message: String| Failure {
        message,
        progressed: false,
    };
    let (base_dn, base) = db
        .normalize(c.searchbase.as_bytes())
        .map_err(|e| fail(format!("searchbase {:?}: {}", c.searchbase, e.message)))?;
    let _ = base_dn;
    if !db.holds(&base) {
        return Err(fail(format!(
            "searchbase {:?} is outside the database's suffix {}",
            c.searchbase,
            db.suffix_dn()
        )));
    }
    let mut conn = Connection::open(c).await.map_err(fail)?;
    let stored = if reload {
        None
    } else {
        let txn = db.read().map_err(|e| fail(e.message))?;
        db.replica_cookie(&txn, c.rid)
            .map_err(|e| fail(e.message))?
    };
    let sent = Cookie {
        rid: Some(c.rid),
        sid: None,
        csns: stored.map(|s| s.csns).unwrap_or_default(),
    };
    let full = sent.csns.csns().is_empty();
    tracing::info!(rid = c.rid, provider = %c.provider, cookie = %sent.to_text(),
        mode = ?c.mode, "syncrepl: connected; refresh starts");
    handle.update(|s| s.state = "refreshing");
    let request = SyncRequest {
        mode: c.mode,
        cookie: Some(sent.to_bytes()),
        reload_hint: false,
    };
    let search = SearchRequest {
        base: c.searchbase.clone().into_bytes(),
        scope: c.scope,
        deref: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter: c.filter.clone(),
        attributes: requested(&c.attrs),
    };
    let control = Control {
        oid: CONTROL_SYNC_REQUEST.to_string(),
        critical: true,
        value: Some(request.encode()),
    };
    let id = conn
        .send(ProtocolOp::SearchRequest(search), vec![control])
        .await
        .map_err(fail)?;
    let mut run = Run {
        db,
        handle,
        base,
        elsewhere: super::elsewhere(db, handle),
        batch: Vec::new(),
        present: HashSet::new(),
        refreshing: true,
        held: None,
        counts: [0; 4],
        replaced: 0,
        spared: 0,
        sent: Default::default(),
        full,
        started: Instant::now(),
        progressed: false,
    };
    let outcome = run.messages(&mut conn, id).await;
    outcome.map_err(|message| Failure {
        message,
        progressed: run.progressed,
    })
}

impl Run<'_> {
    async fn messages(&mut self, conn: &mut Connection, id: i32) -> Result<End, String> {
        let c = &self.handle.consumer;
        let mut answered = false;
        loop {
            // Persist phase: the changes received so far are applied, in one transaction, as soon
            // as no further message is waiting (never before a wait, so a change is never held
            // back); under load that groups many changes per commit (one fsync) instead of one.
            if !self.refreshing
                && (!self.batch.is_empty() || self.held.is_some())
                && (self.batch.len() >= BATCH || !conn.ready())
            {
                self.flush(None).await?;
            }
            // The first answer must come within `timeout`; after that the refresh streams (and a
            // persist phase may stay silent for ever).
            let limit = if answered { None } else { c.timeout };
            let message = conn.recv_timeout(limit).await?;
            answered = true;
            if message.message_id != id {
                if message.message_id == 0 {
                    return Err(format!("the provider sent a notice: {:?}", message.op));
                }
                return Err(format!(
                    "a message for request {} where {id} was expected",
                    message.message_id
                ));
            }
            let LdapMessage { op, controls, .. } = message;
            match op {
                ProtocolOp::SearchResultEntry(entry) => self.entry(entry, &controls).await?,
                ProtocolOp::SearchResultReference(urls) => {
                    tracing::debug!(rid = c.rid, provider = %c.provider, ?urls,
                        "syncrepl: a reference is not replicated");
                }
                ProtocolOp::IntermediateResponse(ir) => {
                    if ir.name.as_deref() != Some(SYNC_INFO) {
                        return Err(format!(
                            "an intermediate response {:?} that is not a Sync Info",
                            ir.name
                        ));
                    }
                    let value = ir.value.unwrap_or_default();
                    let info = SyncInfo::decode(&value)
                        .map_err(|e| format!("undecodable Sync Info: {e}"))?;
                    self.info(info).await?;
                }
                ProtocolOp::SearchResultDone(result) => {
                    return self.done(result, &controls).await;
                }
                other => return Err(format!("unexpected message from the provider: {other:?}")),
            }
        }
    }

    async fn entry(
        &mut self,
        entry: SearchResultEntry,
        controls: &[Control],
    ) -> Result<(), String> {
        let state = controls
            .iter()
            .find(|c| c.oid == CONTROL_SYNC_STATE)
            .ok_or_else(|| "an entry without a Sync State control".to_string())?;
        let state = SyncState::decode(state.value.as_deref().unwrap_or_default())
            .map_err(|e| format!("undecodable Sync State control: {e}"))?;
        let cookie = state
            .cookie
            .as_deref()
            .map(|bytes| {
                Cookie::parse(bytes).map_err(|e| format!("a cookie that does not parse: {e}"))
            })
            .transpose()?;
        tracing::trace!(state = ?state.state, dn = %String::from_utf8_lossy(&entry.dn),
            uuid = %canopy_proto::sync::uuid_to_text(&state.uuid), cookie = cookie.is_some(),
            "syncrepl: received");
        match state.state {
            SyncStateKind::Present => {
                self.present.insert(state.uuid);
            }
            SyncStateKind::Add | SyncStateKind::Modify if self.outside(&entry.dn) => {
                // Another database's entry (a glued subordinate's, which a search of its
                // superior's suffix returns on slapd): its own consumer applies it.
                tracing::trace!(dn = %String::from_utf8_lossy(&entry.dn),
                    "syncrepl: an entry of another database, left to its consumer");
            }
            SyncStateKind::Add | SyncStateKind::Modify => {
                let built = self.build(entry)?;
                self.present.insert(state.uuid);
                if self.refreshing {
                    std::sync::Arc::make_mut(&mut self.sent)
                        .insert(canopy_directory::replica::dn_hash(&built.ndn));
                }
                self.batch.push(ReplicaChange::Put {
                    uuid: state.uuid,
                    entry: built,
                });
            }
            SyncStateKind::Delete => {
                self.batch.push(ReplicaChange::Delete { uuid: state.uuid });
            }
        }
        if !self.refreshing {
            // Applied with what else is waiting (`messages`); a later cookie covers an earlier one.
            if cookie.is_some() {
                self.held = cookie;
            }
        } else if cookie.is_some() || self.batch.len() >= BATCH {
            self.flush(cookie).await?;
        }
        Ok(())
    }

    /// Whether the DN `raw` lies in another of this server's databases inside this one's suffix.
    fn outside(&self, raw: &[u8]) -> bool {
        !self.elsewhere.is_empty()
            && self
                .db
                .normalize(raw)
                .is_ok_and(|(_, ndn)| super::belongs_elsewhere(&self.elsewhere, &ndn))
    }

    /// The received entry as this database stores it.
    fn build(&self, entry: SearchResultEntry) -> Result<canopy_core::Entry, String> {
        let dn_text = String::from_utf8_lossy(&entry.dn).into_owned();
        let described = |e: LdapError| format!("entry {dn_text:?}: {}", e.message);
        let (mut dn, ndn) = self.db.normalize(&entry.dn).map_err(described)?;
        self.db.pretty(&mut dn);
        let attrs: Vec<PartialAttribute> = entry
            .attributes
            .into_iter()
            .filter(|a| {
                let name = a.name.split(';').next().unwrap_or(&a.name);
                !COMPUTED.iter().any(|c| c.eq_ignore_ascii_case(name)) && !a.values.is_empty()
            })
            .collect();
        build_entry(self.db.schema(), dn, ndn, &attrs).map_err(described)
    }

    async fn info(&mut self, info: SyncInfo) -> Result<(), String> {
        let parse = |bytes: Option<Vec<u8>>| -> Result<Option<Cookie>, String> {
            bytes
                .map(|b| {
                    Cookie::parse(&b).map_err(|e| format!("a cookie that does not parse: {e}"))
                })
                .transpose()
        };
        tracing::trace!(info = %describe(&info), "syncrepl: received");
        match info {
            SyncInfo::NewCookie(bytes) => {
                let cookie = parse(Some(bytes))?;
                self.flush(cookie).await
            }
            SyncInfo::RefreshDelete { cookie, done } => {
                let cookie = parse(cookie)?;
                if self.full && self.refreshing && done {
                    // A refresh without a cookie sent everything the provider holds (RFC 4533
                    // assumes the consumer empty and slapd ends it with refreshDeletes): what is
                    // held here and was not sent is not on the provider (a preloaded consumer).
                    self.delete_absent(cookie).await?;
                    self.refresh_ended();
                    return Ok(());
                }
                // Deletes came as such: the present set means nothing (except in a refresh without
                // a cookie, whose end needs it).
                if !self.full {
                    self.present.clear();
                }
                self.flush(cookie).await?;
                if done {
                    self.refresh_ended();
                }
                Ok(())
            }
            SyncInfo::RefreshPresent { cookie, done } => {
                let cookie = parse(cookie)?;
                self.delete_absent(cookie).await?;
                if done {
                    self.refresh_ended();
                }
                Ok(())
            }
            SyncInfo::SyncIdSet {
                cookie,
                refresh_deletes,
                uuids,
            } => {
                let cookie = parse(cookie)?;
                if refresh_deletes {
                    self.batch
                        .extend(uuids.into_iter().map(|uuid| ReplicaChange::Delete { uuid }));
                    self.flush(cookie).await
                } else {
                    self.present.extend(uuids);
                    // A present list's cookie is stored when the present phase ends.
                    Ok(())
                }
            }
        }
    }

    async fn done(
        &mut self,
        result: canopy_proto::LdapResult,
        controls: &[Control],
    ) -> Result<End, String> {
        let c = &self.handle.consumer;
        if result.code.code() == RESULT_SYNC_REFRESH_REQUIRED {
            self.flush(None).await?;
            return Ok(End::RefreshRequired);
        }
        if result.code != ResultCode::Success {
            return Err(format!(
                "the provider ended the search: {:?} {}",
                result.code, result.message
            ));
        }
        let done = match controls.iter().find(|c| c.oid == CONTROL_SYNC_DONE) {
            Some(control) => SyncDone::decode(control.value.as_deref().unwrap_or_default())
                .map_err(|e| format!("undecodable Sync Done control: {e}"))?,
            None => SyncDone::default(),
        };
        let cookie = done
            .cookie
            .as_deref()
            .map(|b| Cookie::parse(b).map_err(|e| format!("a cookie that does not parse: {e}")))
            .transpose()?;
        if !self.refreshing || (done.refresh_deletes && !self.full) {
            self.flush(cookie).await?;
        } else {
            self.delete_absent(cookie).await?;
        }
        if self.refreshing {
            self.refresh_ended();
        }
        if c.mode == SyncMode::RefreshAndPersist {
            return Err("the provider ended the persistent search".into());
        }
        Ok(End::Polled)
    }

    /// The end of a present phase: whatever in scope here the provider did not name is gone.
    async fn delete_absent(&mut self, cookie: Option<Cookie>) -> Result<(), String> {
        self.flush(None).await?;
        let c = &self.handle.consumer;
        let held = {
            let txn = self.db.read().map_err(|e| e.message)?;
            self.db
                .replica_scope_csns(&txn, &self.base, c.scope == SearchScope::SingleLevel)
                .map_err(|e| e.message)?
        };
        // Multi-provider (a writable database with consumers): an entry whose change the provider
        // had not seen when it named what it holds (entryCSN new to its cookie) was written here or
        // by another peer since; it is kept (docs/design/replication.md).
        // An entryCSN of server ID 0 that the cookie does not name predates the group: the peer
        // had it, and not naming it means it deleted it (`CsnSet::is_new_to`).
        let multiprovider = !self.db.is_shadow();
        let held: Vec<[u8; 16]> = held
            .into_iter()
            .filter(|(_, csn)| match (multiprovider, &cookie, csn) {
                (true, Some(cookie), Some(csn)) => !cookie.csns.is_new_to(csn),
                _ => true,
            })
            .map(|(uuid, _)| uuid)
            .collect();
        let base_uuid = if matches!(c.scope, SearchScope::SubordinateSubtree) {
            let txn = self.db.read().map_err(|e| e.message)?;
            self.db
                .replica_scope(&txn, &self.base, true)
                .ok()
                .and_then(|all| all.first().copied())
        } else {
            None
        };
        let total = held.len() as u64;
        for uuid in held {
            if !self.present.contains(&uuid) && Some(uuid) != base_uuid {
                self.batch.push(ReplicaChange::Delete { uuid });
            }
        }
        self.present.clear();
        let before = self.counts[3];
        self.flush(cookie).await?;
        let deleted = self.counts[3] - before;
        if deleted >= 2 && deleted * 2 > total {
            // A refresh that empties most of the database is what a misconfigured provider
            // (wrong searchbase, a filter, an empty server) looks like: loud, and on cn=Monitor.
            let message = format!(
                "the present phase of this refresh deleted {deleted} of the {total} entries held in scope: \
                 the provider does not hold them (check its searchbase, filter and access rules if that is unexpected)"
            );
            tracing::warn!(rid = c.rid, provider = %c.provider, deleted, held = total,
                "syncrepl: {message}");
            self.handle
                .update(|s| s.mass_delete = Some((SystemTime::now(), deleted, total)));
        }
        Ok(())
    }

    fn refresh_ended(&mut self) {
        let c = &self.handle.consumer;
        self.refreshing = false;
        let [a, m, r, d] = self.counts;
        let cookie = self.handle.status().cookie;
        tracing::info!(rid = c.rid, provider = %c.provider, added = a, modified = m, renamed = r,
            deleted = d, replaced = self.replaced, spared = self.spared,
            seconds = self.started.elapsed().as_secs_f64(), %cookie, "syncrepl: refresh ended");
        if self.replaced > 0 {
            tracing::info!(rid = c.rid, provider = %c.provider, entries = self.replaced,
                "syncrepl: entries held here under another entryUUID (loaded from the same data?) took the provider's entryUUID and contents");
        }
        self.sent = Default::default();
        let persisting = c.mode == SyncMode::RefreshAndPersist;
        self.handle.update(|s| {
            s.state = if persisting {
                "persisting"
            } else {
                "refreshing"
            };
            s.last_success = Some(SystemTime::now());
        });
    }

    /// Applies what is pending, with `cookie` when one came (else the persist phase's held one: a
    /// cookie that comes later covers the changes of an earlier one).
    async fn flush(&mut self, cookie: Option<Cookie>) -> Result<(), String> {
        let cookie = cookie.or(self.held.take());
        if self.batch.is_empty() && cookie.is_none() {
            return Ok(());
        }
        let c = &self.handle.consumer;
        let cookie = cookie.map(|mut k| {
            k.rid = Some(c.rid);
            k
        });
        let newest = self.batch.iter().rev().find_map(|change| match change {
            ReplicaChange::Put { entry, .. } => entry
                .get("entryCSN")
                .and_then(|a| a.values.first())
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(canopy_proto::sync::Csn::parse),
            ReplicaChange::Delete { .. } => None,
        });
        // Only batches with deletes need the DNs sent: a batch may outlive this call on the writer
        // thread a moment, and the next insert would then copy the whole set.
        let deletes = self
            .batch
            .iter()
            .any(|c| matches!(c, ReplicaChange::Delete { .. }));
        let sent = if self.refreshing && deletes {
            self.sent.clone()
        } else {
            Default::default()
        };
        let batch = ReplicaBatch {
            rid: c.rid,
            changes: std::mem::take(&mut self.batch),
            cookie: cookie.clone(),
            sent,
            reset_context: self.full && self.refreshing,
        };
        let applied = self.db.apply_replica(batch).await.map_err(|e| {
            format!(
                "applying received changes failed: {:?} {}",
                e.code, e.message
            )
        })?;
        let counts = [
            applied.added,
            applied.modified,
            applied.renamed,
            applied.deleted,
        ];
        self.batch = applied.deferred;
        self.replaced += applied.replaced;
        self.spared += applied.spared;
        for (total, n) in self.counts.iter_mut().zip(counts) {
            *total += n;
        }
        if counts.iter().any(|n| *n > 0) || cookie.is_some() {
            self.progressed = true;
        }
        if applied.merged > 0 || applied.merge_fallbacks > 0 {
            tracing::debug!(rid = c.rid, provider = %c.provider, merged = applied.merged,
                fallbacks = applied.merge_fallbacks,
                "syncrepl: concurrent versions merged attribute by attribute");
        }
        if let Some(csn) = &applied.own_sid_ahead {
            let message = format!(
                "the provider holds {csn}, a change with this server's own server_id that this server \
                 never made: another server of the group has the same server_id, or this one was \
                 restored from an old backup (docs/replication.md, Safety)"
            );
            tracing::error!(rid = c.rid, provider = %c.provider, %message, "syncrepl: duplicate server ID");
            self.handle
                .update(|s| s.last_error = Some((SystemTime::now(), message.clone())));
        }
        if let Some(ahead) = newest.as_ref().and_then(csn_ahead) {
            let warn = self
                .handle
                .status()
                .future_warned
                .is_none_or(|at| at.elapsed().map_or(true, |d| d.as_secs() >= 60));
            if warn {
                tracing::warn!(rid = c.rid, provider = %c.provider, seconds_ahead = ahead,
                    "syncrepl: a change from the future: the provider's clock (or its peer's) is ahead of this server's; its writes win conflicts until the clocks meet (docs/replication.md, Safety)");
                self.handle
                    .update(|s| s.future_warned = Some(SystemTime::now()));
            }
        }
        let lag = newest.and_then(|csn| csn_age(&csn));
        let persisting = !self.refreshing;
        let (skipped, merged, fallbacks) =
            (applied.skipped, applied.merged, applied.merge_fallbacks);
        let (replaced, spared) = (applied.replaced, applied.spared);
        self.handle.update(|s| {
            s.skipped += skipped;
            s.replaced += replaced;
            s.spared += spared;
            s.merged += merged;
            s.merge_fallbacks += fallbacks;
            for (total, n) in s.counts.iter_mut().zip(counts) {
                *total += n;
            }
            if let Some(cookie) = &cookie {
                s.cookie = cookie.to_text();
            }
            if lag.is_some() {
                s.lag = lag;
            }
            if persisting {
                s.last_success = Some(SystemTime::now());
            }
        });
        Ok(())
    }
}

/// The attributes asked for: the configured ones, and when they are all of them (`*` and `+`), the
/// per-attribute CSNs a Canopy provider keeps (a slapd provider knows no such attribute and sends
/// nothing for it), so that concurrent changes merge attribute by attribute
/// (docs/design/replication.md). A partial list stays entry level: a merge would take the attributes
/// not sent for deleted.
fn requested(attrs: &[String]) -> Vec<String> {
    let mut attrs = attrs.to_vec();
    if attrs.iter().any(|a| a == "*") && attrs.iter().any(|a| a == "+") {
        attrs.push(canopy_directory::attrcsn::ATTR_CSN.to_string());
    }
    attrs
}

/// Seconds by which a CSN's time is ahead of this server's clock, when that is more than a minute.
fn csn_ahead(csn: &canopy_proto::sync::Csn) -> Option<u64> {
    let offset = csn_offset(csn)?;
    (offset < -60.0).then_some((-offset) as u64)
}

/// Seconds from a CSN's time to now.
fn csn_age(csn: &canopy_proto::sync::Csn) -> Option<f64> {
    csn_offset(csn).map(|age| age.max(0.0))
}

/// Seconds from a CSN's time to now (negative for a CSN from the future).
fn csn_offset(csn: &canopy_proto::sync::Csn) -> Option<f64> {
    let text = csn.as_str();
    let digits = |r: std::ops::Range<usize>| text.get(r).and_then(|s| s.parse::<i64>().ok());
    let (y, mo, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (h, mi, s) = (digits(8..10)?, digits(10..12)?, digits(12..14)?);
    let micros = digits(15..21)?;
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3_600 + mi * 60 + s;
    let then = secs as f64 + micros as f64 / 1e6;
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    Some(now - then)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A Sync Info message in a log line: its kind, its cookie, the count of a syncIdSet's entryUUIDs.
fn describe(info: &SyncInfo) -> String {
    let text = |c: &Option<Vec<u8>>| {
        c.as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    match info {
        SyncInfo::NewCookie(c) => format!("newCookie {}", String::from_utf8_lossy(c)),
        SyncInfo::RefreshDelete { cookie, done } => {
            format!("refreshDelete done={done} cookie={}", text(cookie))
        }
        SyncInfo::RefreshPresent { cookie, done } => {
            format!("refreshPresent done={done} cookie={}", text(cookie))
        }
        SyncInfo::SyncIdSet {
            cookie,
            refresh_deletes,
            uuids,
        } => format!(
            "syncIdSet refreshDeletes={refresh_deletes} uuids={} cookie={}",
            uuids.len(),
            text(cookie)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        let old =
            canopy_proto::sync::Csn::parse("20000101000000.000000Z#000000#000#000000").unwrap();
        assert!(csn_age(&old).unwrap() > 8.0e8);
        assert_eq!(csn_ahead(&old), None);
        let future =
            canopy_proto::sync::Csn::parse("29991231000000.000000Z#000000#000#000000").unwrap();
        assert!(csn_ahead(&future).unwrap() > 1_000_000);
        assert_eq!(csn_age(&future), Some(0.0));
    }
}
