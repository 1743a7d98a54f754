//! The unaffected cluster of many scheduling passes, prepared once: a consolidation decision
//! probes ~7 prefixes of its candidates (core `disruption/helpers.go` `SimulateScheduling`,
//! one `scheduling.NewScheduler` + `Solve` per probe), and each probe is the same cluster
//! without a few nodes. Re-deriving the scheduler's view of every node and bound pod per probe
//! made a decision at 2,000 nodes cost ~40 ms per probe (docs/benchmarks-measured.md "Session
//! 19"); here the node states (in pass order), the bound pods' reduced shapes, the NodePool
//! limits left and the domains the nodes declare are built once, and a probe
//! ([`schedule_without`]) only drops its removed nodes and pods from them.
//!
//! Same results as [`super::schedule_with`] over the cluster without those nodes and pods: the
//! node states are the same values in the same (stable-sorted, then filtered) order, the
//! topology groups are created in the same order (pending shapes, then the bound shapes by
//! first remaining occurrence), the same bound pods are recorded in the same order, and the
//! same domains are declared. Only the pods whose shape records into no group are skipped, as
//! recording them changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use super::super::existing::ExistingNodeState;
use super::super::pod::{PodShape, SchedulablePod};
use super::super::results::Results;
use super::super::snapshot::{BoundPod, ExistingNode, SchedulerOptions, SchedulingView};
use super::super::template::{PoolTemplates, limit_usage};
use super::{Pass, reduced_shape};
use crate::apis::labels;

/// Probes re-pack their pods as upstream does: none is held on an in-flight node.
static NOTHING_HELD: BTreeMap<String, String> = BTreeMap::new();

/// The scheduler's view of a whole cluster, for passes that each leave out some nodes.
pub struct ClusterBase<'a> {
    nodes: &'a [ExistingNode],
    bound: &'a [BoundPod],
    daemon_set_pods: &'a [SchedulablePod],
    options: &'a SchedulerOptions,
    /// Node indexes by name.
    by_name: BTreeMap<&'a str, Vec<usize>>,
    /// The states of the nodes not marked for deletion, in pass order, with their index.
    states: Vec<(usize, ExistingNodeState)>,
    /// Per template: its limits minus the capacity of every node in `states` of its pool.
    remaining_limits: Vec<Option<BTreeMap<String, i64>>>,
    /// The distinct reduced shapes of the bound pods, and each bound pod's.
    reduced: Vec<PodShape>,
    bound_reduced: Vec<usize>,
    /// Per bound pod, the first and the last node named like its node.
    bound_first_node: Vec<Option<usize>>,
    bound_last_node: Vec<Option<usize>>,
    /// Label key → value → how many nodes carry it.
    label_domains: BTreeMap<&'a str, BTreeMap<&'a str, usize>>,
    /// Every node's name (its hostname domain).
    hostnames: BTreeSet<String>,
}

/// What one pass leaves out of a [`ClusterBase`]: the nodes with some names, and the pods
/// bound to a node of those names.
pub struct Without {
    nodes: Vec<bool>,
    bound: Vec<bool>,
    /// Indexes of the left-out nodes, ascending.
    removed: Vec<usize>,
    /// Their names.
    names: BTreeSet<String>,
}

impl<'a> ClusterBase<'a> {
    /// Prepares `nodes` and `bound` pods for passes with `templates` (which must be built from
    /// the same DaemonSet pods and options, as for [`super::schedule_with`]).
    pub fn new(
        nodes: &'a [ExistingNode],
        bound: &'a [BoundPod],
        daemon_set_pods: &'a [SchedulablePod],
        options: &'a SchedulerOptions,
        templates: &PoolTemplates,
    ) -> Self {
        let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut label_domains: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for (index, node) in nodes.iter().enumerate() {
            by_name.entry(node.name.as_str()).or_default().push(index);
            for (key, value) in &node.labels {
                *label_domains.entry(key.as_str()).or_default().entry(value.as_str()).or_default() += 1;
            }
        }
        // Pass order (`Pass::new`): initialized first, then by name, stable.
        let mut order: Vec<usize> = (0..nodes.len()).filter(|i| !nodes[*i].marked_for_deletion).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&nodes[a], &nodes[b]);
            b.initialized.cmp(&a.initialized).then_with(|| a.name.cmp(&b.name))
        });
        let states: Vec<(usize, ExistingNodeState)> =
            order.iter().map(|&i| (i, ExistingNodeState::new(&nodes[i], daemon_set_pods))).collect();
        let remaining_limits = templates
            .templates
            .iter()
            .map(|template| {
                template.limits.clone().map(|mut remaining| {
                    for &i in order.iter().filter(|i| nodes[**i].node_pool() == Some(&template.node_pool)) {
                        for (resource, left) in &mut remaining {
                            *left -= limit_usage(&nodes[i].capacity, resource);
                        }
                    }
                    remaining
                })
            })
            .collect();
        let mut reduced = Vec::new();
        let mut reduced_ids: BTreeMap<PodShape, usize> = BTreeMap::new();
        let mut by_shape: BTreeMap<&PodShape, usize> = BTreeMap::new();
        let bound_reduced = bound
            .iter()
            .map(|b| {
                *by_shape.entry(&b.pod.shape).or_insert_with(|| {
                    let shape = reduced_shape(&b.pod.shape);
                    *reduced_ids.entry(shape.clone()).or_insert_with(|| {
                        reduced.push(shape);
                        reduced.len() - 1
                    })
                })
            })
            .collect();
        let named = |b: &BoundPod| by_name.get(b.node_name.as_str());
        let bound_first_node = bound.iter().map(|b| named(b).and_then(|n| n.first().copied())).collect();
        let bound_last_node = bound.iter().map(|b| named(b).and_then(|n| n.last().copied())).collect();
        let hostnames = by_name.keys().map(|name| (*name).to_owned()).collect();
        Self {
            nodes,
            bound,
            daemon_set_pods,
            options,
            by_name,
            states,
            remaining_limits,
            reduced,
            bound_reduced,
            bound_first_node,
            bound_last_node,
            label_domains,
            hostnames,
        }
    }

    /// Leaves out the nodes named in `names` and the pods bound to a node of those names.
    pub fn without<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Without {
        let names: BTreeSet<String> = names.into_iter().map(str::to_owned).collect();
        let mut nodes = vec![false; self.nodes.len()];
        let mut removed = Vec::new();
        for name in &names {
            for &index in self.by_name.get(name.as_str()).into_iter().flatten() {
                nodes[index] = true;
                removed.push(index);
            }
        }
        removed.sort_unstable();
        let bound = self
            .bound
            .iter()
            .zip(&self.bound_first_node)
            .map(|(b, node)| match node {
                Some(index) => nodes[*index],
                None => names.contains(&b.node_name),
            })
            .collect();
        Without { nodes, bound, removed, names }
    }

    /// The nodes a pass `without` schedules against, in input order.
    pub fn remaining_nodes<'s>(&'s self, without: &'s Without) -> impl Iterator<Item = &'a ExistingNode> + 's {
        self.nodes.iter().zip(&without.nodes).filter(|(_, gone)| !**gone).map(|(n, _)| n)
    }
}

/// A scheduling pass placing `pods` on the cluster of `base` without `without`, with
/// `templates` (those `base` was prepared with): the same results as [`super::schedule_with`]
/// over a view of the remaining nodes and bound pods, no held pods.
pub fn schedule_without(
    base: &ClusterBase<'_>,
    without: &Without,
    pods: Vec<&SchedulablePod>,
    templates: &PoolTemplates,
) -> Results {
    // The pass reads its nodes and bound pods from `base`, not from the view.
    let view = SchedulingView {
        pods,
        existing_nodes: Vec::new(),
        bound_pods: Vec::new(),
        daemon_set_pods: base.daemon_set_pods,
        options: base.options,
        held: &NOTHING_HELD,
    };
    let existing = base.states.iter().filter(|(i, _)| !without.nodes[*i]).map(|(_, s)| s.clone()).collect();
    // remaining = limits − Σ kept = (limits − Σ all) + Σ removed, in exact integers.
    let mut remaining_limits = base.remaining_limits.clone();
    for (template, remaining) in templates.templates.iter().zip(&mut remaining_limits) {
        let Some(remaining) = remaining else { continue };
        for &i in &without.removed {
            let node = &base.nodes[i];
            if !node.marked_for_deletion && node.node_pool() == Some(&template.node_pool) {
                for (resource, left) in remaining.iter_mut() {
                    *left += limit_usage(&node.capacity, resource);
                }
            }
        }
    }
    let mut pass = Pass::assemble(&view, templates, existing, remaining_limits);
    pass.intern_pods();
    pass.build_topology_from(base, without);
    pass.solve();
    pass.into_results()
}

impl Pass<'_> {
    /// [`Pass::build_topology`] over `base` without `without`.
    fn build_topology_from(&mut self, base: &ClusterBase<'_>, without: &Without) {
        self.ensure_pending_groups();
        // Bound shapes by first remaining occurrence: the order `build_topology` creates
        // their groups and interns them in.
        let mut ids: Vec<Option<usize>> = vec![None; base.reduced.len()];
        for (&reduced, _) in base.bound_reduced.iter().zip(&without.bound).filter(|(_, gone)| !**gone) {
            if ids[reduced].is_none() {
                self.topology.ensure_groups(&base.reduced[reduced]);
                ids[reduced] = Some(self.shapes.intern(&base.reduced[reduced]));
            }
        }
        let keys = self.domain_keys();
        self.register_template_domains(&keys);
        // The label domains of the remaining nodes: those some kept node carries.
        for key in &keys {
            for (value, count) in base.label_domains.get(key.as_str()).into_iter().flatten() {
                let removed = without
                    .removed
                    .iter()
                    .filter(|i| base.nodes[**i].labels.get(key).is_some_and(|v| v == value))
                    .count();
                if *count > removed {
                    self.topology.register_domain(key, value);
                }
            }
        }
        // Removal is by name, so a removed name has no node left.
        let hostnames: BTreeSet<String> = base.hostnames.difference(&without.names).cloned().collect();
        if !hostnames.is_empty() {
            self.topology.register_domains(labels::HOSTNAME_LABEL, hostnames);
        }
        let placing: BTreeSet<&str> = self.input.pods.iter().map(|p| p.uid.as_str()).collect();
        let mut records: Vec<Option<bool>> = vec![None; base.reduced.len()];
        for (index, bound) in base.bound.iter().enumerate() {
            if without.bound[index] {
                continue;
            }
            let reduced = base.bound_reduced[index];
            let shape_id = ids[reduced].expect("interned above");
            let shape = &self.shapes.shapes[shape_id];
            let topology = &mut self.topology;
            if !*records[reduced].get_or_insert_with(|| topology.records_anything(shape_id, shape)) {
                continue;
            }
            if placing.contains(bound.pod.uid.as_str()) {
                continue;
            }
            // The last node of that name, as `build_topology`'s name map finds; a kept pod's
            // node name is not removed, so every node of that name is kept.
            let Some(node) = base.bound_last_node[index] else { continue };
            let node = &base.nodes[node];
            let requirements = node.shared_requirements();
            self.topology.record(shape_id, shape, &requirements, &node.taints);
        }
    }
}
