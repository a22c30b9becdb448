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
use canopy_directory::search::{decoded, Query};
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
use crate::databases::Database;
use crate::filter_view::{as_slapd_sees, without_attrs};
use crate::limits::PagedTotal;
use crate::ops::{encode, error_result, OpError};
use crate::out::Responses;
use crate::readentry::{check_assertion, load};
use crate::reqctl::RequestControls;
use crate::select::Selection;
use crate::special;
use crate::state::State;

/// Everything a running search needs; it runs on a blocking thread and streams entries into `tx`.
pub struct SearchJob {
    pub state: State,
    /// Shared with the connection until its identity changes: a search does not copy it.
    pub who: Arc<Who>,
    /// The connection's memo of access decisions (acl/view.rs `ViewMemo`).
    pub views: Arc<crate::acl::ViewMemo>,
    pub message_id: i32,
    pub req: SearchRequest,
    pub paged: Option<PagedResults>,
    pub ctl: RequestControls,
    pub cancel: Arc<AtomicBool>,
    pub tx: Responses,
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
    let mut sink = Sink::queue(&job.tx);
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
    let glued = glued_in_order(state.databases.glued(dir, &base, job.req.scope));
    // A paged search across glued databases goes on where its cookie says: which part, after which ID.
    let resume = job
        .paged
        .as_ref()
        .filter(|p| p.size > 0)
        .and_then(|p| parse_cookie(&p.cookie));
    let first_part = resume.map_or(0, |c| c.part);
    let mut run = Run {
        selection: &selection,
        limits: None,
        sent: 0,
        before: resume.map_or(0, |c| c.sent),
    };
    if first_part > 0 {
        // The limits are the requested database's, even on a page that starts in a glued one.
        let who = dir.requester(&job.who);
        let txn = dir.read()?;
        run.limits = Some(limits(job, dir, &who, &txn)?);
    }
    let parts =
        std::iter::once((dir, base_dn, base, None)).chain(glued.into_iter().map(|(db, scope)| {
            let (dn, ndn) = (db.suffix_dn().clone(), db.suffix().clone());
            (db, Arc::new(dn), Arc::new(ndn), Some(scope))
        }));
    for (index, (db, part_dn, part_ndn, scope)) in parts.enumerate().skip(first_part) {
        let part = Part {
            index,
            scope,
            resume_after: resume.filter(|c| c.part == index).map(|c| c.last),
        };
        match search_part(
            job,
            sink,
            done_controls,
            db,
            part_dn,
            part_ndn,
            part,
            &mut run,
        ) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Done) => return Ok(()),
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
    if job.paged.is_some() {
        done_controls.push(paged_control(Vec::new()));
    }
    Ok(())
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
    let spec = SearchSpec {
        base_dn,
        base,
        query: Query {
            scope: part.scope.unwrap_or(job.req.scope),
            deref: job.req.deref,
            manage_dsa_it: job.ctl.manage_dsa_it,
            filter: &job.req.filter,
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

/// The frontend's side of a search of one database ([`Searcher`] and [`Reader`]): the base's access,
/// the assertion and the limits, the filter as slapd tests it, the lookthrough limit and the page,
/// then access decided per entry through the requester's views, the one exact filter test, and the
/// encoding into the sink.
struct SearchReader<'r, 's, 'k, 'u> {
    job: &'r SearchJob,
    sink: &'r mut Sink<'k>,
    dir: &'r Database,
    who: &'r Who,
    part: &'r Part,
    run: &'r mut Run<'u>,
    done_controls: &'r mut Vec<Control>,
    access: &'r SearchAccess<'r>,
    requester: SearchRequester<'r>,
    schema: &'s Arc<canopy_schema::Schema>,
    hidden_filters: HiddenFilters<'s>,
    with_ndn: bool,
    /// Access rules that test the entry's attributes: the entry is decoded for them.
    needs_entry: bool,
    /// The filter or the answer uses computed attributes.
    need_computed: bool,
    /// `(objectClass=*)` with nothing computed: every entry the requester may see matches (known at
    /// the first test).
    every_entry: Option<bool>,
    /// No `val=` rules and no password attribute in the filter.
    plain_filter: bool,
    secret_in_filter: bool,
    deadline: Option<Instant>,
    /// The access view of the entry judged last (None for the root DN, which sees everything).
    view: Option<std::rc::Rc<EntryView>>,
}

impl Requester for SearchReader<'_, '_, '_, '_> {
    fn finds(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        filter: &PreparedFilter<'_>,
        computed: &[Attribute],
    ) -> bool {
        self.requester.finds(ndn, stored, filter, computed)
    }

    fn reads(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>, desc: &str) -> bool {
        self.requester.reads(ndn, stored, desc)
    }
}

impl Searcher for SearchReader<'_, '_, '_, '_> {
    fn conceal(&mut self, txn: &Snapshot, error: LdapError) -> LdapError {
        hide_matched(self.dir, txn, self.who, error)
    }

    fn base(&mut self, txn: &Snapshot, found: &Base) -> Result<(), Stop> {
        // slapd checks access to the base before the assertion control.
        let (dir, who, job) = (self.dir, self.who, self.job);
        base_access(dir, self.access, txn, &found.ndn, found.id)?;
        if let Some(filter) = job
            .ctl
            .assertion
            .as_ref()
            .filter(|_| self.part.scope.is_none())
        {
            if let Some(bytes) = dir.stored(txn, found.id)? {
                check_assertion(self.schema, &load(dir, txn, who, found.id, bytes)?, filter)?;
            }
        }
        let limits = match &self.run.limits {
            Some(limits) => limits.clone(),
            None => limits(job, dir, who, txn)?,
        };
        self.deadline = limits.deadline;
        self.run.limits = Some(limits);
        Ok(())
    }

    fn searches(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>, attr: &str) -> bool {
        if self.access.is_root() {
            return true;
        }
        let full = self
            .needs_entry
            .then(|| decoded(stored, true).ok())
            .flatten();
        let view = self.access.view(ndn, full.as_ref());
        self.access.allows_attr(&view, attr, privileges::SEARCH)
    }

    fn tested<'f>(&mut self, filter: &'f Filter) -> Cow<'f, Filter> {
        let (filter, mentioned) = as_slapd_sees_with_mentions(self.schema, filter);
        let selection = self.run.selection;
        // Computed attributes cost a lookup per candidate: made only when the filter or the answer
        // uses them.
        self.need_computed =
            mentioned.computed || COMPUTED.iter().any(|name| selection.wants_computed(name));
        // Secret attributes the requester may not search must be hidden from the filter only if it
        // can test them.
        self.secret_in_filter = mentioned.secret;
        // Without `val=` rules and without a password attribute in the filter, a view that lets
        // every plain attribute be searched hides nothing the filter tests: no hidden filter to
        // make (`hidden_filter` would find the same through a decision per attribute).
        self.plain_filter =
            !self.secret_in_filter && !self.access.checker().acl().has_value_rules();
        filter
    }

    fn asks(&self, attr: &str) -> bool {
        self.run.selection.wants(self.schema, attr)
    }

    fn tests(&self, filter: &Filter, attr: &str) -> bool {
        let schema = self.schema;
        mentions(filter, &mut |desc| {
            desc.is_none_or(|d| {
                let name = d.split(';').next().unwrap_or(d);
                schema
                    .attribute_type(name)
                    .map(|at| at.name())
                    .unwrap_or(name)
                    .eq_ignore_ascii_case(attr)
            })
        })
    }

    fn planned(&mut self, txn: &Snapshot, scan: &Scan<'_>) -> Result<Option<Room>, Stop> {
        let job = self.job;
        // A database that scans by design (a small tree rebuilt in memory) logs no unindexed
        // search.
        let by_design = || {
            job.state
                .backend(self.dir)
                .is_some_and(|b| b.scans_by_design())
        };
        if scan.unindexed() && !by_design() {
            let filter = crate::redact::filter_for_log(self.schema, &job.req.filter);
            tracing::info!(%filter, "unindexed search: scanning the scope");
            job.tally.unindexed.set(true);
        }
        let Some(limits) = self.run.limits.clone() else {
            return Err(LdapError::new(ResultCode::Other, "search limits not set").into());
        };
        // slapd's size.unchecked: too many candidates to examine is refused before examining any.
        let over = match limits.lookthrough {
            Some(max) => scan.candidate_count(txn)? > max,
            None => false,
        };
        if over {
            return Err(LdapError::new(
                ResultCode::AdminLimitExceeded,
                "lookthrough limit exceeded",
            )
            .into());
        }
        let page_size = match &job.paged {
            Some(paged) => {
                if paged.size <= 0 {
                    // RFC 2696 §3: size 0 with a cookie abandons the paged result set (slapd
                    // answers with no paged-results control). Without one, slapd sends no entry
                    // and a cookie from which the next request starts at the beginning.
                    if paged.cookie.is_empty() {
                        self.done_controls.push(paged_control(make_cookie(0, 0, 0)));
                    }
                    return Ok(None);
                }
                if !paged.cookie.is_empty() && parse_cookie(&paged.cookie).is_none() {
                    return Err(LdapError::new(
                        ResultCode::ProtocolError,
                        "paged results cookie is invalid",
                    )
                    .into());
                }
                Some(paged.size as usize)
            }
            None => None,
        };
        // Entries sent on earlier pages and parts count against the size limit, as they do in
        // slapd.
        let run = &self.run;
        Ok(Some(Room {
            size: limits
                .size
                .map(|limit| limit.saturating_sub(run.before + run.sent)),
            page: page_size.map(|size| size.saturating_sub(run.sent)),
        }))
    }
}

impl Reader for SearchReader<'_, '_, '_, '_> {
    type Error = Stop;

    fn needs_ndn(&self) -> bool {
        self.with_ndn
    }

    fn needs_computed(&self) -> bool {
        self.need_computed
    }

    fn examined(&mut self, count: u64) -> Result<(), Stop> {
        if self.sink.over_budget(count) {
            return Err(Stop::Overflow);
        }
        if count.is_multiple_of(64) {
            if self.job.cancel.load(Ordering::Relaxed) {
                return Err(Stop::Silent);
            }
            self.sink.flush(false)?;
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(LdapError::new(ResultCode::TimeLimitExceeded, "").into());
            }
        }
        Ok(())
    }

    fn reference(&mut self, urls: Vec<String>) -> Result<(), Stop> {
        let reference = ProtocolOp::SearchResultReference(urls);
        self.sink
            .push(encode(self.job.message_id, reference, Vec::new()))?;
        self.job.tally.reference();
        Ok(())
    }

    fn expanding(&mut self) -> Result<(), Stop> {
        // An expansion runs searches of its own: not on the connection's task.
        match self.sink.is_inline() {
            true => Err(Stop::Overflow),
            false => Ok(()),
        }
    }

    fn judge(
        &mut self,
        _id: u64,
        ndn: Option<&NormDn>,
        stored: &StoredEntry<'_>,
    ) -> Result<(), Stop> {
        if self.access.is_root() {
            self.view = None;
            return Ok(());
        }
        // Access to the entry is decided on the entry as stored: slapd's `dnattr` and `group`
        // clauses do not see the members a dynamic group gains when it is read.
        let full = if self.needs_entry {
            Some(decoded(stored, true)?)
        } else {
            None
        };
        let access = self.access;
        self.view = Some(match ndn {
            Some(ndn) => access.view(ndn, full.as_ref()),
            None => match access.view_stored(stored) {
                Some(view) => view,
                None => access.view(&stored.ndn().map_err(|_| unreadable())?, full.as_ref()),
            },
        });
        Ok(())
    }

    fn clears(&mut self, shown: &StoredEntry<'_>) -> bool {
        self.access.clear(shown, self.view.as_deref()).is_some()
    }

    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        computed: &[Attribute],
        tested: Option<&Tested<'_, '_>>,
    ) -> Result<bool, Stop> {
        let Some(tested) = tested else {
            return Err(LdapError::new(ResultCode::Other, "search without its filter").into());
        };
        let access = self.access;
        let hidden = match &self.view {
            Some(view) if self.plain_filter && view.plain_allows(privileges::SEARCH) => None,
            Some(view) => hidden_filter(
                &mut self.hidden_filters,
                access,
                view,
                self.schema,
                tested.filter,
            ),
            None => None,
        };
        // `(objectClass=*)` with nothing computed: entries go out as stored, without being decoded.
        let need_computed = self.need_computed;
        let every_entry = *self
            .every_entry
            .get_or_insert_with(|| tested.prepared.matches_every_entry() && !need_computed);
        if every_entry && hidden.is_none() {
            return Ok(true);
        }
        // Tested in place: the candidate's attributes are borrowed from the stored bytes.
        let mut subject = StoredView::new(shown);
        if let Some(view) = &self.view {
            searchable_only(access, view, shown, self.secret_in_filter, &mut subject);
        }
        let test = hidden.unwrap_or(tested.prepared);
        Ok(test.evaluate(&subject, computed) == Ternary::True)
    }

    fn send(&mut self, shown: &StoredEntry<'_>, computed: &[Attribute]) -> Result<(), Stop> {
        let Some(cleared) = self.access.clear(shown, self.view.as_deref()) else {
            return Ok(());
        };
        let (job, selection) = (self.job, self.run.selection);
        self.sink
            .push_encoded(|out| encode_stored(job, selection, &cleared, computed, out))?;
        job.tally.entry();
        Ok(())
    }
}

/// The requester of a search as the dynlist expansion asks about it: the URL searches of a dynamic
/// entry run with the requester's access, as slapd's internal searches run with its identity.
pub(crate) struct SearchRequester<'a> {
    access: &'a SearchAccess<'a>,
    root: bool,
    needs_entry: bool,
    /// The view of the entry asked about last: a list asks about each attribute of an entry found.
    last: Option<(NormDn, std::rc::Rc<EntryView>)>,
}

impl<'a> SearchRequester<'a> {
    pub(crate) fn new(access: &'a SearchAccess<'a>, root: bool, needs_entry: bool) -> Self {
        SearchRequester {
            access,
            root,
            needs_entry,
            last: None,
        }
    }

    fn view(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>) -> std::rc::Rc<EntryView> {
        if let Some((last, view)) = &self.last {
            if last == ndn {
                return view.clone();
            }
        }
        let full = self
            .needs_entry
            .then(|| decoded(stored, true).ok())
            .flatten();
        let view = self.access.view(ndn, full.as_ref());
        self.last = Some((ndn.clone(), view.clone()));
        view
    }
}

impl Requester for SearchRequester<'_> {
    fn finds(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        filter: &PreparedFilter<'_>,
        computed: &[Attribute],
    ) -> bool {
        let mut subject = StoredView::new(stored);
        if !self.root {
            let view = self.view(ndn, stored);
            if !view.allows_entry(privileges::READ) {
                return false;
            }
            searchable_only(self.access, &view, stored, true, &mut subject);
        }
        filter.evaluate(&subject, computed) == Ternary::True
    }

    fn reads(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>, desc: &str) -> bool {
        if self.root {
            return true;
        }
        let view = self.view(ndn, stored);
        self.access.allows_attr(&view, desc, privileges::READ)
    }
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

/// Attributes computed when read (contextCSN only on the suffix entry).
const COMPUTED: [&str; 4] = [
    "hasSubordinates",
    "entryDN",
    "subschemaSubentry",
    "contextCSN",
];

/// Whether a filter may test a computed attribute (an extensible match without a type tests every one).
/// What of a filter's attributes the search must care about, from one schema lookup per attribute.
struct Mentions {
    /// A computed attribute (which costs a lookup per candidate), or an extensible match without a type.
    computed: bool,
    /// A secret attribute (userPassword, authPassword), a supertype (which may stand for one), or an
    /// extensible match without a type.
    secret: bool,
}

fn mentions_of(schema: &canopy_schema::Schema, filter: &Filter) -> Mentions {
    let mut found = Mentions {
        computed: false,
        secret: false,
    };
    mentions(filter, &mut |desc| {
        let Some(desc) = desc else {
            found.computed = true;
            found.secret = true;
            return true;
        };
        mention(schema, desc, &mut found);
        found.computed && found.secret
    });
    found
}

/// Adds what the attribute `desc` (of a filter item) is to `found`; its type, when the schema knows it.
fn mention<'s>(
    schema: &'s canopy_schema::Schema,
    desc: &str,
    found: &mut Mentions,
) -> Option<&'s canopy_schema::AttributeType> {
    let name = desc.split(';').next().unwrap_or(desc);
    let at = schema.attribute_type(name);
    let canonical = at.map(|at| at.name()).unwrap_or(name);
    found.computed |= COMPUTED.iter().any(|c| c.eq_ignore_ascii_case(canonical));
    found.secret |=
        at.is_some_and(|at| at.has_subtypes() || section_of_type(schema, at) == Section::Secret);
    at
}

/// [`as_slapd_sees`] and [`mentions_of`] of the result, from one schema lookup per filter item: a filter
/// is rewritten only when it asserts a value of subschemaSubentry, which the same lookup tells.
fn as_slapd_sees_with_mentions<'f>(
    schema: &canopy_schema::Schema,
    filter: &'f Filter,
) -> (Cow<'f, Filter>, Mentions) {
    let mut found = Mentions {
        computed: false,
        secret: false,
    };
    let mut subschema_values = false;
    items(filter, &mut |item| {
        let Some(desc) = tested_desc(item) else {
            found.computed = true;
            found.secret = true;
            return;
        };
        let at = mention(schema, desc, &mut found);
        // `filter_view::never_holds`, with the type already looked up.
        subschema_values |= crate::filter_view::asserted_attribute(item).is_some()
            && at.is_some_and(|at| at.name().eq_ignore_ascii_case("subschemaSubentry"));
    });
    if subschema_values {
        let seen = as_slapd_sees(schema, filter);
        let mentioned = mentions_of(schema, &seen);
        (seen, mentioned)
    } else {
        (Cow::Borrowed(filter), found)
    }
}

/// Visits the items of a filter (what is not AND, OR, NOT or Undefined).
fn items<'f>(filter: &'f Filter, visit: &mut dyn FnMut(&'f Filter)) {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => parts.iter().for_each(|f| items(f, visit)),
        Filter::Not(inner) => items(inner, visit),
        Filter::Undefined => {}
        item => visit(item),
    }
}

/// The attribute description an item tests (None: an extensible match without a type).
fn tested_desc(item: &Filter) -> Option<&str> {
    match item {
        Filter::Equality(attr, _)
        | Filter::GreaterOrEqual(attr, _)
        | Filter::LessOrEqual(attr, _)
        | Filter::Approx(attr, _)
        | Filter::Present(attr) => Some(attr),
        Filter::Substrings(sub) => Some(&sub.attr),
        Filter::Extensible(mra) => mra.attr.as_deref(),
        Filter::And(_) | Filter::Or(_) | Filter::Not(_) | Filter::Undefined => None,
    }
}

/// Whether `test` holds for an attribute description of the filter (None: an extensible match without
/// a type).
fn mentions(filter: &Filter, test: &mut dyn FnMut(Option<&str>) -> bool) -> bool {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => parts.iter().any(|f| mentions(f, test)),
        Filter::Not(inner) => mentions(inner, test),
        Filter::Equality(attr, _)
        | Filter::GreaterOrEqual(attr, _)
        | Filter::LessOrEqual(attr, _)
        | Filter::Approx(attr, _)
        | Filter::Present(attr) => test(Some(attr)),
        Filter::Substrings(sub) => test(Some(&sub.attr)),
        Filter::Extensible(mra) => test(mra.attr.as_deref()),
        Filter::Undefined => false,
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

/// Encodes an entry access control cleared, with the attributes the requester may read.
fn encode_stored(
    job: &SearchJob,
    selection: &Selection,
    cleared: &Cleared<'_, '_>,
    computed: &[Attribute],
    out: &mut Vec<u8>,
) {
    let (stored, readable) = (cleared.stored(), cleared.rights());
    let schema = job.state.databases.schema();
    let values_ruled = readable.is_some_and(|(access, _)| access.checker().acl().has_value_rules());
    let plain =
        !values_ruled && readable.is_none_or(|(_, view)| view.plain_allows(privileges::READ));
    let reads = |desc: &str| {
        readable.is_none_or(|(access, view)| access.allows_attr(view, desc, privileges::READ))
    };
    if plain && selection.is_all_user_only() && !job.req.types_only {
        // The common answer is the stored bytes themselves, with the passwords the requester may read.
        let secret = readable.map_or(Some(true), |(_, view)| {
            view.secret.map(|m| m & privileges::READ != 0)
        });
        match secret {
            _ if stored.secret.is_empty() => {
                encode_search_result_entry_raw(out, job.message_id, stored.dn, stored.user);
            }
            Some(false) => {
                encode_search_result_entry_raw(out, job.message_id, stored.dn, stored.user);
            }
            // The root DN reads the whole password section as it is stored, where the entry was
            // written with its passwords last.
            Some(true) if readable.is_none() && stored.secret_follows_user() => {
                let parts = [stored.user, stored.secret];
                encode_search_result_entry_parts(out, job.message_id, stored.dn, &parts);
            }
            // Others attribute by attribute, in written order: reading userPassword never means
            // reading the SCRAM secrets in authPassword (acl::Checker::decide_with).
            Some(true) | None => {
                let mut attrs = Vec::with_capacity(stored.user.len() + stored.secret.len());
                for (section, desc, tlv, _) in
                    stored.in_order([true, true, false]).filter_map(Result::ok)
                {
                    if section == 0 || readable.is_none() || reads(desc) {
                        attrs.extend_from_slice(tlv);
                    }
                }
                encode_search_result_entry_raw(out, job.message_id, stored.dn, &attrs);
            }
        }
        return;
    }
    let mut attrs = Vec::with_capacity(512);
    for item in stored.in_order([true; 3]) {
        let Ok((index, desc, tlv, _)) = item else {
            continue;
        };
        if !selection.wants(schema, desc) || ((index == 1 || !plain) && !reads(desc)) {
            continue;
        }
        match readable.filter(|(access, _)| values_ruled && access.value_ruled(desc)) {
            Some((access, view)) => {
                encode_readable_values(&mut attrs, tlv, desc, access, view, job.req.types_only)
            }
            None if job.req.types_only => encode_partial_attribute(&mut attrs, desc, &[]),
            None => attrs.extend_from_slice(tlv),
        }
    }
    for attr in computed {
        if selection.wants_computed(&attr.desc) && (plain || reads(&attr.desc)) {
            let values: Vec<&[u8]> = if job.req.types_only {
                Vec::new()
            } else {
                attr.values.iter().map(|v| v.as_slice()).collect()
            };
            encode_partial_attribute(&mut attrs, &attr.desc, &values);
        }
    }
    encode_search_result_entry_raw(out, job.message_id, stored.dn, &attrs);
}

/// An attribute under `val=` rules: only the values the requester may read (nothing if none).
fn encode_readable_values(
    attrs: &mut Vec<u8>,
    section: &[u8],
    desc: &str,
    access: &SearchAccess<'_>,
    view: &EntryView,
    types_only: bool,
) {
    let Some(Ok((_, values))) =
        canopy_core::wire::attributes(section).find(|a| a.as_ref().is_ok_and(|(d, _)| *d == desc))
    else {
        return;
    };
    let readable: Vec<&[u8]> = values
        .into_iter()
        .filter(|v| access.allows_value(view, desc, v, privileges::READ))
        .collect();
    if readable.is_empty() {
        return;
    }
    encode_partial_attribute(attrs, desc, if types_only { &[] } else { &readable });
}

/// slapd requires `search` on the base entry; without `disclose` either, the base does not exist.
fn base_access(
    dir: &Database,
    access: &SearchAccess<'_>,
    txn: &Snapshot,
    base: &Arc<NormDn>,
    base_id: u64,
) -> Result<(), LdapError> {
    if access.is_root() {
        return Ok(());
    }
    // Only rules with a filter look at the base's attributes: decode it for them alone. Without such
    // rules the decision rests on the DN and is remembered per connection.
    let mask = if access.checker().acl().needs_entry() {
        let Some(bytes) = dir.stored(txn, base_id)? else {
            return Ok(());
        };
        let entry = decoded(&Directory::parse_stored(bytes)?, true)?;
        let target = Target {
            ndn: base,
            entry: Some(&entry),
        };
        access.checker().decide(target, AttrRef::Entry).mask
    } else {
        access.base_entry(base)
    };
    if mask & privileges::SEARCH != 0 {
        Ok(())
    } else if mask & privileges::DISCLOSE != 0 {
        Err(LdapError::new(ResultCode::InsufficientAccessRights, ""))
    } else {
        Err(LdapError::new(ResultCode::NoSuchObject, ""))
    }
}

/// The filters of a search's entry views, built once per shared view.
#[derive(Default)]
struct HiddenFilters<'s> {
    /// By view number, once built: None when the view may search every attribute the filter tests.
    shared: Vec<Option<Option<PreparedFilter<'s>>>>,
    /// For a view of one entry (more varying rules than a view can tell apart).
    single: Option<PreparedFilter<'s>>,
}

/// The filter for the entries of `view`: tests of attributes without `search` are Undefined (None when
/// every attribute the filter tests is searchable).
fn hidden_filter<'c, 's>(
    cache: &'c mut HiddenFilters<'s>,
    access: &SearchAccess<'_>,
    view: &EntryView,
    schema: &'s canopy_schema::Schema,
    filter: &Filter,
) -> Option<&'c PreparedFilter<'s>> {
    let build = || match without_attrs(filter, |desc, value| match value {
        Some(value) if access.value_ruled(desc) => {
            !access.allows_value(view, desc, value, privileges::SEARCH)
        }
        _ => !access.allows_attr(view, desc, privileges::SEARCH),
    }) {
        Cow::Owned(f) => Some(PreparedFilter::new(schema, &f)),
        Cow::Borrowed(_) => None,
    };
    match view.shared {
        Some(number) => {
            if cache.shared.len() <= number {
                cache.shared.resize_with(number + 1, || None);
            }
            let slot = cache.shared.get_mut(number)?;
            if slot.is_none() {
                *slot = Some(build());
            }
            slot.as_ref().and_then(Option::as_ref)
        }
        None => {
            cache.single = build();
            cache.single.as_ref()
        }
    }
}

/// Removes the attributes the requester may not search, so no filter (an extensible match without a
/// type included) can test them.
fn searchable_only<'a>(
    access: &SearchAccess<'_>,
    view: &EntryView,
    stored: &StoredEntry<'a>,
    secret_in_filter: bool,
    subject: &mut StoredView<'a>,
) {
    if view.plain_allows(privileges::SEARCH) {
        if !secret_in_filter {
            return;
        }
        for item in attribute_tlvs(stored.secret) {
            let Ok((desc, _)) = item else { continue };
            if !access.allows_attr(view, desc, privileges::SEARCH) {
                subject.hide(desc);
            }
        }
    } else {
        let hidden: Vec<&'a str> = subject
            .descriptions()
            .filter(|desc| !access.allows_attr(view, desc, privileges::SEARCH))
            .collect();
        for desc in hidden {
            subject.hide(desc);
        }
    }
}

/// The root DSE and cn=Subschema: built in memory, selected and filtered like any entry.
fn send_special(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    selection: &Selection,
    entry: &Entry,
) -> Result<(), Stop> {
    let schema = job.state.databases.schema();
    if evaluate(schema, entry, &[], &as_slapd_sees(schema, &job.req.filter)) != Ternary::True {
        return Ok(());
    }
    let mut attrs = Vec::new();
    for attr in &entry.attrs {
        if !selection.wants(schema, &attr.desc) || (is_secret(schema, &attr.desc) && !job.who.root)
        {
            continue;
        }
        let values: Vec<&[u8]> = if job.req.types_only {
            Vec::new()
        } else {
            attr.values.iter().map(|v| v.as_slice()).collect()
        };
        encode_partial_attribute(&mut attrs, &attr.desc, &values);
    }
    let mut out = Vec::new();
    encode_search_result_entry_raw(
        &mut out,
        job.message_id,
        entry.dn.to_string().as_bytes(),
        &attrs,
    );
    sink.push(out)?;
    job.tally.entry();
    Ok(())
}

#[cfg(test)]
mod tests {
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
