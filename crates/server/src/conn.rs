//! One client connection: framing with limits, pipelined dispatch, abandon, a bounded response queue,
//! StartTLS and SASL security layers (the stream is taken back from the reader and writer and wrapped in
//! place).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use canopy_core::LdapError;
use canopy_proto::oid::{EXOP_CANCEL, EXOP_START_TLS, NOTICE_OF_DISCONNECTION};
use canopy_proto::{
    frame_len, BindResponse, Control, DecodeError, DecodeLimits, ExtendedResponse, FrameError,
    LdapMessage, LdapResult, ProtocolOp, RequestKind, ResultCode,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use crate::access::Who;
use crate::cancel::{Ending, Pending};
use crate::completion::{code_of, Completion};
use crate::databases::{FrontHook, Restriction};
use crate::limits;
use crate::metrics::ConnInfo;
use crate::ops::bind::Outcome;
use crate::ops::{self, encode, error_result, failure_result, update_result};
use crate::out::Out;
use crate::reqctl::RequestControls;
use crate::sasl::Exchange;
use crate::session::{Link, Peer, TlsFacts};
use crate::state::State;
use crate::transport::Transport;

/// Serves one connection until the client unbinds or disconnects, or sends something unreadable.
pub async fn serve<S>(stream: S, state: State, peer: Peer)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    serve_transport(Transport::Plain(stream), state, peer, None).await
}

/// Serves a connection whose transport may already be TLS (`ldaps://`, with the handshake's facts).
pub async fn serve_transport<S>(
    stream: Transport<S>,
    state: State,
    peer: Peer,
    tls: Option<TlsFacts>,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    // Answers written by this task itself need a plain stream (out.rs).
    let direct = matches!(stream, Transport::Plain(_));
    let (mut reader, writer) = tokio::io::split(stream);
    let mut out = Out::new(writer, direct, state.metrics.clone());
    let conn = state.metrics.open_connection(peer_label(&peer));
    if let Some(log) = &state.op_log {
        log.connection(conn.number, "ACCEPT", &conn.peer);
    }
    let mut op_number = 0u64;
    let mut txn = None;
    let pending = Pending::default();
    let max_pending = state.config.limits.max_pending_per_connection.max(1);
    let permits = Arc::new(Semaphore::new(max_pending));
    let idle = limits::idle_timeout(&state.config.limits);
    let decode_limits = DecodeLimits {
        max_filter_depth: state.config.limits.max_filter_depth,
    };
    let mut link = Link::new(peer.clone());
    link.tls = tls;
    let mut who = Who {
        link: link.clone(),
        ..Who::anonymous()
    };
    let mut sasl: Option<Exchange> = None;
    // `who` as searches share it; None once `who` changes, until the next search makes it again.
    let mut shared_who: Option<Arc<Who>> = None;
    // Made at the connection's first search (acl/view.rs `ViewMemo`).
    let mut views: Option<Arc<crate::acl::ViewMemo>> = None;
    let sorts = Arc::new(crate::sorting::SortSessions::default());
    // Restricted by a frontend hook at the bind (pwdReset): only what the hook allows until lifted.
    let restricted = Arc::new(AtomicBool::new(false));
    let mut restricted_by: Option<Arc<dyn FrontHook>> = None;
    // Requests are decoded from the buffer in place; one that fits its small array needs no heap
    // buffer, and a heap buffer is released once every request in it is taken (limits::ReadBuf).
    let mut buf = limits::ReadBuf::default();
    let mut start = 0usize;

    // Made once: a new subscription per read cost as much as a tenth of an exact-uid search.
    let closed = state.connections.closed();
    tokio::pin!(closed);

    'connection: loop {
        loop {
            let max = if who.ndn.is_some() {
                state.config.limits.max_pdu_bound
            } else {
                state.config.limits.max_pdu_anonymous
            };
            let available = buf.data().get(start..).unwrap_or(&[]);
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
                    disconnect(&out, &reason).await;
                    break 'connection;
                }
            };
            // Decoded in place: the message owns its values, so nothing is copied out of the buffer first.
            let frame = available.get(..len).unwrap_or(&[]);
            start += len;
            let message = match LdapMessage::decode(frame, &decode_limits) {
                Ok(message) => message,
                Err(DecodeError {
                    message_id: Some(id),
                    answer: Some(answer),
                    reason,
                }) => {
                    // Sound BER with a value the protocol leaves undefined: answer it, keep the connection.
                    let result = LdapResult::new(answer.code, reason);
                    out.send(encode(id, response_for(answer.request, result), Vec::new()))
                        .await;
                    continue;
                }
                Err(error) => {
                    tracing::info!(?peer, %error, "undecodable request, closing connection");
                    disconnect(&out, &error.to_string()).await;
                    break 'connection;
                }
            };
            let mut session = Session {
                who: &mut who,
                shared_who: &mut shared_who,
                views: &mut views,
                sorts: &sorts,
                sasl: &mut sasl,
                link: &link,
                restricted: &restricted,
                restricted_by: &mut restricted_by,
                conn: &conn,
                op_number: &mut op_number,
                txn: &mut txn,
            };
            // Boxed: the operation's future lives only while it is dispatched, and an idle connection's
            // task stays small instead of reserving room for the largest operation's state.
            match Box::pin(dispatch(
                message,
                &state,
                &mut session,
                &out,
                &pending,
                &permits,
            ))
            .await
            {
                Flow::Continue => {}
                Flow::Close => break 'connection,
                Flow::StartTls {
                    id,
                    has_value,
                    completion,
                } => {
                    let outstanding = permits.available_permits()
                        < state.config.limits.max_pending_per_connection.max(1)
                        || start < buf.data().len();
                    let check = start_tls_check(&state, &link, has_value, outstanding);
                    out.send(start_tls_response(id, &check)).await;
                    if let Some(c) = completion {
                        let code = match &check {
                            Ok(()) => ResultCode::Success,
                            Err(e) => e.code,
                        };
                        c.done(Some(code), 0, 0);
                    }
                    if check.is_err() {
                        continue;
                    }
                    // Nothing is outstanding: when the upgrade fails there is nothing left to cancel.
                    let Some((r, w, facts)) = Box::pin(upgrade(&state, &peer, reader, out)).await
                    else {
                        return;
                    };
                    (reader, out) = (r, w);
                    link.tls = Some(facts);
                    who.link = link.clone();
                    shared_who = None;
                }
                Flow::SaslLayer(layer) => {
                    // Bytes after the bind request already belong to the layer.
                    let early = buf.data().get(start..).unwrap_or(&[]).to_vec();
                    buf.take(buf.data().len());
                    start = 0;
                    let ssf = layer.ssf;
                    let Some((r, w)) = Box::pin(install_layer(reader, out, layer, early)).await
                    else {
                        return;
                    };
                    (reader, out) = (r, w);
                    link.sasl_ssf = ssf;
                    who.link = link.clone();
                    shared_who = None;
                }
            }
        }
        // The whole requests are taken; an emptied heap buffer is given back (an idle connection
        // holds none).
        buf.take(start);
        start = 0;
        let busy = || permits.available_permits() < max_pending;
        // Reading is cancel safe; on shutdown the requests already received still run to their answer.
        let read = tokio::select! {
            read = limits::read_or_idle(&mut reader, &mut buf, idle, busy) => read,
            () = &mut closed => {
                tracing::debug!(?peer, "server shutting down, closing connection");
                break;
            }
        };
        match read {
            limits::Read::Data => {}
            limits::Read::Closed => break,
            limits::Read::Idle => {
                tracing::info!(?peer, "idle timeout, closing connection");
                out.send(limits::notice(ResultCode::Unavailable, "idle timeout"))
                    .await;
                break;
            }
        }
    }
    pending.stop_all();
    out.finish().await;
    state.metrics.close_connection(conn.number);
    if let Some(log) = &state.op_log {
        log.connection(conn.number, "closed", &conn.peer);
    }
}

/// The permit a search that outlives its dispatch holds: the one already taken, or a new one.
async fn take_permit(
    held: Option<tokio::sync::OwnedSemaphorePermit>,
    permits: &Arc<Semaphore>,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    match held {
        Some(permit) => Some(permit),
        None => permits.clone().acquire_owned().await.ok(),
    }
}

/// The abandon flag of inline search attempts: never registered, so never set (an inline search has
/// answered before its connection reads the next request).
fn never_abandoned() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    Arc::clone(FLAG.get_or_init(|| Arc::new(AtomicBool::new(false))))
}

/// A peer as slapd's monitor and logs show it.
fn peer_label(peer: &Peer) -> String {
    match peer {
        Peer::Tcp(addr) => format!("IP={addr}"),
        Peer::Unix { uid, gid } => format!("PATH=ldapi uid={uid} gid={gid}"),
    }
}

enum Flow {
    Continue,
    Close,
    /// A StartTLS request: the connection loop answers it, since it owns the stream.
    StartTls {
        id: i32,
        has_value: bool,
        completion: Option<Completion>,
    },
    /// A bind negotiated a SASL security layer: the connection loop installs it, as it owns the stream.
    SaslLayer(crate::sasl::gssapi::Layer),
}

type Half<S> = tokio::io::ReadHalf<Transport<S>>;
type OutOf<S> = Out<tokio::io::WriteHalf<Transport<S>>>;

/// After a bind that negotiated a SASL security layer, once its response is written in clear: the
/// stream is taken back and wrapped, with the bytes already read (`early`) as the layer's first input.
async fn install_layer<S>(
    reader: Half<S>,
    out: OutOf<S>,
    layer: crate::sasl::gssapi::Layer,
    early: Vec<u8>,
) -> Option<(Half<S>, OutOf<S>)>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (write_half, handed) = out.hand_over().await?;
    let stream = reader.unsplit(write_half);
    let layered = crate::sasl::layer::SaslStream::new(stream, layer, early);
    let (r, w) = tokio::io::split(Transport::Sasl(Box::new(layered)));
    Some((r, handed.resume(w)))
}

/// After a successful StartTLS response: the writer sends it in clear and hands its half back, the stream
/// is put together, the handshake runs, and the TLS stream is split again. None closes the connection.
async fn upgrade<S>(
    state: &State,
    peer: &Peer,
    reader: Half<S>,
    out: OutOf<S>,
) -> Option<(Half<S>, OutOf<S>, TlsFacts)>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (write_half, handed) = out.hand_over().await?;
    let Transport::Plain(plain) = reader.unsplit(write_half) else {
        return None;
    };
    let tls = state.tls.clone()?;
    match tls.accept(plain).await {
        Ok((stream, facts)) => {
            state.metrics.tls_handshakes.fetch_add(1, Ordering::Relaxed);
            let (r, w) = tokio::io::split(Transport::Tls(Box::new(stream)));
            Some((r, handed.resume(w), facts))
        }
        Err(error) => {
            state
                .metrics
                .tls_handshake_failures
                .fetch_add(1, Ordering::Relaxed);
            tracing::info!(?peer, %error, "StartTLS handshake failed");
            None
        }
    }
}

/// RFC 4511 §4.14.1: StartTLS is refused, with slapd's codes and texts, when it carries a value, when TLS
/// is already on, while other operations are outstanding, and when no certificate is available.
fn start_tls_check(
    state: &State,
    link: &Link,
    has_value: bool,
    outstanding: bool,
) -> Result<(), LdapError> {
    if has_value {
        return Err(LdapError::new(
            ResultCode::ProtocolError,
            "no request data expected",
        ));
    }
    if link.tls.is_some() {
        return Err(LdapError::new(
            ResultCode::OperationsError,
            "TLS already started",
        ));
    }
    if link.sasl_ssf > 0 {
        return Err(LdapError::new(
            ResultCode::OperationsError,
            "SASL security layer already installed",
        ));
    }
    if outstanding {
        return Err(LdapError::new(
            ResultCode::OperationsError,
            "cannot start TLS when operations are outstanding",
        ));
    }
    if state.tls.is_none() {
        return Err(LdapError::new(
            ResultCode::Unavailable,
            "Could not initialize TLS",
        ));
    }
    Ok(())
}

/// The StartTLS response. RFC 4511 §4.14.2 makes the responseName optional; slapd leaves it out.
fn start_tls_response(id: i32, check: &Result<(), LdapError>) -> Vec<u8> {
    let result = match check {
        Ok(()) => LdapResult::success(),
        Err(e) => error_result(e.clone()),
    };
    let response = ExtendedResponse {
        result,
        name: None,
        value: None,
    };
    encode(id, ProtocolOp::ExtendedResponse(response), Vec::new())
}

/// RFC 4511 §4.4.1 Notice of Disconnection: an unsolicited ExtendedResponse with message ID 0.
async fn disconnect<W: AsyncWrite + Send + Unpin + 'static>(out: &Out<W>, reason: &str) {
    let notice = ExtendedResponse {
        result: LdapResult::new(ResultCode::ProtocolError, reason),
        name: Some(NOTICE_OF_DISCONNECTION.to_string()),
        value: None,
    };
    out.send(encode(0, ProtocolOp::ExtendedResponse(notice), Vec::new()))
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
    /// `who` shared with the searches that run under it; cleared when `who` changes.
    shared_who: &'a mut Option<Arc<Who>>,
    /// The access decisions the connection's searches share, once it has searched.
    views: &'a mut Option<Arc<crate::acl::ViewMemo>>,
    /// The sorted lists the connection keeps open (`sorting.rs`).
    sorts: &'a Arc<crate::sorting::SortSessions>,
    /// The SASL exchange in progress (after a saslBindInProgress answer).
    sasl: &'a mut Option<Exchange>,
    link: &'a Link,
    /// A frontend hook restricted the session at its bind (pwdReset) and the restriction holds: a
    /// request the hook allows (`Restriction::Lifts`) clears the flag once it succeeds.
    restricted: &'a Arc<AtomicBool>,
    /// The hook that restricted the session.
    restricted_by: &'a mut Option<Arc<dyn FrontHook>>,
    /// The connection's record in the monitor and the number of the next operation.
    conn: &'a Arc<ConnInfo>,
    op_number: &'a mut u64,
    /// The RFC 5805 transaction open on the connection.
    txn: &'a mut Option<crate::txn::Transaction>,
}

async fn dispatch<W: AsyncWrite + Send + Unpin + 'static>(
    message: LdapMessage,
    state: &State,
    session: &mut Session<'_>,
    out: &Out<W>,
    pending: &Pending,
    permits: &Arc<Semaphore>,
) -> Flow {
    // One snapshot of the configuration for the whole operation (state.rs).
    let current = state.current();
    let state = &current;
    let id = message.message_id;
    let link = session.link;
    let op_number = *session.op_number;
    *session.op_number += 1;
    let completion =
        Completion::start(state, session.conn, op_number, &message.op, &session.who.dn);
    let finish = |completion: Option<Completion>, code: Option<ResultCode>| {
        if let Some(c) = completion {
            c.done(code, 0, 0);
        }
    };
    if session.sasl.is_some() && !matches!(message.op, ProtocolOp::BindRequest(_)) {
        // slapd refuses other operations during a SASL exchange; we also abandon the exchange, so the
        // connection is anonymous again (RFC 4513 §5.2.1.2 leaves it to the server).
        *session.sasl = None;
        if let Some(op) = error_response(
            &message.op,
            LdapError::new(ResultCode::OperationsError, "SASL bind in progress"),
        ) {
            out.send(encode(id, op, Vec::new())).await;
            finish(completion, Some(ResultCode::OperationsError));
            return Flow::Continue;
        }
    }
    let who = &mut *session.who;
    let ctl = match kind_of(&message.op) {
        Some(kind) => {
            let limits = DecodeLimits {
                max_filter_depth: state.config.limits.max_filter_depth,
            };
            match RequestControls::parse(&message.controls, kind, &limits).and_then(|ctl| {
                state
                    .databases
                    .require_hooks(&message.controls)
                    .map(|()| ctl)
            }) {
                Ok(ctl) => ctl,
                Err(e) => {
                    let code = e.code;
                    if let Some(op) = error_response(&message.op, e) {
                        out.send(encode(id, op, Vec::new())).await;
                    }
                    finish(completion, Some(code));
                    return Flow::Continue;
                }
            }
        }
        None => RequestControls::default(),
    };
    // RFC 4370: the operation runs as the identity the proxied authorization control names.
    let proxied = match ctl
        .proxy_authz
        .as_ref()
        .map(|proxy| crate::sasl::proxy::assume(state, who, &message.op, proxy))
    {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(as_who))) => Some(as_who),
        Some(Err(e)) => {
            let code = e.code;
            if let Some(op) = error_response(&message.op, e) {
                out.send(encode(id, op, Vec::new())).await;
            }
            finish(completion, Some(code));
            return Flow::Continue;
        }
    };
    // A session a frontend hook restricted at its bind (pwdReset) asks that hook first.
    let mut lifts_restriction = false;
    let restricted_by = session
        .restricted_by
        .as_ref()
        .filter(|_| session.restricted.load(Ordering::Relaxed));
    if let Some(hook) = restricted_by {
        match hook.restriction(&message.op, who, &state.databases, ctl.password_policy) {
            Restriction::Allowed => {}
            Restriction::Lifts => lifts_restriction = true,
            Restriction::Refused(error, controls) => {
                if let Some(op) = error_response(&message.op, error) {
                    out.send(encode(id, op, controls)).await;
                }
                return Flow::Continue;
            }
        }
    }
    // A frontend hook may answer in the database's place (slapd's retcode overlay), after a wait.
    if let Some(answer) = state
        .databases
        .answer(&message.op, state.config.referral.as_deref())
    {
        match (answer.result, kind_of(&message.op)) {
            (Some(result), Some(kind)) => {
                let code = result.code;
                let tx = out.responses().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(answer.delay).await;
                    let _ = tx
                        .send(encode(id, response_for(kind, result), Vec::new()))
                        .await;
                    finish(completion, Some(code));
                });
                return Flow::Continue;
            }
            _ => tokio::time::sleep(answer.delay).await,
        }
    }
    // A transaction's requests are answered here, in order with the requests around them.
    if crate::txn::handles(&message.op, &ctl) {
        // A write with proxied authorization queues as the proxied identity.
        let response = Box::pin(crate::txn::handle(
            state,
            proxied.as_ref().unwrap_or(who),
            message.op,
            &ctl,
            id,
            session.txn,
        ))
        .await;
        let code = code_of(&response);
        out.send(encode(id, response, Vec::new())).await;
        finish(completion, code);
        return Flow::Continue;
    }
    match message.op {
        ProtocolOp::BindRequest(req) => {
            // Binds run in order: later requests on this connection see the new identity. During a
            // bind, and after a failed one, the connection is anonymous (RFC 4511 §4.2.1).
            *session.shared_who = None;
            *who = Who {
                link: link.clone(),
                ..Who::anonymous()
            };
            let exchange = session.sasl.take();
            session.restricted.store(false, Ordering::Relaxed);
            *session.restricted_by = None;
            let mut policy = ops::bind::PolicyOutcome::default();
            // Boxed, as the other rare large futures here: `dispatch`'s own future, moved into a box
            // for every request, stays small.
            let outcome = Box::pin(ops::bind::bind(
                state,
                req,
                link,
                exchange,
                ctl.password_policy,
                &mut policy,
            ))
            .await;
            if let (true, Some(hook)) = (outcome.is_ok(), policy.restricted_by.take()) {
                *session.restricted_by = Some(hook);
                session.restricted.store(true, Ordering::Relaxed);
            }
            let mut layer = None;
            let (result, server_sasl_creds) = match outcome {
                Ok(Outcome::Done(new, creds)) => {
                    *who = new;
                    (LdapResult::success(), creds)
                }
                Ok(Outcome::Secured(new, secured)) => {
                    *who = new;
                    layer = Some(secured);
                    (LdapResult::success(), None)
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
            let code = result.code;
            let response = BindResponse {
                result,
                server_sasl_creds,
            };
            out.send(encode(
                id,
                ProtocolOp::BindResponse(response),
                policy.controls,
            ))
            .await;
            session.conn.set_authz_dn(&who.dn);
            finish(completion, Some(code));
            layer.map_or(Flow::Continue, Flow::SaslLayer)
        }
        ProtocolOp::UnbindRequest => {
            finish(completion, None);
            Flow::Close
        }
        ProtocolOp::ExtendedRequest(req) if req.name == EXOP_START_TLS => Flow::StartTls {
            id,
            has_value: req.value.is_some(),
            completion,
        },
        ProtocolOp::AbandonRequest(target) => {
            pending.abandon(target);
            finish(completion, None);
            Flow::Continue
        }
        ProtocolOp::ExtendedRequest(req) if req.name == EXOP_CANCEL => {
            match crate::ctlvalue::cancel_id(req.value.as_deref()) {
                Ok(target) => pending.cancel(id, target, out.responses().clone(), completion),
                Err(e) => {
                    let code = e.code;
                    if let Some(op) = error_response(&ProtocolOp::ExtendedRequest(req), e) {
                        out.send(encode(id, op, Vec::new())).await;
                    }
                    finish(completion, Some(code));
                }
            }
            Flow::Continue
        }
        ProtocolOp::SearchRequest(req) => {
            // While a permit is free, an inline attempt takes none: it ends before this task reads the
            // next request, and only this task takes permits (the others give theirs back), so holding
            // one could change nothing. A search that outlives this call takes one below, at once.
            let held = if permits.available_permits() > 0 {
                None
            } else {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return Flow::Close;
                };
                Some(permit)
            };
            if state.read_needs_preparing(&req.base) {
                state.prepare_read(&req.base).await;
            }
            // A sync search (RFC 4533) holds a permit until it ends: taken before its job is made.
            let (held, sync_permit) = if ctl.sync.is_some() {
                let Some(permit) = take_permit(held, permits).await else {
                    return Flow::Close;
                };
                (None, Some(permit))
            } else {
                (held, None)
            };
            // Only a search that outlives this call can be abandoned (the connection's task takes the
            // next request, an abandon among them, once an inline search has answered): it alone gets a
            // flag of its own, registered; an inline attempt shares one that nothing ever sets.
            let cancel = never_abandoned();
            // A proxied search shares neither the connection's identity nor its access decisions.
            let (job_who, job_views) = match proxied {
                Some(as_who) => (Arc::new(as_who), Default::default()),
                None => (
                    Arc::clone(
                        session
                            .shared_who
                            .get_or_insert_with(|| Arc::new(who.clone())),
                    ),
                    Arc::clone(session.views.get_or_insert_with(Default::default)),
                ),
            };
            // The job lives in this block: an inline answer is sent after it is gone, and a job that
            // must wait is boxed, so that `dispatch`'s future (boxed for every request) keeps no job
            // across a wait.
            let attempt = {
                let mut job = ops::search::SearchJob {
                    state: state.clone(),
                    who: job_who,
                    views: job_views,
                    sorts: Arc::clone(session.sorts),
                    message_id: id,
                    req,
                    paged: ctl.paged.clone(),
                    ctl,
                    cancel,
                    tx: None,
                    tally: Default::default(),
                };
                // A sync search runs on a blocking thread of its own until it ends, is abandoned or
                // its connection closes (ops/sync.rs).
                if let (Some(permit), Some(request)) = (sync_permit, job.ctl.sync.clone()) {
                    job.tx = Some(out.responses().clone());
                    run_blocking(job, permit, pending, completion, move |job| {
                        ops::sync::run(job, request)
                    });
                    return Flow::Continue;
                }
                match ops::search::try_inline(&job) {
                    Some(answer) => Ok(answer),
                    None => Err(Box::new(job)),
                }
            };
            let job = match attempt {
                Ok((responses, outcome)) => {
                    out.send(responses).await;
                    drop(held);
                    finish_search(state, completion, outcome);
                    return Flow::Continue;
                }
                Err(job) => job,
            };
            let Some(permit) = take_permit(held, permits).await else {
                return Flow::Close;
            };
            let mut job = *job;
            job.tx = Some(out.responses().clone());
            run_blocking(job, permit, pending, completion, ops::search::run);
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
            let who = proxied.unwrap_or_else(|| who.clone());
            let tx = out.responses().clone();
            let restricted = session.restricted.clone();
            // Outstanding for Cancel, which gets tooLate once it has answered: it is not stopped.
            let registration = pending.register(id, false);
            let pending = pending.clone();
            tokio::spawn(async move {
                if let ProtocolOp::CompareRequest(req) = &op {
                    if state.read_needs_preparing(&req.dn) {
                        state.prepare_read(&req.dn).await;
                    }
                }
                // On the heap: the operations' futures together are tens of kilobytes, which the
                // task would otherwise copy on each change of its stage (a fifth of a modify's
                // instructions went to those copies).
                let (response, mut controls) = Box::pin(run_update(&state, &who, op, &ctl)).await;
                let code = code_of(&response);
                if lifts_restriction && succeeded(&response) {
                    restricted.store(false, Ordering::Relaxed);
                }
                controls.extend(ctl.policy_sink.take());
                let _ = tx.send(encode(id, response, controls)).await;
                if let Some(registration) = registration {
                    pending.finish(registration, Ending::Answered);
                }
                drop(permit);
                finish(completion, code);
            });
            Flow::Continue
        }
        // Responses are never requests: a client sending one is confused beyond repair.
        _ => {
            disconnect(out, "unexpected protocol operation").await;
            Flow::Close
        }
    }
}

/// Runs a search that outlives the request's dispatch on a blocking thread: with a cancel flag of its
/// own, registered under its message ID so that an abandon finds it, and `permit` held until it ends.
fn run_blocking(
    mut job: ops::search::SearchJob,
    permit: tokio::sync::OwnedSemaphorePermit,
    pending: &Pending,
    completion: Option<Completion>,
    run: impl FnOnce(ops::search::SearchJob) -> ops::search::Outcome + Send + 'static,
) {
    let id = job.message_id;
    job.cancel = Arc::new(AtomicBool::new(false));
    let registration = pending.register_search(id, Arc::clone(&job.cancel));
    let pending = pending.clone();
    tokio::task::spawn_blocking(move || {
        let state = job.state.clone();
        let tx = job.tx.clone();
        let mut outcome = run(job);
        let ending = match outcome.code {
            Some(_) => Ending::Answered,
            None => Ending::Stopped,
        };
        // A search a Cancel stopped answers `canceled`, queued before the Cancel's own answer,
        // which `finish` releases.
        if !matches!(ending, Ending::Answered)
            && pending.canceling(&registration)
            && tx
                .as_ref()
                .is_some_and(|tx| tx.blocking_send(crate::cancel::canceled_search(id)).is_ok())
        {
            outcome.code = Some(ResultCode::Canceled);
        }
        pending.finish(registration, ending);
        finish_search(&state, completion, outcome);
        drop(permit);
    });
}

fn finish_search(state: &State, completion: Option<Completion>, outcome: ops::search::Outcome) {
    if outcome.unindexed {
        state
            .metrics
            .unindexed_searches
            .fetch_add(1, Ordering::Relaxed);
    }
    if let Some(c) = completion {
        c.done(outcome.code, outcome.entries, outcome.references);
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
            let response = ops::extended::extended(state, who, req, ctl).await;
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

fn succeeded(response: &ProtocolOp) -> bool {
    let result = match response {
        ProtocolOp::ModifyResponse(result) => result,
        ProtocolOp::ExtendedResponse(response) => &response.result,
        _ => return false,
    };
    result.code == ResultCode::Success
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
