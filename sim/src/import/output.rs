//! Writing the scenario: the findings as comments at the top, then the scenario, checked by
//! loading it with the repository's loader before anything is written, and written
//! atomically (a temporary file beside the target, then a rename), so a failed import
//! leaves no half-written scenario.

use std::io::Write;
use std::path::Path;

use crate::scenario::{LoadError, Loaded};

/// Checks `text` loads as a scenario (named `path` in errors).
pub fn validate(path: &Path, text: &str) -> Result<Loaded, LoadError> {
    Loaded::from_str(path, text)
}

/// Writes `text` to `path` atomically.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name =
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "scenario.yaml".into());
    let tmp = dir.join(format!(".{file_name}.import-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Prefixes every line of `text` with `# ` (a blank line stays `#`).
pub fn comment(text: &str) -> String {
    text.lines().map(|l| if l.is_empty() { "#\n".to_string() } else { format!("# {l}\n") }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("dovetail-import-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.yaml");
        write_atomic(&path, "a\n").unwrap();
        write_atomic(&path, "b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let missing = dir.join("no/such/dir/s.yaml");
        assert!(write_atomic(&missing, "c\n").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
