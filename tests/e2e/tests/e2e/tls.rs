//! TLS (canopy only; skipped with a message for slapd, whose TLS setup the suite does not configure):
//! StartTLS and ldaps:// with the generated self-signed certificate, StartTLS refusals on the wire, the
//! password protection switch, certificate reload on SIGHUP and file changes, SASL EXTERNAL with a client certificate, and
//! a client that sends garbage instead of a ClientHello.

use canopy_e2e::client::run;
use canopy_e2e::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// False (with the reason printed) when the suite runs against slapd.
fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} tests canopy's own TLS configuration");
        return false;
    }
    true
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// Canopy with `toml` and an extra ldaps:// listener; returns the server and the ldaps URL.
fn start_with_ldaps(toml: &str) -> (Server, String) {
    let url = format!("ldaps://127.0.0.1:{}", free_port());
    let s = Server::start_canopy_with_listeners(toml, std::slice::from_ref(&url));
    (s, url)
}

fn generated_cert(s: &Server) -> PathBuf {
    s.data_dir().join("tls").join("cert.pem")
}

/// An ldap-utils tool against `url`, trusting `ca` and demanding a valid server certificate.
fn tls_tool(tool: &str, url: &str, ca: &Path, args: &[&str], env: &[(&str, &Path)]) -> Out {
    let mut cmd = Command::new(tool);
    cmd.arg("-H")
        .arg(url)
        .args(args)
        .env("LDAPTLS_CACERT", ca)
        .env("LDAPTLS_REQCERT", "demand");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd, None)
}

fn alice_args() -> Vec<String> {
    vec![
        "-x".into(),
        "-D".into(),
        user_dn("alice"),
        "-w".into(),
        "alice-pw".into(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = run(
        {
            let mut c = Command::new("openssl");
            c.current_dir(dir).args(args);
            c
        },
        None,
    );
    out.expect_code(0, &format!("openssl {}", args.join(" ")));
}

/// `openssl req -x509` with a new P-256 key, valid two days: a self-signed certificate in `dir`.
fn self_signed(dir: &Path, subject: &str, extra: &[&str], key: &str, cert: &str) {
    let mut args = vec![
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        subject,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-keyout", key, "-out", cert]);
    openssl(dir, &args);
}

/// A self-signed server certificate for 127.0.0.1 made with the openssl CLI: (cert, key).
fn make_server_cert(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let cert = format!("{name}.crt");
    let key = format!("{name}.key");
    self_signed(
        dir,
        &format!("/CN={name}"),
        &["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        &key,
        &cert,
    );
    (dir.join(cert), dir.join(key))
}

fn python(s: &Server, script: &str, args: &[&str]) -> Out {
    let out = s.python(script, args);
    out.expect_code(0, script);
    out
}

#[test]
fn starttls_and_ldaps_with_the_generated_certificate() {
    if !canopy_target("the generated certificate") {
        return;
    }
    let (mut s, ldaps) = start_with_ldaps("");
    let cert = generated_cert(&s);
    let key = s.data_dir().join("tls").join("key.pem");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "key file mode");
    let log = s.log();
    assert!(
        log.contains("sha256") && log.contains("cert.pem"),
        "the log names the certificate and its fingerprint:\n{log}"
    );
    assert!(
        !log.contains("PRIVATE KEY"),
        "key material in the log:\n{log}"
    );

    let alice = alice_args();
    let mut zz = vec!["-ZZ"];
    zz.extend(strs(&alice));
    let out = tls_tool("ldapwhoami", &s.ldap_url(), &cert, &zz, &[]);
    out.expect_code(0, "ldapwhoami -ZZ");
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));

    let out = tls_tool("ldapwhoami", &ldaps, &cert, &strs(&alice), &[]);
    out.expect_code(0, "ldapwhoami over ldaps://");
    assert_eq!(out.stdout.trim(), format!("dn:{}", user_dn("alice")));

    let out = tls_tool(
        "ldapsearch",
        &ldaps,
        &cert,
        &["-x", "-LLL", "-b", "", "-s", "base", "supportedExtension"],
        &[],
    );
    out.expect_code(0, "root DSE over ldaps://");
    assert!(
        out.stdout
            .contains("supportedExtension: 1.3.6.1.4.1.1466.20037"),
        "{}",
        out.stdout
    );

    // A client that does not trust the certificate gives up.
    let other = s.dir().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (untrusted, _) = make_server_cert(&other, "stranger");
    let out = tls_tool("ldapwhoami", &ldaps, &untrusted, &["-x"], &[]);
    assert_ne!(out.code, 0, "an untrusted certificate was accepted");

    // The certificate is made once and reused.
    let before = std::fs::read(&cert).unwrap();
    s.restart();
    assert_eq!(std::fs::read(&cert).unwrap(), before, "certificate remade");
    let out = tls_tool("ldapwhoami", &s.ldap_url(), &cert, &zz, &[]);
    out.expect_code(0, "ldapwhoami -ZZ after a restart");
}

#[test]
fn starttls_on_the_wire() {
    if !canopy_target("StartTLS") {
        return;
    }
    let s = Server::start_canopy_with_config("");
    let cert = generated_cert(&s);
    let cert_arg = cert.to_string_lossy().into_owned();
    let out = python(&s, "starttls_raw.py", &[&cert_arg]);
    let expected = "with value: 2\n\
                    with value, then whoami: 0\n\
                    pipelined: [(1, 1), (2, 0)]\n\
                    first: 0 None\n";
    assert!(
        out.stdout.starts_with(expected),
        "expected to start with:\n{expected}\ngot:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("protocol: TLSv1."), "{}", out.stdout);
    assert!(
        out.stdout.ends_with("second: 1\nwhoami over tls: 0\n"),
        "a second StartTLS is operationsError and the connection goes on:\n{}",
        out.stdout
    );

    let out = python(&s, "starttls.py", &[&cert_arg]);
    assert_eq!(
        out.stdout,
        format!(
            "starttls: ok\nwhoami: dn:{alice}\nsecond starttls: {second}\nafter: dn:{alice}\n",
            alice = user_dn("alice"),
            second = second_starttls_line(&out.stdout)
        ),
        "python-ldap start_tls_s"
    );
}

/// libldap refuses a second StartTLS itself (LOCAL_ERROR) or passes on the server's operationsError;
/// either way it must not succeed.
fn second_starttls_line(stdout: &str) -> String {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("second starttls: "))
        .unwrap_or("missing")
        .to_string();
    assert_ne!(line, "ok", "a second StartTLS succeeded:\n{stdout}");
    line
}

#[test]
fn passwords_need_protection_when_configured() {
    if !canopy_target("require_protected_passwords") {
        return;
    }
    let s = Server::start_canopy_with_listeners(
        "[tls]\nrequire_protected_passwords = \"always\"\n",
        &[],
    );
    let cert = generated_cert(&s);
    let alice = alice_args();
    let plain = s.tool("ldapwhoami", &Bind::user("alice"), &[], None);
    assert_eq!(plain.code, 13, "plain TCP bind: {plain:?}");
    assert!(
        plain.stderr.contains("Confidentiality required"),
        "{}",
        plain.stderr
    );
    let mut zz = vec!["-ZZ"];
    zz.extend(strs(&alice));
    tls_tool("ldapwhoami", &s.ldap_url(), &cert, &zz, &[]).expect_code(0, "bind after StartTLS");
    // ldapi counts as protected.
    s.tool_via(Via::Ldapi, "ldapwhoami", &Bind::user("alice"), &[], None)
        .expect_code(0, "bind over ldapi");
    // Anonymous reads still work in clear.
    s.search(&Bind::Anonymous, &["-b", SUFFIX, "-s", "base", "1.1"])
        .expect_code(0, "anonymous search in clear");
    // Password Modify and writes of userPassword over TLS.
    let mut passwd = vec!["-ZZ"];
    passwd.extend(strs(&alice));
    passwd.extend(["-s", "alice-new"]);
    tls_tool("ldappasswd", &s.ldap_url(), &cert, &passwd, &[]).expect_code(0, "ldappasswd -ZZ");
    let root_zz = ["-ZZ", "-x", "-D", ROOT_DN, "-w", ROOT_PW, "-f"];
    let ldif = s.dir().join("pw.ldif");
    std::fs::write(
        &ldif,
        format!(
            "dn: {}\nchangetype: modify\nreplace: userPassword\nuserPassword: bob-new\n",
            user_dn("bob")
        ),
    )
    .unwrap();
    let mut args: Vec<&str> = root_zz.to_vec();
    let ldif_arg = ldif.to_string_lossy().into_owned();
    args.push(&ldif_arg);
    tls_tool("ldapmodify", &s.ldap_url(), &cert, &args, &[]).expect_code(0, "ldapmodify -ZZ");
    let bob = Bind::Simple(user_dn("bob"), "bob-new".into());
    s.tool_via(Via::Ldapi, "ldapwhoami", &bob, &[], None)
        .expect_code(0, "the new password binds");
}

#[test]
fn the_default_switch_allows_loopback() {
    if !canopy_target("require_protected_passwords") {
        return;
    }
    let s = Server::start_canopy_with_config("");
    s.whoami(Via::Ldap, &Bind::user("alice"))
        .expect_code(0, "loopback bind in clear under the default");
}

#[test]
fn certificate_reloads_on_sighup() {
    if !canopy_target("certificate reload") {
        return;
    }
    let dir = tempdir::TempDir::new("canopy-tls-certs");
    let (cert_a, key_a) = make_server_cert(dir.path(), "first");
    let (cert_b, key_b) = make_server_cert(dir.path(), "second");
    let live_cert = dir.path().join("server.crt");
    let live_key = dir.path().join("server.key");
    std::fs::copy(&cert_a, &live_cert).unwrap();
    std::fs::copy(&key_a, &live_key).unwrap();
    let toml = format!("[tls]\ncert_file = {live_cert:?}\nkey_file = {live_key:?}\n");
    let (s, ldaps) = start_with_ldaps(&toml);
    let port = ldaps.rsplit(':').next().unwrap().to_string();
    let served = |pem: &Path| {
        python(&s, "servercert.py", &[&port, &pem.to_string_lossy()])
            .stdout
            .trim()
            .to_string()
    };
    assert_eq!(served(&cert_a), "same", "the configured certificate");

    // A broken certificate file: the reload fails, the old certificate stays.
    std::fs::write(&live_cert, "not a certificate\n").unwrap();
    hangup(&s);
    wait_for_log(&s, "TLS reload failed");
    assert_eq!(served(&cert_a), "same", "kept after a failed reload");

    std::fs::copy(&cert_b, &live_cert).unwrap();
    std::fs::copy(&key_b, &live_key).unwrap();
    hangup(&s);
    let deadline = Instant::now() + Duration::from_secs(10);
    while served(&cert_b) != "same" {
        assert!(Instant::now() < deadline, "new certificate not served");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = tls_tool("ldapwhoami", &ldaps, &cert_b, &["-x"], &[]);
    out.expect_code(0, "ldapwhoami trusting the new certificate");

    // Without a signal: the changed modification times are noticed within a few seconds.
    std::fs::copy(&key_a, &live_key).unwrap();
    std::fs::copy(&cert_a, &live_cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while served(&cert_a) != "same" {
        assert!(
            Instant::now() < deadline,
            "changed files not picked up:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(s.alive(), "server died on SIGHUP");
    let log = s.log();
    assert!(
        !log.contains("PRIVATE KEY") && !log.contains("BEGIN"),
        "PEM text in the log:\n{log}"
    );
}

fn hangup(s: &Server) {
    let pid = s.pid().expect("server pid").to_string();
    let out = run(
        {
            let mut c = Command::new("kill");
            c.args(["-HUP", &pid]);
            c
        },
        None,
    );
    out.expect_code(0, "kill -HUP");
}

fn wait_for_log(s: &Server, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.log().contains(text) {
        assert!(
            Instant::now() < deadline,
            "log never said {text:?}:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A CA (`ca.crt`) and a client certificate it signed (`client.crt`, `client.key`, X.509 v3 for client
/// authentication) with the subject `cn=alice,ou=people,dc=example,dc=com`, made in `d` with openssl.
fn make_client_ca(d: &Path) {
    self_signed(d, "/CN=Test CA", &[], "ca.key", "ca.crt");
    openssl(
        d,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/DC=com/DC=example/OU=people/CN=alice",
            "-keyout",
            "client.key",
            "-out",
            "client.csr",
        ],
    );
    std::fs::write(
        d.join("client.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-extfile",
            "client.ext",
            "-in",
            "client.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "client.crt",
        ],
    );
}

#[test]
fn sasl_external_with_a_client_certificate() {
    if !canopy_target("client certificates") {
        return;
    }
    let dir = tempdir::TempDir::new("canopy-tls-ca");
    let d = dir.path();
    make_client_ca(d);
    // A certificate no trusted CA signed.
    let (rogue_cert, rogue_key) = make_server_cert(d, "rogue");
    let toml = format!(
        "[tls]\nca_file = {:?}\nverify_client = \"allow\"\n",
        d.join("ca.crt")
    );
    let (s, ldaps) = start_with_ldaps(&toml);
    let cert = generated_cert(&s);
    let client = [
        ("LDAPTLS_CERT", d.join("client.crt")),
        ("LDAPTLS_KEY", d.join("client.key")),
    ];
    let env: Vec<(&str, &Path)> = client.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let out = tls_tool("ldapwhoami", &ldaps, &cert, &["-Q", "-Y", "EXTERNAL"], &env);
    out.expect_code(0, "ldapwhoami -Y EXTERNAL with a client certificate");
    assert_eq!(out.stdout.trim(), "dn:cn=alice,ou=people,dc=example,dc=com");

    // The same over StartTLS.
    let out = tls_tool(
        "ldapwhoami",
        &s.ldap_url(),
        &cert,
        &["-ZZ", "-Q", "-Y", "EXTERNAL"],
        &env,
    );
    out.expect_code(0, "EXTERNAL after StartTLS");
    assert_eq!(out.stdout.trim(), "dn:cn=alice,ou=people,dc=example,dc=com");

    // An authzid naming someone else is refused.
    let mut args = vec!["-Q", "-Y", "EXTERNAL", "-X"];
    let other = format!("dn:{}", user_dn("bob"));
    args.push(&other);
    let out = tls_tool("ldapwhoami", &ldaps, &cert, &args, &env);
    assert_eq!(out.code, 50, "authzid of another DN: {out:?}");

    // No certificate, or one no trusted CA signed: TLS works, EXTERNAL does not.
    let out = tls_tool("ldapwhoami", &ldaps, &cert, &["-Q", "-Y", "EXTERNAL"], &[]);
    // (libsasl does not even offer EXTERNAL without a certificate; the untrusted one below reaches the server.)
    assert_ne!(out.code, 0, "EXTERNAL without a certificate: {out:?}");
    tls_tool("ldapwhoami", &ldaps, &cert, &["-x"], &[]).expect_code(0, "anonymous over ldaps");
    // A certificate no trusted CA signed (sent regardless of the CA hints): TLS goes on, EXTERNAL is
    // refused and the connection stays anonymous.
    let port = ldaps.rsplit(':').next().unwrap().to_string();
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let raw = |cert_file: &Path, key_file: &Path| {
        python(
            &s,
            "external_raw.py",
            &[&port, &path(&cert), &path(cert_file), &path(key_file)],
        )
        .stdout
    };
    assert_eq!(
        raw(&rogue_cert, &rogue_key),
        "bind: 7\nwhoami: 0 \n",
        "EXTERNAL with an untrusted certificate: no external identity, the mechanism is not available"
    );
    assert_eq!(
        raw(&d.join("client.crt"), &d.join("client.key")),
        "bind: 0\nwhoami: 0 dn:cn=alice,ou=people,dc=example,dc=com\n",
        "EXTERNAL on the wire with the trusted certificate"
    );
}

#[test]
fn verify_client_demand_requires_a_certificate() {
    if !canopy_target("client certificates") {
        return;
    }
    let dir = tempdir::TempDir::new("canopy-tls-demand");
    let d = dir.path();
    make_client_ca(d);
    let toml = format!(
        "[tls]\nca_file = {:?}\nverify_client = \"demand\"\n",
        d.join("ca.crt")
    );
    let (s, ldaps) = start_with_ldaps(&toml);
    let cert = generated_cert(&s);
    let out = tls_tool("ldapwhoami", &ldaps, &cert, &["-x"], &[]);
    assert_ne!(
        out.code, 0,
        "a handshake without a client certificate: {out:?}"
    );
    let (client_cert, client_key) = (d.join("client.crt"), d.join("client.key"));
    let env = [
        ("LDAPTLS_CERT", client_cert.as_path()),
        ("LDAPTLS_KEY", client_key.as_path()),
    ];
    let out = tls_tool("ldapwhoami", &ldaps, &cert, &["-Q", "-Y", "EXTERNAL"], &env);
    out.expect_code(0, "EXTERNAL with the demanded certificate");
    assert_eq!(out.stdout.trim(), "dn:cn=alice,ou=people,dc=example,dc=com");
    // Plain LDAP on the same server needs no certificate until StartTLS.
    s.whoami(Via::Ldap, &Bind::Anonymous)
        .expect_code(0, "plain LDAP beside a demanding ldaps://");
}

#[test]
fn garbage_instead_of_a_client_hello() {
    if !canopy_target("ldaps://") {
        return;
    }
    let (s, ldaps) = start_with_ldaps("[tls]\nhandshake_timeout = 1\n");
    let addr = ldaps.trim_start_matches("ldaps://").to_string();
    let cert = generated_cert(&s);

    // Garbage: the handshake fails and the server closes the connection.
    let mut garbage = TcpStream::connect(&addr).unwrap();
    garbage
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    garbage
        .write_all(b"\x30\x0c\x02\x01\x01\x60\x07garbage!")
        .unwrap();
    assert!(closed(&mut garbage), "garbage connection left open");

    // Silence: the handshake timeout closes it.
    let mut silent = TcpStream::connect(&addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    assert!(closed(&mut silent), "silent connection left open");
    assert!(started.elapsed() < Duration::from_secs(8));

    tls_tool("ldapwhoami", &ldaps, &cert, &strs(&alice_args()), &[])
        .expect_code(0, "others are still served");
    assert!(s.alive());
}

/// Reads until EOF or reset; false when the server kept the connection open past the read timeout.
fn closed(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn sasl_plain_after_starttls() {
    if !canopy_target("SASL PLAIN with the generated certificate") {
        return;
    }
    let s = Server::start_canopy_with_config("");
    let cert = generated_cert(&s);
    let out = python(&s, "tls_plain.py", &[&cert.to_string_lossy()]);
    assert_eq!(
        out.stdout,
        "plain before tls: INAPPROPRIATE_AUTH (48)\n\
         plain after tls: dn:uid=alice,ou=people,dc=example,dc=com\n",
        "PLAIN needs the TLS that StartTLS brings"
    );
}
