//! Password policy (slapd's `ppolicy` overlay, draft-behera-ldap-password-policy-10 as OpenLDAP 2.5
//! implements it): the schema it brings, its settings, the hook that records the state of password
//! changes inside their write, and the bind bookkeeping (`bind.rs`) the frontend runs after checking
//! a password. The checks that need the new password in cleartext (`change::check`) run in the
//! frontend before the value is hashed, on a snapshot; everything they lead to is written here, in
//! the write's transaction.

pub mod bind;
pub mod change;
pub mod policy;
pub mod time;
pub mod usability;

use canopy_core::{Entry, LdapError};
use canopy_mdb::WriteTxn;
pub use canopy_proto::ppolicy::{PasswordPolicyResponse, PolicyError, Warning};
use canopy_proto::ModifyOperation;
use canopy_schema::{NormDn, Schema};

use crate::database::Directory;
use crate::event::{Kind, Proposed};
use crate::pipeline::{OnReplica, WriteHook};
pub use policy::Policy;
pub use time::Instant;

/// The schema slapd 2.5's ppolicy module defines (the same OIDs, names and rules).
pub const PPOLICY_SCHEMA: &str = "\
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.1 NAME 'pwdAttribute' EQUALITY objectIdentifierMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.38 )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.2 NAME 'pwdMinAge' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.3 NAME 'pwdMaxAge' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.4 NAME 'pwdInHistory' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.5 NAME 'pwdCheckQuality' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.6 NAME 'pwdMinLength' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.31 NAME 'pwdMaxLength' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.7 NAME 'pwdExpireWarning' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.8 NAME 'pwdGraceAuthNLimit' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.30 NAME 'pwdGraceExpiry' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.9 NAME 'pwdLockout' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.10 NAME 'pwdLockoutDuration' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.11 NAME 'pwdMaxFailure' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.12 NAME 'pwdFailureCountInterval' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.13 NAME 'pwdMustChange' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.14 NAME 'pwdAllowUserChange' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.15 NAME 'pwdSafeModify' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.24 NAME 'pwdMinDelay' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.25 NAME 'pwdMaxDelay' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.26 NAME 'pwdMaxIdle' EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.32 NAME 'pwdMaxRecordedFailure' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4754.1.99.1 NAME 'pwdCheckModule' DESC 'Loadable module that instantiates check_password() function' EQUALITY caseExactIA5Match SYNTAX 1.3.6.1.4.1.1466.115.121.1.26 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.4754.1.99.2 NAME 'pwdCheckModuleArg' DESC 'Argument to pass to check_password() function' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.16 NAME 'pwdChangedTime' DESC 'The time the password was last changed' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.17 NAME 'pwdAccountLockedTime' DESC 'The time an user account was locked' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.19 NAME 'pwdFailureTime' DESC 'The timestamps of the last consecutive authentication failures' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 NO-USER-MODIFICATION USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.20 NAME 'pwdHistory' DESC 'The history of users passwords' EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 NO-USER-MODIFICATION USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.21 NAME 'pwdGraceUseTime' DESC 'The timestamps of the grace login once the password has expired' EQUALITY generalizedTimeMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 NO-USER-MODIFICATION USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.22 NAME 'pwdReset' DESC 'The indication that the password has been reset' EQUALITY booleanMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.23 NAME 'pwdPolicySubentry' DESC 'The pwdPolicy subentry in effect for this object' EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.27 NAME 'pwdStartTime' DESC 'The time the password becomes enabled' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.28 NAME 'pwdEndTime' DESC 'The time the password becomes disabled' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.29 NAME 'pwdLastSuccess' DESC 'The timestamp of the last successful authentication' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.33 NAME 'pwdAccountTmpLockoutEnd' DESC 'Temporary lockout end' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE NO-USER-MODIFICATION USAGE directoryOperation )
objectclass ( 1.3.6.1.4.1.42.2.27.8.2.1 NAME 'pwdPolicy' SUP top AUXILIARY MUST pwdAttribute MAY ( pwdMinAge $ pwdMaxAge $ pwdInHistory $ pwdCheckQuality $ pwdMinLength $ pwdMaxLength $ pwdExpireWarning $ pwdGraceAuthNLimit $ pwdGraceExpiry $ pwdLockout $ pwdLockoutDuration $ pwdMaxFailure $ pwdFailureCountInterval $ pwdMustChange $ pwdAllowUserChange $ pwdSafeModify $ pwdMinDelay $ pwdMaxDelay $ pwdMaxIdle $ pwdMaxRecordedFailure ) )
objectclass ( 1.3.6.1.4.1.4754.2.99.1 NAME 'pwdPolicyChecker' SUP top AUXILIARY MAY ( pwdCheckModule $ pwdCheckModuleArg ) )
";

/// slapd's `ppolicy_*` options without the prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// `ppolicy_default`: the DN of the policy for entries without pwdPolicySubentry.
    pub default: Option<String>,
    /// `ppolicy_hash_cleartext`. Canopy hashes cleartext userPassword values in every case.
    pub hash_cleartext: bool,
    /// `ppolicy_use_lockout`: a locked account's bind answer names accountLocked.
    pub use_lockout: bool,
    /// `ppolicy_forward_updates`: accepted; without replication there is no provider to forward to.
    pub forward_updates: bool,
    /// `ppolicy_send_netscape_controls`: the Netscape expired and expiring controls on binds that
    /// did not ask for the password policy control.
    pub send_netscape_controls: bool,
    /// The modifiersName of the state a bind writes: the root DN, as slapd's internal modify.
    pub modifier: String,
}

/// The ppolicy overlay of one database.
pub struct PPolicy {
    config: Config,
}

impl PPolicy {
    pub fn new(config: Config) -> PPolicy {
        PPolicy { config }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The default policy's normalized DN (the setting was checked when the database opened).
    pub fn default_ndn(&self, dir: &Directory) -> Option<NormDn> {
        let raw = self.config.default.as_ref()?;
        dir.normalize(raw.as_bytes()).ok().map(|(_, ndn)| ndn)
    }

    /// The policy governing `entry` in the snapshot `txn`.
    pub fn policy_of(
        &self,
        dir: &Directory,
        txn: &impl crate::View,
        entry: &Entry,
    ) -> Result<Option<Policy>, LdapError> {
        let txn = crate::view::txn(txn);
        policy::effective(dir, txn, entry, self.default_ndn(dir).as_ref())
    }
}

/// Whether the change list of a modify touches `attr` (a policy state attribute) itself.
fn touches(changes: &[canopy_proto::Change], attr: &str) -> bool {
    changes.iter().any(|c| {
        c.modification.name.split(';').next() == Some(attr)
            || c.modification.name.eq_ignore_ascii_case(attr)
    })
}

impl WriteHook for PPolicy {
    fn name(&self) -> &'static str {
        "ppolicy"
    }

    /// A replicated change arrives with what this overlay made of it on the provider.
    fn on_replica(&self) -> OnReplica {
        OnReplica::Skip
    }

    fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        let _ = suffix;
        if let Some(default) = &self.config.default {
            let dn = canopy_proto::Dn::parse(default.as_bytes())
                .map_err(|e| format!("default: {default:?} is not a DN: {e}"))?;
            schema
                .normalize_dn(&dn)
                .map_err(|e| format!("default: {default:?}: {e}"))?;
        }
        Ok(())
    }

    fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        let changes = change.changes;
        let password_change = match change.kind {
            Kind::Add => true,
            Kind::Modify => changes.iter().any(|c| {
                let name = c.modification.name.split(';').next().unwrap_or_default();
                name.eq_ignore_ascii_case("userPassword")
                    && !(c.operation == ModifyOperation::Increment)
            }),
            Kind::Delete | Kind::Rename => false,
        };
        if !password_change {
            return Ok(());
        }
        let (old, requester) = (change.old, change.requester);
        let Some(new) = change.new.as_deref_mut() else {
            return Ok(());
        };
        let governed = old.unwrap_or(new);
        let Some(policy) = self.policy_of(dir, txn, governed)? else {
            return Ok(());
        };
        if change.kind == Kind::Add && new.get(&policy.attribute).is_none() {
            return Ok(());
        }
        let by_self = dir
            .normalize(requester.as_bytes())
            .is_ok_and(|(_, ndn)| ndn == new.ndn);
        let touched = |attr: &str| touches(changes, attr);
        change::record(&policy, old, new, by_self, &touched, Instant::now());
        Ok(())
    }
}
