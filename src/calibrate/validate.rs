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

use crate::estimate::estimate;
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
        rows.push(row);
    }
    Ok(rows)
}

fn first_word(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// Turns a row into a scenario builder (validated by the same rules as a scenario file when
/// built), with the assumptions made for what the row does not say; or says why it cannot.
pub fn row_scenario(row: &MeasurementRow, all: &[MeasurementRow]) -> Result<(ScenarioBuilder, Vec<String>), String> {
    let mut assumptions = Vec::new();
    let n: usize = row.nodes.trim().parse().map_err(|_| format!("node count `{}` is not a number", row.nodes))?;
    // A system is a family with a memory mix, or directly a catalog node (rows imported from a
    // user's own benchmarks name the node they ran on).
    let prefix = match row.system.as_str() {
        "mac-studio-m3-ultra" => "m3-ultra-80c-",
        other if crate::catalog::catalog().node(other).is_some() => other,
        other => return Err(format!("system `{other}` has no node preset")),
    };
    let nodes: Vec<String> = if prefix.ends_with('-') {
        let mix = row.node_mix.trim();
        let mut list = Vec::new();
        if mix.contains('+') || mix.contains('x') && !mix.starts_with("unknown") {
            for part in mix.split('+') {
                let (count, size) = part.split_once('x').map_or((1, part), |(c, s)| (c.parse().unwrap_or(1), s));
                for _ in 0..count {
                    list.push(format!("{prefix}{}", size.trim()));
                }
            }
        } else if mix.ends_with("gb") && !mix.starts_with("unknown") {
            list = vec![format!("{prefix}{mix}"); n];
        } else {
            assumptions.push(format!("node mix `{mix}` unknown: assumed {n}x 512 GB"));
            list = vec![format!("{prefix}512gb"); n];
        }
        list
    } else {
        vec![prefix.to_string(); n]
    };
    if nodes.len() != n {
        return Err(format!("node mix `{}` does not give {n} nodes", row.node_mix));
    }
    let engine = match row.engine.as_str() {
        "exo" => "exo",
        "llama-cpp" | "ollama" => "llama-cpp",
        "llama-cpp-rpc" => "llama-cpp-rpc",
        "hpl" if n == 1 => return Err("HPL rows: the single-node CPU HPL rate and power are catalog inputs, not predictions".into()),
        "hpl" => return hpl_scenario(row, &nodes, n, assumptions),
        "" => return Err("no engine: a catalog fact (idle power), not a prediction".into()),
        other => return Err(format!("engine `{other}` is not modelled")),
    };
    if row.model.is_empty() {
        return Err("no model".into());
    }
    let quant = resolve_quant(row, all, engine, &mut assumptions)?;
    let parallelism = if n == 1 { "none" } else { first_word(&row.parallelism) };
    let fabric_word = first_word(&row.fabric);
    if n > 1 && row.fabric.contains("not stated") {
        assumptions.push(format!("fabric not stated: assumed {fabric_word}"));
    }
    let (kind_prompt, generate) = match row.metric.as_str() {
        m if is_power(m) && row.prompt_tokens.trim().is_empty() && sibling_prompt(row, all).is_some() => {
            let p = sibling_prompt(row, all).expect("checked");
            assumptions.push(format!("power row: prompt {p} tokens, the longest of its benchmark's rows"));
            (p, 128)
        }
        m if m == "decode_tokens_per_s" || is_power(m) => {
            match row.prompt_tokens.trim().parse::<u64>() {
                // A decode measured after a given prompt (llama-bench `tg128` runs on an empty
                // context: 0).
                Ok(p) => (p.max(1), 128),
                Err(_) => {
                    assumptions.push("prompt length not published: assumed 128".into());
                    (128, 128)
                }
            }
        }
        "prefill_tokens_per_s" => {
            let p: u64 = row.prompt_tokens.trim().parse().map_err(|_| "prefill row without prompt length".to_string())?;
            (p, 1)
        }
        other => return Err(format!("metric `{other}` is not predicted (catalog fact or not modelled)")),
    };
    let mut b = ScenarioBuilder::new(format!("{}.toml", row.id));
    b.name(row.id.clone()).seed(1).nodes(&nodes).model(&row.model).quant(&quant).engine(engine).parallelism(parallelism);
    if n > 1 {
        b.fabric(fabric_word).topology("full-mesh");
    }
    b.tokens(kind_prompt, generate);
    Ok((b, assumptions))
}

/// Whether a metric is a wall-power figure the twin predicts.
fn is_power(metric: &str) -> bool {
    POWER_METRICS.contains(&metric)
}

/// Power metrics: peak during the benchmark (no suffix) or a phase's average.
const POWER_METRICS: [&str; 6] =
    ["node_power_w", "cluster_power_w", "node_power_w_decode", "cluster_power_w_decode", "node_power_w_prefill", "cluster_power_w_prefill"];

/// The source without its parenthesised detail: rows of one benchmark run share it.
fn source_stem(s: &str) -> &str {
    s.split('(').next().unwrap_or("").trim()
}

/// The longest prompt among rows of the same benchmark run as `row`.
fn sibling_prompt(row: &MeasurementRow, all: &[MeasurementRow]) -> Option<u64> {
    all.iter()
        .filter(|r| {
            r.system == row.system
                && r.node_mix == row.node_mix
                && r.model == row.model
                && r.quant == row.quant
                && r.engine == row.engine
                && source_stem(&r.source) == source_stem(&row.source)
        })
        .filter_map(|r| r.prompt_tokens.trim().parse::<u64>().ok())
        .max()
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

fn resolve_quant(row: &MeasurementRow, all: &[MeasurementRow], engine: &str, assumptions: &mut Vec<String>) -> Result<String, String> {
    let q = first_word(&row.quant);
    let known = crate::catalog::catalog().quant(q).is_some();
    if known && !row.quant.contains("unknown") {
        if row.quant.contains("inferred") {
            assumptions.push(format!("quant {q} inferred by the data set"));
        }
        return Ok(q.to_string());
    }
    if engine == "exo" {
        return Err(format!("quant `{}` unknown", row.quant));
    }
    // Unknown GGUF quant: same bit class as the MLX quant of the same system and model.
    let sibling =
        all.iter().find(|r| r.system == row.system && r.model == row.model && r.engine == "exo").map(|r| first_word(&r.quant).to_string());
    let pick = match sibling.as_deref() {
        Some("mlx-8bit") => "q8_0",
        Some(_) => "q4_k_m",
        None => "q4_k_m",
    };
    assumptions.push(format!("GGUF quant not published: assumed {pick} (bit class of the exo runs of the same model)"));
    Ok(pick.to_string())
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
}

/// Turns rows into scenarios; rows that cannot be predicted are returned with the reason.
pub fn prepare(rows: &[MeasurementRow], profile: &Profile) -> (Vec<Prepared>, Vec<SkippedRow>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for row in rows {
        let (builder, mut assumptions) = match row_scenario(row, rows) {
            Ok(x) => x,
            Err(reason) => {
                skipped.push(SkippedRow { id: row.id.clone(), reason });
                continue;
            }
        };
        let mut sc = match builder.build() {
            Ok(s) => s,
            Err(e) => {
                skipped.push(SkippedRow { id: row.id.clone(), reason: e.message });
                continue;
            }
        };
        let est = estimate(&sc, profile);
        if matches!(est, Err(crate::estimate::EstimateError::Plan(crate::engine::PlanError::DoesNotFit { .. }))) {
            // The model ran on that hardware, so the user had raised the wired limit.
            sc.wired_limit_fraction = Some(0.9);
            assumptions.push("does not fit the default wired limit: assumed raised to 90%".into());
        }
        out.push(Prepared { row: row.clone(), scenario: sc, assumptions });
    }
    (out, skipped)
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
}

/// The twin's prediction of a prepared row's metric.
pub fn predict(p: &Prepared, profile: &Profile) -> Result<f64, RowError> {
    let est = estimate(&p.scenario, profile)?;
    Ok(match p.row.metric.as_str() {
        "decode_tokens_per_s" => est.decode_tokens_per_s,
        "prefill_tokens_per_s" => est.prefill_tokens_per_s,
        "hpl_gflops" => est.hpl_gflops.ok_or_else(|| RowError::Metric(p.row.metric.clone()))?,
        "node_power_w" => est.node_peak_power_w.iter().cloned().fold(0.0, f64::max),
        "node_power_w_decode" => est.node_power_w.iter().cloned().fold(0.0, f64::max),
        "node_power_w_prefill" => est.node_prefill_power_w.iter().cloned().fold(0.0, f64::max),
        "cluster_power_w" => est.peak_power_w,
        "cluster_power_w_decode" => est.cluster_power_w,
        "cluster_power_w_prefill" => est.prefill_power_w,
        other => return Err(RowError::Metric(other.to_string())),
    })
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
    let _ = writeln!(s, "{:<24} {:<22} {:>10} {:>10} {:>8}", "id", "metric", "measured", "predicted", "error");
    for row in &r.rows {
        let _ = writeln!(s, "{:<24} {:<22} {:>10.2} {:>10.2} {:>7.1}%", row.id, row.metric, row.measured, row.predicted, row.error_percent);
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
