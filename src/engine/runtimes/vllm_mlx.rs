//! vllm-mlx on one node: MLX kernels (the chip's `mlx` runtime parameters) behind its own
//! server loop, whose host costs are the chip's `[engines.vllm-mlx]` (mlx-lm's where a chip has
//! none). Its scheduler is taken as mlx-lm's `BatchGenerator` (an assumption: FACTS.md
//! describes mlx-lm's, not vllm-mlx's). The planner does not enumerate it.

use crate::hw::NodeSpec;

use super::super::lowered::Lowered;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::mlx_lm::MlxLm;
use super::{
    CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, MLX_DEFAULTS, RESTARTS, ServingLoop, VersionDefaults, client_crash_reloads_every_node,
    single_node_split,
};

/// vllm-mlx: MLX kernels behind vllm-mlx's own server loop.
pub struct VllmMlx;

impl EngineRuntime for VllmMlx {
    fn kind(&self) -> EngineKind {
        EngineKind::VllmMlx
    }

    fn names(&self) -> &'static [&'static str] {
        &["vllm-mlx"]
    }

    fn id(&self) -> &'static str {
        "vllm-mlx"
    }

    fn label(&self) -> &'static str {
        "vllm-mlx"
    }

    fn measurement_assumption(&self) -> Option<&'static str> {
        Some("vllm-mlx scheduler taken as mlx-lm's BatchGenerator (MLX kernels, vllm-mlx host costs)")
    }

    fn kernels(&self) -> Runtime {
        Runtime::Mlx
    }

    /// Its own Python scheduler, detokenising and streaming: `[chips.<chip>.engines.vllm-mlx]`.
    fn host_key(&self) -> Option<&'static str> {
        Some("vllm-mlx")
    }

    fn version_defaults(&self) -> VersionDefaults {
        MLX_DEFAULTS
    }

    fn default_parallelism(&self, _nodes: usize) -> Parallelism {
        Parallelism::None
    }

    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        single_node_split(engine, parallelism)
    }

    fn mixes_chips(&self, _nodes: &[&NodeSpec]) -> bool {
        false
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        MlxLm.lower(plan, tokens)
    }

    /// Taken as mlx-lm's BatchGenerator with mlx_lm.server's limits (an assumption: FACTS.md
    /// reads mlx-lm's scheduler, not vllm-mlx's; vllm-mlx batches through mlx-lm's
    /// BatchGenerator). Its own Python scheduler, detokenising and streaming show as its host
    /// costs (`[chips.<chip>.engines.vllm-mlx]`).
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        MlxLm.serving_loop(max_batch, options)
    }

    fn crash_reloads_every_node(&self, _parallelism: Parallelism, node: usize) -> bool {
        client_crash_reloads_every_node(node)
    }

    fn crash_reaction(&self, _parallelism: Parallelism, _node: usize) -> &'static str {
        RESTARTS
    }

    fn cable_loss(&self, _parallelism: Parallelism) -> CableLoss {
        CABLE_FAILS_REQUESTS
    }

    fn planner_splits(&self, _nodes: usize) -> &'static [Parallelism] {
        &[]
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [2048, 4096]
    }
}
