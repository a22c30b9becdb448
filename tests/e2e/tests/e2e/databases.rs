//! Several databases in one server (slapd's `database mdb` sections, canopy's `[[database]]` tables):
//! routing by suffix, the root DSE's naming contexts, a glued subordinate in subtree, one-level and
//! base searches with one size limit across the glue, a database kept apart, modify DN refused across
//! databases, per-database root DNs, access rules and limits, a read-only database, the offline tools
//! per database and a restart. The same expectations hold against Debian's slapd.

use canopy_e2e::slapd_conf::ExtraDatabase;
use canopy_e2e::*;

const GLUED: &str = "ou=glued,dc=example,dc=com";
const APART: &str = "ou=apart,dc=example,dc=com";
const OTHER: &str = "dc=other,dc=org";
const BOSS: &str = "cn=boss,dc=other,dc=org";
const BOSS_PW: &str = "boss-pw";
const RO: &str = "dc=ro,dc=org";
const RO_ADMIN: &str = "cn=keeper,dc=ro,dc=org";
const RO_PW: &str = "keeper-pw";
const HIDDEN: &str = "ou=hidden,dc=example,dc=com";

/// Databases 2 to 6 (canopy's numbers): a glued subordinate of the main database, a database of its
/// own with its own root DN, rules and size limit, a database inside the main one kept apart, a
/// read-only one, and a second glued one that only its root DN may search.
fn databases() -> Vec<ExtraDatabase> {
    vec![
        ExtraDatabase {
            suffix: GLUED.into(),
            root_dn: Some(ROOT_DN.into()),
            subordinate: Some(true),
            ..Default::default()
        },
        ExtraDatabase {
            suffix: OTHER.into(),
            root_dn: Some(BOSS.into()),
            root_pw: Some(BOSS_PW.into()),
            access: vec!["to * by users read by * none".into()],
            size_limit: Some(2),
            overlays: (
                "overlay memberof\n".into(),
                "[[database.overlay]]\nname = \"memberof\"\n".into(),
            ),
            ..Default::default()
        },
        ExtraDatabase {
            suffix: APART.into(),
            root_dn: Some(ROOT_DN.into()),
            subordinate: Some(false),
            ..Default::default()
        },
        ExtraDatabase {
            suffix: RO.into(),
            root_dn: Some(RO_ADMIN.into()),
            root_pw: Some(RO_PW.into()),
            read_only: true,
            ..Default::default()
        },
        // Glued too, but nobody but its root DN may search it.
        ExtraDatabase {
            suffix: HIDDEN.into(),
            root_dn: Some(ROOT_DN.into()),
            subordinate: Some(true),
            access: vec!["to * by * disclose".into()],
            ..Default::default()
        },
    ]
}

fn boss() -> Bind {
    Bind::Simple(BOSS.into(), BOSS_PW.into())
}

fn person(dn: &str, cn: &str) -> String {
    format!("dn: {dn}\nobjectClass: person\ncn: {cn}\nsn: {cn}\n\n")
}

fn unit(dn: &str, ou: &str) -> String {
    format!("dn: {dn}\nobjectClass: organizationalUnit\nou: {ou}\n\n")
}

fn domain(dn: &str, dc: &str) -> String {
    format!("dn: {dn}\nobjectClass: dcObject\nobjectClass: organization\no: {dc}\ndc: {dc}\n\n")
}

/// Fills the glued, apart and other databases through the server.
fn fill(s: &Server) {
    let main_side = format!(
        "{}{}{}{}{}{}",
        unit(GLUED, "glued"),
        person(&format!("cn=g1,{GLUED}"), "g1"),
        person(&format!("cn=g2,{GLUED}"), "g2"),
        unit(APART, "apart"),
        person(&format!("cn=a1,{APART}"), "a1"),
        unit(HIDDEN, "hidden"),
    );
    s.add(&Bind::Root, &main_side)
        .expect_code(0, "root DN adds in the glued and apart databases");
    let other = format!(
        "{}{}{}{}",
        domain(OTHER, "other"),
        person(&format!("cn=o1,{OTHER}"), "o1"),
        person(&format!("cn=o2,{OTHER}"), "o2"),
        person(&format!("cn=o3,{OTHER}"), "o3"),
    );
    s.add(&boss(), &other)
        .expect_code(0, "the other database's root DN adds there");
}

/// A DN as the tests compare them: lower case, a comma in a value escaped one way.
fn norm(dn: &str) -> String {
    dn.to_lowercase().replace("\\2c", "\\,")
}

fn dns(out: &Out) -> Vec<String> {
    out.records().iter().map(|r| norm(&r.dn())).collect()
}

fn sorted(mut list: Vec<String>) -> Vec<String> {
    list.sort();
    list
}

fn base_dns() -> Vec<String> {
    std::fs::read_to_string(base_ldif())
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("dn: "))
        .map(norm)
        .collect()
}

fn glued_dns() -> Vec<String> {
    [
        GLUED.to_string(),
        format!("cn=g1,{GLUED}"),
        format!("cn=g2,{GLUED}"),
    ]
    .iter()
    .map(|d| d.to_lowercase())
    .collect()
}

#[test]
fn routing_root_dse_and_glue() {
    let s = Server::start_with_databases(&databases());
    fill(&s);

    // The root DSE names every naming context but the glued subordinate. slapd lists databases in
    // its configuration order, where a database inside another must come first; canopy in its own
    // order: the set is the same.
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "(objectClass=*)", "namingContexts"],
    );
    dse.expect_code(0, "root DSE");
    let contexts: Vec<String> = dse
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("namingContexts: "))
        .map(str::to_lowercase)
        .collect();
    let want: Vec<String> = [SUFFIX, OTHER, APART, RO]
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(sorted(contexts), sorted(want), "{}", dse.stdout);

    // Subtree at the superior: its own entries, then the glued database's; not the apart one's.
    let all = s.search(&Bind::Anonymous, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    all.expect_code(0, "subtree search across the glue");
    let got = dns(&all);
    let (main_part, glued_part) = got.split_at(got.len().saturating_sub(3));
    assert_eq!(
        sorted(main_part.to_vec()),
        sorted(base_dns()),
        "{}",
        all.stdout
    );
    assert_eq!(
        sorted(glued_part.to_vec()),
        sorted(glued_dns()),
        "{}",
        all.stdout
    );
    assert_eq!(
        glued_part.first().map(String::as_str),
        Some(&*GLUED.to_lowercase())
    );

    // The root DN, root in both glued databases, sees the hidden one's entry too.
    let root = s.search(&Bind::Root, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    root.expect_code(0, "the root DN's subtree search");
    assert_eq!(dns(&root).len(), base_dns().len() + 4, "{}", root.stdout);
    // Glued databases follow their superior in configuration order, as slapd's glue runs them.
    assert_eq!(
        dns(&root).last(),
        Some(&HIDDEN.to_lowercase()),
        "{}",
        root.stdout
    );

    // Paged: pages go on from the superior into the glued databases, every entry once.
    for page in ["4", "27", "28", "100"] {
        let paged = s.search(
            &Bind::Anonymous,
            &[
                "-E",
                &format!("pr={page}/noprompt"),
                "-b",
                SUFFIX,
                "(objectClass=*)",
                "1.1",
            ],
        );
        paged.expect_code(0, &format!("paged search across the glue, pages of {page}"));
        let mut want = base_dns();
        want.extend(glued_dns());
        assert_eq!(
            sorted(dns(&paged)),
            sorted(want),
            "pages of {page}: {}",
            paged.stdout
        );
    }
    let paged_root = s.search(
        &Bind::Root,
        &[
            "-E",
            "pr=3/noprompt",
            "-b",
            SUFFIX,
            "(objectClass=*)",
            "1.1",
        ],
    );
    assert_eq!(
        dns(&paged_root).len(),
        base_dns().len() + 4,
        "{}",
        paged_root.stdout
    );

    // One level: the glued database's suffix entry is a child like any other.
    let one = s.search(
        &Bind::Anonymous,
        &["-b", SUFFIX, "-s", "one", "(objectClass=*)", "1.1"],
    );
    one.expect_code(0, "one-level search across the glue");
    let want: Vec<String> = ["ou=people", "ou=groups", "ou=projects", "ou=glued"]
        .iter()
        .map(|rdn| format!("{rdn},{SUFFIX}"))
        .collect();
    assert_eq!(sorted(dns(&one)), sorted(want), "{}", one.stdout);

    let base = s.search(
        &Bind::Anonymous,
        &["-b", SUFFIX, "-s", "base", "(objectClass=*)", "1.1"],
    );
    assert_eq!(dns(&base), vec![SUFFIX.to_string()]);

    // slapd's glue leaves the children scope to the superior alone.
    let children = s.search(
        &Bind::Anonymous,
        &["-b", SUFFIX, "-s", "children", "(objectClass=*)", "1.1"],
    );
    children.expect_code(0, "children scope");
    assert_eq!(
        sorted(dns(&children)),
        sorted(base_dns()[1..].to_vec()),
        "{}",
        children.stdout
    );

    // A search based inside the subordinate stays there; one of the apart database sees only it.
    let inside = s.search(&Bind::Anonymous, &["-b", GLUED, "(objectClass=*)", "1.1"]);
    assert_eq!(sorted(dns(&inside)), sorted(glued_dns()));
    let apart = s.search(&Bind::Anonymous, &["-b", APART, "(objectClass=*)", "1.1"]);
    let want = vec![
        APART.to_lowercase(),
        format!("cn=a1,{APART}").to_lowercase(),
    ];
    assert_eq!(sorted(dns(&apart)), sorted(want));
    // A filter finds entries of the glued database from the superior's base.
    let filtered = s.search(&Bind::Anonymous, &["-b", SUFFIX, "(cn=g2)", "1.1"]);
    assert_eq!(
        dns(&filtered),
        vec![format!("cn=g2,{GLUED}").to_lowercase()]
    );
    let not_apart = s.search(&Bind::Anonymous, &["-b", SUFFIX, "(cn=a1)", "1.1"]);
    not_apart.expect_code(0, "apart entries are not found from the superior");
    assert!(dns(&not_apart).is_empty(), "{}", not_apart.stdout);

    // One size limit across the glue: every entry of the superior, then one of the subordinate.
    let limit = (base_dns().len() + 1).to_string();
    let limited = s.search(
        &Bind::Anonymous,
        &["-z", &limit, "-b", SUFFIX, "(objectClass=*)", "1.1"],
    );
    limited.expect_code(4, "size limit counted across the glue");
    assert_eq!(
        dns(&limited).len(),
        base_dns().len() + 1,
        "{}",
        limited.stdout
    );
    assert_eq!(dns(&limited).last(), Some(&GLUED.to_lowercase()));
    let small = s.search(
        &Bind::Anonymous,
        &["-z", "2", "-b", SUFFIX, "(objectClass=*)", "1.1"],
    );
    small.expect_code(4, "size limit inside the superior");
    assert_eq!(dns(&small).len(), 2);
}

#[test]
fn writes_stay_in_their_database() {
    let s = Server::start_with_databases(&databases());
    fill(&s);
    let alice = user_dn("alice");
    let moves = [
        (alice.as_str(), GLUED),
        (alice.as_str(), OTHER),
        (alice.as_str(), "dc=nowhere"),
    ];
    for (dn, superior) in moves {
        let out = s.tool(
            "ldapmodrdn",
            &Bind::Root,
            &["-s", superior, dn, "uid=alice"],
            None,
        );
        out.expect_code(71, &format!("{dn} moved under {superior}"));
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(text.contains("cannot rename between DSAs"), "{text}");
    }
    let g1 = format!("cn=g1,{GLUED}");
    let out = s.tool(
        "ldapmodrdn",
        &Bind::Root,
        &["-s", &format!("ou=people,{SUFFIX}"), &g1, "cn=g1"],
        None,
    );
    out.expect_code(71, "out of the glued database");
    // Checked before access: a requester with no rights there still gets 71.
    let out = s.tool(
        "ldapmodrdn",
        &boss(),
        &["-s", GLUED, &alice, "uid=alice"],
        None,
    );
    out.expect_code(71, "the other root DN moving an entry of the main database");
    // Renamed in place onto the glued database's suffix: the new DN is that database's.
    let out = s.tool(
        "ldapmodrdn",
        &Bind::Root,
        &["-r", &format!("ou=people,{SUFFIX}"), "ou=glued"],
        None,
    );
    out.expect_code(71, "renamed onto the glued database's suffix");
    // Renames inside one database still work, the glued one included.
    let out = s.tool("ldapmodrdn", &Bind::Root, &["-r", &g1, "cn=g9"], None);
    out.expect_code(0, "rename inside the glued database");

    // Each database's root DN is root there only; each database's rules apply to the others.
    let change =
        |dn: &str| format!("dn: {dn}\nchangetype: modify\nreplace: description\ndescription: x\n");
    s.modify(&boss(), &change(&alice))
        .expect_code(50, "the other database's root DN in the main database");
    s.modify(&Bind::Root, &change(&format!("cn=o1,{OTHER}")))
        .expect_code(50, "the main root DN in the other database");
    s.modify(&boss(), &change(&format!("cn=o1,{OTHER}")))
        .expect_code(0, "the other database's root DN in its database");
    s.modify(&Bind::Root, &change(&format!("cn=g2,{GLUED}")))
        .expect_code(0, "the main root DN is the glued database's root DN too");
    let who = s.whoami(Via::Ldap, &boss());
    who.expect_code(0, "bind as the other database's root DN");
    assert_eq!(who.stdout.trim().to_lowercase(), format!("dn:{BOSS}"));
    let wrong = Bind::Simple(BOSS.into(), "wrong".into());
    s.whoami(Via::Ldap, &wrong)
        .expect_code(49, "wrong root password");

    // The other database's rules: users read, anonymous sees nothing; its size limit is 2.
    let anon = s.search(&Bind::Anonymous, &["-b", OTHER, "(objectClass=*)", "1.1"]);
    anon.expect_code(32, "anonymous in the other database");
    let user = s.search(
        &Bind::user("alice"),
        &["-b", OTHER, "(objectClass=*)", "1.1"],
    );
    user.expect_code(4, "the other database's size limit");
    assert_eq!(dns(&user).len(), 2, "{}", user.stdout);
    let root = s.search(&boss(), &["-b", OTHER, "(objectClass=*)", "1.1"]);
    root.expect_code(0, "its root DN has no limit");
    assert_eq!(dns(&root).len(), 4);
    // The main database's limit (500) is untouched by it.
    let main = s.search(
        &Bind::user("alice"),
        &["-b", SUFFIX, "-s", "one", "(objectClass=*)", "1.1"],
    );
    main.expect_code(0, "the main database's limits");

    // The other database's memberof overlay keeps memberOf there, and only there.
    let group = |dn: &str, member: &str| {
        format!("dn: {dn}\nobjectClass: groupOfNames\ncn: grp\nmember: {member}\n")
    };
    let o2 = format!("cn=o2,{OTHER}");
    s.add(&boss(), &group(&format!("cn=grp,{OTHER}"), &o2))
        .expect_code(0, "a group in the other database");
    let member_of = s.read(&boss(), &o2, &["memberOf"]);
    assert!(
        member_of
            .stdout
            .to_lowercase()
            .contains(&format!("memberof: cn=grp,{OTHER}")),
        "{}",
        member_of.stdout
    );
    s.add(&Bind::Root, &group(&format!("cn=grp,{SUFFIX}"), &alice))
        .expect_code(0, "a group in the main database");
    let alice_of = s.read(&Bind::Root, &alice, &["memberOf"]);
    assert!(
        !alice_of.stdout.to_lowercase().contains("memberof:"),
        "no memberof overlay in the main database: {}",
        alice_of.stdout
    );

    // A read-only database refuses writes, even from its root DN.
    let keeper = Bind::Simple(RO_ADMIN.into(), RO_PW.into());
    let out = s.add(&keeper, &domain(RO, "ro"));
    out.expect_code(53, "write to a read-only database");
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("operation restricted"), "{text}");
    s.whoami(Via::Ldap, &keeper)
        .expect_code(0, "the read-only database's root DN binds");
}

#[test]
fn offline_tools_per_database_and_restart() {
    let mut s = Server::start_with_databases(&databases());
    fill(&s);
    s.terminate();
    // Export by suffix: each database alone.
    let other = s.export_of(OTHER);
    other.expect_code(0, "export of the other database");
    let mut exported: Vec<String> = dns(&other);
    exported.sort();
    let mut want: Vec<String> = ["", "cn=o1,", "cn=o2,", "cn=o3,"]
        .iter()
        .map(|p| format!("{p}{OTHER}"))
        .collect();
    want.sort();
    assert_eq!(exported, want, "{}", other.stdout);
    let glued = s.export_of(GLUED);
    assert_eq!(sorted(dns(&glued)), sorted(glued_dns()), "{}", glued.stdout);
    // The superior's export goes on with the databases glued into it (slapcat without -g).
    let main = s.export_of(SUFFIX);
    let got = dns(&main);
    let (own, glued_part) = got.split_at(base_dns().len().min(got.len()));
    assert_eq!(sorted(own.to_vec()), sorted(base_dns()), "{}", main.stdout);
    let mut both_glued = glued_dns();
    both_glued.push(HIDDEN.to_lowercase());
    assert_eq!(
        sorted(glued_part.to_vec()),
        sorted(both_glued),
        "{}",
        main.stdout
    );

    // Import into the read-only database, offline.
    let ldif = s.dir().join("ro.ldif");
    let text = format!(
        "{}{}",
        domain(RO, "ro"),
        person(&format!("cn=r1,{RO}"), "r1")
    );
    std::fs::write(&ldif, text).unwrap();
    s.import_to(RO, &ldif)
        .expect_code(0, "import into the read-only database");

    // Every database's data survives the restart.
    s.restart();
    let ro = s.search(&Bind::Anonymous, &["-b", RO, "(objectClass=*)", "1.1"]);
    ro.expect_code(0, "the imported database");
    assert_eq!(dns(&ro).len(), 2, "{}", ro.stdout);
    let all = s.search(&Bind::Anonymous, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    assert_eq!(dns(&all).len(), base_dns().len() + 3, "{}", all.stdout);
    let other = s.search(&boss(), &["-b", OTHER, "(objectClass=*)", "1.1"]);
    assert_eq!(dns(&other).len(), 4, "{}", other.stdout);
    let apart = s.search(&Bind::Anonymous, &["-b", APART, "(objectClass=*)", "1.1"]);
    assert_eq!(dns(&apart).len(), 2, "{}", apart.stdout);
}

/// An import into the main database fills the databases glued below it with their entries, as slapadd
/// does without `-g` (OpenLDAP's test011): the superior's export, loaded into empty databases, gives
/// each database its own entries again.
#[test]
fn import_routes_entries_into_glued_databases() {
    let mut s = Server::start_with_databases(&databases());
    fill(&s);
    s.terminate();
    let main = s.export_of(SUFFIX);
    main.expect_code(0, "export of the main database with its glued ones");
    let ldif = s.dir().join("main-and-glued.ldif");
    std::fs::write(&ldif, &main.stdout).unwrap();
    let fresh = Server::start_with_databases_imported(&databases(), &ldif);
    let glued = fresh.export_of(GLUED);
    glued.expect_code(0, "export of the glued database");
    assert_eq!(sorted(dns(&glued)), sorted(glued_dns()), "{}", glued.stdout);
    let hidden = fresh.export_of(HIDDEN);
    assert_eq!(dns(&hidden), [HIDDEN.to_lowercase()], "{}", hidden.stdout);
    let all = fresh.search(&Bind::Root, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    all.expect_code(0, "the whole glued tree");
    let mut want = base_dns();
    want.extend(glued_dns());
    want.push(HIDDEN.to_lowercase());
    assert_eq!(sorted(dns(&all)), sorted(want), "{}", all.stdout);
    // The database kept apart is not glued: the superior's export leaves it out, so its suffix
    // entry is not found (it is another database's, and that one is empty).
    let apart = fresh.search(
        &Bind::Root,
        &["-b", APART, "-s", "base", "(objectClass=*)", "1.1"],
    );
    assert_eq!(apart.code, 32, "{}", apart.stdout);
}

/// A subtree search visits the glued databases in configuration order, a deeper suffix configured
/// first included (OpenLDAP's test011: its IT division, inside ou=People, before ou=Groups).
#[test]
fn glued_databases_answer_in_configuration_order() {
    let deep = format!("ou=it,ou=people,{SUFFIX}");
    let shallow = format!("ou=teams,{SUFFIX}");
    let glued = |suffix: &str| ExtraDatabase {
        suffix: suffix.into(),
        root_dn: Some(ROOT_DN.into()),
        subordinate: Some(true),
        ..Default::default()
    };
    let s = Server::start_with_databases(&[glued(&deep), glued(&shallow)]);
    let entries = format!(
        "{}{}{}{}",
        unit(&shallow, "teams"),
        person(&format!("cn=t1,{shallow}"), "t1"),
        unit(&deep, "it"),
        person(&format!("cn=i1,{deep}"), "i1"),
    );
    s.add(&Bind::Root, &entries)
        .expect_code(0, "fill both glued databases");
    let all = s.search(&Bind::Root, &["-b", SUFFIX, "(objectClass=*)", "1.1"]);
    all.expect_code(0, "the whole tree");
    let got = dns(&all);
    assert_eq!(
        got[got.len() - 4..],
        [
            deep.to_lowercase(),
            format!("cn=i1,{deep}").to_lowercase(),
            shallow.to_lowercase(),
            format!("cn=t1,{shallow}").to_lowercase(),
        ],
        "{}",
        all.stdout
    );
}

/// A database with the empty suffix (slapd's `suffix ""`, OpenLDAP's test027) holds every name the other
/// databases do not: its top entries (`c=US`, ...) hang from a virtual root, searched with base "" in
/// every scope but base (which is the root DSE), written, deleted and renamed by its root DN.
#[test]
fn a_database_with_the_empty_suffix() {
    let target = Target::from_env();
    let manager = Bind::Simple("cn=Manager,c=US".into(), "secret".into());
    let countries = |codes: &[&str]| -> String {
        codes
            .iter()
            .map(|c| {
                format!(
                    "dn: c={c}\nobjectClass: country\nc: {c}\n\n\
                     dn: o=Org,c={c}\nobjectClass: organization\no: Org\n\n"
                )
            })
            .collect()
    };
    let dir = tempdir::TempDir::new("empty-suffix");
    let ldif = dir.path().join("countries.ldif");
    std::fs::write(&ldif, countries(&["US", "UK", "DE"])).unwrap();
    let config = match target {
        Target::Slapd => {
            let conf = canopy_harness::slapd_conf::render(
                std::path::Path::new("@DIR@"),
                std::path::Path::new("@DIR@/data"),
            );
            format!(
                "{conf}\ndatabase mdb\nsuffix \"\"\nrootdn \"cn=Manager,c=US\"\nrootpw secret\n\
                 directory @DIR@/empty\naccess to * by * read\n"
            )
        }
        Target::Canopy => format!(
            "suffix = \"\"\nroot_dn = \"cn=Manager,c=US\"\nroot_password = \"secret\"\n\
             access = [\"to * by * read\"]\n\n[[database]]\nsuffix = \"{SUFFIX}\"\n\
             root_dn = \"{ROOT_DN}\"\nroot_password = \"{ROOT_PW}\"\nsubordinate = false\n"
        ),
    };
    let s = Server::start_configured(target, &config, &["data", "empty"], &[("", &ldif)]);
    let names = |scope: &str| {
        let out = s.search(
            &Bind::Anonymous,
            &["-b", "", "-s", scope, "(objectClass=*)", "1.1"],
        );
        out.expect_code(0, &format!("{scope} search of the empty suffix"));
        sorted(dns(&out))
    };
    let every = |codes: &[&str]| {
        sorted(
            codes
                .iter()
                .flat_map(|c| [format!("c={c}"), format!("o=org,c={c}")])
                .map(|d| d.to_lowercase())
                .collect(),
        )
    };
    assert_eq!(names("sub"), every(&["US", "UK", "DE"]));
    assert_eq!(names("children"), every(&["US", "UK", "DE"]));
    assert_eq!(
        names("one"),
        sorted(vec!["c=de".into(), "c=uk".into(), "c=us".into()])
    );
    // Base scope is the root DSE, which names both databases.
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "namingContexts"],
    );
    let mut contexts: Vec<String> = dse
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("namingContexts:"))
        .map(|v| v.trim().to_lowercase())
        .collect();
    contexts.sort();
    assert_eq!(contexts, ["", SUFFIX], "{}", dse.stdout);
    // Writes: a new top entry, deletes, a rename of a top entry and a move between them.
    s.add(&manager, &countries(&["FR"]))
        .expect_code(0, "add below the root");
    s.modify(
        &manager,
        "dn: o=Org,c=DE\nchangetype: delete\n\ndn: c=DE\nchangetype: delete\n\n\
         dn: c=UK\nchangetype: modrdn\nnewrdn: c=GB\ndeleteoldrdn: 1\n\n\
         dn: o=Org,c=FR\nchangetype: modrdn\nnewrdn: o=Moved\ndeleteoldrdn: 1\nnewsuperior: c=US\n",
    )
    .expect_code(0, "delete, rename and move");
    let mut want = every(&["US", "GB"]);
    want.extend(["c=fr".to_string(), "o=moved,c=us".to_string()]);
    assert_eq!(names("sub"), sorted(want));
    // The other database is apart: not in the empty suffix's searches, but served on its own.
    let main = s.search(&Bind::Anonymous, &["-b", SUFFIX, "-s", "base", "1.1"]);
    assert_eq!(main.code, 32, "nothing loaded there: {}", main.stdout);
    if target == Target::Canopy {
        // Top entries whose parent is the virtual root are consistent for the fsck.
        let mut s = s;
        s.terminate();
        let out = s.canopy_tool("verify", &[]);
        out.expect_code(0, "verify of the empty suffix's database");
        assert!(out.stderr.contains(" 0 problems"), "{}", out.stderr);
    }
}

/// False (with the reason printed) when the suite runs against slapd.
fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} is canopy's own, slapd has no equivalent to compare");
        return false;
    }
    true
}

#[test]
fn canopy_numbers_databases_for_its_tools() {
    if !canopy_target("`--database N`, cn=Monitor's database list and backup per database") {
        return;
    }
    let mut s = Server::start_with_databases(&databases());
    fill(&s);

    // The root DSE in configuration order; cn=Monitor names every database.
    let dse = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "(objectClass=*)", "namingContexts"],
    );
    let contexts: Vec<String> = dse
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("namingContexts: "))
        .map(str::to_lowercase)
        .collect();
    assert_eq!(contexts, vec![SUFFIX, OTHER, APART, RO], "{}", dse.stdout);
    let monitor = s.search(
        &Bind::Root,
        &[
            "-b",
            "cn=Databases,cn=Monitor",
            "-s",
            "one",
            "(objectClass=*)",
            "namingContexts",
            "readOnly",
        ],
    );
    monitor.expect_code(0, "cn=Monitor's databases");
    for suffix in [SUFFIX, GLUED, OTHER, APART, RO, HIDDEN, "cn=Monitor"] {
        assert!(
            monitor
                .stdout
                .contains(&format!("namingContexts: {suffix}\n")),
            "{suffix} missing:\n{}",
            monitor.stdout
        );
    }
    assert_eq!(
        monitor.stdout.matches("readOnly: TRUE").count(),
        2,
        "{}",
        monitor.stdout
    );

    // A writing tool on any database waits for the server, which holds the data directory.
    let backup = s.dir().join("backup-other");
    let backup_text = backup.to_string_lossy().to_string();
    s.canopy_tool("backup", &["-n", "3", &backup_text])
        .expect_code(0, "backup of database 3 beside the server");
    let busy = s.canopy_tool("restore", &["-n", "3", "--force", &backup_text]);
    assert_ne!(busy.code, 0, "restore beside the server: {}", busy.stdout);
    s.terminate();

    let by_number = s.canopy_tool("export", &["-n", "3"]);
    by_number.expect_code(0, "export -n 3");
    assert_eq!(sorted(dns(&by_number)), sorted(dns(&s.export_of(OTHER))));
    assert_eq!(dns(&by_number).len(), 4);
    let alone = s.canopy_tool("export", &["-n", "1", "-g"]);
    assert_eq!(
        sorted(dns(&alone)),
        sorted(base_dns()),
        "-g: no glued databases"
    );
    for (args, want) in [
        (vec!["-n", "0"], "cn=config"),
        (vec!["-n", "9"], "has 6 databases"),
        (vec!["-b", "dc=nowhere"], "no database has the suffix"),
    ] {
        let out = s.canopy_tool("export", &args);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    }
    let check = s.canopy_tool("serve", &["--check"]);
    check.expect_code(0, "serve --check of six databases");
    assert!(
        check.stdout.contains("and 5 more databases"),
        "{}",
        check.stdout
    );

    // acl-check asks the database that holds the entry: each root DN is root in its own only.
    let o1 = format!("cn=o1,{OTHER}");
    s.canopy_tool(
        "acl-check",
        &["--as", BOSS, "--entry", &o1, "--level", "write"],
    )
    .expect_code(0, "the other root DN writes in its database");
    s.canopy_tool(
        "acl-check",
        &["--as", ROOT_DN, "--entry", &o1, "--level", "write"],
    )
    .expect_code(1, "the main root DN does not write in the other database");
    s.canopy_tool(
        "acl-check",
        &[
            "--as",
            ROOT_DN,
            "--entry",
            &user_dn("alice"),
            "--level",
            "write",
        ],
    )
    .expect_code(0, "the main root DN writes in its database");
    s.canopy_tool("verify", &["-n", "2"])
        .expect_code(0, "verify of the glued database");
    s.canopy_tool("reindex", &["-b", OTHER])
        .expect_code(0, "reindex of the other database");
    s.canopy_tool("verify", &["-b", OTHER])
        .expect_code(0, "verify after reindex");

    // An import into a database that holds entries is refused, whichever database the file's
    // entries belong to.
    let ldif = s.dir().join("inner.ldif");
    std::fs::write(&ldif, person(&format!("cn=x,{GLUED}"), "x")).unwrap();
    let out = s.canopy_tool("import", &["-n", "1", &ldif.to_string_lossy()]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("not empty"), "{}", out.stderr);

    // Restore of one database, offline.
    s.canopy_tool("restore", &["-n", "3", "--force", &backup_text])
        .expect_code(0, "restore of database 3");
    s.restart();
    let other = s.search(&boss(), &["-b", OTHER, "(objectClass=*)", "1.1"]);
    assert_eq!(dns(&other).len(), 4, "{}", other.stdout);
    let glued = s.search(&Bind::Anonymous, &["-b", GLUED, "(objectClass=*)", "1.1"]);
    assert_eq!(dns(&glued).len(), 3, "{}", glued.stdout);
}
