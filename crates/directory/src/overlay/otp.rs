//! slapd's otp overlay: two-factor simple binds. A user whose entry names an OATH token
//! (`oathHOTPToken` or `oathTOTPToken`, the OATH-LDAP schema) binds with their password followed by
//! the token's current one-time code. The code is checked first, against the token entry's secret and
//! the parameters entry it names, and used up in the same write (the token's counter or last time step
//! moves on), whatever the password turns out to be; the rest of the credentials is then checked as
//! the password. Behaviour as slapd 2.5's, checked against it in e2e (`otp::`).

use canopy_core::{Entry, LdapError};
use canopy_password::otp::{hotp_matches, HmacAlgorithm, MAX_DIGITS};
use canopy_proto::{Dn, ResultCode};
use canopy_schema::NormDn;

use crate::database::Directory;

/// The schema slapd's otp module defines (the OATH-LDAP schema's parts it uses), as its subschema shows it.
pub const OTP_SCHEMA: &str = "\
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.1 NAME 'oathSecret' DESC 'OATH-LDAP: Shared Secret (possibly encrypted with public key in oathEncKey)' EQUALITY octetStringMatch SUBSTR octetStringSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.2 NAME 'oathTokenSerialNumber' DESC 'OATH-LDAP: Proprietary hardware token serial number assigned by vendor' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.44{64} SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.3 NAME 'oathTokenIdentifier' DESC 'OATH-LDAP: Globally unique OATH token identifier' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{256} SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.4 NAME 'oathParamsEntry' DESC 'OATH-LDAP: DN pointing to OATH parameter/policy object' SUP distinguishedName SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.4.1 NAME 'oathTOTPTimeStepPeriod' DESC 'OATH-LDAP: Time window for TOTP (seconds)' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.5 NAME 'oathOTPLength' DESC 'OATH-LDAP: Length of OTP (number of digits)' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.5.1 NAME 'oathHOTPParams' DESC 'OATH-LDAP: DN pointing to HOTP parameter object' SUP oathParamsEntry SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.5.2 NAME 'oathTOTPParams' DESC 'OATH-LDAP: DN pointing to TOTP parameter object' SUP oathParamsEntry SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.6 NAME 'oathHMACAlgorithm' DESC 'OATH-LDAP: HMAC algorithm used for generating OTP values' EQUALITY objectIdentifierMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.38 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.7 NAME 'oathTimestamp' DESC 'OATH-LDAP: Timestamp (not directly used).' EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.7.1 NAME 'oathLastFailure' DESC 'OATH-LDAP: Timestamp of last failed OATH validation' SUP oathTimestamp SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.7.2 NAME 'oathLastLogin' DESC 'OATH-LDAP: Timestamp of last successful OATH validation' SUP oathTimestamp SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.7.3 NAME 'oathSecretTime' DESC 'OATH-LDAP: Timestamp of generation of oathSecret attribute.' SUP oathTimestamp SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.8 NAME 'oathSecretMaxAge' DESC 'OATH-LDAP: Time in seconds for which the shared secret (oathSecret) will be valid from oathSecretTime value.' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.9 NAME 'oathToken' DESC 'OATH-LDAP: DN pointing to OATH token object' SUP distinguishedName SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.9.1 NAME 'oathHOTPToken' DESC 'OATH-LDAP: DN pointing to OATH/HOTP token object' SUP oathToken SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.9.2 NAME 'oathTOTPToken' DESC 'OATH-LDAP: DN pointing to OATH/TOTP token object' SUP oathToken SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10 NAME 'oathCounter' DESC 'OATH-LDAP: Counter for OATH data (not directly used)' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.1 NAME 'oathFailureCount' DESC 'OATH-LDAP: OATH failure counter' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.2 NAME 'oathHOTPCounter' DESC 'OATH-LDAP: Counter for HOTP' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.3 NAME 'oathHOTPLookAhead' DESC 'OATH-LDAP: Look-ahead window for HOTP' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.5 NAME 'oathThrottleLimit' DESC 'OATH-LDAP: Failure throttle limit' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.6 NAME 'oathTOTPLastTimeStep' DESC 'OATH-LDAP: Last time step seen for TOTP (time/period)' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.7 NAME 'oathMaxUsageCount' DESC 'OATH-LDAP: Maximum number of times a token can be used' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.8 NAME 'oathTOTPTimeStepWindow' DESC 'OATH-LDAP: Size of time step +/- tolerance window used for TOTP validation' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.10.9 NAME 'oathTOTPTimeStepDrift' DESC 'OATH-LDAP: Last observed time step shift seen for TOTP' SUP oathCounter SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.11 NAME 'oathSecretLength' DESC 'OATH-LDAP: Length of plain-text shared secret (number of bytes)' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.12 NAME 'oathEncKey' DESC 'OATH-LDAP: public key to be used for encrypting new shared secrets' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.13 NAME 'oathResultCode' DESC 'OATH-LDAP: LDAP resultCode to use in response' EQUALITY integerMatch ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.13.1 NAME 'oathSuccessResultCode' DESC 'OATH-LDAP: success resultCode to use in bind/compare response' SUP oathResultCode X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.13.2 NAME 'oathFailureResultCode' DESC 'OATH-LDAP: failure resultCode to use in bind/compare response' SUP oathResultCode X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.14 NAME 'oathTokenPIN' DESC 'OATH-LDAP: Configuration PIN (possibly encrypted with oathEncKey)' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.15 NAME 'oathMessage' DESC 'OATH-LDAP: success diagnosticMessage to use in bind/compare response' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{1024} SINGLE-VALUE X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.15.1 NAME 'oathSuccessMessage' DESC 'OATH-LDAP: success diagnosticMessage to use in bind/compare response' SUP oathMessage X-ORIGIN 'OATH-LDAP' )
attributetype ( 1.3.6.1.4.1.5427.1.389.4226.4.15.2 NAME 'oathFailureMessage' DESC 'OATH-LDAP: failure diagnosticMessage to use in bind/compare response' SUP oathMessage X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.1 NAME 'oathUser' DESC 'OATH-LDAP: User Object' ABSTRACT X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.1.1 NAME 'oathHOTPUser' DESC 'OATH-LDAP: HOTP user object' SUP oathUser AUXILIARY MAY oathHOTPToken X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.1.2 NAME 'oathTOTPUser' DESC 'OATH-LDAP: TOTP user object' SUP oathUser AUXILIARY MUST oathTOTPToken X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.2 NAME 'oathParams' DESC 'OATH-LDAP: Parameter object' ABSTRACT MUST ( oathOTPLength $ oathHMACAlgorithm ) MAY ( oathSecretMaxAge $ oathSecretLength $ oathMaxUsageCount $ oathThrottleLimit $ oathEncKey $ oathSuccessResultCode $ oathSuccessMessage $ oathFailureResultCode $ oathFailureMessage ) X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.2.1 NAME 'oathHOTPParams' DESC 'OATH-LDAP: HOTP parameter object' SUP oathParams AUXILIARY MUST oathHOTPLookAhead X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.2.2 NAME 'oathTOTPParams' DESC 'OATH-LDAP: TOTP parameter object' SUP oathParams AUXILIARY MUST oathTOTPTimeStepPeriod MAY oathTOTPTimeStepWindow X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.3 NAME 'oathToken' DESC 'OATH-LDAP: User Object' ABSTRACT MAY ( oathSecret $ oathSecretTime $ oathLastLogin $ oathFailureCount $ oathLastFailure $ oathTokenSerialNumber $ oathTokenIdentifier $ oathTokenPIN ) X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.3.1 NAME 'oathHOTPToken' DESC 'OATH-LDAP: HOTP token object' SUP oathToken AUXILIARY MAY ( oathHOTPParams $ oathHOTPCounter ) X-ORIGIN 'OATH-LDAP' )
objectclass ( 1.3.6.1.4.1.5427.1.389.4226.6.3.2 NAME 'oathTOTPToken' DESC 'OATH-LDAP: TOTP token' SUP oathToken AUXILIARY MAY ( oathTOTPParams $ oathTOTPLastTimeStep $ oathTOTPTimeStepDrift ) X-ORIGIN 'OATH-LDAP' )
";

/// The two kinds of token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// RFC 4226: a counter, moved on by each use.
    Hotp,
    /// RFC 6238: the time step, which must move on between uses.
    Totp,
}

impl Kind {
    fn token_attr(self) -> &'static str {
        match self {
            Kind::Hotp => "oathHOTPToken",
            Kind::Totp => "oathTOTPToken",
        }
    }

    fn params_attr(self) -> &'static str {
        match self {
            Kind::Hotp => "oathHOTPParams",
            Kind::Totp => "oathTOTPParams",
        }
    }

    fn last_attr(self) -> &'static str {
        match self {
            Kind::Hotp => "oathHOTPCounter",
            Kind::Totp => "oathTOTPLastTimeStep",
        }
    }
}

/// What the parameters entry says.
#[derive(Debug, Clone, Copy)]
struct Params {
    digits: u32,
    algorithm: HmacAlgorithm,
    /// HOTP: the codes that may be skipped; TOTP: the time steps tried each side of now.
    window: u64,
    /// TOTP: seconds per step.
    period: u64,
}

/// The overlay; `modifier` (the root DN) is the modifiersName of the token's changes, as slapd's
/// internal modify.
#[derive(Debug, Clone)]
pub struct Otp {
    modifier: String,
}

fn refused() -> LdapError {
    LdapError::new(ResultCode::InvalidCredentials, "")
}

fn first<'a>(entry: &'a Entry, attr: &str) -> Option<&'a [u8]> {
    entry
        .get(attr)
        .and_then(|a| a.values.first())
        .map(Vec::as_slice)
}

fn number(entry: &Entry, attr: &str) -> Option<u64> {
    std::str::from_utf8(first(entry, attr)?)
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn signed(entry: &Entry, attr: &str) -> Option<i64> {
    std::str::from_utf8(first(entry, attr)?)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Replaces `attr`'s value the way a modify's replace does: the attribute moves to the end of the
/// entry, as slapd's internal modify of the counter leaves it.
fn set(entry: &mut Entry, attr: &str, value: String) {
    entry.attrs.retain(|a| !a.desc.eq_ignore_ascii_case(attr));
    entry.attrs.push(canopy_core::Attribute {
        desc: attr.to_string(),
        values: vec![value.into_bytes()],
    });
}

impl Otp {
    pub fn new(modifier: &str) -> Otp {
        Otp {
            modifier: modifier.to_string(),
        }
    }

    fn normalize(dir: &Directory, value: &[u8]) -> Option<NormDn> {
        let dn = Dn::parse(value).ok()?;
        dir.schema().normalize_dn(&dn).ok()
    }

    /// A simple bind as `ndn` with `credentials`. None: the entry names no token, the credentials are
    /// the password. Some(password): the code at the end of the credentials was right and is used up
    /// now; the rest is to be checked as the password. invalidCredentials when the code is wrong,
    /// used before, or the token or its parameters are missing or unusable.
    pub async fn check(
        &self,
        dir: &Directory,
        ndn: &NormDn,
        credentials: &[u8],
    ) -> Result<Option<Vec<u8>>, LdapError> {
        let (kind, token_ndn, params) = {
            let txn = dir.read()?;
            let Some(user) = dir.entry_at(&txn, ndn) else {
                return Ok(None);
            };
            let named = [Kind::Hotp, Kind::Totp]
                .into_iter()
                .find_map(|kind| first(&user, kind.token_attr()).map(|v| (kind, v.to_vec())));
            let Some((kind, token_dn)) = named else {
                return Ok(None);
            };
            let token_ndn = Self::normalize(dir, &token_dn).ok_or_else(refused)?;
            let token = dir.entry_at(&txn, &token_ndn).ok_or_else(refused)?;
            let params_ndn = first(&token, kind.params_attr())
                .and_then(|v| Self::normalize(dir, v))
                .ok_or_else(refused)?;
            let params = dir.entry_at(&txn, &params_ndn).ok_or_else(refused)?;
            (
                kind,
                token_ndn,
                Self::params(kind, &params).ok_or_else(refused)?,
            )
        };
        let digits = params.digits as usize;
        if credentials.len() < digits {
            return Err(refused());
        }
        let (password, code) = credentials.split_at(credentials.len() - digits);
        let (code, modifier) = (code.to_vec(), self.modifier.clone());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let used = dir
            .run_write(move |dir, txn, stamp| {
                let Some((id, token)) = super::load(txn, &token_ndn)? else {
                    return Ok::<bool, LdapError>(false);
                };
                let Some(next) = Self::redeem(kind, &params, &token, &code, now) else {
                    return Ok(false);
                };
                let mut next = Self::advanced(kind, token.clone(), next);
                stamp.touch(&mut next, &modifier);
                dir.rewrite(txn, id, &token, next)?;
                dir.raise_context_with(txn, stamp)?;
                Ok(true)
            })
            .await?;
        if !used {
            return Err(refused());
        }
        Ok(Some(password.to_vec()))
    }

    fn params(kind: Kind, params: &Entry) -> Option<Params> {
        let digits = u32::try_from(number(params, "oathOTPLength")?).ok()?;
        if digits == 0 || digits > MAX_DIGITS {
            return None;
        }
        let oid = std::str::from_utf8(first(params, "oathHMACAlgorithm")?).ok()?;
        let algorithm = HmacAlgorithm::from_oid(oid)?;
        let (window, period) = match kind {
            Kind::Hotp => (number(params, "oathHOTPLookAhead").unwrap_or(0), 0),
            Kind::Totp => {
                let period = number(params, "oathTOTPTimeStepPeriod").filter(|p| *p > 0)?;
                (
                    number(params, "oathTOTPTimeStepWindow").unwrap_or(0),
                    period,
                )
            }
        };
        Some(Params {
            digits,
            algorithm,
            window: window.min(1024),
            period,
        })
    }

    /// The counter or time step (and, for TOTP, the drift from now) whose code `code` is, among those
    /// not used yet: HOTP, the counters after the last used one, up to `window` of them skipped; TOTP,
    /// the steps within `window` of now after the last used one.
    fn redeem(
        kind: Kind,
        params: &Params,
        token: &Entry,
        code: &[u8],
        now: u64,
    ) -> Option<(u64, i64)> {
        let secret = first(token, "oathSecret")?;
        let last = signed(token, kind.last_attr());
        let matches =
            |counter: u64| hotp_matches(params.algorithm, secret, counter, params.digits, code);
        match kind {
            Kind::Hotp => {
                let start = last.map_or(0, |l| (l + 1).max(0) as u64);
                (start..=start.saturating_add(params.window))
                    .find(|c| matches(*c))
                    .map(|c| (c, 0))
            }
            Kind::Totp => {
                let step = now / params.period;
                let low = step.saturating_sub(params.window);
                let low = match last {
                    Some(l) if l >= 0 => low.max(l as u64 + 1),
                    _ => low,
                };
                (low..=step.saturating_add(params.window))
                    .find(|s| matches(*s))
                    .map(|s| (s, s as i64 - step as i64))
            }
        }
    }

    /// The token entry with `(counter or step, drift)` recorded as used.
    fn advanced(kind: Kind, mut token: Entry, (used, drift): (u64, i64)) -> Entry {
        set(&mut token, kind.last_attr(), used.to_string());
        if kind == Kind::Totp && (drift != 0 || token.get("oathTOTPTimeStepDrift").is_some()) {
            set(&mut token, "oathTOTPTimeStepDrift", drift.to_string());
        }
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_core::Attribute;

    fn entry(attrs: &[(&str, &[u8])]) -> Entry {
        let dn = Dn::parse(b"ou=token,dc=example,dc=com").unwrap();
        Entry {
            ndn: NormDn::from_normalized_rdns(vec![
                "ou=token".into(),
                "dc=example".into(),
                "dc=com".into(),
            ]),
            dn,
            attrs: attrs
                .iter()
                .map(|(d, v)| Attribute {
                    desc: d.to_string(),
                    values: vec![v.to_vec()],
                })
                .collect(),
        }
    }

    /// The secret of OpenLDAP's test080-hotp data and its first codes (counters 0 to 10).
    const SECRET: &[u8] = &[
        0x3d, 0xc6, 0xca, 0xa4, 0x82, 0x4a, 0x6d, 0x28, 0x87, 0x67, 0xb2, 0x33, 0x1e, 0x20, 0xb4,
        0x31, 0x66, 0xcb, 0x85, 0xd9,
    ];
    const CODES: [&str; 11] = [
        "818800", "320382", "404533", "127122", "892599", "407030", "880935", "920291", "145192",
        "316404", "409144",
    ];

    fn hotp_params(window: u64) -> Params {
        Params {
            digits: 6,
            algorithm: HmacAlgorithm::Sha1,
            window,
            period: 0,
        }
    }

    #[test]
    fn hotp_takes_the_next_codes_up_to_the_look_ahead() {
        let token = entry(&[("oathSecret", SECRET), ("oathHOTPCounter", b"3")]);
        let p = hotp_params(3);
        let at = |n: usize| Otp::redeem(Kind::Hotp, &p, &token, CODES[n].as_bytes(), 0);
        assert_eq!(at(3), None, "the last used code");
        assert_eq!(at(4), Some((4, 0)));
        assert_eq!(at(7), Some((7, 0)), "three skipped");
        assert_eq!(at(8), None, "beyond the look-ahead");
        let token = Otp::advanced(Kind::Hotp, token, (7, 0));
        assert_eq!(first(&token, "oathHOTPCounter"), Some(&b"7"[..]));
        assert_eq!(
            Otp::redeem(Kind::Hotp, &p, &token, CODES[5].as_bytes(), 0),
            None
        );
        assert_eq!(
            Otp::redeem(Kind::Hotp, &p, &token, CODES[10].as_bytes(), 0),
            Some((10, 0))
        );
    }

    #[test]
    fn hotp_without_a_counter_starts_at_zero() {
        let token = entry(&[("oathSecret", SECRET)]);
        let p = hotp_params(0);
        assert_eq!(
            Otp::redeem(Kind::Hotp, &p, &token, CODES[0].as_bytes(), 0),
            Some((0, 0))
        );
        assert_eq!(
            Otp::redeem(Kind::Hotp, &p, &token, CODES[1].as_bytes(), 0),
            None
        );
    }

    #[test]
    fn totp_takes_steps_within_the_window_once() {
        let p = Params {
            digits: 6,
            algorithm: HmacAlgorithm::Sha1,
            window: 3,
            period: 30,
        };
        let now = 30 * 7 + 12;
        let token = entry(&[("oathSecret", SECRET)]);
        let at =
            |token: &Entry, n: usize| Otp::redeem(Kind::Totp, &p, token, CODES[n].as_bytes(), now);
        assert_eq!(at(&token, 4), Some((4, -3)));
        assert_eq!(at(&token, 10), Some((10, 3)));
        assert_eq!(at(&token, 3), None, "outside the window");
        let used = Otp::advanced(Kind::Totp, token, (7, 0));
        assert_eq!(first(&used, "oathTOTPLastTimeStep"), Some(&b"7"[..]));
        assert_eq!(at(&used, 7), None, "used");
        assert_eq!(at(&used, 5), None, "before the last used step");
        assert_eq!(at(&used, 8), Some((8, 1)));
    }

    #[test]
    fn unusable_parameters() {
        let mut params = entry(&[
            ("oathOTPLength", b"6"),
            ("oathHMACAlgorithm", b"1.2.840.113549.2.7"),
        ]);
        assert!(Otp::params(Kind::Hotp, &params).is_some());
        assert!(Otp::params(Kind::Totp, &params).is_none(), "no period");
        params.attrs[0].values = vec![b"12".to_vec()];
        assert!(
            Otp::params(Kind::Hotp, &params).is_none(),
            "too many digits"
        );
        params.attrs[0].values = vec![b"6".to_vec()];
        params.attrs[1].values = vec![b"1.2.840.113549.2.5".to_vec()];
        assert!(Otp::params(Kind::Hotp, &params).is_none(), "no HMAC");
    }
}
