//! Why a dump could not be imported: the file, the item (its index in the file and its
//! kind/namespace/name when known), the field and what is wrong, so a user can find the
//! line in a dump of thousands of objects.

use std::fmt;
use std::path::PathBuf;

/// What is wrong with one dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// The dump file.
    pub file: PathBuf,
    /// Where in the file: `items[3]`, `document 2` (empty for the file as a whole).
    pub item: String,
    /// `Deployment default/web` when the item has a kind and a name.
    pub object: String,
    /// The field's path inside the item (`spec.template.spec.containers[0].resources`).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

impl ImportError {
    /// An error about the file as a whole.
    pub fn file(file: impl Into<PathBuf>, problem: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            item: String::new(),
            object: String::new(),
            field: String::new(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if !self.item.is_empty() {
            write!(f, ": {}", self.item)?;
        }
        if !self.object.is_empty() {
            write!(f, " ({})", self.object)?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for ImportError {}

/// A problem inside one item, before the item's location is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The field's path inside the item.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

impl FieldProblem {
    /// `problem` at `field`.
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { field: field.into(), problem: problem.into() }
    }
}
