//! The report page of one run (`run` writes its JSON under `output/`).

use super::{Cell, Page, cabling_svg, envelope_text, esc, num};
use crate::estimate::Estimate;

/// The page of one estimate.
pub(super) fn page(e: &Estimate) -> String {
    let question = format!("What does \u{201c}{}\u{201d} predict?", e.name);
    let mut page = Page::new(&question, "run");
    page.h2("answer", "Answer");
    let cluster = crate::capacity::planner::nodes_text(&e.nodes);
    let headline = if e.hpl_gflops.is_some() {
        format!("{cluster}: {:.0} Gflops HPL", e.hpl_gflops.unwrap_or(0.0))
    } else {
        format!("{cluster}: {:.2} tokens/s decode with {} {}", e.decode_tokens_per_s, e.engine, e.parallelism)
    };
    page.raw(&format!("<div class=\"answer\" id=\"the-answer\">{}</div>", esc(&headline)));
    page.kv(&[
        ("model", format!("{} ({})", e.model, e.quant)),
        ("workload", format!("{}: {} prompt + {} generated tokens, seed {}", e.workload, e.prompt_tokens, e.generate_tokens, e.seed)),
        ("decode tokens/s", format!("{:.2}", e.decode_tokens_per_s)),
        ("prefill tokens/s", format!("{:.1}", e.prefill_tokens_per_s)),
        ("time to first token", format!("{:.3} s", e.ttft_s)),
        ("time per output token", format!("{:.2} ms median, {:.2} ms p99 (the range the twin predicts)", e.tpot_ms.p50, e.tpot_ms.p99)),
        ("cluster power", format!("{:.0} W", e.cluster_power_w)),
        ("energy", format!("{:.2} J/token", e.energy_j_per_token)),
        ("hardware", format!("${}", crate::capacity::planner::report::money_text(e.cost_usd))),
        ("cost of a million tokens", format!("${:.2}", e.usd_per_mtok)),
        ("calibration", envelope_text(&e.calibration.status, &e.calibration.reasons)),
    ]);
    page.p("A single run has no Pareto, scaling or latency chart: run a sweep or a plan for those.");
    page.h2("memory", "Memory per node");
    let rows: Vec<(String, Vec<Cell>)> = e
        .memory
        .iter()
        .enumerate()
        .map(|(i, m)| {
            (
                String::new(),
                vec![
                    num(i as f64, 0),
                    Cell::Text(m.node.clone()),
                    Cell::Text(format!("{}–{}", m.layers[0], m.layers[1])),
                    num(m.weights_gb, 1),
                    num(m.kv_cache_gb, 2),
                    num(m.total_gb, 1),
                    num(m.limit_gb, 1),
                ],
            )
        })
        .collect();
    page.table(&["node", "preset", "layers", "weights GB", "KV cache GB", "total GB", "wired limit GB"], &rows);
    page.h2("cabling", "Cabling");
    let (svg, lines) = cabling_svg(&e.nodes, &e.fabric, &e.topology);
    page.raw(&svg);
    page.raw(&format!("<ol>{}</ol>", lines.iter().map(|l| format!("<li>{}</li>", esc(l))).collect::<String>()));
    page.h2("extrapolations", "Which numbers are extrapolations");
    page.p(&if e.calibration.status == "inside" {
        format!("Every number is predicted inside the calibrated envelope of profile {}.", e.calibration.profile)
    } else {
        format!("Every number of this run is an extrapolation of profile {}: {}.", e.calibration.profile, e.calibration.reasons.join("; "))
    });
    for note in &e.calibration.notes {
        page.p(&format!("Note: {note}."));
    }
    page.finish(&question)
}
