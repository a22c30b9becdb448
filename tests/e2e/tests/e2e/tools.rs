//! The offline tools: import into an empty database (`canopy import`, slapd: slapadd), export a
//! live one (`canopy export`, slapd: slapcat), round trips, and reading what slapcat writes.

use canopy_e2e::*;

/// Every entry with user and operational attributes, as the root DN sees it.
fn everything(s: &Server) -> Out {
    let out = s.search(
        &Bind::Root,
        &["-b", SUFFIX, "-s", "sub", "(objectClass=*)", "*", "+"],
    );
    out.expect_code(0, "reading the whole directory");
    out
}

/// The LDIF with userPassword values masked and authPassword lines left out.
fn mask_passwords(ldif: &str) -> String {
    ldif.lines()
        .filter(|l| !l.starts_with("authPassword:"))
        .map(|l| {
            if l.starts_with("userPassword:") {
                "userPassword: <masked>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn import_matches_ldapadd() {
    let online = Server::start();
    let offline = Server::start_imported(&base_ldif());
    // Timestamps, CSNs and UUIDs differ between two loads; everything else must not, except one
    // spelling: slapadd keeps a DN value's `\,` where an online add stores slapd's `\2C`. Both
    // are the same DN (RFC 4514), so only that escape is unified here.
    // Passwords differ too: ldapadd's cleartext values are stored hashed with random salts (and SCRAM
    // secrets in authPassword), import stores them as given, like slapadd. Their values are masked.
    let unify = |s: String| mask_passwords(&s.replace("\\2C", "\\,"));
    let want = unify(everything(&online).ldif());
    let got = unify(everything(&offline).ldif());
    assert!(
        want == got,
        "import and ldapadd differ:\n{}",
        expect::diff(&want, &got)
    );
}

#[test]
fn export_round_trip() {
    let s = Server::start();
    let changes = format!(
        "dn: {}\nchangetype: modify\nreplace: description\ndescription: changed before export\n-\n\n\
         dn: uid=carol,ou=people,{SUFFIX}\nchangetype: modrdn\nnewrdn: uid=caroline\ndeleteoldrdn: 1\n",
        user_dn("alice")
    );
    s.modify(&Bind::Root, &changes)
        .expect_code(0, "changes before export");
    let dump = s.export();
    dump.expect_code(0, "export of a live database");
    let exported: Vec<String> = dump
        .records()
        .iter()
        .map(|r| r.dn().to_lowercase())
        .collect();
    let live = everything(&s);
    let mut searched: Vec<String> = live
        .records()
        .iter()
        .map(|r| r.dn().to_lowercase())
        .collect();
    let mut sorted_export = exported.clone();
    sorted_export.sort();
    searched.sort();
    assert_eq!(
        sorted_export, searched,
        "export has other entries than a search"
    );

    let file = s.dir().join("export.ldif");
    std::fs::write(&file, &dump.stdout).unwrap();
    let copy = Server::start_imported(&file);
    // Exact: the copy keeps entryUUID, entryCSN, timestamps and creators of the original.
    let want = ldif::sorted(&live.stdout);
    let got = ldif::sorted(&everything(&copy).stdout);
    assert!(
        want == got,
        "export | import changed the data:\n{}",
        expect::diff(&want, &got)
    );
}

#[test]
fn imports_slapcat_output() {
    // The reference is a sync provider, as every canopy database is: its suffix entry carries the
    // contextCSN, which slapd writes to the database when it stops (slapcat then has it).
    let mut reference = Server::start_slapd_with("overlay syncprov\n");
    reference.load_base();
    let want = ldif::sorted(&everything(&reference).stdout);
    reference.terminate();
    let dump = reference.export();
    dump.expect_code(0, "slapcat");
    let file = reference.dir().join("slapcat.ldif");
    std::fs::write(&file, &dump.stdout).unwrap();

    let s = Server::start_imported(&file);
    // What slapcat wrote, operational attributes included, is what the server now serves.
    let got = ldif::sorted(&everything(&s).stdout);
    assert!(
        want == got,
        "slapcat output imported differently:\n{}",
        expect::diff(&want, &got)
    );
}

/// The attribute lines of each entry of an LDIF answer, in the order sent: (dn, attribute names).
fn attribute_order(ldif: &str) -> Vec<(String, Vec<String>)> {
    let mut entries: Vec<(String, Vec<String>)> = Vec::new();
    for line in ldif.lines() {
        if let Some(dn) = line.strip_prefix("dn: ") {
            entries.push((dn.to_string(), Vec::new()));
        } else if let (Some((_, names)), Some((name, _))) =
            (entries.last_mut(), line.split_once(':'))
        {
            if !line.starts_with(' ')
                && !line.starts_with('#')
                && names.last() != Some(&name.to_string())
            {
                names.push(name.to_string());
            }
        }
    }
    entries
}

/// Children before their parents, as OpenLDAP's test001 loads them: slapadd gives a missing parent
/// its place when the first entry below it comes, so a search lists the subtree in that order.
/// Attributes come back in the order they were written, passwords and `ref` included. The expected
/// orders were read from slapd (`CANOPY_E2E_TARGET=slapd`).
#[test]
fn import_keeps_slapadd_s_entry_and_attribute_order() {
    let dir = tempdir::TempDir::new("unordered");
    let ldif = dir.path().join("unordered.ldif");
    let unit = |ou: &str, parent: &str| {
        format!("dn: ou={ou},{parent}\nobjectClass: organizationalUnit\nou: {ou}\n")
    };
    let host = |cn: &str, parent: &str| {
        format!(
            "dn: cn={cn},{parent}\ncn: {cn}\nuserPassword: {{SSHA}}c2VjcmV0c2FsdA==\n\
             objectClass: applicationProcess\nobjectClass: simpleSecurityObject\n"
        )
    };
    let systems = format!("ou=systems,{SUFFIX}");
    let deep = format!("ou=deep,ou=inner,{SUFFIX}");
    let records = [
        format!("dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n"),
        host("h1", &systems),
        host("h2", &systems),
        format!(
            "dn: cn=far,{deep}\nref: ldap://far.example.com/cn=far,{deep}\nobjectClass: referral\n\
             objectClass: extensibleObject\ncn: far\n"
        ),
        unit("later", SUFFIX),
        unit("deep", &format!("ou=inner,{SUFFIX}")),
        unit("systems", SUFFIX),
        unit("inner", SUFFIX),
    ];
    std::fs::write(&ldif, records.join("\n")).unwrap();
    let s = Server::start_imported(&ldif);
    let out = s.search(
        &Bind::Root,
        &[
            "-M",
            "-b",
            SUFFIX,
            "-s",
            "sub",
            "(objectClass=*)",
            "*",
            "ref",
        ],
    );
    out.expect_code(0, "the whole tree");
    let found = attribute_order(&out.stdout);
    let dns: Vec<&str> = found.iter().map(|(dn, _)| dn.as_str()).collect();
    assert_eq!(
        dns,
        [
            SUFFIX.to_string(),
            systems.clone(),
            format!("cn=h1,{systems}"),
            format!("cn=h2,{systems}"),
            format!("ou=inner,{SUFFIX}"),
            deep.clone(),
            format!("cn=far,{deep}"),
            format!("ou=later,{SUFFIX}"),
        ],
        "{}",
        out.stdout
    );
    let names = |dn: &str| {
        found
            .iter()
            .find(|(d, _)| d == dn)
            .map(|(_, names)| names.join(" "))
            .unwrap_or_default()
    };
    assert_eq!(
        names(&format!("cn=h1,{systems}")),
        "cn userPassword objectClass"
    );
    assert_eq!(names(&format!("cn=far,{deep}")), "ref objectClass cn");
}

/// `canopy modify` (slapmodify): change records applied offline, then served. Every kind of record,
/// and a record that fails stops the tool with an error while the changes before it stay, as each is
/// its own write.
#[test]
fn modify_offline_applies_change_records() {
    let mut s = Server::start();
    s.terminate();
    let dir = tempdir::TempDir::new("slapmodify");
    let changes = dir.path().join("changes.ldif");
    std::fs::write(
        &changes,
        format!(
            "dn: uid=alice,ou=people,{SUFFIX}\nchangetype: modify\nreplace: description\n\
             description: changed offline\n-\nadd: mail\nmail: alice2@example.com\n-\ndelete: loginShell\n\n\
             dn: uid=zed,ou=people,{SUFFIX}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: zed\n\
             cn: Zed\nsn: Z\n\n\
             dn: uid=bob,ou=people,{SUFFIX}\nchangetype: delete\n\n\
             dn: uid=nobody,ou=people,{SUFFIX}\nchangetype: modify\nreplace: description\ndescription: x\n\n\
             dn: uid=dave,ou=people,{SUFFIX}\nchangetype: delete\n"
        ),
    )
    .unwrap();
    let out = s.modify_offline(&changes);
    assert_ne!(
        out.code, 0,
        "a missing entry fails the tool: {}",
        out.stdout
    );
    // slapmodify refuses modrdn ("request 0x6c not supported"); canopy modify takes it.
    let canopy = Target::from_env() == Target::Canopy;
    if canopy {
        let rename = dir.path().join("rename.ldif");
        std::fs::write(
            &rename,
            format!(
                "dn: uid=carol,ou=people,{SUFFIX}\nchangetype: modrdn\nnewrdn: uid=caroline\n\
                 deleteoldrdn: 1\n"
            ),
        )
        .unwrap();
        s.modify_offline(&rename).expect_code(0, "modrdn offline");
    }
    s.restart();
    let read = |filter: &str, attrs: &[&str]| {
        let mut args = vec!["-b", SUFFIX, filter];
        args.extend_from_slice(attrs);
        let out = s.search(&Bind::Root, &args);
        out.expect_code(0, filter);
        out.ldif()
    };
    let alice = read("(uid=alice)", &["description", "mail", "loginShell"]);
    assert!(alice.contains("description: changed offline"), "{alice}");
    assert!(alice.contains("mail: alice2@example.com"), "{alice}");
    assert!(!alice.contains("loginShell"), "{alice}");
    let zed = read("(uid=zed)", &["cn", "entryUUID", "creatorsName"]);
    assert!(zed.contains("cn: Zed"), "added: {zed}");
    assert!(
        zed.contains("entryUUID: "),
        "with its operational attributes: {zed}"
    );
    assert!(!read("(uid=bob)", &["1.1"]).contains("dn:"), "deleted");
    if canopy {
        assert!(
            read("(uid=caroline)", &["uid"]).contains("dn: uid=caroline,"),
            "renamed"
        );
    }
    assert!(
        read("(uid=dave)", &["1.1"]).contains("dn:"),
        "after the failed record nothing more is applied"
    );
    // Indexes follow: the new value is found through the mail index. Not on slapd: after
    // slapmodify of this record (three changes in one), 2.5.13 finds nothing for the added value,
    // although a record adding only the mail value is found (checked by hand on this machine).
    if canopy {
        let by_mail = read("(mail=alice2@example.com)", &["mail"]);
        assert!(by_mail.contains("dn: uid=alice"), "{by_mail}");
    }
}

/// A value given twice in one entry of an LDIF (slapadd loads it, storing the value twice): the
/// import loads the entry with the value once and says so; a search shows it once. slapd shows it twice,
/// so only canopy's answer is checked.
#[test]
fn import_stores_a_repeated_value_once() {
    let dir = tempdir::TempDir::new("repeated");
    let ldif = dir.path().join("repeated.ldif");
    std::fs::write(
        &ldif,
        format!(
            "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n\
             dn: cn=twice,{SUFFIX}\nobjectClass: person\ncn: twice\nsn: twice\n\
             userPassword: secret\nuserPassword: secret\ndescription: one\ndescription: one\n"
        ),
    )
    .unwrap();
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: slapadd stores the value twice");
        return;
    }
    let mut server = Server::unstarted(Target::Canopy);
    let out = server.import(&ldif);
    out.expect_code(0, "importing an entry with a repeated value");
    assert!(
        out.stderr.contains("2 value(s) given twice, stored once"),
        "the import says what it did: {}",
        out.stderr
    );
    server.restart();
    let found = server.search(
        &Bind::Root,
        &[
            "-b",
            &format!("cn=twice,{SUFFIX}"),
            "-s",
            "base",
            "description",
            "userPassword",
        ],
    );
    found.expect_code(0, "the imported entry");
    assert_eq!(
        found.stdout.matches("description: one").count(),
        1,
        "{}",
        found.stdout
    );
    assert_eq!(
        found.stdout.matches("userPassword").count(),
        1,
        "{}",
        found.stdout
    );
}

/// Import stores values as written, as slapadd does; a modify stores a uniqueMember's name in its pretty
/// form (its UID kept), as slapd does for DN values.
#[test]
fn import_keeps_values_modify_makes_them_pretty() {
    let dir = tempdir::TempDir::new("pretty");
    let ldif = dir.path().join("pretty.ldif");
    std::fs::write(
        &ldif,
        format!(
            "dn: {SUFFIX}\nobjectclass: dcobject\nobjectClass: organization\ndc: example\no: Example\n\n\
             dn: cn=names,{SUFFIX}\nobjectclass: GROUPOFUNIQUENAMES\ncn: names\n\
             uniqueMember: cn=A B, DC=example, dc=com\nuniqueMember: CN=c,dc=example,dc=com#'0101'B\n\
             seeAlso: CN=x, dc=example,  dc=com\n"
        ),
    )
    .unwrap();
    let mut server = Server::unstarted(Target::from_env());
    server.import(&ldif).expect_code(0, "importing");
    server.restart();
    let found = server.search(
        &Bind::Root,
        &[
            "-b",
            SUFFIX,
            "(objectClass=*)",
            "objectClass",
            "uniqueMember",
            "seeAlso",
        ],
    );
    found.expect_code(0, "the imported entries");
    for line in [
        "objectClass: dcobject",
        "objectClass: GROUPOFUNIQUENAMES",
        "uniqueMember: cn=A B, DC=example, dc=com",
        "uniqueMember: CN=c,dc=example,dc=com#'0101'B",
        "seeAlso: CN=x, dc=example,  dc=com",
    ] {
        assert!(
            found.stdout.contains(line),
            "missing {line:?} in\n{}",
            found.stdout
        );
    }
    server
        .modify(
            &Bind::Root,
            &format!(
                "dn: cn=names,{SUFFIX}\nchangetype: modify\nadd: uniqueMember\n\
                 uniqueMember: cn=D, DC=Example, dc=com\nuniqueMember: CN=e,dc=com#'1'B\n-\n"
            ),
        )
        .expect_code(0, "adding a uniqueMember");
    let found = server.read(
        &Bind::Root,
        &format!("cn=names,{SUFFIX}"),
        &["uniqueMember"],
    );
    assert!(
        found
            .stdout
            .contains("uniqueMember: cn=D,dc=Example,dc=com"),
        "{}",
        found.stdout
    );
}
