//! A case's `given:` block: the cluster before the decision (instance types, NodePools,
//! existing nodes, pods, DaemonSets, PDBs), assembled into a [`SyntheticCluster`].

use std::collections::BTreeSet;
use std::sync::Arc;

use dovetail_controller::disruption::synthetic::SyntheticCluster;
use serde::Deserialize;

use super::format::{Catalog, DaemonSetSpec, NodeSpec, PdbSpec, PodSpec, PoolSpec};
use super::world;

/// When nodes were created; decisions are taken an hour later unless a case says otherwise.
pub fn epoch() -> jiff::Timestamp {
    "2026-01-05T12:00:00Z".parse().expect("timestamp")
}

/// The cluster before the decision.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scene {
    /// Instance types (default: the file's, else core's default fake catalog).
    #[serde(default)]
    pub instance_types: Option<Catalog>,
    /// NodePools (default: the file's, else one pool `default`).
    #[serde(default)]
    pub node_pools: Option<Vec<PoolSpec>>,
    /// Existing nodes.
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    /// Pods: bound ones name their `node`, the others are pending.
    #[serde(default)]
    pub pods: Vec<PodSpec>,
    /// DaemonSets.
    #[serde(default)]
    pub daemon_sets: Vec<DaemonSetSpec>,
    /// PDBs.
    #[serde(default)]
    pub pdbs: Vec<PdbSpec>,
}

/// File-level defaults a scene falls back to.
#[derive(Clone, Debug, Default)]
pub struct Defaults {
    /// Catalog.
    pub instance_types: Option<Catalog>,
    /// Pools.
    pub node_pools: Option<Vec<PoolSpec>>,
}

/// The built scene.
pub struct Built {
    /// The cluster.
    pub cluster: SyntheticCluster,
    /// Pending pod specs' names (expanded).
    pub pending: BTreeSet<String>,
    /// Group name → member names, for expectations that name a group.
    pub groups: std::collections::BTreeMap<String, Vec<String>>,
}

impl Scene {
    /// Builds the cluster.
    pub fn build(&self, defaults: &Defaults) -> Result<Built, String> {
        let catalog = self
            .instance_types
            .clone()
            .or_else(|| defaults.instance_types.clone())
            .unwrap_or(Catalog { upstream_default: true, ..Catalog::default() });
        let types = world::instance_types(&catalog)?;
        let pools = self.node_pools.clone().or_else(|| defaults.node_pools.clone()).unwrap_or_else(|| {
            vec![PoolSpec { name: "default".into(), spec: serde_json::Value::Null, instance_types: None }]
        });
        let mut cluster = SyntheticCluster::new(epoch());
        for spec in &pools {
            cluster.add_pool(world::node_pool(spec)?, world::pool_types(spec, &types)?);
        }
        for node in &self.expanded_nodes() {
            world::add_node(&mut cluster, node)?;
        }
        let mut pending = BTreeSet::new();
        let mut groups = std::collections::BTreeMap::new();
        for spec in &self.expanded_pods()? {
            if let Some(node) = &spec.node
                && !cluster.snapshot.nodes.contains_key(node)
            {
                return Err(format!("pod {}: node: no node {node:?} in `nodes`", spec.name));
            }
            let names = world::pod_names(spec);
            if spec.node.is_none() {
                pending.extend(names.iter().cloned());
            }
            groups.insert(spec.name.clone(), names);
            if let Some(group) = &spec.group {
                groups.entry(group.clone()).or_default().push(spec.name.clone());
            }
            for pod in world::pods(spec, epoch())? {
                let key = format!("default/{}", pod.metadata.name.clone().unwrap_or_default());
                if cluster.snapshot.pods.insert(key.clone(), Arc::new(pod)).is_some() {
                    return Err(format!("pods: {key} appears twice"));
                }
            }
        }
        for spec in &self.daemon_sets {
            cluster
                .snapshot
                .daemon_sets
                .insert(format!("default/{}", spec.name), Arc::new(world::daemon_set(spec, epoch())?));
        }
        for spec in &self.pdbs {
            cluster.snapshot.pdbs.insert(format!("default/{}", spec.name), Arc::new(world::pdb(spec)?));
        }
        Ok(Built { cluster, pending, groups })
    }
}

impl Scene {
    /// The nodes with `count` groups expanded to `name-0..`.
    pub fn expanded_nodes(&self) -> Vec<NodeSpec> {
        self.nodes
            .iter()
            .flat_map(|spec| match spec.count {
                None => vec![spec.clone()],
                Some(n) => (0..n)
                    .map(|i| NodeSpec { name: format!("{}-{i}", spec.name), count: None, ..spec.clone() })
                    .collect(),
            })
            .collect()
    }

    /// The pods with `onEachNode` expanded to one bound pod per node of the group.
    fn expanded_pods(&self) -> Result<Vec<PodSpec>, String> {
        let mut out = Vec::new();
        for spec in &self.pods {
            let Some(group) = &spec.on_each_node else {
                out.push(spec.clone());
                continue;
            };
            if spec.count.is_some() || spec.node.is_some() {
                return Err(format!("pod {}: onEachNode excludes count and node", spec.name));
            }
            let nodes: Vec<String> = match self.nodes.iter().find(|n| n.name == *group) {
                Some(NodeSpec { count: Some(n), .. }) => (0..*n).map(|i| format!("{group}-{i}")).collect(),
                Some(_) => vec![group.clone()],
                None => return Err(format!("pod {}: onEachNode: no node group {group:?} in `nodes`", spec.name)),
            };
            for (i, node) in nodes.into_iter().enumerate() {
                out.push(PodSpec {
                    name: format!("{}-{i}", spec.name),
                    node: Some(node),
                    on_each_node: None,
                    group: Some(spec.name.clone()),
                    ..spec.clone()
                });
            }
        }
        Ok(out)
    }
}

impl Built {
    /// Expands names: a pod group's name stands for its members; `*` for every pending pod.
    pub fn expand(&self, names: &[String]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for name in names {
            if name == "*" {
                out.extend(self.pending.iter().cloned());
            } else if let Some(members) = self.groups.get(name) {
                out.extend(members.iter().cloned());
            } else if self.groups.values().any(|m| m.contains(name)) {
                out.push(name.clone());
            } else {
                return Err(format!("expect names pod {name:?}, which `given.pods` does not define"));
            }
        }
        Ok(out)
    }
}
