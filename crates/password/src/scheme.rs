//! The `{SCHEME}` names of userPassword values and how a stored value splits into scheme and payload.

use std::fmt;

/// A password storage scheme, named as OpenLDAP names it in a userPassword value's `{...}` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `{SSHA}`: base64(SHA-1(password + salt) + salt).
    Ssha,
    /// `{SHA}`: base64(SHA-1(password)).
    Sha,
    /// `{SSHA256}`: base64(SHA-256(password + salt) + salt).
    Ssha256,
    /// `{SSHA384}`: base64(SHA-384(password + salt) + salt).
    Ssha384,
    /// `{SSHA512}`: base64(SHA-512(password + salt) + salt).
    Ssha512,
    /// `{SHA256}`: base64(SHA-256(password)).
    Sha256,
    /// `{SHA384}`: base64(SHA-384(password)).
    Sha384,
    /// `{SHA512}`: base64(SHA-512(password)).
    Sha512,
    /// `{MD5}`: base64(MD5(password)); verify only in practice, kept for migrated directories.
    Md5,
    /// `{SMD5}`: base64(MD5(password + salt) + salt).
    Smd5,
    /// `{CRYPT}`: a crypt(3) string (`$6$`, `$5$`, `$1$`, traditional DES).
    Crypt,
    /// `{ARGON2}`: a PHC string (`$argon2id$...`, `$argon2i$...`).
    Argon2,
    /// `{PBKDF2-SHA1}` (also spelled `{PBKDF2}`): pw-pbkdf2's `iterations$salt$hash`.
    Pbkdf2Sha1,
    /// `{PBKDF2-SHA256}`.
    Pbkdf2Sha256,
    /// `{PBKDF2-SHA512}`.
    Pbkdf2Sha512,
    /// `{CLEARTEXT}`: the password itself.
    Cleartext,
}

impl Scheme {
    /// Every scheme, in the order [`Scheme::name`] documents them.
    pub const ALL: [Scheme; 16] = [
        Scheme::Ssha,
        Scheme::Sha,
        Scheme::Ssha256,
        Scheme::Ssha384,
        Scheme::Ssha512,
        Scheme::Sha256,
        Scheme::Sha384,
        Scheme::Sha512,
        Scheme::Md5,
        Scheme::Smd5,
        Scheme::Crypt,
        Scheme::Argon2,
        Scheme::Pbkdf2Sha1,
        Scheme::Pbkdf2Sha256,
        Scheme::Pbkdf2Sha512,
        Scheme::Cleartext,
    ];

    /// Looks a scheme up by name, with or without braces, ignoring case: `"{SSHA}"`, `"ssha"`.
    /// `"{PBKDF2}"` is pw-pbkdf2's older name for `{PBKDF2-SHA1}`.
    pub fn from_name(s: &str) -> Option<Scheme> {
        let bare = match (s.strip_prefix('{'), s.ends_with('}')) {
            (Some(inner), true) => inner.strip_suffix('}')?,
            (None, false) => s,
            _ => return None,
        };
        if bare.eq_ignore_ascii_case("PBKDF2") {
            return Some(Scheme::Pbkdf2Sha1);
        }
        Scheme::ALL.into_iter().find(|scheme| {
            let name = scheme.name();
            let inner = name.get(1..name.len() - 1).unwrap_or(name);
            inner.eq_ignore_ascii_case(bare)
        })
    }

    /// The canonical prefix, braces included: `"{SSHA}"`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Ssha => "{SSHA}",
            Scheme::Sha => "{SHA}",
            Scheme::Ssha256 => "{SSHA256}",
            Scheme::Ssha384 => "{SSHA384}",
            Scheme::Ssha512 => "{SSHA512}",
            Scheme::Sha256 => "{SHA256}",
            Scheme::Sha384 => "{SHA384}",
            Scheme::Sha512 => "{SHA512}",
            Scheme::Md5 => "{MD5}",
            Scheme::Smd5 => "{SMD5}",
            Scheme::Crypt => "{CRYPT}",
            Scheme::Argon2 => "{ARGON2}",
            Scheme::Pbkdf2Sha1 => "{PBKDF2-SHA1}",
            Scheme::Pbkdf2Sha256 => "{PBKDF2-SHA256}",
            Scheme::Pbkdf2Sha512 => "{PBKDF2-SHA512}",
            Scheme::Cleartext => "{CLEARTEXT}",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the start of a stored userPassword value says about its scheme.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Prefix<'a> {
    /// No `{NAME}` prefix: the value is a cleartext password.
    None,
    /// A known scheme and the payload after its prefix.
    Known(Scheme, &'a [u8]),
    /// Something shaped like a scheme prefix that names no scheme we know, braces included.
    Unknown(&'a str),
}

/// Longest scheme name we treat as a prefix; longer brace groups are taken as cleartext.
const MAX_NAME_LEN: usize = 32;

/// Splits a stored value into its scheme and payload. A prefix is `{` + 1..=32 characters of
/// `[A-Za-z0-9._-]` + `}`: anything else (`{`, `{a b}`, ...) is an ordinary cleartext value.
pub(crate) fn split_prefix(value: &[u8]) -> Prefix<'_> {
    let Some(after_brace) = value.strip_prefix(b"{") else {
        return Prefix::None;
    };
    let window = after_brace.get(..MAX_NAME_LEN + 1).unwrap_or(after_brace);
    let Some(close) = window.iter().position(|&b| b == b'}') else {
        return Prefix::None;
    };
    let (name, rest) = after_brace.split_at(close);
    let valid = !name.is_empty()
        && name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid {
        return Prefix::None;
    }
    let payload = rest.get(1..).unwrap_or_default();
    let prefix_len = name.len() + 2;
    let with_braces = value
        .get(..prefix_len)
        .and_then(|p| std::str::from_utf8(p).ok())
        .unwrap_or_default();
    match Scheme::from_name(with_braces) {
        Some(scheme) => Prefix::Known(scheme, payload),
        None => Prefix::Unknown(with_braces),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ignore_case() {
        for scheme in Scheme::ALL {
            assert_eq!(Scheme::from_name(scheme.name()), Some(scheme));
            assert_eq!(
                Scheme::from_name(&scheme.name().to_lowercase()),
                Some(scheme)
            );
            let bare = scheme.name().trim_matches(|c| c == '{' || c == '}');
            assert_eq!(Scheme::from_name(bare), Some(scheme));
        }
    }

    #[test]
    fn from_name_table() {
        let check = |input: &str, expected: Option<Scheme>| {
            assert_eq!(Scheme::from_name(input), expected, "{input:?}");
        };
        check("{PBKDF2}", Some(Scheme::Pbkdf2Sha1));
        check("pbkdf2-sha512", Some(Scheme::Pbkdf2Sha512));
        check("{ssha", None);
        check("ssha}", None);
        check("{}", None);
        check("", None);
        check("{BCRYPT}", None);
        check("{{SSHA}}", None);
    }

    #[test]
    fn split_prefix_table() {
        let check = |input: &[u8], expected: Prefix<'_>| {
            assert_eq!(
                split_prefix(input),
                expected,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        };
        check(b"secret", Prefix::None);
        check(b"", Prefix::None);
        check(b"{", Prefix::None);
        check(b"{}x", Prefix::None);
        check(b"{a b}x", Prefix::None);
        check(b"{\xff}x", Prefix::None);
        check(b"{SSHA}abc", Prefix::Known(Scheme::Ssha, b"abc"));
        check(b"{ssha}", Prefix::Known(Scheme::Ssha, b""));
        check(
            b"{PBKDF2}1$a$b",
            Prefix::Known(Scheme::Pbkdf2Sha1, b"1$a$b"),
        );
        check(b"{BCRYPT}xyz", Prefix::Unknown("{BCRYPT}"));
        check(b"{K5KEY}", Prefix::Unknown("{K5KEY}"));
        let long = format!("{{{}}}x", "A".repeat(MAX_NAME_LEN + 1));
        check(long.as_bytes(), Prefix::None);
        let longest = format!("{{{}}}", "A".repeat(MAX_NAME_LEN));
        check(longest.as_bytes(), Prefix::Unknown(&longest));
    }
}
