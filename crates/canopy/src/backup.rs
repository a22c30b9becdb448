//! `canopy backup DIR` and `canopy restore DIR`: a consistent, compacted copy of a live database with a
//! checksum manifest, and bringing one back into a data directory nobody is using (docs/operations.md).

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use canopy_mdb::{DATA_FILE, LOCK_FILE};
use canopy_server::Config;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::progress::{Progress, Unit};
use crate::service;

/// The manifest's name in a backup directory.
pub const MANIFEST: &str = "manifest.json";
/// What a manifest says it is; a restore refuses anything else.
const MANIFEST_FORMAT: &str = "canopy-backup/1";
/// Files of a data directory besides the database that a backup keeps (when present): the generated
/// root password's hash and the self-signed TLS certificate and key.
const EXTRA_FILES: &[&str] = &["rootpw", "tls/cert.pem", "tls/key.pem"];
/// The live configuration's store (cn=config, docs/design/config-tree.md) in the first database's data
/// directory: copied like the database, so that a restored server runs the configuration it ran.
const CONFIG_STORE: &str = "config";
/// The store's database file, the file settings it last started from and the record of a first
/// database added live over the default one, relative to the data directory.
const CONFIG_FILES: &[&str] = &[
    "config/data.mdb",
    "config/baseline.toml",
    "config/first-database",
];

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub canopy_version: String,
    /// When the copy was taken: RFC 3339 UTC and Unix seconds.
    pub created: String,
    pub created_unix: u64,
    /// The data directory copied and the suffix of its database.
    pub source: String,
    pub suffix: String,
    /// canopy-mdb's on-disk layout version (docs/design/storage.md).
    pub store_format: u32,
    pub entries: u64,
    /// The highest entry ID in the copy, and the next one the store hands out.
    pub last_id: Option<u64>,
    pub next_id: u64,
    pub files: Vec<FileSum>,
    /// The database's own directory as the live configuration names it (relative to the data
    /// directory, or absolute), when the first database lies outside the data directory: a first
    /// database added live over the default one (cn=config's `olcDbDirectory`). A restore puts
    /// `data.mdb` there and the other files (the cn=config store that names it) in the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileSum {
    /// Relative to the backup directory (and to the data directory when restored).
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

/// Copies the database of `config` (a database's view) into `dest` while it may be serving: LMDB's
/// compacting copy of one snapshot, the extra files, and a manifest with their checksums. `home`:
/// for the first database, the data directory, which holds the cn=config store and the extra files
/// also when the database lies in a directory of its own (a first database added live).
pub fn backup(config: &Config, dest: &Path, home: Option<&Path>) -> Result<()> {
    let source = &config.data_dir;
    let home = home.unwrap_or(source);
    let data = source.join(DATA_FILE);
    if !data.is_file() {
        bail!("no database at {}", data.display());
    }
    if dest.exists() && std::fs::read_dir(dest)?.next().is_some() {
        bail!(
            "{} is not empty; a backup goes into a new or empty directory",
            dest.display()
        );
    }
    service::create_private_dir(dest)?;
    let copy_path = dest.join(DATA_FILE);
    let mut copy = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .open(&copy_path)
        .with_context(|| format!("creating {}", copy_path.display()))?;
    service::make_private(&copy_path)?;
    // The source file's size bounds the compacted copy: enough for a bar.
    let bound = std::fs::metadata(&data)?.len();
    let copied = watch_growth(&copy_path, "backup", bound);
    let result = canopy_mdb::copy_compact(source, &mut copy);
    copied.finish();
    result.with_context(|| format!("copying {}", source.display()))?;
    copy.sync_all()?;
    drop(copy);
    copy_config_store(home, dest)?;
    for name in EXTRA_FILES
        .iter()
        .chain(CONFIG_FILES.get(1..).unwrap_or(&[]))
    {
        let from = home.join(name);
        if from.is_file() {
            let to = dest.join(name);
            if let Some(parent) = to.parent() {
                service::create_private_dir(parent)?;
            }
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
            service::make_private(&to)?;
            File::open(&to)?.sync_all()?;
        }
    }
    let facts = canopy_mdb::describe(dest).context("reading the copy")?;
    let files = checksums(dest)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        canopy_version: env!("CARGO_PKG_VERSION").into(),
        created: rfc3339(now),
        created_unix: now,
        source: std::fs::canonicalize(source)
            .unwrap_or_else(|_| source.clone())
            .display()
            .to_string(),
        suffix: config.suffix.clone(),
        store_format: facts.format,
        entries: facts.entries,
        last_id: facts.last_id,
        next_id: facts.next_id,
        files,
        directory: (home != source.as_path()).then(|| {
            config
                .directory
                .as_ref()
                .unwrap_or(source)
                .display()
                .to_string()
        }),
    };
    write_synced(
        &dest.join(MANIFEST),
        (serde_json::to_string_pretty(&manifest)? + "\n").as_bytes(),
    )?;
    sync_dir(dest)?;
    let size = manifest.files.first().map_or(0, |f| f.size);
    let with_config = match manifest.files.iter().any(|f| f.path == CONFIG_FILES[0]) {
        true => " with the cn=config store",
        false => "",
    };
    let from = match home != source.as_path() {
        true => format!(" (the database from {})", source.display()),
        false => String::new(),
    };
    println!(
        "backup of {} ({} entries, last ID {}){with_config} in {}: {DATA_FILE} {size} bytes, {} files, manifest {MANIFEST}{from}",
        manifest.suffix,
        manifest.entries,
        manifest.last_id.map_or("none".into(), |id| id.to_string()),
        dest.display(),
        manifest.files.len()
    );
    Ok(())
}

/// The compacting copy of the cn=config store (`DATA/config`), when the data directory has one: one
/// snapshot of it, taken after the database's (a configuration change made between the two is in it).
fn copy_config_store(source: &Path, dest: &Path) -> Result<()> {
    let store = source.join(CONFIG_STORE);
    if !store.join(DATA_FILE).is_file() {
        return Ok(());
    }
    let to_dir = dest.join(CONFIG_STORE);
    service::create_private_dir(&to_dir)?;
    let to = to_dir.join(DATA_FILE);
    let mut copy = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .open(&to)
        .with_context(|| format!("creating {}", to.display()))?;
    service::make_private(&to)?;
    canopy_mdb::copy_compact(&store, &mut copy)
        .with_context(|| format!("copying the cn=config store {}", store.display()))?;
    copy.sync_all()?;
    sync_dir(&to_dir)
}

/// Checks the backup in `from` against its manifest and copies it into the data directory of
/// `config` (a database's view), which no process may be using and which must be empty unless
/// `force`. `first`: for the first database, the configuration file's settings (before the live
/// configuration): a backup with the cn=config store brings that store back into their data
/// directory, and the database where the restored store opens it (`Manifest::directory`).
pub fn restore(config: &Config, from: &Path, force: bool, first: Option<&Config>) -> Result<()> {
    let manifest = read_manifest(from)?;
    let restores_config = manifest.files.iter().any(|f| f.path == CONFIG_FILES[0]);
    let home = first
        .map_or(&config.data_dir, |file| &file.data_dir)
        .clone();
    let target = match (restores_config, first) {
        (true, Some(_)) => manifest
            .directory
            .as_ref()
            .map_or(home.clone(), |dir| home.join(dir)),
        _ => config.data_dir.clone(),
    };
    // The backup's first database was added live over the default one: its restored store names
    // it again where the configuration file leaves the first database to the default.
    let adopted = restores_config
        && manifest.directory.is_some()
        && first.is_some_and(|file| file.default_database);
    if !same_suffix(&manifest.suffix, &config.suffix) && !adopted {
        match &manifest.directory {
            Some(dir) if restores_config => bail!(
                "the backup holds {:?}, a first database added live (cn=config) in {dir}, but the \
                 configuration names its own first database {:?}: restore it with a configuration \
                 file that sets no `suffix`, as the one it was added to",
                manifest.suffix,
                config.suffix
            ),
            _ => bail!(
                "the backup holds {:?} but the configuration's suffix is {:?}",
                manifest.suffix,
                config.suffix
            ),
        }
    }
    check_files(from, &manifest)?;
    let _lock = service::lock_data_dir(&home, "restore")?;
    let _own_lock = match target != home {
        true => Some(service::lock_data_dir(&target, "restore")?),
        false => None,
    };
    if let Some(pid) = canopy_mdb::in_use_by(&target)
        .with_context(|| format!("checking {}", target.join(LOCK_FILE).display()))?
    {
        bail!(
            "the database in {} is open by process {pid} (a server or a tool); stop it first",
            target.display()
        );
    }
    let mut occupied_dirs = vec![&target];
    if home != target && restores_config {
        occupied_dirs.push(&home);
    }
    for dir in occupied_dirs {
        let occupied = occupied(dir)?;
        if !occupied.is_empty() && !force {
            bail!(
                "{} is not empty ({}); restore into an empty directory or add --force to replace its database",
                dir.display(),
                occupied.join(", ")
            );
        }
    }
    for file in &manifest.files {
        let to = match file.path == DATA_FILE {
            true => target.join(&file.path),
            false => home.join(&file.path),
        };
        if let Some(parent) = to.parent() {
            service::create_private_dir(parent)?;
        }
        let partial = to.with_extension("restoring");
        std::fs::copy(from.join(&file.path), &partial)
            .with_context(|| format!("copying {}", file.path))?;
        service::make_private(&partial)?;
        File::open(&partial)?.sync_all()?;
        std::fs::rename(&partial, &to)
            .with_context(|| format!("renaming into {}", to.display()))?;
    }
    // The old reader tables describe the replaced files; LMDB builds new ones on the next open. The
    // restored store runs as it was backed up: without the record of a first database added live
    // when the backup has none.
    let mut stale = vec![target.join(LOCK_FILE)];
    if restores_config {
        stale.push(home.join(CONFIG_STORE).join(LOCK_FILE));
        if !manifest.files.iter().any(|f| f.path == CONFIG_FILES[2]) {
            stale.push(home.join(CONFIG_FILES[2]));
        }
    }
    for path in stale {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing the old {}", path.display()))
            }
            _ => {}
        }
    }
    if restores_config {
        sync_dir(&home.join(CONFIG_STORE))?;
        sync_dir(&home)?;
    }
    sync_dir(&target)?;
    let facts = canopy_mdb::describe(&target).context("reading the restored database")?;
    println!(
        "restored {} ({} entries, last ID {}, taken {}) into {}",
        manifest.suffix,
        facts.entries,
        facts.last_id.map_or("none".into(), |id| id.to_string()),
        manifest.created,
        target.display()
    );
    if let (true, Some(file)) = (restores_config, first) {
        // The database must lie where the restored configuration opens it at the next start.
        if let Some((live, _)) = canopy_server::config_tree::read_live(file)
            .context("reading the restored cn=config store")?
        {
            let opens = live.database_directory(1);
            if opens != target {
                bail!(
                    "restored, but the restored cn=config opens the first database ({}) in {}, \
                     not in {} where its data went: restore with the configuration file the \
                     backup was taken with",
                    live.suffix,
                    opens.display(),
                    target.display()
                );
            }
        }
    }
    if restores_config {
        println!(
            "restored the cn=config store (the live configuration when the backup was taken) into {}",
            home.join(CONFIG_STORE).display()
        );
    } else if home.join(CONFIG_STORE).join(DATA_FILE).is_file() {
        println!(
            "the backup has no cn=config store: {} keeps the live configuration it had",
            home.join(CONFIG_STORE).display()
        );
    }
    Ok(())
}

fn read_manifest(from: &Path) -> Result<Manifest> {
    let path = from.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (is {} a backup?)",
            path.display(),
            from.display()
        )
    })?;
    let manifest: Manifest =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if manifest.format != MANIFEST_FORMAT {
        bail!(
            "{}: format {:?}, this canopy reads {MANIFEST_FORMAT:?}",
            path.display(),
            manifest.format
        );
    }
    if !canopy_mdb::READABLE_FORMATS.contains(&manifest.store_format) {
        bail!(
            "{}: database format {}, this canopy reads {}",
            path.display(),
            manifest.store_format,
            canopy_mdb::FORMAT_VERSION
        );
    }
    if !manifest.files.iter().any(|f| f.path == DATA_FILE) {
        bail!("{}: lists no {DATA_FILE}", path.display());
    }
    Ok(manifest)
}

/// Every file of the manifest is there, of its size and checksum; nothing outside the directory.
fn check_files(from: &Path, manifest: &Manifest) -> Result<()> {
    for file in &manifest.files {
        let relative = Path::new(&file.path);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            bail!("manifest names {:?}, outside the backup", file.path);
        }
        let path = from.join(relative);
        let size = std::fs::metadata(&path)
            .with_context(|| format!("{} (listed in the manifest)", path.display()))?
            .len();
        if size != file.size {
            bail!(
                "{}: {size} bytes, the manifest says {}: the backup is damaged",
                path.display(),
                file.size
            );
        }
        let sum = sha256_file(&path, file.path == DATA_FILE)?;
        if sum != file.sha256 {
            bail!(
                "{}: sha256 {sum}, the manifest says {}: the backup is damaged",
                path.display(),
                file.sha256
            );
        }
    }
    Ok(())
}

/// The names in a data directory that a restore would replace or that show it in use (everything but
/// the lock files, which hold no data).
fn occupied(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != service::LOCK_FILE && name != LOCK_FILE {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Suffixes compared as DNs are by slapd for this purpose: case and spaces after commas aside.
fn same_suffix(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.split(',')
            .map(|p| p.trim().to_ascii_lowercase())
            .collect::<Vec<_>>()
    };
    norm(a) == norm(b)
}

/// The checksums of the database and the extra files in a backup directory.
fn checksums(dir: &Path) -> Result<Vec<FileSum>> {
    let mut out = Vec::new();
    let names = std::iter::once(DATA_FILE)
        .chain(EXTRA_FILES.iter().copied())
        .chain(CONFIG_FILES.iter().copied());
    for name in names {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        out.push(FileSum {
            path: name.to_string(),
            size: std::fs::metadata(&path)?.len(),
            sha256: sha256_file(&path, name == DATA_FILE)?,
        });
    }
    Ok(out)
}

fn sha256_file(path: &Path, show: bool) -> Result<String> {
    let mut file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let total = file.metadata()?.len();
    let mut progress = show.then(|| Progress::new("checksum", Unit::Bytes, Some(total)));
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or(&[]));
        done += n as u64;
        if let Some(p) = &mut progress {
            p.set(done);
        }
    }
    if let Some(p) = &mut progress {
        p.finish(done);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// A thread showing the size of a file LMDB is writing (its copy has no progress callback).
struct Growth {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn watch_growth(path: &Path, label: &str, bound: u64) -> Growth {
    let stop = Arc::new(AtomicBool::new(false));
    let (flag, path, label) = (Arc::clone(&stop), PathBuf::from(path), label.to_string());
    let thread = std::thread::Builder::new()
        .name("canopy-progress".into())
        .spawn(move || {
            let mut progress = Progress::new(&label, Unit::Bytes, Some(bound));
            let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            while !flag.load(Ordering::Relaxed) {
                progress.set(size());
                std::thread::sleep(Duration::from_millis(100));
            }
            progress.finish(size());
        })
        .ok();
    Growth { stop, thread }
}

impl Growth {
    fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing {}", dir.display()))
}

/// Unix seconds as RFC 3339 UTC (`2026-11-25T03:04:05Z`).
fn rfc3339(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_575_845), "2026-11-25T03:04:05Z");
    }

    #[test]
    fn suffixes_compare_loosely() {
        assert!(same_suffix("dc=Example, dc=com", "dc=example,dc=com"));
        assert!(!same_suffix("dc=example,dc=org", "dc=example,dc=com"));
    }
}
