//! Charts (plotters, PNG and SVG, with the DejaVu Sans font embedded so text renders on machines
//! without system fonts): scaling, power and efficiency, cost, memory fit, TTFT vs prompt length,
//! equal-budget comparison, drawn from saved sweep results; and the measured-vs-predicted parity
//! chart used by `validate --plot`.
//!
//! Files: [`figure`] (the figure model and renderer), [`parity`], [`labels`], [`lines`] (rows
//! grouped into chart lines), [`sweep_figures`]. Charts read the sweep's rows (each embeds the
//! one [`Estimate`] type) and pick metrics by name ([`Metric`]).

use std::ops::Deref;
use std::path::{Path, PathBuf};

use crate::capacity::sweep::{self, Manifest, Row};
use crate::estimate::Estimate;
use crate::util::slug;

pub mod figure;
pub mod gantt;
pub mod labels;
pub mod lines;
pub mod parity;
pub mod report_figures;
pub mod slo_chart;
pub mod sweep_figures;

pub use figure::{fmt_num, init_fonts};
pub use gantt::gantt_chart;
pub use parity::{ParityPoint, parity_chart, unit_of};
pub use report_figures::{ReportPoint, latency_svg, pareto_svg, scaling_svg};
pub use slo_chart::{slo_chart, slo_svg};

use figure::render;
use labels::model_name;
use lines::{by_model, cluster_text, workload_text};
use sweep_figures::{equal_budget, memory_fit, node_chart, ttft};

/// Chart kinds a sweep can draw, for `supernode plot DIR --chart NAME`.
pub const CHARTS: &[(&str, &str)] = &[
    ("scaling", "decode tokens/s vs node count, one line per engine/fabric (per model)"),
    ("power", "cluster power and tokens per joule vs node count (per model)"),
    ("cost", "hardware $ per token/s and $ per million tokens vs node count (per model)"),
    ("memory-fit", "models x cluster sizes: fits, fits only to a shorter context, does not fit"),
    ("ttft", "time to first token vs prompt length (per model; needs a workload.prompt_tokens axis)"),
    ("equal-budget", "best tokens/s for a hardware budget, one line per chip family (per model; needs two families)"),
];

/// Why a chart cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// Bad request or data that does not support the chart.
    #[error("{0}")]
    Input(String),
    /// Rendering or writing failed.
    #[error("{0}")]
    Draw(String),
}

impl From<sweep::SweepError> for ChartError {
    fn from(e: sweep::SweepError) -> Self {
        ChartError::Input(e.to_string())
    }
}

/// A number charts draw from an estimate, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Decode tokens/s.
    DecodeTokensPerS,
    /// Prefill tokens/s.
    PrefillTokensPerS,
    /// Time to first token, s.
    TtftS,
    /// Median time per output token, ms.
    TpotP50Ms,
    /// 99th-percentile time per output token, ms.
    TpotP99Ms,
    /// Cluster power during decode, W.
    ClusterPowerW,
    /// Energy per generated token, J.
    EnergyJPerToken,
    /// Tokens per joule.
    TokensPerJoule,
    /// USD per million tokens.
    UsdPerMtok,
    /// Hardware USD per decode token/s.
    UsdPerTokenPerS,
    /// Hardware cost, USD.
    CostUsd,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Metric; 11] = [
        Metric::DecodeTokensPerS,
        Metric::PrefillTokensPerS,
        Metric::TtftS,
        Metric::TpotP50Ms,
        Metric::TpotP99Ms,
        Metric::ClusterPowerW,
        Metric::EnergyJPerToken,
        Metric::TokensPerJoule,
        Metric::UsdPerMtok,
        Metric::UsdPerTokenPerS,
        Metric::CostUsd,
    ];

    /// The metric's value in an estimate.
    pub fn of(self, e: &Estimate) -> f64 {
        match self {
            Metric::DecodeTokensPerS => e.decode_tokens_per_s,
            Metric::PrefillTokensPerS => e.prefill_tokens_per_s,
            Metric::TtftS => e.ttft_s,
            Metric::TpotP50Ms => e.tpot_ms.p50,
            Metric::TpotP99Ms => e.tpot_ms.p99,
            Metric::ClusterPowerW => e.cluster_power_w,
            Metric::EnergyJPerToken => e.energy_j_per_token,
            Metric::TokensPerJoule => e.tokens_per_joule(),
            Metric::UsdPerMtok => e.usd_per_mtok,
            Metric::UsdPerTokenPerS => e.usd_per_token_per_s,
            Metric::CostUsd => e.cost_usd,
        }
    }
}

/// A sweep row for charts: rows that differ only in `seed` are replicates, merged into one
/// whose metrics are their means (summed in index order).
#[derive(Clone, Debug)]
pub struct ChartRow {
    /// The first replicate's row.
    pub row: Row,
    sums: [f64; Metric::ALL.len()],
    lo: [f64; Metric::ALL.len()],
    hi: [f64; Metric::ALL.len()],
    replicates: u32,
}

impl ChartRow {
    fn new(row: Row) -> Self {
        const N: usize = Metric::ALL.len();
        let mut r = ChartRow { row, sums: [0.0; N], lo: [f64::INFINITY; N], hi: [f64::NEG_INFINITY; N], replicates: 0 };
        if let Some(e) = r.row.estimate.clone() {
            r.add(&e);
        }
        r
    }

    fn add(&mut self, e: &Estimate) {
        for m in Metric::ALL {
            let v = m.of(e);
            self.sums[m as usize] += v;
            self.lo[m as usize] = self.lo[m as usize].min(v);
            self.hi[m as usize] = self.hi[m as usize].max(v);
        }
        self.replicates += 1;
    }

    /// The lowest and highest value of a metric over the replicates (seeds), when it runs.
    pub fn range(&self, m: Metric) -> Option<(f64, f64)> {
        (self.replicates > 0).then(|| (self.lo[m as usize], self.hi[m as usize]))
    }

    /// How many replicates (seeds) the row merges.
    pub fn replicates(&self) -> u32 {
        self.replicates
    }

    /// The mean of a metric over the replicates (0 when the point does not run).
    pub fn mean(&self, m: Metric) -> f64 {
        self.sums[m as usize] / f64::from(self.replicates.max(1))
    }
}

impl Deref for ChartRow {
    type Target = Row;

    fn deref(&self) -> &Row {
        &self.row
    }
}

/// Draws the charts of a sweep output directory into `DIR/charts/` (`only`: one kind from
/// [`CHARTS`]). Returns the files written.
pub fn draw_sweep(dir: &Path, only: Option<&str>) -> Result<Vec<PathBuf>, ChartError> {
    if let Some(o) = only {
        if !CHARTS.iter().any(|(n, _)| *n == o) {
            let names: Vec<&str> = CHARTS.iter().map(|(n, _)| *n).collect();
            return Err(ChartError::Input(format!("unknown chart `{o}`; charts: {}", names.join(", "))));
        }
    }
    let manifest = Manifest::read(dir)?;
    let rows = read_chart_rows(dir)?;
    if rows.is_empty() {
        return Err(ChartError::Input(format!(
            "{} has no results to draw ({} of {} points written): run or resume the sweep first",
            dir.display(),
            manifest.points_done,
            manifest.points_in_shard
        )));
    }
    if !manifest.complete {
        eprintln!(
            "warning: the sweep in {} is incomplete ({} of {} points written): the charts show only those points; \
             finish it with `supernode sweep ... --resume`",
            dir.display(),
            manifest.points_done,
            manifest.points_in_shard
        );
    }
    draw_rows(dir, &manifest, &rows, only)
}

/// Most distinct configurations a chart set is drawn from (memory stays bounded however many
/// points a sweep has; beyond this, charts are per-slice work for `plot` on a smaller sweep).
pub const MAX_CHART_ROWS: usize = 50_000;

/// Reads the rows of a sweep for charts, streaming: rows that differ only in `seed` are
/// replicates and are merged into one [`ChartRow`], so memory grows with the distinct
/// configurations, not with the points.
pub fn read_chart_rows(dir: &Path) -> Result<Vec<ChartRow>, ChartError> {
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut rows: Vec<ChartRow> = Vec::new();
    let mut too_many = false;
    sweep::for_each_row(dir, |row| {
        let key: String = row.overrides.iter().filter(|(k, _)| k.as_str() != "seed").map(|(k, v)| format!("{k}={v};")).collect();
        match index.get(&key) {
            Some(&i) => {
                if let Some(e) = &row.estimate {
                    rows[i].add(e);
                }
            }
            None if rows.len() >= MAX_CHART_ROWS => too_many = true,
            None => {
                index.insert(key, rows.len());
                rows.push(ChartRow::new(row));
            }
        }
        Ok(())
    })?;
    if too_many {
        return Err(ChartError::Input(format!(
            "charts are drawn from at most {MAX_CHART_ROWS} distinct configurations (seeds merged); this sweep has more: \
             draw them from a smaller sweep, or read results.csv"
        )));
    }
    Ok(rows)
}

/// A chart over node counts: kind, what it shows, its panels (y axis, metric), a footnote.
type NodeChartKind = (&'static str, &'static str, &'static [(&'static str, Metric)], Option<&'static str>);

/// The per-model charts over node counts: kind, what they show, their panels (y axis, metric)
/// and a footnote.
const NODE_CHARTS: [NodeChartKind; 3] = [
    ("scaling", "decode tokens/s", &[("decode tokens/s", Metric::DecodeTokensPerS)], None),
    (
        "power",
        "cluster power and energy efficiency",
        &[("cluster power during decode (W)", Metric::ClusterPowerW), ("tokens per joule (tok/J)", Metric::TokensPerJoule)],
        None,
    ),
    (
        "cost",
        "cost",
        &[("hardware USD per decode token/s", Metric::UsdPerTokenPerS), ("USD per million tokens", Metric::UsdPerMtok)],
        Some("USD per million tokens: hardware amortized over the scenario's years plus electricity, at 100% duty."),
    ),
];

/// Draws the charts of a set of rows into `dir/charts/`.
pub fn draw_rows(dir: &Path, manifest: &Manifest, rows: &[ChartRow], only: Option<&str>) -> Result<Vec<PathBuf>, ChartError> {
    let out = dir.join("charts");
    if only.is_none() {
        // A full redraw replaces the chart set: charts of models no longer in the results go.
        if let Ok(entries) = std::fs::read_dir(&out) {
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "png" || x == "svg") {
                    let _ = std::fs::remove_file(&p);
                }
            }
        }
    }
    // Each figure is drawn on its own (rayon, in order): a sweep's charts are a serial tail
    // after its points otherwise.
    use rayon::prelude::*;
    let drawn: Vec<Result<Vec<PathBuf>, ChartError>> =
        sweep_figures(manifest, rows, only).par_iter().map(|(stem, fig)| render(&out.join(stem), fig)).collect();
    let mut files = Vec::new();
    for d in drawn {
        files.extend(d?);
    }
    if files.is_empty() {
        if let Some(o) = only {
            return Err(ChartError::Input(format!(
                "chart `{o}` cannot be drawn from these results: {}",
                CHARTS.iter().find(|(n, _)| *n == o).map_or("", |(_, d)| d)
            )));
        }
    }
    Ok(files)
}

/// The charts of a sweep as inline SVG text, (file stem, SVG), for a report page.
pub fn sweep_svgs(manifest: &Manifest, rows: &[ChartRow]) -> Result<Vec<(String, String)>, ChartError> {
    sweep_figures(manifest, rows, None).into_iter().map(|(stem, fig)| Ok((stem, figure::svg_string(&fig)?))).collect()
}

/// The figures a set of rows supports, with their file stems (`only`: one kind of [`CHARTS`]).
fn sweep_figures(manifest: &Manifest, rows: &[ChartRow], only: Option<&str>) -> Vec<(String, figure::Figure)> {
    let want = |k: &str| only.is_none_or(|o| o == k);
    let axes = &manifest.axes;
    let name = &manifest.name;
    let mut figs = Vec::new();
    for (model, group) in by_model(rows) {
        let mname = model_name(&model);
        let ms = slug(&model);
        if let Some(nc) = node_chart(&group, axes) {
            let sub = format!("{} · {} · sweep {name}", cluster_text(&group), workload_text(&group));
            for (kind, what, panels, note) in NODE_CHARTS {
                if want(kind) {
                    let fig = nc.figure(format!("{mname}: {what} vs nodes (predicted)"), sub.clone(), panels, axes, note);
                    figs.push((format!("{kind}-{ms}"), fig));
                }
            }
        }
        if want("ttft") {
            if let Some(fig) = ttft(&model, &group, axes, name) {
                figs.push((format!("ttft-{ms}"), fig));
            }
        }
        if want("equal-budget") {
            if let Some(fig) = equal_budget(&model, &group, name) {
                figs.push((format!("equal-budget-{ms}"), fig));
            }
        }
    }
    if want("memory-fit") {
        if let Some(fig) = memory_fit(rows, name) {
            figs.push(("memory-fit".to_string(), fig));
        }
    }
    figs
}

#[cfg(test)]
mod tests {
    use super::figure::Scale;
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(2500.0), "2.5k");
        assert_eq!(fmt_num(32768.0), "33k");
        assert_eq!(fmt_num(12.0), "12");
        assert_eq!(fmt_num(0.125), "0.125");
        assert_eq!(Scale::Nodes.tick(3.0), "3");
        assert_eq!(Scale::Nodes.tick(3.5), "");
        assert_eq!(Scale::Log2.tick(10.0), "1k");
    }
}
