//! RFC 4511 §4.7 Add.

use canopy_core::check::{add_restrictions, build_entry};
use canopy_core::{Attribute, LdapError};
use canopy_proto::{AddRequest, Control, PartialAttribute, ResultCode};

use crate::access::Who;
use crate::ops::{OpError, Prepared};
use crate::reqctl::RequestControls;
use crate::state::State;
use canopy_directory::{structural, Stamp, WriteOp};

/// slapd's order: the DN, the attribute list (descriptions, syntaxes, values given twice, the RDN values),
/// authentication, referrals, the no-user-modification rule and descriptions given twice, the schema,
/// then the write (the assertion, an existing entry, the parent, access, the post-read).
pub async fn add(
    state: &State,
    who: &Who,
    req: AddRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    prepare(state, who, req, ctl, false).await?.run(state).await
}

/// The frontend's part of an add. `queued`: the write waits in a transaction, whose end checks the
/// entry against the schema inside the write (as slapd's back-mdb does), not here.
pub async fn prepare(
    state: &State,
    who: &Who,
    mut req: AddRequest,
    ctl: &RequestControls,
    queued: bool,
) -> Result<Prepared, OpError> {
    // slapd refuses an empty value set while decoding the request, before the DN.
    if req.attributes.iter().any(|a| a.values.is_empty()) {
        return Err(
            LdapError::new(ResultCode::ProtocolError, "no values for attribute type").into(),
        );
    }
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    if req.attributes.is_empty() {
        return Err(LdapError::new(ResultCode::ProtocolError, "no attributes provided").into());
    }
    let schema = state.databases.schema().clone();
    let dir = state.databases.route(&ndn);
    if let Some(dir) = dir {
        dir.pretty_values(&mut req.attributes);
    }
    let mut entry = build_entry(&schema, dn, ndn, &req.attributes)?;
    let Some(dir) = dir else {
        return Err(state.outside(
            &entry.dn.to_string(),
            None,
            LdapError::new(
                ResultCode::UnwillingToPerform,
                "no global superior knowledge",
            ),
        ));
    };
    dir.pretty(&mut entry.dn);
    let who = dir.requester(who);
    let who = who.as_ref();
    who.require_authenticated()?;
    crate::security::check_password_write(
        state,
        &who.link,
        req.attributes.iter().map(|a| a.name.as_str()),
    )?;
    add_restrictions(&schema, &req.attributes, false, ctl.relax)?;
    // The overlays' checks see the password as sent, before it is hashed.
    dir.check_add(who, &entry, ctl.password_policy.then_some(&ctl.policy_sink))?;
    hash_passwords(state, &mut entry.attrs).await?;
    if !queued {
        canopy_core::check::check_entry(dir.schema(), &entry)?;
    }
    let structural = structural(dir, &entry)?;
    // The time and CSN are stamped on the writer thread (the pipeline's stamping hook).
    Stamp::identify(&mut entry, &who.dn, &structural);
    Ok(Prepared {
        dir: dir.clone(),
        op: WriteOp::Add(entry),
        who: who.clone(),
        ctl: ctl.write(),
    })
}

/// Cleartext passwords are stored hashed (as slapd with ppolicy's `hash cleartext`), SCRAM secrets beside.
async fn hash_passwords(state: &State, attrs: &mut Vec<Attribute>) -> Result<(), LdapError> {
    let mut parts: Vec<PartialAttribute> = attrs
        .drain(..)
        .map(|a| PartialAttribute {
            name: a.desc,
            values: a.values,
        })
        .collect();
    let result = crate::sasl::store::prepare_add(state, &mut parts).await;
    attrs.extend(parts.into_iter().map(|p| Attribute {
        desc: p.name,
        values: p.values,
    }));
    result
}
