//! Turning an index plan into candidate entry IDs: key lookups, intersections and unions.

use std::ops::Bound;

use canopy_core::index::Plan;
use canopy_core::LdapError;
use canopy_mdb::{ReadOps, ReadTxn};

use crate::directory::store_error;

/// Evaluates an index plan to a sorted ID list; None means "everything" (unindexed).
pub fn resolve(txn: &ReadTxn, plan: &Plan) -> Result<Option<Vec<u64>>, LdapError> {
    Ok(match plan {
        Plan::All => None,
        Plan::Empty => Some(Vec::new()),
        Plan::Keys { attr, keys } => {
            let mut result: Option<Vec<u64>> = None;
            for key in keys {
                let ids = txn.index_get(attr, key).map_err(store_error)?;
                result = Some(match result {
                    None => ids,
                    Some(acc) => intersect(&acc, &ids),
                });
            }
            result
        }
        Plan::Range { attr, from, to } => Some(
            txn.index_range(attr, as_slice(from), as_slice(to))
                .map_err(store_error)?,
        ),
        Plan::And(parts) => {
            let mut result: Option<Vec<u64>> = None;
            for part in parts {
                if let Some(ids) = resolve(txn, part)? {
                    result = Some(match result {
                        None => ids,
                        Some(acc) => intersect(&acc, &ids),
                    });
                }
            }
            result
        }
        Plan::Or(parts) => {
            let mut all = Vec::new();
            for part in parts {
                match resolve(txn, part)? {
                    Some(ids) => all.extend(ids),
                    None => return Ok(None),
                }
            }
            all.sort_unstable();
            all.dedup();
            Some(all)
        }
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
