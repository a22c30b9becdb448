//! A generated matrix for the clauses of issue 34 (`dnattr=`, the `real...` forms, `dn.level{n}` in
//! `<who>`, `attrs=!objectClass`, `$N` references): rule lists drawn by a seeded generator from those
//! families, each run on a fixed tree (people, a group with members and an owner, nested OUs) by
//! every kind of requester (anonymous, the root DN, a member, a non-member, the entry itself) with
//! searches, compares and modifies. The transcript is recorded from slapd
//! (`CANOPY_E2E_BLESS=1 CANOPY_E2E_TARGET=slapd`), so Canopy must answer every request as slapd does.

use canopy_e2e::*;

const SUFFIX: &str = "dc=example,dc=com";
const GROUP: &str = "cn=engineering,ou=groups,dc=example,dc=com";
const LEAD: &str = "cn=lead,ou=apollo,ou=projects,dc=example,dc=com";
const DOCS: &str = "cn=docs,ou=apollo,ou=projects,dc=example,dc=com";

/// How many rule lists the generator draws, and its seed (a change of either needs a new blessing).
const CASES: usize = 24;
const SEED: u64 = 0x0034_ac10_0034_5eed;

/// xorshift64*: the same numbers everywhere, with no dependency.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// `<what>` parts: negated classes, and the DN forms to mix them with (slapd 2.5 refuses
/// `dn.level{n}` in `<what>`; it is tested in `<who>` only).
const WHATS: [&str; 12] = [
    "dn.base=ou=projects,dc=example,dc=com",
    "dn.children=ou=projects,dc=example,dc=com",
    "dn.one=ou=groups,dc=example,dc=com",
    "dn.subtree=ou=people,dc=example,dc=com",
    "attrs=!person",
    "attrs=!groupOfNames",
    "dn.subtree=ou=projects,dc=example,dc=com attrs=!organizationalRole",
    "dn.one=ou=people,dc=example,dc=com attrs=!inetOrgPerson",
    "dn.subtree=ou=groups,dc=example,dc=com attrs=!organizationalUnit,description",
    r#"dn.regex="^(.+,)?uid=([^,]+),ou=people,dc=example,dc=com$""#,
    r#"dn.regex="^cn=([^,]+),ou=(groups|apollo),.*$" attrs=!organizationalRole"#,
    "*",
];

/// `<who>` parts: the new clauses (`$N` references among them), and the old ones they resemble.
const WHOS: [&str; 19] = [
    "dnattr=member",
    "dnattr=owner",
    "dnattr=roleOccupant",
    "realdnattr=member",
    "realanonymous",
    "realusers",
    "realself",
    "realdn.exact=uid=alice,ou=people,dc=example,dc=com",
    "realdn.level{1}=ou=people,dc=example,dc=com",
    "dn.level{1}=ou=people,dc=example,dc=com",
    "dn.level{0}=uid=carol,ou=people,dc=example,dc=com",
    "dn.level{2}=dc=example,dc=com",
    "self",
    "users",
    r#"dn.exact,expand="uid=$2,ou=people,dc=example,dc=com""#,
    r#"dn.regex="^uid=$1,ou=people,dc=example,dc=com$""#,
    r#"realdn.exact,expand="$0""#,
    r#"dn.children,expand="$1""#,
    r#"dn.one,expand="ou=$2,dc=example,dc=com""#,
];

const LEVELS: [&str; 6] = ["none", "compare", "search", "read", "write", "=rc"];

/// One generated list: passwords stay usable for binds, then 2 or 3 drawn rules, then a last rule
/// drawn from a few shapes (so that what the drawn rules leave is sometimes visible, sometimes not).
fn rules(draw: &mut Draw, whos: &[&str]) -> Vec<String> {
    let mut list = vec!["to attrs=userPassword by anonymous auth by * none".to_string()];
    for _ in 0..2 + draw.next() % 2 {
        let mut rule = format!("to {}", draw.pick(&WHATS));
        for _ in 0..1 + draw.next() % 3 {
            rule.push_str(&format!(" by {} {}", draw.pick(whos), draw.pick(&LEVELS)));
            if draw.next() % 4 == 0 {
                rule.push_str(if draw.next() % 2 == 0 {
                    " break"
                } else {
                    " continue"
                });
            }
        }
        list.push(rule);
    }
    list.push(
        draw.pick(&[
            "to * by * read",
            "to * by users read by * search",
            "to * by dnattr=member write by * read",
            "to * by realself write by realusers read",
        ])
        .to_string(),
    );
    list
}

/// The requesters: anonymous, the root DN, a member of the group (and the role's occupant), a
/// non-member (the group's owner), and bob, who is also an entry the requests touch.
fn requesters() -> [(&'static str, Bind); 5] {
    [
        ("anonymous", Bind::Anonymous),
        ("root", Bind::Root),
        ("alice (member)", Bind::user("alice")),
        ("carol (non-member, owner)", Bind::user("carol")),
        ("bob (member, the entry itself)", Bind::user("bob")),
    ]
}

fn replace(dn: &str, attr: &str, value: &str) -> String {
    format!("dn: {dn}\nchangetype: modify\nreplace: {attr}\n{attr}: {value}\n-\n")
}

#[test]
fn generated_rules_decide_as_slapd() {
    let mut draw = Draw(SEED);
    let mut t = Transcript::new("acl_matrix");
    for case in 0..CASES {
        let list = rules(&mut draw, &WHOS);
        exercise(&mut t, case, &list);
    }
    t.check();
}

/// `set=` clauses (slapd's set language) for the same matrix: group and owner lookups, `this`,
/// `user`, parents, `$N` references, and the three joins.
const SET_WHOS: [&str; 14] = [
    r#"set="[cn=engineering,ou=groups,dc=example,dc=com]/member & user""#,
    r#"set="this/member & user""#,
    r#"set="this/owner | this/member & user""#,
    r#"set="this/owner | (this/member & user)""#,
    r#"set="user/uid & [alice]""#,
    r#"set="[uid=] + this/uid + [,ou=people,dc=example,dc=com] & user""#,
    r#"set="this/-1 & [ou=apollo,ou=projects,dc=example,dc=com]""#,
    r#"set="this & user""#,
    r#"set="(this/member | this/owner)/uid & [bob]""#,
    r#"set.expand="[uid=$2,ou=people,dc=example,dc=com] & user""#,
    r#"set.regex="[$0]/member* & user""#,
    r#"set="this/entryDN & user/-1""#,
    r#"set="user/-1 & this/-1""#,
    r#"set="[cn=engineering,ou=groups,dc=example,dc=com]/member/uid + [x] & [bobx]""#,
];
const SET_CASES: usize = 16;
const SET_SEED: u64 = 0x5e75_0034_ac1d_5e75;

#[test]
fn generated_set_rules_decide_as_slapd() {
    let mut draw = Draw(SET_SEED);
    let mut t = Transcript::new("acl_matrix_sets");
    for case in 0..SET_CASES {
        let list = rules(&mut draw, &SET_WHOS);
        exercise(&mut t, case, &list);
    }
    t.check();
}

/// Runs one rule list: a server with it, the group's owner set, and every requester's requests.
fn exercise(t: &mut Transcript, case: usize, list: &[String]) {
    let attrs = [
        "cn",
        "description",
        "member",
        "owner",
        "roleOccupant",
        "objectClass",
        "ou",
        "mail",
    ];
    let texts: Vec<&str> = list.iter().map(String::as_str).collect();
    let s = Server::start_with_access(&texts);
    t.text(&format!("case {case}: rules"), &list.join("\n"));
    // The group gets an owner (carol): dnattr=owner then lists someone who is no member.
    s.modify(
        &Bind::Root,
        &format!(
            "dn: {GROUP}\nchangetype: modify\nadd: owner\nowner: {}\n-\n",
            user_dn("carol")
        ),
    )
    .expect_code(0, "the root DN adds the group's owner");
    for (who, bind) in requesters() {
        let at = |what: &str| format!("case {case}, {who}: {what}");
        for base in [
            "ou=groups,dc=example,dc=com",
            "ou=projects,dc=example,dc=com",
        ] {
            let mut args = vec!["-b", base, "(objectClass=*)"];
            args.extend_from_slice(&attrs);
            t.section(&at(&format!("search {base}")), &s.search(&bind, &args));
        }
        t.section(
            &at("read bob"),
            &s.read(&bind, &user_dn("bob"), &["cn", "mail", "description"]),
        );
        // A filter on an attribute the rules may hide.
        t.section(
            &at("search member=alice"),
            &s.search(
                &bind,
                &[
                    "-b",
                    SUFFIX,
                    &format!("(member={})", user_dn("alice")),
                    "1.1",
                ],
            ),
        );
        for (dn, assertion) in [(GROUP, "cn:engineering"), (LEAD, "cn:lead")] {
            let out = s.tool("ldapcompare", &bind, &[dn, assertion], None);
            t.raw(&at(&format!("compare {assertion}")), &out);
        }
        for dn in [GROUP, DOCS, user_dn("bob").as_str()] {
            let value = format!("c{case}-{}", who.split(' ').next().unwrap_or(who));
            let out = s.modify(&bind, &replace(dn, "description", &value));
            t.raw(&at(&format!("modify {dn}")), &out);
        }
    }
}

/// `canopy acl-check` says what a `dnattr` clause saw, and which identity a `real...` form tested.
#[test]
fn acl_check_explains_the_new_clauses() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: `canopy acl-check` is canopy's own");
        return;
    }
    let s = Server::start_with_access(&[
        "to attrs=userPassword by anonymous auth by * none",
        "to dn.one=ou=groups,dc=example,dc=com by dnattr=member write by realdnattr=owner read by * none",
        r#"to dn.regex="^uid=([^,]+),ou=people,dc=example,dc=com$" attrs=description
            by dn.exact,expand="uid=$1,ou=people,dc=example,dc=com" write by * none"#,
        "to * by realusers read",
    ]);
    s.modify(
        &Bind::Root,
        &format!(
            "dn: {GROUP}\nchangetype: modify\nadd: owner\nowner: {}\n-\n",
            user_dn("carol")
        ),
    )
    .expect_code(0, "the root DN adds the group's owner");
    let config = s.dir().join("canopy.toml");
    let check_at = |who: &str, entry: &str, level: &str| {
        let mut cmd = canopy_e2e::server::canopy_command();
        cmd.arg("acl-check")
            .arg("--config")
            .arg(&config)
            .arg("--data")
            .arg(s.data_dir())
            .args(["--as", &user_dn(who), "--entry", entry])
            .args(["--attr", "description", "--level", level]);
        client::run(cmd, None)
    };
    let check = |who: &str, level: &str| check_at(who, GROUP, level);
    let out = check("alice", "write");
    out.expect_code(0, "a member writes the group");
    for needle in [
        "by clause 0 matched: by dnattr=member write",
        "dnattr=member: the requester's DN is a value of member in the entry",
        "write access to description: ALLOWED",
    ] {
        assert!(
            out.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            out.stdout
        );
    }
    let out = check("carol", "write");
    out.expect_code(1, "the owner does not write the group");
    for needle in [
        "by clause 1 matched: by realdnattr=owner read",
        "dnattr=owner: the requester's DN is a value of owner in the entry (real: the bound identity",
        "granted: read",
    ] {
        assert!(out.stdout.contains(needle), "missing {needle:?} in\n{}", out.stdout);
    }
    let out = check_at("bob", &user_dn("bob"), "write");
    out.expect_code(0, "bob writes his own description");
    let filled = format!(
        "uid=$1,ou=people,dc=example,dc=com: the $N references filled in for this entry give {:?}",
        user_dn("bob")
    );
    assert!(
        out.stdout.contains(&filled),
        "missing {filled:?} in\n{}",
        out.stdout
    );
    check_at("bob", &user_dn("alice"), "write").expect_code(1, "bob writes alice's description");
    let out = check("dave", "read");
    out.expect_code(1, "neither member nor owner reads the group");
    assert!(
        out.stdout.contains("by clause 2 matched: by * none")
            && out
                .stdout
                .contains("the requester's DN is not a value of member"),
        "{}",
        out.stdout
    );
}
