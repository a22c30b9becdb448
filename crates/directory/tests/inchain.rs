//! The in-chain matching rule against a model: random nested groups (cycles included), then for every
//! group and every user the rewritten `(memberOf:1.2.840.113556.1.4.1941:=G)` and
//! `(member:1.2.840.113556.1.4.1941:=U)` match exactly the entries that reach G, or the groups that reach
//! U, in one step or more — with the member attribute indexed and without.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use canopy_core::filter::PreparedFilter;
use canopy_core::index::{plan, IndexSpec};
use canopy_core::wire::StoredView;
use canopy_core::LdapError;
use canopy_directory::candidates::resolve;
use canopy_directory::inchain::IN_CHAIN;
use canopy_directory::overlay::memberof::{self, MemberOf, MEMBEROF_SCHEMA};
use canopy_directory::OpenOptions;
use canopy_directory::{Directory, Pipeline, Unrestricted, WriteOp, WriteRequest};
use canopy_proto::{Filter, MatchingRuleAssertion, PartialAttribute};
use canopy_schema::Schema;

use support::{ADMIN, SUFFIX};

fn open(path: &std::path::Path, indexed: bool) -> Directory {
    let mut schema = Schema::builtin();
    schema.load_text(MEMBEROF_SCHEMA, "memberof").unwrap();
    let eq = |attr: &str| IndexSpec {
        attr: attr.into(),
        eq: true,
        pres: false,
        sub: false,
        ord: false,
        approx: false,
    };
    let indexes = if indexed {
        vec![eq("objectClass"), eq("member"), eq("memberOf")]
    } else {
        Vec::new()
    };
    let pipeline = Pipeline::standard().then(Arc::new(MemberOf::new(memberof::Config::new(ADMIN))));
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    Directory::open(Arc::new(schema), SUFFIX, indexes, store, pipeline).unwrap()
}

async fn add(dir: &Directory, dn: &str, attrs: &[(&str, String)]) -> Result<(), LdapError> {
    let attrs: Vec<(&str, &str)> = attrs.iter().map(|(a, v)| (*a, v.as_str())).collect();
    support::add(dir, dn, &attrs).await
}

fn in_chain(attr: &str, value: &str) -> Filter {
    Filter::Extensible(MatchingRuleAssertion {
        rule: Some(IN_CHAIN.into()),
        attr: Some(attr.into()),
        value: value.as_bytes().to_vec(),
        dn_attributes: false,
    })
}

/// The lower-cased DNs the filter matches after the rewrite, and whether the rewritten filter is
/// answered by the indexes.
fn matches(dir: &Directory, filter: &Filter, allow_all: bool) -> (BTreeSet<String>, bool) {
    let txn = dir.read().unwrap();
    let mut allow =
        |_: &canopy_schema::NormDn, stored: &canopy_core::wire::StoredEntry<'_>, _: &str| {
            allow_all || !String::from_utf8_lossy(stored.dn).starts_with("cn=g1,")
        };
    let expanded = dir.expand_in_chain(&txn, filter, &mut allow).unwrap();
    let indexed = resolve(&txn, &plan(dir.schema(), &dir.indexes(&txn), &expanded))
        .unwrap()
        .is_some();
    let test = PreparedFilter::new(dir.schema(), &expanded);
    let mut out = BTreeSet::new();
    for item in dir.stored_entries(&txn).unwrap() {
        let (_, bytes) = item.unwrap();
        let stored = Directory::parse_stored(bytes).unwrap();
        if test.evaluate(&StoredView::new(&stored), &[]).is_true() {
            out.insert(String::from_utf8_lossy(stored.dn).to_lowercase());
        }
    }
    (out, indexed)
}

/// Entries reaching `to` in one step or more along `edges` (holder → held).
fn reaching(edges: &BTreeMap<String, BTreeSet<String>>, to: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut frontier = vec![to.to_string()];
    while let Some(x) = frontier.pop() {
        for (holder, held) in edges {
            if held.contains(&x) && found.insert(holder.clone()) {
                frontier.push(holder.clone());
            }
        }
    }
    found
}

#[tokio::test]
async fn nested_groups_match_the_model_indexed_or_not() {
    for indexed in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), indexed);
        let org = [
            ("objectClass", "dcObject".to_string()),
            ("objectClass", "organization".to_string()),
            ("dc", "example".to_string()),
            ("o", "x".to_string()),
        ];
        add(&dir, SUFFIX, &org).await.unwrap();
        let users: Vec<String> = (0..12).map(|i| format!("uid=u{i},{SUFFIX}")).collect();
        for (i, user) in users.iter().enumerate() {
            let attrs = [
                ("objectClass", "account".to_string()),
                ("uid", format!("u{i}")),
            ];
            add(&dir, user, &attrs).await.unwrap();
        }
        let groups: Vec<String> = (0..8).map(|i| format!("cn=g{i},{SUFFIX}")).collect();
        // member lists: each group holds two users and, through a fixed pattern, other groups,
        // with cycles g1 -> g2 -> g3 -> g1 and g5 -> g5.
        let nested: [&[usize]; 8] = [&[1, 4], &[2], &[3], &[1], &[], &[5, 6], &[7], &[]];
        let mut member_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut holds: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        // Groups are added leaves first so every member exists; cycles are closed by modifies below.
        for (i, group) in groups.iter().enumerate().rev() {
            let mut members = vec![users[i].clone(), users[(i + 5) % users.len()].clone()];
            members.extend(
                nested[i]
                    .iter()
                    .filter(|&&g| g > i)
                    .map(|&g| groups[g].clone()),
            );
            let mut attrs = vec![
                ("objectClass", "groupOfNames".to_string()),
                ("cn", format!("g{i}")),
            ];
            attrs.extend(members.iter().map(|m| ("member", m.clone())));
            add(&dir, group, &attrs).await.unwrap();
        }
        for (i, group) in groups.iter().enumerate() {
            for &g in nested[i].iter().filter(|&&g| g <= i) {
                let (dn, ndn) = dir.normalize(group.as_bytes()).unwrap();
                let changes = vec![canopy_proto::Change {
                    operation: canopy_proto::ModifyOperation::Add,
                    modification: PartialAttribute {
                        name: "member".into(),
                        values: vec![groups[g].clone().into_bytes()],
                    },
                }];
                let guard = Arc::new(Unrestricted { dn: ADMIN.into() });
                let op = WriteOp::Modify { dn, ndn, changes };
                dir.write(WriteRequest { op, guard }).await.unwrap();
            }
        }
        for (i, group) in groups.iter().enumerate() {
            let mut members = vec![users[i].clone(), users[(i + 5) % users.len()].clone()];
            members.extend(nested[i].iter().map(|&g| groups[g].clone()));
            for m in members {
                let m = m.to_lowercase();
                member_of
                    .entry(m.clone())
                    .or_default()
                    .insert(group.to_lowercase());
                holds.entry(group.to_lowercase()).or_default().insert(m);
            }
        }
        for group in &groups {
            let want = reaching(&member_of, &group.to_lowercase());
            let (got, planned) = matches(&dir, &in_chain("memberOf", group), true);
            assert_eq!(got, want, "indexed={indexed}: memberOf in chain of {group}");
            assert_eq!(
                planned, indexed,
                "memberOf in chain of {group} answered by the index"
            );
        }
        for user in users.iter().chain(&groups) {
            let want = reaching(&holds, &user.to_lowercase());
            let (got, planned) = matches(&dir, &in_chain("member", user), true);
            assert_eq!(got, want, "indexed={indexed}: member in chain of {user}");
            assert_eq!(planned, indexed);
        }
        // A link the requester may not search does not count: with g1's memberOf hidden, the chain
        // does not go on through g1, so g3 is reached by its direct members alone (g1 among them:
        // the search's own access check on each candidate decides whether g1 itself is seen).
        let (got, _) = matches(&dir, &in_chain("memberOf", &groups[3]), false);
        let direct: BTreeSet<String> = [&users[3], &users[8], &groups[1]]
            .iter()
            .map(|d| d.to_lowercase())
            .collect();
        assert_eq!(got, direct);
        // Not a DN, or not a DN-valued attribute: matches nothing.
        assert!(matches(&dir, &in_chain("memberOf", "not a dn ="), true)
            .0
            .is_empty());
        assert!(matches(&dir, &in_chain("cn", "g1"), true).0.is_empty());
        // Inside other filters.
        let and = Filter::And(vec![
            Filter::Equality("objectClass".into(), b"account".to_vec()),
            in_chain("memberOf", &groups[1]),
        ]);
        let want: BTreeSet<String> = reaching(&member_of, &groups[1].to_lowercase())
            .into_iter()
            .filter(|dn| dn.starts_with("uid="))
            .collect();
        assert_eq!(matches(&dir, &and, true).0, want);
    }
}
