//! A SASL security layer on a connection's byte stream (RFC 4422 §3.7, RFC 4752 §3.3): every PDU in
//! both directions travels as a four-byte big-endian length and a GSS-API wrap token.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::gssapi::{Layer, MAX_RECEIVE};

/// A stream whose bytes are wrapped by a negotiated layer.
///
/// Hazard: like a TLS stream, a write that returns `Pending` has already wrapped the caller's bytes
/// into a frame; the caller must offer the same bytes again (the connection's writer does), and the
/// frame is finished before they count as written.
pub struct SaslStream<T> {
    inner: T,
    layer: Layer,
    /// Received bytes not yet making a whole frame.
    incoming: Vec<u8>,
    /// The current frame's unwrapped message and how much of it the reader took.
    plain: Vec<u8>,
    taken: usize,
    /// A frame being written: its bytes, how many are written, and the message length it carries.
    outgoing: Option<(Vec<u8>, usize, usize)>,
}

impl<T> SaslStream<T> {
    /// The layer on `inner`; `early` holds bytes already read from it (frames the client sent right
    /// after the bind response).
    pub fn new(inner: T, layer: Layer, early: Vec<u8>) -> SaslStream<T> {
        SaslStream {
            inner,
            layer,
            incoming: early,
            plain: Vec::new(),
            taken: 0,
            outgoing: None,
        }
    }

    /// Unwraps the first whole frame of `incoming`, if there is one.
    fn next_frame(&mut self) -> io::Result<bool> {
        let Some(header) = self.incoming.get(..4) else {
            return Ok(false);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        if len > MAX_RECEIVE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("SASL frame of {len} bytes exceeds {MAX_RECEIVE}"),
            ));
        }
        let end = 4 + len as usize;
        let Some(token) = self.incoming.get(4..end) else {
            return Ok(false);
        };
        let (plain, confidential) = self.layer.context.unwrap(token).map_err(io::Error::other)?;
        if self.layer.confidential && !confidential {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "SASL frame without the negotiated confidentiality",
            ));
        }
        self.incoming.drain(..end);
        self.plain = plain;
        self.taken = 0;
        Ok(true)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for SaslStream<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Bounded: each turn either hands out bytes, unwraps a frame, or reads from the socket.
        loop {
            if let Some(rest) = this.plain.get(this.taken..).filter(|r| !r.is_empty()) {
                let n = rest.len().min(buf.remaining());
                buf.put_slice(&rest[..n]);
                this.taken += n;
                return Poll::Ready(Ok(()));
            }
            if this.next_frame()? {
                continue;
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                // End of stream: clean between frames, truncated inside one.
                return Poll::Ready(if this.incoming.is_empty() {
                    Ok(())
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                });
            }
            this.incoming.extend_from_slice(read.filled());
        }
    }
}

impl<T: AsyncWrite + Unpin> SaslStream<T> {
    /// Writes the pending frame out; Ready with the message length it carried once it is all written.
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((frame, written, _)) = self.outgoing.as_mut() {
            let Some(rest) = frame.get(*written..).filter(|r| !r.is_empty()) else {
                let carried = self.outgoing.take().map_or(0, |(_, _, n)| n);
                return Poll::Ready(Ok(carried));
            };
            match ready!(Pin::new(&mut self.inner).poll_write(cx, rest))? {
                0 => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                n => *written += n,
            }
        }
        Poll::Ready(Ok(0))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for SaslStream<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.outgoing.is_none() {
            if buf.is_empty() {
                return Poll::Ready(Ok(0));
            }
            let n = buf.len().min(this.layer.max_plain_out);
            let token = this
                .layer
                .context
                .wrap(this.layer.confidential, &buf[..n])
                .map_err(io::Error::other)?;
            let len = u32::try_from(token.len()).map_err(io::Error::other)?;
            let mut frame = Vec::with_capacity(4 + token.len());
            frame.extend_from_slice(&len.to_be_bytes());
            frame.extend_from_slice(&token);
            this.outgoing = Some((frame, 0, n));
        }
        this.poll_frame(cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_frame(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_frame(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::super::gss_ffi::Context;
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A layer whose context was never established: every wrap and unwrap fails, so these tests see
    /// the framing's own checks (a real context is the e2e suite's, against a KDC).
    fn unestablished(early: Vec<u8>, from_client: &[u8]) -> SaslStream<tokio::io::DuplexStream> {
        let (mut client, server) = tokio::io::duplex(1024);
        let bytes = from_client.to_vec();
        tokio::spawn(async move {
            let _ = client.write_all(&bytes).await;
            // Keeps the client's end open until the test has read what it wanted.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        });
        let layer = Layer {
            context: Context::new(),
            confidential: true,
            ssf: 256,
            max_plain_out: 100,
        };
        SaslStream::new(server, layer, early)
    }

    async fn read_error(stream: &mut SaslStream<tokio::io::DuplexStream>) -> io::ErrorKind {
        let mut buf = [0u8; 64];
        stream.read(&mut buf).await.err().unwrap().kind()
    }

    #[tokio::test]
    async fn oversized_frames_are_refused_before_any_unwrap() {
        let mut header = (MAX_RECEIVE + 1).to_be_bytes().to_vec();
        header.extend_from_slice(b"xx");
        let mut stream = unestablished(header, b"");
        assert_eq!(read_error(&mut stream).await, io::ErrorKind::InvalidData);
    }

    #[tokio::test]
    async fn frames_that_do_not_unwrap_are_errors() {
        // The frame arrives in two pieces: the early bytes and then the socket.
        let mut stream = unestablished(vec![0, 0, 0, 4, b'j'], b"unk");
        assert_ne!(read_error(&mut stream).await, io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn end_of_stream_inside_a_frame_is_unexpected_and_between_frames_clean() {
        let (client, server) = tokio::io::duplex(64);
        drop(client);
        let layer = Layer {
            context: Context::new(),
            confidential: false,
            ssf: 1,
            max_plain_out: 100,
        };
        let mut stream = SaslStream::new(server, layer, vec![0, 0, 0, 9, 1]);
        assert_eq!(read_error(&mut stream).await, io::ErrorKind::UnexpectedEof);
        let (client, server) = tokio::io::duplex(64);
        drop(client);
        let layer = Layer {
            context: Context::new(),
            confidential: false,
            ssf: 1,
            max_plain_out: 100,
        };
        let mut stream = SaslStream::new(server, layer, Vec::new());
        let mut buf = [0u8; 8];
        assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
        // Writing needs the context: the failure is an error, not a panic or a clear-text write.
        assert!(stream.write_all(b"response").await.is_err());
    }
}
