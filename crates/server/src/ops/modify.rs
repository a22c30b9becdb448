//! RFC 4511 §4.6 Modify (with RFC 4525 increment).

use canopy_proto::{Control, ModifyRequest};

use crate::access::Who;
use crate::ops::{OpError, Prepared};
use crate::reqctl::RequestControls;
use crate::state::State;
use canopy_directory::WriteOp;

/// slapd's order: the DN, each change on its own (`slap_mods_check`), authentication, referrals, the
/// no-user-modification rule, then the write (existence, referral, assertion and pre-read, access, apply,
/// post-read).
pub async fn modify(
    state: &State,
    who: &Who,
    req: ModifyRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    prepare(state, who, req, ctl).await?.run(state).await
}

/// The frontend's part of a modify.
pub async fn prepare(
    state: &State,
    who: &Who,
    mut req: ModifyRequest,
    ctl: &RequestControls,
) -> Result<Prepared, OpError> {
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    let schema = state.databases.schema();
    canopy_core::modify::check_changes(schema, &req.changes)?;
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(state.outside(&dn.to_string(), None, state.outside_naming_context(&ndn)));
    };
    let who = dir.requester(who);
    let who = who.as_ref();
    who.require_authenticated()?;
    crate::security::check_password_write(
        state,
        &who.link,
        req.changes.iter().map(|c| c.modification.name.as_str()),
    )?;
    canopy_core::modify::check_no_user_modification(dir.schema(), &req.changes, ctl.relax)?;
    for change in &mut req.changes {
        dir.pretty_values(std::slice::from_mut(&mut change.modification));
    }
    // The overlays' checks (before the backend in slapd) see a new password as sent.
    let slot = ctl.password_policy.then_some(&ctl.policy_sink);
    dir.check_modify(who, &ndn, &req.changes, slot)?;
    // Cleartext passwords are stored hashed (as slapd with ppolicy's `hash cleartext`), SCRAM secrets beside.
    crate::sasl::store::prepare_modify(state, &ndn, &mut req.changes).await?;
    let op = WriteOp::Modify {
        dn,
        ndn: ndn.clone(),
        changes: req.changes,
    };
    Ok(Prepared {
        dir: dir.clone(),
        op,
        who: who.clone(),
        ctl: ctl.write(),
    })
}
