//! An operation's bookkeeping from its decoding to its response: the counters of `metrics` (which
//! cn=Monitor and `/metrics` show) and the line of the operation log (`oplog`). The request is described for the log only
//! when a log is configured, so without one the cost is a clock read and a few atomic additions.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use canopy_proto::{BindAuth, ProtocolOp, ResultCode, SearchScope};

use crate::metrics::{ConnInfo, OpType};
use crate::oplog::Record;
use crate::state::State;

/// What the operation log says about a request, taken before the request is consumed.
struct Described {
    dn: String,
    details: Vec<(&'static str, String)>,
    authz: String,
}

/// One operation in flight. Dropping it without [`Completion::done`] records nothing.
pub struct Completion {
    state: State,
    conn: Arc<ConnInfo>,
    op: u64,
    kind: OpType,
    started: Instant,
    described: Option<Described>,
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scope_number(scope: SearchScope) -> &'static str {
    match scope {
        SearchScope::BaseObject => "0",
        SearchScope::SingleLevel => "1",
        SearchScope::WholeSubtree => "2",
        SearchScope::SubordinateSubtree => "3",
    }
}

/// The DN and details of a request, as slapd's stats lines show them: never a credential, a value of a
/// write or an assertion value of a compare; filters as `redact` shows them.
fn describe(state: &State, op: &ProtocolOp) -> (String, Vec<(&'static str, String)>) {
    match op {
        ProtocolOp::BindRequest(req) => {
            let method = match &req.auth {
                BindAuth::Simple(_) => "SIMPLE".to_string(),
                BindAuth::Sasl { mechanism, .. } => mechanism.clone(),
            };
            (lossy(&req.name), vec![("mech", method)])
        }
        ProtocolOp::SearchRequest(req) => {
            let schema = state.databases.schema();
            let filter = crate::redact::filter_for_log(schema, &req.filter);
            (
                lossy(&req.base),
                vec![
                    ("scope", scope_number(req.scope).to_string()),
                    ("filter", filter),
                ],
            )
        }
        ProtocolOp::AddRequest(req) => (lossy(&req.dn), Vec::new()),
        ProtocolOp::DelRequest(dn) => (lossy(dn), Vec::new()),
        ProtocolOp::ModifyRequest(req) => {
            let attrs: Vec<&str> = req
                .changes
                .iter()
                .map(|c| c.modification.name.as_str())
                .collect();
            (lossy(&req.dn), vec![("attrs", attrs.join(","))])
        }
        ProtocolOp::ModifyDnRequest(req) => {
            let mut details = vec![("newrdn", lossy(&req.new_rdn))];
            if let Some(sup) = &req.new_superior {
                details.push(("newsup", lossy(sup)));
            }
            (lossy(&req.dn), details)
        }
        ProtocolOp::CompareRequest(req) => (lossy(&req.dn), vec![("attr", req.attr.clone())]),
        ProtocolOp::ExtendedRequest(req) => (String::new(), vec![("oid", req.name.clone())]),
        ProtocolOp::AbandonRequest(id) => (String::new(), vec![("msgid", id.to_string())]),
        _ => (String::new(), Vec::new()),
    }
}

impl Completion {
    /// Starts the bookkeeping of request number `op` on `conn`, made by `authz` (the bound DN).
    pub fn start(
        state: &State,
        conn: &Arc<ConnInfo>,
        op: u64,
        request: &ProtocolOp,
        authz: &str,
    ) -> Option<Completion> {
        let kind = OpType::of(request)?;
        state.metrics.initiated(kind);
        conn.ops_received.fetch_add(1, Ordering::Relaxed);
        let described = state.op_log.as_ref().map(|_| {
            let (dn, details) = describe(state, request);
            Described {
                dn,
                details,
                authz: authz.to_string(),
            }
        });
        Some(Completion {
            state: state.clone(),
            conn: conn.clone(),
            op,
            kind,
            started: Instant::now(),
            described,
        })
    }

    /// The operation answered with `code` (None: no response) after sending `entries` entries and
    /// `references` continuation references.
    pub fn done(self, code: Option<ResultCode>, entries: u64, references: u64) {
        let took = self.started.elapsed();
        let metrics = &self.state.metrics;
        metrics.completed(self.kind, code, took);
        if entries + references > 0 {
            metrics.search_sent(entries, references);
        }
        self.conn.ops_completed.fetch_add(1, Ordering::Relaxed);
        if let (Some(log), Some(described)) = (&self.state.op_log, &self.described) {
            log.write(&Record {
                conn: self.conn.number,
                op: self.op,
                kind: self.kind,
                dn: &described.dn,
                details: &described.details,
                code: code.map(ResultCode::code),
                entries,
                took,
                peer: &self.conn.peer,
                authz: &described.authz,
            });
        }
    }
}

/// The result code inside a response.
pub fn code_of(response: &ProtocolOp) -> Option<ResultCode> {
    Some(match response {
        ProtocolOp::BindResponse(r) => r.result.code,
        ProtocolOp::SearchResultDone(r)
        | ProtocolOp::ModifyResponse(r)
        | ProtocolOp::AddResponse(r)
        | ProtocolOp::DelResponse(r)
        | ProtocolOp::ModifyDnResponse(r)
        | ProtocolOp::CompareResponse(r) => r.code,
        ProtocolOp::ExtendedResponse(r) => r.result.code,
        _ => return None,
    })
}
