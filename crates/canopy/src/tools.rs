//! The offline tools: import (slapadd), export (slapcat), reindex (slapindex) and passwd (slappasswd).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use crate::progress::{Progress, Unit};

use anyhow::{anyhow, bail, Context, Result};
use canopy_core::check::{check_entry, entry_from_attributes_with, structural_class};
use canopy_core::index::{entry_keys_all, Resolved};
use canopy_core::wire::{attributes, encode_entry, StoredEntry};
use canopy_directory::{dn_key, Stamp};
use canopy_mdb::ReadOps;
use canopy_proto::ldif::{write_ldif_entry, LdifChange, LdifReader, LdifRecord};
use canopy_proto::sync::{Csn, CsnSet};
use canopy_proto::PartialAttribute;
use canopy_server::access::Who;
use canopy_server::Config;

/// The LDIF file, counting the bytes read for the progress bar.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Records handed to a worker at once: large enough that channel traffic is negligible, small enough
/// that the workers stay busy and the reordering buffer stays small.
const CHUNK: usize = 256;

/// One LDIF record as read: its raw DN and attribute lines, or why it cannot be imported.
type Record = Result<(Vec<u8>, Vec<(String, Vec<u8>)>)>;

/// An entry ready for the loader, built by a worker.
struct Prepared {
    shown: String,
    ndn: String,
    /// The parent's normalized DN; `None` for the suffix entry.
    parent: Option<String>,
    dn_key: Vec<u8>,
    bytes: Vec<u8>,
    /// The index keys, one after the other in `key_bytes`, each as (index position, end offset): built
    /// on the worker's thread in two buffers, so that the collector frees two, not one per key.
    key_bytes: Vec<u8>,
    key_ends: Vec<(usize, usize)>,
}

impl Prepared {
    /// The index keys as (index position, key).
    fn keys(&self) -> Vec<(usize, &[u8])> {
        let mut start = 0;
        self.key_ends
            .iter()
            .map(|&(position, end)| {
                let key = self.key_bytes.get(start..end).unwrap_or_default();
                start = end;
                (position, key)
            })
            .collect()
    }
}

/// What every worker shares.
struct Prepare<'a> {
    dir: &'a canopy_server::Database,
    who: Who,
    stamp: Stamp,
    /// The input as error messages name it.
    name: &'a str,
    suffix: &'a str,
    /// The suffixes of the databases inside this one's: their entries are not this database's.
    inner: Vec<(canopy_schema::NormDn, String)>,
    /// The contextCSN the file gives (slapcat writes it on the suffix entry) and the entryCSNs of its
    /// entries, which together become the database's contextCSN, as `slapadd -w` makes it.
    context: Mutex<CsnSet>,
    /// The indexes of the store, in its order (bulk-load positions refer to it).
    specs: Vec<canopy_core::index::IndexSpec>,
}

/// The IDs of an import, given as slapadd's back-mdb gives them: in file order, except that an entry
/// whose parent has not come yet first reserves IDs for its missing ancestors (top down), which they
/// take when they come. The entries load in ID order, each as soon as every lower ID has loaded, so a
/// parent always loads before its children and the bulk loader's IDs ascend.
struct Ids {
    /// The suffix's normalized DN, where the chain of ancestors ends.
    suffix: String,
    /// Every normalized DN given an ID, with whether it is reserved (its entry has not come yet).
    given: HashMap<String, (u64, bool)>,
    /// Entries come but not loaded yet, by ID: (place in the file, parent's ID, entry).
    pending: BTreeMap<u64, (u64, u64, Prepared)>,
    next_id: u64,
    next_load: u64,
    /// The entry that came twice, once [`Ids::arrive`] refused one.
    twice: String,
}

impl Ids {
    fn new(suffix: &str) -> Ids {
        Ids {
            suffix: suffix.to_string(),
            given: HashMap::new(),
            pending: BTreeMap::new(),
            next_id: 1,
            next_load: 1,
            twice: String::new(),
        }
    }

    /// Takes the entry at `place` in the file; false (and `twice` set) when its DN came before.
    fn arrive(&mut self, place: u64, entry: Prepared) -> bool {
        let parent = match &entry.parent {
            None => 0,
            Some(parent) => self.id_of(parent),
        };
        let id = match self.given.get_mut(&entry.ndn) {
            Some((id, reserved @ true)) => {
                *reserved = false;
                *id
            }
            Some(_) => {
                self.twice = entry.shown;
                return false;
            }
            None => {
                let id = self.next_id;
                self.next_id += 1;
                self.given.insert(entry.ndn.clone(), (id, false));
                id
            }
        };
        self.pending.insert(id, (place, parent, entry));
        true
    }

    /// The ID of `ndn`, reserved (with its missing ancestors first) when it has none yet.
    fn id_of(&mut self, ndn: &str) -> u64 {
        if let Some((id, _)) = self.given.get(ndn) {
            return *id;
        }
        if ndn != self.suffix {
            if let Some(parent) = parent_ndn(ndn) {
                self.id_of(parent);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.given.insert(ndn.to_string(), (id, true));
        id
    }

    /// The next entry to load, (ID, parent's ID, entry), once every lower ID has loaded.
    fn next_ready(&mut self) -> Option<(u64, u64, Prepared)> {
        let (_, parent, entry) = self.pending.remove(&self.next_load)?;
        let id = self.next_load;
        self.next_load += 1;
        Some((id, parent, entry))
    }

    /// At the end: the first entry in the file whose parent never came.
    fn first_orphan(&self) -> Option<&str> {
        let reserved: std::collections::HashSet<u64> = self
            .given
            .values()
            .filter(|(_, reserved)| *reserved)
            .map(|(id, _)| *id)
            .collect();
        self.pending
            .values()
            .filter(|(_, parent, _)| reserved.contains(parent))
            .min_by_key(|(place, _, _)| *place)
            .map(|(_, _, entry)| entry.shown.as_str())
    }
}

/// The parent of a normalized DN: what follows its first comma that is not escaped.
fn parent_ndn(ndn: &str) -> Option<&str> {
    let bytes = ndn.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b',' => return ndn.get(i + 1..),
            _ => i += 1,
        }
    }
    None
}

/// Loads an LDIF file into an empty database, and the entries of the databases glued below it into
/// theirs, as slapadd does without `-g` (each of those must be empty too).
pub fn import(config: &Config, file: &Path, sync: bool) -> Result<()> {
    let name = file.display().to_string();
    let glued = config.glued_views();
    if glued.is_empty() {
        return import_one(config, file, &name, sync);
    }
    let parts = split_by_database(config, &glued, file, &name)?;
    import_one(config, parts.own.path(), &name, sync)?;
    for (view, part) in glued.iter().zip(&parts.glued) {
        if part.count == 0 {
            continue;
        }
        let shown = format!("{name} (the entries of {:?})", view.suffix);
        import_one(view, part.path(), &shown, sync)?;
    }
    Ok(())
}

/// One database's share of an LDIF file, in a temporary file beside its data.
struct Part {
    path: std::path::PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    count: usize,
}

impl Part {
    fn create(data_dir: &Path) -> Result<Part> {
        crate::service::create_private_dir(data_dir)?;
        let path = data_dir.join(format!(".import-{}.ldif", std::process::id()));
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Part {
            path,
            out: std::io::BufWriter::new(file),
            count: 0,
        })
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The records of an LDIF file split between a database and those glued below it.
struct Parts {
    own: Part,
    /// In the order of `Config::glued_views`.
    glued: Vec<Part>,
}

/// Writes each record of `file` into the part of the database that holds its DN: the glued database
/// with the longest suffix containing it, else `config`'s own. Records whose DN does not parse stay in
/// the own part, where the import reports them in file order.
fn split_by_database(config: &Config, glued: &[Config], file: &Path, name: &str) -> Result<Parts> {
    let schema = canopy_server::load_schema(config)?;
    let normalize = |raw: &[u8]| {
        canopy_proto::Dn::parse(raw)
            .ok()
            .and_then(|dn| schema.normalize_dn(&dn).ok())
    };
    let suffixes: Vec<_> = glued
        .iter()
        .map(|view| {
            normalize(view.suffix.as_bytes())
                .with_context(|| format!("the suffix {:?} does not parse", view.suffix))
        })
        .collect::<Result<_>>()?;
    let mut parts = Parts {
        own: Part::create(&config.data_dir)?,
        glued: glued
            .iter()
            .map(|view| Part::create(&view.data_dir))
            .collect::<Result<_>>()?,
    };
    let input = std::fs::File::open(file).with_context(|| format!("opening {name}"))?;
    let mut buf = Vec::with_capacity(4096);
    for record in LdifReader::new(BufReader::with_capacity(1 << 20, input)) {
        let record = record.map_err(|e| anyhow!("{name}: {e}"))?;
        let (dn, attrs) = match &record {
            LdifRecord::Content { dn, attrs }
            | LdifRecord::Change {
                dn,
                change: LdifChange::Add(attrs),
                ..
            } => (dn, attrs),
            LdifRecord::Change { dn, .. } => bail!(
                "{name}: entry {}: import takes entries, not changes",
                String::from_utf8_lossy(dn)
            ),
        };
        let part = normalize(dn)
            .and_then(|ndn| {
                (0..suffixes.len())
                    .filter(|&i| suffixes[i].is_suffix_of(&ndn))
                    .max_by_key(|&i| suffixes[i].rdns().len())
            })
            .map_or(&mut parts.own, |i| &mut parts.glued[i]);
        let lines: Vec<(&str, &[u8])> = attrs
            .iter()
            .map(|(a, v)| (a.as_str(), v.as_slice()))
            .collect();
        buf.clear();
        write_ldif_entry(&mut buf, dn, &lines);
        buf.push(b'\n');
        part.out.write_all(&buf)?;
        part.count += 1;
    }
    for part in std::iter::once(&mut parts.own).chain(parts.glued.iter_mut()) {
        part.out.flush()?;
    }
    Ok(parts)
}

/// Loads an LDIF file into an empty database. Reading the file, building entries (normalising, schema
/// checks, encoding, index keys) and writing the database run on separate threads: one reader, one
/// builder per core, and this thread, which puts the built entries back in file order, gives them
/// their IDs and hands them to the bulk loader (whose own thread writes).
fn import_one(config: &Config, file: &Path, name: &str, sync: bool) -> Result<()> {
    let _lock = crate::service::lock_data_dir(&config.data_dir, "import")?;
    let dir = canopy_server::open_directory_for_import(config, sync)?;
    {
        let txn = dir.store().read()?;
        if txn.entry_count()? > 0 {
            bail!(
                "{}: the database is not empty; import loads an empty database (remove it or use ldapadd)",
                config.data_dir.display()
            );
        }
    }
    let input = std::fs::File::open(file).with_context(|| format!("opening {}", name))?;
    let size = input.metadata().map(|m| m.len()).ok();
    let read = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        inner: input,
        read: Arc::clone(&read),
    };
    let reader = LdifReader::new(BufReader::with_capacity(1 << 20, counted));
    let mut loader = dir.store().bulk_loader()?;
    let prepare = Prepare {
        dir: &dir,
        specs: dir.configured_indexes(),
        who: Who {
            dn: config.root_dn.clone(),
            ndn: None,
            root: true,
            link: Default::default(),
            real: None,
        },
        stamp: Stamp::now_for(config.server_id),
        name,
        suffix: &config.suffix,
        inner: config
            .suffixes_inside()
            .into_iter()
            .filter_map(|s| Some((dir.normalize(s.as_bytes()).ok()?.1, s)))
            .collect(),
        context: Mutex::new(CsnSet::new()),
    };
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    // By bytes of the file read: the number of entries is known only at the end.
    let mut progress = Progress::new("import", Unit::Bytes, size);
    let loaded = std::thread::scope(|scope| -> Result<u64> {
        let (work_tx, work_rx) = mpsc::sync_channel::<(u64, Vec<Record>)>(workers * 4);
        let (done_tx, done_rx) = mpsc::sync_channel::<(u64, Vec<Result<Prepared>>)>(workers * 4);
        // Shared by the workers and dropped with the last of them, which stops the reader.
        let work_rx = Arc::new(Mutex::new(work_rx));
        scope.spawn(move || read_records(reader, name, &work_tx));
        for _ in 0..workers {
            let (work_rx, done_tx, prepare) = (Arc::clone(&work_rx), done_tx.clone(), &prepare);
            scope.spawn(move || build_entries(prepare, &work_rx, &done_tx));
        }
        drop(work_rx);
        drop(done_tx);
        // Dropping `done_rx` on an early return stops the workers, and through them the reader.
        let mut waiting: BTreeMap<u64, Vec<Result<Prepared>>> = BTreeMap::new();
        let mut ids = Ids::new(prepare.dir.suffix().as_str());
        let mut place = 0u64;
        let mut next_chunk = 0u64;
        for (seq, chunk) in done_rx {
            waiting.insert(seq, chunk);
            while let Some(chunk) = waiting.remove(&next_chunk) {
                next_chunk += 1;
                for prepared in chunk {
                    let entry = prepared?;
                    place += 1;
                    if !ids.arrive(place, entry) {
                        bail!("{}: entry {:?} appears twice", name, ids.twice);
                    }
                    while let Some((id, parent, entry)) = ids.next_ready() {
                        loader.add(id, &entry.dn_key, Some(parent), &entry.bytes, &entry.keys())?;
                        if id & 255 == 0 {
                            progress.set(read.load(Ordering::Relaxed));
                        }
                    }
                }
            }
        }
        if let Some(shown) = ids.first_orphan() {
            bail!(
                "{}: entry {shown:?}: parent not found (not in the file)",
                name
            );
        }
        let next_id = ids.next_id;
        Ok(next_id - 1)
    })?;
    // Synced below, as the fresh copy of the data file (rewrite_data_file).
    loader.finish_unsynced()?;
    progress.finish(read.load(Ordering::Relaxed));
    eprintln!("imported {loaded} entries");
    let context = std::mem::take(&mut *prepare.context.lock().unwrap_or_else(|e| e.into_inner()));
    drop(prepare);
    drop(dir);
    rewrite_data_file(&config.data_dir, sync)?;
    if !context.is_empty() {
        let dir = canopy_server::open_directory(config, sync)?;
        let backend: canopy_directory::Directory = (*dir).clone();
        dir.store()
            .write(move |txn| backend.raise_context_csn(txn, &context))??;
    }
    rebuild_overlays(config, sync)
}

/// What the configured overlays keep (memberOf) recomputed from the data, as after an import or a
/// reindex; nothing to do without overlays.
fn rebuild_overlays(config: &Config, sync: bool) -> Result<()> {
    if config.overlay.is_empty() {
        return Ok(());
    }
    let dir = canopy_server::open_directory(config, sync)?;
    let changed = dir.rebuild()?;
    eprintln!("overlays: {changed} entries updated");
    Ok(())
}

/// The load wrote data.mdb through MDB_WRITEMAP, which extends it to the whole map (sparse) and leaves its
/// blocks as the page writeback allocated them. The server's durable writes into such a file measured
/// about 25% slower (modify rate 5.0k against 7.1k/s; the same file after a plain copy: 7.2k), so once the
/// environment is closed its compacting copy (LMDB's `MDB_CP_COMPACT`: the B-trees page by page, free
/// pages left out) is written into a fresh file, synced, and put in place. The loader's commits leave
/// the pages they copied free; the compacting copy drops them, so the file holds only pages in use.
fn rewrite_data_file(data_dir: &Path, sync: bool) -> Result<()> {
    let path = data_dir.join(canopy_mdb::DATA_FILE);
    let fresh = path.with_extension("mdb.rewrite");
    let context = || format!("rewriting {}", path.display());
    {
        let permissions = std::fs::metadata(&path)
            .with_context(context)?
            .permissions();
        let mut target = std::fs::File::create(&fresh).with_context(context)?;
        target.set_permissions(permissions).with_context(context)?;
        canopy_mdb::copy_compact(data_dir, &mut target).with_context(context)?;
        if sync {
            target.sync_all().with_context(context)?;
        }
    }
    std::fs::rename(&fresh, &path).with_context(context)?;
    if sync {
        std::fs::File::open(data_dir)
            .and_then(|d| d.sync_all())
            .with_context(context)?;
    }
    Ok(())
}

/// The reader thread: LDIF records in chunks, numbered in file order. Stops after the first record
/// that cannot be imported (sent along, so that it is reported in its place) or when the workers stop.
fn read_records<R: std::io::BufRead>(
    reader: LdifReader<R>,
    name: &str,
    work: &SyncSender<(u64, Vec<Record>)>,
) {
    let mut seq = 0u64;
    let mut chunk: Vec<Record> = Vec::with_capacity(CHUNK);
    for record in reader {
        let record = match record {
            Err(e) => Err(anyhow!("{}: {e}", name)),
            Ok(LdifRecord::Content { dn, attrs }) => Ok((dn, attrs)),
            Ok(LdifRecord::Change {
                dn,
                change: LdifChange::Add(attrs),
                ..
            }) => Ok((dn, attrs)),
            Ok(LdifRecord::Change { dn, .. }) => Err(anyhow!(
                "{}: entry {}: import takes entries, not changes",
                name,
                String::from_utf8_lossy(&dn)
            )),
        };
        let failed = record.is_err();
        chunk.push(record);
        if failed || chunk.len() >= CHUNK {
            let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
            // A failed record goes last, in its place; nothing after it is read.
            if work.send((seq, full)).is_err() || failed {
                return;
            }
            seq += 1;
        }
    }
    if !chunk.is_empty() {
        let _ = work.send((seq, chunk));
    }
}

/// A builder thread: turns chunks of records into entries ready for the loader, until the reader is
/// done or the collector stops listening.
fn build_entries(
    prepare: &Prepare<'_>,
    work: &Mutex<Receiver<(u64, Vec<Record>)>>,
    done: &SyncSender<(u64, Vec<Result<Prepared>>)>,
) {
    loop {
        let next = match work.lock() {
            Ok(work) => work.recv(),
            Err(_) => return,
        };
        let Ok((seq, records)) = next else { return };
        let built = records
            .into_iter()
            .map(|record| record.and_then(|(dn, attrs)| prepare.entry(&dn, attrs)))
            .collect();
        if done.send((seq, built)).is_err() {
            return;
        }
    }
}

impl Prepare<'_> {
    /// Takes the contextCSN values out of a record (the database keeps them, not the entry) and notes
    /// them and the record's entryCSN for the database's contextCSN.
    fn note_csns(&self, attrs: &mut Vec<(String, Vec<u8>)>) {
        let mut found = Vec::new();
        // An entry without an entryCSN gets the import's own.
        if !attrs
            .iter()
            .any(|(d, _)| d.eq_ignore_ascii_case("entryCSN"))
        {
            found.extend(Csn::parse(&self.stamp.csn));
        }
        attrs.retain(|(desc, value)| {
            let context = desc.eq_ignore_ascii_case("contextCSN");
            if context || desc.eq_ignore_ascii_case("entryCSN") {
                if let Some(csn) = std::str::from_utf8(value).ok().and_then(Csn::parse) {
                    found.push(csn);
                }
            }
            !context
        });
        if !found.is_empty() {
            let mut set = self.context.lock().unwrap_or_else(|e| e.into_inner());
            for csn in &found {
                set.observe(csn);
            }
        }
    }

    /// Normalises, checks, stamps and encodes one entry and computes its index keys.
    fn entry(&self, raw_dn: &[u8], mut attrs: Vec<(String, Vec<u8>)>) -> Result<Prepared> {
        let (dir, name) = (self.dir, self.name);
        self.note_csns(&mut attrs);
        let schema = dir.schema();
        let shown = String::from_utf8_lossy(raw_dn).to_string();
        let fail = |e: canopy_core::LdapError| anyhow!("{}: entry {shown:?}: {}", name, e);
        let (dn, ndn) = dir.normalize(raw_dn).map_err(fail)?;
        if !dir.holds(&ndn) {
            bail!(
                "{}: entry {shown:?} is outside the suffix {}",
                name,
                self.suffix
            );
        }
        if let Some((_, other)) = self.inner.iter().find(|(s, _)| s.is_suffix_of(&ndn)) {
            bail!(
                "{}: entry {shown:?} belongs to the database of suffix {other:?}: import it with -b {other:?}",
                name,
            );
        }
        // The suffix entry, and in a database whose suffix is empty the top entries, hang from the
        // root (ID 0).
        let top = ndn == *dir.suffix() || (dir.suffix().is_root() && ndn.rdns().len() == 1);
        let parent = if top {
            None
        } else {
            Some(
                ndn.parent()
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default(),
            )
        };
        let mut partial = group(attrs);
        // slapadd stores a value given twice as two values; an add would refuse the entry. An
        // export holding such an entry still loads: the value is stored once, and said so.
        let repeated = drop_repeated_values(&mut partial);
        if repeated > 0 {
            eprintln!("{name}: entry {shown:?}: {repeated} value(s) given twice, stored once");
        }
        let mut entry =
            entry_from_attributes_with(schema, dn, ndn.clone(), &partial, true).map_err(fail)?;
        check_entry(schema, &entry).map_err(fail)?;
        let structural = structural_class(schema, &entry).map_err(fail)?;
        self.stamp.create(&mut entry, &self.who.dn, &structural);
        let mut bytes = Vec::with_capacity(1024);
        encode_entry(schema, &entry, &mut bytes);
        let mut key_bytes = Vec::with_capacity(1024);
        let mut key_ends = Vec::with_capacity(96);
        for (position, spec_keys) in entry_keys_all(schema, &self.specs, &entry)
            .into_iter()
            .enumerate()
        {
            for key in spec_keys {
                key_bytes.extend_from_slice(&key);
                key_ends.push((position, key_bytes.len()));
            }
        }
        Ok(Prepared {
            dn_key: dn_key(&ndn),
            ndn: ndn.as_str().to_string(),
            parent,
            bytes,
            key_bytes,
            key_ends,
            shown,
        })
    }
}

/// LDIF lines to PartialAttributes, keeping the order of first appearance.
pub(crate) fn group(attrs: Vec<(String, Vec<u8>)>) -> Vec<PartialAttribute> {
    let mut out: Vec<PartialAttribute> = Vec::new();
    for (name, value) in attrs {
        match out.iter_mut().find(|a| a.name.eq_ignore_ascii_case(&name)) {
            Some(attr) => attr.values.push(value),
            None => out.push(PartialAttribute {
                name,
                values: vec![value],
            }),
        }
    }
    out
}

/// Drops every value that repeats an earlier one of its attribute byte for byte; how many were dropped.
/// (Values equal only under the attribute's matching rule are left for the entry check to refuse.)
fn drop_repeated_values(attrs: &mut [PartialAttribute]) -> usize {
    let mut dropped = 0;
    for attr in attrs.iter_mut() {
        let before = attr.values.len();
        let mut seen = std::collections::HashSet::with_capacity(before);
        attr.values.retain(|v| seen.insert(v.clone()));
        dropped += before - attr.values.len();
    }
    dropped
}

/// Writes the database of `config` as LDIF, then (`glue`) the databases glued into it, as slapcat does
/// without `-g`.
pub fn export(config: &Config, file: Option<&Path>, glue: bool) -> Result<()> {
    let mut out: Box<dyn Write> = match file {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    export_one(config, &mut out)?;
    if glue {
        for view in config.glued_views() {
            export_one(&view, &mut out)?;
        }
    }
    Ok(())
}

fn export_one(config: &Config, out: &mut dyn Write) -> Result<()> {
    let dir = canopy_server::open_directory(config, false)?;
    let txn = dir.store().read()?;
    // dn2id order puts every parent before its children, so the output imports again as it is.
    let members = txn.subtree(&dn_key(dir.suffix()))?;
    let suffix_id = txn.get_id(&dn_key(dir.suffix()))?;
    let context = dir.context_csn(&txn)?;
    let suffix_id = suffix_id.unwrap_or(0);
    let mut progress = Progress::new("export", Unit::Entries, Some(members.len() as u64));
    let mut buf = Vec::with_capacity(4096);
    for (done, (_, id)) in members.into_iter().enumerate() {
        progress.set(done as u64);
        let Some(bytes) = txn.get_entry(id)? else {
            continue;
        };
        let stored = StoredEntry::parse(bytes)?;
        let mut lines: Vec<(&str, &[u8])> = Vec::new();
        for span in stored.in_order([true; 3]) {
            for attr in attributes(span?.2) {
                let (desc, values) = attr?;
                for value in values {
                    lines.push((desc, value));
                }
            }
        }
        // The suffix entry carries the database's contextCSN, as slapcat writes it.
        if id == suffix_id {
            for csn in context.csns() {
                lines.push(("contextCSN", csn.as_str().as_bytes()));
            }
        }
        buf.clear();
        write_ldif_entry(&mut buf, stored.dn, &lines);
        buf.push(b'\n');
        out.write_all(&buf)?;
    }
    out.flush()?;
    progress.finish(txn.entry_count()?);
    Ok(())
}

pub fn reindex(config: &Config) -> Result<()> {
    let _lock = crate::service::lock_data_dir(&config.data_dir, "reindex")?;
    let dir = canopy_server::open_directory(config, true)?;
    let schema = dir.schema().clone();
    let specs = dir.configured_indexes();
    let backend = dir.backend().clone();
    let total = dir.store().read()?.entry_count()?;
    let mut progress = Progress::new("reindex", Unit::Entries, Some(total));
    let count = dir
        .store()
        .write(move |txn| -> Result<u64, anyhow::Error> {
            for spec in &specs {
                txn.clear_index(&spec.attr)?;
            }
            let mut entries = Vec::new();
            for item in txn.entries()? {
                let (id, bytes) = item?;
                let entry = StoredEntry::parse(bytes)?.to_entry()?;
                entries.push((id, entry));
            }
            let mut done = 0u64;
            let resolved = Resolved::new(&schema, &specs);
            for (id, entry) in &entries {
                for (spec, keys) in specs.iter().zip(resolved.keys(entry)) {
                    for key in keys {
                        txn.index_add(&spec.attr, &key, *id)?;
                    }
                }
                done += 1;
                progress.set(done);
            }
            // Every configured index is whole now, including any an interrupted online build left.
            backend.record_indexes_complete(txn)?;
            progress.finish(done);
            Ok(done)
        })
        .map_err(|e| anyhow!("{e}"))??;
    eprintln!("reindexed {count} entries");
    drop(dir);
    rebuild_overlays(config, true)
}

pub fn passwd(scheme: &str, secret: Option<String>) -> Result<()> {
    let scheme = canopy_password::Scheme::from_name(scheme)
        .ok_or_else(|| anyhow!("unknown password scheme {scheme:?}"))?;
    let secret = match secret {
        Some(s) => s,
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s.trim_end_matches(['\n', '\r']).to_string()
        }
    };
    if secret.is_empty() {
        bail!("empty password");
    }
    let hash = canopy_password::hash(scheme, secret.as_bytes()).map_err(|e| anyhow!("{e}"))?;
    println!("{hash}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty scratch directory of this test process.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("canopy-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The suffix, one unit and `n` people, each record as its own string.
    fn records(n: usize) -> Vec<String> {
        let mut out = vec![
            "dn: dc=example,dc=com\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n"
                .to_string(),
            "dn: ou=People,dc=example,dc=com\nobjectClass: organizationalUnit\nou: People\n".to_string(),
        ];
        for i in 0..n {
            out.push(format!(
                "dn: uid=u{i},ou=People,dc=example,dc=com\nobjectClass: inetOrgPerson\nuid: u{i}\ncn: U {i}\nsn: S{i}\n"
            ));
        }
        out
    }

    /// Imports `records` into a fresh database; the error text, or the DNs exported afterwards.
    fn import_text(name: &str, records: &[String]) -> Result<Vec<String>, String> {
        let dir = scratch(name);
        let file = dir.join("in.ldif");
        std::fs::write(&file, records.join("\n")).unwrap();
        let config = Config {
            data_dir: dir.join("data"),
            ..Config::default()
        };
        let outcome = import(&config, &file, false).map_err(|e| e.to_string());
        let result = outcome.map(|()| {
            let out = dir.join("out.ldif");
            export(&config, Some(&out), true).unwrap();
            let text = std::fs::read_to_string(&out).unwrap();
            text.lines()
                .filter_map(|l| l.strip_prefix("dn: ").map(str::to_string))
                .collect()
        });
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    #[test]
    fn import_keeps_every_entry_across_chunks_and_builders() {
        // Many chunks per builder, so chunks finish out of order and must be put back in order.
        let input = records(CHUNK * 9 + 17);
        let dns = import_text("order", &input).unwrap();
        let mut want: Vec<String> = input
            .iter()
            .map(|r| {
                r.lines()
                    .next()
                    .unwrap()
                    .trim_start_matches("dn: ")
                    .to_string()
            })
            .collect();
        let mut got = dns.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want);
        // Export lists a parent before its children.
        assert_eq!(dns[0], "dc=example,dc=com");
        assert_eq!(dns[1], "ou=People,dc=example,dc=com");
    }

    /// Children before their parents, in any order and across chunks, as slapadd takes them.
    #[test]
    fn children_may_come_before_their_parents() {
        let mut input = records(CHUNK * 3);
        // The people unit and the suffix last, a child of a child first.
        let unit = input.remove(1);
        let suffix = input.remove(0);
        input.insert(
            0,
            "dn: cn=x,uid=u5,ou=People,dc=example,dc=com\nobjectClass: device\ncn: x\n".to_string(),
        );
        input.push(unit);
        input.push(suffix);
        let dns = import_text("reversed", &input).unwrap();
        assert_eq!(dns.len(), input.len());
        assert_eq!(dns[0], "dc=example,dc=com");
    }

    #[test]
    fn the_first_bad_record_in_file_order_is_reported() {
        let check = |name: &str, edit: &dyn Fn(&mut Vec<String>), expected: &str| {
            let mut input = records(CHUNK * 4);
            edit(&mut input);
            let err = import_text(name, &input).unwrap_err();
            assert!(err.contains(expected), "{name}: {err}");
        };
        let orphan = "dn: uid=x,ou=Nowhere,dc=example,dc=com\nobjectClass: account\nuid: x\n";
        let change = "dn: uid=u7,ou=People,dc=example,dc=com\nchangetype: delete\n";
        // A parent that never comes is known only at the end: what is wrong in the file before
        // that is reported first, whichever chunk it is in.
        check(
            "orphan-first",
            &|r| {
                r.insert(300, orphan.to_string());
                r.insert(700, change.to_string());
            },
            "import takes entries, not changes",
        );
        check(
            "orphan-alone",
            &|r| {
                r.insert(300, orphan.to_string());
            },
            "uid=x,ou=Nowhere,dc=example,dc=com\": parent not found (not in the file)",
        );
        check(
            "change-first",
            &|r| {
                r.insert(300, change.to_string());
                r.insert(700, orphan.to_string());
            },
            "import takes entries, not changes",
        );
        check(
            "duplicate",
            &|r| {
                let again = r[5].clone();
                r.insert(600, again);
                r.push(orphan.to_string());
            },
            "appears twice",
        );
        check(
            "outside",
            &|r| {
                r.insert(
                    2,
                    "dn: dc=other\nobjectClass: domain\ndc: other\n".to_string(),
                )
            },
            "outside the suffix",
        );
    }
}
