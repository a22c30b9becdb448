//! Sun's Account Usability control (1.3.6.1.4.1.42.2.27.9.5.8) as slapd 2.5's ppolicy answers it on
//! each search result entry: whether the account may bind now, and if not why (locked, reset,
//! expired) with the seconds before it unlocks; if so the seconds before its password expires.

use canopy_core::Entry;
pub use canopy_proto::ppolicy::AccountUsability;

use super::bind::{lock_state, Lock, PERMANENT_LOCK};
use super::policy::{first, Policy};
use super::time::Instant;

/// The usability of the account `entry` (as stored, operational attributes included) under `policy`
/// at `now`; None when the entry has no value of the policy's attribute (slapd sends no control then).
pub fn usability(policy: &Policy, entry: &Entry, now: Instant) -> Option<AccountUsability> {
    entry.get(&policy.attribute)?;
    let now_secs = now.secs();
    let changed = first(entry, "pwdChangedTime")
        .and_then(Instant::parse)
        .map(Instant::secs);
    let mut until_expiry = -1;
    let mut expired = false;
    let mut grace = -1;
    if let (true, Some(changed)) = (policy.max_age > 0, changed) {
        until_expiry = changed + policy.max_age - now_secs;
        expired = until_expiry <= 0;
        if policy.grace_authn_limit > 0
            && (policy.grace_expiry == 0 || until_expiry + policy.grace_expiry > 0)
        {
            let used = entry.get("pwdGraceUseTime").map_or(0, |a| a.values.len());
            grace = policy.grace_authn_limit - used as i64;
        }
    }
    if !expired && policy.max_idle > 0 {
        if let Some(last) = first(entry, "pwdLastSuccess").and_then(Instant::parse) {
            let remaining_idle = last.secs() + policy.max_idle - now_secs;
            if remaining_idle <= 0 {
                expired = true;
            } else if until_expiry == -1 || remaining_idle < until_expiry {
                until_expiry = remaining_idle;
            }
        }
    }
    let locked = matches!(lock_state(policy, entry, now), Lock::Locked | Lock::Delayed);
    if !expired && !locked {
        return Some(AccountUsability::Available(until_expiry));
    }
    // When the lock ends: -1 for good (a permanent lock or no pwdLockoutDuration), else the later of
    // the lockout's end and the pwdMinDelay back-off's.
    let mut end: Option<i64> = None;
    if let Some(value) = first(entry, "pwdAccountLockedTime") {
        end = match Instant::parse(value).map(Instant::secs) {
            Some(at) if value != PERMANENT_LOCK && policy.lockout_duration > 0 => {
                Some(at.max(0) + policy.lockout_duration)
            }
            _ => Some(-1),
        };
    }
    if let Some(tmp) = first(entry, "pwdAccountTmpLockoutEnd").and_then(Instant::parse) {
        if end != Some(-1) && end.is_none_or(|e| tmp.secs() > e) {
            end = Some(tmp.secs());
        }
    }
    let (inactive, seconds_before_unlock) = match end {
        Some(end) if end > now_secs => (true, end - now_secs),
        _ => (false, -1),
    };
    let reset = policy.must_change
        && first(entry, "pwdReset").is_some_and(|v| v.eq_ignore_ascii_case(b"TRUE"));
    Some(AccountUsability::NotAvailable {
        inactive,
        reset,
        expired: false,
        remaining_grace: if expired { grace } else { -1 },
        seconds_before_unlock,
    })
}
