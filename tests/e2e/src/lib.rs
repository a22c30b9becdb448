//! Harness for Canopy's end-to-end tests: starts canopy or Debian's slapd, drives it with real
//! LDAP clients, and compares normalized LDIF with files recorded from slapd.
//!
//! The target comes from `CANOPY_E2E_TARGET` (`canopy`, the default, or `slapd`); see
//! docs/testing.md.

pub mod bulk;
pub mod client;
pub mod expect;
pub mod ldif;
pub mod server;
pub mod slapd_conf;
pub mod tempdir;
pub mod tools;

pub use bulk::{bulk_base, bulk_ldif, BULK};
pub use client::{user_dn, Bind, Out, Via};
pub use expect::Transcript;
pub use server::{Server, Target, ROOT_DN, ROOT_PW, SUFFIX};

use std::path::PathBuf;

/// tests/e2e/data: the base LDIF and other inputs.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// tests/e2e/py: python-ldap scripts.
pub fn py_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("py")
}
