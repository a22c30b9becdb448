//! The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) without channel binding.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use canopy_core::LdapError;
use canopy_password::scram::{ScramHash, ScramSecret};
use canopy_proto::ResultCode;
use rand::RngCore;

/// What the client's first message said.
#[derive(Debug, PartialEq, Eq)]
pub struct ClientFirst {
    /// The gs2 header as sent (`n,,` or `y,,` or with `a=`), echoed in `c=` of the final message.
    pub gs2_header: String,
    /// The authorization identity from `a=`, if any.
    pub authzid: Option<String>,
    /// The decoded user name.
    pub user: String,
    pub bare: String,
    pub nonce: String,
}

/// The exchange after the server's first message, waiting for the client's final message.
#[derive(Debug)]
pub struct Waiting {
    pub hash: ScramHash,
    pub first: ClientFirst,
    pub server_first: String,
    pub nonce: String,
    /// The user's secret; None for an unknown user or one without a SCRAM secret (a fake salt was sent).
    pub secret: Option<ScramSecret>,
    /// The entry the user name mapped to, if any.
    pub authc: Option<(String, canopy_schema::NormDn)>,
}

fn fail(text: &str) -> LdapError {
    LdapError::new(ResultCode::InvalidCredentials, format!("SASL(-13): {text}"))
}

/// RFC 5802 §5.1 saslname: `=2C` and `=3D` stand for `,` and `=`; any other `=` is an error.
fn decode_saslname(text: &str) -> Result<String, LdapError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('=') {
        out.push_str(&rest[..pos]);
        let escape = rest.get(pos..pos + 3);
        match escape {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(fail("invalid encoding of user name")),
        }
        rest = &rest[pos + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses the client-first-message.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, LdapError> {
    let text = std::str::from_utf8(message).map_err(|_| fail("message is not UTF-8"))?;
    let mut parts = text.splitn(3, ',');
    let cbind = parts.next().unwrap_or("");
    let authz = parts.next().ok_or_else(|| fail("truncated message"))?;
    let bare = parts.next().ok_or_else(|| fail("truncated message"))?;
    match cbind {
        "n" | "y" => {}
        p if p.starts_with("p=") => {
            return Err(LdapError::new(
                ResultCode::InappropriateAuthentication,
                "SASL(-13): channel binding is not supported; use SCRAM without -PLUS",
            ))
        }
        _ => return Err(fail("bad gs2 header")),
    }
    let authzid = match authz {
        "" => None,
        a => Some(decode_saslname(
            a.strip_prefix("a=")
                .ok_or_else(|| fail("bad authorization identity"))?,
        )?),
    };
    let mut user = None;
    let mut nonce = None;
    for (i, attr) in bare.split(',').enumerate() {
        match (i, attr.split_at_checked(2)) {
            (0, Some(("m=", _))) => return Err(fail("mandatory extension not supported")),
            (0, Some(("n=", name))) => user = Some(decode_saslname(name)?),
            (1, Some(("r=", value))) => nonce = Some(value.to_string()),
            (0 | 1, _) => return Err(fail("bad client-first-message")),
            _ => {}
        }
    }
    let (Some(user), Some(nonce)) = (user, nonce) else {
        return Err(fail("bad client-first-message"));
    };
    if nonce.is_empty()
        || !nonce
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
    {
        return Err(fail("bad nonce"));
    }
    Ok(ClientFirst {
        gs2_header: format!("{cbind},{authz},"),
        authzid,
        user,
        bare: bare.to_string(),
        nonce,
    })
}

/// Builds the server-first-message. Without a usable secret, `mock_salt` at the configured iteration
/// count stands in, so unknown users look like known ones until the proof fails.
pub fn server_first(
    hash: ScramHash,
    first: ClientFirst,
    secret: Option<ScramSecret>,
    authc: Option<(String, canopy_schema::NormDn)>,
    (mock_salt, iterations): (Vec<u8>, u32),
) -> (Waiting, Vec<u8>) {
    let mut random = [0u8; 18];
    rand::rng().fill_bytes(&mut random);
    let nonce = format!("{}{}", first.nonce, B64.encode(random));
    let (salt, iterations) = match &secret {
        Some(s) => (s.salt.clone(), s.iterations),
        None => (mock_salt, iterations),
    };
    let server_first = format!("r={nonce},s={},i={iterations}", B64.encode(salt));
    let out = server_first.clone().into_bytes();
    (
        Waiting {
            hash,
            first,
            server_first,
            nonce,
            secret,
            authc,
        },
        out,
    )
}

/// Checks the client-final-message. On success returns the server-final-message (`v=...`).
pub fn finish(waiting: &Waiting, message: &[u8]) -> Result<Vec<u8>, LdapError> {
    let text = std::str::from_utf8(message).map_err(|_| fail("message is not UTF-8"))?;
    let (without_proof, proof) = text
        .rsplit_once(",p=")
        .ok_or_else(|| fail("client-final-message without proof"))?;
    let mut parts = without_proof.splitn(3, ',');
    let channel = parts
        .next()
        .and_then(|c| c.strip_prefix("c="))
        .ok_or_else(|| fail("bad client-final-message"))?;
    let nonce = parts
        .next()
        .and_then(|r| r.strip_prefix("r="))
        .ok_or_else(|| fail("bad client-final-message"))?;
    let channel = B64
        .decode(channel)
        .map_err(|_| fail("bad channel binding data"))?;
    if channel != waiting.first.gs2_header.as_bytes() {
        return Err(fail("channel binding data does not match the gs2 header"));
    }
    if nonce != waiting.nonce {
        return Err(fail("nonce mismatch"));
    }
    let proof = B64.decode(proof).map_err(|_| fail("bad proof encoding"))?;
    let auth_message = format!(
        "{},{},{}",
        waiting.first.bare, waiting.server_first, without_proof
    );
    let signature = waiting
        .secret
        .as_ref()
        .and_then(|s| s.check_proof(auth_message.as_bytes(), &proof))
        .ok_or_else(|| LdapError::new(ResultCode::InvalidCredentials, ""))?;
    Ok(format!("v={}", B64.encode(signature)).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_first_forms() {
        let f = parse_client_first(b"n,,n=user,r=abc").unwrap();
        assert_eq!(f.user, "user");
        assert_eq!(f.gs2_header, "n,,");
        assert_eq!(f.authzid, None);
        let f = parse_client_first(b"y,a=u:bob,n=a=2Cb=3Dc,r=xyz,ext=1").unwrap();
        assert_eq!(f.user, "a,b=c");
        assert_eq!(f.authzid.as_deref(), Some("u:bob"));
        let code = |m: &[u8]| parse_client_first(m).unwrap_err().code;
        assert_eq!(
            code(b"p=tls-unique,,n=user,r=abc"),
            ResultCode::InappropriateAuthentication
        );
        assert_eq!(code(b"n,,m=x,n=user,r=abc"), ResultCode::InvalidCredentials);
        assert_eq!(code(b"n,,n=us=er,r=abc"), ResultCode::InvalidCredentials);
        assert_eq!(code(b"n,,n=user"), ResultCode::InvalidCredentials);
        assert_eq!(code(b"x,,n=user,r=a"), ResultCode::InvalidCredentials);
        assert_eq!(code(b"n,,"), ResultCode::InvalidCredentials);
    }

    /// RFC 7677 §3's exchange, with the server nonce forced.
    #[test]
    fn rfc7677_exchange() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let first = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
        let secret = ScramSecret::derive_with_salt(ScramHash::Sha256, b"pencil", &salt, 4096);
        let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".to_string();
        let waiting = Waiting {
            hash: ScramHash::Sha256,
            first,
            server_first: format!("r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
            nonce: nonce.clone(),
            secret: Some(secret),
            authc: None,
        };
        let good = format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        assert_eq!(
            finish(&waiting, good.as_bytes()).unwrap(),
            b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        let bad = format!("c=biws,r={nonce},p=eHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        assert_eq!(
            finish(&waiting, bad.as_bytes()).unwrap_err().code,
            ResultCode::InvalidCredentials
        );
        let no_secret = Waiting {
            secret: None,
            ..waiting
        };
        assert!(finish(&no_secret, good.as_bytes()).is_err());
        let waiting = no_secret;
        let wrong_nonce = "c=biws,r=other,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        assert!(finish(&waiting, wrong_nonce.as_bytes()).is_err());
        let wrong_channel = format!("c=eSws,r={nonce},p=AAAA");
        assert!(finish(&waiting, wrong_channel.as_bytes()).is_err());
    }
}
