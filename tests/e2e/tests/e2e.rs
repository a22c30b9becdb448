//! The end-to-end suite: one test binary, one module per area (files in tests/e2e/). Each test
//! starts its own server (canopy, or slapd with CANOPY_E2E_TARGET=slapd) loaded with
//! crates/harness/data/base.ldif, and drives it only through ldap-utils and python-ldap.

#[path = "e2e/access.rs"]
mod access;
#[path = "e2e/accesslog.rs"]
mod accesslog;
#[path = "e2e/acl.rs"]
mod acl;
#[path = "e2e/bind.rs"]
mod bind;
#[path = "e2e/bulk.rs"]
mod bulk;
#[path = "e2e/canopy_only.rs"]
mod canopy_only;
#[path = "e2e/config.rs"]
mod config;
#[path = "e2e/controls.rs"]
mod controls;
#[path = "e2e/crash.rs"]
mod crash;
#[path = "e2e/databases.rs"]
mod databases;
#[path = "e2e/dds.rs"]
mod dds;
#[path = "e2e/dynlist.rs"]
mod dynlist;
#[path = "e2e/extended.rs"]
mod extended;
#[path = "e2e/extra_schema.rs"]
mod extra_schema;
#[path = "e2e/features.rs"]
mod features;
#[path = "e2e/gssapi.rs"]
mod gssapi;
#[path = "e2e/hostile.rs"]
mod hostile;
#[path = "e2e/limits.rs"]
mod limits;
#[path = "e2e/migration.rs"]
mod migration;
#[path = "e2e/multiprovider.rs"]
mod multiprovider;
#[path = "e2e/observe.rs"]
mod observe;
#[path = "e2e/operations.rs"]
mod operations;
#[path = "e2e/otp.rs"]
mod otp;
#[path = "e2e/overlays.rs"]
mod overlays;
#[path = "e2e/ppolicy.rs"]
mod ppolicy;
#[path = "e2e/proxyauthz.rs"]
mod proxyauthz;
#[path = "e2e/python.rs"]
mod python;
#[path = "e2e/robustness.rs"]
mod robustness;
#[path = "e2e/rootdse.rs"]
mod rootdse;
#[path = "e2e/sasl.rs"]
mod sasl;
#[path = "e2e/saslauthd.rs"]
mod saslauthd;
#[path = "e2e/search.rs"]
mod search;
#[path = "e2e/secrets.rs"]
mod secrets;
#[path = "e2e/slow_hashes.rs"]
mod slow_hashes;
#[path = "e2e/sort.rs"]
mod sort;
#[path = "e2e/syncprov.rs"]
mod syncprov;
#[path = "e2e/syncrepl_canopy.rs"]
mod syncrepl_canopy;
#[path = "e2e/syncrepl_consumer.rs"]
mod syncrepl_consumer;
#[path = "e2e/syncrepl_databases.rs"]
mod syncrepl_databases;
#[path = "e2e/syncrepl_delta.rs"]
mod syncrepl_delta;
#[path = "e2e/syncrepl_preload.rs"]
mod syncrepl_preload;
#[path = "e2e/tls.rs"]
mod tls;
#[path = "e2e/tools.rs"]
mod tools;
#[path = "e2e/txn.rs"]
mod txn;
#[path = "e2e/write.rs"]
mod write;
