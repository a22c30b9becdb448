//! The safety checks of a change to cn=config: no schema element removed that an entry still uses (and
//! the writers' schema fence that keeps it so until the swap), the access probe before a step with an
//! effect, and no configuration that leaves nobody able to change cn=config.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::{OpError, WriteOp};
use canopy_proto::ResultCode;

use crate::access::Who;
use crate::config::Config;
use crate::config_tree::{ConfigEntry, Refusal};
use crate::databases::{Database, WriteControls};
use crate::state::ServerState;

/// Refuses a change that removes an attribute type or an object class some entry still uses: each
/// data database is asked (`Directory::attribute_in_use`, `object_class_in_use`: an index when one
/// answers, else a scan), under the schema that still knows the element.
pub(super) fn check_schema_removals(
    state: &ServerState,
    next: &ServerState,
) -> Result<(), Refusal> {
    let (old, new) = (state.databases.schema(), next.databases.schema());
    if Arc::ptr_eq(old, new) {
        return Ok(());
    }
    let databases: Vec<&Database> = state
        .databases
        .iter()
        .filter(|db| !db.is_config() && !db.is_monitor())
        .collect();
    let failed = |e: LdapError| Refusal::new(e.code, format!("schema usage check: {}", e.message));
    for at in old.attribute_types() {
        if new.attribute_type(&at.oid).is_some() {
            continue;
        }
        for db in &databases {
            if let Some(user) = db.backend().attribute_in_use(&at.oid).map_err(failed)?.user {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "olcAttributeTypes: attribute type {:?} is in use (entry \"{user}\"); \
                         remove its values from every entry first",
                        at.name()
                    ),
                ));
            }
        }
    }
    for class in old.object_classes() {
        if new.object_class(&class.oid).is_some() {
            continue;
        }
        for db in &databases {
            if let Some(user) = db
                .backend()
                .object_class_in_use(&class.oid)
                .map_err(failed)?
                .user
            {
                return Err(Refusal::new(
                    ResultCode::UnwillingToPerform,
                    format!(
                        "olcObjectClasses: object class {:?} is in use (entry \"{user}\"); \
                         remove it from every entry first",
                        class.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The databases a schema change fences: every data and log database of `next`.
fn fenced(next: &ServerState) -> impl Iterator<Item = &Database> {
    next.databases
        .iter()
        .filter(|db| !db.is_config() && !db.is_monitor())
}

/// Closes the race between the usage check of a schema change and the swap: each database's
/// writer takes the next schema as the one writes must fit (`Directory::fence_schema`, after
/// every write queued before it has committed), then the usage check runs again, so an entry an
/// operation of the running snapshot stored meanwhile is found, and one it would store from now on
/// is refused. A refusal undoes the fences.
pub(super) async fn fence_schema(state: &ServerState, next: &ServerState) -> Result<(), Refusal> {
    let schema = next.databases.schema().clone();
    for db in fenced(next) {
        if let Err(e) = db.backend().fence_schema(schema.clone()).await {
            unfence_schema(state, next);
            return Err(Refusal::new(
                e.code,
                format!("schema change: {}", e.message),
            ));
        }
    }
    check_schema_removals(state, next).inspect_err(|_| unfence_schema(state, next))
}

/// Undoes [`fence_schema`]: writes fit the running schema again.
pub(super) fn unfence_schema(state: &ServerState, next: &ServerState) {
    for db in fenced(next) {
        db.backend()
            .unfence_schema(state.databases.schema().clone());
    }
}

/// The answer a write gets when access control lets it through and `probe_access` stops it.
fn probe_error() -> LdapError {
    LdapError::new(ResultCode::Other, "access probe (never sent)")
}

/// Access control of `op` alone, nothing written: Ok when the requester may make it.
pub(super) async fn probe_access(
    dir: &Database,
    who: &Who,
    ctl: &WriteControls,
    op: &WriteOp,
) -> Result<(), OpError> {
    match dir
        .update_with_verdict(op.clone(), who, ctl, Some(probe_error()))
        .await
    {
        Err(OpError::Ldap(error)) if error == probe_error() => Ok(()),
        Err(other) => Err(other),
        Ok(_) => Err(LdapError::new(ResultCode::Other, "the access probe wrote").into()),
    }
}

/// Refuses a configuration in which nobody can change cn=config: no config root DN with a password,
/// and the access engine, with the rules of `olcDatabase={0}config` in `databases`, lets no identity
/// that can authenticate write its `olcAccess` or `olcRootPW` (`lockout::first_administrator`).
pub(super) fn check_lockout(
    config: &Config,
    schema: &canopy_schema::Schema,
    databases: &[Database],
    tree: &[ConfigEntry],
) -> Result<(), Refusal> {
    let root = config.config_root_dn.is_some()
        && config
            .config_root_password
            .as_deref()
            .is_some_and(|p| !p.is_empty());
    if root {
        return Ok(());
    }
    let Some(config_db) = databases.iter().find(|db| db.is_config()) else {
        return Ok(());
    };
    let data: Vec<Database> = databases
        .iter()
        .filter(|db| db.is_configured())
        .cloned()
        .collect();
    let dn_text = crate::config_tree::CONFIG_DB_DN;
    let (dn, ndn) = normalize_config_dn(schema, dn_text)?;
    let entry = tree
        .iter()
        .find(|e| e.dn.eq_ignore_ascii_case(dn_text))
        .and_then(|e| {
            let attrs: Vec<canopy_proto::PartialAttribute> = e
                .attrs
                .iter()
                .map(|(name, values)| canopy_proto::PartialAttribute {
                    name: name.clone(),
                    values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
                })
                .collect();
            canopy_core::check::entry_from_attributes_with(schema, dn, ndn.clone(), &attrs, true)
                .ok()
        });
    let target = crate::acl::Target {
        ndn: &ndn,
        entry: entry.as_ref(),
    };
    let named_may_bind = if !config.sasl.authz_regexp.is_empty() {
        Some("a SASL identity the [[sasl.authz_regexp]] rules may map to")
    } else if config.tls.verify_client != crate::config::VerifyClient::Never {
        Some("a client certificate's subject")
    } else {
        None
    };
    match crate::lockout::first_administrator(
        schema,
        config_db.acl(),
        target,
        &data,
        named_may_bind,
    ) {
        Some(who) => {
            tracing::debug!(administrator = %who, "cn=config lock-out check passed");
            Ok(())
        }
        None => Err(Refusal::new(
            ResultCode::UnwillingToPerform,
            "olcAccess/olcRootDN/olcRootPW: this change would leave no identity able to modify \
             cn=config (keep olcRootDN with olcRootPW on olcDatabase={0}config, or a rule that lets \
             write olcAccess someone who can bind: root over ldapi, a root DN, an entry with a \
             password)",
        )),
    }
}

fn normalize_config_dn(
    schema: &canopy_schema::Schema,
    text: &str,
) -> Result<(canopy_proto::Dn, canopy_schema::NormDn), Refusal> {
    canopy_proto::Dn::parse(text.as_bytes())
        .ok()
        .and_then(|dn| schema.normalize_dn(&dn).ok().map(|ndn| (dn, ndn)))
        .ok_or_else(|| Refusal::new(ResultCode::Other, format!("{text}: does not normalize")))
}
