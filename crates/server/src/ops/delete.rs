//! RFC 4511 §4.8 Delete.

use canopy_core::LdapError;
use canopy_proto::{Control, ResultCode};

use crate::access::Who;
use crate::ops::{OpError, Prepared};
use crate::reqctl::RequestControls;
use crate::state::State;
use canopy_directory::WriteOp;

pub async fn delete(
    state: &State,
    who: &Who,
    raw_dn: &[u8],
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    prepare(state, who, raw_dn, ctl)?.run(state).await
}

/// The frontend's part of a delete.
pub fn prepare(
    state: &State,
    who: &Who,
    raw_dn: &[u8],
    ctl: &RequestControls,
) -> Result<Prepared, OpError> {
    let (dn, ndn) = state.databases.normalize(raw_dn)?;
    if ndn.is_root() {
        return Err(
            LdapError::new(ResultCode::UnwillingToPerform, "cannot delete the root DSE").into(),
        );
    }
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(state.outside(&dn.to_string(), None, state.outside_naming_context(&ndn)));
    };
    who.require_authenticated()?;
    Ok(Prepared {
        dir: dir.clone(),
        op: WriteOp::Delete { dn, ndn },
        who: who.clone(),
        ctl: ctl.write(),
    })
}
