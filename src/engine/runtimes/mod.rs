//! One module per runtime, behind one seam: [`EngineRuntime`]. A runtime answers everything it
//! means: its names and id, its kernel library and host costs, its version-dependent defaults,
//! the splits and fleets it can run, how it lowers a forward step, its serving scheduler, how it
//! reacts to faults, what the planner enumerates for it and its report label.
//!
//! [`EngineKind::behaviour`] is the single registration match; [`RUNTIMES`] lists every module
//! (aliases included) for name look-ups. Adding a runtime: a new module here, its `EngineKind`
//! variant, one line in each of those two, its profile table and its tests.

pub mod exo;
pub mod llama_cpp;
pub mod llama_cpp_rpc;
pub mod mlx_lm;
pub mod ollama;
pub mod vllm_mlx;

use crate::hw::{Backend, NodeSpec};

use super::lowered::Lowered;
use super::options::{EngineKind, Parallelism, Runtime};
use super::plan::Plan;
use super::split::SplitError;

/// Every runtime module, in the order scenario names are listed (aliases included).
pub const RUNTIMES: [&dyn EngineRuntime; 6] =
    [&exo::Exo, &mlx_lm::MlxLm, &llama_cpp::LlamaCpp, &llama_cpp_rpc::LlamaCppRpc, &ollama::Ollama, &vllm_mlx::VllmMlx];

impl EngineKind {
    /// The module that owns this runtime's behaviour (the one registration match).
    pub fn behaviour(self) -> &'static dyn EngineRuntime {
        match self {
            Self::Exo => &exo::Exo,
            Self::MlxLm => &mlx_lm::MlxLm,
            Self::LlamaCpp => &llama_cpp::LlamaCpp,
            Self::LlamaCppRpc => &llama_cpp_rpc::LlamaCppRpc,
            Self::VllmMlx => &vllm_mlx::VllmMlx,
        }
    }

    /// Every engine name a scenario may use (`ollama` runs llama.cpp).
    pub fn names() -> Vec<&'static str> {
        RUNTIMES.iter().flat_map(|r| r.names().iter().copied()).collect()
    }

    /// The engine a scenario name selects.
    pub fn parse(name: &str) -> Option<Self> {
        by_name(name).map(|r| r.kind())
    }

    /// Scenario id.
    pub fn id(self) -> &'static str {
        self.behaviour().id()
    }

    /// The key of this engine's own host costs in a chip's `engines` table, if it has any
    /// (its kernels are still its [`Self::runtime`]'s).
    pub fn host_key(self) -> Option<&'static str> {
        self.behaviour().host_key()
    }

    /// Runtime family: which kernels run and which calibration parameters apply.
    pub fn runtime(self) -> Runtime {
        self.behaviour().kernels()
    }
}

/// The runtime module a scenario name selects (an alias's own module, e.g. ollama's).
pub fn by_name(name: &str) -> Option<&'static dyn EngineRuntime> {
    RUNTIMES.iter().copied().find(|r| r.names().contains(&name))
}

/// The runtime module a measurement row's engine name selects.
pub fn by_measurement_name(name: &str) -> Option<&'static dyn EngineRuntime> {
    RUNTIMES.iter().copied().find(|r| r.measurement_names().contains(&name))
}

/// Every engine name a measurement row may use.
pub fn measurement_names() -> Vec<&'static str> {
    RUNTIMES.iter().flat_map(|r| r.measurement_names().iter().copied()).collect()
}

/// The keys of chips' `engines` tables: the runtimes with host costs of their own.
pub fn host_keys() -> Vec<&'static str> {
    RUNTIMES.iter().filter_map(|r| r.host_key()).collect()
}

/// The engine of a scenario that names none: exo on a cluster, mlx-lm on one node.
pub fn default_engine(nodes: usize) -> EngineKind {
    if nodes > 1 { EngineKind::Exo } else { EngineKind::MlxLm }
}

/// The engines the planner may choose from (those it enumerates on some node count).
pub fn planner_engines() -> Vec<&'static str> {
    RUNTIMES.iter().filter(|r| r.planned()).map(|r| r.id()).collect()
}

/// The planner's candidates on `nodes` nodes, as (runtime, split), in enumeration order: on
/// one node the single-node runtimes come before the cluster runtimes' one-node form (a tie
/// goes to the runtime made for one node); in registry order otherwise.
pub fn planner_candidates(nodes: usize) -> Vec<(&'static dyn EngineRuntime, Parallelism)> {
    let mut runtimes: Vec<&'static dyn EngineRuntime> = RUNTIMES.to_vec();
    if nodes == 1 {
        runtimes.sort_by_key(|r| !r.planner_splits(2).is_empty());
    }
    runtimes.into_iter().flat_map(|r| r.planner_splits(nodes).iter().map(move |&p| (r, p))).collect()
}

/// Options that changed between a runtime's versions, as shipped in December 2025.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionDefaults {
    /// Prefill chunk in tokens.
    pub prefill_chunk: u64,
    /// Whether the last prompt token runs as its own one-token step after the chunks.
    pub prefill_last_token_alone: bool,
    /// Whether a multi-token step of an MLA model expands the latent cache.
    pub mla_prefill_expanded: bool,
}

/// MLX runtimes (exo, mlx-lm, vllm-mlx): 2,048-token chunks; mlx-lm's `generate_step`
/// prefills `prompt - 1` tokens, then the last one alone; multi-token MLA steps expand the
/// latent (mlx-lm's prefill).
pub const MLX_DEFAULTS: VersionDefaults = VersionDefaults { prefill_chunk: 2048, prefill_last_token_alone: true, mla_prefill_expanded: true };

/// llama.cpp runtimes: ubatch 512; the last prompt token inside the last chunk; MLA stays in
/// its absorbed (multi-query over the latent) form for every batch size.
pub const LLAMA_CPP_DEFAULTS: VersionDefaults =
    VersionDefaults { prefill_chunk: 512, prefill_last_token_alone: false, mla_prefill_expanded: false };

/// A runtime's serving loop, as the runtime configures it (the serving code in `estimate`
/// turns it into its scheduler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServingLoop {
    /// exo's loop: prefill each admitted request to completion at batch 1, then one decode step
    /// of every active request.
    Exo {
        /// Most active requests.
        max_batch: u64,
    },
    /// mlx-lm's `BatchGenerator`: decode and prefill as separate forwards.
    MlxBatchGenerator {
        /// Most sequences (prompting + generating).
        max_batch: u64,
        /// Most sequences prompting at once.
        prefill_batch: u64,
    },
    /// llama.cpp's `llama-server`: decode and prefill fused in one batch per iteration.
    LlamaServer {
        /// Slots (`-np`).
        slots: u64,
        /// Tokens per batch (`-b`), a multiple of the micro-batch.
        n_batch: u64,
    },
}

/// What a runtime does when a cable is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CableLoss {
    /// The instance restarts (every node reloads); the sentence says why.
    RestartInstance(&'static str),
    /// Only the request in flight fails; the sentence says so.
    FailRequest(&'static str),
}

/// The `[faults.runtime]` keys of a scenario: runtime bugs a runtime may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeFault {
    /// `load_failure_probability`: a model load fails until a reboot.
    LoadFailure,
    /// `tp_corrupt_above_prompt_tokens`: tensor parallel output corrupted past a prompt length.
    TensorParallelCorruption,
}

/// Everything a runtime means. Each module implements it on a unit struct and says, beside
/// each answer, which version of the runtime's source it was read from.
pub trait EngineRuntime: Sync {
    /// The engine kind this module runs as (an alias answers its target's).
    fn kind(&self) -> EngineKind;
    /// Scenario names that select it.
    fn names(&self) -> &'static [&'static str];
    /// The id written in every output.
    fn id(&self) -> &'static str;
    /// The name charts print.
    fn label(&self) -> &'static str;
    /// Engine names a measurement row may use for it (validation).
    fn measurement_names(&self) -> &'static [&'static str] {
        self.names()
    }
    /// What validation assumes for a row of this runtime, if anything.
    fn measurement_assumption(&self) -> Option<&'static str> {
        None
    }
    /// The kernel library it runs: the profile key `[chips.<chip>.runtimes.<id>]`.
    fn kernels(&self) -> Runtime;
    /// The key of its own host costs (`[chips.<chip>.engines.<key>]`), if it has any.
    fn host_key(&self) -> Option<&'static str> {
        None
    }
    /// Its defaults as shipped in December 2025.
    fn version_defaults(&self) -> VersionDefaults;
    /// The split it uses on `nodes` nodes when the scenario names none.
    fn default_parallelism(&self, nodes: usize) -> Parallelism;
    /// Checks that it can run `parallelism` (named `engine` in the file); node counts are
    /// checked by [`super::split::check_split`].
    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError>;
    /// Whether it can run one cluster over `nodes` of more than one chip.
    fn mixes_chips(&self, nodes: &[&NodeSpec]) -> bool;
    /// Lowers one forward step of `tokens` tokens onto the plan's cluster.
    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered;
    /// Its serving loop, with the scenario's `max_batch` override, for a prefill micro-batch of
    /// `prefill_chunk` tokens.
    fn serving_loop(&self, max_batch: Option<u64>, prefill_chunk: u64) -> ServingLoop;
    /// Whether a crash of `node` makes every node reload (else only the crashed one).
    fn crash_reloads_every_node(&self, parallelism: Parallelism, node: usize) -> bool;
    /// Whether `node` reloads its weights over the network (else from its own disk).
    fn reloads_over_network(&self, _node: usize) -> bool {
        false
    }
    /// What a user sees after `node` crashed.
    fn crash_reaction(&self, parallelism: Parallelism, node: usize) -> &'static str;
    /// What a lost cable does.
    fn cable_loss(&self) -> CableLoss;
    /// Whether a scenario may give it `fault` with this split over this backend.
    fn accepts_runtime_fault(&self, _fault: RuntimeFault, _parallelism: Parallelism, _backend: Backend) -> bool {
        false
    }
    /// The splits the planner tries on `nodes` nodes (none: the planner skips it there).
    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism];
    /// The two prefill chunks the planner tries with `vary_options`.
    fn planner_prefill_chunks(&self) -> [i64; 2];
    /// The planner's runtime-specific option axes (scenario key, values) with `vary_options`.
    fn planner_option_axes(&self, _parallelism: Parallelism, _jaccl: bool, _nodes: usize) -> Vec<(&'static str, Vec<toml::Value>)> {
        Vec::new()
    }
    /// Whether the planner enumerates it on any node count.
    fn planned(&self) -> bool {
        !self.planner_splits(1).is_empty() || !self.planner_splits(2).is_empty()
    }
}

/// A single-node runtime's split rule: no tensor or pipeline parallelism.
fn single_node_split(engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
    match parallelism {
        Parallelism::Tensor | Parallelism::Pipeline => Err(SplitError::SingleNodeEngine { engine: engine.to_string(), parallelism }),
        Parallelism::None => Ok(()),
    }
}

/// The planner's splits of a single-node runtime.
fn single_node_planner_splits(nodes: usize) -> &'static [Parallelism] {
    if nodes == 1 { &[Parallelism::None] } else { &[] }
}

/// What a runtime without a distributed instance does after a crash: a runtime whose client
/// (node 0 of llama.cpp RPC) or only node crashed reloads every node.
fn client_crash_reloads_every_node(node: usize) -> bool {
    node == 0
}

/// The user-facing sentence of a runtime that restarts after a crash.
const RESTARTS: &str = "the runtime restarts and reloads";

/// A lost cable fails the request in flight; the next one takes the remaining path.
const CABLE_FAILS_REQUEST: CableLoss = CableLoss::FailRequest("the request fails");
