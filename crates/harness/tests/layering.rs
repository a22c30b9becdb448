//! Workspace shape checks, run by `cargo test --workspace`: crate dependencies point down the layer
//! order, only test crates depend on test crates, no two modules of a crate use each other around a
//! loop, and every `.rs` file opens with a `//!` line.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
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

/// The crate roots among the top-level modules of `src/` (`lib.rs`, `main.rs`, and `bin/`, whose files
/// are roots of their own): a root declares every module and re-exports from them, so what it uses
/// is no edge.
const CRATE_ROOTS: &[&str] = &["lib", "main", "bin"];

/// Whether `c` can be part of a Rust identifier.
fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier `text` starts with (empty if none).
fn leading_ident(text: &str) -> &str {
    let end = text.find(|c| !ident_char(c)).unwrap_or(text.len());
    &text[..end]
}

/// The items of a `{...}` use group whose opening brace is already consumed, split at its top-level
/// commas, up to the matching closing brace.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..at]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.into_iter().map(str::trim).collect()
}

/// The first segment of every `crate::` path in a source text, outside comment lines: the module or
/// root item the path starts from (`crate::acl::ops` → `acl`, `crate::{a::X, Y}` → `a` and `Y`).
fn crate_uses(text: &str) -> Vec<String> {
    let code: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let code = code.join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let part_of_a_name = rest[..at].ends_with(ident_char);
        rest = &rest[at + "crate::".len()..];
        if part_of_a_name {
            continue;
        }
        let firsts = match rest.strip_prefix('{') {
            Some(group) => group_items(group).into_iter().map(leading_ident).collect(),
            None => vec![leading_ident(rest)],
        };
        out.extend(
            firsts
                .into_iter()
                .filter(|n| !n.is_empty())
                .map(String::from),
        );
    }
    out
}

/// The names of the `pub` and `pub(crate)` items a source text defines, at any depth.
fn pub_items(text: &str) -> Vec<&str> {
    const KINDS: [&str; 9] = [
        "fn", "struct", "enum", "const", "static", "trait", "type", "mod", "union",
    ];
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line
            .strip_prefix("pub ")
            .or_else(|| line.strip_prefix("pub(crate) "))
        else {
            continue;
        };
        let mut words = rest
            .split_whitespace()
            .skip_while(|w| ["async", "unsafe", "extern", "\"C\""].contains(w));
        let (Some(mut kind), Some(mut name)) = (words.next(), words.next()) else {
            continue;
        };
        if kind == "const" && (name == "fn" || name == "unsafe") {
            kind = "fn";
            name = words.find(|w| *w != "fn").unwrap_or("");
        }
        if KINDS.contains(&kind) {
            names.push(leading_ident(name));
        }
    }
    names
}

/// Which module each name a crate root brings in with `use` comes from: `pub use database::{Directory,
/// OpenOptions}` maps both names to `database`, so a module's `crate::Directory` is a use of
/// `database`. A glob (`pub use message::*`) brings in the `pub` items of that module (`texts`: each
/// module's sources joined). Uses of other crates are skipped.
fn root_names(root: &str, texts: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let mut lines = root.lines().map(str::trim).filter(|l| !l.starts_with("//"));
    while let Some(line) = lines.next() {
        let Some(start) = ["use ", "pub use ", "pub(crate) use "]
            .iter()
            .find_map(|keyword| line.strip_prefix(keyword))
        else {
            continue;
        };
        let mut statement = start.to_string();
        while !statement.contains(';') {
            match lines.next() {
                Some(more) => statement.push_str(more),
                None => break,
            }
        }
        let path = statement.split(';').next().unwrap_or_default().trim();
        let path = path
            .strip_prefix("crate::")
            .or_else(|| path.strip_prefix("self::"))
            .unwrap_or(path);
        let module = leading_ident(path);
        let Some(text) = texts.get(module) else {
            continue;
        };
        for leaf in path[module.len()..].split(['{', '}', ',']) {
            let leaf = leaf.trim();
            if leaf.ends_with('*') {
                for name in pub_items(text) {
                    names.insert(name.to_string(), module.to_string());
                }
                continue;
            }
            let name = match leaf.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => leaf.rsplit("::").next().unwrap_or_default(),
            };
            if !name.is_empty() && name != "self" {
                names.insert(name.to_string(), module.to_string());
            }
        }
    }
    names
}

/// Who uses whom among the top-level modules of the crate whose sources are `src`: each module to
/// the modules its files name under `crate::`, directly or through a name the crate root re-exports.
/// The crate root itself is no module here.
fn module_edges(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    let mut root = String::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let module = module_of(src, file);
        if CRATE_ROOTS.contains(&module.as_str()) {
            root.push_str(&text);
        } else {
            texts.entry(module).or_default().push_str(&text);
        }
    }
    let reexported = root_names(&root, &texts);
    let mut edges = BTreeMap::new();
    for (module, text) in &texts {
        let mut uses: Vec<String> = Vec::new();
        for first in crate_uses(text) {
            let used = if texts.contains_key(&first) {
                Some(&first)
            } else {
                reexported.get(&first)
            };
            if let Some(used) = used.filter(|u| *u != module && !uses.contains(u)) {
                uses.push(used.clone());
            }
        }
        edges.insert(module.clone(), uses);
    }
    edges
}

/// Cycles among the top-level modules of a crate, each as `a -> b -> a`, given who uses whom.
fn module_cycles(edges: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut cycles = BTreeSet::new();
    fn walk(
        edges: &BTreeMap<String, Vec<String>>,
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

/// Every crate's modules form layers: no two top-level modules of one crate use each other, directly
/// or around a loop (what both need belongs in the lower one, or in a small module of its own). Checked
/// in every workspace member's `src/`, tests included, each loop reported as `crate: a -> b -> a`.
#[test]
fn modules_have_no_import_loops() {
    let metadata = cargo_metadata();
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let mut modules = BTreeMap::new();
    let mut cycles = Vec::new();
    for package in &packages {
        let name = package["name"].as_str().unwrap_or("?");
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default());
        let Some(src) = manifest.parent().map(|dir| dir.join("src")) else {
            continue;
        };
        let edges = module_edges(&src);
        modules.insert(name.to_string(), edges.len());
        for cycle in module_cycles(&edges) {
            cycles.push(format!("{name}: {cycle}"));
        }
    }
    // A misread package list or source tree would pass vacuously.
    for (expected, at_least) in [
        ("canopy-core", 5),
        ("canopy-directory", 15),
        ("canopy-server", 20),
        ("canopy-e2e", 3),
    ] {
        let found = modules.get(expected).copied().unwrap_or(0);
        assert!(
            found >= at_least,
            "{expected}: {found} modules found, expected at least {at_least}"
        );
    }
    assert!(
        cycles.is_empty(),
        "import loops among a crate's modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn module_loops_are_found() {
    let edges = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a", "e"]),
        ("e", vec!["d"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(module_cycles(&edges), ["a -> b -> c -> a", "d -> e -> d"]);
    assert_eq!(
        crate_uses(
            "use crate::acl::ops;\n// crate::no\nlet x = crate::state::State::x(crate::ops::f());\n\
             use crate::{\n    error::{E, F},\n    Directory,\n};\nlet y = other_crate::z; $crate::m!();"
        ),
        ["acl", "state", "ops", "error", "Directory", "m"]
    );
}

#[test]
fn root_reexports_are_resolved() {
    let texts: BTreeMap<String, String> = ["database", "error", "message", "view"]
        .into_iter()
        .map(|m| (m.to_string(), String::new()))
        .chain([(
            "message".to_string(),
            "pub struct Message;\npub(crate) const fn tag() {}\nfn private() {}\n".to_string(),
        )])
        .collect();
    let root =
        "//! The root.\nmod database;\npub use database::{Directory, OpenOptions as Options};\n\
                pub use error::{self, nested::{OpError}};\npub use message::*;\n\
                use std::sync::Arc;\npub use canopy_core::Entry;\n// use view::Snapshot;\n";
    let names = root_names(root, &texts);
    let want: BTreeMap<String, String> = [
        ("Directory", "database"),
        ("Options", "database"),
        ("OpError", "error"),
        ("Message", "message"),
        ("tag", "message"),
    ]
    .into_iter()
    .map(|(n, m)| (n.to_string(), m.to_string()))
    .collect();
    assert_eq!(names, want);
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

/// The store's types that the frontend must never name, whatever the path: the storage names the
/// backend once re-exported for it.
const STORE_TYPES: &[&str] = &[
    "ReadTxn",
    "ReadOps",
    "WriteTxn",
    "StoreConfig",
    "Store",
    "Stats",
    "TableStats",
    "Histogram",
    "StoreError",
];

/// Every type-like (CamelCase) name `canopy-mdb` exports, read from its `lib.rs` (`pub use` lists and
/// items), so a type added to the store later is covered too.
fn store_type_names(lib: &str) -> Vec<String> {
    let mut names: Vec<String> = STORE_TYPES.iter().map(|n| n.to_string()).collect();
    let mut exports = String::new();
    let mut in_use = false;
    for line in lib.lines() {
        let line = line.trim();
        if line.starts_with("pub use ") {
            in_use = true;
        }
        for item in ["pub struct ", "pub enum ", "pub trait ", "pub type "] {
            if let Some(rest) = line.strip_prefix(item) {
                exports.push_str(rest.split(['<', ' ', '(', '{', ';']).next().unwrap_or(""));
                exports.push(' ');
            }
        }
        if in_use {
            // The last segment of each path: `a::b::{C, D}` gives C and D, `a::B` gives B.
            let tail = line.rsplit("::").next().unwrap_or(line);
            exports.push_str(tail);
            exports.push(' ');
            in_use = !line.ends_with(';');
        }
    }
    for word in exports.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let camel = word.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && word.chars().any(|c| c.is_ascii_lowercase());
        if camel && !names.iter().any(|n| n == word) {
            names.push(word.to_string());
        }
    }
    names
}

/// The types `text` defines (`struct`, `enum`, `trait`, `type`).
fn defined_types(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let line = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        for item in ["struct ", "enum ", "trait ", "type "] {
            if let Some(rest) = line.strip_prefix(item) {
                let name = rest
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next();
                out.extend(name.filter(|n| !n.is_empty()).map(String::from));
            }
        }
    }
    out
}

/// The names of `names` that `text` uses as Rust identifiers outside comments: bare (`ReadTxn`, in a
/// `use` list) or under the backend's or the store's path (`canopy_directory::Store`). Another
/// crate's item of the same name under its own path (`MetricType::Histogram`) is not the store's,
/// nor is a type of the frontend's own (`own`) unless named under one of those two paths.
fn store_types_named(text: &str, names: &[String], own: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or(code);
        let bytes = code.as_bytes();
        for name in names {
            let mut from = 0;
            while let Some(at) = code[from..].find(name.as_str()).map(|i| i + from) {
                from = at + name.len();
                let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
                let before = at.checked_sub(1).map(|i| bytes[i]);
                if before.is_some_and(ident) || bytes.get(from).copied().is_some_and(ident) {
                    continue;
                }
                let path = code[..at].strip_suffix("::").map(|head| {
                    head.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or("")
                });
                let ours = match path {
                    Some(head) => matches!(head, "canopy_directory" | "canopy_mdb"),
                    None => !own.contains(name),
                };
                if ours && !found.contains(name) {
                    found.push(name.clone());
                }
            }
        }
    }
    found
}

#[test]
fn store_type_names_are_read_and_found() {
    let lib = "mod read;\npub use read::{\n    RawPairs, ReadOps, ReadTxn,\n};\npub use store::{Stats, Store};\npub use keys::FORMAT_VERSION;\npub struct Gate;\n";
    let names = store_type_names(lib);
    for name in ["ReadTxn", "ReadOps", "RawPairs", "Store", "Gate"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    assert!(!names.iter().any(|n| n == "FORMAT_VERSION"));
    assert_eq!(
        store_types_named(
            "use canopy_directory::{Directory, ReadTxn};\nfn f(s: &canopy_directory::Stats) {}\nlet h = MetricType::Histogram;\n// a Store in prose\nlet x: StoreConfigured = 1; // WriteTxn\nlet g = Gate::new(canopy_mdb::Store::open());",
            &names,
            &defined_types("pub(crate) struct Gate {}\nenum Store {}"),
        ),
        ["ReadTxn", "Stats", "Store"]
    );
    assert!(store_types_named("let t: Snapshot = dir.read()?;", &names, &[]).is_empty());
}

/// The frontend reaches storage only through the backend (`canopy-directory`): `canopy-server`
/// does not depend on `canopy-mdb`, none of its files names that crate or one of its types (it holds a
/// `Snapshot` or an `InWrite`, opens with `OpenOptions`, reads `Figures`: the backend's own types), and
/// none takes the store from a `Directory` (`.store()`) or calls the store's read methods itself
/// (`Directory::stored`, `lookup`, `id_of`, `stored_entries` read for it).
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
    let mdb_lib = workspace_root().join("crates/mdb/src/lib.rs");
    let mdb_lib =
        std::fs::read_to_string(&mdb_lib).unwrap_or_else(|e| panic!("{}: {e}", mdb_lib.display()));
    let types = store_type_names(&mdb_lib);
    let texts: Vec<(&PathBuf, String)> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap_or_default()))
        .collect();
    let own: Vec<String> = texts.iter().flat_map(|(_, t)| defined_types(t)).collect();
    let mut direct = Vec::new();
    for (file, text) in &texts {
        if text.contains("canopy_mdb") {
            direct.push(format!("{} names canopy_mdb", file.display()));
        }
        for name in store_types_named(text, &types, &own) {
            direct.push(format!("{} names the store's type {name}", file.display()));
        }
        if text.contains(".store()") {
            direct.push(format!(
                "{} takes the store from a Directory",
                file.display()
            ));
        }
        for name in store_reads(text) {
            direct.push(format!("{} calls the store's {name}", file.display()));
        }
    }
    assert!(
        direct.is_empty(),
        "the frontend using the store directly:\n{}",
        direct.join("\n")
    );
}

/// Names of overlays (slapd's and Canopy's) and of the server's own databases that the operations'
/// code and the connection never name: they reach every database through its backend and the hooks
/// their database lists (`state::Backend`, `databases::FrontHook`, the read hook's expander).
const PARTICULAR: &[&str] = &[
    "accesslog",
    "auditlog",
    "autoca",
    "config_change",
    "config_tree",
    "constraint",
    "dds",
    "dyngroup",
    "dynlist",
    "homedir",
    "is_config",
    "is_monitor",
    "logdb",
    "memberof",
    "monitor",
    "pcache",
    "ppolicy",
    "refint",
    "remoteauth",
    "retcode",
    "rwm",
    "seqmod",
    "sssvlv",
    "syncprov",
    "translucent",
    "unique",
    "valsort",
];

/// The particular names ([`PARTICULAR`]) that the code of `text` uses, outside comments: an
/// identifier, path segment or word of a string that is one of them, or contains one of those with an
/// underscore (`crate::ppolicy::check`, `dir.is_monitor()`, `"cn=Monitor"`, `config_tree::X`).
fn particular_names(text: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let code = line.split(" // ").next().unwrap_or(line);
        for word in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let word = word.to_ascii_lowercase();
            for &name in PARTICULAR {
                let hit = if name.contains('_') {
                    word.contains(name)
                } else {
                    word.split('_').any(|part| part == name)
                };
                if hit && !found.contains(&name) {
                    found.push(name);
                }
            }
        }
    }
    found
}

#[test]
fn particular_names_are_found() {
    let text = "// ppolicy in a comment\nlet x = crate::ppolicy::check(dir); // memberof\n\
                if dir.is_monitor() { refresh(\"cn=Monitor\") }\nlet y = unique_values;\n\
                let z = community.collect();";
    assert_eq!(
        particular_names(text),
        ["ppolicy", "is_monitor", "monitor", "unique"]
    );
    assert!(particular_names("let expander = dir.expander(&txn);").is_empty());
}

/// The operations (`crates/server/src/ops/`) and the connection (`conn.rs`) name no particular overlay
/// and no particular database: cn=config and cn=Monitor are reached through their `Backend`, the
/// overlays through the hooks their database lists (issue 32, ARCHITECTURE.md).
#[test]
fn operations_name_no_overlay_and_no_special_database() {
    let server = workspace_root().join("crates/server/src");
    let mut files = vec![server.join("conn.rs")];
    rust_files(&server.join("ops"), &mut files);
    assert!(files.len() > 8, "too few operation sources: {files:?}");
    let mut named = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for name in particular_names(&text) {
            named.push(format!("{} names {name}", file.display()));
        }
    }
    assert!(
        named.is_empty(),
        "the frontend's operations name particular overlays or databases:\n{}",
        named.join("\n")
    );
}

/// The calls that run the write hooks, and the one file allowed to make them.
const HOOK_CALLS: &[&str] = &[
    "pipeline().prepare(",
    "pipeline().commit(",
    "pipeline().commit_only(",
];
const WRITE_STEPS: &str = "crates/directory/src/write/steps.rs";

/// The calls of `HOOK_CALLS` in `text`, outside comments and `#[cfg(test)]` modules.
fn hook_calls(text: &str) -> Vec<&'static str> {
    // Up to the first inline test module (`#[cfg(test)] mod tests;` declares one elsewhere).
    let inline_tests = text.match_indices("#[cfg(test)]").find(|(at, attr)| {
        let rest = text[at + attr.len()..].trim_start();
        rest.starts_with("mod ")
            && matches!((rest.find('{'), rest.find(';')), (Some(open), semi) if semi.is_none_or(|semi| open < semi))
    });
    let code = &text[..inline_tests.map_or(text.len(), |(at, _)| at)];
    // Comments out, then every space: a call cut over two lines is still one call.
    let compact: String = code
        .lines()
        .map(|line| line.split("//").next().unwrap_or(line))
        .flat_map(str::split_whitespace)
        .collect();
    HOOK_CALLS
        .iter()
        .flat_map(|call| compact.matches(*call).map(|_| *call))
        .collect()
}

#[test]
fn hook_calls_are_found() {
    let text = "#[cfg(test)]\nmod tests;\nlet a = dir.pipeline().prepare(x);\n\
                // self.pipeline().commit(x) in a comment\nself.pipeline()\n.commit(dir);\nself.pipeline() .commit_only(\"s\", d);\n\
                #[cfg(test)]\nmod tests { dir.pipeline().commit(x); }";
    assert_eq!(
        hook_calls(text),
        [
            "pipeline().prepare(",
            "pipeline().commit(",
            "pipeline().commit_only("
        ]
    );
}

/// One write engine: a client's write and a change received from a provider both store entries
/// through `write/steps.rs`, the only code that runs the pipeline's hooks and so the only place a
/// write's events are built (issue 32, ARCHITECTURE.md).
#[test]
fn only_the_write_steps_run_the_write_hooks() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let steps = root.join(WRITE_STEPS);
    assert!(files.contains(&steps), "{WRITE_STEPS} is missing");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != steps) {
        if file.components().any(|c| c.as_os_str() == "tests") {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for call in hook_calls(&text) {
            found.push(format!("{} calls {call}", file.display()));
        }
    }
    let own = std::fs::read_to_string(&steps).expect("the write steps");
    assert!(hook_calls(&own).len() >= 3, "the write steps run no hooks");
    assert!(
        found.is_empty(),
        "the write hooks run outside {WRITE_STEPS}:\n{}",
        found.join("\n")
    );
}

/// The repository's paths that a backticked word of a document names: words ending in `.rs` or
/// beginning with a top-level directory of the repository (`crates/`, `docs/`, `bench/`, `tests/`,
/// `scripts/`). Runtime names (`DATA/config/`, meta keys) are none of these.
fn named_paths(text: &str) -> Vec<&str> {
    const TOP: [&str; 5] = ["crates/", "docs/", "bench/", "tests/", "scripts/"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| {
            !word.starts_with('.')
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
                && (word.ends_with(".rs") || TOP.iter().any(|t| word.starts_with(t)))
        })
        .collect()
}

/// Every file and directory of the repository (without `target` and `.git`), relative, with `/`.
fn repository_paths(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(items) = std::fs::read_dir(dir) else {
        return;
    };
    for item in items.flatten() {
        let path = item.path();
        let name = item.file_name().to_string_lossy().into_owned();
        if name == "target" || name == ".git" {
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            out.push(format!("{relative}/"));
            repository_paths(root, &path, out);
        } else {
            out.push(relative);
        }
    }
}

#[test]
fn named_paths_are_found() {
    let text = "`crates/server/src/conn.rs` and `conn.rs`, `ops/`, `docs/nothing-here.md`, `DATA/config/`, `tomb/`, \
                `Directory::write`, `a b.rs`, a `.rs` file";
    assert_eq!(
        named_paths(text),
        [
            "crates/server/src/conn.rs",
            "conn.rs",
            "docs/nothing-here.md"
        ],
        "words that are not repository paths are skipped"
    );
    let tree = [
        "crates/".to_string(),
        "crates/server/src/conn.rs".to_string(),
    ];
    assert_eq!(missing_paths(text, &tree), ["docs/nothing-here.md"]);
}

/// The paths `text` names that `tree` (relative paths, directories ending in `/`) does not hold.
fn missing_paths<'t>(text: &'t str, tree: &[String]) -> Vec<&'t str> {
    let exists = |name: &str| {
        let name = name.trim_end_matches('/');
        tree.iter().any(|p| {
            let p = p.trim_end_matches('/');
            p == name || p.ends_with(&format!("/{name}"))
        })
    };
    named_paths(text)
        .into_iter()
        .filter(|name| !exists(name))
        .collect()
}

/// ARCHITECTURE.md is a contract: every source file and repository path it names in backticks exists
/// (a path given relative to its crate or directory, such as `conn.rs` or `ops/search.rs`, matches the
/// end of a path).
#[test]
fn architecture_names_only_paths_that_exist() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut paths = Vec::new();
    repository_paths(&root, &root, &mut paths);
    let missing = missing_paths(&text, &paths);
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// No file under a crate's `src/` is over 1,000 lines (issue 32): a file that grows past it is split
/// along its seams, as `config_change/`, `overlays/` and `databases/` were.
#[test]
fn no_source_file_over_a_thousand_lines() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let sources: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.components().any(|c| c.as_os_str() == "src"))
        .collect();
    assert!(sources.len() > 100, "too few sources: {}", sources.len());
    let long: Vec<String> = sources
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).ok()?;
            let lines = text.lines().count();
            (lines > 1000).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "source files over 1,000 lines:\n{}",
        long.join("\n")
    );
}
