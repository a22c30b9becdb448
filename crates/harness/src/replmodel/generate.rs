//! From a seed to a scenario: the topology (which server replicates from which, canopy or slapd),
//! what each server holds before it starts, and the events (client writes on writable servers,
//! kill -9 and restart, SIGSTOP and SIGCONT, network cuts and heals, pauses), all decided before
//! anything runs so that a seed replays exactly.

use std::collections::BTreeSet;

use super::directory::{self, key, Entry, Kind, Names, Write};
use super::Rng;
use crate::base::SUFFIX;
use crate::server::Target;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    OneToOne,
    OneToMany(usize),
    Cascade,
    Mesh(usize),
}

/// What a server holds before it is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preload {
    /// Data on the (first) provider only.
    Empty,
    /// The same LDIF imported on every server (each gives each entry its own entryUUID).
    Same,
    /// An older copy (a subset; other values too unless multi-provider) on some servers.
    Older,
    /// A copy with other values and entries the provider never had on some consumers.
    Divergent,
    /// The first server's export (entryUUID, entryCSN, contextCSN) imported on the others.
    Export,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    Nothing,
    Ldif(Vec<Entry>),
    /// `canopy export` or `slapcat` of server 0 after its own load.
    ExportOfFirst,
}

#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub target: Target,
    /// Takes client writes (a provider that consumes from nobody, or a multi-provider peer).
    pub writable: bool,
    /// A session log of 5 records instead of the default, so consumers often get the present phase.
    pub short_sessionlog: bool,
}

/// A consumer's `[[syncrepl]]` (or `syncrepl` line) on a provider, through a proxy of its own.
#[derive(Debug, Clone)]
pub struct Link {
    pub consumer: usize,
    pub provider: usize,
    pub rid: usize,
    pub refresh_only: bool,
}

#[derive(Debug, Clone)]
pub enum Event {
    Write {
        server: usize,
        write: Write,
    },
    /// Two writes sent at once to two providers; only convergence is checked for what they touch.
    Conflict {
        servers: [usize; 2],
        writes: [Write; 2],
    },
    Kill(usize),
    Restart(usize),
    Pause(usize),
    Resume(usize),
    Cut(usize),
    Heal(usize),
    Sleep(u64),
    /// Waits (at most 20 s, never failing) until every server holds the same entries.
    Settle,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    pub shape: Shape,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<Link>,
    pub preload: Preload,
    /// What server 0 holds at the start: the expected directory before any write.
    pub directory: Vec<Entry>,
    pub loads: Vec<Load>,
    pub events: Vec<Event>,
    /// Multi-provider: the unit right below the suffix (a key) each server writes in.
    pub owners: Vec<(String, usize)>,
    /// A unit right below the suffix that is a glued database of its own on every server
    /// (`[[database]]` with `subordinate = true`, slapd's `subordinate`), fed on every link by a
    /// consumer of its own (rid + [`GLUED_RID`]); None: one database.
    pub glued: Option<String>,
}

/// What a glued database's consumer adds to its link's rid.
pub const GLUED_RID: usize = 100;

impl Scenario {
    pub fn needs_slapd(&self) -> bool {
        self.nodes.iter().any(|n| n.target == Target::Slapd)
    }

    pub fn is_mesh(&self) -> bool {
        matches!(self.shape, Shape::Mesh(_))
    }

    /// "s1 (canopy consumer of s0)".
    pub fn node_name(&self, i: usize) -> String {
        let target = match self.nodes[i].target {
            Target::Canopy => "canopy",
            Target::Slapd => "slapd",
        };
        let providers: Vec<String> = self
            .links
            .iter()
            .filter(|l| l.consumer == i)
            .map(|l| format!("s{}", l.provider))
            .collect();
        let role = match (self.is_mesh(), providers.is_empty()) {
            (true, _) => format!("multi-provider peer of {}", providers.join(", ")),
            (false, true) => "provider".to_string(),
            (false, false) => format!("consumer of {}", providers.join(", ")),
        };
        format!("s{i} ({target} {role})")
    }

    /// The topology, the preload and the events, one per line.
    pub fn describe(&self) -> String {
        let mut out = format!("seed {}\ntopology: {:?}\n", self.seed, self.shape);
        for i in 0..self.nodes.len() {
            let log = if self.nodes[i].short_sessionlog {
                ", session log of 5"
            } else {
                ""
            };
            out.push_str(&format!("  {}{log}\n", self.node_name(i)));
        }
        for (n, l) in self.links.iter().enumerate() {
            let kind = if l.refresh_only {
                "refreshOnly every 1 s"
            } else {
                "refreshAndPersist"
            };
            out.push_str(&format!(
                "  link {n}: s{} <- s{} rid {} {kind}\n",
                l.consumer, l.provider, l.rid
            ));
        }
        out.push_str(&format!(
            "preload: {:?} ({} entries on s0)\n",
            self.preload,
            self.directory.len()
        ));
        for (i, load) in self.loads.iter().enumerate() {
            let what = match load {
                Load::Nothing => "nothing".to_string(),
                Load::Ldif(e) if *e == self.directory => format!("s0's LDIF ({})", e.len()),
                Load::Ldif(e) => format!("its own LDIF ({} entries)", e.len()),
                Load::ExportOfFirst => "s0's export".to_string(),
            };
            out.push_str(&format!("  s{i} loads {what}\n"));
        }
        if let Some(glued) = &self.glued {
            out.push_str(&format!(
                "glued database {glued} on every server, a consumer of its own on every link\n"
            ));
        }
        for (unit, owner) in &self.owners {
            out.push_str(&format!("  s{owner} writes under {unit}\n"));
        }
        out.push_str(&format!("events ({}):\n", self.events.len()));
        for (n, e) in self.events.iter().enumerate() {
            out.push_str(&format!("  {:>3}. {}\n", n + 1, describe_event(e)));
        }
        out
    }
}

pub fn describe_event(e: &Event) -> String {
    match e {
        Event::Write { server, write } => format!("s{server}: {}", write.describe()),
        Event::Conflict { servers, writes } => format!(
            "at once: s{}: {} | s{}: {}",
            servers[0],
            writes[0].describe(),
            servers[1],
            writes[1].describe()
        ),
        Event::Kill(i) => format!("kill -9 s{i}"),
        Event::Restart(i) => format!("restart s{i} on its port"),
        Event::Pause(i) => format!("SIGSTOP s{i}"),
        Event::Resume(i) => format!("SIGCONT s{i}"),
        Event::Cut(l) => format!("cut link {l}"),
        Event::Heal(l) => format!("heal link {l}"),
        Event::Sleep(ms) => format!("sleep {ms} ms"),
        Event::Settle => "settle (wait up to 20 s for equal contents)".to_string(),
    }
}

/// The scenario of `seed`. The shape is `seed % 5` and slapd takes a role when `seed / 5` is odd,
/// so any ten consecutive seeds cover every shape with and without slapd. With
/// `CANOPY_E2E_TARGET=slapd` every server is slapd (the same topology, loads and events as far as
/// they do not depend on the servers' kinds): what the reference does with a scenario.
pub fn generate(seed: u64) -> Scenario {
    generate_for(seed, Target::from_env() == Target::Slapd)
}

/// [`generate`], with every server slapd when `all_slapd`.
pub fn generate_for(seed: u64, all_slapd: bool) -> Scenario {
    let mut rng = Rng::new(seed);
    let mut names = Names::default();
    let shape = match seed % 5 {
        0 => Shape::OneToOne,
        1 => Shape::OneToMany(2 + rng.below(2)),
        2 => Shape::Cascade,
        3 => Shape::Mesh(2),
        _ => Shape::Mesh(3),
    };
    let n = match shape {
        Shape::OneToOne | Shape::Mesh(2) => 2,
        Shape::OneToMany(k) => k + 1,
        Shape::Cascade | Shape::Mesh(_) => 3,
    };
    let slapd = ((seed / 5) % 2 == 1).then(|| rng.below(n));
    let mesh = matches!(shape, Shape::Mesh(_));
    let nodes: Vec<NodeSpec> = (0..n)
        .map(|i| NodeSpec {
            target: if all_slapd || slapd == Some(i) {
                Target::Slapd
            } else {
                Target::Canopy
            },
            writable: mesh || i == 0,
            short_sessionlog: rng.chance(30),
        })
        .collect();
    let mut links = Vec::new();
    let pairs: Vec<(usize, usize)> = match shape {
        Shape::OneToOne | Shape::OneToMany(_) => (1..n).map(|c| (c, 0)).collect(),
        Shape::Cascade => vec![(1, 0), (2, 1)],
        Shape::Mesh(_) => (0..n)
            .flat_map(|c| (0..n).filter(move |p| *p != c).map(move |p| (c, p)))
            .collect(),
    };
    for (consumer, provider) in pairs {
        let rid = if mesh {
            crate::mesh::mesh_rid(consumer, provider)
        } else {
            links.len() + 1
        };
        links.push(Link {
            consumer,
            provider,
            rid,
            refresh_only: !mesh && rng.chance(25),
        });
    }
    let preload = if mesh {
        *rng.pick(&[
            Preload::Empty,
            Preload::Same,
            Preload::Older,
            Preload::Export,
        ])
        .unwrap_or(&Preload::Empty)
    } else {
        *rng.pick(&[
            Preload::Empty,
            Preload::Same,
            Preload::Older,
            Preload::Divergent,
            Preload::Export,
        ])
        .unwrap_or(&Preload::Empty)
    };
    let directory = directory::generate_directory(&mut rng, &mut names);
    let mut loads = loads_for(preload, n, mesh, &directory, &mut rng, &mut names);
    // slapd's consumer keeps its own entry where that entry's entryCSN is newer than the provider's,
    // as an LDIF loaded after the provider's makes it: a slapd consumer outside a multi-provider
    // group is given the provider's export (the way slapd documents) instead of an LDIF of its own.
    for (i, load) in loads.iter_mut().enumerate().skip(1) {
        if !mesh && nodes[i].target == Target::Slapd && matches!(load, Load::Ldif(_)) {
            *load = Load::ExportOfFirst;
        }
    }
    let owners = if mesh {
        let mut units: Vec<String> = directory
            .iter()
            .filter(|e| e.kind == Kind::Unit && directory::parent_of(&e.dn) == SUFFIX)
            .map(|e| key(&e.dn))
            .collect();
        units.sort();
        units
            .into_iter()
            .enumerate()
            .map(|(i, u)| (u, i % n))
            .collect()
    } else {
        Vec::new()
    };
    // From a generator of its own, so that the scenarios of one database stay what they were.
    let glued = {
        let mut glue = Rng::new(seed ^ 0x676C_7565_6462);
        let units: Vec<&Entry> = directory
            .iter()
            .filter(|e| {
                e.kind == Kind::Unit
                    && directory::parent_of(&e.dn) == SUFFIX
                    && key(&e.dn) != key(directory::SHARED_UNIT)
            })
            .collect();
        match glue.chance(35) {
            true => glue.pick(&units).map(|e| e.dn.clone()),
            false => None,
        }
    };
    let mut scenario = Scenario {
        seed,
        shape,
        nodes,
        links,
        preload,
        directory,
        loads,
        events: Vec::new(),
        owners,
        glued,
    };
    let events = super::events::Generator::new(&scenario, rng, names).events();
    scenario.events = events;
    scenario
}

fn loads_for(
    preload: Preload,
    n: usize,
    mesh: bool,
    directory: &[Entry],
    rng: &mut Rng,
    names: &mut Names,
) -> Vec<Load> {
    let full = Load::Ldif(directory.to_vec());
    let mut loads = vec![full.clone()];
    // Older and divergent copies go to a random non-empty set of the other servers.
    let mut chosen: Vec<bool> = (1..n).map(|_| rng.chance(60)).collect();
    if !chosen.contains(&true) {
        let i = rng.below(chosen.len());
        chosen[i] = true;
    }
    for pick in chosen {
        loads.push(match preload {
            Preload::Empty => Load::Nothing,
            Preload::Same => full.clone(),
            Preload::Export => Load::ExportOfFirst,
            Preload::Older if pick => Load::Ldif(directory::older_copy(directory, rng, !mesh)),
            Preload::Divergent if pick => {
                Load::Ldif(directory::divergent_copy(directory, rng, names))
            }
            Preload::Older | Preload::Divergent => full.clone(),
        });
    }
    loads
}

/// The DNs (keys) every load holds, for the "nothing present everywhere disappears" invariant; an
/// export holds exactly server 0's entries.
pub fn everywhere_at_start(s: &Scenario) -> BTreeSet<String> {
    let mut common: BTreeSet<String> = s.directory.iter().map(|e| key(&e.dn)).collect();
    for load in &s.loads {
        match load {
            Load::Nothing => common.clear(),
            Load::Ldif(entries) => {
                let here: BTreeSet<String> = entries.iter().map(|e| key(&e.dn)).collect();
                common.retain(|k| here.contains(k));
            }
            Load::ExportOfFirst => {}
        }
    }
    common
}
