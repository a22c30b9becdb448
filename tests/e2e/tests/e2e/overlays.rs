//! Overlays configured on both servers (slapd: `overlay NAME` in slapd.conf; canopy: `[[overlay]]`
//! tables), driven by the same clients, with the expected files recorded from slapd; and what Canopy
//! does beyond slapd (atomic memberOf after a crash, whole subtrees renamed) on Canopy alone.

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
    let mut child = std::process::Command::new("ldapmodify")
        .args([
            "-c",
            "-H",
            &s.ldap_url(),
            "-x",
            "-D",
            ROOT_DN,
            "-w",
            ROOT_PW,
        ])
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
        "the stream of changes ended before the kill: the test did not interrupt it"
    );
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
