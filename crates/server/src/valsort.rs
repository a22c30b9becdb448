//! slapd's valsort overlay (slapo-valsort(5)) in the frontend, a [`FrontHook`]: the values of chosen
//! multi-valued attributes of the entries below a DN are returned sorted in search results
//! (alphabetically or numerically, ascending or descending, or by `{N}` weights that are stripped on the
//! way out, with an optional order among equal weights), and writes of weighted attributes must give
//! every value its weight. Option: `attr`, slapd's `valsort-attr` lines (`ATTRIBUTE DN SORT [SORT]`).

use canopy_core::{Entry, LdapError};
use canopy_proto::{Change, Dn, ResultCode};
use canopy_schema::{MatchingRule, NormDn, Schema};

use crate::access::Who;
use crate::databases::{ControlSlot, Database, FrontHook};
use crate::slapd_line::words;

const NUMERIC_STRING: &str = "1.3.6.1.4.1.1466.115.121.1.36";
const INTEGER: &str = "1.3.6.1.4.1.1466.115.121.1.27";

/// How values are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Alpha { descend: bool },
    Numeric { descend: bool },
}

/// One `valsort-attr` line.
#[derive(Debug, Clone)]
struct Rule {
    /// The attribute type's OID.
    oid: String,
    equality: Option<MatchingRule>,
    base: NormDn,
    weighted: bool,
    /// The order of the values, or of those of equal weight.
    order: Option<Order>,
}

/// The valsort overlay of one database.
#[derive(Debug, Clone)]
pub struct Valsort {
    rules: Vec<Rule>,
}

fn sort_word(word: &str) -> Option<Result<Order, ()>> {
    Some(Ok(match word.to_ascii_lowercase().as_str() {
        "alpha-ascend" => Order::Alpha { descend: false },
        "alpha-descend" => Order::Alpha { descend: true },
        "numeric-ascend" => Order::Numeric { descend: false },
        "numeric-descend" => Order::Numeric { descend: true },
        "weighted" => return Some(Err(())),
        _ => return None,
    }))
}

/// One line, refused with slapd's reasons; None for a single-valued attribute, which slapd ignores.
fn rule(schema: &Schema, line: &str) -> Result<Option<Rule>, String> {
    let words = words(line)?;
    let (attr, dn, first, second) = match words.as_slice() {
        [a, d, f] => (a, d, f, None),
        [a, d, f, s] => (a, d, f, Some(s)),
        _ => return Err(format!("{line:?}: expected ATTRIBUTE DN SORT [SORT]")),
    };
    let at = schema
        .attribute_type(attr)
        .ok_or_else(|| format!("{line:?}: undefined attribute type {attr:?}"))?;
    if at.single_value {
        tracing::warn!("valsort: {attr} is single-valued, the rule {line:?} is ignored");
        return Ok(None);
    }
    let base = Dn::parse(dn.as_bytes())
        .ok()
        .and_then(|d| schema.normalize_dn(&d).ok())
        .ok_or_else(|| format!("{line:?}: unable to normalize DN {dn:?}"))?;
    let unrecognized = |w: &str| format!("{line:?}: unrecognized sort type {w:?}");
    let (weighted, order) = match sort_word(first) {
        None => return Err(unrecognized(first)),
        Some(Err(())) => match second.map(|s| (s, sort_word(s))) {
            None => (true, None),
            Some((_, Some(Ok(order)))) => (true, Some(order)),
            Some((s, _)) => return Err(unrecognized(s)),
        },
        Some(Ok(order)) => match second {
            None => (false, Some(order)),
            Some(s) => return Err(unrecognized(s)),
        },
    };
    let numeric = at.syntax == NUMERIC_STRING || at.syntax == INTEGER;
    if matches!(order, Some(Order::Numeric { .. })) && !numeric {
        return Err(format!(
            "{line:?}: numeric sort specified for non-numeric syntax"
        ));
    }
    Ok(Some(Rule {
        oid: at.oid.clone(),
        equality: at.equality,
        base,
        weighted,
        order,
    }))
}

/// The number at the start of `text` as C's `strtol(text, &end, 0)` reads it, and the rest.
fn strtol(text: &[u8]) -> (i64, &[u8]) {
    let start = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let mut rest = &text[start..];
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let (radix, digits) = match rest {
        [b'0', b'x' | b'X', more @ ..] if more.first().is_some_and(u8::is_ascii_hexdigit) => {
            (16, more)
        }
        [b'0', more @ ..] if !more.is_empty() => (8, rest),
        _ => (10, rest),
    };
    let len = digits
        .iter()
        .take_while(|b| (**b as char).is_digit(radix))
        .count();
    if len == 0 {
        return (0, text);
    }
    let value = std::str::from_utf8(&digits[..len])
        .ok()
        .and_then(|d| i64::from_str_radix(d, radix).ok())
        .unwrap_or(i64::MAX);
    (if negative { -value } else { value }, &digits[len..])
}

/// The weight of a value (`...{N}rest`) and where the rest starts, or None without a well-formed one.
fn weight(value: &[u8]) -> Option<(i64, usize)> {
    let open = value.iter().position(|&b| b == b'{')?;
    let after = &value[open + 1..];
    let (weight, rest) = strtol(after);
    if rest.len() == after.len() || rest.first() != Some(&b'}') {
        return None;
    }
    Some((weight, value.len() - rest.len() + 1))
}

impl Valsort {
    /// The overlay of an `[[overlay]]` table named `valsort`, checked against `schema`.
    pub fn from_options(options: &toml::Table, schema: &Schema) -> Result<Valsort, String> {
        let mut rules = Vec::new();
        for (key, value) in options {
            if key != "attr" {
                return Err(format!("unknown option {key:?} (valsort takes attr)"));
            }
            let lines: Vec<&str> = match value {
                toml::Value::String(s) => vec![s.as_str()],
                toml::Value::Array(a) => a
                    .iter()
                    .map(|v| v.as_str().ok_or("attr: expected strings".to_string()))
                    .collect::<Result<_, _>>()?,
                _ => return Err("attr: expected a string or a list".into()),
            };
            for line in lines {
                rules.extend(rule(schema, line)?);
            }
        }
        Ok(Valsort { rules })
    }

    /// The rules that apply to attribute `desc` (options left out) of an entry named `ndn`.
    fn rules_for<'r>(
        &'r self,
        schema: &'r Schema,
        ndn: &'r NormDn,
        desc: &'r str,
    ) -> impl Iterator<Item = &'r Rule> + 'r {
        let oid = schema
            .attribute_type(desc.split(';').next().unwrap_or(desc))
            .map(|at| at.oid.as_str());
        self.rules
            .iter()
            .filter(move |r| Some(r.oid.as_str()) == oid && r.base.is_suffix_of(ndn))
    }

    /// Sorts the values of `entry` (as a search returns it) as the rules say; whether anything changed.
    pub fn sort(&self, schema: &Schema, entry: &mut Entry) -> bool {
        let mut changed = false;
        let ndn = entry.ndn.clone();
        for attr in &mut entry.attrs {
            let rules: Vec<Rule> = self.rules_for(schema, &ndn, &attr.desc).cloned().collect();
            for rule in rules {
                let before = attr.values.clone();
                rule.apply(schema, &mut attr.values);
                changed |= attr.values != before;
            }
        }
        changed
    }

    /// slapd's check of an add or modify: every value written to a weighted attribute below a rule's
    /// DN carries a weight.
    fn check<'v>(
        &self,
        schema: &Schema,
        ndn: &NormDn,
        written: impl Iterator<Item = (&'v str, &'v [Vec<u8>])>,
    ) -> Result<(), LdapError> {
        for (desc, values) in written {
            if !self.rules_for(schema, ndn, desc).any(|r| r.weighted) {
                continue;
            }
            for value in values {
                if !value.contains(&b'{') {
                    return Err(LdapError::new(
                        ResultCode::ConstraintViolation,
                        "weight missing from attribute",
                    ));
                }
                if weight(value).is_none() {
                    return Err(LdapError::new(
                        ResultCode::ConstraintViolation,
                        "weight is misformatted",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A value with what it sorts by: its weight, its key ([`Rule::key`]) and the value (weight removed).
type Keyed = (i64, (i64, Vec<u8>), Vec<u8>);

impl Rule {
    /// The key a value sorts by: its normalized form for alpha, its number for numeric.
    fn key(&self, schema: &Schema, value: &[u8]) -> (i64, Vec<u8>) {
        let normalized = self
            .equality
            .and_then(|rule| schema.normalize_value(rule, value).ok())
            .unwrap_or_else(|| value.to_vec());
        match self.order {
            Some(Order::Numeric { .. }) => (strtol(&normalized).0, Vec::new()),
            _ => (0, normalized),
        }
    }

    /// Sorts `values` (ties keep their order, as slapd's insertion sort); a weighted attribute whose
    /// values do not all carry a weight is left as it is.
    fn apply(&self, schema: &Schema, values: &mut Vec<Vec<u8>>) {
        let descend = matches!(
            self.order,
            Some(Order::Alpha { descend: true } | Order::Numeric { descend: true })
        );
        let mut keyed: Vec<Keyed> = Vec::with_capacity(values.len());
        for value in values.iter() {
            let (weight, stripped) = if self.weighted {
                match weight(value) {
                    Some((w, rest)) => (w, value[rest..].to_vec()),
                    None => return,
                }
            } else {
                (0, value.clone())
            };
            let key = match self.order {
                Some(_) => self.key(schema, &stripped),
                None => (0, Vec::new()),
            };
            keyed.push((weight, key, stripped));
        }
        keyed.sort_by(|a, b| {
            let by_order = if descend {
                b.1.cmp(&a.1)
            } else {
                a.1.cmp(&b.1)
            };
            a.0.cmp(&b.0).then(by_order)
        });
        *values = keyed.into_iter().map(|(_, _, v)| v).collect();
    }
}

/// The overlay in the frontend.
pub struct ValsortHook(pub Valsort);

impl FrontHook for ValsortHook {
    fn presents(&self) -> bool {
        true
    }

    fn present(&self, dir: &Database, entry: &mut Entry) -> bool {
        self.0.sort(dir.backend().schema(), entry)
    }

    fn check_add(
        &self,
        dir: &Database,
        _who: &Who,
        entry: &Entry,
        _slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        let written = entry
            .attrs
            .iter()
            .map(|a| (a.desc.as_str(), a.values.as_slice()));
        self.0.check(dir.backend().schema(), &entry.ndn, written)
    }

    fn check_modify(
        &self,
        dir: &Database,
        _who: &Who,
        ndn: &NormDn,
        changes: &[Change],
        _slot: Option<&ControlSlot>,
    ) -> Result<(), LdapError> {
        let written = changes.iter().map(|c| {
            (
                c.modification.name.as_str(),
                c.modification.values.as_slice(),
            )
        });
        self.0.check(dir.backend().schema(), ndn, written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_core::Attribute;

    fn valsort(lines: &[&str]) -> Result<Valsort, String> {
        let mut table = toml::Table::new();
        table.insert(
            "attr".into(),
            toml::Value::Array(lines.iter().map(|l| toml::Value::from(*l)).collect()),
        );
        Valsort::from_options(&table, &Schema::builtin())
    }

    fn sorted(v: &Valsort, attr: &str, dn: &str, values: &[&str]) -> Vec<String> {
        let schema = Schema::builtin();
        let dn = Dn::parse(dn.as_bytes()).unwrap();
        let ndn = schema.normalize_dn(&dn).unwrap();
        let mut entry = Entry {
            dn,
            ndn,
            attrs: vec![Attribute {
                desc: attr.into(),
                values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            }],
        };
        v.sort(&schema, &mut entry);
        entry.attrs[0]
            .values
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect()
    }

    #[test]
    fn sorts_as_slapd_sorts() {
        let v = valsort(&[
            "sn ou=users,o=valsort alpha-ascend",
            "departmentNumber \"ou=users,o=valsort\" alpha-descend",
            "ou ou=users,o=valsort weighted",
            "employeeType ou=users,o=valsort weighted alpha-ascend",
        ])
        .unwrap();
        let user = "uid=a,ou=users,o=valsort";
        // Case-insensitive, as the normalized values compare.
        assert_eq!(
            sorted(&v, "sn", user, &["zib", "Jungle", "abc"]),
            ["abc", "Jungle", "zib"]
        );
        assert_eq!(
            sorted(&v, "departmentNumber", user, &["1", "3", "2"]),
            ["3", "2", "1"]
        );
        // Weights go, the values order by them; equal weights keep their order...
        assert_eq!(
            sorted(&v, "ou", user, &["{3}c", "{1}b", "{1}a", "{2}x"]),
            ["b", "a", "x", "c"]
        );
        // ... unless a second order is given.
        assert_eq!(
            sorted(&v, "employeeType", user, &["{2}b", "{1}z", "{1}y", "{2}a"]),
            ["y", "z", "a", "b"]
        );
        // A value without a weight leaves the attribute as stored; outside the DN nothing changes.
        assert_eq!(sorted(&v, "ou", user, &["{2}b", "a"]), ["{2}b", "a"]);
        assert_eq!(
            sorted(&v, "sn", "uid=a,o=elsewhere", &["b", "a"]),
            ["b", "a"]
        );
    }

    #[test]
    fn numeric_orders_and_bad_lines() {
        let v = valsort(&["uidNumber o=x numeric-descend"]);
        // uidNumber is single-valued: slapd ignores the rule.
        assert!(v.unwrap().rules.is_empty());
        let v = valsort(&["mailPreferenceOption o=x numeric-ascend"]).unwrap();
        assert_eq!(
            sorted(&v, "mailPreferenceOption", "cn=a,o=x", &["10", "9", "2"]),
            ["2", "9", "10"]
        );
        let v = valsort(&["mailPreferenceOption o=x numeric-descend"]).unwrap();
        assert_eq!(
            sorted(&v, "mailPreferenceOption", "cn=a,o=x", &["10", "9", "20"]),
            ["20", "10", "9"]
        );
        for (line, reason) in [
            (
                "sn o=x numeric-ascend",
                "numeric sort specified for non-numeric",
            ),
            ("sn o=x sideways", "unrecognized sort type"),
            ("sn o=x weighted weighted", "unrecognized sort type"),
            (
                "sn o=x alpha-ascend alpha-descend",
                "unrecognized sort type",
            ),
            ("nosuch o=x alpha-ascend", "undefined attribute type"),
            ("sn", "expected ATTRIBUTE DN SORT"),
            ("sn not-a-dn alpha-ascend", "unable to normalize DN"),
        ] {
            let error = valsort(&[line]).err().unwrap_or_default();
            assert!(error.contains(reason), "{line}: {error}");
        }
        assert_eq!(strtol(b"0x1f}"), (31, &b"}"[..]));
        assert_eq!(strtol(b"-12abc"), (-12, &b"abc"[..]));
        assert_eq!(strtol(b"017"), (15, &b""[..]));
        assert_eq!(weight(b"{10}ten"), Some((10, 4)));
        assert_eq!(weight(b"{x}ten"), None);
        assert_eq!(weight(b"ten"), None);
    }

    #[test]
    fn weighted_writes_carry_weights() {
        let v = valsort(&["ou ou=users,o=valsort weighted"]).unwrap();
        let schema = Schema::builtin();
        let dn = Dn::parse(b"uid=a,ou=users,o=valsort").unwrap();
        let ndn = schema.normalize_dn(&dn).unwrap();
        let check = |values: &[&str]| {
            let values: Vec<Vec<u8>> = values.iter().map(|v| v.as_bytes().to_vec()).collect();
            v.check(&schema, &ndn, std::iter::once(("ou", values.as_slice())))
                .err()
                .map(|e| e.message)
        };
        assert_eq!(check(&["{1}a", "{2}b"]), None);
        assert_eq!(
            check(&["{1}a", "b"]).as_deref(),
            Some("weight missing from attribute")
        );
        assert_eq!(
            check(&["{one}a"]).as_deref(),
            Some("weight is misformatted")
        );
    }
}
