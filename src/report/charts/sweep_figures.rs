//! The figures drawn from a sweep: per model, scaling / power / cost vs nodes (`NodeChart`),
//! TTFT vs prompt length, the equal-budget comparison; and the memory-fit grid over all models.

use plotters::prelude::*;

use crate::catalog::catalog;
use crate::scenario::ErrorKind;

use super::figure::*;
use super::labels::*;
use super::lines::*;
use super::{ChartRow, Metric};

pub(super) struct NodeChart<'a> {
    pub(super) rows: Vec<&'a ChartRow>,
    /// Every node count the sweep tried for this model (run or not), ascending.
    pub(super) counts: Vec<u64>,
    pub(super) lines: Vec<Line2>,
    pub(super) extra: usize,
}

pub(super) fn node_chart<'a>(rows: &[&'a ChartRow], axes: &[String]) -> Option<NodeChart<'a>> {
    let mut counts: Vec<usize> = rows.iter().filter(|r| r.fits).filter_map(|r| r.info()).map(|i| i.nodes.len()).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() < 2 {
        return None;
    }
    let mut ls = lines(rows, axes, NODE_X_KEYS, |i| i.nodes.len() as u64, true);
    let extra = ls.len().saturating_sub(MAX_SERIES);
    ls.truncate(MAX_SERIES);
    let mut counts: Vec<u64> = rows.iter().filter_map(|r| row_nodes(r)).map(|n| n as u64).collect();
    counts.sort_unstable();
    counts.dedup();
    Some(NodeChart { rows: rows.to_vec(), counts, lines: ls, extra })
}

impl NodeChart<'_> {
    pub(super) fn panel(&self, y_desc: &str, y: Metric) -> Panel {
        let series = self
            .lines
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let pts = with_gaps(l, &self.counts, |at| point_value(&self.rows, at, y));
                let mut s = Series::line(PALETTE[k % PALETTE.len()], pts.clone());
                if self.lines.len() <= 4 {
                    s.labels = pts.iter().map(|p| if p.1.is_finite() { fmt_num(p.1) } else { String::new() }).collect();
                }
                s
            })
            .collect();
        Panel::over_nodes(y_desc, series, self.counts.iter().map(|&c| c as f64).collect())
    }

    /// A figure of one panel per (y axis, metric), with the legend and footnotes of the lines.
    pub(super) fn figure(&self, title: String, subtitle: String, panels: &[(&str, Metric)], axes: &[String], note: Option<&str>) -> Figure {
        Figure {
            title,
            subtitle,
            body: Body::Panels(panels.iter().map(|(desc, m)| self.panel(desc, *m)).collect()),
            legend: self.legend(),
            footnotes: self.footnotes(axes, note.map(str::to_string)),
            size: (if panels.len() > 1 { 1600 } else { 1200 }, 800),
        }
    }

    pub(super) fn legend(&self) -> Vec<(String, RGBColor, Swatch)> {
        self.lines.iter().enumerate().map(|(k, l)| (l.label(), PALETTE[k % PALETTE.len()], Swatch::Line)).collect()
    }

    pub(super) fn footnotes(&self, axes: &[String], extra: Option<String>) -> Vec<String> {
        let mut f = Vec::new();
        if let Some(e) = extra {
            f.push(e);
        }
        if axes.iter().any(|a| a == "seed") {
            f.push("Each point is the mean over the seeds swept (runs differing only in their jitter stream).".into());
        }
        if let Some(n) = not_fit_note(&self.rows, axes, NODE_X_KEYS) {
            f.push(n);
        }
        if self.extra > 0 {
            f.push(format!("{} more lines not drawn (at most {MAX_SERIES} per chart; see results.csv)", self.extra));
        }
        f
    }
}

pub(super) fn memory_fit(rows: &[ChartRow], sweep_name: &str) -> Option<Figure> {
    // Columns: one per (model, quant, engine), so a model that fits in one format or engine and
    // not in another shows both; cells: (column, cluster) -> rows.
    let mut columns: Vec<(String, String, String)> = Vec::new();
    let mut clusters: Vec<(Vec<String>, f64)> = Vec::new();
    for r in rows {
        let Some(i) = r.info() else { continue };
        let col = (i.model.clone(), i.quant.clone(), i.engine.clone());
        if !columns.contains(&col) {
            columns.push(col);
        }
        if !clusters.iter().any(|(c, _)| *c == i.nodes) {
            let mem: f64 = i.nodes.iter().map(|n| catalog().node(n).map_or(0.0, |s| s.memory_gb)).sum();
            clusters.push((i.nodes.clone(), mem));
        }
    }
    if columns.is_empty() || (columns.len() < 2 && clusters.len() < 2) {
        return None;
    }
    clusters.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.len().cmp(&b.0.len())).then(a.0.cmp(&b.0)));
    let green = RGBColor(120, 200, 120);
    let yellow = RGBColor(250, 210, 90);
    let red = RGBColor(235, 120, 110);
    let gray = RGBColor(200, 200, 200);
    let mut cells = Vec::new();
    let mut max_ctx_all = 0;
    for (mi, (m, q, eng)) in columns.iter().enumerate() {
        for (ci, (c, _)) in clusters.iter().enumerate() {
            let cell: Vec<&ChartRow> = rows
                .iter()
                .filter(|r| r.info().is_some_and(|i| i.model == *m && i.quant == *q && i.engine == *eng && i.nodes == *c))
                .collect();
            if cell.is_empty() {
                continue;
            }
            let ctx = |r: &ChartRow| r.info().map_or(0, |i| i.prompt_tokens + i.generate_tokens);
            max_ctx_all = max_ctx_all.max(cell.iter().map(|r| ctx(r)).max().unwrap_or(0));
            // Points past the model's context window are no memory question: the cell is judged
            // on the contexts the model takes, and says when its window cut the sweep short.
            let past_window = |r: &&ChartRow| r.error_kind() == Some(ErrorKind::ContextWindow);
            let window_cut = cell.iter().any(past_window);
            let cell: Vec<&ChartRow> = cell.into_iter().filter(|r| !past_window(r)).collect();
            let max_ctx = cell.iter().map(|r| ctx(r)).max().unwrap_or(0);
            let fit_at_max = cell
                .iter()
                .filter(|r| r.fits && ctx(r) == max_ctx)
                .filter_map(|r| r.estimate.as_ref())
                .min_by(|a, b| a.max_memory_per_node_gb().total_cmp(&b.max_memory_per_node_gb()));
            let best_fit_ctx = cell.iter().filter(|r| r.fits).map(|r| ctx(r)).max();
            let (fill, text) = if cell.is_empty() {
                (gray, "past its context window".to_string())
            } else if let (Some(e), false) = (fit_at_max, window_cut) {
                let used = e.max_memory_per_node_gb();
                (green, format!("fits ({used:.0} GB/node)"))
            } else if let Some(c) = best_fit_ctx {
                let why = if window_cut && fit_at_max.is_some() { " (its window)" } else { "" };
                (yellow, format!("fits to {} context{why}", fmt_tokens(c)))
            } else if cell.iter().any(|r| r.error_kind() == Some(ErrorKind::DoesNotFit)) {
                (red, "does not fit".to_string())
            } else {
                (gray, "cannot run".to_string())
            };
            cells.push((mi, ci, fill, text));
        }
    }
    let n_cells = cells.len();
    let width = (300 + 250 * columns.len() as u32).clamp(1200, 3600);
    let height = (260 + 56 * clusters.len() as u32).clamp(700, 2000);
    Some(Figure {
        title: "Memory fit: which models run on which clusters (predicted)".into(),
        subtitle: format!(
            "{n_cells} (model, quantization, engine) x cluster cells · weights + KV cache at the swept context + runtime, against each node's wired limit · sweep {sweep_name}"
        ),
        body: Body::Grid(Grid {
            x_desc: "model, quantization and engine".into(),
            y_desc: "cluster".into(),
            x_names: columns
                .iter()
                .map(|(m, q, e)| format!("{}\n{q} · {}", model_name(m), pretty_value("engine.name", &e.as_str().into())))
                .collect(),
            y_names: clusters.iter().map(|(c, _)| cluster_label(c)).collect(),
            cells,
        }),
        legend: vec![
            (format!("fits with context {} (largest GB used on a node)", fmt_tokens(max_ctx_all)), green, Swatch::Box),
            ("fits only with a shorter context (memory, or the model's context window)".into(), yellow, Swatch::Box),
            ("does not fit".into(), red, Swatch::Box),
            ("cannot run (illegal split, ports, context window, ...)".into(), gray, Swatch::Box),
        ],
        footnotes: vec![],
        size: (width, height),
    })
}

pub(super) fn equal_budget(model: &str, rows: &[&ChartRow], sweep_name: &str) -> Option<Figure> {
    // (family, [(cost, tokens/s, node count)])
    type Family = (String, Vec<(f64, f64, usize)>);
    let mut families: Vec<Family> = Vec::new();
    for r in rows.iter().filter(|r| r.fits) {
        let Some(i) = r.info().filter(|_| r.estimate.is_some()) else { continue };
        // A line per exact node presets and engine the sweep ran (two presets of one chip are
        // two lines, named by their presets, never merged under a family name).
        let f = format!(
            "{}: {} · {}",
            chip_family(&i.nodes),
            {
                let mut ids: Vec<&str> = i.nodes.iter().map(String::as_str).collect();
                ids.dedup();
                ids.join(" + ")
            },
            pretty_value("engine.name", &i.engine.as_str().into())
        );
        let p = (r.mean(Metric::CostUsd), r.mean(Metric::DecodeTokensPerS), i.nodes.len());
        match families.iter_mut().find(|(n, _)| *n == f) {
            Some((_, v)) => v.push(p),
            None => families.push((f, vec![p])),
        }
    }
    if families.len() < 2 {
        return None;
    }
    let max_cost = families.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(0.0, f64::max);
    let mut series = Vec::new();
    let mut legend = Vec::new();
    for (k, (name, pts)) in families.iter_mut().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        // Best tokens/s reachable at each budget: a staircase over the cost-sorted points.
        let mut stair = Vec::new();
        let mut best = f64::NEG_INFINITY;
        for &(c, t, _) in pts.iter() {
            if t > best {
                if best.is_finite() {
                    stair.push((c, best));
                }
                stair.push((c, t));
                best = t;
            }
        }
        // The best stays reachable at any larger budget.
        stair.push((max_cost, best));
        let mut s = Series::line(color, stair);
        s.markers = false;
        s.width = 2;
        series.push(s);
        let mut dots = Series::line(color, pts.iter().map(|p| (p.0, p.1)).collect());
        dots.line = Line::None;
        dots.labels = pts.iter().map(|p| format!("{}x", p.2)).collect();
        series.push(dots);
        legend.push((name.clone(), color, Swatch::Line));
    }
    Some(Figure {
        title: format!("{}: equal-budget comparison (predicted)", model_name(model)),
        subtitle: format!(
            "best decode tokens/s reachable for a hardware budget; points are clusters labelled by node count · {} · sweep {sweep_name}",
            workload_text(rows)
        ),
        body: Body::Panels(vec![Panel {
            x_desc: "hardware cost (USD: nodes, cables, switch)".into(),
            y_desc: "decode tokens/s".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            y_from_zero: true,
            series,
            x_ticks: vec![],
        }]),
        legend,
        footnotes: vec![
            "Line: the best swept cluster of those nodes and engine at or under each budget (a point is one cluster, its node count beside it). Prices from the catalog (`supernode catalog nodes`).".into(),
        ],
        size: (1300, 850),
    })
}

pub(super) fn ttft(model: &str, rows: &[&ChartRow], axes: &[String], sweep_name: &str) -> Option<Figure> {
    let mut prompts: Vec<u64> = rows.iter().filter(|r| r.fits).filter_map(|r| r.info()).map(|i| i.prompt_tokens).collect();
    prompts.sort_unstable();
    prompts.dedup();
    if prompts.len() < 2 {
        return None;
    }
    let mut ls = lines(rows, axes, &["workload.prompt_tokens"], |i| i.prompt_tokens, false);
    let extra = ls.len().saturating_sub(MAX_SERIES);
    ls.truncate(MAX_SERIES);
    let log = prompts[prompts.len() - 1] >= 4 * prompts[0];
    let ttfts: Vec<f64> = rows.iter().filter(|r| r.estimate.is_some()).map(|r| r.mean(Metric::TtftS)).filter(|t| *t > 0.0).collect();
    let (tmin, tmax) = bounds(ttfts.into_iter()).unwrap_or((1.0, 1.0));
    let log_y = tmax > 30.0 * tmin;
    let mut swept: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.info().map(|i| i.prompt_tokens).or_else(|| r.overrides.get("workload.prompt_tokens").and_then(|v| v.as_u64())))
        .collect();
    swept.sort_unstable();
    swept.dedup();
    let series = ls
        .iter()
        .enumerate()
        .map(|(k, l)| Series::line(PALETTE[k % PALETTE.len()], with_gaps(l, &swept, |at| point_value(rows, at, Metric::TtftS))))
        .collect();
    let mut footnotes = Vec::new();
    if let Some(n) = not_fit_note(rows, axes, &["workload.prompt_tokens"]) {
        footnotes.push(n);
    }
    if extra > 0 {
        footnotes.push(format!("{extra} more lines not drawn (at most {MAX_SERIES} per chart; see results.csv)"));
    }
    Some(Figure {
        title: format!("{}: time to first token vs prompt length (predicted)", model_name(model)),
        subtitle: format!("{} · sweep {sweep_name}", cluster_text(rows)),
        body: Body::Panels(vec![Panel {
            x_desc: "prompt length (tokens)".into(),
            y_desc: "time to first token (s)".into(),
            x_scale: if log { Scale::Log2 } else { Scale::Linear },
            y_scale: if log_y { Scale::Log10 } else { Scale::Linear },
            y_from_zero: !log_y,
            series,
            x_ticks: vec![],
        }]),
        legend: ls.iter().enumerate().map(|(k, l)| (l.label(), PALETTE[k % PALETTE.len()], Swatch::Line)).collect(),
        footnotes,
        size: (1200, 800),
    })
}

/// The points of a line over the swept x values: a value where the line ran, NaN (a gap: the
/// line breaks, no marker) at a swept x between its first and last point where it did not.
pub(super) fn with_gaps(l: &Line2, swept: &[u64], value: impl Fn(&[usize]) -> f64) -> Vec<(f64, f64)> {
    let (Some(&first), Some(&last)) = (l.points.keys().next(), l.points.keys().next_back()) else { return vec![] };
    let mut xs: Vec<u64> = swept.iter().copied().filter(|x| (first..=last).contains(x)).chain(l.points.keys().copied()).collect();
    xs.sort_unstable();
    xs.dedup();
    xs.into_iter().map(|x| (x as f64, l.points.get(&x).map_or(f64::NAN, |at| value(at)))).collect()
}
