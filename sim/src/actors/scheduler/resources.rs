//! Resource vectors and a pod's effective requests, computed like kube-scheduler does.
//!
//! A pod's request is `max(sum(containers) + sidecars, max(init container + earlier
//! sidecars)) + overhead` per resource (component-helpers `resource.PodRequests`). Pod-level
//! `spec.resources.requests` (PodLevelResources, beta and on by default in 1.34) replace the
//! container sum for CPU and memory when set.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::actors::quantity;

/// kube-scheduler `DefaultMilliCPURequest`: CPU counted for a container without a CPU request
/// when scoring (never when filtering), so zero-request pods still spread.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// kube-scheduler `DefaultMemoryRequest` (200 MiB), the memory twin of the above.
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A resource vector in integer units: milli-CPU, bytes, and counts for the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in thousandths of a core.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pod slots (only meaningful for allocatable).
    pub pods: i64,
    /// Extended resources, hugepages and anything else, by resource name, in `Value()` units.
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    /// Reads a `requests`/`allocatable` map. Unparsable quantities count as zero: the API server
    /// validates quantities, so this only guards the simulator against hand-built objects.
    pub fn from_map(map: &BTreeMap<String, Quantity>) -> Self {
        let mut out = Resources::default();
        for (name, q) in map {
            out.set(name, q);
        }
        out
    }

    fn set(&mut self, name: &str, q: &Quantity) {
        match name {
            "cpu" => self.milli_cpu = quantity::milli(q).unwrap_or(0),
            "memory" => self.memory = quantity::value(q).unwrap_or(0),
            "ephemeral-storage" => self.ephemeral_storage = quantity::value(q).unwrap_or(0),
            "pods" => self.pods = quantity::value(q).unwrap_or(0),
            "storage" => {}
            other => {
                self.scalar.insert(other.to_string(), quantity::value(q).unwrap_or(0));
            }
        }
    }

    /// A node's allocatable resources (`status.allocatable`).
    pub fn allocatable_of(node: &Node) -> Self {
        node.status.as_ref().and_then(|s| s.allocatable.as_ref()).map(Self::from_map).unwrap_or_default()
    }

    /// Adds `other` into `self`, resource by resource.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.pods += other.pods;
        for (k, v) in &other.scalar {
            *self.scalar.entry(k.clone()).or_insert(0) += v;
        }
    }

    /// Subtracts `other` from `self`, dropping scalar entries that reach zero.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.pods -= other.pods;
        for (k, v) in &other.scalar {
            let entry = self.scalar.entry(k.clone()).or_insert(0);
            *entry -= v;
            if *entry == 0 {
                self.scalar.remove(k);
            }
        }
    }

    /// Per-resource maximum of `self` and `other`.
    fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for (k, v) in &other.scalar {
            let entry = self.scalar.entry(k.clone()).or_insert(0);
            *entry = (*entry).max(*v);
        }
    }

    /// True when nothing at all is requested (a BestEffort-like request).
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0 && self.memory == 0 && self.ephemeral_storage == 0 && self.scalar.values().all(|v| *v == 0)
    }
}

/// How missing container requests are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// As zero: what filtering uses.
    Zero,
    /// As 100m CPU / 200 MiB memory: what LeastAllocated/MostAllocated scoring uses.
    NonZeroDefaults,
}

fn container_requests(requirements: Option<&ResourceRequirements>, missing: Missing) -> Resources {
    let requests = requirements.and_then(|r| r.requests.as_ref());
    let mut out = requests.map(Resources::from_map).unwrap_or_default();
    if missing == Missing::NonZeroDefaults {
        let has = |name: &str| requests.is_some_and(|m| m.contains_key(name));
        if !has("cpu") {
            out.milli_cpu = DEFAULT_MILLI_CPU_REQUEST;
        }
        if !has("memory") {
            out.memory = DEFAULT_MEMORY_REQUEST;
        }
    }
    out
}

fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

fn pod_requests_with(pod: &Pod, missing: Missing) -> Resources {
    let Some(spec) = pod.spec.as_ref() else {
        return Resources::default();
    };
    let mut requests = Resources::default();
    for c in &spec.containers {
        requests.add(&container_requests(c.resources.as_ref(), missing));
    }
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for c in spec.init_containers.iter().flatten() {
        let mut r = container_requests(c.resources.as_ref(), missing);
        if is_sidecar(c) {
            requests.add(&r);
            sidecars.add(&r);
            r = sidecars.clone();
        } else {
            r.add(&sidecars);
        }
        init_max.max_with(&r);
    }
    requests.max_with(&init_max);
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        let pod_level = Resources::from_map(pod_level);
        if pod_level.milli_cpu > 0 {
            requests.milli_cpu = pod_level.milli_cpu;
        }
        if pod_level.memory > 0 {
            requests.memory = pod_level.memory;
        }
    }
    if let Some(overhead) = spec.overhead.as_ref() {
        requests.add(&Resources::from_map(overhead));
    }
    requests
}

/// The requests NodeResourcesFit filters with (missing requests count as zero).
pub fn pod_requests(pod: &Pod) -> Resources {
    pod_requests_with(pod, Missing::Zero)
}

/// The requests LeastAllocated/MostAllocated score with (`NonZeroRequested`).
pub fn pod_requests_non_zero(pod: &Pod) -> Resources {
    pod_requests_with(pod, Missing::NonZeroDefaults)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    fn container(cpu: Option<&str>, mem: Option<&str>, sidecar: bool) -> Container {
        let mut requests = BTreeMap::new();
        if let Some(c) = cpu {
            requests.insert("cpu".to_string(), Quantity(c.to_string()));
        }
        if let Some(m) = mem {
            requests.insert("memory".to_string(), Quantity(m.to_string()));
        }
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements { requests: Some(requests), ..Default::default() }),
            restart_policy: sidecar.then(|| "Always".to_string()),
            ..Default::default()
        }
    }

    fn pod(containers: Vec<Container>, init: Vec<Container>) -> Pod {
        Pod {
            spec: Some(PodSpec { containers, init_containers: Some(init), ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn requests_are_max_of_container_sum_and_largest_init_container() {
        let p = pod(
            vec![container(Some("100m"), Some("1Gi"), false), container(Some("200m"), None, false)],
            vec![container(Some("1"), Some("100Mi"), false)],
        );
        let r = pod_requests(&p);
        assert_eq!(r.milli_cpu, 1000);
        assert_eq!(r.memory, 1 << 30);
    }

    #[test]
    fn sidecars_add_to_the_sum_and_to_later_init_containers() {
        let p = pod(
            vec![container(Some("100m"), None, false)],
            vec![container(Some("50m"), None, true), container(Some("500m"), None, false)],
        );
        // containers 100 + sidecar 50 = 150; init 500 + sidecar 50 = 550.
        assert_eq!(pod_requests(&p).milli_cpu, 550);
    }

    #[test]
    fn overhead_is_added_on_top() {
        let mut p = pod(vec![container(Some("100m"), Some("10Mi"), false)], vec![]);
        p.spec.as_mut().unwrap().overhead = Some(BTreeMap::from([("cpu".to_string(), Quantity("250m".into()))]));
        assert_eq!(pod_requests(&p).milli_cpu, 350);
    }

    #[test]
    fn non_zero_requests_fill_missing_cpu_and_memory() {
        let p = pod(vec![container(None, None, false), container(Some("0"), None, false)], vec![]);
        let r = pod_requests_non_zero(&p);
        assert_eq!(r.milli_cpu, DEFAULT_MILLI_CPU_REQUEST, "explicit zero stays zero");
        assert_eq!(r.memory, 2 * DEFAULT_MEMORY_REQUEST);
        assert!(pod_requests(&p).is_zero());
    }
}
