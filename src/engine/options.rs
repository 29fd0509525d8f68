//! Engine options: the runtime, the split and the options that changed between software
//! versions. The scenario layer fills these in, the lowering reads them; what each runtime
//! means lives in [`super::runtimes`].

/// The inference runtime. Each kind's behaviour is its module under [`super::runtimes`]
/// ([`EngineKind::behaviour`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// exo 1.0 (MLX; tensor or pipeline parallel over JACCL or the TCP ring).
    Exo,
    /// mlx-lm on one node.
    MlxLm,
    /// llama.cpp (or ollama) on one node.
    LlamaCpp,
    /// llama.cpp with `rpc-server` on the other nodes.
    LlamaCppRpc,
    /// vllm-mlx on one node: MLX kernels (the chip's `mlx` runtime parameters) behind its own
    /// server loop, whose host costs are the chip's `[engines.vllm-mlx]` (mlx-lm's where a chip
    /// has none). Its scheduler is taken as mlx-lm's `BatchGenerator` (an assumption: FACTS.md
    /// describes mlx-lm's, not vllm-mlx's).
    VllmMlx,
    /// oMLX on one node: MLX kernels behind its own server loop (host costs `[engines.omlx]`),
    /// its scheduler taken as mlx-lm's `BatchGenerator` (an assumption, as for vllm-mlx).
    Omlx,
    /// vLLM V1 on CUDA nodes (GB10): PyTorch/FlashInfer kernels (the chip's `cuda` runtime
    /// parameters), the V1 token-budget scheduler, paged KV, CUDA graphs unless eager.
    Vllm,
    /// SGLang on CUDA nodes (GB10): the same kernel library as vLLM, SGLang's own scheduler
    /// (separate prefill and decode batches, RadixAttention).
    Sglang,
    /// TensorRT-LLM on CUDA nodes (GB10), as NVIDIA's Spark playbook runs it: the CUDA
    /// engines' kernels, in-flight batching under a token budget, MPI ranks (no Ray).
    TrtLlm,
}

/// The kernel library an engine runs: the key of a chip's runtime parameters in a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// MLX (exo, mlx-lm, vllm-mlx, oMLX): MLX formats.
    Mlx,
    /// llama.cpp (llama-cpp, llama-cpp-rpc, ollama): GGUF formats.
    LlamaCpp,
    /// CUDA/PyTorch engines (vllm, sglang): Hugging Face checkpoints (bf16, fp8, mxfp4, nvfp4,
    /// gptq/awq int4), FlashAttention/FlashInfer attention, CUDA graphs. NVIDIA nodes only.
    Cuda,
}

/// Chips of the catalog with an NVIDIA GPU (CUDA): the GB10 (DGX Spark and its OEM boxes,
/// FACTS-2026 A4: "GB10, 128 GB LPDDR5X"; sm_121, FACTS-2026 B1).
pub const CUDA_CHIPS: &[&str] = &["gb10"];

impl Runtime {
    /// The quantization file family this runtime loads.
    pub fn format(self) -> crate::llm::QuantFamily {
        match self {
            Self::Mlx => crate::llm::QuantFamily::Mlx,
            Self::LlamaCpp => crate::llm::QuantFamily::Gguf,
            Self::Cuda => crate::llm::QuantFamily::Hf,
        }
    }

    /// Whether a host thread of this library can spin while it waits: MLX's CPU stream polls a
    /// shared event (`MLX_METAL_FAST_SYNCH`) or a collective backend's completion queues;
    /// llama.cpp's waits (command-buffer wait, RPC over TCP sockets on any fabric) sleep.
    /// CUDA's default device schedule (`cudaDeviceScheduleAuto`) spins while there are fewer
    /// active contexts than cores, and NCCL's proxy thread polls its queues.
    pub fn can_spin_on_waits(self) -> bool {
        match self {
            Self::Mlx | Self::Cuda => true,
            Self::LlamaCpp => false,
        }
    }

    /// Whether it can run an MLA model over a per-head KV cache (llama.cpp with a GGUF converted
    /// without MLA metadata); MLX keeps the latent cache.
    pub fn has_per_head_mla_cache(self) -> bool {
        match self {
            Self::Mlx | Self::Cuda => false,
            Self::LlamaCpp => true,
        }
    }

    /// Whether attention decodes with a flash-attention kernel (one pass over the KV cache at
    /// the dense streaming efficiency): llama.cpp's GPU backends (`-fa 1`, FACTS.md) and the CUDA
    /// engines' FlashAttention/FlashInfer backends; MLX's SDPA runs at the chip's attention
    /// efficiency.
    pub fn flash_attention(self) -> bool {
        match self {
            Self::Mlx => false,
            Self::LlamaCpp | Self::Cuda => true,
        }
    }

    /// Whether its collectives run as GPU kernels (NCCL: no GPU<->CPU crossing, no CPU
    /// reduction) rather than from the CPU (JACCL, MLX's ring, llama.cpp RPC).
    pub fn gpu_collectives(self) -> bool {
        match self {
            Self::Mlx | Self::LlamaCpp => false,
            Self::Cuda => true,
        }
    }

    /// Whether this library runs on a node of `chip` (CUDA needs an NVIDIA GPU,
    /// [`CUDA_CHIPS`]; MLX and llama.cpp run on every catalog chip).
    pub fn runs_on_chip(self, chip: &str) -> bool {
        match self {
            Self::Mlx | Self::LlamaCpp => true,
            Self::Cuda => CUDA_CHIPS.contains(&chip),
        }
    }

    /// Profile key (`[chips.<chip>.runtimes.<id>]`).
    pub fn id(self) -> &'static str {
        match self {
            Self::Mlx => "mlx",
            Self::LlamaCpp => "llama-cpp",
            Self::Cuda => "cuda",
        }
    }
}

/// How the model is split across nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Parallelism {
    /// Every rank holds a slice of every layer; all_sum after o_proj and the FFN.
    Tensor,
    /// Contiguous layer ranges per node.
    Pipeline,
    /// Attention tensor-parallel as [`Self::Tensor`], the MoE experts whole and spread over the
    /// ranks (vLLM `--tensor-parallel-size N --enable-expert-parallel`); dense models run as
    /// tensor parallel.
    Expert,
    /// `stages` pipeline stages of contiguous layers, each stage tensor parallel over
    /// `nodes / stages` ranks (vLLM `--tensor-parallel-size T --pipeline-parallel-size P`,
    /// T x P nodes). Ranks are numbered as vLLM's: a stage's ranks are consecutive
    /// (`rank = stage x T + tensor rank`).
    TensorPipeline {
        /// Pipeline stages (`--pipeline-parallel-size`, `[engine] pipeline_stages`).
        stages: u32,
    },
    /// Data-parallel attention on an MoE model: every rank holds the whole attention (and every
    /// other non-expert weight) and runs it over its own sequences; the MoE layers are sliced
    /// over all ranks as tensor parallel slices them and run over every rank's tokens, gathered
    /// before and scattered after (vLLM `--data-parallel-size N` on an MoE model, SGLang
    /// `--tp N --dp N --enable-dp-attention`, TensorRT-LLM `enable_attention_dp`). The ranks
    /// step in lockstep: a rank with no sequence runs a dummy forward. A dense model's data
    /// parallel is separate servers (`[engine] replicas`). With `tensor` > 1 each data-parallel rank is a tensor-parallel
    /// group of `tensor` consecutive nodes (vLLM `--data-parallel-size D
    /// --tensor-parallel-size T` on D x T nodes, `[engine] tensor_ranks = T`), its attention
    /// sliced within the group.
    Data {
        /// Nodes per data-parallel rank (`--tensor-parallel-size`, `[engine] tensor_ranks`).
        tensor: u32,
    },
    /// [`Self::Data`] with the experts whole and spread over the ranks (vLLM
    /// `--data-parallel-size N --enable-expert-parallel`).
    DataExpert {
        /// Nodes per data-parallel rank, as [`Self::Data`]'s.
        tensor: u32,
    },
    /// One node.
    None,
}

impl Parallelism {
    /// Every split name a scenario may use.
    pub const NAMES: [&'static str; 7] = ["tensor", "pipeline", "expert", "tensor+pipeline", "data", "data+expert", "none"];

    /// Pipeline stages of a `tensor+pipeline` split whose file does not say
    /// (`[engine] pipeline_stages`): two, the split people run on four machines.
    pub const DEFAULT_STAGES: u32 = 2;

    /// The split a scenario name selects (`tensor+pipeline` with [`Self::DEFAULT_STAGES`]).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "tensor" => Some(Self::Tensor),
            "pipeline" => Some(Self::Pipeline),
            "expert" => Some(Self::Expert),
            "tensor+pipeline" => Some(Self::TensorPipeline { stages: Self::DEFAULT_STAGES }),
            "data" => Some(Self::Data { tensor: 1 }),
            "data+expert" => Some(Self::DataExpert { tensor: 1 }),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// Scenario id.
    pub fn id(self) -> &'static str {
        match self {
            Self::Tensor => "tensor",
            Self::Pipeline => "pipeline",
            Self::Expert => "expert",
            Self::TensorPipeline { .. } => "tensor+pipeline",
            Self::Data { .. } => "data",
            Self::DataExpert { .. } => "data+expert",
            Self::None => "none",
        }
    }

    /// Data-parallel ranks that run the attention each over its own sequences on `nodes` nodes
    /// (data-parallel attention, [`Self::Data`] and [`Self::DataExpert`]: one per group of
    /// `tensor` nodes); 1 under every other split.
    pub fn data_ranks(self, nodes: usize) -> usize {
        match self {
            Self::Data { tensor } | Self::DataExpert { tensor } => nodes / (tensor as usize).max(1),
            _ => 1,
        }
    }

    /// Whether the attention runs data parallel ([`Self::Data`], [`Self::DataExpert`]).
    pub fn data_attention(self) -> bool {
        matches!(self, Self::Data { .. } | Self::DataExpert { .. })
    }

    /// Whether the MoE experts are whole and spread over the ranks ([`Self::Expert`],
    /// [`Self::DataExpert`]).
    pub fn spreads_experts(self) -> bool {
        matches!(self, Self::Expert | Self::DataExpert { .. })
    }

    /// Whether every rank holds a slice of its layers' attention (tensor, expert and
    /// tensor+pipeline parallel, data-parallel ranks of tensor-parallel groups).
    pub fn slices_layers(self) -> bool {
        matches!(self, Self::Tensor | Self::Expert | Self::TensorPipeline { .. })
            || matches!(self, Self::Data { tensor } | Self::DataExpert { tensor } if tensor > 1)
    }

    /// Pipeline stages on `nodes` nodes: every node under a pipeline split, the named count
    /// under tensor+pipeline, else one.
    pub fn stages(self, nodes: usize) -> usize {
        match self {
            Self::Pipeline => nodes,
            Self::TensorPipeline { stages } => stages as usize,
            Self::Tensor | Self::Expert | Self::Data { .. } | Self::DataExpert { .. } | Self::None => 1,
        }
    }

    /// Ranks each layer is sliced over on `nodes` nodes (the tensor-parallel size; 1 under a
    /// pipeline, data-parallel attention or on one node).
    pub fn tensor_ranks(self, nodes: usize) -> usize {
        match self {
            Self::Tensor | Self::Expert => nodes,
            Self::TensorPipeline { stages } => nodes / (stages as usize).max(1),
            Self::Data { tensor } | Self::DataExpert { tensor } => tensor as usize,
            Self::Pipeline | Self::None => 1,
        }
    }
}

/// How a host collective (all-reduce, all-gather) becomes tasks of the step's graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CollectiveLowering {
    /// O(N) tasks where the collective is symmetric (every rank the same node, chip and runtime
    /// parameters, every message one hop on a link of its own, no lost cable): per rank its
    /// link time and its CPU time as one task each after a join of all ranks' inputs. Without
    /// jitter the step's times equal [`Self::Full`]'s exactly (the test
    /// `collapsed_collectives_time_like_full_ones` in `engine::network`); elsewhere the full graph.
    #[default]
    Collapsed,
    /// Every message and every reduction as its own task: O(N^2) tasks per collective (the
    /// Gantt chart, to show each transfer; the equality test).
    Full,
}

/// The all-reduce algorithm of the collective backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllReduceAlgo {
    /// JACCL as shipped in December 2025: every rank sends its whole tensor to every peer.
    FullyConnected,
    /// mlx PR 3901 (2026-07): fully connected up to 32 KiB, reduce-scatter + all-gather above.
    ReduceScatterAllGather,
    /// Ring: reduce-scatter then all-gather over neighbours, 2(N-1) steps of M/N bytes.
    Ring,
}

/// Engine options that changed between software versions.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineOptions {
    /// Runtime.
    pub kind: EngineKind,
    /// Split.
    pub parallelism: Parallelism,
    /// JACCL RDMA frame size: 4 KiB on macOS 26.2, up to 512 KiB from 26.3.
    pub jaccl_frame_bytes: u64,
    /// All-reduce algorithm over a JACCL mesh.
    pub allreduce: AllReduceAlgo,
    /// `MLX_METAL_FAST_SYNCH`; `None` = what exo does (on for JACCL with 2+ nodes).
    pub fast_sync: Option<bool>,
    /// Prefill chunk in tokens (exo/mlx-lm 2,048; llama.cpp ubatch 512).
    pub prefill_chunk: u64,
    /// Bytes per activation element on the wire (bf16 on Metal: 2; fp32 on MLX's CPU backend: 4).
    pub activation_bytes: u64,
    /// Whether a prefill chunk computes logits for every token, or only for the last one. No
    /// runtime modelled here does the former: llama.cpp outputs the last token's logits; mlx-lm's
    /// `generate_step` evaluates only the KV caches after each chunk (`mx.eval([c.state for c in
    /// prompt_cache])`, mlx-lm 0.32.2), so MLX's lazy graph never computes that chunk's logits;
    /// the calibration harness's model slices before the head.
    pub prefill_logits_all: bool,
    /// Whether the last prompt token runs as its own one-token step after the chunks (mlx-lm's
    /// `generate_step` prefills `prompt - 1` tokens in chunks, then the last prompt token alone,
    /// which yields the first generated token) or inside the last chunk (llama.cpp; the
    /// harness's one-forward prefill).
    pub prefill_last_token_alone: bool,
    /// Whether a multi-token step of an MLA model expands the latent cache into per-head keys and
    /// values (mlx-lm, see [`crate::llm::MlaExpanded`]) or keeps the absorbed form of decode
    /// (llama.cpp's MLA graph, which turns MLA into multi-query attention over the latent for
    /// every batch size).
    pub mla_prefill_expanded: bool,
    /// Whether an MLA model runs as plain multi-head attention over a per-head KV cache
    /// (llama.cpp with a GGUF converted without MLA metadata, see [`crate::llm::MlaPerHead`])
    /// instead of over the latent cache.
    pub mla_per_head_cache: bool,
    /// The CUDA engines' serving options (vllm, sglang; inert elsewhere).
    pub cuda: CudaOptions,
    /// llama.cpp's GPU backend on a Linux node whose GPU is neither Apple's (Metal) nor
    /// NVIDIA's (CUDA): the AI Max+ 395's Radeon runs either (FACTS.md). Inert elsewhere.
    pub llama_backend: LlamaBackend,
    /// How llama.cpp's ROCm build picks its MoE tile width on RDNA ([`RocmTiles`]). Inert
    /// off the ROCm backend.
    pub rocm_tiles: RocmTiles,
    /// Whether llama.cpp runs attention as one flash-attention kernel (`-fa 1`, the default
    /// here: FACTS.md) or as separate KQ and KQV matrix multiplications around a soft-max over
    /// a materialised score matrix (`-fa 0`, llama-bench's default until mid-2026). Inert on
    /// every other engine.
    pub flash_attention: bool,
    /// Whether an MLX server batches requests (vllm-mlx `--continuous-batching`, oMLX always)
    /// or serves one at a time through mlx-lm's generate loop with none of the batching
    /// engine's own host work (vllm-mlx's simple mode). Inert on every other engine.
    pub continuous_batching: bool,
}

/// llama.cpp's GPU backend on an AMD GPU (`[engine] backend`): the two run different MoE
/// GEMM tiles ([`crate::engine::cost::ExpertRowTile`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LlamaBackend {
    /// Vulkan (RADV or AMDVLK): the portable backend, and the default.
    #[default]
    Vulkan,
    /// ROCm (HIP): llama.cpp's CUDA code compiled for AMD, as built from December 2025 (MMQ on
    /// RDNA3's WMMA units for every batch).
    Rocm,
}

impl LlamaBackend {
    /// Scenario names (`[engine] backend`).
    pub const NAMES: [(&'static str, LlamaBackend); 2] = [("vulkan", LlamaBackend::Vulkan), ("rocm", LlamaBackend::Rocm)];
}

/// How llama.cpp's ROCm MMQ picks the tile width of a MoE step on an RDNA GPU (`[engine]
/// rocm_tiles`; [`crate::engine::cost::ExpertRowTile`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RocmTiles {
    /// Against the rows each expert holds on average (builds from late September 2026,
    /// `ncols_opt`): the default, llama.cpp as it is now.
    #[default]
    PerExpert,
    /// Against the step's rows, as CUDA does (builds from December 2025 to September 2026).
    PerStep,
}

impl RocmTiles {
    /// Scenario names (`[engine] rocm_tiles`).
    pub const NAMES: [(&'static str, RocmTiles); 2] = [("per-expert", RocmTiles::PerExpert), ("per-step", RocmTiles::PerStep)];
}

/// Options of the CUDA engines (vLLM, SGLang) a user sets on the command line; the defaults are
/// what each ships with on a GB10 ([`super::runtimes::VersionDefaults::cuda`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CudaOptions {
    /// Whether a decode step replays a captured CUDA graph (one replay per step) instead of
    /// launching every kernel from Python (`--enforce-eager` turns graphs off).
    pub cuda_graphs: bool,
    /// KV cache stored in fp8 (`--kv-cache-dtype fp8`): 1 byte per element instead of the
    /// model's 2, so attention reads and the cache holds half the bytes.
    pub kv_cache_fp8: bool,
    /// Most tokens of one forward (vLLM `max_num_batched_tokens`; SGLang `chunked_prefill_size`).
    pub max_num_batched_tokens: u64,
    /// Most running sequences (vLLM `max_num_seqs`; SGLang `max_running_requests`).
    pub max_num_seqs: u64,
    /// Fraction of the GPU memory the engine takes for weights, activations and KV blocks
    /// (`--gpu-memory-utilization`, `--mem-fraction-static`).
    pub gpu_memory_utilization: f64,
    /// Tokens per KV block (vLLM `--block-size` 16; SGLang's token-level pool is 1).
    pub kv_block_tokens: u64,
}

impl CudaOptions {
    /// Bytes stored per KV element relative to the model's bf16 cache (fp8: half).
    pub fn kv_byte_scale(self) -> f64 {
        if self.kv_cache_fp8 { 0.5 } else { 1.0 }
    }
}

impl EngineOptions {
    /// The key of the engine's own host costs (`[chips.<chip>.engines.<key>]`): none for
    /// vllm-mlx's simple mode, which runs mlx-lm's generate loop without its batching engine.
    pub fn host_key(&self) -> Option<&'static str> {
        self.kind.host_key().filter(|_| self.continuous_batching)
    }

    /// The JACCL RDMA frame size on a macOS version: 4 KiB up to 26.2, 512 KiB from 26.3.
    pub fn jaccl_frame_bytes_on_macos(major: u32, minor: u32) -> u64 {
        if (major, minor) >= (26, 3) { 512 * 1024 } else { 4096 }
    }

    /// What shipped in December 2025 (macOS 26.2, exo 1.0, llama.cpp defaults; each runtime's
    /// own in its module's `version_defaults`).
    pub fn december_2025(kind: EngineKind, parallelism: Parallelism) -> Self {
        let defaults = kind.behaviour().version_defaults();
        EngineOptions {
            kind,
            parallelism,
            jaccl_frame_bytes: 4096,
            allreduce: AllReduceAlgo::FullyConnected,
            fast_sync: None,
            prefill_chunk: defaults.prefill_chunk,
            activation_bytes: 2,
            prefill_logits_all: false,
            prefill_last_token_alone: defaults.prefill_last_token_alone,
            mla_prefill_expanded: defaults.mla_prefill_expanded,
            mla_per_head_cache: false,
            cuda: defaults.cuda,
            llama_backend: LlamaBackend::Vulkan,
            rocm_tiles: RocmTiles::PerExpert,
            flash_attention: true,
            continuous_batching: true,
        }
    }
}
