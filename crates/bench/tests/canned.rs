//! `canopy bench canned` (the storage-free limit server) driven through ldap-utils and a raw socket: every
//! search gets the fixed entry, the scan's filter gets `--scan-entries` of them, binds succeed, writes are
//! refused with unwillingToPerform, a malformed PDU closes the connection with a notice, and a
//! non-loopback address is refused at start.
//!
//! Needs the canopy binary: `cargo build -p canopy` into the same target directory, or set CANOPY_BIN.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn canopy_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("CANOPY_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("canopy");
    assert!(
        bin.exists(),
        "canopy binary not found at {}: run `cargo build -p canopy` with the same CARGO_TARGET_DIR, or set CANOPY_BIN",
        bin.display()
    );
    bin
}

struct Canned {
    child: Child,
    port: u16,
}

impl Drop for Canned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(scan_entries: usize) -> Canned {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(canopy_bin())
        .args(["bench", "canned", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--scan-entries")
        .arg(scan_entries.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "canned server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    Canned { child, port }
}

fn ldap(tool: &str, port: u16, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(tool);
    cmd.args(["-x", "-H", &format!("ldap://127.0.0.1:{port}")])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{tool} (ldap-utils) is needed: {e}"));
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn dns(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("dn: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn searches_binds_writes_and_bad_input() {
    let server = start(7);
    let port = server.port;

    let one = ldap(
        "ldapsearch",
        port,
        &["-LLL", "-b", "dc=example,dc=com", "(uid=user0000042)"],
        None,
    );
    assert!(one.status.success(), "{one:?}");
    assert_eq!(
        dns(&one),
        ["dn: uid=user0000000,ou=Accounting,dc=example,dc=com"]
    );
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(text.contains("mail: user0000000@example.com"), "{text}");
    assert!(!text.contains("userPassword"), "{text}");

    let scan = ldap(
        "ldapsearch",
        port,
        &[
            "-LLL",
            "-D",
            "cn=admin,dc=example,dc=com",
            "-w",
            "secret",
            "-b",
            "dc=example,dc=com",
            "(objectClass=*)",
            "dn",
        ],
        None,
    );
    assert!(scan.status.success(), "{scan:?}");
    assert_eq!(dns(&scan).len(), 7);

    let delete = ldap(
        "ldapmodify",
        port,
        &[],
        Some("dn: cn=x,dc=example,dc=com\nchangetype: delete\n"),
    );
    assert_eq!(delete.status.code(), Some(53), "{delete:?}");
    assert!(String::from_utf8_lossy(&delete.stderr).contains("answers only bind and search"));

    // Not a SEQUENCE: a notice of disconnection (message ID 0), then the connection closes.
    let mut raw = TcpStream::connect(("127.0.0.1", port)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(&[0x04, 0x02, 0x41, 0x42]).unwrap();
    let mut got = Vec::new();
    raw.read_to_end(&mut got).unwrap();
    assert_eq!(got.first(), Some(&0x30), "{got:?}");
    assert!(got.windows(2).any(|w| w == [0x02, 0x01]), "{got:?}");
    assert!(
        got.windows(b"1.3.6.1.4.1.1466.20036".len())
            .any(|w| w == b"1.3.6.1.4.1.1466.20036"),
        "{got:?}"
    );

    // A request larger than the connection's small read array (its bytes move to a heap buffer),
    // then a small one on the same connection.
    let long_value = "x".repeat(3000);
    let filter = format!("(|(uid=user0000042)(description={long_value}))");
    let big = ldap(
        "ldapsearch",
        port,
        &["-LLL", "-b", "dc=example,dc=com", &filter, "dn"],
        None,
    );
    assert!(big.status.success(), "{big:?}");
    assert_eq!(dns(&big).len(), 1, "{big:?}");

    // The server is still answering others.
    let again = ldap("ldapsearch", port, &["-LLL", "-b", "", "-s", "base"], None);
    assert!(again.status.success(), "{again:?}");
}

#[test]
fn refuses_a_non_loopback_address() {
    let out = Command::new(canopy_bin())
        .args(["bench", "canned", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("loopback address only"),
        "{out:?}"
    );
}
