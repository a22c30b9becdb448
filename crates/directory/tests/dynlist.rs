//! The dynlist expansion in the backend, with requesters that see everything or not everything:
//! dynamic groups, lists, memberOf, groups that find themselves or other dynamic groups (one level,
//! no recursion), nested groups (every level, cycles), URLs that cannot be used, URL searches that
//! meet referral objects and aliases, the planning filter, indexed and not.

mod support;

use canopy_core::filter::PreparedFilter;
use canopy_core::wire::{StoredEntry, StoredView};
use canopy_core::{Attribute, Entry};
use canopy_directory::dynlist::{Dynlist, Expander};
use canopy_directory::overlay::memberof::MEMBEROF_SCHEMA;
use canopy_directory::search_loop::Requester;
use canopy_directory::OpenOptions;
use canopy_directory::{Directory, Pipeline};
use canopy_proto::Filter;
use canopy_schema::{NormDn, Schema};
use std::sync::Arc;

use support::SUFFIX;

/// Sees every entry but those whose DN contains `hidden`; reads every attribute but `unreadable`.
struct Sees {
    hidden: Option<&'static str>,
    unreadable: Option<&'static str>,
}

impl Requester for Sees {
    fn finds(
        &mut self,
        ndn: &NormDn,
        stored: &StoredEntry<'_>,
        filter: &PreparedFilter<'_>,
        computed: &[Attribute],
    ) -> bool {
        !self.hidden.is_some_and(|h| ndn.as_str().contains(h))
            && filter
                .evaluate(&StoredView::new(stored), computed)
                .is_true()
    }

    fn reads(&mut self, _: &NormDn, _: &StoredEntry<'_>, desc: &str) -> bool {
        !self
            .unreadable
            .is_some_and(|u| u.eq_ignore_ascii_case(desc))
    }
}

fn all() -> Sees {
    Sees {
        hidden: None,
        unreadable: None,
    }
}

fn open(path: &std::path::Path, indexed: bool) -> Directory {
    let mut schema = Schema::builtin();
    schema.load_text(MEMBEROF_SCHEMA, "memberof").unwrap();
    let indexes = if indexed {
        vec![
            support::index("objectClass", false, false),
            support::index("member", false, false),
            support::index("uid", false, false),
        ]
    } else {
        Vec::new()
    };
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    Directory::open(
        Arc::new(schema),
        SUFFIX,
        indexes,
        store,
        Pipeline::standard(),
    )
    .unwrap()
}

async fn fill(dir: &Directory) {
    let people = format!("ou=people,{SUFFIX}");
    let groups = format!("ou=groups,{SUFFIX}");
    support::add(
        dir,
        SUFFIX,
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "x"),
        ],
    )
    .await
    .unwrap();
    for ou in ["people", "groups"] {
        let dn = format!("ou={ou},{SUFFIX}");
        support::add(
            dir,
            &dn,
            &[("objectClass", "organizationalUnit"), ("ou", ou)],
        )
        .await
        .unwrap();
    }
    for (uid, kind) in [
        ("ann", "dev"),
        ("ben", "dev"),
        ("cat", "ops"),
        ("dan", "dev"),
    ] {
        let dn = format!("uid={uid},{people}");
        let mail = format!("{uid}@example.com");
        support::add(
            dir,
            &dn,
            &[
                ("objectClass", "inetOrgPerson"),
                ("uid", uid),
                ("cn", uid),
                ("sn", uid),
                ("mail", &mail),
                ("employeeType", kind),
            ],
        )
        .await
        .unwrap();
    }
    let url = |u: &str| u.replace("{S}", SUFFIX);
    let dyn_group = |cn: &str, urls: &[&str]| {
        let mut attrs = vec![
            ("objectClass".to_string(), "groupOfURLs".to_string()),
            ("cn".into(), cn.to_string()),
        ];
        attrs.extend(urls.iter().map(|u| ("memberURL".to_string(), url(u))));
        attrs
    };
    let groups_to_add = [
        (
            "devs",
            dyn_group("devs", &["ldap:///ou=people,{S}??one?(employeeType=dev)"]),
        ),
        // Finds itself and the other dynamic groups: they are members, not expanded in turn.
        (
            "dynamic",
            dyn_group(
                "dynamic",
                &["ldap:///ou=groups,{S}??one?(objectClass=groupOfURLs)"],
            ),
        ),
        (
            "broken",
            dyn_group(
                "broken",
                &[
                    "ldap://elsewhere/{S}??sub?(uid=ann)",
                    "nonsense",
                    "ldap:///{S}??sub?(uid=ben",
                    "ldap:///o=other??sub?(uid=cat)",
                    "ldap:///ou=people,{S}?cn?one?(uid=dan)",
                    "ldap:///uid=cat,ou=people,{S}",
                ],
            ),
        ),
    ];
    for (cn, attrs) in groups_to_add {
        let attrs: Vec<(&str, &str)> = attrs
            .iter()
            .map(|(a, v)| (a.as_str(), v.as_str()))
            .collect();
        support::add(dir, &format!("cn={cn},{groups}"), &attrs)
            .await
            .unwrap();
    }
    support::add(
        dir,
        &format!("cn=static,{groups}"),
        &[
            ("objectClass", "groupOfNames"),
            ("cn", "static"),
            ("member", &format!("uid=cat,{people}")),
        ],
    )
    .await
    .unwrap();
    support::add(
        dir,
        &format!("cn=mails,{groups}"),
        &[
            ("objectClass", "groupOfNames"),
            ("objectClass", "labeledURIObject"),
            ("cn", "mails"),
            ("member", &format!("uid=ann,{people}")),
            (
                "labeledURI",
                &url("ldap:///ou=people,{S}?mail,employeeType?one?(employeeType=dev)"),
            ),
        ],
    )
    .await
    .unwrap();
}

fn config() -> Dynlist {
    Dynlist::parse([
        "groupOfURLs memberURL member+memberOf@groupOfNames",
        "labeledURIObject labeledURI",
    ])
    .unwrap()
}

/// The entry `dn` as `who` reads it, None when it does not change.
fn expanded(
    dir: &Directory,
    config: &Dynlist,
    dn: &str,
    who: &mut Sees,
    memberof: bool,
) -> Option<Entry> {
    let txn = dir.read().unwrap();
    let (ndn, (_, bytes)) = {
        let (_, ndn) = dir.normalize(dn.as_bytes()).unwrap();
        let found = dir.lookup(&txn, &ndn).unwrap().unwrap();
        (ndn, found)
    };
    let stored = Directory::parse_stored(bytes).unwrap();
    let mut expander = Expander::new(dir, &txn, config, memberof);
    let out = expander.expand(&ndn, &stored, who).unwrap()?;
    Some(Directory::parse_stored(&out).unwrap().to_entry().unwrap())
}

fn values(entry: &Entry, attr: &str) -> Vec<String> {
    let mut v: Vec<String> = entry
        .attrs
        .iter()
        .filter(|a| a.desc.eq_ignore_ascii_case(attr))
        .flat_map(|a| {
            a.values
                .iter()
                .map(|v| String::from_utf8_lossy(v).to_lowercase())
        })
        .collect();
    v.sort();
    v
}

fn people(uids: &[&str]) -> Vec<String> {
    uids.iter()
        .map(|u| format!("uid={u},ou=people,{SUFFIX}"))
        .collect()
}

fn group(cn: &str) -> String {
    format!("cn={cn},ou=groups,{SUFFIX}")
}

#[tokio::test]
async fn expansion_indexed_and_not() {
    for indexed in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), indexed);
        fill(&dir).await;
        let config = config();

        let devs = expanded(&dir, &config, &group("devs"), &mut all(), false).unwrap();
        assert_eq!(
            values(&devs, "member"),
            people(&["ann", "ben", "dan"]),
            "indexed {indexed}"
        );

        let mut no_ben = Sees {
            hidden: Some("uid=ben"),
            unreadable: None,
        };
        let devs = expanded(&dir, &config, &group("devs"), &mut no_ben, false).unwrap();
        assert_eq!(values(&devs, "member"), people(&["ann", "dan"]));

        let dynamic = expanded(&dir, &config, &group("dynamic"), &mut all(), false).unwrap();
        assert_eq!(
            values(&dynamic, "member"),
            vec![group("broken"), group("devs"), group("dynamic")],
            "a group finding itself and other dynamic groups lists them, one level"
        );

        let broken = expanded(&dir, &config, &group("broken"), &mut all(), false).unwrap();
        assert_eq!(
            values(&broken, "member"),
            people(&["cat"]),
            "only the usable base-scope URL"
        );

        let mails = expanded(&dir, &config, &group("mails"), &mut all(), false).unwrap();
        assert_eq!(
            values(&mails, "mail"),
            vec!["ann@example.com", "ben@example.com", "dan@example.com"]
        );
        assert_eq!(
            values(&mails, "employeeType"),
            vec!["dev"],
            "equal values once"
        );
        assert_eq!(
            values(&mails, "member"),
            people(&["ann"]),
            "a list's own values stay"
        );
        let mut no_mail = Sees {
            hidden: None,
            unreadable: Some("mail"),
        };
        let mails = expanded(&dir, &config, &group("mails"), &mut no_mail, false).unwrap();
        assert!(
            values(&mails, "mail").is_empty(),
            "unreadable attributes are not copied"
        );

        // memberOf: dynamic groups that find the entry, and the static groupOfNames that list it.
        let ben = expanded(&dir, &config, &people(&["ben"])[0], &mut all(), true).unwrap();
        assert_eq!(values(&ben, "memberOf"), vec![group("devs")]);
        let cat = expanded(&dir, &config, &people(&["cat"])[0], &mut all(), true).unwrap();
        assert_eq!(
            values(&cat, "memberOf"),
            vec![group("broken"), group("static")]
        );
        let ann = expanded(&dir, &config, &people(&["ann"])[0], &mut all(), true).unwrap();
        assert_eq!(
            values(&ann, "memberOf"),
            vec![group("devs"), group("mails")]
        );
        assert!(
            expanded(&dir, &config, &people(&["ben"])[0], &mut all(), false).is_none(),
            "memberOf only when asked for"
        );
        let mut hides_ben = Sees {
            hidden: Some("uid=ben"),
            unreadable: None,
        };
        assert!(expanded(&dir, &config, &people(&["ben"])[0], &mut hides_ben, true).is_none());
        // A dynamic group gets no memberOf, though `dynamic` finds it (as slapd).
        let devs = expanded(&dir, &config, &group("devs"), &mut all(), true).unwrap();
        assert!(values(&devs, "memberOf").is_empty());
        // A plain entry is left alone.
        assert!(expanded(
            &dir,
            &config,
            &format!("ou=people,{SUFFIX}"),
            &mut all(),
            false
        )
        .is_none());
    }
}

/// A URL's search takes the entries as stored, from its own base: referral objects in its scope are
/// never found and one above its base answers nothing instead of a referral, aliases are entries like
/// any other (not dereferenced), each scope reaches what it names, and the filter sees the computed
/// attributes.
#[tokio::test]
async fn url_searches_take_entries_as_stored() {
    for indexed in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), indexed);
        fill(&dir).await;
        let ou = format!("ou=people,{SUFFIX}");
        let away = format!("cn=away,{ou}");
        support::add(
            &dir,
            &away,
            &[
                ("objectClass", "referral"),
                ("objectClass", "extensibleObject"),
                ("cn", "away"),
                ("uid", "away"),
                ("ref", "ldap://elsewhere/cn=away"),
            ],
        )
        .await
        .unwrap();
        support::add(
            &dir,
            &format!("uid=alias,{ou}"),
            &[
                ("objectClass", "alias"),
                ("objectClass", "extensibleObject"),
                ("uid", "alias"),
                ("aliasedObjectName", &format!("uid=cat,{ou}")),
            ],
        )
        .await
        .unwrap();
        let urls = [
            format!("ldap:///{ou}??one?(uid=*)"),
            format!("ldap:///uid=nobody,{away}??sub?(objectClass=*)"),
            format!("ldap:///{SUFFIX}??children?(uid=a*)"),
            format!("ldap:///{SUFFIX}??one?(hasSubordinates=TRUE)"),
            format!("ldap:///{away}??base?(objectClass=*)"),
            format!("ldap:///{ou}??base?(objectClass=*)"),
        ];
        let mut attrs = vec![("objectClass", "groupOfURLs"), ("cn", "stored")];
        attrs.extend(urls.iter().map(|u| ("memberURL", u.as_str())));
        support::add(&dir, &group("stored"), &attrs).await.unwrap();
        let config = config();
        let stored = expanded(&dir, &config, &group("stored"), &mut all(), false).unwrap();
        let mut want = people(&["alias", "ann", "ben", "cat", "dan"]);
        want.push(ou.clone());
        want.push(format!("ou=groups,{SUFFIX}"));
        want.sort();
        want.dedup();
        assert_eq!(values(&stored, "member"), want, "indexed {indexed}");
        // memberOf: the dynamic groups whose URLs find the entry.
        let ann = expanded(&dir, &config, &people(&["ann"])[0], &mut all(), true).unwrap();
        assert_eq!(
            values(&ann, "memberOf"),
            vec![group("devs"), group("mails"), group("stored")]
        );
        let alias = format!("uid=alias,{ou}");
        let alias = expanded(&dir, &config, &alias, &mut all(), true).unwrap();
        assert_eq!(values(&alias, "memberOf"), vec![group("stored")]);
    }
}

#[tokio::test]
async fn restricted_sets_expand_only_inside_their_uri() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), true);
    fill(&dir).await;
    let config = Dynlist::parse([format!(
        "groupOfURLs ldap:///ou=groups,{SUFFIX}??one?(cn=d*) memberURL member"
    )
    .as_str()])
    .unwrap();
    assert!(expanded(&dir, &config, &group("devs"), &mut all(), false).is_some());
    assert!(expanded(&dir, &config, &group("broken"), &mut all(), false).is_none());
}

#[tokio::test]
async fn a_mapped_list_renames_what_it_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), false);
    fill(&dir).await;
    let config = Dynlist::parse(["labeledURIObject labeledURI description:employeeType"]).unwrap();
    let mails = expanded(&dir, &config, &group("mails"), &mut all(), false).unwrap();
    assert_eq!(values(&mails, "description"), vec!["dev"]);
    assert!(values(&mails, "employeeType").is_empty());
    assert_eq!(
        values(&mails, "mail").len(),
        3,
        "unmapped attributes are copied as they are"
    );
}

#[tokio::test]
async fn the_first_set_of_an_entry_applies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), false);
    fill(&dir).await;
    let config = Dynlist::parse([
        "labeledURIObject labeledURI",
        "labeledURIObject labeledURI description:employeeType",
    ])
    .unwrap();
    let mails = expanded(&dir, &config, &group("mails"), &mut all(), false).unwrap();
    assert_eq!(values(&mails, "employeeType"), vec!["dev"]);
    assert!(values(&mails, "description").is_empty());
}

#[test]
fn planning_filter_takes_the_dynamic_entries() {
    let schema = Schema::builtin();
    let mut with_memberof = schema.clone();
    with_memberof
        .load_text(MEMBEROF_SCHEMA, "memberof")
        .unwrap();
    let config = Dynlist::parse(["groupOfURLs memberURL member+memberOf"]).unwrap();
    let f = |text: &str| Filter::parse(text).unwrap();
    let check = |filter: &str, expected: Option<&str>| {
        assert_eq!(
            config.planning_filter(&with_memberof, &f(filter)),
            expected.map(f),
            "{filter}"
        );
    };
    check("(uid=a)", None);
    check(
        "(member=uid=a,dc=x)",
        Some("(|(member=uid=a,dc=x)(objectClass=groupOfURLs))"),
    );
    check(
        "(&(cn=x)(member=uid=a,dc=x))",
        Some("(&(cn=x)(|(member=uid=a,dc=x)(objectClass=groupOfURLs)))"),
    );
    check("(memberOf=cn=g,dc=x)", Some("(objectClass=*)"));
    check("(!(member=uid=a,dc=x))", None);
    let lists = Dynlist::parse(["labeledURIObject labeledURI"]).unwrap();
    assert_eq!(
        lists.planning_filter(&schema, &f("(mail=a@x)")),
        Some(f("(|(mail=a@x)(objectClass=labeledURIObject))")),
        "a list may gain any attribute"
    );
}

/// Nested groups (`@groupOfNames*`): memberOf at every level (through static members and URLs, a group
/// finding itself, a three-group cycle), members of held groups, and URLs searched as the requester.
#[tokio::test]
async fn nested_groups_every_level_and_cycles() {
    for indexed in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path(), indexed);
        fill(&dir).await;
        for (cn, members) in [
            ("ring1", vec![group("devs"), group("ring2")]),
            ("ring2", vec![group("ring3")]),
            ("ring3", vec![group("ring1"), people(&["dan"])[0].clone()]),
        ] {
            let mut attrs = vec![("objectClass", "groupOfNames"), ("cn", cn)];
            attrs.extend(members.iter().map(|m| ("member", m.as_str())));
            support::add(&dir, &group(cn), &attrs).await.unwrap();
        }
        let config =
            Dynlist::parse(["groupOfURLs memberURL member+memberOf@groupOfNames*"]).unwrap();
        let read = |dn: &str, who: &mut Sees| {
            let txn = dir.read().unwrap();
            let (_, ndn) = dir.normalize(dn.as_bytes()).unwrap();
            let (_, bytes) = dir.lookup(&txn, &ndn).unwrap().unwrap();
            let stored = Directory::parse_stored(bytes).unwrap();
            let mut expander = Expander::new(&dir, &txn, &config, true).with_nested_members(true);
            let out = expander.expand(&ndn, &stored, who).unwrap();
            out.map(|o| Directory::parse_stored(&o).unwrap().to_entry().unwrap())
        };
        let sorted = |mut v: Vec<String>| {
            v.iter_mut().for_each(|s| *s = s.to_lowercase());
            v.sort();
            v
        };
        let ann = read(&people(&["ann"])[0], &mut all()).unwrap();
        assert_eq!(
            values(&ann, "memberOf"),
            sorted(
                ["devs", "dynamic", "mails", "ring1", "ring2", "ring3"]
                    .map(group)
                    .to_vec()
            ),
            "indexed: {indexed}"
        );
        // The requester does not find ann: the URL does not hold her; the static group still does.
        let mut blind = Sees {
            hidden: Some("uid=ann"),
            unreadable: None,
        };
        let ann = read(&people(&["ann"])[0], &mut blind).unwrap();
        assert_eq!(values(&ann, "memberOf"), vec![group("mails")]);
        // A group in a cycle holds itself and is its own memberOf (as slapd answers).
        let ring1 = read(&group("ring1"), &mut all()).unwrap();
        let mut want = ["devs", "ring1", "ring2", "ring3"].map(group).to_vec();
        want.extend(people(&["ann", "ben", "dan"]));
        assert_eq!(values(&ring1, "member"), sorted(want));
        assert_eq!(
            values(&ring1, "memberOf"),
            sorted(["ring1", "ring2", "ring3"].map(group).to_vec())
        );
        // Without nested members asked for: the stored members only, memberOf still at every level.
        let txn = dir.read().unwrap();
        let (_, ndn) = dir.normalize(group("ring2").as_bytes()).unwrap();
        let (_, bytes) = dir.lookup(&txn, &ndn).unwrap().unwrap();
        let stored = Directory::parse_stored(bytes).unwrap();
        let mut expander = Expander::new(&dir, &txn, &config, true);
        let out = expander.expand(&ndn, &stored, &mut all()).unwrap().unwrap();
        let ring2 = Directory::parse_stored(&out).unwrap().to_entry().unwrap();
        assert_eq!(values(&ring2, "member"), vec![group("ring3")]);
        assert_eq!(
            values(&ring2, "memberOf"),
            sorted(["ring1", "ring2", "ring3"].map(group).to_vec())
        );
    }
}
