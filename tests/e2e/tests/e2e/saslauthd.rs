//! `{SASL}` pass-through: a `userPassword` of `{SASL}user@realm` is checked by a real saslauthd
//! (Debian's sasl2-bin, its `ldap` back end pointed at the server under test itself), started by the
//! test in a temp directory. Canopy only: slapd reaches saslauthd through a Cyrus SASL configuration
//! file in a system directory, which a test must not write. Under CI=true a missing saslauthd fails.

use canopy_e2e::*;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SASLAUTHD: &str = "/usr/sbin/saslauthd";

/// saslauthd on its own socket directory, stopped by its PID when dropped.
struct Saslauthd {
    child: Child,
}

impl Drop for Saslauthd {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Saslauthd {
    /// saslauthd with its `ldap` back end: a name is searched as `uid=NAME` below ou=people of the
    /// server at `url` (anonymously) and the password checked by binding as the entry found.
    fn start(dir: &Path, url: &str) -> Saslauthd {
        let conf = dir.join("saslauthd.conf");
        std::fs::write(
            &conf,
            format!(
                "ldap_servers: {url}\nldap_search_base: ou=people,{SUFFIX}\nldap_filter: uid=%u\n"
            ),
        )
        .unwrap();
        let child = Command::new(SASLAUTHD)
            .args(["-a", "ldap", "-n", "1", "-d", "-O"])
            .arg(&conf)
            .arg("-m")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: saslauthd ends its workers by signalling its group when it
            // exits, which must not reach the test runner.
            .process_group(0)
            .spawn()
            .expect("saslauthd starts");
        let started = Instant::now();
        while !dir.join("mux").exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "saslauthd made no socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Saslauthd { child }
    }
}

#[test]
fn sasl_passwords_are_checked_by_saslauthd() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: its saslauthd path is set in a system Cyrus SASL file");
        return;
    }
    if !Path::new(SASLAUTHD).exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{SASLAUTHD} is missing (apt package sasl2-bin)"
        );
        println!("skipped: {SASLAUTHD} is missing");
        return;
    }
    let dir = tempdir::TempDir::new("saslauthd");
    let mux = dir.path().join("mux");
    let s = Server::start_canopy_with_config(&format!(
        "[passwords]\nsaslauthd_socket = {:?}\nbind_cache_secs = 300\n",
        mux.display().to_string()
    ));
    let _saslauthd = Saslauthd::start(dir.path(), &s.ldap_url());
    let bob = user_dn("bob");
    let pass_through = format!(
        "dn: {bob}\nchangetype: modify\nreplace: userPassword\nuserPassword: {{SASL}}alice@EXAMPLE.TEST\n"
    );
    s.modify(&Bind::Root, &pass_through)
        .expect_code(0, "bob's password is alice's, by saslauthd");
    let as_bob = |pw: &str| Bind::Simple(bob.clone(), pw.into());
    s.whoami(Via::Ldap, &as_bob("alice-pw"))
        .expect_code(0, "the password saslauthd accepts");
    s.whoami(Via::Ldap, &as_bob("bob-pw"))
        .expect_code(49, "bob's old password");
    s.whoami(Via::Ldap, &as_bob("alice-pw "))
        .expect_code(49, "a wrong password");
    // The bind cache does not keep {SASL} successes: alice's password changes where saslauthd looks.
    let change = format!(
        "dn: {}\nchangetype: modify\nreplace: userPassword\nuserPassword: alice-new\n",
        user_dn("alice")
    );
    s.modify(&Bind::Root, &change)
        .expect_code(0, "alice's password changed");
    s.whoami(Via::Ldap, &as_bob("alice-pw"))
        .expect_code(49, "the old password after it changed behind saslauthd");
    s.whoami(Via::Ldap, &as_bob("alice-new"))
        .expect_code(0, "the new password");
    // A user whose identity saslauthd does not know.
    let unknown = format!(
        "dn: {bob}\nchangetype: modify\nreplace: userPassword\nuserPassword: {{SASL}}nobody\n"
    );
    s.modify(&Bind::Root, &unknown)
        .expect_code(0, "unknown identity");
    s.whoami(Via::Ldap, &as_bob("alice-new"))
        .expect_code(49, "an identity saslauthd refuses");
}

/// With no saslauthd on the configured socket, a `{SASL}` password refuses the bind (and the server
/// keeps serving).
#[test]
fn no_saslauthd_refuses_the_bind() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: its saslauthd path is set in a system Cyrus SASL file");
        return;
    }
    let dir = tempdir::TempDir::new("nosaslauthd");
    let s = Server::start_canopy_with_config(&format!(
        "[passwords]\nsaslauthd_socket = {:?}\n",
        dir.path().join("absent").display().to_string()
    ));
    let bob = user_dn("bob");
    let pass_through = format!(
        "dn: {bob}\nchangetype: modify\nreplace: userPassword\nuserPassword: {{SASL}}bob\n"
    );
    s.modify(&Bind::Root, &pass_through)
        .expect_code(0, "{SASL} value");
    s.whoami(Via::Ldap, &Bind::Simple(bob, "bob-pw".into()))
        .expect_code(49, "no saslauthd to ask");
    s.whoami(Via::Ldap, &Bind::user("alice"))
        .expect_code(0, "another user binds as before");
}
