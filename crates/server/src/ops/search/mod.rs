//! RFC 4511 §4.5 Search, the frontend half: the base's database, limits, access control, the one exact
//! filter test per candidate the backend's scan streams out, paging and encoding.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use canopy_core::filter::{evaluate, PreparedFilter, Ternary};
use canopy_core::wire::{attribute_tlvs, section_of_type, Section, StoredEntry, StoredView};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_directory::alias::Base;
use canopy_directory::search::Scan;
use canopy_directory::search::{decoded, Query, Subentries};
use canopy_directory::search_loop::{Reader, Requester, Room, SearchSpec, Searcher, Tested};
use canopy_directory::{Directory, Referral, Snapshot};
use canopy_proto::oid::CONTROL_PAGED_RESULTS;
use canopy_proto::{
    encode_partial_attribute, encode_search_result_done_raw, encode_search_result_entry_parts,
    encode_search_result_entry_raw, Control, Filter, LdapMessage, LdapResult, PagedResults,
    ProtocolOp, ResultCode, SearchRequest,
};
use canopy_schema::NormDn;

use crate::access::{is_secret, Who};
use crate::acl::ops::hide_matched;
use crate::acl::GroupReader;
use crate::acl::{privileges, AttrRef, Cleared, EntryView, MemoKey, SearchAccess, Seen, Target};
use crate::databases::{Database, EntryAnswer};
use crate::filter_view::{as_slapd_sees, without_attrs};
use crate::limits::PagedTotal;
use crate::ops::{encode, error_result, OpError};
use crate::out::Responses;
use crate::readentry::{check_assertion, load};
use crate::reqctl::RequestControls;
use crate::select::Selection;
use crate::special;
use crate::state::State;

mod encode;
pub(crate) mod following;
mod reader;
mod sort;

use encode::{encode_stored, send_special};
pub(crate) use reader::SearchRequester;
use reader::{HiddenFilters, SearchReader};

/// Everything a running search needs; it runs on a blocking thread and streams entries into `tx`.
pub struct SearchJob {
    pub state: State,
    /// Shared with the connection until its identity changes: a search does not copy it.
    pub who: Arc<Who>,
    /// The connection's memo of access decisions (acl/view.rs `ViewMemo`).
    pub views: Arc<crate::acl::ViewMemo>,
    /// The sorted lists the connection keeps open (a sorted search's later pages, VLV contexts).
    pub sorts: Arc<crate::sorting::SortSessions>,
    pub message_id: i32,
    pub req: SearchRequest,
    pub paged: Option<PagedResults>,
    pub ctl: RequestControls,
    pub cancel: Arc<AtomicBool>,
    /// The connection's response queue: None while the search is tried inline (it answers through its
    /// own buffer), set before it runs on a blocking thread.
    pub tx: Option<Responses>,
    /// What the search sent, for the counters and the access log.
    pub tally: Tally,
}

/// What a search sent: entries and continuation references so far.
#[derive(Default)]
pub struct Tally {
    entries: std::cell::Cell<u64>,
    references: std::cell::Cell<u64>,
    unindexed: std::cell::Cell<bool>,
}

impl Tally {
    fn reset(&self) {
        self.entries.set(0);
        self.references.set(0);
        self.unindexed.set(false);
    }

    fn entry(&self) {
        self.entries.set(self.entries.get() + 1);
    }

    fn reference(&self) {
        self.references.set(self.references.get() + 1);
    }
}

/// How a search ended: its result code (None when abandoned or disconnected: nothing more was sent) and
/// what it sent.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub code: Option<ResultCode>,
    pub entries: u64,
    pub references: u64,
    /// No index could serve the filter: the scope was scanned.
    pub unindexed: bool,
}

impl SearchJob {
    fn outcome(&self, code: Option<ResultCode>) -> Outcome {
        Outcome {
            code,
            entries: self.tally.entries.get(),
            references: self.tally.references.get(),
            unindexed: self.tally.unindexed.get(),
        }
    }
}

/// Why a search stopped before its end.
enum Stop {
    Error(LdapError),
    Referral(Referral),
    /// Abandoned or the connection went away: send nothing more.
    Silent,
    /// An inline attempt outgrew its budget; the search runs again on a blocking thread.
    Overflow,
    /// A virtual list view's error, answered with its VLV response control (ops/search/sort.rs).
    Vlv(LdapError, canopy_proto::sort::VlvResponse),
}

/// A search that may run on the connection's own task: one that examines and returns only a few entries.
/// Larger ones move to a blocking thread, so a worker is never held up and the queue gives back-pressure.
const INLINE_EXAMINED: u64 = 32;
const INLINE_RETURNED: usize = 16;

/// A streamed search sends its responses in batches of about this many bytes: one channel message and one
/// wake-up of the connection's writer per batch instead of per entry.
const BATCH_BYTES: usize = 8 * 1024;
/// While the connection's queue still holds responses (its writer is busy), a full batch keeps growing
/// up to this size instead of being sent: the writer copies responses that queue up behind each other
/// into one buffer before writing them, and a scan that outruns its client would have every byte copied
/// there once more (the writer takes a lone batch as it is).
const DEFERRED_BATCH_BYTES: usize = 256 * 1024;
/// A batch waits at most this long for more entries (checked with the abandon flag), so a slow search with
/// few matches still shows its entries as they are found.
const BATCH_WAIT: Duration = Duration::from_millis(5);

/// Where a search's responses go.
enum Sink<'a> {
    /// Streamed into the connection's queue in batches, waiting when it is full (on a blocking thread).
    Queue {
        tx: &'a Responses,
        batch: Vec<u8>,
        since: Option<Instant>,
    },
    /// Collected in memory, within the inline budget: the messages one after the other, to be written
    /// with one send to the writer (and one write to the socket), and how many there are.
    Buffer { out: Vec<u8>, messages: usize },
}

impl<'a> Sink<'a> {
    fn queue(tx: &'a Responses) -> Sink<'a> {
        Sink::Queue {
            tx,
            batch: Vec::new(),
            since: None,
        }
    }

    /// Pushes the message `encode` writes, straight into the batch when queueing.
    fn push_encoded(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<(), Stop> {
        match self {
            Sink::Queue { tx, batch, since } => {
                encode(batch);
                if batch.len() < BATCH_BYTES {
                    since.get_or_insert_with(Instant::now);
                    return Ok(());
                }
                let writer_busy = tx.backlog();
                if writer_busy && batch.len() < DEFERRED_BATCH_BYTES {
                    // Grown once to the deferred size rather than by doubling (each step a copy).
                    if batch.capacity() < DEFERRED_BATCH_BYTES {
                        batch.reserve(DEFERRED_BATCH_BYTES + 1024 - batch.len());
                    }
                    since.get_or_insert_with(Instant::now);
                    return Ok(());
                }
                if writer_busy {
                    // Full while the writer still has responses: sent once they are taken, so that it
                    // finds this batch alone.
                    tx.blocking_wait_taken().map_err(|_| Stop::Silent)?;
                }
                *since = None;
                let full = std::mem::replace(batch, Vec::with_capacity(BATCH_BYTES + 1024));
                tx.blocking_send(full).map_err(|_| Stop::Silent)
            }
            Sink::Buffer { messages, .. } if *messages >= INLINE_RETURNED => Err(Stop::Overflow),
            Sink::Buffer { out, messages } => {
                if out.capacity() == 0 {
                    // Made at its size rather than grown.
                    *out = Vec::with_capacity(1024);
                }
                encode(out);
                *messages += 1;
                Ok(())
            }
        }
    }

    fn push(&mut self, message: Vec<u8>) -> Result<(), Stop> {
        match self {
            Sink::Queue { tx, batch, since } => {
                batch.extend_from_slice(&message);
                if batch.len() < BATCH_BYTES {
                    since.get_or_insert_with(Instant::now);
                    return Ok(());
                }
                *since = None;
                let full = std::mem::replace(batch, Vec::with_capacity(BATCH_BYTES));
                tx.blocking_send(full).map_err(|_| Stop::Silent)
            }
            Sink::Buffer { messages, .. } if *messages >= INLINE_RETURNED => Err(Stop::Overflow),
            Sink::Buffer { out, messages } => {
                if out.is_empty() {
                    *out = message;
                } else {
                    out.extend_from_slice(&message);
                }
                *messages += 1;
                Ok(())
            }
        }
    }

    /// Sends a batch that has waited long enough (or, with `all`, any batch).
    fn flush(&mut self, all: bool) -> Result<(), Stop> {
        if let Sink::Queue { tx, batch, since } = self {
            let due = since.is_some_and(|t| all || t.elapsed() >= BATCH_WAIT);
            if due && !batch.is_empty() {
                *since = None;
                let full = std::mem::take(batch);
                tx.blocking_send(full).map_err(|_| Stop::Silent)?;
            }
        }
        Ok(())
    }

    fn is_inline(&self) -> bool {
        matches!(self, Sink::Buffer { .. })
    }

    fn over_budget(&self, examined: u64) -> bool {
        matches!(self, Sink::Buffer { .. }) && examined > INLINE_EXAMINED
    }
}

impl From<LdapError> for Stop {
    fn from(e: LdapError) -> Stop {
        Stop::Error(e)
    }
}

impl From<OpError> for Stop {
    fn from(e: OpError) -> Stop {
        match e {
            OpError::Ldap(e) => Stop::Error(e),
            OpError::Referral(r) => Stop::Referral(r),
        }
    }
}

/// Runs the search to its end on a blocking thread and sends SearchResultDone (unless abandoned).
pub fn run(job: SearchJob) -> Outcome {
    let Some(tx) = job.tx.as_ref() else {
        return job.outcome(None);
    };
    let mut sink = Sink::queue(tx);
    // Abandoned or disconnected (None): what is still batched is dropped with the rest.
    if let Some((result, controls)) = finish(&job, &mut sink) {
        let code = result.code;
        let mut done = Vec::new();
        encode_done(&job, result, controls, &mut done);
        if sink.push(done).is_ok() && sink.flush(true).is_ok() {
            return job.outcome(Some(code));
        }
    }
    job.outcome(None)
}

/// Tries the search within the inline budget: all its responses, SearchResultDone last, in one buffer
/// (one send to the connection's writer), or None when it must run with [`run`] instead (nothing has
/// been sent then).
pub fn try_inline(job: &SearchJob) -> Option<(Vec<u8>, Outcome)> {
    let mut sink = Sink::Buffer {
        out: Vec::new(),
        messages: 0,
    };
    let (result, controls) = finish(job, &mut sink)?;
    match sink {
        Sink::Buffer { mut out, .. } => {
            let code = result.code;
            encode_done(job, result, controls, &mut out);
            Some((out, job.outcome(Some(code))))
        }
        Sink::Queue { .. } => None,
    }
}

/// Executes the search: the result and controls of its SearchResultDone, or None when nothing more is to
/// be sent (abandoned, or an inline attempt overflowed).
fn finish(job: &SearchJob, sink: &mut Sink<'_>) -> Option<(LdapResult, Vec<Control>)> {
    job.tally.reset();
    let mut done_controls = Vec::new();
    let result = match execute(job, sink, &mut done_controls) {
        Ok(()) => LdapResult::success(),
        Err(Stop::Error(e)) => error_result(e),
        Err(Stop::Referral(r)) => r.into_result(),
        Err(Stop::Vlv(e, response)) => {
            done_controls.push(sort::vlv_control(response));
            error_result(e)
        }
        Err(Stop::Silent) | Err(Stop::Overflow) => return None,
    };
    Some((result, done_controls))
}

/// Appends the SearchResultDone to `out`: without referral or controls (the usual case) straight from
/// its fields, otherwise through the generic encoder (the same bytes either way).
fn encode_done(job: &SearchJob, result: LdapResult, controls: Vec<Control>, out: &mut Vec<u8>) {
    if result.referral.is_empty() && controls.is_empty() {
        encode_search_result_done_raw(
            out,
            job.message_id,
            result.code.code(),
            &result.matched_dn,
            result.message.as_bytes(),
        );
    } else {
        LdapMessage {
            message_id: job.message_id,
            op: ProtocolOp::SearchResultDone(result),
            controls,
        }
        .encode(out);
    }
}

#[derive(Clone)]
struct Limits {
    size: Option<usize>,
    deadline: Option<Instant>,
    lookthrough: Option<u64>,
}

/// The limits of this search: the identity's (crate::limits), lowered by the client's request.
fn limits(job: &SearchJob, dir: &Database, who: &Who, txn: &Snapshot) -> Result<Limits, LdapError> {
    let mine = crate::limits::SearchLimits::of(dir.limits(), dir.backend(), who, txn)?;
    let mut size = mine.size;
    if job.paged.is_some() && mine.paged_total == PagedTotal::Disabled {
        return Err(LdapError::new(
            ResultCode::AdminLimitExceeded,
            "pagedResults control not allowed",
        ));
    }
    if let Some(paged) = job.paged.as_ref().filter(|p| p.size > 0) {
        let page = u64::try_from(paged.size).unwrap_or(0);
        if mine.paged_size.is_some_and(|max| page > max) {
            return Err(LdapError::new(
                ResultCode::AdminLimitExceeded,
                "illegal pagedResults page size",
            ));
        }
        match mine.paged_total {
            PagedTotal::Limited(total) => size = Some(total),
            PagedTotal::Unlimited => size = None,
            PagedTotal::SizeLimit | PagedTotal::Disabled => {}
        }
    }
    let lower = crate::limits::lower_only;
    Ok(Limits {
        size: lower(job.req.size_limit, size).map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        deadline: lower(job.req.time_limit, mine.time)
            .map(|s| Instant::now() + Duration::from_secs(s)),
        lookthrough: mine.lookthrough,
    })
}

fn execute(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    done_controls: &mut Vec<Control>,
) -> Result<(), Stop> {
    let state = &job.state;
    let schema = state.databases.schema();
    let (base_dn, base) = state.databases.normalize_shared(&job.req.base)?;
    let selection = Selection::parse(schema, &job.req.attributes);

    if let Some(entry) = special::entry_for(state, &base, job.req.scope) {
        if job.ctl.sort.as_ref().is_some_and(|s| s.critical()) {
            return Err(LdapError::new(
                ResultCode::UnavailableCriticalExtension,
                "critical control unavailable in context",
            )
            .into());
        }
        if let Some(filter) = &job.ctl.assertion {
            check_assertion(schema, &Seen::public(entry.clone()), filter)?;
        }
        return send_special(job, sink, &selection, &entry);
    }
    let Some(dir) = state.databases.route(&base) else {
        return Err(state
            .outside(
                &base_dn.to_string(),
                Some(job.req.scope),
                state.outside_naming_context(&base),
            )
            .into());
    };
    if job.ctl.dont_use_copy {
        if let Some(refused) = state.copy_refused(dir, &base_dn.to_string(), Some(job.req.scope)) {
            return Err(refused.into());
        }
    }
    // A database that sorts answers the sort and VLV controls (ops/search/sort.rs); elsewhere a
    // critical one cannot be honoured.
    if let Some(controls) = job.ctl.sort.as_deref() {
        match dir.sort_policy() {
            Some(policy) => {
                let at = (base_dn, base);
                return sort::execute(
                    job,
                    sink,
                    done_controls,
                    dir,
                    at,
                    &selection,
                    policy,
                    controls,
                );
            }
            // slapd: the control is known (another database's overlay), not in this database.
            None if controls.critical() => {
                return Err(LdapError::new(
                    ResultCode::UnavailableCriticalExtension,
                    "critical control unavailable in context",
                )
                .into())
            }
            None => {}
        }
    }
    // A paged search across glued databases goes on where its cookie says: which part, after which ID.
    let resume = job
        .paged
        .as_ref()
        .filter(|p| p.size > 0)
        .and_then(|p| parse_cookie(&p.cookie));
    let mut run = Run {
        selection: &selection,
        limits: None,
        sent: 0,
        before: resume.map_or(0, |c| c.sent),
        sorted: None,
    };
    if resume.is_some_and(|c| c.part > 0) {
        // The limits are the requested database's, even on a page that starts in a glued one.
        let who = dir.requester(&job.who);
        let txn = dir.read()?;
        run.limits = Some(limits(job, dir, &who, &txn)?);
    }
    if let Flow::Done = search_parts(
        job,
        sink,
        done_controls,
        dir,
        (base_dn, base),
        &mut run,
        resume,
    )? {
        return Ok(());
    }
    if job.paged.is_some() {
        done_controls.push(paged_control(Vec::new()));
    }
    Ok(())
}

/// One part of a search: its database, base (as sent and normalized) and scope (None: the
/// request's).
type PartOf<'d> = (
    &'d Database,
    Arc<canopy_proto::Dn>,
    Arc<NormDn>,
    Option<canopy_proto::SearchScope>,
);

/// The parts of a search based at `at` in `dir`: the requested database (scope None), then the
/// glued ones in order, each based at its suffix with the scope its part takes.
fn parts_of<'d>(
    dir: &'d Database,
    at: (Arc<canopy_proto::Dn>, Arc<NormDn>),
    glued: Vec<(&'d Database, canopy_proto::SearchScope)>,
) -> Vec<PartOf<'d>> {
    let glued = glued_in_order(glued);
    std::iter::once((dir, at.0, at.1, None))
        .chain(glued.into_iter().map(|(db, scope)| {
            let (dn, ndn) = (db.suffix_dn().clone(), db.suffix().clone());
            (db, Arc::new(dn), Arc::new(ndn), Some(scope))
        }))
        .collect()
}

/// Runs the search in each of its parts ([`parts_of`]) from where `resume` says.
fn search_parts(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    done_controls: &mut Vec<Control>,
    dir: &Database,
    at: (Arc<canopy_proto::Dn>, Arc<NormDn>),
    run: &mut Run<'_>,
    resume: Option<Cookie>,
) -> Result<Flow, Stop> {
    let first_part = resume.map_or(0, |c| c.part);
    let glued = job.state.databases.glued(dir, &at.1, job.req.scope);
    if glued.is_empty() {
        // The usual search: one database, one part.
        if first_part > 0 {
            return Ok(Flow::Continue);
        }
        let part = Part {
            index: 0,
            scope: None,
            resume_after: resume.map(|c| c.last),
        };
        return search_part(job, sink, done_controls, dir, at.0, at.1, part, run);
    }
    let parts = parts_of(dir, at, glued);
    for (index, (db, part_dn, part_ndn, scope)) in parts.into_iter().enumerate().skip(first_part) {
        let part = Part {
            index,
            scope,
            resume_after: resume.filter(|c| c.part == index).map(|c| c.last),
        };
        match search_part(job, sink, done_controls, db, part_dn, part_ndn, part, run) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Done) => return Ok(Flow::Done),
            // A glued database without its suffix entry, or whose base the requester may not
            // search, adds nothing to the search, as in slapd's glue.
            Err(Stop::Error(e))
                if index > 0
                    && matches!(
                        e.code,
                        ResultCode::NoSuchObject | ResultCode::InsufficientAccessRights
                    ) => {}
            Err(other) => return Err(other),
        }
    }
    Ok(Flow::Continue)
}

/// Which part of a search `search_part` runs: 0 the requested database, then the glued ones (with the
/// scope their part takes), and where a paged search resumes in it.
struct Part {
    index: usize,
    scope: Option<canopy_proto::SearchScope>,
    resume_after: Option<u64>,
}

/// Whether a search goes on into its next part.
enum Flow {
    Continue,
    /// A page is full (its cookie sent) or the paged search was abandoned.
    Done,
}

/// What the parts of a search across glued databases share: the attribute selection, the limits (the first part's database's,
/// as slapd's frontend sets them before glue splits the search) and the entries sent so far.
struct Run<'s> {
    selection: &'s Selection,
    limits: Option<Limits>,
    /// Entries sent by this request's earlier parts.
    sent: usize,
    /// Entries sent on earlier pages.
    before: usize,
    /// A sorted search's candidates, collected in place of being sent (ops/search/sort.rs).
    sorted: Option<sort::Collector>,
}

/// The search in one database: the requested one (`part.scope` None), or a glued database's part of it
/// with its own scope, based at that database's suffix.
#[allow(clippy::too_many_arguments)]
fn search_part(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    done_controls: &mut Vec<Control>,
    dir: &Database,
    base_dn: Arc<canopy_proto::Dn>,
    base: Arc<NormDn>,
    part: Part,
    run: &mut Run<'_>,
) -> Result<Flow, Stop> {
    let schema = job.state.databases.schema();
    let who = dir.requester(&job.who);
    let who = who.as_ref();
    let txn = dir.read()?;
    let groups = GroupReader { dir, txn: &txn };
    let access = SearchAccess::new(dir.acl().checker(schema, who, &groups)).with_memo(MemoKey {
        memo: &job.views,
        state: &job.state,
        who: &job.who,
    });
    let root = who.root;
    let needs_entry = dir.acl().needs_entry() && !root;
    let answers = entry_answers(job, dir)?;
    let spec = SearchSpec {
        base_dn,
        base,
        query: Query {
            scope: part.scope.unwrap_or(job.req.scope),
            deref: job.req.deref,
            manage_dsa_it: job.ctl.manage_dsa_it,
            filter: &job.req.filter,
            subentries: Subentries::of_control(job.ctl.subentries),
        },
        schema,
        resume_after: part.resume_after,
        read_hook: dir.read_hook(job.ctl.manage_dsa_it),
    };
    let mut reader = SearchReader {
        job,
        sink,
        dir,
        who,
        part: &part,
        run,
        done_controls,
        access: &access,
        requester: SearchRequester::new(&access, root, needs_entry),
        schema,
        hidden_filters: HiddenFilters::default(),
        // The candidates' normalized DNs are made only when the access rules need them (or the
        // read hook's requester does); otherwise the view reads whether an entry is the
        // requester's own from its stored RDNs.
        with_ndn: !root && (access.needs_ndn() || needs_entry),
        needs_entry,
        need_computed: false,
        every_entry: None,
        plain_filter: false,
        secret_in_filter: false,
        deadline: None,
        view: None,
        judged: 0,
        txn: &txn,
        answers: &answers,
    };
    let Some(ended) = dir.backend().search(&txn, spec, &mut reader)? else {
        return Ok(Flow::Done);
    };
    let run = reader.run;
    if ended.page_full {
        let resume = ended.last_sent.unwrap_or(0);
        let cookie = make_cookie(part.index, resume, run.before + run.sent + ended.sent);
        reader.done_controls.push(paged_control(cookie));
        return Ok(Flow::Done);
    }
    run.sent += ended.sent;
    Ok(Flow::Continue)
}

/// The answers of `dir`'s hooks to the request controls they answer on each entry. A control some
/// database's hook serves is checked even where this one does not serve it, as slapd checks an
/// overlay's control once its module is loaded; one no hook serves is left alone.
fn entry_answers(job: &SearchJob, dir: &Database) -> Result<Vec<Box<dyn EntryAnswer>>, LdapError> {
    let mut answers = Vec::new();
    for control in &job.ctl.entry_requests {
        let oid = control.oid.as_str();
        let own = dir.front_hooks().find(|hook| hook.serves_control(oid));
        let checked = match own {
            Some(hook) => hook.entry_answer(dir, control)?,
            None => {
                let databases = &job.state.databases;
                let other = databases.iter().find_map(|db| {
                    db.front_hooks()
                        .find(|hook| hook.serves_control(oid))
                        .map(|hook| (db, hook))
                });
                if let Some((db, hook)) = other {
                    hook.entry_answer(db, control)?;
                }
                None
            }
        };
        answers.extend(checked);
    }
    Ok(answers)
}

fn unreadable() -> LdapError {
    LdapError::new(ResultCode::Other, "stored entry is unreadable")
}

fn paged_control(cookie: Vec<u8>) -> Control {
    Control {
        oid: CONTROL_PAGED_RESULTS.to_string(),
        critical: false,
        value: Some(PagedResults { size: 0, cookie }.encode()),
    }
}

/// The paged-results cookie: the last ID sent and the number of entries sent so far, 8 bytes each,
/// big-endian, then, in a glued database's part of a search (`part` > 0), the part's number, 8 bytes.
/// IDs only grow, so "after this ID" resumes correctly even when entries change between pages.
fn make_cookie(part: usize, last: u64, sent: usize) -> Vec<u8> {
    let mut cookie = last.to_be_bytes().to_vec();
    cookie.extend_from_slice(&(sent as u64).to_be_bytes());
    if part > 0 {
        cookie.extend_from_slice(&(part as u64).to_be_bytes());
    }
    cookie
}

/// Where a paged search resumes (`make_cookie`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cookie {
    part: usize,
    last: u64,
    sent: usize,
}

fn parse_cookie(cookie: &[u8]) -> Option<Cookie> {
    let word = |at: usize| {
        let bytes: [u8; 8] = cookie.get(at..at + 8)?.try_into().ok()?;
        usize::try_from(u64::from_be_bytes(bytes)).ok()
    };
    let last = u64::try_from(word(0)?).ok()?;
    let sent = word(8)?;
    match cookie.len() {
        16 => Some(Cookie {
            part: 0,
            last,
            sent,
        }),
        24 => Some(Cookie {
            part: word(16)?.max(1),
            last,
            sent,
        }),
        _ => None,
    }
}

/// The glued parts of a search in configuration order, as slapd's glue visits its subordinates, except
/// that a database held inside another glued one follows it (each outer database, then the ones it
/// holds, outer before inner).
fn glued_in_order(
    glued: Vec<(&Database, canopy_proto::SearchScope)>,
) -> Vec<(&Database, canopy_proto::SearchScope)> {
    let outermost = |db: &Database| {
        (0..glued.len())
            .filter(|&i| glued[i].0.suffix().is_suffix_of(db.suffix()))
            .min_by_key(|&i| glued[i].0.suffix().rdns().len())
            .unwrap_or(0)
    };
    let keys: Vec<(usize, usize)> = glued
        .iter()
        .map(|(db, _)| (outermost(db), db.suffix().rdns().len()))
        .collect();
    let mut order: Vec<usize> = (0..glued.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    order.into_iter().map(|i| glued[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::reader::{as_slapd_sees_with_mentions, mentions_of};
    use super::*;

    #[test]
    fn one_walk_sees_and_mentions_as_the_two_walks() {
        let schema = canopy_schema::Schema::builtin();
        for text in [
            "(uid=user0001234)",
            "(objectClass=*)",
            "(&(uid=a)(cn=b))",
            "(userPassword=x)",
            "(userPassword;x-tag=x)",
            "(name=x)",
            "(hasSubordinates=TRUE)",
            "(entryDN=uid=a,dc=example,dc=com)",
            "(subschemaSubentry=cn=Subschema)",
            "(|(subschemaSubentry=cn=Subschema)(uid=a))",
            "(!(subschemaSubentry~=cn=Subschema))",
            "(subschemaSubentry=*)",
            "(subschemaSubentry:distinguishedNameMatch:=cn=Subschema)",
            "(subschemaSubentry:caseIgnoreMatch:=cn=Subschema)",
            "(&(subschemaSubentry=cn=Subschema)(userPassword=*))",
            "(:caseIgnoreMatch:=x)",
            "(unknownAttr=x)",
            "(authPassword=*)",
            "(&(cn>=a)(sn<=b)(mail=*x*))",
        ] {
            let filter = Filter::parse(text).unwrap();
            let (seen, mentioned) = as_slapd_sees_with_mentions(&schema, &filter);
            let want = as_slapd_sees(&schema, &filter);
            let want_mentioned = mentions_of(&schema, &want);
            assert_eq!(*seen, *want, "{text}");
            assert_eq!(
                matches!(seen, Cow::Borrowed(_)),
                matches!(want, Cow::Borrowed(_)),
                "{text}"
            );
            assert_eq!(
                (mentioned.computed, mentioned.secret),
                (want_mentioned.computed, want_mentioned.secret),
                "{text}"
            );
        }
    }

    #[test]
    fn cookies_name_their_part() {
        let first = make_cookie(0, 42, 7);
        assert_eq!(
            first.len(),
            16,
            "the requested database's cookie keeps its form"
        );
        let want = Cookie {
            part: 0,
            last: 42,
            sent: 7,
        };
        assert_eq!(parse_cookie(&first), Some(want));
        let glued = make_cookie(2, 0, 30);
        assert_eq!(
            parse_cookie(&glued),
            Some(Cookie {
                part: 2,
                last: 0,
                sent: 30
            })
        );
        for bad in [&b""[..], &[0; 15][..], &[0; 17][..], &[0; 32][..]] {
            assert_eq!(parse_cookie(bad), None, "{bad:?}");
        }
    }
}
