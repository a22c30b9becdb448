//! Password policy (slapd: `overlay ppolicy`; canopy: `[[overlay]] name = "ppolicy"`) with the same
//! policies, driven by `ldapwhoami -e ppolicy`, `ldappasswd` and `ldapmodify`, with the same expected
//! results on both servers: lockout after failures and unlock after the duration or by an
//! administrator, expiry warnings and grace logins, must-change after a reset, quality, history,
//! safe modify and minimum age. Time-based cases use durations of 1–3 seconds and poll.

use std::time::{Duration, Instant};

use canopy_e2e::*;

const POLICY_DN: &str = "cn=pp,dc=example,dc=com";
const SLAPD: &str = "overlay ppolicy\nppolicy_default cn=pp,dc=example,dc=com\nppolicy_use_lockout\nppolicy_hash_cleartext\n";
const CANOPY: &str = "[[overlay]]\nname = \"ppolicy\"\ndefault = \"cn=pp,dc=example,dc=com\"\nuse_lockout = true\nhash_cleartext = true\n";

/// Starts a server whose default policy has `settings` (LDIF lines).
fn start(settings: &str) -> Server {
    start_with(SLAPD, CANOPY, settings)
}

fn start_with(slapd: &str, canopy: &str, settings: &str) -> Server {
    let s = Server::start_with_overlays(slapd, canopy);
    s.add(
        &Bind::Root,
        &format!(
            "dn: {POLICY_DN}\nobjectClass: device\nobjectClass: pwdPolicy\ncn: pp\n\
             pwdAttribute: userPassword\n{settings}"
        ),
    )
    .expect_code(0, "the policy");
    s
}

fn person_dn(uid: &str) -> String {
    format!("uid={uid},ou=people,{SUFFIX}")
}

fn add_person(s: &Server, uid: &str, password: &str, extra: &str) {
    s.add(
        &Bind::Root,
        &format!(
            "dn: {}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\n\
             userPassword: {password}\n{extra}",
            person_dn(uid)
        ),
    )
    .expect_code(0, "a person");
}

/// `ldapwhoami -e ppolicy` as `uid`: the exit code and everything the tool printed.
fn whoami(s: &Server, uid: &str, password: &str) -> (i32, String) {
    let bind = Bind::Simple(person_dn(uid), password.into());
    let out = s.tool("ldapwhoami", &bind, &["-e", "ppolicy"], None);
    (out.code, format!("{}{}", out.stdout, out.stderr))
}

fn passwd(s: &Server, bind: &Bind, uid: &str, args: &[&str]) -> (i32, String) {
    let dn = person_dn(uid);
    let mut all = vec!["-e", "ppolicy"];
    all.extend_from_slice(args);
    all.push(&dn);
    let out = s.tool("ldappasswd", bind, &all, None);
    (out.code, format!("{}{}", out.stdout, out.stderr))
}

fn modify(s: &Server, bind: &Bind, ldif: &str) -> (i32, String) {
    let out = s.tool("ldapmodify", bind, &["-e", "ppolicy"], Some(ldif));
    (out.code, format!("{}{}", out.stdout, out.stderr))
}

/// The policy state attributes of `uid`, as the root DN reads them.
fn state(s: &Server, uid: &str) -> Vec<String> {
    let out = s.read(
        &Bind::Root,
        &person_dn(uid),
        &[
            "pwdChangedTime",
            "pwdAccountLockedTime",
            "pwdFailureTime",
            "pwdGraceUseTime",
            "pwdReset",
            "pwdHistory",
        ],
    );
    out.stdout
        .lines()
        .filter(|l| l.starts_with("pwd"))
        .map(|l| l.split(':').next().unwrap_or_default().to_string())
        .collect()
}

fn count(names: &[String], name: &str) -> usize {
    names.iter().filter(|n| n.as_str() == name).count()
}

/// Polls `f` every 200 ms for at most `limit` until it returns true.
fn poll(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn lockout_after_failures_and_unlock() {
    let s = start(
        "pwdLockout: TRUE\npwdMaxFailure: 3\npwdLockoutDuration: 2\npwdFailureCountInterval: 0\n",
    );
    add_person(&s, "lock", "lock-pw-1", "");
    for i in 1..=3 {
        let (code, text) = whoami(&s, "lock", "wrong");
        assert_eq!(code, 49, "failure {i}: {text}");
        assert!(!text.contains("Account locked"), "failure {i}: {text}");
    }
    let names = state(&s, "lock");
    assert_eq!(count(&names, "pwdFailureTime"), 3, "{names:?}");
    assert_eq!(count(&names, "pwdAccountLockedTime"), 1, "{names:?}");
    // Locked: the right password fails too, and a wrong one records nothing more.
    let (code, text) = whoami(&s, "lock", "lock-pw-1");
    assert_eq!(code, 49, "{text}");
    assert!(text.contains("Account locked"), "{text}");
    let (code, text) = whoami(&s, "lock", "wrong");
    assert_eq!(code, 49, "{text}");
    assert!(text.contains("Account locked"), "{text}");
    assert_eq!(count(&state(&s, "lock"), "pwdFailureTime"), 3);
    // The lock runs out after pwdLockoutDuration; the successful bind clears the state.
    let unlocked = poll(Duration::from_secs(8), || {
        whoami(&s, "lock", "lock-pw-1").0 == 0
    });
    assert!(unlocked, "still locked after the lockout duration");
    assert!(state(&s, "lock").is_empty(), "{:?}", state(&s, "lock"));

    // An administrator unlocks by deleting pwdAccountLockedTime.
    for _ in 0..3 {
        assert_eq!(whoami(&s, "lock", "wrong").0, 49);
    }
    assert!(whoami(&s, "lock", "lock-pw-1").1.contains("Account locked"));
    let (code, text) = modify(
        &s,
        &Bind::Root,
        &format!(
            "dn: {}\nchangetype: modify\ndelete: pwdAccountLockedTime\n",
            person_dn("lock")
        ),
    );
    assert_eq!(code, 0, "{text}");
    let (code, text) = whoami(&s, "lock", "lock-pw-1");
    assert_eq!(code, 0, "{text}");
}

#[test]
fn expiry_warning_and_grace_logins() {
    let s = start("pwdMaxAge: 2\npwdExpireWarning: 60\npwdGraceAuthNLimit: 2\n");
    add_person(&s, "old", "old-pw-1", "");
    assert_eq!(count(&state(&s, "old"), "pwdChangedTime"), 1);
    let (code, text) = whoami(&s, "old", "old-pw-1");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Password expires in"), "{text}");
    // After pwdMaxAge: two grace logins, then passwordExpired.
    let mut first = String::new();
    let expired = poll(Duration::from_secs(8), || {
        let (code, text) = whoami(&s, "old", "old-pw-1");
        first = text;
        code == 0 && first.contains("grace")
    });
    assert!(expired, "no grace login: {first}");
    assert!(first.contains("1 grace logins remain"), "{first}");
    let (code, text) = whoami(&s, "old", "old-pw-1");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("0 grace logins remain"), "{text}");
    let (code, text) = whoami(&s, "old", "old-pw-1");
    assert_eq!(code, 49, "{text}");
    assert!(text.contains("Password expired"), "{text}");
    assert_eq!(count(&state(&s, "old"), "pwdGraceUseTime"), 2);
}

#[test]
fn reset_quality_and_history() {
    let s = start("pwdInHistory: 2\npwdCheckQuality: 1\npwdMinLength: 8\npwdMustChange: TRUE\n");
    add_person(&s, "rst", "rst-pw-first", "");
    let added = state(&s, "rst");
    assert_eq!(count(&added, "pwdReset"), 0, "after the add: {added:?}");
    // An administrator's reset: the user must change the password before anything else.
    let (code, text) = passwd(&s, &Bind::Root, "rst", &["-s", "rst-pw-reset"]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(count(&state(&s, "rst"), "pwdReset"), 1);
    let user = Bind::Simple(person_dn("rst"), "rst-pw-reset".into());
    let (code, text) = whoami(&s, "rst", "rst-pw-reset");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Password must be changed"), "{text}");
    let out = s.tool(
        "ldapsearch",
        &user,
        &["-e", "ppolicy", "-b", SUFFIX, "-s", "base", "1.1"],
        None,
    );
    assert_eq!(out.code, 50, "{out:?}");
    let (code, text) = modify(
        &s,
        &user,
        &format!(
            "dn: {}\nchangetype: modify\nreplace: description\ndescription: x\n",
            person_dn("rst")
        ),
    );
    assert_eq!(code, 50, "{text}");
    assert!(text.contains("ppolicy: error=2"), "{text}");
    // Quality: too short.
    let (code, text) = passwd(&s, &user, "rst", &["-s", "short"]);
    assert!(
        code != 0 && text.contains("Constraint violation (19)"),
        "{text}"
    );
    assert!(text.contains("Password is too short for policy"), "{text}");
    // History: the current password and the one before it.
    let (code, text) = passwd(&s, &user, "rst", &["-s", "rst-pw-reset"]);
    assert!(
        code != 0 && text.contains("Constraint violation (19)"),
        "{text}"
    );
    assert!(
        text.contains("New password is in list of old passwords"),
        "{text}"
    );
    let (code, text) = passwd(&s, &user, "rst", &["-s", "rst-pw-first"]);
    assert!(
        code != 0 && text.contains("Constraint violation (19)"),
        "{text}"
    );
    assert!(
        text.contains("New password is in list of old passwords"),
        "{text}"
    );
    // A good one: the reset is over.
    let (code, text) = passwd(&s, &user, "rst", &["-s", "rst-pw-second"]);
    assert_eq!(code, 0, "{text}");
    let names = state(&s, "rst");
    assert_eq!(count(&names, "pwdReset"), 0, "{names:?}");
    assert_eq!(count(&names, "pwdHistory"), 2, "{names:?}");
    let (code, text) = whoami(&s, "rst", "rst-pw-second");
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("must be changed"), "{text}");
}

#[test]
fn safe_modify_and_minimum_age() {
    let s = start("pwdMinAge: 2\npwdSafeModify: TRUE\n");
    add_person(&s, "safe", "safe-pw-1", "");
    let user = Bind::Simple(person_dn("safe"), "safe-pw-1".into());
    let dn = person_dn("safe");
    // Without the old password.
    let (code, text) = modify(
        &s,
        &user,
        &format!("dn: {dn}\nchangetype: modify\nreplace: userPassword\nuserPassword: safe-pw-2\n"),
    );
    assert_eq!(code, 50, "{text}");
    assert!(text.contains("ppolicy: error=4"), "{text}");
    // With it, but too soon after the password was set.
    let safe = format!(
        "dn: {dn}\nchangetype: modify\ndelete: userPassword\nuserPassword: safe-pw-1\n-\n\
         add: userPassword\nuserPassword: safe-pw-2\n"
    );
    let (code, text) = modify(&s, &user, &safe);
    assert_eq!(code, 19, "{text}");
    assert!(text.contains("ppolicy: error=7"), "{text}");
    let changed = poll(Duration::from_secs(8), || modify(&s, &user, &safe).0 == 0);
    assert!(changed, "the password never got old enough");
    assert_eq!(whoami(&s, "safe", "safe-pw-2").0, 0);
}

#[test]
fn python_ldap_password_policy_control() {
    let s = start(
        "pwdLockout: TRUE\npwdMaxFailure: 3\npwdLockoutDuration: 600\npwdMaxAge: 3600\n\
         pwdExpireWarning: 7200\npwdCheckQuality: 1\npwdMinLength: 6\n",
    );
    add_person(&s, "py", "py-pw-1", "");
    let out = s.python("ppolicy.py", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout,
        "bind right: success expiring=True grace=None error=None\n\
         modify short password: CONSTRAINT_VIOLATION error=6\n\
         bind wrong: INVALID_CREDENTIALS expiring=False grace=None error=None\n\
         bind wrong: INVALID_CREDENTIALS expiring=False grace=None error=None\n\
         bind wrong: INVALID_CREDENTIALS expiring=False grace=None error=None\n\
         bind right: INVALID_CREDENTIALS expiring=False grace=None error=1\n"
    );
}

#[test]
fn policy_check_explains() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: `canopy policy-check` is canopy's own");
        return;
    }
    let s = start("pwdLockout: TRUE\npwdMaxFailure: 2\npwdLockoutDuration: 600\npwdMaxAge: 3600\n");
    add_person(&s, "chk", "chk-pw-1", "");
    for _ in 0..2 {
        assert_eq!(whoami(&s, "chk", "wrong").0, 49);
    }
    let mut cmd = canopy_e2e::server::canopy_command();
    cmd.arg("policy-check")
        .arg("--config")
        .arg(s.dir().join("canopy.toml"))
        .arg("--data")
        .arg(s.data_dir())
        .args(["--user", &person_dn("chk")]);
    let out = client::run(cmd, None);
    out.expect_code(0, "policy-check");
    for needle in [
        "policy: cn=pp,dc=example,dc=com (from the default)",
        "  pwdMaxFailure: 2",
        "  pwdLockout: TRUE",
        "  pwdChangedTime: ",
        "  pwdAccountLockedTime: ",
        "  lock: locked",
        "failures counting now: 2 of pwdMaxFailure 2",
        "a bind with the right password now fails (invalidCredentials)",
        "  error: AccountLocked",
    ] {
        assert!(
            out.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            out.stdout
        );
    }
}

#[test]
fn subentry_policy_forbids_user_changes() {
    let s = start("pwdMinLength: 3\n");
    s.add(
        &Bind::Root,
        "dn: cn=nochange,dc=example,dc=com\nobjectClass: device\nobjectClass: pwdPolicy\n\
         cn: nochange\npwdAttribute: userPassword\npwdAllowUserChange: FALSE\n",
    )
    .expect_code(0, "the second policy");
    add_person(
        &s,
        "fixed",
        "fixed-pw-1",
        "pwdPolicySubentry: cn=nochange,dc=example,dc=com\n",
    );
    add_person(&s, "free", "free-pw-1", "");
    let fixed = Bind::Simple(person_dn("fixed"), "fixed-pw-1".into());
    let (code, text) = passwd(&s, &fixed, "fixed", &["-s", "fixed-pw-2"]);
    assert!(
        code != 0 && text.contains("Insufficient access (50)"),
        "{text}"
    );
    assert!(text.contains("ppolicy: error=3"), "{text}");
    // The default policy governs the others, and the administrator may still change it.
    let free = Bind::Simple(person_dn("free"), "free-pw-1".into());
    assert_eq!(passwd(&s, &free, "free", &["-s", "free-pw-2"]).0, 0);
    assert_eq!(passwd(&s, &Bind::Root, "fixed", &["-s", "fixed-pw-3"]).0, 0);
    assert_eq!(whoami(&s, "fixed", "fixed-pw-3").0, 0);
}

#[test]
fn netscape_expiry_controls() {
    let slapd = format!("{SLAPD}ppolicy_send_netscape_controls\n");
    let canopy = format!("{CANOPY}send_netscape_controls = true\n");
    let s = start_with(
        &slapd,
        &canopy,
        "pwdMaxAge: 2\npwdExpireWarning: 60\npwdGraceAuthNLimit: 0\n",
    );
    add_person(&s, "ns", "ns-pw-1", "");
    let bind = Bind::Simple(person_dn("ns"), "ns-pw-1".into());
    let out = s.tool("ldapwhoami", &bind, &[], None);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(out.code, 0, "{text}");
    assert!(
        text.contains("2.16.840.1.113730.3.4.5"),
        "no expiring control: {text}"
    );
    let mut last = String::new();
    let expired = poll(Duration::from_secs(8), || {
        let out = s.tool("ldapwhoami", &bind, &[], None);
        last = format!("{}{}", out.stdout, out.stderr);
        out.code == 49
    });
    assert!(expired, "never expired: {last}");
    assert!(
        last.contains("2.16.840.1.113730.3.4.4"),
        "no expired control: {last}"
    );
}

/// The root DSE lists the password policy control where the overlay runs, on both servers.
#[test]
fn root_dse_lists_the_policy_control() {
    let s = start("");
    let out = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "",
            "-s",
            "base",
            "(objectClass=*)",
            "supportedControl",
        ],
    );
    out.expect_code(0, "root DSE");
    let records = out.records();
    let controls = records.first().map(|r| r.values("supportedControl"));
    assert!(
        controls
            .iter()
            .flatten()
            .any(|c| c == "1.3.6.1.4.1.42.2.27.8.5.1"),
        "{}",
        out.stdout
    );
}

#[test]
fn critical_control_without_the_overlay() {
    let s = Server::start();
    let out = s.python("ppolicy_critical.py", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout,
        "critical=True: UNAVAILABLE_CRITICAL_EXTENSION\ncritical=False: success, 0 controls\n"
    );
}

#[test]
fn restriction_lifts_after_the_change_in_the_same_session() {
    let s = start("pwdMustChange: TRUE\n");
    add_person(&s, "rsession", "rsession-pw-1", "");
    let (code, text) = passwd(&s, &Bind::Root, "rsession", &["-s", "rsession-pw-2"]);
    assert_eq!(code, 0, "{text}");
    let out = s.python("ppolicy_reset.py", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout,
        "bind: error=[2]\n\
         restricted: search INSUFFICIENT_ACCESS error=[]\n\
         own password changed\n\
         after the change: search success\n"
    );
}

#[test]
fn locked_without_use_lockout_says_nothing_more() {
    let slapd = SLAPD.replace("ppolicy_use_lockout\n", "");
    let canopy = CANOPY.replace("use_lockout = true\n", "");
    let s = start_with(
        &slapd,
        &canopy,
        "pwdLockout: TRUE\npwdMaxFailure: 1\npwdLockoutDuration: 600\n",
    );
    add_person(&s, "quiet", "quiet-pw-1", "");
    assert_eq!(whoami(&s, "quiet", "wrong").0, 49);
    let (code, text) = whoami(&s, "quiet", "quiet-pw-1");
    assert_eq!(code, 49, "{text}");
    assert!(!text.contains("Account locked"), "{text}");
    assert_eq!(count(&state(&s, "quiet"), "pwdAccountLockedTime"), 1);
}

/// The number after `key=` in `text` (ldapsearch's rendering of a response control).
fn number_after(text: &str, key: &str) -> Option<i64> {
    let rest = &text[text.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Sun's Account Usability control (`ldapsearch -E accountUsability`), as slapd's ppolicy answers it
/// on each entry: the seconds before the password of a usable account expires, the seconds before a
/// locked one unlocks; nothing for an entry without a password, nor for a requester who may not
/// compare the password (anonymous, under Debian's rules).
#[test]
fn account_usability_control() {
    let s = start("pwdLockout: TRUE\npwdMaxFailure: 2\npwdLockoutDuration: 60\npwdMaxAge: 3600\n");
    add_person(&s, "usable", "usable-pw-1", "");
    add_person(&s, "locked", "locked-pw-1", "");
    for _ in 0..2 {
        assert_eq!(whoami(&s, "locked", "wrong").0, 49);
    }
    let usability = |bind: &Bind, dn: &str| {
        let out = s.tool(
            "ldapsearch",
            bind,
            &["-b", dn, "-s", "base", "-E", "accountUsability", "1.1"],
            None,
        );
        out.expect_code(0, "search with accountUsability");
        out.stdout
    };
    let usable = usability(&Bind::Root, &person_dn("usable"));
    let expire = number_after(&usable, "expire=");
    assert!(
        expire.is_some_and(|n| (3500..=3600).contains(&n)),
        "{usable}"
    );
    let locked = usability(&Bind::Root, &person_dn("locked"));
    assert!(locked.contains("not available"), "{locked}");
    let unlock = number_after(&locked, "seconds_before_unlock=");
    assert!(unlock.is_some_and(|n| (1..=60).contains(&n)), "{locked}");
    let people = usability(&Bind::Root, &format!("ou=people,{SUFFIX}"));
    assert!(!people.contains("accountUsability"), "{people}");
    let anonymous = usability(&Bind::Anonymous, &person_dn("usable"));
    assert!(!anonymous.contains("accountUsability"), "{anonymous}");
}

/// slapd's ppolicy lets a write give an entry one password only, whoever writes (the root DN too):
/// several values in an add, a modify's add or replace, or two changes setting it.
#[test]
fn one_password_value_per_write() {
    let s = start("pwdCheckQuality: 0\n");
    let two = format!(
        "dn: uid=two,ou=people,{SUFFIX}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: two\n\
         cn: two\nsn: two\nuserPassword: first-pw\nuserPassword: second-pw\n"
    );
    let (code, text) = modify(&s, &Bind::Root, &two);
    assert_eq!(code, 19, "{text}");
    assert!(text.contains("only allows one password value"), "{text}");
    add_person(&s, "one", "one-pw-1", "");
    let dn = person_dn("one");
    for change in [
        "add: userPassword\nuserPassword: a-pw-1\nuserPassword: a-pw-2\n",
        "replace: userPassword\nuserPassword: a-pw-1\nuserPassword: a-pw-2\n",
        "add: userPassword\nuserPassword: a-pw-1\n-\nreplace: userPassword\nuserPassword: a-pw-2\n",
    ] {
        let (code, text) = modify(
            &s,
            &Bind::Root,
            &format!("dn: {dn}\nchangetype: modify\n{change}"),
        );
        assert_eq!(code, 19, "{change}: {text}");
    }
    let (code, text) = modify(
        &s,
        &Bind::Root,
        &format!("dn: {dn}\nchangetype: modify\nreplace: userPassword\nuserPassword: one-pw-2\n"),
    );
    assert_eq!(code, 0, "{text}");
}

/// Whoever the access rules give `manage` on a password is a password administrator, as the root DN
/// is: no policy check applies to their changes (safe modify, quality), and under pwdMustChange the
/// change sets pwdReset. Others are checked.
#[test]
fn manage_access_makes_a_password_administrator() {
    let admin = user_dn("alice");
    let rules = [
        format!(
            "to attrs=userPassword by dn.exact=\"{admin}\" manage by self write by anonymous auth by * none"
        ),
        "to * by self write by * read".to_string(),
    ];
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let s = Server::start_with_overlays_schema_access(SLAPD, &[], &rules, CANOPY);
    s.add(
        &Bind::Root,
        &format!(
            "dn: {POLICY_DN}\nobjectClass: device\nobjectClass: pwdPolicy\ncn: pp\n\
             pwdAttribute: userPassword\npwdSafeModify: TRUE\npwdCheckQuality: 2\n\
             pwdMinLength: 8\npwdMustChange: TRUE\n"
        ),
    )
    .expect_code(0, "the policy");
    add_person(&s, "kept", "kept-pw-1", "");
    let dn = person_dn("kept");
    let short =
        format!("dn: {dn}\nchangetype: modify\nreplace: userPassword\nuserPassword: short\n");
    // The user: no old password given.
    let user = Bind::Simple(dn.clone(), "kept-pw-1".into());
    let (code, text) = modify(&s, &user, &short);
    assert_eq!(code, 50, "{text}");
    // The administrator: no check at all, and the user must change it next.
    let (code, text) = modify(&s, &Bind::user("alice"), &short);
    assert_eq!(code, 0, "{text}");
    assert_eq!(count(&state(&s, "kept"), "pwdReset"), 1);
}
