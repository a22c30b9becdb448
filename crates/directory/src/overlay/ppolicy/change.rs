//! Password changes under a policy (draft-behera-ldap-password-policy-10 §7.2, in slapd 2.5's order):
//! who may change, safe modify, minimum age, quality and length, history; and the state a change
//! leaves on the entry (pwdChangedTime, pwdHistory, pwdReset, failures and locks cleared).

use canopy_core::{Entry, LdapError};
use canopy_proto::ppolicy::PolicyError;
use canopy_proto::ResultCode;

use super::bind::{put, remove, set};
use super::policy::{first, Policy};
use super::time::Instant;

/// The syntax OID slapd records in pwdHistory values (octet string).
const HISTORY_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.40";

/// A password change as the frontend sees it, before the new value is hashed.
pub struct PasswordChange<'a> {
    /// The entry as it is now.
    pub entry: &'a Entry,
    /// The requester changes their own password.
    pub by_self: bool,
    /// The requester is a password administrator, whom no policy check applies to: the root DN, or
    /// anyone with `manage` access to the policy's attribute of the entry (slapd's is_pwdadmin).
    pub by_admin: bool,
    /// The new password as the client sent it; None when the change only deletes.
    pub new: Option<&'a [u8]>,
    /// The client named the old password: a modify deleting a value before adding, or Password
    /// Modify's oldPasswd.
    pub with_old: bool,
}

/// A refused change: the result and the response control's error.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub error: LdapError,
    pub policy: PolicyError,
}

fn refuse(code: ResultCode, text: &str, policy: PolicyError) -> Refusal {
    Refusal {
        error: LdapError::new(code, text),
        policy,
    }
}

/// Whether a value already carries a `{SCHEME}` prefix (a hash the client computed).
fn is_hashed(value: &[u8]) -> bool {
    value.first() == Some(&b'{') && value.iter().skip(1).take(32).any(|&b| b == b'}')
}

/// Checks a change against `policy` at `now`, in slapd's order; a password administrator passes
/// every check.
pub fn check(policy: &Policy, change: &PasswordChange<'_>, now: Instant) -> Result<(), Refusal> {
    if change.by_admin {
        return Ok(());
    }
    if !policy.allow_user_change && change.by_self {
        return Err(refuse(
            ResultCode::InsufficientAccessRights,
            "User alteration of password is not allowed",
            PolicyError::PasswordModNotAllowed,
        ));
    }
    let Some(new) = change.new else {
        return Ok(());
    };
    if policy.safe_modify && !change.with_old {
        return Err(refuse(
            ResultCode::InsufficientAccessRights,
            "Must supply old password to be changed as well as new one",
            PolicyError::MustSupplyOldPassword,
        ));
    }
    let entry = change.entry;
    let reset = first(entry, "pwdReset").is_some_and(|v| v.eq_ignore_ascii_case(b"TRUE"));
    if !reset && policy.min_age > 0 {
        let changed = first(entry, "pwdChangedTime").and_then(Instant::parse);
        if changed.is_some_and(|t| now < t.plus(policy.min_age)) {
            return Err(refuse(
                ResultCode::ConstraintViolation,
                "Password is too young to change",
                PolicyError::PasswordTooYoung,
            ));
        }
    }
    if policy.check_quality > 0 {
        quality(policy, new)?;
    }
    if policy.in_history > 0 && in_history(policy, entry, new) {
        return Err(refuse(
            ResultCode::ConstraintViolation,
            "Password is in history of old passwords",
            PolicyError::PasswordInHistory,
        ));
    }
    Ok(())
}

/// pwdCheckQuality: a hashed value cannot be checked (refused at 2, accepted at 1); a cleartext one
/// must have pwdMinLength..=pwdMaxLength characters.
fn quality(policy: &Policy, new: &[u8]) -> Result<(), Refusal> {
    let fails = |policy_error| {
        refuse(
            ResultCode::ConstraintViolation,
            "Password fails quality checking policy",
            policy_error,
        )
    };
    if is_hashed(new) {
        return match policy.check_quality {
            2 => Err(fails(PolicyError::InsufficientPasswordQuality)),
            _ => Ok(()),
        };
    }
    let length = String::from_utf8(new.to_vec()).map_or(new.len(), |s| s.chars().count()) as i64;
    if policy.min_length > 0 && length < policy.min_length {
        return Err(fails(PolicyError::PasswordTooShort));
    }
    if policy.max_length > 0 && length > policy.max_length {
        return Err(fails(PolicyError::PasswordTooLong));
    }
    Ok(())
}

/// Whether `new` matches the current password or one of the last pwdInHistory ones.
fn in_history(policy: &Policy, entry: &Entry, new: &[u8]) -> bool {
    let matches = |stored: &[u8]| canopy_password::verify(stored, new).unwrap_or(false);
    let current = entry
        .get(&policy.attribute)
        .is_some_and(|a| a.values.iter().any(|v| matches(v)));
    if current {
        return true;
    }
    let mut history = history_values(entry);
    history.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    let keep = usize::try_from(policy.in_history).unwrap_or(usize::MAX);
    history.iter().take(keep).any(|(_, value)| matches(value))
}

/// The pwdHistory values of `entry` as (time, stored password): `time#syntax#length#value`.
fn history_values(entry: &Entry) -> Vec<(Instant, Vec<u8>)> {
    let Some(attr) = entry.get("pwdHistory") else {
        return Vec::new();
    };
    attr.values
        .iter()
        .filter_map(|v| {
            let mut parts = v.splitn(4, |&b| b == b'#');
            let time = Instant::parse(parts.next()?)?;
            let (_syntax, _length) = (parts.next()?, parts.next()?);
            Some((time, parts.next()?.to_vec()))
        })
        .collect()
}

/// The state a password change leaves on `new` (the entry to be stored; `old` before the change),
/// as slapd's ppolicy writes it with the change. `touched` says which state attributes the request
/// itself changes, which are then left as requested.
pub fn record(
    policy: &Policy,
    old: Option<&Entry>,
    new: &mut Entry,
    by_self: bool,
    touched: &dyn Fn(&str) -> bool,
    now: Instant,
) {
    let has_password = new.get(&policy.attribute).is_some();
    let Some(old) = old else {
        // An add: aging starts when the policy ages passwords.
        if has_password && (policy.max_age > 0 || policy.min_age > 0) && !touched("pwdChangedTime")
        {
            set(new, "pwdChangedTime", now.generalized());
        }
        // slapd sets no pwdReset on an add, even under pwdMustChange: only a later change by
        // someone else does.
        return;
    };
    if has_password {
        set(new, "pwdChangedTime", now.generalized());
    } else {
        remove(new, "pwdChangedTime");
    }
    for attr in ["pwdGraceUseTime", "pwdAccountLockedTime", "pwdFailureTime"] {
        if !touched(attr) {
            remove(new, attr);
        }
    }
    if !touched("pwdReset") {
        if policy.must_change && !by_self && has_password {
            set(new, "pwdReset", "TRUE".into());
        } else {
            remove(new, "pwdReset");
        }
    }
    if policy.in_history > 0 {
        let mut history = history_values(old);
        history.sort_by_key(|(time, _)| *time);
        if let Some(previous) = old.get(&policy.attribute) {
            for value in &previous.values {
                history.push((now, value.clone()));
            }
        }
        let keep = usize::try_from(policy.in_history).unwrap_or(usize::MAX);
        if history.len() > keep {
            history.drain(..history.len() - keep);
        }
        let values = history
            .into_iter()
            .map(|(time, value)| {
                let mut v = format!("{}#{HISTORY_SYNTAX}#{}#", time.generalized(), value.len())
                    .into_bytes();
                v.extend_from_slice(&value);
                v
            })
            .collect();
        put(new, "pwdHistory", values);
    }
}
