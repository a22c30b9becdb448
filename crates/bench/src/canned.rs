//! `canopy bench canned`: the physical limit of the messaging workloads on this machine. An LDAP server with
//! no storage, built the way canopy's connection loop is (crates/server/src/conn.rs): a multi-threaded tokio
//! runtime, one task per connection that frames requests with `canopy_proto::frame_len` and decodes each
//! with `LdapMessage::decode`, which writes each answer itself when nothing is queued before it and the
//! socket takes it at once, and a writer task per connection fed through a bounded channel that writes the
//! rest (a lone response as it is, queued ones coalesced), as the server's `out.rs`. Every bind succeeds; every search is answered with
//! one fixed entry (person 0 of `canopy bench gen`, without its password, as an anonymous search sees
//! it; its attributes encoded once at start) and a success SearchResultDone. What a real server spends
//! beyond this per request is its own work: index lookup, entry read, filter test, access control.
//!
//! Kept out of crates/server on purpose: the product has no server without a database.

use std::future::poll_fn;
use std::io::BufReader;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Poll, Waker};

use anyhow::{bail, Context, Result};
use canopy_proto::{
    encode_partial_attribute, encode_search_result_entry_raw, frame_len, BindResponse,
    DecodeLimits, ExtendedResponse, Filter, LdapMessage, LdapResult, LdifReader, LdifRecord,
    ProtocolOp, ResultCode,
};
use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::gen::{person_ldif, GenParams};

/// The same depth of response queue per connection as the server's (`conn::RESPONSE_QUEUE`).
const RESPONSE_QUEUE: usize = 64;
/// The largest request accepted (the server's default for anonymous clients is 256 KiB).
const MAX_PDU: usize = 256 * 1024;
/// The first read of an idle connection and the growth of its buffer, as the server's `limits`.
const FIRST_READ: usize = 512;
const READ_GROWTH: usize = 4096;

/// `canopy bench canned`
#[derive(Debug, Args)]
pub struct CannedArgs {
    /// Address to listen on (loopback only: it answers anyone with made-up data).
    #[arg(long, default_value = "127.0.0.1:3899")]
    pub listen: SocketAddr,
    /// Suffix of the canned entry's DN (as `canopy bench gen --suffix`).
    #[arg(long, default_value = "dc=example,dc=com")]
    pub suffix: String,
    /// Approximate LDIF size of the canned entry (as `canopy bench gen --entry-size`).
    #[arg(long, default_value_t = 500)]
    pub entry_size: usize,
    /// Entries a search with the filter `(objectClass=*)` gets (the scan workload's request): this many
    /// copies of the canned entry, in batches of about 8 KiB as the server sends a scan. 0: one entry,
    /// as every other search.
    #[arg(long, default_value_t = 0)]
    pub scan_entries: usize,
}

/// A scan's entries go to the writer in buffers of about this size (the server's search batch).
const SCAN_BATCH: usize = 8 * 1024;

/// The canned entry: its DN and its PartialAttribute TLVs, encoded once.
struct Canned {
    dn: Vec<u8>,
    attrs: Vec<u8>,
    scan_entries: usize,
}

impl Canned {
    fn new(suffix: &str, entry_size: usize, scan_entries: usize) -> Result<Canned> {
        let params = GenParams {
            entries: 1,
            seed: 42,
            entry_size,
            suffix: suffix.to_string(),
            passwords: false,
        };
        let text = person_ldif(&params, 0);
        let mut records = LdifReader::new(BufReader::new(text.as_bytes()));
        let Some(Ok(LdifRecord::Content { dn, attrs })) = records.next() else {
            bail!("the generated entry is not an LDIF content record");
        };
        let mut grouped: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for (name, value) in attrs {
            match grouped
                .iter_mut()
                .find(|(n, _)| n.eq_ignore_ascii_case(&name))
            {
                Some((_, values)) => values.push(value),
                None => grouped.push((name, vec![value])),
            }
        }
        let mut encoded = Vec::new();
        for (name, values) in &grouped {
            let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut encoded, name, &values);
        }
        Ok(Canned {
            dn,
            attrs: encoded,
            scan_entries,
        })
    }
}

/// Runs the canned server until the process is stopped.
pub fn main(args: &CannedArgs) -> Result<()> {
    if !args.listen.ip().is_loopback() {
        bail!(
            "{}: the canned server listens on a loopback address only",
            args.listen
        );
    }
    let canned = Arc::new(Canned::new(
        &args.suffix,
        args.entry_size,
        args.scan_entries,
    )?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        eprintln!(
            "canned LDAP server on {} (entry {}, {} bytes of attributes)",
            listener.local_addr()?,
            String::from_utf8_lossy(&canned.dn),
            canned.attrs.len()
        );
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::spawn(serve(stream, Arc::clone(&canned)));
        }
    })
}

/// One connection: frame, decode, answer; a decode failure closes it with a notice of disconnection.
async fn serve(stream: tokio::net::TcpStream, canned: Arc<Canned>) {
    let (mut reader, writer) = tokio::io::split(stream);
    let (tx, rx) = mpsc::channel::<Vec<u8>>(RESPONSE_QUEUE);
    let line = Arc::new(Line {
        state: Mutex::new(LineState {
            half: writer,
            rest: Vec::new(),
        }),
        queued: AtomicUsize::new(0),
    });
    let out = tokio::spawn(write_responses(Arc::clone(&line), rx));
    let limits = DecodeLimits::default();
    // The server's read buffer (`limits::ReadBuf`): requests that fit a small array the connection
    // keeps are read and decoded in place; a larger one moves the bytes to a heap buffer.
    let mut small = [0u8; FIRST_READ];
    let mut small_len = 0usize;
    let mut heap: Vec<u8> = Vec::new();
    'connection: loop {
        let mut start = 0usize;
        {
            let data: &[u8] = if heap.is_empty() {
                small.get(..small_len).unwrap_or(&[])
            } else {
                &heap
            };
            loop {
                let available = data.get(start..).unwrap_or(&[]);
                let len = match frame_len(available, MAX_PDU) {
                    Ok(Some(len)) => len,
                    Ok(None) => break,
                    Err(_) => {
                        let _ = line.send(&tx, notice("malformed PDU")).await;
                        break 'connection;
                    }
                };
                let frame = available.get(..len).unwrap_or(&[]);
                start += len;
                let message = match LdapMessage::decode(frame, &limits) {
                    Ok(message) => message,
                    Err(error) => {
                        let _ = line.send(&tx, notice(&error.to_string())).await;
                        break 'connection;
                    }
                };
                let Some(responses) = answer(&canned, message) else {
                    break 'connection;
                };
                for response in responses {
                    if line.send(&tx, response).await.is_err() {
                        break 'connection;
                    }
                }
            }
        }
        if !heap.is_empty() {
            if start >= heap.len() {
                heap = Vec::new();
            } else if start > 0 {
                heap.drain(..start);
            }
        } else if start >= small_len {
            small_len = 0;
        } else if start > 0 {
            small.copy_within(start..small_len, 0);
            small_len -= start;
        }
        let read = match small
            .get_mut(small_len..)
            .filter(|free| heap.is_empty() && !free.is_empty())
        {
            Some(free) => {
                let read = reader.read(free).await;
                if let Ok(n) = read {
                    small_len += n;
                }
                read
            }
            None => {
                if heap.is_empty() {
                    heap.reserve(FIRST_READ + READ_GROWTH);
                    heap.extend_from_slice(small.get(..small_len).unwrap_or(&[]));
                    small_len = 0;
                }
                if heap.capacity() - heap.len() < READ_GROWTH / 4 {
                    heap.reserve(READ_GROWTH);
                }
                reader.read_buf(&mut heap).await
            }
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    drop(tx);
    let _ = out.await;
}

/// The responses to one request, in buffers to write; none for abandon, `None` for unbind (close the
/// connection).
fn answer(canned: &Canned, message: LdapMessage) -> Option<Vec<Vec<u8>>> {
    let id = message.message_id;
    let unwilling = || {
        LdapResult::new(
            ResultCode::UnwillingToPerform,
            "the canned server answers only bind and search",
        )
    };
    let op = match message.op {
        ProtocolOp::UnbindRequest => return None,
        ProtocolOp::AbandonRequest(_) => return Some(Vec::new()),
        ProtocolOp::SearchRequest(req) => {
            let scan = matches!(&req.filter, Filter::Present(attr) if attr.eq_ignore_ascii_case("objectClass"));
            let count = if scan { canned.scan_entries.max(1) } else { 1 };
            let entry_len = canned.attrs.len() + canned.dn.len() + 32;
            let mut buffers = Vec::new();
            let mut out = Vec::with_capacity(entry_len.min(SCAN_BATCH) + 64);
            for _ in 0..count {
                if !out.is_empty() && out.len() + entry_len > SCAN_BATCH {
                    buffers.push(std::mem::replace(
                        &mut out,
                        Vec::with_capacity(SCAN_BATCH + 64),
                    ));
                }
                encode_search_result_entry_raw(&mut out, id, &canned.dn, &canned.attrs);
            }
            LdapMessage {
                message_id: id,
                op: ProtocolOp::SearchResultDone(LdapResult::success()),
                controls: Vec::new(),
            }
            .encode(&mut out);
            buffers.push(out);
            return Some(buffers);
        }
        ProtocolOp::BindRequest(_) => ProtocolOp::BindResponse(BindResponse {
            result: LdapResult::success(),
            server_sasl_creds: None,
        }),
        ProtocolOp::ModifyRequest(_) => ProtocolOp::ModifyResponse(unwilling()),
        ProtocolOp::AddRequest(_) => ProtocolOp::AddResponse(unwilling()),
        ProtocolOp::DelRequest(_) => ProtocolOp::DelResponse(unwilling()),
        ProtocolOp::ModifyDnRequest(_) => ProtocolOp::ModifyDnResponse(unwilling()),
        ProtocolOp::CompareRequest(_) => ProtocolOp::CompareResponse(unwilling()),
        ProtocolOp::ExtendedRequest(_) => ProtocolOp::ExtendedResponse(ExtendedResponse {
            result: unwilling(),
            name: None,
            value: None,
        }),
        // A response sent to a server.
        _ => return Some(vec![notice("not a request")]),
    };
    let mut out = Vec::with_capacity(64);
    LdapMessage {
        message_id: id,
        op,
        controls: Vec::new(),
    }
    .encode(&mut out);
    Some(vec![out])
}

/// RFC 4511 §4.4.1 Notice of Disconnection.
fn notice(reason: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    LdapMessage {
        message_id: 0,
        op: ProtocolOp::ExtendedResponse(ExtendedResponse {
            result: LdapResult::new(ResultCode::ProtocolError, reason),
            name: Some(canopy_proto::oid::NOTICE_OF_DISCONNECTION.to_string()),
            value: None,
        }),
        controls: Vec::new(),
    }
    .encode(&mut out);
    out
}

/// A connection's write side, as the server's `out.rs`: the write half, what a direct write left
/// unwritten (written first by the writer), and how many responses the queue holds or the writer writes.
struct Line<W> {
    state: Mutex<LineState<W>>,
    queued: AtomicUsize,
}

struct LineState<W> {
    half: W,
    rest: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Line<W> {
    fn lock(&self) -> MutexGuard<'_, LineState<W>> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `response` at once when nothing is queued and the socket takes it; else queues what is left.
    async fn send(&self, tx: &mpsc::Sender<Vec<u8>>, mut response: Vec<u8>) -> Result<(), ()> {
        {
            let mut state = self.lock();
            if self.queued.load(Ordering::SeqCst) == 0 {
                let LineState { half, rest } = &mut *state;
                let mut cx = std::task::Context::from_waker(Waker::noop());
                let mut written = 0;
                while let Some(unwritten) = response.get(written..).filter(|r| !r.is_empty()) {
                    match Pin::new(&mut *half).poll_write(&mut cx, unwritten) {
                        Poll::Ready(Ok(n)) if n > 0 => written += n,
                        _ => break,
                    }
                }
                if written == response.len() {
                    return Ok(());
                }
                if written > 0 {
                    response.drain(..written);
                    *rest = response;
                    // An empty message wakes the writer, which writes the rest first.
                    response = Vec::new();
                }
            }
        }
        self.queued.fetch_add(1, Ordering::SeqCst);
        tx.send(response).await.map_err(|_| {
            self.queued.fetch_sub(1, Ordering::SeqCst);
        })
    }

    /// Writes the rest of a direct write, then `buf`.
    async fn write_all(&self, buf: &[u8]) -> std::io::Result<()> {
        let mut written = 0;
        poll_fn(|cx| {
            let mut state = self.lock();
            let LineState { half, rest } = &mut *state;
            while !rest.is_empty() {
                let n = ready!(Pin::new(&mut *half).poll_write(cx, rest))?;
                if n == 0 {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                rest.drain(..n);
            }
            while let Some(unwritten) = buf.get(written..).filter(|b| !b.is_empty()) {
                match ready!(Pin::new(&mut *half).poll_write(cx, unwritten))? {
                    0 => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                    n => written += n,
                }
            }
            Poll::Ready(Ok(()))
        })
        .await
    }
}

/// The connection's writer, as the server's: a lone response written as it is, queued ones coalesced
/// into one write of up to 64 KiB, each after what a direct write left.
async fn write_responses<W: AsyncWrite + Unpin>(
    line: Arc<Line<W>>,
    mut rx: mpsc::Receiver<Vec<u8>>,
) {
    while let Some(first) = rx.recv().await {
        let (written, count) = match rx.try_recv() {
            Err(_) => (line.write_all(&first).await, 1),
            Ok(more) => {
                let mut batch = Vec::with_capacity(16 * 1024);
                batch.extend_from_slice(&first);
                batch.extend_from_slice(&more);
                let mut count = 2;
                while batch.len() < 64 * 1024 {
                    match rx.try_recv() {
                        Ok(more) => {
                            batch.extend_from_slice(&more);
                            count += 1;
                        }
                        Err(_) => break,
                    }
                }
                (line.write_all(&batch).await, count)
            }
        };
        line.queued.fetch_sub(count, Ordering::SeqCst);
        if written.is_err() {
            return;
        }
    }
    let _ = line.write_all(&[]).await;
    let _ = poll_fn(|cx| Pin::new(&mut line.lock().half).poll_shutdown(cx)).await;
}
