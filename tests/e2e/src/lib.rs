//! The end-to-end suite's own helpers: expected-output files, the bulk data set and python-ldap
//! scripts, on top of the server harness in `canopy-harness` (re-exported here, so tests keep
//! writing `use canopy_e2e::*`).
//!
//! The target comes from `CANOPY_E2E_TARGET` (`canopy`, the default, or `slapd`); see
//! docs/testing.md.

pub mod bulk;
pub mod expect;
pub mod python;
pub mod replicas;

pub use canopy_harness::{
    client, consumer_support, ldif, mesh, preload, replication, server, slapd_conf, tempdir, tools,
};

pub use bulk::{bulk_base, bulk_ldif, Bulk, BULK};
pub use canopy_harness::{
    base_ldif, user_dn, Bind, Out, Server, Target, Via, CONFIG_ROOT_DN, CONFIG_ROOT_PW, ROOT_DN,
    ROOT_PW, SUFFIX,
};
pub use expect::Transcript;
pub use python::Python;

use std::path::PathBuf;

/// tests/e2e/data: LDIF inputs besides the base directory (which is [`base_ldif`]).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// tests/e2e/py: python-ldap scripts.
pub fn py_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("py")
}
