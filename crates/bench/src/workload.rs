//! The workloads of seeds 000, 001 and 002: which request a client sends next, built by mutating reusable
//! message templates in place so that preparing a request allocates nothing.

use std::io::Write as _;

use canopy_proto::{
    AddRequest, Change, DerefAliases, Filter, LdapMessage, ModifyOperation, ModifyRequest,
    PartialAttribute, ProtocolOp, SearchRequest, SearchScope, SubstringFilter,
};
use serde::{Deserialize, Serialize};

use crate::gen::{self, OUS};
use crate::ldap::bind_message;
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// DirectoryMark messaging: one bind per session, exact uid searches.
    Messaging,
    /// DirectoryMark addressing: cn/sn/mail equality, 24% uid substring, 8% misses, anonymous rebinds.
    Addressing,
    /// Exact uid searches on anonymous sessions (the ldclt search rate).
    Search,
    /// Replace the description of a random person, as the admin.
    Modify,
    /// Add new people under ou=Accounting (removed again after the run).
    Add,
    /// Delete people added by an unmeasured fill phase just before.
    Delete,
    /// Simple binds as random people (needs data generated with --passwords).
    Bind,
    /// Simple binds with a wrong password as random people: password spraying across accounts.
    BindFail,
    /// Simple binds with a wrong password as person 0: guessing one account's password.
    BindFailOne,
    /// 90% exact uid searches, 10% modifies, as the admin.
    Mixed,
    /// One subtree search (objectClass=*) of the whole suffix per request.
    Scan,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Messaging => "messaging",
            Workload::Addressing => "addressing",
            Workload::Search => "search",
            Workload::Modify => "modify",
            Workload::Add => "add",
            Workload::Delete => "delete",
            Workload::Bind => "bind",
            Workload::BindFail => "bind-fail",
            Workload::BindFailOne => "bind-fail-one",
            Workload::Mixed => "mixed",
            Workload::Scan => "scan",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Session {
    /// One connection per client for the whole run.
    Persistent,
    /// Connect, bind, one operation, unbind for every request (seed 001's worst case).
    PerOp,
}

impl Session {
    pub fn name(self) -> &'static str {
        match self {
            Session::Persistent => "persistent",
            Session::PerOp => "per-op",
        }
    }
}

/// The password the failed-bind workloads send: no generated password looks like it.
const WRONG_PASSWORD: &[u8] = b"not-the-password";

/// Who a session binds as when it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// No bind at all (the bind workload, whose operation is the bind).
    None,
    Anonymous,
    Admin,
    User(u64),
}

/// What the directory and the run look like, as far as choosing requests goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keyspace {
    pub workload: Workload,
    pub session: Session,
    pub entries: u64,
    pub seed: u64,
    pub suffix: String,
    pub admin_dn: String,
    pub admin_pw: String,
    /// The data has userPassword values (generated with --passwords), so people can bind.
    pub user_binds: bool,
    /// Distinguishes the entries added by this run from those of earlier ones.
    pub run_id: u64,
}

/// The addressing mix (seed 000): what one request looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressingChoice {
    /// `(uid=userNNNNNN*)`: the uid of a random person without its last digit (at most ten matches).
    Substring(u64),
    /// An equality search on cn (0), sn (1) or mail (2) for a value nobody has.
    Missing(u8, u64),
    /// An equality search on cn (0), sn (1) or mail (2) for the value of a random person.
    Equality(u8, u64),
}

/// 24% substring, 8% misses, the rest equality on cn, sn and mail in equal parts.
pub fn addressing_choice(rng: &mut Rng, entries: u64) -> AddressingChoice {
    let roll = rng.below(100);
    let attr = rng.below(3) as u8;
    let key = rng.below(entries.max(1));
    if roll < 24 {
        AddressingChoice::Substring(key)
    } else if roll < 32 {
        AddressingChoice::Missing(attr, rng.next_u64() % 1_000_000_000)
    } else {
        AddressingChoice::Equality(attr, key)
    }
}

/// A random person: uniform over the directory's key range.
pub fn pick_user(rng: &mut Rng, entries: u64) -> u64 {
    rng.below(entries.max(1))
}

const ADDRESS_ATTRS: [&str; 3] = ["cn", "sn", "mail"];

fn search_template(suffix: &str, filter: Filter) -> LdapMessage {
    LdapMessage {
        message_id: 0,
        op: ProtocolOp::SearchRequest(SearchRequest {
            base: suffix.as_bytes().to_vec(),
            scope: SearchScope::WholeSubtree,
            deref: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter,
            attributes: Vec::new(),
        }),
        controls: Vec::new(),
    }
}

fn set(buf: &mut Vec<u8>, args: std::fmt::Arguments<'_>) {
    buf.clear();
    let _ = buf.write_fmt(args);
}

fn set_str(s: &mut String, value: &str) {
    s.clear();
    s.push_str(value);
}

/// The request a client sends next.
pub enum Next<'a> {
    /// An operation to time.
    Op(&'a mut LdapMessage),
    /// The delete workload has deleted everything its fill phase added.
    Exhausted,
}

/// Per-client request generator.
pub struct Script {
    ks: Keyspace,
    client: usize,
    rng: Rng,
    counter: u64,
    eq: LdapMessage,
    sub: LdapMessage,
    scan: LdapMessage,
    modify: LdapMessage,
    add: LdapMessage,
    delete: LdapMessage,
    bind: LdapMessage,
    anonymous: LdapMessage,
    /// Entries this client added are `bench-<run>-<client>-<n>` for n in added_from..added_to.
    added_from: u64,
    added_to: u64,
}

impl Script {
    pub fn new(ks: &Keyspace, client: usize) -> Script {
        let suffix = ks.suffix.as_str();
        let person = |name: &str, v: &str| PartialAttribute {
            name: name.to_string(),
            values: vec![v.as_bytes().to_vec()],
        };
        let add = LdapMessage {
            message_id: 0,
            op: ProtocolOp::AddRequest(AddRequest {
                dn: Vec::new(),
                attributes: vec![
                    PartialAttribute {
                        name: "objectClass".into(),
                        values: ["top", "person", "organizationalPerson", "inetOrgPerson"]
                            .iter()
                            .map(|v| v.as_bytes().to_vec())
                            .collect(),
                    },
                    person("uid", ""),
                    person("cn", ""),
                    person("sn", "Bench"),
                    person("description", "added by canopy bench"),
                ],
            }),
            controls: Vec::new(),
        };
        Script {
            client,
            rng: Rng::for_stream(ks.seed ^ ks.run_id.rotate_left(17), client as u64),
            counter: 0,
            eq: search_template(
                suffix,
                Filter::Equality("uid".into(), Vec::with_capacity(64)),
            ),
            sub: search_template(
                suffix,
                Filter::Substrings(SubstringFilter {
                    attr: "uid".into(),
                    initial: Some(Vec::with_capacity(16)),
                    any: Vec::new(),
                    final_: None,
                }),
            ),
            scan: search_template(suffix, Filter::Present("objectClass".into())),
            modify: LdapMessage {
                message_id: 0,
                op: ProtocolOp::ModifyRequest(ModifyRequest {
                    dn: Vec::with_capacity(96),
                    changes: vec![Change {
                        operation: ModifyOperation::Replace,
                        modification: PartialAttribute {
                            name: "description".into(),
                            values: vec![Vec::with_capacity(64)],
                        },
                    }],
                }),
                controls: Vec::new(),
            },
            add,
            delete: LdapMessage {
                message_id: 0,
                op: ProtocolOp::DelRequest(Vec::with_capacity(96)),
                controls: Vec::new(),
            },
            bind: bind_message(b"", b""),
            anonymous: bind_message(b"", b""),
            added_from: 0,
            added_to: 0,
            ks: ks.clone(),
        }
    }

    /// Whom a new session binds as.
    pub fn identity(&mut self) -> Identity {
        match self.ks.workload {
            Workload::Messaging if self.ks.user_binds => {
                Identity::User(pick_user(&mut self.rng, self.ks.entries))
            }
            Workload::Messaging
            | Workload::Modify
            | Workload::Add
            | Workload::Delete
            | Workload::Mixed
            // The scan binds as the admin so that no size limit for ordinary users cuts it short.
            | Workload::Scan => Identity::Admin,
            Workload::Addressing | Workload::Search => Identity::Anonymous,
            Workload::Bind | Workload::BindFail | Workload::BindFailOne => Identity::None,
        }
    }

    /// The bind request for `who` (None for Identity::None).
    pub fn bind_for(&mut self, who: Identity) -> Option<&mut LdapMessage> {
        let (dn, pw) = match who {
            Identity::None => return None,
            Identity::Anonymous => return Some(&mut self.anonymous),
            Identity::Admin => (self.ks.admin_dn.clone(), self.ks.admin_pw.clone()),
            Identity::User(i) => (gen::user_dn(i, &self.ks.suffix), gen::password(i)),
        };
        self.bind = bind_message(dn.as_bytes(), pw.as_bytes());
        Some(&mut self.bind)
    }

    fn uid_search(&mut self) -> &mut LdapMessage {
        let i = pick_user(&mut self.rng, self.ks.entries);
        if let ProtocolOp::SearchRequest(SearchRequest {
            filter: Filter::Equality(attr, value),
            ..
        }) = &mut self.eq.op
        {
            set_str(attr, "uid");
            set(value, format_args!("user{i:07}"));
        }
        &mut self.eq
    }

    fn modify_request(&mut self) -> &mut LdapMessage {
        let i = pick_user(&mut self.rng, self.ks.entries);
        let n = self.counter;
        let (client, suffix) = (self.client, &self.ks.suffix);
        if let ProtocolOp::ModifyRequest(m) = &mut self.modify.op {
            set(&mut m.dn, format_args!("{}", gen::user_dn(i, suffix)));
            if let Some(v) = m
                .changes
                .first_mut()
                .and_then(|c| c.modification.values.first_mut())
            {
                set(
                    v,
                    format_args!("modified by bench client {client}, change {n}"),
                );
            }
        }
        &mut self.modify
    }

    fn added_dn(&self, n: u64) -> String {
        format!(
            "uid=bench-{}-{}-{n},ou={},{}",
            self.ks.run_id, self.client, OUS[0], self.ks.suffix
        )
    }

    /// The next add of a new entry (also used by the delete workload's fill phase).
    pub fn add_request(&mut self) -> &mut LdapMessage {
        let n = self.added_to;
        self.added_to += 1;
        let dn = self.added_dn(n);
        let uid = format!("bench-{}-{}-{n}", self.ks.run_id, self.client);
        if let ProtocolOp::AddRequest(a) = &mut self.add.op {
            set(&mut a.dn, format_args!("{dn}"));
            for attr in a.attributes.iter_mut() {
                let value = match attr.name.as_str() {
                    "uid" => uid.clone(),
                    "cn" => format!("Bench {uid}"),
                    _ => continue,
                };
                if let Some(v) = attr.values.first_mut() {
                    set(v, format_args!("{value}"));
                }
            }
        }
        &mut self.add
    }

    /// Forgets an add that failed, so cleanup and the delete phase do not look for it.
    pub fn add_failed(&mut self) {
        self.added_to = self.added_to.saturating_sub(1).max(self.added_from);
    }

    /// Deletes the oldest entry this client added, if any is left.
    pub fn delete_request(&mut self) -> Option<&mut LdapMessage> {
        if self.added_from >= self.added_to {
            return None;
        }
        let dn = self.added_dn(self.added_from);
        self.added_from += 1;
        if let ProtocolOp::DelRequest(d) = &mut self.delete.op {
            set(d, format_args!("{dn}"));
        }
        Some(&mut self.delete)
    }

    /// How many added entries are still in the directory.
    pub fn added_left(&self) -> u64 {
        self.added_to - self.added_from
    }

    fn addressing_request(&mut self) -> &mut LdapMessage {
        let choice = addressing_choice(&mut self.rng, self.ks.entries);
        let (attr_i, value) = match choice {
            AddressingChoice::Substring(i) => {
                if let ProtocolOp::SearchRequest(SearchRequest {
                    filter: Filter::Substrings(f),
                    ..
                }) = &mut self.sub.op
                {
                    if let Some(initial) = f.initial.as_mut() {
                        set(initial, format_args!("user{:06}", i / 10));
                    }
                }
                return &mut self.sub;
            }
            AddressingChoice::Missing(a, n) => {
                let v = match a {
                    0 => format!("Nobody Absent{n}"),
                    1 => format!("Absent{n}"),
                    _ => format!("nobody{n}@example.com"),
                };
                (a, v)
            }
            AddressingChoice::Equality(a, i) => {
                let v = match a {
                    0 => {
                        let (given, sn) = gen::person_names(self.ks.seed, i);
                        format!("{given} {sn}")
                    }
                    1 => gen::person_names(self.ks.seed, i).1,
                    _ => gen::mail(i),
                };
                (a, v)
            }
        };
        if let ProtocolOp::SearchRequest(SearchRequest {
            filter: Filter::Equality(attr, v),
            ..
        }) = &mut self.eq.op
        {
            set_str(
                attr,
                ADDRESS_ATTRS.get(attr_i as usize).copied().unwrap_or("cn"),
            );
            set(v, format_args!("{value}"));
        }
        &mut self.eq
    }

    /// The next measured request.
    pub fn next_request(&mut self) -> Next<'_> {
        self.counter += 1;
        let persistent = self.ks.session == Session::Persistent;
        let msg = match self.ks.workload {
            Workload::Messaging | Workload::Search => self.uid_search(),
            Workload::Addressing => {
                // Every fifth request of a persistent session is an anonymous bind (DirectoryMark
                // addressing); per-op sessions bind anonymously on every connection anyway.
                if persistent && self.counter.is_multiple_of(5) {
                    &mut self.anonymous
                } else {
                    self.addressing_request()
                }
            }
            Workload::Modify => self.modify_request(),
            Workload::Mixed => {
                if self.rng.below(10) == 0 {
                    self.modify_request()
                } else {
                    self.uid_search()
                }
            }
            Workload::Scan => &mut self.scan,
            Workload::Add => self.add_request(),
            Workload::Delete => match self.delete_request() {
                Some(m) => m,
                None => return Next::Exhausted,
            },
            Workload::Bind => {
                let i = pick_user(&mut self.rng, self.ks.entries);
                let _ = self.bind_for(Identity::User(i));
                &mut self.bind
            }
            Workload::BindFail | Workload::BindFailOne => {
                let i = match self.ks.workload {
                    Workload::BindFailOne => 0,
                    _ => pick_user(&mut self.rng, self.ks.entries),
                };
                let dn = gen::user_dn(i, &self.ks.suffix);
                self.bind = bind_message(dn.as_bytes(), WRONG_PASSWORD);
                &mut self.bind
            }
        };
        Next::Op(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyspace(workload: Workload) -> Keyspace {
        Keyspace {
            workload,
            session: Session::Persistent,
            entries: 1000,
            seed: 42,
            suffix: "dc=example,dc=com".into(),
            admin_dn: "cn=admin,dc=example,dc=com".into(),
            admin_pw: "secret".into(),
            user_binds: true,
            run_id: 7,
        }
    }

    fn filter_of(next: Next<'_>) -> String {
        match next {
            Next::Op(LdapMessage {
                op: ProtocolOp::SearchRequest(s),
                ..
            }) => s.filter.to_string(),
            Next::Op(m) => format!("{:?}", m.op),
            Next::Exhausted => "exhausted".into(),
        }
    }

    #[test]
    fn addressing_mix_proportions() {
        let mut rng = Rng::new(3);
        let (mut sub, mut miss, mut eq) = (0, 0, 0);
        for _ in 0..100_000 {
            match addressing_choice(&mut rng, 1000) {
                AddressingChoice::Substring(k) => {
                    assert!(k < 1000);
                    sub += 1
                }
                AddressingChoice::Missing(a, _) => {
                    assert!(a < 3);
                    miss += 1
                }
                AddressingChoice::Equality(a, k) => {
                    assert!(a < 3 && k < 1000);
                    eq += 1
                }
            }
        }
        let pct = |n: i32| n as f64 / 1000.0;
        assert!((pct(sub) - 24.0).abs() < 1.0, "{sub}");
        assert!((pct(miss) - 8.0).abs() < 1.0, "{miss}");
        assert!((pct(eq) - 68.0).abs() < 1.0, "{eq}");
    }

    #[test]
    fn keys_cover_the_range_uniformly() {
        let mut rng = Rng::new(9);
        let mut hits = vec![0u32; 100];
        for _ in 0..100_000 {
            hits[pick_user(&mut rng, 100) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)));
        assert_eq!(pick_user(&mut rng, 0), 0);
    }

    #[test]
    fn search_filters_are_exact_uids_in_range() {
        let mut s = Script::new(&keyspace(Workload::Search), 0);
        for _ in 0..200 {
            let f = filter_of(s.next_request());
            let n: u64 = f
                .strip_prefix("(uid=user")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|d| (d.len() == 7).then_some(d))
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| panic!("{f}"));
            assert!(n < 1000);
        }
    }

    #[test]
    fn addressing_requests_have_the_expected_shapes() {
        let mut s = Script::new(&keyspace(Workload::Addressing), 1);
        let mut binds = 0;
        for _ in 0..500 {
            let f = filter_of(s.next_request());
            if f.contains("BindRequest") {
                binds += 1;
                continue;
            }
            let ok = (f.starts_with("(uid=user") && f.ends_with("*)") && f.len() == 17)
                || f.starts_with("(cn=")
                || f.starts_with("(sn=")
                || f.starts_with("(mail=");
            assert!(ok, "{f}");
        }
        assert_eq!(binds, 100);
    }

    #[test]
    fn adds_and_deletes_pair_up() {
        let mut s = Script::new(&keyspace(Workload::Delete), 3);
        assert!(matches!(s.next_request(), Next::Exhausted));
        let dn = |m: &LdapMessage| match &m.op {
            ProtocolOp::AddRequest(a) => String::from_utf8(a.dn.clone()).unwrap(),
            ProtocolOp::DelRequest(d) => String::from_utf8(d.clone()).unwrap(),
            other => panic!("{other:?}"),
        };
        let first = dn(s.add_request());
        assert_eq!(first, "uid=bench-7-3-0,ou=Accounting,dc=example,dc=com");
        let second = dn(s.add_request());
        s.add_request();
        s.add_failed();
        assert_eq!(s.added_left(), 2);
        let Next::Op(m) = s.next_request() else {
            panic!()
        };
        assert_eq!(dn(m), first);
        let Next::Op(m) = s.next_request() else {
            panic!()
        };
        assert_eq!(dn(m), second);
        assert!(matches!(s.next_request(), Next::Exhausted));
    }

    #[test]
    fn identities_by_workload() {
        let check = |w: Workload, user_binds: bool, want: &str| {
            let mut ks = keyspace(w);
            ks.user_binds = user_binds;
            let got = match Script::new(&ks, 0).identity() {
                Identity::User(i) if i < 1000 => "user",
                Identity::User(_) => "bad user",
                Identity::Admin => "admin",
                Identity::Anonymous => "anonymous",
                Identity::None => "none",
            };
            assert_eq!(got, want, "{w:?}");
        };
        check(Workload::Messaging, true, "user");
        check(Workload::Messaging, false, "admin");
        check(Workload::Modify, true, "admin");
        check(Workload::Mixed, true, "admin");
        check(Workload::Search, true, "anonymous");
        check(Workload::Scan, false, "admin");
        check(Workload::Scan, true, "admin");
        check(Workload::Addressing, true, "anonymous");
        check(Workload::Bind, true, "none");
        check(Workload::BindFail, true, "none");
        check(Workload::BindFailOne, false, "none");
    }

    #[test]
    fn failed_binds_use_a_wrong_password() {
        for workload in [Workload::BindFail, Workload::BindFailOne] {
            let mut s = Script::new(&keyspace(workload), 0);
            let Next::Op(m) = s.next_request() else {
                panic!("no request")
            };
            let ProtocolOp::BindRequest(req) = &m.op else {
                panic!("not a bind: {m:?}")
            };
            assert_eq!(
                req.auth,
                canopy_proto::BindAuth::Simple(WRONG_PASSWORD.to_vec())
            );
            if workload == Workload::BindFailOne {
                assert_eq!(req.name, gen::user_dn(0, "dc=example,dc=com").into_bytes());
            }
        }
    }

    #[test]
    fn modify_targets_existing_people() {
        let mut s = Script::new(&keyspace(Workload::Modify), 0);
        let Next::Op(m) = s.next_request() else {
            panic!()
        };
        let ProtocolOp::ModifyRequest(r) = &m.op else {
            panic!()
        };
        let dn = String::from_utf8(r.dn.clone()).unwrap();
        assert!(
            dn.starts_with("uid=user000") && dn.ends_with(",dc=example,dc=com"),
            "{dn}"
        );
        let i: u64 = dn[8..15].parse().unwrap();
        assert_eq!(dn, gen::user_dn(i, "dc=example,dc=com"));
    }
}
