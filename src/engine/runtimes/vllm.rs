//! vLLM V1 on CUDA nodes (GB10): PyTorch/FlashInfer kernels (the chip's `cuda` runtime
//! parameters), the V1 scheduler, paged KV, CUDA graphs unless `--enforce-eager`, tensor
//! parallel over NCCL. Behaviour read from vLLM's V1 engine (FACTS-2026 B2: `_set_default_args_v1`,
//! `engine/arg_utils.py` `get_batch_defaults`, vLLM 0.19 on two Sparks).

use crate::hw::NodeSpec;

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::options::{CudaOptions, EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::{CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, RESTARTS, ServingLoop, VersionDefaults};

/// vLLM's defaults as shipped on a GB10. FACTS-2026 B2: V1 always chunks prefill and caches
/// prefixes; the API server on a GPU of at least 70 GiB whose name lacks "a100" gets
/// `max_num_batched_tokens` 8192 and `max_num_seqs` 1024, and vLLM sees the GB10 as 121.63 GiB
/// (inferred there); `--gpu-memory-utilization` 0.9 (vLLM's default, the top of NVIDIA's
/// 0.8-0.9 guidance); CUDA graphs on (V1's default; `--enforce-eager` turns them off); KV in the
/// model's dtype (`--kv-cache-dtype auto`); 16-token KV blocks (`--block-size`). The last prompt
/// token runs inside the last chunk (one forward computes the prompt and samples the first
/// token). MLA models: prefill in the expanded (multi-head) form, decode absorbed, as vLLM's
/// MLA backends do (an assumption: FACTS is silent on vLLM's MLA forms).
pub const VLLM_DEFAULTS: VersionDefaults = VersionDefaults {
    prefill_chunk: 8192,
    prefill_last_token_alone: false,
    mla_prefill_expanded: true,
    cuda: CudaOptions {
        cuda_graphs: true,
        kv_cache_fp8: false,
        max_num_batched_tokens: 8192,
        max_num_seqs: 1024,
        gpu_memory_utilization: 0.9,
        kv_block_tokens: 16,
    },
};

/// The CUDA engines' split rule: one node, or tensor parallel over NCCL (vLLM 0.19 serves
/// TP=2 over the ConnectX-7 link, FACTS.md; SGLang `--tp`). Pipeline parallel is not modelled
/// for them.
pub(super) fn cuda_split(engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
    match parallelism {
        Parallelism::Pipeline => Err(SplitError::NoPipeline { engine: engine.to_string() }),
        Parallelism::Tensor | Parallelism::None => Ok(()),
    }
}

/// The planner's splits of a CUDA engine: one node, or tensor parallel.
pub(super) fn cuda_planner_splits(nodes: usize) -> &'static [Parallelism] {
    if nodes == 1 { &[Parallelism::None] } else { &[Parallelism::Tensor] }
}

/// The CUDA engines' options a measurement's notes state: `--enforce-eager` (no CUDA graphs)
/// and an fp8 KV cache (`kv-cache fp8`, `--kv-cache-dtype fp8`).
pub(super) fn cuda_measurement_options(notes: &str) -> Vec<(&'static str, toml::Value)> {
    let mut v = Vec::new();
    if notes.contains("--enforce-eager") {
        v.push(("engine.enforce_eager", toml::Value::Boolean(true)));
    }
    if notes.contains("kv-cache fp8") || notes.contains("kv-cache-dtype fp8") {
        v.push(("engine.kv_cache_dtype", toml::Value::String("fp8".into())));
    }
    v
}

/// vLLM V1 on NVIDIA nodes.
pub struct Vllm;

impl EngineRuntime for Vllm {
    fn kind(&self) -> EngineKind {
        EngineKind::Vllm
    }

    fn names(&self) -> &'static [&'static str] {
        &["vllm"]
    }

    fn id(&self) -> &'static str {
        "vllm"
    }

    fn label(&self) -> &'static str {
        "vLLM"
    }

    fn measurement_assumption(&self) -> Option<&'static str> {
        Some("vLLM V1 as shipped on GB10 (8192-token budget, 1024 sequences, CUDA graphs unless the row says --enforce-eager)")
    }

    fn measurement_options(&self, notes: &str) -> Vec<(&'static str, toml::Value)> {
        cuda_measurement_options(notes)
    }

    fn kernels(&self) -> Runtime {
        Runtime::Cuda
    }

    fn version_defaults(&self) -> VersionDefaults {
        VLLM_DEFAULTS
    }

    /// Tensor parallel on a cluster (`--tensor-parallel-size N`, the NVIDIA two-Spark recipe).
    fn default_parallelism(&self, nodes: usize) -> Parallelism {
        if nodes > 1 { Parallelism::Tensor } else { Parallelism::None }
    }

    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        cuda_split(engine, parallelism)
    }

    fn mixes_chips(&self, _nodes: &[&NodeSpec]) -> bool {
        false
    }

    /// One node, or the shared tensor lowering whose all-sums run as NCCL all-reduces
    /// ([`Runtime::gpu_collectives`]).
    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        lower_segments(plan, tokens)
    }

    /// V1's scheduler with the engine's budgets; the scenario's `max_batch` caps `max_num_seqs`.
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        let c = options.cuda;
        ServingLoop::VllmV1 {
            max_num_seqs: max_batch.unwrap_or(c.max_num_seqs),
            max_num_batched_tokens: c.max_num_batched_tokens,
            block_tokens: c.kv_block_tokens,
        }
    }

    /// A crashed rank takes the engine down (a Ray/NCCL worker failure stops the instance): every
    /// node reloads.
    fn crash_reloads_every_node(&self, _parallelism: Parallelism, _node: usize) -> bool {
        true
    }

    fn crash_reaction(&self, _parallelism: Parallelism, _node: usize) -> &'static str {
        RESTARTS
    }

    fn cable_loss(&self, _parallelism: Parallelism) -> CableLoss {
        CABLE_FAILS_REQUESTS
    }

    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        cuda_planner_splits(nodes)
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [2048, 8192]
    }
}
