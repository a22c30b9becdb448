//! A minimal blocking LDAP client over one TCP connection, through canopy-proto's codec: requests are
//! encoded into one reused buffer, responses framed with `frame_len`; search entries are counted without
//! being decoded so that the client stays cheap next to the server it measures.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use canopy_ber::{tag, Reader};
use canopy_proto::{
    frame_len, BindAuth, BindRequest, DecodeLimits, FrameError, LdapMessage, ProtocolOp, ResultCode,
};

/// Responses larger than this end the connection (a scan answers entry by entry, so this bounds one entry).
const MAX_FRAME: usize = 64 << 20;
const READ_CHUNK: usize = 64 << 10;
/// A server that does not answer within this time counts as an error instead of hanging the run.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

const SEARCH_RESULT_ENTRY: u8 = 0x64;
const SEARCH_RESULT_REFERENCE: u8 = 0x73;

#[derive(Debug, thiserror::Error)]
pub enum LdapError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("bad LDAP URL {0:?}: expected ldap://HOST[:PORT]")]
    Url(String),
    #[error("cannot resolve {0}")]
    Resolve(String),
    #[error("framing: {0}")]
    Frame(#[from] FrameError),
    #[error("undecodable response: {0}")]
    Decode(String),
    #[error("server closed the connection")]
    Closed,
    #[error("response to message {got}, expected {want}")]
    WrongId { got: i32, want: i32 },
    #[error("unexpected response to message {0}")]
    Unexpected(i32),
}

/// `ldap://host[:port][/]` to a socket address (port 389 by default).
pub fn resolve_url(url: &str) -> Result<SocketAddr, LdapError> {
    let rest = url
        .strip_prefix("ldap://")
        .ok_or_else(|| LdapError::Url(url.to_string()))?;
    let hostport = rest.split('/').next().unwrap_or("");
    if hostport.is_empty() {
        return Err(LdapError::Url(url.to_string()));
    }
    let with_port = if hostport.starts_with('[') {
        if hostport.contains("]:") {
            hostport.to_string()
        } else {
            format!("{hostport}:389")
        }
    } else if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:389")
    };
    with_port
        .to_socket_addrs()
        .map_err(|_| LdapError::Resolve(with_port.clone()))?
        .next()
        .ok_or(LdapError::Resolve(with_port))
}

/// What a search brought back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOutcome {
    pub code: ResultCode,
    pub entries: u64,
    pub bytes: u64,
}

/// One LDAP session.
pub struct Conn {
    stream: TcpStream,
    next_id: i32,
    out: Vec<u8>,
    buf: Vec<u8>,
    /// Received bytes are `buf[start..end]`; `buf` is allocated once and never shrinks.
    start: usize,
    end: usize,
    limits: DecodeLimits,
}

impl Conn {
    pub fn connect(addr: &SocketAddr) -> Result<Conn, LdapError> {
        let stream = TcpStream::connect(addr)?;
        // Seed 001 measured Nagle's algorithm adding ~50 ms to every search; requests go out at once.
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(Conn {
            stream,
            next_id: 1,
            out: Vec::with_capacity(1024),
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            limits: DecodeLimits::default(),
        })
    }

    /// Sets the message ID of `msg` to the next one, encodes and sends it; returns the ID.
    pub fn send(&mut self, msg: &mut LdapMessage) -> Result<i32, LdapError> {
        let id = self.next_id;
        self.next_id = if self.next_id == i32::MAX {
            1
        } else {
            self.next_id + 1
        };
        msg.message_id = id;
        self.out.clear();
        msg.encode(&mut self.out);
        self.stream.write_all(&self.out)?;
        Ok(id)
    }

    /// Byte range in `buf` of the next complete frame, reading more as needed.
    fn next_frame(&mut self) -> Result<(usize, usize), LdapError> {
        loop {
            let pending = self.buf.get(self.start..self.end).unwrap_or(&[]);
            if let Some(len) = frame_len(pending, MAX_FRAME)? {
                let begin = self.start;
                self.start += len;
                if self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                return Ok((begin, begin + len));
            }
            // Move the partial frame to the front before reading more; grow only for a frame bigger than
            // the buffer (frame_len has already bounded it by MAX_FRAME).
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self
                .stream
                .read(self.buf.get_mut(self.end..).unwrap_or(&mut []))?;
            if n == 0 {
                return Err(LdapError::Closed);
            }
            self.end += n;
        }
    }

    /// The message ID and protocolOp tag of a frame, without decoding the operation.
    fn peek(frame: &[u8]) -> Result<(i32, u8), LdapError> {
        let bad = |e: canopy_ber::BerError| LdapError::Decode(e.to_string());
        let mut outer = Reader::new(frame);
        let mut msg = outer.read_constructed(tag::SEQUENCE).map_err(bad)?;
        let id = msg.read_integer(tag::INTEGER).map_err(bad)?;
        let op = msg
            .peek_tag()
            .ok_or(LdapError::Decode("no protocolOp".into()))?;
        Ok((i32::try_from(id).unwrap_or(-1), op))
    }

    /// Reads the final response to message `id` and returns its result code. Search entries and references
    /// on the way are counted into `outcome`.
    fn read_result(
        &mut self,
        id: i32,
        outcome: &mut SearchOutcome,
    ) -> Result<ResultCode, LdapError> {
        loop {
            let (b, e) = self.next_frame()?;
            let frame = self.buf.get(b..e).unwrap_or(&[]);
            let (got, op) = Self::peek(frame)?;
            if got == 0 {
                // Unsolicited notification (notice of disconnection): the session is over.
                return Err(LdapError::Closed);
            }
            if got != id {
                return Err(LdapError::WrongId { got, want: id });
            }
            if op == SEARCH_RESULT_ENTRY || op == SEARCH_RESULT_REFERENCE {
                outcome.entries += u64::from(op == SEARCH_RESULT_ENTRY);
                outcome.bytes += frame.len() as u64;
                continue;
            }
            outcome.bytes += frame.len() as u64;
            if let Some(code) = result_code(frame, op) {
                return Ok(code);
            }
            // Anything else goes through the full decoder, which says what is wrong with it.
            let msg = LdapMessage::decode(frame, &self.limits)
                .map_err(|e| LdapError::Decode(e.to_string()))?;
            return match msg.op {
                ProtocolOp::BindResponse(r) => Ok(r.result.code),
                ProtocolOp::SearchResultDone(r)
                | ProtocolOp::ModifyResponse(r)
                | ProtocolOp::AddResponse(r)
                | ProtocolOp::DelResponse(r)
                | ProtocolOp::ModifyDnResponse(r)
                | ProtocolOp::CompareResponse(r) => Ok(r.code),
                ProtocolOp::ExtendedResponse(r) => Ok(r.result.code),
                _ => Err(LdapError::Unexpected(id)),
            };
        }
    }

    /// Sends `msg` and waits for its result (entries of a search are counted).
    pub fn request(&mut self, msg: &mut LdapMessage) -> Result<SearchOutcome, LdapError> {
        let id = self.send(msg)?;
        let mut outcome = SearchOutcome {
            code: ResultCode::Success,
            entries: 0,
            bytes: 0,
        };
        outcome.code = self.read_result(id, &mut outcome)?;
        Ok(outcome)
    }

    /// A simple bind; an empty DN and password is an anonymous bind.
    pub fn simple_bind(&mut self, dn: &[u8], password: &[u8]) -> Result<ResultCode, LdapError> {
        let mut msg = bind_message(dn, password);
        Ok(self.request(&mut msg)?.code)
    }

    /// Sends an unbind and closes the connection; errors are irrelevant at that point.
    pub fn unbind(mut self) {
        let mut msg = LdapMessage {
            message_id: 0,
            op: ProtocolOp::UnbindRequest,
            controls: Vec::new(),
        };
        let _ = self.send(&mut msg);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// Responses that start with an LDAPResult (RFC 4511 §4.1.9): bind, search done, modify, add, delete,
/// modify DN, compare and extended.
const RESULT_OPS: [u8; 8] = [0x61, 0x65, 0x67, 0x69, 0x6b, 0x6d, 0x6f, 0x78];

/// The result code of a response whose operation starts with an LDAPResult, read without decoding the
/// rest (matched DN, message, referrals): the one figure a load generator needs, without allocating.
fn result_code(frame: &[u8], op: u8) -> Option<ResultCode> {
    if !RESULT_OPS.contains(&op) {
        return None;
    }
    let mut outer = Reader::new(frame);
    let mut msg = outer.read_constructed(tag::SEQUENCE).ok()?;
    msg.read_integer(tag::INTEGER).ok()?;
    let mut result = msg.read_constructed(op).ok()?;
    let code = result.read_integer(tag::ENUMERATED).ok()?;
    Some(ResultCode::from_code(u32::try_from(code).ok()?))
}

/// A simple BindRequest message (message ID set when sent).
pub fn bind_message(dn: &[u8], password: &[u8]) -> LdapMessage {
    LdapMessage {
        message_id: 0,
        op: ProtocolOp::BindRequest(BindRequest {
            version: 3,
            name: dn.to_vec(),
            auth: BindAuth::Simple(password.to_vec()),
        }),
        controls: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_codes_without_decoding() {
        use canopy_proto::{LdapResult, ProtocolOp};
        let check = |op: ProtocolOp, want: Option<ResultCode>| {
            let mut frame = Vec::new();
            LdapMessage {
                message_id: 9,
                op,
                controls: vec![],
            }
            .encode(&mut frame);
            let (id, tag) = Conn::peek(&frame).unwrap();
            assert_eq!(id, 9);
            assert_eq!(result_code(&frame, tag), want);
        };
        let r = |code| LdapResult::new(code, "some text");
        check(
            ProtocolOp::SearchResultDone(r(ResultCode::Success)),
            Some(ResultCode::Success),
        );
        check(
            ProtocolOp::DelResponse(r(ResultCode::NoSuchObject)),
            Some(ResultCode::NoSuchObject),
        );
        check(
            ProtocolOp::AddResponse(r(ResultCode::Unknown(4711))),
            Some(ResultCode::Unknown(4711)),
        );
        check(
            ProtocolOp::BindResponse(canopy_proto::BindResponse {
                result: r(ResultCode::InvalidCredentials),
                server_sasl_creds: None,
            }),
            Some(ResultCode::InvalidCredentials),
        );
        check(ProtocolOp::UnbindRequest, None);
        assert_eq!(result_code(&[0x30, 0x03, 0x02, 0x01], 0x65), None);
    }

    #[test]
    fn urls() {
        let check = |url: &str, want: Option<&str>| {
            let got = resolve_url(url).ok().map(|a| a.to_string());
            assert_eq!(got.as_deref(), want, "{url}");
        };
        check("ldap://127.0.0.1:3389", Some("127.0.0.1:3389"));
        check("ldap://127.0.0.1:3389/", Some("127.0.0.1:3389"));
        check("ldap://127.0.0.1", Some("127.0.0.1:389"));
        check("ldap://[::1]:5000", Some("[::1]:5000"));
        check("ldaps://127.0.0.1:636", None);
        check("ldap://", None);
        check("127.0.0.1:389", None);
    }
}
