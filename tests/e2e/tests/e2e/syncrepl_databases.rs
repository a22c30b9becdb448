//! Consumers on every database: a provider (Debian's slapd with syncprov on each database, and
//! Canopy) serves `dc=example,dc=com` and a glued subordinate `ou=sub,dc=example,dc=com`; a Canopy
//! consumer has one consumer per database (`[[syncrepl]]` and `[[database.syncrepl]]`). Adds,
//! modifies, renames and deletes in both databases must reach the consumer's database that holds
//! them (checked with offline exports of each database), a restart must resume each consumer from its
//! own database's cookie, and a consumer loaded with the provider's data before it starts must never
//! lose an entry while its first refreshes run. Then Debian's slapd as the consumer of glued Canopy
//! databases, which must keep its subordinate's entries through the superior's present phase.
//! Canopy-only (skipped when the target is slapd: each scenario starts both ends itself).

use std::path::Path;
use std::time::{Duration, Instant};

use canopy_e2e::consumer_support::{syncrepl_table, wait_converged};
use canopy_e2e::replication::REPLICA_IGNORES;
use canopy_e2e::slapd_conf::{render_with_databases, ExtraDatabase};
use canopy_e2e::*;

const SUB: &str = "ou=sub,dc=example,dc=com";
const CONVERGE: Duration = Duration::from_secs(60);
const PERSIST: &str = "type = \"refreshAndPersist\"\n";
const POLL: &str = "type = \"refreshOnly\"\ninterval = \"00:00:00:01\"\n";

/// The glued subordinate, with syncprov of its own on slapd (Canopy's provider is built in).
fn sub_database() -> ExtraDatabase {
    ExtraDatabase {
        suffix: SUB.into(),
        root_dn: Some(ROOT_DN.into()),
        subordinate: Some(true),
        overlays: ("overlay syncprov\n".into(), String::new()),
        ..Default::default()
    }
}

/// Starts the provider with both databases, base.ldif and a few entries in the subordinate.
fn provider(target: Target) -> Server {
    let server = match target {
        Target::Slapd => {
            let conf = render_with_databases(
                Path::new("@DIR@"),
                Path::new("@DIR@/data"),
                &[sub_database()],
            );
            // The main database's section is the last one: its own syncprov.
            let conf = format!("{conf}overlay syncprov\n");
            Server::start_configured(Target::Slapd, &conf, &["data", "data/db2"], &[])
        }
        Target::Canopy => {
            Server::start_configured(Target::Canopy, &sub_database().canopy_table(), &[], &[])
        }
    };
    server.load_base();
    server
        .add(
            &Bind::Root,
            &format!(
                "dn: {SUB}\nobjectClass: organizationalUnit\nou: sub\n\n\
                 dn: cn=s0,{SUB}\nobjectClass: person\ncn: s0\nsn: S\n\n\
                 dn: ou=inner,{SUB}\nobjectClass: organizationalUnit\nou: inner\n"
            ),
        )
        .expect_code(0, "the subordinate's entries");
    server
}

/// The consumer's configuration: one consumer per database (the main one's `first_kind`, the
/// subordinate's refreshAndPersist), each database referring client writes to the provider.
fn consumer_toml(p: &Server, first_kind: &str) -> String {
    let url = p.ldap_url();
    let first = syncrepl_table(p, 1, first_kind);
    let second = syncrepl_table(p, 2, PERSIST)
        .replace("[[syncrepl]]", "[[database.syncrepl]]")
        .replace(
            &format!("searchbase = \"{SUFFIX}\""),
            &format!("searchbase = \"{SUB}\""),
        );
    format!(
        "updateref = \"{url}\"\n{first}\n[[database]]\nsuffix = \"{SUB}\"\nsubordinate = true\n\
         updateref = \"{url}\"\n{second}"
    )
}

/// The contextCSN values of `base` (sorted).
fn context_of(server: &Server, base: &str) -> Vec<String> {
    let out = server.search(
        &Bind::Root,
        &["-b", base, "-s", "base", "(objectClass=*)", "contextCSN"],
    );
    let mut values: Vec<String> = out
        .records()
        .iter()
        .flat_map(|r| r.values("contextCSN"))
        .collect();
    values.sort();
    values
}

/// Both databases converged: the main one's contextCSN and the whole glued tree (`wait_converged`),
/// then the subordinate's own contextCSN.
#[track_caller]
fn converged(p: &Server, c: &Server, what: &str) {
    if let Err(diff) = wait_converged(p, c, CONVERGE) {
        panic!(
            "{what}: no convergence:\n{diff}\nconsumer log:\n{}",
            c.log()
        );
    }
    let deadline = Instant::now() + CONVERGE;
    loop {
        let (want, have) = (context_of(p, SUB), context_of(c, SUB));
        if !want.is_empty() && want == have {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the subordinate's contextCSN: provider {want:?}, consumer {have:?}\n{}",
            c.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The DNs (lower case) of an export's records.
fn exported_dns(out: &Out) -> Vec<String> {
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("dn: "))
        .map(|dn| dn.to_ascii_lowercase())
        .collect()
}

/// Each of the consumer's databases holds exactly its own entries: the main one (without the glued
/// one, `-g`) none below the subordinate's suffix, the subordinate every entry the provider has there.
#[track_caller]
fn in_their_databases(p: &Server, c: &Server) {
    let main = c.canopy_tool("export", &["-g", "-b", SUFFIX]);
    main.expect_code(0, "export of the main database");
    let sub = c.canopy_tool("export", &["-g", "-b", SUB]);
    sub.expect_code(0, "export of the subordinate");
    let main_dns = exported_dns(&main);
    let sub_dns = exported_dns(&sub);
    let suffix = SUB.to_ascii_lowercase();
    assert!(
        main_dns.iter().all(|dn| !dn.ends_with(&suffix)),
        "the main database holds the subordinate's entries: {main_dns:?}"
    );
    assert!(main_dns.contains(&SUFFIX.to_string()), "{main_dns:?}");
    assert!(
        sub_dns.iter().all(|dn| dn.ends_with(&suffix)),
        "{sub_dns:?}"
    );
    let mut provided: Vec<String> = p
        .search(
            &Bind::Root,
            &["-b", SUB, "-s", "sub", "(objectClass=*)", "1.1"],
        )
        .records()
        .iter()
        .map(|r| r.dn().to_ascii_lowercase())
        .collect();
    let mut held = sub_dns.clone();
    provided.sort();
    held.sort();
    assert_eq!(held, provided, "the subordinate's entries");
}

/// The shared sample of writes (`replicas::sample_writes`) under `base`.
fn writes(p: &Server, base: &str, tag: &str) {
    canopy_e2e::replicas::sample_writes(p, base, tag);
}

fn each_database_feeds_its_own(provider_target: Target, first_kind: &str) {
    if !canopy_e2e::replicas::canopy_only("Canopy is the consumer under test") {
        return;
    }
    let p = provider(provider_target);
    let mut c = canopy_consumer_server(&consumer_toml(&p, first_kind));
    converged(&p, &c, "first refresh");
    in_their_databases(&p, &c);

    writes(&p, SUFFIX, "main");
    writes(&p, SUB, "sub");
    converged(&p, &c, "persist: writes in both databases");
    in_their_databases(&p, &c);
    // A client write to the subordinate is referred to the provider, as the main database's.
    let refused = c.modify(
        &Bind::Root,
        &format!("dn: cn=s0,{SUB}\nchangetype: modify\nreplace: sn\nsn: X\n"),
    );
    assert_eq!(
        refused.code, 10,
        "a write on the consumer's subordinate: {refused:?}"
    );

    // Stopped, written to, started again: each consumer resumes from its own database's cookie.
    c.terminate();
    writes(&p, SUFFIX, "main2");
    writes(&p, SUB, "sub2");
    p.modify(
        &Bind::Root,
        &format!("dn: cn=s0,{SUB}\nchangetype: delete\n"),
    )
    .expect_code(0, "a delete while the consumer is down");
    canopy_e2e::consumer_support::relaunch_same_port(&mut c);
    converged(&p, &c, "after the restart");
    in_their_databases(&p, &c);
    let log = c.log();
    for rid in ["001", "002"] {
        let resumed = format!("cookie=rid={rid},csn=");
        assert!(
            log.lines()
                .any(|l| l.contains("refresh starts") && l.contains(&resumed)),
            "consumer {rid} did not resume from a stored cookie:\n{log}"
        );
    }
}

/// A canopy consumer started with `toml` (info log) on an empty database.
fn canopy_consumer_server(toml: &str) -> Server {
    canopy_e2e::consumer_support::canopy_consumer(toml)
}

/// slapd's refreshOnly refresh of the superior sends the glued subordinate's entries too: the main
/// database's consumer must leave them to the subordinate's.
#[test]
fn each_database_feeds_its_own_from_slapd() {
    each_database_feeds_its_own(Target::Slapd, POLL);
}

#[test]
fn each_database_feeds_its_own_from_slapd_persisting() {
    each_database_feeds_its_own(Target::Slapd, PERSIST);
}

#[test]
fn each_database_feeds_its_own_from_canopy() {
    each_database_feeds_its_own(Target::Canopy, PERSIST);
}

/// How many entries `base`'s subtree holds on `server` (0 when the search fails).
fn count(server: &Server, base: &str) -> usize {
    server
        .search(
            &Bind::Root,
            &["-b", base, "-s", "sub", "(objectClass=*)", "1.1"],
        )
        .records()
        .len()
}

/// A consumer loaded offline with the provider's data (both databases, from the provider's export)
/// keeps every entry while its two consumers run their first refreshes: the counts of both databases
/// never drop, and it ends with the provider's contents.
#[test]
fn a_preloaded_consumer_keeps_its_data() {
    if !canopy_e2e::replicas::canopy_only("Canopy is the consumer under test") {
        return;
    }
    let p = provider(Target::Slapd);
    writes(&p, SUB, "pre");
    let export = p.export_of(SUFFIX);
    export.expect_code(0, "the provider's export");
    let ldif = p.dir().join("provider.ldif");
    std::fs::write(&ldif, &export.stdout).unwrap();
    let (main_count, sub_count) = (count(&p, SUFFIX), count(&p, SUB));
    assert!(sub_count > 3, "{sub_count}");
    let c = Server::start_configured(
        Target::Canopy,
        &consumer_toml(&p, PERSIST),
        &[],
        &[(SUFFIX, ldif.as_path())],
    );
    let deadline = Instant::now() + CONVERGE;
    loop {
        let (main_now, sub_now) = (count(&c, SUFFIX), count(&c, SUB));
        assert!(
            main_now >= main_count && sub_now >= sub_count,
            "entries vanished during the first refreshes: {main_now}/{main_count} in the tree, \
             {sub_now}/{sub_count} in the subordinate\n{}",
            c.log()
        );
        if context_of(&c, SUFFIX) == context_of(&p, SUFFIX)
            && context_of(&c, SUB) == context_of(&p, SUB)
            && c.log().matches("refresh ended").count() >= 2
        {
            break;
        }
        assert!(Instant::now() < deadline, "no refresh ended:\n{}", c.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    converged(&p, &c, "a preloaded consumer");
    in_their_databases(&p, &c);
}

/// Debian's slapd as the consumer of a Canopy provider, one consumer per database as OpenLDAP's
/// test033 has them, loaded with the provider's export and behind it by writes: the refresh of the
/// main database ends with a present phase (the provider's session log holds one record), after
/// which slapd deletes what its glued tree holds and the provider did not name. Canopy names the
/// glued subordinate's entries present in the superior's refresh, as slapd's provider does, so
/// slapd keeps them.
#[test]
fn a_slapd_consumer_of_glued_databases_keeps_the_subordinate() {
    if !canopy_e2e::replicas::canopy_only("the provider under test is Canopy") {
        return;
    }
    let p = Server::start_configured(
        Target::Canopy,
        &format!("syncprov_sessionlog = 1\n{}", sub_database().canopy_table()),
        &[],
        &[],
    );
    p.load_base();
    p.add(
        &Bind::Root,
        &format!(
            "dn: {SUB}\nobjectClass: organizationalUnit\nou: sub\n\n\
             dn: cn=s0,{SUB}\nobjectClass: person\ncn: s0\nsn: S\n"
        ),
    )
    .expect_code(0, "the subordinate's entries");
    let export = p.export_of(SUFFIX);
    export.expect_code(0, "the provider's export");
    let ldif = p.dir().join("provider.ldif");
    // slapd has no schema for Canopy's per-attribute CSNs nor its SCRAM secrets (with their
    // continuation lines).
    let mut text = String::new();
    let mut skipping = false;
    for l in export.stdout.lines() {
        if !l.starts_with(' ') {
            skipping = l.starts_with("canopyAttrCSN") || l.starts_with("authPassword");
        }
        if !skipping {
            text.push_str(l);
            text.push('\n');
        }
    }
    assert!(text.contains(&format!("dn: cn=s0,{SUB}")), "{text}");
    std::fs::write(&ldif, text).unwrap();
    writes(&p, SUFFIX, "after");
    let line = |rid: u16, base: &str| {
        format!(
            "syncrepl rid={rid:03} provider={} bindmethod=simple binddn=\"{ROOT_DN}\" \
             credentials={ROOT_PW} searchbase=\"{base}\" type=refreshAndPersist retry=\"1 +\" \
             timeout=5 network-timeout=5\nupdateref {}\n",
            p.ldap_url(),
            p.ldap_url()
        )
    };
    let mut sub = sub_database();
    sub.overlays = (line(2, SUB), String::new());
    let conf = render_with_databases(Path::new("@DIR@"), Path::new("@DIR@/data"), &[sub]);
    let conf = format!("{conf}{}", line(1, SUFFIX));
    let c = Server::start_configured(
        Target::Slapd,
        &conf,
        &["data", "data/db2"],
        &[(SUFFIX, ldif.as_path())],
    );
    if let Err(diff) = p.converges_with(&c, CONVERGE, REPLICA_IGNORES) {
        panic!("{diff}\nslapd's log:\n{}", c.log());
    }
    assert_eq!(count(&c, SUB), count(&p, SUB), "the subordinate on slapd");
}
