//! RFC 4511 §4.12 Extended operations: WhoAmI (RFC 4532) and Password Modify (RFC 3062). StartTLS is
//! answered by the connection (`conn.rs`), which owns the stream.

use canopy_core::LdapError;
use canopy_proto::oid::{EXOP_PASSWORD_MODIFY, EXOP_WHO_AM_I};
use canopy_proto::{
    encode_passwd_modify_response, Change, ExtendedRequest, ExtendedResponse, LdapResult,
    ModifyOperation, PartialAttribute, PasswdModifyRequest, ResultCode,
};

use crate::access::Who;
use crate::ops::error_result;
use crate::reqctl::RequestControls;
use crate::state::State;
use canopy_directory::{Directory, OpError, WriteOp};

pub async fn extended(
    state: &State,
    who: &Who,
    req: ExtendedRequest,
    ctl: &RequestControls,
) -> ExtendedResponse {
    let outcome = match req.name.as_str() {
        // RFC 4532 §2: the request has no value (slapd: protocolError).
        EXOP_WHO_AM_I if req.value.is_some() => Err(LdapError::new(
            ResultCode::ProtocolError,
            "who am i takes no request value",
        )),
        EXOP_WHO_AM_I => {
            let authz = if who.ndn.is_some() {
                format!("dn:{}", who.dn)
            } else {
                String::new()
            };
            Ok((None, Some(authz.into_bytes())))
        }
        EXOP_PASSWORD_MODIFY => password_modify(state, who, req.value.as_deref(), ctl)
            .await
            .map(|v| (None, v)),
        // An overlay's own operation, where a database has that overlay.
        other => match crate::extensions::run(state, who, other, req.value.as_deref()).await {
            Some(outcome) => outcome,
            None => Err(LdapError::new(
                ResultCode::ProtocolError,
                format!("{other} not supported"),
            )),
        },
    };
    match outcome {
        Ok((name, value)) => ExtendedResponse {
            result: LdapResult::success(),
            name,
            value,
        },
        Err(e) => ExtendedResponse {
            result: error_result(e),
            name: None,
            value: None,
        },
    }
}

async fn password_modify(
    state: &State,
    who: &Who,
    value: Option<&[u8]>,
    ctl: &RequestControls,
) -> Result<Option<Vec<u8>>, LdapError> {
    let req = match value {
        Some(v) => PasswdModifyRequest::decode(v).map_err(|_| {
            LdapError::new(
                ResultCode::ProtocolError,
                "password modify: bad request value",
            )
        })?,
        None => PasswdModifyRequest {
            user_identity: None,
            old_passwd: None,
            new_passwd: None,
        },
    };
    crate::security::require_protected_password_change(state, &who.link)?;
    who.require_authenticated()?;
    let dbs = &state.databases;
    let (dn, ndn) = match &req.user_identity {
        Some(id) => {
            let raw = id.strip_prefix(b"dn:").unwrap_or(id);
            // slapd's passwd exop answers an identity that is no DN with invalidAttributeSyntax.
            dbs.normalize(raw).map_err(|_| {
                LdapError::new(
                    ResultCode::InvalidAttributeSyntax,
                    "password modify: userIdentity is not a DN",
                )
            })?
        }
        None => match &who.ndn {
            Some(_) => dbs.normalize(who.dn.as_bytes())?,
            None => {
                return Err(LdapError::new(
                    ResultCode::StrongerAuthRequired,
                    "modifications require authentication",
                ))
            }
        },
    };
    let Some(dir) = dbs.route(&ndn) else {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "password change only in this naming context",
        ));
    };
    let who = dir.requester(who);
    let who = who.as_ref();
    if let Some(old) = &req.old_passwd {
        if !who.root {
            let txn = dir.read()?;
            let Some((_, bytes)) = dir.lookup(&txn, &ndn)? else {
                return Err(dir.no_such_object(&txn, &ndn, &dn));
            };
            let stored = Directory::parse_stored(bytes)?;
            let mut values: Vec<Vec<u8>> = Vec::new();
            for attr in canopy_core::wire::attributes(stored.secret).flatten() {
                values.extend(attr.1.iter().map(|v| v.to_vec()));
            }
            drop(txn);
            // A slow hash: off the async workers, through the hash gate as a bind's check.
            let old = old.clone();
            let source = crate::hash_gate::Source::of(&who.link);
            let ok = state
                .hash_gate
                .run(source, move || {
                    values
                        .iter()
                        .any(|v| canopy_password::verify(v, &old).unwrap_or(false))
                })
                .await
                .unwrap_or(false);
            if !ok {
                return Err(LdapError::new(
                    ResultCode::UnwillingToPerform,
                    "unwilling to verify old password",
                ));
            }
        }
    }
    let generated = req.new_passwd.is_none();
    let new_password = match req.new_passwd {
        Some(p) if !p.is_empty() => p,
        _ => canopy_password::generate_password().into_bytes(),
    };
    let slot = ctl.password_policy.then_some(&ctl.policy_sink);
    dir.check_password(who, &ndn, &new_password, req.old_passwd.is_some(), slot)?;
    // The new password is hashed in the default scheme with SCRAM secrets beside it; here even a value
    // that starts with `{...}` is a password, not a stored hash.
    let hashed = crate::sasl::store::hash_cleartext(state, new_password.clone()).await?;
    let changes = vec![
        Change {
            operation: ModifyOperation::Replace,
            modification: PartialAttribute {
                name: "userPassword".into(),
                values: vec![hashed.values.concat()],
            },
        },
        Change {
            operation: ModifyOperation::Replace,
            modification: PartialAttribute {
                name: crate::sasl::store::AUTH_PASSWORD.into(),
                values: hashed.scram,
            },
        },
    ];
    // slapd answers the extended operation without a matched DN.
    // The password is changed by an internal modify, which treats a referral object as an entry.
    let internal = crate::databases::WriteControls::internal();
    match dir
        .update(WriteOp::Modify { dn, ndn, changes }, who, &internal)
        .await
    {
        Ok(_) => {}
        Err(OpError::Ldap(mut e)) => {
            e.matched_dn = None;
            return Err(e);
        }
        Err(referral) => return Err(referral.into_ldap()),
    }
    Ok(generated.then(|| encode_passwd_modify_response(&new_password)))
}
