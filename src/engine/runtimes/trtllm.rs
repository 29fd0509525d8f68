//! TensorRT-LLM on CUDA nodes (GB10), as NVIDIA's DGX Spark playbook serves it (`trtllm-serve`;
//! FACTS-2026 B: single Spark `--max_batch_size 64`, `kv_cache_config.free_gpu_memory_fraction
//! 0.9`, `cuda_graph_config.enable_padding: true`; two Sparks `--tp_size 2 --max_batch_size 4
//! --max_num_tokens 32768` through `mpirun trtllm-llmapi-launch`; its Spark matrix lists NVFP4,
//! FP8 and MXFP4). Its kernels are taken as the chip's `cuda` runtime parameters, the ones vLLM
//! and SGLang are fitted on (an assumption: no published TensorRT-LLM row on a GB10 is in the
//! data, so every TensorRT-LLM prediction is an extrapolation of the CUDA engines' kernels).

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::options::{CudaOptions, EngineKind, EngineOptions, Parallelism};
use super::super::plan::Plan;
use super::super::split::{SplitError, TensorSplitRule};
use super::vllm::VLLM_DEFAULTS;
use super::{CudaEngine, ServingLoop, VersionDefaults};

/// TensorRT-LLM's defaults on one Spark: at most 64 requests in flight (the playbook's
/// `--max_batch_size 64`), KV from 0.9 of the memory (`free_gpu_memory_fraction` 0.9, taken
/// as the fraction of the wired limit, as vLLM's `--gpu-memory-utilization`), CUDA graphs on
/// (`cuda_graph_config`), KV in the model's dtype. Assumed where FACTS is silent: a token budget
/// of 8192 per forward (TensorRT-LLM's `max_num_tokens` default; the two-Spark recipe raises it
/// to 32768 and `[engine] max_num_batched_tokens` sets it) and 32-token KV blocks
/// (`tokens_per_block`). Its in-flight batching runs context and generation requests in one
/// forward under that budget, which is vLLM V1's loop; a prompt longer than the budget is
/// chunked as vLLM does (TensorRT-LLM needs `enable_chunked_prefill` for it).
pub const TRTLLM_DEFAULTS: VersionDefaults =
    VersionDefaults { cuda: CudaOptions { max_num_seqs: 64, kv_block_tokens: 32, ..VLLM_DEFAULTS.cuda }, ..VLLM_DEFAULTS };

/// TensorRT-LLM on NVIDIA nodes.
pub struct TrtLlm;

impl CudaEngine for TrtLlm {
    fn kind(&self) -> EngineKind {
        EngineKind::TrtLlm
    }

    fn names(&self) -> &'static [&'static str] {
        &["trtllm", "trt-llm", "tensorrt-llm"]
    }

    fn id(&self) -> &'static str {
        "trtllm"
    }

    fn label(&self) -> &'static str {
        "TensorRT-LLM"
    }

    fn measurement_assumption(&self) -> &'static str {
        "TensorRT-LLM as NVIDIA's Spark playbook runs it (64 requests in flight, CUDA graphs; 8192-token budget assumed) on the CUDA engines' fitted kernels (no TensorRT-LLM row in the data: extrapolated)"
    }

    /// Its executor's host costs are taken as the `cuda` runtime's (no row separates them).
    fn host_key(&self) -> Option<&'static str> {
        None
    }

    fn version_defaults(&self) -> VersionDefaults {
        TRTLLM_DEFAULTS
    }

    /// One node or tensor parallel (`--tp_size N`, the playbook's two-Spark recipe). Its
    /// pipeline and expert parallelism are not modelled (FACTS is silent on how it lowers them).
    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        super::tensor_or_one_node(engine, parallelism)
    }

    /// Attention heads and MLP columns shard as in vLLM's layers (an assumption).
    fn tensor_split_rule(&self) -> TensorSplitRule {
        TensorSplitRule::Vllm
    }

    /// The shared segment lowering; its ranks are MPI processes, so no Ray dispatch per step
    /// (the all-sums run as NCCL all-reduces, as vLLM's).
    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        lower_segments(plan, tokens)
    }

    /// In-flight batching under the token budget: vLLM V1's loop; `max_batch` caps the requests.
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        super::vllm_v1_loop(max_batch, options)
    }

    /// Not in `plan`'s search: nothing calibrates it apart from the other CUDA engines, so it
    /// would only tie or lose to them on the same kernels (a scenario names it).
    fn planner_splits(&self, _nodes: usize) -> &'static [Parallelism] {
        &[]
    }
}
