//! llama-benchy output as measurement rows: the benchmark DGX Spark users run against an
//! OpenAI-compatible server (vLLM, SGLang, llama-server), so they calibrate from what they
//! already have.
//!
//! llama-benchy 0.3.5 (`results.py`) writes its runs as JSON (`--format json`: the metadata,
//! `model`, `version`, `latency_ms`, and `benchmarks`, one object per run with `concurrency`,
//! `context_size`, `prompt_size`, `response_size`, `is_context_prefill_phase` and each metric's
//! `mean`) or as a markdown table (`| model | test | t/s | ... | e2e_ttft (ms) |`, a test named
//! `pp2048`, `tg32`, `pp2048 @ d4096`, with ` (c8)` when the suite ran several concurrencies,
//! and `t/s (total)` / `t/s (req)` columns then; each cell `mean ± std`). Per run of C requests
//! sent at once: the prompt rate (`pp t/s`: at C = 1 the prompt over the time to the first
//! response, above it all prompts over the time to the last first token) becomes a
//! `prefill_tokens_per_s` row; the generation rate (`tg t/s`: tokens after each request's first
//! over the span from the earliest first token to the latest last one) an
//! `aggregate_decode_tokens_per_s` row; above C = 1 the per-request rate (`t/s (req)`) a
//! `decode_tokens_per_s` row at concurrency C; the time to the first token (`e2e_ttft`, less the
//! measured network latency where the JSON gives it) a `ttft_s` row. `validate` reads each as
//! the tool computes it (the notes name llama-benchy). Runs after a filled context (`@ dD`,
//! `ctx_pp`, `ctx_tg`) are skipped with why: their context phase and the server's prefix cache
//! decide what the timed request prefills.

use serde_json::Value;

use crate::calibrate::serve_bench::{Skipped, cluster_columns, quant_of};
use crate::calibrate::validate::MeasurementRow;

/// One llama-benchy run: its shape and the means of its metrics (rates in tokens per second,
/// the TTFT in seconds).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchyRun {
    /// The served model's name as the tool printed it.
    pub model: Option<String>,
    /// Requests sent at once.
    pub concurrency: u64,
    /// Tokens already in context (`@ dD`); 0 for a plain run.
    pub depth: u64,
    /// Prompt tokens per request.
    pub prompt: u64,
    /// Generated tokens per request (0 where a markdown pp row stands alone).
    pub response: u64,
    /// A context prefill phase (`ctx_pp`, `ctx_tg`).
    pub context_phase: bool,
    /// `pp t/s`: at concurrency 1 one request's, above it the batch's.
    pub pp: Option<f64>,
    /// `tg t/s`: at concurrency 1 one request's, above it the batch's.
    pub tg: Option<f64>,
    /// `t/s (req)` of the tg test above concurrency 1.
    pub tg_req: Option<f64>,
    /// Time to the first token, s (network latency taken off where known).
    pub ttft_s: Option<f64>,
}

/// What the file says about itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchyFile {
    /// `version` (JSON only).
    pub version: Option<String>,
    /// The runs.
    pub runs: Vec<BenchyRun>,
}

/// Whether `text` is llama-benchy output: its JSON report or its markdown table.
pub fn looks_like(text: &str) -> bool {
    json_report(text).is_some() || text.lines().any(|l| md_header(l).is_some())
}

/// The JSON report, if `text` is one (an object whose `benchmarks` hold `prompt_size`).
fn json_report(text: &str) -> Option<serde_json::Map<String, Value>> {
    let t = text.trim_start();
    if !t.starts_with('{') || !t.contains("\"benchmarks\"") {
        return None;
    }
    let v: Value = serde_json::from_str(t).ok()?;
    let o = v.as_object()?;
    let first = o.get("benchmarks")?.as_array()?.first()?;
    first.get("prompt_size")?;
    Some(o.clone())
}

/// The column names of the markdown table's header line, if `line` is it.
fn md_header(line: &str) -> Option<Vec<String>> {
    let cells = cells(line)?;
    (cells.first().map(String::as_str) == Some("model") && cells.iter().any(|c| c == "test") && cells.iter().any(|c| c == "e2e_ttft (ms)"))
        .then_some(cells)
}

/// The trimmed cells of a `| a | b |` line.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

/// A cell's mean (`57.50 ± 0.31`, or a bare number); `None` when empty.
fn mean(cell: &str) -> Result<Option<f64>, String> {
    let m = cell.split('±').next().unwrap_or("").trim();
    if m.is_empty() {
        return Ok(None);
    }
    m.parse().map(Some).map_err(|_| format!("`{cell}` is not `mean ± std`"))
}

/// A test name taken apart: (pp or tg, tokens, depth, concurrency, context phase).
fn test_name(name: &str) -> Option<(&'static str, u64, u64, u64, bool)> {
    let (main, conc) = match name.rsplit_once(" (c") {
        Some((m, c)) => (m.trim(), c.strip_suffix(')')?.parse().ok()?),
        None => (name.trim(), 1),
    };
    let (head, depth) = match main.split_once(" @ d") {
        Some((h, d)) => (h.trim(), d.trim().parse().ok()?),
        None => (main, 0),
    };
    let (kind, tokens, ctx) = match head {
        "ctx_pp" => ("pp", 0, true),
        "ctx_tg" => ("tg", 0, true),
        h => match (h.strip_prefix("pp"), h.strip_prefix("tg")) {
            (Some(n), _) => ("pp", n.parse().ok()?, false),
            (_, Some(n)) => ("tg", n.parse().ok()?, false),
            _ => return None,
        },
    };
    Some((kind, tokens, depth, conc, ctx))
}

/// The runs of a markdown table: each pp row and the tg row of the same depth and concurrency
/// after it make one run.
fn parse_md(text: &str) -> Result<Vec<BenchyRun>, String> {
    let mut header: Option<Vec<String>> = None;
    let mut runs: Vec<BenchyRun> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(h) = md_header(line) {
            header = Some(h);
            continue;
        }
        let (Some(h), Some(c)) = (&header, cells(line)) else { continue };
        let col = |name: &str| h.iter().position(|x| x == name).and_then(|k| c.get(k)).map(String::as_str);
        let Some((kind, tokens, depth, conc, ctx)) = col("test").and_then(test_name) else { continue };
        let at = |e: String| format!("line {}: {e}", i + 1);
        let total = col("t/s (total)").or(col("t/s")).map(mean).transpose().map_err(at)?.flatten();
        let req = col("t/s (req)").map(mean).transpose().map_err(at)?.flatten();
        let ttft = col("e2e_ttft (ms)").map(mean).transpose().map_err(at)?.flatten().map(|ms| ms / 1e3);
        // A tg row completes the latest pp run of its depth and concurrency; anything else
        // starts a run.
        let same = |r: &BenchyRun| r.depth == depth && r.concurrency == conc && r.context_phase == ctx && r.tg.is_none();
        let open = if kind == "tg" { runs.iter().rposition(same) } else { None };
        let k = open.unwrap_or_else(|| {
            let model = col("model").map(String::from).filter(|m| !m.is_empty() && m != "Unknown");
            runs.push(BenchyRun { model, concurrency: conc, depth, context_phase: ctx, ..Default::default() });
            runs.len() - 1
        });
        let run = &mut runs[k];
        if kind == "pp" {
            (run.prompt, run.pp, run.ttft_s) = (tokens, total, ttft);
        } else {
            (run.response, run.tg, run.tg_req) = (tokens, total, req.filter(|_| conc > 1));
        }
    }
    Ok(runs)
}

/// The runs of the JSON report.
fn parse_json(o: &serde_json::Map<String, Value>) -> Result<BenchyFile, String> {
    let latency_s = o.get("latency_ms").and_then(Value::as_f64).unwrap_or(0.0) / 1e3;
    let model = o.get("model").and_then(Value::as_str).map(String::from);
    let mut runs = Vec::new();
    for (n, b) in o.get("benchmarks").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let int = |k: &str| b.get(k).and_then(Value::as_u64).ok_or(format!("run {}: no `{k}`", n + 1));
        let metric = |k: &str| b.get(k).and_then(|m| m.get("mean")).and_then(Value::as_f64);
        let concurrency = int("concurrency")?;
        runs.push(BenchyRun {
            model: model.clone(),
            concurrency,
            depth: int("context_size")?,
            prompt: int("prompt_size")?,
            response: int("response_size")?,
            context_phase: b.get("is_context_prefill_phase").and_then(Value::as_bool).unwrap_or(false),
            pp: metric("pp_throughput"),
            tg: metric("tg_throughput"),
            tg_req: metric("tg_req_throughput").filter(|_| concurrency > 1),
            // `e2e_ttft` is in ms; the tool's own TTFT takes the measured latency off it.
            ttft_s: metric("e2e_ttft").map(|ms| (ms / 1e3 - latency_s).max(0.0)),
        });
    }
    Ok(BenchyFile { version: o.get("version").and_then(Value::as_str).map(String::from), runs })
}

/// The runs of an output (JSON report or markdown table). Errors: no run, or an unreadable cell.
pub fn parse(text: &str) -> Result<BenchyFile, String> {
    let file = match json_report(text) {
        Some(o) => parse_json(&o)?,
        None => BenchyFile { version: None, runs: parse_md(text)? },
    };
    if file.runs.is_empty() {
        return Err("no run: neither a JSON report with `benchmarks` nor a `| model | test | ...` table row".into());
    }
    Ok(file)
}

/// What the runs are about, the caller's flags applied: a serving benchmark's labels
/// ([`crate::calibrate::serve_bench::Labels`]); llama-benchy names no server, so the engine must
/// be given.
pub use crate::calibrate::serve_bench::Labels;

/// Turns runs into rows (`{stem}-{n}-{pp|tg|tg-req|ttft}`); runs after a filled context, or whose
/// model or format is not known, are returned as (what, why).
pub fn to_rows(file: &BenchyFile, labels: &Labels<'_>, stem: &str, source: &str) -> Result<(Vec<MeasurementRow>, Vec<Skipped>), String> {
    let engine =
        labels.engine.ok_or("llama-benchy's output names no server: pass --engine (vllm, sglang, llama-cpp, vllm-mlx, ...)")?.to_string();
    let (split, link) = cluster_columns(labels.node, labels.nodes, labels.parallelism, labels.fabric)?;
    let tool = format!("llama-benchy{}", file.version.as_deref().map_or(String::new(), |v| format!(" {v}")));
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for (n, r) in file.runs.iter().enumerate() {
        let what = format!("run {} (pp{} tg{} c{} @ d{})", n + 1, r.prompt, r.response, r.concurrency, r.depth);
        if r.context_phase || r.depth > 0 {
            skipped.push((
                what,
                "a run after a filled context: its context phase and the server's prefix cache decide what the timed request prefills"
                    .into(),
            ));
            continue;
        }
        let Some(model) = labels.model.map(String::from).or_else(|| r.model.clone()) else {
            skipped.push((what, "the output names no model: pass --model".into()));
            continue;
        };
        let quant = match labels.quant.map(String::from).or_else(|| quant_of(&model)) {
            Some(q) => q,
            None => {
                skipped.push((what, format!("model `{model}` names no format (-FP8, -NVFP4, -AWQ): pass --quant")));
                continue;
            }
        };
        let c = r.concurrency.max(1);
        let generated = if r.response > 0 { format!(" tg{}", r.response) } else { String::new() };
        for (short, metric, column, value, unit) in [
            ("pp", "prefill_tokens_per_s", if c > 1 { "pp t/s (total)" } else { "pp t/s" }, r.pp, "tok/s"),
            ("tg", "aggregate_decode_tokens_per_s", if c > 1 { "tg t/s (total)" } else { "tg t/s" }, r.tg, "tok/s"),
            ("tg-req", "decode_tokens_per_s", "tg t/s (req)", r.tg_req, "tok/s"),
            ("ttft", "ttft_s", "e2e_ttft", r.ttft_s, "s"),
        ] {
            let Some(v) = value.filter(|v| v.is_finite() && *v > 0.0) else { continue };
            rows.push(MeasurementRow {
                id: format!("{stem}-{}-{short}", n + 1),
                prompt_tokens: r.prompt.to_string(),
                concurrency: c.to_string(),
                metric: metric.into(),
                value: crate::util::sig(v),
                unit: unit.into(),
                source: format!("{tool} {source}"),
                notes: format!("{tool} pp{}{generated} c{c}; {column}", r.prompt),
                ..labels.row(&model, &quant, &engine, (&split, &link))
            });
        }
    }
    Ok((rows, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "Printing results in MD format:\n\n\
        | model               |           test |   t/s (total) |   t/s (req) |   peak t/s |   peak t/s (req) |   ttfr (ms) |   est_ppt (ms) |   e2e_ttft (ms) |\n\
        |:--------------------|---------------:|--------------:|------------:|-----------:|-----------------:|------------:|---------------:|----------------:|\n\
        | openai/gpt-oss-120b |    pp1024 (c1) | 3000.00 ± 10.00 | 3000.00 ± 10.00 |            |                  | 350.00 ± 1.00 | 340.00 ± 1.00 | 400.00 ± 2.00 |\n\
        | openai/gpt-oss-120b |     tg128 (c1) |  57.50 ± 0.30 |  57.50 ± 0.30 |  60.00 ± 0.50 |  60.00 ± 0.50 |             |                |                 |\n\
        | openai/gpt-oss-120b |    pp1024 (c8) | 4000.00 ± 20.00 | 1000.00 ± 5.00 |            |                  | 2000.00 ± 5.00 | 1990.00 ± 5.00 | 2100.00 ± 9.00 |\n\
        | openai/gpt-oss-120b |     tg128 (c8) | 150.00 ± 1.00 |  19.00 ± 0.20 | 160.00 ± 1.00 |  20.00 ± 0.10 |             |                |                 |\n\
        | openai/gpt-oss-120b | pp1024 @ d4096 (c1) | 2000.00 ± 10.00 | 2000.00 ± 10.00 |  |  | 600.00 ± 1.00 | 590.00 ± 1.00 | 650.00 ± 2.00 |\n";

    #[test]
    fn a_markdown_table_pairs_each_prompt_test_with_its_generation_test() {
        assert!(looks_like(MD));
        let f = parse(MD).unwrap();
        assert_eq!(f.runs.len(), 3);
        let c8 = &f.runs[1];
        assert_eq!(
            (c8.concurrency, c8.prompt, c8.response, c8.pp, c8.tg, c8.tg_req),
            (8, 1024, 128, Some(4000.0), Some(150.0), Some(19.0))
        );
        assert_eq!(c8.ttft_s, Some(2.1));
        assert_eq!((f.runs[0].tg_req, f.runs[2].depth), (None, 4096));
        assert_eq!(test_name("ctx_tg @ d4096 (c2)"), Some(("tg", 0, 4096, 2, true)));
        assert!(!looks_like("| model | size | params | backend | test | t/s |\n"));
    }

    #[test]
    fn a_json_report_reads_its_runs_and_takes_the_latency_off_the_ttft() {
        let json = r#"{"version": "0.3.5", "timestamp": "2026-03-22", "latency_mode": "api", "latency_ms": 50.0, "model": "openai/gpt-oss-120b",
            "prefix_caching_enabled": true, "max_concurrency": 8, "benchmarks": [
            {"concurrency": 8, "context_size": 0, "prompt_size": 1024, "response_size": 128, "is_context_prefill_phase": false,
             "pp_throughput": {"mean": 4000.0, "std": 1.0, "values": []}, "tg_throughput": {"mean": 150.0, "std": 1.0, "values": []},
             "tg_req_throughput": {"mean": 19.0, "std": 0.1, "values": []}, "e2e_ttft": {"mean": 2100.0, "std": 1.0, "values": []}}]}"#;
        assert!(looks_like(json));
        let f = parse(json).unwrap();
        assert_eq!(f.version.as_deref(), Some("0.3.5"));
        let r = &f.runs[0];
        assert_eq!((r.pp, r.tg, r.tg_req), (Some(4000.0), Some(150.0), Some(19.0)));
        assert!((r.ttft_s.unwrap() - 2.05).abs() < 1e-12, "{:?}", r.ttft_s);
    }

    #[test]
    fn each_run_becomes_rows_read_as_the_tool_computes_them() {
        let f = parse(MD).unwrap();
        let labels =
            Labels { node: "dgx-spark", model: None, quant: None, engine: Some("vllm"), nodes: 1, parallelism: None, fabric: None };
        let (rows, skipped) = to_rows(&f, &labels, "lb", "out.md").unwrap();
        let got: Vec<(&str, &str, f64)> = rows.iter().map(|r| (r.metric.as_str(), r.concurrency.as_str(), r.value)).collect();
        assert_eq!(
            got,
            [
                ("prefill_tokens_per_s", "1", 3000.0),
                ("aggregate_decode_tokens_per_s", "1", 57.5),
                ("ttft_s", "1", 0.4),
                ("prefill_tokens_per_s", "8", 4000.0),
                ("aggregate_decode_tokens_per_s", "8", 150.0),
                ("decode_tokens_per_s", "8", 19.0),
                ("ttft_s", "8", 2.1)
            ]
        );
        assert!(rows.iter().all(|r| r.quant == "mxfp4" && r.notes.contains("llama-benchy") && r.notes.contains("tg128")));
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].1.contains("filled context"), "{skipped:?}");
        let no_engine = Labels { engine: None, ..labels };
        assert!(to_rows(&f, &no_engine, "lb", "x").unwrap_err().contains("--engine"));
    }
}
