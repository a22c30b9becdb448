//! The client writes of a scenario and the expected directory that acknowledged writes change
//! (adds, modifies, renames with their subtrees, deletes). The model is exact as long as one server
//! writes each entry (docs/testing.md).

use std::collections::{BTreeMap, BTreeSet};

use super::directory::{key, parent_of, rdn_parts, within, Entry, Kind};

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
