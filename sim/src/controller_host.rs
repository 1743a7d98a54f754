//! The production controller as a turmoil host: the unmodified `dovetail_controller::operator`
//! with clients that reach the simulated API server (`apiserver:6443`) and the fake cloud
//! (`aws:80`), simulated time as its clock, and a random stream derived from the run's seed.

use std::sync::Arc;
use std::time::Duration;

use dovetail_controller::cloudprovider::aws::price_list;
use dovetail_controller::operator::{self, Clients, Environment};
use dovetail_controller::runtime::{Clock, EventRecorder, Settings, SharedRng};
use dovetail_fakecloud::sdk::{SdkOptions, ec2_client, pricing_client, sqs_client, ssm_client};

use crate::apiserver::API_PORT;
use crate::kube_client::ClientFaults;
use crate::world::Stream;

/// The turmoil host name of the controller.
pub const CONTROLLER_HOST: &str = "controller";
/// The fake cloud's endpoint as the controller dials it.
pub const AWS_ENDPOINT: &str = "http://aws:80";
/// The interruption queue the simulated EventBridge rules feed.
pub const INTERRUPTION_QUEUE: &str = "dovetail-interruptions";

/// Simulated wall clock: the world's epoch plus turmoil's elapsed time.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimClock;

impl Clock for SimClock {
    fn now(&self) -> jiff::Timestamp {
        let since = crate::world::clock::sim_epoch().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
            + turmoil::sim_elapsed().unwrap_or_default();
        jiff::Timestamp::from_duration(jiff::SignedDuration::try_from(since).unwrap_or_default()).unwrap_or_default()
    }
}

/// Settings the simulated cluster's controller runs with unless a scenario overrides them.
pub fn default_settings(region: &str) -> Settings {
    Settings {
        cluster_name: "dovetail".into(),
        cluster_endpoint: format!("https://apiserver:{API_PORT}"),
        cluster_ca_bundle: "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t".into(),
        cluster_dns: Some("10.100.0.10".into()),
        region: region.into(),
        interruption_queue: INTERRUPTION_QUEUE.into(),
        ..Settings::default()
    }
}

/// The thread-local RNG seeds of replica `index`'s EC2, SQS and SSM clients: each client
/// reseeds the thread-local generator (retry jitter, invocation ids, idempotency tokens)
/// from its own seeded sequence at every operation start, so the log filter cannot shift
/// what it draws (`dovetail_fakecloud::sdk::SdkOptions::thread_rng_seed`).
fn sdk_thread_rng_seeds(seed: u64, index: u8) -> [u64; 4] {
    use rand::RngCore;
    let mut rng = Stream::SdkRetry(index).rng(seed);
    [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()]
}

/// The SDK seeds of replica `index`'s `start`-th process (0 for the first). A restarted
/// process must not replay its previous life's draws: the SDK fills CreateFleet's
/// `ClientToken` from them, and a token reused with the same parameters returns the earlier
/// fleet's instance (EC2 idempotency), so two NodeClaims would share one instance — which a
/// real process, drawing fresh random tokens, never does (generated story 52789607: a claim
/// launched after a controller crash got the instance of a claim from before it). The first
/// start keeps the seeds it always had.
fn sdk_thread_rng_seeds_for_start(seed: u64, index: u8, start: u64) -> [u64; 4] {
    if start == 0 {
        return sdk_thread_rng_seeds(seed, index);
    }
    sdk_thread_rng_seeds(seed ^ start.wrapping_mul(0x9E37_79B9_7F4A_7C15), index)
}

/// Adds the controller host whose kube client injects `faults` (the world around the
/// controller misbehaving; the controller itself is unchanged). It (re)builds every client
/// each time it starts, so a bounce restarts it like a pod restart: fresh caches, state
/// rebuilt from the API server. Worlds get it from [`crate::world::WorldBuilder::controller`].
pub(crate) fn add_controller_host(sim: &mut turmoil::Sim<'_>, seed: u64, settings: Settings, faults: ClientFaults) {
    let settings = Arc::new(settings);
    let starts = Arc::new(std::sync::atomic::AtomicU64::new(0));
    sim.host(CONTROLLER_HOST, move || {
        let settings = settings.clone();
        let start = starts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let rng_seeds = sdk_thread_rng_seeds_for_start(seed, 0, start);
        async move {
            let region = settings.region.clone();
            let clients = Clients {
                kube: crate::kube_client::controller_kube_client("apiserver", API_PORT, faults),
                ec2: ec2_client(&SdkOptions::ec2(AWS_ENDPOINT, &region).with_thread_rng_seed(rng_seeds[0])),
                sqs: sqs_client(&SdkOptions::sqs(AWS_ENDPOINT, &region).with_thread_rng_seed(rng_seeds[1])),
                ssm: ssm_client(&SdkOptions::ec2(AWS_ENDPOINT, &region).with_thread_rng_seed(rng_seeds[2])),
                pricing: pricing_client(
                    &SdkOptions::ec2(AWS_ENDPOINT, price_list::pricing_region(&region))
                        .with_thread_rng_seed(rng_seeds[3]),
                ),
            };
            let env = Environment {
                clock: Arc::new(SimClock),
                rng: SharedRng::from_seed(Stream::Controller(0).seed(seed)),
                events: EventRecorder::new(),
                metrics: dovetail_controller::runtime::Metrics::new(),
                instance: CONTROLLER_HOST.to_owned(),
            };
            // Let the API server and cloud hosts bind first.
            tokio::time::sleep(Duration::from_millis(100)).await;
            operator::run(clients, (*settings).clone(), env).await.map_err(|e| e.to_string().into())
        }
    });
}

/// The controller replicas of a scenario run: their host names, the settings the next
/// (re)start reads (a rolling upgrade changes them), and the replicas whose process has
/// exited and must be restarted (as the kubelet would restart the pod).
#[derive(Clone)]
pub struct Replicas {
    /// Host names; each replica's leader identity is its host name.
    pub hosts: Vec<String>,
    /// Settings read at each start.
    pub settings: Arc<std::sync::Mutex<Settings>>,
    /// Replicas that exited (leadership lost, or `operator::run` returned), in order.
    pub exited: Arc<std::sync::Mutex<Vec<String>>>,
    /// The metrics registry of every start of every replica, in start order (a restart
    /// starts a fresh one, as a new process would).
    pub metrics: Arc<std::sync::Mutex<Vec<(String, dovetail_controller::runtime::Metrics)>>>,
}

impl Replicas {
    /// Takes the list of replicas that exited since the last call.
    pub fn take_exited(&self) -> Vec<String> {
        std::mem::take(&mut *self.exited.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every start's `/metrics` text as Prometheus would scrape it: (host, OpenMetrics text).
    pub fn scrape(&self) -> Vec<(String, String)> {
        self.metrics.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(h, m)| (h.clone(), m.encode())).collect()
    }
}

/// The host name of replica `index`: `controller`, then `controller-b`, `controller-c`
/// (the same names as their random streams, [`Stream::Controller`]).
pub fn replica_host(index: u8) -> String {
    Stream::Controller(index).name().into_owned()
}

/// Adds `count` controller replicas (`controller`, then `controller-b`). With more than one,
/// each runs leader election on the `karpenter-leader-election` Lease in `kube-system`, as
/// the binary does, and only the leader runs the controllers. A replica whose leadership
/// is lost or whose controller returns parks itself and is listed in `exited`; the runner
/// restarts it (turmoil bounce), which drops every task it spawned, like a process exit.
pub(crate) fn add_controller_replicas(
    sim: &mut turmoil::Sim<'_>,
    seed: u64,
    settings: Settings,
    count: u8,
) -> Replicas {
    use dovetail_controller::runtime::leader::{LeaderElection, LeaderElectionConfig};
    let hosts: Vec<String> = (0..count.max(1)).map(replica_host).collect();
    let replicas = Replicas {
        hosts: hosts.clone(),
        settings: Arc::new(std::sync::Mutex::new(settings)),
        exited: Arc::new(std::sync::Mutex::new(Vec::new())),
        metrics: Arc::new(std::sync::Mutex::new(Vec::new())),
    };
    let elect = hosts.len() > 1;
    for (index, host) in (0u8..).zip(hosts) {
        let replicas = replicas.clone();
        let rng_seed = Stream::Controller(index).seed(seed);
        let starts = Arc::new(std::sync::atomic::AtomicU64::new(0));
        sim.host(host.clone(), move || {
            let (replicas, host) = (replicas.clone(), host.clone());
            let start = starts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let rng_seeds = sdk_thread_rng_seeds_for_start(seed, index, start);
            async move {
                // Let the API server and cloud hosts bind first.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let settings = replicas.settings.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let region = settings.region.clone();
                let kube = crate::kube_client::controller_kube_client("apiserver", API_PORT, Default::default());
                let mut leadership = if elect {
                    let config = LeaderElectionConfig::new(crate::faults::network::LEASE_NAMESPACE, host.clone());
                    Some(LeaderElection::new(kube.clone(), Arc::new(SimClock), config).acquire().await)
                } else {
                    None
                };
                let clients = Clients {
                    kube,
                    ec2: ec2_client(&SdkOptions::ec2(AWS_ENDPOINT, &region).with_thread_rng_seed(rng_seeds[0])),
                    sqs: sqs_client(&SdkOptions::sqs(AWS_ENDPOINT, &region).with_thread_rng_seed(rng_seeds[1])),
                    ssm: ssm_client(&SdkOptions::ec2(AWS_ENDPOINT, &region).with_thread_rng_seed(rng_seeds[2])),
                    pricing: pricing_client(
                        &SdkOptions::ec2(AWS_ENDPOINT, price_list::pricing_region(&region))
                            .with_thread_rng_seed(rng_seeds[3]),
                    ),
                };
                let metrics = dovetail_controller::runtime::Metrics::new();
                replicas.metrics.lock().unwrap_or_else(|e| e.into_inner()).push((host.clone(), metrics.clone()));
                let env = Environment {
                    clock: Arc::new(SimClock),
                    rng: SharedRng::from_seed(rng_seed),
                    events: EventRecorder::new(),
                    metrics,
                    instance: host.clone(),
                };
                let lost = async {
                    match leadership.as_mut() {
                        Some(held) => held.lost().await,
                        None => std::future::pending().await,
                    }
                };
                let why = tokio::select! {
                    biased;
                    reason = lost => format!("leader election lost: {reason}"),
                    result = operator::run(clients, settings, env) => match result {
                        Ok(()) => "controller returned".to_string(),
                        Err(e) => format!("controller failed: {e:#}"),
                    },
                };
                tracing::warn!(%host, "{why}; exiting");
                replicas.exited.lock().unwrap_or_else(|e| e.into_inner()).push(host.clone());
                std::future::pending::<()>().await;
                Ok(())
            }
        });
    }
    replicas
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restarted controller draws new SDK seeds (so new idempotency tokens); the first start
    /// keeps the seeds every recorded run was made with.
    #[test]
    fn each_start_of_a_replica_draws_its_own_sdk_seeds() {
        assert_eq!(sdk_thread_rng_seeds_for_start(7, 1, 0), sdk_thread_rng_seeds(7, 1));
        let starts: Vec<[u64; 4]> = (0..4).map(|start| sdk_thread_rng_seeds_for_start(7, 1, start)).collect();
        for (i, a) in starts.iter().enumerate() {
            assert!(starts[i + 1..].iter().all(|b| a != b), "start {i} repeats: {starts:?}");
        }
        assert_eq!(sdk_thread_rng_seeds_for_start(7, 1, 2), sdk_thread_rng_seeds_for_start(7, 1, 2), "deterministic");
    }
}
