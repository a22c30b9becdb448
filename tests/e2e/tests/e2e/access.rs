//! The default access rules (Debian slapd's): userPassword is usable for bind and writable by its
//! owner but readable only by the root DN and its owner; all else readable by all; only root writes.

use canopy_e2e::*;

#[test]
fn reading_user_password() {
    let s = Server::start();
    let mut t = Transcript::new("access_read");
    let alice = user_dn("alice");
    let readers = [
        ("anonymous", Bind::Anonymous),
        ("another user", Bind::user("bob")),
        ("the owner", Bind::user("alice")),
        ("root", Bind::Root),
    ];
    for (who, bind) in &readers {
        t.section(
            &format!("userPassword and cn as {who}"),
            &s.read(bind, &alice, &["userPassword", "cn"]),
        );
        t.section(&format!("* as {who}"), &s.read(bind, &alice, &["*"]));
        let filter = s.search(
            bind,
            &[
                "-b",
                "ou=people,dc=example,dc=com",
                "(userPassword=*)",
                "1.1",
            ],
        );
        t.section(&format!("filter on userPassword as {who}"), &filter);
    }
    t.check();
}

#[test]
fn writing() {
    let s = Server::start();
    let mut t = Transcript::new("access_write");
    let alice = user_dn("alice");
    let set = |attr: &str, value: &str| {
        format!("dn: {alice}\nchangetype: modify\nreplace: {attr}\n{attr}: {value}\n-\n")
    };
    t.section(
        "alice changes her own description",
        &s.modify(&Bind::user("alice"), &set("description", "mine")),
    );
    t.section(
        "bob changes alice's description",
        &s.modify(&Bind::user("bob"), &set("description", "bob's")),
    );
    t.section(
        "anonymous changes alice's description",
        &s.modify(&Bind::Anonymous, &set("description", "anon")),
    );
    t.section(
        "bob changes alice's userPassword",
        &s.modify(&Bind::user("bob"), &set("userPassword", "stolen")),
    );
    t.section(
        "alice changes her own userPassword",
        &s.modify(&Bind::user("alice"), &set("userPassword", "alice-2")),
    );
    t.raw(
        "alice binds with it",
        &s.whoami(Via::Ldap, &Bind::Simple(alice.clone(), "alice-2".into())),
    );
    t.section(
        "root changes alice's description",
        &s.modify(&Bind::Root, &set("description", "root's")),
    );
    t.section(
        "alice as everyone sees her",
        &s.read(&Bind::Anonymous, &alice, &["description"]),
    );

    let entry = "dn: cn=new,dc=example,dc=com\nobjectClass: organizationalRole\ncn: new\n";
    t.section("anonymous add", &s.add(&Bind::Anonymous, entry));
    t.section("user add", &s.add(&Bind::user("bob"), entry));
    let del = |bind: &Bind| s.tool("ldapdelete", bind, &[&user_dn("olivia")], None);
    t.section("anonymous delete", &del(&Bind::Anonymous));
    t.section("user delete", &del(&Bind::user("bob")));
    let rename = |bind: &Bind| s.tool("ldapmodrdn", bind, &[&user_dn("olivia"), "uid=liv"], None);
    t.section("anonymous rename", &rename(&Bind::Anonymous));
    t.section("user renames itself", &rename(&Bind::user("olivia")));
    t.section(
        "olivia still there",
        &s.read(&Bind::Anonymous, &user_dn("olivia"), &["1.1"]),
    );
    t.check();
}
