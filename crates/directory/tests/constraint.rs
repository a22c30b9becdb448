//! The constraint overlay: each kind of constraint accepts a write at its boundary and refuses one just
//! past it, on add, modify (add, replace and delete of values) and rename; a refused write answers
//! constraintViolation with slapd's text and leaves the database as it was.

mod support;

use std::sync::Arc;

use canopy_core::index::IndexSpec;
use canopy_core::LdapError;
use canopy_directory::overlay::constraint::{Constraint, Rule};
use canopy_directory::OpenOptions;
use canopy_directory::{Directory, OpenError, Pipeline, WriteOp};
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::Schema;

const PEOPLE: &str = "ou=people,dc=example,dc=com";
const OTHER: &str = "ou=other,dc=example,dc=com";

fn open_with(
    path: &std::path::Path,
    rules: &[&str],
    indexes: Vec<IndexSpec>,
) -> Result<Directory, OpenError> {
    let rules = rules
        .iter()
        .map(|line| Rule::parse(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
    let pipeline = Pipeline::standard().then(Arc::new(Constraint::new(rules)));
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    Directory::open(
        Arc::new(Schema::builtin()),
        SUFFIX,
        indexes,
        store,
        pipeline,
    )
}

/// A database with `rules`, its tree (people, other, departments) already there.
async fn open(path: &std::path::Path, rules: &[&str], indexes: Vec<IndexSpec>) -> Directory {
    let dir = open_with(path, rules, indexes).unwrap();
    fn ou(name: &str) -> [(&str, &str); 2] {
        [("objectClass", "organizationalUnit"), ("ou", name)]
    }
    add(
        &dir,
        SUFFIX,
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "Example"),
        ],
    )
    .await
    .unwrap();
    for name in ["people", "other", "departments"] {
        add(&dir, &format!("ou={name},{SUFFIX}"), &ou(name))
            .await
            .unwrap();
    }
    // The catalog of departments: sales and it below departments; marketing elsewhere; deep one level
    // too far down.
    let departments = format!("ou=departments,{SUFFIX}");
    for (dn, name) in [
        (format!("ou=sales,{departments}"), "sales"),
        (format!("ou=it,{departments}"), "IT"),
        (format!("ou=marketing,{OTHER}"), "marketing"),
        (format!("ou=deep,ou=sales,{departments}"), "deep"),
    ] {
        add(&dir, &dn, &ou(name)).await.unwrap();
    }
    dir
}

async fn add(dir: &Directory, dn: &str, attrs: &[(&str, &str)]) -> Result<(), LdapError> {
    add_as(dir, dn, attrs, ADMIN).await
}

async fn add_as(
    dir: &Directory,
    dn: &str,
    attrs: &[(&str, &str)],
    requester: &str,
) -> Result<(), LdapError> {
    write_as(dir, add_op_as(dir, dn, attrs, requester)?, requester).await
}

/// One change: operation, attribute, values.
type Mod<'a> = (ModifyOperation, &'a str, &'a [&'a str]);

async fn modify(dir: &Directory, dn: &str, mods: &[Mod<'_>]) -> Result<(), LdapError> {
    modify_as(dir, dn, mods, ADMIN).await
}

async fn modify_as(
    dir: &Directory,
    dn: &str,
    mods: &[Mod<'_>],
    requester: &str,
) -> Result<(), LdapError> {
    let (dn, ndn) = dir.normalize(dn.as_bytes())?;
    let changes = mods
        .iter()
        .map(|(operation, name, values)| Change {
            operation: *operation,
            modification: PartialAttribute {
                name: name.to_string(),
                values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            },
        })
        .collect();
    write_as(dir, WriteOp::Modify { dn, ndn, changes }, requester).await
}

/// Runs a write that must be refused with slapd's answer (`add`/`modify breaks constraint on ATTR`)
/// and checks it left every entry as it was.
async fn refused(
    dir: &Directory,
    message: &str,
    write: impl std::future::Future<Output = Result<(), LdapError>>,
) {
    let before = entries(dir);
    let error = write
        .await
        .expect_err(&format!("accepted, but should be refused: {message}"));
    assert_eq!(
        (error.code, error.message.as_str()),
        (ResultCode::ConstraintViolation, message)
    );
    assert_eq!(entries(dir), before, "a refused write changed the database");
}

/// Runs a write that must be accepted.
async fn accepted(what: &str, write: impl std::future::Future<Output = Result<(), LdapError>>) {
    if let Err(e) = write.await {
        panic!("{what}: refused: {e:?}");
    }
}

fn person(uid: &str) -> Vec<(&'static str, String)> {
    vec![
        ("objectClass", "inetOrgPerson".into()),
        ("uid", uid.into()),
        ("cn", format!("{uid} person")),
        ("sn", "person".into()),
    ]
}

fn pairs<'a>(attrs: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    attrs.iter().map(|(a, v)| (*a, v.as_str())).collect()
}

fn values(dir: &Directory, dn: &str, attr: &str) -> Vec<String> {
    let (_, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    entries(dir)
        .into_iter()
        .find(|e| e.ndn == ndn)
        .unwrap_or_else(|| panic!("{dn} is missing"))
        .get(attr)
        .map(|a| {
            a.values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

use support::{add_op_as, entries, rename_with as rename, write_as, ADMIN, SUFFIX};
use ModifyOperation::{Add, Delete, Increment, Replace};

#[tokio::test]
async fn size_is_the_bytes_of_each_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["title,description size 5"], Vec::new()).await;
    let a = format!("uid=a,{PEOPLE}");
    let mut attrs = person("a");
    attrs.push(("title", "12345".into()));
    accepted("5 bytes", add(&dir, &a, &pairs(&attrs))).await;
    let b = format!("uid=b,{PEOPLE}");
    let mut attrs = person("b");
    attrs.push(("title", "éééé".into()));
    refused(
        &dir,
        "add breaks constraint on title",
        add(&dir, &b, &pairs(&attrs)),
    )
    .await;

    accepted("add 5", modify(&dir, &a, &[(Add, "title", &["abcde"])])).await;
    refused(
        &dir,
        "modify breaks constraint on title",
        modify(&dir, &a, &[(Add, "title", &["abcdef"])]),
    )
    .await;
    refused(
        &dir,
        "modify breaks constraint on description",
        modify(
            &dir,
            &a,
            &[
                (Add, "title", &["ok"]),
                (Replace, "description", &["fine", "too long"]),
            ],
        ),
    )
    .await;
    accepted(
        "replace at the limit",
        modify(&dir, &a, &[(Replace, "description", &["fine", "12345"])]),
    )
    .await;
    // Deleting values brings none; the other attribute is not constrained.
    accepted(
        "delete",
        modify(
            &dir,
            &a,
            &[
                (Delete, "title", &["12345"]),
                (Add, "sn", &["a long surname"]),
            ],
        ),
    )
    .await;
    // Options do not escape the constraint, and the message names the attribute as stored.
    refused(
        &dir,
        "modify breaks constraint on description;lang-en",
        modify(&dir, &a, &[(Add, "Description;Lang-EN", &["123456"])]),
    )
    .await;

    // A rename brings its new RDN's values.
    refused(
        &dir,
        "modify breaks constraint on title",
        rename(&dir, &a, "title=123456", false, None),
    )
    .await;
    accepted("rename", rename(&dir, &a, "title=abc", false, None)).await;
    assert_eq!(
        values(&dir, &format!("title=abc,{PEOPLE}"), "title"),
        ["abcde", "abc"]
    );
}

#[tokio::test]
async fn count_bounds_the_values_the_entry_will_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["mail count 2"], Vec::new()).await;
    let a = format!("uid=a,{PEOPLE}");
    let mut attrs = person("a");
    attrs.extend([("mail", "1@x".into()), ("mail", "2@x".into())]);
    accepted("2 values", add(&dir, &a, &pairs(&attrs))).await;
    let mut attrs = person("b");
    attrs.extend(["1@x", "2@x", "3@x"].map(|m| ("mail", m.to_string())));
    refused(
        &dir,
        "add breaks constraint on mail",
        add(&dir, &format!("uid=b,{PEOPLE}"), &pairs(&attrs)),
    )
    .await;

    refused(
        &dir,
        "modify breaks constraint on mail",
        modify(&dir, &a, &[(Add, "mail", &["3@x"])]),
    )
    .await;
    refused(
        &dir,
        "modify breaks constraint on mail",
        modify(&dir, &a, &[(Replace, "mail", &["4@x", "5@x", "6@x"])]),
    )
    .await;
    // The resulting number counts: one out, one in.
    accepted(
        "delete one, add one",
        modify(
            &dir,
            &a,
            &[(Delete, "mail", &["1@x"]), (Add, "mail", &["3@x"])],
        ),
    )
    .await;
    accepted(
        "replace with 1, add 1",
        modify(
            &dir,
            &a,
            &[(Replace, "mail", &["7@x"]), (Add, "mail", &["8@x"])],
        ),
    )
    .await;
    assert_eq!(values(&dir, &a, "mail"), ["7@x", "8@x"]);
    // A change of another attribute is checked against the count too, as in slapd.
    accepted(
        "other attribute",
        modify(&dir, &a, &[(Replace, "sn", &["other"])]),
    )
    .await;
    // Values with options are values of the type.
    refused(
        &dir,
        "modify breaks constraint on mail",
        modify(&dir, &a, &[(Add, "mail;lang-en", &["9@x"])]),
    )
    .await;
    // A rename that keeps the old RDN and adds a third mail as the new one.
    refused(
        &dir,
        "modify breaks constraint on mail",
        rename(&dir, &a, "mail=9@x", false, None),
    )
    .await;
    accepted(
        "delete one",
        modify(&dir, &a, &[(Delete, "mail", &["8@x"])]),
    )
    .await;
    accepted("rename to 2", rename(&dir, &a, "mail=9@x", true, None)).await;
    assert_eq!(
        values(&dir, &format!("mail=9@x,{PEOPLE}"), "mail"),
        ["7@x", "9@x"]
    );
}

#[tokio::test]
async fn regex_and_negregex_test_each_value() {
    let tmp = tempfile::tempdir().unwrap();
    // slapd's reader drops a backslash and keeps the next character: `\\.` is the regex `\.`.
    let dir = open(
        tmp.path(),
        &[
            "uid regex ^[a-z]+$",
            r#"mail negregex "@blocked\\.example$""#,
        ],
        Vec::new(),
    )
    .await;
    let a = format!("uid=abc,{PEOPLE}");
    let mut attrs = person("abc");
    attrs.push(("mail", "x@blockedXexample".into()));
    accepted(
        "matching uid, mail not blocked",
        add(&dir, &a, &pairs(&attrs)),
    )
    .await;
    refused(
        &dir,
        "add breaks constraint on uid",
        add(&dir, &format!("uid=Xyz,{PEOPLE}"), &pairs(&person("Xyz"))),
    )
    .await;
    let mut attrs = person("def");
    attrs.push(("mail", "y@blocked.example".into()));
    refused(
        &dir,
        "add breaks constraint on mail",
        add(&dir, &format!("uid=def,{PEOPLE}"), &pairs(&attrs)),
    )
    .await;

    refused(
        &dir,
        "modify breaks constraint on uid",
        modify(&dir, &a, &[(Add, "uid", &["second", "Third"])]),
    )
    .await;
    accepted("add uid", modify(&dir, &a, &[(Add, "uid", &["second"])])).await;
    refused(
        &dir,
        "modify breaks constraint on mail",
        modify(
            &dir,
            &a,
            &[(Replace, "mail", &["ok@x", "no@blocked.example"])],
        ),
    )
    .await;
    accepted(
        "delete the blocked-looking value",
        modify(&dir, &a, &[(Delete, "mail", &["x@blockedXexample"])]),
    )
    .await;
    refused(
        &dir,
        "modify breaks constraint on uid",
        rename(&dir, &a, "uid=Upper", true, None),
    )
    .await;
    accepted("rename", rename(&dir, &a, "uid=lower", true, None)).await;
    assert_eq!(
        values(&dir, &format!("uid=lower,{PEOPLE}"), "uid"),
        ["second", "lower"]
    );
}

/// `departmentNumber` must name an organizational unit right below ou=departments.
const DEPARTMENTS: &str =
    "departmentNumber uri ldap:///ou=departments,dc=example,dc=com?ou?one?(objectClass=organizationalUnit)";

async fn uri_cases(dir: &Directory) {
    let a = format!("uid=a,{PEOPLE}");
    let mut attrs = person("a");
    // The equality rule of ou decides: case does not matter.
    attrs.push(("departmentNumber", "Sales".into()));
    accepted("listed", add(dir, &a, &pairs(&attrs))).await;
    for (value, why) in [
        ("marketing", "an ou outside the base"),
        ("deep", "an ou below the scope"),
        ("departments", "the base itself, outside scope one"),
        ("legal", "no such ou"),
        ("*", "a filter's wildcard is a value like any other"),
        ("sa*", "a filter's wildcard is a value like any other"),
        ("Ro(me", "a filter's parenthesis is a value like any other"),
    ] {
        let mut attrs = person("b");
        attrs.push(("departmentNumber", value.into()));
        let b = format!("uid=b,{PEOPLE}");
        eprintln!("{value:?}: {why}");
        refused(
            dir,
            "add breaks constraint on departmentNumber",
            add(dir, &b, &pairs(&attrs)),
        )
        .await;
    }
    refused(
        dir,
        "modify breaks constraint on departmentNumber",
        modify(dir, &a, &[(Add, "departmentNumber", &["it", "legal"])]),
    )
    .await;
    accepted(
        "both listed",
        modify(dir, &a, &[(Add, "departmentNumber", &["it"])]),
    )
    .await;
    refused(
        dir,
        "modify breaks constraint on departmentNumber",
        modify(dir, &a, &[(Replace, "departmentNumber", &["marketing"])]),
    )
    .await;
    accepted(
        "delete",
        modify(dir, &a, &[(Delete, "departmentNumber", &["Sales"])]),
    )
    .await;
    // The catalog grows: the lookup sees what earlier writes stored.
    add(
        dir,
        &format!("ou=legal,ou=departments,{SUFFIX}"),
        &[("objectClass", "organizationalUnit"), ("ou", "legal")],
    )
    .await
    .unwrap();
    accepted(
        "newly listed",
        modify(dir, &a, &[(Replace, "departmentNumber", &["LEGAL"])]),
    )
    .await;
    refused(
        dir,
        "modify breaks constraint on departmentNumber",
        rename(dir, &a, "departmentNumber=deep", false, None),
    )
    .await;
    accepted(
        "rename",
        rename(dir, &a, "departmentNumber=IT", false, None),
    )
    .await;
}

#[tokio::test]
async fn uri_values_must_be_found_by_the_search_by_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &[DEPARTMENTS], Vec::new()).await;
    uri_cases(&dir).await;
}

#[tokio::test]
async fn uri_values_must_be_found_by_the_search_by_index() {
    let tmp = tempfile::tempdir().unwrap();
    let ou = IndexSpec {
        attr: "ou".into(),
        eq: true,
        pres: false,
        sub: false,
        ord: false,
        approx: false,
    };
    let dir = open(tmp.path(), &[DEPARTMENTS], vec![ou]).await;
    uri_cases(&dir).await;
}

#[tokio::test]
async fn restrict_names_the_entries_a_constraint_applies_to() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &[
            r#"st regex ^x restrict="ldap:///ou=people,dc=example,dc=com??sub""#,
            "l size 3 restrict=ldap:///ou=people,dc=example,dc=com??one?(objectClass=inetOrgPerson)",
        ],
        Vec::new(),
    )
    .await;
    fn locality(st: &str) -> [(&str, &str); 2] {
        [("objectClass", "locality"), ("st", st)]
    }
    accepted(
        "outside the base",
        add(&dir, &format!("st=bad,{OTHER}"), &locality("bad")),
    )
    .await;
    refused(
        &dir,
        "add breaks constraint on st",
        add(&dir, &format!("st=bad,{PEOPLE}"), &locality("bad")),
    )
    .await;
    accepted(
        "inside",
        add(&dir, &format!("st=xok,{PEOPLE}"), &locality("xok")),
    )
    .await;
    // The entry as it will be stored decides: moving in brings the RDN value into the constraint...
    refused(
        &dir,
        "modify breaks constraint on st",
        rename(
            &dir,
            &format!("st=bad,{OTHER}"),
            "st=bad",
            false,
            Some(PEOPLE),
        ),
    )
    .await;
    // ...and moving out leaves it.
    accepted(
        "moved out",
        rename(
            &dir,
            &format!("st=xok,{PEOPLE}"),
            "st=worse",
            true,
            Some(OTHER),
        ),
    )
    .await;
    refused(
        &dir,
        "modify breaks constraint on st",
        modify(
            &dir,
            &format!("ou=people,{SUFFIX}"),
            &[(Add, "st", &["nope"])],
        ),
    )
    .await;

    // Scope one and a filter: only inetOrgPersons right below ou=people.
    let a = format!("uid=a,{PEOPLE}");
    accepted("person", add(&dir, &a, &pairs(&person("a")))).await;
    refused(
        &dir,
        "modify breaks constraint on l",
        modify(&dir, &a, &[(Add, "l", &["Paris"])]),
    )
    .await;
    accepted("short", modify(&dir, &a, &[(Add, "l", &["Rom"])])).await;
    accepted(
        "not a person",
        modify(
            &dir,
            &format!("ou=people,{SUFFIX}"),
            &[(Add, "l", &["Paris"])],
        ),
    )
    .await;
    accepted(
        "below the scope",
        add(
            &dir,
            &format!("l=Paris,uid=a,{PEOPLE}"),
            &[("objectClass", "locality"), ("l", "Paris")],
        ),
    )
    .await;
    accepted(
        "not a person either",
        add(
            &dir,
            &format!("l=London,{PEOPLE}"),
            &[("objectClass", "locality"), ("l", "London")],
        ),
    )
    .await;
}

#[tokio::test]
async fn set_as_in_the_manual() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &[concat!(
            r#"cn,sn,givenName set "(this/givenName + [ ] + this/sn) & this/cn" "#,
            r#"restrict="ldap:///ou=People,dc=example,dc=com??sub?(objectClass=inetOrgPerson)""#
        )],
        Vec::new(),
    )
    .await;
    let smith = |cn: &str| {
        vec![
            ("objectClass", "inetOrgPerson".to_string()),
            ("cn", cn.to_string()),
            ("sn", "Smith".into()),
            ("givenName", "John".into()),
        ]
    };
    let john = format!("cn=John Smith,{PEOPLE}");
    // Values compare normalized: case and extra blanks do not count.
    accepted("john", add(&dir, &john, &pairs(&smith("John Smith")))).await;
    refused(
        &dir,
        "add breaks constraint on cn",
        add(&dir, &format!("cn=Jim,{PEOPLE}"), &pairs(&smith("Jim"))),
    )
    .await;
    accepted(
        "outside ou=people",
        add(&dir, &format!("cn=Jim,{OTHER}"), &pairs(&smith("Jim"))),
    )
    .await;
    accepted(
        "not an inetOrgPerson",
        add(
            &dir,
            &format!("cn=Jim,{PEOPLE}"),
            &[("objectClass", "person"), ("cn", "Jim"), ("sn", "Smith")],
        ),
    )
    .await;

    refused(
        &dir,
        "modify breaks constraint on sn",
        modify(&dir, &john, &[(Replace, "sn", &["Jones"])]),
    )
    .await;
    accepted(
        "sn and cn together",
        modify(
            &dir,
            &john,
            &[(Replace, "sn", &["Jones"]), (Add, "cn", &["john  JONES"])],
        ),
    )
    .await;
    // A delete brings no value: the set is not evaluated, as in slapd.
    accepted(
        "delete",
        modify(&dir, &john, &[(Delete, "cn", &["john  JONES"])]),
    )
    .await;
    accepted(
        "back to Smith",
        modify(&dir, &john, &[(Replace, "sn", &["SMITH"])]),
    )
    .await;
    // Renaming to another cn while deleting the old one leaves no cn that fits.
    refused(
        &dir,
        "modify breaks constraint on cn",
        rename(&dir, &john, "cn=Jane Smith", true, None),
    )
    .await;
    accepted(
        "the old cn stays",
        rename(&dir, &john, "cn=Jane Smith", false, None),
    )
    .await;
}

#[tokio::test]
async fn set_reads_user_other_entries_and_urls() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(
        tmp.path(),
        &[
            // Only the administrator may write a description.
            r#"description set "user & [cn=admin,dc=example,dc=com]""#,
            // A manager is an entry right below ou=people whose employeeType is boss.
            r#"manager set "this/manager/-1 & [ou=people,dc=example,dc=com]""#,
            r#"manager set "this/manager/employeeType & [boss]""#,
            // A department number is the ou of an entry the URL finds.
            r#"departmentNumber set "[ldap:///ou=departments,dc=example,dc=com??one]/ou & this/departmentNumber""#,
        ],
        Vec::new(),
    )
    .await;
    let someone = "uid=someone,dc=example,dc=com";
    let a = format!("uid=a,{PEOPLE}");
    accepted("a", add(&dir, &a, &pairs(&person("a")))).await;
    accepted(
        "admin",
        modify(&dir, &a, &[(Add, "description", &["by admin"])]),
    )
    .await;
    let error = modify_as(&dir, &a, &[(Add, "description", &["by someone"])], someone)
        .await
        .unwrap_err();
    assert_eq!(error.message, "modify breaks constraint on description");
    accepted(
        "someone else, another attribute",
        modify_as(&dir, &a, &[(Add, "title", &["t"])], someone),
    )
    .await;

    let mut boss = person("boss");
    boss.push(("employeeType", "Boss".into()));
    let boss_dn = format!("uid=boss,{PEOPLE}");
    accepted("boss", add(&dir, &boss_dn, &pairs(&boss))).await;
    accepted(
        "managed by the boss",
        modify(&dir, &a, &[(Add, "manager", &[boss_dn.as_str()])]),
    )
    .await;
    let clerk = format!("uid=clerk,{PEOPLE}");
    accepted("clerk", add(&dir, &clerk, &pairs(&person("clerk")))).await;
    refused(
        &dir,
        "modify breaks constraint on manager",
        modify(&dir, &a, &[(Replace, "manager", &[clerk.as_str()])]),
    )
    .await;
    let far = format!("uid=far,{OTHER}");
    let mut far_boss = person("far");
    far_boss.push(("employeeType", "boss".into()));
    accepted("far", add(&dir, &far, &pairs(&far_boss))).await;
    refused(
        &dir,
        "modify breaks constraint on manager",
        modify(&dir, &a, &[(Replace, "manager", &[far.as_str()])]),
    )
    .await;

    accepted(
        "a department",
        modify(&dir, &a, &[(Add, "departmentNumber", &["SALES"])]),
    )
    .await;
    refused(
        &dir,
        "modify breaks constraint on departmentNumber",
        modify(&dir, &a, &[(Replace, "departmentNumber", &["marketing"])]),
    )
    .await;
}

/// A set that gives up (the language's bounds, shared with access rules' `set=`; `user` for an
/// anonymous requester, which slapd has no DN for) is not satisfied: the write is refused.
#[tokio::test]
async fn sets_that_give_up_are_not_satisfied() {
    let tmp = tempfile::tempdir().unwrap();
    let wide = format!(
        "({})",
        (0..70)
            .map(|i| format!("[{i}]"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let dir = open(
        tmp.path(),
        &[
            r#"title set "user""#,
            // 70 x 70 concatenations: past the 4,096 elements a set may hold.
            &format!(r#"description set "{wide} + {wide}""#),
            // The same without the overflow holds.
            &format!(r#"l set "{wide} + [x]""#),
        ],
        Vec::new(),
    )
    .await;
    let a = format!("uid=a,{PEOPLE}");
    accepted("a", add(&dir, &a, &pairs(&person("a")))).await;
    accepted(
        "a named requester",
        modify_as(
            &dir,
            &a,
            &[(Add, "title", &["t"])],
            "uid=someone,dc=example,dc=com",
        ),
    )
    .await;
    let error = modify_as(&dir, &a, &[(Replace, "title", &["u"])], "")
        .await
        .unwrap_err();
    assert_eq!(error.message, "modify breaks constraint on title");
    refused(
        &dir,
        "modify breaks constraint on description",
        modify(&dir, &a, &[(Add, "description", &["d"])]),
    )
    .await;
    accepted("l", modify(&dir, &a, &[(Add, "l", &["here"])])).await;
}

#[tokio::test]
async fn increment_results_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["uidNumber size 2"], Vec::new()).await;
    let a = format!("uid=a,{PEOPLE}");
    let mut attrs = person("a");
    attrs.extend([
        ("objectClass", "posixAccount".to_string()),
        ("uidNumber", "98".into()),
        ("gidNumber", "1".into()),
        ("homeDirectory", "/home/a".into()),
    ]);
    accepted("98", add(&dir, &a, &pairs(&attrs))).await;
    accepted("99", modify(&dir, &a, &[(Increment, "uidNumber", &["1"])])).await;
    refused(
        &dir,
        "modify breaks constraint on uidNumber",
        modify(&dir, &a, &[(Increment, "uidNumber", &["1"])]),
    )
    .await;
    assert_eq!(values(&dir, &a, "uidNumber"), ["99"]);
}

#[tokio::test]
async fn deletes_are_never_constrained() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), &["mail count 0"], Vec::new()).await;
    let a = format!("uid=a,{PEOPLE}");
    accepted("no mail", add(&dir, &a, &pairs(&person("a")))).await;
    let (dn, ndn) = dir.normalize(a.as_bytes()).unwrap();
    accepted("delete", write_as(&dir, WriteOp::Delete { dn, ndn }, ADMIN)).await;
}

#[tokio::test]
async fn settings_are_checked_against_the_schema_when_the_database_opens() {
    for (rule, want) in [
        ("nosuchattr size 1", "attribute \"nosuchattr\""),
        ("cn;x-bogus size 1", "attribute \"cn;x-bogus\""),
        ("modifyTimestamp count 1", "operational"),
        (
            "l uri ldap:///ou=x,dc=example,dc=com?nosuch?one",
            "uri attribute",
        ),
        ("l uri ldap:///dc=elsewhere?l", "outside the database"),
        ("l uri ldap:///cn=#zz,dc=example,dc=com?l", "uri base"),
        (
            "l size 1 restrict=ldap:///dc=elsewhere??sub",
            "restrict base",
        ),
        ("l set \"this/nosuch & [x]\"", "set: attribute \"nosuch\""),
        (
            "l set \"[ldap:///dc=elsewhere??sub]/l\"",
            "outside the database",
        ),
    ] {
        let attr = rule.split(' ').next().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let error = match open_with(tmp.path(), &[rule], Vec::new()) {
            Ok(_) => panic!("{rule} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            error.contains("constraint") && error.contains(attr) && error.contains(want),
            "{rule}: {error}"
        );
    }
}
