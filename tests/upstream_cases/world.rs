//! Builds the objects a case describes: instance types shaped like core's fake cloud provider
//! (`pkg/cloudprovider/fake/instancetype.go`: defaults 4 CPU, 4Gi, 5 pods, 100m/10Mi
//! kube-reserved, spot in zones 1–2 and on-demand in zones 1–3 all at `PriceFromResources`),
//! NodePools merged over a minimal template, pods, DaemonSets, PDBs, and existing nodes with
//! their NodeClaims in a [`SyntheticCluster`].

use std::collections::BTreeMap;
use std::sync::Arc;

use dovetail_controller::apis::NodePool;
use dovetail_controller::apis::labels::{ARCH_LABEL, OS_LABEL};
use dovetail_controller::cloudprovider::{InstanceType, Offering, Overhead};
use dovetail_controller::disruption::synthetic::SyntheticCluster;
use dovetail_controller::scheduling::{Requirement, Requirements, Resources};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::format::{Catalog, DaemonSetSpec, InstanceTypeSpec, NodeSpec, OfferingSpec, PdbSpec, PodSpec, PoolSpec};

/// Core fake GPU resources priced at 1.0 each (`PriceFromResources`).
const FAKE_GPUS: [&str; 2] = ["fake.com/vendor-a", "fake.com/vendor-b"];
/// Zones and capacity types of core's default offerings, in its order.
const DEFAULT_OFFERINGS: [(&str, &str); 5] = [
    ("test-zone-1", "spot"),
    ("test-zone-2", "spot"),
    ("test-zone-1", "on-demand"),
    ("test-zone-2", "on-demand"),
    ("test-zone-3", "on-demand"),
];

/// The catalog's instance types, in order.
pub fn instance_types(catalog: &Catalog) -> Result<Vec<Arc<InstanceType>>, String> {
    let mut specs = Vec::new();
    if catalog.upstream_default {
        specs.extend(upstream_default());
    }
    for i in 0..catalog.fake_series {
        let n = i as i64 + 1;
        specs.push(InstanceTypeSpec {
            name: format!("fake-it-{i}"),
            cpu: Some(n.to_string()),
            memory: Some(format!("{}Gi", 2 * n)),
            pods: Some(10 * n),
            ..spec("")
        });
    }
    if catalog.assorted {
        specs.extend(assorted());
    }
    specs.extend(catalog.types.iter().cloned());
    specs.iter().map(|s| instance_type(s).map(Arc::new)).collect()
}

fn spec(name: &str) -> InstanceTypeSpec {
    InstanceTypeSpec {
        name: name.to_owned(),
        cpu: None,
        memory: None,
        pods: None,
        resources: BTreeMap::new(),
        arch: None,
        os: None,
        labels: BTreeMap::new(),
        offerings: None,
    }
}

/// Core `fake.InstanceTypesAssorted()` (`pkg/cloudprovider/fake/instancetype.go`).
fn assorted() -> Vec<InstanceTypeSpec> {
    let mut specs = Vec::new();
    for cpu in [1, 2, 4, 8, 16, 32, 64] {
        for mem in [1, 2, 4, 8, 16, 32, 64, 128] {
            for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
                for ct in ["spot", "on-demand"] {
                    for os in ["linux", "windows"] {
                        for arch in ["amd64", "arm64"] {
                            specs.push(InstanceTypeSpec {
                                cpu: Some(cpu.to_string()),
                                memory: Some(format!("{mem}Gi")),
                                arch: Some(arch.into()),
                                os: Some(vec![os.into()]),
                                offerings: Some(vec![OfferingSpec {
                                    zone: zone.into(),
                                    capacity_type: ct.into(),
                                    price: None,
                                    available: true,
                                }]),
                                ..spec(&format!("{cpu}-cpu-{mem}-mem-{arch}-{os}-{zone}-{ct}"))
                            });
                        }
                    }
                }
            }
        }
    }
    specs
}

/// Core's `CloudProvider.GetInstanceTypes` default list (`pkg/cloudprovider/fake/cloudprovider.go`).
fn upstream_default() -> Vec<InstanceTypeSpec> {
    let gpu =
        |name: &str, resource: &str| InstanceTypeSpec { resources: [(resource.to_owned(), 2)].into(), ..spec(name) };
    vec![
        spec("default-instance-type"),
        InstanceTypeSpec { cpu: Some("2".into()), memory: Some("2Gi".into()), ..spec("small-instance-type") },
        gpu("gpu-vendor-instance-type", FAKE_GPUS[0]),
        gpu("gpu-vendor-b-instance-type", FAKE_GPUS[1]),
        InstanceTypeSpec {
            arch: Some("arm64".into()),
            os: Some(vec!["ios".into(), "linux".into(), "windows".into(), "darwin".into()]),
            cpu: Some("16".into()),
            memory: Some("128Gi".into()),
            ..spec("arm-instance-type")
        },
        InstanceTypeSpec { pods: Some(1), ..spec("single-pod-instance-type") },
    ]
}

/// One instance type.
pub fn instance_type(s: &InstanceTypeSpec) -> Result<InstanceType, String> {
    let mut capacity = Resources::default();
    capacity.set_text("cpu", s.cpu.as_deref().unwrap_or("4")).map_err(|e| format!("instance type {}: {e}", s.name))?;
    capacity
        .set_text("memory", s.memory.as_deref().unwrap_or("4Gi"))
        .map_err(|e| format!("instance type {}: {e}", s.name))?;
    capacity.set("pods", s.pods.unwrap_or(5));
    for (name, value) in &s.resources {
        capacity.set(name, *value);
    }
    #[allow(clippy::cast_precision_loss)]
    let mut price = 0.1 * capacity.cpu_milli as f64 / 1000.0 + 0.1 * capacity.memory_bytes as f64 / 1e9;
    price += FAKE_GPUS.iter().filter(|g| capacity.get(g) > 0).count() as f64;
    let offerings = match &s.offerings {
        Some(list) => {
            list.iter().map(|o| offering(&o.zone, &o.capacity_type, o.price.unwrap_or(price), o.available)).collect()
        }
        None => DEFAULT_OFFERINGS.iter().map(|(zone, ct)| offering(zone, ct, price, true)).collect(),
    };
    let mut requirements = Requirements::new();
    requirements.add(ARCH_LABEL, Requirement::in_values([s.arch.clone().unwrap_or_else(|| "amd64".into())]));
    let os = s.os.clone().unwrap_or_else(|| vec!["linux".into(), "windows".into(), "darwin".into()]);
    requirements.add(OS_LABEL, Requirement::in_values(os));
    for (key, value) in &s.labels {
        requirements.add(key, Requirement::in_values([value.clone()]));
    }
    let mut kube_reserved = Resources::default();
    kube_reserved.set_text("cpu", "100m")?;
    kube_reserved.set_text("memory", "10Mi")?;
    let overhead = Overhead { kube_reserved, ..Overhead::default() };
    Ok(InstanceType::new(s.name.clone(), requirements, capacity, overhead, offerings))
}

fn offering(zone: &str, capacity_type: &str, price: f64, available: bool) -> Offering {
    Offering {
        zone: zone.to_owned(),
        capacity_type: capacity_type.to_owned(),
        price,
        available,
        reservation_id: (capacity_type == "reserved").then(|| format!("cr-{zone}")),
    }
}

/// Deep-merges `patch` into `target` (objects merge, everything else replaces).
pub fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (_, Value::Null) => {}
        (target, patch) => *target = patch.clone(),
    }
}

/// A NodePool from a case's spec over core's `test.NodePool` shape.
pub fn node_pool(spec: &PoolSpec) -> Result<NodePool, String> {
    let mut value = json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": spec.name, "uid": format!("uid-{}", spec.name), "resourceVersion": "1"},
        "spec": {"template": {"spec": {
            "requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        }}}
    });
    merge(&mut value["spec"], &spec.spec);
    serde_json::from_value(value).map_err(|e| format!("nodePool {}: {e}", spec.name))
}

/// The pool's instance types: the catalog, or the listed subset.
pub fn pool_types(spec: &PoolSpec, catalog: &[Arc<InstanceType>]) -> Result<Vec<Arc<InstanceType>>, String> {
    match &spec.instance_types {
        None => Ok(catalog.to_vec()),
        Some(names) => names
            .iter()
            .map(|n| {
                catalog
                    .iter()
                    .find(|it| it.name == *n)
                    .cloned()
                    .ok_or_else(|| format!("nodePool {}: instanceTypes: no type {n:?} in the catalog", spec.name))
            })
            .collect(),
    }
}

/// Pod names a spec stands for (`name-0..` when `count` is set).
pub fn pod_names(spec: &PodSpec) -> Vec<String> {
    match spec.count {
        Some(n) => (0..n).map(|i| format!("{}-{i}", spec.name)).collect(),
        None => vec![spec.name.clone()],
    }
}

/// The pods a spec stands for, pending (unschedulable) or bound.
pub fn pods(spec: &PodSpec, epoch: jiff::Timestamp) -> Result<Vec<Pod>, String> {
    pod_names(spec).into_iter().map(|name| pod(spec, &name, epoch)).collect()
}

fn pod(spec: &PodSpec, name: &str, epoch: jiff::Timestamp) -> Result<Pod, String> {
    let mut requests: BTreeMap<String, String> = spec.requests.clone();
    if let Some(cpu) = &spec.cpu {
        requests.insert("cpu".into(), cpu.clone());
    }
    if let Some(memory) = &spec.memory {
        requests.insert("memory".into(), memory.clone());
    }
    // The API server defaults a container's missing requests to its limits
    // (k8s.io/kubernetes pkg/apis/core/v1/defaults.go `SetDefaults_Pod`); core's envtest pods get it too.
    for (name, limit) in &spec.limits {
        requests.entry(name.clone()).or_insert_with(|| limit.clone());
    }
    let ports: Vec<Value> = spec.host_ports.iter().map(|p| json!({"containerPort": p, "hostPort": p})).collect();
    let mut resources = json!({"requests": requests});
    if !spec.limits.is_empty() {
        resources["limits"] = json!(spec.limits);
    }
    let owner = match spec.owner.as_deref().unwrap_or("ReplicaSet") {
        "none" => json!([]),
        "Node" => json!([{"apiVersion": "v1", "kind": "Node", "name": "node", "uid": "node-uid", "controller": true}]),
        kind @ ("ReplicaSet" | "StatefulSet" | "DaemonSet") => json!([{"apiVersion": "apps/v1", "kind": kind,
            "name": spec.labels.get("app").cloned().unwrap_or_else(|| spec.name.clone()),
            "uid": format!("owner-{}", spec.name), "controller": true}]),
        other => return Err(format!("pod {name}: owner: unknown kind {other:?}")),
    };
    let mut pod = json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "labels": spec.labels, "annotations": spec.annotations,
                     "creationTimestamp": epoch.to_string(), "ownerReferences": owner},
        "spec": {"containers": [{"name": "app", "image": "pause", "resources": resources, "ports": ports}],
                 "nodeSelector": spec.node_selector},
    });
    if !spec.node_requirements.is_empty() {
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
            json!({"nodeSelectorTerms": [{"matchExpressions": spec.node_requirements}]});
    }
    if !spec.node_preferences.is_empty() {
        pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
            json!([{"weight": 1, "preference": {"matchExpressions": spec.node_preferences}}]);
    }
    merge(&mut pod["spec"], &spec.spec);
    if spec.terminating {
        pod["metadata"]["deletionTimestamp"] = json!(epoch.to_string());
    }
    pod["status"] = match &spec.node {
        Some(node) => {
            pod["spec"]["nodeName"] = json!(node);
            json!({"phase": spec.phase.clone().unwrap_or_else(|| "Running".into()), "startTime": epoch.to_string()})
        }
        None => json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
    };
    serde_json::from_value(pod).map_err(|e| format!("pod {name}: {e}"))
}

/// A DaemonSet object for the snapshot.
pub fn daemon_set(
    spec: &DaemonSetSpec,
    epoch: jiff::Timestamp,
) -> Result<k8s_openapi::api::apps::v1::DaemonSet, String> {
    let pod = pod(&spec.pod, &spec.name, epoch)?;
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": {"name": spec.name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": pod.spec}}
    }))
    .map_err(|e| format!("daemonSet {}: {e}", spec.name))
}

/// A PDB with its status.
pub fn pdb(spec: &PdbSpec) -> Result<k8s_openapi::api::policy::v1::PodDisruptionBudget, String> {
    let mut pdb_spec = json!({"selector": {"matchLabels": spec.match_labels}});
    match (&spec.max_unavailable, &spec.min_available) {
        (None, None) => pdb_spec["minAvailable"] = json!(1),
        (max, min) => {
            if let Some(max) = max {
                pdb_spec["maxUnavailable"] = max.clone();
            }
            if let Some(min) = min {
                pdb_spec["minAvailable"] = min.clone();
            }
        }
    }
    serde_json::from_value(json!({
        "metadata": {"name": spec.name, "namespace": "default"},
        "spec": pdb_spec,
        "status": {"disruptionsAllowed": spec.disruptions_allowed, "currentHealthy": 1, "desiredHealthy": 1,
                   "expectedPods": 1}
    }))
    .map_err(|e| format!("pdb {}: {e}", spec.name))
}

/// Adds an existing node (Node + NodeClaim) to the cluster.
pub fn add_node(cluster: &mut SyntheticCluster, spec: &NodeSpec) -> Result<(), String> {
    let offered = cluster
        .pools
        .iter()
        .find(|p| p.node_pool.metadata.name.as_deref() == Some(spec.pool.as_str()))
        .is_some_and(|p| p.instance_types.iter().any(|it| it.name == spec.instance_type));
    if !offered {
        return Err(format!(
            "node {}: pool {:?} offers no instance type {:?}",
            spec.name, spec.pool, spec.instance_type
        ));
    }
    cluster.add_node(&spec.name, &spec.pool, &spec.instance_type, &spec.zone, &spec.capacity_type);
    let epoch = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(cluster.epoch);
    let taints: Vec<k8s_openapi::api::core::v1::Taint> = spec
        .taints
        .iter()
        .map(|t| serde_json::from_value(t.clone()).map_err(|e| format!("node {}: taints: {e}", spec.name)))
        .collect::<Result<_, _>>()?;
    cluster.edit_node(&spec.name, |node| {
        let labels = node.metadata.labels.get_or_insert_default();
        labels.extend(spec.labels.clone());
        if !spec.annotations.is_empty() {
            node.metadata.annotations = Some(spec.annotations.clone());
        }
        if !taints.is_empty() {
            node.spec.get_or_insert_default().taints = Some(taints);
        }
        if !spec.allocatable.is_empty() {
            let status = node.status.get_or_insert_default();
            let allocatable = status.allocatable.get_or_insert_default();
            for (name, value) in &spec.allocatable {
                allocatable
                    .insert(name.clone(), k8s_openapi::apimachinery::pkg::api::resource::Quantity(value.clone()));
            }
        }
        if !spec.ready
            && let Some(conditions) = node.status.as_mut().and_then(|s| s.conditions.as_mut())
        {
            conditions[0].status = "False".into();
        }
        if spec.deleting {
            node.metadata.deletion_timestamp = Some(epoch.clone());
        }
    });
    let drifted_at = epoch.clone();
    cluster.edit_claim(&spec.name, |claim| {
        use dovetail_controller::apis::condition::StatusConditions;
        claim.metadata.labels.get_or_insert_default().extend(spec.labels.clone());
        if !spec.allocatable.is_empty() {
            let mut value = serde_json::to_value(&*claim).expect("claim");
            for (name, quantity) in &spec.allocatable {
                value["status"]["allocatable"][name] = json!(quantity);
            }
            *claim = serde_json::from_value(value).expect("claim");
        }
        if !spec.initialized {
            claim.clear_condition("Initialized");
            claim.metadata.labels.get_or_insert_default().remove("karpenter.sh/initialized");
        }
        if !spec.consolidatable {
            claim.clear_condition("Consolidatable");
        }
        if spec.drifted {
            let mut value = serde_json::to_value(&*claim).expect("claim");
            value["status"]["conditions"].as_array_mut().expect("conditions").push(json!({
                "type": "Drifted", "status": "True", "reason": "RequirementsDrifted",
                "lastTransitionTime": drifted_at.0.to_string()}));
            *claim = serde_json::from_value(value).expect("claim");
        }
        if spec.deleting {
            claim.metadata.deletion_timestamp = Some(drifted_at.clone());
        }
        if !spec.startup_taints.is_empty() {
            let mut value = serde_json::to_value(&*claim).expect("claim");
            value["spec"]["startupTaints"] = json!(spec.startup_taints);
            *claim = serde_json::from_value(value).expect("claim");
        }
        if let Some(grace) = &spec.termination_grace_period {
            let mut value = serde_json::to_value(&*claim).expect("claim");
            value["spec"]["terminationGracePeriod"] = json!(grace);
            *claim = serde_json::from_value(value).expect("claim");
        }
    });
    if spec.unmanaged {
        cluster.snapshot.node_claims.remove(&spec.name);
        cluster.edit_node(&spec.name, |node| {
            let labels = node.metadata.labels.get_or_insert_default();
            labels.remove("karpenter.sh/nodepool");
            labels.remove("karpenter.sh/initialized");
            node.spec.get_or_insert_default().provider_id = None;
        });
    }
    if !spec.initialized {
        cluster.edit_node(&spec.name, |node| {
            node.metadata.labels.get_or_insert_default().remove("karpenter.sh/initialized");
        });
    }
    Ok(())
}
