//! A `pwdPolicy` entry read into typed settings, and the policy that governs an entry: its own
//! `pwdPolicySubentry`, else the overlay's default (draft-behera-ldap-password-policy-10 §5.2).

use canopy_core::{Entry, LdapError};
use canopy_schema::NormDn;

use crate::database::Directory;

/// The settings of one password policy; absent attributes take the draft's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The policy entry's DN, as stored.
    pub dn: String,
    /// `pwdAttribute`: the attribute the policy governs (userPassword; slapd supports no other).
    pub attribute: String,
    pub min_age: i64,
    pub max_age: i64,
    pub in_history: i64,
    /// 0: no check, 1: check when the value is cleartext, 2: refuse values that cannot be checked.
    pub check_quality: i64,
    pub min_length: i64,
    pub max_length: i64,
    pub expire_warning: i64,
    pub grace_authn_limit: i64,
    pub grace_expiry: i64,
    pub lockout: bool,
    pub lockout_duration: i64,
    pub max_failure: i64,
    pub failure_count_interval: i64,
    pub must_change: bool,
    pub allow_user_change: bool,
    pub safe_modify: bool,
    pub min_delay: i64,
    pub max_delay: i64,
    pub max_idle: i64,
    pub max_recorded_failure: i64,
}

impl Policy {
    /// The policy of a `pwdPolicy` entry; None when the entry is not one.
    pub fn from_entry(entry: &Entry) -> Option<Policy> {
        let is_policy = entry.get("objectClass").is_some_and(|a| {
            a.values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(b"pwdPolicy") || v == b"1.3.6.1.4.1.42.2.27.8.2.1")
        });
        if !is_policy {
            return None;
        }
        let int = |name: &str| -> i64 {
            first(entry, name)
                .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse().ok())
                .unwrap_or(0)
                .max(0)
        };
        let boolean = |name: &str, default: bool| -> bool {
            match first(entry, name) {
                Some(v) if v.eq_ignore_ascii_case(b"TRUE") => true,
                Some(v) if v.eq_ignore_ascii_case(b"FALSE") => false,
                _ => default,
            }
        };
        Some(Policy {
            dn: entry.dn.to_string(),
            attribute: first(entry, "pwdAttribute")
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_else(|| "userPassword".into()),
            min_age: int("pwdMinAge"),
            max_age: int("pwdMaxAge"),
            in_history: int("pwdInHistory"),
            check_quality: int("pwdCheckQuality"),
            min_length: int("pwdMinLength"),
            max_length: int("pwdMaxLength"),
            expire_warning: int("pwdExpireWarning"),
            grace_authn_limit: int("pwdGraceAuthNLimit"),
            grace_expiry: int("pwdGraceExpiry"),
            lockout: boolean("pwdLockout", false),
            lockout_duration: int("pwdLockoutDuration"),
            max_failure: int("pwdMaxFailure"),
            failure_count_interval: int("pwdFailureCountInterval"),
            must_change: boolean("pwdMustChange", false),
            allow_user_change: boolean("pwdAllowUserChange", true),
            safe_modify: boolean("pwdSafeModify", false),
            min_delay: int("pwdMinDelay"),
            max_delay: int("pwdMaxDelay"),
            max_idle: int("pwdMaxIdle"),
            max_recorded_failure: int("pwdMaxRecordedFailure"),
        })
    }

    /// How many failure times are kept: pwdMaxRecordedFailure, else pwdMaxFailure, else 5 (slapd 2.5).
    pub fn recorded_failures(&self) -> usize {
        let n = match (self.max_recorded_failure, self.max_failure) {
            (0, 0) => 5,
            (0, max) => max,
            (recorded, _) => recorded,
        };
        usize::try_from(n).unwrap_or(usize::MAX).max(1)
    }

    /// The settings as `name: value` lines, in the draft's order (for `canopy policy-check`).
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let b = |v: bool| if v { "TRUE" } else { "FALSE" }.to_string();
        vec![
            ("pwdAttribute", self.attribute.clone()),
            ("pwdMinAge", self.min_age.to_string()),
            ("pwdMaxAge", self.max_age.to_string()),
            ("pwdInHistory", self.in_history.to_string()),
            ("pwdCheckQuality", self.check_quality.to_string()),
            ("pwdMinLength", self.min_length.to_string()),
            ("pwdMaxLength", self.max_length.to_string()),
            ("pwdExpireWarning", self.expire_warning.to_string()),
            ("pwdGraceAuthNLimit", self.grace_authn_limit.to_string()),
            ("pwdGraceExpiry", self.grace_expiry.to_string()),
            ("pwdLockout", b(self.lockout)),
            ("pwdLockoutDuration", self.lockout_duration.to_string()),
            ("pwdMaxFailure", self.max_failure.to_string()),
            (
                "pwdFailureCountInterval",
                self.failure_count_interval.to_string(),
            ),
            ("pwdMustChange", b(self.must_change)),
            ("pwdAllowUserChange", b(self.allow_user_change)),
            ("pwdSafeModify", b(self.safe_modify)),
            ("pwdMinDelay", self.min_delay.to_string()),
            ("pwdMaxDelay", self.max_delay.to_string()),
            ("pwdMaxIdle", self.max_idle.to_string()),
            (
                "pwdMaxRecordedFailure",
                self.max_recorded_failure.to_string(),
            ),
        ]
    }
}

/// The first value of `name` in `entry`.
pub(crate) fn first<'e>(entry: &'e Entry, name: &str) -> Option<&'e [u8]> {
    entry.get(name)?.values.first().map(Vec::as_slice)
}

/// The policy that governs `entry`: the one its `pwdPolicySubentry` names, else `default`; None when
/// that names no `pwdPolicy` entry (slapd then applies no policy). An entry whose pwdPolicySubentry
/// names a missing or invalid policy gets none, not the default ("policy subentry missing or
/// invalid, no policy will be applied", slapd's ppolicy_get).
pub fn effective(
    dir: &Directory,
    txn: &impl crate::View,
    entry: &Entry,
    default: Option<&NormDn>,
) -> Result<Option<Policy>, LdapError> {
    let txn = crate::view::txn(txn);
    let chosen = match first(entry, "pwdPolicySubentry") {
        Some(raw) => match dir.normalize(raw) {
            Ok((_, ndn)) => Some(ndn),
            Err(_) => return Ok(None),
        },
        None => default.cloned(),
    };
    let Some(ndn) = chosen else {
        return Ok(None);
    };
    let Some(mut policy) = dir
        .entry_at(txn, &ndn)
        .as_ref()
        .and_then(Policy::from_entry)
    else {
        return Ok(None);
    };
    // `pwdAttribute` names its type by a NAME or an OID (slapd's own tests write `2.5.4.35`): the
    // schema's canonical name, which entries' attributes carry.
    if let Some(canonical) = dir
        .schema()
        .attribute_type(&policy.attribute)
        .and_then(|t| t.names.first())
    {
        policy.attribute = canonical.clone();
    }
    Ok(Some(policy))
}
