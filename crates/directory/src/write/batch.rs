//! Several writes in one transaction (RFC 5805's End Transaction): each runs as [`Directory::write`]
//! runs one, with a stamp of its own, and all are stored together or not at all.

use canopy_core::LdapError;

use crate::database::Directory;
use crate::error::OpError;
use crate::opattrs::Stamp;

use super::WriteRequest;

/// Why a batch of writes stored nothing: the failing write's position in the batch (None when the
/// batch as a whole failed: the writer stopped, the map could not grow) and its error.
#[derive(Debug)]
pub struct BatchError {
    pub index: Option<usize>,
    pub error: OpError,
}

impl From<LdapError> for BatchError {
    fn from(error: LdapError) -> BatchError {
        BatchError {
            index: None,
            error: error.into(),
        }
    }
}

impl Directory {
    /// Runs `requests` in order in one nested transaction on the writer thread and returns once they
    /// are durable. The first that fails undoes the ones before it: nothing of the batch is stored,
    /// and no hook's after-commit record of it is kept. Each write takes its own stamp (CSN and
    /// time), so the change feed, syncprov and accesslog see each as a change of its own.
    pub async fn write_all(&self, requests: Vec<WriteRequest>) -> Result<(), BatchError> {
        self.run_write(move |dir, txn, first| {
            for (index, request) in requests.iter().enumerate() {
                let own;
                let stamp = if index == 0 {
                    first
                } else {
                    own = Stamp::now_for(dir.server_id());
                    &own
                };
                dir.apply(txn, request.op.clone(), &*request.guard, stamp)
                    .map_err(|error| BatchError {
                        index: Some(index),
                        error,
                    })?;
            }
            Ok(())
        })
        .await
    }
}
