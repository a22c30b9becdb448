//! The consumer's own LDAP client over tokio: connect (with a time bound), ldaps:// or StartTLS through
//! rustls, bind (simple, SASL EXTERNAL or PLAIN), send requests and read whole messages with
//! canopy-proto's codec.

use std::sync::Arc;
use std::time::Duration;

use canopy_proto::{
    frame_len, BindAuth, BindRequest, Control, DecodeLimits, ExtendedRequest, FrameError,
    LdapMessage, ProtocolOp, ResultCode,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::config::{BindMethod, Consumer, Transport};

/// RFC 4511 §4.14.1 StartTLS.
const START_TLS: &str = "1.3.6.1.4.1.1466.20037";
/// Largest message accepted from a provider (an entry with large values).
const MAX_MESSAGE: usize = 64 << 20;

/// A byte stream the client runs over: TCP, or TLS over TCP.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One connection to a provider.
pub struct Connection {
    stream: Box<dyn Stream>,
    buf: Vec<u8>,
    /// Where the first unread byte of `buf` is.
    start: usize,
    next_id: i32,
    limits: DecodeLimits,
}

impl Connection {
    /// Connects, sets up TLS as configured and binds.
    pub async fn open(consumer: &Consumer) -> Result<Connection, String> {
        let address = format!("{}:{}", consumer.host, consumer.port);
        let tcp = tokio::time::timeout(consumer.network_timeout, TcpStream::connect(&address))
            .await
            .map_err(|_| format!("connect timed out after {:?}", consumer.network_timeout))?
            .map_err(|e| format!("connect: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let mut conn = match consumer.transport {
            Transport::Plain => Connection::over(Box::new(tcp)),
            Transport::Ldaps => Connection::over(tls(consumer, tcp).await?),
            Transport::StartTls { critical } => {
                let mut plain = Connection::over(Box::new(tcp));
                let id = plain
                    .send(
                        ProtocolOp::ExtendedRequest(ExtendedRequest {
                            name: START_TLS.to_string(),
                            value: None,
                        }),
                        Vec::new(),
                    )
                    .await?;
                let answer = plain.recv_timeout(consumer.timeout).await?;
                let code = match (&answer.op, answer.message_id == id) {
                    (ProtocolOp::ExtendedResponse(r), true) => r.result.code,
                    _ => return Err("unexpected answer to StartTLS".into()),
                };
                match code {
                    ResultCode::Success => {
                        if plain.buf.len() > plain.start {
                            return Err("data after the StartTLS answer".into());
                        }
                        let tcp = plain.into_stream();
                        Connection::over(tls(consumer, tcp).await?)
                    }
                    other if critical => {
                        return Err(format!(
                            "StartTLS refused ({other:?}) and starttls is critical"
                        ))
                    }
                    other => {
                        tracing::warn!(provider = %consumer.provider, rid = consumer.rid, ?other,
                            "syncrepl: StartTLS refused, going on in the clear");
                        plain
                    }
                }
            }
        };
        conn.bind(consumer).await?;
        Ok(conn)
    }

    fn over(stream: Box<dyn Stream>) -> Connection {
        Connection {
            stream,
            buf: Vec::with_capacity(64 * 1024),
            start: 0,
            next_id: 1,
            limits: DecodeLimits::default(),
        }
    }

    fn into_stream(self) -> Box<dyn Stream> {
        self.stream
    }

    async fn bind(&mut self, consumer: &Consumer) -> Result<(), String> {
        let (name, auth) = match &consumer.bind {
            BindMethod::Simple { dn, password } => (
                dn.clone().into_bytes(),
                BindAuth::Simple(password.clone().into_bytes()),
            ),
            BindMethod::External { authzid } => (
                Vec::new(),
                BindAuth::Sasl {
                    mechanism: "EXTERNAL".into(),
                    // An initial response (empty: the certificate's identity), so that no
                    // challenge round is needed.
                    credentials: Some(authzid.clone().unwrap_or_default().into_bytes()),
                },
            ),
            BindMethod::Plain {
                authcid,
                authzid,
                password,
            } => {
                let mut creds = authzid.clone().unwrap_or_default().into_bytes();
                creds.push(0);
                creds.extend_from_slice(authcid.as_bytes());
                creds.push(0);
                creds.extend_from_slice(password.as_bytes());
                (
                    Vec::new(),
                    BindAuth::Sasl {
                        mechanism: "PLAIN".into(),
                        credentials: Some(creds),
                    },
                )
            }
        };
        let id = self
            .send(
                ProtocolOp::BindRequest(BindRequest {
                    version: 3,
                    name,
                    auth,
                }),
                Vec::new(),
            )
            .await?;
        let answer = self.recv_timeout(consumer.timeout).await?;
        match answer.op {
            ProtocolOp::BindResponse(r) if answer.message_id == id => {
                if r.result.code == ResultCode::Success {
                    Ok(())
                } else {
                    Err(format!(
                        "bind refused: {:?} {}",
                        r.result.code, r.result.message
                    ))
                }
            }
            _ => Err("unexpected answer to the bind".into()),
        }
    }

    /// Sends a request; its message ID.
    pub async fn send(&mut self, op: ProtocolOp, controls: Vec<Control>) -> Result<i32, String> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let mut out = Vec::new();
        LdapMessage {
            message_id: id,
            op,
            controls,
        }
        .encode(&mut out);
        self.stream
            .write_all(&out)
            .await
            .map_err(|e| format!("write: {e}"))?;
        self.stream
            .flush()
            .await
            .map_err(|e| format!("write: {e}"))?;
        Ok(id)
    }

    /// The next whole message, within `limit` when one is given.
    pub async fn recv_timeout(&mut self, limit: Option<Duration>) -> Result<LdapMessage, String> {
        match limit {
            Some(limit) => tokio::time::timeout(limit, self.recv())
                .await
                .map_err(|_| format!("no answer within {limit:?}"))?,
            None => self.recv().await,
        }
    }

    /// Whether the next message can be had without waiting: a whole one is already buffered, or the
    /// socket holds the rest of one now. Never waits: the socket is polled once, without a waker to
    /// call back, and whatever a poll reads is kept in the buffer for [`Connection::recv`], so no
    /// byte is lost or reordered and no future is ever dropped half-way. A read error or the end of
    /// the stream counts as "not ready": the `recv` that follows reports it.
    pub fn ready(&mut self) -> bool {
        loop {
            let available = self.buf.get(self.start..).unwrap_or(&[]);
            if !matches!(frame_len(available, MAX_MESSAGE), Ok(None)) {
                // A whole message, or a framing error that `recv` reports.
                return true;
            }
            let mut chunk = [0u8; 64 * 1024];
            let mut read = tokio::io::ReadBuf::new(&mut chunk);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match std::pin::Pin::new(&mut self.stream).poll_read(&mut cx, &mut read) {
                std::task::Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    if self.start > 0 {
                        self.buf.drain(..self.start);
                        self.start = 0;
                    }
                    self.buf.extend_from_slice(read.filled());
                }
                _ => return false,
            }
        }
    }

    /// The next whole message.
    pub async fn recv(&mut self) -> Result<LdapMessage, String> {
        loop {
            let available = self.buf.get(self.start..).unwrap_or(&[]);
            match frame_len(available, MAX_MESSAGE) {
                Ok(Some(len)) => {
                    let frame = available.get(..len).unwrap_or(&[]);
                    let message = LdapMessage::decode(frame, &self.limits)
                        .map_err(|e| format!("undecodable message from the provider: {e}"));
                    self.start += len;
                    return message;
                }
                Ok(None) => {}
                Err(FrameError::TooLarge { len, max }) => {
                    return Err(format!("message of {len} bytes exceeds {max}"))
                }
                Err(FrameError::Malformed(what)) => {
                    return Err(format!("malformed message from the provider: {what}"))
                }
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self
                .stream
                .read(&mut chunk)
                .await
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the provider closed the connection".into());
            }
            // Consumed messages are dropped in one move, not one per message.
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The TLS client side over `tcp`, verifying the provider against `tls_cacert` unless told not to, with
/// `tls_cert`/`tls_key` as the client certificate.
async fn tls<S>(consumer: &Consumer, tcp: S) -> Result<Box<dyn Stream>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let provider = rustls::crypto::ring::default_provider();
    let builder = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = if consumer.verify_provider {
        let mut roots = RootCertStore::empty();
        if let Some(path) = &consumer.tls_cacert {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("tls_cacert {}: {e}", path.display()))?;
            for cert in certs {
                let cert = cert.map_err(|e| format!("tls_cacert {}: {e}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("tls_cacert {}: {e}", path.display()))?;
            }
        }
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify))
    };
    let config = match (&consumer.tls_cert, &consumer.tls_key) {
        (Some(cert), Some(key)) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .map_err(|e| format!("tls_cert {}: {e}", cert.display()))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("tls_cert {}: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("tls_key {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("TLS client certificate: {e}"))?
        }
        _ => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(consumer.host.clone())
        .map_err(|e| format!("provider host {:?}: {e}", consumer.host))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let stream = tokio::time::timeout(consumer.network_timeout, connector.connect(name, tcp))
        .await
        .map_err(|_| "TLS handshake timed out".to_string())?
        .map_err(|e| format!("TLS handshake: {e}"))?;
    Ok(Box::new(stream))
}

/// `tls_reqcert = "never"`: the provider's certificate is not checked.
#[derive(Debug)]
struct NoVerify;

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: i32) -> Vec<u8> {
        let mut out = Vec::new();
        LdapMessage {
            message_id: id,
            op: ProtocolOp::UnbindRequest,
            controls: Vec::new(),
        }
        .encode(&mut out);
        out
    }

    /// `ready` never waits, keeps whatever it read, and tells a whole message from part of one.
    #[tokio::test]
    async fn ready_reads_without_waiting_and_loses_nothing() {
        let (mut provider, consumer) = tokio::io::duplex(1 << 16);
        let mut conn = Connection::over(Box::new(consumer));
        assert!(!conn.ready(), "nothing sent yet");
        let (one, two, three) = (message(1), message(2), message(3));
        provider.write_all(&one).await.unwrap();
        provider.write_all(&two).await.unwrap();
        // Half of the third message: not ready once the two whole ones are taken.
        provider.write_all(&three[..2]).await.unwrap();
        assert!(conn.ready());
        assert_eq!(conn.recv().await.unwrap().message_id, 1);
        assert!(conn.ready(), "the second one is buffered");
        assert_eq!(conn.recv().await.unwrap().message_id, 2);
        assert!(!conn.ready(), "only part of the third");
        provider.write_all(&three[2..]).await.unwrap();
        assert!(conn.ready());
        assert_eq!(conn.recv().await.unwrap().message_id, 3);
        // The end of the stream is "not ready"; the recv that follows reports it.
        drop(provider);
        assert!(!conn.ready());
        assert!(conn.recv().await.is_err());
    }
}
