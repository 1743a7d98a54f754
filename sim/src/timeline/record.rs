//! What the timeline needs from each tick of the run's observation pass, recorded as it
//! changes: the run's observer (`crate::run::observe`) hands the [`Recorder`] the view it
//! read anyway, so recording adds no reading of its own and changes nothing in the world.

use std::collections::BTreeMap;
use std::time::Duration;

use dovetail_fakecloud::{CapacityType, FakeCloud};

use super::{DisruptionMark, Sample};
use crate::invariants::cost::lower_bound_over;
use crate::oracle::offering_table::OfferingTable;
use crate::oracle::resources::{Offering, Resources};
use crate::oracle::view::{PodView, View};

/// The LP bound is recomputed at least this often (spot prices and availability move it)…
const BOUND_EVERY: Duration = Duration::from_secs(60);
/// …and at most this often when the pods' demand changes (a burst of pods is one change).
const BOUND_AT_MOST_EVERY: Duration = Duration::from_secs(10);

/// Collects the timeline's series tick by tick.
#[derive(Default)]
pub struct Recorder {
    recording: Recording,
    bound_at: Option<Duration>,
    bound_demand: Option<Resources>,
    /// Each pool's offerings, listed once (the catalog is fixed) and priced per use.
    offerings: OfferingTable,
}

/// What a [`Recorder`] collected.
#[derive(Debug, Default)]
pub struct Recording {
    /// Pending pods, at each change.
    pub pending: Vec<Sample<u64>>,
    /// The cloud's cost rate, USD per hour, at each change.
    pub cost_rate: Vec<Sample<f64>>,
    /// The LP bound, USD per hour, at each change.
    pub lower_bound: Vec<Sample<f64>>,
    /// NodeClaims entering deletion.
    pub disruptions: Vec<DisruptionMark>,
    /// When each instance was first seen being taken away by the cloud.
    pub interrupted: BTreeMap<String, Duration>,
    /// Each instance's NodeClaim (its `karpenter.sh/nodeclaim` tag), last seen.
    pub claims: BTreeMap<String, String>,
    /// Each instance's Node, last seen.
    pub nodes: BTreeMap<String, String>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the tick at `view.now`: `pods` as the observer last read them, the cloud,
    /// and the DaemonSet `overhead` per node (for the bound).
    pub fn sample(&mut self, view: &View, pods: &[PodView], cloud: &FakeCloud, overhead: &Resources) {
        let now = view.now;
        let r = &mut self.recording;
        let pending = pods.iter().filter(|p| p.active() && !p.daemonset && p.node_name.is_none()).count() as u64;
        push_change(&mut r.pending, now, pending);
        push_change(&mut r.cost_rate, now, round6(rate_per_hour(cloud, now)));
        let mut demand = Resources::default();
        for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
            demand.add(&p.requests);
        }
        let since = self.bound_at.map(|at| now.saturating_sub(at));
        let due = match since {
            None => true,
            Some(since) => since >= BOUND_EVERY || (self.bound_demand != Some(demand) && since >= BOUND_AT_MOST_EVERY),
        };
        if due {
            let offerings: BTreeMap<String, Vec<Offering>> = view
                .pools
                .iter()
                .map(|(name, pool)| {
                    let priced = self.offerings.priced(cloud, &Default::default(), &pool.object, now);
                    (name.clone(), priced.into_iter().filter(|(_, available)| *available).map(|(o, _)| o).collect())
                })
                .collect();
            let bound = round6(lower_bound_over(&offerings, pods, overhead));
            push_change(&mut r.lower_bound, now, bound);
            self.bound_at = Some(now);
            self.bound_demand = Some(demand);
        }
        // Interrupted as the report counts it (`crate::run::observe`): a spot interruption
        // warning, or stopped by a zone outage.
        for i in cloud.instances() {
            let stopped = i.state_reason.as_ref().is_some_and(|(_, message)| message.contains("zone outage"));
            if i.reclaim_at.is_some() || stopped {
                r.interrupted.entry(i.id.clone()).or_insert(now);
            }
        }
        for i in &view.instances {
            let Some(claim) = &i.nodeclaim else { continue };
            r.claims.insert(i.id.clone(), claim.clone());
            if let Some(node) = view.claims.get(claim).and_then(|c| c.node_name.as_ref()) {
                r.nodes.insert(i.id.clone(), node.clone());
            }
        }
    }

    /// Records that `claim` was first seen deleting at `at` for `reason`; `provider_id` is
    /// its `status.providerID` (`aws:///zone/i-...`), when launched.
    pub fn disrupted(&mut self, at: Duration, claim: &str, reason: &str, provider_id: Option<&str>) {
        let instance_id = provider_id.and_then(|p| p.rsplit('/').next()).filter(|id| !id.is_empty());
        self.recording.disruptions.push(DisruptionMark {
            at,
            claim: claim.to_string(),
            reason: reason.to_string(),
            instance_id: instance_id.map(str::to_string),
        });
    }

    /// The recording.
    pub fn finish(self) -> Recording {
        self.recording
    }
}

/// USD per hour of the instances billed at `now`, at their current prices: the rate part
/// of the cloud's cost report (`dovetail_fakecloud::Ledger::report`) without its totals,
/// which integrate every instance's spot price over its life and cost too much to
/// compute every simulated second.
fn rate_per_hour(cloud: &FakeCloud, now: Duration) -> f64 {
    cloud
        .ledger()
        .records
        .values()
        .filter(|r| r.end.is_none() && r.start <= now)
        .filter_map(|r| match r.capacity_type {
            CapacityType::OnDemand => cloud.catalog().get(&r.instance_type)?.on_demand_price,
            CapacityType::Spot => cloud.spot_price(&r.instance_type, &r.zone, now),
        })
        .sum()
}

/// Appends `value` at `at` unless it equals the last value.
fn push_change<T: PartialEq + Copy>(series: &mut Vec<Sample<T>>, at: Duration, value: T) {
    if series.last().is_none_or(|s| s.value != value) {
        series.push(Sample { at, value });
    }
}

/// Rounds a rate to a micro-dollar, so float noise does not add samples.
fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_keeps_only_changes() {
        let mut s = Vec::new();
        for (at, v) in [(0, 1u64), (1, 1), (2, 3), (3, 3), (4, 1)] {
            push_change(&mut s, Duration::from_secs(at), v);
        }
        let kept: Vec<(u64, u64)> = s.iter().map(|x| (x.at.as_secs(), x.value)).collect();
        assert_eq!(kept, vec![(0, 1), (2, 3), (4, 1)]);
    }

    #[test]
    fn a_disruption_names_the_instance_of_its_provider_id() {
        let mut r = Recorder::new();
        r.disrupted(Duration::from_secs(5), "spot-abc", "Underutilized", Some("aws:///us-west-2a/i-0123"));
        r.disrupted(Duration::from_secs(6), "spot-def", "Other", None);
        let rec = r.finish();
        assert_eq!(rec.disruptions[0].instance_id.as_deref(), Some("i-0123"));
        assert_eq!(rec.disruptions[0].reason, "Underutilized");
        assert_eq!(rec.disruptions[1].instance_id, None);
    }
}
