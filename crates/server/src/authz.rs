//! The `[sasl]` section compiled: OpenLDAP-style `authz-regexp` rules that map SASL names to a DN or a
//! search, and the proxy authorization rules that say who may act as whom. Pure rules: finding the
//! entries they name is `sasl::mapping`'s.

use canopy_proto::url::percent_decode;
use canopy_proto::Filter;
use canopy_schema::NormDn;
use regex::Regex;
use serde::Deserialize;

/// `[sasl]`: how SASL names become entries and who may act as whom.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sasl {
    /// Ordered rules like OpenLDAP's `authz-regexp`; the first that matches decides.
    pub authz_regexp: Vec<AuthzRegexp>,
    /// Who may use an authorization identity other than their own.
    pub proxy: Vec<ProxyRule>,
    /// The Kerberos keytab of the service principal: GSSAPI is offered only with one.
    pub keytab: Option<std::path::PathBuf>,
    /// slapd's `sasl-host`: the host of the service principal `ldap/HOST@REALM` (when unset, any
    /// principal of the keytab is accepted).
    pub host: Option<String>,
    /// slapd's `sasl-realm`: GSSAPI authentication names then read `uid=NAME,cn=REALM,cn=gssapi,cn=auth`.
    pub realm: Option<String>,
    /// slapd's `sasl-secprops maxssf=N`: the strongest GSSAPI security layer offered; 0 offers none.
    pub gssapi_max_ssf: Option<u32>,
    /// slapd's `authz-policy`: which of the `authzTo` and `authzFrom` attributes of entries are
    /// consulted when an identity asks to act as another (a SASL authzid or the proxied
    /// authorization control). `[[sasl.proxy]]` rules apply whatever it says.
    pub authz_policy: AuthzPolicy,
}

/// slapd's `authz-policy` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthzPolicy {
    /// No entry's rules are consulted (slapd's default).
    #[default]
    None,
    /// The target identity's `authzFrom`.
    From,
    /// The authenticated identity's `authzTo`.
    To,
    /// Either of them.
    Any,
    /// Both of them.
    All,
}

impl AuthzPolicy {
    /// The value as slapd writes it (`authz-policy` and `olcAuthzPolicy`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuthzPolicy::None => "none",
            AuthzPolicy::From => "from",
            AuthzPolicy::To => "to",
            AuthzPolicy::Any => "any",
            AuthzPolicy::All => "all",
        }
    }

    /// slapd's words, without case; `both` is slapd's other name for `any`.
    pub fn parse(text: &str) -> Option<AuthzPolicy> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "none" => AuthzPolicy::None,
            "from" => AuthzPolicy::From,
            "to" => AuthzPolicy::To,
            "any" | "both" => AuthzPolicy::Any,
            "all" => AuthzPolicy::All,
            _ => return None,
        })
    }

    /// Whether the authenticated identity's `authzTo` is consulted.
    pub fn uses_to(self) -> bool {
        matches!(self, AuthzPolicy::To | AuthzPolicy::Any | AuthzPolicy::All)
    }

    /// Whether the target identity's `authzFrom` is consulted.
    pub fn uses_from(self) -> bool {
        matches!(
            self,
            AuthzPolicy::From | AuthzPolicy::Any | AuthzPolicy::All
        )
    }
}

/// `[[sasl.authz_regexp]]`: a regular expression over `uid=NAME,cn=MECH,cn=auth` and its replacement,
/// a DN or an `ldap:///base??sub?filter` URL with `$1`.. for the groups.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthzRegexp {
    #[serde(rename = "match")]
    pub pattern: String,
    pub replace: String,
}

/// `[[sasl.proxy]]`: identities under `from` may act as identities under `to`. Each side is
/// `dn:DN` (that entry) or `subtree:DN` (the entry and all below it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyRule {
    pub from: String,
    pub to: String,
}

/// The compiled `[sasl]` configuration.
#[derive(Debug, Default)]
pub struct Rules {
    regexps: Vec<(Regex, String)>,
    proxy: Vec<(String, String)>,
    pub policy: AuthzPolicy,
}

/// Where a mapped name points: one DN, or a search that must find exactly one entry.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    Dn(String),
    Search {
        base: String,
        subtree: bool,
        filter: String,
    },
}

impl Rules {
    /// Compiles and checks the rules; errors name the rule.
    pub fn compile(config: &Sasl) -> Result<Rules, String> {
        let mut regexps = Vec::new();
        for (i, rule) in config.authz_regexp.iter().enumerate() {
            // Case-insensitive, as slapd compiles them (REG_ICASE): a SASL name's case is the
            // client's, and DNs compare without it.
            let regex = Regex::new(&format!("(?i)^(?:{})$", rule.pattern))
                .map_err(|e| format!("[[sasl.authz_regexp]] #{}: {e}", i + 1))?;
            if rule.replace.starts_with("ldap:") {
                parse_url(&rule.replace)
                    .map_err(|e| format!("[[sasl.authz_regexp]] #{}: {e}", i + 1))?;
            }
            regexps.push((regex, rule.replace.clone()));
        }
        let mut proxy = Vec::new();
        for (i, rule) in config.proxy.iter().enumerate() {
            for side in [&rule.from, &rule.to] {
                split_side(side).ok_or_else(|| {
                    format!(
                        "[[sasl.proxy]] #{}: {side:?} is neither dn:DN nor subtree:DN",
                        i + 1
                    )
                })?;
            }
            proxy.push((rule.from.clone(), rule.to.clone()));
        }
        Ok(Rules {
            regexps,
            proxy,
            policy: config.authz_policy,
        })
    }

    /// The target of a plain SASL user name under `mechanism`: the first matching rule, else the
    /// default (the entry whose uid is the name).
    pub fn target(&self, mechanism: &str, name: &str) -> Target {
        self.target_in(Some(mechanism), None, name)
    }

    /// [`Rules::target`] with slapd's full subject: `uid=NAME[,cn=REALM][,cn=MECH],cn=auth`.
    pub fn target_in(&self, mechanism: Option<&str>, realm: Option<&str>, name: &str) -> Target {
        let mut subject = format!("uid={name}");
        if let Some(realm) = realm {
            subject.push_str(&format!(",cn={realm}"));
        }
        if let Some(mechanism) = mechanism {
            subject.push_str(&format!(",cn={}", mechanism.to_ascii_lowercase()));
        }
        subject.push_str(",cn=auth");
        self.rewrite(&subject).unwrap_or_else(|| Target::Search {
            base: String::new(),
            subtree: true,
            filter: format!("(uid={})", escape_filter_value(name)),
        })
    }

    /// The target of the first rule that matches `subject` (a DN as slapd builds it for the rules:
    /// `uid=NAME,cn=MECH,cn=auth`, or EXTERNAL's normalized certificate subject or peer
    /// credentials); None when no rule matches.
    pub fn rewrite(&self, subject: &str) -> Option<Target> {
        let (caps, replace) = self
            .regexps
            .iter()
            .find_map(|(regex, replace)| Some((regex.captures(subject)?, replace)))?;
        let mut out = String::new();
        caps.expand(replace, &mut out);
        Some(match parse_url(&out) {
            Ok(Some(search)) => search,
            _ => Target::Dn(out),
        })
    }
}

/// `ldap:///base??scope?filter` (RFC 4516 without host, attributes or extensions). `Ok(None)` for
/// anything that is not an ldap URL.
fn parse_url(text: &str) -> Result<Option<Target>, String> {
    let Some(rest) = text.strip_prefix("ldap:///") else {
        return Ok(None);
    };
    let mut parts = rest.splitn(4, '?');
    let base = percent_decode(parts.next().unwrap_or(""))?;
    let _attributes = parts.next();
    let subtree = match parts.next().unwrap_or("") {
        "" | "base" => false,
        "sub" => true,
        other => return Err(format!("URL scope {other:?}: use base or sub")),
    };
    let filter = percent_decode(parts.next().unwrap_or(""))?;
    let filter = if filter.is_empty() {
        "(objectClass=*)".to_string()
    } else if !filter.trim_start().starts_with('(') {
        // `uid=$1` without parentheses, which slapd's filter parser takes as `(uid=$1)`.
        format!("({})", filter.trim())
    } else {
        filter
    };
    Filter::parse(&filter).map_err(|e| format!("URL filter: {e}"))?;
    Ok(Some(Target::Search {
        base,
        subtree,
        filter,
    }))
}

/// RFC 4515 escaping of a value inside a filter.
fn escape_filter_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'*' | b'(' | b')' | b'\\' | 0 => out.push_str(&format!("\\{b:02x}")),
            _ => out.push(b as char),
        }
    }
    out
}

fn split_side(side: &str) -> Option<(bool, &str)> {
    if let Some(dn) = side.strip_prefix("dn:") {
        Some((false, dn))
    } else {
        side.strip_prefix("subtree:").map(|dn| (true, dn))
    }
}

impl Rules {
    /// Whether `authc` may act as `authz` under the `[[sasl.proxy]]` rules; `normalize` turns a rule's
    /// DN into a normalized one (None: the rule matches nobody).
    pub fn allows_proxy(
        &self,
        normalize: impl Fn(&str) -> Option<NormDn>,
        authc: &NormDn,
        authz: &NormDn,
    ) -> bool {
        let covers = |side: &str, ndn: &NormDn| {
            let Some((subtree, dn)) = split_side(side) else {
                return false;
            };
            let Some(rule) = normalize(dn.trim()) else {
                return false;
            };
            if subtree {
                rule.is_suffix_of(ndn)
            } else {
                rule == *ndn
            }
        };
        self.proxy
            .iter()
            .any(|(from, to)| covers(from, authc) && covers(to, authz))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(pattern: &str, replace: &str) -> Rules {
        Rules::compile(&Sasl {
            authz_regexp: vec![AuthzRegexp {
                pattern: pattern.into(),
                replace: replace.into(),
            }],
            proxy: Vec::new(),
            authz_policy: AuthzPolicy::None,
            ..Sasl::default()
        })
        .unwrap()
    }

    #[test]
    fn default_rule_searches_uid() {
        let target = Rules::default().target("PLAIN", "a*(b)");
        assert_eq!(
            target,
            Target::Search {
                base: String::new(),
                subtree: true,
                filter: r"(uid=a\2a\28b\29)".into()
            }
        );
    }

    #[test]
    fn regexp_to_dn_and_url() {
        let r = rules(
            "uid=([^,]*),cn=scram-sha-256,cn=auth",
            "uid=$1,ou=people,dc=example,dc=com",
        );
        assert_eq!(
            r.target("SCRAM-SHA-256", "bob"),
            Target::Dn("uid=bob,ou=people,dc=example,dc=com".into())
        );
        // No match: the default.
        assert!(matches!(r.target("PLAIN", "bob"), Target::Search { .. }));
        let r = rules(
            "uid=([^,]*),cn=[^,]*,cn=auth",
            "ldap:///ou=people,dc=example,dc=com??sub?(mail=$1@example.com)",
        );
        assert_eq!(
            r.target("PLAIN", "carol"),
            Target::Search {
                base: "ou=people,dc=example,dc=com".into(),
                subtree: true,
                filter: "(mail=carol@example.com)".into()
            }
        );
    }

    /// slapd compiles its rules case-insensitively and takes a URL filter without parentheses.
    #[test]
    fn case_and_bare_filters_as_slapd() {
        let r = rules(
            "UID=([^,]*),CN=PLAIN,CN=AUTH",
            "ldap:///ou=people,dc=example,dc=com??sub?uid=$1",
        );
        assert_eq!(
            r.target("PLAIN", "Dave"),
            Target::Search {
                base: "ou=people,dc=example,dc=com".into(),
                subtree: true,
                filter: "(uid=Dave)".into()
            }
        );
    }

    #[test]
    fn bad_rules_are_refused() {
        let bad = |pattern: &str, replace: &str| {
            Rules::compile(&Sasl {
                authz_regexp: vec![AuthzRegexp {
                    pattern: pattern.into(),
                    replace: replace.into(),
                }],
                proxy: Vec::new(),
                authz_policy: AuthzPolicy::None,
                ..Sasl::default()
            })
            .is_err()
        };
        assert!(bad("(", "x"));
        assert!(bad("x", "ldap:///dc=x??one?(uid=1)"));
        assert!(bad("x", "ldap:///dc=x??sub?(uid=1"));
    }
}
