//! The discovered-capacity cache (aws `pkg/providers/instancetype/instancetype.go`,
//! `discoveredCapacityCache`): the memory capacity a registered Node of an instance type
//! actually reported, per instance type and EC2NodeClass AMI set. Until a node of a type has
//! registered, the provider only *estimates* its memory (EC2's size less
//! `VM_MEMORY_OVERHEAD_PERCENT`, deliberately pessimistic); once one has, resolving the class's
//! instance types uses what the kubelet reported instead (`instancetype.go:270-272`), so a type
//! the estimate rejected for some pods may then hold them.
//!
//! What upstream keeps, and so what this keeps:
//! - the key is the instance type and the class's AMIs as a set (`discoveredCapacityCacheKey`,
//!   `instancetype.go:528-531`: `hashstructure` over `nodeClass.AMIs()` with `SlicesAsSets`),
//!   so a new AMI (a release behind an alias) starts over with the estimate;
//! - a node is recorded only when its NodeClaim's `status.imageID` is the AMI the class's
//!   *current* AMIs map its type to, the first one whose requirements the node's labels meet
//!   (`UpdateInstanceTypeCapacityFromNode`, `instancetype.go:475-487`;
//!   `amifamily.MapToInstanceTypes`, `amifamily/ami.go:228-241`);
//! - an entry is replaced only by a capacity less than or equal to it (equal refreshes its TTL):
//!   the smallest a node of the type reported wins (`instancetype.go:490-493`);
//! - entries expire 60 days after they were last written (`DiscoveredCapacityCacheTTL`,
//!   `pkg/cache/cache.go:45-47`); the cache lives in memory only, so a restart empties it and the
//!   capacity controller refills it from the registered Nodes (`capacity.rs`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;

use crate::apis::ec2nodeclass::AMI;
use crate::apis::{EC2NodeClass, NodeClaim, labels};
use crate::cloudprovider::aws::ami_requirements::ami_requirements;
use crate::runtime::SharedClock;
use crate::runtime::clock::add;
use crate::scheduling::requirements::Requirements;

/// `DiscoveredCapacityCacheTTL` (aws `pkg/cache/cache.go:47`): 60 days without a refresh.
pub const DISCOVERED_CAPACITY_TTL: Duration = Duration::from_secs(60 * 24 * 3600);

/// One cache key: the instance type and the class's AMIs as a set.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    instance_type: String,
    amis: Vec<String>,
}

impl Key {
    /// The key of `instance_type` under the AMI set `amis` (order-insensitive, as upstream's
    /// `SlicesAsSets` hash is: every slice, the AMIs and each AMI's requirements and values).
    pub fn new(instance_type: &str, amis: &[AMI]) -> Self {
        let mut canonical: Vec<String> = amis
            .iter()
            .map(|ami| {
                let mut requirements: Vec<(String, String, Vec<String>)> = ami
                    .requirements
                    .iter()
                    .map(|r| {
                        let mut values = r.values.clone().unwrap_or_default();
                        values.sort();
                        (r.key.clone(), r.operator.clone(), values)
                    })
                    .collect();
                requirements.sort();
                serde_json::to_string(&(&ami.id, &ami.name, ami.deprecated, requirements)).unwrap_or_default()
            })
            .collect();
        canonical.sort();
        Self { instance_type: instance_type.to_owned(), amis: canonical }
    }
}

/// A discovered memory capacity and when it expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    memory_bytes: i64,
    expires: jiff::Timestamp,
}

/// What recording one node did (for the log line upstream writes, `instancetype.go:494-497`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The node's image is not the one the class's current AMIs give its type: nothing kept.
    StaleImage,
    /// First capacity for the key, or less than the one kept: replaced.
    Lowered,
    /// The same capacity as the one kept: its TTL is refreshed.
    Refreshed,
    /// More than the one kept: the smaller one stays.
    Kept,
}

/// The cache (see the module docs).
pub struct DiscoveredCapacity {
    clock: SharedClock,
    entries: Mutex<BTreeMap<Key, Entry>>,
}

impl std::fmt::Debug for DiscoveredCapacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveredCapacity").field("entries", &self.entries).finish_non_exhaustive()
    }
}

impl DiscoveredCapacity {
    /// An empty cache on `clock`.
    pub fn new(clock: SharedClock) -> Self {
        Self { clock, entries: Mutex::default() }
    }

    /// The memory (bytes) a node of `instance_type` reported under the AMI set `amis`, if it has
    /// not expired (`instancetype.go:270`).
    pub fn memory(&self, instance_type: &str, amis: &[AMI]) -> Option<i64> {
        let now = self.clock.now();
        let entries = self.entries.lock().expect("discovered capacity");
        entries.get(&Key::new(instance_type, amis)).filter(|e| e.expires > now).map(|e| e.memory_bytes)
    }

    /// `UpdateInstanceTypeCapacityFromNode` (`instancetype.go:475-500`): records `node`'s
    /// `status.capacity` memory for its instance type when `claim`'s image is the class's
    /// current AMI for it. A node reporting no memory records 0, as upstream's
    /// `node.Status.Capacity.Memory()` does.
    pub fn update_from_node(&self, node: &Node, claim: &NodeClaim, class: &EC2NodeClass) -> Recorded {
        let node_labels = node.metadata.labels.clone().unwrap_or_default();
        let instance_type = node_labels.get(labels::INSTANCE_TYPE_LABEL).cloned().unwrap_or_default();
        let amis: Vec<AMI> = class.status.as_ref().and_then(|s| s.amis.clone()).unwrap_or_default();
        let image = claim.status.as_ref().and_then(|s| s.image_id.as_deref()).unwrap_or_default();
        if current_image(&node_labels, &amis) != Some(image) {
            return Recorded::StaleImage;
        }
        let actual = node
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("memory"))
            .and_then(|q| crate::scheduling::resources::parse_quantity_units(&q.0))
            .unwrap_or(0);
        let now = self.clock.now();
        let expires = add(now, DISCOVERED_CAPACITY_TTL);
        let mut entries = self.entries.lock().expect("discovered capacity");
        let key = Key::new(&instance_type, &amis);
        // An expired entry is gone (go-cache `Get` misses on it).
        let cached = entries.get(&key).filter(|e| e.expires > now).map(|e| e.memory_bytes);
        let recorded = match cached {
            None => Recorded::Lowered,
            Some(kept) if actual < kept => Recorded::Lowered,
            Some(kept) if actual == kept => Recorded::Refreshed,
            Some(_) => return Recorded::Kept,
        };
        entries.insert(key, Entry { memory_bytes: actual, expires });
        if recorded == Recorded::Lowered {
            tracing::debug!(%instance_type, memory_capacity = actual, "updating discovered capacity cache");
        }
        recorded
    }
}

/// The AMI the class's `amis` (in status order) give a node with `node_labels`: the first whose
/// requirements the labels meet, strictly, as `amifamily.MapToInstanceTypes` checks them
/// (`ami.go:231-236`: `Requirements.Compatible` with no undefined labels allowed, over
/// `scheduling.NewLabelRequirements(node.Labels)`, `instancetype.go:478-481`).
pub fn current_image<'a>(node_labels: &BTreeMap<String, String>, amis: &'a [AMI]) -> Option<&'a str> {
    let node = Requirements::from_labels(node_labels);
    amis.iter().find(|ami| node.compatible_strict(&ami_requirements(ami)).is_ok()).map(|ami| ami.id.as_str())
}

#[cfg(test)]
#[path = "discovered_capacity_tests.rs"]
mod tests;
