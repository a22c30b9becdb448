//! Test-support library: starts the real canopy binary or Debian's slapd on a free loopback port
//! in a scratch directory, runs real LDAP clients against it, and normalizes their LDIF output.
//!
//! Shared by the end-to-end suite (`tests/e2e`) and the differential conformance tool
//! (`crates/conformance`), so that neither depends on the other. Only std: the servers are driven
//! through processes and sockets, never through Canopy's own crates. The target comes from
//! `CANOPY_E2E_TARGET` (`canopy`, the default, or `slapd`); see docs/testing.md.

pub mod base;
pub mod client;
pub mod consumer_support;
pub mod ldif;
pub mod mesh;
pub mod online;
pub mod preload;
pub mod replication;
pub mod replmodel;
pub mod server;
pub mod slapd_conf;
pub mod tempdir;
pub mod tools;

pub use base::{CONFIG_ROOT_DN, CONFIG_ROOT_PW, ROOT_DN, ROOT_PW, SUFFIX};
pub use client::{user_dn, Bind, Out, Via};
pub use server::{Server, Target};

use std::path::PathBuf;

/// crates/harness/data/base.ldif: the directory every `Server::start*` loads (suffix [`SUFFIX`],
/// one user per password scheme, groups), which the e2e expected files were recorded from.
pub fn base_ldif() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join("base.ldif")
}
