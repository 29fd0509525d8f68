//! Serving benchmark results as measurement rows, so vLLM and SGLang users calibrate from what
//! they already run (issue 22).
//!
//! Two result files, their keys read from the tools' sources:
//! - `vllm bench serve --save-result` (vLLM 0.11 `vllm/benchmarks/serve.py`): one JSON object
//!   per run with `model_id`, `num_prompts`, `max_concurrency`, `request_rate`, `backend`,
//!   `completed`, `total_input_tokens`, `total_output_tokens`, `request_throughput`,
//!   `output_throughput`, and per latency `mean_/median_/p99_{ttft,tpot}_ms` (the percentiles
//!   `--metric-percentiles` asks for; 99 by default).
//! - SGLang `python -m sglang.bench_serving` (sglang 0.5.3 `sglang/bench_serving.py`): one JSON
//!   line per run appended to its output file, with the same result keys but no model id and no
//!   prompt count (`--model` names the model here).
//!
//! Both define TPOT as `(latency - TTFT) / (output_len - 1)` per request and output throughput as
//! every request's output tokens over the run's duration. `backend` is the server API the client
//! spoke, which names the engine (`vllm`, `openai`, `openai-chat`: vLLM; `sglang*`: SGLang;
//! `tensorrt-llm` / `trt`: TensorRT-LLM); `--engine` says otherwise. A run paced by a request
//! rate (open arrivals) is skipped: `validate` replays closed loops of `max_concurrency` users.
//!
//! Each run becomes one row per metric it has: `requests_per_s`, `aggregate_decode_tokens_per_s`,
//! `ttft_s`, `ttft_p50_s`, `ttft_p99_s`, `tpot_ms`, `tpot_p50_ms`, `tpot_p99_ms`, `itl_p50_ms`,
//! `itl_p99_ms`, and where it has them `total_tokens_per_s`, `e2e_mean_s`, `e2e_p50_s`,
//! `e2e_p99_s`, with the mean prompt as the prompt column and the mean output and the prompt
//! count in the notes.

use serde_json::Value;

use crate::calibrate::validate::MeasurementRow;
use crate::catalog::catalog;
use crate::llm::QuantFamily;

/// A run that became no row: (what, why).
pub type Skipped = (String, String);

/// Which benchmark client wrote a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `vllm bench serve`.
    Vllm,
    /// SGLang's `bench_serving`.
    Sglang,
}

impl Tool {
    fn label(self) -> &'static str {
        match self {
            Self::Vllm => "vllm bench serve",
            Self::Sglang => "sglang bench_serving",
        }
    }
}

/// One serving benchmark run.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeRun {
    /// The client that wrote it.
    pub tool: Tool,
    /// The server API it spoke (`backend`).
    pub backend: String,
    /// The model's repo id (vLLM only).
    pub model_id: Option<String>,
    /// Requests in flight at most (`max_concurrency`; none: every prompt at once).
    pub max_concurrency: Option<u64>,
    /// Requests per second the client paced them at (none: as fast as allowed).
    pub request_rate: Option<f64>,
    /// Prompts sent (vLLM's `num_prompts`, else `completed`).
    pub prompts: u64,
    /// Requests completed.
    pub completed: u64,
    /// Prompt tokens of all requests.
    pub input_tokens: u64,
    /// Output tokens of all requests.
    pub output_tokens: u64,
    /// The metrics it reports, as `validate` names them, in `validate`'s units.
    pub metrics: Vec<(&'static str, f64)>,
}

/// The result keys read, each with the metric it is and the factor to that metric's unit.
const METRIC_KEYS: [(&str, &str, f64); 17] = [
    ("request_throughput", "requests_per_s", 1.0),
    ("output_throughput", "aggregate_decode_tokens_per_s", 1.0),
    ("mean_ttft_ms", "ttft_s", 1e-3),
    ("median_ttft_ms", "ttft_p50_s", 1e-3),
    ("p99_ttft_ms", "ttft_p99_s", 1e-3),
    ("mean_tpot_ms", "tpot_ms", 1.0),
    ("median_tpot_ms", "tpot_p50_ms", 1.0),
    ("p99_tpot_ms", "tpot_p99_ms", 1.0),
    ("median_itl_ms", "itl_p50_ms", 1.0),
    ("p99_itl_ms", "itl_p99_ms", 1.0),
    // vLLM's total (prompt + output) token rate; its E2E latency lines (printed when
    // `--percentile-metrics` names e2el), and SGLang's (always).
    ("total_token_throughput", "total_tokens_per_s", 1.0),
    ("mean_e2el_ms", "e2e_mean_s", 1e-3),
    ("median_e2el_ms", "e2e_p50_s", 1e-3),
    ("p99_e2el_ms", "e2e_p99_s", 1e-3),
    ("mean_e2e_latency_ms", "e2e_mean_s", 1e-3),
    ("median_e2e_latency_ms", "e2e_p50_s", 1e-3),
    ("p99_e2e_latency_ms", "e2e_p99_s", 1e-3),
];

/// Whether a text looks like a serving benchmark's result (JSON or JSON lines with
/// `request_throughput` and `total_input_tokens`).
pub fn looks_like(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"request_throughput\"") && text.contains("\"total_input_tokens\"")
}

fn uint(run: &Value, key: &str, i: usize) -> Result<u64, String> {
    let v = run.get(key).ok_or_else(|| format!("run {i}: missing `{key}`"))?;
    v.as_u64().ok_or_else(|| format!("run {i}: `{key}` must be a non-negative integer, not {v}"))
}

/// Parses a result file: one JSON object (vLLM), or JSON lines (SGLang appends one per run);
/// errors name the run (0-based) and the key.
pub fn parse(text: &str) -> Result<Vec<ServeRun>, String> {
    let text = &python_json(text);
    let docs: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: not JSON: {e}", i + 1)))
            .collect::<Result<_, _>>()?,
    };
    let mut out = Vec::with_capacity(docs.len());
    for (i, run) in docs.iter().enumerate() {
        if !run.is_object() {
            return Err(format!("run {i}: expected a JSON object of one benchmark run"));
        }
        let tool = if run.get("model_id").is_some() || run.get("num_prompts").is_some() { Tool::Vllm } else { Tool::Sglang };
        let completed = uint(run, "completed", i)?;
        let rate = match run.get("request_rate") {
            Some(Value::Number(n)) => n.as_f64().filter(|r| r.is_finite() && *r > 0.0),
            // vLLM writes `inf` as the string "inf"; SGLang the float.
            _ => None,
        };
        let mut metrics = Vec::new();
        for (key, metric, factor) in METRIC_KEYS {
            if let Some(v) = run.get(key).and_then(Value::as_f64).filter(|v| v.is_finite() && *v > 0.0) {
                metrics.push((metric, v * factor));
            }
        }
        out.push(ServeRun {
            tool,
            backend: run.get("backend").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase(),
            model_id: run.get("model_id").and_then(Value::as_str).map(String::from),
            max_concurrency: run.get("max_concurrency").and_then(Value::as_u64).filter(|c| *c > 0),
            request_rate: rate,
            prompts: run.get("num_prompts").and_then(Value::as_u64).unwrap_or(completed),
            completed,
            input_tokens: uint(run, "total_input_tokens", i)?,
            output_tokens: run.get("total_output_tokens").and_then(Value::as_u64).unwrap_or(0),
            metrics,
        });
    }
    if out.is_empty() {
        return Err("the file holds no benchmark runs".into());
    }
    Ok(out)
}

/// JSON as Python's `json.dumps` writes it, made standard: its bare `Infinity`, `-Infinity` and
/// `NaN` (SGLang's `request_rate` of an unpaced run is `Infinity`) read as `null`, outside
/// strings only.
fn python_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = ["-Infinity", "Infinity", "NaN"].iter().find(|w| rest.starts_with(**w)) {
            out.push_str("null");
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The engine a run's `backend` names, as `validate` reads engines.
fn engine_of(backend: &str) -> Option<&'static str> {
    match backend {
        "vllm" | "vllm-chat" | "openai" | "openai-chat" => Some("vllm"),
        b if b.starts_with("sglang") => Some("sglang"),
        "tensorrt-llm" | "trt" => Some("trtllm"),
        "llama.cpp" => Some("llama-cpp"),
        _ => None,
    }
}

/// Models released in one format already, so a repo id without a format suffix names it:
/// gpt-oss ships its experts in MXFP4 (FACTS.md, gpt-oss as users run it).
const NATIVE_RELEASES: &[(&str, &str)] = &[("gpt-oss-120b", "mxfp4"), ("gpt-oss-20b", "mxfp4")];

/// The quantization of a repo id (its format suffix, `-FP8`, `-NVFP4`, `-AWQ`), else of the
/// model's native release.
pub(crate) fn quant_of(model_id: &str) -> Option<String> {
    let cat = catalog();
    if let Ok(q) = cat.find_quant(model_id, QuantFamily::Hf) {
        return Some(q.id);
    }
    let (preset, _) = cat.find_model(model_id).ok()?;
    NATIVE_RELEASES.iter().find(|(m, _)| *m == preset.id).map(|(_, q)| q.to_string())
}

/// What a run's rows are about, the caller's flags applied.
pub struct Labels<'a> {
    /// The catalog node it ran on (the files record no hardware).
    pub node: &'a str,
    /// The model (`--model`), else the run's `model_id`.
    pub model: Option<&'a str>,
    /// The quantization (`--quant`), else the model id's format.
    pub quant: Option<&'a str>,
    /// The engine (`--engine`), else the run's `backend`.
    pub engine: Option<&'a str>,
    /// The nodes the server spanned (`--nodes`; the files record none): 1 unless given.
    pub nodes: u64,
    /// How it split the model over them (`--parallelism`, as `validate` reads the column: `TP=2`,
    /// `tensor`, `pipeline`, `TP2 PP2`); `none` on one node.
    pub parallelism: Option<&'a str>,
    /// The link between them (`--fabric`; default: the machines' own, e.g. the Sparks'
    /// ConnectX-7).
    pub fabric: Option<&'a str>,
}

impl Labels<'_> {
    /// A row of a run on these labels' cluster, for `model` at `quant` on `engine` split as
    /// `split` over link `link` (as [`cluster_columns`] gives them); the measurement's own
    /// columns (id, lengths, metric, value, source, notes) are left for the caller to fill.
    pub(crate) fn row(&self, model: &str, quant: &str, engine: &str, (split, link): (&str, &str)) -> MeasurementRow {
        MeasurementRow {
            id: String::new(),
            system: self.node.to_string(),
            nodes: self.nodes.to_string(),
            node_mix: String::new(),
            model: model.to_string(),
            quant: quant.to_string(),
            engine: engine.to_string(),
            parallelism: split.to_string(),
            fabric: link.to_string(),
            prompt_tokens: String::new(),
            concurrency: String::new(),
            metric: String::new(),
            value: 0.0,
            unit: String::new(),
            source: String::new(),
            notes: String::new(),
            metric_read_as: None,
        }
    }
}

/// A run's model, quantization and engine (the flags first, then what the file says), or why
/// it cannot become rows: paced by a request rate (open arrivals), nothing completed, or a label
/// neither gives.
fn run_labels(r: &ServeRun, labels: &Labels<'_>) -> Result<(String, String, String), String> {
    if let Some(rate) = r.request_rate {
        return Err(format!(
            "paced at {rate} requests/s (open arrivals): `validate` replays closed loops; run with --request-rate inf and --max-concurrency"
        ));
    }
    if r.completed == 0 {
        return Err("no request completed".to_string());
    }
    let model = labels.model.map(String::from).or_else(|| r.model_id.clone()).ok_or("the file names no model: pass --model")?;
    let quant = match labels.quant {
        Some(q) => q.to_string(),
        None => quant_of(&model).ok_or_else(|| format!("model `{model}` names no format (-FP8, -NVFP4, -AWQ): pass --quant"))?,
    };
    let engine = match labels.engine {
        Some(e) => e.to_string(),
        None => engine_of(&r.backend)
            .ok_or_else(|| format!("backend `{}` names no engine the twin runs: pass --engine", r.backend))?
            .to_string(),
    };
    Ok((model, quant, engine))
}

/// Turns runs into measurement rows. Ids are `{stem}-{n}-{metric}`; runs that cannot be read as
/// a closed loop, or whose model, format or engine is not known, are returned as (what, why).
pub fn to_rows(runs: &[ServeRun], labels: &Labels<'_>, stem: &str, source: &str) -> Result<(Vec<MeasurementRow>, Vec<Skipped>), String> {
    let (split, link) = cluster_columns(labels.node, labels.nodes, labels.parallelism, labels.fabric)?;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (n, r) in runs.iter().enumerate() {
        let what = format!("run {} ({}, backend `{}`)", n + 1, r.tool.label(), r.backend);
        let (model, quant, engine) = match run_labels(r, labels) {
            Ok(x) => x,
            Err(why) => {
                skipped.push((what, why));
                continue;
            }
        };
        let concurrency = r.max_concurrency.unwrap_or(r.prompts).min(r.prompts).max(1);
        let prompt = (r.input_tokens as f64 / r.completed as f64).round() as u64;
        let output = (r.output_tokens as f64 / r.completed as f64).round() as u64;
        let base = labels.row(&model, &quant, &engine, (&split, &link));
        for (metric, value) in &r.metrics {
            let unit = match *metric {
                "requests_per_s" => "req/s",
                "aggregate_decode_tokens_per_s" | "total_tokens_per_s" => "tok/s",
                m if m.ends_with("_s") => "s",
                _ => "ms",
            };
            rows.push(MeasurementRow {
                id: format!("{stem}-{}-{metric}", n + 1),
                prompt_tokens: prompt.to_string(),
                concurrency: concurrency.to_string(),
                metric: (*metric).into(),
                value: crate::util::sig(*value),
                unit: unit.into(),
                source: format!("{} {source}", r.tool.label()),
                notes: format!(
                    "{} prompts, {output} generated tokens per request (mean), max concurrency {concurrency}; backend {}",
                    r.prompts, r.backend
                ),
                ..base.clone()
            });
        }
    }
    Ok((rows, skipped))
}

/// The parallelism and fabric columns of rows from a benchmark that records no cluster: `none`
/// on one node, the `--parallelism` given on several (required), the `--fabric` given or empty
/// (`validate` then takes the machines' own link and says so). Errors: an unknown node, no
/// nodes, several nodes without a split.
pub(crate) fn cluster_columns(node: &str, nodes: u64, parallelism: Option<&str>, fabric: Option<&str>) -> Result<(String, String), String> {
    let cat = catalog();
    if cat.node(node).is_none() {
        let hint = crate::util::did_you_mean(node, &cat.node_ids()).map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
        return Err(format!("unknown node `{node}`{hint}; `supernode catalog nodes` lists them"));
    }
    let split = match (nodes, parallelism) {
        (0, _) => return Err("--nodes must be at least 1".into()),
        (1, None) => "none".to_string(),
        (1, Some(p)) => p.to_string(),
        (n, None) => return Err(format!("{n} nodes: say how the model was split over them (--parallelism, e.g. TP={n})")),
        (_, Some(p)) => p.to_string(),
    };
    let link = match (nodes, fabric) {
        (1, _) => "none".to_string(),
        (_, Some(f)) => f.to_string(),
        (_, None) => String::new(),
    };
    Ok((split, link))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's non-standard numbers read as null, never inside a string.
    #[test]
    fn python_infinities_read_as_null() {
        assert_eq!(
            python_json(r#"{"a": Infinity, "b": -Infinity, "c": NaN, "d": "NaN \" Infinity"}"#),
            r#"{"a": null, "b": null, "c": null, "d": "NaN \" Infinity"}"#
        );
    }

    /// Formats by repo suffix, native releases, and none.
    #[test]
    fn a_repo_id_names_its_format_or_its_native_release() {
        assert_eq!(quant_of("RedHatAI/Llama-3.1-8B-Instruct-FP8").as_deref(), Some("fp8"));
        assert_eq!(quant_of("openai/gpt-oss-120b").as_deref(), Some("mxfp4"));
        assert_eq!(quant_of("meta-llama/Llama-3.1-8B-Instruct"), None);
    }

    /// The backends each client names, read as engines.
    #[test]
    fn backends_name_engines() {
        for (b, e) in
            [("openai-chat", Some("vllm")), ("vllm", Some("vllm")), ("sglang-oai", Some("sglang")), ("trt", Some("trtllm")), ("tgi", None)]
        {
            assert_eq!(engine_of(b), e, "{b}");
        }
    }
}
