//! The generated cluster: EC2NodeClasses and NodePools, as users write them.
//!
//! One to three NodePools with distinct weights, instance categories and capacity types,
//! `WhenEmpty` or `WhenEmptyOrUnderutilized` consolidation after a drawn `consolidateAfter`,
//! an `expireAfter` (sometimes inside the story), disruption budgets (some on a cron
//! schedule, some for listed reasons) and a `terminationGracePeriod`, over one or two
//! EC2NodeClasses. Every manifest satisfies Karpenter's CRD schemas (the patterns in
//! `karpenter.sh_nodepools.yaml`: budget `duration` in whole hours/minutes, `nodes` a count
//! or percentage, `reasons` from Underutilized/Empty/Drifted, `schedule` with `duration`).
//!
//! Limits are drawn generously above what the workloads can ask for (`cpu_demand`), so a
//! limit shapes which pool a pod lands in but never strands it: the stranded-pods oracle
//! judges pods an allowed offering could host and does not model exhausted limits.

use serde_json::{Value, json};

use super::draw::Dice;

/// The NodePools' and EC2NodeClasses' manifests.
pub struct Cluster {
    /// EC2NodeClasses first, then NodePools.
    pub manifests: Vec<Value>,
    /// The longest `terminationGracePeriod` of any pool, in seconds.
    pub longest_grace_seconds: u64,
}

const CATEGORIES: &[&[&str]] = &[&["c", "m", "r"], &["c", "m"], &["m", "r"], &["m"], &["c"]];
const CAPACITY: &[&[&str]] = &[&["spot", "on-demand"], &["on-demand"], &["spot"]];
const CONSOLIDATE_AFTER: &[&str] = &["0s", "30s", "1m", "2m", "Never"];
const EXPIRE_AFTER: &[&str] = &["720h", "Never", "6m", "9m"];
/// Cron schedules for budgets (the simulated clock starts at a fixed date; some are active
/// at the start, some never within a story).
const SCHEDULES: &[&str] = &["@daily", "@hourly", "0 9 * * mon-fri", "*/10 * * * *"];
const REASONS: &[&[&str]] = &[&["Underutilized"], &["Empty"], &["Drifted"], &["Underutilized", "Empty"]];

/// The names of a story's NodePools: one to three.
pub fn pool_names(dice: &mut Dice) -> Vec<String> {
    (0..dice.int(1, 3)).map(|i| format!("pool-{i}")).collect()
}

/// Draws the NodePools named `pools` and their NodeClasses, for workloads that request at
/// most `cpu_demand` millicores at once.
pub fn draw(dice: &mut Dice, pools: &[String], cpu_demand: u64) -> Cluster {
    let classes = if dice.chance(0.3) { vec!["default", "tagged"] } else { vec!["default"] };
    let mut manifests: Vec<Value> = classes.iter().map(|name| node_class(name)).collect();
    let mut longest_grace_seconds = 0;
    for (i, name) in pools.iter().enumerate() {
        let class = *dice.pick(&classes.iter().collect::<Vec<_>>());
        let grace = 60 * u64::from(dice.int(1, 4));
        longest_grace_seconds = longest_grace_seconds.max(grace);
        manifests.push(node_pool(dice, name, class, i as u32, grace, cpu_demand));
    }
    Cluster { manifests, longest_grace_seconds }
}

fn node_class(name: &str) -> Value {
    let mut spec = json!({
        "role": "KarpenterNodeRole-dovetail",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dovetail"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
    });
    if name != "default" {
        spec["tags"] = json!({"team": name});
    }
    json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec})
}

fn node_pool(dice: &mut Dice, name: &str, class: &str, index: u32, grace_seconds: u64, cpu_demand: u64) -> Value {
    let categories = dice.pick(CATEGORIES);
    let capacity = dice.pick(CAPACITY);
    let mut requirements = vec![
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}),
        json!({"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity}),
        json!({"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": categories}),
    ];
    if dice.chance(0.3) {
        requirements.push(json!({"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]}));
    }
    let mut template = json!({
        "requirements": requirements,
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": class},
        "expireAfter": dice.pick(EXPIRE_AFTER),
        "terminationGracePeriod": format!("{}m", grace_seconds / 60),
    });
    if dice.chance(0.3) {
        template["metadata"] = json!({"labels": {"team": name}});
    }
    let policy = if dice.chance(0.5) { "WhenEmptyOrUnderutilized" } else { "WhenEmpty" };
    let mut disruption = json!({"consolidationPolicy": policy, "consolidateAfter": dice.pick(CONSOLIDATE_AFTER)});
    let budgets: Vec<Value> = (0..dice.int(0, 2)).map(|_| budget(dice)).collect();
    if !budgets.is_empty() {
        disruption["budgets"] = Value::Array(budgets);
    }
    // At least twice the most the workloads can request, in whole cores.
    let limit = (cpu_demand * u64::from(dice.int(2, 4))).div_ceil(1000).max(8);
    let mut spec = json!({
        "template": {"spec": template},
        "disruption": disruption,
        "limits": {"cpu": limit.to_string()},
    });
    if index > 0 || dice.chance(0.5) {
        spec["weight"] = json!(dice.int(1, 100));
    }
    json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec})
}

fn budget(dice: &mut Dice) -> Value {
    let nodes =
        if dice.chance(0.5) { format!("{}%", dice.pick(&[&10, &20, &50, &100])) } else { dice.int(0, 3).to_string() };
    let mut b = json!({"nodes": nodes});
    if dice.chance(0.4) {
        b["schedule"] = json!(dice.pick(SCHEDULES));
        b["duration"] = json!(dice.pick(&["30m", "1h", "8h", "1h30m"]));
    }
    if dice.chance(0.5) {
        b["reasons"] = json!(dice.pick(REASONS));
    }
    b
}
