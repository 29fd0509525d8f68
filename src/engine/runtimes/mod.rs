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
pub mod omlx;
pub mod sglang;
pub mod trtllm;
pub mod vllm;
pub mod vllm_mlx;

use crate::hw::{Backend, NodeSpec};

use super::lowered::Lowered;
use super::options::{CudaOptions, EngineKind, EngineOptions, Parallelism, Runtime};
use super::plan::Plan;
use super::split::{DeviceNeed, SplitError, TensorSplitRule};

/// The split rule of a CUDA engine that runs one node, tensor parallel or data-parallel
/// attention with the MoE layers sliced over every rank (SGLang `--tp N`, `--tp N --dp N
/// --enable-dp-attention`; TensorRT-LLM `--tp_size N`, `enable_attention_dp`): pipeline and
/// expert parallel refused, naming `engine`.
pub(crate) fn tensor_or_one_node(engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
    let engine = engine.to_string();
    match parallelism {
        Parallelism::Pipeline => Err(SplitError::NoPipeline { engine }),
        Parallelism::Expert | Parallelism::DataExpert { .. } => Err(SplitError::NoExpertParallel { engine }),
        Parallelism::TensorPipeline { .. } => Err(SplitError::NoTensorPipeline { engine }),
        Parallelism::Tensor | Parallelism::Data { .. } | Parallelism::None => Ok(()),
    }
}

/// vLLM V1's budgeted loop under the engine's CUDA options (vLLM; TensorRT-LLM's in-flight
/// batching); the scenario's `max_batch` caps the running sequences.
pub(crate) fn vllm_v1_loop(max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
    let c = options.cuda;
    ServingLoop::VllmV1 {
        max_num_seqs: max_batch.unwrap_or(c.max_num_seqs),
        max_num_batched_tokens: c.max_num_batched_tokens,
        block_tokens: c.kv_block_tokens,
    }
}

/// The first of `flags` a benchmark's command line `text` sets to a positive integer (`-np 8`,
/// `--parallel=8`, `OLLAMA_NUM_PARALLEL=8`, `-ub 2048`), with the flag: (value, flag).
pub fn positive_flag(text: &str, flags: &[&'static str]) -> Option<(u64, &'static str)> {
    flag_parsed(text, flags, |w| w.parse::<u64>().ok().filter(|&n| n > 0))
}

/// The first of `flags` whose value in `text` (the next word, or after `=`) `parse` accepts,
/// with the flag.
pub fn flag_parsed<T>(text: &str, flags: &[&'static str], parse: impl Fn(&str) -> Option<T>) -> Option<(T, &'static str)> {
    let words: Vec<&str> = text.split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '`').filter(|w| !w.is_empty()).collect();
    words.iter().enumerate().find_map(|(i, w)| {
        flags.iter().find_map(|&f| match w.strip_prefix(f) {
            Some("") => words.get(i + 1).and_then(|n| parse(n)).map(|n| (n, f)),
            Some(rest) => rest.strip_prefix('=').and_then(&parse).map(|n| (n, f)),
            None => None,
        })
    })
}

/// Whether an engine of `kind` runs `preset`'s MLA over a per-head cache by default: a
/// llama.cpp engine with a preset whose GGUFs predate llama.cpp's MLA metadata
/// ([`crate::catalog::ModelPreset::gguf_per_head_mla`]); `[engine] mla_cache` overrides it.
pub fn default_mla_per_head_cache(kind: EngineKind, preset: &crate::catalog::ModelPreset) -> bool {
    preset.gguf_per_head_mla && kind.runtime().has_per_head_mla_cache()
}

/// Every runtime module, in the order scenario names are listed (aliases included).
pub const RUNTIMES: [&dyn EngineRuntime; 10] = [
    &exo::Exo,
    &mlx_lm::MlxLm,
    &llama_cpp::LlamaCpp,
    &llama_cpp_rpc::LlamaCppRpc,
    &ollama::Ollama,
    &vllm_mlx::VLLM_MLX,
    &omlx::OMLX,
    &vllm::Vllm,
    &sglang::Sglang,
    &trtllm::TrtLlm,
];

impl EngineKind {
    /// The module that owns this runtime's behaviour (the one registration match).
    pub fn behaviour(self) -> &'static dyn EngineRuntime {
        match self {
            Self::Exo => &exo::Exo,
            Self::MlxLm => &mlx_lm::MlxLm,
            Self::LlamaCpp => &llama_cpp::LlamaCpp,
            Self::LlamaCppRpc => &llama_cpp_rpc::LlamaCppRpc,
            Self::VllmMlx => &vllm_mlx::VLLM_MLX,
            Self::Omlx => &omlx::OMLX,
            Self::Vllm => &vllm::Vllm,
            Self::Sglang => &sglang::Sglang,
            Self::TrtLlm => &trtllm::TrtLlm,
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

    /// The engine names (aliases included) whose kernels run on `node`.
    pub fn names_on(node: &NodeSpec) -> Vec<&'static str> {
        engines_on(node)
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

/// The engines (ids, aliases included) whose kernels run on `node`.
pub fn engines_on(node: &NodeSpec) -> Vec<&'static str> {
    RUNTIMES.iter().filter(|r| r.runs_on(node)).flat_map(|r| r.names().iter().copied()).collect()
}

/// The engine of a scenario that names none: what people run on those machines. Macs: mlx-lm
/// on one node, exo on a cluster. GB10 machines (every node a CUDA chip): vLLM, the runtime
/// their users serve with (FACTS-2026 B). Any other machine, or a fleet mixing platforms:
/// llama.cpp on one node, llama.cpp RPC on a cluster (the AI Max+ as FACTS.md has it measured:
/// Vulkan and ROCm builds of llama.cpp).
pub fn default_engine(nodes: &[NodeSpec]) -> EngineKind {
    let cluster = nodes.len() > 1;
    if nodes.iter().all(|n| n.os == crate::hw::Os::Macos) {
        if cluster { EngineKind::Exo } else { EngineKind::MlxLm }
    } else if nodes.iter().all(|n| Runtime::Cuda.runs_on_chip(&n.chip)) {
        EngineKind::Vllm
    } else if cluster {
        EngineKind::LlamaCppRpc
    } else {
        EngineKind::LlamaCpp
    }
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VersionDefaults {
    /// Prefill chunk in tokens.
    pub prefill_chunk: u64,
    /// Whether the last prompt token runs as its own one-token step after the chunks.
    pub prefill_last_token_alone: bool,
    /// Whether a multi-token step of an MLA model expands the latent cache.
    pub mla_prefill_expanded: bool,
    /// The CUDA engines' serving options as shipped (inert for the others).
    pub cuda: CudaOptions,
}

/// What the non-CUDA runtimes carry in [`VersionDefaults::cuda`]: never read (no graphs, bf16
/// KV, the whole wired limit).
pub const NO_CUDA: CudaOptions = CudaOptions {
    cuda_graphs: false,
    kv_cache_fp8: false,
    max_num_batched_tokens: 0,
    max_num_seqs: 0,
    gpu_memory_utilization: 1.0,
    kv_block_tokens: 1,
};

/// MLX runtimes (exo, mlx-lm, vllm-mlx): 2,048-token chunks; mlx-lm's `generate_step`
/// prefills `prompt - 1` tokens, then the last one alone; multi-token MLA steps expand the
/// latent (mlx-lm's prefill).
pub const MLX_DEFAULTS: VersionDefaults =
    VersionDefaults { prefill_chunk: 2048, prefill_last_token_alone: true, mla_prefill_expanded: true, cuda: NO_CUDA };

/// llama.cpp runtimes: ubatch 512; the last prompt token inside the last chunk; MLA stays in
/// its absorbed (multi-query over the latent) form for every batch size.
pub const LLAMA_CPP_DEFAULTS: VersionDefaults =
    VersionDefaults { prefill_chunk: 512, prefill_last_token_alone: false, mla_prefill_expanded: false, cuda: NO_CUDA };

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
    /// vLLM V1's scheduler: one fused forward per step under a token budget, decodes first,
    /// chunked prefill always on, paged KV blocks with preemption by recompute.
    VllmV1 {
        /// Most running sequences (`max_num_seqs`).
        max_num_seqs: u64,
        /// Most tokens per forward (`max_num_batched_tokens`).
        max_num_batched_tokens: u64,
        /// Tokens per KV block (`--block-size`).
        block_tokens: u64,
    },
    /// SGLang's scheduler: a prefill (extend) batch whenever new requests fit, else one decode
    /// step of the running batch; separate forwards.
    Sglang {
        /// Most running requests (`max_running_requests`).
        max_running: u64,
        /// Most prompt tokens per prefill batch (`chunked_prefill_size`).
        chunked_prefill: u64,
    },
}

/// What a runtime does when a lost cable is one its step crosses. No backend forwards through a
/// peer (JACCL has none; no runtime source routes TCP through a node), so the pair that cable
/// joined has lost its path, and the runtime answers for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CableLoss {
    /// The instance is placed again on the largest set of nodes in which every pair still has a
    /// cable of its own (every node with its uplink, on a switch) and which holds the model;
    /// every node of it loads its share. No such set: the instance stops until a repair. A
    /// repair places it on the whole cluster again. The sentence says what the runtime does.
    Replace(&'static str),
    /// The instance is placed again on the same nodes over the fabric's `lost_to` (the LAN),
    /// and back on the cables once repaired.
    FallBack(&'static str),
    /// Requests fail until the cable is repaired, then the runtime restarts and reloads.
    FailUntilRepaired(&'static str),
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
    /// The `[engine]` options a measurement row's notes state for it (validation reads the
    /// command line the benchmark ran, e.g. vLLM's `--enforce-eager`).
    fn measurement_options(&self, _notes: &str) -> Vec<(&'static str, toml::Value)> {
        Vec::new()
    }
    /// The command-line flags or environment variables that cap how many requests its server
    /// runs at once (llama-server's `-np`), and the cap it ships with where none is given
    /// (`None`: its engine options set it, e.g. vLLM's `max_num_seqs`). Validation reads them
    /// from a serving row's command line ([`positive_flag`]).
    fn concurrency_flags(&self) -> (&'static [&'static str], Option<u64>) {
        (&[], None)
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
    /// Which rank counts a split that shards every layer (tensor, expert) accepts.
    fn tensor_split_rule(&self) -> TensorSplitRule {
        TensorSplitRule::HeadsKvHeadsHidden
    }
    /// Whether it can run one cluster over `nodes` of more than one chip.
    fn mixes_chips(&self, nodes: &[&NodeSpec]) -> bool;
    /// Whether it runs on `node` (the CUDA engines need an NVIDIA GPU).
    fn runs_on(&self, node: &NodeSpec) -> bool {
        self.kernels().runs_on_chip(&node.chip)
    }
    /// What [`Self::runs_on`] asks of a node, for the error on one it refuses: by default an
    /// NVIDIA GPU (CUDA's are the only kernels [`Runtime::runs_on_chip`] refuses a chip for).
    fn needs(&self) -> DeviceNeed {
        DeviceNeed::NvidiaGpu
    }
    /// Whether it speaks TCP sockets only (llama.cpp RPC): on an RDMA fabric it runs that
    /// fabric's TCP sibling over the same cables ([`crate::hw::FabricSpec::tcp_fabric`]).
    fn speaks_tcp_only(&self) -> bool {
        false
    }
    /// Lowers one forward step of `tokens` tokens onto the plan's cluster.
    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered;
    /// Its serving loop, with the scenario's `max_batch` override, under the engine options
    /// (prefill chunk, the CUDA engines' budgets).
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop;
    /// Whether a crash of `node` makes every node reload (else only the crashed one).
    fn crash_reloads_every_node(&self, parallelism: Parallelism, node: usize) -> bool;
    /// Whether `node` reloads its weights over the network (else from its own disk).
    fn reloads_over_network(&self, _node: usize) -> bool {
        false
    }
    /// What a user sees after `node` crashed.
    fn crash_reaction(&self, parallelism: Parallelism, node: usize) -> &'static str;
    /// What it does with `parallelism` when a cable its step crosses is lost.
    fn cable_loss(&self, parallelism: Parallelism) -> CableLoss;
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
    /// Whether, under pipeline parallelism, the stages work on successive prefill chunks at once
    /// (stage 1 on chunk k while stage 0 runs chunk k+1): a chunk's forward on a stage needs only
    /// that stage's own cache of the earlier chunks and the previous stage's activations, not the
    /// last stage's output, so nothing but the runtime's own loop keeps the stages in lockstep.
    /// Decode cannot overlap (each token needs the last stage's sample). Default: no overlap.
    fn pipelines_prefill_chunks(&self) -> bool {
        false
    }
    /// Whether its model code offers `parallelism` for `model`'s architecture (named `engine`
    /// in the file): by default every architecture it runs takes every split it has.
    fn check_model_split(&self, _engine: &str, _model: &crate::llm::ModelSpec, _parallelism: Parallelism) -> Result<(), SplitError> {
        Ok(())
    }
    /// Whether a pipeline gives each stage layers in proportion to its memory (exo, llama.cpp
    /// `-sm layer`; on identical nodes the same as even), else evenly (mlx-lm).
    fn pipeline_layers_by_memory(&self) -> bool {
        true
    }
    /// Whether the planner enumerates it on any node count.
    fn planned(&self) -> bool {
        !self.planner_splits(1).is_empty() || !self.planner_splits(2).is_empty()
    }
}

/// A single-node runtime's split rule: no tensor or pipeline parallelism.
fn single_node_split(engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
    match parallelism {
        Parallelism::Tensor
        | Parallelism::Pipeline
        | Parallelism::Expert
        | Parallelism::TensorPipeline { .. }
        | Parallelism::Data { .. }
        | Parallelism::DataExpert { .. } => Err(SplitError::SingleNodeEngine { engine: engine.to_string(), parallelism }),
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

/// A runtime that cannot serve while a node is unreachable: requests fail until the repair.
const CABLE_FAILS_REQUESTS: CableLoss = CableLoss::FailUntilRepaired("requests fail until the cable is repaired");

/// What tells one CUDA engine (vLLM, SGLang) from the other; everything else they share is
/// answered once, for both, by the [`EngineRuntime`] implementation below: the CUDA kernel
/// library, their rows' command-line options, tensor parallel by default on a cluster, one chip
/// family (NVIDIA only), the fault reactions of a distributed instance and the planner's
/// prefill chunks.
pub(super) trait CudaEngine: Sync {
    /// As [`EngineRuntime::kind`].
    fn kind(&self) -> EngineKind;
    /// As [`EngineRuntime::names`].
    fn names(&self) -> &'static [&'static str];
    /// As [`EngineRuntime::id`].
    fn id(&self) -> &'static str;
    /// As [`EngineRuntime::label`].
    fn label(&self) -> &'static str;
    /// As [`EngineRuntime::measurement_assumption`].
    fn measurement_assumption(&self) -> &'static str;
    /// As [`EngineRuntime::host_key`].
    fn host_key(&self) -> Option<&'static str>;
    /// As [`EngineRuntime::version_defaults`].
    fn version_defaults(&self) -> VersionDefaults;
    /// As [`EngineRuntime::check_split`].
    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError>;
    /// As [`EngineRuntime::tensor_split_rule`].
    fn tensor_split_rule(&self) -> TensorSplitRule;
    /// As [`EngineRuntime::lower`].
    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered;
    /// As [`EngineRuntime::serving_loop`].
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop;
    /// As [`EngineRuntime::planner_splits`].
    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism];
}

impl<T: CudaEngine> EngineRuntime for T {
    fn kind(&self) -> EngineKind {
        CudaEngine::kind(self)
    }

    fn names(&self) -> &'static [&'static str] {
        CudaEngine::names(self)
    }

    fn id(&self) -> &'static str {
        CudaEngine::id(self)
    }

    fn label(&self) -> &'static str {
        CudaEngine::label(self)
    }

    fn measurement_assumption(&self) -> Option<&'static str> {
        Some(CudaEngine::measurement_assumption(self))
    }

    /// `--enforce-eager` (no CUDA graphs), an fp8 KV cache (`kv-cache fp8`, `--kv-cache-dtype
    /// fp8`, `fp8_e4m3`, `fp8_e5m2`), the token budget (vLLM `--max-num-batched-tokens`, SGLang
    /// `--chunked-prefill-size`, TensorRT-LLM `--max_num_tokens`), the running-sequence cap
    /// (vLLM `--max-num-seqs`, SGLang `--max-running-requests`, TensorRT-LLM `--max_batch_size`)
    /// and the memory share (vLLM `--gpu-memory-utilization`, SGLang `--mem-fraction-static`)
    /// where a row's notes state them.
    fn measurement_options(&self, notes: &str) -> Vec<(&'static str, toml::Value)> {
        let mut v = Vec::new();
        if notes.contains("--enforce-eager") {
            v.push(("engine.enforce_eager", toml::Value::Boolean(true)));
        }
        let fp8_kv = flag_parsed(notes, &["--kv-cache-dtype"], |w| Some(w.starts_with("fp8"))).is_some_and(|(fp8, _)| fp8);
        if notes.contains("kv-cache fp8") || fp8_kv {
            v.push(("engine.kv_cache_dtype", toml::Value::String("fp8".into())));
        }
        let integer = |n: u64| toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        let tokens = ["--max-num-batched-tokens", "--chunked-prefill-size", "--max_num_tokens", "--max-num-tokens"];
        if let Some((n, _)) = positive_flag(notes, &tokens) {
            v.push(("engine.max_num_batched_tokens", integer(n)));
        }
        let seqs = ["--max-num-seqs", "--max-running-requests", "--max_batch_size", "--max-batch-size"];
        if let Some((n, _)) = positive_flag(notes, &seqs) {
            v.push(("engine.max_num_seqs", integer(n)));
        }
        let share = ["--gpu-memory-utilization", "--mem-fraction-static"];
        if let Some((x, _)) = flag_parsed(notes, &share, |w| w.parse::<f64>().ok().filter(|x| *x > 0.0 && *x <= 1.0)) {
            v.push(("engine.gpu_memory_utilization", toml::Value::Float(x)));
        }
        v
    }

    fn kernels(&self) -> Runtime {
        Runtime::Cuda
    }

    fn host_key(&self) -> Option<&'static str> {
        CudaEngine::host_key(self)
    }

    fn version_defaults(&self) -> VersionDefaults {
        CudaEngine::version_defaults(self)
    }

    /// Tensor parallel on a cluster (vLLM `--tensor-parallel-size N`, the NVIDIA two-Spark
    /// recipe; SGLang `--tp N`).
    fn default_parallelism(&self, nodes: usize) -> Parallelism {
        if nodes > 1 { Parallelism::Tensor } else { Parallelism::None }
    }

    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        CudaEngine::check_split(self, engine, parallelism)
    }

    fn tensor_split_rule(&self) -> TensorSplitRule {
        CudaEngine::tensor_split_rule(self)
    }

    fn mixes_chips(&self, _nodes: &[&NodeSpec]) -> bool {
        false
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        CudaEngine::lower(self, plan, tokens)
    }

    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        CudaEngine::serving_loop(self, max_batch, options)
    }

    /// A crashed rank takes the engine down (a Ray/NCCL worker failure stops the instance):
    /// every node reloads.
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
        CudaEngine::planner_splits(self, nodes)
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [2048, 8192]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::split::check_split;

    const SPLITS: [Parallelism; 3] = [Parallelism::None, Parallelism::Tensor, Parallelism::Pipeline];

    /// A flag and its value as command lines write them: apart, joined by `=`, quoted in
    /// backticks; the first flag set wins; a flag without a positive integer is not read.
    #[test]
    fn concurrency_flags_are_read_as_command_lines_write_them() {
        let flags = llama_cpp::LLAMA_SERVER_SLOT_FLAGS;
        assert_eq!(positive_flag("llama-server -np 8 -c 32768", flags), Some((8, "-np")));
        assert_eq!(positive_flag("`llama-server --parallel=16`", flags), Some((16, "--parallel")));
        assert_eq!(positive_flag("-np x; --n-parallel 2", flags), Some((2, "--n-parallel")));
        assert_eq!(positive_flag("-np 0", flags), None);
        assert_eq!(positive_flag("-npl 8 -npp 512", flags), None, "llama-batched-bench's flags are other flags");
        assert_eq!(positive_flag("OLLAMA_NUM_PARALLEL=4 ollama serve", &["OLLAMA_NUM_PARALLEL"]), Some((4, "OLLAMA_NUM_PARALLEL")));
        // The CUDA engines' caps are engine options, read with their other flags.
        let vllm = by_name("vllm").expect("registered");
        assert_eq!(vllm.concurrency_flags(), (&[][..], None));
        let opts = vllm.measurement_options(
            "vllm serve --max-num-seqs=4 --max-num-batched-tokens 4096 --gpu-memory-utilization 0.85 --kv-cache-dtype fp8_e5m2",
        );
        assert_eq!(
            opts,
            vec![
                ("engine.kv_cache_dtype", toml::Value::String("fp8".into())),
                ("engine.max_num_batched_tokens", toml::Value::Integer(4096)),
                ("engine.max_num_seqs", toml::Value::Integer(4)),
                ("engine.gpu_memory_utilization", toml::Value::Float(0.85)),
            ]
        );
        let sglang = by_name("sglang").expect("registered").measurement_options("--chunked-prefill-size 2048 --max-running-requests 8");
        assert_eq!(
            sglang,
            vec![("engine.max_num_batched_tokens", toml::Value::Integer(2048)), ("engine.max_num_seqs", toml::Value::Integer(8))]
        );
        assert_eq!(by_name("exo").expect("registered").concurrency_flags().1, Some(exo::EXO_MAX_CONCURRENT_REQUESTS));
    }

    #[test]
    fn every_runtime_answers_every_question() {
        for r in RUNTIMES {
            for name in r.names() {
                assert_eq!(EngineKind::parse(name), Some(r.kind()), "{name} parses back to its kind");
                assert!(by_name(name).is_some_and(|m| m.names() == r.names()), "{name} finds its own module");
            }
            assert_eq!(EngineKind::parse(r.id()), Some(r.kind()), "{} id parses", r.id());
            assert_eq!(r.kind().id(), r.id(), "an alias writes its target's id");
            for name in r.measurement_names() {
                assert_eq!(by_measurement_name(name).map(|m| m.id()), Some(r.id()), "measurement name {name}");
            }
            let defaults = r.version_defaults();
            assert!(defaults.prefill_chunk > 0);
            let chunks = r.planner_prefill_chunks();
            assert!(chunks[0] > 0 && chunks[0] < chunks[1], "{}", r.id());
            for p in SPLITS {
                for node in 0..3 {
                    assert!(!r.crash_reaction(p, node).is_empty(), "{} {p:?} node {node}: a crash reaction", r.id());
                }
            }
            let default = r.default_parallelism(1);
            assert_eq!(default, Parallelism::None, "{} on one node", r.id());
            assert!(check_split(r.id(), r.kind(), r.default_parallelism(2), 2).is_ok() || r.default_parallelism(2) == Parallelism::None);
        }
        // Every kind is registered, under its own id.
        for k in [
            EngineKind::Exo,
            EngineKind::MlxLm,
            EngineKind::LlamaCpp,
            EngineKind::LlamaCppRpc,
            EngineKind::VllmMlx,
            EngineKind::Omlx,
            EngineKind::Vllm,
            EngineKind::Sglang,
            EngineKind::TrtLlm,
        ] {
            assert!(RUNTIMES.iter().any(|r| r.kind() == k && r.id() == k.id()), "{k:?} registered");
            assert_eq!(k.behaviour().kind(), k);
        }
        assert_eq!(
            EngineKind::names(),
            [
                "exo",
                "mlx-lm",
                "llama-cpp",
                "llama-cpp-rpc",
                "ollama",
                "vllm-mlx",
                "omlx",
                "vllm",
                "sglang",
                "trtllm",
                "trt-llm",
                "tensorrt-llm"
            ]
        );
    }

    #[test]
    fn the_cuda_engines_run_only_on_nvidia_nodes() {
        let cat = crate::catalog::catalog();
        let spark = cat.node("dgx-spark").expect("catalog node");
        let mac = cat.node("m3-ultra-80c-512gb").expect("catalog node");
        for k in [EngineKind::Vllm, EngineKind::Sglang, EngineKind::TrtLlm] {
            assert_eq!(k.runtime(), Runtime::Cuda);
            assert!(k.behaviour().runs_on(spark) && !k.behaviour().runs_on(mac), "{k:?}");
        }
        assert!(engines_on(spark).contains(&"vllm") && engines_on(spark).contains(&"sglang"));
        assert!(!engines_on(mac).contains(&"vllm"));
        // The rows' command lines: vLLM's --enforce-eager and an fp8 KV cache.
        let opts = by_name("vllm").expect("registered").measurement_options("vLLM, --enforce-eager (no CUDA graphs), kv-cache fp8");
        assert_eq!(opts.iter().map(|o| o.0).collect::<Vec<_>>(), ["engine.enforce_eager", "engine.kv_cache_dtype"]);
    }

    #[test]
    fn host_keys_are_the_profiles() {
        assert_eq!(host_keys(), crate::profile::HOST_ENGINES);
        assert_eq!(EngineKind::VllmMlx.host_key(), Some("vllm-mlx"));
        assert_eq!(EngineKind::Sglang.host_key(), Some("sglang"));
        assert_eq!(EngineKind::Vllm.host_key(), None);
        assert_eq!(EngineKind::VllmMlx.runtime(), Runtime::Mlx);
        assert_eq!(EngineKind::Omlx.host_key(), Some("omlx"));
        assert_eq!(EngineKind::Omlx.runtime(), Runtime::Mlx);
    }

    #[test]
    fn ollama_is_llama_cpp_under_its_own_name() {
        assert_eq!(EngineKind::parse("ollama"), Some(EngineKind::LlamaCpp));
        let ollama = by_name("ollama").expect("registered");
        assert_eq!(ollama.id(), "llama-cpp");
        assert_eq!(ollama.label(), "ollama");
        assert_eq!(ollama.version_defaults(), LLAMA_CPP_DEFAULTS);
        assert!(!ollama.planned());
    }

    #[test]
    fn the_planner_enumerates_every_legal_runtime_in_a_fixed_order() {
        let ids = |n: usize| planner_candidates(n).iter().map(|(r, p)| (r.id(), p.id())).collect::<Vec<_>>();
        assert_eq!(ids(1), [("llama-cpp", "none"), ("exo", "none"), ("mlx-lm", "none"), ("vllm", "none"), ("sglang", "none")]);
        assert_eq!(
            ids(2),
            [
                ("exo", "tensor"),
                ("exo", "pipeline"),
                ("mlx-lm", "tensor"),
                ("mlx-lm", "pipeline"),
                ("llama-cpp-rpc", "pipeline"),
                ("vllm", "tensor"),
                ("vllm", "expert"),
                ("vllm", "data"),
                ("vllm", "pipeline"),
                ("sglang", "tensor")
            ]
        );
        assert_eq!(ids(3), ids(2));
        // From four nodes, an even count: vLLM's two stages of tensor parallel too.
        let mut four = ids(2);
        four.insert(9, ("vllm", "tensor+pipeline"));
        assert_eq!(ids(4), four);
        assert_eq!(ids(5), ids(2));
        assert_eq!(ids(6), four);
        assert_eq!(planner_engines(), ["exo", "mlx-lm", "llama-cpp", "llama-cpp-rpc", "vllm", "sglang"]);
        for n in 1..=8 {
            for (r, p) in planner_candidates(n) {
                assert!(check_split(r.id(), r.kind(), p, n).is_ok(), "{} {p:?} on {n}", r.id());
            }
        }
    }

    #[test]
    fn fault_reactions_are_pinned_per_runtime() {
        let exo = EngineKind::Exo.behaviour();
        // exo tensor parallel reloads every node, whichever crashed.
        assert!(exo.crash_reloads_every_node(Parallelism::Tensor, 1));
        // exo pipeline: only the crashed node reloads its layers.
        assert!(!exo.crash_reloads_every_node(Parallelism::Pipeline, 0));
        assert!(!exo.crash_reloads_every_node(Parallelism::Pipeline, 2));
        // A lost path: exo tensor re-places the instance; an exo pipeline goes over the LAN
        // (exo issue 2295); llama.cpp RPC fails requests until the repair.
        assert!(matches!(exo.cable_loss(Parallelism::Tensor), CableLoss::Replace(_)));
        assert!(matches!(exo.cable_loss(Parallelism::Pipeline), CableLoss::FallBack(_)));
        assert!(!exo.reloads_over_network(1));
        // llama.cpp RPC: a server reloads alone, over the network; the client restarts everything.
        let rpc = EngineKind::LlamaCppRpc.behaviour();
        assert!(!rpc.crash_reloads_every_node(Parallelism::Pipeline, 1));
        assert!(rpc.reloads_over_network(1) && !rpc.reloads_over_network(0));
        assert!(rpc.crash_reloads_every_node(Parallelism::Pipeline, 0));
        assert_eq!(rpc.crash_reaction(Parallelism::Pipeline, 1), "llama.cpp fails the request and re-sends the server's tensors");
        assert!(matches!(rpc.cable_loss(Parallelism::Pipeline), CableLoss::FailUntilRepaired(_)));
        // Single-node runtimes restart and reload.
        for k in [EngineKind::MlxLm, EngineKind::LlamaCpp, EngineKind::VllmMlx] {
            let r = k.behaviour();
            assert!(r.crash_reloads_every_node(Parallelism::None, 0));
            assert_eq!(r.crash_reaction(Parallelism::None, 0), RESTARTS);
            assert!(matches!(r.cable_loss(Parallelism::None), CableLoss::FailUntilRepaired(_)));
        }
        // Only exo has the `[faults.runtime]` bugs; the corruption only tensor parallel on JACCL.
        for r in RUNTIMES {
            let exo_like = r.kind() == EngineKind::Exo;
            assert_eq!(r.accepts_runtime_fault(RuntimeFault::LoadFailure, Parallelism::Tensor, Backend::Jaccl), exo_like);
            assert_eq!(r.accepts_runtime_fault(RuntimeFault::TensorParallelCorruption, Parallelism::Tensor, Backend::Jaccl), exo_like);
            assert!(!r.accepts_runtime_fault(RuntimeFault::TensorParallelCorruption, Parallelism::Pipeline, Backend::Jaccl));
        }
    }

    #[test]
    fn serving_loops_keep_their_defaults() {
        let opts = |k: EngineKind, chunk: u64| EngineOptions { prefill_chunk: chunk, ..EngineOptions::december_2025(k, Parallelism::None) };
        let lp = |k: EngineKind, max: Option<u64>, chunk: u64| k.behaviour().serving_loop(max, &opts(k, chunk));
        assert_eq!(lp(EngineKind::Exo, None, 2048), ServingLoop::Exo { max_batch: 8 });
        assert_eq!(lp(EngineKind::VllmMlx, None, 2048), ServingLoop::MlxBatchGenerator { max_batch: 32, prefill_batch: 8 });
        assert_eq!(lp(EngineKind::MlxLm, Some(4), 2048), ServingLoop::MlxBatchGenerator { max_batch: 4, prefill_batch: 4 });
        assert_eq!(lp(EngineKind::LlamaCppRpc, None, 512), ServingLoop::LlamaServer { slots: 4, n_batch: 2048 });
        assert_eq!(lp(EngineKind::LlamaCpp, Some(2), 3000), ServingLoop::LlamaServer { slots: 2, n_batch: 3000 });
        // vLLM on a GB10 (FACTS-2026 B2): the API server's 8192-token budget, 1024 sequences,
        // 16-token blocks; `max_batch` caps the sequences.
        assert_eq!(
            lp(EngineKind::Vllm, None, 8192),
            ServingLoop::VllmV1 { max_num_seqs: 1024, max_num_batched_tokens: 8192, block_tokens: 16 }
        );
        assert_eq!(
            lp(EngineKind::Vllm, Some(4), 8192),
            ServingLoop::VllmV1 { max_num_seqs: 4, max_num_batched_tokens: 8192, block_tokens: 16 }
        );
        assert_eq!(lp(EngineKind::Sglang, None, 8192), ServingLoop::Sglang { max_running: 1024, chunked_prefill: 8192 });
    }
}
