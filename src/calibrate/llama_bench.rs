//! llama-bench output as measurement rows.
//!
//! `llama-bench` (llama.cpp) is what most people already run on their machines. This module reads
//! its four output formats (`-o md`, the default table people paste into issues; `-o json`;
//! `-o jsonl`; `-o csv`) and turns every test into a row of the measurement CSV format
//! (`shared/data/measurements.csv`), so `validate` and `calibrate` take a user's own benchmarks.
//! llama-bench does not record which machine it ran on beyond the GPU's name, so the node is
//! matched from that name or given by the caller.

use std::path::Path;

use serde_json::Value;

use crate::calibrate::validate::MeasurementRow;
use crate::catalog::{Catalog, catalog};

/// Errors reading llama-bench output.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not llama-bench output in a known format.
    #[error("{path}: {message}")]
    Format {
        /// Path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The node cannot be decided.
    #[error("{0}")]
    Node(String),
}

/// One llama-bench test, whatever the output format.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRecord {
    /// `model_type`, e.g. `llama 70B Q4_K - Medium`: architecture, size class, file type.
    pub model_type: String,
    /// Parameter count, when recorded.
    pub n_params: Option<f64>,
    /// Backends, e.g. `Metal,BLAS`.
    pub backends: String,
    /// GPU and CPU names, when recorded (not in the markdown table).
    pub gpu_info: Option<String>,
    /// Prompt tokens of the test (`pp512` = 512).
    pub n_prompt: u64,
    /// Generated tokens of the test (`tg128` = 128).
    pub n_gen: u64,
    /// Context already in the KV cache before the test (`@ d4096`).
    pub n_depth: u64,
    /// Mean tokens per second.
    pub avg_ts: f64,
    /// Standard deviation of tokens per second, when recorded.
    pub stddev_ts: Option<f64>,
    /// Build commit, when recorded.
    pub build: Option<String>,
    /// Layers offloaded to the GPU (`-ngl`; negative, "all", reads as `u64::MAX`), when recorded.
    pub n_gpu_layers: Option<u64>,
}

impl BenchRecord {
    /// The test's name as llama-bench prints it (`pp512`, `tg128`, `pp512+tg128`, `... @ d4096`).
    pub fn test_name(&self) -> String {
        let base = match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        };
        if self.n_depth > 0 { format!("{base} @ d{}", self.n_depth) } else { base }
    }
}

/// Reads a llama-bench output file in any of its formats.
pub fn read(path: &Path) -> Result<Vec<BenchRecord>, BenchError> {
    let text = crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES)
        .map_err(|source| BenchError::Io { path: path.display().to_string(), source })?;
    parse(&text).map_err(|message| BenchError::Format { path: path.display().to_string(), message })
}

/// Parses llama-bench output text: JSON array, JSON lines, CSV or the markdown table.
pub fn parse(text: &str) -> Result<Vec<BenchRecord>, String> {
    let t = text.trim_start();
    let records = if t.starts_with('[') {
        let v: Value = serde_json::from_str(t).map_err(|e| format!("not valid JSON: {e}"))?;
        let arr = v.as_array().ok_or("a JSON array of llama-bench tests was expected")?;
        arr.iter().enumerate().map(|(i, o)| from_json(o).map_err(|e| format!("test {}: {e}", i + 1))).collect::<Result<Vec<_>, _>>()?
    } else if t.starts_with('{') {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).map_err(|e| format!("line {}: not valid JSON: {e}", i + 1))?;
            out.push(from_json(&v).map_err(|e| format!("line {}: {e}", i + 1))?);
        }
        out
    } else if t.starts_with('|') || text.lines().any(|l| l.trim_start().starts_with('|')) {
        parse_markdown(text)?
    } else {
        parse_csv(text)?
    };
    if records.is_empty() {
        return Err("no llama-bench tests found".into());
    }
    Ok(records)
}

fn json_f64(o: &Value, key: &str) -> Option<f64> {
    match o.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn json_str(o: &Value, key: &str) -> Option<String> {
    match o.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn from_json(o: &Value) -> Result<BenchRecord, String> {
    let model_type = json_str(o, "model_type").ok_or("no `model_type`: is this llama-bench output?")?;
    let avg_ts = json_f64(o, "avg_ts").ok_or("no `avg_ts`")?;
    let count = |k: &str| json_f64(o, k).map_or(0, |x| x.max(0.0) as u64);
    Ok(BenchRecord {
        model_type,
        n_params: json_f64(o, "model_n_params"),
        backends: json_str(o, "backends").unwrap_or_default(),
        gpu_info: Some(
            [json_str(o, "gpu_info"), json_str(o, "cpu_info")]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" / "),
        )
        .filter(|s| !s.is_empty()),
        n_prompt: count("n_prompt"),
        n_gen: count("n_gen"),
        n_depth: count("n_depth"),
        avg_ts,
        stddev_ts: json_f64(o, "stddev_ts"),
        build: json_str(o, "build_commit"),
        // Negative means "all layers" in llama.cpp's newer defaults.
        n_gpu_layers: json_f64(o, "n_gpu_layers").map(|x| if x < 0.0 { u64::MAX } else { x as u64 }),
    })
}

fn parse_csv(text: &str) -> Result<Vec<BenchRecord>, String> {
    let mut rdr = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let headers = rdr.headers().map_err(|e| format!("not CSV: {e}"))?.clone();
    if !headers.iter().any(|h| h == "model_type") || !headers.iter().any(|h| h == "avg_ts") {
        return Err("not llama-bench output: expected a JSON array (-o json), JSON lines (-o jsonl), CSV with `model_type` and `avg_ts` columns (-o csv) or the markdown table (-o md)".into());
    }
    let mut out = Vec::new();
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| format!("CSV line {}: {e}", i + 2))?;
        let obj: serde_json::Map<String, Value> =
            headers.iter().zip(rec.iter()).map(|(h, v)| (h.to_string(), Value::String(v.to_string()))).collect();
        out.push(from_json(&Value::Object(obj)).map_err(|e| format!("CSV line {}: {e}", i + 2))?);
    }
    Ok(out)
}

/// Parses `pp512`, `tg128`, `pp512+tg128`, with an optional ` @ d4096`.
fn parse_test(s: &str) -> Option<(u64, u64, u64)> {
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

/// `70.55 B`, `3.21 B`, `999.89 M` -> parameter count.
fn parse_params(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix('B') {
        (n, 1e9)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('K') {
        (n, 1e3)
    } else {
        (s, 1.0)
    };
    num.trim().parse::<f64>().ok().map(|x| x * mult)
}

fn cells(line: &str) -> Vec<String> {
    let l = line.trim();
    let l = l.strip_prefix('|').unwrap_or(l);
    let l = l.strip_suffix('|').unwrap_or(l);
    l.split('|').map(|c| c.trim().to_string()).collect()
}

fn parse_markdown(text: &str) -> Result<Vec<BenchRecord>, String> {
    let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| l.trim_start().starts_with('|')).collect();
    let mut out = Vec::new();
    let mut header: Option<Vec<String>> = None;
    for (n, line) in lines {
        let c = cells(line);
        if c.iter().all(|x| !x.is_empty() && x.chars().all(|ch| matches!(ch, '-' | ':'))) {
            continue; // the separator under the header
        }
        if c.iter().any(|x| x == "model") && c.iter().any(|x| x == "t/s") {
            header = Some(c);
            continue;
        }
        let h = header.as_ref().ok_or(format!("line {}: a table row before the header (`| model | ... | t/s |`)", n + 1))?;
        let col = |name: &str| h.iter().position(|x| x == name).and_then(|i| c.get(i)).map(String::as_str);
        let model_type = col("model").filter(|s| !s.is_empty()).ok_or(format!("line {}: no model", n + 1))?.to_string();
        let test = col("test").ok_or(format!("line {}: no `test` column", n + 1))?;
        let (n_prompt, n_gen, n_depth) = parse_test(test).ok_or(format!("line {}: test `{test}` is not ppN, tgN or ppN+tgN", n + 1))?;
        let ts = col("t/s").unwrap_or("");
        let (avg, sd) = match ts.split_once('±') {
            Some((a, s)) => (a.trim(), s.trim().parse().ok()),
            None => (ts.trim(), None),
        };
        let avg_ts = avg.parse::<f64>().map_err(|_| format!("line {}: t/s `{ts}` is not a number", n + 1))?;
        out.push(BenchRecord {
            model_type,
            n_params: col("params").and_then(parse_params),
            backends: col("backend").unwrap_or("").to_string(),
            gpu_info: None,
            n_prompt,
            n_gen,
            n_depth,
            avg_ts,
            stddev_ts: sd,
            build: None,
            n_gpu_layers: col("ngl").and_then(|x| x.parse::<i64>().ok()).map(|x| u64::try_from(x).unwrap_or(u64::MAX)),
        });
    }
    if out.is_empty() && header.is_none() {
        return Err("no llama-bench table header (`| model | ... | test | t/s |`) found".into());
    }
    // The build line llama-bench prints under the table.
    if let Some(b) = text.lines().find_map(|l| l.trim().strip_prefix("build:")) {
        let b = b.trim().to_string();
        for r in &mut out {
            r.build = Some(b.clone());
        }
    }
    Ok(out)
}

fn squash(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// The catalog nodes whose chip the GPU (or CPU) name names, by its most specific chip (an
/// "Apple M4 Max" names `m4-max`, not `m4`).
fn nodes_of_named_chip<'a>(gpu: &str, cat: &'a Catalog) -> Vec<&'a crate::hw::NodeSpec> {
    let g = squash(gpu);
    let named: Vec<&crate::hw::NodeSpec> = cat.nodes.iter().filter(|n| !n.chip.is_empty() && g.contains(&squash(&n.chip))).collect();
    let longest = named.iter().map(|n| squash(&n.chip).len()).max().unwrap_or(0);
    named.into_iter().filter(|n| squash(&n.chip).len() == longest).collect()
}

/// The catalog node a GPU (or CPU) name belongs to: its chip family must appear in the name, and
/// one preset of that chip must stand for it: the only one, or the only one in `plan`'s default
/// set (the chip's reference box: the Framework Desktop among the AI Max+ 395 boxes, the Mac
/// Studio for the M4 Max); else the caller has to say which.
pub fn node_for_gpu(gpu: &str, cat: &Catalog) -> Result<String, String> {
    let nodes = nodes_of_named_chip(gpu, cat);
    let reference: Vec<&str> = nodes.iter().filter(|n| n.planner).map(|n| n.id.as_str()).collect();
    let matches: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    let matches = if reference.len() == 1 { reference } else { matches };
    match matches.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!("GPU `{gpu}` matches no catalog node; pass --node (one of: {})", cat.node_ids().join(", "))),
        many => Err(format!("GPU `{gpu}` matches several catalog nodes ({}); pass --node with the one you ran on", many.join(", "))),
    }
}

/// Checks that `--node` does not contradict the GPU name llama-bench recorded: when the GPU
/// names a catalog chip, the node must have that chip (a GB10 run is not an M3 Ultra's). A GPU
/// name that matches no catalog chip cannot contradict anything.
pub fn check_node(records: &[BenchRecord], node: &str, cat: &Catalog) -> Result<(), String> {
    let Some(chosen) = cat.node(node) else { return Ok(()) };
    let mine = squash(&chosen.chip);
    for g in records.iter().filter_map(|r| r.gpu_info.as_deref()) {
        let g2 = squash(g);
        if !mine.is_empty() && g2.contains(&mine) {
            continue;
        }
        let chips: Vec<&str> = nodes_of_named_chip(g, cat).iter().map(|n| n.chip.as_str()).collect();
        if let Some(chip) = chips.first() {
            let ids: Vec<&str> = cat.nodes.iter().filter(|n| n.chip == *chip).map(|n| n.id.as_str()).collect();
            return Err(format!(
                "--node {node} is a {} but llama-bench ran on `{g}` ({chip}: {}); name the node it ran on, or add --force to relabel the run",
                chosen.chip,
                ids.join(", ")
            ));
        }
    }
    Ok(())
}

/// llama.cpp architecture names and the Hugging Face `model_type`s they cover.
const ARCHES: &[(&str, &[&str])] = &[
    ("llama", &["llama"]),
    ("deepseek2", &["deepseek_v3", "kimi_k2"]),
    ("qwen3moe", &["qwen3_moe"]),
    ("gpt-oss", &["gpt_oss"]),
    ("gpt_oss", &["gpt_oss"]),
];

/// The catalog model of a llama-bench `model_type` (architecture plus parameter count; the count
/// must be within 15% of the preset's).
pub fn model_for(model_type: &str, n_params: Option<f64>, cat: &Catalog) -> Result<String, String> {
    let arch = model_type.split_whitespace().next().unwrap_or("");
    let hf = ARCHES
        .iter()
        .find(|(a, _)| *a == arch)
        .map(|(_, h)| *h)
        .ok_or(format!("architecture `{arch}` has no model preset (known: llama, deepseek2, qwen3moe, gpt-oss)"))?;
    let size = model_type.split_whitespace().nth(1).unwrap_or("");
    let params = n_params
        .or_else(|| parse_params(size.split('.').next().unwrap_or("")))
        .ok_or(format!("`{model_type}`: no parameter count to tell the model size"))?;
    let best = cat
        .models
        .iter()
        .filter(|(_, m)| hf.contains(&m.arch.as_str()))
        .map(|(p, m)| (p.id.as_str(), ((m.total_params() as f64) / params - 1.0).abs()))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((id, rel)) if rel <= 0.15 => Ok(id.to_string()),
        _ => Err(format!("`{model_type}` ({:.1} B parameters): no model preset of that architecture and size", params / 1e9)),
    }
}

/// The catalog quantization of a GGUF file type as llama.cpp names it.
pub fn quant_for(model_type: &str) -> Result<&'static str, String> {
    let ftype = model_type.split_whitespace().skip(2).collect::<Vec<_>>().join(" ");
    let q = match ftype.as_str() {
        "Q4_K - Medium" => "q4_k_m",
        "Q8_0" => "q8_0",
        "Q2_K - Medium" | "Q2_K" => "q2_k",
        "MXFP4 MoE" | "MXFP4" => "mxfp4",
        "BF16" => "bf16",
        _ => return Err(format!("file type `{ftype}` has no quantization preset (known: Q4_K - Medium, Q8_0, Q2_K, MXFP4, BF16)")),
    };
    Ok(q)
}

/// A test that became no row, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SkippedTest {
    /// `model_type` and test name.
    pub what: String,
    /// Why.
    pub reason: String,
}

/// Turns llama-bench tests into measurement rows on `node` (a catalog node id; `None`: matched
/// from each test's GPU name). Ids are `{stem}-{n}-{test}`.
pub fn to_rows(
    records: &[BenchRecord],
    node: Option<&str>,
    stem: &str,
    source: &str,
) -> Result<(Vec<MeasurementRow>, Vec<SkippedTest>), BenchError> {
    let cat = catalog();
    if let Some(n) = node {
        if cat.node(n).is_none() {
            let hint = crate::util::did_you_mean(n, &cat.node_ids()).map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
            return Err(BenchError::Node(format!("unknown node `{n}`{hint}; `supernode catalog nodes` lists them")));
        }
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let test = r.test_name();
        let what = format!("{} {test}", r.model_type);
        let skip = |reason: String| SkippedTest { what: what.clone(), reason };
        if r.backends.split(',').any(|b| b.trim().eq_ignore_ascii_case("RPC")) {
            skipped.push(skip(
                "RPC backend: a multi-node run, and llama-bench records neither the node count nor the fabric; write its row by hand"
                    .into(),
            ));
            continue;
        }
        if r.n_gpu_layers == Some(0) {
            skipped.push(skip("CPU-only run (-ngl 0): the twin models inference on the GPU".into()));
            continue;
        }
        let (metric, prompt) = match (r.n_prompt, r.n_gen, r.n_depth) {
            (p, 0, 0) if p > 0 => ("prefill_tokens_per_s", p),
            (0, g, d) if g > 0 => ("decode_tokens_per_s", d),
            (_, 0, _) => {
                skipped.push(skip("prefill after a filled context (`@ d`) is not a measurement row the twin predicts".into()));
                continue;
            }
            _ => {
                skipped.push(skip("a combined prompt+generation test mixes two rates; use the separate pp and tg tests".into()));
                continue;
            }
        };
        if !r.avg_ts.is_finite() || r.avg_ts <= 0.0 {
            skipped.push(skip(format!("rate {} is not a positive number", r.avg_ts)));
            continue;
        }
        let node_id = match node {
            Some(n) => n.to_string(),
            None => match &r.gpu_info {
                Some(g) => node_for_gpu(g, cat).map_err(BenchError::Node)?,
                None => {
                    return Err(BenchError::Node("this output does not name the GPU (the markdown table never does); pass --node".into()));
                }
            },
        };
        let model = match model_for(&r.model_type, r.n_params, cat) {
            Ok(m) => m,
            Err(e) => {
                skipped.push(skip(e));
                continue;
            }
        };
        let quant = match quant_for(&r.model_type) {
            Ok(q) => q,
            Err(e) => {
                skipped.push(skip(e));
                continue;
            }
        };
        let mut notes = Vec::new();
        if let Some(sd) = r.stddev_ts {
            notes.push(format!("stddev {sd} tok/s"));
        }
        if !r.backends.is_empty() {
            notes.push(format!("backends {}", r.backends));
        }
        if let Some(g) = &r.gpu_info {
            notes.push(format!("gpu {g}"));
        }
        rows.push(MeasurementRow {
            id: format!("{stem}-{}-{}", i + 1, test.replace(" @ ", "-")),
            system: node_id,
            nodes: "1".into(),
            node_mix: String::new(),
            model,
            quant: quant.into(),
            engine: "llama-cpp".into(),
            parallelism: "none".into(),
            fabric: "none".into(),
            prompt_tokens: prompt.to_string(),
            concurrency: String::new(),
            metric: metric.into(),
            value: r.avg_ts,
            unit: "tok/s".into(),
            source: match &r.build {
                Some(b) => format!("llama-bench (build {b}) {source} {test}"),
                None => format!("llama-bench {source} {test}"),
            },
            notes: notes.join("; "),
        });
    }
    Ok((rows, skipped))
}

/// Measurement rows as CSV text in the format of `shared/data/measurements.csv`.
pub fn rows_csv(rows: &[MeasurementRow]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).expect("a row serializes");
    }
    String::from_utf8(w.into_inner().expect("in-memory writer")).expect("CSV is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_names_round_trip() {
        for t in ["pp512", "tg128", "pp512+tg128", "tg128 @ d4096", "pp2048 @ d8192"] {
            let (p, g, d) = parse_test(t).unwrap();
            let r = BenchRecord {
                model_type: String::new(),
                n_params: None,
                backends: String::new(),
                gpu_info: None,
                n_prompt: p,
                n_gen: g,
                n_depth: d,
                avg_ts: 1.0,
                stddev_ts: None,
                build: None,
                n_gpu_layers: None,
            };
            assert_eq!(r.test_name(), t);
        }
        assert_eq!(parse_test("xx12"), None);
    }

    #[test]
    fn params_and_presets() {
        assert_eq!(parse_params("70.55 B"), Some(70.55e9));
        assert_eq!(parse_params("999.89 M"), Some(999.89e6));
        let cat = catalog();
        assert_eq!(model_for("llama 70B Q4_K - Medium", Some(70.55e9), cat).unwrap(), "llama-3.3-70b");
        assert_eq!(model_for("llama 3B Q4_K - Medium", Some(3.21e9), cat).unwrap(), "llama-3.2-3b");
        assert_eq!(model_for("llama 405B Q4_K - Medium", None, cat).unwrap(), "llama-3.1-405b");
        assert!(model_for("deepseek2 671B Q4_K - Medium", Some(671.0e9), cat).unwrap().starts_with("deepseek"));
        assert_eq!(model_for("qwen3moe 235B.A22B Q8_0", Some(235.09e9), cat).unwrap(), "qwen3-235b-a22b");
        assert_eq!(model_for("llama 8B Q4_K - Medium", Some(8.03e9), cat).unwrap(), "llama-3.1-8b");
        assert!(model_for("llama 13B Q4_K - Medium", Some(13.0e9), cat).unwrap_err().contains("no model preset"));
        assert!(model_for("mamba 2B Q8_0", Some(2e9), cat).unwrap_err().contains("architecture `mamba`"));
        assert_eq!(quant_for("llama 70B Q4_K - Medium").unwrap(), "q4_k_m");
        assert!(quant_for("llama 70B IQ4_XS - 4.25 bpw").unwrap_err().contains("IQ4_XS"));
    }

    #[test]
    fn negative_gpu_layers_mean_all_and_zero_means_cpu_only() {
        let text = |ngl: i64| {
            format!(r#"[{{"model_type":"llama 3B Q4_K - Medium","model_n_params":3.2e9,"n_gpu_layers":{ngl},"n_gen":128,"avg_ts":100}}]"#)
        };
        let (rows, skipped) = to_rows(&parse(&text(-1)).unwrap(), Some("m3-ultra-80c-512gb"), "t", "t").unwrap();
        assert_eq!((rows.len(), skipped.len()), (1, 0));
        let (rows, skipped) = to_rows(&parse(&text(0)).unwrap(), Some("m3-ultra-80c-512gb"), "t", "t").unwrap();
        assert_eq!(rows.len(), 0);
        assert!(skipped[0].reason.contains("CPU-only"));
    }

    #[test]
    fn gpu_names_pick_a_node_only_when_unique() {
        let cat = catalog();
        let e = node_for_gpu("NVIDIA GB10", cat).unwrap_err();
        assert!(e.contains("dell-pro-max-gb10") && e.contains("dgx-spark"), "{e}");
        assert_eq!(
            node_for_gpu("Radeon 8060S Graphics AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", cat).unwrap(),
            "framework-desktop-ai-max-395"
        );
        // The most specific chip the name names: an M4 Max is not the base M4's Mac mini.
        assert_eq!(node_for_gpu("Apple M4 Max", cat).unwrap(), "m4-max-40c-128gb");
        assert_eq!(node_for_gpu("Apple M4", cat).unwrap(), "mac-mini-m4-10c-16gb");
        let e = node_for_gpu("Apple M3 Ultra", cat).unwrap_err();
        assert!(e.contains("m3-ultra-80c-512gb") && e.contains("--node"), "{e}");
        assert!(node_for_gpu("Intel Arc A770", cat).unwrap_err().contains("matches no catalog node"));
    }
}
