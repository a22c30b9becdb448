//! The backend's search loop: a planned [`Scan`]'s candidates placed, each entry expanded by the read
//! hook (dynlist), judged, tested and sent by the requester's [`Reader`], and counted against the size
//! limit and the page. The frontend supplies the reader as it supplies a write's `Guard`.

use std::borrow::Cow;

use canopy_core::wire::StoredEntry;
use canopy_core::{Attribute, LdapError};
use canopy_proto::ResultCode;
use canopy_schema::NormDn;

use crate::dynlist::Expander;
pub use crate::dynlist::Requester;
use crate::search::{Candidate, Scan};
use crate::{Directory, Snapshot};

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
    /// sent: a reader may take a match its own way instead).
    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        computed: &[Attribute],
    ) -> Result<bool, Self::Error>;

    /// Sends the judged entry as `shown`.
    fn send(&mut self, shown: &StoredEntry<'_>, computed: &[Attribute]) -> Result<(), Self::Error>;
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
    /// Runs the search over this scan's candidates in `dir` on `txn`: the one loop every search of
    /// the backend goes through. `last_sent`: where a resumed page starts (already skipped by
    /// [`Scan::resume_after`]), reported back when no entry is sent.
    pub fn run<R: Reader>(
        &self,
        dir: &Directory,
        txn: &Snapshot,
        mut expander: Option<&mut Expander<'_, Snapshot>>,
        reader: &mut R,
        room: Room,
        mut last_sent: Option<u64>,
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
            if !reader.matches(&shown, &computed)? {
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
