//! Which instance types Karpenter surely plans with their *real* memory: the oracle's model of
//! the AWS provider's discovered-capacity cache, written from upstream and sharing nothing with
//! the controller.
//!
//! Upstream (aws `pkg/providers/instancetype/instancetype.go`, `pkg/controllers/providers/
//! instancetype/capacity/controller.go`): until a node of a type registers, a new node of the
//! type is planned with an *estimated* memory (EC2's size less `ceil(7.5 %)`,
//! [`super::resources::planned_allocatable`]). When a managed Node registers, its kubelet's
//! `status.capacity` memory is recorded for its type, keyed by the type and the EC2NodeClass's
//! AMIs as a set (`discoveredCapacityCacheKey`, l. 528-531), but only when its NodeClaim's
//! `status.imageID` is the first of the class's AMIs whose requirements the node's labels meet
//! (`UpdateInstanceTypeCapacityFromNode`, l. 475-487; `amifamily/ami.go:228-241`). The
//! resolved instance types are cached for 5 minutes (`InstanceTypesZonesAndOfferingsTTL`,
//! `pkg/cache/cache.go:37`) under a key that leaves the discovered capacity out (l. 360-378),
//! and read it only when building (l. 270-272): a discovery reaches planning within those
//! 5 minutes, not at once. A restart empties the cache and refills it from the registered
//! Nodes whose image is still current (the controller's create predicate, l. 101-104).
//!
//! So the oracle counts a type as surely discovered for a NodePool's EC2NodeClass when a node
//! of the type is live now that (1) registered at least [`PICKUP`] ago, (2) runs the AMI its
//! class's AMIs gave its type at that time, and (3) registered under the AMI set the pool's
//! class has now, that set having been current for [`SETTLE`] before (so the controller's own
//! view of the class had caught up). A restart refills the cache with exactly such nodes, so
//! (1)-(3) survive one, except that its list may hold the estimate for up to 5 minutes after
//! it: the oracle cannot see process restarts and does not model that window. A node of the
//! type gone now may have left its capacity behind; the oracle does not count it (a restart
//! would forget it), so it may miss a move upstream finds, never claim one upstream cannot.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::apiserver::labels_of;
use crate::apiserver::store::Store;
use crate::oracle::resources::Requirement;
use crate::oracle::view::key;

/// From a node's registration until the resolved list surely carries its memory: upstream's
/// 5-minute list TTL, plus 30 s for the controller to see the registration.
pub const PICKUP: Duration = Duration::from_secs(5 * 60 + 30);
/// How long an AMI set must have been in the class's status before a registration counts
/// under it (the controller reads the class from its informer, which may lag the store).
pub const SETTLE: Duration = Duration::from_secs(60);

const REGISTERED_LABEL: &str = "karpenter.sh/registered";
const CLASS_LABEL: &str = "karpenter.k8s.aws/ec2nodeclass";
const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";

/// One AMI of a class's status: its ID and the requirements of the types it serves.
#[derive(Clone, Debug, PartialEq)]
pub struct Ami {
    /// `id`.
    pub id: String,
    /// `requirements`.
    pub requirements: Vec<Requirement>,
}

impl Ami {
    /// One entry of `status.amis`.
    pub fn from_json(ami: &Value) -> Self {
        Ami {
            id: ami["id"].as_str().unwrap_or_default().to_string(),
            requirements: ami["requirements"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Requirement::from_json)
                .collect(),
        }
    }
}

/// A Node as the model needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeFacts {
    /// metadata.labels.
    pub labels: BTreeMap<String, String>,
    /// `status.imageID` of the NodeClaim whose `status.nodeName` is this node.
    pub image: Option<String>,
}

/// What the model reads from the store at each look.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    /// Each EC2NodeClass's `status.amis`, in order, and the set's key.
    pub classes: BTreeMap<String, (Vec<Ami>, String)>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, NodeFacts>,
}

impl Inputs {
    /// Reads them from `store`.
    pub fn read(store: &Store) -> Self {
        let mut inputs = Inputs::default();
        for class in store.iter(&key("karpenter.k8s.aws", "ec2nodeclasses"), None) {
            let name = class["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let raw: &[Value] = class.pointer("/status/amis").and_then(Value::as_array).map_or(&[], Vec::as_slice);
            let amis = raw.iter().map(Ami::from_json).collect();
            inputs.classes.insert(name, (amis, ami_set_key(raw)));
        }
        let mut images: BTreeMap<String, String> = BTreeMap::new();
        for claim in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            if let (Some(node), Some(image)) =
                (claim["status"]["nodeName"].as_str(), claim["status"]["imageID"].as_str())
            {
                images.insert(node.to_string(), image.to_string());
            }
        }
        for node in store.iter(&key("", "nodes"), None) {
            let name = node["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let image = images.get(&name).cloned();
            inputs.nodes.insert(name, NodeFacts { labels: labels_of(node), image });
        }
        inputs
    }
}

/// The AMIs of a class's status as a set: upstream hashes them with `SlicesAsSets`, so neither
/// their order nor the order of their requirements or values matters.
pub fn ami_set_key(amis: &[Value]) -> String {
    let mut canonical: Vec<String> = amis
        .iter()
        .map(|a| {
            let mut requirements: Vec<String> = a["requirements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let mut values: Vec<&str> =
                        r["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                    values.sort_unstable();
                    format!("{}|{}|{}", r["key"], r["operator"], values.join(","))
                })
                .collect();
            requirements.sort();
            format!("{}|{}|{}|{}", a["id"], a["name"], a["deprecated"], requirements.join(";"))
        })
        .collect();
    canonical.sort();
    canonical.join("\n")
}

/// The AMI a class's `amis` give a node with `labels`: the first whose requirements the labels
/// meet, a requirement on a label the node lacks holding only for `NotIn` and `DoesNotExist`
/// (core `Requirements.Compatible` with nothing allowed undefined).
pub fn current_image<'a>(labels: &BTreeMap<String, String>, amis: &'a [Ami]) -> Option<&'a str> {
    amis.iter()
        .find(|ami| ami.requirements.iter().all(|r| r.matches_value(labels.get(&r.key).map(String::as_str))))
        .map(|ami| ami.id.as_str())
}

/// A registration as the model recorded it.
#[derive(Clone, Debug, PartialEq)]
struct Registration {
    /// When the node was first seen registered.
    at: Duration,
    /// The instance type.
    instance_type: String,
    /// The AMI-set key it was recorded under: `None` when its image was not current then, or
    /// the set had not settled.
    ami_set: Option<String>,
}

/// The model, observed once per look (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct DiscoveredCapacity {
    /// Each class's AMI-set key and since when the model has seen it.
    sets: BTreeMap<String, (String, Duration)>,
    /// Live registered nodes, by name.
    registered: BTreeMap<String, Registration>,
}

impl DiscoveredCapacity {
    /// Records what changed at `now`.
    pub fn observe(&mut self, now: Duration, inputs: &Inputs) {
        for (class, (_, set)) in &inputs.classes {
            if self.sets.get(class).is_none_or(|(seen, _)| seen != set) {
                self.sets.insert(class.clone(), (set.clone(), now));
            }
        }
        self.registered.retain(|name, _| inputs.nodes.contains_key(name));
        for (name, node) in &inputs.nodes {
            if self.registered.contains_key(name) || node.labels.get(REGISTERED_LABEL).is_none_or(|v| v != "true") {
                continue;
            }
            let (Some(class), Some(instance_type)) =
                (node.labels.get(CLASS_LABEL), node.labels.get(INSTANCE_TYPE_LABEL))
            else {
                continue;
            };
            let ami_set = inputs.classes.get(class).and_then(|(amis, set)| {
                let settled = self.sets.get(class).is_some_and(|(_, since)| *since + SETTLE <= now);
                let current = node.image.is_some() && current_image(&node.labels, amis) == node.image.as_deref();
                (settled && current).then(|| set.clone())
            });
            self.registered
                .insert(name.clone(), Registration { at: now, instance_type: instance_type.clone(), ami_set });
        }
    }

    /// The (instance type, EC2NodeClass) pairs Karpenter surely plans with a node's reported
    /// memory at `now`, for the classes in `classes`.
    pub fn known(&self, now: Duration, classes: &BTreeSet<String>) -> BTreeSet<(String, String)> {
        let mut known = BTreeSet::new();
        for class in classes {
            let Some((set, _)) = self.sets.get(class) else { continue };
            for r in self.registered.values() {
                if r.ami_set.as_ref() == Some(set) && r.at + PICKUP <= now {
                    known.insert((r.instance_type.clone(), class.clone()));
                }
            }
        }
        known
    }
}

#[cfg(test)]
#[path = "discovered_capacity_tests.rs"]
mod tests;
