//! What a drain does next (core `terminator.Drain` and `pkg/utils/pod`): which pods the node still
//! waits on, which are past the TerminationGracePeriod force-delete threshold, and which tier of
//! pods goes to the eviction queue now. Pure: the caller passes the pods, the time and the node's
//! termination deadline, and performs the effects.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::apis::duration::parse_go_duration;
use crate::apis::labels::{DISRUPTED_TAINT_EFFECT, DISRUPTED_TAINT_KEY, DO_NOT_DISRUPT_ANNOTATION};
use crate::provisioning::pending::{
    STUCK_TERMINATING_AFTER, is_daemon_set_pod, is_static_pod, is_terminal, is_terminating,
};
use crate::runtime::clock::{add, elapsed};
use crate::scheduling::{Taint, TaintEffect, Toleration};

/// Priority classes that drain last (core terminator.go; the kubelet's graceful node shutdown
/// uses the same split).
pub const CRITICAL_PRIORITY_CLASSES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

/// The grace a force-deleted pod gets at least, even when the node's deadline has passed
/// (core: max(remaining, 1 s), so the delete is never a grace-0 kill).
pub const FORCE_DELETE_GRACE_MIN: Duration = Duration::from_secs(1);

/// The pod grace period Kubernetes defaults to when the spec leaves it out.
pub const DEFAULT_POD_GRACE: Duration = Duration::from_secs(30);

/// The eviction tiers, in the order a node sheds them (core `Terminator.Evict`): ordinary
/// workloads first so that critical pods and daemons (logging, CNI) keep serving them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Non-critical, not owned by a DaemonSet.
    NonCriticalNonDaemon,
    /// Non-critical DaemonSet pods.
    NonCriticalDaemon,
    /// Critical priority class, not a DaemonSet pod.
    CriticalNonDaemon,
    /// Critical DaemonSet pods.
    CriticalDaemon,
}

impl Tier {
    /// The tier `pod` drains in.
    pub fn of(pod: &Pod) -> Self {
        let critical = pod
            .spec
            .as_ref()
            .and_then(|s| s.priority_class_name.as_deref())
            .is_some_and(|p| CRITICAL_PRIORITY_CLASSES.contains(&p));
        match (critical, is_daemon_set_pod(pod)) {
            (false, false) => Self::NonCriticalNonDaemon,
            (false, true) => Self::NonCriticalDaemon,
            (true, false) => Self::CriticalNonDaemon,
            (true, true) => Self::CriticalDaemon,
        }
    }
}

/// Whether the pod tolerates `karpenter.sh/disrupted:NoSchedule`; such pods would just be
/// rescheduled onto the draining node, so drain ignores them (core `ToleratesDisruptedNoScheduleTaint`).
pub fn tolerates_disrupted_taint(pod: &Pod) -> bool {
    let effect = TaintEffect::from_api(DISRUPTED_TAINT_EFFECT).expect("NoSchedule is a taint effect");
    let taint = Taint::new(DISRUPTED_TAINT_KEY, "", effect);
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| Toleration::from_k8s(t).tolerates(&taint)))
}

/// Whether the pod has been terminating for more than a minute; such pods are not waited on
/// (core `IsStuckTerminating`), so a wedged kubelet cannot block termination for ever.
pub fn is_stuck_terminating(pod: &Pod, now: jiff::Timestamp) -> bool {
    pod.metadata.deletion_timestamp.as_ref().is_some_and(|t| elapsed(t.0, now) > STUCK_TERMINATING_AFTER)
}

/// Whether drain cares about the pod at all (core `IsDrainable`): not tolerating the disrupted
/// taint, not stuck terminating, not a static pod (the API cannot delete mirror pods).
pub fn is_drainable(pod: &Pod, now: jiff::Timestamp) -> bool {
    !tolerates_disrupted_taint(pod) && !is_stuck_terminating(pod, now) && !is_static_pod(pod)
}

/// Whether the node still waits on the pod (core `IsWaitingEviction`).
pub fn is_waiting_eviction(pod: &Pod, now: jiff::Timestamp) -> bool {
    !is_terminal(pod) && is_drainable(pod, now)
}

/// Whether the pod carries an active `karpenter.sh/do-not-disrupt`: `"true"` for ever, a Go
/// duration until the pod's start time plus that duration; any other value is ignored.
pub fn has_active_do_not_disrupt(pod: &Pod, now: jiff::Timestamp) -> bool {
    let Some(value) = pod.metadata.annotations.as_ref().and_then(|a| a.get(DO_NOT_DISRUPT_ANNOTATION)) else {
        return false;
    };
    if value == "true" {
        return true;
    }
    let Ok(duration) = parse_go_duration(value) else { return false };
    let started = pod
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .or(pod.metadata.creation_timestamp.as_ref())
        .map(|t| t.0);
    started.is_some_and(|start| add(start, duration) > now)
}

/// Whether the eviction queue may evict the pod now: active, drainable, and not protected by
/// do-not-disrupt (only the TGP force-delete overrides that).
pub fn is_evictable(pod: &Pod, now: jiff::Timestamp) -> bool {
    !is_terminal(pod) && !is_terminating(pod) && is_drainable(pod, now) && !has_active_do_not_disrupt(pod, now)
}

/// The pod's `terminationGracePeriodSeconds` (the API default when absent).
pub fn pod_grace(pod: &Pod) -> Duration {
    pod.spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .map_or(DEFAULT_POD_GRACE, Duration::from_secs)
}

/// When the pod must be deleted so that it gets its whole grace period before the node's
/// deadline: `termination_time − terminationGracePeriodSeconds`.
pub fn force_delete_at(pod: &Pod, termination_time: jiff::Timestamp) -> jiff::Timestamp {
    let grace = jiff::SignedDuration::try_from(pod_grace(pod)).unwrap_or(jiff::SignedDuration::MAX);
    termination_time.checked_sub(grace).unwrap_or(jiff::Timestamp::MIN)
}

/// The grace a force-deleted pod gets: what is left until the node's deadline, at least 1 s,
/// in whole seconds as the API takes it.
pub fn force_delete_grace(termination_time: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    let remaining = Duration::from_secs(elapsed(now, termination_time).as_secs());
    remaining.max(FORCE_DELETE_GRACE_MIN)
}

/// One pod to delete because the node's TerminationGracePeriod is about to run out.
#[derive(Clone, Debug)]
pub struct ForceDelete<'a> {
    /// The pod.
    pub pod: &'a Pod,
    /// The grace period to delete it with.
    pub grace: Duration,
}

/// What one drain pass should do.
#[derive(Clone, Debug, Default)]
pub struct DrainPlan<'a> {
    /// Pods past the force-delete threshold and not yet terminating: delete them now,
    /// bypassing PDBs and do-not-disrupt.
    pub force_delete: Vec<ForceDelete<'a>>,
    /// Pods to hand to the eviction queue: the first non-empty tier only.
    pub evict: Vec<&'a Pod>,
    /// Pods the node still waits on (evicted or not); zero means drained.
    pub waiting: usize,
    /// When the next pod crosses its force-delete threshold, so the caller can wake for it.
    pub next_force_delete: Option<jiff::Timestamp>,
}

impl DrainPlan<'_> {
    /// Whether nothing is left to wait for.
    pub fn is_drained(&self) -> bool {
        self.waiting == 0
    }
}

/// Plans one drain pass over the pods bound to a deleting node (in the caller's stable order).
pub fn plan<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    now: jiff::Timestamp,
    termination_time: Option<jiff::Timestamp>,
) -> DrainPlan<'a> {
    let mut out = DrainPlan::default();
    let mut tiers: [Vec<&'a Pod>; 4] = Default::default();
    for pod in pods {
        if !is_waiting_eviction(pod, now) {
            continue;
        }
        out.waiting += 1;
        if let Some(deadline) = termination_time
            && !is_terminating(pod)
        {
            let at = force_delete_at(pod, deadline);
            if now > at {
                out.force_delete.push(ForceDelete { pod, grace: force_delete_grace(deadline, now) });
                continue;
            }
            out.next_force_delete = Some(out.next_force_delete.map_or(at, |n| n.min(at)));
        }
        tiers[Tier::of(pod) as usize].push(pod);
    }
    // The first tier with any pod still waiting gates the rest, terminating and
    // do-not-disrupt pods included: core v1.14 `Terminator.Drain` groups every waiting pod
    // not past its force-delete threshold (`gracefulCandidates`, terminator.go l. 99-127)
    // and enqueues the first non-empty group whole; the queue evicts only its evictable
    // pods and keeps the others until they go (`eviction.go` `Reconcile`, l. 206-218).
    // (v1.0 grouped only evictable pods, so a tier still terminating let the next go.)
    out.evict = tiers
        .into_iter()
        .find(|tier| !tier.is_empty())
        .unwrap_or_default()
        .into_iter()
        .filter(|pod| is_evictable(pod, now))
        .collect();
    debug_assert!(out.evict.len() + out.force_delete.len() <= out.waiting);
    out
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    use super::*;

    fn at(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(second).expect("in range")
    }

    fn pod(name: &str, extra: serde_json::Value) -> Pod {
        let mut value = json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c"}], "nodeName": "n", "terminationGracePeriodSeconds": 30},
            "status": {"phase": "Running", "startTime": "1970-01-01T00:00:00Z"}
        });
        merge(&mut value, extra);
        serde_json::from_value(value).expect("pod")
    }

    fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
        match (a, b) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (a, b) => *a = b,
        }
    }

    fn daemon() -> serde_json::Value {
        json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u", "controller": true}]}})
    }

    fn critical() -> serde_json::Value {
        json!({"spec": {"priorityClassName": "system-node-critical"}})
    }

    fn names(pods: &[&Pod]) -> Vec<String> {
        pods.iter().map(|p| p.metadata.name.clone().unwrap_or_default()).collect()
    }

    #[test]
    fn tiers_drain_ordinary_pods_then_daemons_then_critical_pods_then_critical_daemons() {
        let mut crit_ds = pod("crit-ds", critical());
        merge_pod(&mut crit_ds, daemon());
        let pods = vec![crit_ds, pod("crit", critical()), pod("ds", daemon()), pod("app", json!({}))];
        let mut remaining: Vec<Pod> = pods;
        let mut order = Vec::new();
        for _ in 0..4 {
            let plan = plan(remaining.iter(), at(0), None);
            assert_eq!(plan.waiting, remaining.len());
            let evicted = names(&plan.evict);
            assert_eq!(evicted.len(), 1, "one pod per tier here");
            order.push(evicted[0].clone());
            remaining.retain(|p| p.metadata.name.as_deref() != Some(evicted[0].as_str()));
        }
        assert_eq!(order, ["app", "ds", "crit", "crit-ds"]);
        assert!(plan(remaining.iter(), at(0), None).is_drained());
    }

    fn merge_pod(pod: &mut Pod, extra: serde_json::Value) {
        let mut value = serde_json::to_value(&*pod).expect("pod");
        merge(&mut value, extra);
        *pod = serde_json::from_value(value).expect("pod");
    }

    #[test]
    fn only_the_first_non_empty_tier_is_enqueued() {
        let pods = [pod("a", json!({})), pod("b", json!({})), pod("ds", daemon())];
        let plan = plan(pods.iter(), at(0), None);
        assert_eq!(names(&plan.evict), ["a", "b"]);
        assert_eq!(plan.waiting, 3);
    }

    /// A tier whose pods still terminate, or wait under do-not-disrupt, holds the next tier
    /// back (core v1.14 `Terminator.Drain` groups every waiting pod); v1.0 grouped only
    /// evictable pods and let the DaemonSet pod go while the application pod terminated.
    #[test]
    fn a_tier_still_terminating_or_protected_holds_the_next_tier_back() {
        let mut terminating = pod("app", json!({}));
        terminating.metadata.deletion_timestamp = Some(Time(at(0)));
        let pods = [terminating, pod("ds", daemon())];
        let plan_now = plan(pods.iter(), at(10), None);
        assert_eq!(plan_now.waiting, 2);
        assert!(plan_now.evict.is_empty(), "the daemon waits for the terminating pod: {:?}", names(&plan_now.evict));
        let protected = [
            pod("keep", json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}})),
            pod("ds", daemon()),
        ];
        assert!(plan(protected.iter(), at(0), None).evict.is_empty());
        let mixed = [
            pod("keep", json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}})),
            pod("a", json!({})),
        ];
        assert_eq!(names(&plan(mixed.iter(), at(0), None).evict), ["a"], "the tier's evictable pods go");
    }

    #[test]
    fn terminal_tolerating_static_and_stuck_pods_are_not_waited_on() {
        let stuck_since = Time(at(0));
        let mut stuck = pod("stuck", json!({}));
        stuck.metadata.deletion_timestamp = Some(stuck_since);
        let pods = [
            pod("done", json!({"status": {"phase": "Succeeded"}})),
            pod("tolerant", json!({"spec": {"tolerations": [{"operator": "Exists"}]}})),
            pod("mirror", json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}})),
            stuck.clone(),
        ];
        assert!(plan(pods.iter(), at(61), None).is_drained());
        // Terminating for under a minute: still waited on, but not evicted again.
        let plan = plan(pods.iter(), at(60), None);
        assert_eq!(plan.waiting, 1);
        assert!(plan.evict.is_empty());
    }

    #[test]
    fn do_not_disrupt_pods_are_waited_on_but_never_enqueued_for_eviction() {
        let pods = [pod("keep", json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}}))];
        let plan = plan(pods.iter(), at(0), None);
        assert_eq!(plan.waiting, 1);
        assert!(plan.evict.is_empty());
        assert!(plan.force_delete.is_empty());
    }

    #[test]
    fn do_not_disrupt_durations_expire_from_pod_start_and_bad_values_are_ignored() {
        let timed = pod("t", json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "10m"}}}));
        assert!(has_active_do_not_disrupt(&timed, at(599)));
        assert!(!has_active_do_not_disrupt(&timed, at(600)));
        let bad = pod("b", json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "yes"}}}));
        assert!(!has_active_do_not_disrupt(&bad, at(0)));
        assert!(is_evictable(&bad, at(0)));
    }

    #[test]
    fn tgp_forces_delete_once_now_passes_deadline_minus_pod_grace() {
        let pods = [pod("keep", json!({"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}}))];
        let deadline = at(300);
        // Grace is 30 s: the threshold is 270 s, strictly after.
        let before = plan(pods.iter(), at(270), Some(deadline));
        assert!(before.force_delete.is_empty());
        assert_eq!(before.next_force_delete, Some(at(270)));
        let after = plan(pods.iter(), at(271), Some(deadline));
        assert_eq!(after.force_delete.len(), 1);
        assert_eq!(after.force_delete[0].grace, Duration::from_secs(29));
        assert!(after.evict.is_empty(), "a force-deleted pod is not also evicted");
        // Past the deadline the pod still gets 1 s.
        let late = plan(pods.iter(), at(400), Some(deadline));
        assert_eq!(late.force_delete[0].grace, FORCE_DELETE_GRACE_MIN);
    }

    #[test]
    fn pods_past_the_threshold_are_forced_from_every_tier_at_once() {
        let pods = [pod("app", json!({})), pod("crit", critical()), pod("ds", daemon())];
        let plan = plan(pods.iter(), at(1000), Some(at(1010)));
        assert_eq!(plan.force_delete.len(), 3);
        assert!(plan.evict.is_empty());
    }

    #[test]
    fn terminating_pods_are_not_forced_again() {
        let mut p = pod("p", json!({}));
        p.metadata.deletion_timestamp = Some(Time(at(990)));
        let plan = plan(std::iter::once(&p), at(1000), Some(at(1010)));
        assert!(plan.force_delete.is_empty());
        assert_eq!(plan.waiting, 1);
    }
}
