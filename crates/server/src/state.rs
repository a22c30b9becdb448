//! What every connection shares: the databases, the configuration and the root identity.
//!
//! A [`ServerState`] is one immutable snapshot of the running configuration. A live change of
//! cn=config (`config_change`) builds a whole new snapshot and swaps it in [`Live`]; each
//! operation takes the current snapshot once when it is dispatched ([`ServerState::current`]) and
//! reads only that one, so it never sees half of a change.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_proto::ResultCode;
use canopy_schema::NormDn;

use crate::config::Config;
use crate::databases::Databases;
use crate::limits::Connections;

#[derive(Clone)]
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
    pub sasl_rules: Arc<crate::authz::Rules>,
    /// Failed-bind counters.
    pub backoff: Arc<crate::backoff::Backoff>,
    /// A hash of a random password in the default scheme, checked when a bind has nothing to check
    /// against, so unknown users cost the same time as wrong passwords.
    pub dummy_hash: Vec<u8>,
    /// Every counter: cn=Monitor and `/metrics` read them.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The access log, when configured.
    pub access_log: Option<Arc<crate::accesslog::AccessLog>>,
    /// The cn=Monitor database's writer side; None when `monitor = false`.
    pub monitor: Option<Arc<crate::monitor::Monitor>>,
    /// The syncrepl consumers of the first database (`[[syncrepl]]`), with their status.
    pub syncrepl: Vec<Arc<crate::syncrepl::Handle>>,
    /// The accesslog overlays' log databases (in `databases` too), whose writers `logdb::start` runs.
    pub accesslog: Arc<[crate::logdb::LogDb]>,
    /// The cn=config tree and its store; None for offline tools' states.
    pub config_tree: Option<Arc<crate::config_tree::ConfigTree>>,
    /// The current snapshot, shared by every snapshot of this server.
    pub live: Arc<Live>,
    /// Sets the server log's filter (a tracing directive such as `info`): cn=config's olcLogLevel.
    pub log_control: Option<LogControl>,
}

/// What the binary gives the server to change its log filter while serving.
pub type LogControl = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// Where the current snapshot lives: swapped whole by a configuration change.
#[derive(Default)]
pub struct Live {
    current: std::sync::RwLock<Option<State>>,
}

impl Live {
    /// Makes `state` the snapshot every later operation reads.
    pub fn swap(&self, state: State) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Some(state);
    }
}

pub type State = Arc<ServerState>;

impl crate::acl::Snapshot for State {
    fn address(&self) -> *const () {
        Arc::as_ptr(self).cast()
    }

    fn keep(&self) -> std::sync::Weak<dyn std::any::Any + Send + Sync> {
        Arc::downgrade(self) as std::sync::Weak<dyn std::any::Any + Send + Sync>
    }
}

impl ServerState {
    /// The current snapshot: the last one swapped in, or this one before any change.
    pub fn current(self: &Arc<Self>) -> State {
        let current = self.live.current.read().unwrap_or_else(|e| e.into_inner());
        current.clone().unwrap_or_else(|| self.clone())
    }

    /// slapd answers noSuchObject, without a matched DN, for names outside every naming context.
    pub fn outside_naming_context(&self, _ndn: &NormDn) -> LdapError {
        LdapError::new(ResultCode::NoSuchObject, "")
    }

    /// The answer for `dn` outside every naming context: slapd's default referral (`referral`) when one
    /// is configured, naming `dn` (and the search's `scope`), else `otherwise`.
    pub fn outside(
        &self,
        dn: &str,
        scope: Option<canopy_proto::SearchScope>,
        otherwise: LdapError,
    ) -> canopy_directory::OpError {
        match &self.config.referral {
            Some(url) => canopy_directory::OpError::Referral(
                canopy_directory::referral::default_referral(url, dn, scope),
            ),
            None => otherwise.into(),
        }
    }
}
