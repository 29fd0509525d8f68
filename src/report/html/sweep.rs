//! The report page of a sweep output directory.

use std::path::Path;

use super::{Cell, Page, ReportError, cabling_svg, envelope_text, esc, num, usd};
use crate::capacity::sweep::Manifest;
use crate::report::charts::{ChartRow, Metric, ReportPoint, latency_svg, pareto_svg, read_chart_rows, sweep_svgs};

/// Most rows listed in the table (fastest first).
const MAX_ROWS: usize = 400;

/// The axis values of a row, `key=value` joined.
fn point_text(r: &ChartRow) -> String {
    r.overrides.iter().filter(|(k, _)| k.as_str() != "seed").map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Whether `a` is dominated (another row is at least as fast, cheap and frugal, and better in one).
fn dominated(a: &ChartRow, rows: &[&ChartRow]) -> bool {
    let (t, c, w) = (a.mean(Metric::DecodeTokensPerS), a.mean(Metric::CostUsd), a.mean(Metric::ClusterPowerW));
    rows.iter().any(|b| {
        let (bt, bc, bw) = (b.mean(Metric::DecodeTokensPerS), b.mean(Metric::CostUsd), b.mean(Metric::ClusterPowerW));
        bt >= t && bc <= c && bw <= w && (bt > t || bc < c || bw < w)
    })
}

/// The page of a sweep directory.
pub(super) fn page(dir: &Path) -> Result<String, ReportError> {
    let manifest = Manifest::read(dir).map_err(|e| ReportError::Input(e.to_string()))?;
    let rows = read_chart_rows(dir)?;
    let question = format!("Which configuration of sweep \u{201c}{}\u{201d} is fastest?", manifest.name);
    let mut page = Page::new(&question, "sweep");
    let mut ran: Vec<&ChartRow> = rows.iter().filter(|r| r.fits && r.estimate.is_some()).collect();
    ran.sort_by(|a, b| b.mean(Metric::DecodeTokensPerS).total_cmp(&a.mean(Metric::DecodeTokensPerS)).then(a.index.cmp(&b.index)));
    let best = ran.first().copied();
    page.h2("answer", "Answer");
    match best {
        Some(b) => {
            let e = b.estimate.as_ref().expect("ran");
            let cluster = crate::capacity::planner::nodes_text(&e.nodes);
            page.raw(&format!(
                "<div class=\"answer\" id=\"the-answer\">{}: {:.2} tokens/s decode ({} {}, {} {})</div>",
                esc(&cluster),
                b.mean(Metric::DecodeTokensPerS),
                esc(&e.engine),
                esc(&e.parallelism),
                esc(&e.fabric),
                esc(&e.topology)
            ));
            let range = b
                .range(Metric::DecodeTokensPerS)
                .map_or(String::new(), |(lo, hi)| format!("{lo:.2}–{hi:.2} over {} seeds", b.replicates()));
            page.kv(&[
                ("point", point_text(b)),
                ("decode tokens/s (mean; range)", format!("{:.2}; {range}", b.mean(Metric::DecodeTokensPerS))),
                ("time per output token", format!("{:.1} ms median, {:.1} ms p99", b.mean(Metric::TpotP50Ms), b.mean(Metric::TpotP99Ms))),
                ("time to first token", format!("{:.2} s", b.mean(Metric::TtftS))),
                ("hardware", format!("${}", crate::capacity::planner::report::money_text(b.mean(Metric::CostUsd)))),
                ("cluster power", format!("{:.0} W", b.mean(Metric::ClusterPowerW))),
                ("calibration", envelope_text(&e.calibration.status, &e.calibration.reasons)),
            ]);
        }
        None => page.raw("<div class=\"answer none\" id=\"the-answer\">No point of this sweep runs: every row has a reason below.</div>"),
    }
    page.p(&format!(
        "{} points ({} distinct configurations, seeds merged) over axes {}; {} run. Profile {}.{}",
        manifest.points_done,
        rows.len(),
        manifest.axes.join(", "),
        ran.len(),
        manifest.profile,
        if manifest.complete { "" } else { " The sweep is incomplete: only the points written so far are shown." }
    ));
    charts(&mut page, &manifest, &rows, &ran, best)?;
    if let Some(b) = best.and_then(|b| b.estimate.as_ref()) {
        page.h2("cabling", "Cabling of the answer");
        let (svg, lines) = cabling_svg(&b.nodes, &b.fabric, &b.topology);
        page.raw(&svg);
        page.raw(&format!("<ol>{}</ol>", lines.iter().map(|l| format!("<li>{}</li>", esc(l))).collect::<String>()));
    }
    table(&mut page, &rows, &ran, best);
    Ok(page.finish(&question))
}

fn charts(page: &mut Page, manifest: &Manifest, rows: &[ChartRow], ran: &[&ChartRow], best: Option<&ChartRow>) -> Result<(), ReportError> {
    let points: Vec<ReportPoint> = ran
        .iter()
        .map(|r| {
            let e = r.estimate.as_ref().expect("ran");
            ReportPoint {
                group: format!("{} {} {}", e.engine, e.parallelism, e.fabric),
                nodes: e.nodes.len(),
                cost_usd: r.mean(Metric::CostUsd),
                tokens_per_s: r.mean(Metric::DecodeTokensPerS),
                score: r.mean(Metric::DecodeTokensPerS),
                ttft_s: r.mean(Metric::TtftS),
                tpot_p50_ms: r.mean(Metric::TpotP50Ms),
                tpot_p99_ms: r.mean(Metric::TpotP99Ms),
                pareto: !dominated(r, ran),
                winner: best.is_some_and(|b| b.index == r.index),
            }
        })
        .collect();
    page.h2("pareto", "Pareto chart");
    page.chart(
        pareto_svg(
            &format!("{}: decode tokens/s vs hardware cost (predicted)", manifest.name),
            "every point that runs",
            "decode tokens/s",
            &points,
        )?,
        "no point runs",
    );
    page.h2("latency", "Latency");
    page.chart(
        latency_svg(&format!("{}: latency vs nodes (predicted)", manifest.name), "fastest point per size and line", &points)?,
        "fewer than two node counts: no latency chart by size",
    );
    page.h2("charts", "Scaling and the sweep's charts");
    let svgs = sweep_svgs(manifest, rows)?;
    if svgs.is_empty() {
        page.p("this sweep's axes support none of the sweep charts (scaling needs two node counts)");
    }
    for (stem, svg) in svgs {
        page.raw(&format!("<h3>{}</h3>{svg}", esc(&stem)));
    }
    Ok(())
}

fn table(page: &mut Page, rows: &[ChartRow], ran: &[&ChartRow], best: Option<&ChartRow>) {
    page.h2("candidates", "Every point and why it lost");
    let top = best.map_or(0.0, |b| b.mean(Metric::DecodeTokensPerS));
    let mut order: Vec<&ChartRow> = ran.to_vec();
    order.extend(rows.iter().filter(|r| !(r.fits && r.estimate.is_some())));
    let body: Vec<(String, Vec<Cell>)> = order
        .iter()
        .take(MAX_ROWS)
        .map(|r| {
            let why = match (&r.estimate, &r.error) {
                (Some(_), _) if best.is_some_and(|b| b.index == r.index) => "the answer".to_string(),
                (Some(_), _) => format!("slower: {:.2} vs {top:.2} tok/s", r.mean(Metric::DecodeTokensPerS)),
                (None, Some(e)) => format!(
                    "{}: {}",
                    serde_json::to_value(e.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                    e.message
                ),
                (None, None) => "did not run".into(),
            };
            let cal = r
                .estimate
                .as_ref()
                .map_or(String::new(), |e| if e.calibration.status == "inside" { "inside".into() } else { "extrapolation".into() });
            let range = r
                .range(Metric::DecodeTokensPerS)
                .filter(|_| r.replicates() > 1)
                .map_or(String::new(), |(lo, hi)| format!("{lo:.2}–{hi:.2}"));
            let class = if best.is_some_and(|b| b.index == r.index) { "win" } else { "" };
            let ran = r.estimate.is_some();
            let m = |x: Metric, d: usize| if ran { num(r.mean(x), d) } else { Cell::Num(f64::NAN, "–".into()) };
            (
                class.to_string(),
                vec![
                    num(r.index as f64, 0),
                    Cell::Text(point_text(r)),
                    m(Metric::DecodeTokensPerS, 2),
                    Cell::Text(range),
                    Cell::Text(if ran {
                        format!("{:.1}–{:.1}", r.mean(Metric::TpotP50Ms), r.mean(Metric::TpotP99Ms))
                    } else {
                        String::new()
                    }),
                    m(Metric::TtftS, 2),
                    if ran { usd(r.mean(Metric::CostUsd)) } else { Cell::Num(f64::NAN, "–".into()) },
                    m(Metric::ClusterPowerW, 0),
                    Cell::Text(cal),
                    Cell::Text(why),
                ],
            )
        })
        .collect();
    page.table(
        &["point", "axes", "tok/s", "range over seeds", "TPOT p50–p99 ms", "TTFT s", "hardware", "W", "envelope", "why it lost"],
        &body,
    );
    if order.len() > MAX_ROWS {
        page.p(&format!("… and {} more points (all in results.csv).", order.len() - MAX_ROWS));
    }
    let extra = ran.iter().filter(|r| r.estimate.as_ref().is_some_and(|e| e.calibration.status != "inside")).count();
    page.h2("extrapolations", "Which numbers are extrapolations");
    page.p(&format!(
        "{extra} of {} points that run lie outside the calibrated envelope (marked \"extrapolation\" in the table).",
        ran.len()
    ));
}
