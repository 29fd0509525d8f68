//! The twin's prediction of each harness measurement, through the estimator's entry points:
//! the harness host is a node preset ([`host_node`]), its loopback a fabric ([`host_fabric`]),
//! every measurement gets a [`Plan`] built by [`Plan::new`] for a model made from what the
//! harness recorded, and is timed by [`crate::estimate::microbench`] or, end to end, by
//! [`crate::estimate::simulate_generate`]. A parameter the prediction needs and the file lacks
//! is an error naming it.

use serde_json::{Value, json};

use super::harness::{HarnessBench, HarnessFile, HarnessKind, SourceError, host_fabric, host_node};
use crate::engine::{EngineKind, EngineOptions, Parallelism, Plan, PlanError, PlanInput};
use crate::estimate::microbench::{all_sum_seconds, batched_decode_tokens_per_s, op_seconds, segment_chain_seconds};
use crate::estimate::simulate_generate;
use crate::hw::Topology;
use crate::llm::{ModelSpec, Op, Placement, QuantSpec, TensorRole};
use crate::profile::Profile;

/// Why a harness measurement cannot be predicted.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A parameter of the measurement is missing or not a non-negative number.
    #[error("`{kind}` measurement without a usable `params.{key}` (a number >= 0)")]
    MissingParam {
        /// Measurement kind.
        kind: HarnessKind,
        /// The missing key.
        key: &'static str,
    },
    /// A key of the end-to-end model configuration is missing or not a positive integer.
    #[error("`{kind}` measurement whose `model.{key}` is missing or not a positive integer")]
    MissingModelKey {
        /// Measurement kind.
        kind: HarnessKind,
        /// The missing key.
        key: &'static str,
    },
    /// A value the twin does not model.
    #[error("`{kind}` measurement: {what}")]
    Unsupported {
        /// Measurement kind.
        kind: HarnessKind,
        /// What is not modelled.
        what: String,
    },
    /// The host node or link could not be derived from the file.
    #[error(transparent)]
    Host(#[from] SourceError),
    /// The model configuration is not a model the twin can build.
    #[error("the harness model: {0}")]
    Model(#[from] crate::llm::LlmError),
    /// The plan failed (the host chip is not in the profile, the model does not fit).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A machine fact or a measurement the twin does not predict.
    #[error("harness measurement `{0}` is not predicted")]
    NotPredicted(HarnessKind),
}

/// Seed of the jitter stream when predicting a segment chain.
const CHAIN_SEED: u64 = 7;
/// Runs of a segment chain averaged per prediction.
const CHAIN_REPS: u32 = 8;

/// The twin's prediction of one harness measurement (seconds per call, or tokens/s for e2e).
pub fn predict_harness(h: &HarnessFile, b: &HarnessBench, profile: &Profile) -> Result<f64, HarnessError> {
    let m = Measurement { h, b };
    match b.kind {
        HarnessKind::Qmm => {
            let plan = m.plan(1, &bench_model(m.num("K")?)?, &m.quant(m.num("bits")?)?, profile)?;
            let op = formatted(&plan, Op::dense("qmm", TensorRole::AttnQ, m.count("K")? * m.count("N")?, Placement::Replicated));
            Ok(op_seconds(&plan, &op, m.count("M")?.max(1), 0))
        }
        HarnessKind::GatherQmm => {
            // The harness routes its tokens uniformly (`supernode_harness/routing.py`: `top_k`
            // distinct experts drawn at random), so its gathers are predicted with uniform
            // routing, whatever popularity skew the profile fits for real routers.
            let mut uniform = profile.clone();
            uniform.moe.expert_popularity_sigma = 0.0;
            let plan = m.plan(1, &bench_model(m.num("K")?)?, &m.quant(m.num("bits")?)?, &uniform)?;
            // Expert ops are sharded; on one rank the share is 1. A batch of M tokens is timed by
            // the twin's batch physics: weights of the E(1-(1-k/E)^M) experts it touches on
            // average (not the count the harness drew: the coverage law is the twin's), M·k rows.
            let op = formatted(&plan, Op::experts("gather_qmm", m.count("K")? * m.count("N")?, 1, m.count("experts")?, m.count("top_k")?));
            Ok(op_seconds(&plan, &op, m.count("M")?.max(1), 0))
        }
        HarnessKind::Sdpa => {
            let (heads, kv_heads, head_dim) = (m.count("heads")?, m.count("kv_heads")?, m.count("head_dim")?);
            let plan = m.plan(1, &bench_model((heads * head_dim) as f64)?, &m.quant(16.0)?, profile)?;
            let act = activation_bytes(h);
            let op = Op::attention("sdpa", 2 * kv_heads * head_dim * act, false, 4 * heads * head_dim, None);
            let q = m.count("q_len")?.max(1);
            Ok(op_seconds(&plan, &op, q, m.count("kv_len")?.saturating_sub(q)))
        }
        HarnessKind::OpChain => {
            // `ops` element-wise ops over `elements` values (the width of the model), one graph.
            let plan = m.plan(1, &bench_model(m.num("elements")?)?, &m.quant(16.0)?, profile)?;
            Ok(m.num("ops")? * op_seconds(&plan, &Op::elementwise("add", 1), 1, 0))
        }
        HarnessKind::SegmentChain => m.segment_chain(profile),
        HarnessKind::AllSum => {
            let plan = m.plan(m.ranks(), &bench_model(1.0)?, &m.quant(16.0)?, profile)?;
            Ok(all_sum_seconds(&plan, m.count("message_bytes")?))
        }
        HarnessKind::E2eDecode | HarnessKind::E2ePrefill | HarnessKind::E2eDecodeBatch => m.end_to_end(profile),
        other => Err(HarnessError::NotPredicted(other)),
    }
}

/// A microbenchmark's weight op with the stored format of the plan's quantization.
fn formatted(plan: &Plan, mut op: Op) -> Op {
    if let Some(role) = op.role {
        op.format = plan.quant.format(role, 0, &plan.model.quant_shape());
    }
    op
}

/// Bytes per activation value in the harness's dtype.
fn activation_bytes(h: &HarnessFile) -> u64 {
    if h.dtype == "float32" { 4 } else { 2 }
}

/// The model of a microbenchmark: one llama layer of the benchmark's width. Only the width enters
/// the timing (an element-wise op streams `hidden` values); the weights are small enough for any
/// host, so the plan's memory check never decides a microbenchmark.
fn bench_model(hidden: f64) -> Result<ModelSpec, HarnessError> {
    let cfg = json!({"model_type": "llama", "num_hidden_layers": 1, "hidden_size": hidden as u64, "num_attention_heads": 1,
        "intermediate_size": hidden as u64, "vocab_size": 1});
    Ok(ModelSpec::from_hf_config("harness-microbenchmark", "harness microbenchmark (one layer of its width)", &cfg)?)
}

/// The harness's end-to-end model as a twin model (from the config the harness recorded).
pub fn e2e_model(kind: HarnessKind, cfg: &Value) -> Result<ModelSpec, HarnessError> {
    let g = |key: &'static str| model_count(kind, cfg, key);
    let hf = json!({
        "model_type": "llama", "num_hidden_layers": g("layers")?, "hidden_size": g("hidden")?, "num_attention_heads": g("heads")?,
        "num_key_value_heads": g("kv_heads")?, "head_dim": g("head_dim")?, "intermediate_size": g("ffn")?, "vocab_size": g("vocab")?,
        "tie_word_embeddings": cfg.get("tie_word_embeddings").cloned().unwrap_or(Value::Bool(false)),
    });
    Ok(ModelSpec::from_hf_config("harness-e2e", "harness end-to-end model", &hf)?)
}

fn model_count(kind: HarnessKind, cfg: &Value, key: &'static str) -> Result<u64, HarnessError> {
    cfg.get(key).and_then(Value::as_u64).filter(|v| *v > 0).ok_or(HarnessError::MissingModelKey { kind, key })
}

/// One measurement of a file, with typed access to its parameters.
struct Measurement<'a> {
    h: &'a HarnessFile,
    b: &'a HarnessBench,
}

impl Measurement<'_> {
    /// A required numeric parameter.
    fn num(&self, key: &'static str) -> Result<f64, HarnessError> {
        self.b
            .params
            .get(key)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or(HarnessError::MissingParam { kind: self.b.kind, key })
    }

    /// A required count (a number >= 0, truncated to an integer as the harness's shapes are).
    fn count(&self, key: &'static str) -> Result<u64, HarnessError> {
        self.num(key).map(|v| v as u64)
    }

    /// Ranks that ran the measurement together.
    fn ranks(&self) -> usize {
        self.h.world_size.max(1) as usize
    }

    /// The MLX quantization of `bits` bits (16: unquantized bf16).
    fn quant(&self, bits: f64) -> Result<QuantSpec, HarnessError> {
        let id = match bits as u64 {
            3 => "mlx-3bit",
            4 => "mlx-4bit",
            5 => "mlx-5bit",
            6 => "mlx-6bit",
            8 => "mlx-8bit",
            16 => "bf16",
            other => {
                return Err(HarnessError::Unsupported { kind: self.b.kind, what: format!("{other}-bit weights are not in the catalog") });
            }
        };
        Ok(crate::catalog::catalog().quant(id).expect("catalog has the MLX quantizations").clone())
    }

    /// The engine the harness runs: MLX's own layers, tensor parallel across ranks (as exo),
    /// timing a prefill as one forward over the whole prompt.
    fn options(&self, n: usize) -> EngineOptions {
        let mut options = EngineOptions::december_2025(EngineKind::Exo, if n > 1 { Parallelism::Tensor } else { Parallelism::None });
        options.activation_bytes = activation_bytes(self.h);
        options.prefill_last_token_alone = false;
        options
    }

    /// A plan of `n` harness hosts on the harness link for `model`.
    fn plan(&self, n: usize, model: &ModelSpec, quant: &QuantSpec, profile: &Profile) -> Result<Plan, HarnessError> {
        self.plan_with(n, model, quant, self.options(n), profile)
    }

    fn plan_with(
        &self,
        n: usize,
        model: &ModelSpec,
        quant: &QuantSpec,
        options: EngineOptions,
        profile: &Profile,
    ) -> Result<Plan, HarnessError> {
        let fabric =
            if n > 1 { host_fabric(self.h)? } else { crate::catalog::catalog().fabric("none").expect("catalog has `none`").clone() };
        let nodes = vec![host_node(self.h)?; n];
        Ok(Plan::new(PlanInput {
            nodes: &nodes,
            fabric: &fabric,
            topology: if n > 1 { Topology::FullMesh } else { Topology::None },
            model,
            quant,
            options: &options,
            wired_limit_fraction: Some(1.0),
            context: 1,
            profile,
        })?)
    }

    /// The segment chain: its blocks of qmms and element-wise ops, with or without all_sums.
    fn segment_chain(&self, profile: &Profile) -> Result<f64, HarnessError> {
        let missing = HarnessError::MissingParam { kind: self.b.kind, key: "blocks" };
        let blocks_json = self.b.params.get("blocks").and_then(Value::as_array).filter(|v| !v.is_empty()).ok_or(missing)?;
        let mut blocks = Vec::with_capacity(blocks_json.len());
        let mut hidden = None;
        for blk in blocks_json {
            let shapes: Vec<(u64, u64)> = blk
                .get("shapes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| Some((s.get(0)?.as_u64()?, s.get(1)?.as_u64()?)))
                .collect();
            // The chain's width: the input size of its first matmul (the hidden state).
            hidden = hidden.or(shapes.first().map(|s| s.1));
            let mut ops: Vec<Op> = shapes.iter().map(|(n, k)| Op::dense("qmm", TensorRole::AttnQ, n * k, Placement::Replicated)).collect();
            let ew = blk
                .get("elementwise")
                .and_then(Value::as_u64)
                .ok_or(HarnessError::MissingParam { kind: self.b.kind, key: "blocks[].elementwise" })?;
            ops.push(Op::elementwise("element-wise", ew as u32));
            blocks.push(ops);
        }
        let hidden = hidden.ok_or(HarnessError::MissingParam { kind: self.b.kind, key: "blocks[].shapes" })?;
        let plan = self.plan(self.ranks(), &bench_model(hidden as f64)?, &self.quant(self.num("bits")?)?, profile)?;
        let blocks: Vec<Vec<Op>> = blocks.into_iter().map(|b| b.into_iter().map(|o| formatted(&plan, o)).collect()).collect();
        let repeats = self.count("repeats")?.max(1) as usize;
        Ok(segment_chain_seconds(&plan, &blocks, repeats, self.count("all_sum_bytes")?, CHAIN_SEED, CHAIN_REPS))
    }

    /// End-to-end decode or prefill tokens/s of the harness's model, through the generate
    /// simulation `run` uses (a batched decode: through a serving run's decode step).
    fn end_to_end(&self, profile: &Profile) -> Result<f64, HarnessError> {
        let kind = self.b.kind;
        let cfg = self.b.model.as_ref().ok_or(HarnessError::MissingModelKey { kind, key: "(the whole model config)" })?;
        let model = e2e_model(kind, cfg)?;
        let quant = self.quant(model_count(kind, cfg, "bits")? as f64)?;
        let n = model_count(kind, cfg, "ranks")? as usize;
        let pipeline = match cfg.get("parallelism").and_then(Value::as_str) {
            None | Some("tensor") | Some("none") => false,
            Some("pipeline") => true,
            Some(p) => return Err(HarnessError::Unsupported { kind, what: format!("parallelism `{p}` (tensor or pipeline)") }),
        };
        let prompt = self.count("prompt_tokens")?;
        if prompt == 0 {
            return Err(HarnessError::MissingParam { kind, key: "prompt_tokens" });
        }
        let mut options = self.options(n);
        if pipeline && n > 1 {
            // exo's pipeline: contiguous layer ranges, send/recv hand-off, all_gather of the
            // last stage's output (the harness's `e2e.pipeline`).
            options.parallelism = Parallelism::Pipeline;
        }
        options.prefill_chunk = self.b.params.get("chunk").and_then(Value::as_f64).filter(|c| *c >= 1.0).map_or(prompt, |c| c as u64);
        // The harness's model applies the LM head to the last position only; files that say
        // otherwise (`"prefill_logits": "all"`) are honoured.
        options.prefill_logits_all = cfg.get("prefill_logits").and_then(Value::as_str) == Some("all");
        let mut plan = self.plan_with(n, &model, &quant, options, profile)?;
        if kind == HarnessKind::E2ePrefill {
            return Ok(simulate_generate(&plan, prompt, 1, 1).prefill_tokens_per_s(prompt));
        }
        // The harness builds each step's graph in Python, then evaluates it: measured host time,
        // serial with the step (files that predate the measurement: the MLX runtime's own host
        // cost). Its loop is not exo's runner: exo's own host costs do not apply.
        let build_us = self.b.host_build_s.filter(|x| x.is_finite() && *x > 0.0).map(|b| b * 1e6);
        for (rt, chip) in plan.runtimes.iter_mut().zip(&plan.chips) {
            let mlx = chip.runtimes.get("mlx");
            rt.host_per_step_us = build_us.unwrap_or_else(|| mlx.map_or(0.0, |r| r.host_per_step_us));
            rt.host_per_seq_us = mlx.map_or(0.0, |r| r.host_per_seq_us);
        }
        let generate = self.count("gen_tokens")?.max(1);
        if kind == HarnessKind::E2eDecodeBatch {
            // B sequences decoded together from the prompt's context, each step one forward
            // lowered as a serving run's decode step.
            return Ok(batched_decode_tokens_per_s(&plan, self.count("batch")?.max(1), prompt, generate, 1));
        }
        Ok(simulate_generate(&plan, prompt, generate, 1).decode_tokens_per_s())
    }
}
