//! Multi-provider test support: a full mesh of canopy providers (distinct `server_id`s,
//! `multiprovider = true`, a `[[syncrepl]]` to every peer), started on ports known before any of them
//! runs, and a time-bounded wait until every server holds the same contextCSN and contents.

use std::time::{Duration, Instant};

use crate::base::{ROOT_DN, ROOT_PW, SUFFIX};
use crate::replication::{contents, context_csn, first_difference};
use crate::server::{Server, Target};

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
/// peer, peer's port) to the URL the server uses for the peer (a [`Proxy`] in between, say);
/// [`direct`] is the peer's own URL.
pub fn canopy_mesh(n: usize, peer_url: &dyn Fn(usize, usize, u16) -> String) -> Vec<Server> {
    canopy_mesh_with(n, peer_url, &mesh_toml)
}

/// [`canopy_mesh`] with each server's TOML made by `toml` (server index, the peer URLs it uses).
pub fn canopy_mesh_with(
    n: usize,
    peer_url: &dyn Fn(usize, usize, u16) -> String,
    toml: &dyn Fn(usize, &[String]) -> String,
) -> Vec<Server> {
    let mut servers: Vec<Server> = (0..n)
        .map(|_| {
            let mut s = Server::prepare_target(Target::Canopy);
            s.port = free_port();
            s.log_filter = Some("info".to_string());
            s
        })
        .collect();
    let ports: Vec<u16> = servers.iter().map(Server::port).collect();
    for (i, server) in servers.iter_mut().enumerate() {
        let urls: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(j, port)| peer_url(i, j, *port))
            .collect();
        server.set_config(&toml(i, &urls));
    }
    for server in servers.iter_mut() {
        server.relaunch_same_port();
    }
    servers[0].load_base();
    servers
}

/// Canopy (server_id 1) and Debian's slapd (serverID 2, `multiprovider on`, syncprov) as the two
/// providers of one group, each consuming the other; base.ldif is loaded on slapd and reaches canopy
/// by replication. Canopy binds to slapd as its root DN; slapd binds to canopy as
/// [`REPLICATOR_DN`](crate::replication::REPLICATOR_DN), whom both servers' rules let read everything
/// (a slapd consumer must not bind as canopy's root DN: docs/replication.md).
pub fn canopy_slapd_pair() -> (Server, Server) {
    use crate::replication::{access_toml, syncrepl_directive, PROVIDER_ACCESS};
    let mut canopy = Server::prepare_target(Target::Canopy);
    canopy.port = free_port();
    canopy.log_filter = Some("info".to_string());
    let mut slapd = Server::prepare_target(Target::Slapd);
    slapd.port = free_port();
    let toml = format!(
        "{}server_id = 1\nmultiprovider = true\n[[syncrepl]]\nrid = 2\nprovider = \"{}\"\n\
         searchbase = \"{SUFFIX}\"\ntype = \"refreshAndPersist\"\nbindmethod = \"simple\"\n\
         binddn = \"{ROOT_DN}\"\ncredentials = \"{ROOT_PW}\"\nretry = \"1 +\"\ntimeout = 10\n",
        access_toml(&PROVIDER_ACCESS),
        slapd.ldap_url()
    );
    canopy.set_config(&toml);
    let dir = slapd.dir().to_path_buf();
    let lines = format!(
        "{}\nmultiprovider on\n{}",
        syncrepl_directive(1, &canopy, "refreshAndPersist"),
        crate::consumer_support::SYNCPROV
    );
    let conf =
        crate::slapd_conf::render_with_all(&dir, &dir.join("data"), &[], &PROVIDER_ACCESS, &lines);
    let at = conf.find("\ndatabase").map_or(0, |i| i + 1);
    let conf = format!("{}serverID 2\n{}", &conf[..at], &conf[at..]);
    std::fs::write(dir.join("slapd.conf"), conf).expect("slapd.conf");
    slapd.relaunch_same_port();
    canopy.relaunch_same_port();
    slapd.load_base();
    (canopy, slapd)
}

/// A peer's own URL (no proxy): the `peer_url` of a plain mesh.
pub fn direct(_server: usize, _peer: usize, port: u16) -> String {
    format!("ldap://127.0.0.1:{port}")
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
    wait_mesh_converged_ignoring(servers, limit, &[])
}

/// [`wait_mesh_converged`], comparing contents without the attributes `ignore` names.
pub fn wait_mesh_converged_ignoring(
    servers: &[&Server],
    limit: Duration,
    ignore: &[&str],
) -> Result<String, String> {
    let deadline = Instant::now() + limit;
    loop {
        let csns: Vec<Vec<String>> = servers.iter().map(|s| context_csn(s)).collect();
        let mut last = format!("contextCSNs {csns:#?}");
        if !csns[0].is_empty() && csns.iter().all(|c| *c == csns[0]) {
            let texts: Vec<String> = servers.iter().map(|s| contents(s, ignore)).collect();
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

/// A TCP proxy on a loopback port that the test can cut (every open connection is shut and new ones
/// are closed at once) and heal: a network partition between two servers without root.
pub struct Proxy {
    pub port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy to `127.0.0.1:target` on a free port.
    pub fn start(target: u16) -> Proxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("proxy bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("proxy addr").port();
        let cut = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<std::net::TcpStream>>> = Arc::default();
        let (c, s, o) = (cut.clone(), stop.clone(), open.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if c.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let _ = client.set_nonblocking(false);
                let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        o.lock().unwrap_or_else(|e| e.into_inner()).push(clone);
                    }
                }
                for (from, to) in [(&client, &server), (&server, &client)] {
                    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
                        continue;
                    };
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                        let _ = from.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            port,
            cut,
            stop,
            open,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("ldap://127.0.0.1:{}", self.port)
    }

    /// Cuts the link: open connections are shut, new ones closed as they come.
    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for stream in self
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Heals the link: new connections go through again.
    pub fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
