//! The latency-vs-load chart of `plan --slo` (the hockey stick): p99 TPOT and p99 TTFT of every
//! probe against the load, one curve per cluster option, the SLO target as a dashed horizontal
//! line, and each option's capacity marked and labelled.

use std::path::{Path, PathBuf};

use plotters::style::RGBColor;

use super::ChartError;
use super::figure::{Body, Figure, Line, MAX_SERIES, PALETTE, Panel, Scale, Series, Swatch, bounds, render, svg_string};
use crate::capacity::slo::{Probe, SloPlan};

/// The targets' dashed line: black, a colour no option's series takes (the palette's fourth is
/// a red that a red target line was mistaken for once a spec had four options).
const SLO_COLOR: RGBColor = RGBColor(0, 0, 0);

/// One panel: `y` of every probe per option, the target line, the capacities marked.
fn panel(plan: &SloPlan, y: fn(&Probe) -> f64, y_desc: &str, target: Option<f64>, x_scale: Scale) -> Panel {
    let axis = plan.axis();
    let mut series = Vec::new();
    for (k, o) in plan.options.iter().take(MAX_SERIES).enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let pts: Vec<(f64, f64)> = o.probes.iter().map(|p| (p.load, y(p))).filter(|q| q.1 > 0.0).collect();
        series.push(Series::line(color, pts));
        if let Some(p) = o.at_capacity().filter(|p| y(p) > 0.0) {
            let mut mark = Series::line(color, vec![(p.load, y(p))]);
            mark.line = Line::None;
            mark.labels = vec![format!("capacity {}", axis.fmt(p.load))];
            series.push(mark);
        }
    }
    let ys: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|q| q.1)).chain(target).collect();
    let (lo, hi) = bounds(ys.into_iter()).unwrap_or((1.0, 1.0));
    let log_y = hi > 30.0 * lo;
    if let Some(t) = target {
        let xs = series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
        if let Some((x0, x1)) = bounds(xs) {
            let mut line = Series::line(SLO_COLOR, vec![(x0, t), (x1, t)]);
            line.line = Line::Dashed;
            line.markers = false;
            line.width = 2;
            series.push(line);
        }
    }
    Panel {
        x_desc: match axis {
            crate::capacity::slo::Axis::Rate => "offered load (requests/s, Poisson)".into(),
            crate::capacity::slo::Axis::Users => "closed-loop users".into(),
        },
        y_desc: y_desc.into(),
        x_scale,
        y_scale: if log_y { Scale::Log10 } else { Scale::Linear },
        y_from_zero: !log_y,
        series,
        x_ticks: vec![],
    }
}

/// The figure of an SLO plan.
fn figure(plan: &SloPlan) -> Figure {
    let loads: Vec<f64> = plan.options.iter().flat_map(|o| o.probes.iter().map(|p| p.load)).collect();
    let (lo, hi) = bounds(loads.into_iter()).unwrap_or((1.0, 1.0));
    let x_scale = if lo > 0.0 && hi > 8.0 * lo { Scale::Log10 } else { Scale::Linear };
    let tpot = panel(plan, |p| p.tpot_p99_ms, "p99 time per output token (ms)", plan.tpot_p99_ms, x_scale);
    let ttft = panel(plan, |p| p.ttft_p99_s, "p99 time to first token (s)", plan.ttft_p99_s, x_scale);
    let mut legend: Vec<(String, RGBColor, Swatch)> = plan
        .options
        .iter()
        .take(MAX_SERIES)
        .enumerate()
        .map(|(k, o)| (o.label.clone(), PALETTE[k % PALETTE.len()], Swatch::Line))
        .collect();
    legend.push((format!("SLO: {}", plan.targets()), SLO_COLOR, Swatch::Line));
    let mut footnotes = vec![format!(
        "Each point is one predicted serving run ({} requests measured after warm-up, fewer where a run reaches the cap on simulated forwards). \
         Capacity: the highest load meeting every target and keeping up with arrivals, found by bisection.",
        plan.probe_requests
    )];
    for o in &plan.options {
        if let Some(e) = &o.error {
            footnotes.push(format!("{}: cannot run: {e}", o.label));
        } else if o.capacity.is_none() {
            footnotes.push(format!("{}: no load probed meets the SLO", o.label));
        }
    }
    if plan.options.len() > MAX_SERIES {
        footnotes.push(format!("{} more options not drawn (see the table)", plan.options.len() - MAX_SERIES));
    }
    Figure {
        title: "Latency vs load (predicted)".into(),
        subtitle: plan.question.clone(),
        body: Body::Panels(vec![tpot, ttft]),
        legend,
        footnotes,
        size: (1600, 800),
    }
}

/// Writes `slo-latency-vs-load.png` and `.svg` in `dir` (atomically, embedded font).
pub fn slo_chart(plan: &SloPlan, dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    render(&SloPlan::chart_stem(dir), &figure(plan))
}

/// The same chart as an SVG string, for the report page.
pub fn slo_svg(plan: &SloPlan) -> Result<String, ChartError> {
    svg_string(&figure(plan))
}
