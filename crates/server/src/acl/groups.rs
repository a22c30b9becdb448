//! Group membership for `group=` access clauses, read from a database in the operation's transaction.

use canopy_core::Entry;
use canopy_directory::Directory;
use canopy_mdb::ReadOps;
use canopy_proto::Dn;
use canopy_schema::NormDn;

use super::Groups;

/// Group membership for `group=` access clauses, read in the operation's own transaction.
pub struct GroupReader<'t, T: ReadOps> {
    pub dir: &'t Directory,
    pub txn: &'t T,
}

impl<T: ReadOps> Groups for GroupReader<'_, T> {
    fn is_member(&self, group: &NormDn, class: &str, attr: &str, member: &NormDn) -> bool {
        let Some(entry) = self.dir.entry_at(self.txn, group) else {
            return false;
        };
        let schema = self.dir.schema();
        has_value(&entry, "objectClass", |v| {
            v.eq_ignore_ascii_case(class.as_bytes())
        }) && has_value(&entry, attr, |value| {
            Dn::parse(value)
                .ok()
                .and_then(|dn| schema.normalize_dn(&dn).ok())
                .is_some_and(|ndn| &ndn == member)
        })
    }
}

/// Whether some value of attribute `attr` (any options) passes `test`.
fn has_value(entry: &Entry, attr: &str, test: impl Fn(&[u8]) -> bool) -> bool {
    entry
        .attrs
        .iter()
        .filter(|a| {
            let name = a.desc.split(';').next().unwrap_or(&a.desc);
            name.eq_ignore_ascii_case(attr)
        })
        .flat_map(|a| &a.values)
        .any(|v| test(v))
}
