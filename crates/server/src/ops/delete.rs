//! RFC 4511 §4.8 Delete.

use canopy_core::LdapError;
use canopy_proto::ResultCode;

use crate::access::Who;
use crate::directory::WriteOp;
use crate::opattrs::Stamp;
use crate::state::State;

pub async fn delete(state: &State, who: &Who, raw_dn: &[u8]) -> Result<(), LdapError> {
    let dir = &state.directory;
    let (dn, ndn) = dir.normalize(raw_dn)?;
    if ndn.is_root() {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "cannot delete the root DSE",
        ));
    }
    if !dir.holds(&ndn) {
        return Err(state.outside_naming_context(&ndn));
    }
    who.require_authenticated()?;
    dir.write(WriteOp::Delete { dn, ndn }, who.clone(), Stamp::now())
        .await
}
