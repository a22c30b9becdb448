//! Unit tests of access-list evaluation.

use canopy_core::{Attribute, Entry};
use canopy_proto::Dn;
use canopy_schema::{NormDn, Schema};

use super::*;
use crate::session::{Link, Peer};

fn ndn(schema: &Schema, text: &str) -> NormDn {
    schema
        .normalize_dn(&Dn::parse(text.as_bytes()).unwrap())
        .unwrap()
}

fn user(schema: &Schema, text: &str) -> Who {
    Who {
        dn: text.into(),
        ndn: Some(ndn(schema, text)),
        root: false,
        link: Link::default(),
        real: None,
    }
}

fn entry(schema: &Schema, text: &str, classes: &[&str]) -> Entry {
    Entry {
        dn: Dn::parse(text.as_bytes()).unwrap(),
        ndn: ndn(schema, text),
        attrs: vec![Attribute {
            desc: "objectClass".into(),
            values: classes.iter().map(|c| c.as_bytes().to_vec()).collect(),
        }],
    }
}

fn mask(acl: &Acl, schema: &Schema, who: &Who, e: &Entry, attr: AttrRef<'_>) -> Mask {
    let checker = acl.checker(schema, who, &NoGroups);
    let target = Target {
        ndn: &e.ndn,
        entry: Some(e),
    };
    checker.decide(target, attr).mask
}

const READ: Mask = 0b11111;

#[test]
fn the_default_list_is_debians() {
    let schema = Schema::builtin();
    let acl = Acl::default_policy(&schema);
    let alice = entry(&schema, "uid=alice,dc=example,dc=com", &["person"]);
    let me = user(&schema, "uid=alice,dc=example,dc=com");
    let bob = user(&schema, "uid=bob,dc=example,dc=com");
    let anon = Who::anonymous();
    let pw = AttrRef::Attr("userPassword");
    let write = privileges::cumulative(privileges::WRITE);
    assert_eq!(mask(&acl, &schema, &me, &alice, pw), write);
    assert_eq!(
        mask(&acl, &schema, &anon, &alice, pw),
        privileges::cumulative(privileges::AUTH)
    );
    assert_eq!(mask(&acl, &schema, &bob, &alice, pw), 0);
    assert_eq!(mask(&acl, &schema, &bob, &alice, AttrRef::Attr("cn")), READ);
    assert_eq!(mask(&acl, &schema, &me, &alice, AttrRef::Attr("cn")), READ);
    assert_eq!(mask(&acl, &schema, &anon, &alice, AttrRef::Entry), READ);
    let root = Who {
        root: true,
        ..Who::anonymous()
    };
    assert!(acl.checker(&schema, &root, &NoGroups).allows(
        Target {
            ndn: &alice.ndn,
            entry: None
        },
        pw,
        privileges::MANAGE
    ));
}

#[test]
fn first_matching_what_then_first_matching_who() {
    let schema = Schema::builtin();
    let rules: Vec<String> = [
        r#"to dn.subtree="ou=people,dc=example,dc=com" attrs=mail by users read by * none"#,
        r#"to filter=(objectClass=device) by * none"#,
        r#"to dn.children="dc=example,dc=com" by dn.exact="cn=svc,dc=example,dc=com" =rsd by * search"#,
        "to * by * read",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let acl = Acl::compile(&schema, &rules, Vec::new()).unwrap();
    let alice = entry(
        &schema,
        "uid=alice,ou=people,dc=example,dc=com",
        &["person"],
    );
    let printer = entry(&schema, "cn=p,dc=example,dc=com", &["device"]);
    let svc = user(&schema, "cn=svc,dc=example,dc=com");
    let anon = Who::anonymous();
    assert_eq!(
        mask(&acl, &schema, &svc, &alice, AttrRef::Attr("mail")),
        READ
    );
    assert_eq!(mask(&acl, &schema, &anon, &alice, AttrRef::Attr("mail")), 0);
    let rsd = privileges::READ | privileges::SEARCH | privileges::DISCLOSE;
    assert_eq!(mask(&acl, &schema, &svc, &alice, AttrRef::Attr("cn")), rsd);
    assert_eq!(
        mask(&acl, &schema, &anon, &alice, AttrRef::Attr("cn")),
        privileges::cumulative(privileges::SEARCH)
    );
    assert_eq!(mask(&acl, &schema, &svc, &printer, AttrRef::Entry), 0);
    let top = entry(&schema, "dc=example,dc=com", &["domain"]);
    assert_eq!(mask(&acl, &schema, &anon, &top, AttrRef::Entry), READ);
}

#[test]
fn continue_break_and_modifiers() {
    let schema = Schema::builtin();
    let rules: Vec<String> = [
        "to * by users =s continue by dn.exact=\"cn=a,dc=x\" +r break by * none",
        "to attrs=cn by dn.exact=\"cn=a,dc=x\" +c by * break",
        "to * by * -s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let acl = Acl::compile(&schema, &rules, Vec::new()).unwrap();
    let e = entry(&schema, "cn=e,dc=x", &["device"]);
    let a = user(&schema, "cn=a,dc=x");
    let b = user(&schema, "cn=b,dc=x");
    let s = privileges::SEARCH;
    let (r, c) = (privileges::READ, privileges::COMPARE);
    // a: =s, +r, break to rule 1: +c, stop.
    assert_eq!(mask(&acl, &schema, &a, &e, AttrRef::Attr("cn")), s | r | c);
    // a on sn: rule 1 does not apply; rule 2 removes s.
    assert_eq!(mask(&acl, &schema, &a, &e, AttrRef::Attr("sn")), r);
    // b: =s continue, then `by * none` stops with nothing.
    assert_eq!(mask(&acl, &schema, &b, &e, AttrRef::Attr("cn")), 0);
    // A rule whose clauses end after `continue` ends with slapd's implicit none.
    let acl = Acl::compile(
        &schema,
        &["to * by users read continue".to_string()],
        Vec::new(),
    )
    .unwrap();
    assert_eq!(mask(&acl, &schema, &b, &e, AttrRef::Attr("cn")), 0);
}

#[test]
fn link_clauses() {
    let schema = Schema::builtin();
    let rules: Vec<String> = [
        "to * by peername.ip=10.0.0.0%255.0.0.0 write by ssf=71 read by peername.path=/run/s search",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let acl = Acl::compile(&schema, &rules, vec!["/run/s".into()]).unwrap();
    let e = entry(&schema, "cn=e,dc=x", &["device"]);
    let tcp = |ip: &str| Who {
        link: Link::new(Peer::Tcp(format!("{ip}:1000").parse().unwrap())),
        ..user(&schema, "cn=u,dc=x")
    };
    let write = privileges::cumulative(privileges::WRITE);
    assert_eq!(
        mask(&acl, &schema, &tcp("10.1.2.3"), &e, AttrRef::Entry),
        write
    );
    assert_eq!(
        mask(&acl, &schema, &tcp("127.0.0.1"), &e, AttrRef::Entry),
        0
    );
    let local = Who {
        link: Link::new(Peer::Unix { uid: 0, gid: 0 }),
        ..Who::anonymous()
    };
    assert_eq!(local.ssf(Ssf::Any), 71);
    assert_eq!(mask(&acl, &schema, &local, &e, AttrRef::Entry), READ);
}

#[test]
fn search_views_are_shared_and_agree() {
    let schema = Schema::builtin();
    let acl = Acl::default_policy(&schema);
    let me = user(&schema, "uid=alice,dc=example,dc=com");
    let access = SearchAccess::new(acl.checker(&schema, &me, &NoGroups));
    let alice = ndn(&schema, "uid=alice,dc=example,dc=com");
    let bob = ndn(&schema, "uid=bob,dc=example,dc=com");
    let carol = ndn(&schema, "uid=carol,dc=example,dc=com");
    let (vb, vc) = (access.view(&bob, None), access.view(&carol, None));
    assert!(std::rc::Rc::ptr_eq(&vb, &vc));
    assert!(vb.plain_allows(privileges::READ));
    assert!(!access.allows_attr(&vb, "userPassword", privileges::READ));
    let va = access.view(&alice, None);
    assert!(access.allows_attr(&va, "userPassword", privileges::READ));
    assert!(va.allows_entry(privileges::READ));
    // The password section is decided at once: read by its owner only.
    assert_eq!(vb.secret, Some(0));
    assert_eq!(va.secret, Some(privileges::cumulative(privileges::WRITE)));
}

#[test]
fn password_parts_are_decided_one_by_one() {
    let schema = Schema::builtin();
    let rules = [
        r#"to attrs=userPassword val.regex="^[{]CRYPT" by * none"#,
        "to * by * read",
    ];
    let rules: Vec<String> = rules.iter().map(|s| s.to_string()).collect();
    let acl = Acl::compile(&schema, &rules, Vec::new()).unwrap();
    let who = Who::anonymous();
    let access = SearchAccess::new(acl.checker(&schema, &who, &NoGroups));
    let view = access.view(&ndn(&schema, "cn=a,dc=x"), None);
    assert_eq!(view.secret, None);
    assert!(!access.allows_value(&view, "userPassword", b"{CRYPT}x", privileges::READ));
    assert!(access.allows_value(&view, "userPassword", b"{SSHA}x", privileges::READ));
}

#[test]
fn many_varying_rules_give_unshared_views() {
    let schema = Schema::builtin();
    let mut rules: Vec<String> = (0..70)
        .map(|i| format!(r#"to dn.subtree="ou=u{i},dc=x" by * none"#))
        .collect();
    rules.push("to * by * read".into());
    let acl = Acl::compile(&schema, &rules, Vec::new()).unwrap();
    let who = Who::anonymous();
    let access = SearchAccess::new(acl.checker(&schema, &who, &NoGroups));
    let inside = ndn(&schema, "cn=a,ou=u69,dc=x");
    let outside = ndn(&schema, "cn=a,ou=other,dc=x");
    let (vi, vo) = (access.view(&inside, None), access.view(&outside, None));
    assert_eq!((vi.shared, vo.shared), (None, None));
    assert!(!vi.allows_entry(privileges::READ));
    assert!(vo.allows_entry(privileges::READ));
}

#[test]
fn value_rules_apply_to_values_only() {
    let schema = Schema::builtin();
    let rules: Vec<String> = [
        r#"to attrs=description val.regex="^secret" by * none"#,
        r#"to attrs=cn val="Alice  ADAMS" by * compare"#,
        "to * by * read",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let acl = Acl::compile(&schema, &rules, Vec::new()).unwrap();
    assert!(acl.has_value_rules());
    assert!(acl.value_ruled(&schema, "description;lang-en"));
    assert!(!acl.value_ruled(&schema, "sn"));
    let e = entry(&schema, "cn=e,dc=x", &["device"]);
    let anon = Who::anonymous();
    let value = |attr, v: &'static str| AttrRef::Value(attr, v.as_bytes());
    assert_eq!(
        mask(
            &acl,
            &schema,
            &anon,
            &e,
            value("description", "secret plan")
        ),
        0
    );
    assert_eq!(
        mask(&acl, &schema, &anon, &e, value("description", "public")),
        READ
    );
    // A check of the whole attribute skips value rules, as in slapd.
    assert_eq!(
        mask(&acl, &schema, &anon, &e, AttrRef::Attr("description")),
        READ
    );
    // Exact values compare under the attribute's equality rule.
    let compare = privileges::cumulative(privileges::COMPARE);
    assert_eq!(
        mask(&acl, &schema, &anon, &e, value("cn", "alice adams")),
        compare
    );
    assert_eq!(mask(&acl, &schema, &anon, &e, value("cn", "bob")), READ);
    for bad in [
        "to val=x by * read",
        "to attrs=cn,sn val=x by * read",
        "to attrs=cn val.sideways=x by * read",
    ] {
        let err = Acl::compile(&schema, &[bad.to_string()], Vec::new()).unwrap_err();
        assert!(
            err.contains("access rule 0") && err.contains("val"),
            "{bad}: {err}"
        );
    }
}

fn compile(schema: &Schema, rules: &[&str]) -> Acl {
    let rules: Vec<String> = rules.iter().map(|s| s.to_string()).collect();
    Acl::compile(schema, &rules, Vec::new()).unwrap()
}

fn group(schema: &Schema, text: &str, members: &[&str]) -> Entry {
    let mut e = entry(schema, text, &["groupOfNames"]);
    e.attrs.push(Attribute {
        desc: "member".into(),
        values: members.iter().map(|m| m.as_bytes().to_vec()).collect(),
    });
    e
}

#[test]
fn dnattr_grants_the_dns_the_entry_lists() {
    let schema = Schema::builtin();
    let acl = compile(
        &schema,
        &[
            "to dn.subtree=ou=groups,dc=x by dnattr=member write by users read",
            "to * by * read",
        ],
    );
    assert!(acl.needs_entry(), "dnattr reads the entry");
    // Listed in another form (spaces, case) is still listed: values compare as DNs.
    let g = group(
        &schema,
        "cn=g,ou=groups,dc=x",
        &["UID=Alice, ou=people,dc=x"],
    );
    let alice = user(&schema, "uid=alice,ou=people,dc=x");
    let bob = user(&schema, "uid=bob,ou=people,dc=x");
    let write = privileges::cumulative(privileges::WRITE);
    assert_eq!(mask(&acl, &schema, &alice, &g, AttrRef::Attr("cn")), write);
    assert_eq!(mask(&acl, &schema, &bob, &g, AttrRef::Attr("cn")), READ);
    assert_eq!(
        mask(&acl, &schema, &Who::anonymous(), &g, AttrRef::Entry),
        0
    );
    // Without the entry's attributes nobody is listed.
    let checker = acl.checker(&schema, &alice, &NoGroups);
    let bare = Target {
        ndn: &g.ndn,
        entry: None,
    };
    assert_eq!(checker.decide(bare, AttrRef::Entry).mask, READ);
    // A search decides per entry: the same checker, one view per relation.
    let access = SearchAccess::new(acl.checker(&schema, &alice, &NoGroups));
    let other = group(&schema, "cn=h,ou=groups,dc=x", &["uid=bob,ou=people,dc=x"]);
    let third = group(
        &schema,
        "cn=i,ou=groups,dc=x",
        &["uid=carol,ou=people,dc=x"],
    );
    let (vg, vo, vt) = (
        access.view(&g.ndn, Some(&g)),
        access.view(&other.ndn, Some(&other)),
        access.view(&third.ndn, Some(&third)),
    );
    assert!(vg.allows_entry(privileges::WRITE));
    assert!(!vo.allows_entry(privileges::WRITE) && vo.allows_entry(privileges::READ));
    assert!(std::rc::Rc::ptr_eq(&vo, &vt));
}

#[test]
fn dnattr_needs_a_dn_attribute() {
    let schema = Schema::builtin();
    for bad in ["to * by dnattr=cn read", "to * by dnattr=noSuch read"] {
        let err = Acl::compile(&schema, &[bad.to_string()], Vec::new()).unwrap_err();
        assert!(
            err.contains("access rule 0") && err.contains("dnattr"),
            "{bad}: {err}"
        );
    }
    // Subtypes count: `owner` and `member` are both subtypes of `distinguishedName`.
    let acl = compile(&schema, &["to * by dnattr=distinguishedName read"]);
    let g = group(&schema, "cn=g,dc=x", &["uid=a,dc=x"]);
    let a = user(&schema, "uid=a,dc=x");
    assert_eq!(mask(&acl, &schema, &a, &g, AttrRef::Entry), READ);
}

#[test]
fn real_forms_test_the_bound_identity() {
    let schema = Schema::builtin();
    let acl = compile(
        &schema,
        &[
            "to dn.base=cn=a,dc=x by realanonymous auth by realself write by realdn.exact=uid=r,dc=x read",
            "to dn.base=cn=b,dc=x by realusers read by realdnattr=member write",
        ],
    );
    let a = entry(&schema, "cn=a,dc=x", &["device"]);
    let b = group(&schema, "cn=b,dc=x", &["cn=a,dc=x"]);
    let anon = Who::anonymous();
    let me = user(&schema, "cn=a,dc=x");
    let r = user(&schema, "uid=r,dc=x");
    let auth = privileges::cumulative(privileges::AUTH);
    let write = privileges::cumulative(privileges::WRITE);
    assert_eq!(mask(&acl, &schema, &anon, &a, AttrRef::Entry), auth);
    assert_eq!(mask(&acl, &schema, &me, &a, AttrRef::Entry), write);
    assert_eq!(mask(&acl, &schema, &r, &a, AttrRef::Entry), READ);
    assert_eq!(mask(&acl, &schema, &anon, &b, AttrRef::Entry), 0);
    assert_eq!(mask(&acl, &schema, &r, &b, AttrRef::Entry), READ);
    // realusers comes first: a listed user still gets read only.
    assert_eq!(mask(&acl, &schema, &me, &b, AttrRef::Entry), READ);
    assert!(Acl::compile(&schema, &["to * by real read".into()], Vec::new()).is_err());
}

#[test]
fn real_forms_follow_the_connection_under_proxied_authorization() {
    let schema = Schema::builtin();
    let acl = compile(
        &schema,
        &[
            "to dn.base=cn=a,dc=x by realself write by self read by * none",
            "to dn.base=cn=b,dc=x by realdnattr=member write by dnattr=member read by * none",
            r#"to dn.regex="^cn=([^,]+),ou=s,dc=x$" by realdn.exact,expand="uid=$1,dc=x" write by dn.exact,expand="uid=$1,dc=x" read by * none"#,
            "to dn.base=cn=d,dc=x by realanonymous write by anonymous read by * none",
            "to dn.base=cn=e,dc=x by realdn.subtree=ou=p,dc=x write by users read by * none",
        ],
    );
    // The connection bound as `real`, the operation running as `as_dn` (None: anonymous).
    let proxied = |real: &str, as_dn: Option<&str>| Who {
        real: Some(ndn(&schema, real)),
        ..as_dn.map_or_else(Who::anonymous, |dn| user(&schema, dn))
    };
    let write = privileges::cumulative(privileges::WRITE);
    let check = |who: &Who, target: &Entry| mask(&acl, &schema, who, target, AttrRef::Entry);
    let a = entry(&schema, "cn=a,dc=x", &["device"]);
    assert_eq!(check(&proxied("cn=a,dc=x", Some("uid=o,dc=x")), &a), write);
    assert_eq!(check(&proxied("uid=o,dc=x", Some("cn=a,dc=x")), &a), READ);
    assert_eq!(check(&user(&schema, "cn=a,dc=x"), &a), write);
    let b = group(&schema, "cn=b,dc=x", &["cn=a,dc=x"]);
    assert_eq!(check(&proxied("cn=a,dc=x", Some("uid=o,dc=x")), &b), write);
    assert_eq!(check(&proxied("uid=o,dc=x", Some("cn=a,dc=x")), &b), READ);
    assert_eq!(check(&proxied("uid=o,dc=x", Some("uid=p,dc=x")), &b), 0);
    let r = entry(&schema, "cn=r,ou=s,dc=x", &["device"]);
    assert_eq!(check(&proxied("uid=r,dc=x", Some("uid=o,dc=x")), &r), write);
    assert_eq!(check(&proxied("uid=o,dc=x", Some("uid=r,dc=x")), &r), READ);
    let d = entry(&schema, "cn=d,dc=x", &["device"]);
    assert_eq!(check(&proxied("uid=o,dc=x", None), &d), READ);
    assert_eq!(check(&Who::anonymous(), &d), write);
    let e = entry(&schema, "cn=e,dc=x", &["device"]);
    assert_eq!(check(&proxied("uid=q,ou=p,dc=x", None), &e), write);
    assert_eq!(
        check(&proxied("uid=o,dc=x", Some("uid=q,ou=p,dc=x")), &e),
        READ
    );
    assert_eq!(check(&proxied("uid=o,dc=x", None), &e), 0);
}

#[test]
fn level_styles_count_rdns() {
    let schema = Schema::builtin();
    let acl = compile(
        &schema,
        &[
            "to dn.subtree=ou=b,dc=x by dn.level{1}=ou=people,dc=x write by dn.level{0}=uid=z,dc=x write by * none",
            "to * by dn.level{2}=dc=x compare by * read",
        ],
    );
    let two = entry(&schema, "cn=a,ou=b,dc=x", &["device"]);
    let other = entry(&schema, "cn=a,ou=c,dc=x", &["device"]);
    let person = user(&schema, "uid=p,ou=people,dc=x");
    let deeper = user(&schema, "cn=q,uid=p,ou=people,dc=x");
    let people = user(&schema, "ou=people,dc=x");
    let write = privileges::cumulative(privileges::WRITE);
    let compare = privileges::cumulative(privileges::COMPARE);
    assert_eq!(mask(&acl, &schema, &person, &two, AttrRef::Entry), write);
    assert_eq!(mask(&acl, &schema, &deeper, &two, AttrRef::Entry), 0);
    assert_eq!(mask(&acl, &schema, &people, &two, AttrRef::Entry), 0);
    // level{0} matches nobody, not even the DN itself (slapd wants a longer DN).
    let z = user(&schema, "uid=z,dc=x");
    assert_eq!(mask(&acl, &schema, &z, &two, AttrRef::Entry), 0);
    assert_eq!(
        mask(&acl, &schema, &person, &other, AttrRef::Entry),
        compare
    );
    assert_eq!(mask(&acl, &schema, &people, &other, AttrRef::Entry), READ);
    for (bad, why) in [
        ("to * by dn.level{x}=dc=x read", "level"),
        ("to * by dn.level{-1}=dc=x read", "level"),
        ("to dn.level{1}=dc=x by * read", "<what>"),
    ] {
        let err = Acl::compile(&schema, &[bad.to_string()], Vec::new()).unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn negated_classes_cover_what_the_class_does_not_name() {
    let schema = Schema::builtin();
    let acl = compile(&schema, &["to attrs=!person by * none", "to * by * read"]);
    let e = entry(&schema, "uid=a,dc=x", &["inetOrgPerson"]);
    let anon = Who::anonymous();
    // person's MUST and MAY (and their subtypes), and top's objectClass, stay readable.
    for own in [
        "cn",
        "sn",
        "description",
        "telephoneNumber",
        "cn;lang-en",
        "objectClass",
    ] {
        assert_eq!(
            mask(&acl, &schema, &anon, &e, AttrRef::Attr(own)),
            READ,
            "{own}"
        );
    }
    // Anything else is covered: inetOrgPerson's own attributes, the pseudo-attributes.
    for other in ["mail", "uid", "ou"] {
        assert_eq!(
            mask(&acl, &schema, &anon, &e, AttrRef::Attr(other)),
            0,
            "{other}"
        );
    }
    assert_eq!(mask(&acl, &schema, &anon, &e, AttrRef::Entry), 0);
    assert_eq!(mask(&acl, &schema, &anon, &e, AttrRef::Children), 0);
    // A search decides such lists attribute by attribute.
    let access = SearchAccess::new(acl.checker(&schema, &anon, &NoGroups));
    let view = access.view(&e.ndn, None);
    assert_eq!((view.plain, view.secret), (None, None));
    assert!(access.allows_attr(&view, "sn", privileges::READ));
    assert!(!access.allows_attr(&view, "mail", privileges::READ));
    // `!extensibleObject` covers nothing; `!` names a class, never an attribute type.
    let none = compile(
        &schema,
        &["to attrs=!extensibleObject by * none", "to * by * read"],
    );
    assert_eq!(mask(&none, &schema, &anon, &e, AttrRef::Attr("mail")), READ);
    assert_eq!(mask(&none, &schema, &anon, &e, AttrRef::Entry), READ);
    // A `!class` item decides at once: what follows it in the list is not reached.
    let first = compile(
        &schema,
        &["to attrs=!person,description by * none", "to * by * read"],
    );
    assert_eq!(
        mask(&first, &schema, &anon, &e, AttrRef::Attr("description")),
        READ
    );
    let last = compile(
        &schema,
        &["to attrs=description,!person by * none", "to * by * read"],
    );
    assert_eq!(
        mask(&last, &schema, &anon, &e, AttrRef::Attr("description")),
        0
    );
    assert_eq!(mask(&last, &schema, &anon, &e, AttrRef::Attr("cn")), READ);
    assert_eq!(mask(&last, &schema, &anon, &e, AttrRef::Attr("mail")), 0);
    let err = Acl::compile(&schema, &["to attrs=!cn by * read".into()], Vec::new()).unwrap_err();
    assert!(err.contains("object class"), "{err}");
}

#[test]
fn who_patterns_expand_the_what_submatches() {
    let schema = Schema::builtin();
    let acl = compile(
        &schema,
        &[
            r#"to dn.regex="^(.+,)?uid=([^,]+),ou=people,dc=x$" by dn.exact,expand="uid=$2,ou=people,dc=x" write by * read"#,
            r#"to dn.regex="^cn=([^,]+),ou=g,dc=x$" by dn.regex="^uid=$1,ou=people,dc=x$" write by * compare"#,
            r#"to dn.subtree=ou=s,dc=x by dn.exact,expand="$0" write by dn.children,expand="$1" read"#,
            "to * by * none",
        ],
    );
    assert!(acl.has_expansions());
    let alice = user(&schema, "uid=alice,ou=people,dc=x");
    let bob = user(&schema, "uid=bob,ou=people,dc=x");
    let write = privileges::cumulative(privileges::WRITE);
    let own = entry(&schema, "uid=alice,ou=people,dc=x", &["device"]);
    let below = entry(&schema, "cn=c,uid=alice,ou=people,dc=x", &["device"]);
    assert_eq!(mask(&acl, &schema, &alice, &own, AttrRef::Entry), write);
    assert_eq!(mask(&acl, &schema, &alice, &below, AttrRef::Entry), write);
    assert_eq!(mask(&acl, &schema, &bob, &below, AttrRef::Entry), READ);
    // A regular expression in <who> is expanded, then matched.
    let group = entry(&schema, "cn=alice,ou=g,dc=x", &["device"]);
    assert_eq!(mask(&acl, &schema, &alice, &group, AttrRef::Entry), write);
    assert_eq!(
        mask(&acl, &schema, &bob, &group, AttrRef::Entry),
        privileges::cumulative(privileges::COMPARE)
    );
    // $0 is the entry's DN, $1 the part the pattern DN matched.
    let s = entry(&schema, "cn=t,ou=s,dc=x", &["device"]);
    let t = user(&schema, "cn=t,ou=s,dc=x");
    let u = user(&schema, "cn=u,ou=s,dc=x");
    assert_eq!(mask(&acl, &schema, &t, &s, AttrRef::Entry), write);
    assert_eq!(mask(&acl, &schema, &u, &s, AttrRef::Entry), READ);
    assert_eq!(mask(&acl, &schema, &alice, &s, AttrRef::Entry), 0);
    // A search decides entry by entry: the views of two entries differ by the expansion alone.
    let access = SearchAccess::new(acl.checker(&schema, &t, &NoGroups));
    assert!(access.needs_ndn());
    let other = ndn(&schema, "cn=v,ou=s,dc=x");
    let (vs, vo) = (access.view(&s.ndn, None), access.view(&other, None));
    assert!(vs.allows_entry(privileges::WRITE));
    assert!(!vo.allows_entry(privileges::WRITE) && vo.allows_entry(privileges::READ));
    // Under `to *` there is no $1: the pattern is empty, and matches no one.
    let none = compile(
        &schema,
        &[r#"to * by dn.children,expand="$1" write by * read"#],
    );
    assert_eq!(mask(&none, &schema, &alice, &own, AttrRef::Entry), READ);
    for bad in [
        r#"to * by group.expand="cn=$1,dc=x" read"#,
        r#"to * by dn.regex="^${v1}$" read"#,
        r#"to * by dn.sideways,expand="$1" read"#,
        r#"to * by dn.exact,bogus="x" read"#,
    ] {
        let err = Acl::compile(&schema, &[bad.to_string()], Vec::new()).unwrap_err();
        assert!(err.contains("access rule 0"), "{bad}: {err}");
    }
}
