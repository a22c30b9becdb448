//! What the backend's integration tests share: a directory opened with a pipeline and indexes, writes
//! as the root DN, reading every entry back, and a replayable random generator.

#![allow(dead_code)]

use std::sync::Arc;

use canopy_core::check::entry_from_attributes_with;
use canopy_core::index::IndexSpec;
use canopy_core::{Entry, LdapError};
use canopy_directory::OpenOptions;
use canopy_directory::{
    structural, Directory, ModifyDn, OpError, Pipeline, Stamp, Unrestricted, WriteOp, WriteRequest,
};
use canopy_proto::{Change, ModifyOperation, PartialAttribute, Rdn};
use canopy_schema::Schema;

pub const ADMIN: &str = "cn=admin,dc=example,dc=com";
pub const SUFFIX: &str = "dc=example,dc=com";

/// Opens the database of SUFFIX in `path` with `schema`, `indexes` and `pipeline` (not durable).
pub fn open_with(
    path: &std::path::Path,
    schema: Schema,
    indexes: Vec<IndexSpec>,
    pipeline: Pipeline,
) -> Directory {
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    Directory::open(Arc::new(schema), SUFFIX, indexes, store, pipeline).unwrap()
}

/// An equality index (and presence, substring when asked) on `attr`.
pub fn index(attr: &str, pres: bool, sub: bool) -> IndexSpec {
    IndexSpec {
        attr: attr.to_string(),
        eq: true,
        pres,
        sub,
        ord: false,
        approx: false,
    }
}

/// Opens the database in `path` with `pipeline`, and an equality index on each of `indexed`.
pub fn open(path: &std::path::Path, indexed: &[&str], pipeline: Pipeline) -> Directory {
    let indexes = indexed
        .iter()
        .map(|attr| IndexSpec {
            attr: attr.to_string(),
            eq: true,
            pres: false,
            sub: false,
            ord: false,
            approx: false,
        })
        .collect();
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    Directory::open(
        Arc::new(Schema::builtin()),
        SUFFIX,
        indexes,
        store,
        pipeline,
    )
    .unwrap()
}

pub async fn write(dir: &Directory, op: WriteOp) -> Result<(), LdapError> {
    write_as(dir, op, ADMIN).await
}

/// A write by `requester`, with nothing refused to it.
pub async fn write_as(dir: &Directory, op: WriteOp, requester: &str) -> Result<(), LdapError> {
    let guard = Arc::new(Unrestricted {
        dn: requester.into(),
    });
    dir.write(WriteRequest { op, guard })
        .await
        .map_err(OpError::into_ldap)
}

/// The add of `dn` with `attrs` (name, value), as the frontend builds it.
pub fn add_op(dir: &Directory, dn: &str, attrs: &[(&str, &str)]) -> Result<WriteOp, LdapError> {
    add_op_as(dir, dn, attrs, ADMIN)
}

/// [`add_op`] for an entry created by `requester`.
pub fn add_op_as(
    dir: &Directory,
    dn: &str,
    attrs: &[(&str, &str)],
    requester: &str,
) -> Result<WriteOp, LdapError> {
    let (dn, ndn) = dir.normalize(dn.as_bytes())?;
    let mut grouped: Vec<PartialAttribute> = Vec::new();
    for (name, value) in attrs {
        let value = value.as_bytes().to_vec();
        match grouped.iter_mut().find(|a| a.name == *name) {
            Some(attr) => attr.values.push(value),
            None => grouped.push(PartialAttribute {
                name: name.to_string(),
                values: vec![value],
            }),
        }
    }
    dir.pretty_values(&mut grouped);
    let mut entry = entry_from_attributes_with(dir.schema(), dn, ndn, &grouped, false)?;
    let structural = structural(dir, &entry)?;
    Stamp::identify(&mut entry, requester, &structural);
    Ok(WriteOp::Add(entry))
}

pub async fn add(dir: &Directory, dn: &str, attrs: &[(&str, &str)]) -> Result<(), LdapError> {
    write(dir, add_op(dir, dn, attrs)?).await
}

pub async fn modify(
    dir: &Directory,
    dn: &str,
    operation: ModifyOperation,
    attr: &str,
    values: &[String],
) -> Result<(), LdapError> {
    let (dn, ndn) = dir.normalize(dn.as_bytes())?;
    let mut changes = vec![Change {
        operation,
        modification: PartialAttribute {
            name: attr.into(),
            values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
        },
    }];
    for change in &mut changes {
        dir.pretty_values(std::slice::from_mut(&mut change.modification));
    }
    write(dir, WriteOp::Modify { dn, ndn, changes }).await
}

pub async fn delete(dir: &Directory, dn: &str) -> Result<(), LdapError> {
    let (dn, ndn) = dir.normalize(dn.as_bytes())?;
    write(dir, WriteOp::Delete { dn, ndn }).await
}

pub async fn rename(
    dir: &Directory,
    dn: &str,
    rdn: &str,
    superior: Option<&str>,
) -> Result<(), LdapError> {
    rename_with(dir, dn, rdn, true, superior).await
}

/// [`rename`], keeping the old RDN's values unless `delete_old_rdn`.
pub async fn rename_with(
    dir: &Directory,
    dn: &str,
    rdn: &str,
    delete_old_rdn: bool,
    superior: Option<&str>,
) -> Result<(), LdapError> {
    let (dn, ndn) = dir.normalize(dn.as_bytes())?;
    let new_superior = match superior {
        Some(s) => Some(dir.normalize(s.as_bytes())?),
        None => None,
    };
    let op = ModifyDn {
        dn,
        ndn,
        new_rdn: Rdn::parse(rdn.as_bytes()).unwrap(),
        delete_old_rdn,
        new_superior,
    };
    write(dir, WriteOp::ModifyDn(op)).await
}

pub fn entries(dir: &Directory) -> Vec<Entry> {
    let txn = dir.read().unwrap();
    let mut out = Vec::new();
    for item in dir.stored_entries(&txn).unwrap() {
        let (_, bytes) = item.unwrap();
        out.push(Directory::parse_stored(bytes).unwrap().to_entry().unwrap());
    }
    out
}

/// The entry named `dn`.
pub fn entry(dir: &Directory, dn: &str) -> Option<Entry> {
    let ndn = norm(dir, dn.as_bytes());
    entries(dir).into_iter().find(|e| e.ndn.as_str() == ndn)
}

/// The values of `attr` in the entry named `dn`, as strings (empty when either is missing).
pub fn values(dir: &Directory, dn: &str, attr: &str) -> Vec<String> {
    entry(dir, dn)
        .and_then(|e| e.get(attr).cloned())
        .map(|a| {
            a.values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A DN normalized.
pub fn norm(dir: &Directory, value: &[u8]) -> String {
    let (_, ndn) = dir.normalize(value).unwrap();
    ndn.as_str().to_string()
}

/// A small deterministic generator, so a failure can be replayed from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<T: Clone>(&mut self, from: &[T]) -> Option<T> {
        from.get(self.below(from.len())).cloned()
    }
}
