//! llama-bench output as measurement rows.
//!
//! `llama-bench` (llama.cpp) is what most people already run on their machines. This module reads
//! its four output formats (`-o md`, the default table people paste into issues; `-o json`;
//! `-o jsonl`; `-o csv`) and turns every test into a row of the measurement CSV format
//! (`shared/data/measurements.csv`), so `validate` and `calibrate` take a user's own benchmarks.
//! llama-bench does not record which machine it ran on beyond the GPU's name, so the node is
//! matched from that name or given by the caller.
//!
//! The model: the GGUF file's name first (`model_filename`, in the JSON, JSONL and CSV outputs:
//! `.../Qwen3-30B-A3B-Q4_K_M.gguf`, `gpt-oss-120b-mxfp4-00001-of-00003.gguf`), without its shard
//! suffix and quant label, through the catalog's name resolver
//! ([`crate::catalog::Catalog::find_model`], as `validate` and scenarios read names); else (the
//! markdown table, or a file name no preset answers to) the `model_type`'s architecture and
//! parameter count. The quantization: the `model_type`'s file type (`Q4_K - Medium`), or the
//! file name's label where that file type is absent or generic (`F16`, `(guessed)`, `unknown`).
//! Which of them decided is written into each row's notes.

use std::path::Path;

use serde_json::Value;

use crate::calibrate::validate::{MeasurementRow, parse_test};
pub use crate::catalog::llama_arch::model_for;
use crate::catalog::llama_arch::{ARCHES, PARAM_TOLERANCE, parse_params, presets_by_architecture};
use crate::catalog::names::{ModelNameError, model_key};
use crate::catalog::{Catalog, ModelPreset, catalog};
use crate::llm::ModelSpec;
use crate::llm::QuantFamily;

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
    /// The GGUF file's path as given to `-m` (`model_filename`; not in the markdown table).
    pub model_filename: Option<String>,
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
    /// Micro-batch of the test (`-ub`, `n_ubatch`), when recorded (not in the default markdown
    /// table): the prefill chunk `validate` reads back from the row's notes.
    pub n_ubatch: Option<u64>,
    /// Layers offloaded to the GPU (`-ngl`; negative, "all", reads as `u64::MAX`), when recorded.
    pub n_gpu_layers: Option<u64>,
    /// Flash attention (`-fa`): 1 on, 0 off, -1 auto, when recorded (JSON and CSV always; the
    /// markdown table only where it differs from the build's default, as its `fa` column).
    pub flash_attn: Option<i64>,
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

/// llama-bench's `flash_attn` field: a bool before llama.cpp's `auto` type (llama-cpp-python
/// 0.2.76's llama-bench), an int after (-1 auto, 0 off, 1 on: `llama_flash_attn_type`), in a
/// table cell also `true`/`false`/`auto`.
fn flash_attn_of(v: Option<&Value>) -> Option<i64> {
    let text = |s: &str| match s.trim().to_lowercase().as_str() {
        "-1" | "auto" => Some(-1),
        w => crate::engine::runtimes::llama_cpp::on_off(w).map(i64::from),
    };
    match v? {
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => n.as_i64().filter(|x| (-1..=1).contains(x)),
        Value::String(s) => text(s),
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
        model_filename: json_str(o, "model_filename").filter(|f| !f.trim().is_empty()),
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
        n_ubatch: json_f64(o, "n_ubatch").filter(|x| *x >= 1.0).map(|x| x as u64),
        // Negative means "all layers" in llama.cpp's newer defaults.
        n_gpu_layers: json_f64(o, "n_gpu_layers").map(|x| if x < 0.0 { u64::MAX } else { x as u64 }),
        flash_attn: flash_attn_of(o.get("flash_attn")),
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
            model_filename: None,
            backends: col("backend").unwrap_or("").to_string(),
            gpu_info: None,
            n_prompt,
            n_gen,
            n_depth,
            avg_ts,
            stddev_ts: sd,
            build: None,
            n_ubatch: col("n_ubatch").and_then(|x| x.parse().ok()),
            n_gpu_layers: col("ngl").and_then(|x| x.parse::<i64>().ok()).map(|x| u64::try_from(x).unwrap_or(u64::MAX)),
            flash_attn: flash_attn_of(col("fa").map(|x| Value::String(x.to_string())).as_ref()),
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

/// The file-type part of a `model_type` (`Q4_K - Medium` of `llama 70B Q4_K - Medium`): after the
/// architecture and size words, and after a parenthesised size name (`17Bx16E (Scout)`).
fn file_type(model_type: &str) -> String {
    let words: Vec<&str> = model_type.split_whitespace().skip(2).skip_while(|w| w.starts_with('(') && w.ends_with(')')).collect();
    words.join(" ")
}

/// Whether a file type says nothing about the quantization: absent, unknown to llama.cpp
/// (`unknown, may not work`), guessed from the tensors (`... (guessed)`), or a float type an
/// older llama.cpp printed for files whose experts are quantized (the fw-gptoss120b-1 row: an
/// MXFP4 gpt-oss reported as `F16`).
fn generic_file_type(ftype: &str) -> bool {
    let head = ftype.split(" - ").next().unwrap_or("").trim();
    ftype.is_empty() || ftype.contains("(guessed)") || ftype.starts_with("unknown") || matches!(head, "F16" | "BF16" | "F32" | "all F32")
}

/// The catalog quantization of a GGUF file type as llama.cpp names it, read by the catalog's
/// label reader ([`Catalog::find_quant`]).
pub fn quant_for(model_type: &str) -> Result<String, String> {
    quant_of_file_type(&file_type(model_type), catalog())
}

fn quant_of_file_type(ftype: &str, cat: &Catalog) -> Result<String, String> {
    // The catalog's reader knows llama.cpp's file-type names (`Q4_K - Medium`, `MXFP4 MoE`).
    match cat.find_quant(ftype, QuantFamily::Gguf) {
        Ok(q) if !q.by_width => Ok(q.id),
        _ => Err(format!(
            "file type `{ftype}` has no quantization preset (Q4_K - Medium, Q8_0, Q6_K, MXFP4 MoE, BF16, ...: `supernode catalog quants` lists them)"
        )),
    }
}

/// A GGUF file name taken apart: the model's name (directory, `.gguf`, the shard suffix
/// `-00001-of-00003` and the quant label dropped), and the quant preset its label names.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufName {
    /// The file's name without directory.
    pub file: String,
    /// The model's part of it (`gpt-oss-120b`).
    pub model: String,
    /// The quant label as written (`UD-Q4_K_XL`), when its last one or two tokens name a preset.
    pub label: Option<String>,
    /// The preset that label names.
    pub quant: Option<String>,
}

/// Takes a GGUF path apart (see [`GgufName`]); the label is read by [`Catalog::find_quant`].
pub fn gguf_name(path: &str, cat: &Catalog) -> GgufName {
    let file = path.trim().rsplit(['/', '\\']).next().unwrap_or("").to_string();
    let stem = file
        .len()
        .checked_sub(5)
        .filter(|&n| file.is_char_boundary(n) && file[n..].eq_ignore_ascii_case(".gguf"))
        .map_or(file.as_str(), |n| &file[..n]);
    let mut tokens: Vec<&str> = stem.split('-').collect();
    // llama.cpp's split files: `<name>-00002-of-00004.gguf` (llama_get_list_splits).
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    if let [.., a, of, b] = tokens.as_slice() {
        if digits(a) && of.eq_ignore_ascii_case("of") && digits(b) {
            tokens.truncate(tokens.len() - 3);
        }
    }
    for n in [2, 1] {
        if tokens.len() > n {
            let label = tokens[tokens.len() - n..].join("-");
            if let Some(q) = cat.find_quant(&label, QuantFamily::Gguf).ok().filter(|q| !q.by_width) {
                return GgufName { model: tokens[..tokens.len() - n].join("-"), file, label: Some(label), quant: Some(q.id) };
            }
        }
    }
    GgufName { model: tokens.join("-"), file, label: None, quant: None }
}

/// The model and quantization of one llama-bench test, and how each was decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Identified {
    /// Catalog model id.
    pub model: String,
    /// Catalog quantization id.
    pub quant: String,
    /// What decided each (written into the row's notes).
    pub how: Vec<String>,
}

/// The model of a test: the file name through the catalog's resolver (checked against the
/// `model_type`'s architecture and parameter count where those are known), else the
/// architecture rule; an ambiguous file name, or one contradicting the `model_type`, is an error.
fn identify_model(r: &BenchRecord, file: Option<&GgufName>, cat: &Catalog, how: &mut Vec<String>) -> Result<String, String> {
    let by_arch = || presets_by_architecture(&r.model_type, r.n_params, cat);
    let arch_note = |ids: &[String], why: &str| {
        let twins = match ids.len() {
            0 | 1 => String::new(),
            2 => format!("; {} has the same architecture and size", ids[1]),
            _ => format!("; {} have the same architecture and size", ids[1..].join(", ")),
        };
        format!("model {} from model_type `{}` (architecture and parameter count{why}{twins})", ids[0], r.model_type)
    };
    let Some(f) = file else {
        let ids = by_arch()?;
        how.push(arch_note(&ids, ""));
        return Ok(ids[0].clone());
    };
    match find_file_model(&f.model, cat) {
        Ok((p, m)) => {
            let arch = r.model_type.split_whitespace().next().unwrap_or("");
            let other_arch = ARCHES.iter().find(|(a, _)| *a == arch).is_some_and(|(_, hf)| !hf.contains(&m.arch.as_str()));
            let other_size = r.n_params.is_some_and(|n| ((m.total_params() as f64) / n - 1.0).abs() > PARAM_TOLERANCE);
            if other_arch || other_size {
                return Err(format!(
                    "file name `{}` names {} ({}, {:.1} B parameters) but llama-bench loaded a `{}`{}: which file ran?",
                    f.file,
                    p.id,
                    m.arch,
                    m.total_params() as f64 / 1e9,
                    r.model_type,
                    r.n_params.map_or(String::new(), |n| format!(" of {:.1} B parameters", n / 1e9))
                ));
            }
            how.push(format!("model {} from file name `{}`", p.id, f.file));
            Ok(p.id.clone())
        }
        Err(ModelNameError::Unknown(_)) => {
            let tried = format!("file name `{}` names no catalog model (compared as `{}`)", f.file, model_key(&f.model));
            let ids = by_arch().map_err(|e| format!("{tried}, and by architecture: {e}"))?;
            how.push(arch_note(&ids, &format!("; {tried}")));
            Ok(ids[0].clone())
        }
        Err(e) => Err(format!("file name `{}`: {e}", f.file)),
    }
}

/// The preset a GGUF file's model name means: as written, else its part after the last `_`
/// (llama.cpp's `-hf` downloads are cached as `<org>_<repo>_<file>`, common/arg.cpp at 4227c9be:
/// `ggml-org_gpt-oss-120b-GGUF_gpt-oss-120b-mxfp4-00001-of-00003.gguf`; some publishers name
/// files `<org>_<name>`: `google_gemma-3-27b-it-Q4_K_M.gguf`), else after the first `_`.
fn find_file_model<'a>(name: &str, cat: &'a Catalog) -> Result<&'a (ModelPreset, ModelSpec), ModelNameError> {
    let as_written = cat.find_model(name);
    if !matches!(as_written, Err(ModelNameError::Unknown(_))) {
        return as_written;
    }
    for tail in [name.rsplit_once('_').map(|(_, t)| t), name.split_once('_').map(|(_, t)| t)].into_iter().flatten() {
        match cat.find_model(tail) {
            Err(ModelNameError::Unknown(_)) => {}
            found => return found,
        }
    }
    as_written
}

/// The model and quantization of one test (see the module doc for the order of the sources).
pub fn identify(r: &BenchRecord, cat: &Catalog) -> Result<Identified, String> {
    let file = r.model_filename.as_deref().map(|f| gguf_name(f, cat));
    let mut how = Vec::new();
    let model = identify_model(r, file.as_ref(), cat, &mut how)?;
    let ftype = file_type(&r.model_type);
    let from_file = file.as_ref().and_then(|f| Some((f.label.clone()?, f.quant.clone()?)));
    let quant = match from_file {
        Some((label, q)) if generic_file_type(&ftype) => {
            let said = if ftype.is_empty() { "no file type".to_string() } else { format!("file type `{ftype}`") };
            how.push(format!("quant {q} from the file name's label `{label}` (model_type gives {said})"));
            q
        }
        _ => quant_of_file_type(&ftype, cat)?,
    };
    Ok(Identified { model, quant, how })
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
            // After a filled context (`ppN @ dD`) the prompt column holds depth and prompt, as the
            // published rows write it; `validate` reads the depth back from the test name in the
            // row's source and times the N tokens after it.
            (p, 0, d) if p > 0 => ("prefill_tokens_per_s", d + p),
            (0, g, d) if g > 0 => ("decode_tokens_per_s", d),
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
        let Identified { model, quant, how } = match identify(r, cat) {
            Ok(x) => x,
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
        if let Some(ub) = r.n_ubatch {
            // In llama.cpp's own flag, which `validate` reads as the prefill chunk.
            notes.push(format!("-ub {ub}"));
        }
        if let Some(fa) = r.flash_attn {
            // In llama.cpp's own flag, which `validate` reads (`auto` says nothing).
            notes.push(format!("-fa {}", if fa < 0 { "auto".to_string() } else { fa.to_string() }));
        }
        if let Some(g) = &r.gpu_info {
            notes.push(format!("gpu {g}"));
        }
        notes.extend(how);
        rows.push(MeasurementRow {
            id: format!("{stem}-{}-{}", i + 1, test.replace(" @ ", "-")),
            system: node_id,
            nodes: "1".into(),
            node_mix: String::new(),
            model,
            quant,
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
            metric_read_as: None,
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
                model_filename: None,
                backends: String::new(),
                gpu_info: None,
                n_prompt: p,
                n_gen: g,
                n_depth: d,
                avg_ts: 1.0,
                stddev_ts: None,
                build: None,
                n_ubatch: None,
                n_gpu_layers: None,
                flash_attn: None,
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
        assert_eq!(model_for("llama 13B Q4_K - Medium", Some(13.02e9), cat).unwrap(), "llama-2-13b");
        assert!(model_for("llama 34B Q4_K - Medium", Some(33.74e9), cat).unwrap_err().contains("no model preset"));
        assert!(model_for("mamba 2B Q8_0", Some(2e9), cat).unwrap_err().contains("architecture `mamba`"));
        // Sizes llama.cpp writes with the expert count: active by experts, experts of a size.
        assert_eq!(model_for("llama4 17Bx16E (Scout) Q4_K - Medium", None, cat).unwrap(), "llama-4-scout-17b-16e");
        assert_eq!(model_for("llama4 17Bx128E (Maverick) Q4_K - Medium", None, cat).unwrap(), "llama-4-maverick-17b-128e");
        assert_eq!(model_for("llama 8x7B Q4_K - Medium", None, cat).unwrap(), "mixtral-8x7b");
        assert_eq!(model_for("llama 8x22B Q4_K - Medium", None, cat).unwrap(), "mixtral-8x22b");
        assert!(model_for("llama4 17Bx64E Q4_K - Medium", None, cat).unwrap_err().contains("64 routed experts"));
        assert_eq!(quant_for("llama 70B Q4_K - Medium").unwrap(), "q4_k_m");
        // llama.cpp's i-quant file-type names (llama_model_ftype_name) import as their presets.
        for (model_type, id) in [
            ("llama 70B IQ4_XS - 4.25 bpw", "iq4_xs"),
            ("llama 70B IQ4_NL - 4.5 bpw", "iq4_nl"),
            ("llama 70B IQ3_S mix - 3.66 bpw", "iq3_m"),
            ("llama 70B IQ3_S - 3.4375 bpw", "iq3_s"),
            ("llama 70B IQ3_XS - 3.3 bpw", "iq3_xs"),
            ("llama 70B IQ3_XXS - 3.0625 bpw", "iq3_xxs"),
            ("llama 70B IQ2_M - 2.7 bpw", "iq2_m"),
            ("llama 70B IQ2_S - 2.5 bpw", "iq2_s"),
            ("llama 70B IQ2_XS - 2.3125 bpw", "iq2_xs"),
            ("llama 70B IQ2_XXS - 2.0625 bpw", "iq2_xxs"),
            ("llama 70B IQ1_M - 1.75 bpw", "iq1_m"),
            ("llama 70B IQ1_S - 1.5625 bpw", "iq1_s"),
            ("llama 70B Q3_K - Small", "q3_k_s"),
            ("llama 70B Q3_K - Large", "q3_k_l"),
            ("llama 70B Q5_K - Small", "q5_k_s"),
        ] {
            assert_eq!(quant_for(model_type).as_deref(), Ok(id), "{model_type}");
        }
        assert!(quant_for("llama 70B TQ1_0 - 1.69 bpw ternary").unwrap_err().contains("has no quantization preset"));
    }

    /// A test of `model_type` from `file` (avg_ts is a placeholder: only the names are read).
    fn record(model_type: &str, n_params: Option<f64>, file: Option<&str>) -> BenchRecord {
        BenchRecord {
            model_type: model_type.into(),
            n_params,
            model_filename: file.map(String::from),
            backends: "CUDA".into(),
            gpu_info: None,
            n_prompt: 0,
            n_gen: 128,
            n_depth: 0,
            avg_ts: 1.0,
            stddev_ts: None,
            build: None,
            n_ubatch: None,
            n_gpu_layers: None,
            flash_attn: None,
        }
    }

    #[test]
    fn gguf_file_names_come_apart_into_model_and_quant() {
        let g = gguf_name("/models/gpt-oss-120b-mxfp4-00001-of-00003.gguf", catalog());
        assert_eq!((g.model.as_str(), g.label.as_deref(), g.quant.as_deref()), ("gpt-oss-120b", Some("mxfp4"), Some("mxfp4")));
        assert_eq!(g.file, "gpt-oss-120b-mxfp4-00001-of-00003.gguf");
        let g = gguf_name(r"C:\models\GLM-4.6-UD-Q4_K_XL-00001-of-00005.gguf", catalog());
        assert_eq!((g.model.as_str(), g.label.as_deref(), g.quant.as_deref()), ("GLM-4.6", Some("UD-Q4_K_XL"), Some("ud-q4_k_xl")));
        let g = gguf_name("gemma-3-27b-it-qat-Q4_0.GGUF", catalog());
        assert_eq!((g.model.as_str(), g.quant.as_deref()), ("gemma-3-27b-it-qat", Some("q4_0")));
        let g = gguf_name("Llama-3.3-70B-Instruct-F16.gguf", catalog());
        assert_eq!(g.quant.as_deref(), Some("bf16"));
        // i-quants and Unsloth's dynamic labels (read as the nearest standard file type).
        let g = gguf_name("my-finetune-IQ4_XS.gguf", catalog());
        assert_eq!((g.model.as_str(), g.quant.as_deref()), ("my-finetune", Some("iq4_xs")));
        let g = gguf_name("GLM-4.6-UD-Q3_K_XL-00001-of-00004.gguf", catalog());
        assert_eq!((g.model.as_str(), g.label.as_deref(), g.quant.as_deref()), ("GLM-4.6", Some("UD-Q3_K_XL"), Some("q3_k_m")));
        let g = gguf_name("DeepSeek-R1-0528-UD-IQ1_S-00001-of-00004.gguf", catalog());
        assert_eq!((g.model.as_str(), g.quant.as_deref()), ("DeepSeek-R1-0528", Some("iq1_s")));
        // No label a preset answers to: the whole stem is the model's name.
        let g = gguf_name("my-finetune-TQ1_0.gguf", catalog());
        assert_eq!((g.model.as_str(), g.label), ("my-finetune-TQ1_0", None));
    }

    /// The newer catalog architectures import by file name (llama-bench's `model_type` as llama.cpp
    /// 4227c9be prints it: `llm_type_name` and `llama_model_ftype_name`; parameter counts from
    /// FACTS-2026 section C and the catalog's model cards).
    #[test]
    fn files_of_the_newer_architectures_import_by_name() {
        let cat = catalog();
        for (model_type, n, file, model, quant) in [
            ("qwen3next 80B.A3B Q4_K - Medium", Some(79.67e9), "Qwen3-Next-80B-A3B-Instruct-Q4_K_M.gguf", "qwen3-coder-next", "q4_k_m"),
            ("qwen3next ?B Q8_0", None, "models/Qwen3-Coder-Next-Q8_0-00001-of-00002.gguf", "qwen3-coder-next", "q8_0"),
            ("glm4moe 106B.A12B Q4_K - Medium", Some(106.9e9), "GLM-4.5-Air-Q4_K_M-00001-of-00002.gguf", "glm-4.5-air", "q4_k_m"),
            ("gemma3 27B Q4_0", Some(27.0e9), "gemma-3-27b-it-qat-Q4_0.gguf", "gemma-3-27b", "q4_0"),
            ("gpt-oss 20B MXFP4 MoE", Some(20.9e9), "/models/gpt-oss-20b-mxfp4.gguf", "gpt-oss-20b", "mxfp4"),
            ("gpt-oss ?B MXFP4 MoE", None, "gpt-oss-120b-mxfp4-00001-of-00003.gguf", "gpt-oss-120b", "mxfp4"),
            (
                "llama4 17Bx16E (Scout) Q4_K - Medium",
                Some(107.8e9),
                "Llama-4-Scout-17B-16E-Instruct-Q4_K_M.gguf",
                "llama-4-scout-17b-16e",
                "q4_k_m",
            ),
            ("glm4moe 355B.A32B Q4_K - Medium", None, "GLM-4.6-UD-Q4_K_XL-00001-of-00005.gguf", "glm-4.6", "q4_k_m"),
            ("qwen3moe 30B.A3B Q4_K - Medium", Some(30.5e9), "Qwen3-Coder-30B-A3B-Instruct-Q4_K_M.gguf", "qwen3-coder-30b-a3b", "q4_k_m"),
            // `<org>_<repo>` file names.
            ("gemma3 27B Q4_K - Medium", None, "google_gemma-3-27b-it-Q4_K_M.gguf", "gemma-3-27b", "q4_k_m"),
            ("gpt-oss 20B MXFP4 MoE", None, "openai_gpt-oss-20b-MXFP4.gguf", "gpt-oss-20b", "mxfp4"),
            (
                "gpt-oss 120B MXFP4 MoE",
                None,
                "/root/.cache/llama.cpp/ggml-org_gpt-oss-120b-GGUF_gpt-oss-120b-mxfp4-00001-of-00003.gguf",
                "gpt-oss-120b",
                "mxfp4",
            ),
        ] {
            let got = identify(&record(model_type, n, Some(file)), cat).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!((got.model.as_str(), got.quant.as_str()), (model, quant), "{file}");
            assert!(got.how[0].contains(&format!("from file name `{}`", gguf_name(file, cat).file)), "{:?}", got.how);
        }
    }

    /// Without a usable file name the architecture rule decides, and the note says so (with the
    /// presets of the same architecture and size it could not tell apart); a generic file type takes the file's label.
    #[test]
    fn the_architecture_rule_is_the_fallback_and_says_so() {
        let cat = catalog();
        let got = identify(&record("llama 70B Q4_K - Medium", Some(70.55e9), None), cat).unwrap();
        assert_eq!((got.model.as_str(), got.quant.as_str()), ("llama-3.3-70b", "q4_k_m"));
        assert!(got.how[0].contains("from model_type `llama 70B Q4_K - Medium` (architecture and parameter count)"), "{:?}", got.how);
        let got = identify(&record("deepseek2 671B Q4_K - Medium", Some(671.03e9), Some("my-merge-Q4_K_M.gguf")), cat).unwrap();
        assert_eq!(got.model, "deepseek-v3.1");
        assert!(got.how[0].contains("file name `my-merge-Q4_K_M.gguf` names no catalog model (compared as `mymerge`)"), "{:?}", got.how);
        assert!(got.how[0].contains("deepseek-r1, deepseek-r1-0528, deepseek-v3 have the same architecture and size"), "{:?}", got.how);
        // An older llama.cpp printed F16 for an MXFP4 gpt-oss (the fw-gptoss120b-1 row): the label decides.
        let got = identify(&record("gpt-oss ?B F16", Some(116.8e9), Some("gpt-oss-120b-mxfp4-00001-of-00003.gguf")), cat).unwrap();
        assert_eq!(got.quant, "mxfp4");
        assert!(got.how[1].contains("from the file name's label `mxfp4` (model_type gives file type `F16`)"), "{:?}", got.how);
        // A specific file type is kept over the label (Unsloth's UD files report Q4_K - Medium).
        let got = identify(&record("llama 70B Q4_K - Medium", None, Some("Llama-3.3-70B-Instruct-UD-Q4_K_XL.gguf")), cat).unwrap();
        assert_eq!(got.quant, "q4_k_m");
        assert_eq!(quant_for("llama4 17Bx16E (Scout) Q6_K").unwrap(), "q6_k");
        assert_eq!(quant_for("llama 3B Q4_K - Small").unwrap(), "q4_k_s");
        assert_eq!(quant_for("deepseek2 671B Q2_K - Medium").unwrap(), "q2_k");
        assert_eq!(quant_for("llama 3B BF16").unwrap(), "bf16");
    }

    /// Unknown names and names that contradict what llama.cpp loaded: errors naming what was tried.
    #[test]
    fn unknown_and_contradicting_names_say_what_was_tried() {
        let cat = catalog();
        let why = |model_type: &str, n: Option<f64>, file: Option<&str>| identify(&record(model_type, n, file), cat).unwrap_err();
        let e = why("mistral3 24B Q4_K - Medium", Some(24.0e9), Some("Devstral-Small-2-24B-Instruct-2512-Q4_K_M.gguf"));
        assert!(e.contains("file name `Devstral-Small-2-24B-Instruct-2512-Q4_K_M.gguf` names no catalog model"), "{e}");
        assert!(e.contains("and by architecture: architecture `mistral3` has no model preset"), "{e}");
        let e = why("gpt-oss 120B MXFP4 MoE", Some(116.8e9), Some("gpt-oss-20b-mxfp4.gguf"));
        assert!(
            e.contains("file name `gpt-oss-20b-mxfp4.gguf` names gpt-oss-20b") && e.contains("116.8 B parameters: which file ran?"),
            "{e}"
        );
        let e = why("llama 70B Q4_K - Medium", None, Some("gemma-3-27b-it-Q4_K_M.gguf"));
        assert!(e.contains("names gemma-3-27b (gemma3"), "{e}");
        let e = why("llama 8B TQ1_0 - 1.69 bpw ternary", None, Some("Meta-Llama-3.1-8B-Instruct-TQ1_0.gguf"));
        assert!(e.contains("file type `TQ1_0 - 1.69 bpw ternary` has no quantization preset"), "{e}");
        let e = why("falcon 7B", None, None);
        assert!(e.contains("architecture `falcon` has no model preset"), "{e}");
    }

    /// A name two presets answer to (a user catalog's twin) is refused, not guessed.
    #[test]
    fn an_ambiguous_file_name_is_refused_naming_both() {
        let mut cat = catalog().clone();
        let mut twin = cat.models.iter().find(|(p, _)| p.id == "gemma-3-27b").unwrap().clone();
        twin.0.id = "gemma-3-27b-it".into();
        twin.0.aliases.clear();
        cat.models.push(twin);
        let e = identify(&record("gemma3 27B Q4_0", None, Some("gemma-3-27b-it-qat-Q4_0.gguf")), &cat).unwrap_err();
        assert!(e.contains("matches several presets (gemma-3-27b, gemma-3-27b-it)"), "{e}");
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
    fn the_flash_attention_setting_travels_into_the_notes_as_its_flag() {
        let json = |fa: &str| {
            format!(r#"[{{"model_type":"llama 3B Q4_K - Medium","model_n_params":3.2e9,"n_gen":128,"avg_ts":100,"flash_attn":{fa}}}]"#)
        };
        // Bool before llama.cpp's `auto` type, int after; `auto` is written but says nothing.
        for (fa, note) in
            [("false", Some("-fa 0")), ("true", Some("-fa 1")), ("0", Some("-fa 0")), ("-1", Some("-fa auto")), ("null", None)]
        {
            let (rows, _) = to_rows(&parse(&json(fa)).unwrap(), Some("m3-ultra-80c-512gb"), "t", "t").unwrap();
            assert_eq!(note.is_some_and(|n| rows[0].notes.contains(n)), note.is_some(), "{fa}: {}", rows[0].notes);
            assert_eq!(rows[0].notes.contains("-fa"), note.is_some(), "{fa}: {}", rows[0].notes);
        }
        // The markdown table's `fa` column (printed where it differs from the build's default).
        let md = "| model | size | params | backend | ngl | fa | test | t/s |\n| --- | ---: | ---: | --- | --: | -: | --: | --: |\n| llama 3B Q4_K - Medium | 1.87 GiB | 3.21 B | Metal | 99 | 1 | tg128 | 100.00 ± 1.00 |\n";
        let records = parse(md).unwrap();
        assert_eq!(records[0].flash_attn, Some(1));
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
