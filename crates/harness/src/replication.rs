//! Replication tests' helpers: Debian's slapd as a syncrepl consumer (or provider) from a generated
//! slapd.conf, a restart on the same port (so a consumer's `provider=` URL stays valid), contextCSN
//! polling, and the comparison of two servers' full contents. Tests wait for convergence by polling
//! contextCSN within a bound, never by sleeping a fixed time.

use std::time::{Duration, Instant};

use crate::base::SUFFIX;
use crate::client::Bind;
use crate::server::{Server, Target};

/// The identity consumers bind as in these tests: a base.ldif user that [`PROVIDER_ACCESS`] lets read
/// everything, passwords included (a replicator should not be the root DN).
pub const REPLICATOR_DN: &str = "uid=alice,ou=people,dc=example,dc=com";
pub const REPLICATOR_PW: &str = "alice-pw";

/// A provider's access rules: Debian's, with read on passwords for [`REPLICATOR_DN`].
pub const PROVIDER_ACCESS: [&str; 2] = [
    "to attrs=userPassword by dn.exact=\"uid=alice,ou=people,dc=example,dc=com\" read by self write by anonymous auth by * none",
    "to * by * read",
];

/// What a comparison between canopy and a consumer bound as [`REPLICATOR_DN`] leaves out: the SCRAM
/// secrets canopy keeps in `authPassword` (docs/authentication.md), which only the root DN may read (and
/// which Debian's slapd has no schema for).
pub const REPLICA_IGNORES: &[&str] = &["authPassword"];

/// What [`contents`] reads: every user attribute plus the two that identify a change.
pub const COMPARED: &[&str] = &["*", "entryUUID", "entryCSN"];

/// The keywords of a `syncrepl` directive (slapd.conf) for a consumer of `provider`'s whole suffix,
/// binding as [`REPLICATOR_DN`]. `kind` is `refreshAndPersist` or `refreshOnly` (then polled every
/// second).
pub fn syncrepl_directive(rid: u16, provider: &Server, kind: &str) -> String {
    let interval = if kind == "refreshOnly" {
        " interval=00:00:00:01"
    } else {
        ""
    };
    format!(
        "syncrepl rid={rid:03} provider={} bindmethod=simple binddn=\"{REPLICATOR_DN}\" \
         credentials={REPLICATOR_PW} searchbase=\"{SUFFIX}\" scope=sub attrs=\"*,+\" \
         type={kind}{interval} retry=\"1 +\" timeout=5 network-timeout=5",
        provider.ldap_url()
    )
}

/// `access = [...]` for canopy's TOML from rules in slapd's language.
pub fn access_toml(rules: &[&str]) -> String {
    let list: Vec<String> = rules.iter().map(|r| format!("'''{r}'''")).collect();
    format!("access = [\n{}\n]\n", list.join(",\n"))
}

impl Server {
    /// Starts Debian's slapd with an empty database whose section ends with `lines` (a `syncrepl`
    /// directive, `overlay syncprov` ...; the modules of `overlay` lines are loaded). Nothing is loaded.
    pub fn start_slapd_with(lines: &str) -> Server {
        Server::start_slapd_with_access(lines, &crate::slapd_conf::DEBIAN_ACCESS)
    }

    /// [`Server::start_slapd_with`], with `rules` as the database's access list.
    pub fn start_slapd_with_access(lines: &str, rules: &[&str]) -> Server {
        let mut server = Server::prepare_target(Target::Slapd);
        let dir = server.dir().to_path_buf();
        let conf = crate::slapd_conf::render_with_all(&dir, &dir.join("data"), &[], rules, lines);
        std::fs::write(dir.join("slapd.conf"), conf).unwrap();
        server.launch();
        server
    }

    /// Starts canopy with `toml` and an empty database (nothing loaded).
    pub fn start_canopy_empty(toml: &str) -> Server {
        let mut server = Server::prepare_target(Target::Canopy);
        server.set_config(toml);
        server.launch();
        server
    }

    /// SIGKILL, then starts the server again on the same data directory and the same port, so that
    /// whoever replicates from it finds it where it was. Panics when the port stays taken for 20 s.
    pub fn restart_same_port(&mut self) {
        self.kill9();
        self.relaunch_same_port();
    }

    /// Whether `self` and `other` hold the same contextCSN values and the same entries (every user
    /// attribute, entryUUID and entryCSN, except the attributes `ignore` names), polled until
    /// `timeout`; the difference when they do not converge in time.
    pub fn converges_with(
        &self,
        other: &Server,
        timeout: Duration,
        ignore: &[&str],
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut last;
        loop {
            let (a, b) = (context_csn(self), context_csn(other));
            if !a.is_empty() && a == b {
                let (x, y) = (contents(self, ignore), contents(other, ignore));
                if x == y {
                    return Ok(());
                }
                last = first_difference(&x, &y);
            } else {
                last = format!("contextCSN {a:?} and {b:?}");
            }
            if Instant::now() >= deadline {
                return Err(format!("no convergence within {timeout:?}: {last}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The suffix entry's contextCSN values, sorted (empty when there is none or the server does not
/// answer).
pub fn context_csn(server: &Server) -> Vec<String> {
    let out = server.search(
        &Bind::Root,
        &["-b", SUFFIX, "-s", "base", "(objectClass=*)", "contextCSN"],
    );
    let mut values: Vec<String> = out
        .records()
        .iter()
        .flat_map(|r| r.values("contextCSN"))
        .collect();
    values.sort();
    values
}

/// Every entry of the suffix with [`COMPARED`] but the attributes `ignore` names, in canonical LDIF
/// (records and values sorted), read as the root DN.
pub fn contents(server: &Server, ignore: &[&str]) -> String {
    let mut args = vec!["-b", SUFFIX, "-s", "sub", "(objectClass=*)"];
    args.extend_from_slice(COMPARED);
    let out = server.search(&Bind::Root, &args);
    let kept: Vec<&str> = out
        .stdout
        .lines()
        .filter(|line| {
            let name = crate::ldif::name_of(line);
            !ignore.iter().any(|i| i.eq_ignore_ascii_case(name))
        })
        .collect();
    crate::ldif::sorted(&(kept.join("\n") + "\n"))
}

/// The first record where two canonical LDIF texts differ, both sides shown.
pub fn first_difference(a: &str, b: &str) -> String {
    let (ra, rb): (Vec<&str>, Vec<&str>) = (a.split("\n\n").collect(), b.split("\n\n").collect());
    for i in 0..ra.len().max(rb.len()) {
        let (x, y) = (ra.get(i).copied(), rb.get(i).copied());
        if x != y {
            return format!(
                "record {i} differs ({} and {} records):\n--- one\n{}\n--- other\n{}",
                ra.len(),
                rb.len(),
                x.unwrap_or("(none)"),
                y.unwrap_or("(none)")
            );
        }
    }
    "no difference".into()
}
