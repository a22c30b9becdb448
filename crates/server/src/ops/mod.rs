//! One module per LDAP operation; each turns a decoded request into the responses it sends.

pub mod add;
pub mod bind;
pub mod compare;
pub mod delete;
pub mod extended;
pub mod modify;
pub mod modify_dn;
pub mod search;
pub mod sync;

use canopy_core::LdapError;
use canopy_proto::{Control, LdapMessage, LdapResult, ProtocolOp};

pub use canopy_directory::OpError;

/// A write the frontend has checked, ready for its database's writer: run at once
/// ([`Prepared::run`]) or queued in the connection's transaction (txn.rs).
pub struct Prepared {
    pub dir: crate::databases::Database,
    pub op: canopy_directory::WriteOp,
    pub who: crate::access::Who,
    pub ctl: crate::databases::WriteControls,
}

impl Prepared {
    pub async fn run(self, state: &crate::state::State) -> Result<Vec<Control>, OpError> {
        state.update(&self.dir, self.op, &self.who, &self.ctl).await
    }
}

/// The result and response controls of an update.
pub fn update_result(outcome: Result<Vec<Control>, OpError>) -> (LdapResult, Vec<Control>) {
    match outcome {
        Ok(controls) => (LdapResult::success(), controls),
        Err(e) => (failure_result(e), Vec::new()),
    }
}

pub fn failure_result(e: OpError) -> LdapResult {
    match e {
        OpError::Ldap(e) => error_result(e),
        OpError::Referral(r) => r.into_result(),
    }
}

/// Encodes one response message.
pub fn encode(message_id: i32, op: ProtocolOp, controls: Vec<Control>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    LdapMessage {
        message_id,
        op,
        controls,
    }
    .encode(&mut out);
    out
}

pub fn error_result(e: LdapError) -> LdapResult {
    let mut result = LdapResult::new(e.code, e.message);
    if let Some(matched) = e.matched_dn {
        result.matched_dn = matched.into_bytes();
    }
    result
}
