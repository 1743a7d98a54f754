//! NodePool disruption-budget arithmetic, written from the Karpenter v1 API docs rather
//! than shared with the controller: how many of a pool's nodes may be disrupting at once.
//!
//! A budget is `{nodes: "10%" | "3", reasons?: [...], schedule?: cron, duration?}`. A
//! percentage is `ceil(pct × numNodes)`. A budget with a schedule is active only within
//! `duration` after a time the cron matches (UTC); an inactive budget does not limit. With
//! no budgets the default is `nodes: 10%`. An unparseable budget allows nothing, as
//! Karpenter fails closed — for every reason, not only the ones it names: core
//! `pkg/apis/v1/nodepool.go` `GetAllowedDisruptionsByReason` (l. 365–378) collects the
//! error of *every* budget before it filters by reason, and `MustGetAllowedDisruptions`
//! (l. 356–362), which the disruption controller's budget mapping calls
//! (`pkg/controllers/disruption/helpers.go` l. 300), returns 0 on any error.

use std::time::Duration;

use jiff::civil::DateTime;
use serde_json::Value;

use dovetail_world::SimDuration;

/// The disruption reasons budgets can name.
pub const REASONS: [&str; 3] = ["Underutilized", "Empty", "Drifted"];

/// Most nodes of a pool that may be disrupting for `reason` at `wall` (UTC), given
/// `num_nodes`. `None` when no active budget limits it; `Some(0)` when any of the pool's
/// budgets is invalid, whatever reasons it names ([`invalid`]).
pub fn allowed_for_reason(budgets: &[Value], num_nodes: usize, reason: &str, wall: DateTime) -> Option<usize> {
    let default = [serde_json::json!({"nodes": "10%"})];
    let budgets = if budgets.is_empty() { &default[..] } else { budgets };
    if budgets.iter().any(|b| invalid(b, num_nodes, wall)) {
        return Some(0);
    }
    let mut allowed: Option<usize> = None;
    for b in budgets {
        let applies = b["reasons"].as_array().is_none_or(|r| r.is_empty() || r.iter().any(|x| x == reason));
        if !applies {
            continue;
        }
        let limit = match active(b, wall) {
            Some(false) => continue,
            Some(true) => nodes_value(&b["nodes"], num_nodes).unwrap_or(0),
            None => 0,
        };
        allowed = Some(allowed.map_or(limit, |a| a.min(limit)));
    }
    allowed
}

/// Whether Karpenter fails on `budget` at `wall`: its schedule or duration does not parse,
/// or it is active and its `nodes` does not parse (core `pkg/apis/v1/nodepool.go`
/// `Budget.GetAllowedDisruptions`, l. 383–405: an inactive budget returns before `nodes`
/// is read).
fn invalid(budget: &Value, num_nodes: usize, wall: DateTime) -> bool {
    match active(budget, wall) {
        None => true,
        Some(true) => nodes_value(&budget["nodes"], num_nodes).is_none(),
        Some(false) => false,
    }
}

/// The most nodes any reason may have disrupting: a controller disrupting more than this
/// broke the budget whatever its reasons. `usize::MAX` when nothing limits.
pub fn cap(budgets: &[Value], num_nodes: usize, wall: DateTime) -> usize {
    REASONS.iter().map(|r| allowed_for_reason(budgets, num_nodes, r, wall).unwrap_or(usize::MAX)).max().unwrap_or(0)
}

/// `"10%"` → ceil(10% × n); `"3"` → 3.
pub fn nodes_value(v: &Value, num_nodes: usize) -> Option<usize> {
    let s = v.as_str().map(str::to_string).or_else(|| v.as_u64().map(|n| n.to_string()))?;
    match s.trim().strip_suffix('%') {
        Some(p) => {
            let p: f64 = p.parse().ok()?;
            (0.0..=100.0).contains(&p).then(|| (p / 100.0 * num_nodes as f64).ceil() as usize)
        }
        None => s.trim().parse().ok(),
    }
}

/// Whether a budget is active at `wall`: always without a schedule; with one, when the
/// cron matched within the last `duration`. `None` when the schedule or duration is invalid.
pub fn active(budget: &Value, wall: DateTime) -> Option<bool> {
    let Some(schedule) = budget["schedule"].as_str() else { return Some(true) };
    let duration = SimDuration::parse(budget["duration"].as_str()?).ok()?.0;
    let cron = Cron::parse(schedule)?;
    let minutes = duration.as_secs() / 60;
    let start = wall.with().second(0).subsec_nanosecond(0).build().ok()?;
    // A match at minute t keeps the budget active during [t, t + duration).
    for back in 0..minutes.min(60 * 24 * 31) {
        let t = start.checked_sub(jiff::SignedDuration::from_secs((back * 60) as i64)).ok()?;
        if cron.matches(t) {
            return Some(true);
        }
    }
    Some(false)
}

/// A standard five-field cron expression (minute hour day-of-month month day-of-week),
/// with `*` and `?`, lists, ranges, steps, month and weekday names and the `@hourly`-style
/// macros.
///
/// Read as Karpenter reads a budget's schedule: `kubernetes-sigs/karpenter`
/// `pkg/apis/v1/nodepool.go:417` parses it with `robfig/cron/v3`'s `ParseStandard`, whose
/// field bounds (`spec.go:21-49`) accept the names `jan`…`dec` and `sun`…`sat` in any case
/// (`parser.go:321-329`, `parseIntOrName`) and weekdays 0–6 only (so `7` is invalid), and
/// whose day-of-month/day-of-week rule (`spec.go:179-189`, `dayMatches`) combines the two
/// with AND when either was written `*` or `?` without a step above 1 (the `starBit`,
/// `parser.go:262-266` and `297-299`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    fields: [Vec<bool>; 5],
    dom_star: bool,
    dow_star: bool,
}

impl Cron {
    /// Parses an expression; `None` when it is invalid.
    pub fn parse(expr: &str) -> Option<Self> {
        let expr = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let parts: Vec<&str> = expr.split_whitespace().collect();
        if parts.len() != 5 {
            return None;
        }
        let bounds: [(usize, usize, &[&str]); 5] =
            [(0, 59, &[]), (0, 23, &[]), (1, 31, &[]), (1, 12, &MONTHS), (0, 6, &WEEKDAYS)];
        let mut fields: [Vec<bool>; 5] = Default::default();
        let mut star = [false; 5];
        for (i, (part, (lo, hi, names))) in parts.iter().zip(bounds).enumerate() {
            (fields[i], star[i]) = field(part, lo, hi, names)?;
        }
        Some(Cron { fields, dom_star: star[2], dow_star: star[4] })
    }

    /// Whether the expression matches the minute `t`.
    pub fn matches(&self, t: DateTime) -> bool {
        let dom = self.fields[2][t.day() as usize];
        let dow = self.fields[4][t.weekday().to_sunday_zero_offset() as usize];
        // Cron's rule: with both day fields restricted, either may match.
        let day = if self.dom_star || self.dow_star { dom && dow } else { dom || dow };
        self.fields[0][t.minute() as usize]
            && self.fields[1][t.hour() as usize]
            && self.fields[3][t.month() as usize]
            && day
    }
}

/// Month names (January is 1) and weekday names (Sunday is 0), as robfig/cron's bounds.
const MONTHS: [&str; 13] = ["", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// One field's set of values in `lo..=hi`, and whether it counts as a star (`*` or `?`
/// without a step above 1). `names[v]` spells value `v`.
fn field(part: &str, lo: usize, hi: usize, names: &[&str]) -> Option<(Vec<bool>, bool)> {
    let value = |s: &str| -> Option<usize> {
        let lower = s.to_ascii_lowercase();
        names.iter().position(|n| !n.is_empty() && *n == lower).or_else(|| s.parse().ok())
    };
    let mut set = vec![false; hi + 1];
    let mut star = false;
    for item in part.split(',').filter(|i| !i.is_empty()) {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, s.parse::<usize>().ok().filter(|s| *s > 0)?),
            None => (item, 1),
        };
        let (a, b) = if range == "*" || range == "?" {
            star |= step == 1;
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let a = value(range)?;
            (a, if item.contains('/') { hi } else { a })
        };
        if a < lo || b > hi || a > b {
            return None;
        }
        for v in (a..=b).step_by(step) {
            set[v] = true;
        }
    }
    Some((set, star))
}

/// Simulated time as UTC wall time.
pub fn wall_time(now: Duration) -> DateTime {
    let since = dovetail_world::clock::sim_epoch().duration_since(std::time::UNIX_EPOCH).unwrap_or_default() + now;
    jiff::Timestamp::from_second(since.as_secs() as i64)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .datetime()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime {
        s.parse().expect("a datetime")
    }

    #[test]
    fn percentages_round_up_and_integers_are_taken_as_is() {
        assert_eq!(nodes_value(&json!("10%"), 11), Some(2));
        assert_eq!(nodes_value(&json!("10%"), 10), Some(1));
        assert_eq!(nodes_value(&json!("0%"), 10), Some(0));
        assert_eq!(nodes_value(&json!("3"), 100), Some(3));
        assert_eq!(nodes_value(&json!("x"), 1), None);
    }

    #[test]
    fn the_default_budget_is_ten_percent_and_the_tightest_active_budget_wins() {
        let t = at("2026-01-01T12:00");
        assert_eq!(cap(&[], 20, t), 2);
        let budgets = [json!({"nodes": "50%"}), json!({"nodes": "1", "reasons": ["Drifted"]})];
        assert_eq!(allowed_for_reason(&budgets, 10, "Drifted", t), Some(1));
        assert_eq!(allowed_for_reason(&budgets, 10, "Empty", t), Some(5));
        assert_eq!(cap(&budgets, 10, t), 5);
    }

    #[test]
    fn scheduled_budgets_apply_only_within_their_window() {
        // Nothing may be disrupted from 09:00 for 8 hours on weekdays.
        let budgets = [json!({"nodes": "100%"}), json!({"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"})];
        // 2026-01-01 is a Thursday.
        assert_eq!(cap(&budgets, 10, at("2026-01-01T10:30")), 0);
        assert_eq!(cap(&budgets, 10, at("2026-01-01T17:00")), 10);
        assert_eq!(cap(&budgets, 10, at("2026-01-01T08:59")), 10);
        assert_eq!(cap(&budgets, 10, at("2026-01-03T10:30")), 10, "Saturday");
        // An invalid schedule fails closed.
        assert_eq!(
            cap(&[json!({"nodes": "5", "schedule": "nonsense", "duration": "1h"})], 10, at("2026-01-01T10:30")),
            0
        );
    }

    #[test]
    fn cron_fields_support_lists_ranges_steps_and_macros() {
        let c = Cron::parse("*/15 8-10,20 * * *").expect("valid");
        assert!(c.matches(at("2026-01-01T08:45")));
        assert!(c.matches(at("2026-01-01T20:00")));
        assert!(!c.matches(at("2026-01-01T08:40")));
        assert!(!c.matches(at("2026-01-01T11:00")));
        assert!(Cron::parse("@daily").expect("valid").matches(at("2026-01-05T00:00")));
        assert!(Cron::parse("61 * * * *").is_none());
        // Both day fields restricted: either matches (Jan 1 is a Thursday, not a Monday).
        assert!(Cron::parse("0 0 1 * 1").expect("valid").matches(at("2026-01-01T00:00")));
    }

    /// robfig/cron's names (any case) and `?`; weekday 7 is out of its 0–6 bounds.
    #[test]
    fn names_and_question_marks_parse_as_robfig_cron_parses_them() {
        let weekdays = Cron::parse("0 9 * * mon-fri").expect("weekday names are valid");
        assert!(weekdays.matches(at("2026-01-01T09:00")), "Thursday");
        assert!(!weekdays.matches(at("2026-01-03T09:00")), "Saturday");
        assert_eq!(Cron::parse("0 9 ? * MON-FRI"), Some(weekdays));
        let months = Cron::parse("0 0 1 jan,Jul *").expect("month names are valid");
        assert!(months.matches(at("2026-07-01T00:00")));
        assert!(!months.matches(at("2026-02-01T00:00")));
        assert!(Cron::parse("0 0 * * 7").is_none(), "robfig's weekdays are 0-6");
        assert!(Cron::parse("0 0 * * monday").is_none());
        // `*/2` is not a star, so either day field may match (Jan 3 is a Saturday, weekday 6);
        // `*/1` is one, so both must (Jan 6 is not the 1st).
        assert!(Cron::parse("0 0 1 * */2").expect("valid").matches(at("2026-01-03T00:00")));
        assert!(!Cron::parse("0 0 1 * */1").expect("valid").matches(at("2026-01-06T00:00")));
    }

    /// One invalid budget stops every reason, not only those it names (core nodepool.go
    /// `GetAllowedDisruptionsByReason` gathers every budget's error before filtering by
    /// reason); an invalid `nodes` on a budget that is not active is never read.
    #[test]
    fn an_invalid_budget_allows_no_disruption_for_any_reason() {
        let t = at("2026-01-01T12:00");
        let bad_schedule = [
            json!({"nodes": "5"}),
            json!({"nodes": "1", "reasons": ["Drifted"], "schedule": "nonsense", "duration": "1h"}),
        ];
        for reason in REASONS {
            assert_eq!(allowed_for_reason(&bad_schedule, 10, reason, t), Some(0), "{reason}");
        }
        assert_eq!(cap(&bad_schedule, 10, t), 0);
        let bad_nodes = [json!({"nodes": "5"}), json!({"nodes": "x", "reasons": ["Empty"]})];
        assert_eq!(allowed_for_reason(&bad_nodes, 10, "Underutilized", t), Some(0));
        // The excuse's twin: the same invalid `nodes` on a budget whose window is closed
        // (09:00 for an hour, judged at noon) is never parsed, so the valid budget governs.
        let inactive = [
            json!({"nodes": "5"}),
            json!({"nodes": "x", "reasons": ["Empty"], "schedule": "0 9 * * *", "duration": "1h"}),
        ];
        assert_eq!(allowed_for_reason(&inactive, 10, "Underutilized", t), Some(5));
        assert_eq!(allowed_for_reason(&inactive, 10, "Empty", t), Some(5));
    }

    /// A budget scheduled with weekday names limits inside its window and not outside it
    /// (the generated stories' `0 9 * * mon-fri` once read as invalid, which fails closed).
    #[test]
    fn a_budget_scheduled_by_weekday_names_limits_only_inside_its_window() {
        let budgets = [json!({"nodes": "10%"}), json!({"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "1h"})];
        assert_eq!(allowed_for_reason(&budgets, 4, "Empty", at("2026-01-01T09:30")), Some(0), "Thursday 09:30");
        assert_eq!(allowed_for_reason(&budgets, 4, "Empty", at("2026-01-01T00:07")), Some(1), "before 09:00");
        assert_eq!(allowed_for_reason(&budgets, 4, "Empty", at("2026-01-03T09:30")), Some(1), "Saturday");
    }
}
