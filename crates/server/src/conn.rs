//! One client connection: framing with limits, pipelined dispatch, abandon, and a bounded response queue.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use canopy_core::LdapError;
use canopy_proto::oid::NOTICE_OF_DISCONNECTION;
use canopy_proto::{
    frame_len, BindResponse, Control, DecodeError, DecodeLimits, ExtendedResponse, FrameError,
    LdapMessage, LdapResult, ProtocolOp, RequestKind, ResultCode,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};

use crate::access::Who;
use crate::ops::bind::Outcome;
use crate::ops::{self, encode, error_result, failure_result, update_result};
use crate::reqctl::RequestControls;
use crate::sasl::Exchange;
use crate::session::{Link, Peer};
use crate::state::State;

/// Responses waiting to be written, per connection. A client that stops reading fills this queue, and then the
/// operations producing responses wait: back-pressure instead of unbounded memory.
const RESPONSE_QUEUE: usize = 64;

type Pending = Arc<Mutex<HashMap<i32, Arc<AtomicBool>>>>;

/// Serves one connection until the client unbinds or disconnects, or sends something unreadable.
pub async fn serve<S>(stream: S, state: State, peer: Peer)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, writer) = tokio::io::split(stream);
    let (tx, rx) = mpsc::channel::<Vec<u8>>(RESPONSE_QUEUE);
    let writer_task = tokio::spawn(write_responses(writer, rx));
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let permits = Arc::new(Semaphore::new(
        state.config.limits.max_pending_per_connection.max(1),
    ));
    let decode_limits = DecodeLimits {
        max_filter_depth: state.config.limits.max_filter_depth,
    };
    let link = Link::new(peer.clone());
    let mut who = Who {
        link: link.clone(),
        ..Who::anonymous()
    };
    let mut sasl: Option<Exchange> = None;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut start = 0usize;

    'connection: loop {
        loop {
            let max = if who.ndn.is_some() {
                state.config.limits.max_pdu_bound
            } else {
                state.config.limits.max_pdu_anonymous
            };
            let available = buf.get(start..).unwrap_or(&[]);
            let len = match frame_len(available, max) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(error) => {
                    let reason = match error {
                        FrameError::TooLarge { len, max } => {
                            format!("PDU of {len} bytes exceeds the limit of {max}")
                        }
                        FrameError::Malformed(what) => format!("malformed PDU: {what}"),
                    };
                    tracing::info!(?peer, %reason, "closing connection");
                    disconnect(&tx, &reason).await;
                    break 'connection;
                }
            };
            let frame = available.get(..len).unwrap_or(&[]).to_vec();
            start += len;
            let message = match LdapMessage::decode(&frame, &decode_limits) {
                Ok(message) => message,
                Err(DecodeError {
                    message_id: Some(id),
                    answer: Some(answer),
                    reason,
                }) => {
                    // Sound BER with a value the protocol leaves undefined: answer it, keep the connection.
                    let result = LdapResult::new(answer.code, reason);
                    let _ = tx
                        .send(encode(id, response_for(answer.request, result), Vec::new()))
                        .await;
                    continue;
                }
                Err(error) => {
                    tracing::info!(?peer, %error, "undecodable request, closing connection");
                    disconnect(&tx, &error.to_string()).await;
                    break 'connection;
                }
            };
            let mut session = Session {
                who: &mut who,
                sasl: &mut sasl,
                link: &link,
            };
            match dispatch(message, &state, &mut session, &tx, &pending, &permits).await {
                Flow::Continue => {}
                Flow::Close => break 'connection,
            }
        }
        if start > 0 {
            buf.drain(..start.min(buf.len()));
            start = 0;
        }
        match reader.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    for flag in pending.lock().unwrap_or_else(|e| e.into_inner()).values() {
        flag.store(true, Ordering::Relaxed);
    }
    drop(tx);
    let _ = writer_task.await;
}

enum Flow {
    Continue,
    Close,
}

async fn write_responses<W: AsyncWrite>(writer: W, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut writer = std::pin::pin!(writer);
    let mut batch = Vec::with_capacity(16 * 1024);
    while let Some(first) = rx.recv().await {
        batch.clear();
        batch.extend_from_slice(&first);
        // Coalesce whatever else is ready into one write.
        while batch.len() < 64 * 1024 {
            match rx.try_recv() {
                Ok(more) => batch.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        if writer.write_all(&batch).await.is_err() {
            return;
        }
    }
    let _ = writer.flush().await;
    let _ = writer.shutdown().await;
}

/// RFC 4511 §4.4.1 Notice of Disconnection: an unsolicited ExtendedResponse with message ID 0.
async fn disconnect(tx: &mpsc::Sender<Vec<u8>>, reason: &str) {
    let notice = ExtendedResponse {
        result: LdapResult::new(ResultCode::ProtocolError, reason),
        name: Some(NOTICE_OF_DISCONNECTION.to_string()),
        value: None,
    };
    let _ = tx
        .send(encode(0, ProtocolOp::ExtendedResponse(notice), Vec::new()))
        .await;
}

/// The kind of a request that gets a response; None for unbind, abandon and responses.
fn kind_of(op: &ProtocolOp) -> Option<RequestKind> {
    Some(match op {
        ProtocolOp::BindRequest(_) => RequestKind::Bind,
        ProtocolOp::SearchRequest(_) => RequestKind::Search,
        ProtocolOp::ModifyRequest(_) => RequestKind::Modify,
        ProtocolOp::AddRequest(_) => RequestKind::Add,
        ProtocolOp::DelRequest(_) => RequestKind::Delete,
        ProtocolOp::ModifyDnRequest(_) => RequestKind::ModifyDn,
        ProtocolOp::CompareRequest(_) => RequestKind::Compare,
        ProtocolOp::ExtendedRequest(_) => RequestKind::Extended,
        _ => return None,
    })
}

/// The per-connection bind state a request may change.
struct Session<'a> {
    who: &'a mut Who,
    /// The SASL exchange in progress (after a saslBindInProgress answer).
    sasl: &'a mut Option<Exchange>,
    link: &'a Link,
}

async fn dispatch(
    message: LdapMessage,
    state: &State,
    session: &mut Session<'_>,
    tx: &mpsc::Sender<Vec<u8>>,
    pending: &Pending,
    permits: &Arc<Semaphore>,
) -> Flow {
    let id = message.message_id;
    let link = session.link;
    if session.sasl.is_some() && !matches!(message.op, ProtocolOp::BindRequest(_)) {
        // slapd refuses other operations during a SASL exchange; we also abandon the exchange, so the
        // connection is anonymous again (RFC 4513 §5.2.1.2 leaves it to the server).
        *session.sasl = None;
        if let Some(op) = error_response(
            &message.op,
            LdapError::new(ResultCode::OperationsError, "SASL bind in progress"),
        ) {
            let _ = tx.send(encode(id, op, Vec::new())).await;
            return Flow::Continue;
        }
    }
    let who = &mut *session.who;
    let ctl = match kind_of(&message.op) {
        Some(kind) => {
            let limits = DecodeLimits {
                max_filter_depth: state.config.limits.max_filter_depth,
            };
            match RequestControls::parse(&message.controls, kind, &limits) {
                Ok(ctl) => ctl,
                Err(e) => {
                    if let Some(op) = error_response(&message.op, e) {
                        let _ = tx.send(encode(id, op, Vec::new())).await;
                    }
                    return Flow::Continue;
                }
            }
        }
        None => RequestControls::default(),
    };
    match message.op {
        ProtocolOp::BindRequest(req) => {
            // Binds run in order: later requests on this connection see the new identity. During a
            // bind, and after a failed one, the connection is anonymous (RFC 4511 §4.2.1).
            *who = Who {
                link: link.clone(),
                ..Who::anonymous()
            };
            let exchange = session.sasl.take();
            let (result, server_sasl_creds) =
                match ops::bind::bind(state, req, link, exchange).await {
                    Ok(Outcome::Done(new, creds)) => {
                        *who = new;
                        (LdapResult::success(), creds)
                    }
                    Ok(Outcome::Continue(exchange, challenge)) => {
                        *session.sasl = Some(exchange);
                        (
                            LdapResult::new(ResultCode::SaslBindInProgress, ""),
                            Some(challenge),
                        )
                    }
                    Err(e) => (error_result(e), None),
                };
            let response = BindResponse {
                result,
                server_sasl_creds,
            };
            let _ = tx
                .send(encode(id, ProtocolOp::BindResponse(response), Vec::new()))
                .await;
            Flow::Continue
        }
        ProtocolOp::UnbindRequest => Flow::Close,
        ProtocolOp::AbandonRequest(target) => {
            if let Some(flag) = pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&target)
            {
                flag.store(true, Ordering::Relaxed);
            }
            Flow::Continue
        }
        ProtocolOp::SearchRequest(req) => {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return Flow::Close;
            };
            let cancel = Arc::new(AtomicBool::new(false));
            pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, cancel.clone());
            let job = ops::search::SearchJob {
                state: state.clone(),
                who: who.clone(),
                message_id: id,
                req,
                paged: ctl.paged.clone(),
                ctl,
                cancel,
                tx: tx.clone(),
            };
            if let Some(responses) = ops::search::try_inline(&job) {
                for response in responses {
                    if tx.send(response).await.is_err() {
                        break;
                    }
                }
                pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                drop(permit);
                return Flow::Continue;
            }
            let pending = pending.clone();
            tokio::task::spawn_blocking(move || {
                ops::search::run(job);
                pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                drop(permit);
            });
            Flow::Continue
        }
        op @ (ProtocolOp::AddRequest(_)
        | ProtocolOp::DelRequest(_)
        | ProtocolOp::ModifyRequest(_)
        | ProtocolOp::ModifyDnRequest(_)
        | ProtocolOp::CompareRequest(_)
        | ProtocolOp::ExtendedRequest(_)) => {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return Flow::Close;
            };
            let state = state.clone();
            let who = who.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let (response, controls) = run_update(&state, &who, op, &ctl).await;
                let _ = tx.send(encode(id, response, controls)).await;
                drop(permit);
            });
            Flow::Continue
        }
        // Responses are never requests: a client sending one is confused beyond repair.
        _ => {
            disconnect(tx, "unexpected protocol operation").await;
            Flow::Close
        }
    }
}

/// Runs an update, compare or extended operation: its response and response controls.
async fn run_update(
    state: &State,
    who: &Who,
    op: ProtocolOp,
    ctl: &RequestControls,
) -> (ProtocolOp, Vec<Control>) {
    let (op, (result, controls)): (fn(LdapResult) -> ProtocolOp, _) = match op {
        ProtocolOp::AddRequest(req) => (
            ProtocolOp::AddResponse,
            update_result(ops::add::add(state, who, req, ctl).await),
        ),
        ProtocolOp::DelRequest(dn) => (
            ProtocolOp::DelResponse,
            update_result(ops::delete::delete(state, who, &dn, ctl).await),
        ),
        ProtocolOp::ModifyRequest(req) => (
            ProtocolOp::ModifyResponse,
            update_result(ops::modify::modify(state, who, req, ctl).await),
        ),
        ProtocolOp::ModifyDnRequest(req) => (
            ProtocolOp::ModifyDnResponse,
            update_result(ops::modify_dn::modify_dn(state, who, req, ctl).await),
        ),
        ProtocolOp::CompareRequest(req) => {
            let result = match ops::compare::compare(state, who, &req, ctl) {
                Ok(code) => LdapResult::new(code, ""),
                Err(e) => failure_result(e),
            };
            (ProtocolOp::CompareResponse, (result, Vec::new()))
        }
        ProtocolOp::ExtendedRequest(req) => {
            let response = ops::extended::extended(state, who, req).await;
            return (ProtocolOp::ExtendedResponse(response), Vec::new());
        }
        other => {
            let e = LdapError::new(ResultCode::ProtocolError, "unexpected operation");
            let response = error_response(&other, e).unwrap_or(ProtocolOp::ExtendedResponse(
                ExtendedResponse {
                    result: LdapResult::new(ResultCode::ProtocolError, "unexpected operation"),
                    name: None,
                    value: None,
                },
            ));
            return (response, Vec::new());
        }
    };
    (op(result), controls)
}

/// The response type that answers a request with an error, or None for requests that get no response.
fn error_response(op: &ProtocolOp, e: LdapError) -> Option<ProtocolOp> {
    Some(response_for(kind_of(op)?, error_result(e)))
}

fn response_for(kind: RequestKind, result: LdapResult) -> ProtocolOp {
    match kind {
        RequestKind::Bind => ProtocolOp::BindResponse(BindResponse {
            result,
            server_sasl_creds: None,
        }),
        RequestKind::Search => ProtocolOp::SearchResultDone(result),
        RequestKind::Modify => ProtocolOp::ModifyResponse(result),
        RequestKind::Add => ProtocolOp::AddResponse(result),
        RequestKind::Delete => ProtocolOp::DelResponse(result),
        RequestKind::ModifyDn => ProtocolOp::ModifyDnResponse(result),
        RequestKind::Compare => ProtocolOp::CompareResponse(result),
        RequestKind::Extended => ProtocolOp::ExtendedResponse(ExtendedResponse {
            result,
            name: None,
            value: None,
        }),
    }
}
