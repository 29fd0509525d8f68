//! The Gantt of one step (or a window of a serving run) for `supernode gantt`: one row per node
//! and resource (GPU, CPU, each link direction), bars coloured by kind of work on a grey idle
//! band (each pixel column shaded by the share of its time that is busy), a time axis with 1-2-5 ticks, each row's busy share, and a legend.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::ChartError;
use super::figure::{FONT, draw_err, render_with};
use crate::estimate::{Gantt, TaskKind};
use crate::sim::ResourceKind;

const WIDTH: u32 = 1600;
const ROW_H: i32 = 30;
const TOP: i32 = 104;
const LEFT: i32 = 200;
const RIGHT: i32 = 130;
const BOTTOM: i32 = 120;
const IDLE: RGBColor = RGBColor(232, 232, 232);

/// Colour of a kind of task.
pub fn kind_color(k: TaskKind) -> RGBColor {
    match k {
        TaskKind::Compute => RGBColor(31, 119, 180),
        TaskKind::Sync => RGBColor(255, 127, 14),
        TaskKind::Collective => RGBColor(44, 160, 44),
        TaskKind::Transfer => RGBColor(148, 103, 189),
        TaskKind::Other => RGBColor(127, 127, 127),
    }
}

/// A time axis for `span_ns`: (unit name, ns per unit, tick step in units) with the step
/// 1, 2 or 5 times a power of ten and at most about ten ticks.
pub fn time_axis(span_ns: u64) -> (&'static str, f64, f64) {
    let span = span_ns.max(1) as f64;
    let (unit, per) = if span < 1e6 {
        ("us", 1e3)
    } else if span < 1e9 {
        ("ms", 1e6)
    } else {
        ("s", 1e9)
    };
    let raw = span / per / 10.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|&s| s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * mag);
    (unit, per, step)
}

/// A number of time units as a tick label (no trailing zeros).
fn tick_label(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A duration in words: `812 us`, `23.45 ms`, `1.234 s`.
pub fn fmt_duration(ns: u64) -> String {
    let v = ns as f64;
    if v < 1e6 {
        format!("{:.1} us", v / 1e3)
    } else if v < 1e9 {
        format!("{:.3} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

/// A row's label: `node0 GPU`, `node1 CPU`, `link 0->1`.
fn row_label(resource: &str, kind: ResourceKind) -> String {
    match kind {
        ResourceKind::Gpu | ResourceKind::Cpu => resource.replace(".gpu", " GPU").replace(".cpu", " CPU"),
        ResourceKind::Link | ResourceKind::Virtual => resource.to_string(),
    }
}

/// Writes `out_stem.png` and `out_stem.svg`: the Gantt of `g`.
pub fn gantt_chart(out_stem: &Path, g: &Gantt) -> Result<Vec<PathBuf>, ChartError> {
    if g.rows.is_empty() || g.span() == 0 {
        return Err(ChartError::Input("gantt: nothing to draw (no resource, or a step of zero length)".into()));
    }
    let h = (TOP + ROW_H * g.rows.len() as i32 + BOTTOM) as u32;
    render_with(out_stem, (WIDTH, h), |r| draw_gantt(r, g), |r| draw_gantt(r, g))
}

fn draw_gantt<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, g: &Gantt) -> Result<(), ChartError> {
    root.fill(&WHITE).map_err(draw_err)?;
    let (w, _) = root.dim_in_pixel();
    let (x0, x1) = (LEFT, w as i32 - RIGHT);
    let span = g.span();
    let title = (FONT, 24).into_font().style(FontStyle::Bold);
    root.draw(&Text::new(g.scenario.clone(), (24, 14), title.color(&BLACK))).map_err(draw_err)?;
    let sub = format!(
        "{}: {} · bars: tasks by kind, grey: idle · right: busy share of the span",
        g.what,
        if g.what.starts_with("forwards") { format!("window {}", fmt_duration(span)) } else { format!("step time {}", fmt_duration(span)) }
    );
    root.draw(&Text::new(sub, (24, 52), (FONT, 18).into_font().color(&RGBColor(70, 70, 70)))).map_err(draw_err)?;
    let label_font = (FONT, 16).into_font();
    let busy = g.busy_idle();
    for (i, row) in g.rows.iter().enumerate() {
        let y = TOP + ROW_H * i as i32;
        // Node groups: a line above the first row of each node.
        if i == 0 || g.rows[i - 1].node != row.node {
            root.draw(&PathElement::new(vec![(16, y - 2), (w as i32 - 16, y - 2)], RGBColor(150, 150, 150).stroke_width(1)))
                .map_err(draw_err)?;
        }
        let style = label_font.clone().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(row_label(&row.resource, row.kind), (x0 - 10, y + ROW_H / 2), style)).map_err(draw_err)?;
        root.draw(&Rectangle::new([(x0, y + 4), (x1, y + ROW_H - 4)], IDLE.filled())).map_err(draw_err)?;
        let share = busy[i].0 as f64 / span as f64 * 100.0;
        let style = label_font.clone().color(&RGBColor(60, 60, 60)).pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(format!("busy {share:.1}%"), (x1 + 10, y + ROW_H / 2), style)).map_err(draw_err)?;
    }
    for (row, runs) in pixel_runs(g, (x1 - x0) as usize).iter().enumerate() {
        let y = TOP + ROW_H * row as i32;
        for &(a, b, color) in runs {
            root.draw(&Rectangle::new([(x0 + a as i32, y + 4), (x0 + b as i32, y + ROW_H - 4)], color.filled())).map_err(draw_err)?;
        }
    }
    draw_axis(root, g, x0, x1)?;
    draw_legend(root, g)
}

/// Shades of coverage a pixel column takes (8: an eighth of a column's time busy is visible).
const LEVELS: f64 = 8.0;

/// Per row, runs of pixel columns `[a, b)` of one colour: each column is coloured by the kind
/// of work that fills most of its time, blended with the idle grey by how much of its time is
/// busy (rounded to eighths, at least one eighth when anything ran). Many short tasks thus
/// show as the share of time they take, never wider than they are. Idle columns are left out.
fn pixel_runs(g: &Gantt, width: usize) -> Vec<Vec<(usize, usize, RGBColor)>> {
    let width = width.max(1);
    let per_px = g.span() as f64 / width as f64;
    let mut cols = vec![vec![[0f64; 5]; width]; g.rows.len()];
    for t in &g.tasks {
        let k = TaskKind::ALL.iter().position(|&k| k == t.kind).expect("a listed kind");
        let a = t.start.clamp(g.start, g.end).saturating_sub(g.start) as f64 / per_px;
        let b = t.end.clamp(g.start, g.end).saturating_sub(g.start) as f64 / per_px;
        let mut c = a.floor() as usize;
        while (c as f64) < b && c < width {
            let overlap = b.min(c as f64 + 1.0) - a.max(c as f64);
            cols[t.row][c][k] += overlap.max(0.0);
            c += 1;
        }
    }
    cols.iter()
        .map(|row| {
            let mut runs: Vec<(usize, usize, RGBColor)> = Vec::new();
            for (c, col) in row.iter().enumerate() {
                let busy: f64 = col.iter().sum();
                if busy <= 0.0 {
                    continue;
                }
                let (k, _) = col.iter().enumerate().fold((0, -1.0), |m, (i, &v)| if v > m.1 { (i, v) } else { m });
                let cov = ((busy.min(1.0) * LEVELS).round() / LEVELS).max(1.0 / LEVELS);
                let kc = kind_color(TaskKind::ALL[k]);
                let mix = |a: u8, b: u8| (f64::from(b) + (f64::from(a) - f64::from(b)) * cov).round() as u8;
                let color = RGBColor(mix(kc.0, IDLE.0), mix(kc.1, IDLE.1), mix(kc.2, IDLE.2));
                match runs.last_mut() {
                    Some(last) if last.1 == c && last.2 == color => last.1 = c + 1,
                    _ => runs.push((c, c + 1, color)),
                }
            }
            runs
        })
        .collect()
}

fn draw_axis<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, g: &Gantt, x0: i32, x1: i32) -> Result<(), ChartError> {
    let y = TOP + ROW_H * g.rows.len() as i32 + 4;
    let grid = RGBColor(200, 200, 200);
    root.draw(&PathElement::new(vec![(x0, y), (x1, y)], BLACK.stroke_width(1))).map_err(draw_err)?;
    let (unit, per, step) = time_axis(g.span());
    let span_u = g.span() as f64 / per;
    let font = (FONT, 15).into_font();
    let mut k = 0u32;
    loop {
        let v = f64::from(k) * step;
        if v > span_u * (1.0 + 1e-9) {
            break;
        }
        let x = x0 + (v / span_u * f64::from(x1 - x0)).round() as i32;
        root.draw(&PathElement::new(vec![(x, TOP - 2), (x, y)], grid.stroke_width(1))).map_err(draw_err)?;
        root.draw(&PathElement::new(vec![(x, y), (x, y + 6)], BLACK.stroke_width(1))).map_err(draw_err)?;
        let style = font.clone().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(tick_label(v), (x, y + 9), style)).map_err(draw_err)?;
        k += 1;
    }
    let style = (FONT, 17).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
    let desc = format!("time from the start of the span ({unit}; the span starts {:.6} s into the run)", g.start as f64 / 1e9);
    root.draw(&Text::new(desc, ((x0 + x1) / 2, y + 32), style)).map_err(draw_err)?;
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, g: &Gantt) -> Result<(), ChartError> {
    let y = TOP + ROW_H * g.rows.len() as i32 + 84;
    let font = (FONT, 17).into_font();
    let mut x = 24;
    let present: Vec<TaskKind> =
        TaskKind::ALL.into_iter().filter(|k| *k != TaskKind::Other || g.tasks.iter().any(|t| t.kind == *k)).collect();
    let mut items: Vec<(String, RGBColor)> = present.iter().map(|&k| (k.name().to_string(), kind_color(k))).collect();
    items.push(("idle".into(), IDLE));
    for (label, color) in items {
        root.draw(&Rectangle::new([(x, y - 9), (x + 26, y + 9)], color.filled())).map_err(draw_err)?;
        root.draw(&Rectangle::new([(x, y - 9), (x + 26, y + 9)], BLACK.stroke_width(1))).map_err(draw_err)?;
        let style = font.clone().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        let tw = root.estimate_text_size(&label, &font.clone().into_text_style(root)).map_err(draw_err)?.0 as i32;
        root.draw(&Text::new(label, (x + 34, y), style)).map_err(draw_err)?;
        x += 34 + tw + 28;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_axis_ticks_are_1_2_5() {
        assert_eq!(time_axis(812_000), ("us", 1e3, 100.0));
        assert_eq!(time_axis(23_450_000), ("ms", 1e6, 5.0));
        assert_eq!(time_axis(12_000_000), ("ms", 1e6, 2.0));
        let (unit, _, step) = time_axis(1_000_000);
        assert!(unit == "ms" && (step - 0.1).abs() < 1e-12, "{step}");
        assert_eq!(time_axis(3_500_000_000), ("s", 1e9, 0.5));
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(fmt_duration(23_450_000), "23.450 ms");
    }
}
