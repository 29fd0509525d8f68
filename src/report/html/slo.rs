//! The report page of an SLO plan (`plan --slo`'s slo.json): the question, the answer (the
//! option that serves the most load under the SLO, at the spec's budget), every option's
//! capacity, hardware cost and latencies at capacity, the latency-vs-load chart, and which
//! options' numbers are extrapolations of the calibrated envelope.

use super::{Cell, Page, ReportError, envelope_text, esc, num, usd};
use crate::capacity::planner::report::money_text;
use crate::capacity::slo::{OptionResult, SloPlan};
use crate::report::charts::slo_svg;

/// The page of an SLO plan.
pub(super) fn page(plan: &SloPlan) -> Result<String, ReportError> {
    let mut page = Page::new(&plan.question, "SLO plan");
    answer(&mut page, plan);
    page.h2("latency", "Latency vs load");
    page.chart(Some(slo_svg(plan)?), "");
    options(&mut page, plan);
    extrapolations(&mut page, plan);
    page.h2("method", "How the answer was found");
    page.p(&format!(
        "Each option is the serving scenario {} with the option's overrides. For each, the highest load meeting every target \
         ({}) while the server keeps up with arrivals is found by bracketing and bisection; each probe is one predicted serving run \
         measuring {} requests after warm-up, at the scenario's seed (the same arrival stream, scaled, at every load). \
         Predicted by the digital twin, not measured.",
        plan.scenario,
        plan.targets(),
        plan.probe_requests
    ));
    Ok(page.finish(&plan.question))
}

fn by_label<'a>(plan: &'a SloPlan, label: &str) -> Option<&'a OptionResult> {
    plan.options.iter().find(|o| o.label == label)
}

/// The answer box.
fn answer(page: &mut Page, plan: &SloPlan) {
    page.h2("answer", "Answer");
    let axis = plan.axis();
    match plan.answer.as_deref().and_then(|a| by_label(plan, a)) {
        Some(o) => {
            page.raw(&format!("<div class=\"answer\" id=\"the-answer\">{}</div>", esc(&o.label)));
            let at = o.at_capacity();
            let capacity = match (o.capacity, o.failed_at) {
                (Some(c), None) => format!(">= {} (met up to the highest load probed)", axis.fmt(c)),
                (Some(c), Some(_)) => axis.fmt(c),
                (None, _) => "none".into(),
            };
            let cal = o.calibration.as_ref();
            page.kv(&[
                ("cluster", o.cluster.clone().unwrap_or_default()),
                ("capacity under the SLO", capacity),
                ("SLO", plan.targets()),
                ("hardware", o.hardware_usd.map_or("-".into(), |c| format!("${}", money_text(c)))),
                (
                    "at capacity",
                    at.map_or("-".into(), |p| {
                        format!(
                            "p99 TTFT {:.3} s, p99 TPOT {:.1} ms, {:.1} aggregate decode tok/s, mean batch {:.1}",
                            p.ttft_p99_s, p.tpot_p99_ms, p.aggregate_decode_tokens_per_s, p.mean_batch
                        )
                    }),
                ),
                ("calibration", cal.map_or("-".into(), |e| envelope_text(&e.status, &e.reasons))),
            ]);
        }
        None => page.raw(
            "<div class=\"answer none\" id=\"the-answer\">No option meets the SLO at any load probed. The table shows how close each came.</div>",
        ),
    }
    if let Some(b) = plan.budget_usd {
        page.p(&format!(
            "Equal budget: every option's hardware had to cost at most ${}; an option over it is listed, not searched.",
            money_text(b)
        ));
    }
}

/// One row per option.
fn options(page: &mut Page, plan: &SloPlan) {
    page.h2("options", "Every option");
    let axis = plan.axis();
    let rows: Vec<(String, Vec<Cell>)> = plan
        .options
        .iter()
        .map(|o| {
            let at = o.at_capacity();
            let f = |g: fn(&crate::capacity::slo::Probe) -> f64, d: usize| at.map_or(Cell::Text("–".into()), |p| num(g(p), d));
            let status = match (&o.error, o.calibration.as_ref()) {
                (Some(e), _) => format!("cannot run: {e}"),
                (None, Some(c)) if c.status != "inside" => "extrapolation".into(),
                (None, Some(_)) => "inside".into(),
                (None, None) => "–".into(),
            };
            let class = if plan.answer.as_deref() == Some(o.label.as_str()) { "win" } else { "" };
            (
                class.to_string(),
                vec![
                    Cell::Text(o.label.clone()),
                    Cell::Text(o.cluster.clone().unwrap_or_default()),
                    o.hardware_usd.map_or(Cell::Text("–".into()), usd),
                    o.capacity.map_or(Cell::Num(0.0, "none".into()), |c| Cell::Num(c, axis.fmt(c))),
                    f(|p| p.ttft_p99_s, 3),
                    f(|p| p.tpot_p99_ms, 1),
                    f(|p| p.aggregate_decode_tokens_per_s, 1),
                    o.capacity.zip(o.hardware_usd).map_or(Cell::Text("–".into()), |(c, h)| num(c / h * 1000.0, 3)),
                    Cell::Text(status),
                ],
            )
        })
        .collect();
    let per_k = format!("capacity per $1,000 ({})", if axis == crate::capacity::slo::Axis::Rate { "req/s" } else { "users" });
    page.table(
        &["option", "cluster", "hardware", "capacity", "p99 TTFT s", "p99 TPOT ms", "agg decode tok/s", &per_k, "calibration"],
        &rows,
    );
}

/// Which options' numbers are extrapolations, and why.
fn extrapolations(page: &mut Page, plan: &SloPlan) {
    page.h2("extrapolations", "Which numbers are calibrated and which extrapolated");
    let mut any = false;
    for o in &plan.options {
        if let Some(e) = &o.calibration {
            any = true;
            let text = if e.status == "inside" {
                format!("{}: inside the envelope of profile {} (a calibration row ran this setup).", o.label, e.profile)
            } else {
                format!("{}: EXTRAPOLATION of profile {}: {}.", o.label, e.profile, e.reasons.join("; "))
            };
            page.raw(&format!("<p{}>{}</p>", if e.status == "inside" { "" } else { " class=\"extra\"" }, esc(&text)));
        }
    }
    if !any {
        page.p("no option could be built: nothing to say about calibration");
    }
}
