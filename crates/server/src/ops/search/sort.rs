//! A sorted search (RFC 2891 server-side sorting, draft-ietf-ldapext-ldapv3-vlv-09 virtual list
//! views, and paged results of a sorted search), as slapd's sssvlv overlay answers them, in a
//! database whose hook gives a [`SortPolicy`].
//!
//! Memory: the search runs once through the usual loop, keeping per candidate only a [`Sorted`]
//! (part, entry ID, the encoded sort keys); no entry is kept. The list is sorted, and only the
//! entries of the answer (all of them, a page, or a VLV window) are read back by ID, one at a time,
//! and sent. A paged sort or a VLV context keeps its list on the connection ([`SortSessions`]) for
//! its next request, as slapd does, within the policy's limits.

use std::cmp::Ordering as Order;

use canopy_core::wire::attributes;
use canopy_proto::sort::{
    decode_sort_request, SortKey, SortResult, VlvRequest, VlvResponse, VlvTarget,
    CONTROL_SORT_RESPONSE, CONTROL_VLV_RESPONSE,
};
use canopy_schema::{MatchKind, MatchingRule, Schema};

use super::reader::COMPUTED;
use super::*;
use crate::sorting::{Held, SortControls, SortPolicy, SortSessions, Sorted, SortedList};

/// LDAP's vlvError result code, and the VLV result offsetRangeError (draft §7).
const VLV_ERROR: u32 = 76;
const OFFSET_RANGE_ERROR: u32 = 77;

/// One sort key, resolved against the schema.
#[derive(Debug, Clone)]
pub(super) struct Key {
    /// The attribute type's OID: a description matches under any of the type's names.
    oid: String,
    /// The description's options, lower-cased and sorted: only the same options match.
    options: Vec<String>,
    /// The rule values are normalized with: the attribute's equality rule (the normal form slapd
    /// keeps of each value), else the ordering rule.
    normalizer: MatchingRule,
    /// The rule whose order sorts them.
    ordering: MatchingRule,
    reverse: bool,
}

impl Key {
    /// The key `key` of a request, or slapd's refusal of it.
    fn resolve(schema: &Schema, key: &SortKey) -> Result<Key, LdapError> {
        let (name, options) = split_description(&key.attribute);
        let Some(at) = schema.attribute_type(name) else {
            return Err(LdapError::new(
                ResultCode::NoSuchAttribute,
                "serverSort control: Unrecognized attribute type in sort key",
            ));
        };
        let ordering = match &key.ordering_rule {
            Some(rule) => MatchingRule::by_name_or_oid(rule),
            None => at.ordering,
        };
        let Some(ordering) = ordering else {
            return Err(LdapError::new(
                ResultCode::InappropriateMatching,
                "serverSort control: No ordering rule",
            ));
        };
        Ok(Key {
            oid: at.oid.clone(),
            options,
            normalizer: at.equality.unwrap_or(ordering),
            ordering,
            reverse: key.reverse,
        })
    }

    fn matches(&self, schema: &Schema, desc: &str) -> bool {
        let (name, options) = split_description(desc);
        options == self.options
            && schema
                .attribute_type(name)
                .is_some_and(|at| at.oid == self.oid)
    }

    /// The bytes whose order is this key's order (ascending) for a value as stored.
    fn value_key(&self, value: &[u8]) -> Vec<u8> {
        let norm = self.normalizer.normalize(value);
        let norm = norm.as_deref().unwrap_or(value);
        match self.ordering {
            // An equality rule named as the ordering rule orders as slapd's match function of
            // the rule compares: shorter values first, then the bytes (integers numerically).
            rule if rule.kind() != MatchKind::Ordering
                && !matches!(
                    rule,
                    MatchingRule::IntegerMatch | MatchingRule::IntegerFirstComponentMatch
                ) =>
            {
                let len = u32::try_from(norm.len()).unwrap_or(u32::MAX);
                let mut key = len.to_be_bytes().to_vec();
                key.extend_from_slice(norm);
                key
            }
            rule => rule.ordering_key(norm),
        }
    }
}

fn split_description(desc: &str) -> (&str, Vec<String>) {
    let mut parts = desc.split(';');
    let name = parts.next().unwrap_or(desc);
    let mut options: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
    options.sort();
    (name, options)
}

/// The candidates of a sorted search as the loop finds them: per candidate its part, ID and keys.
pub(super) struct Collector {
    schema: Arc<Schema>,
    keys: Arc<[Key]>,
    list: Vec<Sorted>,
}

impl Collector {
    fn new(schema: Arc<Schema>, keys: Arc<[Key]>) -> Collector {
        Collector {
            schema,
            keys,
            list: Vec::new(),
        }
    }

    /// Adds the candidate `id` of part `part`, as the requester is shown it. Each key is the least
    /// of the entry's values (whatever the direction, as slapd); an entry without the attribute
    /// has none, which sorts after every value.
    pub(super) fn add(&mut self, part: usize, id: u64, shown: &StoredEntry<'_>) {
        let mut encoded = Vec::new();
        for key in self.keys.iter() {
            let mut least: Option<Vec<u8>> = None;
            for section in [shown.user, shown.secret, shown.operational] {
                for (desc, values) in attributes(section).flatten() {
                    if !key.matches(&self.schema, desc) {
                        continue;
                    }
                    for value in values {
                        let candidate = key.value_key(value);
                        if least.as_ref().is_none_or(|l| candidate < *l) {
                            least = Some(candidate);
                        }
                    }
                }
            }
            encode_component(least.as_deref(), &mut encoded);
        }
        self.list.push(Sorted {
            part: u32::try_from(part).unwrap_or(u32::MAX),
            id,
            keys: encoded.into_boxed_slice(),
        });
    }

    /// The candidates in the keys' order; ties in the order the search found them (part, then ID).
    fn sorted(self) -> SortedList {
        let mut entries = self.list;
        let keys = &self.keys;
        entries.sort_by(|a, b| compare(keys, a, b));
        SortedList { entries }
    }
}

/// A key's component: 0, its length (4 bytes) and its bytes; or 1 for an entry without a value.
fn encode_component(value: Option<&[u8]>, out: &mut Vec<u8>) {
    match value {
        Some(value) => {
            out.push(0);
            out.extend_from_slice(&u32::try_from(value.len()).unwrap_or(u32::MAX).to_be_bytes());
            out.extend_from_slice(value);
        }
        None => out.push(1),
    }
}

/// The first component of `bytes` and what follows it.
fn component(bytes: &[u8]) -> (Option<&[u8]>, &[u8]) {
    match bytes.split_first() {
        Some((0, rest)) => {
            let len = rest
                .get(..4)
                .and_then(|l| <[u8; 4]>::try_from(l).ok())
                .map_or(0, |l| u32::from_be_bytes(l) as usize);
            let value = rest.get(4..4 + len).unwrap_or_default();
            (Some(value), rest.get(4 + len..).unwrap_or_default())
        }
        Some((_, rest)) => (None, rest),
        None => (None, &[]),
    }
}

/// Ascending order of two components; no value sorts after every value.
fn order(a: Option<&[u8]>, b: Option<&[u8]>) -> Order {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(b),
        (Some(_), None) => Order::Less,
        (None, Some(_)) => Order::Greater,
        (None, None) => Order::Equal,
    }
}

fn compare(keys: &[Key], a: &Sorted, b: &Sorted) -> Order {
    let (mut x, mut y) = (&a.keys[..], &b.keys[..]);
    for key in keys {
        let ((ka, rest_a), (kb, rest_b)) = (component(x), component(y));
        let ord = order(ka, kb);
        let ord = if key.reverse { ord.reverse() } else { ord };
        if ord != Order::Equal {
            return ord;
        }
        (x, y) = (rest_a, rest_b);
    }
    (a.part, a.id).cmp(&(b.part, b.id))
}

fn protocol_error(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProtocolError, text)
}

fn busy() -> Stop {
    LdapError::new(ResultCode::Busy, "Other sort requests already in progress").into()
}

fn sort_control() -> Control {
    Control {
        oid: CONTROL_SORT_RESPONSE.to_string(),
        critical: false,
        value: Some(
            SortResult {
                code: 0,
                attribute: None,
            }
            .encode(),
        ),
    }
}

pub(super) fn vlv_control(response: VlvResponse) -> Control {
    Control {
        oid: CONTROL_VLV_RESPONSE.to_string(),
        critical: false,
        value: Some(response.encode()),
    }
}

/// An open list's id as a cookie or context: 8 bytes, big-endian.
fn handle(id: u64) -> Vec<u8> {
    id.to_be_bytes().to_vec()
}

fn parse_handle(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

/// The request's sort keys and VLV request, decoded and checked in slapd's order.
fn decode(
    schema: &Schema,
    policy: &SortPolicy,
    controls: &SortControls,
) -> Result<(Vec<Key>, Option<VlvRequest>), Stop> {
    let keys = match &controls.sort {
        Some((_, None)) => {
            return Err(protocol_error("sorted results control value is absent").into())
        }
        Some((_, Some(value))) => {
            let keys = decode_sort_request(value)
                .map_err(|_| protocol_error("serverSort control: decoding error"))?;
            let keys = keys
                .iter()
                .map(|k| Key::resolve(schema, k))
                .collect::<Result<Vec<_>, _>>()?;
            Some(keys)
        }
        None => None,
    };
    let vlv = match &controls.vlv {
        Some((_, None)) => return Err(protocol_error("vlv control value is absent").into()),
        Some((_, Some(value))) => Some(VlvRequest::decode(value).map_err(|_| protocol_error(""))?),
        None => None,
    };
    let Some(keys) = keys else {
        // VLV without sort: the VLV response tells why.
        return Err(Stop::Vlv(
            LdapError::new(
                ResultCode::from_code(VLV_ERROR),
                "Sort control is required with VLV",
            ),
            VlvResponse {
                target_position: 0,
                content_count: 0,
                result: VLV_ERROR,
                context: None,
            },
        ));
    };
    if keys.len() > policy.max_keys {
        return Err(LdapError::new(ResultCode::UnwillingToPerform, "Too many sort keys").into());
    }
    Ok((keys, vlv))
}

/// Where a sorted search's answer comes from: a list the connection keeps (its id) or a new search.
enum Source {
    Kept(u64, Arc<SortedList>, usize),
    Fresh(Arc<SortedList>),
}

/// Runs the sorted search of `dir` based at `at` and sends its answer.
#[allow(clippy::too_many_arguments)]
pub(super) fn execute(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    done_controls: &mut Vec<Control>,
    dir: &Database,
    at: (Arc<canopy_proto::Dn>, Arc<NormDn>),
    selection: &Selection,
    policy: &Arc<SortPolicy>,
    controls: &SortControls,
) -> Result<(), Stop> {
    // The whole candidate list is made before anything is sent, and lists kept on the connection
    // must be opened once: never within the inline budget.
    if sink.is_inline() {
        return Err(Stop::Overflow);
    }
    let schema = job.state.databases.schema();
    let (keys, vlv) = decode(schema, policy, controls)?;
    if vlv.is_some() && job.paged.is_some() {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "VLV incompatible with PagedResults",
        )
        .into());
    }
    let sessions: &SortSessions = &job.sorts;
    let kept = match (&vlv, &job.paged) {
        (Some(vlv), _) => vlv
            .context
            .as_deref()
            .and_then(parse_handle)
            .and_then(|id| {
                sessions
                    .find(id, Held::Vlv)
                    .map(|(l, p)| Source::Kept(id, l, p))
            }),
        (None, Some(paged)) => {
            let found = parse_handle(&paged.cookie)
                .and_then(|id| sessions.find(id, Held::Paged).map(|(l, p)| (id, l, p)));
            match found {
                // RFC 2696 §3: size 0 with a cookie abandons the paged result set.
                Some((id, _, _)) if paged.size <= 0 => {
                    sessions.close(id);
                    return Ok(());
                }
                Some((id, list, position)) => Some(Source::Kept(id, list, position)),
                None => None,
            }
        }
        (None, None) => None,
    };
    let parts = parts_of(
        dir,
        at.clone(),
        job.state.databases.glued(dir, &at.1, job.req.scope),
    );
    // A new sorted search counts against the limits while it runs (given back when this returns),
    // then as the list it keeps open, if it keeps one.
    let mut started = None;
    let source = match kept {
        Some(kept) => kept,
        None => {
            let running = sessions.start(policy).map_err(|_| busy())?;
            let list = collect(job, sink, dir, at, selection, keys.clone())?;
            started = Some(running);
            Source::Fresh(Arc::new(list))
        }
    };
    let (list, kept_id, position) = match &source {
        Source::Kept(id, list, position) => (Arc::clone(list), Some(*id), *position),
        Source::Fresh(list) => (Arc::clone(list), None, 0),
    };
    let all = &list.entries[..];
    let mut keep = |held| match started.take() {
        Some(running) => running.keep(held, Arc::clone(&list)).map_err(|_| busy()),
        None => Err(busy()),
    };
    if let Some(vlv) = vlv {
        let context = match kept_id {
            Some(id) => id,
            None => keep(Held::Vlv)?,
        };
        let window = vlv_window(&keys, &vlv, all);
        let content_count = u32::try_from(all.len()).unwrap_or(u32::MAX);
        let response = |target_position, result| VlvResponse {
            target_position,
            content_count,
            result,
            context: Some(handle(context)),
        };
        let Some((target, range)) = window else {
            return Err(Stop::Vlv(
                LdapError::new(ResultCode::from_code(VLV_ERROR), ""),
                response(0, OFFSET_RANGE_ERROR),
            ));
        };
        send_entries(job, sink, done_controls, &parts, selection, &all[range])?;
        done_controls.push(sort_control());
        done_controls.push(vlv_control(response(target, 0)));
        return Ok(());
    }
    if let Some(paged) = &job.paged {
        let count = all.len();
        if paged.size <= 0 {
            // The size of the result and a cookie that starts it again.
            done_controls.push(sort_control());
            let size = i32::try_from(count).unwrap_or(i32::MAX);
            done_controls.push(paged_result(size, vec![0; 8]));
            return Ok(());
        }
        let end = count.min(position.saturating_add(paged.size as usize));
        send_entries(
            job,
            sink,
            done_controls,
            &parts,
            selection,
            &all[position.min(end)..end],
        )?;
        let left = count - end;
        let cookie = if left == 0 {
            if let Some(id) = kept_id {
                sessions.close(id);
            }
            Vec::new()
        } else {
            let id = match kept_id {
                Some(id) => id,
                None => keep(Held::Paged)?,
            };
            sessions.set_position(id, end);
            handle(id)
        };
        done_controls.push(sort_control());
        done_controls.push(paged_result(
            i32::try_from(left).unwrap_or(i32::MAX),
            cookie,
        ));
        return Ok(());
    }
    // A plain sorted search: the size limit counts the sorted entries sent.
    let size = job_size_limit(job, dir)?;
    match size {
        Some(size) if all.len() > size => {
            send_entries(job, sink, done_controls, &parts, selection, &all[..size])?;
            Err(LdapError::new(ResultCode::SizeLimitExceeded, "").into())
        }
        _ => {
            send_entries(job, sink, done_controls, &parts, selection, all)?;
            done_controls.push(sort_control());
            Ok(())
        }
    }
}

fn paged_result(size: i32, cookie: Vec<u8>) -> Control {
    Control {
        oid: CONTROL_PAGED_RESULTS.to_string(),
        critical: false,
        value: Some(PagedResults { size, cookie }.encode()),
    }
}

/// The requester's size limit in `dir`, lowered by the request's.
fn job_size_limit(job: &SearchJob, dir: &Database) -> Result<Option<usize>, Stop> {
    let who = dir.requester(&job.who);
    let txn = dir.read()?;
    Ok(limits(job, dir, &who, &txn)?.size)
}

/// Runs the search once through the usual loop, collecting its candidates, and sorts them.
#[allow(clippy::too_many_arguments)]
fn collect(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    dir: &Database,
    at: (Arc<canopy_proto::Dn>, Arc<NormDn>),
    selection: &Selection,
    keys: Vec<Key>,
) -> Result<SortedList, Stop> {
    let schema = Arc::clone(job.state.databases.schema());
    let mut run = Run {
        selection,
        limits: None,
        sent: 0,
        before: 0,
        sorted: Some(Collector::new(schema, keys.into())),
    };
    // Nothing is sent while collecting, so no response control is either.
    let mut ignored = Vec::new();
    search_parts(job, sink, &mut ignored, dir, at, &mut run, None)?;
    Ok(run.sorted.map(Collector::sorted).unwrap_or_default())
}

/// The VLV request's target position (1 the first entry) and the window of `list` it sends, as
/// slapd computes them; None when the offset is out of range.
fn vlv_window(
    keys: &[Key],
    vlv: &VlvRequest,
    list: &[Sorted],
) -> Option<(u32, std::ops::Range<usize>)> {
    let n = list.len();
    if n == 0 {
        return Some((0, 0..0));
    }
    let target = match &vlv.target {
        VlvTarget::ByOffset {
            offset,
            content_count,
        } => {
            let (offset, count) = (*offset as usize, *content_count as usize);
            let limit = if count == 0 { n } else { count };
            if offset > limit {
                return None;
            }
            if offset == count {
                n
            } else if offset == 1 {
                1
            } else {
                // Without a content count the offset is the position.
                offset
                    .checked_mul(n)
                    .and_then(|x| x.checked_div(count))
                    .unwrap_or(offset)
            }
        }
        VlvTarget::GreaterOrEqual(value) => {
            let first = keys.first()?;
            let asserted = first.value_key(value);
            list.iter()
                .position(|s| {
                    let ord = order(component(&s.keys).0, Some(&asserted));
                    let ord = if first.reverse { ord.reverse() } else { ord };
                    ord != Order::Less
                })
                .map_or(n + 1, |i| i + 1)
        }
    };
    let (before, after) = (vlv.before as usize, vlv.after as usize);
    // Past the end, slapd's window ends at the last entry; before the first, it starts there.
    let (start, end) = if target > n {
        ((n + 1).saturating_sub(before).clamp(1, n), n)
    } else {
        let at = target.max(1);
        (
            at.saturating_sub(before).max(1),
            at.saturating_add(after).min(n),
        )
    };
    let target = u32::try_from(target).unwrap_or(u32::MAX);
    Some((target, start - 1..end))
}

/// Reads back and sends `entries` (in their order) from the parts they were found in.
fn send_entries(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    done_controls: &mut Vec<Control>,
    parts: &[PartOf<'_>],
    selection: &Selection,
    entries: &[Sorted],
) -> Result<(), Stop> {
    let mut rest = entries;
    while let Some(first) = rest.first() {
        let same = rest.iter().take_while(|s| s.part == first.part).count();
        let (run, tail) = rest.split_at(same);
        rest = tail;
        let Some((db, _, _, scope)) = parts.get(first.part as usize) else {
            continue;
        };
        let part = Part {
            index: first.part as usize,
            scope: *scope,
            resume_after: None,
        };
        send_part(job, sink, done_controls, db, &part, selection, run)?;
    }
    Ok(())
}

/// Sends the entries `ids` of one database: each read back by ID (one gone since is skipped),
/// expanded by the read hook, judged by access control and encoded as the search's loop does.
fn send_part(
    job: &SearchJob,
    sink: &mut Sink<'_>,
    done_controls: &mut Vec<Control>,
    dir: &Database,
    part: &Part,
    selection: &Selection,
    ids: &[Sorted],
) -> Result<(), Stop> {
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
    let needs_entry = dir.acl().needs_entry() && !who.root;
    let mut run = Run {
        selection,
        limits: None,
        sent: 0,
        before: 0,
        sorted: None,
    };
    let need_computed = COMPUTED.iter().any(|name| selection.wants_computed(name));
    // The hooks' answers on each entry sent (the deref overlay's), as an unsorted search gives them.
    let answers = super::entry_answers(job, dir)?;
    let mut reader = SearchReader {
        job,
        sink,
        dir,
        who,
        part,
        run: &mut run,
        done_controls,
        access: &access,
        requester: SearchRequester::new(&access, who.root, needs_entry),
        schema,
        hidden_filters: HiddenFilters::default(),
        with_ndn: false,
        needs_entry,
        need_computed,
        every_entry: None,
        plain_filter: false,
        secret_in_filter: false,
        deadline: None,
        view: None,
        judged: 0,
        txn: &txn,
        answers: &answers,
    };
    let hook = dir.read_hook(job.ctl.manage_dsa_it);
    let asks = |attr: &str| selection.wants(schema, attr);
    let tests = |_: &str| false;
    let mut expander = dir.backend().expander(&txn, hook, &asks, &tests);
    for (count, sorted) in ids.iter().enumerate() {
        reader.examined(count as u64 + 1)?;
        let Some(bytes) = dir.stored(&txn, sorted.id)? else {
            continue;
        };
        let stored = Directory::parse_stored(bytes)?;
        reader.judge(sorted.id, None, &stored)?;
        let expanded;
        let shown = match expander.as_deref_mut() {
            Some(expander) => {
                let ndn = stored.ndn().map_err(|_| unreadable())?;
                match expander.expand(&ndn, &stored, &mut reader)? {
                    Some(bytes) => {
                        expanded = bytes;
                        Directory::parse_stored(&expanded)?
                    }
                    None => stored,
                }
            }
            None => stored,
        };
        if !reader.clears(&shown) {
            continue;
        }
        let computed = if need_computed {
            dir.backend()
                .computed_attributes(&txn, sorted.id, shown.dn)?
        } else {
            Vec::new()
        };
        reader.send(&shown, &computed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(specs: &[(&str, Option<&str>, bool)]) -> Vec<Key> {
        let schema = Schema::builtin();
        specs
            .iter()
            .map(|(attr, rule, reverse)| {
                Key::resolve(
                    &schema,
                    &SortKey {
                        attribute: attr.to_string(),
                        ordering_rule: rule.map(str::to_string),
                        reverse: *reverse,
                    },
                )
                .unwrap()
            })
            .collect()
    }

    /// A stored entry with `attrs`, encoded as the store keeps it.
    fn stored(schema: &Schema, dn: &str, attrs: &[(&str, &[&str])]) -> Vec<u8> {
        let parsed = canopy_proto::Dn::parse(dn.as_bytes()).unwrap();
        let mut entry = Entry {
            ndn: schema.normalize_dn(&parsed).unwrap(),
            dn: parsed,
            attrs: Vec::new(),
        };
        for (desc, values) in attrs {
            entry.attrs.push(Attribute {
                desc: desc.to_string(),
                values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            });
        }
        let mut out = Vec::new();
        canopy_core::wire::encode_entry(schema, &entry, &mut out);
        out
    }

    /// An entry's ID and attributes.
    type Person = (u64, &'static [(&'static str, &'static [&'static str])]);

    fn sorted_ids(keys: Vec<Key>, entries: &[Person]) -> Vec<u64> {
        let schema = Arc::new(Schema::builtin());
        let mut collector = Collector::new(Arc::clone(&schema), keys.into());
        for (id, attrs) in entries {
            let bytes = stored(&schema, &format!("uid=e{id},dc=example,dc=com"), attrs);
            collector.add(0, *id, &StoredEntry::parse(&bytes).unwrap());
        }
        collector.sorted().entries.iter().map(|s| s.id).collect()
    }

    const PEOPLE: &[Person] = &[
        (3, &[("sn", &["Smith"]), ("description", &["mmm", "bbb"])]),
        (4, &[("sn", &["Jones"]), ("description", &["ccc"])]),
        (5, &[("sn", &["smith"])]),
        (6, &[("sn", &["Adams"]), ("description", &["aaa", "zzz"])]),
    ];

    #[test]
    fn orders_as_slapd() {
        let rule = Some("caseIgnoreOrderingMatch");
        // Ties keep the order of IDs, in either direction.
        assert_eq!(
            sorted_ids(keys(&[("sn", rule, false)]), PEOPLE),
            [6, 4, 3, 5]
        );
        assert_eq!(
            sorted_ids(keys(&[("sn", rule, true)]), PEOPLE),
            [3, 5, 4, 6]
        );
        // The least value decides; no value sorts last (first in reverse).
        assert_eq!(
            sorted_ids(keys(&[("description", rule, false)]), PEOPLE),
            [6, 3, 4, 5]
        );
        assert_eq!(
            sorted_ids(keys(&[("description", rule, true)]), PEOPLE),
            [5, 4, 3, 6]
        );
        // A second key breaks the first one's ties.
        assert_eq!(
            sorted_ids(
                keys(&[("sn", rule, false), ("description", rule, true)]),
                PEOPLE
            ),
            [6, 4, 5, 3]
        );
        // Options must match: no entry has sn;lang-en.
        assert_eq!(
            sorted_ids(keys(&[("sn;lang-en", rule, false)]), PEOPLE),
            [3, 4, 5, 6]
        );
    }

    #[test]
    fn refusals() {
        let schema = Schema::builtin();
        let code = |attr: &str, rule: Option<&str>| {
            let key = SortKey {
                attribute: attr.into(),
                ordering_rule: rule.map(str::to_string),
                reverse: false,
            };
            Key::resolve(&schema, &key).err().map(|e| e.code)
        };
        assert_eq!(code("nosuchattr", None), Some(ResultCode::NoSuchAttribute));
        assert_eq!(code("cn", None), Some(ResultCode::InappropriateMatching));
        assert_eq!(
            code("cn", Some("nosuchRule")),
            Some(ResultCode::InappropriateMatching)
        );
        assert_eq!(code("cn", Some("caseIgnoreOrderingMatch")), None);
        assert_eq!(code("createTimestamp", None), None);
    }

    #[test]
    fn windows_as_slapd() {
        let schema = Arc::new(Schema::builtin());
        let keys: Arc<[Key]> = keys(&[("sn", Some("caseIgnoreOrderingMatch"), false)]).into();
        let mut collector = Collector::new(Arc::clone(&schema), Arc::clone(&keys));
        for (id, attrs) in PEOPLE {
            let bytes = stored(&schema, &format!("uid=e{id},dc=example,dc=com"), attrs);
            collector.add(0, *id, &StoredEntry::parse(&bytes).unwrap());
        }
        let list = collector.sorted().entries;
        let by_offset = |before, after, offset, content_count| {
            let vlv = VlvRequest {
                before,
                after,
                target: VlvTarget::ByOffset {
                    offset,
                    content_count,
                },
                context: None,
            };
            vlv_window(&keys, &vlv, &list)
        };
        // Recorded from slapd 2.5 with four entries.
        assert_eq!(by_offset(1, 1, 2, 0), Some((2, 0..3)));
        assert_eq!(by_offset(0, 0, 0, 0), Some((4, 3..4)));
        assert_eq!(by_offset(1, 1, 0, 0), Some((4, 2..4)));
        assert_eq!(by_offset(0, 0, 5, 0), None);
        assert_eq!(by_offset(0, 0, 3, 8), Some((1, 0..1)));
        assert_eq!(by_offset(0, 0, 1, 8), Some((1, 0..1)));
        assert_eq!(by_offset(0, 0, 2, 10), Some((0, 0..1)));
        assert_eq!(by_offset(2, 1, 0, 5), Some((0, 0..2)));
        assert_eq!(by_offset(0, 0, 2, 3), Some((2, 1..2)));
        assert_eq!(by_offset(0, 0, 7, 5), None);
        assert_eq!(by_offset(5, 5, 2, 0), Some((2, 0..4)));
        let at_least = |before, after, value: &str| {
            let vlv = VlvRequest {
                before,
                after,
                target: VlvTarget::GreaterOrEqual(value.as_bytes().to_vec()),
                context: None,
            };
            vlv_window(&keys, &vlv, &list)
        };
        assert_eq!(at_least(1, 1, "s"), Some((3, 1..4)));
        assert_eq!(at_least(1, 1, "Jones"), Some((2, 0..3)));
        assert_eq!(at_least(0, 0, "zzz"), Some((5, 3..4)));
        assert_eq!(at_least(2, 0, "zzz"), Some((5, 2..4)));
        assert_eq!(at_least(0, 2, "zzz"), Some((5, 3..4)));
        assert_eq!(at_least(3, 3, "zzz"), Some((5, 1..4)));
        assert_eq!(
            vlv_window(
                &keys,
                &VlvRequest {
                    before: 0,
                    after: 0,
                    target: VlvTarget::ByOffset {
                        offset: 1,
                        content_count: 0
                    },
                    context: None,
                },
                &[]
            ),
            Some((0, 0..0))
        );
    }

    /// The memory bound: a sorted search keeps per candidate its [`Sorted`] and its keys, never the
    /// entry. Entries of 10 KiB with a short key cost tens of bytes each, not kilobytes.
    #[test]
    fn keeps_keys_not_entries() {
        let schema = Arc::new(Schema::builtin());
        let keys: Arc<[Key]> = keys(&[("sn", Some("caseIgnoreOrderingMatch"), false)]).into();
        let mut collector = Collector::new(Arc::clone(&schema), keys);
        let big = "x".repeat(10 * 1024);
        let count = 1000u64;
        for id in 0..count {
            let sn = format!("name{id:05}");
            let bytes = stored(
                &schema,
                &format!("uid=e{id},dc=example,dc=com"),
                &[("sn", &[sn.as_str()]), ("description", &[big.as_str()])],
            );
            collector.add(0, id, &StoredEntry::parse(&bytes).unwrap());
        }
        let list = collector.sorted();
        assert_eq!(list.entries.len(), count as usize);
        let per_entry = std::mem::size_of::<Sorted>() + 5 + 9;
        // The vector may hold up to twice its length.
        assert!(
            list.heap_bytes() <= 2 * per_entry * count as usize,
            "{} bytes for {count} candidates",
            list.heap_bytes()
        );
        assert!(list.heap_bytes() < count as usize * 1024);
    }
}
