//! The cost gap as a quality metric over many runs: median, 95th percentile and worst of
//! `rate / LP bound − 1`, over the runs that had a bound (something to host). `dovetail
//! sweep` prints it per sweep and `dovetail compare` per scenario, base against candidate.

use serde_json::Value;

/// Gap statistics over a set of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct GapStats {
    /// Runs with a bound.
    pub runs: usize,
    /// Median gap.
    pub median: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// The largest gap, and the run (`scenario seed N`) that had it.
    pub worst: (f64, String),
}

impl GapStats {
    /// Over `(run name, gap)` pairs; `None` when there are none.
    pub fn of(mut gaps: Vec<(String, f64)>) -> Option<GapStats> {
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let rank = |q: f64| ((q * gaps.len() as f64).ceil() as usize).clamp(1, gaps.len()) - 1;
        let worst = gaps[gaps.len() - 1].clone();
        Some(GapStats {
            runs: gaps.len(),
            median: gaps[rank(0.5)].1,
            p95: gaps[rank(0.95)].1,
            worst: (worst.1, worst.0),
        })
    }

    /// A report's gap, if it had a bound.
    pub fn gap_of(report: &Value) -> Option<f64> {
        let bound = report.pointer("/cost/lowerBoundPerHour").and_then(Value::as_f64)?;
        (bound > 0.0).then(|| report.pointer("/cost/gap").and_then(Value::as_f64)).flatten()
    }
}

impl std::fmt::Display for GapStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "median {:+.1}%, p95 {:+.1}%, worst {:+.1}% ({}) over {} runs",
            self.median * 100.0,
            self.p95 * 100.0,
            self.worst.0 * 100.0,
            self.worst.1,
            self.runs
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn median_p95_and_worst_use_nearest_ranks() {
        let gaps: Vec<(String, f64)> = (1..=20).map(|i| (format!("s seed {i}"), f64::from(i) / 10.0)).collect();
        let s = GapStats::of(gaps).expect("runs");
        assert_eq!((s.runs, s.median, s.p95), (20, 1.0, 1.9));
        assert_eq!(s.worst, (2.0, "s seed 20".to_string()));
        assert_eq!(GapStats::of(Vec::new()), None);
        assert!(s.to_string().starts_with("median +100.0%, p95 +190.0%, worst +200.0% (s seed 20)"), "{s}");
    }

    #[test]
    fn a_run_without_a_bound_has_no_gap() {
        assert_eq!(GapStats::gap_of(&json!({"cost": {"lowerBoundPerHour": 0.0, "gap": 0.0}})), None);
        assert_eq!(GapStats::gap_of(&json!({"cost": {"lowerBoundPerHour": 0.5, "gap": 0.25}})), Some(0.25));
        assert_eq!(GapStats::gap_of(&json!({})), None);
    }
}
