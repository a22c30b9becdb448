//! slapd's deref overlay in the frontend, `DerefHook`: it serves the deref control on the searches of
//! its database, answered on each search result entry by `ops/search/deref.rs`.

use canopy_proto::oid::CONTROL_DEREF;

use crate::databases::FrontHook;

/// The deref overlay of one database; it has no options (nor has slapd's).
pub struct DerefHook;

impl FrontHook for DerefHook {
    fn serves_control(&self, oid: &str) -> bool {
        oid == CONTROL_DEREF
    }
}
