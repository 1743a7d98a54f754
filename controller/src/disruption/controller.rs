//! The singleton disruption loop (karpenter-behaviour.md §5.1), a [`Reconciler`] on a timer:
//! once cluster state is synced,
//! each loop releases stale `karpenter.sh/disrupted` taints, builds a [`DisruptionInput`],
//! asks [`decide`] for at most one command (Emptiness → Drift → multi-node → single-node),
//! re-validates consolidation after [`VALIDATION_DELAY`] and hands the command to the
//! [`Queue`]. After an action it loops again at once; otherwise it waits [`POLL_IDLE`].
//! Consolidation that found nothing marks the cluster consolidated unless a budget held a
//! candidate back or single-node consolidation timed out.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use kube::{Client, ResourceExt};

use super::balanced::totals_for;
use super::budgets::{allowed_disruptions, constrained_by_budgets};
use super::candidates::{DisruptionClass, get_candidates};
use super::command::{Command, Method};
use super::consolidation::consolidation_blocker;
use super::drift::drift;
use super::emptiness::{emptiness, is_empty_candidate};
use super::execution::{Queue, set_disrupted_taint, set_disruption_reason};
use super::input::{DisruptionInput, DisruptionOptions};
use super::multi_node::multi_node;
use super::report::{DISRUPTION_BLOCKED, Report, UNCONSOLIDATABLE};
use super::single_node::single_node;
use super::validation::validate;
use super::{CONSOLIDATION_REFRESH, POLL_IDLE, VALIDATION_DELAY};
use crate::apis::condition::StatusConditions;
use crate::apis::labels::DO_NOT_DISRUPT_ANNOTATION;
use crate::apis::nodeclaim::{CONDITION_CONSOLIDATABLE, CONDITION_DISRUPTION_REASON, CONDITION_INITIALIZED};
use crate::apis::nodepool::DisruptionReason;
use crate::cloudprovider::CloudProvider;
use crate::provisioning::pending::is_terminal;
use crate::provisioning::provisioner::{has_disrupted_taint, ordered_pools, usable_pool};
use crate::runtime::clock::elapsed;
use crate::runtime::events::DEFAULT_DEDUPE_TIMEOUT;
use crate::runtime::reconcile::{Action, Env, Kinds, Reconciler};
use crate::runtime::{Clock, Event, EventRecorder, EventType, Metrics, Settings, SharedClock};
use crate::scheduling::NodePoolInput;
use crate::state::{Cluster, Snapshot};

/// What the loop remembers between decisions.
#[derive(Clone, Debug, Default)]
pub struct LoopState {
    /// Pools single-node consolidation did not reach before its last timeout.
    pub unseen_pools: BTreeSet<String>,
    /// The cluster fingerprint and time of the last consolidation that found nothing
    /// (core `IsConsolidated`): unchanged clusters are not re-simulated for
    /// [`CONSOLIDATION_REFRESH`].
    pub consolidated: Option<(u64, jiff::Timestamp)>,
}

/// A fingerprint of what consolidation depends on: claims and their conditions, where pods
/// run, pools, and the queue.
pub fn consolidation_fingerprint(input: &DisruptionInput) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for (name, claim) in &input.snapshot.node_claims {
        name.hash(&mut hasher);
        claim.is_condition_true(CONDITION_CONSOLIDATABLE).hash(&mut hasher);
        claim.is_condition_true(CONDITION_INITIALIZED).hash(&mut hasher);
        claim.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    }
    for (key, pod) in &input.snapshot.pods {
        key.hash(&mut hasher);
        pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).hash(&mut hasher);
        is_terminal(pod).hash(&mut hasher);
    }
    for (name, pool) in &input.snapshot.node_pools {
        name.hash(&mut hasher);
        pool.metadata.resource_version.hash(&mut hasher);
    }
    input.queued.hash(&mut hasher);
    input.memory.marked_for_deletion.hash(&mut hasher);
    hasher.finish()
}

/// One loop's decision: the methods in order, the first command wins. Pure apart from
/// reading `clock` for the consolidation timeouts.
pub fn decide(
    input: &DisruptionInput,
    clock: &dyn Clock,
    state: &mut LoopState,
    report: &mut Report,
) -> Option<Command> {
    let (candidates, blocked) = get_candidates(input, DisruptionClass::Graceful);
    report.blocked_nodes(&blocked);
    report.budget_blocked(input, DisruptionReason::Empty);
    let mut budgets = allowed_disruptions(input, DisruptionReason::Empty);
    if let Some(command) = emptiness(&candidates, &mut budgets, report) {
        return Some(command);
    }
    // Core emptiness.go l. 71-92: empty candidates an `Empty` budget held back keep the
    // cluster from being marked consolidated (no command means no budget was taken).
    let empty_pools = candidates.iter().filter(|c| is_empty_candidate(c)).map(|c| c.pool.as_str());
    let empty_constrained = constrained_by_budgets(empty_pools, &budgets);
    let (eventual, _) = get_candidates(input, DisruptionClass::Eventual);
    report.budget_blocked(input, DisruptionReason::Drifted);
    let mut budgets = allowed_disruptions(input, DisruptionReason::Drifted);
    if let Some(command) = drift(input, &eventual, &mut budgets, report) {
        return Some(command);
    }
    let fingerprint = consolidation_fingerprint(input);
    if let Some((seen, at)) = state.consolidated
        && seen == fingerprint
        && elapsed(at, input.now) < CONSOLIDATION_REFRESH
    {
        return None;
    }
    report.budget_blocked(input, DisruptionReason::Underutilized);
    let mut budgets = allowed_disruptions(input, DisruptionReason::Underutilized);
    // Core controller.go l. 186-204: totals from every candidate before the method's filter.
    let totals = totals_for(input, &candidates);
    let eligible = candidates.iter().filter(|c| consolidation_blocker(c).is_none()).map(|c| c.pool.as_str());
    let constrained = constrained_by_budgets(eligible, &budgets);
    if let Some(command) = multi_node(input, &candidates, &mut budgets, clock, &totals, report) {
        return Some(command);
    }
    let budgets = allowed_disruptions(input, DisruptionReason::Underutilized);
    if let Some(command) = single_node(input, &candidates, &budgets, clock, &mut state.unseen_pools, &totals, report) {
        return Some(command);
    }
    // Core singlenodeconsolidation.go l. 66-74 and 116-121: neither a budget that held a
    // candidate back (here or in Emptiness) nor a timeout (pools left unseen) marks the
    // cluster consolidated.
    if !constrained && !empty_constrained && state.unseen_pools.is_empty() {
        state.consolidated = Some((fingerprint, input.now));
    }
    None
}

/// The disruption controller.
pub struct Disruption {
    client: Client,
    cluster: Arc<Cluster>,
    cloud: Arc<dyn CloudProvider>,
    clock: SharedClock,
    events: EventRecorder,
    metrics: Metrics,
    options: DisruptionOptions,
    queue: Queue,
    state: LoopState,
}

impl Disruption {
    /// A controller over `cluster`, acting through `client` and pricing through `cloud`.
    pub fn new(
        client: Client,
        cluster: Arc<Cluster>,
        cloud: Arc<dyn CloudProvider>,
        clock: SharedClock,
        events: EventRecorder,
        metrics: Metrics,
        settings: &Settings,
    ) -> Self {
        let queue = Queue::new(client.clone(), cluster.clone(), clock.clone(), events.clone(), metrics.clone());
        Self {
            client,
            cluster,
            cloud,
            clock,
            events,
            metrics,
            options: DisruptionOptions::from_settings(settings),
            queue,
            state: LoopState::default(),
        }
    }

    /// The usable pools with their instance types.
    async fn pools(&self, snapshot: &Snapshot) -> Vec<NodePoolInput> {
        let mut pools = Vec::new();
        for pool in ordered_pools(snapshot) {
            let Ok(class) = usable_pool(snapshot, &pool) else { continue };
            match self.cloud.instance_types(&pool, class).await {
                Ok(types) => pools.push(NodePoolInput { node_pool: (*pool).clone(), instance_types: types }),
                // core disruption/helpers.go l. 236-240: skipped, its nodes left alone.
                Err(error @ crate::cloudprovider::CloudError::UnevaluatedNodePool(_)) => {
                    tracing::debug!(nodepool = %pool.name_any(), %error, "skipping, node overlays are not applied");
                }
                Err(error) => tracing::warn!(nodepool = %pool.name_any(), %error, "listing instance types"),
            }
        }
        pools
    }

    /// A fresh input from cluster state.
    pub async fn input(&self) -> DisruptionInput {
        let snapshot = self.cluster.snapshot();
        let pools = self.pools(&snapshot).await;
        let memory = self.cluster.memory();
        DisruptionInput::new(snapshot, memory, pools, self.queue.queued(), self.clock.now(), self.options.clone())
    }

    /// Crash recovery: untaint nodes (and clear `DisruptionReason`) that no command owns and
    /// nobody is deleting; forget marks of claims that are gone.
    async fn release_stale(&self, input: &DisruptionInput) {
        let snapshot = &input.snapshot;
        for node in snapshot.nodes.values() {
            let claim = snapshot.node_claim_for_node(node);
            let owned = claim.is_some_and(|c| {
                let name = c.name_any();
                c.metadata.deletion_timestamp.is_some()
                    || input.queued.contains(&name)
                    || input.memory.marked_for_deletion.contains(&name)
            });
            if node.metadata.deletion_timestamp.is_some() || owned {
                continue;
            }
            if has_disrupted_taint(node) {
                tracing::info!(node = %node.name_any(), "removing stale disrupted taint");
                if let Err(error) = set_disrupted_taint(&self.client, &node.name_any(), false).await {
                    tracing::debug!(node = %node.name_any(), %error, "removing stale taint");
                }
            }
            if let Some(claim) = claim
                && claim.condition(CONDITION_DISRUPTION_REASON).is_some()
            {
                set_disruption_reason(&self.client, &self.clock, &claim.name_any(), None).await;
            }
        }
        let gone: Vec<String> = input
            .memory
            .marked_for_deletion
            .iter()
            .filter(|name| !snapshot.node_claims.contains_key(*name))
            .cloned()
            .collect();
        if !gone.is_empty() {
            self.cluster.remember(|m| {
                for name in &gone {
                    m.marked_for_deletion.remove(name);
                }
            });
        }
    }

    /// Publishes the loop's notes as upstream's `disruption/events` do: `Unconsolidatable`
    /// deduped per object for 15 minutes, `DisruptionBlocked` for the default 2 minutes and
    /// never for a do-not-disrupt annotation ("an intentional user action", events.go Blocked).
    fn publish(&self, report: &Report) {
        for note in &report.notes {
            if note.reason == DISRUPTION_BLOCKED && note.message.contains(DO_NOT_DISRUPT_ANNOTATION) {
                continue;
            }
            let timeout =
                if note.reason == UNCONSOLIDATABLE { UNCONSOLIDATABLE_DEDUPE } else { DEFAULT_DEDUPE_TIMEOUT };
            for event in [
                Event::about(note.node.as_ref(), EventType::Normal, note.reason, note.message.clone()),
                Event::about(note.claim.as_ref(), EventType::Normal, note.reason, note.message.clone()),
            ] {
                self.events.publish(event.deduped_for(timeout));
            }
        }
        for (pool, reason) in &report.blocked_pools {
            let reason = reason.as_str();
            self.events.publish(
                Event::about(
                    pool.as_ref(),
                    EventType::Normal,
                    DISRUPTION_BLOCKED,
                    format!("No allowed disruptions for disruption reason {reason} due to blocking budget"),
                )
                .deduped_also_by(reason)
                .deduped_for(NODEPOOL_BLOCKED_DEDUPE),
            );
        }
        for (reason, count) in &report.eligible {
            self.metrics.disruption_eligible_nodes(reason, *count);
        }
    }

    /// One loop; returns whether a command started.
    pub async fn disrupt_once(&mut self) -> bool {
        let input = self.input().await;
        self.release_stale(&input).await;
        let mut report = Report::default();
        let started = self.clock.now();
        let decided = decide(&input, self.clock.as_ref(), &mut self.state, &mut report);
        self.publish(&report);
        let Some(command) = decided else { return false };
        self.metrics.disruption_evaluation_duration(
            &command.reason().as_str().to_lowercase(),
            command.method.consolidation_type(),
            elapsed(started, self.clock.now()),
        );
        let command = if command.method.validates() {
            tokio::time::sleep(VALIDATION_DELAY).await;
            let fresh = self.input().await;
            match validate(&fresh, &command) {
                Ok(command) => command,
                Err(error) => {
                    tracing::info!(candidates = ?command.candidate_names(), %error, "disruption command failed validation");
                    for candidate in &command.candidates {
                        self.events.publish(Event::about(
                            candidate.node.as_ref(),
                            EventType::Normal,
                            "DisruptionBlocked",
                            format!("Disruption command rejected by validation: {error}"),
                        ));
                    }
                    return false;
                }
            }
        } else {
            command
        };
        let reason = command.reason().as_str().to_lowercase();
        self.metrics.disruption_decision(command.decision().as_str(), &reason, command.method.consolidation_type());
        tracing::info!(
            method = ?command.method,
            decision = command.decision().as_str(),
            candidates = ?command.candidate_names(),
            replacements = command.replacements.len(),
            savings = command.savings(),
            "disrupting"
        );
        if command.method == Method::Drift || command.method == Method::Emptiness {
            self.state.consolidated = None;
        }
        match self.queue.start(command).await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "starting disruption command");
                false
            }
        }
    }
}

/// A node's `Unconsolidatable` event is published at most this often (core
/// `disruption/events/events.go` Unconsolidatable: `DedupeTimeout: 15m`).
const UNCONSOLIDATABLE_DEDUPE: Duration = Duration::from_secs(15 * 60);

/// A NodePool's budget-blocked event is published at most this often per reason (core
/// `disruption/events/events.go` NodePoolBlockedForDisruptionReason: 1 minute, "as a
/// NodePool's disruption budget can change every minute").
const NODEPOOL_BLOCKED_DEDUPE: Duration = Duration::from_secs(60);

/// How soon the loop looks again after it started a command: at once (core
/// `disruption/controller.go` l. 177 `singleton.RequeueImmediately`, operatorpkg's 1 ns), so
/// a budget of several nodes is used up loop after loop.
const ACTED_REQUEUE: Duration = Duration::from_nanos(1);
/// How soon the loop looks again while cluster state is not synced (core l. 144, 1 s).
const UNSYNCED_REQUEUE: Duration = Duration::from_secs(1);

impl Reconciler for Disruption {
    type Error = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "disruption"
    }

    fn watches(&self) -> Kinds {
        // Core's singleton polls: a decision needs the whole cluster, so it runs on its own beat.
        Kinds::NONE
    }

    async fn reconcile(&mut self, snapshot: &Snapshot, _env: &Env) -> Result<Action, Self::Error> {
        if !snapshot.is_synced() {
            return Ok(Action::requeue(UNSYNCED_REQUEUE));
        }
        let acted = self.disrupt_once().await;
        Ok(Action::requeue(if acted { ACTED_REQUEUE } else { POLL_IDLE }))
    }

    fn error_policy(&mut self, error: &Self::Error) -> Action {
        match *error {}
    }
}
