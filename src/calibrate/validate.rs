//! Validation against published measurements: each row of a measurement CSV (the format of
//! `shared/data/measurements.csv`) becomes a scenario, goes through the same estimator as
//! `run`, and is compared with the measured value. Rows that cannot be predicted are listed with
//! the reason.
//!
//! Power rows say their phase in the metric name: `node_power_w` / `cluster_power_w` are the
//! peak a wall meter shows during the benchmark (the larger of the run's prefill and decode
//! powers; for HPL its one phase); `node_power_w_decode` / `cluster_power_w_decode` (and
//! `_prefill`) are that phase's average. A power row without a prompt length takes the longest
//! prompt of its sibling rows (same system, node mix, model, quant, engine and source, e.g.
//! llama-bench's pp512/pp4096 beside a "peak during the benchmark" row): the benchmark ran it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::names::QuantNameError;
use crate::engine::runtimes::{self, EngineRuntime};
use crate::engine::{EngineKind, Parallelism};
use crate::estimate::estimate;
use crate::llm::QuantFamily;
use crate::profile::Profile;
use crate::scenario::{self, ScenarioBuilder};
use crate::util::round3;

/// One row of a measurement CSV.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct MeasurementRow {
    /// Row id.
    pub id: String,
    /// System family, e.g. `mac-studio-m3-ultra`.
    pub system: String,
    /// Node count.
    pub nodes: String,
    /// Node memory mix, e.g. `512gb` or `2x512gb+2x256gb`.
    pub node_mix: String,
    /// Model id.
    pub model: String,
    /// Quantization (free text, may say "unknown" or "(inferred)").
    pub quant: String,
    /// Engine.
    pub engine: String,
    /// Parallelism.
    pub parallelism: String,
    /// Fabric (free text).
    pub fabric: String,
    /// Prompt tokens, if known.
    pub prompt_tokens: String,
    /// Concurrent requests of a serving measurement (empty or 1 for a single stream; the
    /// column may be absent in older files).
    #[serde(default)]
    pub concurrency: String,
    /// Metric name.
    pub metric: String,
    /// Measured value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Source.
    pub source: String,
    /// Notes.
    #[serde(default)]
    pub notes: String,
    /// How the row's metric was read, when it was written otherwise (`ttft_ms` as `ttft_s`, its
    /// value converted): said in the row's assumptions. Not a CSV column.
    #[serde(skip)]
    pub metric_read_as: Option<String>,
}

/// A predicted row.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ValidatedRow {
    /// Row id.
    pub id: String,
    /// Metric.
    pub metric: String,
    /// Measured value.
    pub measured: f64,
    /// Predicted value.
    pub predicted: f64,
    /// Signed error, percent of measured.
    pub error_percent: f64,
    /// Assumptions made to turn the row into a scenario.
    pub assumptions: Vec<String>,
    /// 5th percentile of the prediction (cross-validation reports), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p5: Option<f64>,
    /// 95th percentile of the prediction (cross-validation reports), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95: Option<f64>,
}

/// A row that was not predicted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SkippedRow {
    /// Row id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// The validation report.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    /// Mean absolute percentage error over all predicted rows.
    pub mape_percent: f64,
    /// Mean absolute percentage error over decode-throughput rows.
    pub decode_mape_percent: f64,
    /// Predicted rows.
    pub rows: Vec<ValidatedRow>,
    /// Skipped rows.
    pub skipped: Vec<SkippedRow>,
}

/// Errors reading measurements.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// I/O.
    #[error("cannot read {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// CSV format.
    #[error("{path}: {message}")]
    Csv {
        /// Path.
        path: String,
        /// Message (with line).
        message: String,
    },
}

/// Reads a measurement CSV.
pub fn read_csv(path: &Path) -> Result<Vec<MeasurementRow>, ValidateError> {
    let text = crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES)
        .map_err(|source| ValidateError::Io { path: path.display().to_string(), source })?;
    parse_csv(&text, &path.display().to_string())
}

/// Parses measurement CSV text.
pub fn parse_csv(text: &str, name: &str) -> Result<Vec<MeasurementRow>, ValidateError> {
    let mut rdr = csv::ReaderBuilder::new().flexible(false).from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for r in rdr.deserialize::<MeasurementRow>() {
        let row = r.map_err(|e| ValidateError::Csv { path: name.to_string(), message: e.to_string() })?;
        if !row.value.is_finite() {
            return Err(ValidateError::Csv { path: name.to_string(), message: format!("row {}: value is not a finite number", row.id) });
        }
        rows.push(canonical_metric(row));
    }
    Ok(rows)
}

/// Metrics people write for the ones `validate` predicts: the names, then the metric.
const METRIC_ALIASES: &[(&[&str], &str)] = &[
    (
        &["ttft", "ttft_ms", "time_to_first_token", "time_to_first_token_s", "time_to_first_token_ms", "mean_ttft_ms", "mean_ttft_s"],
        "ttft_s",
    ),
    (&["tpot", "tpot_s", "time_per_output_token_ms", "itl", "itl_ms", "inter_token_latency_ms", "mean_tpot_ms", "mean_itl_ms"], "tpot_ms"),
    // The serving benchmarks' percentile lines (`Median TTFT (ms)`, `P99 TPOT (ms)`, `Median ITL
    // (ms)`: ITL percentiles are of single inter-token gaps, not of a request's mean) and request
    // rate (`Request throughput (req/s)`).
    (&["median_ttft_ms", "median_ttft_s", "p50_ttft_ms", "ttft_p50", "ttft_p50_ms", "ttft_median_ms"], "ttft_p50_s"),
    (&["p99_ttft_ms", "p99_ttft_s", "ttft_p99", "ttft_p99_ms"], "ttft_p99_s"),
    (&["median_tpot_ms", "p50_tpot_ms", "tpot_p50", "tpot_median_ms"], "tpot_p50_ms"),
    (&["p99_tpot_ms", "tpot_p99"], "tpot_p99_ms"),
    (&["median_itl_ms", "p50_itl_ms", "itl_p50", "itl_median_ms"], "itl_p50_ms"),
    (&["p99_itl_ms", "itl_p99"], "itl_p99_ms"),
    (&["request_throughput", "request_throughput_req_s", "req_per_s", "requests_per_second", "req_s"], "requests_per_s"),
    // ollama's `--verbose` lines (`prompt eval rate`, `eval rate`), llama-server's timings
    // (`prompt_per_second`, `predicted_per_second`), mlx_lm.generate's `tokens-per-sec`.
    (
        &[
            "pp_tokens_per_s",
            "prompt_tokens_per_s",
            "prompt_eval_tokens_per_s",
            "prefill_tps",
            "pp_tps",
            "prompt_eval_rate",
            "prompt_per_second",
            "prompt_tokens_per_sec",
        ],
        "prefill_tokens_per_s",
    ),
    (
        &[
            "tg_tokens_per_s",
            "eval_tokens_per_s",
            "generation_tokens_per_s",
            "decode_tps",
            "tg_tps",
            "generation_tps",
            "eval_rate",
            "predicted_per_second",
            "generation_tokens_per_sec",
        ],
        "decode_tokens_per_s",
    ),
    // `vllm bench serve` / SGLang's `bench_serving` "Output token throughput": every request's
    // output tokens over the benchmark's duration, the serving run's aggregate rate.
    (
        &["output_tokens_per_s", "output_token_throughput", "output_token_throughput_tok_s", "output_throughput", "output_tok_per_s"],
        "aggregate_decode_tokens_per_s",
    ),
    // Their "Total Token throughput" (vLLM) / total throughput (SGLang): prompt and output
    // tokens of every request over the duration.
    (
        &["total_token_throughput", "total_token_throughput_tok_s", "total_tokens_per_s", "total_throughput", "total_tok_per_s"],
        "total_tokens_per_s",
    ),
    // Their end-to-end latency lines (`Mean E2EL (ms)`, `Median E2E Latency (ms)`): arrival to
    // a request's last token.
    (
        &[
            "mean_e2el_ms",
            "e2el_ms",
            "e2el",
            "mean_e2e_latency_ms",
            "e2e_latency_ms",
            "e2e_latency_s",
            "e2e_latency",
            "mean_e2e_latency_s",
            "e2e_s",
        ],
        "e2e_mean_s",
    ),
    (&["median_e2el_ms", "p50_e2el_ms", "e2el_p50", "median_e2e_latency_ms", "e2e_p50", "e2e_latency_p50_s"], "e2e_p50_s"),
    (&["p99_e2el_ms", "e2el_p99", "p99_e2e_latency_ms", "e2e_p99", "e2e_latency_p99_s"], "e2e_p99_s"),
    // Energy per generated token (`J/tok`, the twin's `energy_j_per_token`); tokens per joule are
    // read as its inverse ([`TOKENS_PER_JOULE`]).
    (
        &["energy_per_token_j", "joules_per_token", "j_per_token", "j_per_tok", "j_tok", "energy_per_token", "energy_j_per_tok"],
        "energy_j_per_token",
    ),
    // The memory a run holds on its busiest node (mlx_lm's `Peak memory`): its weights and KV
    // cache (`run`'s `memory` entries), without the runtime allowance `run` adds for fitting.
    (&["peak_memory_gb", "peak_memory", "peak_mem_gb", "memory", "memory_used_gb", "mem_gb"], "memory_gb"),
    // Wall power by phase, of the whole system measured (one box: the box).
    (&["decode_power_w", "power_decode_w", "decode_power", "avg_decode_power_w", "decode_w"], "cluster_power_w_decode"),
    (&["prefill_power_w", "power_prefill_w", "prefill_power", "avg_prefill_power_w", "prefill_w"], "cluster_power_w_prefill"),
];

/// Rates written without their phase; the row's notes say which ([`notes_phase`]).
const PHASE_LESS_RATES: &[&str] = &["tokens_per_second", "tokens_per_s", "tokens_per_sec", "tok_s", "t_s", "tps", "tok_per_s", "speed"];

/// The phase a row's notes name for a rate without one: the first llama-bench test they name
/// (`tg128` decode, `pp512` prefill), else the words `generation`/`decode`/`eval rate` or
/// `prompt processing`/`prefill`, when only one of the two kinds appears.
fn notes_phase(row: &MeasurementRow) -> Option<&'static str> {
    match first_test(row) {
        Some((0, g, _)) if g > 0 => return Some("decode_tokens_per_s"),
        Some((p, 0, _)) if p > 0 => return Some("prefill_tokens_per_s"),
        _ => {}
    }
    let notes = row.notes.to_lowercase();
    let prefill = ["prompt processing", "prefill", "prompt eval"].iter().any(|w| notes.contains(w));
    // ollama's `eval rate` is the decode rate; its `prompt eval rate` the prefill one.
    let without_prompt_eval = notes.replace("prompt eval", "");
    let decode = ["generation", "decode", "eval rate"].iter().any(|w| without_prompt_eval.contains(w));
    match (decode, prefill) {
        (true, false) => Some("decode_tokens_per_s"),
        (false, true) => Some("prefill_tokens_per_s"),
        _ => None,
    }
}

/// Metrics written as tokens per joule, which `validate` reads as their inverse, joules per
/// token (`energy_j_per_token`).
const TOKENS_PER_JOULE: &[&str] = &["tokens_per_joule", "tokens_per_j", "tok_per_j", "tok_j", "tokens_per_joule_decode"];

/// A metric written as llama-bench's own test name (`pp512`, `tg128`, `pp2048 @ d32768`, `tg32
/// @ d4096`; its table's `test` column): the rate that test reports, with the test carried into
/// the row's notes (where its generated tokens and depth are read) and its tokens into an empty
/// prompt column (a prefill test's timed tokens; a decode test's depth). `None` for any other
/// metric, or `pp+tg` (llama-bench's combined rate, not a phase's).
fn llama_bench_test_metric(row: &mut MeasurementRow) -> Option<&'static str> {
    let written = row.metric.trim().to_lowercase();
    let (p, g, d) = parse_test(&written)?;
    let (metric, prompt) = match (p, g) {
        (p, 0) if p > 0 => ("prefill_tokens_per_s", p),
        (0, g) if g > 0 => ("decode_tokens_per_s", d),
        _ => return None,
    };
    row.notes = format!("{} llama-bench {written}", row.notes).trim().to_string();
    if row.prompt_tokens.trim().is_empty() && prompt > 0 {
        row.prompt_tokens = prompt.to_string();
    }
    Some(metric)
}

/// Seconds in one of a time unit as a row writes it (its unit column, else its metric name's
/// `_ms` / `_s` suffix); `None` when neither says.
fn time_unit_s(unit: &str, metric: &str) -> Option<f64> {
    match unit.trim().to_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => Some(1.0),
        "ms" | "msec" | "millisecond" | "milliseconds" => Some(1e-3),
        _ if metric.ends_with("_ms") => Some(1e-3),
        _ if metric.ends_with("_s") => Some(1.0),
        _ => None,
    }
}

/// The factor from a row's unit to the unit of `energy_j_per_token` (J/tok) or `memory_gb`
/// (GB); `None` for another metric or a unit not known.
fn other_unit_factor(metric: &str, unit: &str) -> Option<f64> {
    let unit = unit.trim().to_lowercase().replace(' ', "").replace("/token", "/tok").replace("/1mtok", "/mtok");
    match (metric, unit.as_str()) {
        ("energy_j_per_token", "j/tok" | "j" | "") => Some(1.0),
        ("energy_j_per_token", "mj/tok") => Some(1e-3),
        ("energy_j_per_token", "wh/mtok") => Some(3600.0 / 1e6),
        ("energy_j_per_token", "kwh/mtok") => Some(3.6),
        ("memory_gb", "gb" | "") => Some(1.0),
        ("memory_gb", "gib") => Some(1.073_741_824),
        ("memory_gb", "mb") => Some(1e-3),
        ("memory_gb", "mib") => Some(1.048_576e-3),
        _ => None,
    }
}

/// Seconds in one of a time-per-token unit (`ms/tok`, `ms/token`, `s per token`); `None` for
/// any other unit.
fn time_per_token_unit_s(unit: &str) -> Option<f64> {
    let unit = unit.trim().to_lowercase().replace(" per ", "/").replace(' ', "");
    let (time, per) = unit.split_once('/')?;
    if !matches!(per, "tok" | "token" | "tokens" | "t") {
        return None;
    }
    time_unit_s(time, "")
}

/// A row with its metric as `validate` predicts it: an alias read as its metric (a time
/// converted to that metric's unit from the row's unit or the alias's suffix; `ITL` read as the
/// mean time per output token), said in [`MeasurementRow::metric_read_as`].
fn canonical_metric(mut row: MeasurementRow) -> MeasurementRow {
    let written = row.metric.trim().to_lowercase();
    let test = llama_bench_test_metric(&mut row);
    // As written, then as the benchmarks print it (`Median TTFT (ms)`, `Request throughput
    // (req/s)`): words joined by `_`.
    let joined = written.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join("_");
    let alias = |name: &str| METRIC_ALIASES.iter().find(|(names, _)| names.contains(&name)).map(|(_, m)| *m);
    if TOKENS_PER_JOULE.contains(&written.as_str()) || TOKENS_PER_JOULE.contains(&joined.as_str()) {
        let value = 1.0 / row.value;
        return read_as(row, "energy_j_per_token", value, "J/tok", ", its inverse");
    }
    let mut metric = test.unwrap_or_else(|| alias(&written).or_else(|| alias(&joined)).unwrap_or(written.as_str()));
    // A rate that names no phase (`tokens_per_second`, `t/s`): the phase the row's notes name.
    let phase_less = PHASE_LESS_RATES.contains(&written.as_str()) || PHASE_LESS_RATES.contains(&joined.as_str());
    if phase_less && let Some(phase) = notes_phase(&row) {
        metric = phase;
    }
    // A rate written in time per token (`decode_tokens_per_s` in `ms/tok`): tokens per second,
    // its inverse.
    if metric.ends_with("tokens_per_s")
        && let Some(per_token_s) = time_per_token_unit_s(&row.unit)
        && row.value > 0.0
    {
        let value = 1.0 / (row.value * per_token_s);
        return read_as(row, metric, value, "tok/s", ", its inverse");
    }
    // Energy and memory written in other units (`mJ/tok`, `Wh/Mtok`; `GiB`, `MB`).
    if let Some(factor) = other_unit_factor(metric, &row.unit) {
        let unit = if metric == "memory_gb" { "GB" } else { "J/tok" };
        if factor != 1.0 || metric != row.metric {
            let value = row.value * factor;
            return read_as(row, metric, value, unit, "");
        }
    }
    // A time metric's unit: seconds of one, and its name.
    let time_unit = match metric {
        "ttft_s" | "ttft_p50_s" | "ttft_p99_s" | "e2e_mean_s" | "e2e_p50_s" | "e2e_p99_s" => Some((1.0, "s")),
        "tpot_ms" | "tpot_p50_ms" | "tpot_p99_ms" | "itl_p50_ms" | "itl_p99_ms" => Some((1e-3, "ms")),
        _ => None,
    };
    let factor = time_unit.and_then(|(t, _)| time_unit_s(&row.unit, &written).map(|u| u / t)).unwrap_or(1.0);
    if metric == row.metric && factor == 1.0 {
        return row;
    }
    let value = row.value * factor;
    let unit = match (time_unit, metric) {
        (Some((_, unit)), _) => unit,
        (None, "requests_per_s") => "req/s",
        _ => row.unit.as_str(),
    }
    .to_string();
    read_as(row, metric, value, &unit, "")
}

/// `row` with its metric read as `metric`, of `value` in `unit`, said in
/// [`MeasurementRow::metric_read_as`] (`how`: what the reading did, e.g. ", its inverse").
fn read_as(mut row: MeasurementRow, metric: &str, value: f64, unit: &str, how: &str) -> MeasurementRow {
    let shown = if value.abs() < 0.01 { crate::util::round6(value) } else { crate::util::round3(value) };
    row.metric_read_as =
        Some(format!("metric `{}` ({} {}) read as {metric}{how} ({shown} {unit})", row.metric.trim(), row.value, row.unit.trim()));
    row.metric = metric.to_string();
    row.value = value;
    row.unit = unit.to_string();
    row
}

fn first_word(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// A free-text field without its annotations: `512gb (assumed)` -> `512gb`, lower-cased.
fn strip_notes(s: &str) -> String {
    s.split('(').next().unwrap_or("").trim().to_lowercase()
}

/// Systems of the measurement CSV that are a family with a memory mix: the node-id prefix a
/// mix entry (`512gb`) completes.
const FAMILIES: &[(&str, &str)] =
    &[("mac-studio-m3-ultra", "m3-ultra-80c-"), ("mac-studio-m2-ultra", "m2-ultra-76c-"), ("mac-studio-m4-max", "m4-max-40c-")];

/// The metrics `validate` predicts.
const METRICS: &str = "decode_tokens_per_s, prefill_tokens_per_s, ttft_s, tpot_ms, node_power_w, cluster_power_w, \
                       node_power_w_decode, cluster_power_w_decode, node_power_w_prefill, cluster_power_w_prefill, \
                       energy_j_per_token, memory_gb, aggregate_decode_tokens_per_s, ttft_p50_s, ttft_p99_s, tpot_p50_ms, tpot_p99_ms, \
                       itl_p50_ms, itl_p99_ms, requests_per_s, total_tokens_per_s, e2e_mean_s, e2e_p50_s, e2e_p99_s";

/// The serving benchmarks' per-request percentiles and request rate (`vllm bench serve`, SGLang's
/// `bench_serving`: median and P99 TTFT and TPOT over the requests, request throughput): always
/// read from a serving run of the row's concurrency (one request when it names none).
const SERVING_METRICS: [&str; 11] = [
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "itl_p50_ms",
    "itl_p99_ms",
    "requests_per_s",
    "total_tokens_per_s",
    "e2e_mean_s",
    "e2e_p50_s",
    "e2e_p99_s",
];

/// The memory size of each node a row's mix lists (`512gb`, `2x512gb+2x256gb`, annotations such
/// as `(assumed)` dropped); `None` when the mix says none (`unknown`).
fn mix_sizes(row: &MeasurementRow, n: usize, assumptions: &mut Vec<String>) -> Result<Option<Vec<String>>, String> {
    let mix = strip_notes(&row.node_mix).replace(' ', "");
    if row.node_mix.contains('(') {
        assumptions.push(format!("node mix `{}` read as `{mix}`", row.node_mix.trim()));
    }
    let list = if !mix.starts_with("unknown") && (mix.contains('+') || mix.contains('x')) {
        let mut list = Vec::new();
        for part in mix.split('+') {
            let (count, size) = part.split_once('x').map_or((Some(1), part), |(c, s)| (c.parse().ok(), s));
            let count = count.ok_or_else(|| format!("node mix `{}`: `{part}` is not COUNTxSIZE (e.g. 2x512gb)", row.node_mix))?;
            list.extend(std::iter::repeat_n(size.to_string(), count));
        }
        list
    } else if mix.ends_with("gb") && !mix.starts_with("unknown") {
        vec![mix; n]
    } else {
        return Ok(None);
    };
    if list.len() != n {
        return Err(format!("node mix `{}` gives {} nodes but `nodes` is {n}: make them agree", row.node_mix, list.len()));
    }
    Ok(Some(list))
}

/// The node preset ids of a row: a catalog node id; a family system with its memory mix; or a
/// prefix of node ids (`macbook-pro-m5-max`, `gmktec-evo-x2`) with the memory the mix says
/// (`128gb`), which must leave one preset per node.
fn row_nodes(row: &MeasurementRow, n: usize, assumptions: &mut Vec<String>) -> Result<Vec<String>, String> {
    if let Some((count, label)) = counted_system(&row.system) {
        if count != n {
            return Err(format!("system `{}` names {count} machines but `nodes` is {n}: make them agree", row.system.trim()));
        }
        return row_nodes(&MeasurementRow { system: label, ..row.clone() }, n, assumptions);
    }
    if let Some(nodes) = named_mix(row, n, assumptions) {
        return nodes;
    }
    let cat = crate::catalog::catalog();
    let system = row.system.trim().to_lowercase();
    if let Some(prefix) = FAMILIES.iter().find(|(f, _)| *f == system).map(|(_, p)| *p) {
        return family_nodes(row, prefix, n, assumptions);
    }
    if cat.node(&system).is_some() {
        return Ok(vec![system; n]);
    }
    let mut candidates: Vec<&crate::hw::NodeSpec> = presets().filter(|x| x.id.starts_with(&format!("{system}-"))).collect();
    if candidates.is_empty() {
        candidates = nodes_by_words(&system);
    }
    // A label whose words more presets' names hold than their ids do (`mac-studio`: every Mac
    // Studio, whose ids mostly start with the chip): all of them, so the row's memory picks
    // among the boxes the label names instead of stretching the one whose id matched.
    let named = presets_named(&system);
    if named.len() > candidates.len() && candidates.iter().all(|c| named.iter().any(|n| n.id == c.id)) {
        candidates = of_named_chip(&name_words(&system), named);
    }
    if candidates.is_empty() {
        let families: Vec<&str> = FAMILIES.iter().map(|(f, _)| *f).collect();
        return Err(format!(
            "system `{system}` has no node preset: write a catalog node id ({}), a unique prefix of one, or one of {}",
            cat.node_ids().join(", "),
            families.join(", ")
        ));
    }
    let ids = |c: &[&crate::hw::NodeSpec]| c.iter().map(|x| x.id.as_str()).collect::<Vec<_>>().join(", ");
    let Some(sizes) = mix_sizes(row, n, assumptions)? else {
        // The memory a system label names (`Mac Studio M3 Ultra 512GB`), else the node mix's.
        if let Some(gb) = label_memory_gb(&system) {
            let named = candidates.clone();
            candidates.retain(|x| x.memory_gb == gb);
            if candidates.is_empty() {
                return match memory_variant(&system, gb, &named, assumptions) {
                    Some(id) => Ok(vec![id?; n]),
                    None => Err(format!("system `{system}`: no node preset of {gb} GB")),
                };
            }
        }
        return match candidates.as_slice() {
            [one] => {
                let mix = row.node_mix.trim();
                let why = if mix.is_empty() { String::new() } else { format!("node mix `{mix}` unknown: ") };
                assumptions.push(format!("{why}`{system}` is only {}", one.id));
                Ok(vec![one.id.clone(); n])
            }
            many => match same_chip_and_memory(&system, many, assumptions) {
                Some(one) => Ok(vec![one; n]),
                None if many.iter().all(|x| x.chip == many[0].chip) => Ok(vec![full_box(&system, many, assumptions); n]),
                None => Err(format!("system `{system}` is ambiguous ({}) and the node mix names no memory size", ids(many))),
            },
        };
    };
    let mut list = Vec::with_capacity(n);
    for size in sizes {
        let gb: Option<f64> = size.strip_suffix("gb").and_then(|g| g.parse().ok());
        let fit: Vec<&crate::hw::NodeSpec> = candidates.iter().copied().filter(|x| gb == Some(x.memory_gb)).collect();
        match fit.as_slice() {
            [one] => list.push(one.id.clone()),
            [] => match gb.and_then(|gb| memory_variant(&system, gb, &candidates, assumptions)) {
                Some(id) => list.push(id?),
                None => return Err(format!("system `{system}` with `{size}`: no node preset of that memory ({})", ids(&candidates))),
            },
            many => match same_chip_and_memory(&system, many, assumptions) {
                Some(one) => list.push(one),
                None => return Err(format!("system `{system}` with `{size}` is ambiguous: {}", ids(many))),
            },
        }
    }
    Ok(list)
}

/// A system label that counts its machines (`2x DGX Spark`, `4 x Mac Studio M3 Ultra`,
/// `DGX Spark x2`, `2× Framework Desktop`): the count and the label without it. A name that
/// merely ends in `x2` (`GMKtec EVO-X2`) counts nothing.
fn counted_system(system: &str) -> Option<(usize, String)> {
    let t = system.trim().replace('×', "x");
    let words: Vec<&str> = t.split_whitespace().collect();
    let count = |c: &str| c.parse::<usize>().ok().filter(|c| *c > 0);
    let is_x = |w: &str| w.eq_ignore_ascii_case("x");
    let joined = |ws: &[&str]| (!ws.is_empty()).then(|| ws.join(" "));
    let before_x = |w: &str| w.strip_suffix(['x', 'X']).and_then(count);
    let after_x = |w: &str| w.strip_prefix(['x', 'X']).and_then(count);
    match words.as_slice() {
        [c, x, rest @ ..] if is_x(x) && count(c).is_some() => Some((count(c)?, joined(rest)?)),
        [cx, rest @ ..] if before_x(cx).is_some() => Some((before_x(cx)?, joined(rest)?)),
        [rest @ .., x, c] if is_x(x) && count(c).is_some() => Some((count(c)?, joined(rest)?)),
        [rest @ .., xc] if after_x(xc).is_some() => Some((after_x(xc)?, joined(rest)?)),
        _ => None,
    }
}

/// The nodes of a mix that names machines rather than sizes (`m4-max 128gb + m5-max 128gb`,
/// `1x mac studio m3 ultra 512gb, 1x macbook pro m4 max 128gb`, in the node mix or, with an
/// empty mix, the system column): each `[COUNTx] LABEL` part read as a system label of its own.
/// `None` for a mix of sizes (`2x512gb+256gb`) or of one part.
fn named_mix(row: &MeasurementRow, n: usize, assumptions: &mut Vec<String>) -> Option<Result<Vec<String>, String>> {
    let source = if row.node_mix.trim().is_empty() { &row.system } else { &row.node_mix };
    let mix = strip_notes(source);
    let parts: Vec<&str> = mix_parts(&mix).into_iter().map(str::trim).filter(|p| !p.is_empty()).collect();
    // A part of sizes as `mix_sizes` reads them (`512gb`, `2x512gb`, `2x 512 GB`).
    let is_size = |part: &str| {
        let p = part.replace(' ', "");
        let counted = p.split_once('x').filter(|(c, _)| !c.is_empty() && c.chars().all(|d| d.is_ascii_digit()));
        let size = counted.map_or(p.as_str(), |(_, size)| size);
        size.strip_suffix("gb").is_some_and(|g| !g.is_empty() && g.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    if parts.len() < 2 || parts.iter().all(|p| is_size(p)) {
        return None;
    }
    let mut nodes = Vec::with_capacity(n);
    for part in &parts {
        // `2x LABEL` as a counted system label reads it, else one machine.
        let (count, label) = counted_system(part).unwrap_or((1, part.to_string()));
        if is_size(part) {
            return Some(Err(format!(
                "node mix `{}`: `{part}` is a size among machine names: write each part as a machine (e.g. `m3-ultra 512gb + m4-max 128gb`)",
                source.trim()
            )));
        }
        let one = MeasurementRow { system: label.clone(), node_mix: String::new(), ..row.clone() };
        match row_nodes(&one, count, assumptions) {
            Ok(ids) => nodes.extend(ids),
            Err(e) => return Some(Err(format!("node mix `{}`, part `{part}`: {e}", source.trim()))),
        }
    }
    if nodes.len() != n {
        return Some(Err(format!("node mix `{}` gives {} nodes but `nodes` is {n}: make them agree", source.trim(), nodes.len())));
    }
    assumptions.push(format!("node mix `{}` read as {}", source.trim(), nodes.join(" + ")));
    Some(Ok(nodes))
}

/// A node-mix label cut at its `,` and `+` separators, except the `+` of AMD's `Max+`
/// (`AMD Ryzen AI Max+ 395` is one machine: the `+` written onto `Max`, as AMD names the chip).
fn mix_parts(mix: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c) in mix.char_indices() {
        let amd_max_plus = c == '+' && mix[..i].to_lowercase().ends_with("max");
        if c == ',' || (c == '+' && !amd_max_plus) {
            parts.push(&mix[start..i]);
            start = i + 1;
        }
    }
    parts.push(&mix[start..]);
    parts
}

/// The split of a row's cluster: `replicas` copies (data parallel by separate servers, 1 when
/// the row names none) of a group of `n / replicas` nodes that runs `split`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RowSplit {
    split: Parallelism,
    replicas: usize,
}

impl RowSplit {
    /// One cluster running `split`.
    fn single(split: Parallelism) -> Self {
        RowSplit { split, replicas: 1 }
    }
}

/// The split a row runs on `n` nodes: none on one node; the engine's default where the row
/// does not say (said in `assumptions`); else [`parallelism_label`]. Data parallel whose
/// instances share the MoE layers is data-parallel attention, not separate servers: where the
/// row says DP attention (SGLang's `--enable-dp-attention`) or `moe_shared` (vLLM's
/// `--data-parallel-size` on an MoE model slices the experts over every rank of every instance,
/// `FusedMoEParallelConfig.make`: "There are 2 engine instances and the tensors are sharded
/// across 2 devices"), DP of one node each, or of a tensor-parallel group each (`DP2 TP2`),
/// reads as [`Parallelism::Data`] (with EP, [`Parallelism::DataExpert`]); DP over pipelines is
/// not modelled.
fn row_parallelism(
    row: &MeasurementRow,
    n: usize,
    engine: &dyn EngineRuntime,
    moe_shared: bool,
    assumptions: &mut Vec<String>,
) -> Result<RowSplit, String> {
    let mut label = row.parallelism.clone();
    let mut stated = strip_notes(&row.parallelism);
    if n > 1 && (stated.is_empty() || stated == "unknown") {
        // The split a column leaves out but the command line gives (`--pipeline-parallel-size 2`).
        if let Some((split, flags)) = command_line_split(&row_text(row)) {
            assumptions.push(format!("parallelism not stated: `{split}`, as the command line says ({flags})"));
            stated = split.clone();
            label = split;
        }
    }
    match n {
        1 => Ok(RowSplit::single(Parallelism::None)),
        _ if stated.is_empty() || stated == "unknown" => {
            let default = engine.default_parallelism(n);
            assumptions.push(format!("parallelism not stated: {}'s default on {n} nodes, {}", engine.id(), default.id()));
            Ok(RowSplit::single(default))
        }
        _ => {
            let split = parallelism_label(&label, n)?;
            let group = n / split.replicas;
            let text = format!("{label}; {}", row_text(row)).to_lowercase();
            // SGLang's `--enable-dp-attention`, TensorRT-LLM's `enable_attention_dp`.
            let dp_attention = ["dp-attention", "dp attention", "dp_attention", "attention_dp", "attention dp", "attention-dp"]
                .iter()
                .any(|w| text.contains(w));
            if matches!(split.split, Parallelism::DataExpert { .. }) || (split.replicas > 1 && (dp_attention || moe_shared)) {
                // Each data-parallel rank a group of `group` nodes: tensor parallel within it
                // (expert parallel: the experts spread over every node), or one node.
                let tensor = group as u32;
                let data = match split.split {
                    Parallelism::DataExpert { .. } => Parallelism::DataExpert { tensor: 1 },
                    Parallelism::None => Parallelism::Data { tensor: 1 },
                    Parallelism::Tensor => Parallelism::Data { tensor },
                    Parallelism::Expert => Parallelism::DataExpert { tensor },
                    other => {
                        return Err(format!(
                            "parallelism `{}`: data-parallel attention over {} groups that share the MoE layers is not modelled (one node or a tensor-parallel group per data-parallel rank is)",
                            stated.trim(),
                            other.id()
                        ));
                    }
                };
                let ranks = data.data_ranks(n);
                assumptions.push(format!(
                    "parallelism `{}` read as data-parallel attention (`{}`) over {ranks} ranks of {} node(s): each rank runs the attention over its own requests, the MoE layers {} over all {n} nodes, forwards in lockstep",
                    stated.trim(),
                    data.id(),
                    data.tensor_ranks(n),
                    if data.spreads_experts() { "spread whole" } else { "sliced" }
                ));
                return Ok(RowSplit::single(data));
            }
            if split.replicas > 1 {
                assumptions.push(format!(
                    "parallelism `{}` read as {} replicas of {group} node(s) ({}) behind a load balancer that spreads the requests evenly",
                    stated.trim(),
                    split.replicas,
                    split.split.id()
                ));
            }
            if let Parallelism::TensorPipeline { stages } = split.split {
                assumptions.push(format!(
                    "parallelism `{}` read as {stages} pipeline stages of {} tensor-parallel ranks",
                    stated.trim(),
                    group / stages as usize
                ));
            }
            Ok(split)
        }
    }
}

/// The split a benchmark's command line sets, as a parallelism label ([`parallelism_label`]
/// reads it), with the flags it came from: vLLM `--tensor-parallel-size` / `-tp`,
/// `--pipeline-parallel-size` / `-pp`, `--data-parallel-size` / `-dp`,
/// `--enable-expert-parallel`; SGLang `--tp`, `--dp`, `--ep-size`; TensorRT-LLM `--tp_size`,
/// `--pp_size`, `--ep_size`. A size of 1 is no split; `None` where the line sets none.
fn command_line_split(text: &str) -> Option<(String, String)> {
    let size = |flags: &[&'static str]| runtimes::positive_flag(text, flags).filter(|&(n, _)| n > 1);
    let tp = size(&["--tensor-parallel-size", "-tp", "--tp-size", "--tp", "--tp_size"]);
    let pp = size(&["--pipeline-parallel-size", "-pp", "--pp-size", "--pp", "--pp_size"]);
    let dp = size(&["--data-parallel-size", "-dp", "--dp-size", "--dp", "--dp_size"]);
    let ep_size = size(&["--ep-size", "--ep_size", "--expert-parallel-size"]);
    let ep = text.contains("--enable-expert-parallel") || ep_size.is_some();
    let mut parts = Vec::new();
    let mut flags = Vec::new();
    for (name, found) in [("DP", dp), ("TP", tp), ("PP", pp)] {
        if let Some((n, flag)) = found {
            parts.push(format!("{name}{n}"));
            flags.push(format!("`{flag} {n}`"));
        }
    }
    if ep {
        flags.push(ep_size.map_or("`--enable-expert-parallel`".to_string(), |(n, f)| format!("`{f} {n}`")));
        match parts.last_mut() {
            Some(last) => last.push_str(" + EP"),
            None => parts.push("EP".into()),
        }
    }
    (!parts.is_empty()).then(|| (parts.join(" "), flags.join(" ")))
}

/// The split a row's parallelism column names, as the twin's (`tensor`, `pipeline`, `expert`,
/// `tensor+pipeline`) and its replicas: the words people write (`tensor parallel`, `TP`,
/// `TP2`, `tp=2`, `PP`, `EP`, `TP+EP`: tensor parallel attention with experts spread across
/// the ranks, the twin's `expert`; `TP2 PP2`, `TP=2 PP=2`: two stages of two tensor-parallel
/// ranks; `DP`, `DP2`, `data parallel`, `replicas`: copies of the model on separate servers,
/// with a split of their own (`DP2 TP2` on four nodes) or one node each). A rank count written
/// with a single split must be the group's node count (one GPU per machine here); with tensor
/// and pipeline together the counts multiply to it (a pipeline without its count takes what
/// the tensor count leaves, two stages when neither says).
fn parallelism_label(raw: &str, n: usize) -> Result<RowSplit, String> {
    // `TP2xPP2`, `dp2xtp2`: an `x` between a count and the next split is a separator.
    let text = strip_notes(raw);
    let bytes = text.as_bytes();
    let text: String = text
        .char_indices()
        .map(|(i, c)| {
            let between = c == 'x' && i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic);
            if between { ' ' } else { c }
        })
        .collect();
    let (mut tensor, mut pipeline, mut expert) = (None::<Option<usize>>, None::<Option<usize>>, None::<Option<usize>>);
    let mut data = None::<Option<usize>>;
    // A count written before its split (`4-way tensor`, `2 replicas`) applies to the next split.
    let mut before = None::<usize>;
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '=')).filter(|w| !w.is_empty()) {
        if let Ok(count) = word.parse::<usize>() {
            before = Some(count);
            continue;
        }
        let head = word.trim_end_matches(|c: char| c.is_ascii_digit() || c == '=');
        let ranks = word[head.len()..].trim_start_matches('=').parse::<usize>().ok().or(before.take());
        let slot = match head {
            "way" | "x" => {
                before = ranks;
                continue;
            }
            "tp" | "tensor" => &mut tensor,
            // llama.cpp's RPC and `-sm layer` split the layers across machines: a pipeline.
            "pp" | "pipeline" | "pipe" | "rpc" | "layer" | "layers" => &mut pipeline,
            "ep" | "expert" | "experts" => &mut expert,
            "dp" | "data" | "replica" | "replicas" => &mut data,
            // `DP attention`, `enable_attention_dp`: words of a data-parallel split
            // ([`row_parallelism`] reads what they mean from the row's text).
            "parallel" | "parallelism" | "split" | "sharding" | "sharded" | "attention" | "attn" | "enable" => continue,
            "none" => return Err(format!("parallelism `none` on {n} nodes: write tensor, pipeline or expert")),
            _ => {
                return Err(format!(
                    "unknown parallelism `{}`: write tensor, pipeline, expert or tensor+pipeline (or TP, PP, EP, TP+EP, TP2 PP2, DP2)",
                    raw.trim()
                ));
            }
        };
        *slot = Some(slot.flatten().or(ranks));
    }
    let Some(data) = data else { return model_split(raw, tensor, pipeline, expert, n).map(RowSplit::single) };
    // Expert parallel beside data parallel spans every rank of every instance (vLLM's
    // `--data-parallel-size N --enable-expert-parallel`: ep_size = dp x tp): data-parallel
    // attention with the experts spread, not separate servers.
    if let (Some(e), None, None) = (expert, tensor, pipeline) {
        return match [data, e].into_iter().flatten().find(|&k| k != n) {
            Some(k) => Err(format!("parallelism `{}` names {k} ranks but the row has {n} nodes: make them agree", raw.trim())),
            None => Ok(RowSplit::single(Parallelism::DataExpert { tensor: 1 })),
        };
    }
    // Nodes per replica: what the replica count leaves, else what the split's counts name,
    // else one (a whole model per node).
    let named = |k: Option<Option<usize>>| k.flatten();
    let group = match data {
        Some(d) if d == 0 || n % d != 0 => {
            return Err(format!("parallelism `{}`: {d} replicas do not divide the row's {n} nodes", raw.trim()));
        }
        Some(d) => n / d,
        None => match (named(tensor), named(pipeline), named(expert)) {
            (Some(t), Some(p), _) => t * p,
            (Some(k), None, _) | (None, Some(k), _) | (None, None, Some(k)) => k,
            (None, None, None) if tensor.is_none() && pipeline.is_none() && expert.is_none() => 1,
            _ => return Err(format!("parallelism `{}`: say how many replicas (DP2) or ranks each has (TP2)", raw.trim())),
        },
    };
    if group == 0 || n % group != 0 {
        return Err(format!("parallelism `{}`: replicas of {group} nodes do not divide the row's {n} nodes", raw.trim()));
    }
    let split = match (tensor, pipeline, expert) {
        (None, None, None) if group == 1 => Parallelism::None,
        (None, None, None) => {
            return Err(format!(
                "parallelism `{}`: {} replicas of {group} nodes: say how each splits (TP, PP or EP)",
                raw.trim(),
                n / group
            ));
        }
        _ if group == 1 => return Err(format!("parallelism `{}`: a split within replicas of one node", raw.trim())),
        _ => model_split(raw, tensor, pipeline, expert, group)?,
    };
    Ok(RowSplit { split, replicas: n / group })
}

/// The model split of a group of `n` nodes from the counts its words named.
fn model_split(
    raw: &str,
    tensor: Option<Option<usize>>,
    pipeline: Option<Option<usize>>,
    expert: Option<Option<usize>>,
    n: usize,
) -> Result<Parallelism, String> {
    let single = |k: Option<usize>| match k {
        Some(k) if k != n => Err(format!("parallelism `{}` names {k} ranks but the row has {n} nodes: make them agree", raw.trim())),
        _ => Ok(()),
    };
    match (tensor, pipeline, expert) {
        (t, None, Some(e)) => {
            single(t.flatten())?;
            single(e).map(|()| Parallelism::Expert)
        }
        (Some(t), None, None) => single(t).map(|()| Parallelism::Tensor),
        (None, Some(p), None) => single(p).map(|()| Parallelism::Pipeline),
        (None, None, None) => Err(format!("no parallelism for {n} nodes: write tensor, pipeline or expert")),
        (Some(t), Some(p), None) => {
            let stages = match (t, p) {
                (Some(t), Some(p)) if t * p != n => {
                    return Err(format!("parallelism `{}` names {t} x {p} ranks but the row has {n} nodes: make them agree", raw.trim()));
                }
                (_, Some(p)) => p,
                (Some(t), None) if t > 0 && n % t == 0 => n / t,
                (Some(t), None) => {
                    return Err(format!("parallelism `{}`: {t} tensor ranks do not divide the row's {n} nodes", raw.trim()));
                }
                (None, None) => Parallelism::DEFAULT_STAGES as usize,
            };
            let split = Parallelism::TensorPipeline { stages: stages as u32 };
            if !crate::engine::split::legal_stages(n).contains(&(stages as u32)) {
                return Err(format!(
                    "parallelism `{}`: {stages} pipeline stages of tensor-parallel groups of at least 2 do not fit {n} nodes",
                    raw.trim()
                ));
            }
            Ok(split)
        }
        _ => Err(format!("parallelism `{}`: pipeline combined with expert parallel is not modelled", raw.trim())),
    }
}

/// Words of a quant label that name a file format, not a quantization (`MLX 4-bit`). `gguf`
/// is not one of them: `gguf 4-bit` is a GGUF row that does not say its type, which
/// [`resolve_quant`] reads from the row's siblings.
/// (`QAT` names how a checkpoint was trained, quantization-aware, not how it is stored: Gemma 3's
/// `QAT 4bit` / `Q4_0 QAT` files are the ordinary format of that width.)
const FORMAT_WORDS: &[&str] = &["mlx", "mlx-community", "hf", "safetensors", "qat"];

/// The quant label of a row, lower case: its first word (`Q4_K_M (unsloth)` -> `q4_k_m`), or,
/// when that word alone is a file format's name (`MLX 4-bit`, `mlx 8bit`), the next word.
fn quant_label(raw: &str) -> String {
    let head = raw.split('(').next().unwrap_or("");
    // llama.cpp's file-type names keep their size word (`Q4_K - Small`): the catalog reads them.
    if crate::catalog::names::llama_cpp_file_type(head).is_some() {
        return head.trim().to_lowercase();
    }
    let first = first_word(head).to_lowercase();
    if !FORMAT_WORDS.contains(&first.as_str()) {
        return first;
    }
    head.split_whitespace().map(str::to_lowercase).find(|w| !FORMAT_WORDS.contains(&w.as_str())).unwrap_or(first)
}

/// The runtime behind one of its own commands, or the name as written: llama.cpp's tools
/// (`llama-server`, `llama-bench`, `llama-batched-bench`), mlx-lm's (`mlx_lm.server`,
/// `mlx_lm.generate`, `mlx_lm.benchmark`), TensorRT-LLM's `trtllm-serve`, and vllm-mlx's
/// benchmark `vllm-mlx-bench`, which times its simple engine (the row's text then reads as the
/// simple mode, `stated_continuous_batching`).
fn runtime_of_command(name: String) -> String {
    match name.as_str() {
        "llamacpp" | "llama-server" | "llama-bench" | "llama-cli" | "llama-batched-bench" => "llama-cpp".into(),
        n if n.starts_with("mlx-lm-") => "mlx-lm".into(),
        "trtllm-serve" => "trtllm".into(),
        "vllm-mlx-bench" => "vllm-mlx".into(),
        _ => name,
    }
}

/// llama.cpp backends people name beside the engine (`llama.cpp (Vulkan)`, `llama-cpp-rocm`).
const BACKENDS: &[&str] = &["vulkan", "rocm", "hip", "cuda", "metal", "cpu"];

/// An engine as rows write it, read as a runtime's measurement name (`llama-cpp`, `mlx-lm`), with
/// what was assumed to read it: case and punctuation (`llama.cpp`, `Llama.CPP`, `mlx_lm`); the
/// llama.cpp tools (`llama-server`, `llama-bench`, `llama-batched-bench`) and its Python bindings
/// (`llama-cpp-python`); a backend in brackets, as a suffix or a second
/// word (`llama.cpp (Vulkan)`, `llama-cpp-rocm`, `llama.cpp vulkan`: Vulkan and ROCm set
/// `engine.backend` on an AMD GPU ([`crate::engine::runtimes::llama_cpp::backend_named`]), other
/// GPU backends run the chip's own kernels, and the note says so; the CPU backend is refused); LM Studio by the file it loads (its MLX engine for MLX files, llama.cpp
/// for GGUF files). Anything else is returned as written, for the runtime lookup to refuse.
fn engine_label(raw: &str, quant: &str) -> Result<(String, Option<String>), String> {
    let text = raw.trim().to_lowercase();
    let (head, bracket) = match text.split_once('(') {
        Some((h, b)) => (h.trim(), Some(b.trim_end_matches(')').trim())),
        None => (text.as_str(), None),
    };
    // Who packaged the runtime, before its name (`NVIDIA vLLM container 25.09`, `NGC SGLang`,
    // `docker llama.cpp`): the runtime is the next word (a label of such words alone keeps its last).
    let all: Vec<&str> = head.split_whitespace().collect();
    let packager = all.iter().take_while(|w| PACKAGER_WORDS.contains(w)).count().min(all.len().saturating_sub(1));
    let mut words = all[packager..].iter().copied();
    let first = words.next().unwrap_or("");
    let mut name = first.replace(['.', '_'], "-");
    let named = |t: &str| t.split(|c: char| !c.is_ascii_alphanumeric()).find(|w| BACKENDS.contains(w)).map(String::from);
    let mut backend = bracket.and_then(named).or_else(|| words.next().and_then(named));
    if let Some((stem, b)) = name.rsplit_once('-').filter(|(_, b)| BACKENDS.contains(b)) {
        backend = Some(b.to_string());
        name = stem.to_string();
    }
    let name = runtime_of_command(name);
    // llama.cpp spanning machines through its RPC backend, written as a word after the name
    // (`llama.cpp rpc`, `llama.cpp (RPC)`).
    let says_rpc = head
        .split_whitespace()
        .skip(1)
        .chain(bracket.into_iter().flat_map(str::split_whitespace))
        .any(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric()) == "rpc");
    if name == "llama-cpp" && says_rpc {
        return Ok(("llama-cpp-rpc".into(), None));
    }
    // Programs that run llama.cpp's kernels under their own name: KoboldCpp builds the llama.cpp
    // it vendors, Lemonade Server, llamafile and Jan run GGUF files on llama.cpp builds; ik_llama.cpp is
    // a fork of it (its own CPU and fused MoE kernels differ; its GPU backends are llama.cpp's,
    // assumed unchanged).
    if let Some(what) = match name.as_str() {
        "koboldcpp" => Some("KoboldCpp runs the llama.cpp it vendors (assumed: its host costs not modelled)"),
        "lemonade" | "lemonade-server" => {
            Some("Lemonade Server runs GGUF files on the llama.cpp builds it ships (assumed: its host costs not modelled)")
        }
        "llamafile" => Some("llamafile runs GGUF files on llama.cpp's GPU kernels (assumed: its own CPU kernels not modelled)"),
        "jan" | "jan-ai" => Some("Jan runs GGUF files on its bundled llama.cpp server (assumed: its host costs not modelled)"),
        "ik-llama-cpp" | "ik-llamacpp" => {
            Some("ik_llama.cpp, a llama.cpp fork, read with llama.cpp's GPU kernels (assumed: its own fused kernels not modelled)")
        }
        _ => None,
    } {
        return Ok(("llama-cpp".into(), Some(format!("engine `{}`: {what}", raw.trim()))));
    }
    // A GPU backend named alone (`vulkan_radv`, `rocm-7.1`, `rocm7-nightlies`, `amdvlk`): the
    // Strix Halo and GB10 benchmark tables name llama.cpp builds by their backend.
    if let Some(b) = bare_backend(&name) {
        let note = format!(
            "engine `{}`: a GPU backend named alone, read as llama.cpp built for it ({b}; Vulkan and ROCm set `engine.backend` on an AMD GPU)",
            raw.trim()
        );
        return Ok(("llama-cpp".into(), Some(note)));
    }
    if name == "llama-cpp-python" {
        // The Python bindings build the llama.cpp they vendor (`vendor/llama.cpp` in their sdist).
        let note =
            format!("engine `{}`: llama.cpp's kernels, which the bindings vendor (assumed: Python host costs not modelled)", raw.trim());
        return Ok(("llama-cpp".into(), Some(note)));
    }
    // LM Studio with its engine in the name (`lmstudio-mlx`, `lm-studio-gguf`) or not.
    let (studio, studio_engine) = ["lmstudio", "lm-studio"]
        .iter()
        .find_map(|p| name.strip_prefix(p).map(|rest| (p.to_string(), rest.trim_start_matches('-'))))
        .unwrap_or((name.clone(), ""));
    // The engine in brackets (`LM Studio (MLX)`) where the name has none.
    const STUDIO_ENGINES: [&str; 4] = ["mlx", "gguf", "llama-cpp", "llamacpp"];
    let studio_engine = match (studio_engine, bracket) {
        ("", Some(b)) => {
            let word = b.split_whitespace().next().unwrap_or("").replace(['.', '_'], "-");
            if STUDIO_ENGINES.contains(&word.as_str()) { word } else { String::new() }
        }
        (e, _) => e.to_string(),
    };
    if matches!(studio.as_str(), "lm" | "lmstudio" | "lm-studio")
        && (studio != "lm" || head.contains("studio"))
        && (studio_engine.is_empty() || STUDIO_ENGINES.contains(&studio_engine.as_str()))
    {
        let mlx = studio_engine == "mlx"
            || (studio_engine.is_empty()
                && crate::catalog::catalog()
                    .find_quant(&quant_label(quant), QuantFamily::Mlx)
                    .ok()
                    .and_then(|q| crate::catalog::catalog().quant(&q.id).map(|spec| spec.family == QuantFamily::Mlx))
                    .unwrap_or(false));
        let (runtime, file) = if mlx {
            ("mlx-lm", "an MLX file: its MLX engine, mlx-lm's kernels")
        } else {
            ("llama-cpp", "a GGUF file: its llama.cpp engine")
        };
        let note = format!("engine `{}`: LM Studio running {file} (assumed: LM Studio's host costs not modelled)", raw.trim());
        return Ok((runtime.into(), Some(note)));
    }
    match backend.as_deref() {
        Some("cpu") => {
            Err(format!("engine `{}`: llama.cpp's CPU backend is not modelled (the twin runs each chip's GPU kernels)", raw.trim()))
        }
        Some(b) if !b.is_empty() => {
            let note = format!(
                "engine `{}`: the twin's {name} kernels for the row's chip ({b}; Vulkan and ROCm set `engine.backend` on an AMD GPU)",
                raw.trim()
            );
            Ok((name, Some(note)))
        }
        _ => Ok((name, None)),
    }
}

/// Words before a runtime's name in an engine label that name who packaged it (NVIDIA's NGC
/// containers, a Docker image), not the runtime.
const PACKAGER_WORDS: &[&str] = &["nvidia", "ngc", "docker", "nvidia's", "official"];

/// The GPU backend a whole engine label names when it names nothing else (`vulkan-radv`,
/// `rocm-7-1`, `rocm7-nightlies`, `radv`, `amdvlk`), as the label's first token without its
/// version digits; `None` for a label that names a runtime (or the CPU backend).
fn bare_backend(name: &str) -> Option<&'static str> {
    let first = name.split('-').next()?.trim_end_matches(|c: char| c.is_ascii_digit());
    match first {
        "radv" | "amdvlk" => Some("vulkan"),
        b => BACKENDS.iter().copied().find(|x| *x == b && *x != "cpu"),
    }
}

/// Words people write for a chip in a system label, and the catalog chip each means.
/// `strix-halo` is AMD's code name of the Ryzen AI Max series (FACTS.md calls the Framework
/// Desktop's chip "Strix Halo"); `ai-max-395` and `ai-max-plus-395` are the chip's marketing
/// name without the brand (`AI Max+ 395`).
const CHIP_WORDS: &[(&str, &str)] = &[
    ("strix-halo", "ryzen-ai-max-395"),
    ("ai-max-plus-395", "ryzen-ai-max-395"),
    ("ai-max-395", "ryzen-ai-max-395"),
    // The chip's GPU (FACTS.md: "Radeon 8060S 40 CU"), as llama.cpp's Vulkan and ROCm device
    // lines name the machine (`AMD Radeon 8060S Graphics (RADV GFX1151)`); gfx1151 is that
    // GPU's LLVM target, which ROCm builds and toolboxes are named by.
    ("radeon-8060s", "ryzen-ai-max-395"),
    ("gfx1151", "ryzen-ai-max-395"),
    ("grace-blackwell", "gb10"),
    // Boxes of these chips that have no preset of their own (FACTS-2026 A3, A4): a row names the
    // box; the chip's preset of the row's memory stands for it (same chip and memory: the same
    // throughput), and the row says which preset.
    ("bosgame-m5", "ryzen-ai-max-395"),
    // The board those boxes share (FACTS-2026 A3: Sixunited AXB35-02), as benchmark repos name
    // the machine by it (kyuz0's `Sixunited_AXB35.md`).
    ("axb35", "ryzen-ai-max-395"),
    ("axb35-02", "ryzen-ai-max-395"),
    ("corsair-ai-workstation-300", "ryzen-ai-max-395"),
    ("minix-er939", "ryzen-ai-max-395"),
    ("msi-ai-edge", "ryzen-ai-max-395"),
    ("beelink-gtr9", "ryzen-ai-max-395"),
    ("fevm-faex1", "ryzen-ai-max-395"),
    ("aoostar-nex395", "ryzen-ai-max-395"),
    ("gigabyte-ai-top-atom", "gb10"),
    ("ai-top-atom", "gb10"),
    ("msi-edgexpert", "gb10"),
    ("edgexpert", "gb10"),
];

/// A system label's words: lower case, `+` read as `plus`, every run of punctuation or space
/// one separator (`AMD Ryzen AI Max+ 395` -> `amd`, `ryzen`, `ai`, `max`, `plus`, `395`).
fn label_words(label: &str) -> Vec<String> {
    label
        .to_lowercase()
        .replace('+', "-plus-")
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// Whether `words` holds `phrase`'s words in a row (`["mac", "m5", "max"]` holds `m5-max`).
fn holds_phrase(words: &[String], phrase: &str) -> bool {
    let p = label_words(phrase);
    !p.is_empty() && words.windows(p.len()).any(|w| w == p.as_slice())
}

/// The node presets a system label names by its words, when it is not an id, a family or a
/// prefix of one: every preset whose id holds all the label's words (`asus-gx10` ->
/// asus-ascent-gx10, `m5-max` -> macbook-pro-m5-max-40c-128gb, `NVIDIA DGX Spark` -> dgx-spark;
/// makers' names aside), else every preset of the chip the
/// label names (`ryzen-ai-max-395`, `AMD Ryzen AI Max+ 395`, `strix-halo`, `gb10`, `m3-ultra`).
fn nodes_by_words(system: &str) -> Vec<&'static crate::hw::NodeSpec> {
    // Chip makers' names, which the preset ids leave out (`NVIDIA DGX Spark` is dgx-spark), and
    // a memory size the label writes (`Framework Desktop 64GB`: the size is read apart).
    let words = name_words(system);
    if words.is_empty() {
        return Vec::new();
    }
    let by_id: Vec<&crate::hw::NodeSpec> = presets().filter(|n| words.iter().all(|w| label_words(&n.id).contains(w))).collect();
    if !by_id.is_empty() {
        return of_named_chip(&words, by_id);
    }
    chip_named(&words).map_or_else(Vec::new, |chip| presets().filter(|n| n.chip == chip).collect())
}

/// Presets of several chips that a label's words all match (`M5 Pro`: `pro` is also MacBook
/// Pro's): those of the chip the label names ([`chip_named`]), where some are; else all.
fn of_named_chip<'a>(words: &[String], presets: Vec<&'a crate::hw::NodeSpec>) -> Vec<&'a crate::hw::NodeSpec> {
    match chip_named(words) {
        Some(chip) if presets.iter().any(|n| n.chip != chip) && presets.iter().any(|n| n.chip == chip) => {
            presets.into_iter().filter(|n| n.chip == chip).collect()
        }
        _ => presets,
    }
}

/// The chip a label's words name: the longest chip name they hold in a row (`m4-max` before
/// `m4`; `MacBook Pro M5` holds `m5`, not `m5-pro`), or a word for one ([`CHIP_WORDS`]).
fn chip_named(words: &[String]) -> Option<&'static str> {
    let chips = presets().map(|n| (n.chip.as_str(), n.chip.as_str()));
    chips
        .chain(CHIP_WORDS.iter().copied())
        .filter(|(phrase, _)| holds_phrase(words, phrase))
        .max_by_key(|(phrase, _)| label_words(phrase).len())
        .map(|(_, chip)| chip)
}

/// The first quantity a lower-case label writes in one of `units`, joined or spaced (`512gb`,
/// `256 gb`, `2.5 gbe`): its number.
fn label_quantity(label: &str, units: &[&str]) -> Option<f64> {
    let words: Vec<&str> = label.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')).filter(|w| !w.is_empty()).collect();
    words.iter().enumerate().find_map(|(i, w)| {
        let joined = units.iter().find_map(|u| w.strip_suffix(u)).filter(|n| !n.is_empty());
        let number = joined.or_else(|| words.get(i + 1).filter(|next| units.contains(next)).map(|_| *w))?;
        number.parse::<f64>().ok().filter(|x| *x > 0.0)
    })
}

/// The memory size a system label names, GB (`... 512GB`, `(256 GB)`, `128gb`).
fn label_memory_gb(system: &str) -> Option<f64> {
    label_quantity(system, &["gb"])
}

/// The box a label names when it names one chip but not the memory (`Mac Studio M3 Ultra`):
/// the chip's fullest box (most GPU cores, then most memory), said in the row's assumptions. A
/// row measured a run that fit the box it ran on, and memory decides only what fits; a binned
/// chip (the 60-core M3 Ultra) would prefill slower, which the assumption names.
fn full_box(system: &str, many: &[&crate::hw::NodeSpec], assumptions: &mut Vec<String>) -> String {
    let best = fullest(many.iter().copied()).expect("candidates are not empty");
    let others: Vec<&str> = many.iter().filter(|n| n.id != best.id).map(|n| n.id.as_str()).collect();
    assumptions.push(format!(
        "system `{system}` names no memory size: assumed {} (the chip's fullest box; also {})",
        best.id,
        others.join(", ")
    ));
    best.id.clone()
}

/// The box with the most GPU cores, then the most memory.
fn fullest<'a>(nodes: impl Iterator<Item = &'a crate::hw::NodeSpec>) -> Option<&'a crate::hw::NodeSpec> {
    nodes.max_by(|a, b| (a.gpu_cores, a.memory_gb).partial_cmp(&(b.gpu_cores, b.memory_gb)).unwrap_or(std::cmp::Ordering::Equal))
}

/// Presets that differ only in what a throughput prediction does not read from a single box
/// (maker, price, idle power, ports): the same chip and memory. The first is taken, and the
/// row says so; `None` when they differ in chip or memory.
fn same_chip_and_memory(system: &str, many: &[&crate::hw::NodeSpec], assumptions: &mut Vec<String>) -> Option<String> {
    let first = many.first()?;
    if !many.iter().all(|n| n.chip == first.chip && n.memory_gb == first.memory_gb) {
        return None;
    }
    let others: Vec<&str> = many[1..].iter().map(|n| n.id.as_str()).collect();
    let note = format!(
        "system `{system}` names the {} chip with {} GB: taken as {} (same chip and memory as {})",
        first.chip,
        first.memory_gb,
        first.id,
        others.join(", ")
    );
    if !assumptions.contains(&note) {
        assumptions.push(note);
    }
    Some(first.id.clone())
}

/// The nodes of a family system (`mac-studio-m3-ultra`): its id prefix completed by each mix
/// entry; an unknown mix takes the family's first preset (said in the assumptions).
fn family_nodes(row: &MeasurementRow, prefix: &str, n: usize, assumptions: &mut Vec<String>) -> Result<Vec<String>, String> {
    let cat = crate::catalog::catalog();
    let list: Vec<String> = match mix_sizes(row, n, assumptions)? {
        Some(sizes) => sizes.iter().map(|size| format!("{prefix}{size}")).collect(),
        None => {
            let size = presets().find_map(|x| x.id.strip_prefix(prefix).map(String::from)).unwrap_or_default();
            assumptions.push(format!("node mix `{}` unknown: assumed {n}x {size}", row.node_mix.trim()));
            vec![format!("{prefix}{size}"); n]
        }
    };
    // A size the family's own bin does not come in: the chip's preset of that size (the 96 GB M3
    // Ultra is the 60-core one), else the family's box with that memory.
    let family: Vec<&crate::hw::NodeSpec> = presets().filter(|x| x.id.starts_with(prefix)).collect();
    let mut resolved = Vec::with_capacity(list.len());
    for id in list {
        if cat.node(&id).is_some() {
            resolved.push(id);
            continue;
        }
        let gb = id.strip_prefix(prefix).and_then(|s| s.strip_suffix("gb")).and_then(|g| g.parse::<f64>().ok());
        match gb.and_then(|gb| memory_variant(&row.system.trim().to_lowercase(), gb, &family, assumptions)) {
            Some(found) => resolved.push(found?),
            None => {
                return Err(format!("node mix `{}`: no node preset `{id}` (write sizes such as 512gb, 2x512gb+2x256gb)", row.node_mix));
            }
        }
    }
    Ok(resolved)
}

/// Where the boxes [`memory_variant`] derives come from (their catalog entries' file).
const DERIVED_NODES: &str = "validate (a row's memory size)";

/// The node presets a row's system label may name: the catalog's nodes (built-in and user
/// catalogs) without the boxes [`memory_variant`] derived for earlier rows, so that what one
/// row derived never changes how another row's label reads.
fn presets() -> impl Iterator<Item = &'static crate::hw::NodeSpec> {
    let cat = crate::catalog::catalog();
    let derived: Vec<&str> = cat.user.iter().filter(|o| o.section == "node" && o.file == DERIVED_NODES).map(|o| o.id.as_str()).collect();
    cat.nodes.iter().filter(move |n| !derived.contains(&n.id.as_str()))
}

/// The presets whose display names hold every word of a system label but sizes and makers'
/// names (`mac studio` -> every `Mac Studio, ...` preset); none for a label without such words.
fn presets_named(system: &str) -> Vec<&'static crate::hw::NodeSpec> {
    let words = name_words(system);
    if words.is_empty() {
        return Vec::new();
    }
    presets().filter(|n| words.iter().all(|w| label_words(&n.name).contains(w))).collect()
}

/// A system label's words that name a box or chip: without sizes and makers' names.
fn name_words(system: &str) -> Vec<String> {
    label_words(system).into_iter().filter(|w| !is_maker_word(w) && !is_size_word(w)).collect()
}

/// Whether a label word is a chip maker's name or an edition's, which the preset ids leave out
/// (`NVIDIA DGX Spark Founders Edition` is dgx-spark).
fn is_maker_word(w: &str) -> bool {
    matches!(w, "nvidia" | "apple" | "amd" | "founders" | "edition")
}

/// Whether a label word is a GPU core count, a memory size or a storage size (`40c`, `128gb`,
/// `4tb`: the SSD, which no prediction reads).
fn is_size_word(w: &str) -> bool {
    let digits = w.strip_suffix("gb").or_else(|| w.strip_suffix("tb")).or_else(|| w.strip_suffix('c'));
    digits.is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
}

/// Whether a preset is the box a system label names, in some size: the label's words and the
/// preset id's are the same once sizes (`40c`, `128gb`), makers' names and the words of the
/// preset's chip (`ai-max-395`) are set aside (`gmktec-evo-x2` names gmktec-evo-x2-128gb,
/// `Framework Desktop 64GB` names framework-desktop-ai-max-395, `mac-mini-m4` names
/// mac-mini-m4-10c-16gb but not mac-mini-m4-pro-20c-64gb, `macbook-pro-m5` does not name
/// macbook-pro-m5-max-40c-128gb).
fn names_box(system: &str, node: &crate::hw::NodeSpec) -> bool {
    let keep = |w: &String| !is_size_word(w) && !is_maker_word(w);
    let label: Vec<String> = label_words(system).into_iter().filter(keep).collect();
    let id: Vec<String> = label_words(&node.id).into_iter().filter(keep).collect();
    if label == id {
        return true;
    }
    // The chip's own words, where the id holds them and the label does not.
    let phrases = std::iter::once(node.chip.as_str()).chain(CHIP_WORDS.iter().filter(|(_, c)| *c == node.chip).map(|(p, _)| *p));
    phrases.filter(|p| !holds_phrase(&label, p)).any(|p| {
        let p = label_words(p);
        id.windows(p.len()).position(|w| w == p.as_slice()).is_some_and(|at| {
            let rest: Vec<&String> = id[..at].iter().chain(&id[at + p.len()..]).collect();
            rest.len() == label.len() && rest.iter().zip(&label).all(|(a, b)| *a == b)
        })
    })
}

/// The node of a memory size no preset the label names comes in (`mac-mini-m4-pro` with 48gb,
/// `mac-studio-m3-ultra` with 96gb): `None` for a size beyond every catalog box, or unless the
/// label names the candidates' box ([`names_box`]) or chip (the longest chip name it holds, so
/// `m4-pro` before `m4`; `macbook-pro-m5-pro` does not name an M5 Max). A preset of that chip and memory elsewhere in the catalog is taken; else the chip's
/// fullest candidate box with the row's memory, installed as a catalog entry
/// (`<preset>-as-<N>gb`, `like` the preset): memory decides only what fits and the wired limit,
/// so every other figure (GPU cores, bandwidth, power, price) is the preset's, as the row's
/// assumptions say (a bin with fewer GPU cores would be slower).
fn memory_variant(
    system: &str,
    gb: f64,
    candidates: &[&crate::hw::NodeSpec],
    assumptions: &mut Vec<String>,
) -> Option<Result<String, String>> {
    let words = label_words(system);
    // The label's own box (`gmktec-evo-x2` is gmktec-evo-x2-128gb in another size), else the
    // chip it names.
    let boxes: Vec<&crate::hw::NodeSpec> = candidates.iter().copied().filter(|n| names_box(system, n)).collect();
    let chip = match boxes.first() {
        Some(first) if boxes.iter().all(|n| n.chip == first.chip) => first.chip.as_str(),
        _ => candidates
            .iter()
            .map(|n| n.chip.as_str())
            .filter(|chip| holds_phrase(&words, chip))
            .max_by_key(|chip| label_words(chip).len())?,
    };
    let mut note = |text: String| {
        if !assumptions.contains(&text) {
            assumptions.push(text);
        }
    };
    // A size beyond every box in the catalog (the 512 GB M3 Ultra's) is no machine: refused.
    if presets().all(|n| n.memory_gb < gb) {
        return None;
    }
    if let Some(same) = presets().find(|n| n.chip == chip && n.memory_gb == gb) {
        note(format!("system `{system}` with {gb} GB: the {chip} preset of that memory, {}", same.id));
        return Some(Ok(same.id.clone()));
    }
    let base = fullest(candidates.iter().copied().filter(|n| n.chip == chip && (boxes.is_empty() || boxes.contains(n))))?;
    let id = format!("{}-as-{gb}gb", base.id);
    let text = format!(
        "[[node]]\nid = \"{id}\"\nlike = \"{}\"\nname = \"{} with {gb} GB\"\nmemory_gb = {gb:?}\n[node.sources]\nmemory_gb = \"a measurement row's memory size (no preset of it)\"\n",
        base.id, base.name
    );
    let installed =
        crate::catalog::user::parse_catalog_file(DERIVED_NODES, &text).map_err(|e| e.to_string()).and_then(crate::catalog::install);
    Some(installed.map(|()| {
        note(format!(
            "system `{system}` with {gb} GB: no {chip} preset of that memory; modelled as {} with {gb} GB ({id}): memory decides what fits; GPU cores, bandwidth, power and price are that preset's (a bin with fewer GPU cores would be slower)",
            base.id
        ));
        id
    }))
}

/// The GPU core count a system label states (`M1 7-Core GPU`, `M2 Max 38-core GPU`,
/// `M3 Max (16c CPU, 30c GPU)`, `40c GPU`): a count of cores next to the word `gpu`.
fn label_gpu_cores(system: &str) -> Option<u32> {
    let words = label_words(system);
    let count = |w: &str| w.strip_suffix('c').unwrap_or(w).parse::<u32>().ok().filter(|c| *c > 0);
    words.iter().enumerate().find_map(|(i, w)| {
        let next = |k: usize| words.get(i + k).map(String::as_str);
        match (next(1), next(2)) {
            // `38c gpu`, `38-core gpu`, `38 core gpu`.
            (Some("gpu"), _) if w.ends_with('c') => count(w),
            (Some("core" | "cores"), Some("gpu")) => count(w),
            _ => None,
        }
    })
}

/// [`row_nodes`], each node in the GPU core bin the system label states ([`gpu_core_bin`]).
fn binned_row_nodes(row: &MeasurementRow, n: usize, assumptions: &mut Vec<String>) -> Result<Vec<String>, String> {
    let nodes = row_nodes(row, n, assumptions)?;
    match label_gpu_cores(&row.system) {
        Some(cores) => nodes.iter().map(|id| gpu_core_bin(&row.system, id, cores, assumptions)).collect(),
        None => Ok(nodes),
    }
}

/// Apple's chip bins whose memory bus is narrower than the full chip's (Apple's published
/// specs, not in FACTS): the 30-core M3 Max reads 300 GB/s (the 40-core 400), the 32-core
/// M4 Max 410 GB/s (the 40-core 546). Other bins keep the full chip's bus.
const NARROW_BINS: &[(&str, u32, f64)] = &[("m3-max", 30, 300.0), ("m4-max", 32, 410.0)];

/// The node `id` with the GPU core count a row's system label states, where the preset has
/// another (a binned chip: fewer cores at the same clock, so its peak FLOP/s scales with the
/// count; its bandwidth is the full chip's unless [`NARROW_BINS`] says otherwise), said in the
/// assumptions. The same id where the counts agree or the count is no bin of the chip (more
/// cores than the preset's, or under half of them).
fn gpu_core_bin(system: &str, id: &str, cores: u32, assumptions: &mut Vec<String>) -> Result<String, String> {
    let cat = crate::catalog::catalog();
    let Some(node) = cat.node(id) else { return Ok(id.to_string()) };
    if node.gpu_cores == cores || cores > node.gpu_cores || 2 * cores < node.gpu_cores {
        return Ok(id.to_string());
    }
    // A preset of that bin and memory (the 60-core M3 Ultra with 96 GB) is the box itself.
    if let Some(bin) = presets().find(|n| n.chip == node.chip && n.gpu_cores == cores && n.memory_gb == node.memory_gb) {
        return Ok(bin.id.clone());
    }
    let derived = format!("{id}-{cores}c");
    let tflops = node.fp16_tflops * cores as f64 / node.gpu_cores as f64;
    let bw = NARROW_BINS.iter().find(|(chip, c, _)| *chip == node.chip && *c == cores).map(|b| b.2);
    let (bw_key, bw_source) = match bw {
        Some(gbs) => (
            format!("mem_bw_gbs = {gbs:?}\n"),
            "mem_bw_gbs = \"Apple's published bandwidth of this bin (a manufacturer spec, not in FACTS)\"\n".to_string(),
        ),
        None => (String::new(), String::new()),
    };
    if cat.node(&derived).is_none() {
        let text = format!(
            "[[node]]\nid = \"{derived}\"\nlike = \"{id}\"\nname = \"{} with {cores} GPU cores\"\ngpu_cores = {cores}\nfp16_tflops = {tflops:?}\n{bw_key}[node.sources]\ngpu_cores = \"a measurement row's GPU core count (no preset of it)\"\nfp16_tflops = \"the preset's scaled by {cores}/{} cores (same clock)\"\n{bw_source}",
            node.name, node.gpu_cores
        );
        crate::catalog::user::parse_catalog_file(DERIVED_NODES, &text).map_err(|e| e.to_string()).and_then(crate::catalog::install)?;
    }
    let bus = match bw {
        Some(gbs) => format!("{gbs} GB/s, the bin's own bus"),
        None => format!("{} GB/s, the full chip's bus", node.mem_bw_gbs),
    };
    let note = format!(
        "system `{}` states {cores} GPU cores: modelled as {id} with {cores} of its {} ({derived}): peak FP16 {tflops:.2} TFLOPS, {bus}",
        system.trim(),
        node.gpu_cores
    );
    if !assumptions.contains(&note) {
        assumptions.push(note);
    }
    Ok(derived)
}

/// The model of a row: a preset (by any name [`crate::catalog::Catalog::find_model`] knows), or
/// the config the row's notes name (`config: PATH`), read from PATH as written (relative to the
/// working directory), else from the `configs/` folder beside the CSV's folder
/// (`<csv dir>/../configs/<file>`, where the shared data set keeps its configs).
enum RowModel {
    /// A preset id.
    Preset(String),
    /// A config.json to import.
    Config(std::path::PathBuf),
}

fn row_model(row: &MeasurementRow, csv_dir: Option<&Path>, assumptions: &mut Vec<String>) -> Result<RowModel, String> {
    use crate::catalog::names::ModelNameError;
    let name = row.model.trim();
    let unknown = match crate::catalog::catalog().find_model(name) {
        Ok((p, _)) => return Ok(RowModel::Preset(p.id.clone())),
        Err(e @ ModelNameError::Ambiguous { .. }) => return Err(e.to_string()),
        Err(e) => e,
    };
    // llama-bench's own model label, `<llama.cpp architecture> <size>` (`qwen3moe 30B.A3B`,
    // `glm4moe 106B.A12B`, `llama 70B`) as its tables print it: the preset of that architecture
    // nearest the size, as `import` reads a llama-bench file.
    let note = config_note(&row.notes);
    if note.is_none()
        && let Ok(id) = crate::catalog::llama_arch::model_for(name, None, crate::catalog::catalog())
    {
        assumptions.push(format!("llama-bench label `{name}` read as the preset `{id}` (its architecture's preset nearest that size)"));
        return Ok(RowModel::Preset(id));
    }
    let Some(note) = note else {
        return Err(format!("{unknown}: not a preset (supernode catalog models) and the row's notes name no `config: PATH`"));
    };
    let written = Path::new(note);
    let beside = csv_dir.zip(written.file_name()).map(|(d, f)| d.join("..").join("configs").join(f));
    let found = std::iter::once(written.to_path_buf()).chain(beside.clone()).find(|p| p.is_file());
    match found {
        Some(p) => Ok(RowModel::Config(p)),
        None => Err(format!(
            "{unknown} and its config `{note}` (notes) cannot be read: tried {}{}",
            written.display(),
            beside.map_or(String::new(), |b| format!(" and {}", b.display()))
        )),
    }
}

/// The path of a `config: PATH` note, without the punctuation that ends its sentence.
fn config_note(notes: &str) -> Option<&str> {
    let words: Vec<&str> = notes.split_whitespace().collect();
    let path = words.windows(2).find(|w| w[0] == "config:").map(|w| w[1])?;
    let path = path.trim_end_matches([';', ',', ')', '"', '\'']);
    // A sentence's full stop after `.json`.
    Some(path.strip_suffix('.').filter(|p| p.ends_with(".json")).unwrap_or(path))
}

/// Turns a row into a scenario builder (validated by the same rules as a scenario file when
/// built), with the assumptions made for what the row does not say; or says why it cannot and
/// what to change.
pub fn row_scenario(row: &MeasurementRow, all: &[MeasurementRow]) -> Result<(ScenarioBuilder, Vec<String>), String> {
    row_scenario_in(row, all, None)
}

/// [`row_scenario`] for a row of a CSV in `csv_dir` (where a `config: PATH` note's config is
/// also looked for: `<csv_dir>/../configs/<file>`).
pub fn row_scenario_in(
    row: &MeasurementRow,
    all: &[MeasurementRow],
    csv_dir: Option<&Path>,
) -> Result<(ScenarioBuilder, Vec<String>), String> {
    let mut assumptions: Vec<String> = row.metric_read_as.iter().cloned().collect();
    let n: usize = match row.nodes.trim() {
        // Unstated: the machines the system label counts (`2x DGX Spark`), else one.
        "" => {
            let n = counted_system(&row.system).map_or(1, |(c, _)| c);
            assumptions.push(format!("node count not stated: {n}, as the system `{}` reads", row.system.trim()));
            n
        }
        t => t.parse().map_err(|_| format!("node count `{}` is not a number: write an integer", row.nodes))?,
    };
    let nodes = binned_row_nodes(row, n, &mut assumptions)?;
    // The engines a row may name are the runtimes' measurement names; a runtime may add what
    // the twin assumes for its rows (vllm-mlx: its scheduler taken as mlx-lm's).
    let (mut engine_name, engine_note) = engine_label(&row.engine, &row.quant)?;
    assumptions.extend(engine_note);
    // Replicas of one machine each (`DP2`) run llama.cpp as it runs on one.
    let one_node_replicas = n > 1 && parallelism_label(&row.parallelism, n).is_ok_and(|s| s.replicas == n);
    if engine_name == "llama-cpp" && n > 1 && !one_node_replicas {
        // llama.cpp spans machines only through its RPC backend (`--rpc`).
        assumptions.push(format!("llama.cpp on {n} machines: its RPC backend (llama-cpp-rpc), the only way it spans machines"));
        engine_name = "llama-cpp-rpc".into();
    }
    let runtime = runtimes::by_measurement_name(&engine_name);
    if let Some(a) = runtime.and_then(|r| r.measurement_assumption()) {
        assumptions.push(a.into());
    }
    let engine = match engine_name.as_str() {
        "hpl" if n == 1 => return Err("HPL rows: the single-node CPU HPL rate and power are catalog inputs, not predictions".into()),
        "hpl" => return hpl_scenario(row, &nodes, n, assumptions),
        "" => return Err("no engine: a catalog fact (idle power), not a prediction".into()),
        e => runtime.ok_or_else(|| format!("engine `{e}` is not modelled: the twin runs {}", runtimes::measurement_names().join(", ")))?,
    };
    if row.model.is_empty() {
        return Err("no model: name a model preset (supernode catalog models)".into());
    }
    let model = row_model(row, csv_dir, &mut assumptions)?;
    let quant = resolve_quant(row, all, engine, &model, &mut assumptions)?;
    let moe_shared = engine.id() == "vllm" && n > 1 && row_is_moe(&model);
    let RowSplit { split: parallelism, replicas } = row_parallelism(row, n, engine, moe_shared, &mut assumptions)?;
    // The nodes one replica joins over the fabric (every node without replicas).
    let group = &nodes[..n / replicas];
    let joined = group.len() > 1;
    let (fabric, fabric_note) = match fabric_label(&row.fabric, engine.id()) {
        _ if joined && is_unstated_link(&row.fabric) => machines_own_link(&row.fabric, group, engine.id())?,
        _ if joined && is_plain_ethernet(&row.fabric) => builtin_ethernet(&row.fabric, group)?,
        (_, None) if joined && is_plain_thunderbolt(&row.fabric) => machines_thunderbolt(&row.fabric, group, engine.id())?,
        read => read,
    };
    let fabric_word = fabric.as_str();
    if joined && row.fabric.contains("not stated") {
        assumptions.push(format!("fabric not stated: assumed {fabric_word}"));
    }
    if joined {
        assumptions.extend(fabric_note);
    }
    let (kind_prompt, generate) = row_tokens(row, all, &mut assumptions)?;
    let mut b = ScenarioBuilder::new(format!("{}.toml", row.id));
    b.name(row.id.clone()).seed(1).nodes(&nodes).quant(&quant).engine(engine.id()).parallelism(parallelism.id());
    if let Parallelism::TensorPipeline { stages } = parallelism {
        b.set("engine.pipeline_stages", &toml::Value::Integer(i64::from(stages))).map_err(|e| e.to_string())?;
    }
    if replicas > 1 {
        b.set("engine.replicas", &toml::Value::Integer(replicas as i64)).map_err(|e| e.to_string())?;
    }
    set_row_model(&mut b, model, row, engine, &mut assumptions)?;
    if joined {
        let switched = names_switch_only(&row.fabric)
            && crate::catalog::catalog().fabric(fabric_word).is_some_and(|f| f.topologies.contains(&crate::hw::Topology::Switch));
        let topology = if switched { "switch" } else { row_topology(fabric_word, group, &mut assumptions) };
        b.fabric(fabric_word).topology(topology);
    }
    b.tokens(kind_prompt, generate);
    if let Some(depth) = prefill_depth(row)? {
        // llama-bench `ppN @ dD`: D tokens filled first (not timed), then the N-token prefill
        // the rate is of (llama-bench.cpp: the depth run precedes the timed test).
        assumptions.push(format!(
            "prefill of the prompt after {depth} tokens already in context (llama-bench `@ d{depth}`): the rate of those tokens alone"
        ));
        b.set("workload.context_tokens", &toml::Value::Integer(i64::try_from(depth).unwrap_or(i64::MAX))).map_err(|e| e.message)?;
    }
    // What the row's command line says (vLLM/SGLang flags in the notes, llama.cpp's backend in
    // its source or notes).
    let mut rocm = false;
    for (k, v) in engine.measurement_options(&row_text(row)) {
        assumptions.push(format!("{k} = {v}, as the row says"));
        rocm |= is_rocm_backend(k, &v);
        b.set(k, &v).map_err(|e| e.message)?;
    }
    for (k, v, sibling) in run_options(row, all, engine) {
        assumptions.push(format!("{k} = {v}, as another row of its benchmark run ({sibling}) says"));
        rocm |= is_rocm_backend(k, &v);
        b.set(k, &v).map_err(|e| e.message)?;
    }
    if rocm && dated_before(row, ROCM_TILES_PER_EXPERT_FROM) {
        assumptions.push(format!("engine.rocm_tiles = \"per-step\": a llama.cpp ROCm build before {ROCM_TILES_PER_EXPERT_FROM} picked its MoE tile width against the step's rows"));
        b.set("engine.rocm_tiles", &toml::Value::String("per-step".into())).map_err(|e| e.message)?;
    }
    if let Some((c, same_tokens, reading)) = one_batch_run(row)? {
        assumptions.push(reading);
        b.workload_kind("batched-bench");
        b.set("workload.batch", &c.into()).map_err(|e| e.message)?;
        b.set("workload.same_tokens", &same_tokens.into()).map_err(|e| e.message)?;
        return Ok((b, assumptions));
    }
    serving_workload(row, engine, &mut b, &mut assumptions)?;
    Ok((b, assumptions))
}

/// A row whose benchmark runs one batch of B sequences, prefilled then decoded together (`kind =
/// "batched-bench"`; estimate::batched), as that tool defines it: (B, whether every sequence
/// decodes the same token, how the row is read); `None` for any other row. The metric is read
/// as the tool computes it (metric_value).
fn one_batch_run(row: &MeasurementRow) -> Result<Option<(i64, bool, String)>, String> {
    if is_one_batch_server(row) && ONE_BATCH_METRICS.contains(&row.metric.as_str()) {
        // SGLang's bench_one_batch_server: B random prompts in one request (independent routing).
        let c: i64 = match row.concurrency.trim() {
            "" => 1,
            t => t.parse().map_err(|_| format!("concurrency `{t}` is not a number: write the batch size"))?,
        };
        return Ok(Some((c, false, one_batch_reading(c))));
    }
    if let Some(c) = mlx_benchmark_batch(row) {
        // `mlx_lm.benchmark -b B` (mlx-lm 0.32.2 `batch_generate`): B random prompts; its
        // generation rate counts the decode steps' tokens over their time (`BatchGenerator`
        // counters), prefill excluded.
        return Ok(Some((
            c,
            false,
            format!(
                "mlx_lm.benchmark at batch {c} (mlx-lm 0.32.2 `batch_generate`): the {c} prompts prefilled together, then decoded together; prompt rate = all prompt tokens over the prefill time, generation rate = the decode steps' tokens over their time"
            ),
        )));
    }
    if is_batched_bench(row) && shared_prompt(row) {
        return Err("llama-batched-bench with a shared prompt (-pps, is_pp_shared=1: one prefill copied to every sequence) is not the workload the twin runs (B prompts of their own)".into());
    }
    if BATCHED_BENCH_METRICS.contains(&row.metric.as_str()) && is_batched_bench(row) {
        // llama-batched-bench: B sequences of token id 0 or random ids by the tool's date, its
        // S_TG the decode rate and its S_PP (B x PP / T_PP, every prompt prefilled in the
        // context's micro-batches) the prefill rate.
        let c: i64 = row.concurrency.trim().parse().map_err(|_| "batched-bench rows need the `concurrency` column (-npl)".to_string())?;
        let tokens = batched_bench_tokens_drawn(row);
        return Ok(Some((c, tokens == BatchedBenchTokens::AllZero, tokens.reading().into())));
    }
    Ok(None)
}

/// A serving row's workload: N concurrent requests sent at once, each user one request (the
/// benchmark's batch), for aggregate rates and for the TTFT and TPOT of several requests; with
/// what each metric is read as. Other rows keep their `generate` workload.
fn serving_workload(
    row: &MeasurementRow,
    engine: &dyn runtimes::EngineRuntime,
    b: &mut ScenarioBuilder,
    assumptions: &mut Vec<String>,
) -> Result<(), String> {
    let per_request = match row.metric.as_str() {
        "ttft_s" if text_ttft(row) => Some(
            "the mean over the requests of the time to each one's first streamed text (llama-benchy's TTFT: a chat header such as gpt-oss's harmony one decodes first), queueing for the prefills before each included",
        ),
        "ttft_s" if concurrent(row) => {
            Some("the mean over the requests, queueing for the prefills before each included (the serving run's mean TTFT)")
        }
        "tpot_ms" if concurrent(row) => Some("the mean over the requests of each one's decode time per token after its first"),
        "ttft_p50_s" | "ttft_p99_s" => Some("that percentile over the requests' TTFT, queueing for the prefills before each included"),
        "tpot_p50_ms" | "tpot_p99_ms" => Some("that percentile over the requests of each one's decode time per token after its first"),
        "decode_tokens_per_s" if per_request_decode(row) => Some(
            "the mean over the requests of each one's decode rate (its tokens after the first over the time from its first to its last)",
        ),
        "prefill_tokens_per_s" if concurrent_prompt_rate(row) => Some(
            "all prompt tokens over the time from the first request sent to the last first text (llama-benchy 0.3.5's `pp t/s (total)`)",
        ),
        "requests_per_s" => Some("the requests completed over the run's window, from the first arrival to the last token"),
        "total_tokens_per_s" => {
            Some("the completed requests' prompt and output tokens over the run's window, from the first arrival to the last token")
        }
        "e2e_mean_s" => Some("the mean over the requests of the time from each one's arrival to its last token, queueing included"),
        "e2e_p50_s" | "e2e_p99_s" => Some("that percentile over the requests of the time from arrival to last token, queueing included"),
        "itl_p50_ms" | "itl_p99_ms" => Some(
            "that percentile over every gap between a request's consecutive tokens after its first (a step a prefill joins is a long gap)",
        ),
        _ => None,
    };
    if row.metric == "aggregate_decode_tokens_per_s" && counts_from_first_token(row) {
        assumptions.push("llama-benchy's rate: streamed text after each request's first (for gpt-oss, the first after its 3-token harmony header), from the earliest first text to the last token".into());
    }
    if per_request.is_none() && row.metric != "aggregate_decode_tokens_per_s" {
        return Ok(());
    }
    let c: i64 = match row.concurrency.trim() {
        "" if SERVING_METRICS.contains(&row.metric.as_str()) => 1,
        t => t.parse().map_err(|_| "aggregate rows need the `concurrency` column".to_string())?,
    };
    // A benchmark that sends more prompts than it keeps in flight (`vllm bench serve
    // --num-prompts 64 --max-concurrency 8`): a closed loop of `c` users through them all.
    let requests = notes_prompts(row).filter(|&p| p > c).unwrap_or(c);
    if let Some(reading) = per_request {
        let sent = match (c, requests) {
            (1, 1) => "one request".to_string(),
            (c, r) if r == c => format!("{c} concurrent requests sent at once"),
            (c, r) => format!("{r} requests, {c} in flight at a time"),
        };
        assumptions.push(format!("{} of {sent}: {reading}", row.metric));
    } else if requests > c {
        assumptions.push(format!("{requests} requests, {c} in flight at a time (the notes' prompt count)"));
    }
    b.workload_kind("serve");
    for (k, v) in [
        ("workload.arrival", toml::Value::String("closed".into())),
        ("workload.concurrency", c.into()),
        ("workload.requests", requests.into()),
    ] {
        b.set(k, &v).map_err(|e| e.message)?;
    }
    // How many of them the server runs at once: its flag where the command line sets it
    // (llama-server `-np 8`), else its default, said where the users outnumber it.
    let (flags, default) = engine.concurrency_flags();
    if let Some((slots, flag)) = runtimes::positive_flag(&row_text(row), flags) {
        assumptions.push(format!("workload.max_batch = {slots}, as the row says (`{flag} {slots}`)"));
        b.set("workload.max_batch", &i64::try_from(slots).unwrap_or(i64::MAX).into()).map_err(|e| e.message)?;
    } else if let Some(d) = default.filter(|&d| c > 0 && c as u64 > d) {
        assumptions.push(format!(
            "{}'s default of {d} requests at once (`{} {d}`; the row names none): {c} in flight, {d} served together, the rest waiting",
            engine.label(),
            flags.first().copied().unwrap_or("max_batch"),
        ));
    }
    Ok(())
}

/// A llama-bench test name, `pp512`, `tg128`, `pp512+tg128`, with an optional ` @ d4096`, parsed:
/// (prompt, generated, depth) tokens (llama-bench's own names, which rows and `import` carry).
pub(crate) fn parse_test(s: &str) -> Option<(u64, u64, u64)> {
    let (main, depth) = match s.split_once('@') {
        Some((m, d)) => (m.trim(), d.trim().strip_prefix('d')?.parse().ok()?),
        None => (s.trim(), 0),
    };
    let (mut p, mut g) = (0, 0);
    for part in main.split('+') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("pp") {
            p = n.parse().ok()?;
        } else if let Some(n) = part.strip_prefix("tg") {
            g = n.parse().ok()?;
        } else {
            return None;
        }
    }
    Some((p, g, depth))
}

/// A llama-bench prefill test after a filled context named in a row's notes or source
/// (`pp2048 @ d32768`): (prompt tokens timed, depth). llama-bench reports such a test's rate
/// over the N new tokens only, the depth's own prefill untimed.
fn depth_test(row: &MeasurementRow) -> Option<(u64, u64)> {
    [row.notes.as_str(), row.source.as_str()].into_iter().find_map(|text| {
        test_words(text).windows(3).filter(|w| w[1] == "@").find_map(|w| match parse_test(&w.join(" "))? {
            (n, 0, d) if n > 0 && d > 0 => Some((n, d)),
            _ => None,
        })
    })
}

/// The first llama-bench test a row's notes name (`tg32 @ d4096`, `tg128`, `pp512`), with its
/// depth: (prompt, generated, depth) tokens. The first is the row's own; later ones are asides
/// ("pp512; tg32 @ d32768 = 3.82").
fn first_test(row: &MeasurementRow) -> Option<(u64, u64, u64)> {
    let words = test_words(&row.notes);
    (0..words.len()).find_map(|i| {
        let with_depth = words.get(i..i + 3).filter(|w| w[1] == "@").and_then(|w| parse_test(&w.join(" ")));
        with_depth.or_else(|| parse_test(words[i])).filter(|(p, g, _)| *p > 0 || *g > 0)
    })
}

/// The words of a text llama-bench test names are read from (`tg32 @ d4096` is three).
fn test_words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '"')).filter(|w| !w.is_empty()).collect()
}

/// The context a decode row without a prompt column was measured at: `tgN @ dD` as the first
/// test its notes name (llama-bench decodes after D tokens already in context).
fn decode_depth(row: &MeasurementRow) -> Option<u64> {
    match first_test(row)? {
        (0, g, d) if g > 0 && d > 0 => Some(d),
        _ => None,
    }
}

/// The depth of a prefill row measured after a filled context ([`depth_test`]), checked against
/// its prompt column: that column holds the N timed tokens or the whole D + N.
fn prefill_depth(row: &MeasurementRow) -> Result<Option<u64>, String> {
    if row.metric != "prefill_tokens_per_s" {
        return Ok(None);
    }
    let Some((n, d)) = depth_test(row) else { return Ok(None) };
    match row.prompt_tokens.trim().parse::<u64>() {
        Ok(p) if p == n || p == n + d => Ok(Some(d)),
        Err(_) if row.prompt_tokens.trim().is_empty() => Ok(Some(d)),
        _ => Err(format!(
            "prefill row `pp{n} @ d{d}` with prompt_tokens `{}`: write {n} (the tokens timed) or {} (depth and prompt)",
            row.prompt_tokens.trim(),
            n + d
        )),
    }
}

/// A fabric as rows write it, read as a catalog fabric id, with what was assumed to read it: a
/// catalog id as the first word (`tb5-tcp (or 2.5GbE; not stated)`); else the words people use:
/// Thunderbolt 5 with RDMA/JACCL or TCP (neither said: RDMA under exo, which runs JACCL on
/// Thunderbolt 5 RDMA where the cables allow, TCP otherwise), Thunderbolt 4, USB4, ConnectX-7 /
/// QSFP / RoCE / 200G (TCP when said), Ethernet by speed (`10GbE`, `2.5 GbE`, `25G`), Wi-Fi.
/// Anything else is returned as written, for the scenario to refuse.
fn fabric_label(raw: &str, engine: &str) -> (String, Option<String>) {
    let first = first_word(raw);
    let cat = crate::catalog::catalog();
    if raw.trim().is_empty() || cat.fabric(first).is_some() {
        return (first.to_string(), None);
    }
    let t = raw.to_lowercase();
    let has = |ws: &[&str]| ws.iter().any(|w| t.contains(w));
    let tcp = has(&["tcp", "bridge", "ip over"]);
    let rdma = has(&["rdma", "jaccl", "roce"]);
    // Thunderbolt 5 carries RDMA where the label says so, or under exo unless it says TCP;
    // plain MLX distributed (mlx-lm) runs `mlx.launch`'s default backend, the TCP ring, unless
    // the hostfile names JACCL (mlx 0.32.4 `_distributed_utils/launch.py`).
    let tb5 = if rdma || (!tcp && engine == "exo") { "tb5-rdma" } else { "tb5-tcp" };
    let id = if has(&["tb5", "tb 5", "thunderbolt 5", "thunderbolt5"]) {
        tb5
    } else if has(&["tb4", "tb 4", "thunderbolt 4", "thunderbolt4"]) {
        "tb4-tcp"
    } else if has(&["usb4", "usb 4"]) {
        "usb4-tcp"
    } else if has(&["thunderbolt"]) && ethernet_gbps(&t).is_some() {
        // Thunderbolt by its link rate: 40 Gbit/s is Thunderbolt 4, 80 (120 boosted) Thunderbolt 5.
        if ethernet_gbps(&t).is_some_and(|g| g >= 80.0) { tb5 } else { "tb4-tcp" }
    } else if has(&["qsfp", "connectx", "cx7", "cx-7", "roce", "200g", "200 g"]) {
        if tcp { "cx7-tcp" } else { "cx7-roce" }
    } else if has(&["wifi", "wi-fi", "wlan"]) {
        "wifi"
    } else {
        match ethernet_gbps(&t).and_then(|g| ETHERNET.iter().find(|(speed, _)| *speed == g)) {
            Some((_, id)) => id,
            None => return (first.to_string(), None),
        }
    };
    (id.to_string(), Some(format!("fabric `{}` read as {id}", raw.trim())))
}

/// The row's model in its scenario: a preset (saying when its GGUFs keep llama.cpp's per-head
/// MLA cache, the preset's default there) or a config file the notes name.
fn set_row_model(
    b: &mut ScenarioBuilder,
    model: RowModel,
    row: &MeasurementRow,
    engine: &dyn EngineRuntime,
    assumptions: &mut Vec<String>,
) -> Result<(), String> {
    match model {
        RowModel::Preset(id) => {
            let preset = crate::catalog::catalog().model(&id);
            if preset.is_some_and(|(p, _)| runtimes::default_mla_per_head_cache(engine.kind(), p)) {
                assumptions.push(format!(
                    "{id}'s GGUFs predate llama.cpp's MLA metadata: attention over a per-head K/V cache (the preset's mla_cache)"
                ));
            }
            b.model(&id);
        }
        RowModel::Config(path) => {
            assumptions.push(format!("model `{}` imported from {} (the row's `config:` note)", row.model.trim(), path.display()));
            b.set("model.hf_config", &toml::Value::String(path.display().to_string())).map_err(|e| e.message)?;
        }
    }
    Ok(())
}

/// How a row's nodes are cabled: a full mesh where the fabric can be meshed and every node has
/// the ports for it (Thunderbolt: no Thunderbolt switch exists; a direct ConnectX-7 pair), else
/// through a switch (Ethernet and Wi-Fi, and more Sparks than their two QSFP ports mesh, as
/// people cable them: FACTS-2026 B3), said when the fabric could have been meshed.
fn row_topology(fabric_word: &str, nodes: &[String], assumptions: &mut Vec<String>) -> &'static str {
    use crate::hw::{Topology, cabling};
    let cat = crate::catalog::catalog();
    let Some(fabric) = cat.fabric(fabric_word) else { return "full-mesh" };
    if !fabric.topologies.contains(&Topology::FullMesh) {
        return "switch";
    }
    let n = nodes.len();
    let meshed = nodes.iter().filter_map(|id| cat.node(id)).try_for_each(|node| cabling::check_node(node, fabric, Topology::FullMesh, n));
    match meshed.and_then(|()| cabling::check_cluster(fabric, Topology::FullMesh, n)) {
        Ok(()) => "full-mesh",
        Err(e) if fabric.topologies.contains(&Topology::Switch) => {
            assumptions.push(format!("{n} nodes on {fabric_word} through a switch: no full mesh ({e})"));
            "switch"
        }
        Err(_) => "full-mesh",
    }
}

/// Whether a fabric label names no link: empty, `unknown`, `not stated`, or only the protocol
/// (`TCP`).
fn is_unstated_link(raw: &str) -> bool {
    matches!(strip_notes(raw).as_str(), "" | "unknown" | "not stated" | "unstated" | "n/a" | "?" | "-" | "tcp" | "tcp/ip")
        || names_switch_only(raw)
}

/// Whether a fabric label names only a switch (`switch`, `via switch`, `network switch`): the
/// machines' own link ([`machines_own_link`]) cabled through a switch.
fn names_switch_only(raw: &str) -> bool {
    let text = strip_notes(raw);
    let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    words.iter().any(|w| matches!(*w, "switch" | "switched"))
        && words.iter().all(|w| matches!(*w, "switch" | "switched" | "via" | "through" | "a" | "network" | "tcp"))
}

/// The link a cluster whose row names none runs on: the one its machines are built to be joined
/// by. GB10 boxes: their ConnectX-7 QSFP ports (FACTS-2026 B3), NCCL over RoCE as NVIDIA's
/// two-Spark guide sets it up; Thunderbolt 5 Macs: Thunderbolt 5, RDMA under exo (JACCL), TCP
/// otherwise; other machines: their built-in Ethernet ([`builtin_ethernet`]). TCP where the row
/// says so or the engine is llama.cpp's RPC (a TCP protocol). Said as assumed.
fn machines_own_link(raw: &str, nodes: &[String], engine: &str) -> Result<(String, Option<String>), String> {
    let cat = crate::catalog::catalog();
    let specs: Vec<&crate::hw::NodeSpec> = nodes.iter().filter_map(|id| cat.node(id)).collect();
    let medium = if !specs.is_empty() && specs.iter().all(|n| n.qsfp_ports > 0) {
        "ConnectX-7"
    } else if !specs.is_empty() && specs.iter().all(|n| n.tb_generation >= 5) {
        "Thunderbolt 5"
    } else {
        return builtin_ethernet(raw, nodes);
    };
    // The medium's own rules pick RDMA or TCP ([`fabric_label`]).
    let tcp = strip_notes(raw).starts_with("tcp") || engine == "llama-cpp-rpc";
    let (id, _) = fabric_label(&if tcp { format!("{medium} TCP") } else { medium.to_string() }, engine);
    let written = if raw.trim().is_empty() { "not stated".to_string() } else { format!("`{}`", raw.trim()) };
    Ok((id.to_string(), Some(format!("fabric {written}: the machines' own link, {id}"))))
}

/// Whether a fabric label names Thunderbolt without its generation or link rate
/// (`Thunderbolt`, `TB`, `thunderbolt bridge`), or only an MLX distributed backend that runs
/// over it: `ring` (TCP sockets over the Thunderbolt bridge) or `jaccl` (RDMA).
fn is_plain_thunderbolt(raw: &str) -> bool {
    let words = label_words(&strip_notes(raw));
    let medium = words.iter().any(|w| matches!(w.as_str(), "thunderbolt" | "tb" | "ring" | "jaccl"));
    medium && !words.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()))
}

/// Thunderbolt of no stated generation: the generation every node has (catalog `tb_generation`,
/// the lowest when they differ, which a cable between them runs at); RDMA by the label's words
/// or the engine ([`fabric_label`]'s rule), TCP under MLX's `ring` backend and llama.cpp's RPC.
/// Said as read.
fn machines_thunderbolt(raw: &str, nodes: &[String], engine: &str) -> Result<(String, Option<String>), String> {
    let cat = crate::catalog::catalog();
    let generation = nodes.iter().filter_map(|id| cat.node(id)).map(|n| n.tb_generation).min().unwrap_or(0);
    let words = label_words(&strip_notes(raw));
    let says = |w: &str| words.iter().any(|x| x == w);
    let tcp = says("ring") || says("tcp") || says("bridge") || engine == "llama-cpp-rpc";
    let label = match generation {
        5.. if tcp => "Thunderbolt 5 TCP",
        5.. => "Thunderbolt 5",
        3 | 4 => "Thunderbolt 4",
        _ => return Err(format!("fabric `{}`: a node has no Thunderbolt port in the catalog; write the link", raw.trim())),
    };
    let (id, _) = fabric_label(&format!("{label}{}", if says("jaccl") || says("rdma") { " RDMA" } else { "" }), engine);
    Ok((id.clone(), Some(format!("fabric `{}`: the nodes' Thunderbolt {generation}, {id}", raw.trim()))))
}

/// Whether a fabric label says Ethernet without a speed (`ethernet`, `LAN`, `Ethernet (switch)`).
fn is_plain_ethernet(raw: &str) -> bool {
    let t = strip_notes(raw);
    matches!(t.as_str(), "ethernet" | "lan" | "eth" | "wired" | "wired ethernet" | "ethernet switch") && ethernet_gbps(&t).is_none()
}

/// Ethernet without a speed: the slowest built-in port of the row's nodes (catalog
/// `ethernet_gbps`), the link a cluster cabled through its own ports runs at; said as assumed.
fn builtin_ethernet(raw: &str, nodes: &[String]) -> Result<(String, Option<String>), String> {
    let cat = crate::catalog::catalog();
    let speed = nodes.iter().filter_map(|id| cat.node(id)).map(|n| n.ethernet_gbps).fold(f64::INFINITY, f64::min);
    // The fastest catalog Ethernet the slowest port runs.
    let id = match ETHERNET.iter().rev().find(|(gbps, _)| *gbps <= speed) {
        Some((_, id)) => *id,
        None if speed > 0.0 => {
            return Err(format!(
                "fabric `{}`: a node's built-in port is {speed} GbE, which the catalog has no fabric for; write the link (e.g. 10GbE)",
                raw.trim()
            ));
        }
        None => return Err(format!("fabric `{}`: a node has no built-in Ethernet port; write the link (e.g. 10GbE)", raw.trim())),
    };
    Ok((id.to_string(), Some(format!("fabric `{}` without a speed: the nodes' built-in port, {id}", raw.trim()))))
}

/// The catalog's Ethernet fabrics by link rate, Gbit/s, slowest first.
const ETHERNET: &[(f64, &str)] =
    &[(2.5, "eth-2.5g"), (5.0, "eth-5g"), (10.0, "eth-10g"), (25.0, "eth-25g"), (50.0, "eth-50g"), (100.0, "eth-100g")];

/// The Ethernet speed a fabric label names, Gbit/s (`10GbE`, `2.5 GbE`, `25G`, `10 Gbit`).
fn ethernet_gbps(t: &str) -> Option<f64> {
    label_quantity(t, &["gbe", "gbit", "gbps", "gb", "g"])
}

/// Prompt and generated tokens of a row's scenario by its metric (what the benchmark ran),
/// with the assumptions made where the row is silent; or why the metric is not predicted.
fn row_tokens(row: &MeasurementRow, all: &[MeasurementRow], assumptions: &mut Vec<String>) -> Result<(u64, u64), String> {
    Ok(match row.metric.as_str() {
        m if is_one_batch_server(row) && ONE_BATCH_METRICS.contains(&m) => {
            let (prompt, output) = one_batch_lengths(row, Some(assumptions));
            if output < 2 && m != "prefill_tokens_per_s" {
                return Err(format!("bench_one_batch_server decode rate with output_len {output}: the tool prints none below 2"));
            }
            // The first output token comes from the prefill; the rest are decode steps.
            (prompt, output.saturating_sub(1).max(1))
        }
        // llama-batched-bench's S_TG (written as a decode rate) and S_PP: the B prompts of -npp
        // tokens, then -ntg decode steps; S_PP needs no decode length.
        "decode_tokens_per_s" if is_batched_bench(row) => batched_bench_tokens(row, all, assumptions)?,
        // One user's decode rate among N concurrent ones: the serving run of N requests.
        "decode_tokens_per_s" if per_request_decode(row) => serve_tokens(row, all, assumptions),
        "prefill_tokens_per_s" if is_batched_bench(row) => (batched_bench_prompt(row)?, 1),
        m if is_power(m) && row.prompt_tokens.trim().is_empty() && sibling_prompt(row, all).is_some() => {
            let p = sibling_prompt(row, all).expect("checked");
            assumptions.push(format!("power row: prompt {p} tokens, the longest of its benchmark's rows"));
            (p, 128)
        }
        // Energy per token is decode power over the decode rate (`Estimate::energy_j_per_token`):
        // a decode row's workload.
        m if m == "decode_tokens_per_s" || m == "energy_j_per_token" || m == "memory_gb" || is_power(m) => {
            match row.prompt_tokens.trim().parse::<u64>() {
                // A decode measured after a given prompt (llama-bench `tg128` runs on an empty
                // context: 0); `mlx_lm.benchmark` rows say how many tokens it generated after
                // it (`import` writes "N generated tokens"), which the mean context follows.
                Ok(p) => (p.max(1), if is_mlx_benchmark(row) { notes_generated(row).unwrap_or(128) } else { 128 }),
                Err(_) => match decode_depth(row) {
                    Some(d) => {
                        assumptions
                            .push(format!("decode after {d} tokens already in context, as the row's llama-bench test (`@ d{d}`) says"));
                        (d, 128)
                    }
                    None => {
                        assumptions.push("prompt length not published: assumed 128".into());
                        (128, 128)
                    }
                },
            }
        }
        // llama-benchy's concurrent prompt rate: the serving run of its batch, each request's
        // output as its notes or its run say (later prefills wait behind earlier decodes).
        "prefill_tokens_per_s" if concurrent_prompt_rate(row) => serve_tokens(row, all, assumptions),
        "prefill_tokens_per_s" => match depth_test(row) {
            // `ppN @ dD`: the timed prompt is the N tokens after the depth.
            Some((n, _)) => (n, 1),
            None => match row.prompt_tokens.trim() {
                // Unpublished: a row of the same run that states its prompt, else llama-bench's
                // default test (pp512, the prefill test most tables publish), said either way.
                "" => match sibling_prompt(row, all) {
                    Some(p) => {
                        assumptions.push(format!("prompt length not published: {p} tokens, as another row of its benchmark run says"));
                        (p, 1)
                    }
                    None => {
                        assumptions.push(format!(
                            "prompt length not published: assumed {UNPUBLISHED_PREFILL_PROMPT} (llama-bench's default prefill test, pp512)"
                        ));
                        (UNPUBLISHED_PREFILL_PROMPT, 1)
                    }
                },
                t => (t.parse().map_err(|_| format!("prompt_tokens `{t}` is not a number of tokens"))?, 1),
            },
        },
        // Time to first token of one request: its prompt's prefill, whose last step yields the
        // first token (`Estimate::ttft_s`, as `run` reports it).
        "ttft_s" => {
            let p: u64 =
                row.prompt_tokens.trim().parse().map_err(|_| "ttft_s row without prompt length: fill in prompt_tokens".to_string())?;
            if concurrent_ttft(row) || text_ttft(row) {
                // The serving run of the benchmark's batch: each request's output as its notes
                // or its run say (its own first token or text is what is timed).
                let (_, generate) = serve_tokens(row, all, assumptions);
                (p, generate)
            } else {
                (p, 1)
            }
        }
        // The decode steps after each sequence's first token, which the prefill yields.
        "aggregate_decode_tokens_per_s" if mlx_benchmark_batch(row).is_some() => {
            let prompt = row
                .prompt_tokens
                .trim()
                .parse::<u64>()
                .map_err(|_| "mlx_lm.benchmark row without -p: fill in prompt_tokens".to_string())?;
            (prompt, notes_generated(row).unwrap_or(128).saturating_sub(1).max(1))
        }
        "aggregate_decode_tokens_per_s" if is_batched_bench(row) => batched_bench_tokens(row, all, assumptions)?,
        "aggregate_decode_tokens_per_s" => serve_tokens(row, all, assumptions),
        // Time per output token: the decode steps of one request, or the serving run of N at
        // once; the request's lengths as a serving row reads them.
        "tpot_ms" => serve_tokens(row, all, assumptions),
        "ttft_p50_s" | "ttft_p99_s" => {
            row.prompt_tokens
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("{} row without prompt length: fill in prompt_tokens", row.metric))?;
            serve_tokens(row, all, assumptions)
        }
        // The other serving metrics: the serving run of the row's concurrency.
        m if SERVING_METRICS.contains(&m) => serve_tokens(row, all, assumptions),
        other => return Err(format!("metric `{other}` is not predicted (catalog fact or not modelled); predicted: {METRICS}")),
    })
}

/// The prompts a serving benchmark sent, where its notes say (`64 prompts`, `--num-prompts 64`,
/// `num_prompts=64`).
fn notes_prompts(row: &MeasurementRow) -> Option<i64> {
    let words: Vec<&str> = row.notes.split(|c: char| c.is_whitespace() || c == ',' || c == ';').filter(|w| !w.is_empty()).collect();
    let number = |w: &str| w.parse::<i64>().ok().filter(|n| *n > 0);
    words
        .windows(2)
        .find_map(|w| match (w[0], w[1].to_ascii_lowercase().as_str()) {
            (n, "prompts") => number(n),
            ("--num-prompts" | "num_prompts", n) => number(n),
            _ => None,
        })
        .or_else(|| words.iter().find_map(|w| w.strip_prefix("num_prompts=").or_else(|| w.strip_prefix("--num-prompts=")).and_then(number)))
}

/// Prompt and output lengths of a serving row: the prompt column, and "N generated tokens" in
/// the notes; 128 each where the row is silent (said in the assumptions).
fn serve_tokens(row: &MeasurementRow, all: &[MeasurementRow], assumptions: &mut Vec<String>) -> (u64, u64) {
    let prompt = row.prompt_tokens.trim().parse::<u64>().ok().filter(|&p| p > 0).unwrap_or_else(|| {
        assumptions.push("prompt length not published: assumed 128".into());
        128
    });
    let generate = match notes_generated(row) {
        Some(g) => g,
        // A row of the same benchmark run (same source, system, model, quant, engine, metric)
        // that says it: one benchmark sends one request shape at every concurrency.
        None => match all.iter().filter(|r| r.id != row.id && same_run(r, row) && r.metric == row.metric).find_map(notes_generated) {
            Some(g) => {
                assumptions.push(format!("generated tokens: {g}, as the other rows of its benchmark run say"));
                g
            }
            None => {
                assumptions.push("generated tokens not published: assumed 128".into());
                128
            }
        },
    };
    (prompt, generate)
}

/// The token ids `llama-batched-bench` feeds, by the tool's version. Up to mid-September 2025
/// every prompt and decoded token was id 0 (`common_batch_add(batch, 0, pp + i, { j }, true)`
/// in `tools/batched-bench/batched-bench.cpp` as vendored in llama-cpp-python 0.3.16,
/// 2025-08-15, and xllamacpp 0.2.1, 2025-09-13; FACTS.md), so the B sequences were identical
/// and routed to the same experts. From late September 2025 each one is a random id,
/// `get_token_rand()` = `std::rand() % n_vocab` (the same file as vendored in xllamacpp 0.2.2,
/// 2025-09-29, 0.2.3, 2025-10-14, and llama-cpp-python 0.3.17, 2026-03-23): the sequences
/// differ and route as independent requests do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchedBenchTokens {
    /// Token id 0 everywhere: a row dated before 2025-09-13.
    AllZero,
    /// Random ids: a row dated from 2025-09-13 on.
    Random,
    /// No date in the row: the tool as it is now (random ids).
    RandomAssumed,
}

impl BatchedBenchTokens {
    /// The assumption a row read this way carries.
    fn reading(self) -> &'static str {
        match self {
            Self::AllZero => {
                "llama-batched-bench before 2025-09-13: every token id 0, so the B sequences are identical and route to the same experts (batched-bench.cpp as vendored in llama-cpp-python 0.3.16); S_TG = B x TG / T_TG"
            }
            Self::Random => {
                "llama-batched-bench from late September 2025: every token a random id (`get_token_rand`, batched-bench.cpp as vendored in xllamacpp 0.2.2+), so the B sequences route as independent requests; S_TG = B x TG / T_TG"
            }
            Self::RandomAssumed => {
                "llama-batched-bench of unstated date: read as the tool is now, every token a random id (`get_token_rand` since late September 2025), so the B sequences route as independent requests; S_TG = B x TG / T_TG"
            }
        }
    }
}

/// The first date llama-batched-bench is known to draw random tokens on or after (xllamacpp
/// 0.2.1 of 2025-09-13 still feeds id 0; 0.2.2 of 2025-09-29 draws them): a row dated earlier
/// is read with id 0, one dated in the fortnight between as the newer tool.
const BATCHED_BENCH_RANDOM_FROM: &str = "2025-09-13";

/// How a `llama-batched-bench` row's tokens were drawn: by the latest `YYYY-MM-DD` date its
/// source or notes carry (a test date, a build's system info), else as the tool is now.
fn batched_bench_tokens_drawn(row: &MeasurementRow) -> BatchedBenchTokens {
    let text = format!("{} {}", row.source, row.notes);
    match iso_dates(&text).into_iter().max() {
        None => BatchedBenchTokens::RandomAssumed,
        Some(d) if d < BATCHED_BENCH_RANDOM_FROM => BatchedBenchTokens::AllZero,
        Some(_) => BatchedBenchTokens::Random,
    }
}

/// Whether a row was timed by `mlx_lm.benchmark` or `mlx_lm.generate` (named in its source, as
/// `import` writes it, or in its notes): `stream_generate`'s rates, or `batch_generate`'s.
fn is_mlx_benchmark(row: &MeasurementRow) -> bool {
    ["mlx_lm.benchmark", "mlx_lm.generate"].iter().any(|t| row.source.contains(t) || row.notes.contains(t))
}

/// The batch of an `mlx_lm.benchmark` row of several sequences (its prompt or generation
/// rate), read as that tool's `batch_generate` run; `None` for any other row.
fn mlx_benchmark_batch(row: &MeasurementRow) -> Option<i64> {
    let metric = matches!(row.metric.as_str(), "prefill_tokens_per_s" | "aggregate_decode_tokens_per_s");
    let batch = row.concurrency.trim().parse::<i64>().ok().filter(|&b| b > 1)?;
    (metric && is_mlx_benchmark(row)).then_some(batch)
}

/// Whether a `llama-batched-bench` row shared one prompt among its sequences (`-pps`, printed as
/// `is_pp_shared = 1`).
fn shared_prompt(row: &MeasurementRow) -> bool {
    let text = row.notes.replace(' ', "");
    text.contains("is_pp_shared=1") || row.notes.split(|c: char| c.is_whitespace() || c == ',' || c == ';').any(|w| w == "-pps")
}

/// Whether a row was measured by `llama-batched-bench` (named in its notes).
fn is_batched_bench(row: &MeasurementRow) -> bool {
    row.notes.contains("llama-batched-bench") || row.engine.to_ascii_lowercase().replace(['_', '.'], "-").contains("batched-bench")
}

/// The `llama-batched-bench` columns a row can hold: S_TG (as a batch's aggregate or, at B = 1,
/// as a decode rate) and S_PP.
const BATCHED_BENCH_METRICS: [&str; 3] = ["aggregate_decode_tokens_per_s", "decode_tokens_per_s", "prefill_tokens_per_s"];

/// The prompt a prefill row that publishes none is read at: llama-bench's default prefill test
/// (`-p 512`), the one most published tables hold.
const UNPUBLISHED_PREFILL_PROMPT: u64 = 512;

/// The rate metrics SGLang's `bench_one_batch_server` prints.
const ONE_BATCH_METRICS: [&str; 3] = ["decode_tokens_per_s", "aggregate_decode_tokens_per_s", "prefill_tokens_per_s"];

/// `bench_one_batch_server`'s defaults (sglang 0.5.3 `bench_one_batch_server.py` `BenchArgs`:
/// `input_len` 1024, `output_len` 16), for rows that do not publish their lengths.
const ONE_BATCH_DEFAULT_LENGTHS: (u64, u64) = (1024, 16);

/// How a `bench_one_batch_server` row of batch `b` is read (the assumption every such row carries).
fn one_batch_reading(b: i64) -> String {
    format!(
        "SGLang's bench_one_batch_server at batch {b} (sglang 0.5.3 `run_one_case`): the {b} prompts sent as one batch, prefilled, then decoded together; prefill rate = {b} x input_len / TTFT of the batch's last request, decode rate = {b} x output_len / (latency - that TTFT), prefill excluded"
    )
}

/// Whether a row reports SGLang's `bench_one_batch_server` rates: its notes name the tool, or
/// it is an SGLang row of an LMSYS review, whose "X tps prefill / Y tps decode at batch B"
/// pairs are that tool's input and output throughput (the tool of the SGLang team, printing
/// exactly that pair; inferred where the review does not name it, said in the assumptions).
fn is_one_batch_server(row: &MeasurementRow) -> bool {
    let sglang = row.engine.trim().to_ascii_lowercase().starts_with("sglang");
    row.notes.contains("bench_one_batch") || (sglang && (row.source.contains("lm-sys") || row.source.contains("LMSYS")))
}

/// Input and output lengths of a `bench_one_batch_server` row: the prompt column and the
/// notes' generated tokens, else the tool's defaults (said in `assumptions` when given).
fn one_batch_lengths(row: &MeasurementRow, assumptions: Option<&mut Vec<String>>) -> (u64, u64) {
    let (default_in, default_out) = ONE_BATCH_DEFAULT_LENGTHS;
    let prompt = row.prompt_tokens.trim().parse::<u64>().ok().filter(|&p| p > 0);
    let output = notes_generated(row);
    if let Some(a) = assumptions {
        if prompt.is_none() {
            a.push(format!("input length not published: bench_one_batch_server's default {default_in}"));
        }
        if output.is_none() {
            a.push(format!("output length not published: bench_one_batch_server's default {default_out}"));
        }
    }
    (prompt.unwrap_or(default_in), output.unwrap_or(default_out))
}

/// Prompt (`-npp`, the prompt column) and decode (`-ntg N` or `TG=N` in the notes, or a row of
/// the same run that says it) lengths of a `llama-batched-bench` row.
fn batched_bench_tokens(row: &MeasurementRow, all: &[MeasurementRow], assumptions: &mut Vec<String>) -> Result<(u64, u64), String> {
    let prompt = batched_bench_prompt(row)?;
    let tg = |r: &MeasurementRow| {
        let words: Vec<&str> = r.notes.split(|c: char| c.is_whitespace() || c == ',' || c == ';').filter(|w| !w.is_empty()).collect();
        words
            .windows(2)
            .find(|w| w[0] == "-ntg")
            .and_then(|w| w[1].parse::<u64>().ok())
            .or_else(|| words.iter().find_map(|w| w.strip_prefix("TG=")?.parse::<u64>().ok()))
    };
    let generate = match tg(row) {
        Some(g) => g,
        None => {
            let g = all.iter().filter(|r| r.id != row.id && same_run(r, row) && is_batched_bench(r)).find_map(tg);
            let g = g.ok_or_else(|| "batched-bench row without -ntg: say `-ntg N` or `TG=N` in the notes".to_string())?;
            assumptions.push(format!("-ntg {g}, as the other rows of its benchmark run say"));
            g
        }
    };
    Ok((prompt, generate))
}

/// A `llama-batched-bench` row's prompt per sequence (`-npp`, the prompt column).
fn batched_bench_prompt(row: &MeasurementRow) -> Result<u64, String> {
    row.prompt_tokens.trim().parse::<u64>().map_err(|_| "batched-bench row without -npp: fill in prompt_tokens".to_string())
}

/// "N generated tokens" in a row's notes (or a client's request size: `N tokens/request`, `N
/// max tokens`, `max_tokens N`), or the benchmark's test name `tgN`.
fn notes_generated(row: &MeasurementRow) -> Option<u64> {
    let words: Vec<&str> = row.notes.split_whitespace().collect();
    let number = |w: &str| w.trim_matches(|c: char| !c.is_ascii_digit()).parse::<u64>().ok();
    let spelled = words.windows(3).find(|w| w[1] == "generated" && w[2].starts_with("tokens")).and_then(|w| w[0].parse::<u64>().ok());
    // What a serving benchmark's client asks for: `300 tokens/request`, `256 tokens per
    // request`, `256 max tokens`, `max_tokens 256` / `max_tokens=256` (each request generates
    // that many: the benchmarks ban or ignore an early end).
    let per_request = || {
        words.windows(3).find_map(|w| {
            let unit = w[1].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            match unit {
                "tokens/request" | "tokens/req" => number(w[0]),
                "tokens" if w[2].starts_with("per") => number(w[0]),
                "max" if w[2].starts_with("tokens") => number(w[0]),
                _ => None,
            }
        })
    };
    let max_tokens = || {
        words.iter().enumerate().find_map(|(i, w)| {
            let w = w.to_ascii_lowercase();
            let rest = w.strip_prefix("max_tokens").or_else(|| w.strip_prefix("--max-tokens"))?;
            match rest.trim_start_matches(['=', ':']) {
                "" => words.get(i + 1).and_then(|n| number(n)),
                n => number(n),
            }
        })
    };
    let spelled = spelled.or_else(per_request).or_else(max_tokens);
    // A benchmark's own test name: llama-benchy and llama-bench write `tg128` for 128 tokens.
    let test = || {
        words
            .iter()
            .find_map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric()).strip_prefix("tg").and_then(|n| n.parse::<u64>().ok()))
    };
    spelled.or_else(test).filter(|&g| g > 0)
}

/// Whether two rows come from one benchmark run: same system, memory mix, model, quant, engine
/// and source (the quant's and the source's parenthesised detail aside: a page's first row often
/// names the file, `mlx-4bit (mlx-community/Qwen3-30B-A3B-4bit)`, and the next ones only its
/// format).
fn same_run(a: &MeasurementRow, b: &MeasurementRow) -> bool {
    a.system == b.system
        && a.node_mix == b.node_mix
        && a.model == b.model
        && label_stem(&a.quant) == label_stem(&b.quant)
        && a.engine == b.engine
        && label_stem(&a.source) == label_stem(&b.source)
}

/// The `[engine]` options a row's notes are silent on but the other rows of its benchmark run
/// state (same source up to its parenthesised detail, same system and engine: one page of results
/// from one command line; ggml-org's `benches/dgx-spark.md` gives `-ub 2048` on its tg rows
/// only, and its pp rows ran with it), with the id of a row that states each. An option the
/// stating rows disagree on is not taken: the row keeps the runtime's default.
fn run_options(row: &MeasurementRow, all: &[MeasurementRow], engine: &dyn EngineRuntime) -> Vec<(&'static str, toml::Value, String)> {
    let own: Vec<&str> = engine.measurement_options(&row_text(row)).iter().map(|o| o.0).collect();
    let mut stated: Vec<(&'static str, toml::Value, String)> = Vec::new();
    let mut disputed: Vec<&str> = Vec::new();
    let same_invocation = |r: &&MeasurementRow| {
        r.id != row.id && label_stem(&r.source) == label_stem(&row.source) && r.system == row.system && r.engine == row.engine
    };
    for sibling in all.iter().filter(same_invocation) {
        for (k, v) in engine.measurement_options(&row_text(sibling)) {
            match stated.iter().find(|o| o.0 == k) {
                Some(o) if o.1 != v => disputed.push(k),
                Some(_) => {}
                None if !own.contains(&k) => stated.push((k, v, sibling.id.clone())),
                None => {}
            }
        }
    }
    stated.retain(|o| !disputed.contains(&o.0));
    stated
}

/// A row's engine label, source and notes together: what its benchmark's command line and
/// setup are read from (the Strix Halo tables name the backend as the engine, `rocm-7.1`;
/// Geerling's source names it, `(llama-bench tg128, Vulkan)`).
fn row_text(row: &MeasurementRow) -> String {
    format!("{}; {}; {}", row.engine, row.source, row.notes)
}

/// Whether a metric is a wall-power figure the twin predicts.
fn is_power(metric: &str) -> bool {
    POWER_METRICS.contains(&metric)
}

/// Power metrics: peak during the benchmark (no suffix) or a phase's average.
const POWER_METRICS: [&str; 6] =
    ["node_power_w", "cluster_power_w", "node_power_w_decode", "cluster_power_w_decode", "node_power_w_prefill", "cluster_power_w_prefill"];

/// A label (a source, a quant) without its parenthesised detail: rows of one benchmark run
/// share it.
fn label_stem(s: &str) -> &str {
    s.split('(').next().unwrap_or("").trim()
}

/// The longest prompt among rows of the same benchmark run as `row`.
fn sibling_prompt(row: &MeasurementRow, all: &[MeasurementRow]) -> Option<u64> {
    all.iter().filter(|r| same_run(r, row)).filter_map(|r| r.prompt_tokens.trim().parse::<u64>().ok()).max()
}

/// A cluster HPL row as a scenario: the nodes over the row's fabric (cabled as the fabric's
/// first topology: a switch for Ethernet, a mesh for Thunderbolt), N, NB and grid by the
/// top500-benchmark convention.
fn hpl_scenario(
    row: &MeasurementRow,
    nodes: &[String],
    n: usize,
    mut assumptions: Vec<String>,
) -> Result<(ScenarioBuilder, Vec<String>), String> {
    if row.metric != "hpl_gflops" && !is_power(&row.metric) {
        return Err(format!("metric `{}` is not predicted for HPL", row.metric));
    }
    let fabric_word = first_word(&row.fabric);
    let fabric = crate::catalog::catalog().fabric(fabric_word).ok_or_else(|| format!("fabric `{fabric_word}` is not in the catalog"))?;
    let topology = fabric.topologies.first().map(|t| t.id()).unwrap_or("switch");
    if n > 1 && row.fabric.contains("not stated") {
        assumptions.push(format!("fabric not stated: assumed {fabric_word}"));
    }
    let mut b = ScenarioBuilder::new(format!("{}.toml", row.id));
    b.name(row.id.clone()).seed(1).nodes(nodes).fabric(fabric_word).topology(topology);
    b.set("workload.kind", &toml::Value::String("hpl".into())).map_err(|e| e.message)?;
    Ok((b, assumptions))
}

/// Whether a row's model routes its FFN through experts (a preset's spec, or a `config: PATH`
/// that names an expert count); false when the config cannot be read (its error comes later).
fn row_is_moe(model: &RowModel) -> bool {
    match model {
        RowModel::Preset(id) => crate::catalog::catalog().model(id).is_some_and(|(_, spec)| spec.moe.is_some()),
        RowModel::Config(path) => crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|v| crate::llm::ModelSpec::from_hf_config("row", "row", &v).ok())
            .is_some_and(|spec| spec.moe.is_some()),
    }
}

/// Whether a row's model ships its routed experts in MXFP4: a preset whose checkpoint does
/// (gpt-oss), or a `config: PATH` whose `quantization_config.quant_method` is `mxfp4`.
fn ships_mxfp4_experts(model: &RowModel) -> bool {
    match model {
        RowModel::Preset(id) => crate::catalog::catalog().ships_mxfp4_experts(id),
        RowModel::Config(path) => crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|v| crate::llm::hf_quant::declares_mxfp4(&v)),
    }
}

/// Whether a row's quant label names a 16-bit file: `F16`, `bf16` (every spelling
/// [`crate::catalog::Catalog::is_sixteen_bit`] knows), or `mxfp4` with a 16-bit word in its
/// brackets (`mxfp4 (f16 label in llama-bench)`: the file llama-bench types F16).
fn sixteen_bit_label(raw: &str) -> bool {
    let cat = crate::catalog::catalog();
    let label = quant_label(raw);
    if cat.is_sixteen_bit(&label) {
        return true;
    }
    let bracket = raw.split_once('(').map_or("", |(_, b)| b);
    label == "mxfp4" && bracket.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| !w.is_empty() && cat.is_sixteen_bit(w))
}

/// The quantization preset a row's label means on its engine, with what was assumed to read it.
/// A 16-bit label of a model that ships MXFP4 experts (gpt-oss) on a GGUF runtime is the
/// `mxfp4-f16` file (llama.cpp's converter keeps the experts MXFP4); other labels go through
/// the catalog's reader, and a GGUF row that does not say its type gets a guessed one.
fn resolve_quant(
    row: &MeasurementRow,
    all: &[MeasurementRow],
    engine: &dyn EngineRuntime,
    model: &RowModel,
    assumptions: &mut Vec<String>,
) -> Result<String, String> {
    use crate::catalog::names::{MXFP4_F16, MXFP4_F16_WHY};
    let family = engine.kernels().format();
    if family == QuantFamily::Gguf && sixteen_bit_label(&row.quant) && ships_mxfp4_experts(model) {
        assumptions.push(format!("quant `{}` read as {MXFP4_F16}: {MXFP4_F16_WHY}", row.quant.trim()));
        return Ok(MXFP4_F16.into());
    }
    let q = quant_label(&row.quant);
    // The labels people write, through the catalog's one reader (`Catalog::find_quant`): a
    // preset or a label of one, else a bit width read in the engine's format family.
    match crate::catalog::catalog().find_quant(&q, family) {
        Ok(found) if found.by_width => {
            assumptions.extend(found.assumed);
            return Ok(found.id);
        }
        Ok(found) if !row.quant.contains("unknown") => {
            assumptions.extend(found.assumed);
            if row.quant.contains("inferred") {
                assumptions.push(format!("quant {} inferred by the data set", found.id));
            }
            return Ok(found.id);
        }
        Err(e @ QuantNameError::NoSingleFormat { .. }) => {
            // A width with its format in brackets (`INT4 (AWQ)`, `4-bit (GPTQ)`): the format.
            let bracket = row.quant.split_once('(').map_or("", |(_, b)| b.trim_end_matches(')'));
            let named = bracket
                .split(|c: char| c.is_whitespace() || c == ',')
                .find_map(|w| crate::catalog::catalog().find_quant(w, family).ok().filter(|q| !q.by_width).map(|q| q.id));
            return named.ok_or_else(|| format!("quant `{}`: {e}", row.quant.trim()));
        }
        Ok(_) | Err(QuantNameError::Unknown(_)) => {}
    }
    let q = q.as_str();
    // The weights as the model's makers release them (`native int4`, Kimi K2's own INT4): the
    // preset's release format (its `default_quant`), said.
    if matches!(q, "native" | "original" | "official")
        && let RowModel::Preset(id) = model
        && let Some((preset, _)) = crate::catalog::catalog().model(id)
    {
        let own = preset.default_quant.clone();
        assumptions.push(format!("quant `{}`: the model's own release format, {own}", row.quant.trim()));
        return Ok(own);
    }
    let unstated = matches!(q, "" | "unknown" | "gguf");
    // A row that leaves the quant blank but names the checkpoint in its model column
    // (`mlx-community/Qwen3-30B-A3B-4bit`, `unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M`): the format the
    // checkpoint's name ends with, as the quant column would be read.
    if unstated && let Some(found) = model_label_quant(&row.model, family) {
        assumptions.push(format!(
            "quant not stated: {}, as the checkpoint named in the model column (`{}`) says",
            found.id,
            row.model.trim()
        ));
        assumptions.extend(found.assumed);
        return Ok(found.id);
    }
    // gpt-oss: released with MXFP4 experts, which the files people run keep (FACTS.md: ggml-org's
    // gpt-oss-120b-GGUF, mlx-community's MXFP4-Q8, vLLM's native MXFP4), so an unstated quant is
    // that format on every runtime, not a K-quant.
    if unstated && ships_mxfp4_experts(model) {
        assumptions
            .push("quant not stated: assumed mxfp4, the model's own MXFP4 experts, as the files people run keep them (FACTS.md)".into());
        return Ok("mxfp4".into());
    }
    // An MLX runtime's row that does not say its format: MLX's default conversion, affine 4-bit
    // in groups of 64 (`mlx_lm.convert -q`: mlx-lm 0.32.2 `utils.py` `defaults_for_mode`,
    // "affine": (64, 4)), the format of the mlx-community files people run.
    if family == QuantFamily::Mlx && unstated {
        assumptions.push(format!("{GUESSED_MLX} assumed mlx-4bit (mlx_lm.convert's default: affine 4-bit, groups of 64)"));
        return Ok("mlx-4bit".into());
    }
    // A GGUF runtime's row that does not say its type (`unknown`, `gguf 4-bit`, empty) gets a
    // guessed one; any other label is one the twin does not know.
    if family != QuantFamily::Gguf || !unstated {
        return Err(format!(
            "quant `{}` unknown: name a quantization preset ({})",
            row.quant,
            crate::catalog::catalog().quant_ids().join(", ")
        ));
    }
    // Unknown GGUF quant: same bit class as the MLX quant of exo runs of the same system and
    // model, else Q4_K_M, the most common GGUF type of the models people run.
    let exo_rows = EngineKind::Exo.behaviour().measurement_names();
    let sibling = all
        .iter()
        .find(|r| r.system == row.system && r.model == row.model && exo_rows.contains(&r.engine.as_str()))
        .map(|r| first_word(&r.quant).to_string());
    let (pick, why) = match sibling.as_deref() {
        Some("mlx-8bit") => ("q8_0", "bit class of the exo runs of the same model"),
        Some(_) => ("q4_k_m", "bit class of the exo runs of the same model"),
        None => ("q4_k_m", "the usual GGUF type; no run of the same model says more"),
    };
    assumptions.push(format!("GGUF quant not published: assumed {pick} ({why})"));
    Ok(pick.to_string())
}

/// The quantization a row's model column names when it is a checkpoint's repository, tag or
/// file (`mlx-community/Qwen3-30B-A3B-4bit`, `qwen3:30b-a3b-q8_0`, `..-Q8_0.gguf`): the format
/// its name ends with; `None` for a plain model name or a name that ends with no format.
fn model_label_quant(model: &str, family: QuantFamily) -> Option<crate::catalog::names::QuantName> {
    let model = model.trim();
    if !(model.contains('/') || model.contains(':') || model.to_lowercase().ends_with(".gguf")) {
        return None;
    }
    crate::catalog::catalog().find_quant(model, family).ok()
}

/// A row turned into a scenario, ready to predict under any profile.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The row.
    pub row: MeasurementRow,
    /// Its scenario.
    pub scenario: scenario::Scenario,
    /// Assumptions made for unknowns.
    pub assumptions: Vec<String>,
    /// Why the row is predicted but not fitted, if it is not: the twin reads it with kernels
    /// of a later software build than the one measured ([`build_mismatch`]), so fitting it
    /// would move shared parameters to absorb a mechanism the twin does not have.
    pub not_fitted: Option<String>,
}

/// The first release date, `YYYY-MM-DD`, of llama.cpp builds whose ROCm backend runs RDNA3
/// GEMMs on WMMA MMQ tiles for every batch ([`crate::engine::cost::ExpertRowTile::ROCM_MMQ`]):
/// xllamacpp 0.2.6 (2025-11-29) still ran steps of 64+ rows through hipBLAS or per-expert dp4a
/// MMQ, 0.2.7 (2025-12-20) WMMA MMQ.
const ROCM_WMMA_MMQ_FROM: &str = "2025-12-01";

/// The first release date, `YYYY-MM-DD`, of llama.cpp builds whose ROCm MMQ picks a MoE step's
/// tile width on RDNA against the rows each expert holds on average
/// ([`crate::engine::cost::ExpertRowTile::ROCM_MMQ_PER_EXPERT`]): xllamacpp 2026.9.11063
/// (2026-09-21) has it, 2026.9.10809 (2026-09-06) does not.
const ROCM_TILES_PER_EXPERT_FROM: &str = "2026-09-21";

/// Whether an `[engine]` option a row states is llama.cpp's ROCm backend.
fn is_rocm_backend(key: &str, value: &toml::Value) -> bool {
    key == "engine.backend" && value.as_str() == Some("rocm")
}

/// Whether a row is dated (every `YYYY-MM-DD` in its source and notes) before `from`; an undated
/// row is read as the tools are now.
fn dated_before(row: &MeasurementRow, from: &str) -> bool {
    let text = row_text(row);
    let dates = iso_dates(&text);
    !dates.is_empty() && dates.iter().all(|d| *d < from)
}

/// Why a row the twin reads with a later build's kernels than it measured should not be
/// fitted, if so: a ROCm row of llama.cpp dated (every `YYYY-MM-DD` in its source and notes)
/// before `ROCM_WMMA_MMQ_FROM` whose metric runs multi-row steps (prefill, TTFT, batched
/// decode; one-row decode runs the same mat-vec in every build).
pub fn build_mismatch(row: &MeasurementRow, scenario: &scenario::Scenario) -> Option<String> {
    let rocm = scenario.engine.kind.runtime() == crate::engine::Runtime::LlamaCpp
        && scenario.engine.llama_backend == crate::engine::LlamaBackend::Rocm;
    (rocm && dated_before(row, ROCM_WMMA_MMQ_FROM) && row.metric != "decode_tokens_per_s").then(|| {
        format!(
            "predicted, not fitted: a llama.cpp ROCm build before {ROCM_WMMA_MMQ_FROM} (steps of 64+ rows ran per expert through hipBLAS or dp4a MMQ), read with the later WMMA MMQ tiles"
        )
    })
}

/// Every `YYYY-MM-DD` date of the 1900s or 2000s in a text (not inside a longer run of digits).
fn iso_dates(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let shape = |w: &[u8]| {
        w.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
            && matches!(&w[..2], b"19" | b"20")
    };
    (0..b.len().saturating_sub(9))
        .filter(|&i| shape(&b[i..i + 10]))
        .filter(|&i| (i == 0 || !b[i - 1].is_ascii_digit()) && b.get(i + 10).is_none_or(|c| !c.is_ascii_digit()))
        .map(|i| &text[i..i + 10])
        .collect()
}

/// Turns rows into scenarios; rows that cannot be predicted are returned with the reason.
pub fn prepare(rows: &[MeasurementRow], profile: &Profile) -> (Vec<Prepared>, Vec<SkippedRow>) {
    prepare_in(rows, profile, None)
}

/// [`prepare`] for the rows of a CSV in `csv_dir` (see [`row_scenario_in`]).
pub fn prepare_in(rows: &[MeasurementRow], profile: &Profile, csv_dir: Option<&Path>) -> (Vec<Prepared>, Vec<SkippedRow>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for row in rows {
        let (builder, mut assumptions) = match row_scenario_in(row, rows, csv_dir) {
            Ok(x) => x,
            Err(reason) => {
                skipped.push(SkippedRow { id: row.id.clone(), reason });
                continue;
            }
        };
        let sc = match builder.build() {
            Ok(s) => s,
            Err(e) => {
                skipped.push(SkippedRow { id: row.id.clone(), reason: e.message });
                continue;
            }
        };
        let (sc, first) = match estimate(&sc, profile) {
            Err(e) if e.kind() == crate::scenario::ErrorKind::DoesNotFit && guessed_quant(&assumptions) => {
                let guessed = sc.quant.id.clone();
                let (said, list, whose) = if sc.quant.family == QuantFamily::Mlx {
                    (GUESSED_MLX, &SMALLER_MLX_GUESSES[..], "MLX's affine widths")
                } else {
                    (GUESSED_GGUF, &SMALLER_GGUF_GUESSES[..], "llama.cpp's common types")
                };
                match smaller_guess_that_fits(&builder, profile, &guessed, list) {
                    Some((smaller, quant, est)) => {
                        assumptions.retain(|a| !a.starts_with(said));
                        assumptions.push(format!(
                            "{said} assumed {quant}: {guessed} does not fit the row's machines, and the run was made, so its file was smaller; {quant} is the largest of {whose} ({}) that fits",
                            list.join(", ")
                        ));
                        (smaller, est)
                    }
                    None => (sc, Err(e)),
                }
            }
            est => (sc, est),
        };
        // A row the twin refuses (the model does not fit, an illegal split, a run with no
        // answer for the metric) is listed with the reason, never an error that stops the
        // other rows.
        let refused = match first {
            // A profile without the row's chip is the profile's gap, not the row's: it stays
            // an error of the whole run (naming the chip), as before.
            Err(e) if e.kind() == crate::scenario::ErrorKind::Uncalibrated => None,
            Err(e) => Some(format!("the twin refuses the row's scenario: {e}")),
            Ok(est) => {
                // The plan raises a Mac's wired limit where the model needs it, as `run` and
                // `plan` do; the row says so.
                if let Some(cmd) = est.memory.iter().find_map(|m| m.raise_wired_limit.clone()) {
                    assumptions.push(format!("fits only with the wired limit raised: {cmd}"));
                }
                metric_value(row, &est).err().map(|e| e.to_string())
            }
        };
        if let Some(reason) = refused {
            skipped.push(SkippedRow { id: row.id.clone(), reason });
            continue;
        }
        let not_fitted = build_mismatch(row, &sc);
        assumptions.extend(not_fitted.clone());
        out.push(Prepared { row: row.clone(), scenario: sc, assumptions, not_fitted });
    }
    (out, skipped)
}

/// How a row whose GGUF type is unstated says the type it was given.
const GUESSED_GGUF: &str = "GGUF quant not published:";

/// How a row whose MLX format is unstated says the format it was given.
const GUESSED_MLX: &str = "MLX quant not published:";

/// The GGUF types tried, largest first, for a row whose type is unstated and whose model does
/// not fit its machines at the type guessed (Q4_K_M, or Q8_0 beside 8-bit exo runs):
/// llama.cpp's common K-quants, then the 2- and 1-bit i-quants people run the largest models at.
const SMALLER_GGUF_GUESSES: [&str; 5] = ["q4_k_m", "q3_k_m", "q2_k", "iq2_xxs", "iq1_s"];

/// The MLX formats tried below a guessed 4-bit one that does not fit (3 bits: the narrowest
/// affine width among the catalog's MLX formats).
const SMALLER_MLX_GUESSES: [&str; 2] = ["mlx-4bit", "mlx-3bit"];

/// Whether a row's GGUF type (Q4_K_M or the exo runs' bit class) or MLX format was guessed.
fn guessed_quant(assumptions: &[String]) -> bool {
    assumptions.iter().any(|a| a.starts_with(GUESSED_GGUF) || a.starts_with(GUESSED_MLX))
}

/// The row's scenario at the first type of `list` after the `guessed` one (all of them for a
/// guess outside it) that fits its machines, that type and the scenario's estimate; `None` when
/// none fits.
fn smaller_guess_that_fits(
    builder: &ScenarioBuilder,
    profile: &Profile,
    guessed: &str,
    list: &[&'static str],
) -> Option<(scenario::Scenario, &'static str, Result<crate::estimate::Estimate, crate::estimate::EstimateError>)> {
    let start = list.iter().position(|q| *q == guessed).map_or(0, |i| i + 1);
    list[start..].iter().copied().find_map(|quant| {
        let mut b = builder.clone();
        b.set("model.quant", &toml::Value::String(quant.into())).ok()?;
        let sc = b.build().ok()?;
        match estimate(&sc, profile) {
            Err(e) if e.kind() == crate::scenario::ErrorKind::DoesNotFit => None,
            est => Some((sc, quant, est)),
        }
    })
}

/// Why a prepared row could not be predicted.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// The estimator refused the row's scenario.
    #[error(transparent)]
    Estimate(#[from] crate::estimate::EstimateError),
    /// The row's metric is not one the twin predicts.
    #[error("metric `{0}` is not predicted")]
    Metric(String),
    /// The twin ran the row's scenario but has no answer for its metric (a serving run that
    /// decoded nothing in its window): the row is skipped with this reason, never scored as a
    /// prediction of 0.
    #[error("no result: {0}")]
    NoResult(String),
}

/// The twin's prediction of a prepared row's metric.
pub fn predict(p: &Prepared, profile: &Profile) -> Result<f64, RowError> {
    metric_value(&p.row, &estimate(&p.scenario, profile)?)
}

/// A row's metric read from the estimate of its scenario.
fn metric_value(row: &MeasurementRow, est: &crate::estimate::Estimate) -> Result<f64, RowError> {
    Ok(match row.metric.as_str() {
        "decode_tokens_per_s" | "aggregate_decode_tokens_per_s" if is_one_batch_server(row) => {
            // output throughput = B x output_len / (latency - TTFT of the last request): the
            // batch's output_len tokens each over its output_len - 1 decode steps.
            let (_, output) = one_batch_lengths(row, None);
            est.decode_tokens_per_s * output as f64 / output.saturating_sub(1).max(1) as f64
        }
        "decode_tokens_per_s" if per_request_decode(row) => served(est, |sv| sv.per_request_decode_tokens_per_s)?,
        "decode_tokens_per_s" => est.decode_tokens_per_s,
        "prefill_tokens_per_s" if concurrent_prompt_rate(row) => served(est, |sv| sv.batch_prompt_tokens_per_s)?,
        "prefill_tokens_per_s" => est.prefill_tokens_per_s,
        "tpot_ms" if est.tpot_ms.mean > 0.0 => est.tpot_ms.mean,
        "tpot_ms" => return Err(RowError::NoResult("the run decoded no token after the first".into())),
        "hpl_gflops" => est.hpl_gflops.ok_or_else(|| RowError::Metric(row.metric.clone()))?,
        "node_power_w" => est.node_peak_power_w.iter().cloned().fold(0.0, f64::max),
        "node_power_w_decode" => est.node_power_w.iter().cloned().fold(0.0, f64::max),
        "node_power_w_prefill" => est.node_prefill_power_w.iter().cloned().fold(0.0, f64::max),
        "cluster_power_w" => est.peak_power_w,
        "cluster_power_w_decode" => est.cluster_power_w,
        "cluster_power_w_prefill" => est.prefill_power_w,
        "ttft_s" if text_ttft(row) => served(est, |sv| sv.mean_ttft_text_s)?,
        "ttft_s" => est.ttft_s,
        m if SERVING_METRICS.contains(&m) => serving_value(row, est)?,
        "energy_j_per_token" => est.energy_j_per_token,
        // What the model holds: the weights and the KV cache of the busiest node (MLX's peak
        // memory counts its own allocations, not the process's), the runtime's allowance apart.
        "memory_gb" => est.memory.iter().map(|m| m.weights_gb + m.kv_cache_gb).fold(0.0, f64::max),
        "aggregate_decode_tokens_per_s" if is_batched_bench(row) || mlx_benchmark_batch(row).is_some() => est.decode_tokens_per_s,
        "aggregate_decode_tokens_per_s" if counts_from_first_token(row) => generation_rate(est)?,
        "aggregate_decode_tokens_per_s" => serve_rate(est)?,
        other => return Err(RowError::Metric(other.to_string())),
    })
}

/// A serving percentile or request rate ([`SERVING_METRICS`]) of a serving estimate, or why
/// there is none.
fn serving_value(row: &MeasurementRow, est: &crate::estimate::Estimate) -> Result<f64, RowError> {
    let Some(sv) = &est.serve else { return Err(RowError::NoResult("the scenario ran no serving workload".into())) };
    if sv.requests_completed == 0 {
        return Err(RowError::NoResult(format!("no request completed in the {} s window", sv.simulated_window_s)));
    }
    let value = match row.metric.as_str() {
        "ttft_p50_s" => sv.ttft_percentiles_s.p50,
        "ttft_p99_s" => sv.ttft_percentiles_s.p99,
        "tpot_p50_ms" => est.tpot_ms.p50,
        "tpot_p99_ms" => est.tpot_ms.p99,
        // No window to divide by reads 0: "no result" below.
        "requests_per_s" if sv.simulated_window_s > 0.0 => sv.requests_completed as f64 / sv.simulated_window_s,
        "requests_per_s" => 0.0,
        "total_tokens_per_s" => sv.total_tokens_per_s,
        "e2e_mean_s" => sv.mean_e2e_s,
        "e2e_p50_s" => sv.e2e_s.p50,
        "e2e_p99_s" => sv.e2e_s.p99,
        "itl_p50_ms" => sv.itl_ms.p50,
        "itl_p99_ms" => sv.itl_ms.p99,
        other => return Err(RowError::Metric(other.to_string())),
    };
    if value > 0.0 { Ok(value) } else { Err(RowError::NoResult(format!("the serving run has no {}", row.metric))) }
}

/// Whether a row is llama-benchy's TTFT, which times the first streamed text (`first_token_ts`
/// is set by the first `content` or `reasoning_content` delta, llama-benchy 0.3.5 `client.py`),
/// at any concurrency.
fn text_ttft(row: &MeasurementRow) -> bool {
    row.metric == "ttft_s" && counts_from_first_token(row)
}

/// Whether a row is the time to first token of several concurrent requests (a serving run's
/// TTFT, queueing included), not of one request's prefill.
fn concurrent_ttft(row: &MeasurementRow) -> bool {
    row.metric == "ttft_s" && concurrent(row)
}

/// Whether a row is one user's decode rate among `concurrency` users served at once (a
/// serving benchmark's per-request rate: llama-benchy's `t/s (req)`, "tok/s per user"), not a
/// batch benchmark's (llama-batched-bench, bench_one_batch_server, `mlx_lm.benchmark -b`).
fn per_request_decode(row: &MeasurementRow) -> bool {
    row.metric == "decode_tokens_per_s"
        && concurrent(row)
        && !is_batched_bench(row)
        && !is_one_batch_server(row)
        && mlx_benchmark_batch(row).is_none()
}

/// A serving estimate's figure `pick` (per-request decode rate, batch prompt rate, TTFT to the
/// first text: all 0 until a request completes), or why there is none.
fn served(est: &crate::estimate::Estimate, pick: fn(&crate::estimate::ServeMetrics) -> f64) -> Result<f64, RowError> {
    match &est.serve {
        Some(sv) if pick(sv) > 0.0 => Ok(pick(sv)),
        Some(sv) => Err(RowError::NoResult(format!("no request completed in the {} s window", sv.simulated_window_s))),
        None => Err(RowError::NoResult("the scenario ran no serving workload".into())),
    }
}

/// Whether a row is llama-benchy's prompt rate of several requests sent at once (its `pp t/s
/// (total)`), which a serving run of that batch predicts.
fn concurrent_prompt_rate(row: &MeasurementRow) -> bool {
    row.metric == "prefill_tokens_per_s" && concurrent(row) && counts_from_first_token(row)
}

/// Whether a row's `concurrency` is above 1.
fn concurrent(row: &MeasurementRow) -> bool {
    row.concurrency.trim().parse::<u64>().is_ok_and(|c| c > 1)
}

/// Whether a serving row was measured by a benchmark that starts its clock at the first token
/// and counts the tokens after each request's first: llama-benchy (its concurrent
/// `t/s (total)`, llama-benchy 0.3.5 `results.py`), named in the row's notes.
fn counts_from_first_token(row: &MeasurementRow) -> bool {
    row.notes.contains("llama-benchy")
}

/// A serving estimate's generation rate as llama-benchy defines it
/// ([`crate::estimate::ServeMetrics::generation_tokens_per_s`]), or why there is none.
pub fn generation_rate(est: &crate::estimate::Estimate) -> Result<f64, RowError> {
    let rate = serve_rate(est)?;
    let generation = est.serve.as_ref().map_or(0.0, |sv| sv.generation_tokens_per_s);
    Ok(if generation > 0.0 { generation } else { rate })
}

/// A serving estimate's aggregate decode rate, or why there is none.
pub fn serve_rate(est: &crate::estimate::Estimate) -> Result<f64, RowError> {
    let Some(sv) = &est.serve else { return Err(RowError::NoResult("the scenario ran no serving workload".into())) };
    if sv.aggregate_decode_tokens_per_s > 0.0 {
        return Ok(sv.aggregate_decode_tokens_per_s);
    }
    Err(RowError::NoResult(format!(
        "the serving run decoded no token in its {} s window ({} requests completed, {} rejected)",
        sv.simulated_window_s, sv.requests_completed, sv.requests_rejected
    )))
}

/// Predicts every row it can.
pub fn validate(rows: &[MeasurementRow], profile: &Profile) -> Report {
    let (prepared, mut skipped) = prepare(rows, profile);
    let mut out = Vec::new();
    for p in prepared {
        match predict(&p, profile) {
            Ok(v) => out.push(validated(&p, v)),
            Err(e) => skipped.push(SkippedRow { id: p.row.id.clone(), reason: e.to_string() }),
        }
    }
    let (mape_all, mape_decode) = summaries(&out);
    Report { mape_percent: mape_all, decode_mape_percent: mape_decode, rows: out, skipped }
}

/// A prediction as a report row.
pub fn validated(p: &Prepared, predicted: f64) -> ValidatedRow {
    let err = (predicted - p.row.value) / p.row.value * 100.0;
    ValidatedRow {
        id: p.row.id.clone(),
        metric: p.row.metric.clone(),
        measured: p.row.value,
        predicted: round3(predicted),
        error_percent: round3(err),
        assumptions: p.assumptions.clone(),
        p5: None,
        p95: None,
    }
}

/// Builds a report from rows.
pub fn report(rows: Vec<ValidatedRow>, skipped: Vec<SkippedRow>) -> Report {
    let (mape_percent, decode_mape_percent) = summaries(&rows);
    Report { mape_percent, decode_mape_percent, rows, skipped }
}

/// Keeps only the rows whose ids are in `keep`, recomputing the error summaries.
pub fn restrict(r: Report, keep: &std::collections::BTreeSet<&str>) -> Report {
    let rows: Vec<ValidatedRow> = r.rows.into_iter().filter(|x| keep.contains(x.id.as_str())).collect();
    let skipped = r.skipped.into_iter().filter(|x| keep.contains(x.id.as_str())).collect();
    let (mape_percent, decode_mape_percent) = summaries(&rows);
    Report { mape_percent, decode_mape_percent, rows, skipped }
}

pub(crate) fn summaries(rows: &[ValidatedRow]) -> (f64, f64) {
    let mape = |f: &dyn Fn(&ValidatedRow) -> bool| {
        let v: Vec<f64> = rows.iter().filter(|r| f(r)).map(|r| r.error_percent.abs()).collect();
        if v.is_empty() { 0.0 } else { round3(v.iter().sum::<f64>() / v.len() as f64) }
    };
    (mape(&|_| true), mape(&|r| r.metric == "decode_tokens_per_s"))
}

/// The report as a table.
pub fn table(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    // The 90% interval columns when the rows carry intervals (a profile with an uncertainty).
    let intervals = r.rows.iter().any(|x| x.p5.is_some());
    let _ = write!(s, "{:<24} {:<22} {:>10} {:>10} {:>8}", "id", "metric", "measured", "predicted", "error");
    let _ = if intervals { writeln!(s, " {:>10} {:>10}", "p5", "p95") } else { writeln!(s) };
    for row in &r.rows {
        let _ = write!(s, "{:<24} {:<22} {:>10.2} {:>10.2} {:>7.1}%", row.id, row.metric, row.measured, row.predicted, row.error_percent);
        let _ = match (row.p5, row.p95) {
            (Some(lo), Some(hi)) => {
                let outside = if (lo..=hi).contains(&row.measured) { "" } else { "  outside" };
                writeln!(s, " {lo:>10.2} {hi:>10.2}{outside}")
            }
            _ => writeln!(s),
        };
    }
    let _ = writeln!(s, "\nMAPE over {} rows: {:.1}%   (decode rows: {:.1}%)", r.rows.len(), r.mape_percent, r.decode_mape_percent);
    // What the data did not say and the scenario had to assume, once per distinct assumption.
    let mut assumed: Vec<(&str, Vec<&str>)> = Vec::new();
    for row in &r.rows {
        for a in &row.assumptions {
            match assumed.iter_mut().find(|(x, _)| x == a) {
                Some((_, ids)) => ids.push(&row.id),
                None => assumed.push((a, vec![&row.id])),
            }
        }
    }
    if !assumed.is_empty() {
        let _ = writeln!(s, "\nassumed where the data are silent:");
        for (a, ids) in &assumed {
            let _ = writeln!(s, "  {a}: {}", ids.join(", "));
        }
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(s, "\nskipped {} rows:", r.skipped.len());
        for k in &r.skipped {
            let _ = writeln!(s, "  {:<24} {}", k.id, k.reason);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";

    fn rows(body: &str) -> Vec<MeasurementRow> {
        parse_csv(&format!("{HEADER}{body}"), "t.csv").unwrap()
    }

    #[test]
    fn a_label_states_gpu_cores_only_next_to_the_word_gpu() {
        for (label, cores) in [
            ("M1 7-Core GPU 8GB", Some(7)),
            ("M2 Max 38-core GPU", Some(38)),
            ("MacBook Pro M3 Max (16c CPU, 30c GPU)", Some(30)),
            ("M4 Pro 20 cores GPU", Some(20)),
            ("M3 Pro 12-core CPU", None),
            ("m3-ultra-80c-512gb", None),
            ("Mac Studio M3 Ultra", None),
        ] {
            assert_eq!(label_gpu_cores(label), cores, "{label}");
        }
    }

    #[test]
    fn a_users_csv_as_written() {
        let rs = rows(
            "a,mac-studio-m3-ultra,1,512gb (assumed),llama-3.3-70b,Q4_K_M,ollama,none,none,,,decode_tokens_per_s,14,tok/s,me,\n\
             b,mac-studio-m3-ultra,2,2x 512GB,llama-3.3-70b,q4_k_m,llama-cpp-rpc,pipeline,eth-10g,,,decode_tokens_per_s,9,tok/s,me,\n\
             c,mac-studio-m3-ultra,2,512gb,llama-3.3-70b,q4_k_m,llama-cpp-rpc,pipeline,eth-10g,,,cluster_power_w,400,W,me,\n",
        );
        let (prepared, skipped) = prepare(&rs, &Profile::default_profile());
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(prepared.len(), 3);
        assert!(prepared[0].assumptions.iter().any(|a| a.contains("`512gb (assumed)` read as `512gb`")), "{:?}", prepared[0].assumptions);
        // Ethernet goes through a switch: one port and one cable per node.
        assert_eq!(prepared[1].scenario.topology, crate::hw::Topology::Switch);
        // A cluster power row without a phase is the whole cluster's peak over the run's phases.
        let est = estimate(&prepared[2].scenario, &Profile::default_profile()).unwrap();
        let got = predict(&prepared[2], &Profile::default_profile()).unwrap();
        assert_eq!(got, est.peak_power_w);
        assert!(got >= est.cluster_power_w && got > est.node_peak_power_w[0]);
    }

    #[test]
    fn a_rocm_row_older_than_the_modelled_kernels_is_predicted_and_not_fitted() {
        // The backend comes from the text (source or notes), or from another row of the run;
        // a ROCm prefill dated before December 2025 is read with the later WMMA MMQ tiles and
        // not fitted; its decode (one-row mat-vec in every build) is fitted; a 2026 ROCm
        // prefill and a Vulkan one are fitted.
        let fw = "framework-desktop-ai-max-395,1,128gb,qwen3-30b-a3b,q4_k_m,llama-cpp,none,none";
        let rs = rows(&format!(
            "old-pp,{fw},512,1,prefill_tokens_per_s,900,tok/s,kyuz0 (2025-11-19),llama-bench pp512\n\
             old-tg,{fw},,1,decode_tokens_per_s,80,tok/s,kyuz0 (2025-11-19),\"llama-bench tg128, ROCm 6.4.4\"\n\
             new-pp,{fw},512,1,prefill_tokens_per_s,900,tok/s,kyuz0 (2026-02-10),\"llama-bench pp512, ROCm 7.2\"\n\
             vk-pp,{fw},512,1,prefill_tokens_per_s,900,tok/s,geerling (2025-08-07),\"llama-bench pp512, Vulkan\"\n"
        ));
        let (prepared, skipped) = prepare(&rs, &Profile::default_profile());
        assert!(skipped.is_empty(), "{skipped:?}");
        let by = |id: &str| prepared.iter().find(|p| p.row.id == id).unwrap();
        assert_eq!(by("old-pp").scenario.engine.llama_backend, crate::engine::LlamaBackend::Rocm);
        assert!(by("old-pp").not_fitted.as_deref().is_some_and(|r| r.contains("before 2025-12-01")), "{:?}", by("old-pp").not_fitted);
        for id in ["old-tg", "new-pp", "vk-pp"] {
            assert_eq!(by(id).not_fitted, None, "{id}");
        }
        assert_eq!(by("vk-pp").scenario.engine.llama_backend, crate::engine::LlamaBackend::Vulkan);
        assert_eq!(iso_dates("a 2025-11-19; b12025-11-190 c 2026-02-10 2026-1-1 3000-01-01"), ["2025-11-19", "2026-02-10"]);
    }

    #[test]
    fn time_per_output_token_is_a_decode_step_alone_and_the_serving_runs_mean_at_concurrency() {
        let rs = rows(
            "one,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,1,tpot_ms,17,ms,me,200 generated tokens\n\
             rate,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,1,decode_tokens_per_s,58,tok/s,me,200 generated tokens\n\
             eight,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,tpot_ms,50,ms,me,200 generated tokens\n",
        );
        let profile = Profile::default_profile();
        let (prepared, skipped) = prepare(&rs, &profile);
        assert!(skipped.is_empty(), "{skipped:?}");
        let got = |id: &str| predict(prepared.iter().find(|p| p.row.id == id).unwrap(), &profile).unwrap();
        // One request: the mean decode step, the decode rate's inverse.
        assert!((got("one") * got("rate") / 1000.0 - 1.0).abs() < 0.01, "{} ms vs {} tok/s", got("one"), got("rate"));
        // Eight at once share each step: every request's tokens come slower.
        assert!(got("eight") > got("one"), "{} vs {}", got("eight"), got("one"));
        let eight = prepared.iter().find(|p| p.row.id == "eight").unwrap();
        assert!(eight.assumptions.iter().any(|a| a.contains("tpot_ms of 8 concurrent requests")), "{:?}", eight.assumptions);
    }

    #[test]
    fn generated_tokens_are_read_as_the_notes_write_them() {
        let notes = |n: &str| notes_generated(&rows(&format!("a,x,1,,m,q,e,none,none,,1,decode_tokens_per_s,1,tok/s,s,\"{n}\"\n"))[0]);
        for (text, want) in [
            ("200 generated tokens per request", Some(200)),
            ("--continuous-batching, 300 tokens/request, same prompt", Some(300)),
            ("256 tokens per request", Some(256)),
            ("a fork states 'Test: 5 prompts, 256 max tokens'", Some(256)),
            ("max_tokens=512", Some(512)),
            ("client max_tokens 64", Some(64)),
            ("--max-tokens 1024", Some(1024)),
            ("llama-bench tg128", Some(128)),
            ("5 prompts; 256 KiB frames", None),
            ("short prompts", None),
        ] {
            assert_eq!(notes(text), want, "{text}");
        }
    }

    #[test]
    fn a_silent_serving_row_takes_its_runs_request_size_whatever_detail_the_first_row_gives_its_quant() {
        // One results page: its first row names the file beside the format and states the
        // request size, the next row gives the format alone; a row of another format is another
        // run and keeps the default.
        let rs = rows(
            "c1,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,mlx-4bit (mlx-community/Qwen3-30B-A3B-4bit),vllm-mlx,none,none,,1,aggregate_decode_tokens_per_s,98,tok/s,docs (llm.md),\"Test: 5 prompts, 256 max tokens\"\n\
             c5,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,mlx-4bit,vllm-mlx,none,none,,5,aggregate_decode_tokens_per_s,233,tok/s,docs (guide),Batch column\n\
             q8,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,mlx-8bit,vllm-mlx,none,none,,5,aggregate_decode_tokens_per_s,150,tok/s,docs,Batch column\n",
        );
        let (prepared, skipped) = prepare(&rs, &Profile::default_profile());
        assert!(skipped.is_empty(), "{skipped:?}");
        let by = |id: &str| prepared.iter().find(|p| p.row.id == id).unwrap();
        assert!(
            by("c5").assumptions.iter().any(|a| a == "generated tokens: 256, as the other rows of its benchmark run say"),
            "{:?}",
            by("c5").assumptions
        );
        assert!(by("q8").assumptions.iter().any(|a| a == "generated tokens not published: assumed 128"), "{:?}", by("q8").assumptions);
    }

    #[test]
    fn a_silent_row_takes_the_ubatch_its_benchmark_run_states_unless_the_run_disagrees() {
        // One llama-bench page: the tg row states `-ub 2048`, the pp row is silent and ran
        // with it; a page whose rows state two values gives the silent row neither.
        let rs = rows(
            "tg,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,decode_tokens_per_s,59,tok/s,page A,\"-fa 1 -ub 2048\"\n\
             pp,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,2048,1,prefill_tokens_per_s,1937,tok/s,page A,llama-bench pp2048\n\
             b1,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,decode_tokens_per_s,59,tok/s,page B,-ub 256\n\
             b2,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,decode_tokens_per_s,59,tok/s,page B,-ub 1024\n\
             b3,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,2048,1,prefill_tokens_per_s,1937,tok/s,page B,\n",
        );
        let (prepared, skipped) = prepare(&rs, &Profile::default_profile());
        assert!(skipped.is_empty(), "{skipped:?}");
        let chunk = |id: &str| prepared.iter().find(|p| p.row.id == id).unwrap().scenario.engine.prefill_chunk;
        assert_eq!(chunk("tg"), 2048);
        assert_eq!(chunk("pp"), 2048);
        assert_eq!(chunk("b1"), 256);
        assert_eq!(chunk("b3"), 512, "disputed: llama.cpp's default n_ubatch");
        let pp = prepared.iter().find(|p| p.row.id == "pp").unwrap();
        assert!(pp.assumptions.iter().any(|a| a.contains("as another row of its benchmark run (tg) says")), "{:?}", pp.assumptions);
    }

    #[test]
    fn every_skipped_row_says_what_to_change() {
        let rs = rows(
            "s,mac-pro-m9,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,,,decode_tokens_per_s,1,tok/s,me,\n\
             e,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,lmdeploy,none,none,,,decode_tokens_per_s,1,tok/s,me,\n\
             m,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,,,watts_per_token,1,W,me,\n\
             q,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,,,ttft_s,1,s,me,\n\
             p,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,,,prefill_tokens_per_s,1,tok/s,me,\n\
             x,mac-studio-m3-ultra,2,3x512gb,llama-3.3-70b,q4_k_m,llama-cpp-rpc,pipeline,tb5-tcp,,,decode_tokens_per_s,1,tok/s,me,\n\
             n,mac-studio-m3-ultra,two,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,,,decode_tokens_per_s,1,tok/s,me,\n\
             u,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,mystery,exo,none,none,,,decode_tokens_per_s,1,tok/s,me,\n",
        );
        let (prepared, skipped) = prepare(&rs, &Profile::default_profile());
        let why = |id: &str| skipped.iter().find(|s| s.id == id).map(|s| s.reason.clone()).unwrap();
        // A prefill rate without its prompt is read at llama-bench's pp512, and says so.
        let p = prepared.iter().find(|p| p.row.id == "p").expect("answered");
        assert_eq!(p.scenario.workload.prompt_tokens, 512);
        assert!(p.assumptions.iter().any(|a| a.contains("prompt length not published: assumed 512")), "{:?}", p.assumptions);
        assert!(why("s").contains("write a catalog node id"), "{}", why("s"));
        assert!(why("e").contains("the twin runs exo"), "{}", why("e"));
        assert!(why("m").contains("predicted: decode_tokens_per_s"), "{}", why("m"));
        assert!(why("q").contains("fill in prompt_tokens"), "{}", why("q"));
        assert!(why("x").contains("make them agree"), "{}", why("x"));
        assert!(why("n").contains("write an integer"), "{}", why("n"));
        assert!(why("u").contains("name a quantization preset"), "{}", why("u"));
    }

    /// Systems as rows write them: a node id, a family with its memory, a unique prefix of a
    /// node id with the memory the mix says; an ambiguous or unmatched one is refused naming
    /// the candidates.
    #[test]
    fn systems_by_id_family_or_prefix_with_memory() {
        let nodes = |system: &str, n: usize, mix: &str| {
            let body = format!("r,{system},{n},{mix},llama-3.2-3b,q4_k_m,llama-cpp,none,none,,,decode_tokens_per_s,1,tok/s,me,\n");
            row_nodes(&rows(&body)[0], n, &mut Vec::new())
        };
        for (system, n, mix, want) in [
            ("dgx-spark", 1, "128gb", vec!["dgx-spark"]),
            ("mac-studio-m3-ultra", 2, "512gb+256gb", vec!["m3-ultra-80c-512gb", "m3-ultra-80c-256gb"]),
            ("macbook-pro-m5-max", 1, "128gb", vec!["macbook-pro-m5-max-40c-128gb"]),
            ("MacBook-Pro-M5-Max", 1, "128GB", vec!["macbook-pro-m5-max-40c-128gb"]),
            ("gmktec-evo-x2", 2, "2x128gb", vec!["gmktec-evo-x2-128gb"; 2]),
            ("gmktec-evo-x2", 1, "unknown", vec!["gmktec-evo-x2-128gb"]),
            ("mac-mini-m4-pro", 1, "64gb", vec!["mac-mini-m4-pro-20c-64gb"]),
            ("mac-mini-m4", 1, "16gb", vec!["mac-mini-m4-10c-16gb"]),
            ("mac-mini-m1", 1, "16gb", vec!["mac-mini-m1-8c-16gb"]),
            // A size the family's reference bin does not come in: the chip's preset of it.
            ("mac-studio-m3-ultra", 2, "96gb+512gb", vec!["m3-ultra-60c-96gb", "m3-ultra-80c-512gb"]),
            // Another chip's box of that size (same chip, same memory).
            ("mac-mini-m4-pro", 1, "48gb", vec!["macbook-pro-m4-pro-20c-48gb"]),
            // No preset of the chip in that size: the named box with the row's memory.
            ("gmktec-evo-x2", 1, "64gb", vec!["gmktec-evo-x2-128gb-as-64gb"]),
            ("mac-mini-m4", 1, "24gb", vec!["mac-mini-m4-10c-16gb-as-24gb"]),
            ("macbook-pro-m4-max", 2, "2x64gb", vec!["macbook-pro-m4-max-40c-128gb-as-64gb"; 2]),
            // The M5 and M5 Pro MacBook Pros (FACTS-2026 A1), and an M5 in another size.
            ("macbook-pro-m5", 1, "24gb", vec!["macbook-pro-m5-10c-24gb"]),
            ("macbook-pro-m5", 1, "32gb", vec!["macbook-pro-m5-10c-24gb-as-32gb"]),
            ("macbook-pro-m5-pro", 1, "64gb", vec!["macbook-pro-m5-pro-20c-64gb"]),
            // A chip named in words that MacBook Pro's `pro` also holds: the chip decides.
            ("M5 Pro", 1, "", vec!["macbook-pro-m5-pro-20c-64gb"]),
            ("MacBook Pro M5", 1, "", vec!["macbook-pro-m5-10c-24gb"]),
            ("MacBook Pro M4 Pro", 1, "48gb", vec!["macbook-pro-m4-pro-20c-48gb"]),
            ("M5 Max", 1, "", vec!["macbook-pro-m5-max-40c-128gb"]),
        ] {
            assert_eq!(nodes(system, n, mix), Ok(want.iter().map(|s| s.to_string()).collect()), "{system} {mix}");
        }
        // The derived box is the preset with the row's memory, nothing else changed.
        let cat = crate::catalog::catalog();
        let (small, base) = (cat.node("gmktec-evo-x2-128gb-as-64gb").unwrap(), cat.node("gmktec-evo-x2-128gb").unwrap());
        assert_eq!(small.memory_gb, 64.0);
        assert_eq!((small.chip.as_str(), small.mem_bw_gbs, small.gpu_cores), (base.chip.as_str(), base.mem_bw_gbs, base.gpu_cores));
        for (system, n, mix, why) in [
            ("macbook-pro", 1, "128gb", "is ambiguous: macbook-pro-m4-max-40c-128gb, macbook-pro-m5-max-40c-128gb"),
            (
                "mac-mini",
                1,
                "unknown",
                "is ambiguous (mac-mini-m4-pro-20c-64gb, mac-mini-m4-10c-16gb, mac-mini-m1-8c-16gb, mac-mini-m2-10c-24gb, mac-mini-m2-pro-19c-32gb)",
            ),
            ("mac-mini", 1, "16gb", "is ambiguous: mac-mini-m4-10c-16gb, mac-mini-m1-8c-16gb"),
            // The label names an M3, the catalog has only M3 Max boxes: not the same chip in
            // another size.
            ("macbook-pro-m3", 2, "128gb+16gb", "`16gb`: no node preset of that memory"),
            (
                "macbook-pro-m3",
                1,
                "16gb",
                "no node preset of that memory (macbook-pro-m3-max-40c-64gb, macbook-pro-m3-max-40c-128gb, macbook-pro-m3-pro-18c-36gb)",
            ),
            ("mac-pro-m9", 1, "512gb", "has no node preset"),
            ("gmktec-evo-x2", 2, "3x128gb", "make them agree"),
        ] {
            let e = nodes(system, n, mix).unwrap_err();
            assert!(e.contains(why), "{system} {mix}: {e}");
        }
    }

    /// System labels by their words: chip names and makers' words, a product's own words; the
    /// first preset of a chip and memory when several share them (said in the assumptions);
    /// presets of different chips stay ambiguous.
    #[test]
    fn systems_by_chip_and_product_words() {
        let nodes = |system: &str, n: usize, mix: &str| {
            let body = format!("r,{system},{n},{mix},llama-3.2-3b,q4_k_m,llama-cpp,none,none,,,decode_tokens_per_s,1,tok/s,me,\n");
            let mut said = Vec::new();
            row_nodes(&rows(&body)[0], n, &mut said).map(|ids| (ids, said.len()))
        };
        for (system, n, mix, want, notes) in [
            ("ryzen-ai-max-395", 1, "128gb", vec!["framework-desktop-ai-max-395"], 1),
            ("AMD Ryzen AI Max+ 395", 2, "2x128gb", vec!["framework-desktop-ai-max-395"; 2], 1),
            // AMD's `Max+` is no node-mix `+`, with or without a mix column.
            ("AMD Ryzen AI Max+ 395", 1, "", vec!["framework-desktop-ai-max-395"], 1),
            ("Ryzen AI MAX+ 395", 1, "128gb", vec!["framework-desktop-ai-max-395"], 1),
            // The chip's GPU, as llama.cpp's device lines name the machine.
            ("AMD Radeon 8060S Graphics (RADV GFX1151)", 1, "128gb", vec!["framework-desktop-ai-max-395"], 1),
            ("gfx1151", 1, "", vec!["framework-desktop-ai-max-395"], 1),
            ("strix-halo", 1, "128gb", vec!["framework-desktop-ai-max-395"], 1),
            ("asus-gx10", 1, "128gb", vec!["asus-ascent-gx10"], 0),
            ("NVIDIA DGX Spark", 1, "128gb", vec!["dgx-spark"], 0),
            // An edition's name and the SSD's size name no other box.
            ("NVIDIA DGX Spark Founders Edition", 1, "128gb", vec!["dgx-spark"], 0),
            ("ASUS Ascent GX10 1TB", 1, "128gb", vec!["asus-ascent-gx10"], 0),
            ("m5-max", 1, "128gb", vec!["macbook-pro-m5-max-40c-128gb"], 0),
            ("Apple M3 Ultra", 1, "256gb", vec!["m3-ultra-80c-256gb"], 0),
            ("HP Z2 Mini G1a", 1, "128gb", vec!["hp-z2-mini-g1a-128gb"], 0),
            // One chip, no memory anywhere: its fullest box, said.
            ("m3-ultra", 1, "unknown", vec!["m3-ultra-80c-512gb"], 1),
            // Memory in the system label.
            ("Mac Studio M3 Ultra 256GB", 1, "", vec!["m3-ultra-80c-256gb"], 1),
            // ... in a size no preset of the named box has: the box with that memory, said.
            ("Framework Desktop 64GB", 1, "", vec!["framework-desktop-ai-max-395-as-64gb"], 1),
            // Boxes FACTS-2026 A3/A4 list without a preset: the chip's preset of that memory.
            ("Bosgame M5", 1, "128gb", vec!["framework-desktop-ai-max-395"], 1),
            ("Sixunited AXB35-02", 1, "128gb", vec!["framework-desktop-ai-max-395"], 1),
            ("Corsair AI Workstation 300", 2, "2x128gb", vec!["framework-desktop-ai-max-395"; 2], 1),
            ("MSI EdgeXpert", 1, "128gb", vec!["dell-pro-max-gb10"], 1),
            // The M4 Max's 36 GB part is the 32-core bin (410 GB/s), not the 40-core box.
            ("Mac Studio M4 Max 36GB", 1, "", vec!["m4-max-32c-36gb"], 1),
            ("mac-studio-m4-max", 1, "36gb", vec!["m4-max-32c-36gb"], 1),
        ] {
            assert_eq!(nodes(system, n, mix), Ok((want.iter().map(|s| s.to_string()).collect(), notes)), "{system} {mix}");
        }
        for (system, mix, why) in [
            ("rtx-5090", "32gb", "has no node preset"),
            ("max", "128gb", "is ambiguous"),
            // A chip the catalog does not have (the M3, not the M3 Max) in a size no preset has.
            ("MacBook Pro M3 16GB", "", "no node preset of 16 GB"),
        ] {
            let e = nodes(system, 1, mix).unwrap_err();
            assert!(e.contains(why), "{system}: {e}");
        }
    }

    /// Engine spellings: what each reads as, what is said, or why it is refused.
    #[test]
    fn engine_spellings_people_write() {
        for (raw, quant, want, note) in [
            ("llama-cpp", "q4_k_m", "llama-cpp", None),
            ("llama.cpp", "q4_k_m", "llama-cpp", None),
            ("Llama.CPP", "q4_k_m", "llama-cpp", None),
            ("llama-server", "q4_k_m", "llama-cpp", None),
            ("llama-batched-bench", "q4_k_m", "llama-cpp", None),
            ("llama_cpp_python", "q4_k_m", "llama-cpp", Some("the bindings vendor")),
            ("llama.cpp (Vulkan)", "q4_k_m", "llama-cpp", Some("vulkan")),
            ("llama.cpp vulkan", "q4_k_m", "llama-cpp", Some("vulkan")),
            ("llama-cpp-rocm", "q4_k_m", "llama-cpp", Some("rocm")),
            ("llama.cpp (b6918, CUDA)", "q4_k_m", "llama-cpp", Some("cuda")),
            ("mlx_lm", "4bit", "mlx-lm", None),
            ("vllm (0.11)", "fp8", "vllm", None),
            ("LM Studio", "4bit", "mlx-lm", Some("MLX file")),
            ("lmstudio", "Q4_K_M", "llama-cpp", Some("GGUF file")),
            ("exo", "4bit", "exo", None),
            // A runtime's server command; a GPU backend named alone (Strix Halo toolbox tables).
            ("mlx_lm.server", "4bit", "mlx-lm", None),
            ("mlx_lm.generate", "4bit", "mlx-lm", None),
            ("mlx_lm.benchmark", "4bit", "mlx-lm", None),
            ("lmstudio-mlx", "Q4_K_M", "mlx-lm", Some("MLX file")),
            ("LM Studio (GGUF)", "4bit", "llama-cpp", Some("GGUF file")),
            ("LM Studio (MLX)", "Q4_K_M", "mlx-lm", Some("MLX file")),
            ("lm-studio-gguf", "Q4_K_M", "llama-cpp", Some("GGUF file")),
            ("llama.cpp rpc", "q4_k_m", "llama-cpp-rpc", None),
            ("llama.cpp (RPC)", "q4_k_m", "llama-cpp-rpc", None),
            ("koboldcpp", "q4_k_m", "llama-cpp", Some("KoboldCpp")),
            ("Jan", "q4_k_m", "llama-cpp", Some("Jan runs GGUF files")),
            ("Lemonade", "q4_k_m", "llama-cpp", Some("Lemonade Server")),
            ("lemonade-server (vulkan)", "q4_k_m", "llama-cpp", Some("Lemonade Server")),
            ("llamafile", "q4_k_m", "llama-cpp", Some("llamafile")),
            ("ik_llama.cpp", "q4_k_m", "llama-cpp", Some("a llama.cpp fork")),
            ("trtllm-serve", "fp8", "trtllm", None),
            ("vulkan_radv", "q4_k_m", "llama-cpp", Some("a GPU backend named alone")),
            ("rocm-7.1", "q4_k_m", "llama-cpp", Some("rocm")),
            ("rocm7-nightlies", "q4_k_m", "llama-cpp", Some("rocm")),
            ("amdvlk", "q4_k_m", "llama-cpp", Some("vulkan")),
            ("Vulkan", "q4_k_m", "llama-cpp", Some("vulkan")),
            // Who packaged it, before the runtime's name.
            ("NVIDIA vLLM container 25.09", "fp8", "vllm", None),
            ("NGC SGLang", "fp8", "sglang", None),
            ("docker llama.cpp (Vulkan)", "q4_k_m", "llama-cpp", Some("vulkan")),
        ] {
            let (name, said) = engine_label(raw, quant).unwrap();
            assert_eq!(name, want, "{raw}");
            match note {
                Some(n) => assert!(said.as_deref().is_some_and(|s| s.contains(n)), "{raw}: {said:?}"),
                None => assert_eq!(said, None, "{raw}"),
            }
        }
        assert!(engine_label("llama.cpp (CPU)", "q4_k_m").unwrap_err().contains("CPU backend is not modelled"));
        // A runtime named with a backend is that runtime, not llama.cpp; the CPU alone is no GPU.
        assert_eq!(engine_label("vllm-rocm", "fp8").unwrap().0, "vllm");
        assert_eq!(engine_label("cpu", "q4_k_m").unwrap().0, "cpu");
    }

    /// Fabric labels people write, read as catalog fabrics (RDMA over Thunderbolt 5 where the
    /// label or exo says so); a label without a known medium or speed is returned as written.
    #[test]
    fn fabric_labels_people_write() {
        for (raw, engine, want) in [
            ("tb5-rdma", "exo", "tb5-rdma"),
            ("Thunderbolt 5", "exo", "tb5-rdma"),
            ("Thunderbolt 5 (TCP bridge)", "exo", "tb5-tcp"),
            ("thunderbolt 5", "llama-cpp-rpc", "tb5-tcp"),
            ("40Gbps thunderbolt", "llama-cpp-rpc", "tb4-tcp"),
            ("Thunderbolt 80 Gbps RDMA", "mlx-lm", "tb5-rdma"),
            ("TB4", "exo", "tb4-tcp"),
            ("USB4", "llama-cpp-rpc", "usb4-tcp"),
            ("ConnectX-7 QSFP", "vllm", "cx7-roce"),
            ("2.5GbE", "llama-cpp-rpc", "eth-2.5g"),
            ("10 GbE", "exo", "eth-10g"),
            ("Wi-Fi", "exo", "wifi"),
        ] {
            assert_eq!(fabric_label(raw, engine).0, want, "{raw}");
        }
        assert_eq!(fabric_label("ethernet", "exo"), ("ethernet".to_string(), None));
        // Ethernet without a speed runs at the nodes' slowest built-in port.
        let spark = ["dgx-spark".to_string(), "dgx-spark".to_string()];
        assert_eq!(builtin_ethernet("ethernet", &spark).unwrap().0, "eth-10g");
        let mixed = ["dgx-spark".to_string(), "framework-desktop-ai-max-395".to_string()];
        assert_eq!(builtin_ethernet("LAN", &mixed).unwrap().0, "eth-5g");
        let laptop = ["macbook-pro-m4-max-40c-128gb".to_string(), "macbook-pro-m4-max-40c-128gb".to_string()];
        assert!(builtin_ethernet("ethernet", &laptop).unwrap_err().contains("no built-in Ethernet port"));
        assert!(is_plain_ethernet("Ethernet") && is_plain_ethernet("LAN (switch)") && !is_plain_ethernet("10GbE"));
        // No link named: the machines' own (Sparks' QSFP, Macs' Thunderbolt 5, else Ethernet),
        // TCP where the row or the engine says so.
        let studio = ["m3-ultra-80c-512gb".to_string(), "m3-ultra-80c-512gb".to_string()];
        let framework = ["framework-desktop-ai-max-395".to_string(), "framework-desktop-ai-max-395".to_string()];
        type Reader = fn(&str, &[String], &str) -> Result<(String, Option<String>), String>;
        let reads = |is: fn(&str) -> bool, read: Reader, cases: &[(&str, &[String; 2], &str, &str)]| {
            for &(raw, nodes, engine, want) in cases {
                assert!(is(raw), "{raw:?}");
                let (id, note) = read(raw, nodes, engine).unwrap();
                assert_eq!(id, want, "{raw:?} on {nodes:?} under {engine}");
                assert!(note.is_some_and(|n| n.contains(want)), "{raw:?}");
            }
        };
        reads(
            is_unstated_link,
            machines_own_link,
            &[
                ("", &spark, "vllm", "cx7-roce"),
                ("unknown", &spark, "llama-cpp-rpc", "cx7-tcp"),
                ("TCP", &spark, "vllm", "cx7-tcp"),
                ("not stated", &studio, "exo", "tb5-rdma"),
                ("", &studio, "llama-cpp-rpc", "tb5-tcp"),
                ("", &framework, "llama-cpp-rpc", "eth-5g"),
                ("", &mixed, "llama-cpp-rpc", "eth-5g"),
            ],
        );
        assert!(!is_unstated_link("none") && !is_unstated_link("10GbE"));
        // Thunderbolt without its generation, and MLX's backends by name: the nodes' own
        // Thunderbolt, RDMA by the label or the engine, TCP under `ring` and RPC.
        let m1 = ["mac-studio-m1-ultra-64c-128gb".to_string(), "mac-studio-m1-ultra-64c-128gb".to_string()];
        let studio_m1 = ["m3-ultra-80c-512gb".to_string(), "mac-studio-m1-ultra-64c-128gb".to_string()];
        reads(
            is_plain_thunderbolt,
            machines_thunderbolt,
            &[
                ("Thunderbolt", &studio, "exo", "tb5-rdma"),
                ("thunderbolt", &studio, "llama-cpp-rpc", "tb5-tcp"),
                ("Thunderbolt bridge", &studio, "exo", "tb5-tcp"),
                ("TB", &studio, "mlx-lm", "tb5-tcp"),
                ("jaccl", &studio, "mlx-lm", "tb5-rdma"),
                ("ring", &studio, "mlx-lm", "tb5-tcp"),
                ("MLX ring (thunderbolt)", &studio, "exo", "tb5-tcp"),
                ("thunderbolt", &m1, "exo", "tb4-tcp"),
                ("Thunderbolt", &studio_m1, "exo", "tb4-tcp"),
            ],
        );
        for raw in ["tb5-rdma", "Thunderbolt 5", "TB4", "40Gbps thunderbolt", "10GbE", ""] {
            assert!(!is_plain_thunderbolt(raw), "{raw:?}");
        }
        assert!(machines_thunderbolt("thunderbolt", &spark, "llama-cpp-rpc").is_err_and(|e| e.contains("no Thunderbolt port")));
    }

    /// Two Sparks on one direct cable and four Macs meshed over Thunderbolt are full meshes;
    /// four Sparks have two QSFP ports each, so they go through a switch, and the row says so;
    /// Ethernet always does.
    #[test]
    fn nodes_that_cannot_mesh_their_fabric_go_through_a_switch_and_say_so() {
        let nodes = |id: &str, n: usize| vec![id.to_string(); n];
        let mut said = Vec::new();
        assert_eq!(row_topology("cx7-roce", &nodes("dgx-spark", 2), &mut said), "full-mesh");
        assert_eq!(row_topology("tb5-rdma", &nodes("m3-ultra-80c-512gb", 4), &mut said), "full-mesh");
        assert_eq!(row_topology("eth-10g", &nodes("m3-ultra-80c-512gb", 4), &mut said), "switch");
        assert!(said.is_empty(), "{said:?}");
        assert_eq!(row_topology("cx7-roce", &nodes("dgx-spark", 4), &mut said), "switch");
        assert_eq!(said.len(), 1);
        assert!(said[0].starts_with("4 nodes on cx7-roce through a switch") && said[0].contains("`dgx-spark` has 2"), "{said:?}");
    }

    /// Splits as people write them, read as the twin's; a rank count that is not the row's node
    /// count, an unknown word and pipeline mixed with another split are refused.
    #[test]
    fn parallelism_labels_people_write() {
        for (raw, want) in [
            ("tensor", "tensor"),
            ("TP2", "tensor"),
            ("tp=2", "tensor"),
            ("TP", "tensor"),
            ("tensor parallel", "tensor"),
            ("Tensor-Parallel", "tensor"),
            ("pipeline (layer split)", "pipeline"),
            ("pp", "pipeline"),
            ("PP2", "pipeline"),
            ("EP", "expert"),
            ("TP+EP", "expert"),
            ("tensor+expert", "expert"),
            ("rpc", "pipeline"),
            ("layer split", "pipeline"),
        ] {
            assert_eq!(parallelism_label(raw, 2).map(|s| (s.split.id(), s.replicas)), Ok((want, 1)), "{raw}");
        }
        assert!(parallelism_label("TP4", 2).unwrap_err().contains("names 4 ranks but the row has 2 nodes"));
        assert!(parallelism_label("ring", 2).unwrap_err().contains("unknown parallelism `ring`"));
        assert!(parallelism_label("none", 2).unwrap_err().contains("parallelism `none` on 2 nodes"));
        assert!(parallelism_label("TP+PP", 2).unwrap_err().contains("do not fit 2 nodes"));
        assert!(parallelism_label("PP+EP", 4).unwrap_err().contains("pipeline combined with expert parallel"));
        // Data parallel: replicas of one node each, or of a split group.
        let replicated = |split, replicas| Ok(RowSplit { split, replicas });
        for raw in ["DP=2", "DP2", "data parallel", "replicas", "DP"] {
            assert_eq!(parallelism_label(raw, 2), replicated(Parallelism::None, 2), "{raw}");
        }
        assert_eq!(parallelism_label("DP2 TP2", 4), replicated(Parallelism::Tensor, 2));
        assert_eq!(parallelism_label("TP2 + DP", 4), replicated(Parallelism::Tensor, 2));
        assert_eq!(parallelism_label("dp2 tp2 pp2", 8), replicated(Parallelism::TensorPipeline { stages: 2 }, 2));
        assert!(parallelism_label("DP3", 4).unwrap_err().contains("3 replicas do not divide the row's 4 nodes"));
        // Data parallel beside expert parallel spans every rank (data-parallel attention).
        for raw in ["DP2 + EP", "dp2 ep2", "DP+EP", "DP attention + EP"] {
            assert_eq!(parallelism_label(raw, 2), Ok(RowSplit::single(Parallelism::DataExpert { tensor: 1 })), "{raw}");
        }
        assert!(parallelism_label("DP2 EP4", 2).unwrap_err().contains("names 4 ranks"));
        assert_eq!(parallelism_label("DP2 attention", 2), replicated(Parallelism::None, 2));
        // A count before its split.
        assert_eq!(parallelism_label("2 replicas", 2), replicated(Parallelism::None, 2));
        assert_eq!(parallelism_label("4-way tensor parallel", 4), Ok(RowSplit::single(Parallelism::Tensor)));
        assert!(parallelism_label("4-way tensor parallel", 2).unwrap_err().contains("names 4 ranks"));
        assert_eq!(parallelism_label("2 replicas, TP2", 4), replicated(Parallelism::Tensor, 2));
        assert!(parallelism_label("DP2", 4).unwrap_err().contains("say how each splits"));
        assert!(parallelism_label("DP TP", 4).unwrap_err().contains("say how many replicas"));
        // Tensor within pipeline stages: the counts multiply to the node count.
        let hybrid = |stages| Ok(RowSplit::single(Parallelism::TensorPipeline { stages }));
        assert_eq!(parallelism_label("tp2 pp2", 4), hybrid(2));
        assert_eq!(parallelism_label("TP2xPP2", 4), hybrid(2));
        assert_eq!(parallelism_label("DP2xTP2", 4), Ok(RowSplit { split: Parallelism::Tensor, replicas: 2 }));
        assert_eq!(parallelism_label("TP=2 PP=2", 4), hybrid(2));
        assert_eq!(parallelism_label("TP4 PP2", 8), hybrid(2));
        assert_eq!(parallelism_label("TP2 PP4", 8), hybrid(4));
        assert_eq!(parallelism_label("TP2+PP", 8), hybrid(4));
        assert_eq!(parallelism_label("tensor+pipeline", 4), hybrid(2));
        assert!(parallelism_label("tp2 pp2", 8).unwrap_err().contains("names 2 x 2 ranks but the row has 8 nodes"));
        assert!(parallelism_label("TP3+PP", 4).unwrap_err().contains("3 tensor ranks do not divide the row's 4 nodes"));
        assert!(parallelism_label("", 2).unwrap_err().contains("no parallelism for 2 nodes"));
    }

    /// A fabric column that names only a switch is the machines' own link through one.
    #[test]
    fn a_fabric_of_only_a_switch_is_the_machines_own_link_switched() {
        for raw in ["switch", "via switch", "Network switch", "switched (QSFP)"] {
            assert!(names_switch_only(raw) && is_unstated_link(raw), "{raw}");
        }
        for raw in ["10GbE switch", "cx7", "direct"] {
            assert!(!names_switch_only(raw), "{raw}");
        }
        let rs = rows("sw,dgx-spark,4,,llama-3.3-70b,fp8,vllm,TP4,switch,128,,decode_tokens_per_s,1,tok/s,probe,\n");
        let (b, _) = row_scenario(&rs[0], &rs).unwrap();
        let s = b.build().unwrap();
        assert_eq!((s.fabric.id.as_str(), s.topology), ("cx7-roce", crate::hw::Topology::Switch));
    }

    /// System labels that count their machines; names that merely end in `X2` count nothing.
    #[test]
    fn system_labels_that_count_their_machines() {
        for (raw, want) in [
            ("2x DGX Spark", Some((2, "DGX Spark"))),
            ("2 x DGX Spark", Some((2, "DGX Spark"))),
            ("4× Mac Studio M3 Ultra 512GB", Some((4, "Mac Studio M3 Ultra 512GB"))),
            ("DGX Spark x2", Some((2, "DGX Spark"))),
            ("Framework Desktop x 4", Some((4, "Framework Desktop"))),
            ("GMKtec EVO-X2", None),
            ("dgx-spark", None),
            ("Mac Studio M3 Ultra 512GB", None),
            ("2x", None),
        ] {
            assert_eq!(counted_system(raw), want.map(|(c, l)| (c, l.to_string())), "{raw}");
        }
        let rs = rows(
            "a,2x DGX Spark,2,,gpt-oss-120b,mxfp4,vllm,,cx7-roce,,,decode_tokens_per_s,70,tok/s,me,\n\
             b,2x DGX Spark,3,,gpt-oss-120b,mxfp4,vllm,,cx7-roce,,,decode_tokens_per_s,70,tok/s,me,\n",
        );
        let (b, said) = row_scenario(&rs[0], &rs).unwrap();
        let toml = b.to_toml();
        assert!(toml.contains("dgx-spark") && toml.contains("parallelism = \"tensor\""), "{toml}");
        assert!(said.iter().any(|a| a.contains("parallelism not stated: vllm's default on 2 nodes, tensor")), "{said:?}");
        assert!(row_scenario(&rs[1], &rs).unwrap_err().contains("names 2 machines but `nodes` is 3"));
        // An empty node count takes the system's.
        let rs = rows("a,2x DGX Spark,,,gpt-oss-120b,mxfp4,vllm,TP2,cx7-roce,,,decode_tokens_per_s,70,tok/s,me,\n");
        let (b, said) = row_scenario(&rs[0], &rs).unwrap();
        assert!(b.to_toml().matches("dgx-spark").count() >= 2, "{}", b.to_toml());
        assert!(said.iter().any(|a| a.contains("node count not stated: 2")), "{said:?}");
    }

    /// Metrics people write are read as the ones `validate` predicts, times converted to their
    /// unit (from the unit column, else the written name's suffix), and the row says so; a
    /// metric written as predicted, or unknown, is left as it is.
    #[test]
    fn metric_aliases_and_time_units_are_read_as_the_predicted_metrics() {
        let rs = rows(
            "a,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,1,ttft_ms,1234,ms,me,\n\
             b,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,1,ttft_s,250,ms,me,\n\
             c,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,1,tpot_s,0.02,s,me,\n\
             d,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,1,itl_ms,21,ms,me,\n\
             e,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,tg_tokens_per_s,59,tok/s,me,\n\
             f,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,decode_tokens_per_s,59,tok/s,me,\n\
             g,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,joules,59,J,me,\n\
             h,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,output_token_throughput,150,tok/s,me,\n\
             i,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,Median TTFT (ms),900,ms,me,\n\
             j,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,P99 TPOT (ms),55,ms,me,\n\
             k,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,Request throughput (req/s),1.2,req/s,me,\n\
             l,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,Mean TTFT (ms),1000,ms,me,\n\
             m,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,Mean E2EL (ms),5000,ms,me,\n\
             n,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,Total Token throughput (tok/s),1200,tok/s,me,\n\
             o,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,8,Median E2E Latency (ms),4800,ms,me,\n\
             p,framework-desktop-ai-max-395,1,128gb,llama-3.1-8b,q4_k_m,llama-cpp,none,none,,1,energy_per_token_j,1.3,J/tok,me,\n\
             q,framework-desktop-ai-max-395,1,128gb,llama-3.1-8b,q4_k_m,llama-cpp,none,none,,1,tokens_per_joule,0.8,tok/J,me,\n\
             r,framework-desktop-ai-max-395,1,128gb,llama-3.1-8b,q4_k_m,llama-cpp,none,none,,1,decode_power_w,52.2,W,me,\n\
             s,framework-desktop-ai-max-395,1,128gb,llama-3.1-8b,q4_k_m,llama-cpp,none,none,,1,decode_tokens_per_s,25,ms/tok,me,\n\
             t,framework-desktop-ai-max-395,1,128gb,llama-3.1-8b,q4_k_m,llama-cpp,none,none,,1,energy_j_per_token,500,Wh/Mtok,me,\n\
             u,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,mlx-4bit,mlx-lm,none,none,,1,Peak memory,17.3,GB,me,\n\
             v,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,mlx-4bit,mlx-lm,none,none,,1,peak_memory_gb,16,GiB,me,\n\
             w,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,q4_k_m,ollama,none,none,,1,eval rate,80,tokens/s,me,\n\
             x,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,tokens_per_second,58,t/s,me,llama-bench tg128 -fa 1\n\
             y,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,2048,1,t/s,1900,t/s,me,prompt processing\n\
             z,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,tokens_per_second,58,t/s,me,\n",
        );
        let got: Vec<(&str, f64, &str, bool)> =
            rs.iter().map(|r| (r.metric.as_str(), r.value, r.unit.as_str(), r.metric_read_as.is_some())).collect();
        assert_eq!(
            got,
            [
                ("ttft_s", 1.234, "s", true),
                ("ttft_s", 0.25, "s", true),
                ("tpot_ms", 20.0, "ms", true),
                ("tpot_ms", 21.0, "ms", true),
                ("decode_tokens_per_s", 59.0, "tok/s", true),
                ("decode_tokens_per_s", 59.0, "tok/s", false),
                ("joules", 59.0, "J", false),
                ("aggregate_decode_tokens_per_s", 150.0, "tok/s", true),
                ("ttft_p50_s", 0.9, "s", true),
                ("tpot_p99_ms", 55.0, "ms", true),
                ("requests_per_s", 1.2, "req/s", true),
                ("ttft_s", 1.0, "s", true),
                ("e2e_mean_s", 5.0, "s", true),
                ("total_tokens_per_s", 1200.0, "tok/s", true),
                ("e2e_p50_s", 4.8, "s", true),
                ("energy_j_per_token", 1.3, "J/tok", true),
                ("energy_j_per_token", 1.25, "J/tok", true),
                ("cluster_power_w_decode", 52.2, "W", true),
                ("decode_tokens_per_s", 40.0, "tok/s", true),
                ("energy_j_per_token", 1.8, "J/tok", true),
                ("memory_gb", 17.3, "GB", true),
                ("memory_gb", 16.0 * 1.073_741_824, "GB", true),
                ("decode_tokens_per_s", 80.0, "tokens/s", true),
                ("decode_tokens_per_s", 58.0, "t/s", true),
                ("prefill_tokens_per_s", 1900.0, "t/s", true),
                // No phase in the name or the notes: left as written (refused, `not predicted`).
                ("tokens_per_second", 58.0, "t/s", false),
            ]
        );
        // Each is predicted: the serving ones from the closed loop of 8, energy and phase power
        // from the decode run (energy = decode power / decode rate).
        let profile = crate::profile::Profile::default_profile();
        let value = |i: usize| {
            let (sc, _) = row_scenario(&rs[i], &rs).unwrap();
            let est = crate::estimate::estimate(&sc.build().unwrap(), &profile).unwrap();
            metric_value(&rs[i], &est).unwrap()
        };
        let (mean, median) = (value(12), value(14));
        assert!(mean > 0.0 && (mean / median - 1.0).abs() < 0.25, "{mean} {median}");
        assert!((value(15) - value(17) / value(18)).abs() < 1e-3 * value(15), "J/tok = decode W / decode tok/s");
        // The busiest node's weights and KV cache: Qwen3-30B-A3B's 4-bit weights.
        assert!((15.0..19.0).contains(&value(20)), "{}", value(20));
        let (_, said) = row_scenario(&rs[0], &rs).unwrap();
        assert!(said.iter().any(|a| a == "metric `ttft_ms` (1234 ms) read as ttft_s (1.234 s)"), "{said:?}");
        // llama-bench's test names as the metric: the phase's rate, the test carried into the
        // notes (generated tokens, depth) and its tokens into an empty prompt column.
        let rs = rows(
            "t,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,tg32 @ d4096,50,t/s,me,-fa 1\n\
             p,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,pp2048 @ d4096,1500,t/s,me,\n\
             q,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,pp512,1800,t/s,me,\n\
             c,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,pp512+tg128,900,t/s,me,\n",
        );
        let got: Vec<(&str, &str, &str)> = rs.iter().map(|r| (r.metric.as_str(), r.prompt_tokens.as_str(), r.notes.as_str())).collect();
        assert_eq!(
            got,
            [
                ("decode_tokens_per_s", "4096", "-fa 1 llama-bench tg32 @ d4096"),
                ("prefill_tokens_per_s", "2048", "llama-bench pp2048 @ d4096"),
                ("prefill_tokens_per_s", "512", "llama-bench pp512"),
                // The combined rate is no phase's: left as written, for validate to refuse.
                ("pp512+tg128", "", ""),
            ]
        );
        assert_eq!(prefill_depth(&rs[1]), Ok(Some(4096)));
        let (b, said) = row_scenario(&rs[0], &rs).unwrap();
        // Decoded after the test's depth.
        assert!(b.to_toml().contains("prompt_tokens = 4096"), "{}", b.to_toml());
        assert!(said.iter().any(|a| a.contains("metric `tg32 @ d4096` (50 t/s) read as decode_tokens_per_s")), "{said:?}");
        // A decode row whose prompt column is empty and whose notes name its test at a depth
        // decodes after that depth; a depth in a later aside is another test's.
        let rs = rows(
            "d,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,decode_tokens_per_s,50,tok/s,me,llama-bench tg32 @ d8192 -fa 1
             a,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,,1,decode_tokens_per_s,60,tok/s,me,\"llama-bench tg128; tg32 @ d32768 = 3.82\"
",
        );
        let (b, said) = row_scenario(&rs[0], &rs).unwrap();
        assert!(b.to_toml().contains("prompt_tokens = 8192"), "{}", b.to_toml());
        assert!(said.iter().any(|a| a.contains("decode after 8192 tokens already in context")), "{said:?}");
        let (b, said) = row_scenario(&rs[1], &rs).unwrap();
        assert!(b.to_toml().contains("prompt_tokens = 128"), "{}", b.to_toml());
        assert!(said.iter().any(|a| a == "prompt length not published: assumed 128"), "{said:?}");
    }

    /// A label every box of a line answers to (`Mac Studio`) picks among all of them by memory,
    /// never stretching the one box whose id starts so to a size its chip never had.
    #[test]
    fn a_product_line_label_picks_its_box_by_memory() {
        let rs = rows(
            "a,Mac Studio,1,512gb,llama-3.3-70b,4bit,mlx-lm,none,none,,,decode_tokens_per_s,1,tok/s,me,\n\
             b,mac-studio,2,512gb+256gb,llama-3.3-70b,4bit,exo,pipeline,tb5-tcp,,,decode_tokens_per_s,1,tok/s,me,\n\
             c,Mac Studio,1,192gb,llama-3.3-70b,4bit,mlx-lm,none,none,,,decode_tokens_per_s,1,tok/s,me,\n\
             d,Mac Studio,1,128gb,llama-3.3-70b,4bit,mlx-lm,none,none,,,decode_tokens_per_s,1,tok/s,me,\n",
        );
        let mut said = Vec::new();
        assert_eq!(row_nodes(&rs[0], 1, &mut said).unwrap(), ["m3-ultra-80c-512gb"]);
        assert_eq!(row_nodes(&rs[1], 2, &mut said).unwrap(), ["m3-ultra-80c-512gb", "m3-ultra-80c-256gb"]);
        assert_eq!(row_nodes(&rs[2], 1, &mut said).unwrap(), ["m2-ultra-76c-192gb"]);
        // Two chips come in 128 GB Mac Studios (M4 Max, M1 Ultra): refused, both named.
        let e = row_nodes(&rs[3], 1, &mut said).unwrap_err();
        assert!(e.contains("m4-max-40c-128gb") && e.contains("mac-studio-m1-ultra-64c-128gb"), "{e}");
    }

    /// A node mix of machines (different chips in one cluster) reads each part as a system
    /// label; a mix of sizes is left to the size reader; counts must agree.
    #[test]
    fn a_node_mix_of_machines_reads_each_part_as_a_system() {
        let rs = rows(
            "a,macbook pro,2,M4 Max 128GB + M5 Max 128GB,gpt-oss-120b,mxfp4,exo,pipeline,tb5-tcp,,,decode_tokens_per_s,68,tok/s,me,\n\
             b,mac studio,3,\"2x mac studio m3 ultra 512gb, 1x mac studio m4 max 128gb\",gpt-oss-120b,mxfp4,exo,pipeline,tb5-tcp,,,decode_tokens_per_s,1,tok/s,me,\n\
             c,mac-studio-m3-ultra,4,2x512gb+2x256gb,gpt-oss-120b,mxfp4,exo,pipeline,tb5-tcp,,,decode_tokens_per_s,1,tok/s,me,\n\
             d,macbook pro,3,M4 Max 128GB + M5 Max 128GB,gpt-oss-120b,mxfp4,exo,pipeline,tb5-tcp,,,decode_tokens_per_s,1,tok/s,me,\n",
        );
        let mut said = Vec::new();
        let a = named_mix(&rs[0], 2, &mut said).unwrap().unwrap();
        assert_eq!(a, ["m4-max-40c-128gb", "macbook-pro-m5-max-40c-128gb"]);
        assert!(said.iter().any(|s| s.contains("read as m4-max-40c-128gb + macbook-pro-m5-max-40c-128gb")), "{said:?}");
        let b = named_mix(&rs[1], 3, &mut Vec::new()).unwrap().unwrap();
        assert_eq!(b, ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb", "m4-max-40c-128gb"]);
        assert!(named_mix(&rs[2], 4, &mut Vec::new()).is_none());
        let e = named_mix(&rs[3], 3, &mut Vec::new()).unwrap().unwrap_err();
        assert!(e.contains("gives 2 nodes but `nodes` is 3"), "{e}");
        // AMD's `Max+` stays inside its part; a spaced `+` between machines still cuts.
        assert_eq!(mix_parts("AMD Ryzen AI Max+ 395"), ["AMD Ryzen AI Max+ 395"]);
        assert_eq!(mix_parts("ai max+ 395 128gb + dgx spark"), ["ai max+ 395 128gb ", " dgx spark"]);
        assert_eq!(mix_parts("M4 Max + M5 Max,x"), ["M4 Max ", " M5 Max", "x"]);
    }

    /// llama.cpp named on several machines is its RPC backend, and the row's assumptions say so;
    /// on one machine it stays llama.cpp.
    #[test]
    fn llama_cpp_on_several_machines_runs_its_rpc_backend() {
        let rs = rows(
            "a,framework-desktop-ai-max-395,2,128gb,llama-3.3-70b,q4_k_m,llama.cpp,pipeline,eth-5g,,,decode_tokens_per_s,5,tok/s,me,\n\
             b,framework-desktop-ai-max-395,1,128gb,llama-3.3-70b,q4_k_m,llama.cpp,none,none,,,decode_tokens_per_s,5,tok/s,me,\n",
        );
        let (b, said) = row_scenario(&rs[0], &rs).unwrap();
        assert!(b.to_toml().contains("name = \"llama-cpp-rpc\""), "{}", b.to_toml());
        assert!(said.iter().any(|a| a.contains("llama.cpp on 2 machines: its RPC backend")), "{said:?}");
        let (b, said) = row_scenario(&rs[1], &rs).unwrap();
        assert!(b.to_toml().contains("name = \"llama-cpp\""), "{}", b.to_toml());
        assert!(!said.iter().any(|a| a.contains("RPC")), "{said:?}");
    }

    /// Quant labels people write, per engine: what each becomes (and what is assumed), or why
    /// it is refused.
    #[test]
    fn quant_labels_people_write() {
        let quant_of = |model: &str, label: &str, engine: &str| {
            let body = format!("r,dgx-spark,1,128gb,{model},{label},{engine},none,none,,,decode_tokens_per_s,1,tok/s,me,\n");
            let rs = rows(&body);
            let rt = runtimes::by_measurement_name(engine).unwrap();
            let mut assumed = Vec::new();
            let model = row_model(&rs[0], None, &mut Vec::new()).unwrap();
            resolve_quant(&rs[0], &rs, rt, &model, &mut assumed).map(|q| (q, assumed))
        };
        let quant = |label: &str, engine: &str| quant_of("llama-3.1-8b", label, engine).map(|(q, a)| (q, a.len()));
        // The model's own release format: Kimi K2 Thinking's INT4 (group 32), said.
        let (q, said) = quant_of("kimi-k2-thinking", "native int4", "exo").unwrap();
        assert_eq!(q, "int4-g32");
        assert!(said.iter().any(|a| a.contains("the model's own release format, int4-g32")), "{said:?}");
        for (label, engine, want, assumed) in [
            ("Q8_0", "llama-cpp", "q8_0", 0),
            ("UD-Q4_K_XL", "llama-cpp", "ud-q4_k_xl", 0),
            ("q4_k_xl", "llama-cpp", "ud-q4_k_xl", 0),
            ("MXFP4", "llama-cpp", "mxfp4", 0),
            ("mxfp4 (native)", "vllm", "mxfp4", 0),
            ("4bit", "mlx-lm", "mlx-4bit", 0),
            ("QAT 4bit", "mlx-lm", "mlx-4bit", 0),
            ("Q4_0 QAT", "llama-cpp", "q4_0", 0),
            ("8-bit", "exo", "mlx-8bit", 0),
            ("6bit", "mlx-lm", "mlx-6bit", 0),
            ("4-bit", "llama-cpp", "q4_k_m", 1),
            ("8bit", "ollama", "q8_0", 1),
            ("fp16", "llama-cpp", "bf16", 0),
            ("f16", "llama-cpp", "bf16", 0),
            ("BF16", "mlx-lm", "bf16", 0),
            ("Q4_0", "llama-cpp", "q4_0", 0),
            ("nvfp4", "vllm", "nvfp4", 0),
            ("awq", "vllm", "awq-int4", 0),
            ("AWQ", "sglang", "awq-int4", 0),
            ("gptq", "vllm", "gptq-int4", 0),
            ("fp8", "sglang", "fp8", 0),
            ("INT4 (AWQ)", "vllm", "awq-int4", 0),
            ("4-bit (GPTQ)", "vllm", "gptq-int4", 0),
            ("4bit-DWQ", "mlx-lm", "mlx-4bit", 0),
            ("MLX 4-bit", "mlx-lm", "mlx-4bit", 0),
            ("mlx 8bit", "exo", "mlx-8bit", 0),
            ("FP8-Dynamic", "vllm", "fp8", 0),
            ("unknown (gguf)", "llama-cpp", "q4_k_m", 1),
        ] {
            assert_eq!(quant(label, engine), Ok((want.to_string(), assumed)), "{label} on {engine}");
        }
        for (label, engine, why) in [
            ("iq9_zz", "llama-cpp", "quant `iq9_zz` unknown"),
            ("4bit", "vllm", "names no single format"),
            ("mystery", "mlx-lm", "quant `mystery` unknown"),
            ("unknown", "vllm", "quant `unknown` unknown"),
        ] {
            let e = quant(label, engine).unwrap_err();
            assert!(e.contains(why), "{label} on {engine}: {e}");
        }
        // gpt-oss ships MXFP4 experts, and llama.cpp's converter keeps them MXFP4 whatever the
        // outtype: a 16-bit label on a GGUF runtime is the F16/BF16 file (`mxfp4-f16`), said in
        // one assumption; on MLX or vLLM, and for any other model, 16 bits stay bf16.
        for (model, label, engine, want) in [
            ("gpt-oss-120b", "F16", "llama-cpp", "mxfp4-f16"),
            ("gpt-oss-120b", "f16", "llama-cpp", "mxfp4-f16"),
            ("gpt-oss-120b", "BF16", "llama-cpp", "mxfp4-f16"),
            ("gpt-oss-20b", "bf16", "ollama", "mxfp4-f16"),
            ("gpt-oss-120b", "mxfp4 (f16 label in llama-bench)", "llama-cpp", "mxfp4-f16"),
            ("gpt-oss-120b", "MXFP4 (BF16 file)", "llama-cpp-rpc", "mxfp4-f16"),
            ("openai/gpt-oss-120b", "F16", "llama-cpp", "mxfp4-f16"),
        ] {
            let (q, assumed) = quant_of(model, label, engine).unwrap();
            assert_eq!(q, want, "{model} {label} on {engine}");
            assert!(assumed.len() == 1 && assumed[0].contains("keeps the routed experts in MXFP4"), "{model} {label}: {assumed:?}");
        }
        for (model, label, engine, want) in [
            ("gpt-oss-120b", "MXFP4", "llama-cpp", "mxfp4"),
            ("gpt-oss-120b", "mxfp4", "llama-cpp", "mxfp4"),
            ("gpt-oss-120b", "mxfp4 (ggml-org GGUF 59.02 GiB)", "llama-cpp", "mxfp4"),
            ("gpt-oss-120b", "bf16", "mlx-lm", "bf16"),
            ("gpt-oss-120b", "bf16", "vllm", "bf16"),
            ("llama-3.1-8b", "F16", "llama-cpp", "bf16"),
            ("llama-3.1-8b", "mxfp4 (f16 label in llama-bench)", "llama-cpp", "mxfp4"),
        ] {
            assert_eq!(quant_of(model, label, engine).map(|(q, a)| (q, a.len())), Ok((want.to_string(), 0)), "{model} {label} on {engine}");
        }
        // A blank quant with the checkpoint named in the model column: the format its name ends
        // with; gpt-oss without a stated quant: its own MXFP4 experts, on every runtime. Each
        // says what it read. A plain name, or a repository whose name ends with no format, on a
        // GGUF runtime: the usual Q4_K_M, said without claiming exo runs that do not exist.
        for (model, label, engine, want, said) in [
            ("mlx-community/Qwen3-30B-A3B-4bit", "", "mlx-lm", "mlx-4bit", "as the checkpoint named in the model column"),
            ("unsloth/Qwen3-30B-A3B-GGUF:Q8_0", "unknown", "llama-cpp", "q8_0", "`unsloth/Qwen3-30B-A3B-GGUF:Q8_0`"),
            ("Qwen/Qwen3-30B-A3B-FP8", "", "vllm", "fp8", "as the checkpoint named in the model column"),
            ("gpt-oss-120b", "", "llama-cpp", "mxfp4", "the model's own MXFP4 experts"),
            ("ggml-org/gpt-oss-20b-GGUF", "unknown", "ollama", "mxfp4", "the model's own MXFP4 experts"),
            ("openai/gpt-oss-120b", "", "vllm", "mxfp4", "the model's own MXFP4 experts"),
            ("unsloth/Qwen3-30B-A3B-GGUF", "", "llama-cpp", "q4_k_m", "the usual GGUF type; no run of the same model says more"),
            ("qwen3:30b", "", "ollama", "q4_k_m", "the usual GGUF type"),
        ] {
            let (q, assumed) = quant_of(model, label, engine).unwrap();
            assert_eq!(q, want, "{model} `{label}` on {engine}");
            assert!(assumed.iter().any(|a| a.contains(said)), "{model} `{label}` on {engine}: {assumed:?}");
        }
        // The name's format still has to suit the engine; a plain model name says nothing.
        assert!(quant_of("Qwen/Qwen3-30B-A3B", "", "vllm").unwrap_err().contains("quant `` unknown"));
    }

    /// A GGUF row that does not say its type gets Q4_K_M; where that does not fit the row's
    /// machines (the run was made, so the file was smaller), the largest common type that fits,
    /// said; a model no type fits stays refused with the fit's reason. A stated type is never
    /// changed.
    #[test]
    fn an_unstated_gguf_type_that_does_not_fit_steps_down_to_one_that_does() {
        let rs = rows(
            "a,framework-desktop-ai-max-395,1,128gb,qwen3-235b-a22b,,llama-cpp,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n\
             b,mac-studio-m3-ultra,1,512gb,kimi-k2-thinking,unknown,llama-cpp,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n\
             c,framework-desktop-ai-max-395,1,128gb,qwen3-30b-a3b,,llama-cpp,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n\
             d,framework-desktop-ai-max-395,1,128gb,deepseek-v3.1,,llama-cpp,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n\
             e,framework-desktop-ai-max-395,1,128gb,qwen3-235b-a22b,q4_k_m,llama-cpp,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n\
             f,mac-studio-m4-max,1,128gb,qwen3-30b-a3b,,mlx-lm,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n\
             g,mac-studio-m4-max,1,128gb,qwen3-235b-a22b,,mlx-lm,none,none,,1,decode_tokens_per_s,1,tok/s,me,\n",
        );
        let (prepared, skipped) = prepare(&rs, &Profile::default_profile());
        let quant = |id: &str| prepared.iter().find(|p| p.row.id == id).map(|p| p.scenario.quant.id.clone());
        assert_eq!(quant("a").as_deref(), Some("q3_k_m"));
        assert_eq!(quant("b").as_deref(), Some("q3_k_m"));
        assert_eq!(quant("c").as_deref(), Some("q4_k_m"));
        // MLX: its converter's default, 4 bits, then 3.
        assert_eq!(quant("f").as_deref(), Some("mlx-4bit"));
        assert_eq!(quant("g").as_deref(), Some("mlx-3bit"));
        let said_g = &prepared.iter().find(|p| p.row.id == "g").unwrap().assumptions;
        assert!(said_g.iter().any(|a| a.starts_with("MLX quant not published: assumed mlx-3bit: mlx-4bit does not fit")), "{said_g:?}");
        let said = &prepared.iter().find(|p| p.row.id == "a").unwrap().assumptions;
        assert!(said.iter().any(|a| a.contains("assumed q3_k_m: q4_k_m does not fit the row's machines")), "{said:?}");
        assert_eq!(said.iter().filter(|a| a.starts_with(GUESSED_GGUF)).count(), 1, "{said:?}");
        let reasons: Vec<(&str, &str)> = skipped.iter().map(|s| (s.id.as_str(), s.reason.as_str())).collect();
        assert!(reasons.iter().any(|(id, why)| *id == "d" && why.contains("does not fit")), "{reasons:?}");
        assert!(reasons.iter().any(|(id, why)| *id == "e" && why.contains("does not fit")), "{reasons:?}");
    }

    #[test]
    fn a_config_that_declares_mxfp4_ships_mxfp4_experts() {
        // openai/gpt-oss-120b's config.json: `quantization_config.quant_method = "mxfp4"`.
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            RowModel::Config(p)
        };
        assert!(ships_mxfp4_experts(&write("oss.json", r#"{"quantization_config": {"quant_method": "mxfp4"}}"#)));
        assert!(!ships_mxfp4_experts(&write("fp8.json", r#"{"quantization_config": {"quant_method": "fp8"}}"#)));
        assert!(!ships_mxfp4_experts(&write("bad.json", "not json")));
        assert!(ships_mxfp4_experts(&RowModel::Preset("gpt-oss-20b".into())));
        assert!(!ships_mxfp4_experts(&RowModel::Preset("llama-3.1-8b".into())));
    }

    #[test]
    fn a_config_note_is_read_to_its_path() {
        assert_eq!(
            config_note("engine: via LM Studio; config: ../shared/configs/minimax-m2.1.json"),
            Some("../shared/configs/minimax-m2.1.json")
        );
        assert_eq!(config_note("config: ../shared/configs/glm-4.6.json; llama.cpp"), Some("../shared/configs/glm-4.6.json"));
        assert_eq!(config_note("see config: a/b.json."), Some("a/b.json"));
        assert_eq!(config_note("no note"), None);
    }
}
