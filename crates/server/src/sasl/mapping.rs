//! SASL names to entries: `dn:`/`u:` forms, the targets of the `authz-regexp` rules (`crate::authz`)
//! found in the directory, the default `uid` search, and proxy authorization against the directory's
//! names.

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::{StoredEntry, StoredView};
use canopy_core::{Attribute, LdapError};
use canopy_directory::alias::Base;
use canopy_directory::search::{Query, Subentries};
use canopy_directory::search_loop::{Reader, Requester, Room, Tested};
use canopy_proto::{DerefAliases, Dn, Filter, ResultCode, SearchScope};
use canopy_schema::NormDn;

use crate::authz::Target;
use crate::state::State;

/// Maps a SASL identity (`dn:DN`, `u:name` or a bare name) to an existing entry's DN. None when it
/// names no entry, or several.
pub fn resolve_identity(
    state: &State,
    mechanism: &str,
    identity: &str,
) -> Result<Option<(Dn, NormDn)>, LdapError> {
    let dir = &state.databases;
    if let Some(dn) = identity.strip_prefix("dn:") {
        let Ok((dn, ndn)) = dir.normalize(dn.trim().as_bytes()) else {
            return Ok(None);
        };
        return Ok(exists(state, &ndn)?.then_some((dn, ndn)));
    }
    resolve_user(
        state,
        mechanism,
        identity.strip_prefix("u:").unwrap_or(identity),
    )
}

/// The entry of an authentication identity (PLAIN's authcid, SCRAM's `n=`): a user name as given, mapped
/// by the rules; `dn:` and `u:` are forms of authorization identities only (RFC 4513 §5.2.1.8), so
/// slapd takes them literally here, and so does Canopy.
pub fn resolve_user(
    state: &State,
    mechanism: &str,
    name: &str,
) -> Result<Option<(Dn, NormDn)>, LdapError> {
    if name.is_empty() {
        return Ok(None);
    }
    resolve_target(state, state.sasl_rules.target(mechanism, name))
}

/// The entry an EXTERNAL identity (a verified certificate's subject or ldapi peer credentials, as a
/// normalized DN) is mapped to by the first `authz-regexp` rule that matches it: slapd runs every SASL
/// identity through the rules. None when no rule matches or the rule's target names no single entry;
/// the identity then stays as it is, as in slapd.
pub fn map_external(state: &State, ndn: &NormDn) -> Result<Option<(Dn, NormDn)>, LdapError> {
    match state.sasl_rules.rewrite(ndn.as_str()) {
        None => Ok(None),
        Some(target) => resolve_target(state, target),
    }
}

/// The entry a rule's target names: a DN that exists, or the one entry a search finds.
pub(super) fn resolve_target(
    state: &State,
    target: Target,
) -> Result<Option<(Dn, NormDn)>, LdapError> {
    match target {
        Target::Dn(text) => {
            let Ok((dn, ndn)) = state.databases.normalize(text.as_bytes()) else {
                return Ok(None);
            };
            Ok(exists(state, &ndn)?.then_some((dn, ndn)))
        }
        Target::Search {
            base,
            subtree,
            filter,
        } => find_unique(state, &base, subtree, &filter),
    }
}

/// Whether `ndn` is the root DN or an entry of the directory.
fn exists(state: &State, ndn: &NormDn) -> Result<bool, LdapError> {
    if state.databases.is_root_dn(ndn) {
        return Ok(true);
    }
    let Some(dir) = state.databases.route(ndn) else {
        return Ok(false);
    };
    let txn = dir.read()?;
    Ok(dir.lookup(&txn, ndn)?.is_some())
}

/// The one entry at or below `base` (the first database's suffix when empty) that matches `filter`, if
/// exactly one does: an internal search through the backend, like any other, without aliases or
/// referrals.
fn find_unique(
    state: &State,
    base: &str,
    subtree: bool,
    filter: &str,
) -> Result<Option<(Dn, NormDn)>, LdapError> {
    let databases = &state.databases;
    let (base_dn, base_ndn) = if base.is_empty() {
        let first = databases.first();
        (first.suffix_dn().clone(), first.suffix().clone())
    } else {
        match databases.normalize(base.as_bytes()) {
            Ok(pair) => pair,
            Err(_) => return Ok(None),
        }
    };
    let Some(dir) = databases.route(&base_ndn) else {
        return Ok(None);
    };
    let Ok(filter) = Filter::parse(filter) else {
        return Ok(None);
    };
    let txn = dir.read()?;
    let Some((base_id, _)) = dir.lookup(&txn, &base_ndn)? else {
        return Ok(None);
    };
    let query = Query {
        scope: if subtree {
            SearchScope::WholeSubtree
        } else {
            SearchScope::BaseObject
        },
        deref: DerefAliases::Never,
        manage_dsa_it: true,
        filter: &filter,
        subentries: Subentries::All,
    };
    let base = Base {
        dn: base_dn.into(),
        ndn: base_ndn.into(),
        id: base_id,
    };
    let scan = dir.plan_scan(&txn, &query, &base)?;
    let mut reader = Mapping {
        filter: PreparedFilter::new(dir.schema(), &filter),
        judged: None,
        found: None,
    };
    // A second entry found makes the mapping ambiguous: no identity, as slapd's.
    let room = Room {
        size: Some(1),
        page: None,
    };
    match scan.run(dir.backend(), &txn, &mut reader, room) {
        Ok(_) => Ok(reader.found),
        Err(e) if e.code == ResultCode::SizeLimitExceeded => Ok(None),
        Err(e) => Err(e),
    }
}

/// The backend's search loop as an identity mapping runs it: with the server's own access (all), the
/// filter tested on each entry as stored, and the entries it finds kept.
struct Mapping<'s> {
    filter: PreparedFilter<'s>,
    /// The normalized DN of the entry judged last.
    judged: Option<NormDn>,
    found: Option<(Dn, NormDn)>,
}

impl Requester for Mapping<'_> {
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

impl Reader for Mapping<'_> {
    type Error = LdapError;

    fn needs_ndn(&self) -> bool {
        true
    }

    fn needs_computed(&self) -> bool {
        false
    }

    fn reference(&mut self, _urls: Vec<String>) -> Result<(), LdapError> {
        Ok(())
    }

    fn judge(
        &mut self,
        _id: u64,
        ndn: Option<&NormDn>,
        _stored: &StoredEntry<'_>,
    ) -> Result<(), LdapError> {
        self.judged = ndn.cloned();
        Ok(())
    }

    fn clears(&mut self, _shown: &StoredEntry<'_>) -> bool {
        self.judged.is_some()
    }

    fn matches(
        &mut self,
        shown: &StoredEntry<'_>,
        computed: &[Attribute],
        _tested: Option<&Tested<'_, '_>>,
    ) -> Result<bool, LdapError> {
        Ok(self
            .filter
            .evaluate(&StoredView::new(shown), computed)
            .is_true())
    }

    fn send(&mut self, shown: &StoredEntry<'_>, _computed: &[Attribute]) -> Result<(), LdapError> {
        let dn = Dn::parse(shown.dn).unwrap_or_default();
        self.found = self.judged.take().map(|ndn| (dn, ndn));
        Ok(())
    }
}

/// Whether `authc` may act as `authz` under the `[[sasl.proxy]]` rules.
pub fn may_proxy(state: &State, authc: &NormDn, authz: &NormDn) -> bool {
    let normalize = |dn: &str| {
        state
            .databases
            .normalize(dn.as_bytes())
            .ok()
            .map(|(_, n)| n)
    };
    state.sasl_rules.allows_proxy(normalize, authc, authz)
}
