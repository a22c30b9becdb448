//! Where passwords may travel: the `require_protected_passwords` switch, checked by simple binds, Password
//! Modify and writes of userPassword.

use canopy_core::LdapError;
use canopy_proto::ResultCode;

use crate::config::PasswordProtection;
use crate::session::Link;
use crate::state::State;

/// Refuses a simple bind with confidentialityRequired, in slapd's words under `security simple_bind`, when
/// its password would cross a link the configuration does not count as protected. TLS and ldapi always are.
pub fn require_protected_password(state: &State, link: &Link) -> Result<(), LdapError> {
    refuse_unprotected(state, link, "confidentiality required")
}

/// The same for a password change (Password Modify, or an add or modify writing userPassword), in slapd's
/// words under `security update_ssf`.
pub fn require_protected_password_change(state: &State, link: &Link) -> Result<(), LdapError> {
    refuse_unprotected(state, link, "confidentiality required for update")
}

fn refuse_unprotected(state: &State, link: &Link, text: &str) -> Result<(), LdapError> {
    if link_allows_passwords(state.config.tls.require_protected_passwords, link) {
        Ok(())
    } else {
        Err(LdapError::new(ResultCode::ConfidentialityRequired, text))
    }
}

fn link_allows_passwords(setting: PasswordProtection, link: &Link) -> bool {
    match setting {
        PasswordProtection::Never => true,
        PasswordProtection::Always => link.is_protected() || link.peer.is_none(),
        PasswordProtection::NonLoopback => {
            link.is_protected() || link.is_loopback() || link.peer.is_none()
        }
    }
}

/// The same check for an add or modify, when one of the attribute descriptions it writes is userPassword.
pub fn check_password_write<'a>(
    state: &State,
    link: &Link,
    mut descriptions: impl Iterator<Item = &'a str>,
) -> Result<(), LdapError> {
    if descriptions.any(is_password_attribute) {
        require_protected_password_change(state, link)?;
    }
    Ok(())
}

/// True when an attribute description names userPassword (any options).
pub fn is_password_attribute(description: &str) -> bool {
    let name = description.split(';').next().unwrap_or(description);
    name.eq_ignore_ascii_case("userPassword") || name == "2.5.4.35"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Peer, TlsFacts};

    fn tcp(addr: &str) -> Link {
        Link::new(Peer::Tcp(addr.parse().unwrap()))
    }

    #[test]
    fn the_switch() {
        let remote = tcp("192.0.2.1:1000");
        let local = tcp("127.0.0.1:1000");
        let ldapi = Link::new(Peer::Unix { uid: 0, gid: 0 });
        let mut tls = remote.clone();
        tls.tls = Some(TlsFacts::default());
        use PasswordProtection::*;
        assert!(!link_allows_passwords(NonLoopback, &remote));
        assert!(link_allows_passwords(NonLoopback, &local));
        assert!(link_allows_passwords(NonLoopback, &tls));
        assert!(!link_allows_passwords(Always, &local));
        assert!(link_allows_passwords(Always, &ldapi));
        assert!(link_allows_passwords(Always, &tls));
        assert!(link_allows_passwords(Never, &remote));
    }

    #[test]
    fn password_attribute_names() {
        assert!(is_password_attribute("userPassword"));
        assert!(is_password_attribute("USERPASSWORD;binary"));
        assert!(!is_password_attribute("userPKCS12"));
    }
}
