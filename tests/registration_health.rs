//! `NodeRegistrationHealthy` end to end, on the library's `nodes-never-join` story: the
//! EC2NodeClass names a role without an access entry for 34 minutes, so every instance runs
//! and bills but its kubelet is refused. The controller deletes each claim at its
//! registration timeout and relaunches; upstream marks the NodePool
//! `NodeRegistrationHealthy=False` once the failures fill half of its 4-outcome buffer
//! (kubernetes-sigs/karpenter `pkg/state/nodepoolhealth/tracker.go`,
//! `nodeclaim/lifecycle/liveness.go` `updateNodePoolRegistrationHealth`).
//!
//! The test watches the store from outside the controller, once a simulated second: a claim
//! that Launched but goes away without ever registering is a failure, a claim that registers
//! a success. It replays those outcomes through its own model of upstream's rule and checks
//! the condition the controller wrote against it at every observed moment.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::oracle::view::key;
use dovetail_sim::scenario::Loaded;
use dovetail_sim::world::ScenarioWorld;
use serde_json::Value;

/// One observation of the pool's condition: (time, status, reason).
type Seen = (Duration, String, String);

#[derive(Default)]
struct Watch {
    /// Claims seen launched, not registered and not deleting.
    launched: BTreeSet<String>,
    registered: BTreeSet<String>,
    /// Claims already counted as failures.
    failed: BTreeSet<String>,
    /// Outcomes in the order observed: (time, success).
    outcomes: Vec<(Duration, bool)>,
    /// The condition at each observation where it changed.
    condition: Vec<Seen>,
}

fn condition_of(pool: &Value) -> Option<(String, String)> {
    pool["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "NodeRegistrationHealthy").map(|c| {
        (c["status"].as_str().unwrap_or_default().to_owned(), c["reason"].as_str().unwrap_or_default().to_owned())
    })
}

fn is_true(claim: &Value, type_: &str) -> bool {
    claim["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == type_ && c["status"] == "True"))
}

impl Watch {
    fn observe(&mut self, server: &ApiServer, now: Duration) {
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        let mut present = BTreeMap::new();
        for claim in store.iter(&key("karpenter.sh", "nodeclaims"), None) {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            present.insert(name, claim.clone());
        }
        for (name, claim) in &present {
            if is_true(claim, "Registered") {
                if self.registered.insert(name.clone()) {
                    self.launched.remove(name);
                    self.outcomes.push((now, true));
                }
            } else if is_true(claim, "Launched") && !self.failed.contains(name) {
                self.launched.insert(name.clone());
            }
        }
        // A failure is a launched, unregistered claim being deleted (or gone between two looks).
        let failed: Vec<String> = self
            .launched
            .iter()
            .filter(|n| present.get(*n).is_none_or(|c| !c["metadata"]["deletionTimestamp"].is_null()))
            .cloned()
            .collect();
        for name in failed {
            self.launched.remove(&name);
            self.failed.insert(name);
            self.outcomes.push((now, false));
        }
        let pool =
            store.iter(&key("karpenter.sh", "nodepools"), None).find(|p| p["metadata"]["name"] == "general-purpose");
        let current = pool.and_then(|p| condition_of(p)).unwrap_or_default();
        if self.condition.last().is_none_or(|(_, s, r)| (s, r) != (&current.0, &current.1)) {
            self.condition.push((now, current.0, current.1));
        }
    }
}

/// Upstream's rule, written from its source: True on a success whose buffer reads healthy,
/// False on a failure whose buffer reads unhealthy (failures ≥ half of 4 slots).
fn model(outcomes: &[(Duration, bool)]) -> Vec<(Duration, &'static str)> {
    let mut ring: VecDeque<bool> = VecDeque::new();
    let mut status = "Unknown";
    let mut changes = Vec::new();
    for (at, ok) in outcomes {
        let mut dry = ring.clone();
        if dry.len() == 4 {
            dry.pop_front();
        }
        dry.push_back(*ok);
        let unhealthy = dry.iter().filter(|o| !**o).count() * 2 >= 4;
        let next = match (ok, unhealthy) {
            (true, false) => "True",
            (false, true) => "False",
            _ => status,
        };
        if next != status {
            changes.push((*at, next));
            status = next;
        }
        ring = dry;
    }
    changes
}

#[test]
fn a_pool_whose_nodes_never_join_turns_registration_unhealthy() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/nodes-never-join.yaml");
    let loaded = Loaded::from_file(&path).expect("library scenario loads");
    let world = ScenarioWorld::build(&loaded, 1).expect("world builds");
    let watch = Rc::new(RefCell::new(Watch::default()));
    {
        let watch = watch.clone();
        dovetail_tests::run_each_second(world, move |server, now| watch.borrow_mut().observe(server, now));
    }
    let w = watch.borrow();
    let failures: Vec<Duration> = w.outcomes.iter().filter(|(_, ok)| !ok).map(|(at, _)| *at).collect();
    assert!(failures.len() >= 2, "two registration timeouts during the 34-minute fault: {:?}", w.outcomes);
    assert!(failures.iter().all(|at| *at < Duration::from_secs(36 * 60)), "timeouts only while the fault lasts");

    let expected = model(&w.outcomes);
    assert_eq!(expected.first().map(|(_, s)| *s), Some("False"), "the model turns False first: {:?}", w.outcomes);
    // Each modelled change shows in the store within 30 s of the outcome being seen (a failure
    // is written before the claim's deletion, so up to a second before it is seen).
    for (at, status) in &expected {
        let shown = w
            .condition
            .iter()
            .any(|(t, s, _)| *t + Duration::from_secs(1) >= *at && *t <= *at + Duration::from_secs(30) && s == status);
        assert!(
            shown,
            "NodeRegistrationHealthy={status} expected by {at:?}; observed {:?}; outcomes {:?}",
            w.condition, w.outcomes
        );
    }
    // Never False before the second failure: one failure of four slots is not enough.
    let first_false = w.condition.iter().find(|(_, s, _)| s == "False").expect("went False");
    assert!(
        first_false.0 + Duration::from_secs(1) >= failures[1],
        "False at {:?} before the second failure at {:?}",
        first_false.0,
        failures[1]
    );
    assert_eq!(
        first_false.2, "RegistrationFailed",
        "the claims launched: upstream's reason for a registration timeout"
    );
    // And the final condition is what the model ends at.
    let last = w.condition.last().expect("observed");
    assert_eq!(last.1, expected.last().unwrap().1, "final condition; outcomes {:?}", w.outcomes);
}
