//! mlx-lm (0.32.2): one node, or several under `mlx.launch` (MLX distributed over JACCL or
//! the TCP ring): tensor parallel by `model.shard(group)`, pipeline by `PipelineMixin`.

use crate::hw::{NodeSpec, Os};

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::exo::lower_pipeline;
use super::{CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, MLX_DEFAULTS, RESTARTS, ServingLoop, VersionDefaults};

/// mlx_lm.server's most sequences by default (`--decode-concurrency`, mlx-lm PRs 443, 626, 1072).
pub const MLX_DECODE_CONCURRENCY: u64 = 32;

/// mlx-lm: MLX on one node, or plain MLX distributed over several Macs (exo's kernels and
/// collectives without exo's runner: FACTS.md, exo issue 2070, "plain MLX distributed tensor
/// parallel over RDMA ~98" tok/s against exo's ~48 on the same pair; mlx-lm PR 1189 runs a
/// 2-node JACCL tensor-parallel batch). `MLX_METAL_FAST_SYNCH` is on over JACCL, as exo sets
/// it: `mlx.launch` sets it only from the hostfile's `envs`, whose documented JACCL example
/// lists it (mlx 0.32.4 `_distributed_utils/common.py`); `engine.fast_sync = false` for a run
/// without it.
pub struct MlxLm;

/// The splits mlx-lm 0.32.2's model files offer, by Hugging Face `model_type`: (type, shards
/// (`Model.shard`: tensor parallel), pipelines (`PipelineMixin`)). Read after mlx-lm's
/// `MODEL_REMAPPING` (`mistral` -> llama, `kimi_k2` -> deepseek_v3, `minimax_m2` -> minimax) and
/// the files' inheritance (`qwen3_5_moe` from qwen3_5, `glm_moe_dsa` from deepseek_v32,
/// `kimi_k25` wrapping deepseek_v3). A type not listed does neither.
const SPLITS: &[(&str, bool, bool)] = &[
    ("deepseek_v2", true, true),
    ("deepseek_v3", true, true),
    ("deepseek_v32", true, true),
    ("glm_moe_dsa", true, true),
    ("kimi_k2", true, true),
    ("kimi_k25", true, true),
    ("glm4_moe", true, true),
    ("qwen2", true, true),
    ("qwen3_5", true, true),
    ("qwen3_5_moe", true, true),
    ("qwen3_moe", true, true),
    ("qwen3", true, false),
    ("gpt_oss", true, false),
    ("llama", true, false),
    ("mistral", true, false),
    ("minimax_m2", true, false),
    ("qwen3_next", false, true),
];

impl EngineRuntime for MlxLm {
    fn kind(&self) -> EngineKind {
        EngineKind::MlxLm
    }

    fn names(&self) -> &'static [&'static str] {
        &["mlx-lm"]
    }

    /// Measurement rows also write plain `mlx` for mlx-lm runs, and MLX's distributed launcher
    /// (`mlx.launch`, "MLX distributed") for its multi-node runs.
    fn measurement_names(&self) -> &'static [&'static str] {
        &["mlx-lm", "mlx", "mlx-distributed", "mlx-launch", "mlx-lm-distributed"]
    }

    fn id(&self) -> &'static str {
        "mlx-lm"
    }

    fn label(&self) -> &'static str {
        "mlx-lm"
    }

    /// `mlx_lm.server --decode-concurrency N`, 32 by default ([`MLX_DECODE_CONCURRENCY`]).
    fn concurrency_flags(&self) -> (&'static [&'static str], Option<u64>) {
        (&["--decode-concurrency"], Some(MLX_DECODE_CONCURRENCY))
    }

    fn kernels(&self) -> Runtime {
        Runtime::Mlx
    }

    fn version_defaults(&self) -> VersionDefaults {
        MLX_DEFAULTS
    }

    /// Tensor parallel on a cluster: `mlx_lm.server`, `mlx_lm.benchmark` and `mlx_lm.chat`
    /// under `mlx.launch` load through `sharded_load`, which shards every layer unless asked
    /// for a pipeline.
    fn default_parallelism(&self, nodes: usize) -> Parallelism {
        if nodes > 1 { Parallelism::Tensor } else { Parallelism::None }
    }

    /// Tensor (`shard`: q/k/v/gate/up by columns, o/down by rows with an `all_sum`, as exo's
    /// sharding, which reuses these model methods; `mlx_lm.server`'s default on a group of
    /// several) or pipeline (`--pipeline`, `PipelineMixin`: contiguous layer ranges, a
    /// send/recv per hand-off in the lazy graph, the output all-gathered); no expert
    /// parallelism (mlx-lm 0.32.2 `sharded_load`, `server.py`).
    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        match parallelism {
            Parallelism::Expert => Err(SplitError::NoExpertParallel { engine: engine.to_string() }),
            Parallelism::TensorPipeline { .. } => Err(SplitError::NoTensorPipeline { engine: engine.to_string() }),
            Parallelism::Data { .. } | Parallelism::DataExpert { .. } => Err(SplitError::NoDataAttention { engine: engine.to_string() }),
            Parallelism::Tensor | Parallelism::Pipeline | Parallelism::None => Ok(()),
        }
    }

    /// `sharded_load` refuses a tensor group for a model file without `shard` and a pipeline
    /// group for one without `PipelineMixin` (mlx-lm 0.32.2 `utils.py`): Qwen3-Next pipelines
    /// only, Llama and gpt-oss shard only, Gemma 3 and Llama 4 neither.
    fn check_model_split(&self, engine: &str, model: &crate::llm::ModelSpec, parallelism: Parallelism) -> Result<(), SplitError> {
        let arch = model.arch.as_str();
        let (shards, pipelines) = SPLITS.iter().find(|(t, _, _)| *t == arch).map_or((false, false), |&(_, s, p)| (s, p));
        let ok = match parallelism {
            Parallelism::Tensor => shards,
            Parallelism::Pipeline => pipelines,
            _ => true,
        };
        if ok {
            return Ok(());
        }
        let why = match (shards, pipelines) {
            (true, _) => "its mlx-lm model file shards but does not pipeline; use parallelism = \"tensor\"",
            (_, true) => "its mlx-lm model file pipelines but does not shard; use parallelism = \"pipeline\"",
            _ => "its mlx-lm model file neither shards nor pipelines (mlx-lm 0.32.2)",
        };
        Err(SplitError::ModelHasNoSplit { engine: engine.to_string(), model_type: arch.to_string(), parallelism, why: why.to_string() })
    }

    /// `PipelineMixin.pipeline` splits the layers evenly whatever each node's memory (the low
    /// ranks take the extra layers; mlx-lm 0.32.2 `models/pipeline.py`).
    fn pipeline_layers_by_memory(&self) -> bool {
        false
    }

    /// MLX distributed joins any Macs (Metal); FACTS.md's plain MLX tensor parallel ran an M4
    /// Max with an M5 Max (exo issue 2070).
    fn mixes_chips(&self, nodes: &[&NodeSpec]) -> bool {
        nodes.iter().all(|n| n.os == Os::Macos)
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        match plan.options.parallelism {
            Parallelism::Pipeline => lower_pipeline(plan, tokens),
            _ => lower_segments(plan, tokens),
        }
    }

    /// mlx-lm `BatchGenerator` / `mlx_lm.server` (PRs 443, 626, 1072): `--decode-concurrency`
    /// 32 sequences in all, `--prompt-concurrency` 8 prompting.
    fn serving_loop(&self, max_batch: Option<u64>, _options: &EngineOptions) -> ServingLoop {
        let max_batch = max_batch.unwrap_or(MLX_DECODE_CONCURRENCY);
        ServingLoop::MlxBatchGenerator { max_batch, prefill_batch: max_batch.min(8) }
    }

    /// One process per node under `mlx.launch`: a crash ends the job, every rank reloads (one
    /// node: that node).
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
        if nodes == 1 { &[Parallelism::None] } else { &[Parallelism::Tensor, Parallelism::Pipeline] }
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [2048, 4096]
    }

    /// The pipeline's hand-off is MLX's asynchronous `send`/`recv_like` inside the lazy graph
    /// (mlx-lm 0.32.2 `deepseek_v3.py`'s pipelined forward, then an `all_gather`), as exo's.
    fn pipelines_prefill_chunks(&self) -> bool {
        true
    }

    /// As exo's: over JACCL the macOS version and (tensor) the all-reduce algorithm; over either
    /// backend `MLX_METAL_FAST_SYNCH`.
    fn planner_option_axes(&self, parallelism: Parallelism, jaccl: bool, nodes: usize) -> Vec<(&'static str, Vec<toml::Value>)> {
        super::exo::Exo.planner_option_axes(parallelism, jaccl, nodes)
    }
}
