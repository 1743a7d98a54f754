//! Multi-node consolidation as upstream searches for it (core v1.13.0
//! `pkg/controllers/disruption/multinodeconsolidation.go`, with HEAD's savings-ratio order
//! and Balanced gate), claimed only where that search surely finds a command.
//!
//! Upstream sorts the consolidation candidates ([`super::order`]), drops, in order, those
//! whose NodePool has no `Underutilized` budget left (each kept one uses one up,
//! `ComputeCommand` lines 58–75), keeps at most 100 (line 79), and binary-searches the
//! prefix length (`firstNConsolidationOption`, lines 117–170): `min = 1`, `max = n − 1`
//! (or 100), and each probe `candidates[0..=mid]` is *valid* when `computeConsolidation`
//! gives a delete, or a replacement by one node whose options survive `filterOutSameType`;
//! a valid probe is kept and the search goes right, an invalid one sends it left. At HEAD
//! a valid probe a Balanced pool rejects counts as invalid (lines 165-173), so the probe
//! is surely valid only when it surely passes [`super::balanced`].
//!
//! The search is greedy, so this oracle does not claim "some subset could go": it walks
//! the probes upstream makes when every probe fails — prefix lengths `mid + 1` for
//! `mid = (1 + max) / 2`, then `mid / 2`, … down to 2 — and claims a move when one of them
//! is *surely* valid. That is sound: upstream follows exactly those probes until one is
//! valid, and the first valid probe it meets makes its answer non-empty. The move named is
//! that prefix; upstream may take a longer one, which removes these nodes too.
//!
//! A probe is surely valid (all its candidates judged, see [`super::host`]) when
//! - its pods fit on the other nodes (first-fit decreasing, [`super::packing`]): a delete;
//! - or one node holds them all, from the candidates' one NodePool, which outweighs every
//!   other pool (so the provisioner's new NodeClaim is that pool's), with a worst launch
//!   price strictly below the candidates' summed price (`computeConsolidation`,
//!   `consolidation.go:192`), spot only when every candidate is spot and the gate is on
//!   (no 15-types rule for several nodes, `consolidation.go:297`), and strictly below
//!   every candidate whose own instance type could be among upstream's options
//!   (`filterOutSameType`, `multinodeconsolidation.go:187`: the cheapest candidate of a
//!   type the options include caps their price). A candidate's type can be among them only
//!   when it can hold, with the DaemonSet overhead, the pods no other node has room for.
//!
//! Nothing is claimed when upstream's candidate list is not known: a node only the
//! `consolidateAfter` clock keeps (upstream's clock may count it consolidatable already),
//! an empty candidate (v1.13 lists it, v1.14 leaves it to Emptiness), or too many tied
//! orders. The search is assumed to finish within upstream's 1 min timeout (line 37): the
//! simulated controller computes in no simulated time.

use std::collections::BTreeMap;

use super::balanced::move_passes;
use super::host::{Host, Movable, PoolRules};
use super::order::{Ratio, orders};
use super::packing::fits_elsewhere;
use super::replacement::{Cheaper, Group, Replacements};
use super::{Move, MoveKind};

/// Upstream considers at most this many candidates (`maxParallel`, line 79).
pub const MAX_CANDIDATES: usize = 100;

/// The prefix lengths upstream probes, in order, when every probe fails, for `n`
/// candidates within budget (empty below 2).
pub fn failing_probes(n: usize) -> Vec<usize> {
    if n < 2 {
        return Vec::new();
    }
    let mut max = if n <= MAX_CANDIDATES { n - 1 } else { MAX_CANDIDATES };
    let mut out = Vec::new();
    while max >= 1 {
        // Upstream's `mid := (min + max) / 2` with `min` still 1.
        let mid = max.div_ceil(2);
        out.push(mid + 1);
        max = mid - 1;
    }
    out
}

/// The multi-node move upstream's search surely finds among `hosts` now, if any;
/// `replacements` gives the pools' offerings (built only when a probe needs them).
pub fn multi_node_move<'r>(
    hosts: &[Host],
    pools: &BTreeMap<String, PoolRules>,
    spot_to_spot: bool,
    replacements: impl Fn() -> &'r Replacements<'r>,
) -> Option<Move> {
    let mut candidates: Vec<&Host> = Vec::new();
    for h in hosts {
        let Some(pool) = h.nodepool.as_ref().and_then(|n| pools.get(n)) else { continue };
        if pool.when_empty {
            continue;
        }
        if h.waiting {
            return None;
        }
        if h.blocked.is_some() {
            continue;
        }
        if h.is_empty() {
            return None;
        }
        candidates.push(h);
    }
    let ratios: Vec<Ratio> = candidates.iter().map(|h| Ratio(h.savings_ratio())).collect();
    let mut verdicts: BTreeMap<Vec<&str>, Option<Move>> = BTreeMap::new();
    let mut claim = None;
    for order in orders(&ratios)? {
        let mut budget: BTreeMap<&str, usize> =
            pools.iter().map(|(name, p)| (name.as_str(), p.underutilized_budget)).collect();
        let within: Vec<&Host> = order
            .iter()
            .map(|&i| candidates[i])
            .filter(|h| {
                let left = h.nodepool.as_deref().and_then(|n| budget.get_mut(n));
                left.is_some_and(|l| {
                    *l > 0 && {
                        *l -= 1;
                        true
                    }
                })
            })
            .collect();
        let found = failing_probes(within.len()).into_iter().find_map(|len| {
            let prefix = &within[..len];
            let mut key: Vec<&str> = prefix.iter().map(|h| h.name.as_str()).collect();
            key.sort_unstable();
            verdicts
                .entry(key)
                .or_insert_with(|| surely_valid(prefix, hosts, pools, spot_to_spot, &replacements))
                .clone()
        });
        // Every order must find one; the first order's names the move.
        claim = Some(claim.unwrap_or(found?));
    }
    claim
}

/// The move `prefix` makes when upstream's `computeConsolidation` surely accepts it.
fn surely_valid<'r>(
    prefix: &[&Host],
    hosts: &[Host],
    pools: &BTreeMap<String, PoolRules>,
    spot_to_spot: bool,
    replacements: &impl Fn() -> &'r Replacements<'r>,
) -> Option<Move> {
    if prefix.iter().any(|h| h.unjudged.is_some()) {
        return None;
    }
    let is_in = |h: &Host| prefix.iter().any(|p| p.name == h.name);
    let others: Vec<&Host> = hosts.iter().filter(|h| h.target && !is_in(h)).collect();
    let mut pods: Vec<&Movable> = prefix.iter().flat_map(|h| &h.movable).collect();
    pods.sort_by(|a, b| {
        b.requests.cpu.total_cmp(&a.requests.cpu).then(b.requests.memory.total_cmp(&a.requests.memory))
    });
    let mut nodes: Vec<String> = prefix.iter().map(|h| h.name.clone()).collect();
    nodes.sort();
    let mut pool_names: Vec<&str> = prefix.iter().filter_map(|h| h.nodepool.as_deref()).collect();
    pool_names.sort_unstable();
    pool_names.dedup();
    let price: f64 = prefix.iter().map(|h| h.price).sum();
    let make = |kind: MoveKind, saving: f64| Move {
        kind,
        nodes: nodes.clone(),
        nodepool: pool_names.join(","),
        price,
        saving_per_hour: saving,
    };
    let owned: Vec<Movable> = pods.iter().map(|p| (*p).clone()).collect();
    if fits_elsewhere(&owned, &others) {
        // A Balanced pool may reject the probe (multinodeconsolidation.go:165-173).
        return move_passes(prefix, price, pools).then(|| make(MoveKind::MultiDelete, price));
    }
    // One replacement node: only from the candidates' one pool, when it outweighs the rest.
    let [pool_name] = pool_names[..] else { return None };
    let weight = pools.get(pool_name)?.weight;
    if pools.iter().any(|(n, p)| n != pool_name && p.weight >= weight) {
        return None;
    }
    let replacements = replacements();
    let group = Group {
        nodepool: pool_name,
        pods: pods.clone(),
        below: price,
        all_spot: prefix.iter().all(|h| h.spot),
        single: false,
        replaced: prefix.iter().map(|h| h.instance_type.as_str()).collect(),
    };
    let Cheaper::Options(mut options) = replacements.options(&group, spot_to_spot) else { return None };
    // filterOutSameType: the pods no other node has room for go to the replacement, so a
    // candidate's type can be among its options only if it holds those.
    // (Judged without the pods' preferences: fewer stranded pods keep the bound loose.)
    let stranded: Vec<&Movable> = pods
        .iter()
        .copied()
        .filter(|p| !fits_elsewhere(&[Movable { preferred: None, ..(*p).clone() }], &others))
        .collect();
    let cap = prefix
        .iter()
        .filter(|h| replacements.could_offer(pool_name, &h.instance_type, &stranded, price))
        .map(|h| h.price)
        .fold(f64::INFINITY, f64::min);
    options.retain(|(_, worst)| *worst < cap);
    let (cheapest, _) = options.first()?;
    let worst = options.iter().map(|o| o.1).fold(0.0, f64::max);
    let least = options.iter().map(|o| o.1).fold(f64::INFINITY, f64::min);
    if !move_passes(prefix, price - least, pools) {
        return None;
    }
    let kind = MoveKind::MultiReplace { cheapest_type: cheapest.clone(), options: options.len() };
    Some(make(kind, price - worst))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_of_a_search_that_never_succeeds() {
        assert_eq!(failing_probes(1), Vec::<usize>::new());
        assert_eq!(failing_probes(2), vec![2]);
        assert_eq!(failing_probes(3), vec![2]);
        assert_eq!(failing_probes(4), vec![3, 2]);
        assert_eq!(failing_probes(10), vec![6, 3, 2]);
        // More than 100: max stays 100, so the first probe is candidates[0..=50].
        assert_eq!(failing_probes(150), vec![51, 26, 13, 7, 4, 2]);
    }
}
