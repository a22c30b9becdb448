//! Operating canopy (docs/operations.md), canopy's own tools (skipped for slapd): `canopy backup` of a
//! live database under a stream of acknowledged writes and `canopy restore` into a new directory,
//! `canopy verify` on good and deliberately damaged tables (damaged through LMDB directly, with heed),
//! restore's refusals, `canopy serve --check`, a graceful SIGTERM under writes, sd_notify readiness and
//! the plain progress lines of the offline tools.

use canopy_e2e::server::canopy_command;
use canopy_e2e::tempdir::TempDir;
use canopy_e2e::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// False (with the reason printed) when the suite runs against slapd.
fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} is canopy's own (slapd has slapcat/mdb_copy instead)");
        return false;
    }
    true
}

fn canopy(args: &[&str]) -> Out {
    let mut cmd = canopy_command();
    cmd.args(args);
    client::run(cmd, None)
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A write the server acknowledged: an add, or a modify that set `description`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ack {
    Add(String),
    Mod(String, String),
}

/// tests/e2e/py/stream_writes.py running against a server, its acknowledgements read on a thread.
struct Writer {
    child: Child,
    acks: mpsc::Receiver<Ack>,
    seen: Vec<Ack>,
}

impl Writer {
    fn start(s: &Server, parent: &str, first: u64, count: u64) -> Writer {
        let mut child = s.python_spawn(
            "stream_writes.py",
            &[parent, &first.to_string(), &count.to_string()],
        );
        let stdout = child.stdout.take().unwrap();
        let (tx, acks) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let ack = if let Some(dn) = line.strip_prefix("add ") {
                    Ack::Add(dn.to_lowercase())
                } else if let Some(rest) = line.strip_prefix("mod ") {
                    let (dn, value) = rest.split_once(' ').unwrap();
                    Ack::Mod(dn.to_lowercase(), value.to_string())
                } else {
                    continue;
                };
                if tx.send(ack).is_err() {
                    break;
                }
            }
        });
        Writer {
            child,
            acks,
            seen: Vec::new(),
        }
    }

    /// Waits until at least `n` writes are acknowledged in all.
    fn wait_for(&mut self, n: usize, s: &Server) {
        while self.seen.len() < n {
            match self.acks.recv_timeout(Duration::from_secs(30)) {
                Ok(ack) => self.seen.push(ack),
                Err(_) => {
                    let _ = self.child.kill();
                    let mut err = String::new();
                    let _ = self.child.stderr.take().unwrap().read_to_string(&mut err);
                    panic!(
                        "writer stalled after {} writes: {err}\n{}",
                        self.seen.len(),
                        s.log()
                    );
                }
            }
        }
    }

    /// Every write acknowledged so far (without waiting).
    fn acknowledged(&mut self) -> Vec<Ack> {
        self.seen.extend(self.acks.try_iter());
        self.seen.clone()
    }

    /// Waits for the writer to end; returns every acknowledged write and its standard error.
    fn finish(mut self) -> (Vec<Ack>, String) {
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut err);
        assert!(status.success(), "writer failed: {status}: {err}");
        // The reader thread ends with the pipe; collect what it still has.
        while let Ok(ack) = self.acks.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(ack);
        }
        (self.seen, err)
    }
}

/// The `description` of every entry under `parent`, by lower-cased DN.
fn descriptions(s: &Server, parent: &str) -> BTreeMap<String, String> {
    let out = s.search(
        &Bind::Root,
        &[
            "-E",
            "pr=500/noprompt",
            "-b",
            &format!("{parent},{SUFFIX}"),
            "-s",
            "one",
            "(objectClass=*)",
            "description",
        ],
    );
    out.expect_code(0, "listing the written entries");
    out.records()
        .iter()
        .map(|r| {
            let value = r.values("description").first().cloned().unwrap_or_default();
            (r.dn().to_lowercase(), value)
        })
        .collect()
}

/// Every acknowledged write in `acks` is visible in `stored`: each added entry, with the value of its
/// acknowledged modify.
fn assert_all_present(acks: &[Ack], stored: &BTreeMap<String, String>, when: &str) {
    let mut missing = Vec::new();
    for ack in acks {
        match ack {
            Ack::Add(dn) if !stored.contains_key(dn) => missing.push(format!("add {dn}")),
            Ack::Mod(dn, value) if stored.get(dn) != Some(value) => missing.push(format!(
                "mod {dn} to {value:?} (found {:?})",
                stored.get(dn)
            )),
            _ => {}
        }
    }
    assert!(
        missing.is_empty(),
        "{when}: {} of {} acknowledged writes missing, e.g. {:?}",
        missing.len(),
        acks.len(),
        &missing[..missing.len().min(5)]
    );
}

fn add_parent(s: &Server, ou: &str) {
    s.add(
        &Bind::Root,
        &format!("dn: ou={ou},{SUFFIX}\nobjectClass: organizationalUnit\nou: {ou}\n"),
    )
    .expect_code(0, "adding the parent of the written entries");
}

/// `canopy verify` on a data directory: (exit code, problems on stdout, summary on stderr).
fn verify(data: &Path) -> Out {
    canopy(&["verify", "--data", &path(data)])
}

#[test]
fn backup_under_writes_restores_every_acknowledged_write() {
    if !canopy_target("`canopy backup`/`restore`") {
        return;
    }
    let s = Server::start();
    add_parent(&s, "stream");
    let mut writer = Writer::start(&s, "ou=stream", 0, 400);
    writer.wait_for(40, &s);
    // Everything acknowledged up to here was acknowledged before the backup started.
    let before = writer.acknowledged();
    let scratch = TempDir::new("backup");
    let backup_dir = scratch.path().join("backup");
    let out = canopy(&["backup", &path(&backup_dir), "--data", &path(&s.data_dir())]);
    out.expect_code(0, "canopy backup while writes go on");
    // The writes went on during the backup (it did not stop them).
    let during = writer.acknowledged().len();
    writer.wait_for(during + 10, &s);
    let (all, _) = writer.finish();
    assert!(all.len() > before.len());
    // The progress lines of a standard error that is not a terminal: plain, no carriage returns.
    assert!(
        out.stderr.contains("backup: ") && out.stderr.contains(", done"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains('\r'), "{:?}", out.stderr);
    let manifest = std::fs::read_to_string(backup_dir.join("manifest.json")).unwrap();
    for field in [
        "\"sha256\"",
        "\"suffix\": \"dc=example,dc=com\"",
        "\"last_id\"",
        "\"data.mdb\"",
    ] {
        assert!(manifest.contains(field), "{field} in {manifest}");
    }

    let mut restored = Server::unstarted(Target::Canopy);
    let out = canopy(&[
        "restore",
        &path(&backup_dir),
        "--data",
        &path(&restored.data_dir()),
    ]);
    out.expect_code(0, "canopy restore into a new directory");
    let verified = verify(&restored.data_dir());
    verified.expect_code(0, "canopy verify of the restored database");
    assert!(
        verified.stderr.contains("; 0 problems"),
        "{}",
        verified.stderr
    );
    restored.restart();
    let stored = descriptions(&restored, "ou=stream");
    assert_all_present(&before, &stored, "after restore");
    // The restored database is the backup's snapshot: as many entries as its manifest says (the base
    // directory, ou=stream and the stream's entries), and fewer stream entries than were written in all.
    let base = std::fs::read_to_string(base_ldif())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("dn: "))
        .count();
    assert!(
        manifest.contains(&format!("\"entries\": {},", base + 1 + stored.len())),
        "{} stream entries restored; manifest:\n{manifest}",
        stored.len()
    );
    assert!(stored.len() < all.iter().filter(|a| matches!(a, Ack::Add(_))).count());
    restored
        .read(&Bind::Root, &user_dn("alice"), &["mail"])
        .expect_code(0, "a base entry after restore");
    // The restored server takes writes, and `verify` is clean beside it while it runs.
    add_parent(&restored, "after");
    verify(&restored.data_dir()).expect_code(0, "verify beside the restored server");
}

/// The frontend's olcSizeLimit as the config root DN reads it.
fn live_size_limit(s: &Server) -> Vec<String> {
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let out = s.read(
        &admin,
        "olcDatabase={-1}frontend,cn=config",
        &["olcSizeLimit"],
    );
    out.expect_code(0, "read olcSizeLimit");
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("olcSizeLimit: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn backup_and_restore_keep_the_live_configuration() {
    if !canopy_target("`canopy backup`/`restore` of the cn=config store") {
        return;
    }
    let mut s = Server::start_with_config_tree();
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    let set = |s: &Server, n: u32| {
        let ldif = format!(
            "dn: olcDatabase={{-1}}frontend,cn=config\nchangetype: modify\n\
             replace: olcSizeLimit\nolcSizeLimit: {n}\n"
        );
        s.modify(&admin, &ldif).expect_code(0, "olcSizeLimit");
    };
    set(&s, 7);
    let scratch = TempDir::new("backup-config");
    let backup_dir = scratch.path().join("b");
    let out = canopy(&["backup", &path(&backup_dir), "--data", &path(&s.data_dir())]);
    out.expect_code(0, "backup");
    assert!(
        out.stdout.contains("with the cn=config store"),
        "{}",
        out.stdout
    );
    let manifest = std::fs::read_to_string(backup_dir.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"config/data.mdb\""), "{manifest}");
    // A change after the backup is undone by the restore, as a data change would be.
    set(&s, 9);
    assert_eq!(live_size_limit(&s), ["9"]);
    s.terminate();
    let out = canopy(&[
        "restore",
        &path(&backup_dir),
        "--data",
        &path(&s.data_dir()),
        "--force",
    ]);
    out.expect_code(0, "restore");
    assert!(
        out.stdout.contains("restored the cn=config store"),
        "{}",
        out.stdout
    );
    s.restart();
    assert_eq!(live_size_limit(&s), ["7"]);
    // A damaged configuration store in a backup is refused before anything is touched.
    let store = backup_dir.join("config").join("data.mdb");
    let mut bytes = std::fs::read(&store).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&store, bytes).unwrap();
    s.terminate();
    let out = canopy(&[
        "restore",
        &path(&backup_dir),
        "--data",
        &path(&s.data_dir()),
        "--force",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("the backup is damaged"),
        "{}",
        out.stderr
    );
}

#[test]
fn verify_names_damaged_index_and_dn2id_records() {
    if !canopy_target("`canopy verify`") {
        return;
    }
    let mut s = Server::start();
    // Renames of whole subtrees (one under a new parent), a delete and value changes first: a database
    // written every way the server writes must verify clean.
    s.modify(
        &Bind::Root,
        &format!(
            "dn: ou=groups,{SUFFIX}\nchangetype: modrdn\nnewrdn: ou=teams\ndeleteoldrdn: 1\n\n\
             dn: ou=apollo,ou=projects,{SUFFIX}\nchangetype: modrdn\nnewrdn: ou=artemis\n\
             deleteoldrdn: 0\nnewsuperior: ou=people,{SUFFIX}\n\n\
             dn: {}\nchangetype: modify\nreplace: mail\nmail: carol@example.org\n-\nadd: cn\ncn: Carrie\n\n\
             dn: {}\nchangetype: delete\n",
            user_dn("carol"),
            user_dn("dave")
        ),
    )
    .expect_code(0, "renames, a modify and a delete");
    let clean = verify(&s.data_dir());
    clean.expect_code(0, "verify of an intact database beside its server");
    assert_eq!(clean.stdout.trim(), "", "no problem lines expected");
    assert!(clean.stderr.contains("; 0 problems"), "{}", clean.stderr);
    assert_eq!(s.terminate().code(), Some(0));

    let damage = damage_tables(&s.data_dir());
    let out = verify(&s.data_dir());
    assert_eq!(
        out.code, 1,
        "verify must fail: {}\n{}",
        out.stdout, out.stderr
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    let alice = damage.alice;
    let bob = damage.bob;
    let expected = [
        // The removed index pair, named by table, key and ID.
        format!("idx.mail: key \\02alice@example.com id {alice}: missing: entry {alice} (uid=alice,ou=people,dc=example,dc=com) has this key"),
        // The index pair naming an entry without that value.
        format!("idx.mail: key \\02nobody@example.com id {alice}: lists entry {alice} (uid=alice,ou=people,dc=example,dc=com), which has no such key"),
        // Bob's dn2id record moved to a wrong key: the entry lacks its record, the wrong key is named.
        format!("dn2id: key \\01dc=com\\00dc=example\\00ou=people\\00uid=bob\\00 id {bob}: entry {bob} (uid=bob,ou=people,dc=example,dc=com) has no dn2id record"),
        format!("dn2id: key \\01dc=com\\00dc=example\\00ou=people\\00uid=bobby\\00 id {bob}: points to entry {bob} (uid=bob,ou=people,dc=example,dc=com), whose DN has another key"),
        // Erin dropped from the children of ou=people.
        format!("dn2children: key {} id {}: entry uid=erin,ou=people,dc=example,dc=com is missing from the children of its parent {}", damage.people_key, damage.erin, damage.people),
    ];
    for want in &expected {
        assert!(
            has(want),
            "missing report line\n  {want}\nin\n{}",
            out.stdout
        );
    }
    assert_eq!(
        lines.len(),
        expected.len(),
        "exactly the damage is reported:\n{}",
        out.stdout
    );
    assert!(out.stderr.contains("5 problems"), "{}", out.stderr);
}

/// IDs of the entries `damage_tables` broke.
struct Damage {
    alice: u64,
    bob: u64,
    erin: u64,
    /// ou=people: its ID and that ID as verify prints a dn2children key.
    people: u64,
    people_key: String,
}

/// Through LMDB directly (heed), with the server stopped: drops alice's mail key from `idx.mail`, adds a
/// key she does not have, moves bob's dn2id record to a wrong key and drops erin from dn2children.
fn damage_tables(data: &Path) -> Damage {
    use heed::types::Bytes;
    use heed::{CommitOrAbort, DatabaseFlags, EnvOpenOptions};
    let dn_key = |uid: &str| {
        let mut key = vec![1u8];
        for rdn in ["dc=com", "dc=example", "ou=people", uid]
            .into_iter()
            .filter(|r| !r.is_empty())
        {
            key.extend_from_slice(rdn.as_bytes());
            key.push(0);
        }
        key
    };
    let mut options = EnvOpenOptions::new().read_txn_without_tls();
    options.max_dbs(128).map_size(1 << 30);
    // SAFETY: the server is stopped; this test is the only process using the directory.
    let env = unsafe { options.open(data) }.expect("opening the LMDB environment");
    let wtxn = env.write_txn().unwrap();
    let mut ids = (0, 0, 0, 0);
    env.create_databases_and_commit(wtxn, |opener, wtxn| {
        let mail = opener
            .database_options()
            .types::<Bytes, Bytes>()
            .flags(DatabaseFlags::DUP_SORT | DatabaseFlags::DUP_FIXED)
            .name("idx.mail")
            .create(wtxn)?;
        let dn2id = opener
            .database_options()
            .types::<Bytes, Bytes>()
            .name("dn2id")
            .create(wtxn)?;
        let children = opener
            .database_options()
            .types::<Bytes, Bytes>()
            .flags(DatabaseFlags::DUP_SORT | DatabaseFlags::DUP_FIXED)
            .name("dn2children")
            .create(wtxn)?;
        let people = dn2id.get(wtxn, &dn_key("")).unwrap().unwrap().to_vec();
        let erin = dn2id
            .get(wtxn, &dn_key("uid=erin"))
            .unwrap()
            .unwrap()
            .to_vec();
        assert!(children.delete_one_duplicate(wtxn, &people, &erin)?);
        let alice = dn2id
            .get(wtxn, &dn_key("uid=alice"))
            .unwrap()
            .unwrap()
            .to_vec();
        let bob = dn2id
            .get(wtxn, &dn_key("uid=bob"))
            .unwrap()
            .unwrap()
            .to_vec();
        assert!(mail.delete_one_duplicate(wtxn, b"\x02alice@example.com", &alice)?);
        mail.put(wtxn, b"\x02nobody@example.com", &alice)?;
        assert!(dn2id.delete(wtxn, &dn_key("uid=bob"))?);
        dn2id.put(wtxn, &dn_key("uid=bobby"), &bob)?;
        let id = |raw: &[u8]| u64::from_be_bytes(raw.try_into().unwrap());
        ids = (id(&alice), id(&bob), id(&erin), id(&people));
        Ok::<_, heed::Error>(CommitOrAbort::<_, ()>::Commit(dn2id))
    })
    .expect("damaging the tables");
    Damage {
        alice: ids.0,
        bob: ids.1,
        erin: ids.2,
        people: ids.3,
        people_key: ids
            .3
            .to_be_bytes()
            .iter()
            .map(|b| format!("\\{b:02x}"))
            .collect(),
    }
}

#[test]
fn restore_refuses_a_running_server_a_full_target_and_a_damaged_backup() {
    if !canopy_target("`canopy restore`") {
        return;
    }
    let mut s = Server::start();
    let scratch = TempDir::new("restore");
    let backup_dir = scratch.path().join("b");
    canopy(&["backup", &path(&backup_dir), "--data", &path(&s.data_dir())])
        .expect_code(0, "backup");
    let data = path(&s.data_dir());
    let pid = s.pid().unwrap();

    // A server runs on the target: refused, naming its pid; the server's data untouched.
    let out = canopy(&["restore", &path(&backup_dir), "--data", &data, "--force"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("in use by canopy process {pid} serve")),
        "{}",
        out.stderr
    );
    s.read(&Bind::Root, &user_dn("alice"), &["cn"])
        .expect_code(0, "the server still serves");
    // Offline writers are refused beside it too.
    let out = canopy(&["reindex", "--data", &data]);
    assert_eq!(out.code, 1, "{}", out.stderr);

    // A backup into a non-empty directory is refused.
    let out = canopy(&["backup", &path(&backup_dir), "--data", &data]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is not empty"), "{}", out.stderr);

    // Stopped: a non-empty target needs --force.
    s.delete_dn(&user_dn("alice"));
    assert_eq!(s.terminate().code(), Some(0));
    let out = canopy(&["restore", &path(&backup_dir), "--data", &data]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("is not empty") && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    // A damaged copy is refused before anything is touched.
    let damaged = scratch.path().join("damaged");
    std::fs::create_dir_all(damaged.join("tls")).unwrap();
    for name in ["data.mdb", "manifest.json", "tls/cert.pem", "tls/key.pem"] {
        if backup_dir.join(name).exists() {
            std::fs::copy(backup_dir.join(name), damaged.join(name)).unwrap();
        }
    }
    let mut bytes = std::fs::read(damaged.join("data.mdb")).unwrap();
    let last = bytes.len() - 100;
    bytes[last] ^= 0xff;
    std::fs::write(damaged.join("data.mdb"), bytes).unwrap();
    let out = canopy(&["restore", &path(&damaged), "--data", &data, "--force"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("data.mdb: sha256") && out.stderr.contains("damaged"),
        "{}",
        out.stderr
    );

    let out = canopy(&["restore", &path(&backup_dir), "--data", &data, "--force"]);
    out.expect_code(0, "restore --force over the old database");
    s.restart();
    s.read(&Bind::Root, &user_dn("alice"), &["cn"])
        .expect_code(0, "alice, deleted after the backup, is back");
}

trait DeleteDn {
    fn delete_dn(&self, dn: &str);
}

impl DeleteDn for Server {
    fn delete_dn(&self, dn: &str) {
        self.tool("ldapdelete", &Bind::Root, &[dn], None)
            .expect_code(0, "ldapdelete");
    }
}

#[test]
fn serve_check_accepts_a_good_configuration_and_explains_a_bad_one() {
    if !canopy_target("`canopy serve --check`") {
        return;
    }
    let scratch = TempDir::new("check");
    let good = scratch.path().join("good.toml");
    std::fs::write(
        &good,
        "suffix = \"dc=example,dc=com\"\nroot_dn = \"cn=admin,dc=example,dc=com\"\n\
         listen = [\"ldap://127.0.0.1:3389\"]\n",
    )
    .unwrap();
    let out = canopy(&["serve", "--check", "--config", &path(&good)]);
    out.expect_code(0, "serve --check of a good configuration");
    assert!(out.stdout.contains("configuration OK"), "{}", out.stdout);

    let cases = [
        (
            "index = unknown attribute",
            "indexes = [{ attr = \"noSuchAttribute\", kinds = [\"eq\"] }]\n",
            "noSuchAttribute",
        ),
        (
            "an unknown password scheme",
            "password_hash = \"{NOPE}\"\n",
            "password_hash",
        ),
        (
            "a TLS key file that does not exist",
            "[tls]\ncert_file = \"/nonexistent/cert.pem\"\nkey_file = \"/nonexistent/key.pem\"\n",
            "/nonexistent/cert.pem",
        ),
        ("a listener URL", "listen = [\"http://x\"]\n", "http://x"),
    ];
    for (what, toml, named) in cases {
        let bad = scratch.path().join("bad.toml");
        std::fs::write(&bad, toml).unwrap();
        let out = canopy(&["serve", "--check", "--config", &path(&bad)]);
        assert_eq!(out.code, 1, "{what}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains(named),
            "{what}: the message names {named:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn sigterm_under_writes_exits_0_and_keeps_every_acknowledged_write() {
    if !canopy_target("canopy's graceful shutdown") {
        return;
    }
    let mut s = Server::start();
    add_parent(&s, "term");
    let mut writer = Writer::start(&s, "ou=term", 0, 100_000);
    writer.wait_for(60, &s);
    let status = s.terminate();
    assert_eq!(
        status.code(),
        Some(0),
        "exit status after SIGTERM\n{}",
        s.log()
    );
    let (acked, err) = writer.finish();
    assert!(
        err.contains("stopped"),
        "the writer saw the shutdown: {err}"
    );
    // Drained, not cut off at the grace period.
    assert!(
        s.log().contains("shutting down") && s.log().contains("all connections closed"),
        "{}",
        s.log()
    );
    s.restart();
    let stored = descriptions(&s, "ou=term");
    assert_all_present(&acked, &stored, "after SIGTERM and restart");
    verify(&s.data_dir()).expect_code(0, "verify after a graceful shutdown");
}

#[test]
fn sd_notify_readiness_and_private_data_directory() {
    if !canopy_target("sd_notify") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixDatagram;
    let scratch = TempDir::new("notify");
    let socket = scratch.path().join("notify.sock");
    let listener = UnixDatagram::bind(&socket).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let data = scratch.path().join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("ldap://127.0.0.1:{port}");
    let mut child = canopy_command()
        .args(["serve", "--data", &path(&data), "--listen", &url])
        .env("CANOPY_ROOTPW", ROOT_PW)
        .env("NOTIFY_SOCKET", &socket)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let got = listener.recv(&mut buf);
    let ready = got.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned());
    // Ready means listening: a client connects at once.
    let connected = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    let mode = std::fs::metadata(&data).map(|m| m.permissions().mode() & 0o777);
    let files: BTreeSet<String> = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let m = e.metadata().ok()?;
            (m.is_file() && m.permissions().mode() & 0o077 != 0)
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let status = child.wait().unwrap();
    let stopping = listener
        .recv(&mut buf)
        .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned());
    let ready = ready.unwrap_or_else(|e| panic!("no READY=1 within {:?}: {e}", started.elapsed()));
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    assert!(
        ready.contains(&format!("MAINPID={}", child.id())),
        "{ready:?}"
    );
    assert!(connected, "listening once ready");
    assert_eq!(mode.unwrap(), 0o700, "a new data directory is private");
    assert!(files.is_empty(), "files open to others: {files:?}");
    assert_eq!(stopping.unwrap(), "STOPPING=1");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn offline_tools_write_plain_progress_lines_when_not_on_a_terminal() {
    if !canopy_target("canopy's progress output") {
        return;
    }
    let scratch = TempDir::new("progress");
    let data = scratch.path().join("data");
    let ldif = scratch.path().join("bulk.ldif");
    let base = std::fs::read_to_string(base_ldif()).unwrap();
    std::fs::write(&ldif, format!("{base}\n{}", bulk_ldif(2000))).unwrap();
    let import = canopy(&["import", &path(&ldif), "--data", &path(&data)]);
    import.expect_code(0, "import");
    let export = canopy(&[
        "export",
        &path(&scratch.path().join("out.ldif")),
        "--data",
        &path(&data),
    ]);
    export.expect_code(0, "export");
    let reindex = canopy(&["reindex", "--data", &path(&data)]);
    reindex.expect_code(0, "reindex");
    for (tool, out) in [
        ("import", &import),
        ("export", &export),
        ("reindex", &reindex),
    ] {
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("{tool}: ")) && l.ends_with(", done"))
            .unwrap_or_else(|| panic!("{tool}: no final progress line in {:?}", out.stderr));
        assert!(line.contains("(100%)"), "{tool}: {line}");
        assert!(
            !out.stderr.contains('\r') && !out.stderr.contains('\x1b'),
            "{tool}: control characters in {:?}",
            out.stderr
        );
    }
}
