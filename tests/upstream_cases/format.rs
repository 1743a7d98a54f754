//! The case-file format (docs/upstream-conformance.md): one YAML file holds many cases of one
//! kind, each citing the upstream test it was ported from. Files are read as plain values
//! first and every case is then deserialized on its own with `serde_path_to_error`, so a bad
//! case is reported with its file, its id and the path of the offending field.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// What a file's cases exercise, and so which runner reads them.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// A provisioning scheduling pass (`scheduling::schedule`).
    Provision,
    /// One disruption loop (`disruption::controller::decide`).
    Disrupt,
    /// A NodePool budget's allowed disruptions (`disruption::budgets::pool_budget`).
    Budget,
    /// Core drift rules of a NodeClaim against its NodePool (`disruption::drift::rules`).
    Drift,
    /// Forceful expiration of a NodeClaim (`disruption::expiration::is_expired`).
    Expiration,
    /// The Consolidatable condition (`disruption::consolidatable::consolidatable`).
    Consolidatable,
}

/// The header of a case file; `cases` stay raw until [`parse_case`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaseFile {
    /// Row of the conformance table.
    pub suite: String,
    /// Runner.
    pub kind: Kind,
    /// Default upstream file (`repo path`) the cases come from.
    pub source: String,
    /// Default instance types of every case.
    #[serde(default)]
    pub instance_types: Option<Catalog>,
    /// Default NodePools of every case.
    #[serde(default)]
    pub node_pools: Option<Vec<PoolSpec>>,
    /// The cases, parsed one by one.
    pub cases: Vec<serde_json::Value>,
    /// Cases known to deviate, with the deviation named.
    #[serde(default)]
    pub expected_failures: Vec<ExpectedFailure>,
}

/// A case known to fail, and why (a deviation of issue 20 or another named difference).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFailure {
    /// Case id.
    pub id: String,
    /// The deviation.
    pub reason: String,
}

/// An instance-type catalog: explicit types and/or core's `fake.InstanceTypes(n)` series.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Catalog {
    /// Core `fake.NewInstanceType` shapes.
    #[serde(default)]
    pub types: Vec<InstanceTypeSpec>,
    /// `fake.InstanceTypes(n)`: `fake-it-i` with i+1 vCPU, 2(i+1) GiB, 10(i+1) pods.
    #[serde(default)]
    pub fake_series: usize,
    /// Core's default fake cloud catalog (`default-instance-type`, `small-instance-type`, ...).
    #[serde(default)]
    pub upstream_default: bool,
    /// Core `fake.InstanceTypesAssorted()`: every CPU × memory × zone × capacity type × OS ×
    /// arch combination, one offering each, named `{cpu}-cpu-{mem}-mem-{arch}-{os}-{zone}-{ct}`.
    #[serde(default)]
    pub assorted: bool,
}

/// One instance type, with core `fake.NewInstanceType`'s defaults (4 CPU, 4Gi, 5 pods, spot in
/// zones 1–2 and on-demand in zones 1–3, price 0.1/CPU + 0.1/GB).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InstanceTypeSpec {
    /// Name.
    pub name: String,
    /// CPU quantity.
    #[serde(default)]
    pub cpu: Option<String>,
    /// Memory quantity.
    #[serde(default)]
    pub memory: Option<String>,
    /// Max pods.
    #[serde(default)]
    pub pods: Option<i64>,
    /// Extended resources (`fake.com/vendor-a: 2`).
    #[serde(default)]
    pub resources: BTreeMap<String, i64>,
    /// `kubernetes.io/arch`.
    #[serde(default)]
    pub arch: Option<String>,
    /// `kubernetes.io/os` values.
    #[serde(default)]
    pub os: Option<Vec<String>>,
    /// Further single-valued labels (well-known ones only are usable by pods).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Offerings; default core's five.
    #[serde(default)]
    pub offerings: Option<Vec<OfferingSpec>>,
}

/// One offering.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OfferingSpec {
    /// Zone.
    pub zone: String,
    /// `spot`, `on-demand` or `reserved`.
    pub capacity_type: String,
    /// Hourly price; default the type's resource price.
    #[serde(default)]
    pub price: Option<f64>,
    /// Whether it can be launched.
    #[serde(default = "yes")]
    pub available: bool,
}

fn yes() -> bool {
    true
}

/// A NodePool: `spec` is merged over a minimal valid template.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoolSpec {
    /// Name.
    pub name: String,
    /// `spec` fields (template, disruption, limits, weight).
    #[serde(default)]
    pub spec: serde_json::Value,
    /// Only these instance types of the catalog (default all).
    #[serde(default)]
    pub instance_types: Option<Vec<String>>,
}

/// A pod, or `count` identical pods named `name-0..`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodSpec {
    /// Name (the group name when `count` is set).
    pub name: String,
    /// Replicas.
    #[serde(default)]
    pub count: Option<usize>,
    /// CPU request.
    #[serde(default)]
    pub cpu: Option<String>,
    /// Memory request.
    #[serde(default)]
    pub memory: Option<String>,
    /// Further requests.
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    /// Limits (no requests given: requests default to limits).
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
    /// Labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// `nodeSelector`.
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// `requiredDuringScheduling` node affinity: one term of these matchExpressions.
    #[serde(default)]
    pub node_requirements: Vec<serde_json::Value>,
    /// Preferred node affinity: one weight-1 term of these matchExpressions (core `NodePreferences`).
    #[serde(default)]
    pub node_preferences: Vec<serde_json::Value>,
    /// Host ports of its container.
    #[serde(default)]
    pub host_ports: Vec<i32>,
    /// Bound to this node (else pending and unschedulable).
    #[serde(default)]
    pub node: Option<String>,
    /// One pod `name-i` bound to each node `i` of this node group (or single node).
    #[serde(default)]
    pub on_each_node: Option<String>,
    /// Set by the runner on pods expanded from `onEachNode`: the group they belong to.
    #[serde(skip)]
    pub group: Option<String>,
    /// `Pod.spec` fields merged in (affinity, tolerations, topologySpreadConstraints, ...).
    #[serde(default)]
    pub spec: serde_json::Value,
    /// Owner kind: `ReplicaSet` (default), `StatefulSet`, `DaemonSet`, `Node` (static) or `none`.
    #[serde(default)]
    pub owner: Option<String>,
    /// Being deleted (evicted): `metadata.deletionTimestamp` set.
    #[serde(default)]
    pub terminating: bool,
    /// `status.phase` of a bound pod (default Running).
    #[serde(default)]
    pub phase: Option<String>,
}

/// A DaemonSet whose pod template adds overhead to every node it lands on.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DaemonSetSpec {
    /// Name.
    pub name: String,
    /// Its pod template (requests, selector, tolerations).
    pub pod: PodSpec,
}

/// An existing, initialized node with its NodeClaim.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSpec {
    /// Node and NodeClaim name (the group name when `count` is set).
    pub name: String,
    /// Identical nodes named `name-0..`.
    #[serde(default)]
    pub count: Option<usize>,
    /// NodePool.
    #[serde(default = "default_pool")]
    pub pool: String,
    /// Instance type of the catalog.
    pub instance_type: String,
    /// Zone.
    #[serde(default = "default_zone")]
    pub zone: String,
    /// Capacity type.
    #[serde(default = "default_capacity_type")]
    pub capacity_type: String,
    /// Further labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Node annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Node taints (k8s form).
    #[serde(default)]
    pub taints: Vec<serde_json::Value>,
    /// Node and claim allocatable overrides (core tests set `status.allocatable` directly).
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
    /// Claim `spec.startupTaints` (k8s form).
    #[serde(default)]
    pub startup_taints: Vec<serde_json::Value>,
    /// A node Karpenter does not own: no NodeClaim, no NodePool label.
    #[serde(default)]
    pub unmanaged: bool,
    /// `Initialized` (default true).
    #[serde(default = "yes")]
    pub initialized: bool,
    /// Claim being deleted.
    #[serde(default)]
    pub deleting: bool,
    /// `Drifted=True` on the claim.
    #[serde(default)]
    pub drifted: bool,
    /// `Consolidatable=True` on the claim (default true).
    #[serde(default = "yes")]
    pub consolidatable: bool,
    /// Node Ready (default true).
    #[serde(default = "yes")]
    pub ready: bool,
    /// Nominated by the provisioner just now.
    #[serde(default)]
    pub nominated: bool,
    /// Claim `spec.terminationGracePeriod`.
    #[serde(default)]
    pub termination_grace_period: Option<String>,
}

fn default_pool() -> String {
    "default".to_owned()
}

fn default_zone() -> String {
    "test-zone-1".to_owned()
}

fn default_capacity_type() -> String {
    "on-demand".to_owned()
}

/// A PodDisruptionBudget over `app` labels.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PdbSpec {
    /// Name.
    pub name: String,
    /// matchLabels.
    pub match_labels: BTreeMap<String, String>,
    /// `status.disruptionsAllowed`.
    #[serde(default)]
    pub disruptions_allowed: i32,
    /// `spec.maxUnavailable` (int or percent); default `minAvailable: 1`.
    #[serde(default)]
    pub max_unavailable: Option<serde_json::Value>,
    /// `spec.minAvailable` (int or percent).
    #[serde(default)]
    pub min_available: Option<serde_json::Value>,
}

/// Reads a YAML file into its header.
pub fn read_file(path: &Path) -> Result<CaseFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_saphyr::from_str(&text).map_err(|e| format!("{}: not YAML: {e}", path.display()))?;
    serde_path_to_error::deserialize(value)
        .map_err(|e| format!("{}: field `{}`: {}", path.display(), e.path(), e.inner()))
}

/// Deserializes one case, naming file, case id and field on error.
pub fn parse_case<T: DeserializeOwned>(
    file: &Path,
    index: usize,
    value: &serde_json::Value,
) -> Result<(String, T), String> {
    let id = value.get("id").and_then(|v| v.as_str()).map_or_else(|| format!("#{index}"), str::to_owned);
    let case = serde_path_to_error::deserialize(value.clone())
        .map_err(|e| format!("{}: case `{id}`: field `{}`: {}", file.display(), e.path(), e.inner()))?;
    Ok((id, case))
}
