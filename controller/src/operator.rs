//! Wires every controller loop together (core's `operator.NewOperator` + `controllers.NewControllers`).
//! The binary calls [`run`] once it holds the leader lease; the simulator calls it inside its
//! `controller` host with clients that reach the simulated API server and fake cloud.

use std::sync::Arc;
use std::time::Duration;

use crate::cloudprovider::CloudProvider;
use crate::cloudprovider::aws::AwsCloudProvider;
use crate::interruption::{Interruption, InterruptionStats};
use crate::lifecycle::Lifecycle;
use crate::provisioning::provisioner::Provisioner;
use crate::runtime::{EventRecorder, EventWriter, Metrics, Settings, SharedClock, SharedRng};
use crate::state::{Cluster, watch};
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
        for _ in seen.deleted..counts.deleted {
            metrics.interruption_deleted(Duration::ZERO);
        }
        seen = counts;
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// Runs every controller until the process stops.
///
/// # Errors
/// When a controller loop fails unrecoverably.
pub async fn run(clients: Clients, settings: Settings, env: Environment) -> anyhow::Result<()> {
    let cluster = Arc::new(Cluster::new());
    watch::spawn_watchers(&clients.kube, &cluster);
    let settings = Arc::new(settings);
    let aws =
        Arc::new(AwsCloudProvider::new(clients.ec2.clone(), clients.ssm.clone(), settings.clone(), env.clock.clone()));
    let cloud: Arc<dyn CloudProvider> = aws.clone();

    tokio::spawn(refresh_catalog(aws.clone(), env.clock.clone()));
    {
        let cloud = cloud.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(ICE_SWEEP).await;
                cloud.unavailable_offerings().sweep();
            }
        });
    }
    tokio::spawn(crate::nodeclass::run(clients.kube.clone(), cluster.clone(), aws.clone(), env.clock.clone()));
    tokio::spawn(crate::nodepool::run(clients.kube.clone(), cluster.clone(), env.clock.clone()));
    crate::nodeclaim_disruption::spawn(clients.kube.clone(), cluster.clone(), cloud.clone(), &env);
    tokio::spawn(
        Lifecycle::new(clients.kube.clone(), cluster.clone(), cloud.clone(), env.clock.clone(), env.events.clone())
            .run(),
    );
    tokio::spawn(crate::garbage_collection::run(
        clients.kube.clone(),
        cluster.clone(),
        cloud.clone(),
        env.clock.clone(),
    ));
    let provisioner = Provisioner {
        client: clients.kube.clone(),
        cluster: cluster.clone(),
        cloud: cloud.clone(),
        clock: env.clock.clone(),
        events: env.events.clone(),
        settings: (*settings).clone(),
    };
    tokio::spawn(
        Termination::new(clients.kube.clone(), cluster.clone(), cloud.clone(), env.clock.clone(), env.events.clone())
            .run(),
    );
    let interruption = Interruption::new(
        clients.kube.clone(),
        cluster.clone(),
        cloud.clone(),
        clients.sqs.clone(),
        settings.interruption_queue.clone(),
        env.clock.clone(),
        env.events.clone(),
    );
    tokio::spawn(
        crate::disruption::consolidatable::ConsolidatableController::new(
            clients.kube.clone(),
            cluster.clone(),
            env.clock.clone(),
        )
        .run(),
    );
    tokio::spawn(
        crate::disruption::Disruption::new(
            clients.kube.clone(),
            cluster.clone(),
            cloud.clone(),
            env.clock.clone(),
            env.events.clone(),
            env.metrics.clone(),
            &settings,
        )
        .run(),
    );
    tokio::spawn(sync_metrics(cluster.clone(), env.metrics.clone(), interruption.stats()));
    tokio::spawn(interruption.run());
    tokio::spawn(
        EventWriter::new(clients.kube.clone(), env.clock.clone(), env.instance.clone()).run(env.events.clone()),
    );
    provisioner.run().await;
    Ok(())
}
