//! A run's story over simulated time, as data: the [`Timeline`] behind `dovetail run
//! --html` (and the page `dovetail sweep` writes next to each failing seed's report).
//!
//! Nothing here reads the world by itself. The run's one observation pass feeds a
//! [`record::Recorder`] every simulated second (pending pods, the cloud's cost rate, the
//! LP bound, NodeClaims entering deletion with their reason, instances the cloud takes
//! away); at the end [`Timeline::assemble`] joins that recording with what the run
//! recorded anyway: the cloud's billing ledger (one bar per instance), the drawn plan
//! (fault bands, phases), the report (violations) and the trace (the lines around each
//! violation). [`html::render`] turns it into one self-contained page.
//!
//! Like the report, a timeline depends on nothing but the scenario and the seed: two runs
//! give the same timeline and so the same page, byte for byte.

mod escape;
pub mod html;
pub mod record;
mod svg;

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_fakecloud::FakeCloud;
use dovetail_world::{Trace, TraceEntry};

use crate::run::report::Report;
use crate::scenario::plan::Plan;

/// How many trace lines before a violation's position its excerpt shows.
pub const TRACE_LINES_BEFORE: u64 = 12;
/// How many trace lines after it.
pub const TRACE_LINES_AFTER: u64 = 3;

/// One run over simulated time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Scenario name.
    pub scenario: String,
    /// Root seed.
    pub seed: u64,
    /// Where simulated time ended.
    pub end: Duration,
    /// The command that reproduces the run.
    pub reproduce: String,
    /// The report's human summary (as `dovetail run` prints it).
    pub summary: String,
    /// When the faults phase ended and the liveness phase began (when the run has them).
    pub faults_until: Option<Duration>,
    /// Start of the liveness phase.
    pub liveness_from: Option<Duration>,
    /// Every instance the cloud billed, by NodePool, in launch order.
    pub nodes: Vec<NodeBar>,
    /// Pods waiting for a node (active, not DaemonSet, unbound), at each change.
    pub pending: Vec<Sample<u64>>,
    /// The cloud's cost rate, USD per hour, at each change.
    pub cost_rate: Vec<Sample<f64>>,
    /// The LP lower bound on the cost rate, USD per hour (see
    /// [`crate::invariants::cost::lower_bound_now`]), at each recomputation.
    pub lower_bound: Vec<Sample<f64>>,
    /// NodeClaims that entered deletion, with the reason.
    pub disruptions: Vec<DisruptionMark>,
    /// Every fault occurrence of the plan.
    pub faults: Vec<FaultBand>,
    /// Every invariant violation of the report, with its trace excerpt.
    pub violations: Vec<ViolationMark>,
}

/// A value from a moment on (a step function: it holds until the next sample).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample<T> {
    /// From when.
    pub at: Duration,
    /// The value.
    pub value: T,
}

/// One instance, from running to the end of billing.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeBar {
    /// EC2 instance id.
    pub instance_id: String,
    /// Its `karpenter.sh/nodepool` tag (`(untagged)` without one).
    pub nodepool: String,
    /// Instance type.
    pub instance_type: String,
    /// `spot` or `on-demand`.
    pub capacity_type: String,
    /// Availability zone.
    pub zone: String,
    /// Its NodeClaim, when the run saw one.
    pub claim: Option<String>,
    /// Its Node, when one registered.
    pub node: Option<String>,
    /// Billing start (entered running).
    pub start: Duration,
    /// Billing end; `None` while still billed at the end of the run.
    pub end: Option<Duration>,
    /// When the cloud started taking it away (spot reclaim, scheduled event, outage).
    pub interrupted_at: Option<Duration>,
}

/// A NodeClaim seen entering deletion.
#[derive(Clone, Debug, PartialEq)]
pub struct DisruptionMark {
    /// When it was first seen deleting.
    pub at: Duration,
    /// The NodeClaim.
    pub claim: String,
    /// Why (`Underutilized`, `Empty`, `Drifted`, `Expired`, `Interrupted`, `Other`).
    pub reason: String,
    /// Its instance, once launched.
    pub instance_id: Option<String>,
}

/// One fault occurrence, as drawn by the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultBand {
    /// `faults[i]` of the scenario.
    pub entry: String,
    /// Its kind (`spotInterruption`, `describeLag`, ...).
    pub kind: String,
    /// Every drawn parameter (JSON).
    pub detail: String,
    /// Start.
    pub start: Duration,
    /// Heal time; equal to `start` for an instantaneous fault.
    pub end: Duration,
}

/// One invariant violation with the trace around it.
#[derive(Clone, Debug, PartialEq)]
pub struct ViolationMark {
    /// Which invariant.
    pub invariant: String,
    /// When.
    pub at: Duration,
    /// Its position in the trace.
    pub trace_position: u64,
    /// What went wrong.
    pub message: String,
    /// The objects involved.
    pub objects: Vec<String>,
    /// The trace lines around the position (empty when the trace kept only its hash).
    pub trace_excerpt: Vec<TraceLine>,
}

/// One line of the trace with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceLine {
    /// Position (0-based, as violations name it).
    pub position: u64,
    /// The line as `--trace` writes it.
    pub text: String,
}

impl Timeline {
    /// Joins a run's `recording` with its report, plan, cloud (for the billing ledger)
    /// and trace.
    pub fn assemble(
        recording: record::Recorder,
        report: &Report,
        plan: &Plan,
        cloud: Option<&FakeCloud>,
        trace: &Trace,
    ) -> Self {
        let record::Recording { pending, cost_rate, lower_bound, disruptions, interrupted, claims, nodes } =
            recording.finish();
        let mut bars: Vec<NodeBar> = cloud
            .map(|c| {
                c.ledger()
                    .records
                    .values()
                    .map(|r| NodeBar {
                        instance_id: r.instance_id.clone(),
                        nodepool: r.nodepool.clone().unwrap_or_else(|| "(untagged)".into()),
                        instance_type: r.instance_type.clone(),
                        capacity_type: r.capacity_type.as_str().to_string(),
                        zone: r.zone.clone(),
                        claim: claims.get(&r.instance_id).cloned(),
                        node: nodes.get(&r.instance_id).cloned(),
                        start: r.start,
                        end: r.end,
                        interrupted_at: interrupted.get(&r.instance_id).copied(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        bars.sort_by(|a, b| (&a.nodepool, a.start, &a.instance_id).cmp(&(&b.nodepool, b.start, &b.instance_id)));
        let faults = plan
            .faults
            .iter()
            .map(|f| FaultBand {
                entry: f.entry.clone(),
                kind: serde_json::to_value(&f.fault)
                    .ok()
                    .and_then(|v| v["kind"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "fault".into()),
                detail: f.fault.describe(),
                start: f.at.0,
                end: f.until.map_or(f.at.0, |u| u.0),
            })
            .collect();
        let entries = if report.invariants.violations.is_empty() { Vec::new() } else { trace.entries() };
        let violations = report
            .invariants
            .violations
            .iter()
            .map(|v| ViolationMark {
                invariant: v.invariant.clone(),
                at: v.at.0,
                trace_position: v.trace_position,
                message: v.message.clone(),
                objects: v.objects.clone(),
                trace_excerpt: excerpt(&entries, v.trace_position),
            })
            .collect();
        let phase = |d: Duration| (d < plan.duration.0).then_some(d);
        Self {
            scenario: report.scenario.clone(),
            seed: report.seed,
            end: report.simulated.0,
            reproduce: report.reproduce.clone(),
            summary: report.summary(),
            faults_until: if plan.faults.is_empty() { None } else { phase(plan.phases.faults_until.0) },
            liveness_from: phase(plan.phases.liveness_from.0),
            nodes: bars,
            pending,
            cost_rate,
            lower_bound,
            disruptions,
            faults,
            violations,
        }
    }

    /// The world at `at` as the timeline saw it: pending pods, instances billed, cost rate
    /// and bound (what a violation's entry shows beside its message).
    pub fn moment(&self, at: Duration) -> Moment {
        Moment {
            pending: value_at(&self.pending, at).unwrap_or(0),
            instances: self.nodes.iter().filter(|n| n.start <= at && n.end.is_none_or(|end| at < end)).count(),
            cost_rate: value_at(&self.cost_rate, at).unwrap_or(0.0),
            lower_bound: value_at(&self.lower_bound, at).unwrap_or(0.0),
        }
    }

    /// The NodePools in the order their bars are drawn, with how many bars each has.
    pub fn pools(&self) -> BTreeMap<&str, usize> {
        let mut pools = BTreeMap::new();
        for n in &self.nodes {
            *pools.entry(n.nodepool.as_str()).or_default() += 1;
        }
        pools
    }
}

/// The world at one moment (see [`Timeline::moment`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moment {
    /// Pods waiting for a node.
    pub pending: u64,
    /// Instances billed.
    pub instances: usize,
    /// USD per hour.
    pub cost_rate: f64,
    /// The LP bound, USD per hour.
    pub lower_bound: f64,
}

/// The value a step `series` holds at `at` (`None` before its first sample).
fn value_at<T: Copy>(series: &[Sample<T>], at: Duration) -> Option<T> {
    series.iter().take_while(|s| s.at <= at).last().map(|s| s.value)
}

/// The trace lines from [`TRACE_LINES_BEFORE`] before `position` to [`TRACE_LINES_AFTER`]
/// after it. A violation's position is the trace's length when the checker saw it: the
/// lines before it are what had happened by then.
fn excerpt(entries: &[TraceEntry], position: u64) -> Vec<TraceLine> {
    let from = position.saturating_sub(TRACE_LINES_BEFORE);
    let to = position.saturating_add(TRACE_LINES_AFTER).min(entries.len() as u64);
    (from..to)
        .filter_map(|p| entries.get(usize::try_from(p).ok()?).map(|e| TraceLine { position: p, text: e.line() }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moment_reads_each_series_as_a_step_function() {
        let s = Duration::from_secs;
        let bar = |start: u64, end: Option<u64>| NodeBar {
            instance_id: "i-1".into(),
            nodepool: "p".into(),
            instance_type: "m5.large".into(),
            capacity_type: "spot".into(),
            zone: "a".into(),
            claim: None,
            node: None,
            start: s(start),
            end: end.map(s),
            interrupted_at: None,
        };
        let t = Timeline {
            end: s(100),
            nodes: vec![bar(10, Some(50)), bar(20, None)],
            pending: vec![Sample { at: s(0), value: 4 }, Sample { at: s(30), value: 0 }],
            cost_rate: vec![Sample { at: s(10), value: 0.2 }],
            ..Timeline::default()
        };
        assert_eq!(t.moment(s(5)), Moment { pending: 4, instances: 0, cost_rate: 0.0, lower_bound: 0.0 });
        assert_eq!(t.moment(s(30)).pending, 0, "a sample holds from its own time on");
        assert_eq!(t.moment(s(25)).instances, 2);
        assert_eq!(t.moment(s(50)).instances, 1, "billing ended at 50s");
        assert_eq!(t.moment(s(99)).cost_rate, 0.2);
    }
}
