//! RFC 4511 §4.9 Modify DN: rename, move under a new superior, whole subtrees included.

use canopy_core::LdapError;
use canopy_proto::{Dn, ModifyDnRequest, Rdn, ResultCode};

use crate::access::Who;
use crate::directory::{ModifyDn, WriteOp};
use crate::opattrs::Stamp;
use crate::state::State;

pub async fn modify_dn(state: &State, who: &Who, req: ModifyDnRequest) -> Result<(), LdapError> {
    let dir = &state.directory;
    let (dn, ndn) = dir.normalize(&req.dn)?;
    if !dir.holds(&ndn) {
        return Err(state.outside_naming_context(&ndn));
    }
    who.require_authenticated()?;
    let new_rdn = Rdn::parse(&req.new_rdn)
        .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN"))?;
    let rdn_dn = Dn {
        rdns: vec![new_rdn.clone()],
    };
    dir.schema()
        .normalize_dn(&rdn_dn)
        .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN"))?;
    let new_superior = match &req.new_superior {
        Some(raw) => Some(dir.normalize(raw)?),
        None => None,
    };
    let op = ModifyDn {
        dn,
        ndn,
        new_rdn,
        delete_old_rdn: req.delete_old_rdn,
        new_superior,
    };
    dir.write(WriteOp::ModifyDn(op), who.clone(), Stamp::now())
        .await
}
