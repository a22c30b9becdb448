//! The replication model's entries: what a seed generates (suffix, units, persons, groups, older and
//! divergent copies) and the LDIF they load from.

use std::collections::{BTreeMap, BTreeSet};

pub use super::model::{Mod, ModKind, Model, Write};

use super::Rng;
use crate::base::SUFFIX;

/// The identity slapd consumers bind as (canopy consumers bind as the root DN). Its password is
/// base.ldif's alice's, stored as the same `{SSHA}` hash.
pub const REPLICATOR_DN: &str = "cn=replicator,dc=example,dc=com";
pub const REPLICATOR_PW: &str = "alice-pw";
const REPLICATOR_HASH: &str = "{SSHA}izjtVAKbK55kOcBydBsKhyMWznXVpZAs";

/// The unit where concurrent adds of one DN on two providers go; no other write touches it.
pub const SHARED_UNIT: &str = "ou=shared,dc=example,dc=com";

const UNIT_NAMES: &[&str] = &["people", "staff", "sales", "eng", "ops", "lab", "hr", "it"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Suffix,
    /// The replicator and the shared unit: never written.
    Fixed,
    Unit,
    Person,
    Group,
}

/// One entry: its DN as written, what it is, and its user attributes in LDIF order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub dn: String,
    pub kind: Kind,
    pub attrs: Vec<(String, Vec<String>)>,
}

impl Entry {
    fn new(dn: String, kind: Kind, attrs: &[(&str, &[&str])]) -> Entry {
        let attrs = attrs
            .iter()
            .map(|(a, vs)| (a.to_string(), vs.iter().map(|v| v.to_string()).collect()))
            .collect();
        Entry { dn, kind, attrs }
    }

    /// The entry as an LDIF record (without `changetype`), ending with a blank line.
    pub fn ldif(&self) -> String {
        let mut out = format!("dn: {}\n", self.dn);
        for (attr, values) in &self.attrs {
            for v in values {
                out.push_str(&format!("{attr}: {v}\n"));
            }
        }
        out.push('\n');
        out
    }

    pub fn values(&self, attr: &str) -> Vec<String> {
        self.attrs
            .iter()
            .filter(|(a, _)| a.eq_ignore_ascii_case(attr))
            .flat_map(|(_, vs)| vs.clone())
            .collect()
    }

    pub(super) fn set(&mut self, attr: &str, values: Vec<String>) {
        self.attrs.retain(|(a, _)| !a.eq_ignore_ascii_case(attr));
        if !values.is_empty() {
            self.attrs.push((attr.to_string(), values));
        }
    }

    /// The user attributes as a comparable set: lowercased names, each with its lowercased values.
    pub fn normalized(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, vs) in &self.attrs {
            let set = out.entry(a.to_ascii_lowercase()).or_default();
            set.extend(vs.iter().map(|v| v.to_ascii_lowercase()));
        }
        out
    }
}

/// The model's key of a DN (the generator writes DNs without spaces, so lowercase is enough).
pub fn key(dn: &str) -> String {
    dn.to_ascii_lowercase()
}

pub fn parent_of(dn: &str) -> &str {
    dn.split_once(',').map_or("", |(_, p)| p)
}

pub(super) fn rdn_parts(dn: &str) -> (&str, &str) {
    let rdn = dn.split(',').next().unwrap_or(dn);
    rdn.split_once('=').unwrap_or((rdn, ""))
}

/// Whether `dn` is `base` or below it.
pub fn within(dn: &str, base: &str) -> bool {
    let (dn, base) = (key(dn), key(base));
    dn == base || dn.ends_with(&format!(",{base}"))
}

/// The unit right below the suffix that holds `dn` (itself when it is one), as a key.
pub fn top_unit(dn: &str) -> Option<String> {
    let k = key(dn);
    let rest = k.strip_suffix(&format!(",{}", key(SUFFIX)))?;
    rest.rsplit(',')
        .next()
        .map(|rdn| format!("{rdn},{}", key(SUFFIX)))
}

/// Hands out names no entry has had yet (`u17`, `g18`, ...), so no two writes ever collide.
#[derive(Debug, Default)]
pub struct Names {
    next: u64,
}

impl Names {
    pub fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

pub fn person(parent: &str, n: u64, rng: &mut Rng) -> Entry {
    let uid = format!("u{n}");
    let cn = format!("User {n}");
    let sn = format!("S{n}");
    let mut e = Entry::new(
        format!("uid={uid},{parent}"),
        Kind::Person,
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("uid", &[&uid]),
            ("cn", &[&cn]),
            ("sn", &[&sn]),
        ],
    );
    if rng.chance(60) {
        e.set("mail", vec![format!("u{n}@example.com")]);
    }
    if rng.chance(40) {
        e.set("telephoneNumber", vec![format!("+1 555 {n:04}")]);
    }
    let descriptions: Vec<String> = (0..rng.below(3)).map(|i| format!("d{n}x{i}")).collect();
    e.set("description", descriptions);
    e
}

pub fn group(parent: &str, n: u64, members: Vec<String>, rng: &mut Rng) -> Entry {
    let cn = format!("g{n}");
    let mut e = Entry::new(
        format!("cn={cn},{parent}"),
        Kind::Group,
        &[("objectClass", &["groupOfNames"]), ("cn", &[&cn])],
    );
    e.set("member", members);
    if rng.chance(50) {
        e.set("description", vec![format!("group {n}")]);
    }
    e
}

pub fn unit(parent: &str, name: &str, rng: &mut Rng) -> Entry {
    let mut e = Entry::new(
        format!("ou={name},{parent}"),
        Kind::Unit,
        &[("objectClass", &["organizationalUnit"]), ("ou", &[name])],
    );
    if rng.chance(30) {
        e.set("description", vec![format!("unit {name}")]);
    }
    e
}

/// The seed's directory, parents first: the suffix, the replicator, the shared unit, 3 to 5 units
/// (some with sub-units), then persons and groups up to 30-150 entries in all.
pub fn generate_directory(rng: &mut Rng, names: &mut Names) -> Vec<Entry> {
    let mut out = vec![
        Entry::new(
            SUFFIX.to_string(),
            Kind::Suffix,
            &[
                ("objectClass", &["top", "dcObject", "organization"]),
                ("o", &["Example Corp"]),
                ("dc", &["example"]),
            ],
        ),
        Entry::new(
            REPLICATOR_DN.to_string(),
            Kind::Fixed,
            &[
                (
                    "objectClass",
                    &["organizationalRole", "simpleSecurityObject"],
                ),
                ("cn", &["replicator"]),
                ("userPassword", &[REPLICATOR_HASH]),
            ],
        ),
        Entry::new(
            SHARED_UNIT.to_string(),
            Kind::Fixed,
            &[
                ("objectClass", &["organizationalUnit"]),
                ("ou", &["shared"]),
            ],
        ),
    ];
    let total = 30 + rng.below(121);
    let mut pool: Vec<&str> = UNIT_NAMES.to_vec();
    let mut containers = Vec::new();
    for _ in 0..3 + rng.below(3) {
        let name = pool.remove(rng.below(pool.len()));
        let u = unit(SUFFIX, name, rng);
        containers.push(u.dn.clone());
        let top = u.dn.clone();
        out.push(u);
        for _ in 0..rng.below(3) {
            let sub = unit(&top, &format!("n{}", names.next()), rng);
            containers.push(sub.dn.clone());
            out.push(sub);
        }
    }
    let mut persons: Vec<String> = Vec::new();
    while out.len() < total {
        let parent = containers[rng.below(containers.len())].clone();
        if persons.len() > 2 && rng.chance(15) {
            let members: Vec<String> = (0..1 + rng.below(4))
                .map(|_| persons[rng.below(persons.len())].clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            out.push(group(&parent, names.next(), members, rng));
        } else {
            let p = person(&parent, names.next(), rng);
            persons.push(p.dn.clone());
            out.push(p);
        }
    }
    out
}

/// An older copy of `entries`: about a quarter of the persons and groups left out, and (with
/// `older_values`) some persons with other sn and description values.
pub fn older_copy(entries: &[Entry], rng: &mut Rng, older_values: bool) -> Vec<Entry> {
    let mut out = Vec::new();
    for e in entries {
        let leaf = matches!(e.kind, Kind::Person | Kind::Group);
        if leaf && rng.chance(25) {
            continue;
        }
        let mut e = e.clone();
        if older_values && e.kind == Kind::Person && rng.chance(30) {
            let n = e.dn.len();
            e.set("sn", vec![format!("Old{n}")]);
            e.set("description", vec![format!("old value {n}")]);
        }
        out.push(e);
    }
    out
}

/// A copy that went its own way: [`older_copy`] with other values, plus persons and a unit the
/// provider never had.
pub fn divergent_copy(entries: &[Entry], rng: &mut Rng, names: &mut Names) -> Vec<Entry> {
    let mut out = older_copy(entries, rng, true);
    let units: Vec<String> = out
        .iter()
        .filter(|e| e.kind == Kind::Unit)
        .map(|e| e.dn.clone())
        .collect();
    for _ in 0..1 + rng.below(5) {
        let parent = units[rng.below(units.len())].clone();
        out.push(person(&parent, names.next(), rng));
    }
    let extra = unit(SUFFIX, &format!("extra{}", names.next()), rng);
    let extra_dn = extra.dn.clone();
    out.push(extra);
    for _ in 0..2 {
        out.push(person(&extra_dn, names.next(), rng));
    }
    out
}

/// LDIF of `entries` for an offline load.
pub fn ldif_of(entries: &[Entry]) -> String {
    entries.iter().map(Entry::ldif).collect()
}
