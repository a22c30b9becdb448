//! Starts a scenario's servers: ports chosen first, one loopback [`Proxy`] per replication link, each
//! server's configuration (canopy TOML or slapd.conf with syncprov, syncrepl lines, serverID and
//! `multiprovider on`; a glued second database with consumers of its own when the scenario has one), the offline loads (`canopy import` / `slapadd`, exports between them), then
//! every server launched on its port.

use super::directory::{ldif_of, REPLICATOR_DN, REPLICATOR_PW};
use super::generate::{Load, Scenario, GLUED_RID};
use crate::base::{ROOT_DN, ROOT_PW, SUFFIX};
use crate::mesh::Proxy;
use crate::replication::access_toml;
use crate::server::{Server, Target};
use crate::tempdir::TempDir;

/// Both servers' rules: the replicator reads everything, passwords included.
const ACCESS: [&str; 2] = [
    "to attrs=userPassword by dn.exact=\"cn=replicator,dc=example,dc=com\" read by self write by anonymous auth by * none",
    "to * by * read",
];

/// The running scenario: servers by index, proxies by link index.
pub struct Cluster {
    pub servers: Vec<Server>,
    pub proxies: Vec<Proxy>,
    /// Holds the LDIF files the servers were loaded from.
    pub _scratch: TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn canopy_toml(s: &Scenario, i: usize, proxies: &[Proxy]) -> String {
    let mut toml = String::new();
    if s.is_mesh() {
        toml.push_str(&format!("server_id = {}\nmultiprovider = true\n", i + 1));
    }
    if s.nodes[i].short_sessionlog {
        toml.push_str("syncprov_sessionlog = 5\n");
    }
    toml.push_str(&access_toml(&ACCESS));
    toml.push_str(&format!(
        "\n[[limits.rules]]\nwho = \"dn.exact:{REPLICATOR_DN}\"\nsize = \"unlimited\"\ntime = \"unlimited\"\n"
    ));
    toml.push_str(&canopy_consumers(s, i, proxies, "syncrepl", SUFFIX, 0));
    if let Some(glued) = &s.glued {
        // The glued database: the same rules, the same root DN, a consumer of its own per link.
        toml.push_str(&format!(
            "\n[[database]]\nsuffix = \"{glued}\"\nsubordinate = true\nroot_dn = \"{ROOT_DN}\"\n{}",
            access_toml(&ACCESS)
        ));
        if s.is_mesh() {
            toml.push_str("multiprovider = true\n");
        }
        toml.push_str(&canopy_consumers(
            s,
            i,
            proxies,
            "database.syncrepl",
            glued,
            GLUED_RID,
        ));
    }
    toml
}

/// Server `i`'s consumer tables (`[[table]]`) of `base`, one per link, rids raised by `rid_offset`.
fn canopy_consumers(
    s: &Scenario,
    i: usize,
    proxies: &[Proxy],
    table: &str,
    base: &str,
    rid_offset: usize,
) -> String {
    let mut toml = String::new();
    for (n, l) in s.links.iter().enumerate().filter(|(_, l)| l.consumer == i) {
        let kind = if l.refresh_only {
            "type = \"refreshOnly\"\ninterval = \"00:00:00:01\"\n"
        } else {
            "type = \"refreshAndPersist\"\n"
        };
        toml.push_str(&format!(
            "\n[[{table}]]\nrid = {}\nprovider = \"{}\"\nsearchbase = \"{base}\"\n{kind}\
             bindmethod = \"simple\"\nbinddn = \"{ROOT_DN}\"\ncredentials = \"{ROOT_PW}\"\n\
             retry = \"1 +\"\ntimeout = 10\nnetwork-timeout = 5\n",
            l.rid + rid_offset,
            proxies[n].url()
        ));
    }
    toml
}

/// The `syncrepl` lines of server `i` for `base`, one per link, rids raised by `rid_offset`.
fn slapd_consumers(
    s: &Scenario,
    i: usize,
    proxies: &[Proxy],
    base: &str,
    rid_offset: usize,
) -> String {
    let mut lines = String::new();
    for (n, l) in s.links.iter().enumerate().filter(|(_, l)| l.consumer == i) {
        let kind = if l.refresh_only {
            "type=refreshOnly interval=00:00:00:01"
        } else {
            "type=refreshAndPersist"
        };
        lines.push_str(&format!(
            "syncrepl rid={:03} provider={} bindmethod=simple binddn=\"{REPLICATOR_DN}\" \
             credentials={REPLICATOR_PW} searchbase=\"{base}\" scope=sub attrs=\"*,+\" \
             {kind} retry=\"1 +\" timeout=5 network-timeout=5\n",
            l.rid + rid_offset,
            proxies[n].url()
        ));
    }
    lines
}

fn slapd_conf(s: &Scenario, i: usize, server: &Server, proxies: &[Proxy]) -> String {
    let limits = format!("limits dn.exact=\"{REPLICATOR_DN}\" size=unlimited time=unlimited\n");
    let mut lines = limits.clone();
    lines.push_str(&slapd_consumers(s, i, proxies, SUFFIX, 0));
    if s.is_mesh() {
        lines.push_str("multiprovider on\n");
    }
    let sessionlog = if s.nodes[i].short_sessionlog { 5 } else { 100 };
    // slapd writes its contextCSN at each checkpoint only: killed with -9 between two, it comes back
    // with an older one, from which its (empty) session log then claims to cover a consumer's cookie,
    // and the deletes made before the crash never reach that consumer (seed 38: a Canopy peer kept
    // them). A checkpoint after every write makes slapd as crash-safe as Canopy, whose contextCSN
    // commits with the data; docs/testing.md.
    let syncprov =
        format!("overlay syncprov\nsyncprov-checkpoint 1 1\nsyncprov-sessionlog {sessionlog}\n");
    lines.push_str(&syncprov);
    let dir = server.dir().to_path_buf();
    let mut conf =
        crate::slapd_conf::render_with_all(&dir, &dir.join("data"), &[], &ACCESS, &lines);
    if let Some(glued) = &s.glued {
        // The glued database's section comes before its superior's (slapd takes the first database
        // whose suffix holds a DN), with its own syncprov and consumers.
        let access: String = ACCESS.iter().map(|r| format!("access {r}\n")).collect();
        let section = format!(
            "\ndatabase mdb\nsuffix \"{glued}\"\nsubordinate\nrootdn \"{ROOT_DN}\"\n\
             directory {}\nmaxsize 1073741824\nindex objectClass,entryUUID,entryCSN eq\n\
             {access}{limits}{}{}{syncprov}",
            glued_directory(server).display(),
            slapd_consumers(s, i, proxies, glued, GLUED_RID),
            if s.is_mesh() {
                "multiprovider on\n"
            } else {
                ""
            },
        );
        let at = conf.find("\ndatabase mdb\n").unwrap_or(conf.len());
        conf.insert_str(at, &section);
    }
    if !s.is_mesh() {
        return conf;
    }
    let at = conf.find("\ndatabase").map_or(0, |p| p + 1);
    format!("{}serverID {}\n{}", &conf[..at], i + 1, &conf[at..])
}

/// Where slapd keeps the glued database (canopy's default `DATA/db2` too).
fn glued_directory(server: &Server) -> std::path::PathBuf {
    crate::slapd_conf::ExtraDatabase::directory(&server.data_dir(), 2)
}

/// An export made for another server: canopy's hidden per-attribute CSNs are dropped for slapd,
/// which has no schema for them.
fn export_for(text: &str, target: Target) -> String {
    if target == Target::Canopy {
        return text.to_string();
    }
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with(' ') {
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        skipping = crate::ldif::name_of(line).eq_ignore_ascii_case("canopyAttrCSN");
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Configures, loads and starts every server of `s`; a setup failure (a load refused, a server
/// that does not start) is an error with the tool's output.
pub fn start(s: &Scenario) -> Result<Cluster, String> {
    let scratch = TempDir::new("replmodel");
    let mut servers: Vec<Server> = s
        .nodes
        .iter()
        .map(|n| {
            let mut server = Server::prepare_target(n.target);
            server.port = free_port();
            match n.target {
                // `CANOPY_LOG` (a tracing filter) for more, e.g. `info,canopy_server::syncrepl=trace`.
                Target::Canopy => {
                    server.log_filter =
                        Some(std::env::var("CANOPY_LOG").unwrap_or_else(|_| "info".to_string()))
                }
                Target::Slapd => server.slapd_debug = Some("sync".to_string()),
            }
            server
        })
        .collect();
    let proxies: Vec<Proxy> = s
        .links
        .iter()
        .map(|l| Proxy::start(servers[l.provider].port()))
        .collect();
    for (i, server) in servers.iter_mut().enumerate() {
        match s.nodes[i].target {
            Target::Canopy => {
                let toml = canopy_toml(s, i, &proxies);
                server.set_config(&toml);
            }
            Target::Slapd => {
                if s.glued.is_some() {
                    std::fs::create_dir_all(glued_directory(server))
                        .map_err(|e| format!("creating the glued database's directory: {e}"))?;
                }
                let conf = slapd_conf(s, i, server, &proxies);
                std::fs::write(server.dir().join("slapd.conf"), conf)
                    .map_err(|e| format!("writing slapd.conf: {e}"))?;
            }
        }
    }
    let mut export = None;
    for (i, load) in s.loads.iter().enumerate() {
        let text = match load {
            Load::Nothing => continue,
            Load::Ldif(entries) => ldif_of(entries),
            Load::ExportOfFirst => {
                let text = export.get_or_insert_with(|| servers[0].export_of(SUFFIX));
                if text.code != 0 {
                    return Err(format!("export of s0 failed: {}", text.stderr));
                }
                export_for(&text.stdout, s.nodes[i].target)
            }
        };
        let path = scratch.path().join(format!("s{i}.ldif"));
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        // A slapd peer's own loads carry its server ID, as an administrator loads a peer (slapadd
        // -S): slapd never deletes, on a peer's word, an entry whose entryCSN has server ID 0
        // (seed 29: a delete made on a Canopy peer stayed undone on slapd).
        let out = if s.is_mesh() {
            servers[i].import_to_as(SUFFIX, &path, i as u16 + 1)
        } else {
            servers[i].import_to(SUFFIX, &path)
        };
        if out.code != 0 {
            return Err(format!(
                "offline load of s{i} ({}) exited {}:\n{}\n{}",
                path.display(),
                out.code,
                out.stdout,
                out.stderr
            ));
        }
    }
    for server in servers.iter_mut() {
        server.relaunch_same_port();
    }
    Ok(Cluster {
        servers,
        proxies,
        _scratch: scratch,
    })
}
