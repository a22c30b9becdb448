//! A seeded, model-based replication harness: from one seed it generates a topology (1→1, 1→N,
//! cascade, 2- and 3-server multi-provider, each also with Debian's slapd in one role), the data each
//! server holds before replication starts, and a list of client writes and faults (kill -9, network
//! cuts through [`crate::mesh::Proxy`], SIGSTOP); it runs them on real servers, then checks that every
//! server converges to the same entries, that no acknowledged write is lost, and that no DN present on
//! every server at the start disappears unless a client deleted it. docs/testing.md tells how to run
//! and replay it.

mod directory;
mod events;
mod generate;
mod model;
mod run;
mod setup;

pub use directory::{Entry, Kind, Model, Write};
pub use generate::{generate, Event, Link, Load, NodeSpec, Preload, Scenario, Shape};
pub use run::{run_seed, slapd_installed, SeedReport};

/// splitmix64: a small, fast, seedable generator; enough for choosing test steps.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// True with `percent` % probability.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len()))
        }
    }
}

/// The seeds to run from the environment: `CANOPY_REPL_SEED` (one seed) or `CANOPY_REPL_SEEDS`
/// (see [`parse_seeds`]), else `default`.
pub fn seeds_from_env(default: &str) -> Result<Vec<u64>, String> {
    if let Ok(one) = std::env::var("CANOPY_REPL_SEED") {
        return one
            .trim()
            .parse()
            .map(|s| vec![s])
            .map_err(|e| format!("CANOPY_REPL_SEED={one:?}: {e}"));
    }
    let spec = std::env::var("CANOPY_REPL_SEEDS").unwrap_or_else(|_| default.to_string());
    parse_seeds(&spec)
}

/// `N` (seeds 1 to N), `A-B` or `A..B` (inclusive), or a comma-separated list of those.
pub fn parse_seeds(spec: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|e| format!("seed spec {part:?}: {e}"))
        };
        if let Some((a, b)) = part.split_once("..").or_else(|| part.split_once('-')) {
            let (a, b) = (num(a)?, num(b.trim_start_matches('='))?);
            if b < a {
                return Err(format!("seed range {part:?} is empty"));
            }
            out.extend(a..=b);
        } else if spec.contains(',') {
            out.push(num(part)?);
        } else {
            out.extend(1..=num(part)?);
        }
    }
    if out.is_empty() {
        return Err(format!("no seeds in {spec:?}"));
    }
    Ok(out)
}

/// The commands that run `seed` again.
pub fn replay_commands(seed: u64) -> String {
    let env = if crate::server::Target::from_env() == crate::server::Target::Slapd {
        "CANOPY_E2E_TARGET=slapd "
    } else {
        ""
    };
    format!(
        "{env}CANOPY_REPL_SEED={seed} cargo test -p canopy-e2e --test replication_model -- --ignored --nocapture\n  \
         {env}scripts/soak-replication --seed {seed}"
    )
}

#[cfg(test)]
mod tests {
    use super::directory::{Kind, Model, Write};
    use super::*;

    #[test]
    fn seeds_parse() {
        let cases: &[(&str, &[u64])] = &[
            ("3", &[1, 2, 3]),
            ("5-7", &[5, 6, 7]),
            ("5..7", &[5, 6, 7]),
            ("2,9,4-5", &[2, 9, 4, 5]),
        ];
        for (spec, want) in cases {
            assert_eq!(parse_seeds(spec).unwrap(), *want, "{spec}");
        }
        assert!(parse_seeds("x").is_err());
        assert!(parse_seeds("7-5").is_err());
    }

    #[test]
    fn a_seed_always_makes_the_same_scenario() {
        for seed in 0..40 {
            let (a, b) = (generate(seed), generate(seed));
            assert_eq!(a.describe(), b.describe(), "seed {seed}");
            assert!(a.directory.len() >= 30 && a.directory.len() <= 160);
        }
        assert_ne!(generate(1).describe(), generate(2).describe());
    }

    #[test]
    fn consecutive_seeds_cover_every_shape_with_and_without_slapd() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..10 {
            let s = generate(seed);
            seen.insert((format!("{:?}", s.shape), s.needs_slapd()));
        }
        assert_eq!(seen.len(), 10, "{seen:?}");
    }

    #[test]
    fn generated_writes_apply_to_the_model_in_order() {
        // The generator checks each write against its own model: replaying the writes on the
        // start directory must succeed again, step by step (conflicts aside).
        for seed in 0..60 {
            let s = generate(seed);
            let mut model = Model::from_entries(&s.directory);
            for event in &s.events {
                if let Event::Write { write, .. } = event {
                    model
                        .apply(write)
                        .unwrap_or_else(|e| panic!("seed {seed}: {}: {e}", write.describe()));
                }
                if let Event::Conflict { writes, .. } = event {
                    if let Write::Add(e) = &writes[0] {
                        model.add_uncertain(e, "description");
                    }
                }
            }
        }
    }

    /// Some seeds of every ten glue a database below the suffix; no generated write renames or
    /// deletes its suffix entry or moves an entry into or out of it (both servers refuse that).
    #[test]
    fn some_seeds_glue_a_database_and_no_write_crosses_it() {
        let mut glued = 0;
        for seed in 0..60 {
            let s = generate(seed);
            let Some(g) = &s.glued else { continue };
            glued += 1;
            assert_eq!(directory::parent_of(g), crate::SUFFIX, "seed {seed}");
            let inside = |dn: &str| directory::within(dn, g);
            for event in &s.events {
                let Event::Write { write, .. } = event else {
                    continue;
                };
                match write {
                    Write::Rename {
                        dn, new_superior, ..
                    } => {
                        assert!(directory::key(dn) != directory::key(g), "seed {seed}");
                        if let Some(to) = new_superior {
                            assert_eq!(inside(dn), inside(to), "seed {seed}: {}", write.describe());
                        }
                    }
                    Write::Delete { dn } | Write::DeleteSubtree { dn, .. } => {
                        assert!(
                            !directory::within(g, dn),
                            "seed {seed}: {}",
                            write.describe()
                        )
                    }
                    _ => {}
                }
            }
        }
        assert!(
            (10..50).contains(&glued),
            "{glued} of 60 seeds glue a database"
        );
    }

    #[test]
    fn a_rename_moves_the_subtree_and_its_rdn_value() {
        let mut rng = Rng::new(1);
        let mut names = directory::Names::default();
        let dir = directory::generate_directory(&mut rng, &mut names);
        let mut model = Model::from_entries(&dir);
        let unit = directory::unit(crate::SUFFIX, "moved", &mut rng);
        let child = directory::person(&unit.dn, 900, &mut rng);
        model.apply(&Write::Add(unit.clone())).unwrap();
        model.apply(&Write::Add(child.clone())).unwrap();
        model
            .apply(&Write::Rename {
                dn: unit.dn.clone(),
                new_rdn: "ou=there".into(),
                delete_old: true,
                new_superior: Some(directory::SHARED_UNIT.into()),
            })
            .unwrap();
        let moved = model.get("ou=there,ou=shared,dc=example,dc=com").unwrap();
        assert_eq!(moved.entry.values("ou"), ["there"]);
        assert_eq!(moved.entry.kind, Kind::Unit);
        assert!(model.contains("uid=u900,ou=there,ou=shared,dc=example,dc=com"));
        assert!(!model.contains(&child.dn));
        assert!(model
            .apply(&Write::Delete {
                dn: "ou=there,ou=shared,dc=example,dc=com".into()
            })
            .is_err());
    }
}
