//! Reading one `constraint_attribute` line of slapd (without the keyword): slapd's word splitting,
//! the kinds and their values, `restrict=`, and the LDAP URLs both use (RFC 4516, without a host).

use canopy_proto::url::percent_decode;
use canopy_proto::{Filter, SearchScope};
use regex::bytes::{Regex, RegexBuilder};

use super::{set, Limit, Restrict, Rule};

/// Splits a line into words as slapd's configuration reader does: blanks separate words, a double
/// quote starts or ends a quoted stretch (and is dropped), a backslash makes the next character
/// literal (and is dropped).
pub(super) fn words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            '\\' => {
                let word = word.get_or_insert_with(String::new);
                // A backslash at the very end stays, as slapd leaves it.
                word.push(chars.next().unwrap_or('\\'));
            }
            ' ' | '\t' if !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    words.extend(word);
    Ok(words)
}

const SYNOPSIS: &str =
    "expected ATTR[,ATTR...] regex|negregex|size|count|uri|set VALUE [restrict=URI]";

/// Parses one constraint; the schema is checked later ([`Rule::check`]).
pub(super) fn rule(line: &str) -> Result<Rule, String> {
    let words = words(line)?;
    let [attrs, kind, value, extras @ ..] = words.as_slice() else {
        return Err(SYNOPSIS.into());
    };
    let attrs: Vec<String> = attrs.split(',').map(str::to_string).collect();
    if attrs.iter().any(String::is_empty) {
        return Err(format!("empty attribute name in {:?}", words[0]));
    }
    let limit = match kind.to_ascii_lowercase().as_str() {
        "regex" => Limit::Regex(regex(value)?),
        "negregex" => Limit::NegRegex(regex(value)?),
        "size" => Limit::Size(number("size", value)?),
        "count" => Limit::Count(number("count", value)?),
        "uri" => {
            let url = url(value).map_err(|e| format!("uri {value:?}: {e}"))?;
            if url.attrs.is_empty() {
                return Err(format!(
                    "uri {value:?}: names no attribute whose values are allowed (ldap:///BASE?ATTR?SCOPE?FILTER)"
                ));
            }
            Limit::Uri(url)
        }
        "set" => Limit::Set(set::Expr::parse(value).map_err(|e| format!("set {value:?}: {e}"))?),
        other => {
            return Err(format!(
                "unknown constraint type {other:?} (Canopy has regex, negregex, size, count, uri and set)"
            ))
        }
    };
    let mut restrict = None;
    for extra in extras {
        let uri = extra
            .get(..9)
            .filter(|head| head.eq_ignore_ascii_case("restrict="))
            .and_then(|_| extra.get(9..))
            .ok_or_else(|| {
                format!("unrecognized argument {extra:?} (only restrict=URI may follow)")
            })?;
        if restrict.is_some() {
            return Err("restrict= given twice".into());
        }
        restrict = Some(restriction(uri).map_err(|e| format!("restrict URI {uri:?}: {e}"))?);
    }
    Ok(Rule {
        text: line.to_string(),
        attrs,
        limit,
        restrict,
    })
}

/// A POSIX extended regular expression as slapd compiles it, matched against the bytes of a value:
/// `.` matches any byte but a newline is matched too (no REG_NEWLINE), classes are ASCII.
fn regex(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .dot_matches_new_line(true)
        .build()
        .map_err(|e| {
            let reason = e.to_string();
            let last = reason.lines().last().unwrap_or("").trim();
            format!("bad regular expression {pattern:?}: {last}")
        })
}

fn number(kind: &str, value: &str) -> Result<usize, String> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{kind} {value:?}: expected a number"));
    }
    value
        .parse()
        .map_err(|_| format!("{kind} {value:?}: number too large"))
}

/// An LDAP URL without a host (RFC 4516): `ldap:///DN?ATTRS?SCOPE?FILTER`.
#[derive(Debug, Clone)]
pub(super) struct LdapUrl {
    /// The base DN as written (percent-decoded), empty when absent.
    pub dn: String,
    pub attrs: Vec<String>,
    /// `base` when absent, as libldap's URL parser gives it.
    pub scope: SearchScope,
    pub filter: Option<Filter>,
}

pub(super) fn url(text: &str) -> Result<LdapUrl, String> {
    let rest = text
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("ldap://"))
        .and_then(|_| text.get(7..))
        .ok_or("not an ldap:// URL")?;
    let path = match rest.split_once('/') {
        Some(("", path)) => path,
        None if rest.is_empty() => "",
        _ => return Err("a host is not allowed (ldap:///...)".into()),
    };
    let parts: Vec<&str> = path.split('?').collect();
    if parts.len() > 5 {
        return Err("too many '?' parts".into());
    }
    let part = |i: usize| parts.get(i).copied().unwrap_or("");
    let dn = percent_decode(part(0))?;
    let mut attrs = Vec::new();
    for attr in part(1).split(',').filter(|a| !a.is_empty()) {
        attrs.push(percent_decode(attr)?);
    }
    let scope = match part(2).to_ascii_lowercase().as_str() {
        "" | "base" => SearchScope::BaseObject,
        "one" | "onelevel" => SearchScope::SingleLevel,
        "sub" | "subtree" => SearchScope::WholeSubtree,
        "children" | "subord" | "subordinate" => SearchScope::SubordinateSubtree,
        other => return Err(format!("unknown scope {other:?}")),
    };
    let filter = match percent_decode(part(3))? {
        text if text.is_empty() => None,
        text => Some(filter(&text)?),
    };
    if !part(4).is_empty() {
        return Err("extensions are not supported".into());
    }
    Ok(LdapUrl {
        dn,
        attrs,
        scope,
        filter,
    })
}

/// An RFC 4515 filter; one simple item may come without its parentheses, as slapd accepts it.
pub(super) fn filter(text: &str) -> Result<Filter, String> {
    let wrapped;
    let text = if text.starts_with('(') {
        text
    } else {
        wrapped = format!("({text})");
        &wrapped
    };
    Filter::parse(text).map_err(|e| format!("filter {text:?}: {e}"))
}

fn restriction(text: &str) -> Result<Restrict, String> {
    let url = url(text)?;
    if !url.attrs.is_empty() {
        return Err("attributes are not allowed".into());
    }
    Ok(Restrict {
        base: (!url.dn.is_empty()).then_some(url.dn),
        scope: url.scope,
        filter: url.filter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_slapd_splits_them() {
        let check = |line: &str, want: &[&str]| assert_eq!(words(line).unwrap(), want, "{line}");
        check("mail regex ^a$", &["mail", "regex", "^a$"]);
        check("  cn \t size  10 ", &["cn", "size", "10"]);
        check(
            "cn set \"this/cn & [a b]\" restrict=\"ldap:///dc=x??sub\"",
            &["cn", "set", "this/cn & [a b]", "restrict=ldap:///dc=x??sub"],
        );
        check(r"o regex a\.b\\c\ d", &["o", "regex", r"a.b\c d"]);
        check(r#"o regex \"x\""#, &["o", "regex", "\"x\""]);
        check("o regex \"\"", &["o", "regex", ""]);
        assert!(words("o regex \"open").is_err());
    }

    #[test]
    fn urls() {
        let u = url("ldap:///ou=People,dc=example,dc=com?uid,cn?sub?(objectClass=person)").unwrap();
        assert_eq!(u.dn, "ou=People,dc=example,dc=com");
        assert_eq!(u.attrs, ["uid", "cn"]);
        assert_eq!(u.scope, SearchScope::WholeSubtree);
        assert!(u.filter.is_some());
        let u = url("LDAP:///dc=a%2Cb?x").unwrap();
        assert_eq!(
            (u.dn.as_str(), u.scope),
            ("dc=a,b", SearchScope::BaseObject)
        );
        assert!(u.filter.is_none());
        assert_eq!(url("ldap://").unwrap().dn, "");
        assert_eq!(
            url("ldap:///dc=x??children?cn=a").unwrap().scope,
            SearchScope::SubordinateSubtree
        );
        for (bad, why) in [
            ("http:///dc=x", "not an ldap"),
            ("ldap://host/dc=x", "host"),
            ("ldap:///dc=x??nowhere", "scope"),
            ("ldap:///dc=x???(cn=a", "filter"),
            ("ldap:///dc=x????e=1", "extensions"),
            ("ldap:///dc=x?a?b?c?d?e", "too many"),
        ] {
            let err = url(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn rules_and_their_errors() {
        let ok = |line: &str| rule(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(matches!(
            ok("jpegPhoto size 131072").limit,
            Limit::Size(131072)
        ));
        assert!(matches!(ok("userPassword COUNT 3").limit, Limit::Count(3)));
        assert_eq!(
            ok("cn,sn,givenName regex ^x").attrs,
            ["cn", "sn", "givenName"]
        );
        let r = ok("mail negregex ^a restrict=ldap:///ou=p,dc=x??one?(objectClass=person)");
        let restrict = r.restrict.unwrap();
        assert_eq!(restrict.base.as_deref(), Some("ou=p,dc=x"));
        assert_eq!(restrict.scope, SearchScope::SingleLevel);
        assert!(ok("cn regex a RESTRICT=ldap:///??sub")
            .restrict
            .unwrap()
            .base
            .is_none());
        for (bad, why) in [
            ("cn regex", "expected ATTR"),
            ("cn,,sn size 1", "empty attribute"),
            ("cn size ten", "expected a number"),
            ("cn size -1", "expected a number"),
            ("cn count 99999999999999999999999", "too large"),
            ("cn regex ^(a", "bad regular expression"),
            ("cn neguri ldap:///dc=x?cn", "unknown constraint type"),
            ("cn uri ldap:///dc=x", "names no attribute"),
            ("cn uri ldap://h/dc=x?cn", "host"),
            ("cn size 1 bogus", "unrecognized argument"),
            (
                "cn size 1 restrict=ldap:///dc=x?cn",
                "attributes are not allowed",
            ),
            (
                "cn size 1 restrict=ldap:///dc=x restrict=ldap:///dc=y",
                "twice",
            ),
            ("cn set \"this/cn &\"", "set"),
        ] {
            let err = rule(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn regex_is_posix_like_on_bytes() {
        let re = regex("^[[:alnum:]]+@example\\.com$").unwrap();
        assert!(re.is_match(b"abc9@example.com"));
        assert!(!re.is_match(b"a.b@example.com"));
        // No REG_NEWLINE: `.` crosses lines, `$` is the end of the value.
        assert!(regex("^a.b$").unwrap().is_match(b"a\nb"));
        assert!(!regex("^a$").unwrap().is_match(b"a\nb"));
        // Unanchored, as regexec searches.
        assert!(regex("b").unwrap().is_match(b"abc"));
        // Bytes that are not UTF-8 are values like any other.
        assert!(regex("^.$").unwrap().is_match(&[0xff]));
    }
}
