//! A search inside one database: the base found (aliases, referrals), the candidates planned from the
//! indexes or the scope, and the scan that streams in-scope stored entries and continuation references
//! out. The frontend tests its filter under access control and encodes what it sends.

use crate::view::Snapshot;
use canopy_core::filter::PreparedFilter;
use canopy_core::index::{plan, plan_prepared};
use canopy_core::wire::StoredEntry;
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::ReadOps;
use canopy_proto::{DerefAliases, Dn, Filter, ResultCode, SearchScope};
use canopy_schema::NormDn;
use std::sync::Arc;

use crate::alias::{find_base, reach, referral_ids, scope_ids, Base, Reach};
use crate::candidates::resolve;
use crate::database::{Checked, Directory};
use crate::error::{store_error, OpError};
use crate::keys::dn_key;
use crate::referral::{continuation, is_alias, is_glue, is_referral, is_subentry};

/// The DN of the subschema subentry, which every entry names in `subschemaSubentry`.
pub const SUBSCHEMA_DN: &str = "cn=Subschema";

/// What a search asks of the database (RFC 4511 §4.5.1), besides its base.
#[derive(Debug, Clone, Copy)]
pub struct Query<'f> {
    pub scope: SearchScope,
    pub deref: DerefAliases,
    /// ManageDsaIT (RFC 3296): referral objects are ordinary entries.
    pub manage_dsa_it: bool,
    /// The filter the index plan is made from; the frontend tests it.
    pub filter: &'f Filter,
    /// Which RFC 3672 subentries the search sees.
    pub subentries: Subentries,
}

/// RFC 3672 subentries (entries of the `subentry` class) in a search's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subentries {
    /// Every entry (the backend's own searches, sync refreshes, identity mapping).
    All,
    /// slapd's answer to an LDAP search without the Subentries control: subentries only in a
    /// base-scope search, whatever the filter says.
    InBaseScope,
    /// The Subentries control with TRUE: subentries alone.
    Only,
    /// The Subentries control with FALSE: no subentries.
    Hidden,
}

impl Subentries {
    /// From the Subentries control's visibility, if the search carries one.
    pub fn of_control(visibility: Option<bool>) -> Subentries {
        match visibility {
            None => Subentries::InBaseScope,
            Some(true) => Subentries::Only,
            Some(false) => Subentries::Hidden,
        }
    }

    /// Whether an entry, a subentry or not, is part of the answer of a search of `scope`.
    fn keeps(self, subentry: bool, scope: SearchScope) -> bool {
        match self {
            Subentries::All => true,
            Subentries::InBaseScope => !subentry || scope == SearchScope::BaseObject,
            Subentries::Only => subentry,
            Subentries::Hidden => !subentry,
        }
    }
}

impl Query<'_> {
    /// Aliases on the way to the base are followed.
    fn finding(&self) -> bool {
        matches!(
            self.deref,
            DerefAliases::FindingBaseObj | DerefAliases::Always
        )
    }

    /// Aliases inside the scope lead to more places (RFC 4511 §4.5.1.3).
    fn searching(&self) -> bool {
        matches!(self.deref, DerefAliases::InSearching | DerefAliases::Always)
            && self.scope != SearchScope::BaseObject
    }

    /// Referral objects inside the scope are continuation references (RFC 3296 §5.3).
    fn references(&self) -> bool {
        !self.manage_dsa_it && self.scope != SearchScope::BaseObject
    }
}

/// The entries a search examines, in ID order.
enum Candidates {
    /// These IDs, ascending.
    Ids(Vec<u64>),
    /// Every entry of the database with an ID from `from` on: an unindexed subtree search from the suffix,
    /// read in one cursor walk over id2entry without listing the IDs first.
    All { from: u64 },
}

/// A planned search from the base it borrows: its candidates and what the scan needs to place each one.
pub struct Scan<'b> {
    candidates: Candidates,
    unindexed: bool,
    base: &'b NormDn,
    scope: SearchScope,
    reach: Reach,
    references: bool,
    searching: bool,
    /// Referral objects and aliases by ID from the objectClass index (once per snapshot), else None.
    referrals: Option<Arc<[u64]>>,
    aliases: Option<Arc<[u64]>>,
    /// Glue entries (slapd's placeholders, received by replication) are passed over unless the
    /// search has ManageDsaIT; by ID from the objectClass index when there is one.
    hide_glue: bool,
    glue: Option<Arc<[u64]>>,
    /// Which subentries the search sees, and their IDs from the objectClass index when there is
    /// one; `Subentries::All` when the scan need not tell.
    subentries: Subentries,
    subentry_ids: Option<Arc<[u64]>>,
}

/// One examined candidate.
pub enum Candidate<'t> {
    /// Not part of the answer: no entry under the ID, outside the scope, or an alias standing for its
    /// target.
    Passed,
    /// A referral object inside the scope: the URLs of its continuation reference.
    Reference(Vec<String>),
    /// An entry in the scope, for the filter test. `ndn` is there when asked for, or when aliases
    /// widened the scope.
    Entry {
        id: u64,
        stored: StoredEntry<'t>,
        ndn: Option<NormDn>,
    },
}

impl Directory {
    /// Locates a search's base object: a referral at or above it answers instead (unless it is the base
    /// under ManageDsaIT); aliases on the way are followed when the query dereferences in finding.
    pub fn search_base(
        &self,
        txn: &Snapshot,
        dn: Arc<Dn>,
        ndn: Arc<NormDn>,
        query: &Query<'_>,
    ) -> Result<Base, OpError> {
        find_base(
            self,
            txn,
            dn,
            ndn,
            query.finding(),
            query.manage_dsa_it,
            query.scope,
        )
    }

    /// Plans the scan of a search from `base`: candidates from the indexes when the filter allows, else
    /// the scope; the places aliases lead to; the referral objects to send as references.
    pub fn plan_scan<'b>(
        &self,
        txn: &impl crate::View,
        query: &Query<'_>,
        base: &'b Base,
    ) -> Result<Scan<'b>, LdapError> {
        self.plan_scan_with(txn, query, base, None)
    }

    /// [`Directory::plan_scan`] with `query.filter` already prepared under this database's schema
    /// (`prepared` must be that filter's): the frontend prepares it once for the plan and the test.
    pub fn plan_scan_prepared<'b>(
        &self,
        txn: &impl crate::View,
        query: &Query<'_>,
        base: &'b Base,
        prepared: &PreparedFilter<'_>,
    ) -> Result<Scan<'b>, LdapError> {
        self.plan_scan_with(txn, query, base, Some(prepared))
    }

    fn plan_scan_with<'b>(
        &self,
        txn: &impl crate::View,
        query: &Query<'_>,
        base: &'b Base,
        prepared: Option<&PreparedFilter<'_>>,
    ) -> Result<Scan<'b>, LdapError> {
        let (mut candidates, indexed, unindexed) = self.candidates(txn, query, base, prepared)?;
        let (searching, references) = (query.searching(), query.references());
        let reach = if searching {
            reach(self, txn, &base.ndn, base.id, query.scope)?
        } else {
            Reach::default()
        };
        let mut extra = reach.ids.clone();
        if references && indexed {
            // Index candidates follow the filter; referral objects are sent whatever it says.
            let subtree = query.scope != SearchScope::SingleLevel;
            extra.extend(referral_ids(self, txn, &base.ndn, base.id, subtree)?);
        }
        // Every entry of the database includes the extra ones.
        if let (Candidates::Ids(ids), false) = (&mut candidates, extra.is_empty()) {
            ids.extend(extra);
            ids.sort_unstable();
            ids.dedup();
        }
        let hide_glue = !query.manage_dsa_it;
        let subentries = match query.subentries {
            Subentries::InBaseScope if query.scope == SearchScope::BaseObject => Subentries::All,
            other => other,
        };
        let [referrals, aliases, glue, subentry_ids] = self.classes_ids(
            txn,
            [
                references.then_some(Checked::Referral),
                searching.then_some(Checked::Alias),
                hide_glue.then_some(Checked::Glue),
                (subentries != Subentries::All).then_some(Checked::Subentry),
            ],
        )?;
        Ok(Scan {
            candidates,
            unindexed,
            base: &base.ndn,
            scope: query.scope,
            reach,
            references,
            searching,
            referrals,
            aliases,
            hide_glue,
            glue,
            subentries,
            subentry_ids,
        })
    }

    /// The candidates: from the indexes when the filter allows (then `indexed`), else from the scope
    /// (then `unindexed`, unless the scope is the base alone).
    fn candidates(
        &self,
        txn: &impl crate::View,
        query: &Query<'_>,
        base: &Base,
        prepared: Option<&PreparedFilter<'_>>,
    ) -> Result<(Candidates, bool, bool), LdapError> {
        if query.scope == SearchScope::BaseObject {
            return Ok((Candidates::Ids(vec![base.id]), false, false));
        }
        let plan = match prepared {
            Some(prepared) => plan_prepared(self.schema(), &self.indexes(txn), prepared),
            None => plan(self.schema(), &self.indexes(txn), query.filter),
        };
        if let Some(ids) = resolve(txn, &plan)? {
            return Ok((Candidates::Ids(ids), true, false));
        }
        let subtree = query.scope != SearchScope::SingleLevel;
        if subtree && *base.ndn == *self.suffix() {
            return Ok((Candidates::All { from: 0 }, false, true));
        }
        let mut ids = scope_ids(self, txn, &base.ndn, base.id, subtree)?;
        ids.sort_unstable();
        Ok((Candidates::Ids(ids), false, true))
    }

    /// hasSubordinates, entryDN and subschemaSubentry of entry `id` named `dn` (and the suffix entry's
    /// contextCSN): computed, never stored.
    pub fn computed_attributes(
        &self,
        txn: &impl crate::View,
        id: u64,
        dn: &[u8],
    ) -> Result<Vec<Attribute>, LdapError> {
        let txn = crate::view::txn(txn);
        let has = txn.has_children(id).map_err(store_error)?;
        let mut attrs = computed(has, dn);
        // The suffix entry shows the database's contextCSN, as slapd's does (kept in the meta table).
        if txn.get_id(&dn_key(self.suffix())).map_err(store_error)? == Some(id) {
            let context = self.context_csn(txn)?;
            if !context.is_empty() {
                attrs.push(Attribute {
                    desc: "contextCSN".into(),
                    values: context
                        .csns()
                        .iter()
                        .map(|c| c.as_str().as_bytes().to_vec())
                        .collect(),
                });
            }
        }
        Ok(attrs)
    }
}

/// The computed attributes of an entry with or without children.
pub fn computed(has_children: bool, dn: &[u8]) -> Vec<Attribute> {
    let boolean = if has_children { "TRUE" } else { "FALSE" };
    vec![
        Attribute {
            desc: "hasSubordinates".into(),
            values: vec![boolean.as_bytes().to_vec()],
        },
        Attribute {
            desc: "entryDN".into(),
            values: vec![dn.to_vec()],
        },
        Attribute {
            desc: "subschemaSubentry".into(),
            values: vec![SUBSCHEMA_DN.as_bytes().to_vec()],
        },
    ]
}

/// A stored entry decoded, with its secret attributes (userPassword, authPassword) only when `secrets`.
pub fn decoded(stored: &StoredEntry<'_>, secrets: bool) -> Result<Entry, LdapError> {
    let mut entry = stored.to_entry().map_err(|_| unreadable())?;
    if !secrets {
        let secret: Vec<&str> = canopy_core::wire::attributes(stored.secret)
            .filter_map(|a| a.ok().map(|(d, _)| d))
            .collect();
        entry.attrs.retain(|a| !secret.contains(&a.desc.as_str()));
    }
    Ok(entry)
}

fn unreadable() -> LdapError {
    LdapError::new(ResultCode::Other, "stored entry is unreadable")
}

/// One candidate as read: its ID and stored bytes (None when an ID has no entry).
type Item<'t> = Result<(u64, Option<&'t [u8]>), canopy_mdb::StoreError>;

impl Scan<'_> {
    /// The scope was walked because no index could answer the filter (a base search never is).
    pub fn unindexed(&self) -> bool {
        self.unindexed
    }

    /// How many candidates the scan examines (slapd's size.unchecked counts these).
    pub fn candidate_count(&self, txn: &impl crate::View) -> Result<u64, LdapError> {
        match &self.candidates {
            Candidates::Ids(ids) => Ok(ids.len() as u64),
            Candidates::All { .. } => crate::view::txn(txn).entry_count().map_err(store_error),
        }
    }

    /// Skips the candidates up to and including ID `last` (the paged-results cookie's last entry: IDs
    /// only grow, so this resumes correctly even when entries changed between pages).
    pub fn resume_after(&mut self, last: u64) {
        match &mut self.candidates {
            Candidates::Ids(ids) => ids.retain(|id| *id > last),
            Candidates::All { from } => *from = last.saturating_add(1),
        }
    }

    /// The examined candidates in ID order; with `with_ndn`, every entry's normalized DN is made.
    pub fn examine<'t, V: crate::View>(
        &'t self,
        txn: &'t V,
        with_ndn: bool,
    ) -> Result<impl Iterator<Item = Result<Candidate<'t>, LdapError>> + 't, LdapError> {
        let items: Box<dyn Iterator<Item = Item<'t>>> = match &self.candidates {
            Candidates::Ids(ids) => Box::new(
                crate::view::txn(txn)
                    .candidate_entries(ids)
                    .map_err(store_error)?,
            ),
            Candidates::All { from } => Box::new(
                crate::view::txn(txn)
                    .entries_from(*from)
                    .map_err(store_error)?
                    .map(|item| item.map(|(id, bytes)| (id, Some(bytes)))),
            ),
        };
        let with_ndn = with_ndn || !self.reach.roots.is_empty();
        Ok(items.map(move |item| {
            let (id, bytes) = item.map_err(store_error)?;
            self.place(id, bytes, with_ndn)
        }))
    }

    fn place<'t>(
        &self,
        id: u64,
        bytes: Option<&'t [u8]>,
        with_ndn: bool,
    ) -> Result<Candidate<'t>, LdapError> {
        let Some(bytes) = bytes else {
            return Ok(Candidate::Passed);
        };
        let stored = Directory::parse_stored(bytes)?;
        // The scope test reads the stored RDNs; the normalized DN is built only when something needs it.
        let depth = stored.below(self.base.rdns());
        let scoped = match self.scope {
            SearchScope::BaseObject => depth == Some(0),
            SearchScope::SingleLevel => depth == Some(1),
            SearchScope::WholeSubtree => depth.is_some(),
            SearchScope::SubordinateSubtree => depth.is_some_and(|d| d > 0),
        };
        let ndn = if with_ndn {
            Some(stored.ndn().map_err(|_| unreadable())?)
        } else {
            None
        };
        if !scoped && !ndn.as_ref().is_some_and(|n| self.reach.contains(n)) {
            return Ok(Candidate::Passed);
        }
        if self.references && is_kind(self.referrals.as_deref(), id, &stored, is_referral) {
            // Sent whatever the filter and the page size say; a page resumes after its last entry, so
            // references past it come again on the next page, as slapd sends them.
            return Ok(Candidate::Reference(continuation(&stored, self.scope)));
        }
        if self.hide_glue && is_kind(self.glue.as_deref(), id, &stored, is_glue) {
            return Ok(Candidate::Passed);
        }
        if self.subentries != Subentries::All {
            let subentry = is_kind(self.subentry_ids.as_deref(), id, &stored, is_subentry);
            if !self.subentries.keeps(subentry, self.scope) {
                return Ok(Candidate::Passed);
            }
        }
        // Dereferenced aliases stand for their targets; a base alias not dereferenced when finding stays.
        if self.searching
            && is_kind(self.aliases.as_deref(), id, &stored, is_alias)
            && depth != Some(0)
        {
            return Ok(Candidate::Passed);
        }
        Ok(Candidate::Entry { id, stored, ndn })
    }
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
