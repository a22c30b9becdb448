//! Aliases and derefAliases (RFC 4511 §4.5.1.3), referral objects with ManageDsaIT and continuation
//! references (RFC 3296), the assertion control (RFC 4528) and pre-/post-read (RFC 4527), on the
//! entries of data/aliases_referrals.ldif, through ldapsearch and python-ldap.

use canopy_e2e::*;

/// A server with base.ldif and the aliases and referral objects.
fn start() -> Server {
    let s = Server::start();
    let ldif = std::fs::read_to_string(data_dir().join("aliases_referrals.ldif"))
        .expect("data/aliases_referrals.ldif");
    s.add(&Bind::Root, &ldif)
        .expect_code(0, "load aliases_referrals.ldif");
    s
}

/// slapd can return an entry twice when aliases reach it along two paths; RFC 4511 §4.5.1.3 says servers
/// SHOULD eliminate such duplicates and canopy does (docs/compatibility.md), so results are compared
/// with repeated records removed.
fn without_repeats(out: Out) -> Out {
    let mut seen = Vec::new();
    let mut kept = String::new();
    for record in out.stdout.split("\n\n") {
        let record = record.trim_matches('\n');
        if record.is_empty() || seen.iter().any(|s: &String| s == record) {
            continue;
        }
        seen.push(record.to_string());
        kept.push_str(record);
        kept.push_str("\n\n");
    }
    Out {
        stdout: kept,
        ..out
    }
}

#[test]
fn aliases_in_every_deref_mode_and_scope() {
    let s = start();
    let mut t = Transcript::new("features_aliases");
    let bases = [
        "ou=aliases",
        "uid=alias-alice,ou=aliases",
        "cn=chain,ou=aliases",
        "ou=alias-people,ou=aliases",
        "uid=bob,ou=alias-people,ou=aliases",
        "cn=dangling,ou=aliases",
        "cn=loop1,ou=aliases",
        "cn=nobody,ou=alias-people,ou=aliases",
        "ou=people",
    ];
    for deref in ["never", "search", "find", "always"] {
        for scope in ["base", "one", "sub", "children"] {
            for base in bases {
                let dn = format!("{base},{SUFFIX}");
                let out = s.search(
                    &Bind::Anonymous,
                    &[
                        "-a",
                        deref,
                        "-s",
                        scope,
                        "-b",
                        &dn,
                        "(objectClass=*)",
                        "1.1",
                    ],
                );
                t.section(
                    &format!("-a {deref} -s {scope} -b {base}"),
                    &without_repeats(out),
                );
            }
        }
    }
    // A filter is tested on the entry an alias leads to, not on the alias.
    for (deref, filter) in [
        ("search", "(uid=alice)"),
        ("search", "(uid=alias-alice)"),
        ("never", "(uid=alias-alice)"),
        ("always", "(objectClass=alias)"),
        ("find", "(objectClass=alias)"),
    ] {
        let base = format!("ou=aliases,{SUFFIX}");
        let out = s.search(
            &Bind::Anonymous,
            &["-a", deref, "-s", "sub", "-b", &base, filter, "uid", "cn"],
        );
        t.section(
            &format!("-a {deref} {filter} under ou=aliases"),
            &without_repeats(out),
        );
    }
    // Updates never follow aliases: the alias entry itself is changed.
    let change = format!(
        "dn: uid=alias-alice,ou=aliases,{SUFFIX}\nchangetype: modify\nadd: description\n\
         description: the alias itself\n"
    );
    t.section("modify an alias", &s.modify(&Bind::Root, &change));
    t.section(
        "read the alias without dereferencing",
        &s.search(
            &Bind::Anonymous,
            &[
                "-a",
                "never",
                "-s",
                "base",
                "-b",
                &format!("uid=alias-alice,ou=aliases,{SUFFIX}"),
            ],
        ),
    );
    t.check();
}

fn run_script(script: &str, expected: &str) {
    start().check_python(script, expected);
}

#[test]
fn referrals_and_manage_dsa_it() {
    run_script("referrals.py", "features_referrals");
}

#[test]
fn assertion_and_read_entry_controls() {
    run_script("assert_read.py", "features_assert_read");
}

#[test]
fn root_dse_lists_the_controls() {
    let s = Server::start();
    let out = s.search(
        &Bind::Anonymous,
        &["-b", "", "-s", "base", "supportedControl"],
    );
    let records = out.records();
    let controls = records.first().map(|r| r.values("supportedControl"));
    let controls = controls.unwrap_or_default();
    for oid in [
        "1.3.6.1.1.12",
        "1.3.6.1.1.13.1",
        "1.3.6.1.1.13.2",
        "2.16.840.1.113730.3.4.2",
        // RFC 6171 Don't Use Copy.
        "1.3.6.1.1.22",
    ] {
        assert!(
            controls.iter().any(|c| c == oid),
            "{oid} missing: {controls:?}"
        );
    }
}

#[test]
fn compare_of_special_entries_and_computed_attributes() {
    let s = Server::start();
    let mut t = Transcript::new("features_compare");
    let alice = user_dn("alice");
    let cases = [
        (alice.as_str(), "hasSubordinates:FALSE"),
        (alice.as_str(), "hasSubordinates:TRUE"),
        (alice.as_str(), "hasSubordinates:maybe"),
        (
            alice.as_str(),
            "entryDN:uid=alice,ou=people,dc=example,dc=com",
        ),
        (alice.as_str(), "subschemaSubentry:cn=Subschema"),
        (alice.as_str(), "structuralObjectClass:inetOrgPerson"),
        (alice.as_str(), "creatorsName:cn=admin,dc=example,dc=com"),
        ("ou=people,dc=example,dc=com", "hasSubordinates:TRUE"),
        ("", "objectClass:top"),
        ("", "objectClass:person"),
        ("", "namingContexts:dc=example,dc=com"),
        ("", "supportedLDAPVersion:3"),
        ("", "subschemaSubentry:cn=Subschema"),
        ("", "entryDN:"),
        ("", "fooBar:x"),
        ("cn=Subschema", "cn:Subschema"),
        ("cn=Subschema", "objectClass:subschema"),
        ("cn=Subschema", "cn:other"),
    ];
    for (dn, ava) in cases {
        let out = s.tool("ldapcompare", &Bind::Anonymous, &[dn, ava], None);
        t.raw(&format!("compare {dn:?} {ava}"), &out);
    }
    t.check();
}

/// Filters on attributes the requester may not read are Undefined, presence included; value assertions
/// on subschemaSubentry never hold, its presence does (slapd's behaviour, which canopy follows).
#[test]
fn filters_on_unreadable_and_computed_attributes() {
    let s = Server::start();
    let mut t = Transcript::new("features_filter_views");
    let base = format!("ou=people,{SUFFIX}");
    let filters = [
        "(userPassword=*)",
        "(!(userPassword=*))",
        "(!(userPassword=x))",
        "(userPassword=bob-pw)",
        "(|(uid=a*)(!(userPassword=x)))",
        "(subschemaSubentry=*)",
        "(subschemaSubentry=cn=Subschema)",
        "(!(subschemaSubentry=cn=Subschema))",
        "(subschemaSubentry:dn:2.5.13.1:=cn=Subschema)",
    ];
    for (who, bind) in [
        ("anonymous", Bind::Anonymous),
        ("bob", Bind::user("bob")),
        ("root", Bind::Root),
    ] {
        for filter in filters {
            let out = s.search(&bind, &["-b", &base, "-s", "one", filter, "1.1"]);
            t.section(&format!("{who} {filter}"), &out);
        }
    }
    for (base, filter) in [
        ("", "(!(subschemaSubentry=cn=Subschema))"),
        ("cn=Subschema", "(subschemaSubentry=*)"),
    ] {
        let out = s.search(&Bind::Anonymous, &["-b", base, "-s", "base", filter, "1.1"]);
        t.section(&format!("base {base:?} {filter}"), &out);
    }
    t.check();
}

/// Values of DN syntax are stored in the pretty form slapd gives them (spaces around the separators
/// dropped, the types' and values' case kept), whatever spelling the client used: on add, on
/// modify's add and replace, and the DN the client wrote for the entry itself.
#[test]
fn dn_values_are_stored_pretty() {
    let s = Server::start();
    let mut t = Transcript::new("features_dn_values");
    let dn = format!("cn=Pretty , ou=people,{SUFFIX}");
    t.section(
        "add with spaced DN values",
        &s.add(
            &Bind::Root,
            &format!(
                "dn: {dn}\nobjectClass: person\ncn: Pretty\nsn: P\n\
                 seeAlso: UID=Alice , OU=People,DC=example, dc=com\n\
                 seeAlso: cn=a\\2Cb+sn=x,dc=example,dc=com\n"
            ),
        ),
    );
    let read = |t: &mut Transcript, title: &str| {
        t.section(
            title,
            &s.search(
                &Bind::Root,
                &[
                    "-b",
                    &format!("ou=people,{SUFFIX}"),
                    "(cn=Pretty)",
                    "seeAlso",
                ],
            ),
        );
    };
    read(&mut t, "as stored");
    t.section(
        "modify: add and replace",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: cn=Pretty,ou=people,{SUFFIX}\nchangetype: modify\n\
                 add: seeAlso\nseeAlso: uid=bob ,  ou=people , dc=example,dc=com\n"
            ),
        ),
    );
    read(&mut t, "after the add");
    t.section(
        "replace",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: cn=Pretty,ou=people,{SUFFIX}\nchangetype: modify\n\
                 replace: seeAlso\nseeAlso: CN = Carol ; OU=people\n"
            ),
        ),
    );
    read(&mut t, "after the replace");
    // The legacy `;` separator in a request's DN too.
    t.section(
        "a base DN written with ';'",
        &s.search(
            &Bind::Root,
            &[
                "-s",
                "base",
                "-b",
                "UID=alice ; ou=people;dc=example,dc=com",
                "1.1",
            ],
        ),
    );
    t.check();
}

/// Attribute selection with language tags (RFC 3866): a type selects its subtypes with every option,
/// a tag selects the attributes carrying it, a range (`name;lang-en-`) every tag it begins.
#[test]
fn language_tags_and_ranges_select_attributes() {
    let s = Server::start();
    let mut t = Transcript::new("features_language");
    let dn = format!("cn=Lang,ou=people,{SUFFIX}");
    t.section(
        "add",
        &s.add(
            &Bind::Root,
            &format!(
                "dn: {dn}\nobjectClass: person\nobjectClass: extensibleObject\ncn: Lang\n\
                 cn;lang-en-us: Billy Ray\nsn: Ray\nsn;lang-en-gb;lang-en-us: Billy Ray\n\
                 name;lang-en-us: Billy Bob\nname;lang-fr: Guillaume\nname;lang-en: Bill\n"
            ),
        ),
    );
    for attrs in [
        "name",
        "name;lang-en-us",
        "name;lang-en-",
        "name;lang-",
        "sn;lang-en-us",
        "cn;lang-fr",
    ] {
        t.section(
            &format!("select {attrs}"),
            &s.search(
                &Bind::Root,
                &["-s", "base", "-b", &dn, "(objectClass=*)", attrs],
            ),
        );
    }
    t.check();
}

/// slapd's default referral (`referral`, translated by `canopy migrate`): a name outside every
/// naming context gets a referral (10) to it, naming the target DN (and a search's scope), where
/// it would get noSuchObject (32), or unwillingToPerform (53) for an add. Canopy-only: slapd takes
/// the directive in its global section, which the harness's slapd.conf does not open.
#[test]
fn default_referral_for_names_outside_every_naming_context() {
    if !canopy_e2e::replicas::canopy_only("the harness writes no global slapd directive") {
        return;
    }
    let s = Server::start_canopy_with_config("referral = \"ldap://127.0.0.1:9/\"\n");
    let search = s.tool(
        "ldapsearch",
        &Bind::Root,
        &["-b", "dc=other,dc=org", "(objectClass=*)", "1.1"],
        None,
    );
    assert_eq!(search.code, 10, "{search:?}");
    let text = format!("{}{}", search.stdout, search.stderr);
    assert!(
        text.contains("ldap://127.0.0.1:9/dc=other,dc=org??sub"),
        "{text}"
    );
    let add = s.add(
        &Bind::Root,
        "dn: o=x,dc=other,dc=org\nobjectClass: organization\no: x\n",
    );
    assert_eq!(add.code, 10, "{add:?}");
    // Inside a naming context nothing changes.
    let missing = s.search(&Bind::Root, &["-b", &format!("ou=nowhere,{SUFFIX}"), "1.1"]);
    assert_eq!(missing.code, 32, "{missing:?}");
}

/// objectClass values name their class as the schema does, whatever case or OID the client or the
/// LDIF used, and DN values take their pretty form: on add, on modify, and through the offline import
/// (slapadd for slapd), as slapd stores them.
#[test]
fn object_classes_are_stored_by_their_names() {
    let mut t = Transcript::new("features_class_names");
    let ldif = format!(
        "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n\
         dn: cn=Imported,{SUFFIX}\nobjectclass: 2.5.6.9\nobjectClass: TOP\ncn: Imported\n\
         member: CN=Foo , OU=Bar,DC=example,DC=com\n"
    );
    let scratch = tempdir::TempDir::new("class-names");
    let file = scratch.path().join("classes.ldif");
    std::fs::write(&file, ldif).expect("the LDIF");
    let s = Server::start_imported(&file);
    t.section(
        "add",
        &s.add(
            &Bind::Root,
            &format!(
                "dn: cn=Added,{SUFFIX}\nobjectclass: groupofnames\nobjectClass: 2.5.6.0\n\
                 cn: Added\nmember: UID=Alice,OU=People,DC=example,DC=com\n"
            ),
        ),
    );
    t.section(
        "modify: add a class by OID and in another case",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: cn=Added,{SUFFIX}\nchangetype: modify\nadd: objectClass\n\
                 objectClass: 1.3.6.1.4.1.1466.101.120.111\n"
            ),
        ),
    );
    t.section(
        "read back",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                SUFFIX,
                "-s",
                "one",
                "(objectClass=groupOfNames)",
                "objectClass",
                "member",
            ],
        ),
    );
    t.check();
}
