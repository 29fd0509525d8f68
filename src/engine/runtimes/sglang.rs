//! SGLang on CUDA nodes (GB10): the same kernel library as vLLM (the chip's `cuda` runtime
//! parameters: FlashInfer attention, CUDA graphs for decode), SGLang's own scheduler (separate
//! prefill/extend and decode batches, RadixAttention prefix reuse). FACTS-2026 B1 lists its
//! formats on the Spark (FP8, NVFP4, MXFP4); its scheduler defaults are not in FACTS: each is
//! an assumption stated beside it.

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::options::{CudaOptions, EngineKind, EngineOptions, Parallelism};
use super::super::plan::Plan;
use super::super::split::{SplitError, TensorSplitRule};
use super::vllm::VLLM_DEFAULTS;
use super::{CudaEngine, ServingLoop, VersionDefaults};

/// SGLang's defaults, assumed where FACTS is silent: `chunked_prefill_size` 8192 (the value its
/// server picks on large-memory GPUs, taken equal to vLLM's GB10 budget), at most 1024 running
/// requests (its cap comes from the KV pool; 1024 as vLLM's), `--mem-fraction-static` 0.9, CUDA
/// graphs on for decode (`--disable-cuda-graph` off), KV in the model's dtype, a token-level KV
/// pool (RadixAttention pages of one token). The last prompt token runs inside the last extend
/// chunk; MLA prefill expanded as vLLM's. Every value but the KV page is vLLM's, so it is written as vLLM's
/// defaults with the page changed.
pub const SGLANG_DEFAULTS: VersionDefaults =
    VersionDefaults { cuda: CudaOptions { kv_block_tokens: 1, ..VLLM_DEFAULTS.cuda }, ..VLLM_DEFAULTS };

/// SGLang on NVIDIA nodes.
pub struct Sglang;

impl CudaEngine for Sglang {
    fn kind(&self) -> EngineKind {
        EngineKind::Sglang
    }

    fn names(&self) -> &'static [&'static str] {
        &["sglang"]
    }

    fn id(&self) -> &'static str {
        "sglang"
    }

    fn label(&self) -> &'static str {
        "SGLang"
    }

    fn measurement_assumption(&self) -> &'static str {
        "SGLang's scheduler defaults assumed (chunked prefill 8192, CUDA graphs on; FACTS silent)"
    }

    /// Its own scheduler, tokenizer manager and detokenizer processes (not vLLM's): host costs
    /// of its own, `[chips.<chip>.engines.sglang]` (the `cuda` runtime's where a chip has none).
    fn host_key(&self) -> Option<&'static str> {
        Some("sglang")
    }

    fn version_defaults(&self) -> VersionDefaults {
        SGLANG_DEFAULTS
    }

    /// One node or tensor parallel (`--tp N`). SGLang has pipeline and expert parallelism too
    /// (`--pp-size`, `--ep-size`); neither is modelled (FACTS is silent on how SGLang lowers
    /// them).
    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        super::tensor_or_one_node(engine, parallelism)
    }

    /// SGLang's attention shards heads as vLLM's layers do (its `QKVParallelLinear` is vLLM's,
    /// an assumption: FACTS is silent).
    fn tensor_split_rule(&self) -> TensorSplitRule {
        TensorSplitRule::Vllm
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        lower_segments(plan, tokens)
    }

    /// SGLang's loop; the scenario's `max_batch` caps the running requests.
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        let c = options.cuda;
        ServingLoop::Sglang { max_running: max_batch.unwrap_or(c.max_num_seqs), chunked_prefill: c.max_num_batched_tokens }
    }

    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        if nodes == 1 { &[Parallelism::None] } else { &[Parallelism::Tensor] }
    }
}
