//! What a connection knows about its client: where it comes from and how the link is protected.

use std::net::SocketAddr;

/// Where a connection comes from.
#[derive(Debug, Clone)]
pub enum Peer {
    Tcp(SocketAddr),
    /// A Unix socket peer with the credentials the kernel reported.
    Unix {
        uid: u32,
        gid: u32,
    },
}

/// TLS facts of a connection, once a handshake (ldaps:// or StartTLS) has completed.
#[derive(Debug, Clone, Default)]
pub struct TlsFacts {
    /// The client certificate's subject as an RFC 4514 DN string, when the client presented one that the
    /// configured CA verified.
    pub client_subject: Option<String>,
}

/// The link a connection runs over: its peer and, when encrypted, the TLS facts. Every operation sees it
/// through [`crate::access::Who`], so access rules and limits can depend on the address and the protection.
#[derive(Debug, Clone, Default)]
pub struct Link {
    /// None only for identities made outside a connection (offline tools, tests).
    pub peer: Option<Peer>,
    pub tls: Option<TlsFacts>,
    /// The strength of the SASL security layer installed by a bind (RFC 4752): 0 without one, 1 for
    /// integrity, the key's bits for confidentiality.
    pub sasl_ssf: u32,
}

impl Link {
    pub fn new(peer: Peer) -> Link {
        Link {
            peer: Some(peer),
            tls: None,
            sasl_ssf: 0,
        }
    }

    /// Encrypted (TLS or a SASL confidentiality layer) or local (ldapi): safe for passwords.
    pub fn is_protected(&self) -> bool {
        self.tls.is_some() || self.sasl_ssf > 1 || matches!(self.peer, Some(Peer::Unix { .. }))
    }

    /// A TCP peer on the loopback interface.
    pub fn is_loopback(&self) -> bool {
        matches!(&self.peer, Some(Peer::Tcp(addr)) if addr.ip().is_loopback())
    }

    /// The subject of a verified client certificate, once TLS is on.
    pub fn tls_subject(&self) -> Option<&str> {
        self.tls.as_ref()?.client_subject.as_deref()
    }

    /// The identity SASL EXTERNAL binds as: a verified client certificate's subject, else the ldapi peer
    /// credentials in slapd's form. None when the link says nothing about the client.
    pub fn external_authid(&self) -> Option<String> {
        if let Some(subject) = self.tls_subject() {
            return Some(subject.to_string());
        }
        match self.peer {
            Some(Peer::Unix { uid, gid }) => Some(format!(
                "gidNumber={gid}+uidNumber={uid},cn=peercred,cn=external,cn=auth"
            )),
            _ => None,
        }
    }

    /// The client's IP address, for TCP peers.
    pub fn ip(&self) -> Option<std::net::IpAddr> {
        match &self.peer {
            Some(Peer::Tcp(addr)) => Some(addr.ip()),
            _ => None,
        }
    }
}
