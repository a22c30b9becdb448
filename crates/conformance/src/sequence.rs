//! Generated write sequences: from a seed, each sequence builds a small sandbox subtree of its own
//! (an organizational unit holding a person, a group, a sub-unit with a posix child and, with the
//! alias data, an alias and a referral), then sends random adds, modifies, renames and deletes,
//! valid and invalid, as different identities and with different controls, each followed by a
//! read-back of the whole sandbox with `*` and `+`. Sequences never touch each other's sandbox, so
//! one difference stays inside its sequence. The same seed always gives the same sequences.

use crate::case::{Case, ChangeRecord, Identity, Request};
use crate::corpus::{ASSERTION, MANAGE_DSA_IT, POST_READ, PRE_READ, SUFFIX};
use crate::rng::Rng;
use canopy_proto::{
    Change, Control, Filter, LdifChange, ModifyOperation, PartialAttribute, SearchScope,
};

/// One sequence: the sandbox set-up, then the generated steps, each write followed by its read-back.
#[derive(Debug, Clone)]
pub struct Sequence {
    /// `writes S #K`.
    pub name: String,
    pub steps: Vec<Case>,
}

/// Produces the sequences of one seed.
#[derive(Debug, Clone)]
pub struct SequenceGen {
    rng: Rng,
    seed: u64,
    aliases: bool,
    made: usize,
}

/// A user of the loaded data who may read everything and write nothing but its own password
/// (Debian's access rules); the password is `<uid>-pw` (tests/conformance/README.md).
const USER_DN: &str = "uid=alice,ou=people,dc=example,dc=com";
const USER_PW: &str = "alice-pw";

impl SequenceGen {
    pub fn new(seed: u64, aliases: bool) -> SequenceGen {
        // Apart from the filter generator's stream for the same seed.
        SequenceGen {
            rng: Rng::new(seed ^ 0x0005_eed0_f5e9_u64),
            seed,
            aliases,
            made: 0,
        }
    }

    pub fn next_sequence(&mut self) -> Sequence {
        self.made += 1;
        let name = format!("writes {} #{}", self.seed, self.made);
        let sandbox = format!("ou=w{}-{},{SUFFIX}", self.seed, self.made);
        let mut s = Builder {
            rng: &mut self.rng,
            sb: sandbox.clone(),
            aliases: self.aliases,
            fresh: 0,
            names: Vec::new(),
        };
        let mut steps = Vec::new();
        for (i, rec) in s.fixture().into_iter().enumerate() {
            steps.push(Case {
                origin: format!("{name} setup {}", i + 1),
                identity: Identity::Root,
                request: Request::Change(rec),
                controls: Vec::new(),
                deliberate: None,
            });
        }
        let count = 3 + s.rng.below(6);
        for i in 1..=count {
            let (identity, rec, controls) = s.step();
            steps.push(Case {
                origin: format!("{name} step {i}"),
                identity,
                request: Request::Change(rec),
                controls,
                deliberate: None,
            });
            steps.push(readback(&format!("{name} step {i} read-back"), &sandbox));
        }
        Sequence { name, steps }
    }
}

/// A subtree search of the sandbox as root with ManageDsaIT: every entry, every attribute.
fn readback(origin: &str, sandbox: &str) -> Case {
    crate::corpus::readback_scoped(
        origin,
        sandbox.as_bytes().to_vec(),
        SearchScope::WholeSubtree,
    )
}

fn manage(critical: bool) -> Control {
    Control {
        oid: MANAGE_DSA_IT.into(),
        critical,
        value: None,
    }
}

type Attrs = Vec<(String, Vec<u8>)>;

fn attrs(pairs: &[(&str, &str)]) -> Attrs {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect()
}

fn change(op: ModifyOperation, name: &str, values: &[&str]) -> Change {
    Change {
        operation: op,
        modification: PartialAttribute {
            name: name.to_string(),
            values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
        },
    }
}

struct Builder<'a> {
    rng: &'a mut Rng,
    /// The sandbox DN.
    sb: String,
    aliases: bool,
    /// Counter for new names.
    fresh: usize,
    /// DNs added by earlier steps of this sequence (whether or not the add succeeded).
    names: Vec<String>,
}

impl Builder<'_> {
    fn person(&self) -> String {
        format!("cn=Alpha Beta,{}", self.sb)
    }
    fn group(&self) -> String {
        format!("cn=grp,{}", self.sb)
    }
    fn sub(&self) -> String {
        format!("ou=sub,{}", self.sb)
    }
    fn kid(&self) -> String {
        format!("uid=kid,ou=sub,{}", self.sb)
    }
    fn alias(&self) -> String {
        format!("cn=al,{}", self.sb)
    }
    fn referral(&self) -> String {
        format!("ou=ref,{}", self.sb)
    }

    fn add(dn: String, a: Attrs) -> ChangeRecord {
        ChangeRecord {
            dn: dn.into_bytes(),
            change: LdifChange::Add(a),
        }
    }

    /// The sandbox's starting entries, added by root.
    fn fixture(&mut self) -> Vec<ChangeRecord> {
        let ou = self.sb[3..self.sb.find(',').unwrap_or(self.sb.len())].to_string();
        let mut out = vec![
            Self::add(
                self.sb.clone(),
                attrs(&[
                    ("objectClass", "organizationalUnit"),
                    ("ou", &ou),
                    ("description", "sandbox"),
                ]),
            ),
            Self::add(
                self.person(),
                attrs(&[
                    ("objectClass", "top"),
                    ("objectClass", "person"),
                    ("objectClass", "organizationalPerson"),
                    ("objectClass", "inetOrgPerson"),
                    ("cn", "Alpha Beta"),
                    ("cn", "alpha"),
                    ("sn", "Beta"),
                    ("description", "one"),
                    ("description", "two"),
                    ("telephoneNumber", "+1 555 0100"),
                    ("mail", "alpha@example.com"),
                    ("displayName", "Alpha"),
                    ("employeeNumber", "7"),
                    ("userPassword", "alpha-pw"),
                ]),
            ),
            Self::add(
                self.group(),
                attrs(&[
                    ("objectClass", "groupOfNames"),
                    ("cn", "grp"),
                    ("member", &self.person()),
                    ("member", USER_DN),
                ]),
            ),
            Self::add(
                self.sub(),
                attrs(&[("objectClass", "organizationalUnit"), ("ou", "sub")]),
            ),
            Self::add(
                self.kid(),
                attrs(&[
                    ("objectClass", "inetOrgPerson"),
                    ("objectClass", "posixAccount"),
                    ("uid", "kid"),
                    ("cn", "Kid"),
                    ("sn", "Kid"),
                    ("uidNumber", "100"),
                    ("gidNumber", "100"),
                    ("homeDirectory", "/home/kid"),
                ]),
            ),
        ];
        if self.aliases {
            out.push(Self::add(
                self.alias(),
                attrs(&[
                    ("objectClass", "alias"),
                    ("objectClass", "extensibleObject"),
                    ("cn", "al"),
                    ("aliasedObjectName", &self.sub()),
                ]),
            ));
            out.push(Self::add(
                self.referral(),
                attrs(&[
                    ("objectClass", "referral"),
                    ("objectClass", "extensibleObject"),
                    ("ou", "ref"),
                    ("ref", "ldap://ref.example.net/ou=ref,dc=example,dc=net"),
                ]),
            ));
        }
        out
    }

    /// One generated step: who sends it, the change, its controls.
    fn step(&mut self) -> (Identity, ChangeRecord, Vec<Control>) {
        let rec = match self.rng.below(100) {
            0..=29 => self.gen_add(),
            30..=64 => self.gen_modify(),
            65..=84 => self.gen_moddn(),
            _ => self.gen_delete(),
        };
        let identity = match self.rng.below(100) {
            0..=79 => Identity::Root,
            80..=89 => Identity::Anonymous,
            _ => Identity::Simple {
                dn: USER_DN.as_bytes().to_vec(),
                pw: USER_PW.as_bytes().to_vec(),
            },
        };
        let mut controls = Vec::new();
        if self.rng.chance(15) {
            controls.push(manage(self.rng.chance(50)));
        }
        if self.rng.chance(10) {
            let f = [
                "(sn=Beta)",
                "(description=one)",
                "(cn=nomatch)",
                "(objectClass=*)",
            ];
            let f = f[self.rng.below(f.len())];
            if let Ok(filter) = Filter::parse(f) {
                controls.push(Control {
                    oid: ASSERTION.into(),
                    critical: true,
                    value: Some(crate::rawber::filter_ber(&filter)),
                });
            }
        }
        if self.rng.chance(10) {
            let oid = if self.rng.chance(50) {
                PRE_READ
            } else {
                POST_READ
            };
            let lists: [&[&str]; 3] = [&["cn", "description"], &["*"], &["*", "+"]];
            let list: Vec<String> = lists[self.rng.below(lists.len())]
                .iter()
                .map(|s| s.to_string())
                .collect();
            controls.push(Control {
                oid: oid.into(),
                critical: true,
                value: Some(crate::rawber::attribute_selection(&list)),
            });
        }
        (identity, rec, controls)
    }

    /// The DN of an existing entry of the sandbox (or one an earlier step added), sometimes spelled
    /// another way (letter case, the type as an OID or a synonym, spaces).
    fn target(&mut self) -> String {
        let mut pool = vec![
            self.person(),
            self.person(),
            self.group(),
            self.sub(),
            self.kid(),
            format!("cn=ghost,{}", self.sb),
        ];
        if self.aliases {
            pool.push(self.alias());
            pool.push(self.referral());
        }
        pool.extend(self.names.iter().cloned());
        let dn = pool[self.rng.below(pool.len())].clone();
        self.respell(&dn)
    }

    fn respell(&mut self, dn: &str) -> String {
        match self.rng.below(12) {
            0 => dn.to_uppercase(),
            1 => dn.replacen("cn=", "commonName=", 1),
            2 => dn.replacen("cn=", "2.5.4.3=", 1),
            3 => dn.replacen(',', " , ", 1),
            4 => dn.replacen("=", " = ", 1),
            _ => dn.to_string(),
        }
    }

    fn new_name(&mut self) -> String {
        self.fresh += 1;
        format!("n{}", self.fresh)
    }

    fn parent(&mut self) -> String {
        let mut pool = vec![self.sb.clone(), self.sb.clone(), self.sub()];
        pool.push(format!("ou=ghost,{}", self.sb));
        pool.push(self.person());
        if self.aliases {
            pool.push(self.alias());
            pool.push(self.referral());
        }
        pool[self.rng.below(pool.len())].clone()
    }

    fn gen_add(&mut self) -> ChangeRecord {
        let name = self.new_name();
        let parent = self.parent();
        let mut dn = format!("cn={name},{parent}");
        let person = |cn: &str| -> Attrs {
            attrs(&[("objectClass", "inetOrgPerson"), ("cn", cn), ("sn", "S")])
        };
        let mut a = person(&name);
        match self.rng.below(20) {
            0..=3 => {
                // Valid, with some optional values.
                if self.rng.chance(50) {
                    a.extend(attrs(&[("description", "d1"), ("description", "D2")]));
                }
                if self.rng.chance(30) {
                    a.extend(attrs(&[("mail", "n@example.com"), ("title", "t")]));
                }
                if self.rng.chance(30) {
                    a.insert(0, ("objectClass".into(), b"top".to_vec()));
                    a.insert(1, ("objectClass".into(), b"person".to_vec()));
                }
            }
            4 => a.retain(|(n, _)| n != "sn"),
            5 => a.extend(attrs(&[("xyzzy", "1")])),
            6 => a.extend(attrs(&[("mail", "é@example.com")])),
            7 => a.extend(attrs(&[
                ("objectClass", "posixAccount"),
                ("uid", &name),
                ("uidNumber", "abc"),
                ("gidNumber", "1"),
                ("homeDirectory", "/h"),
            ])),
            8 => a.extend(attrs(&[("description", "dup"), ("description", "dup")])),
            9 => a.extend(attrs(&[("cn", &name.to_uppercase())])),
            10 => {
                dn = format!("cn={name}+sn=S,{parent}");
            }
            11 => {
                dn = format!("cn={name}+sn=Other,{parent}");
            }
            12 => {
                // The RDN value is not among the entry's values.
                a = person("other");
            }
            13 => {
                dn = self.respell(&self.person());
                a = person("Alpha Beta");
            }
            14 => {
                let ty = ["commonName", "CN", "2.5.4.3"][self.rng.below(3)];
                dn = format!("{ty}={name},{parent}");
            }
            15 => {
                a = attrs(&[
                    ("objectClass", "top"),
                    ("objectClass", "extensibleObject"),
                    ("cn", &name),
                ]);
            }
            16 => a.extend(attrs(&[("objectClass", "organizationalUnit"), ("ou", "x")])),
            17 => {
                let op = ["createTimestamp", "entryUUID", "creatorsName", "entryDN"];
                let v = [
                    "20200101000000Z",
                    "00000000-0000-0000-0000-000000000001",
                    USER_DN,
                    "cn=x",
                ];
                let i = self.rng.below(op.len());
                a.push((op[i].into(), v[i].as_bytes().to_vec()));
            }
            18 => {
                a = attrs(&[("objectClass", "person"), ("cn", &name), ("sn", "S")]);
                a.extend(attrs(&[("mail", "m@example.com")]));
            }
            _ => a.extend(attrs(&[("objectClass", "noSuchClass")])),
        }
        self.names.push(dn.clone());
        Self::add(dn, a)
    }

    fn gen_modify(&mut self) -> ChangeRecord {
        let dn = self.target();
        let n = 1 + self.rng.below(3);
        let mut changes = Vec::new();
        for _ in 0..n {
            changes.push(self.one_change());
        }
        ChangeRecord {
            dn: dn.into_bytes(),
            change: LdifChange::Modify(changes),
        }
    }

    fn one_change(&mut self) -> Change {
        use ModifyOperation::{Add, Delete, Increment, Replace};
        match self.rng.below(34) {
            0 => change(Add, "description", &["three"]),
            1 => change(Add, "description", &["ONE"]),
            2 => change(Add, "description", &["x", "x"]),
            3 => change(Delete, "description", &["one"]),
            4 => change(Delete, "description", &["TWO"]),
            5 => change(Delete, "description", &["absent"]),
            6 => change(Delete, "description", &[]),
            7 => change(Delete, "title", &[]),
            8 => change(Replace, "description", &["r1", "R2"]),
            9 => change(Replace, "description", &[]),
            10 => change(Replace, "displayName", &["a", "b"]),
            11 => change(Add, "displayName", &["Second"]),
            12 => change(Increment, "uidNumber", &["1"]),
            13 => change(Increment, "uidNumber", &["-3"]),
            14 => change(Increment, "description", &["1"]),
            15 => change(Increment, "employeeNumber", &["2"]),
            16 => change(Delete, "sn", &[]),
            17 => change(Delete, "cn", &["Alpha Beta"]),
            18 => change(Replace, "cn", &["alpha beta", "alpha"]),
            19 => change(Replace, "cn", &["ALPHA BETA"]),
            20 => change(Delete, "objectClass", &[]),
            21 => change(Add, "objectClass", &["extensibleObject"]),
            22 => change(Add, "objectClass", &["posixAccount"]),
            23 => change(Replace, "objectClass", &["organizationalUnit"]),
            24 => change(Replace, "createTimestamp", &["20200101000000Z"]),
            25 => change(Replace, "modifiersName", &[USER_DN]),
            26 => change(Delete, "entryUUID", &[]),
            27 => change(Add, "xyzzy", &["1"]),
            28 => change(Replace, "mail", &["é@example.com"]),
            29 => change(Replace, "telephoneNumber", &[""]),
            30 => {
                let v = self.person().to_uppercase().replace(',', ", ");
                change(Add, "member", &[&v])
            }
            31 => {
                let v = self.person().replacen("cn=", "CN=", 1);
                change(Delete, "member", &[&v])
            }
            32 => change(Replace, "userPassword", &["new-pw"]),
            _ => change(Add, "sn", &["beta"]),
        }
    }

    fn gen_moddn(&mut self) -> ChangeRecord {
        let dn = self.target();
        let delete_old_rdn = self.rng.chance(50);
        let renamed = self.new_name();
        let new_rdn = match self.rng.below(14) {
            0 | 1 => "cn=ALPHA BETA".to_string(),
            2 => "cn=alpha".to_string(),
            3 | 4 => format!("cn={renamed}"),
            5 => "cn=alpha+sn=Beta".to_string(),
            6 => format!("sn=Beta+cn={renamed}"),
            7 => format!("commonName={renamed}"),
            8 => format!("2.5.4.3={renamed}"),
            9 => format!("CN={renamed}"),
            10 => "uid=x".to_string(),
            11 => "xyzzy=1".to_string(),
            12 => "cn=grp".to_string(),
            _ => "ou=SUB".to_string(),
        };
        let new_superior = match self.rng.below(10) {
            0..=4 => None,
            5 => Some(self.sub()),
            6 => Some(self.sb.clone()),
            7 => Some(format!("ou=ghost,{}", self.sb)),
            8 => Some(dn.clone()),
            _ if self.aliases && self.rng.chance(50) => Some(self.alias()),
            _ if self.aliases => Some(self.referral()),
            _ => Some(self.kid()),
        };
        let parent = new_superior.clone().unwrap_or_else(|| {
            dn.split_once(',')
                .map(|(_, p)| p.to_string())
                .unwrap_or_default()
        });
        self.names.push(format!("{new_rdn},{parent}"));
        ChangeRecord {
            dn: dn.into_bytes(),
            change: LdifChange::ModDn {
                new_rdn: new_rdn.into_bytes(),
                delete_old_rdn,
                new_superior: new_superior.map(String::into_bytes),
            },
        }
    }

    fn gen_delete(&mut self) -> ChangeRecord {
        ChangeRecord {
            dn: self.target().into_bytes(),
            change: LdifChange::Delete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequences() {
        let mut a = SequenceGen::new(7, true);
        let mut b = SequenceGen::new(7, true);
        for _ in 0..20 {
            let (x, y) = (a.next_sequence(), b.next_sequence());
            assert_eq!(x.name, y.name);
            assert_eq!(x.steps, y.steps);
        }
    }

    #[test]
    fn sequences_stay_in_their_sandbox() {
        let mut g = SequenceGen::new(1, true);
        for _ in 0..50 {
            let s = g.next_sequence();
            let sandbox = match &s.steps[0].request {
                Request::Change(rec) => String::from_utf8(rec.dn.clone()).unwrap(),
                _ => panic!("a sequence starts with its sandbox"),
            };
            for step in &s.steps {
                let dn = match &step.request {
                    Request::Change(rec) => rec.dn.clone(),
                    Request::Search(r) => r.base.clone(),
                    _ => panic!("only writes and read-backs"),
                };
                let dn = String::from_utf8(dn).unwrap().to_lowercase();
                let tail = sandbox.to_lowercase();
                let squeezed = dn.replace(" , ", ",").replace(" = ", "=");
                assert!(squeezed.ends_with(&tail), "{dn} outside {sandbox}");
            }
        }
    }

    #[test]
    fn no_aliases_without_alias_data() {
        let mut g = SequenceGen::new(3, false);
        for _ in 0..100 {
            for step in g.next_sequence().steps {
                if let Request::Change(rec) = &step.request {
                    let text = crate::case::change_ldif(rec).to_lowercase();
                    assert!(!text.contains("cn=al,"), "{text}");
                    assert!(!text.contains("ou=ref,"), "{text}");
                }
            }
        }
    }
}
