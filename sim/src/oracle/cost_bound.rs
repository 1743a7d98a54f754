//! A provable lower bound on the hourly cost of hosting a set of pods: the LP relaxation
//! "buy fractional nodes of any allowed offering so that CPU, memory and pod slots cover
//! the demand", solved through its dual.
//!
//! For resource prices `y ≥ 0` with `capacity_i · y ≤ price_i` for every offering, any
//! feasible purchase costs at least `demand · y` (weak duality), so every such `y` is a
//! valid bound and the best one equals the LP optimum. Writing `y_j = w_j / demand_j` with
//! `w` on the simplex, the bound is `1 / max_i Σ_j w_j capacity_ij / (demand_j price_i)`;
//! the denominator is convex in `w`, so a grid search refined around its best point gets
//! within a fraction of a percent of the optimum while staying a true lower bound.

use super::resources::Resources;

/// One offering as the bound sees it: what a node gives pods, and what it costs per hour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Supply {
    /// Allocatable after reservations and DaemonSet overhead.
    pub capacity: Resources,
    /// USD per hour.
    pub price: f64,
}

/// The LP lower bound in USD per hour; `None` when no offering can cover a demanded
/// resource at all. Zero demand costs nothing.
pub fn lower_bound(supply: &[Supply], demand: &Resources) -> Option<f64> {
    let d = [demand.cpu, demand.memory, demand.pods];
    let dims: Vec<usize> = (0..3).filter(|&j| d[j] > 0.0).collect();
    if dims.is_empty() {
        return Some(0.0);
    }
    // c[i][k]: share of demand k one dollar of offering i covers.
    let c: Vec<Vec<f64>> = supply
        .iter()
        .filter(|s| s.price > 0.0)
        .map(|s| {
            let cap = [s.capacity.cpu, s.capacity.memory, s.capacity.pods];
            dims.iter().map(|&j| cap[j].max(0.0) / (d[j] * s.price)).collect()
        })
        .collect();
    for k in 0..dims.len() {
        if c.iter().all(|row| row[k] <= 0.0) {
            return None;
        }
    }
    let worst = |w: &[f64]| -> f64 {
        c.iter().map(|row| row.iter().zip(w).map(|(a, b)| a * b).sum::<f64>()).fold(0.0, f64::max)
    };
    let n = dims.len();
    let mut best_w = vec![1.0 / n as f64; n];
    let mut best = worst(&best_w);
    // Grid over the simplex.
    let steps = match n {
        1 => 1,
        2 => 256,
        _ => 48,
    };
    let consider = |w: Vec<f64>, best: &mut f64, best_w: &mut Vec<f64>| {
        let v = worst(&w);
        if v < *best {
            *best = v;
            *best_w = w;
        }
    };
    for a in 0..=steps {
        if n == 1 {
            break;
        }
        if n == 2 {
            let x = a as f64 / steps as f64;
            consider(vec![x, 1.0 - x], &mut best, &mut best_w);
            continue;
        }
        for b in 0..=(steps - a) {
            let (x, y) = (a as f64 / steps as f64, b as f64 / steps as f64);
            consider(vec![x, y, 1.0 - x - y], &mut best, &mut best_w);
        }
    }
    // Pattern search: move weight between pairs of resources with shrinking steps.
    let mut step = 1.0 / steps.max(1) as f64;
    while step > 1e-7 && n > 1 {
        let mut improved = false;
        for from in 0..n {
            for to in 0..n {
                if from == to || best_w[from] <= 0.0 {
                    continue;
                }
                let mut w = best_w.clone();
                let moved = step.min(w[from]);
                w[from] -= moved;
                w[to] += moved;
                let v = worst(&w);
                if v < best {
                    best = v;
                    best_w = w;
                    improved = true;
                }
            }
        }
        if !improved {
            step /= 2.0;
        }
    }
    (best > 0.0).then(|| 1.0 / best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supply(cpu: f64, mem: f64, pods: f64, price: f64) -> Supply {
        Supply { capacity: Resources { cpu, memory: mem, pods }, price }
    }

    /// The exact two-resource optimum: the best of single types and of every pair's
    /// intersection (an LP with two constraints has an optimal vertex with two columns).
    fn exact_two(types: &[(f64, f64, f64)], cpu: f64, mem: f64) -> f64 {
        let mut best = f64::MAX;
        for &(c, m, p) in types {
            best = best.min((cpu / c).max(mem / m) * p);
        }
        for (i, &(c1, m1, p1)) in types.iter().enumerate() {
            for &(c2, m2, p2) in &types[i + 1..] {
                let det = c1 * m2 - c2 * m1;
                if det.abs() < 1e-12 {
                    continue;
                }
                let x = (cpu * m2 - c2 * mem) / det;
                let y = (c1 * mem - cpu * m1) / det;
                if x >= 0.0 && y >= 0.0 {
                    best = best.min(x * p1 + y * p2);
                }
            }
        }
        best
    }

    #[test]
    fn matches_the_exact_two_resource_optimum_from_below() {
        // c-, m- and r-like shapes: 2, 4 and 8 GiB per vCPU.
        let types = [(2.0, 4.0, 0.085), (2.0, 8.0, 0.096), (2.0, 16.0, 0.126), (8.0, 32.0, 0.384), (4.0, 8.0, 0.17)];
        for (cpu, mem) in [(375.0, 1050.0), (100.0, 100.0), (10.0, 500.0), (1.0, 2.0)] {
            let s: Vec<Supply> = types.iter().map(|&(c, m, p)| supply(c, m, 0.0, p)).collect();
            let bound = lower_bound(&s, &Resources { cpu, memory: mem, pods: 0.0 }).expect("coverable");
            let exact = exact_two(&types, cpu, mem);
            assert!(bound <= exact * (1.0 + 1e-9), "{bound} above the optimum {exact}");
            assert!(bound >= exact * 0.999, "{bound} too far below the optimum {exact}");
        }
    }

    #[test]
    fn pod_slots_count_as_a_resource() {
        // 100 tiny pods: CPU and memory need one big node, but each node takes 10 pods.
        let s = [supply(16.0, 64.0, 10.0, 1.0)];
        let bound = lower_bound(&s, &Resources { cpu: 1.0, memory: 1.0, pods: 100.0 }).expect("coverable");
        assert!((bound - 10.0).abs() < 1e-6, "{bound}");
    }

    #[test]
    fn nothing_demanded_costs_nothing_and_uncoverable_demand_has_no_bound() {
        assert_eq!(lower_bound(&[], &Resources::default()), Some(0.0));
        assert_eq!(lower_bound(&[supply(1.0, 0.0, 1.0, 1.0)], &Resources { cpu: 1.0, memory: 1.0, pods: 1.0 }), None);
    }
}
