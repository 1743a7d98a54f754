//! What the importer could not carry over, or had to change or assume: printed on stderr
//! and written as comments at the top of the scenario, so nothing is dropped silently.

use std::fmt;

/// How a finding affects the scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Has no place in the scenario format (or the simulation): not simulated.
    Unsupported,
    /// Rewritten so the scenario runs in the simulated cloud.
    Changed,
    /// A value a dump does not carry; the importer picked one (edit it).
    Assumed,
}

impl Class {
    /// The heading used on stderr and in the scenario's comments.
    pub fn heading(self) -> &'static str {
        match self {
            Class::Unsupported => "unsupported (not simulated)",
            Class::Changed => "changed (to run in the simulated cloud)",
            Class::Assumed => "assumed (a dump does not say; edit the scenario)",
        }
    }
}

/// One object's field and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Its class.
    pub class: Class,
    /// `Kind/namespace/name` (or `Kind/name` for cluster-scoped kinds).
    pub object: String,
    /// The field (`spec.template.spec.containers[0].ports[0].hostPort`), or `*` for the
    /// whole object.
    pub field: String,
    /// Why.
    pub note: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.object, self.field, self.note)
    }
}

/// Collects findings for one object.
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Every finding, in the order found.
    pub all: Vec<Finding>,
}

impl Findings {
    /// Records a finding.
    pub fn push(&mut self, class: Class, object: &str, field: impl Into<String>, note: impl Into<String>) {
        self.all.push(Finding { class, object: object.into(), field: field.into(), note: note.into() });
    }

    /// Records an unsupported field.
    pub fn unsupported(&mut self, object: &str, field: impl Into<String>, note: impl Into<String>) {
        self.push(Class::Unsupported, object, field, note);
    }

    /// The findings of one class, in order.
    pub fn of(&self, class: Class) -> impl Iterator<Item = &Finding> {
        self.all.iter().filter(move |f| f.class == class)
    }

    /// The report: one heading per non-empty class, one finding a line, each line
    /// prefixed with `prefix` (`# ` for the scenario's comments, `` for stderr).
    pub fn render(&self, prefix: &str) -> String {
        let mut out = String::new();
        for class in [Class::Unsupported, Class::Changed, Class::Assumed] {
            let items: Vec<&Finding> = self.of(class).collect();
            if items.is_empty() {
                continue;
            }
            out.push_str(&format!("{prefix}{} ({}):\n", class.heading(), items.len()));
            for f in items {
                out.push_str(&format!("{prefix}  {f}\n"));
            }
        }
        out
    }
}
