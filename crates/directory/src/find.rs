//! The backend's own searches, through its one search loop ([`Scan::run`]): the dynlist overlay's URL
//! searches as the operation's requester and its lookups of groups, the constraint overlay's URI
//! searches and the unique overlay's lookups, in a read snapshot or inside a write's transaction. Each
//! is planned like any search (index plan or scope) and driven by the loop, which hands every entry in
//! scope to [`Finder`], the reader of these searches: no overlay keeps a candidate loop of its own.

use std::sync::Arc;

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::{StoredEntry, StoredView};
use canopy_core::{Attribute, LdapError};
use canopy_proto::{DerefAliases, Dn, Filter, SearchScope};
use canopy_schema::NormDn;

use crate::alias::Base;
use crate::database::Directory;
use crate::error::store_error;
use crate::referral::is_referral;
use crate::search::{Query, Subentries};
use crate::search_loop::{Reader, Requester, Room, Tested};
use crate::View;

/// What an entry found is handed to: the requester the search runs as, the entry's normalized DN and
/// the entry as stored. It returns whether the search goes on; an error ends it.
pub(crate) type Each<'e> =
    dyn FnMut(&mut dyn Requester, &NormDn, &StoredEntry<'_>) -> Result<bool, LdapError> + 'e;

/// Who a search runs as.
pub(crate) enum As<'w> {
    /// The operation's requester (a URL's search, as slapd runs it with the requester's identity):
    /// it finds what it may read and search, the entries have their computed attributes, and
    /// referral objects are never found.
    Requester(&'w mut dyn Requester),
    /// The server searching as a client would, without access control (slapd's internal searches,
    /// the constraint overlay's URIs): the entries have their computed attributes, and referral
    /// objects are never found.
    Internal,
    /// The server reading entries as stored (the lookups of the groups an expansion consults, the
    /// unique overlay's): every entry the filter matches as stored, referral objects included.
    Server,
}

/// One of the backend's own searches: from `base`, `scope` deep, the entries `filter` matches
/// (planned from it, and tested as `prepared`, which must be it prepared under the database's schema).
pub(crate) struct Find<'f, 's> {
    pub(crate) base: &'f Base,
    pub(crate) scope: SearchScope,
    pub(crate) filter: &'f Filter,
    pub(crate) prepared: &'f PreparedFilter<'s>,
}

/// The base of a search named by its normalized DN alone (an overlay's URI), None when no entry
/// holds that name: the plan and the loop place entries by the normalized name.
pub(crate) fn base(
    dir: &Directory,
    txn: &impl View,
    ndn: &NormDn,
) -> Result<Option<Base>, LdapError> {
    Ok(dir
        .id_in(crate::view::txn(txn), ndn)
        .map_err(store_error)?
        .map(|id| Base {
            dn: Arc::new(Dn::default()),
            ndn: Arc::new(ndn.clone()),
            id,
        }))
}

/// Why the loop stopped early: the caller had what it wanted, or a failure.
enum Halt {
    Done,
    Failed(LdapError),
}

impl From<LdapError> for Halt {
    fn from(e: LdapError) -> Self {
        Halt::Failed(e)
    }
}

impl Find<'_, '_> {
    /// Runs the search in `dir` on `txn` as `who`, handing every entry found to `each`, in ID order,
    /// until it returns false. No alias is dereferenced and referral objects are plain entries to
    /// the plan (ManageDsaIT), so that the base is the URL's own entry and nothing answers with a
    /// referral; no size limit; no entry found is expanded (slapd's "no recursion").
    pub(crate) fn run(
        &self,
        dir: &Directory,
        txn: &impl View,
        who: As<'_>,
        each: &mut Each<'_>,
    ) -> Result<(), LdapError> {
        let query = Query {
            scope: self.scope,
            deref: DerefAliases::Never,
            manage_dsa_it: true,
            filter: self.filter,
            subentries: Subentries::All,
        };
        let scan = dir.plan_scan_prepared(txn, &query, self.base, self.prepared)?;
        let mut server = Server;
        let (who, searched): (&mut dyn Requester, bool) = match who {
            As::Requester(who) => (who, true),
            As::Internal => (&mut server, true),
            As::Server => (&mut server, false),
        };
        let mut finder = Finder {
            who,
            filter: self.prepared,
            searched,
            judged: None,
            each,
        };
        match scan.run(dir, txn, &mut finder, Room::default()) {
            Ok(_) | Err(Halt::Done) => Ok(()),
            Err(Halt::Failed(e)) => Err(e),
        }
    }

    /// Whether the search finds any entry but `except`.
    pub(crate) fn any(
        &self,
        dir: &Directory,
        txn: &impl View,
        who: As<'_>,
        except: Option<&NormDn>,
    ) -> Result<bool, LdapError> {
        let mut found = false;
        self.run(dir, txn, who, &mut |_, ndn, _| {
            found = Some(ndn) != except;
            Ok(!found)
        })?;
        Ok(found)
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

/// The reader of these searches in the loop: an entry is found when `who` finds it with the filter,
/// and is handed to `each`.
struct Finder<'w, 'f, 's, 'e> {
    who: &'w mut dyn Requester,
    filter: &'f PreparedFilter<'s>,
    /// Runs as a client's search does (see [`As::Requester`] and [`As::Internal`]): with computed
    /// attributes, without referral objects.
    searched: bool,
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
    type Error = Halt;

    fn needs_ndn(&self) -> bool {
        true
    }

    fn needs_computed(&self) -> bool {
        self.searched
    }

    fn reference(&mut self, _urls: Vec<String>) -> Result<(), Halt> {
        // Referral objects are entries to a ManageDsaIT plan: none comes as a reference.
        Ok(())
    }

    fn judge(
        &mut self,
        _id: u64,
        ndn: Option<&NormDn>,
        _stored: &StoredEntry<'_>,
    ) -> Result<(), Halt> {
        // Always there: the reader needs every entry's DN.
        self.judged = ndn.cloned();
        Ok(())
    }

    fn clears(&mut self, shown: &StoredEntry<'_>) -> bool {
        self.judged.is_some() && !(self.searched && is_referral(shown))
    }

    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        computed: &[Attribute],
        _tested: Option<&Tested<'_, '_>>,
    ) -> Result<bool, Halt> {
        let Some(ndn) = &self.judged else {
            return Ok(false);
        };
        Ok(self.who.finds(ndn, shown, self.filter, computed))
    }

    fn send(&mut self, shown: &StoredEntry<'_>, _computed: &[Attribute]) -> Result<(), Halt> {
        match &self.judged {
            Some(ndn) => match (self.each)(self.who, ndn, shown)? {
                true => Ok(()),
                false => Err(Halt::Done),
            },
            None => Ok(()),
        }
    }
}
