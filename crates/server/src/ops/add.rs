//! RFC 4511 §4.7 Add.

use canopy_core::check::entry_from_attributes;
use canopy_core::LdapError;
use canopy_proto::{AddRequest, Control, ResultCode};

use crate::access::Who;
use crate::ops::{target, OpError};
use crate::reqctl::RequestControls;
use crate::state::State;
use canopy_directory::{structural, Stamp, WriteOp};

pub async fn add(
    state: &State,
    who: &Who,
    mut req: AddRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    if req.attributes.is_empty() {
        return Err(LdapError::new(ResultCode::ProtocolError, "no attributes provided").into());
    }
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "no global superior knowledge",
        )
        .into());
    };
    who.require_authenticated()?;
    crate::security::check_password_write(
        state,
        &who.link,
        req.attributes.iter().map(|a| a.name.as_str()),
    )?;
    for attr in &req.attributes {
        let name = attr.name.split(';').next().unwrap_or(&attr.name);
        if let Some(at) = dir.schema().attribute_type(name) {
            if at.no_user_modification {
                return Err(LdapError::new(
                    ResultCode::ConstraintViolation,
                    format!("{}: no user modification allowed", attr.name),
                )
                .into());
            }
        }
    }
    dir.pretty_values(&mut req.attributes);
    if dir.ppolicy().is_some() {
        // The policy checks the password as sent, before it is hashed.
        let (dn, ndn) = (dn.clone(), ndn.clone());
        let entry = entry_from_attributes(dir.schema(), dn, ndn, &req.attributes)?;
        let sink = ctl.password_policy.then_some(&ctl.policy_sink);
        crate::ppolicy::check_add(dir, who, &entry, sink)?;
    }
    crate::sasl::store::prepare_add(state, &mut req.attributes).await?;
    let mut entry = entry_from_attributes(dir.schema(), dn, ndn, &req.attributes)?;
    canopy_core::check::check_entry(dir.schema(), &entry)?;
    let structural = structural(dir, &entry)?;
    // The time and CSN are stamped on the writer thread (the pipeline's stamping hook).
    Stamp::identify(&mut entry, &who.dn, &structural);
    target::before_add(dir, who, ctl, &entry)?;
    let ndn = entry.ndn.clone();
    dir.update(WriteOp::Add(entry), who).await?;
    let mut controls = Vec::new();
    target::after(dir, who, ctl, &ndn, &mut controls);
    Ok(controls)
}
