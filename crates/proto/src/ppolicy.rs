//! draft-behera-ldap-password-policy-10 §6.2: the value of the password policy response control,
//! encoded as OpenLDAP 2.5 encodes it (`warning [0]` holds a `[0]` or `[1]` INTEGER, `error [1]`
//! an ENUMERATED under implicit tagging); and the value of Sun's Account Usability response control
//! (1.3.6.1.4.1.42.2.27.9.5.8), which slapd's ppolicy sends on search result entries.

use canopy_ber::{tag, Reader, Writer};

use crate::decoding::DecodeError;

/// The warning of a response: seconds before the password expires, or grace logins left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warning {
    TimeBeforeExpiration(i64),
    GraceAuthNsRemaining(i64),
}

/// The error of a response (the draft's ENUMERATED, with OpenLDAP 2.5's passwordTooLong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyError {
    PasswordExpired = 0,
    AccountLocked = 1,
    ChangeAfterReset = 2,
    PasswordModNotAllowed = 3,
    MustSupplyOldPassword = 4,
    InsufficientPasswordQuality = 5,
    PasswordTooShort = 6,
    PasswordTooYoung = 7,
    PasswordInHistory = 8,
    PasswordTooLong = 9,
}

impl PolicyError {
    pub fn from_code(code: i64) -> Option<PolicyError> {
        use PolicyError::*;
        [
            PasswordExpired,
            AccountLocked,
            ChangeAfterReset,
            PasswordModNotAllowed,
            MustSupplyOldPassword,
            InsufficientPasswordQuality,
            PasswordTooShort,
            PasswordTooYoung,
            PasswordInHistory,
            PasswordTooLong,
        ]
        .into_iter()
        .find(|e| *e as i64 == code)
    }
}

const WARNING: u8 = 0xa0;
const TIME_BEFORE_EXPIRATION: u8 = 0x80;
const GRACE_AUTHNS_REMAINING: u8 = 0x81;
const ERROR: u8 = 0x81;

/// PasswordPolicyResponseValue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PasswordPolicyResponse {
    pub warning: Option<Warning>,
    pub error: Option<PolicyError>,
}

impl PasswordPolicyResponse {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            if let Some(warning) = self.warning {
                w.constructed(WARNING, |w| match warning {
                    Warning::TimeBeforeExpiration(s) => w.integer(TIME_BEFORE_EXPIRATION, s),
                    Warning::GraceAuthNsRemaining(n) => w.integer(GRACE_AUTHNS_REMAINING, n),
                });
            }
            if let Some(error) = self.error {
                w.integer(ERROR, error as i64);
            }
        });
        out
    }

    pub fn decode(value: &[u8]) -> Result<PasswordPolicyResponse, DecodeError> {
        let mut outer = Reader::new(value);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let mut out = PasswordPolicyResponse::default();
        if seq.peek_tag() == Some(WARNING) {
            let mut w = seq.read_constructed(WARNING)?;
            out.warning = Some(match w.peek_tag() {
                Some(TIME_BEFORE_EXPIRATION) => {
                    Warning::TimeBeforeExpiration(w.read_integer(TIME_BEFORE_EXPIRATION)?)
                }
                Some(GRACE_AUTHNS_REMAINING) => {
                    Warning::GraceAuthNsRemaining(w.read_integer(GRACE_AUTHNS_REMAINING)?)
                }
                _ => return Err(DecodeError::new("unknown password policy warning")),
            });
        }
        if seq.peek_tag() == Some(ERROR) {
            let code = seq.read_integer(ERROR)?;
            out.error = Some(
                PolicyError::from_code(code)
                    .ok_or_else(|| DecodeError::new("unknown password policy error"))?,
            );
        }
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new(
                "unexpected data in password policy control",
            ));
        }
        Ok(out)
    }
}

/// The Account Usability response control's value (`ACCOUNT_USABLE_RESPONSE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountUsability {
    /// `is_available [0] INTEGER`: seconds before the password expires, -1 when it does not.
    Available(i64),
    /// `is_not_available [1] MORE_INFO`.
    NotAvailable {
        /// Locked out (`seconds_before_unlock` says for how long; -1 when no end is known).
        inactive: bool,
        /// Reset by an administrator under pwdMustChange: it must be changed first.
        reset: bool,
        /// The password has expired (slapd 2.5 never sets it: it shows in `remaining_grace`).
        expired: bool,
        /// Grace logins left on an expired password, -1 when none apply.
        remaining_grace: i64,
        seconds_before_unlock: i64,
    },
}

/// Context tags of the response (OpenLDAP's `LDAP_TAG_X_ACCOUNT_USABILITY_*`).
mod usability_tag {
    pub const AVAILABLE: u8 = 0x80;
    pub const NOT_AVAILABLE: u8 = 0xa1;
    pub const INACTIVE: u8 = 0x80;
    pub const RESET: u8 = 0x81;
    pub const EXPIRED: u8 = 0x82;
    pub const REMAINING_GRACE: u8 = 0x83;
    pub const UNTIL_UNLOCK: u8 = 0x84;
}

impl AccountUsability {
    /// The BER value, every MORE_INFO element present, as slapd writes them.
    pub fn encode(&self) -> Vec<u8> {
        use usability_tag::*;
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        match *self {
            AccountUsability::Available(seconds) => w.integer(AVAILABLE, seconds),
            AccountUsability::NotAvailable {
                inactive,
                reset,
                expired,
                remaining_grace,
                seconds_before_unlock,
            } => w.constructed(NOT_AVAILABLE, |w| {
                w.boolean(INACTIVE, inactive);
                w.boolean(RESET, reset);
                w.boolean(EXPIRED, expired);
                w.integer(REMAINING_GRACE, remaining_grace);
                w.integer(UNTIL_UNLOCK, seconds_before_unlock);
            }),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_openldap() {
        let cases: [(PasswordPolicyResponse, &str); 4] = [
            (PasswordPolicyResponse::default(), "3000"),
            (
                PasswordPolicyResponse {
                    warning: Some(Warning::TimeBeforeExpiration(300)),
                    error: None,
                },
                "3006a0048002012c",
            ),
            (
                PasswordPolicyResponse {
                    warning: Some(Warning::GraceAuthNsRemaining(2)),
                    error: None,
                },
                "3005a003810102",
            ),
            (
                PasswordPolicyResponse {
                    warning: None,
                    error: Some(PolicyError::AccountLocked),
                },
                "3003810101",
            ),
        ];
        for (value, hex) in cases {
            let bytes = value.encode();
            let got: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(got, hex);
            assert_eq!(PasswordPolicyResponse::decode(&bytes).unwrap(), value);
        }
        assert!(PasswordPolicyResponse::decode(&[0x30, 0x03, 0x81, 0x01, 0x0a]).is_err());
    }

    #[test]
    fn account_usability_encodes_as_openldap() {
        assert_eq!(AccountUsability::Available(-1).encode(), b"\x80\x01\xff");
        assert_eq!(
            AccountUsability::Available(300).encode(),
            b"\x80\x02\x01\x2c"
        );
        let locked = AccountUsability::NotAvailable {
            inactive: true,
            reset: false,
            expired: false,
            remaining_grace: -1,
            seconds_before_unlock: 10,
        };
        assert_eq!(
            locked.encode(),
            b"\xa1\x0f\x80\x01\xff\x81\x01\x00\x82\x01\x00\x83\x01\xff\x84\x01\x0a"
        );
    }
}
