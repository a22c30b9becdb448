//! The replication model's directory: the entries a seed generates (suffix, units, persons, groups),
//! the LDIF they load from, the client writes, and the expected directory that acknowledged writes
//! change. The model is exact as long as one server writes each entry (see docs/testing.md).

use std::collections::{BTreeMap, BTreeSet};

use super::Rng;
use crate::server::SUFFIX;

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

    fn set(&mut self, attr: &str, values: Vec<String>) {
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

fn rdn_parts(dn: &str) -> (&str, &str) {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModKind {
    Add,
    Delete,
    Replace,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mod {
    pub kind: ModKind,
    pub attr: String,
    pub values: Vec<String>,
}

/// A client write, sent by ldapmodify (or ldapdelete -r).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    Add(Entry),
    Modify {
        dn: String,
        mods: Vec<Mod>,
    },
    Rename {
        dn: String,
        new_rdn: String,
        delete_old: bool,
        new_superior: Option<String>,
    },
    Delete {
        dn: String,
    },
    /// Deletes deepest first, one ldapmodify each (`recursive` false), or `ldapdelete -r`.
    DeleteSubtree {
        dn: String,
        recursive: bool,
    },
}

impl Write {
    pub fn dn(&self) -> &str {
        match self {
            Write::Add(e) => &e.dn,
            Write::Modify { dn, .. }
            | Write::Rename { dn, .. }
            | Write::Delete { dn }
            | Write::DeleteSubtree { dn, .. } => dn,
        }
    }

    /// The change as ldapmodify input (a subtree delete has none: it is run otherwise).
    pub fn ldif(&self) -> String {
        match self {
            Write::Add(e) => {
                let record = e.ldif();
                let (first, rest) = record.split_once('\n').unwrap_or((&record, ""));
                format!("{first}\nchangetype: add\n{rest}")
            }
            Write::Modify { dn, mods } => {
                let mut out = format!("dn: {dn}\nchangetype: modify\n");
                for m in mods {
                    let op = match m.kind {
                        ModKind::Add => "add",
                        ModKind::Delete => "delete",
                        ModKind::Replace => "replace",
                    };
                    out.push_str(&format!("{op}: {}\n", m.attr));
                    for v in &m.values {
                        out.push_str(&format!("{}: {v}\n", m.attr));
                    }
                    out.push_str("-\n");
                }
                out
            }
            Write::Rename {
                dn,
                new_rdn,
                delete_old,
                new_superior,
            } => {
                let mut out = format!(
                    "dn: {dn}\nchangetype: modrdn\nnewrdn: {new_rdn}\ndeleteoldrdn: {}\n",
                    u8::from(*delete_old)
                );
                if let Some(sup) = new_superior {
                    out.push_str(&format!("newsuperior: {sup}\n"));
                }
                out
            }
            Write::Delete { dn } | Write::DeleteSubtree { dn, .. } => {
                format!("dn: {dn}\nchangetype: delete\n")
            }
        }
    }

    /// One line for the scenario's event list.
    pub fn describe(&self) -> String {
        match self {
            Write::Add(e) => format!("add {} ({} attributes)", e.dn, e.attrs.len()),
            Write::Modify { dn, mods } => {
                let parts: Vec<String> = mods
                    .iter()
                    .map(|m| {
                        let kind = format!("{:?}", m.kind).to_lowercase();
                        format!("{kind} {} {:?}", m.attr, m.values)
                    })
                    .collect();
                format!("modify {dn}: {}", parts.join("; "))
            }
            Write::Rename {
                dn,
                new_rdn,
                delete_old,
                new_superior,
            } => format!(
                "modrdn {dn} -> {new_rdn} deleteoldrdn={} newsuperior={}",
                u8::from(*delete_old),
                new_superior.as_deref().unwrap_or("-")
            ),
            Write::Delete { dn } => format!("delete {dn}"),
            Write::DeleteSubtree { dn, recursive } => format!(
                "delete subtree {dn} ({})",
                if *recursive {
                    "ldapdelete -r"
                } else {
                    "deepest first, one delete each"
                }
            ),
        }
    }
}

/// An entry of the expected directory: its content, the attributes a race made unknown (only
/// convergence is checked for them), and whether its DN was on every server at the start.
#[derive(Debug, Clone)]
pub struct Held {
    pub entry: Entry,
    pub uncertain: BTreeSet<String>,
    pub everywhere: bool,
}

/// The expected directory, keyed by [`key`].
#[derive(Debug, Clone, Default)]
pub struct Model {
    entries: BTreeMap<String, Held>,
}

impl Model {
    pub fn from_entries(entries: &[Entry]) -> Model {
        let mut model = Model::default();
        for e in entries {
            model.entries.insert(
                key(&e.dn),
                Held {
                    entry: e.clone(),
                    uncertain: BTreeSet::new(),
                    everywhere: false,
                },
            );
        }
        model
    }

    pub fn get(&self, dn: &str) -> Option<&Held> {
        self.entries.get(&key(dn))
    }

    pub fn contains(&self, dn: &str) -> bool {
        self.entries.contains_key(&key(dn))
    }

    pub fn held(&self) -> impl Iterator<Item = &Held> {
        self.entries.values()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Marks each entry whose DN `present` (lowercased DNs) holds as being on every server.
    pub fn mark_everywhere(&mut self, present: &BTreeSet<String>) {
        for (k, held) in self.entries.iter_mut() {
            held.everywhere = present.contains(k);
        }
    }

    pub fn mark_uncertain(&mut self, dn: &str, attr: &str) {
        if let Some(held) = self.entries.get_mut(&key(dn)) {
            held.uncertain.insert(attr.to_ascii_lowercase());
        }
    }

    /// Adds `entry` unless its DN is held, with `attr` uncertain (two concurrent adds of one DN).
    pub fn add_uncertain(&mut self, entry: &Entry, attr: &str) {
        if !self.contains(&entry.dn) {
            self.entries.insert(
                key(&entry.dn),
                Held {
                    entry: entry.clone(),
                    uncertain: BTreeSet::new(),
                    everywhere: false,
                },
            );
        }
        self.mark_uncertain(&entry.dn, attr);
    }

    pub fn has_children(&self, dn: &str) -> bool {
        let suffix = format!(",{}", key(dn));
        self.entries.keys().any(|k| k.ends_with(&suffix))
    }

    /// `dn` and everything below it, deepest first (as written).
    pub fn subtree(&self, dn: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .entries
            .values()
            .filter(|h| within(&h.entry.dn, dn))
            .map(|h| h.entry.dn.clone())
            .collect();
        out.sort_by_key(|d| std::cmp::Reverse(d.matches(',').count()));
        out
    }

    pub fn remove(&mut self, dn: &str) {
        self.entries.remove(&key(dn));
    }

    /// Applies a write the server acknowledged; an error when the model finds it impossible (then
    /// nothing changes).
    pub fn apply(&mut self, write: &Write) -> Result<(), String> {
        match write {
            Write::Add(e) => {
                if self.contains(&e.dn) {
                    return Err(format!("{} exists", e.dn));
                }
                if e.kind != Kind::Suffix && !self.contains(parent_of(&e.dn)) {
                    return Err(format!("no parent for {}", e.dn));
                }
                self.entries.insert(
                    key(&e.dn),
                    Held {
                        entry: e.clone(),
                        uncertain: BTreeSet::new(),
                        everywhere: false,
                    },
                );
                Ok(())
            }
            Write::Modify { dn, mods } => {
                let held = self
                    .entries
                    .get_mut(&key(dn))
                    .ok_or_else(|| format!("no entry {dn}"))?;
                let mut entry = held.entry.clone();
                for m in mods {
                    apply_mod(&mut entry, m)?;
                }
                held.entry = entry;
                Ok(())
            }
            Write::Rename {
                dn,
                new_rdn,
                delete_old,
                new_superior,
            } => self.rename(dn, new_rdn, *delete_old, new_superior.as_deref()),
            Write::Delete { dn } => {
                if !self.contains(dn) {
                    return Err(format!("no entry {dn}"));
                }
                if self.has_children(dn) {
                    return Err(format!("{dn} has children"));
                }
                self.remove(dn);
                Ok(())
            }
            Write::DeleteSubtree { dn, .. } => {
                if !self.contains(dn) {
                    return Err(format!("no entry {dn}"));
                }
                for d in self.subtree(dn) {
                    self.remove(&d);
                }
                Ok(())
            }
        }
    }

    fn rename(
        &mut self,
        dn: &str,
        new_rdn: &str,
        delete_old: bool,
        new_superior: Option<&str>,
    ) -> Result<(), String> {
        let held = self.get(dn).ok_or_else(|| format!("no entry {dn}"))?;
        let old_dn = held.entry.dn.clone();
        let parent = new_superior.unwrap_or(parent_of(&old_dn)).to_string();
        if !self.contains(&parent) || within(&parent, &old_dn) {
            return Err(format!("bad new superior {parent} for {old_dn}"));
        }
        let new_dn = format!("{new_rdn},{parent}");
        if self.contains(&new_dn) && key(&new_dn) != key(&old_dn) {
            return Err(format!("{new_dn} exists"));
        }
        let (old_attr, old_value) = rdn_parts(&old_dn);
        let (new_attr, new_value) = rdn_parts(&new_dn);
        let mut moved = Vec::new();
        for d in self.subtree(&old_dn) {
            if let Some(h) = self.entries.remove(&key(&d)) {
                moved.push(h);
            }
        }
        for mut h in moved {
            let tail = h.entry.dn.len() - old_dn.len();
            h.entry.dn = format!("{}{new_dn}", &h.entry.dn[..tail]);
            if tail == 0 {
                let e = &mut h.entry;
                if delete_old {
                    let kept: Vec<String> = e
                        .values(old_attr)
                        .into_iter()
                        .filter(|v| !v.eq_ignore_ascii_case(old_value))
                        .collect();
                    let name = attr_name(e, old_attr);
                    e.set(&name, kept);
                }
                let mut values = e.values(new_attr);
                if !values.iter().any(|v| v.eq_ignore_ascii_case(new_value)) {
                    values.push(new_value.to_string());
                }
                let name = attr_name(e, new_attr);
                e.set(&name, values);
            }
            self.entries.insert(key(&h.entry.dn), h);
        }
        Ok(())
    }
}

/// The spelling `entry` uses for `attr`, or `attr` itself.
fn attr_name(entry: &Entry, attr: &str) -> String {
    entry
        .attrs
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(attr))
        .map_or_else(|| attr.to_string(), |(a, _)| a.clone())
}

fn apply_mod(entry: &mut Entry, m: &Mod) -> Result<(), String> {
    let name = attr_name(entry, &m.attr);
    let mut values = entry.values(&m.attr);
    let has = |vs: &[String], v: &str| vs.iter().any(|x| x.eq_ignore_ascii_case(v));
    match m.kind {
        ModKind::Add => {
            for v in &m.values {
                if has(&values, v) {
                    return Err(format!("{} already has {}: {v}", entry.dn, m.attr));
                }
                values.push(v.clone());
            }
        }
        ModKind::Delete if m.values.is_empty() => {
            if values.is_empty() {
                return Err(format!("{} has no {}", entry.dn, m.attr));
            }
            values.clear();
        }
        ModKind::Delete => {
            for v in &m.values {
                if !has(&values, v) {
                    return Err(format!("{} has no {}: {v}", entry.dn, m.attr));
                }
                values.retain(|x| !x.eq_ignore_ascii_case(v));
            }
        }
        ModKind::Replace => values = m.values.clone(),
    }
    entry.set(&name, values);
    Ok(())
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
