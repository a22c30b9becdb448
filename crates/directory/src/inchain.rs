//! The in-chain matching rule (LDAP_MATCHING_RULE_IN_CHAIN, `1.2.840.113556.1.4.1941`, as Active Directory
//! offers it): `(memberOf:1.2.840.113556.1.4.1941:=cn=staff,...)` matches the entries that reach
//! `cn=staff` by following the attribute's DN values any number of times (nested groups), and
//! `(member:1.2.840.113556.1.4.1941:=uid=ann,...)` the groups that hold ann directly or through other
//! groups.
//!
//! Before a search is planned, each such assertion is rewritten into the OR of plain equality assertions
//! it stands for: `(A=Y)` for the target and for every entry found to reach it that is itself referred
//! to. The chain is walked backwards from the target (who holds it, who holds those, ...), through the
//! attribute's equality index when it has one, else through one scan of the database; cycles end at
//! entries already seen. So the search itself stays an ordinary indexed equality search.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::view::Snapshot;
use canopy_core::filter::PreparedFilter;
use canopy_core::index::plan;
use canopy_core::wire::{StoredEntry, StoredView};
use canopy_core::LdapError;
use canopy_mdb::ReadOps;
use canopy_proto::{Dn, Filter, ResultCode};
use canopy_schema::NormDn;

use crate::candidates::resolve;
use crate::database::Directory;
use crate::error::store_error;

/// The OID of LDAP_MATCHING_RULE_IN_CHAIN.
pub const IN_CHAIN: &str = "1.2.840.113556.1.4.1941";

/// Most entries one in-chain assertion may reach before the search is refused (adminLimitExceeded).
pub const MAX_REACHED: usize = 200_000;

const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";

/// Decides whether a link of the chain counts: entry `holder` (named `ndn`) holds a value of `attr`.
/// The frontend passes its access check here (the requester must be able to search that attribute).
pub type Allow<'a> = dyn FnMut(&NormDn, &StoredEntry<'_>, &str) -> bool + 'a;

impl Directory {
    /// `filter` with every in-chain assertion on a DN-valued attribute rewritten into plain equality
    /// assertions (borrowed unchanged when it has none).
    pub fn expand_in_chain<'f>(
        &self,
        txn: &Snapshot,
        filter: &'f Filter,
        allow: &mut Allow<'_>,
    ) -> Result<Cow<'f, Filter>, LdapError> {
        if !mentions_in_chain(filter) {
            return Ok(Cow::Borrowed(filter));
        }
        Ok(Cow::Owned(self.expand(txn, filter, allow)?))
    }

    fn expand(
        &self,
        txn: &Snapshot,
        filter: &Filter,
        allow: &mut Allow<'_>,
    ) -> Result<Filter, LdapError> {
        Ok(match filter {
            Filter::And(parts) => Filter::And(
                parts
                    .iter()
                    .map(|p| self.expand(txn, p, allow))
                    .collect::<Result<_, _>>()?,
            ),
            Filter::Or(parts) => Filter::Or(
                parts
                    .iter()
                    .map(|p| self.expand(txn, p, allow))
                    .collect::<Result<_, _>>()?,
            ),
            Filter::Not(inner) => Filter::Not(Box::new(self.expand(txn, inner, allow)?)),
            Filter::Extensible(mra) if is_in_chain(mra) => {
                let attr = mra.attr.as_deref().unwrap_or_default();
                let dn_valued = self
                    .schema()
                    .attribute_type(attr)
                    .is_some_and(|at| at.syntax == DN_SYNTAX);
                match Dn::parse(&mra.value) {
                    Ok(mut dn) if dn_valued => {
                        self.pretty(&mut dn);
                        match self.schema().normalize_dn(&dn) {
                            Ok(ndn) => self.chain(txn, attr, dn, ndn, allow)?,
                            Err(_) => Filter::Undefined,
                        }
                    }
                    // Not a DN, or an attribute that holds no DNs: no chain to follow.
                    _ => Filter::Undefined,
                }
            }
            other => other.clone(),
        })
    }

    /// The OR of `(attr=Y)` for the target and every entry that reaches it and is held by another.
    fn chain(
        &self,
        txn: &Snapshot,
        attr: &str,
        target: Dn,
        target_ndn: NormDn,
        allow: &mut Allow<'_>,
    ) -> Result<Filter, LdapError> {
        let holders = Holders::new(self, txn, attr)?;
        let mut seen: HashSet<NormDn> = HashSet::from([target_ndn.clone()]);
        let mut held = vec![target.to_string()];
        let mut frontier = vec![(target_ndn, target)];
        while let Some((ndn, dn)) = frontier.pop() {
            let found = holders.of(self, txn, attr, &ndn, &dn, allow)?;
            if !found.is_empty() && !held.iter().any(|h| *h == dn.to_string()) {
                held.push(dn.to_string());
            }
            for (holder_ndn, holder_dn) in found {
                if seen.insert(holder_ndn.clone()) {
                    if seen.len() > MAX_REACHED {
                        return Err(LdapError::new(
                            ResultCode::AdminLimitExceeded,
                            "in-chain match reaches too many entries",
                        ));
                    }
                    frontier.push((holder_ndn, holder_dn));
                }
            }
        }
        let mut terms: Vec<Filter> = held
            .into_iter()
            .map(|dn| Filter::Equality(attr.to_string(), dn.into_bytes()))
            .collect();
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Filter::Or(terms)
        })
    }
}

/// Who holds a DN in the attribute: through its equality index, or through a map built by one scan.
enum Holders {
    Indexed,
    /// Normalized DN value → the entries holding it (ID, normalized DN).
    Scanned(HashMap<NormDn, Vec<u64>>),
}

impl Holders {
    fn new(dir: &Directory, txn: &Snapshot, attr: &str) -> Result<Holders, LdapError> {
        let probe = Filter::Equality(attr.to_string(), b"cn=probe".to_vec());
        if resolve(txn, &plan(dir.schema(), &dir.indexes(txn), &probe))?.is_some() {
            return Ok(Holders::Indexed);
        }
        let mut map: HashMap<NormDn, Vec<u64>> = HashMap::new();
        for item in txn.txn().entries().map_err(store_error)? {
            let (id, bytes) = item.map_err(store_error)?;
            let stored = Directory::parse_stored(bytes)?;
            for value in values(dir, &stored, attr) {
                if let Some(ndn) = normalized(dir, value) {
                    map.entry(ndn).or_default().push(id);
                }
            }
        }
        Ok(Holders::Scanned(map))
    }

    /// The entries whose `attr` holds `ndn`, and that `allow` lets count.
    fn of(
        &self,
        dir: &Directory,
        txn: &Snapshot,
        attr: &str,
        ndn: &NormDn,
        dn: &Dn,
        allow: &mut Allow<'_>,
    ) -> Result<Vec<(NormDn, Dn)>, LdapError> {
        let equality = Filter::Equality(attr.to_string(), dn.to_string().into_bytes());
        let ids = match self {
            Holders::Indexed => {
                resolve(txn, &plan(dir.schema(), &dir.indexes(txn), &equality))?.unwrap_or_default()
            }
            Holders::Scanned(map) => map.get(ndn).cloned().unwrap_or_default(),
        };
        let test = PreparedFilter::new(dir.schema(), &equality);
        let mut out = Vec::new();
        for id in ids {
            let Some(bytes) = txn.txn().get_entry(id).map_err(store_error)? else {
                continue;
            };
            let stored = Directory::parse_stored(bytes)?;
            // The index gives a superset: the equality test decides.
            if !test.evaluate(&StoredView::new(&stored), &[]).is_true() {
                continue;
            }
            let Ok(holder_ndn) = stored.ndn() else {
                continue;
            };
            if allow(&holder_ndn, &stored, attr) {
                out.push((holder_ndn, Dn::parse(stored.dn).unwrap_or_default()));
            }
        }
        Ok(out)
    }
}

/// The values of `attr` (any options) in a stored entry's user and operational sections.
fn values<'a>(dir: &Directory, stored: &StoredEntry<'a>, attr: &str) -> Vec<&'a [u8]> {
    let schema = dir.schema();
    let wanted = schema.attribute_type(attr);
    [stored.user, stored.operational]
        .into_iter()
        .flat_map(canopy_core::wire::attributes)
        .filter_map(Result::ok)
        .filter(|(desc, _)| {
            let name = desc.split(';').next().unwrap_or(desc);
            match (wanted, schema.attribute_type(name)) {
                (Some(a), Some(b)) => std::ptr::eq(a, b),
                _ => false,
            }
        })
        .flat_map(|(_, values)| values)
        .collect()
}

fn normalized(dir: &Directory, value: &[u8]) -> Option<NormDn> {
    let mut dn = Dn::parse(value).ok()?;
    dir.pretty(&mut dn);
    dir.schema().normalize_dn(&dn).ok()
}

fn is_in_chain(mra: &canopy_proto::MatchingRuleAssertion) -> bool {
    mra.rule.as_deref() == Some(IN_CHAIN) && mra.attr.is_some() && !mra.dn_attributes
}

fn mentions_in_chain(filter: &Filter) -> bool {
    match filter {
        Filter::And(parts) | Filter::Or(parts) => parts.iter().any(mentions_in_chain),
        Filter::Not(inner) => mentions_in_chain(inner),
        Filter::Extensible(mra) => is_in_chain(mra),
        _ => false,
    }
}
