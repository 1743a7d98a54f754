//! One reconcile runtime for every controller loop, shaped like kube-runtime's `Controller`.
//!
//! A controller implements [`Reconciler`]: a name, the [`Kinds`] of cluster state it reads, and
//! `reconcile(snapshot, env) -> Result<Action, Error>`. [`run`] drives it: it waits for a change
//! of a watched kind or the [`Action`]'s requeue deadline, whichever comes first, takes a
//! snapshot, reconciles, and hands errors to the reconciler's error policy (its backoff). Wake-ups
//! are per controller: a pod change does not wake a controller that watches only NodeClasses.
//!
//! The reason for a reconcile is not passed in (as in kube-runtime): a reconciler looks at the
//! whole snapshot every time, so it must be idempotent.

mod action;
mod driver;
mod env;
mod trigger;

use std::future::Future;
use std::time::Duration;

pub use action::Action;
pub use driver::run;
pub use env::Env;
pub use trigger::Trigger;

use crate::state::Snapshot;
pub use crate::state::{Kind, Kinds};

/// A controller loop, run by [`run`].
pub trait Reconciler: Send + 'static {
    /// What a reconcile can fail with; the error policy decides when to retry.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The controller's name, for logs and the operator's table.
    fn name(&self) -> &'static str;

    /// The kinds of cluster-state change that wake it. [`Kinds::NONE`] runs it on its requeue
    /// deadlines alone.
    fn watches(&self) -> Kinds;

    /// How the driver waits before the first reconcile; `None` (the default) runs it at once.
    fn first_run(&self) -> Option<Action> {
        None
    }

    /// How long the driver waits after each wake-up before it takes the snapshot, so a burst of
    /// changes lands in one reconcile. None by default.
    fn debounce(&self) -> Duration {
        Duration::ZERO
    }

    /// A handle the reconciler's own background work fires to be reconciled again.
    fn trigger(&self) -> Option<Trigger> {
        None
    }

    /// Brings the world one step closer to what `snapshot` asks for, and says when to look again.
    fn reconcile(&mut self, snapshot: &Snapshot, env: &Env)
    -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// What to do after `error`: usually a requeue with backoff.
    fn error_policy(&mut self, error: &Self::Error) -> Action;
}
