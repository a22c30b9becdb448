//! A search's reading of other entries on behalf of its requester (`EntryReading`), for a
//! frontend hook's answer on each entry it sends: in the search's snapshot, through the requester's
//! access views.

use canopy_core::wire::{attributes, StoredEntry};
use canopy_core::LdapError;
use canopy_directory::{Directory, Snapshot};
use canopy_proto::Dn;
use canopy_schema::Schema;

use super::reader::SearchRequester;
use crate::acl::{privileges, EntryView, SearchAccess};
use crate::databases::{Database, EntryReading, ReadAttributes};

/// The reads of one entry's answer.
pub(super) struct Following<'a, 'r> {
    pub dir: &'a Database,
    pub txn: &'a Snapshot,
    pub access: &'a SearchAccess<'r>,
    /// The access view of the entry sent (None: the root DN, who reads everything).
    pub view: Option<&'a EntryView>,
    pub requester: &'a mut SearchRequester<'r>,
}

/// The values of the attribute `name` (a schema name, no options) that `stored` holds.
pub(crate) fn held<'a>(
    schema: &Schema,
    stored: &StoredEntry<'a>,
    name: &str,
) -> Option<Vec<&'a [u8]>> {
    let wanted = schema.attribute_type(name)?;
    [stored.user, stored.secret, stored.operational]
        .into_iter()
        .flat_map(attributes)
        .filter_map(Result::ok)
        .find(|(desc, _)| {
            !desc.contains(';')
                && schema
                    .attribute_type(desc)
                    .is_some_and(|at| std::ptr::eq(at, wanted))
        })
        .map(|(_, values)| values)
}

impl EntryReading for Following<'_, '_> {
    fn reads_here(&self, desc: &str) -> bool {
        self.view
            .is_none_or(|view| self.access.allows_attr(view, desc, privileges::READ))
    }

    fn follow(&mut self, value: &[u8], names: &[String]) -> Result<ReadAttributes, LdapError> {
        let schema = self.dir.schema();
        let Some(ndn) = Dn::parse(value)
            .ok()
            .and_then(|dn| schema.normalize_dn(&dn).ok())
        else {
            return Ok(Vec::new());
        };
        let Some((_, bytes)) = self.dir.lookup(self.txn, &ndn)? else {
            return Ok(Vec::new());
        };
        let stored = Directory::parse_stored(bytes)?;
        if !self.requester.reads_entry(&ndn, &stored) {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for name in names {
            let Some(values) = held(schema, &stored, name) else {
                continue;
            };
            if let Some(values) = self.requester.readable(&ndn, &stored, name, values) {
                found.push((
                    name.clone(),
                    values.into_iter().map(<[u8]>::to_vec).collect(),
                ));
            }
        }
        Ok(found)
    }
}
