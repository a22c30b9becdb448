//! Indexes added and dropped while the database takes writes (docs/design/online-indexing.md): the
//! build under concurrent adds, modifies and deletes ends equal to a rebuild from scratch (`verify`),
//! a restart in the middle resumes, the planner ignores the index until it is complete, a drop during
//! the build cancels it, and the store is reconciled with the configuration at start.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use canopy_core::index::{plan, IndexSpec, Plan};
use canopy_directory::OpenOptions;
use canopy_directory::{Directory, IndexState, Pipeline};
use canopy_mdb::{RawTable, ReadOps};
use canopy_proto::{Filter, ModifyOperation};
use canopy_schema::Schema;
use support::{add, delete, index, modify, Rng, SUFFIX};

fn mail_index() -> IndexSpec {
    IndexSpec {
        attr: "mail".into(),
        eq: true,
        pres: true,
        sub: true,
        ord: false,
        approx: false,
    }
}

fn open(path: &std::path::Path, indexes: Vec<IndexSpec>) -> Directory {
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    Directory::open(
        Arc::new(Schema::builtin()),
        SUFFIX,
        indexes,
        store,
        Pipeline::standard(),
    )
    .unwrap()
}

fn person(i: usize) -> String {
    format!("uid=u{i},{SUFFIX}")
}

/// The suffix and `n` people, added by 64 writers at a time (group commits keep it quick).
async fn fill(dir: &Directory, from: usize, n: usize) {
    if from == 0 {
        add(dir, SUFFIX, &[("objectClass", "domain"), ("dc", "example")])
            .await
            .unwrap();
    }
    let mut next = from;
    while next < from + n {
        let mut tasks = tokio::task::JoinSet::new();
        for i in next..(next + 64).min(from + n) {
            let dir = dir.clone();
            tasks.spawn(async move {
                let (uid, mail) = (format!("u{i}"), format!("user{i}@mail{}.example", i % 7));
                add(
                    &dir,
                    &person(i),
                    &[
                        ("objectClass", "inetOrgPerson"),
                        ("uid", &uid),
                        ("cn", &uid),
                        ("sn", "person"),
                        ("mail", &mail),
                    ],
                )
                .await
                .unwrap();
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        next += 64;
    }
}

/// Polls until `mail`'s index is in `state`, for at most `limit`.
async fn wait_state(dir: &Directory, state: IndexState, limit: Duration) {
    let started = Instant::now();
    loop {
        let status = dir.index_status();
        let now = status
            .iter()
            .find(|s| s.spec.attr == "mail")
            .map(|s| s.state);
        if now == Some(state) {
            return;
        }
        assert!(
            started.elapsed() < limit,
            "mail index not {state:?} after {limit:?}: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls until the build has visited at least `visited` entries.
async fn wait_visited(dir: &Directory, visited: u64) {
    let started = Instant::now();
    while dir
        .index_status()
        .iter()
        .find(|s| s.spec.attr == "mail")
        .is_some_and(|s| s.state == IndexState::Building && s.visited < visited)
    {
        assert!(started.elapsed() < Duration::from_secs(60), "build stalled");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `verify` finds nothing wrong and checked the mail index when `checked`.
fn verified(dir: &Directory, checked: bool) {
    let mut problems = Vec::new();
    let summary = dir
        .verify(&mut |_, _, _| {}, &mut |p| problems.push(p.to_string()))
        .unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    let has_mail = summary.tables.iter().any(|(t, _)| t == "idx.mail");
    assert_eq!(has_mail, checked, "{summary:?}");
    assert_eq!(
        summary.building.contains(&"mail".to_string()),
        !checked && dir.configured_indexes().iter().any(|s| s.attr == "mail")
    );
}

/// The entries holding `mail` exactly `value`, by a scan, and the planner's candidates for it (None:
/// every entry), both in one snapshot. A plan may only use a complete index.
fn lookup(dir: &Directory, value: &str) -> (Vec<u64>, Option<Vec<u64>>) {
    let txn = dir.store().read().unwrap();
    let filter = Filter::Equality("mail".into(), value.as_bytes().to_vec());
    let plan = plan(dir.schema(), &dir.indexes(&txn), &filter);
    let candidates = canopy_directory::candidates::resolve(&txn, &plan).unwrap();
    let mut holders = Vec::new();
    for item in txn.entries().unwrap() {
        let (id, bytes) = item.unwrap();
        let entry = Directory::parse_stored(bytes).unwrap().to_entry().unwrap();
        let held = entry.get("mail").is_some_and(|a| {
            a.values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(value.as_bytes()))
        });
        if held {
            holders.push(id);
        }
    }
    (holders, candidates)
}

/// Modifies, adds and deletes people until told to stop; returns how many writes it made.
fn churn(dir: Directory, stop: Arc<AtomicBool>, people: usize) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut rng = Rng::seeded(7);
        let mut writes = 0u64;
        let mut extra = people;
        while !stop.load(Ordering::Relaxed) {
            let i = rng.below(people);
            let outcome = match rng.below(4) {
                0 => {
                    extra += 1;
                    let uid = format!("u{extra}");
                    add(
                        &dir,
                        &person(extra),
                        &[
                            ("objectClass", "inetOrgPerson"),
                            ("uid", &uid),
                            ("cn", &uid),
                            ("sn", "late"),
                            ("mail", &format!("late{extra}@new.example")),
                        ],
                    )
                    .await
                }
                1 => delete(&dir, &person(i)).await,
                2 => {
                    let values = vec![
                        format!("changed{i}@new.example"),
                        format!("second{i}@x.example"),
                    ];
                    modify(&dir, &person(i), ModifyOperation::Replace, "mail", &values).await
                }
                _ => modify(&dir, &person(i), ModifyOperation::Delete, "mail", &[]).await,
            };
            // A deleted person may be picked again: noSuchObject and noSuchAttribute are expected.
            if outcome.is_ok() {
                writes += 1;
            }
        }
        writes
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_under_concurrent_writes_ends_equal_to_a_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        vec![
            index("objectClass", false, false),
            index("uid", false, false),
        ],
    );
    dir.start_index_builds().unwrap();
    let people = 20_000;
    fill(&dir, 0, people).await;
    dir.set_index_build_batch(250);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = churn(dir.clone(), Arc::clone(&stop), people);
    let status = dir.add_index(mail_index()).unwrap();
    assert_eq!(status.state, IndexState::Building);
    // While it builds, the planner does not use it, and the answer is right.
    let mut checks = 0;
    while dir
        .index_status()
        .iter()
        .any(|s| s.spec.attr == "mail" && s.state == IndexState::Building)
    {
        let (holders, candidates) = lookup(&dir, "user5@mail5.example");
        if dir
            .index_status()
            .iter()
            .any(|s| s.spec.attr == "mail" && s.state == IndexState::Building)
        {
            assert_eq!(candidates, None, "a building index was planned");
        }
        if let Some(candidates) = candidates {
            assert!(holders.iter().all(|h| candidates.contains(h)));
        }
        checks += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_state(&dir, IndexState::Complete, Duration::from_secs(60)).await;
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await.unwrap();
    assert!(writes > 10, "only {writes} writes ran beside the build");
    assert!(checks > 0);
    // Complete: planned, and equal to a recomputation from the entries.
    let (holders, candidates) = lookup(&dir, "user12@mail5.example");
    let candidates = candidates.expect("a complete index is planned");
    assert!(holders.iter().all(|h| candidates.contains(h)));
    verified(&dir, true);
    // The definition survives a restart as complete.
    drop(dir);
    let mut indexes = vec![
        index("objectClass", false, false),
        index("uid", false, false),
    ];
    indexes.push(mail_index());
    let dir = open(tmp.path(), indexes);
    let mail = dir
        .index_status()
        .into_iter()
        .find(|s| s.spec.attr == "mail")
        .unwrap();
    assert_eq!(mail.state, IndexState::Complete);
    verified(&dir, true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_in_the_middle_of_a_build_resumes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let base = vec![index("objectClass", false, false)];
    let dir = open(tmp.path(), base.clone());
    dir.start_index_builds().unwrap();
    fill(&dir, 0, 3_000).await;
    dir.set_index_build_batch(20);
    dir.add_index(mail_index()).unwrap();
    wait_visited(&dir, 300).await;
    dir.stop_index_builds();
    let stopped = dir
        .index_status()
        .into_iter()
        .find(|s| s.spec.attr == "mail")
        .unwrap();
    assert_eq!(stopped.state, IndexState::Building, "{stopped:?}");
    assert!(stopped.next_id > 1);
    // Writes while no build runs still keep the index.
    modify(
        &dir,
        &person(1),
        ModifyOperation::Replace,
        "mail",
        &["moved@new.example".into()],
    )
    .await
    .unwrap();
    drop(dir);

    let mut indexes = base.clone();
    indexes.push(mail_index());
    let dir = open(tmp.path(), indexes.clone());
    let mail = dir
        .index_status()
        .into_iter()
        .find(|s| s.spec.attr == "mail")
        .unwrap();
    assert_eq!(
        mail.state,
        IndexState::Building,
        "recorded as building at open"
    );
    // An offline check before the server starts the build skips it.
    verified(&dir, false);
    fill(&dir, 3_000, 100).await;
    dir.set_index_build_batch(50);
    dir.start_index_builds().unwrap();
    wait_state(&dir, IndexState::Complete, Duration::from_secs(60)).await;
    let resumed = dir
        .index_status()
        .into_iter()
        .find(|s| s.spec.attr == "mail")
        .unwrap();
    assert!(
        resumed.visited < 3_100,
        "resumed, not restarted: {resumed:?}"
    );
    verified(&dir, true);
    let (holders, candidates) = lookup(&dir, "moved@new.example");
    assert_eq!(Some(holders), candidates);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drop_during_the_build_cancels_it_and_empties_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), vec![index("objectClass", false, false)]);
    dir.start_index_builds().unwrap();
    fill(&dir, 0, 2_000).await;
    dir.set_index_build_batch(10);
    dir.add_index(mail_index()).unwrap();
    wait_visited(&dir, 100).await;
    dir.drop_index("MAIL").unwrap();
    assert!(dir.index_status().iter().all(|s| s.spec.attr != "mail"));
    assert_eq!(
        dir.store()
            .read()
            .unwrap()
            .raw_len(RawTable::Index("mail"))
            .unwrap(),
        0
    );
    // Writes no longer touch it.
    modify(
        &dir,
        &person(3),
        ModifyOperation::Replace,
        "mail",
        &["x@y.example".into()],
    )
    .await
    .unwrap();
    assert_eq!(
        dir.store()
            .read()
            .unwrap()
            .raw_len(RawTable::Index("mail"))
            .unwrap(),
        0
    );
    assert_eq!(
        dir.drop_index("mail").unwrap_err(),
        canopy_directory::IndexError::NotIndexed("mail".into())
    );
    verified(&dir, false);
    // Not recorded: a restart without it in the configuration keeps it gone, and adding it again works.
    drop(dir);
    let dir = open(tmp.path(), vec![index("objectClass", false, false)]);
    dir.start_index_builds().unwrap();
    assert!(dir.index_status().iter().all(|s| s.spec.attr != "mail"));
    dir.add_index(mail_index()).unwrap();
    wait_state(&dir, IndexState::Complete, Duration::from_secs(60)).await;
    verified(&dir, true);
    let (holders, candidates) = lookup(&dir, "x@y.example");
    assert_eq!(Some(holders), candidates);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_follows_the_configuration_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    // A database that records no definitions: its configured indexes are taken as complete.
    let dir = open(
        tmp.path(),
        vec![index("objectClass", false, false), mail_index()],
    );
    fill(&dir, 0, 300).await;
    assert!(dir
        .index_status()
        .iter()
        .all(|s| s.state == IndexState::Complete));
    dir.start_index_builds().unwrap();
    verified(&dir, true);
    drop(dir);
    // mail no longer configured, sn new: mail is dropped, sn built online.
    let dir = open(
        tmp.path(),
        vec![
            index("objectClass", false, false),
            index("sn", false, false),
        ],
    );
    let sn = |dir: &Directory| {
        dir.index_status()
            .into_iter()
            .find(|s| s.spec.attr == "sn")
            .unwrap()
    };
    assert_eq!(sn(&dir).state, IndexState::Pending);
    let txn = dir.read().unwrap();
    assert!(
        dir.indexes(&txn).iter().all(|s| s.attr != "sn"),
        "a pending index is not planned"
    );
    drop(txn);
    dir.start_index_builds().unwrap();
    assert_eq!(
        dir.store()
            .read()
            .unwrap()
            .raw_len(RawTable::Index("mail"))
            .unwrap(),
        0
    );
    let started = Instant::now();
    while sn(&dir).state != IndexState::Complete {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            sn(&dir)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    verified(&dir, false);
    let txn = dir.read().unwrap();
    let filter = Filter::Equality("sn".into(), b"person".to_vec());
    assert!(matches!(
        plan(dir.schema(), &dir.indexes(&txn), &filter),
        Plan::Keys { .. }
    ));
    drop(txn);
    // Other kinds for a stored index: emptied and built again.
    drop(dir);
    let mut sn_sub = index("sn", false, true);
    sn_sub.pres = true;
    let dir = open(
        tmp.path(),
        vec![index("objectClass", false, false), sn_sub.clone()],
    );
    assert_eq!(sn(&dir).state, IndexState::Pending);
    dir.start_index_builds().unwrap();
    let started = Instant::now();
    while sn(&dir).state != IndexState::Complete {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            sn(&dir)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sn(&dir).spec, sn_sub);
    verified(&dir, false);
}

#[test]
fn bad_additions_are_refused_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), vec![index("objectClass", false, false)]);
    let mut spec = mail_index();
    spec.attr = "noSuchType".into();
    assert!(matches!(
        dir.add_index(spec),
        Err(canopy_directory::IndexError::UnknownAttribute(_))
    ));
    let none = IndexSpec {
        attr: "mail".into(),
        eq: false,
        pres: false,
        sub: false,
        ord: false,
        approx: false,
    };
    assert!(matches!(
        dir.add_index(none),
        Err(canopy_directory::IndexError::NoKinds(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_a_configured_index_not_yet_built_builds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), vec![index("objectClass", false, false)]);
    dir.start_index_builds().unwrap();
    fill(&dir, 0, 200).await;
    drop(dir);
    let dir = open(
        tmp.path(),
        vec![index("objectClass", false, false), mail_index()],
    );
    let state = |dir: &Directory| {
        dir.index_status()
            .into_iter()
            .find(|s| s.spec.attr == "mail")
            .map(|s| s.state)
    };
    assert_eq!(state(&dir), Some(IndexState::Pending));
    let again = dir.add_index(mail_index()).unwrap();
    assert_eq!(again.state, IndexState::Building);
    wait_state(&dir, IndexState::Complete, Duration::from_secs(30)).await;
    // Asked again with the same kinds: nothing to do.
    assert_eq!(
        dir.add_index(mail_index()).unwrap().state,
        IndexState::Complete
    );
    verified(&dir, true);
}
