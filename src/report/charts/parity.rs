//! The measured-vs-predicted parity chart of `validate --plot`.

use std::path::Path;

use plotters::prelude::*;

use super::ChartError;
use super::figure::*;

/// One measured case of a parity chart.
#[derive(Clone, Debug)]
pub struct ParityPoint {
    /// Case id (the label of an outlier).
    pub label: String,
    /// Unit of the values ("tok/s", "W", ...): one panel per unit.
    pub unit: String,
    /// Measured value.
    pub measured: f64,
    /// Predicted value.
    pub predicted: f64,
}

/// The unit of a validated metric (`decode_tokens_per_s` -> `tok/s`).
pub fn unit_of(metric: &str) -> String {
    match metric {
        m if m.ends_with("tokens_per_s") => "tok/s".into(),
        m if m.ends_with("_gflops") => "Gflops".into(),
        m if m.ends_with("_w") || m.contains("_w_") || m.ends_with("power_w_idle") => "W".into(),
        m if m.ends_with("_s") => "s".into(),
        m => m.into(),
    }
}

/// A point is labelled when its prediction is off by more than this (percent).
pub const OUTLIER_PERCENT: f64 = 15.0;
/// At most this many outliers are labelled per panel (the largest errors).
const MAX_LABELS: usize = 12;

/// Measured vs predicted on log-log axes with the y = x line and a ±15% band, one panel per unit
/// (tok/s and W never share an axis); only the points off by more than ±15% are labelled (with
/// their error). Writes `out_stem.png` and `out_stem.svg`. Non-positive values cannot sit on log
/// axes and are listed in a footnote instead.
pub fn parity_chart(out_stem: &Path, title: &str, points: &[ParityPoint]) -> Result<(), ChartError> {
    let ok = |p: &ParityPoint| p.measured > 0.0 && p.predicted > 0.0 && p.measured.is_finite() && p.predicted.is_finite();
    let good: Vec<&ParityPoint> = points.iter().filter(|p| ok(p)).collect();
    if good.is_empty() {
        return Err(ChartError::Input("parity chart: no point with positive measured and predicted values".into()));
    }
    let mut units: Vec<&str> = Vec::new();
    for p in &good {
        if !units.contains(&p.unit.as_str()) {
            units.push(&p.unit);
        }
    }
    let err = |p: &ParityPoint| (p.predicted - p.measured) / p.measured * 100.0;
    let gray = RGBColor(110, 110, 110);
    let mut panels = Vec::new();
    let mut unlabelled = 0;
    for unit in &units {
        let pts: Vec<&&ParityPoint> = good.iter().filter(|p| p.unit == *unit).collect();
        let (lo, hi) = bounds(pts.iter().flat_map(|p| [p.measured, p.predicted])).expect("non-empty");
        let (lo, hi) = (lo / 1.4, hi * 1.4);
        let within = pts.iter().filter(|p| err(p).abs() <= OUTLIER_PERCENT).count();
        let mape = pts.iter().map(|p| err(p).abs()).sum::<f64>() / pts.len() as f64;
        let band = vec![(lo, lo * 1.15), (hi, hi * 1.15), (hi, hi * 0.85), (lo, lo * 0.85)];
        let mut ideal = Series::line(gray, vec![(lo, lo), (hi, hi)]);
        ideal.markers = false;
        ideal.width = 2;
        ideal.band = Some(band);
        let mut upper = Series::line(gray, vec![(lo, lo * 1.15), (hi, hi * 1.15)]);
        upper.line = Line::Dashed;
        upper.markers = false;
        upper.width = 1;
        let mut lower = Series::line(gray, vec![(lo, lo * 0.85), (hi, hi * 0.85)]);
        lower.line = Line::Dashed;
        lower.markers = false;
        lower.width = 1;
        // Label the largest errors beyond the band, at most MAX_LABELS of them.
        let mut outliers: Vec<usize> = (0..pts.len()).filter(|&i| err(pts[i]).abs() > OUTLIER_PERCENT).collect();
        outliers.sort_by(|&a, &b| err(pts[b]).abs().total_cmp(&err(pts[a]).abs()));
        unlabelled += outliers.len().saturating_sub(MAX_LABELS);
        outliers.truncate(MAX_LABELS);
        let mut dots = Series::line(PALETTE[0], pts.iter().map(|p| (p.measured, p.predicted)).collect());
        dots.line = Line::None;
        dots.labels = (0..pts.len())
            .map(|i| if outliers.contains(&i) { format!("{} ({:+.0}%)", pts[i].label, err(pts[i])) } else { String::new() })
            .collect();
        panels.push(Panel {
            x_desc: format!("measured {unit} ({} points, {within} within ±15%, MAPE {mape:.1}%)", pts.len()),
            y_desc: format!("predicted {unit}"),
            x_scale: Scale::Log10,
            y_scale: Scale::Log10,
            y_from_zero: false,
            series: vec![ideal, upper, lower, dots],
            x_ticks: vec![],
        });
    }
    let within = good.iter().filter(|p| err(p).abs() <= OUTLIER_PERCENT).count();
    let mape = good.iter().map(|p| err(p).abs()).sum::<f64>() / good.len() as f64;
    let mut footnotes = vec![format!(
        "Labelled: the points off by more than ±{OUTLIER_PERCENT:.0}% (case id, error); every case is in the table `validate` prints."
    )];
    if unlabelled > 0 {
        footnotes.push(format!(
            "{unlabelled} more points off by more than ±{OUTLIER_PERCENT:.0}% are not labelled (at most {MAX_LABELS} per panel)."
        ));
    }
    let skipped: Vec<&str> = points.iter().filter(|p| !ok(p)).map(|p| p.label.as_str()).collect();
    if !skipped.is_empty() {
        footnotes.push(format!("Not drawn (non-positive value): {}", skipped.join(", ")));
    }
    let fig = Figure {
        title: title.to_string(),
        subtitle: format!(
            "{} points · {within} within ±15% · MAPE {mape:.1}% · one panel per unit ({}) · log-log axes",
            good.len(),
            units.join(", ")
        ),
        body: Body::Panels(panels),
        legend: vec![
            ("case (measured, predicted)".into(), PALETTE[0], Swatch::Marker),
            ("y = x (perfect prediction), shaded ±15%".into(), gray, Swatch::Rule),
        ],
        footnotes,
        size: (200 + 850 * units.len() as u32, 1000),
    };
    render(out_stem, &fig).map(|_| ())
}
