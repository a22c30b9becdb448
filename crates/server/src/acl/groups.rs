//! Group membership for `group=` access clauses, and the entries `set=` clauses read, from a database
//! in the operation's transaction.
//!
//! As slapd's `backend_group`, an attribute that does not hold DNs holds LDAP URLs (a dynamic group:
//! `group/groupOfURLs/memberURL=...`): the requester is a member when its entry lies within a URL's
//! base and scope and matches its filter, tested without access control.

use canopy_core::filter::evaluate;
use canopy_core::Entry;
use canopy_directory::dynlist::Url;
use canopy_directory::Directory;
use canopy_directory::View;
use canopy_proto::Dn;
use canopy_schema::NormDn;

use super::Groups;

/// Group membership for `group=` access clauses, read in the operation's own transaction.
pub struct GroupReader<'t, T: View> {
    pub dir: &'t Directory,
    pub txn: &'t T,
}

impl<T: View> Groups for GroupReader<'_, T> {
    fn entry(&self, ndn: &NormDn) -> Option<Entry> {
        self.dir.entry_at(self.txn, ndn)
    }

    fn is_member(&self, group: &NormDn, class: &str, attr: &str, member: &NormDn) -> bool {
        let Some(entry) = self.dir.entry_at(self.txn, group) else {
            return false;
        };
        let schema = self.dir.schema();
        if !has_value(&entry, "objectClass", |v| {
            v.eq_ignore_ascii_case(class.as_bytes())
        }) {
            return false;
        }
        let holds_dns = schema
            .attribute_type(attr)
            .is_none_or(|at| at.syntax == DN_SYNTAX || at.syntax == NAME_AND_UID_SYNTAX);
        if !holds_dns {
            let mut member_entry = None;
            return has_value(&entry, attr, |value| {
                let Some(url) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|text| Url::parse(text).ok())
                else {
                    return false;
                };
                let Ok(base) = schema.normalize_dn(&url.base) else {
                    return false;
                };
                if !Url::holds(&base, url.scope, member) {
                    return false;
                }
                let found = member_entry
                    .get_or_insert_with(|| self.dir.entry_at(self.txn, member))
                    .as_ref();
                found.is_some_and(|e| evaluate(schema, e, &[], &url.filter).is_true())
            });
        }
        has_value(&entry, attr, |value| {
            Dn::parse(value)
                .ok()
                .and_then(|dn| schema.normalize_dn(&dn).ok())
                .is_some_and(|ndn| &ndn == member)
        })
    }
}

const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";
const NAME_AND_UID_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.34";

/// Whether some value of attribute `attr` (any options) passes `test`.
fn has_value(entry: &Entry, attr: &str, mut test: impl FnMut(&[u8]) -> bool) -> bool {
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
