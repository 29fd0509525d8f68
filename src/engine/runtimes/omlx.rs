//! oMLX on one node: an MLX server with continuous batching (FACTS.md: jundot/omlx issue 1783,
//! Qwen3-Coder-Next 6-bit on an M4 Max, 1 user 78.4 and 8 users 180.2 tok/s aggregate). MLX
//! kernels (the chip's `mlx` runtime parameters) behind its own Python server loop, whose host
//! costs are the chip's `[engines.omlx]` (borrowed from another chip where a chip has none).
//! Its scheduler is taken as mlx-lm's `BatchGenerator` (an assumption: FACTS.md describes
//! mlx-lm's, not oMLX's; it batches on MLX as vllm-mlx does). The planner does not enumerate
//! it.

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

/// oMLX: MLX kernels behind oMLX's own server loop.
pub struct Omlx;

impl EngineRuntime for Omlx {
    fn kind(&self) -> EngineKind {
        EngineKind::Omlx
    }

    fn names(&self) -> &'static [&'static str] {
        &["omlx"]
    }

    fn id(&self) -> &'static str {
        "omlx"
    }

    fn label(&self) -> &'static str {
        "oMLX"
    }

    fn measurement_assumption(&self) -> Option<&'static str> {
        Some("oMLX scheduler taken as mlx-lm's BatchGenerator (MLX kernels, oMLX host costs)")
    }

    fn kernels(&self) -> Runtime {
        Runtime::Mlx
    }

    /// Its own Python scheduler, detokenising and streaming: `[chips.<chip>.engines.omlx]`.
    fn host_key(&self) -> Option<&'static str> {
        Some("omlx")
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
    /// reads mlx-lm's scheduler, not oMLX's). Its own Python scheduler, detokenising and
    /// streaming show as its host costs (`[chips.<chip>.engines.omlx]`).
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
