//! The liveness window: every scenario leaves its liveness invariants room to fire.
//!
//! The stranded-pods, stuck-NodeClaim and churn clocks start when faults heal
//! (`phases.faultsUntil`, or time zero in a scenario without faults), so a run that ends
//! less than a threshold after the heal can never report a pod stranded, or a claim stuck,
//! for that long: the check passes by construction. The rule, checked when a scenario
//! loads:
//!
//! 1. a scenario with faults (scheduled or random) declares `phases.faultsUntil`: without
//!    it faults last to the end of the run, nothing ever heals, and every liveness check is
//!    silently off;
//! 2. every scheduled fault ends by `faultsUntil` (the plan would cut it there, so a
//!    longer `for` is a mistake, not a longer fault);
//! 3. the liveness window, `duration − faultsUntil` (the whole duration without faults),
//!    is at least the longest requirement of the enabled liveness invariants plus
//!    [`MARGIN`] (see [`requirements`]).
//!
//! API-only scenarios (`controller: none`) run no invariants and are not judged.

use std::time::Duration;

use super::error::FieldError;
use super::faults::FaultSpec;
use super::invariants::InvariantConfig;
use super::{ControllerSpec, Scenario};
use dovetail_world::SimDuration;

/// Room after the longest requirement: a clock that reaches its limit must still see a
/// tick past it (the checker ticks every simulated second; a minute leaves the controller's
/// last reaction time to show too).
pub const MARGIN: Duration = Duration::from_secs(60);

/// One enabled liveness invariant's need: the field (as a path under `invariants`) and
/// how long after the heal its clock must be able to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The threshold's path, e.g. `invariants.stuckNodeClaim.deleteWithin`.
    pub field: &'static str,
    /// How long after the heal it needs.
    pub needs: Duration,
}

/// What each enabled liveness invariant needs after the heal:
/// - `strandedPods`: `boundWithin` (a pod pending from the heal on is reported past it);
/// - `stuckNodeClaim`: `initializeWithin` and `deleteWithin` (both clocks start no
///   earlier than the heal);
/// - `churn`: `settleAfter` (steady state starts there; whether `minNodeHours` of it
///   accumulate depends on the node count, which a scenario file does not fix);
/// - `leakedInstance`: `maxAge` (an instance leaked as the faults end is reported once
///   this old).
pub fn requirements(config: &InvariantConfig) -> Vec<Requirement> {
    let mut out = Vec::new();
    let mut need = |on: bool, field: &'static str, d: SimDuration| {
        if on {
            out.push(Requirement { field, needs: d.0 });
        }
    };
    let c = config;
    need(c.stranded_pods.enabled, "invariants.strandedPods.boundWithin", c.stranded_pods.bound_within);
    need(
        c.stuck_node_claim.enabled,
        "invariants.stuckNodeClaim.initializeWithin",
        c.stuck_node_claim.initialize_within,
    );
    need(c.stuck_node_claim.enabled, "invariants.stuckNodeClaim.deleteWithin", c.stuck_node_claim.delete_within);
    need(c.churn.enabled, "invariants.churn.settleAfter", c.churn.settle_after);
    need(c.leaked_instance.enabled, "invariants.leakedInstance.maxAge", c.leaked_instance.max_age);
    out
}

/// The shortest liveness window `config` allows: its longest requirement plus [`MARGIN`]
/// (just the margin when no liveness invariant is enabled).
pub fn shortest_window(config: &InvariantConfig) -> Duration {
    requirements(config).iter().map(|r| r.needs).max().unwrap_or_default() + MARGIN
}

/// Checks the rule (module docs) for `scenario`. The error names the field to change:
/// `phases.faultsUntil` (or `phases` when it is missing), `faults[i].for`, or `duration`.
pub fn check(scenario: &Scenario) -> Result<(), FieldError> {
    if scenario.controller == ControllerSpec::None {
        return Ok(());
    }
    let has_faults = !scenario.faults.is_empty();
    let faults_until = match (has_faults, scenario.phases.faults_until) {
        (false, _) => Duration::ZERO,
        (true, Some(until)) => until.0,
        (true, None) => {
            return Err(FieldError::new(
                "phases",
                format!(
                    "the scenario has {} fault entr{} but no end to them: declare `phases: {{faultsUntil: ...}}` \
                     (faults heal there and the liveness invariants start judging; without it nothing heals and \
                     strandedPods, stuckNodeClaim and churn never fire)",
                    scenario.faults.len(),
                    if scenario.faults.len() == 1 { "y" } else { "ies" }
                ),
            ));
        }
    };
    for (i, f) in scenario.faults.iter().enumerate() {
        check_fault_ends(f, faults_until).map_err(|e| e.within(format!("faults[{i}]")))?;
    }
    let config = scenario.invariants.clone().unwrap_or_default();
    let window = scenario.duration.0.saturating_sub(faults_until);
    let Some(longest) = requirements(&config).into_iter().max_by_key(|r| r.needs) else { return Ok(()) };
    let needed = longest.needs + MARGIN;
    if window >= needed {
        return Ok(());
    }
    let (field, window_is) = if has_faults {
        (
            "phases.faultsUntil",
            format!(
                "leaves a liveness window of {} (duration {} − faultsUntil {})",
                SimDuration(window),
                scenario.duration,
                SimDuration(faults_until)
            ),
        )
    } else {
        ("duration", format!("{} is the whole liveness window (no faults)", scenario.duration))
    };
    Err(FieldError::new(
        field,
        format!(
            "{window_is}, but {} = {} needs {} after the heal ({} + {} margin): lengthen `duration` to at least {}, \
             end the faults earlier, or lower or disable that invariant with a stated reason",
            longest.field,
            SimDuration(longest.needs),
            SimDuration(needed),
            SimDuration(longest.needs),
            SimDuration(MARGIN),
            SimDuration(faults_until + needed)
        ),
    ))
}

/// A scheduled fault that lasts must end by `faults_until`. Random occurrences are cut
/// there by the plan (they are drawn in `[from, faultsUntil)`), and a fault without `for`
/// lasts exactly until then.
fn check_fault_ends(f: &FaultSpec, faults_until: Duration) -> Result<(), FieldError> {
    let Some(at) = f.at else { return Ok(()) };
    let kind = f.kind()?;
    let lasts = match &f.lasts {
        Some(d) => d.max().0,
        // Karpenter's leader election hands over in about 30 s (the plan's default).
        None if kind == "leaderFailover" => Duration::from_secs(30),
        None => Duration::ZERO,
    };
    let ends = at.0 + lasts;
    if ends > faults_until {
        let field = if f.lasts.is_some() { "for" } else { "at" };
        return Err(FieldError::new(
            field,
            format!(
                "the {kind} fault ends at {} (at {} + {}), after phases.faultsUntil ({}): every scheduled fault \
                 must end by then",
                SimDuration(ends),
                at,
                SimDuration(lasts),
                SimDuration(faults_until)
            ),
        ));
    }
    Ok(())
}

/// The 1-based line of `field` (a path such as `phases.faultsUntil` or `faults[2].for`)
/// in the scenario's YAML `text`, found by walking its keys and list items by indentation;
/// `None` when the text does not spell it in block or simple flow style.
pub fn line_of(text: &str, field: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0usize;
    let mut indent = 0usize;
    let mut found = None;
    for part in field.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let key = key.split(' ').next().unwrap_or(key);
        let (at, col) = find_key(&lines, from, indent, key)?;
        found = Some(at);
        from = at;
        indent = col;
        if let Some(i) = index {
            let item = nth_item(&lines, at + 1, indent, i)?;
            found = Some(item.0);
            from = item.0;
            indent = item.1;
        }
    }
    found.map(|l| l + 1)
}

/// The first line at or after `from`, indented at least `indent`, that holds `key:` (as a
/// block key, after a list dash, or inside a flow map); with its key's column.
fn find_key(lines: &[&str], from: usize, indent: usize, key: &str) -> Option<(usize, usize)> {
    for (n, line) in lines.iter().enumerate().skip(from) {
        let content = line.trim_start();
        let col = line.len() - content.len();
        if n > from && col < indent && !content.is_empty() && !content.starts_with('#') {
            return None;
        }
        let bare = content.trim_start_matches("- ");
        if bare.starts_with(&format!("{key}:")) {
            return Some((n, col + (content.len() - bare.len())));
        }
        for sep in ["{", ", "] {
            if content.contains(&format!("{sep}{key}:")) {
                return Some((n, col));
            }
        }
    }
    None
}

/// The line of the `i`-th (0-based) list item after a key at `indent`, and its column.
fn nth_item(lines: &[&str], from: usize, indent: usize, i: usize) -> Option<(usize, usize)> {
    let mut seen = 0;
    for (n, line) in lines.iter().enumerate().skip(from) {
        let content = line.trim_start();
        let col = line.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if col < indent || (col == indent && !content.starts_with('-')) {
            return None;
        }
        if content.starts_with("- ") || content == "-" {
            if seen == i {
                return Some((n, col + 2));
            }
            seen += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "name: t\n";

    fn scenario(text: &str) -> Scenario {
        serde_saphyr::from_str(&format!("{HEADER}{text}")).expect("parses")
    }

    fn rejected(text: &str) -> FieldError {
        check(&scenario(text)).expect_err("the rule rejects it")
    }

    #[test]
    fn faults_without_an_end_are_rejected() {
        let e = rejected("duration: 1h\nfaults:\n  - {at: 1m, for: 1m, zoneOutage: {zone: us-east-1a}}\n");
        assert_eq!(e.field, "phases");
        assert!(e.problem.contains("no end"), "{e}");
        let e = rejected("duration: 1h\nfaults:\n  - {perHour: 2, for: 1m, zoneOutage: {zone: random}}\n");
        assert_eq!(e.field, "phases", "random faults need an end too");
    }

    #[test]
    fn a_scheduled_fault_lasting_past_faults_until_is_rejected() {
        let e = rejected(
            "duration: 1h\nfaults:\n  - {at: 5m, for: {uniform: [1m, 8m]}, zoneOutage: {zone: us-east-1a}}\nphases: {faultsUntil: 10m}\n",
        );
        assert_eq!(e.field, "faults[0].for");
        assert!(e.problem.contains("13m") && e.problem.contains("10m"), "{e}");
        let e = rejected(
            "duration: 1h\ncontroller: {replicas: 2}\nfaults:\n  - {at: 9m45s, leaderFailover: {}}\nphases: {faultsUntil: 10m}\n",
        );
        assert_eq!(e.field, "faults[0].at", "a failover lasts 30 s by default");
        // Ending exactly at faultsUntil, or lasting until it (no `for`), is fine.
        check(&scenario(
            "duration: 1h\nfaults:\n  - {at: 5m, for: 5m, zoneOutage: {zone: us-east-1a}}\n  - {at: 6m, ec2Errors: {rate: 0.1}}\nphases: {faultsUntil: 10m}\n",
        ))
        .expect("ends by faultsUntil");
    }

    #[test]
    fn a_window_shorter_than_the_longest_requirement_is_rejected() {
        // Defaults: stuckNodeClaim.deleteWithin 30m is the longest, so 31m are needed.
        let e = rejected("duration: 40m\nfaults:\n  - {at: 1m, spotInterruption: {}}\nphases: {faultsUntil: 10m}\n");
        assert_eq!(e.field, "phases.faultsUntil");
        assert!(e.problem.contains("invariants.stuckNodeClaim.deleteWithin") && e.problem.contains("41m"), "{e}");
        check(&scenario("duration: 41m\nfaults:\n  - {at: 1m, spotInterruption: {}}\nphases: {faultsUntil: 10m}\n"))
            .expect("31m after the heal is enough");
    }

    #[test]
    fn each_enabled_threshold_counts_and_disabled_ones_do_not() {
        let base = "duration: 20m\nfaults:\n  - {at: 1m, spotInterruption: {}}\nphases: {faultsUntil: 5m}\n";
        let off = "stuckNodeClaim: {enabled: false}";
        let e = rejected(&format!("{base}invariants: {{{off}, churn: {{settleAfter: 15m}}}}\n"));
        assert!(e.problem.contains("invariants.churn.settleAfter"), "{e}");
        let e = rejected(&format!(
            "{base}invariants: {{{off}, churn: {{enabled: false}}, strandedPods: {{boundWithin: 15m}}}}\n"
        ));
        assert!(e.problem.contains("invariants.strandedPods.boundWithin"), "{e}");
        let e = rejected(&format!(
            "{base}invariants: {{{off}, churn: {{enabled: false}}, leakedInstance: {{maxAge: 15m}}}}\n"
        ));
        assert!(e.problem.contains("invariants.leakedInstance.maxAge"), "{e}");
        let e = rejected(&format!(
            "{base}invariants: {{stuckNodeClaim: {{initializeWithin: 15m, deleteWithin: 1m}}, churn: {{enabled: false}}}}\n"
        ));
        assert!(e.problem.contains("invariants.stuckNodeClaim.initializeWithin"), "{e}");
        check(&scenario(&format!("{base}invariants: {{{off}}}\n"))).expect("churn's 10m + 1m fits in 15m");
    }

    #[test]
    fn without_faults_the_whole_run_is_the_window() {
        let e = rejected("duration: 20m\n");
        assert_eq!(e.field, "duration");
        check(&scenario("duration: 20m\ninvariants: {stuckNodeClaim: {enabled: false}}\n")).expect("11m fit");
        check(&scenario("duration: 1m\ncontroller: none\n")).expect("API-only scenarios are not judged");
        assert_eq!(shortest_window(&InvariantConfig::default()), Duration::from_secs(31 * 60));
    }

    #[test]
    fn lines_are_found_for_block_and_flow_fields() {
        let text = "name: t\nduration: 1h\nfaults:\n  - at: 1m\n    zoneOutage: {zone: a}\n  # note\n  - at: 2m\n    for: 3m\n    zoneOutage: {zone: b}\nphases:\n  faultsUntil: 5m\n";
        assert_eq!(line_of(text, "phases.faultsUntil"), Some(11));
        assert_eq!(line_of(text, "faults[1].for"), Some(8));
        assert_eq!(line_of("name: t\nfaults:\n  - {at: 1m, for: 2m, ec2Errors: {}}\n", "faults[0].for"), Some(3));
        assert_eq!(line_of(text, "faults[0]"), Some(4));
        assert_eq!(line_of(text, "duration"), Some(2));
        assert_eq!(line_of("name: t\nphases: {faultsUntil: 3m}\n", "phases.faultsUntil"), Some(2));
        assert_eq!(line_of(text, "invariants.churn"), None);
    }
}
