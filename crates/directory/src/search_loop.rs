//! The backend's search: [`Directory::search`], one call from the base to the last entry sent, and
//! its loop [`Scan::run`]: a planned scan's candidates placed, each entry expanded by the read hook
//! ([`ReadHook`], the dynlist overlay), judged, tested and sent by the requester's [`Reader`], and
//! counted against the size limit and the page. The frontend supplies the reader as it supplies a
//! write's `Guard`; the read hook's own searches run through the same loop with readers of its own.

use std::borrow::Cow;
use std::sync::Arc;

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::StoredEntry;
use canopy_core::{Attribute, LdapError};
use canopy_proto::{Dn, Filter, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::alias::Base;
use crate::search::{Candidate, Query, Scan};
use crate::{Directory, OpError, Snapshot};

/// What the requester of an operation may see, as the frontend's access control decides it: how the
/// read hook's searches (a dynamic entry's URLs) run as the requester.
pub trait Requester {
    /// Whether a search by the requester finds `stored` (named `ndn`) with `filter`: it may read the
    /// entry, and the filter matches the attributes it may search.
    fn finds(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        filter: &PreparedFilter<'_>,
        computed: &[Attribute],
    ) -> bool;

    /// Whether the requester may read attribute `desc` of `stored` (named `ndn`).
    fn reads(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>, desc: &str) -> bool;
}

/// What a database adds to entries as they are read, never stored (the dynlist overlay,
/// `dynlist::Dynlist`; docs/design/read-path.md): the search plans with its filter and the loop
/// expands each entry through its [`Expansion`].
pub trait ReadHook {
    /// The filter a search plans its candidates with: a superset of what the expanded entries
    /// match. None when the filter needs no change.
    fn planning_filter(&self, schema: &Schema, filter: &Filter) -> Option<Filter>;

    /// The expansion of the entries one operation reads in `txn`. `asked(attr)`: the answer asks for
    /// `attr`; `tested(attr)`: the filter tests it.
    fn expansion<'a>(
        &'a self,
        dir: &'a Directory,
        txn: &'a Snapshot,
        asked: &dyn Fn(&str) -> bool,
        tested: &dyn Fn(&str) -> bool,
    ) -> Box<dyn Expansion + 'a>;
}

/// The read hook's work in one operation (dynlist's `Expander`): each entry as the requester reads
/// it. Its own searches run through [`Scan::run`], as `who`.
pub trait Expansion {
    /// Whether [`Expansion::expand`] has work to do on this entry: a cheap test, without searching.
    fn applies(&self, ndn: &NormDn, stored: &StoredEntry<'_>) -> bool;

    /// The entry `stored` (named `ndn`) as `who` reads it, encoded in the stored form; None when
    /// nothing changes.
    fn expand(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        who: &mut dyn Requester,
    ) -> Result<Option<Vec<u8>>, LdapError>;
}

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

    /// Called with the count of examined candidates after each: budgets, abandon, time limit (none by
    /// default).
    fn examined(&mut self, _count: u64) -> Result<(), Self::Error> {
        Ok(())
    }

    /// A continuation reference in the scope (a referral object, without ManageDsaIT).
    fn reference(&mut self, urls: Vec<String>) -> Result<(), Self::Error>;

    /// Before the read hook expands an entry, which runs searches of its own (nothing to do by
    /// default).
    fn expanding(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

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
    pub read_hook: Option<&'q dyn ReadHook>,
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
            expander.as_deref_mut(),
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
    /// `attr`; `tested(attr)`: the filter tests it.
    pub fn expander<'a>(
        &'a self,
        txn: &'a Snapshot,
        hook: Option<&'a dyn ReadHook>,
        asked: &dyn Fn(&str) -> bool,
        tested: &dyn Fn(&str) -> bool,
    ) -> Option<Box<dyn Expansion + 'a>> {
        hook.map(|hook| hook.expansion(self, txn, asked, tested))
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
    /// ([`Directory::search`] runs it with the read hook and the filter it prepared; the read hook
    /// runs its own searches with it, so that what they find is never expanded in turn).
    pub fn run<R: Reader>(
        &self,
        dir: &Directory,
        txn: &impl crate::View,
        reader: &mut R,
        room: Room,
    ) -> Result<Ended, R::Error> {
        self.run_tested(dir, txn, None, reader, room, None, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_tested<R: Reader>(
        &self,
        dir: &Directory,
        txn: &impl crate::View,
        mut expander: Option<&mut (dyn Expansion + '_)>,
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
