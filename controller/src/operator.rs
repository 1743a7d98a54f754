//! Wires every controller together (core's `operator.NewOperator` + `controllers.NewControllers`):
//! a table of [`Reconciler`]s driven by [`reconcile::run`], plus the few tasks that are not
//! reconcilers (catalog refresh, ICE sweep, metrics sync, the event writer).
//! The binary calls [`run`] once it holds the leader lease; the simulator calls it inside its
//! `controller` host with clients that reach the simulated API server and fake cloud.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::cloudprovider::CloudProvider;
use crate::cloudprovider::aws::capacity::CapacityController;
use crate::cloudprovider::aws::reservation_capacity_type::CapacityTypeController;
use crate::cloudprovider::aws::reservation_expiration::ReservationExpirationController;
use crate::cloudprovider::aws::tagging::TaggingController;
use crate::cloudprovider::aws::{AwsCloudProvider, price_list};
use crate::cloudprovider::overlay::OverlayCloudProvider;
use crate::disruption::Disruption;
use crate::disruption::consolidatable::ConsolidatableController;
use crate::disruption::drift::DriftController;
use crate::disruption::expiration::Expiration;
use crate::garbage_collection::GarbageCollection;
use crate::interruption::instance_status::InstanceStatusController;
use crate::interruption::{Interruption, InterruptionStats};
use crate::lifecycle::Lifecycle;
use crate::node_health::NodeHealth;
use crate::nodeclass::NodeClassController;
use crate::nodeoverlay::{InstanceTypeStore, NodeOverlayController, watch_overlays};
use crate::nodepool::NodePoolStatusController;
use crate::nodepool::registration_health::RegistrationHealth;
use crate::provisioning::{Provisioner, ProvisioningController};
use crate::runtime::reconcile::{self, Env, Reconciler, Trigger};
use crate::runtime::{EventRecorder, EventWriter, Metrics, Settings, SharedClock, SharedRng};
use crate::state::{Cluster, watchers};
use crate::termination::Termination;

/// Karpenter refreshes instance types, offerings and spot prices every 12 hours.
pub const CATALOG_REFRESH: Duration = Duration::from_secs(12 * 3600);
/// How often expired ICE entries are swept (so offerings become available again).
pub const ICE_SWEEP: Duration = Duration::from_secs(10);

/// The clients the controller talks through.
#[derive(Clone)]
pub struct Clients {
    /// The Kubernetes API server.
    pub kube: kube::Client,
    /// EC2.
    pub ec2: aws_sdk_ec2::Client,
    /// SQS (interruption queue).
    pub sqs: aws_sdk_sqs::Client,
    /// SSM (AMI alias resolution).
    pub ssm: aws_sdk_ssm::Client,
    /// The AWS Price List API (on-demand prices), at [`price_list::pricing_region`]'s endpoint.
    pub pricing: aws_sdk_pricing::Client,
}

/// What the controller takes from its environment besides clients.
#[derive(Clone)]
pub struct Environment {
    /// Wall clock.
    pub clock: SharedClock,
    /// Random source.
    pub rng: SharedRng,
    /// Event sink; [`run`] writes what is published here as Kubernetes Events.
    pub events: EventRecorder,
    /// Prometheus metrics (the binary serves them on `/metrics`).
    pub metrics: Metrics,
    /// This replica's name, the `reportingInstance` of its Events.
    pub instance: String,
}

/// Keeps the catalog and spot prices fresh; retries a failed load every 30 s until it works.
async fn refresh_catalog(cloud: Arc<AwsCloudProvider>, clock: SharedClock) {
    loop {
        let types = cloud.refresh_instance_types().await;
        let spot = cloud.refresh_spot_prices(&clock).await;
        match (&types, &spot) {
            (Ok(types), Ok(prices)) => {
                tracing::info!(instance_types = types, spot_prices = prices, "refreshed instance types and prices");
                tokio::time::sleep(CATALOG_REFRESH).await;
            }
            _ => {
                tracing::warn!(?types, ?spot, "refreshing instance types and prices; keeping the previous data");
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
        }
    }
}

/// Keeps on-demand prices fresh from the Price List API: at start, then every
/// [`CATALOG_REFRESH`] (aws `pkg/controllers/providers/pricing/controller.go`: `RequeueAfter:
/// 12 * time.Hour`). A failure keeps the previous prices and is retried with
/// controller-runtime's per-item backoff (5 ms doubling to 1000 s), as the upstream singleton
/// reconciler's error is.
async fn refresh_on_demand_prices(cloud: Arc<AwsCloudProvider>) {
    let mut failures: u32 = 0;
    loop {
        match cloud.refresh_on_demand_prices().await {
            Ok(result) => {
                if failures > 0 || !matches!(result, price_list::OnDemandPrices::Fetched(_)) {
                    tracing::info!(?result, "on-demand pricing refreshed");
                }
                failures = 0;
                tokio::time::sleep(CATALOG_REFRESH).await;
            }
            Err(error) => {
                let backoff = PRICING_BACKOFF_BASE.saturating_mul(1 << failures.min(30)).min(PRICING_BACKOFF_MAX);
                failures = failures.saturating_add(1);
                tracing::warn!(%error, ?backoff, "updating on-demand pricing; keeping the previous prices");
                tokio::time::sleep(backoff).await;
            }
        }
    }
}

/// controller-runtime's default per-item failure backoff (client-go `workqueue`
/// `DefaultTypedControllerRateLimiter`: 5 ms doubling, at most 1000 s).
const PRICING_BACKOFF_BASE: Duration = Duration::from_millis(5);
const PRICING_BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// Sweeps expired ICE entries every [`ICE_SWEEP`], so their offerings become available again.
async fn sweep_unavailable_offerings(cloud: Arc<dyn CloudProvider>) {
    loop {
        tokio::time::sleep(ICE_SWEEP).await;
        cloud.unavailable_offerings().sweep();
    }
}

/// Mirrors cluster state and controller counters into the metrics every 10 s.
async fn sync_metrics(cluster: Arc<Cluster>, metrics: Metrics, interruption: Arc<InterruptionStats>) {
    let mut seen = crate::interruption::InterruptionCounts::default();
    let mut claims: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut nodes: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut first = true;
    loop {
        let snapshot = cluster.snapshot();
        if snapshot.is_synced() {
            // Created/terminated counters from what appeared and disappeared since the last look
            // (the first synced look is the baseline, not a burst of creations).
            let pool_of = |labels: Option<&std::collections::BTreeMap<String, String>>| {
                labels.and_then(|l| l.get(crate::apis::labels::NODE_POOL_LABEL)).cloned().unwrap_or_default()
            };
            let now_claims: std::collections::BTreeMap<String, String> = snapshot
                .node_claims
                .iter()
                .map(|(name, c)| (name.clone(), pool_of(c.metadata.labels.as_ref())))
                .collect();
            let now_nodes: std::collections::BTreeMap<String, String> = snapshot
                .nodes
                .iter()
                .filter(|(_, n)| snapshot.node_claim_for_node(n).is_some())
                .map(|(name, n)| (name.clone(), pool_of(n.metadata.labels.as_ref())))
                .collect();
            if !first {
                for (name, pool) in &now_claims {
                    if !claims.contains_key(name) {
                        metrics.nodeclaim_created("provisioning", pool);
                    }
                }
                for (name, pool) in &claims {
                    if !now_claims.contains_key(name) {
                        metrics.nodeclaim_terminated(pool);
                    }
                }
                for (name, pool) in &now_nodes {
                    if !nodes.contains_key(name) {
                        metrics.node_created(pool);
                    }
                }
                for (name, pool) in &nodes {
                    if !now_nodes.contains_key(name) {
                        metrics.node_terminated(pool);
                    }
                }
            }
            first = false;
            claims = now_claims;
            nodes = now_nodes;
        }
        metrics.cluster_state(snapshot.is_synced(), snapshot.nodes.len());
        for pool in snapshot.node_pools.values() {
            let name = pool.metadata.name.as_deref().unwrap_or_default();
            let usage = crate::provisioning::provisioner::pool_usage(&snapshot, name);
            #[allow(clippy::cast_precision_loss)]
            for (resource, value) in [
                ("cpu", usage.cpu_milli as f64 / 1000.0),
                ("memory", usage.memory_bytes as f64),
                ("nodes", usage.get("nodes") as f64),
            ] {
                metrics.nodepool_usage(name, resource, value);
            }
        }
        let counts = interruption.counts();
        for (kind, count) in &counts.received {
            for _ in seen.received.get(kind).copied().unwrap_or(0)..*count {
                metrics.interruption_received(kind.as_str());
            }
        }
        for latency in interruption.take_latencies() {
            metrics.interruption_queue_duration(latency);
        }
        for _ in seen.deleted..counts.deleted {
            metrics.interruption_deleted();
        }
        seen = counts;
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// One row of the operator's table: a named task, not yet started.
struct Task {
    name: &'static str,
    future: BoxFuture<'static, ()>,
}

impl Task {
    /// A task that is not a reconciler (a timer, a queue writer).
    fn new(name: &'static str, future: impl Future<Output = ()> + Send + 'static) -> Self {
        Self { name, future: Box::pin(future) }
    }

    /// A reconciler, driven by [`reconcile::run`] in `env`.
    fn controller<R: Reconciler>(reconciler: R, env: &Env) -> Self {
        Self::new(reconciler.name(), reconcile::run(reconciler, env.clone()))
    }
}

/// Runs every controller until the process stops.
///
/// The controllers are started in table order (the order their first reconciles run in), and
/// the provisioner runs on the calling task.
///
/// # Errors
/// When a controller loop fails unrecoverably.
pub async fn run(clients: Clients, settings: Settings, env: Environment) -> anyhow::Result<()> {
    let cluster = Arc::new(Cluster::new());
    watchers::spawn_watchers(&clients.kube, &cluster, &env.rng);
    let settings = Arc::new(settings);
    let aws = Arc::new(AwsCloudProvider::new(
        clients.ec2.clone(),
        clients.ssm.clone(),
        clients.pricing.clone(),
        settings.clone(),
        env.clock.clone(),
    ));
    // core `pkg/operator/operator.go` and the provider's `overlay.Decorate`: everything lists
    // instance types through the overlay decorator except the NodeOverlay controller itself
    // (core `controllers.go` l. 188). The launch too: aws `cloudprovider.go` `Create` applies
    // the store to the types it resolves (l. 135-145).
    let undecorated: Arc<dyn CloudProvider> = aws.clone();
    let overlay_store = Arc::new(InstanceTypeStore::new());
    let cloud: Arc<dyn CloudProvider> = Arc::new(OverlayCloudProvider::new(
        undecorated.clone(),
        overlay_store.clone(),
        settings.feature_gates.node_overlay,
    ));
    let renv = Env {
        cluster: cluster.clone(),
        kube: clients.kube.clone(),
        cloud: cloud.clone(),
        clock: env.clock.clone(),
        rng: env.rng.clone(),
        events: env.events.clone(),
        metrics: env.metrics.clone(),
    };
    let termination =
        Termination::new(clients.kube.clone(), cluster.clone(), cloud.clone(), env.clock.clone(), env.events.clone());
    let interruption = Interruption::new(
        clients.kube.clone(),
        cluster.clone(),
        cloud.clone(),
        clients.sqs.clone(),
        settings.interruption_queue.clone(),
        env.clock.clone(),
        env.events.clone(),
    );
    let interruption_stats = interruption.stats();
    // Shared by the lifecycle (records outcomes) and NodePool status (resets) controllers.
    let registration_health = RegistrationHealth::default();
    let disruption = Disruption::new(
        clients.kube.clone(),
        cluster.clone(),
        cloud.clone(),
        env.clock.clone(),
        env.events.clone(),
        env.metrics.clone(),
        &settings,
    );
    let mut tasks = vec![
        Task::new("catalog.refresh", refresh_catalog(aws.clone(), env.clock.clone())),
        Task::new("offerings.ice_sweep", sweep_unavailable_offerings(cloud.clone())),
        Task::new("pricing.on_demand", refresh_on_demand_prices(aws.clone())),
        Task::controller(NodeClassController::new(aws.clone()), &renv),
        // aws `pkg/controllers/controllers.go`: registered with the provider controllers.
        Task::controller(CapacityController::new(aws.clone()), &renv),
        // aws `pkg/controllers/controllers.go` l. 106, 113-114: registered unconditionally.
        Task::controller(TaggingController::new(aws.clone(), settings.cluster_name.clone()), &renv),
        Task::controller(CapacityTypeController::new(), &renv),
        Task::controller(ReservationExpirationController::new(aws.clone()), &renv),
        Task::controller(NodePoolStatusController::new(registration_health.clone()), &renv),
        Task::controller(
            DriftController::new(clients.kube.clone(), cloud.clone(), env.clock.clone(), env.metrics.clone()),
            &renv,
        ),
        Task::controller(Expiration::new(), &renv),
        Task::controller(
            Lifecycle::new(
                clients.kube.clone(),
                cloud.clone(),
                env.clock.clone(),
                env.events.clone(),
                registration_health.clone(),
            ),
            &renv,
        ),
        Task::controller(GarbageCollection::new(), &renv),
        // The eviction queue starts with it, as its own task.
        Task::new(termination.name(), termination.run_in(renv.clone())),
        Task::controller(ConsolidatableController::new(), &renv),
        Task::controller(disruption, &renv),
        Task::new("metrics.sync", sync_metrics(cluster.clone(), env.metrics.clone(), interruption_stats)),
        // Registered unconditionally, queue or no queue (aws `pkg/controllers/controllers.go`
        // l. 115): EC2 status checks and scheduled events, polled once a minute.
        Task::controller(InstanceStatusController::new(clients.ec2.clone()), &renv),
    ];
    // NodeRepair: only behind its gate and with a provider that has repair policies (core
    // `pkg/controllers/controllers.go` l. 178).
    let repair_policies = cloud.repair_policies();
    if settings.feature_gates.node_repair && !repair_policies.is_empty() {
        tasks.push(Task::controller(NodeHealth::new(repair_policies), &renv));
    }
    // core `pkg/controllers/controllers.go` l. 187-189: only behind its gate.
    if settings.feature_gates.node_overlay {
        let trigger = Trigger::new();
        let seed = env.rng.with(rand::RngCore::next_u64);
        tasks.push(Task::new("nodeoverlay.watch", watch_overlays(clients.kube.clone(), trigger.clone(), seed)));
        tasks.push(Task::controller(NodeOverlayController::new(undecorated.clone(), overlay_store, trigger), &renv));
    }
    if interruption.is_enabled() {
        tasks.push(Task::controller(interruption, &renv));
    } else {
        tracing::info!("no interruption queue configured; interruption handling disabled");
    }
    tasks.push(Task::new(
        "events.writer",
        EventWriter::new(clients.kube.clone(), env.clock.clone(), env.instance.clone()).run(env.events.clone()),
    ));
    for task in tasks {
        tracing::debug!(task = task.name, "starting");
        tokio::spawn(task.future);
    }
    let provisioner = Provisioner {
        client: clients.kube.clone(),
        cluster: cluster.clone(),
        cloud: cloud.clone(),
        clock: env.clock.clone(),
        events: env.events.clone(),
        settings: (*settings).clone(),
    };
    reconcile::run(ProvisioningController::new(provisioner), renv).await;
    Ok(())
}
