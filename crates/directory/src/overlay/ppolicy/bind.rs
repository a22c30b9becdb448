//! What a bind does under a password policy (draft-behera-ldap-password-policy-10 §8.1, as slapd 2.5's
//! ppolicy does it): lockout, failure counting, expiry with warnings and grace logins, must-change
//! after a reset, idle accounts. The decision is a pure function of the entry, the policy, the clock
//! and whether the password matched; the state it changes is written on the writer thread.

use canopy_core::{Attribute, Entry, LdapError};
use canopy_schema::NormDn;

use super::policy::{effective, first, Policy};
use super::time::Instant;
use super::{PPolicy, PolicyError, Warning};
use crate::database::Directory;

/// The value of pwdAccountLockedTime that locks an account until an administrator unlocks it.
pub const PERMANENT_LOCK: &[u8] = b"000001010000Z";

/// What a bind ends with under the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The bind succeeds (the password matched and nothing in the policy refuses it).
    pub accepted: bool,
    pub warning: Option<Warning>,
    pub error: Option<PolicyError>,
    /// Bound with pwdReset: only a change of one's own password is allowed until then.
    pub must_change: bool,
    /// The governing policy was found (the response control is sent either way).
    pub policy: Option<String>,
}

/// Whether the account is locked at `now`, and whether a lock found has run out (and goes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    Open,
    /// pwdAccountLockedTime has run out: the bind goes on and the attribute is removed.
    Expired,
    Locked,
    /// pwdAccountTmpLockoutEnd (pwdMinDelay) lies in the future.
    Delayed,
}

/// The lock state of `entry` under `policy` at `now`.
pub fn lock_state(policy: &Policy, entry: &Entry, now: Instant) -> Lock {
    if let Some(value) = first(entry, "pwdAccountLockedTime") {
        if value == PERMANENT_LOCK || policy.lockout_duration == 0 {
            return Lock::Locked;
        }
        return match Instant::parse(value) {
            None => Lock::Locked,
            Some(at) if now < at.plus(policy.lockout_duration) => Lock::Locked,
            Some(_) => Lock::Expired,
        };
    }
    if let Some(end) = first(entry, "pwdAccountTmpLockoutEnd").and_then(Instant::parse) {
        if now < end {
            return Lock::Delayed;
        }
    }
    Lock::Open
}

/// The failure times of `entry` still counting at `now` (all of them without pwdFailureCountInterval).
pub fn counted_failures(policy: &Policy, entry: &Entry, now: Instant) -> usize {
    let Some(attr) = entry.get("pwdFailureTime") else {
        return 0;
    };
    attr.values
        .iter()
        .filter(|v| {
            policy.failure_count_interval == 0
                || Instant::parse(v).is_some_and(|t| now <= t.plus(policy.failure_count_interval))
        })
        .count()
}

/// Seconds since the password was last changed, or None without pwdChangedTime.
fn password_age(entry: &Entry, now: Instant) -> Option<(Instant, i64)> {
    let changed = first(entry, "pwdChangedTime").and_then(Instant::parse)?;
    Some((changed, (now.0 - changed.0).div_euclid(1_000_000)))
}

/// Decides a bind on `entry` and changes `next` (a copy of it) to the state the bind leaves behind.
/// `verified`: the password matched. `use_lockout`: a locked account's answer names accountLocked.
pub fn decide(
    policy: &Policy,
    use_lockout: bool,
    entry: &Entry,
    next: &mut Entry,
    verified: bool,
    now: Instant,
) -> Verdict {
    let mut verdict = Verdict {
        policy: Some(policy.dn.clone()),
        ..Verdict::default()
    };
    // slapd leaves entries without the governed attribute alone (ITS#7089).
    if entry.get(&policy.attribute).is_none() {
        return verdict;
    }
    match lock_state(policy, entry, now) {
        Lock::Locked | Lock::Delayed => {
            // A locked account records nothing more: spraying it costs no writes.
            verdict.error = use_lockout.then_some(PolicyError::AccountLocked);
            return verdict;
        }
        Lock::Expired => remove(next, "pwdAccountLockedTime"),
        Lock::Open => {}
    }
    if !verified {
        record_failure(policy, entry, next, now);
        return verdict;
    }
    if policy.max_idle > 0 {
        let last = first(entry, "pwdLastSuccess")
            .or_else(|| first(entry, "pwdChangedTime"))
            .and_then(Instant::parse);
        if last.is_some_and(|t| now > t.plus(policy.max_idle)) {
            verdict.error = use_lockout.then_some(PolicyError::AccountLocked);
            return verdict;
        }
        set(next, "pwdLastSuccess", now.generalized());
    }
    remove(next, "pwdFailureTime");
    remove(next, "pwdAccountTmpLockoutEnd");
    verdict.accepted = true;
    let reset = first(entry, "pwdReset").is_some_and(|v| v.eq_ignore_ascii_case(b"TRUE"));
    if policy.must_change && reset {
        verdict.must_change = true;
        verdict.error = Some(PolicyError::ChangeAfterReset);
        return verdict;
    }
    if policy.max_age == 0 {
        return verdict;
    }
    let Some((changed, age)) = password_age(entry, now) else {
        return verdict;
    };
    if age > policy.max_age {
        let used = entry.get("pwdGraceUseTime").map_or(0, |a| a.values.len());
        let remaining = policy.grace_authn_limit - used as i64;
        let grace_over =
            policy.grace_expiry > 0 && now > changed.plus(policy.max_age).plus(policy.grace_expiry);
        if remaining < 1 || grace_over {
            verdict.accepted = false;
            verdict.error = Some(PolicyError::PasswordExpired);
            return verdict;
        }
        add(next, "pwdGraceUseTime", now.generalized_micros());
        verdict.warning = Some(Warning::GraceAuthNsRemaining(remaining - 1));
        return verdict;
    }
    if policy.expire_warning > 0 && policy.max_age - age < policy.expire_warning {
        verdict.warning = Some(Warning::TimeBeforeExpiration(policy.max_age - age));
    }
    verdict
}

/// A failed bind: one more failure time (the oldest dropped past pwdMaxRecordedFailure), and the lock
/// when it reaches pwdMaxFailure, or the pwdMinDelay back-off.
fn record_failure(policy: &Policy, entry: &Entry, next: &mut Entry, now: Instant) {
    let counted = counted_failures(policy, entry, now);
    let mut times: Vec<Vec<u8>> = entry
        .get("pwdFailureTime")
        .map(|a| a.values.clone())
        .unwrap_or_default();
    times.sort_by_key(|v| Instant::parse(v));
    times.push(now.generalized_micros().into_bytes());
    let keep = policy.recorded_failures();
    if times.len() > keep {
        times.drain(..times.len() - keep);
    }
    put(next, "pwdFailureTime", times);
    if policy.lockout && policy.max_failure > 0 && counted as i64 + 1 >= policy.max_failure {
        set(next, "pwdAccountLockedTime", now.generalized());
    } else if policy.min_delay > 0 {
        let shift = u32::try_from(counted).unwrap_or(u32::MAX).min(30);
        let mut delay = policy.min_delay.saturating_mul(1 << shift);
        if policy.max_delay > 0 {
            delay = delay.min(policy.max_delay);
        }
        set(
            next,
            "pwdAccountTmpLockoutEnd",
            now.plus(delay).generalized(),
        );
    }
}

pub(crate) fn set(entry: &mut Entry, desc: &str, value: String) {
    put(entry, desc, vec![value.into_bytes()]);
}

pub(crate) fn put(entry: &mut Entry, desc: &str, values: Vec<Vec<u8>>) {
    match entry.get_mut(desc) {
        Some(attr) => attr.values = values,
        None => entry.attrs.push(Attribute {
            desc: desc.to_string(),
            values,
        }),
    }
}

pub(crate) fn add(entry: &mut Entry, desc: &str, value: String) {
    match entry.get_mut(desc) {
        Some(attr) => attr.values.push(value.into_bytes()),
        None => put(entry, desc, vec![value.into_bytes()]),
    }
}

pub(crate) fn remove(entry: &mut Entry, desc: &str) {
    entry.attrs.retain(|a| !a.desc.eq_ignore_ascii_case(desc));
}

impl PPolicy {
    /// The bookkeeping of a bind on `ndn` whose password did (`verified`) or did not match: decided
    /// on a read snapshot, and when it changes the entry, decided again and written on the writer
    /// thread (so concurrent binds count every failure, and their writes share group commits). The
    /// answer waits for that commit, as slapd's does. None when no policy governs the entry.
    pub async fn bind(
        &self,
        dir: &Directory,
        ndn: &NormDn,
        verified: bool,
    ) -> Result<Option<Verdict>, LdapError> {
        let now = Instant::now();
        let default = self.default_ndn(dir);
        let (verdict, changed) = {
            let txn = dir.read()?;
            let Some(entry) = dir.entry_at(&txn, ndn) else {
                return Ok(None);
            };
            let Some(policy) = effective(dir, &txn, &entry, default.as_ref())? else {
                return Ok(None);
            };
            let mut next = entry.clone();
            let verdict = decide(
                &policy,
                self.config.use_lockout,
                &entry,
                &mut next,
                verified,
                now,
            );
            (verdict, next != entry)
        };
        if !changed {
            return Ok(Some(verdict));
        }
        let (ndn, use_lockout) = (ndn.clone(), self.config.use_lockout);
        let modifier = self.config.modifier.clone();
        dir.run_write(move |dir, txn, stamp| {
            let Some((id, entry)) = super::super::load(txn, &ndn)? else {
                return Ok(None);
            };
            let Some(policy) = effective(dir, txn, &entry, default.as_ref())? else {
                return Ok(None);
            };
            let mut next = entry.clone();
            let verdict = decide(&policy, use_lockout, &entry, &mut next, verified, now);
            if next != entry {
                // A modify like any other (slapd's is an internal modify by the root DN): a new
                // modifyTimestamp and entryCSN, so the state replicates.
                stamp.touch(&mut next, &modifier);
                dir.rewrite(txn, id, &entry, next)?;
                // Outside the pipeline: the contextCSN learns of it here (the feed in `rewrite`).
                dir.raise_context_with(txn, stamp)?;
            }
            Ok(Some(verdict))
        })
        .await
    }
}
