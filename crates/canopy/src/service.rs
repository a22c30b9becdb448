//! Running as a service: the data directory's lock (one server or offline writer at a time, found by
//! `canopy restore`), its permissions, and systemd's readiness protocol (sd_notify).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The lock file in a data directory: held (flock, exclusive) by `canopy serve` and by the tools that
/// write offline (import, reindex, restore) for as long as they run; it holds the holder's pid and role.
pub const LOCK_FILE: &str = "canopy.pid";

/// The data directory held by this process. Dropping it releases the lock.
pub struct DataLock {
    _file: File,
}

/// Creates the data directory if missing (mode 0700) and takes its lock for `role` ("serve",
/// "import", ...), or says who holds it.
pub fn lock_data_dir(dir: &Path, role: &str) -> Result<DataLock> {
    create_private_dir(dir)?;
    let path = dir.join(LOCK_FILE);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            bail!(
                "{} is in use by canopy process {} (see {}); stop it first",
                dir.display(),
                if holder.is_empty() { "?" } else { holder },
                path.display()
            );
        }
        return Err(error).with_context(|| format!("locking {}", path.display()));
    }
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{} {role}", std::process::id())?;
    file.flush()?;
    Ok(DataLock { _file: file })
}

/// Creates `dir` (and its parents) with mode 0700 when missing; warns when an existing data directory
/// is open to the group or others (entries, password hashes and the TLS key live there).
pub fn create_private_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating data directory {}", dir.display()))?;
        return Ok(());
    }
    let mode = std::fs::metadata(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            dir = %dir.display(),
            mode = format!("{:o}", mode & 0o777),
            "the data directory is open to other users; chmod 700 it"
        );
    }
    Ok(())
}

/// Makes `path` readable and writable by its owner only.
pub fn make_private(path: &Path) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod 600 {}", path.display()))
}

/// Sends `state` (e.g. "READY=1") to systemd's notification socket when `$NOTIFY_SOCKET` is set
/// (Type=notify units); does nothing otherwise. A path starting with `@` names an abstract socket.
pub fn notify(state: &str) {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(error) = send_notification(&PathBuf::from(&target), state) {
        tracing::warn!(%error, socket = ?target, "sd_notify failed");
    }
}

fn send_notification(target: &Path, state: &str) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let socket = UnixDatagram::unbound()?;
    let bytes = target.as_os_str().as_bytes();
    let address = match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(name)?
        }
        None => SocketAddr::from_pathname(target)?,
    };
    socket.send_to_addr(state.as_bytes(), &address)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = std::env::temp_dir().join(format!("canopy-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = lock_data_dir(&dir, "serve").unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // flock locks belong to the open file description: a second open in this process conflicts too.
        let err = lock_data_dir(&dir, "import").err().unwrap().to_string();
        assert!(
            err.contains(&format!("canopy process {} serve", std::process::id())),
            "{err}"
        );
        drop(first);
        let again = lock_data_dir(&dir, "import");
        assert!(again.is_ok());
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn notifications_reach_the_socket() {
        use std::os::unix::net::UnixDatagram;
        let path = std::env::temp_dir().join(format!("canopy-notify-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixDatagram::bind(&path).unwrap();
        send_notification(&path, "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let _ = std::fs::remove_file(&path);
    }
}
