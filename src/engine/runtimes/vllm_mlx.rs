//! vllm-mlx on one node: MLX kernels (the chip's `mlx` runtime parameters) behind its own
//! server loop, whose host costs are the chip's `[engines.vllm-mlx]` (borrowed from another
//! chip where a chip has none). Its scheduler is taken as mlx-lm's `BatchGenerator` (an
//! assumption: FACTS.md describes mlx-lm's, not vllm-mlx's). The planner does not enumerate it.
//!
//! [`MlxServer`] is the shape every such MLX server shares (oMLX's too: [`super::omlx`]): only
//! its names, label and host-cost key differ.

use crate::hw::NodeSpec;

use super::super::lowered::Lowered;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::{DeviceNeed, SplitError};
use super::mlx_lm::MlxLm;
use super::{
    CABLE_FAILS_REQUESTS, CableLoss, EngineRuntime, MLX_DEFAULTS, RESTARTS, ServingLoop, VersionDefaults, client_crash_reloads_every_node,
    single_node_split,
};

/// An MLX server of its own on one node: MLX kernels, mlx-lm's `BatchGenerator` scheduler
/// (assumed), and the server loop's own host costs per step and per sequence, read from a
/// chip's `[engines.<host_key>]`.
pub struct MlxServer {
    /// The engine kind it registers as.
    pub kind: EngineKind,
    /// Scenario names (the first is its id and its host-cost key).
    pub names: &'static [&'static str],
    /// Report label.
    pub label: &'static str,
    /// What a measurement row of it is read as.
    pub assumption: &'static str,
}

/// vllm-mlx: MLX kernels behind vllm-mlx's own server loop.
pub const VLLM_MLX: MlxServer = MlxServer {
    kind: EngineKind::VllmMlx,
    names: &["vllm-mlx"],
    label: "vllm-mlx",
    assumption: "vllm-mlx scheduler taken as mlx-lm's BatchGenerator (MLX kernels, vllm-mlx host costs); its simple mode as mlx-lm's generate loop, one request at a time",
};

/// Phrases by which a benchmark states that vllm-mlx ran its continuous-batching engine.
const BATCHING_PHRASES: &[&str] = &[
    "--continuous-batching",
    "continuous-batching mode",
    "continuous batching mode",
    "continuous batching server",
    "continuous batching results",
    "with continuous batching",
    "batching engine",
];

/// Phrases by which a benchmark states that vllm-mlx ran its simple mode (one request at a
/// time; `vllm-mlx-bench` times the simple engine).
const SIMPLE_PHRASES: &[&str] = &[
    "simple mode",
    "simple engine",
    "simpleengine",
    "non-batching",
    "non batching",
    "vllm-mlx-bench",
    "without --continuous-batching",
    "without continuous batching",
    "no continuous batching",
    "single-request mode",
    "one-request mode",
];

/// The vllm-mlx mode a benchmark's text states (`Some(true)`: continuous batching), by the
/// earliest statement of either: a row describes its own mode before it quotes the other's
/// figure ("continuous-batching mode; the non-batching table gives ..."). `None` when silent.
fn stated_continuous_batching(text: &str) -> Option<bool> {
    let text = text.to_lowercase();
    let first = |phrases: &[&str]| phrases.iter().filter_map(|p| text.find(p)).min();
    match (first(BATCHING_PHRASES), first(SIMPLE_PHRASES)) {
        (Some(b), Some(s)) => Some(b < s),
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
        (None, None) => None,
    }
}

impl EngineRuntime for MlxServer {
    fn kind(&self) -> EngineKind {
        self.kind
    }

    fn names(&self) -> &'static [&'static str] {
        self.names
    }

    fn id(&self) -> &'static str {
        self.names[0]
    }

    fn label(&self) -> &'static str {
        self.label
    }

    fn measurement_assumption(&self) -> Option<&'static str> {
        Some(self.assumption)
    }

    /// vllm-mlx's mode where the row states it (`--continuous-batching`, or its simple mode /
    /// `vllm-mlx-bench`); oMLX has one mode.
    fn measurement_options(&self, notes: &str) -> Vec<(&'static str, toml::Value)> {
        match stated_continuous_batching(notes).filter(|_| self.kind == EngineKind::VllmMlx) {
            Some(b) => vec![("engine.continuous_batching", toml::Value::Boolean(b))],
            None => Vec::new(),
        }
    }

    fn kernels(&self) -> Runtime {
        Runtime::Mlx
    }

    /// A Mac only: both servers are built on MLX's Metal backend for Apple Silicon (every
    /// benchmark of theirs FACTS.md cites ran on a Mac; oMLX is a macOS app). MLX's Linux builds
    /// run on a CPU or CUDA, which neither server targets.
    fn runs_on(&self, node: &NodeSpec) -> bool {
        node.os == crate::hw::Os::Macos
    }

    fn needs(&self) -> DeviceNeed {
        DeviceNeed::Mac
    }

    /// Its own Python scheduler, detokenising and streaming: `[chips.<chip>.engines.<id>]`.
    fn host_key(&self) -> Option<&'static str> {
        Some(self.names[0])
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
    /// reads mlx-lm's scheduler, not this server's; vllm-mlx batches through mlx-lm's
    /// BatchGenerator). Its own Python scheduler, detokenising and streaming show as its host
    /// costs (`[chips.<chip>.engines.<id>]`).
    /// vllm-mlx's simple mode (`continuous_batching = false`, its CLI default) serves one
    /// request at a time: its `SimpleEngine` runs mlx-lm's generate loop per request.
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        MlxLm.serving_loop(if options.continuous_batching { max_batch } else { Some(1) }, options)
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
