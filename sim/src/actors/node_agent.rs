//! Nodes that follow their instances: kubelet registration, readiness, the startup-taint
//! agent (a CNI-like DaemonSet), and the node lifecycle and cloud node controllers.
//!
//! When the fake cloud reports an instance running, its kubelet registers a Node after a
//! seeded boot delay, with the labels, taints and max-pods its launch asked for (read from
//! the launch template's user data, as a real kubelet takes them from its flags), and
//! reports Ready after a further delay. Startup taints named in [`NodeTiming::agent_taints`]
//! are removed by the agent after a seeded delay. The kubelet runs with
//! `--cloud-provider=external`, as on EKS, so it registers the Node with
//! `node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule` (kubelet `initialNode`,
//! `pkg/kubelet/kubelet_node_status.go`), and the cloud-controller-manager's node controller
//! removes that taint a seeded few seconds after registration, whether or not the Node is
//! Ready yet (`k8s.io/cloud-provider` `controllers/node/node_controller.go`
//! `syncNode`). When the instance stops or goes away the
//! node turns NotReady with the unreachable taints, and once the cloud says the instance
//! is terminated the Node is deleted (finalizers permitting), whether or not anyone
//! drained it. A kubelet whose IAM role has no access entry in the cluster is refused by
//! EKS and retries until it has one (`dovetail_fakecloud::NodeAuth`): its instance runs and
//! bills, but no Node appears.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::Engine as _;
use dovetail_fakecloud::FakeCloud;
use dovetail_fakecloud::cloud::SharedCloud;
use k8s_openapi::api::core::v1::Taint;
use rand::Rng;
use serde_json::{Value, json};

use super::node_shape::{self, Arch, GpuVendor, InstanceFacts, KubeletSettings, Launch, StorageSettings};
use super::runtime::Reconciler;
use crate::apiserver::store::{DeleteOptions, Part, Store, WriteOptions};
use crate::world::SimRng;
use crate::world::clock::timestamp;

/// The `Ready` reason of a kubelet a `nodeConditions` fault made sick
/// (`crate::faults::node_conditions`): the agent does not report such a node Ready again while
/// its instance runs; the fault's heal does.
pub const SICK_KUBELET_REASON: &str = "KubeletUnhealthy";

/// The taint a kubelet with `--cloud-provider=external` registers with, until the cloud
/// controller manager has initialized the Node (`k8s.io/cloud-provider/api`
/// `TaintExternalCloudProvider`).
pub const UNINITIALIZED_TAINT_KEY: &str = "node.cloudprovider.kubernetes.io/uninitialized";

/// How often the agents look for newly launched instances.
const INSTANCE_POLL: Duration = Duration::from_secs(1);

/// How often a refused kubelet retries registering (kubelet's `registerWithAPIServer`
/// backs off to at most 7 s).
const REGISTER_RETRY: Duration = Duration::from_secs(7);

/// Seeded delays of a node's life, and which startup taints the agent clears.
#[derive(Clone, Debug)]
pub struct NodeTiming {
    /// Instance running → Node registered (OS boot, nodeadm, kubelet start).
    pub register: (Duration, Duration),
    /// Registered → Ready (CNI up).
    pub ready: (Duration, Duration),
    /// Ready → the agent removes its startup taints.
    pub agent: (Duration, Duration),
    /// Registered → the cloud controller manager initializes the Node (removes
    /// [`UNINITIALIZED_TAINT_KEY`]), independently of readiness.
    pub cloud_init: (Duration, Duration),
    /// Taint keys the simulated agent removes. A scenario can leave a taint out to make it
    /// stay for ever.
    pub agent_taints: BTreeSet<String>,
    /// Kubelet heartbeats stop → NotReady (node-monitor-grace-period).
    pub unreachable_after: Duration,
}

impl Default for NodeTiming {
    fn default() -> Self {
        Self {
            register: (Duration::from_secs(20), Duration::from_secs(40)),
            ready: (Duration::from_secs(5), Duration::from_secs(15)),
            agent: (Duration::from_secs(2), Duration::from_secs(10)),
            cloud_init: (Duration::from_secs(1), Duration::from_secs(12)),
            agent_taints: ["node.cilium.io/agent-not-ready", "ebs.csi.aws.com/agent-not-ready", "example.com/startup"]
                .into_iter()
                .map(String::from)
                .collect(),
            unreachable_after: Duration::from_secs(40),
        }
    }
}

#[derive(Clone, Debug)]
struct Tracked {
    node: String,
    register_at: Duration,
    ready_at: Option<Duration>,
    agent_at: Option<Duration>,
    /// When the cloud controller manager initializes the registered Node.
    cloud_init_at: Option<Duration>,
    lost_since: Option<Duration>,
}

/// Every instance's kubelet and node agent, plus the controllers that retire nodes.
pub struct NodeAgents {
    cloud: SharedCloud,
    timing: NodeTiming,
    rng: SimRng,
    /// The cloud controller manager's delays (its own stream: the kubelets' draws stay put).
    ccm_rng: SimRng,
    tracked: BTreeMap<String, Tracked>,
    kubelet_version: String,
}

impl NodeAgents {
    /// Agents for `cloud`'s instances.
    pub fn new(cloud: SharedCloud, timing: NodeTiming, rng: SimRng, ccm_rng: SimRng) -> Self {
        Self { cloud, timing, rng, ccm_rng, tracked: BTreeMap::new(), kubelet_version: "v1.34.1-eks-dovetail".into() }
    }

    /// Whether the instance's kubelet can register now (its network reaches the endpoint
    /// and its role has an access entry; see `dovetail_fakecloud::NodeAuth`). The first refusal of each instance is traced.
    fn authenticated(&self, cloud: &mut FakeCloud, store: &Store, instance_id: &str, now: Duration) -> bool {
        let refused_before = cloud.node_auth().refusals().contains_key(instance_id);
        if cloud.authenticate_node(instance_id) {
            return true;
        }
        if !refused_before {
            let cause = cloud.node_auth().refusals().get(instance_id).map(|r| r.cause.clone()).unwrap_or_default();
            store.trace().record(dovetail_world::TraceEntry {
                at: now,
                source: "kubelet",
                verb: "register-refused".into(),
                subject: format!("{instance_id}: {cause}"),
            });
        }
        false
    }

    fn draw(&mut self, (lo, hi): (Duration, Duration)) -> Duration {
        if hi <= lo { lo } else { lo + (hi - lo).mul_f64(self.rng.random::<f64>()) }
    }
}

/// What one instance asked its kubelet for.
#[derive(Debug, Default, PartialEq)]
struct KubeletFlags {
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    max_pods: Option<u32>,
}

/// Reads `--node-labels`, `--register-with-taints` and `--max-pods` from user data (AL2023
/// nodeadm YAML, AL2 bootstrap arguments, or MIME multipart of either), base64 or not.
fn kubelet_flags(user_data: &str) -> KubeletFlags {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(user_data.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| user_data.to_string());
    let mut flags = KubeletFlags::default();
    let value_of = |flag: &str| -> Vec<String> {
        decoded
            .match_indices(flag)
            .map(|(i, _)| {
                let rest = &decoded[i + flag.len()..];
                let end = rest.find(|c: char| c.is_whitespace() || c == '\'').unwrap_or(rest.len());
                rest[..end].trim_matches('"').trim_matches('\\').trim_matches('"').to_string()
            })
            .collect()
    };
    for v in value_of("--node-labels=") {
        for kv in v.split(',').filter(|s| !s.is_empty()) {
            if let Some((k, v)) = kv.split_once('=') {
                flags.labels.insert(k.to_string(), v.to_string());
            }
        }
    }
    for v in value_of("--register-with-taints=") {
        for t in v.split(',').filter(|s| !s.is_empty()) {
            let (kv, effect) = t.rsplit_once(':').unwrap_or((t, "NoSchedule"));
            let (key, value) = kv.split_once('=').map_or((kv, None), |(k, v)| (k, Some(v.to_string())));
            flags.taints.push(Taint { key: key.into(), value, effect: effect.into(), time_added: None });
        }
    }
    flags.max_pods = value_of("--max-pods=").first().and_then(|v| v.parse().ok());
    flags
}

fn facts(cloud: &FakeCloud, instance_type: &str) -> Option<InstanceFacts> {
    let t = cloud.catalog().get(instance_type)?;
    let gpu = (t.gpu_count > 0).then(|| {
        let vendor = match t.gpu_manufacturer.as_deref() {
            Some("AMD") => GpuVendor::Amd,
            _ => GpuVendor::Nvidia,
        };
        (t.gpu_count, vendor)
    });
    Some(InstanceFacts {
        instance_type: t.name.clone(),
        vcpu: t.vcpu,
        memory_mib: t.memory_mib,
        max_enis: t.max_enis,
        ipv4_per_eni: t.ipv4_per_eni,
        gpu,
        local_nvme_gib: t.local_nvme_gb.unwrap_or(0),
        arch: if t.arch == "arm64" { Arch::Arm64 } else { Arch::Amd64 },
        memory_overhead_mib: None,
    })
}

/// The EKS node name: the instance's private DNS name.
fn node_name(private_ip: &str, region: &str) -> String {
    let suffix = if region == "us-east-1" { "ec2.internal".to_string() } else { format!("{region}.compute.internal") };
    format!("ip-{}.{suffix}", private_ip.replace('.', "-"))
}

impl Reconciler for NodeAgents {
    fn name(&self) -> &'static str {
        "node-agents"
    }

    fn watches(&self) -> Vec<(&'static str, &'static str)> {
        vec![("", "nodes")]
    }

    fn reconcile(&mut self, store: &mut Store, now: Duration) -> Option<Duration> {
        let nodes_t = store.registry().get("", "nodes").expect("built in");
        // The cloud as it is at this instant (the cloud's clock reads this host's `now`).
        let handle = self.cloud.clone();
        let mut cloud = handle.advance();
        let region = cloud.region().to_string();
        let instances: Vec<_> = cloud.instances().cloned().collect();
        let mut next: Option<Duration> = cloud.next_deadline();
        let mut soon = |d: Duration| next = Some(next.map_or(d, |n: Duration| n.min(d)));
        for inst in instances {
            use dovetail_fakecloud::InstanceState as S;
            let alive = inst.state == S::Running;
            if !self.tracked.contains_key(&inst.id) {
                if !alive {
                    continue;
                }
                let running_at = inst.running_at.unwrap_or(now);
                let delay = self.draw(self.timing.register);
                let node = node_name(&inst.private_ip, &region);
                self.tracked.insert(
                    inst.id.clone(),
                    Tracked {
                        node,
                        register_at: running_at + delay,
                        ready_at: None,
                        agent_at: None,
                        cloud_init_at: None,
                        lost_since: None,
                    },
                );
            }
            let mut t = self.tracked[&inst.id].clone();
            if alive {
                t.lost_since = None;
                if t.register_at > now {
                    soon(t.register_at);
                } else if store.get(&nodes_t, "", &t.node).is_err()
                    && t.ready_at.is_none()
                    && !self.authenticated(&mut cloud, store, &inst.id, now)
                {
                    soon(now + REGISTER_RETRY);
                } else if store.get(&nodes_t, "", &t.node).is_err() && t.ready_at.is_none() {
                    let user_data = inst
                        .launch_template_id
                        .as_ref()
                        .and_then(|id| cloud.launch_templates().find(|lt| &lt.id == id))
                        .and_then(|lt| lt.user_data.clone())
                        .unwrap_or_default();
                    let mut flags = kubelet_flags(&user_data);
                    flags.taints.push(Taint {
                        key: UNINITIALIZED_TAINT_KEY.into(),
                        value: Some("true".into()),
                        effect: "NoSchedule".into(),
                        time_added: None,
                    });
                    if let Some(f) = facts(&cloud, &inst.instance_type) {
                        let launch = Launch {
                            node_name: t.node.clone(),
                            instance_id: inst.id.clone(),
                            zone: inst.zone.clone(),
                            zone_id: inst.zone_id.clone(),
                            region: region.clone(),
                            capacity_type: inst.capacity_type.as_str().into(),
                            private_ip: Some(inst.private_ip.clone()),
                            labels: flags.labels.clone(),
                            taints: flags.taints.clone(),
                            kubelet_version: self.kubelet_version.clone(),
                        };
                        let kubelet = KubeletSettings { max_pods: flags.max_pods, ..Default::default() };
                        let node = node_shape::build_node(
                            &f,
                            &kubelet,
                            &StorageSettings::default(),
                            &launch,
                            false,
                            timestamp(store.clock().now()),
                        );
                        let obj = serde_json::to_value(&node).unwrap_or(Value::Null);
                        register(store, obj);
                    }
                    let (lo, hi) = self.timing.cloud_init;
                    let c = if hi <= lo { lo } else { lo + (hi - lo).mul_f64(self.ccm_rng.random::<f64>()) };
                    t.cloud_init_at = Some(now + c);
                    soon(now + c);
                    let d = self.draw(self.timing.ready);
                    t.ready_at = Some(now + d);
                    soon(now + d);
                } else if let Some(ready_at) = t.ready_at {
                    // Level-triggered, like the cloud node controller (it initializes any Node
                    // it sees with the taint): a write that puts the taint back is undone.
                    if let Some(at) = t.cloud_init_at {
                        if at > now {
                            soon(at);
                        } else {
                            cloud_initialize(store, &t.node);
                        }
                    }
                    if ready_at > now {
                        soon(ready_at);
                    } else {
                        if set_ready(store, &t.node, true) {
                            let d = self.draw(self.timing.agent);
                            t.agent_at = Some(now + d);
                        }
                        if let Some(agent_at) = t.agent_at {
                            if agent_at > now {
                                soon(agent_at);
                            } else {
                                remove_taints(store, &t.node, &self.timing.agent_taints);
                                t.agent_at = None;
                            }
                        }
                    }
                }
            } else {
                let since = *t.lost_since.get_or_insert(now);
                let gone = matches!(inst.state, S::Terminated);
                if gone {
                    retire(store, &t.node);
                } else if now >= since + self.timing.unreachable_after {
                    set_ready(store, &t.node, false);
                } else {
                    soon(since + self.timing.unreachable_after);
                }
            }
            self.tracked.insert(inst.id.clone(), t);
        }
        // Instances the cloud no longer lists at all are gone too.
        let listed: BTreeSet<String> = cloud.instances().map(|i| i.id.clone()).collect();
        drop(cloud);
        let vanished: Vec<String> = self.tracked.keys().filter(|id| !listed.contains(*id)).cloned().collect();
        for id in vanished {
            if let Some(t) = self.tracked.remove(&id) {
                retire(store, &t.node);
            }
        }
        // Instances appear in the cloud without any Kubernetes event (a CreateFleet), and a
        // booting VM does not wait for anyone to look: poll the cloud every second at least.
        let poll = now + INSTANCE_POLL;
        Some(next.filter(|d| *d > now).map_or(poll, |d| d.min(poll)))
    }
}

fn register(store: &mut Store, node: Value) {
    let nodes_t = store.registry().get("", "nodes").expect("built in");
    let status = node["status"].clone();
    let Ok(created) = store.create(&nodes_t, "", node, WriteOptions::default()) else { return };
    let mut with_status = (*created).clone();
    with_status["status"] = status;
    let name = created["metadata"]["name"].as_str().unwrap_or("").to_string();
    let _ = store.update(&nodes_t, "", &name, with_status, Part::Status, WriteOptions::default());
}

/// Sets the Ready condition (and the matching not-ready/unreachable taints, as the node
/// lifecycle controller does). Returns whether anything changed.
fn set_ready(store: &mut Store, name: &str, ready: bool) -> bool {
    let nodes_t = store.registry().get("", "nodes").expect("built in");
    let Ok(node) = store.get(&nodes_t, "", name) else { return false };
    let conditions = node.pointer("/status/conditions").and_then(Value::as_array);
    let is_ready = conditions.is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    let sick = conditions.is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["reason"] == SICK_KUBELET_REASON));
    if is_ready == ready || (ready && sick) {
        return false;
    }
    let now = store.clock().now_rfc3339();
    let mut new = (*node).clone();
    let (status, reason) = if ready { ("True", "KubeletReady") } else { ("Unknown", "NodeStatusUnknown") };
    if let Some(conds) = new.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
        conds.retain(|c| c["type"] != "Ready");
        conds.push(json!({"type": "Ready", "status": status, "reason": reason, "message": if ready { "kubelet is posting ready status" } else { "Kubelet stopped posting node status." },
            "lastHeartbeatTime": now, "lastTransitionTime": now}));
    }
    let _ = store.update(&nodes_t, "", name, new, Part::Status, WriteOptions::default());
    // Taints live in spec: a separate write, as the node lifecycle controller makes.
    let Ok(node) = store.get(&nodes_t, "", name) else { return true };
    let mut new = (*node).clone();
    let mut taints: Vec<Value> = new.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    taints.retain(|t| t["key"] != "node.kubernetes.io/not-ready" && t["key"] != "node.kubernetes.io/unreachable");
    if !ready {
        for effect in ["NoSchedule", "NoExecute"] {
            taints.push(json!({"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": now}));
        }
    }
    new["spec"]["taints"] = json!(taints);
    if taints.is_empty() {
        new["spec"].as_object_mut().map(|m| m.remove("taints"));
    }
    let _ = store.update(&nodes_t, "", name, new, Part::Main, WriteOptions::default());
    true
}

fn remove_taints(store: &mut Store, name: &str, keys: &BTreeSet<String>) {
    let nodes_t = store.registry().get("", "nodes").expect("built in");
    let Ok(node) = store.get(&nodes_t, "", name) else { return };
    let mut new = (*node).clone();
    let Some(taints) = new.pointer_mut("/spec/taints").and_then(Value::as_array_mut) else { return };
    taints.retain(|t| !keys.contains(t["key"].as_str().unwrap_or("")));
    let _ = store.update(&nodes_t, "", name, new, Part::Main, WriteOptions::default());
}

/// The cloud node controller initializes the Node: removes [`UNINITIALIZED_TAINT_KEY`] if
/// present (no write otherwise).
fn cloud_initialize(store: &mut Store, name: &str) {
    let nodes_t = store.registry().get("", "nodes").expect("built in");
    let Ok(node) = store.get(&nodes_t, "", name) else { return };
    let tainted = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|ts| ts.iter().any(|t| t["key"] == UNINITIALIZED_TAINT_KEY));
    if tainted {
        remove_taints(store, name, &BTreeSet::from([UNINITIALIZED_TAINT_KEY.to_string()]));
    }
}

/// The cloud node controller: the instance is gone, so is the Node.
fn retire(store: &mut Store, name: &str) {
    let nodes_t = store.registry().get("", "nodes").expect("built in");
    set_ready(store, name, false);
    let deleting = store.get(&nodes_t, "", name).map(|n| n.pointer("/metadata/deletionTimestamp").is_some());
    if deleting == Ok(false) {
        let _ = store.delete(&nodes_t, "", name, &DeleteOptions::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kubelet_flags_from_nodeadm_user_data() {
        let ud = r#"apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    flags:
    - --node-labels="karpenter.sh/nodepool=default,karpenter.sh/capacity-type=spot"
    - --register-with-taints="karpenter.sh/unregistered:NoExecute,dedicated=gpu:NoSchedule"
    - --max-pods=58
"#;
        let b64 = base64::engine::general_purpose::STANDARD.encode(ud);
        let f = kubelet_flags(&b64);
        assert_eq!(f.labels["karpenter.sh/nodepool"], "default");
        assert_eq!(f.labels["karpenter.sh/capacity-type"], "spot");
        assert_eq!(f.taints.len(), 2);
        assert_eq!(
            (f.taints[1].key.as_str(), f.taints[1].value.as_deref(), f.taints[1].effect.as_str()),
            ("dedicated", Some("gpu"), "NoSchedule")
        );
        assert_eq!(f.max_pods, Some(58));
        assert_eq!(node_name("10.0.1.23", "us-west-2"), "ip-10-0-1-23.us-west-2.compute.internal");
    }
}
