//! What a write asks for: the options of creates, updates and deletes, and which part of
//! an object an update writes.

/// Options of a create or update.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Validate and default only; store nothing (`dryRun=All`).
    pub dry_run: bool,
    /// Reject unknown fields instead of dropping them (`fieldValidation=Strict`).
    pub strict: bool,
}

/// Options of a delete request (`metav1.DeleteOptions`).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// Grace period override; pods default to `spec.terminationGracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `Orphan`, `Background` (default) or `Foreground`.
    pub propagation: Propagation,
    /// Only delete if the uid matches.
    pub precondition_uid: Option<String>,
    /// Only delete if the resourceVersion matches.
    pub precondition_rv: Option<String>,
    /// Validate only; change nothing.
    pub dry_run: bool,
}

/// Dependent handling on delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now, dependents in the background.
    #[default]
    Background,
    /// Delete dependents first; the owner waits on the `foregroundDeletion` finalizer.
    Foreground,
    /// Keep dependents; drop their ownerReferences.
    Orphan,
}

/// Which part of an object an update writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The main resource: spec and metadata (status is kept for types with a status
    /// subresource).
    Main,
    /// The status subresource: only status changes.
    Status,
}
