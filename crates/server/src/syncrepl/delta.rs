//! delta-syncrepl (slapd's `syncdata=accesslog`): a consumer that follows the provider's access log at
//! `logbase` instead of its data, replaying each record (`reqMod` and friends) as the change it
//! describes through the replica path, with the cookie in the same transaction; a full refresh of the
//! data when the log does not reach back to the consumer's cookie (docs/replication.md, "delta-syncrepl").

use std::time::SystemTime;

use canopy_core::check::build_entry;
use canopy_core::modify::{modified, ModifyOptions};
use canopy_core::{Attribute, Entry};
use canopy_directory::{ReplicaBatch, ReplicaChange};
use canopy_mdb::ReadOps;
use canopy_proto::sync::{
    uuid_from_text, Cookie, Csn, CsnSet, SyncInfo, SyncMode, SyncRequest, SyncState, SyncStateKind,
    CONTROL_SYNC_REQUEST, CONTROL_SYNC_STATE, RESULT_SYNC_REFRESH_REQUIRED, SYNC_INFO,
};
use canopy_proto::{
    Change, Control, DerefAliases, Dn, Filter, LdapMessage, ModifyOperation, PartialAttribute,
    ProtocolOp, ResultCode, SearchRequest, SearchScope,
};

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
    let plain = Handle::new(consumer);
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

fn values<'a>(entry: &'a PartialAttributes, name: &str) -> impl Iterator<Item = &'a Vec<u8>> {
    let name = name.to_string();
    entry
        .iter()
        .filter(move |a| a.name.eq_ignore_ascii_case(&name))
        .flat_map(|a| a.values.iter())
}

type PartialAttributes = Vec<PartialAttribute>;

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

/// One log record as received.
struct Record {
    csn: Csn,
    start: Vec<u8>,
    attrs: PartialAttributes,
}

impl Record {
    fn one(&self, name: &str) -> Option<&[u8]> {
        values(&self.attrs, name).next().map(Vec::as_slice)
    }

    fn text(&self, name: &str) -> Result<String, String> {
        let value = self
            .one(name)
            .ok_or_else(|| format!("a log record without {name}"))?;
        String::from_utf8(value.to_vec()).map_err(|_| format!("a log record's {name} is not UTF-8"))
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
                        if let Some(record) = record(entry.attributes)? {
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
        for record in pending {
            if !self.csns.is_new(&record.csn) {
                continue;
            }
            let change = match self.change(&record) {
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

    /// The replica change a record describes, computed against this database's current entry.
    fn change(&self, record: &Record) -> Result<Option<ReplicaChange>, String> {
        let kind = record.text("reqType")?;
        let target = record.text("reqDN")?;
        let (dn, ndn) = self
            .db
            .normalize(target.as_bytes())
            .map_err(|e| format!("reqDN {target:?}: {}", e.message))?;
        if !self.db.holds(&ndn) {
            // Outside what this consumer keeps (another database of the provider).
            return Ok(None);
        }
        match kind.as_str() {
            "add" => {
                let mut attrs: Vec<PartialAttribute> = Vec::new();
                for change in mods(record)? {
                    if change.operation != ModifyOperation::Add {
                        return Err(format!("an add record of {target} with a non-add reqMod"));
                    }
                    match attrs
                        .iter_mut()
                        .find(|a| a.name == change.modification.name)
                    {
                        Some(attr) => attr.values.extend(change.modification.values),
                        None => attrs.push(change.modification),
                    }
                }
                let mut dn = dn;
                self.db.pretty(&mut dn);
                let entry = build_entry(self.db.schema(), dn, ndn, &attrs)
                    .map_err(|e| format!("add of {target}: {}", e.message))?;
                let uuid = entry_uuid(&entry)
                    .ok_or_else(|| format!("the add record of {target} has no entryUUID"))?;
                Ok(Some(ReplicaChange::Put { uuid, entry }))
            }
            "delete" => {
                let uuid = match record.one("reqEntryUUID") {
                    Some(text) => uuid_of(text)?,
                    None => match self.load(&ndn)? {
                        Some(entry) => entry_uuid(&entry)
                            .ok_or_else(|| format!("{target} has no entryUUID here"))?,
                        None => return Ok(None),
                    },
                };
                Ok(Some(ReplicaChange::Delete { uuid }))
            }
            "modify" => {
                let entry = self
                    .load(&ndn)?
                    .ok_or_else(|| format!("modify of {target}: no such entry here"))?;
                let uuid =
                    entry_uuid(&entry).ok_or_else(|| format!("{target} has no entryUUID here"))?;
                let entry = apply(self.db, entry, &mods(record)?, &target)?;
                Ok(Some(ReplicaChange::Put { uuid, entry }))
            }
            "modrdn" => {
                let mut entry = self
                    .load(&ndn)?
                    .ok_or_else(|| format!("modrdn of {target}: no such entry here"))?;
                let uuid =
                    entry_uuid(&entry).ok_or_else(|| format!("{target} has no entryUUID here"))?;
                let new_rdn = record.text("reqNewRDN")?;
                let rdn = Dn::parse(new_rdn.as_bytes())
                    .ok()
                    .and_then(|d| d.rdns.into_iter().next())
                    .ok_or_else(|| format!("reqNewRDN {new_rdn:?} is not an RDN"))?;
                let delete_old = record
                    .one("reqDeleteOldRDN")
                    .is_some_and(|v| v.eq_ignore_ascii_case(b"TRUE"));
                let parent = match record.one("reqNewSuperior") {
                    Some(superior) => {
                        Dn::parse(superior).map_err(|e| format!("reqNewSuperior: {e}"))?
                    }
                    None => entry.dn.parent(),
                };
                if delete_old {
                    if let Some(old) = entry.dn.rdns.first().cloned() {
                        for ava in &old.avas {
                            if let Some(attr) = entry.get_mut(&ava.attr) {
                                attr.values.retain(|v| !v.eq_ignore_ascii_case(&ava.value));
                            }
                        }
                        entry.attrs.retain(|a| !a.values.is_empty());
                    }
                }
                for ava in &rdn.avas {
                    match entry.get_mut(&ava.attr) {
                        Some(attr) => {
                            if !attr
                                .values
                                .iter()
                                .any(|v| v.eq_ignore_ascii_case(&ava.value))
                            {
                                attr.values.push(ava.value.clone());
                            }
                        }
                        None => {
                            let desc = self
                                .db
                                .schema()
                                .attribute_type(&ava.attr)
                                .map_or(ava.attr.clone(), |at| at.name().to_string());
                            entry.attrs.push(Attribute {
                                desc,
                                values: vec![ava.value.clone()],
                            });
                        }
                    }
                }
                let mut rdns = vec![rdn];
                rdns.extend(parent.rdns);
                let new_dn = Dn { rdns }.to_string();
                let (mut dn, ndn) = self
                    .db
                    .normalize(new_dn.as_bytes())
                    .map_err(|e| format!("the new DN {new_dn:?}: {}", e.message))?;
                self.db.pretty(&mut dn);
                entry.dn = dn;
                entry.ndn = ndn;
                let entry = apply(self.db, entry, &mods(record)?, &target)?;
                Ok(Some(ReplicaChange::Put { uuid, entry }))
            }
            other => Err(format!("reqType {other:?} is not a write")),
        }
    }

    fn load(&self, ndn: &canopy_schema::NormDn) -> Result<Option<Entry>, String> {
        let txn = self.db.read().map_err(|e| e.message)?;
        let Some(id) = txn
            .get_id(&canopy_directory::dn_key(ndn))
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let Some(bytes) = self.db.stored(&txn, id).map_err(|e| e.message)? else {
            return Ok(None);
        };
        canopy_directory::Directory::parse_stored(bytes)
            .map_err(|e| e.message)?
            .to_entry()
            .map(Some)
            .map_err(|_| "a stored entry is unreadable".to_string())
    }
}

/// The record of a log entry, None when it carries no entryCSN (not a change slapd would replay).
fn record(attrs: PartialAttributes) -> Result<Option<Record>, String> {
    let csn = values(&attrs, "entryCSN")
        .next()
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(Csn::parse);
    let Some(csn) = csn else { return Ok(None) };
    let start = values(&attrs, "reqStart")
        .next()
        .cloned()
        .unwrap_or_default();
    Ok(Some(Record { csn, start, attrs }))
}

/// reqMod values as modifications: `attr:+ value`, `attr:- value`, `attr:-`, `attr:= value`, `attr:=`,
/// `attr:# value`; consecutive values of the same attribute and operation make one modification.
fn mods(record: &Record) -> Result<Vec<Change>, String> {
    let mut changes: Vec<Change> = Vec::new();
    for value in values(&record.attrs, "reqMod") {
        let colon = value
            .iter()
            .position(|b| *b == b':')
            .ok_or("a reqMod value without ':'")?;
        let name = std::str::from_utf8(&value[..colon])
            .map_err(|_| "a reqMod attribute name is not UTF-8")?
            .to_string();
        let operation = match value.get(colon + 1) {
            Some(b'+') => ModifyOperation::Add,
            Some(b'-') => ModifyOperation::Delete,
            Some(b'=') => ModifyOperation::Replace,
            Some(b'#') => ModifyOperation::Increment,
            _ => {
                return Err(format!(
                    "reqMod {:?}: unknown operation",
                    String::from_utf8_lossy(value)
                ))
            }
        };
        let rest = &value[colon + 2..];
        let item = match rest.first() {
            None => None,
            Some(b' ') => Some(rest[1..].to_vec()),
            Some(_) => {
                return Err(format!(
                    "reqMod {:?}: expected a space",
                    String::from_utf8_lossy(value)
                ))
            }
        };
        let same = changes.last_mut().filter(|last| {
            last.operation == operation
                && last.modification.name == name
                && item.is_some()
                && !last.modification.values.is_empty()
        });
        match (same, item) {
            (Some(last), Some(item)) => last.modification.values.push(item),
            (_, item) => changes.push(Change {
                operation,
                modification: PartialAttribute {
                    name,
                    values: item.into_iter().collect(),
                },
            }),
        }
    }
    Ok(changes)
}

fn apply(db: &Database, entry: Entry, changes: &[Change], target: &str) -> Result<Entry, String> {
    let options = ModifyOptions {
        allow_no_user_modification: true,
        absent_adds: Vec::new(),
    };
    modified(db.schema(), entry, changes, &options)
        .map_err(|e| format!("replaying the changes of {target}: {}", e.message))
}

fn uuid_of(text: &[u8]) -> Result<[u8; 16], String> {
    std::str::from_utf8(text)
        .ok()
        .and_then(uuid_from_text)
        .ok_or_else(|| format!("{:?} is not a UUID", String::from_utf8_lossy(text)))
}

fn entry_uuid(entry: &Entry) -> Option<[u8; 16]> {
    canopy_directory::replica::entry_uuid(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_of(mods: &[&str]) -> Record {
        Record {
            csn: Csn::parse("20261127033042.122526Z#000000#000#000000").unwrap(),
            start: Vec::new(),
            attrs: vec![PartialAttribute {
                name: "reqMod".into(),
                values: mods.iter().map(|m| m.as_bytes().to_vec()).collect(),
            }],
        }
    }

    #[test]
    fn req_mod_values_as_slapd_writes_them() {
        let changes = mods(&record_of(&[
            "sn:= B",
            "mail:+ a@x",
            "mail:+ b@x",
            "cn:- A",
            "cn:+ C",
            "mail:-",
            "description:=",
            "uidNumber:# 1",
        ]))
        .unwrap();
        let shape: Vec<(ModifyOperation, &str, usize)> = changes
            .iter()
            .map(|c| {
                (
                    c.operation,
                    c.modification.name.as_str(),
                    c.modification.values.len(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (ModifyOperation::Replace, "sn", 1),
                (ModifyOperation::Add, "mail", 2),
                (ModifyOperation::Delete, "cn", 1),
                (ModifyOperation::Add, "cn", 1),
                (ModifyOperation::Delete, "mail", 0),
                (ModifyOperation::Replace, "description", 0),
                (ModifyOperation::Increment, "uidNumber", 1),
            ]
        );
        for bad in ["nocolon", "sn:? x", "sn:=x"] {
            assert!(mods(&record_of(&[bad])).is_err(), "{bad}");
        }
    }

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
