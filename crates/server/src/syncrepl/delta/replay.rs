//! delta-syncrepl's replay: a log record as received (reqType, reqDN, reqMod ...) turned into the replica
//! change it describes, computed against the consumer's current entry.

use canopy_core::check::build_entry;
use canopy_core::modify::{modified, ModifyOptions};
use canopy_core::{Attribute, Entry};
use canopy_directory::ReplicaChange;
use canopy_proto::sync::{uuid_from_text, Csn};
use canopy_proto::{Change, Dn, ModifyOperation, PartialAttribute};

use super::{values, PartialAttributes};
use crate::databases::Database;

/// One log record as received.
pub(super) struct Record {
    pub(super) csn: Csn,
    pub(super) start: Vec<u8>,
    attrs: PartialAttributes,
}

impl Record {
    fn one(&self, name: &str) -> Option<&[u8]> {
        values(&self.attrs, name).next().map(Vec::as_slice)
    }

    fn text(&self, name: &str) -> Result<String, String> {
        let value = self
            .one(name)
            .ok_or_else(|| format!("a log record without {name}"))?;
        String::from_utf8(value.to_vec()).map_err(|_| format!("a log record's {name} is not UTF-8"))
    }
}

/// The replica change a record describes, computed against this database's current entry.
pub(super) fn change(
    db: &Database,
    record: &Record,
    elsewhere: &[canopy_schema::NormDn],
) -> Result<Option<ReplicaChange>, String> {
    let kind = record.text("reqType")?;
    let target = record.text("reqDN")?;
    let (dn, ndn) = db
        .normalize(target.as_bytes())
        .map_err(|e| format!("reqDN {target:?}: {}", e.message))?;
    if !db.holds(&ndn) || crate::syncrepl::belongs_elsewhere(elsewhere, &ndn) {
        // Outside what this consumer keeps (another database of the provider, or of this server
        // inside this one's suffix, which its own consumer feeds).
        return Ok(None);
    }
    match kind.as_str() {
        "add" => {
            let mut attrs: Vec<PartialAttribute> = Vec::new();
            for change in mods(record)? {
                if change.operation != ModifyOperation::Add {
                    return Err(format!("an add record of {target} with a non-add reqMod"));
                }
                match attrs
                    .iter_mut()
                    .find(|a| a.name == change.modification.name)
                {
                    Some(attr) => attr.values.extend(change.modification.values),
                    None => attrs.push(change.modification),
                }
            }
            let mut dn = dn;
            db.pretty(&mut dn);
            let entry = build_entry(db.schema(), dn, ndn, &attrs)
                .map_err(|e| format!("add of {target}: {}", e.message))?;
            let uuid = entry_uuid(&entry)
                .ok_or_else(|| format!("the add record of {target} has no entryUUID"))?;
            Ok(Some(ReplicaChange::Put { uuid, entry }))
        }
        "delete" => {
            let uuid = match record.one("reqEntryUUID") {
                Some(text) => uuid_of(text)?,
                None => match load(db, &ndn)? {
                    Some(entry) => entry_uuid(&entry)
                        .ok_or_else(|| format!("{target} has no entryUUID here"))?,
                    None => return Ok(None),
                },
            };
            Ok(Some(ReplicaChange::Delete { uuid }))
        }
        "modify" => {
            let entry =
                load(db, &ndn)?.ok_or_else(|| format!("modify of {target}: no such entry here"))?;
            let uuid =
                entry_uuid(&entry).ok_or_else(|| format!("{target} has no entryUUID here"))?;
            let entry = apply(db, entry, &mods(record)?, &target)?;
            Ok(Some(ReplicaChange::Put { uuid, entry }))
        }
        "modrdn" => {
            let mut entry =
                load(db, &ndn)?.ok_or_else(|| format!("modrdn of {target}: no such entry here"))?;
            let uuid =
                entry_uuid(&entry).ok_or_else(|| format!("{target} has no entryUUID here"))?;
            let new_rdn = record.text("reqNewRDN")?;
            let rdn = Dn::parse(new_rdn.as_bytes())
                .ok()
                .and_then(|d| d.rdns.into_iter().next())
                .ok_or_else(|| format!("reqNewRDN {new_rdn:?} is not an RDN"))?;
            let delete_old = record
                .one("reqDeleteOldRDN")
                .is_some_and(|v| v.eq_ignore_ascii_case(b"TRUE"));
            let parent = match record.one("reqNewSuperior") {
                Some(superior) => {
                    Dn::parse(superior).map_err(|e| format!("reqNewSuperior: {e}"))?
                }
                None => entry.dn.parent(),
            };
            if delete_old {
                if let Some(old) = entry.dn.rdns.first().cloned() {
                    for ava in &old.avas {
                        if let Some(attr) = entry.get_mut(&ava.attr) {
                            attr.values.retain(|v| !v.eq_ignore_ascii_case(&ava.value));
                        }
                    }
                    entry.attrs.retain(|a| !a.values.is_empty());
                }
            }
            for ava in &rdn.avas {
                match entry.get_mut(&ava.attr) {
                    Some(attr) => {
                        if !attr
                            .values
                            .iter()
                            .any(|v| v.eq_ignore_ascii_case(&ava.value))
                        {
                            attr.values.push(ava.value.clone());
                        }
                    }
                    None => {
                        let desc = db
                            .schema()
                            .attribute_type(&ava.attr)
                            .map_or(ava.attr.clone(), |at| at.name().to_string());
                        entry.attrs.push(Attribute {
                            desc,
                            values: vec![ava.value.clone()],
                        });
                    }
                }
            }
            let mut rdns = vec![rdn];
            rdns.extend(parent.rdns);
            let new_dn = Dn { rdns }.to_string();
            let (mut dn, ndn) = db
                .normalize(new_dn.as_bytes())
                .map_err(|e| format!("the new DN {new_dn:?}: {}", e.message))?;
            db.pretty(&mut dn);
            entry.dn = dn;
            entry.ndn = ndn;
            let entry = apply(db, entry, &mods(record)?, &target)?;
            Ok(Some(ReplicaChange::Put { uuid, entry }))
        }
        other => Err(format!("reqType {other:?} is not a write")),
    }
}

fn load(db: &Database, ndn: &canopy_schema::NormDn) -> Result<Option<Entry>, String> {
    let txn = db.read().map_err(|e| e.message)?;
    let Some(id) = db.id_of(&txn, ndn).map_err(|e| e.message)? else {
        return Ok(None);
    };
    let Some(bytes) = db.stored(&txn, id).map_err(|e| e.message)? else {
        return Ok(None);
    };
    canopy_directory::Directory::parse_stored(bytes)
        .map_err(|e| e.message)?
        .to_entry()
        .map(Some)
        .map_err(|_| "a stored entry is unreadable".to_string())
}

/// The record of a log entry, None when it carries no entryCSN (not a change slapd would replay).
pub(super) fn record(attrs: PartialAttributes) -> Result<Option<Record>, String> {
    let csn = values(&attrs, "entryCSN")
        .next()
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(Csn::parse);
    let Some(csn) = csn else { return Ok(None) };
    let start = values(&attrs, "reqStart")
        .next()
        .cloned()
        .unwrap_or_default();
    Ok(Some(Record { csn, start, attrs }))
}

/// reqMod values as modifications: `attr:+ value`, `attr:- value`, `attr:-`, `attr:= value`, `attr:=`,
/// `attr:# value`; consecutive values of the same attribute and operation make one modification.
fn mods(record: &Record) -> Result<Vec<Change>, String> {
    let mut changes: Vec<Change> = Vec::new();
    for value in values(&record.attrs, "reqMod") {
        let colon = value
            .iter()
            .position(|b| *b == b':')
            .ok_or("a reqMod value without ':'")?;
        let name = std::str::from_utf8(&value[..colon])
            .map_err(|_| "a reqMod attribute name is not UTF-8")?
            .to_string();
        let operation = match value.get(colon + 1) {
            Some(b'+') => ModifyOperation::Add,
            Some(b'-') => ModifyOperation::Delete,
            Some(b'=') => ModifyOperation::Replace,
            Some(b'#') => ModifyOperation::Increment,
            _ => {
                return Err(format!(
                    "reqMod {:?}: unknown operation",
                    String::from_utf8_lossy(value)
                ))
            }
        };
        let rest = &value[colon + 2..];
        let item = match rest.first() {
            None => None,
            Some(b' ') => Some(rest[1..].to_vec()),
            Some(_) => {
                return Err(format!(
                    "reqMod {:?}: expected a space",
                    String::from_utf8_lossy(value)
                ))
            }
        };
        let same = changes.last_mut().filter(|last| {
            last.operation == operation
                && last.modification.name == name
                && item.is_some()
                && !last.modification.values.is_empty()
        });
        match (same, item) {
            (Some(last), Some(item)) => last.modification.values.push(item),
            (_, item) => changes.push(Change {
                operation,
                modification: PartialAttribute {
                    name,
                    values: item.into_iter().collect(),
                },
            }),
        }
    }
    Ok(changes)
}

fn apply(db: &Database, entry: Entry, changes: &[Change], target: &str) -> Result<Entry, String> {
    let options = ModifyOptions {
        allow_no_user_modification: true,
        relax: false,
        absent_adds: Vec::new(),
        permissive: false,
    };
    modified(db.schema(), entry, changes, &options)
        .map_err(|e| format!("replaying the changes of {target}: {}", e.message))
}

fn uuid_of(text: &[u8]) -> Result<[u8; 16], String> {
    std::str::from_utf8(text)
        .ok()
        .and_then(uuid_from_text)
        .ok_or_else(|| format!("{:?} is not a UUID", String::from_utf8_lossy(text)))
}

fn entry_uuid(entry: &Entry) -> Option<[u8; 16]> {
    canopy_directory::replica::entry_uuid(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_of(mods: &[&str]) -> Record {
        Record {
            csn: Csn::parse("20261127033042.122526Z#000000#000#000000").unwrap(),
            start: Vec::new(),
            attrs: vec![PartialAttribute {
                name: "reqMod".into(),
                values: mods.iter().map(|m| m.as_bytes().to_vec()).collect(),
            }],
        }
    }

    #[test]
    fn req_mod_values_as_slapd_writes_them() {
        let changes = mods(&record_of(&[
            "sn:= B",
            "mail:+ a@x",
            "mail:+ b@x",
            "cn:- A",
            "cn:+ C",
            "mail:-",
            "description:=",
            "uidNumber:# 1",
        ]))
        .unwrap();
        let shape: Vec<(ModifyOperation, &str, usize)> = changes
            .iter()
            .map(|c| {
                (
                    c.operation,
                    c.modification.name.as_str(),
                    c.modification.values.len(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (ModifyOperation::Replace, "sn", 1),
                (ModifyOperation::Add, "mail", 2),
                (ModifyOperation::Delete, "cn", 1),
                (ModifyOperation::Add, "cn", 1),
                (ModifyOperation::Delete, "mail", 0),
                (ModifyOperation::Replace, "description", 0),
                (ModifyOperation::Increment, "uidNumber", 1),
            ]
        );
        for bad in ["nocolon", "sn:? x", "sn:=x"] {
            assert!(mods(&record_of(&[bad])).is_err(), "{bad}");
        }
    }
}
