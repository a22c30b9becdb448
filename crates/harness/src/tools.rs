//! The offline tools beside the server: import (`canopy import` / `slapadd`) and export
//! (`canopy export` / `slapcat`), run as real commands on the server's data directory.

use crate::client::{run, Out};
use crate::server::{canopy_command, Server, Target, ROOT_PW};
use std::path::Path;
use std::process::Command;

impl Server {
    /// Loads `ldif` into the database while the server is stopped.
    pub fn import(&self, ldif: &Path) -> Out {
        assert!(
            !self.is_running(),
            "import is an offline tool: stop the server first"
        );
        let mut cmd = self.offline_tool("import", "slapadd");
        match self.target {
            Target::Slapd => cmd.arg("-l").arg(ldif),
            Target::Canopy => cmd.arg(ldif),
        };
        run(cmd, None)
    }

    /// Writes the whole database as LDIF to stdout; allowed while the server runs (LMDB readers
    /// never block the writer).
    pub fn export(&self) -> Out {
        run(self.offline_tool("export", "slapcat"), None)
    }

    fn offline_tool(&self, canopy_cmd: &str, slap_tool: &str) -> Command {
        match self.target {
            Target::Slapd => {
                let mut cmd = Command::new(format!("/usr/sbin/{slap_tool}"));
                cmd.arg("-f").arg(self.dir().join("slapd.conf"));
                cmd
            }
            Target::Canopy => {
                let mut cmd = canopy_command();
                cmd.arg(canopy_cmd)
                    .arg("--data")
                    .arg(self.data_dir())
                    .env("CANOPY_ROOTPW", ROOT_PW);
                cmd
            }
        }
    }
}
