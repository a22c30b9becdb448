//! Multi-provider test support: a full mesh of canopy providers (distinct `server_id`s,
//! `multiprovider = true`, a `[[syncrepl]]` to every peer), started on ports known before any of them
//! runs, and a time-bounded wait until every server holds the same contextCSN and contents.

use std::time::{Duration, Instant};

use crate::replication::{contents, context_csn, first_difference};
use crate::server::{Server, Target, ROOT_DN, ROOT_PW, SUFFIX};

/// The rid of the consumer on server `i` of the mesh that replicates from server `j` (both from 0).
pub fn mesh_rid(i: usize, j: usize) -> usize {
    (i + 1) * 10 + j + 1
}

/// The TOML of server `i` of a mesh whose servers listen at `urls`: its ID (`i + 1`), multiprovider,
/// and one refreshAndPersist consumer of each peer, retrying every second.
pub fn mesh_toml(i: usize, urls: &[String]) -> String {
    let mut toml = format!("server_id = {}\nmultiprovider = true\n", i + 1);
    for (j, url) in urls.iter().enumerate() {
        if j == i {
            continue;
        }
        toml.push_str(&format!(
            "[[syncrepl]]\nrid = {}\nprovider = \"{url}\"\nsearchbase = \"{SUFFIX}\"\n\
             type = \"refreshAndPersist\"\nbindmethod = \"simple\"\nbinddn = \"{ROOT_DN}\"\n\
             credentials = \"{ROOT_PW}\"\nretry = \"1 +\"\ntimeout = 10\nnetwork-timeout = 5\n",
            mesh_rid(i, j)
        ));
    }
    toml
}

/// Starts `n` canopy providers in a full mesh (each consuming every other), logging at info level;
/// base.ldif is loaded on the first and reaches the others by replication. `peer_url` maps (server,
/// peer, peer's own URL) to the URL the server uses for the peer (a proxy in between, say).
pub fn canopy_mesh(n: usize, peer_url: &dyn Fn(usize, usize, &str) -> String) -> Vec<Server> {
    let mut servers: Vec<Server> = (0..n)
        .map(|_| {
            let mut s = Server::prepare_target(Target::Canopy);
            s.port = free_port();
            s.log_filter = Some("info".to_string());
            s
        })
        .collect();
    let own: Vec<String> = servers.iter().map(Server::ldap_url).collect();
    for (i, server) in servers.iter_mut().enumerate() {
        let urls: Vec<String> = own
            .iter()
            .enumerate()
            .map(|(j, url)| peer_url(i, j, url))
            .collect();
        server.set_config(&mesh_toml(i, &urls));
    }
    for server in servers.iter_mut() {
        server.relaunch_same_port();
    }
    servers[0].load_base();
    servers
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Waits (at most `limit`) until every server has the first one's contextCSN and contents; the
/// difference when they never do.
pub fn wait_mesh_converged(servers: &[&Server], limit: Duration) -> Result<String, String> {
    let deadline = Instant::now() + limit;
    loop {
        let csns: Vec<Vec<String>> = servers.iter().map(|s| context_csn(s)).collect();
        let mut last = format!("contextCSNs {csns:#?}");
        if !csns[0].is_empty() && csns.iter().all(|c| *c == csns[0]) {
            let texts: Vec<String> = servers.iter().map(|s| contents(s, &[])).collect();
            match texts.iter().position(|t| *t != texts[0]) {
                None => return Ok(texts[0].clone()),
                Some(k) => {
                    last = format!(
                        "server 0 and {k}: {}",
                        first_difference(&texts[0], &texts[k])
                    )
                }
            }
        }
        if Instant::now() > deadline {
            return Err(format!("no convergence within {limit:?}: {last}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
