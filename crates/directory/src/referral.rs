//! RFC 3296 referral objects: the referral result (RFC 4511 §4.1.10) for operations at or below one, and
//! continuation references (§4.5.3) for those inside a search's scope, with URLs adjusted as slapd does.

use crate::view::Snapshot;
use canopy_core::wire::{attributes, StoredEntry};
use canopy_core::LdapError;
use canopy_proto::url::{percent_decode_lossy, percent_encode};
use canopy_proto::{Dn, SearchScope};
use canopy_schema::NormDn;

use crate::database::Directory;
use crate::error::Referral;

const REFERRAL_OID: &str = "2.16.840.1.113730.3.2.6";
const ALIAS_OID: &str = "2.5.6.1";
/// slapd's glue class: a placeholder a slapd consumer makes for a missing parent, or for an entry it
/// could not delete because children remain; it replicates such entries like any other.
const GLUE_OID: &str = "1.3.6.1.4.1.4203.666.3.4";
const SUBENTRY_OID: &str = "2.5.17.0";

/// Whether a stored entry lists `name` (or its OID) among its object classes. Searches ask this of every
/// candidate, so the scan stops at the objectClass attribute (stored among the first).
fn has_class(stored: &StoredEntry<'_>, name: &str, oid: &str) -> bool {
    attributes(stored.user)
        .filter_map(Result::ok)
        .find(|(desc, _)| desc.eq_ignore_ascii_case("objectClass"))
        .is_some_and(|(_, values)| {
            values
                .iter()
                .any(|v| v.eq_ignore_ascii_case(name.as_bytes()) || *v == oid.as_bytes())
        })
}

pub fn is_referral(stored: &StoredEntry<'_>) -> bool {
    has_class(stored, "referral", REFERRAL_OID)
}

/// A glue entry (slapd's `glue` class): searches pass over it unless ManageDsaIT asks, as slapd's do.
pub fn is_glue(stored: &StoredEntry<'_>) -> bool {
    has_class(stored, "glue", GLUE_OID)
}

/// RFC 3672 §2.4: a subentry, which searches show only as the Subentries control (or slapd's
/// default without it) says.
pub fn is_subentry(stored: &StoredEntry<'_>) -> bool {
    has_class(stored, "subentry", SUBENTRY_OID)
}

pub fn is_alias(stored: &StoredEntry<'_>) -> bool {
    has_class(stored, "alias", ALIAS_OID)
}

/// The values of one attribute, looked for in every section.
pub fn values<'a>(stored: &StoredEntry<'a>, name: &str) -> Vec<&'a [u8]> {
    [stored.user, stored.operational]
        .into_iter()
        .flat_map(attributes)
        .filter_map(Result::ok)
        .filter(|(desc, _)| desc.eq_ignore_ascii_case(name))
        .flat_map(|(_, values)| values)
        .collect()
}

fn stored_dn(stored: &StoredEntry<'_>) -> String {
    String::from_utf8_lossy(stored.dn).into_owned()
}

/// An existing entry found for a name: how many RDNs of the name lie below it, its ID and stored bytes.
pub type Nearest<'t> = (usize, u64, &'t [u8]);

/// The nearest entry at or above `ndn` in the naming context.
pub fn nearest<'t>(
    dir: &Directory,
    txn: &'t Snapshot,
    ndn: &NormDn,
) -> Result<Option<Nearest<'t>>, LdapError> {
    let mut candidate = Some(ndn.clone());
    let mut below = 0;
    while let Some(current) = candidate {
        if !dir.holds(&current) {
            break;
        }
        if let Some((id, bytes)) = dir.lookup(txn, &current)? {
            return Ok(Some((below, id, bytes)));
        }
        candidate = current.parent();
        below += 1;
    }
    Ok(None)
}

/// The referral that answers an operation on `dn` instead of the operation itself: the nearest existing
/// entry at or above it is a referral object, and it is not the target itself under ManageDsaIT. An add
/// whose entry exists already is left to fail as such.
pub fn governing(
    dir: &Directory,
    txn: &Snapshot,
    dn: &Dn,
    ndn: &NormDn,
    manage_dsa_it: bool,
    scope: Option<SearchScope>,
) -> Result<Option<Referral>, LdapError> {
    let Some((below, _, bytes)) = nearest(dir, txn, ndn)? else {
        return Ok(None);
    };
    let stored = Directory::parse_stored(bytes)?;
    if !is_referral(&stored) || (below == 0 && manage_dsa_it) {
        return Ok(None);
    }
    Ok(Some(referral_for(&stored, dn, below, scope, None)))
}

/// The referral result of a referral object for a target `below` RDNs under it. When the target was
/// reached through an alias, slapd puts the name the client asked for in the URLs instead: `requested`.
pub fn referral_for(
    stored: &StoredEntry<'_>,
    dn: &Dn,
    below: usize,
    scope: Option<SearchScope>,
    requested: Option<&Dn>,
) -> Referral {
    let requested = requested.map(|r| r.to_string());
    let entry_dn = stored_dn(stored);
    let prefix = dn.rdns.get(..below).unwrap_or(&[]).to_vec();
    // The search is to go on there as it was asked here, in the URL's scope terms (RFC 4516).
    let suffix = scope.map(scope_part);
    let urls = values(stored, "ref")
        .into_iter()
        .map(|url| {
            let url = url_of(url);
            match &requested {
                Some(name) => adjust(&url, name, &[], suffix, true),
                None => adjust(&url, &entry_dn, &prefix, suffix, false),
            }
        })
        .collect();
    Referral {
        matched: entry_dn,
        urls,
    }
}

/// The URLs of a SearchResultReference for a referral object met inside a search of `scope`: a one-level
/// search continues with scope base, deeper ones with subtree (RFC 4511 §4.5.3).
pub fn continuation(stored: &StoredEntry<'_>, scope: SearchScope) -> Vec<String> {
    let suffix = match scope {
        SearchScope::SingleLevel | SearchScope::BaseObject => "??base",
        SearchScope::WholeSubtree | SearchScope::SubordinateSubtree => "??sub",
    };
    let entry_dn = stored_dn(stored);
    values(stored, "ref")
        .into_iter()
        .map(|url| adjust(&url_of(url), &entry_dn, &[], Some(suffix), false))
        .collect()
}

/// A search's scope as the end of an LDAP URL (RFC 4516).
fn scope_part(scope: SearchScope) -> &'static str {
    match scope {
        SearchScope::BaseObject => "??base",
        SearchScope::SingleLevel => "??one",
        SearchScope::WholeSubtree => "??sub",
        SearchScope::SubordinateSubtree => "??subordinate",
    }
}

/// slapd's default referral (`referral` in slapd.conf) for a name outside every naming context: the
/// URL with the target DN put in when it names none, and the search's scope.
pub fn default_referral(url: &str, dn: &str, scope: Option<SearchScope>) -> Referral {
    let suffix = scope.map(scope_part);
    Referral {
        matched: String::new(),
        urls: vec![adjust(url, dn, &[], suffix, false)],
    }
}

/// The URL of a `ref` value: what comes before the first space, as slapd trims a labeled value
/// (`ldap://b.example.net/ Server B`, RFC 2079's labeledURI form).
fn url_of(value: &[u8]) -> String {
    let url = value.split(|&b| b == b' ').next().unwrap_or(value);
    String::from_utf8_lossy(url).into_owned()
}

/// Rewrites an LDAP URL for a target: the URL's DN (`entry_dn`, the referral object's own DN, when the
/// URL has none or `replace` is set) with the target's RDNs below the referral object put in front,
/// percent-encoded, then the scope part. Anything that is not an ldap URL is passed on unchanged.
fn adjust(
    url: &str,
    entry_dn: &str,
    prefix: &[canopy_proto::Rdn],
    suffix: Option<&str>,
    replace: bool,
) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let after = scheme_end + 3;
    let rest = url.get(after..).unwrap_or("");
    let (hostport, path) = match rest.find('/') {
        Some(slash) => (
            rest.get(..slash).unwrap_or(""),
            rest.get(slash + 1..).unwrap_or(""),
        ),
        None => (rest, ""),
    };
    let url_dn = path.split('?').next().unwrap_or("");
    let url_dn = percent_decode_lossy(url_dn);
    let mut dn = if url_dn.is_empty() || replace {
        entry_dn.to_string()
    } else {
        url_dn
    };
    if !prefix.is_empty() {
        let front = Dn {
            rdns: prefix.to_vec(),
        }
        .to_string();
        dn = if dn.is_empty() {
            front
        } else {
            format!("{front},{dn}")
        };
    }
    let scheme = url.get(..after).unwrap_or("");
    format!(
        "{scheme}{hostport}/{}{}",
        percent_encode(&dn),
        suffix.unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, entry: &str, prefix: &str, suffix: Option<&str>, expected: &str) {
        let prefix = Dn::parse(prefix.as_bytes()).unwrap().rdns;
        assert_eq!(
            adjust(url, entry, &prefix, suffix, false),
            expected,
            "{url} {entry}"
        );
    }

    #[test]
    fn default_referrals_name_the_target() {
        let r = default_referral(
            "ldap://localhost:9/",
            "dc=example,dc=com",
            Some(SearchScope::WholeSubtree),
        );
        assert_eq!(r.urls, ["ldap://localhost:9/dc=example,dc=com??sub"]);
        let r = default_referral("ldap://h/o=x", "cn=a b,o=y", None);
        assert_eq!(r.urls, ["ldap://h/o=x"]);
    }

    #[test]
    fn labels_are_trimmed() {
        assert_eq!(
            url_of(b"ldap://b.example.net/ Server B"),
            "ldap://b.example.net/"
        );
        assert_eq!(url_of(b"ldap://b.example.net/"), "ldap://b.example.net/");
    }

    #[test]
    fn adjusted_urls() {
        let remote = "ldap://other.example.net/ou=remote,dc=example,dc=net";
        let entry = "ou=two,ou=refs,dc=example,dc=com";
        check(remote, entry, "", None, remote);
        check(
            remote,
            entry,
            "",
            Some("??base"),
            "ldap://other.example.net/ou=remote,dc=example,dc=net??base",
        );
        check(
            remote,
            entry,
            "cn=x,ou=y",
            Some("??sub"),
            "ldap://other.example.net/cn=x,ou=y,ou=remote,dc=example,dc=net??sub",
        );
        check(
            "ldap://b.example.net/",
            entry,
            "cn=z",
            Some("??base"),
            "ldap://b.example.net/cn=z,ou=two,ou=refs,dc=example,dc=com??base",
        );
        check(
            "ldap://b.example.net",
            entry,
            "",
            None,
            "ldap://b.example.net/ou=two,ou=refs,dc=example,dc=com",
        );
        check(
            remote,
            entry,
            "cn=a b\\2C?é#",
            Some("??base"),
            "ldap://other.example.net/cn=a%20b%5C2C%3F%C3%A9%23,ou=remote,dc=example,dc=net??base",
        );
        check(
            "ldap://h/ou=a%20b,dc=x?cn?sub",
            entry,
            "",
            Some("??base"),
            "ldap://h/ou=a%20b,dc=x??base",
        );
        check("not a url", entry, "cn=x", None, "not a url");
        assert_eq!(
            adjust(remote, "cn=x,cn=to-ref,dc=c", &[], Some("??base"), true),
            "ldap://other.example.net/cn=x,cn=to-ref,dc=c??base"
        );
    }
}
