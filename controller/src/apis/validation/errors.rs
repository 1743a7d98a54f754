//! [`ValidationErrors`]: every rule an object violates, each with the field path the API server
//! would name, plus the small recorders (`pattern`, `range`, `max_items`, ...) the rules use.

use std::fmt;

use super::patterns::Pattern;

/// One violated rule: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path of the offending field, e.g. `spec.template.spec.requirements[2].operator`.
    pub path: String,
    /// What is wrong, in the API server's words where it has any.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every rule an object violates, in field order. Empty means valid.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors {
    /// The violations.
    pub errors: Vec<FieldError>,
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        f.write_str(&lines.join("; "))
    }
}

impl ValidationErrors {
    /// Records a violation at `path`.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError { path: path.into(), message: message.into() });
    }

    /// Whether nothing was violated.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// Whether some violation at exactly `path` has a message containing `needle` (for tests and
    /// for callers that map specific rules to events).
    pub fn has(&self, path: &str, needle: &str) -> bool {
        self.errors.iter().any(|error| error.path == path && error.message.contains(needle))
    }

    /// `Ok(())` when empty, else `Err(self)`.
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }

    /// Adds a "Required value" error.
    pub(crate) fn required(&mut self, path: impl Into<String>) {
        self.push(path, "Required value");
    }

    /// Adds a pattern error unless `value` matches.
    pub(crate) fn pattern(&mut self, path: impl Into<String>, value: &str, pattern: &Pattern) {
        if !pattern.is_match(value) {
            self.push(path, format!("Invalid value: {value:?}: should match '{}'", pattern.source()));
        }
    }

    /// Adds an error unless `min <= value <= max` (either bound optional).
    pub(crate) fn range(&mut self, path: impl Into<String> + Clone, value: i64, min: Option<i64>, max: Option<i64>) {
        if let Some(min) = min.filter(|min| value < *min) {
            self.push(path.clone(), format!("Invalid value: {value}: should be greater than or equal to {min}"));
        }
        if let Some(max) = max.filter(|max| value > *max) {
            self.push(path, format!("Invalid value: {value}: should be less than or equal to {max}"));
        }
    }

    /// Adds an error when a list has more than `max` items.
    pub(crate) fn max_items(&mut self, path: impl Into<String>, len: usize, max: usize) {
        if len > max {
            self.push(path, format!("Too many: {len}: must have at most {max} items"));
        }
    }

    /// Adds an error when a string is longer than `max` bytes.
    pub(crate) fn max_length(&mut self, path: impl Into<String>, value: &str, max: usize) {
        if value.len() > max {
            self.push(path, format!("Too long: may not be more than {max} bytes"));
        }
    }

    /// Adds the CEL rule's message at `path` unless `holds`.
    pub(crate) fn rule(&mut self, holds: bool, path: impl Into<String>, message: &str) {
        if !holds {
            self.push(path, message);
        }
    }
}

/// Formats the supported values of an enum like the API server (`"a", "b"`).
pub(crate) fn supported(values: &[&str]) -> String {
    values.iter().map(|value| format!("{value:?}")).collect::<Vec<_>>().join(", ")
}
