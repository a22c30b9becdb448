//! Random search cases from a seed: filters built from attribute types and values found in the
//! loaded data (so many match), then mutated (case, spaces, substring pieces, numbers ±1, absent
//! values, unknown attributes, attributes of another syntax), nested up to depth 4, with a random
//! base and scope. The same seed and data always give the same cases.

use crate::case::{Case, Identity, Request};
use crate::corpus::SUFFIX;
use crate::data::Pool;
use crate::rng::Rng;
use canopy_proto::{
    Control, DerefAliases, Filter, MatchingRuleAssertion, SearchRequest, SearchScope,
    SubstringFilter,
};

/// Deepest and/or/not nesting generated (the outermost filter is depth 1).
const MAX_DEPTH: usize = 4;

/// Attribute types absent from every schema, or not in the built-in ones.
const UNKNOWN_ATTRS: &[&str] = &["xyzzy", "notAnAttribute", "x-custom", "cn;x-unknown-option"];

/// Alternative spellings of attribute types: OIDs, supertypes, other case, options.
const ALIASES: &[(&str, &[&str])] = &[
    ("cn", &["2.5.4.3", "CN", "commonName", "name", "cn;lang-en"]),
    ("sn", &["2.5.4.4", "SN", "surname", "name"]),
    ("givenname", &["2.5.4.42", "gn", "GIVENNAME", "name"]),
    ("uid", &["0.9.2342.19200300.100.1.1", "userid", "UID"]),
    (
        "mail",
        &["0.9.2342.19200300.100.1.3", "rfc822Mailbox", "MAIL"],
    ),
    ("objectclass", &["2.5.4.0", "OBJECTCLASS", "objectclass"]),
    ("telephonenumber", &["2.5.4.20", "TelephoneNumber"]),
    ("uidnumber", &["1.3.6.1.1.1.1.0", "UIDNUMBER"]),
    ("gidnumber", &["1.3.6.1.1.1.1.1", "gidnumber"]),
    ("ou", &["2.5.4.11", "organizationalUnitName", "name"]),
    ("o", &["2.5.4.10", "organizationName", "name"]),
    ("dc", &["0.9.2342.19200300.100.1.25", "domainComponent"]),
    ("member", &["2.5.4.31", "distinguishedName"]),
    ("description", &["2.5.4.13", "DESCRIPTION"]),
];

/// Matching rules by name and OID, for extensible filters.
const RULES: &[&str] = &[
    "caseIgnoreMatch",
    "2.5.13.2",
    "caseExactMatch",
    "2.5.13.5",
    "caseIgnoreOrderingMatch",
    "caseIgnoreSubstringsMatch",
    "caseIgnoreIA5Match",
    "caseExactIA5Match",
    "1.3.6.1.4.1.1466.109.114.2",
    "numericStringMatch",
    "integerMatch",
    "2.5.13.14",
    "integerOrderingMatch",
    "distinguishedNameMatch",
    "2.5.13.1",
    "octetStringMatch",
    "telephoneNumberMatch",
    "generalizedTimeMatch",
    "generalizedTimeOrderingMatch",
    "objectIdentifierMatch",
    "uniqueMemberMatch",
    "booleanMatch",
    "integerBitAndMatch",
    "1.2.840.113556.1.4.804",
    "noSuchRule",
    "1.2.3.4.5",
];

/// Makes the random cases of one seed.
pub struct Generator<'a> {
    pool: &'a Pool,
    rng: Rng,
    /// The request controls' own stream, so that adding controls leaves every seed's searches as
    /// they were.
    controls_rng: Rng,
    seed: u64,
    count: usize,
    aliases: bool,
}

impl<'a> Generator<'a> {
    /// `aliases`: the alias/referral data is loaded, so random deref modes are worth trying.
    pub fn new(pool: &'a Pool, seed: u64, aliases: bool) -> Generator<'a> {
        Generator {
            pool,
            // Mixed so that seeds 1, 2, 3 start far apart.
            rng: Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x5eed),
            controls_rng: Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xc0_7e01),
            seed,
            count: 0,
            aliases,
        }
    }

    pub fn next_case(&mut self) -> Case {
        self.count += 1;
        let filter = self.filter(1);
        let base = self.base();
        let scope = match self.rng.below(10) {
            0 => SearchScope::BaseObject,
            1 | 2 => SearchScope::SingleLevel,
            3 => SearchScope::SubordinateSubtree,
            _ => SearchScope::WholeSubtree,
        };
        let deref = if self.aliases {
            *self
                .rng
                .pick(&[
                    DerefAliases::Never,
                    DerefAliases::InSearching,
                    DerefAliases::FindingBaseObj,
                    DerefAliases::Always,
                ])
                .unwrap_or(&DerefAliases::Never)
        } else {
            DerefAliases::Never
        };
        let attributes = match self.rng.below(40) {
            0..=3 => vec!["*".to_string()],
            4..=7 => vec![self.attr_name()],
            8 => vec!["+".to_string()],
            9 => vec!["*".to_string(), "+".to_string()],
            _ => vec!["1.1".to_string()],
        };
        let types_only = self.rng.chance(5);
        let size_limit = if self.rng.chance(4) {
            1 + self.rng.below(3) as i32
        } else {
            0
        };
        let identity = match self.rng.below(20) {
            0..=4 => Identity::Root,
            // A user: sees its own userPassword (Debian's "by self write" rule).
            5 | 6 => Identity::Simple {
                dn: format!("uid=alice,ou=people,{SUFFIX}").into_bytes(),
                pw: b"alice-pw".to_vec(),
            },
            _ => Identity::Anonymous,
        };
        let mut controls = self.controls(&identity);
        // Server-side sorting (RFC 2891), in one search in ten, by uid among the entries that have
        // one: uid values differ between entries, so no two entries tie (each server keeps its own
        // order among equal keys, a documented difference), and half of them with a VLV window.
        let mut filter = filter;
        if self.controls_rng.chance(10) {
            filter = Filter::And(vec![filter, Filter::Present("uid".into())]);
            let key = if self.controls_rng.chance(50) {
                "-uid"
            } else {
                "uid"
            };
            if let Ok(sort) = crate::sorting::sort_control(key) {
                controls.push(sort);
            }
            if self.controls_rng.chance(50) {
                let window = format!(
                    "{}/{}/{}/0",
                    self.controls_rng.below(3),
                    self.controls_rng.below(4),
                    1 + self.controls_rng.below(12)
                );
                if let Ok(vlv) = crate::sorting::vlv_control(&window) {
                    controls.push(vlv);
                }
            }
        }
        Case {
            origin: format!("seed {} #{}", self.seed, self.count),
            controls,
            identity,
            request: Request::Search(SearchRequest {
                base,
                scope,
                deref,
                size_limit,
                time_limit: 0,
                types_only,
                filter,
                attributes,
            }),
            deliberate: None,
        }
    }

    /// Request controls for some searches, from their own stream: RFC 3876's Matched Values with one
    /// or two simple items on attribute/value pairs of the data (one search in eight), and RFC 4370's
    /// proxied authorization by the root DN as alice or as anonymous (one root search in five).
    fn controls(&mut self, identity: &Identity) -> Vec<Control> {
        let mut out = Vec::new();
        if self.controls_rng.chance(12) {
            let n = 1 + self.controls_rng.below(2);
            let items: Vec<Filter> = (0..n).map(|_| self.values_item()).collect();
            out.push(Control {
                oid: crate::corpus::VALUES_RETURN.into(),
                critical: true,
                value: Some(canopy_proto::encode_values_return(&items)),
            });
        }
        if matches!(identity, Identity::Root) && self.controls_rng.chance(20) {
            let authzid = match self.controls_rng.below(3) {
                0 => Vec::new(),
                _ => format!("dn:uid=alice,ou=people,{SUFFIX}").into_bytes(),
            };
            out.push(Control {
                oid: crate::corpus::PROXY_AUTHZ.into(),
                critical: true,
                value: Some(authzid),
            });
        }
        out
    }

    /// A simple filter item of a values return filter on a pair of the data: equality, a prefix or
    /// suffix substring, an ordering item, or presence.
    fn values_item(&mut self) -> Filter {
        let rng = &mut self.controls_rng;
        let (attr, value) = rng
            .pick(&self.pool.pairs)
            .cloned()
            .unwrap_or_else(|| ("cn".into(), b"x".to_vec()));
        let text = String::from_utf8_lossy(&value).to_string();
        let head: String = text.chars().take(2).collect();
        match rng.below(6) {
            0 | 1 => Filter::Equality(attr, value),
            2 if !head.is_empty() => Filter::Substrings(SubstringFilter {
                attr,
                initial: Some(head.into_bytes()),
                any: Vec::new(),
                final_: None,
            }),
            3 => Filter::GreaterOrEqual(attr, value),
            4 => Filter::LessOrEqual(attr, value),
            _ => Filter::Present(attr),
        }
    }

    fn base(&mut self) -> Vec<u8> {
        match self.rng.below(100) {
            0..=39 => SUFFIX.as_bytes().to_vec(),
            40..=42 => {
                // A missing entry below an existing one: noSuchObject with a matched DN.
                let dn = self.entry_dn();
                let mut b = b"cn=no such entry,".to_vec();
                b.extend_from_slice(&dn);
                b
            }
            _ => self.entry_dn(),
        }
    }

    fn entry_dn(&mut self) -> Vec<u8> {
        self.rng
            .pick(&self.pool.entries)
            .map(|e| e.dn.clone())
            .unwrap_or_else(|| SUFFIX.as_bytes().to_vec())
    }

    fn attr_name(&mut self) -> String {
        self.rng
            .pick(&self.pool.attr_names)
            .cloned()
            .unwrap_or_else(|| "cn".into())
    }

    fn filter(&mut self, depth: usize) -> Filter {
        if depth < MAX_DEPTH && self.rng.chance(if depth == 1 { 55 } else { 30 }) {
            return match self.rng.below(5) {
                0 => Filter::Not(Box::new(self.filter(depth + 1))),
                k => {
                    let n = 1 + self.rng.below(3) + usize::from(self.rng.chance(70));
                    let list = (0..n).map(|_| self.filter(depth + 1)).collect();
                    if k <= 2 {
                        Filter::And(list)
                    } else {
                        Filter::Or(list)
                    }
                }
            };
        }
        self.atom()
    }

    /// One attribute/value pair from the data, then perhaps another attribute name for it.
    fn assertion(&mut self) -> (String, Vec<u8>) {
        if self.rng.chance(8) {
            return crate::mutate::operational(&mut self.rng, self.pool);
        }
        let (attr, value) = self
            .rng
            .pick(&self.pool.pairs)
            .cloned()
            .unwrap_or_else(|| ("cn".into(), b"x".to_vec()));
        let attr = match self.rng.below(100) {
            0..=5 => self.rng.pick(UNKNOWN_ATTRS).unwrap_or(&"xyzzy").to_string(),
            6..=13 => self.attr_name(),
            14..=25 => match ALIASES.iter().find(|(a, _)| *a == attr) {
                Some((_, alts)) => self.rng.pick(alts).unwrap_or(&"cn").to_string(),
                None => attr,
            },
            _ => attr,
        };
        let value = crate::mutate::mutate(&mut self.rng, value);
        (attr, value)
    }

    fn atom(&mut self) -> Filter {
        let (attr, value) = self.assertion();
        match self.rng.below(100) {
            0..=24 => Filter::Equality(attr, value),
            25..=44 => self.substrings(attr, &value),
            45..=53 => Filter::GreaterOrEqual(attr, value),
            54..=62 => Filter::LessOrEqual(attr, value),
            63..=72 => Filter::Present(attr),
            73..=81 => Filter::Approx(attr, value),
            _ => {
                let rule = if self.rng.chance(70) {
                    self.rng.pick(RULES).map(|r| r.to_string())
                } else {
                    None
                };
                // An extensible filter needs a rule, a type or both.
                let attr = if rule.is_none() || self.rng.chance(75) {
                    Some(attr)
                } else {
                    None
                };
                Filter::Extensible(MatchingRuleAssertion {
                    rule,
                    attr,
                    value,
                    dn_attributes: self.rng.chance(25),
                })
            }
        }
    }

    /// Splits `value` into substring pieces at random character boundaries.
    fn substrings(&mut self, attr: String, value: &[u8]) -> Filter {
        let s = String::from_utf8_lossy(value);
        let mut chars: Vec<char> = s.chars().collect();
        if chars.is_empty() {
            chars.push('a');
        }
        let mut cuts: Vec<usize> = (0..1 + self.rng.below(3))
            .map(|_| self.rng.below(chars.len() + 1))
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let piece = |a: usize, b: usize| -> Vec<u8> {
            chars
                .get(a..b)
                .unwrap_or_default()
                .iter()
                .collect::<String>()
                .into_bytes()
        };
        let mut pieces = Vec::new();
        let mut prev = 0;
        for &c in &cuts {
            pieces.push(piece(prev, c));
            prev = c;
        }
        pieces.push(piece(prev, chars.len()));
        // Drop some pieces so that gaps of arbitrary length fall between the kept ones.
        let mut initial = pieces.first().cloned().filter(|p| !p.is_empty());
        let mut final_ = if pieces.len() > 1 {
            pieces.last().cloned().filter(|p| !p.is_empty())
        } else {
            None
        };
        if self.rng.chance(30) {
            initial = None;
        }
        if self.rng.chance(30) {
            final_ = None;
        }
        let any: Vec<Vec<u8>> = pieces
            .get(1..pieces.len().saturating_sub(1))
            .unwrap_or_default()
            .iter()
            .filter(|p| !p.is_empty() && self.rng.chance(70))
            .cloned()
            .collect();
        if initial.is_none() && final_.is_none() && any.is_empty() {
            // (attr=*) would be a presence filter; keep one piece.
            initial = Some(piece(0, chars.len().min(1)));
        }
        Filter::Substrings(SubstringFilter {
            attr,
            initial,
            any,
            final_,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Pool;

    const LDIF: &str = "dn: dc=example,dc=com\nobjectClass: domain\ndc: example\n\n\
                        dn: cn=A B,dc=example,dc=com\nobjectClass: person\ncn: A B\nsn: B\n\
                        telephoneNumber: +1 555 0100\n";

    fn cases(seed: u64, n: usize) -> Vec<String> {
        let pool = Pool::from_ldif(LDIF.as_bytes()).unwrap();
        let mut g = Generator::new(&pool, seed, false);
        (0..n).map(|_| g.next_case().replay("ldap://x")).collect()
    }

    #[test]
    fn same_seed_same_cases() {
        assert_eq!(cases(7, 200), cases(7, 200));
        assert_ne!(cases(7, 50), cases(8, 50));
    }

    #[test]
    fn covers_every_filter_type() {
        let pool = Pool::from_ldif(LDIF.as_bytes()).unwrap();
        let mut g = Generator::new(&pool, 1, false);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let Request::Search(r) = g.next_case().request else {
                panic!()
            };
            let s = r.filter.to_string();
            for (needle, kind) in [
                ("(&", "and"),
                ("(|", "or"),
                ("(!", "not"),
                (">=", "ge"),
                ("<=", "le"),
                ("~=", "approx"),
                (":=", "ext"),
                ("=*)", "present"),
                (":dn:", "dn"),
            ] {
                if s.contains(needle) {
                    seen.insert(kind);
                }
            }
            // Filters always survive their own string form.
            assert_eq!(Filter::parse(&s).unwrap(), r.filter, "{s}");
        }
        assert_eq!(seen.len(), 9, "{seen:?}");
    }

    /// Some generated searches carry each of the controls the tester generates (Matched Values,
    /// proxied authorization, sort, VLV).
    #[test]
    fn generates_control_cases() {
        let pool = Pool::from_ldif(LDIF.as_bytes()).unwrap();
        let mut g = Generator::new(&pool, 3, false);
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..2000 {
            for c in g.next_case().controls {
                *seen.entry(c.oid).or_insert(0) += 1;
            }
        }
        for oid in [
            crate::corpus::VALUES_RETURN,
            crate::corpus::PROXY_AUTHZ,
            "1.2.840.113556.1.4.473",
            "2.16.840.1.113730.3.4.9",
        ] {
            assert!(seen.get(oid).is_some_and(|n| *n >= 10), "{oid}: {seen:?}");
        }
    }
}
