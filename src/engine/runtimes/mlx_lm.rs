//! mlx-lm on one node (mlx-lm 0.32.2).

use crate::hw::NodeSpec;

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::{
    CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, MLX_DEFAULTS, RESTARTS, ServingLoop, VersionDefaults, client_crash_reloads_every_node,
    single_node_planner_splits, single_node_split,
};

/// mlx-lm: MLX on one node.
pub struct MlxLm;

impl EngineRuntime for MlxLm {
    fn kind(&self) -> EngineKind {
        EngineKind::MlxLm
    }

    fn names(&self) -> &'static [&'static str] {
        &["mlx-lm"]
    }

    /// Measurement rows also write plain `mlx` for mlx-lm runs.
    fn measurement_names(&self) -> &'static [&'static str] {
        &["mlx-lm", "mlx"]
    }

    fn id(&self) -> &'static str {
        "mlx-lm"
    }

    fn label(&self) -> &'static str {
        "mlx-lm"
    }

    fn kernels(&self) -> Runtime {
        Runtime::Mlx
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
        lower_segments(plan, tokens)
    }

    /// mlx-lm `BatchGenerator` / `mlx_lm.server` (PRs 443, 626, 1072): `--decode-concurrency`
    /// 32 sequences in all, `--prompt-concurrency` 8 prompting.
    fn serving_loop(&self, max_batch: Option<u64>, _options: &EngineOptions) -> ServingLoop {
        let max_batch = max_batch.unwrap_or(32);
        ServingLoop::MlxBatchGenerator { max_batch, prefill_batch: max_batch.min(8) }
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

    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        single_node_planner_splits(nodes)
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [2048, 4096]
    }
}
