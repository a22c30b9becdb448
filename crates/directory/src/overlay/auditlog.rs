//! auditlog: every successful change appended to a file as LDIF, in OpenLDAP's auditlog format
//! (`# modify <time> <suffix> <who>`, the change record, `# end modify <time>`).
//!
//! The record is made in the commit step (it sees the change as stored, the stamped operational
//! attributes included) but written only by [`after_commit`], once the group commit holding the write
//! is durable: a write that rolls back (a later hook's refusal, a failed commit) is never logged, and
//! a write run again after the map grew is logged once.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use canopy_core::{Entry, LdapError};
use canopy_mdb::WriteTxn;
use canopy_proto::ldif::write_attrval;
use canopy_proto::{Dn, ModifyOperation};
use canopy_schema::{NormDn, Schema};

use crate::database::Directory;
use crate::event::{after_commit, Event, Kind};
use crate::pipeline::WriteHook;

/// The open audit file, reopened under its name on request (SIGHUP, after logrotate moved it).
pub struct AuditFile {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

/// Every audit file of the process, so that one signal reopens them all.
static FILES: Mutex<Vec<Weak<AuditFile>>> = Mutex::new(Vec::new());

impl AuditFile {
    fn open(&self) -> std::io::Result<()> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        *self.file.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
        Ok(())
    }

    fn append(&self, record: &[u8]) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let written = match file.as_mut() {
            Some(file) => file.write_all(record),
            None => Err(std::io::Error::other("not open")),
        };
        if let Err(error) = written {
            tracing::error!(path = %self.path.display(), %error, "cannot write the audit log");
        }
    }
}

/// Reopens every audit file under its configured name.
pub fn reopen_all() -> std::io::Result<()> {
    let files: Vec<Arc<AuditFile>> = FILES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for file in files {
        file.open()?;
    }
    Ok(())
}

/// The hook: slapd's `overlay auditlog` with `auditlog <file>`.
pub struct AuditLog {
    file: Arc<AuditFile>,
}

impl AuditLog {
    pub fn new(path: PathBuf) -> AuditLog {
        let file = Arc::new(AuditFile {
            path,
            file: Mutex::new(None),
        });
        let mut files = FILES.lock().unwrap_or_else(|e| e.into_inner());
        files.retain(|f| f.strong_count() > 0);
        files.push(Arc::downgrade(&file));
        AuditLog { file }
    }
}

impl WriteHook for AuditLog {
    fn name(&self) -> &'static str {
        "auditlog"
    }

    /// Opens (creates) the file when the database opens, so an unwritable path stops the start.
    fn check(&self, _schema: &Schema, _suffix: &NormDn) -> Result<(), String> {
        self.file
            .open()
            .map_err(|e| format!("auditlog file {}: {e}", self.file.path.display()))
    }

    fn commit(
        &self,
        dir: &Directory,
        _txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let record = record(dir.suffix_dn(), event);
        let file = self.file.clone();
        after_commit(move || file.append(&record));
        Ok(())
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The operational attributes the server set on a modify, logged after the requested changes as slapd
/// logs them.
const STAMPED: [&str; 3] = ["entryCSN", "modifiersName", "modifyTimestamp"];

/// One record in OpenLDAP's auditlog format.
fn record(suffix: &Dn, event: &Event<'_>) -> Vec<u8> {
    let what = match event.kind {
        Kind::Add => "add",
        Kind::Delete => "delete",
        Kind::Modify => "modify",
        Kind::Rename => "modrdn",
    };
    let time = now();
    let target = match (event.kind, event.old, event.new) {
        (Kind::Add, _, Some(new)) => &new.dn,
        (_, Some(old), _) => &old.dn,
        (_, None, Some(new)) => &new.dn,
        (_, None, None) => suffix,
    };
    let mut out = format!("# {what} {time} {suffix}").into_bytes();
    if !event.requester.is_empty() {
        out.push(b' ');
        out.extend_from_slice(event.requester.as_bytes());
    }
    out.push(b'\n');
    write_attrval(&mut out, "dn", target.to_string().as_bytes());
    write_attrval(&mut out, "changetype", what.as_bytes());
    match event.kind {
        Kind::Add => {
            if let Some(new) = event.new {
                for attr in &new.attrs {
                    for value in &attr.values {
                        write_attrval(&mut out, &attr.desc, value);
                    }
                }
            }
        }
        Kind::Delete => {}
        Kind::Modify => {
            for change in event.changes {
                let op = match change.operation {
                    ModifyOperation::Add => "add",
                    ModifyOperation::Delete => "delete",
                    ModifyOperation::Replace => "replace",
                    ModifyOperation::Increment => "increment",
                };
                let name = &change.modification.name;
                write_attrval(&mut out, op, name.as_bytes());
                for value in &change.modification.values {
                    write_attrval(&mut out, name, value);
                }
                out.extend_from_slice(b"-\n");
            }
            stamped(&mut out, event.new);
        }
        Kind::Rename => {
            if let (Some(old), Some(new)) = (event.old, event.new) {
                rename(&mut out, old, new);
            }
        }
    }
    out.extend_from_slice(format!("# end {what} {time}\n\n").as_bytes());
    out
}

fn stamped(out: &mut Vec<u8>, new: Option<&Entry>) {
    let Some(new) = new else { return };
    for name in STAMPED {
        if let Some(attr) = new.get(name) {
            write_attrval(out, "replace", name.as_bytes());
            for value in &attr.values {
                write_attrval(out, name, value);
            }
            out.extend_from_slice(b"-\n");
        }
    }
}

/// newrdn, deleteoldrdn and newsuperior, recovered from the entry before and after.
fn rename(out: &mut Vec<u8>, old: &Entry, new: &Entry) {
    let first = |dn: &Dn| Dn {
        rdns: dn.rdns.first().cloned().into_iter().collect(),
    };
    write_attrval(out, "newrdn", first(&new.dn).to_string().as_bytes());
    // The old RDN's values are gone from the entry exactly when the client asked to delete them.
    let kept = old.dn.rdns.first().is_none_or(|rdn| {
        rdn.avas.iter().all(|ava| {
            new.get(&ava.attr)
                .is_some_and(|a| a.values.iter().any(|v| v.eq_ignore_ascii_case(&ava.value)))
        })
    });
    write_attrval(out, "deleteoldrdn", if kept { b"0" } else { b"1" });
    if old.ndn.parent() != new.ndn.parent() {
        write_attrval(out, "newsuperior", new.dn.parent().to_string().as_bytes());
    }
}
