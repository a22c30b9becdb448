//! LDIF change records turned into the LDAP write requests that carry them.

use crate::case::ChangeRecord;
use canopy_proto::{
    AddRequest, LdifChange, ModifyDnRequest, ModifyRequest, PartialAttribute, ProtocolOp,
};

/// The request for `rec`. Add attributes are grouped by type in first-seen order, as ldapmodify
/// sends them.
pub fn change_op(rec: &ChangeRecord) -> ProtocolOp {
    match &rec.change {
        LdifChange::Add(attrs) => {
            let mut grouped: Vec<PartialAttribute> = Vec::new();
            for (name, value) in attrs {
                match grouped
                    .iter_mut()
                    .find(|a| a.name.eq_ignore_ascii_case(name))
                {
                    Some(a) => a.values.push(value.clone()),
                    None => grouped.push(PartialAttribute {
                        name: name.clone(),
                        values: vec![value.clone()],
                    }),
                }
            }
            ProtocolOp::AddRequest(AddRequest {
                dn: rec.dn.clone(),
                attributes: grouped,
            })
        }
        LdifChange::Delete => ProtocolOp::DelRequest(rec.dn.clone()),
        LdifChange::Modify(changes) => ProtocolOp::ModifyRequest(ModifyRequest {
            dn: rec.dn.clone(),
            changes: changes.clone(),
        }),
        LdifChange::ModDn {
            new_rdn,
            delete_old_rdn,
            new_superior,
        } => ProtocolOp::ModifyDnRequest(ModifyDnRequest {
            dn: rec.dn.clone(),
            new_rdn: new_rdn.clone(),
            delete_old_rdn: *delete_old_rdn,
            new_superior: new_superior.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_groups_values_by_type() {
        let rec = ChangeRecord {
            dn: b"cn=a,dc=x".to_vec(),
            change: LdifChange::Add(vec![
                ("objectClass".into(), b"top".to_vec()),
                ("cn".into(), b"a".to_vec()),
                ("objectclass".into(), b"person".to_vec()),
            ]),
        };
        let ProtocolOp::AddRequest(add) = change_op(&rec) else {
            panic!()
        };
        assert_eq!(add.attributes.len(), 2);
        assert_eq!(
            add.attributes[0].values,
            vec![b"top".to_vec(), b"person".to_vec()]
        );
    }
}
