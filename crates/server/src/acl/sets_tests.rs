//! Unit tests of `set=` clauses (the language itself is tested in `canopy_core::sets`): styles, what a
//! clause needs of the entry, evaluation through the access list's group reader, and
//! access lists deciding with sets.

use std::collections::HashMap;

use canopy_core::{Attribute, Entry};
use canopy_proto::Dn;
use canopy_schema::{NormDn, Schema};

use super::*;
use crate::access::Who;
use crate::acl::{privileges, Acl, AttrRef, Groups, Target};
use crate::session::Link;

fn ndn(schema: &Schema, text: &str) -> NormDn {
    schema
        .normalize_dn(&Dn::parse(text.as_bytes()).unwrap())
        .unwrap()
}

/// A directory in memory; counts its reads.
struct Tree {
    entries: HashMap<NormDn, Entry>,
    reads: std::cell::Cell<usize>,
}

impl Groups for Tree {
    fn is_member(&self, _: &NormDn, _: &str, _: &str, _: &NormDn) -> bool {
        false
    }

    fn entry(&self, ndn: &NormDn) -> Option<Entry> {
        self.reads.set(self.reads.get() + 1);
        self.entries.get(ndn).cloned()
    }
}

fn tree(schema: &Schema, entries: &[(&str, &[(&str, &str)])]) -> Tree {
    let mut map = HashMap::new();
    for (dn, attrs) in entries {
        let mut list: Vec<Attribute> = Vec::new();
        for (desc, value) in *attrs {
            match list.iter_mut().find(|a| a.desc == *desc) {
                Some(a) => a.values.push(value.as_bytes().to_vec()),
                None => list.push(Attribute {
                    desc: desc.to_string(),
                    values: vec![value.as_bytes().to_vec()],
                }),
            }
        }
        let entry = Entry {
            dn: Dn::parse(dn.as_bytes()).unwrap(),
            ndn: ndn(schema, dn),
            attrs: list,
        };
        map.insert(entry.ndn.clone(), entry);
    }
    Tree {
        entries: map,
        reads: std::cell::Cell::new(0),
    }
}

const ALICE: &str = "uid=alice,ou=people,dc=example,dc=com";
const BOB: &str = "uid=bob,ou=people,dc=example,dc=com";
const CAROL: &str = "uid=carol,ou=people,dc=example,dc=com";
const STAFF: &str = "cn=staff,ou=groups,dc=example,dc=com";
const INNER: &str = "cn=inner,ou=groups,dc=example,dc=com";

fn sample(schema: &Schema) -> Tree {
    tree(
        schema,
        &[
            (ALICE, &[("uid", "Alice"), ("manager", BOB)]),
            (
                BOB,
                &[
                    ("uid", "bob"),
                    ("manager", "UID=Carol,OU=People,DC=Example,DC=Com"),
                ],
            ),
            (CAROL, &[("uid", "carol"), ("manager", ALICE)]),
            (
                STAFF,
                &[("cn", "staff"), ("member", ALICE), ("member", INNER)],
            ),
            // A cycle of groups: inner holds staff.
            (
                INNER,
                &[("cn", "inner"), ("member", CAROL), ("member", STAFF)],
            ),
        ],
    )
}

#[test]
fn clauses_refuse_bad_styles_and_empty_sets() {
    let schema = Schema::builtin();
    assert!(SetClause::new(&schema, "sub", "user")
        .unwrap_err()
        .contains("style"));
    assert!(SetClause::new(&schema, "", "")
        .unwrap_err()
        .contains("no set"));
    assert!(SetClause::new(&schema, "", "user &")
        .unwrap_err()
        .contains("bad set"));
    let expand = SetClause::new(&schema, "regex", "[uid=$1,dc=x]/uid & user/uid").unwrap();
    assert!(expand.expand && expand.per_entry && !expand.reads_this);
    let fixed = SetClause::new(&schema, "exact", "[cn=g]/member & user").unwrap();
    assert!(!fixed.per_entry && !fixed.reads_this);
    let this = SetClause::new(&schema, "", "this/manager & user").unwrap();
    assert!(this.per_entry && this.reads_this);
    let only_dn = SetClause::new(&schema, "", "this/-1 & user/-1").unwrap();
    assert!(only_dn.per_entry && !only_dn.reads_this);
}

#[test]
fn clauses_evaluate_through_the_group_reader() {
    let schema = Schema::builtin();
    let t = sample(&schema);
    let reader = ViaGroups(&t);
    let this = ndn(&schema, ALICE);
    let bob = ndn(&schema, BOB);
    let clause = SetClause::new(&schema, "", "this/manager & user").unwrap();
    let ctx = SetContext {
        schema: &schema,
        user: Some(&bob),
        this: &this,
        this_entry: None,
        reader: &reader,
    };
    assert_eq!(
        clause.evaluate(&ctx, None).unwrap(),
        [BOB.as_bytes().to_vec()]
    );
    // An expanded pattern is parsed per entry; one that is no expression gives up.
    let expand = SetClause::new(&schema, "expand", "[$1]/manager & user").unwrap();
    assert_eq!(
        expand
            .evaluate(&ctx, Some(&format!("[{ALICE}]/manager & user")))
            .unwrap(),
        [BOB.as_bytes().to_vec()]
    );
    assert!(matches!(
        expand.evaluate(&ctx, Some("[x]/manager &")),
        Err(SetFailure::Syntax(_))
    ));
    // Anonymous: slapd has no DN for `user`, and the whole expression gives up.
    let anonymous = SetContext { user: None, ..ctx };
    assert_eq!(
        clause.evaluate(&anonymous, None),
        Err(SetFailure::Anonymous)
    );
    // The group reader searches no URLs: a URL names no entry here.
    let url = SetClause::new(&schema, "", "[ldap:///dc=example,dc=com??sub]/uid").unwrap();
    assert_eq!(
        url.evaluate(&anonymous, None).unwrap(),
        Vec::<Vec<u8>>::new()
    );
}

#[test]
fn the_entry_at_hand_is_read_from_the_check() {
    let schema = Schema::builtin();
    let t = sample(&schema);
    let clause = SetClause::new(&schema, "", "this/description").unwrap();
    let dn = "uid=new,ou=people,dc=example,dc=com";
    let this = ndn(&schema, dn);
    let entry = Entry {
        dn: Dn::parse(dn.as_bytes()).unwrap(),
        ndn: this.clone(),
        attrs: vec![Attribute {
            desc: "description".into(),
            values: vec![b"Being  Added".to_vec()],
        }],
    };
    let ctx = SetContext {
        schema: &schema,
        user: None,
        this: &this,
        this_entry: Some(&entry),
        reader: &ViaGroups(&t),
    };
    assert_eq!(
        clause.evaluate(&ctx, None).unwrap(),
        [b"being added".to_vec()]
    );
    assert_eq!(t.reads.get(), 0);
}

fn who(schema: &Schema, dn: &str) -> Who {
    Who {
        dn: dn.into(),
        ndn: Some(ndn(schema, dn)),
        root: false,
        link: Link::default(),
        real: None,
    }
}

#[test]
fn access_lists_decide_with_sets() {
    let schema = Schema::builtin();
    let t = sample(&schema);
    let rules = [
        format!("to dn.exact=\"{STAFF}\" by set=\"[{STAFF}]/member* & user\" write by * read"),
        "to dn.regex=\"^uid=([^,]+),ou=people,dc=example,dc=com$\" attrs=description \
         by set.regex=\"[uid=$1,ou=people,dc=example,dc=com]/manager & user\" write by * read"
            .to_string(),
        "to dn.subtree=\"ou=people,dc=example,dc=com\" by set=\"this/manager & user\" write \
         by set=\"user/uid & [bob]\" =rc by * none"
            .to_string(),
    ];
    let acl = Acl::compile(&schema, &rules, Vec::new()).unwrap();
    assert!(acl.needs_entry() && acl.reads_directory() && acl.has_expansions());
    let write = privileges::cumulative(privileges::WRITE);
    let read = privileges::cumulative(privileges::READ);
    let decide = |me: &str, dn: &str, attr: AttrRef<'_>| {
        let me = who(&schema, me);
        let checker = acl.checker(&schema, &me, &t);
        let this = ndn(&schema, dn);
        let entry = t.entries.get(&this).cloned();
        let target = Target {
            ndn: &this,
            entry: entry.as_ref(),
        };
        checker.decide(target, attr).mask
    };
    // Carol is a member through the nested group.
    assert_eq!(decide(CAROL, STAFF, AttrRef::Entry), write);
    assert_eq!(decide(BOB, STAFF, AttrRef::Entry), read);
    // $1 from the <what> match: bob manages alice.
    assert_eq!(decide(BOB, ALICE, AttrRef::Attr("description")), write);
    assert_eq!(decide(CAROL, ALICE, AttrRef::Attr("description")), read);
    // this/manager: carol manages bob; bob's own uid gives him =rc elsewhere.
    assert_eq!(decide(CAROL, BOB, AttrRef::Attr("cn")), write);
    assert_eq!(
        decide(BOB, CAROL, AttrRef::Attr("cn")),
        privileges::READ | privileges::COMPARE
    );
    assert_eq!(decide(ALICE, BOB, AttrRef::Attr("cn")), 0);
    let two = Acl::compile(
        &schema,
        &["to * by set=\"user\" set=\"this\" read".to_string()],
        Vec::new(),
    );
    assert!(two.unwrap_err().contains("set attribute already specified"));
}
