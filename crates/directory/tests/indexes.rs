//! Index upkeep against a recomputation: after every write of a random sequence of modifies (values
//! added, deleted and replaced, in other letter cases, whole attributes deleted), every index holds
//! exactly the keys the entries' values give, no more and no fewer.

mod support;

use std::sync::Arc;

use canopy_core::index::{entry_keys, IndexSpec};
use canopy_core::Entry;
use canopy_directory::OpenOptions;
use canopy_directory::{Directory, Pipeline, WriteOp};
use canopy_mdb::ReadOps;
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::Schema;
use support::{add, write, SUFFIX};

fn spec(attr: &str, sub: bool, pres: bool) -> IndexSpec {
    IndexSpec {
        attr: attr.into(),
        eq: true,
        pres,
        sub,
        ord: false,
        approx: false,
    }
}

/// Every index holds exactly the (key, ID) pairs the stored entries give, over every key the
/// sequence's values can produce (`universe`, an entry holding all of them).
fn check(dir: &Directory, universe: &Entry, step: &str) {
    let txn = dir.store().read().unwrap();
    let mut entries = Vec::new();
    for item in txn.entries().unwrap() {
        let (id, bytes) = item.unwrap();
        entries.push((
            id,
            Directory::parse_stored(bytes).unwrap().to_entry().unwrap(),
        ));
    }
    // No entry holds two equal values (the index-answered duplicate check must refuse them too).
    for (_, entry) in &entries {
        for attr in &entry.attrs {
            let mut seen = std::collections::HashSet::new();
            for value in &attr.values {
                let (_, key) = dir.normalize(value).unwrap_or_else(|_| {
                    let text = String::from_utf8_lossy(value).to_lowercase();
                    (
                        Default::default(),
                        dir.normalize(b"cn=x").unwrap().1.child(&text),
                    )
                });
                assert!(
                    seen.insert(key.as_str().to_string()),
                    "{step}: {} holds {} twice",
                    entry.dn,
                    attr.desc
                );
            }
        }
    }
    for spec in dir.indexes(&txn).iter() {
        let mut keys = entry_keys(dir.schema(), spec, universe);
        keys.sort();
        keys.dedup();
        for key in keys {
            let mut want: Vec<u64> = entries
                .iter()
                .filter(|(_, e)| entry_keys(dir.schema(), spec, e).contains(&key))
                .map(|(id, _)| *id)
                .collect();
            want.sort_unstable();
            let mut have = txn.index_get(&spec.attr, &key).unwrap();
            have.sort_unstable();
            assert_eq!(
                have, want,
                "{step}: index of {} under key {key:?}",
                spec.attr
            );
        }
    }
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[tokio::test]
async fn indexes_follow_every_modify() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = OpenOptions::new(tmp.path().to_path_buf());
    store.durable = false;
    let specs = vec![
        spec("objectClass", false, false),
        spec("cn", true, true),
        spec("description", true, true),
        spec("member", false, true),
        // A supertype index: cn and sn both give keys to it.
        spec("name", false, false),
    ];
    let schema = Arc::new(Schema::builtin());
    let dir = Directory::open(schema, SUFFIX, specs, store, Pipeline::standard()).unwrap();
    add(
        &dir,
        SUFFIX,
        &[
            ("objectClass", "organization"),
            ("objectClass", "dcObject"),
            ("dc", "example"),
            ("o", "x"),
        ],
    )
    .await
    .unwrap();
    for i in 0..4 {
        let dn = format!("cn=g{i},{SUFFIX}");
        add(
            &dir,
            &dn,
            &[
                ("objectClass", "groupOfNames"),
                ("cn", &format!("g{i}")),
                ("member", SUFFIX),
            ],
        )
        .await
        .unwrap();
    }
    let words = [
        "alpha",
        "Alpha",
        "alphabet",
        "beta",
        "gamma delta",
        "Gamma Delta",
        "betamax",
        "G1",
    ];
    let members = [
        "cn=g0,dc=example,dc=com",
        "CN=G0,DC=Example,DC=com",
        "cn=g2,dc=example,dc=com",
        SUFFIX,
    ];
    // Built by hand: the schema's rules would refuse values that differ only in case.
    let attr = |desc: &str, values: &[&str]| canopy_core::Attribute {
        desc: desc.into(),
        values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
    };
    let (dn, ndn) = dir.normalize(b"cn=universe,dc=example,dc=com").unwrap();
    let universe = Entry {
        dn,
        ndn,
        attrs: vec![
            attr(
                "objectClass",
                &[
                    "groupOfNames",
                    "organization",
                    "dcObject",
                    "top",
                    "extensibleObject",
                ],
            ),
            attr("cn", &words),
            attr("description", &words),
            attr("member", &members),
        ],
    };
    let mut rng = Rng(0x5DEECE66D);
    for step in 0..400 {
        let target = format!("cn=g{},{SUFFIX}", rng.below(4));
        // objectClass values give their superclasses' keys too: `top` stays indexed while any
        // class remains.
        let classes = ["top", "extensibleObject"];
        let (attr, pool): (&str, &[&str]) = match rng.below(4) {
            0 => ("cn", &words),
            1 => ("description", &words),
            2 => ("objectClass", &classes),
            _ => ("member", &members),
        };
        let values: Vec<Vec<u8>> = (0..rng.below(3))
            .map(|_| pool[rng.below(pool.len())].as_bytes().to_vec())
            .collect();
        let operation = match rng.below(4) {
            0 => ModifyOperation::Add,
            1 => ModifyOperation::Delete,
            _ => ModifyOperation::Replace,
        };
        let (dn, ndn) = dir.normalize(target.as_bytes()).unwrap();
        let changes = vec![Change {
            operation,
            modification: PartialAttribute {
                name: attr.into(),
                values,
            },
        }];
        let result = write(&dir, WriteOp::Modify { dn, ndn, changes }).await;
        if let Err(e) = &result {
            // Refusals of the modify rules (duplicates, missing values, a required attribute or the
            // RDN value removed) leave the entry and its keys as they were.
            assert!(
                matches!(
                    e.code,
                    ResultCode::AttributeOrValueExists
                        | ResultCode::NoSuchAttribute
                        | ResultCode::ObjectClassViolation
                        | ResultCode::NotAllowedOnRdn
                        | ResultCode::NamingViolation
                        | ResultCode::ObjectClassModsProhibited
                        | ResultCode::ProtocolError
                ),
                "step {step}: {e:?}"
            );
        }
        check(&dir, &universe, &format!("step {step}"));
    }
}
