//! The dynlist overlay on both servers (slapd: `overlay dynlist` with `dynlist-attrset` lines and
//! dyngroup.schema; canopy: an `[[overlay]]` table): dynamic groups and lists expanded when read, as
//! the requester sees them, in filters, with memberOf, through ManageDsaIT, and in a `group=` rule.

use canopy_e2e::*;
use std::path::PathBuf;

const SLAPD: &str = "overlay dynlist\n\
    dynlist-attrset groupOfURLs memberURL member+memberOf@groupOfNames\n\
    dynlist-attrset labeledURIObject labeledURI\n";
const CANOPY: &str = "[[overlay]]\nname = \"dynlist\"\nattrset = [\n  \
    \"groupOfURLs memberURL member+memberOf@groupOfNames\",\n  \
    \"labeledURIObject labeledURI\",\n]\n";

fn group_dn(cn: &str) -> String {
    format!("cn={cn},ou=groups,{SUFFIX}")
}

fn start() -> Server {
    start_with(SLAPD, CANOPY)
}

fn start_with(slapd: &str, canopy: &str) -> Server {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none".to_string(),
        format!(
            "to dn.exact=\"{}\" by dn.exact=\"{}\" read by * none",
            user_dn("erin"),
            user_dn("alice")
        ),
        format!(
            "to dn.exact=\"{}\" by group/groupOfURLs/memberURL=\"{}\" write by * read",
            group_dn("managers"),
            group_dn("first-five")
        ),
        "to * by * read".to_string(),
    ];
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    Server::start_with_overlays_schema_access(
        slapd,
        &[PathBuf::from("/etc/ldap/schema/dyngroup.schema")],
        &rules,
        canopy,
    )
}

#[test]
fn dynamic_groups_and_lists() {
    let s = start();
    let mut t = Transcript::new("dynlist");
    let added = s.add(
        &Bind::Root,
        &format!(
            "dn: {}\nobjectClass: groupOfURLs\ncn: first-five\n\
             memberURL: ldap:///ou=people,{SUFFIX}??one?(uidNumber<=1005)\n\n\
             dn: {}\nobjectClass: groupOfURLs\ncn: all-dynamic\n\
             memberURL: ldap:///ou=groups,{SUFFIX}??one?(objectClass=groupOfURLs)\n\n\
             dn: ou=mail-list,{SUFFIX}\nobjectClass: organizationalUnit\n\
             objectClass: labeledURIObject\nou: mail-list\n\
             labeledURI: ldap:///ou=people,{SUFFIX}?mail?one?(uidNumber<=1003)\n",
            group_dn("first-five"),
            group_dn("all-dynamic")
        ),
    );
    assert_eq!(added.code, 0, "{added:?}");
    t.section(
        "a dynamic group read by the root DN: every member",
        &s.read(&Bind::Root, &group_dn("first-five"), &["*"]),
    );
    t.section(
        "read anonymously: only the members anonymous may read",
        &s.read(&Bind::Anonymous, &group_dn("first-five"), &["member"]),
    );
    t.section(
        "read by alice, who may read erin",
        &s.read(&Bind::user("alice"), &group_dn("first-five"), &["member"]),
    );
    t.section(
        "with ManageDsaIT: the entry as stored",
        &s.search(
            &Bind::Root,
            &["-M", "-b", &group_dn("first-five"), "-s", "base", "*"],
        ),
    );
    t.section(
        "a group whose URL finds dynamic groups, itself included: not expanded further",
        &s.read(&Bind::Root, &group_dn("all-dynamic"), &["member"]),
    );
    let odd = s.add(
        &Bind::Root,
        &format!(
            "dn: {}\nobjectClass: groupOfURLs\ncn: odd-urls\n\
             memberURL: ldap://otherhost/{SUFFIX}??sub?(uid=frank)\n\
             memberURL: not a URL\n\
             memberURL: ldap:///{SUFFIX}??sub?(uid=grace\n\
             memberURL: ldap:///o=elsewhere??sub?(uid=heidi)\n\
             memberURL: ldap:///ou=people,{SUFFIX}?cn?one?(uid=ivan)\n\
             memberURL: ldap:///{}\n\
             memberURL: ldap:///ou=people,{SUFFIX}??children?(uid=judy)\n",
            group_dn("odd-urls"),
            user_dn("olivia")
        ),
    );
    assert_eq!(odd.code, 0, "{odd:?}");
    t.section(
        "URLs with a host, no URL, a bad filter, a base elsewhere or attributes find nothing; \
         base scope by default, children scope",
        &s.read(&Bind::Root, &group_dn("odd-urls"), &["member"]),
    );
    t.section(
        "(member=bob) finds the static and the dynamic group",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &format!("ou=groups,{SUFFIX}"),
                &format!("(member={})", user_dn("bob")),
                "1.1",
            ],
        ),
    );
    t.section(
        "(member=erin) anonymously: erin is no member anonymous can see",
        &s.search(
            &Bind::Anonymous,
            &[
                "-b",
                &format!("ou=groups,{SUFFIX}"),
                &format!("(member={})", user_dn("erin")),
                "1.1",
            ],
        ),
    );
    t.section(
        "(&(cn=first*)(member=carol))",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                &format!("(&(cn=first*)(member={}))", user_dn("carol")),
                "cn",
            ],
        ),
    );
    t.section(
        "memberOf of bob: the static group and the dynamic one",
        &s.read(&Bind::Root, &user_dn("bob"), &["memberOf"]),
    );
    t.section(
        "memberOf of frank: none",
        &s.read(&Bind::Root, &user_dn("frank"), &["memberOf"]),
    );
    t.section(
        "(memberOf=first-five) as the root DN",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &format!("ou=people,{SUFFIX}"),
                &format!("(memberOf={})", group_dn("first-five")),
                "1.1",
            ],
        ),
    );
    t.section(
        "(memberOf=engineering): static groups too",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                &format!("(memberOf={})", group_dn("engineering")),
                "1.1",
            ],
        ),
    );
    t.section(
        "a dynamic list: the mail values of the entries its URL finds",
        &s.read(
            &Bind::Root,
            &format!("ou=mail-list,{SUFFIX}"),
            &["mail", "ou"],
        ),
    );
    t.section(
        "a filter on the list's expanded values",
        &s.search(
            &Bind::Root,
            &["-b", SUFFIX, "(mail=carol@example.com)", "1.1"],
        ),
    );
    let compare = |bind: &Bind, dn: &str, ava: &str| s.tool("ldapcompare", bind, &[dn, ava], None);
    let first_five = group_dn("first-five");
    t.raw(
        "compare member=carol on the dynamic group: true",
        &compare(
            &Bind::Root,
            &first_five,
            &format!("member:{}", user_dn("carol")),
        ),
    );
    t.raw(
        "compare member=frank: false",
        &compare(
            &Bind::Root,
            &first_five,
            &format!("member:{}", user_dn("frank")),
        ),
    );
    t.raw(
        "compare member=erin anonymously: true (a compare tests members without access control)",
        &compare(
            &Bind::Anonymous,
            &first_five,
            &format!("member:{}", user_dn("erin")),
        ),
    );
    t.raw(
        "compare memberOf on a member: memberOf is not computed for a compare",
        &compare(
            &Bind::Root,
            &user_dn("bob"),
            &format!("memberOf:{first_five}"),
        ),
    );
    let write = |who: &str| {
        s.modify(
            &Bind::user(who),
            &format!(
                "dn: {}\nchangetype: modify\nreplace: description\ndescription: by {who}\n",
                group_dn("managers")
            ),
        )
    };
    t.section(
        "group/groupOfURLs/memberURL: bob is in the dynamic group and may write",
        &write("bob"),
    );
    t.section("frank is not and may not", &write("frank"));
    t.section(
        "the result",
        &s.read(&Bind::Root, &group_dn("managers"), &["description"]),
    );
    t.check();
}

/// Canopy tests every filter against the expanded entry: a dynamic group that holds bob matches
/// `(member=bob)` and not `(!(member=bob))`. slapd 2.5 tests the negation against the stored group and
/// returns it for both (docs/compatibility.md).
#[test]
fn a_negation_is_the_opposite_of_its_assertion() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let s = start();
    s.add(
        &Bind::Root,
        &format!(
            "dn: {}\nobjectClass: groupOfURLs\ncn: first-five\n\
             memberURL: ldap:///ou=people,{SUFFIX}??one?(uidNumber<=1005)\n",
            group_dn("first-five")
        ),
    )
    .expect_code(0, "adding the dynamic group");
    let find = |filter: String| {
        let out = s.search(
            &Bind::Root,
            &["-b", &format!("ou=groups,{SUFFIX}"), &filter, "1.1"],
        );
        assert_eq!(out.code, 0, "{out:?}");
        out.stdout.contains(&group_dn("first-five"))
    };
    let bob = user_dn("bob");
    assert!(find(format!("(member={bob})")));
    assert!(!find(format!("(!(member={bob}))")));
    assert!(find(format!("(!(member={}))", user_dn("frank"))));
    // ManageDsaIT: the group as stored, without members.
    let stored = s.search(
        &Bind::Root,
        &["-M", "-b", &group_dn("first-five"), "-s", "base", "member"],
    );
    assert!(!stored.stdout.contains("member:"), "{stored:?}");
}

/// A dynamic list with a mapping (`description:cn`): the cn values its URL finds are added as
/// description values.
#[test]
fn mapped_lists() {
    let s = start_with(
        "overlay dynlist\ndynlist-attrset labeledURIObject labeledURI description:cn\n",
        "[[overlay]]\nname = \"dynlist\"\nattrset = \"labeledURIObject labeledURI description:cn\"\n",
    );
    let mut t = Transcript::new("dynlist_mapped");
    let role = s.add(
        &Bind::Root,
        &format!(
            "dn: cn=names,{SUFFIX}\nobjectClass: organizationalRole\n\
             objectClass: labeledURIObject\ncn: names\n\
             labeledURI: ldap:///ou=people,{SUFFIX}?cn,mail?one?(uidNumber<=1002)\n"
        ),
    );
    assert_eq!(role.code, 0, "{role:?}");
    t.section(
        "a mapped list (description:cn): the cn values found become description values",
        &s.read(&Bind::Root, &format!("cn=names,{SUFFIX}"), &["*"]),
    );
    t.check();
}

/// Nested groups (`@<static-oc>*`): a dynamic group inside a static group inside a dynamic group, and
/// two static groups holding each other. memberOf is populated through every level, and the member
/// values of a group whose nested groups are asked for together with memberOf, as slapd 2.5 does; a
/// cycle ends.
#[test]
fn nested_groups() {
    let s = start_with(
        "overlay dynlist\ndynlist-attrset groupOfURLs memberURL member+memberOf@groupOfNames*\n",
        "[[overlay]]\nname = \"dynlist\"\nattrset = \"groupOfURLs memberURL member+memberOf@groupOfNames*\"\n",
    );
    let mut t = Transcript::new("dynlist_nested");
    let added = s.add(
        &Bind::Root,
        &format!(
            "dn: {devs}\nobjectClass: groupOfURLs\ncn: devs\n\
             memberURL: ldap:///ou=people,{SUFFIX}??one?(uidNumber<=1002)\n\n\
             dn: {team}\nobjectClass: groupOfNames\ncn: team\n\
             member: uid=carol,ou=people,{SUFFIX}\nmember: {devs}\n\n\
             dn: {staff}\nobjectClass: groupOfURLs\ncn: all-staff\n\
             memberURL: ldap:///ou=groups,{SUFFIX}??one?(cn=team)\n\n\
             dn: {a}\nobjectClass: groupOfNames\ncn: loop-a\n\
             member: uid=dave,ou=people,{SUFFIX}\nmember: {b}\n\n\
             dn: {b}\nobjectClass: groupOfNames\ncn: loop-b\n\
             member: uid=erin,ou=people,{SUFFIX}\nmember: {a}\n",
            devs = group_dn("devs"),
            team = group_dn("team"),
            staff = group_dn("all-staff"),
            a = group_dn("loop-a"),
            b = group_dn("loop-b"),
        ),
    );
    assert_eq!(added.code, 0, "{added:?}");
    for (title, dn, attrs) in [
        (
            "alice's memberOf: every level",
            user_dn("alice"),
            vec!["memberOf"],
        ),
        ("carol's memberOf", user_dn("carol"), vec!["memberOf"]),
        ("alice, all attributes", user_dn("alice"), vec!["*", "+"]),
        (
            "dave's memberOf, through a cycle",
            user_dn("dave"),
            vec!["memberOf"],
        ),
        (
            "a dynamic group's memberOf",
            group_dn("devs"),
            vec!["memberOf"],
        ),
        (
            "a static group's memberOf",
            group_dn("team"),
            vec!["memberOf"],
        ),
        (
            "members and memberOf together: nested members",
            group_dn("all-staff"),
            vec!["member", "memberOf"],
        ),
        (
            "members alone: one level",
            group_dn("all-staff"),
            vec!["member"],
        ),
        (
            "user attributes: one level",
            group_dn("all-staff"),
            vec!["*"],
        ),
        ("all attributes", group_dn("all-staff"), vec!["*", "+"]),
        (
            "a static group, members and memberOf",
            group_dn("team"),
            vec!["member", "memberOf"],
        ),
        (
            "a cycle, members and memberOf",
            group_dn("loop-a"),
            vec!["member", "memberOf"],
        ),
    ] {
        t.section(title, &s.read(&Bind::Root, &dn, &attrs));
    }
    for (title, filter) in [
        (
            "members of all-staff at any depth",
            format!("(memberOf={})", group_dn("all-staff")),
        ),
        (
            "members of loop-b at any depth",
            format!("(memberOf={})", group_dn("loop-b")),
        ),
        (
            "groups holding alice",
            format!("(member={})", user_dn("alice")),
        ),
    ] {
        t.section(
            title,
            &s.search(&Bind::Root, &["-b", SUFFIX, &filter, "1.1"]),
        );
    }
    t.check();
}
