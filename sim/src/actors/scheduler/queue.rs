//! kube-scheduler's scheduling queue: an active queue ordered by priority then enqueue time, a
//! backoff queue (1 s doubling to 10 s per pod), and an unschedulable set whose pods move back
//! when a cluster event could help them, or after 5 minutes regardless.
//!
//! When the active queue is empty, the pod whose backoff ends first is popped early, as
//! kube-scheduler 1.33+ does (`SchedulerPopFromBackoffQ`);
//! [`SchedulingQueue::with_strict_backoff`] turns that off.
//!
//! Time is a `Duration` since the simulation epoch, passed into every call, and
//! [`SchedulingQueue::next_deadline`] says when the queue next changes on its own, so the
//! actor can sleep until then or until a watch event.
//!
//! # Preemption
//! Preemption is left out: a pod that fits nowhere goes back to the unschedulable set; no
//! lower-priority pods are evicted and `status.nominatedNodeName` is never set. The FitError
//! message still carries the preemption plugin's wording, and
//! [`super::FitError::preemption_might_help`] flags the cases where real kube-scheduler would
//! have tried to evict.
//!
//! # Simplifications
//! Queueing hints are per plugin, not per object: an event moves a pod when any plugin that
//! rejected it registers for that kind of event (see [`ClusterEvent::may_help`]). The
//! leftover flush runs exactly on 30 s boundaries from the queue's creation, as
//! kube-scheduler's `flushUnschedulablePodsLeftover` ticker does.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::plugins::Plugin;
use super::pod_facts::PodKey;

/// kube-scheduler `podInitialBackoffDuration`.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// kube-scheduler `podMaxBackoffDuration`.
pub const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// kube-scheduler `podMaxInUnschedulablePodsDuration`: after this long unschedulable, a pod is
/// retried even without a relevant event.
pub const UNSCHEDULABLE_DURATION_MAX: Duration = Duration::from_secs(5 * 60);
/// Period of kube-scheduler's leftover flush.
pub const UNSCHEDULABLE_FLUSH_PERIOD: Duration = Duration::from_secs(30);

const _: () = assert!(BACKOFF_INITIAL.as_millis() < BACKOFF_MAX.as_millis());

/// A change in the cluster that may make unschedulable pods schedulable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClusterEvent {
    /// A node appeared.
    NodeAdded,
    /// A node's labels, taints, allocatable, conditions or `unschedulable` changed.
    NodeUpdated,
    /// A node went away (topology domains may shrink).
    NodeDeleted,
    /// A pod was bound to a node.
    AssignedPodAdded,
    /// A bound pod changed (labels, resources).
    AssignedPodUpdated,
    /// A bound pod was deleted (frees resources, ports, anti-affinity).
    AssignedPodDeleted,
}

impl ClusterEvent {
    /// Whether a pod rejected by `plugin` may now fit (the plugin registers for this event in
    /// kube-scheduler's `EventsToRegister`).
    pub fn may_help(self, plugin: Plugin) -> bool {
        use ClusterEvent::*;
        use Plugin::*;
        match self {
            NodeAdded | NodeUpdated => true,
            NodeDeleted => matches!(plugin, PodTopologySpread),
            AssignedPodAdded => matches!(plugin, PodTopologySpread | InterPodAffinity),
            AssignedPodUpdated => {
                matches!(plugin, PodTopologySpread | InterPodAffinity | NodeResourcesFit)
            }
            AssignedPodDeleted => matches!(plugin, NodeResourcesFit | NodePorts | PodTopologySpread | InterPodAffinity),
        }
    }
}

/// The result of one scheduling attempt, reported back with [`SchedulingQueue::done`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Bound: the pod leaves the queue.
    Scheduled,
    /// No node fits; the plugins that rejected it (empty: any event may help).
    Unschedulable(BTreeSet<Plugin>),
    /// Something else failed (binding conflict...): retry after backoff.
    Error,
}

/// Where a newly added pod went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Waiting in the active queue.
    Queued,
    /// Held by `schedulingGates`; write the `SchedulingGated` condition.
    Gated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Active,
    Backoff,
    Unschedulable,
    Gated,
    InFlight,
}

#[derive(Debug, Clone)]
struct Entry {
    priority: i32,
    timestamp: Duration,
    seq: u64,
    failures: u32,
    backoff_until: Duration,
    unschedulable_since: Duration,
    rejectors: BTreeSet<Plugin>,
    place: Place,
    events_in_flight: BTreeSet<ClusterEvent>,
}

type ActiveKey = (Reverse<i32>, Duration, u64, PodKey);

/// The scheduling queue. See the module docs.
#[derive(Debug, Clone)]
pub struct SchedulingQueue {
    entries: BTreeMap<PodKey, Entry>,
    active: BTreeSet<ActiveKey>,
    backoff: BTreeSet<(Duration, u64, PodKey)>,
    /// The entries in [`Place::Unschedulable`], by `unschedulable_since`: the leftover
    /// flush finds the due ones as a prefix (the flush deadline grows with `since`) instead
    /// of scanning every entry at every pop.
    unschedulable: BTreeSet<(Duration, PodKey)>,
    flush_origin: Duration,
    seq: u64,
    pop_from_backoff: bool,
}

/// Backoff after `failures` failed attempts: 1 s, 2 s, 4 s, 8 s, then 10 s.
pub fn backoff_duration(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let mut d = BACKOFF_INITIAL;
    for _ in 1..failures {
        if d > BACKOFF_MAX.saturating_sub(d) {
            return BACKOFF_MAX;
        }
        d += d;
    }
    d.min(BACKOFF_MAX)
}

impl SchedulingQueue {
    /// An empty queue; `now` anchors the 30 s leftover flush. Pops from the backoff queue
    /// when the active queue is empty, as kube-scheduler 1.33+ does (feature
    /// `SchedulerPopFromBackoffQ`, beta and on by default).
    pub fn new(now: Duration) -> Self {
        SchedulingQueue {
            entries: BTreeMap::new(),
            active: BTreeSet::new(),
            backoff: BTreeSet::new(),
            unschedulable: BTreeSet::new(),
            flush_origin: now,
            seq: 0,
            pop_from_backoff: true,
        }
    }

    /// A queue that never pops a pod before its backoff ends (kube-scheduler before 1.33, or
    /// with `SchedulerPopFromBackoffQ` off).
    pub fn with_strict_backoff(now: Duration) -> Self {
        SchedulingQueue { pop_from_backoff: false, ..SchedulingQueue::new(now) }
    }

    fn active_key(key: &PodKey, e: &Entry) -> ActiveKey {
        (Reverse(e.priority), e.timestamp, e.seq, key.clone())
    }

    fn take_out(&mut self, key: &PodKey) {
        let Some(e) = self.entries.get(key) else {
            return;
        };
        match e.place {
            Place::Active => {
                self.active.remove(&Self::active_key(key, e));
            }
            Place::Backoff => {
                self.backoff.remove(&(e.backoff_until, e.seq, key.clone()));
            }
            Place::Unschedulable => {
                self.unschedulable.remove(&(e.unschedulable_since, key.clone()));
            }
            Place::Gated | Place::InFlight => {}
        }
    }

    fn put(&mut self, key: &PodKey, place: Place) {
        let e = self.entries.get_mut(key).expect("entry exists");
        // Callers move an unschedulable entry without `take_out` (it sat in no ordered
        // set before the index existed); its `unschedulable_since` is unchanged while there.
        if e.place == Place::Unschedulable {
            self.unschedulable.remove(&(e.unschedulable_since, key.clone()));
        }
        e.place = place;
        match place {
            Place::Active => {
                let k = Self::active_key(key, e);
                self.active.insert(k);
            }
            Place::Backoff => {
                self.backoff.insert((e.backoff_until, e.seq, key.clone()));
            }
            Place::Unschedulable => {
                self.unschedulable.insert((e.unschedulable_since, key.clone()));
            }
            Place::Gated | Place::InFlight => {}
        }
    }

    /// Queues a new pending pod (Pod add watch event for an unbound pod).
    pub fn add(&mut self, key: PodKey, priority: i32, gated: bool, now: Duration) -> Admission {
        self.delete(&key);
        self.seq += 1;
        self.entries.insert(
            key.clone(),
            Entry {
                priority,
                timestamp: now,
                seq: self.seq,
                failures: 0,
                backoff_until: now,
                unschedulable_since: now,
                rejectors: BTreeSet::new(),
                place: Place::Gated,
                events_in_flight: BTreeSet::new(),
            },
        );
        if gated {
            Admission::Gated
        } else {
            self.put(&key, Place::Active);
            Admission::Queued
        }
    }

    /// A pending pod changed (priority, gates removed, spec): an unschedulable or gated pod
    /// gets another chance, respecting its backoff. Unknown pods are added.
    pub fn update(&mut self, key: PodKey, priority: i32, gated: bool, now: Duration) -> Admission {
        let Some(place) = self.entries.get(&key).map(|e| e.place) else {
            return self.add(key, priority, gated, now);
        };
        if place == Place::InFlight {
            self.entries.get_mut(&key).expect("present").priority = priority;
            return Admission::Queued;
        }
        self.take_out(&key);
        self.entries.get_mut(&key).expect("present").priority = priority;
        if gated {
            self.put(&key, Place::Gated);
            return Admission::Gated;
        }
        let target = match place {
            Place::Gated | Place::Active => Place::Active,
            _ => self.retry_place(&key, now),
        };
        self.put(&key, target);
        Admission::Queued
    }

    /// Forgets a pod (deleted, or bound by someone else).
    pub fn delete(&mut self, key: &PodKey) {
        self.take_out(key);
        self.entries.remove(key);
    }

    fn retry_place(&self, key: &PodKey, now: Duration) -> Place {
        let e = &self.entries[key];
        if e.backoff_until > now { Place::Backoff } else { Place::Active }
    }

    fn flush_deadline(&self, since: Duration) -> Duration {
        let due = since + UNSCHEDULABLE_DURATION_MAX;
        let offset = due.saturating_sub(self.flush_origin);
        let period = UNSCHEDULABLE_FLUSH_PERIOD.as_nanos();
        let ticks = offset.as_nanos().div_ceil(period);
        let ticks = u32::try_from(ticks).unwrap_or(u32::MAX);
        self.flush_origin + UNSCHEDULABLE_FLUSH_PERIOD * ticks
    }

    /// Applies time-driven moves up to `now`: finished backoffs to active, and pods
    /// unschedulable for 5 minutes to active/backoff.
    pub fn advance(&mut self, now: Duration) {
        while let Some((until, _, key)) = self.backoff.first().cloned() {
            if until > now {
                break;
            }
            self.take_out(&key);
            self.put(&key, Place::Active);
        }
        // The due entries are a prefix of the index; they move in key order, as a scan of
        // `entries` would take them.
        let mut stale: Vec<PodKey> = self
            .unschedulable
            .iter()
            .take_while(|(since, _)| self.flush_deadline(*since) <= now)
            .map(|(_, k)| k.clone())
            .collect();
        stale.sort_unstable();
        for key in stale {
            let place = self.retry_place(&key, now);
            self.put(&key, place);
        }
    }

    /// The next pod to schedule, if any is ready at `now` (after [`SchedulingQueue::advance`]).
    pub fn pop(&mut self, now: Duration) -> Option<PodKey> {
        self.advance(now);
        let key = match self.active.pop_first() {
            Some(first) => first.3,
            None if self.pop_from_backoff => self.backoff.pop_first()?.2,
            None => return None,
        };
        let e = self.entries.get_mut(&key).expect("active entry exists");
        e.place = Place::InFlight;
        e.events_in_flight.clear();
        Some(key)
    }

    /// Reports the outcome of the attempt on a popped pod.
    pub fn done(&mut self, key: &PodKey, outcome: Outcome, now: Duration) {
        let Some(e) = self.entries.get_mut(key) else {
            return;
        };
        debug_assert_eq!(e.place, Place::InFlight, "done() on a pod that was not popped");
        match outcome {
            Outcome::Scheduled => {
                self.entries.remove(key);
            }
            Outcome::Error => {
                e.failures += 1;
                e.timestamp = now;
                e.backoff_until = now + backoff_duration(e.failures);
                self.put(key, Place::Backoff);
            }
            Outcome::Unschedulable(rejectors) => {
                e.failures += 1;
                e.timestamp = now;
                e.backoff_until = now + backoff_duration(e.failures);
                e.unschedulable_since = now;
                // An event that arrived during the attempt may already have helped.
                let helped = e
                    .events_in_flight
                    .iter()
                    .any(|ev| rejectors.is_empty() || rejectors.iter().any(|p| ev.may_help(*p)));
                e.rejectors = rejectors;
                let place = if helped { self.retry_place(key, now) } else { Place::Unschedulable };
                self.put(key, place);
            }
        }
    }

    /// A cluster event: unschedulable pods it may help move to backoff (if still backing off)
    /// or active.
    pub fn on_cluster_event(&mut self, event: ClusterEvent, now: Duration) {
        let mut moved = Vec::new();
        for (key, e) in self.entries.iter_mut() {
            match e.place {
                Place::InFlight => {
                    e.events_in_flight.insert(event);
                }
                Place::Unschedulable if e.rejectors.is_empty() || e.rejectors.iter().any(|p| event.may_help(*p)) => {
                    moved.push(key.clone());
                }
                _ => {}
            }
        }
        for key in moved {
            let place = self.retry_place(&key, now);
            self.put(&key, place);
        }
    }

    /// When the queue next changes by itself (a backoff ends or a leftover flush is due).
    /// `None` when only events can change it.
    pub fn next_deadline(&self) -> Option<Duration> {
        let backoff = self.backoff.first().map(|(until, _, _)| *until);
        // The flush deadline grows with `since`: the earliest entry's is the minimum.
        let flush = self.unschedulable.first().map(|(since, _)| self.flush_deadline(*since));
        match (backoff, flush) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether a pod is ready to pop now.
    pub fn has_active(&self) -> bool {
        !self.active.is_empty() || (self.pop_from_backoff && !self.backoff.is_empty())
    }

    /// Pods known to the queue (in any state).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no pod is pending.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the pod is waiting in the unschedulable set.
    pub fn is_unschedulable(&self, key: &PodKey) -> bool {
        self.entries.get(key).is_some_and(|e| e.place == Place::Unschedulable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> PodKey {
        PodKey { namespace: "default".into(), name: name.into() }
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn backoff_doubles_from_one_second_to_ten() {
        let got: Vec<u64> = (1..=6).map(|f| backoff_duration(f).as_secs()).collect();
        assert_eq!(got, vec![1, 2, 4, 8, 10, 10]);
        assert_eq!(backoff_duration(0), Duration::ZERO);
    }

    #[test]
    fn higher_priority_pops_first_then_earlier_enqueue() {
        let mut q = SchedulingQueue::new(secs(0));
        q.add(key("low-early"), 0, false, secs(1));
        q.add(key("high"), 100, false, secs(3));
        q.add(key("low-late"), 0, false, secs(2));
        assert_eq!(q.pop(secs(4)), Some(key("high")));
        assert_eq!(q.pop(secs(4)), Some(key("low-early")));
        assert_eq!(q.pop(secs(4)), Some(key("low-late")));
        assert_eq!(q.pop(secs(4)), None);
    }

    #[test]
    fn unschedulable_pod_waits_for_a_relevant_event_and_its_backoff() {
        let mut q = SchedulingQueue::with_strict_backoff(secs(0));
        q.add(key("p"), 0, false, secs(0));
        let p = q.pop(secs(0)).unwrap();
        q.done(&p, Outcome::Unschedulable(BTreeSet::from([Plugin::NodeResourcesFit])), secs(0));
        assert!(q.is_unschedulable(&p));
        // Irrelevant event: stays.
        q.on_cluster_event(ClusterEvent::AssignedPodAdded, secs(0));
        assert!(q.is_unschedulable(&p));
        // Relevant event during backoff: goes to backoff, ready after 1 s.
        q.on_cluster_event(ClusterEvent::NodeAdded, Duration::from_millis(500));
        assert_eq!(q.next_deadline(), Some(secs(1)));
        assert_eq!(q.pop(Duration::from_millis(900)), None);
        assert_eq!(q.pop(secs(1)), Some(p.clone()));
        // Second failure: 2 s backoff.
        q.done(&p, Outcome::Unschedulable(BTreeSet::new()), secs(1));
        q.on_cluster_event(ClusterEvent::NodeUpdated, secs(1));
        assert_eq!(q.next_deadline(), Some(secs(3)));
        assert_eq!(q.pop(secs(3)), Some(p));
    }

    #[test]
    fn unschedulable_pods_are_retried_after_five_minutes_on_a_flush_tick() {
        let mut q = SchedulingQueue::new(secs(0));
        q.add(key("p"), 0, false, secs(10));
        let p = q.pop(secs(10)).unwrap();
        q.done(&p, Outcome::Unschedulable(BTreeSet::from([Plugin::NodeAffinity])), secs(10));
        // 10 s + 300 s = 310 s, next 30 s tick is 330 s.
        assert_eq!(q.next_deadline(), Some(secs(330)));
        assert_eq!(q.pop(secs(329)), None);
        assert_eq!(q.pop(secs(330)), Some(p));
    }

    #[test]
    fn events_during_an_attempt_are_not_lost() {
        let mut q = SchedulingQueue::with_strict_backoff(secs(0));
        q.add(key("p"), 0, false, secs(0));
        let p = q.pop(secs(0)).unwrap();
        q.on_cluster_event(ClusterEvent::AssignedPodDeleted, secs(0));
        q.done(&p, Outcome::Unschedulable(BTreeSet::from([Plugin::NodeResourcesFit])), secs(0));
        assert!(!q.is_unschedulable(&p), "moved straight to backoff");
        assert_eq!(q.pop(secs(1)), Some(p));
    }

    #[test]
    fn an_idle_queue_pops_from_backoff_early_by_default() {
        let mut q = SchedulingQueue::new(secs(0));
        q.add(key("p"), 0, false, secs(0));
        let p = q.pop(secs(0)).unwrap();
        q.done(&p, Outcome::Unschedulable(BTreeSet::new()), secs(0));
        assert_eq!(q.pop(secs(0)), None, "unschedulable pods are not popped early");
        q.on_cluster_event(ClusterEvent::NodeAdded, secs(0));
        assert!(q.has_active());
        assert_eq!(q.pop(Duration::from_millis(100)), Some(p.clone()));
        // With another pod active, the backing-off pod waits its turn.
        q.done(&p, Outcome::Error, Duration::from_millis(100));
        q.add(key("other"), 0, false, Duration::from_millis(200));
        assert_eq!(q.pop(Duration::from_millis(200)), Some(key("other")));
        assert_eq!(q.pop(Duration::from_millis(300)), Some(p));
    }

    #[test]
    fn gated_pods_wait_until_their_gates_are_removed() {
        let mut q = SchedulingQueue::new(secs(0));
        assert_eq!(q.add(key("g"), 0, true, secs(0)), Admission::Gated);
        assert_eq!(q.pop(secs(0)), None);
        assert_eq!(q.update(key("g"), 0, false, secs(1)), Admission::Queued);
        assert_eq!(q.pop(secs(1)), Some(key("g")));
        q.done(&key("g"), Outcome::Scheduled, secs(1));
        assert!(q.is_empty());
    }
}
