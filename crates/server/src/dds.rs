//! The dds overlay in the frontend (RFC 2589): the Refresh extended operation, answered as
//! slapd's dds answers it, and the task that deletes expired dynamic entries every `interval`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant as Clock};

use canopy_ber::{tag, Reader, Writer};
use canopy_core::LdapError;
use canopy_directory::overlay::dds::{self, is_dynamic};
use canopy_directory::overlay::ppolicy::time::Instant;
use canopy_directory::{Action, Directory, Guard, InWrite, OpError, WriteOp};
use canopy_proto::oid::EXOP_REFRESH;
use canopy_proto::{Dn, ResultCode};

use crate::access::Who;
use crate::databases::WriteControls;
use crate::state::{ServerState, State};

const ENTRY_NAME: u8 = 0x80;
const REQUEST_TTL: u8 = 0x81;
const RESPONSE_TTL: u8 = 0x81;

/// RFC 2589 §4.1 SEQUENCE { entryName [0] LDAPDN, requestTtl [1] INTEGER }.
fn decode_request(value: &[u8]) -> Option<(Vec<u8>, i64)> {
    let mut outer = Reader::new(value);
    let mut seq = outer.read_constructed(tag::SEQUENCE).ok()?;
    let name = seq.read_octet_string(ENTRY_NAME).ok()?.to_vec();
    let ttl = seq.read_integer(REQUEST_TTL).ok()?;
    (seq.is_empty() && outer.is_empty()).then_some((name, ttl))
}

/// RFC 2589 §4.2 SEQUENCE { responseTtl [1] INTEGER }.
fn encode_response(ttl: u32) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(&mut out).constructed(tag::SEQUENCE, |w| w.integer(RESPONSE_TTL, i64::from(ttl)));
    out
}

/// The overlay in a database's frontend hooks: it offers the Refresh operation.
pub struct DdsHook;

impl crate::databases::FrontHook for DdsHook {
    fn serves_extended(&self, oid: &str) -> bool {
        oid == EXOP_REFRESH
    }
}

/// Answers a Refresh: the response name and value, or the error slapd gives.
pub async fn refresh(
    state: &State,
    who: &Who,
    value: Option<&[u8]>,
) -> Result<(Option<String>, Option<Vec<u8>>), LdapError> {
    let value = value
        .filter(|v| !v.is_empty())
        .ok_or_else(|| protocol_error("empty request data field in refresh exop"))?;
    let (name, requested) =
        decode_request(value).ok_or_else(|| protocol_error("data decoding error"))?;
    who.require_authenticated()?;
    let (dn, ndn) = state.databases.normalize(&name)?;
    let Some(dir) = state.databases.route(&ndn) else {
        return Err(LdapError::new(ResultCode::NoSuchObject, ""));
    };
    // A database without the overlay, or with it switched off (`state = false`).
    let Some(config) = dir.dds().filter(|c| c.state) else {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "not supported within naming context",
        ));
    };
    let ttl = config.refreshed_ttl(requested)?;
    let changes = dds::refresh_changes(ttl, Instant::now());
    let op = WriteOp::Modify { dn, ndn, changes };
    let outcome = dir
        .update_all(vec![(op, who.clone(), WriteControls::default())], |inner| {
            Arc::new(Refreshing { inner })
        })
        .await;
    match outcome {
        Ok(()) => Ok((Some(EXOP_REFRESH.to_string()), Some(encode_response(ttl)))),
        // slapd answers a missing entry or refused access with the code alone.
        Err((_, OpError::Ldap(e))) if e.code == ResultCode::ObjectClassViolation => Err(e),
        Err((_, error)) => Err(LdapError::new(error.into_ldap().code, "")),
    }
}

fn protocol_error(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProtocolError, text)
}

/// The guard of a Refresh's write: the requester's access to entryTtl, on a dynamic entry only;
/// the operational attributes it sets are the server's to write.
struct Refreshing {
    inner: Arc<dyn Guard>,
}

impl Guard for Refreshing {
    fn requester(&self) -> &str {
        self.inner.requester()
    }

    fn authorize(
        &self,
        dir: &Directory,
        txn: InWrite<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError> {
        if let Action::Modify(entry, changes) = action {
            if !is_dynamic(dir, entry) {
                return Err(LdapError::new(
                    ResultCode::ObjectClassViolation,
                    "refresh operation only applies to dynamic objects",
                ));
            }
            // slapd asks for write access to entryTtl alone; entryExpireTimestamp, which follows
            // from it, is the server's to write (OpenLDAP's test046: a member granted `manage` on
            // entryTtl refreshes a meeting whose other attributes it may only read).
            let ttl: Vec<canopy_proto::Change> = changes
                .iter()
                .filter(|c| c.modification.name.eq_ignore_ascii_case("entryTtl"))
                .cloned()
                .collect();
            return self.inner.authorize(dir, txn, Action::Modify(entry, &ttl));
        }
        self.inner.authorize(dir, txn, action)
    }

    fn manage_dsa_it(&self) -> bool {
        true
    }

    fn after_change(&self, dir: &Directory, txn: InWrite<'_>, id: u64, dn: &Dn) {
        self.inner.after_change(dir, txn, id, dn)
    }

    fn server_internal(&self) -> bool {
        true
    }

    fn conceal(&self, dir: &Directory, txn: InWrite<'_>, error: LdapError) -> LdapError {
        self.inner.conceal(dir, txn, error)
    }
}

/// Starts the expiry task: every second it looks at the current databases and, in each with a dds
/// overlay whose `interval` has passed since its last round, deletes the expired dynamic entries.
pub fn start(state: Arc<ServerState>) {
    tokio::spawn(async move {
        let mut last: HashMap<String, Clock> = HashMap::new();
        let mut ticks = tokio::time::interval(Duration::from_secs(1));
        loop {
            ticks.tick().await;
            let current = state.current();
            for dir in current.databases.iter() {
                // A consumer's copy expires with its provider's deletes.
                let Some(config) = dir.dds().filter(|c| c.state && !dir.is_shadow()) else {
                    continue;
                };
                let suffix = dir.suffix().to_string();
                let due = last.get(&suffix).is_none_or(|at| {
                    at.elapsed() >= Duration::from_secs(u64::from(config.interval))
                });
                if !due {
                    continue;
                }
                last.insert(suffix, Clock::now());
                let by = dir.root_ndn().map(|n| n.to_string()).unwrap_or_default();
                match dds::expire(dir, config.tolerance, &by).await {
                    Ok(0) => {}
                    Ok(count) => tracing::info!(entries = count, "dds: expired entries deleted"),
                    Err(error) => tracing::error!(error = %error.message, "dds: expiry failed"),
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_response_values() {
        let mut value = Vec::new();
        Writer::new(&mut value).constructed(tag::SEQUENCE, |w| {
            w.octet_string(ENTRY_NAME, b"cn=d1,dc=example,dc=com");
            w.integer(REQUEST_TTL, 100);
        });
        assert_eq!(
            decode_request(&value),
            Some((b"cn=d1,dc=example,dc=com".to_vec(), 100))
        );
        assert_eq!(decode_request(b"\x30\x00"), None);
        assert_eq!(decode_request(b"\x30\x02\x80\x00"), None);
        assert_eq!(encode_response(100), [0x30, 0x03, 0x81, 0x01, 0x64]);
        assert_eq!(encode_response(2), [0x30, 0x03, 0x81, 0x01, 0x02]);
    }
}
