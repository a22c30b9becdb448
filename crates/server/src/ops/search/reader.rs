//! The frontend's side of a search of one database: `SearchReader`, the backend's `Searcher` and
//! `Reader` (the base's access, the assertion, the limits, the page; access per entry through the
//! requester's views, the one exact filter test, the encoding), and the dynlist requester.

use super::*;

/// The frontend's side of a search of one database ([`Searcher`] and [`Reader`]): the base's access,
/// the assertion and the limits, the filter as slapd tests it, the lookthrough limit and the page,
/// then access decided per entry through the requester's views, the one exact filter test, and the
/// encoding into the sink.
pub(super) struct SearchReader<'r, 's, 'k, 'u> {
    pub(super) job: &'r SearchJob,
    pub(super) sink: &'r mut Sink<'k>,
    pub(super) dir: &'r Database,
    pub(super) who: &'r Who,
    pub(super) part: &'r Part,
    pub(super) run: &'r mut Run<'u>,
    pub(super) done_controls: &'r mut Vec<Control>,
    pub(super) access: &'r SearchAccess<'r>,
    pub(super) requester: SearchRequester<'r>,
    pub(super) schema: &'s Arc<canopy_schema::Schema>,
    pub(super) hidden_filters: HiddenFilters<'s>,
    pub(super) with_ndn: bool,
    /// Access rules that test the entry's attributes: the entry is decoded for them.
    pub(super) needs_entry: bool,
    /// The filter or the answer uses computed attributes.
    pub(super) need_computed: bool,
    /// `(objectClass=*)` with nothing computed: every entry the requester may see matches (known at
    /// the first test).
    pub(super) every_entry: Option<bool>,
    /// No `val=` rules and no password attribute in the filter.
    pub(super) plain_filter: bool,
    pub(super) secret_in_filter: bool,
    pub(super) deadline: Option<Instant>,
    /// The access view of the entry judged last (None for the root DN, which sees everything).
    pub(super) view: Option<std::rc::Rc<EntryView>>,
    /// The ID of the entry judged last.
    pub(super) judged: u64,
    /// The search's snapshot, which the hooks' answers on each entry read.
    pub(super) txn: &'r Snapshot,
    /// The database's hooks' answers to request controls, given on each entry sent.
    pub(super) answers: &'r [Box<dyn EntryAnswer>],
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
        // A sorted search collects every candidate; its size limit and pages apply once sorted.
        if self.run.sorted.is_some() {
            return Ok(Some(Room::default()));
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
        // A sorted answer holds entries only: slapd's sssvlv sends no continuation reference.
        if self.run.sorted.is_some() {
            return Ok(());
        }
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
        id: u64,
        ndn: Option<&NormDn>,
        stored: &StoredEntry<'_>,
    ) -> Result<(), Stop> {
        self.judged = id;
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
        if let Some(sorted) = self.run.sorted.as_mut() {
            sorted.add(self.part.index, self.judged, shown);
            return Ok(());
        }
        // The database's frontend hooks may present the entry otherwise (values sorted).
        let presented = self.dir.present(shown);
        let reparsed = presented
            .as_deref()
            .and_then(|b| StoredEntry::parse(b).ok());
        let shown = reparsed.as_ref().unwrap_or(shown);
        let Some(cleared) = self.access.clear(shown, self.view.as_deref()) else {
            return Ok(());
        };
        let (job, selection) = (self.job, self.run.selection);
        // Response controls on the entry, when the request asked a hook for them (rare: decoded).
        let mut controls = match job.ctl.entry_controls.is_empty() {
            true => Vec::new(),
            false => match shown.to_entry() {
                Ok(entry) => self
                    .dir
                    .entry_controls(self.who, &entry, &job.ctl.entry_controls),
                Err(_) => Vec::new(),
            },
        };
        for answer in self.answers {
            let mut following = super::following::Following {
                dir: self.dir,
                txn: self.txn,
                access: self.access,
                view: self.view.as_deref(),
                requester: &mut self.requester,
            };
            controls.extend(answer.control(shown, &mut following)?);
        }
        self.sink.push_encoded(|out| {
            let start = out.len();
            encode_stored(job, selection, &cleared, computed, out);
            canopy_proto::attach_controls(out, start, &controls);
        })?;
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

impl SearchRequester<'_> {
    /// Whether the requester may read the entry at `ndn` (slapd's `entry` pseudo-attribute).
    pub(super) fn reads_entry(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>) -> bool {
        self.root || self.view(ndn, stored).allows_entry(privileges::READ)
    }

    /// The values of `desc` of the entry at `ndn` the requester may read; None when it may read
    /// none of them.
    pub(super) fn readable<'v>(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        desc: &str,
        values: Vec<&'v [u8]>,
    ) -> Option<Vec<&'v [u8]>> {
        if self.root {
            return Some(values);
        }
        let view = self.view(ndn, stored);
        // Under `val=` rules each value is decided (as slapd sends values), not the whole attribute.
        if !self.access.value_ruled(desc) {
            return self
                .access
                .allows_attr(&view, desc, privileges::READ)
                .then_some(values);
        }
        let kept: Vec<&[u8]> = values
            .into_iter()
            .filter(|v| self.access.allows_value(&view, desc, v, privileges::READ))
            .collect();
        (!kept.is_empty()).then_some(kept)
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
pub(super) struct HiddenFilters<'s> {
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

/// Attributes computed when read (contextCSN only on the suffix entry).
pub(super) const COMPUTED: [&str; 4] = [
    "hasSubordinates",
    "entryDN",
    "subschemaSubentry",
    "contextCSN",
];

/// Whether a filter may test a computed attribute (an extensible match without a type tests every one).
/// What of a filter's attributes the search must care about, from one schema lookup per attribute.
pub(super) struct Mentions {
    /// A computed attribute (which costs a lookup per candidate), or an extensible match without a type.
    pub(super) computed: bool,
    /// A secret attribute (userPassword, authPassword), a supertype (which may stand for one), or an
    /// extensible match without a type.
    pub(super) secret: bool,
}

pub(super) fn mentions_of(schema: &canopy_schema::Schema, filter: &Filter) -> Mentions {
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
pub(super) fn as_slapd_sees_with_mentions<'f>(
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
