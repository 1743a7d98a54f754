//! Why a scenario that parsed is still wrong: one field, named by its path from the
//! file's root (`faults[2].zoneOutage`), and what is wrong with it. Loading wraps it with
//! the file's name ([`super::LoadError::Field`]); serde-saphyr's own errors carry the line
//! and column instead.

/// What is wrong with one field of a scenario.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct FieldError {
    /// The field's path from the scenario's root, dot-separated (`faults[2].zoneOutage`);
    /// empty when the problem is the entry as a whole.
    pub field: String,
    /// What is wrong, and what is allowed.
    pub problem: String,
}

impl FieldError {
    /// `problem` with the field at `field` (a path relative to whoever checks it).
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { field: field.into(), problem: problem.into() }
    }

    /// The same problem, seen from the field's parent `parent`.
    pub fn within(self, parent: impl Into<String>) -> Self {
        let parent = parent.into();
        let field = if self.field.is_empty() { parent } else { format!("{parent}.{}", self.field) };
        Self { field, ..self }
    }

    fn render(&self) -> String {
        if self.field.is_empty() { self.problem.clone() } else { format!("{}: {}", self.field, self.problem) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_grow_outwards_and_print_before_the_problem() {
        let e = FieldError::new("uniform", "the lower bound is above the upper bound").within("cpu").within("pod");
        assert_eq!(e.field, "pod.cpu.uniform");
        assert_eq!(e.to_string(), "pod.cpu.uniform: the lower bound is above the upper bound");
        assert_eq!(
            FieldError::new("", "no fault kind set").within("faults[0]").to_string(),
            "faults[0]: no fault kind set"
        );
    }
}
