//! Tests of schema loading, the built-in schema and lookups.

use super::*;
use crate::model::ObjectClassKind;

#[test]
fn builtin_loads() {
    let mut schema = Schema::empty();
    for (origin, text) in BUILTIN {
        schema
            .load_text(text, origin)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(schema.attribute_types().count() > 120);
    assert_eq!(
        Schema::builtin().attribute_types().count(),
        schema.attribute_types().count()
    );
}

#[test]
fn builtin_references_resolve() {
    let schema = Schema::builtin();
    for at in schema.attribute_types() {
        if let Some(sup) = &at.sup {
            let sup = schema.attribute_type(sup).expect(sup);
            assert_eq!(sup.name(), at.sup.as_deref().unwrap(), "{} SUP", at.name());
            assert!(schema.is_subtype_of(at, sup));
        }
        assert!(
            at.equality.is_some() || at.ordering.is_none(),
            "{} has ordering without equality",
            at.name()
        );
    }
    for oc in schema.object_classes() {
        for name in oc.sup.iter() {
            let sup = schema.object_class(name).expect(name);
            assert_eq!(sup.name(), name, "{} SUP", oc.name());
        }
        for name in oc.must.iter().chain(oc.may.iter()) {
            let at = schema.attribute_type(name).expect(name);
            assert_eq!(at.name(), name, "{} MUST/MAY", oc.name());
        }
        if oc.name() != "top" && oc.kind != ObjectClassKind::Auxiliary {
            assert!(!oc.sup.is_empty(), "{} has no superclass", oc.name());
        }
    }
}

#[test]
fn builtin_names_and_oids() {
    let schema = Schema::builtin();
    for (lookup, canonical, oid) in [
        ("objectclass", "objectClass", "2.5.4.0"),
        ("USERPASSWORD", "userPassword", "2.5.4.35"),
        ("commonName", "cn", "2.5.4.3"),
        ("2.5.4.3", "cn", "2.5.4.3"),
        ("uidnumber", "uidNumber", "1.3.6.1.1.1.1.0"),
        ("memberuid", "memberUid", "1.3.6.1.1.1.1.12"),
        ("createTimestamp", "createTimestamp", "2.5.18.1"),
        ("modifytimestamp", "modifyTimestamp", "2.5.18.2"),
        ("creatorsName", "creatorsName", "2.5.18.3"),
        ("modifiersName", "modifiersName", "2.5.18.4"),
        ("entryUUID", "entryUUID", "1.3.6.1.1.16.4"),
        ("entryCSN", "entryCSN", "1.3.6.1.4.1.4203.666.1.7"),
        ("entryDN", "entryDN", "1.3.6.1.1.20"),
        ("hasSubordinates", "hasSubordinates", "2.5.18.9"),
        ("structuralObjectClass", "structuralObjectClass", "2.5.21.9"),
        ("subschemaSubentry", "subschemaSubentry", "2.5.18.10"),
        (
            "supportedFeatures",
            "supportedFeatures",
            "1.3.6.1.4.1.4203.1.3.5",
        ),
        (
            "namingContexts",
            "namingContexts",
            "1.3.6.1.4.1.1466.101.120.5",
        ),
        (
            "supportedControl",
            "supportedControl",
            "1.3.6.1.4.1.1466.101.120.13",
        ),
        (
            "supportedExtension",
            "supportedExtension",
            "1.3.6.1.4.1.1466.101.120.7",
        ),
        (
            "supportedLDAPVersion",
            "supportedLDAPVersion",
            "1.3.6.1.4.1.1466.101.120.15",
        ),
        (
            "supportedSASLMechanisms",
            "supportedSASLMechanisms",
            "1.3.6.1.4.1.1466.101.120.14",
        ),
        ("vendorName", "vendorName", "1.3.6.1.1.4"),
        ("vendorVersion", "vendorVersion", "1.3.6.1.1.5"),
        ("ref", "ref", "2.16.840.1.113730.3.1.34"),
        ("aliasedObjectName", "aliasedObjectName", "2.5.4.1"),
        ("attributeTypes", "attributeTypes", "2.5.21.5"),
        ("objectClasses", "objectClasses", "2.5.21.6"),
        ("matchingRules", "matchingRules", "2.5.21.4"),
        ("matchingRuleUse", "matchingRuleUse", "2.5.21.8"),
        (
            "ldapSyntaxes",
            "ldapSyntaxes",
            "1.3.6.1.4.1.1466.101.120.16",
        ),
        (
            "pwdChangedTime",
            "pwdChangedTime",
            "1.3.6.1.4.1.42.2.27.8.1.16",
        ),
        ("rfc822Mailbox", "mail", "0.9.2342.19200300.100.1.3"),
        ("userid", "uid", "0.9.2342.19200300.100.1.1"),
        ("jpegPhoto", "jpegPhoto", "0.9.2342.19200300.100.1.60"),
    ] {
        let at = schema.attribute_type(lookup).expect(lookup);
        assert_eq!((at.name(), at.oid.as_str()), (canonical, oid), "{lookup}");
    }
    for (lookup, canonical, kind) in [
        ("top", "top", ObjectClassKind::Abstract),
        ("ALIAS", "alias", ObjectClassKind::Structural),
        ("referral", "referral", ObjectClassKind::Structural),
        (
            "extensibleobject",
            "extensibleObject",
            ObjectClassKind::Auxiliary,
        ),
        ("subschema", "subschema", ObjectClassKind::Auxiliary),
        ("dcObject", "dcObject", ObjectClassKind::Auxiliary),
        ("organization", "organization", ObjectClassKind::Structural),
        (
            "2.16.840.1.113730.3.2.2",
            "inetOrgPerson",
            ObjectClassKind::Structural,
        ),
        ("posixAccount", "posixAccount", ObjectClassKind::Auxiliary),
        ("account", "account", ObjectClassKind::Structural),
    ] {
        let oc = schema.object_class(lookup).expect(lookup);
        assert_eq!((oc.name(), oc.kind), (canonical, kind), "{lookup}");
    }
    assert!(schema.attribute_type("cn;lang-en").is_none());
    assert!(schema.attribute_type("nosuchattribute").is_none());
    assert!(schema.object_class("cn").is_none());
}

#[test]
fn effective_properties_are_inherited() {
    let schema = Schema::builtin();
    let cn = schema.attribute_type("cn").unwrap();
    assert_eq!(cn.sup.as_deref(), Some("name"));
    assert_eq!(cn.equality, Some(MatchingRule::CaseIgnoreMatch));
    assert_eq!(cn.substr, Some(MatchingRule::CaseIgnoreSubstringsMatch));
    assert_eq!(cn.syntax, "1.3.6.1.4.1.1466.115.121.1.15");
    assert_eq!(
        cn.definition(),
        "( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name )"
    );
    let member = schema.attribute_type("member").unwrap();
    assert_eq!(member.equality, Some(MatchingRule::DistinguishedNameMatch));
    let name = schema.attribute_type("name").unwrap();
    assert!(schema.is_subtype_of(cn, name));
    assert!(schema.is_subtype_of(cn, cn));
    assert!(!schema.is_subtype_of(name, cn));
    let mail = schema.attribute_type("mail").unwrap();
    assert_eq!(mail.syntax, "1.3.6.1.4.1.1466.115.121.1.26");
    assert!(mail
        .definition()
        .contains("SYNTAX 1.3.6.1.4.1.1466.115.121.1.26{256}"));
    let created = schema.attribute_type("createTimestamp").unwrap();
    assert!(created.is_operational() && created.no_user_modification && created.single_value);
    assert!(!cn.is_operational());
    assert!(schema
        .attribute_type("uidNumber")
        .unwrap()
        .validate(b"1000"));
    assert!(!schema.attribute_type("uidNumber").unwrap().validate(b"abc"));
    let person = schema.object_class("person").unwrap();
    assert_eq!(
        person.definition(),
        "( 2.5.6.6 NAME 'person' SUP top STRUCTURAL MUST ( sn $ cn ) \
         MAY ( userPassword $ telephoneNumber $ seeAlso $ description ) )"
    );
    let account = schema.object_class("account").unwrap();
    assert_eq!(account.must, ["uid"]);
}

fn load_error(text: &str) -> SchemaError {
    let mut schema = Schema::builtin();
    let before = (schema.attribute_types().count(), schema.syntaxes().count());
    let err = schema.load_text(text, "test.schema").expect_err(text);
    let after = (schema.attribute_types().count(), schema.syntaxes().count());
    assert_eq!(after, before, "partial load");
    err
}

#[test]
fn load_errors_name_origin_and_line() {
    for (text, line, part) in [
        (
            "attributetype ( 1.9.1 NAME 'x' )",
            1,
            "neither SYNTAX nor SUP",
        ),
        (
            "\n\nattributetype ( 1.9.1 NAME 'x'\n  SUP nosuch )",
            3,
            "unknown supertype",
        ),
        (
            "attributetype ( 1.9.1 NAME 'x'\n  EQUALITY fooMatch SYNTAX 1.2 )",
            1,
            "unknown matching rule",
        ),
        (
            "attributetype ( 1.9.1 NAME 'x'\n\tSYNTAX 1.2\n\tFOO )",
            3,
            "unknown or repeated keyword",
        ),
        (
            "objectclass ( 1.9.2 NAME 'y' SUP top MUST nosuch )",
            1,
            "unknown attribute type",
        ),
        (
            "objectclass ( 1.9.2 NAME 'y' SUP nosuch )",
            1,
            "unknown superclass",
        ),
        (
            "attributetype ( Undefined:1 NAME 'x' SYNTAX 1.2 )",
            1,
            "unknown OID",
        ),
        (
            "attributetype ( 1.9.1 NAME 'bad_name' SYNTAX 1.2 )",
            1,
            "invalid name",
        ),
        (
            "attributetype ( 1.9.1 NAME 'x' SYNTAX 1.2{x} )",
            1,
            "syntax length",
        ),
        (
            "attributetype ( 1.9.1 NAME 'x' SUP cn USAGE directoryOperation )",
            1,
            "USAGE differs",
        ),
        (
            "attributetype ( 1.9.1 NAME 'x' SYNTAX 1.2 NO-USER-MODIFICATION )",
            1,
            "NO-USER-MODIFICATION",
        ),
        ("objectidentifier 9bad 1.2", 1, "invalid OID macro name"),
        (
            "ldapsyntax ( 1.9.5 DESC 'x'\n  X-SUBST '1.9.6' )",
            1,
            "substitute syntax \"1.9.6\" is not known",
        ),
        (
            "ldapsyntax ( 1.9.5 DESC 'x' SUP y )",
            1,
            "unknown or repeated keyword",
        ),
        ("ldapsyntax 1.9.5", 1, "must start with '('"),
        ("objectclassx ( 1.9.2 NAME 'y' )", 1, "unknown directive"),
        (
            "# ok\nattributetype ( 1.9.1 NAME 'x' SYNTAX 1.2 )\nmatchingrule ( 1.2 )",
            3,
            "unknown directive",
        ),
    ] {
        match load_error(text) {
            SchemaError::Parse {
                origin,
                line: l,
                reason,
            } => {
                assert_eq!(origin, "test.schema");
                assert_eq!(l, line, "{text}: {reason}");
                assert!(reason.contains(part), "{text}: {reason}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn duplicates() {
    for (text, line, what) in [
        (
            "attributetype ( 2.5.4.3 NAME 'other' SYNTAX 1.2 )",
            1,
            "2.5.4.3",
        ),
        ("\nattributetype ( 1.9.1 NAME 'CN' SYNTAX 1.2 )", 2, "CN"),
        ("objectclass ( 2.5.6.6 NAME 'person2' )", 1, "2.5.6.6"),
        ("objectclass ( 1.9.2 NAME 'Person' )", 1, "Person"),
        ("objectidentifier A 1.2\nobjectidentifier A 1.3", 2, "A"),
        (
            "ldapsyntax ( 1.3.6.1.4.1.1466.115.121.1.27 DESC 'Integer' )",
            1,
            "1.3.6.1.4.1.1466.115.121.1.27",
        ),
        (
            "ldapsyntax ( 1.9.5 DESC 'x' )\nldapsyntax ( 1.9.5 DESC 'y' )",
            2,
            "1.9.5",
        ),
    ] {
        match load_error(text) {
            SchemaError::Duplicate {
                origin,
                line: l,
                what: w,
            } => {
                assert_eq!((origin.as_str(), l), ("test.schema", line), "{text}");
                assert!(w.contains(what), "{text}: {w}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn identical_redefinitions_are_ignored() {
    let mut schema = Schema::builtin();
    let before = schema.attribute_types().count();
    schema
        .load_text(
            "attributetype ( 2.5.4.3 NAME ( 'cn' 'commonName' ) DESC 'other words' SUP name )\n\
             attributetype ( 2.5.4.35 NAME 'userPassword' EQUALITY octetStringMatch\n\
             \tSYNTAX 1.3.6.1.4.1.1466.115.121.1.40{128} )\n\
             objectclass ( 2.5.6.0 NAME 'top' ABSTRACT MUST objectClass )\n\
             objectidentifier A 1.2\nobjectidentifier A 1.2",
            "again.schema",
        )
        .unwrap();
    assert_eq!(schema.attribute_types().count(), before);
}

/// `ldapsyntax` directives and `olcLdapSyntaxes` values define syntaxes; X-SUBST makes values of an
/// unknown syntax checked as the named one, also for subtypes.
#[test]
fn ldap_syntaxes_load() {
    let schema_text = "objectidentifier Syn 1.9.7\n\
        ldapsyntax ( Syn:1\n\tNAME 'Counted' DESC 'counted things'\n\tX-SUBST '1.3.6.1.4.1.1466.115.121.1.27' )\n\
        ldapsyntax ( 1.9.7.2 DESC 'opaque' )\n\
        attributetype ( 1.9.8.1 NAME 'things' SYNTAX Syn:1 )\n\
        attributetype ( 1.9.8.2 NAME 'moreThings' SUP things )\n\
        attributetype ( 1.9.8.3 NAME 'blob' SYNTAX 1.9.7.2 )\n";
    let ldif_text = "dn: cn=syn,cn=schema,cn=config\nobjectClass: olcSchemaConfig\ncn: syn\n\
        olcObjectIdentifier: {0}Syn 1.9.7\n\
        olcLdapSyntaxes: {0}( 1.9.7.1 DESC 'counted things' X-SUBST '1.3.6.1.4.1.1466.115\n .121.1.27' )\n\
        olcLdapSyntaxes: {1}( 1.9.7.2 DESC 'opaque' )\n\
        olcAttributeTypes: {0}( 1.9.8.1 NAME 'things' SYNTAX Syn:1 )\n\
        olcAttributeTypes: {1}( 1.9.8.2 NAME 'moreThings' SUP things )\n\
        olcAttributeTypes: {2}( 1.9.8.3 NAME 'blob' SYNTAX 1.9.7.2 )\n";
    for (origin, text) in [("syn.schema", schema_text), ("syn.ldif", ldif_text)] {
        let mut schema = Schema::builtin();
        let before = schema.syntaxes().count();
        schema.load_text(text, origin).unwrap();
        assert_eq!(schema.syntaxes().count(), before + 2, "{origin}");
        let counted = schema.syntaxes().find(|s| s.oid == "1.9.7.1").unwrap();
        assert_eq!(
            counted.definition(),
            "( 1.9.7.1 DESC 'counted things' X-SUBST '1.3.6.1.4.1.1466.115.121.1.27' )"
        );
        assert_eq!(counted.substitute(), Some("1.3.6.1.4.1.1466.115.121.1.27"));
        for name in ["things", "moreThings"] {
            let at = schema.attribute_type(name).unwrap();
            assert_eq!(at.syntax, "1.9.7.1", "{origin} {name}");
            assert!(at.validate(b"42"), "{origin} {name}");
            assert!(!at.validate(b"forty-two"), "{origin} {name}");
        }
        assert!(schema.attribute_type("blob").unwrap().validate(b"\x00any"));
        // Loading the same text again changes nothing.
        schema.load_text(text, origin).unwrap();
        assert_eq!(schema.syntaxes().count(), before + 2, "{origin}");
    }
}

/// slapd reads any directive that starts with `attribute` as `attributetype`.
#[test]
fn attribute_directive_prefix() {
    let mut schema = Schema::builtin();
    schema
        .load_text(
            "attributeype ( 1.9.1 NAME 'x1' SYNTAX 1.2 )\nATTRIBUTE ( 1.9.2 NAME 'x2' SYNTAX 1.2 )",
            "prefix.schema",
        )
        .unwrap();
    assert!(schema.attribute_type("x1").is_some());
    assert!(schema.attribute_type("x2").is_some());
}

#[test]
fn oid_macros_and_extensions() {
    let mut schema = Schema::builtin();
    schema
        .load_text(
            "objectIdentifier Example 1.3.6.1.4.1.99999\n\
             ObjectIdentifier ExAttr Example:1\n\
             objectidentifier ExClass Example:2\n\
             attributetypes ( ExAttr:1 NAME 'exColor' DESC 'favourite colour'\n\
             \tEQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15\n\
             \tX-ORIGIN 'test' )\n\
             attributetype ( ExAttr:2 NAME ( 'exShade' 'exTone' ) SUP exColor SINGLE-VALUE )\n\
             objectclasses ( ExClass:1 NAME 'exThing' SUP top AUXILIARY MAY ( exColor $ exTone ) )\n",
            "example.schema",
        )
        .unwrap();
    let color = schema.attribute_type("excolor").unwrap();
    assert_eq!(color.oid, "1.3.6.1.4.1.99999.1.1");
    assert_eq!(
        color.definition(),
        "( 1.3.6.1.4.1.99999.1.1 NAME 'exColor' DESC 'favourite colour' \
         EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 X-ORIGIN 'test' )"
    );
    let shade = schema.attribute_type("1.3.6.1.4.1.99999.1.2").unwrap();
    assert_eq!(shade.name(), "exShade");
    assert_eq!(shade.equality, Some(MatchingRule::CaseIgnoreMatch));
    let thing = schema.object_class("exthing").unwrap();
    assert_eq!(thing.oid, "1.3.6.1.4.1.99999.2.1");
    assert_eq!(thing.may, ["exColor", "exShade"]);
}

#[test]
fn ldif_schema_loads() {
    let mut schema = Schema::builtin();
    schema
        .load_text(
            "# comment\n\
             dn: cn=example,cn=schema,cn=config\n\
             objectClass: olcSchemaConfig\n\
             cn: example\n\
             olcObjectIdentifier: {0}Example 1.3.6.1.4.1.99999\n\
             olcAttributeTypes: {0}( Example:1 NAME 'exColor' EQUALITY caseIgnore\n \
             Match SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n\
             olcObjectClasses:: ezB9KCBFeGFtcGxlOjIgTkFNRSAnZXhUaGluZycgU1VQIHRvcCBNQVkgZXhDb2xvciAp\n",
            "example.ldif",
        )
        .unwrap();
    assert_eq!(
        schema.attribute_type("exColor").unwrap().equality,
        Some(MatchingRule::CaseIgnoreMatch)
    );
    assert_eq!(schema.object_class("exThing").unwrap().may, ["exColor"]);
    let err = Schema::builtin()
        .load_text(
            "dn: cn=x,cn=schema,cn=config\nolcAttributeTypes: ( 1.9 NAME 'x' )\n",
            "bad.ldif",
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad.ldif:2: attribute type has neither SYNTAX nor SUP"
    );
}

#[test]
fn load_file_reports_io_errors() {
    let err = Schema::builtin()
        .load_file(Path::new("/nonexistent/x.schema"))
        .unwrap_err();
    assert!(matches!(err, SchemaError::Io { .. }), "{err:?}");
    assert!(err.to_string().starts_with("/nonexistent/x.schema: "));
}

const SYSTEM_SCHEMA_DIR: &str = "/etc/ldap/schema";

/// OpenLDAP's own files, in dependency order, load on top of the built-in schema: the standard ones
/// as identical redefinitions, the others as additions. Skipped where slapd's files are absent.
#[test]
fn openldap_schema_files_load() {
    let dir = Path::new(SYSTEM_SCHEMA_DIR);
    if !dir.join("core.schema").exists() {
        eprintln!("{SYSTEM_SCHEMA_DIR} not present; skipping");
        return;
    }
    let files = [
        "core",
        "cosine",
        "inetorgperson",
        "nis",
        "collective",
        "corba",
        "dyngroup",
        "misc",
        "java",
        "openldap",
        "duaconf",
        "namedobject",
        "pmi",
        "msuser",
        "dsee",
    ];
    for ext in ["schema", "ldif"] {
        let mut schema = Schema::builtin();
        for name in files {
            let path = dir.join(format!("{name}.{ext}"));
            schema
                .load_file(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        for (attr, oid) in [
            ("labeledURI", "1.3.6.1.4.1.250.1.57"),
            ("c-PostalCode", "2.5.4.17.1"),
            ("corbaIor", "1.3.6.1.4.1.42.2.27.4.1.14"),
            ("mailLocalAddress", "2.16.840.1.113730.3.1.13"),
            ("javaClassName", "1.3.6.1.4.1.42.2.27.4.1.6"),
            ("role", "2.5.4.72"),
            ("targetUniqueId", "1.3.6.1.4.1.42.2.27.9.1.596"),
        ] {
            assert_eq!(
                schema.attribute_type(attr).map(|a| a.oid.as_str()),
                Some(oid),
                "{attr} after loading the .{ext} files"
            );
        }
    }
}

/// Every published definition parses back to the same element, so the subschema entry can be read
/// by other servers and by this one.
#[test]
fn definitions_round_trip() {
    let builtin = Schema::builtin();
    let mut text = String::new();
    for at in builtin.attribute_types() {
        text.push_str(&format!("attributetype {}\n", at.definition()));
    }
    for oc in builtin.object_classes() {
        text.push_str(&format!("objectclass {}\n", oc.definition()));
    }
    let mut reloaded = Schema::empty();
    reloaded.load_text(&text, "round-trip").unwrap();
    for at in builtin.attribute_types() {
        let again = reloaded.attribute_type(&at.oid).unwrap();
        assert!(at.same_as(again), "{}", at.definition());
        assert_eq!(at.definition(), again.definition());
    }
    for oc in builtin.object_classes() {
        let again = reloaded.object_class(&oc.oid).unwrap();
        assert!(oc.same_as(again), "{}", oc.definition());
    }
}

#[test]
fn syntaxes_and_rules_are_published() {
    let schema = Schema::builtin();
    let directory_string = schema
        .syntaxes()
        .find(|s| s.oid == "1.3.6.1.4.1.1466.115.121.1.15")
        .unwrap();
    assert_eq!(
        directory_string.definition(),
        "( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )"
    );
    let rules: Vec<MatchingRule> = schema.matching_rules().collect();
    assert!(rules.contains(&MatchingRule::IntegerOrderingMatch));
    for at in schema.attribute_types() {
        for rule in [at.equality, at.ordering, at.substr].into_iter().flatten() {
            assert!(rules.contains(&rule));
        }
        assert!(
            schema.syntaxes().any(|s| s.oid == at.syntax),
            "{} has unknown syntax {}",
            at.name(),
            at.syntax
        );
    }
}

/// The built-in schema holds every definition of OpenLDAP's four standard files, and holds it as
/// they write it: loading one on top of the built-in set neither fails (a differing redefinition is a
/// `Duplicate` error) nor adds anything. Skipped where slapd's files are absent.
#[test]
fn builtin_covers_openldap_standard_files() {
    let dir = Path::new(SYSTEM_SCHEMA_DIR);
    if !dir.join("core.schema").exists() {
        eprintln!("{SYSTEM_SCHEMA_DIR} not present; skipping");
        return;
    }
    let mut problems = Vec::new();
    for name in ["core", "cosine", "inetorgperson", "nis"] {
        for ext in ["schema", "ldif"] {
            let path = dir.join(format!("{name}.{ext}"));
            let mut schema = Schema::builtin();
            let (attributes, classes) = (
                schema.attribute_types().count(),
                schema.object_classes().count(),
            );
            if let Err(e) = schema.load_file(&path) {
                problems.push(e.to_string());
                continue;
            }
            for at in schema.attribute_types().skip(attributes) {
                problems.push(format!("{}: missing {}", path.display(), at.definition()));
            }
            for oc in schema.object_classes().skip(classes) {
                problems.push(format!("{}: missing {}", path.display(), oc.definition()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every schema file in the system directory loads on its own on top of the built-in schema.
#[test]
fn each_system_schema_file_loads_alone() {
    let Ok(dir) = std::fs::read_dir(SYSTEM_SCHEMA_DIR) else {
        eprintln!("{SYSTEM_SCHEMA_DIR} not present; skipping");
        return;
    };
    let mut failures = Vec::new();
    let mut loaded = 0;
    for entry in dir {
        let path = entry.unwrap().path();
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("schema" | "ldif")
        ) {
            continue;
        }
        let mut schema = Schema::builtin();
        match schema.load_file(&path) {
            Ok(()) => loaded += 1,
            Err(e) => failures.push(e.to_string()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(loaded >= 2);
}

#[test]
fn name_index_folds_ascii_case_only() {
    let mut index = NameIndex::default();
    index.insert("userPassword", 1);
    index.insert("cn", 2);
    index.insert("2.5.4.3", 3);
    // '@' and '`' differ only in the 0x20 bit and are not letters: two names.
    index.insert("a@b", 4);
    index.insert("a`b", 5);
    for (name, expected) in [
        ("userpassword", Some(1)),
        ("USERPASSWORD", Some(1)),
        ("UserPassword", Some(1)),
        ("userPasswor", None),
        ("userPassword1", None),
        ("CN", Some(2)),
        ("c", None),
        ("", None),
        ("2.5.4.3", Some(3)),
        ("2.5.4.", None),
        ("a@b", Some(4)),
        ("A@B", Some(4)),
        ("a`b", Some(5)),
        ("a b", None),
        ("ü", None),
    ] {
        assert_eq!(index.get(name), expected, "{name}");
    }
    index.insert("CN", 6);
    assert_eq!(index.get("cn"), Some(6));
    index.insert("A@B", 7);
    assert_eq!((index.get("a@b"), index.get("a`b")), (Some(7), Some(5)));
    // Every byte around the letters' edges folds as to_ascii_lowercase does.
    for byte in 0u8..=255 {
        let word = u64::from_le_bytes([byte, b'A', b'z', byte, b'@', b'[', b'`', b'{']);
        let expected = u64::from_le_bytes(
            [byte, b'A', b'z', byte, b'@', b'[', b'`', b'{'].map(|b| b.to_ascii_lowercase()),
        );
        assert_eq!(lower_word(word), expected, "{byte:#x}");
    }
    // A long name (more than one word) and one whose hash bucket holds another.
    index.insert("1.3.6.1.4.1.4203.666.1.7", 8);
    assert_eq!(index.get("1.3.6.1.4.1.4203.666.1.7"), Some(8));
    assert_eq!(index.get("1.3.6.1.4.1.4203.666.1.8"), None);
    assert_eq!(index.get("structuralObjectClass"), None);
}

#[test]
fn name_index_every_length_and_position() {
    let alphabet = b"aB3-cD.eF9;gHiJ";
    for len in 1..40usize {
        let name: String = (0..len)
            .map(|i| char::from(alphabet[i % alphabet.len()]))
            .collect();
        let mut index = NameIndex::default();
        index.insert(&name, len);
        assert_eq!(index.get(&name.to_ascii_uppercase()), Some(len), "{name}");
        assert_eq!(index.get(&name.to_ascii_lowercase()), Some(len), "{name}");
        for at in 0..len {
            let mut other = name.clone().into_bytes();
            other[at] = b'x';
            let other = String::from_utf8(other).unwrap();
            if !other.eq_ignore_ascii_case(&name) {
                assert_eq!(index.get(&other), None, "{name} vs {other}");
            }
        }
        assert_eq!(index.get(&name[..len - 1]), None);
    }
}
