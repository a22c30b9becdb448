//! The password policy in the frontend (docs/password-policy.md): the response controls of binds and
//! password changes, the checks a change needs the cleartext for (before it is hashed), and the
//! restriction of a session bound with pwdReset to changing its own password.

use std::sync::{Arc, Mutex};

use canopy_core::{Entry, LdapError};
use canopy_directory::overlay::ppolicy::bind::Verdict;
use canopy_directory::overlay::ppolicy::change::{self, PasswordChange};
use canopy_directory::overlay::ppolicy::{
    Config, Instant, PasswordPolicyResponse, PolicyError, Warning,
};
use canopy_proto::oid::{
    CONTROL_NETSCAPE_PASSWORD_EXPIRED, CONTROL_NETSCAPE_PASSWORD_EXPIRING, CONTROL_PASSWORD_POLICY,
};
use canopy_proto::{Change, Control, ModifyOperation, ResultCode};
use canopy_schema::NormDn;

use crate::access::Who;
use crate::databases::{Database, Databases};

/// The text slapd answers an operation a reset password forbids.
pub const RESTRICTED: &str =
    "Operations are restricted to bind/unbind/abandon/StartTLS/modify password";

/// Where an operation leaves its password policy response control, success or not (an error result
/// carries no controls of its own). Shared by the clones of one request's controls. Only a request with
/// the password policy control gets a slot ([`PolicySink::new`]); the default one, which the other
/// requests carry, allocates nothing and keeps nothing (no operation sets it: it is passed to the checks
/// only when the control was sent).
#[derive(Debug, Clone, Default)]
pub struct PolicySink(Option<Arc<Mutex<Option<Control>>>>);

impl PolicySink {
    /// A sink that keeps the control set into it.
    pub fn new() -> PolicySink {
        PolicySink(Some(Arc::default()))
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

/// The password policy response control.
pub fn response_control(warning: Option<Warning>, error: Option<PolicyError>) -> Control {
    Control {
        oid: CONTROL_PASSWORD_POLICY.into(),
        critical: false,
        value: Some(PasswordPolicyResponse { warning, error }.encode()),
    }
}

/// The controls of a bind's response: the policy control when the client asked for it, else slapd's
/// Netscape expired/expiring controls when `send_netscape_controls` is on.
pub fn bind_controls(verdict: &Verdict, requested: bool, config: &Config) -> Vec<Control> {
    if requested {
        return vec![response_control(verdict.warning, verdict.error)];
    }
    if !config.send_netscape_controls {
        return Vec::new();
    }
    let netscape = |oid: &str, value: String| Control {
        oid: oid.into(),
        critical: false,
        value: Some(value.into_bytes()),
    };
    match (verdict.error, verdict.warning) {
        (Some(PolicyError::PasswordExpired), _) => {
            vec![netscape(CONTROL_NETSCAPE_PASSWORD_EXPIRED, "0".into())]
        }
        (_, Some(Warning::TimeBeforeExpiration(secs))) => {
            vec![netscape(
                CONTROL_NETSCAPE_PASSWORD_EXPIRING,
                secs.to_string(),
            )]
        }
        _ => Vec::new(),
    }
}

/// A password change about to be made on `ndn` in `dir` by `who`: the new password in cleartext (None
/// when the change only deletes) and whether the old one was given. Checked against the entry's
/// policy on a snapshot, before the value is hashed; a refusal leaves its control in `sink` when the
/// client asked for one.
pub fn check_change(
    dir: &Database,
    who: &Who,
    ndn: &NormDn,
    new: Option<&[u8]>,
    with_old: bool,
    sink: Option<&PolicySink>,
) -> Result<(), LdapError> {
    let Some(pp) = dir.ppolicy() else {
        return Ok(());
    };
    let txn = dir.read()?;
    let Some(entry) = dir.entry_at(&txn, ndn) else {
        return Ok(());
    };
    check_entry(dir, pp, &txn, &entry, who, new, with_old, sink)
}

/// [`check_change`] for an entry about to be added (its own pwdPolicySubentry counts).
pub fn check_add(
    dir: &Database,
    who: &Who,
    entry: &Entry,
    sink: Option<&PolicySink>,
) -> Result<(), LdapError> {
    let Some(pp) = dir.ppolicy() else {
        return Ok(());
    };
    let Some(new) = entry
        .get("userPassword")
        .and_then(|a| a.values.first())
        .cloned()
    else {
        return Ok(());
    };
    let txn = dir.read()?;
    // No history and no age for a new entry: an entry without them stands in.
    let bare = Entry {
        attrs: entry
            .attrs
            .iter()
            .filter(|a| a.desc.eq_ignore_ascii_case("pwdPolicySubentry"))
            .cloned()
            .collect(),
        ..entry.clone()
    };
    check_entry(dir, pp, &txn, &bare, who, Some(&new), true, sink)
}

#[allow(clippy::too_many_arguments)]
fn check_entry(
    dir: &Database,
    pp: &canopy_directory::overlay::ppolicy::PPolicy,
    txn: &canopy_directory::Snapshot,
    entry: &Entry,
    who: &Who,
    new: Option<&[u8]>,
    with_old: bool,
    sink: Option<&PolicySink>,
) -> Result<(), LdapError> {
    let Some(policy) = pp.policy_of(dir.backend(), txn, entry)? else {
        return Ok(());
    };
    let change = PasswordChange {
        entry,
        by_self: who.ndn.as_ref() == Some(&entry.ndn),
        by_root: who.root,
        new,
        with_old,
    };
    change::check(&policy, &change, Instant::now()).map_err(|refusal| {
        if let Some(sink) = sink {
            sink.set(response_control(None, Some(refusal.policy)));
        }
        refusal.error
    })
}

/// The password a modify sets, and whether it names the old one first (a delete with values before
/// the add or replace: slapd's "safe modify"). None when the modify does not touch userPassword.
pub fn modify_password(changes: &[Change]) -> Option<(Option<Vec<u8>>, bool)> {
    let is_password = |c: &Change| {
        let name = c.modification.name.split(';').next().unwrap_or_default();
        name.eq_ignore_ascii_case("userPassword") || name == "2.5.4.35"
    };
    if !changes.iter().any(is_password) {
        return None;
    }
    let mut deleted_first = false;
    let mut new = None;
    for change in changes.iter().filter(|c| is_password(c)) {
        match change.operation {
            ModifyOperation::Delete if new.is_none() && !change.modification.values.is_empty() => {
                deleted_first = true
            }
            ModifyOperation::Add | ModifyOperation::Replace => {
                if let Some(value) = change.modification.values.first() {
                    new = Some(value.clone());
                }
            }
            _ => {}
        }
    }
    let sets = new.is_some();
    Some((new, deleted_first && sets))
}

/// Whether a session bound with pwdReset may run a modify of `target` with `changes`: only a change
/// of its own password.
pub fn allowed_after_reset(who: &Who, target: &NormDn, changes: &[Change]) -> bool {
    who.ndn.as_ref() == Some(target)
        && changes.iter().all(|c| {
            let name = c.modification.name.split(';').next().unwrap_or_default();
            name.eq_ignore_ascii_case("userPassword") || name == "2.5.4.35"
        })
}

/// A critical password policy control where no database runs the overlay is an unavailable critical
/// extension, as slapd answers without its ppolicy module.
pub fn require_overlay(databases: &Databases, controls: &[Control]) -> Result<(), LdapError> {
    let critical = controls
        .iter()
        .any(|c| c.oid == CONTROL_PASSWORD_POLICY && c.critical);
    if critical && !databases.iter().any(|db| db.ppolicy().is_some()) {
        return Err(LdapError::new(
            ResultCode::UnavailableCriticalExtension,
            "critical extension is unavailable",
        ));
    }
    Ok(())
}

/// The refusal of any other operation in such a session.
pub fn restricted() -> LdapError {
    LdapError::new(ResultCode::InsufficientAccessRights, RESTRICTED)
}
