//! Pending-time statistics: how long each pod waited for a node.
//!
//! A run with a cloud measures every pod from its creationTimestamp to its binding (the
//! PodScheduled condition when present, else the tick that first saw it bound), skips
//! DaemonSet pods and forgets pods that vanished unbound. An API-only run has no scheduler:
//! there the statistics say how long pods sat unbound since a tick first saw them, every
//! pod counted to the end. Both are what the reports have always shown; [`PendingClock`]
//! names the choice.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::oracle::view::{PodView, sim_time};

/// Where a pod's wait starts, which pods count, and how percentiles are ranked.
///
/// The two clocks are the two measures the reports showed before the run had one
/// observation pass; they differ in the start, the pods counted and the percentile rank
/// (nearest rank vs. rounded linear index: with nearest rank, `apiserver-smoke` seed 3's
/// p50 would read 503 s instead of 509 s). Making them one measure changes those reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PendingClock {
    /// From creationTimestamp to binding; DaemonSet pods and pods deleted unbound do not
    /// count (worlds with a cloud and a scheduler).
    FromCreation,
    /// From the first tick that saw the pod to the first that saw it bound; every pod
    /// counts (API-only worlds).
    FromFirstSeen,
}

/// Pending-time percentiles over the run's pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingStats {
    /// Pods measured (bound, or still pending at the end).
    pub pods: u64,
    /// Median seconds from creation to binding.
    pub p50_seconds: f64,
    /// 99th percentile.
    pub p99_seconds: f64,
    /// Longest.
    pub max_seconds: f64,
}

/// Follows pods from creation to binding.
#[derive(Debug)]
pub struct PendingTracker {
    clock: PendingClock,
    /// Unbound pods by uid, with when their wait started.
    pending: BTreeMap<String, Duration>,
    /// Pods whose wait is over.
    done: BTreeSet<String>,
    /// Finished waits, in seconds.
    waits: Vec<f64>,
}

impl PendingTracker {
    /// A tracker measuring with `clock`.
    pub fn new(clock: PendingClock) -> Self {
        Self { clock, pending: BTreeMap::new(), done: BTreeSet::new(), waits: Vec::new() }
    }

    /// Updates from the pods at `now` (call whenever the store changed).
    pub fn observe(&mut self, pods: &[PodView], now: Duration) {
        let first_seen = self.clock == PendingClock::FromFirstSeen;
        for p in pods.iter().filter(|p| first_seen || !p.daemonset) {
            if self.done.contains(&p.uid) {
                continue;
            }
            match &p.node_name {
                None if first_seen => {
                    self.pending.entry(p.uid.clone()).or_insert(now);
                }
                None if p.active() => {
                    self.pending.entry(p.uid.clone()).or_insert(p.created);
                }
                None => {}
                Some(_) => {
                    let (started, bound) = match self.clock {
                        PendingClock::FromFirstSeen => (*self.pending.get(&p.uid).unwrap_or(&now), now),
                        PendingClock::FromCreation => (p.created, scheduled_at(&p.object).unwrap_or(now)),
                    };
                    self.pending.remove(&p.uid);
                    self.waits.push(bound.saturating_sub(started).as_secs_f64());
                    self.done.insert(p.uid.clone());
                }
            }
        }
        if !first_seen {
            // Pods that were pending and disappeared unbound stop counting.
            let live: BTreeSet<&str> = pods.iter().map(|p| p.uid.as_str()).collect();
            self.pending.retain(|uid, _| live.contains(uid.as_str()));
        }
    }

    /// The statistics, counting pods still pending as waiting until `now`.
    pub fn stats(&self, now: Duration) -> PendingStats {
        let mut w = self.waits.clone();
        w.extend(self.pending.values().map(|c| now.saturating_sub(*c).as_secs_f64()));
        w.sort_by(f64::total_cmp);
        let Some(&max) = w.last() else { return PendingStats::default() };
        let pct = |q: f64| -> f64 {
            match self.clock {
                PendingClock::FromCreation => {
                    let rank = ((q * w.len() as f64).ceil() as usize).clamp(1, w.len());
                    w[rank - 1]
                }
                PendingClock::FromFirstSeen => w[((w.len() - 1) as f64 * q).round() as usize],
            }
        };
        PendingStats { pods: w.len() as u64, p50_seconds: pct(0.5), p99_seconds: pct(0.99), max_seconds: max }
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
    use crate::oracle::resources::Resources;
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
        let mut t = PendingTracker::new(PendingClock::FromCreation);
        t.observe(&[pod("a", 0, None), pod("b", 0, None), pod("c", 5, Some("n"))], Duration::from_secs(5));
        t.observe(&[pod("a", 0, Some("n")), pod("b", 0, None)], Duration::from_secs(10));
        let s = t.stats(Duration::from_secs(100));
        assert_eq!(s.pods, 3);
        assert_eq!(s.p50_seconds, 10.0);
        assert_eq!(s.max_seconds, 100.0);
    }

    #[test]
    fn without_a_scheduler_waits_run_from_the_first_tick_that_saw_the_pod() {
        let mut t = PendingTracker::new(PendingClock::FromFirstSeen);
        t.observe(&[pod("a", 0, None), pod("b", 0, None)], Duration::from_secs(3));
        t.observe(&[pod("a", 0, Some("n"))], Duration::from_secs(7));
        let s = t.stats(Duration::from_secs(10));
        // a waited 3s..7s; b, gone unbound, still counts until the end: 3s..10s.
        assert_eq!(s.pods, 2);
        assert_eq!(s.p50_seconds, 7.0);
        assert_eq!(s.max_seconds, 7.0);
    }
}
