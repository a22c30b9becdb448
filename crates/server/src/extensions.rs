//! Extended operations an overlay brings (slapd's overlays register theirs when configured): run
//! when some database's frontend hooks serve the operation's OID.

use canopy_core::LdapError;
use canopy_proto::oid::EXOP_REFRESH;

use crate::access::Who;
use crate::state::State;

/// The outcome of the extended operation `name` (its response name and value), or None when no
/// configured overlay serves it.
pub async fn run(
    state: &State,
    who: &Who,
    name: &str,
    value: Option<&[u8]>,
) -> Option<Result<(Option<String>, Option<Vec<u8>>), LdapError>> {
    let served = state
        .databases
        .iter()
        .any(|db| db.front_hooks().any(|hook| hook.serves_extended(name)));
    if !served {
        return None;
    }
    match name {
        EXOP_REFRESH => Some(crate::dds::refresh(state, who, value).await),
        _ => None,
    }
}
