//! Unhealthy instances (`instanceStatus` faults): EC2 reports chosen instances with failing
//! status checks and/or scheduled events in `DescribeInstanceStatus` until the fault heals
//! (the fake cloud's [`StatusChecks`](dovetail_fakecloud::StatusChecks) and scheduled events).
//! Nothing else about the instance changes: it keeps running and its kubelet keeps reporting,
//! so only a controller that polls EC2's status checks notices.
//!
//! The instances are chosen when the fault starts: running instances Karpenter launched (tag
//! `karpenter.sh/nodepool`, of the fault's NodePool if it names one), oldest launch first (then
//! by id), the first `count` or `ceil(fraction × matching)`. Healing passes the checks again
//! and removes the events on the chosen instances that still exist.

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_fakecloud::cloud::SharedCloud;
use dovetail_fakecloud::{InstanceState, NODEPOOL_TAG, StatusCheck};

use crate::scenario::drawn_fault::DrawnFault;

/// How long a scheduled event's window runs (its `notAfter`) from when it is listed.
pub const EVENT_WINDOW: Duration = Duration::from_secs(14 * 24 * 3600);

/// The instances each active occurrence made unhealthy, with the events it listed on each.
#[derive(Default)]
pub struct InstanceStatusState {
    chosen: BTreeMap<usize, Vec<(String, Vec<String>)>>,
}

/// The instances an occurrence picks from `instances` (id, launch time, pool, running).
pub fn choose(
    instances: &[(String, Duration, Option<String>, bool)],
    pool: Option<&str>,
    count: Option<u32>,
    fraction: Option<f64>,
) -> Vec<String> {
    let mut matching: Vec<(Duration, &String)> = instances
        .iter()
        .filter(|(_, _, p, running)| *running && p.is_some() && (pool.is_none() || p.as_deref() == pool))
        .map(|(id, launched, _, _)| (*launched, id))
        .collect();
    matching.sort();
    let take = crate::scenario::selection::how_many(count, fraction, matching.len());
    matching.into_iter().take(take).map(|(_, id)| id.clone()).collect()
}

impl InstanceStatusState {
    /// Starts occurrence `id`: picks its instances, fails their checks and lists the events.
    /// Returns the instances chosen.
    pub fn start(&mut self, cloud: &SharedCloud, id: usize, fault: &DrawnFault, now: Duration) -> Vec<String> {
        let DrawnFault::InstanceStatus { node_pool, count, fraction, checks, events } = fault else {
            return Vec::new();
        };
        let mut c = cloud.advance();
        let instances: Vec<(String, Duration, Option<String>, bool)> = c
            .instances()
            .map(|i| {
                (i.id.clone(), i.launch_time, i.tags.get(NODEPOOL_TAG).cloned(), i.state == InstanceState::Running)
            })
            .collect();
        let chosen = choose(&instances, node_pool.as_deref(), *count, *fraction);
        let mut done = Vec::new();
        for instance in &chosen {
            // Validated when the scenario loaded; the instance was just listed.
            for check in checks.iter().filter_map(|n| StatusCheck::parse(n)) {
                let _ = c.set_status_check(instance, check, true);
            }
            let ids = events.iter().filter_map(|code| c.add_scheduled_event(instance, code, now + EVENT_WINDOW).ok());
            done.push((instance.clone(), ids.collect()));
        }
        self.chosen.insert(id, done);
        chosen
    }

    /// Heals occurrence `id`: its instances that still exist pass their checks again and lose
    /// the events it listed.
    pub fn stop(&mut self, cloud: &SharedCloud, id: usize, fault: &DrawnFault) {
        let Some(chosen) = self.chosen.remove(&id) else { return };
        let DrawnFault::InstanceStatus { checks, .. } = fault else { return };
        let mut c = cloud.advance();
        for (instance, event_ids) in chosen {
            for check in checks.iter().filter_map(|n| StatusCheck::parse(n)) {
                // Gone (purged) instances have nothing left to heal.
                let _ = c.set_status_check(&instance, check, false);
            }
            for event in &event_ids {
                c.remove_scheduled_event(&instance, event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn chooses_running_karpenter_instances_oldest_first() {
        let instances = vec![
            ("i-c".to_string(), secs(30), Some("web".to_string()), true),
            ("i-a".to_string(), secs(60), Some("web".to_string()), true),
            ("i-b".to_string(), secs(10), Some("batch".to_string()), true),
            ("i-d".to_string(), secs(5), Some("web".to_string()), false),
            ("i-e".to_string(), secs(1), None, true),
        ];
        assert_eq!(choose(&instances, None, Some(2), None), ["i-b", "i-c"]);
        assert_eq!(choose(&instances, Some("web"), None, Some(0.5)), ["i-c"], "ceil(0.5 × 2)");
        assert_eq!(choose(&instances, Some("web"), Some(5), None), ["i-c", "i-a"], "not the stopped one");
        assert!(choose(&instances, Some("gpu"), Some(1), None).is_empty());
    }
}
