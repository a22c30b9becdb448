//! Replication test support (consumer side): a Debian slapd provider with syncprov from a generated
//! slapd.conf, a canopy consumer with `[[syncrepl]]`, contextCSN polling and full-content comparison
//! (every user attribute, entryUUID and entryCSN) of two servers.

use std::time::{Duration, Instant};

use crate::base::{ROOT_DN, ROOT_PW, SUFFIX};
use crate::server::{Server, Target};

/// The syncprov lines of a provider: checkpoint and session log as in the man page's example.
pub const SYNCPROV: &str = "overlay syncprov\nsyncprov-checkpoint 100 1\nsyncprov-sessionlog 100\n";

/// Starts Debian's slapd with the syncprov overlay (and `index entryCSN,entryUUID eq`, which the
/// harness's slapd.conf has) and loads base.ldif.
pub fn slapd_provider() -> Server {
    slapd_provider_with("")
}

/// [`slapd_provider`] with `overlays` lines (slapd.conf's `overlay NAME` and options) before syncprov.
pub fn slapd_provider_with(overlays: &str) -> Server {
    let mut server = Server::prepare(Target::Slapd);
    let dir = server.dir().to_path_buf();
    let conf = crate::slapd_conf::render_with_overlays(
        &dir,
        &dir.join("data"),
        &format!("{overlays}{SYNCPROV}"),
    );
    std::fs::write(dir.join("slapd.conf"), conf).unwrap();
    server.launch();
    server.load_base();
    server
}

/// The `[[syncrepl]]` table of a consumer of `provider` binding as its root DN, with `extra` keys.
pub fn syncrepl_table(provider: &Server, rid: u16, extra: &str) -> String {
    format!(
        "[[syncrepl]]\nrid = {rid}\nprovider = \"{}\"\nsearchbase = \"{SUFFIX}\"\nbindmethod = \"simple\"\nbinddn = \"{ROOT_DN}\"\ncredentials = \"{ROOT_PW}\"\nretry = \"1 +\"\ntimeout = 10\n{extra}\n",
        provider.ldap_url()
    )
}

/// Starts canopy with `toml` (top-level keys, then `[[syncrepl]]` tables) on an empty database; logs
/// at info level so the consumer's lines can be checked. Nothing is loaded: the consumer fills it.
pub fn canopy_consumer(toml: &str) -> Server {
    let mut server = Server::prepare(Target::Canopy);
    server.config = Some(toml.to_string());
    server.log_filter = Some("info".to_string());
    server.launch();
    server
}

/// Starts a server again on its own port (a provider its consumers know by URL), waiting until it
/// answers.
pub fn relaunch_same_port(server: &mut Server) {
    server.kill9();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match server.try_launch() {
            Ok(child) => {
                server.child = Some(child);
                return;
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Err(_) => panic!("could not start the server again on port {}", server.port()),
        }
    }
}

pub use crate::replication::context_csn;

/// Every entry of the suffix, every user attribute plus entryUUID and entryCSN, in canonical order.
pub fn contents(server: &Server) -> String {
    crate::replication::contents(server, &[])
}

/// Waits (at most `limit`) until the consumer's contextCSN equals the provider's and both hold the
/// same contents; the difference when they never do.
pub fn wait_converged(provider: &Server, consumer: &Server, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        let want = context_csn(provider);
        let have = context_csn(consumer);
        if !want.is_empty() && want == have {
            let (a, b) = (contents(provider), contents(consumer));
            if a == b {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(diff(&a, &b));
            }
        } else if Instant::now() > deadline {
            return Err(format!(
                "contextCSN never converged: provider {want:?}, consumer {have:?}\n{}",
                diff(&contents(provider), &contents(consumer))
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The lines only one side has.
fn diff(provider: &str, consumer: &str) -> String {
    let a: std::collections::BTreeSet<&str> = provider.lines().collect();
    let b: std::collections::BTreeSet<&str> = consumer.lines().collect();
    let only_a: Vec<&&str> = a.difference(&b).take(40).collect();
    let only_b: Vec<&&str> = b.difference(&a).take(40).collect();
    format!("only on the provider: {only_a:#?}\nonly on the consumer: {only_b:#?}")
}

/// Waits (at most `limit`) until the server's log contains `needle`.
pub fn wait_log(server: &Server, needle: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if server.log().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A fake provider on a free loopback port, for consumers facing a broken or hostile peer: it serves
/// `sessions` connections one after the other; on each it reads the bind, answers success (message
/// 1), reads the sync search and sends `answer` as it is, then waits (at most 5 s) for the consumer
/// to close. The thread returns how many sessions it served.
pub fn fake_provider(sessions: usize, answer: Vec<u8>) -> (u16, std::thread::JoinHandle<usize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let thread = std::thread::spawn(move || {
        let mut served = 0;
        for stream in listener.incoming().take(sessions) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            // BindResponse, success, for message 1.
            let _ = stream.write_all(&[
                0x30, 0x0c, 0x02, 0x01, 0x01, 0x61, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00,
            ]);
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(&answer);
            let _ = stream.read(&mut buf);
            served += 1;
        }
        served
    });
    (port, thread)
}

/// Runs openssl in `dir`; panics with its output when it fails.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let mut cmd = std::process::Command::new("openssl");
    cmd.current_dir(dir).args(args);
    crate::client::run(cmd, None).expect_code(0, &format!("openssl {}", args.join(" ")));
}

/// Makes in `dir` a CA (`ca.crt`), a server certificate for 127.0.0.1 it signed (`server.crt`,
/// `server.key`) and a client certificate it signed with the subject
/// `cn=replicator,dc=example,dc=com` (`client.crt`, `client.key`).
pub fn tls_material(dir: &std::path::Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=Replication Test CA",
    ];
    ca.extend_from_slice(&ec);
    ca.extend_from_slice(&["-keyout", "ca.key", "-out", "ca.crt"]);
    openssl(dir, &ca);
    for (name, subject, ext) in [
        (
            "server",
            "/CN=127.0.0.1",
            "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        ),
        (
            "client",
            "/DC=com/DC=example/CN=replicator",
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
        ),
    ] {
        let (key, csr, crt, extfile) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        let mut req = vec!["req", "-new", "-subj", subject];
        req.extend_from_slice(&ec);
        req.extend_from_slice(&["-keyout", &key, "-out", &csr]);
        openssl(dir, &req);
        std::fs::write(dir.join(&extfile), ext).unwrap();
        openssl(
            dir,
            &[
                "x509", "-req", "-extfile", &extfile, "-in", &csr, "-CA", "ca.crt", "-CAkey",
                "ca.key", "-CAcreateserial", "-days", "2", "-out", &crt,
            ],
        );
    }
}

/// [`slapd_provider`] with TLS (StartTLS on its ldap:// listener) from the files of [`tls_material`]
/// in `certs`, asking for client certificates (`TLSVerifyClient try`): SASL EXTERNAL binds as the
/// certificate's subject, `cn=replicator,dc=example,dc=com`, who may read userPassword.
pub fn slapd_provider_tls(certs: &std::path::Path) -> Server {
    let mut server = Server::prepare(Target::Slapd);
    let dir = server.dir().to_path_buf();
    // The replicator (the client certificate's subject) reads the passwords too, as a real
    // deployment's rules grant it.
    let rules = [
        "to attrs=userPassword by dn.exact=\"cn=replicator,dc=example,dc=com\" read by self write by anonymous auth by * none",
        "to * by * read",
    ];
    let conf = crate::slapd_conf::render_with_all(&dir, &dir.join("data"), &[], &rules, SYNCPROV);
    let tls = format!(
        "TLSCACertificateFile {0}/ca.crt\nTLSCertificateFile {0}/server.crt\nTLSCertificateKeyFile {0}/server.key\nTLSVerifyClient try\n",
        certs.display()
    );
    let at = conf.find("\ndatabase").map_or(0, |i| i + 1);
    let conf = format!("{}{tls}{}", &conf[..at], &conf[at..]);
    std::fs::write(dir.join("slapd.conf"), conf).unwrap();
    server.launch();
    server.load_base();
    server
}
