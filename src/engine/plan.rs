//! The plan: a scenario resolved against the catalog and a profile (memory per node, layer
//! shares, per-chip parameters) and the cost model that times one operation on one node.

use crate::hw::{Backend, FabricSpec, NodeSpec, Os, Topology};
use crate::llm::{ModelSpec, Op, OpClass, Placement, QuantSpec};
use crate::profile::{ChipParams, CommParams, Profile, RuntimeParams};
use crate::sim::Time;

use super::options::{EngineOptions, Parallelism};

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
            PlanError::Uncalibrated { .. } => "run `supernode calibrate` for this chip, or pass --profile with parameters for it".into(),
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
    /// Holds the input embedding.
    pub embedding: bool,
    /// Computes the LM head.
    pub head: bool,
}

/// A scenario resolved against the catalog and a profile: everything needed to build graphs.
#[derive(Clone, Debug)]
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
    /// Per-node shares.
    pub shares: Vec<Share>,
    /// Per-node memory.
    pub memory: Vec<MemoryBreakdown>,
    /// Per node, the dense (non-expert) weights it holds and its dense kernels stream every
    /// token, GB: the working set of [`ChipParams::working_set_factor`].
    pub dense_gb: Vec<f64>,
    /// Jitter coefficient of variation.
    pub jitter_cv: f64,
    /// Cables lost to a fault (unordered node pairs; `(a, n)` is node a's cable to a switch):
    /// messages detour through a peer ([`crate::hw::route_around`]). Empty when planned; the
    /// fault simulation sets it on a copy.
    pub lost_links: Vec<(usize, usize)>,
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
            let chip = inp.profile.chip(&node.chip).ok_or_else(|| PlanError::Uncalibrated {
                chip: node.chip.clone(),
                runtime: runtime.into(),
                profile: inp.profile.meta.name.clone(),
            })?;
            let rt = chip.runtimes.get(runtime).ok_or_else(|| PlanError::Uncalibrated {
                chip: node.chip.clone(),
                runtime: runtime.into(),
                profile: inp.profile.meta.name.clone(),
            })?;
            let mut rt = rt.clone();
            // An engine with a server loop of its own (vllm-mlx) keeps the runtime's kernels and
            // brings its own host costs; a chip without them keeps the runtime's (the envelope
            // says so).
            if let Some(h) = inp.options.kind.host_key().and_then(|k| chip.engines.get(k)) {
                rt.host_per_step_us = h.host_per_step_us;
                rt.host_per_seq_us = h.host_per_seq_us;
            }
            chips.push(chip.clone());
            runtimes.push(rt);
        }
        let layers = inp.model.layers;
        let shares: Vec<Share> = match inp.options.parallelism {
            Parallelism::Tensor => {
                (0..n).map(|_| Share { first_layer: 0, end_layer: layers, shard: 1.0 / n as f64, embedding: true, head: true }).collect()
            }
            Parallelism::None => vec![Share { first_layer: 0, end_layer: layers, shard: 1.0, embedding: true, head: true }],
            Parallelism::Pipeline => {
                if n as u64 > layers {
                    return Err(PlanError::TooManyStages { nodes: n, layers });
                }
                // Layer ranges in proportion to each node's memory (exo: available RAM;
                // llama.cpp `-sm layer`: device memory). Cumulative rounding keeps the total exact.
                let total: f64 = inp.nodes.iter().map(|x| x.memory_gb).sum();
                let mut cum = 0.0;
                let mut prev = 0u64;
                let mut out = Vec::with_capacity(n);
                for (i, node) in inp.nodes.iter().enumerate() {
                    cum += node.memory_gb;
                    let mut end = if i + 1 == n { layers } else { ((layers as f64) * cum / total).round() as u64 };
                    end = end.max(prev + 1).min(layers - (n - 1 - i) as u64);
                    out.push(Share { first_layer: prev, end_layer: end, shard: 1.0, embedding: i == 0, head: i + 1 == n });
                    prev = end;
                }
                out
            }
        };
        let mut memory = Vec::with_capacity(n);
        let mut dense_gb = Vec::with_capacity(n);
        let overhead = inp.profile.misc.runtime_overhead_gb;
        for (i, (node, share)) in inp.nodes.iter().zip(&shares).enumerate() {
            let m = inp.model;
            let (w, dense) = node_weight_bytes(m, inp.quant, share);
            dense_gb.push(dense / 1e9);
            let kv = kv_bytes(m, share, inp.options, inp.context);
            let wired = inp.wired_limit_fraction.unwrap_or(node.wired_fraction);
            let limit = node.usable_bytes(wired) / 1e9;
            let total = w / 1e9 + kv / 1e9 + overhead;
            memory.push(MemoryBreakdown {
                weights_gb: w / 1e9,
                kv_cache_gb: kv / 1e9,
                overhead_gb: overhead,
                total_gb: total,
                limit_gb: limit,
            });
            let _ = i;
        }
        if let Some((i, mem)) = memory.iter().enumerate().find(|(_, m)| m.total_gb > m.limit_gb) {
            let need: f64 = memory.iter().map(|m| m.total_gb).sum();
            return Err(PlanError::DoesNotFit {
                model: inp.model.id.clone(),
                quant: inp.quant.id.clone(),
                detail: format!(
                    "node {i} ({}) needs {:.1} GB (weights {:.1} + KV cache {:.1} + runtime {:.1}) but its wired-memory limit is {:.1} GB ({:.0}% of {} GB); the cluster needs {:.0} GB in all",
                    inp.nodes[i].id,
                    mem.total_gb,
                    mem.weights_gb,
                    mem.kv_cache_gb,
                    mem.overhead_gb,
                    mem.limit_gb,
                    100.0 * mem.limit_gb / inp.nodes[i].memory_gb,
                    inp.nodes[i].memory_gb,
                    need
                ),
                fix: "add nodes or bigger nodes, use a smaller quantization, shorten the context, or raise the wired limit (cluster.wired_limit_fraction, i.e. sysctl iogpu.wired_limit_mb)".into(),
            });
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
            shares,
            memory,
            dense_gb,
            jitter_cv: inp.profile.misc.jitter_cv,
            lost_links: Vec::new(),
        })
    }

    /// The operations of layer `l` with their weights' stored formats.
    pub fn layer_ops(&self, l: u64) -> Vec<Op> {
        self.model.quantized_layer_ops(l, &self.quant)
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

    /// Cost of one GPU<->CPU crossing on a node, ns.
    pub fn sync_ns(&self, node: usize) -> Time {
        let us =
            if self.nodes[node].os != Os::Macos || self.fast_sync() { self.comm.gpu_sync_fast_us } else { self.comm.gpu_sync_default_us };
        us_to_ns(us)
    }

    /// KV-cache bytes one sequence of `context` tokens holds on `node`.
    pub fn kv_bytes(&self, node: usize, context: u64) -> f64 {
        kv_bytes(&self.model, &self.shares[node], &self.options, context)
    }

    /// Bytes of KV cache `node` can hold beside its weights and runtime overhead, under its
    /// wired limit.
    pub fn kv_capacity_bytes(&self, node: usize) -> f64 {
        let m = &self.memory[node];
        ((m.limit_gb - m.weights_gb - m.overhead_gb) * 1e9).max(0.0)
    }

    /// The runtime's host work on `node` after a forward in which `sequences` sequences sample,
    /// ns: `host_per_step_us + sequences x host_per_seq_us` (a `generate` step is one sequence).
    pub fn host_ns(&self, node: usize, sequences: u64) -> Time {
        let rt = &self.runtimes[node];
        us_to_ns(rt.host_per_step_us + sequences as f64 * rt.host_per_seq_us)
    }

    /// Kernel-launch part of [`Self::op_ns`], ns: what a batch pays once per kernel rather
    /// than once per sequence.
    pub fn launch_ns(&self, node: usize, op: &Op, tokens: u64) -> f64 {
        let per_head = op.mla_per_head.filter(|_| self.options.mla_per_head_cache);
        let expanded_mla = tokens > 1 && self.options.mla_prefill_expanded && per_head.is_none();
        let extra_kernels = if expanded_mla && op.mla_expanded.is_some() { 2 } else { 0 };
        (op.kernels + extra_kernels) as f64 * self.runtimes[node].kernel_launch_us * 1e3
    }

    /// Time for one operation on one node, ns (before jitter).
    pub fn op_ns(&self, node: usize, op: &Op, tokens: u64, context: u64) -> f64 {
        let spec = &self.nodes[node];
        let rt = &self.runtimes[node];
        let bw = spec.mem_bw() * rt.bw_scale;
        let peak = spec.flops() * rt.compute_scale;
        let c = self.op_terms(node, op, tokens, context);
        let launch = c.kernels as f64 * rt.kernel_launch_us * 1e3;
        let secs = if c.bw_eff > 0.0 {
            let side = if c.side_bytes > 0.0 { c.side_bytes / (bw * c.side_bw_eff) } else { 0.0 };
            (c.bytes / (bw * c.bw_eff)).max(c.flops / (peak * c.compute_eff)) + side
        } else {
            // Elementwise kernels: plain array traffic at the full bandwidth.
            c.bytes / bw
        };
        secs * 1e9 + launch
    }

    /// Bytes and FLOPs of one operation on one node (the counts [`Plan::op_ns`] times): what the
    /// power model charges energy for.
    pub fn op_work(&self, node: usize, op: &Op, tokens: u64, context: u64) -> Work {
        let c = self.op_terms(node, op, tokens, context);
        let scale = self.runtimes[node].compute_scale;
        let issued_flops = if c.flops > 0.0 { c.flops / (c.compute_eff * scale).max(1e-6) } else { 0.0 };
        Work { bytes: c.bytes + c.side_bytes, flops: c.flops, issued_flops }
    }

    /// The byte and FLOP counts of one operation on one node and the efficiencies they run at:
    /// the one place [`Plan::op_ns`] and [`Plan::op_work`] read an operation's cost from.
    fn op_terms(&self, node: usize, op: &Op, tokens: u64, context: u64) -> OpTerms {
        let chip = &self.chips[node];
        let rt = &self.runtimes[node];
        let shard = if op.placement == Placement::Sharded { self.shares[node].shard } else { 1.0 };
        let t = tokens as f64;
        let per_head = op.mla_per_head.filter(|_| self.options.mla_per_head_cache);
        // A per-head cache is already expanded: the latent form's prefill choice does not apply.
        let expanded_mla = tokens > 1 && self.options.mla_prefill_expanded && per_head.is_none();
        // The expanded MLA form adds two kernels: the rope-score matmul and its masking.
        let extra_kernels = if expanded_mla && op.mla_expanded.is_some() { 2 } else { 0 };
        let base = OpTerms { kernels: op.kernels + extra_kernels, ..OpTerms::default() };
        // Dense weight streams slow as the node's dense working set grows
        // (ChipParams::working_set_factor).
        let ws = chip.working_set_factor(self.dense_gb[node]);
        match op.class {
            OpClass::Dense => {
                // The expanded MLA form runs the latent up-projections over the whole cache.
                let rows = if expanded_mla && op.expands_latent { (context + tokens) as f64 } else { t };
                OpTerms {
                    bytes: op.weight_bytes(op.params as f64) * shard,
                    bw_eff: chip.bw_eff_dense * rt.kernel_bw_mult(op.format.kernel) * ws,
                    flops: 2.0 * op.params as f64 * shard * rows,
                    compute_eff: chip.compute_eff_dense,
                    ..base
                }
            }
            OpClass::Expert => OpTerms {
                bytes: op.weight_bytes(op.params as f64) * op.experts_touched(tokens) * shard,
                bw_eff: chip.bw_eff_expert * rt.kernel_bw_mult(op.format.kernel),
                flops: 2.0 * op.active_params() as f64 * shard * t,
                compute_eff: chip.compute_eff_expert,
                ..base
            },
            OpClass::Attention => {
                let kv_share = if op.kv_sharded || per_head.is_some() { shard } else { 1.0 };
                let kv_tokens = op.effective_context(context + tokens) as f64;
                let mean_ctx = op.effective_context(context + tokens.div_ceil(2)) as f64;
                let (flops_per_ctx, score_bytes_per_ctx, kv_per_ctx) = match (per_head, op.mla_expanded) {
                    (Some(p), _) => (p.attn_flops_per_ctx, 0, p.kv_bytes_per_ctx),
                    (None, Some(x)) if expanded_mla => (x.attn_flops_per_ctx, x.score_bytes_per_ctx, op.kv_bytes_per_ctx),
                    _ => (op.attn_flops_per_ctx, 0, op.kv_bytes_per_ctx),
                };
                OpTerms {
                    bytes: kv_per_ctx as f64 * kv_tokens * kv_share,
                    bw_eff: chip.bw_eff_attention,
                    flops: flops_per_ctx as f64 * shard * t * mean_ctx,
                    compute_eff: chip.compute_eff_attention,
                    // The rope-score mask streams through memory in its own kernels, before the
                    // attention kernel: plain array traffic, at the dense bandwidth efficiency.
                    side_bytes: score_bytes_per_ctx as f64 * shard * t * mean_ctx,
                    side_bw_eff: chip.bw_eff_dense,
                    ..base
                }
            }
            OpClass::Elementwise => OpTerms { bytes: op.kernels as f64 * t * self.model.hidden as f64 * 4.0, ..base },
            OpClass::AllSum => base,
        }
    }
}

/// Bytes of weights `share` holds on a node, and of those the dense (non-expert) bytes its dense
/// kernels stream every token (a tied LM head streams the embedding's bytes without holding more).
fn node_weight_bytes(m: &ModelSpec, quant: &QuantSpec, share: &Share) -> (f64, f64) {
    let (mut w, mut dense) = (0.0, 0.0);
    for l in share.first_layer..share.end_layer {
        for op in m.quantized_layer_ops(l, quant) {
            let frac = if op.placement == Placement::Sharded { share.shard } else { 1.0 };
            let b = op.weight_bytes(op.total_params() as f64) * frac;
            w += b;
            if op.class == OpClass::Dense {
                dense += b;
            }
        }
    }
    if share.embedding {
        w += m.embedding_params() as f64 * m.embedding_format(quant).bits / 8.0;
    }
    if share.head {
        let ops = m.quantized_head_ops(quant);
        let bytes = |dense_only: bool| {
            ops.iter().filter(|o| !dense_only || o.class == OpClass::Dense).map(|o| o.weight_bytes(o.total_params() as f64)).sum::<f64>()
        };
        dense += bytes(true);
        if !m.tie_embeddings {
            w += bytes(false);
        }
    }
    (w, dense)
}

/// KV-cache bytes one sequence of `context` tokens holds on a node with `share` (sliding-window
/// layers cap at their window).
fn kv_bytes(m: &ModelSpec, share: &Share, options: &EngineOptions, context: u64) -> f64 {
    // A per-head MLA cache is split by head like a GQA cache; the latent one is replicated.
    let per_head = m.mla_per_head().filter(|_| options.mla_per_head_cache);
    let kv_share = if m.kv_heads() > 1 || per_head.is_some() { share.shard } else { 1.0 };
    let kv_per_token_layer = per_head.map_or(m.kv_bytes_per_token_layer(), |x| x.kv_bytes_per_ctx);
    (share.first_layer..share.end_layer)
        .map(|l| (kv_per_token_layer * m.layer_window(l).map_or(context, |win| win.min(context))) as f64)
        .sum::<f64>()
        * kv_share
}

/// The work one operation does on one node: bytes streamed from DRAM and floating-point
/// operations. What the power model charges energy for; the same byte and FLOP counts
/// [`Plan::op_ns`] divides by the achieved bandwidth and compute rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Bytes read from (or written to) DRAM.
    pub bytes: f64,
    /// Floating-point operations.
    pub flops: f64,
    /// The ALU work issued for them: FLOPs over the kernel's compute efficiency (a kernel at 38%
    /// of peak keeps the ALUs issuing dequantisation, index arithmetic and masked lanes for the
    /// rest), i.e. peak FLOP/s times the time the op would take if compute-bound.
    pub issued_flops: f64,
}

impl Work {
    /// This work done `k` times.
    pub fn scaled(self, k: f64) -> Work {
        Work { bytes: self.bytes * k, flops: self.flops * k, issued_flops: self.issued_flops * k }
    }
}

impl std::ops::AddAssign for Work {
    fn add_assign(&mut self, o: Work) {
        self.bytes += o.bytes;
        self.flops += o.flops;
        self.issued_flops += o.issued_flops;
    }
}

/// Microseconds (a profile value) to integer nanoseconds, never negative.
pub(super) fn us_to_ns(us: f64) -> Time {
    (us * 1e3).round().max(0.0) as Time
}

/// One operation's cost terms on one node: bytes at a bandwidth efficiency and FLOPs at a
/// compute efficiency (the roofline: the slower wins), plus traffic in side kernels that runs
/// before it. `bw_eff == 0` marks plain array traffic at full bandwidth (elementwise kernels).
#[derive(Clone, Copy, Debug, Default)]
struct OpTerms {
    kernels: u32,
    bytes: f64,
    bw_eff: f64,
    flops: f64,
    compute_eff: f64,
    side_bytes: f64,
    side_bw_eff: f64,
}
