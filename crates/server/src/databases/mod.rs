//! The databases of one server and the one place that routes a DN to its database (longest suffix),
//! with each database's frontend settings (access rules) beside its backend.
//!
//! Every operation finds its database here; cn=config and cn=Monitor become databases of their own in
//! this registry. The root DSE and cn=Subschema are answered by `special` before routing.

use std::borrow::Cow;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;

use canopy_core::{Entry, LdapError};
use canopy_directory::dynlist::Dynlist;
use canopy_directory::search_loop::ReadHook;
use canopy_directory::{Directory, OpError, WriteOp, WriteRequest};
use canopy_proto::oid::{CONTROL_ACCOUNT_USABILITY, CONTROL_PASSWORD_POLICY};
use canopy_proto::sort::{CONTROL_SORT_REQUEST, CONTROL_VLV_REQUEST};
use canopy_proto::{Change, Control, Dn, ProtocolOp, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::access::Who;
use crate::acl::{Acl, Guarded};
use crate::limits::Limits;

mod guard;
mod reading;

use guard::AccessGuard;
pub use guard::WriteControls;
pub use reading::{EntryAnswer, EntryReading, ReadAttributes};

/// A future returned through a trait object (a [`FrontHook`]'s, a `state::Backend`'s).
pub type Pending<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// An overlay's part in the frontend, as slapd's overlays wrap the backend's calls: what it checks of
/// an operation as the client sent it (passwords still in cleartext), before the write reaches the
/// backend, what it adds to a simple bind, and what a session it restricted may still do. The
/// operations call every hook of their database ([`Database::front_hooks`]) and name none. Every
/// default does nothing.
pub trait FrontHook: Send + Sync {
    /// Whether the hook's overlay serves the extended operation `oid` (`crate::extensions` runs it).
    fn serves_extended(&self, _oid: &str) -> bool {
        false
    }

    /// Whether the hook serves the request control `oid` (a critical one that no database's hook
    /// serves is an unavailable critical extension).
    fn serves_control(&self, _oid: &str) -> bool {
        false
    }

    /// The response control this hook attaches, for the request control `oid` (one it serves), to
    /// the search result entry `entry` of `dir` (as stored) sent to `who`; None for no control.
    fn entry_control(
        &self,
        _dir: &Database,
        _who: &Who,
        _entry: &Entry,
        _oid: &str,
    ) -> Option<Control> {
        None
    }

    /// The answer of this hook to the search request control `control` (one it serves) whose
    /// response control on each entry reads other entries (slapd's deref overlay), its value checked
    /// against `dir`'s schema: an error is the search's result. None: nothing to answer.
    fn entry_answer(
        &self,
        _dir: &Database,
        _control: &Control,
    ) -> Result<Option<Box<dyn EntryAnswer>>, LdapError> {
        Ok(None)
    }

    /// Whether the hook changes how search result entries are presented ([`FrontHook::present`]).
    fn presents(&self) -> bool {
        false
    }

    /// Changes `entry` (as stored, about to go out as a search result) the way the hook presents it
    /// (slapd's valsort overlay sorts values); whether anything changed.
    fn present(&self, _dir: &Database, _entry: &mut Entry) -> bool {
        false
    }

    /// The limits under which the database sorts search results (slapd's sssvlv overlay): None
    /// when the hook does not sort.
    fn sort_policy(&self) -> Option<&Arc<crate::sorting::SortPolicy>> {
        None
    }

    /// Whether the hook may answer requests in the database's place ([`FrontHook::answer`]).
    fn answers(&self) -> bool {
        false
    }

    /// An answer the hook gives in the database's place, before the database sees the request (slapd's
    /// retcode overlay): a wait, then a result or nothing (the request goes on). None: the request
    /// goes on at once.
    fn answer(&self, _dir: &Database, _asked: &Asked<'_>) -> Option<Answer> {
        None
    }

    /// An entry about to be added to `dir` by `who`; a refusal may leave its control in `slot`.
    fn check_add(
        &self,
        _dir: &Database,
        _who: &Who,
        _entry: &Entry,
        _slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        Ok(())
    }

    /// A modify of `ndn` in `dir` with `changes`.
    fn check_modify(
        &self,
        _dir: &Database,
        _who: &Who,
        _ndn: &NormDn,
        _changes: &[Change],
        _slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        Ok(())
    }

    /// A new password for `ndn` set by the Password Modify operation (`with_old`: the old one was given).
    fn check_password(
        &self,
        _dir: &Database,
        _who: &Who,
        _ndn: &NormDn,
        _new: &[u8],
        _with_old: bool,
        _slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        Ok(())
    }

    /// A simple bind as `ndn` with `credentials`, before the password is checked: the part of them to
    /// check as the password (slapd's otp overlay takes a one-time code off the end and checks it
    /// here), or the error that fails the bind. None: the hook leaves the credentials alone.
    fn bind_password<'a>(
        &'a self,
        _dir: &'a Database,
        _ndn: &'a NormDn,
        _credentials: &'a [u8],
    ) -> Pending<'a, Result<Option<Vec<u8>>, LdapError>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// A simple bind as `ndn` whose password did (`verified`) or did not match, before it is
    /// answered; `requested`: the client sent the hook's control. None when the hook has no terms
    /// for this entry.
    fn bind<'a>(
        &'a self,
        _dir: &'a Database,
        _ndn: &'a NormDn,
        _verified: bool,
        _requested: bool,
    ) -> Pending<'a, Result<Option<BindTerms>, LdapError>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// What a session whose bind this hook restricted ([`BindTerms::restricts`]) may do with `op`;
    /// `requested`: the request carries the hook's control.
    fn restriction(
        &self,
        _op: &ProtocolOp,
        _who: &Who,
        _databases: &Databases,
        _requested: bool,
    ) -> Restriction {
        Restriction::Allowed
    }
}

/// A request as [`FrontHook::answer`] sees it: its kind, its target (a search's base) and a search's
/// scope, with the server's default referral (`referral`).
pub struct Asked<'a> {
    pub kind: canopy_proto::RequestKind,
    pub dn: &'a Dn,
    pub ndn: &'a NormDn,
    pub scope: Option<canopy_proto::SearchScope>,
    pub default_referral: Option<&'a str>,
}

/// What a [`FrontHook`] answers in the database's place: wait `delay`, then send `result` (the
/// response of the request's kind), or with no result let the request go on.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub delay: std::time::Duration,
    pub result: Option<canopy_proto::LdapResult>,
}

/// What a [`FrontHook`] makes of a simple bind.
#[derive(Debug, Default)]
pub struct BindTerms {
    /// Response controls of the bind, success or not.
    pub controls: Vec<Control>,
    /// The bind fails (invalidCredentials) although its password matched.
    pub refused: bool,
    /// The session may only do what [`FrontHook::restriction`] allows until it lifts the restriction.
    pub restricts: bool,
}

/// What a restricted session may do with a request.
pub enum Restriction {
    Allowed,
    /// Allowed, and its success lifts the restriction.
    Lifts,
    /// Refused with this error and these response controls.
    Refused(LdapError, Vec<Control>),
}

/// Where an operation leaves a response control, success or not (an error result carries no controls
/// of its own): the password policy's. Shared by the clones of one request's controls. Only a request
/// with the control gets a slot ([`ControlSlot::new`]); the default one, which the other requests
/// carry, allocates nothing and keeps nothing (no operation sets it: it is passed to the checks only
/// when the control was sent).
#[derive(Debug, Clone, Default)]
pub struct ControlSlot(Option<std::sync::Arc<std::sync::Mutex<Option<Control>>>>);

impl ControlSlot {
    /// A slot that keeps the control set into it.
    pub fn new() -> ControlSlot {
        ControlSlot(Some(Default::default()))
    }

    pub fn set(&self, control: Control) {
        if let Some(slot) = &self.0 {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(control);
        }
    }

    pub fn take(&self) -> Option<Control> {
        self.0
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// Request controls that only a frontend hook serves.
const HOOK_CONTROLS: [&str; 5] = [
    CONTROL_PASSWORD_POLICY,
    CONTROL_ACCOUNT_USABILITY,
    CONTROL_SORT_REQUEST,
    CONTROL_VLV_REQUEST,
    canopy_proto::oid::CONTROL_DEREF,
];

/// One database as the frontend sees it: the backend, the access rules that guard it, its read hook
/// (the dynlist overlay) and the overlays' parts in the frontend.
#[derive(Clone)]
pub struct Database {
    backend: Directory,
    acl: Arc<Acl>,
    dynlist: Option<Arc<Dynlist>>,
    /// The dds overlay's settings: the Refresh operation and the expiry task (crate::dds).
    dds: Option<Arc<canopy_directory::overlay::dds::Config>>,
    /// The overlays' parts in the frontend, in configuration order.
    front_hooks: Arc<[Arc<dyn FrontHook>]>,
    /// Whether one of them presents search result entries otherwise (asked per entry sent).
    presents: bool,
    /// Clients may not write it: every update is unwillingToPerform.
    read_only: bool,
    /// cn=Monitor: written by the server itself, not a naming context of the root DSE.
    monitor: bool,
    /// cn=config: written only through `config_change`, the root DSE's configContext.
    config: bool,
    /// An accesslog overlay's log database: written only by its log writer, not a configured database.
    log: bool,
    /// The root DN: access rules and limits do not apply to it in this database.
    root: Option<Root>,
    /// The search limits of this database (the server-wide ones unless it sets its own).
    limits: Arc<Limits>,
    /// Glued into, or kept apart from, the database whose suffix contains its own.
    subordinate: Subordinate,
    /// The directory of its LMDB environment.
    directory: PathBuf,
    /// A syncrepl consumer's database (slapd's shadow): clients' writes are referred to the `updateref`
    /// URL (unwillingToPerform without one); only the consumer writes it.
    shadow: Option<Option<String>>,
}

/// Which backend serves a database beyond its store (`state::Backends`): none for a stored
/// database, the server's own for cn=config and cn=Monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Stored,
    Config,
    Monitor,
}

/// A database's root DN and password.
#[derive(Clone)]
struct Root {
    ndn: NormDn,
    /// Cleartext or a `{SCHEME}` hash; empty: no simple bind as the root DN through this database.
    password: Arc<Vec<u8>>,
}

impl Database {
    pub fn new(backend: Directory, acl: Acl) -> Database {
        Database {
            backend,
            acl: Arc::new(acl),
            dynlist: None,
            dds: None,
            front_hooks: Arc::new([]),
            presents: false,
            read_only: false,
            monitor: false,
            config: false,
            log: false,
            root: None,
            limits: Arc::new(Limits::default()),
            subordinate: Subordinate::No,
            directory: PathBuf::new(),
            shadow: None,
        }
    }

    /// A database the server writes itself and clients only read (cn=Monitor).
    pub fn read_only(backend: Directory, acl: Acl) -> Database {
        Database {
            read_only: true,
            monitor: true,
            ..Database::new(backend, acl)
        }
    }

    /// This database with its settings from the configuration: root DN and password, search limits,
    /// read-only flag, glue and directory.
    pub fn with_settings(
        mut self,
        root: Option<(NormDn, Vec<u8>)>,
        limits: Limits,
        read_only: bool,
        subordinate: Subordinate,
        directory: PathBuf,
    ) -> Database {
        self.root = root.map(|(ndn, password)| Root {
            ndn,
            password: Arc::new(password),
        });
        self.limits = Arc::new(limits);
        self.read_only = read_only;
        self.subordinate = subordinate;
        self.directory = directory;
        self
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// cn=Monitor, which the root DSE lists as monitorContext rather than as a naming context.
    pub fn is_monitor(&self) -> bool {
        self.monitor
    }

    /// This database as the cn=config database.
    pub fn as_config(mut self) -> Database {
        self.config = true;
        self
    }

    /// cn=config, which the root DSE lists as configContext rather than as a naming context.
    pub fn is_config(&self) -> bool {
        self.config
    }

    /// The engine whose backend serves this database.
    pub fn engine(&self) -> Engine {
        if self.config {
            Engine::Config
        } else if self.monitor {
            Engine::Monitor
        } else {
            Engine::Stored
        }
    }

    /// This database as an accesslog overlay's log database.
    pub fn as_log(mut self) -> Database {
        self.log = true;
        self
    }

    /// A database of the configuration (numbered 1, 2, ... as `[[database]]` tables and
    /// `olcDatabase={N}mdb` are): not cn=Monitor, cn=config or an accesslog overlay's log database.
    pub fn is_configured(&self) -> bool {
        !(self.monitor || self.config || self.log)
    }

    /// This database guarded by `acl` instead of its access rules.
    /// This database under `schema` (cn=schema changed live): the same store under another handle
    /// (`Directory::with_schema`); operations holding the old handle finish under the old schema.
    pub fn with_schema(mut self, schema: Arc<Schema>) -> Database {
        self.backend = self.backend.with_schema(schema);
        self
    }

    /// This database through another handle of its store (write hooks changed live).
    pub fn with_backend(mut self, backend: Directory) -> Database {
        self.backend = backend;
        self
    }

    pub fn with_acl(mut self, acl: Acl) -> Database {
        self.acl = Arc::new(acl);
        self
    }

    pub fn subordinate(&self) -> Subordinate {
        self.subordinate
    }

    pub fn directory(&self) -> &std::path::Path {
        &self.directory
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The normalized root DN of this database, if it has one.
    pub fn root_ndn(&self) -> Option<&NormDn> {
        self.root.as_ref().map(|r| &r.ndn)
    }

    /// The root password, when `ndn` is this database's root DN and it has one.
    pub fn root_password(&self, ndn: &NormDn) -> Option<&[u8]> {
        self.root
            .as_ref()
            .filter(|r| r.ndn == *ndn && !r.password.is_empty())
            .map(|r| r.password.as_slice())
    }

    /// `who` as this database sees it: the root DN of a database is root only in that database (as
    /// slapd's be_isroot); everybody else is subject to its access rules and limits.
    pub fn requester<'a>(&self, who: &'a Who) -> Cow<'a, Who> {
        let root = who.ndn.is_some() && who.ndn.as_ref() == self.root_ndn();
        if root == who.root {
            Cow::Borrowed(who)
        } else {
            Cow::Owned(Who {
                root,
                ..who.clone()
            })
        }
    }

    /// This database as a syncrepl consumer's, whose client writes go to `update_ref`.
    pub fn with_shadow(mut self, update_ref: Option<String>) -> Database {
        self.shadow = Some(update_ref);
        self
    }

    /// Whether a syncrepl consumer keeps this database (cn=Monitor's monitorIsShadow).
    pub fn is_shadow(&self) -> bool {
        self.shadow.is_some()
    }

    /// slapd's answer to a client's write on a consumer's database: a referral to `updateref`, or
    /// unwillingToPerform without one. The root DN gets it too: only the replication session writes.
    /// The URL names the target `dn` when it names no DN itself, as slapd's referral does.
    pub fn refuse_shadow_write(&self, dn: &Dn) -> Result<(), OpError> {
        match &self.shadow {
            None => Ok(()),
            Some(Some(url)) => {
                let after_scheme = url.split_once("://").map_or("", |(_, rest)| rest);
                let url = match after_scheme.split_once('/') {
                    Some((_, path)) if !path.is_empty() => url.clone(),
                    _ => format!(
                        "{}/{}",
                        url.trim_end_matches('/'),
                        canopy_proto::url::percent_encode(&dn.to_string())
                    ),
                };
                Err(OpError::Referral(canopy_directory::Referral {
                    matched: String::new(),
                    urls: vec![url],
                }))
            }
            Some(None) => Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "shadow context; no update referral",
            )
            .into()),
        }
    }

    /// The `updateref` a consumer's database refers client writes to: None on an original, Some(None)
    /// on a consumer without one.
    pub fn update_ref(&self) -> Option<Option<&str>> {
        self.shadow.as_ref().map(Option::as_deref)
    }

    /// This database with the dynlist overlay's expansion on its reads (the backend's read hook).
    pub fn with_dynlist(mut self, dynlist: Option<Dynlist>) -> Database {
        self.dynlist = dynlist.map(Arc::new);
        self
    }

    /// This database with the dds overlay's settings.
    pub fn with_dds(mut self, dds: Option<canopy_directory::overlay::dds::Config>) -> Database {
        self.dds = dds.map(Arc::new);
        self
    }

    /// The dds overlay's settings, when the database has one.
    pub fn dds(&self) -> Option<&canopy_directory::overlay::dds::Config> {
        self.dds.as_deref()
    }

    /// The read hook a search or compare hands the backend: None with ManageDsaIT, which asks for
    /// entries as stored (as slapd).
    pub fn read_hook(&self, manage_dsa_it: bool) -> Option<&dyn ReadHook> {
        self.dynlist
            .as_deref()
            .filter(|_| !manage_dsa_it)
            .map(|hook| hook as &dyn ReadHook)
    }

    /// This database with the overlays' parts in the frontend.
    pub fn with_front_hooks(mut self, hooks: Vec<Arc<dyn FrontHook>>) -> Database {
        self.presents = hooks.iter().any(|hook| hook.presents());
        self.front_hooks = hooks.into();
        self
    }

    /// The overlays' parts in the frontend, in configuration order.
    pub fn front_hooks(&self) -> impl Iterator<Item = &Arc<dyn FrontHook>> {
        self.front_hooks.iter()
    }

    /// The limits under which this database sorts search results, when one of its hooks sorts.
    pub fn sort_policy(&self) -> Option<&Arc<crate::sorting::SortPolicy>> {
        self.front_hooks.iter().find_map(|hook| hook.sort_policy())
    }

    /// The response controls the hooks attach to the search result `entry` sent to `who`, for the
    /// request controls `oids` ([`crate::reqctl::RequestControls::entry_controls`]).
    pub fn entry_controls(&self, who: &Who, entry: &Entry, oids: &[&str]) -> Vec<Control> {
        oids.iter()
            .filter_map(|oid| {
                self.front_hooks
                    .iter()
                    .filter(|hook| hook.serves_control(oid))
                    .find_map(|hook| hook.entry_control(self, who, entry, oid))
            })
            .collect()
    }

    /// A search result entry as the hooks present it, re-encoded in the stored form; None when no
    /// hook changes it (the usual case, decided without decoding when no hook presents).
    pub fn present(&self, stored: &canopy_core::wire::StoredEntry<'_>) -> Option<Vec<u8>> {
        if !self.presents {
            return None;
        }
        let mut entry = stored.to_entry().ok()?;
        let mut changed = false;
        for hook in self.front_hooks.iter().filter(|hook| hook.presents()) {
            changed |= hook.present(self, &mut entry);
        }
        changed.then(|| {
            let mut out = Vec::new();
            canopy_core::wire::encode_entry(self.backend.schema(), &entry, &mut out);
            out
        })
    }

    /// Every hook's check of an entry about to be added.
    pub fn check_add(
        &self,
        who: &Who,
        entry: &Entry,
        slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        self.front_hooks
            .iter()
            .try_for_each(|hook| hook.check_add(self, who, entry, slot))
    }

    /// Every hook's check of a modify.
    pub fn check_modify(
        &self,
        who: &Who,
        ndn: &NormDn,
        changes: &[Change],
        slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        self.front_hooks
            .iter()
            .try_for_each(|hook| hook.check_modify(self, who, ndn, changes, slot))
    }

    /// Every hook's check of a password set by the Password Modify operation.
    pub fn check_password(
        &self,
        who: &Who,
        ndn: &NormDn,
        new: &[u8],
        with_old: bool,
        slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        self.front_hooks
            .iter()
            .try_for_each(|hook| hook.check_password(self, who, ndn, new, with_old, slot))
    }

    pub fn backend(&self) -> &Directory {
        &self.backend
    }

    pub fn acl(&self) -> &Acl {
        &self.acl
    }

    /// Refuses a client's write to a read-only database: slapd's answer to `readonly on`, and to a write
    /// in cn=Monitor.
    pub fn check_writable(&self) -> Result<(), LdapError> {
        match (self.read_only, self.monitor) {
            (false, _) => Ok(()),
            (true, true) => Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "operation not supported within namingContext",
            )),
            (true, false) => Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "operation restricted",
            )),
        }
    }

    /// Runs a write by `who` in this database and returns once it is durable, with the response controls
    /// of `ctl`'s pre-read and post-read. Access, ManageDsaIT (without it a referral object at the target
    /// answers with its referral), the assertion and both reads are all decided inside the write's
    /// transaction, so they are atomic with it.
    pub async fn update(
        &self,
        op: WriteOp,
        who: &Who,
        ctl: &WriteControls,
    ) -> Result<Vec<Control>, OpError> {
        self.update_with_verdict(op, who, ctl, None).await
    }

    /// [`Database::update`] whose write, once access control allowed it, fails with `verdict` when
    /// there is one (cn=config: a change refused by validation is reported only to who may make it).
    pub async fn update_with_verdict(
        &self,
        op: WriteOp,
        who: &Who,
        ctl: &WriteControls,
        verdict: Option<LdapError>,
    ) -> Result<Vec<Control>, OpError> {
        let (request, guard) = self.write_request(op, who, ctl, verdict)?;
        self.backend.write(request).await?;
        Ok(guard.read_controls())
    }

    /// The write `op` by `who` as this database's writer runs it, with the guard that decides access
    /// and collects the read controls inside the write's transaction.
    fn write_request(
        &self,
        op: WriteOp,
        who: &Who,
        ctl: &WriteControls,
        verdict: Option<LdapError>,
    ) -> Result<(WriteRequest, Arc<AccessGuard>), OpError> {
        self.check_writable()?;
        let target = match &op {
            WriteOp::Add(entry) => &entry.dn,
            WriteOp::Delete { dn, .. } | WriteOp::Modify { dn, .. } => dn,
            WriteOp::ModifyDn(m) => &m.dn,
        };
        self.refuse_shadow_write(target)?;
        let who = self.requester(who);
        let who = who.as_ref();
        let guard = Arc::new(AccessGuard::new(
            self.clone(),
            who.clone(),
            ctl.clone(),
            verdict,
        ));
        let request = WriteRequest {
            op,
            guard: guard.clone(),
        };
        Ok((request, guard))
    }

    /// Runs the writes `ops` (each with its requester and controls) in one transaction of this
    /// database: all are stored or, when one fails, none, which the error names by its position.
    /// `wrap` may put each write's guard inside one of its own (RFC 5805's deferred checks).
    pub async fn update_all(
        &self,
        ops: Vec<(WriteOp, Who, WriteControls)>,
        wrap: impl Fn(Arc<dyn canopy_directory::Guard>) -> Arc<dyn canopy_directory::Guard>,
    ) -> Result<(), (Option<usize>, OpError)> {
        let mut requests = Vec::with_capacity(ops.len());
        for (index, (op, who, ctl)) in ops.into_iter().enumerate() {
            let (mut request, _) = self
                .write_request(op, &who, &ctl, None)
                .map_err(|e| (Some(index), e))?;
            request.guard = wrap(request.guard);
            requests.push(request);
        }
        self.backend
            .write_all(requests)
            .await
            .map_err(|e| (e.index, e.error))
    }
}

impl Guarded for Database {
    fn acl(&self) -> &Acl {
        &self.acl
    }
}

/// A database is used through its backend's reads (schema, lookups, snapshots).
impl Deref for Database {
    type Target = Directory;

    fn deref(&self) -> &Directory {
        &self.backend
    }
}

/// What routing needs to know of a database besides its view: whether it is glued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subordinate {
    /// A naming context of its own (the first database always is).
    #[default]
    No,
    /// Inside another database's suffix, glued into its searches.
    Glued,
    /// Inside another database's suffix, kept apart.
    Apart,
}

/// Every database of the server, in configuration order.
#[derive(Clone)]
pub struct Databases {
    list: Vec<Database>,
    /// Whether a hook of some database answers requests in its place (asked per request).
    answering: bool,
}

impl Databases {
    /// A critical request control that only a frontend hook serves, where no database's hook serves
    /// it, is an unavailable critical extension, as slapd answers without the overlay's module.
    pub fn require_hooks(&self, controls: &[Control]) -> Result<(), LdapError> {
        for control in controls.iter().filter(|c| c.critical) {
            let oid = control.oid.as_str();
            let served = || {
                self.iter()
                    .any(|db| db.front_hooks().any(|hook| hook.serves_control(oid)))
            };
            if HOOK_CONTROLS.contains(&oid) && !served() {
                return Err(LdapError::new(
                    ResultCode::UnavailableCriticalExtension,
                    "critical extension is unavailable",
                ));
            }
        }
        Ok(())
    }

    /// The request controls that only a frontend hook serves (`HOOK_CONTROLS`) and some database's
    /// hook does, for the root DSE's supportedControl.
    pub fn hook_controls(&self) -> Vec<&'static str> {
        HOOK_CONTROLS
            .into_iter()
            .filter(|oid| {
                self.iter()
                    .any(|db| db.front_hooks().any(|hook| hook.serves_control(oid)))
            })
            .collect()
    }

    /// What a frontend hook of the target's database answers to `op` in the database's place
    /// ([`FrontHook::answer`]); None when no hook answers (the usual case, decided without looking at
    /// the request when no database has such a hook).
    pub fn answer(&self, op: &ProtocolOp, default_referral: Option<&str>) -> Option<Answer> {
        use canopy_proto::RequestKind as K;
        if !self.answering {
            return None;
        }
        let (kind, raw, scope) = match op {
            ProtocolOp::SearchRequest(r) => (K::Search, &r.base, Some(r.scope)),
            ProtocolOp::CompareRequest(r) => (K::Compare, &r.dn, None),
            ProtocolOp::AddRequest(r) => (K::Add, &r.dn, None),
            ProtocolOp::DelRequest(dn) => (K::Delete, dn, None),
            ProtocolOp::ModifyRequest(r) => (K::Modify, &r.dn, None),
            ProtocolOp::ModifyDnRequest(r) => (K::ModifyDn, &r.dn, None),
            _ => return None,
        };
        let (dn, ndn) = self.normalize(raw).ok()?;
        let db = self.route(&ndn)?;
        let asked = Asked {
            kind,
            dn: &dn,
            ndn: &ndn,
            scope,
            default_referral,
        };
        db.front_hooks()
            .filter(|hook| hook.answers())
            .find_map(|hook| hook.answer(db, &asked))
    }

    /// The registry of `list`; the first is the default database. Panics on an empty list, which
    /// configuration loading never produces.
    pub fn new(list: Vec<Database>) -> Databases {
        assert!(!list.is_empty(), "a server has at least one database");
        let answering = list
            .iter()
            .any(|db| db.front_hooks().any(|hook| hook.answers()));
        Databases { list, answering }
    }

    /// The database holding `ndn`: the one with the longest suffix that is a suffix of `ndn`.
    pub fn route(&self, ndn: &NormDn) -> Option<&Database> {
        self.list
            .iter()
            .filter(|db| db.holds(ndn))
            .max_by_key(|db| db.suffix().rdns().len())
    }

    /// The databases glued into a search of `base` (held by `dir`) with `scope`, each with the base and
    /// scope its part of the search takes, in configuration order (slapd's glue: a subtree search
    /// continues at each glued database's suffix below the base, a one-level search reads the suffix
    /// entry of each glued database just below the base; base and children scopes stay in `dir`).
    pub fn glued(
        &self,
        dir: &Database,
        base: &NormDn,
        scope: canopy_proto::SearchScope,
    ) -> Vec<(&Database, canopy_proto::SearchScope)> {
        use canopy_proto::SearchScope;
        let part_scope = match scope {
            SearchScope::WholeSubtree => SearchScope::WholeSubtree,
            SearchScope::SingleLevel => SearchScope::BaseObject,
            _ => return Vec::new(),
        };
        self.list
            .iter()
            .filter(|db| db.subordinate == Subordinate::Glued)
            .filter(|db| {
                let suffix = db.suffix();
                let in_scope = match scope {
                    SearchScope::SingleLevel => suffix.parent().as_ref() == Some(base),
                    _ => base.is_suffix_of(suffix) && suffix != base,
                };
                in_scope && self.glued_chain_reaches(db, dir)
            })
            .map(|db| (db, part_scope))
            .collect()
    }

    /// Whether `db` is glued, directly or through glued databases between, into `top`.
    fn glued_chain_reaches(&self, db: &Database, top: &Database) -> bool {
        let mut current = db;
        // Each step goes to a strictly shorter suffix, so the walk ends.
        for _ in 0..self.list.len() {
            if current.subordinate != Subordinate::Glued {
                return false;
            }
            let Some(parent) = current.suffix().parent() else {
                return false;
            };
            let Some(outer) = self.route(&parent) else {
                return false;
            };
            if std::ptr::eq(outer, top) {
                return true;
            }
            current = outer;
        }
        false
    }

    /// Whether `ndn` is the root DN of some database (root only inside that one: `Database::requester`).
    pub fn is_root_dn(&self, ndn: &NormDn) -> bool {
        self.list.iter().any(|db| db.root_ndn() == Some(ndn))
    }

    /// The root password a simple bind as `ndn` is checked against: the one of the database holding
    /// `ndn` (as slapd routes a bind by its DN), else of any database whose root DN it is (a first
    /// database's root DN may lie outside its suffix).
    pub fn root_password(&self, ndn: &NormDn) -> Option<&[u8]> {
        self.route(ndn)
            .and_then(|db| db.root_password(ndn))
            .or_else(|| self.list.iter().find_map(|db| db.root_password(ndn)))
    }

    /// The first configured database.
    pub fn first(&self) -> &Database {
        // `new` refuses an empty list.
        &self.list[0]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Database> {
        self.list.iter()
    }

    /// The schema every database shares.
    pub fn schema(&self) -> &Arc<Schema> {
        self.first().schema()
    }

    /// Parses and normalizes a DN from a request, with slapd's result codes (the schema is shared, so
    /// any database normalizes alike).
    pub fn normalize(&self, raw: &[u8]) -> Result<(Dn, NormDn), LdapError> {
        self.first().normalize(raw)
    }

    /// [`Databases::normalize`], sharing the forms with the memo (`Directory::normalize_shared`).
    pub fn normalize_shared(&self, raw: &[u8]) -> Result<(Arc<Dn>, Arc<NormDn>), LdapError> {
        self.first().normalize_shared(raw)
    }
}
