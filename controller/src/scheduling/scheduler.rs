//! The scheduling pass (core `scheduler.go` `Solve`, karpenter-behaviour.md §2.3 item 5): pods
//! largest first, each tried on existing nodes, then on NodeClaims already planned (fewest pods
//! first), then on a new NodeClaim from the first NodePool (by weight) that takes it, relaxing
//! preferences one at a time when it fits nowhere.
//!
//! # Performance
//! Identical pods share a [`PodShape`] id. When a node rejects a shape for a reason that cannot
//! go away during the pass (resources, requirements, taints, host ports, anti-affinity, hostname
//! spread), the node is remembered as closed to that shape, so the next identical pod skips it
//! with one bit test instead of re-running the checks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::existing::ExistingNodeState;
use super::instance_selection::{MinValuesPolicy, min_values_shortfall, truncate_instance_types};
use super::nodeclaim::{AddError, PlannedClaim};
use super::pod::{PodShape, SchedulablePod};
use super::preferences::{ignore_preferences, relax};
use super::requirements::Requirement;
use super::results::{PlannedNodeClaim, Results};
use super::snapshot::{PreferencePolicy, SchedulerOptions, SchedulingInput, SchedulingView};
use super::template::{NodeClaimTemplate, PoolTemplates, limit_usage, within_limits};
use super::topology::Topology;
use crate::apis::labels;

/// Prefix of the hostname placeholder each planned NodeClaim gets (core `hostname-placeholder`).
pub const HOSTNAME_PLACEHOLDER_PREFIX: &str = "hostname-placeholder-";

#[path = "scheduler_base.rs"]
mod base;
#[path = "scheduler_held.rs"]
mod held;
#[path = "scheduler_shapes.rs"]
mod shapes;

pub use base::{ClusterBase, Without, schedule_without};

use shapes::Shapes;

/// Runs one scheduling pass over a snapshot. Pure and deterministic: the same input gives the
/// same output, ties broken by names and indexes.
pub fn schedule(input: &SchedulingInput) -> Results {
    let templates = PoolTemplates::new(&input.node_pools, &input.daemon_set_pods, input.options.min_values_policy);
    schedule_with(&input.view(), &templates)
}

/// [`schedule`] over borrowed input, with the NodePools' templates built already: `templates`
/// must be `PoolTemplates::new(node_pools, input.daemon_set_pods, input.options.min_values_policy)`
/// (the consolidation probes of one disruption pass share them). Same output as [`schedule`]
/// on the same nodes, pods and NodePools.
pub fn schedule_with(input: &SchedulingView<'_>, templates: &PoolTemplates) -> Results {
    let mut pass = Pass::new(input, templates);
    pass.solve();
    pass.into_results()
}

struct Pass<'a> {
    input: &'a SchedulingView<'a>,
    options: SchedulerOptions,
    shapes: Shapes,
    /// Current shape id of each input pod (changes when a preference is relaxed).
    pod_shape: Vec<usize>,
    templates: &'a [NodeClaimTemplate],
    remaining_limits: Vec<Option<BTreeMap<String, i64>>>,
    node_pool_errors: BTreeMap<String, String>,
    tolerate_prefer_no_schedule: bool,
    topology: Topology,
    existing: Vec<ExistingNodeState>,
    existing_taints: Vec<Vec<super::taints::Taint>>,
    claims: Vec<PlannedClaim>,
    /// (pod count, claim index): the order planned claims are tried in.
    claim_order: BTreeSet<(usize, usize)>,
    pod_errors: BTreeMap<usize, String>,
}

impl<'a> Pass<'a> {
    fn new(input: &'a SchedulingView<'a>, pool_templates: &'a PoolTemplates) -> Self {
        // Existing nodes: initialized first, then by name; deleting nodes take nothing.
        let mut nodes: Vec<_> = input.existing_nodes.iter().filter(|n| !n.marked_for_deletion).collect();
        nodes.sort_by(|a, b| b.initialized.cmp(&a.initialized).then_with(|| a.name.cmp(&b.name)));
        let existing: Vec<ExistingNodeState> =
            nodes.iter().map(|n| ExistingNodeState::new(n, input.daemon_set_pods)).collect();

        // Limits: remaining = limits − capacity of the pool's existing nodes that are not
        // marked for deletion: core counts only the `Active()` state nodes it schedules
        // against (`provisioning/provisioner.go` l. 372–374 and 411; `scheduling/scheduler.go`
        // `updateRemainingResources`, l. 835–842), as its pool resources leave out a node
        // `MarkedForDeletion` (`state/cluster.go` `updateNodePoolResources`, l. 806 and 810).
        let remaining_limits = pool_templates
            .templates
            .iter()
            .map(|template| {
                template.limits.clone().map(|mut remaining| {
                    for node in nodes.iter().filter(|n| n.node_pool() == Some(&template.node_pool)) {
                        for (resource, left) in &mut remaining {
                            *left -= limit_usage(&node.capacity, resource);
                        }
                    }
                    remaining
                })
            })
            .collect();
        let mut pass = Self::assemble(input, pool_templates, existing, remaining_limits);
        pass.intern_pods();
        pass.build_topology();
        pass
    }

    /// A pass over `existing` (node states in pass order) with `remaining_limits` per template,
    /// before its pods are interned and its topology built.
    fn assemble(
        input: &'a SchedulingView<'a>,
        pool_templates: &'a PoolTemplates,
        existing: Vec<ExistingNodeState>,
        remaining_limits: Vec<Option<BTreeMap<String, i64>>>,
    ) -> Self {
        let existing_taints = existing.iter().map(|n| n.taints.clone()).collect();
        Self {
            input,
            options: input.options.clone(),
            shapes: Shapes::default(),
            pod_shape: Vec::with_capacity(input.pods.len()),
            templates: &pool_templates.templates,
            remaining_limits,
            node_pool_errors: pool_templates.node_pool_errors.clone(),
            tolerate_prefer_no_schedule: pool_templates.tolerate_prefer_no_schedule,
            topology: Topology::new(),
            existing,
            existing_taints,
            claims: Vec::new(),
            claim_order: BTreeSet::new(),
            pod_errors: BTreeMap::new(),
        }
    }

    fn intern_pods(&mut self) {
        for pod in &self.input.pods {
            let id = if self.options.preference_policy == PreferencePolicy::Ignore {
                let mut shape = pod.shape.clone();
                ignore_preferences(&mut shape);
                self.shapes.intern(&shape)
            } else {
                self.shapes.intern(&pod.shape)
            };
            self.pod_shape.push(id);
        }
    }

    /// Creates every topology group up front (so counts include everything), declares the
    /// domains NodePools and nodes offer, and counts the pods already bound.
    fn build_topology(&mut self) {
        self.ensure_pending_groups();
        let input = self.input;
        let mut bound_ids = Vec::with_capacity(input.bound_pods.len());
        // Replicas share a shape: each distinct bound shape is reduced and interned once
        // (`ensure_groups` is idempotent per shape, so calling it once per shape is the same).
        let mut reduced: BTreeMap<&PodShape, usize> = BTreeMap::new();
        for bound in &input.bound_pods {
            if let Some(&id) = reduced.get(&bound.pod.shape) {
                bound_ids.push(id);
                continue;
            }
            let shape = reduced_shape(&bound.pod.shape);
            self.topology.ensure_groups(&shape);
            let id = self.shapes.intern(&shape);
            reduced.insert(&bound.pod.shape, id);
            bound_ids.push(id);
        }
        let keys = self.domain_keys();
        self.register_template_domains(&keys);
        let nodes: BTreeMap<&str, usize> =
            self.input.existing_nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
        for node in &self.input.existing_nodes {
            for key in &keys {
                if let Some(value) = node.labels.get(key) {
                    self.topology.register_domain(key, value);
                }
            }
            self.topology.register_domain(labels::HOSTNAME_LABEL, &node.name);
        }
        // The pods this pass places (a deleting node's pods among them) are not counted where
        // they run now (core `scheduling/topology.go` `NewTopology` excludes them, l. 89–93,
        // and `countDomains` skips them, l. 409).
        // Each node's label requirements are built once per node (`ExistingNode::shared_requirements`).
        let placing: BTreeSet<&str> = self.input.pods.iter().map(|p| p.uid.as_str()).collect();
        for (bound, shape_id) in self.input.bound_pods.iter().zip(bound_ids) {
            if placing.contains(bound.pod.uid.as_str()) {
                continue;
            }
            let Some(&index) = nodes.get(bound.node_name.as_str()) else {
                continue;
            };
            let node = &self.input.existing_nodes[index];
            let requirements = node.shared_requirements();
            self.topology.record(shape_id, &self.shapes.shapes[shape_id], &requirements, &node.taints);
        }
    }

    /// The groups of the shapes this pass places, created first.
    fn ensure_pending_groups(&mut self) {
        let pending_shapes = self.shapes.shapes.clone();
        for shape in &pending_shapes {
            self.topology.ensure_groups(shape);
        }
    }

    /// The topology keys whose domains the pass declares: zone, and every key a shape
    /// spreads or (anti-)affines over, except hostname (every node declares its own).
    fn domain_keys(&self) -> BTreeSet<String> {
        let mut keys: BTreeSet<String> = BTreeSet::from([labels::TOPOLOGY_ZONE_LABEL.to_owned()]);
        for shape in &self.shapes.shapes {
            keys.extend(shape.spreads.iter().map(|s| s.topology_key.clone()));
            keys.extend(shape.enforced_affinity_terms().map(|(_, t)| t.topology_key.clone()));
        }
        keys.remove(labels::HOSTNAME_LABEL);
        keys
    }

    /// Declares the domains of `keys` the NodePools can launch in.
    fn register_template_domains(&mut self, keys: &BTreeSet<String>) {
        for template in self.templates {
            for key in keys {
                for instance_type in &template.instance_types {
                    if let Some(values) = instance_type.requirements.get(key)
                        && !values.is_complement()
                    {
                        for value in values.values() {
                            if template.requirements.allows(key, value) {
                                self.topology.register_domain(key, value);
                            }
                        }
                    }
                }
                if let Some(value) = template.requirements.get(key).and_then(Requirement::single_value) {
                    self.topology.register_domain(key, value);
                }
            }
        }
    }

    /// Core's queue: largest pods first; a pod that fails goes to the back, and the pass stops
    /// when a pod comes round again with no placement made since it was last pushed.
    fn solve(&mut self) {
        let pods = &self.input.pods;
        let mut order: Vec<usize> = (0..pods.len()).collect();
        order.sort_by(|&a, &b| {
            let (pa, pb) = (&pods[a].shape.requests, &pods[b].shape.requests);
            pb.cpu_milli
                .cmp(&pa.cpu_milli)
                .then_with(|| pb.memory_bytes.cmp(&pa.memory_bytes))
                .then_with(|| pods[a].created_nanos.cmp(&pods[b].created_nanos))
                .then_with(|| pods[a].uid.cmp(&pods[b].uid))
        });
        let held = self.place_held(&order);
        let mut queue: std::collections::VecDeque<usize> = order.into_iter().filter(|&pod| !held[pod]).collect();
        let mut last_pushed_len: Vec<Option<usize>> = vec![None; pods.len()];
        // Bound: every pod is popped at most once per successful placement plus one full cycle.
        let mut budget = pods.len().saturating_mul(pods.len().min(1 << 16) + 2).max(16);
        while let Some(&pod) = queue.front() {
            if last_pushed_len[pod] == Some(queue.len()) {
                break;
            }
            assert!(budget > 0, "scheduling queue failed to converge");
            budget -= 1;
            queue.pop_front();
            match self.try_schedule(pod) {
                Ok(()) => {
                    self.pod_errors.remove(&pod);
                }
                Err(reason) => {
                    self.pod_errors.insert(pod, reason);
                    queue.push_back(pod);
                    last_pushed_len[pod] = Some(queue.len());
                }
            }
        }
    }

    /// `add()`, relaxing one preference after each failure until it fits or nothing is left.
    fn try_schedule(&mut self, pod: usize) -> Result<(), String> {
        loop {
            let error = match self.add(pod) {
                Ok(()) => return Ok(()),
                Err(error) => error,
            };
            let mut shape = self.shapes.shapes[self.pod_shape[pod]].clone();
            if relax(&mut shape, self.tolerate_prefer_no_schedule).is_none() {
                return Err(error);
            }
            self.topology.ensure_groups(&shape);
            self.pod_shape[pod] = self.shapes.intern(&shape);
        }
    }

    fn add(&mut self, pod: usize) -> Result<(), String> {
        let shape_id = self.pod_shape[pod];
        if self.add_to_existing(pod, shape_id) {
            return Ok(());
        }
        if self.add_to_planned(pod, shape_id) {
            return Ok(());
        }
        self.add_to_new(pod, shape_id)
    }

    fn add_to_existing(&mut self, pod: usize, shape_id: usize) -> bool {
        if self.shapes.closed_existing[shape_id].len >= self.existing.len() {
            return false;
        }
        let shape = &self.shapes.shapes[shape_id];
        let requirements = &self.shapes.requirements[shape_id];
        for index in 0..self.existing.len() {
            if self.shapes.closed_existing[shape_id].contains(index) {
                continue;
            }
            match self.existing[index].can_add(&mut self.topology, shape_id, shape, requirements) {
                Ok(()) => {
                    let node = &mut self.existing[index];
                    node.commit(pod, shape);
                    let node_requirements = node.requirements.clone();
                    self.topology.record(shape_id, shape, &node_requirements, &self.existing_taints[index]);
                    return true;
                }
                Err(AddError { permanent: true, .. }) => self.shapes.closed_existing[shape_id].insert(index),
                Err(_) => {}
            }
        }
        false
    }

    fn add_to_planned(&mut self, pod: usize, shape_id: usize) -> bool {
        if self.shapes.closed_claims[shape_id].len >= self.claims.len() {
            return false;
        }
        self.shapes.maybe_index_open_claims(shape_id, self.claims.len());
        let order: Vec<(usize, usize)> = match &self.shapes.open_claims[shape_id] {
            // Same order as `claim_order`, restricted to the open claims.
            Some(open) => {
                let mut order: Vec<(usize, usize)> = open.iter().map(|&i| (self.claims[i].pods.len(), i)).collect();
                order.sort_unstable();
                order
            }
            None => Vec::new(),
        };
        let indexed = self.shapes.open_claims[shape_id].is_some();
        let stamp = self
            .topology
            .rejection_stamp(shape_id, &self.shapes.shapes[shape_id], &self.shapes.requirements[shape_id])
            .map(|s| s.wrapping_add(1));
        let mut newly_rejected = Vec::new();
        let policy = self.options.min_values_policy;
        let mut accepted = None;
        let mut newly_closed = Vec::new();
        {
            let shape = &self.shapes.shapes[shape_id];
            let requirements = &self.shapes.requirements[shape_id];
            let closed = &self.shapes.closed_claims[shape_id];
            let rejections = &self.shapes.topology_rejections[shape_id];
            let candidates: Box<dyn Iterator<Item = &(usize, usize)>> =
                if indexed { Box::new(order.iter()) } else { Box::new(self.claim_order.iter()) };
            for &(count, index) in candidates {
                if closed.contains(index) || (stamp.is_some() && rejections.get(index).copied() == stamp) {
                    continue;
                }
                let claim = &self.claims[index];
                let template = &self.templates[claim.template];
                match claim.can_add(template, &mut self.topology, shape_id, shape, requirements, policy) {
                    Ok(update) => {
                        accepted = Some((count, index, update));
                        break;
                    }
                    Err(AddError { permanent: true, .. }) => newly_closed.push(index),
                    // Every transient rejection comes from topology (it is the only check
                    // whose answer can change back), so it holds until the stamp moves.
                    Err(_) => newly_rejected.push(index),
                }
            }
        }
        for index in newly_closed {
            self.shapes.close_claim(shape_id, index);
        }
        if let Some(stamp) = stamp {
            let rejections = &mut self.shapes.topology_rejections[shape_id];
            for index in newly_rejected {
                if rejections.len() <= index {
                    rejections.resize(self.claims.len(), 0);
                }
                rejections[index] = stamp;
            }
        }
        let Some((count, index, update)) = accepted else { return false };
        let shape = &self.shapes.shapes[shape_id];
        let claim = &mut self.claims[index];
        claim.commit(update, pod, shape);
        let taints = &self.templates[claim.template].taints;
        self.topology.record(shape_id, shape, &claim.requirements, taints);
        self.claim_order.remove(&(count, index));
        self.claim_order.insert((count + 1, index));
        true
    }

    fn add_to_new(&mut self, pod: usize, shape_id: usize) -> Result<(), String> {
        if self.templates.is_empty() {
            return Err("no nodepools found".to_owned());
        }
        let shape = &self.shapes.shapes[shape_id];
        let requirements = &self.shapes.requirements[shape_id];
        let mut errors = Vec::new();
        for (template_index, template) in self.templates.iter().enumerate() {
            let options: Vec<u32> = match &self.remaining_limits[template_index] {
                None => (0..template.instance_types.len()).map(|i| i as u32).collect(),
                Some(remaining) => (0..template.instance_types.len())
                    .filter(|i| within_limits(&template.instance_types[*i].capacity, remaining))
                    .map(|i| i as u32)
                    .collect(),
            };
            if options.is_empty() {
                errors.push(format!("nodepool {:?}: all available instance types exceed limits", template.node_pool));
                continue;
            }
            let hostname = format!("{HOSTNAME_PLACEHOLDER_PREFIX}{:04}", self.claims.len());
            let mut claim = PlannedClaim::new(template_index, template, hostname, options);
            let policy = self.options.min_values_policy;
            match claim.can_add(template, &mut self.topology, shape_id, shape, requirements, policy) {
                Ok(update) => {
                    claim.commit(update, pod, shape);
                    self.topology.record(shape_id, shape, &claim.requirements, &template.taints);
                    if let Some(remaining) = &mut self.remaining_limits[template_index] {
                        // Pessimistic: assume the largest instance type left (§2.3 item 10).
                        for (resource, left) in remaining.iter_mut() {
                            let largest = claim
                                .options
                                .iter()
                                .map(|i| limit_usage(&template.instance_types[*i as usize].capacity, resource))
                                .max()
                                .unwrap_or(0);
                            *left -= largest;
                        }
                    }
                    let index = self.claims.len();
                    self.claims.push(claim);
                    self.claim_order.insert((1, index));
                    self.shapes.add_claim(index);
                    return Ok(());
                }
                Err(error) => {
                    errors.push(format!("incompatible with nodepool {:?}, {}", template.node_pool, error.message))
                }
            }
        }
        Err(errors.join("; "))
    }

    fn into_results(self) -> Results {
        let pods = &self.input.pods;
        let mut pod_errors: BTreeMap<String, String> =
            self.pod_errors.iter().map(|(pod, reason)| (pods[*pod].key.clone(), reason.clone())).collect();
        let mut new_node_claims = Vec::new();
        for claim in &self.claims {
            let template = &self.templates[claim.template];
            let types: Vec<_> =
                claim.options.iter().map(|i| Arc::clone(&template.instance_types[*i as usize])).collect();
            let mut requirements = claim.requirements.clone();
            requirements.remove(labels::HOSTNAME_LABEL);
            let pod_keys: Vec<String> = claim.pods.iter().map(|p| pods[*p].key.clone()).collect();
            // The options are already cheapest-first for the template's requirements; only a
            // claim whose offering-level labels (zone, capacity type, reservation) were
            // narrowed needs re-pricing.
            let same_offerings =
                [labels::TOPOLOGY_ZONE_LABEL, labels::CAPACITY_TYPE_LABEL, labels::CAPACITY_RESERVATION_ID_LABEL]
                    .iter()
                    .all(|key| requirements.get(key) == template.requirements.get(key));
            let truncated = if same_offerings {
                let mut kept = types;
                kept.truncate(self.options.max_instance_types);
                match min_values_shortfall(&requirements, kept.iter().map(Arc::as_ref)) {
                    None => Ok((kept, false)),
                    Some(_) if self.options.min_values_policy == MinValuesPolicy::BestEffort => Ok((kept, true)),
                    Some((key, wanted, found)) => Err(format!(
                        "minValues requirement is not met for label {key}: wanted {wanted}, {found} after truncating \
                         to {} instance types",
                        self.options.max_instance_types
                    )),
                }
            } else {
                truncate_instance_types(
                    &types,
                    &requirements,
                    self.options.max_instance_types,
                    self.options.min_values_policy,
                )
            };
            match truncated {
                Ok((kept, relaxed)) => {
                    new_node_claims.push(PlannedNodeClaim {
                        node_pool: template.node_pool.clone(),
                        hostname_placeholder: claim.hostname.clone(),
                        requirements,
                        instance_type_options: kept,
                        pods: pod_keys,
                        requests: template.daemons.claim_requests(&claim.requests, &claim.options),
                        min_values_relaxed: claim.min_values_relaxed || relaxed,
                    });
                }
                Err(reason) => {
                    for key in pod_keys {
                        pod_errors.insert(key, reason.clone());
                    }
                }
            }
        }
        let mut existing_node_assignments = BTreeMap::new();
        for node in &self.existing {
            if !node.pods.is_empty() {
                existing_node_assignments
                    .insert(node.name.clone(), node.pods.iter().map(|p| pods[*p].key.clone()).collect());
            }
        }
        Results { new_node_claims, existing_node_assignments, pod_errors, node_pool_errors: self.node_pool_errors }
    }
}

/// What of a bound pod's shape constrains newcomers: only required anti-affinity of running
/// pods does (inverse groups), so spreads, affinity and preferences are dropped.
fn reduced_shape(shape: &PodShape) -> PodShape {
    PodShape {
        spreads: Vec::new(),
        affinity: Vec::new(),
        preferred_affinity: Vec::new(),
        preferred_anti_affinity: Vec::new(),
        ..shape.clone()
    }
}

/// Shapes of the pods of a snapshot, for callers that want to know how much grouping applies.
pub fn distinct_shapes(pods: &[SchedulablePod]) -> usize {
    pods.iter().map(|p| &p.shape).collect::<BTreeSet<_>>().len()
}
