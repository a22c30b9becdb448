//! The values of OpenLDAP's authz syntax (1.3.6.1.4.1.4203.666.2.7), which `authzTo` and `authzFrom`
//! hold: the rules saying whom an identity may act as, or who may act as it. Parsed here, pure; the
//! server resolves and matches them against the directory.

use canopy_proto::url::percent_decode;
use canopy_proto::{Dn, Filter, SearchScope};

use crate::norm_dn::parse_dn_value;

/// The syntax's OID. slapd keeps it out of the subschema entry.
pub const SYNTAX_OID: &str = "1.3.6.1.4.1.4203.666.2.7";

/// `authzTo` and `authzFrom`, which slapd keeps out of the subschema entry too (other attributes of
/// the syntax, such as dyngroup's `dgAuthz`, are listed).
pub const AUTHZ_TO_OID: &str = "1.3.6.1.4.1.4203.666.1.8";
pub const AUTHZ_FROM_OID: &str = "1.3.6.1.4.1.4203.666.1.9";

/// How a `dn.STYLE:DN` rule relates the DN to the identity tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnStyle {
    /// That identity (`dn:`, `dn.exact:`, `dn.base:`, or a bare DN).
    Exact,
    /// The DN and every identity below it.
    Subtree,
    /// Every identity strictly below the DN.
    Children,
    /// The identities directly below the DN.
    OneLevel,
}

/// One authz rule value.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthzValue {
    /// `dn[.STYLE]:DN` or a bare DN.
    Dn { style: DnStyle, dn: Dn },
    /// `dn.regex:PATTERN`: a POSIX extended expression over the normalized DN, without case. The
    /// pattern is not checked when stored (as slapd): a bad one matches nothing.
    Regex(String),
    /// `*` or `dn:*`: every authenticated identity.
    Users,
    /// `u[.MECH[/REALM]]:NAME`: a SASL user name, mapped to a DN as a SASL bind's would be.
    User {
        mechanism: Option<String>,
        realm: Option<String>,
        name: String,
    },
    /// `ldap:///BASE??SCOPE?FILTER`: the entries an internal search finds. Without a filter it
    /// matches nothing (slapd's rule).
    Search {
        base: Dn,
        scope: SearchScope,
        filter: Option<Filter>,
    },
    /// `group[/CLASS[/ATTRIBUTE]]:DN`: the members of a group (groupOfNames/member by default).
    Group {
        class: String,
        attribute: String,
        dn: Dn,
    },
}

impl AuthzValue {
    /// Parses one value; an error text for values slapd's syntax refuses (invalidAttributeSyntax).
    /// Set expressions (`set:`) are refused, as Debian's slapd does.
    pub fn parse(text: &str) -> Result<AuthzValue, String> {
        if text.is_empty() {
            return Err("empty authz value".into());
        }
        if text == "*" {
            return Ok(AuthzValue::Users);
        }
        if let Some(rest) = strip_prefix_ignore_case(text, "dn") {
            return parse_dn_form(rest);
        }
        if let Some(rest) = strip_prefix_ignore_case(text, "u") {
            if rest.starts_with([':', '.', '/']) {
                return parse_user(rest);
            }
        }
        if let Some(rest) = strip_prefix_ignore_case(text, "group") {
            return parse_group(rest);
        }
        if let Some(rest) = strip_prefix_ignore_case(text, "ldap://") {
            return parse_url(rest);
        }
        if text.contains("://") {
            return Err("only ldap:/// URLs name searches".into());
        }
        // Anything else is an exact DN, as slapd reads it.
        Ok(AuthzValue::Dn {
            style: DnStyle::Exact,
            dn: dn(text)?,
        })
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn dn(text: &str) -> Result<Dn, String> {
    parse_dn_value(text.trim_start_matches(' ').as_bytes()).map_err(|e| e.to_string())
}

fn parse_dn_form(rest: &str) -> Result<AuthzValue, String> {
    let (style, value) = match rest.strip_prefix('.') {
        Some(styled) => {
            let (style, value) = styled
                .split_once(':')
                .ok_or_else(|| "dn.STYLE without ':'".to_string())?;
            (style.to_ascii_lowercase(), value)
        }
        None => match rest.strip_prefix(':') {
            Some(value) => ("exact".to_string(), value),
            // `dnsomething=...`: no form of slapd's; read as a bare DN as slapd does.
            None => {
                return Ok(AuthzValue::Dn {
                    style: DnStyle::Exact,
                    dn: dn(&format!("dn{rest}"))?,
                })
            }
        },
    };
    let value = value.trim_start_matches(' ');
    if style == "regex" {
        return Ok(AuthzValue::Regex(value.to_string()));
    }
    let style = match style.as_str() {
        "exact" | "base" => DnStyle::Exact,
        "subtree" | "sub" => DnStyle::Subtree,
        "children" => DnStyle::Children,
        "onelevel" | "one" => DnStyle::OneLevel,
        other => return Err(format!("unknown DN style {other:?}")),
    };
    if value == "*" {
        return Ok(AuthzValue::Users);
    }
    Ok(AuthzValue::Dn {
        style,
        dn: dn(value)?,
    })
}

/// `u[.MECH[/REALM]]:NAME` (after the `u`).
fn parse_user(rest: &str) -> Result<AuthzValue, String> {
    let (head, name) = rest
        .split_once(':')
        .ok_or_else(|| "u form without ':'".to_string())?;
    let (mechanism, realm) = match head.strip_prefix('.') {
        Some(mech_realm) => match mech_realm.split_once('/') {
            Some((mech, realm)) => (Some(mech), Some(realm)),
            None => (Some(mech_realm), None),
        },
        None => match head.strip_prefix('/') {
            Some(realm) => (None, Some(realm)),
            None if head.is_empty() => (None, None),
            None => return Err("malformed u form".into()),
        },
    };
    if name.is_empty() || mechanism == Some("") || realm == Some("") {
        return Err("empty part in u form".into());
    }
    Ok(AuthzValue::User {
        mechanism: mechanism.map(str::to_string),
        realm: realm.map(str::to_string),
        name: name.to_string(),
    })
}

/// `group[/CLASS[/ATTRIBUTE]][.exact]:DN` (after `group`).
fn parse_group(rest: &str) -> Result<AuthzValue, String> {
    let (head, value) = rest
        .split_once(':')
        .ok_or_else(|| "group form without ':'".to_string())?;
    let head = head
        .strip_suffix(".exact")
        .or_else(|| head.strip_suffix(".expand"))
        .unwrap_or(head);
    let mut parts = head.split('/');
    if parts.next() != Some("") {
        return Err("malformed group form".into());
    }
    let class = parts.next().unwrap_or("groupOfNames");
    let attribute = parts.next().unwrap_or("member");
    if parts.next().is_some() || class.is_empty() || attribute.is_empty() {
        return Err("malformed group form".into());
    }
    Ok(AuthzValue::Group {
        class: class.to_string(),
        attribute: attribute.to_string(),
        dn: dn(value)?,
    })
}

/// `ldap:///BASE[??SCOPE[?FILTER]]` (after `ldap://`): no host, attributes or extensions.
fn parse_url(rest: &str) -> Result<AuthzValue, String> {
    let rest = rest
        .strip_prefix('/')
        .ok_or_else(|| "an ldap URL here names no host".to_string())?;
    let mut parts = rest.split('?');
    let base = percent_decode(parts.next().unwrap_or(""))?;
    let attributes = parts.next().unwrap_or("");
    let scope = parts.next().unwrap_or("");
    let filter = parts.next().unwrap_or("");
    let extensions = parts.next().unwrap_or("");
    if !attributes.is_empty() || !extensions.is_empty() || parts.next().is_some() {
        return Err("an ldap URL here has no attributes or extensions".into());
    }
    let scope = match scope.to_ascii_lowercase().as_str() {
        "" | "base" => SearchScope::BaseObject,
        "one" | "onelevel" => SearchScope::SingleLevel,
        "sub" | "subtree" => SearchScope::WholeSubtree,
        "children" | "subordinate" => SearchScope::SubordinateSubtree,
        other => return Err(format!("unknown URL scope {other:?}")),
    };
    let filter = match percent_decode(filter)? {
        f if f.is_empty() => None,
        f => {
            let f = if f.trim_start().starts_with('(') {
                f
            } else {
                format!("({})", f.trim())
            };
            Some(Filter::parse(&f).map_err(|e| format!("URL filter: {e}"))?)
        }
    };
    Ok(AuthzValue::Search {
        base: dn(&base)?,
        scope,
        filter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(text: &str) -> bool {
        AuthzValue::parse(text).is_ok()
    }

    /// Valid and invalid values as Debian's slapd 2.5 takes or refuses them in authzTo.
    #[test]
    fn validity_as_slapd() {
        for ok in [
            "dn:uid=bob,ou=people,dc=example,dc=com",
            "dn.exact:uid=bob,dc=example,dc=com",
            "dn.subtree:ou=people,dc=example,dc=com",
            "dn.children:ou=people,dc=example,dc=com",
            "dn.onelevel:ou=people,dc=example,dc=com",
            "dn.regex:^uid=c.*,ou=people,dc=example,dc=com$",
            "dn.regex:((",
            "*",
            "dn:*",
            "u:bob",
            "u.plain:bob",
            "uid=bob,ou=people,dc=example,dc=com",
            "ldap:///ou=people,dc=example,dc=com??sub?(uid=dave)",
            "ldap:///ou=people,dc=example,dc=com??one?uid=bob",
            "ldap:///uid=bob,dc=example,dc=com",
            "group:cn=staff,ou=groups,dc=example,dc=com",
            "group/groupOfNames/member:cn=staff,dc=example,dc=com",
        ] {
            assert!(valid(ok), "{ok} refused");
        }
        for bad in [
            "",
            "dn.foo:x",
            "xx:yy",
            "dn:not a dn",
            "ldap://host/dc=x",
            "ldaps:///dc=x",
            "ldap:///dc=x??sub?(((",
            "ldap:///dc=x?cn?sub?(cn=a)",
            "set:foo",
            "u:",
        ] {
            assert!(!valid(bad), "{bad} accepted");
        }
    }

    #[test]
    fn forms() {
        assert_eq!(AuthzValue::parse("DN:*").unwrap(), AuthzValue::Users);
        assert!(matches!(
            AuthzValue::parse("dn.subtree:dc=example,dc=com").unwrap(),
            AuthzValue::Dn {
                style: DnStyle::Subtree,
                ..
            }
        ));
        assert_eq!(
            AuthzValue::parse("u.PLAIN/realm:bob").unwrap(),
            AuthzValue::User {
                mechanism: Some("PLAIN".into()),
                realm: Some("realm".into()),
                name: "bob".into()
            }
        );
        match AuthzValue::parse("ldap:///dc=example,dc=com??sub").unwrap() {
            AuthzValue::Search { scope, filter, .. } => {
                assert_eq!(scope, SearchScope::WholeSubtree);
                assert!(filter.is_none());
            }
            other => panic!("{other:?}"),
        }
    }
}
