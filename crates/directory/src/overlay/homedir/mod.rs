//! homedir: home directories on the server's file system follow the posixAccount entries, as slapd's
//! `overlay homedir` (slapo-homedir(5)): made from a skeleton when an account appears, moved when its
//! homeDirectory changes, and ignored, deleted or archived in a tar file when it goes.
//!
//! The hook only decides, in the commit step, what the change asks of the file system; the work is
//! queued after the group commit holding the write is durable (a write that rolls back asks nothing)
//! and done in commit order by one thread of its own, so a large copy or archive never holds the writer.

mod tar;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::sync::Mutex;

use canopy_core::{Entry, LdapError};
use canopy_mdb::WriteTxn;
use regex::Regex;

use crate::database::Directory;
use crate::event::{after_commit, Event, Kind};
use crate::pipeline::WriteHook;

/// What a delete (or an entry that stops being an account) does to the home directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteStyle {
    /// Leaves it (slapd's default).
    Ignore,
    /// Removes it and everything in it.
    Delete,
    /// Writes it into a tar file in the archive directory, then removes it (without an archive
    /// directory, as `Ignore`).
    Archive,
}

/// The overlay's settings: slapd's `homedir-*` keywords.
#[derive(Debug)]
pub struct Config {
    /// `homedir-skeleton-path`: copied into each new home directory.
    pub skeleton: Option<PathBuf>,
    /// `homedir-min-uidnumber`: accounts below it are never touched.
    pub min_uid: u64,
    /// `homedir-regexp`: the homeDirectory values acted on, and the local path of each (`$N` the
    /// groups). A value no rule matches is left alone.
    pub rules: Vec<(Regex, String)>,
    pub delete_style: DeleteStyle,
    /// `homedir-archive-path`.
    pub archive: Option<PathBuf>,
}

impl Config {
    /// One `homedir-regexp` line: a regular expression and a path with `$N` for its groups.
    pub fn rule(line: &str) -> Result<(Regex, String), String> {
        let mut parts = line.split_whitespace();
        let (Some(pattern), Some(path), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "regexp {line:?}: expected a regular expression and a path"
            ));
        };
        let regex = Regex::new(pattern).map_err(|e| format!("regexp {pattern:?}: {e}"))?;
        Ok((regex, path.to_string()))
    }

    /// The local path of a homeDirectory value: the first rule that matches it, expanded.
    fn local_path(&self, value: &str) -> Option<PathBuf> {
        let (caps, path) = self
            .rules
            .iter()
            .find_map(|(regex, path)| Some((regex.captures(value)?, path)))?;
        // `$1_new` would name a group "1_new" in the regex crate; slapd's `$N` is one digit.
        let template = regex_digits(path);
        let mut out = String::new();
        caps.expand(&template, &mut out);
        Some(PathBuf::from(out))
    }

    /// The account an entry is for the overlay: a posixAccount with a uidNumber at or above the
    /// minimum, a gidNumber and a homeDirectory a rule maps.
    fn account(&self, entry: &Entry) -> Option<Account> {
        let is_account = entry.get("objectClass").is_some_and(|a| {
            a.values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(b"posixAccount"))
        });
        if !is_account {
            return None;
        }
        let number = |name: &str| -> Option<u64> {
            let value = entry.get(name)?.values.first()?;
            std::str::from_utf8(value).ok()?.trim().parse().ok()
        };
        let uid = number("uidNumber")?;
        let gid = number("gidNumber")?;
        if uid < self.min_uid {
            return None;
        }
        let home = entry.get("homeDirectory")?.values.first()?;
        let path = self.local_path(std::str::from_utf8(home).ok()?)?;
        Some(Account {
            path,
            uid: u32::try_from(uid).ok()?,
            gid: u32::try_from(gid).ok()?,
        })
    }
}

/// `$N` as `${N}`.
fn regex_digits(template: &str) -> String {
    let mut out = String::with_capacity(template.len() + 4);
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('$', Some(d)) if d.is_ascii_digit() => {
                out.push_str("${");
                out.push(*d);
                out.push('}');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Account {
    path: PathBuf,
    uid: u32,
    gid: u32,
}

/// What one change asks of the file system.
#[derive(Debug, PartialEq, Eq)]
enum Job {
    Create(Account),
    Move { from: PathBuf, to: Account },
    Chown(Account),
    Remove(PathBuf),
}

/// The hook.
pub struct Homedir {
    config: std::sync::Arc<Config>,
    jobs: Mutex<Sender<Job>>,
}

impl Homedir {
    /// The hook and its worker thread, which ends when the hook is dropped.
    pub fn new(config: Config) -> Homedir {
        let config = std::sync::Arc::new(config);
        let (tx, rx) = mpsc::channel::<Job>();
        let worker = config.clone();
        let spawned = std::thread::Builder::new()
            .name("homedir".into())
            .spawn(move || {
                for job in rx {
                    run(&worker, &job);
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "homedir: cannot start its thread; home directories will not follow");
        }
        Homedir {
            config,
            jobs: Mutex::new(tx),
        }
    }

    /// The job of a change: the account before and after it.
    fn job(&self, old: Option<&Entry>, new: Option<&Entry>) -> Option<Job> {
        let before = old.and_then(|e| self.config.account(e));
        let after = new.and_then(|e| self.config.account(e));
        match (before, after) {
            (None, Some(after)) => Some(Job::Create(after)),
            (Some(before), None) => Some(Job::Remove(before.path)),
            (Some(before), Some(after)) if before.path != after.path => Some(Job::Move {
                from: before.path,
                to: after,
            }),
            (Some(before), Some(after)) if before != after => Some(Job::Chown(after)),
            _ => None,
        }
    }
}

impl WriteHook for Homedir {
    fn name(&self) -> &'static str {
        "homedir"
    }

    fn commit(
        &self,
        _dir: &Directory,
        _txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let job = match event.kind {
            Kind::Add => self.job(None, event.new),
            Kind::Delete => self.job(event.old, None),
            Kind::Modify | Kind::Rename => self.job(event.old, event.new),
        };
        if let Some(job) = job {
            let jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner()).clone();
            after_commit(move || {
                let _ = jobs.send(job);
            });
        }
        Ok(())
    }
}

/// Does one job, logging what fails (the change itself is already durable).
fn run(config: &Config, job: &Job) {
    let outcome = match job {
        Job::Create(account) => create(config, account),
        Job::Move { from, to } => move_home(from, to),
        Job::Chown(account) => chown_tree(&account.path, account.uid, account.gid),
        Job::Remove(path) => remove(config, path),
    };
    if let Err(error) = outcome {
        tracing::error!(?job, %error, "homedir: the home directory was not changed");
    }
}

fn create(config: &Config, account: &Account) -> std::io::Result<()> {
    if account.path.exists() {
        tracing::info!(path = %account.path.display(), "homedir: already exists, left as it is");
        return Ok(());
    }
    std::fs::create_dir(&account.path)?;
    if let Some(skeleton) = &config.skeleton {
        copy_tree(skeleton, &account.path)?;
    }
    chown_tree(&account.path, account.uid, account.gid)?;
    tracing::info!(path = %account.path.display(), "homedir: created");
    Ok(())
}

fn move_home(from: &Path, to: &Account) -> std::io::Result<()> {
    if !from.exists() {
        return Ok(());
    }
    if to.path.exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} exists: {} not moved", to.path.display(), from.display()),
        ));
    }
    std::fs::rename(from, &to.path)?;
    chown_tree(&to.path, to.uid, to.gid)
}

fn remove(config: &Config, path: &Path) -> std::io::Result<()> {
    if !path.exists() {
        return Ok(());
    }
    match (config.delete_style, &config.archive) {
        (DeleteStyle::Ignore, _) | (DeleteStyle::Archive, None) => return Ok(()),
        (DeleteStyle::Archive, Some(archive)) => {
            let file = archive_name(archive, path)?;
            tar::write_tree(path, &file)?;
            tracing::info!(path = %path.display(), archive = %file.display(), "homedir: archived");
        }
        (DeleteStyle::Delete, _) => {}
    }
    std::fs::remove_dir_all(path)?;
    tracing::info!(path = %path.display(), "homedir: removed");
    Ok(())
}

/// `ARCHIVE/NAME-SECONDS-N.tar` with the first N not taken.
fn archive_name(archive: &Path, home: &Path) -> std::io::Result<PathBuf> {
    let name = home
        .file_name()
        .map_or_else(|| "home".into(), |n| n.to_string_lossy().into_owned());
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for n in 0..10_000 {
        let file = archive.join(format!("{name}-{seconds}-{n}.tar"));
        if !file.exists() {
            return Ok(file);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free archive name",
    ))
}

/// Copies the skeleton's files, directories and symbolic links (other kinds are skipped, as slapd
/// does) into `to`, keeping their permission bits; a directory gets its own bits once it is filled.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for item in std::fs::read_dir(from)? {
        let item = item?;
        let kind = item.file_type()?;
        let (source, target) = (item.path(), to.join(item.file_name()));
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&source, &target)?;
            std::fs::set_permissions(&target, std::fs::metadata(&source)?.permissions())?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// Gives `path` and everything below it (links themselves, not what they point to) to uid:gid. Without
/// the privilege to (a server not run as root), the files stay the server's, and the log says so once.
fn chown_tree(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    match std::os::unix::fs::lchown(path, Some(uid), Some(gid)) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            tracing::warn!(path = %path.display(), uid, gid, "homedir: not allowed to give the home directory to its owner");
            return Ok(());
        }
        other => other?,
    }
    if std::fs::symlink_metadata(path)?.is_dir() {
        for item in std::fs::read_dir(path)? {
            chown_tree(&item?.path(), uid, gid)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
