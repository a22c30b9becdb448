//! RFC 4511 §4.8 Delete.

use canopy_core::LdapError;
use canopy_proto::{Control, ResultCode};

use crate::access::{Action, Who};
use crate::directory::WriteOp;
use crate::opattrs::Stamp;
use crate::ops::{target, OpError};
use crate::reqctl::RequestControls;
use crate::state::State;

pub async fn delete(
    state: &State,
    who: &Who,
    raw_dn: &[u8],
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    let dir = &state.directory;
    let (dn, ndn) = dir.normalize(raw_dn)?;
    if ndn.is_root() {
        return Err(
            LdapError::new(ResultCode::UnwillingToPerform, "cannot delete the root DSE").into(),
        );
    }
    if !dir.holds(&ndn) {
        return Err(state.outside_naming_context(&ndn).into());
    }
    who.require_authenticated()?;
    let controls = target::before(state, who, ctl, &dn, &ndn, Some(Action::Delete))?;
    dir.write(WriteOp::Delete { dn, ndn }, who.clone(), Stamp::now())
        .await?;
    Ok(controls)
}
