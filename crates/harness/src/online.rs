//! The online clients beside the server: the ldap-utils tools (ldapsearch, ldapmodify, ldapadd,
//! ldapwhoami, ...) run as real commands against a running server over ldap:// or ldapi://.

use crate::client::{run, Bind, Out, Via};
use crate::server::Server;
use std::process::Command;

/// Real clients (ldap-utils) against the server.
impl Server {
    pub fn url(&self, via: Via) -> String {
        match via {
            Via::Ldap => self.ldap_url(),
            Via::Ldapi => self.ldapi_url(),
        }
    }

    /// Runs an ldap-utils tool over ldap:// (ldapi:// for SASL EXTERNAL).
    pub fn tool(&self, tool: &str, bind: &Bind, args: &[&str], stdin: Option<&str>) -> Out {
        let via = if *bind == Bind::External {
            Via::Ldapi
        } else {
            Via::Ldap
        };
        self.tool_via(via, tool, bind, args, stdin)
    }

    pub fn tool_via(
        &self,
        via: Via,
        tool: &str,
        bind: &Bind,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Out {
        let mut cmd = Command::new(tool);
        cmd.arg("-H")
            .arg(self.url(via))
            .args(bind.args())
            .args(args);
        run(cmd, stdin)
    }

    /// `ldapsearch -LLL` without line wrapping.
    pub fn search(&self, bind: &Bind, args: &[&str]) -> Out {
        let mut all = vec!["-LLL", "-o", "ldif-wrap=no"];
        all.extend_from_slice(args);
        self.tool("ldapsearch", bind, &all, None)
    }

    /// `ldapsearch -LLL` of one entry (scope base), all user attributes unless `attrs` says.
    pub fn read(&self, bind: &Bind, dn: &str, attrs: &[&str]) -> Out {
        let mut args = vec!["-b", dn, "-s", "base", "(objectClass=*)"];
        args.extend_from_slice(attrs);
        self.search(bind, &args)
    }

    /// `ldapmodify` with LDIF on stdin.
    pub fn modify(&self, bind: &Bind, ldif: &str) -> Out {
        self.tool("ldapmodify", bind, &[], Some(ldif))
    }

    /// `ldapadd` with LDIF on stdin.
    pub fn add(&self, bind: &Bind, ldif: &str) -> Out {
        self.tool("ldapadd", bind, &[], Some(ldif))
    }

    /// `ldapwhoami` over the given listener.
    pub fn whoami(&self, via: Via, bind: &Bind) -> Out {
        self.tool_via(via, "ldapwhoami", bind, &[], None)
    }
}
