//! One database: its store, schema, indexes and suffix, DN normalization, lookups, and answers kept per
//! snapshot; and its write pipeline (`pipeline`), which is part of it: a database holds its hooks and
//! every hook is handed the database.

pub mod pipeline;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use canopy_core::index::{IndexSpec, Plan};
use canopy_core::wire::StoredEntry;
use canopy_core::LdapError;
use canopy_mdb::{ReadOps, Store, StoreConfig, StoreError};
use canopy_proto::{Dn, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::error::store_error;
use crate::feed::Feed;
use crate::indexes::{class_plan, Indexes};
use crate::keys::dn_key;
use crate::view::{Snapshot, View};
use pipeline::Pipeline;

/// The database of one naming context.
#[derive(Clone)]
///
/// A handle is the database under one schema: [`Directory::with_schema`] makes another handle of the
/// same store under a new schema (cn=schema changed live), so an operation, and the write it queues,
/// read the one schema of the configuration snapshot they started in, with no lock on the way.
/// Likewise [`Directory::with_pipeline`] makes a handle with other write hooks (an overlay changed
/// live): a write runs the hooks of the handle its operation queued it with.
pub struct Directory {
    inner: Arc<Inner>,
    schema: Arc<Schema>,
    /// The hooks every write through this handle runs inside its transaction
    /// (docs/design/write-pipeline.md).
    pipeline: Arc<Pipeline>,
}

/// A handle that does not keep the database open (for background index builds), under the schema
/// and hooks of the handle that made it (the one that started the build).
pub(crate) struct WeakDirectory(Weak<Inner>, Arc<Schema>, Arc<Pipeline>);

impl WeakDirectory {
    pub(crate) fn upgrade(&self) -> Option<Directory> {
        self.0.upgrade().map(|inner| Directory {
            inner,
            schema: self.1.clone(),
            pipeline: self.2.clone(),
        })
    }
}

pub(crate) struct Inner {
    store: Store,
    /// The index sets (complete, maintained, wanted) and the builds (crate::indexes, crate::indexing).
    indexes: Indexes,
    suffix: NormDn,
    suffix_dn: Dn,
    memo: Mutex<Memo>,
    /// The server ID local CSNs carry (slapd's `serverID`).
    server_id: std::sync::atomic::AtomicU16,
    /// Multi-provider conflict records (tombstones, renamed DNs) are kept: `multiprovider = true`.
    multiprovider: std::sync::atomic::AtomicBool,
    /// Persistent sync searches following this database's changes (crate::feed).
    feed: Arc<Feed>,
    /// The schema every write must fit once the schema changed live (`Directory::fence_schema`):
    /// a write made through a handle of another schema uses only what this one defines.
    write_schema: std::sync::RwLock<Option<Arc<Schema>>>,
}

/// What operations ask again and again, kept between them: the last DN normalized (with its schema),
/// and answers that depend only on the database state, valid for the snapshot they were read in.
#[derive(Default)]
struct Memo {
    normalized: Option<Normalized>,
    /// `ReadTxn::snapshot_id` of the answers below.
    snapshot: usize,
    /// Existing entries that are neither aliases nor referral objects, by normalized DN.
    plain: Vec<(NormDn, u64)>,
    /// Indexed IDs of the classes every search checks, by [`Checked`] (None: not read yet).
    classes: [Option<Arc<[u64]>>; Checked::COUNT],
}

/// The object classes a search checks on every candidate it may send: their entries' IDs come from
/// the objectClass index once per snapshot ([`Directory::class_ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    Alias,
    Referral,
    Glue,
    Subentry,
}

impl Checked {
    const COUNT: usize = 4;

    /// The class's name.
    pub fn name(self) -> &'static str {
        match self {
            Checked::Alias => "alias",
            Checked::Referral => "referral",
            Checked::Glue => "glue",
            Checked::Subentry => "subentry",
        }
    }
}

/// The last DN normalized: the schema it was normalized under, the request's bytes and the result.
type Normalized = (Arc<Schema>, Box<[u8]>, Arc<Dn>, Arc<NormDn>);

/// Entries of `Memo::plain` kept at most: the few bases most searches use.
const PLAIN_MEMO: usize = 8;

impl Memo {
    /// The answers of `snapshot`, emptied when it is newer than theirs; None when it is older.
    fn of(&mut self, snapshot: usize) -> Option<&mut Memo> {
        if snapshot > self.snapshot {
            self.snapshot = snapshot;
            self.plain.clear();
            self.classes = Default::default();
        }
        (snapshot == self.snapshot).then_some(self)
    }
}

/// Where and how a database keeps its data, for [`Directory::open`] (the store's settings; the indexes
/// come from the configuration).
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The database directory (holds LMDB's `data.mdb` and `lock.mdb`); created if missing.
    pub path: PathBuf,
    /// The initial memory-map size. Address space only, not disk; the map grows by itself.
    pub initial_map_size: usize,
    /// fsync every group commit. `false`: a crash may lose the last commits (never the database's
    /// consistency); for imports and tests.
    pub durable: bool,
    /// LMDB reader-table slots: the most read transactions open at once across every process.
    pub max_readers: u32,
    /// Pages written in place in the map (as `slapadd -q` opens its database): for offline loads only.
    pub write_map: bool,
}

impl OpenOptions {
    /// The defaults for a database in `path`: 1 GiB initial map, durable, 1024 readers.
    pub fn new(path: impl Into<PathBuf>) -> OpenOptions {
        let StoreConfig {
            path,
            initial_map_size,
            durable,
            max_readers,
            write_map,
            indexes: _,
        } = StoreConfig::new(path);
        OpenOptions {
            path,
            initial_map_size,
            durable,
            max_readers,
            write_map,
        }
    }

    /// The store's settings, with a table for each of `indexes`.
    fn store_config(self, indexes: &[IndexSpec]) -> StoreConfig {
        StoreConfig {
            path: self.path,
            indexes: indexes.iter().map(|s| s.attr.clone()).collect(),
            initial_map_size: self.initial_map_size,
            durable: self.durable,
            max_readers: self.max_readers,
            write_map: self.write_map,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("suffix {0:?}: {1}")]
    Suffix(String, String),
    #[error("index on {0:?}: no such attribute type in the schema")]
    IndexAttribute(String),
    #[error("[[overlay]] {0:?}: {1}")]
    Overlay(&'static str, String),
    #[error("database: {0}")]
    Store(#[from] StoreError),
}

impl Directory {
    /// Opens the database of `suffix` where `options` says, with the write hooks of `pipeline` (see
    /// [`Pipeline::standard`]).
    pub fn open(
        schema: Arc<Schema>,
        suffix: &str,
        indexes: Vec<IndexSpec>,
        options: OpenOptions,
        pipeline: Pipeline,
    ) -> Result<Directory, OpenError> {
        let suffix_dn = Dn::parse(suffix.as_bytes())
            .map_err(|e| OpenError::Suffix(suffix.to_string(), e.to_string()))?;
        let suffix_n = schema
            .normalize_dn(&suffix_dn)
            .map_err(|e| OpenError::Suffix(suffix.to_string(), e.to_string()))?;
        for spec in &indexes {
            if schema.attribute_type(&spec.attr).is_none() {
                return Err(OpenError::IndexAttribute(spec.attr.clone()));
            }
        }
        pipeline
            .check(&schema, &suffix_n)
            .map_err(|(hook, e)| OpenError::Overlay(hook, e))?;
        let store = Store::open(options.store_config(&indexes))?;
        let indexes = Indexes::open(&schema, &indexes, &store.read()?)?;
        Ok(Directory {
            inner: Arc::new(Inner {
                store,
                indexes,
                suffix: suffix_n,
                suffix_dn,
                memo: Mutex::default(),
                server_id: Default::default(),
                multiprovider: Default::default(),
                feed: Arc::default(),
                write_schema: Default::default(),
            }),
            schema,
            pipeline: Arc::new(pipeline),
        })
    }

    /// This database under `schema` (a schema changed live, docs/design/config-tree.md): the same
    /// store, indexes and hooks; the handle `self` keeps reading its own schema. An index build runs
    /// under the schema of the handle that started it.
    pub fn with_schema(&self, schema: Arc<Schema>) -> Directory {
        Directory {
            inner: self.inner.clone(),
            schema,
            pipeline: self.pipeline.clone(),
        }
    }

    /// This database with the write hooks of `pipeline` (an overlay added, changed or removed live,
    /// docs/design/config-tree.md): the same store, indexes and schema. The hooks' settings are
    /// checked against this handle's schema and suffix first, as [`Directory::open`] does; a write
    /// queued through `self` keeps running `self`'s hooks.
    pub fn with_pipeline(&self, pipeline: Pipeline) -> Result<Directory, OpenError> {
        pipeline
            .check(&self.schema, &self.inner.suffix)
            .map_err(|(hook, e)| OpenError::Overlay(hook, e))?;
        Ok(Directory {
            inner: self.inner.clone(),
            schema: self.schema.clone(),
            pipeline: Arc::new(pipeline),
        })
    }

    /// Undoes a [`Directory::fence_schema`] whose change was refused: `schema` (the running one)
    /// is the one writes must fit again.
    pub fn unfence_schema(&self, schema: Arc<Schema>) {
        self.set_write_schema(schema);
    }

    /// Makes `schema` the one writes must fit, from the next write on.
    pub(crate) fn set_write_schema(&self, schema: Arc<Schema>) {
        *self
            .inner
            .write_schema
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(schema);
    }

    /// The fenced schema when it is not this handle's own (see [`Directory::fence_schema`]).
    pub(crate) fn stale_schema_fence(&self) -> Option<Arc<Schema>> {
        let fence = self
            .inner
            .write_schema
            .read()
            .unwrap_or_else(|e| e.into_inner());
        fence
            .as_ref()
            .filter(|f| !Arc::ptr_eq(f, &self.schema))
            .cloned()
    }

    /// Whether two handles are the same database (whatever their schemas).
    pub fn same_database(&self, other: &Directory) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn index_state(&self) -> &Indexes {
        &self.inner.indexes
    }

    pub(crate) fn downgrade(&self) -> WeakDirectory {
        WeakDirectory(
            Arc::downgrade(&self.inner),
            self.schema.clone(),
            self.pipeline.clone(),
        )
    }

    /// The server ID this database's local writes stamp into their CSNs.
    pub fn server_id(&self) -> u16 {
        self.inner
            .server_id
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the server ID (0–4095) of later local writes, once at start.
    pub fn set_server_id(&self, sid: u16) {
        self.inner
            .server_id
            .store(sid & 0xfff, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether this database is one provider of several (`multiprovider = true`): only then does it
    /// keep the records of conflict rules 3 and 4 (tombstones, renamed DNs; docs/design/replication.md),
    /// which a single provider and its consumers do not need and which are never trimmed.
    pub fn multiprovider(&self) -> bool {
        self.inner
            .multiprovider
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the multi-provider mode, once at start.
    pub fn set_multiprovider(&self, on: bool) {
        self.inner
            .multiprovider
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The change feed persistent sync searches subscribe to.
    pub fn feed(&self) -> &Arc<Feed> {
        &self.inner.feed
    }

    pub fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }
    pub fn store(&self) -> &Store {
        &self.inner.store
    }
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
    pub fn suffix(&self) -> &NormDn {
        &self.inner.suffix
    }
    pub fn suffix_dn(&self) -> &Dn {
        &self.inner.suffix_dn
    }

    /// The ID of the entry `ndn` names: 0 for the root of a database whose suffix is empty (slapd's
    /// "DIT root" of `suffix ""`: a virtual entry above the top entries, which are its children), None
    /// when no entry has that name.
    pub fn id_in(&self, txn: &impl ReadOps, ndn: &NormDn) -> Result<Option<u64>, StoreError> {
        if ndn.is_root() && self.suffix().is_root() {
            return Ok(Some(0));
        }
        txn.get_id(&dn_key(ndn))
    }

    /// Parses and normalizes a DN from a request, with the result codes slapd gives. The returned `Dn` is
    /// slapd's "pretty" form: attribute types by their canonical schema name, values as the client wrote them.
    pub fn normalize(&self, raw: &[u8]) -> Result<(Dn, NormDn), LdapError> {
        let (dn, ndn) = self.normalize_shared(raw)?;
        Ok((Arc::unwrap_or_clone(dn), Arc::unwrap_or_clone(ndn)))
    }

    /// [`Directory::normalize`] without a copy: the forms are shared with the memo of the last DN
    /// normalized, which a search's base usually is (the same suffix again and again).
    pub fn normalize_shared(&self, raw: &[u8]) -> Result<(Arc<Dn>, Arc<NormDn>), LdapError> {
        if let Some((under, last, dn, ndn)) = &self.memo().normalized {
            if **last == *raw && Arc::ptr_eq(under, &self.schema) {
                return Ok((Arc::clone(dn), Arc::clone(ndn)));
            }
        }
        let (dn, ndn) = self.normalize_anew(raw)?;
        let (dn, ndn) = (Arc::new(dn), Arc::new(ndn));
        self.memo().normalized = Some((
            self.schema.clone(),
            raw.into(),
            Arc::clone(&dn),
            Arc::clone(&ndn),
        ));
        Ok((dn, ndn))
    }

    fn memo(&self) -> MutexGuard<'_, Memo> {
        self.inner
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The ID of the entry `ndn` when it exists and is neither an alias nor a referral object, as
    /// remembered for the snapshot `txn` reads ([`Directory::remember_plain`]); None when not known.
    pub(crate) fn known_plain(&self, txn: &Snapshot, ndn: &NormDn) -> Option<u64> {
        let mut memo = self.memo();
        let memo = memo.of(txn.id())?;
        memo.plain.iter().find(|(n, _)| n == ndn).map(|(_, id)| *id)
    }

    /// Notes that in the snapshot of `txn`, entry `id` named `ndn` is neither an alias nor a referral.
    pub(crate) fn remember_plain(&self, txn: &Snapshot, ndn: &NormDn, id: u64) {
        let mut memo = self.memo();
        if let Some(memo) = memo.of(txn.id()) {
            if memo.plain.len() >= PLAIN_MEMO {
                memo.plain.remove(0);
            }
            memo.plain.push((ndn.clone(), id));
        }
    }

    /// The indexed IDs (ascending) of the entries of the checked class `class`, read once per
    /// snapshot; None when objectClass is not indexed.
    pub fn class_ids(
        &self,
        txn: &impl crate::View,
        class: Checked,
    ) -> Result<Option<Arc<[u64]>>, LdapError> {
        let [ids] = self.classes_ids(txn, [Some(class)])?;
        Ok(ids)
    }

    /// [`Directory::class_ids`] of each class wanted (None where none is), under one look at the
    /// snapshot's memo: what every search asks before it scans.
    pub fn classes_ids<const N: usize>(
        &self,
        txn: &impl crate::View,
        wanted: [Option<Checked>; N],
    ) -> Result<[Option<Arc<[u64]>>; N], LdapError> {
        // Remembered per snapshot; a write's view, which sees its own changes, asks the index.
        let snapshot = crate::view::committed(txn);
        let mut out: [Option<Arc<[u64]>>; N] = std::array::from_fn(|_| None);
        let mut missing = false;
        if let Some(snapshot) = snapshot {
            let mut memo = self.memo();
            if let Some(memo) = memo.of(snapshot) {
                for (slot, class) in out.iter_mut().zip(wanted) {
                    if let Some(class) = class {
                        *slot = memo.classes[class as usize].clone();
                        missing |= slot.is_none();
                    }
                }
            } else {
                missing = true;
            }
        } else {
            missing = true;
        }
        if !missing {
            return Ok(out);
        }
        let txn = crate::view::txn(txn);
        for (slot, class) in out.iter_mut().zip(wanted) {
            let Some(class) = class.filter(|_| slot.is_none()) else {
                continue;
            };
            let Some(mut ids) =
                crate::candidates::resolve(txn, &self.class_plan(txn, class.name()))?
            else {
                continue;
            };
            ids.sort_unstable();
            let ids: Arc<[u64]> = ids.into();
            if let Some(snapshot) = snapshot {
                if let Some(memo) = self.memo().of(snapshot) {
                    memo.classes[class as usize] = Some(Arc::clone(&ids));
                }
            }
            *slot = Some(ids);
        }
        Ok(out)
    }

    /// The candidate plan of `(objectClass=CLASS)` with the indexes `txn` may use; `alias` and
    /// `referral`, which every search checks, are planned once per index change.
    pub fn class_plan(&self, txn: &impl crate::View, class: &str) -> Arc<Plan> {
        let txn = crate::view::txn(txn);
        let set = self.inner.indexes.current();
        if txn.txn_id() >= set.newest {
            match class {
                "alias" => return Arc::clone(&set.alias_plan),
                "referral" => return Arc::clone(&set.referral_plan),
                _ => {}
            }
        }
        Arc::new(class_plan(
            self.schema(),
            &set.usable_at(txn.txn_id()),
            class,
        ))
    }

    fn normalize_anew(&self, raw: &[u8]) -> Result<(Dn, NormDn), LdapError> {
        let mut dn = Dn::parse(raw)
            .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid DN"))?;
        self.pretty(&mut dn);
        if Self::repeats_type(&dn) {
            return Err(LdapError::new(ResultCode::InvalidDnSyntax, "invalid DN"));
        }
        let ndn = self
            .schema
            .normalize_dn(&dn)
            .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid DN"))?;
        Ok((dn, ndn))
    }

    /// The pretty form of a DN: canonical attribute type names, values as written, slapd's escaping, and the
    /// AVAs of a multi-valued RDN sorted by type name (bytewise), as slapd writes them.
    pub fn pretty(&self, dn: &mut Dn) {
        for rdn in &mut dn.rdns {
            for ava in &mut rdn.avas {
                match self.schema.attribute_type(&ava.attr) {
                    Some(at) if ava.attr != at.name() => ava.attr = at.name().to_string(),
                    _ => {}
                }
            }
            rdn.avas
                .sort_by(|a, b| a.attr.as_bytes().cmp(b.attr.as_bytes()));
        }
    }

    /// Whether some RDN names one attribute type twice (`cn=a+cn=b`), which slapd refuses as an invalid DN.
    /// Expects the pretty form, whose type names are canonical and sorted.
    fn repeats_type(dn: &Dn) -> bool {
        dn.rdns
            .iter()
            .any(|rdn| rdn.avas.windows(2).any(|w| w[0].attr == w[1].attr))
    }

    /// Rewrites values as slapd stores them: DN syntax (and the name of a name-and-optional-UID value)
    /// in its pretty form (`member: cn=Smith\2C John,...`),
    /// and an objectClass value that names a known class (in any case, or by OID) as the class's
    /// name in the schema (`groupofnames`, `2.5.6.9`: `groupOfNames`). Values that do not parse, or
    /// name no class, are left alone for the schema check to refuse.
    pub fn pretty_values(&self, attrs: &mut [canopy_proto::PartialAttribute]) {
        const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";
        const NAME_AND_UID_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.34";
        const OBJECT_CLASS: &str = "2.5.4.0";
        for attr in attrs {
            let name = attr.name.split(';').next().unwrap_or(&attr.name);
            let Some(at) = self.schema.attribute_type(name) else {
                continue;
            };
            if at.oid == OBJECT_CLASS {
                for value in &mut attr.values {
                    let class = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| self.schema.object_class(v));
                    if let Some(class) = class.filter(|c| c.name().as_bytes() != value.as_slice()) {
                        *value = class.name().as_bytes().to_vec();
                    }
                }
                continue;
            }
            let with_uid = at.syntax == NAME_AND_UID_SYNTAX;
            if at.syntax != DN_SYNTAX && !with_uid {
                continue;
            }
            for value in &mut attr.values {
                // Name and optional UID (uniqueMember): the DN part before a `#'0101'B` UID.
                let (name, uid) = match with_uid {
                    true => split_uid(value),
                    false => (value.as_slice(), &[][..]),
                };
                if let Ok(mut dn) = Dn::parse(name) {
                    self.pretty(&mut dn);
                    let mut pretty = dn.to_string().into_bytes();
                    pretty.extend_from_slice(uid);
                    *value = pretty;
                }
            }
        }
    }

    /// Whether `ndn` lies in this database's naming context.
    pub fn holds(&self, ndn: &NormDn) -> bool {
        self.inner.suffix.is_suffix_of(ndn)
    }

    /// A snapshot of the committed database, for one operation's reads.
    pub fn read(&self) -> Result<Snapshot, LdapError> {
        self.inner
            .store
            .read()
            .map(Snapshot::new)
            .map_err(store_error)
    }

    /// The error for a missing entry: noSuchObject with the nearest existing ancestor as matchedDN.
    pub fn no_such_object(&self, txn: &impl View, ndn: &NormDn, dn: &Dn) -> LdapError {
        let txn = crate::view::txn(txn);
        let err = LdapError::new(ResultCode::NoSuchObject, "");
        let mut up = ndn.parent();
        let mut depth = 1;
        while let Some(candidate) = up {
            if !self.holds(&candidate) {
                break;
            }
            if let Ok(Some(_)) = txn.get_id(&dn_key(&candidate)) {
                let rdns = dn.rdns.get(depth..).unwrap_or(&[]).to_vec();
                return err.with_matched(Dn { rdns }.to_string());
            }
            up = candidate.parent();
            depth += 1;
        }
        err
    }

    /// The ID of the entry named `ndn`, if it exists ([`Directory::id_in`] in any transaction).
    pub fn id_of(&self, txn: &impl View, ndn: &NormDn) -> Result<Option<u64>, LdapError> {
        self.id_in(crate::view::txn(txn), ndn).map_err(store_error)
    }

    /// Reads the entry named `ndn` (decoded) in any transaction; None when it does not exist or cannot be
    /// read. For the access rules' group and entry lookups, which never fail an operation.
    pub fn entry_at(&self, txn: &impl View, ndn: &NormDn) -> Option<canopy_core::Entry> {
        let txn = crate::view::txn(txn);
        let id = txn.get_id(&dn_key(ndn)).ok().flatten()?;
        let bytes = txn.get_entry(id).ok().flatten()?;
        Directory::parse_stored(bytes).ok()?.to_entry().ok()
    }

    /// The stored bytes of entry `id` in `txn` (a snapshot, or a write's own transaction); None when
    /// there is none.
    pub fn stored<'t, V: View>(&self, txn: &'t V, id: u64) -> Result<Option<&'t [u8]>, LdapError> {
        crate::view::txn(txn).get_entry(id).map_err(store_error)
    }

    /// Every stored entry of the snapshot `txn` in ID order (the order they were added): ID and
    /// stored bytes.
    pub fn stored_entries<'t>(
        &self,
        txn: &'t Snapshot,
    ) -> Result<impl Iterator<Item = Result<(u64, &'t [u8]), LdapError>> + 't, LdapError> {
        let entries = txn.txn().entries().map_err(store_error)?;
        Ok(entries.map(|item| item.map_err(store_error)))
    }

    /// Looks up an entry by normalized DN: its ID and stored bytes.
    pub fn lookup<'t, V: crate::View>(
        &self,
        txn: &'t V,
        ndn: &NormDn,
    ) -> Result<Option<(u64, &'t [u8])>, LdapError> {
        let txn = crate::view::txn(txn);
        let Some(id) = txn.get_id(&dn_key(ndn)).map_err(store_error)? else {
            return Ok(None);
        };
        match txn.get_entry(id).map_err(store_error)? {
            Some(bytes) => Ok(Some((id, bytes))),
            None => Err(LdapError::new(
                ResultCode::Other,
                "dn2id points to a missing entry",
            )),
        }
    }

    /// Decodes stored bytes, mapping corruption to an operations error.
    pub fn parse_stored(bytes: &[u8]) -> Result<StoredEntry<'_>, LdapError> {
        StoredEntry::parse(bytes).map_err(|e| {
            tracing::error!(error = %e, "corrupt entry");
            LdapError::new(ResultCode::Other, "stored entry is unreadable")
        })
    }
}

/// A name-and-optional-UID value split into its name and its `#'0101'B` UID (empty when there is
/// none, or when what follows the last `#` is no bit string).
fn split_uid(value: &[u8]) -> (&[u8], &[u8]) {
    let Some(at) = value.iter().rposition(|b| *b == b'#') else {
        return (value, &[]);
    };
    let bits = value[at + 1..]
        .strip_prefix(b"'")
        .and_then(|u| u.strip_suffix(b"'B"))
        .is_some_and(|bits| bits.iter().all(|b| matches!(b, b'0' | b'1')));
    match bits {
        true => value.split_at(at),
        false => (value, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dropping a `Snapshot` ends its read the way dropping the store's transaction does: the next
    /// snapshot of the same commit reuses it instead of beginning another.
    #[test]
    fn a_dropped_snapshot_goes_back_to_the_pool() {
        let tmp = tempfile::tempdir().unwrap();
        let mut options = OpenOptions::new(tmp.path());
        options.durable = false;
        let schema = Arc::new(canopy_schema::Schema::builtin());
        let dir = Directory::open(
            schema,
            "dc=example,dc=com",
            Vec::new(),
            options,
            Pipeline::standard(),
        )
        .unwrap();
        let begun = || dir.store().stats().unwrap().read_txns_begun;
        dir.store()
            .write(|txn| txn.put_meta(b"probe", b"1"))
            .unwrap()
            .unwrap();
        // (The figures read in a snapshot of their own: taken only while no other is open.)
        drop(dir.read().unwrap());
        let before = begun();
        let id = dir.read().unwrap().id();
        for _ in 0..10 {
            let snapshot = dir.read().unwrap();
            assert_eq!(snapshot.id(), id);
        }
        assert_eq!(begun(), before, "every dropped snapshot was reused");
        // Two at once never share one transaction: the second begins its own.
        let (a, b) = (dir.read().unwrap(), dir.read().unwrap());
        assert_eq!(a.id(), b.id());
        drop((a, b));
        assert_eq!(begun(), before + 1);
    }
}
