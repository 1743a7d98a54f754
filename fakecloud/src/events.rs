//! The future: a time-ordered queue of things the cloud will do on its own.

use std::collections::BTreeMap;
use std::time::Duration;

/// Something scheduled to happen at a simulated time.
#[derive(Debug, Clone, PartialEq)]
pub enum CloudEvent {
    /// A pending instance becomes running.
    LaunchComplete(String),
    /// A shutting-down instance becomes terminated.
    ShutdownComplete(String),
    /// A stopping instance becomes stopped.
    StopComplete(String),
    /// A terminated instance disappears from DescribeInstances.
    Purge(String),
    /// EC2 recommends rebalancing this spot instance.
    Rebalance(String),
    /// The two-minute spot interruption warning.
    SpotWarning(String),
    /// The spot instance is reclaimed (exactly `spot_notice` after the warning).
    Reclaim(String),
    /// A scripted spot storm: interrupt a share of matching spot instances.
    Storm(crate::faults::SpotStorm),
    /// EC2 begins reclaiming a capacity block's instances (30 minutes before its end).
    BlockReclaim(String),
    /// EC2 warns that a capacity block ends (40 minutes before its end).
    BlockWarning(String),
    /// An on-demand capacity reservation reaches its end date: its instances leave it.
    ReservationEnd(String),
    /// A zone outage begins.
    ZoneOutageStart(String),
    /// A zone outage ends.
    ZoneOutageEnd(String),
    /// An AWS Health scheduled-change notice for an instance.
    ScheduledChange {
        /// The instance.
        instance_id: String,
        /// When the maintenance would start.
        start: Duration,
    },
}

/// Events ordered by (time, insertion sequence): equal times run in the order scheduled.
#[derive(Debug, Clone, Default)]
pub struct EventQueue {
    events: BTreeMap<(Duration, u64), CloudEvent>,
    seq: u64,
}

impl EventQueue {
    /// Schedules `event` at `at`.
    pub fn schedule(&mut self, at: Duration, event: CloudEvent) {
        self.seq += 1;
        self.events.insert((at, self.seq), event);
    }

    /// The time of the earliest event.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.events.keys().next().map(|(t, _)| *t)
    }

    /// Removes and returns the earliest event if it is due by `now`.
    pub fn pop_due(&mut self, now: Duration) -> Option<(Duration, CloudEvent)> {
        let (&(t, seq), _) = self.events.iter().next()?;
        if t > now {
            return None;
        }
        self.events.remove(&(t, seq)).map(|e| (t, e))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.schedule(Duration::from_secs(5), CloudEvent::Purge("b".into()));
        q.schedule(Duration::from_secs(1), CloudEvent::Purge("a".into()));
        q.schedule(Duration::from_secs(5), CloudEvent::Purge("c".into()));
        assert_eq!(q.next_deadline(), Some(Duration::from_secs(1)));
        assert!(q.pop_due(Duration::ZERO).is_none());
        let order: Vec<_> = std::iter::from_fn(|| q.pop_due(Duration::from_secs(10))).map(|(_, e)| e).collect();
        assert_eq!(
            order,
            vec![CloudEvent::Purge("a".into()), CloudEvent::Purge("b".into()), CloudEvent::Purge("c".into())]
        );
        assert!(q.is_empty());
    }
}
