//! A write's guard: the request's controls a write acts on (`WriteControls`) and `AccessGuard`, the
//! access rules and read controls of one requester asked inside the writer's transaction.

use std::sync::Mutex;

use canopy_core::{Entry, LdapError};
use canopy_directory::InWrite;
use canopy_directory::{Action, Directory, Guard, Stamp};
use canopy_proto::oid::{CONTROL_POST_READ, CONTROL_PRE_READ};
use canopy_proto::{Control, Dn, ResultCode};

use crate::access::Who;
use crate::acl::ops::{
    check_add, check_delete, check_modify, check_rename, check_rename_from, hide_matched,
};
use crate::readentry::{check_assertion, load, load_named, read_control, unstored};

use super::Database;

/// What of a request's controls a write acts on inside its transaction (from the request's
/// `reqctl::RequestControls`).
#[derive(Debug, Clone, Default)]
pub struct WriteControls {
    /// RFC 3296: referral objects are ordinary entries.
    pub manage_dsa_it: bool,
    /// RFC 4528: the write applies only if the target matches.
    pub assertion: Option<canopy_proto::Filter>,
    /// RFC 4527: attribute selections of the entry before and after the write.
    pub pre_read: Option<Vec<String>>,
    pub post_read: Option<Vec<String>>,
    /// The Relax Rules control.
    pub relax: bool,
    /// The Permissive Modify control.
    pub permissive: bool,
    /// The No-Op control, with its criticality: every check runs, nothing is stored.
    pub no_op: Option<bool>,
}

impl WriteControls {
    /// An internal write (a rehash on bind, Password Modify): referral objects are entries, no controls.
    pub fn internal() -> WriteControls {
        WriteControls {
            manage_dsa_it: true,
            ..WriteControls::default()
        }
    }
}

/// Access control inside the writer's transaction: the checks of `acl::ops` for one identity, and the
/// request's controls that read the target (assertion, pre-read, post-read).
pub(super) struct AccessGuard {
    db: Database,
    who: Who,
    ctl: WriteControls,
    /// The read controls of the last attempt (a write whose map had to grow runs again).
    reads: Mutex<Reads>,
    /// The answer to give once access is granted, instead of writing.
    verdict: Option<LdapError>,
}

#[derive(Default)]
struct Reads {
    pre: Option<Control>,
    post: Option<Control>,
}

impl AccessGuard {
    pub(super) fn new(
        db: Database,
        who: Who,
        ctl: WriteControls,
        verdict: Option<LdapError>,
    ) -> AccessGuard {
        AccessGuard {
            db,
            who,
            ctl,
            reads: Mutex::new(Reads::default()),
            verdict,
        }
    }

    /// The pre-read and post-read response controls the write's last attempt collected.
    pub(super) fn read_controls(&self) -> Vec<Control> {
        let reads = std::mem::take(&mut *self.reads.lock().unwrap_or_else(|e| e.into_inner()));
        reads.pre.into_iter().chain(reads.post).collect()
    }

    /// Under the Relax Rules control, `manage` on each of `descs` that is a bookkeeping attribute
    /// (`canopy_core::check::manageable`), as slapd asks for its managed modifications.
    fn relaxed(&self, txn: &InWrite<'_>, entry: &Entry, descs: &[&str]) -> Result<(), LdapError> {
        if !self.ctl.relax {
            return Ok(());
        }
        let schema = self.db.schema();
        let managed: Vec<&str> = descs
            .iter()
            .copied()
            .filter(|desc| {
                let name = desc.split(';').next().unwrap_or(desc);
                schema
                    .attribute_type(name)
                    .is_some_and(|at| at.no_user_modification && canopy_core::check::manageable(at))
            })
            .collect();
        crate::acl::ops::check_manage(&self.db, txn, &self.who, entry, &managed)
    }
}

impl Guard for AccessGuard {
    fn requester(&self) -> &str {
        &self.who.dn
    }

    fn relax(&self) -> bool {
        self.ctl.relax
    }

    fn permissive(&self) -> bool {
        self.ctl.permissive
    }

    fn no_op(&self) -> bool {
        self.ctl.no_op.is_some()
    }

    fn manage_dsa_it(&self) -> bool {
        self.ctl.manage_dsa_it
    }

    /// The root DN's rights do not depend on the entry; anyone else's access rules may test the values
    /// (`dnattr`, `filter=`, `set=`).
    fn authorizes_without_values(&self) -> bool {
        self.who.root
    }

    fn before_change(
        &self,
        _dir: &Directory,
        txn: InWrite<'_>,
        id: Option<u64>,
        entry: &Entry,
    ) -> Result<(), LdapError> {
        let (ctl, schema) = (&self.ctl, self.db.schema());
        if ctl.assertion.is_none() && ctl.pre_read.is_none() {
            return Ok(());
        }
        let seen = match id {
            Some(id) => {
                let bytes = self.db.stored(&txn, id)?.ok_or_else(|| {
                    LdapError::new(ResultCode::Other, "dn2id points to a missing entry")
                })?;
                load(&self.db, &txn, &self.who, id, bytes)?
            }
            None => {
                // An add: the entry as it will be stored (the writer stamps it just after).
                let mut stamped = entry.clone();
                Stamp::now().fill(&mut stamped);
                unstored(&self.db, &txn, &self.who, &stamped)
            }
        };
        if let Some(filter) = &ctl.assertion {
            check_assertion(schema, &seen, filter)?;
        }
        let pre = ctl.pre_read.as_ref().map(|attrs| {
            let dn = seen.entry().dn.to_string();
            read_control(schema, CONTROL_PRE_READ, attrs, &seen, dn.as_bytes())
        });
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).pre = pre;
        Ok(())
    }

    fn after_change(&self, _dir: &Directory, txn: InWrite<'_>, id: u64, dn: &Dn) {
        let Some(attrs) = &self.ctl.post_read else {
            return;
        };
        // The change stands: a failure to read it back loses the control, never the change.
        let read = || -> Result<Option<Control>, LdapError> {
            let Some(bytes) = self.db.stored(&txn, id)? else {
                return Ok(None);
            };
            let dn = dn.to_string();
            let seen = load_named(&self.db, &txn, &self.who, id, bytes, dn.as_bytes())?;
            Ok(Some(read_control(
                self.db.schema(),
                CONTROL_POST_READ,
                attrs,
                &seen,
                dn.as_bytes(),
            )))
        };
        match read() {
            Ok(post) => self.reads.lock().unwrap_or_else(|e| e.into_inner()).post = post,
            Err(error) => tracing::warn!(%error.message, "post-read failed"),
        }
    }

    fn authorize(
        &self,
        _dir: &Directory,
        txn: InWrite<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError> {
        let (db, who) = (&self.db, &self.who);
        match action {
            Action::Add(entry) => check_add(db, &txn, who, entry).and_then(|()| {
                // Under relax, every bookkeeping attribute the new entry holds needs manage.
                let held: Vec<&str> = entry.attrs.iter().map(|a| a.desc.as_str()).collect();
                self.relaxed(&txn, entry, &held)
            }),
            Action::Delete(entry) => check_delete(db, &txn, who, entry),
            Action::Modify(entry, changes) => {
                check_modify(db, &txn, who, entry, changes).and_then(|()| {
                    let touched: Vec<&str> = changes
                        .iter()
                        .map(|c| c.modification.name.as_str())
                        .collect();
                    self.relaxed(&txn, entry, &touched)
                })
            }
            Action::RenameFrom { ndn, moving } => check_rename_from(db, &txn, who, ndn, moving),
            Action::Rename {
                entry,
                new_parent,
                rdn_attrs,
            } => check_rename(db, &txn, who, entry, new_parent, rdn_attrs),
        }?;
        match &self.verdict {
            None => Ok(()),
            Some(error) => Err(error.clone()),
        }
    }

    fn conceal(&self, _dir: &Directory, txn: InWrite<'_>, error: LdapError) -> LdapError {
        hide_matched(&self.db, &txn, &self.who, error)
    }
}
