//! The report page of a plan (`plan --out FILE`).

use serde_json::Value;

use super::{Cell, Page, ReportError, cabling_svg, envelope_text, esc, num, usd};
use crate::report::charts::{ReportPoint, latency_svg, pareto_svg, scaling_svg};

/// Most candidates listed in the table (the best first); the rest are counted.
const MAX_ROWS: usize = 400;

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn point(p: &Value, winner: Option<&str>) -> ReportPoint {
    let mixed = if p["mixed_fleet"] == true { ", mixed fleet" } else { "" };
    ReportPoint {
        group: format!("{} {}{mixed}", s(p, "engine"), s(p, "parallelism")),
        nodes: p["nodes"].as_u64().unwrap_or(1) as usize,
        cost_usd: f(p, "cost_usd"),
        tokens_per_s: f(p, "decode_tokens_per_s"),
        score: f(p, "score"),
        ttft_s: f(p, "ttft_s"),
        tpot_p50_ms: f(&p["tpot_ms"], "p50"),
        tpot_p99_ms: f(&p["tpot_ms"], "p99"),
        pareto: p["pareto"] == true,
        winner: winner == Some(s(p, "cluster")),
    }
}

/// The page of a plan JSON.
pub(super) fn page(v: &Value) -> Result<String, ReportError> {
    let question = s(v, "question").to_string();
    let unit = s(&v["objective"], "score_unit").to_string();
    let mut page = Page::new(&question, "plan");
    let w = &v["winner"];
    let winner = w.get("cluster").and_then(Value::as_str);
    answer(&mut page, v, &unit);
    let points: Vec<&Value> = v["points"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
    let rp: Vec<ReportPoint> = points.iter().map(|p| point(p, winner)).collect();
    let model = s(v, "model");
    page.h2("pareto", "Pareto chart: every predicted cluster");
    page.chart(
        pareto_svg(&format!("{model}: {unit} vs hardware cost (predicted)"), &format!("{} clusters predicted", rp.len()), &unit, &rp)?,
        "no cluster was predicted: nothing to chart",
    );
    page.h2("scaling", "Scaling");
    let sub = format!("best cluster per size and engine · {model}");
    page.chart(
        scaling_svg(&format!("{model}: decode tokens/s vs nodes (predicted)"), &sub, &rp)?,
        "fewer than two cluster sizes ran: no scaling chart",
    );
    page.h2("latency", "Latency");
    page.chart(
        latency_svg(&format!("{model}: latency vs nodes (predicted)"), &sub, &rp)?,
        "fewer than two cluster sizes ran: no latency chart",
    );
    page.h2("cabling", "Cabling of the answer");
    match winner {
        Some(_) => {
            let nodes: Vec<String> =
                w["nodes"].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
            let (svg, lines) = cabling_svg(&nodes, w["fabric"].as_str().unwrap_or("none"), w["topology"].as_str().unwrap_or("none"));
            page.raw(&svg);
            page.raw(&format!("<ol>{}</ol>", lines.iter().map(|l| format!("<li>{}</li>", esc(l))).collect::<String>()));
        }
        None => page.p("no answer: no cabling"),
    }
    candidates(&mut page, v, &points, winner, &unit);
    extrapolations(&mut page, &points);
    Ok(page.finish(&question))
}

/// The answer box and the search's size.
fn answer(page: &mut Page, v: &Value, unit: &str) {
    page.h2("answer", "Answer");
    let w = &v["winner"];
    match w.get("cluster").and_then(Value::as_str) {
        Some(c) => {
            let e = &w["estimate"];
            page.raw(&format!("<div class=\"answer\" id=\"the-answer\">{}</div>", esc(c)));
            let tpot = &e["tpot_ms"];
            page.kv(&[
                (unit, format!("{:.3}", f(w, "score"))),
                ("decode tokens/s", format!("{:.2}", f(w, "decode_tokens_per_s"))),
                (
                    "time per output token",
                    format!("{:.1} ms median, {:.1} ms p99 (the range the twin predicts)", f(tpot, "p50"), f(tpot, "p99")),
                ),
                ("time to first token", format!("{:.2} s", f(e, "ttft_s"))),
                ("hardware", format!("${}", crate::capacity::planner::report::money_text(f(w, "cost_usd")))),
                ("cluster power during decode", format!("{:.0} W", f(w, "cluster_power_w"))),
                ("energy", format!("{:.2} J/token", f(w, "energy_j_per_token"))),
                ("cost of a million tokens", format!("${:.2}", f(w, "usd_per_mtok"))),
                (
                    "availability",
                    format!(
                        "{:.6} (steady state under the profile's load-dependent faults: Thunderbolt TCP crashes, RDMA link failures)",
                        f(w, "availability")
                    ),
                ),
                ("calibration", envelope_text(s(&e["calibration"], "status"), &strings(&e["calibration"]["reasons"]))),
            ]);
        }
        None => page
            .raw("<div class=\"answer none\" id=\"the-answer\">No cluster meets the objective. The closest are in the table below.</div>"),
    }
    page.p(&format!(
        "Searched {} candidates{}: {} over budget (pruned before simulating), {} dominated by a simulated candidate (bounded, not simulated), {} predicted, {} meet the objective. Context {} tokens.",
        v["candidates"],
        if v["mixed_fleets"] == true { " including mixed fleets" } else { "" },
        v["pruned"],
        v["dominated"].as_u64().unwrap_or(0),
        v["predicted"],
        v["meet_objective"],
        v["context"],
    ));
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default()
}

/// The table of predicted candidates (best first) with why each lost, and the ones that could not run.
fn candidates(page: &mut Page, v: &Value, points: &[&Value], winner: Option<&str>, unit: &str) {
    page.h2("candidates", "Candidates and why each lost");
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| f(b, "score").total_cmp(&f(a, "score")).then(s(a, "cluster").cmp(s(b, "cluster"))));
    let rows: Vec<(String, Vec<Cell>)> = sorted
        .iter()
        .take(MAX_ROWS)
        .enumerate()
        .map(|(i, p)| {
            let class = if Some(s(p, "cluster")) == winner { "win" } else { "" };
            let tpot = &p["tpot_ms"];
            let cal = envelope_text(s(&p["calibration"], "status"), &strings(&p["calibration"]["reasons"]));
            (
                class.to_string(),
                vec![
                    num((i + 1) as f64, 0),
                    Cell::Text(s(p, "cluster").to_string()),
                    num(f(p, "score"), 3),
                    num(f(p, "decode_tokens_per_s"), 2),
                    Cell::Num(f(tpot, "p50"), format!("{:.1}–{:.1}", f(tpot, "p50"), f(tpot, "p99"))),
                    num(f(p, "ttft_s"), 2),
                    usd(f(p, "cost_usd")),
                    num(f(p, "cluster_power_w"), 0),
                    num(f(p, "availability"), 6),
                    Cell::Text(if p["mixed_fleet"] == true { "mixed".into() } else { String::new() }),
                    Cell::Text(if cal == "inside" { cal } else { "extrapolation".into() }),
                    Cell::Text(if p["pareto"] == true { "yes".into() } else { String::new() }),
                    Cell::Text(s(p, "verdict").to_string()),
                ],
            )
        })
        .collect();
    let header = [
        "#",
        "cluster, wiring, engine split [options]",
        unit,
        "tok/s",
        "TPOT p50–p99 ms",
        "TTFT s",
        "hardware",
        "W",
        "availability",
        "fleet",
        "envelope",
        "Pareto",
        "why it lost",
    ];
    page.table(&header, &rows);
    if sorted.len() > MAX_ROWS {
        page.p(&format!("… and {} more predicted candidates (all in the plan JSON).", sorted.len() - MAX_ROWS));
    }
    let fails = v["could_not_run"].as_array().cloned().unwrap_or_default();
    if !fails.is_empty() {
        page.h2("could-not-run", "Candidates that could not run");
        let rows: Vec<(String, Vec<Cell>)> = fails
            .iter()
            .map(|x| (String::new(), vec![Cell::Text(s(x, "cause").into()), num(f(x, "count"), 0), Cell::Text(s(x, "example").into())]))
            .collect();
        page.table(&["cause", "candidates", "example"], &rows);
    }
}

/// Which numbers are extrapolations, and why.
fn extrapolations(page: &mut Page, points: &[&Value]) {
    page.h2("extrapolations", "Which numbers are extrapolations");
    let mut reasons: Vec<(String, usize)> = Vec::new();
    let mut n = 0;
    for p in points {
        if s(&p["calibration"], "status") != "inside" {
            n += 1;
            for r in strings(&p["calibration"]["reasons"]) {
                match reasons.iter_mut().find(|x| x.0 == r) {
                    Some(x) => x.1 += 1,
                    None => reasons.push((r, 1)),
                }
            }
        }
    }
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    page.p(&format!(
        "{n} of {} predicted candidates lie outside the calibrated envelope (marked \"extrapolation\" in the table); the others are predicted inside it.",
        points.len()
    ));
    if !reasons.is_empty() {
        page.raw(&format!("<ul>{}</ul>", reasons.iter().take(20).map(|(r, c)| format!("<li>{} ({c})</li>", esc(r))).collect::<String>()));
    }
}
