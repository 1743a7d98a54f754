//! Provisioning cases: one scheduling pass (`dovetail_controller::scheduling::schedule`) over
//! the scene, with the input the provisioner's own `provisioning::input::scheduling_input`
//! builds (pending provisionable pods plus the currently reschedulable pods of deleting nodes,
//! existing nodes from state, DaemonSet templates; pools by weight), then the expectations
//! checked against the placements.

use std::collections::{BTreeMap, BTreeSet};

use dovetail_controller::provisioning::input as state_input;
use dovetail_controller::provisioning::provisioner::ordered_pools;
use dovetail_controller::runtime::clock::add;
use dovetail_controller::scheduling::{
    MinValuesPolicy, NodePoolInput, PreferencePolicy, Results, SchedulerOptions, SchedulingInput, schedule,
};
use serde::Deserialize;

use super::claims::{ClaimExpect, launched_labels};
use super::scene::{Built, Defaults, Scene, epoch};

/// A provisioning case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProvisionCase {
    /// Id.
    pub id: String,
    /// `Describe > Context > It` of the upstream test.
    pub upstream: String,
    /// Upstream file when not the file's default.
    #[serde(default)]
    pub source: Option<String>,
    /// The cluster.
    pub given: Scene,
    /// Scheduler policies.
    #[serde(default)]
    pub options: Options,
    /// What must come out.
    pub expect: ProvisionExpect,
}

/// `--preference-policy` and `--min-values-policy`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Options {
    /// `Ignore` drops preferences.
    #[serde(default)]
    pub ignore_preferences: bool,
    /// `BestEffort` minValues.
    #[serde(default)]
    pub min_values_best_effort: bool,
}

/// Expectations of a provisioning pass; each one set is checked.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProvisionExpect {
    /// These pods are placed (new claim or existing node); `*` = every pending pod.
    #[serde(default)]
    pub scheduled: Vec<String>,
    /// These pods fit nowhere.
    #[serde(default)]
    pub unschedulable: Vec<String>,
    /// Number of new NodeClaims.
    #[serde(default)]
    pub new_claims: Option<usize>,
    /// Number of distinct nodes (new or existing) the scheduled pods use.
    #[serde(default)]
    pub nodes: Option<usize>,
    /// Existing node → pods that must be placed there.
    #[serde(default)]
    pub on_existing: BTreeMap<String, Vec<String>>,
    /// Claims (selected by their pods, else by position).
    #[serde(default)]
    pub claims: Vec<ClaimExpect>,
    /// What every new claim must satisfy.
    #[serde(default)]
    pub every_claim: Option<ClaimExpect>,
    /// Groups of pods that share one node.
    #[serde(default)]
    pub same_node: Vec<Vec<String>>,
    /// Groups of pods on pairwise different nodes.
    #[serde(default)]
    pub different_nodes: Vec<Vec<String>>,
    /// Pod counts per topology domain.
    #[serde(default)]
    pub skew: Vec<SkewExpect>,
}

impl ProvisionExpect {
    /// Whether no expectation is set (a case must decide something checkable).
    fn is_empty(&self) -> bool {
        self.scheduled.is_empty()
            && self.unschedulable.is_empty()
            && self.new_claims.is_none()
            && self.nodes.is_none()
            && self.on_existing.is_empty()
            && self.claims.is_empty()
            && self.every_claim.is_none()
            && self.same_node.is_empty()
            && self.different_nodes.is_empty()
            && self.skew.is_empty()
    }
}

/// Sorted pod counts per domain of `key` over pods matching `selector` (core `ExpectSkew`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SkewExpect {
    /// Topology key.
    pub key: String,
    /// matchLabels.
    pub selector: BTreeMap<String, String>,
    /// Counts, any order.
    #[serde(default)]
    pub counts: Option<Vec<usize>>,
    /// No domain holds more than this many (core `ToNot(ContainElements(BeNumerically(">", n)))`).
    #[serde(default)]
    pub max_count: Option<usize>,
}

/// The scheduler input, from the production path (`provisioning::input::scheduling_input`,
/// which `Provisioner::build_input` calls): only the pool list is assembled here, as
/// `build_input` does it without the cloud (the scene's instance types) and without the node
/// class check (scenes have none). Decisions are taken an hour after the nodes were created.
fn scheduling_input(built: &Built, options: &Options) -> SchedulingInput {
    let snapshot = &built.cluster.snapshot;
    let node_pools = ordered_pools(snapshot)
        .iter()
        // `usable_pool` without the node class: deleting, static and invalid pools never launch.
        .filter(|pool| pool.metadata.deletion_timestamp.is_none() && !pool.spec.is_static())
        .filter(|pool| pool.runtime_validate().is_ok())
        .filter_map(|pool| {
            let input = built.cluster.pools.iter().find(|p| p.node_pool.metadata.name == pool.metadata.name)?;
            Some(NodePoolInput { node_pool: (**pool).clone(), instance_types: input.instance_types.clone() })
        })
        .collect();
    let options = SchedulerOptions {
        preference_policy: if options.ignore_preferences {
            PreferencePolicy::Ignore
        } else {
            PreferencePolicy::Respect
        },
        min_values_policy: if options.min_values_best_effort {
            MinValuesPolicy::BestEffort
        } else {
            MinValuesPolicy::Strict
        },
        ..SchedulerOptions::default()
    };
    let now = add(epoch(), std::time::Duration::from_secs(3600));
    let (input, _unparsed) = state_input::scheduling_input(snapshot, &built.cluster.memory, now, node_pools, options);
    input
}

/// Where each pod went: `claim#i` or an existing node's name.
fn placements(results: &Results) -> BTreeMap<String, String> {
    let mut at = BTreeMap::new();
    for (i, claim) in results.new_node_claims.iter().enumerate() {
        for key in &claim.pods {
            at.insert(short(key), format!("claim#{i}"));
        }
    }
    for (node, pods) in &results.existing_node_assignments {
        for key in pods {
            at.insert(short(key), node.clone());
        }
    }
    at
}

fn short(key: &str) -> String {
    key.rsplit('/').next().unwrap_or(key).to_owned()
}

/// Runs the case; `Err` lists every expectation that failed.
pub fn run(case: &ProvisionCase, defaults: &Defaults) -> Result<Result<(), String>, String> {
    if case.expect.is_empty() {
        return Err("expect: asserts nothing".to_owned());
    }
    let built = case.given.build(defaults)?;
    let input = scheduling_input(&built, &case.options);
    let results = schedule(&input);
    let at = placements(&results);
    let e = &case.expect;
    let mut failures = Vec::new();
    for pod in built.expand(&e.scheduled)? {
        if !at.contains_key(&pod) {
            let why = results.pod_errors.get(&format!("default/{pod}")).cloned().unwrap_or_default();
            failures.push(format!("{pod} not scheduled ({why})"));
        }
    }
    for pod in built.expand(&e.unschedulable)? {
        if let Some(target) = at.get(&pod) {
            failures.push(format!("{pod} scheduled on {target}, expected unschedulable"));
        }
    }
    if let Some(n) = e.new_claims
        && results.new_node_claims.len() != n
    {
        failures.push(format!("{} new claims, expected {n}", results.new_node_claims.len()));
    }
    if let Some(n) = e.nodes {
        let wanted: Vec<String> =
            if e.scheduled.is_empty() { at.keys().cloned().collect() } else { built.expand(&e.scheduled)? };
        let used: BTreeSet<&String> = wanted.iter().filter_map(|p| at.get(p)).collect();
        if used.len() != n {
            failures.push(format!("pods on {} nodes {used:?}, expected {n}", used.len()));
        }
    }
    for (node, pods) in &e.on_existing {
        for pod in built.expand(pods)? {
            if at.get(&pod) != Some(node) {
                failures.push(format!("{pod} on {:?}, expected existing node {node}", at.get(&pod)));
            }
        }
    }
    for group in &e.same_node {
        let targets: BTreeSet<Option<&String>> = built.expand(group)?.iter().map(|p| at.get(p)).collect();
        if targets.len() != 1 || targets.contains(&None) {
            failures.push(format!("{group:?} expected on one node, got {targets:?}"));
        }
    }
    for group in &e.different_nodes {
        let pods = built.expand(group)?;
        let targets: BTreeSet<Option<&String>> = pods.iter().map(|p| at.get(p)).collect();
        if targets.len() != pods.len() || targets.contains(&None) {
            failures.push(format!("{group:?} expected on distinct nodes, got {targets:?}"));
        }
    }
    for (i, expect) in e.claims.iter().enumerate() {
        let index = match &expect.pods {
            Some(pods) => {
                let pods = built.expand(pods)?;
                match pods.first().and_then(|p| at.get(p)).and_then(|t| t.strip_prefix("claim#")) {
                    Some(index) => index.parse::<usize>().expect("claim index"),
                    None => {
                        failures.push(format!("claims[{i}]: {} is on no new claim", pods.first().map_or("?", |p| p)));
                        continue;
                    }
                }
            }
            None => i,
        };
        match results.new_node_claims.get(index) {
            Some(claim) => {
                failures.extend(expect.check(claim, &built)?.into_iter().map(|f| format!("claims[{i}]: {f}")))
            }
            None => failures.push(format!("claims[{i}]: no such claim")),
        }
    }
    if let Some(expect) = &e.every_claim {
        for (i, claim) in results.new_node_claims.iter().enumerate() {
            failures.extend(expect.check(claim, &built)?.into_iter().map(|f| format!("claim#{i}: {f}")));
        }
    }
    for skew in &e.skew {
        let mut counts = skew_counts(&built, &results, &at, skew);
        counts.sort_unstable();
        if let Some(expected) = &skew.counts {
            let mut expected = expected.clone();
            expected.sort_unstable();
            if counts != expected {
                failures.push(format!("skew on {}: counts {counts:?}, expected {expected:?}", skew.key));
            }
        }
        if let Some(max) = skew.max_count
            && counts.iter().any(|c| c > &max)
        {
            failures.push(format!("skew on {}: counts {counts:?}, expected none above {max}", skew.key));
        }
    }
    Ok(if failures.is_empty() { Ok(()) } else { Err(failures.join("; ")) })
}

/// Pods matching the selector per domain: bound pods by their node's label, new pods by the
/// label of the node core's fake cloud would launch for their claim.
fn skew_counts(built: &Built, results: &Results, at: &BTreeMap<String, String>, skew: &SkewExpect) -> Vec<usize> {
    let snapshot = &built.cluster.snapshot;
    let mut domains: BTreeMap<String, usize> = BTreeMap::new();
    for pod in snapshot.pods.values() {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        if !skew.selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            continue;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).or_else(|| at.get(&name).cloned());
        let Some(node) = node else { continue };
        let domain = match node.strip_prefix("claim#") {
            Some(index) => {
                let claim = &results.new_node_claims[index.parse::<usize>().expect("index")];
                if skew.key == "kubernetes.io/hostname" {
                    Some(node.clone())
                } else {
                    launched_labels(claim).get(&skew.key).cloned()
                }
            }
            None => snapshot.nodes.get(&node).and_then(|n| n.metadata.labels.as_ref()?.get(&skew.key).cloned()),
        };
        if let Some(domain) = domain {
            *domains.entry(domain).or_default() += 1;
        }
    }
    domains.into_values().collect()
}
