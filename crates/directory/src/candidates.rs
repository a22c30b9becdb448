//! Turning an index plan into candidate entry IDs: key lookups, intersections and unions.

use std::ops::Bound;

use canopy_core::index::Plan;
use canopy_core::LdapError;
use canopy_mdb::ReadOps;

use crate::error::store_error;

/// The first budget of IDs read per index key or range. A part of an AND that holds more is left out while
/// another part narrows the search down (the filter test decides each candidate anyway), so a common key such
/// as `objectClass=person` or a substring gram found in every value costs little.
const FIRST_BUDGET: usize = 1024;
/// How much the budget grows when every part of an AND is over it.
const BUDGET_GROWTH: usize = 32;
/// Beyond this the budget is unlimited.
const LAST_BUDGET: usize = 1 << 20;

/// Evaluates an index plan to a sorted ID list, a superset of the entries the filter matches; None means
/// "everything" (unindexed). Works in a read snapshot and inside a write (the overlays' lookups).
pub fn resolve(txn: &impl crate::View, plan: &Plan) -> Result<Option<Vec<u64>>, LdapError> {
    let txn = crate::view::txn(txn);
    let mut budget = FIRST_BUDGET;
    loop {
        match resolve_within(txn, plan, budget)? {
            Resolved::Ids(ids) => return Ok(Some(ids)),
            Resolved::All => return Ok(None),
            // Unreachable with an unlimited budget, where no read gives up; everything is a safe answer.
            Resolved::TooMany if budget == usize::MAX => return Ok(None),
            Resolved::TooMany if budget >= LAST_BUDGET => budget = usize::MAX,
            Resolved::TooMany => budget *= BUDGET_GROWTH,
        }
    }
}

/// A plan part's candidates under a budget.
#[derive(Debug, PartialEq, Eq)]
enum Resolved {
    Ids(Vec<u64>),
    /// Unindexed: every entry.
    All,
    /// Over the budget: left out of an AND, retried with a larger budget alone.
    TooMany,
}

fn resolve_within(txn: &impl ReadOps, plan: &Plan, budget: usize) -> Result<Resolved, LdapError> {
    Ok(match plan {
        Plan::All => Resolved::All,
        Plan::Empty => Resolved::Ids(Vec::new()),
        Plan::Keys { attr, keys } => intersect_parts(keys.iter(), budget, |key, budget| {
            txn.index_get_capped(attr, key, budget)
                .map(|ids| ids.map_or(Resolved::TooMany, Resolved::Ids))
                .map_err(store_error)
        })?,
        Plan::Range { attr, from, to } => txn
            .index_range_capped(attr, as_slice(from), as_slice(to), budget)
            .map_err(store_error)?
            .map_or(Resolved::TooMany, Resolved::Ids),
        Plan::And(parts) => intersect_parts(parts.iter(), budget, |part, budget| {
            resolve_within(txn, part, budget)
        })?,
        Plan::Or(parts) => {
            let mut all = Vec::new();
            for part in parts {
                match resolve_within(txn, part, budget)? {
                    Resolved::Ids(ids) => all.extend(ids),
                    other => return Ok(other),
                }
            }
            all.sort_unstable();
            all.dedup();
            Resolved::Ids(all)
        }
    })
}

/// Once an AND is down to this many candidates, its remaining parts are not read: testing so few entries
/// costs less than reading another ID list.
const FEW: usize = 8;
/// A later part of an AND is read only while it holds at most this many IDs per candidate left: reading an
/// ID costs a small fraction of testing an entry, so a much longer list cannot pay for itself.
const WORTH_PER_CANDIDATE: usize = 32;

/// The intersection of the parts, each read by `read` within a budget; parts over it are left out unless all
/// are. Later parts get a budget that shrinks with the candidates already found.
fn intersect_parts<T>(
    parts: impl Iterator<Item = T>,
    budget: usize,
    mut read: impl FnMut(T, usize) -> Result<Resolved, LdapError>,
) -> Result<Resolved, LdapError> {
    let mut result: Option<Vec<u64>> = None;
    let mut over = false;
    for part in parts {
        let part_budget = match &result {
            Some(acc) if acc.len() <= FEW => break,
            Some(acc) => budget.min(acc.len().saturating_mul(WORTH_PER_CANDIDATE)),
            None => budget,
        };
        match read(part, part_budget)? {
            Resolved::Ids(ids) => {
                let ids = match result {
                    None => ids,
                    Some(acc) => intersect(&acc, &ids),
                };
                if ids.is_empty() {
                    return Ok(Resolved::Ids(ids));
                }
                result = Some(ids);
            }
            Resolved::All => {}
            Resolved::TooMany => over = true,
        }
    }
    Ok(match result {
        Some(ids) => Resolved::Ids(ids),
        None if over => Resolved::TooMany,
        None => Resolved::All,
    })
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(b) => Bound::Included(b.as_slice()),
        Bound::Excluded(b) => Bound::Excluded(b.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

pub fn intersect(a: &[u64], b: &[u64]) -> Vec<u64> {
    let (mut i, mut j, mut out) = (0, 0, Vec::with_capacity(a.len().min(b.len())));
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(*x);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_over_the_budget_are_left_out_of_an_and() {
        use Resolved::*;
        let cases = [
            (vec![TooMany, Ids(vec![1, 2])], Ids(vec![1, 2])),
            // Two candidates are few enough: the rest is not read.
            (
                vec![Ids(vec![1, 2]), TooMany, Ids(vec![2, 3])],
                Ids(vec![1, 2]),
            ),
            (
                vec![Ids((1..=20).collect()), Ids((10..=30).collect())],
                Ids((10..=20).collect()),
            ),
            (vec![TooMany, TooMany], TooMany),
            (vec![All, TooMany], TooMany),
            (vec![All, All], All),
            (vec![], All),
            (vec![Ids(vec![]), TooMany], Ids(vec![])),
            (vec![All, Ids(vec![5])], Ids(vec![5])),
        ];
        for (parts, want) in cases {
            let text = format!("{parts:?}");
            let got = intersect_parts(parts.into_iter(), 100, |p, _| Ok(p)).unwrap();
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn intersect_table() {
        for (a, b, want) in [
            (vec![1, 2, 3], vec![2, 3, 4], vec![2, 3]),
            (vec![], vec![1], vec![]),
            (vec![1, 5, 9], vec![0, 5, 10], vec![5]),
            (vec![7], vec![7], vec![7]),
        ] {
            assert_eq!(intersect(&a, &b), want, "{a:?} & {b:?}");
        }
    }

    #[test]
    fn bounds_borrow_their_keys() {
        let key = vec![6u8, 1];
        assert_eq!(
            as_slice(&Bound::Included(key.clone())),
            Bound::Included(&key[..])
        );
        assert_eq!(
            as_slice(&Bound::Excluded(vec![7])),
            Bound::Excluded(&[7u8][..])
        );
        assert_eq!(as_slice(&Bound::Unbounded), Bound::Unbounded);
    }
}
