//! Replicas that already hold data when replication starts (the usual migration path): a generated
//! LDIF, its older subset, and servers loaded offline from them (`canopy import` / `slapadd`, so
//! every server gives each entry its own entryUUID) before their consumers are turned on.

use std::path::{Path, PathBuf};

use crate::base::SUFFIX;
use crate::server::{Server, Target};

/// Writes `DIR/NAME` with the suffix, `ou=people` and `ou=groups`, `people` persons and a group
/// naming `ou=people` and the first few persons; `skip` leaves out every person whose index is a
/// multiple of it (an older copy), 0 keeps all. The path.
pub fn write_ldif(dir: &Path, name: &str, people: usize, skip: usize) -> PathBuf {
    let mut text = format!(
        "dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example Corp\ndc: example\n\n\
         dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: ou=groups,{SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n\n"
    );
    for i in 0..people {
        if skip > 0 && i % skip == 0 {
            continue;
        }
        text.push_str(&format!(
            "dn: uid=u{i},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: u{i}\ncn: User {i}\n\
             sn: S{i}\nmail: u{i}@example.com\n\n"
        ));
    }
    text.push_str(&format!(
        "dn: cn=staff,ou=groups,{SUFFIX}\nobjectClass: groupOfNames\ncn: staff\nmember: ou=people,{SUFFIX}\n"
    ));
    for i in 1..people.min(6) {
        text.push_str(&format!("member: uid=u{i},ou=people,{SUFFIX}\n"));
    }
    text.push('\n');
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the LDIF");
    path
}

/// A server of `target` on a port chosen now, with canopy's `toml` (ignored for slapd), its database
/// loaded offline from `ldif` (nothing when None; canopy's import reads `toml`, so entryCSNs carry its
/// `server_id`), not started: edit slapd's slapd.conf in [`Server::dir`] if needed, then
/// [`Server::start_preloaded`].
pub fn preloaded(target: Target, toml: &str, ldif: Option<&Path>) -> Server {
    let mut server = Server::prepare_target(target);
    if target == Target::Canopy {
        server.set_config(toml);
    }
    server.port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port");
    server.log_filter = Some("info".to_string());
    if let Some(ldif) = ldif {
        let mut cmd = server.offline_tool_with_config("import", "slapadd");
        match target {
            Target::Slapd => cmd.arg("-l").arg(ldif),
            Target::Canopy => cmd.arg(ldif),
        };
        crate::client::run(cmd, None).expect_code(0, "offline import");
    }
    server
}

impl Server {
    /// Starts a server made by [`preloaded`] on its port.
    pub fn start_preloaded(&mut self) {
        self.relaunch_same_port();
    }
}

/// `n` canopy providers in a full mesh ([`crate::mesh::mesh_toml`]: distinct `server_id`s, each
/// consuming every other), each loaded offline from `ldif` (with its own `server_id` in the entryCSNs)
/// before any starts, then all started.
pub fn preloaded_mesh(n: usize, ldif: &Path) -> Vec<Server> {
    let mut servers: Vec<Server> = (0..n)
        .map(|_| preloaded(Target::Canopy, "", None))
        .collect();
    let urls: Vec<String> = servers
        .iter()
        .map(|s| format!("ldap://127.0.0.1:{}", s.port))
        .collect();
    for (i, server) in servers.iter_mut().enumerate() {
        server.set_config(&crate::mesh::mesh_toml(i, &urls));
        let mut cmd = server.offline_tool_with_config("import", "slapadd");
        cmd.arg(ldif);
        crate::client::run(cmd, None).expect_code(0, "offline import");
    }
    // One after the other, as an administrator turns them on: each first refreshes from peers that
    // already run.
    for server in servers.iter_mut() {
        server.relaunch_same_port();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    servers
}
