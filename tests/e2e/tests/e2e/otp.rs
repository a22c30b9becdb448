//! The otp overlay (slapd's slapo-otp): simple binds with a password followed by an HOTP or TOTP code,
//! codes used up even when the password is wrong, look-ahead and time windows, tokens shared between
//! users, and new parameters taking effect at once. The HOTP transcript is recorded from slapd with its
//! otp module (the codes are those of OpenLDAP's test080-hotp); TOTP codes depend on the clock, so
//! that test checks outcomes, not a transcript.

use canopy_e2e::*;
use canopy_password::otp::{hotp, HmacAlgorithm};

const SLAPD: &str = "overlay otp\n";
const CANOPY: &str = "[[overlay]]\nname = \"otp\"\n";
const PEOPLE: &str = "ou=people,dc=example,dc=com";

/// The secret of OpenLDAP's test080-hotp data.
const SECRET_B64: &str = "PcbKpIJKbSiHZ7IzHiC0MWbLhdk=";
const SECRET: &[u8] = &[
    0x3d, 0xc6, 0xca, 0xa4, 0x82, 0x4a, 0x6d, 0x28, 0x87, 0x67, 0xb2, 0x33, 0x1e, 0x20, 0xb4, 0x31,
    0x66, 0xcb, 0x85, 0xd9,
];

/// Parameters on the suffix entry (`params`: the auxiliary class's attributes), a token on
/// ou=people naming them, and alice and olivia using that token (`kind`: HOTP or TOTP).
fn provision(s: &Server, kind: &str, params: &str, token_extra: &str) {
    let ldif = format!(
        "dn: dc=example,dc=com\nchangetype: modify\nadd: objectClass\nobjectClass: oath{kind}Params\n{params}\n\
         dn: {PEOPLE}\nchangetype: modify\nadd: objectClass\nobjectClass: oath{kind}Token\n-\n\
         add: oath{kind}Params\noath{kind}Params: dc=example,dc=com\n-\nadd: oathSecret\noathSecret:: {SECRET_B64}\n{token_extra}\n\
         dn: uid=alice,{PEOPLE}\nchangetype: modify\nadd: objectClass\nobjectClass: oath{kind}User\n-\n\
         add: oath{kind}Token\noath{kind}Token: {PEOPLE}\n\n\
         dn: uid=olivia,{PEOPLE}\nchangetype: modify\nadd: objectClass\nobjectClass: oath{kind}User\n-\n\
         add: oath{kind}Token\noath{kind}Token: {PEOPLE}\n"
    );
    s.modify(&Bind::Root, &ldif)
        .expect_code(0, "provisioning the token");
}

fn bind(s: &Server, uid: &str, credentials: String) -> Out {
    s.whoami(
        Via::Ldap,
        &Bind::Simple(format!("uid={uid},{PEOPLE}"), credentials),
    )
}

fn code(algorithm: HmacAlgorithm, counter: u64, digits: u32) -> String {
    hotp(algorithm, SECRET, counter, digits).unwrap()
}

#[test]
fn hotp_binds() {
    let s = Server::start_with_overlays(SLAPD, CANOPY);
    provision(
        &s,
        "HOTP",
        "-\nadd: oathOTPLength\noathOTPLength: 6\n-\nadd: oathHOTPLookAhead\noathHOTPLookAhead: 3\n-\n\
         add: oathHMACAlgorithm\noathHMACAlgorithm: 1.2.840.113549.2.7\n",
        "-\nadd: oathHOTPCounter\noathHOTPCounter: 3\n",
    );
    let sha1 = |n| code(HmacAlgorithm::Sha1, n, 6);
    let mut t = Transcript::new("otp_hotp");
    let steps: [(&str, &str, String); 10] = [
        (
            "a code not valid yet",
            "alice",
            format!("alice-pw{}", sha1(10)),
        ),
        ("the next code", "alice", format!("alice-pw{}", sha1(4))),
        (
            "a code skipping one",
            "alice",
            format!("alice-pw{}", sha1(6)),
        ),
        (
            "the same code again",
            "alice",
            format!("alice-pw{}", sha1(6)),
        ),
        (
            "another user of the token",
            "olivia",
            format!("olivia-pw{}", sha1(7)),
        ),
        ("an old code", "olivia", format!("olivia-pw{}", sha1(5))),
        (
            "the right code, a wrong password",
            "olivia",
            format!("alice-pw{}", sha1(8)),
        ),
        (
            "that code, now used up",
            "olivia",
            format!("olivia-pw{}", sha1(8)),
        ),
        ("the password alone", "olivia", "olivia-pw".to_string()),
        (
            "the first code, now within reach",
            "alice",
            format!("alice-pw{}", sha1(10)),
        ),
    ];
    for (title, uid, credentials) in steps {
        t.raw(title, &bind(&s, uid, credentials));
    }
    // New parameters: eight digits, SHA-512, no look-ahead.
    let change = format!(
        "dn: cn=params,dc=example,dc=com\nchangetype: add\nobjectClass: device\nobjectClass: oathHOTPParams\n\
         cn: params\noathOTPLength: 8\noathHOTPLookAhead: 0\noathHMACAlgorithm: 1.2.840.113549.2.11\n\n\
         dn: {PEOPLE}\nchangetype: modify\nreplace: oathHOTPParams\noathHOTPParams: cn=params,dc=example,dc=com\n"
    );
    s.modify(&Bind::Root, &change)
        .expect_code(0, "new parameters");
    let sha512 = |n| code(HmacAlgorithm::Sha512, n, 8);
    t.raw(
        "eight digits, one code ahead",
        &bind(&s, "alice", format!("alice-pw{}", sha512(12))),
    );
    t.raw(
        "eight digits, the next code",
        &bind(&s, "alice", format!("alice-pw{}", sha512(11))),
    );
    t.raw(
        "eight digits, the code that was ahead",
        &bind(&s, "alice", format!("alice-pw{}", sha512(12))),
    );
    t.raw(
        "six digits under eight-digit parameters",
        &bind(&s, "alice", format!("alice-pw{}", sha1(13))),
    );
    t.section(
        "the token afterwards",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                PEOPLE,
                "-s",
                "base",
                "oathHOTPCounter",
                "oathHOTPParams",
            ],
        ),
    );
    // A user without a token binds with the password alone.
    t.raw(
        "a user without a token",
        &s.whoami(Via::Ldap, &Bind::user("bob")),
    );
    t.check();
}

fn now_step(period: u64) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / period
}

#[test]
fn totp_binds() {
    let s = Server::start_with_overlays(SLAPD, CANOPY);
    provision(
        &s,
        "TOTP",
        "-\nadd: oathOTPLength\noathOTPLength: 6\n-\nadd: oathTOTPTimeStepPeriod\noathTOTPTimeStepPeriod: 30\n-\n\
         add: oathTOTPTimeStepWindow\noathTOTPTimeStepWindow: 3\n-\n\
         add: oathHMACAlgorithm\noathHMACAlgorithm: 1.2.840.113549.2.7\n",
        "",
    );
    // Near the end of a step the codes below could straddle two: start early in one.
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 30
        > 20
    {
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let step = now_step(30);
    let at = |n: u64| code(HmacAlgorithm::Sha1, n, 6);
    bind(&s, "alice", format!("alice-pw{}", at(step - 3)))
        .expect_code(0, "a code three steps old, within the window");
    bind(&s, "alice", format!("alice-pw{}", at(step - 3))).expect_code(49, "the same code again");
    bind(&s, "alice", format!("alice-pw{}", at(step - 4)))
        .expect_code(49, "a code older than the last used");
    bind(&s, "alice", format!("alice-pw{}", at(step))).expect_code(0, "the current code");
    bind(&s, "olivia", format!("olivia-pw{}", at(step)))
        .expect_code(49, "the current code, used by another user of the token");
    bind(&s, "olivia", format!("alice-pw{}", at(step + 1)))
        .expect_code(49, "the next code with a wrong password");
    bind(&s, "olivia", format!("olivia-pw{}", at(step + 1)))
        .expect_code(49, "that code, used up by the failed bind");
    bind(&s, "olivia", format!("olivia-pw{}", at(step + 2)))
        .expect_code(0, "a code two steps ahead");
    bind(&s, "olivia", format!("olivia-pw{}", at(step + 5)))
        .expect_code(49, "a code beyond the window");
    let token = s.search(
        &Bind::Root,
        &["-b", PEOPLE, "-s", "base", "oathTOTPLastTimeStep"],
    );
    token.expect_code(0, "reading the token");
    assert!(
        token
            .stdout
            .contains(&format!("oathTOTPLastTimeStep: {}", step + 2)),
        "the last used step is {}: {}",
        step + 2,
        token.stdout
    );
    // An administrator resets the token: the steps are usable again.
    let reset = format!("dn: {PEOPLE}\nchangetype: modify\ndelete: oathTOTPLastTimeStep\n");
    s.modify(&Bind::Root, &reset).expect_code(0, "reset");
    bind(&s, "alice", format!("alice-pw{}", at(step)))
        .expect_code(0, "the current code after a reset");
}
