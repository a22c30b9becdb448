//! Canopy's own tools and configuration, which slapd does not share (skipped with a message when
//! the target is slapd): `canopy passwd` hashes that bind, `canopy reindex`, configuration errors
//! naming file and line, extra schema files, the generated root password of a first start, and what a
//! killed `canopy import` leaves.

use canopy_e2e::server::canopy_command;
use canopy_e2e::tempdir::TempDir;
use canopy_e2e::*;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// False (with the reason printed) when the suite runs against slapd.
fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} is canopy's own, slapd has no equivalent to compare");
        return false;
    }
    true
}

fn canopy(args: &[&str]) -> Out {
    let mut cmd = canopy_command();
    cmd.args(args);
    client::run(cmd, None)
}

#[test]
fn passwd_hashes_bind() {
    if !canopy_target("`canopy passwd`") {
        return;
    }
    let s = Server::start();
    let alice = user_dn("alice");
    let schemes = [
        "{SSHA}",
        "{SSHA512}",
        "{CRYPT}",
        "{ARGON2}",
        "{PBKDF2-SHA512}",
    ];
    for scheme in schemes {
        let secret = format!("x {scheme} secret");
        let out = canopy(&["passwd", "-H", scheme, "-s", &secret]);
        out.expect_code(0, &format!("canopy passwd -H {scheme}"));
        let hash = out.stdout.trim_end_matches('\n');
        assert!(
            hash.to_ascii_uppercase().starts_with(scheme) && !hash.contains('\n'),
            "canopy passwd -H {scheme} printed {:?}",
            out.stdout
        );
        let set = format!(
            "dn: {alice}\nchangetype: modify\nreplace: userPassword\nuserPassword: {hash}\n"
        );
        s.modify(&Bind::Root, &set)
            .expect_code(0, &format!("setting a {scheme} hash"));
        let ok = s.whoami(Via::Ldap, &Bind::Simple(alice.clone(), secret.clone()));
        ok.expect_code(
            0,
            &format!("bind with the secret of a {scheme} hash {hash}"),
        );
        assert_eq!(ok.stdout.trim(), format!("dn:{alice}"));
        let wrong = s.whoami(
            Via::Ldap,
            &Bind::Simple(alice.clone(), format!("{secret}!")),
        );
        wrong.expect_code(49, &format!("bind with a wrong secret against {scheme}"));
    }

    // Without -s the secret comes from standard input (one line).
    let mut cmd = canopy_command();
    cmd.args(["passwd", "-H", "{SSHA}"]);
    let out = client::run(cmd, Some("from stdin\n"));
    out.expect_code(0, "canopy passwd reading standard input");
    let set = format!(
        "dn: {alice}\nchangetype: modify\nreplace: userPassword\nuserPassword: {}\n",
        out.stdout.trim()
    );
    s.modify(&Bind::Root, &set).expect_code(0, "setting it");
    s.whoami(Via::Ldap, &Bind::Simple(alice.clone(), "from stdin".into()))
        .expect_code(0, "bind with the secret given on standard input");
}

/// Searches whose candidates come from the default indexes (eq and sub), as the root DN.
fn indexed_searches(s: &Server) -> String {
    let mut all = String::new();
    for filter in [
        "(uid=alice)",
        "(uid=*o*)",
        "(cn=*smith*)",
        "(sn=M*)",
        "(mail=*@example.com)",
        "(objectClass=posixGroup)",
        "(uidNumber=1002)",
        "(gidNumber=1001)",
        "(memberUid=alice)",
        "(&(objectClass=inetOrgPerson)(cn=*a*))",
        "(description=reindexed)",
    ] {
        let out = s.search(&Bind::Root, &["-b", SUFFIX, filter, "1.1"]);
        all.push_str(&format!(
            "## {filter}\n# rc: {}\n{}\n",
            out.code,
            out.ldif()
        ));
    }
    all
}

#[test]
fn reindex_keeps_search_results() {
    if !canopy_target("`canopy reindex`") {
        return;
    }
    let mut s = Server::start_imported(&base_ldif());
    // A write after the import, so the rebuilt indexes must cover online changes too.
    let change = format!(
        "dn: uid=zed,ou=people,{SUFFIX}\nchangetype: add\nobjectClass: inetOrgPerson\n\
         uid: zed\ncn: Zed Smith\nsn: Smith\nmail: zed@example.com\ndescription: reindexed\n"
    );
    s.modify(&Bind::Root, &change)
        .expect_code(0, "an add before reindexing");
    let before = indexed_searches(&s);
    assert!(
        before.contains("uid=zed"),
        "the added entry is not found:\n{before}"
    );

    s.kill9();
    let mut cmd = canopy_command();
    cmd.arg("reindex")
        .arg("--data")
        .arg(s.data_dir())
        .env("CANOPY_ROOTPW", ROOT_PW);
    client::run(cmd, None).expect_code(0, "canopy reindex on the stopped server's data");
    s.restart();
    let after = indexed_searches(&s);
    assert!(
        before == after,
        "indexed searches changed after reindex:\n{}",
        expect::diff(&before, &after)
    );
}

/// The `description` values of the first database's monitor entry that describe the index on `attr`.
fn index_line(s: &Server, attr: &str) -> Option<String> {
    let out = s.read(
        &Bind::Root,
        "cn=Database 0,cn=Databases,cn=Monitor",
        &["description"],
    );
    out.expect_code(0, "the database's monitor entry");
    let prefix = format!("index {attr} ");
    let records = out.records();
    let line = records
        .first()?
        .values("description")
        .into_iter()
        .find(|v| v.starts_with(&prefix));
    line.map(|v| v.to_string())
}

#[test]
fn an_index_added_to_the_configuration_is_built_online_at_restart() {
    if !canopy_target("online index builds") {
        return;
    }
    let without = "indexes = [{ attr = \"objectClass\", kinds = [\"eq\"] }, { attr = \"uid\", kinds = [\"eq\"] }]\n";
    let with = "indexes = [{ attr = \"objectClass\", kinds = [\"eq\"] }, { attr = \"uid\", kinds = [\"eq\"] }, { attr = \"description\", kinds = [\"eq\", \"sub\"] }]\n";
    let mut s = Server::start_canopy_with_config(without);
    let mut ldif = String::new();
    for i in 0..300 {
        ldif.push_str(&format!(
            "dn: uid=bulk{i},ou=people,{SUFFIX}\nchangetype: add\nobjectClass: inetOrgPerson\n\
             uid: bulk{i}\ncn: Bulk {i}\nsn: Bulk\ndescription: group{}\n\n",
            i % 10
        ));
    }
    s.modify(&Bind::Root, &ldif).expect_code(0, "300 adds");
    let search = |s: &Server| {
        let out = s.search(&Bind::Root, &["-b", SUFFIX, "(description=group3)", "1.1"]);
        out.expect_code(0, "search on description");
        let sub = s.search(&Bind::Root, &["-b", SUFFIX, "(description=*oup7*)", "1.1"]);
        sub.expect_code(0, "substring search on description");
        (out.ldif(), sub.ldif())
    };
    let before = search(&s);
    assert_eq!(before.0.matches("dn: ").count(), 30, "{}", before.0);
    assert!(index_line(&s, "description").is_none());

    s.set_canopy_config(with);
    s.restart();
    // The build runs in the background: poll the monitor (bounded), answers stay the same throughout.
    let started = Instant::now();
    loop {
        assert_eq!(search(&s), before, "answers changed while the index builds");
        let line = index_line(&s, "description").expect("the new index is in the monitor");
        if line == "index description eq,sub: complete" {
            break;
        }
        assert!(line.contains("building"), "{line}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not complete after 30 s: {line}\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(search(&s), before);
    s.canopy_tool("verify", &[])
        .expect_code(0, "verify with the new index complete");
    assert!(s.log().contains("index complete"), "{}", s.log());

    // Dropped from the configuration: gone from the store at the next start, answers the same.
    s.set_canopy_config(without);
    s.restart();
    assert!(index_line(&s, "description").is_none());
    assert_eq!(search(&s), before);
    s.canopy_tool("verify", &[])
        .expect_code(0, "verify after the drop");
}

/// Runs `canopy ARGS` in `dir` and gives it `limit` to exit; a server that starts despite a bad
/// configuration is killed and reported as exit code -1.
fn run_briefly(dir: &Path, args: &[&str], limit: Duration) -> Out {
    let mut cmd = canopy_command();
    cmd.args(args)
        .current_dir(dir)
        .env("CANOPY_ROOTPW", ROOT_PW)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + limit;
    // The outputs are small error messages: they fit in the pipes while we wait.
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn bad_config_names_file_and_line() {
    if !canopy_target("the TOML configuration file") {
        return;
    }
    let dir = TempDir::new("badconf");
    let listen = format!("ldap://127.0.0.1:{}", free_port());
    let cases = [
        ("unknown key", "suffix = \"dc=example,dc=com\"\nbogus = 1\n"),
        (
            "syntax error",
            "suffix = \"dc=example,dc=com\"\nlisten = [\n",
        ),
        (
            "wrong type",
            "suffix = \"dc=example,dc=com\"\ndurable = \"yes\"\n",
        ),
        ("[limits] unknown key", "[limits]\nsize_limt = 10\n"),
    ];
    for (what, text) in cases {
        std::fs::write(dir.path().join("bad.toml"), text).unwrap();
        let out = run_briefly(
            dir.path(),
            &[
                "serve", "--config", "bad.toml", "--data", "data", "--listen", &listen,
            ],
            Duration::from_secs(10),
        );
        assert!(
            out.code > 0 && out.stderr.contains("bad.toml:2:"),
            "{what}: expected a failure naming bad.toml:2:, got exit {}\nstderr:\n{}",
            out.code,
            out.stderr
        );
    }
}

const LOCAL_SCHEMA: &str = "\
# A made-up schema for the test (OIDs under a private enterprise number).
attributetype ( 1.3.6.1.4.1.99999.1.1 NAME 'canopyTestColour'
    DESC 'a favourite colour'
    EQUALITY caseIgnoreMatch
    SUBSTR caseIgnoreSubstringsMatch
    SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )

objectclass ( 1.3.6.1.4.1.99999.2.1 NAME 'canopyTestExtra'
    DESC 'an auxiliary class for the test'
    SUP top AUXILIARY
    MAY canopyTestColour )
";

#[test]
fn schema_files_extend_the_schema() {
    if !canopy_target("`schema_files` in the configuration") {
        return;
    }
    let scratch = TempDir::new("schema");
    let file = scratch.path().join("local.schema");
    std::fs::write(&file, LOCAL_SCHEMA).unwrap();
    let s = Server::start_canopy_with_config(&format!("schema_files = [{:?}]\n", file));
    let alice = user_dn("alice");
    let add = format!(
        "dn: {alice}\nchangetype: modify\nadd: objectClass\nobjectClass: canopyTestExtra\n-\n\
         add: canopyTestColour\ncanopyTestColour: Teal\n"
    );
    s.modify(&Bind::Root, &add)
        .expect_code(0, "using the custom class and attribute");
    let found = s.search(
        &Bind::Root,
        &["-b", SUFFIX, "(canopyTestColour=te*)", "canopyTestColour"],
    );
    found.expect_code(0, "searching the custom attribute");
    assert_eq!(
        found.ldif().trim(),
        format!("dn: {alice}\ncanopyTestColour: Teal"),
        "search on the custom attribute"
    );
    // The attribute is only allowed with its class (65 objectClassViolation).
    let bob = format!(
        "dn: {}\nchangetype: modify\nadd: canopyTestColour\ncanopyTestColour: Red\n",
        user_dn("bob")
    );
    s.modify(&Bind::Root, &bob)
        .expect_code(65, "the custom attribute without its class");

    let schema = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "cn=Subschema",
            "-s",
            "base",
            "(objectClass=subschema)",
            "attributeTypes",
            "objectClasses",
        ],
    );
    schema.expect_code(0, "reading cn=Subschema");
    let has = |attr: &str, oid: &str, words: &[&str]| {
        let defs: Vec<String> = schema
            .records()
            .iter()
            .flat_map(|r| r.values(attr))
            .filter(|v| v.starts_with(&format!("( {oid} ")))
            .collect();
        assert_eq!(defs.len(), 1, "{attr} {oid} in cn=Subschema: {defs:?}");
        for w in words {
            assert!(defs[0].contains(w), "{attr} {oid} lacks {w}: {}", defs[0]);
        }
    };
    has(
        "attributeTypes",
        "1.3.6.1.4.1.99999.1.1",
        &["NAME 'canopyTestColour'", "EQUALITY caseIgnoreMatch"],
    );
    has(
        "objectClasses",
        "1.3.6.1.4.1.99999.2.1",
        &["NAME 'canopyTestExtra'", "AUXILIARY", "canopyTestColour"],
    );
}

/// Kills the child on drop, so a failing assertion leaves no server behind.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn whoami_root(url: &str, pw: &str) -> Out {
    let mut cmd = Command::new("ldapwhoami");
    cmd.args(["-x", "-H", url, "-D", ROOT_DN, "-w", pw]);
    client::run(cmd, None)
}

/// Starts `canopy serve` with no configuration and no CANOPY_ROOTPW in `dir`, waits until it
/// answers, and returns it with what it printed so far (stdout and stderr, from files).
fn serve_bare(dir: &Path, run: &str) -> (Guard, String, String) {
    let url = format!("ldap://127.0.0.1:{}", free_port());
    let out_path = dir.join(format!("{run}.out"));
    let err_path = dir.join(format!("{run}.err"));
    let mut cmd = canopy_command();
    cmd.args(["serve", "--listen", &url])
        .current_dir(dir)
        .env_remove("CANOPY_ROOTPW")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = Guard(cmd.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "canopy serve exited with {status}:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        let mut probe = Command::new("ldapsearch");
        probe.args(["-x", "-H", &url, "-b", "", "-s", "base", "1.1"]);
        if client::run(probe, None).code == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "canopy serve did not answer on {url}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let printed = std::fs::read_to_string(&out_path).unwrap_or_default()
        + &std::fs::read_to_string(&err_path).unwrap_or_default();
    (child, url, printed)
}

#[test]
fn first_start_generates_root_password() {
    if !canopy_target("the generated root password") {
        return;
    }
    let scratch = TempDir::new("firststart");
    let dir = scratch.path();
    let (first, url, printed) = serve_bare(dir, "first");
    assert!(
        dir.join("canopy-data").is_dir(),
        "./canopy-data was not created"
    );
    let line = printed
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("password") && l.contains(ROOT_DN))
        .unwrap_or_else(|| panic!("no generated password in the output:\n{printed}"));
    let password = line
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        password.len() >= 8,
        "a weak generated password {password:?} in {line:?}"
    );
    assert_eq!(
        printed.matches(password.as_str()).count(),
        1,
        "the password must be printed exactly once:\n{printed}"
    );
    let ok = whoami_root(&url, &password);
    ok.expect_code(0, "bind with the generated password");
    assert_eq!(ok.stdout.trim(), format!("dn:{ROOT_DN}"));
    whoami_root(&url, "secret").expect_code(49, "bind with another password");
    drop(first);

    let (_second, url, printed) = serve_bare(dir, "second");
    assert!(
        !printed.contains(password.as_str()) && !printed.to_ascii_lowercase().contains("generated"),
        "the second start printed a password again:\n{printed}"
    );
    whoami_root(&url, &password).expect_code(0, "the same password after a restart");
}

/// Pages in use in the last committed state of the LMDB file `path` (`mm_last_pg` of the meta page with
/// the higher `mm_txnid`), read with plain reads while another process writes it; None before both
/// meta pages are there. Layout of `MDB_meta` (lmdb.h, 64-bit): after the 16-byte page header, magic and
/// version (4 + 4), address and map size (8 + 8), two `MDB_db` records of 48 bytes (the first one's
/// `md_pad` holds the page size), the last page number, the transaction ID.
fn committed_pages(path: &Path) -> Option<u64> {
    // The two meta pages only: the file is as large as the map (sparse) while the import runs.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path).ok()?, 2 * 65536),
        &mut bytes,
    )
    .ok()?;
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    let page_size = u32::from_le_bytes(bytes.get(40..44)?.try_into().ok()?) as usize;
    let metas = [0, page_size];
    let (last_page, _) = metas
        .iter()
        .map(|&base| Some((word(base + 136)?, word(base + 144)?)))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max_by_key(|&(_, txnid)| txnid)?;
    Some(last_page)
}

/// `canopy import` killed with SIGKILL part-way: what it leaves is consistent (`canopy verify` clean),
/// and importing again either loads the whole file (nothing was committed) or is refused with a clear
/// message naming the non-empty database. The loader commits every 64 MiB of batches, unsynced: the
/// first kill lands early (before a commit on a debug build), the second right after the first commit
/// seen in the file's meta pages (more than 8 MiB in use), so a partial load is what it leaves.
#[test]
fn killed_import_leaves_a_consistent_database() {
    if !canopy_target("`canopy import` killed part-way") {
        return;
    }
    let dir = TempDir::new("killed-import");
    let ldif = dir.path().join("people.ldif");
    let ldif_arg = ldif.to_str().unwrap();
    // 30 000 people: about 90 MiB of batches, so the loader commits before the end.
    canopy(&[
        "bench",
        "gen",
        "--entries",
        "30000",
        "--seed",
        "7",
        "--out",
        ldif_arg,
    ])
    .expect_code(0, "generating the LDIF");
    // With the suffix and the organizational units above the people.
    let all = "30011 entries;";
    for round in 0..2 {
        let round_dir = dir.path().join(format!("round{round}"));
        let data = round_dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let config = round_dir.join("canopy.toml");
        std::fs::write(
            &config,
            format!(
                "data_dir = \"{}\"\nroot_password = \"{ROOT_PW}\"\n",
                data.display()
            ),
        )
        .unwrap();
        let config_arg = config.to_str().unwrap();
        let mut cmd = canopy_command();
        cmd.args(["--config", config_arg, "import", ldif_arg])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(if round == 0 { 0 } else { 60 });
        let data_file = data.join("data.mdb");
        let early = Instant::now() + Duration::from_millis(300);
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            let due = match round {
                0 => Instant::now() >= early,
                _ => committed_pages(&data_file).is_some_and(|pages| pages > 2048),
            };
            if due {
                break;
            }
            assert!(
                round == 0 || Instant::now() < deadline,
                "round {round}: no commit of the import seen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        println!("round {round}: killed (finished before: {finished})");
        let left = canopy(&["--config", config_arg, "verify"]);
        left.expect_code(0, &format!("round {round}: verify after the killed import"));
        let again = canopy(&["--config", config_arg, "import", ldif_arg]);
        println!("round {round}: importing again: exit {}", again.code);
        let counted = canopy(&["--config", config_arg, "verify"]);
        counted.expect_code(0, &format!("round {round}: verify after importing again"));
        let holds_all = |out: &Out| out.stderr.contains(all) || out.stdout.contains(all);
        if again.code == 0 {
            assert!(
                holds_all(&counted),
                "round {round}: a second import that succeeded must hold every entry:\n{}{}",
                counted.stdout,
                counted.stderr
            );
        } else {
            assert!(
                again.stderr.contains("not empty"),
                "round {round} (first import finished: {finished}): a second import may only be \
                 refused for the non-empty database, got:\n{}",
                again.stderr
            );
        }
        if round == 1 && !finished {
            // Killed after its first commit: part of the load, refused by a second import.
            assert_ne!(again.code, 0, "round 1: the partial load must be refused");
            assert!(
                !holds_all(&left),
                "round 1: killed after its first commit, the load cannot be whole:\n{}",
                left.stderr
            );
        }
    }
}
