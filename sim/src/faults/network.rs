//! turmoil faults: partitions and latency between endpoints, controller crashes and
//! restarts, and leader failover between two replicas.
//!
//! Endpoints are `apiserver`, `aws`, `controller` (every replica) and `leader` (the replica
//! holding the leader Lease when the fault starts; the only replica when there is one).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use super::Layers;
use crate::scenario::drawn_fault::DrawnFault;

/// The Lease the controller replicas elect a leader on.
pub const LEASE_NAMESPACE: &str = "kube-system";

/// What healing each network fault undoes.
#[derive(Default)]
pub struct NetworkState {
    undo: BTreeMap<usize, Undo>,
}

enum Undo {
    Repair(Vec<(String, String)>),
    Latency(Vec<(String, String)>),
    Restart(Vec<String>),
}

/// The world's default link latencies, restored when a latency fault heals.
const MIN_LATENCY: Duration = Duration::from_millis(1);
const MAX_LATENCY: Duration = Duration::from_millis(5);

impl NetworkState {
    /// Starts a partition, latency, crash or failover.
    pub fn start(&mut self, sim: &mut turmoil::Sim<'_>, layers: &Layers, id: usize, fault: &DrawnFault) {
        match fault {
            DrawnFault::Partition { between: [a, b] } => {
                // Held, not dropped: turmoil drops a partitioned TCP segment for good and
                // keeps the connection open, so a stream would resume after the heal with
                // bytes missing (a watch silently short of events), which no TCP stack does;
                // real TCP retransmits what it sent once the path is back.
                let pairs = pairs(layers, a, b);
                for (x, y) in &pairs {
                    sim.hold(x.as_str(), y.as_str());
                }
                self.undo.insert(id, Undo::Repair(pairs));
            }
            DrawnFault::Latency { between: [a, b], latency } => {
                let pairs: Vec<(String, String)> =
                    pairs(layers, a, b).into_iter().filter(|(x, y)| linked(sim, x, y)).collect();
                for (x, y) in &pairs {
                    sim.set_link_latency(x.as_str(), y.as_str(), latency.0);
                }
                self.undo.insert(id, Undo::Latency(pairs));
            }
            DrawnFault::ControllerCrash { target } => {
                let hosts = resolve(layers, target);
                for h in &hosts {
                    sim.crash(h.as_str());
                }
                self.undo.insert(id, Undo::Restart(hosts));
            }
            DrawnFault::LeaderFailover => {
                let hosts = resolve(layers, "leader");
                for h in &hosts {
                    sim.crash(h.as_str());
                }
                self.undo.insert(id, Undo::Restart(hosts));
            }
            _ => {}
        }
    }

    /// Heals it.
    pub fn stop(&mut self, sim: &mut turmoil::Sim<'_>, _layers: &Layers, id: usize) {
        match self.undo.remove(&id) {
            Some(Undo::Repair(pairs)) => {
                for (x, y) in pairs {
                    sim.release(x.as_str(), y.as_str());
                }
            }
            Some(Undo::Latency(pairs)) => {
                for (x, y) in pairs {
                    sim.set_link_latency(x.as_str(), y.as_str(), MIN_LATENCY);
                    sim.set_link_max_message_latency(x.as_str(), y.as_str(), MAX_LATENCY);
                }
            }
            Some(Undo::Restart(hosts)) => {
                for h in hosts {
                    sim.bounce(h.as_str());
                }
            }
            None => {}
        }
    }
}

/// Whether turmoil has a link between the hosts yet (setting latency on a link that has
/// carried no traffic would panic; one that has none yet gets the default when it forms).
fn linked(sim: &turmoil::Sim<'_>, a: &str, b: &str) -> bool {
    let (a, b): (IpAddr, IpAddr) = (sim.lookup(a), sim.lookup(b));
    let mut found = false;
    sim.links(|links| {
        for link in links {
            let (x, y) = link.pair();
            if (x == a && y == b) || (x == b && y == a) {
                found = true;
            }
        }
    });
    found
}

fn pairs(layers: &Layers, a: &str, b: &str) -> Vec<(String, String)> {
    let (xs, ys) = (resolve(layers, a), resolve(layers, b));
    let mut out = Vec::new();
    for x in &xs {
        for y in &ys {
            if x != y {
                out.push((x.clone(), y.clone()));
            }
        }
    }
    out
}

/// Host names of an endpoint.
pub fn resolve(layers: &Layers, endpoint: &str) -> Vec<String> {
    match endpoint {
        "controller" => layers.controllers.clone(),
        "leader" => leader(layers).into_iter().collect(),
        other => vec![other.to_string()],
    }
}

/// The replica holding the leader Lease (replica identities are their host names), or the
/// first replica when no Lease names a live one.
pub fn leader(layers: &Layers) -> Option<String> {
    let store = layers.server.store.lock().unwrap_or_else(|e| e.into_inner());
    let holder = store.registry().get("coordination.k8s.io", "leases").and_then(|rt| {
        store
            .get(&rt, LEASE_NAMESPACE, dovetail_controller::runtime::flags::DEFAULT_LEADER_ELECTION_NAME)
            .ok()
            .and_then(|l| l.pointer("/spec/holderIdentity").and_then(|h| h.as_str()).map(str::to_string))
    });
    holder.filter(|h| layers.controllers.contains(h)).or_else(|| layers.controllers.first().cloned())
}
