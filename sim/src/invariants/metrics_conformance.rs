//! `metricsConformance`: the controller's disruption-decision and evaluation-duration
//! metrics carry the labels upstream Karpenter gives them, and its interruption
//! queue-duration histogram observes what upstream observes, judged once at the end of the run on the `/metrics`
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
//! The evaluation-duration histogram: core `pkg/controllers/disruption/metrics.go:41-51`
//! labels `karpenter_voluntary_disruption_decision_evaluation_duration_seconds` with
//! exactly `reason` and `consolidation_type`, and `controller.go:186-189` fills them with
//! the evaluated method's lower-cased reason and its `ConsolidationType()`, so its label
//! names are exactly those two and its pairs are the same [`REASON_TYPES`].
//!
//! The interruption queue-duration histogram (aws `pkg/controllers/interruption`):
//! `metrics.go:52-62` defines the unlabelled
//! `karpenter_interruption_message_queue_duration_seconds`; `controller.go:106-121`, per
//! received message, either fails to parse and deletes it (l.108-111), or increments
//! `received_messages_total` (l.113), handles it, and only if handling succeeded observes
//! `time.Since(msg.StartTime())` (l.119) and then deletes it (l.120, `DeletedMessages.Inc`
//! at l.152 after a successful delete). So, in each process (each controller start's
//! registry, judged separately): `_count` <= Σ `received_messages_total`; `_count` >=
//! `deleted_messages_total` (every delete of a parsed message follows its observation; the
//! simulated queue carries only the well-formed EventBridge messages the fake cloud
//! writes, so no delete is of an unparseable one); and `_sum` > 0 when `_count` > 0 (a
//! message's start time is its event time, before it was sent to the queue, and the
//! simulated SQS answers after a non-zero latency).

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

/// The evaluation-duration histogram's count sample name.
pub const EVALUATION_COUNT: &str = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count";
/// The interruption queue-duration histogram's count sample name.
pub const QUEUE_COUNT: &str = "karpenter_interruption_message_queue_duration_seconds_count";
/// ... and its sum sample name.
pub const QUEUE_SUM: &str = "karpenter_interruption_message_queue_duration_seconds_sum";
/// Received interruption messages, by `message_type`.
pub const RECEIVED: &str = "karpenter_interruption_received_messages_total";
/// Deleted interruption messages.
pub const DELETED: &str = "karpenter_interruption_deleted_messages_total";

/// The value of a sample line of metric `name` (any labels), or `None`.
pub fn sample_value(line: &str, name: &str) -> Option<f64> {
    sample_labels(line, name)?;
    line.rsplit(' ').next()?.parse().ok()
}

/// What is wrong with one evaluation-duration sample's labels, or `None`.
pub fn judge_evaluation(labels: &[(String, String)]) -> Option<String> {
    let mut names: Vec<&str> = labels.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    if names != ["consolidation_type", "reason"] {
        return Some(format!("label names {names:?}; upstream uses exactly reason and consolidation_type"));
    }
    let get = |k: &str| labels.iter().find(|(n, _)| n == k).map_or("", |(_, v)| v.as_str());
    let (reason, kind) = (get("reason"), get("consolidation_type"));
    if !REASON_TYPES.contains(&(reason, kind)) {
        return Some(format!("reason={reason:?} with consolidation_type={kind:?} is not a pair upstream emits"));
    }
    None
}

/// What is wrong with one registry's interruption queue-duration histogram, or `None`.
pub fn judge_queue(text: &str) -> Option<String> {
    let total = |name: &str| text.lines().filter_map(|l| sample_value(l, name)).fold(0.0, |a, b| a + b);
    let (count, sum, received, deleted) = (total(QUEUE_COUNT), total(QUEUE_SUM), total(RECEIVED), total(DELETED));
    let what = format!("queue_duration count={count} sum={sum}, received={received}, deleted={deleted}");
    if count > received {
        return Some(format!("{what}: observed more messages than received"));
    }
    if count < deleted {
        return Some(format!("{what}: deleted messages were never observed on the queue-duration histogram"));
    }
    if count > 0.0 && sum <= 0.0 {
        return Some(format!("{what}: every handled message observed 0 s on the queue"));
    }
    None
}

/// The invariant (judged at the end only).
pub struct MetricsConformance;

impl MetricsConformance {
    fn violation(ctx: &Ctx<'_>, host: &str, message: String) -> Violation {
        Violation {
            invariant: NAME.into(),
            at: ctx.previous,
            objects: vec![format!("controller {host}")],
            message: format!("{host} /metrics: {message}"),
            trace_position: 0,
        }
    }
}

impl Invariant for MetricsConformance {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tick(&mut self, _ctx: &Ctx<'_>, _out: &mut Vec<Violation>) {}

    fn finish(&mut self, ctx: &Ctx<'_>, out: &mut Vec<Violation>) {
        let Some(end) = ctx.end else { return };
        for (host, text) in &end.metrics {
            for line in text.lines() {
                let why = if let Some(labels) = sample_labels(line, DECISIONS) {
                    judge_decision(&labels)
                } else if let Some(labels) = sample_labels(line, EVALUATION_COUNT) {
                    judge_evaluation(&labels)
                } else {
                    None
                };
                if let Some(why) = why {
                    out.push(Self::violation(ctx, host, format!("{line}: {why}")));
                }
            }
            if let Some(why) = judge_queue(text) {
                out.push(Self::violation(ctx, host, why));
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

    #[test]
    fn evaluation_labels() {
        let ok = format!("{EVALUATION_COUNT}{{reason=\"underutilized\",consolidation_type=\"single\"}} 2");
        assert_eq!(judge_evaluation(&sample_labels(&ok, EVALUATION_COUNT).expect("sample")), None);
        for bad in [
            format!("{EVALUATION_COUNT}{{method=\"SingleNode\",consolidation_type=\"single\"}} 2"),
            format!("{EVALUATION_COUNT}{{reason=\"empty\",consolidation_type=\"single\"}} 2"),
            format!("{EVALUATION_COUNT}{{reason=\"drifted\",consolidation_type=\"\",method=\"Drift\"}} 2"),
        ] {
            assert!(judge_evaluation(&sample_labels(&bad, EVALUATION_COUNT).expect("sample")).is_some(), "{bad}");
        }
    }

    fn registry(count: u32, sum: f64, received: u32, deleted: u32) -> String {
        format!(
            "{QUEUE_SUM} {sum}\n{QUEUE_COUNT} {count}\n{RECEIVED}{{message_type=\"spot_interrupted\"}} {received}\n\
             {RECEIVED}{{message_type=\"no_op\"}} 0\n{DELETED} {deleted}\n"
        )
    }

    #[test]
    fn queue_duration_as_upstream_passes() {
        assert_eq!(judge_queue(""), None);
        assert_eq!(judge_queue(&registry(3, 4.5, 3, 3)), None);
        // One message handled, not yet deleted; one received whose handling failed.
        assert_eq!(judge_queue(&registry(2, 1.0, 3, 1)), None);
    }

    #[test]
    fn queue_duration_deviations_fail() {
        // Latencies never observed (the histogram absent) while messages were deleted.
        assert!(judge_queue(&format!("{RECEIVED}{{message_type=\"spot_interrupted\"}} 2\n{DELETED} 2\n")).is_some());
        // Every message observed at 0 s.
        assert!(judge_queue(&registry(2, 0.0, 2, 2)).is_some());
        // More observations than messages received.
        assert!(judge_queue(&registry(4, 3.0, 2, 2)).is_some());
    }
}
