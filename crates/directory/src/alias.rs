//! Alias entries (RFC 4512 §2.6) and search dereferencing (RFC 4511 §4.5.1.3): finding the base object
//! through aliases, and the extra scopes aliases inside a search's scope lead to.

use crate::view::Snapshot;
use canopy_core::LdapError;
use canopy_mdb::ReadOps;
use canopy_proto::{Dn, ResultCode, SearchScope};
use canopy_schema::NormDn;
use std::sync::Arc;

use crate::database::{Checked, Directory};
use crate::error::{store_error, OpError};
use crate::keys::dn_key;
use crate::referral::{is_alias, is_referral, nearest, referral_for, values};

/// Aliases followed in one chain before it counts as circular.
const MAX_CHAIN: usize = 64;
/// Bounds the work aliases can make a single subtree search do.
const MAX_ROOTS: usize = 1024;

/// Where an alias leads.
pub enum Deref {
    Found {
        id: u64,
        dn: Dn,
        ndn: NormDn,
    },
    /// The chain ends at a missing (or unusable) name; the DN of the last alias read.
    Dangling(String),
    /// The chain comes back to an alias already followed; that alias's DN.
    Circular(String),
}

/// Follows `aliasedObjectName` from an alias entry until a non-alias entry.
pub fn deref(dir: &Directory, txn: &impl crate::View, start: &[u8]) -> Result<Deref, LdapError> {
    let mut current = Directory::parse_stored(start)?;
    let mut visited: Vec<NormDn> = Vec::new();
    if let Ok(ndn) = current.ndn() {
        visited.push(ndn);
    }
    for _ in 0..MAX_CHAIN {
        let current_dn = String::from_utf8_lossy(current.dn).into_owned();
        let Some(target) = values(&current, "aliasedObjectName").into_iter().next() else {
            return Ok(Deref::Dangling(current_dn));
        };
        let Ok((_, target_ndn)) = dir.normalize(target) else {
            return Ok(Deref::Dangling(current_dn));
        };
        if visited.contains(&target_ndn) {
            let looped = match dir.lookup(txn, &target_ndn)? {
                Some((_, bytes)) => {
                    String::from_utf8_lossy(Directory::parse_stored(bytes)?.dn).into_owned()
                }
                None => current_dn,
            };
            return Ok(Deref::Circular(looped));
        }
        if !dir.holds(&target_ndn) {
            return Ok(Deref::Dangling(current_dn));
        }
        let Some((id, bytes)) = dir.lookup(txn, &target_ndn)? else {
            return Ok(Deref::Dangling(current_dn));
        };
        let stored = Directory::parse_stored(bytes)?;
        if !is_alias(&stored) {
            let dn = Dn::parse(stored.dn).unwrap_or_default();
            return Ok(Deref::Found {
                id,
                dn,
                ndn: target_ndn,
            });
        }
        visited.push(target_ndn);
        current = stored;
    }
    Ok(Deref::Circular(
        String::from_utf8_lossy(current.dn).into_owned(),
    ))
}

/// The search base as found: its DN (after any dereferencing), normalized DN and ID.
pub struct Base {
    /// Shared with the memo of `Directory::normalize_shared` when the request named it: not copied per search.
    pub dn: Arc<Dn>,
    pub ndn: Arc<NormDn>,
    pub id: u64,
}

/// Locates a search's base object: referral objects at or above it answer with a referral (unless it is
/// the base itself under ManageDsaIT); with `finding`, aliases on the way are followed, and the rest of
/// the name continues below the alias's target, as slapd does.
pub fn find_base(
    dir: &Directory,
    txn: &Snapshot,
    mut dn: Arc<Dn>,
    mut ndn: Arc<NormDn>,
    finding: bool,
    manage_dsa_it: bool,
    scope: SearchScope,
) -> Result<Base, OpError> {
    if let Some(id) = dir.known_plain(txn, &ndn) {
        return Ok(Base { dn, ndn, id });
    }
    // The root of a database whose suffix is empty: a virtual entry (ID 0) whose children are the
    // top entries, as back-mdb's "DIT root".
    if ndn.is_root() && dir.suffix().is_root() {
        return Ok(Base { dn, ndn, id: 0 });
    }
    let requested = Arc::clone(&dn);
    let mut via_alias = false;
    for _ in 0..MAX_CHAIN {
        let Some((below, id, bytes)) = nearest(dir, txn, &ndn)? else {
            return Err(dir.no_such_object(txn, &ndn, &dn).into());
        };
        let stored = Directory::parse_stored(bytes)?;
        if is_referral(&stored) && !(below == 0 && manage_dsa_it) {
            let requested = via_alias.then_some(&*requested);
            return Err(referral_for(&stored, &dn, below, Some(scope), requested).into());
        }
        if finding && is_alias(&stored) {
            let target = match deref(dir, txn, bytes)? {
                Deref::Found { dn, .. } => dn,
                Deref::Dangling(at) => {
                    return Err(alias_problem("aliasedObject not found", at));
                }
                Deref::Circular(at) => return Err(alias_problem("circular alias", at)),
            };
            let mut rdns = dn.rdns.get(..below).unwrap_or(&[]).to_vec();
            rdns.extend(target.rdns);
            dn = Arc::new(Dn { rdns });
            via_alias = true;
            ndn = Arc::new(
                dir.schema()
                    .normalize_dn(&dn)
                    .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid DN"))?,
            );
            continue;
        }
        if below > 0 {
            return Err(dir.no_such_object(txn, &ndn, &dn).into());
        }
        if !is_referral(&stored) && !is_alias(&stored) {
            dir.remember_plain(txn, &ndn, id);
        }
        return Ok(Base { dn, ndn, id });
    }
    Err(alias_problem("circular alias", dn.to_string()))
}

fn alias_problem(text: &str, matched: String) -> OpError {
    LdapError::new(ResultCode::AliasProblem, text)
        .with_matched(matched)
        .into()
}

/// The places a one-level or subtree search also covers when it dereferences aliases while searching.
#[derive(Debug, Default)]
pub struct Reach {
    pub roots: Vec<(NormDn, SearchScope)>,
    /// Candidate IDs in those places.
    pub ids: Vec<u64>,
}

impl Reach {
    pub fn contains(&self, ndn: &NormDn) -> bool {
        self.roots.iter().any(|(root, scope)| match scope {
            SearchScope::BaseObject | SearchScope::SingleLevel => root == ndn,
            SearchScope::WholeSubtree => root.is_suffix_of(ndn),
            SearchScope::SubordinateSubtree => root != ndn && root.is_suffix_of(ndn),
        })
    }
}

/// Entry IDs of a scope, the way an unindexed search walks it.
pub fn scope_ids(
    dir: &Directory,
    txn: &impl crate::View,
    root: &NormDn,
    root_id: u64,
    subtree: bool,
) -> Result<Vec<u64>, LdapError> {
    if !subtree {
        return txn.txn().children(root_id).map_err(store_error);
    }
    if root == dir.suffix() {
        return txn.txn().entry_ids().map_err(store_error);
    }
    Ok(txn
        .txn()
        .subtree(&dn_key(root))
        .map_err(store_error)?
        .into_iter()
        .map(|(_, id)| id)
        .collect())
}

/// Entries of `class` inside a scope (children only when not `subtree`), as (ID, stored bytes).
fn members<'t, V: crate::View>(
    dir: &Directory,
    txn: &'t V,
    root: &NormDn,
    root_id: u64,
    subtree: bool,
    indexed: Option<&[u64]>,
) -> Result<Vec<(u64, &'t [u8])>, LdapError> {
    let ids = match indexed {
        Some(ids) => ids.to_vec(),
        None => scope_ids(dir, txn, root, root_id, subtree)?,
    };
    let mut out = Vec::new();
    for id in ids {
        let Some(bytes) = txn.txn().get_entry(id).map_err(store_error)? else {
            continue;
        };
        let stored = Directory::parse_stored(bytes)?;
        let Ok(ndn) = stored.ndn() else { continue };
        let inside = if subtree {
            root.is_suffix_of(&ndn)
        } else {
            ndn.parent().as_ref() == Some(root)
        };
        if inside && is_alias(&stored) {
            out.push((id, bytes));
        }
    }
    Ok(out)
}

/// What aliases inside a one-level, subtree or children scope lead to: a one-level search reaches the
/// targets themselves, deeper ones their subtrees (a children search, as slapd, not the targets
/// themselves). Dangling and circular aliases lead nowhere, and a base that is an alias stays one.
pub fn reach(
    dir: &Directory,
    txn: &impl crate::View,
    base: &NormDn,
    base_id: u64,
    scope: SearchScope,
) -> Result<Reach, LdapError> {
    let subtree = scope != SearchScope::SingleLevel;
    let indexed = dir.class_ids(txn, Checked::Alias)?;
    let mut reach = Reach::default();
    let mut pending = vec![(base.clone(), base_id)];
    while let Some((root, root_id)) = pending.pop() {
        for (alias_id, bytes) in members(dir, txn, &root, root_id, subtree, indexed.as_deref())? {
            if alias_id == base_id {
                continue;
            }
            let Deref::Found { id, ndn, .. } = deref(dir, txn, bytes)? else {
                continue;
            };
            // A one-level search does not return its own base, even through an alias (as slapd).
            let covered = (subtree && base.is_suffix_of(&ndn))
                || (!subtree && ndn == *base)
                || reach.contains(&ndn);
            if covered || reach.roots.len() >= MAX_ROOTS {
                continue;
            }
            reach.ids.push(id);
            if subtree {
                reach.ids.extend(scope_ids(dir, txn, &ndn, id, true)?);
                pending.push((ndn.clone(), id));
            }
            reach.roots.push((ndn, scope));
        }
    }
    Ok(reach)
}

/// IDs of referral objects inside a scope, for continuation references.
pub fn referral_ids(
    dir: &Directory,
    txn: &impl crate::View,
    base: &NormDn,
    base_id: u64,
    subtree: bool,
) -> Result<Vec<u64>, LdapError> {
    if let Some(ids) = dir.class_ids(txn, Checked::Referral)? {
        return Ok(ids.to_vec());
    }
    let mut out = Vec::new();
    for id in scope_ids(dir, txn, base, base_id, subtree)? {
        if let Some(bytes) = txn.txn().get_entry(id).map_err(store_error)? {
            if is_referral(&Directory::parse_stored(bytes)?) {
                out.push(id);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ndn(s: &str) -> NormDn {
        let schema = canopy_schema::Schema::builtin();
        schema
            .normalize_dn(&Dn::parse(s.as_bytes()).unwrap())
            .unwrap()
    }

    #[test]
    fn reach_contains_by_scope() {
        let root = "ou=people,dc=example,dc=com";
        let cases = [
            (SearchScope::SingleLevel, root, true),
            (
                SearchScope::SingleLevel,
                "uid=a,ou=people,dc=example,dc=com",
                false,
            ),
            (SearchScope::WholeSubtree, root, true),
            (
                SearchScope::WholeSubtree,
                "uid=a,ou=people,dc=example,dc=com",
                true,
            ),
            (SearchScope::WholeSubtree, "dc=example,dc=com", false),
            (SearchScope::SubordinateSubtree, root, false),
            (
                SearchScope::SubordinateSubtree,
                "uid=a,ou=people,dc=example,dc=com",
                true,
            ),
            (
                SearchScope::SubordinateSubtree,
                "ou=groups,dc=example,dc=com",
                false,
            ),
        ];
        for (scope, probe, expected) in cases {
            let reach = Reach {
                roots: vec![(ndn(root), scope)],
                ids: Vec::new(),
            };
            assert_eq!(reach.contains(&ndn(probe)), expected, "{scope:?} {probe}");
        }
        assert!(!Reach::default().contains(&ndn(root)));
    }
}
