//! The provisioning controller (core provisioning controller and batcher): watches pods and
//! nodes for triggers, holds them in the [`Batcher`] window, and runs a [`Provisioner`] pass when
//! the window closes.

use std::time::Duration;

use tokio::time::Instant;

use super::batcher::{Batcher, REQUEUE};
use super::provisioner::Provisioner;
use crate::runtime::reconcile::{Action, Env, Kind, Kinds, Reconciler};
use crate::state::Snapshot;

/// How long an unsynced cluster (or one whose NodeClaims have not all launched) is left
/// before the batch is tried again.
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);

/// The provisioning controller, a [`Reconciler`].
pub struct ProvisioningController {
    provisioner: Provisioner,
    batcher: Batcher,
    /// When every trigger is re-armed next (the 10 s requeue); set at the first reconcile.
    next_requeue: Option<Instant>,
}

impl ProvisioningController {
    /// A controller running `provisioner`, with the batch windows of its settings.
    pub fn new(provisioner: Provisioner) -> Self {
        let batcher = Batcher::new(provisioner.settings.batch_idle_duration, provisioner.settings.batch_max_duration);
        Self { provisioner, batcher, next_requeue: None }
    }
}

impl Reconciler for ProvisioningController {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "provisioner"
    }

    fn watches(&self) -> Kinds {
        // The triggers: provisionable pods and nodes tainted disrupted.
        Kinds::of(&[Kind::Pod, Kind::Node])
    }

    /// Offers the current triggers; provisions when the window closes, else sleeps until it
    /// does, the next requeue, or a trigger change.
    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<Action, Self::Error> {
        let now = Instant::now();
        let next_requeue = self.next_requeue.get_or_insert(now + REQUEUE);
        if now >= *next_requeue {
            self.batcher.requeue();
            *next_requeue = now + REQUEUE;
        }
        let next_requeue = *next_requeue;
        self.batcher.offer(&Provisioner::triggers(snapshot), now);
        if self.batcher.take_due(now) {
            // Core provisioner.go l. 141: no pass until the cluster state is synced, which
            // includes every NodeClaim it holds having launched (`Snapshot::launches_resolved`,
            // cluster.go l. 167–178): the claims of the last pass are capacity the next one
            // must count (scheduler.go l. 614 `addToExistingNode`), not launch again.
            if snapshot.is_synced() && snapshot.launches_resolved() {
                let summary = self.provisioner.provision().await;
                tracing::debug!(?summary, "provisioning pass");
                // Look again at once: triggers that arrived meanwhile open the next window.
                return Ok(Action::requeue(Duration::ZERO));
            }
            self.batcher.requeue();
            return Ok(Action::requeue(UNSYNCED_RETRY).paced(UNSYNCED_RETRY));
        }
        let wake = self.batcher.deadline().map_or(next_requeue, |d| d.min(next_requeue));
        Ok(Action::requeue(wake.saturating_duration_since(now)))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}
