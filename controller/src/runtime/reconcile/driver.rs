//! The loop that runs one reconciler: wait, snapshot, reconcile, repeat.

use std::time::Duration;

use super::{Action, Env, Reconciler, Trigger};
use crate::state::{Changes, StateGone};

/// Runs `reconciler` until the cluster state is dropped.
///
/// Each turn waits as the previous [`Action`] says, then the reconciler's
/// [`debounce`](Reconciler::debounce), takes a snapshot and reconciles. The first turn waits as
/// [`Reconciler::first_run`] says, with no debounce when it does not wait at all. An error is logged and handed to
/// [`Reconciler::error_policy`], whose action replaces the one the reconcile would have returned.
pub async fn run<R: Reconciler>(mut reconciler: R, env: Env) {
    let name = reconciler.name();
    let mut changes = env.cluster.changes(reconciler.watches());
    let trigger = reconciler.trigger();
    let debounce = reconciler.debounce();
    let mut next = reconciler.first_run();
    loop {
        if let Some(action) = next
            && wait(action, &mut changes, trigger.as_ref(), debounce).await.is_err()
        {
            tracing::debug!(controller = name, "cluster state dropped; stopping");
            return;
        }
        let snapshot = env.cluster.snapshot();
        next = Some(match reconciler.reconcile(&snapshot, &env).await {
            Ok(action) => action,
            Err(error) => {
                tracing::warn!(controller = name, error = %ErrorChain(&error), "reconcile failed");
                reconciler.error_policy(&error)
            }
        });
    }
}

/// Waits as `action` says: its pace first, then a watched change, a trigger or the rest of the
/// requeue deadline, then `debounce`. A requeue that is already due (`requeue(ZERO)`, or one
/// that fell within the pace) does not wait or yield at all.
async fn wait(
    action: Action,
    changes: &mut Changes,
    trigger: Option<&Trigger>,
    debounce: Duration,
) -> Result<(), StateGone> {
    let pace = action.pace();
    if !pace.is_zero() {
        tokio::time::sleep(pace).await;
    }
    match action.requeue_after().map(|after| after.saturating_sub(pace)) {
        Some(rest) if rest.is_zero() => {}
        Some(rest) => {
            tokio::select! {
                biased;
                woken = woken(changes, trigger) => woken?,
                () = tokio::time::sleep(rest) => {}
            }
        }
        None => woken(changes, trigger).await?,
    }
    if !debounce.is_zero() {
        tokio::time::sleep(debounce).await;
    }
    Ok(())
}

/// A watched change or the reconciler's trigger, whichever first.
async fn woken(changes: &mut Changes, trigger: Option<&Trigger>) -> Result<(), StateGone> {
    match trigger {
        None => changes.changed().await,
        Some(trigger) => tokio::select! {
            biased;
            changed = changes.changed() => changed,
            () = trigger.fired() => Ok(()),
        },
    }
}

/// Displays an error with its `source()` chain, `outer: inner: ...`.
struct ErrorChain<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(error) = source {
            write!(f, ": {error}")?;
            source = error.source();
        }
        Ok(())
    }
}
