//! The lock-out check of cn=config (docs/design/config-tree.md): a change is refused when afterwards no
//! identity that can authenticate could modify cn=config. The access engine itself decides, with the
//! rules of `olcDatabase={0}config` as they would run (order, `continue`/`break`, `-privs`, filters,
//! `peername`, `ssf`, groups), for each identity that could bind.

use canopy_core::Entry;
use canopy_proto::Dn;
use canopy_schema::{NormDn, Schema};

use crate::access::Who;
use crate::acl::{privileges, Acl, AttrRef, DnPattern, GroupReader, Groups, Target, WhoSpec};
use crate::databases::Database;
use crate::session::{Link, Peer, TlsFacts};

/// An identity the check tries, and why it can authenticate.
struct Candidate {
    ndn: NormDn,
    why: String,
}

/// The first identity (described) that may write `olcAccess` or `olcRootPW` of the config database
/// entry `target` under `acl`, trying: root over ldapi; the root DN of each data database that has a
/// password; each DN a `by dn.exact=`/`dn.base=` clause names that can bind (an entry with a password,
/// or a peer-credential identity over ldapi); the members of each group a `by group=` clause names
/// that can bind; and, for the clauses that name no one in particular (`users`, `*`, `dn.subtree=`,
/// `dn.one=`, `dn.children=`), an entry below them, without asking whether it exists. Each over ldapi
/// as root (ssf 71) and, but for a peer-credential identity, over TLS (ssf 256). None: nobody.
///
/// `named_may_bind` says why any DN a clause names may bind although no entry holds a password for
/// it (`[[sasl.authz_regexp]]` rules map SASL names to DNs, or client certificates are verified and
/// their subjects bind through SASL EXTERNAL); None: only the identities above can.
pub fn first_administrator(
    schema: &Schema,
    acl: &Acl,
    target: Target<'_>,
    data: &[Database],
    named_may_bind: Option<&'static str>,
) -> Option<String> {
    let groups = RegistryGroups { data };
    let links = [
        Link {
            peer: Some(Peer::Unix { uid: 0, gid: 0 }),
            tls: None,
            sasl_ssf: 0,
        },
        Link {
            peer: Some(Peer::Tcp(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))),
            tls: Some(TlsFacts::default()),
            sasl_ssf: 0,
        },
    ];
    for candidate in candidates(schema, acl, data, named_may_bind) {
        // A peer-credential identity exists only over ldapi.
        let over = match is_peercred(&candidate.ndn) {
            true => &links[..1],
            false => &links[..],
        };
        for link in over {
            let who = Who {
                dn: candidate.ndn.as_str().to_string(),
                ndn: Some(candidate.ndn.clone()),
                root: false,
                link: link.clone(),
                real: None,
            };
            let checker = acl.checker(schema, &who, &groups);
            let may = |attr| checker.allows(target, AttrRef::Attr(attr), privileges::WRITE);
            if may("olcAccess") || may("olcRootPW") {
                return Some(candidate.why);
            }
        }
    }
    None
}

fn normalize(schema: &Schema, text: &str) -> Option<NormDn> {
    Dn::parse(text.as_bytes())
        .ok()
        .and_then(|dn| schema.normalize_dn(&dn).ok())
}

fn candidates(
    schema: &Schema,
    acl: &Acl,
    data: &[Database],
    named_may_bind: Option<&'static str>,
) -> Vec<Candidate> {
    let mut list = Vec::new();
    if let Some(ndn) = normalize(schema, crate::config_tree::LDAPI_ROOT) {
        list.push(Candidate {
            ndn,
            why: "root over ldapi".to_string(),
        });
    }
    for db in data {
        if let Some(ndn) = db.root_ndn() {
            if db.root_password(ndn).is_some() {
                list.push(Candidate {
                    ndn: ndn.clone(),
                    why: format!("the root DN {}", ndn.as_str()),
                });
            }
        }
    }
    let someone_below = |base: &NormDn| {
        normalize(schema, &format!("cn=someone,{}", base.as_str())).map(|ndn| Candidate {
            ndn,
            why: format!("an entry below {}", base.as_str()),
        })
    };
    for rule in acl.rules() {
        for by in &rule.bys {
            for spec in &by.who {
                // The `real...` forms test the same identity (see `WhoSpec::Real`).
                match spec.unreal() {
                    WhoSpec::Dn(DnPattern::Base(ndn)) => {
                        if let Some(why) = can_bind(ndn, data).or(named_may_bind) {
                            list.push(Candidate {
                                ndn: ndn.clone(),
                                why: format!("{} ({why})", ndn.as_str()),
                            });
                        }
                    }
                    WhoSpec::Dn(
                        DnPattern::One(base)
                        | DnPattern::Subtree(base)
                        | DnPattern::Children(base)
                        | DnPattern::Level(base, 1),
                    ) => list.extend(someone_below(base)),
                    WhoSpec::Users | WhoSpec::Anyone => {
                        list.extend(data.first().and_then(|db| someone_below(db.suffix())))
                    }
                    WhoSpec::Group { dn, attr, .. } => {
                        for member in members(schema, dn, attr, data) {
                            if let Some(why) = can_bind(&member, data).or(named_may_bind) {
                                list.push(Candidate {
                                    why: format!(
                                        "{} (a member of {}, {why})",
                                        member.as_str(),
                                        dn.as_str()
                                    ),
                                    ndn: member,
                                });
                            }
                        }
                    }
                    // Not looked for: no candidate from these (a lockout is then assumed sooner).
                    WhoSpec::Dn(DnPattern::Any | DnPattern::Regex(_) | DnPattern::Level(..))
                    | WhoSpec::DnAttr(_)
                    | WhoSpec::DnExpand(_)
                    | WhoSpec::Real(_)
                    | WhoSpec::Anonymous
                    | WhoSpec::SelfEntry
                    | WhoSpec::PeerIp { .. }
                    | WhoSpec::PeerPath(_)
                    | WhoSpec::Set(_)
                    | WhoSpec::Ssf(..) => {}
                }
            }
        }
    }
    list
}

/// Why `ndn` can authenticate: a peer-credential identity over ldapi, a root DN with a password, or an
/// entry with a password in a data database; None when it cannot.
fn can_bind(ndn: &NormDn, data: &[Database]) -> Option<&'static str> {
    if is_peercred(ndn) {
        return Some("a local user over ldapi");
    }
    if data.iter().any(|db| db.root_password(ndn).is_some()) {
        return Some("a root DN");
    }
    let entry = entry(ndn, data)?;
    let has_password = entry.attrs.iter().any(|a| {
        let name = a.desc.split(';').next().unwrap_or(&a.desc);
        (name.eq_ignore_ascii_case("userPassword") || name.eq_ignore_ascii_case("authPassword"))
            && !a.values.is_empty()
    });
    has_password.then_some("an entry with a password")
}

/// An identity SASL EXTERNAL gives over ldapi (`gidNumber=G+uidNumber=U,cn=peercred,cn=external,cn=auth`).
fn is_peercred(ndn: &NormDn) -> bool {
    ndn.as_str().ends_with(",cn=peercred,cn=external,cn=auth")
}

/// The entry `ndn` in the data database that holds it.
fn entry(ndn: &NormDn, data: &[Database]) -> Option<Entry> {
    let db = data
        .iter()
        .filter(|db| db.holds(ndn))
        .max_by_key(|db| db.suffix().rdns().len())?;
    let txn = db.backend().read().ok()?;
    db.backend().entry_at(&txn, ndn)
}

/// The DN values of `attr` in the group entry `group`.
fn members(schema: &Schema, group: &NormDn, attr: &str, data: &[Database]) -> Vec<NormDn> {
    let Some(entry) = entry(group, data) else {
        return Vec::new();
    };
    entry
        .attrs
        .iter()
        .filter(|a| {
            a.desc
                .split(';')
                .next()
                .is_some_and(|n| n.eq_ignore_ascii_case(attr))
        })
        .flat_map(|a| &a.values)
        .filter_map(|v| {
            Dn::parse(v)
                .ok()
                .and_then(|dn| schema.normalize_dn(&dn).ok())
        })
        .collect()
}

/// Group membership for `group=` clauses, read from whichever data database holds the group.
struct RegistryGroups<'a> {
    data: &'a [Database],
}

impl Groups for RegistryGroups<'_> {
    fn is_member(&self, group: &NormDn, class: &str, attr: &str, member: &NormDn) -> bool {
        let Some(db) = self
            .data
            .iter()
            .filter(|db| db.holds(group))
            .max_by_key(|db| db.suffix().rdns().len())
        else {
            return false;
        };
        let Ok(txn) = db.backend().read() else {
            return false;
        };
        GroupReader {
            dir: db.backend(),
            txn: &txn,
        }
        .is_member(group, class, attr, member)
    }

    fn entry(&self, ndn: &NormDn) -> Option<canopy_core::Entry> {
        let db = self
            .data
            .iter()
            .filter(|db| db.holds(ndn))
            .max_by_key(|db| db.suffix().rdns().len())?;
        let txn = db.backend().read().ok()?;
        db.backend().entry_at(&txn, ndn)
    }
}
