//! Whether any entry uses an attribute type or an object class: for refusing to delete a schema element
//! in use (the live configuration, cn=schema). Through an index when a complete one can answer, else
//! one scan of the database, logged.

use crate::view::Snapshot;
use canopy_core::index::{plan, TAG_EQUALITY, TAG_PRESENT};
use canopy_core::{Entry, LdapError};
use canopy_mdb::ReadOps;
use canopy_proto::{Filter, ResultCode};

use crate::database::Directory;
use crate::error::store_error;

/// The answer of a usage query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// The DN of an entry that uses the element (the first in ID order), None when no entry does.
    pub user: Option<String>,
    /// Every entry was read because no complete index could narrow the question down.
    pub scanned: bool,
}

impl Directory {
    /// Whether an entry holds a value of the attribute type `name_or_oid` (any of its names, its OID,
    /// with or without options). Values of its subtypes do not count: they are another type (whose
    /// definition names this one, which the schema itself tells). Answered from a complete presence
    /// or equality index of the type when there is one, else by reading every entry.
    pub fn attribute_in_use(&self, name_or_oid: &str) -> Result<Usage, LdapError> {
        let schema = self.schema();
        let at = schema.attribute_type(name_or_oid).ok_or_else(|| {
            LdapError::new(
                ResultCode::UndefinedAttributeType,
                format!("{name_or_oid}: no such attribute type"),
            )
        })?;
        let txn = self.read()?;
        let spec = self
            .indexes(&txn)
            .iter()
            .find(|s| {
                schema
                    .attribute_type(&s.attr)
                    .is_some_and(|i| i.oid == at.oid)
            })
            .cloned();
        let candidates = match spec {
            Some(spec) if spec.pres => Some(
                txn.txn()
                    .index_get(&spec.attr, &[TAG_PRESENT])
                    .map_err(store_error)?,
            ),
            // Every value has an equality key (values were checked against the syntax when stored).
            Some(spec) if spec.eq && at.equality.is_some() => Some(
                txn.txn()
                    .index_prefix(&spec.attr, &[TAG_EQUALITY])
                    .map_err(store_error)?,
            ),
            _ => None,
        };
        let uses = |entry: &Entry| {
            entry.attrs.iter().any(|a| {
                let name = a.desc.split(';').next().unwrap_or(&a.desc);
                let same = match schema.attribute_type(name) {
                    Some(t) => t.oid == at.oid,
                    None => at.is_named(name),
                };
                same && !a.values.is_empty()
            })
        };
        self.first_user(&txn, candidates, at.name(), &uses)
    }

    /// Whether an entry lists the object class `name_or_oid` (any of its names or its OID) among its
    /// objectClass values. Entries of a subclass do not count unless they list it too (the schema
    /// tells which classes name it as superior). Answered from the objectClass equality index when it is
    /// complete, else by reading every entry.
    pub fn object_class_in_use(&self, name_or_oid: &str) -> Result<Usage, LdapError> {
        let schema = self.schema();
        let class = schema.object_class(name_or_oid).ok_or_else(|| {
            LdapError::new(
                ResultCode::UnwillingToPerform,
                format!("{name_or_oid}: no such object class"),
            )
        })?;
        let txn = self.read()?;
        let filter = Filter::Equality("objectClass".into(), class.name().as_bytes().to_vec());
        let plan = plan(schema, &self.indexes(&txn), &filter);
        let candidates = crate::candidates::resolve(&txn, &plan)?;
        let uses = |entry: &Entry| {
            entry.get("objectClass").is_some_and(|a| {
                a.values.iter().any(|v| {
                    let text = String::from_utf8_lossy(v);
                    match schema.object_class(&text) {
                        Some(c) => c.oid == class.oid,
                        None => text.eq_ignore_ascii_case(class.name()),
                    }
                })
            })
        };
        self.first_user(&txn, candidates, class.name(), &uses)
    }

    /// The first entry among `candidates` (every entry when None) for which `uses` holds.
    fn first_user(
        &self,
        txn: &Snapshot,
        candidates: Option<Vec<u64>>,
        element: &str,
        uses: &dyn Fn(&Entry) -> bool,
    ) -> Result<Usage, LdapError> {
        let scanned = candidates.is_none();
        let ids = match candidates {
            Some(ids) => ids,
            None => {
                tracing::info!(
                    element,
                    entries = txn.txn().entry_count().unwrap_or(0),
                    "schema usage check: no complete index answers it, reading every entry"
                );
                txn.txn().entry_ids().map_err(store_error)?
            }
        };
        for id in ids {
            let Some(bytes) = txn.txn().get_entry(id).map_err(store_error)? else {
                continue;
            };
            let entry = Directory::parse_stored(bytes)?
                .to_entry()
                .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
            if uses(&entry) {
                return Ok(Usage {
                    user: Some(entry.dn.to_string()),
                    scanned,
                });
            }
        }
        Ok(Usage {
            user: None,
            scanned,
        })
    }
}
