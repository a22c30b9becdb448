//! Multi-provider replication: three canopy providers in a full mesh (distinct server IDs,
//! `multiprovider = true`, each consuming the other two) take a seeded random mix of adds, modifies,
//! renames, moves, deletes and subtree moves on all three at once; then all three must hold identical
//! contents (contextCSN polled with a time bound) and every acknowledged write that no other write
//! could supersede must be there (a model of the acknowledged writes, docs/replication.md's conflict
//! rules). The same with kill -9 and a network cut (a proxy the test cuts and heals); each conflict
//! rule with the link cut; canopy and slapd 2.5 as two providers of one group; a duplicate server ID,
//! a change coming back around the ring and a peer sending a change outside the suffix, as the logs
//! and cn=Monitor show them. Canopy-only (skipped when the target is slapd: the servers under test are
//! canopy's; slapd takes part as a peer where it interoperates).

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use canopy_e2e::mesh::{
    canopy_mesh, canopy_mesh_with, direct, wait_mesh_converged, wait_mesh_converged_ignoring, Proxy,
};
use canopy_e2e::*;

const CONVERGE: Duration = Duration::from_secs(90);
/// Leaf slots `cn=eK` (under ou=a or ou=b), sub-units `ou=sM` (each with children `cn=cMX`).
const LEAVES: usize = 30;
const UNITS: usize = 2;
const CHILDREN: usize = 3;

fn canopy_target() -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: a mesh of canopy providers");
        return false;
    }
    true
}

/// A small seeded generator (xorshift64*), so that a failing mix can be run again by its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

/// What a key names: a leaf slot, a sub-unit, or one child of a sub-unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Leaf(usize),
    Unit(usize),
    Child(usize, usize),
}

/// What must hold at the end when the write was acknowledged and nothing could supersede it.
#[derive(Debug, Clone)]
enum Expect {
    /// An entry with this RDN (under this parent RDN, when given) and this description token.
    Holds {
        rdn: String,
        parent: Option<String>,
        token: Option<String>,
    },
    /// No entry with this RDN under this parent RDN.
    Gone { rdn: String, parent: String },
}

#[derive(Debug, Clone)]
struct Write {
    server: usize,
    keys: Vec<Key>,
    start: Instant,
    end: Instant,
    acked: bool,
    delete: bool,
    /// The one attribute a modify changes; None for a write that acts on the whole entry (add,
    /// rename, delete), which competes with every other write of its keys.
    attr: Option<&'static str>,
    expect: Vec<Expect>,
    ldif: String,
}

fn parent_dn(p: usize) -> String {
    format!("ou={},{SUFFIX}", ["a", "b"][p])
}

/// One random write for server `s`: its LDIF, keys, whether it is a delete, the attribute a modify
/// changes, and what it leaves.
fn random_write(
    rng: &mut Rng,
    s: usize,
    n: usize,
) -> (String, Vec<Key>, bool, Option<&'static str>, Vec<Expect>) {
    let token = format!("t{s}-{n}");
    let p = rng.below(2);
    let (pa, pb) = (["a", "b"][p].to_string(), ["a", "b"][1 - p].to_string());
    let holds = |rdn: String, parent: Option<String>, token: Option<String>| Expect::Holds {
        rdn,
        parent,
        token,
    };
    const DESC: Option<&str> = Some("description");
    match rng.below(15) {
        0 | 1 => {
            let k = rng.below(LEAVES);
            let ldif = format!(
                "dn: cn=e{k},{}\nchangetype: add\nobjectClass: person\ncn: e{k}\nsn: S\ndescription: {token}\n",
                parent_dn(p)
            );
            let e = vec![holds(format!("cn=e{k}"), Some(pa), Some(token))];
            (ldif, vec![Key::Leaf(k)], false, None, e)
        }
        12..=14 => {
            // Another attribute of the same entries, concurrently: merged per attribute, so it
            // survives a concurrent description change (and the other way round).
            let k = rng.below(LEAVES);
            let phone = format!("{}{n:06}", s + 1);
            let ldif = format!(
                "dn: cn=e{k},{}\nchangetype: modify\nreplace: telephoneNumber\ntelephoneNumber: {phone}\n",
                parent_dn(p)
            );
            let e = vec![holds(format!("cn=e{k}"), Some(pa), Some(phone))];
            (ldif, vec![Key::Leaf(k)], false, Some("telephoneNumber"), e)
        }
        2..=4 => {
            let k = rng.below(LEAVES);
            let ldif = format!(
                "dn: cn=e{k},{}\nchangetype: modify\nreplace: description\ndescription: {token}\n",
                parent_dn(p)
            );
            let e = vec![holds(format!("cn=e{k}"), Some(pa), Some(token))];
            (ldif, vec![Key::Leaf(k)], false, DESC, e)
        }
        5 => {
            let k = rng.below(LEAVES);
            let ldif = format!(
                "dn: cn=e{k},{}\nchangetype: modrdn\nnewrdn: cn=e{k}\ndeleteoldrdn: 1\nnewsuperior: {}\n",
                parent_dn(p),
                parent_dn(1 - p)
            );
            let e = vec![holds(format!("cn=e{k}"), Some(pb), None)];
            (ldif, vec![Key::Leaf(k)], false, None, e)
        }
        6 => {
            let (k, j) = (rng.below(LEAVES), rng.below(LEAVES));
            if k == j {
                return random_write(rng, s, n);
            }
            let ldif = format!(
                "dn: cn=e{k},{}\nchangetype: modrdn\nnewrdn: cn=e{j}\ndeleteoldrdn: 1\n",
                parent_dn(p)
            );
            let e = vec![
                holds(format!("cn=e{j}"), Some(pa.clone()), None),
                Expect::Gone {
                    rdn: format!("cn=e{k}"),
                    parent: pa,
                },
            ];
            (ldif, vec![Key::Leaf(k), Key::Leaf(j)], false, None, e)
        }
        7 => {
            let k = rng.below(LEAVES);
            let ldif = format!("dn: cn=e{k},{}\nchangetype: delete\n", parent_dn(p));
            let e = vec![Expect::Gone {
                rdn: format!("cn=e{k}"),
                parent: pa,
            }];
            (ldif, vec![Key::Leaf(k)], true, None, e)
        }
        8 | 9 => {
            let (m, x) = (rng.below(UNITS), rng.below(CHILDREN));
            let ldif = format!(
                "dn: cn=c{m}{x},ou=s{m},{}\nchangetype: modify\nreplace: description\ndescription: {token}\n",
                parent_dn(p)
            );
            let e = vec![holds(format!("cn=c{m}{x}"), None, Some(token))];
            (ldif, vec![Key::Child(m, x)], false, DESC, e)
        }
        10 => {
            let m = rng.below(UNITS);
            let ldif = format!(
                "dn: ou=s{m},{}\nchangetype: modrdn\nnewrdn: ou=s{m}\ndeleteoldrdn: 1\nnewsuperior: {}\n",
                parent_dn(p),
                parent_dn(1 - p)
            );
            let e = vec![holds(format!("ou=s{m}"), Some(pb), None)];
            (ldif, vec![Key::Unit(m)], false, None, e)
        }
        _ => {
            let (m, x) = (rng.below(UNITS), rng.below(CHILDREN));
            let dn = format!("cn=c{m}{x},ou=s{m},{}", parent_dn(p));
            if rng.below(2) == 0 {
                let ldif = format!(
                    "dn: {dn}\nchangetype: add\nobjectClass: person\ncn: c{m}{x}\nsn: C\ndescription: {token}\n"
                );
                let e = vec![holds(format!("cn=c{m}{x}"), None, Some(token))];
                (ldif, vec![Key::Child(m, x)], false, None, e)
            } else {
                let e = vec![Expect::Gone {
                    rdn: format!("cn=c{m}{x}"),
                    parent: format!("s{m}"),
                }];
                (
                    format!("dn: {dn}\nchangetype: delete\n"),
                    vec![Key::Child(m, x)],
                    true,
                    None,
                    e,
                )
            }
        }
    }
}

/// The entries of the final contents: RDN → (parent RDN, description and telephoneNumber values),
/// one per entry.
type Held = Vec<(String, String, Vec<String>)>;

fn held(server: &Server) -> Held {
    let out = server.search(
        &Bind::Root,
        &[
            "-b",
            SUFFIX,
            "-s",
            "sub",
            "(|(cn=*)(ou=*))",
            "description",
            "telephoneNumber",
        ],
    );
    out.records()
        .iter()
        .map(|r| {
            let dn = r.dn().to_ascii_lowercase();
            let mut parts = dn.splitn(3, ',');
            let rdn = parts.next().unwrap_or_default().to_string();
            let parent = parts.next().unwrap_or_default().to_string();
            let mut values = r.values("description");
            values.extend(r.values("telephoneNumber"));
            (rdn, parent, values)
        })
        .collect()
}

fn check(expect: &Expect, held: &Held) -> bool {
    match expect {
        Expect::Holds { rdn, parent, token } => held.iter().any(|(r, p, d)| {
            r == rdn
                && parent
                    .as_ref()
                    .is_none_or(|want| *p == format!("ou={want}"))
                && token.as_ref().is_none_or(|t| d.contains(t))
        }),
        Expect::Gone { rdn, parent } => !held
            .iter()
            .any(|(r, p, _)| r == rdn && *p == format!("ou={parent}")),
    }
}

/// The writes that nothing could supersede: every other write on one of its keys that could
/// compete with it ended before it started (so it has the higher CSN), and no delete ever touched
/// its keys (a delete wins whatever the order, and a server that had not yet heard of it may
/// acknowledge a write the delete removes). Modifies of two different attributes of one entry do
/// not compete: they are merged attribute by attribute (docs/replication.md), so both survive
/// whatever their times.
fn unsuperseded(writes: &[Write]) -> Vec<&Write> {
    let compete = |w: &Write, o: &Write| match (w.attr, o.attr) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    writes
        .iter()
        .filter(|w| w.acked)
        .filter(|w| {
            writes.iter().all(|o| {
                std::ptr::eq(*w, o)
                    || !o.keys.iter().any(|k| w.keys.contains(k))
                    || (!compete(w, o) && !o.delete)
                    || (o.end < w.start && !(o.delete && o.acked && !w.delete))
            })
        })
        .collect()
}

fn seed() -> u64 {
    std::env::var("CANOPY_MP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261127)
}

/// The fixed frame every mix starts from: ou=a and ou=b, sub-units with children under ou=a.
fn frame(server: &Server) {
    let mut ldif = String::new();
    for ou in ["a", "b"] {
        ldif.push_str(&format!(
            "dn: ou={ou},{SUFFIX}\nobjectClass: organizationalUnit\nou: {ou}\n\n"
        ));
    }
    for m in 0..UNITS {
        ldif.push_str(&format!(
            "dn: ou=s{m},ou=a,{SUFFIX}\nobjectClass: organizationalUnit\nou: s{m}\n\n"
        ));
        for x in 0..CHILDREN {
            ldif.push_str(&format!(
                "dn: cn=c{m}{x},ou=s{m},ou=a,{SUFFIX}\nobjectClass: person\ncn: c{m}{x}\nsn: C\n\n"
            ));
        }
    }
    server.add(&Bind::Root, &ldif).expect_code(0, "the frame");
}

/// Sends `per_server` random writes to each server at once (one thread per server); returns every
/// write with its times and outcome.
fn storm(servers: &[Server], per_server: usize, seed: u64, round: usize) -> Vec<Write> {
    let writes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for (s, server) in servers.iter().enumerate() {
            let writes = &writes;
            scope.spawn(move || {
                let mut rng = Rng::new(seed ^ ((round * 16 + s) as u64 + 1));
                for n in 0..per_server {
                    let (ldif, keys, delete, attr, expect) =
                        random_write(&mut rng, s, round * 10_000 + n);
                    let start = Instant::now();
                    let out = server.modify(&Bind::Root, &ldif);
                    let end = Instant::now();
                    writes.lock().unwrap().push(Write {
                        server: s,
                        keys,
                        start,
                        end,
                        acked: out.code == 0,
                        delete,
                        attr,
                        expect,
                        ldif,
                    });
                }
            });
        }
    });
    writes.into_inner().unwrap()
}

/// Checks the model against converged contents; panics with the write that is missing.
fn verify(writes: &[Write], servers: &[Server], seed: u64) {
    let final_held = held(&servers[0]);
    let acked = writes.iter().filter(|w| w.acked).count();
    assert!(
        acked * 8 >= writes.len(),
        "seed {seed}: only {acked} of {} writes were acknowledged",
        writes.len()
    );
    let checked = unsuperseded(writes);
    for w in &checked {
        // A modify of one attribute and a rename of the same entry made on another server before it
        // (which that server may not have seen yet) both survive, merged per attribute: the value is
        // then held by the entry under its new name. Its token is unique, so finding it on any entry
        // shows that the write survived.
        let moved = w.attr.is_some()
            && writes.iter().any(|o| {
                !std::ptr::eq(*w, o)
                    && o.server != w.server
                    && o.ldif.contains("changetype: modrdn")
                    && o.keys.iter().any(|k| w.keys.contains(k))
            });
        for e in &w.expect {
            let found = match (moved, e) {
                (true, Expect::Holds { token: Some(t), .. }) => {
                    final_held.iter().any(|(_, _, d)| d.contains(t))
                }
                _ => check(e, &final_held),
            };
            assert!(
                found,
                "seed {seed}: an acknowledged write that nothing superseded is lost: server {} {:?}\n{}\nfinal: {final_held:#?}",
                w.server,
                e,
                w.ldif
            );
        }
    }
    // Every description token held was written by a client (no invented or torn values).
    let tokens: BTreeSet<String> = writes
        .iter()
        .flat_map(|w| {
            w.ldif.lines().filter_map(|l| {
                l.strip_prefix("description: ")
                    .or_else(|| l.strip_prefix("telephoneNumber: "))
            })
        })
        .map(str::to_string)
        .collect();
    let ours = |rdn: &str| rdn.starts_with("cn=e") || rdn.starts_with("cn=c");
    for (rdn, _, values) in final_held.iter().filter(|(r, _, _)| ours(r)) {
        for v in values {
            assert!(
                tokens.contains(v),
                "seed {seed}: {rdn} holds {v:?}, never written"
            );
        }
    }
    println!(
        "seed {seed}: {} writes, {acked} acknowledged, {} checked as unsuperseded",
        writes.len(),
        checked.len()
    );
}

/// After the storm, serial writes (one server at a time, each after the last was acknowledged) to
/// every leaf slot that exists, spread over the servers: each is the newest write of its entry and
/// must be what every server holds once converged.
fn serial_round(servers: &[Server], seed: u64) -> Vec<Write> {
    let now = held(&servers[0]);
    let mut writes = Vec::new();
    let ours = |rdn: &str| rdn.starts_with("cn=e") || rdn.starts_with("cn=c");
    for (i, (rdn, parent, _)) in now.iter().filter(|(r, _, _)| ours(r)).enumerate() {
        let s = i % servers.len();
        let token = format!("serial-{seed}-{i}");
        let dn = format!("{rdn},{parent},{SUFFIX}");
        let dn = if parent.starts_with("ou=s") {
            // A child: its unit's parent is found from the held contents.
            let unit = now
                .iter()
                .find(|(r, _, _)| r == parent)
                .map(|(_, p, _)| p.clone())
                .unwrap_or_default();
            format!("{rdn},{parent},{unit},{SUFFIX}")
        } else {
            dn
        };
        let ldif =
            format!("dn: {dn}\nchangetype: modify\nreplace: description\ndescription: {token}\n");
        let start = Instant::now();
        let out = servers[s].modify(&Bind::Root, &ldif);
        out.expect_code(0, &format!("serial modify of {dn} on server {s}"));
        writes.push(Write {
            server: s,
            keys: Vec::new(),
            start,
            end: Instant::now(),
            acked: true,
            delete: false,
            attr: Some("description"),
            expect: vec![Expect::Holds {
                rdn: rdn.clone(),
                parent: None,
                token: Some(token),
            }],
            ldif,
        });
    }
    writes
}

fn converge(servers: &[Server], what: &str) {
    let refs: Vec<&Server> = servers.iter().collect();
    if let Err(diff) = wait_mesh_converged(&refs, CONVERGE) {
        let logs: Vec<String> = servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let log = s.log();
                let lines: Vec<&str> = log
                    .lines()
                    .filter(|l| l.contains("syncrepl:") && !l.contains("retrying"))
                    .collect();
                let tail = &lines[lines.len().saturating_sub(60)..];
                format!(
                    "--- server {i} replication log (last lines)\n{}",
                    tail.join("\n")
                )
            })
            .collect();
        // Every DN whose record differs between the servers, with each server's record.
        let texts: Vec<String> = servers
            .iter()
            .map(|s| canopy_e2e::replication::contents(s, &[]))
            .collect();
        let records: Vec<BTreeSet<&str>> =
            texts.iter().map(|t| t.split("\n\n").collect()).collect();
        let mut differ = BTreeSet::new();
        for (i, a) in records.iter().enumerate() {
            for b in &records[i + 1..] {
                differ.extend(a.symmetric_difference(b).copied());
            }
        }
        let differ: Vec<&str> = differ.into_iter().take(30).collect();
        panic!(
            "{what}: {diff}\nrecords not on every server:\n{}\n{}",
            differ.join("\n\n"),
            logs.join("\n")
        );
    }
}

#[test]
fn three_providers_converge_after_a_random_write_mix() {
    if !canopy_target() {
        return;
    }
    let seed = seed();
    let servers = canopy_mesh(3, &direct);
    converge(&servers, "the base loaded on server 0");
    frame(&servers[1]);
    converge(&servers, "the frame written on server 1");
    let mut writes = Vec::new();
    for round in 0..2 {
        writes.extend(storm(&servers, 60, seed, round));
        converge(&servers, &format!("seed {seed}: after storm {round}"));
        verify(&writes, &servers, seed);
    }
    let serial = serial_round(&servers, seed);
    converge(&servers, &format!("seed {seed}: after the serial writes"));
    let final_held = held(&servers[2]);
    for w in &serial {
        assert!(
            check(&w.expect[0], &final_held),
            "seed {seed}: serial write lost: {}",
            w.ldif
        );
    }
    // Every server accepted client writes (multiprovider), and no loop is still running: the
    // contextCSN stays put once converged.
    let per_server: HashMap<usize, usize> =
        writes
            .iter()
            .filter(|w| w.acked)
            .fold(HashMap::new(), |mut m, w| {
                *m.entry(w.server).or_default() += 1;
                m
            });
    assert_eq!(
        per_server.len(),
        3,
        "acknowledged writes per server: {per_server:?}"
    );
    let before = canopy_e2e::replication::context_csn(&servers[0]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        before,
        canopy_e2e::replication::context_csn(&servers[0]),
        "the contextCSN still moves with no client writing: a replication loop"
    );
    // The whole databases, operational attributes included, as `canopy export` writes them (it reads
    // a snapshot beside the running server): byte for byte once the records are sorted.
    let exports: Vec<String> = servers.iter().map(sorted_export).collect();
    for (k, export) in exports.iter().enumerate().skip(1) {
        let (a, b): (BTreeSet<&str>, BTreeSet<&str>) = (
            exports[0].split("\n\n").collect(),
            export.split("\n\n").collect(),
        );
        let differ: Vec<&str> = a.symmetric_difference(&b).copied().take(6).collect();
        assert!(
            differ.is_empty(),
            "seed {seed}: canopy export of server 0 and server {k} differ:\n{}",
            differ.join("\n\n")
        );
    }
}

/// `canopy export` of a running server, its records sorted (the order of entry IDs differs from
/// server to server).
fn sorted_export(server: &Server) -> String {
    let out = server.canopy_tool("export", &[]);
    assert_eq!(out.code, 0, "canopy export: {}", out.stderr);
    let mut records: Vec<&str> = out
        .stdout
        .split("\n\n")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    records.sort_unstable();
    assert!(records.len() > 10, "an export of {} records", records.len());
    records.join("\n\n")
}

/// Sends SIGKILL to a running server by its process ID (the storm's threads still hold it).
fn kill9_by_pid(server: &Server) {
    let pid = server.pid().expect("a running server").to_string();
    let out = std::process::Command::new("kill")
        .args(["-9", &pid])
        .output()
        .expect("kill");
    assert!(out.status.success(), "kill -9 {pid}: {out:?}");
}

#[test]
fn kill9_and_a_network_cut_in_a_mesh_lose_nothing() {
    if !canopy_target() {
        return;
    }
    let seed = seed() ^ 0x5eed;
    // Servers 0 and 1 reach each other through proxies the test cuts and heals; server 2 directly.
    let proxies: Mutex<Vec<Proxy>> = Mutex::new(Vec::new());
    let mut servers = canopy_mesh(3, &|i, j, port| {
        if (i, j) == (0, 1) || (i, j) == (1, 0) {
            let proxy = Proxy::start(port);
            let url = proxy.url();
            proxies.lock().unwrap().push(proxy);
            url
        } else {
            direct(i, j, port)
        }
    });
    let proxies = proxies.into_inner().unwrap();
    converge(&servers, "the base loaded on server 0");
    frame(&servers[2]);
    converge(&servers, "the frame written on server 2");
    let mut rng = Rng::new(seed);
    let mut writes = Vec::new();
    for round in 0..3 {
        // One provider is killed with -9 at a random moment of the storm and stays down until it
        // ends; the writes it acknowledged before must reach the others once it is back.
        let victim = rng.below(3);
        let after = Duration::from_millis(100 + rng.below(900) as u64);
        let done = std::thread::scope(|scope| {
            let storm = scope.spawn(|| storm(&servers, 40, seed, round));
            std::thread::sleep(after);
            kill9_by_pid(&servers[victim]);
            storm.join().unwrap()
        });
        writes.extend(done);
        canopy_e2e::consumer_support::relaunch_same_port(&mut servers[victim]);
        converge(
            &servers,
            &format!("seed {seed}: round {round}, server {victim} killed and restarted"),
        );
        verify(&writes, &servers, seed);
    }
    // A network cut between servers 0 and 1 during a storm (server 2 still links both, so changes
    // reach them through it), then one with server 2 killed too: 0 and 1 diverge until healed.
    for round in 3..5 {
        for proxy in &proxies {
            proxy.cut();
        }
        if round == 4 {
            servers[2].kill9();
        }
        let storm_servers: Vec<&Server> = servers
            .iter()
            .take(if round == 4 { 2 } else { 3 })
            .collect();
        let done = std::thread::scope(|scope| {
            let handles: Vec<_> = storm_servers
                .iter()
                .enumerate()
                .map(|(s, server)| {
                    scope.spawn(move || {
                        storm(
                            std::slice::from_ref(*server),
                            40,
                            seed ^ s as u64,
                            round * 4 + s,
                        )
                        .into_iter()
                        .map(|mut w| {
                            w.server = s;
                            w
                        })
                        .collect::<Vec<Write>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        writes.extend(done);
        for proxy in &proxies {
            proxy.heal();
        }
        if round == 4 {
            canopy_e2e::consumer_support::relaunch_same_port(&mut servers[2]);
        }
        converge(
            &servers,
            &format!("seed {seed}: round {round}, after the cut healed"),
        );
        verify(&writes, &servers, seed);
    }
}

/// The `description` values of `cn=Consumer <rid>,cn=Replication,cn=Monitor`, read as the root DN.
fn consumer_monitor(server: &Server, rid: usize) -> Vec<String> {
    let dn = format!("cn=Consumer {rid:03},cn=Replication,cn=Monitor");
    let out = server.read(&Bind::Root, &dn, &["description"]);
    out.records()
        .iter()
        .flat_map(|r| r.values("description"))
        .collect()
}

#[test]
fn a_duplicate_server_id_is_logged_and_shown() {
    if !canopy_target() {
        return;
    }
    // Both servers claim server_id 1: each receives the other's changes stamped with its own ID.
    let servers = canopy_mesh_with(2, &direct, &|i, urls| {
        canopy_e2e::mesh::mesh_toml(i, urls).replace("server_id = 2", "server_id = 1")
    });
    let limit = Duration::from_secs(30);
    assert!(
        canopy_e2e::consumer_support::wait_log(&servers[1], "duplicate server ID", limit),
        "no duplicate server ID line in server 1's log:\n{}",
        servers[1].log()
    );
    let rid = canopy_e2e::mesh::mesh_rid(1, 0);
    let deadline = Instant::now() + limit;
    loop {
        let description = consumer_monitor(&servers[1], rid);
        if description
            .iter()
            .any(|d| d.starts_with("lastError:") && d.contains("same server_id"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no lastError about the server ID in cn=Consumer {rid:03}: {description:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Per-peer state in the monitor: the conflicts and loops skipped are counted.
    let description = consumer_monitor(&servers[1], rid);
    assert!(
        description.iter().any(|d| d.starts_with("skipped: ")),
        "{description:?}"
    );
}

#[test]
fn a_distinct_mesh_reports_no_duplicate_and_counts_loops() {
    if !canopy_target() {
        return;
    }
    let servers = canopy_mesh(2, &direct);
    converge(&servers, "the base loaded on server 0");
    servers[1]
        .modify(
            &Bind::Root,
            &format!(
                "dn: {SUFFIX}\nchangetype: modify\nreplace: description\ndescription: from 1\n"
            ),
        )
        .expect_code(0, "a write on the second provider");
    converge(&servers, "a write on server 1");
    // Server 1's change came back to it from server 0 and was recognised, not applied again.
    let rid = canopy_e2e::mesh::mesh_rid(1, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let description = consumer_monitor(&servers[1], rid);
        let skipped = description
            .iter()
            .find_map(|d| d.strip_prefix("skipped: "))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        if skipped > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "server 1 never saw its own change come back: {description:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for server in &servers {
        assert!(
            !server.log().contains("duplicate server ID"),
            "a false duplicate server ID:\n{}",
            server.log()
        );
    }
}

/// Writes of one provider of the canopy+slapd pair under its own unit (`ou=<unit>`): adds,
/// modifies, renames and deletes; returns the entries (RDN, description) that must remain.
fn unit_writes(server: &Server, unit: &str, n: usize) -> Vec<(String, String)> {
    let mut remain = Vec::new();
    for i in 0..n {
        let dn = format!("cn={unit}{i},ou={unit},{SUFFIX}");
        server
            .modify(
                &Bind::Root,
                &format!("dn: {dn}\nchangetype: add\nobjectClass: person\ncn: {unit}{i}\nsn: S\ndescription: add-{unit}{i}\n"),
            )
            .expect_code(0, "add");
        server
            .modify(
                &Bind::Root,
                &format!("dn: {dn}\nchangetype: modify\nreplace: description\ndescription: mod-{unit}{i}\n"),
            )
            .expect_code(0, "modify");
        let mut rdn = format!("cn={unit}{i}");
        if i % 3 == 0 {
            server
                .modify(
                    &Bind::Root,
                    &format!(
                        "dn: {dn}\nchangetype: modrdn\nnewrdn: cn=r{unit}{i}\ndeleteoldrdn: 1\n"
                    ),
                )
                .expect_code(0, "rename");
            rdn = format!("cn=r{unit}{i}");
        }
        if i % 5 == 1 {
            server
                .modify(
                    &Bind::Root,
                    &format!("dn: {rdn},ou={unit},{SUFFIX}\nchangetype: delete\n"),
                )
                .expect_code(0, "delete");
            continue;
        }
        remain.push((rdn, format!("mod-{unit}{i}")));
    }
    remain
}

#[test]
fn canopy_and_slapd_as_two_providers_converge() {
    if !canopy_target() {
        return;
    }
    if !have_slapd() {
        return;
    }
    let (canopy, slapd) = canopy_e2e::mesh::canopy_slapd_pair();
    let pair = [&canopy, &slapd];
    let ignore = ["authPassword"];
    let limit = Duration::from_secs(60);
    let failed =
        |what: &str, diff: String| -> ! { panic!("{what}: {diff}\ncanopy log:\n{}", canopy.log()) };
    if let Err(diff) = wait_mesh_converged_ignoring(&pair, limit, &ignore) {
        failed("base.ldif loaded on slapd", diff);
    }
    canopy
        .modify(
            &Bind::Root,
            &format!(
                "dn: ou=c,{SUFFIX}\nchangetype: add\nobjectClass: organizationalUnit\nou: c\n"
            ),
        )
        .expect_code(0, "a unit written on canopy");
    slapd
        .modify(
            &Bind::Root,
            &format!(
                "dn: ou=s,{SUFFIX}\nchangetype: add\nobjectClass: organizationalUnit\nou: s\n"
            ),
        )
        .expect_code(0, "a unit written on slapd");
    if let Err(diff) = wait_mesh_converged_ignoring(&pair, limit, &ignore) {
        failed("a unit written on each", diff);
    }
    // Both take writes at once (each under its own unit: slapd's conflict handling is its own).
    let (on_canopy, on_slapd) = std::thread::scope(|scope| {
        let a = scope.spawn(|| unit_writes(&canopy, "c", 30));
        let b = scope.spawn(|| unit_writes(&slapd, "s", 30));
        (a.join().unwrap(), b.join().unwrap())
    });
    // Then the same entries modified on one and then the other, serially.
    for (i, (rdn, _)) in on_canopy.iter().take(5).enumerate() {
        let target = if i % 2 == 0 { &slapd } else { &canopy };
        target
            .modify(
                &Bind::Root,
                &format!("dn: {rdn},ou=c,{SUFFIX}\nchangetype: modify\nreplace: sn\nsn: T{i}\n"),
            )
            .expect_code(0, "a modify of the other side's entry");
    }
    let text = match wait_mesh_converged_ignoring(&pair, limit, &ignore) {
        Ok(text) => text,
        Err(diff) => failed("writes on both providers", diff),
    };
    let final_held = held(&canopy);
    for (unit, remain) in [("c", &on_canopy), ("s", &on_slapd)] {
        for (rdn, token) in remain.iter() {
            assert!(
                check(
                    &Expect::Holds {
                        rdn: rdn.clone(),
                        parent: Some(unit.to_string()),
                        token: Some(token.clone()),
                    },
                    &final_held
                ),
                "{rdn},ou={unit} with {token} is missing:\n{text}"
            );
        }
    }
}

/// Whether Debian's slapd is installed; under CI its absence is a failure.
fn have_slapd() -> bool {
    let present = std::path::Path::new("/usr/sbin/slapd").exists();
    if !present {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "slapd is not installed (CI=true)"
        );
        println!("skipped: slapd is not installed");
    }
    present
}

/// One entry's attribute values, read as the root DN (empty when the entry does not exist).
fn values_of(server: &Server, dn: &str, attr: &str) -> Vec<String> {
    server
        .read(&Bind::Root, dn, &[attr])
        .records()
        .iter()
        .flat_map(|r| r.values(attr))
        .collect()
}

fn exists(server: &Server, dn: &str) -> bool {
    !server.read(&Bind::Root, dn, &["1.1"]).records().is_empty()
}

#[test]
fn each_conflict_rule_with_the_link_cut() {
    if !canopy_target() {
        return;
    }
    // Two providers that reach each other only through proxies: cut, each takes a conflicting
    // write (server 1's always after server 0's, so it has the later CSN), heal, converge.
    let proxies: Mutex<Vec<Proxy>> = Mutex::new(Vec::new());
    let servers = canopy_mesh(2, &|_, _, port| {
        let proxy = Proxy::start(port);
        let url = proxy.url();
        proxies.lock().unwrap().push(proxy);
        url
    });
    let proxies = proxies.into_inner().unwrap();
    converge(&servers, "the base loaded on server 0");
    let mut ldif = String::new();
    for ou in ["a", "b", "p", "q", "m"] {
        ldif.push_str(&format!(
            "dn: ou={ou},{SUFFIX}\nobjectClass: organizationalUnit\nou: {ou}\n\n"
        ));
    }
    ldif.push_str(&format!(
        "dn: cn=x,ou=a,{SUFFIX}\nobjectClass: person\ncn: x\nsn: X\n\n\
         dn: cn=d,ou=a,{SUFFIX}\nobjectClass: person\ncn: d\nsn: D\n\n\
         dn: cn=k,ou=m,{SUFFIX}\nobjectClass: person\ncn: k\nsn: K\n\n"
    ));
    servers[0]
        .add(&Bind::Root, &ldif)
        .expect_code(0, "the frame");
    converge(&servers, "the frame");
    for proxy in &proxies {
        proxy.cut();
    }
    let write = |s: usize, ldif: String| {
        servers[s].modify(&Bind::Root, &ldif).expect_code(0, &ldif);
    };
    let (s0, s1) = (0, 1);
    // Rule 1: the same entry modified on both: the later CSN wins.
    write(
        s0,
        format!("dn: cn=x,ou=a,{SUFFIX}\nchangetype: modify\nreplace: sn\nsn: from0\n"),
    );
    write(
        s1,
        format!("dn: cn=x,ou=a,{SUFFIX}\nchangetype: modify\nreplace: sn\nsn: from1\n"),
    );
    // Rule 2: the same DN added on both: the later add keeps it.
    write(
        s0,
        format!(
            "dn: cn=twin,ou=a,{SUFFIX}\nchangetype: add\nobjectClass: person\ncn: twin\nsn: add0\n"
        ),
    );
    write(
        s1,
        format!(
            "dn: cn=twin,ou=a,{SUFFIX}\nchangetype: add\nobjectClass: person\ncn: twin\nsn: add1\n"
        ),
    );
    // Rule 3: a delete wins against a later modify.
    write(s1, format!("dn: cn=d,ou=a,{SUFFIX}\nchangetype: delete\n"));
    write(
        s0,
        format!("dn: cn=d,ou=a,{SUFFIX}\nchangetype: modify\nreplace: sn\nsn: too-late\n"),
    );
    // Rule 3: a child added under a parent deleted meanwhile goes with it.
    write(s0, format!("dn: ou=q,{SUFFIX}\nchangetype: delete\n"));
    write(s1, format!("dn: cn=orphan,ou=q,{SUFFIX}\nchangetype: add\nobjectClass: person\ncn: orphan\nsn: O\n"));
    // Rule 4: a child added under a parent renamed meanwhile follows it.
    write(
        s0,
        format!("dn: ou=p,{SUFFIX}\nchangetype: modrdn\nnewrdn: ou=p2\ndeleteoldrdn: 1\n"),
    );
    write(
        s1,
        format!("dn: cn=kid,ou=p,{SUFFIX}\nchangetype: add\nobjectClass: person\ncn: kid\nsn: K\n"),
    );
    // Rule 4: a subtree moved on one side while its child is modified on the other.
    write(s0, format!("dn: ou=m,{SUFFIX}\nchangetype: modrdn\nnewrdn: ou=m\ndeleteoldrdn: 1\nnewsuperior: ou=b,{SUFFIX}\n"));
    write(
        s1,
        format!("dn: cn=k,ou=m,{SUFFIX}\nchangetype: modify\nreplace: sn\nsn: modified\n"),
    );
    let twin_uuid = values_of(&servers[1], &format!("cn=twin,ou=a,{SUFFIX}"), "entryUUID");
    for proxy in &proxies {
        proxy.heal();
    }
    converge(&servers, "after the cut healed");
    for (i, server) in servers.iter().enumerate() {
        let at = |dn: &str, attr: &str| values_of(server, &format!("{dn},{SUFFIX}"), attr);
        assert_eq!(at("cn=x,ou=a", "sn"), ["from1"], "server {i}: rule 1");
        assert_eq!(at("cn=twin,ou=a", "sn"), ["add1"], "server {i}: rule 2");
        assert_eq!(
            at("cn=twin,ou=a", "entryUUID"),
            twin_uuid,
            "server {i}: rule 2 uuid"
        );
        assert!(
            !exists(server, &format!("cn=d,ou=a,{SUFFIX}")),
            "server {i}: rule 3, resurrected"
        );
        assert!(
            !exists(server, &format!("ou=q,{SUFFIX}")),
            "server {i}: rule 3, parent"
        );
        assert!(
            !exists(server, &format!("cn=orphan,ou=q,{SUFFIX}")),
            "server {i}: rule 3, orphan"
        );
        assert_eq!(
            at("cn=kid,ou=p2", "sn"),
            ["K"],
            "server {i}: rule 4, child add"
        );
        assert!(
            !exists(server, &format!("ou=p,{SUFFIX}")),
            "server {i}: rule 4, old parent"
        );
        assert_eq!(
            at("cn=k,ou=m,ou=b", "sn"),
            ["modified"],
            "server {i}: rule 4, move"
        );
    }
}

#[test]
fn different_attributes_changed_across_a_cut_both_survive() {
    if !canopy_target() {
        return;
    }
    // Three providers that reach each other only through proxies: cut every link, change one entry
    // on each server (two different attributes, and one attribute on two servers), heal: the
    // per-attribute merge keeps every change whose attribute no later write touched.
    let proxies: Mutex<Vec<Proxy>> = Mutex::new(Vec::new());
    let servers = canopy_mesh(3, &|_, _, port| {
        let proxy = Proxy::start(port);
        let url = proxy.url();
        proxies.lock().unwrap().push(proxy);
        url
    });
    let proxies = proxies.into_inner().unwrap();
    converge(&servers, "the base loaded on server 0");
    let dn = format!("cn=shared,{SUFFIX}");
    servers[0]
        .add(
            &Bind::Root,
            &format!("dn: {dn}\nobjectClass: person\ncn: shared\nsn: S\ndescription: base\n"),
        )
        .expect_code(0, "the shared entry");
    converge(&servers, "the shared entry");
    for proxy in &proxies {
        proxy.cut();
    }
    let write = |s: usize, change: &str| {
        let ldif = format!("dn: {dn}\nchangetype: modify\n{change}");
        servers[s].modify(&Bind::Root, &ldif).expect_code(0, &ldif);
    };
    // In this order, so the CSNs ascend: server 0 changes description and sn, server 1 adds a
    // telephone number and changes sn too (later: its sn wins), server 2 adds a seeAlso.
    write(
        0,
        "replace: description\ndescription: from0\n-\nreplace: sn\nsn: sn0\n",
    );
    write(
        1,
        "add: telephoneNumber\ntelephoneNumber: 111\n-\nreplace: sn\nsn: sn1\n",
    );
    write(2, &format!("add: seeAlso\nseeAlso: cn=x,{SUFFIX}\n"));
    for server in &servers {
        // Each server holds only its own change while cut off.
        assert_eq!(values_of(server, &dn, "description").len(), 1);
    }
    for proxy in &proxies {
        proxy.heal();
    }
    converge(&servers, "after the cut healed");
    for (i, server) in servers.iter().enumerate() {
        assert_eq!(
            values_of(server, &dn, "description"),
            ["from0"],
            "server {i}"
        );
        assert_eq!(
            values_of(server, &dn, "telephoneNumber"),
            ["111"],
            "server {i}"
        );
        assert_eq!(
            values_of(server, &dn, "sn"),
            ["sn1"],
            "server {i}: the later sn"
        );
        assert_eq!(values_of(server, &dn, "seeAlso").len(), 1, "server {i}");
        // The per-attribute CSNs are not shown with "+", only when asked for by name.
        let all = server.read(&Bind::Root, &dn, &["*", "+"]);
        assert!(all.records()[0].values("canopyAttrCSN").is_empty());
        assert!(
            values_of(server, &dn, "canopyAttrCSN").len() >= 3,
            "server {i}"
        );
    }
    let exports: Vec<String> = servers.iter().map(sorted_export).collect();
    assert!(
        exports.iter().all(|e| *e == exports[0]),
        "the exports differ"
    );
    // The consumers' monitor entries count the merges (none refused by the schema).
    let mut merged = 0;
    for (i, server) in servers.iter().enumerate() {
        for j in (0..3).filter(|j| *j != i) {
            let rid = canopy_e2e::mesh::mesh_rid(i, j);
            for line in consumer_monitor(server, rid) {
                if let Some(rest) = line.strip_prefix("merged: ") {
                    let (n, fallbacks) = rest.split_once(' ').unwrap();
                    merged += n.parse::<u64>().unwrap();
                    assert_eq!(fallbacks, "(schema fallbacks 0)", "server {i} rid {rid}");
                }
            }
        }
    }
    assert!(merged >= 1, "no merge counted in cn=Monitor");
}

#[test]
fn overlays_act_where_the_write_is_made_and_their_changes_merge() {
    if !canopy_target() {
        return;
    }
    // Two providers running memberof and unique (mail), the link cut: server 0 adds a group naming
    // alice (its memberof writes alice's memberOf), server 1 then changes alice's description (a
    // later CSN), and each adds a person with the same new mail. After the heal both servers hold
    // both people (unique polices client writes, not replicated ones, as slapd's does) and alice
    // has the new memberOf and the new description: the overlay's change to alice is stamped with
    // the group add's CSN, so the merge keeps it beside the later description.
    let overlays = "[[overlay]]\nname = \"memberof\"\n\
                    [[overlay]]\nname = \"unique\"\nuri = [\"ldap:///ou=people,dc=example,dc=com?mail?sub\"]\n";
    let proxies: Mutex<Vec<Proxy>> = Mutex::new(Vec::new());
    let servers = canopy_mesh_with(
        2,
        &|_, _, port| {
            let proxy = Proxy::start(port);
            let url = proxy.url();
            proxies.lock().unwrap().push(proxy);
            url
        },
        &|i, urls| format!("{}{overlays}", canopy_e2e::mesh::mesh_toml(i, urls)),
    );
    let proxies = proxies.into_inner().unwrap();
    converge(&servers, "the base loaded on server 0");
    let alice = format!("uid=alice,ou=people,{SUFFIX}");
    let team = format!("cn=team,ou=groups,{SUFFIX}");
    for proxy in &proxies {
        proxy.cut();
    }
    servers[0]
        .add(
            &Bind::Root,
            &format!("dn: {team}\nobjectClass: groupOfNames\ncn: team\nmember: {alice}\n"),
        )
        .expect_code(0, "the group on server 0");
    assert!(values_of(&servers[0], &alice, "memberOf").contains(&team));
    servers[1]
        .modify(
            &Bind::Root,
            &format!(
                "dn: {alice}\nchangetype: modify\nreplace: description\ndescription: from 1\n"
            ),
        )
        .expect_code(0, "alice's description on server 1");
    for (i, server) in servers.iter().enumerate() {
        server
            .add(
                &Bind::Root,
                &format!(
                    "dn: uid=new{i},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: new{i}\n\
                     cn: new{i}\nsn: new{i}\nmail: shared@example.com\n"
                ),
            )
            .expect_code(0, "a person with the shared mail");
    }
    // While cut, unique still refuses a client's duplicate on each server.
    servers[0]
        .add(
            &Bind::Root,
            &format!(
                "dn: uid=dup,ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: dup\ncn: dup\n\
                 sn: dup\nmail: shared@example.com\n"
            ),
        )
        .expect_code(19, "a client's duplicate mail");
    for proxy in &proxies {
        proxy.heal();
    }
    converge(&servers, "after the cut healed");
    for (i, server) in servers.iter().enumerate() {
        assert!(
            values_of(server, &alice, "memberOf").contains(&team),
            "server {i}: alice lost the memberOf server 0's memberof wrote"
        );
        assert_eq!(
            values_of(server, &alice, "description"),
            ["from 1"],
            "server {i}"
        );
        for n in 0..2 {
            assert!(
                exists(server, &format!("uid=new{n},ou=people,{SUFFIX}")),
                "server {i}: uid=new{n} missing"
            );
        }
    }
}

#[test]
fn tombstone_purge_removes_old_conflict_records() {
    if !canopy_target() {
        return;
    }
    // An age bound of one second, checked every second: the tombstone of a delete goes, and the
    // log says so (docs/replication.md, the risk of a peer cut off longer than the bound).
    let servers = canopy_mesh_with(2, &direct, &|i, urls| {
        format!(
            "tombstone_purge = \"00:00:01 00:00:01\"\n{}",
            canopy_e2e::mesh::mesh_toml(i, urls)
        )
    });
    converge(&servers, "the base loaded on server 0");
    let dn = format!("cn=gone,{SUFFIX}");
    servers[0]
        .add(
            &Bind::Root,
            &format!("dn: {dn}\nobjectClass: person\ncn: gone\nsn: G\n"),
        )
        .expect_code(0, "add");
    converge(&servers, "the add");
    servers[1]
        .modify(&Bind::Root, &format!("dn: {dn}\nchangetype: delete\n"))
        .expect_code(0, "delete");
    converge(&servers, "the delete");
    let limit = Duration::from_secs(20);
    for (i, server) in servers.iter().enumerate() {
        assert!(
            canopy_e2e::consumer_support::wait_log(server, "purged old tombstones", limit),
            "server {i}: no purge logged"
        );
        assert!(!exists(server, &dn), "server {i}");
    }
}

/// A BER TLV (definite length, short or long form).
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = body.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(body);
    out
}

/// A SearchResultEntry (message 2) for `dn` (a person) with a Sync State control (add) carrying a
/// cookie, as a provider sends one during a refresh.
fn sync_entry(dn: &str) -> Vec<u8> {
    let octets = |s: &[u8]| tlv(0x04, s);
    let attr = |name: &str, value: &str| {
        tlv(
            0x30,
            &[
                octets(name.as_bytes()),
                tlv(0x31, &octets(value.as_bytes())),
            ]
            .concat(),
        )
    };
    let attrs = [
        attr("objectClass", "person"),
        attr("cn", "x"),
        attr("sn", "X"),
        attr("entryUUID", "0b0c9a4e-1111-4222-8333-444455556666"),
        attr("entryCSN", "20261127000000.000000Z#000000#001#000000"),
    ]
    .concat();
    let entry = tlv(0x64, &[octets(dn.as_bytes()), tlv(0x30, &attrs)].concat());
    let uuid: [u8; 16] = [
        0x0b, 0x0c, 0x9a, 0x4e, 0x11, 0x11, 0x42, 0x22, 0x83, 0x33, 0x44, 0x44, 0x55, 0x55, 0x66,
        0x66,
    ];
    let state = tlv(
        0x30,
        &[
            tlv(0x0a, &[1]),
            octets(&uuid),
            octets(b"rid=006,csn=20261127000000.000000Z#000000#001#000000"),
        ]
        .concat(),
    );
    let control = tlv(
        0x30,
        &[octets(b"1.3.6.1.4.1.4203.1.9.1.2"), octets(&state)].concat(),
    );
    tlv(
        0x30,
        &[tlv(0x02, &[2]), entry, tlv(0xa0, &control)].concat(),
    )
}

#[test]
fn a_change_outside_the_suffix_is_refused_and_shown() {
    if !canopy_target() {
        return;
    }
    // A peer (a fake provider) that sends an entry of another suffix: the batch is refused, the
    // session fails with a clear line and lastError, nothing is applied, and it is retried.
    let (port, fake) =
        canopy_e2e::consumer_support::fake_provider(2, sync_entry("cn=x,dc=elsewhere,dc=org"));
    let toml = format!(
        "server_id = 1\nmultiprovider = true\n[[syncrepl]]\nrid = 6\nprovider = \"ldap://127.0.0.1:{port}\"\n\
         searchbase = \"{SUFFIX}\"\ntype = \"refreshAndPersist\"\nretry = \"1 +\"\ntimeout = 5\n"
    );
    let c = canopy_e2e::consumer_support::canopy_consumer(&toml);
    assert_eq!(
        fake.join().unwrap(),
        2,
        "the consumer came back after the refusal"
    );
    let limit = Duration::from_secs(10);
    assert!(
        canopy_e2e::consumer_support::wait_log(&c, "outside this database's suffix", limit),
        "{}",
        c.log()
    );
    let log = c.log();
    assert!(
        log.contains("session failed") && log.contains(&format!("127.0.0.1:{port}")),
        "{log}"
    );
    let description = consumer_monitor(&c, 6);
    assert!(
        description
            .iter()
            .any(|d| d.starts_with("lastError:") && d.contains("outside this database's suffix")),
        "{description:?}"
    );
    assert!(
        c.search(
            &Bind::Root,
            &["-b", "dc=elsewhere,dc=org", "-s", "base", "1.1"]
        )
        .code
            != 0,
        "nothing of the other suffix was stored"
    );
    assert!(c.alive(), "the server survives the refusal");
}

/// The suffix entry's description values on `server`, sorted.
fn suffix_descriptions(server: &Server) -> Vec<String> {
    let out = server.search(&Bind::Root, &["-b", SUFFIX, "-s", "base", "description"]);
    assert_eq!(out.code, 0, "search of the suffix: {}", out.stderr);
    let mut values: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("description: "))
        .map(str::to_string)
        .collect();
    values.sort();
    values
}

#[test]
fn a_provider_restored_from_an_old_backup_is_detected_and_catches_up() {
    if !canopy_target() {
        return;
    }
    let mut servers = canopy_mesh(2, &direct);
    converge(&servers, "the base loaded on server 0");
    let scratch = canopy_e2e::tempdir::TempDir::new("mp-backup");
    let backup = scratch.path().join("backup");
    let backup = backup.to_str().expect("a UTF-8 path");
    servers[0]
        .canopy_tool("backup", &[backup])
        .expect_code(0, "canopy backup of server 0");
    // Writes on server 0 after its backup, acknowledged and replicated: the restore loses them there.
    for i in 0..5 {
        servers[0]
            .modify(
                &Bind::Root,
                &format!(
                    "dn: {SUFFIX}\nchangetype: modify\nadd: description\ndescription: after backup {i}\n"
                ),
            )
            .expect_code(0, "a write on server 0 after its backup");
    }
    converge(&servers, "the writes after the backup");
    let expected = suffix_descriptions(&servers[1]);
    let after_backup = |values: &[String]| {
        values
            .iter()
            .filter(|v| v.starts_with("after backup"))
            .count()
    };
    assert_eq!(after_backup(&expected), 5, "{expected:?}");
    servers[0].terminate();
    servers[0]
        .canopy_tool("restore", &[backup, "--force"])
        .expect_code(0, "canopy restore of server 0's old backup");
    canopy_e2e::consumer_support::relaunch_same_port(&mut servers[0]);
    // Server 1 holds changes with server 0's own server_id that the restored server never made: it is
    // said clearly, and the restored server gets them back from its peer.
    assert!(
        canopy_e2e::consumer_support::wait_log(
            &servers[0],
            "restored from an old backup",
            Duration::from_secs(30)
        ),
        "no line about an old backup in the restored server's log:\n{}",
        servers[0].log()
    );
    converge(&servers, "server 0 restored from its old backup");
    assert_eq!(suffix_descriptions(&servers[0]), expected);
    // New writes on the restored server replicate as usual.
    servers[0]
        .modify(
            &Bind::Root,
            &format!(
                "dn: {SUFFIX}\nchangetype: modify\nadd: description\ndescription: after restore\n"
            ),
        )
        .expect_code(0, "a write on the restored server");
    converge(&servers, "a write on the restored server");
    let last = suffix_descriptions(&servers[1]);
    assert_eq!(last.len(), expected.len() + 1, "{last:?}");
    assert!(last.iter().any(|v| v == "after restore"), "{last:?}");
}
