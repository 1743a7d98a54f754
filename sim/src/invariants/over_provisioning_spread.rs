//! Re-nominations a pod's `DoNotSchedule` zone spread forced: a pod Karpenter nominated to an
//! in-flight claim in zone *z*, then, in a later provisioning pass, to a new claim because
//! that pass's placements left *z* over the spread's skew.
//!
//! Karpenter re-simulates every pending pod each pass (core `pkg/controllers/provisioning/
//! provisioner.go` `Schedule` → `GetPendingPods`), and a pass's topology counts only the pods
//! bound to nodes when it starts (`scheduling/topology.go` `countDomains`, which lists pods
//! by `spec.nodeName`) plus those it places itself (`topology.go` `Record`); earlier
//! nominations count for nothing. So when kube-scheduler binds pods elsewhere than
//! Karpenter nominated them (its nominations are Events kube-scheduler never reads, core
//! `scheduling/events.go` l. 35–52), the next pass can find the in-flight claim's zone
//! full for the group and open a claim in another zone; the claim left behind keeps its
//! instance (no pass takes back a launched claim) and is judged as unused capacity from the
//! move on ([`super::preference::LeftBehind`]).
//!
//! The judgement is the pass's own: the group's pods bound now, plus those the same pass
//! nominated (Events stamped within [`PASS`] of the pod's own re-nomination; their
//! timestamps have whole seconds), counted per zone over Karpenter's universe of zones
//! ([`crate::oracle::zone_spread::usable_zones`], with the upstream lines). Counting all of
//! the pass's nominations, not only those placed before the pod, errs towards excusing; a
//! move whose earlier zone the spread still allowed is not excused.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::preference::claim_labels;
use crate::invariants::Ctx;
use crate::invariants::stranded_pods::{node_labels_of_bound, zone_universe};
use crate::oracle::first_fit::ZONE_KEY;
use crate::oracle::zone_spread::{Placed, usable_zones, zone_spreads};

/// A label set.
type Labels = BTreeMap<String, String>;

/// How far apart the `Nominated` Events of one provisioning pass may be stamped.
const PASS: Duration = Duration::from_secs(1);

/// Whether `pod`'s zone spreads forbade the zone of `earlier` in the pass that re-nominated
/// it (at `pass_at`), given the nominations seen (`nominated`: pod key → its nominations,
/// (when, claim)). `false` when the pod has no such spread or the earlier claim's zone is
/// not known yet, so an unknown is never excused.
pub fn spread_forced(
    ctx: &Ctx<'_>,
    nominated: &BTreeMap<String, Vec<(Duration, String)>>,
    pod: &str,
    earlier: &str,
    pass_at: Duration,
) -> bool {
    let Some(object) = ctx.pods.iter().find(|p| p.key == pod).map(|p| &p.object) else { return false };
    if zone_spreads(object).is_empty() {
        return false;
    }
    let Some(zone) = claim_labels(ctx, earlier).and_then(|l| l.get(ZONE_KEY).cloned()) else { return false };
    // The pass's placements: pods bound now, else their nomination by this pass.
    let mut placed: Vec<(&str, Labels, Labels)> = Vec::new();
    let mut claim_zone_labels: BTreeMap<&str, Option<Labels>> = BTreeMap::new();
    for p in ctx.pods.iter().filter(|p| p.active() && !p.daemonset && p.key != pod) {
        let node_labels = match node_labels_of_bound(ctx, p) {
            Some(labels) => labels.clone(),
            None => {
                let in_pass = |at: Duration| at + PASS >= pass_at && at <= pass_at + PASS;
                let Some((_, claim)) = nominated.get(&p.key).and_then(|n| n.iter().rev().find(|(at, _)| in_pass(*at)))
                else {
                    continue;
                };
                let labels = claim_zone_labels.entry(claim.as_str()).or_insert_with(|| claim_labels(ctx, claim));
                let Some(labels) = labels.clone() else { continue };
                labels
            }
        };
        let namespace = p.object["metadata"]["namespace"].as_str().unwrap_or("default");
        let labels = p.object["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        placed.push((namespace, labels, node_labels));
    }
    let placed: Vec<Placed<'_>> = placed
        .iter()
        .map(|(namespace, labels, node_labels)| Placed { namespace, labels: labels.clone(), node_labels })
        .collect();
    let universe: BTreeSet<String> = zone_universe(ctx);
    usable_zones(object, &universe, &placed).is_some_and(|usable| !usable.contains(&zone))
}
