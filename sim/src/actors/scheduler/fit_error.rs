//! Why a pod fits nowhere, worded exactly as kube-scheduler's `FitError.Error()`, and the
//! `PodScheduled=False` condition the scheduler actor writes (Karpenter reads pending pods by
//! that condition's reason `Unschedulable`, karpenter-behaviour.md §2.1).
//!
//! Message shape: `0/N nodes are available: <histogram>. <post-filter>` where the histogram is
//! `"<count> <reason>"` per distinct reason, sorted as strings (so `"10 …"` sorts before
//! `"2 …"`, as in Go's `sort.Strings`), and the post-filter part is the preemption plugin's
//! own FitError message prefixed with `preemption: `.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::plugins::{Code, Plugin, Status};

/// kube-scheduler `ErrNoNodesAvailable`: the message when the cluster has no nodes at all.
pub const NO_NODES_MESSAGE: &str = "no nodes available to schedule pods";
/// Condition reason for a pod the scheduler rejected (`v1.PodReasonUnschedulable`).
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
/// Condition reason for a pod held by scheduling gates (`v1.PodReasonSchedulingGated`).
pub const REASON_SCHEDULING_GATED: &str = "SchedulingGated";
/// Condition message for a gated pod.
pub const SCHEDULING_GATED_MESSAGE: &str = "Scheduling is blocked due to non-empty scheduling gates";
/// DefaultPreemption's reason for nodes where evicting pods cannot help.
pub const PREEMPTION_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// DefaultPreemption's reason for nodes without lower-priority pods.
pub const NO_PREEMPTION_VICTIMS: &str = "No preemption victims found for incoming pod";
/// DefaultPreemption's message for pods with `preemptionPolicy: Never`.
pub const PREEMPTION_POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
/// The DynamicResources plugin's PostFilter reason for pods without resource claims.
pub const NO_CLAIMS_TO_DEALLOCATE: &str = "no new claims to deallocate";

/// Which kube-scheduler release's wording to reproduce. The default matches the brief's
/// example (kube-scheduler 1.33 / 1.34.0–1.34.1 without DRA's PostFilter message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FitMessageStyle {
    /// `node(s) had untolerated taint {key: value}` (up to 1.34.1) instead of
    /// `node(s) had untolerated taint(s)` (1.34.2+, 1.35).
    pub untolerated_taint_detail: bool,
    /// Prefix the post-filter part with DRA's `no new claims to deallocate, ` (clusters where
    /// the DynamicResources plugin is enabled, e.g. 1.34+ defaults).
    pub dra_post_filter: bool,
}

impl Default for FitMessageStyle {
    fn default() -> Self {
        FitMessageStyle { untolerated_taint_detail: true, dra_post_filter: false }
    }
}

impl FitMessageStyle {
    /// kube-scheduler 1.35 wording (generic taint reason, DRA post-filter message).
    pub fn kube_1_35() -> Self {
        FitMessageStyle { untolerated_taint_detail: false, dra_post_filter: true }
    }
}

/// Why no node fits a pod (kube-scheduler `framework.FitError` with its `Diagnosis`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// All nodes in the snapshot.
    pub num_all_nodes: usize,
    /// Set when a PreFilter rejected the pod outright.
    pub pre_filter_message: Option<String>,
    /// Statuses of nodes the filters rejected, by node name.
    pub node_statuses: BTreeMap<String, Status>,
    /// The status of every node not in `node_statuses` (PreFilter narrowing or rejection).
    pub absent_status: Option<Status>,
    /// The PostFilter (preemption) part, already prefixed.
    pub post_filter_message: String,
    /// On some node, evicting the lower-priority pods would (or, for topology and affinity
    /// rejections, might) make room: real kube-scheduler would preempt there, which this model
    /// leaves out (see [`super::queue`]'s module docs). The message then reports the node's
    /// original reasons where kube-scheduler would instead have nominated it.
    pub preemption_might_help: bool,
}

/// `"<count> <reason>"` per reason, sorted as strings, joined with `", "`.
pub fn reasons_histogram<'a>(
    statuses: impl Iterator<Item = &'a Status>,
    absent: Option<(&'a Status, usize)>,
) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for s in statuses {
        for r in &s.reasons {
            *counts.entry(r.as_str()).or_insert(0) += 1;
        }
    }
    if let Some((status, n)) = absent
        && n > 0
    {
        for r in &status.reasons {
            *counts.entry(r.as_str()).or_insert(0) += n;
        }
    }
    let mut lines: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    lines.sort();
    lines.join(", ")
}

impl FitError {
    /// The plugins that rejected the pod somewhere (for queueing hints).
    pub fn rejectors(&self) -> BTreeSet<Plugin> {
        self.node_statuses.values().chain(self.absent_status.iter()).map(|s| s.plugin).collect()
    }

    fn absent_count(&self) -> usize {
        self.num_all_nodes.saturating_sub(self.node_statuses.len())
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        match &self.pre_filter_message {
            Some(m) => write!(f, " {m}.")?,
            None => {
                let histogram = reasons_histogram(
                    self.node_statuses.values(),
                    self.absent_status.as_ref().map(|s| (s, self.absent_count())),
                );
                if !histogram.is_empty() {
                    write!(f, " {histogram}.")?;
                }
            }
        }
        if !self.post_filter_message.is_empty() {
            write!(f, " {}", self.post_filter_message)?;
        }
        Ok(())
    }
}

/// Why scheduling a pod failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulingFailure {
    /// The cluster has no nodes (`ErrNoNodesAvailable`).
    NoNodes,
    /// Nodes exist but none fits.
    Unfit(Box<FitError>),
}

impl SchedulingFailure {
    /// The condition message (and FailedScheduling event message).
    pub fn message(&self) -> String {
        match self {
            SchedulingFailure::NoNodes => NO_NODES_MESSAGE.to_string(),
            SchedulingFailure::Unfit(e) => e.to_string(),
        }
    }

    /// The plugins that rejected the pod; empty for [`SchedulingFailure::NoNodes`] (any node
    /// event may help).
    pub fn rejectors(&self) -> BTreeSet<Plugin> {
        match self {
            SchedulingFailure::NoNodes => BTreeSet::new(),
            SchedulingFailure::Unfit(e) => e.rejectors(),
        }
    }

    /// The `PodScheduled=False, reason=Unschedulable` condition to write on the pod.
    pub fn condition(&self, now: Time) -> PodCondition {
        pod_scheduled_false(REASON_UNSCHEDULABLE, self.message(), now)
    }
}

impl fmt::Display for SchedulingFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

/// A `PodScheduled=False` condition. `lastProbeTime` stays null, as kube-scheduler leaves it.
pub fn pod_scheduled_false(reason: &str, message: String, now: Time) -> PodCondition {
    PodCondition {
        type_: "PodScheduled".into(),
        status: "False".into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_transition_time: Some(now),
        last_probe_time: None,
        observed_generation: None,
    }
}

/// The condition kube-scheduler writes on a pod held by `schedulingGates`.
pub fn scheduling_gated_condition(now: Time) -> PodCondition {
    pod_scheduled_false(REASON_SCHEDULING_GATED, SCHEDULING_GATED_MESSAGE.into(), now)
}

/// Assembles the PostFilter part from the preemption plugin's message.
pub fn post_filter_message(preemption: &str, style: FitMessageStyle) -> String {
    if style.dra_post_filter {
        format!("{NO_CLAIMS_TO_DEALLOCATE}, preemption: {preemption}")
    } else {
        format!("preemption: {preemption}")
    }
}

/// What DefaultPreemption's dry run finds on one rejected node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DryRun {
    /// The rejection is `UnschedulableAndUnresolvable`: evicting cannot help.
    NotHelpful,
    /// No pod on the node has a lower priority than the incoming pod.
    NoVictims,
    /// Even with every lower-priority pod gone the node rejects the pod, for this reason.
    StillFails(Status),
    /// The node would fit without its lower-priority pods: real kube-scheduler would preempt
    /// here, which this model does not; the original status is reported.
    WouldFit(Status),
}

/// The preemption plugin's own FitError message from each rejected node's dry run. Absent
/// nodes (PreFilter narrowing) count as [`PREEMPTION_NOT_HELPFUL`]. Returns the message and
/// whether preemption would have helped on some node.
pub fn preemption_message(num_all_nodes: usize, rejected: impl Iterator<Item = DryRun>) -> (String, bool) {
    let not_helpful = Status::new(Plugin::NodeName, Code::UnschedulableAndUnresolvable, PREEMPTION_NOT_HELPFUL);
    let mut explicit: Vec<Status> = Vec::new();
    let mut might_help = false;
    for dry_run in rejected {
        match dry_run {
            DryRun::NotHelpful => {}
            DryRun::NoVictims => {
                explicit.push(Status::new(Plugin::NodeName, Code::UnschedulableAndUnresolvable, NO_PREEMPTION_VICTIMS))
            }
            DryRun::StillFails(status) => explicit.push(status),
            DryRun::WouldFit(status) => {
                might_help = true;
                explicit.push(status);
            }
        }
    }
    let absent = num_all_nodes.saturating_sub(explicit.len());
    let histogram = reasons_histogram(explicit.iter(), Some((&not_helpful, absent)));
    (format!("0/{num_all_nodes} nodes are available: {histogram}."), might_help)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(plugin: Plugin, code: Code, reason: &str) -> Status {
        Status::new(plugin, code, reason)
    }

    #[test]
    fn message_matches_kube_scheduler_for_taints_and_cpu() {
        let taint = status(
            Plugin::TaintToleration,
            Code::UnschedulableAndUnresolvable,
            "node(s) had untolerated taint {karpenter.sh/unregistered: }",
        );
        let cpu = status(Plugin::NodeResourcesFit, Code::UnschedulableAndUnresolvable, "Insufficient cpu");
        let statuses =
            BTreeMap::from([("a".to_string(), cpu), ("b".to_string(), taint.clone()), ("c".to_string(), taint)]);
        let (preemption, _) = preemption_message(3, statuses.values().map(|_| DryRun::NotHelpful));
        let e = FitError {
            num_all_nodes: 3,
            pre_filter_message: None,
            node_statuses: statuses,
            absent_status: None,
            post_filter_message: post_filter_message(&preemption, FitMessageStyle::default()),
            preemption_might_help: false,
        };
        assert_eq!(
            e.to_string(),
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint \
             {karpenter.sh/unregistered: }. preemption: 0/3 nodes are available: 3 Preemption is \
             not helpful for scheduling."
        );
    }

    #[test]
    fn histogram_sorts_as_strings_like_go() {
        let many: Vec<Status> = (0..10)
            .map(|_| status(Plugin::NodeAffinity, Code::UnschedulableAndUnresolvable, "b"))
            .chain((0..2).map(|_| status(Plugin::NodePorts, Code::Unschedulable, "a")))
            .collect();
        assert_eq!(reasons_histogram(many.iter(), None), "10 b, 2 a");
    }

    #[test]
    fn resolvable_rejections_without_victims_say_so() {
        let (m, might_help) = preemption_message(3, [DryRun::NoVictims, DryRun::NoVictims].into_iter());
        assert_eq!(
            m,
            "0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption \
             victims found for incoming pod."
        );
        assert!(!might_help);
    }

    #[test]
    fn kube_1_35_style_adds_the_dra_prefix() {
        assert_eq!(
            post_filter_message("x.", FitMessageStyle::kube_1_35()),
            "no new claims to deallocate, preemption: x."
        );
    }

    #[test]
    fn no_nodes_message_and_condition() {
        let f = SchedulingFailure::NoNodes;
        assert_eq!(f.message(), "no nodes available to schedule pods");
        let t = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let c = f.condition(t.clone());
        assert_eq!(c.type_, "PodScheduled");
        assert_eq!(c.status, "False");
        assert_eq!(c.reason.as_deref(), Some("Unschedulable"));
        assert_eq!(c.last_transition_time, Some(t));
    }
}
