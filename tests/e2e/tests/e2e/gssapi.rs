//! SASL GSSAPI (Kerberos 5) against a real MIT KDC started in a temporary directory: `ldapwhoami -Y
//! GSSAPI` with and without security layers, the authentication name and its mapping, `sasl_ssf` in
//! access rules, and a client without a ticket. Under CI=true a missing KDC tool fails the test.

use canopy_e2e::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const REALM: &str = "EXAMPLE.TEST";
const TOOLS: [&str; 4] = [
    "/usr/sbin/krb5kdc",
    "/usr/sbin/kdb5_util",
    "/usr/sbin/kadmin.local",
    "/usr/bin/kinit",
];

/// A KDC of its own, with principals `alice`, `loner` (no entry) and `ldap/localhost`, the service keytab, and a ticket
/// cache holding alice's TGT. Dropping it stops the KDC.
struct Kdc {
    dir: tempdir::TempDir,
    child: Child,
}

impl Drop for Kdc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Kdc {
    /// None (after saying so) when the KDC tools are missing outside CI; under CI=true that fails.
    fn start() -> Option<Kdc> {
        if let Some(missing) = TOOLS.iter().find(|t| !Path::new(t).exists()) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{missing} is missing (apt packages krb5-kdc krb5-admin-server krb5-user)"
            );
            println!("skipped: {missing} is missing");
            return None;
        }
        let dir = tempdir::TempDir::new("kdc");
        let d = dir.path().display().to_string();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            dir.path().join("krb5.conf"),
            format!(
                "[libdefaults]\n default_realm = {REALM}\n dns_lookup_realm = false\n \
                 dns_lookup_kdc = false\n rdns = false\n udp_preference_limit = 1\n\
                 [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("kdc.conf"),
            format!(
                "[kdcdefaults]\n kdc_ports = {port}\n kdc_tcp_ports = {port}\n[realms]\n {REALM} = {{\n  \
                 database_name = {d}/principal\n  key_stash_file = {d}/stash\n  \
                 acl_file = {d}/kadm5.acl\n }}\n"
            ),
        )
        .unwrap();
        let kdc = |program: &str, args: &[&str]| {
            let out = Kdc::env_of(dir.path(), Command::new(program))
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{program} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        kdc(TOOLS[1], &["create", "-s", "-r", REALM, "-P", "master-pw"]);
        let keytab = format!("{d}/ldap.keytab");
        for query in [
            "addprinc -pw alice-kpw alice".to_string(),
            "addprinc -pw loner-kpw loner".to_string(),
            "addprinc -randkey ldap/localhost".to_string(),
            format!("ktadd -k {keytab} ldap/localhost"),
        ] {
            kdc(TOOLS[2], &["-r", REALM, "-q", &query]);
        }
        let child = Kdc::env_of(dir.path(), Command::new(TOOLS[0]))
            .args(["-n", "-r", REALM])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let kdc = Kdc { dir, child };
        // Bounded wait for the KDC to answer: kinit succeeds once it listens.
        let mut last = String::new();
        for _ in 0..50 {
            let mut kinit = kdc.client(Command::new(TOOLS[3]));
            kinit.arg("alice");
            let out = client::run(kinit, Some("alice-kpw\n"));
            if out.code == 0 {
                return Some(kdc);
            }
            last = out.stderr;
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("kinit never succeeded: {last}");
    }

    fn env_of(dir: &Path, mut cmd: Command) -> Command {
        cmd.env("KRB5_CONFIG", dir.join("krb5.conf"))
            .env("KRB5_KDC_PROFILE", dir.join("kdc.conf"));
        cmd
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A client command with the realm's configuration and alice's ticket cache.
    fn client(&self, mut cmd: Command) -> Command {
        cmd.env("KRB5_CONFIG", self.path("krb5.conf")).env(
            "KRB5CCNAME",
            format!("FILE:{}", self.path("ccache").display()),
        );
        cmd
    }

    /// The server: canopy with `[sasl] keytab`, slapd with KRB5_KTNAME and `sasl-host`; `realm` adds
    /// `sasl-realm` / `realm`, `mapping` an authz-regexp rule from names with the realm to the people
    /// entries. (Names without a realm map to the entry with their uid: slapd's test configuration has
    /// that rule, canopy has it built in.)
    fn server(&self, realm: bool, mapping: bool, rules: &[&str]) -> Server {
        self.server_with(realm, mapping, None, rules)
    }

    /// `server`, with slapd's `sasl-secprops maxssf=N` / canopy's `gssapi_max_ssf = N` when `max_ssf`.
    fn server_with(
        &self,
        realm: bool,
        mapping: bool,
        max_ssf: Option<u32>,
        rules: &[&str],
    ) -> Server {
        let (config, keytab, rcache) = (
            self.path("krb5.conf").display().to_string(),
            self.path("ldap.keytab").display().to_string(),
            self.dir.path().display().to_string(),
        );
        let mut env = vec![
            ("KRB5_CONFIG", config.as_str()),
            ("KRB5RCACHEDIR", rcache.as_str()),
        ];
        if Target::from_env() == Target::Slapd {
            env.push(("KRB5_KTNAME", keytab.as_str()));
        }
        let pattern = "uid=([^,]*),cn=example.test,cn=gssapi,cn=auth";
        let target = "uid=$1,ou=people,dc=example,dc=com";
        let mut slapd = "sasl-host localhost\n".to_string();
        let mut canopy = format!("[sasl]\nkeytab = \"{keytab}\"\nhost = \"localhost\"\n");
        if realm {
            slapd.push_str(&format!("sasl-realm {REALM}\n"));
            canopy.push_str(&format!("realm = \"{REALM}\"\n"));
        }
        if let Some(max) = max_ssf {
            slapd.push_str(&format!("sasl-secprops maxssf={max}\n"));
            canopy.push_str(&format!("gssapi_max_ssf = {max}\n"));
        }
        if mapping {
            slapd.push_str(&format!("authz-regexp \"{pattern}\" \"{target}\"\n"));
            canopy.push_str(&format!(
                "[[sasl.authz_regexp]]\nmatch = \"{pattern}\"\nreplace = \"{target}\"\n"
            ));
        }
        Server::start_with_env(&env, &slapd, rules, &canopy)
    }

    /// `TOOL -N -Y GSSAPI -H ldap://localhost:PORT [extra...]` with alice's ticket (`-N`: the host name
    /// as given, which the service principal names).
    fn run(&self, s: &Server, tool: &str, extra: &[&str]) -> Out {
        let mut cmd = self.client(Command::new(tool));
        let url = format!("ldap://localhost:{}", s.port());
        cmd.args(["-N", "-Y", "GSSAPI", "-H", &url]).args(extra);
        client::run(cmd, None)
    }
}

/// The SASL SSF the client reports on stderr.
fn client_ssf(out: &Out) -> u32 {
    out.stderr
        .lines()
        .find_map(|l| l.strip_prefix("SASL SSF: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no SASL SSF in {}", out.stderr))
}

#[test]
fn whoami_with_and_without_security_layers() {
    let Some(kdc) = Kdc::start() else { return };
    let s = kdc.server(false, false, &[]);
    let mechs = s.search(
        &Bind::Anonymous,
        &["-s", "base", "-b", "", "supportedSASLMechanisms"],
    );
    assert!(
        mechs.stdout.contains("supportedSASLMechanisms: GSSAPI\n"),
        "{}",
        mechs.stdout
    );
    // The default: confidentiality (the client takes the strongest layer offered).
    let out = kdc.run(&s, "ldapwhoami", &[]);
    out.expect_code(0, "ldapwhoami -Y GSSAPI");
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));
    assert!(client_ssf(&out) >= 128, "{}", out.stderr);
    assert!(out.stderr.contains("SASL data security layer installed"));
    // Integrity only, then no layer.
    let out = kdc.run(&s, "ldapwhoami", &["-O", "minssf=1,maxssf=1"]);
    out.expect_code(0, "ldapwhoami with an integrity layer");
    assert_eq!(client_ssf(&out), 1);
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));
    let out = kdc.run(&s, "ldapwhoami", &["-O", "maxssf=0"]);
    out.expect_code(0, "ldapwhoami without a layer");
    assert_eq!(client_ssf(&out), 0);
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));
    // A search of several PDUs each way through the confidentiality layer, and one without a layer.
    for options in [&[][..], &["-O", "maxssf=0"]] {
        let mut args = options.to_vec();
        args.extend([
            "-b",
            "ou=people,dc=example,dc=com",
            "(objectClass=*)",
            "uid",
        ]);
        let out = kdc.run(&s, "ldapsearch", &args);
        out.expect_code(0, "ldapsearch -Y GSSAPI");
        assert!(
            out.stdout
                .contains("dn: uid=alice,ou=people,dc=example,dc=com\nuid: alice\n"),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("# numEntries: "), "{}", out.stdout);
    }
}

#[test]
fn realm_and_authz_regexp_mapping() {
    let Some(kdc) = Kdc::start() else { return };
    let s = kdc.server(true, false, &[]);
    let out = kdc.run(&s, "ldapwhoami", &[]);
    out.expect_code(0, "ldapwhoami with sasl-realm");
    assert_eq!(
        out.stdout.trim(),
        "dn:uid=alice,cn=example.test,cn=gssapi,cn=auth"
    );
    drop(s);
    let s = kdc.server(true, true, &[]);
    let out = kdc.run(&s, "ldapwhoami", &[]);
    out.expect_code(0, "ldapwhoami mapped by authz-regexp");
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));
}

#[test]
fn a_server_maximum_limits_the_layers_offered() {
    let Some(kdc) = Kdc::start() else { return };
    for (max, ssf) in [(0, 0), (1, 1)] {
        let s = kdc.server_with(false, false, Some(max), &[]);
        let out = kdc.run(&s, "ldapwhoami", &[]);
        out.expect_code(0, &format!("ldapwhoami against maxssf={max}"));
        assert_eq!(client_ssf(&out), ssf, "{}", out.stderr);
        assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));
    }
}

#[test]
fn a_principal_without_an_entry_keeps_its_name() {
    let Some(kdc) = Kdc::start() else { return };
    let s = kdc.server(false, false, &[]);
    let cache = format!("FILE:{}", kdc.path("loner.cc").display());
    let mut kinit = kdc.client(Command::new(TOOLS[3]));
    kinit.arg("loner").env("KRB5CCNAME", &cache);
    client::run(kinit, Some("loner-kpw\n")).expect_code(0, "kinit loner");
    let mut cmd = kdc.client(Command::new("ldapwhoami"));
    let url = format!("ldap://localhost:{}", s.port());
    cmd.args(["-N", "-Y", "GSSAPI", "-H", &url])
        .env("KRB5CCNAME", &cache);
    let out = client::run(cmd, None);
    out.expect_code(0, "ldapwhoami as a principal without an entry");
    assert_eq!(out.stdout.trim(), "dn:uid=loner,cn=gssapi,cn=auth");
}

#[test]
fn sasl_ssf_in_access_rules() {
    let Some(kdc) = Kdc::start() else { return };
    let rules = [
        "to dn.subtree=\"ou=people,dc=example,dc=com\" by sasl_ssf=128 read by * none",
        "to * by * read",
    ];
    let s = kdc.server(false, false, &rules);
    let count = |options: &[&str]| {
        let mut args = options.to_vec();
        args.extend(["-b", "dc=example,dc=com", "(uid=alice)", "uid"]);
        let out = kdc.run(&s, "ldapsearch", &args);
        out.expect_code(0, "ldapsearch -Y GSSAPI");
        out.stdout.matches("\ndn: ").count()
    };
    assert_eq!(count(&[]), 1, "confidentiality meets sasl_ssf=128");
    assert_eq!(count(&["-O", "minssf=1,maxssf=1"]), 0, "integrity is ssf 1");
    assert_eq!(count(&["-O", "maxssf=0"]), 0, "no layer is ssf 0");
}

#[test]
fn a_token_that_is_not_kerberos_is_refused() {
    let Some(kdc) = Kdc::start() else { return };
    let s = kdc.server(false, false, &[]);
    let out = s.python("gssapi_raw.py", &[]);
    out.expect_code(0, "gssapi_raw.py");
    assert_eq!(
        out.stdout.trim(),
        "garbage token: 49 SASL(-13): authentication failure: GSSAPI Failure: gss_accept_sec_context"
    );
}

#[test]
fn large_messages_cross_the_layer_in_several_frames() {
    let Some(kdc) = Kdc::start() else { return };
    let s = kdc.server(false, false, &[]);
    // A response larger than a frame (64 KiB): the server splits it.
    let big = "y".repeat(200_000);
    let ldif = format!(
        "dn: {}\nchangetype: modify\nreplace: description\ndescription: {big}\n",
        user_dn("alice")
    );
    s.modify(&Bind::Root, &ldif)
        .expect_code(0, "a large description");
    let alice = user_dn("alice");
    let args = [
        "-b",
        &alice,
        "-s",
        "base",
        "-o",
        "ldif-wrap=no",
        "description",
    ];
    let out = kdc.run(&s, "ldapsearch", &args);
    out.expect_code(0, "ldapsearch of a large entry through the layer");
    assert!(
        out.stdout.contains(&format!("description: {big}\n")),
        "{} bytes",
        out.stdout.len()
    );
    assert!(out.stderr.contains("SASL data security layer installed"));
    // A request larger than a frame: the client splits it, the server joins the frames (a substring
    // filter of 100 KB: one argument may not exceed 128 KiB).
    let filter = format!("(description={}*)", &big[..100_000]);
    let out = kdc.run(
        &s,
        "ldapsearch",
        &["-b", "dc=example,dc=com", &filter, "1.1"],
    );
    out.expect_code(0, "a 100 KB filter through the layer");
    assert!(
        out.stdout.contains(&format!("dn: {alice}\n")),
        "{}",
        out.stdout
    );
}

#[test]
fn no_ticket_fails_in_the_client() {
    let Some(kdc) = Kdc::start() else { return };
    let s = kdc.server(false, false, &[]);
    let mut cmd = kdc.client(Command::new("ldapwhoami"));
    let url = format!("ldap://localhost:{}", s.port());
    cmd.args(["-N", "-Y", "GSSAPI", "-H", &url]);
    cmd.env("KRB5CCNAME", format!("FILE:{}", kdc.path("none").display()));
    let out = client::run(cmd, None);
    // libldap's LDAP_LOCAL_ERROR (-2) as an exit status.
    out.expect_code(254, "ldapwhoami -Y GSSAPI without a ticket");
    assert!(
        out.stderr.contains("No Kerberos credentials available"),
        "{}",
        out.stderr
    );
}
