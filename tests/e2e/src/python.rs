//! Runs the python-ldap scripts of tests/e2e/py against a server, with the server's addresses and
//! the root credentials in their environment.

use crate::{Out, Server, ROOT_DN, ROOT_PW, SUFFIX};
use canopy_harness::client::{install_hint, run};
use std::process::{Command, Stdio};

/// The interpreter that has python3-ldap on Debian; the PATH one may be another Python.
pub const PYTHON: &str = "/usr/bin/python3";

/// python-ldap scripts run against a [`Server`].
pub trait Python {
    /// Runs tests/e2e/py/`script` with python-ldap; the script finds the server in its environment.
    fn python(&self, script: &str, args: &[&str]) -> Out;

    /// Runs tests/e2e/py/`script`, which must succeed, and compares its output with
    /// expected/`expected`.ldif.
    fn check_python(&self, script: &str, expected: &str);

    /// Spawns a python-ldap script with piped stdout, for tests that react while it runs.
    fn python_spawn(&self, script: &str, args: &[&str]) -> std::process::Child;

    /// The command that runs tests/e2e/py/`script`, with the server in its environment:
    /// LDAP_URL, LDAPI_URL, ROOT_DN, ROOT_PW, SUFFIX and, while it runs, SERVER_PID.
    fn python_command(&self, script: &str, args: &[&str]) -> Command;
}

impl Python for Server {
    fn python(&self, script: &str, args: &[&str]) -> Out {
        run(self.python_command(script, args), None)
    }

    fn check_python(&self, script: &str, expected: &str) {
        let out = self.python(script, &[]);
        assert_eq!(
            out.code, 0,
            "{script} failed:\n{}\n{}",
            out.stdout, out.stderr
        );
        let mut t = crate::Transcript::new(expected);
        t.raw(script, &out);
        t.check();
    }

    fn python_spawn(&self, script: &str, args: &[&str]) -> std::process::Child {
        let mut cmd = self.python_command(script, args);
        cmd.env("LDAPNOINIT", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn()
            .unwrap_or_else(|e| panic!("cannot run {PYTHON}: {e}; {}", install_hint()))
    }

    fn python_command(&self, script: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(PYTHON);
        cmd.arg(crate::py_dir().join(script))
            .args(args)
            .env("LDAP_URL", self.ldap_url())
            .env("LDAPI_URL", self.ldapi_url())
            .env("ROOT_DN", ROOT_DN)
            .env("ROOT_PW", ROOT_PW)
            .env("SUFFIX", SUFFIX)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        if let Some(pid) = self.pid() {
            cmd.env("SERVER_PID", pid.to_string());
        }
        cmd
    }
}
