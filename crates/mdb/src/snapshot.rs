//! Whole-environment operations for backup and restore: LMDB's compacting copy of a live database, the
//! facts of a copy, and whether any process has an environment open.
//!
//! These work on a directory, not on an open [`Store`](crate::Store): `canopy backup` runs in its own
//! process beside a live server, and a restore must not open what it is about to replace.

use std::fs::File;
use std::path::Path;

use heed::types::Bytes;
use heed::{CommitOrAbort, CompactionOption, EnvFlags, EnvOpenOptions, MdbError};

use crate::error::StoreError;
use crate::keys::{decode_id, FORMAT_VERSION, META_FORMAT, META_NEXT_ID};
use crate::tables::{ID2ENTRY, META};

/// LMDB's data file in an environment directory.
pub const DATA_FILE: &str = "data.mdb";
/// LMDB's lock file (reader table and writer mutex) in an environment directory.
pub const LOCK_FILE: &str = "lock.mdb";

/// Writes a consistent, compacted copy of the environment in `dir` to `dest` (LMDB's `mdb_env_copy2`
/// with `MDB_CP_COMPACT`): one read snapshot, free pages left out, pages renumbered. Writers in other
/// processes go on meanwhile; they only keep the pages of the snapshot until the copy ends.
pub fn copy_compact(dir: &Path, dest: &mut File) -> Result<(), StoreError> {
    require_data_file(dir)?;
    let mut options = EnvOpenOptions::new().read_txn_without_tls();
    options.max_dbs(0);
    // SAFETY: READ_ONLY: this process never writes; the file is only changed through LMDB by others,
    // coordinated by lock.mdb, whose reader slot keeps the copied snapshot's pages from being reused.
    unsafe { options.flags(EnvFlags::READ_ONLY) };
    // SAFETY: as above; one opening of `dir` in this process (heed refuses a second).
    let env = unsafe { options.open(dir) }?;
    for _ in 0..3 {
        match env.copy_to_file(dest, CompactionOption::Enabled) {
            Err(heed::Error::Mdb(MdbError::MapResized)) => {
                // The server grew the map since we opened: adopt the new size and copy again.
                dest.set_len(0)?;
                use std::io::Seek;
                dest.rewind()?;
                // SAFETY: no transaction of this process is open (the copy's ended with its error).
                unsafe { env.resize(0) }?;
            }
            other => return Ok(other?),
        }
    }
    Err(StoreError::Lmdb(MdbError::MapResized))
}

/// What a database directory holds, read without a lock file (for a copy nobody else opens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub entries: u64,
    /// The highest entry ID stored.
    pub last_id: Option<u64>,
    /// The next ID the store will hand out.
    pub next_id: u64,
    pub format: u32,
}

/// Reads the facts of the environment in `dir` (entries, last and next ID, format version) read-only and
/// without taking part in LMDB's locking: only for a directory no other process opens, such as a backup.
pub fn describe(dir: &Path) -> Result<Described, StoreError> {
    require_data_file(dir)?;
    let mut options = EnvOpenOptions::new().read_txn_without_tls();
    options.max_dbs(8);
    // SAFETY: READ_ONLY | NO_LOCK is sound only if nobody writes meanwhile: `describe` is for copies
    // (a fresh backup, a restore's source), which no process has open.
    unsafe { options.flags(EnvFlags::READ_ONLY | EnvFlags::NO_LOCK) };
    // SAFETY: see above.
    let env = unsafe { options.open(dir) }?;
    let rtxn = env.read_txn()?;
    let read = env.open_databases_and_commit(rtxn, |opener, rtxn| {
        let open = |name: &str| -> Result<_, StoreError> {
            opener
                .open_database::<Bytes, Bytes>(rtxn, Some(name))?
                .ok_or_else(|| StoreError::Corrupt {
                    table: if name == META { META } else { ID2ENTRY },
                    detail: "table missing".into(),
                })
        };
        let id2entry = open(ID2ENTRY)?;
        let meta = open(META)?;
        let entries = id2entry.len(rtxn)?;
        let last_id = match id2entry.last(rtxn)? {
            Some((key, _)) => Some(decode_id(ID2ENTRY, key)?),
            None => None,
        };
        let next_id = match meta.get(rtxn, META_NEXT_ID)? {
            Some(raw) => decode_id(META, raw)?,
            None => 1,
        };
        let format = match meta.get(rtxn, META_FORMAT)? {
            Some(raw) => <[u8; 4]>::try_from(raw)
                .map(u32::from_be_bytes)
                .map_err(|_| StoreError::Corrupt {
                    table: META,
                    detail: "format version is not 4 bytes".into(),
                })?,
            None => FORMAT_VERSION,
        };
        // Nothing to keep open: the facts leave through the abort value.
        Ok::<_, StoreError>(CommitOrAbort::<NoTables, Described>::Abort(Described {
            entries,
            last_id,
            next_id,
            format,
        }))
    })?;
    match read {
        CommitOrAbort::Abort(described) => Ok(described),
        CommitOrAbort::Commit(NoTables) => Err(StoreError::Corrupt {
            table: META,
            detail: "unreadable".into(),
        }),
    }
}

/// No table handles (the type `describe` never commits).
struct NoTables;

impl heed::OnCommit for NoTables {
    type Committed = NoTables;
    fn on_commit(self, _: &heed::CommitToken) -> NoTables {
        NoTables
    }
}

/// The process that has the environment in `dir` open, if any: every LMDB process holds a shared
/// `fcntl` lock on the first byte of `lock.mdb` while its environment is open, so a test for an
/// exclusive lock there finds it (and names its pid). `None` when nobody has it open or there is no
/// lock file.
pub fn in_use_by(dir: &Path) -> std::io::Result<Option<i32>> {
    use std::os::fd::AsRawFd;
    let path = dir.join(LOCK_FILE);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    // SAFETY: an all-zero flock is a valid value of this plain C struct.
    let mut probe: libc::flock = unsafe { std::mem::zeroed() };
    probe.l_type = libc::F_WRLCK as libc::c_short;
    probe.l_whence = libc::SEEK_SET as libc::c_short;
    probe.l_start = 0;
    probe.l_len = 1;
    // SAFETY: F_GETLK only reads and fills `probe`, a valid flock; the descriptor is open.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut probe) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((probe.l_type != libc::F_UNLCK as libc::c_short).then_some(probe.l_pid))
}

fn require_data_file(dir: &Path) -> Result<(), StoreError> {
    let data = dir.join(DATA_FILE);
    if !data.is_file() {
        return Err(StoreError::Io(std::sync::Arc::new(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no database at {}", data.display()),
        ))));
    }
    Ok(())
}
