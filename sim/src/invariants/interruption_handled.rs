//! `interruptionHandled`: when the cloud delivers an interruption event for an instance that
//! backs a NodeClaim, that NodeClaim is deleting soon after the event became receivable and,
//! for a spot interruption warning, before the instance is reclaimed.
//!
//! What Karpenter acts on (aws/karpenter-provider-aws `pkg/controllers/interruption/utils.go`
//! `actionForMessage`, lines 207-216): a spot interruption warning, a scheduled change (AWS
//! Health) and an instance state change to `stopping`, `stopped`, `shutting-down` or
//! `terminated` (`messages/statechange/parser.go` line 27, `acceptedStates`) are
//! `CordonAndDrain`, which deletes the NodeClaim (`deleteNodeClaim`, lines 153-168, a no-op
//! for a claim already deleting); a rebalance recommendation is `NoAction`. The NodeClaim is
//! found by the instance id of its `status.providerID` (`handleMessage`, lines 64-99); an
//! instance no claim names is skipped. The controller polls the queue without pause
//! (`controller.go` `Reconcile`, lines 82-126: `RequeueImmediately` after every batch).
//!
//! Karpenter's instance status controller acts without the queue: a system or instance
//! status check failed for [`UNHEALTHY_THRESHOLD`] is a forceful delete at its next poll
//! (aws `pkg/controllers/interruption/instancestatus_controller.go`, polled every
//! [`STATUS_POLL`]), so a check the cloud reports failed that long, and still failing a poll
//! later, is judged like a delivered event from then (a check that heals sooner may fall
//! between polls; an attached-EBS check Karpenter ignores).
//!
//! The oracle learns the events from the fake cloud's own record
//! ([`dovetail_fakecloud::FakeCloud::published`]), never from the controller: a message the
//! queue's loss fault dropped is not judged (nobody could act on it), and a delayed one's
//! window opens when it became receivable. The claim is the one whose providerID named the
//! instance at the first tick after that, and only if the link was visible at least
//! [`LINK_MARGIN`] (plus the watch delay in force) before: a controller whose cache had not
//! yet seen the providerID could not have matched the message either. The interruption queue
//! is configured whenever the world runs a controller (the world builder creates it and the
//! controller's default settings name it), so the oracle judges whenever the cloud has
//! published anything.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use dovetail_fakecloud::{Published, PublishedKind};

use super::{Ctx, Invariant, Violation, format_duration};
use crate::oracle::view::View;

/// How long before the event a claim's providerID must have been visible for the oracle to
/// hold the controller to matching it.
pub const LINK_MARGIN: Duration = Duration::from_secs(10);

/// The name in reports.
pub const NAME: &str = "interruptionHandled";

/// The instance states whose state-change notification Karpenter acts on.
const ACTED_ON_STATES: [&str; 4] = ["stopping", "stopped", "shutting-down", "terminated"];

/// Whether Karpenter deletes the NodeClaim for an event of this kind.
pub fn acted_on(kind: PublishedKind) -> bool {
    match kind {
        PublishedKind::SpotInterruption | PublishedKind::ScheduledChange => true,
        PublishedKind::StateChange(state) => ACTED_ON_STATES.contains(&state),
        PublishedKind::Rebalance => false,
    }
}

/// How long a system or instance status check must have failed before Karpenter's instance
/// status controller counts the instance unhealthy (aws
/// `pkg/providers/instancestatus/instancestatus.go` l. 45, `UnhealthyThreshold`).
pub const UNHEALTHY_THRESHOLD: Duration = Duration::from_secs(120);

/// How often Karpenter polls `DescribeInstanceStatus` (aws
/// `pkg/controllers/interruption/instancestatus_controller.go`: requeue after a minute).
pub const STATUS_POLL: Duration = Duration::from_secs(60);

/// One delivered event the controller must act on.
#[derive(Clone, Debug)]
struct Pending {
    /// What happened, for the message.
    described: String,
    /// A spot interruption warning (its deadline is also the reclaim).
    spot: bool,
    instance_id: String,
    receivable_at: Duration,
    /// When the NodeClaim must be deleting.
    deadline: Duration,
    /// The claim it names, once resolved at the first tick after `receivable_at`.
    claim: Option<String>,
}

/// The invariant: follows the cloud's record of published events.
#[derive(Default)]
pub struct InterruptionHandled {
    /// How many of the cloud's published events were read.
    read: usize,
    /// Events waiting to be judged.
    pending: Vec<Pending>,
    /// When each claim's providerID was first seen, by claim name.
    linked_since: BTreeMap<String, (String, Duration)>,
    reported: BTreeSet<(String, String)>,
    /// Failed status checks already taken in: (instance, failed since).
    checks_seen: BTreeSet<(String, Duration)>,
}

impl InterruptionHandled {
    /// Reads the events published since the last call, then judges them against `view`.
    /// `reclaim_at` gives a spot instance's reclaim time (the cloud's record); `within` is how
    /// long after an event became receivable its NodeClaim may take to be deleting.
    /// `failed_checks` are the live instances whose system or instance status check the cloud
    /// reports failed, with since when: Karpenter's instance status controller deletes their
    /// NodeClaims once a check has failed for [`UNHEALTHY_THRESHOLD`], at its next poll
    /// ([`STATUS_POLL`]), with no queue involved (aws `instancestatus_controller.go`,
    /// `interruption/utils.go` l. 153–168).
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &mut self,
        view: &View,
        published: &[Published],
        failed_checks: &[(String, Duration)],
        cut_off: &[(Duration, Duration)],
        reclaim_at: impl Fn(&str) -> Option<Duration>,
        within: Duration,
        watch_delay: Duration,
        out: &mut Vec<Violation>,
    ) {
        let now = view.now;
        for c in view.claims.values() {
            if let Some(pid) = &c.provider_id {
                let entry = self.linked_since.entry(c.name.clone()).or_insert_with(|| (pid.clone(), now));
                if &entry.0 != pid {
                    *entry = (pid.clone(), now);
                }
            }
        }
        self.linked_since.retain(|name, _| view.claims.contains_key(name));
        for p in published.iter().skip(self.read) {
            let Some(receivable_at) = p.receivable_at else { continue };
            if !acted_on(p.kind) {
                continue;
            }
            let mut deadline = receivable_at + within;
            if p.kind == PublishedKind::SpotInterruption
                && let Some(reclaim) = reclaim_at(&p.instance_id).filter(|r| *r > receivable_at)
            {
                deadline = deadline.min(reclaim);
            }
            let deadline = past_cut_off(receivable_at, deadline, within, cut_off);
            self.pending.push(Pending {
                described: describe(p.kind),
                spot: p.kind == PublishedKind::SpotInterruption,
                instance_id: p.instance_id.clone(),
                receivable_at,
                deadline,
                claim: None,
            });
        }
        self.read = published.len();
        for (instance_id, since) in failed_checks {
            // Judged only once the check has been failing for the threshold and a whole poll
            // interval since: a check that heals sooner may fall between two polls, and
            // Karpenter never sees it aged past the threshold.
            if *since + UNHEALTHY_THRESHOLD + STATUS_POLL > now
                || !self.checks_seen.insert((instance_id.clone(), *since))
            {
                continue;
            }
            let receivable_at = *since + UNHEALTHY_THRESHOLD;
            self.pending.push(Pending {
                described: "a failed status check (DescribeInstanceStatus)".into(),
                spot: false,
                instance_id: instance_id.clone(),
                receivable_at,
                deadline: past_cut_off(receivable_at, receivable_at + STATUS_POLL + within, within, cut_off),
                claim: None,
            });
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.retain_mut(|p| self.judge(p, view, watch_delay, out));
        self.pending = pending;
    }

    /// Judges one event; `false` once it needs no more judging.
    fn judge(&mut self, p: &mut Pending, view: &View, watch_delay: Duration, out: &mut Vec<Violation>) -> bool {
        let now = view.now;
        if now < p.receivable_at {
            return true;
        }
        let suffix = format!("/{}", p.instance_id);
        if p.claim.is_none() {
            let backing =
                view.claims.values().find(|c| c.provider_id.as_deref().is_some_and(|pid| pid.ends_with(&suffix)));
            let Some(c) = backing else { return false };
            let seen_early = self
                .linked_since
                .get(&c.name)
                .is_some_and(|(_, since)| *since + LINK_MARGIN + watch_delay <= p.receivable_at);
            if !seen_early {
                return false;
            }
            p.claim = Some(c.name.clone());
        }
        let name = p.claim.as_deref().unwrap_or_default();
        let Some(claim) = view.claims.get(name) else { return false };
        if claim.deleting_since.is_some() {
            return false;
        }
        if now <= p.deadline {
            return true;
        }
        if self.reported.insert((name.to_string(), p.instance_id.clone())) {
            out.push(Violation {
                invariant: NAME.into(),
                at: now,
                objects: std::iter::once(format!("NodeClaim {name}"))
                    .chain(claim.node_name.as_ref().map(|n| format!("Node {n}")))
                    .chain(std::iter::once(format!("Instance {}", p.instance_id)))
                    .collect(),
                message: format!(
                    "{} for instance {} was receivable at {}; NodeClaim {name} is not deleting {} later (deadline {}{})",
                    p.described,
                    p.instance_id,
                    format_duration(p.receivable_at),
                    format_duration(now.saturating_sub(p.receivable_at)),
                    format_duration(p.deadline),
                    if p.spot { ", the reclaim or the window" } else { "" }
                ),
                trace_position: view.trace_position,
            });
        }
        false
    }
}

/// `deadline` for an event receivable at `receivable_at`, moved past each window in which the
/// controller was partitioned from the cloud or the API server, or down with no replica
/// left, before it: it can neither
/// receive the message (SQS lives in the cloud) nor delete the NodeClaim meanwhile, as
/// Karpenter could not (its interruption controller receives from SQS and deletes through the
/// API server: aws `pkg/controllers/interruption/controller.go` `Reconcile`, `sqs.go`), so it
/// gets `within` from the heal.
pub fn past_cut_off(
    receivable_at: Duration,
    deadline: Duration,
    within: Duration,
    cut_off: &[(Duration, Duration)],
) -> Duration {
    let mut deadline = deadline;
    let mut sorted: Vec<&(Duration, Duration)> = cut_off.iter().collect();
    sorted.sort();
    for (start, heal) in sorted {
        if *start <= deadline && *heal > receivable_at {
            deadline = deadline.max(*heal + within);
        }
    }
    deadline
}

/// The event's name as EventBridge gives it.
fn describe(kind: PublishedKind) -> String {
    match kind {
        PublishedKind::SpotInterruption => "a spot interruption warning".into(),
        PublishedKind::ScheduledChange => "a scheduled-change health event".into(),
        PublishedKind::StateChange(state) => format!("a state-change notification ({state})"),
        PublishedKind::Rebalance => "a rebalance recommendation".into(),
    }
}

impl Invariant for InterruptionHandled {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let cloud = ctx.cloud;
        let failed_checks: Vec<(String, Duration)> = cloud
            .instances()
            .filter(|i| i.state.is_live())
            .filter_map(|i| {
                let since = [i.status_checks.instance, i.status_checks.system].into_iter().flatten().min()?;
                Some((i.id.clone(), since))
            })
            .collect();
        self.observe(
            ctx.view,
            cloud.published(),
            &failed_checks,
            ctx.controller_cut_off,
            |id| cloud.instance(id).and_then(|i| i.reclaim_at),
            ctx.config.interruption_handled.within.0,
            ctx.watch_delay,
            out,
        );
    }
}

#[cfg(test)]
#[path = "interruption_handled_tests.rs"]
mod tests;
