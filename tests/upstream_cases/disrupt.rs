//! Disruption cases: one loop of the disruption controller's decision
//! (`disruption::controller::decide`: Emptiness → Drift → multi-node → single-node
//! consolidation, budgets applied) over the scene, and the command it returns checked.

use dovetail_controller::disruption::controller::{LoopState, decide};
use dovetail_controller::disruption::input::DisruptionOptions;
use dovetail_controller::disruption::report::Report;
use dovetail_controller::provisioning::provisioner::ordered_pools;
use dovetail_controller::runtime::clock::{ManualClock, add};
use serde::Deserialize;

use super::claims::ClaimExpect;
use super::scene::{Defaults, Scene, epoch};

/// A disruption case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DisruptCase {
    /// Id.
    pub id: String,
    /// `Describe > Context > It` of the upstream test.
    pub upstream: String,
    /// Upstream file when not the file's default.
    #[serde(default)]
    pub source: Option<String>,
    /// The cluster.
    pub given: Scene,
    /// Seconds after the nodes' creation the decision is taken (default 3600).
    #[serde(default)]
    pub now_after_seconds: Option<u64>,
    /// Feature gate `SpotToSpotConsolidation`.
    #[serde(default)]
    pub spot_to_spot: bool,
    /// What must come out.
    pub expect: DisruptExpect,
}

/// Expectations of one disruption loop.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DisruptExpect {
    /// Whether a command comes out.
    pub action: bool,
    /// `Emptiness`, `Drift`, `MultiNode` or `SingleNode`.
    #[serde(default)]
    pub method: Option<String>,
    /// `delete` or `replace`.
    #[serde(default)]
    pub decision: Option<String>,
    /// Exactly these candidates.
    #[serde(default)]
    pub candidates: Option<Vec<String>>,
    /// This many candidates.
    #[serde(default)]
    pub candidate_count: Option<usize>,
    /// None of these nodes is a candidate.
    #[serde(default)]
    pub spared: Vec<String>,
    /// Number of replacements.
    #[serde(default)]
    pub replacements: Option<usize>,
    /// What every replacement must satisfy.
    #[serde(default)]
    pub replacement: Option<ClaimExpect>,
    /// Whether the loop remembers the cluster as consolidated (core `IsConsolidated`).
    #[serde(default)]
    pub marked_consolidated: Option<bool>,
}

/// Runs the case; `Err` lists every expectation that failed.
pub fn run(case: &DisruptCase, defaults: &Defaults) -> Result<Result<(), String>, String> {
    let mut built = case.given.build(defaults)?;
    let now = add(epoch(), std::time::Duration::from_secs(case.now_after_seconds.unwrap_or(3600)));
    for node in case.given.expanded_nodes().iter().filter(|n| n.nominated) {
        built.cluster.memory.nominated.insert(node.name.clone(), now);
    }
    // The pools `Disruption::pools` hands the decision: usable ones (not deleting, not static,
    // valid) in Karpenter's weight order.
    let order: Vec<Option<String>> =
        ordered_pools(&built.cluster.snapshot).iter().map(|p| p.metadata.name.clone()).collect();
    built.cluster.pools.retain(|p| {
        let pool = &p.node_pool;
        pool.metadata.deletion_timestamp.is_none() && !pool.spec.is_static() && pool.runtime_validate().is_ok()
    });
    built.cluster.pools.sort_by_key(|p| order.iter().position(|name| *name == p.node_pool.metadata.name));
    let options = DisruptionOptions { spot_to_spot: case.spot_to_spot, ..DisruptionOptions::default() };
    let input = built.cluster.input(now, options);
    let clock = ManualClock::new(now);
    let mut state = LoopState::default();
    let command = decide(&input, &clock, &mut state, &mut Report::default());
    let e = &case.expect;
    let mut failures = Vec::new();
    if let Some(wanted) = e.marked_consolidated
        && state.consolidated.is_some() != wanted
    {
        failures.push(format!("marked consolidated: {}, expected {wanted}", state.consolidated.is_some()));
    }
    let Some(command) = command else {
        if e.action {
            failures.push("no command, expected one".to_owned());
        }
        return Ok(if failures.is_empty() { Ok(()) } else { Err(failures.join("; ")) });
    };
    let mut names: Vec<String> = command.candidates.iter().map(|c| c.name.clone()).collect();
    names.sort();
    let summary = format!(
        "{:?} {} of {names:?} with {} replacement(s)",
        command.method,
        command.decision().as_str(),
        command.replacements.len()
    );
    if !e.action {
        return Ok(Err(format!("command {summary}, expected none")));
    }
    if let Some(method) = &e.method
        && format!("{:?}", command.method) != *method
    {
        failures.push(format!("method {:?}, expected {method}", command.method));
    }
    if let Some(decision) = &e.decision
        && command.decision().as_str() != decision
    {
        failures.push(format!("decision {}, expected {decision}", command.decision().as_str()));
    }
    if let Some(wanted) = &e.candidates {
        let mut wanted = wanted.clone();
        wanted.sort();
        if wanted != names {
            failures.push(format!("candidates {names:?}, expected {wanted:?}"));
        }
    }
    if let Some(n) = e.candidate_count
        && names.len() != n
    {
        failures.push(format!("{} candidates, expected {n}", names.len()));
    }
    for spared in &e.spared {
        if names.contains(spared) {
            failures.push(format!("{spared} disrupted"));
        }
    }
    if let Some(n) = e.replacements
        && command.replacements.len() != n
    {
        failures.push(format!("{} replacements, expected {n}", command.replacements.len()));
    }
    if let Some(expect) = &e.replacement {
        for (i, claim) in command.replacements.iter().enumerate() {
            failures.extend(expect.check(claim, &built)?.into_iter().map(|f| format!("replacement#{i}: {f}")));
        }
    }
    Ok(if failures.is_empty() { Ok(()) } else { Err(format!("{} (got {summary})", failures.join("; "))) })
}
