//! Tests of the tree: a configuration to entries and back, schema added live, numbering after a crash.

use super::from_config::limit_rule;
use super::*;
use crate::config::Config;
use crate::limits::LimitValue;

#[test]
fn a_tree_reads_back_into_the_same_configuration() {
    let config = Config::parse(
        "suffix = \"dc=x\"\nroot_dn = \"cn=admin,dc=x\"\naccess = [\"to * by * read\"]\n\
         config_root_dn = \"cn=admin,cn=config\"\n[limits]\nsize_limit = 7\n\
         [[database]]\nsuffix = \"dc=y\"\nread_only = true\n[database.limits]\ntime_limit = 9\n",
        "t",
    )
    .unwrap();
    let tree = from_config(&config, b"secret");
    let db1 = tree.iter().find(|e| e.dn == database_dn(1)).unwrap();
    assert_eq!(db1.get("olcAccess"), ["{0}to * by * read"]);
    assert_eq!(db1.get("olcRootPW"), ["secret"]);
    // The file as it was before the live changes the tree holds.
    let mut base = config.clone();
    base.access.clear();
    base.limits.size_limit = 1;
    base.database[0].read_only = false;
    base.database[0].limits.time_limit = None;
    base.config_root_dn = None;
    let (back, password) = to_config(&base, &tree).unwrap();
    assert_eq!(password, b"secret");
    assert_eq!(from_config(&back, &password), tree);
    assert_eq!(back.limits.size_limit, 7);
    assert!(back.database[0].read_only);
    assert_eq!(back.database[0].limits.time_limit, Some(9));
}

#[test]
fn schema_added_live_reads_back_as_tables_after_the_file_s() {
    let file = Config::parse(
        "[[schema]]\nname = \"site\"\nattribute_types = [\"( 1.3.6.1.4.1.99999.7.1 NAME 'siteCode' \
         SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\"]\n",
        "t",
    )
    .unwrap();
    let mut live = file.clone();
    live.schema.push(crate::config::SchemaConfig {
        object_identifiers: Vec::new(),
        name: "local".into(),
        attribute_types: vec!["( 1.3.6.1.4.1.99999.8.1 NAME 'localCode' SUP siteCode )".into()],
        object_classes: vec![
            "( 1.3.6.1.4.1.99999.8.2 NAME 'localThing' SUP top AUXILIARY MAY localCode )".into(),
        ],
    });
    let tree = from_config(&live, b"");
    let child = tree
        .iter()
        .find(|e| e.dn == "cn={1}local,cn=schema,cn=config")
        .unwrap();
    assert_eq!(child.get("cn"), ["{1}local"]);
    assert_eq!(
        child.get("olcAttributeTypes"),
        ["{0}( 1.3.6.1.4.1.99999.8.1 NAME 'localCode' SUP siteCode )"]
    );
    assert_eq!(schema_child_of(&child.dn), Some((1, "local".to_string())));
    let (back, _) = to_config(&file, &tree).unwrap();
    assert_eq!(back.schema, live.schema);
    let schema = crate::load_schema(&back).unwrap();
    assert!(schema.object_class("localThing").is_some());
    // A file that now defines a schema where the live one is numbered: refused, not lost.
    let mut grown = file.clone();
    grown.schema.push(crate::config::SchemaConfig {
        object_identifiers: Vec::new(),
        name: "other".into(),
        ..Default::default()
    });
    let refusal = to_config(&grown, &tree).unwrap_err();
    assert!(
        refusal.message.contains("cn={1}local"),
        "{}",
        refusal.message
    );
}

#[test]
fn gaps_and_copies_a_crash_leaves_are_closed() {
    let file = Config::default();
    let mut live = file.clone();
    for (suffix, dir) in [("dc=a", "/tmp/a"), ("dc=b", "/tmp/b"), ("dc=c", "/tmp/c")] {
        live.database.push(crate::config::DatabaseConfig {
            suffix: suffix.into(),
            root_dn: None,
            root_password: None,
            directory: Some(dir.into()),
            indexes: Vec::new(),
            access: Vec::new(),
            limits: Default::default(),
            overlay: Vec::new(),
            read_only: false,
            subordinate: None,
            syncrepl: Vec::new(),
            updateref: None,
            multiprovider: false,
        });
    }
    live.schema = ["one", "two"]
        .map(|name| crate::config::SchemaConfig {
            object_identifiers: Vec::new(),
            name: name.into(),
            ..Default::default()
        })
        .to_vec();
    let tree = from_config(&live, b"");
    // Database 2 and schema {0} deleted, the crash came before the renumbering.
    let gap: Vec<ConfigEntry> = tree
        .iter()
        .filter(|e| e.dn != database_dn(2) && !e.dn.starts_with("cn={0}one"))
        .cloned()
        .collect();
    let (back, _) = to_config(&file, &gap).unwrap();
    let suffixes: Vec<&str> = back.database.iter().map(|d| d.suffix.as_str()).collect();
    assert_eq!(suffixes, ["dc=b", "dc=c"]);
    assert_eq!(back.schema.len(), 1);
    assert_eq!(back.schema[0].name, "two");
    // In the middle of a renumbering: database 3 copied to 2 and schema {1} to {0}, not yet
    // deleted.
    let mut copies = gap.clone();
    let mut moved = gap.iter().find(|e| e.dn == database_dn(3)).unwrap().clone();
    moved.dn = database_dn(2);
    copies.push(moved);
    let mut child = gap
        .iter()
        .find(|e| e.dn.starts_with("cn={1}two"))
        .unwrap()
        .clone();
    child.dn = format!("cn={{0}}two,{SCHEMA_DN}");
    copies.push(child);
    let (back, _) = to_config(&file, &copies).unwrap();
    let suffixes: Vec<&str> = back.database.iter().map(|d| d.suffix.as_str()).collect();
    assert_eq!(suffixes, ["dc=b", "dc=c"]);
    assert_eq!(back.schema.len(), 1);
}

#[test]
fn a_start_after_a_crash_in_a_database_delete_finds_the_numbering() {
    let file = Config::parse(
        "[[database]]\nsuffix = \"dc=b\"\ndirectory = \"/tmp/b\"\n\
         [[database]]\nsuffix = \"dc=c\"\ndirectory = \"/tmp/c\"\n\
         [[database]]\nsuffix = \"dc=d\"\ndirectory = \"/tmp/d\"\n",
        "t",
    )
    .unwrap();
    let mut tree = from_config(&file, b"");
    let c = tree.iter_mut().find(|e| e.dn == database_dn(3)).unwrap();
    c.attrs.push(("olcReadOnly".into(), vec!["TRUE".into()]));
    c.attrs
        .retain(|(n, v)| n != "olcReadOnly" || v[0] == "TRUE");
    let without_b: Vec<ConfigEntry> = tree
        .iter()
        .filter(|e| e.dn != database_dn(2))
        .cloned()
        .collect();
    let suffixes = |config: &Config| -> Vec<String> {
        config.database.iter().map(|d| d.suffix.clone()).collect()
    };
    // The delete committed, not yet recorded: the file's dc=b comes back from the file.
    let aligned = align_databases(&file, &without_b);
    let (back, _) = to_config(&file, &aligned).unwrap();
    assert_eq!(suffixes(&back), ["dc=b", "dc=c", "dc=d"]);
    assert!(back.database[1].read_only, "dc=c keeps its live setting");
    // Recorded, not yet renumbered (or half renumbered: dc=c copied to 2).
    let mut base = file.clone();
    base.database.remove(0);
    let mut half = without_b.clone();
    let copy = moved_to_database(half.iter().find(|e| e.dn == database_dn(3)).unwrap(), 2);
    half.push(copy);
    for stored in [without_b, half] {
        let aligned = align_databases(&base, &stored);
        let (back, _) = to_config(&base, &aligned).unwrap();
        assert_eq!(suffixes(&back), ["dc=c", "dc=d"]);
        assert!(back.database[0].read_only, "dc=c keeps its live setting");
        assert!(!back.database[1].read_only);
    }
    // A tree that matches the file is left as it is.
    assert_eq!(align_databases(&file, &tree), tree);
}

#[test]
fn schema_tables_are_checked_in_slapd_s_words() {
    let mut schema = crate::load_schema(&Config::default()).unwrap();
    let table = |types: &[&str], classes: &[&str]| crate::config::SchemaConfig {
        object_identifiers: Vec::new(),
        name: "t".into(),
        attribute_types: types.iter().map(|t| t.to_string()).collect(),
        object_classes: classes.iter().map(|c| c.to_string()).collect(),
    };
    for (types, classes, message) in [
        (
            &["( 1.3.6.1.4.1.99999.9.1 NAME 'x1' SYNTAX 1.2.3.4 )"][..],
            &[][..],
            "Syntax not found: \"1.2.3.4\"",
        ),
        (
            &["( 1.3.6.1.4.1.99999.9.2 NAME 'x2' SUP nope )"],
            &[],
            "AttributeType not found: \"nope\"",
        ),
        (
            &["( 1.3.6.1.4.1.99999.9.3 NAME 'cn' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"],
            &[],
            "Inconsistent duplicate attributeType: \"cn\"",
        ),
        (
            &[],
            &["( 1.3.6.1.4.1.99999.9.4 NAME 'x4' SUP nope AUXILIARY )"],
            "ObjectClass not found: \"nope\"",
        ),
    ] {
        let error =
            crate::load_schema_tables(&mut schema.clone(), &[table(types, classes)]).unwrap_err();
        assert_eq!(error.message, message);
    }
    crate::load_schema_tables(
        &mut schema,
        &[table(
            &["( 1.3.6.1.4.1.99999.9.5 NAME 'x5' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )"],
            &["( 1.3.6.1.4.1.99999.9.6 NAME 'x6' SUP top AUXILIARY MAY x5 )"],
        )],
    )
    .unwrap();
    assert!(schema.object_class("x6").is_some());
}

#[test]
fn limit_rules_read_back_in_slapd_words() {
    let rule = crate::limits::parse_limit_rule(
        "dn.exact=\"uid=a,dc=x\" size=5 time=unlimited size.prtotal=disabled",
    )
    .unwrap();
    assert_eq!(rule.who, "dn.exact:uid=a,dc=x");
    assert_eq!(rule.size, Some(LimitValue::Limited(5)));
    assert_eq!(rule.time, Some(LimitValue::Unlimited));
    assert_eq!(
        crate::limits::parse_limit_rule(&limit_rule(&rule))
            .unwrap()
            .who,
        rule.who
    );
    assert!(crate::limits::parse_limit_rule("users").is_err());
    assert!(crate::limits::parse_limit_rule("dn.regex=\".*\" size=1").is_err());
    assert!(crate::limits::parse_limit_rule("users size=lots").is_err());
}

#[test]
fn bad_values_name_the_attribute() {
    let config = Config::default();
    let mut tree = from_config(&config, b"");
    let frontend = tree.iter_mut().find(|e| e.dn == FRONTEND_DN).unwrap();
    frontend.attrs.retain(|(n, _)| n != "olcSizeLimit");
    frontend
        .attrs
        .push(("olcSizeLimit".into(), vec!["lots".into()]));
    let refusal = to_config(&config, &tree).unwrap_err();
    assert_eq!(refusal.code, ResultCode::Other);
    assert_eq!(refusal.message, "<olcSizeLimit> unable to parse limit");
    assert_eq!(split_ordinal("{12}to *"), (Some(12), "to *"));
    assert_eq!(split_ordinal("{x}to *"), (None, "{x}to *"));
}

#[test]
fn an_index_default_gives_its_kinds_to_the_indexes_after_it() {
    let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let kinds = |indexes: &[crate::config::IndexConfig], attr: &str| {
        indexes
            .iter()
            .find(|i| i.attr == attr)
            .map(|i| i.kinds.clone())
            .unwrap_or_default()
    };
    let indexes = parse_indexes(&values(&["cn", "default pres,sub", "sn,mail", "uid eq"])).unwrap();
    assert_eq!(kinds(&indexes, "cn"), ["eq"], "before a default: eq");
    assert_eq!(kinds(&indexes, "sn"), ["pres", "sub"]);
    assert_eq!(kinds(&indexes, "mail"), ["pres", "sub"]);
    assert_eq!(kinds(&indexes, "uid"), ["eq"]);
    assert!(!indexes
        .iter()
        .any(|i| i.attr.eq_ignore_ascii_case("default")));
    let refused = parse_indexes(&values(&["default"])).unwrap_err();
    assert_eq!(refused.code, canopy_proto::ResultCode::Other);
    assert!(parse_indexes(&values(&["cn,default eq"])).is_err());
}

/// Each database's consumers show as its own entry's olcSyncrepl (and its olcUpdateRef), in slapd's
/// words; a database without consumers has neither.
#[test]
fn each_database_shows_its_own_consumers() {
    let config = Config::parse(
        "suffix = \"dc=x\"\nroot_dn = \"cn=admin,dc=x\"\n\
         [[syncrepl]]\nrid = 1\nprovider = \"ldap://127.0.0.1:9\"\n\
         [[database]]\nsuffix = \"ou=sub,dc=x\"\nsubordinate = true\nupdateref = \"ldap://127.0.0.1:8\"\n\
         [[database.syncrepl]]\nrid = 2\nprovider = \"ldap://127.0.0.1:8\"\nsearchbase = \"ou=sub,dc=x\"\n\
         type = \"refreshAndPersist\"\nbinddn = \"cn=r,dc=x\"\ncredentials = \"s\"\n\
         [[database]]\nsuffix = \"dc=z\"\n",
        "t",
    )
    .unwrap();
    let tree = from_config(&config, b"secret");
    let db = |n| tree.iter().find(|e| e.dn == database_dn(n)).unwrap();
    assert_eq!(
        db(1).get("olcSyncrepl"),
        ["{0}rid=001 provider=ldap://127.0.0.1:9 bindmethod=simple timeout=30 network-timeout=10 \
          starttls=no filter=\"(objectClass=*)\" scope=sub attrs=\"*,+\" type=refreshOnly \
          interval=01:00:00:00 retry=\"60 +\""]
    );
    assert!(db(1).get("olcUpdateRef").is_empty());
    assert_eq!(
        db(2).get("olcSyncrepl"),
        ["{0}rid=002 provider=ldap://127.0.0.1:8 bindmethod=simple timeout=30 network-timeout=10 \
          binddn=\"cn=r,dc=x\" credentials=\"s\" starttls=no filter=\"(objectClass=*)\" \
          searchbase=\"ou=sub,dc=x\" scope=sub attrs=\"*,+\" type=refreshAndPersist retry=\"60 +\""]
    );
    assert_eq!(db(2).get("olcUpdateRef"), ["ldap://127.0.0.1:8"]);
    assert!(db(3).get("olcSyncrepl").is_empty() && db(3).get("olcUpdateRef").is_empty());
}
