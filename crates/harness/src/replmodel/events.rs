//! The events of a scenario: client writes that are valid in the generator's own model of the
//! directory (each on a server that is up and may write there), kill -9 and restarts, SIGSTOP and
//! SIGCONT, cuts and heals of links, pauses, and concurrent writes on two multi-provider peers.

use super::directory::{self, key, top_unit, within, Kind, Mod, ModKind, Model, Names};
use super::directory::{Write, SHARED_UNIT};
use super::generate::{Event, Preload, Scenario};
use super::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Up,
    Down,
    Paused,
}

/// The event generator: its own model of the directory (every write it makes is valid there) and
/// of which servers are up and which links are cut.
pub(super) struct Generator<'a> {
    s: &'a Scenario,
    rng: Rng,
    names: Names,
    model: Model,
    states: Vec<State>,
    cut: Vec<bool>,
    out: Vec<Event>,
}

impl<'a> Generator<'a> {
    pub(super) fn new(s: &'a Scenario, rng: Rng, names: Names) -> Generator<'a> {
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

    pub(super) fn events(mut self) -> Vec<Event> {
        // A multi-provider group first merges the copies its peers loaded (each with its own
        // entryUUIDs) or brings data to the empty ones; before that a write has no single target.
        if self.rng.chance(50) || (self.s.is_mesh() && self.s.preload != Preload::Export) {
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
            && self.s.glued.as_deref().map(key) != Some(key(dn))
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
            // No rename crosses databases (both servers refuse it: affectsMultipleDSAs).
            .filter(|c| self.database_of(c) == self.database_of(dn))
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

    /// Which database holds `dn`: 2 below (or at) the glued unit, else 1.
    fn database_of(&self, dn: &str) -> usize {
        match &self.s.glued {
            Some(glued) if within(dn, glued) => 2,
            _ => 1,
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
