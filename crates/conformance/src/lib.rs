//! Differential conformance tester: runs the same LDAP requests against Debian's slapd and
//! canopy, loaded with the same data, and reports every difference (docs/conformance.md).

pub mod case;
pub mod client;
pub mod compare;
pub mod corpus;
pub mod data;
pub mod generate;
pub mod mutate;
pub mod rawber;
pub mod report;
pub mod rng;
pub mod run;
pub mod sequence;
pub mod servers;
pub mod shrink;
pub mod sorting;
pub mod write;
