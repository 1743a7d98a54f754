//! Architecture rules for the whole workspace, checked by `cargo test -p dovetail-sim
//! --test architecture`. One test reads every crate's sources and reports every broken
//! rule in one message, so a refactoring can be measured by how short that message gets.
//!
//! # Rule 1: no import circles between files
//!
//! Every crate of the workspace (a directory beside the root `Cargo.toml` with its own
//! `Cargo.toml` and `src/`) is scanned: each `src/**/*.rs` file is a node. A module path
//! names the file `a/b.rs` or `a/b/mod.rs` (the crate root `lib.rs` or, for modules that
//! `main.rs` declares, `main.rs`). A file depends on another when it names a path into it:
//!
//! - every path in a `use` declaration that starts with `crate::`, `super::`, `self::`, or
//!   with a child module of the current module (`use child::Item` in a `mod.rs`), and
//! - every such `crate::`/`super::`/`self::` path written inline in code (`crate::a::f()`).
//!
//! A path resolves to the file of its longest module prefix. When the next segment is a
//! name that file re-exports (`pub use child::Item`), the dependency follows the re-export
//! to the file that defines the item: a `mod.rs` that only forwards a child's item is a
//! facade, not a dependency. A re-export of another crate's item (`pub use
//! dovetail_world::SimDuration`) stays a dependency on the facade file: the importer named
//! that module, so it should name the other crate instead.
//!
//! A module file importing its own submodules (`lib.rs` or a `mod.rs` using its children)
//! is not counted: the parent declares those modules, so it may use them. Imports inside
//! inline modules (`mod tests { use super::*; }`) count for the file they are written in.
//! Every strongly connected component of more than one file is a circle.
//!
//! # Rule 2: no file over 600 lines
//!
//! No `.rs` file anywhere in the workspace (outside `target/`) has more than 600 lines,
//! except the files in [`LONG_FILES`], each with its reason (generated tables, table-driven
//! tests).
//!
//! Allowlist entries that no longer match anything are reported too, so the lists only
//! shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

#[path = "architecture/graph.rs"]
mod graph;
#[path = "architecture/tokens.rs"]
mod tokens;

use graph::Graph;

/// The longest a source file may be.
const MAX_LINES: usize = 600;

/// Files allowed over [`MAX_LINES`], with why (paths relative to the workspace root).
const LONG_FILES: &[(&str, &str)] = &[("apiserver/tests/crd_validation.rs", "table-driven tests of CRD validation")];

/// Import circles tolerated for now: a circle is allowed when all its files lie under
/// one of these directories (relative to the workspace root).
const ALLOWED_CIRCLES: &[(&str, &str)] = &[];

#[test]
fn the_workspace_keeps_its_architecture_rules() {
    let root = workspace_root();
    let mut problems = Vec::new();

    let mut allowed_circle_used = BTreeSet::new();
    for krate in crates(&root) {
        let graph = Graph::read(&root, &krate);
        for circle in graph.circles() {
            let files: Vec<&str> = circle.iter().map(|&f| graph.files[f].rel.as_str()).collect();
            if let Some((prefix, _)) = ALLOWED_CIRCLES.iter().find(|(p, _)| files.iter().all(|f| f.starts_with(p))) {
                allowed_circle_used.insert(*prefix);
                continue;
            }
            problems.push(graph.describe(&circle));
        }
    }
    for (prefix, reason) in ALLOWED_CIRCLES {
        if !allowed_circle_used.contains(prefix) {
            problems.push(format!("allowed circles under {prefix} ({reason}): none left; remove the entry"));
        }
    }

    let mut long = BTreeMap::new();
    for file in rust_files(&root) {
        let lines = fs::read_to_string(&file).map(|s| s.lines().count()).unwrap_or(0);
        if lines > MAX_LINES {
            long.insert(relative(&root, &file), lines);
        }
    }
    for (file, lines) in &long {
        if !LONG_FILES.iter().any(|(f, _)| f == file) {
            problems.push(format!("{file}: {lines} lines (more than {MAX_LINES})"));
        }
    }
    for (file, reason) in LONG_FILES {
        if !long.contains_key(*file) {
            problems.push(format!("{file} is allowed to be long ({reason}) but is not; remove the entry"));
        }
    }

    assert!(problems.is_empty(), "{} architecture problem(s):\n\n{}", problems.len(), problems.join("\n\n"));
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("sim/ has a parent").to_path_buf()
}

/// The workspace's crates with a `src/` directory, by directory name.
fn crates(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(root)
        .expect("workspace root is readable")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("Cargo.toml").is_file() && e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// Every `.rs` file under `dir`, skipping `target/` and hidden directories, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.filter_map(Result::ok) {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root).unwrap_or(file).to_string_lossy().replace('\\', "/")
}
