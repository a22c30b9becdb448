//! The write pipeline: hooks run in order inside the write's transaction, a refusal from any of them
//! refuses the write with its result code, and whatever hooks wrote commits or rolls back with it.

mod support;

use std::sync::{Arc, Mutex};

use canopy_core::check::entry_from_attributes_with;
use canopy_core::{Entry, LdapError};
use canopy_directory::OpenOptions;
use canopy_directory::{
    structural, Directory, Event, Pipeline, Proposed, Stamp, WriteHook, WriteOp,
};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::Schema;

use support::{write, ADMIN};

/// Records every call in a shared log; refuses where told; writes a meta key on commit.
struct Probe {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    refuse_prepare: bool,
    refuse_commit: bool,
    mark: Option<&'static [u8]>,
}

impl Probe {
    fn new(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Probe {
        Probe {
            name,
            log: Arc::clone(log),
            refuse_prepare: false,
            refuse_commit: false,
            mark: None,
        }
    }

    fn note(&self, what: String) {
        self.log.lock().unwrap().push(what);
    }
}

impl WriteHook for Probe {
    fn name(&self) -> &'static str {
        self.name
    }

    fn prepare(
        &self,
        _: &Directory,
        _: &WriteTxn<'_>,
        change: &mut Proposed<'_>,
    ) -> Result<(), LdapError> {
        self.note(format!("prepare {} {:?}", self.name, change.kind));
        if self.refuse_prepare {
            return Err(LdapError::new(ResultCode::ConstraintViolation, "refused"));
        }
        Ok(())
    }

    fn commit(
        &self,
        _: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        self.note(format!("commit {} {:?}", self.name, event.kind));
        if let Some(key) = self.mark {
            txn.put_meta(key, b"1")
                .map_err(canopy_directory::store_error)?;
        }
        if self.refuse_commit {
            return Err(LdapError::new(ResultCode::UnwillingToPerform, "late"));
        }
        Ok(())
    }
}

fn open(path: &std::path::Path, pipeline: Pipeline) -> Directory {
    let mut store = OpenOptions::new(path.to_path_buf());
    store.durable = false;
    let schema = Arc::new(Schema::builtin());
    Directory::open(schema, "dc=example,dc=com", Vec::new(), store, pipeline).unwrap()
}

fn entry(dir: &Directory, dn: &str, attrs: &[(&str, &str)]) -> Entry {
    let (dn, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    let mut grouped: Vec<PartialAttribute> = Vec::new();
    for (name, value) in attrs {
        let value = value.as_bytes().to_vec();
        match grouped.iter_mut().find(|a| a.name == *name) {
            Some(attr) => attr.values.push(value),
            None => grouped.push(PartialAttribute {
                name: name.to_string(),
                values: vec![value],
            }),
        }
    }
    let mut entry = entry_from_attributes_with(dir.schema(), dn, ndn, &grouped, false).unwrap();
    let structural = structural(dir, &entry).unwrap();
    Stamp::identify(&mut entry, ADMIN, &structural);
    entry
}

async fn add_suffix(dir: &Directory) -> Result<(), LdapError> {
    let suffix = entry(
        dir,
        "dc=example,dc=com",
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "Example"),
        ],
    );
    write(dir, WriteOp::Add(suffix)).await
}

fn exists(dir: &Directory, dn: &str) -> bool {
    let (_, ndn) = dir.normalize(dn.as_bytes()).unwrap();
    let txn = dir.read().unwrap();
    dir.lookup(&txn, &ndn).unwrap().is_some()
}

fn meta(dir: &Directory, key: &[u8]) -> Option<Vec<u8>> {
    dir.store().read().unwrap().get_meta(key).unwrap()
}

#[tokio::test]
async fn hooks_run_in_order_prepare_before_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let pipeline = Pipeline::standard()
        .then(Arc::new(Probe::new("first", &log)))
        .then(Arc::new(Probe::new("second", &log)));
    assert_eq!(pipeline.names(), ["stamping", "first", "second"]);
    let dir = open(tmp.path(), pipeline);
    add_suffix(&dir).await.unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        [
            "prepare first Add",
            "prepare second Add",
            "commit first Add",
            "commit second Add"
        ]
    );
}

#[tokio::test]
async fn a_prepare_refusal_refuses_the_write_with_its_code() {
    let tmp = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut refusing = Probe::new("refusing", &log);
    refusing.refuse_prepare = true;
    let dir = open(
        tmp.path(),
        Pipeline::standard()
            .then(Arc::new(refusing))
            .then(Arc::new(Probe::new("after", &log))),
    );
    let error = add_suffix(&dir).await.unwrap_err();
    assert_eq!(error.code, ResultCode::ConstraintViolation);
    assert!(!exists(&dir, "dc=example,dc=com"));
    // The refusal stops the chain: no later hook runs, no commit hook runs.
    assert_eq!(*log.lock().unwrap(), ["prepare refusing Add"]);
}

#[tokio::test]
async fn a_commit_refusal_rolls_back_the_change_and_what_hooks_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut marker = Probe::new("marker", &log);
    marker.mark = Some(b"probe-mark");
    let mut late = Probe::new("late", &log);
    late.refuse_commit = true;
    let dir = open(
        tmp.path(),
        Pipeline::standard()
            .then(Arc::new(marker))
            .then(Arc::new(late)),
    );
    let error = add_suffix(&dir).await.unwrap_err();
    assert_eq!(error.code, ResultCode::UnwillingToPerform);
    assert!(!exists(&dir, "dc=example,dc=com"));
    assert_eq!(meta(&dir, b"probe-mark"), None);

    // The same hook's write commits with a change that succeeds.
    let tmp = tempfile::tempdir().unwrap();
    let mut marker = Probe::new("marker", &log);
    marker.mark = Some(b"probe-mark");
    let dir = open(tmp.path(), Pipeline::standard().then(Arc::new(marker)));
    add_suffix(&dir).await.unwrap();
    assert!(exists(&dir, "dc=example,dc=com"));
    assert_eq!(meta(&dir, b"probe-mark"), Some(b"1".to_vec()));
}

#[tokio::test]
async fn stamping_sets_csns_in_commit_order_and_the_modifier() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open(tmp.path(), Pipeline::standard());
    add_suffix(&dir).await.unwrap();
    let (dn, ndn) = dir.normalize(b"dc=example,dc=com").unwrap();
    let csn = |dir: &Directory| {
        let txn = dir.read().unwrap();
        let (_, bytes) = dir.lookup(&txn, &ndn).unwrap().unwrap();
        let entry = Directory::parse_stored(bytes).unwrap().to_entry().unwrap();
        let value = |name: &str| entry.get(name).map(|a| a.values[0].clone()).unwrap();
        (
            value("entryCSN"),
            value("modifiersName"),
            value("createTimestamp"),
        )
    };
    let (mut last, _, created) = csn(&dir);
    assert_eq!(created.len(), "20261125000000Z".len());
    for n in 0..5 {
        let changes = vec![Change {
            operation: ModifyOperation::Replace,
            modification: PartialAttribute {
                name: "description".into(),
                values: vec![format!("change {n}").into_bytes()],
            },
        }];
        let op = WriteOp::Modify {
            dn: dn.clone(),
            ndn: ndn.clone(),
            changes,
        };
        write(&dir, op).await.unwrap();
        let (now, modifier, _) = csn(&dir);
        assert!(now > last, "{now:?} after {last:?}");
        assert_eq!(modifier, ADMIN.as_bytes());
        last = now;
    }
}

/// Registers an action with `after_commit` in its commit step; the action notes "recorded".
struct Recorder {
    log: Arc<Mutex<Vec<String>>>,
}

impl WriteHook for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn commit(
        &self,
        _: &Directory,
        _: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        let log = Arc::clone(&self.log);
        let kind = event.kind;
        canopy_directory::after_commit(move || {
            log.lock().unwrap().push(format!("recorded {kind:?}"))
        });
        Ok(())
    }
}

#[tokio::test]
async fn after_commit_actions_run_only_for_durable_writes() {
    // A later hook refuses: the write rolls back and the action never runs.
    let tmp = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut late = Probe::new("late", &log);
    late.refuse_commit = true;
    let recorder = Recorder {
        log: Arc::clone(&log),
    };
    let dir = open(
        tmp.path(),
        Pipeline::standard()
            .then(Arc::new(recorder))
            .then(Arc::new(late)),
    );
    add_suffix(&dir).await.unwrap_err();
    assert!(
        !log.lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("recorded")),
        "{log:?}"
    );

    // A write that commits runs its action once, before the writer answers it.
    let tmp = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder {
        log: Arc::clone(&log),
    };
    let dir = open(tmp.path(), Pipeline::standard().then(Arc::new(recorder)));
    add_suffix(&dir).await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["recorded Add"]);
    // A refused write (the entry exists) records nothing more.
    add_suffix(&dir).await.unwrap_err();
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn auditlog_writes_openldap_records_of_committed_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("audit.ldif");
    let hook = canopy_directory::overlay::auditlog::AuditLog::new(path.clone());
    let dir = open(
        &tmp.path().join("db"),
        Pipeline::standard().then(Arc::new(hook)),
    );
    add_suffix(&dir).await.unwrap();
    let (dn, ndn) = dir.normalize(b"dc=example,dc=com").unwrap();
    let changes = vec![Change {
        operation: ModifyOperation::Replace,
        modification: PartialAttribute {
            name: "description".into(),
            values: vec![b"caf\xc3\xa9".to_vec()],
        },
    }];
    write(&dir, WriteOp::Modify { dn, ndn, changes })
        .await
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<&str> = text.split("\n\n").filter(|r| !r.is_empty()).collect();
    assert_eq!(records.len(), 2, "{text}");
    let add = records[0];
    assert!(
        add.starts_with("# add ")
            && add
                .lines()
                .next()
                .unwrap()
                .ends_with(&format!(" dc=example,dc=com {ADMIN}")),
        "{add}"
    );
    assert!(
        add.contains("\ndn: dc=example,dc=com\nchangetype: add\n") && add.contains("\nentryCSN: "),
        "{add}"
    );
    assert!(
        add.lines().last().unwrap().starts_with("# end add "),
        "{add}"
    );
    let modify = records[1];
    // A value that is not a safe LDIF string is base64.
    assert!(modify.contains("changetype: modify\nreplace: description\ndescription:: Y2Fmw6k=\n-\nreplace: entryCSN\n"), "{modify}");
    assert!(
        modify.contains("replace: modifiersName\nmodifiersName: "),
        "{modify}"
    );
}
