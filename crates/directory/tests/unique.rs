//! The unique overlay against a model: a random sequence of writes (adds, modifies, deletes, renames
//! of leaves and of whole subtrees into and out of the domains) drawing values from small pools, run on
//! an indexed and an unindexed database with the overlay and on a mirror without it. After every write
//! no two entries of a domain share a value; the overlay refuses exactly the writes that would make two
//! share one (the mirror, which takes every write, then holds a duplicate); and the indexed and unindexed
//! databases answer alike.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use canopy_core::filter::evaluate;
use canopy_core::{Entry, LdapError};
use canopy_directory::overlay::unique::{self, Domain, Unique};
use canopy_directory::{Directory, Pipeline, WriteOp};
use canopy_proto::{Filter, ModifyOperation, ResultCode};
use canopy_schema::Usage;
use support::*;

const PEOPLE: &str = "ldap:///ou=people,dc=example,dc=com?uid,mail?sub?\
                      (&(objectClass=inetOrgPerson)(!(employeeType=exempt)))";
const GROUPS: &str = "ldap:///ou=groups,dc=example,dc=com?cn?one";

fn pipeline(domains: &[&str]) -> Pipeline {
    let config = unique::Config {
        domains: domains.iter().map(|d| Domain::parse(d).unwrap()).collect(),
    };
    Pipeline::standard().then(Arc::new(Unique::new(config)))
}

/// One write, replayable on several databases.
#[derive(Debug, Clone)]
enum Op {
    Add(String, Vec<(&'static str, String)>),
    Modify(String, ModifyOperation, &'static str, Vec<String>),
    Delete(String),
    Rename(String, String, Option<String>),
}

async fn apply(dir: &Directory, op: &Op) -> Result<(), LdapError> {
    match op {
        Op::Add(dn, attrs) => {
            let attrs: Vec<(&str, &str)> = attrs.iter().map(|(a, v)| (*a, v.as_str())).collect();
            add(dir, dn, &attrs).await
        }
        Op::Modify(dn, operation, attr, values) => modify(dir, dn, *operation, attr, values).await,
        Op::Delete(dn) => delete(dir, dn).await,
        Op::Rename(dn, rdn, superior) => rename(dir, dn, rdn, superior.as_deref()).await,
    }
}

/// The model's domains, written out independently of the overlay: (scope base, one level only, filter,
/// attributes).
fn domains() -> Vec<(&'static str, bool, Option<Filter>, Vec<&'static str>)> {
    vec![
        (
            "ou=people,dc=example,dc=com",
            false,
            Some(Filter::parse("(&(objectClass=inetOrgPerson)(!(employeeType=exempt)))").unwrap()),
            vec!["uid", "mail"],
        ),
        ("ou=groups,dc=example,dc=com", true, None, vec!["cn"]),
    ]
}

/// A value two entries of one domain share, described; None when there is none.
fn duplicate(dir: &Directory) -> Option<String> {
    let schema = dir.schema();
    let all = entries(dir);
    for (base, one, filter, attrs) in domains() {
        let base = norm(dir, base.as_bytes());
        let mut seen: BTreeMap<(String, Vec<u8>), String> = BTreeMap::new();
        for entry in &all {
            let placed = if one {
                entry.ndn.parent().is_some_and(|p| p.as_str() == base)
            } else {
                entry.ndn.as_str() == base || entry.ndn.as_str().ends_with(&format!(",{base}"))
            };
            let matches = filter
                .as_ref()
                .is_none_or(|f| evaluate(schema, entry, &[], f).is_true());
            if !placed || !matches {
                continue;
            }
            for attr in &attrs {
                let at = schema.attribute_type(attr).unwrap();
                let Some(values) = entry.get(attr) else {
                    continue;
                };
                for value in &values.values {
                    let value = schema.normalize_value(at.equality.unwrap(), value).unwrap();
                    let key = (attr.to_string(), value);
                    if let Some(other) = seen.get(&key) {
                        if *other != entry.ndn.as_str() {
                            return Some(format!(
                                "{} and {other} share {key:?}",
                                entry.ndn.as_str()
                            ));
                        }
                    }
                    seen.insert(key, entry.ndn.as_str().to_string());
                }
            }
        }
    }
    None
}

/// By normalized DN, each entry's user attributes: (description, sorted values).
type Content = BTreeMap<String, Vec<(String, Vec<Vec<u8>>)>>;

/// The user attributes of every entry: what the databases must agree on.
fn content(dir: &Directory) -> Content {
    let schema = dir.schema();
    entries(dir)
        .into_iter()
        .map(|e| {
            let mut attrs: Vec<(String, Vec<Vec<u8>>)> = e
                .attrs
                .iter()
                .filter(|a| {
                    schema
                        .attribute_type(&a.desc)
                        .is_some_and(|at| at.usage == Usage::UserApplications)
                })
                .map(|a| {
                    let mut values = a.values.clone();
                    values.sort();
                    (a.desc.to_ascii_lowercase(), values)
                })
                .collect();
            attrs.sort();
            (e.ndn.as_str().to_string(), attrs)
        })
        .collect()
}

/// A database without the overlay holding what `from` holds.
async fn copy(from: &Directory, path: &std::path::Path) -> Directory {
    let dir = open(path, &[], Pipeline::standard());
    let mut all: Vec<Entry> = entries(from);
    all.sort_by_key(|e| e.ndn.rdns().len());
    for entry in all {
        write(&dir, WriteOp::Add(entry)).await.unwrap();
    }
    dir
}

async fn base(dir: &Directory) {
    let suffix = [
        ("objectClass", "dcObject"),
        ("objectClass", "organization"),
        ("dc", "example"),
        ("o", "Example"),
    ];
    add(dir, SUFFIX, &suffix).await.unwrap();
    for dn in [
        "ou=people,dc=example,dc=com",
        "ou=team,ou=people,dc=example,dc=com",
        "ou=groups,dc=example,dc=com",
        "ou=sub,ou=groups,dc=example,dc=com",
        "ou=staff,dc=example,dc=com",
    ] {
        let ou = dn.split(',').next().unwrap().trim_start_matches("ou=");
        let attrs = [("objectClass", "organizationalUnit"), ("ou", ou)];
        add(dir, dn, &attrs).await.unwrap();
    }
}

fn class_of(entry: &Entry, class: &str) -> bool {
    entry.get("objectClass").is_some_and(|a| {
        a.values
            .iter()
            .any(|v| v.eq_ignore_ascii_case(class.as_bytes()))
    })
}

/// A random write on the state of `dir`, with values from small pools so that they often collide.
fn generate(dir: &Directory, rng: &mut Rng, step: usize) -> Option<Op> {
    let all = entries(dir);
    let dns = |class: &str| -> Vec<String> {
        all.iter()
            .filter(|e| class_of(e, class))
            .map(|e| e.dn.to_string())
            .collect()
    };
    let (people, accounts, groups) = (dns("inetOrgPerson"), dns("account"), dns("groupOfNames"));
    let units: Vec<String> = dns("organizationalUnit");
    let unit_named = |ou: &str| {
        units
            .iter()
            .find(|u| u.starts_with(&format!("ou={ou},")))
            .cloned()
    };
    let uid = |rng: &mut Rng| format!("u{}", rng.below(6));
    let mail = |rng: &mut Rng| {
        let host = ["example.com", "EXAMPLE.com"][rng.below(2)];
        format!("m{}@{host}", rng.below(6))
    };
    let cn = |rng: &mut Rng| format!("c{}", rng.below(6));
    let leaves: Vec<String> = people
        .iter()
        .chain(&accounts)
        .chain(&groups)
        .cloned()
        .collect();
    Some(match rng.below(14) {
        0 | 1 => {
            let parent = rng.pick(&units)?;
            let mut attrs = vec![
                ("objectClass", "inetOrgPerson".to_string()),
                ("employeeNumber", step.to_string()),
                ("uid", uid(rng)),
                ("cn", cn(rng)),
                ("sn", "s".to_string()),
            ];
            for _ in 0..rng.below(3) {
                attrs.push(("mail", mail(rng)));
            }
            attrs.dedup();
            if rng.below(4) == 0 {
                attrs.push(("employeeType", "exempt".into()));
            }
            Op::Add(format!("employeeNumber={step},{parent}"), attrs)
        }
        2 => {
            let parent = rng.pick(&units)?;
            let attrs = vec![
                ("objectClass", "account".to_string()),
                ("host", format!("h{step}")),
                ("uid", uid(rng)),
            ];
            Op::Add(format!("host=h{step},{parent}"), attrs)
        }
        3 => {
            let parent = [unit_named("groups")?, unit_named("sub")?][rng.below(2)].clone();
            let attrs = vec![
                ("objectClass", "groupOfNames".to_string()),
                ("ou", format!("g{step}")),
                ("cn", cn(rng)),
                ("member", SUFFIX.to_string()),
            ];
            Op::Add(format!("ou=g{step},{parent}"), attrs)
        }
        4 => Op::Modify(
            rng.pick(&people)?,
            ModifyOperation::Add,
            "mail",
            vec![mail(rng)],
        ),
        5 => {
            let target = rng.pick(&people.iter().chain(&accounts).cloned().collect::<Vec<_>>())?;
            Op::Modify(target, ModifyOperation::Replace, "uid", vec![uid(rng)])
        }
        6 => {
            let values = if rng.below(2) == 0 {
                vec!["exempt".to_string()]
            } else {
                Vec::new()
            };
            Op::Modify(
                rng.pick(&people)?,
                ModifyOperation::Replace,
                "employeeType",
                values,
            )
        }
        7 => Op::Modify(
            rng.pick(&groups)?,
            ModifyOperation::Replace,
            "cn",
            vec![cn(rng)],
        ),
        8 => Op::Delete(rng.pick(&leaves)?),
        9 | 10 => {
            let dn = rng.pick(&leaves)?;
            let rdn = dn.split(',').next()?.to_string();
            Op::Rename(dn, rdn, Some(rng.pick(&units)?))
        }
        11 => Op::Rename(rng.pick(&people)?, format!("cn={}", cn(rng)), None),
        12 => {
            // The team subtree moves between the people subtree and ou=staff.
            let team = unit_named("team")?;
            let to = if team.contains("ou=staff") {
                unit_named("people").or_else(|| unit_named("moved"))?
            } else {
                unit_named("staff")?
            };
            Op::Rename(team, "ou=team".into(), Some(to))
        }
        _ => {
            // The people subtree leaves its domain (its base is gone) and comes back, whole.
            match unit_named("people") {
                Some(people) => Op::Rename(people, "ou=moved".into(), None),
                None => Op::Rename(unit_named("moved")?, "ou=people".into(), None),
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_domain_ever_holds_a_value_twice() {
    const INDEXED: [&str; 4] = ["uid", "mail", "cn", "objectClass"];
    for seed in [7u64, 31, 97] {
        let tmp: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let checked = [
            open(tmp[0].path(), &INDEXED, pipeline(&[PEOPLE, GROUPS])),
            open(tmp[1].path(), &[], pipeline(&[PEOPLE, GROUPS])),
        ];
        let mut mirror = open(tmp[2].path(), &[], Pipeline::standard());
        for dir in checked.iter().chain([&mirror]) {
            base(dir).await;
        }
        let mut rng = Rng::seeded(seed);
        let (mut refused, mut done, mut copies) = (0, 0, Vec::new());
        for step in 0..300 {
            let Some(op) = generate(&checked[0], &mut rng, step) else {
                continue;
            };
            let label = format!("seed {seed} step {step}: {op:?}");
            let first = apply(&checked[0], &op).await;
            let second = apply(&checked[1], &op).await;
            let plain = apply(&mirror, &op).await;
            let code = |r: &Result<(), LdapError>| r.as_ref().err().map(|e| e.code);
            assert_eq!(
                code(&first),
                code(&second),
                "{label}: indexed and unindexed disagree"
            );
            match &first {
                Err(e) if e.code == ResultCode::ConstraintViolation => {
                    assert!(plain.is_ok(), "{label}: the mirror refused {plain:?}");
                    assert!(
                        duplicate(&mirror).is_some(),
                        "{label}: refused, but taking it makes no duplicate ({})",
                        e.message
                    );
                    refused += 1;
                    let fresh = tempfile::tempdir().unwrap();
                    mirror = copy(&checked[0], fresh.path()).await;
                    copies.push(fresh);
                }
                Err(e) => {
                    assert!(
                        matches!(
                            e.code,
                            ResultCode::EntryAlreadyExists | ResultCode::AttributeOrValueExists
                        ),
                        "{label}: {e:?}"
                    );
                    assert_eq!(
                        code(&plain),
                        Some(e.code),
                        "{label}: the mirror answered otherwise"
                    );
                }
                Ok(()) => {
                    assert!(plain.is_ok(), "{label}: the mirror refused {plain:?}");
                    done += 1;
                }
            }
            for dir in &checked {
                assert_eq!(duplicate(dir), None, "{label}");
            }
            assert_eq!(content(&checked[0]), content(&checked[1]), "{label}");
            assert_eq!(content(&checked[0]), content(&mirror), "{label}");
        }
        assert!(refused > 10, "seed {seed}: only {refused} writes refused");
        assert!(done > 100, "seed {seed}: only {done} writes done");
    }
}

async fn person(dir: &Directory, dn: &str, extra: &[(&str, &str)]) -> Result<(), LdapError> {
    let uid = dn.split(',').next().unwrap().split('=').nth(1).unwrap();
    let mut attrs = vec![
        ("objectClass", "inetOrgPerson"),
        ("uid", uid),
        ("cn", uid),
        ("sn", uid),
    ];
    attrs.extend_from_slice(extra);
    add(dir, dn, &attrs).await
}

async fn tree(dir: &Directory) {
    base(dir).await;
    person(
        dir,
        "uid=a,ou=people,dc=example,dc=com",
        &[("mail", "a@example.com")],
    )
    .await
    .unwrap();
    person(
        dir,
        "uid=b,ou=people,dc=example,dc=com",
        &[("mail", "b@example.com")],
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn refusals_carry_slapds_code_and_text() {
    let uri = "ldap:///ou=people,dc=example,dc=com?mail,uid?sub?(objectClass=inetOrgPerson)";
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["mail"], pipeline(&[uri]));
    tree(&dir).await;
    let refused = person(
        &dir,
        "uid=c,ou=people,dc=example,dc=com",
        &[("mail", "A@example.com")],
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ResultCode::ConstraintViolation);
    assert_eq!(
        refused.message,
        "non-unique attributes found with (&(objectClass=inetOrgPerson)(|(uid=c)(mail=A@example.com)))"
    );
    let b = "uid=b,ou=people,dc=example,dc=com";
    let values = ["a@EXAMPLE.com".to_string(), "zz@x".to_string()];
    let refused = modify(&dir, b, ModifyOperation::Add, "mail", &values)
        .await
        .unwrap_err();
    assert_eq!(refused.code, ResultCode::ConstraintViolation);
    assert_eq!(
        refused.message,
        "non-unique attributes found with (&(objectClass=inetOrgPerson)(|(mail=a@EXAMPLE.com)(mail=zz@x)))"
    );
    // A value the entry already holds is not checked again; a new one that is free passes.
    let values = ["b@example.com".to_string(), "zz@x".to_string()];
    modify(&dir, b, ModifyOperation::Replace, "mail", &values)
        .await
        .unwrap();
    // Options aside: a mail with a language tag is a mail.
    let refused = person(
        &dir,
        "uid=d,ou=people,dc=example,dc=com",
        &[("mail;lang-en", "ZZ@x")],
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused.message,
        "non-unique attributes found with (&(objectClass=inetOrgPerson)(|(uid=d)(mail=ZZ@x)))"
    );
}

#[tokio::test]
async fn filters_and_scopes_decide_which_entries_meet() {
    let one = "ldap:///ou=people,dc=example,dc=com?cn?one";
    let sub = "ldap:///?uid?sub?(objectClass=inetOrgPerson)";
    for indexed in [&["uid", "cn", "objectClass"][..], &[]] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), indexed, pipeline(&[one, sub]));
        tree(&dir).await;
        // An entry the filter leaves out neither is checked nor blocks anyone.
        let account = "host=h,ou=staff,dc=example,dc=com";
        let attrs = [("objectClass", "account"), ("host", "h"), ("uid", "a")];
        add(&dir, account, &attrs).await.unwrap();
        // Sub scope reaches any depth below the base (here the suffix).
        let err = person(&dir, "uid=a,ou=team,ou=people,dc=example,dc=com", &[])
            .await
            .unwrap_err();
        assert_eq!(err.code, ResultCode::ConstraintViolation, "{indexed:?}");
        // One-level scope: cn=a below ou=team is not among ou=people's children, so it may repeat.
        let attrs = [
            ("objectClass", "inetOrgPerson"),
            ("uid", "t"),
            ("cn", "a"),
            ("sn", "t"),
        ];
        add(&dir, "uid=t,ou=team,ou=people,dc=example,dc=com", &attrs)
            .await
            .unwrap();
        let attrs = [
            ("objectClass", "inetOrgPerson"),
            ("uid", "d"),
            ("cn", "a"),
            ("sn", "d"),
        ];
        let err = add(&dir, "uid=d,ou=people,dc=example,dc=com", &attrs)
            .await
            .unwrap_err();
        assert_eq!(
            err.message, "non-unique attributes found with (|(cn=a))",
            "{indexed:?}"
        );
        // An account may take a uid an inetOrgPerson holds: it is outside the filter.
        modify(
            &dir,
            account,
            ModifyOperation::Replace,
            "uid",
            &["b".into()],
        )
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn values_held_before_the_overlay_do_not_block_other_changes() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let plain = open(tmp.path(), &[], Pipeline::standard());
        tree(&plain).await;
        person(
            &plain,
            "uid=c,ou=people,dc=example,dc=com",
            &[("mail", "a@example.com")],
        )
        .await
        .unwrap();
    }
    // No index: one added now would hold nothing of what is there until `canopy reindex`.
    let dir = open(tmp.path(), &[], pipeline(&["ldap:///?mail"]));
    let c = "uid=c,ou=people,dc=example,dc=com";
    modify(&dir, c, ModifyOperation::Replace, "sn", &["changed".into()])
        .await
        .unwrap();
    let err = modify(
        &dir,
        c,
        ModifyOperation::Add,
        "mail",
        &["b@example.com".into()],
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, ResultCode::ConstraintViolation);
}

#[tokio::test]
async fn renames_into_a_domain_bring_every_value_along() {
    let uri = "ldap:///ou=people,dc=example,dc=com?mail?sub";
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &[], pipeline(&[uri]));
    tree(&dir).await;
    let x = "uid=x,ou=staff,dc=example,dc=com";
    person(&dir, x, &[("mail", "a@example.com")]).await.unwrap();
    // A leaf moving in: slapd checks only the new RDN's values, Canopy every value it brings.
    let err = rename(&dir, x, "uid=x", Some("ou=people,dc=example,dc=com"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ResultCode::ConstraintViolation);
    assert!(entry(&dir, x).is_some());
    // A whole subtree moving in, with a conflict two levels down; refused, it stays where it was.
    delete(&dir, x).await.unwrap();
    let unit = "ou=sub,ou=staff,dc=example,dc=com";
    add(
        &dir,
        unit,
        &[("objectClass", "organizationalUnit"), ("ou", "sub")],
    )
    .await
    .unwrap();
    let deep = "uid=y,ou=sub,ou=staff,dc=example,dc=com";
    person(&dir, deep, &[("mail", "B@example.com")])
        .await
        .unwrap();
    let err = rename(&dir, unit, "ou=sub", Some("ou=people,dc=example,dc=com"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ResultCode::ConstraintViolation);
    assert_eq!(
        err.message,
        "non-unique attributes found with (|(mail=B@example.com))"
    );
    assert!(entry(&dir, deep).is_some());
    modify(
        &dir,
        deep,
        ModifyOperation::Replace,
        "mail",
        &["y@example.com".into()],
    )
    .await
    .unwrap();
    rename(&dir, unit, "ou=sub", Some("ou=people,dc=example,dc=com"))
        .await
        .unwrap();
    // Within the domain, a rename checks the values its new RDN adds.
    let moved = "uid=y,ou=sub,ou=people,dc=example,dc=com";
    let err = rename(&dir, moved, "mail=a@example.com", None)
        .await
        .unwrap_err();
    assert_eq!(err.code, ResultCode::ConstraintViolation);
}

#[tokio::test]
async fn strict_and_ignore_as_slapd_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let strict = "strict ldap:///ou=people,dc=example,dc=com?mail?sub";
    let dir = open(tmp.path(), &[], pipeline(&[strict]));
    tree(&dir).await;
    let a = "uid=a,ou=people,dc=example,dc=com";
    // Emptying mail is refused while another entry of the domain has a mail: "null is unique too".
    let err = modify(&dir, a, ModifyOperation::Replace, "mail", &[])
        .await
        .unwrap_err();
    assert_eq!(err.message, "non-unique attributes found with (|(mail=*))");

    let tmp = tempfile::tempdir().unwrap();
    let ignore = "ignore ldap:///ou=people,dc=example,dc=com?objectClass,cn,sn?sub";
    let dir = open(tmp.path(), &[], pipeline(&[ignore]));
    tree(&dir).await;
    modify(&dir, a, ModifyOperation::Replace, "mail", &[])
        .await
        .unwrap();
    // cn and sn are ignored; uid and description are checked.
    let c = "uid=c,ou=people,dc=example,dc=com";
    let attrs = [
        ("objectClass", "inetOrgPerson"),
        ("uid", "c"),
        ("cn", "a"),
        ("sn", "a"),
    ];
    add(&dir, c, &attrs).await.unwrap();
    let err = modify(&dir, c, ModifyOperation::Add, "description", &["x".into()]).await;
    assert!(err.is_ok());
    let b = "uid=b,ou=people,dc=example,dc=com";
    let err = modify(&dir, b, ModifyOperation::Add, "description", &["X".into()])
        .await
        .unwrap_err();
    assert_eq!(err.code, ResultCode::ConstraintViolation);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_of_one_value_cannot_both_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["mail"], pipeline(&["ldap:///?mail"]));
    tree(&dir).await;
    for round in 0..20 {
        let mail = format!("same{round}@example.com");
        let writes = (0..8).map(|i| {
            let dir = dir.clone();
            let mail = mail.clone();
            tokio::spawn(async move {
                let dn = format!("uid=r{round}n{i},ou=people,dc=example,dc=com");
                person(&dir, &dn, &[("mail", &mail)]).await
            })
        });
        let results = join_all(writes.collect()).await;
        let passed = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(passed, 1, "round {round}: {results:?}");
        for refused in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(refused.code, ResultCode::ConstraintViolation);
        }
    }
}

async fn join_all(
    handles: Vec<tokio::task::JoinHandle<Result<(), LdapError>>>,
) -> Vec<Result<(), LdapError>> {
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}
