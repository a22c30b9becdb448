//! constraint: slapd's attribute constraint overlay (slapo-constraint) as a write hook: values an add,
//! modify or rename would store must fit the configured constraints, checked before anything is
//! stored; a misfit refuses the write with constraintViolation (docs/overlays.md).
//!
//! Each constraint is one `constraint_attribute` line of slapd without the keyword:
//! `ATTR[,ATTR...] KIND VALUE [restrict=URI]` with the kinds `regex`, `negregex`, `size`, `count`,
//! `uri` and `set`. As in slapd, `regex`, `negregex`, `size` and `uri` test each value the write
//! brings (an add: every value; a modify: the values of its add and replace changes; a rename: the
//! new RDN's values), `set` is evaluated on the entry as it will be stored when the write brings a
//! value of one of its attributes, and `count` bounds the number of values the entry will hold.

mod parse;
mod search;
mod set;

use canopy_core::desc::AttrDesc;
use canopy_core::filter::PreparedFilter;
use canopy_core::{Entry, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Change, Dn, Filter, ModifyOperation, ResultCode, SearchScope};
use canopy_schema::{AttributeType, NormDn, Schema};
use regex::bytes::Regex;

use crate::database::Directory;
use crate::error::store_error;
use crate::event::{Kind, Proposed};
use crate::pipeline::{OnReplica, WriteHook};
use crate::search::computed;
use parse::LdapUrl;

/// One constraint: the attributes it covers, what it asks of them, and which entries it applies to.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The line as configured, for messages.
    text: String,
    /// Attribute descriptions as configured; one without options covers every option of its type.
    attrs: Vec<String>,
    limit: Limit,
    restrict: Option<Restrict>,
}

#[derive(Debug, Clone)]
enum Limit {
    /// Each value must match.
    Regex(Regex),
    /// No value may match.
    NegRegex(Regex),
    /// Each value holds at most this many bytes.
    Size(usize),
    /// The entry holds at most this many values of each attribute.
    Count(usize),
    /// Each value must be a value of one of the URL's attributes in an entry its search finds.
    Uri(LdapUrl),
    /// The set must not be empty.
    Set(set::Expr),
}

/// `restrict=URI`: the entries a constraint applies to.
#[derive(Debug, Clone)]
struct Restrict {
    /// Without a base, any entry of the database; the scope counts only with a base.
    base: Option<String>,
    scope: SearchScope,
    filter: Option<Filter>,
}

impl Rule {
    /// Parses one `constraint_attribute` line without its keyword, with slapd's quoting. The names it
    /// uses are checked against the schema later, by [`Rule::check`].
    pub fn parse(line: &str) -> Result<Rule, String> {
        parse::rule(line)
    }

    /// The line as configured.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Checks the constraint against a database's schema and suffix: every attribute is known and not
    /// operational (slapd never constrains those), the URLs' bases lie in the database.
    pub fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        for attr in &self.attrs {
            let desc = AttrDesc::parse(schema, attr)
                .map_err(|e| format!("attribute {attr:?}: {}", e.message))?;
            if desc
                .attribute_type(schema)
                .is_some_and(AttributeType::is_operational)
            {
                return Err(format!(
                    "attribute {attr:?} is operational, and constraints apply only to user attributes"
                ));
            }
        }
        match &self.limit {
            Limit::Uri(url) => {
                for attr in &url.attrs {
                    AttrDesc::parse(schema, attr)
                        .map_err(|e| format!("uri attribute {attr:?}: {}", e.message))?;
                }
                search_base(schema, suffix, &url.dn).map_err(|e| format!("uri base: {e}"))?;
            }
            Limit::Set(expr) => expr
                .check(schema, suffix)
                .map_err(|e| format!("set: {e}"))?,
            Limit::Regex(_) | Limit::NegRegex(_) | Limit::Size(_) | Limit::Count(_) => {}
        }
        if let Some(base) = self.restrict.as_ref().and_then(|r| r.base.as_ref()) {
            search_base(schema, suffix, base).map_err(|e| format!("restrict base: {e}"))?;
        }
        Ok(())
    }

    /// Whether the stored description `desc` is one of this constraint's attributes.
    fn covers(&self, schema: &Schema, desc: &str) -> bool {
        self.attrs.iter().any(|attr| covers(schema, attr, desc))
    }
}

/// Whether the configured description `attr` covers the stored description `desc`: the same type,
/// and at least the configured options.
fn covers(schema: &Schema, attr: &str, desc: &str) -> bool {
    let (name, options) = desc.split_once(';').unwrap_or((desc, ""));
    let (Ok(wanted), Some(at)) = (AttrDesc::parse(schema, attr), schema.attribute_type(name))
    else {
        return false;
    };
    wanted
        .attribute_type(schema)
        .is_some_and(|w| std::ptr::eq(w, at))
        && wanted.options_match(&options.to_ascii_lowercase())
}

/// The base of a URL: the database's suffix when empty, else a DN that must lie in the database.
fn search_base(schema: &Schema, suffix: &NormDn, dn: &str) -> Result<NormDn, String> {
    if dn.is_empty() {
        return Ok(suffix.clone());
    }
    let parsed = Dn::parse(dn.as_bytes()).map_err(|e| format!("DN {dn:?}: {e}"))?;
    let ndn = schema
        .normalize_dn(&parsed)
        .map_err(|e| format!("DN {dn:?}: {e}"))?;
    if !suffix.is_suffix_of(&ndn) {
        return Err(format!(
            "DN {dn:?} is outside the database ({}), where the lookup cannot reach",
            suffix.as_str()
        ));
    }
    Ok(ndn)
}

/// `(objectClass=*)`: a URL's filter when it has none.
fn every_entry() -> Filter {
    Filter::Present("objectClass".into())
}

/// The constraint hook: its constraints in the order configured.
pub struct Constraint {
    rules: Vec<Rule>,
}

impl Constraint {
    pub fn new(rules: Vec<Rule>) -> Constraint {
        Constraint { rules }
    }
}

impl WriteHook for Constraint {
    fn name(&self) -> &'static str {
        "constraint"
    }

    /// A replicated change arrives with what this overlay made of it on the provider.
    fn on_replica(&self) -> OnReplica {
        OnReplica::Skip
    }

    fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        self.rules.iter().try_for_each(|rule| {
            rule.check(schema, suffix)
                .map_err(|e| format!("constraint {:?}: {e}", rule.text))
        })
    }

    fn prepare(
        &self,
        dir: &Directory,
        txn: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        // slapd answers a refused modify and a refused rename alike.
        let verb = match change.kind {
            Kind::Add => "add",
            Kind::Modify | Kind::Rename => "modify",
            Kind::Delete => return Ok(()),
        };
        let Some(new) = change.new.as_deref() else {
            return Ok(());
        };
        let write = Write {
            dir,
            txn,
            new,
            existing: (change.kind != Kind::Add).then_some(change.id),
            requester: change.requester,
        };
        let violation = |desc: &str| {
            LdapError::new(
                ResultCode::ConstraintViolation,
                format!("{verb} breaks constraint on {desc}"),
            )
        };
        let schema = dir.schema();
        let mut applies: Vec<Option<bool>> = vec![None; self.rules.len()];
        let mut applies_to = |i: usize, rule: &Rule| -> Result<bool, LdapError> {
            if let Some(known) = applies[i] {
                return Ok(known);
            }
            let known = write.restricted_to(rule.restrict.as_ref())?;
            applies[i] = Some(known);
            Ok(known)
        };
        for (i, rule) in self.rules.iter().enumerate() {
            let Limit::Count(max) = rule.limit else {
                continue;
            };
            for attr in &rule.attrs {
                let count: usize = new
                    .attrs
                    .iter()
                    .filter(|a| covers(schema, attr, &a.desc))
                    .map(|a| a.values.len())
                    .sum();
                if count > max && applies_to(i, rule)? {
                    let name = AttrDesc::parse(schema, attr)
                        .map(|d| d.to_desc_string())
                        .unwrap_or_else(|_| attr.clone());
                    return Err(violation(&name));
                }
            }
        }
        let mut sets: Vec<Option<bool>> = vec![None; self.rules.len()];
        for (desc, values) in brought(schema, change.kind, new, change.changes) {
            for (i, rule) in self.rules.iter().enumerate() {
                if matches!(rule.limit, Limit::Count(_))
                    || !rule.covers(schema, &desc)
                    || !applies_to(i, rule)?
                {
                    continue;
                }
                let fits = match &rule.limit {
                    Limit::Count(_) => true,
                    Limit::Size(max) => values.iter().all(|v| v.len() <= *max),
                    Limit::Regex(re) => values.iter().all(|v| re.is_match(v)),
                    Limit::NegRegex(re) => !values.iter().any(|v| re.is_match(v)),
                    Limit::Uri(url) => write.all_listed(url, &values)?,
                    Limit::Set(expr) => match sets[i] {
                        Some(holds) => holds,
                        None => *sets[i].insert(expr.holds(&write.world())?),
                    },
                };
                if !fits {
                    return Err(violation(&desc));
                }
            }
        }
        Ok(())
    }
}

/// The user attributes whose values a write brings, with those values: an add's whole entry, a
/// modify's add and replace values (the result of an increment), a rename's new RDN values.
fn brought<'a>(
    schema: &Schema,
    kind: Kind,
    new: &'a Entry,
    changes: &'a [Change],
) -> Vec<(String, Vec<&'a [u8]>)> {
    let user = |desc: &str| {
        let name = desc.split(';').next().unwrap_or(desc);
        schema
            .attribute_type(name)
            .is_some_and(|at| !at.is_operational())
    };
    let canonical = |name: &str| {
        AttrDesc::parse(schema, name)
            .ok()
            .map(|d| d.to_desc_string())
    };
    let mut out = Vec::new();
    match kind {
        Kind::Add => {
            for attr in new.attrs.iter().filter(|a| user(&a.desc)) {
                out.push((
                    attr.desc.clone(),
                    attr.values.iter().map(Vec::as_slice).collect(),
                ));
            }
        }
        Kind::Modify => {
            for change in changes {
                let Some(desc) = canonical(&change.modification.name).filter(|d| user(d)) else {
                    continue;
                };
                let values: Vec<&[u8]> = match change.operation {
                    ModifyOperation::Add | ModifyOperation::Replace => change
                        .modification
                        .values
                        .iter()
                        .map(Vec::as_slice)
                        .collect(),
                    ModifyOperation::Increment => new
                        .get(&desc)
                        .map(|a| a.values.iter().map(Vec::as_slice).collect())
                        .unwrap_or_default(),
                    ModifyOperation::Delete => continue,
                };
                if !values.is_empty() {
                    out.push((desc, values));
                }
            }
        }
        Kind::Rename => {
            for ava in new
                .dn
                .rdns
                .first()
                .map(|r| r.avas.as_slice())
                .unwrap_or(&[])
            {
                if let Some(desc) = canonical(&ava.attr).filter(|d| user(d)) {
                    out.push((desc, vec![ava.value.as_slice()]));
                }
            }
        }
        Kind::Delete => {}
    }
    out
}

/// One write as the constraints see it.
struct Write<'a, 't> {
    dir: &'a Directory,
    txn: &'a WriteTxn<'t>,
    /// The entry as it will be stored.
    new: &'a Entry,
    /// The entry's ID when it is already stored (not an add).
    existing: Option<u64>,
    requester: &'a str,
}

impl<'a, 't> Write<'a, 't> {
    /// Whether the entry to be stored is one `restrict` names (every entry without a restriction).
    fn restricted_to(&self, restrict: Option<&Restrict>) -> Result<bool, LdapError> {
        let Some(restrict) = restrict else {
            return Ok(true);
        };
        let schema = self.dir.schema();
        if let Some(base) = &restrict.base {
            let base = search_base(schema, self.dir.suffix(), base).map_err(unusable)?;
            if !search::in_scope(&base, restrict.scope, &self.new.ndn) {
                return Ok(false);
            }
        }
        let Some(filter) = &restrict.filter else {
            return Ok(true);
        };
        let children = match self.existing {
            Some(id) => self.txn.has_children(id).map_err(store_error)?,
            None => false,
        };
        let extra = computed(children, self.new.dn.to_string().as_bytes());
        Ok(PreparedFilter::new(schema, filter)
            .evaluate(self.new, &extra)
            .is_true())
    }

    /// Whether every value is a value of one of the URL's attributes in an entry its search finds.
    fn all_listed(&self, url: &LdapUrl, values: &[&[u8]]) -> Result<bool, LdapError> {
        let base = search_base(self.dir.schema(), self.dir.suffix(), &url.dn).map_err(unusable)?;
        for value in values {
            let listed = url
                .attrs
                .iter()
                .map(|attr| Filter::Equality(attr.clone(), value.to_vec()))
                .collect();
            let filter = Filter::And(vec![
                url.filter.clone().unwrap_or_else(every_entry),
                Filter::Or(listed),
            ]);
            if !search::any(self.dir, self.txn, &base, url.scope, &filter)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// What a set is evaluated against: this entry, and the requester as `user`.
    fn world(&self) -> set::World<'a, 't> {
        set::World {
            dir: self.dir,
            txn: self.txn,
            this: self.new,
            user: self.requester,
        }
    }
}

/// A URL base that passed the configuration check but no longer normalizes: not the client's fault.
fn unusable(reason: String) -> LdapError {
    tracing::error!(%reason, "constraint: unusable URL");
    LdapError::new(ResultCode::Other, "constraint: unusable URL")
}
