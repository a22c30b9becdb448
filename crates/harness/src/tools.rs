//! The offline tools beside the server: import (`canopy import` / `slapadd`), modify (`canopy modify`
//! / `slapmodify`) and export (`canopy export` / `slapcat`), run as real commands on the server's data
//! directory.

use crate::base::ROOT_PW;
use crate::client::{run, Out};
use crate::server::{canopy_command, Server, Target};
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

    /// Applies the change records of `ldif` to the database while the server is stopped (`canopy
    /// modify` / `slapmodify`).
    pub fn modify_offline(&self, ldif: &Path) -> Out {
        assert!(
            !self.is_running(),
            "modify is an offline tool: stop the server first"
        );
        let mut cmd = self.offline_tool_with_config("modify", "slapmodify");
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

    /// `import` into the database whose suffix is `suffix` (`-b SUFFIX` for both tools; canopy also
    /// reads its configuration file, which names the databases).
    pub fn import_to(&self, suffix: &str, ldif: &Path) -> Out {
        assert!(
            !self.is_running(),
            "import is an offline tool: stop the server first"
        );
        let mut cmd = self.offline_tool_with_config("import", "slapadd");
        cmd.arg("-b").arg(suffix);
        match self.target {
            Target::Slapd => cmd.arg("-l").arg(ldif),
            Target::Canopy => cmd.arg(ldif),
        };
        run(cmd, None)
    }

    /// [`Server::import_to`] with slapadd's `-S sid`, the server ID of the entryCSNs it makes (canopy's
    /// import takes `server_id` from its configuration): in a multi-provider group slapd replicates
    /// no delete of an entry whose entryCSN has server ID 0, which no peer writes with.
    pub fn import_to_as(&self, suffix: &str, ldif: &Path, sid: u16) -> Out {
        if self.target == Target::Canopy {
            return self.import_to(suffix, ldif);
        }
        let mut cmd = self.offline_tool_with_config("import", "slapadd");
        cmd.arg("-b")
            .arg(suffix)
            .arg("-S")
            .arg(sid.to_string())
            .arg("-l")
            .arg(ldif);
        run(cmd, None)
    }

    /// `export` of the database whose suffix is `suffix` (`-b SUFFIX` for both tools).
    pub fn export_of(&self, suffix: &str) -> Out {
        let mut cmd = self.offline_tool_with_config("export", "slapcat");
        cmd.arg("-b").arg(suffix);
        run(cmd, None)
    }

    /// A canopy offline tool `command` with the server's configuration file and `args` (canopy only).
    pub fn canopy_tool(&self, command: &str, args: &[&str]) -> Out {
        assert_eq!(self.target, Target::Canopy, "a canopy tool");
        let mut cmd = self.offline_tool_with_config(command, "");
        cmd.args(args);
        run(cmd, None)
    }

    pub(crate) fn offline_tool_with_config(&self, canopy_cmd: &str, slap_tool: &str) -> Command {
        let mut cmd = self.offline_tool(canopy_cmd, slap_tool);
        if self.target == Target::Canopy {
            if let Some(path) = self.write_config() {
                cmd.arg("--config").arg(path);
            }
        }
        cmd
    }

    fn offline_tool(&self, canopy_cmd: &str, slap_tool: &str) -> Command {
        match self.target {
            Target::Slapd => {
                let mut cmd = Command::new(format!("/usr/sbin/{slap_tool}"));
                cmd.args(self.slapd_config_args());
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
