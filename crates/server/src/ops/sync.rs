//! RFC 4533 sync searches, the provider half (slapd's syncprov, built in): refreshOnly and
//! refreshAndPersist from a cookie, with the session log's deletes or the present phase, then the
//! persist phase that follows the database's change feed (docs/replication.md).
//!
//! A sync search runs on a blocking thread of its own: its refresh streams like any search into the
//! connection's bounded queue, and its persist phase waits on its bounded feed subscription, so a
//! consumer that stops reading is dropped by the feed instead of holding up a writer.

use std::sync::atomic::Ordering;
use std::time::Duration;

use canopy_core::filter::{evaluate, PreparedFilter, Ternary};
use canopy_core::wire::StoredEntry;
use canopy_core::{Entry, LdapError};
use canopy_directory::feed::{Change, Next, FEED_QUEUE};
use canopy_directory::search::{Query, Subentries};
use canopy_directory::search_loop::{Reader, Requester, Room, Tested};
use canopy_directory::LogReplay;
use canopy_directory::{Kind, Origin, Snapshot};
use canopy_proto::sync::{
    uuid_from_text, Cookie, Csn, CsnSet, SyncDone, SyncInfo, SyncMode, SyncRequest, SyncState,
    SyncStateKind, CONTROL_SYNC_DONE, CONTROL_SYNC_STATE, RESULT_SYNC_REFRESH_REQUIRED, SYNC_INFO,
};
use canopy_proto::{
    Control, Filter, IntermediateResponse, LdapResult, PartialAttribute, ProtocolOp, ResultCode,
    SearchResultEntry, SearchScope,
};
use canopy_schema::{NormDn, Schema};

use super::search::{Outcome, SearchJob};
use super::{encode, error_result};
use crate::acl::ops::hide_matched;
use crate::acl::Seen;
use crate::databases::Database;
use crate::filter_view::as_slapd_sees;
use crate::readentry::load;
use crate::select::Selection;

/// Present entries sent per syncIdSet message (slapd's `SLAP_SYNCUUID_SET_SIZE`).
const ID_SET_SIZE: usize = 100;

/// How often a persistent search looks at its abandon flag while no change comes.
const PERSIST_POLL: Duration = Duration::from_millis(200);

/// Why a sync search stopped.
enum Stop {
    Error(LdapError),
    /// Abandoned or disconnected: send nothing more.
    Silent,
}

impl From<LdapError> for Stop {
    fn from(e: LdapError) -> Stop {
        Stop::Error(e)
    }
}

/// What a refresh's consumer knows.
enum Known {
    /// No cookie (or one without CSNs): everything is sent, the refresh ends with refreshPresent.
    Nothing,
    /// A cookie whose CSNs cover the contextCSN: nothing changed.
    Current,
    /// Changes since the cookie, the deletes from the session log.
    Log(Vec<Gone>),
    /// Changes since the cookie; the rest of the scope named present (the log does not reach back).
    Present,
}

/// An entry the session log tells a consumer to delete: its entryUUID, the CSN of the delete (or of
/// the rename out of the scope), and the depth of its DN then.
struct Gone {
    uuid: [u8; 16],
    csn: Csn,
    depth: usize,
}

struct Sync<'a> {
    job: &'a SearchJob,
    db: &'a Database,
    schema: &'a Schema,
    base: NormDn,
    filter: Filter,
    selection: Selection,
    /// The consumer's replica ID, echoed in every cookie (0 when it sent none, as slapd's `rid=000`).
    rid: u16,
    entries: u64,
    /// The size limit of the refresh's entries.
    size: Option<u64>,
}

/// Runs a search carrying the Sync Request control to its end (refreshOnly) or until it is abandoned,
/// its connection closes or it falls behind (refreshAndPersist).
pub fn run(job: SearchJob, request: SyncRequest) -> Outcome {
    job.state
        .metrics
        .sync_searches
        .fetch_add(1, Ordering::Relaxed);
    let mut entries = 0;
    let code = match serve(&job, &request, &mut entries) {
        Ok(Some(done)) => send(&job, done.0).map(|()| done.1),
        Ok(None) => None,
        Err(Stop::Silent) => None,
        Err(Stop::Error(e)) => {
            let code = e.code;
            let result = error_result(e);
            send(
                &job,
                encode(
                    job.message_id,
                    ProtocolOp::SearchResultDone(result),
                    Vec::new(),
                ),
            )
            .map(|()| code)
        }
    };
    Outcome {
        code,
        entries,
        references: 0,
        unindexed: false,
    }
}

fn send(job: &SearchJob, message: Vec<u8>) -> Option<()> {
    job.tx.as_ref()?.blocking_send(message).ok()
}

/// The search: Some((SearchResultDone, its code)) to send last, None when nothing more is to be sent.
/// Whether the current snapshot runs another schema than `state`, the one a search started under.
fn schema_changed(state: &crate::state::State) -> bool {
    !std::sync::Arc::ptr_eq(state.current().databases.schema(), state.databases.schema())
}

fn serve(
    job: &SearchJob,
    request: &SyncRequest,
    entries: &mut u64,
) -> Result<Option<(Vec<u8>, ResultCode)>, Stop> {
    let state = &job.state;
    let cookie = request.cookie.as_deref().map(lenient_cookie);
    let (base_dn, base) = state.databases.normalize(&job.req.base)?;
    let Some(db) = state.databases.route(&base) else {
        return Err(state.outside_naming_context(&base).into());
    };
    // cn=Monitor has no syncprov; a read-only database that does (the accesslog's log) serves.
    if state.backend(db).is_some_and(|b| !b.provides_sync()) {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "this database is not a sync provider",
        )
        .into());
    }
    let persist = request.mode == SyncMode::RefreshAndPersist;
    // Subscribed before the snapshot is taken: a change committed after it reaches the feed.
    let subscription = persist.then(|| db.feed().subscribe(FEED_QUEUE));
    let txn = db.read()?;
    let context = db.context_csn(&txn)?;
    let query = Query {
        scope: job.req.scope,
        deref: job.req.deref,
        manage_dsa_it: true,
        filter: &job.req.filter,
        subentries: Subentries::All,
    };
    let found = match db.search_base(&txn, base_dn.into(), base.clone().into(), &query) {
        Ok(found) => found,
        Err(canopy_directory::OpError::Ldap(e)) => {
            return Err(hide_matched(db, &txn, &job.who, e).into())
        }
        Err(canopy_directory::OpError::Referral(r)) => {
            let result = r.into_result();
            let code = result.code;
            return Ok(Some((
                encode(
                    job.message_id,
                    ProtocolOp::SearchResultDone(result),
                    Vec::new(),
                ),
                code,
            )));
        }
    };
    // The identity's size limit applies to the refresh, as slapd's to a syncrepl session: give the
    // replication identity `size = "unlimited"` (docs/replication.md).
    let size = crate::limits::lower_only(
        job.req.size_limit,
        crate::limits::SearchLimits::of(&state.config.limits, db, &job.who, &txn)?.size,
    );
    let rid = cookie.as_ref().and_then(|c| c.rid).unwrap_or(0);
    let mut sync = Sync::new(job, db, (*found.ndn).clone(), rid, size);
    let since = cookie.map(|c| c.csns).unwrap_or_default();
    // A plain consumer that never finished a refresh from its provider holds what it was loaded
    // with, not the provider's content: serving that to consumers of its own would pass on entries
    // under entryUUIDs the provider does not know, which its next refresh replaces and deletes
    // (found by the replication harness, seed 97: a slapd consumer below a middle server loaded
    // with other data lost 94 entries). Its consumers retry until the first refresh has ended.
    if !db.multiprovider() {
        let consumers: Vec<_> = state
            .syncrepl
            .iter()
            .filter(|h| h.directory == db.directory())
            .collect();
        let refreshed = consumers.iter().any(|h| h.refreshed())
            || consumers.iter().try_fold(false, |found, h| {
                Ok::<_, LdapError>(found || db.replica_cookie(&txn, h.consumer.rid)?.is_some())
            })?;
        if !consumers.is_empty() && !refreshed {
            tracing::info!(
                "sync search refused: this consumer has not finished a refresh from its provider yet"
            );
            return Err(LdapError::new(
                ResultCode::Busy,
                "this server has not finished its first refresh from its provider: try again later",
            )
            .into());
        }
    }
    // A cookie ahead of this database for a server ID it knows: this database went back (restored
    // from a backup, or a consumer whose first refresh set its contextCSN to its own provider's,
    // below the import's it had served from). Changes it holds may sort below that cookie, so no
    // refresh by cookie would send them: the consumer must reload (e-syncRefreshRequired; it asks
    // again without a cookie). slapd refuses such a consumer until its next write instead. Not
    // between multi-provider peers, whose cookies run ahead legitimately (a peer's own writes, a
    // third server's changes that reached the peer first).
    let ahead = (!db.multiprovider())
        .then(|| {
            since
                .csns()
                .iter()
                .find(|c| context.get(c.sid()).is_some_and(|ours| *c > ours))
        })
        .flatten();
    if let Some(ahead) = ahead {
        tracing::info!(cookie = %ahead.as_str(),
            "sync search: the consumer's cookie is ahead of this database; it must reload");
        return Ok(Some(refresh_required(
            job,
            "the consumer's cookie is ahead of this database: refresh without a cookie",
        )));
    }
    let known = if since.is_empty() {
        Known::Nothing
    } else if since.covers(&context) {
        Known::Current
    } else {
        match db.replay_log(&txn, &since)? {
            LogReplay::Complete(records) => Known::Log(sync.deleted(&records)),
            LogReplay::TooOld => Known::Present,
        }
    };
    let present = matches!(known, Known::Nothing | Known::Present);
    let how = match &known {
        Known::Nothing => "full",
        Known::Current => "current",
        Known::Log(_) => "session log",
        Known::Present => "present phase",
    };
    let result = sync.refresh(&txn, &found, &since, known);
    *entries = sync.entries;
    result?;
    tracing::debug!(
        base = %found.ndn.as_str(),
        persist,
        refresh = how,
        entries = sync.entries,
        "sync search: refresh done"
    );
    drop(txn);
    let cookie = sync.cookie(&context);
    let Some(subscription) = subscription else {
        let done = SyncDone {
            cookie: Some(cookie),
            refresh_deletes: !present,
        };
        let control = Control {
            oid: CONTROL_SYNC_DONE.to_string(),
            critical: false,
            value: Some(done.encode()),
        };
        return Ok(Some((
            encode(
                job.message_id,
                ProtocolOp::SearchResultDone(LdapResult::success()),
                vec![control],
            ),
            ResultCode::Success,
        )));
    };
    let info = if present {
        SyncInfo::RefreshPresent {
            cookie: Some(cookie),
            done: true,
        }
    } else {
        SyncInfo::RefreshDelete {
            cookie: Some(cookie),
            done: true,
        }
    };
    sync.info(&info)?;
    // The persist phase: every change after the snapshot, in commit order, each with its cookie.
    let mut running = context.clone();
    loop {
        if job.cancel.load(Ordering::Relaxed) || job.tx.as_ref().is_none_or(|tx| tx.is_closed()) {
            *entries = sync.entries;
            return Ok(None);
        }
        match subscription.next(PERSIST_POLL) {
            Next::Idle => continue,
            Next::Dropped => {
                *entries = sync.entries;
                state.metrics.sync_dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(refresh_required(
                    job,
                    "the consumer fell behind; refresh with the last cookie",
                )));
            }
            Next::Change(change) if change.context.is_some() => {
                // A replicated batch raised this database's contextCSN: its changes went out before
                // this, so the consumer may take the raised CSNs as its cookie (cascading).
                let mut raised = false;
                for csn in change.context.iter().flat_map(|c| c.csns()) {
                    raised |= running.observe(csn);
                }
                if raised {
                    let result = sync.info(&SyncInfo::NewCookie(sync.cookie(&running)));
                    *entries = sync.entries;
                    result?;
                }
            }
            Next::Change(change) => {
                // A local change advances the cookie (local CSNs ascend in commit order) unless the
                // refresh's snapshot already held it. A replicated one is sent without a cookie: its
                // entryCSN says nothing of the order it arrived in (a refresh sends entries in no CSN
                // order), so it can neither be skipped nor advance the cookie; the newcookie that
                // follows its batch (above) covers it. The cookie as it was would not do: slapd's
                // consumer drops a change whose cookie is not newer than its own ("CSN too old"),
                // which lost every change at a slapd below a Canopy consumer (issue 30). A consumer
                // that sees a change twice applies it twice, harmlessly.
                // A local change's cookie carries its own CSN alone, as slapd's syncprov sends it: a
                // slapd consumer checks the cookie's first CSN against what it holds for that CSN's
                // server ID, so a whole set (sorted by server ID) made it compare another server's
                // CSN and drop the change as "CSN too old" in a group with slapd. Consumers merge
                // cookies per server ID.
                let cookie = match (change.origin, &change.csn) {
                    (Origin::Local, Some(csn)) => {
                        if !context.is_new(csn) {
                            continue;
                        }
                        running.observe(csn);
                        let mut own = canopy_proto::sync::CsnSet::new();
                        own.observe(csn);
                        Some(sync.cookie(&own))
                    }
                    (Origin::Local, None) => Some(sync.cookie(&running)),
                    _ => None,
                };
                let result = match schema_changed(state) {
                    false => sync.change(&change, cookie),
                    // The schema changed live (cn=config) since the search started: the change is
                    // read under the current snapshot's, which knows what the entry uses.
                    true => {
                        let now = state.current();
                        match now.databases.route(&sync.base) {
                            None => Ok(()),
                            Some(db) => {
                                let mut current =
                                    Sync::new(job, db, sync.base.clone(), sync.rid, sync.size);
                                current.entries = sync.entries;
                                let result = current.change(&change, cookie);
                                sync.entries = current.entries;
                                result
                            }
                        }
                    }
                };
                *entries = sync.entries;
                result?;
            }
        }
    }
}

/// The backend's search loop as a refresh runs it: each entry loaded as the consumer's identity may
/// read it, the filter tested on that, and an entry changed since the cookie sent, an unchanged one
/// named in the present phase's syncIdSets instead.
struct Refresh<'r, 'a> {
    sync: &'r mut Sync<'a>,
    /// The database scanned: the session's, or one glued into it whose entries are only named.
    db: &'r Database,
    /// Every matching entry is named present, none sent (a glued database's entries).
    names_only: bool,
    txn: &'r Snapshot,
    since: &'r CsnSet,
    /// The present phase's entryUUIDs not yet sent, when the refresh has one.
    present: &'r mut Option<Vec<[u8; 16]>>,
    /// The entry judged last, as the consumer may read it, and its entryUUID once it matched.
    judged: Option<(Seen, Option<[u8; 16]>)>,
}

impl Requester for Refresh<'_, '_> {
    fn finds(
        &mut self,
        _ndn: &NormDn,
        _stored: &StoredEntry<'_>,
        _filter: &PreparedFilter<'_>,
        _computed: &[canopy_core::Attribute],
    ) -> bool {
        // A refresh reads entries as stored: no read hook expands them.
        false
    }

    fn reads(&mut self, _ndn: &NormDn, _stored: &StoredEntry<'_>, _desc: &str) -> bool {
        false
    }
}

impl Reader for Refresh<'_, '_> {
    type Error = Stop;

    fn needs_ndn(&self) -> bool {
        false
    }

    fn needs_computed(&self) -> bool {
        // The loaded entry carries its own.
        false
    }

    fn examined(&mut self, count: u64) -> Result<(), Stop> {
        if count.is_multiple_of(64) && self.sync.job.cancel.load(Ordering::Relaxed) {
            return Err(Stop::Silent);
        }
        Ok(())
    }

    fn reference(&mut self, _urls: Vec<String>) -> Result<(), Stop> {
        // A sync search runs with ManageDsaIT: referral objects are entries.
        Ok(())
    }

    fn judge(
        &mut self,
        id: u64,
        _ndn: Option<&NormDn>,
        _stored: &StoredEntry<'_>,
    ) -> Result<(), Stop> {
        let db = self.db;
        self.judged = match db.stored(self.txn, id)? {
            Some(bytes) => Some((load(db, self.txn, &self.sync.job.who, id, bytes)?, None)),
            None => None,
        };
        Ok(())
    }

    fn clears(&mut self, _shown: &StoredEntry<'_>) -> bool {
        // Nothing readable: not the requester's to replicate.
        self.judged
            .as_ref()
            .is_some_and(|(seen, _)| !seen.entry().attrs.is_empty())
    }

    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        _computed: &[canopy_core::Attribute],
        _tested: Option<&Tested<'_, '_>>,
    ) -> Result<bool, Stop> {
        let Some((seen, uuid_of)) = &mut self.judged else {
            return Ok(false);
        };
        if !self.sync.matches(seen.entry(), seen.computed()) {
            return Ok(false);
        }
        let full = shown
            .to_entry()
            .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
        let Some(uuid) = text_of(&full, "entryUUID").and_then(|t| uuid_from_text(&t)) else {
            return Ok(false);
        };
        let csn = text_of(&full, "entryCSN").and_then(|t| Csn::parse(&t));
        let changed = !self.names_only
            && match &csn {
                Some(csn) => self.since.is_empty() || self.since.is_new_to(csn),
                None => true,
            };
        if changed {
            *uuid_of = Some(uuid);
            return Ok(true);
        }
        if let Some(list) = self.present.as_mut() {
            list.push(uuid);
            if list.len() >= ID_SET_SIZE {
                let uuids = std::mem::take(list);
                self.sync.info(&SyncInfo::SyncIdSet {
                    cookie: None,
                    refresh_deletes: false,
                    uuids,
                })?;
            }
        }
        Ok(false)
    }

    fn send(
        &mut self,
        _shown: &StoredEntry<'_>,
        _computed: &[canopy_core::Attribute],
    ) -> Result<(), Stop> {
        let Some((seen, Some(uuid))) = self.judged.take() else {
            return Ok(());
        };
        let entry = seen.entry();
        let attrs = self.sync.selected(entry, seen.computed());
        self.sync
            .entry(&entry.dn.to_string(), attrs, SyncStateKind::Add, uuid, None)
    }
}

impl<'a> Sync<'a> {
    /// A session's state on `db`, with the filter and attribute selection read under its schema.
    fn new(
        job: &'a SearchJob,
        db: &'a Database,
        base: NormDn,
        rid: u16,
        size: Option<u64>,
    ) -> Sync<'a> {
        let schema = db.schema();
        Sync {
            job,
            db,
            schema,
            base,
            filter: as_slapd_sees(schema, &job.req.filter).into_owned(),
            selection: Selection::parse(schema, &job.req.attributes),
            rid,
            entries: 0,
            size,
        }
    }

    /// The cookie of `csns`, with the consumer's rid and this server's ID (when it has one).
    fn cookie(&self, csns: &CsnSet) -> Vec<u8> {
        let sid = self.db.server_id();
        Cookie {
            rid: Some(self.rid),
            sid: (sid != 0).then_some(sid),
            csns: csns.clone(),
        }
        .to_bytes()
    }

    /// The entries the session log's records tell a consumer to delete: entries deleted in the scope
    /// and entries renamed out of it, each once, unless its last record brings it back into the scope.
    ///
    /// In CSN order, and deepest first among those of one CSN (one write, or one batch a consumer
    /// applied): children before their parents (`refresh` sends one syncIdSet per CSN, reversed).
    fn deleted(&self, records: &[canopy_directory::LogRecord]) -> Vec<Gone> {
        // The last record of each entryUUID decides: renamed within the scope after all, it stays.
        let mut last: std::collections::HashMap<[u8; 16], Option<Gone>> =
            std::collections::HashMap::new();
        for record in records {
            let Ok((_, old)) = self.db.normalize(record.old_dn.as_bytes()) else {
                continue;
            };
            let stays = record
                .new_dn
                .as_deref()
                .is_some_and(|new| self.dn_in_scope(new));
            if !self.in_scope(&old) {
                // Renamed into the scope: sent as an entry, not a delete.
                if stays {
                    last.insert(record.uuid, None);
                }
                continue;
            }
            let gone = (!stays).then(|| Gone {
                uuid: record.uuid,
                csn: record.csn.clone(),
                depth: old.rdns().len(),
            });
            last.insert(record.uuid, gone);
        }
        let mut out: Vec<Gone> = last.into_values().flatten().collect();
        out.sort_by(|a, b| {
            (a.csn.cmp(&b.csn))
                .then(b.depth.cmp(&a.depth))
                .then(a.uuid.cmp(&b.uuid))
        });
        out
    }

    fn dn_in_scope(&self, dn: &str) -> bool {
        match self.db.normalize(dn.as_bytes()) {
            Ok((_, ndn)) => self.in_scope(&ndn),
            Err(_) => false,
        }
    }

    fn in_scope(&self, ndn: &NormDn) -> bool {
        match self.job.req.scope {
            SearchScope::BaseObject => *ndn == self.base,
            SearchScope::SingleLevel => ndn.parent().as_ref() == Some(&self.base),
            SearchScope::WholeSubtree => self.base.is_suffix_of(ndn),
            SearchScope::SubordinateSubtree => self.base.is_suffix_of(ndn) && *ndn != self.base,
        }
    }

    fn matches(&self, entry: &Entry, computed: &[canopy_core::Attribute]) -> bool {
        evaluate(self.schema, entry, computed, &self.filter) == Ternary::True
    }

    fn info(&self, info: &SyncInfo) -> Result<(), Stop> {
        let op = ProtocolOp::IntermediateResponse(IntermediateResponse {
            name: Some(SYNC_INFO.to_string()),
            value: Some(info.encode()),
        });
        send(self.job, encode(self.job.message_id, op, Vec::new())).ok_or(Stop::Silent)
    }

    /// Sends an entry (its selected attributes; none for a delete) with its Sync State control.
    fn entry(
        &mut self,
        dn: &str,
        attrs: Vec<PartialAttribute>,
        state: SyncStateKind,
        uuid: [u8; 16],
        cookie: Option<Vec<u8>>,
    ) -> Result<(), Stop> {
        let control = Control {
            oid: CONTROL_SYNC_STATE.to_string(),
            critical: false,
            value: Some(
                SyncState {
                    state,
                    uuid,
                    cookie,
                }
                .encode(),
            ),
        };
        let op = ProtocolOp::SearchResultEntry(SearchResultEntry {
            dn: dn.as_bytes().to_vec(),
            attributes: attrs,
        });
        send(self.job, encode(self.job.message_id, op, vec![control])).ok_or(Stop::Silent)?;
        self.entries += 1;
        Ok(())
    }

    /// The attributes of a readable entry the search selected.
    fn selected(
        &self,
        entry: &Entry,
        computed: &[canopy_core::Attribute],
    ) -> Vec<PartialAttribute> {
        let mut out = Vec::new();
        for attr in &entry.attrs {
            if self.selection.wants(self.schema, &attr.desc) {
                out.push(PartialAttribute {
                    name: attr.desc.clone(),
                    values: if self.job.req.types_only {
                        Vec::new()
                    } else {
                        attr.values.clone()
                    },
                });
            }
        }
        // The contextCSN of the suffix entry travels in cookies only: a consumer raises its own with
        // the cookies of what it has applied (docs/design/replication.md).
        for attr in computed.iter().filter(|a| a.desc != "contextCSN") {
            if self.selection.wants_computed(&attr.desc) {
                out.push(PartialAttribute {
                    name: attr.desc.clone(),
                    values: attr.values.clone(),
                });
            }
        }
        out
    }

    /// The refresh phase in the snapshot `txn`.
    fn refresh(
        &mut self,
        txn: &Snapshot,
        found: &canopy_directory::alias::Base,
        since: &CsnSet,
        known: Known,
    ) -> Result<(), Stop> {
        // The session log's deletes go after the entries: an entry replaced in place by one of
        // another entryUUID at its DN (rule 2, docs/design/replication.md) is logged as a delete
        // of the old entryUUID, and a consumer that took that delete first would delete the
        // subtree below the DN before the new entry came to take its place.
        // A refresh that ends with a present phase (a full one included) leaves the consumer to
        // delete what it holds in scope and was not named.
        let ends_present = matches!(known, Known::Nothing | Known::Present);
        let (mut present, deleted) = match known {
            Known::Current => return Ok(()),
            Known::Nothing => (None, Vec::new()),
            Known::Present => (Some(Vec::new()), Vec::new()),
            Known::Log(deleted) => (None, deleted),
        };
        let every = Filter::Present("objectClass".into());
        let query = Query {
            scope: self.job.req.scope,
            deref: self.job.req.deref,
            manage_dsa_it: true,
            filter: if present.is_some() {
                &every
            } else {
                &self.job.req.filter
            },
            subentries: Subentries::All,
        };
        let db = self.db;
        let scan = db.plan_scan(txn, &query, found)?;
        let room = Room {
            size: self
                .size
                .map(|limit| usize::try_from(limit.saturating_sub(self.entries)).unwrap_or(0)),
            page: None,
        };
        let mut reader = Refresh {
            sync: self,
            db,
            names_only: false,
            txn,
            since,
            present: &mut present,
            judged: None,
        };
        scan.run(db.backend(), txn, &mut reader, room)?;
        if ends_present {
            self.name_glued(&query, found, since, &mut present)?;
        }
        if let Some(uuids) = present.filter(|l| !l.is_empty()) {
            self.info(&SyncInfo::SyncIdSet {
                cookie: None,
                refresh_deletes: false,
                uuids,
            })?;
        }
        // One syncIdSet per CSN, as slapd's provider sends them, with a cookie naming the CSN in
        // `delcsn` (the consumer's own CSNs otherwise): slapd's consumer deletes under that CSN, so
        // its session log hands the deletes on to its own consumers (without it, under its older
        // cookie's CSN, which they have seen: found by the replication harness, seed 107).
        // slapd's consumer deletes a syncIdSet's entries in the reverse of their order (it lists
        // them head first) and turns a parent it meets before its children into glue, which stays
        // and which it never tells its own consumers of (seed 87): each message lists parents
        // first. (Canopy's consumer takes any order: a parent's delete removes what is below it.)
        let mut rest = &deleted[..];
        while let Some(first) = rest.first() {
            let same = rest
                .iter()
                .take(ID_SET_SIZE)
                .take_while(|gone| gone.csn == first.csn)
                .count();
            let (set, after) = rest.split_at(same);
            let mut cookie = self.cookie(since);
            cookie.extend_from_slice(format!(",delcsn={}", first.csn.as_str()).as_bytes());
            self.info(&SyncInfo::SyncIdSet {
                cookie: Some(cookie),
                refresh_deletes: true,
                uuids: set.iter().rev().map(|gone| gone.uuid).collect(),
            })?;
            rest = after;
        }
        Ok(())
    }

    /// Names present the entries of the databases glued into this one within the refresh's scope
    /// (the consumer may read them and the filter takes them), as slapd's provider names them in a
    /// superior's present phase: a slapd consumer of the superior deletes, at the end of a present
    /// phase, what its glued tree holds and the provider did not name, the glued subordinate's
    /// entries (which that subordinate's own consumer keeps) included. Found by the replication
    /// harness (seed 7 with a glued database: a slapd consumer of a Canopy provider lost them).
    fn name_glued(
        &mut self,
        query: &Query<'_>,
        found: &canopy_directory::alias::Base,
        since: &CsnSet,
        present: &mut Option<Vec<[u8; 16]>>,
    ) -> Result<(), Stop> {
        let state = &self.job.state;
        let glued = state.databases.glued(self.db, &found.ndn, query.scope);
        for (part, scope) in glued {
            let txn = part.read()?;
            let part_query = Query { scope, ..*query };
            let dn = std::sync::Arc::new(part.suffix_dn().clone());
            let ndn = std::sync::Arc::new(part.suffix().clone());
            // A glued database without its suffix entry names nothing.
            let Ok(base) = part.search_base(&txn, dn, ndn, &part_query) else {
                continue;
            };
            let scan = part.plan_scan(&txn, &part_query, &base)?;
            let names = present.get_or_insert_with(Vec::new);
            let mut reader = Refresh {
                sync: self,
                db: part,
                names_only: true,
                txn: &txn,
                since,
                present: &mut Some(std::mem::take(names)),
                judged: None,
            };
            let room = Room {
                size: None,
                page: None,
            };
            scan.run(part.backend(), &txn, &mut reader, room)?;
            *names = reader.present.take().unwrap_or_default();
        }
        Ok(())
    }

    /// One change of the persist phase.
    fn change(&mut self, change: &Change, cookie: Option<Vec<u8>>) -> Result<(), Stop> {
        let Some(uuid) = change.uuid else {
            return Ok(());
        };
        // Whether the consumer may hold the entry: it was in the scope. (Whether it matched the filter
        // is not known: a delete of an entry a consumer never had is ignored.)
        let held = change
            .old_dn
            .as_deref()
            .is_some_and(|dn| self.dn_in_scope(dn));
        let gone_dn = change.old_dn.clone();
        if change.kind == Kind::Delete {
            if held {
                if let Some(dn) = gone_dn {
                    self.entry(&dn, Vec::new(), SyncStateKind::Delete, uuid, cookie)?;
                }
            }
            return Ok(());
        }
        // The entry as the change stored it (slapd's syncprov sends its own copy of it), so a search
        // that fell behind still sends every change's own state and DN. Access control and the
        // computed attributes are decided now, in the current snapshot, as slapd decides them when
        // it sends. A change published without its entry (the search subscribed while the write was
        // under way, or the feed's FEED_BYTES were taken) is read as it is now.
        let txn = self.db.read()?;
        let bytes = match &change.entry {
            Some(carried) => carried.bytes(),
            None => match self.db.stored(&txn, change.id)? {
                Some(bytes) => bytes,
                // Deleted since: its delete follows in the feed.
                None => return Ok(()),
            },
        };
        let seen = load(self.db, &txn, &self.job.who, change.id, bytes)?;
        let entry = seen.entry();
        let ndn = self.schema.normalize_dn(&entry.dn).ok();
        let now = ndn.as_ref().is_some_and(|n| self.in_scope(n))
            && !entry.attrs.is_empty()
            && self.matches(entry, seen.computed());
        if now {
            let state = if change.kind == Kind::Add {
                SyncStateKind::Add
            } else {
                SyncStateKind::Modify
            };
            let attrs = self.selected(entry, seen.computed());
            self.entry(&entry.dn.to_string(), attrs, state, uuid, cookie)?;
        } else if held {
            let dn = gone_dn.unwrap_or_else(|| entry.dn.to_string().into());
            self.entry(&dn, Vec::new(), SyncStateKind::Delete, uuid, cookie)?;
        }
        Ok(())
    }
}

/// The SearchResultDone that ends a sync search with e-syncRefreshRequired (4096), and its code.
fn refresh_required(job: &SearchJob, message: &str) -> (Vec<u8>, ResultCode) {
    let code = ResultCode::Unknown(RESULT_SYNC_REFRESH_REQUIRED);
    let result = LdapResult::new(code, message);
    let done = encode(
        job.message_id,
        ProtocolOp::SearchResultDone(result),
        Vec::new(),
    );
    (done, code)
}

/// The consumer's cookie as slapd's syncprov takes one: a cookie that does not parse is no cookie (a full
/// refresh follows), keeping its `rid` when that field is sound.
fn lenient_cookie(bytes: &[u8]) -> Cookie {
    match Cookie::parse(bytes) {
        Ok(cookie) => cookie,
        Err(e) => {
            tracing::info!(error = %e, "sync search: the cookie does not parse; full refresh");
            let text = String::from_utf8_lossy(bytes);
            let rid = text
                .split(',')
                .filter_map(|field| field.strip_prefix("rid="))
                .find_map(|rid| rid.parse::<u16>().ok().filter(|r| *r <= 999));
            Cookie {
                rid,
                ..Cookie::default()
            }
        }
    }
}

fn text_of(entry: &Entry, attr: &str) -> Option<String> {
    let value = entry.get(attr)?.values.first()?;
    String::from_utf8(value.clone()).ok()
}
