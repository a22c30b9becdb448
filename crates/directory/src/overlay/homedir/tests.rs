//! homedir's decisions and its file-system work, on scratch directories.

use super::*;
use canopy_core::Attribute;
use canopy_proto::Dn;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("canopy-homedir-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn config(root: &Path, style: DeleteStyle) -> Config {
    Config {
        skeleton: Some(root.join("skel")),
        min_uid: 1000,
        rules: vec![Config::rule(&format!("^(/home/[-_/a-z0-9]+)$ {}$1", root.display())).unwrap()],
        delete_style: style,
        archive: Some(root.join("archive")),
    }
}

fn account(classes: &[&str], uid: &str, home: &str) -> Entry {
    let dn = Dn::parse(b"uid=u,ou=people,dc=example,dc=com").unwrap();
    let schema = canopy_schema::Schema::builtin();
    let attr = |desc: &str, values: &[&str]| Attribute {
        desc: desc.into(),
        values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
    };
    Entry {
        ndn: schema.normalize_dn(&dn).unwrap(),
        dn,
        attrs: vec![
            attr("objectClass", classes),
            attr("uidNumber", &[uid]),
            attr("gidNumber", &["1000"]),
            attr("homeDirectory", &[home]),
        ],
    }
}

/// Which changes ask for what: accounts only, at or above the minimum uidNumber, with a homeDirectory
/// a rule maps; `$1` followed by letters is still group 1, as slapd reads it.
#[test]
fn changes_become_jobs() {
    let root = PathBuf::from("/srv/t");
    let hook = Homedir::new(Config {
        rules: vec![Config::rule("^(/home/[a-z0-9]+)$ /srv/t$1_x").unwrap()],
        ..config(&root, DeleteStyle::Archive)
    });
    let user = account(&["top", "account", "posixAccount"], "1001", "/home/user1");
    let at = |p: &str| PathBuf::from(p);
    let made = Account {
        path: at("/srv/t/home/user1_x"),
        uid: 1001,
        gid: 1000,
    };
    assert_eq!(hook.job(None, Some(&user)), Some(Job::Create(made.clone())));
    assert_eq!(
        hook.job(Some(&user), None),
        Some(Job::Remove(made.path.clone()))
    );
    let moved = account(&["posixAccount"], "1001", "/home/other");
    assert_eq!(
        hook.job(Some(&user), Some(&moved)),
        Some(Job::Move {
            from: made.path.clone(),
            to: Account {
                path: at("/srv/t/home/other_x"),
                ..made.clone()
            }
        })
    );
    let renumbered = account(&["posixAccount"], "1002", "/home/user1");
    assert!(matches!(
        hook.job(Some(&user), Some(&renumbered)),
        Some(Job::Chown(Account { uid: 1002, .. }))
    ));
    assert_eq!(hook.job(Some(&user), Some(&user)), None);
    // Not an account, a system account, a path no rule maps: nothing.
    assert_eq!(
        hook.job(None, Some(&account(&["account"], "1001", "/home/a"))),
        None
    );
    assert_eq!(
        hook.job(None, Some(&account(&["posixAccount"], "10", "/home/a"))),
        None
    );
    assert_eq!(
        hook.job(None, Some(&account(&["posixAccount"], "1001", "/etc"))),
        None
    );
    // An account that stops being one goes as a delete does.
    let plain = account(&["account"], "1001", "/home/user1");
    assert_eq!(
        hook.job(Some(&user), Some(&plain)),
        Some(Job::Remove(made.path))
    );
}

/// A home made from the skeleton (hidden files, a read-only directory and a link included), moved,
/// then archived: the tar file lists what the home held, and the home is gone.
#[test]
fn create_move_and_archive() {
    let root = scratch("cycle");
    let skel = root.join("skel");
    std::fs::create_dir_all(skel.join("directory")).unwrap();
    std::fs::write(skel.join(".dotfile"), "dot\n").unwrap();
    std::fs::write(skel.join("directory").join("inner"), "inner\n").unwrap();
    std::os::unix::fs::symlink(".dotfile", skel.join("link")).unwrap();
    let mut ro = std::fs::metadata(skel.join("directory"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut ro, 0o555);
    std::fs::set_permissions(skel.join("directory"), ro).unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::create_dir_all(root.join("archive")).unwrap();
    let config = config(&root, DeleteStyle::Archive);
    let (uid, gid) = {
        let meta = std::fs::metadata(&root).unwrap();
        (
            std::os::unix::fs::MetadataExt::uid(&meta),
            std::os::unix::fs::MetadataExt::gid(&meta),
        )
    };
    let home = root.join("home/user1");
    let first = Account {
        path: home.clone(),
        uid,
        gid,
    };
    create(&config, &first).unwrap();
    assert_eq!(
        std::fs::read_to_string(home.join(".dotfile")).unwrap(),
        "dot\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("directory/inner")).unwrap(),
        "inner\n"
    );
    assert_eq!(
        std::fs::read_link(home.join("link")).unwrap(),
        Path::new(".dotfile")
    );
    // An existing directory is never overwritten.
    std::fs::write(home.join("mine"), "kept").unwrap();
    create(&config, &first).unwrap();
    assert!(home.join("mine").exists());

    let moved = Account {
        path: root.join("home/user1_new"),
        ..first
    };
    move_home(&home, &moved).unwrap();
    assert!(!home.exists() && moved.path.join("mine").exists());

    remove(&config, &moved.path).unwrap();
    assert!(!moved.path.exists());
    let archives: Vec<_> = std::fs::read_dir(root.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(archives.len(), 1, "{archives:?}");
    assert!(
        archives[0].starts_with("user1_new-") && archives[0].ends_with("-0.tar"),
        "{archives:?}"
    );
    let listing = std::process::Command::new("tar")
        .arg("-tvf")
        .arg(root.join("archive").join(&archives[0]))
        .output()
        .expect("tar, to read the archive back");
    assert!(listing.status.success(), "{listing:?}");
    let text = String::from_utf8_lossy(&listing.stdout);
    for name in [
        "user1_new/",
        "user1_new/.dotfile",
        "user1_new/directory/inner",
        "user1_new/link -> .dotfile",
        "user1_new/mine",
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    let mut back = std::fs::metadata(root.join("skel/directory"))
        .unwrap()
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut back, 0o755);
    std::fs::set_permissions(root.join("skel/directory"), back).unwrap();
    let _ = std::fs::remove_dir_all(&root);
}

/// IGNORE leaves the home; DELETE removes it without an archive.
#[test]
fn ignore_and_delete_styles() {
    let root = scratch("styles");
    for (style, kept) in [(DeleteStyle::Ignore, true), (DeleteStyle::Delete, false)] {
        let home = root.join("home");
        std::fs::create_dir_all(home.join("sub")).unwrap();
        remove(&config(&root, style), &home).unwrap();
        assert_eq!(home.exists(), kept, "{style:?}");
    }
    let _ = std::fs::remove_dir_all(&root);
}
