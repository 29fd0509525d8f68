//! The figures of a shareable report page (`supernode report`), as inline SVG: the Pareto chart
//! (every predicted cluster by hardware cost and the objective, the front and the winner marked),
//! scaling (best decode tokens/s per node count, one line per engine and split) and latency (time
//! to first token, and time per output token as a p50-p99 band, for the same clusters).

use plotters::prelude::RGBColor;

use super::ChartError;
use super::figure::*;

/// One predicted cluster, as the report's charts draw it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportPoint {
    /// The line it belongs to in the scaling and latency charts (e.g. `exo tensor`).
    pub group: String,
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Hardware cost, USD.
    pub cost_usd: f64,
    /// Decode tokens/s.
    pub tokens_per_s: f64,
    /// The objective's score (higher is better; equals tokens/s for the speed goal).
    pub score: f64,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Time per output token, median, ms.
    pub tpot_p50_ms: f64,
    /// Time per output token, 99th percentile, ms.
    pub tpot_p99_ms: f64,
    /// On the Pareto front.
    pub pareto: bool,
    /// The answer.
    pub winner: bool,
}

/// A point's (low, high) range, e.g. TPOT p50 and p99.
type RangeOf = dyn Fn(&ReportPoint) -> (f64, f64);

const GREY: RGBColor = RGBColor(190, 190, 190);

fn scatter(color: RGBColor, points: Vec<(f64, f64)>) -> Series {
    Series { line: Line::None, ..Series::line(color, points) }
}

/// The Pareto chart: every point grey by (cost, score), the cost-score front as a line (each
/// cluster that scores higher than every cheaper one), the winner in red.
/// `None` when there is nothing to draw.
pub fn pareto_svg(title: &str, subtitle: &str, score_desc: &str, points: &[ReportPoint]) -> Result<Option<String>, ChartError> {
    if points.is_empty() {
        return Ok(None);
    }
    let all = scatter(GREY, points.iter().map(|p| (p.cost_usd, p.score)).collect());
    // The front in the plotted plane: by rising cost, each cluster that beats every cheaper one.
    let mut by_cost: Vec<(f64, f64)> =
        points.iter().map(|p| (p.cost_usd, p.score)).filter(|q| q.0.is_finite() && q.1.is_finite()).collect();
    by_cost.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut front: Vec<(f64, f64)> = Vec::new();
    for q in by_cost {
        if front.last().is_none_or(|l| q.1 > l.1) {
            front.push(q);
        }
    }
    let front = Series { width: 2, ..Series::line(PALETTE[0], front) };
    let mut series = vec![all, front];
    let mut legend = vec![
        ("every cluster predicted".to_string(), GREY, Swatch::Marker),
        ("front: no cheaper cluster scores higher".to_string(), PALETTE[0], Swatch::Line),
    ];
    if let Some(w) = points.iter().find(|p| p.winner) {
        let mut s = scatter(PALETTE[3], vec![(w.cost_usd, w.score)]);
        s.labels = vec![format!("answer: {}", fmt_num(w.score))];
        series.push(s);
        legend.push(("the answer".to_string(), PALETTE[3], Swatch::Marker));
    }
    let panel = Panel {
        x_desc: "hardware cost (USD)".into(),
        y_desc: score_desc.into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        y_from_zero: true,
        series,
        x_ticks: vec![],
    };
    let fig = Figure {
        title: title.into(),
        subtitle: subtitle.into(),
        body: Body::Panels(vec![panel]),
        legend,
        footnotes: vec![
            "Grey: every cluster predicted. The table's Pareto column is the front over tokens/s, hardware $ and power together.".into(),
        ],
        size: (1200, 760),
    };
    svg_string(&fig).map(Some)
}

/// Per group, the point with the best score at each node count, by node count.
fn best_per_count(points: &[ReportPoint]) -> Vec<(String, Vec<&ReportPoint>)> {
    let mut groups: Vec<(String, Vec<&ReportPoint>)> = Vec::new();
    for p in points {
        let i = match groups.iter().position(|g| g.0 == p.group) {
            Some(i) => i,
            None => {
                groups.push((p.group.clone(), vec![]));
                groups.len() - 1
            }
        };
        let g = &mut groups[i].1;
        match g.iter_mut().find(|q| q.nodes == p.nodes) {
            Some(q) if q.score < p.score => *q = p,
            Some(_) => {}
            None => g.push(p),
        }
    }
    for g in &mut groups {
        g.1.sort_by_key(|p| p.nodes);
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    groups.truncate(MAX_SERIES);
    groups
}

fn node_panel(y_desc: &str, groups: &[(String, Vec<&ReportPoint>)], y: impl Fn(&ReportPoint) -> f64, band: Option<&RangeOf>) -> Panel {
    let mut ticks: Vec<f64> = groups.iter().flat_map(|g| g.1.iter().map(|p| p.nodes as f64)).collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let series = groups
        .iter()
        .enumerate()
        .map(|(k, (_, pts))| {
            let mut s = Series::line(PALETTE[k % PALETTE.len()], pts.iter().map(|p| (p.nodes as f64, y(p))).collect());
            if let Some(b) = band {
                let lo = pts.iter().map(|p| (p.nodes as f64, b(p).0));
                let hi: Vec<(f64, f64)> = pts.iter().map(|p| (p.nodes as f64, b(p).1)).collect();
                s.band = Some(lo.chain(hi.into_iter().rev()).collect());
            }
            s
        })
        .collect();
    Panel::over_nodes(y_desc, series, ticks)
}

/// Scaling: the best decode tokens/s per node count, one line per group. `None` with fewer than
/// two node counts.
pub fn scaling_svg(title: &str, subtitle: &str, points: &[ReportPoint]) -> Result<Option<String>, ChartError> {
    let groups = best_per_count(points);
    if groups.iter().flat_map(|g| g.1.iter().map(|p| p.nodes)).collect::<std::collections::BTreeSet<_>>().len() < 2 {
        return Ok(None);
    }
    let fig = Figure {
        title: title.into(),
        subtitle: subtitle.into(),
        body: Body::Panels(vec![node_panel("decode tokens/s", &groups, |p| p.tokens_per_s, None)]),
        legend: legend(&groups),
        footnotes: vec!["Each point is the best cluster (by the objective) of that size and engine.".into()],
        size: (1200, 720),
    };
    svg_string(&fig).map(Some)
}

fn legend(groups: &[(String, Vec<&ReportPoint>)]) -> Vec<(String, RGBColor, Swatch)> {
    groups.iter().enumerate().map(|(k, g)| (g.0.clone(), PALETTE[k % PALETTE.len()], Swatch::Line)).collect()
}

/// Latency of the same clusters as [`scaling_svg`]: time to first token, and time per output
/// token with its p50-p99 range as a band. `None` with fewer than two node counts.
pub fn latency_svg(title: &str, subtitle: &str, points: &[ReportPoint]) -> Result<Option<String>, ChartError> {
    let groups = best_per_count(points);
    if groups.iter().flat_map(|g| g.1.iter().map(|p| p.nodes)).collect::<std::collections::BTreeSet<_>>().len() < 2 {
        return Ok(None);
    }
    let band = |p: &ReportPoint| (p.tpot_p50_ms, p.tpot_p99_ms);
    let fig = Figure {
        title: title.into(),
        subtitle: subtitle.into(),
        body: Body::Panels(vec![
            node_panel("time to first token (s)", &groups, |p| p.ttft_s, None),
            node_panel("time per output token (ms), p50 line, p50-p99 band", &groups, |p| p.tpot_p50_ms, Some(&band)),
        ]),
        legend: legend(&groups),
        footnotes: vec!["Same clusters as the scaling chart.".into()],
        size: (1600, 720),
    };
    svg_string(&fig).map(Some)
}
