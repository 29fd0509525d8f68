//! The measured-vs-predicted parity chart of `validate --plot`.

use std::path::Path;

use plotters::prelude::*;

use super::ChartError;
use super::figure::*;
use super::labels::truncate;

/// Measured vs predicted on log-log axes with the y = x line and a ±15% band; writes
/// `out_stem.png` and `out_stem.svg`. Points are (label, measured, predicted); non-positive
/// values cannot sit on log axes and are listed in a footnote instead.
pub fn parity_chart(out_stem: &Path, title: &str, points: &[(String, f64, f64)]) -> Result<(), ChartError> {
    let good: Vec<&(String, f64, f64)> = points.iter().filter(|p| p.1 > 0.0 && p.2 > 0.0 && p.1.is_finite() && p.2.is_finite()).collect();
    if good.is_empty() {
        return Err(ChartError::Input("parity chart: no point with positive measured and predicted values".into()));
    }
    let (lo, hi) = bounds(good.iter().flat_map(|p| [p.1, p.2])).expect("non-empty");
    let (lo, hi) = (lo / 1.4, hi * 1.4);
    let within = good.iter().filter(|p| (p.2 - p.1).abs() <= 0.15 * p.1).count();
    let mut ape = 0.0;
    for p in &good {
        ape += (p.2 - p.1).abs() / p.1;
    }
    let mape = ape / good.len() as f64 * 100.0;
    let gray = RGBColor(110, 110, 110);
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
    let mut pts = Series::line(PALETTE[0], good.iter().map(|p| (p.1, p.2)).collect());
    pts.line = Line::None;
    pts.labels = good.iter().map(|p| p.0.clone()).collect();
    let mut footnotes = Vec::new();
    let skipped: Vec<&str> = points.iter().filter(|p| !good.iter().any(|g| std::ptr::eq(*g, *p))).map(|p| p.0.as_str()).collect();
    if !skipped.is_empty() {
        footnotes.push(truncate(&format!("Not drawn (non-positive value): {}", skipped.join(", ")), 150));
    }
    let fig = Figure {
        title: title.to_string(),
        subtitle: format!("{} points · {within} within ±15% · MAPE {mape:.1}% · log-log axes", good.len()),
        body: Body::Panels(vec![Panel {
            x_desc: "measured".into(),
            y_desc: "predicted".into(),
            x_scale: Scale::Log10,
            y_scale: Scale::Log10,
            y_from_zero: false,
            series: vec![ideal, upper, lower, pts],
        }]),
        legend: vec![
            ("case (measured, predicted)".into(), PALETTE[0], Swatch::Line),
            ("y = x (perfect prediction), shaded ±15%".into(), gray, Swatch::Line),
        ],
        footnotes,
        size: (1100, 1000),
    };
    render(out_stem, &fig).map(|_| ())
}
