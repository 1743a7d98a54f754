//! Scenario files: one YAML file tells one story, replayable from a seed.
//!
//! Loading is strict: unknown fields are errors, and every error names the file, line
//! and column (serde-saphyr's locations) and the field with the allowed values, so a typo
//! never silently turns a fault off. Checks the types cannot express (one fault kind per
//! entry, zones, endpoints, probabilities) name the field by path, e.g.
//! `faults[2].zoneOutage: unknown zone ...`.
//!
//! # Format
//!
//! ```yaml
//! name: spot-storm                # required; used in reports and reproduce lines
//! description: what it protects against
//! duration: 30m                   # required; Go-style durations everywhere (90s, 1h30m, 250ms)
//! region: us-east-1               # the fake cloud's region (default us-east-1)
//! zones: [us-east-1a, us-east-1b] # zones the cluster's subnets span (default: every zone of the region)
//! onDemandPrices: {c7a.large: 0.05} # on-demand USD/h the cloud bills and its Price List API reports
//! capacityReservations:           # ODCRs and capacity blocks the account holds (see reservations.rs)
//!   - {instanceType: m5.large, zone: us-east-1a, count: 3, matchCriteria: targeted, tags: {team: ml}}
//!   - {instanceType: m5.large, zone: us-east-1b, count: 2, type: capacity-block, endsAt: 40m}
//!
//! controller: none                # API server only: no actors, cloud or controller (API-level stories)
//! controller:                     # or the production controller (the default when omitted: 1 replica, defaults)
//!   replicas: 2                   # 1 or 2; two replicas elect a leader on a Lease (kube-system/karpenter-leader-election)
//!   batchIdleDuration: 1s
//!   batchMaxDuration: 10s
//!   isolatedVpc: false            # true: no Price List API calls (on-demand prices stay the built-in table)
//!   featureGates: {spotToSpotConsolidation: true, nodeRepair: false, reservedCapacity: true, nodeOverlay: false}
//!   upgrades:                     # rolling upgrade: new settings, each replica restarted 30 s apart
//!     - {at: 10m, featureGates: {spotToSpotConsolidation: false}}
//!
//! install: [../path/crds.yaml]    # manifest files applied first, relative to this file (Karpenter's CRDs
//!                                 # are installed automatically when there is a controller)
//! manifests:                      # NodePools, EC2NodeClasses (any manifest), pasted unchanged, applied at 0s
//!   - apiVersion: karpenter.sh/v1
//!     kind: NodePool
//!     ...
//!
//! workloads:                      # each entry has exactly one key naming its kind
//!   - priorityClass: {name: high, value: 1000}
//!   - deployment:
//!       name: web                 # pods are labelled app: web
//!       namespace: default        # default
//!       replicas: 10              # constant
//!       # replicas: {steps: [{at: 0s, replicas: 10}, {at: 10m, replicas: 2}]}
//!       # replicas: {diurnal: {min: 2, max: 20, period: 24h, peakAt: 14h, every: 5m}}   # peakAt may be a distribution
//!       spikes:                   # extra replicas for a while
//!         - {at: 5m, for: 2m, add: 10}                 # scheduled
//!         - {perHour: 2, for: {uniform: [1m, 3m]}, add: {uniform: [5, 10]}}   # random (Poisson)
//!       pod:
//!         cpu: {uniform: [250m, 2]}         # drawn once per seed for a Deployment/DaemonSet, per Job for Jobs
//!         memory: {choice: [512Mi, 1Gi, 2Gi]}
//!         labels: {tier: web}
//!         annotations: {}
//!         doNotDisrupt: true                # karpenter.sh/do-not-disrupt: "true"
//!         priorityClassName: high
//!         nodeSelector: {karpenter.sh/capacity-type: spot}
//!         tolerations: [...]                # as in a pod spec
//!         affinity: {...}                   # as in a pod spec
//!         topologySpreadConstraints:        # as in a pod spec; labelSelector defaults to app: <name>
//!           - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
//!         terminationGracePeriodSeconds: 30
//!         hostPort: 8080                    # one such pod per node
//!         gpu: 1                            # nvidia.com/gpu requested and limited
//!   - job:
//!       name: batch               # Job k is batch-k
//!       perHour: {uniform: [30, 120]}       # Poisson arrivals (rate drawn per seed), between `from` and `until`
//!       # at: 2m, count: 500                # or a burst: `count` Jobs at `at`
//!       runFor: {uniform: [1m, 10m]}        # each pod runs this long, then succeeds
//!       completions: 1            # per Job (distribution allowed)
//!       parallelism: 1            # per Job (default completions)
//!       pod: {cpu: 1, memory: 2Gi}
//!   - daemonSet: {name: logs, pod: {cpu: 100m, memory: 128Mi}}
//!   - pdb: {name: web, workload: web, maxUnavailable: 1}   # or matchLabels: {...}; or minAvailable: "50%"
//!
//! faults:                         # each entry has exactly one kind key, and `at` or `perHour`
//!   - at: 5m                      # scheduled
//!     for: 3m                     # how long (faults that last); omitted = until phases.faultsUntil
//!     zoneOutage: {zone: us-east-1a}          # a zone name or `random`
//!   - perHour: {uniform: [1, 4]}  # random: Poisson occurrences, rate drawn per seed...
//!     live: 0.5                   # ...and live in a seed with this probability (swarm testing; default 0.5)
//!     from: 2m                    # occurrences start here (default 0s) and stop at phases.faultsUntil
//!     for: {uniform: [30s, 2m]}
//!     apiServerErrors: {throttleRate: 0.1, errorRate: {uniform: [0, 0.1]}, conflictRate: 0.05}
//! # kinds (every number and duration may be a distribution, drawn per occurrence):
//! #   insufficientCapacity: {instanceTypes: [m5.large, "c*"], cheapest: 5, zones: [us-east-1a | random], capacityTypes: [spot, on-demand]}
//! #   spotInterruption: {zone: us-east-1a | random | all, fraction: 0.5}    # instant: warnings + 2-min notice, rebalance per the cloud
//! #   zoneOutage: {zone: us-east-1a | random}
//! #   ec2Throttling: {burst: 10, refillPerSecond: 1}
//! #   ec2Errors: {rate: 0.2}                         # 500/503
//! #   describeLag: {delay: 30s}                      # new instances invisible to DescribeInstances
//! #   sqs: {delay: 20s, duplicateRate: 0.3, reorder: true}
//! #   apiServerErrors: {throttleRate: 0.1, errorRate: 0.05, conflictRate: 0.1}
//! #   watchDelay: {delay: 2s}
//! #   watchExpiry: {}                                # instant: every watch gets 410 Gone and relists
//! #   partition: {between: [controller, apiserver]}  # endpoints: controller, leader, apiserver, aws
//! #   latency: {between: [controller, aws], latency: 200ms}
//! #   controllerCrash: {target: leader | controller} # restarts after `for`, at once without it
//! #   leaderFailover: {}                             # needs replicas: 2; the leader is down for `for` (30s)
//! #   amiRelease: {version: v20261201}               # instant: a new EKS AMI; al2023@latest NodeClasses drift
//!
//! invariants: {...}               # the invariant checker's thresholds (passed through)
//!
//! phases:                         # faults until faultsUntil (then everything heals), liveness from livenessFrom
//!   faultsUntil: 20m              # required with faults; every scheduled fault ends by then, and
//!                                 # duration - faultsUntil >= the longest enabled liveness threshold + 1m
//!                                 # (31m with the defaults; see liveness_window)
//!   livenessFrom: 25m             # default: duration; the cluster must have converged by the end
//!
//! steps:                          # low-level timed API actions (as before)
//!   - at: 30s
//!     jitter: 2m                  # seeded random delay per repetition
//!     count: 40                   # repetitions (use metadata.generateName)
//!     apply: {apiVersion: v1, kind: Pod, ...}     # or delete: {apiVersion, kind, namespace, name}; or expireWatches: true
//!     expectCode: 422             # the action must fail with this HTTP status
//! ```
//!
//! [`Loaded::expanded`] prints what a seed drew: every shape, replica change, Job, swarm
//! choice and fault occurrence with its parameters.

pub mod controller;
pub mod dist;
pub mod drawn_fault;
pub mod error;
pub mod faults;
pub mod instance_status;
pub mod invariants;
pub mod liveness_window;
pub mod node_conditions;
pub mod node_network;
pub mod plan;
pub mod render;
pub mod reservations;
pub mod selection;
pub mod workloads;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use controller::ControllerSpec;
pub use dovetail_world::duration;
pub use dovetail_world::duration::SimDuration;
pub use error::FieldError;
pub use faults::FaultSpec;
pub use plan::Plan;
pub use workloads::Workload;

/// A scenario.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Short name, used in reports and reproduce lines.
    pub name: String,
    /// What the story protects against.
    #[serde(default)]
    pub description: String,
    /// Simulated time the run lasts.
    pub duration: SimDuration,
    /// The fake cloud's region.
    #[serde(default = "default_region")]
    pub region: String,
    /// Zones the cluster's subnets span (default: every zone of the region).
    #[serde(default)]
    pub zones: Vec<String>,
    /// On-demand prices (USD/h) that differ from the catalog's, per instance type: the
    /// region's prices as AWS bills them and the Price List API reports them, while the
    /// controller's built-in table keeps the catalog's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub on_demand_prices: BTreeMap<String, f64>,
    /// Capacity reservations the cloud's account holds from instant zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capacity_reservations: Vec<reservations::Reservation>,
    /// `none`, or the controller's settings.
    #[serde(default)]
    pub controller: ControllerSpec,
    /// Manifest files applied before anything else (e.g. Karpenter's CRDs), relative to
    /// the scenario file. Multi-document YAML is fine.
    #[serde(default)]
    pub install: Vec<String>,
    /// Manifests applied at the start (NodePools, EC2NodeClasses, ...), as users write them.
    #[serde(default)]
    pub manifests: Vec<Value>,
    /// What runs on the cluster.
    #[serde(default)]
    pub workloads: Vec<Workload>,
    /// What goes wrong.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// The invariant checker's configuration (passed through to it).
    #[serde(default)]
    pub invariants: Option<invariants::InvariantConfig>,
    /// Phase boundaries.
    #[serde(default)]
    pub phases: Phases,
    /// Timed actions against the cluster.
    #[serde(default)]
    pub steps: Vec<Step>,
}

fn default_region() -> String {
    "us-east-1".into()
}

/// Faults until `faultsUntil`, then heal, then the liveness window from `livenessFrom`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Phases {
    /// End of the fault phase (default: the duration).
    #[serde(default)]
    pub faults_until: Option<SimDuration>,
    /// Start of the liveness window (default: the duration).
    #[serde(default)]
    pub liveness_from: Option<SimDuration>,
}

/// One timed action. Exactly one of `apply`, `delete` or `expireWatches` is set.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// When it happens, from the start of the run.
    pub at: SimDuration,
    /// Seeded random delay added to `at` (each repetition draws its own).
    #[serde(default)]
    pub jitter: Option<SimDuration>,
    /// How many times to do it (use `metadata.generateName` to create many objects).
    #[serde(default = "one")]
    pub count: u32,
    /// A manifest to create (or replace, if it exists).
    #[serde(default)]
    pub apply: Option<Value>,
    /// An object to delete.
    #[serde(default)]
    pub delete: Option<ObjectRef>,
    /// Fault: compact the API server's history and end every watch with 410.
    #[serde(default)]
    pub expire_watches: bool,
    /// The HTTP status the action must fail with (e.g. 422 for an invalid NodePool).
    #[serde(default)]
    pub expect_code: Option<u16>,
}

fn one() -> u32 {
    1
}

/// A reference to an object by type and name.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    /// e.g. `v1`, `apps/v1`, `karpenter.sh/v1`.
    pub api_version: String,
    /// e.g. `Pod`.
    pub kind: String,
    /// Namespace, for namespaced kinds.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// A scenario that failed to load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The YAML is malformed or does not match the scenario format.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// serde-saphyr's message (line, column, field and the allowed values).
        message: String,
    },
    /// The scenario parsed, but a field's value is wrong (checks the types cannot express).
    #[error("{path}: {error}")]
    Field {
        /// The file.
        path: PathBuf,
        /// The field, by path, and what is wrong with it.
        #[source]
        error: FieldError,
    },
    /// A field's value is wrong, at a line of the file.
    #[error("{}: {}{error}", path.display(), line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Located {
        /// The file.
        path: PathBuf,
        /// The field's line (1-based), when it can be found.
        line: Option<usize>,
        /// The field, by path, and what is wrong with it.
        #[source]
        error: FieldError,
    },
    /// The scenario leaves its liveness invariants no room to fire, or has faults without
    /// an end (see [`liveness_window`]).
    #[error("{}: {}{error}", path.display(), line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Window {
        /// The file.
        path: PathBuf,
        /// The field's line in the file, when found.
        line: Option<usize>,
        /// The field, by path, and what is wrong with it.
        #[source]
        error: FieldError,
    },
}

/// A loaded scenario with the manifests it installs.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub scenario: Scenario,
    /// Where it came from.
    pub path: PathBuf,
    /// The `install` manifests, in order (Karpenter's CRDs first when there is a controller).
    pub install: Vec<Value>,
    /// The zones the run uses.
    pub zones: Vec<String>,
}

/// Karpenter's CRDs, as the upstream manifests (what a user installs with Helm).
pub const KARPENTER_CRDS: [&str; 3] =
    ["karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml"];

/// The NodeOverlay CRD, installed with [`KARPENTER_CRDS`] when the `NodeOverlay` gate is on.
pub const NODE_OVERLAY_CRD: &str = "karpenter.sh_nodeoverlays.yaml";

impl Scenario {
    /// Whether the controller runs with the `NodeOverlay` gate on at the start or after an
    /// upgrade.
    pub fn node_overlay_possible(&self) -> bool {
        let ControllerSpec::Run(c) = &self.controller else { return false };
        c.feature_gates
            .iter()
            .chain(c.upgrades.iter().filter_map(|u| u.feature_gates.as_ref()))
            .any(|g| g.node_overlay == Some(true))
    }
}

impl Loaded {
    /// Reads and validates a scenario file and the manifests it installs.
    pub fn from_file(path: &Path) -> Result<Loaded, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io { path: path.into(), source })?;
        Self::from_str(path, &text)
    }

    /// Parses and validates scenario text; `path` names it in errors and anchors `install`.
    pub fn from_str(path: &Path, text: &str) -> Result<Loaded, LoadError> {
        let invalid = |message: String| LoadError::Invalid { path: path.into(), message };
        let scenario: Scenario = serde_saphyr::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let field = |error: FieldError| LoadError::Field { path: path.into(), error };
        let zones = scenario.resolve_zones().map_err(field)?;
        if !scenario.capacity_reservations.is_empty() {
            let catalog = dovetail_fakecloud::Catalog::load(&scenario.region)
                .map_err(|e| field(FieldError::new("region", e.to_string())))?;
            reservations::validate_all(&scenario.capacity_reservations, &catalog, &zones, scenario.duration).map_err(
                |error| LoadError::Located {
                    path: path.into(),
                    line: liveness_window::line_of(text, &error.field),
                    error,
                },
            )?;
        }
        scenario.validate(&zones).map_err(field)?;
        liveness_window::check(&scenario).map_err(|error| LoadError::Window {
            path: path.into(),
            line: liveness_window::line_of(text, &error.field),
            error,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut install = Vec::new();
        let mut files: Vec<PathBuf> = Vec::new();
        if scenario.controller != ControllerSpec::None {
            let dir = dovetail_fakecloud::data_dir()
                .map_err(|e| invalid(format!("finding Karpenter's CRDs: {e}")))?
                .join("../crds");
            files.extend(KARPENTER_CRDS.iter().map(|f| dir.join(f)));
            // The Helm chart always installs the NodeOverlay CRD; here only a run that can use
            // it does, so the other runs' stores (and reports) stay as they were.
            if scenario.node_overlay_possible() {
                files.push(dir.join(NODE_OVERLAY_CRD));
            }
        }
        files.extend(scenario.install.iter().map(|rel| base.join(rel)));
        for p in files {
            let text = std::fs::read_to_string(&p).map_err(|source| LoadError::Io { path: p.clone(), source })?;
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                .map_err(|e| LoadError::Invalid { path: p.clone(), message: e.to_string() })?;
            install.extend(docs.into_iter().filter(|d| !d.is_null()));
        }
        Ok(Loaded { scenario, path: path.into(), install, zones })
    }

    /// What `seed` draws.
    pub fn plan(&self, seed: u64) -> Plan {
        plan::draw(&self.scenario, &self.zones, seed)
    }

    /// The expanded scenario: every value `seed` drew, as YAML.
    pub fn expanded(&self, seed: u64) -> String {
        serde_saphyr::to_string(&self.plan(seed)).unwrap_or_else(|e| format!("# cannot print the plan: {e}\n"))
    }
}

impl Scenario {
    /// The zones the run uses: the listed ones (checked against the region), or every zone
    /// of the region. API-only scenarios have none. Checks `onDemandPrices` against the
    /// region's catalog on the way.
    pub fn resolve_zones(&self) -> Result<Vec<String>, FieldError> {
        if self.controller == ControllerSpec::None {
            return Ok(self.zones.clone());
        }
        let catalog =
            dovetail_fakecloud::Catalog::load(&self.region).map_err(|e| FieldError::new("region", e.to_string()))?;
        for (instance_type, price) in &self.on_demand_prices {
            let field = format!("onDemandPrices.{instance_type}");
            if catalog.get(instance_type).is_none() {
                return Err(FieldError::new(field, format!("unknown instance type in {}", self.region)));
            }
            if !(price.is_finite() && *price > 0.0) {
                return Err(FieldError::new(field, format!("price must be a positive USD/hour amount, got {price}")));
            }
        }
        let known: Vec<String> = catalog.zones().iter().map(|z| z.name.clone()).collect();
        for z in &self.zones {
            if !known.contains(z) {
                return Err(FieldError::new(
                    "zones",
                    format!("unknown zone `{z}` in {}, expected one of {}", self.region, known.join(", ")),
                ));
            }
        }
        Ok(if self.zones.is_empty() { known } else { self.zones.clone() })
    }

    /// Checks what the types cannot. Loading then checks the liveness window
    /// ([`liveness_window::check`]), which names the field's line too.
    pub fn validate(&self, zones: &[String]) -> Result<(), FieldError> {
        for (i, s) in self.steps.iter().enumerate() {
            let actions =
                usize::from(s.apply.is_some()) + usize::from(s.delete.is_some()) + usize::from(s.expire_watches);
            if actions != 1 {
                return Err(FieldError::new(
                    format!("steps[{i}]"),
                    format!("exactly one of `apply`, `delete`, `expireWatches` must be set (found {actions})"),
                ));
            }
            if s.at > self.duration {
                return Err(FieldError::new(
                    format!("steps[{i}].at"),
                    format!("{} is after the scenario's duration {}", s.at, self.duration),
                ));
            }
            if let Some(obj) = &s.apply {
                for field in ["apiVersion", "kind"] {
                    if obj.get(field).and_then(Value::as_str).is_none() {
                        return Err(FieldError::new(format!("steps[{i}].apply.{field}"), "Required value"));
                    }
                }
            }
        }
        for (i, m) in self.manifests.iter().enumerate() {
            for field in ["apiVersion", "kind"] {
                if m.get(field).and_then(Value::as_str).is_none() {
                    return Err(FieldError::new(format!("manifests[{i}].{field}"), "Required value"));
                }
            }
            if m.pointer("/metadata/name").and_then(Value::as_str).is_none() {
                return Err(FieldError::new(format!("manifests[{i}].metadata.name"), "Required value"));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, w) in self.workloads.iter().enumerate() {
            w.validate().map_err(|e| e.within(format!("workloads[{i}] ({})", w.name())))?;
            let kind = match w {
                Workload::Deployment(_) => "deployment",
                Workload::Job(_) => "job",
                Workload::DaemonSet(_) => "daemonSet",
                Workload::Pdb(_) => "pdb",
                Workload::PriorityClass(_) => "priorityClass",
            };
            if !names.insert((kind, w.name().to_string())) {
                return Err(FieldError::new(
                    format!("workloads[{i}]"),
                    format!("a second {kind} named `{}`", w.name()),
                ));
            }
        }
        let replicas = match &self.controller {
            ControllerSpec::None => 0,
            ControllerSpec::Run(c) => {
                if !(1..=2).contains(&c.replicas) {
                    return Err(FieldError::new(
                        "controller.replicas",
                        format!("{} is not supported, expected 1 or 2", c.replicas),
                    ));
                }
                for (i, u) in c.upgrades.iter().enumerate() {
                    if u.at >= self.duration {
                        return Err(FieldError::new(
                            format!("controller.upgrades[{i}].at"),
                            format!("{} is not before the duration", u.at),
                        ));
                    }
                }
                c.replicas
            }
        };
        if replicas == 0 && !self.workloads.is_empty() {
            return Err(FieldError::new(
                "workloads",
                "need a controller (nodes come from it), but the scenario has `controller: none`",
            ));
        }
        let faults_until = self.phases.faults_until.unwrap_or(self.duration);
        let liveness_from = self.phases.liveness_from.unwrap_or(self.duration);
        if faults_until > self.duration || liveness_from > self.duration || faults_until > liveness_from {
            return Err(FieldError::new(
                "phases",
                format!(
                    "need faultsUntil ({faults_until}) <= livenessFrom ({liveness_from}) <= duration ({})",
                    self.duration
                ),
            ));
        }
        for (i, f) in self.faults.iter().enumerate() {
            f.validate(zones, replicas).map_err(|e| e.within(format!("faults[{i}]")))?;
            if let Some(at) = f.at
                && at >= faults_until
            {
                return Err(FieldError::new(
                    format!("faults[{i}].at"),
                    format!("{at} is not before phases.faultsUntil ({faults_until})"),
                ));
            }
        }
        Ok(())
    }
}
