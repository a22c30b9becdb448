//! What every connection shares: the databases, the configuration and the root identity.
//!
//! A [`ServerState`] is one immutable snapshot of the running configuration. A live change of
//! cn=config (`config_change`) builds a whole new snapshot and swaps it in [`Live`]; each
//! operation takes the current snapshot once when it is dispatched ([`ServerState::current`]) and
//! reads only that one, so it never sees half of a change.
//!
//! Every database is reached through its backend: a stored database through its store directly, and
//! the server's own databases (cn=config, cn=Monitor) through the [`Backend`] registered for their
//! [`Engine`] in [`Backends`], as slapd's back-config and back-monitor sit beside back-mdb. The
//! frontend's operations call [`ServerState::update`] and [`ServerState::prepare_read`] and never
//! name a particular database.

use std::borrow::Cow;
use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::{OpError, WriteOp};
use canopy_proto::{Control, ResultCode};
use canopy_schema::NormDn;

use crate::access::Who;
use crate::config::Config;
pub use crate::databases::Pending;
use crate::databases::{Database, Databases, Engine, WriteControls};
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
    /// The bound on slow password checks and hashes running at once.
    pub hash_gate: Arc<crate::hash_gate::HashGate>,
    /// Recently verified bind passwords (`[passwords] bind_cache_secs`); None when off.
    pub bind_cache: Option<Arc<crate::bind_cache::BindCache>>,
    /// Every counter: cn=Monitor and `/metrics` read them.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The operation log (`conn=N op=M` lines, the `access_log` setting), when configured.
    pub op_log: Option<Arc<crate::oplog::OpLog>>,
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
    /// The backends of the server's own databases, by the engine a database names.
    pub backends: Backends,
}

/// What a database does on the frontend's calls where it is more than its store: cn=config validates
/// and swaps in the configuration a write describes, cn=Monitor computes its entries before a read.
/// The defaults are those of a stored database.
pub trait Backend: Send + Sync {
    /// Whether a read based at `raw_base` (as the client sent it, before normalization) may need
    /// [`Backend::prepare_read`]: a cheap test made before every search and compare.
    fn read_needs_preparing(&self, _raw_base: &[u8]) -> bool {
        false
    }

    /// Brings the entries a read may find up to date.
    fn prepare_read<'a>(&'a self, _state: &'a State) -> Pending<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Runs a client's write of `dir`, which this backend serves.
    fn update<'a>(
        &'a self,
        _state: &'a State,
        dir: &'a Database,
        op: WriteOp,
        who: &'a Who,
        ctl: &'a WriteControls,
    ) -> Pending<'a, Result<Vec<Control>, OpError>> {
        Box::pin(dir.update(op, who, ctl))
    }

    /// Whether a sync search (RFC 4533) may follow the database.
    fn provides_sync(&self) -> bool {
        true
    }

    /// Whether scanning is the database's normal way of answering a search (a small tree rebuilt in
    /// memory), so an unindexed search is not worth a log line.
    fn scans_by_design(&self) -> bool {
        false
    }
}

/// The backends registered for the server's own engines; a stored database has none.
#[derive(Clone, Default)]
pub struct Backends {
    config: Option<Arc<dyn Backend>>,
    monitor: Option<Arc<dyn Backend>>,
}

impl Backends {
    /// These backends with `backend` serving the databases of `engine`.
    pub fn with(mut self, engine: Engine, backend: Arc<dyn Backend>) -> Backends {
        match engine {
            Engine::Config => self.config = Some(backend),
            Engine::Monitor => self.monitor = Some(backend),
            Engine::Stored => {}
        }
        self
    }

    /// The backend serving the databases of `engine`: None for stored databases.
    pub fn of(&self, engine: Engine) -> Option<&dyn Backend> {
        match engine {
            Engine::Config => self.config.as_deref(),
            Engine::Monitor => self.monitor.as_deref(),
            Engine::Stored => None,
        }
    }

    fn all(&self) -> impl Iterator<Item = &dyn Backend> {
        self.config.iter().chain(&self.monitor).map(|b| b.as_ref())
    }
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

    /// The backend serving `dir` beyond its store, if any.
    pub fn backend(&self, dir: &Database) -> Option<&dyn Backend> {
        self.backends.of(dir.engine())
    }

    /// Whether a read based at `raw_base` needs [`ServerState::prepare_read`] first: a cheap test
    /// made before every search and compare, so that the usual read awaits nothing.
    pub fn read_needs_preparing(&self, raw_base: &[u8]) -> bool {
        self.backends
            .all()
            .any(|backend| backend.read_needs_preparing(raw_base))
    }

    /// Brings every database a read based at `raw_base` may find up to date (cn=Monitor's entries).
    pub async fn prepare_read(self: &Arc<Self>, raw_base: &[u8]) {
        for backend in self.backends.all() {
            if backend.read_needs_preparing(raw_base) {
                backend.prepare_read(self).await;
            }
        }
    }

    /// Runs a client's write of `dir` through its backend: the store's write pipeline for a stored
    /// database (not boxed: the common path), the registered backend's `update` otherwise.
    pub async fn update(
        self: &Arc<Self>,
        dir: &Database,
        op: WriteOp,
        who: &Who,
        ctl: &WriteControls,
    ) -> Result<Vec<Control>, OpError> {
        match self.backend(dir) {
            Some(backend) => {
                // A backend of its own (cn=config) has no No-Op, as slapd's back-config: critical,
                // the control is unavailable; else it is ignored and the write made.
                let ctl = match ctl.no_op {
                    None => Cow::Borrowed(ctl),
                    Some(true) => {
                        return Err(LdapError::new(
                            ResultCode::UnavailableCriticalExtension,
                            "critical extension is unavailable",
                        )
                        .into())
                    }
                    Some(false) => Cow::Owned(WriteControls {
                        no_op: None,
                        ..ctl.clone()
                    }),
                };
                backend.update(self, dir, op, who, &ctl).await
            }
            None => dir.update(op, who, ctl).await,
        }
    }

    /// slapd answers noSuchObject, without a matched DN, for names outside every naming context.
    pub fn outside_naming_context(&self, _ndn: &NormDn) -> LdapError {
        LdapError::new(ResultCode::NoSuchObject, "")
    }

    /// slapd's answer to a search (`scope` Some) or compare carrying RFC 6171's Don't Use Copy control
    /// on a syncrepl consumer's database, None on an original (which answers as usual). A search is
    /// referred to the database's `updateref`, else to the default referral, naming `dn` and the
    /// scope; without either, and always for a compare, it is unwillingToPerform.
    pub fn copy_refused(
        &self,
        dir: &Database,
        dn: &str,
        scope: Option<canopy_proto::SearchScope>,
    ) -> Option<OpError> {
        let update_ref = dir.update_ref()?;
        let Some(scope) = scope else {
            return Some(LdapError::new(ResultCode::UnwillingToPerform, "copy not used").into());
        };
        Some(match update_ref.or(self.config.referral.as_deref()) {
            Some(url) => OpError::Referral(canopy_directory::referral::default_referral(
                url,
                dn,
                Some(scope),
            )),
            None => LdapError::new(
                ResultCode::UnwillingToPerform,
                "copy not used; no referral information available",
            )
            .into(),
        })
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
