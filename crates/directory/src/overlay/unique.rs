//! unique: refuses a write that would give two entries of a uniqueness domain the same value of a
//! checked attribute, as slapd's unique overlay does, reading the database through the write's own
//! transaction (docs/overlays.md).
//!
//! slapd searches for duplicates before the backend stores the write, with no lock between the two, so
//! two concurrent adds of the same value can both pass. Here the writer runs writes one after another
//! in one transaction chain, and each check sees every write before it, committed or not.
//!
//! A domain (slapd's `unique_uri`) is an LDAP URL: the entries within `scope` of `base` that match
//! `filter`. A write is checked when the entry it writes lies in a domain afterwards: against the other
//! entries of that domain, for the values the entry did not already have there (all of them when it
//! enters the domain by an add, a rename or a change that makes it match the filter).

use canopy_core::filter::PreparedFilter;
use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::url::percent_decode;
use canopy_proto::{Change, Dn, Filter, ModifyOperation, ResultCode, SearchScope};
use canopy_schema::{AttributeType, NormDn, Schema, Usage};

use super::{entry, rebase, values_of};
use crate::database::Directory;
use crate::error::store_error;
use crate::event::{Event, Kind, Proposed};
use crate::find::{self, As, Find};
use crate::keys::dn_key;
use crate::pipeline::{OnReplica, WriteHook};

/// How far below its base a domain reaches. slapd refuses base scope: a domain of one entry is always
/// unique.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The base's children.
    One,
    /// The base and everything below it (the default).
    Sub,
}

/// One LDAP URL of a domain: `ldap:///BASE?ATTRS?SCOPE?FILTER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uri {
    /// The base DN; None: the database's suffix.
    pub base: Option<Dn>,
    /// The attribute types checked (in an `ignore` domain: the ones not checked); empty: every user
    /// attribute.
    pub attributes: Vec<String>,
    pub scope: Scope,
    pub filter: Option<Filter>,
}

/// One uniqueness domain: slapd's `unique_uri` value, `[strict ][ignore ]URL[ URL...]`. Its URLs are
/// checked one by one, each within its own base, scope and filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub uris: Vec<Uri>,
    /// `ignore`: the listed attributes are the ones not checked.
    pub ignore: bool,
    /// `strict`: a modify that empties a checked attribute is refused when another entry of the domain
    /// has that attribute at all (slapd's "null values are unique too").
    pub strict: bool,
}

/// The overlay's settings: its domains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub domains: Vec<Domain>,
}

impl Uri {
    /// Parses `ldap:///BASE?ATTRS?SCOPE?FILTER` (RFC 4516 without host or extensions, as slapd takes it).
    pub fn parse(text: &str) -> Result<Uri, String> {
        let rest = text
            .strip_prefix("ldap://")
            .ok_or_else(|| format!("{text:?} is not an ldap:/// URL"))?;
        let (host, rest) = rest.split_once('/').unwrap_or((rest, ""));
        if !host.is_empty() {
            return Err(format!("{text:?}: host {host:?} not allowed in the URL"));
        }
        let mut parts = rest.split('?');
        let base = percent_decode(parts.next().unwrap_or(""))?;
        let attributes = percent_decode(parts.next().unwrap_or(""))?;
        let scope = parts.next().unwrap_or("");
        let filter = percent_decode(parts.next().unwrap_or(""))?;
        if parts.next().is_some() {
            return Err(format!("{text:?}: extensions are not allowed in the URL"));
        }
        let base = match base.as_str() {
            "" => None,
            dn => Some(Dn::parse(dn.as_bytes()).map_err(|e| format!("{text:?}: base: {e}"))?),
        };
        let scope = match scope.to_ascii_lowercase().as_str() {
            "" | "sub" | "subtree" => Scope::Sub,
            "one" | "onelevel" => Scope::One,
            "base" => {
                return Err(format!(
                    "{text:?}: a base scope domain holds one entry and is always unique; use one or sub"
                ))
            }
            other => return Err(format!("{text:?}: scope {other:?} is not one or sub")),
        };
        let filter = match filter.as_str() {
            "" => None,
            f => Some(Filter::parse(f).map_err(|e| format!("{text:?}: filter: {e}"))?),
        };
        let attributes = attributes
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        Ok(Uri {
            base,
            attributes,
            scope,
            filter,
        })
    }

    /// The normalized base: the suffix when none is given; None when it does not normalize.
    fn base(&self, dir: &Directory) -> Option<NormDn> {
        match &self.base {
            None => Some(dir.suffix().clone()),
            Some(dn) => dir.schema().normalize_dn(dn).ok(),
        }
    }
}

impl Domain {
    /// Parses a `uri` value: keywords `strict` and `ignore` (and slapd's `serialize`, which changes
    /// nothing here: the writer runs one write at a time), then URLs separated by spaces.
    pub fn parse(text: &str) -> Result<Domain, String> {
        let mut domain = Domain {
            uris: Vec::new(),
            ignore: false,
            strict: false,
        };
        for word in text.split_whitespace() {
            match word.to_ascii_lowercase().as_str() {
                "strict" if domain.uris.is_empty() => domain.strict = true,
                "ignore" if domain.uris.is_empty() => domain.ignore = true,
                "serialize" if domain.uris.is_empty() => {}
                _ => domain.uris.push(Uri::parse(word)?),
            }
        }
        if domain.uris.is_empty() {
            return Err(format!("{text:?}: no ldap:/// URL"));
        }
        Ok(domain)
    }
}

impl Config {
    /// Checks the domains against the database: known attribute types, bases inside the suffix,
    /// filters naming known types.
    pub fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        if self.domains.is_empty() {
            return Err("no domain: set uri (or attributes)".into());
        }
        for uri in self.domains.iter().flat_map(|d| &d.uris) {
            for name in &uri.attributes {
                if schema.attribute_type(name).is_none() {
                    return Err(format!("attribute {name:?} is not in the schema"));
                }
            }
            if let Some(base) = &uri.base {
                let ndn = schema
                    .normalize_dn(base)
                    .map_err(|e| format!("base {base}: {e}"))?;
                if !suffix.is_suffix_of(&ndn) {
                    return Err(format!(
                        "base {base} is not within the suffix {}",
                        suffix.as_str()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The unique hook.
pub struct Unique {
    config: Config,
}

fn in_scope(base: &NormDn, scope: Scope, ndn: &NormDn) -> bool {
    match scope {
        Scope::Sub => base.is_suffix_of(ndn),
        Scope::One => ndn.parent().is_some_and(|parent| parent == *base),
    }
}

/// Whether `a` and `b` are equal under the equality rule of `at`.
fn same(schema: &Schema, at: &AttributeType, a: &[u8], b: &[u8]) -> bool {
    match at.equality {
        Some(rule) => match (
            schema.normalize_value(rule, a),
            schema.normalize_value(rule, b),
        ) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
        None => a == b,
    }
}

impl Unique {
    pub fn new(config: Config) -> Unique {
        Unique { config }
    }

    /// The attribute type of `desc` when `domain`'s URL `uri` checks it: a user attribute with an
    /// equality rule (slapd's search could not match any other), listed (or, with `ignore`, not).
    fn checked<'s>(
        schema: &'s Schema,
        domain: &Domain,
        uri: &Uri,
        desc: &str,
    ) -> Option<&'s AttributeType> {
        let at = schema.attribute_type(desc.split(';').next().unwrap_or(desc))?;
        if at.usage != Usage::UserApplications || at.equality.is_none() {
            return None;
        }
        if uri.attributes.is_empty() {
            return Some(at);
        }
        let listed = uri.attributes.iter().any(|name| {
            schema
                .attribute_type(name)
                .is_some_and(|l| std::ptr::eq(l, at))
        });
        (listed != domain.ignore).then_some(at)
    }

    /// The assertions of the values `new` brings into the domain of `uri`: those it did not hold there
    /// `before` (all of them when it was not there), and with `strict` the attributes a modify empties.
    fn brought(
        dir: &Directory,
        domain: &Domain,
        uri: &Uri,
        before: Option<&Entry>,
        new: &Entry,
        changes: &[Change],
    ) -> Vec<Filter> {
        let schema = dir.schema();
        let mut asserted = Vec::new();
        for attr in &new.attrs {
            let Some(at) = Self::checked(schema, domain, uri, &attr.desc) else {
                continue;
            };
            // By type, options aside: `mail;lang-en` holds mail values like `mail`.
            let had = before
                .map(|o| values_of(dir, o, at.name()))
                .unwrap_or_default();
            for value in &attr.values {
                if !had.iter().any(|v| same(schema, at, v, value)) {
                    asserted.push(Filter::Equality(at.name().to_string(), value.clone()));
                }
            }
        }
        if domain.strict {
            for change in changes {
                let emptied = matches!(
                    change.operation,
                    ModifyOperation::Replace | ModifyOperation::Add
                ) && change.modification.values.is_empty();
                let name = &change.modification.name;
                if let Some(at) = Self::checked(schema, domain, uri, name).filter(|_| emptied) {
                    asserted.push(Filter::Present(at.name().to_string()));
                }
            }
        }
        asserted
    }

    /// Refuses `new` (entry `id`, formerly `old`) when another entry of a domain holding it has one of
    /// the values it brings into that domain. `changes` are a modify's, for `strict`.
    fn check(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        old: Option<&Entry>,
        new: &Entry,
        changes: &[Change],
    ) -> Result<(), LdapError> {
        let schema = dir.schema();
        for domain in &self.config.domains {
            for uri in &domain.uris {
                let Some(base) = uri.base(dir) else {
                    continue;
                };
                let filter = uri.filter.as_ref().map(|f| PreparedFilter::new(schema, f));
                let holds = |e: &Entry| {
                    in_scope(&base, uri.scope, &e.ndn)
                        && filter.as_ref().is_none_or(|f| f.evaluate(e, &[]).is_true())
                };
                if !holds(new) {
                    continue;
                }
                let before = old.filter(|o| holds(o));
                let asserted = Self::brought(dir, domain, uri, before, new, changes);
                if asserted.is_empty() {
                    continue;
                }
                let any = Filter::Or(asserted);
                let search = match &uri.filter {
                    Some(f) => Filter::And(vec![f.clone(), any]),
                    None => any,
                };
                if self.taken(dir, txn, &new.ndn, &base, uri.scope, &search)? {
                    return Err(LdapError::new(
                        ResultCode::ConstraintViolation,
                        format!("non-unique attributes found with {search}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether an entry other than `except` (the entry written) within `scope` of `base` matches
    /// `search`, each tested as stored: a lookup through the backend's one search loop, inside the
    /// write's transaction.
    fn taken(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        except: &NormDn,
        base: &NormDn,
        scope: Scope,
        search: &Filter,
    ) -> Result<bool, LdapError> {
        let Some(base) = find::base(dir, txn, base)? else {
            return Ok(false);
        };
        let prepared = PreparedFilter::new(dir.schema(), search);
        let find = Find {
            base: &base,
            scope: match scope {
                Scope::One => SearchScope::SingleLevel,
                Scope::Sub => SearchScope::WholeSubtree,
            },
            filter: search,
            prepared: &prepared,
        };
        find.any(dir, txn, As::Server, Some(except))
    }
}

impl WriteHook for Unique {
    fn name(&self) -> &'static str {
        "unique"
    }

    /// A replicated change arrives with what this overlay made of it on the provider.
    fn on_replica(&self) -> OnReplica {
        OnReplica::Skip
    }

    /// An add or a modify is checked before it is stored, against everything the transaction holds.
    fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        if !matches!(change.kind, Kind::Add | Kind::Modify) {
            return Ok(());
        }
        let Some(new) = change.new.as_deref() else {
            return Ok(());
        };
        self.check(dir, txn, change.old, new, change.changes)
    }

    /// A rename is checked once it is stored: it moves a whole subtree, and which domains hold the
    /// entries below it, and which entries they meet there, is only known at their new names. The
    /// refusal still rolls the rename back.
    fn commit(
        &self,
        dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let (Kind::Rename, Some(old), Some(new)) = (event.kind, event.old, event.new) else {
            return Ok(());
        };
        self.check(dir, txn, Some(old), new, &[])?;
        if old.ndn == new.ndn {
            return Ok(());
        }
        for (_, member) in txn.subtree(&dn_key(&new.ndn)).map_err(store_error)? {
            if member == event.id {
                continue;
            }
            let Some(now) = entry(txn, member)? else {
                continue;
            };
            let Some(was_ndn) = rebase(&now.ndn, &new.ndn, &old.ndn) else {
                continue;
            };
            let mut was = now.clone();
            was.ndn = was_ndn;
            self.check(dir, txn, Some(&was), &now, &[])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<Domain, &str>) {
        match (Domain::parse(text), expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{text}: {got}"),
            (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
        }
    }

    fn uri(base: Option<&str>, attributes: &[&str], scope: Scope, filter: Option<&str>) -> Uri {
        Uri {
            base: base.map(|b| Dn::parse(b.as_bytes()).unwrap()),
            attributes: attributes.iter().map(|a| a.to_string()).collect(),
            scope,
            filter: filter.map(|f| Filter::parse(f).unwrap()),
        }
    }

    fn domain(uris: Vec<Uri>, ignore: bool, strict: bool) -> Domain {
        Domain {
            uris,
            ignore,
            strict,
        }
    }

    #[test]
    fn domains_as_slapd_writes_them() {
        let people = "ou=people,dc=example,dc=com";
        check(
            "ldap:///ou=people,dc=example,dc=com?uid,mail?sub?(objectClass=inetOrgPerson)",
            Ok(domain(
                vec![uri(
                    Some(people),
                    &["uid", "mail"],
                    Scope::Sub,
                    Some("(objectClass=inetOrgPerson)"),
                )],
                false,
                false,
            )),
        );
        check(
            "ldap:///?mail",
            Ok(domain(
                vec![uri(None, &["mail"], Scope::Sub, None)],
                false,
                false,
            )),
        );
        check(
            "strict ignore ldap:///ou=people,dc=example,dc=com?cn?one ldap:///??sub",
            Ok(domain(
                vec![
                    uri(Some(people), &["cn"], Scope::One, None),
                    uri(None, &[], Scope::Sub, None),
                ],
                true,
                true,
            )),
        );
        check(
            "serialize ldap:///ou=a%20b,dc=x?uid??(cn=a%20b)",
            Ok(domain(
                vec![uri(
                    Some("ou=a b,dc=x"),
                    &["uid"],
                    Scope::Sub,
                    Some("(cn=a b)"),
                )],
                false,
                false,
            )),
        );
        check("ldap:///?uid?base", Err("always unique"));
        check("ldap:///?uid?children", Err("scope \"children\""));
        check("ldap://host/?uid?sub", Err("host \"host\" not allowed"));
        check("http:///?uid", Err("not an ldap:/// URL"));
        check("strict", Err("no ldap:/// URL"));
        check("ldap:///?uid?sub?(uid=", Err("filter"));
        check("ldap:///not-a-dn?uid", Err("base"));
        check("ldap:///?uid?sub?(uid=a)?x", Err("extensions"));
    }

    #[test]
    fn configured_names_are_checked_against_the_schema() {
        let schema = Schema::builtin();
        let suffix = schema
            .normalize_dn(&Dn::parse(b"dc=example,dc=com").unwrap())
            .unwrap();
        let config = |text: &str| Config {
            domains: vec![Domain::parse(text).unwrap()],
        };
        assert!(config("ldap:///ou=people,dc=example,dc=com?mail?sub")
            .check(&schema, &suffix)
            .is_ok());
        let err = config("ldap:///?nosuchattr")
            .check(&schema, &suffix)
            .unwrap_err();
        assert!(err.contains("nosuchattr"), "{err}");
        let err = config("ldap:///dc=other?mail")
            .check(&schema, &suffix)
            .unwrap_err();
        assert!(err.contains("not within the suffix"), "{err}");
        assert!(Config::default().check(&schema, &suffix).is_err());
    }
}
