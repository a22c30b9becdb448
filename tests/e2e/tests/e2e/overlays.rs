//! Overlays configured on both servers (slapd: `overlay NAME` in slapd.conf; canopy: `[[overlay]]`
//! tables), driven by the same clients, with the expected files recorded from slapd; and what Canopy
//! does beyond slapd (atomic memberOf after a crash, whole subtrees renamed, every value a move brings
//! checked for uniqueness) on Canopy alone.

use canopy_e2e::*;

const MEMBEROF_SLAPD: &str = "overlay memberof\nmemberof-refint TRUE\nmemberof-dangling error\n";
const MEMBEROF_CANOPY: &str =
    "[[overlay]]\nname = \"memberof\"\nrefint = true\ndangling = \"error\"\n";

fn group_dn(cn: &str) -> String {
    format!("cn={cn},ou=groups,{SUFFIX}")
}

/// memberOf of the people the scenario touches, and the groups' members.
fn snapshot(t: &mut Transcript, s: &Server, title: &str) {
    t.section(
        &format!("{title}: memberOf of the people"),
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &format!("ou=people,{SUFFIX}"),
                "(memberOf=*)",
                "memberOf",
            ],
        ),
    );
    t.section(
        &format!("{title}: the groups"),
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &format!("ou=groups,{SUFFIX}"),
                "(objectClass=groupOfNames)",
                "member",
            ],
        ),
    );
}

#[test]
fn memberof() {
    let s = Server::start_with_overlays(MEMBEROF_SLAPD, MEMBEROF_CANOPY);
    let mut t = Transcript::new("overlays_memberof");
    snapshot(&mut t, &s, "after loading the base");
    t.section(
        "memberOf is operational: not in *",
        &s.read(&Bind::Root, &user_dn("alice"), &["*"]),
    );
    t.section("but in +", &s.read(&Bind::Root, &user_dn("bob"), &["+"]));
    t.section(
        "a new group",
        &s.add(
            &Bind::Root,
            &format!(
                "dn: {}\nobjectClass: groupOfNames\ncn: ops\nmember: {}\nmember: {}\n",
                group_dn("ops"),
                user_dn("carol"),
                user_dn("dave")
            ),
        ),
    );
    t.section(
        "members added and removed",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\ndelete: member\nmember: {}\n-\nadd: member\nmember: {}\n",
                group_dn("engineering"),
                user_dn("bob"),
                user_dn("erin")
            ),
        ),
    );
    t.section(
        "members replaced",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nreplace: member\nmember: {}\nmember: {}\n",
                group_dn("ops"),
                user_dn("dave"),
                user_dn("frank")
            ),
        ),
    );
    snapshot(&mut t, &s, "after the group changes");
    t.section(
        "a group renamed",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &["-r", &group_dn("engineering"), "cn=eng"],
            None,
        ),
    );
    t.section(
        "a member renamed (memberof-refint)",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &["-r", &user_dn("dave"), "uid=david"],
            None,
        ),
    );
    t.section(
        "a member deleted (memberof-refint)",
        &s.tool("ldapdelete", &Bind::Root, &[&user_dn("frank")], None),
    );
    snapshot(&mut t, &s, "after the renames and the delete");
    t.section(
        "a group deleted",
        &s.tool("ldapdelete", &Bind::Root, &[&group_dn("ops")], None),
    );
    t.section(
        "a member that does not exist (memberof-dangling error)",
        &s.add(
            &Bind::Root,
            &format!(
                "dn: {}\nobjectClass: groupOfNames\ncn: ghosts\nmember: uid=ghost,ou=people,{SUFFIX}\n",
                group_dn("ghosts")
            ),
        ),
    );
    t.section(
        "search by memberOf",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                &format!("(memberOf={})", group_dn("eng")),
                "1.1",
            ],
        ),
    );
    t.section(
        "memberOf cannot be written by clients",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nadd: memberOf\nmemberOf: {}\n",
                user_dn("ivan"),
                group_dn("staff")
            ),
        ),
    );
    snapshot(&mut t, &s, "at the end");
    t.check();
}

/// memberOf values of every entry under the suffix, and the members every group lists, normalized
/// to lower case: after any sequence of writes the first must be the second turned around.
/// Streams `ldif` into one ldapmodify (with `extra` options) as the root DN, kills the server with -9
/// 300 ms in, and checks that the kill interrupted the stream of `what`. The server is left stopped.
fn kill_9_during(s: &mut Server, ldif: String, extra: &[&str], what: &str) {
    let url = s.ldap_url();
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["-H", &url, "-x", "-D", ROOT_DN, "-w", ROOT_PW]);
    let mut child = std::process::Command::new("ldapmodify")
        .args(&args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ldapmodify");
    let mut stdin = child.stdin.take().unwrap();
    // Fed from another thread: the stream is larger than a pipe holds.
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(ldif.as_bytes());
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.kill9();
    let status = child.wait().expect("ldapmodify");
    let _ = feeder.join();
    assert!(
        !status.success(),
        "the stream of {what} ended before the kill: the test did not interrupt it"
    );
}

fn memberof_matches_groups(s: &Server, when: &str) {
    let out = s.search(
        &Bind::Root,
        &["-b", SUFFIX, "(objectClass=*)", "memberOf", "member"],
    );
    out.expect_code(0, "listing memberOf and member");
    let mut from_groups = std::collections::BTreeSet::new();
    let mut from_members = std::collections::BTreeSet::new();
    for record in out.records() {
        let dn = record.dn().to_lowercase();
        for member in record.values("member") {
            from_groups.insert((member.to_lowercase(), dn.clone()));
        }
        for group in record.values("memberOf") {
            from_members.insert((dn.clone(), group.to_lowercase()));
        }
    }
    let names: std::collections::BTreeSet<String> = out
        .records()
        .iter()
        .map(|r| r.dn().to_lowercase())
        .collect();
    from_groups.retain(|(member, _)| names.contains(member));
    assert_eq!(
        from_members, from_groups,
        "{when}: memberOf disagrees with the groups"
    );
}

/// Canopy renames a whole subtree's members and groups at once (slapd's memberof looks at the
/// renamed entry alone).
#[test]
fn memberof_follows_a_subtree_rename() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let s = Server::start_with_overlays(MEMBEROF_SLAPD, MEMBEROF_CANOPY);
    memberof_matches_groups(&s, "after the load");
    s.tool(
        "ldapmodrdn",
        &Bind::Root,
        &["-r", &format!("ou=people,{SUFFIX}"), "ou=staffers"],
        None,
    )
    .expect_code(0, "renaming ou=people");
    memberof_matches_groups(&s, "after renaming ou=people");
    let out = s.read(&Bind::Root, &group_dn("engineering"), &["member"]);
    assert!(
        out.stdout
            .contains(&format!("uid=alice,ou=staffers,{SUFFIX}")),
        "{}",
        out.stdout
    );
    s.tool(
        "ldapmodrdn",
        &Bind::Root,
        &["-r", &format!("ou=groups,{SUFFIX}"), "ou=teams"],
        None,
    )
    .expect_code(0, "renaming ou=groups");
    memberof_matches_groups(&s, "after renaming ou=groups");
    let out = s.read(
        &Bind::Root,
        &format!("uid=alice,ou=staffers,{SUFFIX}"),
        &["memberOf"],
    );
    assert!(
        out.stdout
            .contains(&format!("cn=engineering,ou=teams,{SUFFIX}")),
        "{}",
        out.stdout
    );
}

/// kill -9 in the middle of a stream of group changes: after the restart every memberOf agrees with
/// the groups exactly, because each change and its memberOf updates commit together.
#[test]
fn memberof_survives_kill_9() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let mut s = Server::start_with_overlays(MEMBEROF_SLAPD, MEMBEROF_CANOPY);
    let people = [
        "alice", "bob", "carol", "dave", "erin", "grace", "heidi", "ivan", "judy",
    ];
    let mut ldif = String::new();
    // Long enough to be cut short: each change is a durable commit.
    for round in 0..3000 {
        let group = group_dn(&format!("g{}", round % 7));
        if round < 7 {
            ldif.push_str(&format!(
                "dn: {group}\nchangetype: add\nobjectClass: groupOfNames\ncn: g{round}\nmember: {}\n\n",
                user_dn(people[round % people.len()])
            ));
        } else {
            let who = user_dn(people[(round * 7) % people.len()]);
            let op = if round % 3 == 0 { "delete" } else { "add" };
            ldif.push_str(&format!(
                "dn: {group}\nchangetype: modify\n{op}: member\nmember: {who}\n\n"
            ));
        }
    }
    // -c: a delete of a member the group lacks, or an add of one it has, goes on to the next.
    kill_9_during(&mut s, ldif, &["-c"], "changes");
    s.restart();
    memberof_matches_groups(&s, "after kill -9 and a restart");
}

/// The in-chain matching rule of nested groups (Active Directory's LDAP_MATCHING_RULE_IN_CHAIN),
/// which slapd does not have: Canopy alone.
#[test]
fn nested_groups_in_chain() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let s = Server::start_with_overlays(MEMBEROF_SLAPD, MEMBEROF_CANOPY);
    s.add(
        &Bind::Root,
        &format!(
            "dn: {}\nobjectClass: groupOfNames\ncn: everyone\nmember: {}\nmember: {}\n",
            group_dn("everyone"),
            group_dn("engineering"),
            group_dn("managers")
        ),
    )
    .expect_code(0, "adding a group of groups");
    // A cycle: everyone is also a member of managers.
    s.modify(
        &Bind::Root,
        &format!(
            "dn: {}\nchangetype: modify\nadd: member\nmember: {}\n",
            group_dn("managers"),
            group_dn("everyone")
        ),
    )
    .expect_code(0, "closing a cycle");
    let dns = |filter: &str| -> Vec<String> {
        let out = s.search(&Bind::Anonymous, &["-b", SUFFIX, filter, "1.1"]);
        out.expect_code(0, filter);
        let mut dns: Vec<String> = out
            .records()
            .iter()
            .map(|r| r.dn().to_lowercase())
            .collect();
        dns.sort();
        dns
    };
    let in_groups = dns(&format!(
        "(memberOf:1.2.840.113556.1.4.1941:={})",
        group_dn("everyone")
    ));
    let want = [
        "cn=engineering,ou=groups,dc=example,dc=com",
        "cn=everyone,ou=groups,dc=example,dc=com",
        "cn=managers,ou=groups,dc=example,dc=com",
        "cn=smith\\2c john,ou=people,dc=example,dc=com",
        "uid=alice,ou=people,dc=example,dc=com",
        "uid=bob,ou=people,dc=example,dc=com",
    ];
    assert_eq!(in_groups, want);
    let holding_alice = dns(&format!(
        "(&(objectClass=groupOfNames)(member:1.2.840.113556.1.4.1941:={}))",
        user_dn("alice")
    ));
    assert_eq!(
        holding_alice,
        [
            "cn=engineering,ou=groups,dc=example,dc=com",
            "cn=everyone,ou=groups,dc=example,dc=com",
            "cn=managers,ou=groups,dc=example,dc=com",
        ]
    );
    // Direct membership alone, for comparison: the plain equality match.
    assert_eq!(
        dns(&format!("(memberOf={})", group_dn("everyone"))),
        [
            "cn=engineering,ou=groups,dc=example,dc=com",
            "cn=managers,ou=groups,dc=example,dc=com",
        ]
    );
}

const REFINT_SLAPD: &str = "overlay refint\nrefint_attributes member seeAlso\n\
                            refint_nothing cn=nobody,dc=example,dc=com\n";
const REFINT_CANOPY: &str =
    "[[overlay]]\nname = \"refint\"\nattributes = [\"member\", \"seeAlso\"]\n\
                             nothing = \"cn=nobody,dc=example,dc=com\"\n";

/// Waits until no `member` or `seeAlso` names `dn` any more, up to 5 s: slapd's refint repairs the
/// references in a background task after it answers; Canopy's are done when it answers. Both
/// servers poll the same way, and only the state after it goes into the transcript.
fn refint_settle(s: &Server, dn: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let filter = format!("(|(member={dn})(seeAlso={dn}))");
    loop {
        let out = s.search(&Bind::Root, &["-b", SUFFIX, &filter, "1.1"]);
        if (out.code == 0 && out.records().is_empty()) || std::time::Instant::now() > deadline {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Every entry holding a reference (refint's two attributes, and roleOccupant, which it leaves).
fn refint_snapshot(t: &mut Transcript, s: &Server, title: &str) {
    t.section(
        title,
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                "(|(member=*)(seeAlso=*)(roleOccupant=*))",
                "member",
                "seeAlso",
                "roleOccupant",
            ],
        ),
    );
}

#[test]
fn refint() {
    let s = Server::start_with_overlays(REFINT_SLAPD, REFINT_CANOPY);
    let mut t = Transcript::new("overlays_refint");
    t.section(
        "a group whose only member is bob",
        &s.add(
            &Bind::Root,
            &format!(
                "dn: {}\nobjectClass: groupOfNames\ncn: solo\nmember: {}\n",
                group_dn("solo"),
                user_dn("bob")
            ),
        ),
    );
    t.section(
        "seeAlso references",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nadd: seeAlso\nseeAlso: {}\nseeAlso: {}\n\n\
                 dn: {}\nchangetype: modify\nadd: seeAlso\nseeAlso: {}\n\n\
                 dn: {}\nchangetype: modify\nadd: seeAlso\nseeAlso: {}\n\n\
                 dn: {}\nchangetype: modify\nadd: member\nmember: {}\n",
                user_dn("carol"),
                user_dn("bob"),
                user_dn("erin"),
                user_dn("dave"),
                format_args!("cn=docs,ou=apollo,ou=projects,{SUFFIX}"),
                user_dn("grace"),
                user_dn("bob"),
                group_dn("managers"),
                user_dn("erin"),
            ),
        ),
    );
    refint_snapshot(&mut t, &s, "before");

    t.section(
        "a member deleted",
        &s.tool("ldapdelete", &Bind::Root, &[&user_dn("bob")], None),
    );
    refint_settle(&s, &user_dn("bob"));
    refint_snapshot(
        &mut t,
        &s,
        "after the delete (last values become refint_nothing)",
    );

    t.section(
        "a member renamed",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &["-r", &user_dn("alice"), "uid=alicia"],
            None,
        ),
    );
    refint_settle(&s, &user_dn("alice"));
    refint_snapshot(&mut t, &s, "after the rename");

    t.section(
        "a member moved",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &[
                "-s",
                &format!("ou=projects,{SUFFIX}"),
                &user_dn("erin"),
                "uid=erin",
            ],
            None,
        ),
    );
    refint_settle(&s, &user_dn("erin"));
    refint_snapshot(&mut t, &s, "after the move");

    t.section(
        "a subtree renamed",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &[
                "-r",
                &format!("ou=apollo,ou=projects,{SUFFIX}"),
                "ou=gemini",
            ],
            None,
        ),
    );
    refint_settle(&s, &format!("cn=docs,ou=apollo,ou=projects,{SUFFIX}"));
    refint_snapshot(&mut t, &s, "after the subtree rename");

    t.section(
        "a repaired group's operational attributes",
        &s.read(&Bind::Root, &group_dn("managers"), &["+"]),
    );
    t.section(
        "a repaired person's operational attributes",
        &s.read(&Bind::Root, &user_dn("carol"), &["modifiersName"]),
    );
    t.check();
}

const UNIQUE_SLAPD: &str =
    "overlay unique\nunique_uri ldap:///ou=people,dc=example,dc=com?mail?sub\n";
const UNIQUE_CANOPY: &str =
    "[[overlay]]\nname = \"unique\"\nuri = [\"ldap:///ou=people,dc=example,dc=com?mail?sub\"]\n";

fn person(dn: &str, uid: &str, mail: &str) -> String {
    format!(
        "dn: {dn}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\nmail: {mail}\n"
    )
}

#[test]
fn unique() {
    let s = Server::start_with_overlays(UNIQUE_SLAPD, UNIQUE_CANOPY);
    let mut t = Transcript::new("overlays_unique");
    t.section(
        "an add with a mail that exists",
        &s.add(
            &Bind::Root,
            &person(&user_dn("zed"), "zed", "alice@example.com"),
        ),
    );
    t.section(
        "the same in other case (caseIgnoreIA5Match)",
        &s.add(
            &Bind::Root,
            &person(&user_dn("zed"), "zed", "ALICE@Example.COM"),
        ),
    );
    t.section(
        "an add with a fresh mail",
        &s.add(
            &Bind::Root,
            &person(&user_dn("zed"), "zed", "zed@example.com"),
        ),
    );
    t.section(
        "a mail replaced by an existing one",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nreplace: mail\nmail: carol@example.com\n",
                user_dn("bob")
            ),
        ),
    );
    t.section(
        "an existing mail added",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nadd: mail\nmail: zed@example.com\n",
                user_dn("bob")
            ),
        ),
    );
    t.section(
        "a mail replaced by a fresh one",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nreplace: mail\nmail: bob2@example.com\n",
                user_dn("bob")
            ),
        ),
    );
    t.section(
        "the old mail is free again",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nadd: mail\nmail: bob@example.com\n",
                user_dn("carol")
            ),
        ),
    );
    t.section(
        "an entry outside the domain with a duplicate mail",
        &s.add(
            &Bind::Root,
            &person(
                &format!("uid=outsider,ou=projects,{SUFFIX}"),
                "outsider",
                "dave@example.com",
            ),
        ),
    );
    t.raw(
        "moved into the domain with the duplicate as its new RDN",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &[
                "-s",
                &format!("ou=people,{SUFFIX}"),
                &format!("uid=outsider,ou=projects,{SUFFIX}"),
                "mail=dave@example.com",
            ],
            None,
        ),
    );
    t.section(
        "the mails",
        &s.search(&Bind::Root, &["-b", SUFFIX, "(mail=*)", "mail"]),
    );
    t.check();
}

const CONSTRAINT_SLAPD: &str = "overlay constraint\n\
                                constraint_attribute mail regex ^[a-z0-9.]+@example\\\\.com$\n\
                                constraint_attribute description count 2\n\
                                constraint_attribute telephoneNumber size 20\n";
const CONSTRAINT_CANOPY: &str = r#"[[overlay]]
name = "constraint"
constraints = [
  'mail regex ^[a-z0-9.]+@example\\.com$',
  'description count 2',
  'telephoneNumber size 20',
]
"#;

#[test]
fn constraint() {
    let s = Server::start_with_overlays(CONSTRAINT_SLAPD, CONSTRAINT_CANOPY);
    let mut t = Transcript::new("overlays_constraint");
    let zed = user_dn("zed");
    let add = |t: &mut Transcript, title: &str, extra: &str| {
        t.section(
            title,
            &s.add(
                &Bind::Root,
                &format!(
                    "dn: {zed}\nobjectClass: inetOrgPerson\nuid: zed\ncn: zed\nsn: zed\n{extra}"
                ),
            ),
        );
    };
    let modify = |t: &mut Transcript, title: &str, dn: &str, changes: &str| {
        t.section(
            title,
            &s.modify(
                &Bind::Root,
                &format!("dn: {dn}\nchangetype: modify\n{changes}"),
            ),
        );
    };
    add(&mut t, "mail: upper case", "mail: Zed@example.com\n");
    add(&mut t, "mail: another domain", "mail: zed@example.org\n");
    add(
        &mut t,
        "mail: any character for the dot",
        "mail: zed@exampleXcom\n",
    );
    add(
        &mut t,
        "description: three values",
        "mail: zed@example.com\ndescription: a\ndescription: b\ndescription: c\n",
    );
    add(
        &mut t,
        "telephoneNumber: 21 bytes",
        "mail: zed@example.com\ntelephoneNumber: +1 555 010 1001 23456\n",
    );
    add(
        &mut t,
        "within every limit (two descriptions, 20 bytes)",
        "mail: zed@example.com\ndescription: a\ndescription: b\n\
         telephoneNumber: +1 555 010 1001 2345\n",
    );
    modify(
        &mut t,
        "a third description added",
        &zed,
        "add: description\ndescription: c\n",
    );
    modify(
        &mut t,
        "descriptions replaced by three",
        &zed,
        "replace: description\ndescription: x\ndescription: y\ndescription: z\n",
    );
    modify(
        &mut t,
        "descriptions replaced by two",
        &zed,
        "replace: description\ndescription: x\ndescription: y\n",
    );
    modify(
        &mut t,
        "one description deleted, one added (two in the end)",
        &zed,
        "delete: description\ndescription: x\n-\nadd: description\ndescription: w\n",
    );
    modify(
        &mut t,
        "a second description for jose",
        &user_dn("jose"),
        "add: description\ndescription: second\n",
    );
    modify(
        &mut t,
        "a third one",
        &user_dn("jose"),
        "add: description\ndescription: third\n",
    );
    modify(
        &mut t,
        "a mail outside the pattern",
        &user_dn("alice"),
        "replace: mail\nmail: alice@example.net\n",
    );
    modify(
        &mut t,
        "a mail added within it",
        &user_dn("alice"),
        "add: mail\nmail: alice.adams@example.com\n",
    );
    modify(
        &mut t,
        "a telephone number of 21 bytes",
        &user_dn("bob"),
        "add: telephoneNumber\ntelephoneNumber: +1 555 010 1002 23456\n",
    );
    modify(
        &mut t,
        "one of 20 bytes",
        &user_dn("bob"),
        "add: telephoneNumber\ntelephoneNumber: +1 555 010 1002 2345\n",
    );
    t.raw(
        "a rename whose new RDN breaks the mail pattern",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &[&zed, "mail=Zed@example.com"],
            None,
        ),
    );
    t.raw(
        "a rename whose new RDN keeps it",
        &s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &[&zed, "mail=zed.z@example.com"],
            None,
        ),
    );
    let renamed = format!("mail=zed.z@example.com,ou=people,{SUFFIX}");
    modify(
        &mut t,
        "the RDN's mail replaced by one outside the pattern",
        &renamed,
        "replace: mail\nmail: zed@example.org\n",
    );
    modify(
        &mut t,
        "the RDN's mail replaced by another within it",
        &renamed,
        "replace: mail\nmail: zed.y@example.com\n",
    );
    t.section(
        "the entries written",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                "(|(uid=zed)(uid=jose)(uid=alice)(uid=bob))",
                "mail",
                "description",
                "telephoneNumber",
            ],
        ),
    );
    t.check();
}

/// Moving an entry into a domain with a duplicate mail that is not in its new RDN: slapd checks a
/// rename's new RDN values only and lets the duplicate in (recorded from slapd 2.5: rc 0); Canopy
/// checks every value the entry brings into the domain and refuses it (docs/overlays.md, unique,
/// "Where Canopy differs from slapd": *Which values*). Canopy alone.
#[test]
fn unique_checks_every_value_a_move_brings() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let s = Server::start_with_overlays(UNIQUE_SLAPD, UNIQUE_CANOPY);
    let outsider = format!("uid=outsider,ou=projects,{SUFFIX}");
    s.add(
        &Bind::Root,
        &person(&outsider, "outsider", "dave@example.com"),
    )
    .expect_code(0, "adding outside the domain");
    let people = format!("ou=people,{SUFFIX}");
    let move_in = || {
        s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &["-s", &people, &outsider, "uid=outsider"],
            None,
        )
    };
    let out = move_in();
    out.expect_code(19, "moving a duplicate mail into the domain");
    assert!(
        out.stderr.contains("(mail=dave@example.com)")
            || out.stdout.contains("(mail=dave@example.com)"),
        "{out:?}"
    );
    s.read(&Bind::Root, &outsider, &["1.1"])
        .expect_code(0, "the entry stays where it was");
    s.modify(
        &Bind::Root,
        &format!("dn: {outsider}\nchangetype: modify\nreplace: mail\nmail: outsider@example.com\n"),
    )
    .expect_code(0, "a fresh mail");
    move_in().expect_code(0, "moving in without a duplicate");
    s.read(&Bind::Root, &user_dn("outsider"), &["1.1"])
        .expect_code(0, "the entry moved");
}

/// People `bigNNNN` under ou=people and cn=big holding the first `members` of them: a group large
/// enough (over 64 KiB of member values) for Canopy's splice path (docs/design/big-values.md).
fn big_group(s: &Server, people: usize, members: usize) {
    let mut ldif = String::new();
    for i in 0..people {
        ldif.push_str(&format!(
            "dn: uid=big{i:04},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: big{i:04}\ncn: big{i:04}\nsn: Big\n\n"
        ));
    }
    ldif.push_str(&format!(
        "dn: {}\nobjectClass: groupOfNames\ncn: big\n",
        group_dn("big")
    ));
    for i in 0..members {
        ldif.push_str(&format!("member: uid=big{i:04},ou=people,{SUFFIX}\n"));
    }
    s.add(&Bind::Root, &ldif)
        .expect_code(0, "adding the people and the big group");
}

fn big_member(i: usize) -> String {
    format!("uid=big{i:04},ou=people,{SUFFIX}")
}

/// Members added to and removed from a group of 1 800: one at a time, two in one change, one held
/// already (attributeOrValueExists), one that does not exist (dangling error), then the group and every
/// memberOf as the groups say.
#[test]
fn memberof_big_group() {
    let s = Server::start_with_overlays(MEMBEROF_SLAPD, MEMBEROF_CANOPY);
    big_group(&s, 1810, 1800);
    let add = |who: &[String]| {
        let values: String = who.iter().map(|w| format!("member: {w}\n")).collect();
        s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nadd: member\n{values}",
                group_dn("big")
            ),
        )
    };
    for i in 1800..1805 {
        add(&[big_member(i)]).expect_code(0, "adding one member");
    }
    add(&[big_member(1805), big_member(1806)]).expect_code(0, "adding two members");
    add(&[big_member(1805)]).expect_code(20, "adding a member held already");
    add(&[format!("uid=nobody,ou=people,{SUFFIX}")])
        .expect_code(19, "adding a member that does not exist");
    s.modify(
        &Bind::Root,
        &format!(
            "dn: {}\nchangetype: modify\ndelete: member\nmember: {}\n",
            group_dn("big"),
            big_member(3)
        ),
    )
    .expect_code(0, "deleting a member");
    add(&[big_member(3)]).expect_code(0, "adding it back");
    let group = s.read(&Bind::Root, &group_dn("big"), &["member"]);
    group.expect_code(0, "reading the group");
    let members = group.records()[0].values("member");
    assert_eq!(members.len(), 1807, "members of cn=big");
    // Added values come last, in the order they were added.
    assert!(members[1799..]
        .iter()
        .zip((1800..1807).map(big_member).chain([big_member(3)]))
        .all(|(got, want)| got.eq_ignore_ascii_case(&want)));
    let found = s.search(
        &Bind::Root,
        &[
            "-b",
            SUFFIX,
            &format!("(memberOf={})", group_dn("big")),
            "1.1",
        ],
    );
    found.expect_code(0, "searching by memberOf");
    assert_eq!(found.records().len(), 1807, "entries with memberOf=cn=big");
    let found = s.search(
        &Bind::Root,
        &[
            "-b",
            SUFFIX,
            &format!("(member={})", big_member(1806)),
            "1.1",
        ],
    );
    assert_eq!(
        found.records().len(),
        1,
        "the member index has an added value"
    );
    memberof_matches_groups(&s, "after the changes to the big group");
}

/// kill -9 during a stream of member adds to a big group (kept in chunks by canopy's store): after the
/// restart the group holds a prefix of the stream and every memberOf agrees with it.
#[test]
fn memberof_big_group_survives_kill_9() {
    if Target::from_env() != Target::Canopy {
        return;
    }
    let mut s = Server::start_with_overlays(MEMBEROF_SLAPD, MEMBEROF_CANOPY);
    // 6 600 members: over 256 KiB, so canopy keeps the group in chunks.
    big_group(&s, 7000, 6600);
    let mut ldif = String::new();
    for i in 6600..7000 {
        ldif.push_str(&format!(
            "dn: {}\nchangetype: modify\nadd: member\nmember: {}\n\n",
            group_dn("big"),
            big_member(i)
        ));
    }
    kill_9_during(&mut s, ldif, &[], "adds");
    s.restart();
    memberof_matches_groups(&s, "after kill -9 and a restart");
    // The adds that committed are a prefix of the stream.
    let members = s.read(&Bind::Root, &group_dn("big"), &["member"]).records()[0].values("member");
    assert!(members.len() > 6600, "no add committed before the kill");
    assert!(members
        .iter()
        .zip((0..7000).map(big_member))
        .all(|(got, want)| got.eq_ignore_ascii_case(&want)));
}

/// Waits (at most 10 s) until `done` holds: homedir works after the change is acknowledged.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// homedir (OpenLDAP's test085): an account's home is made from the skeleton when it is added, moved
/// when its homeDirectory changes, and archived in a tar file when it is deleted.
#[test]
fn homedir_follows_accounts() {
    let scratch = canopy_e2e::tempdir::TempDir::new("homedir");
    let root = scratch.path();
    for dir in ["skel", "home", "archive"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("skel/.profile"), "# profile\n").unwrap();
    let meta = std::fs::metadata(root).unwrap();
    let (uid, gid) = (
        std::os::unix::fs::MetadataExt::uid(&meta),
        std::os::unix::fs::MetadataExt::gid(&meta),
    );
    let (skel, archive) = (root.join("skel"), root.join("archive"));
    let regexp = format!("^(/home/[-_/a-z0-9]+)$ {}$1", root.display());
    let slapd = format!(
        "overlay homedir\nhomedir-min-uidnumber {uid}\nhomedir-skeleton-path {}\n\
         homedir-regexp {regexp}\nhomedir-delete-style ARCHIVE\nhomedir-archive-path {}\n",
        skel.display(),
        archive.display()
    );
    let canopy = format!(
        "[[overlay]]\nname = \"homedir\"\nmin-uidnumber = {uid}\nskeleton-path = \"{}\"\n\
         regexp = [\"{regexp}\"]\ndelete-style = \"ARCHIVE\"\narchive-path = \"{}\"\n",
        skel.display(),
        archive.display()
    );
    let s = Server::start_with_overlays(&slapd, &canopy);
    let dn = format!("uid=user1,ou=people,{SUFFIX}");
    s.add(
        &Bind::Root,
        &format!(
            "dn: {dn}\nobjectClass: account\nobjectClass: posixAccount\nuid: user1\ncn: One\n\
             uidNumber: {uid}\ngidNumber: {gid}\nhomeDirectory: /home/user1\n"
        ),
    )
    .expect_code(0, "add an account");
    let home = root.join("home/user1");
    eventually("the home made from the skeleton", || {
        home.join(".profile").exists()
    });
    s.modify(
        &Bind::Root,
        &format!("dn: {dn}\nchangetype: modify\nreplace: homeDirectory\nhomeDirectory: /home/user1_new\n"),
    )
    .expect_code(0, "move the home");
    let moved = root.join("home/user1_new");
    eventually("the home moved", || {
        !home.exists() && moved.join(".profile").exists()
    });
    s.modify(&Bind::Root, &format!("dn: {dn}\nchangetype: delete\n"))
        .expect_code(0, "delete the account");
    let archived = || {
        std::fs::read_dir(&archive)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("user1_new-") && name.ends_with("-0.tar")
            })
    };
    eventually("the home archived and removed", || {
        archived() && !moved.exists()
    });
    // An account below the minimum uidNumber is never touched.
    if uid > 0 {
        s.add(
            &Bind::Root,
            &format!(
                "dn: uid=sys,ou=people,{SUFFIX}\nobjectClass: account\nobjectClass: posixAccount\n\
                 uid: sys\ncn: Sys\nuidNumber: {}\ngidNumber: {gid}\nhomeDirectory: /home/sys\n",
                uid - 1
            ),
        )
        .expect_code(0, "add a system account");
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(!root.join("home/sys").exists());
    }
}

/// The retcode overlay: requests on its items are answered with the item's result in the database's
/// place; other requests reach the database (recorded from slapd).
#[test]
fn retcode_answers_its_items() {
    let s = Server::start_with_overlays(
        "overlay retcode\nretcode-parent \"ou=RetCodes,dc=example,dc=com\"\n\
         retcode-item \"cn=unwillingToPerform\" 0x35 text=\"not today\"\n\
         retcode-item \"cn=timelimitExceeded\" 0x03 op=search\n",
        "[[overlay]]\nname = \"retcode\"\nparent = \"ou=RetCodes,dc=example,dc=com\"\n\
         item = ['\"cn=unwillingToPerform\" 0x35 text=\"not today\"', \
         '\"cn=timelimitExceeded\" 0x03 op=search']\n",
    );
    let mut t = Transcript::new("overlays_retcode");
    let under = |rdn: &str| format!("{rdn},ou=RetCodes,{SUFFIX}");
    for rdn in [
        "cn=unwillingToPerform",
        "cn=timelimitExceeded",
        "cn=nothing",
    ] {
        t.section(
            &format!("search {rdn}"),
            &s.search(
                &Bind::Root,
                &["-b", &under(rdn), "-s", "base", "(objectClass=*)"],
            ),
        );
        t.section(
            &format!("compare {rdn}"),
            &s.tool("ldapcompare", &Bind::Root, &[&under(rdn), "cn:x"], None),
        );
    }
    t.section(
        "delete cn=unwillingToPerform",
        &s.tool(
            "ldapdelete",
            &Bind::Root,
            &[&under("cn=unwillingToPerform")],
            None,
        ),
    );
    t.section(
        "a search elsewhere",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &user_dn("alice"),
                "-s",
                "base",
                "(objectClass=*)",
                "uid",
            ],
        ),
    );
    t.check();
}

/// The valsort overlay: the values of a configured attribute below a DN come back sorted, what is
/// stored unchanged (recorded from slapd).
#[test]
fn valsort_sorts_values_in_results() {
    let s = Server::start_with_overlays(
        "overlay valsort\nvalsort-attr description ou=people,dc=example,dc=com alpha-ascend\n",
        "[[overlay]]\nname = \"valsort\"\n\
         attr = [\"description ou=people,dc=example,dc=com alpha-ascend\"]\n",
    );
    let mut t = Transcript::new("overlays_valsort");
    t.section(
        "add values out of order",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nreplace: description\ndescription: pear\n\
                 description: Apple\ndescription: banana\n-\n",
                user_dn("alice")
            ),
        ),
    );
    t.section(
        "read back",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &user_dn("alice"),
                "-s",
                "base",
                "(objectClass=*)",
                "description",
            ],
        ),
    );
    t.check();
    // The transcript sorts values; the order itself, as both servers send it:
    let out = s.search(
        &Bind::Root,
        &[
            "-b",
            &user_dn("alice"),
            "-s",
            "base",
            "(objectClass=*)",
            "description",
        ],
    );
    let order: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("description: "))
        .collect();
    assert_eq!(order, ["Apple", "banana", "pear"], "{}", out.stdout);
}
