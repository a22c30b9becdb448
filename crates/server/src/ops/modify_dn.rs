//! RFC 4511 §4.9 Modify DN: rename, move under a new superior, whole subtrees included.

use canopy_core::LdapError;
use canopy_proto::{Control, Dn, ModifyDnRequest, Rdn, ResultCode};

use crate::access::Who;
use canopy_directory::{ModifyDn, WriteOp};

use crate::ops::{OpError, Prepared};
use crate::reqctl::RequestControls;
use crate::state::State;

/// slapd's order: the DNs, an entry placed below or above itself, authentication,
/// then the write (parent, entry, assertion and pre-read, access, new superior, new name, post-read).
pub async fn modify_dn(
    state: &State,
    who: &Who,
    req: ModifyDnRequest,
    ctl: &RequestControls,
) -> Result<Vec<Control>, OpError> {
    prepare(state, who, req, ctl)?.run(state).await
}

/// The frontend's part of a modify DN.
pub fn prepare(
    state: &State,
    who: &Who,
    req: ModifyDnRequest,
    ctl: &RequestControls,
) -> Result<Prepared, OpError> {
    let (dn, ndn) = state.databases.normalize(&req.dn)?;
    let invalid_rdn = || LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN");
    let new_rdn = Rdn::parse(&req.new_rdn).map_err(|_| invalid_rdn())?;
    let rdn_dn = Dn {
        rdns: vec![new_rdn.clone()],
    };
    // An unknown type makes the new RDN invalid (slapd's dnPrettyNormal), not undefinedAttributeType.
    let schema = state.databases.schema();
    let rdn_ndn = schema.normalize_dn(&rdn_dn).map_err(|_| invalid_rdn())?;
    let new_superior = match &req.new_superior {
        Some(raw) => Some(state.databases.normalize(raw)?),
        None => None,
    };
    // The new DN must be neither below nor above the entry (slapd's frontend, before any lookup).
    let new_parent = match &new_superior {
        Some((_, parent)) => Some(parent.clone()),
        None => ndn.parent(),
    };
    let new_ndn = new_parent.and_then(|parent| Some(parent.child(rdn_ndn.rdns().first()?)));
    if let Some(new_ndn) = &new_ndn {
        if *new_ndn != ndn && ndn.is_suffix_of(new_ndn) {
            return Err(unwilling("cannot place an entry below itself").into());
        }
        if *new_ndn != ndn && new_ndn.is_suffix_of(&ndn) {
            return Err(unwilling("cannot place an entry above itself").into());
        }
    }
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(state.outside(&dn.to_string(), None, state.outside_naming_context(&ndn)));
    };
    who.require_authenticated()?;
    dir.check_writable()?;
    // A write never crosses databases: slapd's frontend refuses a new superior that another
    // database (or none) holds, and a new DN that another database holds (a rename onto the
    // suffix of a database glued below), before the backend looks at either entry.
    let elsewhere = |target: &canopy_schema::NormDn| {
        !state
            .databases
            .route(target)
            .is_some_and(|other| std::ptr::eq(other, dir))
    };
    if new_superior
        .as_ref()
        .is_some_and(|(_, parent)| elsewhere(parent))
        || new_ndn.as_ref().is_some_and(elsewhere)
    {
        return Err(LdapError::new(
            ResultCode::AffectsMultipleDsas,
            "cannot rename between DSAs",
        )
        .into());
    }
    let op = ModifyDn {
        dn,
        ndn,
        new_rdn,
        delete_old_rdn: req.delete_old_rdn,
        new_superior,
    };
    Ok(Prepared {
        dir: dir.clone(),
        op: WriteOp::ModifyDn(op),
        who: who.clone(),
        ctl: ctl.write(),
    })
}

fn unwilling(text: &str) -> LdapError {
    LdapError::new(ResultCode::UnwillingToPerform, text)
}
