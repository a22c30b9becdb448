//! `{SASL}` pass-through: a `userPassword` value `{SASL}user@realm` means "ask saslauthd", as slapd
//! does through Cyrus SASL's `pwcheck_method: saslauthd`. The check is one request on saslauthd's
//! Unix socket (its "mux" protocol: login, password, service and realm, each a 16-bit big-endian
//! length and the bytes; the answer one such string, "OK" or "NO" with a reason). Blocking: it runs on
//! the hash gate's blocking thread like any slow password check (ops/bind.rs).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The scheme prefix, matched without case as OpenLDAP matches schemes.
pub const PREFIX: &[u8] = b"{SASL}";

/// The service name saslauthd is told, as slapd's SASL server is created for "ldap".
const SERVICE: &[u8] = b"ldap";

/// How long one check may take before it counts as a failure (saslauthd's own back ends may hang).
const TIMEOUT: Duration = Duration::from_secs(10);

/// The identity of a `{SASL}` value, when `value` is one.
pub fn identity(value: &[u8]) -> Option<&[u8]> {
    let head = value.get(..PREFIX.len())?;
    head.eq_ignore_ascii_case(PREFIX)
        .then(|| &value[PREFIX.len()..])
}

/// The login and realm saslauthd is asked about: `user@realm` splits at the last `@` (a user name
/// may hold one); without `@` the realm is empty.
fn login_and_realm(id: &[u8]) -> (&[u8], &[u8]) {
    match id.iter().rposition(|b| *b == b'@') {
        Some(at) => (&id[..at], &id[at + 1..]),
        None => (id, b""),
    }
}

fn put(out: &mut Vec<u8>, part: &[u8]) -> Option<()> {
    let len = u16::try_from(part.len()).ok()?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(part);
    Some(())
}

/// Whether saslauthd at `socket` accepts `password` for the `{SASL}` identity `id`. Any failure to
/// ask (no socket, a timeout, a malformed answer) is a refusal, logged.
pub fn check(socket: &Path, id: &[u8], password: &[u8]) -> bool {
    match ask(socket, id, password) {
        Ok(answer) => answer.starts_with(b"OK"),
        Err(error) => {
            tracing::warn!(%error, socket = %socket.display(), "saslauthd could not be asked");
            false
        }
    }
}

fn ask(socket: &Path, id: &[u8], password: &[u8]) -> std::io::Result<Vec<u8>> {
    let (login, realm) = login_and_realm(id);
    let mut request = Vec::with_capacity(16 + id.len() + password.len());
    let fits = put(&mut request, login)
        .and_then(|_| put(&mut request, password))
        .and_then(|_| put(&mut request, SERVICE))
        .and_then(|_| put(&mut request, realm));
    if fits.is_none() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a part of the request is over 65535 bytes",
        ));
    }
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    stream.write_all(&request)?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len)?;
    let mut answer = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut answer)?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn identities() {
        assert_eq!(identity(b"{SASL}bob@EXAMPLE"), Some(&b"bob@EXAMPLE"[..]));
        assert_eq!(identity(b"{sasl}bob"), Some(&b"bob"[..]));
        assert_eq!(identity(b"{SSHA}abc"), None);
        assert_eq!(identity(b"{SAS"), None);
        assert_eq!(login_and_realm(b"a@b@REALM"), (&b"a@b"[..], &b"REALM"[..]));
        assert_eq!(login_and_realm(b"bob"), (&b"bob"[..], &b""[..]));
    }

    /// A stand-in saslauthd on a socket in a temp dir: it reads one request and answers OK when the
    /// password is "right".
    #[test]
    fn asks_over_the_mux_protocol() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mux");
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..2 {
                let (mut s, _) = listener.accept().unwrap();
                let mut parts = Vec::new();
                for _ in 0..4 {
                    let mut len = [0u8; 2];
                    s.read_exact(&mut len).unwrap();
                    let mut part = vec![0u8; u16::from_be_bytes(len) as usize];
                    s.read_exact(&mut part).unwrap();
                    parts.push(part);
                }
                let answer: &[u8] = if parts[1] == b"right" {
                    b"OK"
                } else {
                    b"NO bad"
                };
                s.write_all(&(answer.len() as u16).to_be_bytes()).unwrap();
                s.write_all(answer).unwrap();
                seen.push(parts);
            }
            seen
        });
        assert!(check(&path, b"bob@EXAMPLE", b"right"));
        assert!(!check(&path, b"bob@EXAMPLE", b"wrong"));
        let seen = server.join().unwrap();
        assert_eq!(
            seen[0],
            vec![
                b"bob".to_vec(),
                b"right".to_vec(),
                b"ldap".to_vec(),
                b"EXAMPLE".to_vec()
            ]
        );
        assert!(!check(&dir.path().join("absent"), b"bob", b"right"));
    }
}
