//! refint: keeps DN-valued attributes naming entries that exist, as slapd's refint overlay does, but
//! inside the write's transaction: deleting an entry removes the values that name it, renaming one (and
//! with it its whole subtree) rewrites the values naming it or any entry below it, all before the write
//! commits (docs/overlays.md).
//!
//! slapd queues that work for a background task once the write has been answered, so a reader can see a
//! reference to a deleted entry for a while, and a crash in between loses the repair. Here the write and
//! its repairs commit together or not at all.

use std::collections::{BTreeMap, BTreeSet};

use canopy_core::check::check_entry;
use canopy_core::classes::with_superclasses;
use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Dn, Filter};
use canopy_schema::{AttributeType, NormDn, Schema};

use super::{candidates, dn_value, entry, rebase, values_of};
use crate::database::Directory;
use crate::error::store_error;
use crate::event::{Event, Kind};
use crate::keys::dn_key;
use crate::pipeline::{OnReplica, WriteHook};

/// slapd's modifiersName for the entries refint changes, unless `modifiersname` names another.
pub const MODIFIERS_NAME: &str = "cn=Referential Integrity Overlay";

/// Beyond this many moved entries the referrers are found by one scan instead of an index lookup each.
const MANY_TARGETS: usize = 1024;

/// The overlay's settings, slapd's `refint_*` options without their prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `attributes`: the DN-valued attribute types whose values are kept naming existing entries.
    pub attributes: Vec<String>,
    /// `nothing`: the DN put in place of the last value of an attribute when refint removes it, so an
    /// attribute the entry's classes require is never emptied. Without it, such a required value is left
    /// dangling (slapd's internal modify fails the same way) and an optional attribute goes.
    pub nothing: Option<String>,
    /// `modifiersname`: the modifiersName of the entries refint changes.
    pub modifier: String,
}

impl Config {
    /// Referential integrity for `attributes`, with slapd's defaults for the rest.
    pub fn new(attributes: Vec<String>) -> Config {
        Config {
            attributes,
            nothing: None,
            modifier: MODIFIERS_NAME.into(),
        }
    }

    /// Checks the settings against the database's schema: known attribute types holding DNs (DN
    /// syntax, or uniqueMember's name and optional UID, whose values without a UID are DNs), DNs for
    /// `nothing` and `modifiersname`.
    pub fn check(&self, schema: &Schema) -> Result<(), String> {
        const DN_SYNTAXES: [&str; 2] = [
            "1.3.6.1.4.1.1466.115.121.1.12",
            "1.3.6.1.4.1.1466.115.121.1.34",
        ];
        if self.attributes.is_empty() {
            return Err("attributes: name at least one attribute type".into());
        }
        for name in &self.attributes {
            match schema.attribute_type(name) {
                None => return Err(format!("attributes: {name:?} is not in the schema")),
                Some(at) if !DN_SYNTAXES.contains(&at.syntax.as_str()) => {
                    return Err(format!("attributes: {name:?} does not hold DNs"))
                }
                Some(_) => {}
            }
        }
        for (option, dn) in [
            ("nothing", self.nothing.as_deref()),
            ("modifiersname", Some(self.modifier.as_str())),
        ] {
            let Some(dn) = dn else { continue };
            let parsed = Dn::parse(dn.as_bytes()).map_err(|e| format!("{option}: {e}"))?;
            schema
                .normalize_dn(&parsed)
                .map_err(|e| format!("{option}: {dn:?}: {e}"))?;
        }
        Ok(())
    }
}

/// The refint hook.
pub struct Refint {
    config: Config,
}

/// An entry the write deleted or moved, by its old normalized name.
struct Target {
    /// The old DN as stored, for index lookups.
    old_dn: String,
    /// The new DN as stored and normalized; None for a deleted entry.
    new: Option<(String, NormDn)>,
}

type Targets = BTreeMap<NormDn, Target>;

impl Refint {
    pub fn new(config: Config) -> Refint {
        Refint { config }
    }

    /// The renamed entry and every entry below it, by the names they had before the write. The
    /// subtree's keys have already moved, so it is read under the new name.
    fn moved(
        &self,
        txn: &WriteTxn<'_>,
        id: u64,
        old: &Entry,
        new: &Entry,
    ) -> Result<Targets, LdapError> {
        let mut targets = Targets::new();
        let target = |old_dn: &Dn, now: &Entry| Target {
            old_dn: old_dn.to_string(),
            new: Some((now.dn.to_string(), now.ndn.clone())),
        };
        targets.insert(old.ndn.clone(), target(&old.dn, new));
        for (_, member) in txn.subtree(&dn_key(&new.ndn)).map_err(store_error)? {
            if member == id {
                continue;
            }
            let Some(now) = entry(txn, member)? else {
                continue;
            };
            let Some(was) = rebase(&now.ndn, &new.ndn, &old.ndn) else {
                continue;
            };
            let own = now.dn.rdns.len().saturating_sub(new.dn.rdns.len());
            let mut old_dn = Dn {
                rdns: now.dn.rdns.get(..own).unwrap_or(&[]).to_vec(),
            };
            old_dn.rdns.extend(old.dn.rdns.iter().cloned());
            targets.insert(was, target(&old_dn, &now));
        }
        Ok(targets)
    }

    /// The entries that may name a target in a configured attribute: one equality lookup per attribute
    /// and target where the attribute is indexed, else every entry.
    fn referrers(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        targets: &Targets,
    ) -> Result<Vec<u64>, LdapError> {
        if targets.len() > MANY_TARGETS {
            return txn.entry_ids().map_err(store_error);
        }
        let mut parts = Vec::new();
        for attr in &self.config.attributes {
            for target in targets.values() {
                parts.push(Filter::Equality(
                    attr.clone(),
                    target.old_dn.clone().into_bytes(),
                ));
            }
        }
        candidates(dir, txn, &Filter::Or(parts))
    }

    /// The configured attribute types.
    fn types<'s>(&self, schema: &'s Schema) -> Vec<&'s AttributeType> {
        self.config
            .attributes
            .iter()
            .filter_map(|name| schema.attribute_type(name))
            .collect()
    }

    /// `entry` with its values naming a target removed or renamed; None when it names none. With
    /// `keep_required`, an attribute the entry's classes require keeps its values rather than lose its
    /// last one.
    fn repaired(
        &self,
        dir: &Directory,
        entry: &Entry,
        targets: &Targets,
        keep_required: bool,
    ) -> Option<Entry> {
        let schema = dir.schema();
        let types = self.types(schema);
        let required = if keep_required {
            required(dir, entry)
        } else {
            Vec::new()
        };
        let mut new = entry.clone();
        let mut changed = false;
        for attr in &mut new.attrs {
            let name = attr.desc.split(';').next().unwrap_or(&attr.desc);
            let Some(at) = schema.attribute_type(name) else {
                continue;
            };
            if !types.iter().any(|t| std::ptr::eq(*t, at)) {
                continue;
            }
            let mut values: Vec<Vec<u8>> = Vec::with_capacity(attr.values.len());
            let mut seen: BTreeSet<NormDn> = BTreeSet::new();
            let mut hit = false;
            for value in &attr.values {
                let Some((_, ndn)) = dn_value(dir, value) else {
                    values.push(value.clone());
                    continue;
                };
                let (value, ndn) = match targets.get(&ndn) {
                    None => (value.clone(), ndn),
                    Some(target) => {
                        hit = true;
                        match &target.new {
                            Some((dn, ndn)) => (dn.clone().into_bytes(), ndn.clone()),
                            None => continue,
                        }
                    }
                };
                if seen.insert(ndn) {
                    values.push(value);
                }
            }
            if !hit {
                continue;
            }
            if values.is_empty() {
                match &self.config.nothing {
                    Some(nothing) => values.push(nothing.clone().into_bytes()),
                    None if required.iter().any(|r| std::ptr::eq(*r, at)) => continue,
                    None => {}
                }
            }
            attr.values = values;
            changed = true;
        }
        new.attrs.retain(|a| !a.values.is_empty());
        changed.then_some(new)
    }

    /// Rewrites entry `id` so it no longer names a target by its old name.
    fn repair(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
        id: u64,
        targets: &Targets,
    ) -> Result<(), LdapError> {
        let Some(old) = entry(txn, id)? else {
            return Ok(());
        };
        let Some(mut new) = self.repaired(dir, &old, targets, false) else {
            return Ok(());
        };
        if check_entry(dir.schema(), &new).is_err() {
            // A required attribute lost its last value: it keeps the dangling one, the rest is repaired.
            match self.repaired(dir, &old, targets, true) {
                Some(kept) => new = kept,
                None => return Ok(()),
            }
            if let Err(error) = check_entry(dir.schema(), &new) {
                tracing::info!(dn = %old.dn, %error.message, "refint: left unchanged");
                return Ok(());
            }
            tracing::info!(dn = %old.dn, "refint: a required attribute keeps a dangling value");
        }
        event.touch(&mut new, &self.config.modifier);
        dir.rewrite(txn, id, &old, new)
    }
}

/// The attribute types the object classes of `entry` require.
fn required<'s>(dir: &'s Directory, entry: &Entry) -> Vec<&'s AttributeType> {
    let schema = dir.schema();
    let mut out: Vec<&AttributeType> = Vec::new();
    for value in values_of(dir, entry, "objectClass") {
        let Some(class) = std::str::from_utf8(value)
            .ok()
            .and_then(|name| schema.object_class(name))
        else {
            continue;
        };
        for ancestor in with_superclasses(schema, class) {
            for must in &ancestor.must {
                if let Some(at) = schema.attribute_type(must) {
                    if !out.iter().any(|t| std::ptr::eq(*t, at)) {
                        out.push(at);
                    }
                }
            }
        }
    }
    out
}

impl WriteHook for Refint {
    fn name(&self) -> &'static str {
        "refint"
    }

    /// A received delete or rename: in a plain consumer the referrers are repaired here, as slapd's
    /// refint repairs them on its consumers (a slapd provider does not send its refint's changes),
    /// keeping their entryCSN, so nothing new is published. In a multi-provider database the writer's
    /// server repaired and stamped them, and the merge carries that: the pipeline does not call it.
    fn on_replica(&self) -> OnReplica {
        OnReplica::InPlainConsumer
    }

    /// Acts on deletes and renames only.
    fn accepts_partial(&self) -> bool {
        true
    }

    /// After a delete or a rename is stored: every entry naming the deleted entry, or the renamed one or
    /// anything below it, is rewritten in the same transaction.
    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let targets = match (event.kind, event.old, event.new) {
            (Kind::Delete, Some(old), _) => {
                let target = Target {
                    old_dn: old.dn.to_string(),
                    new: None,
                };
                Targets::from([(old.ndn.clone(), target)])
            }
            (Kind::Rename, Some(old), Some(new)) if old.ndn != new.ndn => {
                self.moved(txn, event.id, old, new)?
            }
            _ => return Ok(()),
        };
        for id in self.referrers(dir, txn, &targets)? {
            self.repair(dir, txn, event, id, &targets)?;
        }
        Ok(())
    }
}
