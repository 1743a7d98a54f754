//! The `Balanced` consolidation policy's gate, from upstream's source (core HEAD
//! `pkg/controllers/disruption/balanced.go`; no feature gate, `apis/v1/nodepool.go:165-177`):
//! a consolidation move out of a Balanced NodePool happens only when
//! `(savings / pool cost) / (disruption / pool disruption) ≥ 1/k`, k = 2
//! (`ScoreMove` l. 105-121, `ScoreResult.Approved` in `types.go`). Savings across pools
//! are split by the candidates' share of the source price (`EvaluateBalancedMove`
//! l. 128-186); every Balanced pool of the move must approve. Single-node consolidation
//! skips a candidate whose outright delete cannot pass (`CanPassThreshold` l. 285-299).
//! Emptiness is never scored.
//!
//! The oracle claims a move only when it *surely* passes: it scores with the least the
//! move can save (a replacement's worst launch price, where upstream's
//! `Command.EstimatedSavings`, `types.go:364-385`, reads the cheapest) and with the least
//! the pool's disruption total can be (every node's reschedulable pods only; upstream
//! counts a non-candidate's static pods too, `state/statenode.go:427-437`), both of which
//! only lower the score.

use std::collections::BTreeMap;

pub use super::host::Totals;
use super::host::{Host, PoolRules};

/// Upstream's `BalancedK` (`apis/v1/nodepool.go:172`).
pub const K: f64 = 2.0;

/// `ScoreMove(...).Approved()`: zero totals score 0 (rejected); nothing saved scores 0;
/// no disruption scores +∞.
pub fn approved(savings: f64, disruption: f64, totals: Totals) -> bool {
    if totals.cost <= 0.0 || totals.disruption <= 0.0 {
        return false;
    }
    let savings_fraction = savings / totals.cost;
    let disruption_fraction = disruption / totals.disruption;
    let score = if savings_fraction <= 0.0 {
        0.0
    } else if disruption_fraction == 0.0 {
        f64::INFINITY
    } else {
        savings_fraction / disruption_fraction
    };
    score >= 1.0 / K
}

/// Whether every Balanced pool among `nodes` approves a move saving at least `savings`.
pub fn move_passes(nodes: &[&Host], savings: f64, pools: &BTreeMap<String, PoolRules>) -> bool {
    let mut by_pool: BTreeMap<&str, Vec<&Host>> = BTreeMap::new();
    for h in nodes {
        by_pool.entry(h.nodepool.as_deref().unwrap_or_default()).or_default().push(h);
    }
    let source: f64 = nodes.iter().map(|h| h.price).sum();
    by_pool.iter().all(|(pool, members)| {
        let Some(rules) = pools.get(*pool).filter(|r| r.balanced) else { return true };
        let pool_source: f64 = members.iter().map(|h| h.price).sum();
        let share = if source > 0.0 && by_pool.len() > 1 { savings * (pool_source / source) } else { savings };
        let disruption: f64 = members.iter().map(|h| h.reschedule_cost).sum();
        approved(share, disruption, rules.totals)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(cost: f64, disruption: f64) -> Totals {
        Totals { cost, disruption }
    }

    #[test]
    fn score_move_table_from_upstream() {
        // balanced_scoring_test.go DescribeTable "should compute correct scores" (100/100).
        let t = totals(100.0, 100.0);
        assert!(approved(20.0, 5.0, t), "high savings low disruption: 4.0");
        assert!(approved(10.0, 10.0, t), "equal fractions: 1.0");
        assert!(!approved(5.0, 50.0, t), "low savings high disruption: 0.1");
        assert!(approved(10.0, 0.0, t), "zero disruption cost: +Inf");
        assert!(!approved(0.0, 10.0, t), "zero savings");
        assert!(!approved(-5.0, 10.0, t), "negative savings");
        assert!(!approved(10.0, 1.0, totals(0.0, 10.0)), "missing totals score 0");
    }

    #[test]
    fn the_threshold_is_half() {
        let t = totals(10.0, 10.0);
        assert!(approved(1.0, 2.0, t), "0.1 / 0.2 = 0.5 passes");
        assert!(!approved(1.0, 2.0001, t));
    }
}
