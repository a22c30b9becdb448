//! The password policy in the backend: bind decisions as a table over entry states and clocks, the
//! checks of a password change, and, on a real database, the bookkeeping of concurrent failed binds
//! (every failure counted, the lock set once) and the state a password change records.

mod support;

use std::sync::Arc;

use canopy_core::{Attribute, Entry};
use canopy_directory::overlay::ppolicy::bind::{decide, Verdict};
use canopy_directory::overlay::ppolicy::change::{check, PasswordChange};
use canopy_directory::overlay::ppolicy::usability::{usability, AccountUsability};
use canopy_directory::overlay::ppolicy::{
    Config, Instant, PPolicy, Policy, PolicyError, Warning, PPOLICY_SCHEMA,
};
use canopy_directory::{Directory, Pipeline};
use canopy_proto::{Dn, ModifyOperation};
use canopy_schema::{NormDn, Schema};
use support::{add, modify, ADMIN};

const NOW: i64 = 1_800_000_000;

fn policy() -> Policy {
    let mut entry = entry(&[
        ("objectClass", "pwdPolicy"),
        ("pwdAttribute", "userPassword"),
    ]);
    entry.dn = Dn::parse(b"cn=pp,dc=example,dc=com").unwrap();
    Policy::from_entry(&entry).unwrap()
}

fn entry(attrs: &[(&str, &str)]) -> Entry {
    let mut out = Entry {
        dn: Dn::parse(b"uid=u,dc=example,dc=com").unwrap(),
        ndn: NormDn::default(),
        attrs: Vec::new(),
    };
    for (name, value) in attrs {
        match out.get_mut(name) {
            Some(a) => a.values.push(value.as_bytes().to_vec()),
            None => out.attrs.push(Attribute {
                desc: name.to_string(),
                values: vec![value.as_bytes().to_vec()],
            }),
        }
    }
    out
}

fn at(secs: i64) -> String {
    Instant::from_secs(secs).generalized()
}

/// Runs one bind decision: the verdict and the state attributes left (name, number of values).
fn bind(
    policy: &Policy,
    attrs: &[(&str, &str)],
    verified: bool,
) -> (Verdict, Vec<(String, usize)>) {
    let before = entry(attrs);
    let mut after = before.clone();
    let verdict = decide(
        policy,
        true,
        &before,
        &mut after,
        verified,
        Instant::from_secs(NOW),
    );
    let state = after
        .attrs
        .iter()
        .filter(|a| a.desc.starts_with("pwd"))
        .map(|a| (a.desc.clone(), a.values.len()))
        .collect();
    (verdict, state)
}

fn has(state: &[(String, usize)], name: &str) -> usize {
    state.iter().find(|(n, _)| n == name).map_or(0, |(_, n)| *n)
}

#[test]
fn lockout_table() {
    let mut p = policy();
    p.lockout = true;
    p.max_failure = 3;
    p.lockout_duration = 60;
    p.failure_count_interval = 30;
    let pw = ("userPassword", "{SSHA}x");
    let (old, recent) = (at(NOW - 100), at(NOW - 10));
    // Two recent failures and a third: locked. Old failures do not count.
    let (v, s) = bind(
        &p,
        &[pw, ("pwdFailureTime", &recent), ("pwdFailureTime", &recent)],
        false,
    );
    assert!(!v.accepted && v.error.is_none());
    assert_eq!(has(&s, "pwdAccountLockedTime"), 1);
    let (_, s) = bind(
        &p,
        &[pw, ("pwdFailureTime", &old), ("pwdFailureTime", &recent)],
        false,
    );
    assert_eq!(has(&s, "pwdAccountLockedTime"), 0);
    assert_eq!(has(&s, "pwdFailureTime"), 3);
    // Locked: the right password fails with accountLocked and nothing changes.
    let locked = at(NOW - 5);
    let (v, s) = bind(&p, &[pw, ("pwdAccountLockedTime", &locked)], true);
    assert_eq!(
        (v.accepted, v.error),
        (false, Some(PolicyError::AccountLocked))
    );
    assert_eq!(s, vec![("pwdAccountLockedTime".to_string(), 1)]);
    // The lock ran out: the bind succeeds and clears it with the failures.
    let expired = at(NOW - 61);
    let (v, s) = bind(
        &p,
        &[
            pw,
            ("pwdAccountLockedTime", &expired),
            ("pwdFailureTime", &recent),
        ],
        true,
    );
    assert!(v.accepted && v.error.is_none());
    assert!(s.is_empty(), "{s:?}");
    // Permanent lock (and duration 0) hold whatever the clock says.
    let (v, _) = bind(&p, &[pw, ("pwdAccountLockedTime", "000001010000Z")], true);
    assert!(!v.accepted);
    p.lockout_duration = 0;
    let (v, _) = bind(
        &p,
        &[pw, ("pwdAccountLockedTime", &at(NOW - 100_000))],
        true,
    );
    assert!(!v.accepted);
    // An entry without the password attribute is left alone.
    let (v, s) = bind(&p, &[("pwdFailureTime", &recent)], false);
    assert!(!v.accepted && v.error.is_none());
    assert_eq!(has(&s, "pwdFailureTime"), 1);
}

#[test]
fn recorded_failures_are_capped() {
    let mut p = policy();
    p.max_recorded_failure = 2;
    let t = at(NOW - 1);
    let (_, s) = bind(
        &p,
        &[
            ("userPassword", "x"),
            ("pwdFailureTime", &t),
            ("pwdFailureTime", &t),
        ],
        false,
    );
    assert_eq!(has(&s, "pwdFailureTime"), 2);
    p.max_recorded_failure = 0;
    assert_eq!(p.recorded_failures(), 5);
}

/// State attributes, and the bind's acceptance, warning and error.
type Case = (
    Vec<(&'static str, String)>,
    bool,
    Option<Warning>,
    Option<PolicyError>,
);

#[test]
fn expiry_grace_and_warnings() {
    let mut p = policy();
    p.max_age = 100;
    p.expire_warning = 30;
    p.grace_authn_limit = 2;
    let pw = ("userPassword", "x");
    let cases: Vec<Case> = vec![
        (vec![("pwdChangedTime", at(NOW - 10))], true, None, None),
        (
            vec![("pwdChangedTime", at(NOW - 80))],
            true,
            Some(Warning::TimeBeforeExpiration(20)),
            None,
        ),
        (
            vec![("pwdChangedTime", at(NOW - 200))],
            true,
            Some(Warning::GraceAuthNsRemaining(1)),
            None,
        ),
        (
            vec![
                ("pwdChangedTime", at(NOW - 200)),
                ("pwdGraceUseTime", at(NOW - 1)),
            ],
            true,
            Some(Warning::GraceAuthNsRemaining(0)),
            None,
        ),
        (
            vec![
                ("pwdChangedTime", at(NOW - 200)),
                ("pwdGraceUseTime", at(NOW - 2)),
                ("pwdGraceUseTime", at(NOW - 1)),
            ],
            false,
            None,
            Some(PolicyError::PasswordExpired),
        ),
        // No pwdChangedTime: the password never expires.
        (vec![], true, None, None),
        // pwdReset means nothing unless the policy has pwdMustChange.
        (
            vec![
                ("pwdChangedTime", at(NOW - 200)),
                ("pwdReset", "TRUE".into()),
            ],
            true,
            Some(Warning::GraceAuthNsRemaining(1)),
            None,
        ),
    ];
    for (attrs, accepted, warning, error) in cases {
        let mut all: Vec<(&str, &str)> = vec![pw];
        all.extend(attrs.iter().map(|(n, v)| (*n, v.as_str())));
        let (v, _) = bind(&p, &all, true);
        assert_eq!(
            (v.accepted, v.warning, v.error),
            (accepted, warning, error),
            "{attrs:?}"
        );
    }
    p.must_change = true;
    let reset = [pw, ("pwdReset", "TRUE")];
    let (v, _) = bind(&p, &reset, true);
    assert!(v.accepted && v.must_change);
    assert_eq!(v.error, Some(PolicyError::ChangeAfterReset));
    // pwdGraceExpiry ends grace logins after that many seconds past expiry.
    p.must_change = false;
    p.grace_expiry = 50;
    let changed = at(NOW - 200);
    let (v, _) = bind(&p, &[pw, ("pwdChangedTime", &changed)], true);
    assert_eq!(v.error, Some(PolicyError::PasswordExpired));
}

#[test]
fn min_delay_and_idle() {
    let mut p = policy();
    p.min_delay = 2;
    p.max_delay = 5;
    let recent = at(NOW - 1);
    let (_, s) = bind(
        &p,
        &[
            ("userPassword", "x"),
            ("pwdFailureTime", &recent),
            ("pwdFailureTime", &recent),
        ],
        false,
    );
    assert_eq!(has(&s, "pwdAccountTmpLockoutEnd"), 1);
    let end = at(NOW + 3);
    let (v, _) = bind(
        &p,
        &[("userPassword", "x"), ("pwdAccountTmpLockoutEnd", &end)],
        true,
    );
    assert!(!v.accepted);
    let mut p = policy();
    p.max_idle = 100;
    let (v, _) = bind(
        &p,
        &[("userPassword", "x"), ("pwdLastSuccess", &at(NOW - 101))],
        true,
    );
    assert!(!v.accepted);
    let (v, s) = bind(
        &p,
        &[("userPassword", "x"), ("pwdLastSuccess", &at(NOW - 99))],
        true,
    );
    assert!(v.accepted);
    assert_eq!(has(&s, "pwdLastSuccess"), 1);
}

#[test]
fn change_checks_in_slapd_order() {
    let mut p = policy();
    p.allow_user_change = false;
    p.safe_modify = true;
    p.min_age = 10;
    p.check_quality = 2;
    p.min_length = 6;
    p.max_length = 12;
    p.in_history = 1;
    let current = canopy_password::hash(canopy_password::Scheme::Ssha, b"current1").unwrap();
    let old = format!(
        "{}#1.3.6.1.4.1.1466.115.121.1.40#6#{}",
        at(NOW - 500),
        canopy_password::hash(canopy_password::Scheme::Ssha, b"older1").unwrap()
    );
    let young = at(NOW - 5);
    let e = entry(&[
        ("userPassword", &current),
        ("pwdChangedTime", &young),
        ("pwdHistory", &old),
    ]);
    let now = Instant::from_secs(NOW);
    let run = |p: &Policy, new: &str, by_self: bool, with_old: bool| {
        let change = PasswordChange {
            entry: &e,
            by_self,
            by_admin: false,
            new: Some(new.as_bytes()),
            with_old,
        };
        check(p, &change, now).err().map(|r| r.policy)
    };
    assert_eq!(
        run(&p, "new-one1", true, true),
        Some(PolicyError::PasswordModNotAllowed)
    );
    p.allow_user_change = true;
    assert_eq!(
        run(&p, "new-one1", true, false),
        Some(PolicyError::MustSupplyOldPassword)
    );
    assert_eq!(
        run(&p, "new-one1", true, true),
        Some(PolicyError::PasswordTooYoung)
    );
    p.min_age = 0;
    assert_eq!(
        run(&p, "short", true, true),
        Some(PolicyError::PasswordTooShort)
    );
    assert_eq!(
        run(&p, "much-too-long-1", true, true),
        Some(PolicyError::PasswordTooLong)
    );
    assert_eq!(
        run(&p, "{SSHA}abcdefgh", true, true),
        Some(PolicyError::InsufficientPasswordQuality)
    );
    assert_eq!(
        run(&p, "current1", true, true),
        Some(PolicyError::PasswordInHistory)
    );
    assert_eq!(
        run(&p, "older1", true, true),
        Some(PolicyError::PasswordInHistory)
    );
    assert_eq!(run(&p, "fresh-one", true, true), None);
    p.in_history = 0;
    assert_eq!(run(&p, "older1", true, true), None);
    // A password administrator (the root DN, or manage access) passes everything.
    let change = PasswordChange {
        entry: &e,
        by_self: false,
        by_admin: true,
        new: Some(b"x"),
        with_old: false,
    };
    assert!(check(&p, &change, now).is_ok());
}

fn open(path: &std::path::Path) -> (Directory, Arc<PPolicy>) {
    let mut schema = Schema::builtin();
    schema.load_text(PPOLICY_SCHEMA, "ppolicy").unwrap();
    let config = Config {
        default: Some("cn=pp,dc=example,dc=com".into()),
        use_lockout: true,
        ..Config::default()
    };
    let hook = Arc::new(PPolicy::new(config));
    let pipeline = Pipeline::standard().then(hook.clone());
    (support::open_with(path, schema, Vec::new(), pipeline), hook)
}

fn values(dir: &Directory, dn: &str, attr: &str) -> Vec<String> {
    let txn = dir.read().unwrap();
    let (_, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    dir.entry_at(&txn, &ndn)
        .and_then(|e| e.get(attr).cloned())
        .map(|a| {
            a.values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_failures_count_once_each_and_lock() {
    let dir_path = tempfile::tempdir().unwrap();
    let (dir, pp) = open(dir_path.path());
    add(
        &dir,
        "dc=example,dc=com",
        &[("objectClass", "domain"), ("dc", "example")],
    )
    .await
    .unwrap();
    add(
        &dir,
        "cn=pp,dc=example,dc=com",
        &[
            ("objectClass", "device"),
            ("objectClass", "pwdPolicy"),
            ("cn", "pp"),
            ("pwdAttribute", "userPassword"),
            ("pwdLockout", "TRUE"),
            ("pwdMaxFailure", "5"),
            ("pwdLockoutDuration", "600"),
            ("pwdInHistory", "2"),
            ("pwdMustChange", "TRUE"),
        ],
    )
    .await
    .unwrap();
    let user = "uid=u,dc=example,dc=com";
    add(
        &dir,
        user,
        &[
            ("objectClass", "account"),
            ("objectClass", "simpleSecurityObject"),
            ("uid", "u"),
            ("userPassword", "{SSHA}first"),
        ],
    )
    .await
    .unwrap();
    let (_, ndn) = dir.normalize(user.as_bytes()).unwrap();
    // Twelve failed binds at once: every one until the lock is recorded, then none.
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let (dir, pp, ndn) = (dir.clone(), pp.clone(), ndn.clone());
        tasks.push(tokio::spawn(
            async move { pp.bind(&dir, &ndn, false).await },
        ));
    }
    for task in tasks {
        task.await.unwrap().unwrap().unwrap();
    }
    assert_eq!(values(&dir, user, "pwdFailureTime").len(), 5);
    assert_eq!(values(&dir, user, "pwdAccountLockedTime").len(), 1);
    // The bind state is a local change like any other: the contextCSN covers its entryCSN.
    let context = dir.context_csn(&dir.read().unwrap()).unwrap();
    let csn = values(&dir, user, "entryCSN").remove(0);
    assert_eq!(context.csns()[0].as_str(), csn);
    let verdict = pp.bind(&dir, &ndn, true).await.unwrap().unwrap();
    assert_eq!(verdict.error, Some(PolicyError::AccountLocked));
    // An administrator's password change: unlocked, reset, history kept.
    modify(
        &dir,
        user,
        ModifyOperation::Replace,
        "userPassword",
        &["{SSHA}second".into()],
    )
    .await
    .unwrap();
    assert!(values(&dir, user, "pwdAccountLockedTime").is_empty());
    assert!(values(&dir, user, "pwdFailureTime").is_empty());
    assert_eq!(values(&dir, user, "pwdReset"), vec!["TRUE"]);
    assert_eq!(values(&dir, user, "pwdChangedTime").len(), 1);
    let history = values(&dir, user, "pwdHistory");
    assert_eq!(history.len(), 1);
    assert!(
        history[0].ends_with("#1.3.6.1.4.1.1466.115.121.1.40#11#{SSHA}first"),
        "{history:?}"
    );
    let verdict = pp.bind(&dir, &ndn, true).await.unwrap().unwrap();
    assert!(verdict.accepted && verdict.must_change);
    // The user's own change clears pwdReset.
    support::write_as(
        &dir,
        canopy_directory::WriteOp::Modify {
            dn: Dn::parse(user.as_bytes()).unwrap(),
            ndn: ndn.clone(),
            changes: vec![canopy_proto::Change {
                operation: ModifyOperation::Replace,
                modification: canopy_proto::PartialAttribute {
                    name: "userPassword".into(),
                    values: vec![b"{SSHA}third".to_vec()],
                },
            }],
        },
        user,
    )
    .await
    .unwrap();
    assert!(values(&dir, user, "pwdReset").is_empty());
    assert_eq!(values(&dir, user, "pwdHistory").len(), 2);
    let _ = ADMIN;
}

/// `pwdAttribute` given as an OID (slapd's own tests write `2.5.4.35`) governs userPassword as its
/// name does: a failed bind is recorded.
#[tokio::test]
async fn pwd_attribute_by_oid() {
    let dir_path = tempfile::tempdir().unwrap();
    let (dir, pp) = open(dir_path.path());
    add(
        &dir,
        "dc=example,dc=com",
        &[("objectClass", "domain"), ("dc", "example")],
    )
    .await
    .unwrap();
    add(
        &dir,
        "cn=pp,dc=example,dc=com",
        &[
            ("objectClass", "device"),
            ("objectClass", "pwdPolicy"),
            ("cn", "pp"),
            ("pwdAttribute", "2.5.4.35"),
            ("pwdLockout", "TRUE"),
            ("pwdMaxFailure", "2"),
        ],
    )
    .await
    .unwrap();
    let user = "uid=u,dc=example,dc=com";
    add(
        &dir,
        user,
        &[
            ("objectClass", "account"),
            ("objectClass", "simpleSecurityObject"),
            ("uid", "u"),
            ("userPassword", "{SSHA}first"),
        ],
    )
    .await
    .unwrap();
    let (_, ndn) = dir.normalize(user.as_bytes()).unwrap();
    pp.bind(&dir, &ndn, false).await.unwrap().unwrap();
    assert_eq!(values(&dir, user, "pwdFailureTime").len(), 1);
}

/// An entry whose pwdPolicySubentry names no policy entry is under no policy, not the default one
/// (slapd: "policy subentry missing or invalid, no policy will be applied"): a failed bind records
/// nothing there, while an entry without the attribute gets the default.
#[tokio::test]
async fn a_missing_policy_subentry_means_no_policy() {
    let dir_path = tempfile::tempdir().unwrap();
    let (dir, pp) = open(dir_path.path());
    add(
        &dir,
        "dc=example,dc=com",
        &[("objectClass", "domain"), ("dc", "example")],
    )
    .await
    .unwrap();
    add(
        &dir,
        "cn=pp,dc=example,dc=com",
        &[
            ("objectClass", "device"),
            ("objectClass", "pwdPolicy"),
            ("cn", "pp"),
            ("pwdAttribute", "userPassword"),
            ("pwdLockout", "TRUE"),
            ("pwdMaxFailure", "3"),
        ],
    )
    .await
    .unwrap();
    let person = |uid: &'static str| {
        vec![
            ("objectClass", "account"),
            ("objectClass", "simpleSecurityObject"),
            ("uid", uid),
            ("userPassword", "{SSHA}first"),
        ]
    };
    let mut orphan = person("orphan");
    orphan.push(("pwdPolicySubentry", "cn=No Policy,dc=example,dc=com"));
    add(&dir, "uid=orphan,dc=example,dc=com", &orphan)
        .await
        .unwrap();
    add(&dir, "uid=plain,dc=example,dc=com", &person("plain"))
        .await
        .unwrap();
    for (user, recorded) in [
        ("uid=orphan,dc=example,dc=com", 0),
        ("uid=plain,dc=example,dc=com", 1),
    ] {
        let (_, ndn) = dir.normalize(user.as_bytes()).unwrap();
        let verdict = pp.bind(&dir, &ndn, false).await.unwrap();
        assert_eq!(verdict.is_some(), recorded == 1, "{user}");
        assert_eq!(
            values(&dir, user, "pwdFailureTime").len(),
            recorded,
            "{user}"
        );
    }
}

/// The Account Usability answer for an entry state under a policy, at NOW.
fn usable(policy: &Policy, attrs: &[(&str, &str)]) -> Option<AccountUsability> {
    usability(policy, &entry(attrs), Instant::from_secs(NOW))
}

#[test]
fn account_usability_as_slapd_answers_it() {
    let mut p = policy();
    let none: Option<AccountUsability> = None;
    // No password: no control.
    assert_eq!(usable(&p, &[("cn", "u")]), none);
    assert_eq!(
        usable(&p, &[("userPassword", "x")]),
        Some(AccountUsability::Available(-1))
    );
    p.max_age = 100;
    let changed = at(NOW - 30);
    assert_eq!(
        usable(&p, &[("userPassword", "x"), ("pwdChangedTime", &changed)]),
        Some(AccountUsability::Available(70))
    );
    // pwdMaxIdle shortens it when the account idles out first.
    p.max_idle = 50;
    let last = at(NOW - 20);
    assert_eq!(
        usable(
            &p,
            &[
                ("userPassword", "x"),
                ("pwdChangedTime", &changed),
                ("pwdLastSuccess", &last)
            ]
        ),
        Some(AccountUsability::Available(30))
    );
}

#[test]
fn account_usability_of_locked_reset_and_expired_accounts() {
    let mut p = policy();
    p.lockout = true;
    p.lockout_duration = 15;
    let locked = at(NOW - 5);
    let not = |inactive, reset, remaining_grace, seconds_before_unlock| {
        Some(AccountUsability::NotAvailable {
            inactive,
            reset,
            expired: false,
            remaining_grace,
            seconds_before_unlock,
        })
    };
    assert_eq!(
        usable(
            &p,
            &[("userPassword", "x"), ("pwdAccountLockedTime", &locked)]
        ),
        not(true, false, -1, 10)
    );
    // The lock ran out: available again.
    let old = at(NOW - 20);
    assert_eq!(
        usable(&p, &[("userPassword", "x"), ("pwdAccountLockedTime", &old)]),
        Some(AccountUsability::Available(-1))
    );
    // Locked until an administrator unlocks: no end to wait for.
    assert_eq!(
        usable(
            &p,
            &[
                ("userPassword", "x"),
                ("pwdAccountLockedTime", "000001010000Z")
            ]
        ),
        not(false, false, -1, -1)
    );
    // The pwdMinDelay back-off counts as a lock until its end.
    let until = at(NOW + 4);
    assert_eq!(
        usable(
            &p,
            &[("userPassword", "x"), ("pwdAccountTmpLockoutEnd", &until)]
        ),
        not(true, false, -1, 4)
    );
    // Expired, with grace logins left, and reset under pwdMustChange.
    p.max_age = 10;
    p.grace_authn_limit = 3;
    p.must_change = true;
    let changed = at(NOW - 60);
    let used = at(NOW - 1);
    assert_eq!(
        usable(
            &p,
            &[
                ("userPassword", "x"),
                ("pwdChangedTime", &changed),
                ("pwdGraceUseTime", &used),
                ("pwdReset", "TRUE")
            ]
        ),
        not(false, true, 2, -1)
    );
}
