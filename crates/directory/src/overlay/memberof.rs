//! memberof: keeps `memberOf` on the members of groups in the same transaction as the change that
//! makes or ends the membership, as slapd's memberof overlay does afterwards (docs/overlays.md).
//!
//! A group is an entry of the configured class (groupOfNames); its members are the DNs in the member
//! attribute. Every write is seen as the membership pairs (group, member) it ends and starts: an add or
//! delete of a group, a change of its members, a rename of a group, an entry gaining or losing the group
//! class all come to the same two lists, so none can leave a stale memberOf behind.

use std::collections::{BTreeSet, HashSet};

use canopy_core::check::check_entry;
use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Change, ModifyOperation, ResultCode};
use canopy_schema::{NormDn, Schema};

use super::{dn_value, has_class, load, values_of};
use crate::database::Directory;
use crate::event::{Event, Kind, Origin, Proposed};
use crate::pipeline::{OnReplica, WriteHook};

/// slapd's definition of memberOf, loaded into the schema when the overlay is configured.
pub const MEMBEROF_SCHEMA: &str = "attributetype ( 1.2.840.113556.1.2.102 NAME 'memberOf' \
     DESC 'Group that the entry belongs to' \
     EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 \
     USAGE dSAOperation NO-USER-MODIFICATION )";

/// What to do with a member that names no entry (`memberof-dangling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dangling {
    /// Keep the value; nothing is recorded for it (slapd's default).
    Ignore,
    /// Remove the value from the group being written.
    Drop,
    /// Refuse the write with this result code (`memberof-dangling-error`, constraintViolation by default).
    Error(ResultCode),
}

/// The overlay's settings, slapd's options without their `memberof-` prefix.
#[derive(Debug, Clone)]
pub struct Config {
    /// `group-oc`: the object class of groups.
    pub group_class: String,
    /// `member-ad`: the attribute that lists members.
    pub member_attr: String,
    /// `memberof-ad`: the attribute kept on members.
    pub memberof_attr: String,
    pub dangling: Dangling,
    /// `refint`: deleting or renaming a member updates the groups that list it.
    pub refint: bool,
    /// `dn`: the modifiersName of the entries the overlay changes.
    pub modifier: String,
}

impl Config {
    /// slapd's defaults, changes recorded as made by `modifier` (slapd uses the root DN).
    pub fn new(modifier: &str) -> Config {
        Config {
            group_class: "groupOfNames".into(),
            member_attr: "member".into(),
            memberof_attr: "memberOf".into(),
            dangling: Dangling::Ignore,
            refint: false,
            modifier: modifier.into(),
        }
    }
}

/// The memberof hook.
pub struct MemberOf {
    config: Config,
}

impl MemberOf {
    pub fn new(config: Config) -> MemberOf {
        MemberOf { config }
    }

    /// The members of `entry` when it is a group (normalized DN → the value as written).
    fn members(&self, dir: &Directory, entry: Option<&Entry>) -> Vec<(NormDn, Vec<u8>)> {
        let Some(entry) = entry.filter(|e| has_class(dir, e, &self.config.group_class)) else {
            return Vec::new();
        };
        let mut seen = HashSet::new();
        let mut out: Vec<(NormDn, Vec<u8>)> = Vec::new();
        for value in values_of(dir, entry, &self.config.member_attr) {
            if let Some((_, ndn)) = dn_value(dir, value) {
                if seen.insert(ndn.clone()) {
                    out.push((ndn, value.to_vec()));
                }
            }
        }
        out
    }

    /// Rewrites the entry `ndn` with `change` applied to its values of `attr`, stamped as changed by
    /// the overlay (for a received change, derived in a plain consumer: left with its entryCSN, as
    /// slapd's memberof leaves it); nothing when the entry is missing or `change` leaves it as it was.
    #[allow(clippy::too_many_arguments)]
    fn update(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
        moved: &Moved<'_>,
        ndn: &NormDn,
        attr: &str,
        change: impl FnOnce(&mut Vec<Vec<u8>>) -> bool,
    ) -> Result<(), LdapError> {
        let Some((id, old)) = load(txn, &moved.now(ndn))? else {
            return Ok(());
        };
        let mut new = old.clone();
        let canonical = dir
            .schema()
            .attribute_type(attr)
            .map_or(attr, |at| at.name())
            .to_string();
        let index = new.attrs.iter().position(|a| a.desc == canonical);
        let mut values = index
            .map(|i| std::mem::take(&mut new.attrs[i].values))
            .unwrap_or_default();
        if !change(&mut values) {
            return Ok(());
        }
        match (index, values.is_empty()) {
            (Some(i), true) => {
                new.attrs.remove(i);
            }
            (Some(i), false) => new.attrs[i].values = values,
            (None, true) => {}
            (None, false) => new.attrs.push(Attribute {
                desc: canonical,
                values,
            }),
        }
        // A group emptied of its last member would break its class's rules: it keeps the dangling
        // value, as slapd's failed internal modify leaves it.
        if let Err(error) = check_entry(dir.schema(), &new) {
            tracing::info!(dn = %new.dn, %error.message, "memberof: left unchanged");
            return Ok(());
        }
        event.touch(&mut new, &self.config.modifier);
        dir.rewrite(txn, id, &old, new)
    }
}

/// A subtree a rename moved: names under `from` are now under `to`.
struct Moved<'a> {
    from: Option<&'a NormDn>,
    to: Option<&'a NormDn>,
}

impl Moved<'_> {
    /// Where the entry once named `ndn` is now.
    fn now(&self, ndn: &NormDn) -> NormDn {
        match (self.from, self.to) {
            (Some(from), Some(to)) if from.is_suffix_of(ndn) => {
                let own = ndn.rdns().len() - from.rdns().len();
                let mut rdns = ndn.rdns()[..own].to_vec();
                rdns.extend(to.rdns().iter().cloned());
                NormDn::from_normalized_rdns(rdns)
            }
            _ => ndn.clone(),
        }
    }
}

/// Whether `values` holds a DN equal to `ndn`.
fn holds(dir: &Directory, values: &[Vec<u8>], ndn: &NormDn) -> bool {
    values
        .iter()
        .any(|v| dn_value(dir, v).is_some_and(|(_, n)| n == *ndn))
}

/// Removes every value equal to the DN `ndn`; whether any was there.
fn remove_dn(dir: &Directory, values: &mut Vec<Vec<u8>>, ndn: &NormDn) -> bool {
    let before = values.len();
    values.retain(|v| dn_value(dir, v).is_none_or(|(_, n)| n != *ndn));
    values.len() != before
}

impl WriteHook for MemberOf {
    fn name(&self) -> &'static str {
        "memberof"
    }

    /// The group class and both attributes exist (slapd: `unable to find group objectClass=...`).
    fn check(&self, schema: &Schema, _suffix: &NormDn) -> Result<(), String> {
        let config = &self.config;
        if schema.object_class(&config.group_class).is_none() {
            return Err(format!(
                "unable to find group objectClass=\"{}\"",
                config.group_class
            ));
        }
        for attr in [&config.member_attr, &config.memberof_attr] {
            if schema.attribute_type(attr).is_none() {
                return Err(format!("unable to find attribute=\"{attr}\""));
            }
        }
        Ok(())
    }

    /// A received change: in a plain consumer, memberOf is derived here as slapd's memberof derives
    /// it on its consumers (a slapd provider does not send its memberof's changes to other entries):
    /// nothing is refused, and the members rewritten keep their entryCSN, so nothing new is published.
    /// In a multi-provider database the writer's server derived and stamped it, and the merge carries
    /// it, so the pipeline does not call it there (a local derivation would make the peers' merges
    /// disagree).
    fn on_replica(&self) -> OnReplica {
        OnReplica::InPlainConsumer
    }

    /// Works from the members a write starts and ends (the changes, or the difference of the two
    /// entries). Not with `dangling = "drop"`, whose schema check of the new entry needs all of it.
    fn accepts_partial(&self) -> bool {
        self.config.dangling != Dangling::Drop
    }

    /// Members the write adds to a group must exist, unless dangling members are ignored.
    fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        if self.config.dangling == Dangling::Ignore || change.origin == Origin::Replica {
            return Ok(());
        }
        let Some(new) = change.new.as_deref_mut() else {
            return Ok(());
        };
        // The members the write adds: from a modify's changes when they say it, else by comparing.
        let added: Vec<NormDn> =
            match self.delta(dir, change.kind, (change.old, Some(&*new)), change.changes) {
                Some((_, started)) => started,
                None => {
                    let before: HashSet<NormDn> = self
                        .members(dir, change.old)
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect();
                    self.members(dir, Some(new))
                        .into_iter()
                        .map(|(n, _)| n)
                        .filter(|n| !before.contains(n))
                        .collect()
                }
            };
        let mut missing = Vec::new();
        for ndn in added {
            // The group itself (a self-member on add) exists once the write is stored.
            if ndn != new.ndn && load(txn, &ndn)?.is_none() {
                missing.push(ndn);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        match self.config.dangling {
            Dangling::Ignore => Ok(()),
            Dangling::Error(code) => Err(LdapError::new(
                code,
                format!(
                    "adding non-existing object {} as group member",
                    missing[0].as_str()
                ),
            )),
            Dangling::Drop => {
                let schema = dir.schema();
                let member = schema.attribute_type(&self.config.member_attr);
                for attr in &mut new.attrs {
                    let name = attr.desc.split(';').next().unwrap_or(&attr.desc);
                    let is_member = match (member, schema.attribute_type(name)) {
                        (Some(a), Some(b)) => std::ptr::eq(a, b),
                        _ => false,
                    };
                    if is_member {
                        attr.values.retain(|v| {
                            dn_value(dir, v).is_none_or(|(_, n)| !missing.contains(&n))
                        });
                    }
                }
                new.attrs.retain(|a| !a.values.is_empty());
                check_entry(schema, new)
            }
        }
    }

    /// Every entry's memberOf set to exactly the groups that list it.
    fn rebuild(&self, dir: &Directory, txn: &mut WriteTxn<'_>) -> Result<u64, LdapError> {
        let mut entries = Vec::new();
        for item in txn.entries().map_err(crate::error::store_error)? {
            let (id, bytes) = item.map_err(crate::error::store_error)?;
            let entry = Directory::parse_stored(bytes)?
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            entries.push((id, entry));
        }
        let mut groups_of: std::collections::HashMap<NormDn, Vec<Vec<u8>>> = Default::default();
        for (_, entry) in &entries {
            for (member, _) in self.members(dir, Some(entry)) {
                groups_of
                    .entry(member)
                    .or_default()
                    .push(entry.dn.to_string().into_bytes());
            }
        }
        let canonical = dir
            .schema()
            .attribute_type(&self.config.memberof_attr)
            .map_or(self.config.memberof_attr.as_str(), |at| at.name())
            .to_string();
        let mut changed = 0;
        for (id, old) in entries {
            let want = groups_of.remove(&old.ndn).unwrap_or_default();
            let norm = |values: &[&[u8]]| -> BTreeSet<NormDn> {
                values
                    .iter()
                    .filter_map(|v| dn_value(dir, v).map(|(_, n)| n))
                    .collect()
            };
            let have = values_of(dir, &old, &canonical);
            let want_refs: Vec<&[u8]> = want.iter().map(Vec::as_slice).collect();
            if norm(&have) == norm(&want_refs) && have.len() == want.len() {
                continue;
            }
            let mut new = old.clone();
            new.attrs
                .retain(|a| !a.desc.eq_ignore_ascii_case(&canonical));
            if !want.is_empty() {
                new.attrs.push(Attribute {
                    desc: canonical.clone(),
                    values: want,
                });
            }
            dir.rewrite(txn, id, &old, new)?;
            changed += 1;
        }
        Ok(changed)
    }

    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let old_top = event.old.map(|e| &e.ndn);
        let new_top = event.new.map(|e| &e.ndn);
        let renamed = matches!((old_top, new_top), (Some(a), Some(b)) if a != b);
        let moved = Moved {
            from: old_top.filter(|_| renamed),
            to: new_top.filter(|_| renamed),
        };
        self.changed(dir, txn, event, &moved, (event.old, event.new), true)?;
        if renamed {
            // The entries below a renamed one moved with it: each is a group renamed, a member
            // renamed, or both.
            let (Some(from), Some(to)) = (moved.from, moved.to) else {
                return Ok(());
            };
            let below = txn
                .subtree(&crate::keys::dn_key(to))
                .map_err(crate::error::store_error)?;
            for (_, id) in below {
                if id == event.id {
                    continue;
                }
                let Some(bytes) = txn.get_entry(id).map_err(crate::error::store_error)? else {
                    continue;
                };
                let now = Directory::parse_stored(bytes)?
                    .to_entry()
                    .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
                let mut was = now.clone();
                let own = now.ndn.rdns().len() - to.rdns().len();
                let mut rdns = now.ndn.rdns()[..own].to_vec();
                rdns.extend(from.rdns().iter().cloned());
                was.ndn = NormDn::from_normalized_rdns(rdns);
                self.changed(dir, txn, event, &moved, (Some(&was), Some(&now)), false)?;
            }
        }
        Ok(())
    }
}

impl MemberOf {
    /// The members a modify of a group ends and starts, read from its changes alone when they are adds
    /// and deletes of member values (so adding one member to a large group costs one member, not the
    /// group); None when the whole lists must be compared (replace, an attribute deleted whole, the
    /// group class added or removed).
    fn delta(
        &self,
        dir: &Directory,
        kind: Kind,
        (old, new): (Option<&Entry>, Option<&Entry>),
        changes: &[Change],
    ) -> Option<(Vec<NormDn>, Vec<NormDn>)> {
        let (Some(old), Some(new)) = (old, new) else {
            return None;
        };
        let class = &self.config.group_class;
        if kind != Kind::Modify || !has_class(dir, old, class) || !has_class(dir, new, class) {
            return None;
        }
        let schema = dir.schema();
        let member = schema.attribute_type(&self.config.member_attr)?;
        let (mut ended, mut started) = (Vec::new(), Vec::new());
        for change in changes {
            let name = &change.modification.name;
            let name = name.split(';').next().unwrap_or(name);
            if !schema
                .attribute_type(name)
                .is_some_and(|at| std::ptr::eq(at, member))
            {
                continue;
            }
            let values = &change.modification.values;
            let list = match change.operation {
                ModifyOperation::Add => &mut started,
                ModifyOperation::Delete if !values.is_empty() => &mut ended,
                _ => return None,
            };
            for value in values {
                list.push(dn_value(dir, value)?.1);
            }
        }
        // A value deleted and added again in one modify is still a member.
        let (ended_set, started_set): (HashSet<NormDn>, HashSet<NormDn>) = (
            ended.iter().cloned().collect(),
            started.iter().cloned().collect(),
        );
        ended.retain(|m| !started_set.contains(m));
        started.retain(|m| !ended_set.contains(m));
        Some((ended, started))
    }

    /// Keeps memberOf and (with refint) member values in step with one entry going from `old` to `new`
    /// (either missing for an add or a delete); `own` when they are the event's entry itself (not one
    /// moved with it).
    fn changed(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
        moved: &Moved<'_>,
        (old, new): (Option<&Entry>, Option<&Entry>),
        own: bool,
    ) -> Result<(), LdapError> {
        let memberof = self.config.memberof_attr.clone();
        let old_group = old.map(|e| &e.ndn);
        let new_group = new.map(|e| (&e.ndn, e.dn.to_string()));
        let renamed = matches!((old_group, &new_group), (Some(a), Some((b, _))) if a != *b);
        let quick = if own && !renamed {
            self.delta(dir, event.kind, (old, new), event.changes)
        } else {
            None
        };
        let (ended, started) = match quick {
            Some(delta) => delta,
            None => {
                let before = self.members(dir, old);
                let after = self.members(dir, new);
                let (before_set, after_set): (HashSet<&NormDn>, HashSet<&NormDn>) = (
                    before.iter().map(|(m, _)| m).collect(),
                    after.iter().map(|(m, _)| m).collect(),
                );
                let ended = before
                    .iter()
                    .filter(|(m, _)| renamed || !after_set.contains(m))
                    .map(|(m, _)| m.clone())
                    .collect();
                let started = after
                    .iter()
                    .filter(|(m, _)| renamed || !before_set.contains(m))
                    .map(|(m, _)| m.clone())
                    .collect();
                (ended, started)
            }
        };
        // Pairs the write ends: members no longer listed, or every member of a group renamed away.
        if let Some(group) = old_group {
            for member in &ended {
                self.update(dir, txn, event, moved, member, &memberof, |values| {
                    remove_dn(dir, values, group)
                })?;
            }
        }
        // Pairs the write starts, under the group's new name.
        if let Some((group, group_dn)) = &new_group {
            for member in &started {
                self.update(dir, txn, event, moved, member, &memberof, |values| {
                    if holds(dir, values, group) {
                        return false;
                    }
                    values.push(group_dn.clone().into_bytes());
                    true
                })?;
            }
        }
        // The member side, with refint: groups that list a deleted or renamed entry follow it.
        let gone_or_renamed = new.is_none() || renamed;
        if !self.config.refint || !gone_or_renamed {
            return Ok(());
        }
        let Some(old) = old else {
            return Ok(());
        };
        let groups: Vec<NormDn> = values_of(dir, old, &memberof)
            .into_iter()
            .filter_map(|v| dn_value(dir, v).map(|(_, n)| n))
            .collect();
        let member_attr = self.config.member_attr.clone();
        for group in groups {
            self.update(dir, txn, event, moved, &group, &member_attr, |values| {
                if !remove_dn(dir, values, &old.ndn) {
                    return false;
                }
                if let Some((_, new_dn)) = &new_group {
                    values.push(new_dn.clone().into_bytes());
                }
                true
            })?;
        }
        Ok(())
    }
}
