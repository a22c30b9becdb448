//! The backend's search: [`Directory::search`], one call from the base to the last entry sent, and
//! its loop [`Scan::run`]: a planned scan's candidates placed, each entry expanded by the read hook
//! (dynlist), judged, tested and sent by the requester's [`Reader`], and counted against the size
//! limit and the page. The frontend supplies the reader as it supplies a write's `Guard`.

use std::borrow::Cow;
use std::sync::Arc;

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::StoredEntry;
use canopy_core::{Attribute, LdapError};
use canopy_proto::{Dn, Filter, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::alias::Base;
pub use crate::dynlist::Requester;
use crate::dynlist::{Dynlist, Expander};
use crate::search::{Candidate, Query, Scan};
use crate::{Directory, OpError, Snapshot};

/// The requester's side of a search: access decisions, the filter test and the encoding of what it
/// sends. The loop calls, for each entry in scope, [`Reader::judge`] on the entry as stored, then
/// (after the read hook's expansion) [`Reader::clears`], [`Reader::matches`] and [`Reader::send`]
/// on the entry as shown; the reader keeps its decision on the entry between those calls. As the
/// read hook's [`Requester`], it answers for the searches an expansion runs.
pub trait Reader: Requester {
    type Error: From<LdapError>;

    /// Whether every candidate's normalized DN is needed (access rules that name DNs).
    fn needs_ndn(&self) -> bool;

    /// Whether the filter or the answer uses computed attributes (hasSubordinates, entryDN, ...).
    fn needs_computed(&self) -> bool;

    /// Called with the count of examined candidates after each: budgets, abandon, time limit.
    fn examined(&mut self, count: u64) -> Result<(), Self::Error>;

    /// A continuation reference in the scope (a referral object, without ManageDsaIT).
    fn reference(&mut self, urls: Vec<String>) -> Result<(), Self::Error>;

    /// Before the read hook expands an entry, which runs searches of its own.
    fn expanding(&mut self) -> Result<(), Self::Error>;

    /// Decides access to the entry `id`, `stored` (named `ndn` when the scan made it) as it is
    /// stored: `dnattr` and `group` clauses do not see what an expansion adds.
    fn judge(
        &mut self,
        id: u64,
        ndn: Option<&NormDn>,
        stored: &StoredEntry<'_>,
    ) -> Result<(), Self::Error>;

    /// Whether the requester may see the judged entry at all, as `shown`.
    fn clears(&mut self, shown: &StoredEntry<'_>) -> bool;

    /// Whether the filter matches `shown` as the requester may search it (and the entry is to be
    /// sent: a reader may take a match its own way instead). `tested`: the filter of a
    /// [`Directory::search`], None when the reader brought its own to [`Scan::run`].
    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        computed: &[Attribute],
        tested: Option<&Tested<'_, '_>>,
    ) -> Result<bool, Self::Error>;

    /// Sends the judged entry as `shown`.
    fn send(&mut self, shown: &StoredEntry<'_>, computed: &[Attribute]) -> Result<(), Self::Error>;
}

/// The requester's side of a whole search ([`Directory::search`]): what the frontend decides before
/// the loop, in slapd's order (the base's access, then the limits; the paging cookie once the
/// candidates are planned).
pub trait Searcher: Reader
where
    Self::Error: From<OpError>,
{
    /// The error of a base that could not be found, as the requester may see it (a matched DN it may
    /// not know hidden).
    fn conceal(&mut self, txn: &Snapshot, error: LdapError) -> LdapError;

    /// Access to the found base (slapd requires `search` on it), the assertion control and the
    /// requester's limits.
    fn base(&mut self, txn: &Snapshot, base: &Base) -> Result<(), Self::Error>;

    /// Whether a link of a nested-group chain counts: the requester may search `attr` of the entry.
    fn searches(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>, attr: &str) -> bool;

    /// The filter as the reader tests it, given the filter after the in-chain rewrite.
    fn tested<'f>(&mut self, filter: &'f Filter) -> Cow<'f, Filter>;

    /// Whether the answer asks for `attr`, and whether `filter` (the tested one) tests it: what the
    /// read hook computes depends on both.
    fn asks(&self, attr: &str) -> bool;
    fn tests(&self, filter: &Filter, attr: &str) -> bool;

    /// The planned scan, before any candidate is examined: the lookthrough limit, the paging
    /// cookie. The room the run has, or None when the search ends here (a page of size 0).
    fn planned(&mut self, txn: &Snapshot, scan: &Scan<'_>) -> Result<Option<Room>, Self::Error>;
}

/// A search of one database as the frontend asks it.
pub struct SearchSpec<'q> {
    pub base_dn: Arc<Dn>,
    pub base: Arc<NormDn>,
    /// Scope, alias dereferencing, ManageDsaIT and the filter as the client sent it.
    pub query: Query<'q>,
    /// The schema the frontend tests filters under (its configuration snapshot's).
    pub schema: &'q Arc<Schema>,
    /// Where a paged search resumes: after this ID.
    pub resume_after: Option<u64>,
    /// The database's read hook (the dynlist overlay), which expands entries as they are read.
    pub read_hook: Option<&'q Dynlist>,
}

impl Directory {
    /// Runs a search of this database on `txn`, from finding its base to the last entry sent: the
    /// base (aliases, referrals), the reader's base decisions, the in-chain rewrite, the read hook's
    /// planning filter, the plan, then [`Scan::run`]. None when the reader ended it before the scan.
    pub fn search<S>(
        &self,
        txn: &Snapshot,
        spec: SearchSpec<'_>,
        searcher: &mut S,
    ) -> Result<Option<Ended>, S::Error>
    where
        S: Searcher,
        S::Error: From<OpError>,
    {
        let found = match self.search_base(txn, spec.base_dn, spec.base, &spec.query) {
            Ok(found) => found,
            Err(OpError::Ldap(e)) => return Err(searcher.conceal(txn, e).into()),
            Err(other) => return Err(other.into()),
        };
        searcher.base(txn, &found)?;
        // Nested-group assertions become plain equality ones; a link of the chain counts only where
        // the requester may search the attribute that makes it.
        let expanded = self.expand_in_chain(txn, spec.query.filter, &mut |ndn, stored, attr| {
            searcher.searches(ndn, stored, attr)
        })?;
        let manage = spec.query.manage_dsa_it;
        // The read hook expands entries as they are read (not with ManageDsaIT, as slapd); the plan
        // takes the entries an assertion may match once expanded (docs/design/read-path.md).
        let hook = spec.read_hook.filter(|_| !manage);
        let planning = hook.and_then(|hook| hook.planning_filter(self.schema(), &expanded));
        let query = Query {
            filter: planning.as_ref().unwrap_or(&expanded),
            ..spec.query
        };
        // The filter as it is tested, prepared once: the plan takes it too when it plans the same
        // filter under the same schema (no planning filter, nothing rewritten for slapd's view).
        let filter = searcher.tested(&expanded);
        let schema: &Schema = spec.schema;
        let prepared = PreparedFilter::new(schema, &filter);
        let plans_tested = planning.is_none()
            && matches!(filter, Cow::Borrowed(_))
            && Arc::ptr_eq(self.schema(), spec.schema);
        let mut scan = if plans_tested {
            self.plan_scan_prepared(txn, &query, &found, &prepared)?
        } else {
            self.plan_scan(txn, &query, &found)?
        };
        let Some(room) = searcher.planned(txn, &scan)? else {
            return Ok(None);
        };
        if let Some(last) = spec.resume_after.filter(|_| room.page.is_some()) {
            scan.resume_after(last);
        }
        let tested = Tested {
            filter: &filter,
            prepared: &prepared,
        };
        let asks = |attr: &str| searcher.asks(attr);
        let tests = |attr: &str| searcher.tests(&filter, attr);
        let mut expander = self.expander(txn, hook, &asks, &tests);
        let ended = scan.run_tested(
            self,
            txn,
            expander.as_mut(),
            searcher,
            room,
            spec.resume_after,
            Some(&tested),
        )?;
        Ok(Some(ended))
    }

    /// The read hook's expansion of the entries an operation reads (the dynlist overlay's dynamic
    /// entries and memberOf), or None without a read hook (or with ManageDsaIT, which asks for
    /// entries as stored, as slapd: the caller passes None then). `asked(attr)`: the answer asks for
    /// `attr`; `tested(attr)`: the filter tests it (slapd 2.5 lists the members of nested groups when
    /// memberOf and the member attribute are both asked for, or memberOf is tested:
    /// docs/overlays.md).
    pub fn expander<'a>(
        &'a self,
        txn: &'a Snapshot,
        hook: Option<&'a Dynlist>,
        asked: &dyn Fn(&str) -> bool,
        tested: &dyn Fn(&str) -> bool,
    ) -> Option<Expander<'a, Snapshot>> {
        let config = hook?;
        let memberof = config
            .memberof_attrs()
            .any(|attr| asked(attr) || tested(attr));
        let nested_members =
            config.nested_member_attrs().any(asked) || config.memberof_attrs().any(tested);
        Some(Expander::new(self, txn, config, memberof).with_nested_members(nested_members))
    }
}

/// The filter a search tests, as the reader sees it and prepared once.
pub struct Tested<'f, 's> {
    pub filter: &'f Filter,
    pub prepared: &'f PreparedFilter<'s>,
}

/// How many entries a run may still send: `size` before the size limit is exceeded, `page` before
/// the page is full (each None when unbounded).
#[derive(Clone, Copy, Debug, Default)]
pub struct Room {
    pub size: Option<usize>,
    pub page: Option<usize>,
}

/// How a run ended, with the entries it sent and the ID of the last one (the page cookie's).
#[derive(Clone, Copy, Debug)]
pub struct Ended {
    pub sent: usize,
    pub last_sent: Option<u64>,
    /// The page filled up: more entries may follow on the next page.
    pub page_full: bool,
}

impl Scan<'_> {
    /// Runs the search over this scan's candidates in `dir` on `txn`, without a read hook, the
    /// reader testing its own filter: the one loop every search of the backend goes through
    /// ([`Directory::search`] runs it with the read hook and the filter it prepared).
    pub fn run<R: Reader>(
        &self,
        dir: &Directory,
        txn: &Snapshot,
        reader: &mut R,
        room: Room,
    ) -> Result<Ended, R::Error> {
        self.run_tested(dir, txn, None, reader, room, None, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_tested<R: Reader>(
        &self,
        dir: &Directory,
        txn: &Snapshot,
        mut expander: Option<&mut Expander<'_, Snapshot>>,
        reader: &mut R,
        room: Room,
        mut last_sent: Option<u64>,
        tested: Option<&Tested<'_, '_>>,
    ) -> Result<Ended, R::Error> {
        let mut sent = 0usize;
        let mut examined = 0u64;
        let with_ndn = reader.needs_ndn();
        for candidate in self.examine(txn, with_ndn)? {
            let candidate = candidate?;
            examined += 1;
            reader.examined(examined)?;
            let (id, stored, ndn) = match candidate {
                Candidate::Passed => continue,
                Candidate::Reference(urls) => {
                    reader.reference(urls)?;
                    continue;
                }
                Candidate::Entry { id, stored, ndn } => (id, stored, ndn),
            };
            reader.judge(id, ndn.as_ref(), &stored)?;
            let expanded_bytes;
            let shown = match expander.as_deref_mut() {
                Some(expander) => {
                    let name = match &ndn {
                        Some(ndn) => Cow::Borrowed(ndn),
                        None => Cow::Owned(stored.ndn().map_err(|_| unreadable())?),
                    };
                    if expander.applies(&name, &stored) {
                        reader.expanding()?;
                    }
                    match expander.expand(&name, &stored, reader)? {
                        Some(bytes) => {
                            expanded_bytes = bytes;
                            Directory::parse_stored(&expanded_bytes)?
                        }
                        None => stored,
                    }
                }
                None => stored,
            };
            if !reader.clears(&shown) {
                continue;
            }
            let computed = if reader.needs_computed() {
                dir.computed_attributes(txn, id, shown.dn)?
            } else {
                Vec::new()
            };
            if !reader.matches(&shown, &computed, tested)? {
                continue;
            }
            if room.size.is_some_and(|size| sent >= size) {
                return Err(LdapError::new(ResultCode::SizeLimitExceeded, "").into());
            }
            if room.page.is_some_and(|page| sent >= page) {
                return Ok(Ended {
                    sent,
                    last_sent,
                    page_full: true,
                });
            }
            reader.send(&shown, &computed)?;
            sent += 1;
            last_sent = Some(id);
        }
        Ok(Ended {
            sent,
            last_sent,
            page_full: false,
        })
    }
}

fn unreadable() -> LdapError {
    LdapError::new(ResultCode::Other, "stored entry is unreadable")
}
