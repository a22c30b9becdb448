//! The directory every test server is set up with: the suffix of `data/base.ldif` and the root
//! identities that may write it and cn=config.

pub const SUFFIX: &str = "dc=example,dc=com";
pub const ROOT_DN: &str = "cn=admin,dc=example,dc=com";
pub const ROOT_PW: &str = "secret";
/// The root DN of the cn=config database (slapd's `olcRootDN` of `olcDatabase={0}config`, canopy's
/// `config_root_dn`) in [`Server::start_with_config_tree`](crate::Server::start_with_config_tree).
pub const CONFIG_ROOT_DN: &str = "cn=admin,cn=config";
pub const CONFIG_ROOT_PW: &str = "config-secret";
