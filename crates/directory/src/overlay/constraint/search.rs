//! The searches of the `uri` constraint and of URLs in sets, run as slapd's internal searches are (no
//! alias dereferencing, no limits, no access control) but through the write's own transaction, by the
//! backend's one search loop (`crate::find`, `As::Internal`).

use canopy_core::filter::PreparedFilter;
use canopy_core::{Entry, LdapError};
use canopy_mdb::WriteTxn;
use canopy_proto::{Filter, ResultCode, SearchScope};
use canopy_schema::NormDn;

use crate::database::Directory;
use crate::find::{self, As, Find};

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
    let prepared = PreparedFilter::new(dir.schema(), filter);
    found(
        dir,
        txn,
        base,
        scope,
        filter,
        &prepared,
        &mut |_, _, stored| {
            let entry = stored
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            Ok(each(&entry))
        },
    )
}

/// Whether any entry in `scope` of `base` matches `filter`.
pub(super) fn any(
    dir: &Directory,
    txn: &WriteTxn<'_>,
    base: &NormDn,
    scope: SearchScope,
    filter: &Filter,
) -> Result<bool, LdapError> {
    let mut any = false;
    let prepared = PreparedFilter::new(dir.schema(), filter);
    found(dir, txn, base, scope, filter, &prepared, &mut |_, _, _| {
        any = true;
        Ok(false)
    })?;
    Ok(any)
}

/// Runs the search as the server, handing each entry found to `each`.
fn found(
    dir: &Directory,
    txn: &WriteTxn<'_>,
    base: &NormDn,
    scope: SearchScope,
    filter: &Filter,
    prepared: &PreparedFilter<'_>,
    each: &mut crate::find::Each<'_>,
) -> Result<(), LdapError> {
    let Some(base) = find::base(dir, txn, base)? else {
        return Ok(());
    };
    let find = Find {
        base: &base,
        scope,
        filter,
        prepared,
    };
    find.run(dir, txn, As::Internal, each)
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
