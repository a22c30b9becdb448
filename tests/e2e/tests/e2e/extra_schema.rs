//! OpenLDAP's own schema files (Debian's /etc/ldap/schema): everything core, cosine,
//! inetorgperson and nis define is built in, and the others load as they are: the server starts
//! with them after the standard schema and publishes every attribute type and object class they
//! define in cn=Subschema. The `.schema` files are checked on both servers (slapd `include`s
//! them); the `.ldif` forms, which slapd.conf cannot include, on canopy only.

use canopy_e2e::*;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// Debian's schema files beyond core, cosine, inetorgperson and nis. Left out: dsee.schema,
/// whose line 96 misspells `attributetype` (slapd skips that definition; refusing a file with an
/// unknown directive is as correct).
const FILES: &[&str] = &[
    "collective",
    "corba",
    "duaconf",
    "dyngroup",
    "java",
    "misc",
    "msuser",
    "namedobject",
    "openldap",
    "pmi",
];

fn paths(ext: &str) -> Vec<PathBuf> {
    FILES
        .iter()
        .map(|f| PathBuf::from(format!("/etc/ldap/schema/{f}.{ext}")))
        .collect()
}

/// The numeric OIDs of the attribute types and object classes a schema file defines, with
/// `objectidentifier` macros resolved. Works on both forms: `attributetype ( …` directives and
/// `olcAttributeTypes: ( …` LDIF values (unfolded first).
fn defined_oids(text: &str) -> Vec<(String, String, String)> {
    let unfolded = text.replace("\n ", "").replace("\n\t", " ");
    let mut macros: HashMap<String, String> = HashMap::new();
    let mut defs = Vec::new();
    for line in unfolded.lines() {
        let lower = line.to_ascii_lowercase();
        let words: Vec<&str> = line.split_whitespace().collect();
        if lower.starts_with("objectidentifier") || lower.starts_with("olcobjectidentifier:") {
            if let [_, name, value, ..] = words.as_slice() {
                let resolved = resolve(&macros, value);
                // An LDIF value starts with its `{N}` ordering prefix, which is not part of the name.
                let name = name.split_once('}').map_or(*name, |(_, n)| n);
                macros.insert(name.to_string(), resolved);
            }
            continue;
        }
        let kind = if lower.starts_with("attributetype") || lower.starts_with("olcattributetypes:")
        {
            "attributeTypes"
        } else if lower.starts_with("objectclass ")
            || lower.starts_with("objectclass\t")
            || lower.starts_with("olcobjectclasses:")
        {
            "objectClasses"
        } else {
            continue;
        };
        // The OID follows the opening parenthesis (an LDIF value may start with `{N}`).
        let Some(after) = line.split_once('(').map(|(_, rest)| rest) else {
            continue;
        };
        if let Some(oid) = after.split_whitespace().next() {
            // The first NAME, for messages.
            let name = after
                .split_once("NAME")
                .and_then(|(_, rest)| rest.split('\'').nth(1))
                .unwrap_or("");
            defs.push((kind.to_string(), resolve(&macros, oid), name.to_string()));
        }
    }
    defs
}

fn resolve(macros: &HashMap<String, String>, value: &str) -> String {
    match value.split_once(':') {
        Some((name, rest)) => match macros.get(name) {
            Some(prefix) => format!("{prefix}.{rest}"),
            None => value.to_string(),
        },
        None => macros
            .get(value)
            .cloned()
            .unwrap_or_else(|| value.to_string()),
    }
}

/// OIDs published in cn=Subschema, per attribute (attributeTypes, objectClasses).
fn published(s: &Server) -> BTreeSet<(String, String)> {
    let out = s.search(
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
    out.expect_code(0, "reading cn=Subschema");
    let mut set = BTreeSet::new();
    for record in out.records() {
        for attr in ["attributeTypes", "objectClasses"] {
            for v in record.values(attr) {
                if let Some(oid) = v.trim_start_matches('(').split_whitespace().next() {
                    set.insert((attr.to_string(), oid.to_string()));
                }
            }
        }
    }
    set
}

fn check_published(s: &Server, files: &[PathBuf]) {
    let have = published(s);
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let defs = defined_oids(&text);
        assert!(
            !defs.is_empty(),
            "found no definitions in {}",
            file.display()
        );
        for (kind, oid, name) in defs {
            checked += 1;
            if !have.contains(&(kind.clone(), oid.clone())) {
                missing.push(format!("{}: {kind} {oid} {name}", file.display()));
            }
        }
    }
    println!("{checked} definitions checked");
    assert!(
        missing.is_empty(),
        "{} of {checked} definitions missing from cn=Subschema:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// The built-in schema is the standard four files: everything they define is published.
#[test]
fn standard_schema_files_published() {
    let s = Server::start_empty();
    let files: Vec<PathBuf> = ["core", "cosine", "inetorgperson", "nis"]
        .iter()
        .map(|f| PathBuf::from(format!("/etc/ldap/schema/{f}.schema")))
        .collect();
    check_published(&s, &files);
}

#[test]
fn openldap_schema_files_load() {
    let files = paths("schema");
    let s = Server::start_with_schema(&files);
    check_published(&s, &files);
    // An entry using them: openldap.schema's OpenLDAPperson (a subclass of cosine's pilotPerson)
    // with misc.schema's auxiliary inetLocalMailRecipient and its mailLocalAddress.
    let add = format!(
        "dn: uid=olp,ou=people,{SUFFIX}\nobjectClass: OpenLDAPperson\nobjectClass: inetLocalMailRecipient\n\
         uid: olp\ncn: Open Person\nsn: Person\nmailLocalAddress: olp@example.com\n"
    );
    s.add(&Bind::Root, &add)
        .expect_code(0, "an entry using the loaded classes");
    let found = s.search(
        &Bind::Anonymous,
        &["-b", SUFFIX, "(mailLocalAddress=olp@example.com)", "1.1"],
    );
    found.expect_code(0, "searching a loaded attribute");
    assert_eq!(found.records().len(), 1, "{}", found.stdout);
}

#[test]
fn openldap_ldif_schema_files_load() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: slapd.conf cannot include cn=config LDIF schema files");
        return;
    }
    let files = paths("ldif");
    let s = Server::start_with_schema(&files);
    check_published(&s, &files);
}

#[test]
fn finds_definitions() {
    let text = "objectidentifier Base 1.2.3\nobjectIdentifier Sub Base:4\n\
                attributetype ( Sub:1 NAME 'a'\n\tSYNTAX 1.1 )\nobjectclass ( 9.9 NAME 'c' )\n\
                olcAttributeTypes: {0}( 5.5\n  NAME 'x' )\n# objectclass ( 7.7 )\n";
    let want = [
        ("attributeTypes", "1.2.3.4.1", "a"),
        ("objectClasses", "9.9", "c"),
        ("attributeTypes", "5.5", "x"),
    ];
    let got = defined_oids(text);
    let got: Vec<(&str, &str, &str)> = got
        .iter()
        .map(|(k, o, n)| (k.as_str(), o.as_str(), n.as_str()))
        .collect();
    assert_eq!(got, want);
}
