//! Dynamic entries (RFC 2589): slapd's dds overlay and the Refresh extended operation
//! (tests/e2e/py/dds.py), configured alike on both servers.

use std::path::Path;

use canopy_e2e::*;

fn start() -> Server {
    start_with(
        "dds-max-ttl 86400\ndds-min-ttl 2\ndds-default-ttl 600\n\
         dds-interval 1\ndds-tolerance 0\ndds-max-dynamicObjects 4\n",
        "max-ttl = 86400\nmin-ttl = 2\ndefault-ttl = 600\n\
         interval = 1\ntolerance = 0\nmax-dynamicObjects = 4\n",
    )
}

/// A server whose main database has the dds overlay with `slapd` (directives) or `canopy`
/// (TOML options) as its settings.
fn start_with(slapd: &str, canopy: &str) -> Server {
    let target = Target::from_env();
    let server = match target {
        Target::Slapd => {
            let conf = canopy_harness::slapd_conf::render_with_overlays(
                Path::new("@DIR@"),
                Path::new("@DIR@/data"),
                &format!("overlay dds\n{slapd}"),
            );
            Server::start_configured(target, &conf, &["data"], &[])
        }
        Target::Canopy => Server::start_configured(
            target,
            &format!("[[overlay]]\nname = \"dds\"\n{canopy}"),
            &[],
            &[],
        ),
    };
    server.load_base();
    server
}

#[test]
fn dynamic_entries() {
    let s = start();
    let out = s.python("dds.py", &[]);
    assert_eq!(
        out.code, 0,
        "dds.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let mut t = Transcript::new("dds");
    t.raw("dds.py", &out);
    // The Refresh operation is offered; the schema of dynamic entries, as published.
    let dse = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "",
            "-s",
            "base",
            "(objectClass=*)",
            "supportedExtension",
        ],
    );
    let refresh: Vec<String> = dse.records()[0]
        .values("supportedExtension")
        .into_iter()
        .filter(|oid| oid.starts_with("1.3.6.1.4.1.1466.101.119"))
        .collect();
    t.text("root DSE", &format!("supportedExtension: {refresh:?}"));
    let schema = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "cn=Subschema",
            "-s",
            "base",
            "(objectClass=*)",
            "attributeTypes",
            "objectClasses",
        ],
    );
    let records = schema.records();
    let defs: Vec<String> = ["attributeTypes", "objectClasses"]
        .iter()
        .flat_map(|attr| records[0].values(attr))
        .filter(|def| {
            // slapd keeps entryExpireTimestamp out of cn=Subschema; Canopy lists it.
            ["entryTtl", "dynamicSubtrees", "dynamicObject"]
                .iter()
                .any(|name| def.contains(&format!("'{name}'")))
                // The overlay's cn=config names (olcDDS*), as its module defines them.
                || def.contains("NAME 'olcDDS")
        })
        .collect();
    t.text("schema", &defs.join("\n"));
    t.check();
}

/// `dds-state FALSE`: dynamic entries are refused, and so is a Refresh.
#[test]
fn disabled() {
    let s = start_with("dds-state FALSE\n", "state = false\n");
    let out = s.python("dds.py", &["disabled"]);
    assert_eq!(
        out.code, 0,
        "dds.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let mut t = Transcript::new("dds_disabled");
    t.raw("dds.py disabled", &out);
    t.check();
}

/// The overlay added live as slapd's `olcOverlay=dds` entry (`olcDDSConfig`), after its module: a
/// maximum TTL below a day refused, the settings read back, then a dynamic entry refreshed with
/// Debian's `ldapexop refresh`.
#[test]
fn added_live_through_cn_config() {
    let s = Server::start_with_config_tree();
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let mut t = Transcript::new("dds_live");
    s.modify(
        &Bind::External,
        "dn: cn=module{0},cn=config\nchangetype: modify\nadd: olcModuleLoad\nolcModuleLoad: dds.la\n",
    )
    .expect_code(0, "load the module");
    let overlay = |settings: &str| {
        format!(
            "dn: olcOverlay=dds,olcDatabase={{1}}mdb,cn=config\nobjectClass: olcOverlayConfig\n\
             objectClass: olcDDSConfig\nolcOverlay: dds\n{settings}"
        )
    };
    t.section(
        "a maximum TTL below a day",
        &s.add(&admin, &overlay("olcDDSmaxTtl: 3600\n")),
    );
    t.section(
        "the overlay",
        &s.add(
            &admin,
            &overlay("olcDDSmaxTtl: 86400\nolcDDSminTtl: 10\nolcDDSdefaultTtl: 600\n"),
        ),
    );
    t.section(
        "its settings",
        &s.read(
            &admin,
            "olcOverlay={0}dds,olcDatabase={1}mdb,cn=config",
            &["olcDDSmaxTtl", "olcDDSminTtl", "olcDDSdefaultTtl"],
        ),
    );
    let dn = format!("cn=live,{SUFFIX}");
    t.section(
        "a dynamic entry",
        &s.add(
            &Bind::Root,
            &format!("dn: {dn}\nobjectClass: device\nobjectClass: dynamicObject\ncn: live\n"),
        ),
    );
    t.section("its TTL", &s.read(&Bind::Root, &dn, &["entryTtl"]));
    t.raw(
        "ldapexop refresh",
        &s.tool("ldapexop", &Bind::Root, &["refresh", &dn, "5"], None),
    );
    t.section(
        "its TTL after the refresh",
        &s.read(&Bind::Root, &dn, &["entryTtl"]),
    );
    t.check();
}

/// A Refresh needs write access to entryTtl only (OpenLDAP's test046): a member granted `manage` on
/// a meeting's entryTtl by `dnattr=member` refreshes it though every other attribute of it is
/// read-only to them, and a non-member may not.
#[test]
fn refresh_needs_access_to_entry_ttl_only() {
    let rules = [
        "to attrs=userPassword by self write by anonymous auth by * none",
        r#"to dn.base="ou=groups,dc=example,dc=com" attrs=children by users write"#,
        r#"to dn.onelevel="ou=groups,dc=example,dc=com" attrs=entryTtl by dnattr=member manage by * read"#,
        r#"to dn.onelevel="ou=groups,dc=example,dc=com" by dnattr=creatorsName write by * read"#,
        "to * by users read by * none",
    ];
    let s = Server::start_with_overlays_schema_access(
        "overlay dds\ndds-max-ttl 86400\ndds-min-ttl 2\ndds-default-ttl 600\n",
        &[],
        &rules,
        "[[overlay]]\nname = \"dds\"\nmax-ttl = 86400\nmin-ttl = 2\ndefault-ttl = 600\n",
    );
    let meeting = "cn=meeting,ou=groups,dc=example,dc=com";
    let add = format!(
        "dn: {meeting}\nchangetype: add\nobjectClass: groupOfNames\nobjectClass: dynamicObject\n\
         cn: meeting\nmember: {}\nmember: {}\n",
        user_dn("alice"),
        user_dn("bob")
    );
    s.modify(&Bind::user("alice"), &add)
        .expect_code(0, "alice creates a meeting");
    let refresh = |who: &str| {
        s.tool(
            "ldapexop",
            &Bind::user(who),
            &["refresh", meeting, "120"],
            None,
        )
    };
    refresh("bob").expect_code(0, "bob, a member, refreshes the meeting");
    // ldapexop exits 1 on any refusal; its message names the code.
    let carol = refresh("carol");
    assert!(
        carol.code != 0 && carol.stderr.contains("Insufficient access (50)"),
        "carol, no member, may not: {} {}",
        carol.code,
        carol.stderr
    );
    s.modify(
        &Bind::user("bob"),
        &format!("dn: {meeting}\nchangetype: modify\nreplace: cn\ncn: meeting\n"),
    )
    .expect_code(50, "bob may not write the meeting's other attributes");
}
