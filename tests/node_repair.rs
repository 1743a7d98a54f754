//! NodeRepair end to end, on the library's `node-repair` story: at 3m two of the `web` pool's
//! ten nodes and two of the `batch` pool's five report `Ready=False` (a `nodeConditions`
//! fault) until 38m. Upstream (kubernetes-sigs/karpenter `pkg/controllers/node/health/
//! controller.go`, aws/karpenter-provider-aws `RepairPolicies`) replaces a node 30 minutes
//! after its condition turned, unless more than 20% (rounded up) of its NodePool is unhealthy.
//!
//! The test watches the store from outside the controller, once a simulated second: when each
//! Node turned sick (its Ready condition's transition), when each NodeClaim got its
//! deletionTimestamp and what `karpenter.sh/nodeclaim-termination-timestamp` it carried, the
//! NodeRepairBlocked events, and where the pods ran. With the gate on, the two `web` nodes
//! must be repaired neither before their toleration nor more than a minute after it, and the
//! `batch` nodes (2 of 5 > 1 allowed) never; with the gate off nothing is repaired.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::oracle::view::key;
use dovetail_sim::run::Outcome;
use dovetail_sim::scenario::Loaded;
use dovetail_sim::scenario::SimDuration;
use dovetail_sim::scenario::controller::{ControllerSpec, FeatureGatesSpec};
use dovetail_sim::world::ScenarioWorld;
use dovetail_sim::world::clock::SIM_EPOCH_UNIX_SECS;
use serde_json::Value;

const TOLERATION: Duration = Duration::from_secs(30 * 60);
const FAULT_HEALS: Duration = Duration::from_secs(38 * 60);

/// One Node as first seen sick.
#[derive(Clone, Debug)]
struct Sick {
    pool: String,
    provider_id: String,
    /// The Ready condition's lastTransitionTime (RFC 3339) when it went False.
    transition: String,
    /// When this test first saw it sick.
    seen: Duration,
}

/// One NodeClaim's deletion as first seen.
#[derive(Clone, Debug)]
struct Deleted {
    seen: Duration,
    deletion_timestamp: String,
    termination_timestamp: Option<String>,
}

#[derive(Default)]
struct Watch {
    sick: BTreeMap<String, Sick>,
    /// Claims by providerID: (name, pool).
    claims: BTreeMap<String, (String, String)>,
    deleted: BTreeMap<String, Deleted>,
    blocked_events: BTreeSet<String>,
    /// At the last observation: web pods by node name, and the nodes present.
    web_pods: BTreeMap<String, String>,
    nodes: BTreeSet<String>,
}

impl Watch {
    fn observe(&mut self, server: &ApiServer, now: Duration) {
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        self.nodes.clear();
        for node in store.iter(&key("", "nodes"), None) {
            let name = node["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            self.nodes.insert(name.clone());
            let ready = node["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                .cloned()
                .unwrap_or(Value::Null);
            if ready["reason"] == "KubeletUnhealthy" && ready["status"] == "False" && !self.sick.contains_key(&name) {
                self.sick.insert(
                    name,
                    Sick {
                        pool: node["metadata"]["labels"]["karpenter.sh/nodepool"].as_str().unwrap_or_default().into(),
                        provider_id: node["spec"]["providerID"].as_str().unwrap_or_default().into(),
                        transition: ready["lastTransitionTime"].as_str().unwrap_or_default().into(),
                        seen: now,
                    },
                );
            }
        }
        for claim in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            if let Some(provider_id) = claim["status"]["providerID"].as_str() {
                let pool = claim["metadata"]["labels"]["karpenter.sh/nodepool"].as_str().unwrap_or_default();
                self.claims.insert(provider_id.to_owned(), (name.clone(), pool.to_owned()));
            }
            if let Some(ts) = claim["metadata"]["deletionTimestamp"].as_str()
                && !self.deleted.contains_key(&name)
            {
                let annotation = claim["metadata"]["annotations"]["karpenter.sh/nodeclaim-termination-timestamp"]
                    .as_str()
                    .map(str::to_owned);
                self.deleted.insert(
                    name,
                    Deleted { seen: now, deletion_timestamp: ts.to_owned(), termination_timestamp: annotation },
                );
            }
        }
        for event in store.iter(&key("", "events"), None) {
            if event["reason"] == "NodeRepairBlocked" {
                self.blocked_events.insert(event["involvedObject"]["name"].as_str().unwrap_or_default().to_owned());
            }
        }
        self.web_pods.clear();
        for pod in store.iter(&key("", "pods"), None) {
            if pod["metadata"]["labels"]["app"] == "web" && pod["metadata"]["deletionTimestamp"].is_null() {
                let node = pod["spec"]["nodeName"].as_str().unwrap_or_default().to_owned();
                self.web_pods.insert(pod["metadata"]["name"].as_str().unwrap_or_default().to_owned(), node);
            }
        }
    }

    /// Simulated time of an RFC 3339 stamp.
    fn at(&self, stamp: &str) -> Duration {
        let t: jiff::Timestamp = stamp.parse().expect("rfc3339");
        let epoch = jiff::Timestamp::from_second(SIM_EPOCH_UNIX_SECS.try_into().expect("epoch")).expect("epoch");
        let since = t.duration_since(epoch);
        Duration::try_from(since).unwrap_or(Duration::ZERO)
    }

    fn claim_of(&self, sick: &Sick) -> (String, String) {
        self.claims.get(&sick.provider_id).cloned().expect("every sick node has a claim")
    }
}

fn run(gate: bool, duration: Option<Duration>) -> (Watch, Outcome) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/node-repair.yaml");
    let mut loaded = Loaded::from_file(&path).expect("library scenario loads");
    let ControllerSpec::Run(config) = &mut loaded.scenario.controller else { panic!("the story runs a controller") };
    config.feature_gates.get_or_insert_with(FeatureGatesSpec::default).node_repair = Some(gate);
    if let Some(d) = duration {
        loaded.scenario.duration = SimDuration(d);
    }
    let world = ScenarioWorld::build(&loaded, 1).expect("world builds");
    let watch = Rc::new(RefCell::new(Watch::default()));
    let outcome = {
        let watch = watch.clone();
        dovetail_tests::run_each_second(world, move |server, now| watch.borrow_mut().observe(server, now))
    };
    let watch = Rc::try_unwrap(watch).ok().expect("hooks dropped").into_inner();
    (watch, outcome)
}

#[test]
fn unhealthy_nodes_are_repaired_after_their_toleration_unless_too_much_of_the_pool_is_unhealthy() {
    let (w, outcome) = run(true, None);
    let by_pool = |pool: &str| -> Vec<(&String, &Sick)> { w.sick.iter().filter(|(_, s)| s.pool == pool).collect() };
    let (web, batch) = (by_pool("web"), by_pool("batch"));
    assert_eq!((web.len(), batch.len()), (2, 2), "two sick nodes per pool: {:?}", w.sick);

    for (node, sick) in &web {
        let (claim, _) = w.claim_of(sick);
        let deleted = w.deleted.get(&claim).unwrap_or_else(|| panic!("{node}'s claim {claim} was never repaired"));
        let turned = w.at(&sick.transition);
        let deleted_at = w.at(&deleted.deletion_timestamp);
        assert!(
            deleted_at >= turned + TOLERATION,
            "{node} repaired at {deleted_at:?}, before its toleration ended at {:?}",
            turned + TOLERATION
        );
        assert!(
            deleted_at <= turned + TOLERATION + Duration::from_secs(60),
            "{node} repaired at {deleted_at:?}, more than a minute after its toleration ended"
        );
        // Forceful: the termination timestamp was set (to the repair's now) before the delete.
        let stamp =
            deleted.termination_timestamp.as_deref().expect("termination timestamp annotated before the delete");
        assert!(w.at(stamp) <= deleted_at + Duration::from_secs(1), "stamp {stamp} is not the repair's now");
        assert!(deleted.seen >= sick.seen, "seen deleted before seen sick");
        assert!(!w.nodes.contains(*node), "the repaired node {node} is gone at the end");
    }
    for (node, sick) in &batch {
        let (claim, _) = w.claim_of(sick);
        if let Some(d) = w.deleted.get(&claim) {
            assert!(
                d.seen >= FAULT_HEALS,
                "{node} (2 of 5 sick, 1 allowed) repaired at {:?} despite the guard",
                d.seen
            );
        }
        assert!(w.blocked_events.contains(*node), "no NodeRepairBlocked event on {node}: {:?}", w.blocked_events);
    }
    for (node, _) in &web {
        assert!(!w.blocked_events.contains(*node), "{node} was repairable (2 of 10), yet reported blocked");
    }
    // The repaired nodes' pods run elsewhere.
    let sick_web: BTreeSet<&String> = web.iter().map(|(n, _)| *n).collect();
    assert_eq!(w.web_pods.len(), 10, "web has its ten pods: {:?}", w.web_pods);
    for (pod, node) in &w.web_pods {
        assert!(!node.is_empty() && w.nodes.contains(node), "{pod} is not on a live node ({node:?})");
        assert!(!sick_web.contains(node), "{pod} still on a repaired node");
    }
    let violations = &outcome.report.invariants.violations;
    assert!(violations.is_empty(), "invariants: {violations:?}");
}

#[test]
fn with_the_gate_off_nothing_is_repaired() {
    // Past the web nodes' toleration (33m) by five minutes, to the fault's heal.
    let (w, _) = run(false, Some(FAULT_HEALS));
    assert_eq!(w.sick.len(), 4, "four sick nodes: {:?}", w.sick);
    for (node, sick) in &w.sick {
        let (claim, _) = w.claim_of(sick);
        assert!(!w.deleted.contains_key(&claim), "{node} repaired with NodeRepair off: {:?}", w.deleted.get(&claim));
    }
    assert!(w.blocked_events.is_empty(), "no NodeRepair controller, no NodeRepairBlocked: {:?}", w.blocked_events);
}
