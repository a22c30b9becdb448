//! delta-syncrepl (slapd's `syncdata=accesslog`), both directions: Debian's slapd provider with
//! `overlay accesslog` (syncprov on the log and on the data) and a Canopy delta consumer (persist,
//! restart with its cookie, the log purged beneath it: a full refresh, then the log again); and a
//! Canopy provider with `[[overlay]] name = "accesslog"` and a Debian slapd delta consumer. Full
//! contents compared after each scenario, convergence polled with a time bound. The servers are fixed
//! (slapd and Canopy), so the tests run once, whatever CANOPY_E2E_TARGET says.

use std::path::Path;
use std::time::{Duration, Instant};

use canopy_e2e::consumer_support::{canopy_consumer, relaunch_same_port, wait_converged, wait_log};
use canopy_e2e::replication::{
    access_toml, PROVIDER_ACCESS, REPLICATOR_DN, REPLICATOR_PW, REPLICA_IGNORES,
};
use canopy_e2e::*;

const CONVERGE: Duration = Duration::from_secs(30);
const LOGFILTER: &str = "(&(objectClass=auditWriteObject)(reqResult=0))";

fn once() -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for CANOPY_E2E_TARGET=slapd: these tests start both servers themselves");
        return false;
    }
    true
}

/// Debian's slapd as a delta-syncrepl provider: `cn=accesslog` (syncprov) before the data database
/// (syncprov, accesslog with `purge`); base.ldif loaded.
fn slapd_provider(purge: Option<&str>) -> Server {
    let mut overlays = "overlay syncprov\nsyncprov-checkpoint 100 1\nsyncprov-sessionlog 100\n\
                        overlay accesslog\nlogdb cn=accesslog\nlogops writes\nlogsuccess TRUE\n"
        .to_string();
    if let Some(purge) = purge {
        overlays.push_str(&format!("logpurge {purge}\n"));
    }
    let conf = canopy_harness::slapd_conf::render_with_overlays(
        Path::new("@DIR@"),
        Path::new("@DIR@/data"),
        &overlays,
    );
    let log = "database mdb\nsuffix cn=accesslog\nrootdn cn=accesslog\n\
               directory @DIR@/data/accesslog\nindex entryCSN,objectClass,reqEnd,reqResult,reqStart eq\n\
               access to * by * read\noverlay syncprov\nsyncprov-nopresent TRUE\n\
               syncprov-reloadhint TRUE\n\n";
    let at = conf.find("database mdb\n").expect("a database section");
    let conf = format!("{}{log}{}", &conf[..at], &conf[at..]);
    let server = Server::start_configured(Target::Slapd, &conf, &["data", "data/accesslog"], &[]);
    server.load_base();
    server
}

/// A Canopy delta consumer of `provider` (refreshAndPersist, bound as the root DN).
fn canopy_delta_consumer(provider: &Server) -> Server {
    canopy_consumer(&format!(
        "[[syncrepl]]\nrid = 7\nprovider = \"{}\"\nsearchbase = \"{SUFFIX}\"\n\
         bindmethod = \"simple\"\nbinddn = \"{ROOT_DN}\"\ncredentials = \"{ROOT_PW}\"\n\
         type = \"refreshAndPersist\"\nretry = \"1 +\"\ntimeout = 10\n\
         syncdata = \"accesslog\"\nlogbase = \"cn=accesslog\"\nlogfilter = \"{LOGFILTER}\"\n",
        provider.ldap_url()
    ))
}

#[track_caller]
fn converged(provider: &Server, consumer: &Server, what: &str) {
    if let Err(diff) = wait_converged(provider, consumer, CONVERGE) {
        panic!(
            "{what}: no convergence within {CONVERGE:?}:\n{diff}\nconsumer log:\n{}",
            consumer.log()
        );
    }
}

/// Adds, modifies of every kind, renames with and without a new superior, deletes; `tag` keeps the
/// names of several rounds apart.
fn writes(p: &Server, tag: &str) {
    let ou = format!("ou=delta{tag},{SUFFIX}");
    let mut ldif = format!("dn: {ou}\nobjectClass: organizationalUnit\nou: delta{tag}\n\n");
    for i in 0..4 {
        ldif.push_str(&format!(
            "dn: cn=d{i},{ou}\nobjectClass: person\ncn: d{i}\nsn: S{i}\ndescription: first\n\n"
        ));
    }
    p.add(&Bind::Root, &ldif).expect_code(0, "adds");
    p.modify(
        &Bind::Root,
        &format!(
            "dn: cn=d0,{ou}\nchangetype: modify\nreplace: description\ndescription: second\n\
             description: third\n-\nadd: telephoneNumber\ntelephoneNumber: +1 555 0100\n-\n\
             delete: sn\nsn: S0\n-\nadd: sn\nsn: T0\n\n\
             dn: cn=d1,{ou}\nchangetype: modify\ndelete: description\n\n\
             dn: {}\nchangetype: modify\nreplace: mail\nmail: alice{tag}@example.com\n\n\
             dn: cn=d1,{ou}\nchangetype: modrdn\nnewrdn: cn=d1renamed\ndeleteoldrdn: 1\n\n\
             dn: cn=d2,{ou}\nchangetype: modrdn\nnewrdn: cn=d2moved{tag}\ndeleteoldrdn: 0\n\
             newsuperior: ou=people,{SUFFIX}\n\n\
             dn: cn=d3,{ou}\nchangetype: delete\n",
            user_dn("alice")
        ),
    )
    .expect_code(0, "modifies, renames, delete");
}

#[test]
fn slapd_provider_canopy_delta_consumer() {
    if !once() {
        return;
    }
    let p = slapd_provider(None);
    let mut c = canopy_delta_consumer(&p);
    converged(&p, &c, "the first refresh (no cookie: the data)");
    writes(&p, "a");
    converged(&p, &c, "persist: the log replayed");
    assert!(
        wait_log(&c, "following the provider's log", Duration::from_secs(5)),
        "{}",
        c.log()
    );
    // Down while the provider changes; back with its cookie, it catches up from the log alone.
    c.kill9();
    writes(&p, "b");
    relaunch_same_port(&mut c);
    converged(&p, &c, "restart with the cookie");
    let refreshes = c.log().matches("full refresh of the data first").count();
    assert_eq!(
        refreshes,
        1,
        "only the first start refreshes the data:\n{}",
        c.log()
    );
    writes(&p, "c");
    converged(&p, &c, "persist after the restart");
}

#[test]
fn a_log_purged_beneath_the_consumer_falls_back_to_a_full_refresh() {
    if !once() {
        return;
    }
    let p = slapd_provider(Some("00:00:02 00:00:01"));
    let mut c = canopy_delta_consumer(&p);
    converged(&p, &c, "the first refresh");
    writes(&p, "a");
    converged(&p, &c, "persist");
    c.kill9();
    writes(&p, "b");
    // Every record, the one of the consumer's cookie included, purged.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = p
            .search(
                &Bind::Root,
                &["-b", "cn=accesslog", "-s", "one", "(reqType=*)", "1.1"],
            )
            .records()
            .len();
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the provider never purged its log"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    relaunch_same_port(&mut c);
    converged(&p, &c, "the fallback refresh");
    assert!(
        c.log().contains("does not reach back"),
        "the consumer did not notice the purge:\n{}",
        c.log()
    );
    writes(&p, "c");
    converged(&p, &c, "the log again after the fallback");
}

#[test]
fn canopy_provider_slapd_delta_consumer() {
    if !once() {
        return;
    }
    // The replicator reads the data (passwords included) and the log, which nobody else may read.
    let toml = format!(
        "{}[[overlay]]\nname = \"accesslog\"\nlogdb = \"cn=accesslog\"\nlogops = \"writes\"\n\
         access = ['to * by dn.exact=\"{REPLICATOR_DN}\" read by * none']\n",
        access_toml(&PROVIDER_ACCESS)
    );
    let p = Server::start_configured(Target::Canopy, &toml, &[], &[]);
    p.load_base();
    let directive = format!(
        "syncrepl rid=009 provider={} bindmethod=simple binddn=\"{REPLICATOR_DN}\" \
         credentials={REPLICATOR_PW} searchbase=\"{SUFFIX}\" scope=sub attrs=\"*,+\" \
         type=refreshAndPersist retry=\"1 +\" timeout=5 network-timeout=5 \
         logbase=\"cn=accesslog\" logfilter=\"{LOGFILTER}\" syncdata=accesslog\n",
        p.ldap_url()
    );
    let c = Server::start_slapd_with(&directive);
    let ignore = REPLICA_IGNORES;
    let check = |what: &str| {
        if let Err(diff) = c.converges_with(&p, CONVERGE, ignore) {
            panic!("{what}: {diff}\nslapd consumer log:\n{}", c.log());
        }
    };
    check("the first refresh");
    writes(&p, "a");
    check("slapd replaying Canopy's log");
    writes(&p, "b");
    check("a second round");
    // The log is the replicator's only: anonymous sees nothing of it.
    let anonymous = p.search(
        &Bind::Anonymous,
        &["-b", "cn=accesslog", "(reqType=*)", "reqMod"],
    );
    assert!(anonymous.records().is_empty(), "{}", anonymous.stdout);
}

/// A Canopy delta consumer killed with -9 while it replays a stream of log records, then started
/// again: each record and its cookie commit together, so it resumes where it stopped and converges.
#[test]
fn delta_consumer_killed_mid_stream() {
    if !once() {
        return;
    }
    let p = slapd_provider(None);
    let mut c = canopy_delta_consumer(&p);
    converged(&p, &c, "the first refresh");
    let dn = user_dn("bob");
    let stream: String = (0..150)
        .map(|i| {
            format!("dn: {dn}\nchangetype: modify\nreplace: description\ndescription: v{i}\n\n")
        })
        .collect();
    let writer = {
        let (url, stream) = (p.ldap_url(), stream.clone());
        std::thread::spawn(move || {
            let mut cmd = std::process::Command::new("ldapmodify");
            cmd.args(["-x", "-H", &url, "-D", ROOT_DN, "-w", ROOT_PW]);
            canopy_harness::client::run(cmd, Some(&stream))
        })
    };
    // Killed once it has replayed some of the stream (or after two seconds at most).
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let seen = c.read(&Bind::Root, &dn, &["description"]).stdout;
        if seen.contains("description: v") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    c.kill9();
    writer
        .join()
        .unwrap()
        .expect_code(0, "the stream of modifies");
    relaunch_same_port(&mut c);
    converged(&p, &c, "after kill -9 mid-stream");
}

/// Canopy → Canopy: a Canopy provider's log followed by a Canopy delta consumer, across a restart with
/// its cookie and after the provider itself was killed with -9 and started again.
#[test]
fn canopy_provider_canopy_delta_consumer() {
    if !once() {
        return;
    }
    let toml = "[[overlay]]\nname = \"accesslog\"\nlogdb = \"cn=accesslog\"\n";
    let mut p = Server::start_configured(Target::Canopy, toml, &[], &[]);
    p.load_base();
    let mut c = canopy_delta_consumer(&p);
    converged(&p, &c, "the first refresh");
    writes(&p, "a");
    converged(&p, &c, "persist");
    c.kill9();
    writes(&p, "b");
    relaunch_same_port(&mut c);
    converged(&p, &c, "restart with the cookie");
    relaunch_same_port(&mut p);
    writes(&p, "c");
    converged(&p, &c, "after the provider's kill -9 and restart");
    assert_eq!(
        c.log().matches("full refresh of the data first").count(),
        1,
        "only the first start refreshes the data:\n{}",
        c.log()
    );
}
