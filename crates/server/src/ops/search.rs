//! RFC 4511 §4.5 Search: candidates from the indexes or the scope, one exact filter test, limits, paging.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use canopy_core::filter::{evaluate, PreparedFilter, Ternary};
use canopy_core::index::plan;
use canopy_core::wire::{attribute_tlvs, section_of, Section, StoredEntry, StoredView};
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, ReadTxn};
use canopy_proto::oid::CONTROL_PAGED_RESULTS;
use canopy_proto::{
    encode_partial_attribute, encode_search_result_entry_parts, encode_search_result_entry_raw,
    Control, DerefAliases, Filter, LdapResult, PagedResults, ProtocolOp, ResultCode, SearchRequest,
    SearchScope,
};
use canopy_schema::NormDn;
use tokio::sync::mpsc::Sender;

use crate::access::{is_secret, Who};
use crate::candidates::resolve;

use crate::acl::ops::hide_matched;
use crate::acl::{privileges, AttrRef, EntryView, SearchAccess, Target};
use crate::alias::{find_base, reach, referral_ids, scope_ids, Reach};
use crate::directory::{store_error, Directory, GroupReader};
use crate::filter_view::{as_slapd_sees, without_attrs};
use crate::limits::PagedTotal;
use crate::ops::{encode, error_result, OpError};
use crate::readentry::{check_assertion, load};
use crate::referral::{continuation, is_alias, is_referral, Referral};
use crate::reqctl::RequestControls;
use crate::select::Selection;
use crate::special;
use crate::state::State;

/// Everything a running search needs; it runs on a blocking thread and streams entries into `tx`.
pub struct SearchJob {
    pub state: State,
    pub who: Who,
    pub message_id: i32,
    pub req: SearchRequest,
    pub paged: Option<PagedResults>,
    pub ctl: RequestControls,
    pub cancel: Arc<AtomicBool>,
    pub tx: Sender<Vec<u8>>,
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
/// A batch waits at most this long for more entries (checked with the abandon flag), so a slow search with
/// few matches still shows its entries as they are found.
const BATCH_WAIT: Duration = Duration::from_millis(5);

/// Where a search's responses go.
enum Sink<'a> {
    /// Streamed into the connection's queue in batches, waiting when it is full (on a blocking thread).
    Queue {
        tx: &'a Sender<Vec<u8>>,
        batch: Vec<u8>,
        since: Option<Instant>,
    },
    /// Collected in memory, within the inline budget.
    Buffer(Vec<Vec<u8>>),
}

impl<'a> Sink<'a> {
    fn queue(tx: &'a Sender<Vec<u8>>) -> Sink<'a> {
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
                *since = None;
                let full = std::mem::replace(batch, Vec::with_capacity(BATCH_BYTES + 1024));
                tx.blocking_send(full).map_err(|_| Stop::Silent)
            }
            Sink::Buffer(_) => {
                let mut message = Vec::with_capacity(1024);
                encode(&mut message);
                self.push(message)
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
            Sink::Buffer(out) if out.len() >= INLINE_RETURNED => Err(Stop::Overflow),
            Sink::Buffer(out) => {
                out.push(message);
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

    fn over_budget(&self, examined: u64) -> bool {
        matches!(self, Sink::Buffer(_)) && examined > INLINE_EXAMINED
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
pub fn run(job: SearchJob) {
    let mut sink = Sink::queue(&job.tx);
    // Abandoned or disconnected (None): what is still batched is dropped with the rest.
    if let Some(done) = finish(&job, &mut sink) {
        if sink.push(done).is_ok() {
            let _ = sink.flush(true);
        }
    }
}

/// Tries the search within the inline budget: all its responses, SearchResultDone last, or None when it
/// must run with [`run`] instead (nothing has been sent then).
pub fn try_inline(job: &SearchJob) -> Option<Vec<Vec<u8>>> {
    let mut sink = Sink::Buffer(Vec::new());
    let done = finish(job, &mut sink)?;
    match sink {
        Sink::Buffer(mut out) => {
            out.push(done);
            Some(out)
        }
        Sink::Queue { .. } => None,
    }
}

/// Executes and encodes the final SearchResultDone; None when nothing more is to be sent (abandoned, or
/// an inline attempt overflowed).
fn finish(job: &SearchJob, sink: &mut Sink<'_>) -> Option<Vec<u8>> {
    let mut done_controls = Vec::new();
    let result = match execute(job, sink, &mut done_controls) {
        Ok(()) => LdapResult::success(),
        Err(Stop::Error(e)) => error_result(e),
        Err(Stop::Referral(r)) => r.into_result(),
        Err(Stop::Silent) | Err(Stop::Overflow) => return None,
    };
    Some(encode(
        job.message_id,
        ProtocolOp::SearchResultDone(result),
        done_controls,
    ))
}

struct Limits {
    size: Option<usize>,
    deadline: Option<Instant>,
    lookthrough: Option<u64>,
}

/// The limits of this search: the identity's (crate::limits), lowered by the client's request.
fn limits(job: &SearchJob, txn: &ReadTxn) -> Result<Limits, LdapError> {
    let mine = crate::limits::SearchLimits::of(&job.state, &job.who, txn)?;
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
    let dir = &state.directory;
    let schema = dir.schema();
    let (base_dn, base) = dir.normalize(&job.req.base)?;
    let selection = Selection::parse(schema, &job.req.attributes);

    if let Some(entry) = special::entry_for(state, &base, job.req.scope) {
        if let Some(filter) = &job.ctl.assertion {
            let seen = crate::readentry::Seen {
                entry: entry.clone(),
                computed: Vec::new(),
            };
            check_assertion(schema, &seen, filter)?;
        }
        return send_special(job, sink, &selection, &entry);
    }
    if !dir.holds(&base) {
        return Err(state.outside_naming_context(&base).into());
    }
    let txn = dir.read()?;
    let deref = job.req.deref;
    let finding = matches!(deref, DerefAliases::FindingBaseObj | DerefAliases::Always);
    let manage = job.ctl.manage_dsa_it;
    let scope = job.req.scope;
    let found = match find_base(dir, &txn, base_dn, base, finding, manage, scope) {
        Ok(found) => found,
        Err(OpError::Ldap(e)) => return Err(hide_matched(dir, &txn, &job.who, e).into()),
        Err(other) => return Err(other.into()),
    };
    let (base, base_id) = (found.ndn, found.id);
    // slapd checks access to the base before the assertion control.
    let groups = GroupReader { dir, txn: &txn };
    let access = SearchAccess::new(dir.acl().checker(schema, &job.who, &groups));
    base_access(&access, &txn, &base, base_id)?;
    if let Some(filter) = &job.ctl.assertion {
        if let Some(bytes) = txn.get_entry(base_id).map_err(store_error)? {
            check_assertion(schema, &load(dir, &txn, &job.who, base_id, bytes)?, filter)?;
        }
    }
    let limits = limits(job, &txn)?;

    let (mut candidates, indexed) = candidates(dir, &txn, job, &base, base_id)?;
    // RFC 4511 §4.5.1.3: aliases inside the scope lead to more places; RFC 3296 §5.3: referral objects
    // inside it are continuation references whatever the filter says.
    let searching = matches!(deref, DerefAliases::InSearching | DerefAliases::Always)
        && scope != SearchScope::BaseObject;
    let references = !manage && scope != SearchScope::BaseObject;
    let reach = if searching {
        reach(dir, &txn, &base, base_id, scope)?
    } else {
        Reach::default()
    };
    let mut extra = reach.ids.clone();
    if references && indexed {
        // Index candidates follow the filter; referral objects are sent whatever it says.
        let subtree = scope != SearchScope::SingleLevel;
        extra.extend(referral_ids(dir, &txn, &base, base_id, subtree)?);
    }
    // Every entry of the database includes the extra ones.
    if let (Candidates::Ids(ids), false) = (&mut candidates, extra.is_empty()) {
        ids.extend(extra);
        ids.sort_unstable();
        ids.dedup();
    }
    let examine = match &candidates {
        Candidates::Ids(ids) => ids.len() as u64,
        Candidates::All { .. } => txn.entry_count().map_err(store_error)?,
    };
    // slapd's size.unchecked: too many candidates to examine is refused before examining any.
    if limits.lookthrough.is_some_and(|max| examine > max) {
        return Err(
            LdapError::new(ResultCode::AdminLimitExceeded, "lookthrough limit exceeded").into(),
        );
    }
    // Entries sent on earlier pages count against the size limit, as they do in slapd.
    let mut sent_before = 0usize;
    let page_size = match &job.paged {
        Some(paged) => {
            if paged.size <= 0 {
                // RFC 2696 §3: size 0 abandons the paged result set.
                done_controls.push(paged_control(Vec::new()));
                return Ok(());
            }
            if !paged.cookie.is_empty() {
                let Some((last, earlier)) = parse_cookie(&paged.cookie) else {
                    return Err(LdapError::new(
                        ResultCode::ProtocolError,
                        "paged results cookie is invalid",
                    )
                    .into());
                };
                match &mut candidates {
                    Candidates::Ids(ids) => ids.retain(|id| *id > last),
                    Candidates::All { from } => *from = last.saturating_add(1),
                }
                sent_before = earlier;
            }
            Some(paged.size as usize)
        }
        None => None,
    };

    // Computed attributes cost a lookup per candidate: make them only when the filter or the answer uses them.
    let filter = as_slapd_sees(schema, &job.req.filter);
    let need_computed = mentions_computed(schema, &filter)
        || COMPUTED.iter().any(|name| selection.wants_computed(name));
    // Assertion values are normalized once per search, not once per candidate.
    let prepared = PreparedFilter::new(schema, &filter);
    // `(objectClass=*)` with nothing computed: entries go out as stored, without being decoded.
    let every_entry = prepared.matches_every_entry() && !need_computed;
    // Access decisions are made once per kind of entry (see acl::view), not once per entry.
    let root = job.who.root;
    let needs_entry = dir.acl().needs_entry() && !root;
    // Secret attributes the requester may not search must be hidden from the filter only if it can test them.
    let secret_in_filter = mentions_secret(schema, &filter);
    // Referral objects and aliases by ID from the objectClass index (once per snapshot), else by class.
    let referrals = if references {
        dir.class_ids(&txn, "referral")?
    } else {
        None
    };
    let aliases = if searching {
        dir.class_ids(&txn, "alias")?
    } else {
        None
    };
    let mut hidden_filters = HiddenFilters::default();
    let mut sent = 0usize;
    let mut examined = 0u64;
    let mut last_sent = None;
    let items: Box<dyn Iterator<Item = CandidateItem<'_>>> = match &candidates {
        Candidates::Ids(ids) => Box::new(txn.candidate_entries(ids).map_err(store_error)?),
        Candidates::All { from } => Box::new(
            txn.entries_from(*from)
                .map_err(store_error)?
                .map(|item| item.map(|(id, bytes)| (id, Some(bytes)))),
        ),
    };
    for item in items {
        let (id, bytes) = item.map_err(store_error)?;
        examined += 1;
        if sink.over_budget(examined) {
            return Err(Stop::Overflow);
        }
        if examined.is_multiple_of(64) {
            if job.cancel.load(Ordering::Relaxed) {
                return Err(Stop::Silent);
            }
            sink.flush(false)?;
            if limits.deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(LdapError::new(ResultCode::TimeLimitExceeded, "").into());
            }
        }
        let Some(bytes) = bytes else {
            continue;
        };
        let stored = Directory::parse_stored(bytes)?;
        // The scope test reads the stored RDNs; the normalized DN is built only when something needs it.
        let depth = stored.below(base.rdns());
        let scoped = match scope {
            SearchScope::BaseObject => depth == Some(0),
            SearchScope::SingleLevel => depth == Some(1),
            SearchScope::WholeSubtree => depth.is_some(),
            SearchScope::SubordinateSubtree => depth.is_some_and(|d| d > 0),
        };
        let ndn = if root && reach.roots.is_empty() {
            None
        } else {
            Some(stored.ndn().map_err(|_| unreadable())?)
        };
        if !scoped && !ndn.as_ref().is_some_and(|n| reach.contains(n)) {
            continue;
        }
        if references && is_kind(referrals.as_deref(), id, &stored, is_referral) {
            // Sent whatever the filter and the page size say; a page resumes after its last entry, so
            // references past it come again on the next page, as slapd sends them.
            let urls = continuation(&stored, scope);
            sink.push(encode(
                job.message_id,
                ProtocolOp::SearchResultReference(urls),
                Vec::new(),
            ))?;
            continue;
        }
        // Dereferenced aliases stand for their targets; a base alias not dereferenced when finding stays.
        if searching && is_kind(aliases.as_deref(), id, &stored, is_alias) && depth != Some(0) {
            continue;
        }
        let full = if needs_entry {
            Some(visible_entry(&stored, true)?)
        } else {
            None
        };
        let view = match &ndn {
            Some(ndn) if !root => Some(access.view(ndn, full.as_ref())),
            _ => None,
        };
        if view
            .as_ref()
            .is_some_and(|v| !v.allows_entry(privileges::READ))
        {
            continue;
        }
        let hidden = match &view {
            Some(view) => hidden_filter(&mut hidden_filters, &access, view, schema, &filter),
            None => None,
        };
        let computed = if every_entry && hidden.is_none() {
            Vec::new()
        } else {
            // Tested in place: the candidate's attributes are borrowed from the stored bytes.
            let mut subject = StoredView::new(&stored);
            if let Some(view) = &view {
                searchable_only(&access, view, &stored, secret_in_filter, &mut subject);
            }
            let computed = if need_computed {
                computed_attributes(&txn, id, stored.dn)?
            } else {
                Vec::new()
            };
            let test = hidden.unwrap_or(&prepared);
            if test.evaluate(&subject, &computed) != Ternary::True {
                continue;
            }
            computed
        };
        if limits.size.is_some_and(|limit| sent_before + sent >= limit) {
            return Err(LdapError::new(ResultCode::SizeLimitExceeded, "").into());
        }
        if page_size.is_some_and(|size| sent >= size) {
            if let Some(last) = last_sent {
                done_controls.push(paged_control(make_cookie(last, sent_before + sent)));
            }
            return Ok(());
        }
        let readable = view.as_deref().map(|v| (&access, v));
        sink.push_encoded(|out| encode_stored(job, &selection, &stored, &computed, readable, out))?;
        sent += 1;
        last_sent = Some(id);
    }
    if job.paged.is_some() {
        done_controls.push(paged_control(Vec::new()));
    }
    Ok(())
}

fn paged_control(cookie: Vec<u8>) -> Control {
    Control {
        oid: CONTROL_PAGED_RESULTS.to_string(),
        critical: false,
        value: Some(PagedResults { size: 0, cookie }.encode()),
    }
}

/// The paged-results cookie: the last ID sent and the number of entries sent so far, 8 bytes each, big-endian.
/// IDs only grow, so "after this ID" resumes correctly even when entries change between pages.
fn make_cookie(last: u64, sent: usize) -> Vec<u8> {
    let mut cookie = last.to_be_bytes().to_vec();
    cookie.extend_from_slice(&(sent as u64).to_be_bytes());
    cookie
}

fn parse_cookie(cookie: &[u8]) -> Option<(u64, usize)> {
    let last = u64::from_be_bytes(cookie.get(..8)?.try_into().ok()?);
    let sent = u64::from_be_bytes(cookie.get(8..16)?.try_into().ok()?);
    (cookie.len() == 16).then_some((last, sent as usize))
}

/// One candidate as read: its ID and stored bytes (None when an ID has no entry).
type CandidateItem<'t> = Result<(u64, Option<&'t [u8]>), canopy_mdb::StoreError>;

/// The entries a search examines, in ID order.
enum Candidates {
    /// These IDs, ascending.
    Ids(Vec<u64>),
    /// Every entry of the database with an ID from `from` on: an unindexed subtree search from the suffix,
    /// read in one cursor walk over id2entry without listing the IDs first.
    All { from: u64 },
}

/// The candidates: from the indexes when the filter allows (then true), else from the scope.
fn candidates(
    dir: &Directory,
    txn: &ReadTxn,
    job: &SearchJob,
    base: &NormDn,
    base_id: u64,
) -> Result<(Candidates, bool), LdapError> {
    if job.req.scope == SearchScope::BaseObject {
        return Ok((Candidates::Ids(vec![base_id]), false));
    }
    let plan = plan(dir.schema(), dir.indexes(), &job.req.filter);
    if let Some(ids) = resolve(txn, &plan)? {
        return Ok((Candidates::Ids(ids), true));
    }
    let filter = crate::redact::filter_for_log(job.state.directory.schema(), &job.req.filter);
    tracing::info!(%filter, "unindexed search: scanning the scope");
    let subtree = job.req.scope != SearchScope::SingleLevel;
    if subtree && base == dir.suffix() {
        return Ok((Candidates::All { from: 0 }, false));
    }
    let mut ids = scope_ids(dir, txn, base, base_id, subtree)?;
    ids.sort_unstable();
    Ok((Candidates::Ids(ids), false))
}

/// Whether entry `id` is of a class: in `indexed` (ascending IDs) when the index answered, else `test`.
fn is_kind(
    indexed: Option<&[u64]>,
    id: u64,
    stored: &StoredEntry<'_>,
    test: fn(&StoredEntry<'_>) -> bool,
) -> bool {
    match indexed {
        Some(ids) => ids.binary_search(&id).is_ok(),
        None => test(stored),
    }
}

fn unreadable() -> LdapError {
    LdapError::new(ResultCode::Other, "stored entry is unreadable")
}

/// The entry as the filter sees it: secret attributes only for those who may read them.
pub(crate) fn visible_entry(stored: &StoredEntry<'_>, secrets: bool) -> Result<Entry, LdapError> {
    let mut entry = stored.to_entry().map_err(|_| unreadable())?;
    if !secrets {
        let secret: Vec<&str> = canopy_core::wire::attributes(stored.secret)
            .filter_map(|a| a.ok().map(|(d, _)| d))
            .collect();
        entry.attrs.retain(|a| !secret.contains(&a.desc.as_str()));
    }
    Ok(entry)
}

const COMPUTED: [&str; 3] = ["hasSubordinates", "entryDN", "subschemaSubentry"];

/// Whether a filter may test a computed attribute (an extensible match without a type tests every one).
fn mentions_computed(schema: &canopy_schema::Schema, filter: &Filter) -> bool {
    mentions(filter, &|desc| {
        let Some(desc) = desc else { return true };
        let name = desc.split(';').next().unwrap_or(desc);
        let canonical = schema
            .attribute_type(name)
            .map(|at| at.name())
            .unwrap_or(name);
        COMPUTED.iter().any(|c| c.eq_ignore_ascii_case(canonical))
    })
}

/// Whether a filter may test a secret attribute (userPassword, authPassword): one named, a supertype, or
/// an extensible match without a type.
fn mentions_secret(schema: &canopy_schema::Schema, filter: &Filter) -> bool {
    mentions(filter, &|desc| {
        let Some(desc) = desc else { return true };
        let name = desc.split(';').next().unwrap_or(desc);
        schema
            .attribute_type(name)
            .is_some_and(|at| at.has_subtypes() || section_of(schema, at.name()) == Section::Secret)
    })
}

/// Whether `test` holds for an attribute description of the filter (None: an extensible match without
/// a type).
fn mentions(filter: &Filter, test: &dyn Fn(Option<&str>) -> bool) -> bool {
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

/// hasSubordinates, entryDN and subschemaSubentry: computed, never stored.
pub(crate) fn computed_attributes(
    txn: &ReadTxn,
    id: u64,
    dn: &[u8],
) -> Result<Vec<Attribute>, LdapError> {
    let has = txn.has_children(id).map_err(store_error)?;
    Ok(vec![
        Attribute {
            desc: "hasSubordinates".into(),
            values: vec![if has {
                b"TRUE".to_vec()
            } else {
                b"FALSE".to_vec()
            }],
        },
        Attribute {
            desc: "entryDN".into(),
            values: vec![dn.to_vec()],
        },
        Attribute {
            desc: "subschemaSubentry".into(),
            values: vec![special::SUBSCHEMA_DN.as_bytes().to_vec()],
        },
    ])
}

/// Privileges on an entry's attributes: the search's cache and the entry's view; None for the root DN.
type Readable<'v, 'a> = Option<(&'v SearchAccess<'a>, &'v EntryView)>;

fn encode_stored(
    job: &SearchJob,
    selection: &Selection,
    stored: &StoredEntry<'_>,
    computed: &[Attribute],
    readable: Readable<'_, '_>,
    out: &mut Vec<u8>,
) {
    let schema = job.state.directory.schema();
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
            // The root DN reads the whole password section as it is stored.
            Some(true) if readable.is_none() => {
                let parts = [stored.user, stored.secret];
                encode_search_result_entry_parts(out, job.message_id, stored.dn, &parts);
            }
            // Others attribute by attribute: reading userPassword never means reading the SCRAM secrets
            // in authPassword (acl::Checker::decide_with).
            Some(true) | None => {
                let mut attrs = Vec::with_capacity(stored.user.len() + stored.secret.len());
                attrs.extend_from_slice(stored.user);
                for (desc, tlv) in attribute_tlvs(stored.secret).filter_map(Result::ok) {
                    if reads(desc) {
                        attrs.extend_from_slice(tlv);
                    }
                }
                encode_search_result_entry_raw(out, job.message_id, stored.dn, &attrs);
            }
        }
        return;
    }
    let mut attrs = Vec::with_capacity(512);
    let sections: [&[u8]; 3] = [stored.user, stored.secret, stored.operational];
    for (index, section) in sections.iter().enumerate() {
        for item in attribute_tlvs(section) {
            let Ok((desc, tlv)) = item else { continue };
            if !selection.wants(schema, desc) || ((index == 1 || !plain) && !reads(desc)) {
                continue;
            }
            match readable.filter(|(access, _)| values_ruled && access.value_ruled(desc)) {
                Some((access, view)) => encode_readable_values(
                    &mut attrs,
                    section,
                    desc,
                    access,
                    view,
                    job.req.types_only,
                ),
                None if job.req.types_only => encode_partial_attribute(&mut attrs, desc, &[]),
                None => attrs.extend_from_slice(tlv),
            }
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
    access: &SearchAccess<'_>,
    txn: &ReadTxn,
    base: &NormDn,
    base_id: u64,
) -> Result<(), LdapError> {
    if access.is_root() {
        return Ok(());
    }
    // Only rules with a filter look at the base's attributes: decode it for them alone.
    let entry = if access.checker().acl().needs_entry() {
        let Some(bytes) = txn.get_entry(base_id).map_err(store_error)? else {
            return Ok(());
        };
        Some(visible_entry(&Directory::parse_stored(bytes)?, true)?)
    } else {
        None
    };
    let target = Target {
        ndn: base,
        entry: entry.as_ref(),
    };
    let mask = access.checker().decide(target, AttrRef::Entry).mask;
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
    let schema = job.state.directory.schema();
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
    sink.push(out)
}
