//! Resource arithmetic and offerings, written independently of the controller: pod
//! requests, what an instance type offers after kubelet reservations, and which offerings
//! a NodePool's requirements allow.

use std::collections::BTreeMap;
use std::time::Duration;

use super::node_overlay::NodeOverlays;
use dovetail_fakecloud::{CapacityType, FakeCloud, InstanceTypeInfo, PoolKey};
use serde_json::Value;

use crate::actors::node_shape::{self, Arch, GpuVendor, InstanceFacts};
use crate::actors::quantity::{parse_milli, parse_value};

/// CPU (millicores), memory (bytes) and pod slots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resources {
    /// Millicores.
    pub cpu: f64,
    /// Bytes.
    pub memory: f64,
    /// Pod slots.
    pub pods: f64,
}

impl Resources {
    /// Component-wise sum.
    pub fn add(&mut self, other: &Resources) {
        self.cpu += other.cpu;
        self.memory += other.memory;
        self.pods += other.pods;
    }

    /// Component-wise difference: what is left of `self` once `other` is taken.
    pub fn minus(&self, other: &Resources) -> Resources {
        Resources { cpu: self.cpu - other.cpu, memory: self.memory - other.memory, pods: self.pods - other.pods }
    }

    /// Whether every component fits in `capacity`.
    pub fn fits_in(&self, capacity: &Resources) -> bool {
        self.cpu <= capacity.cpu && self.memory <= capacity.memory && self.pods <= capacity.pods
    }

    /// The requests of a pod spec as the scheduler counts them: the larger of the sum over
    /// containers and the largest init container, plus the pod overhead; one pod slot.
    pub fn of_pod_spec(spec: &Value) -> Self {
        let requests = |c: &Value| -> (f64, f64) {
            let r = &c["resources"]["requests"];
            (quantity_milli(&r["cpu"]), quantity_value(&r["memory"]))
        };
        let (mut cpu, mut memory) = (0.0, 0.0);
        for c in spec["containers"].as_array().into_iter().flatten() {
            let (c, m) = requests(c);
            cpu += c;
            memory += m;
        }
        for c in spec["initContainers"].as_array().into_iter().flatten() {
            let (c, m) = requests(c);
            cpu = f64::max(cpu, c);
            memory = f64::max(memory, m);
        }
        cpu += quantity_milli(&spec["overhead"]["cpu"]);
        memory += quantity_value(&spec["overhead"]["memory"]);
        Resources { cpu, memory, pods: 1.0 }
    }

    /// A resource list (`{cpu, memory, pods}`, e.g. a Node's `status.allocatable`); a
    /// missing entry is zero.
    pub fn of_list(list: &Value) -> Self {
        Resources {
            cpu: quantity_milli(&list["cpu"]),
            memory: quantity_value(&list["memory"]),
            pods: quantity_value(&list["pods"]),
        }
    }
}

fn quantity_milli(v: &Value) -> f64 {
    match v {
        Value::String(s) => parse_milli(s).unwrap_or(0) as f64,
        Value::Number(n) => n.as_f64().unwrap_or(0.0) * 1000.0,
        _ => 0.0,
    }
}

fn quantity_value(v: &Value) -> f64 {
    match v {
        Value::String(s) => parse_value(s).unwrap_or(0) as f64,
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// One (instance type, zone, capacity type) the cloud sells.
#[derive(Clone, Debug)]
pub struct Offering {
    /// Instance type.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// `on-demand` or `spot`.
    pub capacity_type: CapacityType,
    /// USD per hour now.
    pub price: f64,
    /// What pods can use: capacity minus kube-reserved and the eviction threshold (AWS
    /// defaults, karpenter-behaviour.md §2.4).
    pub allocatable: Resources,
    /// What Karpenter's scheduler counts on for a node of this type it has not seen yet
    /// ([`planned_allocatable`]): never more than [`Offering::allocatable`].
    pub planned: Resources,
    /// The labels a node of this offering carries (shared: [`super::offering_labels`]).
    pub labels: super::offering_labels::Labels,
}

/// Allocatable of an instance type under the default kubelet settings.
pub fn allocatable(t: &InstanceTypeInfo) -> Resources {
    let facts = InstanceFacts {
        instance_type: t.name.clone(),
        vcpu: t.vcpu,
        memory_mib: t.memory_mib,
        max_enis: t.max_enis,
        ipv4_per_eni: t.ipv4_per_eni,
        gpu: (t.gpu_count > 0).then_some((t.gpu_count, GpuVendor::Nvidia)),
        local_nvme_gib: t.local_nvme_gb.unwrap_or(0),
        arch: if t.arch == "arm64" { Arch::Arm64 } else { Arch::Amd64 },
        memory_overhead_mib: None,
    };
    let pods = node_shape::max_pods(&facts, &node_shape::KubeletSettings::default());
    let cpu = i64::from(t.vcpu) * 1000 - node_shape::kube_reserved_milli_cpu(t.vcpu);
    let memory = node_shape::capacity_memory(&facts)
        - node_shape::kube_reserved_memory(pods)
        - node_shape::EVICTION_MEMORY_AVAILABLE_MIB * 1024 * 1024;
    Resources { cpu: cpu.max(0) as f64, memory: memory.max(0) as f64, pods: pods as f64 }
}

/// Karpenter's default `VM_MEMORY_OVERHEAD_PERCENT` (aws provider `pkg/operator/options`).
pub const VM_MEMORY_OVERHEAD_PERCENT: f64 = 0.075;

/// What Karpenter's scheduler counts on pods being able to use on a new node of `t`, no
/// more than the kubelet will report ([`allocatable`]). Until a node of the type has
/// registered, Karpenter *estimates* capacity memory: the type's memory (less 64 MiB on
/// arm64) less `ceil(7.5 %)` (aws provider v1.14.1 `pkg/providers/instancetype/types.go:512-521`
/// `memory`), then subtracts the same kube-reserved and eviction threshold the kubelet
/// does; the estimate is replaced by the node's real capacity only once one registers
/// (`instancetype.go:270` reads `discoveredCapacityCache`, filled by
/// `UpdateInstanceTypeCapacityFromNode`, `instancetype.go:475-497`). The estimate is below
/// the simulated kubelet's capacity for all but the tiniest types (see
/// [`node_shape`]'s docs): the minimum of both is what the scheduler surely counts on.
pub fn planned_allocatable(t: &InstanceTypeInfo) -> Resources {
    let actual = allocatable(t);
    let mut size_mib = t.memory_mib as f64;
    if t.arch == "arm64" {
        size_mib -= 64.0;
    }
    let estimate_mib = size_mib - (size_mib * VM_MEMORY_OVERHEAD_PERCENT).ceil();
    let memory = (estimate_mib as i64) * 1024 * 1024
        - node_shape::kube_reserved_memory(actual.pods as i64)
        - node_shape::EVICTION_MEMORY_AVAILABLE_MIB * 1024 * 1024;
    Resources { memory: actual.memory.min(memory.max(0) as f64), ..actual }
}

/// Capacity of an instance type as NodePool limits count it (vCPU in millicores, memory
/// after the VM overhead, pods).
pub fn capacity(t: &InstanceTypeInfo) -> Resources {
    let a = allocatable(t);
    let facts = InstanceFacts {
        instance_type: t.name.clone(),
        vcpu: t.vcpu,
        memory_mib: t.memory_mib,
        max_enis: t.max_enis,
        ipv4_per_eni: t.ipv4_per_eni,
        gpu: None,
        local_nvme_gib: 0,
        arch: Arch::Amd64,
        memory_overhead_mib: None,
    };
    Resources { cpu: f64::from(t.vcpu) * 1000.0, memory: node_shape::capacity_memory(&facts) as f64, pods: a.pods }
}

/// One node-selector requirement (`key`, `operator`, `values`).
#[derive(Clone, Debug, PartialEq)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// In, NotIn, Exists, DoesNotExist, Gt, Lt.
    pub operator: String,
    /// Values.
    pub values: Vec<String>,
}

impl Requirement {
    /// Parses a `{key, operator, values}` object.
    pub fn from_json(v: &Value) -> Option<Self> {
        Some(Requirement {
            key: v["key"].as_str()?.to_string(),
            operator: v["operator"].as_str()?.to_string(),
            values: v["values"].as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect(),
        })
    }

    /// Whether `labels` satisfy it.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_value(labels.get(&self.key).map(String::as_str))
    }

    /// Whether this NodePool requirement allows an offering with `labels`: judged on the
    /// label when the offering has it, or when the label is one of
    /// [`super::offering_labels::ABSENT_UNLESS_KNOWN`] (absent means `DoesNotExist` there);
    /// a requirement on any other key only labels the node.
    pub fn allows_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        match labels.get(&self.key) {
            Some(value) => self.matches_value(Some(value)),
            None if super::offering_labels::ABSENT_UNLESS_KNOWN.contains(&self.key.as_str()) => {
                self.matches_value(None)
            }
            None => true,
        }
    }

    /// Whether a node whose label `key` is `value` (`None`: absent) satisfies it.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let number = |s: &str| s.parse::<i64>().ok();
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator.as_str() {
            "In" => value.is_some_and(listed),
            "NotIn" => value.is_none_or(|v| !listed(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" => value.and_then(number).zip(self.values.first().and_then(|x| number(x))).is_some_and(|(a, b)| a > b),
            "Lt" => value.and_then(number).zip(self.values.first().and_then(|x| number(x))).is_some_and(|(a, b)| a < b),
            _ => false,
        }
    }
}

/// A pod's required node constraints, parsed once: its `nodeSelector` and the required
/// node-affinity terms. Checking one pod against many offerings (the moves oracle's
/// replacement search) reads them from the pod's JSON once instead of per offering.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSelection {
    /// `nodeSelector`: each key must carry exactly this value (`None`: the selector's value
    /// is not a string, which no label equals, so the key must be absent).
    selector: Vec<(String, Option<String>)>,
    /// Required node-affinity terms: some term's requirements must all hold (none: no
    /// constraint). Malformed requirements are skipped, as the scheduler model skips them.
    terms: Vec<Vec<Requirement>>,
}

impl NodeSelection {
    /// The constraints of `pod`.
    pub fn of(pod: &Value) -> Self {
        let spec = &pod["spec"];
        let selector = spec["nodeSelector"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().map(String::from))).collect())
            .unwrap_or_default();
        let terms = spec
            .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
            .and_then(Value::as_array)
            .map(|terms| {
                terms
                    .iter()
                    .map(|term| {
                        term["matchExpressions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Requirement::from_json)
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self { selector, terms }
    }

    /// Whether a node whose labels `label` looks up satisfies them.
    pub fn allows<'l>(&self, label: impl Fn(&str) -> Option<&'l str>) -> bool {
        self.selector.iter().all(|(k, v)| label(k) == v.as_deref())
            && (self.terms.is_empty() || self.terms.iter().any(|t| t.iter().all(|r| r.matches_value(label(&r.key)))))
    }
}

/// A NodePool's requirements (template requirements), as parsed requirements.
pub fn pool_requirements(pool: &Value) -> Vec<Requirement> {
    pool.pointer("/spec/template/spec/requirements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Requirement::from_json)
        .collect()
}

/// Every offering the cloud could launch now for `pool`: its requirements on well-known
/// labels hold (requirements on other keys only label nodes), the type is offered in the
/// zone with a price, the zone is not in an outage and the capacity pool is not empty.
pub fn allowed_offerings(cloud: &FakeCloud, overlays: &NodeOverlays, pool: &Value, now: Duration) -> Vec<Offering> {
    priced_offerings(cloud, overlays, pool, now)
        .into_iter()
        .filter(|(_, available)| *available)
        .map(|(o, _)| o)
        .collect()
}

/// Every offering `pool`'s requirements allow that the cloud prices now, each with whether
/// it could launch now (zone up, capacity pool not empty). The moves oracle needs the
/// unavailable ones too: Karpenter's own availability view (its ICE cache) can lag the
/// cloud's, so a launch price it may still count must not be left out; priced through the
/// NodeOverlays when their gate is on ([`NodeOverlays::reprice`]).
pub fn priced_offerings(cloud: &FakeCloud, ov: &NodeOverlays, pool: &Value, now: Duration) -> Vec<(Offering, bool)> {
    let mut priced = price_listed(cloud, &listed_offerings(cloud, &pool_requirements(pool)), now);
    ov.reprice(pool, priced.iter_mut().map(|(o, _)| (&*o.instance_type, &*o.zone, o.capacity_type, &mut o.price)));
    priced
}

/// An offering a pool's requirements allow, as the catalog lists it: what does not change
/// during a run (a world's catalog is fixed when it is built). [`price_listed`] adds the
/// price and availability of a moment.
#[derive(Clone, Debug)]
pub struct Listed {
    instance_type: String,
    zone: String,
    capacity_type: CapacityType,
    on_demand_price: Option<f64>,
    allocatable: Resources,
    planned: Resources,
    labels: super::offering_labels::Labels,
}

/// Every (instance type, zone, capacity type) of `cloud`'s catalog that `requirements` allow
/// (requirements on keys an offering does not label only label nodes, except the AWS labels a
/// type has only with the fact: absent there is `DoesNotExist`,
/// [`Requirement::allows_labels`]), in catalog order.
pub fn listed_offerings(cloud: &FakeCloud, requirements: &[Requirement]) -> Vec<Listed> {
    let mut out = Vec::new();
    for t in cloud.catalog().types() {
        let alloc = allocatable(t);
        let planned = planned_allocatable(t);
        for zone in cloud.catalog().zones() {
            if !cloud.catalog().is_offered(&t.name, &zone.name) {
                continue;
            }
            for ct in [CapacityType::OnDemand, CapacityType::Spot] {
                if !t.supports(ct.as_str()) {
                    continue;
                }
                let labels = super::offering_labels::shared_labels(t, &zone.name, &zone.id, ct);
                if !requirements.iter().all(|r| r.allows_labels(&labels)) {
                    continue;
                }
                out.push(Listed {
                    instance_type: t.name.clone(),
                    zone: zone.name.clone(),
                    capacity_type: ct,
                    on_demand_price: t.on_demand_price,
                    allocatable: alloc,
                    planned,
                    labels,
                });
            }
        }
    }
    out
}

/// Whether some offering of [`listed_offerings`]`(cloud, requirements)` in `zone` has a
/// price now, as [`price_listed`] keeps it (on-demand from the catalog, spot from the market
/// now, above zero): the zones of [`priced_offerings`] without listing every offering. The
/// zone universe asks it per zone not yet known, and stops at the first offering priced
/// (issue 21: listing every pool's offerings per tick only to keep their zones was 7.6% of
/// the r-tenth cut).
pub fn zone_priced(cloud: &FakeCloud, requirements: &[Requirement], zone: &str, now: Duration) -> bool {
    let catalog = cloud.catalog();
    let Some(z) = catalog.zones().iter().find(|z| z.name == zone) else { return false };
    catalog.types().any(|t| {
        catalog.is_offered(&t.name, zone)
            && [CapacityType::OnDemand, CapacityType::Spot].into_iter().any(|ct| {
                if !t.supports(ct.as_str()) {
                    return false;
                }
                let labels = super::offering_labels::shared_labels(t, zone, &z.id, ct);
                if !requirements.iter().all(|r| r.allows_labels(&labels)) {
                    return false;
                }
                let price = match ct {
                    CapacityType::OnDemand => t.on_demand_price,
                    CapacityType::Spot => cloud.spot_price(&t.name, zone, now),
                };
                price.is_some_and(|p| p > 0.0)
            })
    })
}

/// `listed` at `now`: each offering the cloud prices (on-demand from the catalog, spot from
/// the market now), with whether it could launch now (zone up, capacity pool not empty).
pub fn price_listed(cloud: &FakeCloud, listed: &[Listed], now: Duration) -> Vec<(Offering, bool)> {
    listed
        .iter()
        .filter_map(|l| {
            let price = match l.capacity_type {
                CapacityType::OnDemand => l.on_demand_price,
                CapacityType::Spot => cloud.spot_price(&l.instance_type, &l.zone, now),
            };
            let price = price.filter(|p| *p > 0.0)?;
            let available = !cloud.zone_in_outage(&l.zone)
                && cloud.peek_pool_free(&PoolKey::new(&l.instance_type, &l.zone, l.capacity_type)) != 0;
            let offering = Offering {
                instance_type: l.instance_type.clone(),
                zone: l.zone.clone(),
                capacity_type: l.capacity_type,
                price,
                allocatable: l.allocatable,
                planned: l.planned,
                labels: l.labels.clone(),
            };
            Some((offering, available))
        })
        .collect()
}

/// Sum of the requests of DaemonSets that run on every node (no node selector or
/// affinity): the overhead every new node carries.
pub fn daemonset_overhead<'a>(daemonsets: impl IntoIterator<Item = &'a Value>) -> Resources {
    let mut total = Resources::default();
    for ds in daemonsets {
        let spec = &ds["spec"]["template"]["spec"];
        let selective = spec.get("nodeSelector").is_some_and(|v| v.as_object().is_some_and(|m| !m.is_empty()))
            || spec.get("affinity").is_some_and(|v| !v.is_null());
        if !selective {
            total.add(&Resources::of_pod_spec(spec));
        }
    }
    total
}

/// A pod's required node constraints against an offering's labels (plus the labels the
/// pool puts on its nodes): nodeSelector and required node-affinity terms.
pub fn pod_allows(pod: &Value, labels: &BTreeMap<String, String>) -> bool {
    NodeSelection::of(pod).allows(|k| labels.get(k).map(String::as_str))
}

/// Whether a pod tolerates every NoSchedule/NoExecute taint of a pool's template.
pub fn tolerates_pool(pod: &Value, pool: &Value) -> bool {
    tolerates_taints(pod, pool_taints(pool))
}

/// A pool template's taints.
pub fn pool_taints(pool: &Value) -> &[Value] {
    pool["spec"]["template"]["spec"]["taints"].as_array().map_or(&[], Vec::as_slice)
}

/// Whether a pod tolerates every NoSchedule/NoExecute taint in `taints` (a PreferNoSchedule
/// taint never keeps a pod off a node).
pub fn tolerates_taints(pod: &Value, taints: &[Value]) -> bool {
    let tolerations: Vec<&Value> = pod["spec"]["tolerations"].as_array().into_iter().flatten().collect();
    taints.iter().filter(|taint| taint["effect"] != "PreferNoSchedule").all(|taint| {
        tolerations.iter().any(|t| {
            let key_ok = t["key"].as_str().is_none_or(|k| k.is_empty() || Some(k) == taint["key"].as_str());
            let value_ok = t["operator"] == "Exists"
                || t["value"] == taint["value"]
                || (t["value"].is_null() && taint["value"].is_null());
            let effect_ok = t["effect"].as_str().is_none_or(|e| e.is_empty() || Some(e) == taint["effect"].as_str());
            key_ok && value_ok && effect_ok
        })
    })
}

/// The labels a pool puts on its nodes besides the offering's: template labels and
/// single-valued `In` requirements.
pub fn pool_node_labels(pool: &Value) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = pool
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
        .unwrap_or_default();
    for r in pool_requirements(pool) {
        if r.operator == "In" && r.values.len() == 1 {
            labels.entry(r.key.clone()).or_insert_with(|| r.values[0].clone());
        }
    }
    if let Some(name) = pool["metadata"]["name"].as_str() {
        labels.insert("karpenter.sh/nodepool".into(), name.into());
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::super::offering_labels::offering_labels;
    use super::*;
    use dovetail_fakecloud::CapacityType;
    use serde_json::json;

    fn allows(r: &Requirement, labels: &BTreeMap<String, String>) -> bool {
        r.allows_labels(labels)
    }

    fn req(key: &str, operator: &str, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| (*v).to_string()).collect(),
        }
    }

    fn labels_of(name: &str) -> BTreeMap<String, String> {
        let catalog = dovetail_fakecloud::Catalog::load("us-east-1").expect("the shipped catalog");
        offering_labels(catalog.get(name).expect(name), "us-east-1a", "use1-az1", CapacityType::OnDemand)
    }

    /// `instance-local-nvme` (the imported instance-store example's requirement): m5.large
    /// has no local NVMe, so `Exists`/`Gt` exclude it and `DoesNotExist` keeps it; m5d.large
    /// (75 GB) is kept by `Exists` and `Gt 50` and excluded by `Gt 100`.
    #[test]
    fn a_type_lacking_an_aws_label_fails_a_requirement_on_it() {
        let nvme = "karpenter.k8s.aws/instance-local-nvme";
        let (m5, m5d) = (labels_of("m5.large"), labels_of("m5d.large"));
        assert!(!m5.contains_key(nvme));
        assert!(!allows(&req(nvme, "Exists", &[]), &m5));
        assert!(!allows(&req(nvme, "Gt", &["50"]), &m5));
        assert!(allows(&req(nvme, "DoesNotExist", &[]), &m5));
        assert!(allows(&req(nvme, "NotIn", &["75"]), &m5));
        assert_eq!(m5d[nvme], "75");
        assert!(allows(&req(nvme, "Exists", &[]), &m5d));
        assert!(allows(&req(nvme, "Gt", &["50"]), &m5d));
        assert!(!allows(&req(nvme, "Gt", &["100"]), &m5d));
        // A key the oracle does not model stays unjudged (it only labels the node).
        assert!(allows(&req("example.com/team", "In", &["a"]), &m5));
    }

    /// GPU labels exist only on GPU types (upstream: `DoesNotExist` otherwise, not "0"), with
    /// upstream's lower-kebab names and the memory per GPU; Neuron accelerators get none.
    #[test]
    fn gpu_labels_only_on_gpu_types_and_no_accelerator_labels_for_neuron() {
        let count = "karpenter.k8s.aws/instance-gpu-count";
        let (m5, g4dn, inf1) = (labels_of("m5.large"), labels_of("g4dn.xlarge"), labels_of("inf1.xlarge"));
        assert!(!allows(&req(count, "Exists", &[]), &m5));
        assert!(allows(&req(count, "DoesNotExist", &[]), &m5));
        assert_eq!(g4dn[count], "1");
        assert_eq!(g4dn["karpenter.k8s.aws/instance-gpu-name"], "t4");
        assert_eq!(g4dn["karpenter.k8s.aws/instance-gpu-manufacturer"], "nvidia");
        assert_eq!(g4dn["karpenter.k8s.aws/instance-gpu-memory"], "16384");
        assert!(allows(&req(count, "Gt", &["0"]), &g4dn));
        assert!(!allows(&req("karpenter.k8s.aws/instance-accelerator-count", "Exists", &[]), &inf1));
        assert_eq!(m5["karpenter.k8s.aws/instance-network-bandwidth"], "750");
        assert_eq!(m5["karpenter.k8s.aws/instance-ebs-bandwidth"], "4750");
    }

    #[test]
    fn pod_requests_take_the_larger_of_containers_and_init_containers() {
        let spec = json!({
            "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
                           {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "100Mi"}}}],
            "overhead": {"cpu": "10m"}
        });
        let r = Resources::of_pod_spec(&spec);
        assert_eq!(r.cpu, 2010.0);
        assert_eq!(r.memory, 1536.0 * 1024.0 * 1024.0);
        assert_eq!(r.pods, 1.0);
    }

    #[test]
    fn requirements_follow_node_selector_semantics() {
        let labels: BTreeMap<String, String> =
            [("karpenter.k8s.aws/instance-generation".to_string(), "5".to_string())].into();
        let r = |op: &str, v: &[&str]| Requirement {
            key: "karpenter.k8s.aws/instance-generation".into(),
            operator: op.into(),
            values: v.iter().map(|s| s.to_string()).collect(),
        };
        assert!(r("Gt", &["2"]).matches(&labels));
        assert!(!r("Lt", &["5"]).matches(&labels));
        assert!(r("In", &["4", "5"]).matches(&labels));
        assert!(!r("NotIn", &["5"]).matches(&labels));
        assert!(r("Exists", &[]).matches(&labels));
        assert!(!r("DoesNotExist", &[]).matches(&labels));
    }
}

#[cfg(test)]
mod planned_tests {
    use super::*;

    #[test]
    fn karpenter_plans_an_m5a_xlarge_below_what_its_kubelet_reports() {
        let catalog = dovetail_fakecloud::Catalog::load("us-east-1").expect("the shipped catalog");
        let t = catalog.get("m5a.xlarge").expect("m5a.xlarge");
        let mib = |r: Resources| (r.memory / 1_048_576.0).round() as i64;
        // 16384 MiB - ceil(7.5 %) = 15155; less 11 × 58 + 255 kube-reserved and 100 eviction.
        assert_eq!(mib(planned_allocatable(t)), 15_155 - 893 - 100);
        let seven_pods_of_2_gib = 7 * 2_048;
        assert!(mib(planned_allocatable(t)) < seven_pods_of_2_gib, "story-458153806: no fit as planned");
        assert!(mib(allocatable(t)) > seven_pods_of_2_gib, "... but a fit on the node the kubelet reports");
        assert_eq!(planned_allocatable(t).cpu, allocatable(t).cpu);
    }
}
