//! Workspace shape checks, run by `cargo test --workspace`: crate dependencies point down the layer
//! order, only test crates depend on test crates, and every `.rs` file opens with a `//!` line.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's crates by layer, lowest first. A crate may depend only on crates in lower layers
/// (never on one in its own layer or above), so the arrows point down. Every workspace member must
/// be placed here deliberately; a name listed here that is not (yet) a member is fine.
const LAYERS: &[&[&str]] = &[
    &["canopy-ber"],
    &["canopy-proto"],
    &["canopy-schema"],
    &["canopy-password"],
    &["canopy-core"],
    &["canopy-mdb"],
    &["canopy-directory"],
    &["canopy-server"],
    &["canopy-bench"],
    &["canopy"],
    &[HARNESS],
    &["canopy-conformance", "canopy-e2e"],
];

/// The test-support library: starting servers and running clients.
const HARNESS: &str = "canopy-harness";

/// Crates that hold only tests: nothing else may depend on them.
const TEST_CRATES: &[&str] = &["canopy-e2e"];

/// Crates besides the test crates that may have the harness as a normal dependency. Any crate may
/// have it as a dev-dependency.
const HARNESS_USERS: &[&str] = &["canopy-conformance"];

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

/// Every breach of the rules above in `cargo metadata --format-version 1` output, one line each,
/// naming the crate or the offending edge.
fn violations(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut found = Vec::new();
    for package in &packages {
        let Some(name) = package["name"].as_str() else {
            found.push(format!("a package without a name: {package}"));
            continue;
        };
        let layer = layer_of(name);
        if layer.is_none() {
            found.push(format!(
                "{name} is a workspace member missing from LAYERS in {}: place it in a layer",
                file!()
            ));
        }
        let deps = package["dependencies"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for dep in &deps {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            if !members.contains(&dep_name) {
                continue; // a crate from outside the workspace
            }
            let kind = dep["kind"].as_str().unwrap_or("normal");
            let edge = format!("{name} -> {dep_name} ({kind} dependency)");
            let test_support_dev_dep = kind == "dev" && dep_name == HARNESS;
            if let (Some(from), Some(to)) = (layer, layer_of(dep_name)) {
                if to >= from && !test_support_dev_dep {
                    let direction = if to == from { "sideways" } else { "upward" };
                    found.push(format!(
                        "{edge} points {direction}: a crate may depend only on crates in lower \
                         layers"
                    ));
                }
            }
            if TEST_CRATES.contains(&dep_name) && !TEST_CRATES.contains(&name) {
                found.push(format!(
                    "{edge}: {dep_name} is a test crate; only test crates may depend on it"
                ));
            }
            if dep_name == HARNESS
                && kind != "dev"
                && !TEST_CRATES.contains(&name)
                && !HARNESS_USERS.contains(&name)
            {
                found.push(format!(
                    "{edge}: {HARNESS} is test support; only the conformance tool and test crates \
                     may depend on it (any crate may dev-depend on it)"
                ));
            }
        }
    }
    found
}

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn cargo_metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(workspace_root().join("Cargo.toml"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo:?} metadata: {e}"));
    assert!(
        out.status.success(),
        "cargo metadata failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn workspace_dependencies_point_down() {
    let metadata = cargo_metadata();
    let names: Vec<&str> = metadata["packages"]
        .as_array()
        .expect("packages in cargo metadata")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    // An empty or misread package list would pass vacuously.
    for expected in [
        "canopy-ber",
        "canopy-server",
        "canopy",
        HARNESS,
        "canopy-e2e",
    ] {
        assert!(names.contains(&expected), "{expected} not among {names:?}");
    }
    let found = violations(&metadata);
    assert!(
        found.is_empty(),
        "workspace layering violated (order in {}):\n{}",
        file!(),
        found.join("\n")
    );
}

/// A small hand-made `cargo metadata` document with `deps` as (from, to, kind) edges, kind being
/// `null` (normal), `"dev"` or `"build"`.
fn metadata_of(crates: &[&str], deps: &[(&str, &str, &str)]) -> Value {
    let packages: Vec<Value> = crates
        .iter()
        .map(|name| {
            let mut dependencies: Vec<Value> = deps
                .iter()
                .filter(|(from, _, _)| from == name)
                .map(|(_, to, kind)| {
                    let kind: Value = serde_json::from_str(kind).expect("kind is JSON");
                    serde_json::json!({ "name": to, "kind": kind, "req": "*" })
                })
                .collect();
            // Crates from outside the workspace are never edges.
            dependencies.push(serde_json::json!({ "name": "thiserror", "kind": null, "req": "2" }));
            serde_json::json!({ "name": name, "version": "0.1.0", "dependencies": dependencies })
        })
        .collect();
    serde_json::json!({ "packages": packages, "version": 1 })
}

#[test]
fn reports_every_kind_of_bad_edge() {
    let metadata = metadata_of(
        &[
            "canopy-ber",
            "canopy-proto",
            "canopy-core",
            "canopy-server",
            "canopy-mdb",
            HARNESS,
            "canopy-conformance",
            "canopy-e2e",
            "canopy-newcomer",
        ],
        &[
            // Fine: downward, a dev-dependency on the harness, test crates on the harness.
            ("canopy-proto", "canopy-ber", "null"),
            ("canopy-server", "canopy-core", "null"),
            ("canopy-mdb", HARNESS, "\"dev\""),
            ("canopy-e2e", HARNESS, "null"),
            ("canopy-conformance", HARNESS, "null"),
            // Bad.
            ("canopy-ber", "canopy-proto", "null"),
            ("canopy-core", "canopy-server", "\"build\""),
            ("canopy-proto", "canopy-core", "\"dev\""),
            ("canopy-server", "canopy-e2e", "null"),
            ("canopy-conformance", "canopy-e2e", "null"),
            ("canopy-server", HARNESS, "null"),
        ],
    );
    let found = violations(&metadata);
    let has = |needle: &str| found.iter().any(|v| v.contains(needle));
    for needle in [
        "canopy-ber -> canopy-proto (normal dependency) points upward",
        "canopy-core -> canopy-server (build dependency) points upward",
        "canopy-proto -> canopy-core (dev dependency) points upward",
        "canopy-server -> canopy-e2e (normal dependency) points upward",
        "canopy-server -> canopy-e2e (normal dependency): canopy-e2e is a test crate",
        "canopy-conformance -> canopy-e2e (normal dependency) points sideways",
        "canopy-conformance -> canopy-e2e (normal dependency): canopy-e2e is a test crate",
        "canopy-server -> canopy-harness (normal dependency) points upward",
        "canopy-server -> canopy-harness (normal dependency): canopy-harness is test support",
        "canopy-newcomer is a workspace member missing from LAYERS",
    ] {
        assert!(
            has(needle),
            "{needle:?} not reported in:\n{}",
            found.join("\n")
        );
    }
    for allowed in [
        "canopy-proto -> canopy-ber",
        "canopy-server -> canopy-core",
        "canopy-mdb -> canopy-harness",
        "canopy-e2e -> canopy-harness",
        "canopy-conformance -> canopy-harness",
        "thiserror",
    ] {
        assert!(
            !has(allowed),
            "{allowed:?} wrongly reported in:\n{}",
            found.join("\n")
        );
    }
    // The last three edges each break two rules; the rest one each.
    assert_eq!(found.len(), 10, "{}", found.join("\n"));
}

#[test]
fn a_clean_tree_has_no_violations() {
    let metadata = metadata_of(
        &[
            "canopy-ber",
            "canopy-proto",
            "canopy",
            HARNESS,
            "canopy-e2e",
        ],
        &[
            ("canopy-proto", "canopy-ber", "null"),
            ("canopy", "canopy-proto", "null"),
            ("canopy", HARNESS, "\"dev\""),
            ("canopy-e2e", HARNESS, "null"),
        ],
    );
    assert_eq!(violations(&metadata), Vec::<String>::new());
}

/// Whether a source file's first line is a `//!` module doc line.
fn opens_with_module_doc(text: &str) -> bool {
    text.lines().next().is_some_and(|l| l.starts_with("//!"))
}

#[test]
fn module_doc_line_detection() {
    let cases = [
        ("//! Does one thing.\nfn f() {}\n", true),
        ("//!\n", true),
        ("", false),
        ("\n//! Too late.\n", false),
        ("// A plain comment.\n", false),
        ("/// An item doc.\nfn f() {}\n", false),
        ("#![allow(dead_code)]\n//! After an attribute.\n", false),
    ];
    for (text, want) in cases {
        assert_eq!(opens_with_module_doc(text), want, "{text:?}");
    }
}

/// `.rs` files under `dir`, skipping `target/` directories.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_opens_with_a_module_doc_line() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["crates", "tests", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("crates/harness/tests/layering.rs")),
        "the walk did not find this file; is the root {}?",
        root.display()
    );
    let mut missing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
            !opens_with_module_doc(&text)
        })
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "these files do not start with a `//!` line saying what they are for (STYLE.md):\n{}",
        missing.join("\n")
    );
}

/// The top-level module a file of `src/` belongs to (`ops/search.rs` → `ops`, `lib.rs` → `lib`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    first
        .unwrap_or_default()
        .trim_end_matches(".rs")
        .to_string()
}

/// The `crate::module` paths a source text uses, outside comments.
fn crate_uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
            rest = after;
        }
    }
    out
}

/// Cycles among the top-level modules of a crate, each as `a -> b -> a`, given who uses whom.
fn module_cycles(edges: &std::collections::BTreeMap<String, Vec<String>>) -> Vec<String> {
    use std::collections::BTreeSet;
    let mut cycles = BTreeSet::new();
    fn walk(
        edges: &std::collections::BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        cycles: &mut BTreeSet<String>,
    ) {
        let Some(last) = path.last().cloned() else {
            return;
        };
        for next in edges.get(&last).into_iter().flatten() {
            if let Some(at) = path.iter().position(|m| m == next) {
                let mut cycle: Vec<String> = path[at..].to_vec();
                let start = (0..cycle.len()).min_by_key(|&i| &cycle[i]).unwrap_or(0);
                cycle.rotate_left(start);
                cycle.push(cycle[0].clone());
                cycles.insert(cycle.join(" -> "));
            } else if path.len() < 12 {
                path.push(next.clone());
                walk(edges, path, cycles);
                path.pop();
            }
        }
    }
    for start in edges.keys() {
        walk(edges, &mut vec![start.clone()], &mut cycles);
    }
    cycles.into_iter().collect()
}

/// The frontend's modules form layers too: no two of them use each other, directly or around a loop
/// (the import loops the architecture issue found: candidates ↔ directory, ops ↔ readentry,
/// limits ↔ state, config ↔ sasl).
#[test]
fn server_modules_have_no_import_loops() {
    let src = workspace_root().join("crates/server/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 20,
        "too few server sources found: {}",
        files.len()
    );
    let mut edges: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for file in &files {
        let module = module_of(&src, file);
        let text = std::fs::read_to_string(file).expect("read a server source");
        let uses = edges.entry(module.clone()).or_default();
        for used in crate_uses(&text) {
            if used != module && !uses.contains(&used) {
                uses.push(used);
            }
        }
    }
    let cycles = module_cycles(&edges);
    assert!(
        cycles.is_empty(),
        "import loops among crates/server's modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn module_loops_are_found() {
    let edges = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(module_cycles(&edges), ["a -> b -> c -> a"]);
    assert_eq!(
        crate_uses(
            "use crate::acl::ops;\n// crate::no\nlet x = crate::state::State::x(crate::ops::f());"
        ),
        ["acl", "state", "ops"]
    );
}

/// The store's read methods (`canopy_mdb::ReadOps`) with names no other type of the server uses: a
/// call of one in the frontend is a storage read that skipped the backend's methods.
const STORE_READS: &[&str] = &[
    "get_entry",
    "get_id",
    "get_meta",
    "meta_prefix",
    "has_children",
    "subtree_ids",
    "subtree_iter",
    "index_get",
    "index_get_capped",
    "index_prefix",
    "index_range",
    "index_range_capped",
    "entry_ids",
    "candidate_entries",
    "entries_from",
    "entry_count",
    "last_id",
    "raw_pairs",
    "raw_len",
    "chunk_counts",
    "synclog_after",
    "synclog_len",
];

/// The store's read calls in `text`: each `.NAME(` of [`STORE_READS`].
fn store_reads(text: &str) -> Vec<&'static str> {
    STORE_READS
        .iter()
        .copied()
        .filter(|name| text.contains(&format!(".{name}(")))
        .collect()
}

#[test]
fn store_reads_are_found() {
    assert_eq!(
        store_reads("let b = txn.get_entry(id)?; dir.stored(&txn, id); x.get_idx(1)"),
        ["get_entry"]
    );
    assert!(store_reads("db.id_of(&txn, ndn)").is_empty());
}

/// The frontend reaches storage only through the backend (`canopy-directory`): `canopy-server`
/// does not depend on `canopy-mdb`, none of its files names that crate (the snapshot and write
/// transaction types it passes around are the backend's re-exports), and none calls the store's
/// read methods itself (`Directory::stored`, `lookup`, `id_of`, `stored_entries` read for it).
#[test]
fn the_frontend_goes_through_the_backend() {
    let metadata = cargo_metadata();
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let server = packages
        .iter()
        .find(|p| p["name"] == "canopy-server")
        .expect("canopy-server is a workspace member");
    let store_deps: Vec<String> = server["dependencies"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|d| d["name"] == "canopy-mdb")
        .map(|d| d["kind"].as_str().unwrap_or("normal").to_string())
        .collect();
    assert!(
        store_deps.is_empty(),
        "canopy-server depends on canopy-mdb ({store_deps:?}): use the backend's names"
    );
    let root = workspace_root().join("crates/server");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(
        files.len() > 10,
        "too few server sources under {}",
        root.display()
    );
    let mut direct = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains("canopy_mdb") {
            direct.push(format!("{} names canopy_mdb", file.display()));
        }
        for name in store_reads(&text) {
            direct.push(format!("{} calls the store's {name}", file.display()));
        }
    }
    assert!(
        direct.is_empty(),
        "the frontend using the store directly:\n{}",
        direct.join("\n")
    );
}
