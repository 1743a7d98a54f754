//! Reservations that end mid-run, end to end (issue 20, "Karpenter fidelity";
//! aws/karpenter-provider-aws v1.14.1 `pkg/controllers/capacityreservation/expiration`,
//! `capacityreservation/capacitytype` and `nodeclaim/tagging`). `scenarios/capacity-block-expiry.yaml`
//! holds a two-slot capacity block in us-east-1a ending at 50m and a two-slot targeted ODCR in
//! us-east-1b ending at 35m, with six one-node pods on a NodePool allowing `reserved` and
//! `on-demand`. Watched from outside, every simulated second, through the API server's store
//! and the fake cloud:
//! - the block's NodeClaims are deleted once it is `expiring` (40 minutes before its end, so at
//!   10m), within a poll, and its instances are gone before EC2 starts reclaiming it at 20m;
//!   the pods run on replacements;
//! - when the ODCR ends, its instances keep running, stop naming it, and their NodeClaims and
//!   Nodes are relabelled `on-demand` without the reservation labels within a poll;
//! - every instance that registered carries `Name` (its Node), `karpenter.sh/nodeclaim` and
//!   `eks:eks-cluster-name`, and its claim the `tagged` annotations.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use dovetail_fakecloud::cloud::{SharedCloud, lock};
use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::oracle::view::key;
use dovetail_sim::run::{Outcome, RunOptions, run_world};
use dovetail_sim::scenario::Loaded;
use dovetail_sim::world::ScenarioWorld;
use dovetail_sim::world::clock::SIM_EPOCH_UNIX_SECS;
use serde_json::Value;

const BLOCK: &str = "cr-0b10c0000000000a1";
const ODCR: &str = "cr-0d0c0000000000b02";
/// The block is `expiring` from here (its end, 50m, less 40 minutes).
const BLOCK_EXPIRING: Duration = Duration::from_secs(10 * 60);
/// EC2 begins reclaiming the block's instances (its end less 30 minutes).
const BLOCK_RECLAIM: Duration = Duration::from_secs(20 * 60);
/// The ODCR's end.
const ODCR_END: Duration = Duration::from_secs(35 * 60);
/// Both controllers run once a minute.
const POLL: Duration = Duration::from_secs(60);
/// A watch and a tick of slack between the controller's write and this test's look.
const SLACK: Duration = Duration::from_secs(5);

/// One NodeClaim as seen over the run.
#[derive(Clone, Debug, Default)]
struct Claim {
    instance: String,
    /// The reservation it launched into, if any.
    reservation: Option<String>,
    node: Option<String>,
    deleted_at: Option<Duration>,
    /// When it was first seen labelled `on-demand` after being `reserved`.
    demoted_at: Option<Duration>,
    /// Its labels and annotations when last seen.
    labels: Value,
    annotations: Value,
}

#[derive(Default)]
struct Watch {
    server: Option<ApiServer>,
    cloud: Option<SharedCloud>,
    next_second: u64,
    claims: BTreeMap<String, Claim>,
    /// Nodes when last seen: labels by name.
    nodes: BTreeMap<String, Value>,
    /// Instances in each reservation when launched, and when each was first seen not live.
    in_reservation: BTreeMap<String, String>,
    gone_at: BTreeMap<String, Duration>,
    /// Instances seen with no reservation after having one, by id.
    released: BTreeSet<String>,
    /// Tags of every instance when last seen.
    tags: BTreeMap<String, BTreeMap<String, String>>,
    /// Running web pods on each node name, when last seen.
    web_on: BTreeMap<String, usize>,
}

fn at(stamp: &str) -> Duration {
    let t: jiff::Timestamp = stamp.parse().expect("rfc3339");
    let epoch = jiff::Timestamp::from_second(SIM_EPOCH_UNIX_SECS.try_into().expect("epoch")).expect("epoch");
    Duration::try_from(t.duration_since(epoch)).unwrap_or(Duration::ZERO)
}

impl Watch {
    fn observe(&mut self, now: Duration) {
        if let Some(cloud) = &self.cloud {
            let c = lock(cloud);
            for i in c.instances() {
                match &i.capacity_reservation_id {
                    Some(r) => {
                        self.in_reservation.insert(i.id.clone(), r.clone());
                    }
                    None if self.in_reservation.contains_key(&i.id) => {
                        self.released.insert(i.id.clone());
                    }
                    None => {}
                }
                if !i.state.is_live() {
                    self.gone_at.entry(i.id.clone()).or_insert(now);
                }
                self.tags.insert(i.id.clone(), i.tags.clone().into_iter().collect());
            }
        }
        let Some(server) = self.server.as_ref() else { return };
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        for claim in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let Some(instance) = claim["status"]["providerID"].as_str().and_then(|p| p.rsplit('/').next()) else {
                continue;
            };
            let seen = self.claims.entry(name).or_default();
            seen.instance = instance.to_owned();
            let labels = &claim["metadata"]["labels"];
            if let Some(r) = labels["karpenter.k8s.aws/capacity-reservation-id"].as_str() {
                seen.reservation = Some(r.to_owned());
            }
            if seen.reservation.is_some()
                && labels["karpenter.sh/capacity-type"] == "on-demand"
                && seen.demoted_at.is_none()
            {
                seen.demoted_at = Some(now);
            }
            if let Some(node) = claim["status"]["nodeName"].as_str() {
                seen.node = Some(node.to_owned());
            }
            if let Some(ts) = claim["metadata"]["deletionTimestamp"].as_str() {
                seen.deleted_at.get_or_insert(at(ts));
            }
            seen.labels = labels.clone();
            seen.annotations = claim["metadata"]["annotations"].clone();
        }
        for node in store.iter(&key("", "nodes"), None) {
            let name = node["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            self.nodes.insert(name, node["metadata"]["labels"].clone());
        }
        self.web_on.clear();
        for pod in store.iter(&key("", "pods"), None) {
            if pod["metadata"]["labels"]["app"] == "web" && pod["status"]["phase"] == "Running" {
                let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
                *self.web_on.entry(node).or_default() += 1;
            }
        }
    }
}

fn run() -> (Watch, Outcome) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/capacity-block-expiry.yaml");
    let loaded = Loaded::from_file(&path).expect("library scenario loads");
    let world = ScenarioWorld::build(&loaded, 1).expect("world builds");
    let watch = Rc::new(RefCell::new(Watch { cloud: world.world.cloud.clone(), ..Watch::default() }));
    let on_start = {
        let watch = watch.clone();
        move |s: &ApiServer| watch.borrow_mut().server = Some(s.clone())
    };
    let before_step = {
        let watch = watch.clone();
        move |now: Duration| {
            let mut w = watch.borrow_mut();
            if now.as_secs() >= w.next_second {
                w.next_second = now.as_secs() + 1;
                w.observe(now);
            }
        }
    };
    let mut options = RunOptions {
        on_start: Some(Box::new(on_start)),
        before_step: Some(Box::new(before_step)),
        ..RunOptions::default()
    };
    let outcome = run_world(world, &mut options).expect("run");
    drop(options);
    let watch = Rc::try_unwrap(watch).ok().expect("hooks dropped").into_inner();
    (watch, outcome)
}

#[test]
fn ending_reservations_are_drained_ahead_of_ec2_relabelled_and_every_instance_is_tagged() {
    let (w, outcome) = run();
    let report = serde_json::to_value(&outcome.report).expect("a report serialises");
    assert!(outcome.report.failures.is_empty(), "{:?}", outcome.report.failures);
    assert_eq!(report["invariants"]["violations"].as_array().map(Vec::len), Some(0), "{}", report["invariants"]);

    // The capacity block: its claims deleted once it is expiring, within a poll, and its
    // instances gone before EC2's reclaim.
    let block: Vec<(&String, &Claim)> =
        w.claims.iter().filter(|(_, c)| c.reservation.as_deref() == Some(BLOCK)).collect();
    assert_eq!(block.len(), 2, "both block slots were used: {:?}", w.claims);
    for (name, claim) in &block {
        let deleted = claim.deleted_at.unwrap_or_else(|| panic!("{name} on the block was never deleted"));
        assert!(deleted >= BLOCK_EXPIRING, "{name} deleted at {deleted:?}, before the block was expiring");
        assert!(deleted <= BLOCK_EXPIRING + POLL + SLACK, "{name} deleted at {deleted:?}, later than a poll after");
        let gone = w.gone_at.get(&claim.instance).copied();
        assert!(
            gone.is_some_and(|g| g < BLOCK_RECLAIM),
            "{name}'s instance {} was still live when EC2 began reclaiming the block ({gone:?})",
            claim.instance
        );
    }
    // The pods moved: all six run at the end, none on a block node.
    let block_nodes: BTreeSet<&String> = block.iter().filter_map(|(_, c)| c.node.as_ref()).collect();
    assert_eq!(w.web_on.values().sum::<usize>(), 6, "{:?}", w.web_on);
    assert!(w.web_on.keys().all(|n| !block_nodes.contains(n)), "{:?} vs {block_nodes:?}", w.web_on);

    // The ODCR: its instances keep running without it, and their claims and Nodes are demoted.
    let odcr: Vec<(&String, &Claim)> =
        w.claims.iter().filter(|(_, c)| c.reservation.as_deref() == Some(ODCR)).collect();
    assert_eq!(odcr.len(), 2, "both ODCR slots were used: {:?}", w.claims);
    for (name, claim) in &odcr {
        assert!(w.released.contains(&claim.instance), "{} still names the ODCR", claim.instance);
        assert!(!w.gone_at.contains_key(&claim.instance), "an ended ODCR does not stop {}", claim.instance);
        let demoted = claim.demoted_at.unwrap_or_else(|| panic!("{name} was never demoted: {}", claim.labels));
        assert!(demoted >= ODCR_END && demoted <= ODCR_END + POLL + SLACK, "{name} demoted at {demoted:?}");
        for labels in [&claim.labels, &w.nodes[claim.node.as_ref().expect("registered")]] {
            assert_eq!(labels["karpenter.sh/capacity-type"], "on-demand", "{labels}");
            assert!(labels["karpenter.k8s.aws/capacity-reservation-id"].is_null(), "{labels}");
            assert!(labels["karpenter.k8s.aws/capacity-reservation-type"].is_null(), "{labels}");
        }
    }

    // Tagging: every claim that registered has its instance named after its Node.
    let registered: Vec<(&String, &Claim)> = w.claims.iter().filter(|(_, c)| c.node.is_some()).collect();
    assert!(registered.len() >= 8, "six nodes and two replacements: {:?}", w.claims);
    for (name, claim) in registered {
        let tags = &w.tags[&claim.instance];
        assert_eq!(tags.get("Name"), claim.node.as_ref(), "{}: {tags:?}", claim.instance);
        assert_eq!(tags.get("karpenter.sh/nodeclaim"), Some(name), "{}: {tags:?}", claim.instance);
        assert_eq!(tags.get("eks:eks-cluster-name").map(String::as_str), Some("dovetail"), "{tags:?}");
        if claim.deleted_at.is_none() {
            assert_eq!(claim.annotations["karpenter.k8s.aws/tagged"], "true", "{name}: {}", claim.annotations);
            assert_eq!(
                claim.annotations["compatibility.karpenter.k8s.aws/cluster-name-tagged"], "true",
                "{name}: {}",
                claim.annotations
            );
        }
    }
    assert!(report["apiCalls"]["ec2 CreateTags"].as_u64().unwrap_or(0) >= 8, "{}", report["apiCalls"]);
}
