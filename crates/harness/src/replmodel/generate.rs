//! From a seed to a scenario: the topology (which server replicates from which, canopy or slapd),
//! what each server holds before it starts, and the events (client writes on writable servers,
//! kill -9 and restart, SIGSTOP and SIGCONT, network cuts and heals, pauses), all decided before
//! anything runs so that a seed replays exactly.

use std::collections::BTreeSet;

use super::directory::{self, key, top_unit, within, Entry, Kind, Mod, ModKind, Model, Names};
use super::directory::{Write, SHARED_UNIT};
use super::Rng;
use crate::server::{Target, SUFFIX};

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
}

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
/// so any ten consecutive seeds cover every shape with and without slapd.
pub fn generate(seed: u64) -> Scenario {
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
            target: if slapd == Some(i) {
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
    let loads = loads_for(preload, n, mesh, &directory, &mut rng, &mut names);
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
    };
    let events = Generator::new(&scenario, rng, names).events();
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Up,
    Down,
    Paused,
}

/// The event generator: its own model of the directory (every write it makes is valid there) and
/// of which servers are up and which links are cut.
struct Generator<'a> {
    s: &'a Scenario,
    rng: Rng,
    names: Names,
    model: Model,
    states: Vec<State>,
    cut: Vec<bool>,
    out: Vec<Event>,
}

impl<'a> Generator<'a> {
    fn new(s: &'a Scenario, rng: Rng, names: Names) -> Generator<'a> {
        Generator {
            s,
            rng,
            names,
            model: Model::from_entries(&s.directory),
            states: vec![State::Up; s.nodes.len()],
            cut: vec![false; s.links.len()],
            out: Vec::new(),
        }
    }

    fn events(mut self) -> Vec<Event> {
        if self.rng.chance(50) || (self.s.is_mesh() && self.s.preload == Preload::Empty) {
            self.out.push(Event::Settle);
        }
        let count = 15 + self.rng.below(31);
        for _ in 0..count {
            let r = self.rng.below(100);
            let up: Vec<usize> = self.with_state(State::Up);
            let down = self.with_state(State::Down);
            let paused = self.with_state(State::Paused);
            let event = if r < 55 {
                self.write()
            } else if r < 61 {
                self.rng.pick(&up).map(|&i| Event::Kill(i))
            } else if r < 69 {
                self.rng.pick(&down).map(|&i| Event::Restart(i))
            } else if r < 73 && paused.is_empty() {
                self.rng.pick(&up).map(|&i| Event::Pause(i))
            } else if r < 79 {
                self.rng.pick(&paused).map(|&i| Event::Resume(i))
            } else if r < 85 {
                let healed: Vec<usize> = (0..self.cut.len()).filter(|&l| !self.cut[l]).collect();
                self.rng.pick(&healed).map(|&l| Event::Cut(l))
            } else if r < 91 {
                let cut: Vec<usize> = (0..self.cut.len()).filter(|&l| self.cut[l]).collect();
                self.rng.pick(&cut).map(|&l| Event::Heal(l))
            } else if r < 96 || !self.s.is_mesh() {
                Some(Event::Sleep(100 + self.rng.below(1400) as u64))
            } else {
                self.conflict()
            };
            let Some(event) = event.or_else(|| self.write()) else {
                continue;
            };
            match &event {
                Event::Kill(i) => self.states[*i] = State::Down,
                Event::Restart(i) | Event::Resume(i) => self.states[*i] = State::Up,
                Event::Pause(i) => self.states[*i] = State::Paused,
                Event::Cut(l) => self.cut[*l] = true,
                Event::Heal(l) => self.cut[*l] = false,
                _ => {}
            }
            self.out.push(event);
        }
        self.out
    }

    fn with_state(&self, state: State) -> Vec<usize> {
        (0..self.states.len())
            .filter(|&i| self.states[i] == state)
            .collect()
    }

    /// Whether server `w` may write `dn`: a single provider writes anything but the fixed entries;
    /// a multi-provider peer writes below the units it owns.
    fn in_domain(&self, w: usize, dn: &str) -> bool {
        if within(dn, SHARED_UNIT) || within(dn, super::directory::REPLICATOR_DN) {
            return false;
        }
        if !self.s.is_mesh() {
            return true;
        }
        let Some(top) = top_unit(dn) else {
            return false;
        };
        self.s.owners.iter().any(|(u, o)| *u == top && *o == w)
    }

    /// Entries `w` may rename or delete: its domain without the suffix (and, multi-provider, without
    /// the owned units themselves).
    fn movable(&self, w: usize, kind: Kind, dn: &str) -> bool {
        kind != Kind::Suffix
            && kind != Kind::Fixed
            && self.in_domain(w, dn)
            && !(self.s.is_mesh() && top_unit(dn).as_deref() == Some(key(dn).as_str()))
    }

    fn write(&mut self) -> Option<Event> {
        let writers: Vec<usize> = (0..self.s.nodes.len())
            .filter(|&i| self.s.nodes[i].writable && self.states[i] == State::Up)
            .collect();
        let &w = self.rng.pick(&writers)?;
        let all: Vec<(String, Kind)> = self
            .model
            .held()
            .map(|h| (h.entry.dn.clone(), h.entry.kind))
            .collect();
        let containers: Vec<String> = all
            .iter()
            .filter(|(dn, k)| {
                (*k == Kind::Unit && self.in_domain(w, dn))
                    || (*k == Kind::Suffix && !self.s.is_mesh())
            })
            .map(|(dn, _)| dn.clone())
            .collect();
        let movable: Vec<(String, Kind)> = all
            .iter()
            .filter(|(dn, k)| self.movable(w, *k, dn))
            .cloned()
            .collect();
        let modifiable: Vec<(String, Kind)> = all
            .iter()
            .filter(|(dn, k)| *k != Kind::Fixed && *k != Kind::Suffix && self.in_domain(w, dn))
            .cloned()
            .collect();
        let r = self.rng.below(100);
        let write = if r < 30 || movable.is_empty() {
            self.add(&containers, &all)?
        } else if r < 65 {
            let (dn, kind) = self.rng.pick(&modifiable)?.clone();
            self.modify(&dn, kind, &all)?
        } else if r < 80 {
            let (dn, kind) = self.rng.pick(&movable)?.clone();
            self.rename(&dn, kind, &containers)
        } else if r < 92 {
            let leaves: Vec<&(String, Kind)> = movable
                .iter()
                .filter(|(dn, _)| !self.model.has_children(dn))
                .collect();
            let (dn, _) = (*self.rng.pick(&leaves)?).clone();
            Write::Delete { dn }
        } else {
            let units: Vec<&(String, Kind)> =
                movable.iter().filter(|(_, k)| *k == Kind::Unit).collect();
            let (dn, _) = (*self.rng.pick(&units)?).clone();
            Write::DeleteSubtree {
                dn,
                recursive: self.rng.chance(50),
            }
        };
        self.model.apply(&write).ok()?;
        Some(Event::Write { server: w, write })
    }

    fn add(&mut self, containers: &[String], all: &[(String, Kind)]) -> Option<Write> {
        let parent = self.rng.pick(containers)?.clone();
        let n = self.names.next();
        let persons: Vec<&String> = all
            .iter()
            .filter(|(_, k)| *k == Kind::Person)
            .map(|(dn, _)| dn)
            .collect();
        let r = self.rng.below(100);
        let entry = if r < 15 && parent.matches(',').count() < 5 {
            directory::unit(&parent, &format!("n{n}"), &mut self.rng)
        } else if r < 30 && !persons.is_empty() {
            let member = (*self.rng.pick(&persons)?).clone();
            directory::group(&parent, n, vec![member], &mut self.rng)
        } else {
            directory::person(&parent, n, &mut self.rng)
        };
        Some(Write::Add(entry))
    }

    fn modify(&mut self, dn: &str, kind: Kind, all: &[(String, Kind)]) -> Option<Write> {
        let entry = self.model.get(dn)?.entry.clone();
        let n = self.names.next();
        let descriptions = entry.values("description");
        let mut mods = Vec::new();
        let m = |kind, attr: &str, values: Vec<String>| Mod {
            kind,
            attr: attr.to_string(),
            values,
        };
        // At most one change per attribute, so the order of the changes never matters.
        let r = self.rng.below(4);
        mods.push(if r == 0 || descriptions.is_empty() && r == 2 {
            m(ModKind::Replace, "description", vec![format!("r{n}")])
        } else if r == 1 {
            m(ModKind::Add, "description", vec![format!("a{n}")])
        } else if r == 2 {
            let v = self.rng.pick(&descriptions)?.clone();
            m(ModKind::Delete, "description", vec![v])
        } else if descriptions.is_empty() {
            m(
                ModKind::Replace,
                "description",
                vec![format!("r{n}"), format!("q{n}")],
            )
        } else {
            m(ModKind::Delete, "description", vec![])
        });
        match kind {
            Kind::Person if self.rng.chance(50) => {
                mods.push(match self.rng.below(3) {
                    0 => m(ModKind::Replace, "sn", vec![format!("T{n}")]),
                    1 => m(
                        ModKind::Replace,
                        "telephoneNumber",
                        vec![format!("+1 555 {n:04}")],
                    ),
                    _ => m(ModKind::Add, "mail", vec![format!("m{n}@example.com")]),
                });
            }
            Kind::Group if self.rng.chance(60) => {
                let members = entry.values("member");
                let candidates: Vec<&String> = all
                    .iter()
                    .filter(|(d, k)| {
                        *k == Kind::Person && !members.iter().any(|m| m.eq_ignore_ascii_case(d))
                    })
                    .map(|(d, _)| d)
                    .collect();
                if members.len() > 1 && self.rng.chance(40) {
                    let v = self.rng.pick(&members)?.clone();
                    mods.push(m(ModKind::Delete, "member", vec![v]));
                } else if let Some(d) = self.rng.pick(&candidates) {
                    mods.push(m(ModKind::Add, "member", vec![(*d).clone()]));
                }
            }
            _ => {}
        }
        Some(Write::Modify {
            dn: dn.to_string(),
            mods,
        })
    }

    fn rename(&mut self, dn: &str, kind: Kind, containers: &[String]) -> Write {
        let n = self.names.next();
        let new_rdn = match kind {
            Kind::Person => format!("uid=u{n}"),
            Kind::Group => format!("cn=g{n}"),
            _ => format!("ou=n{n}"),
        };
        let parent = directory::parent_of(dn);
        let targets: Vec<&String> = containers
            .iter()
            .filter(|c| !within(c, dn) && key(c) != key(parent))
            .filter(|c| c.matches(',').count() < 6)
            .collect();
        let new_superior = if self.rng.chance(40) {
            self.rng.pick(&targets).map(|c| (*c).clone())
        } else {
            None
        };
        Write::Rename {
            dn: dn.to_string(),
            new_rdn,
            delete_old: self.rng.chance(85),
            new_superior,
        }
    }

    /// Two writes of one thing on two providers at once: a description replaced on both, or (when
    /// every server is canopy) one DN added on both under the shared unit.
    fn conflict(&mut self) -> Option<Event> {
        let up: Vec<usize> = (0..self.s.nodes.len())
            .filter(|&i| self.states[i] == State::Up)
            .collect();
        if up.len() < 2 {
            return None;
        }
        let a = up[self.rng.below(up.len())];
        let others: Vec<usize> = up.into_iter().filter(|&i| i != a).collect();
        let b = *self.rng.pick(&others)?;
        let n = self.names.next();
        if !self.s.needs_slapd() && self.rng.chance(50) {
            let entry = directory::person(SHARED_UNIT, n, &mut self.rng);
            let mut other = entry.clone();
            for (attr, values) in other.attrs.iter_mut() {
                if attr == "description" {
                    *values = vec![format!("other {n}")];
                }
            }
            if !other.attrs.iter().any(|(a, _)| a == "description") {
                other
                    .attrs
                    .push(("description".into(), vec![format!("other {n}")]));
            }
            self.model.add_uncertain(&entry, "description");
            return Some(Event::Conflict {
                servers: [a, b],
                writes: [Write::Add(entry), Write::Add(other)],
            });
        }
        let persons: Vec<String> = self
            .model
            .held()
            .filter(|h| h.entry.kind == Kind::Person && !within(&h.entry.dn, SHARED_UNIT))
            .map(|h| h.entry.dn.clone())
            .collect();
        let dn = self.rng.pick(&persons)?.clone();
        let replace = |v: String| Write::Modify {
            dn: dn.clone(),
            mods: vec![Mod {
                kind: ModKind::Replace,
                attr: "description".into(),
                values: vec![v],
            }],
        };
        self.model.mark_uncertain(&dn, "description");
        Some(Event::Conflict {
            servers: [a, b],
            writes: [replace(format!("c{n}a")), replace(format!("c{n}b"))],
        })
    }
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
