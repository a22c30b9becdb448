//! Starts the server under test (canopy or Debian's slapd) in a scratch directory on a free
//! loopback port plus an ldapi socket, waits until it answers, and kills it on drop.

use crate::base::{CONFIG_ROOT_DN, CONFIG_ROOT_PW, ROOT_PW, SUFFIX};
use crate::client::{run, Bind, Out, Via};
use crate::tempdir::TempDir;
use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SLAPD: &str = "/usr/sbin/slapd";

/// How long a server may take to answer after being started.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Which server the suite drives, from `CANOPY_E2E_TARGET` (default canopy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Canopy,
    Slapd,
}

impl Target {
    pub fn from_env() -> Target {
        match std::env::var("CANOPY_E2E_TARGET").as_deref() {
            Err(_) | Ok("") | Ok("canopy") => Target::Canopy,
            Ok("slapd") => Target::Slapd,
            Ok(other) => panic!("CANOPY_E2E_TARGET={other:?}: expected `canopy` or `slapd`"),
        }
    }
}

/// The canopy binary: `$CANOPY_BIN`, else `canopy` next to the target dir this test was built in.
pub fn canopy_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("CANOPY_BIN") {
        return PathBuf::from(p);
    }
    // The test executable lives in <target>/debug/deps/; the binary in <target>/debug/.
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("canopy")))
        .unwrap_or_else(|| PathBuf::from("target/debug/canopy"))
}

/// A command running the canopy binary; panics with directions when it has not been built.
pub fn canopy_command() -> Command {
    let bin = canopy_bin();
    if !bin.exists() {
        panic!(
            "canopy binary not found at {}.\nBuild it first (`cargo build -p canopy`) or set \
             CANOPY_BIN; scripts/test.sh does both. To run this suite against Debian's slapd \
             instead, set CANOPY_E2E_TARGET=slapd.",
            bin.display()
        );
    }
    Command::new(bin)
}

/// A running server. Dropping it kills the process (SIGKILL) and removes its directory.
#[derive(Debug)]
pub struct Server {
    pub target: Target,
    dir: TempDir,
    pub(crate) port: u16,
    pub(crate) child: Option<Child>,
    /// Extra TOML for canopy (`--config DIR/canopy.toml`); ignored for slapd.
    pub(crate) config: Option<String>,
    /// Listener URLs canopy gets besides ldap:// and ldapi:// (e.g. `ldaps://`).
    extra_listen: Vec<String>,
    /// `CANOPY_LOG` for canopy (a tracing filter such as `trace`); the binary's default when None.
    pub(crate) log_filter: Option<String>,
    /// slapd's configuration directory (`-F`), in place of DIR/slapd.conf (`-f`), for slapd and its tools.
    slapd_d: Option<PathBuf>,
    /// slapd's `-d` level (such as `sync`, to see its replication in the log); `none` when None.
    pub(crate) slapd_debug: Option<String>,
    /// Environment variables of the server process (such as KRB5_CONFIG).
    env: Vec<(String, String)>,
}

pub(crate) enum StartError {
    /// The TCP port was taken between probing and binding: try another.
    PortInUse,
}

impl Server {
    /// Starts the target chosen by the environment and loads crates/harness/data/base.ldif.
    pub fn start() -> Server {
        let s = Server::start_empty();
        s.load_base();
        s
    }

    /// Starts the target chosen by the environment with an empty database.
    pub fn start_empty() -> Server {
        Server::start_target(Target::from_env())
    }

    pub fn start_target(target: Target) -> Server {
        let mut server = Server::prepare(target);
        server.launch();
        server
    }

    /// Starts canopy with `toml` written to DIR/canopy.toml and passed as `--config` (the command
    /// line still sets the data directory and listeners), then loads base.ldif.
    pub fn start_canopy_with_config(toml: &str) -> Server {
        let mut server = Server::prepare(Target::Canopy);
        server.config = Some(toml.to_string());
        server.launch();
        server.load_base();
        server
    }

    /// Like [`Server::start_canopy_with_config`], logging with the tracing filter `log` (`CANOPY_LOG`).
    pub fn start_canopy_logging(toml: &str, log: &str) -> Server {
        let mut server = Server::prepare(Target::Canopy);
        server.config = Some(toml.to_string());
        server.log_filter = Some(log.to_string());
        server.launch();
        server.load_base();
        server
    }

    /// Like [`Server::start_canopy_with_config`], with more listener URLs (such as `ldaps://`) besides
    /// the usual ldap:// and ldapi://. The base is loaded over ldapi://, which every password setting allows.
    pub fn start_canopy_with_listeners(toml: &str, extra: &[String]) -> Server {
        let mut server = Server::prepare(Target::Canopy);
        server.config = Some(toml.to_string());
        server.extra_listen = extra.to_vec();
        server.launch();
        server.load_base_via(Via::Ldapi);
        server
    }

    /// Starts the target chosen by the environment with `files` loaded after the standard schema
    /// (canopy: `schema_files` in a configuration file; slapd: `include` lines), then loads
    /// base.ldif.
    pub fn start_with_schema(files: &[PathBuf]) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let conf = crate::slapd_conf::render_with_schema(dir, &dir.join("data"), files);
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => {
                let list: Vec<String> = files.iter().map(|f| format!("{f:?}")).collect();
                server.config = Some(format!("schema_files = [{}]\n", list.join(", ")));
            }
        }
        server.launch();
        server.load_base();
        server
    }

    /// Starts the target chosen by the environment with `env` in the server's environment (such as
    /// KRB5_CONFIG), `slapd_globals` (slapd.conf lines put before its first database) for slapd and
    /// `canopy` (TOML) for canopy, `rules` as the main database's access list (empty: Debian's), then
    /// loads base.ldif as the root DN.
    pub fn start_with_env(
        env: &[(&str, &str)],
        slapd_globals: &str,
        rules: &[&str],
        canopy: &str,
    ) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        server.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let path = dir.join("slapd.conf");
                let rules: Vec<&str> = if rules.is_empty() {
                    crate::slapd_conf::DEBIAN_ACCESS.to_vec()
                } else {
                    rules.to_vec()
                };
                let conf =
                    crate::slapd_conf::render_with_all(dir, &dir.join("data"), &[], &rules, "");
                let at = conf.find("\ndatabase ").map_or(conf.len(), |i| i + 1);
                let conf = format!("{}{slapd_globals}\n{}", &conf[..at], &conf[at..]);
                std::fs::write(&path, conf).unwrap();
            }
            Target::Canopy if rules.is_empty() => server.config = Some(canopy.to_string()),
            Target::Canopy => {
                let list: Vec<String> = rules.iter().map(|r| format!("'''{r}'''")).collect();
                server.config = Some(format!("access = [\n{}\n]\n{canopy}", list.join(",\n")));
            }
        }
        server.launch();
        server.load_base();
        server
    }

    /// Starts the target chosen by the environment with overlays on the main database (slapd:
    /// `slapd` holds the `overlay NAME` lines and their options, whose modules are loaded; canopy:
    /// `canopy` holds the `[[overlay]]` tables), then loads base.ldif as the root DN.
    pub fn start_with_overlays(slapd: &str, canopy: &str) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let conf = crate::slapd_conf::render_with_overlays(dir, &dir.join("data"), slapd);
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => server.config = Some(canopy.to_string()),
        }
        server.launch();
        server.load_base();
        server
    }

    /// [`Server::start_with_overlays`] with more: slapd also includes the schema files `schema` and
    /// uses `rules` as the main database's access list (empty: Debian's); canopy gets `canopy` with
    /// `rules` as its `access` key. Loads base.ldif as the root DN.
    pub fn start_with_overlays_schema_access(
        slapd: &str,
        schema: &[PathBuf],
        rules: &[&str],
        canopy: &str,
    ) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        let rules: Vec<&str> = if rules.is_empty() {
            crate::slapd_conf::DEBIAN_ACCESS.to_vec()
        } else {
            rules.to_vec()
        };
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let conf = crate::slapd_conf::render_with_all(
                    dir,
                    &dir.join("data"),
                    schema,
                    &rules,
                    slapd,
                );
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => {
                let list: Vec<String> = rules.iter().map(|r| format!("'''{r}'''")).collect();
                server.config = Some(format!("access = [\n{}\n]\n{canopy}", list.join(",\n")));
            }
        }
        server.launch();
        server.load_base();
        server
    }

    /// Starts the target chosen by the environment with global settings (slapd: `slapd` lines in
    /// slapd.conf's global section; canopy: the TOML `canopy`) and `rules` as the main database's
    /// access list (empty: Debian's), then loads base.ldif as the root DN.
    pub fn start_with_globals(slapd: &str, rules: &[&str], canopy: &str) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let conf =
                    crate::slapd_conf::render_with_globals(dir, &dir.join("data"), slapd, rules);
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => {
                let list: Vec<String> = rules.iter().map(|r| format!("'''{r}'''")).collect();
                server.config = Some(match list.is_empty() {
                    true => canopy.to_string(),
                    false => format!("access = [\n{}\n]\n{canopy}", list.join(",\n")),
                });
            }
        }
        server.launch();
        server.load_base();
        server
    }

    /// Starts the target chosen by the environment with `rules` as the main database's access list
    /// (canopy: the `access` key; slapd: `access` lines in place of Debian's), then loads base.ldif
    /// as the root DN. `{ldapi}` in a rule stands for the server's ldapi socket path.
    pub fn start_with_access(rules: &[&str]) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        let socket = server.ldapi_path().display().to_string();
        let rules: Vec<String> = rules
            .iter()
            .map(|r| r.replace("{ldapi}", &socket))
            .collect();
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let texts: Vec<&str> = rules.iter().map(String::as_str).collect();
                let conf = crate::slapd_conf::render_with_access(dir, &dir.join("data"), &texts);
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => {
                let list: Vec<String> = rules.iter().map(|r| format!("'''{r}'''")).collect();
                server.config = Some(format!("access = [\n{}\n]\n", list.join(",\n")));
            }
        }
        server.launch();
        server.load_base();
        server
    }

    /// Starts the target chosen by the environment with `extra` databases besides the main one
    /// (slapd: `database mdb` sections; canopy: `[[database]]` tables; see
    /// [`crate::slapd_conf::ExtraDatabase`]), creates their directories, then loads base.ldif.
    pub fn start_with_databases(extra: &[crate::slapd_conf::ExtraDatabase]) -> Server {
        let mut server = Server::prepare_with_databases(extra);
        server.launch();
        server.load_base();
        server
    }

    /// The databases of [`Server::start_with_databases`], empty, loaded offline from `ldif` into the
    /// main database (`canopy import -b` / `slapadd -b` of the suffix, which also fill the databases
    /// glued below it), then started.
    pub fn start_with_databases_imported(
        extra: &[crate::slapd_conf::ExtraDatabase],
        ldif: &Path,
    ) -> Server {
        let mut server = Server::prepare_with_databases(extra);
        server
            .import_to(SUFFIX, ldif)
            .expect_code(0, "offline load of the main database");
        server.launch();
        server
    }

    fn prepare_with_databases(extra: &[crate::slapd_conf::ExtraDatabase]) -> Server {
        let target = Target::from_env();
        let mut server = Server::prepare(target);
        let data = server.data_dir();
        for number in 2..extra.len() + 2 {
            std::fs::create_dir_all(crate::slapd_conf::ExtraDatabase::directory(&data, number))
                .unwrap();
        }
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let conf = crate::slapd_conf::render_with_databases(dir, &data, extra);
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => {
                let tables: String = extra.iter().map(|db| db.canopy_table()).collect();
                server.config = Some(tables);
            }
        }
        server
    }

    /// Starts `target` from a whole configuration the test wrote: slapd.conf text for slapd, canopy.toml
    /// text for canopy (the command line still sets the data directory, listeners and CANOPY_ROOTPW),
    /// with `@DIR@` replaced by the server's scratch directory. `dirs` (relative to that directory) are
    /// created first, and each `(suffix, ldif)` is loaded offline (`slapadd -b` / `canopy import -b`)
    /// before the start; a failed load panics with the tool's output.
    pub fn start_configured(
        target: Target,
        config: &str,
        dirs: &[&str],
        loads: &[(&str, &Path)],
    ) -> Server {
        let mut server = Server::prepare(target);
        let text = config.replace("@DIR@", &server.dir.path().display().to_string());
        for dir in dirs {
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .recursive(true)
                .create(server.dir.path().join(dir))
                .unwrap();
        }
        match target {
            Target::Slapd => std::fs::write(server.dir.path().join("slapd.conf"), text).unwrap(),
            Target::Canopy => server.config = Some(text),
        }
        for (suffix, ldif) in loads {
            server
                .import_to(suffix, ldif)
                .expect_code(0, &format!("offline load of {suffix}"));
        }
        server.launch();
        server
    }

    /// Starts slapd from a cn=config tree made the way Debian's postinst makes one: `init_ldif` (with
    /// `@DIR@` replaced by the scratch directory) loaded by `slapadd -F DIR/slapd.d -b cn=config`, then
    /// `dirs` created and each `(suffix, ldif)` loaded offline before the start, as in
    /// [`Server::start_configured`].
    pub fn start_slapd_d(init_ldif: &str, dirs: &[&str], loads: &[(&str, &Path)]) -> Server {
        let mut server = Server::prepare(Target::Slapd);
        let dir = server.dir.path().to_path_buf();
        let tree = dir.join("slapd.d");
        std::fs::create_dir_all(&tree).unwrap();
        for sub in dirs {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let init = dir.join("init.ldif");
        std::fs::write(
            &init,
            init_ldif.replace("@DIR@", &dir.display().to_string()),
        )
        .unwrap();
        let mut cmd = Command::new("/usr/sbin/slapadd");
        cmd.arg("-F")
            .arg(&tree)
            .arg("-b")
            .arg("cn=config")
            .arg("-l")
            .arg(&init);
        run(cmd, None).expect_code(0, "slapadd of the cn=config tree");
        server.slapd_d = Some(tree);
        for (suffix, ldif) in loads {
            server
                .import_to(suffix, ldif)
                .expect_code(0, &format!("offline load of {suffix}"));
        }
        server.launch();
        server
    }

    /// Starts the target chosen by the environment with a live configuration tree whose root DN is
    /// [`CONFIG_ROOT_DN`] (root over ldapi manages it too), then loads base.ldif. slapd runs from a
    /// slapd.d (`-F`) that `slaptest` converts from the usual generated slapd.conf with a `database
    /// config` section; canopy gets `config_root_dn` and `config_root_password`.
    pub fn start_with_config_tree() -> Server {
        let mut server = Server::prepare(Target::from_env());
        match server.target {
            Target::Slapd => {
                let dir = server.dir.path().to_path_buf();
                let conf = crate::slapd_conf::render(&dir, &server.data_dir());
                let config_db = format!(
                    "database config\nrootdn \"{CONFIG_ROOT_DN}\"\nrootpw {CONFIG_ROOT_PW}\n\
                     access to * by dn.exact=\"gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth\" \
                     manage by * none\n\ndatabase mdb\n"
                );
                let conf = conf.replacen("database mdb\n", &config_db, 1);
                let source = dir.join("slapd-config.conf");
                std::fs::write(&source, conf).unwrap();
                let tree = dir.join("slapd.d");
                std::fs::create_dir_all(&tree).unwrap();
                // slaptest opens every database: an empty load creates the main one first.
                let mut cmd = Command::new("/usr/sbin/slapadd");
                cmd.arg("-f")
                    .arg(&source)
                    .arg("-b")
                    .arg(SUFFIX)
                    .arg("-l")
                    .arg("/dev/null");
                run(cmd, None).expect_code(0, "slapadd of nothing");
                let mut cmd = Command::new("/usr/sbin/slaptest");
                cmd.arg("-f").arg(&source).arg("-F").arg(&tree);
                run(cmd, None).expect_code(0, "slaptest -F (slapd.conf to slapd.d)");
                server.slapd_d = Some(tree);
            }
            Target::Canopy => {
                // The built-in schema files slapd's configuration includes, listed as slapd
                // lists them under cn=schema,cn=config.
                server.config = Some(format!(
                    "config_root_dn = \"{CONFIG_ROOT_DN}\"\nconfig_root_password = \"{CONFIG_ROOT_PW}\"\n\
                     builtin_schema = [\"core\", \"cosine\", \"inetorgperson\", \"nis\"]\n"
                ));
            }
        }
        server.launch();
        server.load_base();
        server
    }

    /// slapd's configuration: `-F DIR` for a cn=config tree, else `-f DIR/slapd.conf`.
    pub(crate) fn slapd_config_args(&self) -> Vec<std::ffi::OsString> {
        match &self.slapd_d {
            Some(tree) => vec!["-F".into(), tree.clone().into_os_string()],
            None => vec![
                "-f".into(),
                self.dir.path().join("slapd.conf").into_os_string(),
            ],
        }
    }

    /// Imports `ldif` offline (`canopy import`, or `slapadd` for slapd) into a fresh database of
    /// the target chosen by the environment, then starts the server on it.
    pub fn start_imported(ldif: &Path) -> Server {
        let mut server = Server::prepare(Target::from_env());
        server.import(ldif).expect_code(0, "offline import");
        server.launch();
        server
    }

    /// Imports `ldif` offline into a fresh database of `target`, then starts the server on it.
    /// A failed import is returned (with the tool's output) instead of panicking, so callers
    /// can tell a setup failure from a test failure; starting may still panic.
    pub fn start_imported_target(target: Target, ldif: &Path) -> Result<Server, Out> {
        let mut server = Server::prepare(target);
        let out = server.import(ldif);
        if out.code != 0 {
            return Err(out);
        }
        server.launch();
        Ok(server)
    }

    /// [`Server::start_imported_target`] without an fsync per commit (slapd's `dbnosync`, canopy's
    /// `durable = false`): for runs that compare answers and never crash the server on purpose.
    /// `overlays`: the main database's overlays, as [`Server::start_with_overlays`] takes them.
    pub fn start_imported_target_nosync(
        target: Target,
        ldif: &Path,
        overlays: (&str, &str),
    ) -> Result<Server, Out> {
        let mut server = Server::prepare(target);
        match target {
            Target::Slapd => {
                let dir = server.dir.path();
                let lines = format!("dbnosync\n{}", overlays.0);
                let conf = crate::slapd_conf::render_with_overlays(dir, &dir.join("data"), &lines);
                std::fs::write(dir.join("slapd.conf"), conf).unwrap();
            }
            Target::Canopy => server.config = Some(format!("durable = false\n{}", overlays.1)),
        }
        let out = server.import(ldif);
        if out.code != 0 {
            return Err(out);
        }
        server.launch();
        Ok(server)
    }

    /// A scratch directory with configuration and an empty data directory; nothing running.
    pub(crate) fn prepare(target: Target) -> Server {
        let dir = TempDir::new(match target {
            Target::Canopy => "canopy",
            Target::Slapd => "slapd",
        });
        let data = dir.path().join("data");
        // Private, as a data directory should be (canopy warns about one open to others).
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&data)
            .unwrap();
        if target == Target::Slapd {
            let conf = crate::slapd_conf::render(dir.path(), &data);
            std::fs::write(dir.path().join("slapd.conf"), conf).unwrap();
        }
        Server {
            target,
            dir,
            port: 0,
            child: None,
            config: None,
            extra_listen: Vec::new(),
            log_filter: None,
            slapd_d: None,
            slapd_debug: None,
            env: Vec::new(),
        }
    }

    /// The scratch directory (config, logs, ldapi socket, database under `data/`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn ldap_url(&self) -> String {
        format!("ldap://127.0.0.1:{}", self.port)
    }

    pub fn ldapi_path(&self) -> PathBuf {
        self.dir.path().join("ldapi.sock")
    }

    pub fn ldapi_url(&self) -> String {
        format!(
            "ldapi://{}",
            percent_encode(&self.ldapi_path().to_string_lossy())
        )
    }

    /// Everything the server wrote to stdout and stderr so far (all runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// SIGKILL: no chance to flush or clean up, as in a power cut of the process.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A scratch directory with an empty data directory for `target`, nothing running: set up the data
    /// (e.g. `canopy restore`) first, then [`Server::restart`] starts it.
    pub fn unstarted(target: Target) -> Server {
        Server::prepare(target)
    }

    /// SIGTERM, as a service manager stops a server, then waits for the process to exit (at most 60 s,
    /// then SIGKILL and a panic). Returns the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let Some(mut child) = self.child.take() else {
            panic!("terminate: the server is not running");
        };
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        assert!(
            sent.is_ok_and(|s| s.success()),
            "could not send SIGTERM to {}",
            child.id()
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the server did not exit within 60 s of SIGTERM:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Replaces canopy's extra TOML (`--config`), for the next [`Server::restart`] and offline tool.
    pub fn set_canopy_config(&mut self, toml: &str) {
        self.config = Some(toml.to_string());
    }

    /// Starts the server again on the same data directory (on a fresh port).
    pub fn restart(&mut self) {
        self.kill9();
        self.launch();
    }

    /// Loads the base directory through ldapadd as the root DN.
    pub fn load_base(&self) {
        self.load_base_via(Via::Ldap);
    }

    /// Loads the base directory through ldapadd as the root DN (simple bind) over `via`.
    pub fn load_base_via(&self, via: Via) {
        let base = crate::base_ldif();
        let out = self.tool_via(
            via,
            "ldapadd",
            &Bind::Root,
            &["-f", &base.to_string_lossy()],
            None,
        );
        assert_eq!(
            out.code,
            0,
            "loading base.ldif failed: {}\n{}\nserver log:\n{}",
            out.stderr,
            out.stdout,
            self.log()
        );
    }

    /// Whether the server process is running (not killed or never started).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process still exists and has not exited (a zombie counts as dead): a crash
    /// shows here even before anything tries to talk to the server.
    pub fn alive(&self) -> bool {
        let Some(pid) = self.pid() else { return false };
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the parenthesized command name.
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X"),
            Err(_) => false,
        }
    }

    /// The server's resident set size in KiB (VmRSS from /proc/PID/status).
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// The process's resident anonymous memory (heap and stacks, not the mapped database) in KiB.
    pub fn anon_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("RssAnon:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// [`Server::prepare`] for the replication helpers (crate::replication).
    pub(crate) fn prepare_target(target: Target) -> Server {
        Server::prepare(target)
    }

    /// Sets the TOML canopy is started with.
    pub(crate) fn set_config(&mut self, toml: &str) {
        self.config = Some(toml.to_string());
    }

    /// Replaces canopy's configuration file for the next [`Server::restart`] (an administrator's edit).
    pub fn edit_canopy_config(&mut self, toml: &str) {
        assert_eq!(self.target, Target::Canopy, "canopy's configuration file");
        self.set_config(toml);
    }

    /// Starts the server on the port it had (retrying for 20 s while the port is still taken).
    pub(crate) fn relaunch_same_port(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match self.try_launch() {
                Ok(child) => {
                    self.child = Some(child);
                    return;
                }
                Err(StartError::PortInUse) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(StartError::PortInUse) => {
                    panic!("port {} stayed taken; cannot restart the server", self.port)
                }
            }
        }
    }

    pub(crate) fn launch(&mut self) {
        for _ in 0..8 {
            self.port = free_port();
            match self.try_launch() {
                Ok(child) => {
                    self.child = Some(child);
                    return;
                }
                Err(StartError::PortInUse) => continue,
            }
        }
        panic!("could not find a free port for the server after 8 tries");
    }

    pub(crate) fn try_launch(&mut self) -> Result<Child, StartError> {
        let log_path = self.dir.path().join("server.log");
        let log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let mut cmd = self.command();
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {program}: {e}\n{}",
                missing_server_hint(self.target)
            )
        });
        let deadline = Instant::now() + START_TIMEOUT;
        let mut last_answer = String::from("no connection yet");
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let this_run = log.get(log_start as usize..).unwrap_or(&log);
                let port_taken = TcpListener::bind(("127.0.0.1", self.port)).is_err();
                if port_taken || this_run.contains("Address already in use") {
                    return Err(StartError::PortInUse);
                }
                panic!("{program} exited with {status} before answering; its output:\n{this_run}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{program} did not answer on {} and {} within {START_TIMEOUT:?} \
                     (last try: {last_answer}); its output:\n{}",
                    self.ldap_url(),
                    self.ldapi_url(),
                    self.log()
                );
            }
            match self.answers() {
                Ok(()) => return Ok(child),
                Err(why) => last_answer = why,
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Both listeners accept connections and the server answers a root DSE read. The ldapi
    /// socket lives in our private directory, so an answer there is our server and not someone
    /// else's on a reused port.
    fn answers(&self) -> Result<(), String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(200))
            .map_err(|e| format!("TCP connect: {e}"))?;
        UnixStream::connect(self.ldapi_path()).map_err(|e| format!("ldapi connect: {e}"))?;
        let mut cmd = Command::new("ldapsearch");
        cmd.args([
            "-x",
            "-LLL",
            "-H",
            &self.ldap_url(),
            "-b",
            "",
            "-s",
            "base",
            "1.1",
        ]);
        let out = run(cmd, None);
        if out.code == 0 {
            Ok(())
        } else {
            Err(format!(
                "ldapsearch of the root DSE exited {}: {}",
                out.code,
                out.stderr.trim()
            ))
        }
    }

    /// Writes canopy's configuration file, when it has one, and returns its path.
    pub(crate) fn write_config(&self) -> Option<PathBuf> {
        let toml = self.config.as_ref()?;
        let path = self.dir.path().join("canopy.toml");
        std::fs::write(&path, toml).unwrap();
        Some(path)
    }

    fn command(&self) -> Command {
        match self.target {
            Target::Slapd => {
                let mut cmd = Command::new(SLAPD);
                // -d keeps slapd in the foreground as our child; level "none" logs only messages
                // of no particular level, i.e. errors such as a failed bind of the port.
                let level = self.slapd_debug.as_deref().unwrap_or("none");
                cmd.arg("-d").arg(level).arg("-h").arg(format!(
                    "{}/ {}",
                    self.ldap_url(),
                    self.ldapi_url()
                ));
                cmd.args(self.slapd_config_args());
                cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
                cmd
            }
            Target::Canopy => {
                let mut cmd = canopy_command();
                cmd.arg("serve")
                    .arg("--data")
                    .arg(self.data_dir())
                    .arg("--listen")
                    .arg(self.ldap_url())
                    .arg("--listen")
                    .arg(self.ldapi_url())
                    .env("CANOPY_ROOTPW", ROOT_PW);
                for url in &self.extra_listen {
                    cmd.arg("--listen").arg(url);
                }
                if let Some(filter) = &self.log_filter {
                    cmd.env("CANOPY_LOG", filter);
                }
                if let Some(path) = self.write_config() {
                    cmd.arg("--config").arg(path);
                }
                cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
                cmd
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn missing_server_hint(target: Target) -> &'static str {
    match target {
        Target::Slapd => "install Debian's slapd (scripts/test.sh does it)",
        Target::Canopy => "build canopy with `cargo build -p canopy` or set CANOPY_BIN",
    }
}

/// A port that was free a moment ago. The server binds it later; `launch` retries on a collision.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// Percent-encodes a socket path for an ldapi:// URL (RFC 3986 unreserved characters stay).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::percent_encode;

    #[test]
    fn encodes_socket_paths() {
        let cases = [
            ("/tmp/x.sock", "%2Ftmp%2Fx.sock"),
            ("/a b/c-d_e~", "%2Fa%20b%2Fc-d_e~"),
        ];
        for (input, want) in cases {
            assert_eq!(percent_encode(input), want);
        }
    }
}
