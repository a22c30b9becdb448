//! The overlays' tables as slapd names their options, and the reasons bad ones are refused.

use super::*;
use canopy_directory::overlay::memberof::Dangling;
use canopy_directory::overlay::refint;
use canopy_directory::overlay::unique::Scope;
use canopy_proto::ResultCode;

fn overlay(text: &str) -> OverlayConfig {
    toml::from_str(text).unwrap()
}

#[test]
fn accesslog_options_as_slapd_names_them() {
    let config = accesslog(&[overlay(
        "name = \"accesslog\"\nlogdb = \"cn=accesslog\"\nlogops = \"add modify\"\n\
         logsuccess = true\nlogpurge = \"07+00:00 01+00:00\"",
    )])
    .unwrap()
    .unwrap();
    assert_eq!(config.logdb, "cn=accesslog");
    assert!(config.ops.add && config.ops.modify && !config.ops.delete && !config.ops.modrdn);
    assert_eq!(
        config.purge,
        Some((
            std::time::Duration::from_secs(7 * 86_400),
            std::time::Duration::from_secs(86_400)
        ))
    );
    assert_eq!(config.access, [accesslog::DEFAULT_ACCESS]);
    let bad = |text: &str, want: &str| {
        let err = check(&[overlay(text)]).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    };
    bad("name = \"accesslog\"", "needs logdb");
    bad(
        "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogops = \"reads\"",
        "writes only",
    );
    bad(
        "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogsuccess = false",
        "logsuccess",
    );
    bad(
        "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogpurge = \"07+00:00\"",
        "an age and an interval",
    );
    bad(
        "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogpurge = \"1+00:00 00:00\"",
        "must not be zero",
    );
    bad(
        "name = \"accesslog\"\nlogdb = \"cn=log\"\nlogold = \"x\"",
        "unknown option \"logold\"",
    );
}

#[test]
fn memberof_options_as_slapd_names_them() {
    let o = overlay(
        "name = \"memberof\"\ngroup-oc = \"groupOfUniqueNames\"\nmember-ad = \"uniqueMember\"\n\
         dangling = \"error\"\ndangling-error = \"noSuchObject\"\nrefint = true\n",
    );
    let config = memberof_config(&o.options, "cn=admin").unwrap();
    assert_eq!(config.group_class, "groupOfUniqueNames");
    assert_eq!(config.member_attr, "uniqueMember");
    assert_eq!(config.memberof_attr, "memberOf");
    assert_eq!(config.dangling, Dangling::Error(ResultCode::NoSuchObject));
    assert!(config.refint);
    assert_eq!(config.modifier, "cn=admin");
    let numbered = overlay("name = \"memberof\"\ndangling = \"error\"\ndangling-error = 53\n");
    assert_eq!(
        memberof_config(&numbered.options, "x").unwrap().dangling,
        Dangling::Error(ResultCode::UnwillingToPerform)
    );
}

#[test]
fn ppolicy_options_as_slapd_names_them() {
    let o = overlay(
        "name = \"ppolicy\"\ndefault = \"cn=pp,dc=example,dc=com\"\nhash_cleartext = true\n\
         use_lockout = true\nforward_updates = false\nsend_netscape_controls = true\n",
    );
    let config = ppolicy_config(&o.options, "cn=admin").unwrap();
    assert_eq!(config.default.as_deref(), Some("cn=pp,dc=example,dc=com"));
    assert!(config.hash_cleartext && config.use_lockout && config.send_netscape_controls);
    assert!(!config.forward_updates);
    assert_eq!(config.modifier, "cn=admin");
    let bad = |text: &str, want: &str| {
        let err = check(&[overlay(text)]).unwrap_err();
        assert!(err.contains(want), "{err}");
    };
    bad("name = \"ppolicy\"\ndefault = \"not a dn\"", "default");
    bad("name = \"ppolicy\"\nuse_lockout = \"yes\"", "use_lockout");
    bad(
        "name = \"ppolicy\"\nlockout = true",
        "unknown option \"lockout\"",
    );
    assert_eq!(schema(&[o]), [ppolicy::PPOLICY_SCHEMA]);
}

#[test]
fn bad_tables_are_refused_with_the_reason() {
    let bad = |text: &str, want: &str| {
        let err = check(&[overlay(text)]).unwrap_err();
        assert!(err.contains(want), "{err}");
    };
    bad("name = \"nosuch\"", "unknown overlay");
    bad("name = \"memberof\"\nbogus = 1", "unknown option \"bogus\"");
    bad("name = \"memberof\"\ndangling = \"sometimes\"", "dangling");
    bad("name = \"memberof\"\nrefint = \"yes\"", "refint");
    bad(
        "name = \"memberof\"\ndangling-error = \"nope\"",
        "dangling-error",
    );
    bad("name = \"memberof\"\ndangling-error = 0", "dangling-error");
    let twice = [
        overlay("name = \"memberof\""),
        overlay("name = \"memberof\""),
    ];
    assert!(check(&twice).unwrap_err().contains("twice"));
    let schema = Schema::builtin();
    let target = Target {
        schema: &schema,
        suffix: "dc=example,dc=com",
    };
    assert_eq!(
        pipeline(&[overlay("name = \"memberof\"")], "cn=admin", &target)
            .unwrap()
            .names(),
        ["stamping", "memberof"]
    );
}

#[test]
fn refint_options_as_slapd_names_them() {
    let o = overlay(
        "name = \"refint\"\nattributes = [\"member\", \"seeAlso\"]\n\
         nothing = \"cn=nobody,dc=example,dc=com\"\nmodifiersname = \"cn=refint\"\n",
    );
    let config = refint_config(&o.options).unwrap();
    assert_eq!(config.attributes, ["member", "seeAlso"]);
    assert_eq!(
        config.nothing.as_deref(),
        Some("cn=nobody,dc=example,dc=com")
    );
    assert_eq!(config.modifier, "cn=refint");
    // slapd's space-separated list, and its default modifiersName.
    let o = overlay("name = \"refint\"\nattributes = \"member uniqueMember\"\n");
    let config = refint_config(&o.options).unwrap();
    assert_eq!(config.attributes, ["member", "uniqueMember"]);
    assert_eq!(config.nothing, None);
    assert_eq!(config.modifier, refint::MODIFIERS_NAME);
}

#[test]
fn unique_options_as_slapd_names_them() {
    let o = overlay(
        "name = \"unique\"\nuri = [\"ldap:///ou=people,dc=example,dc=com?uid,mail?sub\", \
         \"strict ldap:///?cn?one?(objectClass=person)\"]\n",
    );
    let config = unique_config(&o.options).unwrap();
    assert_eq!(config.domains.len(), 2);
    assert!(!config.domains[0].strict && config.domains[1].strict);
    assert_eq!(config.domains[0].uris[0].attributes, ["uid", "mail"]);
    assert_eq!(config.domains[1].uris[0].scope, Scope::One);
    // The older single-domain form.
    let o = overlay(
        "name = \"unique\"\nignore = [\"objectClass\", \"cn\"]\n\
         base = \"ou=people,dc=example,dc=com\"\nstrict = true\n",
    );
    let config = unique_config(&o.options).unwrap();
    let domain = &config.domains[0];
    assert!(domain.ignore && domain.strict);
    assert_eq!(domain.uris[0].attributes, ["objectClass", "cn"]);
    assert_eq!(domain.uris[0].scope, Scope::Sub);
    assert!(domain.uris[0].base.is_some());
    let one = overlay("name = \"unique\"\nuri = \"ldap:///?mail\"\n");
    assert_eq!(unique_config(&one.options).unwrap().domains.len(), 1);
}

#[test]
fn bad_refint_and_unique_tables_are_refused_with_the_reason() {
    let bad = |text: &str, want: &str| {
        let err = check(&[overlay(text)]).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    };
    bad("name = \"refint\"", "attributes");
    bad("name = \"refint\"\nattributes = []", "attributes");
    bad("name = \"refint\"\nattributes = [1]", "attributes");
    bad(
        "name = \"refint\"\nattributes = \"member\"\nnothing = \"not a dn\"",
        "nothing",
    );
    bad(
        "name = \"refint\"\nattributes = \"member\"\nmodifiersname = 3",
        "modifiersname",
    );
    bad(
        "name = \"refint\"\nattributes = \"member\"\nrefint_nothing = \"cn=x\"",
        "unknown option \"refint_nothing\"",
    );
    bad("name = \"unique\"", "no domain");
    bad("name = \"unique\"\nuri = \"ldap:///?uid?base\"", "uri");
    bad("name = \"unique\"\nuri = \"ldap://host/?uid\"", "host");
    bad(
        "name = \"unique\"\nuri = \"ldap:///?uid?sub?(uid=\"",
        "filter",
    );
    bad("name = \"unique\"\nuri = 7", "uri");
    bad(
        "name = \"unique\"\nuri = \"ldap:///?uid\"\nattributes = \"mail\"",
        "cannot be combined",
    );
    bad(
        "name = \"unique\"\nattributes = \"mail\"\nignore = \"cn\"",
        "attributes and ignore",
    );
    bad(
        "name = \"unique\"\nattributes = \"mail\"\nstrict = \"on\"",
        "strict",
    );
    bad("name = \"unique\"\nbase = \"=x\"", "base");
    bad(
        "name = \"unique\"\nunique_uri = \"ldap:///?uid\"",
        "unknown option",
    );
}

#[test]
fn names_and_dns_are_checked_against_the_schema_at_start() {
    let schema = Schema::builtin();
    let target = Target {
        schema: &schema,
        suffix: "dc=example,dc=com",
    };
    let build = |text: &str| pipeline(&[overlay(text)], "cn=admin", &target);
    let names = build("name = \"unique\"\nuri = \"ldap:///?mail\"").unwrap();
    assert_eq!(names.names(), ["stamping", "unique"]);
    let names = build("name = \"refint\"\nattributes = \"member uniqueMember seeAlso\"").unwrap();
    assert_eq!(names.names(), ["stamping", "refint"]);
    let err = |text: &str, want: &str| {
        let err = build(text).err().unwrap();
        assert!(err.contains(want), "{text}: {err}");
    };
    err(
        "name = \"refint\"\nattributes = \"member nosuch\"",
        "\"nosuch\"",
    );
    err(
        "name = \"refint\"\nattributes = \"cn\"",
        "does not hold DNs",
    );
    err("name = \"unique\"\nuri = \"ldap:///?nosuch\"", "\"nosuch\"");
    err(
        "name = \"unique\"\nuri = \"ldap:///dc=elsewhere?mail\"",
        "not within the suffix",
    );
}

#[test]
fn dynlist_tables() {
    let mut schema = Schema::builtin();
    schema
        .load_text(memberof::MEMBEROF_SCHEMA, "memberof")
        .unwrap();
    let target = Target {
        schema: &schema,
        suffix: "dc=example,dc=com",
    };
    let tables = [overlay(
        "name = \"dynlist\"\nattrset = [\"groupOfURLs memberURL member+memberOf@groupOfNames\", \
         \"labeledURIObject labeledURI\"]",
    )];
    check(&tables).unwrap();
    let config = dynlist(&tables, &target).unwrap().unwrap();
    assert_eq!(config.sets.len(), 2);
    assert_eq!(
        schema_of(&tables),
        1,
        "memberOf is defined for the memberOf attribute"
    );
    assert_eq!(
        pipeline(&tables, "cn=admin", &target).unwrap().names(),
        ["stamping"],
        "dynlist is no write hook"
    );
    let one = [overlay(
        "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL\"",
    )];
    assert_eq!(dynlist(&one, &target).unwrap().unwrap().sets.len(), 1);
    assert_eq!(schema_of(&one), 0);
    assert!(dynlist(&[], &target).unwrap().is_none());
    let bad = |text: &str, want: &str| {
        let err = check(&[overlay(text)]).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    };
    bad("name = \"dynlist\"", "attrset: missing");
    bad("name = \"dynlist\"\nattrset = []", "at least one");
    bad("name = \"dynlist\"\nattrset = 3", "expected a string");
    bad(
        "name = \"dynlist\"\nnesting = true",
        "unknown option \"nesting\"",
    );
    bad(
        "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL member+memberOf*\"",
        "follows a static class",
    );
    bad(
        "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL cn:member member\"",
        "mapped attributes",
    );
    let at_start = |text: &str, want: &str| {
        let err = dynlist(&[overlay(text)], &target).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    };
    at_start(
        "name = \"dynlist\"\nattrset = \"groupOfURLs memberURL nosuch\"",
        "unknown attribute \"nosuch\"",
    );
    at_start(
        "name = \"dynlist\"\nattrset = \"groupOfURLs description\"",
        "labeledURI",
    );
}

fn schema_of(tables: &[OverlayConfig]) -> usize {
    schema(tables).len()
}

#[test]
fn constraint_tables() {
    // The example of docs/overlays.md.
    let table = r#"
        name = "constraint"
        constraints = [
          'jpegPhoto size 131072',
          'userPassword count 3',
          'mail regex ^[[:alnum:]]+@mydomain\\.com$',
          'mail negregex ^[[:alnum:]]+@notallowed\\.com$',
          'departmentNumber uri ldap:///ou=departments,dc=example,dc=com?ou?one?(objectClass=organizationalUnit)',
          'cn,sn,givenName set "(this/givenName + [ ] + this/sn) & this/cn" restrict="ldap:///ou=People,dc=example,dc=com??sub?(objectClass=inetOrgPerson)"',
        ]
    "#;
    let rules = constraint_config(&overlay(table).options).unwrap();
    assert_eq!(rules.len(), 6);
    assert_eq!(rules[2].text(), r"mail regex ^[[:alnum:]]+@mydomain\\.com$");
    let built = hook(&overlay(table), "cn=admin", None).unwrap();
    let schema = canopy_schema::Schema::builtin();
    let suffix =
        canopy_schema::NormDn::from_normalized_rdns(vec!["dc=example".into(), "dc=com".into()]);
    built.check(&schema, &suffix).unwrap();
    assert_eq!(
        pipeline(
            &[overlay(table)],
            "cn=admin",
            &Target {
                schema: &schema,
                suffix: "dc=example,dc=com"
            }
        )
        .unwrap()
        .names(),
        ["stamping", "constraint"]
    );
    let empty = overlay("name = \"constraint\"\nconstraints = []");
    assert!(constraint_config(&empty.options).unwrap().is_empty());

    // Each problem names the constraint and what is wrong with it.
    let bad = |lines: &str, want: &str| {
        let text = format!("name = \"constraint\"\nconstraints = [{lines}]");
        let err = check(&[overlay(&text)]).unwrap_err();
        assert!(
            err.contains("\"constraint\"") && err.contains(want),
            "{err}"
        );
    };
    bad(
        "'mail regex ^(a'",
        "constraints[0] \"mail regex ^(a\": bad regular expression",
    );
    bad("'mail size big'", "expected a number");
    bad(
        "'mail uri ldap://elsewhere/dc=x?mail'",
        "host is not allowed",
    );
    bad("'mail uri ldap:///dc=x???(mail=a'", "filter");
    bad("'mail uri ldap:///dc=x'", "names no attribute");
    bad("'cn set \"this/cn &\"'", "set");
    bad("'cn set \"this/cn % [x]\"'", "set");
    bad(
        "'mail size 1', 'mail neguri ldap:///dc=x?mail'",
        "constraints[1]",
    );
    bad("'mail size 1 restrict=ldap:///dc=x?cn'", "restrict URI");
    bad("'mail'", "expected ATTR");
    bad("1", "constraints[0]: expected a string");
    let missing = check(&[overlay("name = \"constraint\"")]).unwrap_err();
    assert!(missing.contains("constraints: missing"), "{missing}");
    let extra = check(&[overlay("name = \"constraint\"\nconstraints = []\nattr = 1")]);
    assert!(extra.unwrap_err().contains("unknown option \"attr\""));
    let listed = check(&[overlay(
        "name = \"constraint\"\nconstraints = \"mail size 1\"",
    )]);
    assert!(listed.unwrap_err().contains("expected a list"));

    // Names are checked against the schema and the suffix when the database opens.
    let unknown = |line: &str, want: &str| {
        let text = format!("name = \"constraint\"\nconstraints = ['{line}']");
        let err = hook(&overlay(&text), "cn=admin", None)
            .unwrap()
            .check(&schema, &suffix)
            .unwrap_err();
        assert!(err.contains(line) && err.contains(want), "{err}");
    };
    unknown("nosuch size 1", "attribute \"nosuch\"");
    unknown(
        "mail uri ldap:///dc=example,dc=com?nosuch?sub",
        "uri attribute",
    );
    unknown("mail uri ldap:///dc=other?mail?sub", "outside the database");
    unknown("entryCSN count 1", "operational");
}
