//! RFC 4511 §4.9 Modify DN: rename, move under a new superior, whole subtrees included.

use canopy_core::LdapError;
use canopy_proto::{Control, Dn, ModifyDnRequest, Rdn, ResultCode};

use crate::access::{Action, Who};
use canopy_directory::referral::{is_referral, nearest};
use canopy_directory::{Directory, ModifyDn, WriteOp};

use crate::databases::Database;
use crate::ops::{target, OpError};
use crate::reqctl::RequestControls;
use crate::state::State;

pub async fn modify_dn(
    state: &State,
    who: &Who,
    req: ModifyDnRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(state.outside_naming_context(&ndn).into());
    };
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
    let mut controls = target::before(dir, who, ctl, &dn, &ndn, rename)?;
    if let Some((_, new_parent)) = &new_superior {
        refuse_referral_superior(dir, new_parent)?;
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
    dir.update(WriteOp::ModifyDn(op), who).await?;
    if let Some(new_ndn) = new_ndn {
        target::after(dir, who, ctl, &new_ndn, &mut controls);
    }
    Ok(controls)
}

/// Moving an entry under a referral object is refused, as slapd refuses it.
fn refuse_referral_superior(
    dir: &Database,
    parent: &canopy_schema::NormDn,
) -> Result<(), LdapError> {
    let txn = dir.read()?;
    if let Some((0, _, bytes)) = nearest(dir, &txn, parent)? {
        if is_referral(&Directory::parse_stored(bytes)?) {
            return Err(LdapError::new(
                ResultCode::Other,
                "new superior is a referral",
            ));
        }
    }
    Ok(())
}
