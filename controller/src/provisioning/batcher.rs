//! The provisioning batch window (core batcher.go): after the first trigger, keep waiting while
//! new triggers arrive within the idle window (1 s), but never longer than the max window (10 s),
//! so a burst of pending pods is scheduled together.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

/// Tracks triggers (pod UIDs and disrupted nodes) and decides when a window closes.
#[derive(Debug)]
pub struct Batcher {
    idle: Duration,
    max: Duration,
    /// Triggers already counted; a trigger fires again only after a requeue.
    seen: BTreeSet<String>,
    window: Option<(Instant, Instant)>,
}

/// A pending trigger is re-fired this often while it stays provisionable (core requeue 10 s).
pub const REQUEUE: Duration = Duration::from_secs(10);

impl Batcher {
    /// A batcher with the given idle and max windows.
    pub fn new(idle: Duration, max: Duration) -> Self {
        Self { idle, max, seen: BTreeSet::new(), window: None }
    }

    /// Offers the current trigger set at `now`; returns whether something new arrived.
    pub fn offer(&mut self, triggers: &BTreeSet<String>, now: Instant) -> bool {
        let fresh = triggers.iter().any(|t| !self.seen.contains(t));
        self.seen.retain(|t| triggers.contains(t));
        self.seen.extend(triggers.iter().cloned());
        if fresh {
            self.window = Some(match self.window {
                None => (now, now),
                Some((start, _)) => (start, now),
            });
        }
        fresh
    }

    /// Re-arms every trigger (the 10 s requeue): pods still pending fire again.
    pub fn requeue(&mut self) {
        self.seen.clear();
    }

    /// When the open window closes, if one is open.
    pub fn deadline(&self) -> Option<Instant> {
        self.window.map(|(start, last)| (last + self.idle).min(start + self.max))
    }

    /// Closes the window if its deadline has passed; returns whether a batch is due.
    pub fn take_due(&mut self, now: Instant) -> bool {
        if self.deadline().is_some_and(|d| d <= now) {
            self.window = None;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn idle_window_extends_up_to_the_max() {
        let mut b = Batcher::new(Duration::from_secs(1), Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(b.offer(&set(&["a"]), t0));
        assert_eq!(b.deadline(), Some(t0 + Duration::from_secs(1)));
        // A new pod every 0.9 s keeps the window open, capped at 10 s.
        let mut pods = vec!["a".to_string()];
        for i in 1..20u32 {
            pods.push(format!("p{i}"));
            let now = t0 + Duration::from_millis(900) * i;
            let refs: Vec<&str> = pods.iter().map(String::as_str).collect();
            b.offer(&set(&refs), now);
        }
        assert_eq!(b.deadline(), Some(t0 + Duration::from_secs(10)));
        assert!(!b.take_due(t0 + Duration::from_millis(9_999)));
        assert!(b.take_due(t0 + Duration::from_secs(10)));
        assert_eq!(b.deadline(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn seen_triggers_do_not_reopen_until_requeued() {
        let mut b = Batcher::new(Duration::from_secs(1), Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(b.offer(&set(&["a"]), t0));
        assert!(b.take_due(t0 + Duration::from_secs(1)));
        assert!(!b.offer(&set(&["a"]), t0 + Duration::from_secs(2)));
        b.requeue();
        assert!(b.offer(&set(&["a"]), t0 + Duration::from_secs(12)));
    }
}
