//! slapd's set language (sets.c), the one implementation behind ACL `set=` clauses and the constraint
//! overlay's `set` constraint: an expression parsed once, evaluated over a caller's [`SetReader`] with
//! bounds on its work.
//!
//! An expression builds sets of strings: `this` (the entry's normalized DN), `user` (the requester's),
//! `[text]` (a literal), `X/attr` (the normalized values of `attr` in the entries whose DNs are in `X`,
//! or that the `ldap:///` URLs in `X` find; `attr*` follows them transitively), `X/-N` (the N-th
//! parents), `X/-*` (every ancestor), and the joins `|` (union), `&` (intersection) and `+` (every
//! concatenation), read strictly left to right as slapd does (no precedence; parentheses group).
//! `->` is another spelling of `/`. A caller's test holds when the result is not empty.

mod parse;

use std::collections::HashSet;

use canopy_proto::Dn;
use canopy_schema::{NormDn, Schema};

use crate::{Entry, LdapError};

pub use parse::parse_syntax;

/// Parentheses nested deeper than this are refused (slapd's evaluator stack holds 64 items).
pub const MAX_DEPTH: usize = 32;
/// No set an evaluation builds may hold more elements than this.
pub const MAX_SET_SIZE: usize = 4096;
/// No evaluation reads more entries than this (entries a URL's search finds count too).
pub const MAX_READS: usize = 1024;
/// `X/-N` climbs at most this many levels (more than any DN has).
const MAX_PARENT_LEVEL: usize = 1024;

/// A join of two sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// `|`
    Union,
    /// `&`
    Intersection,
    /// `+`: every element of the left set followed by every element of the right one.
    Concat,
}

/// One parsed set expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetExpr {
    This,
    User,
    Literal(Vec<u8>),
    Join(Box<SetExpr>, SetOp, Box<SetExpr>),
    /// `X/attr` or, with `closure`, `X/attr*`.
    Chase {
        of: Box<SetExpr>,
        attr: AttrPath,
        closure: bool,
    },
    /// `X/-*`: each DN and all its ancestors, the empty DN included.
    Ancestors(Box<SetExpr>),
    /// `X/-N`: each DN N levels up.
    Parent(Box<SetExpr>, usize),
}

/// An attribute a path step reads: its type as written (a name or an OID) and the description's
/// options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrPath {
    /// The description as written, for messages.
    pub text: String,
    /// The attribute type as written.
    pub name: String,
    /// Lower-case, sorted.
    pub options: Vec<String>,
}

/// Why an evaluation gave up: a caller's test then does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetFailure {
    /// An expanded pattern is no valid expression.
    Syntax(String),
    TooLarge,
    TooManyReads,
    /// `user` for an anonymous requester: slapd has no DN to put in the set and gives up.
    Anonymous,
    /// The reader failed (a storage error): not the expression's fault.
    Read(LdapError),
}

impl std::fmt::Display for SetFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetFailure::Syntax(why) => write!(f, "the expanded set is no valid expression: {why}"),
            SetFailure::TooLarge => write!(f, "a set grew past {MAX_SET_SIZE} elements"),
            SetFailure::TooManyReads => write!(f, "the set read more than {MAX_READS} entries"),
            SetFailure::Anonymous => write!(f, "user names no one for an anonymous requester"),
            SetFailure::Read(e) => write!(f, "reading an entry failed: {e}"),
        }
    }
}

/// How an evaluation reads the directory, without access control (as slapd's set gathering does).
pub trait SetReader {
    /// The entry named `ndn`; None when there is none within the reader's reach.
    fn entry(&self, ndn: &NormDn) -> Result<Option<Entry>, LdapError>;

    /// Calls `found` on each entry the search of the `ldap:///` URL `url` finds, until it returns
    /// false. A URL that does not parse, or whose base the reader cannot reach, finds nothing; so does
    /// every URL for a reader that does not search (the default).
    fn search(&self, url: &str, found: &mut dyn FnMut(&Entry) -> bool) -> Result<(), LdapError> {
        let _ = (url, found);
        Ok(())
    }
}

/// What an evaluation reads: the requester, the entry, and the directory.
pub struct SetContext<'a> {
    pub schema: &'a Schema,
    /// The requester's normalized DN; None for anonymous (an expression with `user` then gives up, as
    /// slapd's does).
    pub user: Option<&'a NormDn>,
    /// `this`: the entry's normalized DN.
    pub this: &'a NormDn,
    /// The entry's attributes, when the caller has them (an entry being added, or as a write will
    /// store it, is read from here rather than from the reader).
    pub this_entry: Option<&'a Entry>,
    pub reader: &'a dyn SetReader,
}

/// Whether `text` is an LDAP URL a set chases with a search (slapd looks for `ldap:///`).
pub fn is_url(text: &[u8]) -> bool {
    text.get(..8)
        .is_some_and(|head| head.eq_ignore_ascii_case(b"ldap:///"))
}

/// Parses a set expression and checks its attribute types against the schema; the error says what
/// was expected and where (a byte offset).
pub fn parse(schema: &Schema, text: &str) -> Result<SetExpr, String> {
    let expr = parse_syntax(text)?;
    expr.check(schema)?;
    Ok(expr)
}

impl SetExpr {
    /// Evaluates the expression: the result set in order of arrival, or why it gave up.
    pub fn evaluate(&self, ctx: &SetContext<'_>) -> Result<Vec<Vec<u8>>, SetFailure> {
        Evaluation { ctx, reads: 0 }.run(self).map(|set| set.list)
    }

    /// Checks that every attribute a step reads is a type of the schema.
    pub fn check(&self, schema: &Schema) -> Result<(), String> {
        for (attr, _) in self.steps() {
            if schema.attribute_type(&attr.name).is_none() {
                return Err(format!("unknown attribute type {:?}", attr.name));
            }
        }
        Ok(())
    }

    /// Every attribute step, with the literal it applies to when it applies to one directly (a DN or
    /// a URL named in the expression: `[ldap:///...]/attr`).
    pub fn steps(&self) -> Vec<(&AttrPath, Option<&[u8]>)> {
        let mut out = Vec::new();
        self.collect_steps(&mut out);
        out
    }

    fn collect_steps<'e>(&'e self, out: &mut Vec<(&'e AttrPath, Option<&'e [u8]>)>) {
        match self {
            SetExpr::This | SetExpr::User | SetExpr::Literal(_) => {}
            SetExpr::Join(l, _, r) => {
                l.collect_steps(out);
                r.collect_steps(out);
            }
            SetExpr::Chase { of, attr, .. } => {
                let literal = match &**of {
                    SetExpr::Literal(text) => Some(text.as_slice()),
                    _ => None,
                };
                out.push((attr, literal));
                of.collect_steps(out);
            }
            SetExpr::Ancestors(of) | SetExpr::Parent(of, _) => of.collect_steps(out),
        }
    }

    /// Whether the expression depends on the entry (`this`).
    pub fn mentions_this(&self) -> bool {
        match self {
            SetExpr::This => true,
            SetExpr::User | SetExpr::Literal(_) => false,
            SetExpr::Join(l, _, r) => l.mentions_this() || r.mentions_this(),
            SetExpr::Chase { of, .. } | SetExpr::Ancestors(of) | SetExpr::Parent(of, _) => {
                of.mentions_this()
            }
        }
    }

    /// Whether it reads attributes of the entry (`this/...`), not only its DN.
    pub fn reads_this(&self) -> bool {
        match self {
            SetExpr::This | SetExpr::User | SetExpr::Literal(_) => false,
            SetExpr::Join(l, _, r) => l.reads_this() || r.reads_this(),
            SetExpr::Chase { of, .. } => of.mentions_this(),
            SetExpr::Ancestors(of) | SetExpr::Parent(of, _) => of.reads_this(),
        }
    }
}

/// A set: its elements in order of arrival, without duplicates.
#[derive(Default)]
struct Set {
    list: Vec<Vec<u8>>,
    seen: HashSet<Vec<u8>>,
}

impl Set {
    fn one(value: Vec<u8>) -> Set {
        let mut set = Set::default();
        set.seen.insert(value.clone());
        set.list.push(value);
        set
    }

    fn push(&mut self, value: Vec<u8>) -> Result<(), SetFailure> {
        if self.seen.contains(&value) {
            return Ok(());
        }
        if self.list.len() >= MAX_SET_SIZE {
            return Err(SetFailure::TooLarge);
        }
        self.seen.insert(value.clone());
        self.list.push(value);
        Ok(())
    }
}

struct Evaluation<'c, 'a> {
    ctx: &'c SetContext<'a>,
    reads: usize,
}

impl Evaluation<'_, '_> {
    fn run(&mut self, expr: &SetExpr) -> Result<Set, SetFailure> {
        match expr {
            SetExpr::This => Ok(Set::one(self.ctx.this.as_str().as_bytes().to_vec())),
            SetExpr::User => match self.ctx.user {
                Some(user) => Ok(Set::one(user.as_str().as_bytes().to_vec())),
                None => Err(SetFailure::Anonymous),
            },
            SetExpr::Literal(text) => Ok(Set::one(text.clone())),
            SetExpr::Join(left, op, right) => {
                let left = self.run(left)?;
                let right = self.run(right)?;
                join(left, *op, right)
            }
            SetExpr::Chase { of, attr, closure } => {
                let from = self.run(of)?;
                let mut out = Set::default();
                for name in &from.list {
                    for value in self.gather(name, attr)? {
                        out.push(value)?;
                    }
                }
                if *closure {
                    // Every element reached is followed in turn; a cycle ends because nothing new
                    // arrives, a long chain at the set's size or the read budget.
                    let mut at = 0;
                    while let Some(name) = out.list.get(at).cloned() {
                        for value in self.gather(&name, attr)? {
                            out.push(value)?;
                        }
                        at += 1;
                    }
                }
                Ok(out)
            }
            SetExpr::Ancestors(of) => {
                let from = self.run(of)?;
                let mut out = Set::default();
                for name in from.list {
                    let mut dn = Some(name);
                    while let Some(at) = dn {
                        dn = (!at.is_empty()).then(|| parent(&at).to_vec());
                        out.push(at)?;
                    }
                }
                Ok(out)
            }
            SetExpr::Parent(of, level) => {
                let from = self.run(of)?;
                let mut out = Set::default();
                for name in from.list {
                    let mut at: &[u8] = &name;
                    for _ in 0..*level {
                        if at.is_empty() {
                            break;
                        }
                        at = parent(at);
                    }
                    out.push(at.to_vec())?;
                }
                Ok(out)
            }
        }
    }

    /// The normalized values of `attr` in the entry named `name`, or in the entries the URL `name`
    /// finds; none when `name` is neither, names no entry, or `attr` is no type of the schema
    /// (slapd's gathering without access control).
    fn gather(&mut self, name: &[u8], attr: &AttrPath) -> Result<Vec<Vec<u8>>, SetFailure> {
        let schema = self.ctx.schema;
        let Some(at) = schema.attribute_type(&attr.name) else {
            return Ok(Vec::new());
        };
        let is_entry_dn = attr.options.is_empty() && at.name().eq_ignore_ascii_case("entryDN");
        if is_url(name) {
            let Ok(url) = std::str::from_utf8(name) else {
                return Ok(Vec::new());
            };
            let reader = self.ctx.reader;
            let reads = &mut self.reads;
            let mut values = Set::default();
            let mut failure = None;
            let result = reader.search(url, &mut |entry| {
                let step = count_read(reads)
                    .and_then(|()| values_in(schema, entry, attr, is_entry_dn))
                    .and_then(|found| found.into_iter().try_for_each(|v| values.push(v)));
                match step {
                    Ok(()) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            });
            if let Some(failure) = failure {
                return Err(failure);
            }
            result.map_err(SetFailure::Read)?;
            return Ok(values.list);
        }
        let Some(ndn) = Dn::parse(name)
            .ok()
            .and_then(|dn| schema.normalize_dn(&dn).ok())
        else {
            return Ok(Vec::new());
        };
        if is_entry_dn {
            return Ok(vec![ndn.as_str().as_bytes().to_vec()]);
        }
        let read;
        let entry = match self.ctx.this_entry {
            Some(entry) if &ndn == self.ctx.this => entry,
            _ => {
                count_read(&mut self.reads)?;
                read = self.ctx.reader.entry(&ndn).map_err(SetFailure::Read)?;
                match &read {
                    Some(entry) => entry,
                    None => return Ok(Vec::new()),
                }
            }
        };
        values_in(schema, entry, attr, is_entry_dn)
    }
}

/// One more entry read, within the budget.
fn count_read(reads: &mut usize) -> Result<(), SetFailure> {
    *reads += 1;
    match *reads > MAX_READS {
        true => Err(SetFailure::TooManyReads),
        false => Ok(()),
    }
}

/// The normalized values of `attr` in `entry` (for entryDN, its normalized DN).
fn values_in(
    schema: &Schema,
    entry: &Entry,
    attr: &AttrPath,
    is_entry_dn: bool,
) -> Result<Vec<Vec<u8>>, SetFailure> {
    if is_entry_dn {
        return Ok(vec![entry.ndn.as_str().as_bytes().to_vec()]);
    }
    let rule = schema.attribute_type(&attr.name).and_then(|at| at.equality);
    let mut values = Vec::new();
    for a in &entry.attrs {
        if !describes(schema, &a.desc, attr) {
            continue;
        }
        for value in &a.values {
            let norm = rule.and_then(|r| schema.normalize_value(r, value).ok());
            values.push(norm.unwrap_or_else(|| value.clone()));
        }
    }
    Ok(values)
}

/// Whether the stored description `desc` is `attr` (the same type and the same options).
fn describes(schema: &Schema, desc: &str, attr: &AttrPath) -> bool {
    let mut parts = desc.split(';');
    let name = parts.next().unwrap_or(desc);
    let same_type = name.eq_ignore_ascii_case(&attr.name)
        || match (
            schema.attribute_type(name),
            schema.attribute_type(&attr.name),
        ) {
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        };
    if !same_type {
        return false;
    }
    let mut options: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
    options.sort();
    options == attr.options
}

/// The DN one level up of a DN string: what follows its first `,` not escaped by a `\`, leading
/// spaces dropped; the empty DN for a single RDN (slapd's dnParent on normalized DNs).
fn parent(dn: &[u8]) -> &[u8] {
    let mut escaped = false;
    for (i, b) in dn.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b',' => {
                let rest = &dn[i + 1..];
                let skip = rest.iter().take_while(|c| **c == b' ').count();
                return &rest[skip..];
            }
            _ => {}
        }
    }
    &[]
}

fn join(left: Set, op: SetOp, right: Set) -> Result<Set, SetFailure> {
    match op {
        SetOp::Union => {
            let mut out = left;
            for value in right.list {
                out.push(value)?;
            }
            Ok(out)
        }
        SetOp::Intersection => {
            let mut out = Set::default();
            for value in left.list {
                if right.seen.contains(&value) {
                    out.push(value)?;
                }
            }
            Ok(out)
        }
        SetOp::Concat => {
            let mut out = Set::default();
            for l in &left.list {
                for r in &right.list {
                    // An empty element adds nothing to the other side.
                    let mut value = l.clone();
                    value.extend_from_slice(r);
                    out.push(value)?;
                }
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests;
