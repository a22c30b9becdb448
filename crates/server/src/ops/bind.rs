//! RFC 4511 §4.2 Bind: anonymous, simple (root DN or an entry's userPassword), SASL EXTERNAL on ldapi,
//! and the SASL mechanisms of `crate::sasl` (PLAIN, SCRAM-SHA-256/512, GSSAPI) with failed-bind back-off.

use std::sync::Arc;

use canopy_core::LdapError;
use canopy_password::scram::ScramHash;
use canopy_proto::{
    BindAuth, BindRequest, Change, Control, Dn, ModifyOperation, PartialAttribute, ResultCode,
};
use canopy_schema::NormDn;

use crate::access::Who;
use crate::acl::ops::{allows, with_checker};
use crate::acl::{privileges, AttrRef, Target};
use canopy_directory::{Directory, Snapshot, WriteOp};

use crate::databases::{Database, FrontHook};
use crate::sasl::{self, gssapi, mapping, scram, store, Exchange};
use crate::session::Link;
use crate::state::State;

/// What a bind step leads to.
#[derive(Debug)]
pub enum Outcome {
    /// Bound as this identity; the optional final server SASL message.
    Done(Who, Option<Vec<u8>>),
    /// saslBindInProgress: the exchange to keep and the server's challenge.
    Continue(Exchange, Vec<u8>),
    /// Bound as this identity with a SASL security layer, installed once the response is out.
    Secured(Who, gssapi::Layer),
}

/// What a simple bind adds through its database's frontend hooks: response controls, and the hook
/// that restricts the session from now on (pwdReset), if any.
#[derive(Default)]
pub struct PolicyOutcome {
    pub controls: Vec<Control>,
    pub restricted_by: Option<Arc<dyn FrontHook>>,
}

/// Runs a bind. `pending` is the SASL exchange in progress on the connection, if any; a bind with
/// another mechanism or another kind of authentication abandons it (RFC 4513 §5.2.1.2). The caller
/// sets anonymous on any failure (RFC 4511 §4.2.1).
pub async fn bind(
    state: &State,
    req: BindRequest,
    link: &Link,
    pending: Option<Exchange>,
    requested: bool,
    policy: &mut PolicyOutcome,
) -> Result<Outcome, LdapError> {
    if req.version != 3 {
        return Err(LdapError::new(
            ResultCode::ProtocolError,
            "requested protocol version not allowed",
        ));
    }
    match req.auth {
        BindAuth::Simple(password) => simple(state, &req.name, password, link, requested, policy)
            .await
            .map(|who| Outcome::Done(who, None)),
        BindAuth::Sasl {
            mechanism,
            credentials,
        } => sasl_bind(state, &mechanism, credentials, link, pending).await,
    }
}

async fn simple(
    state: &State,
    name: &[u8],
    password: Vec<u8>,
    link: &Link,
    requested: bool,
    policy: &mut PolicyOutcome,
) -> Result<Who, LdapError> {
    if name.is_empty() {
        if password.is_empty() {
            return Ok(Who {
                link: link.clone(),
                ..Who::anonymous()
            });
        }
        return Err(LdapError::new(ResultCode::InvalidCredentials, ""));
    }
    if password.is_empty() {
        return Err(LdapError::new(
            ResultCode::UnwillingToPerform,
            "unauthenticated bind (DN with no password) disallowed",
        ));
    }
    crate::security::require_protected_password(state, link)?;
    let (dn, ndn) = match state.databases.normalize(name) {
        Ok(pair) => pair,
        Err(e) => {
            // Still spend a hash check, so malformed names answer no faster than wrong passwords.
            let _ = verify_values(state, &[], &password, link).await;
            return Err(e);
        }
    };
    let root = state.databases.is_root_dn(&ndn);
    let password = match root {
        true => password,
        false => match bind_password(state, &ndn, &password).await {
            Ok(Some(rest)) => rest,
            Ok(None) => password,
            Err(e) if e.code == ResultCode::InvalidCredentials => {
                return Err(refuse(state, ndn.as_str(), link).await)
            }
            Err(e) => return Err(e),
        },
    };
    let verified = check_password(state, &ndn, password, link).await?;
    if !root {
        bind_hooks(state, &ndn, verified.is_some(), requested, policy).await?;
    }
    let Some(entry_dn) = verified else {
        return Err(refuse(state, ndn.as_str(), link).await);
    };
    state.backoff.succeeded(ndn.as_str());
    Ok(Who {
        // The session carries the entry's own DN, as slapd's whoami shows; the request's pretty DN
        // is formatted only when there is no entry (the root DN).
        dn: entry_dn.unwrap_or_else(|| dn.to_string()),
        ndn: Some(ndn),
        root,
        link: link.clone(),
        real: None,
    })
}

/// The credentials of a simple bind as `ndn` to check as its password, after the frontend hooks took
/// their part (the otp overlay's one-time code at the end): None when no hook changes them.
async fn bind_password(
    state: &State,
    ndn: &NormDn,
    credentials: &[u8],
) -> Result<Option<Vec<u8>>, LdapError> {
    let Some(dir) = state.databases.route(ndn) else {
        return Ok(None);
    };
    for hook in dir.front_hooks() {
        if let Some(rest) = hook.bind_password(dir, ndn, credentials).await? {
            return Ok(Some(rest));
        }
    }
    Ok(None)
}

/// The frontend hooks' part in a simple bind on `ndn` (the password matched: `verified`), made before
/// the answer (a password policy's bookkeeping); a bind a hook refuses (a locked or expired account)
/// fails as a wrong password does, with the hook's controls.
async fn bind_hooks(
    state: &State,
    ndn: &NormDn,
    verified: bool,
    requested: bool,
    policy: &mut PolicyOutcome,
) -> Result<(), LdapError> {
    let Some(dir) = state.databases.route(ndn) else {
        return Ok(());
    };
    for hook in dir.front_hooks() {
        let Some(terms) = hook.bind(dir, ndn, verified, requested).await? else {
            continue;
        };
        policy.controls.extend(terms.controls);
        if terms.refused {
            return Err(LdapError::new(ResultCode::InvalidCredentials, ""));
        }
        if terms.restricts {
            policy.restricted_by = Some(Arc::clone(hook));
        }
    }
    Ok(())
}

/// Checks `password` against the root password or the entry's userPassword values, spending one hash
/// check of the default scheme when there is nothing to check against. `Some(entry DN)` on success.
async fn check_password(
    state: &State,
    ndn: &NormDn,
    password: Vec<u8>,
    link: &Link,
) -> Result<Option<Option<String>>, LdapError> {
    if let Some(root) = state.databases.root_password(ndn) {
        let root = [root.to_vec()];
        let ok = verify_remembered(state, ndn, &root, &password, link).await;
        return Ok(ok.map(|_| None));
    }
    let current = bind_secrets(state, ndn, link)?;
    let Some(index) = verify_remembered(state, ndn, &current.passwords, &password, link).await
    else {
        return Ok(None);
    };
    if state.config.passwords.rehash_on_bind {
        if let Some(old) = current.passwords.get(index) {
            rehash(state, ndn, old.clone(), password).await;
        }
    }
    Ok(Some(current.dn))
}

/// The passwords and SCRAM secrets a bind may check for `ndn`, read in one transaction: none when the
/// access rules grant a client on `link` no `auth` on userPassword, as slapd checks before a bind uses
/// them (the SCRAM secrets in authPassword follow userPassword's rules). A bind with nothing to check
/// still spends the dummy hash check.
fn bind_secrets(state: &State, ndn: &NormDn, link: &Link) -> Result<store::Current, LdapError> {
    let Some(dir) = state.databases.route(ndn) else {
        return Ok(store::Current::default());
    };
    let txn = dir.read()?;
    let mut current = store::current_in(dir, &txn, ndn)?;
    let has_secrets = !current.passwords.is_empty() || !current.auth_passwords.is_empty();
    if has_secrets && !auth_allowed(dir, &txn, ndn, link)? {
        current.passwords.clear();
        current.auth_passwords.clear();
    }
    Ok(current)
}

fn auth_allowed(
    dir: &Database,
    txn: &Snapshot,
    ndn: &NormDn,
    link: &Link,
) -> Result<bool, LdapError> {
    let asking = Who {
        link: link.clone(),
        ..Who::anonymous()
    };
    let attr = AttrRef::Attr("userPassword");
    // Only rules with a filter look at the entry's attributes; the others decide on the DN alone.
    if !dir.acl().needs_entry() {
        return Ok(with_checker(dir, txn, &asking, |checker| {
            let target = Target { ndn, entry: None };
            checker.allows(target, attr, privileges::AUTH)
        }));
    }
    let Some((_, bytes)) = dir.lookup(txn, ndn)? else {
        return Ok(false);
    };
    let entry = Directory::parse_stored(bytes)?
        .to_entry()
        .map_err(|_| LdapError::new(ResultCode::Other, "unreadable entry"))?;
    Ok(allows(dir, txn, &asking, &entry, attr, privileges::AUTH))
}

/// The index of the value that matched. With no values, a dummy hash of the default scheme is checked
/// so the time spent is the same. Cheap schemes ({SSHA} and the other digests: a few microseconds)
/// are checked on the calling task, as slapd does; slow ones (Argon2, PBKDF2, crypt) off the async
/// workers, since they are slow by design, through the hash gate: a bounded number at once, fewer per
/// client address (crate::hash_gate).
async fn verify_values(
    state: &State,
    values: &[Vec<u8>],
    password: &[u8],
    link: &Link,
) -> Option<usize> {
    if runs_inline(values, &state.dummy_hash) {
        return verify_now(values, password, &state.dummy_hash, None);
    }
    let (values, password, dummy) = (values.to_vec(), password.to_vec(), state.dummy_hash.clone());
    let saslauthd = state.config.passwords.saslauthd_socket.clone();
    let source = crate::hash_gate::Source::of(link);
    state
        .hash_gate
        .run(source, move || {
            verify_now(&values, &password, &dummy, Some(&saslauthd))
        })
        .await
        .flatten()
}

/// `verify_values` for a bind as `ndn`, answered from the bind cache when the same password verified
/// against the same stored value recently (`[passwords] bind_cache_secs`; slow schemes only).
async fn verify_remembered(
    state: &State,
    ndn: &NormDn,
    values: &[Vec<u8>],
    password: &[u8],
    link: &Link,
) -> Option<usize> {
    // `{SASL}` values are left out: their password lives elsewhere and may change there.
    let cache = (state.bind_cache.as_ref()).filter(|_| {
        !runs_inline(values, &state.dummy_hash)
            && values
                .iter()
                .all(|v| crate::saslauthd::identity(v).is_none())
    });
    let Some(cache) = cache else {
        return verify_values(state, values, password, link).await;
    };
    if let Some(index) = cache.hit(ndn.as_str(), values, password) {
        return Some(index);
    }
    let index = verify_values(state, values, password, link).await?;
    cache.remember(ndn.as_str(), &values[index], password);
    Some(index)
}

/// Most password values checked on the calling task: an entry whose owner stored many values still
/// costs an async worker only a few microseconds.
const MAX_INLINE_VALUES: usize = 8;

/// Whether every check `verify_now` would make is a cheap one, and there are few of them.
fn runs_inline(values: &[Vec<u8>], dummy: &[u8]) -> bool {
    if values.is_empty() {
        return canopy_password::is_cheap(dummy);
    }
    values.len() <= MAX_INLINE_VALUES
        && values.iter().all(|value| {
            canopy_password::is_cheap(value) && crate::saslauthd::identity(value).is_none()
        })
}

/// The index of the value `password` matches. A `{SASL}` value asks saslauthd at `saslauthd` (on a
/// blocking thread only: None when called inline, where no such value is).
fn verify_now(
    values: &[Vec<u8>],
    password: &[u8],
    dummy: &[u8],
    saslauthd: Option<&std::path::Path>,
) -> Option<usize> {
    if values.is_empty() {
        let _ = canopy_password::verify(dummy, password);
        return None;
    }
    values.iter().position(|value| {
        if let Some(id) = crate::saslauthd::identity(value) {
            return saslauthd.is_some_and(|socket| crate::saslauthd::check(socket, id, password));
        }
        match canopy_password::verify(value, password) {
            Ok(ok) => ok,
            Err(error) => {
                tracing::warn!(%error, "unusable userPassword value");
                false
            }
        }
    })
}

/// `rehash_on_bind`: replaces a value in another scheme by one in the default scheme, with SCRAM secrets.
async fn rehash(state: &State, ndn: &NormDn, old: Vec<u8>, password: Vec<u8>) {
    let prefix = state.config.password_hash.as_bytes();
    let current_scheme = old
        .get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix));
    if current_scheme {
        return;
    }
    let Ok(hashed) = store::hash_values(state, vec![password]).await else {
        return;
    };
    let Ok((dn, _)) = state.databases.normalize(ndn.as_str().as_bytes()) else {
        return;
    };
    let Some(dir) = state.databases.route(ndn) else {
        return;
    };
    let change = |operation, name: &str, values| Change {
        operation,
        modification: PartialAttribute {
            name: name.into(),
            values,
        },
    };
    let changes = vec![
        change(ModifyOperation::Delete, "userPassword", vec![old]),
        change(ModifyOperation::Add, "userPassword", hashed.values),
        change(ModifyOperation::Replace, store::AUTH_PASSWORD, hashed.scram),
    ];
    let who = Who {
        dn: ndn.as_str().to_string(),
        ndn: Some(ndn.clone()),
        root: true,
        link: Link::default(),
        real: None,
    };
    let op = WriteOp::Modify {
        dn,
        ndn: ndn.clone(),
        changes,
    };
    let internal = crate::databases::WriteControls::internal();
    if let Err(error) = dir.update(op, &who, &internal).await {
        tracing::warn!(%error, dn = ndn.as_str(), "rehash on bind failed");
    }
}

/// Counts a failed bind for `key` (a DN or SASL name) and the client address, holds the answer back as
/// long as the back-off asks, and returns the invalidCredentials error.
async fn refuse(state: &State, key: &str, link: &Link) -> LdapError {
    let delay = state.backoff.failed(Some(key), link.ip());
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    LdapError::new(ResultCode::InvalidCredentials, "")
}

async fn sasl_bind(
    state: &State,
    mechanism: &str,
    credentials: Option<Vec<u8>>,
    link: &Link,
    pending: Option<Exchange>,
) -> Result<Outcome, LdapError> {
    if let Some(exchange) = pending {
        if exchange.mechanism().eq_ignore_ascii_case(mechanism) {
            return continue_exchange(state, exchange, credentials.unwrap_or_default(), link).await;
        }
    }
    if mechanism.eq_ignore_ascii_case("EXTERNAL") {
        return external(state, credentials.as_deref(), link).map(|who| Outcome::Done(who, None));
    }
    if mechanism.eq_ignore_ascii_case("PLAIN") {
        return match credentials {
            // No initial response: an empty challenge asks for it (slapd answers saslBindInProgress).
            None if link.is_protected() => Ok(Outcome::Continue(Exchange::PlainStart, Vec::new())),
            _ => plain(state, credentials.as_deref(), link)
                .await
                .map(|who| Outcome::Done(who, None)),
        };
    }
    if mechanism.eq_ignore_ascii_case("GSSAPI")
        && gssapi::Settings::of(&state.config.sasl).is_some()
    {
        return match credentials {
            // No initial token: an empty challenge asks for it.
            None => Ok(Outcome::Continue(Exchange::Gssapi(None), Vec::new())),
            Some(token) => gssapi_step(state, None, &token, link),
        };
    }
    if let Some(hash) = ScramHash::from_mechanism(mechanism) {
        return match credentials {
            // The client sent no initial response: an empty challenge asks for its first message.
            None => Ok(Outcome::Continue(Exchange::ScramStart(hash), Vec::new())),
            Some(first) => scram_start(state, hash, &first, link),
        };
    }
    Err(LdapError::new(
        ResultCode::AuthMethodNotSupported,
        format!("SASL(-4): no mechanism available: {mechanism}"),
    ))
}

async fn continue_exchange(
    state: &State,
    exchange: Exchange,
    message: Vec<u8>,
    link: &Link,
) -> Result<Outcome, LdapError> {
    match exchange {
        Exchange::PlainStart => plain(state, Some(&message), link)
            .await
            .map(|who| Outcome::Done(who, None)),
        Exchange::ScramStart(hash) => scram_start(state, hash, &message, link),
        Exchange::Scram(waiting) => scram_finish(state, &waiting, &message, link).await,
        Exchange::Gssapi(waiting) => gssapi_step(state, waiting, &message, link),
    }
}

/// One step of a GSSAPI exchange (`crate::sasl::gssapi`); at its end the authentication name goes
/// through the authz-regexp rules, as EXTERNAL's does, and the client's authorization identity, if any,
/// through the proxy rules.
fn gssapi_step(
    state: &State,
    waiting: Option<gssapi::Waiting>,
    message: &[u8],
    link: &Link,
) -> Result<Outcome, LdapError> {
    let Some(settings) = gssapi::Settings::of(&state.config.sasl) else {
        return Err(LdapError::new(
            ResultCode::AuthMethodNotSupported,
            "SASL(-4): no mechanism available: GSSAPI",
        ));
    };
    let done = match gssapi::step(&settings, waiting, message, link.sasl_ssf > 0)? {
        gssapi::Step::Continue(waiting, challenge) => {
            return Ok(Outcome::Continue(
                Exchange::Gssapi(Some(waiting)),
                challenge,
            ))
        }
        gssapi::Step::Done(done) => done,
    };
    let unusable = || LdapError::new(ResultCode::Other, "SASL(-1): unusable GSSAPI name");
    let dn = Dn::parse(done.auth_dn.as_bytes()).map_err(|_| unusable())?;
    let ndn = state
        .databases
        .schema()
        .normalize_dn(&dn)
        .map_err(|_| unusable())?;
    // Without a realm the name has the shape of the other mechanisms' (`uid=NAME,cn=gssapi,cn=auth`)
    // and maps as theirs do: a rule, else the entry whose uid is NAME. With one, only a rule maps it.
    // A name that maps to no entry stays the identity, as in slapd.
    let mapped = if settings.realm.is_none() {
        mapping::resolve_user(state, "GSSAPI", &done.name)?
    } else {
        mapping::map_external(state, &ndn)?
    };
    let ndn = match mapped {
        Some((_, mapped)) => mapped,
        None => ndn,
    };
    let authc = (ndn.to_string(), ndn);
    let who = authorize(state, "GSSAPI", authc, done.authzid.as_deref(), link)?;
    Ok(match done.layer {
        Some(layer) => Outcome::Secured(who, layer),
        None => Outcome::Done(who, None),
    })
}

fn scram_start(
    state: &State,
    hash: ScramHash,
    message: &[u8],
    link: &Link,
) -> Result<Outcome, LdapError> {
    let first = scram::parse_client_first(message)?;
    let mechanism = hash.mechanism();
    let authc = mapping::resolve_user(state, mechanism, &first.user)?;
    let secret = match &authc {
        // Without `auth` on the password the exchange runs against a mock secret and fails.
        Some((_, ndn)) => sasl::scram_secret(&bind_secrets(state, ndn, link)?.auth_passwords, hash),
        None => None,
    };
    let authc = authc.map(|(dn, ndn)| (dn.to_string(), ndn));
    let mock = (
        canopy_password::scram::mock_salt(&state.dummy_hash, &first.user),
        state.config.passwords.scram_iterations,
    );
    let (waiting, challenge) = scram::server_first(hash, first, secret, authc, mock);
    Ok(Outcome::Continue(
        Exchange::Scram(Box::new(waiting)),
        challenge,
    ))
}

async fn scram_finish(
    state: &State,
    waiting: &scram::Waiting,
    message: &[u8],
    link: &Link,
) -> Result<Outcome, LdapError> {
    let key = match &waiting.authc {
        Some((_, ndn)) => ndn.as_str().to_string(),
        None => waiting.first.user.clone(),
    };
    let server_final = match scram::finish(waiting, message) {
        Ok(v) => v,
        Err(e) if e.code == ResultCode::InvalidCredentials => {
            return Err(refuse(state, &key, link).await)
        }
        Err(e) => return Err(e),
    };
    let Some(authc) = waiting.authc.clone() else {
        return Err(refuse(state, &key, link).await);
    };
    state.backoff.succeeded(&key);
    let who = authorize(
        state,
        waiting.hash.mechanism(),
        authc,
        waiting.first.authzid.as_deref(),
        link,
    )?;
    Ok(Outcome::Done(who, Some(server_final)))
}

/// RFC 4616 PLAIN, on protected links only (it carries the password). Elsewhere the mechanism is not
/// available, as under slapd's default `sasl-secprops noplain`: inappropriateAuthentication.
async fn plain(state: &State, message: Option<&[u8]>, link: &Link) -> Result<Who, LdapError> {
    if !link.is_protected() {
        return Err(LdapError::new(
            ResultCode::InappropriateAuthentication,
            "SASL(-4): no mechanism available: PLAIN needs a protected link (TLS or ldapi://)",
        ));
    }
    let (authzid, authcid, password) = sasl::parse_plain(message.unwrap_or_default())?;
    let Some((dn, ndn)) = mapping::resolve_user(state, "PLAIN", &authcid)? else {
        let _ = verify_values(state, &[], &password, link).await;
        return Err(refuse(state, &authcid, link).await);
    };
    let Some(entry_dn) = check_password(state, &ndn, password, link).await? else {
        return Err(refuse(state, ndn.as_str(), link).await);
    };
    state.backoff.succeeded(ndn.as_str());
    let dn = entry_dn.unwrap_or_else(|| dn.to_string());
    authorize(state, "PLAIN", (dn, ndn), authzid.as_deref(), link)
}

/// The identity a SASL bind ends with: the authenticated one, or the requested authorization identity
/// when the proxy rules let the first act as the second.
fn authorize(
    state: &State,
    mechanism: &str,
    authc: (String, NormDn),
    authzid: Option<&str>,
    link: &Link,
) -> Result<Who, LdapError> {
    let (dn, ndn) = match authzid.filter(|a| !a.is_empty()) {
        None => authc,
        Some(requested) => {
            let Some((dn, ndn)) = mapping::resolve_identity(state, mechanism, requested)? else {
                return Err(sasl::authz_failure());
            };
            let requester = Who {
                dn: authc.0.clone(),
                root: state.databases.is_root_dn(&authc.1),
                ndn: Some(authc.1.clone()),
                link: link.clone(),
                real: None,
            };
            if !sasl::may_authorize(state, &requester, &ndn) {
                return Err(sasl::authz_failure());
            }
            (dn.to_string(), ndn)
        }
    };
    Ok(Who {
        dn,
        root: state.databases.is_root_dn(&ndn),
        ndn: Some(ndn),
        link: link.clone(),
        real: None,
    })
}

fn external(state: &State, credentials: Option<&[u8]>, link: &Link) -> Result<Who, LdapError> {
    let Some(dn_text) = link.external_authid() else {
        // slapd: the mechanism is not offered without an external identity.
        return Err(LdapError::new(
            ResultCode::AuthMethodNotSupported,
            "SASL(-4): no mechanism available: EXTERNAL needs a verified client certificate (TLS) or peer credentials (ldapi://)",
        ));
    };
    let dn =
        Dn::parse(dn_text.as_bytes()).map_err(|_| LdapError::new(ResultCode::Other, "peer DN"))?;
    let ndn = state
        .databases
        .schema()
        .normalize_dn(&dn)
        .map_err(|_| LdapError::new(ResultCode::Other, "peer DN"))?;
    // The identity goes through the authz-regexp rules, as any SASL identity in slapd; mapped to an
    // entry, it binds as that entry's normalized DN.
    let (dn_text, ndn, mapped) = match crate::sasl::mapping::map_external(state, &ndn)? {
        Some((_, mapped)) => (mapped.to_string(), mapped, true),
        None => (dn_text, ndn, false),
    };
    if let Some(authz) = credentials.filter(|c| !c.is_empty()) {
        let requested = authz.strip_prefix(b"dn:").unwrap_or(authz);
        let same = state
            .databases
            .normalize(requested)
            .map(|(_, n)| n == ndn)
            .unwrap_or(false);
        if !same {
            let text = String::from_utf8_lossy(authz);
            return authorize(state, "EXTERNAL", (dn_text, ndn), Some(&text), link);
        }
    }
    Ok(Who {
        // A certificate subject binds as its normalized DN, as slapd's does.
        dn: if mapped || link.tls_subject().is_some() {
            ndn.to_string()
        } else {
            dn_text
        },
        root: state.databases.is_root_dn(&ndn),
        ndn: Some(ndn),
        link: link.clone(),
        real: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_few_cheap_values_are_verified_inline() {
        let ssha = b"{SSHA}8ujU7uLp4cjra16oOHPN9lAFflqYi1i6".to_vec();
        let argon = b"{ARGON2}$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".to_vec();
        assert!(runs_inline(std::slice::from_ref(&ssha), &argon));
        assert!(!runs_inline(&[ssha.clone(), argon.clone()], &ssha));
        assert!(!runs_inline(&[], &argon));
        assert!(runs_inline(&[], &ssha));
        let many = vec![ssha; MAX_INLINE_VALUES + 1];
        assert!(!runs_inline(&many, b"{SSHA}x"));
    }

    #[test]
    fn inline_verification_finds_the_matching_value() {
        let good = canopy_password::hash(canopy_password::Scheme::Ssha, b"secret")
            .unwrap()
            .into_bytes();
        let other = canopy_password::hash(canopy_password::Scheme::Ssha, b"other")
            .unwrap()
            .into_bytes();
        let values = [other, good];
        assert_eq!(verify_now(&values, b"secret", b"{SSHA}x", None), Some(1));
        assert_eq!(verify_now(&values, b"wrong", b"{SSHA}x", None), None);
        assert_eq!(verify_now(&[], b"secret", b"{SSHA}x", None), None);
    }
}
