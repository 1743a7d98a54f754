//! Helpers shared by the API integration tests: locating and reading `shared/data`.

#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// `shared/data`, which CI places next to the repository clone (`X/../shared`).
pub fn shared_data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data"))
}

/// Reads a file under `shared/data`, failing the test with the resolved path when missing.
pub fn read_shared(relative: &str) -> String {
    let path = shared_data_dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The `*.yaml` files of a directory under `shared/data`, sorted by name.
pub fn yaml_files(relative_dir: &str) -> Vec<PathBuf> {
    let dir = shared_data_dir().join(relative_dir);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The non-empty documents of a multi-document YAML file, as JSON values.
pub fn yaml_documents(text: &str) -> Vec<Value> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(text).expect("valid YAML");
    documents.into_iter().filter(|document| !document.is_null()).collect()
}
