//! RFC 5805 transactions, answered as slapd 2.5 on back-mdb answers them: one transaction per
//! connection, named by an empty identifier; a write carrying the Transaction Specification control
//! passes the frontend's checks, is queued and answered success; End Transaction runs the queued
//! writes in order in one write transaction of their database, all or none, and names the message
//! ID of the write that failed.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::{Action, Directory, Guard, InWrite};
use canopy_proto::oid::{EXOP_TXN_END, EXOP_TXN_START};
use canopy_proto::txn::{encode_txn_end_failed, TxnEndRequest};
use canopy_proto::{Dn, ExtendedResponse, LdapResult, ProtocolOp, ResultCode};

use crate::access::Who;
use crate::databases::Database;
use crate::ops::{self, failure_result, Prepared};
use crate::reqctl::RequestControls;
use crate::state::State;

pub use canopy_proto::txn::TXN_ID_INVALID;

/// The connection's open transaction, from its Start Transaction to its end.
#[derive(Default)]
pub struct Transaction {
    /// The database of the first queued write: a transaction stays in one.
    dir: Option<Database>,
    queued: Vec<Queued>,
}

struct Queued {
    message_id: i32,
    write: Prepared,
}

fn invalid_id() -> LdapError {
    LdapError::new(TXN_ID_INVALID, "invalid transaction identifier")
}

fn protocol_error(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProtocolError, text)
}

/// Whether the connection's task answers `op` itself, in order with the requests around it: the
/// transaction's extended operations and the writes queued in a transaction.
pub fn handles(op: &ProtocolOp, ctl: &RequestControls) -> bool {
    match op {
        ProtocolOp::ExtendedRequest(req) => req.name == EXOP_TXN_START || req.name == EXOP_TXN_END,
        _ => ctl.txn,
    }
}

/// Answers a request [`handles`] took.
pub async fn handle(
    state: &State,
    who: &Who,
    op: ProtocolOp,
    ctl: &RequestControls,
    message_id: i32,
    slot: &mut Option<Transaction>,
) -> ProtocolOp {
    match op {
        ProtocolOp::ExtendedRequest(req) if req.name == EXOP_TXN_START => {
            ProtocolOp::ExtendedResponse(start(who, req.value.as_deref(), slot))
        }
        ProtocolOp::ExtendedRequest(req) => {
            ProtocolOp::ExtendedResponse(end(who, req.value.as_deref(), slot).await)
        }
        op => queue(state, who, op, ctl, message_id, slot).await,
    }
}

fn extended(outcome: Result<(LdapResult, Option<Vec<u8>>), LdapError>) -> ExtendedResponse {
    let (result, value) = match outcome {
        Ok(answer) => answer,
        Err(e) => (ops::error_result(e), None),
    };
    ExtendedResponse {
        result,
        name: None,
        value,
    }
}

/// RFC 5805 §2.2 Start Transaction: an update operation (authentication required), one at a time.
fn start(who: &Who, value: Option<&[u8]>, slot: &mut Option<Transaction>) -> ExtendedResponse {
    extended((|| {
        if value.is_some() {
            return Err(protocol_error("no request data expected"));
        }
        who.require_authenticated()?;
        if slot.is_some() {
            return Err(LdapError::new(ResultCode::Busy, "Too many transactions"));
        }
        *slot = Some(Transaction::default());
        Ok((LdapResult::success(), Some(Vec::new())))
    })())
}

/// Queues a write carrying the control, once the frontend's checks pass.
async fn queue(
    state: &State,
    who: &Who,
    op: ProtocolOp,
    ctl: &RequestControls,
    message_id: i32,
    slot: &mut Option<Transaction>,
) -> ProtocolOp {
    let (respond, prepared): (fn(LdapResult) -> ProtocolOp, _) = match op {
        ProtocolOp::AddRequest(req) => (
            ProtocolOp::AddResponse,
            ops::add::prepare(state, who, req, ctl, true).await,
        ),
        ProtocolOp::DelRequest(dn) => (
            ProtocolOp::DelResponse,
            ops::delete::prepare(state, who, &dn, ctl),
        ),
        ProtocolOp::ModifyRequest(req) => (
            ProtocolOp::ModifyResponse,
            ops::modify::prepare(state, who, req, ctl).await,
        ),
        ProtocolOp::ModifyDnRequest(req) => (
            ProtocolOp::ModifyDnResponse,
            ops::modify_dn::prepare(state, who, req, ctl),
        ),
        // The control applies to the four writes only (reqctl.rs).
        other => {
            let result = LdapResult::new(ResultCode::ProtocolError, "unexpected operation");
            return match other {
                ProtocolOp::CompareRequest(_) => ProtocolOp::CompareResponse(result),
                _ => ProtocolOp::ExtendedResponse(ExtendedResponse {
                    result,
                    name: None,
                    value: None,
                }),
            };
        }
    };
    let outcome = prepared.map_err(failure_result).and_then(|write| {
        let txn = slot
            .as_mut()
            .ok_or_else(|| ops::error_result(invalid_id()))?;
        enqueue(state, txn, message_id, write).map_err(ops::error_result)
    });
    respond(outcome.err().unwrap_or_else(LdapResult::success))
}

fn enqueue(
    state: &State,
    txn: &mut Transaction,
    message_id: i32,
    write: Prepared,
) -> Result<(), LdapError> {
    // Only Canopy's own store runs several writes in one transaction.
    if state.backend(&write.dir).is_some() {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "backend does not support transactions",
        ));
    }
    match &txn.dir {
        Some(dir) if dir.suffix() != write.dir.suffix() => {
            return Err(LdapError::new(
                ResultCode::AffectsMultipleDsas,
                "transaction cannot span multiple database contexts",
            ));
        }
        Some(_) => {}
        None => txn.dir = Some(write.dir.clone()),
    }
    txn.queued.push(Queued { message_id, write });
    Ok(())
}

/// RFC 5805 §2.3 End Transaction: commit or abort the connection's transaction.
async fn end(who: &Who, value: Option<&[u8]>, slot: &mut Option<Transaction>) -> ExtendedResponse {
    let request = (|| {
        let value = value.ok_or_else(|| protocol_error("request data expected"))?;
        if value.is_empty() {
            return Err(protocol_error("empty request data"));
        }
        who.require_authenticated()?;
        let request = TxnEndRequest::decode(value)
            .map_err(|_| protocol_error("request data decoding error"))?;
        if !request.identifier.is_empty() {
            return Err(invalid_id());
        }
        let txn = slot.take().ok_or_else(invalid_id)?;
        Ok((request.commit, txn))
    })();
    let (commit, txn) = match request {
        Ok(found) => found,
        Err(e) => return extended(Err(e)),
    };
    if !commit {
        return extended(Ok((
            LdapResult::new(ResultCode::Success, "transaction aborted"),
            None,
        )));
    }
    let Some(dir) = txn.dir else {
        return extended(Err(LdapError::new(
            ResultCode::OperationsError,
            "no updates to commit",
        )));
    };
    let ids: Vec<i32> = txn.queued.iter().map(|q| q.message_id).collect();
    let writes = txn
        .queued
        .into_iter()
        .map(|q| (q.write.op, q.write.who, q.write.ctl))
        .collect();
    let deferred = |inner: Arc<dyn Guard>| -> Arc<dyn Guard> { Arc::new(Deferred { inner }) };
    match dir.update_all(writes, deferred).await {
        Ok(()) => extended(Ok((LdapResult::success(), None))),
        Err((index, error)) => {
            // slapd names the failed update by its message ID, with its code only.
            let code = failure_result(error).code;
            let value = index
                .and_then(|i| ids.get(i))
                .map(|id| encode_txn_end_failed(*id));
            extended(Ok((LdapResult::new(code, ""), value)))
        }
    }
}

/// The guard of a queued write: its own, and for an add the schema check the frontend left to the
/// write (slapd's back-mdb checks a queued entry when the transaction ends).
struct Deferred {
    inner: Arc<dyn Guard>,
}

impl Guard for Deferred {
    fn requester(&self) -> &str {
        self.inner.requester()
    }

    fn authorize(
        &self,
        dir: &Directory,
        txn: InWrite<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError> {
        self.inner.authorize(dir, txn, action)
    }

    fn manage_dsa_it(&self) -> bool {
        self.inner.manage_dsa_it()
    }

    fn before_change(
        &self,
        dir: &Directory,
        txn: InWrite<'_>,
        id: Option<u64>,
        entry: &canopy_core::Entry,
    ) -> Result<(), LdapError> {
        if id.is_none() {
            canopy_core::check::check_entry(dir.schema(), entry)?;
        }
        self.inner.before_change(dir, txn, id, entry)
    }

    fn after_change(&self, dir: &Directory, txn: InWrite<'_>, id: u64, dn: &Dn) {
        self.inner.after_change(dir, txn, id, dn)
    }

    fn authorizes_without_values(&self) -> bool {
        self.inner.authorizes_without_values()
    }

    fn server_internal(&self) -> bool {
        self.inner.server_internal()
    }

    fn relax(&self) -> bool {
        self.inner.relax()
    }

    fn conceal(&self, dir: &Directory, txn: InWrite<'_>, error: LdapError) -> LdapError {
        self.inner.conceal(dir, txn, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::oid::{CONTROL_POST_READ, CONTROL_PRE_READ, CONTROL_TXN_SPEC};
    use canopy_proto::{Control, DecodeLimits, ReadEntryRequest, RequestKind};

    fn spec(critical: bool, value: Option<&[u8]>) -> Control {
        Control {
            oid: CONTROL_TXN_SPEC.into(),
            critical,
            value: value.map(<[u8]>::to_vec),
        }
    }

    /// slapd's answers to the control, alone and beside the read controls, by operation.
    #[test]
    fn specification_control() {
        let read = ReadEntryRequest {
            attributes: vec!["cn".into()],
        }
        .encode();
        let reading = |oid: &str| Control {
            oid: oid.into(),
            critical: true,
            value: Some(read.clone()),
        };
        use RequestKind::*;
        let cases: Vec<(Vec<Control>, RequestKind, Option<ResultCode>)> = vec![
            (vec![spec(true, Some(b""))], Modify, None),
            (vec![spec(true, Some(b""))], Add, None),
            (vec![spec(true, Some(b""))], Delete, None),
            (vec![spec(true, Some(b""))], ModifyDn, None),
            (
                vec![spec(true, Some(b""))],
                Search,
                Some(ResultCode::UnavailableCriticalExtension),
            ),
            (
                vec![spec(true, Some(b""))],
                Compare,
                Some(ResultCode::UnavailableCriticalExtension),
            ),
            (vec![spec(false, Some(b""))], Search, None),
            (
                vec![spec(false, Some(b""))],
                Modify,
                Some(ResultCode::ProtocolError),
            ),
            (
                vec![spec(true, None)],
                Modify,
                Some(ResultCode::ProtocolError),
            ),
            (vec![spec(true, Some(b"x"))], Modify, Some(TXN_ID_INVALID)),
            (
                vec![spec(true, Some(b"")), reading(CONTROL_PRE_READ)],
                Modify,
                Some(ResultCode::UnwillingToPerform),
            ),
            (
                vec![reading(CONTROL_POST_READ), spec(true, Some(b""))],
                Add,
                Some(ResultCode::UnwillingToPerform),
            ),
            (
                vec![spec(true, Some(b"")), spec(true, Some(b""))],
                Modify,
                Some(ResultCode::ProtocolError),
            ),
        ];
        for (controls, kind, expected) in cases {
            let got = RequestControls::parse(&controls, kind, &DecodeLimits::default());
            assert_eq!(
                got.as_ref().err().map(|e| e.code),
                expected,
                "{controls:?} {kind:?}"
            );
            if let Ok(ctl) = got {
                assert_eq!(ctl.txn, kind != Search, "{kind:?}");
            }
        }
        assert_eq!(TXN_ID_INVALID.code(), 16673);
    }

    #[test]
    fn start_and_end_without_a_database() {
        let root = Who {
            root: true,
            ..Who::anonymous()
        };
        let mut slot = None;
        let started = start(&root, None, &mut slot);
        assert_eq!(started.result.code, ResultCode::Success);
        assert_eq!(started.value, Some(Vec::new()));
        assert_eq!(start(&root, None, &mut slot).result.code, ResultCode::Busy);
        assert_eq!(
            start(&Who::anonymous(), None, &mut None).result.code,
            ResultCode::StrongerAuthRequired
        );
        let end_value = |commit| {
            TxnEndRequest {
                commit,
                identifier: Vec::new(),
            }
            .encode()
        };
        let ended = |value: Option<&[u8]>, slot: &mut Option<Transaction>| {
            run_to_end(end(&root, value, slot)).result
        };
        assert_eq!(ended(None, &mut slot).code, ResultCode::ProtocolError);
        assert_eq!(ended(Some(b""), &mut slot).code, ResultCode::ProtocolError);
        assert_eq!(
            ended(Some(b"\x01"), &mut slot).code,
            ResultCode::ProtocolError
        );
        assert!(
            slot.is_some(),
            "a malformed end leaves the transaction open"
        );
        let empty = ended(Some(&end_value(true)), &mut slot);
        assert_eq!(
            (empty.code, empty.message.as_str()),
            (ResultCode::OperationsError, "no updates to commit")
        );
        assert!(slot.is_none());
        assert_eq!(
            ended(Some(&end_value(true)), &mut slot).code,
            TXN_ID_INVALID
        );
        start(&root, None, &mut slot);
        let aborted = ended(Some(&end_value(false)), &mut slot);
        assert_eq!(
            (aborted.code, aborted.message.as_str()),
            (ResultCode::Success, "transaction aborted")
        );
    }

    /// Runs a future that never waits (no database is involved) to its end.
    fn run_to_end<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(future)
    }
}
