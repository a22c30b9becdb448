//! delta-syncrepl (slapd's `syncdata=accesslog`): a consumer that follows the provider's access log at
//! `logbase` instead of its data, replaying each record (`reqMod` and friends) as the change it
//! describes through the replica path, with the cookie in the same transaction; a full refresh of the
//! data when the log does not reach back to the consumer's cookie (docs/replication.md, "delta-syncrepl").

use std::time::SystemTime;

use canopy_directory::ReplicaBatch;
use canopy_proto::sync::{
    Cookie, Csn, CsnSet, SyncInfo, SyncMode, SyncRequest, SyncState, SyncStateKind,
    CONTROL_SYNC_REQUEST, CONTROL_SYNC_STATE, RESULT_SYNC_REFRESH_REQUIRED, SYNC_INFO,
};
use canopy_proto::{
    Control, DerefAliases, Dn, Filter, LdapMessage, PartialAttribute, ProtocolOp, ResultCode,
    SearchRequest, SearchScope,
};

mod replay;

use replay::Record;

use super::client::Connection;
use super::session::{self, End};
use super::{Failure, Handle};
use crate::databases::Database;

/// slapd's default `logfilter` in its documentation's delta-syncrepl example.
const DEFAULT_LOGFILTER: &str = "(&(objectClass=auditWriteObject)(reqResult=0))";

/// The attributes of a log record a replay reads.
const RECORD_ATTRS: [&str; 9] = [
    "reqDN",
    "reqType",
    "reqMod",
    "reqNewRDN",
    "reqDeleteOldRDN",
    "reqNewSuperior",
    "reqEntryUUID",
    "reqStart",
    "entryCSN",
];

/// The log a delta consumer follows.
#[derive(Debug, Clone)]
pub struct Log {
    pub base: String,
    pub filter: Filter,
}

impl Log {
    /// slapd's `syncdata`, `logbase` and `logfilter`: None for `syncdata = "default"` (or absent).
    pub fn compile(
        syncdata: Option<&str>,
        logbase: Option<&str>,
        logfilter: Option<&str>,
    ) -> Result<Option<Log>, String> {
        match syncdata.unwrap_or("default") {
            "default" => {
                if logbase.is_some() || logfilter.is_some() {
                    return Err("logbase and logfilter need syncdata = \"accesslog\"".into());
                }
                Ok(None)
            }
            "accesslog" => {
                let base = logbase
                    .ok_or("syncdata = \"accesslog\" needs logbase (e.g. \"cn=accesslog\")")?;
                Dn::parse(base.as_bytes()).map_err(|e| format!("logbase {base:?}: {e}"))?;
                let text = logfilter.unwrap_or(DEFAULT_LOGFILTER);
                let filter = Filter::parse(text).map_err(|e| format!("logfilter {text:?}: {e}"))?;
                Ok(Some(Log {
                    base: base.to_string(),
                    filter,
                }))
            }
            "changelog" => {
                Err("syncdata \"changelog\" is not supported (use \"accesslog\")".into())
            }
            other => Err(format!(
                "syncdata {other:?}: expected \"default\" or \"accesslog\""
            )),
        }
    }
}

/// One session of a delta consumer: a full refresh of the data first when there is no cookie, then the
/// log from the cookie on. A log that does not reach back to the cookie, or a record that does not
/// apply, ends the session with [`End::RefreshRequired`]: the next session reloads the data.
pub async fn run(db: &Database, handle: &Handle, reload: bool) -> Result<End, Failure> {
    let c = &handle.consumer;
    let Some(log) = &c.delta else {
        return session::run(db, handle, reload).await;
    };
    let fail = |message: String| Failure {
        message,
        progressed: false,
    };
    let mut cookie = stored_cookie(db, c.rid).map_err(fail)?;
    // A session that starts with a full refresh follows the log from the refresh's own cookie: the
    // coverage check is skipped (a change the log never recorded, `logops` narrower than the writes,
    // must not send the consumer into a refresh loop), and a record that then fails to apply is a
    // failure for the retry schedule, not another immediate refresh.
    let refreshed = reload || cookie.is_none();
    if refreshed {
        tracing::info!(rid = c.rid, provider = %c.provider,
            "syncrepl: delta consumer without a usable cookie: full refresh of the data first");
        refresh_data(db, handle).await?;
        cookie = stored_cookie(db, c.rid).map_err(fail)?;
    }
    let csns = cookie.map(|k| k.csns).unwrap_or_default();
    let mut conn = Connection::open(c).await.map_err(fail)?;
    if !refreshed
        && !reaches_back(&mut conn, handle, log, &csns)
            .await
            .map_err(fail)?
    {
        tracing::warn!(rid = c.rid, provider = %c.provider, logbase = %log.base,
            "syncrepl: the provider's log does not reach back to this consumer's cookie \
             (purged); full refresh of the data");
        return Ok(End::RefreshRequired);
    }
    let mut follow = Follow {
        db,
        handle,
        csns,
        pending: Vec::new(),
        refreshing: true,
        progressed: false,
        refreshed,
    };
    let outcome = follow.log(&mut conn, log).await;
    outcome.map_err(|message| Failure {
        message,
        progressed: follow.progressed,
    })
}

fn stored_cookie(db: &Database, rid: u16) -> Result<Option<Cookie>, String> {
    let txn = db.read().map_err(|e| e.message)?;
    db.replica_cookie(&txn, rid).map_err(|e| e.message)
}

/// A full refresh of the data (refreshOnly, no cookie), as a plain consumer of the same provider with
/// the same `searchbase`, `filter` and `attrs`; its cookie is stored under this consumer's rid.
async fn refresh_data(db: &Database, handle: &Handle) -> Result<(), Failure> {
    let mut consumer = handle.consumer.clone();
    consumer.mode = SyncMode::RefreshOnly;
    consumer.delta = None;
    let plain = handle.like(consumer);
    session::run(db, &plain, true).await?;
    let status = plain.status();
    handle.update(|s| {
        for (total, n) in s.counts.iter_mut().zip(status.counts) {
            *total += n;
        }
        s.cookie = status.cookie.clone();
        s.last_success = Some(SystemTime::now());
    });
    Ok(())
}

/// Whether the log holds every change after `csns`: the record of each CSN in the cookie is still
/// there, or the log has nothing newer for that server ID.
async fn reaches_back(
    conn: &mut Connection,
    handle: &Handle,
    log: &Log,
    csns: &CsnSet,
) -> Result<bool, String> {
    let log_context = {
        let entries = search(
            conn,
            handle,
            &log.base,
            SearchScope::BaseObject,
            Filter::Present("objectClass".into()),
            &["contextCSN"],
        )
        .await?;
        let mut set = CsnSet::new();
        for value in entries.iter().flat_map(|e| values(e, "contextCSN")) {
            if let Some(csn) = std::str::from_utf8(value).ok().and_then(Csn::parse) {
                set.observe(&csn);
            }
        }
        set
    };
    for csn in log_context.csns() {
        let Some(have) = csns.get(csn.sid()) else {
            // Changes of a server ID this consumer never saw: the log must hold all of them, which
            // it cannot promise once purged; a refresh is the safe answer.
            return Ok(false);
        };
        if have >= csn {
            continue;
        }
        let filter = Filter::Equality("entryCSN".into(), have.as_str().as_bytes().to_vec());
        let found = search(
            conn,
            handle,
            &log.base,
            SearchScope::WholeSubtree,
            filter,
            &["1.1"],
        )
        .await?;
        if found.is_empty() {
            return Ok(false);
        }
    }
    Ok(true)
}

pub(super) fn values<'a>(
    entry: &'a PartialAttributes,
    name: &str,
) -> impl Iterator<Item = &'a Vec<u8>> {
    let name = name.to_string();
    entry
        .iter()
        .filter(move |a| a.name.eq_ignore_ascii_case(&name))
        .flat_map(|a| a.values.iter())
}

pub(super) type PartialAttributes = Vec<PartialAttribute>;

/// A plain search; the entries' attributes.
async fn search(
    conn: &mut Connection,
    handle: &Handle,
    base: &str,
    scope: SearchScope,
    filter: Filter,
    attrs: &[&str],
) -> Result<Vec<PartialAttributes>, String> {
    let request = SearchRequest {
        base: base.as_bytes().to_vec(),
        scope,
        deref: DerefAliases::Never,
        size_limit: 0,
        time_limit: 0,
        types_only: false,
        filter,
        attributes: attrs.iter().map(|a| a.to_string()).collect(),
    };
    let id = conn
        .send(ProtocolOp::SearchRequest(request), Vec::new())
        .await?;
    let mut entries = Vec::new();
    loop {
        let message = conn.recv_timeout(handle.consumer.timeout).await?;
        if message.message_id != id {
            return Err(format!(
                "a message for request {} where {id} was expected",
                message.message_id
            ));
        }
        match message.op {
            ProtocolOp::SearchResultEntry(entry) => entries.push(entry.attributes),
            ProtocolOp::SearchResultReference(_) => {}
            ProtocolOp::SearchResultDone(result) => {
                return match result.code {
                    ResultCode::Success => Ok(entries),
                    ResultCode::NoSuchObject => {
                        Err(format!("logbase {base:?}: no such object on the provider"))
                    }
                    code => Err(format!("search of {base:?}: {code:?} {}", result.message)),
                };
            }
            other => return Err(format!("unexpected message from the provider: {other:?}")),
        }
    }
}

/// Following the log: records of the refresh phase are replayed in CSN order once it ends, then each
/// persist-phase record as it comes.
struct Follow<'a> {
    db: &'a Database,
    handle: &'a Handle,
    /// The consumer's cookie, raised by each record replayed.
    csns: CsnSet,
    pending: Vec<Record>,
    refreshing: bool,
    progressed: bool,
    /// The session began with a full refresh of the data.
    refreshed: bool,
}

impl Follow<'_> {
    async fn log(&mut self, conn: &mut Connection, log: &Log) -> Result<End, String> {
        let c = &self.handle.consumer;
        let request = SyncRequest {
            mode: c.mode,
            cookie: Some(
                Cookie {
                    rid: Some(c.rid),
                    sid: None,
                    csns: self.csns.clone(),
                }
                .to_bytes(),
            ),
            reload_hint: false,
        };
        let search = SearchRequest {
            base: log.base.clone().into_bytes(),
            scope: SearchScope::WholeSubtree,
            deref: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: log.filter.clone(),
            attributes: RECORD_ATTRS.iter().map(|a| a.to_string()).collect(),
        };
        let control = Control {
            oid: CONTROL_SYNC_REQUEST.to_string(),
            critical: true,
            value: Some(request.encode()),
        };
        let id = conn
            .send(ProtocolOp::SearchRequest(search), vec![control])
            .await?;
        tracing::info!(rid = c.rid, provider = %c.provider, logbase = %log.base,
            "syncrepl: following the provider's log");
        self.handle.update(|s| s.state = "refreshing");
        let mut answered = false;
        loop {
            let limit = if answered { None } else { c.timeout };
            let message = conn.recv_timeout(limit).await?;
            answered = true;
            if message.message_id != id {
                return Err(format!(
                    "a message for request {} where {id} was expected",
                    message.message_id
                ));
            }
            let LdapMessage { op, controls, .. } = message;
            match op {
                ProtocolOp::SearchResultEntry(entry) => {
                    let state = controls
                        .iter()
                        .find(|c| c.oid == CONTROL_SYNC_STATE)
                        .ok_or("a log record without a Sync State control")?;
                    let state = SyncState::decode(state.value.as_deref().unwrap_or_default())
                        .map_err(|e| format!("undecodable Sync State control: {e}"))?;
                    // Purged records (delete) and present-phase names say nothing about the data.
                    if matches!(state.state, SyncStateKind::Add | SyncStateKind::Modify) {
                        if let Some(record) = replay::record(entry.attributes)? {
                            self.pending.push(record);
                            if !self.refreshing {
                                if let Some(end) = self.replay().await? {
                                    return Ok(end);
                                }
                            }
                        }
                    }
                }
                ProtocolOp::SearchResultReference(_) => {}
                ProtocolOp::IntermediateResponse(ir) => {
                    if ir.name.as_deref() != Some(SYNC_INFO) {
                        return Err(format!("an intermediate response {:?}", ir.name));
                    }
                    let info = SyncInfo::decode(&ir.value.unwrap_or_default())
                        .map_err(|e| format!("undecodable Sync Info: {e}"))?;
                    let done = match info {
                        SyncInfo::RefreshDelete { done, .. }
                        | SyncInfo::RefreshPresent { done, .. } => done,
                        SyncInfo::NewCookie(_) | SyncInfo::SyncIdSet { .. } => false,
                    };
                    if done && self.refreshing {
                        if let Some(end) = self.refresh_ended().await? {
                            return Ok(end);
                        }
                    }
                }
                ProtocolOp::SearchResultDone(result) => {
                    if result.code.code() == RESULT_SYNC_REFRESH_REQUIRED {
                        return Ok(End::RefreshRequired);
                    }
                    if result.code != ResultCode::Success {
                        return Err(format!(
                            "the provider ended the log search: {:?} {}",
                            result.code, result.message
                        ));
                    }
                    if let Some(end) = self.refresh_ended().await? {
                        return Ok(end);
                    }
                    if c.mode == SyncMode::RefreshAndPersist {
                        return Err("the provider ended the persistent search of its log".into());
                    }
                    return Ok(End::Polled);
                }
                other => return Err(format!("unexpected message from the provider: {other:?}")),
            }
        }
    }

    async fn refresh_ended(&mut self) -> Result<Option<End>, String> {
        self.refreshing = false;
        let end = self.replay().await?;
        let persisting = self.handle.consumer.mode == SyncMode::RefreshAndPersist;
        self.handle.update(|s| {
            s.state = if persisting {
                "persisting"
            } else {
                "refreshing"
            };
            s.last_success = Some(SystemTime::now());
        });
        Ok(end)
    }

    /// Replays the pending records in CSN order (reqStart between equal CSNs), each in its own
    /// transaction with the raised cookie. Records the cookie already covers are skipped. A record
    /// that cannot be replayed (its entry missing here, a DN taken) asks for a full refresh.
    async fn replay(&mut self) -> Result<Option<End>, String> {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by(|a, b| a.csn.cmp(&b.csn).then_with(|| a.start.cmp(&b.start)));
        let c = &self.handle.consumer;
        let elsewhere = super::elsewhere(self.db, self.handle);
        for record in pending {
            if !self.csns.is_new(&record.csn) {
                continue;
            }
            let change = match replay::change(self.db, &record, &elsewhere) {
                Ok(change) => change,
                Err(error) => return self.unappliable(error).map(Some),
            };
            let mut csns = self.csns.clone();
            csns.observe(&record.csn);
            let cookie = Cookie {
                rid: Some(c.rid),
                sid: None,
                csns: csns.clone(),
            };
            let batch = ReplicaBatch {
                rid: c.rid,
                changes: change.into_iter().collect(),
                cookie: Some(cookie.clone()),
                ..Default::default()
            };
            let applied = match self.db.apply_replica(batch).await {
                Ok(applied) => applied,
                Err(e) => return self.unappliable(e.message).map(Some),
            };
            self.csns = csns;
            self.progressed = true;
            let counts = [
                applied.added,
                applied.modified,
                applied.renamed,
                applied.deleted,
            ];
            self.handle.update(|s| {
                for (total, n) in s.counts.iter_mut().zip(counts) {
                    *total += n;
                }
                s.cookie = cookie.to_text();
                s.last_success = Some(SystemTime::now());
            });
        }
        Ok(None)
    }

    /// A record that does not apply here (the consumer diverged): a full refresh of the data, at once
    /// unless this session began with one (then the retry schedule's delay comes first).
    fn unappliable(&self, error: String) -> Result<End, String> {
        let c = &self.handle.consumer;
        if self.refreshed {
            return Err(format!(
                "a log record does not apply even after a full refresh: {error}"
            ));
        }
        tracing::warn!(rid = c.rid, provider = %c.provider, %error,
            "syncrepl: a log record does not apply here; full refresh of the data");
        Ok(End::RefreshRequired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncdata_keywords() {
        assert!(Log::compile(None, None, None).unwrap().is_none());
        assert!(Log::compile(Some("default"), Some("cn=accesslog"), None).is_err());
        let log = Log::compile(Some("accesslog"), Some("cn=accesslog"), None)
            .unwrap()
            .unwrap();
        assert_eq!(log.base, "cn=accesslog");
        assert!(Log::compile(Some("accesslog"), None, None).is_err());
        assert!(Log::compile(Some("accesslog"), Some("cn=accesslog"), Some("(bad")).is_err());
        assert!(Log::compile(Some("changelog"), Some("cn=x"), None).is_err());
    }
}
