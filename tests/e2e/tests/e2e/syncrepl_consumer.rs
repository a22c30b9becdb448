//! Canopy as a syncrepl consumer of Debian's slapd (`overlay syncprov`): adds, modifies, renames with
//! and without a new superior, deletes of leaves and subtrees, in persist mode and across a restart
//! (refresh with the stored cookie), refreshOnly polling, kill -9 mid-stream, a provider that goes away
//! mid-refresh, a provider that sends garbage, and referrals for client writes. After each scenario
//! the full contents (user attributes, entryUUID, entryCSN) of both servers must match; convergence is
//! awaited by polling contextCSN with a time bound. Canopy-only (skipped when the target is slapd: the
//! consumer under test is Canopy's, the provider is always slapd).

use std::time::Duration;

use canopy_e2e::consumer_support::{
    canopy_consumer, context_csn, fake_provider, relaunch_same_port, slapd_provider,
    syncrepl_table, wait_converged, wait_log,
};
use canopy_e2e::*;

const CONVERGE: Duration = Duration::from_secs(30);

fn canopy_target() -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: these tests run Canopy as the consumer of a slapd provider");
        return false;
    }
    true
}

fn updateref() -> String {
    "updateref = \"ldap://provider.example.com\"\n".to_string()
}

#[track_caller]
fn converged(provider: &Server, consumer: &Server, what: &str) {
    if let Err(diff) = wait_converged(provider, consumer, CONVERGE) {
        panic!(
            "{what}: the consumer did not converge within {CONVERGE:?}:\n{diff}\nconsumer log:\n{}",
            consumer.log()
        );
    }
}

/// The write sequence of the issue: adds (a subtree), modifies, renames with and without a new
/// superior, deletes of a leaf and of a whole subtree. `tag` keeps the names of two runs apart.
fn write_sequence(p: &Server, tag: &str) {
    let ou = format!("ou=unit{tag},{SUFFIX}");
    let mut ldif = format!("dn: {ou}\nobjectClass: organizationalUnit\nou: unit{tag}\n\n");
    for i in 0..5 {
        ldif.push_str(&format!(
            "dn: cn=p{i},{ou}\nobjectClass: person\ncn: p{i}\nsn: S{i}\ndescription: first\n\n"
        ));
    }
    ldif.push_str(&format!(
        "dn: ou=sub,{ou}\nobjectClass: organizationalUnit\nou: sub\n\ndn: cn=deep,ou=sub,{ou}\nobjectClass: person\ncn: deep\nsn: D\n\n"
    ));
    p.add(&Bind::Root, &ldif).expect_code(0, "adds");
    p.modify(
        &Bind::Root,
        &format!(
            "dn: cn=p0,{ou}\nchangetype: modify\nreplace: description\ndescription: second\n-\nadd: telephoneNumber\ntelephoneNumber: +1 555 0100\n\ndn: {}\nchangetype: modify\nreplace: mail\nmail: alice{tag}@example.com\n",
            user_dn("alice")
        ),
    )
    .expect_code(0, "modifies");
    p.modify(
        &Bind::Root,
        &format!(
            "dn: cn=p1,{ou}\nchangetype: modrdn\nnewrdn: cn=p1renamed\ndeleteoldrdn: 1\n\ndn: cn=p2,{ou}\nchangetype: modrdn\nnewrdn: cn=p2moved{tag}\ndeleteoldrdn: 0\nnewsuperior: ou=people,{SUFFIX}\n\ndn: ou=sub,{ou}\nchangetype: modrdn\nnewrdn: ou=sub2\ndeleteoldrdn: 1\n"
        ),
    )
    .expect_code(0, "renames");
    p.modify(
        &Bind::Root,
        &format!("dn: cn=p3,{ou}\nchangetype: delete\n"),
    )
    .expect_code(0, "leaf delete");
}

/// Deletes a whole subtree on the provider, leaf first (ldapdelete -r).
fn delete_subtree(p: &Server, dn: &str) {
    p.tool("ldapdelete", &Bind::Root, &["-r", dn], None)
        .expect_code(0, "subtree delete");
}

#[test]
fn persist_then_restart_with_cookie() {
    if !canopy_target() {
        return;
    }
    let p = slapd_provider();
    let toml = format!(
        "{}{}",
        updateref(),
        syncrepl_table(&p, 1, "type = \"refreshAndPersist\"")
    );
    let mut c = canopy_consumer(&toml);
    converged(&p, &c, "initial refresh");
    assert!(c.log().contains("refresh ended"), "{}", c.log());

    // While the consumer is up: persist mode.
    write_sequence(&p, "a");
    converged(&p, &c, "persist: adds, modifies, renames, leaf delete");
    delete_subtree(&p, &format!("ou=unita,{SUFFIX}"));
    converged(&p, &c, "persist: subtree delete");

    // While the consumer is down: it comes back with its cookie.
    c.terminate();
    write_sequence(&p, "b");
    delete_subtree(&p, &format!("ou=sub2,ou=unitb,{SUFFIX}"));
    p.modify(
        &Bind::Root,
        &format!("dn: {}\nchangetype: delete\n", user_dn("bob")),
    )
    .expect_code(0, "delete while down");
    c.restart();
    converged(&p, &c, "refresh with the stored cookie");
    let log = c.log();
    assert!(
        log.matches("connected; refresh starts").count() >= 2,
        "one line per (re)connect:\n{log}"
    );
    assert!(
        log.contains("csn="),
        "the second session sends the cookie:\n{log}"
    );

    // cn=Monitor shows the consumer.
    let monitor = c.search(
        &Bind::Root,
        &["-b", "cn=Replication,cn=Monitor", "(cn=Consumer 001)", "*"],
    );
    monitor.expect_code(0, "monitor");
    let text = monitor.stdout.clone();
    assert!(text.contains(&p.ldap_url()), "{text}");
    assert!(text.contains("state: persisting"), "{text}");
    assert!(text.contains("cookie: rid=001"), "{text}");
    assert!(text.contains("lastSuccess: "), "{text}");
}

#[test]
fn client_writes_get_the_referral() {
    if !canopy_target() {
        return;
    }
    let p = slapd_provider();
    let toml = format!(
        "{}{}",
        updateref(),
        syncrepl_table(&p, 2, "type = \"refreshAndPersist\"")
    );
    let c = canopy_consumer(&toml);
    converged(&p, &c, "initial refresh");
    // The root DN gets the referral too, as on slapd: only the replication session writes.
    for bind in [Bind::Root, Bind::user("alice")] {
        let out = c.modify(
            &bind,
            &format!(
                "dn: {}\nchangetype: modify\nreplace: description\ndescription: x\n",
                user_dn("alice")
            ),
        );
        assert_eq!(out.code, 10, "referral expected: {out:?}");
        // slapd names the target in the URL: ldap://provider.example.com/uid=alice,ou=people,...
        let url = format!("ldap://provider.example.com/{}", user_dn("alice"));
        assert!(out.stderr.contains(&url), "{out:?}");
    }
    let out = c.add(
        &Bind::Root,
        &format!("dn: cn=x,{SUFFIX}\nobjectClass: person\ncn: x\nsn: x\n"),
    );
    assert_eq!(out.code, 10, "{out:?}");
    converged(&p, &c, "nothing changed on the consumer");
}

#[test]
fn refresh_only_polls() {
    if !canopy_target() {
        return;
    }
    let p = slapd_provider();
    let toml = format!(
        "{}{}",
        updateref(),
        syncrepl_table(&p, 3, "type = \"refreshOnly\"\ninterval = \"00:00:00:01\"")
    );
    let c = canopy_consumer(&toml);
    converged(&p, &c, "first poll");
    write_sequence(&p, "r");
    converged(&p, &c, "later polls: adds, modifies, renames");
    delete_subtree(&p, &format!("ou=unitr,{SUFFIX}"));
    converged(&p, &c, "later polls: subtree delete");
    // Polls that find nothing new change nothing (the present phase deletes nothing it should keep).
    let polls = c.log().matches("refresh ended").count();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.log().matches("refresh ended").count() < polls + 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no more polls:\n{}",
            c.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    converged(&p, &c, "idle polls");
}

#[test]
fn kill9_mid_stream_converges() {
    if !canopy_target() {
        return;
    }
    let p = slapd_provider();
    let toml = format!(
        "{}{}",
        updateref(),
        syncrepl_table(&p, 4, "type = \"refreshAndPersist\"")
    );
    let mut c = canopy_consumer(&toml);
    converged(&p, &c, "initial refresh");
    let url = p.ldap_url();
    let mut ldif = String::new();
    for i in 0..300 {
        ldif.push_str(&format!(
            "dn: cn=k{i},ou=people,{SUFFIX}\nobjectClass: person\ncn: k{i}\nsn: K\n\n"
        ));
    }
    // The writer runs in the background while the consumer is killed.
    let writer = std::thread::spawn(move || {
        let mut cmd = std::process::Command::new("ldapadd");
        cmd.args(["-H", &url, "-x", "-D", ROOT_DN, "-w", ROOT_PW]);
        client::run(cmd, Some(&ldif))
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let n = c
            .search(&Bind::Root, &["-b", SUFFIX, "(cn=k*)", "1.1"])
            .records()
            .len();
        if n > 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    c.kill9();
    writer.join().unwrap().expect_code(0, "background adds");
    c.restart();
    converged(&p, &c, "after kill -9 and restart");
}

#[test]
fn provider_gone_mid_refresh_comes_back() {
    if !canopy_target() {
        return;
    }
    let mut p = slapd_provider();
    let mut ldif = String::new();
    for i in 0..2000 {
        ldif.push_str(&format!(
            "dn: cn=m{i},ou=people,{SUFFIX}\nobjectClass: person\ncn: m{i}\nsn: M\ndescription: {}\n\n",
            "x".repeat(200)
        ));
    }
    p.add(&Bind::Root, &ldif).expect_code(0, "many entries");
    let toml = format!(
        "{}{}",
        updateref(),
        syncrepl_table(&p, 5, "type = \"refreshAndPersist\"")
    );
    let c = canopy_consumer(&toml);
    // Kill the provider as soon as the refresh has started.
    assert!(
        wait_log(&c, "refresh starts", Duration::from_secs(20)),
        "{}",
        c.log()
    );
    p.kill9();
    assert!(
        wait_log(&c, "session failed", Duration::from_secs(20)),
        "the lost provider is logged:\n{}",
        c.log()
    );
    assert!(
        c.log().contains(&p.ldap_url()),
        "errors name the provider:\n{}",
        c.log()
    );
    relaunch_same_port(&mut p);
    // slapd keeps its contextCSN in memory and writes it at syncprov-checkpoint: killed with -9, it
    // comes back with an older one than the cookie it already sent. A write moves it on again.
    p.add(
        &Bind::Root,
        &format!("dn: cn=after,ou=people,{SUFFIX}\nobjectClass: person\ncn: after\nsn: A\n"),
    )
    .expect_code(0, "a write after the restart");
    converged(&p, &c, "after the provider came back");
}

/// A slapd provider and a canopy consumer both running memberof and refint: slapd's overlays do not
/// send their changes to other entries (they are never replicated, each server derives them), so the
/// consumer's overlays derive memberOf for the members of the groups it receives and repair the
/// groups naming an entry it sees deleted, without a CSN of their own; the entries' entryCSNs stay
/// the provider's, so the full contents still compare equal.
#[test]
fn memberof_and_refint_on_a_consumer_of_slapd_derive_what_slapd_does_not_send() {
    if !canopy_target() {
        return;
    }
    let p = canopy_e2e::consumer_support::slapd_provider_with(
        "overlay memberof\noverlay refint\nrefint_attributes member\n",
    );
    let c = canopy_consumer(&format!(
        "[[overlay]]\nname = \"memberof\"\ndangling = \"error\"\n\
         [[overlay]]\nname = \"refint\"\nattributes = [\"member\"]\n{}",
        syncrepl_table(&p, 7, "type = \"refreshAndPersist\"")
    ));
    converged(&p, &c, "the refresh");
    let alice = format!("uid=alice,ou=people,{SUFFIX}");
    let team = format!("cn=team,ou=groups,{SUFFIX}");
    p.add(
        &Bind::Root,
        &format!("dn: {team}\nobjectClass: groupOfNames\ncn: team\nmember: {alice}\n"),
    )
    .expect_code(0, "the group on the provider");
    let member_of = |s: &Server| -> Vec<String> {
        s.read(&Bind::Root, &alice, &["memberOf"]).records()[0].values("memberOf")
    };
    assert!(member_of(&p).contains(&team), "slapd's own memberof");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !member_of(&c).contains(&team) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(member_of(&c).contains(&team), "{}", c.log());
    converged(&p, &c, "after the group");
    // bob is deleted on the provider; slapd's refint takes him out of cn=engineering in the
    // background, and the consumer, which receives only the delete, does the same.
    let bob = format!("uid=bob,ou=people,{SUFFIX}");
    let engineering = format!("cn=engineering,ou=groups,{SUFFIX}");
    p.modify(&Bind::Root, &format!("dn: {bob}\nchangetype: delete\n"))
        .expect_code(0, "bob's delete");
    let members =
        |s: &Server| s.read(&Bind::Root, &engineering, &["member"]).records()[0].values("member");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while (members(&p).contains(&bob) || members(&c).contains(&bob))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!members(&p).contains(&bob), "slapd's own refint");
    assert!(!members(&c).contains(&bob), "{}", c.log());
    converged(&p, &c, "after the delete");
}

/// A fake provider: accepts connections, answers the bind, then sends bytes that are not LDAP.
#[test]
fn garbage_from_provider_is_logged_and_retried() {
    if !canopy_target() {
        return;
    }
    // A SearchResultEntry for message 2 whose contents are garbage, then more garbage.
    let garbage = [
        &[0x30, 0x08, 0x02, 0x01, 0x02, 0x64, 0x03, 0xff, 0xff, 0xff][..],
        b"\x00\x01garbage garbage garbage",
    ]
    .concat();
    let (port, fake) = fake_provider(2, garbage);
    let toml = format!(
        "[[syncrepl]]\nrid = 6\nprovider = \"ldap://127.0.0.1:{port}\"\nsearchbase = \"{SUFFIX}\"\ntype = \"refreshAndPersist\"\nretry = \"1 +\"\ntimeout = 5\n"
    );
    let c = canopy_consumer(&toml);
    assert_eq!(
        fake.join().unwrap(),
        2,
        "the consumer came back after the garbage"
    );
    assert!(
        wait_log(&c, "session failed", Duration::from_secs(10)),
        "{}",
        c.log()
    );
    let log = c.log();
    assert!(log.contains(&format!("127.0.0.1:{port}")), "{log}");
    assert!(log.contains("retrying"), "{log}");
    assert!(c.alive(), "the consumer survives garbage");
    assert!(context_csn(&c).is_empty(), "nothing was applied");
    let out = c.search(&Bind::Root, &["-b", SUFFIX, "-s", "base", "1.1"]);
    assert_eq!(out.code, 32, "the database stays empty: {out:?}");
}

/// StartTLS (critical) to a slapd provider whose certificate is checked against `tls_cacert`, and a
/// SASL EXTERNAL bind with a client certificate.
#[test]
fn starttls_and_sasl_external() {
    if !canopy_target() {
        return;
    }
    let certs = tempdir::TempDir::new("canopy-syncrepl-tls");
    canopy_e2e::consumer_support::tls_material(certs.path());
    let p = canopy_e2e::consumer_support::slapd_provider_tls(certs.path());
    let d = certs.path().display();
    let table = format!(
        "[[syncrepl]]\nrid = 8\nprovider = \"{}\"\nsearchbase = \"{SUFFIX}\"\ntype = \"refreshAndPersist\"\nstarttls = \"critical\"\ntls_cacert = \"{d}/ca.crt\"\ntls_cert = \"{d}/client.crt\"\ntls_key = \"{d}/client.key\"\nbindmethod = \"sasl\"\nsaslmech = \"EXTERNAL\"\nretry = \"1 +\"\n",
        p.ldap_url()
    );
    let c = canopy_consumer(&table);
    converged(&p, &c, "refresh over StartTLS with SASL EXTERNAL");
    write_sequence(&p, "t");
    converged(&p, &c, "persist over StartTLS");

    // A provider certificate from another CA is refused: logged, retried, nothing applied.
    let other = tempdir::TempDir::new("canopy-syncrepl-tls-other");
    canopy_e2e::consumer_support::tls_material(other.path());
    let o = other.path().display();
    let table = format!(
        "[[syncrepl]]\nrid = 9\nprovider = \"{}\"\nsearchbase = \"{SUFFIX}\"\nstarttls = \"critical\"\ntls_cacert = \"{o}/ca.crt\"\nbindmethod = \"simple\"\nbinddn = \"{ROOT_DN}\"\ncredentials = \"{ROOT_PW}\"\nretry = \"1 +\"\n",
        p.ldap_url()
    );
    let bad = canopy_consumer(&table);
    assert!(
        wait_log(&bad, "TLS handshake", Duration::from_secs(20)),
        "{}",
        bad.log()
    );
    assert!(context_csn(&bad).is_empty());
}

/// RFC 6171 Don't Use Copy: a consumer refers a search carrying it to its `updateref` (naming the base
/// and the scope, as slapd rewrites the referral) and refuses such a compare (unwillingToPerform);
/// the provider, an original, answers both as usual.
#[test]
fn dont_use_copy_goes_to_the_provider() {
    if !canopy_target() {
        return;
    }
    let p = slapd_provider();
    let toml = format!(
        "{}{}",
        updateref(),
        syncrepl_table(&p, 7, "type = \"refreshAndPersist\"")
    );
    let c = canopy_consumer(&toml);
    converged(&p, &c, "initial refresh");
    let base = format!("ou=people,{SUFFIX}");
    let search = |s: &Server, copy: bool| {
        let mut args = vec!["-b", &base, "-s", "one", "(uid=alice)", "1.1"];
        if copy {
            args.splice(0..0, ["-E", "!dontUseCopy"]);
        }
        s.search(&Bind::Root, &args)
    };
    let out = search(&c, true);
    assert_eq!(out.code, 10, "referral expected: {out:?}");
    let url = format!("ldap://provider.example.com/{base}??one");
    assert!(
        out.stdout.contains(&url) || out.stderr.contains(&url),
        "{out:?}"
    );
    // Without the control the copy answers; on the original the control changes nothing.
    search(&c, false).expect_code(0, "consumer without the control");
    let on_provider = search(&p, true);
    on_provider.expect_code(0, "provider with the control");
    assert_eq!(on_provider.records().len(), 1, "{on_provider:?}");

    // ldapcompare cannot send the control (its -E is not in its options): python-ldap does.
    let compare = |s: &Server| {
        let out = s.python("dont_use_copy.py", &[]);
        out.expect_code(0, "dont_use_copy.py");
        out.stdout
    };
    assert_eq!(
        compare(&c),
        "with the control: UNWILLING_TO_PERFORM (53)\nwithout: compareTrue\n"
    );
    assert_eq!(
        compare(&p),
        "with the control: compareTrue\nwithout: compareTrue\n"
    );
}
