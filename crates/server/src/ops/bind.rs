//! RFC 4511 §4.2 Bind: anonymous, simple (root DN or an entry's userPassword) and SASL EXTERNAL on ldapi.

use canopy_core::LdapError;
use canopy_proto::{BindAuth, BindRequest, Dn, ResultCode};

use crate::access::Who;
use crate::acl::ops::allows;
use crate::acl::{privileges, AttrRef};
use crate::session::{Link, Peer};
use crate::state::State;

/// Runs a bind. On success returns the new identity; the caller sets anonymous on any failure (RFC 4511 §4.2.1).
pub async fn bind(state: &State, req: BindRequest, link: &Link) -> Result<Who, LdapError> {
    if req.version != 3 {
        return Err(LdapError::new(
            ResultCode::ProtocolError,
            "requested protocol version not allowed",
        ));
    }
    match req.auth {
        BindAuth::Simple(password) => simple(state, &req.name, password, link).await,
        BindAuth::Sasl {
            mechanism,
            credentials,
        } => sasl(state, &mechanism, credentials.as_deref(), link),
    }
}

async fn simple(
    state: &State,
    name: &[u8],
    password: Vec<u8>,
    link: &Link,
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
    let dir = &state.directory;
    let (dn, ndn) = dir.normalize(name)?;
    let mut who = Who {
        dn: dn.to_string(),
        ndn: Some(ndn.clone()),
        root: ndn == state.root_ndn,
        link: link.clone(),
    };
    let stored: Vec<Vec<u8>> = if who.root && !state.root_password.is_empty() {
        vec![state.root_password.clone()]
    } else if dir.holds(&ndn) {
        let txn = dir.read()?;
        match dir.lookup(&txn, &ndn)? {
            Some((_, bytes)) => {
                let stored = crate::directory::Directory::parse_stored(bytes)?;
                // The session carries the entry's own DN, as slapd's whoami shows.
                who.dn = String::from_utf8_lossy(stored.dn).into_owned();
                // slapd binds only with passwords the rules grant `auth` on, to the client as it is now.
                let entry = stored
                    .to_entry()
                    .map_err(|_| LdapError::new(ResultCode::Other, "unreadable entry"))?;
                let asking = Who {
                    link: link.clone(),
                    ..Who::anonymous()
                };
                let attr = AttrRef::Attr("userPassword");
                if !allows(dir, &txn, &asking, &entry, attr, privileges::AUTH) {
                    return Err(LdapError::new(ResultCode::InvalidCredentials, ""));
                }
                let mut values = Vec::new();
                for attr in canopy_core::wire::attributes(stored.secret) {
                    let (_, vals) =
                        attr.map_err(|_| LdapError::new(ResultCode::Other, "unreadable entry"))?;
                    values.extend(vals.into_iter().map(|v| v.to_vec()));
                }
                values
            }
            None => Vec::new(),
        }
    } else {
        Vec::new()
    };
    // Hash checks can be slow by design (Argon2, PBKDF2): keep them off the async workers.
    let verified = tokio::task::spawn_blocking(move || {
        stored
            .iter()
            .any(|value| match canopy_password::verify(value, &password) {
                Ok(ok) => ok,
                Err(error) => {
                    tracing::warn!(%error, "unusable userPassword value");
                    false
                }
            })
    })
    .await
    .unwrap_or(false);
    if verified {
        Ok(who)
    } else {
        Err(LdapError::new(ResultCode::InvalidCredentials, ""))
    }
}

fn sasl(
    state: &State,
    mechanism: &str,
    credentials: Option<&[u8]>,
    link: &Link,
) -> Result<Who, LdapError> {
    if !mechanism.eq_ignore_ascii_case("EXTERNAL") {
        return Err(LdapError::new(
            ResultCode::AuthMethodNotSupported,
            format!("SASL(-4): no mechanism available: {mechanism}"),
        ));
    }
    let Some(Peer::Unix { uid, gid }) = link.peer else {
        return Err(LdapError::new(
            ResultCode::InappropriateAuthentication,
            "SASL EXTERNAL needs a connection with peer credentials (ldapi://)",
        ));
    };
    let dn_text = format!("gidNumber={gid}+uidNumber={uid},cn=peercred,cn=external,cn=auth");
    let dn =
        Dn::parse(dn_text.as_bytes()).map_err(|_| LdapError::new(ResultCode::Other, "peer DN"))?;
    let ndn = state
        .directory
        .schema()
        .normalize_dn(&dn)
        .map_err(|_| LdapError::new(ResultCode::Other, "peer DN"))?;
    if let Some(authz) = credentials.filter(|c| !c.is_empty()) {
        let requested = authz.strip_prefix(b"dn:").unwrap_or(authz);
        let same = state
            .directory
            .normalize(requested)
            .map(|(_, n)| n == ndn)
            .unwrap_or(false);
        if !same {
            return Err(LdapError::new(
                ResultCode::InsufficientAccessRights,
                "SASL(-14): authorization failure",
            ));
        }
    }
    Ok(Who {
        dn: dn_text,
        root: ndn == state.root_ndn,
        ndn: Some(ndn),
        link: link.clone(),
    })
}
