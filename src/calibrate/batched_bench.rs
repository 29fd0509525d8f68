//! `llama-batched-bench` output as measurement rows, so llama.cpp users calibrate batched
//! decoding (the `-np` slots of `llama-server`, the GB10 and AI Max+ tables people publish) from
//! what they already run.
//!
//! The tool (`tools/batched-bench/batched-bench.cpp`, as vendored in xllamacpp 2026.9.11063)
//! prints one header line and a table:
//!
//! ```text
//! main: n_kv_max = 65536, n_batch = 2048, n_ubatch = 2048, flash_attn = 1, is_pp_shared = 0, is_tg_separate = 0, n_gpu_layers = -1, n_threads = 20, n_threads_batch = 20
//!
//! |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
//! |-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
//! |   512 |     32 |    1 |    544 |    0.270 |  1895.57 |    0.399 |    80.13 |    0.669 |   812.60 |
//! ```
//!
//! or, with `--output-format jsonl`, one JSON object per test with the same numbers (`pp`, `tg`,
//! `pl`, `speed_pp`, `speed_tg`, `n_ubatch`, `is_pp_shared`, ...). For each test of B sequences
//! (`-npl`) of PP prompt tokens (`-npp`) and TG generated ones (`-ntg`): S_PP = B x PP / T_PP,
//! the B prompts prefilled as one batch cut into `-ub` micro-batches; S_TG = B x TG / T_TG, the
//! B sequences decoded one token each per forward. Each test becomes a `prefill_tokens_per_s`
//! row (S_PP) and an `aggregate_decode_tokens_per_s` row (S_TG) at concurrency B, which
//! `validate` predicts with the `batched-bench` workload. A shared prompt (`-pps`: one prefill
//! copied to every sequence) and separate decoding (`is_tg_separate`: each sequence alone, one
//! after another) are other workloads, skipped with why. The table names neither the model nor
//! the machine; a full log names the GGUF file it loaded (`llama_model_loader: loaded meta data
//! ... from PATH`) and the GPU (`Device 0: NAME, compute capability ...`), which are read where
//! `--model` and `--node` are not given.

use serde_json::Value;

use crate::calibrate::llama_bench::{gguf_name, node_for_gpu};
use crate::calibrate::serve_bench::Skipped;
use crate::calibrate::validate::MeasurementRow;
use crate::catalog::Catalog;

/// The run settings the header line (or each JSON line) prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchedBenchSettings {
    /// `-b`: tokens per `llama_decode` call.
    pub n_batch: u64,
    /// `-ub`: the micro-batch a call is cut into.
    pub n_ubatch: u64,
    /// `-fa`: 1 on, 0 off, -1 auto.
    pub flash_attn: i64,
    /// `-pps`: one prompt prefilled and copied to every sequence.
    pub is_pp_shared: bool,
    /// Each sequence decoded alone, one after another.
    pub is_tg_separate: bool,
}

/// One test of the table: its shape and its two rates.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchedBenchTest {
    /// The settings it ran under.
    pub settings: BatchedBenchSettings,
    /// Prompt tokens per sequence (`PP`).
    pub pp: u64,
    /// Generated tokens per sequence (`TG`).
    pub tg: u64,
    /// Sequences (`B`).
    pub batch: u64,
    /// Prompt tokens per second, all sequences (`S_PP t/s`).
    pub speed_pp: f64,
    /// Generated tokens per second, all sequences (`S_TG t/s`).
    pub speed_tg: f64,
}

/// What a captured log says besides the table: the GGUF file it loaded and the first GPU.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogLabels {
    /// The model file's path (`llama_model_loader: loaded meta data ... from PATH (version`).
    pub model_file: Option<String>,
    /// The first device's name (`Device 0: NVIDIA GB10, compute capability 12.1, ...`).
    pub gpu: Option<String>,
}

/// The table's header cells, as the tool prints them.
const HEADER: [&str; 10] = ["PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s"];

/// Whether `text` is `llama-batched-bench` output: its table header or its JSON lines.
pub fn looks_like(text: &str) -> bool {
    text.lines().any(|l| table_cells(l).is_some_and(|c| c == HEADER)) || text.lines().any(|l| json_test(l).is_some())
}

/// The cells of a `| a | b |` table line, trimmed; `None` for any other line.
fn table_cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(str::trim).collect())
}

/// A JSON line with the tool's keys (`pp`, `pl`, `speed_pp`), parsed.
fn json_test(line: &str) -> Option<serde_json::Map<String, Value>> {
    let l = line.trim();
    if !l.starts_with('{') || !l.contains("\"speed_pp\"") {
        return None;
    }
    serde_json::from_str::<Value>(l).ok()?.as_object().cloned()
}

/// `key = value` settings of the header line (`main: n_kv_max = 65536, n_batch = 2048, ...`).
fn header_settings(line: &str) -> Option<BatchedBenchSettings> {
    if !line.contains("n_ubatch =") || !line.contains("is_pp_shared =") {
        return None;
    }
    let value = |key: &str| -> Option<i64> {
        line.split(',').filter_map(|p| p.split_once('=')).find(|(k, _)| k.trim().rsplit(' ').next() == Some(key))?.1.trim().parse().ok()
    };
    Some(BatchedBenchSettings {
        n_batch: value("n_batch")?.max(0) as u64,
        n_ubatch: value("n_ubatch")?.max(0) as u64,
        flash_attn: value("flash_attn").unwrap_or(-1),
        is_pp_shared: value("is_pp_shared")? != 0,
        is_tg_separate: value("is_tg_separate").unwrap_or(0) != 0,
    })
}

/// The tests of an output (table rows under the last header line before them, or JSON lines),
/// with what its log says of the model file and the GPU. Errors: a table row before any header
/// line, or a cell that is not a number.
pub fn parse(text: &str) -> Result<(Vec<BatchedBenchTest>, LogLabels), String> {
    let mut tests = Vec::new();
    let mut labels = LogLabels::default();
    let mut settings: Option<BatchedBenchSettings> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(s) = header_settings(line) {
            settings = Some(s);
        } else if let Some(path) = line.split_once("loaded meta data").and_then(|(_, r)| r.split_once(" from ")).map(|(_, p)| p) {
            let path = path.split(" (version").next().unwrap_or(path).trim();
            labels.model_file.get_or_insert_with(|| path.to_string());
        } else if let Some(rest) = line.trim_start().strip_prefix("Device 0:") {
            labels.gpu.get_or_insert_with(|| rest.split(',').next().unwrap_or(rest).trim().to_string());
        } else if let Some(o) = json_test(line) {
            let num = |k: &str| o.get(k).and_then(Value::as_f64).ok_or(format!("line {n}: no number `{k}`"));
            tests.push(BatchedBenchTest {
                settings: BatchedBenchSettings {
                    n_batch: num("n_batch")? as u64,
                    n_ubatch: num("n_ubatch")? as u64,
                    flash_attn: num("flash_attn").unwrap_or(-1.0) as i64,
                    is_pp_shared: num("is_pp_shared")? != 0.0,
                    is_tg_separate: false,
                },
                pp: num("pp")? as u64,
                tg: num("tg")? as u64,
                batch: num("pl")? as u64,
                speed_pp: num("speed_pp")?,
                speed_tg: num("speed_tg")?,
            });
        } else if let Some(cells) = table_cells(line).filter(|c| c.len() == HEADER.len() && c[0].parse::<u64>().is_ok()) {
            let settings = settings.ok_or(format!("line {n}: a table row before the tool's `n_ubatch = ...` line"))?;
            let int = |k: usize| cells[k].parse::<u64>().map_err(|_| format!("line {n}: {} `{}` is not a number", HEADER[k], cells[k]));
            let rate = |k: usize| cells[k].parse::<f64>().map_err(|_| format!("line {n}: {} `{}` is not a number", HEADER[k], cells[k]));
            tests.push(BatchedBenchTest { settings, pp: int(0)?, tg: int(1)?, batch: int(2)?, speed_pp: rate(5)?, speed_tg: rate(7)? });
        }
    }
    if tests.is_empty() {
        return Err("no test: neither a `| PP | TG | B | ...` table row nor a JSON line with `speed_pp`".into());
    }
    Ok((tests, labels))
}

/// What the runs are about, where the output does not say.
pub struct Labels<'a> {
    /// The catalog node it ran on (`--node`; else from the log's GPU name).
    pub node: Option<&'a str>,
    /// The model (`--model`: a GGUF file name, a preset id or a repo name; else the log's file).
    pub model: Option<&'a str>,
    /// The format (`--quant`; else the GGUF file name's label).
    pub quant: Option<&'a str>,
    /// The engine (`--engine`: `llama-cpp`, or a backend's label such as `llama-cpp-rocm`).
    pub engine: Option<&'a str>,
}

/// Turns tests into rows (`{stem}-{n}-pp` for S_PP and `{stem}-{n}-tg` for S_TG, at concurrency
/// B); tests of another workload (a shared prompt, sequences decoded apart) or without a positive
/// rate are returned as (what, why).
pub fn to_rows(
    tests: &[BatchedBenchTest],
    log: &LogLabels,
    labels: &Labels<'_>,
    cat: &Catalog,
    stem: &str,
    source: &str,
) -> Result<(Vec<MeasurementRow>, Vec<Skipped>), String> {
    let node = match (labels.node, &log.gpu) {
        (Some(n), _) => {
            cat.node(n).ok_or_else(|| format!("unknown node `{n}`; `supernode catalog nodes` lists them"))?;
            n.to_string()
        }
        (None, Some(gpu)) => node_for_gpu(gpu, cat)?,
        (None, None) => return Err("llama-batched-bench's table names no GPU: pass --node (`supernode catalog nodes` lists them)".into()),
    };
    let model =
        labels.model.map(String::from).or_else(|| log.model_file.clone()).ok_or(
            "llama-batched-bench's table names no model: pass --model (the GGUF file it ran, e.g. --model gpt-oss-120b-mxfp4.gguf)",
        )?;
    let file = gguf_name(&model, cat);
    let model_name = if file.file.to_ascii_lowercase().ends_with(".gguf") { file.model.clone() } else { model.clone() };
    let quant = match (labels.quant, &file.quant) {
        (Some(q), _) => q.to_string(),
        (None, Some(q)) => q.clone(),
        (None, None) => return Err(format!("model `{model}` names no format (a GGUF file name's label, e.g. -Q4_K_M): pass --quant")),
    };
    let engine = labels.engine.unwrap_or("llama-cpp").to_string();
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for (n, t) in tests.iter().enumerate() {
        let s = t.settings;
        let what = format!("test {} (-npp {} -ntg {} -npl {})", n + 1, t.pp, t.tg, t.batch);
        if s.is_pp_shared && t.batch > 1 {
            skipped.push((what, "a shared prompt (-pps: one prefill copied to every sequence) is not the workload the twin runs".into()));
            continue;
        }
        if s.is_tg_separate && t.batch > 1 {
            skipped.push((what, "sequences decoded one after another (is_tg_separate) are not the workload the twin runs".into()));
            continue;
        }
        let notes = format!(
            "llama-batched-bench -b {} -ub {} -fa {} -npp {} -ntg {} -npl {}, is_pp_shared=0",
            s.n_batch, s.n_ubatch, s.flash_attn, t.pp, t.tg, t.batch
        );
        for (metric, column, short, value) in
            [("prefill_tokens_per_s", "S_PP", "pp", t.speed_pp), ("aggregate_decode_tokens_per_s", "S_TG", "tg", t.speed_tg)]
        {
            if !(value.is_finite() && value > 0.0) {
                skipped.push((format!("{what} {column}"), format!("rate {value} is not a positive number")));
                continue;
            }
            rows.push(MeasurementRow {
                id: format!("{stem}-{}-{short}", n + 1),
                system: node.clone(),
                nodes: "1".into(),
                node_mix: String::new(),
                model: model_name.clone(),
                quant: quant.clone(),
                engine: engine.clone(),
                parallelism: "none".into(),
                fabric: "none".into(),
                prompt_tokens: t.pp.to_string(),
                concurrency: t.batch.to_string(),
                metric: metric.into(),
                value: crate::util::sig(value),
                unit: "tok/s".into(),
                source: format!("llama-batched-bench {source}"),
                notes: format!("{notes}; {column}"),
                metric_read_as: None,
            });
        }
    }
    Ok((rows, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "llama_model_loader: loaded meta data with 37 key-value pairs and 687 tensors from /models/gpt-oss-120b-mxfp4-00001-of-00003.gguf (version GGUF V3 (latest))\n\
        ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GB10, compute capability 12.1, VMM: yes\n\
        \n\
        main: n_kv_max = 65536, n_batch = 2048, n_ubatch = 2048, flash_attn = 1, is_pp_shared = 0, is_tg_separate = 0, n_gpu_layers = -1, n_threads = 20, n_threads_batch = 20\n\
        \n\
        |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n\
        |-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n\
        |   512 |     32 |    1 |    544 |    0.500 |  1024.00 |    0.500 |    64.00 |    1.000 |   544.00 |\n\
        |   512 |     32 |    4 |   2176 |    1.000 |  2048.00 |    1.000 |   128.00 |    2.000 |  1088.00 |\n";

    #[test]
    fn a_table_reads_its_settings_tests_model_file_and_gpu() {
        assert!(looks_like(LOG));
        let (tests, log) = parse(LOG).unwrap();
        assert_eq!(log.model_file.as_deref(), Some("/models/gpt-oss-120b-mxfp4-00001-of-00003.gguf"));
        assert_eq!(log.gpu.as_deref(), Some("NVIDIA GB10"));
        let settings = BatchedBenchSettings { n_batch: 2048, n_ubatch: 2048, flash_attn: 1, is_pp_shared: false, is_tg_separate: false };
        assert_eq!(tests[1], BatchedBenchTest { settings, pp: 512, tg: 32, batch: 4, speed_pp: 2048.0, speed_tg: 128.0 });
        assert!(
            parse("|   512 |     32 |    1 |    544 |    0.5 |  1024.00 |    0.5 |    64.00 |    1.0 |   544.00 |\n")
                .unwrap_err()
                .contains("before the tool's")
        );
        assert!(parse("nothing here\n").unwrap_err().contains("no test"));
        assert!(!looks_like("| model | size | params | backend | test | t/s |\n"));
    }

    #[test]
    fn json_lines_read_as_the_table() {
        let line = r#"{"n_kv_max": 65536, "n_batch": 2048, "n_ubatch": 512, "flash_attn": 1, "is_pp_shared": 0, "n_gpu_layers": -1, "n_threads": 20, "n_threads_batch": 20, "pp": 512, "tg": 32, "pl": 8, "n_kv": 4352, "t_pp": 2.000000, "speed_pp": 2048.000000, "t_tg": 2.000000, "speed_tg": 128.000000, "t": 4.000000, "speed": 1088.000000}"#;
        assert!(looks_like(line));
        let (tests, _) = parse(line).unwrap();
        assert_eq!((tests[0].batch, tests[0].settings.n_ubatch, tests[0].speed_tg), (8, 512, 128.0));
    }

    #[test]
    fn each_test_becomes_an_s_pp_and_an_s_tg_row_and_other_workloads_are_skipped() {
        let cat = crate::catalog::catalog();
        let (mut tests, log) = parse(LOG).unwrap();
        tests.push(BatchedBenchTest { settings: BatchedBenchSettings { is_pp_shared: true, ..tests[1].settings }, ..tests[1].clone() });
        // The GB10's name is every GB10 box's: the node must be named.
        let unnamed = Labels { node: None, model: None, quant: None, engine: None };
        assert!(to_rows(&tests, &log, &unnamed, cat, "bb", "out.txt").unwrap_err().contains("matches several"));
        let labels = Labels { node: Some("dgx-spark"), ..unnamed };
        let (rows, skipped) = to_rows(&tests, &log, &labels, cat, "bb", "out.txt").unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[0].system.as_str(), rows[0].model.as_str(), rows[0].quant.as_str()), ("dgx-spark", "gpt-oss-120b", "mxfp4"));
        assert_eq!((rows[2].metric.as_str(), rows[2].concurrency.as_str(), rows[2].value), ("prefill_tokens_per_s", "4", 2048.0));
        assert_eq!((rows[3].metric.as_str(), rows[3].value), ("aggregate_decode_tokens_per_s", 128.0));
        assert!(rows[3].notes.contains("-ub 2048") && rows[3].notes.contains("-ntg 32"), "{}", rows[3].notes);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].1.contains("-pps"), "{skipped:?}");
        // Without a log: the node and the model must be given.
        let bare = LogLabels::default();
        assert!(to_rows(&tests, &bare, &unnamed, cat, "bb", "x").unwrap_err().contains("--node"));
        assert!(to_rows(&tests, &bare, &labels, cat, "bb", "x").unwrap_err().contains("--model"));
        let named = Labels { model: Some("gpt-oss-120b"), ..labels };
        assert!(to_rows(&tests, &bare, &named, cat, "bb", "x").unwrap_err().contains("--quant"));
    }
}
