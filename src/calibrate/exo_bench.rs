//! exo-bench output as measurement rows, so exo users calibrate from what they already run.
//!
//! exo ships a benchmark script (`bench/exo_bench.py` in the exo repository) that places a model
//! on the cluster with a given sharding and instance type, sends prompts of `pp` tokens, asks for
//! `tg` generated tokens, repeats, and writes every run as JSON. The script is in no package
//! reachable from here (checked again: PyPI's `exo` is an unrelated 2020 yeast-epigenome
//! toolkit, and no exo-explore package is on PyPI, npm, crates.io or Debian's lists), so the
//! fields below are still the ones **assumed** from exo 1.0's
//! placement and stats vocabulary (FACTS.md: tensor/pipeline sharding, MLX ring or JACCL
//! instances); the parser is strict about them (a missing or mistyped field is an error naming
//! the run and the field) and ignores any other key, so a newer script that adds fields still
//! reads. The file is a JSON list of runs, or an object whose `runs` (or `results`) is that list:
//!
//! ```json
//! [{"model_id": "mlx-community/Kimi-K2-Thinking", "placement_sharding": "Tensor",
//!   "placement_instance_meta": "MlxJaccl", "placement_nodes": 4, "repeat_index": 0,
//!   "stats": {"prompt_tps": 212.4, "generation_tps": 24.9, "prompt_tokens": 512, "generation_tokens": 128}}]
//! ```
//!
//! - `placement_sharding`: `Tensor` | `Pipeline` (case-insensitive).
//! - `placement_instance_meta`: `MlxJaccl` (JACCL over Thunderbolt 5 RDMA) | `MlxRing` (the MLX
//!   ring over TCP, taken as the Thunderbolt 5 bridge unless `--fabric` says otherwise).
//! - `stats.prompt_tps` / `stats.generation_tps`: prefill and decode tokens/s of that run.
//! - `model_id`: a Hugging Face repo id; the model is the catalog preset
//!   [`crate::catalog::Catalog::find_model`] resolves it to (as `validate` and scenarios do:
//!   organisation prefix, release and format suffixes dropped; an unknown or ambiguous name is
//!   skipped with the resolver's reason), the quantization the repo's suffix names through
//!   [`crate::catalog::Catalog::find_quant`] in the MLX family (`-3bit` to `-8bit`,
//!   `-bf16`, `-MXFP4-Q8`, `-4bit-DWQ`); a repo without one is the model's own release (Kimi K2
//!   Thinking's native INT4 is `int4-g32`).
//!
//! Runs of the same configuration (repeats) become one row per metric: the mean, with the
//! spread and the repeat count in the notes.

use serde_json::Value;

use crate::calibrate::validate::MeasurementRow;
use crate::catalog::catalog;
use crate::catalog::names::{ModelNameError, model_key};
use crate::llm::QuantFamily;

/// A configuration that became no row: (what, why).
pub type Skipped = (String, String);

/// One exo-bench run.
#[derive(Clone, Debug, PartialEq)]
pub struct ExoRun {
    /// Hugging Face repo id of the model.
    pub model_id: String,
    /// `tensor` or `pipeline`.
    pub sharding: String,
    /// `jaccl` or `ring`.
    pub backend: String,
    /// Nodes the instance spans.
    pub nodes: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub generation_tokens: u64,
    /// Prefill tokens/s.
    pub prompt_tps: f64,
    /// Decode tokens/s.
    pub generation_tps: f64,
}

/// Whether a JSON text looks like exo-bench output (a list of runs with `placement_sharding`).
pub fn looks_like(text: &str) -> bool {
    let t = text.trim_start();
    (t.starts_with('[') || t.starts_with('{')) && text.contains("\"placement_sharding\"")
}

fn field<'a>(run: &'a Value, path: &[&str], i: usize) -> Result<&'a Value, String> {
    let mut v = run;
    for k in path {
        v = v.get(k).ok_or_else(|| format!("run {i}: missing field `{}` (exo-bench runs carry model_id, placement_sharding, placement_instance_meta, placement_nodes and stats)", path.join(".")))?;
    }
    Ok(v)
}

fn uint(run: &Value, path: &[&str], i: usize) -> Result<u64, String> {
    let v = field(run, path, i)?;
    v.as_u64().ok_or_else(|| format!("run {i}: `{}` must be a non-negative integer, not {v}", path.join(".")))
}

fn rate(run: &Value, path: &[&str], i: usize) -> Result<f64, String> {
    let v = field(run, path, i)?;
    v.as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("run {i}: `{}` must be a non-negative number, not {v}", path.join(".")))
}

fn text<'a>(run: &'a Value, path: &[&str], i: usize) -> Result<&'a str, String> {
    let v = field(run, path, i)?;
    v.as_str().ok_or_else(|| format!("run {i}: `{}` must be a string, not {v}", path.join(".")))
}

/// Parses exo-bench JSON text; errors name the run (0-based) and the field.
pub fn parse(text_in: &str) -> Result<Vec<ExoRun>, String> {
    let doc: Value = serde_json::from_str(text_in).map_err(|e| format!("not JSON: {e}"))?;
    let list = match &doc {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("runs").or_else(|| o.get("results")) {
            Some(Value::Array(a)) => a,
            _ => return Err("expected a JSON list of exo-bench runs, or an object with a `runs` list".into()),
        },
        _ => return Err("expected a JSON list of exo-bench runs".into()),
    };
    if list.is_empty() {
        return Err("the file holds no exo-bench runs".into());
    }
    let mut out = Vec::with_capacity(list.len());
    for (i, run) in list.iter().enumerate() {
        let sharding = text(run, &["placement_sharding"], i)?.to_ascii_lowercase();
        if sharding != "tensor" && sharding != "pipeline" {
            return Err(format!("run {i}: `placement_sharding` = \"{sharding}\"; expected Tensor or Pipeline"));
        }
        let meta = text(run, &["placement_instance_meta"], i)?.to_ascii_lowercase();
        let backend = match meta.trim_start_matches("mlx") {
            "jaccl" | "_jaccl" => "jaccl",
            "ring" | "_ring" => "ring",
            _ => return Err(format!("run {i}: `placement_instance_meta` = \"{meta}\"; expected MlxJaccl or MlxRing")),
        };
        let nodes = uint(run, &["placement_nodes"], i)?;
        if nodes == 0 || nodes > 64 {
            return Err(format!("run {i}: `placement_nodes` = {nodes} is out of range (1 to 64)"));
        }
        out.push(ExoRun {
            model_id: text(run, &["model_id"], i)?.to_string(),
            sharding,
            backend: backend.into(),
            nodes,
            prompt_tokens: uint(run, &["stats", "prompt_tokens"], i)?,
            generation_tokens: uint(run, &["stats", "generation_tokens"], i)?,
            prompt_tps: rate(run, &["stats", "prompt_tps"], i)?,
            generation_tps: rate(run, &["stats", "generation_tps"], i)?,
        });
    }
    Ok(out)
}

/// Models whose published release is already quantized, so a repo id without a quant suffix
/// still names a format: mlx-community/Kimi-K2-Thinking is the conversion of the native INT4
/// (group 32) checkpoint exo runs (FACTS.md: 658 GB; the `int4-g32` preset).
const NATIVE_RELEASES: &[(&str, &str)] = &[("kimi-k2-thinking", "int4-g32")];

/// The quantization a repo name's suffix names in the MLX family: its last two `-`-separated
/// tokens (`MXFP4-Q8`, `4bit-DWQ`), else its last one (`4bit`, `bf16`). `None`: no suffix names one.
fn quant_suffix(base: &str) -> Option<String> {
    let tokens: Vec<&str> = base.split('-').collect();
    (1..=2).rev().filter(|n| tokens.len() > *n).find_map(|n| {
        let label = tokens[tokens.len() - n..].join("-");
        catalog().find_quant(&label, QuantFamily::Mlx).ok().map(|q| q.id)
    })
}

/// The catalog model and quantization of a Hugging Face repo id: the model by the catalog's
/// name resolver, the quantization from the repo's suffix (exo runs MLX formats only).
pub fn model_and_quant(model_id: &str) -> Result<(String, String), String> {
    let cat = catalog();
    let model = match cat.find_model(model_id) {
        Ok((p, _)) => p.id.as_str(),
        Err(ModelNameError::Unknown(_)) => {
            return Err(format!(
                "model `{model_id}` matches no catalog model (compared by name as `{}`; `supernode catalog models` lists them)",
                model_key(model_id)
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let base = model_id.trim().rsplit('/').next().unwrap_or(model_id);
    let quant = match quant_suffix(base) {
        Some(q) => q,
        None => match NATIVE_RELEASES.iter().find(|(m, _)| *m == model) {
            Some((_, q)) => q.to_string(),
            None => {
                return Err(format!(
                    "model `{model_id}`: no quantization suffix (-4bit, -6bit, -8bit, -bf16, -MXFP4-Q8) to tell its format"
                ));
            }
        },
    };
    let family = cat.quant(&quant).map(|q| q.family);
    if !family.is_some_and(|f| f.loads_on(QuantFamily::Mlx)) {
        return Err(format!("model `{model_id}`: quant `{quant}` is not an MLX format, which exo loads"));
    }
    Ok((model.to_string(), quant))
}

/// Turns runs into measurement rows on `node` (a catalog node id: exo-bench records no
/// hardware). `fabric`: the fabric of a multi-node run (default: `tb5-rdma` for JACCL,
/// `tb5-tcp` for the ring). Ids are `{stem}-{n}-{metric}`. Runs whose model cannot be matched
/// are returned as (what, why) instead of rows.
pub fn to_rows(
    runs: &[ExoRun],
    node: &str,
    fabric: Option<&str>,
    stem: &str,
    source: &str,
) -> Result<(Vec<MeasurementRow>, Vec<Skipped>), String> {
    let cat = catalog();
    if cat.node(node).is_none() {
        let hint = crate::util::did_you_mean(node, &cat.node_ids()).map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
        return Err(format!("unknown node `{node}`{hint}; `supernode catalog nodes` lists them"));
    }
    if let Some(f) = fabric.filter(|f| cat.fabric(f).is_none()) {
        return Err(format!("unknown fabric `{f}`; known: {}", cat.fabric_ids().join(", ")));
    }
    // Group repeats of one configuration, in first-seen order.
    let mut groups: Vec<(ExoRun, Vec<&ExoRun>)> = Vec::new();
    for r in runs {
        let key = |x: &ExoRun| (x.model_id.clone(), x.sharding.clone(), x.backend.clone(), x.nodes, x.prompt_tokens, x.generation_tokens);
        match groups.iter_mut().find(|g| key(&g.0) == key(r)) {
            Some(g) => g.1.push(r),
            None => groups.push((r.clone(), vec![r])),
        }
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (n, (r, reps)) in groups.iter().enumerate() {
        let what = format!("{} {} x{} pp{} tg{}", r.model_id, r.sharding, r.nodes, r.prompt_tokens, r.generation_tokens);
        let (model, quant) = match model_and_quant(&r.model_id) {
            Ok(x) => x,
            Err(e) => {
                skipped.push((what, e));
                continue;
            }
        };
        let fab = if r.nodes == 1 {
            "none".to_string()
        } else {
            fabric.map(String::from).unwrap_or_else(|| if r.backend == "jaccl" { "tb5-rdma".into() } else { "tb5-tcp".into() })
        };
        for (metric, pick, prompt) in [
            ("prefill_tokens_per_s", (|x: &ExoRun| x.prompt_tps) as fn(&ExoRun) -> f64, r.prompt_tokens),
            ("decode_tokens_per_s", |x: &ExoRun| x.generation_tps, r.prompt_tokens),
        ] {
            let vals: Vec<f64> = reps.iter().map(|x| pick(x)).collect();
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            if mean <= 0.0 {
                skipped.push((format!("{what} {metric}"), "rate is 0".into()));
                continue;
            }
            let (lo, hi) = vals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
            rows.push(MeasurementRow {
                id: format!("{stem}-{}-{}", n + 1, if metric.starts_with("prefill") { "pp" } else { "tg" }),
                system: node.to_string(),
                nodes: r.nodes.to_string(),
                node_mix: String::new(),
                model: model.clone(),
                quant: quant.clone(),
                engine: "exo".into(),
                parallelism: if r.nodes == 1 { "none".into() } else { r.sharding.clone() },
                fabric: fab.clone(),
                prompt_tokens: prompt.to_string(),
                metric: metric.into(),
                value: (mean * 1000.0).round() / 1000.0,
                unit: "tok/s".into(),
                concurrency: String::new(),
                source: format!("exo-bench {source} ({} pp{} tg{})", r.model_id, r.prompt_tokens, r.generation_tokens),
                notes: format!(
                    "mean of {} repeats (min {lo}, max {hi}); instance Mlx{}",
                    vals.len(),
                    if r.backend == "jaccl" { "Jaccl" } else { "Ring" }
                ),
                metric_read_as: None,
            });
        }
    }
    Ok((rows, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Repo ids exo runs (the fixture's, the Geerling cluster's models, and conversions of the
    /// newer catalog architectures as mlx-community names them) and what each imports as.
    #[test]
    fn repo_ids_resolve_through_the_catalog_names() {
        for (id, model, quant) in [
            // tests/fixtures/exo-bench/runs.json: resolved the same as by the old prefix match.
            ("mlx-community/Kimi-K2-Thinking", "kimi-k2-thinking", "int4-g32"),
            ("mlx-community/Qwen3-235B-A22B-Instruct-2507-4bit", "qwen3-235b-a22b", "mlx-4bit"),
            ("mlx-community/Qwen3-235B-A22B-8bit", "qwen3-235b-a22b", "mlx-8bit"),
            ("mlx-community/DeepSeek-V3.1-4bit", "deepseek-v3.1", "mlx-4bit"),
            ("mlx-community/Qwen3-30B-A3B-4bit", "qwen3-30b-a3b", "mlx-4bit"),
            ("mlx-community/Llama-3.3-70B-Instruct-bf16", "llama-3.3-70b", "bf16"),
            ("mlx-community/Meta-Llama-3.1-8B-Instruct-6bit", "llama-3.1-8b", "mlx-6bit"),
            // Newer architectures, by the names the resolver knows.
            ("mlx-community/Qwen3-Next-80B-A3B-Instruct-4bit", "qwen3-coder-next", "mlx-4bit"),
            ("mlx-community/Qwen3-Coder-Next-8bit", "qwen3-coder-next", "mlx-8bit"),
            ("mlx-community/GLM-4.5-Air-4bit", "glm-4.5-air", "mlx-4bit"),
            ("mlx-community/gemma-3-27b-it-qat-4bit", "gemma-3-27b", "mlx-4bit"),
            ("mlx-community/gpt-oss-20b-MXFP4-Q8", "gpt-oss-20b", "mxfp4"),
            ("mlx-community/gpt-oss-120b-MXFP4-Q8", "gpt-oss-120b", "mxfp4"),
            ("mlx-community/Llama-4-Scout-17B-16E-Instruct-4bit", "llama-4-scout-17b-16e", "mlx-4bit"),
            ("mlx-community/Qwen3-Coder-30B-A3B-Instruct-4bit-DWQ", "qwen3-coder-30b-a3b", "mlx-4bit"),
            ("mlx-community/Qwen3-235B-A22B-3bit", "qwen3-235b-a22b", "mlx-3bit"),
            ("mlx-community/Qwen3-30B-A3B-5bit", "qwen3-30b-a3b", "mlx-5bit"),
        ] {
            assert_eq!(model_and_quant(id), Ok((model.to_string(), quant.to_string())), "{id}");
        }
    }

    /// Unknown models, missing or foreign quant suffixes: refused with what was tried.
    #[test]
    fn unknown_names_and_formats_are_refused_with_what_was_tried() {
        for (id, why) in [
            ("mlx-community/Magistral-Medium-2509-4bit", "matches no catalog model (compared by name as `magistralmedium`"),
            ("Qwen/Qwen3-235B-A22B", "no quantization suffix"),
            ("mlx-community/Qwen3-235B-A22B-2bit", "no quantization suffix"),
            ("zai-org/GLM-4.5-Air-FP8", "quant `fp8` is not an MLX format"),
            // A newer size of a family the catalog has one size of is not guessed.
            ("mlx-community/Qwen3-20B-4bit", "matches no catalog model"),
        ] {
            let e = model_and_quant(id).unwrap_err();
            assert!(e.contains(why), "{id}: {e}");
        }
    }
}
