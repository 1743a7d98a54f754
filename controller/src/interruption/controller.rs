//! The interruption controller loop (aws `interruption/controller.go` and `providers/sqs`):
//! resolve the queue URL, long-poll (20 s, up to 10 messages, 20 s visibility), handle each
//! message in receive order, and delete it. A message whose NodeClaim could not be acted on is
//! left on the queue, so SQS redelivers it after the visibility timeout.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata};
use futures::StreamExt;
use kube::api::DeleteParams;
use kube::{Api, Client, ResourceExt};

use super::messages::{self, Kind, Message, instance_id_of};
use super::{Action, InterruptionStats};
use crate::apis::NodeClaim;
use crate::apis::labels::{CAPACITY_TYPE_SPOT, INSTANCE_TYPE_LABEL, TOPOLOGY_ZONE_LABEL};
use crate::cloudprovider::CloudProvider;
use crate::runtime::clock::elapsed;
use crate::runtime::reconcile::{self, Env, Kinds, Reconciler};
use crate::runtime::{Event, EventRecorder, EventType, SharedClock};
use crate::state::{Cluster, Snapshot};

/// Long-poll wait per ReceiveMessage (aws sqs provider; the SQS maximum).
pub const RECEIVE_WAIT: Duration = Duration::from_secs(20);
/// Messages per ReceiveMessage (the SQS maximum).
pub const RECEIVE_MESSAGES_MAX: i32 = 10;
/// How many received messages are handled at once (aws `interruption/controller.go`,
/// `ParallelizeUntil(ctx, 10, ...)`).
pub const HANDLE_PARALLELISM: usize = 10;
/// How long a received message stays invisible to other receivers.
pub const VISIBILITY_TIMEOUT: Duration = Duration::from_secs(20);
/// First delay after a failed SQS call; doubles per consecutive failure...
pub const ERROR_BACKOFF_MIN: Duration = Duration::from_secs(1);
/// ...up to this.
pub const ERROR_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How often to check whether the cluster state has synced before the first receive (a message
/// handled against an empty state would find no NodeClaim and be dropped).
pub const SYNC_POLL: Duration = Duration::from_secs(1);

/// SQS error codes meaning the queue URL no longer resolves (it must be looked up again).
const QUEUE_GONE_CODES: [&str; 2] = ["AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"];

/// The interruption controller.
#[derive(Clone)]
pub struct Interruption {
    client: Client,
    cluster: Arc<Cluster>,
    cloud: Arc<dyn CloudProvider>,
    sqs: aws_sdk_sqs::Client,
    queue_name: String,
    clock: SharedClock,
    events: EventRecorder,
    stats: Arc<InterruptionStats>,
    /// The queue's URL once resolved; forgotten when the queue is gone.
    url: Option<String>,
    /// Failed calls in a row, for the backoff.
    failures: u32,
}

/// Why a reconcile of the interruption queue failed; every cause is retried with backoff.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterruptionError {
    /// `GetQueueUrl` failed.
    #[error("resolving interruption queue {queue}: {message}")]
    QueueUrl {
        /// The queue name.
        queue: String,
        /// What SQS said.
        message: String,
    },
    /// `ReceiveMessage` failed.
    #[error("receiving interruption messages from {queue}: {message}")]
    Receive {
        /// The queue name.
        queue: String,
        /// What SQS said.
        message: String,
        /// The queue no longer exists: its URL is resolved again.
        queue_gone: bool,
    },
}

/// What became of one received message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handled {
    /// Acted on (or nothing to do); delete it.
    Done(Kind),
    /// Not parseable; delete it and count it.
    Unparseable(String),
    /// An action failed; leave it for redelivery.
    Failed(String),
}

impl Interruption {
    /// An interruption controller reading `queue_name` (`--interruption-queue`; empty disables).
    pub fn new(
        client: Client,
        cluster: Arc<Cluster>,
        cloud: Arc<dyn CloudProvider>,
        sqs: aws_sdk_sqs::Client,
        queue_name: impl Into<String>,
        clock: SharedClock,
        events: EventRecorder,
    ) -> Self {
        Self {
            client,
            cluster,
            cloud,
            sqs,
            queue_name: queue_name.into(),
            clock,
            events,
            stats: Arc::default(),
            url: None,
            failures: 0,
        }
    }

    /// The counters, shared with the running controller (for metrics).
    pub fn stats(&self) -> Arc<InterruptionStats> {
        self.stats.clone()
    }

    /// Whether a queue is configured (`--interruption-queue`); without one there is nothing to
    /// run.
    pub fn is_enabled(&self) -> bool {
        !self.queue_name.is_empty()
    }

    /// Polls the queue for ever, alone (as the interruption tests do). Returns at once when no
    /// queue is configured.
    pub async fn run(self) {
        if !self.is_enabled() {
            tracing::info!("no interruption queue configured; interruption handling disabled");
            return;
        }
        let env = Env::standalone(
            self.cluster.clone(),
            self.client.clone(),
            self.cloud.clone(),
            self.clock.clone(),
            self.events.clone(),
        );
        reconcile::run(self, env).await;
    }

    async fn queue_url(&self) -> Result<String, String> {
        let output = self
            .sqs
            .get_queue_url()
            .queue_name(&self.queue_name)
            .send()
            .await
            .map_err(|e| DisplayErrorContext(e).to_string())?;
        output.queue_url().map(str::to_owned).ok_or_else(|| "GetQueueUrl returned no URL".to_string())
    }

    /// The queue URL, resolved on first use.
    async fn url(&mut self) -> Result<String, InterruptionError> {
        if let Some(url) = &self.url {
            return Ok(url.clone());
        }
        let url = self
            .queue_url()
            .await
            .map_err(|message| InterruptionError::QueueUrl { queue: self.queue_name.clone(), message })?;
        tracing::debug!(queue = %self.queue_name, "watching interruption queue");
        self.url = Some(url.clone());
        Ok(url)
    }

    /// One long poll and the handling of what it returned. The error says whether the queue
    /// URL must be resolved again.
    async fn poll(&self, url: &str) -> Result<(), (String, bool)> {
        let output = self
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(RECEIVE_MESSAGES_MAX)
            .wait_time_seconds(i32::try_from(RECEIVE_WAIT.as_secs()).unwrap_or(20))
            .visibility_timeout(i32::try_from(VISIBILITY_TIMEOUT.as_secs()).unwrap_or(20))
            .send()
            .await
            .map_err(|e| {
                let gone = e.code().is_some_and(|code| QUEUE_GONE_CODES.contains(&code));
                (DisplayErrorContext(e).to_string(), gone)
            })?;
        let received = output.messages();
        debug_assert!(received.len() <= usize::try_from(RECEIVE_MESSAGES_MAX).unwrap_or(10));
        // The messages of one receive are handled concurrently, up to `HANDLE_PARALLELISM`
        // at once, as aws `pkg/controllers/interruption/controller.go` does
        // (`workqueue.ParallelizeUntil(ctx, 10, len(sqsMessages), ...)`): a burst of spot
        // warnings under a slow or throttled API server waits on one round trip, not ten.
        futures::stream::iter(received)
            .for_each_concurrent(HANDLE_PARALLELISM, |message| self.handle_and_delete(url, message))
            .await;
        Ok(())
    }

    /// Handles one received message and deletes it from the queue unless it must come back.
    async fn handle_and_delete(&self, url: &str, message: &aws_sdk_sqs::types::Message) {
        let handled = self.handle_body(message.body().unwrap_or_default()).await;
        let delete = match &handled {
            Handled::Done(_) => true,
            Handled::Unparseable(error) => {
                tracing::error!(message_id = message.message_id().unwrap_or_default(), %error, "failed parsing interruption message");
                true
            }
            Handled::Failed(error) => {
                tracing::warn!(message_id = message.message_id().unwrap_or_default(), %error, "handling interruption message; it will be redelivered");
                false
            }
        };
        if delete && let Some(handle) = message.receipt_handle() {
            match self.sqs.delete_message().queue_url(url).receipt_handle(handle).send().await {
                Ok(_) => self.stats.deleted(),
                Err(e) => tracing::warn!(error = %DisplayErrorContext(e), "deleting interruption message"),
            }
        }
    }

    /// Parses and acts on one message body (everything but the queue bookkeeping).
    pub async fn handle_body(&self, body: &str) -> Handled {
        let message = match messages::parse(body) {
            Ok(message) => message,
            Err(error) => {
                self.stats.unparseable();
                return Handled::Unparseable(format!(
                    "{error}: {}",
                    std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default()
                ));
            }
        };
        let kind = message.kind();
        self.stats.received(kind);
        if kind == Kind::NoOp {
            self.observe_latency(&message);
            return Handled::Done(kind);
        }
        let snapshot = self.cluster.snapshot();
        let mut failures = Vec::new();
        for instance_id in message.instance_ids() {
            let Some(claim) = node_claim_for_instance(&snapshot, instance_id) else { continue };
            if let Err(error) = self.handle_node_claim(&snapshot, &message, claim).await {
                failures.push(error);
            }
        }
        if !failures.is_empty() {
            return Handled::Failed(failures.join("; "));
        }
        self.observe_latency(&message);
        Handled::Done(kind)
    }

    /// A handled message's time on the queue, from its event time to now (Karpenter observes
    /// it for each message handled without error, before deleting it).
    fn observe_latency(&self, message: &Message) {
        if let Some(start) = message.metadata().start_time() {
            self.stats.latency(elapsed(start, self.clock.now()));
        }
    }

    async fn handle_node_claim(&self, snapshot: &Snapshot, message: &Message, claim: &NodeClaim) -> Result<(), String> {
        let kind = message.kind();
        let action = Action::for_kind(kind);
        let node = snapshot.nodes_for_node_claim(claim).into_iter().next().cloned();
        self.notify(message, claim, node.as_deref());
        self.stats.action(action);
        if kind == Kind::SpotInterrupted {
            let labels = claim.labels();
            if let (Some(zone), Some(instance_type)) =
                (labels.get(TOPOLOGY_ZONE_LABEL), labels.get(INSTANCE_TYPE_LABEL))
            {
                self.cloud.unavailable_offerings().mark_unavailable(
                    kind.as_str(),
                    CAPACITY_TYPE_SPOT,
                    instance_type,
                    zone,
                );
            }
        }
        if action == Action::NoAction || claim.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        match api.delete(&claim.name_any(), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(error) => return Err(format!("deleting the nodeclaim on interruption message, {error}")),
        }
        tracing::info!(nodeclaim = %claim.name_any(), action = action.as_str(), message_kind = kind.as_str(), "initiating delete from interruption message");
        self.stats.node_claim_deleted();
        let text = "Interruption triggered termination for the NodeClaim";
        self.events.publish(Event::about(claim, EventType::Warning, "TerminatingOnInterruption", text));
        if let Some(node) = &node {
            let text = "Interruption triggered termination for the Node";
            self.events.publish(Event::about(node.as_ref(), EventType::Warning, "TerminatingOnInterruption", text));
        }
        Ok(())
    }

    /// The events Karpenter publishes for each kind (aws `interruption/events`).
    fn notify(&self, message: &Message, claim: &NodeClaim, node: Option<&k8s_openapi::api::core::v1::Node>) {
        let (type_, reason, text) = match message.kind() {
            Kind::RebalanceRecommendation => {
                (EventType::Normal, "SpotRebalanceRecommendation", "Spot rebalance recommendation was triggered")
            }
            Kind::ScheduledChange => {
                (EventType::Warning, "InstanceUnhealthy", "An unhealthy warning was triggered for the instance")
            }
            Kind::SpotInterrupted => (EventType::Warning, "SpotInterrupted", "Spot interruption warning was triggered"),
            Kind::InstanceStopped => (EventType::Warning, "InstanceStopping", "Instance is stopping"),
            Kind::InstanceTerminated => (EventType::Warning, "InstanceTerminating", "Instance is terminating"),
            Kind::CapacityReservationInterrupted => (
                EventType::Warning,
                "CapacityReservationInterrupted",
                "Capacity reservation interruption warning was triggered",
            ),
            Kind::NoOp => return,
        };
        self.events.publish(Event::about(claim, type_, reason, text));
        if let Some(node) = node {
            self.events.publish(Event::about(node, type_, reason, text));
        }
    }
}

/// The NodeClaim whose providerID names `instance_id` (first in name order).
pub fn node_claim_for_instance<'a>(snapshot: &'a Snapshot, instance_id: &str) -> Option<&'a NodeClaim> {
    snapshot
        .node_claims
        .values()
        .find(|claim| claim.provider_id().and_then(instance_id_of) == Some(instance_id))
        .map(AsRef::as_ref)
}

impl Reconciler for Interruption {
    type Error = InterruptionError;

    fn name(&self) -> &'static str {
        "interruption"
    }

    fn watches(&self) -> Kinds {
        // The queue is the input: each reconcile is one long poll, then the next at once.
        Kinds::NONE
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<reconcile::Action, Self::Error> {
        if !snapshot.is_synced() {
            return Ok(reconcile::Action::requeue(SYNC_POLL));
        }
        let url = self.url().await?;
        if let Err((message, queue_gone)) = self.poll(&url).await {
            if queue_gone {
                self.url = None;
            }
            return Err(InterruptionError::Receive { queue: self.queue_name.clone(), message, queue_gone });
        }
        self.failures = 0;
        Ok(reconcile::Action::requeue(Duration::ZERO))
    }

    fn error_policy(&mut self, _error: &Self::Error) -> reconcile::Action {
        reconcile::Action::requeue(backoff(&mut self.failures))
    }
}

/// The next error backoff: 1 s doubling to 60 s.
fn backoff(failures: &mut u32) -> Duration {
    let exponent = (*failures).min(6);
    *failures = failures.saturating_add(1);
    ERROR_BACKOFF_MIN.saturating_mul(1 << exponent).min(ERROR_BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqs_error_backoff_doubles_to_a_minute() {
        let mut failures = 0;
        let delays: Vec<u64> = (0..8).map(|_| backoff(&mut failures).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[test]
    fn node_claims_are_found_by_the_instance_in_their_provider_id() {
        let claim: NodeClaim = serde_json::from_value(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
            "spec": {"requirements": [], "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"}},
            "status": {"providerID": "aws:///us-east-1a/i-0abc"}
        }))
        .expect("claim");
        let mut snapshot = Snapshot::default();
        snapshot.node_claims.insert("c".into(), Arc::new(claim));
        assert!(node_claim_for_instance(&snapshot, "i-0abc").is_some());
        assert!(node_claim_for_instance(&snapshot, "i-0ab").is_none());
    }
}
