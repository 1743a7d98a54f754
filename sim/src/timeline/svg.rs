//! The timeline's one chart, drawn in Rust as SVG: lanes stacked over one shared time
//! axis — faults, invariant violations, disruptions by reason, one bar per instance
//! grouped by NodePool — then pending pods and the cost rate against the LP bound.
//! Fault occurrences shade every lane they span. Drawing it here, not in the browser,
//! keeps the page deterministic and readable without scripts; every mark carries a
//! `<title>` (the browser's tooltip) and a class the tests look for.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use dovetail_world::SimDuration;

use super::escape::escape;
use super::{Sample, Timeline};

/// The SVG's width in pixels.
pub const WIDTH: f64 = 1360.0;
/// Where the time axis starts (the label column is to its left).
const LEFT: f64 = 330.0;
/// Right margin.
const RIGHT: f64 = 24.0;
/// Height of a lane row.
const ROW: f64 = 16.0;
/// Height of a NodePool's header row.
const HEADER: f64 = 22.0;
/// Height of the pending-pods panel.
const PENDING_HEIGHT: f64 = 110.0;
/// Height of the cost panel.
const COST_HEIGHT: f64 = 150.0;
/// Gap between sections.
const GAP: f64 = 14.0;

/// The colour of a disruption reason (Karpenter's reasons; anything else grey).
pub fn reason_colour(reason: &str) -> &'static str {
    match reason {
        "Underutilized" => "#2b8a3e",
        "Empty" => "#74b816",
        "Drifted" => "#7048e8",
        "Expired" => "#d6336c",
        "Interrupted" => "#e8590c",
        _ => "#868e96",
    }
}

/// Simulated time to x, over the plot's width.
struct Scale {
    end: f64,
}

impl Scale {
    fn x(&self, at: Duration) -> f64 {
        let frac = if self.end <= 0.0 { 0.0 } else { (at.as_secs_f64() / self.end).clamp(0.0, 1.0) };
        LEFT + frac * (WIDTH - LEFT - RIGHT)
    }
}

/// The chart as one `<svg>` element.
pub fn chart(t: &Timeline) -> String {
    let scale = Scale { end: t.end.as_secs_f64() };
    let mut body = String::new();
    let top = 34.0;
    let mut y = fault_lanes(&mut body, &scale, t, top);
    y = violation_lane(&mut body, &scale, t, y + GAP / 2.0);
    y = disruption_lanes(&mut body, &scale, t, y + GAP / 2.0);
    y = node_rows(&mut body, &scale, t, y + GAP / 2.0);
    y = pending_panel(&mut body, &scale, t, y + GAP);
    let bottom = cost_panel(&mut body, &scale, t, y + GAP + 6.0);
    let back = backdrop(&scale, t, top, bottom);
    let axis = time_axis(&scale, t.end, top, bottom);
    let height = bottom + 30.0;
    format!(
        "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" data-plot-left=\"{LEFT:.1}\" data-plot-right=\"{:.1}\" role=\"img\" aria-label=\"timeline of the run\">{back}{axis}{body}\
         <line id=\"cursor\" x1=\"0\" x2=\"0\" y1=\"{top:.1}\" y2=\"{bottom:.1}\" visibility=\"hidden\"/></svg>",
        WIDTH - RIGHT
    )
}

/// Faults: one row per kind, a mark per occurrence.
fn fault_lanes(out: &mut String, scale: &Scale, t: &Timeline, mut y: f64) -> f64 {
    let mut kinds: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, f) in t.faults.iter().enumerate() {
        kinds.entry(f.kind.as_str()).or_default().push(i);
    }
    section_title(out, y, "faults");
    y += ROW;
    for (kind, faults) in &kinds {
        label(out, y, kind, "lane-label");
        for &i in faults {
            let f = &t.faults[i];
            let (x0, x1) = (scale.x(f.start), scale.x(f.end));
            let tip = format!("{} {} from {} to {}: {}", f.entry, f.kind, clock(f.start), clock(f.end), f.detail);
            let _ = write!(
                out,
                r#"<rect class="fault-mark" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
                y + 2.0,
                (x1 - x0).max(2.0),
                ROW - 4.0,
                escape(&tip)
            );
        }
        y += ROW;
    }
    if kinds.is_empty() {
        label(out, y, "none", "lane-label muted");
        y += ROW;
    }
    y
}

/// Invariant violations: one row, each marker a link to its entry below the chart.
fn violation_lane(out: &mut String, scale: &Scale, t: &Timeline, mut y: f64) -> f64 {
    label(out, y, &format!("invariant violations ({})", t.violations.len()), "lane-label");
    for (i, v) in t.violations.iter().enumerate() {
        let x = scale.x(v.at);
        let tip = format!("{} at {} (trace #{}): {}", v.invariant, clock(v.at), v.trace_position, v.message);
        let _ = write!(
            out,
            "<a href=\"#violation-{i}\" class=\"violation-marker\"><path d=\"M{x:.1} {:.1} l5 6 l-5 6 l-5 -6 z\"/><title>{}</title></a>",
            y + 2.0,
            escape(&tip)
        );
    }
    y += ROW;
    y
}

/// Disruptions: one row per reason, a dot per NodeClaim.
fn disruption_lanes(out: &mut String, scale: &Scale, t: &Timeline, mut y: f64) -> f64 {
    let mut reasons: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, d) in t.disruptions.iter().enumerate() {
        reasons.entry(d.reason.as_str()).or_default().push(i);
    }
    section_title(out, y, "disruptions by reason");
    y += ROW;
    for (reason, marks) in &reasons {
        label(out, y, &format!("{reason} ({})", marks.len()), "lane-label");
        for &i in marks {
            let d = &t.disruptions[i];
            let tip = format!(
                "{} at {}: NodeClaim {}{}",
                d.reason,
                clock(d.at),
                d.claim,
                d.instance_id.as_ref().map(|i| format!(" ({i})")).unwrap_or_default()
            );
            let _ = write!(
                out,
                r#"<circle class="disruption-marker" cx="{:.1}" cy="{:.1}" r="4.5" fill="{}"><title>{}</title></circle>"#,
                scale.x(d.at),
                y + ROW / 2.0,
                reason_colour(&d.reason),
                escape(&tip)
            );
        }
        y += ROW;
    }
    if reasons.is_empty() {
        label(out, y, "none", "lane-label muted");
        y += ROW;
    }
    y
}

/// Instances: one labelled bar each, grouped under their NodePool.
fn node_rows(out: &mut String, scale: &Scale, t: &Timeline, mut y: f64) -> f64 {
    let pools = t.pools();
    let mut pool = None;
    for n in &t.nodes {
        if pool != Some(n.nodepool.as_str()) {
            pool = Some(n.nodepool.as_str());
            let count = pools.get(n.nodepool.as_str()).copied().unwrap_or_default();
            let _ = write!(
                out,
                r#"<text class="pool-header" x="8" y="{:.1}">NodePool {} ({count} instance{})</text>"#,
                y + HEADER - 7.0,
                escape(&n.nodepool),
                if count == 1 { "" } else { "s" }
            );
            y += HEADER;
        }
        let end = n.end.unwrap_or(t.end);
        let (x0, x1) = (scale.x(n.start), scale.x(end));
        let text = format!("{} · {} · {}", n.instance_type, n.capacity_type, n.zone);
        let tip = format!(
            "{} {} ({}) in {}, {} to {}{}{}{}",
            n.instance_id,
            n.instance_type,
            n.capacity_type,
            n.zone,
            clock(n.start),
            n.end.map_or_else(|| "the end (still running)".into(), clock),
            n.claim.as_ref().map(|c| format!(", NodeClaim {c}")).unwrap_or_default(),
            n.node.as_ref().map(|c| format!(", Node {c}")).unwrap_or_default(),
            n.interrupted_at.map(|at| format!(", interrupted at {}", clock(at))).unwrap_or_default()
        );
        let _ = write!(
            out,
            "<g class=\"node-row\" data-instance=\"{}\"><text class=\"node-label\" x=\"16\" y=\"{:.1}\">{} <tspan class=\"muted\">{}</tspan></text>\
             <rect class=\"node-bar {}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"2\"><title>{}</title></rect>",
            escape(&n.instance_id),
            y + ROW - 4.0,
            escape(&text),
            escape(&n.instance_id),
            if n.capacity_type == "spot" { "spot" } else { "on-demand" },
            y + 2.0,
            (x1 - x0).max(1.5),
            ROW - 4.0,
            escape(&tip)
        );
        for d in t.disruptions.iter().filter(|d| d.instance_id.as_deref() == Some(n.instance_id.as_str())) {
            let _ = write!(
                out,
                r#"<rect class="bar-disruption" x="{:.1}" y="{:.1}" width="3" height="{:.1}" fill="{}"><title>{} at {}</title></rect>"#,
                scale.x(d.at) - 1.5,
                y + 1.0,
                ROW - 2.0,
                reason_colour(&d.reason),
                escape(&d.reason),
                clock(d.at)
            );
        }
        if let Some(at) = n.interrupted_at {
            let _ = write!(
                out,
                r#"<path class="interruption-marker" d="M{:.1} {:.1} l4 -5 h-8 z"><title>interrupted at {}</title></path>"#,
                scale.x(at),
                y + ROW - 2.0,
                clock(at)
            );
        }
        out.push_str("</g>");
        y += ROW;
    }
    if t.nodes.is_empty() {
        label(out, y, "no instances", "lane-label muted");
        y += ROW;
    }
    y
}

/// Pending pods as a step line.
fn pending_panel(out: &mut String, scale: &Scale, t: &Timeline, y: f64) -> f64 {
    let max_pending = t.pending.iter().map(|s| s.value).max().unwrap_or(0).max(1) as f64;
    panel(out, scale, y, PENDING_HEIGHT, "pending pods", &[(0.0, "0".into()), (max_pending, fmt_count(max_pending))]);
    let path = step_path(scale, &t.pending, t.end, |v| y + PENDING_HEIGHT - *v as f64 / max_pending * PENDING_HEIGHT);
    let _ = write!(out, r#"<path id="pending-series" class="series pending" d="{path}"/>"#);
    y + PENDING_HEIGHT
}

/// The cost rate (solid) against the LP bound (dashed), in USD per hour.
fn cost_panel(out: &mut String, scale: &Scale, t: &Timeline, y: f64) -> f64 {
    let max_cost = t.cost_rate.iter().chain(&t.lower_bound).map(|s| s.value).fold(0.0, f64::max);
    let max_cost = if max_cost > 0.0 { max_cost * 1.1 } else { 1.0 };
    let ticks: Vec<(f64, String)> =
        (0..=4).map(|i| max_cost * f64::from(i) / 4.0).map(|v| (v, format!("${v:.3}/h"))).collect();
    panel(out, scale, y, COST_HEIGHT, "cost rate vs LP bound", &ticks);
    let cost_y = |v: &f64| y + COST_HEIGHT - v / max_cost * COST_HEIGHT;
    let rate = step_path(scale, &t.cost_rate, t.end, cost_y);
    let bound = step_path(scale, &t.lower_bound, t.end, cost_y);
    let _ = write!(
        out,
        r#"<path id="cost-rate-series" class="series cost" d="{rate}"><title>cost rate, USD per hour</title></path>"#
    );
    let _ = write!(
        out,
        r#"<path id="lower-bound-series" class="series bound" d="{bound}"><title>LP lower bound, USD per hour</title></path>"#
    );
    y + COST_HEIGHT
}

/// Behind the lanes: a band per fault over the whole height, and the phase lines.
fn backdrop(scale: &Scale, t: &Timeline, top: f64, bottom: f64) -> String {
    let mut out = String::new();
    for f in &t.faults {
        let (x0, x1) = (scale.x(f.start), scale.x(f.end));
        let _ = write!(
            out,
            r#"<rect class="fault-band" x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"/>"#,
            (x1 - x0).max(2.0),
            bottom - top
        );
    }
    // The heal label sits left of its line, the liveness label right of its own, so the
    // two never overlap (liveness never starts before the heal).
    for (at, name, dx, anchor) in [(t.faults_until, "heal", -3.0, "end"), (t.liveness_from, "liveness", 3.0, "start")] {
        if let Some(at) = at {
            let x = scale.x(at);
            let _ = write!(
                out,
                r#"<line class="phase-line" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{bottom:.1}"/><text class="phase-label" x="{:.1}" y="{:.1}" text-anchor="{anchor}">{name} {}</text>"#,
                top - 6.0,
                x + dx,
                top - 8.0,
                clock(at)
            );
        }
    }
    out
}

/// A bold section title in the label column.
fn section_title(out: &mut String, y: f64, text: &str) {
    let _ = write!(out, r#"<text class="section-title" x="8" y="{:.1}">{}</text>"#, y + ROW - 4.0, escape(text));
}

/// A lane's label in the label column.
fn label(out: &mut String, y: f64, text: &str, class: &str) {
    let _ = write!(out, r#"<text class="{class}" x="16" y="{:.1}">{}</text>"#, y + ROW - 4.0, escape(text));
}

/// A panel's frame, its title and its y ticks (`(value, label)` from 0 at the bottom to
/// the largest `value` at the top).
fn panel(out: &mut String, scale: &Scale, top: f64, height: f64, title: &str, ticks: &[(f64, String)]) {
    let max = ticks.iter().map(|(v, _)| *v).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let (x0, x1) = (scale.x(Duration::ZERO), WIDTH - RIGHT);
    let _ = write!(
        out,
        r#"<text class="section-title" x="8" y="{:.1}">{}</text><rect class="panel" x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{height:.1}"/>"#,
        top + 12.0,
        escape(title),
        x1 - x0
    );
    for (v, text) in ticks {
        let y = top + height - v / max * height;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x0:.1}" x2="{x1:.1}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            y + 4.0,
            escape(text)
        );
    }
}

/// A step function's path: each sample holds until the next, the last until `end`.
fn step_path<T>(scale: &Scale, series: &[Sample<T>], end: Duration, y: impl Fn(&T) -> f64) -> String {
    let mut d = String::new();
    for (i, s) in series.iter().enumerate() {
        let (x, v) = (scale.x(s.at), y(&s.value));
        if i == 0 {
            let _ = write!(d, "M{x:.1} {v:.1}");
        } else {
            let _ = write!(d, "H{x:.1}V{v:.1}");
        }
    }
    if !series.is_empty() {
        let _ = write!(d, "H{:.1}", scale.x(end));
    }
    d
}

/// Time ticks along the top and bottom, with vertical grid lines between `top` and
/// `bottom`.
fn time_axis(scale: &Scale, end: Duration, top: f64, bottom: f64) -> String {
    let step = tick_step(end);
    let mut out = String::new();
    let mut at = Duration::ZERO;
    while at <= end {
        let x = scale.x(at);
        let _ = write!(
            out,
            r#"<line class="grid time" x1="{x:.1}" x2="{x:.1}" y1="{top:.1}" y2="{bottom:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{t}</text><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{t}</text>"#,
            top - 20.0,
            bottom + 16.0,
            t = clock(at)
        );
        at += step;
    }
    out
}

/// The smallest round step that puts at most 12 ticks on the axis.
fn tick_step(end: Duration) -> Duration {
    const STEPS: [u64; 16] = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200];
    let secs = end.as_secs_f64();
    let step = STEPS.iter().copied().find(|s| secs / *s as f64 <= 12.0).unwrap_or(86_400);
    Duration::from_secs(step)
}

/// Simulated time as the report prints it (`12m30s`).
pub fn clock(d: Duration) -> String {
    SimDuration(d).to_string()
}

fn fmt_count(v: f64) -> String {
    format!("{v:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_stay_few_and_round() {
        assert_eq!(tick_step(Duration::from_secs(36 * 60)), Duration::from_secs(300));
        assert_eq!(tick_step(Duration::from_secs(2 * 3600)), Duration::from_secs(600));
        assert_eq!(tick_step(Duration::from_secs(2 * 3600 + 1)), Duration::from_secs(900));
        assert_eq!(tick_step(Duration::from_secs(10)), Duration::from_secs(1));
    }

    #[test]
    fn a_step_path_holds_each_value_until_the_next() {
        let scale = Scale { end: 10.0 };
        let s = [Sample { at: Duration::ZERO, value: 1.0 }, Sample { at: Duration::from_secs(5), value: 2.0 }];
        let d = step_path(&scale, &s, Duration::from_secs(10), |v| *v);
        let mid = scale.x(Duration::from_secs(5));
        assert_eq!(d, format!("M{LEFT:.1} 1.0H{mid:.1}V2.0H{:.1}", WIDTH - RIGHT));
    }
}
