//! RFC 4511 §4.6 Modify (with RFC 4525 increment).

use canopy_core::LdapError;
use canopy_proto::{Control, ModifyRequest, ResultCode};

use crate::access::Who;
use crate::ops::{target, OpError};
use crate::reqctl::RequestControls;
use crate::state::State;
use canopy_directory::WriteOp;

pub async fn modify(
    state: &State,
    who: &Who,
    mut req: ModifyRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(state.outside_naming_context(&ndn).into());
    };
    who.require_authenticated()?;
    crate::security::check_password_write(
        state,
        &who.link,
        req.changes.iter().map(|c| c.modification.name.as_str()),
    )?;
    for change in &req.changes {
        let name = &change.modification.name;
        let type_name = name.split(';').next().unwrap_or(name);
        match dir.schema().attribute_type(type_name) {
            Some(at) if at.no_user_modification => {
                return Err(LdapError::new(
                    ResultCode::ConstraintViolation,
                    format!("{name}: no user modification allowed"),
                )
                .into())
            }
            Some(_) => {}
            None => {
                return Err(LdapError::new(
                    ResultCode::UndefinedAttributeType,
                    format!("{name}: attribute type undefined"),
                )
                .into())
            }
        }
    }
    for change in &mut req.changes {
        dir.pretty_values(std::slice::from_mut(&mut change.modification));
    }
    let mut controls = target::before(dir, who, ctl, &dn, &ndn, None)?;
    if let Some((new, with_old)) = crate::ppolicy::modify_password(&req.changes) {
        let sink = ctl.password_policy.then_some(&ctl.policy_sink);
        crate::ppolicy::check_change(dir, who, &ndn, new.as_deref(), with_old, sink)?;
    }
    // Cleartext passwords are stored hashed (as slapd with ppolicy's `hash cleartext`), SCRAM secrets beside.
    crate::sasl::store::prepare_modify(state, &ndn, &mut req.changes).await?;
    let op = WriteOp::Modify {
        dn,
        ndn: ndn.clone(),
        changes: req.changes,
    };
    dir.update(op, who).await?;
    target::after(dir, who, ctl, &ndn, &mut controls);
    Ok(controls)
}
