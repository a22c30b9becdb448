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
use canopy_proto::{Control, Dn, ExtendedResponse, LdapResult, ProtocolOp, ResultCode};

use crate::access::Who;
use crate::databases::Database;
use crate::ops::{self, failure_result, Prepared};
use crate::reqctl::RequestControls;
use crate::state::State;

/// OpenLDAP's result code for an unknown transaction identifier (LDAP_X_TXN_ID_INVALID).
pub const TXN_ID_INVALID: ResultCode = ResultCode::Unknown(0x4121);

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

/// The Transaction Specification control's own rules: critical, with the identifier Start
/// Transaction gave (always empty).
pub fn check_spec(control: &Control) -> Result<(), LdapError> {
    if !control.critical {
        return Err(protocol_error("txnSpec control must be marked critical"));
    }
    match control.value.as_deref() {
        None => Err(protocol_error("no transaction identifier provided")),
        Some([]) => Ok(()),
        Some(_) => Err(invalid_id()),
    }
}

/// A queued write cannot read its entry before or after (its response is sent before it runs).
pub fn check_spec_with_reads(ctl: &RequestControls) -> Result<(), LdapError> {
    let refuse = |which: &str| {
        LdapError::new(
            ResultCode::UnwillingToPerform,
            format!("{which} control: cannot perform in transaction"),
        )
    };
    if ctl.pre_read.is_some() {
        return Err(refuse("preread"));
    }
    if ctl.post_read.is_some() {
        return Err(refuse("postread"));
    }
    Ok(())
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
        let txn = slot.as_mut().ok_or_else(|| ops::error_result(invalid_id()))?;
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
async fn end(
    who: &Who,
    value: Option<&[u8]>,
    slot: &mut Option<Transaction>,
) -> ExtendedResponse {
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
        return extended(Ok((LdapResult::new(ResultCode::Success, "transaction aborted"), None)));
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
