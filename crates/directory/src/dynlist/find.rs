//! The searches of the dynlist overlay, through the backend's one search loop ([`Scan::run`]): a URL's
//! search as the operation's requester, and the lookups of groups over the whole database as the
//! server. Each is planned like any search (index plan or scope) and driven by the loop, which hands
//! every entry in scope to [`Finder`], dynlist's own [`Reader`]: there is no candidate loop here.

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::{StoredEntry, StoredView};
use canopy_core::{Attribute, LdapError};
use canopy_proto::{DerefAliases, Filter, SearchScope};
use canopy_schema::NormDn;

use crate::alias::Base;
use crate::database::Directory;
use crate::referral::is_referral;
use crate::search::Query;
use crate::search_loop::{Reader, Requester, Room, Tested};
use crate::Snapshot;

/// What an entry found is handed to: the requester the search runs as, the entry's normalized DN and
/// the entry as stored. An error ends the search.
pub(super) type Each<'e> =
    dyn FnMut(&mut dyn Requester, &NormDn, &StoredEntry<'_>) -> Result<(), LdapError> + 'e;

/// Who a search runs as.
pub(super) enum As<'w> {
    /// The operation's requester (a URL's search, as slapd runs it with the requester's identity):
    /// it finds what it may read and search, the entries have their computed attributes, and
    /// referral objects are never found.
    Requester(&'w mut dyn Requester),
    /// The server (the lookups of the groups an expansion consults): every entry the filter matches
    /// as stored, referral objects included.
    Server,
}

/// One of dynlist's searches: from `base`, `scope` deep, the entries `filter` matches (planned from
/// it, and tested as `prepared`, which must be it prepared under the database's schema).
pub(super) struct Find<'f, 's> {
    pub(super) base: &'f Base,
    pub(super) scope: SearchScope,
    pub(super) filter: &'f Filter,
    pub(super) prepared: &'f PreparedFilter<'s>,
}

impl Find<'_, '_> {
    /// Runs the search in `dir` on `txn` as `who`, handing every entry found to `each`, in ID order.
    /// No alias is dereferenced and referral objects are plain entries to the plan (ManageDsaIT), so
    /// that the base is the URL's own entry and nothing answers with a referral; no size limit; no
    /// entry found is expanded in turn (slapd's "no recursion").
    pub(super) fn run(
        &self,
        dir: &Directory,
        txn: &Snapshot,
        who: As<'_>,
        each: &mut Each<'_>,
    ) -> Result<(), LdapError> {
        let query = Query {
            scope: self.scope,
            deref: DerefAliases::Never,
            manage_dsa_it: true,
            filter: self.filter,
        };
        let scan = dir.plan_scan_prepared(txn, &query, self.base, self.prepared)?;
        let mut server = Server;
        let (who, requester): (&mut dyn Requester, bool) = match who {
            As::Requester(who) => (who, true),
            As::Server => (&mut server, false),
        };
        let mut finder = Finder {
            who,
            filter: self.prepared,
            requester,
            judged: None,
            each,
        };
        scan.run(dir, txn, &mut finder, Room::default())?;
        Ok(())
    }
}

/// The server as a requester: it finds every entry the filter matches as stored and reads every
/// attribute.
struct Server;

impl Requester for Server {
    fn finds(
        &mut self,
        _ndn: &NormDn,
        stored: &StoredEntry<'_>,
        filter: &PreparedFilter<'_>,
        computed: &[Attribute],
    ) -> bool {
        filter
            .evaluate(&StoredView::new(stored), computed)
            .is_true()
    }

    fn reads(&mut self, _ndn: &NormDn, _stored: &StoredEntry<'_>, _desc: &str) -> bool {
        true
    }
}

/// Dynlist's reader in the loop: an entry is found when `who` finds it with the filter, and is
/// handed to `each`.
struct Finder<'w, 'f, 's, 'e> {
    who: &'w mut dyn Requester,
    filter: &'f PreparedFilter<'s>,
    /// Runs as the operation's requester (see [`As::Requester`]).
    requester: bool,
    /// The normalized DN of the entry judged last.
    judged: Option<NormDn>,
    each: &'f mut Each<'e>,
}

impl Requester for Finder<'_, '_, '_, '_> {
    fn finds(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        filter: &PreparedFilter<'_>,
        computed: &[Attribute],
    ) -> bool {
        self.who.finds(ndn, stored, filter, computed)
    }

    fn reads(&mut self, ndn: &NormDn, stored: &StoredEntry<'_>, desc: &str) -> bool {
        self.who.reads(ndn, stored, desc)
    }
}

impl Reader for Finder<'_, '_, '_, '_> {
    type Error = LdapError;

    fn needs_ndn(&self) -> bool {
        true
    }

    fn needs_computed(&self) -> bool {
        self.requester
    }

    fn examined(&mut self, _count: u64) -> Result<(), LdapError> {
        Ok(())
    }

    fn reference(&mut self, _urls: Vec<String>) -> Result<(), LdapError> {
        // Referral objects are entries to a ManageDsaIT plan: none comes as a reference.
        Ok(())
    }

    fn expanding(&mut self) -> Result<(), LdapError> {
        Ok(())
    }

    fn judge(
        &mut self,
        _id: u64,
        ndn: Option<&NormDn>,
        _stored: &StoredEntry<'_>,
    ) -> Result<(), LdapError> {
        // Always there: the reader needs every entry's DN.
        self.judged = ndn.cloned();
        Ok(())
    }

    fn clears(&mut self, shown: &StoredEntry<'_>) -> bool {
        self.judged.is_some() && !(self.requester && is_referral(shown))
    }

    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        computed: &[Attribute],
        _tested: Option<&Tested<'_, '_>>,
    ) -> Result<bool, LdapError> {
        let Some(ndn) = &self.judged else {
            return Ok(false);
        };
        Ok(self.who.finds(ndn, shown, self.filter, computed))
    }

    fn send(&mut self, shown: &StoredEntry<'_>, _computed: &[Attribute]) -> Result<(), LdapError> {
        match &self.judged {
            Some(ndn) => (self.each)(self.who, ndn, shown),
            None => Ok(()),
        }
    }
}
