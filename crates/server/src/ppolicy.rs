//! The password policy in the frontend (docs/password-policy.md), the ppolicy overlay's
//! [`FrontHook`]: the response controls of binds and password changes, the checks a change needs the
//! cleartext for (before it is hashed), and the restriction of a session bound with pwdReset to
//! changing its own password.

use std::sync::Arc;

use canopy_core::{Entry, LdapError};
use canopy_directory::overlay::ppolicy::bind::Verdict;
use canopy_directory::overlay::ppolicy::change::{self, PasswordChange};
use canopy_directory::overlay::ppolicy::usability::usability;
use canopy_directory::overlay::ppolicy::{
    Config, Instant, PPolicy, PasswordPolicyResponse, PolicyError, Warning,
};
use canopy_proto::oid::{
    CONTROL_ACCOUNT_USABILITY, CONTROL_NETSCAPE_PASSWORD_EXPIRED,
    CONTROL_NETSCAPE_PASSWORD_EXPIRING, CONTROL_PASSWORD_POLICY, EXOP_PASSWORD_MODIFY,
    EXOP_START_TLS, EXOP_WHO_AM_I,
};
use canopy_proto::{Change, Control, ModifyOperation, ProtocolOp, ResultCode};
use canopy_schema::NormDn;

use crate::access::Who;
use crate::acl::ops::allows;
use crate::acl::{privileges, AttrRef};
use crate::databases::{
    BindTerms, ControlSlot, Database, Databases, FrontHook, Pending, Restriction,
};

/// The text slapd answers an operation a reset password forbids.
pub const RESTRICTED: &str =
    "Operations are restricted to bind/unbind/abandon/StartTLS/modify password";

/// The password policy response control.
fn response_control(warning: Option<Warning>, error: Option<PolicyError>) -> Control {
    Control {
        oid: CONTROL_PASSWORD_POLICY.into(),
        critical: false,
        value: Some(PasswordPolicyResponse { warning, error }.encode()),
    }
}

/// The controls of a bind's response: the policy control when the client asked for it, else slapd's
/// Netscape expired/expiring controls when `send_netscape_controls` is on.
fn bind_controls(verdict: &Verdict, requested: bool, config: &Config) -> Vec<Control> {
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
fn check_change(
    pp: &PPolicy,
    dir: &Database,
    who: &Who,
    ndn: &NormDn,
    new: Option<&[u8]>,
    with_old: bool,
    sink: Option<&ControlSlot>,
) -> Result<(), LdapError> {
    let txn = dir.read()?;
    let Some(entry) = dir.entry_at(&txn, ndn) else {
        return Ok(());
    };
    check_entry(dir, pp, &txn, &entry, who, new, with_old, sink)
}

/// [`check_change`] for an entry about to be added (its own pwdPolicySubentry counts).
fn check_add(
    pp: &PPolicy,
    dir: &Database,
    who: &Who,
    entry: &Entry,
    sink: Option<&ControlSlot>,
) -> Result<(), LdapError> {
    let Some(new) = entry
        .get("userPassword")
        .and_then(|a| a.values.first())
        .cloned()
    else {
        return Ok(());
    };
    if entry
        .get("userPassword")
        .is_some_and(|a| a.values.len() > 1)
    {
        return Err(one_value_only());
    }
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
    pp: &PPolicy,
    txn: &canopy_directory::Snapshot,
    entry: &Entry,
    who: &Who,
    new: Option<&[u8]>,
    with_old: bool,
    sink: Option<&ControlSlot>,
) -> Result<(), LdapError> {
    let Some(policy) = pp.policy_of(dir.backend(), txn, entry)? else {
        return Ok(());
    };
    // slapd's is_pwdadmin: manage access to the password attribute lifts every check.
    let by_admin = who.root
        || allows(
            dir,
            txn,
            who,
            entry,
            AttrRef::Attr(&policy.attribute),
            privileges::MANAGE,
        );
    let change = PasswordChange {
        entry,
        by_self: who.ndn.as_ref() == Some(&entry.ndn),
        by_admin,
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
fn modify_password(changes: &[Change]) -> Option<(Option<Vec<u8>>, bool)> {
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

/// slapd's refusal of a write that would give an entry several passwords at once, whoever asks and
/// whatever the policy (its ppolicy checks this first).
fn one_value_only() -> LdapError {
    LdapError::new(
        ResultCode::ConstraintViolation,
        "Password policy only allows one password value",
    )
}

/// Whether a modify adds or replaces more than one password: several values in one change, or values
/// in two changes (slapd refuses both, as a policy allows one password).
fn several_passwords(changes: &[Change]) -> bool {
    let mut setting = changes.iter().filter(|c| {
        let name = c.modification.name.split(';').next().unwrap_or_default();
        (name.eq_ignore_ascii_case("userPassword") || name == "2.5.4.35")
            && matches!(c.operation, ModifyOperation::Add | ModifyOperation::Replace)
            && !c.modification.values.is_empty()
    });
    match (setting.next(), setting.next()) {
        (Some(first), None) => first.modification.values.len() > 1,
        (Some(_), Some(_)) => true,
        (None, _) => false,
    }
}

/// Whether a session bound with pwdReset may run a modify of `target` with `changes`: only a change
/// of its own password.
fn allowed_after_reset(who: &Who, target: &NormDn, changes: &[Change]) -> bool {
    who.ndn.as_ref() == Some(target)
        && changes.iter().all(|c| {
            let name = c.modification.name.split(';').next().unwrap_or_default();
            name.eq_ignore_ascii_case("userPassword") || name == "2.5.4.35"
        })
}

/// The refusal of any other operation in such a session.
fn restricted() -> LdapError {
    LdapError::new(ResultCode::InsufficientAccessRights, RESTRICTED)
}

/// The ppolicy overlay in the frontend: the same settings as its hook in the database's pipeline.
pub struct PolicyHook(pub Arc<PPolicy>);

impl FrontHook for PolicyHook {
    fn serves_control(&self, oid: &str) -> bool {
        oid == CONTROL_PASSWORD_POLICY || oid == CONTROL_ACCOUNT_USABILITY
    }

    /// The Account Usability control of a search result entry, as slapd's ppolicy sends it: only to
    /// a requester who may compare the entry's password, only for an entry with a password under a
    /// policy.
    fn entry_control(
        &self,
        dir: &Database,
        who: &Who,
        entry: &Entry,
        oid: &str,
    ) -> Option<Control> {
        if oid != CONTROL_ACCOUNT_USABILITY {
            return None;
        }
        let txn = dir.read().ok()?;
        let policy = self.0.policy_of(dir.backend(), &txn, entry).ok()??;
        let attr = AttrRef::Attr(&policy.attribute);
        if !allows(dir, &txn, who, entry, attr, privileges::COMPARE) {
            return None;
        }
        let value = usability(&policy, entry, Instant::now())?;
        Some(Control {
            oid: CONTROL_ACCOUNT_USABILITY.into(),
            critical: false,
            value: Some(value.encode()),
        })
    }

    fn check_add(
        &self,
        dir: &Database,
        who: &Who,
        entry: &Entry,
        slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        check_add(&self.0, dir, who, entry, slot)
    }

    fn check_modify(
        &self,
        dir: &Database,
        who: &Who,
        ndn: &NormDn,
        changes: &[Change],
        slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        if several_passwords(changes) {
            if let Some(slot) = slot {
                slot.set(response_control(None, None));
            }
            return Err(one_value_only());
        }
        match modify_password(changes) {
            Some((new, with_old)) => {
                check_change(&self.0, dir, who, ndn, new.as_deref(), with_old, slot)
            }
            None => Ok(()),
        }
    }

    fn check_password(
        &self,
        dir: &Database,
        who: &Who,
        ndn: &NormDn,
        new: &[u8],
        with_old: bool,
        slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        check_change(&self.0, dir, who, ndn, Some(new), with_old, slot)
    }

    /// The policy's bookkeeping of a simple bind, written before the answer; an account the policy
    /// refuses (locked, expired) fails as a wrong password does, with the policy's control.
    fn bind<'a>(
        &'a self,
        dir: &'a Database,
        ndn: &'a NormDn,
        verified: bool,
        requested: bool,
    ) -> Pending<'a, Result<Option<BindTerms>, LdapError>> {
        Box::pin(async move {
            let Some(verdict) = self.0.bind(dir.backend(), ndn, verified).await? else {
                return Ok(None);
            };
            Ok(Some(BindTerms {
                controls: bind_controls(&verdict, requested, self.0.config()),
                refused: verified && !verdict.accepted,
                restricts: verdict.must_change,
            }))
        })
    }

    /// A session bound with pwdReset may bind, unbind, abandon, start TLS, ask who it is and change its
    /// own password. slapd's refusal of a modify carries changeAfterReset; that of any other operation
    /// carries no control (checked against slapd 2.5 in e2e).
    fn restriction(
        &self,
        op: &ProtocolOp,
        who: &Who,
        databases: &Databases,
        requested: bool,
    ) -> Restriction {
        match op {
            ProtocolOp::BindRequest(_)
            | ProtocolOp::UnbindRequest
            | ProtocolOp::AbandonRequest(_) => Restriction::Allowed,
            ProtocolOp::ExtendedRequest(req)
                if req.name == EXOP_START_TLS || req.name == EXOP_WHO_AM_I =>
            {
                Restriction::Allowed
            }
            ProtocolOp::ExtendedRequest(req) if req.name == EXOP_PASSWORD_MODIFY => {
                Restriction::Lifts
            }
            ProtocolOp::ModifyRequest(req)
                if databases
                    .normalize(&req.dn)
                    .is_ok_and(|(_, ndn)| allowed_after_reset(who, &ndn, &req.changes)) =>
            {
                Restriction::Lifts
            }
            ProtocolOp::ModifyRequest(_) if requested => Restriction::Refused(
                restricted(),
                vec![response_control(None, Some(PolicyError::ChangeAfterReset))],
            ),
            _ => Restriction::Refused(restricted(), Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::PartialAttribute;

    fn change(operation: ModifyOperation, name: &str, values: &[&str]) -> Change {
        Change {
            operation,
            modification: PartialAttribute {
                name: name.into(),
                values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            },
        }
    }

    #[test]
    fn several_passwords_in_one_modify() {
        use ModifyOperation::*;
        let cases: [(Vec<Change>, bool); 7] = [
            (vec![change(Replace, "userPassword", &["a"])], false),
            (vec![change(Add, "userPassword", &["a", "b"])], true),
            (vec![change(Replace, "2.5.4.35", &["a", "b"])], true),
            (
                vec![
                    change(Add, "userPassword", &["a"]),
                    change(Replace, "userPassword", &["b"]),
                ],
                true,
            ),
            // The safe modify: delete the old value, add the new one.
            (
                vec![
                    change(Delete, "userPassword", &["old"]),
                    change(Add, "userPassword", &["new"]),
                ],
                false,
            ),
            (vec![change(Replace, "userPassword", &[])], false),
            (vec![change(Add, "description", &["a", "b"])], false),
        ];
        for (changes, expected) in cases {
            assert_eq!(several_passwords(&changes), expected, "{changes:?}");
        }
    }
}
