//! The smaller controls and the Cancel operation as Debian's slapd 2.5 answers them: No-Op
//! (`ldapmodify -e noop`), Permissive Modify, Subentries (`ldapsearch -E subentries=`), deref
//! (`ldapsearch -E deref=`), and Cancel (RFC 3909) through python-ldap.

use canopy_e2e::*;

const ALICE: &str = "uid=alice,ou=people,dc=example,dc=com";

/// Every attribute of `dn`, operational ones included, as the root DN reads it.
fn everything(s: &Server, dn: &str) -> String {
    s.read(&Bind::Root, dn, &["*", "+"]).ldif()
}

/// Every write carrying the No-Op control (critical and not) runs its checks and answers
/// noOperation (0x410e; ldap-utils exit with its low byte, 14) or the error it would have met,
/// and stores nothing: the entries read back as before, operational attributes included.
#[test]
fn no_op_writes_change_nothing() {
    let s = Server::start();
    let mut t = Transcript::new("controls_no_op");
    let before: Vec<String> = [ALICE, SUFFIX, "uid=bob,ou=people,dc=example,dc=com"]
        .iter()
        .map(|dn| everything(&s, dn))
        .collect();
    let writes: [(&str, &str, &[&str], &str); 9] = [
        (
            "modify, critical",
            "ldapmodify",
            &["-e", "!noop"],
            "dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\nreplace: sn\nsn: Zed\n",
        ),
        (
            "modify, not critical",
            "ldapmodify",
            &["-e", "noop"],
            "dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\nadd: description\ndescription: x\n",
        ),
        (
            "add",
            "ldapadd",
            &["-e", "!noop"],
            "dn: uid=zz,ou=people,dc=example,dc=com\nobjectClass: account\nuid: zz\n",
        ),
        (
            "add of an entry that exists",
            "ldapadd",
            &["-e", "!noop"],
            "dn: uid=bob,ou=people,dc=example,dc=com\nobjectClass: account\nuid: bob\n",
        ),
        (
            "delete",
            "ldapmodify",
            &["-e", "!noop"],
            "dn: uid=bob,ou=people,dc=example,dc=com\nchangetype: delete\n",
        ),
        (
            "rename",
            "ldapmodify",
            &["-e", "!noop"],
            "dn: uid=bob,ou=people,dc=example,dc=com\nchangetype: modrdn\nnewrdn: uid=bobby\ndeleteoldrdn: 1\n",
        ),
        (
            "modify of a missing entry",
            "ldapmodify",
            &["-e", "!noop"],
            "dn: uid=nobody,ou=people,dc=example,dc=com\nchangetype: modify\nreplace: sn\nsn: Zed\n",
        ),
        (
            "modify adding a value present",
            "ldapmodify",
            &["-e", "!noop"],
            "dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\nadd: sn\nsn: Adams\n",
        ),
        (
            "modify breaking the schema",
            "ldapmodify",
            &["-e", "!noop"],
            "dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\ndelete: sn\n",
        ),
    ];
    for (title, tool, args, ldif) in writes {
        let out = s.tool(tool, &Bind::Root, args, Some(ldif));
        t.raw(title, &out);
    }
    let anonymous = s.tool(
        "ldapmodify",
        &Bind::Anonymous,
        &["-e", "!noop"],
        Some(
            "dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\nreplace: sn\nsn: Zed\n",
        ),
    );
    t.raw("anonymous modify", &anonymous);
    let search = s.search(
        &Bind::Anonymous,
        &["-e", "!noop", "-b", ALICE, "-s", "base", "sn"],
    );
    t.section("search with the control", &search);
    let after: Vec<String> = [ALICE, SUFFIX, "uid=bob,ou=people,dc=example,dc=com"]
        .iter()
        .map(|dn| everything(&s, dn))
        .collect();
    assert_eq!(before, after, "a no-op write changed an entry");
    // slapd lists neither No-Op nor Permissive Modify in the root DSE.
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "supportedControl"],
    );
    let listed = dse
        .records()
        .first()
        .map(|r| r.values("supportedControl"))
        .unwrap_or_default();
    assert!(!listed.is_empty(), "{}", dse.stdout);
    for unlisted in ["1.3.6.1.4.1.4203.666.5.2", "1.2.840.113556.1.4.1413"] {
        assert!(!listed.iter().any(|c| c == unlisted), "{listed:?}");
    }
    let added = s.read(&Bind::Root, "uid=zz,ou=people,dc=example,dc=com", &["1.1"]);
    t.section("the entry a no-op add named", &added);
    t.check();
}

/// No-op writes on a database with memberof and syncprov: a sync search in its persist phase sees
/// none of them, the new member gains no memberOf, the contextCSN does not move
/// (py/no_op_effects.py).
#[test]
fn no_op_writes_publish_nothing() {
    let s = Server::start_with_overlays(
        "overlay memberof\nmemberof-refint TRUE\noverlay syncprov\n",
        "[[overlay]]\nname = \"memberof\"\nrefint = true\n",
    );
    let mut t = Transcript::new("controls_no_op_effects");
    t.raw("python-ldap", &s.python("no_op_effects.py", &[]));
    t.check();
}

/// The Permissive Modify control: adding a value the entry holds and deleting from an absent
/// attribute succeed (the rest of the change applies); deleting a value a present attribute
/// lacks is still noSuchAttribute; bad uses are slapd's errors (py/permissive_modify.py).
#[test]
fn permissive_modify() {
    let s = Server::start();
    let mut t = Transcript::new("controls_permissive");
    let cli = s.tool(
        "ldapmodify",
        &Bind::Root,
        &["-e", "!1.2.840.113556.1.4.1413"],
        Some("dn: uid=alice,ou=people,dc=example,dc=com\nchangetype: modify\nadd: sn\nsn: Adams\nsn: Second\n-\ndelete: description\ndescription: none\n"),
    );
    t.raw("ldapmodify with the control", &cli);
    t.section(
        "alice after it",
        &s.read(&Bind::Root, ALICE, &["sn", "description"]),
    );
    let py = s.python("permissive_modify.py", &[]);
    t.raw("python-ldap", &py);
    t.check();
}

/// RFC 3909 Cancel (py/cancel.py): a sync search in its persist phase stops with `canceled` and
/// its Cancel succeeds; nothing outstanding is noSuchOperation; a bad request is protocolError.
#[test]
fn cancel() {
    // slapd 2.5 may take a Cancel of a search it has not yet abandoned (the Abandon is processed
    // on another thread) and answer success there.
    reference_attempts("an abandoned search still cancellable", cancel_once);
}

fn cancel_once() {
    let s = Server::start_with_overlays("overlay syncprov", "");
    let mut t = Transcript::new("controls_cancel");
    t.raw("python-ldap", &s.python("cancel.py", &[]));
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "supportedExtension"],
    );
    let has_cancel = dse.records().first().is_some_and(|r| {
        r.values("supportedExtension")
            .iter()
            .any(|e| e == "1.3.6.1.1.8")
    });
    assert!(has_cancel, "{}", dse.stdout);
    t.check();
}

/// RFC 3672 subentries: without the control a search shows them only at the base of a
/// base-scope search, whatever its filter; `-E subentries=true` shows them alone, `=false` hides
/// them; bad values are slapd's protocolError (py/subentries.py).
#[test]
fn subentries() {
    let s = Server::start();
    let mut t = Transcript::new("controls_subentries");
    let add = s.add(
        &Bind::Root,
        "dn: cn=sub1,dc=example,dc=com\nobjectClass: subentry\nobjectClass: extensibleObject\ncn: sub1\nsubtreeSpecification: {}\n\n\
         dn: cn=sub2,ou=people,dc=example,dc=com\nobjectClass: subentry\ncn: sub2\nsubtreeSpecification: {}\n",
    );
    t.raw("add two subentries", &add);
    let searches: [(&str, &[&str]); 17] = [
        (
            "cn=sub* in the subtree",
            &["-b", SUFFIX, "(cn=sub*)", "1.1"],
        ),
        (
            "objectClass=subentry in the subtree",
            &["-b", SUFFIX, "(objectClass=subentry)", "1.1"],
        ),
        (
            "objectClass=subentry, one level",
            &[
                "-b",
                "ou=people,dc=example,dc=com",
                "-s",
                "one",
                "(objectClass=subentry)",
                "1.1",
            ],
        ),
        (
            "objectClass=subentry, children",
            &[
                "-b",
                SUFFIX,
                "-s",
                "children",
                "(objectClass=subentry)",
                "1.1",
            ],
        ),
        (
            "not a subentry",
            &["-b", SUFFIX, "(!(objectClass=subentry))", "1.1"],
        ),
        ("one level", &["-b", SUFFIX, "-s", "one", "1.1"]),
        (
            "the subentry, base scope",
            &[
                "-b",
                "cn=sub1,dc=example,dc=com",
                "-s",
                "base",
                "cn",
                "subtreeSpecification",
            ],
        ),
        (
            "the subentry, base scope, its classes",
            &[
                "-b",
                "cn=sub1,dc=example,dc=com",
                "-s",
                "base",
                "objectClass",
                "structuralObjectClass",
            ],
        ),
        (
            "the subentry as a subtree base",
            &["-b", "cn=sub1,dc=example,dc=com", "1.1"],
        ),
        (
            "subentries=true",
            &["-E", "subentries=true", "-b", SUFFIX, "1.1"],
        ),
        (
            "subentries=true, one level",
            &["-E", "!subentries=true", "-b", SUFFIX, "-s", "one", "1.1"],
        ),
        (
            "subentries=true, filter",
            &["-E", "!subentries=true", "-b", SUFFIX, "(cn=sub2)", "1.1"],
        ),
        (
            "subentries=false",
            &[
                "-E",
                "!subentries=false",
                "-b",
                SUFFIX,
                "(|(cn=sub*)(uid=alice))",
                "1.1",
            ],
        ),
        (
            "subentries=false, base scope on a subentry",
            &[
                "-E",
                "!subentries=false",
                "-b",
                "cn=sub1,dc=example,dc=com",
                "-s",
                "base",
                "1.1",
            ],
        ),
        (
            "subentries=true, base scope on a subentry",
            &[
                "-E",
                "!subentries=true",
                "-b",
                "cn=sub1,dc=example,dc=com",
                "-s",
                "base",
                "1.1",
            ],
        ),
        (
            "subentries=true, base scope on an entry",
            &["-E", "!subentries=true", "-b", ALICE, "-s", "base", "1.1"],
        ),
        (
            "subentries=false, base scope on an entry",
            &["-E", "!subentries=false", "-b", ALICE, "-s", "base", "1.1"],
        ),
    ];
    for (title, args) in searches {
        t.section(title, &s.search(&Bind::Anonymous, args));
    }
    let compare = s.tool(
        "ldapcompare",
        &Bind::Anonymous,
        &["cn=sub1,dc=example,dc=com", "cn:sub1"],
        None,
    );
    t.raw("compare on a subentry", &compare);
    t.raw("python-ldap", &s.python("subentries.py", &[]));
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "supportedControl"],
    );
    let listed = dse.records().first().is_some_and(|r| {
        r.values("supportedControl")
            .iter()
            .any(|c| c == "1.3.6.1.4.1.4203.1.10.1")
    });
    assert!(listed, "{}", dse.stdout);
    t.check();
}

/// The lines of an ldapsearch run that show the deref control: the entry, the control with its
/// value (byte for byte), ldapsearch's reading of it, and the result.
fn deref_lines(out: &Out) -> String {
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| {
            l.starts_with("dn:")
                || l.starts_with("control:")
                || l.starts_with("# member:")
                || l.starts_with("# owner:")
                || l.starts_with("result:")
                || l.starts_with("text:")
        })
        .collect();
    format!("# rc: {}\n{}\n", out.code, lines.join("\n"))
}

/// slapd's deref overlay (`ldapsearch -E deref=member:uid,cn`): each DN value of the named
/// attribute followed to its entry, the requested attributes as the requester may read them (an
/// entry it may not read, or a missing one, gives the DN alone); bad specifications are slapd's
/// protocolError; the control is listed in supportedControl.
#[test]
fn deref() {
    let rules = [
        "to dn.exact=\"uid=bob,ou=people,dc=example,dc=com\" by self read by * none",
        "to attrs=userPassword by self write by anonymous auth by * none",
        "to attrs=mail by users read by * none",
        "to dn.exact=\"cn=managers,ou=groups,dc=example,dc=com\" attrs=member by users read by * none",
        "to * by * read",
    ];
    let s = Server::start_with_overlays_schema_access(
        "overlay deref\n",
        &[],
        &rules,
        "[[overlay]]\nname = \"deref\"\n",
    );
    let mut t = Transcript::new("controls_deref");
    let add = s.add(
        &Bind::Root,
        "dn: cn=dang,ou=groups,dc=example,dc=com\nobjectClass: groupOfNames\ncn: dang\n\
         member: uid=ghost,ou=people,dc=example,dc=com\nmember: uid=alice,ou=people,dc=example,dc=com\n\
         member: ou=people,dc=example,dc=com\nmember: uid=bob,ou=people,dc=example,dc=com\n\
         owner: uid=carol,ou=people,dc=example,dc=com\n",
    );
    t.raw("add a group", &add);
    let alice = Bind::user("alice");
    let cases: [(&str, &Bind, &str, &str); 11] = [
        (
            "engineering, anonymous",
            &Bind::Anonymous,
            "cn=engineering,ou=groups,dc=example,dc=com",
            "member:uid,cn,mail,userPassword",
        ),
        (
            "engineering, alice",
            &alice,
            "cn=engineering,ou=groups,dc=example,dc=com",
            "member:uid,cn,mail,userPassword",
        ),
        // canopy stores a cleartext password of the loaded data hashed: none is asked for here.
        (
            "engineering, root",
            &Bind::Root,
            "cn=engineering,ou=groups,dc=example,dc=com",
            "member:uid,cn,mail",
        ),
        (
            "managers' members unreadable, anonymous",
            &Bind::Anonymous,
            "cn=managers,ou=groups,dc=example,dc=com",
            "member:uid",
        ),
        (
            "managers' members, alice",
            &alice,
            "cn=managers,ou=groups,dc=example,dc=com",
            "member:uid",
        ),
        (
            "dangling, hidden and childless members",
            &Bind::Anonymous,
            "cn=dang,ou=groups,dc=example,dc=com",
            "member:UID,commonName,objectClass,2.5.4.4;owner:cn",
        ),
        (
            "members and owner as root",
            &Bind::Root,
            "cn=dang,ou=groups,dc=example,dc=com",
            "member:uid,uid;owner:cn,sn",
        ),
        (
            "a group without the attribute",
            &Bind::Anonymous,
            "cn=staff,ou=groups,dc=example,dc=com",
            "member:uid",
        ),
        (
            "an unknown attribute",
            &Bind::Anonymous,
            "cn=dang,ou=groups,dc=example,dc=com",
            "member:uid,nosuch",
        ),
        (
            "a derefAttr not of DN syntax",
            &Bind::Anonymous,
            "cn=dang,ou=groups,dc=example,dc=com",
            "cn:uid",
        ),
        (
            "the same derefAttr twice",
            &Bind::Anonymous,
            "cn=dang,ou=groups,dc=example,dc=com",
            "member:uid;member:cn",
        ),
    ];
    for (title, bind, base, spec) in cases {
        let out = s.tool(
            "ldapsearch",
            bind,
            &[
                "-o",
                "ldif-wrap=no",
                "-b",
                base,
                "-s",
                "base",
                "-E",
                &format!("!deref={spec}"),
                "1.1",
            ],
            None,
        );
        t.text(title, &deref_lines(&out));
    }
    t.raw("python-ldap", &s.python("deref.py", &[]));
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "supportedControl"],
    );
    let listed = dse.records().first().is_some_and(|r| {
        r.values("supportedControl")
            .iter()
            .any(|c| c == "1.3.6.1.4.1.4203.666.5.16")
    });
    assert!(listed, "{}", dse.stdout);
    t.check();
}

/// The deref overlay added and deleted live as `olcOverlay=deref` (class olcOverlayConfig alone,
/// as slapd's): the control is answered from then on, and critical without it is unavailable.
#[test]
fn deref_overlay_changes_live() {
    if !replicas::canopy_only("a canopy configuration file with cn=config") {
        return;
    }
    let s = Server::start_canopy_with_config(&format!(
        "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n"
    ));
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let overlay = "olcOverlay=deref,olcDatabase={1}mdb,cn=config";
    let search = || {
        s.tool(
            "ldapsearch",
            &Bind::Anonymous,
            &[
                "-o",
                "ldif-wrap=no",
                "-b",
                "cn=managers,ou=groups,dc=example,dc=com",
                "-s",
                "base",
                "-E",
                "!deref=member:uid",
                "1.1",
            ],
            None,
        )
    };
    assert_eq!(search().code, 12, "critical without the overlay");
    s.add(
        &admin,
        &format!("dn: {overlay}\nobjectClass: olcOverlayConfig\nolcOverlay: deref\n"),
    )
    .expect_code(0, "add olcOverlay=deref");
    let out = search();
    out.expect_code(0, "deref with the overlay added live");
    assert!(
        out.stdout
            .contains("# member: <uid=alice>;uid=alice,ou=people,dc=example,dc=com"),
        "{}",
        out.stdout
    );
    s.tool(
        "ldapdelete",
        &admin,
        &["olcOverlay={0}deref,olcDatabase={1}mdb,cn=config"],
        None,
    )
    .expect_code(0, "delete the overlay");
    assert_eq!(search().code, 12, "critical once the overlay is gone");
}

/// cn=config has no No-Op, as slapd's back-config: a critical one is unavailableCriticalExtension
/// and changes nothing; one not critical is ignored and the change made.
#[test]
fn no_op_on_the_configuration() {
    let s = Server::start_with_config_tree();
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let frontend = "olcDatabase={-1}frontend,cn=config";
    let mut t = Transcript::new("controls_no_op_config");
    let limit =
        format!("dn: {frontend}\nchangetype: modify\nreplace: olcSizeLimit\nolcSizeLimit: 3\n");
    let count = || {
        let out = s.search(&Bind::Anonymous, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
        format!(
            "# rc: {}\nentries: {}\n",
            out.code,
            out.stdout.matches("dn:").count()
        )
    };
    let out = s.tool("ldapmodify", &admin, &["-e", "!noop"], Some(&limit));
    t.raw("a critical no-op change of olcSizeLimit", &out);
    t.text("a search after it", &count());
    let out = s.tool("ldapmodify", &admin, &["-e", "noop"], Some(&limit));
    t.raw("the change with the control not critical", &out);
    t.text("a search after that", &count());
    t.check();
}
