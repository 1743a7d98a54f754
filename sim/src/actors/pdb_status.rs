//! The PodDisruptionBudget status kube-controller-manager's disruption controller writes,
//! computed as a pure function (`DisruptionController.trySync`).
//!
//! The API server's eviction check reads `status.disruptionsAllowed` and `disruptedPods`, so
//! the simulated disruption controller must compute them exactly:
//! - pods = pods in the PDB's namespace matching `spec.selector` (nil selects none, `{}` all);
//! - `maxUnavailable` (int or %) and `minAvailable` as a % use the controllers' expected scale
//!   (the caller resolves each pod's controller, e.g. ReplicaSet to its Deployment);
//!   `minAvailable` as an int uses the number of matching pods; percentages round up;
//! - healthy = not terminating, not recently disrupted, and condition `Ready=True`
//!   (`podutil.IsPodReady`; kube does not look at the phase);
//! - `disruptedPods` entries older than 2 minutes (`DeletionTimeout`) or for pods gone or
//!   terminating are pruned; the earliest remaining expiry is returned so the actor can
//!   re-sync then;
//! - `disruptionsAllowed = max(0, currentHealthy - desiredHealthy)`, and 0 while
//!   `expectedPods` is 0;
//! - the `DisruptionAllowed` condition: `SufficientPods`/`InsufficientPods`, or `SyncFailed`
//!   (with `disruptionsAllowed` forced to 0) when the expected scale cannot be determined.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use crate::actors::scheduler::selectors::PodSelector;

/// kube-controller-manager `DeletionTimeout`: how long an evicted pod counts as disrupted
/// while waiting for its deletion.
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(2 * 60);
/// The condition type on PDB status.
pub const CONDITION_DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// Condition reason when disruptions are allowed.
pub const REASON_SUFFICIENT_PODS: &str = "SufficientPods";
/// Condition reason when they are not.
pub const REASON_INSUFFICIENT_PODS: &str = "InsufficientPods";
/// Condition reason when the status could not be computed.
pub const REASON_SYNC_FAILED: &str = "SyncFailed";

/// The desired scale of a pod's top-level controller, as the disruption controller's finders
/// report it (a ReplicaSet owned by a Deployment reports the Deployment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerScale {
    /// UID of the controller whose scale counts (deduplicates pods of one controller).
    pub uid: String,
    /// Its `spec.replicas`.
    pub replicas: i32,
}

/// Why the status could not be computed; the controller then writes a fail-safe status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdbStatusError {
    /// A pod's controller is not a known scalable kind (or is missing).
    #[error("found no controllers for pod {0:?}")]
    NoController(String),
    /// `minAvailable`/`maxUnavailable` is a string that is not a percentage.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
}

/// What the controller writes and what the actor should do next.
#[derive(Debug, Clone, PartialEq)]
pub struct PdbStatusOutcome {
    /// The new `status`.
    pub status: PodDisruptionBudgetStatus,
    /// When a `disruptedPods` entry expires: re-sync then.
    pub recheck_at: Option<Timestamp>,
    /// Pods without a controller (ignored for the expected count; kube warns about them).
    pub unmanaged_pods: Vec<String>,
    /// Pods whose disruption expired without deletion (kube emits a `NotDeleted` event).
    pub not_deleted_pods: Vec<String>,
    /// The error, when the fail-safe status was written.
    pub error: Option<PdbStatusError>,
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn timeout() -> k8s_openapi::jiff::SignedDuration {
    k8s_openapi::jiff::SignedDuration::from_secs(DELETION_TIMEOUT.as_secs() as i64)
}

/// `intstr.GetScaledValueFromIntOrPercent(v, total, roundUp=true)`.
pub fn scaled_value(value: &IntOrString, total: i32) -> Result<i32, PdbStatusError> {
    match value {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let percent: i64 =
                s.strip_suffix('%').and_then(|p| p.parse().ok()).ok_or(PdbStatusError::NotAPercentage)?;
            let scaled = (percent * i64::from(total) + 99).div_euclid(100);
            Ok(i32::try_from(scaled).unwrap_or(i32::MAX))
        }
    }
}

/// Pods of `pods` that the PDB selects (same namespace, selector match).
pub fn selected_pods<'a, P: Borrow<Pod>>(pdb: &PodDisruptionBudget, pods: &'a [P]) -> Vec<&'a Pod> {
    let namespace = pdb.metadata.namespace.as_deref().unwrap_or("default");
    let selector = PodSelector::from_label_selector(pdb.spec.as_ref().and_then(|s| s.selector.as_ref()));
    let empty = BTreeMap::new();
    pods.iter()
        .map(Borrow::borrow)
        .filter(|p: &&Pod| p.metadata.namespace.as_deref().unwrap_or("default") == namespace)
        .filter(|p| selector.matches(p.metadata.labels.as_ref().unwrap_or(&empty)))
        .collect()
}

/// Sum of the distinct controllers' scales (`getExpectedScale`).
fn expected_scale(
    pods: &[&Pod],
    scale_of: &dyn Fn(&OwnerReference, &str) -> Option<ControllerScale>,
    unmanaged: &mut Vec<String>,
) -> Result<i32, PdbStatusError> {
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(owner) = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true)) else {
            unmanaged.push(name);
            continue;
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let scale = scale_of(owner, namespace).ok_or(PdbStatusError::NoController(name))?;
        scales.insert(scale.uid, scale.replicas);
    }
    Ok(scales.values().sum())
}

/// `apimeta.SetStatusCondition`: the transition time changes only when the status does.
fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition, now: Timestamp) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status != new.status {
                existing.status = new.status;
                existing.last_transition_time = Time(now);
            }
            existing.reason = new.reason;
            existing.message = new.message;
            existing.observed_generation = new.observed_generation;
        }
        None => {
            new.last_transition_time = Time(now);
            conditions.push(new);
        }
    }
}

fn condition(status: &str, reason: &str, message: String, generation: Option<i64>, now: Timestamp) -> Condition {
    Condition {
        type_: CONDITION_DISRUPTION_ALLOWED.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation: generation,
        last_transition_time: Time(now),
    }
}

/// Computes the PDB's status at `now` from all pods of its namespace. `scale_of` resolves a
/// pod's controller reference (and namespace) to its top-level controller's scale, or `None`
/// for kinds the disruption controller does not know.
/// `pods` may be owned or shared (`Arc<Pod>`: the disruption controller keeps decoded pods
/// between passes).
pub fn compute_status<P: Borrow<Pod>>(
    pdb: &PodDisruptionBudget,
    pods: &[P],
    scale_of: &dyn Fn(&OwnerReference, &str) -> Option<ControllerScale>,
    now: Timestamp,
) -> PdbStatusOutcome {
    let old = pdb.status.clone().unwrap_or_default();
    let selected = selected_pods(pdb, pods);
    let mut unmanaged = Vec::new();
    let spec = pdb.spec.clone().unwrap_or_default();
    let counts = (|| -> Result<(i32, i32), PdbStatusError> {
        if let Some(max_unavailable) = &spec.max_unavailable {
            let expected = expected_scale(&selected, scale_of, &mut unmanaged)?;
            let max_unavailable = scaled_value(max_unavailable, expected)?;
            Ok((expected, (expected - max_unavailable).max(0)))
        } else if let Some(min_available) = &spec.min_available {
            match min_available {
                IntOrString::Int(i) => Ok((selected.len() as i32, *i)),
                IntOrString::String(_) => {
                    let expected = expected_scale(&selected, scale_of, &mut unmanaged)?;
                    Ok((expected, scaled_value(min_available, expected)?))
                }
            }
        } else {
            Ok((0, 0))
        }
    })();
    let (expected_pods, desired_healthy) = match counts {
        Ok(c) => c,
        Err(e) => {
            let mut status = old.clone();
            status.disruptions_allowed = 0;
            let mut conditions = status.conditions.take().unwrap_or_default();
            set_condition(
                &mut conditions,
                condition("False", REASON_SYNC_FAILED, e.to_string(), status.observed_generation, now),
                now,
            );
            status.conditions = Some(conditions);
            return PdbStatusOutcome {
                status,
                recheck_at: None,
                unmanaged_pods: unmanaged,
                not_deleted_pods: Vec::new(),
                error: Some(e),
            };
        }
    };

    // buildDisruptedPodMap
    let mut disrupted: BTreeMap<String, Time> = BTreeMap::new();
    let mut recheck_at: Option<Timestamp> = None;
    let mut not_deleted = Vec::new();
    if let Some(old_disrupted) = &old.disrupted_pods {
        for pod in &selected {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let name = pod.metadata.name.clone().unwrap_or_default();
            let Some(at) = old_disrupted.get(&name) else {
                continue;
            };
            let expires = at.0 + timeout();
            if expires < now {
                not_deleted.push(name);
            } else {
                recheck_at = Some(recheck_at.map_or(expires, |r: Timestamp| r.min(expires)));
                disrupted.insert(name, at.clone());
            }
        }
    }

    // countHealthyPods
    let current_healthy = selected
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            disrupted.get(name).is_none_or(|at| at.0 + timeout() <= now)
        })
        .filter(|p| is_ready(p))
        .count() as i32;

    let mut disruptions_allowed = current_healthy - desired_healthy;
    if expected_pods <= 0 || disruptions_allowed <= 0 {
        disruptions_allowed = 0;
    }
    let generation = pdb.metadata.generation;
    let mut conditions = old.conditions.clone().unwrap_or_default();
    let (cond_status, reason) =
        if disruptions_allowed > 0 { ("True", REASON_SUFFICIENT_PODS) } else { ("False", REASON_INSUFFICIENT_PODS) };
    set_condition(&mut conditions, condition(cond_status, reason, String::new(), generation, now), now);
    PdbStatusOutcome {
        status: PodDisruptionBudgetStatus {
            current_healthy,
            desired_healthy,
            expected_pods,
            disruptions_allowed,
            disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
            observed_generation: generation,
            conditions: Some(conditions),
        },
        recheck_at,
        unmanaged_pods: unmanaged,
        not_deleted_pods: not_deleted,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn pod(name: &str, ready: bool, owner: Option<&str>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                labels: Some(BTreeMap::from([("app".into(), "web".into())])),
                owner_references: owner.map(|uid| {
                    vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: "rs".into(),
                        uid: uid.into(),
                        controller: Some(true),
                        block_owner_deletion: None,
                    }]
                }),
                ..Default::default()
            },
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pdb(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("pdb".into()),
                namespace: Some("ns".into()),
                generation: Some(3),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                min_available: min,
                max_unavailable: max,
                selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".into(), "web".into())])),
                    match_expressions: None,
                }),
                unhealthy_pod_eviction_policy: None,
            }),
            status: None,
        }
    }

    fn deployment_of_5(_: &OwnerReference, _: &str) -> Option<ControllerScale> {
        Some(ControllerScale { uid: "deploy".into(), replicas: 5 })
    }

    fn five_pods(ready: usize) -> Vec<Pod> {
        (0..5).map(|i| pod(&format!("p{i}"), i < ready, Some("rs-uid"))).collect()
    }

    #[test]
    fn min_available_int_counts_matching_pods() {
        let out = compute_status(&pdb(Some(IntOrString::Int(3)), None), &five_pods(4), &deployment_of_5, at(0));
        let s = out.status;
        assert_eq!((s.expected_pods, s.desired_healthy, s.current_healthy, s.disruptions_allowed), (5, 3, 4, 1));
        assert_eq!(s.observed_generation, Some(3));
        let c = &s.conditions.unwrap()[0];
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", REASON_SUFFICIENT_PODS));
    }

    #[test]
    fn max_unavailable_percentage_rounds_up_against_controller_scale() {
        // 30% of 5 = 1.5 -> 2 unavailable allowed, so 3 desired healthy.
        let out =
            compute_status(&pdb(None, Some(IntOrString::String("30%".into()))), &five_pods(5), &deployment_of_5, at(0));
        assert_eq!((out.status.desired_healthy, out.status.disruptions_allowed), (3, 2));
    }

    #[test]
    fn min_available_percentage_rounds_up() {
        // 50% of 5 = 2.5 -> 3.
        let out =
            compute_status(&pdb(Some(IntOrString::String("50%".into())), None), &five_pods(3), &deployment_of_5, at(0));
        assert_eq!((out.status.desired_healthy, out.status.disruptions_allowed), (3, 0));
        let c = &out.status.conditions.unwrap()[0];
        assert_eq!(c.reason, REASON_INSUFFICIENT_PODS);
    }

    #[test]
    fn terminating_and_recently_disrupted_pods_are_not_healthy() {
        let mut pods = five_pods(5);
        pods[0].metadata.deletion_timestamp = Some(Time(at(0)));
        let mut p = pdb(Some(IntOrString::Int(1)), None);
        p.status = Some(PodDisruptionBudgetStatus {
            disrupted_pods: Some(BTreeMap::from([
                ("p1".to_string(), Time(at(-60))),
                ("p2".to_string(), Time(at(-180))),
                ("gone".to_string(), Time(at(-10))),
            ])),
            ..Default::default()
        });
        let out = compute_status(&p, &pods, &deployment_of_5, at(0));
        // p0 terminating, p1 disrupted 60 s ago: 3 healthy. p2's entry expired, "gone" pruned.
        assert_eq!(out.status.current_healthy, 3);
        let kept: Vec<_> = out.status.disrupted_pods.unwrap().into_keys().collect();
        assert_eq!(kept, vec!["p1".to_string()]);
        assert_eq!(out.not_deleted_pods, vec!["p2".to_string()]);
        assert_eq!(out.recheck_at, Some(at(60)));
    }

    #[test]
    fn no_matching_pods_allows_no_disruption() {
        let out = compute_status(&pdb(Some(IntOrString::Int(0)), None), &[] as &[Pod], &deployment_of_5, at(0));
        assert_eq!((out.status.expected_pods, out.status.disruptions_allowed), (0, 0));
    }

    #[test]
    fn unknown_controller_writes_the_fail_safe_status() {
        let mut p = pdb(None, Some(IntOrString::Int(1)));
        p.status = Some(PodDisruptionBudgetStatus { disruptions_allowed: 2, current_healthy: 5, ..Default::default() });
        let out = compute_status(&p, &five_pods(5), &|_, _| None, at(0));
        assert_eq!(out.status.disruptions_allowed, 0);
        assert_eq!(out.status.current_healthy, 5, "other fields kept");
        let c = &out.status.conditions.unwrap()[0];
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", REASON_SYNC_FAILED));
        assert_eq!(c.message, "found no controllers for pod \"p0\"");
    }

    #[test]
    fn unmanaged_pods_are_ignored_for_the_expected_scale() {
        let mut pods = five_pods(5);
        pods.push(pod("bare", true, None));
        let out = compute_status(&pdb(None, Some(IntOrString::Int(1))), &pods, &deployment_of_5, at(0));
        assert_eq!(out.status.expected_pods, 5);
        assert_eq!(out.status.current_healthy, 6);
        assert_eq!(out.unmanaged_pods, vec!["bare".to_string()]);
    }

    #[test]
    fn condition_transition_time_changes_only_with_status() {
        let p = pdb(Some(IntOrString::Int(1)), None);
        let first = compute_status(&p, &five_pods(5), &deployment_of_5, at(0));
        let mut p2 = p.clone();
        p2.status = Some(first.status);
        let second = compute_status(&p2, &five_pods(4), &deployment_of_5, at(30));
        assert_eq!(second.status.conditions.unwrap()[0].last_transition_time, Time(at(0)));
    }
}
