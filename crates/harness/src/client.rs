//! Real clients (ldap-utils, or any command such as a python-ldap script): how they bind, which
//! listener they talk to, and running one with a timeout for its exit code and output. The
//! [`Server`](crate::Server) methods that run them against a server are in `server.rs`.

use crate::base::{ROOT_DN, ROOT_PW, SUFFIX};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A client gets this long before it is killed and the test fails.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

/// What a client did: its exit code (ldap-utils exit with the LDAP result code) and its output.
#[derive(Debug, Clone)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Normalized LDIF of stdout.
    pub fn ldif(&self) -> String {
        crate::ldif::normalize(&self.stdout)
    }

    /// Parsed stdout.
    pub fn records(&self) -> Vec<crate::ldif::Record> {
        crate::ldif::parse(&self.stdout)
    }

    /// Panics with the full output unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32, what: &str) -> &Out {
        assert_eq!(
            self.code, code,
            "{what}: expected exit code {code}, got {}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// Who the client binds as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    Anonymous,
    Root,
    /// Simple bind with this DN and password.
    Simple(String, String),
    /// SASL EXTERNAL; only meaningful over ldapi://.
    External,
}

impl Bind {
    /// A base.ldif user by uid, with its password `<uid>-pw`.
    pub fn user(uid: &str) -> Bind {
        Bind::Simple(user_dn(uid), format!("{uid}-pw"))
    }

    /// The ldap-utils options that bind this way.
    pub(crate) fn args(&self) -> Vec<String> {
        match self {
            Bind::Anonymous => vec!["-x".into()],
            Bind::Root => vec![
                "-x".into(),
                "-D".into(),
                ROOT_DN.into(),
                "-w".into(),
                ROOT_PW.into(),
            ],
            Bind::Simple(dn, pw) => vec![
                "-x".into(),
                "-D".into(),
                dn.clone(),
                "-w".into(),
                pw.clone(),
            ],
            Bind::External => vec!["-Q".into(), "-Y".into(), "EXTERNAL".into()],
        }
    }
}

/// The DN of a base.ldif user.
pub fn user_dn(uid: &str) -> String {
    format!("uid={uid},ou=people,{SUFFIX}")
}

/// Which listener a client talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Ldap,
    Ldapi,
}

/// Where the clients come from, for messages about one that cannot be run.
pub fn install_hint() -> &'static str {
    "install the clients with `apt-get install ldap-utils python3-ldap libsasl2-modules` \
     (scripts/test.sh does it)"
}

/// Runs a command to completion (or the timeout), feeding `stdin`, collecting both outputs.
pub fn run(mut cmd: Command, stdin: Option<&str>) -> Out {
    // Ignore /etc/ldap/ldap.conf and ~/.ldaprc: the tests say everything on the command line. LDAPNOINIT
    // would also ignore the LDAPTLS_* variables that TLS tests set, so those name no files instead.
    let tls_env = cmd
        .get_envs()
        .any(|(k, _)| k.to_string_lossy().starts_with("LDAPTLS_"));
    if tls_env {
        cmd.env("LDAPCONF", "/dev/null")
            .env("LDAPRC", "canopy-e2e-no-ldaprc");
    } else {
        cmd.env("LDAPNOINIT", "1");
    }
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let program = PathBuf::from(cmd.get_program());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {}", program.display(), install_hint()));
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out_pipe.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err_pipe.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned();
    let mut stderr = String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned();
    let code = match status {
        Some(s) => s.code().unwrap_or(-1),
        None => {
            stderr.push_str(&format!("\n[killed after {CLIENT_TIMEOUT:?}]"));
            -1
        }
    };
    Out {
        code,
        stdout,
        stderr,
    }
}
