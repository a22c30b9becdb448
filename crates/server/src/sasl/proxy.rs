//! Whether one identity may act as another, the one decision behind a SASL bind's authorization
//! identity and the proxied authorization control (RFC 4370): slapd's order (the same identity, a
//! database's root DN over its own entries, then `authz-policy` with the `authzTo` of the
//! authenticated identity's entry and the `authzFrom` of the target's), after Canopy's own
//! `[[sasl.proxy]]` rules.

use canopy_core::{Entry, LdapError};
use canopy_directory::dynlist::Url;
use canopy_proto::oid::{EXOP_PASSWORD_MODIFY, EXOP_WHO_AM_I};
use canopy_proto::{ProtocolOp, ResultCode};
use canopy_schema::authz::{AuthzValue, DnStyle, AUTHZ_FROM_OID, AUTHZ_TO_OID};
use canopy_schema::NormDn;
use regex::RegexBuilder;

use crate::access::Who;
use crate::acl::ops::allows;
use crate::acl::{privileges, AttrRef, GroupReader, Groups};
use crate::authz::AuthzPolicy;
use crate::sasl::mapping;
use crate::state::State;

/// The proxied authorization control of a request (RFC 4370): the authzId it asks for.
#[derive(Debug, Clone)]
pub struct ProxyAuthz {
    pub authzid: Vec<u8>,
    pub critical: bool,
}

/// The extended operations slapd runs under a proxied identity; on others the control is unavailable.
const PROXIED_EXTENDED: [&str; 2] = [EXOP_PASSWORD_MODIFY, EXOP_WHO_AM_I];

fn denied(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProxiedAuthorizationDenied, text)
}

/// The identity an operation runs as under the control `proxy`, asked by `who` (slapd's
/// `parseProxyAuthz`): None when the control does not apply to this extended operation and is not
/// critical; an error answers the operation (proxiedAuthorizationDenied, with slapd's texts).
pub fn assume(
    state: &State,
    who: &Who,
    op: &ProtocolOp,
    proxy: &ProxyAuthz,
) -> Result<Option<Who>, LdapError> {
    if let ProtocolOp::ExtendedRequest(req) = op {
        if !PROXIED_EXTENDED.contains(&req.name.as_str()) {
            if proxy.critical {
                return Err(LdapError::new(
                    ResultCode::UnavailableCriticalExtension,
                    "critical extension is unavailable",
                ));
            }
            return Ok(None);
        }
    }
    if who.ndn.is_none() && !who.root {
        return Err(denied("anonymous proxied authorization not allowed"));
    }
    // The connection's own DN stays with the proxied identity for the `real...` access rules.
    let real = who.real_ndn().cloned();
    let anonymous = Who {
        link: who.link.clone(),
        real: real.clone(),
        ..Who::anonymous()
    };
    let mapping_failed = || denied("authzId mapping failed");
    let text = std::str::from_utf8(&proxy.authzid).map_err(|_| mapping_failed())?;
    if text.is_empty() {
        return Ok(Some(anonymous));
    }
    let ndn = if let Some(dn) = strip_prefix_ignore_case(text, "dn:") {
        let dn = dn.trim_start_matches(' ');
        if dn.is_empty() {
            return Ok(Some(anonymous));
        }
        state
            .databases
            .normalize(dn.as_bytes())
            .map_err(|_| mapping_failed())?
            .1
    } else if let Some(name) = strip_prefix_ignore_case(text, "u:") {
        // A user name under the rules, as slapd maps it for a connection without a SASL mechanism.
        let target = state.sasl_rules.target_in(None, None, name);
        match mapping::resolve_target(state, target) {
            Ok(Some((_, ndn))) => ndn,
            _ => return Err(mapping_failed()),
        }
    } else {
        return Err(mapping_failed());
    };
    if !authorizes(state, who, &ndn) {
        return Err(denied("not authorized to assume identity"));
    }
    Ok(Some(Who {
        // slapd's proxied identity is the normalized DN.
        dn: ndn.to_string(),
        root: state.databases.is_root_dn(&ndn),
        ndn: Some(ndn),
        link: who.link.clone(),
        real,
    }))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Whether `authc` (an authenticated identity, with the link it came over) may act as `authz`.
pub fn authorizes(state: &State, authc: &Who, authz: &NormDn) -> bool {
    let Some(authc_ndn) = authc.ndn.as_ref() else {
        return false;
    };
    if authc_ndn == authz {
        return true;
    }
    // The root DN of the database holding the target may be anyone there, whatever the policy.
    if state
        .databases
        .route(authz)
        .and_then(|db| db.root_ndn())
        .is_some_and(|root| root == authc_ndn)
    {
        return true;
    }
    if mapping::may_proxy(state, authc_ndn, authz) {
        return true;
    }
    let allowed = by_policy(
        state.sasl_rules.policy,
        || rules_allow(state, authc, authc_ndn, AUTHZ_TO_OID, authz),
        || rules_allow(state, authc, authz, AUTHZ_FROM_OID, authc_ndn),
    );
    if allowed {
        tracing::debug!(authc = %authc_ndn, authz = %authz, "proxy authorization allowed by authzTo/authzFrom");
    }
    allowed
}

/// `policy` applied to the answers of the `authzTo` and `authzFrom` rules, each asked only when the
/// policy needs it (slapd's order: `authzTo` first).
fn by_policy(policy: AuthzPolicy, to: impl FnOnce() -> bool, from: impl FnOnce() -> bool) -> bool {
    if policy.uses_to() {
        // `all` needs both; `any` and `to` are decided by a match here.
        match (to(), policy == AuthzPolicy::All) {
            (true, false) => return true,
            (false, true) => return false,
            _ => {}
        }
    }
    policy.uses_from() && from()
}

/// Whether a value of the attribute `oid` of the entry `holder` names `subject`. The values are read
/// as slapd reads them: only when the requester has `auth` access to the attribute.
fn rules_allow(
    state: &State,
    requester: &Who,
    holder: &NormDn,
    oid: &str,
    subject: &NormDn,
) -> bool {
    let Some(db) = state.databases.route(holder) else {
        return false;
    };
    let Ok(txn) = db.read() else {
        return false;
    };
    let Some(entry) = db.entry_at(&txn, holder) else {
        return false;
    };
    let schema = db.schema();
    let who = db.requester(requester);
    let values: Vec<(String, &Vec<u8>)> = entry
        .attrs
        .iter()
        .filter(|a| {
            let name = a.desc.split(';').next().unwrap_or(&a.desc);
            schema.attribute_type(name).is_some_and(|at| at.oid == oid)
        })
        .flat_map(|a| a.values.iter().map(move |v| (a.desc.clone(), v)))
        .collect();
    let Some((desc, _)) = values.first() else {
        return false;
    };
    if !allows(
        db,
        &txn,
        &who,
        &entry,
        AttrRef::Attr(desc),
        privileges::AUTH,
    ) {
        return false;
    }
    values.iter().any(|(_, value)| {
        std::str::from_utf8(value)
            .ok()
            .and_then(|text| AuthzValue::parse(strip_position(text)).ok())
            .is_some_and(|rule| rule_matches(state, &rule, subject))
    })
}

/// An X-ORDERED value's `{N}` position prefix, if it has one, removed.
fn strip_position(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix('{') {
        if let Some((digits, value)) = rest.split_once('}') {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return value;
            }
        }
    }
    text
}

/// Whether one rule names the identity `subject` (slapd's `slap_sasl_match`).
fn rule_matches(state: &State, rule: &AuthzValue, subject: &NormDn) -> bool {
    let schema = state.databases.schema();
    let normalize = |dn: &canopy_proto::Dn| schema.normalize_dn(dn).ok();
    match rule {
        AuthzValue::Dn { style, dn } => {
            let Some(base) = normalize(dn) else {
                return false;
            };
            match style {
                DnStyle::Exact => base == *subject,
                DnStyle::Subtree => base.is_suffix_of(subject),
                DnStyle::Children => base.is_suffix_of(subject) && base != *subject,
                DnStyle::OneLevel => subject.parent().is_some_and(|p| p == base),
            }
        }
        // POSIX extended, without case, over the normalized DN; a pattern that does not compile
        // matches nothing.
        AuthzValue::Regex(pattern) => RegexBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .is_ok_and(|re| re.is_match(subject.as_str())),
        AuthzValue::Users => true,
        AuthzValue::User {
            mechanism,
            realm,
            name,
        } => {
            // slapd maps the name as a SASL bind's, under the mechanism AUTHZ when none is given.
            let target = state.sasl_rules.target_in(
                Some(mechanism.as_deref().unwrap_or("AUTHZ")),
                realm.as_deref(),
                name,
            );
            matches!(mapping::resolve_target(state, target), Ok(Some((_, ndn))) if ndn == *subject)
        }
        AuthzValue::Search {
            base,
            scope,
            filter,
        } => {
            // Without a filter slapd's internal search is never made: no match.
            let (Some(filter), Some(base)) = (filter, normalize(base)) else {
                return false;
            };
            if !Url::holds(&base, *scope, subject) {
                return false;
            }
            entry_of(state, subject).is_some_and(|entry| {
                canopy_core::filter::evaluate(schema, &entry, &[], filter).is_true()
            })
        }
        AuthzValue::Group {
            class,
            attribute,
            dn,
        } => {
            let Some(group) = normalize(dn) else {
                return false;
            };
            let Some(db) = state.databases.route(&group) else {
                return false;
            };
            let Ok(txn) = db.read() else {
                return false;
            };
            GroupReader {
                dir: db.backend(),
                txn: &txn,
            }
            .is_member(&group, class, attribute, subject)
        }
    }
}

/// The stored entry `ndn`, read without access control (slapd's internal search runs as the server).
fn entry_of(state: &State, ndn: &NormDn) -> Option<Entry> {
    let db = state.databases.route(ndn)?;
    let txn = db.read().ok()?;
    db.entry_at(&txn, ndn)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each policy against every answer of the two rules, and which rules it asks.
    #[test]
    fn policies_combine_the_rules_as_slapd() {
        use AuthzPolicy::*;
        // (policy, authzTo matches, authzFrom matches, allowed)
        let table = [
            (None, true, true, false),
            (To, true, false, true),
            (To, false, true, false),
            (From, true, false, false),
            (From, false, true, true),
            (Any, true, false, true),
            (Any, false, true, true),
            (Any, false, false, false),
            (All, true, false, false),
            (All, false, true, false),
            (All, true, true, true),
        ];
        for (policy, to, from, allowed) in table {
            let asked = std::cell::Cell::new((false, false));
            let got = by_policy(
                policy,
                || {
                    asked.set((true, asked.get().1));
                    to
                },
                || {
                    asked.set((asked.get().0, true));
                    from
                },
            );
            assert_eq!(got, allowed, "{policy:?} to={to} from={from}");
            let (asked_to, asked_from) = asked.get();
            assert_eq!(asked_to, policy.uses_to(), "{policy:?} asks authzTo");
            if !policy.uses_from() {
                assert!(!asked_from, "{policy:?} never asks authzFrom");
            }
        }
    }

    #[test]
    fn positions_are_stripped() {
        assert_eq!(strip_position("{0}dn:x=y"), "dn:x=y");
        assert_eq!(strip_position("{12}*"), "*");
        assert_eq!(strip_position("{x}dn:x=y"), "{x}dn:x=y");
        assert_eq!(strip_position("dn:x=y"), "dn:x=y");
    }
}
