//! Unit tests of the set language: parsing (what slapd's evaluator accepts and refuses) and
//! evaluation over a small in-memory directory: values, DN steps, URLs, bounds and failures.

use std::collections::HashMap;

use canopy_proto::{Dn, ResultCode};
use canopy_schema::{NormDn, Schema};

use super::*;
use crate::{Attribute, Entry, LdapError};

fn ndn(schema: &Schema, text: &str) -> NormDn {
    schema
        .normalize_dn(&Dn::parse(text.as_bytes()).unwrap())
        .unwrap()
}

/// A directory in memory; counts its reads. Its URL searches take every entry below the URL's base
/// (the filter and scope are the caller's business, not the language's).
struct Tree {
    entries: Vec<Entry>,
    by_dn: HashMap<NormDn, usize>,
    reads: std::cell::Cell<usize>,
    broken: bool,
}

impl SetReader for Tree {
    fn entry(&self, ndn: &NormDn) -> Result<Option<Entry>, LdapError> {
        if self.broken {
            return Err(LdapError::new(ResultCode::Other, "store unreadable"));
        }
        self.reads.set(self.reads.get() + 1);
        Ok(self.by_dn.get(ndn).map(|i| self.entries[*i].clone()))
    }

    fn search(&self, url: &str, found: &mut dyn FnMut(&Entry) -> bool) -> Result<(), LdapError> {
        let schema = Schema::builtin();
        let base = url["ldap:///".len()..].split('?').next().unwrap_or("");
        let base = ndn(&schema, base);
        for entry in &self.entries {
            if base.is_suffix_of(&entry.ndn) && !found(entry) {
                break;
            }
        }
        Ok(())
    }
}

/// A directory from LDIF-like text: a DN at the start of a line, then ` attr: value` lines.
fn tree(schema: &Schema, text: &str) -> Tree {
    let mut entries: Vec<Entry> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some(pair) = line.strip_prefix(' ') else {
            entries.push(Entry {
                dn: Dn::parse(line.as_bytes()).unwrap(),
                ndn: ndn(schema, line),
                attrs: Vec::new(),
            });
            continue;
        };
        let (desc, value) = pair.split_once(": ").unwrap();
        let entry = entries.last_mut().unwrap();
        match entry.attrs.iter_mut().find(|a| a.desc == desc) {
            Some(a) => a.values.push(value.as_bytes().to_vec()),
            None => entry.attrs.push(Attribute {
                desc: desc.to_string(),
                values: vec![value.as_bytes().to_vec()],
            }),
        }
    }
    let by_dn = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.ndn.clone(), i))
        .collect();
    Tree {
        entries,
        by_dn,
        reads: std::cell::Cell::new(0),
        broken: false,
    }
}

const ALICE: &str = "uid=alice,ou=people,dc=example,dc=com";
const BOB: &str = "uid=bob,ou=people,dc=example,dc=com";
const CAROL: &str = "uid=carol,ou=people,dc=example,dc=com";
const STAFF: &str = "cn=staff,ou=groups,dc=example,dc=com";
const INNER: &str = "cn=inner,ou=groups,dc=example,dc=com";

/// People who manage each other in a ring, and two groups that hold each other (a cycle).
const SAMPLE: &str = "
uid=alice,ou=people,dc=example,dc=com
 uid: Alice
 manager: uid=bob,ou=people,dc=example,dc=com
uid=bob,ou=people,dc=example,dc=com
 uid: bob
 manager: UID=Carol,OU=People,DC=Example,DC=Com
uid=carol,ou=people,dc=example,dc=com
 uid: carol
 manager: uid=alice,ou=people,dc=example,dc=com
cn=staff,ou=groups,dc=example,dc=com
 cn: staff
 member: uid=alice,ou=people,dc=example,dc=com
 member: cn=inner,ou=groups,dc=example,dc=com
cn=inner,ou=groups,dc=example,dc=com
 cn: inner
 member: uid=carol,ou=people,dc=example,dc=com
 member: cn=staff,ou=groups,dc=example,dc=com
";

fn sample(schema: &Schema) -> Tree {
    tree(schema, SAMPLE)
}

fn context<'a>(
    schema: &'a Schema,
    tree: &'a Tree,
    user: Option<&'a NormDn>,
    this: &'a NormDn,
) -> SetContext<'a> {
    SetContext {
        schema,
        user,
        this,
        this_entry: None,
        reader: tree,
    }
}

/// The result of `text` for `user` on the entry `this`, as sorted strings.
fn eval(schema: &Schema, tree: &Tree, text: &str, user: Option<&str>, this: &str) -> Vec<String> {
    let expr = parse(schema, text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let user = user.map(|u| ndn(schema, u));
    let this = ndn(schema, this);
    let mut out: Vec<String> = expr
        .evaluate(&context(schema, tree, user.as_ref(), &this))
        .unwrap()
        .into_iter()
        .map(|v| String::from_utf8(v).unwrap())
        .collect();
    out.sort();
    out
}

#[test]
fn parses_what_slapd_evaluates() {
    let schema = Schema::builtin();
    let ok = [
        "user",
        "this",
        "[]",
        "[cn=x, dc=y]/member* & user",
        "user/manager/manager | this",
        "this->member->uid",
        "( user & this ) | ([a] + [b])",
        "user / uid",
        "this/-1",
        "this/-*",
        "this/-0 & user",
        "user/member;x-opt",
        "\tuser\n&\r\nthis ",
        "this/2.5.4.3",
        "(this/givenName + [ ] + this/sn) & this/cn",
        "[ldap:///ou=people,dc=example,dc=com??one]/uid & this/uid",
    ];
    for text in ok {
        parse(&schema, text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    let bad = [
        ("", "at the end"),
        ("user &", "at the end"),
        ("& user", "offset 0"),
        ("user this", "operator"),
        ("user [x]", "operator"),
        ("uid", "needs a \"/\""),
        ("thisx", "needs a \"/\""),
        ("user/noSuchAttr", "unknown attribute type \"noSuchAttr\""),
        ("user/this", "start an expression"),
        ("(user", "\")\""),
        ("user)", "without its"),
        ("[unclosed", "\"]\""),
        ("user/", "attribute name"),
        ("user/-", "attribute name"),
        ("user/-x", "attribute name"),
        ("user/$", "attribute name"),
        ("user-uid", "needs a \"/\""),
        ("user - >uid", "operator"),
        ("user/uid**", "operator"),
        ("This", "needs a \"/\""),
        ("user/uid;", "attribute description"),
    ];
    for (text, why) in bad {
        let err = parse(&schema, text).unwrap_err();
        assert!(err.contains(why), "{text:?}: {err}");
    }
    let deep = format!("{}user{}", "(".repeat(40), ")".repeat(40));
    assert!(parse(&schema, &deep).unwrap_err().contains("nested"));
    // Left to right, no precedence: a | b & c is (a | b) & c.
    let expr = parse(&schema, "[a] | [b] & [c]").unwrap();
    assert!(matches!(
        expr,
        SetExpr::Join(ref left, SetOp::Intersection, _) if matches!(**left, SetExpr::Join(_, SetOp::Union, _))
    ));
    // A path step binds to the term before it: [a] + [b]/uid chases [b] only.
    let expr = parse(&schema, "[a] + [b]/uid").unwrap();
    assert!(
        matches!(expr, SetExpr::Join(_, SetOp::Concat, ref right) if matches!(**right, SetExpr::Chase { .. }))
    );
    // The syntax alone knows no schema: an unknown type is the check's to refuse.
    let expr = parse_syntax("this/noSuchAttr & [x]").unwrap();
    assert!(expr.check(&schema).is_err());
}

#[test]
fn steps_name_their_literals() {
    let expr = parse_syntax("[ldap:///dc=x??sub]/l & this/manager/cn;lang-en | [cn=a]/-1").unwrap();
    let steps: Vec<(String, Option<String>)> = expr
        .steps()
        .into_iter()
        .map(|(attr, of)| {
            (
                attr.text.clone(),
                of.map(|t| String::from_utf8_lossy(t).into_owned()),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("l".to_string(), Some("ldap:///dc=x??sub".to_string())),
            ("cn;lang-en".to_string(), None),
            ("manager".to_string(), None),
        ]
    );
    assert!(is_url(b"LDAP:///dc=x") && !is_url(b"ldap://host/dc=x"));
    let this = parse_syntax("this/manager & user").unwrap();
    assert!(this.mentions_this() && this.reads_this());
    let only_dn = parse_syntax("this/-1 & user/-1").unwrap();
    assert!(only_dn.mentions_this() && !only_dn.reads_this());
    let fixed = parse_syntax("[cn=g]/member & user").unwrap();
    assert!(!fixed.mentions_this() && !fixed.reads_this());
}

#[test]
fn evaluation_follows_slapd() {
    let schema = Schema::builtin();
    let t = sample(&schema);
    let check = |text: &str, user: Option<&str>, this: &str, want: &[&str]| {
        assert_eq!(eval(&schema, &t, text, user, this), want, "{text}");
    };
    // Values come out normalized: DNs as normalized DNs, uid lower-cased.
    check("this/uid", None, ALICE, &["alice"]);
    check("this/0.9.2342.19200300.100.1.1", None, ALICE, &["alice"]);
    check("this/manager", None, BOB, &[CAROL]);
    check("user/manager/manager", Some(ALICE), STAFF, &[CAROL]);
    check("this/manager & user", Some(BOB), ALICE, &[BOB]);
    check("this/manager & user", Some(CAROL), ALICE, &[]);
    // Closure: members of members, through a cycle, the groups themselves included.
    check(
        &format!("[{STAFF}]/member*"),
        None,
        ALICE,
        &[INNER, STAFF, ALICE, CAROL],
    );
    check("this/manager*", None, ALICE, &[ALICE, BOB, CAROL]);
    check(&format!("[{STAFF}]/member"), None, ALICE, &[INNER, ALICE]);
    check("[a] | [b] & [b]", None, ALICE, &["b"]);
    check("[a] | ([b] & [b])", None, ALICE, &["a", "b"]);
    check(
        "([a] | [b]) + ([1] | [])",
        None,
        ALICE,
        &["a", "a1", "b", "b1"],
    );
    check(
        "[uid=] + this/uid + [,ou=people,dc=example,dc=com] & user",
        Some(ALICE),
        ALICE,
        &[ALICE],
    );
    // Literals are compared as written: an upper-case uid is not a normalized value.
    check("this/uid & [Alice]", None, ALICE, &[]);
    check("this/uid & [alice]", None, ALICE, &["alice"]);
    check("this/-1", None, ALICE, &["ou=people,dc=example,dc=com"]);
    check("this/-3", None, ALICE, &["dc=com"]);
    check("this/-9", None, ALICE, &[""]);
    check("[cn=a\\,b, dc=x]/-1", None, ALICE, &["dc=x"]);
    check(
        "this/-*",
        None,
        "ou=people,dc=example,dc=com",
        &[
            "",
            "dc=com",
            "dc=example,dc=com",
            "ou=people,dc=example,dc=com",
        ],
    );
    check(
        "this/entryDN",
        None,
        "UID=Alice,OU=People,DC=Example,DC=Com",
        &[ALICE],
    );
    // URLs: the values in every entry the reader's search finds; entryDN gives their DNs.
    check(
        "[ldap:///ou=people,dc=example,dc=com??sub]/uid",
        None,
        ALICE,
        &["alice", "bob", "carol"],
    );
    check(
        "[LDAP:///ou=groups,dc=example,dc=com??sub]/entryDN & [ldap:///dc=example,dc=com??sub]/member",
        None,
        ALICE,
        &[INNER, STAFF],
    );
    // Anonymous: slapd has no DN for `user`, and the whole expression gives up.
    for text in ["user", "user/uid", "this | user"] {
        let expr = parse(&schema, text).unwrap();
        let this = ndn(&schema, ALICE);
        assert_eq!(
            expr.evaluate(&context(&schema, &t, None, &this)),
            Err(SetFailure::Anonymous),
            "{text}"
        );
    }
    // Names that are no DN, and entries that do not exist, give nothing.
    check(
        "[not a dn]/uid | [cn=nobody,dc=example,dc=com]/uid",
        None,
        ALICE,
        &[],
    );
    check("[]", None, ALICE, &[""]);
}

#[test]
fn the_entry_at_hand_is_read_from_the_caller() {
    let schema = Schema::builtin();
    let t = sample(&schema);
    let expr = parse(&schema, "this/description | this/uid").unwrap();
    // An entry as a write will store it: its values, not the stored ones.
    let this = ndn(&schema, ALICE);
    let entry = Entry {
        dn: Dn::parse(ALICE.as_bytes()).unwrap(),
        ndn: this.clone(),
        attrs: vec![Attribute {
            desc: "description".into(),
            values: vec![b"Being  Added".to_vec()],
        }],
    };
    let ctx = SetContext {
        this_entry: Some(&entry),
        ..context(&schema, &t, None, &this)
    };
    assert_eq!(expr.evaluate(&ctx).unwrap(), [b"being added".to_vec()]);
    assert_eq!(t.reads.get(), 0);
}

#[test]
fn work_is_bounded_and_read_failures_reported() {
    let schema = Schema::builtin();
    // A chain longer than the read budget: each group holds the next.
    let chain: String = (0..MAX_READS + 10)
        .map(|i| {
            format!(
                "cn=g{i},dc=example,dc=com\n member: cn=g{},dc=example,dc=com\n",
                i + 1
            )
        })
        .collect();
    let mut t = tree(&schema, &chain);
    let root = NormDn::root();
    let chain = parse(&schema, "[cn=g0,dc=example,dc=com]/member*").unwrap();
    assert_eq!(
        chain.evaluate(&context(&schema, &t, None, &root)),
        Err(SetFailure::TooManyReads)
    );
    assert_eq!(t.reads.get(), MAX_READS);
    // A URL's search finding more entries than the budget.
    let wide_url = parse(&schema, "[ldap:///dc=example,dc=com??sub]/member").unwrap();
    assert_eq!(
        wide_url.evaluate(&context(&schema, &t, None, &root)),
        Err(SetFailure::TooManyReads)
    );
    // A concatenation past the size limit.
    let wide = format!(
        "({})",
        (0..70)
            .map(|i| format!("[{i}]"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let product = parse(&schema, &format!("{wide} + {wide}")).unwrap();
    assert_eq!(
        product.evaluate(&context(&schema, &t, None, &root)),
        Err(SetFailure::TooLarge)
    );
    // A storage error is the reader's, and says so.
    t.broken = true;
    let failed = chain.evaluate(&context(&schema, &t, None, &root));
    assert!(matches!(failed, Err(SetFailure::Read(ref e)) if e.code == ResultCode::Other));
}

#[test]
fn parents_of_dn_strings() {
    assert_eq!(parent(b"cn=a,dc=x,dc=y"), b"dc=x,dc=y");
    assert_eq!(parent(b"cn=a\\,b,dc=x"), b"dc=x");
    assert_eq!(parent(b"cn=a, dc=x"), b"dc=x");
    assert_eq!(parent(b"dc=y"), b"");
    assert_eq!(parent(b""), b"");
}
