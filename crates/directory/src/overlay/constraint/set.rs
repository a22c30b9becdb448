//! slapd's set expressions (the language of ACL `set=` clauses, sets.c), as the `set` constraint uses
//! them: a set of strings is built from `this` (the entry as it will be stored), `user` (the
//! requester), `[literals]` and attribute values, and the constraint holds when it is not empty.
//!
//! Syntax, as slapd reads it: operands joined by `|` (union), `&` (intersection) and `+` (every
//! concatenation of a left and a right element), strictly from left to right with no precedence;
//! parentheses group. An operand is `this`, `user`, `[text]` or `( expr )`, followed by any number of
//! steps: `/attr` (the values of `attr` in the entries the elements name; `/attr*` repeats until
//! nothing new is found), `/-N` (the DN N levels up) or `/-*` (the DN and every ancestor); `->` is
//! another spelling of `/`. Values are compared in their normalized form (the attribute's equality
//! rule), DNs as normalized DNs, as slapd does.

use canopy_core::desc::AttrDesc;
use canopy_core::{Entry, LdapError};
use canopy_mdb::WriteTxn;
use canopy_schema::{NormDn, Schema};

use super::parse::{self, LdapUrl};
use crate::database::Directory;

/// A parsed set expression.
#[derive(Debug, Clone)]
pub(crate) struct Expr(Node);

#[derive(Debug, Clone)]
enum Node {
    This,
    User,
    Literal(Vec<u8>),
    Join(Box<Node>, Op, Box<Node>),
    /// `/attr` or, with `closure`, `/attr*`.
    Chase {
        of: Box<Node>,
        attr: String,
        closure: bool,
    },
    /// `/-N`.
    Parent(Box<Node>, usize),
    /// `/-*`.
    Ancestors(Box<Node>),
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Union,
    Intersection,
    Concat,
}

/// slapd's AD_LEADCHAR and AD_CHAR: what an attribute description may start with and hold.
fn lead_char(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}
fn desc_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-.;".contains(&b)
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("syntax error at offset {}: {what}", self.at))
    }

    /// The next byte that is not a blank, without taking it.
    fn peek(&mut self) -> Option<u8> {
        while let Some(b) = self.text.get(self.at).copied() {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    fn expr(&mut self) -> Result<Node, String> {
        let mut left = self.operand()?;
        loop {
            let op = match self.peek() {
                Some(b'|') => Op::Union,
                Some(b'&') => Op::Intersection,
                Some(b'+') => Op::Concat,
                _ => return Ok(left),
            };
            self.at += 1;
            let right = self.operand()?;
            left = Node::Join(Box::new(left), op, Box::new(right));
        }
    }

    fn operand(&mut self) -> Result<Node, String> {
        let mut node = match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let inner = self.expr()?;
                if self.peek() != Some(b')') {
                    return self.error("expected ')'");
                }
                self.at += 1;
                inner
            }
            Some(b'[') => {
                let start = self.at + 1;
                let Some(len) = self.text[start..].iter().position(|&b| b == b']') else {
                    return self.error("'[' without ']'");
                };
                self.at = start + len + 1;
                Node::Literal(self.text[start..start + len].to_vec())
            }
            Some(b) if lead_char(b) => match self.name().as_str() {
                "this" => Node::This,
                "user" => Node::User,
                _ => return self.error("expected this, user, [literal] or '('"),
            },
            _ => return self.error("expected this, user, [literal] or '('"),
        };
        while let Some(step) = self.step()? {
            node = step(node);
        }
        Ok(node)
    }

    /// A description-like name; a `-` ends it when no name character follows (`this->cn`).
    fn name(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(&b) = self.text.get(self.at) {
            let next_is_name = self.text.get(self.at + 1).is_some_and(|&n| desc_char(n));
            if !desc_char(b) || (b == b'-' && !next_is_name) {
                break;
            }
            self.at += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.at]).into_owned()
    }

    /// One `/...` or `->...` step after an operand, as a function of that operand.
    #[allow(clippy::type_complexity)]
    fn step(&mut self) -> Result<Option<Box<dyn FnOnce(Node) -> Node>>, String> {
        match self.peek() {
            Some(b'/') => self.at += 1,
            Some(b'-') if self.text.get(self.at + 1) == Some(&b'>') => self.at += 2,
            _ => return Ok(None),
        }
        let next = self.peek();
        if next == Some(b'-') {
            self.at += 1;
            if self.text.get(self.at) == Some(&b'*') {
                self.at += 1;
                return Ok(Some(Box::new(|n| Node::Ancestors(Box::new(n)))));
            }
            let digits = self.text[self.at..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 {
                return self.error("expected a number or '*' after '/-'");
            }
            let levels: usize = std::str::from_utf8(&self.text[self.at..self.at + digits])
                .ok()
                .and_then(|d| d.parse().ok())
                .map_or_else(|| self.error("level too large"), Ok)?;
            self.at += digits;
            return Ok(Some(Box::new(move |n| Node::Parent(Box::new(n), levels))));
        }
        if !next.is_some_and(lead_char) {
            return self.error("expected an attribute after '/'");
        }
        let attr = self.name();
        if attr == "this" || attr == "user" {
            return self.error("this and user are not attributes");
        }
        let closure = self.text.get(self.at) == Some(&b'*');
        if closure {
            self.at += 1;
        }
        Ok(Some(Box::new(move |n| Node::Chase {
            of: Box::new(n),
            attr,
            closure,
        })))
    }
}

impl Expr {
    pub(crate) fn parse(text: &str) -> Result<Expr, String> {
        let mut parser = Parser {
            text: text.as_bytes(),
            at: 0,
        };
        let node = parser.expr()?;
        if parser.peek().is_some() {
            return parser.error("unexpected text");
        }
        Ok(Expr(node))
    }

    /// Checks what the schema and the database decide: attribute names, and the URLs the expression
    /// chases (their base must be in this database: Canopy serves one).
    pub(crate) fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        fn walk(node: &Node, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
            match node {
                Node::This | Node::User | Node::Literal(_) => Ok(()),
                Node::Join(a, _, b) => {
                    walk(a, schema, suffix)?;
                    walk(b, schema, suffix)
                }
                Node::Parent(of, _) | Node::Ancestors(of) => walk(of, schema, suffix),
                Node::Chase { of, attr, .. } => {
                    AttrDesc::parse(schema, attr)
                        .map_err(|e| format!("attribute {attr:?}: {}", e.message))?;
                    if let Node::Literal(text) = &**of {
                        let text = String::from_utf8_lossy(text);
                        if is_url(text.as_bytes()) {
                            let url = parse::url(&text).map_err(|e| format!("{text:?}: {e}"))?;
                            super::search_base(schema, suffix, &url.dn)
                                .map_err(|e| format!("{text:?}: {e}"))?;
                        }
                    }
                    walk(of, schema, suffix)
                }
            }
        }
        walk(&self.0, schema, suffix)
    }

    /// Whether the set is not empty, with `this` the entry to be stored.
    pub(crate) fn holds(&self, world: &World<'_, '_>) -> Result<bool, LdapError> {
        Ok(!world.evaluate(&self.0)?.is_empty())
    }
}

fn is_url(text: &[u8]) -> bool {
    text.get(..8)
        .is_some_and(|head| head.eq_ignore_ascii_case(b"ldap:///"))
}

/// What an expression is evaluated against.
pub(crate) struct World<'a, 't> {
    pub dir: &'a Directory,
    pub txn: &'a WriteTxn<'t>,
    /// The entry as it will be stored: `this`, and the entry read for its own DN.
    pub this: &'a Entry,
    /// The requester's normalized DN: `user`.
    pub user: Vec<u8>,
}

/// A set: distinct byte strings, in the order slapd keeps them.
type Set = Vec<Vec<u8>>;

fn union(mut left: Set, right: Set) -> Set {
    for item in right {
        if !left.contains(&item) {
            left.push(item);
        }
    }
    left
}

impl World<'_, '_> {
    fn evaluate(&self, node: &Node) -> Result<Set, LdapError> {
        Ok(match node {
            Node::This => vec![self.this.ndn.as_str().as_bytes().to_vec()],
            Node::User => vec![self.user.clone()],
            Node::Literal(text) => vec![text.clone()],
            Node::Join(a, op, b) => {
                let (a, b) = (self.evaluate(a)?, self.evaluate(b)?);
                match op {
                    Op::Union => union(a, b),
                    Op::Intersection => a.into_iter().filter(|x| b.contains(x)).collect(),
                    Op::Concat => {
                        let mut out = Vec::new();
                        for x in &a {
                            for y in &b {
                                out = union(out, vec![[x.as_slice(), y.as_slice()].concat()]);
                            }
                        }
                        out
                    }
                }
            }
            Node::Chase { of, attr, closure } => {
                let mut out = Vec::new();
                for item in self.evaluate(of)? {
                    out = union(out, self.gather(&item, attr)?);
                }
                let mut i = 0;
                while *closure && i < out.len() {
                    let more = self.gather(&out[i], attr)?;
                    out = union(out, more);
                    i += 1;
                }
                out
            }
            Node::Parent(of, levels) => {
                let mut out = Vec::new();
                for item in self.evaluate(of)? {
                    let mut dn = item.as_slice();
                    for _ in 0..*levels {
                        dn = parent(dn);
                    }
                    out = union(out, vec![dn.to_vec()]);
                }
                out
            }
            Node::Ancestors(of) => {
                let mut out = Vec::new();
                for item in self.evaluate(of)? {
                    let mut dn = item.as_slice();
                    let mut chain = vec![dn.to_vec()];
                    while !dn.is_empty() {
                        dn = parent(dn);
                        chain.push(dn.to_vec());
                    }
                    out = union(out, chain);
                }
                out
            }
        })
    }

    /// The normalized values of `attr` in the entry the DN `item` names (entryDN: the DN itself), or in
    /// the entries the LDAP URL `item` finds.
    fn gather(&self, item: &[u8], attr: &str) -> Result<Set, LdapError> {
        let schema = self.dir.schema();
        let Ok(desc) = AttrDesc::parse(schema, attr) else {
            return Ok(Vec::new());
        };
        let entry_dn = schema.attribute_type("entryDN");
        let is_entry_dn = match (entry_dn, desc.attribute_type(schema)) {
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        };
        let wanted = desc.to_desc_string();
        let values_in = |entry: &Entry| -> Set {
            if is_entry_dn {
                return vec![entry.ndn.as_str().as_bytes().to_vec()];
            }
            let mut out = Vec::new();
            if let Some(found) = entry.get(&wanted) {
                let rule = desc.attribute_type(schema).and_then(|at| at.equality);
                for value in &found.values {
                    let norm = rule.and_then(|r| schema.normalize_value(r, value).ok());
                    out = union(out, vec![norm.unwrap_or_else(|| value.clone())]);
                }
            }
            out
        };
        if is_url(item) {
            return self.search_url(item, values_in);
        }
        let Ok((_, ndn)) = self.dir.normalize(item) else {
            return Ok(Vec::new());
        };
        if is_entry_dn {
            return Ok(vec![ndn.as_str().as_bytes().to_vec()]);
        }
        if ndn == self.this.ndn {
            return Ok(values_in(self.this));
        }
        if !self.dir.holds(&ndn) {
            return Ok(Vec::new());
        }
        Ok(crate::overlay::load(self.txn, &ndn)?
            .map(|(_, entry)| values_in(&entry))
            .unwrap_or_default())
    }

    /// The values `values_in` takes from every entry the URL's search finds (none when it does not parse
    /// or its base is not in this database).
    fn search_url(&self, item: &[u8], values_in: impl Fn(&Entry) -> Set) -> Result<Set, LdapError> {
        let Some(url) = std::str::from_utf8(item)
            .ok()
            .and_then(|text| parse::url(text).ok())
        else {
            return Ok(Vec::new());
        };
        let LdapUrl {
            dn, scope, filter, ..
        } = url;
        let Ok(base) = super::search_base(self.dir.schema(), self.dir.suffix(), &dn) else {
            return Ok(Vec::new());
        };
        let filter = filter.unwrap_or_else(super::every_entry);
        let mut out = Vec::new();
        super::search::each(self.dir, self.txn, &base, scope, &filter, |entry| {
            out = union(std::mem::take(&mut out), values_in(entry));
            true
        })?;
        Ok(out)
    }
}

/// The parent of a normalized DN, as slapd's dnParent: everything after the first separator
/// (escaped commas are part of a value); the root is empty.
fn parent(dn: &[u8]) -> &[u8] {
    let mut i = 0;
    while let Some(&b) = dn.get(i) {
        match b {
            b'\\' => i += 2,
            b',' => return &dn[i + 1..],
            _ => i += 1,
        }
    }
    &[]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(node: &Node) -> String {
        match node {
            Node::This => "this".into(),
            Node::User => "user".into(),
            Node::Literal(t) => format!("[{}]", String::from_utf8_lossy(t)),
            Node::Join(a, op, b) => {
                let op = match op {
                    Op::Union => "|",
                    Op::Intersection => "&",
                    Op::Concat => "+",
                };
                format!("({} {op} {})", shape(a), shape(b))
            }
            Node::Chase { of, attr, closure } => {
                format!("{}/{attr}{}", shape(of), if *closure { "*" } else { "" })
            }
            Node::Parent(of, n) => format!("{}/-{n}", shape(of)),
            Node::Ancestors(of) => format!("{}/-*", shape(of)),
        }
    }

    #[test]
    fn parses_as_slapd_reads_it() {
        let check = |text: &str, want: &str| {
            let expr = Expr::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(shape(&expr.0), want, "{text}");
        };
        check(
            "(this/givenName + [ ] + this/sn) & this/cn",
            "(((this/givenName + [ ]) + this/sn) & this/cn)",
        );
        // Left to right, no precedence.
        check("user | this & [x]", "((user | this) & [x])");
        check("user | (this & [x])", "(user | (this & [x]))");
        check("this->manager/cn", "this/manager/cn");
        check("this/member*", "this/member*");
        check("this/-1 | this/-*", "(this/-1 | this/-*)");
        check(
            "[cn=a,dc=x]/memberOf & user",
            "([cn=a,dc=x]/memberOf & user)",
        );
        check("( this / cn;lang-en )", "this/cn;lang-en");
        check("[]", "[]");
        for bad in [
            "",
            "this &",
            "& this",
            "this this",
            "(this",
            "this)",
            "[open",
            "cn",
            "this/",
            "this/-",
            "this/-x",
            "this/user",
            "this/$",
            "thisx",
        ] {
            assert!(Expr::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn parents_of_normalized_dns() {
        assert_eq!(parent(b"cn=a,dc=x,dc=y"), b"dc=x,dc=y");
        assert_eq!(parent(b"cn=a\\,b,dc=x"), b"dc=x");
        assert_eq!(parent(b"dc=y"), b"");
        assert_eq!(parent(b""), b"");
    }

    #[test]
    fn set_operations_keep_order_and_drop_duplicates() {
        let s = |items: &[&str]| -> Set { items.iter().map(|i| i.as_bytes().to_vec()).collect() };
        assert_eq!(union(s(&["a", "b"]), s(&["b", "c"])), s(&["a", "b", "c"]));
    }
}
