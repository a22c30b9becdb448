//! The database's contextCSN: the highest CSN per server ID of the changes it holds, kept in the store's
//! meta table inside the writes that raise it and shown on the suffix entry (docs/design/replication.md).

use canopy_core::LdapError;
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::sync::{Csn, CsnSet};
use canopy_proto::ResultCode;

use crate::database::Directory;
use crate::error::store_error;

/// The meta key of the contextCSN values, stored as their texts separated by `;`.
const CONTEXT_CSN: &[u8] = b"contextCSN";

impl Directory {
    /// The contextCSN of this database as `txn` sees it (empty before the first stamped write).
    pub fn context_csn(&self, txn: &impl crate::View) -> Result<CsnSet, LdapError> {
        let txn = crate::view::txn(txn);
        let Some(bytes) = txn.get_meta(CONTEXT_CSN).map_err(store_error)? else {
            return Ok(CsnSet::new());
        };
        decode(&bytes)
    }

    /// Raises the stored contextCSN by `csns` (per server ID, never lowering one) inside `txn`; true when
    /// a value changed.
    pub fn raise_context_csn(
        &self,
        txn: &mut WriteTxn<'_>,
        csns: &CsnSet,
    ) -> Result<bool, LdapError> {
        let mut have = self.context_csn(txn)?;
        let mut raised = false;
        for csn in csns.csns() {
            raised |= have.observe(csn);
        }
        if raised {
            txn.put_meta(CONTEXT_CSN, &encode(&have))
                .map_err(store_error)?;
        }
        Ok(raised)
    }
}

impl Directory {
    /// Sets the contextCSN of every server ID in `csns` to the value there, lower or higher than the
    /// held one (the other IDs keep theirs): a plain consumer's full refresh, which leaves exactly the
    /// provider's state (`ReplicaBatch::reset_context`). Whether anything changed.
    pub fn reset_context_csn(
        &self,
        txn: &mut WriteTxn<'_>,
        csns: &CsnSet,
    ) -> Result<bool, LdapError> {
        let have = self.context_csn(txn)?;
        let mut next = CsnSet::default();
        for csn in have.csns() {
            if csns.get(csn.sid()).is_none() {
                next.observe(csn);
            }
        }
        for csn in csns.csns() {
            next.observe(csn);
        }
        if next.csns() == have.csns() {
            return Ok(false);
        }
        txn.put_meta(CONTEXT_CSN, &encode(&next))
            .map_err(store_error)?;
        Ok(true)
    }
}

fn encode(set: &CsnSet) -> Vec<u8> {
    let texts: Vec<&str> = set.csns().iter().map(Csn::as_str).collect();
    texts.join(";").into_bytes()
}

fn decode(bytes: &[u8]) -> Result<CsnSet, LdapError> {
    let corrupt = || LdapError::new(ResultCode::Other, "the stored contextCSN is damaged");
    let text = std::str::from_utf8(bytes).map_err(|_| corrupt())?;
    text.split(';')
        .filter(|t| !t.is_empty())
        .map(|t| Csn::parse(t).ok_or_else(corrupt))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_round_trips() {
        let set: CsnSet = [
            Csn::new("20261125053916", 1, 0, 2),
            Csn::new("20261125053916", 5, 0, 0),
        ]
        .into_iter()
        .collect();
        assert_eq!(decode(&encode(&set)).unwrap(), set);
        assert!(decode(b"").unwrap().is_empty());
        assert!(decode(b"garbage").is_err());
    }
}
