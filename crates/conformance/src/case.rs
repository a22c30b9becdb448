//! One test case (a request, who sends it, where it came from) and its replay command in the
//! notation of ldapsearch / ldapcompare / ldapmodify, so a human can rerun it against either server.

use base64::Engine as _;
use canopy_proto::{
    CompareRequest, Control, DerefAliases, LdifChange, ModifyOperation, SearchRequest, SearchScope,
};
use std::fmt::Write as _;

/// The root DN and password both servers are configured with.
pub const ROOT_DN: &str = canopy_harness::ROOT_DN;
pub const ROOT_PW: &str = canopy_harness::ROOT_PW;

/// Who sends the request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Identity {
    Anonymous,
    Root,
    Simple { dn: Vec<u8>, pw: Vec<u8> },
}

impl Identity {
    /// Bind DN and password, None for anonymous.
    pub fn credentials(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        match self {
            Identity::Anonymous => None,
            Identity::Root => Some((ROOT_DN.as_bytes().to_vec(), ROOT_PW.as_bytes().to_vec())),
            Identity::Simple { dn, pw } => Some((dn.clone(), pw.clone())),
        }
    }

    /// ldap-utils options selecting this identity.
    pub fn tool_args(&self) -> String {
        match self.credentials() {
            None => "-x".to_string(),
            Some((dn, pw)) => format!("-x -D {} -w {}", quote(&dn), quote(&pw)),
        }
    }
}

/// A write, as an LDIF change record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRecord {
    pub dn: Vec<u8>,
    pub change: LdifChange,
}

/// What a case asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Search(SearchRequest),
    /// A search whose filter is given as raw BER (to send filters the string form cannot express).
    RawSearch {
        req: SearchRequest,
        filter_ber: Vec<u8>,
    },
    Compare(CompareRequest),
    /// A simple bind on a fresh connection.
    Bind {
        dn: Vec<u8>,
        pw: Vec<u8>,
    },
    Change(ChangeRecord),
    /// A search with the simple paged results control (RFC 2696), repeated with each returned cookie
    /// until the last page: every page's answer is compared.
    PagedSearch {
        req: SearchRequest,
        size: i32,
    },
    /// A one-step SASL bind on a fresh connection, followed by a WhoAmI on it when it succeeds.
    SaslBind {
        mechanism: String,
        credentials: Option<Vec<u8>>,
        /// Over the server's ldapi:// socket instead of TCP.
        ldapi: bool,
    },
    /// An extended operation (RFC 4511 §4.12).
    Extended {
        name: String,
        value: Option<Vec<u8>>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// `file:line`, `file:line read-back` or `seed S #N`.
    pub origin: String,
    pub identity: Identity,
    pub request: Request,
    pub controls: Vec<Control>,
    /// A known, documented difference (`deliberate="docs/compatibility.md: ..."` in the corpus): the case must
    /// differ, and that is reported apart instead of failing the run; agreeing fails it (the note is stale).
    pub deliberate: Option<String>,
}

impl Case {
    /// Whether the case changes the directory (it then runs once per server, in corpus order).
    pub fn is_write(&self) -> bool {
        match &self.request {
            Request::Change(_) => true,
            Request::Extended { name, .. } => name == canopy_proto::oid::EXOP_PASSWORD_MODIFY,
            _ => false,
        }
    }

    /// A shell command that replays the request against `url`.
    pub fn replay(&self, url: &str) -> String {
        let who = self.identity.tool_args();
        let ctl = controls_args(&self.controls);
        match &self.request {
            Request::Search(req) => search_command(url, &who, &ctl, req, &req.filter.to_string()),
            Request::RawSearch { req, filter_ber } => {
                format!(
                    "{}   # filter sent as raw BER {}; not expressible in ldapsearch",
                    search_command(url, &who, &ctl, req, "(objectClass=*)"),
                    hex(filter_ber)
                )
            }
            Request::Compare(c) => {
                let assertion = if is_safe(&c.value) {
                    format!("{}:{}", c.attr, String::from_utf8_lossy(&c.value))
                } else {
                    format!(
                        "{}::{}",
                        c.attr,
                        base64::engine::general_purpose::STANDARD.encode(&c.value)
                    )
                };
                format!(
                    "ldapcompare -H {url} {who}{ctl} {} {}",
                    quote(&c.dn),
                    quote(assertion.as_bytes())
                )
            }
            Request::PagedSearch { req, size } => search_command(
                url,
                &who,
                &format!("{ctl} -E pr={size}/noprompt"),
                req,
                &req.filter.to_string(),
            ),
            Request::Extended { name, value } => {
                let arg = match value {
                    None => name.clone(),
                    Some(v) => format!(
                        "{name}::{}",
                        base64::engine::general_purpose::STANDARD.encode(v)
                    ),
                };
                format!("ldapexop -H {url} {who}{ctl} {}", quote(arg.as_bytes()))
            }
            Request::SaslBind {
                mechanism,
                credentials,
                ldapi,
            } => {
                let url = if *ldapi { "\"$LDAPI\"" } else { url };
                let creds = credentials.as_deref().map_or_else(
                    || "none".to_string(),
                    |c| base64::engine::general_purpose::STANDARD.encode(c),
                );
                format!(
                    "ldapwhoami -H {url} -Y {}   # one SASL BindRequest, credentials (base64) {creds}",
                    quote(mechanism.as_bytes())
                )
            }
            Request::Bind { dn, pw } => {
                format!("ldapwhoami -H {url} -x -D {} -w {}", quote(dn), quote(pw))
            }
            Request::Change(rec) => {
                format!(
                    "ldapmodify -H {url} {who}{ctl} <<'EOF'\n{}EOF",
                    change_ldif(rec)
                )
            }
        }
    }
}

fn search_command(url: &str, who: &str, ctl: &str, req: &SearchRequest, filter: &str) -> String {
    let scope = match req.scope {
        SearchScope::BaseObject => "base",
        SearchScope::SingleLevel => "one",
        SearchScope::WholeSubtree => "sub",
        SearchScope::SubordinateSubtree => "children",
    };
    let deref = match req.deref {
        DerefAliases::Never => "never",
        DerefAliases::InSearching => "search",
        DerefAliases::FindingBaseObj => "find",
        DerefAliases::Always => "always",
    };
    let mut s = format!(
        "ldapsearch -H {url} {who}{ctl} -LLL -b {} -s {scope} -a {deref}",
        quote(&req.base)
    );
    if req.size_limit != 0 {
        let _ = write!(s, " -z {}", req.size_limit);
    }
    if req.types_only {
        s.push_str(" -A");
    }
    let _ = write!(s, " {}", quote(filter.as_bytes()));
    for a in &req.attributes {
        let _ = write!(s, " {}", quote(a.as_bytes()));
    }
    s
}

/// ldap-utils `-e` options for the controls. The assertion control's value is shown as its
/// filter (`-e assert=`); a control ldap-utils cannot name is given by OID, its value in base64.
fn controls_args(controls: &[Control]) -> String {
    let mut s = String::new();
    for c in controls {
        let bang = if c.critical { "!" } else { "" };
        let arg = match (c.oid.as_str(), &c.value) {
            ("2.16.840.1.113730.3.4.2", None) => "manageDSAit".to_string(),
            ("1.3.6.1.1.12", Some(v)) => match decode_filter(v) {
                Some(f) => format!("assert={f}"),
                None => format!("1.3.6.1.1.12=::{}", b64(v)),
            },
            ("1.3.6.1.1.13.1", Some(v)) => format!("preread={}", selection(v)),
            ("1.3.6.1.1.13.2", Some(v)) => format!("postread={}", selection(v)),
            ("2.16.840.1.113730.3.4.18", Some(v)) if is_safe(v) => {
                format!("authzid={}", String::from_utf8_lossy(v))
            }
            (oid, None) => oid.to_string(),
            // ldap-utils take `oid=:value` or `oid=::base64`.
            (oid, Some(v)) => format!("{oid}=::{}", b64(v)),
        };
        let _ = write!(s, " -e {}", quote(format!("{bang}{arg}").as_bytes()));
    }
    s
}

/// The attribute list of a pre-read or post-read control value, comma-separated.
fn selection(v: &[u8]) -> String {
    let mut names = Vec::new();
    let mut r = canopy_ber::Reader::new(v);
    if let Ok(mut seq) = r.read_constructed(canopy_ber::tag::SEQUENCE) {
        while let Ok(a) = seq.read_octet_string(canopy_ber::tag::OCTET_STRING) {
            names.push(String::from_utf8_lossy(a).into_owned());
        }
    }
    names.join(",")
}

fn decode_filter(v: &[u8]) -> Option<canopy_proto::Filter> {
    let mut r = canopy_ber::Reader::new(v);
    canopy_proto::Filter::decode_ber(&mut r, &canopy_proto::DecodeLimits::default()).ok()
}

fn b64(v: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(v)
}

fn hex(v: &[u8]) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}

/// The change record in LDIF, as ldapmodify reads it.
pub fn change_ldif(rec: &ChangeRecord) -> String {
    let mut out = ldif_line("dn", &rec.dn);
    match &rec.change {
        LdifChange::Add(attrs) => {
            out.push_str("changetype: add\n");
            for (n, v) in attrs {
                out.push_str(&ldif_line(n, v));
            }
        }
        LdifChange::Delete => out.push_str("changetype: delete\n"),
        LdifChange::Modify(changes) => {
            out.push_str("changetype: modify\n");
            for c in changes {
                let op = match c.operation {
                    ModifyOperation::Add => "add",
                    ModifyOperation::Delete => "delete",
                    ModifyOperation::Replace => "replace",
                    ModifyOperation::Increment => "increment",
                };
                out.push_str(&ldif_line(op, c.modification.name.as_bytes()));
                for v in &c.modification.values {
                    out.push_str(&ldif_line(&c.modification.name, v));
                }
                out.push_str("-\n");
            }
        }
        LdifChange::ModDn {
            new_rdn,
            delete_old_rdn,
            new_superior,
        } => {
            out.push_str("changetype: modrdn\n");
            out.push_str(&ldif_line("newrdn", new_rdn));
            out.push_str(if *delete_old_rdn {
                "deleteoldrdn: 1\n"
            } else {
                "deleteoldrdn: 0\n"
            });
            if let Some(sup) = new_superior {
                out.push_str(&ldif_line("newsuperior", sup));
            }
        }
    }
    out
}

/// One unfolded LDIF line; values that are not RFC 2849 SAFE-STRINGs are base64.
pub fn ldif_line(name: &str, value: &[u8]) -> String {
    let safe = value.iter().all(|&b| (0x20..0x7f).contains(&b))
        && !matches!(value.first(), Some(b' ' | b':' | b'<'))
        && value.last() != Some(&b' ');
    if safe {
        format!("{name}: {}\n", String::from_utf8_lossy(value))
    } else {
        format!(
            "{name}:: {}\n",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// Whether bytes can be shown as-is inside single quotes on one line.
fn is_safe(v: &[u8]) -> bool {
    std::str::from_utf8(v).is_ok_and(|s| !s.chars().any(char::is_control))
}

/// Single-quotes for a POSIX shell.
pub fn quote(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(v);
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::Filter;

    #[test]
    fn quotes_for_the_shell() {
        for (input, want) in [("plain", "'plain'"), ("it's", "'it'\\''s'"), ("", "''")] {
            assert_eq!(quote(input.as_bytes()), want);
        }
    }

    #[test]
    fn controls_replay_as_ldap_utils_options() {
        let assert = Control {
            oid: "1.3.6.1.1.12".into(),
            critical: true,
            value: Some(crate::rawber::filter_ber(&Filter::parse("(sn=x)").unwrap())),
        };
        let manage = Control {
            oid: "2.16.840.1.113730.3.4.2".into(),
            critical: false,
            value: None,
        };
        let other = Control {
            oid: "1.2.3".into(),
            critical: false,
            value: Some(vec![0, 255]),
        };
        assert_eq!(
            controls_args(&[assert, manage, other]),
            " -e '!assert=(sn=x)' -e 'manageDSAit' -e '1.2.3=::AP8='"
        );
    }

    #[test]
    fn search_replay_names_every_parameter() {
        let case = Case {
            origin: "x:1".into(),
            identity: Identity::Root,
            request: Request::Search(SearchRequest {
                base: b"dc=example,dc=com".to_vec(),
                scope: SearchScope::SingleLevel,
                deref: DerefAliases::Always,
                size_limit: 3,
                time_limit: 0,
                types_only: true,
                filter: Filter::parse("(cn=a*)").unwrap(),
                attributes: vec!["cn".into(), "1.1".into()],
            }),
            controls: Vec::new(),
            deliberate: None,
        };
        assert_eq!(
            case.replay("ldap://h:1"),
            "ldapsearch -H ldap://h:1 -x -D 'cn=admin,dc=example,dc=com' -w 'secret' -LLL \
             -b 'dc=example,dc=com' -s one -a always -z 3 -A '(cn=a*)' 'cn' '1.1'"
        );
    }
}
