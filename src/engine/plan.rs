//! The plan: a scenario resolved against the catalog and a profile (memory per node, layer
//! shares, per-chip parameters), and the views of it the cost model ([`super::cost`]) times with.

use crate::hw::{Backend, FabricSpec, NodeSpec, Os, Topology};
use crate::llm::{ModelSpec, Op, OpClass, QuantSpec, kv_head_fraction};
use crate::profile::{ChipParams, CommParams, Profile, RuntimeParams};

use super::cost::{ExpertRowTile, LaunchCost, MlaOptions, NetCost, NodeCost, SparseGather};
use super::options::{CUDA_CHIPS, CollectiveLowering, EngineOptions, LlamaBackend, Parallelism, RocmTiles, Runtime};

/// Errors when a scenario cannot be lowered onto its cluster.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum PlanError {
    /// The model does not fit in the nodes' usable memory.
    #[error("{model} ({quant}) does not fit: {detail}")]
    DoesNotFit {
        /// Model id.
        model: String,
        /// Quantization id.
        quant: String,
        /// Which node is short and by how much.
        detail: String,
        /// Suggested fix.
        fix: String,
    },
    /// No calibration parameters for a node's chip and runtime.
    #[error("no calibration parameters for chip `{chip}` with runtime `{runtime}` in profile `{profile}`")]
    Uncalibrated {
        /// Chip.
        chip: String,
        /// Runtime.
        runtime: String,
        /// Profile name.
        profile: String,
    },
    /// A pipeline with more stages than layers.
    #[error("{nodes} pipeline stages for {layers} layers")]
    TooManyStages {
        /// Nodes.
        nodes: usize,
        /// Layers.
        layers: u64,
    },
}

impl PlanError {
    /// How to fix it.
    pub fn fix(&self) -> String {
        match self {
            PlanError::DoesNotFit { fix, .. } => fix.clone(),
            PlanError::Uncalibrated { .. } => "run `supernode calibrate` for this chip, pass --profile with parameters for it, or set the node's `calibrated_as` to the profiled chip nearest to it".into(),
            PlanError::TooManyStages { .. } => "use fewer nodes".into(),
        }
    }
}

/// Memory use of one node.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryBreakdown {
    /// Weights, GB.
    pub weights_gb: f64,
    /// KV cache at the scenario's full context, GB.
    pub kv_cache_gb: f64,
    /// Runtime overhead, GB.
    pub overhead_gb: f64,
    /// Sum, GB.
    pub total_gb: f64,
    /// Wired-memory limit, GB.
    pub limit_gb: f64,
    /// Where the model fits only with the Metal wired limit raised above the OS default: the
    /// limit the plan assumes, MiB (`sudo sysctl iogpu.wired_limit_mb=N`).
    pub raised_wired_limit_mb: Option<u64>,
}

/// The fraction of RAM a macOS user raises the Metal wired limit to (`sudo sysctl
/// iogpu.wired_limit_mb=N`) when a model does not fit the default recommended working set.
/// FACTS.md ("Usable GPU memory is capped by the Metal wired limit"): the default is about 75-93%
/// of RAM and exo warns above 0.9 of the recommended working set; 0.9 of RAM leaves the OS its
/// ~10% and is the level the published one-box DeepSeek R1 Q4_K_M rows (b17-r1-*) need at most.
/// Linux unified-memory nodes have no such switch in the twin: their catalog `wired_fraction` is
/// already the GTT/TTM limit users set.
pub const RAISED_WIRED_FRACTION_MACOS: f64 = 0.9;

/// The command that raises a Mac's wired limit to `mb` MiB.
pub fn wired_limit_command(mb: u64) -> String {
    format!("sudo sysctl iogpu.wired_limit_mb={mb}")
}

/// What one node holds and computes.
#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    /// First layer (inclusive).
    pub first_layer: u64,
    /// Last layer (exclusive).
    pub end_layer: u64,
    /// Fraction of sharded weights held (1/N under tensor parallelism, else 1).
    pub shard: f64,
    /// Fraction of each MoE expert layer's weights held: `shard`, but 1/N under data-parallel
    /// attention, whose ranks hold every other weight whole ([`Parallelism::Data`]).
    pub expert_shard: f64,
    /// Holds the input embedding.
    pub embedding: bool,
    /// Computes the LM head.
    pub head: bool,
}

/// A scenario resolved against the catalog and a profile: everything needed to build graphs.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Nodes.
    pub nodes: Vec<NodeSpec>,
    /// Fabric.
    pub fabric: FabricSpec,
    /// Cabling.
    pub topology: Topology,
    /// Model.
    pub model: ModelSpec,
    /// Quantization.
    pub quant: QuantSpec,
    /// Engine options.
    pub options: EngineOptions,
    /// Per-node chip parameters.
    pub chips: Vec<ChipParams>,
    /// Per-node runtime parameters.
    pub runtimes: Vec<RuntimeParams>,
    /// Communication parameters.
    pub comm: CommParams,
    /// Spread of log expert popularity (`[moe] expert_popularity_sigma`).
    pub expert_skew: f64,
    /// A flash-attention kernel's FLOP rate against the dense GEMM's
    /// (`[kernels] flash_compute_ratio`).
    pub flash_compute_ratio: f64,
    /// Per-node shares.
    pub shares: Vec<Share>,
    /// Per-node memory.
    pub memory: Vec<MemoryBreakdown>,
    /// Jitter coefficient of variation.
    pub jitter_cv: f64,
    /// Cables lost to a fault (unordered node pairs; `(a, n)` is node a's cable to a switch):
    /// messages detour through a peer ([`crate::hw::route_around`]). Empty when planned; the
    /// fault simulation sets it on a copy.
    pub lost_links: Vec<(usize, usize)>,
    /// How host collectives become tasks (collapsed where provably equal; the Gantt chart asks
    /// for the full graph).
    pub collectives: CollectiveLowering,
}

/// Inputs of [`Plan::new`].
pub struct PlanInput<'a> {
    /// Nodes.
    pub nodes: &'a [NodeSpec],
    /// Fabric.
    pub fabric: &'a FabricSpec,
    /// Topology.
    pub topology: Topology,
    /// Model.
    pub model: &'a ModelSpec,
    /// Quantization.
    pub quant: &'a QuantSpec,
    /// Engine options.
    pub options: &'a EngineOptions,
    /// Wired-memory fraction override.
    pub wired_limit_fraction: Option<f64>,
    /// Context the KV cache must hold (prompt + generated).
    pub context: u64,
    /// Calibration profile.
    pub profile: &'a Profile,
}

impl Plan {
    /// Resolves parameters, places layers and checks memory fit.
    pub fn new(inp: PlanInput<'_>) -> Result<Plan, PlanError> {
        let n = inp.nodes.len();
        let runtime = inp.options.kind.runtime().id();
        let mut chips = Vec::with_capacity(n);
        let mut runtimes = Vec::with_capacity(n);
        for node in inp.nodes {
            let (chip, rt) = node_params(&inp, node, runtime)?;
            chips.push(chip);
            runtimes.push(rt);
        }
        let layers = inp.model.layers;
        let shares: Vec<Share> = match inp.options.parallelism {
            // Expert parallel holds E/N whole experts per rank: the same 1/N of the expert bytes.
            Parallelism::Tensor | Parallelism::Expert => {
                let shard = 1.0 / n as f64;
                (0..n)
                    .map(|_| Share { first_layer: 0, end_layer: layers, shard, expert_shard: shard, embedding: true, head: true })
                    .collect()
            }
            // Data-parallel attention: everything but the experts whole on each data-parallel
            // rank (sliced over its tensor group of T nodes), the experts split over all N
            // (sliced, or E/N whole experts under expert parallel: the same 1/N of the bytes).
            Parallelism::Data { tensor } | Parallelism::DataExpert { tensor } => {
                let shard = 1.0 / tensor.max(1) as f64;
                (0..n)
                    .map(|_| Share { first_layer: 0, end_layer: layers, shard, expert_shard: 1.0 / n as f64, embedding: true, head: true })
                    .collect()
            }
            Parallelism::None => {
                vec![Share { first_layer: 0, end_layer: layers, shard: 1.0, expert_shard: 1.0, embedding: true, head: true }]
            }
            Parallelism::Pipeline | Parallelism::TensorPipeline { .. } => {
                let stages = inp.options.parallelism.stages(n);
                let ranks = inp.options.parallelism.tensor_ranks(n);
                if stages as u64 > layers {
                    return Err(PlanError::TooManyStages { nodes: stages, layers });
                }
                // Layer ranges in proportion to each stage's memory (exo: available RAM;
                // llama.cpp `-sm layer`: device memory; vLLM's even `get_pp_indices` on the
                // identical nodes a CUDA cluster has), or even where the runtime splits evenly
                // whatever the memory (mlx-lm's `PipelineMixin`). A stage's ranks (consecutive,
                // as vLLM numbers them) hold 1/ranks of its layers each.
                let even = !inp.options.kind.behaviour().pipeline_layers_by_memory();
                let memory: Vec<f64> =
                    inp.nodes.chunks(ranks).map(|g| if even { 1.0 } else { g.iter().map(|x| x.memory_gb).sum() }).collect();
                let ranges = stage_ranges(layers, &memory);
                let shard = 1.0 / ranks as f64;
                (0..n)
                    .map(|i| {
                        let s = i / ranks;
                        let (first_layer, end_layer) = ranges[s];
                        Share { first_layer, end_layer, shard, expert_shard: shard, embedding: s == 0, head: s + 1 == stages }
                    })
                    .collect()
            }
        };
        let mut memory = Vec::with_capacity(n);
        let overhead = inp.profile.misc.runtime_overhead_gb;
        for (i, (node, share)) in inp.nodes.iter().zip(&shares).enumerate() {
            let m = inp.model;
            let w = node_weight_bytes(m, inp.quant, share);
            let kv = kv_bytes(m, share, inp.options, inp.context);
            let total = w / 1e9 + kv / 1e9 + overhead;
            // A CUDA engine takes `gpu_memory_utilization` of the memory for weights,
            // activations and KV blocks (vLLM `--gpu-memory-utilization`, SGLang
            // `--mem-fraction-static`) unless the scenario sets the limit itself.
            let cuda_fraction = (inp.options.kind.runtime() == Runtime::Cuda).then_some(inp.options.cuda.gpu_memory_utilization);
            let (limit, raised_wired_limit_mb) = wired_limit_gb(node, inp.wired_limit_fraction.or(cuda_fraction), total);
            memory.push(MemoryBreakdown {
                weights_gb: w / 1e9,
                kv_cache_gb: kv / 1e9,
                overhead_gb: overhead,
                total_gb: total,
                limit_gb: limit,
                raised_wired_limit_mb,
            });
            let _ = i;
        }
        if let Some((i, mem)) = memory.iter().enumerate().find(|(_, m)| m.total_gb > m.limit_gb) {
            return Err(does_not_fit(&inp, i, mem, memory.iter().map(|m| m.total_gb).sum()));
        }
        Ok(Plan {
            nodes: inp.nodes.to_vec(),
            fabric: inp.fabric.clone(),
            topology: inp.topology,
            model: inp.model.clone(),
            quant: inp.quant.clone(),
            options: inp.options.clone(),
            chips,
            runtimes,
            comm: inp.profile.comm.clone(),
            expert_skew: inp.profile.moe.expert_popularity_sigma,
            flash_compute_ratio: inp.profile.kernels.flash_compute_ratio,
            shares,
            memory,
            jitter_cv: inp.profile.misc.jitter_cv,
            lost_links: Vec::new(),
            collectives: CollectiveLowering::Collapsed,
        })
    }

    /// The operations of layer `l` with their weights' stored formats.
    pub fn layer_ops(&self, l: u64) -> Vec<Op> {
        self.model.quantized_layer_ops(l, &self.quant)
    }

    /// The operations a pipeline stage on `node` runs in one forward: its layers' (no all_sums,
    /// a stage holds whole layers) and the LM head's if it holds the head.
    pub fn stage_ops(&self, node: usize) -> Vec<Op> {
        let share = &self.shares[node];
        let mut ops: Vec<Op> =
            (share.first_layer..share.end_layer).flat_map(|l| self.layer_ops(l)).filter(|o| o.class != OpClass::AllSum).collect();
        if share.head {
            ops.extend(self.head_ops());
        }
        ops
    }

    /// The operations after the last layer, with the LM head's stored format.
    pub fn head_ops(&self) -> Vec<Op> {
        self.model.quantized_head_ops(&self.quant)
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the GPU<->CPU crossing uses the fast path.
    pub fn fast_sync(&self) -> bool {
        self.options.fast_sync.unwrap_or(self.fabric.backend == Backend::Jaccl && self.n() > 1)
    }

    /// KV-cache bytes one sequence of `context` tokens holds on `node`. Under data-parallel
    /// attention a sequence's whole cache lives on the one rank that runs it; a server spreads
    /// its sequences evenly over the ranks, so each rank is charged 1/N of it (a fair balancer:
    /// the memory check in [`Plan::new`] still asks one whole sequence to fit a rank).
    pub fn kv_bytes(&self, node: usize, context: u64) -> f64 {
        kv_bytes(&self.model, &self.shares[node], &self.options, context) / self.options.parallelism.data_ranks(self.n()) as f64
    }

    /// Bytes of KV cache `node` can hold beside its weights and runtime overhead, under its
    /// wired limit.
    pub fn kv_capacity_bytes(&self, node: usize) -> f64 {
        let m = &self.memory[node];
        ((m.limit_gb - m.weights_gb - m.overhead_gb) * 1e9).max(0.0)
    }

    /// Every node's cost model, by node: for a step that reads them per op.
    pub fn costs(&self) -> Vec<NodeCost<'_>> {
        (0..self.n()).map(|node| self.cost(node)).collect()
    }

    /// The cost model of `node`: its kernels, launches, crossings and host work.
    pub fn cost(&self, node: usize) -> NodeCost<'_> {
        let spec = &self.nodes[node];
        NodeCost {
            mem_bw: spec.mem_bw(),
            read_ceiling: spec.read_ceiling(),
            // MLX on a chip with neural accelerators (M5) issues its GEMMs there; a power mode
            // caps what the chip's energy per FLOP allows (hw::NodeSpec::issued_flops).
            peak_flops: spec.issued_flops(self.options.kind.runtime() == Runtime::Mlx, self.chips[node].pj_per_flop),
            alu_flops: spec.issued_flops(false, self.chips[node].pj_per_flop),
            // FP8 W8A8 checkpoints run on the FP8 tensor cores under the CUDA engines only.
            fp8_flops: match self.options.kind.runtime() {
                Runtime::Cuda => spec.fp8_issued_flops(self.chips[node].pj_per_flop).unwrap_or(0.0),
                _ => 0.0,
            },
            sparse_gather: match self.options.kind.runtime() {
                Runtime::Mlx => SparseGather::Decode,
                Runtime::LlamaCpp => SparseGather::LongCache,
                Runtime::Cuda => SparseGather::Always,
            },
            sequential_recurrence: self.options.kind.runtime() == Runtime::Mlx,
            // FACTS.md measures Metal's `qmv`; MLX on a CPU (the harness host) or CUDA (GB10) runs other kernels.
            per_row_matvec: self.options.kind.runtime() == Runtime::Mlx && spec.os == Os::Macos,
            os: spec.os,
            chip: &self.chips[node],
            runtime: &self.runtimes[node],
            comm: &self.comm,
            shard: self.shares[node].shard,
            expert_shard: self.shares[node].expert_shard,
            kv_shard: kv_head_share(&self.model, self.shares[node].shard),
            hidden: self.model.hidden,
            mla: MlaOptions { per_head_cache: self.options.mla_per_head_cache, prefill_expanded: self.options.mla_prefill_expanded },
            fast_sync: self.fast_sync(),
            flash_attention: self.options.kind.runtime().flash_attention() && self.options.flash_attention,
            flash_compute_ratio: self.flash_compute_ratio,
            materialized_attention: self.options.kind.runtime() == Runtime::LlamaCpp && !self.options.flash_attention,
            kv_byte_scale: self.options.cuda.kv_byte_scale(),
            expert_ranks: if self.options.parallelism.spreads_experts() { self.n() } else { 1 },
            expert_skew: self.expert_skew,
            expert_tile: match self.options.kind.runtime() {
                Runtime::LlamaCpp if spec.os == Os::Macos => ExpertRowTile::METAL_MM_ID,
                Runtime::LlamaCpp if CUDA_CHIPS.contains(&spec.chip.as_str()) => ExpertRowTile::CUDA_MMQ,
                Runtime::LlamaCpp => match self.options.llama_backend {
                    LlamaBackend::Vulkan => ExpertRowTile::VULKAN_MM_ID,
                    LlamaBackend::Rocm if self.options.rocm_tiles == RocmTiles::PerStep => ExpertRowTile::ROCM_MMQ,
                    LlamaBackend::Rocm => ExpertRowTile::ROCM_MMQ_PER_EXPERT,
                },
                Runtime::Mlx if spec.os == Os::Macos => ExpertRowTile::MLX_GATHER_QMM,
                _ => ExpertRowTile::NONE,
            },
            launch: self.launch_cost(node),
        }
    }

    /// How `node`'s runtime pays its kernel launches ([`LaunchCost`]): a CUDA engine pays the
    /// GPU's per-kernel gap (`graph_kernel_us`, never above an eager launch) and, run eagerly
    /// (`--enforce-eager`), its Python launches on the host beside the GPU; with CUDA graphs
    /// nothing on the host per kernel. vLLM V1's piecewise graphs cover mixed prefill/decode
    /// steps too, attention excepted; graphs are charged on every step (an assumption:
    /// FACTS-2026 B2 gives the decode effect only). The others pay their fitted launch cost on
    /// the GPU's timeline; MLX also builds the next step's graph on the host beside it
    /// (`host_per_kernel_us`, [`LaunchCost::ahead_us`]).
    fn launch_cost(&self, node: usize) -> LaunchCost {
        let rt = &self.runtimes[node];
        match self.options.kind.runtime() {
            Runtime::Cuda => LaunchCost {
                serial_us: rt.graph_kernel_us.min(rt.kernel_launch_us),
                dispatch_us: if self.options.cuda.cuda_graphs { 0.0 } else { rt.kernel_launch_us },
                ahead_us: 0.0,
            },
            Runtime::Mlx => LaunchCost { serial_us: rt.kernel_launch_us, dispatch_us: 0.0, ahead_us: rt.host_per_kernel_us },
            Runtime::LlamaCpp => LaunchCost { serial_us: rt.kernel_launch_us, dispatch_us: 0.0, ahead_us: 0.0 },
        }
    }

    /// The cost model of the fabric and the collectives: hops, posts, reductions, RPC calls,
    /// with the bandwidth of the cluster's slowest link ([`FabricSpec::slowest_link_gbs`]: a
    /// node whose port is slower than the fabric caps its links). What collectives paced by
    /// their slowest link (NCCL's, a collapsed ring of identical ranks) are timed with.
    pub fn net_cost(&self) -> NetCost<'_> {
        NetCost { fabric: &self.fabric, comm: &self.comm, bandwidth_gbs: self.fabric.slowest_link_gbs(&self.nodes) }
    }

    /// The cost model of the link between nodes `a` and `b`: the fabric's bandwidth capped by
    /// the slower of their two ports ([`FabricSpec::link_gbs`]).
    pub fn link_cost(&self, a: usize, b: usize) -> NetCost<'_> {
        NetCost { fabric: &self.fabric, comm: &self.comm, bandwidth_gbs: self.fabric.link_gbs(&self.nodes[a], &self.nodes[b]) }
    }
}

/// A node's chip parameters and its runtime's, as the plan times with them: an engine's own
/// host costs in place of the runtime's (how launches count: [`Plan::launch_cost`]).
fn node_params(inp: &PlanInput<'_>, node: &NodeSpec, runtime: &str) -> Result<(ChipParams, RuntimeParams), PlanError> {
    // A node the profile never measured times with the chip it is calibrated as (see
    // `Profile::params_chip`); the envelope says so.
    let params_chip = inp.profile.params_chip(node);
    let chip = inp.profile.chip(&params_chip).ok_or_else(|| PlanError::Uncalibrated {
        chip: params_chip.clone(),
        runtime: runtime.into(),
        profile: inp.profile.meta.name.clone(),
    })?;
    let rt = chip.runtimes.get(runtime).ok_or_else(|| PlanError::Uncalibrated {
        chip: params_chip.clone(),
        runtime: runtime.into(),
        profile: inp.profile.meta.name.clone(),
    })?;
    let mut rt = rt.clone();
    // An engine with a server loop of its own (vllm-mlx) keeps the runtime's kernels and
    // brings its own host costs; a chip without them borrows another chip's (CPU work:
    // `Profile::engine_host`; the envelope says so), and keeps the runtime's only when no
    // chip has them.
    if let Some((_, h)) = inp.options.host_key().and_then(|k| inp.profile.engine_host(&params_chip, k)) {
        rt.host_per_step_us = h.host_per_step_us;
        rt.host_per_seq_us = h.host_per_seq_us;
    }
    Ok((chip.clone(), rt))
}

/// Contiguous layer ranges `[first, end)` of `layers` layers in proportion to each stage's
/// `memory`, every stage at least one layer. Cumulative rounding keeps the total exact.
fn stage_ranges(layers: u64, memory: &[f64]) -> Vec<(u64, u64)> {
    let n = memory.len();
    let total: f64 = memory.iter().sum();
    let mut cum = 0.0;
    let mut prev = 0u64;
    let mut out = Vec::with_capacity(n);
    for (i, m) in memory.iter().enumerate() {
        cum += m;
        let mut end = if i + 1 == n { layers } else { ((layers as f64) * cum / total).round() as u64 };
        end = end.max(prev + 1).min(layers - (n - 1 - i) as u64);
        out.push((prev, end));
        prev = end;
    }
    out
}

/// The error of a plan whose node `i` needs more than its limit, with the setting that fixes it.
fn does_not_fit(inp: &PlanInput<'_>, i: usize, mem: &MemoryBreakdown, need: f64) -> PlanError {
    let node = &inp.nodes[i];
    if let Some(limit) = node.gpu_memory_limit_gb {
        let fix = if mem.total_gb <= node.usable_bytes(1.0) / 1e9 {
            format!(
                "raise gpu_memory_limit_gb to at least {:.1} (of the node's {} GB), or add nodes, use a smaller quantization or shorten the context",
                mem.total_gb, node.memory_gb
            )
        } else {
            format!(
                "add nodes or bigger nodes, use a smaller quantization or shorten the context: it needs more than the node's {} GB",
                node.memory_gb
            )
        };
        return PlanError::DoesNotFit {
            model: inp.model.id.clone(),
            quant: inp.quant.id.clone(),
            detail: format!(
                "node {i} ({}) needs {:.1} GB (weights {:.1} + KV cache {:.1} + runtime {:.1}) but its GPU memory limit is {limit:.1} GB (gpu_memory_limit_gb); the cluster needs {need:.0} GB in all",
                node.id, mem.total_gb, mem.weights_gb, mem.kv_cache_gb, mem.overhead_gb
            ),
            fix,
        };
    }
    PlanError::DoesNotFit {
        model: inp.model.id.clone(),
        quant: inp.quant.id.clone(),
        detail: format!(
            "node {i} ({}) needs {:.1} GB (weights {:.1} + KV cache {:.1} + runtime {:.1}) but its wired-memory limit is {:.1} GB ({:.0}% of {} GB); the cluster needs {:.0} GB in all",
            node.id,
            mem.total_gb,
            mem.weights_gb,
            mem.kv_cache_gb,
            mem.overhead_gb,
            mem.limit_gb,
            100.0 * mem.limit_gb * 1e9 / node.memory_bytes(),
            node.memory_gb,
            need
        ),
        fix: if inp.wired_limit_fraction.is_none() && node.os == Os::Macos {
            format!(
                "add nodes or bigger nodes, use a smaller quantization or shorten the context: it does not fit even with the wired limit raised to {:.0}% of RAM ({})",
                100.0 * RAISED_WIRED_FRACTION_MACOS,
                wired_limit_command(mib(node.usable_bytes(RAISED_WIRED_FRACTION_MACOS)))
            )
        } else {
            "add nodes or bigger nodes, use a smaller quantization, shorten the context, or raise the wired limit (cluster.wired_limit_fraction, i.e. sysctl iogpu.wired_limit_mb)".into()
        },
    }
}

/// A node's wired limit, GB, for a plan that needs `need_gb` on it, and the raised limit in MiB
/// where the plan relies on one: a node's `gpu_memory_limit_gb` (its own, or the scenario's
/// `cluster.gpu_memory_limit_gb`) is taken as written; an explicit `cluster.wired_limit_fraction` is taken as written;
/// otherwise the OS default (the catalog's `wired_fraction`), raised on a Mac to
/// [`RAISED_WIRED_FRACTION_MACOS`] only when the need exceeds the default, as users do.
fn wired_limit_gb(node: &NodeSpec, explicit: Option<f64>, need_gb: f64) -> (f64, Option<u64>) {
    // A limit the user set in GB is the limit, as written.
    if let Some(gb) = node.gpu_memory_limit_gb {
        return (gb, None);
    }
    if let Some(f) = explicit {
        return (node.usable_bytes(f) / 1e9, None);
    }
    let default = node.usable_bytes(node.wired_fraction) / 1e9;
    if need_gb <= default || node.os != Os::Macos || RAISED_WIRED_FRACTION_MACOS <= node.wired_fraction {
        return (default, None);
    }
    let raised = node.usable_bytes(RAISED_WIRED_FRACTION_MACOS);
    (raised / 1e9, Some(mib(raised)))
}

/// Whole MiB in `bytes`, rounded down (the sysctl grants at least what the plan assumed).
fn mib(bytes: f64) -> u64 {
    (bytes / 1_048_576.0).floor() as u64
}

/// Bytes of weights `share` holds on a node (a tied LM head holds no bytes of its own).
fn node_weight_bytes(m: &ModelSpec, quant: &QuantSpec, share: &Share) -> f64 {
    let mut w = 0.0;
    let kv_shard = kv_head_share(m, share.shard);
    for l in share.first_layer..share.end_layer {
        for op in m.quantized_layer_ops(l, quant) {
            let frac = if op.class == OpClass::Expert { share.expert_shard } else { op.weight_share(share.shard, kv_shard) };
            w += op.weight_bytes(op.total_params() as f64) * frac;
        }
    }
    if share.embedding {
        w += m.embedding_params() as f64 * m.embedding_format(quant).bits / 8.0;
    }
    if share.head && !m.tie_embeddings {
        w += m.quantized_head_ops(quant).iter().map(|o| o.weight_bytes(o.total_params() as f64)).sum::<f64>();
    }
    w
}

/// KV-cache bytes one sequence of `context` tokens holds on a node with `share` (sliding-window
/// and chunked layers cap at their window; linear-attention layers hold their fixed recurrent
/// state instead, split by head like a GQA cache).
fn kv_bytes(m: &ModelSpec, share: &Share, options: &EngineOptions, context: u64) -> f64 {
    // A per-head MLA cache is split by head like a GQA cache (by query head); the latent one
    // is replicated.
    let per_head = m.mla_per_head().filter(|_| options.mla_per_head_cache);
    // Each layer's share follows its own KV heads (a full layer with fewer replicates sooner).
    let range = share.first_layer..share.end_layer;
    let (mut cache, mut tokens) = (0.0, 0.0);
    for l in range.clone() {
        let t = m.layer_kv_tokens(l, context) as f64;
        let kv_share = if per_head.is_some() { share.shard } else { kv_head_fraction(m.layer_kv_heads(l), share.shard) };
        cache += per_head.map_or(m.layer_kv_bytes_per_token(l), |x| x.kv_bytes_per_ctx) as f64 * t * kv_share;
        tokens += t;
    }
    // A sparse-attention indexer's keys: whole on every rank (the indexer is replicated).
    let index = m.index_bytes_per_token_layer() as f64 * tokens;
    // A linear-attention layer's recurrent state splits by its own heads, 1/N like its weights
    // (as the kernel reads it: `NodeCost::recurrent_terms`).
    let state = range.map(|l| m.layer_state_bytes(l) as f64).sum::<f64>();
    (cache + index + state * share.shard) * options.cuda.kv_byte_scale()
}

/// The fraction of a GQA cache's KV heads a rank holding `shard` of the query heads keeps:
/// `max(1, kv_heads / tp) / kv_heads`, i.e. `max(shard, 1 / kv_heads)`. vLLM (and SGLang, which
/// shares its layers) splits the KV heads while tp <= kv_heads and replicates them beyond:
/// each rank holds `max(1, total_num_kv_heads // tp_size)` heads (vLLM `QKVParallelLinear`,
/// the rule [`super::split::TensorSplitRule::Vllm`] cites), so TP 4 of a 2-KV-head model keeps
/// one whole KV head per rank, half the cache, not a quarter. exo's split needs tp to divide
/// the KV heads, where this is `shard`; one KV head (MQA, MLA's latent) is replicated.
pub fn kv_head_share(m: &ModelSpec, shard: f64) -> f64 {
    kv_head_fraction(m.kv_heads(), shard)
}
