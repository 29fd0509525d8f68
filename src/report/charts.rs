//! Charts (plotters, PNG and SVG, with the DejaVu Sans font embedded so text renders on machines
//! without system fonts): scaling, power and efficiency, cost, memory fit, TTFT vs prompt length,
//! equal-budget comparison, drawn from saved sweep results; and the measured-vs-predicted parity
//! chart used by `validate --plot`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::capacity::sweep::{self, EstimateRow, Manifest, PointInfo, Row, value_label};
use crate::catalog::catalog;
use crate::util::slug;

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

fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// Registers the embedded DejaVu Sans as the `sans-serif` family (once per process).
pub fn init_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded font files are valid TrueType; a failure would only lose text.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

const FONT: &str = "sans-serif";
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const MAX_SERIES: usize = 10;

// ---------------------------------------------------------------------------------------------
// Figure model: data first, then one generic renderer for both backends.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    Linear,
    /// Integer node counts.
    Nodes,
    Log2,
    Log10,
}

impl Scale {
    fn fwd(self, v: f64) -> f64 {
        match self {
            Scale::Linear | Scale::Nodes => v,
            Scale::Log2 => v.max(1e-12).log2(),
            Scale::Log10 => v.max(1e-12).log10(),
        }
    }

    fn tick(self, t: f64) -> String {
        let near = (t - t.round()).abs() < 1e-6;
        match self {
            Scale::Linear => fmt_num(t),
            Scale::Nodes => {
                if near && t >= 0.5 {
                    format!("{}", t.round() as i64)
                } else {
                    String::new()
                }
            }
            Scale::Log2 => {
                let v = 2f64.powi(t.round() as i32);
                match near {
                    false => String::new(),
                    true if v >= 1024.0 => format!("{}k", v / 1024.0),
                    true => fmt_num(v),
                }
            }
            Scale::Log10 => fmt_num(10f64.powf(t)),
        }
    }
}

/// Token counts the way people say them: 512, 2k, 32k, 128k (k = 1024).
fn fmt_tokens(n: u64) -> String {
    if n >= 1024 { format!("{}k", (n as f64 / 1024.0).round()) } else { n.to_string() }
}

/// Short human number: 0.125, 3.5, 42, 1.5k, 12k, 2.3M.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        trim(format!("{:.1}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Line {
    Solid,
    Dashed,
    None,
}

#[derive(Clone, Debug)]
struct Series {
    color: RGBColor,
    points: Vec<(f64, f64)>,
    labels: Vec<String>,
    line: Line,
    markers: bool,
    width: u32,
    band: Option<Vec<(f64, f64)>>,
}

impl Series {
    fn line(color: RGBColor, points: Vec<(f64, f64)>) -> Self {
        Series { color, points, labels: vec![], line: Line::Solid, markers: true, width: 3, band: None }
    }
}

#[derive(Clone, Debug)]
struct Panel {
    x_desc: String,
    y_desc: String,
    x_scale: Scale,
    y_scale: Scale,
    y_from_zero: bool,
    series: Vec<Series>,
}

#[derive(Clone, Debug)]
struct Grid {
    x_desc: String,
    y_desc: String,
    x_names: Vec<String>,
    y_names: Vec<String>,
    /// (x, y, fill, text)
    cells: Vec<(usize, usize, RGBColor, String)>,
}

#[derive(Clone, Debug)]
enum Body {
    Panels(Vec<Panel>),
    Grid(Grid),
}

#[derive(Clone, Copy, Debug)]
enum Swatch {
    Line,
    Box,
}

#[derive(Clone, Debug)]
struct Figure {
    title: String,
    subtitle: String,
    body: Body,
    legend: Vec<(String, RGBColor, Swatch)>,
    footnotes: Vec<String>,
    size: (u32, u32),
}

/// Writes `stem.png` and `stem.svg`.
fn render(stem: &Path, fig: &Figure) -> Result<Vec<PathBuf>, ChartError> {
    init_fonts();
    if let Some(dir) = stem.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| ChartError::Draw(format!("cannot create {}: {e}", dir.display())))?;
    }
    let with_ext = |ext: &str| {
        let mut p = stem.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    let png = with_ext(".png");
    let svg = with_ext(".svg");
    {
        let root = BitMapBackend::new(&png, fig.size).into_drawing_area();
        draw_figure(&root, fig)?;
        root.present().map_err(|e| ChartError::Draw(format!("cannot write {}: {e}", png.display())))?;
    }
    {
        let root = SVGBackend::new(&svg, fig.size).into_drawing_area();
        draw_figure(&root, fig)?;
        root.present().map_err(|e| ChartError::Draw(format!("cannot write {}: {e}", svg.display())))?;
    }
    Ok(vec![png, svg])
}

fn draw_figure<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), ChartError> {
    root.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = root.dim_in_pixel();
    let title_font = (FONT, 30).into_font().style(FontStyle::Bold);
    let sub_font = (FONT, 19).into_font();
    root.draw(&Text::new(fig.title.clone(), (24, 14), title_font.color(&BLACK))).map_err(draw_err)?;
    // The subtitle wraps at " · " onto a second line when it is wider than the figure.
    let sub_style = sub_font.clone().into_text_style(root);
    let fits = |t: &str| root.estimate_text_size(t, &sub_style).map(|s| s.0 as i32 <= w as i32 - 48).unwrap_or(true);
    let mut sub_lines = vec![fig.subtitle.clone()];
    if !fits(&fig.subtitle) {
        let parts: Vec<&str> = fig.subtitle.split(" · ").collect();
        let mut k = parts.len();
        while k > 1 && !fits(&parts[..k].join(" · ")) {
            k -= 1;
        }
        sub_lines = vec![parts[..k].join(" · "), parts[k..].join(" · ")];
    }
    for (i, l) in sub_lines.iter().enumerate() {
        root.draw(&Text::new(l.clone(), (24, 54 + 24 * i as i32), sub_font.color(&RGBColor(70, 70, 70)))).map_err(draw_err)?;
    }
    // Legend rows (wrapped) and footnotes at the bottom.
    let legend_font = (FONT, 18).into_font();
    let mut rows: Vec<Vec<(usize, i32)>> = vec![vec![]];
    let mut x = 24i32;
    for (i, (label, _, _)) in fig.legend.iter().enumerate() {
        let tw = root.estimate_text_size(label, &legend_font.clone().into_text_style(root)).map_err(draw_err)?.0 as i32;
        let need = 44 + tw + 28;
        if x + need > w as i32 - 16 && !rows.last().expect("one row").is_empty() {
            rows.push(vec![]);
            x = 24;
        }
        rows.last_mut().expect("one row").push((i, x));
        x += need;
    }
    let legend_h = if fig.legend.is_empty() { 0 } else { rows.len() as i32 * 30 + 10 };
    let foot_h = fig.footnotes.len() as i32 * 22 + if fig.footnotes.is_empty() { 0 } else { 8 };
    let top = 68 + 24 * sub_lines.len() as i32;
    let body_h = h as i32 - top - legend_h - foot_h;
    let (_, rest) = root.split_vertically(top);
    let (body, bottom) = rest.split_vertically(body_h.max(100));
    match &fig.body {
        Body::Panels(panels) => {
            let areas = body.split_evenly((1, panels.len().max(1)));
            for (p, a) in panels.iter().zip(&areas) {
                draw_panel(a, p)?;
            }
        }
        Body::Grid(g) => draw_grid(&body, g)?,
    }
    for (r, row) in rows.iter().enumerate() {
        let y = 14 + r as i32 * 30;
        for &(i, x) in row {
            let (label, color, swatch) = &fig.legend[i];
            match swatch {
                Swatch::Line => {
                    bottom.draw(&PathElement::new(vec![(x, y), (x + 34, y)], color.stroke_width(4))).map_err(draw_err)?;
                    bottom.draw(&Circle::new((x + 17, y), 5, color.filled())).map_err(draw_err)?;
                }
                Swatch::Box => {
                    bottom.draw(&Rectangle::new([(x + 4, y - 10), (x + 30, y + 10)], color.filled())).map_err(draw_err)?;
                    bottom.draw(&Rectangle::new([(x + 4, y - 10), (x + 30, y + 10)], BLACK.stroke_width(1))).map_err(draw_err)?;
                }
            }
            let style = legend_font.clone().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
            bottom.draw(&Text::new(label.clone(), (x + 44, y), style)).map_err(draw_err)?;
        }
    }
    let foot_font = (FONT, 16).into_font();
    for (i, f) in fig.footnotes.iter().enumerate() {
        let y = legend_h + 4 + i as i32 * 22;
        bottom.draw(&Text::new(f.clone(), (24, y), foot_font.color(&RGBColor(90, 90, 90)))).map_err(draw_err)?;
    }
    Ok(())
}

fn bounds(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo <= hi).then_some((lo, hi))
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<(), ChartError> {
    let xs = p.series.iter().flat_map(|s| s.points.iter().map(|q| p.x_scale.fwd(q.0)));
    let ys = p.series.iter().flat_map(|s| s.points.iter().map(|q| p.y_scale.fwd(q.1)));
    let (x0, x1) = bounds(xs).unwrap_or((0.0, 1.0));
    let (y0, y1) = bounds(ys).unwrap_or((0.0, 1.0));
    let (x0, x1) = match p.x_scale {
        Scale::Nodes => (0.5, x1.max(1.0) + 0.5),
        Scale::Log2 => (x0.floor() - 0.25, x1.ceil() + 0.25),
        _ => {
            let pad = if x1 > x0 { (x1 - x0) * 0.06 } else { x0.abs().max(1.0) * 0.5 };
            (x0 - pad, x1 + pad)
        }
    };
    let (y0, y1) = match p.y_scale {
        Scale::Log10 | Scale::Log2 => {
            let pad = if y1 > y0 { (y1 - y0) * 0.08 } else { 0.5 };
            (y0 - pad, y1 + pad)
        }
        _ if p.y_from_zero => (0.0, if y1 > 0.0 { y1 * 1.12 } else { 1.0 }),
        _ => {
            let pad = if y1 > y0 { (y1 - y0) * 0.08 } else { y0.abs().max(1.0) * 0.5 };
            (y0 - pad, y1 + pad)
        }
    };
    let x_labels = match p.x_scale {
        Scale::Nodes => ((x1 - x0).round() as usize + 1).min(17),
        Scale::Log2 => ((x1 - x0).round() as usize + 1).min(17),
        _ => 8,
    };
    let mut chart = ChartBuilder::on(area)
        .margin_top(12)
        .margin_right(28)
        .margin_left(12)
        .x_label_area_size(70)
        .y_label_area_size(96)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(draw_err)?;
    let xf = |v: &f64| p.x_scale.tick(*v);
    let yf = |v: &f64| p.y_scale.tick(*v);
    chart
        .configure_mesh()
        .x_desc(p.x_desc.as_str())
        .y_desc(p.y_desc.as_str())
        .x_labels(x_labels)
        .y_labels(8)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style((FONT, 17))
        .axis_desc_style((FONT, 20))
        .max_light_lines(1)
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(draw_err)?;
    for s in &p.series {
        let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (p.x_scale.fwd(x), p.y_scale.fwd(y))).collect();
        if let Some(band) = &s.band {
            let poly: Vec<(f64, f64)> = band.iter().map(|&(x, y)| (p.x_scale.fwd(x), p.y_scale.fwd(y))).collect();
            chart.draw_series(std::iter::once(Polygon::new(poly, s.color.mix(0.12).filled()))).map_err(draw_err)?;
        }
        match s.line {
            Line::Solid => {
                chart.draw_series(LineSeries::new(pts.clone(), s.color.stroke_width(s.width))).map_err(draw_err)?;
            }
            Line::Dashed => {
                chart.draw_series(DashedLineSeries::new(pts.clone(), 10, 7, s.color.stroke_width(s.width))).map_err(draw_err)?;
            }
            Line::None => {}
        }
        if s.markers {
            chart.draw_series(pts.iter().map(|&c| Circle::new(c, 6, s.color.filled()))).map_err(draw_err)?;
        }
        if !s.labels.is_empty() {
            let font = (FONT, 15).into_font().color(&RGBColor(40, 40, 40));
            chart
                .draw_series(pts.iter().zip(&s.labels).map(|(&c, l)| EmptyElement::at(c) + Text::new(l.clone(), (8, -20), font.clone())))
                .map_err(draw_err)?;
        }
    }
    Ok(())
}

fn draw_grid<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, g: &Grid) -> Result<(), ChartError> {
    let label_font = (FONT, 17).into_font();
    let mut widest = 0u32;
    for n in &g.y_names {
        widest = widest.max(area.estimate_text_size(n, &label_font.clone().into_text_style(area)).map_err(draw_err)?.0);
    }
    let nx = g.x_names.len().max(1) as i32;
    let ny = g.y_names.len().max(1) as i32;
    let mut chart = ChartBuilder::on(area)
        .margin(16)
        .margin_right(28)
        .x_label_area_size(70)
        .y_label_area_size(widest + 30)
        .build_cartesian_2d((0..nx - 1).into_segmented(), (0..ny - 1).into_segmented())
        .map_err(draw_err)?;
    let xf = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => g.x_names.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let yf = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => g.y_names.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(g.x_desc.as_str())
        .y_desc(g.y_desc.as_str())
        .x_labels(nx as usize * 2 + 2)
        .y_labels(ny as usize * 2 + 2)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style(label_font.clone())
        .axis_desc_style((FONT, 20))
        .draw()
        .map_err(draw_err)?;
    let cell_font = (FONT, 16).into_font();
    for (x, y, fill, text) in &g.cells {
        let (x, y) = (*x as i32, *y as i32);
        let rect = [(SegmentValue::Exact(x), SegmentValue::Exact(y)), (SegmentValue::Exact(x + 1), SegmentValue::Exact(y + 1))];
        chart.draw_series(std::iter::once(Rectangle::new(rect.clone(), fill.filled()))).map_err(draw_err)?;
        chart.draw_series(std::iter::once(Rectangle::new(rect, WHITE.stroke_width(3)))).map_err(draw_err)?;
        let style = cell_font.clone().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
        chart
            .draw_series(std::iter::once(Text::new(text.clone(), (SegmentValue::CenterOf(x), SegmentValue::CenterOf(y)), style)))
            .map_err(draw_err)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Parity chart (validate --plot).

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

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { s.chars().take(n - 1).collect::<String>() + "…" }
}

// ---------------------------------------------------------------------------------------------
// Sweep charts.

const GROUP_KEYS: &[&str] = &["model.name", "model.hf_config"];
const NODE_X_KEYS: &[&str] = &["cluster.count", "cluster.nodes"];
const SINGLE_NODE_WILDCARDS: &[&str] = &["cluster.fabric", "cluster.topology", "engine.parallelism"];

fn pretty_value(key: &str, v: &serde_json::Value) -> String {
    let s = value_label(v);
    match key {
        "engine.name" if s == "llama-cpp" || s == "llama-cpp-rpc" => "llama.cpp".into(),
        "cluster.count" => format!("{s} node{}", if s == "1" { "" } else { "s" }),
        "workload.prompt_tokens" => format!("{s} prompt tokens"),
        "workload.generate_tokens" => format!("{s} generated"),
        "seed" => format!("seed {s}"),
        _ => s,
    }
}

fn model_name(id: &str) -> String {
    catalog().model(id).map_or_else(|| id.to_string(), |(p, _)| p.name.clone())
}

fn chip_family(nodes: &[String]) -> String {
    let mut chips: Vec<String> = Vec::new();
    for n in nodes {
        let c = catalog().node(n).map_or_else(|| n.clone(), |s| s.chip.clone());
        if !chips.contains(&c) {
            chips.push(c);
        }
    }
    chips
        .iter()
        .map(|c| match c.as_str() {
            "m3-ultra" => "Mac Studio M3 Ultra".to_string(),
            "m4-max" => "Mac Studio M4 Max".to_string(),
            "m2-ultra" => "Mac Studio M2 Ultra".to_string(),
            "gb10" => "NVIDIA GB10 (DGX Spark)".to_string(),
            "ryzen-ai-max-395" => "AMD Ryzen AI Max+ 395".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

fn cluster_label(nodes: &[String]) -> String {
    value_label(&serde_json::Value::Array(nodes.iter().map(|n| serde_json::Value::String(n.clone())).collect()))
}

/// One line of a chart: a label and its points (x -> best row).
struct Line2 {
    key: Vec<Option<String>>,
    /// x -> the rows at that x.
    points: BTreeMap<u64, Vec<usize>>,
    /// Which key positions differ between the lines of the chart (the others are not shown).
    shown: Vec<bool>,
}

impl Line2 {
    fn label(&self) -> String {
        let parts: Vec<&str> =
            self.key.iter().zip(&self.shown).filter(|(_, s)| **s).filter_map(|(k, _)| k.as_deref()).filter(|s| !s.is_empty()).collect();
        if parts.is_empty() { "predicted".into() } else { parts.join(" · ") }
    }
}

/// The value drawn for the rows at one (line, x): rows that differ only in `seed` are replicates
/// and are averaged (in index order; [`read_chart_rows`] has already merged them); of other
/// variants (say two node mixes of one size) the fastest on average is drawn.
fn point_value(rows: &[&Row], at: &[usize], y: impl Fn(&EstimateRow) -> f64) -> f64 {
    let mut variants: Vec<(String, Vec<usize>)> = Vec::new();
    for &i in at {
        let key: String = rows[i].overrides.iter().filter(|(k, _)| k.as_str() != "seed").map(|(k, v)| format!("{k}={v};")).collect();
        match variants.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => variants.push((key, vec![i])),
        }
    }
    let mean = |v: &[usize], f: &dyn Fn(&EstimateRow) -> f64| {
        let mut sum = 0.0;
        for &i in v {
            sum += f(rows[i].estimate.as_ref().expect("fitted"));
        }
        sum / v.len().max(1) as f64
    };
    let mut best: Option<(&[usize], f64)> = None;
    for (_, v) in &variants {
        let speed = mean(v, &|e| e.decode_tokens_per_s);
        if best.is_none_or(|(_, b)| speed > b) {
            best = Some((v, speed));
        }
    }
    best.map_or(0.0, |(v, _)| mean(v, &y))
}

/// Groups fitted rows into lines: the line of a row is its axis values except the x axes, the
/// model and the seed; single-node points (where fabric, topology and parallelism mean nothing)
/// join every line they agree with.
fn lines(rows: &[&Row], axes: &[String], x_keys: &[&str], x: impl Fn(&PointInfo) -> u64, single_wildcard: bool) -> Vec<Line2> {
    let key_of = |r: &Row| -> Vec<Option<String>> {
        let n = r.info().map_or(0, |i| i.nodes.len());
        axes.iter()
            .filter(|k| !x_keys.contains(&k.as_str()) && !GROUP_KEYS.contains(&k.as_str()) && k.as_str() != "seed")
            .map(|k| {
                if single_wildcard && n == 1 && SINGLE_NODE_WILDCARDS.contains(&k.as_str()) {
                    None
                } else {
                    Some(r.overrides.get(k).map(|v| pretty_value(k, v)).unwrap_or_default())
                }
            })
            .collect()
    };
    let mut out: Vec<Line2> = Vec::new();
    let put = |line: &mut Line2, xv: u64, i: usize| line.points.entry(xv).or_default().push(i);
    let keys: Vec<Vec<Option<String>>> = rows.iter().map(|r| key_of(r)).collect();
    for (i, r) in rows.iter().enumerate() {
        if !r.fits || keys[i].iter().any(Option::is_none) {
            continue;
        }
        let xv = x(r.info().expect("fitted rows have info"));
        match out.iter_mut().find(|l| l.key == keys[i]) {
            Some(l) => put(l, xv, i),
            None => {
                let mut l = Line2 { key: keys[i].clone(), points: BTreeMap::new(), shown: vec![] };
                put(&mut l, xv, i);
                out.push(l);
            }
        }
    }
    for (i, r) in rows.iter().enumerate() {
        if !r.fits || keys[i].iter().all(Option::is_some) {
            continue;
        }
        let xv = x(r.info().expect("fitted rows have info"));
        let agrees = |l: &Line2| l.key.len() == keys[i].len() && l.key.iter().zip(&keys[i]).all(|(a, b)| b.is_none() || a == b);
        let mut joined = false;
        for l in out.iter_mut().filter(|l| agrees(l) && l.key.iter().all(Option::is_some)) {
            put(l, xv, i);
            joined = true;
        }
        if !joined {
            match out.iter_mut().find(|l| l.key == keys[i]) {
                Some(l) => put(l, xv, i),
                None => {
                    let mut l = Line2 { key: keys[i].clone(), points: BTreeMap::new(), shown: vec![] };
                    put(&mut l, xv, i);
                    out.push(l);
                }
            }
        }
    }
    // A position is worth showing when two lines differ there.
    let width = out.first().map_or(0, |l| l.key.len());
    let shown: Vec<bool> = (0..width)
        .map(|p| {
            let mut vals = out.iter().filter_map(|l| l.key[p].as_ref());
            let first = vals.next();
            vals.any(|v| Some(v) != first)
        })
        .collect();
    for l in &mut out {
        l.shown = shown.clone();
    }
    out
}

/// Rows of one model, in index order.
fn by_model(rows: &[Row]) -> Vec<(String, Vec<&Row>)> {
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    let mut unknown: Vec<&Row> = Vec::new();
    for r in rows {
        let Some(info) = r.info() else {
            unknown.push(r);
            continue;
        };
        match groups.iter_mut().find(|(m, _)| *m == info.model) {
            Some((_, v)) => v.push(r),
            None => groups.push((info.model.clone(), vec![r])),
        }
    }
    // Rows whose scenario did not parse (an illegal split, too few ports) belong to the model
    // they name, or to every model when the sweep does not vary it.
    for r in unknown {
        let named = r.overrides.get("model.name").and_then(|v| v.as_str());
        for (m, v) in groups.iter_mut() {
            if named.is_none_or(|n| n == m || catalog().model(n).is_some_and(|(p, _)| p.id == *m)) {
                v.push(r);
            }
        }
    }
    for (_, v) in groups.iter_mut() {
        v.sort_by_key(|r| r.index);
    }
    groups
}

/// Node count of a row, also for rows whose scenario did not parse.
fn row_nodes(r: &Row) -> Option<usize> {
    if let Some(i) = r.info() {
        return Some(i.nodes.len());
    }
    match (r.overrides.get("cluster.nodes"), r.overrides.get("cluster.count")) {
        (Some(serde_json::Value::Array(a)), _) => Some(a.len()),
        (_, Some(c)) => c.as_u64().map(|c| c as usize),
        _ => None,
    }
}

fn workload_text(rows: &[&Row]) -> String {
    let mut p: Vec<u64> = rows.iter().filter_map(|r| r.info()).map(|i| i.prompt_tokens).collect();
    let mut g: Vec<u64> = rows.iter().filter_map(|r| r.info()).map(|i| i.generate_tokens).collect();
    p.sort_unstable();
    p.dedup();
    g.sort_unstable();
    g.dedup();
    match (p.as_slice(), g.as_slice()) {
        ([p], [g]) => format!("{p} prompt + {g} generated tokens"),
        _ => "several prompt lengths".into(),
    }
}

fn cluster_text(rows: &[&Row]) -> String {
    let max = rows.iter().filter_map(|r| r.info()).map(|i| i.nodes.len()).max().unwrap_or(0);
    let mut lists: Vec<String> = Vec::new();
    for r in rows {
        if let Some(i) = r.info().filter(|i| i.nodes.len() == max) {
            let l = cluster_label(&i.nodes);
            if !lists.contains(&l) {
                lists.push(l);
            }
        }
    }
    match lists.len() {
        0 => String::new(),
        1 => format!("cluster: up to {}", lists[0]),
        _ => {
            let mut ids: Vec<String> = Vec::new();
            for r in rows {
                for n in r.info().map(|i| i.nodes.clone()).unwrap_or_default() {
                    if !ids.contains(&n) {
                        ids.push(n);
                    }
                }
            }
            format!("clusters of up to {max} of: {}", ids.join(", "))
        }
    }
}

fn not_fit_note(rows: &[&Row], axes: &[String], x_keys: &[&str]) -> Option<String> {
    let mut items: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| !r.fits) {
        let what: Vec<String> = axes
            .iter()
            .filter(|k| !GROUP_KEYS.contains(&k.as_str()) && !x_keys.contains(&k.as_str()) && k.as_str() != "seed")
            .filter_map(|k| r.overrides.get(k).map(|v| pretty_value(k, v)))
            .collect();
        let at = if x_keys == NODE_X_KEYS {
            let Some(n) = row_nodes(r) else { continue };
            format!("{n} node{}", if n == 1 { "" } else { "s" })
        } else {
            let prompt = r.info().map(|i| i.prompt_tokens).or_else(|| r.overrides.get("workload.prompt_tokens").and_then(|v| v.as_u64()));
            let Some(p) = prompt else { continue };
            format!("{p} prompt tokens")
        };
        let reason = r.error.as_ref().map_or("cannot run", |e| {
            if e.kind == "does-not-fit" {
                "does not fit"
            } else if e.message.contains("tensor parallel over") {
                "illegal tensor split"
            } else if e.message.contains("ports per node") {
                "too few ports"
            } else {
                "cannot run"
            }
        });
        let item = format!("{at}, {}: {reason}", what.join(" · "));
        if !items.contains(&item) {
            items.push(item);
        }
    }
    if items.is_empty() {
        return None;
    }
    let more = items.len().saturating_sub(3);
    items.truncate(3);
    let tail = if more > 0 { format!("; and {more} more (see results.csv)") } else { String::new() };
    Some(truncate(&format!("Not drawn: {}{tail}", items.join("; ")), 160))
}

struct NodeChart<'a> {
    rows: Vec<&'a Row>,
    lines: Vec<Line2>,
    extra: usize,
}

fn node_chart<'a>(rows: &[&'a Row], axes: &[String]) -> Option<NodeChart<'a>> {
    let mut counts: Vec<usize> = rows.iter().filter(|r| r.fits).filter_map(|r| r.info()).map(|i| i.nodes.len()).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() < 2 {
        return None;
    }
    let mut ls = lines(rows, axes, NODE_X_KEYS, |i| i.nodes.len() as u64, true);
    let extra = ls.len().saturating_sub(MAX_SERIES);
    ls.truncate(MAX_SERIES);
    Some(NodeChart { rows: rows.to_vec(), lines: ls, extra })
}

impl NodeChart<'_> {
    fn panel(&self, y_desc: &str, y: impl Fn(&EstimateRow) -> f64) -> Panel {
        let series = self
            .lines
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let pts: Vec<(f64, f64)> = l.points.iter().map(|(&x, at)| (x as f64, point_value(&self.rows, at, &y))).collect();
                let mut s = Series::line(PALETTE[k % PALETTE.len()], pts.clone());
                if self.lines.len() <= 4 {
                    s.labels = pts.iter().map(|p| fmt_num(p.1)).collect();
                }
                s
            })
            .collect();
        Panel { x_desc: "nodes".into(), y_desc: y_desc.into(), x_scale: Scale::Nodes, y_scale: Scale::Linear, y_from_zero: true, series }
    }

    fn legend(&self) -> Vec<(String, RGBColor, Swatch)> {
        self.lines.iter().enumerate().map(|(k, l)| (l.label(), PALETTE[k % PALETTE.len()], Swatch::Line)).collect()
    }

    fn footnotes(&self, axes: &[String], extra: Option<String>) -> Vec<String> {
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

fn tokens_per_joule(e: &EstimateRow) -> f64 {
    if e.tokens_per_joule > 0.0 {
        e.tokens_per_joule
    } else if e.energy_j_per_token > 0.0 {
        1.0 / e.energy_j_per_token
    } else {
        0.0
    }
}

fn memory_fit(rows: &[Row], sweep_name: &str) -> Option<Figure> {
    // Cells: (model, cluster) -> rows.
    let mut models: Vec<String> = Vec::new();
    let mut clusters: Vec<(Vec<String>, f64)> = Vec::new();
    for r in rows {
        let Some(i) = r.info() else { continue };
        if !models.contains(&i.model) {
            models.push(i.model.clone());
        }
        if !clusters.iter().any(|(c, _)| *c == i.nodes) {
            let mem: f64 = i.nodes.iter().map(|n| catalog().node(n).map_or(0.0, |s| s.memory_gb)).sum();
            clusters.push((i.nodes.clone(), mem));
        }
    }
    if models.is_empty() || (models.len() < 2 && clusters.len() < 2) {
        return None;
    }
    clusters.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.len().cmp(&b.0.len())).then(a.0.cmp(&b.0)));
    let green = RGBColor(120, 200, 120);
    let yellow = RGBColor(250, 210, 90);
    let red = RGBColor(235, 120, 110);
    let gray = RGBColor(200, 200, 200);
    let mut cells = Vec::new();
    let mut max_ctx_all = 0;
    for (mi, m) in models.iter().enumerate() {
        for (ci, (c, _)) in clusters.iter().enumerate() {
            let cell: Vec<&Row> = rows.iter().filter(|r| r.info().is_some_and(|i| i.model == *m && i.nodes == *c)).collect();
            if cell.is_empty() {
                continue;
            }
            let ctx = |r: &Row| r.info().map_or(0, |i| i.prompt_tokens + i.generate_tokens);
            let max_ctx = cell.iter().map(|r| ctx(r)).max().unwrap_or(0);
            max_ctx_all = max_ctx_all.max(max_ctx);
            let fit_at_max = cell.iter().filter(|r| r.fits && ctx(r) == max_ctx).filter_map(|r| r.estimate.as_ref()).min_by(|a, b| {
                let fa = a.memory_per_node_gb.iter().copied().fold(0.0, f64::max);
                let fb = b.memory_per_node_gb.iter().copied().fold(0.0, f64::max);
                fa.total_cmp(&fb)
            });
            let best_fit_ctx = cell.iter().filter(|r| r.fits).map(|r| ctx(r)).max();
            let (fill, text) = if let Some(e) = fit_at_max {
                let used = e.memory_per_node_gb.iter().copied().fold(0.0, f64::max);
                (green, format!("fits ({used:.0} GB/node)"))
            } else if let Some(c) = best_fit_ctx {
                (yellow, format!("fits to {} context", fmt_tokens(c)))
            } else if cell.iter().any(|r| r.error.as_ref().is_some_and(|e| e.kind == "does-not-fit")) {
                (red, "does not fit".to_string())
            } else {
                (gray, "cannot run".to_string())
            };
            cells.push((mi, ci, fill, text));
        }
    }
    let n_cells = cells.len();
    let width = (300 + 250 * models.len() as u32).clamp(1200, 2400);
    let height = (260 + 56 * clusters.len() as u32).clamp(700, 2000);
    Some(Figure {
        title: "Memory fit: which models run on which clusters (predicted)".into(),
        subtitle: format!(
            "{n_cells} model x cluster cells · weights + KV cache at the swept context + runtime, against each node's wired limit · sweep {sweep_name}"
        ),
        body: Body::Grid(Grid {
            x_desc: "model".into(),
            y_desc: "cluster".into(),
            x_names: models.iter().map(|m| model_name(m)).collect(),
            y_names: clusters.iter().map(|(c, _)| cluster_label(c)).collect(),
            cells,
        }),
        legend: vec![
            (format!("fits with context {} (largest GB used on a node)", fmt_tokens(max_ctx_all)), green, Swatch::Box),
            ("fits only with a shorter context".into(), yellow, Swatch::Box),
            ("does not fit".into(), red, Swatch::Box),
            ("cannot run (illegal split, ports, ...)".into(), gray, Swatch::Box),
        ],
        footnotes: vec![],
        size: (width, height),
    })
}

fn equal_budget(model: &str, rows: &[&Row], sweep_name: &str) -> Option<Figure> {
    // (family, [(cost, tokens/s, node count)])
    type Family = (String, Vec<(f64, f64, usize)>);
    let mut families: Vec<Family> = Vec::new();
    for r in rows.iter().filter(|r| r.fits) {
        let (Some(e), Some(i)) = (r.estimate.as_ref(), r.info()) else { continue };
        let f = chip_family(&i.nodes);
        let p = (e.cost_usd, e.decode_tokens_per_s, i.nodes.len());
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
        }]),
        legend,
        footnotes: vec![
            "Line: the best cluster of that family at or under each budget. Prices from the catalog (`supernode catalog nodes`).".into(),
        ],
        size: (1300, 850),
    })
}

fn ttft(model: &str, rows: &[&Row], axes: &[String], sweep_name: &str) -> Option<Figure> {
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
    let ttfts: Vec<f64> = rows.iter().filter_map(|r| r.estimate.as_ref()).map(|e| e.ttft_s).filter(|t| *t > 0.0).collect();
    let (tmin, tmax) = bounds(ttfts.into_iter()).unwrap_or((1.0, 1.0));
    let log_y = tmax > 30.0 * tmin;
    let series = ls
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let pts = l.points.iter().map(|(&x, at)| (x as f64, point_value(rows, at, |e| e.ttft_s))).collect();
            Series::line(PALETTE[k % PALETTE.len()], pts)
        })
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
        }]),
        legend: ls.iter().enumerate().map(|(k, l)| (l.label(), PALETTE[k % PALETTE.len()], Swatch::Line)).collect(),
        footnotes,
        size: (1200, 800),
    })
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
    draw_rows(dir, &manifest, &rows, only)
}

/// Most distinct configurations a chart set is drawn from (memory stays bounded however many
/// points a sweep has; beyond this, charts are per-slice work for `plot` on a smaller sweep).
pub const MAX_CHART_ROWS: usize = 50_000;

/// Reads the rows of a sweep for charts, streaming: rows that differ only in `seed` are
/// replicates and are merged into one row whose metrics are their means (summed in index order),
/// so memory grows with the distinct configurations, not with the points.
pub fn read_chart_rows(dir: &Path) -> Result<Vec<Row>, ChartError> {
    const N: usize = 11;
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut rows: Vec<(Row, [f64; N], u32)> = Vec::new();
    let metrics = |e: &EstimateRow| -> [f64; N] {
        [
            e.decode_tokens_per_s,
            e.prefill_tokens_per_s,
            e.ttft_s,
            e.tpot_ms.p50,
            e.tpot_ms.p99,
            e.cluster_power_w,
            e.energy_j_per_token,
            e.usd_per_mtok,
            e.usd_per_token_per_s,
            e.cost_usd,
            if e.energy_j_per_token > 0.0 { 1.0 / e.energy_j_per_token } else { 0.0 },
        ]
    };
    let mut too_many = false;
    sweep::for_each_row(dir, |row| {
        let key: String = row.overrides.iter().filter(|(k, _)| k.as_str() != "seed").map(|(k, v)| format!("{k}={v};")).collect();
        match index.get(&key) {
            Some(&i) => {
                let (_, sums, n) = &mut rows[i];
                if let Some(e) = &row.estimate {
                    for (s, m) in sums.iter_mut().zip(metrics(e)) {
                        *s += m;
                    }
                    *n += 1;
                }
            }
            None if rows.len() >= MAX_CHART_ROWS => too_many = true,
            None => {
                let sums = row.estimate.as_ref().map_or([0.0; N], metrics);
                let n = u32::from(row.estimate.is_some());
                index.insert(key, rows.len());
                rows.push((row, sums, n));
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
    Ok(rows
        .into_iter()
        .map(|(mut row, s, n)| {
            if let Some(e) = row.estimate.as_mut() {
                let k = f64::from(n.max(1));
                e.decode_tokens_per_s = s[0] / k;
                e.prefill_tokens_per_s = s[1] / k;
                e.ttft_s = s[2] / k;
                e.tpot_ms.p50 = s[3] / k;
                e.tpot_ms.p99 = s[4] / k;
                e.cluster_power_w = s[5] / k;
                e.energy_j_per_token = s[6] / k;
                e.usd_per_mtok = s[7] / k;
                e.usd_per_token_per_s = s[8] / k;
                e.cost_usd = s[9] / k;
                e.tokens_per_joule = s[10] / k;
            }
            row
        })
        .collect())
}

/// Draws the charts of a set of rows into `dir/charts/`.
pub fn draw_rows(dir: &Path, manifest: &Manifest, rows: &[Row], only: Option<&str>) -> Result<Vec<PathBuf>, ChartError> {
    let want = |k: &str| only.is_none_or(|o| o == k);
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
    let axes = &manifest.axes;
    let name = &manifest.name;
    let mut files = Vec::new();
    for (model, group) in by_model(rows) {
        let mname = model_name(&model);
        let ms = slug(&model);
        if let Some(nc) = node_chart(&group, axes) {
            let sub = format!("{} · {} · sweep {name}", cluster_text(&group), workload_text(&group));
            if want("scaling") {
                let fig = Figure {
                    title: format!("{mname}: decode tokens/s vs nodes (predicted)"),
                    subtitle: sub.clone(),
                    body: Body::Panels(vec![nc.panel("decode tokens/s", |e| e.decode_tokens_per_s)]),
                    legend: nc.legend(),
                    footnotes: nc.footnotes(axes, None),
                    size: (1200, 800),
                };
                files.extend(render(&out.join(format!("scaling-{ms}")), &fig)?);
            }
            if want("power") {
                let fig = Figure {
                    title: format!("{mname}: cluster power and energy efficiency vs nodes (predicted)"),
                    subtitle: sub.clone(),
                    body: Body::Panels(vec![
                        nc.panel("cluster power during decode (W)", |e| e.cluster_power_w),
                        nc.panel("tokens per joule (tok/J)", tokens_per_joule),
                    ]),
                    legend: nc.legend(),
                    footnotes: nc.footnotes(axes, None),
                    size: (1600, 800),
                };
                files.extend(render(&out.join(format!("power-{ms}")), &fig)?);
            }
            if want("cost") {
                let fig = Figure {
                    title: format!("{mname}: cost vs nodes (predicted)"),
                    subtitle: sub.clone(),
                    body: Body::Panels(vec![
                        nc.panel("hardware USD per decode token/s", |e| e.usd_per_token_per_s),
                        nc.panel("USD per million tokens", |e| e.usd_per_mtok),
                    ]),
                    legend: nc.legend(),
                    footnotes: nc.footnotes(
                        axes,
                        Some("USD per million tokens: hardware amortized over the scenario's years plus electricity, at 100% duty.".into()),
                    ),
                    size: (1600, 800),
                };
                files.extend(render(&out.join(format!("cost-{ms}")), &fig)?);
            }
        }
        if want("ttft") {
            if let Some(fig) = ttft(&model, &group, axes, name) {
                files.extend(render(&out.join(format!("ttft-{ms}")), &fig)?);
            }
        }
        if want("equal-budget") {
            if let Some(fig) = equal_budget(&model, &group, name) {
                files.extend(render(&out.join(format!("equal-budget-{ms}")), &fig)?);
            }
        }
    }
    if want("memory-fit") {
        if let Some(fig) = memory_fit(rows, name) {
            files.extend(render(&out.join("memory-fit"), &fig)?);
        }
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

#[cfg(test)]
mod tests {
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
