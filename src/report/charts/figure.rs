//! The figure model (panels of series, or a grid of cells; legend; footnotes) and one renderer
//! for both backends (PNG and SVG), with the embedded DejaVu Sans font.

use std::path::{Path, PathBuf};
use std::sync::Once;

use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::ChartError;

pub(super) fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> ChartError {
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

pub(super) const FONT: &str = "sans-serif";
pub(super) const PALETTE: [RGBColor; 10] = [
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
pub(super) const MAX_SERIES: usize = 10;

// ---------------------------------------------------------------------------------------------
// Figure model: data first, then one generic renderer for both backends.

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Scale {
    Linear,
    /// Integer node counts.
    Nodes,
    Log2,
    Log10,
}

impl Scale {
    pub(super) fn fwd(self, v: f64) -> f64 {
        match self {
            Scale::Linear | Scale::Nodes => v,
            Scale::Log2 => v.max(1e-12).log2(),
            Scale::Log10 => v.max(1e-12).log10(),
        }
    }

    pub(super) fn tick(self, t: f64) -> String {
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
            Scale::Log10 => {
                // A tick sits on m x 10^k for a whole m; the label is that number, exactly.
                let v = 10f64.powf(t);
                let k = 10f64.powi(v.log10().floor() as i32);
                fmt_num((v / k).round() * k)
            }
        }
    }
}

/// Token counts the way people say them: 512, 2k, 32k, 128k (k = 1024).
pub(super) fn fmt_tokens(n: u64) -> String {
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
pub(super) enum Line {
    Solid,
    Dashed,
    None,
}

#[derive(Clone, Debug)]
pub(super) struct Series {
    pub(super) color: RGBColor,
    pub(super) points: Vec<(f64, f64)>,
    pub(super) labels: Vec<String>,
    pub(super) line: Line,
    pub(super) markers: bool,
    pub(super) width: u32,
    pub(super) band: Option<Vec<(f64, f64)>>,
}

impl Series {
    pub(super) fn line(color: RGBColor, points: Vec<(f64, f64)>) -> Self {
        Series { color, points, labels: vec![], line: Line::Solid, markers: true, width: 3, band: None }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Panel {
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    pub(super) x_scale: Scale,
    pub(super) y_scale: Scale,
    pub(super) y_from_zero: bool,
    pub(super) series: Vec<Series>,
    /// Where the x ticks go (data values; empty: chosen by the scale). A node chart ticks only
    /// the node counts its sweep has, so an axis never suggests a count that was not tried.
    pub(super) x_ticks: Vec<f64>,
}

impl Panel {
    /// A panel of `y` over node counts: linear y from zero, x ticked only at `counts` (the node
    /// counts that ran, so the axis never suggests one that was not tried).
    pub(super) fn over_nodes(y_desc: &str, series: Vec<Series>, counts: Vec<f64>) -> Self {
        Panel {
            x_desc: "nodes".into(),
            y_desc: y_desc.into(),
            x_scale: Scale::Nodes,
            y_scale: Scale::Linear,
            y_from_zero: true,
            series,
            x_ticks: counts,
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Grid {
    pub(super) x_desc: String,
    pub(super) y_desc: String,
    pub(super) x_names: Vec<String>,
    pub(super) y_names: Vec<String>,
    /// (x, y, fill, text)
    pub(super) cells: Vec<(usize, usize, RGBColor, String)>,
}

#[derive(Clone, Debug)]
pub(super) enum Body {
    Panels(Vec<Panel>),
    Grid(Grid),
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Swatch {
    /// A line with a marker (a series of connected points).
    Line,
    /// A line alone (a reference line, no points).
    Rule,
    /// A marker alone (points not connected).
    Marker,
    /// A filled box (a grid cell's colour).
    Box,
}

#[derive(Clone, Debug)]
pub(super) struct Figure {
    pub(super) title: String,
    pub(super) subtitle: String,
    pub(super) body: Body,
    pub(super) legend: Vec<(String, RGBColor, Swatch)>,
    pub(super) footnotes: Vec<String>,
    pub(super) size: (u32, u32),
}

/// Writes `stem.png` and `stem.svg`. Each is drawn in memory and then written atomically
/// (a temporary file beside it, renamed into place): a killed `plot` leaves the old chart or the
/// new one, never a partial or empty file.
pub(super) fn render(stem: &Path, fig: &Figure) -> Result<Vec<PathBuf>, ChartError> {
    render_with(stem, fig.size, |root| draw_figure(root, fig), |root| draw_figure(root, fig))
}

/// Writes `stem.png` (drawn by `png`) and `stem.svg` (drawn by `svg`), both `size` pixels, like
/// [`render`]: in memory first, then atomically.
pub(super) fn render_with(
    stem: &Path,
    size: (u32, u32),
    png_draw: impl Fn(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), ChartError>,
    svg_draw: impl Fn(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), ChartError>,
) -> Result<Vec<PathBuf>, ChartError> {
    init_fonts();
    let with_ext = |ext: &str| {
        let mut p = stem.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    let png = with_ext(".png");
    let svg = with_ext(".svg");
    let (w, h) = size;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        png_draw(&root)?;
        root.present().map_err(|e| ChartError::Draw(format!("cannot draw {}: {e}", png.display())))?;
    }
    let mut png_bytes = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png_bytes)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(|e| ChartError::Draw(format!("cannot encode {}: {e}", png.display())))?;
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, size).into_drawing_area();
        svg_draw(&root)?;
        root.present().map_err(|e| ChartError::Draw(format!("cannot draw {}: {e}", svg.display())))?;
    }
    for (path, bytes) in [(&png, png_bytes.as_slice()), (&svg, svg_text.as_bytes())] {
        crate::util::write_atomic(path, bytes).map_err(|e| ChartError::Draw(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(vec![png, svg])
}

/// The figure as SVG text (what a page inlines), drawn like [`render`]'s SVG file.
pub(super) fn svg_string(fig: &Figure) -> Result<String, ChartError> {
    init_fonts();
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, fig.size).into_drawing_area();
        draw_figure(&root, fig)?;
        root.present().map_err(|e| ChartError::Draw(format!("cannot draw an SVG chart: {e}")))?;
    }
    Ok(svg_text)
}

pub(super) fn draw_figure<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), ChartError> {
    root.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = root.dim_in_pixel();
    // A title wider than the figure is set smaller (never cut off at the right edge).
    let title_w =
        root.estimate_text_size(&fig.title, &(FONT, 30).into_font().style(FontStyle::Bold).into_text_style(root)).map_or(0, |s| s.0);
    let title_px =
        if title_w as i32 > w as i32 - 48 { (30.0 * f64::from(w.saturating_sub(48)) / f64::from(title_w)).max(14.0) } else { 30.0 };
    let title_font = (FONT, title_px).into_font().style(FontStyle::Bold);
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
    // Footnotes wrap at word boundaries to the figure's width (never cut off).
    let foot_font = (FONT, 16).into_font();
    let foot_style = foot_font.clone().into_text_style(root);
    let foot_lines: Vec<String> = fig
        .footnotes
        .iter()
        .flat_map(|f| wrap(f, |t| root.estimate_text_size(t, &foot_style).map(|s| s.0 as i32 <= w as i32 - 48).unwrap_or(true)))
        .collect();
    let foot_h = foot_lines.len() as i32 * 22 + if foot_lines.is_empty() { 0 } else { 8 };
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
                Swatch::Rule => {
                    bottom.draw(&PathElement::new(vec![(x, y), (x + 34, y)], color.stroke_width(4))).map_err(draw_err)?;
                }
                Swatch::Marker => {
                    bottom.draw(&Circle::new((x + 17, y), 6, color.filled())).map_err(draw_err)?;
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
    for (i, f) in foot_lines.iter().enumerate() {
        let y = legend_h + 4 + i as i32 * 22;
        bottom.draw(&Text::new(f.clone(), (24, y), foot_font.color(&RGBColor(90, 90, 90)))).map_err(draw_err)?;
    }
    Ok(())
}

/// Splits `text` into lines at spaces so that each line `fits` (a word longer than a line
/// stands alone on its line).
pub(super) fn wrap(text: &str, fits: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let tried = if cur.is_empty() { word.to_string() } else { format!("{cur} {word}") };
        if cur.is_empty() || fits(&tried) {
            cur = tried;
        } else {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// An f64 axis whose ticks (and grid lines) are given, not chosen by plotters: 1-2-5 per decade
/// on log axes, the swept node counts on node axes.
struct TickAxis {
    inner: plotters::coord::types::RangedCoordf64,
    ticks: Option<Vec<f64>>,
}

impl TickAxis {
    fn new(lo: f64, hi: f64, ticks: Option<Vec<f64>>) -> Self {
        let ticks = ticks.map(|t| t.into_iter().filter(|v| *v >= lo - 1e-9 && *v <= hi + 1e-9).collect());
        TickAxis { inner: (lo..hi).into(), ticks }
    }
}

impl Ranged for TickAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match &self.ticks {
            Some(t) => t.clone(),
            None => self.inner.key_points(hint),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// Tick positions (in the scale's coordinates) for the range `lo..hi` of a scale: 1-2-5 per
/// decade on log10 axes (1, 2, 5, 10, 20, 50, ...; every mantissa 1-9 when the range is under
/// a decade, only powers of ten over many decades), powers of two on log2 axes, integers on
/// node axes; `None`: plotters' linear ticks.
pub(super) fn scale_ticks(scale: Scale, lo: f64, hi: f64) -> Option<Vec<f64>> {
    match scale {
        Scale::Linear => None,
        Scale::Nodes | Scale::Log2 => Some((lo.ceil() as i64..=hi.floor() as i64).map(|i| i as f64).collect()),
        Scale::Log10 => {
            let decades = lo.floor() as i32..=hi.ceil() as i32;
            let at = |mantissas: &[f64]| -> Vec<f64> {
                decades
                    .clone()
                    .flat_map(|d| mantissas.iter().map(move |m| (m * 10f64.powi(d)).log10()))
                    .filter(|t| *t >= lo - 1e-9 && *t <= hi + 1e-9)
                    .collect()
            };
            let mut t = at(&[1.0, 2.0, 5.0]);
            if t.len() < 3 {
                t = at(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
            } else if t.len() > 13 {
                t = at(&[1.0]);
            }
            Some(t)
        }
    }
}

pub(super) fn bounds(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo <= hi).then_some((lo, hi))
}

pub(super) fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<(), ChartError> {
    let xs = p.series.iter().flat_map(|s| s.points.iter().map(|q| p.x_scale.fwd(q.0)));
    let ys = p.series.iter().flat_map(|s| s.points.iter().filter(|q| q.1.is_finite()).map(|q| p.y_scale.fwd(q.1)));
    let (x0, x1) = bounds(xs).unwrap_or((0.0, 1.0));
    let (y0, y1) = bounds(ys).unwrap_or((0.0, 1.0));
    let (x0, x1) = match p.x_scale {
        Scale::Nodes => (0.5, p.x_ticks.iter().copied().fold(x1.max(1.0), f64::max) + 0.5),
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
    let x_ticks =
        if p.x_ticks.is_empty() { scale_ticks(p.x_scale, x0, x1) } else { Some(p.x_ticks.iter().map(|&v| p.x_scale.fwd(v)).collect()) };
    let y_ticks = scale_ticks(p.y_scale, y0, y1);
    let mut chart = ChartBuilder::on(area)
        .margin_top(12)
        .margin_right(28)
        .margin_left(12)
        .x_label_area_size(70)
        .y_label_area_size(96)
        .build_cartesian_2d(TickAxis::new(x0, x1, x_ticks), TickAxis::new(y0, y1, y_ticks))
        .map_err(draw_err)?;
    let xf = |v: &f64| p.x_scale.tick(*v);
    let yf = |v: &f64| p.y_scale.tick(*v);
    chart
        .configure_mesh()
        .x_desc(p.x_desc.as_str())
        .y_desc(p.y_desc.as_str())
        .x_labels(8)
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
    let mut labelled: Vec<((f64, f64), String)> = Vec::new();
    let mut markers: Vec<(i32, i32)> = Vec::new();
    for s in &p.series {
        // A non-finite y is a gap: a configuration on this line that did not run. The line
        // breaks there; markers and labels sit only where a point exists.
        let pts: Vec<(f64, f64)> =
            s.points.iter().map(|&(x, y)| (p.x_scale.fwd(x), if y.is_finite() { p.y_scale.fwd(y) } else { f64::NAN })).collect();
        if let Some(band) = &s.band {
            let poly: Vec<(f64, f64)> = band.iter().map(|&(x, y)| (p.x_scale.fwd(x), p.y_scale.fwd(y))).collect();
            chart.draw_series(std::iter::once(Polygon::new(poly, s.color.mix(0.12).filled()))).map_err(draw_err)?;
        }
        for seg in pts.split(|q| !q.1.is_finite()).filter(|seg| seg.len() > 1) {
            match s.line {
                Line::Solid => {
                    chart.draw_series(LineSeries::new(seg.to_vec(), s.color.stroke_width(s.width))).map_err(draw_err)?;
                }
                Line::Dashed => {
                    chart.draw_series(DashedLineSeries::new(seg.to_vec(), 10, 7, s.color.stroke_width(s.width))).map_err(draw_err)?;
                }
                Line::None => {}
            }
        }
        let drawn = || pts.iter().filter(|q| q.1.is_finite());
        if s.markers {
            chart.draw_series(drawn().map(|&c| Circle::new(c, 6, s.color.filled()))).map_err(draw_err)?;
            markers.extend(drawn().map(|c| chart.backend_coord(c)));
        }
        labelled.extend(pts.iter().zip(&s.labels).filter(|(q, l)| q.1.is_finite() && !l.is_empty()).map(|(q, l)| (*q, l.clone())));
    }
    // Point labels of every series at once, so that labels of two lines never overlap, nor a
    // label a marker; a label repeated at the same place (coinciding points) is drawn once.
    let font = (FONT, 15).into_font().color(&RGBColor(40, 40, 40));
    let at: Vec<((i32, i32), usize)> = labelled.iter().map(|(c, l)| (chart.backend_coord(c), l.chars().count())).collect();
    let keep: Vec<bool> = (0..labelled.len())
        .map(|i| {
            !(0..i).any(|j| labelled[j].1 == labelled[i].1 && (at[j].0.0 - at[i].0.0).abs() <= 3 && (at[j].0.1 - at[i].0.1).abs() <= 3)
        })
        .collect();
    let (labelled, at): (Vec<_>, Vec<_>) = labelled.into_iter().zip(at).zip(keep).filter(|(_, k)| *k).map(|(x, _)| x).unzip();
    let shifts = label_shifts(&at, &markers);
    chart
        .draw_series(
            labelled.iter().zip(shifts).map(|((c, l), dy)| EmptyElement::at(*c) + Text::new(l.clone(), (8, -20 + dy), font.clone())),
        )
        .map_err(draw_err)?;
    Ok(())
}

/// Vertical pixel shifts that keep point labels from overlapping each other and the markers:
/// labels (at a point's pixel position, `chars` long, 15 px type) are placed from the top down,
/// each above-right of its point where that is free, else below-right of it, else where only a
/// marker is in the way, else a line lower at a time (a marker: 12 px across at its centre).
fn label_shifts(labels: &[((i32, i32), usize)], markers: &[(i32, i32)]) -> Vec<i32> {
    const LINE: i32 = 18;
    // Below the point: the label's top 6 px under its centre (20 px lower than above it + 6).
    const BELOW: i32 = 26;
    let boxes: Vec<(i32, i32, i32)> = labels.iter().map(|&((x, y), n)| (x + 8, x + 8 + 8 * n as i32, y - 20)).collect();
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&i| (boxes[i].2, boxes[i].0));
    let mut shifts = vec![0; labels.len()];
    // (left, right, top) of what is already drawn, each LINE px tall: the markers first.
    let mut placed: Vec<(i32, i32, i32)> = markers.iter().map(|&(x, y)| (x - 6, x + 6, y - LINE / 2)).collect();
    for i in order {
        let (x0, x1, y) = boxes[i];
        let clear = |top: i32, from: usize| !placed[from..].iter().any(|&(a0, a1, t)| x0 < a1 && a0 < x1 && (top - t).abs() < LINE);
        // Above, else below, clear of labels and markers; else the nearer of the two clear of
        // labels (a label touching a marker beats a label far from its point); else lower.
        let mut top = [y, y + BELOW, y, y + BELOW]
            .into_iter()
            .enumerate()
            .find(|&(k, t)| clear(t, if k < 2 { 0 } else { markers.len() }))
            .map_or(y + BELOW, |(_, t)| t);
        for _ in 0..8 {
            if clear(top, markers.len()) {
                break;
            }
            top += LINE;
        }
        shifts[i] = top - y;
        placed.push((x0, x1, top));
    }
    shifts
}

pub(super) fn draw_grid<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, g: &Grid) -> Result<(), ChartError> {
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
        .x_label_area_size(50 + 21 * g.x_names.iter().map(|n| n.split('\n').count()).max().unwrap_or(1) as u32)
        .y_label_area_size(widest + 30)
        .build_cartesian_2d((0..nx - 1).into_segmented(), (0..ny - 1).into_segmented())
        .map_err(draw_err)?;
    // Column names may have several lines ('\n'): drawn below the axis after the mesh.
    let xf = |_: &SegmentValue<i32>| String::new();
    let yf = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => g.y_names.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    // No tick marks: the labels name whole cells, and a mark at each cell edge crossed the
    // column names drawn below the axis.
    chart
        .configure_mesh()
        .disable_mesh()
        .set_all_tick_mark_size(0)
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
    let base = area.get_base_pixel();
    for (i, name) in g.x_names.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(SegmentValue::CenterOf(i as i32), SegmentValue::Exact(0)));
        for (k, line) in name.split('\n').enumerate() {
            let style = label_font.clone().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
            area.draw(&Text::new(line.to_string(), (px - base.0, py - base.1 + 10 + 21 * k as i32), style)).map_err(draw_err)?;
        }
    }
    let cell_font = (FONT, 16).into_font();
    for (x, y, fill, text) in &g.cells {
        let (x, y) = (*x as i32, *y as i32);
        let rect = [(SegmentValue::Exact(x), SegmentValue::Exact(y)), (SegmentValue::Exact(x + 1), SegmentValue::Exact(y + 1))];
        chart.draw_series(std::iter::once(Rectangle::new(rect.clone(), fill.filled()))).map_err(draw_err)?;
        chart.draw_series(std::iter::once(Rectangle::new(rect, WHITE.stroke_width(3)))).map_err(draw_err)?;
        let lines: Vec<&str> = text.split('\n').collect();
        for (k, line) in lines.iter().enumerate() {
            let dy = (2 * k as i32 - (lines.len() as i32 - 1)) * 10;
            let style = cell_font.clone().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((SegmentValue::CenterOf(x), SegmentValue::CenterOf(y))) + Text::new(line.to_string(), (0, dy), style),
                ))
                .map_err(draw_err)?;
        }
    }
    Ok(())
}
