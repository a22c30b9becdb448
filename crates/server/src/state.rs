//! What every connection shares: the databases, the configuration and the root identity.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_proto::ResultCode;
use canopy_schema::NormDn;

use crate::config::Config;
use crate::databases::Databases;
use crate::limits::Connections;

pub struct ServerState {
    /// Every database, routed by suffix.
    pub databases: Databases,
    pub config: Config,
    /// The root DN, normalized.
    pub root_ndn: NormDn,
    /// The root password as configured: cleartext or a `{SCHEME}` hash.
    pub root_password: Vec<u8>,
    /// Open connections, for `max_connections` and `max_connections_per_ip`.
    pub connections: Arc<Connections>,
    /// The certificate and handshake settings; None when TLS is unavailable.
    pub tls: Option<Arc<crate::tls::Tls>>,
    /// The compiled `[sasl]` mapping and proxy rules.
    pub sasl_rules: crate::authz::Rules,
    /// Failed-bind counters.
    pub backoff: crate::backoff::Backoff,
    /// A hash of a random password in the default scheme, checked when a bind has nothing to check
    /// against, so unknown users cost the same time as wrong passwords.
    pub dummy_hash: Vec<u8>,
    /// Every counter: cn=Monitor and `/metrics` read them.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The access log, when configured.
    pub access_log: Option<crate::accesslog::AccessLog>,
    /// The cn=Monitor database's writer side; None when `monitor = false`.
    pub monitor: Option<crate::monitor::Monitor>,
    /// The syncrepl consumers of the first database (`[[syncrepl]]`), with their status.
    pub syncrepl: Vec<Arc<crate::syncrepl::Handle>>,
    /// The accesslog overlays' log databases (in `databases` too), whose writers `logdb::start` runs.
    pub accesslog: Vec<crate::logdb::LogDb>,
}

pub type State = Arc<ServerState>;

impl ServerState {
    /// slapd answers noSuchObject, without a matched DN, for names outside every naming context.
    pub fn outside_naming_context(&self, _ndn: &NormDn) -> LdapError {
        LdapError::new(ResultCode::NoSuchObject, "")
    }
}
