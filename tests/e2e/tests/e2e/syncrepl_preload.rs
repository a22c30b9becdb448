//! Replicas that already hold data when replication starts (the usual migration path, issue 30):
//! a consumer loaded from the same LDIF as its provider, or from an older subset of it, each entry
//! with its own entryUUID; a consumer loaded from the provider's export (entryUUIDs and entryCSNs
//! kept); a slapd provider that deleted entries the preloaded consumer still holds; and three
//! multi-provider servers each loaded from the same LDIF. Every server must end with the provider's
//! entries (or, for the mesh, the same entries everywhere) and then carry later changes.
//! Canopy-only (skipped when the target is slapd: the consumers under test are canopy's).

use std::time::Duration;

use canopy_e2e::consumer_support::{syncrepl_table, SYNCPROV};
use canopy_e2e::mesh::wait_mesh_converged;
use canopy_e2e::preload::{preloaded, preloaded_mesh, write_ldif};
use canopy_e2e::*;

const CONVERGE: Duration = Duration::from_secs(60);
const PERSIST: &str = "type = \"refreshAndPersist\"\n";

fn canopy_target() -> bool {
    canopy_e2e::replicas::canopy_only("canopy consumers")
}

#[track_caller]
fn converged(provider: &Server, consumer: &Server, what: &str) {
    canopy_e2e::replicas::assert_converged(provider, consumer, CONVERGE, what);
}

fn entries(server: &Server) -> usize {
    server
        .search(&Bind::Root, &["-b", SUFFIX, "(objectClass=*)", "1.1"])
        .records()
        .len()
}

/// A change on the provider after the first refresh: it must reach the consumer too.
fn later_change(provider: &Server, tag: &str) {
    provider
        .modify(
            &Bind::Root,
            &format!(
                "dn: uid=u1,ou=people,{SUFFIX}\nchangetype: modify\nreplace: description\ndescription: later {tag}\n\n\
                 dn: uid=new{tag},ou=people,{SUFFIX}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: new{tag}\ncn: N\nsn: N\n"
            ),
        )
        .expect_code(0, "a later change on the provider");
}

/// Provider and consumer loaded from one LDIF (the consumer's from `consumer_skip`, 0 = the same).
fn preloaded_pair(consumer_skip: usize) {
    let dir = tempdir::TempDir::new("preload");
    let full = write_ldif(dir.path(), "full.ldif", 60, 0);
    let part = write_ldif(dir.path(), "part.ldif", 60, consumer_skip);
    let mut a = preloaded(Target::Canopy, "", Some(&full));
    a.start_preloaded();
    // Imported later: every entry's entryCSN here is newer than the provider's.
    std::thread::sleep(Duration::from_millis(20));
    let mut b = preloaded(
        Target::Canopy,
        &syncrepl_table(&a, 1, PERSIST),
        Some(if consumer_skip == 0 { &full } else { &part }),
    );
    b.start_preloaded();
    converged(&a, &b, "a preloaded consumer");
    assert_eq!(entries(&b), entries(&a), "{}", b.log());
    later_change(&a, "1");
    converged(&a, &b, "a later change");
}

#[test]
fn consumer_loaded_from_the_same_ldif_takes_the_providers_entries() {
    if canopy_target() {
        preloaded_pair(0);
    }
}

#[test]
fn consumer_loaded_from_an_older_subset_takes_the_providers_entries() {
    if canopy_target() {
        preloaded_pair(4);
    }
}

#[test]
fn consumer_loaded_from_the_providers_export_resumes() {
    if !canopy_target() {
        return;
    }
    let dir = tempdir::TempDir::new("preload");
    let full = write_ldif(dir.path(), "full.ldif", 60, 0);
    let mut a = preloaded(Target::Canopy, "", Some(&full));
    a.start_preloaded();
    let export = a.export();
    assert_eq!(export.code, 0, "{export:?}");
    let exported = dir.path().join("export.ldif");
    std::fs::write(&exported, &export.stdout).unwrap();
    // Changes after the export: the consumer's refresh brings just these.
    later_change(&a, "2");
    let mut b = preloaded(
        Target::Canopy,
        &syncrepl_table(&a, 1, PERSIST),
        Some(&exported),
    );
    b.start_preloaded();
    converged(&a, &b, "a consumer loaded from an export");
    later_change(&a, "3");
    converged(&a, &b, "a later change");
}

#[test]
fn slapd_provider_and_a_preloaded_consumer() {
    if !canopy_target() {
        return;
    }
    let dir = tempdir::TempDir::new("preload");
    let full = write_ldif(dir.path(), "full.ldif", 40, 0);
    let a = slapd_provider_from(&full);
    // Deleted on the provider before the consumer starts: the consumer must lose them too.
    for i in [3, 7] {
        a.modify(
            &Bind::Root,
            &format!("dn: uid=u{i},ou=people,{SUFFIX}\nchangetype: delete\n"),
        )
        .expect_code(0, "delete on the provider");
    }
    let mut b = preloaded(Target::Canopy, &syncrepl_table(&a, 1, PERSIST), Some(&full));
    b.start_preloaded();
    converged(&a, &b, "a preloaded consumer of slapd");
    later_change(&a, "4");
    converged(&a, &b, "a later change from slapd");
}

#[test]
fn three_providers_loaded_from_the_same_ldif_converge() {
    if !canopy_target() {
        return;
    }
    let dir = tempdir::TempDir::new("preload");
    let full = write_ldif(dir.path(), "full.ldif", 210, 0);
    let servers = preloaded_mesh(3, &full);
    let all: Vec<&Server> = servers.iter().collect();
    let report = |e: String| -> ! {
        let logs: Vec<String> = servers.iter().map(|s| s.log()).collect();
        panic!("{e}\nlogs:\n{}", logs.join("\n=====\n"))
    };
    if let Err(e) = wait_mesh_converged(&all, Duration::from_secs(90)) {
        report(e);
    }
    assert_eq!(entries(&servers[2]), 214, "every entry kept");
    for (i, s) in servers.iter().enumerate() {
        later_change(s, &format!("m{i}"));
    }
    if let Err(e) = wait_mesh_converged(&all, Duration::from_secs(90)) {
        report(e);
    }
    assert_eq!(entries(&servers[0]), 217, "every entry kept");
}

/// slapd replicates the glue entries its consumers make (a placeholder parent, an entry it could
/// not delete while children remain): objectClass glue and nothing else, not even the RDN's value. A
/// canopy consumer stores them, hides them from searches without ManageDsaIT as slapd does, keeps the
/// entries below them, and goes on with the changes behind them (issue 30).
#[test]
fn glue_entries_from_slapd() {
    if !canopy_target() {
        return;
    }
    let dir = tempdir::TempDir::new("glue");
    let ldif = dir.path().join("glue.ldif");
    std::fs::write(
        &ldif,
        format!(
            "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example Corp\ndc: example\n\n\
             dn: ou=glued,{SUFFIX}\nobjectClass: glue\n\n\
             dn: cn=kid,ou=glued,{SUFFIX}\nobjectClass: person\ncn: kid\nsn: K\n\n\
             dn: cn=other,{SUFFIX}\nobjectClass: person\ncn: other\nsn: O\n"
        ),
    )
    .unwrap();
    let a = slapd_provider_from(&ldif);
    let b = canopy_consumer_of(&a);
    converged(&a, &b, "a refresh carrying a glue entry");
    // Changes behind the glue entry arrive too.
    a.modify(
        &Bind::Root,
        &format!("dn: cn=other,{SUFFIX}\nchangetype: delete\n"),
    )
    .expect_code(0, "delete on the provider");
    converged(&a, &b, "a delete after the glue entry");
    let glue = b.search(
        &Bind::Root,
        &["-b", SUFFIX, "-M", "(objectClass=glue)", "entryUUID"],
    );
    assert_eq!(glue.records().len(), 1, "glue with ManageDsaIT: {glue:?}");
    let hidden = b.search(&Bind::Root, &["-b", SUFFIX, "(objectClass=glue)"]);
    assert_eq!(hidden.records().len(), 0, "glue hidden: {hidden:?}");
}

/// Debian's slapd with syncprov, loaded offline (slapadd) from `ldif`, started.
fn slapd_provider_from(ldif: &std::path::Path) -> Server {
    let mut a = preloaded(Target::Slapd, "", None);
    let conf = slapd_conf::render_with_overlays(a.dir(), &a.data_dir(), SYNCPROV);
    std::fs::write(a.dir().join("slapd.conf"), conf).unwrap();
    a.import(ldif).expect_code(0, "slapadd");
    a.start_preloaded();
    a
}

fn canopy_consumer_of(provider: &Server) -> Server {
    let mut b = preloaded(Target::Canopy, &syncrepl_table(provider, 1, PERSIST), None);
    b.start_preloaded();
    b
}

/// A consumer whose cookie is ahead of its (plain) provider for a server ID the provider knows: the
/// provider went back (a consumer in the middle of a cascade whose first refresh set its contextCSN
/// to its own provider's, below the import's it had already served; a restore). No refresh by
/// cookie could send what sorts below that cookie, so the provider asks for a reload (4096), and the
/// consumer refreshes without a cookie (found by the replication harness, seed 2).
#[test]
fn a_cookie_ahead_of_the_provider_asks_for_a_reload() {
    if !canopy_target() {
        return;
    }
    let a = Server::start();
    let out = a.search(
        &Bind::Root,
        &[
            "-b",
            SUFFIX,
            "-E",
            "!sync=ro/rid=001,csn=29991231000000.000000Z#000000#000#000000",
            "(uid=alice)",
            "1.1",
        ],
    );
    assert!(
        out.stderr.contains("Content Sync Refresh Required (4096)"),
        "{out:?}"
    );
    // A cookie behind it is served as usual.
    let out = a.search(
        &Bind::Root,
        &[
            "-b",
            SUFFIX,
            "-E",
            "!sync=ro/rid=001,csn=20000101000000.000000Z#000000#000#000000",
            "(uid=alice)",
            "1.1",
        ],
    );
    assert_eq!((out.code, out.records().len()), (0, 1), "{out:?}");
}

/// A refresh that deletes most of what a consumer held (here: a consumer loaded with 60 people whose
/// provider holds none of them) still applies, but warns loudly and shows it on cn=Monitor, with
/// the counts.
#[test]
fn a_refresh_that_deletes_most_entries_is_reported() {
    if !canopy_target() {
        return;
    }
    let dir = tempdir::TempDir::new("preload");
    let small = write_ldif(dir.path(), "small.ldif", 0, 0);
    let big = write_ldif(dir.path(), "big.ldif", 60, 0);
    let mut a = preloaded(Target::Canopy, "", Some(&small));
    a.start_preloaded();
    let mut b = preloaded(Target::Canopy, &syncrepl_table(&a, 1, PERSIST), Some(&big));
    b.start_preloaded();
    converged(
        &a,
        &b,
        "a consumer whose provider holds almost nothing it held",
    );
    assert!(
        b.log().contains(
            "the present phase of this refresh deleted 60 of the 64 entries held in scope"
        ),
        "{}",
        b.log()
    );
    let monitor = b.search(
        &Bind::Root,
        &[
            "-b",
            "cn=Replication,cn=Monitor",
            "(cn=Consumer 001)",
            "description",
        ],
    );
    assert!(
        monitor
            .stdout
            .contains("a present phase deleted 60 of 64 entries"),
        "{monitor:?}"
    );
    assert!(
        monitor.stdout.contains("replaced: 4 spared: 0"),
        "{monitor:?}"
    );
}

/// A consumer that has not finished a refresh from its provider holds what it was loaded with, not
/// the provider's content: it answers its own consumers' sync searches with busy (51) until its
/// first refresh ends, and plain searches as usual (found by the replication harness, seed 97: a
/// slapd consumer below such a middle server took its entries, then lost 94 of them).
#[test]
fn a_consumer_serves_sync_searches_after_its_first_refresh() {
    if !canopy_target() {
        return;
    }
    let dir = tempdir::TempDir::new("preload");
    let full = write_ldif(dir.path(), "full.ldif", 20, 0);
    // The provider is prepared (its port chosen) but not started yet.
    let mut a = preloaded(Target::Canopy, "", Some(&full));
    let mut b = preloaded(Target::Canopy, &syncrepl_table(&a, 1, PERSIST), Some(&full));
    b.start_preloaded();
    let sync = ["-b", SUFFIX, "-E", "!sync=ro", "(uid=u1)", "1.1"];
    let out = b.search(&Bind::Root, &sync);
    assert_eq!(out.code, 51, "{out:?}");
    assert!(
        out.stderr.contains("has not finished its first refresh"),
        "{out:?}"
    );
    assert_eq!(
        entries(&b),
        entries_in(&full),
        "plain searches are answered"
    );
    a.start_preloaded();
    converged(&a, &b, "a preloaded consumer");
    let out = b.search(&Bind::Root, &sync);
    assert_eq!((out.code, out.records().len()), (0, 1), "{out:?}");
    // After a restart it has a cookie: served at once, the provider down or not.
    a.kill9();
    b.restart();
    let out = b.search(&Bind::Root, &sync);
    assert_eq!((out.code, out.records().len()), (0, 1), "{out:?}");
}

fn entries_in(ldif: &std::path::Path) -> usize {
    std::fs::read_to_string(ldif)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("dn:"))
        .count()
}
