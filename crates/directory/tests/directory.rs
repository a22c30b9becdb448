//! The directory layer against a simple model: random adds, deletes and renames keep dn2id, dn2children and
//! the stored DNs consistent with a map of DN to parent.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use canopy_core::index::IndexSpec;
use canopy_core::wire::StoredEntry;
use canopy_core::LdapError;
use canopy_directory::OpenOptions;
use canopy_directory::{dn_key, Action, Directory, Guard, Pipeline, WriteOp, WriteRequest};
use canopy_mdb::ReadOps;
use canopy_proto::{Dn, ResultCode};
use canopy_schema::Schema;
use support::{add, delete, rename, ADMIN};

fn open(dir: &std::path::Path) -> Directory {
    let schema = Arc::new(Schema::builtin());
    let index = |attr: &str, sub: bool| IndexSpec {
        attr: attr.into(),
        eq: true,
        pres: true,
        sub,
        ord: false,
        approx: false,
    };
    let specs = vec![
        index("objectClass", false),
        index("ou", true),
        index("cn", true),
    ];
    let mut store = OpenOptions::new(dir.to_path_buf());
    store.durable = false;
    Directory::open(
        schema,
        "dc=example,dc=com",
        specs,
        store,
        Pipeline::standard(),
    )
    .unwrap()
}

/// A guard that refuses deletes, as access rules would.
struct NoDeletes;

impl Guard for NoDeletes {
    fn requester(&self) -> &str {
        ADMIN
    }

    fn authorize(
        &self,
        _: &Directory,
        _: canopy_directory::InWrite<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError> {
        match action {
            Action::Delete(_) => Err(LdapError::new(ResultCode::InsufficientAccessRights, "no")),
            _ => Ok(()),
        }
    }
}

async fn add_ou(dir: &Directory, name: &str, parent: &str) -> Result<(), LdapError> {
    add(
        dir,
        &format!("ou={name},{parent}"),
        &[("objectClass", "organizationalUnit"), ("ou", name)],
    )
    .await
}

/// Every entry reachable through dn2id has a stored DN that normalizes to its key, its parent lists it as a
/// child, and the set of DNs equals the model's.
fn check(dir: &Directory, model: &BTreeMap<String, ()>) {
    let txn = dir.store().read().unwrap();
    let members = txn.subtree(&dn_key(dir.suffix())).unwrap();
    let mut seen = Vec::new();
    for (key, id) in &members {
        let bytes = txn
            .get_entry(*id)
            .unwrap()
            .expect("dn2id points to an entry");
        let stored = StoredEntry::parse(bytes).unwrap();
        let ndn = stored.ndn().unwrap();
        assert_eq!(&dn_key(&ndn), key, "stored ndn matches its key");
        let dn = Dn::parse(stored.dn).unwrap();
        assert_eq!(
            dir.schema().normalize_dn(&dn).unwrap(),
            ndn,
            "stored DN matches stored ndn"
        );
        if ndn != *dir.suffix() {
            let parent = txn
                .get_id(&dn_key(&ndn.parent().unwrap()))
                .unwrap()
                .expect("parent exists");
            assert!(
                txn.children(parent).unwrap().contains(id),
                "{ndn} listed under its parent"
            );
        }
        seen.push(ndn.to_string());
    }
    seen.sort();
    let expected: Vec<String> = model.keys().cloned().collect();
    assert_eq!(seen, expected);
    assert_eq!(txn.entry_count().unwrap() as usize, model.len());
}

/// A directory holding just the suffix entry.
async fn with_suffix(path: &std::path::Path) -> Directory {
    let dir = open(path);
    let suffix = [
        ("objectClass", "dcObject"),
        ("objectClass", "organization"),
        ("dc", "example"),
        ("o", "E"),
    ];
    add(&dir, "dc=example,dc=com", &suffix).await.unwrap();
    dir
}

fn normalized(dir: &Directory, dn: &str) -> String {
    dir.normalize(dn.as_bytes()).unwrap().1.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subtree_rename_moves_every_descendant() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = with_suffix(tmp.path()).await;
    add_ou(&dir, "a", "dc=example,dc=com").await.unwrap();
    add_ou(&dir, "b", "ou=a,dc=example,dc=com").await.unwrap();
    add_ou(&dir, "c", "ou=b,ou=a,dc=example,dc=com")
        .await
        .unwrap();
    add_ou(&dir, "z", "dc=example,dc=com").await.unwrap();
    rename(
        &dir,
        "ou=a,dc=example,dc=com",
        "ou=A2",
        Some("ou=z,dc=example,dc=com"),
    )
    .await
    .unwrap();
    let txn = dir.read().unwrap();
    let (_, ndn) = dir
        .normalize(b"ou=c,ou=b,ou=A2,ou=z,dc=example,dc=com")
        .unwrap();
    let (_, bytes) = dir
        .lookup(&txn, &ndn)
        .unwrap()
        .expect("moved descendant found under its new DN");
    assert_eq!(
        StoredEntry::parse(bytes).unwrap().dn,
        b"ou=c,ou=b,ou=A2,ou=z,dc=example,dc=com"
    );
    let (_, old) = dir.normalize(b"ou=c,ou=b,ou=a,dc=example,dc=com").unwrap();
    assert!(dir.lookup(&txn, &old).unwrap().is_none());
    // The renamed entry's naming attribute follows its RDN.
    let (_, top) = dir.normalize(b"ou=A2,ou=z,dc=example,dc=com").unwrap();
    let (_, bytes) = dir.lookup(&txn, &top).unwrap().unwrap();
    let entry = StoredEntry::parse(bytes).unwrap().to_entry().unwrap();
    assert_eq!(entry.get("ou").unwrap().values, vec![b"A2".to_vec()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_have_slapd_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = with_suffix(tmp.path()).await;
    add_ou(&dir, "a", "dc=example,dc=com").await.unwrap();
    add_ou(&dir, "b", "ou=a,dc=example,dc=com").await.unwrap();
    let code = |r: Result<(), LdapError>| r.err().map(|e| e.code);
    assert_eq!(
        code(add_ou(&dir, "a", "dc=example,dc=com").await),
        Some(ResultCode::EntryAlreadyExists)
    );
    let missing = add_ou(&dir, "x", "ou=nope,ou=a,dc=example,dc=com")
        .await
        .unwrap_err();
    assert_eq!(missing.code, ResultCode::NoSuchObject);
    assert_eq!(
        missing.matched_dn.as_deref(),
        Some("ou=a,dc=example,dc=com")
    );
    assert_eq!(
        code(delete(&dir, "ou=a,dc=example,dc=com").await),
        Some(ResultCode::NotAllowedOnNonLeaf)
    );
    assert_eq!(
        code(
            rename(
                &dir,
                "ou=a,dc=example,dc=com",
                "ou=a",
                Some("ou=b,ou=a,dc=example,dc=com")
            )
            .await
        ),
        // The frontend refuses a move below itself first (unwillingToPerform); the backend, as
        // back-mdb, finds no such new superior.
        Some(ResultCode::NoSuchObject)
    );
    add_ou(&dir, "c", "dc=example,dc=com").await.unwrap();
    assert_eq!(
        code(rename(&dir, "ou=c,dc=example,dc=com", "ou=a", None).await),
        Some(ResultCode::EntryAlreadyExists)
    );
    // The guard is asked inside the write, after the entry is found.
    let (dn, ndn) = dir.normalize(b"ou=c,dc=example,dc=com").unwrap();
    let op = WriteOp::Delete { dn, ndn };
    let guard = Arc::new(NoDeletes);
    let refused = dir.write(WriteRequest { op, guard }).await.unwrap_err();
    assert_eq!(refused.code(), ResultCode::InsufficientAccessRights);
    let (dn, ndn) = dir.normalize(b"ou=nowhere,dc=example,dc=com").unwrap();
    let op = WriteOp::Delete { dn, ndn };
    let guard = Arc::new(NoDeletes);
    let missing = dir.write(WriteRequest { op, guard }).await.unwrap_err();
    assert_eq!(missing.code(), ResultCode::NoSuchObject);
    let txn = dir.read().unwrap();
    assert!(dir.lookup(&txn, dir.suffix()).unwrap().is_some());
    let (_, kept) = dir.normalize(b"ou=c,dc=example,dc=com").unwrap();
    assert!(dir.lookup(&txn, &kept).unwrap().is_some());
}

/// A small deterministic generator, so a failure can be replayed from its seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &'a [String]) -> Option<&'a String> {
        (!items.is_empty()).then(|| &items[(self.next() % items.len() as u64) as usize])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_operations_agree_with_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = with_suffix(tmp.path()).await;
    let mut model: BTreeMap<String, ()> = BTreeMap::new();
    // Model keyed by user-form DN; compared through normalization.
    let mut dns: Vec<String> = vec!["dc=example,dc=com".to_string()];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for step in 0..300 {
        match rng.next() % 4 {
            0 | 1 => {
                let parent = rng.pick(&dns).unwrap().clone();
                let name = format!("n{step}");
                let dn = format!("ou={name},{parent}");
                add_ou(&dir, &name, &parent).await.unwrap();
                dns.push(dn);
            }
            2 => {
                let Some(target) = rng.pick(&dns[1..]).cloned() else {
                    continue;
                };
                let prefix = format!(",{target}");
                let leaf = !dns.iter().any(|d| d.ends_with(&prefix));
                let result = delete(&dir, &target).await;
                assert_eq!(result.is_ok(), leaf, "delete {target}: {result:?}");
                if leaf {
                    dns.retain(|d| d != &target);
                }
            }
            _ => {
                let Some(target) = rng.pick(&dns[1..]).cloned() else {
                    continue;
                };
                let superior = rng.pick(&dns).unwrap().clone();
                let new_rdn = format!("ou=m{step}");
                let prefix = format!(",{target}");
                let inside = superior == target || superior.ends_with(&prefix);
                let result = rename(&dir, &target, &new_rdn, Some(&superior)).await;
                assert_eq!(
                    result.is_ok(),
                    !inside,
                    "rename {target} under {superior}: {result:?}"
                );
                if !inside {
                    let new_dn = format!("{new_rdn},{superior}");
                    for d in dns.iter_mut() {
                        if *d == target {
                            *d = new_dn.clone();
                        } else if let Some(head) = d.strip_suffix(&prefix) {
                            *d = format!("{head},{new_dn}");
                        }
                    }
                }
            }
        }
    }
    model.extend(dns.iter().map(|d| (normalized(&dir, d), ())));
    check(&dir, &model);
}
