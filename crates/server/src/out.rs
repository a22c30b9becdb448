//! The write side of one connection: every response goes out in the order it was sent, written by the
//! connection's own task when nothing is queued before it (no hand-off), else by the connection's writer
//! task behind a bounded queue (back-pressure).
//!
//! Architecture invariant: bytes reach the stream in the order of `Out::send` / `Responses::send` calls
//! that happen one after the other, and never interleave within a response. A direct write happens only
//! under the line's lock, with no response queued or being written by the writer (`queued` is 0); what a
//! direct write could not write at once is the line's `rest`, which the writer writes before anything
//! else it takes from the queue.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll, Waker};

use tokio::io::AsyncWrite;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::metrics::Metrics;

/// Responses waiting to be written, per connection. A client that stops reading fills this queue, and then the
/// operations producing responses wait: back-pressure instead of unbounded memory.
pub const RESPONSE_QUEUE: usize = 64;

/// The queue of a connection's responses, as operations running off the connection's task (blocking
/// searches, updates, sync searches) hold it.
#[derive(Clone)]
pub struct Responses {
    tx: mpsc::Sender<Vec<u8>>,
    /// Responses sent to the queue and not yet written by the writer (a direct write's `rest` counts as
    /// one while it waits). Raised before a response enters the queue, lowered once it is written.
    queued: Arc<AtomicUsize>,
}

/// The connection went away: nothing more can be sent.
#[derive(Debug)]
pub struct Closed;

impl Responses {
    /// Queues a response, waiting while the queue is full.
    pub async fn send(&self, response: Vec<u8>) -> Result<(), Closed> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.tx.send(response).await.map_err(|_| self.undo())
    }

    /// [`Responses::send`] from a blocking thread.
    pub fn blocking_send(&self, response: Vec<u8>) -> Result<(), Closed> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.tx.blocking_send(response).map_err(|_| self.undo())
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Whether responses wait in the queue that the writer has not taken yet (it is busy writing).
    pub fn backlog(&self) -> bool {
        self.tx.capacity() < self.tx.max_capacity()
    }

    /// From a blocking thread: waits until the writer has taken every queued response, so that the next
    /// one sent is taken alone (the writer copies responses it takes together into one buffer).
    pub fn blocking_wait_taken(&self) -> Result<(), Closed> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Ok(());
        };
        match runtime.block_on(self.tx.reserve_many(self.tx.max_capacity())) {
            Ok(permits) => {
                drop(permits);
                Ok(())
            }
            Err(_) => Err(Closed),
        }
    }

    fn undo(&self) -> Closed {
        self.queued.fetch_sub(1, Ordering::SeqCst);
        Closed
    }
}

/// What the connection's task and its writer share: the write half of the stream and what a direct
/// write left unwritten.
struct Line<W> {
    /// None only while StartTLS has taken the stream back.
    half: Option<W>,
    /// The end of a response the connection's task began writing itself; written first by the writer.
    rest: Vec<u8>,
    /// Direct writes are allowed (a plain stream: a TLS stream buffers inside, and only a task that will
    /// be woken may leave bytes there).
    direct: bool,
}

type Shared<W> = Arc<Mutex<Line<W>>>;

fn lock<W>(line: &Mutex<Line<W>>) -> MutexGuard<'_, Line<W>> {
    line.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The connection task's side: sends (directly when it can), the writer task, and StartTLS's hand-over.
pub struct Out<W> {
    line: Shared<W>,
    responses: Responses,
    metrics: Arc<Metrics>,
    task: JoinHandle<Option<mpsc::Receiver<Vec<u8>>>>,
    handover: oneshot::Sender<()>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> Out<W> {
    /// Starts the writer of a new connection; `direct` allows writes from the connection's task.
    pub fn new(half: W, direct: bool, metrics: Arc<Metrics>) -> Out<W> {
        let (tx, rx) = mpsc::channel(RESPONSE_QUEUE);
        let line = Arc::new(Mutex::new(Line {
            half: Some(half),
            rest: Vec::new(),
            direct,
        }));
        let responses = Responses {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
        };
        start(line, responses, rx, metrics)
    }

    /// The queue, for operations that answer from another task or thread.
    pub fn responses(&self) -> &Responses {
        &self.responses
    }

    /// Sends a response from the connection's task: written at once when nothing is queued before it and
    /// the socket takes it without waiting, otherwise queued (waiting while the queue is full).
    pub async fn send(&self, response: Vec<u8>) {
        if let Some(response) = self.try_direct(response) {
            let _ = self.responses.send(response).await;
        }
    }

    /// Writes `response` now if nothing is ahead of it; gives it back when it must be queued instead.
    fn try_direct(&self, mut response: Vec<u8>) -> Option<Vec<u8>> {
        let mut line = lock(&self.line);
        if !line.direct || self.responses.queued.load(Ordering::SeqCst) != 0 {
            return Some(response);
        }
        let Line { half, rest, .. } = &mut *line;
        let Some(half) = half.as_mut() else {
            return Some(response);
        };
        // No task waits for this write: a socket that is not writable now sends it to the writer. The
        // no-op waker may replace the stream's registered one only because the writer, with nothing
        // queued, is not waiting on the stream (with a busy writer this would lose its wake-up).
        let mut cx = Context::from_waker(Waker::noop());
        let mut written = 0;
        while let Some(unwritten) = response.get(written..).filter(|r| !r.is_empty()) {
            match Pin::new(&mut *half).poll_write(&mut cx, unwritten) {
                Poll::Ready(Ok(n)) if n > 0 => written += n,
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                // Not writable now, or an error the writer will meet and end on.
                _ => break,
            }
        }
        if written == 0 {
            return Some(response);
        }
        self.metrics.sent_bytes(response.len());
        if written == response.len() {
            return None;
        }
        // Partly written: the end goes before anything else, and the writer is woken to write it.
        response.drain(..written);
        *rest = response;
        self.responses.queued.fetch_add(1, Ordering::SeqCst);
        if self.responses.tx.try_send(Vec::new()).is_err() {
            // Full (the writer is awake and writes `rest` first) or closed (nothing will be written).
            self.responses.queued.fetch_sub(1, Ordering::SeqCst);
        }
        None
    }

    /// Waits until everything queued is written, then takes back the write half and the queue.
    pub async fn hand_over(self) -> Option<(W, HandedOver<W>)> {
        let Out {
            line,
            responses,
            metrics,
            task,
            handover,
        } = self;
        handover.send(()).ok()?;
        let rx = task.await.ok().flatten()?;
        let half = lock(&line).half.take()?;
        Some((
            half,
            HandedOver {
                rx,
                line,
                responses,
                metrics,
            },
        ))
    }

    /// Drops the connection's sender and waits for the writer to write what is queued (until every other
    /// sender is dropped too) and close the stream.
    pub async fn finish(self) {
        let Out {
            responses, task, ..
        } = self;
        drop(responses);
        let _ = task.await;
    }
}

/// The queue and what the writer shares while StartTLS upgrades the stream.
pub struct HandedOver<W> {
    rx: mpsc::Receiver<Vec<u8>>,
    line: Shared<W>,
    responses: Responses,
    metrics: Arc<Metrics>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> HandedOver<W> {
    /// Puts the (upgraded) write half back and starts a new writer on the same queue. Direct writes stay
    /// off: the stream is now TLS.
    pub fn resume(self, half: W) -> Out<W> {
        let HandedOver {
            rx,
            line,
            responses,
            metrics,
        } = self;
        {
            let mut l = lock(&line);
            l.half = Some(half);
            l.direct = false;
        }
        start(line, responses, rx, metrics)
    }
}

/// Starts a writer task on `line` and the queue's receiving end: the `Out` of a new connection, or of
/// one whose stream StartTLS has just upgraded.
fn start<W: AsyncWrite + Send + Unpin + 'static>(
    line: Shared<W>,
    responses: Responses,
    rx: mpsc::Receiver<Vec<u8>>,
    metrics: Arc<Metrics>,
) -> Out<W> {
    let (handover, asked) = oneshot::channel();
    let task = tokio::spawn(write_responses(
        Arc::clone(&line),
        rx,
        Arc::clone(&responses.queued),
        asked,
        Arc::clone(&metrics),
    ));
    Out {
        line,
        responses,
        metrics,
        task,
        handover,
    }
}

/// The writer task: writes queued responses, coalescing those already waiting into one write; on a
/// hand-over request, once the queue is empty, flushes and returns the queue.
async fn write_responses<W: AsyncWrite + Unpin>(
    line: Shared<W>,
    mut rx: mpsc::Receiver<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    mut asked: oneshot::Receiver<()>,
    metrics: Arc<Metrics>,
) -> Option<mpsc::Receiver<Vec<u8>>> {
    let mut may_ask = true;
    loop {
        // Queued responses first: a handover happens only once they are all written.
        let first = tokio::select! {
            biased;
            next = rx.recv() => match next {
                Some(first) => first,
                None => break,
            },
            request = &mut asked, if may_ask => {
                if request.is_ok() {
                    return flush(&line).await.ok().map(|()| rx);
                }
                may_ask = false;
                continue;
            }
        };
        // Coalesce whatever else is ready into one write; a lone response (or a search's batch) is
        // written as it is, without a copy.
        let (written, count) = match rx.try_recv() {
            Err(_) => {
                metrics.sent_bytes(first.len());
                (write_all(&line, &first).await, 1)
            }
            Ok(more) => {
                // Allocated only when responses queue up faster than they are written and freed after
                // the write: an idle connection holds no write buffer.
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
                metrics.sent_bytes(batch.len());
                (write_all(&line, &batch).await, count)
            }
        };
        queued.fetch_sub(count, Ordering::SeqCst);
        if written.is_err() {
            return None;
        }
    }
    let _ = flush(&line).await;
    let _ = poll_fn(|cx| {
        let mut line = lock(&line);
        let Line { half, rest, .. } = &mut *line;
        match half.as_mut() {
            Some(half) => {
                ready!(write_rest(half, rest, cx))?;
                Pin::new(half).poll_shutdown(cx)
            }
            None => Poll::Ready(Ok(())),
        }
    })
    .await;
    None
}

/// Writes `buf` after the rest of a direct write, if any.
async fn write_all<W: AsyncWrite + Unpin>(line: &Mutex<Line<W>>, buf: &[u8]) -> io::Result<()> {
    let mut written = 0;
    poll_fn(|cx| {
        let mut line = lock(line);
        let Line { half, rest, .. } = &mut *line;
        let Some(half) = half.as_mut() else {
            return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
        };
        ready!(write_rest(half, rest, cx))?;
        while let Some(unwritten) = buf.get(written..).filter(|b| !b.is_empty()) {
            match ready!(Pin::new(&mut *half).poll_write(cx, unwritten))? {
                0 => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                n => written += n,
            }
        }
        Poll::Ready(Ok(()))
    })
    .await
}

/// Writes what a direct write left and flushes the stream.
async fn flush<W: AsyncWrite + Unpin>(line: &Mutex<Line<W>>) -> io::Result<()> {
    poll_fn(|cx| {
        let mut line = lock(line);
        let Line { half, rest, .. } = &mut *line;
        match half.as_mut() {
            Some(half) => {
                ready!(write_rest(half, rest, cx))?;
                Pin::new(half).poll_flush(cx)
            }
            None => Poll::Ready(Ok(())),
        }
    })
    .await
}

fn write_rest<W: AsyncWrite + Unpin>(
    half: &mut W,
    rest: &mut Vec<u8>,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    while !rest.is_empty() {
        match ready!(Pin::new(&mut *half).poll_write(cx, rest))? {
            0 => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
            n => {
                rest.drain(..n);
            }
        }
    }
    if rest.capacity() > 0 {
        *rest = Vec::new();
    }
    Poll::Ready(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A response: kind (b'D' sent by the connection's task, b'Q' queued by another task), index, length,
    /// then that many bytes of one value; a response cut by another cannot parse.
    fn response(kind: u8, index: u16, len: usize) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&index.to_be_bytes());
        out.extend_from_slice(&u16::try_from(len).unwrap().to_be_bytes());
        out.extend(std::iter::repeat_n((index % 251) as u8, len));
        out
    }

    /// Responses from the connection's task and from another task through a tiny pipe (most direct writes
    /// are partial or refused) arrive whole, each sender's in the order it sent them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn responses_stay_whole_and_in_order() {
        let sent = tokio::time::timeout(std::time::Duration::from_secs(20), send_and_read());
        let bytes = sent
            .await
            .expect("the responses were all written within 20 s");
        let (mut next_direct, mut next_queued, mut at) = (0u16, 0u16, 0usize);
        while at < bytes.len() {
            let head = bytes.get(at..at + 5).expect("a whole header");
            let index = u16::from_be_bytes([head[1], head[2]]);
            let len = usize::from(u16::from_be_bytes([head[3], head[4]]));
            let body = bytes.get(at + 5..at + 5 + len).expect("a whole body");
            assert!(
                body.iter().all(|&b| b == (index % 251) as u8),
                "response {index} cut"
            );
            match head[0] {
                b'D' => {
                    assert_eq!(index, next_direct);
                    next_direct += 1;
                }
                b'Q' => {
                    assert_eq!(index, next_queued);
                    next_queued += 1;
                }
                other => panic!("a response cut: kind byte {other}"),
            }
            at += 5 + len;
        }
        assert_eq!((next_direct, next_queued), (300, 300));
    }

    /// Sends 300 responses from each side and returns every byte the client read.
    async fn send_and_read() -> Vec<u8> {
        let (mut client, server) = tokio::io::duplex(97);
        let out = Out::new(server, true, Arc::new(Metrics::new()));
        let queue = out.responses().clone();
        let other = tokio::spawn(async move {
            for i in 0..300u16 {
                queue
                    .send(response(b'Q', i, 50 + usize::from(i % 7) * 90))
                    .await
                    .unwrap();
            }
        });
        let reader = tokio::spawn(async move {
            let mut bytes = Vec::new();
            client.read_to_end(&mut bytes).await.unwrap();
            bytes
        });
        for i in 0..300u16 {
            out.send(response(b'D', i, 10 + usize::from(i % 5) * 70))
                .await;
            if i % 16 == 0 {
                tokio::task::yield_now().await;
            }
        }
        other.await.unwrap();
        out.finish().await;
        reader.await.unwrap()
    }
}
