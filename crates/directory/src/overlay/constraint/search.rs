//! The searches of the `uri` constraint and of URLs in sets, run as slapd's internal searches are (no
//! alias dereferencing, no limits, no access control) but through the write's own transaction: the
//! equality index when the filter allows, else the scope.

use canopy_core::filter::PreparedFilter;
use canopy_core::index::plan;
use canopy_core::wire::StoredView;
use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Filter, ResultCode, SearchScope};
use canopy_schema::NormDn;

use crate::candidates::resolve;
use crate::database::Directory;
use crate::error::store_error;
use crate::keys::dn_key;
use crate::search::computed;

/// Whether `ndn` is within `scope` of `base`.
pub(super) fn in_scope(base: &NormDn, scope: SearchScope, ndn: &NormDn) -> bool {
    match scope {
        SearchScope::BaseObject => base == ndn,
        SearchScope::SingleLevel => ndn.parent().is_some_and(|p| p == *base),
        SearchScope::WholeSubtree => base.is_suffix_of(ndn),
        SearchScope::SubordinateSubtree => base != ndn && base.is_suffix_of(ndn),
    }
}

/// Calls `each` on every entry in `scope` of `base` that `filter` matches, until it returns false.
/// A missing base finds nothing (slapd's noSuchObject counts as "not found"); referral objects are
/// not entries of a search without ManageDsaIT, so they are passed over.
pub(super) fn each(
    dir: &Directory,
    txn: &WriteTxn<'_>,
    base: &NormDn,
    scope: SearchScope,
    filter: &Filter,
    mut each: impl FnMut(&Entry) -> bool,
) -> Result<(), LdapError> {
    let Some(base_id) = txn.get_id(&dn_key(base)).map_err(store_error)? else {
        return Ok(());
    };
    let schema = dir.schema();
    let (ids, from_index) = match scope {
        SearchScope::BaseObject => (vec![base_id], false),
        _ => match resolve(txn, &plan(schema, &dir.indexes(txn), filter))? {
            Some(ids) => (ids, true),
            None => {
                let ids = match scope {
                    SearchScope::SingleLevel => txn.children(base_id),
                    _ => txn.subtree_ids(&dn_key(base)),
                };
                (ids.map_err(store_error)?, false)
            }
        },
    };
    let wanted = PreparedFilter::new(schema, filter);
    let referral = Filter::Equality("objectClass".into(), b"referral".to_vec());
    let referral = PreparedFilter::new(schema, &referral);
    for id in ids {
        if scope == SearchScope::SubordinateSubtree && id == base_id {
            continue;
        }
        let Some(bytes) = txn.get_entry(id).map_err(store_error)? else {
            continue;
        };
        let stored = Directory::parse_stored(bytes)?;
        let view = StoredView::new(&stored);
        let children = txn.has_children(id).map_err(store_error)?;
        let extra = computed(children, stored.dn);
        if !wanted.evaluate(&view, &extra).is_true() || referral.evaluate(&view, &[]).is_true() {
            continue;
        }
        let entry = stored
            .to_entry()
            .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
        // Index candidates come from the whole database; the scope's own IDs need no check.
        if from_index && !in_scope(base, scope, &entry.ndn) {
            continue;
        }
        if !each(&entry) {
            break;
        }
    }
    Ok(())
}

/// Whether any entry in `scope` of `base` matches `filter`.
pub(super) fn any(
    dir: &Directory,
    txn: &WriteTxn<'_>,
    base: &NormDn,
    scope: SearchScope,
    filter: &Filter,
) -> Result<bool, LdapError> {
    let mut found = false;
    each(dir, txn, base, scope, filter, |_| {
        found = true;
        false
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        let schema = canopy_schema::Schema::builtin();
        let n = |s: &str| {
            schema
                .normalize_dn(&canopy_proto::Dn::parse(s.as_bytes()).unwrap())
                .unwrap()
        };
        let base = n("ou=p,dc=x");
        let cases = [
            ("ou=p,dc=x", [true, false, true, false]),
            ("uid=a,ou=p,dc=x", [false, true, true, true]),
            ("cn=b,uid=a,ou=p,dc=x", [false, false, true, true]),
            ("dc=x", [false, false, false, false]),
            ("ou=q,dc=x", [false, false, false, false]),
        ];
        let scopes = [
            SearchScope::BaseObject,
            SearchScope::SingleLevel,
            SearchScope::WholeSubtree,
            SearchScope::SubordinateSubtree,
        ];
        for (dn, want) in cases {
            for (scope, want) in scopes.iter().zip(want) {
                assert_eq!(in_scope(&base, *scope, &n(dn)), want, "{dn} {scope:?}");
            }
        }
    }
}
