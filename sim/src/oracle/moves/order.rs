//! The order upstream's consolidation tries candidates in: by *savings ratio*, highest
//! first (core HEAD `pkg/controllers/disruption/consolidation.go:138-154` `sortCandidates`,
//! used by emptiness, multi-node and single-node consolidation since the Balanced policy,
//! kubernetes-sigs/karpenter#2962). A candidate's savings ratio is its price over its
//! `RescheduleDisruptionCost` (`types.go:145-146` `SavingsRatio`): `1 +` the positive
//! eviction costs of the pods it must reschedule (`types.go:136-143`, see
//! [`super::host::reschedule_cost`]). Up to v1.13 the order was `DisruptionCost` ascending.
//!
//! Upstream sorts with Go's `sort.Slice`, which is not stable: candidates whose ratios are
//! equal come out in an order nobody outside can know. Unlike `DisruptionCost`, the ratio
//! does not age (no `expireAfter` factor), so only equal ratios (within float noise) are
//! *tied*, and the oracle considers every order of each tied group: a multi-node move is
//! claimed only when the search finds one in all of them.

/// Most candidate orders the oracle walks; past it, it claims nothing.
pub const MAX_ORDERS: usize = 720;

/// One candidate's savings ratio: price (USD per hour) over reschedule disruption cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio(pub f64);

/// Whether upstream could put `a` and `b` either way round: equal within float noise.
fn tied(a: Ratio, b: Ratio) -> bool {
    (a.0 - b.0).abs() <= 1e-9 * (1.0 + a.0.abs() + b.0.abs())
}

/// Every order (of indices into `ratios`) upstream's sort could produce, highest ratio
/// first; `None` when there are more than [`MAX_ORDERS`].
pub fn orders(ratios: &[Ratio]) -> Option<Vec<Vec<usize>>> {
    let mut sorted: Vec<usize> = (0..ratios.len()).collect();
    sorted.sort_by(|&a, &b| ratios[b].0.total_cmp(&ratios[a].0).then(a.cmp(&b)));
    // Groups of neighbours chained by ties (a tie with any member joins the group).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in sorted {
        match groups.last_mut() {
            Some(g) if g.iter().any(|&j| tied(ratios[i], ratios[j])) => g.push(i),
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

    #[test]
    fn distinct_ratios_give_one_order_highest_first() {
        assert_eq!(orders(&[Ratio(3.0), Ratio(1.0), Ratio(2.0)]), Some(vec![vec![0, 2, 1]]));
    }

    #[test]
    fn equal_ratios_give_every_order_of_the_tie() {
        let all = orders(&[Ratio(2.0), Ratio(1.0), Ratio(2.0)]).expect("few");
        assert_eq!(all, vec![vec![0, 2, 1], vec![2, 0, 1]]);
    }

    #[test]
    fn a_cheap_busy_node_goes_after_a_dear_idle_one() {
        // balanced_scoring_test.go "Candidate.SavingsRatio": 4.84 with no pods is 4.84,
        // with three default-cost pods 4.84 / 4 = 1.21.
        assert_eq!(orders(&[Ratio(4.84 / 4.0), Ratio(4.84)]), Some(vec![vec![1, 0]]));
    }

    #[test]
    fn too_many_orders_claim_nothing() {
        assert!(orders(&[Ratio(1.0); 7]).is_none(), "7! = 5040 orders");
        assert_eq!(orders(&[Ratio(1.0); 6]).map(|o| o.len()), Some(720));
    }
}
