//! The search over the nodes: for each node, the first rule that keeps it, or the move
//! Karpenter's single-node methods would find for it (Emptiness for an empty node, else
//! single-node consolidation: delete when its pods fit elsewhere, else replace with one
//! cheaper node). Every move is allowed on its own now; Karpenter takes them one command at
//! a time, and the invariant only blames one that stays available.

use std::collections::BTreeMap;

use super::balanced::move_passes;
use super::host::{Host, PoolRules};
use super::packing::fits_elsewhere;
use super::replacement::Cheaper;
use super::{Assessment, Move, MoveKind};

/// The moves over `hosts` (in order) under each pool's `pools` rules; `cheaper` gives the
/// replacement options of a host.
pub fn search(hosts: &[Host], pools: &BTreeMap<String, PoolRules>, cheaper: impl Fn(&Host) -> Cheaper) -> Assessment {
    let mut out = Assessment::default();
    for (i, host) in hosts.iter().enumerate() {
        let mut keep = |rule: String| out.kept.push(host.kept(&rule));
        if let Some(rule) = &host.blocked {
            keep(rule.clone());
            continue;
        }
        let Some((pool_name, pool)) = host.nodepool.as_ref().and_then(|n| pools.get_key_value(n)) else {
            keep("its NodePool does not exist".into());
            continue;
        };
        let make = |kind: MoveKind, saving: f64| Move {
            kind,
            nodes: vec![host.name.clone()],
            nodepool: pool_name.clone(),
            price: host.price,
            saving_per_hour: saving,
        };
        if host.is_empty() {
            if pool.empty_budget == 0 {
                keep("its NodePool's disruption budget allows no Empty disruption now".into());
            } else {
                out.moves.push(make(MoveKind::DeleteEmpty, host.price));
            }
            continue;
        }
        if pool.when_empty {
            keep("its NodePool consolidates only empty nodes (consolidationPolicy: WhenEmpty)".into());
            continue;
        }
        if pool.underutilized_budget == 0 {
            keep("its NodePool's disruption budget allows no Underutilized disruption now".into());
            continue;
        }
        if let Some(rule) = &host.unjudged {
            keep(rule.clone());
            continue;
        }
        if !move_passes(&[host], host.price, pools) {
            keep("its NodePool is Balanced and even deleting it scores below 1/k".into());
            continue;
        }
        let others: Vec<&Host> =
            hosts.iter().enumerate().filter(|(j, h)| *j != i && h.target).map(|(_, h)| h).collect();
        if fits_elsewhere(&host.movable, &others) {
            out.moves.push(make(MoveKind::Delete, host.price));
            continue;
        }
        match cheaper(host) {
            Cheaper::Options(options) => {
                let worst = options.iter().map(|o| o.1).fold(0.0, f64::max);
                // Upstream saves the price less the cheapest offering of its cheapest option:
                // at least the price less the least worst launch price among the options.
                let least = options.iter().map(|o| o.1).fold(f64::INFINITY, f64::min);
                if !move_passes(&[host], host.price - least, pools) {
                    keep("its NodePool is Balanced and a cheaper replacement scores below 1/k".into());
                    continue;
                }
                let kind = MoveKind::Replace { cheapest_type: options[0].0.clone(), options: options.len() };
                out.moves.push(make(kind, host.price - worst));
            }
            Cheaper::None(rule) => keep(format!("{rule}, and its pods fit on no other node")),
        }
    }
    out
}
