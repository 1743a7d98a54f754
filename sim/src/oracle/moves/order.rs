//! The order upstream's multi-node consolidation tries candidates in: by `DisruptionCost`,
//! lowest first (core v1.13.0 `disruption/consolidation.go:126` `sortCandidates`; v1.14
//! sorts by savings ratio instead, an optional extra this oracle does not claim for).
//!
//! Upstream sorts with Go's `sort.Slice`, which is not stable: candidates whose costs are
//! equal come out in an order nobody outside can know. A cost also falls as its node ages
//! towards `expireAfter`, so two costs this oracle reads a few seconds before or after
//! upstream's loop may compare the other way. Candidates that close are *tied*, and the
//! oracle considers every order of each tied group: a multi-node move is claimed only when
//! the search finds one in all of them.

use std::time::Duration;

/// How far apart in time the oracle's look and upstream's loop may be: the disruption
/// loop's 10 s poll, the 15 s validation, the oracle's sampling, with room to spare.
pub const ORDER_WINDOW: Duration = Duration::from_secs(60);

/// Most candidate orders the oracle walks; past it, it claims nothing.
pub const MAX_ORDERS: usize = 720;

/// One candidate's cost now and how fast it falls (per second).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// `DisruptionCost` now.
    pub value: f64,
    /// Its fall per second (see [`super::host::DisruptionCost::rate`]).
    pub rate: f64,
}

/// Whether upstream could put `a` and `b` either way round: their costs are within what
/// the [`ORDER_WINDOW`] (and a second of creation-timestamp rounding) can move them, or
/// within float noise.
fn tied(a: Cost, b: Cost) -> bool {
    let drift = (ORDER_WINDOW.as_secs_f64() + 1.0) * (a.rate + b.rate);
    (a.value - b.value).abs() <= drift + 1e-9 * (1.0 + a.value.abs() + b.value.abs())
}

/// Every order (of indices into `costs`) upstream's sort could produce, lowest cost first;
/// `None` when there are more than [`MAX_ORDERS`].
pub fn orders(costs: &[Cost]) -> Option<Vec<Vec<usize>>> {
    let mut sorted: Vec<usize> = (0..costs.len()).collect();
    sorted.sort_by(|&a, &b| costs[a].value.total_cmp(&costs[b].value).then(a.cmp(&b)));
    // Groups of neighbours chained by ties (a tie with either end joins the group).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in sorted {
        match groups.last_mut() {
            Some(g) if g.iter().any(|&j| tied(costs[i], costs[j])) => g.push(i),
            _ => groups.push(vec![i]),
        }
    }
    let mut count: usize = 1;
    for g in &groups {
        for k in 2..=g.len() {
            count = count.checked_mul(k).filter(|c| *c <= MAX_ORDERS)?;
        }
    }
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    for g in &groups {
        let perms = permutations(g);
        out = out
            .iter()
            .flat_map(|prefix| {
                perms.iter().map(move |p| {
                    let mut o = prefix.clone();
                    o.extend(p);
                    o
                })
            })
            .collect();
    }
    Some(out)
}

/// Every permutation of `items`, the given order first.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        let rest: Vec<usize> = items.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, &x)| x).collect();
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            out.push(tail);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(value: f64, rate: f64) -> Cost {
        Cost { value, rate }
    }

    #[test]
    fn distinct_costs_give_one_order_lowest_first() {
        assert_eq!(orders(&[c(3.0, 0.0), c(1.0, 0.0), c(2.0, 0.0)]), Some(vec![vec![1, 2, 0]]));
    }

    #[test]
    fn equal_costs_give_every_order_of_the_tie() {
        let all = orders(&[c(2.0, 0.0), c(1.0, 0.0), c(2.0, 0.0)]).expect("few");
        assert_eq!(all, vec![vec![1, 0, 2], vec![1, 2, 0]]);
    }

    #[test]
    fn costs_that_ageing_can_swap_within_the_window_are_tied() {
        // 2 pods, expireAfter 1 h: the cost falls by 2/3600 per second, 0.068 over 61 s.
        let rate = 2.0 / 3600.0;
        assert_eq!(orders(&[c(1.95, rate), c(1.90, rate)]).map(|o| o.len()), Some(2));
        assert_eq!(orders(&[c(1.5, rate), c(1.9, rate)]), Some(vec![vec![0, 1]]));
    }

    #[test]
    fn too_many_orders_claim_nothing() {
        assert!(orders(&[c(1.0, 0.0); 7]).is_none(), "7! = 5040 orders");
        assert_eq!(orders(&[c(1.0, 0.0); 6]).map(|o| o.len()), Some(720));
    }
}
