//! RFC 4511 §4.9 Modify DN: rename, move under a new superior, whole subtrees included.

use canopy_core::LdapError;
use canopy_proto::{Control, Dn, ModifyDnRequest, Rdn, ResultCode};

use crate::access::{Action, Who};
use crate::directory::{ModifyDn, WriteOp};
use crate::opattrs::Stamp;
use crate::ops::{target, OpError};
use crate::referral::{is_referral, nearest};
use crate::reqctl::RequestControls;
use crate::state::State;

pub async fn modify_dn(
    state: &State,
    who: &Who,
    req: ModifyDnRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    let dir = &state.directory;
    let (dn, ndn) = dir.normalize(&req.dn)?;
    if !dir.holds(&ndn) {
        return Err(state.outside_naming_context(&ndn).into());
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
    let moved_to = new_superior.as_ref().map(|(_, parent)| parent.clone());
    let rename = Some(Action::Rename(moved_to));
    let mut controls = target::before(state, who, ctl, &dn, &ndn, rename)?;
    if let Some((_, new_parent)) = &new_superior {
        refuse_referral_superior(state, new_parent)?;
    }
    let new_parent = match &new_superior {
        Some((_, parent)) => Some(parent.clone()),
        None => ndn.parent(),
    };
    let new_ndn = new_parent.and_then(|parent| {
        let rdn = dir.schema().normalize_dn(&rdn_dn).ok()?;
        Some(parent.child(rdn.rdns().first()?))
    });
    let op = ModifyDn {
        dn,
        ndn,
        new_rdn,
        delete_old_rdn: req.delete_old_rdn,
        new_superior,
    };
    dir.write(WriteOp::ModifyDn(op), who.clone(), Stamp::now())
        .await?;
    if let Some(new_ndn) = new_ndn {
        target::after(state, who, ctl, &new_ndn, &mut controls);
    }
    Ok(controls)
}

/// Moving an entry under a referral object is refused, as slapd refuses it.
fn refuse_referral_superior(
    state: &State,
    parent: &canopy_schema::NormDn,
) -> Result<(), LdapError> {
    let dir = &state.directory;
    let txn = dir.read()?;
    if let Some((0, _, bytes)) = nearest(dir, &txn, parent)? {
        if is_referral(&crate::directory::Directory::parse_stored(bytes)?) {
            return Err(LdapError::new(
                ResultCode::Other,
                "new superior is a referral",
            ));
        }
    }
    Ok(())
}
