//! SASL GSSAPI (RFC 4752) over Kerberos 5: the context exchange over several bind steps, the
//! security-layer negotiation of RFC 4752 §3.1, and the authentication name slapd forms
//! (`uid=NAME[,cn=REALM],cn=gssapi,cn=auth`). The GSS-API calls are `gss_ffi`'s.

use std::path::PathBuf;

use canopy_core::LdapError;
use canopy_proto::ResultCode;

use super::gss_ffi::{Context, Credential, GssError, Name};

/// Security-layer bits of RFC 4752 §3.1.
pub const LAYER_NONE: u8 = 1;
pub const LAYER_INTEGRITY: u8 = 2;
pub const LAYER_CONFIDENTIALITY: u8 = 4;

/// The largest wrapped token the server accepts from a client (the size it announces).
pub const MAX_RECEIVE: u32 = 65536;

/// What the `[sasl]` section says about GSSAPI: offered only with a keytab.
#[derive(Debug, Clone)]
pub struct Settings {
    pub keytab: PathBuf,
    /// The host of the service principal `ldap/HOST@REALM`; any principal of the keytab when None.
    pub host: Option<String>,
    /// slapd's `sasl-realm`: when set, authentication names carry `cn=REALM`.
    pub realm: Option<String>,
    /// slapd's `sasl-secprops maxssf`: the strongest layer offered (None: no limit).
    pub max_ssf: Option<u32>,
}

impl Settings {
    /// The GSSAPI settings of `[sasl]`, when a keytab is configured.
    pub fn of(sasl: &crate::config::Sasl) -> Option<Settings> {
        Some(Settings {
            keytab: sasl.keytab.clone()?,
            host: sasl.host.clone(),
            realm: sasl.realm.clone(),
            max_ssf: sasl.gssapi_max_ssf,
        })
    }
}

/// An exchange waiting for the client's next message.
#[derive(Debug)]
pub enum Waiting {
    /// The context needs more tokens from the client.
    Accepting(Context),
    /// The context is established and the server's last token sent: the client's (empty) answer comes
    /// next, then the server offers its security layers.
    Established(Box<Peer>),
    /// The offer was sent: the client's wrapped choice comes next.
    Offered(Box<Peer>, u8),
}

/// An authenticated client on an established context.
#[derive(Debug)]
pub struct Peer {
    context: Context,
    /// The name the authentication DN is made of: the principal, without the realm when it is the
    /// library's default realm (as Cyrus SASL's GSSAPI plugin gives it to slapd).
    name: String,
    /// The context's strength with confidentiality (the session key's bits).
    ssf: u32,
}

/// One step's result.
#[derive(Debug)]
pub enum Step {
    Continue(Waiting, Vec<u8>),
    Done(Authenticated),
}

/// A finished exchange.
#[derive(Debug)]
pub struct Authenticated {
    /// `uid=NAME[,cn=REALM],cn=gssapi,cn=auth`.
    pub auth_dn: String,
    /// NAME: the principal, without the realm when it is the default one.
    pub name: String,
    /// The authorization identity the client asked for, if any.
    pub authzid: Option<String>,
    /// The security layer to install after the bind response, if the client chose one.
    pub layer: Option<Layer>,
}

/// A negotiated integrity or confidentiality layer: the context that wraps, and the sizes.
pub struct Layer {
    pub context: Context,
    pub confidential: bool,
    /// The strength the layer gives the connection: 1 for integrity, the context's for confidentiality.
    pub ssf: u32,
    /// The largest message the client accepts unwrapped, so that its wrapped token fits its buffer.
    pub max_plain_out: usize,
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer")
            .field("confidential", &self.confidential)
            .field("ssf", &self.ssf)
            .finish()
    }
}

/// Internal trouble (the keytab, the library): slapd's SASL_FAIL.
fn failure(error: &GssError) -> LdapError {
    tracing::warn!(%error, "GSSAPI");
    LdapError::new(
        ResultCode::Other,
        format!("SASL(-1): generic failure: GSSAPI Error: {}", error.message),
    )
}

/// A client whose token or answer does not verify: slapd's SASL_BADAUTH.
fn bad_auth(what: &str) -> LdapError {
    LdapError::new(
        ResultCode::InvalidCredentials,
        format!("SASL(-13): authentication failure: GSSAPI Failure: {what}"),
    )
}

/// Runs one step. `layered` says the connection already has a security layer: only "none" is offered
/// then, since layers do not stack.
pub fn step(
    settings: &Settings,
    waiting: Option<Waiting>,
    message: &[u8],
    layered: bool,
) -> Result<Step, LdapError> {
    match waiting {
        None => accept(settings, Context::new(), message),
        Some(Waiting::Accepting(context)) => accept(settings, context, message),
        Some(Waiting::Established(mut peer)) => {
            let offered = offer(settings.max_ssf, peer.ssf, layered);
            // Layers, then our buffer size in three bytes (RFC 4752 §3.1).
            let size = MAX_RECEIVE.to_be_bytes();
            let token = [offered, size[1], size[2], size[3]];
            let wrapped = peer.context.wrap(false, &token).map_err(|e| failure(&e))?;
            Ok(Step::Continue(Waiting::Offered(peer, offered), wrapped))
        }
        Some(Waiting::Offered(peer, offered)) => choose(settings, *peer, offered, message),
    }
}

fn accept(settings: &Settings, mut context: Context, token: &[u8]) -> Result<Step, LdapError> {
    let service = match &settings.host {
        Some(host) => Some(Name::host_service("ldap", host).map_err(|e| failure(&e))?),
        None => None,
    };
    let credential =
        Credential::acceptor(&settings.keytab, service.as_ref()).map_err(|e| failure(&e))?;
    let accepted = context.accept(&credential, token).map_err(|error| {
        tracing::info!(%error, "GSSAPI token refused");
        bad_auth("gss_accept_sec_context")
    })?;
    let Some(client) = accepted.client else {
        return Ok(Step::Continue(Waiting::Accepting(context), accepted.token));
    };
    let principal = client.display().map_err(|e| failure(&e))?;
    let name = local_name(&client, &principal).map_err(|e| failure(&e))?;
    // MIT rates the context by its session key; 56 (single DES) is Cyrus's figure when it cannot ask.
    let ssf = context.sasl_ssf().unwrap_or(56);
    let peer = Peer { context, name, ssf };
    // The last context token (possibly empty) goes out; the client's empty answer brings the offer.
    Ok(Step::Continue(
        Waiting::Established(Box::new(peer)),
        accepted.token,
    ))
}

/// The principal without its realm when that is the library's default realm, else the whole principal.
fn local_name(client: &Name, principal: &str) -> Result<String, GssError> {
    let Some((user, _realm)) = principal.rsplit_once('@') else {
        return Ok(principal.to_string());
    };
    let without = Name::principal(user)?;
    Ok(if client.same_as(&without)? {
        user.to_string()
    } else {
        principal.to_string()
    })
}

/// The layers offered: only "none" under `max_ssf = 0` or over an existing layer; no confidentiality
/// when the maximum is below the context's strength.
pub fn offer(max_ssf: Option<u32>, context_ssf: u32, layered: bool) -> u8 {
    match max_ssf {
        _ if layered => LAYER_NONE,
        Some(0) => LAYER_NONE,
        Some(max) if max < context_ssf => LAYER_NONE | LAYER_INTEGRITY,
        _ => LAYER_NONE | LAYER_INTEGRITY | LAYER_CONFIDENTIALITY,
    }
}

fn choose(
    settings: &Settings,
    mut peer: Peer,
    offered: u8,
    message: &[u8],
) -> Result<Step, LdapError> {
    let (plain, _) = peer.context.unwrap(message).map_err(|error| {
        tracing::info!(%error, "GSSAPI security layer answer refused");
        bad_auth("gss_unwrap")
    })?;
    let (chosen, max_out, authzid) = parse_choice(&plain, offered)?;
    let layer = match chosen {
        LAYER_INTEGRITY | LAYER_CONFIDENTIALITY => {
            let confidential = chosen == LAYER_CONFIDENTIALITY;
            // A client announcing no buffer gets our own size.
            let max_out = if max_out == 0 { MAX_RECEIVE } else { max_out };
            let limit = peer
                .context
                .wrap_size_limit(confidential, max_out)
                .map_err(|e| failure(&e))?;
            Some(Layer {
                confidential,
                ssf: if confidential { peer.ssf } else { 1 },
                max_plain_out: usize::try_from(limit.max(1)).unwrap_or(1),
                context: peer.context,
            })
        }
        _ => None,
    };
    Ok(Step::Done(Authenticated {
        auth_dn: auth_dn(&peer.name, settings.realm.as_deref()),
        name: peer.name,
        authzid,
        layer,
    }))
}

/// The client's unwrapped answer: one chosen layer among those offered, its buffer size, and the
/// authorization identity (RFC 4752 §3.1).
pub fn parse_choice(plain: &[u8], offered: u8) -> Result<(u8, u32, Option<String>), LdapError> {
    let [chosen, a, b, c, rest @ ..] = plain else {
        return Err(bad_auth("security layer answer too short"));
    };
    if chosen.count_ones() != 1 || chosen & offered == 0 {
        return Err(bad_auth("security layer not offered"));
    }
    let size = u32::from_be_bytes([0, *a, *b, *c]);
    let authzid = match rest {
        [] => None,
        bytes => Some(
            String::from_utf8(bytes.to_vec())
                .map_err(|_| bad_auth("authorization identity is not UTF-8"))?,
        ),
    };
    Ok((*chosen, size, authzid))
}

/// `uid=NAME[,cn=REALM],cn=gssapi,cn=auth`, the name escaped as an RFC 4514 value.
pub fn auth_dn(name: &str, realm: Option<&str>) -> String {
    let mut dn = format!("uid={}", escape_value(name));
    if let Some(realm) = realm.filter(|r| !r.is_empty()) {
        dn.push_str(",cn=");
        dn.push_str(&escape_value(realm));
    }
    dn.push_str(",cn=gssapi,cn=auth");
    dn
}

fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, ch) in value.chars().enumerate() {
        let special = matches!(ch, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=')
            || (i == 0 && matches!(ch, ' ' | '#'))
            || (i + 1 == value.chars().count() && ch == ' ');
        if special {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authentication_names() {
        assert_eq!(auth_dn("alice", None), "uid=alice,cn=gssapi,cn=auth");
        assert_eq!(
            auth_dn("alice", Some("EXAMPLE.TEST")),
            "uid=alice,cn=EXAMPLE.TEST,cn=gssapi,cn=auth"
        );
        assert_eq!(
            auth_dn("ldap/host@OTHER.TEST", None),
            "uid=ldap/host@OTHER.TEST,cn=gssapi,cn=auth"
        );
        assert_eq!(auth_dn("a,b+c", None), "uid=a\\,b\\+c,cn=gssapi,cn=auth");
    }

    #[test]
    fn offers_follow_the_maximum_strength() {
        let all = LAYER_NONE | LAYER_INTEGRITY | LAYER_CONFIDENTIALITY;
        assert_eq!(offer(None, 256, false), all);
        assert_eq!(offer(Some(0), 256, false), LAYER_NONE);
        assert_eq!(offer(Some(1), 256, false), LAYER_NONE | LAYER_INTEGRITY);
        assert_eq!(offer(Some(256), 256, false), all);
        assert_eq!(offer(None, 256, true), LAYER_NONE);
    }

    #[test]
    fn choices() {
        let all = LAYER_NONE | LAYER_INTEGRITY | LAYER_CONFIDENTIALITY;
        assert_eq!(
            parse_choice(&[4, 0, 0x10, 0], all).unwrap(),
            (4, 4096, None)
        );
        assert_eq!(
            parse_choice(b"\x01\x00\x00\x00dn:uid=a", all).unwrap(),
            (1, 0, Some("dn:uid=a".into()))
        );
        for (bad, offered) in [
            (&b"\x04\x00\x00"[..], all),
            (b"\x06\x00\x00\x00", all),
            (b"\x00\x00\x00\x00", all),
            (b"\x04\x00\x00\x00", LAYER_NONE),
            (b"\x01\x00\x00\x00\xff", all),
        ] {
            let err = parse_choice(bad, offered).err().unwrap();
            assert_eq!(err.code, ResultCode::InvalidCredentials, "{bad:?}");
        }
    }
}
