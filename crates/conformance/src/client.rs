//! A blocking LDAP client over a TcpStream that speaks canopy-proto's codec, one request at a
//! time, and turns every answer into an `Outcome` the comparator can normalize.

use canopy_proto::{
    frame_len, BindAuth, BindRequest, Control, DecodeLimits, LdapMessage, LdapResult, ProtocolOp,
    SearchResultEntry,
};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// A server that takes longer than this for one request is reported as a difference.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response PDU accepted (jpegPhoto values are the biggest in the data).
const MAX_PDU: usize = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connect to port {port}: {source}")]
    Connect { port: u16, source: std::io::Error },
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("malformed response: {0}")]
    Decode(String),
    #[error("server closed the connection")]
    Closed,
    #[error("response with message id {got}, expected {want}")]
    WrongId { got: i32, want: i32 },
}

/// The result fields that are compared (the diagnostic message is not).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    pub code: u32,
    pub matched_dn: Vec<u8>,
    pub referral: Vec<String>,
    /// Controls of the final response (pre-read and post-read entries, for instance).
    pub controls: Vec<Control>,
    /// An extended response's name and value.
    pub extended: Option<(Option<String>, Option<Vec<u8>>)>,
}

impl Status {
    fn new(r: &LdapResult, controls: &[Control]) -> Status {
        Status {
            code: r.code.code(),
            matched_dn: r.matched_dn.clone(),
            referral: r.referral.clone(),
            controls: controls.to_vec(),
            extended: None,
        }
    }
}

/// Everything a server answered to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Search {
        entries: Vec<SearchResultEntry>,
        references: Vec<Vec<String>>,
        status: Status,
    },
    Done(Status),
    /// The pages of a paged search, in order.
    Pages(Vec<Outcome>),
    /// No LDAP answer: the connection failed, timed out or the response did not decode.
    Failed(String),
}

/// A connection's transport: loopback TCP, or the server's ldapi:// socket.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// One connection to a server.
#[derive(Debug)]
pub struct Conn {
    stream: Stream,
    next_id: i32,
    buf: Vec<u8>,
}

impl Conn {
    /// A connection over the server's ldapi:// socket (a protected link for both servers).
    pub fn connect_unix(path: &Path) -> Result<Conn, ClientError> {
        let stream =
            UnixStream::connect(path).map_err(|source| ClientError::Connect { port: 0, source })?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(Conn {
            stream: Stream::Unix(stream),
            next_id: 1,
            buf: Vec::new(),
        })
    }

    pub fn connect(port: u16) -> Result<Conn, ClientError> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
            .map_err(|source| ClientError::Connect { port, source })?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream: Stream::Tcp(stream),
            next_id: 1,
            buf: Vec::new(),
        })
    }

    /// Simple bind; returns the bind result.
    pub fn bind(&mut self, dn: &[u8], pw: &[u8]) -> Result<Status, ClientError> {
        let op = ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: dn.to_vec(),
            auth: BindAuth::Simple(pw.to_vec()),
        });
        match self.request(op, Vec::new())? {
            Outcome::Done(s) => Ok(s),
            Outcome::Search { status, .. } => Ok(status),
            Outcome::Failed(why) => Err(ClientError::Decode(why)),
            Outcome::Pages(_) => Err(ClientError::Decode("pages answer a bind".into())),
        }
    }

    /// Sends one request and collects every response up to the final one.
    pub fn request(
        &mut self,
        op: ProtocolOp,
        controls: Vec<Control>,
    ) -> Result<Outcome, ClientError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let msg = LdapMessage {
            message_id: id,
            op,
            controls,
        };
        let mut out = Vec::new();
        msg.encode(&mut out);
        self.send_raw(&out)?;
        self.collect(id)
    }

    /// Sends a pre-encoded LDAPMessage (for requests the codec cannot express, such as a
    /// malformed filter) and collects the answers to `id`.
    pub fn request_raw(&mut self, id: i32, pdu: &[u8]) -> Result<Outcome, ClientError> {
        self.send_raw(pdu)?;
        self.collect(id)
    }

    /// Allocates a message id for `request_raw`.
    pub fn take_id(&mut self) -> i32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    fn send_raw(&mut self, pdu: &[u8]) -> Result<(), ClientError> {
        self.stream.write_all(pdu)?;
        Ok(())
    }

    fn collect(&mut self, id: i32) -> Result<Outcome, ClientError> {
        let mut entries = Vec::new();
        let mut references = Vec::new();
        loop {
            let msg = self.read_message()?;
            // Unsolicited notifications (id 0) such as notice of disconnection end the exchange.
            if msg.message_id == 0 {
                if let ProtocolOp::ExtendedResponse(r) = &msg.op {
                    return Ok(Outcome::Failed(format!(
                        "notice of disconnection, code {}",
                        r.result.code.code()
                    )));
                }
            }
            if msg.message_id != id {
                return Err(ClientError::WrongId {
                    got: msg.message_id,
                    want: id,
                });
            }
            let status = match &msg.op {
                ProtocolOp::SearchResultEntry(e) => {
                    entries.push(e.clone());
                    continue;
                }
                ProtocolOp::SearchResultReference(urls) => {
                    references.push(urls.clone());
                    continue;
                }
                ProtocolOp::IntermediateResponse(_) => continue,
                ProtocolOp::SearchResultDone(r) => {
                    return Ok(Outcome::Search {
                        entries,
                        references,
                        status: Status::new(r, &msg.controls),
                    })
                }
                ProtocolOp::BindResponse(b) => Status::new(&b.result, &msg.controls),
                ProtocolOp::ExtendedResponse(x) => Status {
                    extended: Some((x.name.clone(), x.value.clone())),
                    ..Status::new(&x.result, &msg.controls)
                },
                ProtocolOp::ModifyResponse(r)
                | ProtocolOp::AddResponse(r)
                | ProtocolOp::DelResponse(r)
                | ProtocolOp::ModifyDnResponse(r)
                | ProtocolOp::CompareResponse(r) => Status::new(r, &msg.controls),
                other => {
                    return Err(ClientError::Decode(format!(
                        "unexpected response {other:?}"
                    )))
                }
            };
            return Ok(Outcome::Done(status));
        }
    }

    fn read_message(&mut self) -> Result<LdapMessage, ClientError> {
        loop {
            match frame_len(&self.buf, MAX_PDU) {
                Ok(Some(len)) => {
                    let frame: Vec<u8> = self.buf.drain(..len).collect();
                    return LdapMessage::decode(&frame, &DecodeLimits::default())
                        .map_err(|e| ClientError::Decode(e.to_string()));
                }
                Ok(None) => {}
                Err(e) => return Err(ClientError::Decode(format!("{e:?}"))),
            }
            let mut chunk = [0u8; 16384];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(ClientError::Closed);
            }
            self.buf
                .extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
    }
}
