//! Add, delete, modify and modify DN (RFC 4511 §4.6–4.9) through ldapadd, ldapdelete, ldapmodify
//! and ldapmodrdn as the root DN, with the error codes of each refusal.

use canopy_e2e::*;

const NEW_USER: &str = "dn: uid=zoe,ou=people,dc=example,dc=com
objectClass: inetOrgPerson
objectClass: posixAccount
uid: zoe
cn: Zoe Zimmer
sn: Zimmer
uidNumber: 1200
gidNumber: 1000
homeDirectory: /home/zoe
userPassword: {SSHA}rXU6jCIrlccL2LR/NLhEyg5CXqaRjzP8vA0nmQ==
";

#[test]
fn add() {
    let s = Server::start();
    let mut t = Transcript::new("write_add");
    t.section("add a user", &s.add(&Bind::Root, NEW_USER));
    t.section(
        "read it back with * and +",
        &s.read(&Bind::Root, &user_dn("zoe"), &["*", "+"]),
    );
    t.raw(
        "the new user binds",
        &s.whoami(Via::Ldap, &Bind::user("zoe")),
    );
    t.section("add it again", &s.add(&Bind::Root, NEW_USER));
    let cases = [
        (
            "parent does not exist",
            "dn: cn=x,ou=nowhere,dc=example,dc=com\nobjectClass: organizationalRole\ncn: x\n",
        ),
        (
            "missing required attribute sn",
            "dn: uid=nosn,ou=people,dc=example,dc=com\nobjectClass: inetOrgPerson\ncn: x\nuid: nosn\n",
        ),
        (
            "undefined attribute type",
            "dn: cn=x,dc=example,dc=com\nobjectClass: organizationalRole\ncn: x\nfooBar: 1\n",
        ),
        (
            "attribute not allowed by the object classes",
            "dn: cn=x,dc=example,dc=com\nobjectClass: organizationalRole\ncn: x\nmail: x@y\n",
        ),
        (
            "undefined object class",
            "dn: cn=x,dc=example,dc=com\nobjectClass: fooClass\ncn: x\n",
        ),
        (
            "no structural object class",
            "dn: uid=aux,dc=example,dc=com\nobjectClass: posixAccount\nuid: aux\ncn: x\nuidNumber: 1\ngidNumber: 1\nhomeDirectory: /\n",
        ),
        (
            "invalid integer syntax",
            "dn: cn=x,dc=example,dc=com\nobjectClass: posixGroup\ncn: x\ngidNumber: abc\n",
        ),
        (
            "two values of a single-valued attribute",
            "dn: uid=two,ou=people,dc=example,dc=com\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n\
             uid: two\ncn: t\nsn: t\nuidNumber: 1\nuidNumber: 2\ngidNumber: 1\nhomeDirectory: /\n",
        ),
        (
            "RDN value missing from the entry",
            "dn: cn=rdn,dc=example,dc=com\nobjectClass: organizationalRole\ncn: other\n",
        ),
        (
            "outside the naming context",
            "dn: o=elsewhere\nobjectClass: organization\no: elsewhere\n",
        ),
        (
            "UTF-8 and escaped DN",
            "dn: cn=Ölaf\\, Jr.+sn=Öl,ou=people,dc=example,dc=com\nobjectClass: person\ncn: Ölaf, Jr.\nsn: Öl\n",
        ),
    ];
    for (title, ldif) in cases {
        t.section(title, &s.add(&Bind::Root, ldif));
    }
    // slapd adds a missing RDN value to the entry rather than refusing it.
    t.section(
        "the entry whose RDN value was missing",
        &s.read(&Bind::Root, "cn=rdn,dc=example,dc=com", &[]),
    );
    let people = s.search(
        &Bind::Root,
        &["-b", "ou=people,dc=example,dc=com", "-s", "one", "1.1"],
    );
    t.section("people after the adds", &people);
    t.check();
}

#[test]
fn delete() {
    let s = Server::start();
    let mut t = Transcript::new("write_delete");
    let del = |dn: &str| s.tool("ldapdelete", &Bind::Root, &[dn], None);
    t.section("delete a leaf", &del(&user_dn("bob")));
    t.section(
        "read the deleted entry",
        &s.read(&Bind::Root, &user_dn("bob"), &[]),
    );
    t.section("delete it again", &del(&user_dn("bob")));
    t.section("delete a non-leaf", &del("ou=projects,dc=example,dc=com"));
    t.section(
        "delete the escaped DN",
        &del("cn=Smith\\, John,ou=people,dc=example,dc=com"),
    );
    t.section(
        "delete under a missing parent",
        &del("cn=x,ou=nowhere,dc=example,dc=com"),
    );
    let recursive = s.tool(
        "ldapdelete",
        &Bind::Root,
        &["-r", "ou=projects,dc=example,dc=com"],
        None,
    );
    t.section("delete a subtree with ldapdelete -r", &recursive);
    let rest = s.search(
        &Bind::Root,
        &["-b", SUFFIX, "-s", "sub", "(objectClass=*)", "1.1"],
    );
    t.section("what is left", &rest);
    t.check();
}

#[test]
fn modify() {
    let s = Server::start();
    let mut t = Transcript::new("write_modify");
    let bob = user_dn("bob");
    let changes = format!(
        "dn: {bob}
changetype: modify
add: description
description: first
description: second
-
add: mail
mail: bob.brown@example.com
-
delete: mail
mail: bob@example.com
-
replace: telephoneNumber
telephoneNumber: +44 20 7946 0000
-
increment: uidNumber
uidNumber: 5
-
delete: givenName
-
replace: loginShell
-
"
    );
    t.section(
        "add, delete, replace, increment in one request",
        &s.modify(&Bind::Root, &changes),
    );
    t.section(
        "bob after it",
        &s.read(
            &Bind::Root,
            &bob,
            &["*", "modifiersName", "hasSubordinates"],
        ),
    );
    t.section(
        "negative increment",
        &s.modify(
            &Bind::Root,
            &format!("dn: {bob}\nchangetype: modify\nincrement: uidNumber\nuidNumber: -10\n-\n"),
        ),
    );
    let errors = [
        (
            "add an existing value",
            "add: mail\nmail: BOB.BROWN@example.com",
        ),
        (
            "delete a missing value",
            "delete: description\ndescription: third",
        ),
        ("delete a missing attribute", "delete: roomNumber"),
        ("delete the RDN value", "delete: uid\nuid: bob"),
        ("delete a required attribute", "delete: sn"),
        ("undefined attribute", "add: fooBar\nfooBar: 1"),
        ("attribute not allowed", "add: member\nmember: cn=x"),
        (
            "second value of a single-valued attribute",
            "add: uidNumber\nuidNumber: 7",
        ),
        ("increment a non-integer", "increment: cn\ncn: 1"),
        ("invalid syntax", "replace: gidNumber\ngidNumber: twelve"),
        (
            "atomic: second change fails",
            "replace: description\ndescription: should not stay\n-\ndelete: roomNumber",
        ),
    ];
    for (title, change) in errors {
        let ldif = format!("dn: {bob}\nchangetype: modify\n{change}\n-\n");
        t.section(title, &s.modify(&Bind::Root, &ldif));
    }
    t.section(
        "bob unchanged by the failures",
        &s.read(
            &Bind::Root,
            &bob,
            &["description", "mail", "uidNumber", "sn", "uid"],
        ),
    );
    t.section(
        "modify a missing entry",
        &s.modify(
            &Bind::Root,
            &format!(
                "dn: {}\nchangetype: modify\nreplace: cn\ncn: x\n-\n",
                user_dn("nobody")
            ),
        ),
    );
    let group = format!(
        "dn: cn=engineering,ou=groups,{SUFFIX}\nchangetype: modify\nadd: member\nmember: uid=carol,ou=people,{SUFFIX}\n-\ndelete: member\nmember: UID=BOB,ou=people,{SUFFIX}\n-\n"
    );
    t.section(
        "DN-valued member, deleted in other case",
        &s.modify(&Bind::Root, &group),
    );
    t.section(
        "the group after it",
        &s.read(
            &Bind::Root,
            &format!("cn=engineering,ou=groups,{SUFFIX}"),
            &[],
        ),
    );
    t.check();
}

#[test]
fn modify_dn() {
    let s = Server::start();
    let mut t = Transcript::new("write_modrdn");
    let modrdn = |args: &[&str]| s.tool("ldapmodrdn", &Bind::Root, args, None);
    t.section(
        "rename with deleteoldrdn (-r)",
        &modrdn(&["-r", &user_dn("carol"), "uid=caroline"]),
    );
    t.section(
        "caroline",
        &s.read(&Bind::Root, &user_dn("caroline"), &["uid", "cn"]),
    );
    t.section(
        "old name is gone",
        &s.read(&Bind::Root, &user_dn("carol"), &[]),
    );
    t.section(
        "rename keeping the old RDN",
        &modrdn(&[&user_dn("dave"), "uid=david"]),
    );
    t.section("david", &s.read(&Bind::Root, &user_dn("david"), &["uid"]));
    t.section(
        "rename the escaped DN",
        &modrdn(&[
            "-r",
            "cn=Smith\\, John,ou=people,dc=example,dc=com",
            "cn=Smith\\, Johnny",
        ]),
    );
    t.section(
        "Johnny",
        &s.read(
            &Bind::Root,
            "cn=Smith\\, Johnny,ou=people,dc=example,dc=com",
            &["cn"],
        ),
    );
    let lead = format!("cn=lead,ou=apollo,ou=projects,{SUFFIX}");
    t.section(
        "move with newSuperior (-s)",
        &modrdn(&["-s", &format!("ou=groups,{SUFFIX}"), &lead, "cn=lead"]),
    );
    t.section(
        "moved entry",
        &s.read(&Bind::Root, &format!("cn=lead,ou=groups,{SUFFIX}"), &["cn"]),
    );
    let apollo = format!("ou=apollo,ou=projects,{SUFFIX}");
    t.section("rename a subtree", &modrdn(&["-r", &apollo, "ou=artemis"]));
    t.section(
        "the renamed subtree",
        &s.search(
            &Bind::Root,
            &[
                "-b",
                &format!("ou=artemis,ou=projects,{SUFFIX}"),
                "-s",
                "sub",
                "(objectClass=*)",
                "1.1",
                "entryDN",
            ],
        ),
    );
    t.section(
        "old subtree is gone",
        &s.search(&Bind::Root, &["-b", &apollo, "-s", "sub", "1.1"]),
    );
    t.section(
        "children found by the new name",
        &s.search(&Bind::Root, &["-b", SUFFIX, "(cn=docs)", "1.1"]),
    );
    t.section(
        "move a subtree under another parent",
        &modrdn(&[
            "-s",
            &format!("ou=groups,{SUFFIX}"),
            &format!("ou=artemis,ou=projects,{SUFFIX}"),
            "ou=artemis",
        ]),
    );
    t.section(
        "all DNs after the moves",
        &s.search(&Bind::Root, &["-b", SUFFIX, "-s", "sub", "1.1"]),
    );
    t.section(
        "rename onto an existing entry",
        &modrdn(&[&user_dn("alice"), "uid=bob"]),
    );
    t.section(
        "rename a missing entry",
        &modrdn(&[&user_dn("nobody"), "uid=somebody"]),
    );
    t.section(
        "move under a missing parent",
        &modrdn(&[
            "-s",
            &format!("ou=nowhere,{SUFFIX}"),
            &user_dn("erin"),
            "uid=erin",
        ]),
    );
    t.section(
        "move under its own child",
        &modrdn(&[
            "-s",
            &format!("ou=artemis,ou=groups,{SUFFIX}"),
            &format!("ou=groups,{SUFFIX}"),
            "ou=groups",
        ]),
    );
    t.check();
}

/// Standard base64 with padding, for writing binary values into LDIF.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn binary_and_unusual_values() {
    let s = Server::start();
    let mut t = Transcript::new("write_values");
    let alice = user_dn("alice");
    let every_byte: Vec<u8> = (0..=255u8).collect();
    let ldif = format!(
        "dn: {alice}\nchangetype: modify\nadd: jpegPhoto\njpegPhoto:: {}\n-\n\
         replace: description\ndescription:: {}\ndescription:: {}\ndescription:: {}\n-\n",
        base64(&every_byte),
        base64(b" leading and trailing space "),
        base64(b":starts with a colon"),
        base64(b"<starts with less-than"),
    );
    t.section("binary and unusual values", &s.modify(&Bind::Root, &ldif));
    t.section(
        "read back",
        &s.read(&Bind::Anonymous, &alice, &["jpegPhoto", "description"]),
    );

    // A 200 KiB value crosses many TCP segments and LMDB overflow pages.
    let mut x: u32 = 12345;
    let big: Vec<u8> = (0..200 * 1024)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    let ldif = format!(
        "dn: {}\nchangetype: modify\nreplace: jpegPhoto\njpegPhoto:: {}\n-\n",
        user_dn("bob"),
        base64(&big)
    );
    s.modify(&Bind::Root, &ldif)
        .expect_code(0, "200 KiB jpegPhoto");
    let out = s.read(&Bind::Anonymous, &user_dn("bob"), &["jpegPhoto"]);
    let values = out.records()[0].attrs.clone();
    assert_eq!(values.len(), 1);
    let got = ldif::decode_base64(ldif::value_of_raw(&values[0])).expect("base64 jpegPhoto");
    assert!(
        got == big,
        "200 KiB value came back different ({} bytes)",
        got.len()
    );
    t.check();
}

/// The Relax Rules control (`ldapmodify -e relax`, slapd's 1.3.6.1.4.1.4203.666.5.12): with it and
/// manage access, the server's bookkeeping attributes (creatorsName, createTimestamp, modifiersName,
/// modifyTimestamp, entryUUID) may be written and an entry's structural class changed; without it
/// both are refused, as slapd refuses them.
#[test]
fn relax_rules_control() {
    let s = Server::start();
    let mut t = Transcript::new("write_relax");
    let dn = format!("cn=relaxed,{SUFFIX}");
    s.add(
        &Bind::Root,
        &format!("dn: {dn}\nobjectClass: organizationalRole\ncn: relaxed\n"),
    )
    .expect_code(0, "the entry");
    let relaxed = |t: &mut Transcript, title: &str, relax: bool, ldif: &str| {
        let args: &[&str] = if relax { &["-e", "!relax"] } else { &[] };
        t.section(title, &s.tool("ldapmodify", &Bind::Root, args, Some(ldif)));
    };
    let bookkeeping = format!(
        "dn: {dn}\nchangetype: modify\nreplace: creatorsName\ncreatorsName: cn=Someone,{SUFFIX}\n-\n\
         replace: modifyTimestamp\nmodifyTimestamp: 19700101000000Z\n-\n\
         replace: createTimestamp\ncreateTimestamp: 19700101000000Z\n-\n"
    );
    relaxed(&mut t, "bookkeeping without relax", false, &bookkeeping);
    relaxed(&mut t, "bookkeeping with relax", true, &bookkeeping);
    let structural = format!(
        "dn: {dn}\nchangetype: modify\nreplace: objectClass\nobjectClass: applicationProcess\n-\n"
    );
    relaxed(&mut t, "structural class without relax", false, &structural);
    relaxed(&mut t, "structural class with relax", true, &structural);
    relaxed(
        &mut t,
        "entryUUID with relax",
        true,
        &format!(
            "dn: {dn}\nchangetype: modify\nreplace: entryUUID\n\
             entryUUID: badbadba-dbad-1029-92f7-badbadbadbad\n-\n"
        ),
    );
    relaxed(
        &mut t,
        "add with bookkeeping, relax",
        true,
        &format!(
            "dn: cn=Made,{SUFFIX}\nchangetype: add\nobjectClass: organizationalRole\ncn: Made\n\
             creatorsName: cn=Someone\ncreateTimestamp: 19700101000000Z\n\
             modifiersName: cn=Someone Else\nmodifyTimestamp: 19700101000000Z\n\
             entryUUID: badbadef-dbad-1029-92f7-badbadbadbad\n"
        ),
    );
    relaxed(
        &mut t,
        "entryCSN with relax",
        true,
        &format!(
            "dn: {dn}\nchangetype: modify\nreplace: entryCSN\n\
             entryCSN: 20200101000000.000000Z#000000#000#000000\n-\n"
        ),
    );
    relaxed(
        &mut t,
        "entryDN with relax",
        true,
        &format!("dn: {dn}\nchangetype: modify\nreplace: entryDN\nentryDN: {dn}\n-\n"),
    );
    relaxed(
        &mut t,
        "structuralObjectClass with relax",
        true,
        &format!(
            "dn: {dn}\nchangetype: modify\nreplace: structuralObjectClass\n\
             structuralObjectClass: device\n-\n"
        ),
    );
    // A user who may write her own entry but has no manage access to it.
    t.section(
        "a user's own bookkeeping with relax",
        &s.tool(
            "ldapmodify",
            &Bind::user("alice"),
            &["-e", "!relax"],
            Some(&format!(
                "dn: {}\nchangetype: modify\nreplace: modifyTimestamp\n\
                 modifyTimestamp: 19700101000000Z\n-\n",
                user_dn("alice")
            )),
        ),
    );
    t.section(
        "a user's own description with relax",
        &s.tool(
            "ldapmodify",
            &Bind::user("alice"),
            &["-e", "!relax"],
            Some(&format!(
                "dn: {}\nchangetype: modify\nreplace: description\ndescription: relaxed\n-\n",
                user_dn("alice")
            )),
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
                "(|(cn=relaxed)(cn=Made))",
                "objectClass",
                "structuralObjectClass",
                "creatorsName",
                "createTimestamp",
                "modifiersName",
                "modifyTimestamp",
                "entryUUID",
            ],
        ),
    );
    t.check();
    // The transcript masks times and UUIDs: the values given under relax are the values stored.
    let made = s.search(
        &Bind::Root,
        &[
            "-b",
            &format!("cn=Made,{SUFFIX}"),
            "-s",
            "base",
            "(objectClass=*)",
            "createTimestamp",
            "modifyTimestamp",
            "entryUUID",
        ],
    );
    let records = made.records();
    let made = records.first().expect("cn=Made");
    assert_eq!(made.values("createTimestamp"), ["19700101000000Z"]);
    assert_eq!(made.values("modifyTimestamp"), ["19700101000000Z"]);
    assert_eq!(
        made.values("entryUUID"),
        ["badbadef-dbad-1029-92f7-badbadbadbad"]
    );
}
