//! `untakenMoves`: a consolidation move Karpenter's own rules allow
//! ([`crate::oracle::moves`]) that stays available, unblocked, for longer than upstream
//! needs to find and validate it is a violation naming the nodes, the move and what it
//! saves per hour.
//!
//! A move is available only once its node is past `consolidateAfter` (and the 20 s
//! nomination window) since its last pod event, so the allowance counted from then is the
//! validation delay (15 s, `commandValidationDelay` in core
//! `pkg/controllers/disruption/consolidation.go:45`) plus `slack` (default 2 min: the
//! disruption loop's 10 s poll, one method acting per loop, and the oracle's sampling).
//! While faults are live nothing is judged, and a move open when they heal is timed from
//! the heal: an unreachable API server legitimately stops consolidation.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{Observation, Phase, Violation, format_duration};
use crate::oracle::discovered_capacity::DiscoveredCapacity;
use crate::oracle::moves::{Assessment, ConsolidationClock, Move, MoveInputs, Settings, VALIDATION_DELAY, assess};
use crate::oracle::offering_table::OfferingTable;
use crate::scenario::invariants::UntakenMoves as Config;

/// The invariant's name.
pub const NAME: &str = "untakenMoves";

/// The tracker.
pub struct UntakenMoves {
    config: Config,
    clock: ConsolidationClock,
    /// Which types Karpenter surely plans with a registered node's memory.
    discovered: DiscoveredCapacity,
    /// The world's offerings, listed once.
    offerings: OfferingTable,
    /// Open moves by key: when each was first seen available (or faults healed).
    open: BTreeMap<String, Duration>,
    reported: BTreeSet<String>,
    next_check: Duration,
}

impl UntakenMoves {
    /// With the run's thresholds.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            clock: ConsolidationClock::default(),
            discovered: DiscoveredCapacity::default(),
            offerings: OfferingTable::default(),
            open: BTreeMap::new(),
            reported: BTreeSet::new(),
            next_check: Duration::ZERO,
        }
    }

    /// The `consolidateAfter` clock so far.
    pub fn clock(&self) -> &ConsolidationClock {
        &self.clock
    }

    /// The discovered-capacity model so far.
    pub fn discovered(&self) -> &DiscoveredCapacity {
        &self.discovered
    }

    /// The world's offerings, listed once.
    pub fn offerings(&self) -> &OfferingTable {
        &self.offerings
    }

    /// Looks at the world as `seen` in `phase` (faults heal at `healed_at`).
    pub fn tick(
        &mut self,
        seen: &Observation<'_>,
        inputs: &MoveInputs,
        spot_to_spot: bool,
        phase: Phase,
        healed_at: Option<Duration>,
        out: &mut Vec<Violation>,
    ) {
        let now = seen.view.now;
        self.clock.observe(seen.view, seen.pods);
        self.discovered.observe(now, &inputs.discovery);
        if now < self.next_check {
            return;
        }
        self.next_check = now + self.config.check_every.0;
        let (Some(healed), false) = (healed_at, phase == Phase::Faults) else {
            self.open.clear();
            return;
        };
        let settings = Settings {
            inputs,
            clock: &self.clock,
            spot_to_spot,
            offerings: &self.offerings,
            discovered: &self.discovered,
        };
        let found = assess(seen.view, seen.pods, seen.cloud, &settings);
        self.judge(&found, now, healed, seen.view.trace_position, out);
    }

    /// A fresh look at the end of the run: the moves open now, each with when it opened
    /// (never before faults healed); none while faults are live.
    pub fn open_at_end(
        &mut self,
        seen: &Observation<'_>,
        spot_to_spot: bool,
        phase: Phase,
        healed_at: Option<Duration>,
    ) -> Vec<(Move, Duration)> {
        let now = seen.view.now;
        self.clock.observe(seen.view, seen.pods);
        self.discovered.observe(now, &seen.inputs.discovery);
        let (Some(healed), false) = (healed_at, phase == Phase::Faults) else { return Vec::new() };
        let settings = Settings {
            inputs: seen.inputs,
            clock: &self.clock,
            spot_to_spot,
            offerings: &self.offerings,
            discovered: &self.discovered,
        };
        let found = assess(seen.view, seen.pods, seen.cloud, &settings);
        let keys: BTreeSet<String> = found.moves.iter().map(|m| m.key()).collect();
        self.open.retain(|k, _| keys.contains(k));
        found
            .moves
            .into_iter()
            .map(|m| {
                let since = *self.open.entry(m.key()).or_insert(now.max(healed));
                (m, since)
            })
            .collect()
    }

    /// How long a move may stay open: upstream's validation delay plus the slack.
    pub fn allowance(&self) -> Duration {
        VALIDATION_DELAY + self.config.slack.0
    }

    /// Opens the moves in `found`, closes the rest, and blames those open too long.
    fn judge(
        &mut self,
        found: &Assessment,
        now: Duration,
        healed: Duration,
        trace_position: u64,
        out: &mut Vec<Violation>,
    ) {
        let keys: BTreeSet<String> = found.moves.iter().map(|m| m.key()).collect();
        self.open.retain(|k, _| keys.contains(k));
        let allowance = self.allowance();
        for m in &found.moves {
            let key = m.key();
            let since = *self.open.entry(key.clone()).or_insert(now.max(healed));
            if now.saturating_sub(since) <= allowance || self.reported.contains(&key) {
                continue;
            }
            self.reported.insert(key);
            let mut objects: Vec<String> = m.nodes.iter().map(|n| format!("Node {n}")).collect();
            objects.push(format!("NodePool {}", m.nodepool));
            out.push(Violation {
                invariant: NAME.into(),
                at: now,
                objects,
                message: format!(
                    "{} has been available since {} and not taken (allowed: validation {}s + slack {})",
                    m.describe(),
                    format_duration(since),
                    VALIDATION_DELAY.as_secs(),
                    format_duration(self.config.slack.0)
                ),
                trace_position,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::moves::MoveKind;
    use dovetail_world::SimDuration;

    fn found(nodes: &[&str]) -> Assessment {
        Assessment {
            moves: nodes
                .iter()
                .map(|n| Move {
                    kind: MoveKind::DeleteEmpty,
                    nodes: vec![n.to_string()],
                    nodepool: "default".into(),
                    price: 0.1,
                    saving_per_hour: 0.1,
                })
                .collect(),
            kept: Vec::new(),
        }
    }

    #[test]
    fn a_move_open_longer_than_validation_and_slack_is_blamed_once() {
        let mut inv = UntakenMoves::new(Config { slack: SimDuration(Duration::from_secs(60)), ..Config::default() });
        let mut out = Vec::new();
        let s = Duration::from_secs;
        inv.judge(&found(&["a", "b"]), s(100), s(0), 1, &mut out);
        inv.judge(&found(&["a", "b"]), s(170), s(0), 2, &mut out);
        assert!(out.is_empty(), "70 s is within 15 s + 60 s");
        // b is taken (or blocked) for a moment: its clock starts again.
        inv.judge(&found(&["a"]), s(175), s(0), 3, &mut out);
        inv.judge(&found(&["a", "b"]), s(180), s(0), 4, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].objects, ["Node a", "NodePool default"]);
        assert!(out[0].message.contains("delete empty node a"), "{}", out[0].message);
        inv.judge(&found(&["a", "b"]), s(400), s(0), 5, &mut out);
        assert_eq!(out.len(), 2, "a is not blamed twice; b is blamed once it has been open long enough");
        assert_eq!(out[1].objects[0], "Node b");
    }

    #[test]
    fn a_move_open_before_faults_healed_is_timed_from_the_heal() {
        let mut inv = UntakenMoves::new(Config::default());
        let mut out = Vec::new();
        let s = Duration::from_secs;
        inv.judge(&found(&["a"]), s(10), s(500), 1, &mut out);
        inv.judge(&found(&["a"]), s(600), s(500), 2, &mut out);
        assert!(out.is_empty(), "100 s after the heal");
        inv.judge(&found(&["a"]), s(700), s(500), 3, &mut out);
        assert_eq!(out.len(), 1);
    }
}
