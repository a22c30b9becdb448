//! Canopy replicating to Canopy: a cascade (provider → consumer → consumer of the consumer), eight
//! consumers of one provider, a consumer in the middle of the cascade killed with -9 and started
//! again while writes go on, and a consumer over ldaps:// binding with SASL PLAIN as a replicator that is
//! not the root DN. Each scenario writes adds, modifies, renames (with and without a new
//! superior) and deletes of a leaf and of a subtree, then waits (polling contextCSN, with a time bound)
//! until every consumer holds the provider's full contents (user attributes, entryUUID, entryCSN).
//! Canopy-only (skipped when the target is slapd: both ends are Canopy).

use std::time::Duration;

use canopy_e2e::consumer_support::{
    canopy_consumer, relaunch_same_port, syncrepl_table, tls_material,
};
use canopy_e2e::replication::{access_toml, PROVIDER_ACCESS, REPLICATOR_PW};
use canopy_e2e::*;

const CONVERGE: Duration = Duration::from_secs(60);
const PERSIST: &str = "type = \"refreshAndPersist\"\n";

fn canopy_target() -> bool {
    canopy_e2e::replicas::canopy_only("Canopy replicating to Canopy")
}

#[track_caller]
fn converged(provider: &Server, consumer: &Server, what: &str) {
    canopy_e2e::replicas::assert_converged(provider, consumer, CONVERGE, what);
}

/// The shared sample of writes (`replicas::sample_writes`) under the suffix.
fn writes(p: &Server, tag: &str) {
    canopy_e2e::replicas::sample_writes(p, SUFFIX, tag);
}

#[test]
fn cascade_provider_consumer_consumer() {
    if !canopy_target() {
        return;
    }
    let a = Server::start();
    let b = canopy_consumer(&syncrepl_table(&a, 1, PERSIST));
    let c = canopy_consumer(&syncrepl_table(&b, 2, PERSIST));
    converged(&a, &b, "initial refresh of the first consumer");
    converged(&a, &c, "initial refresh through the cascade");
    writes(&a, "1");
    converged(&a, &b, "persist: first consumer");
    converged(&a, &c, "persist: through the cascade");
    // The middle of the cascade is a shadow: its clients' writes are refused, its own consumer's
    // reads are served.
    let refused = b.modify(
        &Bind::Root,
        &format!("dn: {SUFFIX}\nchangetype: modify\nreplace: description\ndescription: x\n"),
    );
    assert_ne!(refused.code, 0, "a write to a consumer: {refused:?}");
}

#[test]
fn middle_of_a_cascade_killed_and_restarted() {
    if !canopy_target() {
        return;
    }
    let a = Server::start();
    let mut b = canopy_consumer(&syncrepl_table(&a, 1, PERSIST));
    let c = canopy_consumer(&syncrepl_table(&b, 2, PERSIST));
    converged(&a, &c, "initial refresh through the cascade");
    b.kill9();
    // Writes while the middle is down: it catches up from its cookie, its consumer from its own.
    writes(&a, "2");
    relaunch_same_port(&mut b);
    converged(&a, &b, "the restarted consumer");
    converged(&a, &c, "the consumer of the restarted consumer");
    writes(&a, "3");
    converged(&a, &c, "persist after the restart");
}

#[test]
fn eight_consumers_of_one_provider() {
    if !canopy_target() {
        return;
    }
    let a = Server::start();
    let consumers: Vec<Server> = (1..=8)
        .map(|rid| {
            let kind = if rid % 2 == 0 {
                PERSIST.to_string()
            } else {
                "type = \"refreshOnly\"\ninterval = \"00:00:00:01\"\n".to_string()
            };
            canopy_consumer(&syncrepl_table(&a, rid, &kind))
        })
        .collect();
    writes(&a, "4");
    for (i, consumer) in consumers.iter().enumerate() {
        converged(&a, consumer, &format!("consumer {}", i + 1));
    }
}

#[test]
fn over_ldaps_with_sasl_plain_as_a_replicator() {
    if !canopy_target() {
        return;
    }
    let certs = tempdir::TempDir::new("syncrepl-tls");
    tls_material(certs.path());
    let d = certs.path().display();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let ldaps = format!("ldaps://127.0.0.1:{port}");
    // The provider's rules let the replicator (alice) read passwords; PLAIN needs the protected link.
    let provider_toml = format!(
        "{}[tls]\ncert_file = \"{d}/server.crt\"\nkey_file = \"{d}/server.key\"\n",
        access_toml(&PROVIDER_ACCESS)
    );
    let a = Server::start_canopy_with_listeners(&provider_toml, std::slice::from_ref(&ldaps));
    let consumer_toml = format!(
        "[[syncrepl]]\nrid = 7\nprovider = \"{ldaps}\"\nsearchbase = \"{SUFFIX}\"\n\
         type = \"refreshAndPersist\"\ntls_cacert = \"{d}/ca.crt\"\nbindmethod = \"sasl\"\n\
         saslmech = \"PLAIN\"\nauthcid = \"alice\"\ncredentials = \"{REPLICATOR_PW}\"\n\
         retry = \"1 +\"\ntimeout = 10\n"
    );
    let b = canopy_consumer(&consumer_toml);
    // The replicator reads no authPassword (only the root DN may): compare without it.
    let without = |s: &Server| replication::contents(s, &["authPassword"]);
    let same = || {
        let deadline = std::time::Instant::now() + CONVERGE;
        loop {
            let want = replication::context_csn(&a);
            if !want.is_empty()
                && replication::context_csn(&b) == want
                && without(&a) == without(&b)
            {
                return;
            }
            if std::time::Instant::now() > deadline {
                panic!(
                    "no convergence over ldaps with PLAIN:\n{}\nconsumer log:\n{}",
                    replication::first_difference(&without(&a), &without(&b)),
                    b.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    writes(&a, "5");
    same();
}

/// Canopy → Canopy → slapd (issue 30): the middle sends the changes it received without a cookie and
/// the raised cookie after them, so slapd at the end of the cascade takes every change (with the
/// cookie as it was, slapd dropped each one as "CSN too old").
#[test]
fn cascade_canopy_canopy_slapd() {
    if !canopy_target() {
        return;
    }
    let limits = format!(
        "{}\n[[limits.rules]]\nwho = \"dn.exact:{}\"\nsize = \"unlimited\"\ntime = \"unlimited\"\n",
        access_toml(&PROVIDER_ACCESS),
        replication::REPLICATOR_DN
    );
    let a = Server::start_canopy_with_config(&limits);
    let b = canopy_consumer(&format!("{limits}{}", syncrepl_table(&a, 1, PERSIST)));
    let c = Server::start_slapd_with(&replication::syncrepl_directive(2, &b, "refreshAndPersist"));
    let same = |what: &str| {
        if let Err(e) = a.converges_with(&c, CONVERGE, replication::REPLICA_IGNORES) {
            panic!(
                "{what}: {e}\nmiddle log:\n{}\nslapd log:\n{}",
                b.log(),
                c.log()
            );
        }
    };
    same("initial refresh through the cascade");
    writes(&a, "6");
    for i in 0..10 {
        a.modify(
            &Bind::Root,
            &format!(
                "dn: uid=bob,ou=people,{SUFFIX}\nchangetype: modify\nreplace: description\ndescription: w{i}\n"
            ),
        )
        .expect_code(0, "modify");
    }
    same("persist through a canopy middle to slapd");
}
