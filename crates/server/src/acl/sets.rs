//! slapd's set language for `set=` and `set.expand=` `<who>` clauses: an expression parsed once at
//! configuration load, evaluated per check over the directory read API with bounds on its work.
//!
//! An expression builds sets of strings: `this` (the entry's normalized DN), `user` (the requester's),
//! `[text]` (a literal), `X/attr` (the normalized values of `attr` in the entries whose DNs are in `X`;
//! `attr*` follows them transitively), `X/-N` (the N-th parents), `X/-*` (every ancestor), and the
//! joins `|` (union), `&` (intersection) and `+` (every concatenation), read strictly left to right
//! as slapd does (no precedence; parentheses group). The clause holds when the result is not empty.

use std::collections::HashSet;

use canopy_core::Entry;
use canopy_proto::Dn;
use canopy_schema::{NormDn, Schema};

/// Parentheses nested deeper than this are refused (slapd's evaluator stack holds 64 items).
const MAX_DEPTH: usize = 32;
/// No set an evaluation builds may hold more elements than this.
pub const MAX_SET_SIZE: usize = 4096;
/// No evaluation reads more entries than this.
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
#[derive(Debug, PartialEq, Eq)]
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

/// An attribute a path step reads: the type's canonical name and the description's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrPath {
    pub name: String,
    /// Lower-case, sorted.
    pub options: Vec<String>,
}

impl AttrPath {
    fn is_entry_dn(&self) -> bool {
        self.options.is_empty() && self.name.eq_ignore_ascii_case("entryDN")
    }
}

/// A `set[.style]=` clause.
#[derive(Debug)]
pub struct SetClause {
    /// The pattern as written.
    pub text: String,
    /// `set.expand` (or slapd's deprecated `set.regex`): `$N` references filled in per entry from
    /// the rule's `<what>` DN match before parsing.
    pub expand: bool,
    /// The parsed expression (for `expand`, the pattern with every reference left empty, as checked).
    expr: SetExpr,
    /// Whether the expression depends on the entry (`this`, or references to fill in).
    pub per_entry: bool,
    /// Whether it reads attributes of the entry (`this/...`): checks then need the entry.
    pub reads_this: bool,
}

/// Why an evaluation gave up: the clause then does not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetFailure {
    /// An expanded pattern is no valid expression.
    Syntax(String),
    TooLarge,
    TooManyReads,
    /// `user` for an anonymous requester: slapd has no DN to put in the set and gives up.
    Anonymous,
}

impl std::fmt::Display for SetFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetFailure::Syntax(why) => write!(f, "the expanded set is no valid expression: {why}"),
            SetFailure::TooLarge => write!(f, "a set grew past {MAX_SET_SIZE} elements"),
            SetFailure::TooManyReads => write!(f, "the set read more than {MAX_READS} entries"),
            SetFailure::Anonymous => write!(f, "user names no one for an anonymous requester"),
        }
    }
}

impl SetClause {
    /// Compiles `set[.style]=<pattern>`; `style` is empty, `exact`, `base`, `expand` or `regex`.
    pub fn new(schema: &Schema, style: &str, text: &str) -> Result<SetClause, String> {
        let expand = match style.to_ascii_lowercase().as_str() {
            "" | "exact" | "base" | "baseobject" => false,
            "expand" | "regex" => true,
            _ => return Err("inappropriate set style (exact or expand)".into()),
        };
        if text.is_empty() {
            return Err("no set is defined".into());
        }
        let checked = if expand {
            super::expand::substitute(text, &[]).ok_or("bad $ reference")?
        } else {
            text.to_string()
        };
        let expr = parse(schema, &checked).map_err(|why| format!("bad set ({why})"))?;
        Ok(SetClause {
            text: text.to_string(),
            expand,
            per_entry: expand || expr.mentions_this(),
            reads_this: expr.reads_this(),
            expr,
        })
    }

    /// Evaluates the clause: `expanded` is the pattern filled in for the entry (`expand` only).
    pub fn evaluate(
        &self,
        ctx: &SetContext<'_>,
        expanded: Option<&str>,
    ) -> Result<Vec<Vec<u8>>, SetFailure> {
        let mut eval = Evaluation { ctx, reads: 0 };
        match expanded {
            Some(text) if self.expand => {
                let expr = parse(ctx.schema, text).map_err(SetFailure::Syntax)?;
                eval.run(&expr).map(|set| set.list)
            }
            _ => eval.run(&self.expr).map(|set| set.list),
        }
    }
}

/// What an evaluation reads: the requester, the entry, and the directory.
pub struct SetContext<'a> {
    pub schema: &'a Schema,
    /// The requester's normalized DN; None for anonymous (an expression with `user` then gives up, as
    /// slapd's does).
    pub user: Option<&'a NormDn>,
    pub this: &'a NormDn,
    /// The entry's attributes, when the caller has them (an entry being added is read from here).
    pub this_entry: Option<&'a Entry>,
    /// Reads an entry without access control.
    pub reader: &'a dyn super::Groups,
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

    /// The normalized values of `attr` in the entry named `name`; none when `name` is no DN or
    /// names no entry (slapd's `backend_attribute` without access control).
    fn gather(&mut self, name: &[u8], attr: &AttrPath) -> Result<Vec<Vec<u8>>, SetFailure> {
        let schema = self.ctx.schema;
        let Some(ndn) = Dn::parse(name)
            .ok()
            .and_then(|dn| schema.normalize_dn(&dn).ok())
        else {
            return Ok(Vec::new());
        };
        if attr.is_entry_dn() {
            return Ok(vec![ndn.as_str().as_bytes().to_vec()]);
        }
        let read;
        let entry = match self.ctx.this_entry {
            Some(entry) if &ndn == self.ctx.this => entry,
            _ => {
                self.reads += 1;
                if self.reads > MAX_READS {
                    return Err(SetFailure::TooManyReads);
                }
                read = self.ctx.reader.entry(&ndn);
                match &read {
                    Some(entry) => entry,
                    None => return Ok(Vec::new()),
                }
            }
        };
        let mut values = Vec::new();
        for a in &entry.attrs {
            if !describes(schema, &a.desc, attr) {
                continue;
            }
            for value in &a.values {
                let value = super::parse::normalize_value(schema, &attr.name, value)
                    .unwrap_or_else(|_| value.clone());
                values.push(value);
            }
        }
        Ok(values)
    }
}

/// Whether the stored description `desc` is `attr` (the same type and the same options).
fn describes(schema: &Schema, desc: &str, attr: &AttrPath) -> bool {
    let mut parts = desc.split(';');
    let name = parts.next().unwrap_or(desc);
    let same_type = name.eq_ignore_ascii_case(&attr.name)
        || schema
            .attribute_type(name)
            .is_some_and(|at| at.name().eq_ignore_ascii_case(&attr.name));
    if !same_type {
        return false;
    }
    let mut options: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
    options.sort();
    options == attr.options
}

/// The DN one level up of a DN string: what follows its first `,` not escaped by a `\`, leading
/// spaces dropped; the empty DN for a single RDN.
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

impl SetExpr {
    fn mentions_this(&self) -> bool {
        match self {
            SetExpr::This => true,
            SetExpr::User | SetExpr::Literal(_) => false,
            SetExpr::Join(l, _, r) => l.mentions_this() || r.mentions_this(),
            SetExpr::Chase { of, .. } | SetExpr::Ancestors(of) | SetExpr::Parent(of, _) => {
                of.mentions_this()
            }
        }
    }

    fn reads_this(&self) -> bool {
        match self {
            SetExpr::This | SetExpr::User | SetExpr::Literal(_) => false,
            SetExpr::Join(l, _, r) => l.reads_this() || r.reads_this(),
            SetExpr::Chase { of, .. } => of.mentions_this(),
            SetExpr::Ancestors(of) | SetExpr::Parent(of, _) => of.reads_this(),
        }
    }
}

/// Parses a set expression; the error says what was expected and where (a byte offset).
pub fn parse(schema: &Schema, text: &str) -> Result<SetExpr, String> {
    let mut parser = Parser {
        schema,
        text: text.as_bytes(),
        at: 0,
    };
    let expr = parser.expr(0)?;
    parser.blanks();
    match parser.peek() {
        None => Ok(expr),
        Some(b')') => Err(parser.fail("a \")\" without its \"(\"")),
        Some(_) => Err(parser.fail("an operator (|, & or +)")),
    }
}

struct Parser<'s> {
    schema: &'s Schema,
    text: &'s [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.text.get(self.at + ahead).copied()
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn fail(&self, expected: &str) -> String {
        match self.peek() {
            None => format!("expected {expected} at the end"),
            Some(_) => {
                let rest = String::from_utf8_lossy(&self.text[self.at..]);
                format!("expected {expected} at offset {}: {rest:?}", self.at)
            }
        }
    }

    /// term (op term)*, left to right.
    fn expr(&mut self, depth: usize) -> Result<SetExpr, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "parentheses nested more than {MAX_DEPTH} deep at offset {}",
                self.at
            ));
        }
        let mut left = self.term(depth)?;
        loop {
            self.blanks();
            let op = match self.peek() {
                Some(b'|') => SetOp::Union,
                Some(b'&') => SetOp::Intersection,
                Some(b'+') => SetOp::Concat,
                _ => return Ok(left),
            };
            self.at += 1;
            let right = self.term(depth)?;
            left = SetExpr::Join(Box::new(left), op, Box::new(right));
        }
    }

    /// A primary followed by path steps.
    fn term(&mut self, depth: usize) -> Result<SetExpr, String> {
        self.blanks();
        let mut expr = match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let inner = self.expr(depth + 1)?;
                self.blanks();
                if self.peek() != Some(b')') {
                    return Err(self.fail("\")\""));
                }
                self.at += 1;
                inner
            }
            Some(b'[') => {
                let start = self.at + 1;
                let Some(len) = self.text[start..].iter().position(|b| *b == b']') else {
                    return Err(self.fail("a \"]\" closing the literal"));
                };
                self.at = start + len + 1;
                SetExpr::Literal(self.text[start..start + len].to_vec())
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.at;
                let word = self.name();
                match word {
                    "this" => SetExpr::This,
                    "user" => SetExpr::User,
                    _ => {
                        self.at = start;
                        return Err(self.fail("this, user, a [literal] or \"(\" (an attribute needs a \"/\" before it)"));
                    }
                }
            }
            _ => return Err(self.fail("this, user, a [literal] or \"(\"")),
        };
        loop {
            self.blanks();
            match (self.peek(), self.peek_at(1)) {
                (Some(b'/'), _) => self.at += 1,
                (Some(b'-'), Some(b'>')) => self.at += 2,
                _ => return Ok(expr),
            }
            self.blanks();
            expr = self.step(expr)?;
        }
    }

    /// What follows a `/`: `-*`, `-N`, or an attribute description with an optional `*`.
    fn step(&mut self, of: SetExpr) -> Result<SetExpr, String> {
        let of = Box::new(of);
        match (self.peek(), self.peek_at(1)) {
            (Some(b'-'), Some(b'*')) => {
                self.at += 2;
                return Ok(SetExpr::Ancestors(of));
            }
            (Some(b'-'), Some(d)) if d.is_ascii_digit() => {
                self.at += 1;
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.at += 1;
                }
                let digits = std::str::from_utf8(&self.text[start..self.at]).unwrap_or("0");
                let level = digits
                    .parse::<usize>()
                    .unwrap_or(usize::MAX)
                    .min(MAX_PARENT_LEVEL);
                return Ok(match level {
                    0 => *of,
                    n => SetExpr::Parent(of, n),
                });
            }
            _ => {}
        }
        if !self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            return Err(self.fail("an attribute name, -N or -* after \"/\""));
        }
        let start = self.at;
        let desc = self.name().to_string();
        if desc == "this" || desc == "user" {
            self.at = start;
            return Err(self.fail("an attribute name (this and user start an expression)"));
        }
        let mut parts = desc.split(';');
        let name = parts.next().unwrap_or_default();
        let Some(at) = self.schema.attribute_type(name) else {
            self.at = start;
            return Err(format!(
                "unknown attribute type {name:?} at offset {}",
                self.at
            ));
        };
        let mut options: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
        if options.iter().any(String::is_empty) {
            self.at = start;
            return Err(self.fail("an attribute description"));
        }
        options.sort();
        let closure = self.peek() == Some(b'*');
        if closure {
            self.at += 1;
        }
        Ok(SetExpr::Chase {
            of,
            attr: AttrPath {
                name: at.name().to_string(),
                options,
            },
            closure,
        })
    }

    /// A name: a letter, then letters, digits, `;` and `-` (a `-` not followed by one of them, as
    /// in `->`, ends it).
    fn name(&mut self) -> &str {
        let start = self.at;
        self.at += 1;
        while let Some(c) = self.peek() {
            let part = c.is_ascii_alphanumeric() || c == b';' || c == b'-';
            if !part {
                break;
            }
            if c == b'-'
                && !self
                    .peek_at(1)
                    .is_some_and(|n| n.is_ascii_alphanumeric() || n == b';' || n == b'-')
            {
                break;
            }
            self.at += 1;
        }
        std::str::from_utf8(&self.text[start..self.at]).unwrap_or_default()
    }
}

#[cfg(test)]
#[path = "sets_tests.rs"]
mod tests;
