//! What the runner watches while the world runs, sampled every simulated second from the
//! API server's store and the fake cloud: how long pods waited for a node, why each
//! NodeClaim was disrupted, and which instances were interrupted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::apiserver::ApiServer;
use crate::apiserver::store::Store;
use dovetail_fakecloud::cloud::{SharedCloud, lock};

/// Observations so far.
#[derive(Default)]
pub struct Observer {
    /// Pod uid -> (first seen unbound, bound at).
    pods: BTreeMap<String, (Duration, Option<Duration>)>,
    /// NodeClaims seen deleting, with the reason.
    disrupted: BTreeMap<String, String>,
    /// Instances that got a spot interruption warning or were stopped by an outage.
    interrupted: BTreeSet<String>,
}

/// Pending-time statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PendingStats {
    /// Pods observed.
    pub pods: u64,
    /// Median seconds from creation to binding.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Worst.
    pub max: f64,
}

impl Observer {
    /// Samples the world at `now`.
    pub fn sample(&mut self, server: &ApiServer, cloud: Option<&SharedCloud>, now: Duration) {
        {
            let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
            self.sample_pods(&store, now);
            self.sample_claims(&store, now);
        }
        if let Some(cloud) = cloud {
            let c = lock(cloud);
            for i in c.instances() {
                let stopped = i.state_reason.as_ref().is_some_and(|(_, message)| message.contains("zone outage"));
                if i.reclaim_at.is_some() || stopped {
                    self.interrupted.insert(i.id.clone());
                }
            }
        }
    }

    fn sample_pods(&mut self, store: &Store, now: Duration) {
        let Some(rt) = store.registry().get("", "pods") else { return };
        for pod in store.iter(&rt.key(), None) {
            let Some(uid) = pod.pointer("/metadata/uid").and_then(Value::as_str) else { continue };
            let bound = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
            let entry = self.pods.entry(uid.to_string()).or_insert((now, None));
            if bound && entry.1.is_none() {
                entry.1 = Some(now);
            }
        }
    }

    fn sample_claims(&mut self, store: &Store, now: Duration) {
        let Some(rt) = store.registry().get("karpenter.sh", "nodeclaims") else { return };
        let deleting: Vec<Value> = store
            .iter(&rt.key(), None)
            .filter(|c| c.pointer("/metadata/deletionTimestamp").is_some())
            .filter(|c| {
                c.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| !self.disrupted.contains_key(n))
            })
            .map(|c| (**c).clone())
            .collect();
        for claim in deleting {
            let name = claim["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let reason = disruption_reason(store, &claim, now);
            self.disrupted.insert(name, reason);
        }
    }

    /// Pending-time percentiles; pods still unbound count as pending until `now`.
    pub fn pending(&self, now: Duration) -> PendingStats {
        let mut waits: Vec<f64> =
            self.pods.values().map(|(seen, bound)| bound.unwrap_or(now).saturating_sub(*seen).as_secs_f64()).collect();
        if waits.is_empty() {
            return PendingStats::default();
        }
        waits.sort_by(f64::total_cmp);
        let pct = |p: f64| waits[((waits.len() - 1) as f64 * p).round() as usize];
        PendingStats { pods: waits.len() as u64, p50: pct(0.5), p99: pct(0.99), max: waits[waits.len() - 1] }
    }

    /// Disruptions by reason.
    pub fn disruptions(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for reason in self.disrupted.values() {
            *out.entry(reason.clone()).or_default() += 1;
        }
        out
    }

    /// Instances interrupted.
    pub fn interruptions(&self) -> u64 {
        self.interrupted.len() as u64
    }
}

/// Why a NodeClaim is being deleted: its `DisruptionReason` condition (Underutilized,
/// Empty, Drifted), a disruption or interruption Event about it or its node, expiry, or
/// `Other` (garbage collection, launch failure, a deleted NodePool, a user).
fn disruption_reason(store: &Store, claim: &Value, now: Duration) -> String {
    let conditions = claim.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(c) = conditions.iter().find(|c| c["type"] == "DisruptionReason" && c["status"] == "True")
        && let Some(r) = c["reason"].as_str()
    {
        return r.to_string();
    }
    let name = claim["metadata"]["name"].as_str().unwrap_or_default();
    let node = claim.pointer("/status/nodeName").and_then(Value::as_str).unwrap_or_default();
    if let Some(rt) = store.registry().get("", "events") {
        for e in store.iter(&rt.key(), None) {
            let about = e.pointer("/involvedObject/name").and_then(Value::as_str).unwrap_or_default();
            if about != name && (node.is_empty() || about != node) {
                continue;
            }
            let reason = e["reason"].as_str().unwrap_or_default();
            if reason == "DisruptionTerminating" || reason == "Disrupting" {
                // Karpenter: "Disrupting NodeClaim: Underutilized/Delete".
                let message = e["message"].as_str().unwrap_or_default();
                if let Some(r) = message.rsplit_once(": ").map(|(_, r)| r.split('/').next().unwrap_or(r)) {
                    return r.to_string();
                }
            }
            if matches!(
                reason,
                "SpotInterrupted"
                    | "ScheduledChange"
                    | "InstanceStopping"
                    | "InstanceTerminating"
                    | "CapacityReservationInterrupted"
            ) {
                return "Interrupted".into();
            }
        }
    }
    if let Some(expire) = claim.pointer("/spec/expireAfter").and_then(Value::as_str)
        && let Ok(d) = crate::scenario::SimDuration::parse(expire)
        && let Some(created) = claim.pointer("/metadata/creationTimestamp").and_then(Value::as_str)
        && let Ok(created) = created.parse::<jiff::Timestamp>()
    {
        let epoch = crate::world::clock::sim_epoch().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let created = Duration::from_secs(created.as_second().max(0) as u64).saturating_sub(epoch);
        if created + d.0 <= now + Duration::from_secs(1) {
            return "Expired".into();
        }
    }
    "Other".into()
}
