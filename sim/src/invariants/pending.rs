//! Pending-time statistics: for each pod, creation to binding (from the PodScheduled
//! condition when present, else when the checker first saw it bound).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::view::{PodView, sim_time};

/// Pending-time percentiles over the run's pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingStats {
    /// Pods measured (bound, or still pending at the end).
    pub pods: usize,
    /// Median seconds from creation to binding.
    pub p50_seconds: f64,
    /// 99th percentile.
    pub p99_seconds: f64,
    /// Longest.
    pub max_seconds: f64,
}

/// Follows pods from creation to binding.
#[derive(Debug, Default)]
pub struct PendingTracker {
    pending: BTreeMap<String, Duration>,
    done: BTreeSet<String>,
    waits: Vec<f64>,
}

impl PendingTracker {
    /// Updates from the current pods (DaemonSet pods are not counted).
    pub fn observe(&mut self, pods: &[PodView], now: Duration) {
        for p in pods.iter().filter(|p| !p.daemonset) {
            if self.done.contains(&p.uid) {
                continue;
            }
            match &p.node_name {
                None if p.active() => {
                    self.pending.entry(p.uid.clone()).or_insert(p.created);
                }
                None => {}
                Some(_) => {
                    self.pending.remove(&p.uid);
                    let bound = scheduled_at(&p.object).unwrap_or(now);
                    self.waits.push(bound.saturating_sub(p.created).as_secs_f64());
                    self.done.insert(p.uid.clone());
                }
            }
        }
    }

    /// Pods that were pending and disappeared unbound stop counting.
    pub fn forget_missing(&mut self, pods: &[PodView]) {
        let live: BTreeSet<&str> = pods.iter().map(|p| p.uid.as_str()).collect();
        self.pending.retain(|uid, _| live.contains(uid.as_str()));
    }

    /// The statistics, counting pods still pending as waiting until `now`.
    pub fn stats(&self, now: Duration) -> PendingStats {
        let mut w = self.waits.clone();
        w.extend(self.pending.values().map(|c| now.saturating_sub(*c).as_secs_f64()));
        w.sort_by(f64::total_cmp);
        let pct = |q: f64| -> f64 {
            if w.is_empty() {
                return 0.0;
            }
            let rank = ((q * w.len() as f64).ceil() as usize).clamp(1, w.len());
            w[rank - 1]
        };
        PendingStats {
            pods: w.len(),
            p50_seconds: pct(0.5),
            p99_seconds: pct(0.99),
            max_seconds: w.last().copied().unwrap_or(0.0),
        }
    }
}

fn scheduled_at(pod: &Value) -> Option<Duration> {
    pod.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodScheduled" && c["status"] == "True")
        .and_then(|c| sim_time(&c["lastTransitionTime"]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::resources::Resources;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(uid: &str, created: u64, node: Option<&str>) -> PodView {
        PodView {
            key: format!("default/{uid}"),
            uid: uid.into(),
            created: Duration::from_secs(created),
            node_name: node.map(String::from),
            terminal: false,
            terminating: false,
            daemonset: false,
            requests: Resources::default(),
            object: Arc::new(json!({})),
        }
    }

    #[test]
    fn waits_run_from_creation_to_binding_and_open_waits_count_at_the_end() {
        let mut t = PendingTracker::default();
        t.observe(&[pod("a", 0, None), pod("b", 0, None), pod("c", 5, Some("n"))], Duration::from_secs(5));
        t.observe(&[pod("a", 0, Some("n")), pod("b", 0, None)], Duration::from_secs(10));
        let s = t.stats(Duration::from_secs(100));
        assert_eq!(s.pods, 3);
        assert_eq!(s.p50_seconds, 10.0);
        assert_eq!(s.max_seconds, 100.0);
    }
}
