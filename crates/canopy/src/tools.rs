//! The offline tools: import (slapadd), export (slapcat), reindex (slapindex) and passwd (slappasswd).

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use canopy_core::check::{check_entry, entry_from_attributes_with, structural_class};
use canopy_core::index::entry_keys;
use canopy_core::wire::{attributes, encode_entry, StoredEntry};
use canopy_mdb::ReadOps;
use canopy_proto::ldif::{write_ldif_entry, LdifChange, LdifReader, LdifRecord};
use canopy_proto::PartialAttribute;
use canopy_server::access::Who;
use canopy_server::directory::dn_key;
use canopy_server::opattrs::Stamp;
use canopy_server::Config;

/// Progress on standard error, at most a few times a second.
struct Progress {
    start: Instant,
    last: Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            start: Instant::now(),
            last: Instant::now(),
        }
    }
    fn tick(&mut self, done: u64, what: &str) {
        if self.last.elapsed().as_millis() >= 250 {
            self.last = Instant::now();
            self.show(done, what);
        }
    }
    fn show(&self, done: u64, what: &str) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-6);
        eprint!(
            "\r{what} {done} entries ({:.0}/s, {:.1}s)   ",
            done as f64 / secs,
            secs
        );
    }
}

pub fn import(config: &Config, file: &Path, sync: bool) -> Result<()> {
    let dir = canopy_server::open_directory(config, sync)?;
    let schema = dir.schema().clone();
    {
        let txn = dir.store().read()?;
        if txn.entry_count()? > 0 {
            bail!(
                "{}: the database is not empty; import loads an empty database (remove it or use ldapadd)",
                config.data_dir.display()
            );
        }
    }
    let input = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let reader = LdifReader::new(BufReader::with_capacity(1 << 20, input));
    let mut loader = dir.store().bulk_loader()?;
    let who = Who {
        dn: config.root_dn.clone(),
        ndn: None,
        root: true,
    };
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut next_id = 1u64;
    let mut progress = Progress::new();
    let mut bytes = Vec::with_capacity(1024);
    let stamp = Stamp::now();
    for record in reader {
        let record = record.map_err(|e| anyhow!("{}: {e}", file.display()))?;
        let (raw_dn, attrs) = match record {
            LdifRecord::Content { dn, attrs } => (dn, attrs),
            LdifRecord::Change {
                dn,
                change: LdifChange::Add(attrs),
                ..
            } => (dn, attrs),
            LdifRecord::Change { dn, .. } => {
                bail!(
                    "{}: entry {}: import takes entries, not changes",
                    file.display(),
                    String::from_utf8_lossy(&dn)
                )
            }
        };
        let shown = String::from_utf8_lossy(&raw_dn).to_string();
        let fail =
            |e: canopy_core::LdapError| anyhow!("{}: entry {shown:?}: {}", file.display(), e);
        let (dn, ndn) = dir.normalize(&raw_dn).map_err(fail)?;
        if !dir.holds(&ndn) {
            bail!(
                "{}: entry {shown:?} is outside the suffix {}",
                file.display(),
                config.suffix
            );
        }
        let parent = if ndn == *dir.suffix() {
            0
        } else {
            let parent = ndn
                .parent()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            *ids.get(&parent).ok_or_else(|| {
                anyhow!(
                    "{}: entry {shown:?}: parent not found (parents must come first)",
                    file.display()
                )
            })?
        };
        if ids.contains_key(ndn.as_str()) {
            bail!("{}: entry {shown:?} appears twice", file.display());
        }
        let partial = group(attrs);
        let mut entry =
            entry_from_attributes_with(&schema, dn, ndn.clone(), &partial, true).map_err(fail)?;
        check_entry(&schema, &entry).map_err(fail)?;
        let structural = structural_class(&schema, &entry).map_err(fail)?;
        stamp.create(&mut entry, &who, &structural);
        bytes.clear();
        encode_entry(&schema, &entry, &mut bytes);
        let mut keys = Vec::new();
        for (position, spec) in dir.indexes().iter().enumerate() {
            for key in entry_keys(&schema, spec, &entry) {
                keys.push((position, key));
            }
        }
        loader.add(next_id, &dn_key(&ndn), Some(parent), &bytes, &keys)?;
        ids.insert(ndn.as_str().to_string(), next_id);
        next_id += 1;
        progress.tick(next_id - 1, "imported");
    }
    loader.finish()?;
    progress.show(next_id - 1, "imported");
    eprintln!();
    Ok(())
}

/// LDIF lines to PartialAttributes, keeping the order of first appearance.
fn group(attrs: Vec<(String, Vec<u8>)>) -> Vec<PartialAttribute> {
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

pub fn export(config: &Config, file: Option<&Path>) -> Result<()> {
    let dir = canopy_server::open_directory(config, false)?;
    let mut out: Box<dyn Write> = match file {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let txn = dir.store().read()?;
    // dn2id order puts every parent before its children, so the output imports again as it is.
    let members = txn.subtree(&dn_key(dir.suffix()))?;
    let mut buf = Vec::with_capacity(4096);
    for (_, id) in members {
        let Some(bytes) = txn.get_entry(id)? else {
            continue;
        };
        let stored = StoredEntry::parse(bytes)?;
        let mut lines: Vec<(&str, &[u8])> = Vec::new();
        for section in [stored.user, stored.secret, stored.operational] {
            for attr in attributes(section) {
                let (desc, values) = attr?;
                for value in values {
                    lines.push((desc, value));
                }
            }
        }
        buf.clear();
        write_ldif_entry(&mut buf, stored.dn, &lines);
        buf.push(b'\n');
        out.write_all(&buf)?;
    }
    out.flush()?;
    Ok(())
}

pub fn reindex(config: &Config) -> Result<()> {
    let dir = canopy_server::open_directory(config, true)?;
    let schema = dir.schema().clone();
    let specs = dir.indexes().to_vec();
    let mut progress = Progress::new();
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
            for (id, entry) in &entries {
                for spec in &specs {
                    for key in entry_keys(&schema, spec, entry) {
                        txn.index_add(&spec.attr, &key, *id)?;
                    }
                }
                done += 1;
                progress.tick(done, "reindexed");
            }
            Ok(done)
        })
        .map_err(|e| anyhow!("{e}"))??;
    eprintln!("\rreindexed {count} entries");
    Ok(())
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
