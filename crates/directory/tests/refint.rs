//! The refint overlay against a model: after every write of a random sequence (people and groups
//! added, deleted, renamed and moved, whole subtrees renamed, references added and removed), every
//! member, seeAlso, manager and owner value names the entry the model says it names (by a tag that
//! renames do not change), so none names a missing entry; a database with equality indexes on those
//! attributes and one without run the same sequence and agree at every step.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::overlay::refint::{self, Refint, MODIFIERS_NAME};
use canopy_directory::{Directory, Event, Pipeline, WriteHook};
use canopy_mdb::WriteTxn;
use canopy_proto::{ModifyOperation, ResultCode};
use support::*;

const ATTRS: [&str; 4] = ["member", "seeAlso", "manager", "owner"];
const NOTHING: &str = "cn=nobody,dc=example,dc=com";
/// Every group lists it when no `nothing` is configured, so no group loses its last member.
const KEEPER: &str = "cn=keeper,dc=example,dc=com";

fn pipeline(nothing: bool) -> Pipeline {
    let mut config = refint::Config::new(ATTRS.map(String::from).to_vec());
    if nothing {
        config.nothing = Some(NOTHING.into());
    }
    Pipeline::standard().then(Arc::new(Refint::new(config)))
}

/// By the referring entry's tag: each configured attribute's values, as the tags of the entries they
/// name ("NOTHING" for the `nothing` DN).
type Refs = BTreeMap<String, BTreeMap<&'static str, BTreeSet<String>>>;

fn tag(entry: &canopy_core::Entry) -> Option<String> {
    entry
        .get("description")
        .and_then(|a| a.values.first())
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The references as stored; panics on a value that names no entry.
fn actual(dir: &Directory, step: &str) -> Refs {
    let all = entries(dir);
    let nothing = norm(dir, NOTHING.as_bytes());
    let tags: BTreeMap<String, String> = all
        .iter()
        .filter_map(|e| Some((e.ndn.as_str().to_string(), tag(e)?)))
        .collect();
    let mut refs = Refs::new();
    for entry in &all {
        for attr in ATTRS {
            let Some(values) = entry.get(attr) else {
                continue;
            };
            let mut named = BTreeSet::new();
            for value in &values.values {
                let ndn = norm(dir, value);
                let target = match tags.get(&ndn) {
                    Some(tag) => tag.clone(),
                    None if ndn == nothing => "NOTHING".to_string(),
                    None => panic!("{step}: {} {attr} names missing {ndn}", entry.dn),
                };
                named.insert(target);
            }
            let owner = tag(entry).unwrap_or_else(|| entry.dn.to_string());
            refs.entry(owner).or_default().insert(attr, named);
        }
    }
    refs
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Person,
    Group,
    Unit,
}

/// The tagged entries of `dir`: DN, tag, kind.
fn tagged(dir: &Directory) -> Vec<(String, String, Kind)> {
    let has = |e: &canopy_core::Entry, class: &str| {
        e.get("objectClass").is_some_and(|a| {
            a.values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(class.as_bytes()))
        })
    };
    entries(dir)
        .into_iter()
        .filter_map(|e| {
            let kind = if has(&e, "groupOfNames") {
                Kind::Group
            } else if has(&e, "organizationalUnit") {
                Kind::Unit
            } else {
                Kind::Person
            };
            Some((e.dn.to_string(), tag(&e)?, kind))
        })
        .collect()
}

async fn base(dir: &Directory) {
    let suffix = [
        ("objectClass", "dcObject"),
        ("objectClass", "organization"),
        ("dc", "example"),
        ("o", "Example"),
    ];
    add(dir, SUFFIX, &suffix).await.unwrap();
    for (dn, ou) in [
        ("ou=people,dc=example,dc=com", "people"),
        ("ou=team,ou=people,dc=example,dc=com", "team"),
        ("ou=groups,dc=example,dc=com", "groups"),
        ("ou=staff,dc=example,dc=com", "staff"),
    ] {
        let attrs = [
            ("objectClass", "organizationalUnit"),
            ("ou", ou),
            ("description", ou),
        ];
        add(dir, dn, &attrs).await.unwrap();
    }
    let keeper = [
        ("objectClass", "inetOrgPerson"),
        ("cn", "keeper"),
        ("sn", "k"),
        ("description", "keeper"),
    ];
    add(dir, KEEPER, &keeper).await.unwrap();
}

/// The model after `tag` is deleted: its references go, and so do the values naming it; an attribute
/// losing its last value gets NOTHING when configured, else disappears.
fn model_delete(model: &mut Refs, tag: &str, nothing: bool) {
    model.remove(tag);
    for attrs in model.values_mut() {
        for values in attrs.values_mut() {
            if values.remove(tag) && values.is_empty() && nothing {
                values.insert("NOTHING".into());
            }
        }
        attrs.retain(|_, v| !v.is_empty());
    }
    model.retain(|_, attrs| !attrs.is_empty());
}

fn model_set(model: &mut Refs, tag: &str, attr: &'static str, values: BTreeSet<String>) {
    let attrs = model.entry(tag.to_string()).or_default();
    if values.is_empty() {
        attrs.remove(attr);
    } else {
        attrs.insert(attr, values);
    }
    model.retain(|_, attrs| !attrs.is_empty());
}

/// Runs one write on both databases: they must answer alike.
macro_rules! both {
    ($dirs:expr, |$dir:ident| $write:expr) => {{
        let $dir = &$dirs[0];
        let first: Result<(), LdapError> = $write.await;
        let $dir = &$dirs[1];
        let second: Result<(), LdapError> = $write.await;
        assert_eq!(
            first.as_ref().map_err(|e| e.code),
            second.as_ref().map_err(|e| e.code),
            "indexed and unindexed disagree"
        );
        first
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_follow_every_delete_and_rename() {
    for (seed, nothing) in [(5u64, false), (23, true), (71, false), (113, true)] {
        let (tmp_a, tmp_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dirs = [
            open(tmp_a.path(), &ATTRS, pipeline(nothing)),
            open(tmp_b.path(), &[], pipeline(nothing)),
        ];
        for dir in &dirs {
            base(dir).await;
        }
        let mut model = Refs::new();
        let mut rng = Rng::seeded(seed);
        let (mut repaired, mut subtree_moves) = (0, 0);
        for step in 0..250 {
            let now = tagged(&dirs[0]);
            let dn_of = |t: &str| {
                now.iter()
                    .find(|(_, tag, _)| tag == t)
                    .map(|(dn, ..)| dn.clone())
            };
            let of_kind = |k: Kind| -> Vec<(String, String)> {
                now.iter()
                    .filter(|(_, tag, kind)| *kind == k && tag != "keeper")
                    .map(|(dn, tag, _)| (dn.clone(), tag.clone()))
                    .collect()
            };
            let people = of_kind(Kind::Person);
            let groups = of_kind(Kind::Group);
            let units: Vec<String> = of_kind(Kind::Unit).into_iter().map(|(dn, _)| dn).collect();
            let anyone: Vec<(String, String)> = now
                .iter()
                .map(|(dn, tag, _)| (dn.clone(), tag.clone()))
                .collect();
            let tags = |refs: &[(String, String)]| -> BTreeSet<String> {
                refs.iter().map(|(_, t)| t.clone()).collect()
            };
            let before = model.clone();
            let what = rng.below(13);
            let label = format!("seed {seed} step {step} ({what})");
            let result = match what {
                0 | 1 => {
                    let tag = format!("p{step}");
                    let parent = rng.pick(&units).unwrap_or_else(|| SUFFIX.to_string());
                    let dn = format!("uid={tag},{parent}");
                    let mut attrs = vec![
                        ("objectClass", "inetOrgPerson".to_string()),
                        ("uid", tag.clone()),
                        ("cn", tag.clone()),
                        ("sn", "x".to_string()),
                        ("description", tag.clone()),
                    ];
                    let mut refs = Vec::new();
                    if let Some(m) = rng.pick(&people).filter(|_| rng.below(2) == 0) {
                        attrs.push(("manager", m.0.clone()));
                        refs.push(("manager", m));
                    }
                    for _ in 0..rng.below(3) {
                        if let Some(s) = rng.pick(&anyone) {
                            if !refs.iter().any(|(a, r)| *a == "seeAlso" && r.1 == s.1) {
                                attrs.push(("seeAlso", s.0.clone()));
                                refs.push(("seeAlso", s));
                            }
                        }
                    }
                    let attrs: Vec<(&str, &str)> =
                        attrs.iter().map(|(a, v)| (*a, v.as_str())).collect();
                    let result = both!(dirs, |dir| add(dir, &dn, &attrs));
                    if result.is_ok() {
                        for (attr, (_, target)) in refs {
                            model
                                .entry(tag.clone())
                                .or_default()
                                .entry(attr)
                                .or_default()
                                .insert(target);
                        }
                    }
                    result
                }
                2 => {
                    let tag = format!("g{step}");
                    let dn = format!("cn={tag},ou=groups,{SUFFIX}");
                    let mut members: Vec<(String, String)> = Vec::new();
                    if !nothing {
                        members.push((KEEPER.into(), "keeper".into()));
                    }
                    let pool: Vec<_> = people.iter().chain(&groups).cloned().collect();
                    for _ in 0..1 + rng.below(3) {
                        if let Some(m) = rng.pick(&pool) {
                            if !members.iter().any(|x| x.1 == m.1) {
                                members.push(m);
                            }
                        }
                    }
                    if members.is_empty() {
                        members.push((KEEPER.into(), "keeper".into()));
                    }
                    let mut attrs = vec![
                        ("objectClass", "groupOfNames".to_string()),
                        ("cn", tag.clone()),
                        ("description", tag.clone()),
                    ];
                    attrs.extend(members.iter().map(|(dn, _)| ("member", dn.clone())));
                    let owner = rng.pick(&people).filter(|_| rng.below(2) == 0);
                    if let Some((dn, _)) = &owner {
                        attrs.push(("owner", dn.clone()));
                    }
                    let attrs: Vec<(&str, &str)> =
                        attrs.iter().map(|(a, v)| (*a, v.as_str())).collect();
                    let result = both!(dirs, |dir| add(dir, &dn, &attrs));
                    if result.is_ok() {
                        model_set(&mut model, &tag, "member", tags(&members));
                        if let Some(owner) = owner {
                            model_set(&mut model, &tag, "owner", tags(&[owner]));
                        }
                    }
                    result
                }
                3 | 4 => {
                    let Some((group, gtag)) = rng.pick(&groups) else {
                        continue;
                    };
                    let listed = model
                        .get(&gtag)
                        .and_then(|a| a.get("member"))
                        .cloned()
                        .unwrap_or_default();
                    let adding = what == 3;
                    let choices: Vec<(String, String)> = if adding {
                        people
                            .iter()
                            .chain(&groups)
                            .filter(|(_, t)| !listed.contains(t))
                            .cloned()
                            .collect()
                    } else {
                        anyone
                            .iter()
                            .filter(|(_, t)| listed.contains(t) && t != "keeper")
                            .cloned()
                            .collect()
                    };
                    let Some((member, mtag)) = rng.pick(&choices) else {
                        continue;
                    };
                    let op = if adding {
                        ModifyOperation::Add
                    } else {
                        ModifyOperation::Delete
                    };
                    let values = [member];
                    let result = both!(dirs, |dir| modify(dir, &group, op, "member", &values));
                    if result.is_ok() {
                        let mut set = listed;
                        if adding {
                            set.insert(mtag);
                        } else {
                            set.remove(&mtag);
                        }
                        model_set(&mut model, &gtag, "member", set);
                    }
                    result
                }
                5 | 6 => {
                    let (attr, from) = if what == 5 {
                        ("manager", &people)
                    } else {
                        ("seeAlso", &anyone)
                    };
                    let Some((target, ttag)) = rng.pick(&people) else {
                        continue;
                    };
                    let mut chosen: Vec<(String, String)> = Vec::new();
                    for _ in 0..rng.below(3) {
                        if let Some(c) = rng.pick(from) {
                            if !chosen.iter().any(|x| x.1 == c.1) {
                                chosen.push(c);
                            }
                        }
                    }
                    let values: Vec<String> = chosen.iter().map(|(dn, _)| dn.clone()).collect();
                    let op = ModifyOperation::Replace;
                    let result = both!(dirs, |dir| modify(dir, &target, op, attr, &values));
                    if result.is_ok() {
                        model_set(&mut model, &ttag, attr, tags(&chosen));
                    }
                    result
                }
                7 | 8 => {
                    let victims = if what == 7 { &people } else { &groups };
                    let Some((dn, vtag)) = rng.pick(victims) else {
                        continue;
                    };
                    let result = both!(dirs, |dir| delete(dir, &dn));
                    if result.is_ok() {
                        model_delete(&mut model, &vtag, nothing);
                        let mut others = before.clone();
                        others.remove(&vtag);
                        repaired += usize::from(model != others);
                    }
                    result
                }
                9 => {
                    let Some((dn, _)) = rng.pick(&people) else {
                        continue;
                    };
                    let parent = rng.pick(&units);
                    let rdn = format!("uid=r{step}");
                    both!(dirs, |dir| rename(dir, &dn, &rdn, parent.as_deref()))
                }
                10 => {
                    let Some((dn, _)) = rng.pick(&groups) else {
                        continue;
                    };
                    let rdn = format!("cn=h{step}");
                    both!(dirs, |dir| rename(dir, &dn, &rdn, None))
                }
                11 => {
                    // The people subtree (with the team below it) changes its name.
                    let people_dn = dn_of("people").unwrap();
                    let rdn = if people_dn.starts_with("ou=people") {
                        "ou=moved"
                    } else {
                        "ou=people"
                    };
                    let result = both!(dirs, |dir| rename(dir, &people_dn, rdn, None));
                    subtree_moves += usize::from(result.is_ok());
                    result
                }
                _ => {
                    // The team subtree moves between the people subtree and ou=staff.
                    let team = dn_of("team").unwrap();
                    let to = if team.contains("ou=staff") {
                        dn_of("people").unwrap()
                    } else {
                        dn_of("staff").unwrap()
                    };
                    let result = both!(dirs, |dir| rename(dir, &team, "ou=team", Some(&to)));
                    subtree_moves += usize::from(result.is_ok());
                    result
                }
            };
            if let Err(e) = &result {
                assert!(
                    matches!(
                        e.code,
                        ResultCode::EntryAlreadyExists | ResultCode::ObjectClassViolation
                    ),
                    "{label}: {e:?}"
                );
                assert_eq!(model, before, "{label}: a refused write changed the model");
            }
            for dir in &dirs {
                assert_eq!(actual(dir, &label), model, "{label}");
            }
        }
        assert!(
            repaired > 5,
            "seed {seed}: only {repaired} deletes repaired references"
        );
        assert!(
            subtree_moves > 10,
            "seed {seed}: only {subtree_moves} subtree moves"
        );
        let references: usize = model
            .values()
            .flat_map(|a| a.values())
            .map(BTreeSet::len)
            .sum();
        assert!(
            references > 20,
            "seed {seed}: only {references} references at the end"
        );
    }
}

async fn person(dir: &Directory, dn: &str, extra: &[(&str, &str)]) {
    let uid = dn.split(',').next().unwrap().split('=').nth(1).unwrap();
    let mut attrs = vec![
        ("objectClass", "inetOrgPerson"),
        ("uid", uid),
        ("cn", uid),
        ("sn", uid),
    ];
    attrs.extend_from_slice(extra);
    add(dir, dn, &attrs).await.unwrap();
}

#[tokio::test]
async fn nothing_takes_the_place_of_a_last_value() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = refint::Config::new(ATTRS.map(String::from).to_vec());
    config.nothing = Some(NOTHING.into());
    config.modifier = "cn=refint,dc=example,dc=com".into();
    let dir = open(
        tmp.path(),
        &["member"],
        Pipeline::standard().then(Arc::new(Refint::new(config))),
    );
    base(&dir).await;
    let a = "uid=a,ou=people,dc=example,dc=com";
    let b = "uid=b,ou=people,dc=example,dc=com";
    let group = "cn=g,ou=groups,dc=example,dc=com";
    person(&dir, a, &[]).await;
    person(
        &dir,
        b,
        &[("manager", a), ("seeAlso", a), ("seeAlso", KEEPER)],
    )
    .await;
    let attrs = [("objectClass", "groupOfNames"), ("cn", "g"), ("member", a)];
    add(&dir, group, &attrs).await.unwrap();
    delete(&dir, a).await.unwrap();
    assert_eq!(values(&dir, group, "member"), [NOTHING]);
    assert_eq!(values(&dir, b, "manager"), [NOTHING]);
    // Not the last value: removed, and nothing takes no place.
    assert_eq!(values(&dir, b, "seeAlso"), [KEEPER]);
    for dn in [group, b] {
        assert_eq!(
            values(&dir, dn, "modifiersName"),
            ["cn=refint,dc=example,dc=com"]
        );
    }
    // The placeholder stays when a real member joins and leaves again.
    modify(&dir, group, ModifyOperation::Add, "member", &[b.into()])
        .await
        .unwrap();
    delete(&dir, b).await.unwrap();
    assert_eq!(values(&dir, group, "member"), [NOTHING]);
}

#[tokio::test]
async fn without_nothing_a_required_value_stays_and_optional_ones_go() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &[], pipeline(false));
    base(&dir).await;
    let a = "uid=a,ou=people,dc=example,dc=com";
    let b = "uid=b,ou=people,dc=example,dc=com";
    let group = "cn=g,ou=groups,dc=example,dc=com";
    person(&dir, a, &[]).await;
    person(&dir, b, &[]).await;
    let attrs = [
        ("objectClass", "groupOfNames"),
        ("cn", "g"),
        ("member", a),
        ("owner", a),
        ("seeAlso", a),
        ("seeAlso", b),
    ];
    add(&dir, group, &attrs).await.unwrap();
    delete(&dir, a).await.unwrap();
    // groupOfNames requires member: the dangling value stays; the rest is repaired all the same.
    assert_eq!(values(&dir, group, "member"), [a]);
    assert!(values(&dir, group, "owner").is_empty());
    assert_eq!(values(&dir, group, "seeAlso"), [b]);
    assert_eq!(values(&dir, group, "modifiersName"), [MODIFIERS_NAME]);
}

#[tokio::test]
async fn a_moved_subtree_takes_the_references_below_it_along() {
    for indexed in [&ATTRS[..], &[]] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), indexed, pipeline(false));
        base(&dir).await;
        let unit = "ou=sub,ou=people,dc=example,dc=com";
        let attrs = [("objectClass", "organizationalUnit"), ("ou", "sub")];
        add(&dir, unit, &attrs).await.unwrap();
        let smith = "cn=Smith\\, John,ou=sub,ou=people,dc=example,dc=com";
        let attrs = [
            ("objectClass", "inetOrgPerson"),
            ("cn", "Smith, John"),
            ("sn", "Smith"),
        ];
        add(&dir, smith, &attrs).await.unwrap();
        let e = "uid=e,ou=sub,ou=people,dc=example,dc=com";
        person(
            &dir,
            e,
            &[("seeAlso", "UID=E, OU=Sub,ou=People,DC=example,dc=COM")],
        )
        .await;
        let ghost = "uid=ghost,ou=sub,ou=people,dc=example,dc=com";
        let group = "cn=g,ou=groups,dc=example,dc=com";
        let attrs = [
            ("objectClass", "groupOfNames"),
            ("cn", "g"),
            (
                "member",
                "cn=smith\\2C john,ou=SUB,ou=people,dc=example,dc=com",
            ),
            ("member", e),
            ("member", unit),
            ("member", ghost),
            ("member", KEEPER),
        ];
        add(&dir, group, &attrs).await.unwrap();
        rename(&dir, unit, "ou=moved", Some("ou=staff,dc=example,dc=com"))
            .await
            .unwrap();
        let moved = |dn: &str| norm(&dir, dn.as_bytes());
        let members: BTreeSet<String> = values(&dir, group, "member")
            .iter()
            .map(|v| moved(v))
            .collect();
        let want: BTreeSet<String> = [
            "cn=Smith\\, John,ou=moved,ou=staff,dc=example,dc=com",
            "uid=e,ou=moved,ou=staff,dc=example,dc=com",
            "ou=moved,ou=staff,dc=example,dc=com",
            // A value naming no entry names none after the move either: it is left alone.
            ghost,
            KEEPER,
        ]
        .iter()
        .map(|dn| moved(dn))
        .collect();
        assert_eq!(members, want, "indexed: {indexed:?}");
        // An entry naming itself follows its own rename.
        let e_now = "uid=e,ou=moved,ou=staff,dc=example,dc=com";
        assert_eq!(values(&dir, e_now, "seeAlso"), [e_now]);
        assert_eq!(values(&dir, e_now, "modifiersName"), [MODIFIERS_NAME]);
    }
}

#[tokio::test]
async fn unique_member_values_without_a_uid_are_kept_too() {
    let tmp = tempfile::tempdir().unwrap();
    let config = refint::Config::new(vec!["uniqueMember".into()]);
    let pipeline = Pipeline::standard().then(Arc::new(Refint::new(config)));
    let dir = open(tmp.path(), &["uniqueMember"], pipeline);
    base(&dir).await;
    let a = "uid=a,ou=people,dc=example,dc=com";
    let b = "uid=b,ou=people,dc=example,dc=com";
    person(&dir, a, &[]).await;
    person(&dir, b, &[]).await;
    let group = "cn=u,ou=groups,dc=example,dc=com";
    let with_uid = "uid=b,ou=people,dc=example,dc=com#'0101'B";
    let attrs = [
        ("objectClass", "groupOfUniqueNames"),
        ("cn", "u"),
        ("uniqueMember", a),
        ("uniqueMember", with_uid),
        ("uniqueMember", KEEPER),
    ];
    add(&dir, group, &attrs).await.unwrap();
    rename(&dir, a, "uid=a2", None).await.unwrap();
    delete(&dir, b).await.unwrap();
    // A value with a UID names no entry by itself (slapd's refint leaves it too).
    let want = ["uid=a2,ou=people,dc=example,dc=com", with_uid, KEEPER];
    let mut have = values(&dir, group, "uniqueMember");
    have.sort();
    let mut want = want.map(String::from).to_vec();
    want.sort();
    assert_eq!(have, want);
}

/// A hook after refint that refuses every delete once refint has done its work.
struct RefuseDeletes;

impl WriteHook for RefuseDeletes {
    fn name(&self) -> &'static str {
        "refuse-deletes"
    }

    fn commit(
        &self,
        _: &Directory,
        _: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        match event.kind {
            canopy_directory::Kind::Delete => {
                Err(LdapError::new(ResultCode::UnwillingToPerform, "no"))
            }
            _ => Ok(()),
        }
    }
}

#[tokio::test]
async fn a_refused_delete_leaves_the_references_as_they_were() {
    let tmp = tempfile::tempdir().unwrap();
    let config = refint::Config::new(ATTRS.map(String::from).to_vec());
    let pipeline = Pipeline::standard()
        .then(Arc::new(Refint::new(config)))
        .then(Arc::new(RefuseDeletes));
    let dir = open(tmp.path(), &["member"], pipeline);
    base(&dir).await;
    let a = "uid=a,ou=people,dc=example,dc=com";
    let group = "cn=g,ou=groups,dc=example,dc=com";
    person(&dir, a, &[]).await;
    let attrs = [
        ("objectClass", "groupOfNames"),
        ("cn", "g"),
        ("member", a),
        ("member", KEEPER),
    ];
    add(&dir, group, &attrs).await.unwrap();
    let refused = delete(&dir, a).await.unwrap_err();
    assert_eq!(refused.code, ResultCode::UnwillingToPerform);
    assert!(entry(&dir, a).is_some());
    assert_eq!(values(&dir, group, "member"), [a, KEEPER]);
    assert_eq!(values(&dir, group, "modifiersName"), [ADMIN]);
}
