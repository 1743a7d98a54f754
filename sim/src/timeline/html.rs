//! The timeline as one self-contained HTML page: inline CSS, the SVG chart drawn in Rust
//! ([`super::svg`]), the violations with the trace lines around each (the chart's markers
//! link to them), the disruptions and faults as tables, and a few lines of inline script
//! (a time cursor over the chart). Nothing is fetched when the page is viewed, and the
//! bytes depend only on the [`Timeline`], so the same scenario and seed give the same file.

use std::fmt::Write as _;

use super::Timeline;
use super::escape::escape;
use super::svg::{self, clock, reason_colour};

/// The page.
pub fn render(t: &Timeline) -> String {
    let title = format!("dovetail timeline: {} seed {}", t.scenario, t.seed);
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"dovetail run --html\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n",
        escape(&title)
    );
    let _ = write!(
        page,
        "<body data-end-seconds=\"{:.3}\">\n<header><h1>{}</h1>\n<p>reproduce: <code id=\"reproduce\">{}</code></p></header>\n",
        t.end.as_secs_f64(),
        escape(&title),
        escape(&t.reproduce)
    );
    let _ = writeln!(page, "<pre id=\"summary\">{}</pre>", escape(&t.summary));
    page.push_str(&legend(t));
    let _ = write!(
        page,
        "<section id=\"chart\"><div id=\"readout\" aria-live=\"polite\">hover the chart for the time</div>\n{}\n</section>\n",
        svg::chart(t)
    );
    page.push_str(&violations(t));
    page.push_str(&disruptions(t));
    page.push_str(&faults(t));
    let _ = write!(page, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    page
}

/// What the colours and marks mean.
fn legend(t: &Timeline) -> String {
    let mut reasons: Vec<&str> = t.disruptions.iter().map(|d| d.reason.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    let mut out = String::from(
        "<p id=\"legend\"><span class=\"key spot\"></span> spot instance \
         <span class=\"key on-demand\"></span> on-demand instance \
         <span class=\"glyph\">▮</span> disruption (coloured by reason) \
         <span class=\"key fault\"></span> fault in force \
         <span class=\"glyph glyph-violation\">◆</span> invariant violation (click for the trace) \
         <span class=\"glyph glyph-interruption\">▼</span> interruption warning \
         <span class=\"key cost\"></span> cost rate <span class=\"key bound\"></span> LP lower bound",
    );
    for r in reasons {
        let _ = write!(out, " <span class=\"glyph\" style=\"color:{}\">●</span> {}", reason_colour(r), escape(r));
    }
    out.push_str("</p>\n");
    out
}

/// Each violation with its message, objects and trace excerpt; the chart's markers link
/// to `#violation-<i>`.
fn violations(t: &Timeline) -> String {
    let vs = &t.violations;
    let mut out = format!("<section id=\"violations\"><h2>Invariant violations ({})</h2>\n", vs.len());
    if vs.is_empty() {
        out.push_str("<p class=\"muted\">none</p>\n");
    }
    for (i, v) in vs.iter().enumerate() {
        let _ = write!(
            out,
            "<article class=\"violation\" id=\"violation-{i}\"><h3>{} at {} <span class=\"muted\">(trace #{})</span></h3>\n<p class=\"message\">{}</p>\n",
            escape(&v.invariant),
            clock(v.at),
            v.trace_position,
            escape(&v.message)
        );
        let m = t.moment(v.at);
        let _ = writeln!(
            out,
            "<p class=\"moment\">at that moment: {} pending pod{}, {} instance{} billed, ${:.4}/h against a bound of ${:.4}/h</p>",
            m.pending,
            if m.pending == 1 { "" } else { "s" },
            m.instances,
            if m.instances == 1 { "" } else { "s" },
            m.cost_rate,
            m.lower_bound
        );
        if !v.objects.is_empty() {
            let objects: Vec<String> = v.objects.iter().map(|o| format!("<li>{}</li>", escape(o))).collect();
            let _ = writeln!(out, "<ul class=\"objects\">{}</ul>", objects.join(""));
        }
        if !v.trace_excerpt.is_empty() {
            out.push_str("<pre class=\"trace\">");
            let mut marked = false;
            for line in &v.trace_excerpt {
                if !marked && line.position >= v.trace_position {
                    let _ = writeln!(out, "<span class=\"seen\">── seen here: trace #{} ──</span>", v.trace_position);
                    marked = true;
                }
                let _ = writeln!(out, "<span class=\"line\">#{:<7} {}</span>", line.position, escape(&line.text));
            }
            if !marked {
                let _ = writeln!(out, "<span class=\"seen\">── seen here: trace #{} ──</span>", v.trace_position);
            }
            out.push_str("</pre>\n");
        }
        out.push_str("</article>\n");
    }
    out.push_str("</section>\n");
    out
}

/// The disruptions as a table.
fn disruptions(t: &Timeline) -> String {
    let mut out = format!(
        "<section id=\"disruptions\"><h2>Disruptions ({})</h2>\n<table><thead><tr><th>at</th><th>reason</th><th>NodeClaim</th><th>instance</th></tr></thead><tbody>\n",
        t.disruptions.len()
    );
    for d in &t.disruptions {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            clock(d.at),
            escape(&d.reason),
            escape(&d.claim),
            escape(d.instance_id.as_deref().unwrap_or("-"))
        );
    }
    out.push_str("</tbody></table></section>\n");
    out
}

/// The faults as a table.
fn faults(t: &Timeline) -> String {
    let mut out = format!(
        "<section id=\"faults\"><h2>Faults ({})</h2>\n<table><thead><tr><th>from</th><th>to</th><th>entry</th><th>kind</th><th>drawn</th></tr></thead><tbody>\n",
        t.faults.len()
    );
    for f in &t.faults {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            clock(f.start),
            clock(f.end),
            escape(&f.entry),
            escape(&f.kind),
            escape(&f.detail)
        );
    }
    out.push_str("</tbody></table></section>\n");
    out
}

const STYLE: &str = "
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#212529;background:#fff}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:20px 0 6px}h3{font-size:13px;margin:0 0 4px}
code,pre{font:12px/1.35 ui-monospace,monospace}
#summary{background:#f8f9fa;padding:8px;border:1px solid #dee2e6;overflow-x:auto}
#chart{position:relative;overflow-x:auto}
#readout{font:12px ui-monospace,monospace;color:#495057;height:16px}
svg text{font:11px system-ui,sans-serif;fill:#343a40}
.section-title,.pool-header{font-weight:600}
.muted{fill:#868e96;color:#868e96}
.tick{fill:#868e96}
.grid{stroke:#e9ecef;stroke-width:1}
.panel{fill:none;stroke:#ced4da}
.fault-band{fill:#fa5252;opacity:.08}
.fault-mark{fill:#fa5252;opacity:.55}
.phase-line{stroke:#495057;stroke-dasharray:4 3}
.phase-label{fill:#495057}
.node-bar.spot{fill:#f08c00}
.node-bar.on-demand{fill:#1c7ed6}
.node-row:hover .node-bar{stroke:#212529;stroke-width:1.5}
.node-row:hover .node-label{font-weight:600}
.interruption-marker{fill:#c92a2a}
.violation-marker path{fill:#e03131;stroke:#7d1a1a}
.disruption-marker{stroke:#fff;stroke-width:1}
.series{fill:none;stroke-width:1.8}
.series.pending{stroke:#5f3dc4}
.series.cost{stroke:#212529}
.series.bound{stroke:#2f9e44;stroke-dasharray:6 4}
#cursor{stroke:#495057;stroke-width:1;pointer-events:none}
#legend .key{display:inline-block;width:14px;height:10px;margin:0 3px 0 10px;vertical-align:middle}
.key.spot{background:#f08c00}.key.on-demand{background:#1c7ed6}.key.fault{background:#fa5252;opacity:.4}
#legend .key.cost{background:#212529;height:2px}#legend .key.bound{border-top:2px dashed #2f9e44;height:0}
#legend .glyph{margin:0 2px 0 10px}.glyph-violation{color:#e03131}.glyph-interruption{color:#c92a2a}
.bar-disruption{stroke:#fff;stroke-width:.5}
.violation{border-left:4px solid #e03131;padding:4px 10px;margin:8px 0;background:#fff5f5}
.violation:target{outline:2px solid #e03131}
.trace{background:#f8f9fa;padding:6px;overflow-x:auto}
.trace .seen{color:#c92a2a;font-weight:600}
table{border-collapse:collapse}td,th{border:1px solid #dee2e6;padding:2px 8px;text-align:left}
";

/// The only script: a vertical cursor and a readout of the simulated time under the mouse.
/// An error in it is written into the page (`data-script-error`), where a test can see it.
const SCRIPT: &str = r#"
window.addEventListener('error', function (e) { document.body.setAttribute('data-script-error', String(e.message)); });
(function () {
  var svg = document.getElementById('timeline');
  var cursor = document.getElementById('cursor');
  var readout = document.getElementById('readout');
  var end = parseFloat(document.body.getAttribute('data-end-seconds'));
  var left = parseFloat(svg.getAttribute('data-plot-left')), right = parseFloat(svg.getAttribute('data-plot-right'));
  function fmt(s) {
    var h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), sec = Math.floor(s % 60);
    return (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + sec + 's';
  }
  svg.addEventListener('mousemove', function (e) {
    var p = svg.createSVGPoint(); p.x = e.clientX; p.y = e.clientY;
    var q = p.matrixTransform(svg.getScreenCTM().inverse());
    if (q.x < left || q.x > right) { cursor.setAttribute('visibility', 'hidden'); return; }
    cursor.setAttribute('x1', q.x); cursor.setAttribute('x2', q.x);
    cursor.setAttribute('visibility', 'visible');
    readout.textContent = 't = ' + fmt((q.x - left) / (right - left) * end);
  });
  document.body.setAttribute('data-rendered', String(document.querySelectorAll('.node-bar').length));
})();
"#;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::timeline::{DisruptionMark, FaultBand, NodeBar, Sample, TraceLine};

    const EVIL: &str = "<script>alert('x')</script>\"&";

    /// A timeline whose every text field holds markup.
    fn hostile() -> Timeline {
        let s = |secs| Duration::from_secs(secs);
        Timeline {
            scenario: EVIL.into(),
            seed: 7,
            end: s(600),
            reproduce: format!("dovetail run {EVIL} --seed 7"),
            summary: EVIL.into(),
            faults_until: Some(s(300)),
            liveness_from: Some(s(400)),
            nodes: vec![NodeBar {
                instance_id: EVIL.into(),
                nodepool: EVIL.into(),
                instance_type: EVIL.into(),
                capacity_type: EVIL.into(),
                zone: EVIL.into(),
                claim: Some(EVIL.into()),
                node: Some(EVIL.into()),
                start: s(10),
                end: None,
                interrupted_at: Some(s(200)),
            }],
            pending: vec![Sample { at: s(0), value: 3 }, Sample { at: s(40), value: 0 }],
            cost_rate: vec![Sample { at: s(10), value: 0.1 }],
            lower_bound: vec![Sample { at: s(0), value: 0.05 }],
            disruptions: vec![DisruptionMark {
                at: s(250),
                claim: EVIL.into(),
                reason: EVIL.into(),
                instance_id: Some(EVIL.into()),
            }],
            faults: vec![FaultBand {
                entry: EVIL.into(),
                kind: EVIL.into(),
                detail: EVIL.into(),
                start: s(60),
                end: s(120),
            }],
            violations: vec![super::super::ViolationMark {
                invariant: EVIL.into(),
                at: s(500),
                trace_position: 2,
                message: EVIL.into(),
                objects: vec![EVIL.into()],
                trace_excerpt: vec![
                    TraceLine { position: 1, text: EVIL.into() },
                    TraceLine { position: 2, text: EVIL.into() },
                ],
            }],
        }
    }

    #[test]
    fn every_text_from_the_run_is_escaped() {
        let page = render(&hostile());
        assert!(!page.contains("<script>alert"), "markup from a name reached the page unescaped");
        assert!(!page.contains("'x'"), "a quote reached the page unescaped");
        assert_eq!(page.matches("<script>").count(), 1, "only the page's own script");
        assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;"));
    }

    #[test]
    fn the_page_is_a_function_of_the_timeline() {
        let t = hostile();
        assert_eq!(render(&t), render(&t.clone()));
        let page = render(&t);
        assert_eq!(page.matches("class=\"node-bar ").count(), 1);
        assert_eq!(page.matches("class=\"violation-marker\"").count(), 1);
        assert!(page.contains("href=\"#violation-0\"") && page.contains("id=\"violation-0\""));
        assert!(page.contains("── seen here: trace #2 ──"));
        assert!(
            page.contains("at that moment: 0 pending pods, 1 instance billed, $0.1000/h against a bound of $0.0500/h"),
            "the violation at 500s sees the one instance, no pending pod, the rate and the bound"
        );
        let seen = page.find("seen here").expect("the marker line");
        let (line1, line2) = (page.find("#1 ").expect("line 1"), page.find("#2 ").expect("line 2"));
        assert!(line1 < seen && seen < line2, "the marker sits between what came before and after");
    }
}
