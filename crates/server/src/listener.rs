//! Accepting connections on `ldap://` (TCP, with TCP_NODELAY), `ldaps://` (TCP, TLS handshake first) and
//! `ldapi://` (Unix socket, peer credentials).

use std::future::Future;

use tokio::net::{TcpListener, UnixListener};

use crate::config::ListenUrl;
use crate::session::Peer;
use crate::state::State;
use crate::transport::Transport;
use crate::StartError;

/// A bound listener, before it accepts.
pub enum Bound {
    Tcp(TcpListener),
    /// `ldaps://`: every connection starts with a TLS handshake.
    Tls(TcpListener),
    Unix(UnixListener, std::path::PathBuf),
}

impl Bound {
    /// Binds a listener URL. A stale ldapi socket file is replaced.
    pub async fn bind(url: &str) -> Result<Bound, StartError> {
        let parsed = ListenUrl::parse(url)
            .map_err(|e| StartError::Listen(url.to_string(), std::io::Error::other(e)))?;
        match parsed {
            ListenUrl::Tcp(addr) => {
                let listener = TcpListener::bind(&addr)
                    .await
                    .map_err(|e| StartError::Listen(url.to_string(), e))?;
                Ok(Bound::Tcp(listener))
            }
            ListenUrl::Tls(addr) => {
                let listener = TcpListener::bind(&addr)
                    .await
                    .map_err(|e| StartError::Listen(url.to_string(), e))?;
                Ok(Bound::Tls(listener))
            }
            ListenUrl::Unix(path) => {
                if path.exists() {
                    let _ = std::fs::remove_file(&path);
                }
                let listener = UnixListener::bind(&path)
                    .map_err(|e| StartError::Listen(url.to_string(), e))?;
                // Like slapd's ldapi socket: anyone may connect; identity comes from peer credentials.
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777));
                Ok(Bound::Unix(listener, path))
            }
        }
    }

    /// The address clients reach this listener at, as a URL.
    pub fn url(&self) -> String {
        match self {
            Bound::Tcp(l) => match l.local_addr() {
                Ok(addr) => format!("ldap://{addr}"),
                Err(_) => "ldap://?".to_string(),
            },
            Bound::Tls(l) => match l.local_addr() {
                Ok(addr) => format!("ldaps://{addr}"),
                Err(_) => "ldaps://?".to_string(),
            },
            Bound::Unix(_, path) => {
                format!("ldapi://{}", path.display().to_string().replace('/', "%2F"))
            }
        }
    }

    /// Accepts connections until `shutdown` completes.
    pub async fn run(self, state: State, shutdown: impl Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let state = state.clone();
                        match stream {
                            Stream::Tcp(s) if matches!(self, Bound::Tls(_)) => {
                                tokio::spawn(admit_and_serve_tls(s, state, peer));
                            }
                            Stream::Tcp(s) => { tokio::spawn(admit_and_serve(s, state, peer)); }
                            Stream::Unix(s) => { tokio::spawn(admit_and_serve(s, state, peer)); }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        // Out of descriptors and similar: do not spin.
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
        if let Bound::Unix(_, path) = &self {
            let _ = std::fs::remove_file(path);
        }
    }

    async fn accept(&self) -> std::io::Result<(Stream, Peer)> {
        match self {
            Bound::Tcp(listener) | Bound::Tls(listener) => {
                let (stream, addr) = listener.accept().await?;
                stream.set_nodelay(true)?;
                Ok((Stream::Tcp(stream), Peer::Tcp(addr)))
            }
            Bound::Unix(listener, _) => {
                let (stream, _) = listener.accept().await?;
                let cred = stream.peer_cred()?;
                Ok((
                    Stream::Unix(stream),
                    Peer::Unix {
                        uid: cred.uid(),
                        gid: cred.gid(),
                    },
                ))
            }
        }
    }
}

/// Serves a connection if the connection limits admit it; otherwise logs and refuses it (busy).
async fn admit_and_serve<S>(stream: S, state: State, peer: Peer)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let ip = peer_ip(&peer);
    match state.connections.admit(ip, &state.config.limits) {
        Ok(_admitted) => crate::conn::serve(stream, state, peer).await,
        Err(refusal) => {
            tracing::warn!(?peer, %refusal, "connection refused");
            state
                .metrics
                .connections_refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::limits::refuse(stream, &refusal).await;
        }
    }
}

/// An `ldaps://` connection: admitted by the connection limits first (a refused client is just closed: a
/// notice in clear means nothing to a TLS client), then the handshake and the session.
async fn admit_and_serve_tls(stream: tokio::net::TcpStream, state: State, peer: Peer) {
    let ip = peer_ip(&peer);
    match state.connections.admit(ip, &state.config.limits) {
        Ok(_admitted) => serve_tls(stream, state, peer).await,
        Err(refusal) => {
            tracing::warn!(?peer, %refusal, "connection refused");
            state
                .metrics
                .connections_refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// An `ldaps://` connection: the handshake (bounded by the handshake timeout), then the LDAP session. A
/// client that fails the handshake is dropped without disturbing anyone else.
async fn serve_tls(stream: tokio::net::TcpStream, state: State, peer: Peer) {
    let Some(tls) = state.tls.clone() else {
        tracing::warn!(?peer, "ldaps connection but TLS is unavailable");
        return;
    };
    match tls.accept(stream).await {
        Ok((stream, facts)) => {
            state
                .metrics
                .tls_handshakes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::conn::serve_transport(Transport::Tls(Box::new(stream)), state, peer, Some(facts))
                .await
        }
        Err(error) => {
            state
                .metrics
                .tls_handshake_failures
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(?peer, %error, "TLS handshake failed");
        }
    }
}

/// The client's address, for the per-address connection limit (None for ldapi peers).
fn peer_ip(peer: &Peer) -> Option<std::net::IpAddr> {
    match peer {
        Peer::Tcp(addr) => Some(addr.ip()),
        Peer::Unix { .. } => None,
    }
}

enum Stream {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}
