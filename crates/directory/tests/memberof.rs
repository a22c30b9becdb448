//! The memberof overlay against a model: after every write of a random sequence (users and groups
//! added, deleted, renamed and moved, whole subtrees renamed, members added and removed), every entry's
//! memberOf is exactly the set of groups that list it, and groups list only existing entries.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::overlay::memberof::{self, Dangling, MemberOf, MEMBEROF_SCHEMA};
use canopy_directory::{Directory, Pipeline};
use canopy_proto::{ModifyOperation, ResultCode};
use canopy_schema::Schema;
use support::{add, delete, entries, norm, rename, Rng, ADMIN, SUFFIX};

/// Every group lists it, so no group is ever emptied by a delete.
const KEEPER: &str = "cn=keeper,dc=example,dc=com";

fn memberof_schema() -> Schema {
    let mut schema = Schema::builtin();
    schema.load_text(MEMBEROF_SCHEMA, "memberof").unwrap();
    schema
}

fn open(path: &std::path::Path, dangling: Dangling, refint: bool) -> Directory {
    let mut config = memberof::Config::new(ADMIN);
    config.dangling = dangling;
    config.refint = refint;
    let pipeline = Pipeline::standard().then(Arc::new(MemberOf::new(config)));
    support::open_with(path, memberof_schema(), Vec::new(), pipeline)
}

async fn add_group(dir: &Directory, dn: &str, members: &[String]) -> Result<(), LdapError> {
    let cn = dn.split(',').next().unwrap().trim_start_matches("cn=");
    let mut attrs = vec![("objectClass", "groupOfNames"), ("cn", cn)];
    attrs.extend(members.iter().map(|m| ("member", m.as_str())));
    add(dir, dn, &attrs).await
}

async fn modify(
    dir: &Directory,
    dn: &str,
    operation: ModifyOperation,
    values: &[String],
) -> Result<(), LdapError> {
    support::modify(dir, dn, operation, "member", values).await
}

/// memberOf of every entry equals the groups listing it; every member names an entry.
fn check(dir: &Directory, step: &str) {
    let all = entries(dir);
    let names: BTreeSet<String> = all.iter().map(|e| e.ndn.as_str().to_string()).collect();
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in &all {
        let is_group = entry.get("objectClass").is_some_and(|a| {
            a.values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(b"groupOfNames"))
        });
        if !is_group {
            continue;
        }
        for member in entry
            .get("member")
            .map(|a| a.values.clone())
            .unwrap_or_default()
        {
            let member = norm(dir, &member);
            assert!(
                names.contains(&member),
                "{step}: {} lists missing {member}",
                entry.dn
            );
            expected
                .entry(member)
                .or_default()
                .insert(entry.ndn.as_str().to_string());
        }
    }
    for entry in &all {
        let have: BTreeSet<String> = entry
            .get("memberOf")
            .map(|a| a.values.iter().map(|v| norm(dir, v)).collect())
            .unwrap_or_default();
        let want = expected.remove(entry.ndn.as_str()).unwrap_or_default();
        assert_eq!(have, want, "{step}: memberOf of {}", entry.dn);
    }
}

async fn base(dir: &Directory) {
    add(
        dir,
        SUFFIX,
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "Example"),
        ],
    )
    .await
    .unwrap();
    for ou in ["people", "groups", "staff"] {
        let dn = format!("ou={ou},{SUFFIX}");
        add(
            dir,
            &dn,
            &[("objectClass", "organizationalUnit"), ("ou", ou)],
        )
        .await
        .unwrap();
    }
    add(
        dir,
        KEEPER,
        &[("objectClass", "person"), ("cn", "keeper"), ("sn", "k")],
    )
    .await
    .unwrap();
}

/// The DNs of the entries under `ou=NAME` whose RDN starts with `prefix`.
fn under(dir: &Directory, ou: &str, prefix: &str) -> Vec<String> {
    let parent = norm(dir, format!("ou={ou},{SUFFIX}").as_bytes());
    entries(dir)
        .into_iter()
        .filter(|e| e.ndn.parent().is_some_and(|p| p.as_str() == parent))
        .filter(|e| e.ndn.rdns()[0].starts_with(prefix))
        .map(|e| e.dn.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memberof_agrees_with_the_groups_after_every_write() {
    for seed in [3u64, 17, 91] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), Dangling::Drop, true);
        base(&dir).await;
        let mut rng = Rng::seeded(seed);
        let mut counter = 0;
        for step in 0..300 {
            counter += 1;
            let people: Vec<String> = ["people", "staff", "moved"]
                .iter()
                .flat_map(|ou| under(&dir, ou, "uid="))
                .collect();
            let groups = under(&dir, "groups", "cn=");
            // Where people live now: ou=people, or ou=moved while the subtree is renamed away.
            let home = if entries(&dir)
                .iter()
                .any(|e| e.dn.to_string() == format!("ou=people,{SUFFIX}"))
            {
                "people"
            } else {
                "moved"
            };
            let pick = |rng: &mut Rng, from: &[String]| from.get(rng.below(from.len())).cloned();
            let some_members = |rng: &mut Rng| {
                let mut members = vec![KEEPER.to_string()];
                let pool: Vec<String> = people.iter().chain(groups.iter()).cloned().collect();
                for _ in 0..rng.below(4) {
                    if let Some(m) = pick(rng, &pool) {
                        members.push(m);
                    }
                }
                if rng.below(5) == 0 {
                    // Dropped: names no entry.
                    members.push(format!("uid=ghost{counter},ou={home},{SUFFIX}"));
                }
                members.dedup();
                members
            };
            let what = rng.below(10);
            let result = match what {
                0 | 1 => {
                    let dn = format!("uid=u{counter},ou={home},{SUFFIX}");
                    let attrs = [("objectClass", "account"), ("uid", "x")];
                    let uid = format!("u{counter}");
                    let attrs = [attrs[0], ("uid", uid.as_str())];
                    add(&dir, &dn, &attrs).await
                }
                2 => {
                    let members = some_members(&mut rng);
                    add_group(&dir, &format!("cn=g{counter},ou=groups,{SUFFIX}"), &members).await
                }
                3 => match (pick(&mut rng, &groups), some_members(&mut rng).pop()) {
                    (Some(g), Some(m)) => modify(&dir, &g, ModifyOperation::Add, &[m]).await,
                    _ => Ok(()),
                },
                4 => match (pick(&mut rng, &groups), pick(&mut rng, &people)) {
                    (Some(g), Some(m)) => modify(&dir, &g, ModifyOperation::Delete, &[m]).await,
                    _ => Ok(()),
                },
                5 => match pick(&mut rng, &groups) {
                    Some(g) => {
                        let members = some_members(&mut rng);
                        modify(&dir, &g, ModifyOperation::Replace, &members).await
                    }
                    None => Ok(()),
                },
                6 => match pick(&mut rng, &people).or_else(|| pick(&mut rng, &groups)) {
                    Some(dn) => delete(&dir, &dn).await,
                    None => Ok(()),
                },
                7 => match pick(&mut rng, &people) {
                    Some(dn) => {
                        let rdn = format!("uid=r{counter}");
                        let to = if rng.below(2) == 0 { home } else { "staff" };
                        rename(&dir, &dn, &rdn, Some(&format!("ou={to},{SUFFIX}"))).await
                    }
                    None => Ok(()),
                },
                8 => match pick(&mut rng, &groups) {
                    Some(dn) => rename(&dir, &dn, &format!("cn=h{counter}"), None).await,
                    None => Ok(()),
                },
                _ => {
                    // A whole subtree moves: every member below it is renamed at once.
                    let names: Vec<String> =
                        entries(&dir).iter().map(|e| e.dn.to_string()).collect();
                    let people = format!("ou=people,{SUFFIX}");
                    if names.contains(&people) {
                        rename(&dir, &people, "ou=moved", None).await
                    } else {
                        rename(&dir, &format!("ou=moved,{SUFFIX}"), "ou=people", None).await
                    }
                }
            };
            if let Err(e) = &result {
                // Renaming onto an existing name, and removing or adding a member a group does not or does
                // list, are
                // the only refusals the sequence can meet.
                assert!(
                    matches!(
                        e.code,
                        ResultCode::EntryAlreadyExists
                            | ResultCode::NoSuchAttribute
                            | ResultCode::AttributeOrValueExists
                    ),
                    "seed {seed} step {step} ({what}): {e:?}"
                );
            }
            check(&dir, &format!("seed {seed} step {step} ({what})"));
        }
        let kept: usize = entries(&dir)
            .iter()
            .filter_map(|e| e.get("memberOf"))
            .map(|a| a.values.len())
            .sum();
        assert!(
            kept > 5,
            "seed {seed}: only {kept} memberOf values at the end"
        );
    }
}

#[tokio::test]
async fn dangling_members_as_configured() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        Dangling::Error(ResultCode::ConstraintViolation),
        false,
    );
    base(&dir).await;
    let ghost = format!("uid=ghost,ou=people,{SUFFIX}");
    let group = format!("cn=g,ou=groups,{SUFFIX}");
    let refused = add_group(&dir, &group, &[KEEPER.into(), ghost.clone()])
        .await
        .unwrap_err();
    assert_eq!(refused.code, ResultCode::ConstraintViolation);
    assert!(refused.message.contains("uid=ghost"), "{}", refused.message);
    add_group(&dir, &group, &[KEEPER.into()]).await.unwrap();
    let refused = modify(
        &dir,
        &group,
        ModifyOperation::Add,
        std::slice::from_ref(&ghost),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ResultCode::ConstraintViolation);
    check(&dir, "error");

    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), Dangling::Ignore, false);
    base(&dir).await;
    add_group(&dir, &group, &[KEEPER.into(), ghost.clone()])
        .await
        .unwrap();
    let kept = entries(&dir)
        .into_iter()
        .find(|e| e.dn.to_string() == group)
        .unwrap();
    assert_eq!(kept.get("member").unwrap().values.len(), 2);

    // Without refint a deleted member stays listed; its memberOf went with it.
    add(
        &dir,
        &format!("uid=a,ou=people,{SUFFIX}"),
        &[("objectClass", "account"), ("uid", "a")],
    )
    .await
    .unwrap();
    modify(
        &dir,
        &group,
        ModifyOperation::Add,
        &[format!("uid=a,ou=people,{SUFFIX}")],
    )
    .await
    .unwrap();
    delete(&dir, &format!("uid=a,ou=people,{SUFFIX}"))
        .await
        .unwrap();
    let kept = entries(&dir)
        .into_iter()
        .find(|e| e.dn.to_string() == group)
        .unwrap();
    assert_eq!(kept.get("member").unwrap().values.len(), 3);
}

#[tokio::test]
async fn refint_keeps_a_group_that_would_lose_its_last_member() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), Dangling::Ignore, true);
    base(&dir).await;
    let user = format!("uid=only,ou=people,{SUFFIX}");
    add(&dir, &user, &[("objectClass", "account"), ("uid", "only")])
        .await
        .unwrap();
    let group = format!("cn=solo,ou=groups,{SUFFIX}");
    add_group(&dir, &group, std::slice::from_ref(&user))
        .await
        .unwrap();
    delete(&dir, &user).await.unwrap();
    let kept = entries(&dir)
        .into_iter()
        .find(|e| e.dn.to_string() == group)
        .unwrap();
    assert_eq!(kept.get("member").unwrap().values, vec![user.into_bytes()]);
}

#[tokio::test]
async fn rebuild_recomputes_memberof_from_the_groups() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().to_path_buf();
    {
        // Written without the overlay: groups but no memberOf.
        let plain = support::open_with(&path, memberof_schema(), Vec::new(), Pipeline::standard());
        base(&plain).await;
        let user = format!("uid=b,ou=people,{SUFFIX}");
        add(&plain, &user, &[("objectClass", "account"), ("uid", "b")])
            .await
            .unwrap();
        add_group(
            &plain,
            &format!("cn=x,ou=groups,{SUFFIX}"),
            &[user.clone(), KEEPER.into()],
        )
        .await
        .unwrap();
        add_group(&plain, &format!("cn=y,ou=groups,{SUFFIX}"), &[user])
            .await
            .unwrap();
    }
    let dir = open(&path, Dangling::Ignore, false);
    assert_eq!(dir.rebuild().unwrap(), 2);
    check(&dir, "rebuilt");
    assert_eq!(dir.rebuild().unwrap(), 0);
}
