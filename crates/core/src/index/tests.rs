//! Index key and plan tests, including a model check: plans never miss an entry the filter matches.

use std::collections::{BTreeSet, HashMap};
use std::ops::RangeBounds;

use canopy_proto::{Filter, SubstringFilter};
use canopy_schema::Schema;

use super::*;
use crate::filter::testutil::entry;
use crate::filter::{evaluate, Ternary};

fn spec(attr: &str, eq: bool, pres: bool, sub: bool) -> IndexSpec {
    IndexSpec {
        attr: attr.to_string(),
        eq,
        pres,
        sub,
        ord: false,
        approx: false,
    }
}

fn with(mut spec: IndexSpec, ord: bool, approx: bool) -> IndexSpec {
    spec.ord = ord;
    spec.approx = approx;
    spec
}

fn specs() -> Vec<IndexSpec> {
    vec![
        spec("objectClass", true, false, false),
        with(spec("cn", true, true, true), false, true),
        spec("sn", true, false, true),
        with(spec("uidNumber", true, true, false), true, false),
        with(spec("gidNumber", false, false, false), true, false),
        with(spec("createTimestamp", false, false, false), true, false),
        with(spec("mail", false, true, false), false, true),
        spec("name", false, false, true),
    ]
}

fn key(tag: u8, payload: &str) -> Vec<u8> {
    tagged(tag, payload.as_bytes())
}

#[test]
fn keys_of_an_entry() {
    let schema = Schema::builtin();
    let e = entry(
        &schema,
        "dn: cn=Ab Cd,dc=x
         objectClass: inetOrgPerson
         cn: Ab Cd
         cn;lang-en: XY
         sn: Q",
    );
    let got = entry_keys(&schema, &spec("cn", true, true, true), &e);
    let mut want = vec![
        vec![TAG_PRESENT],
        key(TAG_EQUALITY, "ab cd"),
        key(TAG_EQUALITY, "xy"),
        key(TAG_SUBSTR_INITIAL, "ab"),
        key(TAG_SUBSTR_INITIAL, "abc"),
        key(TAG_SUBSTR_INITIAL, "xy"),
        key(TAG_SUBSTR_FINAL, "cd"),
        key(TAG_SUBSTR_FINAL, "bcd"),
        key(TAG_SUBSTR_FINAL, "xy"),
        key(TAG_SUBSTR_ANY, "abc"),
        key(TAG_SUBSTR_ANY, "bcd"),
    ];
    want.sort();
    assert_eq!(got, want);
    // An index on a supertype holds its subtypes' values.
    let name_keys = entry_keys(&schema, &spec("name", true, false, false), &e);
    assert!(name_keys.contains(&key(TAG_EQUALITY, "q")));
    assert!(name_keys.contains(&key(TAG_EQUALITY, "ab cd")));
    // objectClass is indexed under the OIDs of the whole superclass chain.
    let oc = entry_keys(&schema, &spec("objectClass", true, false, false), &e);
    for oid in ["2.16.840.1.113730.3.2.2", "2.5.6.7", "2.5.6.6", "2.5.6.0"] {
        assert!(oc.contains(&key(TAG_EQUALITY, oid)), "{oid}");
    }
    assert!(entry_keys(&schema, &spec("mail", true, true, true), &e).is_empty());
    assert!(entry_keys(&schema, &spec("noSuchType", true, true, true), &e).is_empty());
}

#[test]
fn plan_table() {
    let schema = Schema::builtin();
    let specs = specs();
    let cn = |keys: Vec<Vec<u8>>| Plan::Keys {
        attr: "cn".into(),
        keys,
    };
    let table: Vec<(&str, Plan)> = vec![
        ("(cn=Ab  Cd)", cn(vec![key(TAG_EQUALITY, "ab cd")])),
        ("(commonName=x)", cn(vec![key(TAG_EQUALITY, "x")])),
        ("(cn;lang-en=x)", cn(vec![key(TAG_EQUALITY, "x")])),
        ("(foo=x)", Plan::Empty),
        ("(uidNumber=abc)", Plan::Empty),
        ("(&(cn=x)(foo=y))", Plan::Empty),
        ("(|(cn=x)(foo=y))", cn(vec![key(TAG_EQUALITY, "x")])),
        ("(!(cn=x))", Plan::All),
        ("(description=x)", Plan::All),
        ("(&(cn=x)(description=y))", cn(vec![key(TAG_EQUALITY, "x")])),
        ("(|(cn=x)(description=y))", Plan::All),
        ("(cn=*)", cn(vec![vec![TAG_PRESENT]])),
        (
            "(uidNumber>=5)",
            Plan::Range {
                attr: "uidNumber".into(),
                from: Bound::Included(key(TAG_ORDERING, "\x02\0\0\0\x015")),
                to: Bound::Excluded(vec![TAG_ORDERING + 1]),
            },
        ),
        (
            "(gidNumber<=-5)",
            Plan::Range {
                attr: "gidNumber".into(),
                from: Bound::Included(vec![TAG_ORDERING]),
                to: Bound::Included(tagged(
                    TAG_ORDERING,
                    &[1, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF - b'5'],
                )),
            },
        ),
        (
            "(createTimestamp>=202001011200+0100)",
            Plan::Range {
                attr: "createTimestamp".into(),
                from: Bound::Included(key(TAG_ORDERING, "20200101110000")),
                to: Bound::Excluded(vec![TAG_ORDERING + 1]),
            },
        ),
        ("(sn>=5)", Plan::Empty),
        ("(cn~=x)", cn(vec![key(TAG_APPROX, "S")])),
        (
            "(cn~=Jon  Smith jon)",
            cn(vec![key(TAG_APPROX, "JN"), key(TAG_APPROX, "SM0")]),
        ),
        ("(cn~=\\e6\\bc\\a2)", Plan::Empty),
        ("(sn~=x)", Plan::All),
        (
            "(uidNumber~=5)",
            Plan::Keys {
                attr: "uidNumber".into(),
                keys: vec![key(TAG_EQUALITY, "5")],
            },
        ),
        ("(cn:caseExactMatch:=x)", cn(vec![vec![TAG_PRESENT]])),
        ("(cn:dn:=x)", Plan::All),
        // Initial parts also become a prefix range of the equality keys.
        ("(cn=a*)", prefixed("a", "b", cn(vec![vec![TAG_PRESENT]]))),
        (
            "(cn=ab*)",
            prefixed("ab", "ac", cn(vec![key(TAG_SUBSTR_INITIAL, "ab")])),
        ),
        (
            "(cn=A B*)",
            prefixed("a b", "a c", cn(vec![key(TAG_SUBSTR_INITIAL, "ab")])),
        ),
        (
            "(cn=abcd*)",
            prefixed(
                "abcd",
                "abce",
                cn(vec![
                    key(TAG_SUBSTR_INITIAL, "abc"),
                    key(TAG_SUBSTR_ANY, "abc"),
                    key(TAG_SUBSTR_ANY, "bcd"),
                ]),
            ),
        ),
        // A part ending in a space is left to the substring keys.
        ("(cn=ab *)", cn(vec![key(TAG_SUBSTR_INITIAL, "ab")])),
        (
            "(cn=*bcd)",
            cn(vec![
                key(TAG_SUBSTR_FINAL, "bcd"),
                key(TAG_SUBSTR_ANY, "bcd"),
            ]),
        ),
        ("(cn=*xyz*)", cn(vec![key(TAG_SUBSTR_ANY, "xyz")])),
        ("(sn=*xy*)", Plan::All),
        ("(cn=*x*y*)", cn(vec![vec![TAG_PRESENT]])),
        (
            "(objectClass=person)",
            Plan::Keys {
                attr: "objectClass".into(),
                keys: vec![key(TAG_EQUALITY, "2.5.6.6")],
            },
        ),
        (
            "(mail=x)",
            Plan::Keys {
                attr: "mail".into(),
                keys: vec![vec![TAG_PRESENT]],
            },
        ),
        (
            "(mail=*x*)",
            Plan::Keys {
                attr: "mail".into(),
                keys: vec![vec![TAG_PRESENT]],
            },
        ),
        (
            "(name=*xyz*)",
            Plan::Keys {
                attr: "name".into(),
                keys: vec![key(TAG_SUBSTR_ANY, "xyz")],
            },
        ),
        ("(name=x)", Plan::All),
    ];
    fn prefixed(from: &str, to: &str, grams: Plan) -> Plan {
        Plan::And(vec![
            Plan::Range {
                attr: "cn".into(),
                from: std::ops::Bound::Included(key(TAG_EQUALITY, from)),
                to: std::ops::Bound::Excluded(key(TAG_EQUALITY, to)),
            },
            grams,
        ])
    }
    for (filter, expected) in table {
        let got = plan(&schema, &specs, &Filter::parse(filter).unwrap());
        assert_eq!(got, expected, "{filter}");
    }
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn text(&mut self, max: usize) -> String {
        let len = 1 + self.below(max);
        (0..len)
            .map(|_| self.pick(&["a", "b", "A", "B", " ", "é", "É", "c"]))
            .collect()
    }
    fn part(&mut self) -> Vec<u8> {
        self.text(3).into_bytes()
    }
}

const INTEGERS: [&str; 9] = [
    "0",
    "-1",
    "7",
    "-25",
    "300",
    "99999999999999999999",
    "-100000000000000000000",
    "12",
    "-3",
];

const TIMES: [&str; 7] = [
    "20200101120000Z",
    "202001011200Z",
    "20200101115959.5Z",
    "20200101130000+0100",
    "2020010112Z",
    "19991231235959.999Z",
    "20200101120000.25Z",
];

fn random_entry(schema: &Schema, rng: &mut Rng, id: usize) -> Entry {
    let mut text = format!("dn: cn=e{id},dc=x\n");
    let class = rng.pick(&[
        "person",
        "inetOrgPerson",
        "organizationalPerson",
        "top\nobjectClass: person",
    ]);
    text.push_str(&format!("objectClass: {class}\ncn: e{id}\n"));
    for _ in 0..rng.below(3) {
        text.push_str(&format!("cn: {}\n", rng.text(6).trim()));
    }
    if rng.below(2) == 0 {
        text.push_str(&format!("cn;lang-en: {}\n", rng.text(5).trim()));
    }
    if rng.below(3) > 0 {
        text.push_str(&format!("sn: {}\n", rng.text(5).trim()));
    }
    if rng.below(2) == 0 {
        text.push_str(&format!(
            "uidNumber: {}\n",
            rng.pick(&["1", "20", "300", "1000"])
        ));
    }
    if rng.below(2) == 0 {
        text.push_str(&format!("gidNumber: {}\n", rng.pick(&INTEGERS)));
    }
    if rng.below(2) == 0 {
        text.push_str(&format!("createTimestamp: {}\n", rng.pick(&TIMES)));
    }
    if rng.below(2) == 0 {
        text.push_str(&format!("mail: {}@x\n", rng.pick(&["a", "B", "ab"])));
    }
    if rng.below(2) == 0 {
        text.push_str(&format!("description: {}\n", rng.text(6).trim()));
    }
    // Values that trim to nothing would be empty; keep one visible character.
    let text = text.replace(": \n", ": a\n");
    entry(schema, &text)
}

fn random_filter(rng: &mut Rng, depth: usize) -> Filter {
    let attrs = [
        "cn",
        "CN",
        "name",
        "sn",
        "cn;lang-en",
        "uidNumber",
        "mail",
        "description",
        "foo",
    ];
    let kind = if depth == 0 {
        3 + rng.below(7)
    } else {
        rng.below(10)
    };
    let attr = rng.pick(&attrs).to_string();
    match kind {
        0 => Filter::And(
            (0..rng.below(3) + 1)
                .map(|_| random_filter(rng, depth - 1))
                .collect(),
        ),
        1 => Filter::Or(
            (0..rng.below(3) + 1)
                .map(|_| random_filter(rng, depth - 1))
                .collect(),
        ),
        2 => Filter::Not(Box::new(random_filter(rng, depth - 1))),
        3 => Filter::Equality(attr, rng.text(4).into_bytes()),
        4 => {
            let class = rng.pick(&[
                "person",
                "inetOrgPerson",
                "organizationalPerson",
                "top",
                "2.5.6.6",
                "organization",
            ]);
            Filter::Equality("objectClass".into(), class.as_bytes().to_vec())
        }
        5 => Filter::Substrings(SubstringFilter {
            attr,
            initial: (rng.below(2) == 0).then(|| rng.part()),
            any: (0..rng.below(3)).map(|_| rng.part()).collect(),
            final_: (rng.below(2) == 0).then(|| rng.part()),
        }),
        6 => Filter::Present(attr),
        7 => {
            let (attr, value) = match rng.below(3) {
                0 => ("uidNumber", rng.pick(&["1", "25", "1000"])),
                1 => ("gidNumber", rng.pick(&INTEGERS)),
                _ => ("createTimestamp", rng.pick(&TIMES)),
            };
            let value = value.as_bytes().to_vec();
            if rng.below(2) == 0 {
                Filter::GreaterOrEqual(attr.into(), value)
            } else {
                Filter::LessOrEqual(attr.into(), value)
            }
        }
        8 => {
            let words = ["ab", "ba", "c", "abc", "b", "éa", "12", "x.y", "漢"];
            let value: Vec<&str> = (0..rng.below(3) + 1).map(|_| rng.pick(&words)).collect();
            Filter::Approx(attr, value.join(" ").into_bytes())
        }
        _ => {
            let value = format!("e{}", rng.below(40));
            Filter::Equality(attr, value.into_bytes())
        }
    }
}

fn run(
    plan: &Plan,
    index: &HashMap<(String, Vec<u8>), BTreeSet<usize>>,
    all: &BTreeSet<usize>,
) -> BTreeSet<usize> {
    match plan {
        Plan::All => all.clone(),
        Plan::Empty => BTreeSet::new(),
        Plan::Keys { attr, keys } => {
            let mut result = all.clone();
            for k in keys {
                let ids = index
                    .get(&(attr.clone(), k.clone()))
                    .cloned()
                    .unwrap_or_default();
                result = result.intersection(&ids).copied().collect();
            }
            result
        }
        Plan::Range { attr, from, to } => {
            let bounds = (from.clone(), to.clone());
            index
                .iter()
                .filter(|((a, k), _)| a == attr && bounds.contains(k))
                .flat_map(|(_, ids)| ids.iter().copied())
                .collect()
        }
        Plan::And(parts) => parts.iter().fold(all.clone(), |acc, p| {
            acc.intersection(&run(p, index, all)).copied().collect()
        }),
        Plan::Or(parts) => parts.iter().fold(BTreeSet::new(), |acc, p| {
            acc.union(&run(p, index, all)).copied().collect()
        }),
    }
}

#[test]
fn plans_are_supersets_of_matches() {
    let schema = Schema::builtin();
    let specs = specs();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut narrowed = 0;
    for round in 0..40 {
        let entries: Vec<Entry> = (0..40)
            .map(|id| random_entry(&schema, &mut rng, id))
            .collect();
        let mut index: HashMap<(String, Vec<u8>), BTreeSet<usize>> = HashMap::new();
        for (id, e) in entries.iter().enumerate() {
            for s in &specs {
                for k in entry_keys(&schema, s, e) {
                    index.entry((s.attr.clone(), k)).or_default().insert(id);
                }
            }
        }
        let all: BTreeSet<usize> = (0..entries.len()).collect();
        for _ in 0..60 {
            let filter = random_filter(&mut rng, 3);
            let p = plan(&schema, &specs, &filter);
            let candidates = run(&p, &index, &all);
            if candidates.len() < all.len() {
                narrowed += 1;
            }
            for (id, e) in entries.iter().enumerate() {
                if evaluate(&schema, e, &[], &filter) == Ternary::True {
                    assert!(
                        candidates.contains(&id),
                        "round {round}: {filter:?} matches {e:?} but plan {p:?} misses it"
                    );
                }
            }
        }
    }
    // The plans must also be useful, not just All.
    assert!(
        narrowed > 400,
        "only {narrowed} plans narrowed the candidates"
    );
}

#[test]
fn long_values_get_bounded_keys_that_plans_still_find() {
    let schema = Schema::builtin();
    let long = "x".repeat(5000);
    let other = format!("{}y", "x".repeat(4999));
    let e = entry(
        &schema,
        &format!("dn: cn=a,dc=x\n objectClass: person\n cn: a\n sn: {long}"),
    );
    let keys = entry_keys(&schema, &spec("sn", true, false, false), &e);
    assert!(
        keys.iter().all(|k| k.len() <= MAX_KEY_PAYLOAD + 1),
        "keys are bounded"
    );
    // The assertion's key is cut the same way, so the entry is a candidate for its own value, and a value
    // sharing the first bytes gives the same (superset) candidates; the filter test tells them apart.
    for value in [&long, &other] {
        let filter = Filter::Equality("sn".into(), value.as_bytes().to_vec());
        match plan(&schema, &specs(), &filter) {
            Plan::Keys { keys: wanted, .. } => assert!(wanted.iter().all(|k| keys.contains(k))),
            other => panic!("expected an index plan, got {other:?}"),
        }
    }
    let miss = Filter::Equality("sn".into(), other.into_bytes());
    assert_eq!(evaluate(&schema, &e, &[], &miss), Ternary::False);
}
