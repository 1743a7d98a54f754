//! `metricsConformance`: the controller's disruption-decision metric carries the label
//! values upstream Karpenter gives it, judged once at the end of the run on the `/metrics`
//! text of every start of every controller replica (what Prometheus would scrape).
//!
//! Upstream: core `pkg/controllers/disruption/metrics.go:40-48` defines
//! `karpenter_voluntary_disruption_decisions_total` with the labels `decision`, `reason`
//! (`pkg/metrics/constants.go:30`) and `consolidation_type`; `queue.go:391-395` increments
//! it once per command started with `decision` = `cmd.Decision()` (`types.go:253-255`:
//! `replace` or `delete`; a `no-op` command is never started), `reason` = the method's
//! reason lower-cased (`pkg/apis/v1/nodepool.go:184-186`: `underutilized`, `empty`,
//! `drifted`) and `consolidation_type` = the method's `ConsolidationType()`, which upstream
//! ties to the reason: Emptiness `"empty"` (`emptiness.go:120`), single- and multi-node
//! consolidation (reason Underutilized) `"single"` and `"multi"`
//! (`singlenodeconsolidation.go:35`, `multinodeconsolidation.go:36`), Drift and StaticDrift
//! `""` (`drift.go:118`, `staticdrift.go:116`). Any other label value, or a reason with
//! another method's type, is a metric upstream never emits: dashboards and alerts keyed on
//! these values would miss the decision.
//!
//! Only this family is judged: it is the one whose label values upstream fixes per
//! method. (The controller's `..._decision_evaluation_duration_seconds` labels its
//! method `method`, where upstream's `controller.go:186-189` uses `reason`; not judged
//! here, reported separately.)

use super::{Ctx, Invariant, Violation};

const NAME: &str = "metricsConformance";

/// The decisions counter's sample name.
pub const DECISIONS: &str = "karpenter_voluntary_disruption_decisions_total";

/// (reason, consolidation_type) pairs upstream emits.
pub const REASON_TYPES: [(&str, &str); 4] =
    [("empty", "empty"), ("underutilized", "single"), ("underutilized", "multi"), ("drifted", "")];

/// Decisions a started command has.
pub const DECISIONS_STARTED: [&str; 2] = ["replace", "delete"];

/// The labels of one sample line `name{k="v",...} value` of metric `name`, or `None` when
/// the line is another metric's.
pub fn sample_labels(line: &str, name: &str) -> Option<Vec<(String, String)>> {
    let rest = line.strip_prefix(name)?;
    let mut s = if let Some(r) = rest.strip_prefix('{') {
        r.split_once('}')?.0
    } else if rest.starts_with(' ') {
        ""
    } else {
        return None;
    };
    let mut out = Vec::new();
    while let Some((k, after)) = s.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        value.push(e);
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((k.trim_start_matches(',').trim().to_string(), value));
        s = &after[end..];
    }
    Some(out)
}

/// What is wrong with one decisions sample's labels, or `None`.
pub fn judge_decision(labels: &[(String, String)]) -> Option<String> {
    let get = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let (decision, reason, kind) = (get("decision"), get("reason"), get("consolidation_type"));
    if !decision.is_some_and(|d| DECISIONS_STARTED.contains(&d)) {
        return Some(format!("decision={decision:?} is not one upstream emits (replace, delete)"));
    }
    let (Some(reason), Some(kind)) = (reason, kind) else {
        return Some("a reason or consolidation_type label is missing".into());
    };
    if !REASON_TYPES.contains(&(reason, kind)) {
        return Some(format!(
            "reason={reason:?} with consolidation_type={kind:?} is not a pair upstream emits \
             (empty/empty, underutilized/single, underutilized/multi, drifted/\"\")"
        ));
    }
    None
}

/// The invariant (judged at the end only).
pub struct MetricsConformance;

impl Invariant for MetricsConformance {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, _ctx: &Ctx<'_>, _out: &mut Vec<Violation>) {}

    fn finish(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let Some(end) = ctx.end else { return };
        for (host, text) in &end.metrics {
            for line in text.lines() {
                let Some(labels) = sample_labels(line, DECISIONS) else { continue };
                if let Some(why) = judge_decision(&labels) {
                    out.push(Violation {
                        invariant: NAME.into(),
                        at: ctx.previous,
                        objects: vec![format!("controller {host}")],
                        message: format!("{host} /metrics: {line}: {why}"),
                        trace_position: 0,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(line: &str) -> Vec<(String, String)> {
        sample_labels(line, DECISIONS).expect("a decisions sample")
    }

    #[test]
    fn reads_sample_labels() {
        let l = labels(
            r#"karpenter_voluntary_disruption_decisions_total{decision="delete",reason="drifted",consolidation_type=""} 3"#,
        );
        assert_eq!(
            l,
            vec![
                ("decision".into(), "delete".into()),
                ("reason".into(), "drifted".into()),
                ("consolidation_type".into(), String::new())
            ]
        );
        assert!(sample_labels("# TYPE karpenter_voluntary_disruption_decisions counter", DECISIONS).is_none());
        assert!(sample_labels("karpenter_voluntary_disruption_decisions_totalx{a=\"b\"} 1", DECISIONS).is_none());
    }

    #[test]
    fn upstream_pairs_pass() {
        for (reason, kind) in REASON_TYPES {
            for decision in DECISIONS_STARTED {
                let line = format!(
                    "{DECISIONS}{{decision=\"{decision}\",reason=\"{reason}\",consolidation_type=\"{kind}\"}} 1"
                );
                assert_eq!(judge_decision(&labels(&line)), None, "{line}");
            }
        }
    }

    #[test]
    fn other_values_fail() {
        for line in [
            r#"karpenter_voluntary_disruption_decisions_total{decision="delete",reason="underutilized",consolidation_type="xyzzy"} 1"#,
            r#"karpenter_voluntary_disruption_decisions_total{decision="delete",reason="empty",consolidation_type="single"} 1"#,
            r#"karpenter_voluntary_disruption_decisions_total{decision="delete",reason="drifted",consolidation_type="empty"} 1"#,
            r#"karpenter_voluntary_disruption_decisions_total{decision="no-op",reason="empty",consolidation_type="empty"} 1"#,
            r#"karpenter_voluntary_disruption_decisions_total{decision="delete",reason="Empty",consolidation_type="empty"} 1"#,
            r#"karpenter_voluntary_disruption_decisions_total{decision="delete"} 1"#,
        ] {
            assert!(judge_decision(&labels(line)).is_some(), "{line}");
        }
    }
}
