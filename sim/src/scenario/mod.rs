//! Scenario files: one YAML file tells one story, replayable from a seed.
//!
//! Loading is strict: unknown fields are errors, and every error names the file, line
//! and column (serde-saphyr's locations) and the field, so a typo never silently turns a
//! fault off.

pub mod duration;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use duration::SimDuration;

/// A scenario.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Short name, used in reports and reproduce lines.
    pub name: String,
    /// What the story protects against.
    #[serde(default)]
    pub description: String,
    /// Simulated time the run lasts.
    pub duration: SimDuration,
    /// Manifest files applied before anything else (e.g. Karpenter's CRDs), relative to
    /// the scenario file. Multi-document YAML is fine.
    #[serde(default)]
    pub install: Vec<String>,
    /// Timed actions against the cluster.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// One timed action. Exactly one of `apply`, `delete` or `expireWatches` is set.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// When it happens, from the start of the run.
    pub at: SimDuration,
    /// Seeded random delay added to `at` (each repetition draws its own).
    #[serde(default)]
    pub jitter: Option<SimDuration>,
    /// How many times to do it (use `metadata.generateName` to create many objects).
    #[serde(default = "one")]
    pub count: u32,
    /// A manifest to create (or replace, if it exists).
    #[serde(default)]
    pub apply: Option<Value>,
    /// An object to delete.
    #[serde(default)]
    pub delete: Option<ObjectRef>,
    /// Fault: compact the API server's history and end every watch with 410.
    #[serde(default)]
    pub expire_watches: bool,
    /// The HTTP status the action must fail with (e.g. 422 for an invalid NodePool).
    #[serde(default)]
    pub expect_code: Option<u16>,
}

fn one() -> u32 {
    1
}

/// A reference to an object by type and name.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    /// e.g. `v1`, `apps/v1`, `karpenter.sh/v1`.
    pub api_version: String,
    /// e.g. `Pod`.
    pub kind: String,
    /// Namespace, for namespaced kinds.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// A scenario that failed to load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The YAML is malformed or does not match the scenario format.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// serde-saphyr's message: line, column, field and the allowed values.
        message: String,
    },
}

/// A loaded scenario with the manifests it installs.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub scenario: Scenario,
    /// Where it came from.
    pub path: PathBuf,
    /// The `install` manifests, in order.
    pub install: Vec<Value>,
}

impl Loaded {
    /// Reads and validates a scenario file and the manifests it installs.
    pub fn from_file(path: &Path) -> Result<Loaded, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io { path: path.into(), source })?;
        let scenario: Scenario = serde_saphyr::from_str(&text)
            .map_err(|e| LoadError::Invalid { path: path.into(), message: e.to_string() })?;
        scenario.validate().map_err(|message| LoadError::Invalid { path: path.into(), message })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut install = Vec::new();
        for rel in &scenario.install {
            let p = base.join(rel);
            let text = std::fs::read_to_string(&p).map_err(|source| LoadError::Io { path: p.clone(), source })?;
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                .map_err(|e| LoadError::Invalid { path: p.clone(), message: e.to_string() })?;
            install.extend(docs.into_iter().filter(|d| !d.is_null()));
        }
        Ok(Loaded { scenario, path: path.into(), install })
    }
}

impl Scenario {
    /// Checks what the types cannot: one action per step, steps within the duration.
    pub fn validate(&self) -> Result<(), String> {
        for (i, s) in self.steps.iter().enumerate() {
            let actions =
                usize::from(s.apply.is_some()) + usize::from(s.delete.is_some()) + usize::from(s.expire_watches);
            if actions != 1 {
                return Err(format!(
                    "steps[{i}]: exactly one of `apply`, `delete`, `expireWatches` must be set (found {actions})"
                ));
            }
            if s.at > self.duration {
                return Err(format!("steps[{i}].at: {} is after the scenario's duration {}", s.at, self.duration));
            }
            if let Some(obj) = &s.apply {
                for field in ["apiVersion", "kind"] {
                    if obj.get(field).and_then(Value::as_str).is_none() {
                        return Err(format!("steps[{i}].apply.{field}: Required value"));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_errors_with_line_and_column() {
        let y = "name: x\nduration: 1m\nsteps:\n  - at: 1s\n    aply: {apiVersion: v1, kind: Pod}\n";
        let e = serde_saphyr::from_str::<Scenario>(y).unwrap_err().to_string();
        assert!(e.contains("line 5 column 5"), "{e}");
        assert!(e.contains("unknown field `aply`"), "{e}");
    }

    #[test]
    fn a_step_needs_exactly_one_action() {
        let y = "name: x\nduration: 1m\nsteps:\n  - at: 1s\n";
        let s: Scenario = serde_saphyr::from_str(y).unwrap();
        assert!(s.validate().unwrap_err().contains("steps[0]: exactly one"));
        let y = "name: x\nduration: 1m\nsteps:\n  - at: 2m\n    expireWatches: true\n";
        let s: Scenario = serde_saphyr::from_str(y).unwrap();
        assert!(s.validate().unwrap_err().contains("after the scenario's duration"));
    }
}
