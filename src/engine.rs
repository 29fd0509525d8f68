//! How each runtime lowers a model onto a cluster: which bytes each node reads, which
//! collectives run over which links, which hops a token takes. The output is a task graph per
//! forward step for the discrete-event core; this module never runs the event queue itself.

use crate::hw::{FabricSpec, NodeSpec, Topology, Transport};
use crate::llm::{ModelSpec, Op, OpClass, Placement, QuantSpec};
use crate::profile::{ChipParams, CommParams, Profile, RuntimeParams};
use crate::sim::{ResourceId, ResourceKind, TaskGraph, TaskId, Time};

/// The inference runtime.
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
}

impl EngineKind {
    /// Scenario id.
    pub fn id(self) -> &'static str {
        match self {
            Self::Exo => "exo",
            Self::MlxLm => "mlx-lm",
            Self::LlamaCpp => "llama-cpp",
            Self::LlamaCppRpc => "llama-cpp-rpc",
        }
    }

    /// Runtime family for calibration parameters.
    pub fn runtime(self) -> &'static str {
        match self {
            Self::Exo | Self::MlxLm => "mlx",
            Self::LlamaCpp | Self::LlamaCppRpc => "llama-cpp",
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
    /// One node.
    None,
}

impl Parallelism {
    /// Scenario id.
    pub fn id(self) -> &'static str {
        match self {
            Self::Tensor => "tensor",
            Self::Pipeline => "pipeline",
            Self::None => "none",
        }
    }
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
}

impl EngineOptions {
    /// What shipped in December 2025 (macOS 26.2, exo 1.0, llama.cpp defaults).
    pub fn december_2025(kind: EngineKind, parallelism: Parallelism) -> Self {
        EngineOptions {
            kind,
            parallelism,
            jaccl_frame_bytes: 4096,
            allreduce: AllReduceAlgo::FullyConnected,
            fast_sync: None,
            prefill_chunk: if kind.runtime() == "mlx" { 2048 } else { 512 },
            activation_bytes: 2,
            prefill_logits_all: false,
            prefill_last_token_alone: kind.runtime() == "mlx",
            mla_prefill_expanded: kind.runtime() == "mlx",
            mla_per_head_cache: false,
        }
    }
}

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
    /// Jitter coefficient of variation.
    pub jitter_cv: f64,
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
        let runtime = inp.options.kind.runtime();
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
            chips.push(chip.clone());
            runtimes.push(rt.clone());
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
        let overhead = inp.profile.misc.runtime_overhead_gb;
        for (i, (node, share)) in inp.nodes.iter().zip(&shares).enumerate() {
            let m = inp.model;
            let mut w = 0.0;
            for l in share.first_layer..share.end_layer {
                for op in m.layer_ops(l) {
                    let frac = if op.placement == Placement::Sharded { share.shard } else { 1.0 };
                    w += inp.quant.bytes(op.class, op.total_params()) * frac;
                }
            }
            if share.embedding {
                w += inp.quant.bytes(OpClass::Dense, m.embedding_params());
            }
            if share.head && !m.tie_embeddings {
                w += inp.quant.bytes(OpClass::Dense, m.hidden * m.vocab);
            }
            // A per-head MLA cache is split by head like a GQA cache; the latent one is replicated.
            let per_head = m.mla_per_head().filter(|_| inp.options.mla_per_head_cache);
            let kv_share = if m.kv_heads() > 1 || per_head.is_some() { share.shard } else { 1.0 };
            let kv_per_token_layer = per_head.map_or(m.kv_bytes_per_token_layer(), |x| x.kv_bytes_per_ctx);
            let kv: f64 = (share.first_layer..share.end_layer)
                .map(|l| (kv_per_token_layer * m.layer_window(l).map_or(inp.context, |win| win.min(inp.context))) as f64)
                .sum::<f64>()
                * kv_share;
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
            jitter_cv: inp.profile.misc.jitter_cv,
        })
    }

    /// A plan for a scenario whose KV cache must hold `context` tokens.
    pub fn for_scenario(s: &crate::scenario::Scenario, context: u64, profile: &Profile) -> Result<Plan, PlanError> {
        Plan::new(PlanInput {
            nodes: &s.nodes,
            fabric: &s.fabric,
            topology: s.topology,
            model: &s.model,
            quant: &s.quant,
            options: &s.engine,
            wired_limit_fraction: s.wired_limit_fraction,
            context,
            profile,
        })
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the GPU<->CPU crossing uses the fast path.
    pub fn fast_sync(&self) -> bool {
        self.options.fast_sync.unwrap_or(self.fabric.backend == "jaccl" && self.n() > 1)
    }

    /// Cost of one GPU<->CPU crossing on a node, ns.
    pub fn sync_ns(&self, node: usize) -> Time {
        let us =
            if self.nodes[node].os != "macos" || self.fast_sync() { self.comm.gpu_sync_fast_us } else { self.comm.gpu_sync_default_us };
        us_to_ns(us)
    }

    /// Time for one operation on one node, ns (before jitter).
    pub fn op_ns(&self, node: usize, op: &Op, tokens: u64, context: u64) -> f64 {
        let spec = &self.nodes[node];
        let chip = &self.chips[node];
        let rt = &self.runtimes[node];
        let shard = if op.placement == Placement::Sharded { self.shares[node].shard } else { 1.0 };
        let bw = spec.mem_bw() * rt.bw_scale;
        let peak = spec.flops() * rt.compute_scale;
        let t = tokens as f64;
        let per_head = op.mla_per_head.filter(|_| self.options.mla_per_head_cache);
        // A per-head cache is already expanded: the latent form's prefill choice does not apply.
        let expanded_mla = tokens > 1 && self.options.mla_prefill_expanded && per_head.is_none();
        // The expanded MLA form adds two kernels: the rope-score matmul and its masking.
        let extra_kernels = if expanded_mla && op.mla_expanded.is_some() { 2 } else { 0 };
        let launch = (op.kernels + extra_kernels) as f64 * rt.kernel_launch_us * 1e3;
        let secs = match op.class {
            OpClass::Dense => {
                let bytes = self.quant.bytes(OpClass::Dense, op.params) * shard;
                // The expanded MLA form runs the latent up-projections over the whole cache.
                let rows = if expanded_mla && op.expands_latent { (context + tokens) as f64 } else { t };
                let flops = 2.0 * op.params as f64 * shard * rows;
                (bytes / (bw * chip.bw_eff_dense)).max(flops / (peak * chip.compute_eff_dense))
            }
            OpClass::Expert => {
                let bytes = self.quant.bytes(OpClass::Expert, op.params) * op.experts_touched(tokens) * shard;
                let flops = 2.0 * op.active_params() as f64 * shard * t;
                (bytes / (bw * chip.bw_eff_expert)).max(flops / (peak * chip.compute_eff_expert))
            }
            OpClass::Attention => {
                let kv_share = if op.kv_sharded || per_head.is_some() { shard } else { 1.0 };
                let kv_tokens = op.effective_context(context + tokens) as f64;
                let mean_ctx = op.effective_context(context + tokens.div_ceil(2)) as f64;
                let (flops_per_ctx, score_bytes_per_ctx, kv_per_ctx) = match (per_head, op.mla_expanded) {
                    (Some(p), _) => (p.attn_flops_per_ctx, 0, p.kv_bytes_per_ctx),
                    (None, Some(x)) if expanded_mla => (x.attn_flops_per_ctx, x.score_bytes_per_ctx, op.kv_bytes_per_ctx),
                    _ => (op.attn_flops_per_ctx, 0, op.kv_bytes_per_ctx),
                };
                let bytes = kv_per_ctx as f64 * kv_tokens * kv_share;
                let flops = flops_per_ctx as f64 * shard * t * mean_ctx;
                // The rope-score mask streams through memory in its own kernels, before the
                // attention kernel: plain array traffic, at the dense bandwidth efficiency.
                let scores = score_bytes_per_ctx as f64 * shard * t * mean_ctx / (bw * chip.bw_eff_dense);
                (bytes / (bw * chip.bw_eff_attention)).max(flops / (peak * chip.compute_eff_attention)) + scores
            }
            OpClass::Elementwise => op.kernels as f64 * t * self.model.hidden as f64 * 4.0 / bw,
            OpClass::AllSum => 0.0,
        };
        secs * 1e9 + launch
    }
}

fn us_to_ns(us: f64) -> Time {
    (us * 1e3).round().max(0.0) as Time
}

/// A run of operations on one node's GPU between two communication points.
#[derive(Clone, Debug)]
pub struct Segment {
    /// The node.
    pub node: usize,
    /// The operations.
    pub ops: Vec<Op>,
    /// The LM head runs over every token of the step (MLX computes logits for the whole chunk).
    pub logits_all_tokens: bool,
}

/// A lowered forward step: the task graph plus which GPU tasks carry which segment, so that the
/// same graph can be re-timed for every decode step as the context grows.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The graph.
    pub graph: TaskGraph,
    /// `(task, segment index)` for every GPU compute task.
    pub gpu_tasks: Vec<(TaskId, usize)>,
    /// The segments.
    pub segments: Vec<Segment>,
    /// Tokens per step this graph was built for (payload sizes depend on it).
    pub tokens: u64,
    /// Bytes the engine put on links (for conservation checks).
    pub bytes_sent: u64,
    /// Per segment: the context-independent part of its time (ns) and the ops whose time grows
    /// with the context. Filled on the first [`Lowered::retime`].
    seg_parts: Vec<(f64, Vec<Op>)>,
}

impl Lowered {
    /// Sets GPU task durations for a step of `tokens` tokens at `context` tokens of history.
    pub fn retime(&mut self, plan: &Plan, context: u64) {
        if self.seg_parts.is_empty() {
            // Only some ops depend on the context (Op::depends_on_context): sum the rest once.
            self.seg_parts = self
                .segments
                .iter()
                .map(|s| {
                    let mut fixed = 0.0;
                    let mut by_context = Vec::new();
                    for op in &s.ops {
                        if op.depends_on_context() {
                            by_context.push(op.clone());
                        } else {
                            let toks = if op.name == "lm_head" && !s.logits_all_tokens { 1 } else { self.tokens };
                            fixed += plan.op_ns(s.node, op, toks, 0);
                        }
                    }
                    (fixed, by_context)
                })
                .collect();
        }
        for &(task, seg) in &self.gpu_tasks {
            let (fixed, by_context) = &self.seg_parts[seg];
            let node = self.segments[seg].node;
            let ns = by_context.iter().fold(*fixed, |acc, op| acc + plan.op_ns(node, op, self.tokens, context));
            // Clamp to ~11 days so sums of durations can never overflow.
            self.graph.tasks[task.0 as usize].duration = ns.round().clamp(0.0, 1e15) as Time;
        }
    }
}

/// Resources of the cluster in a graph.
struct Net {
    gpu: Vec<ResourceId>,
    cpu: Vec<ResourceId>,
    /// `links[a * n + b]`: the a->b direction (mesh, ring neighbours); for a switch the uplink
    /// of `a` is stored at `links[a * n + a]`.
    links: Vec<Option<ResourceId>>,
    n: usize,
    topology: Topology,
}

impl Net {
    fn new(g: &mut TaskGraph, plan: &Plan) -> Net {
        let n = plan.n();
        let gpu = (0..n).map(|i| g.add_resource(format!("node{i}.gpu"), ResourceKind::Gpu, i as u32)).collect();
        let cpu = (0..n).map(|i| g.add_resource(format!("node{i}.cpu"), ResourceKind::Cpu, i as u32)).collect();
        let mut links = vec![None; n * n];
        match plan.topology {
            Topology::FullMesh => {
                for a in 0..n {
                    for b in 0..n {
                        if a != b {
                            links[a * n + b] = Some(g.add_resource(format!("link {a}->{b}"), ResourceKind::Link, a as u32));
                        }
                    }
                }
            }
            Topology::Ring => {
                for a in 0..n {
                    for b in [(a + 1) % n, (a + n - 1) % n] {
                        if a != b && links[a * n + b].is_none() {
                            links[a * n + b] = Some(g.add_resource(format!("link {a}->{b}"), ResourceKind::Link, a as u32));
                        }
                    }
                }
            }
            Topology::Switch => {
                for a in 0..n {
                    links[a * n + a] = Some(g.add_resource(format!("uplink {a}"), ResourceKind::Link, a as u32));
                }
            }
            Topology::None => {}
        }
        Net { gpu, cpu, links, n, topology: plan.topology }
    }

    /// Link resources a message from `a` to `b` crosses, in order.
    fn route(&self, a: usize, b: usize) -> Vec<ResourceId> {
        let n = self.n;
        match self.topology {
            Topology::FullMesh => vec![self.links[a * n + b].expect("mesh link")],
            // Switched fabrics: the sender's uplink carries the message (incast at the
            // receiver is not modelled).
            Topology::Switch => vec![self.links[a * n + a].expect("uplink")],
            Topology::Ring => {
                let fwd = (b + n - a) % n;
                let step = if fwd <= n - fwd { 1 } else { n - 1 };
                let mut out = Vec::new();
                let mut cur = a;
                while cur != b {
                    let next = (cur + step) % n;
                    out.push(self.links[cur * n + next].expect("ring link"));
                    cur = next;
                }
                out
            }
            Topology::None => Vec::new(),
        }
    }
}

/// Builds graph pieces for one step.
struct Builder<'a> {
    plan: &'a Plan,
    g: TaskGraph,
    net: Net,
    gpu_tasks: Vec<(TaskId, usize)>,
    segments: Vec<Segment>,
    bytes_sent: u64,
    /// Collectives sit between kernels (a forward pass) rather than alone (a microbenchmark).
    in_context: bool,
}

impl<'a> Builder<'a> {
    fn new(plan: &'a Plan) -> Self {
        let mut g = TaskGraph::new();
        let net = Net::new(&mut g, plan);
        Builder { plan, g, net, gpu_tasks: Vec::new(), segments: Vec::new(), bytes_sent: 0, in_context: true }
    }

    fn gpu(&mut self, node: usize, ops: Vec<Op>, logits_all_tokens: bool, deps: &[TaskId]) -> TaskId {
        let seg = self.segments.len();
        self.segments.push(Segment { node, ops, logits_all_tokens });
        let t = self.g.compute(self.net.gpu[node], 0, "compute", deps);
        self.gpu_tasks.push((t, seg));
        t
    }

    fn cpu(&mut self, node: usize, ns: Time, label: &'static str, deps: &[TaskId]) -> TaskId {
        self.g.compute(self.net.cpu[node], ns, label, deps)
    }

    /// Duration of one message of `bytes` on one hop.
    fn hop_ns(&self, bytes: u64) -> Time {
        let f = &self.plan.fabric;
        let c = &self.plan.comm;
        let wire = bytes as f64 / f.bytes_per_ns();
        let ns = match f.transport {
            Transport::Rdma => {
                let frame = if f.backend == "jaccl" { self.plan.options.jaccl_frame_bytes } else { 1 << 20 };
                let frames = bytes.div_ceil(frame).max(1);
                let rounds = frames.div_ceil(c.jaccl_window.max(1) as u64);
                rounds as f64 * (f.latency_ns() + c.jaccl_round_us * 1e3) + wire
            }
            Transport::Tcp => f.latency_ns() + c.tcp_message_us * 1e3 + wire,
            Transport::None => 0.0,
        };
        ns.round() as Time
    }

    /// A message from `a` to `b`; returns the task at which it has arrived.
    fn send(&mut self, a: usize, b: usize, bytes: u64, deps: &[TaskId]) -> TaskId {
        let route = self.net.route(a, b);
        let d = self.hop_ns(bytes);
        let mut last = None;
        // Multi-hop routes (rings) are store-and-forward at message level.
        for link in route {
            let dep: Vec<TaskId> = match last {
                Some(t) => vec![t],
                None => deps.to_vec(),
            };
            last = Some(self.g.transfer(link, d, bytes, &dep));
            self.bytes_sent += bytes;
        }
        last.unwrap_or_else(|| self.g.join(deps))
    }

    // Ranks are indices into several per-rank arrays at once; index loops read best here.
    #[allow(clippy::needless_range_loop)]
    /// An all_sum of `bytes` per rank across all nodes. `ready[i]` is when rank i's GPU has its
    /// input; returns when each rank's GPU has the sum.
    fn all_sum(&mut self, ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let n = self.net.n;
        if n == 1 {
            return ready.to_vec();
        }
        let c = self.plan.comm.clone();
        let context_ns = if self.in_context { us_to_ns(c.collective_in_context_us) } else { 0 };
        let synced: Vec<TaskId> = (0..n).map(|i| self.cpu(i, self.plan.sync_ns(i) + context_ns, "gpu->cpu", &[ready[i]])).collect();
        let algo = if self.plan.fabric.backend != "jaccl" || self.plan.topology == Topology::Ring {
            AllReduceAlgo::Ring
        } else if self.plan.options.allreduce == AllReduceAlgo::ReduceScatterAllGather && bytes <= 32 * 1024 {
            AllReduceAlgo::FullyConnected
        } else {
            self.plan.options.allreduce
        };
        let reduce_ns = |b: u64| (b as f64 / c.cpu_reduce_gbs).round() as Time;
        let peer_ns = us_to_ns(c.jaccl_peer_us);
        let reduced: Vec<TaskId> = match algo {
            AllReduceAlgo::FullyConnected => {
                let arrivals = self.exchange(&synced, bytes, peer_ns);
                (0..n).map(|i| self.cpu(i, reduce_ns(bytes * (n as u64 - 1)), "reduce", &arrivals[i])).collect()
            }
            AllReduceAlgo::ReduceScatterAllGather => {
                let chunk = bytes.div_ceil(n as u64);
                let arrivals = self.exchange(&synced, chunk, peer_ns);
                let rs: Vec<TaskId> = (0..n).map(|i| self.cpu(i, reduce_ns(chunk * (n as u64 - 1)), "reduce", &arrivals[i])).collect();
                let arrivals = self.exchange(&rs, chunk, peer_ns);
                (0..n).map(|i| self.g.join(&arrivals[i])).collect()
            }
            AllReduceAlgo::Ring => {
                let chunk = bytes.div_ceil(n as u64);
                let mut have: Vec<TaskId> = synced.clone();
                // A rank's sends leave in order on its link (one socket / queue pair).
                let mut last_send: Vec<Option<TaskId>> = vec![None; n];
                for step in 0..2 * (n - 1) {
                    let mut next = have.clone();
                    for i in 0..n {
                        let j = (i + 1) % n;
                        let deps: Vec<TaskId> = std::iter::once(have[i]).chain(last_send[i]).collect();
                        let x = self.send(i, j, chunk, &deps);
                        last_send[i] = Some(x);
                        next[j] =
                            if step < n - 1 { self.cpu(j, reduce_ns(chunk), "reduce", &[x, have[j]]) } else { self.g.join(&[x, have[j]]) };
                    }
                    have = next;
                }
                have
            }
        };
        (0..n).map(|i| self.g.compute(self.net.gpu[i], self.plan.sync_ns(i), "cpu->gpu", &[reduced[i]])).collect()
    }

    /// Every rank sends `bytes` to every peer once `ready[rank]` is done; posts run one after
    /// another on the sender's CPU. Returns, per rank, what it must wait for before reducing:
    /// the arrivals from its peers and its own last post (the same thread posts, then reduces).
    fn exchange(&mut self, ready: &[TaskId], bytes: u64, post_ns: Time) -> Vec<Vec<TaskId>> {
        let n = self.net.n;
        let mut arrivals: Vec<Vec<TaskId>> = vec![Vec::new(); n];
        let mut last_post = Vec::with_capacity(n);
        for (i, &r) in ready.iter().enumerate() {
            let mut posted = r;
            for k in 1..n {
                let j = (i + k) % n;
                posted = self.cpu(i, post_ns, "post", &[posted]);
                arrivals[j].push(self.send(i, j, bytes, &[posted]));
            }
            last_post.push(posted);
        }
        for (a, p) in arrivals.iter_mut().zip(last_post) {
            a.push(p);
        }
        arrivals
    }

    /// An all_gather of `bytes` per rank (ring, N-1 steps).
    fn all_gather(&mut self, ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let n = self.net.n;
        if n == 1 {
            return ready.to_vec();
        }
        let synced: Vec<TaskId> = (0..n).map(|i| self.cpu(i, self.plan.sync_ns(i), "gpu->cpu", &[ready[i]])).collect();
        let mut have = synced;
        let mut last_send: Vec<Option<TaskId>> = vec![None; n];
        for _ in 0..n - 1 {
            let mut next = have.clone();
            for i in 0..n {
                let j = (i + 1) % n;
                let deps: Vec<TaskId> = std::iter::once(have[i]).chain(last_send[i]).collect();
                let x = self.send(i, j, bytes, &deps);
                last_send[i] = Some(x);
                next[j] = self.g.join(&[x, have[j]]);
            }
            have = next;
        }
        (0..n).map(|i| self.g.compute(self.net.gpu[i], self.plan.sync_ns(i), "cpu->gpu", &[have[i]])).collect()
    }

    fn finish(self, tokens: u64) -> Lowered {
        Lowered {
            graph: self.g,
            gpu_tasks: self.gpu_tasks,
            segments: self.segments,
            tokens,
            bytes_sent: self.bytes_sent,
            seg_parts: Vec::new(),
        }
    }
}

/// Lowers one forward step of `tokens` tokens (1 for decode, a chunk for prefill) onto the
/// cluster. Durations of GPU tasks are filled by [`Lowered::retime`].
pub fn lower_step(plan: &Plan, tokens: u64) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    let model = &plan.model;
    let logits_all = plan.options.prefill_logits_all;
    let act_bytes = tokens * model.hidden * plan.options.activation_bytes;
    let host_ns = |i: usize| us_to_ns(plan.runtimes[i].host_per_step_us);
    match plan.options.parallelism {
        Parallelism::None | Parallelism::Tensor => {
            // Segments split at the all_sum points; one GPU task per node per segment.
            let mut prev: Vec<Option<TaskId>> = vec![None; n];
            // Ops after a layer's last all_sum run in the same GPU task as the next layer's
            // first ops (or the head): one task per node per all_sum interval.
            let mut seg_ops: Vec<Op> = Vec::new();
            for l in 0..model.layers {
                for op in model.layer_ops(l) {
                    if op.class == OpClass::AllSum {
                        let ready: Vec<TaskId> = (0..n)
                            .map(|i| {
                                let deps: Vec<TaskId> = prev[i].into_iter().collect();
                                b.gpu(i, seg_ops.clone(), logits_all, &deps)
                            })
                            .collect();
                        seg_ops.clear();
                        let done = b.all_sum(&ready, act_bytes);
                        prev = done.into_iter().map(Some).collect();
                    } else {
                        seg_ops.push(op);
                    }
                }
            }
            seg_ops.extend(model.head_ops());
            for (i, p) in prev.iter_mut().enumerate() {
                let deps: Vec<TaskId> = p.iter().copied().collect();
                let head = b.gpu(i, seg_ops.clone(), logits_all, &deps);
                *p = Some(b.cpu(i, host_ns(i), "host", &[head]));
            }
        }
        Parallelism::Pipeline if plan.options.kind == EngineKind::LlamaCppRpc => lower_rpc(&mut b, tokens),
        Parallelism::Pipeline => {
            // exo pipeline: stage r computes its layers, hands the hidden state to r+1; the last
            // stage's output is all-gathered so every rank has it.
            let mut prev: Option<TaskId> = None;
            let mut outputs = Vec::with_capacity(n);
            for i in 0..n {
                let share = plan.shares[i].clone();
                let mut ops: Vec<Op> =
                    (share.first_layer..share.end_layer).flat_map(|l| model.layer_ops(l)).filter(|o| o.class != OpClass::AllSum).collect();
                if share.head {
                    ops.extend(model.head_ops());
                }
                let deps: Vec<TaskId> = prev.into_iter().collect();
                let done = b.gpu(i, ops, logits_all, &deps);
                outputs.push(done);
                if i + 1 < n {
                    let s = b.cpu(i, plan.sync_ns(i), "gpu->cpu", &[done]);
                    let x = b.send(i, i + 1, act_bytes, &[s]);
                    prev = Some(b.g.compute(b.net.gpu[i + 1], plan.sync_ns(i + 1), "cpu->gpu", &[x]));
                }
            }
            let last = *outputs.last().expect("at least one stage");
            let ready: Vec<TaskId> = (0..n).map(|i| if i + 1 == n { last } else { b.g.join(&[outputs[i], last]) }).collect();
            let gathered = b.all_gather(&ready, act_bytes);
            for (i, g) in gathered.into_iter().enumerate() {
                b.cpu(i, host_ns(i), "host", &[g]);
            }
        }
    }
    b.finish(tokens)
}

/// Lowers a single all_sum of `bytes` per rank, as a collective microbenchmark runs it (GPU
/// input ready at time 0 on every rank).
pub fn lower_all_sum(plan: &Plan, bytes: u64) -> Lowered {
    let mut b = Builder::new(plan);
    b.in_context = false;
    let ready: Vec<TaskId> = (0..plan.n()).map(|_| b.g.join(&[])).collect();
    b.all_sum(&ready, bytes);
    b.finish(1)
}

/// The harness's "collective in context" microbenchmark: `blocks` (each a list of ops for one
/// token) run in order `repeats` times on every node, each block followed, when
/// `all_sum_bytes > 0`, by an all_sum of that many bytes, where every rank waits for the slowest.
/// Durations are filled by [`Lowered::retime`].
pub fn lower_segment_chain(plan: &Plan, blocks: &[Vec<Op>], repeats: usize, all_sum_bytes: u64) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    let mut ready: Vec<TaskId> = (0..n).map(|_| b.g.join(&[])).collect();
    for _ in 0..repeats {
        for ops in blocks {
            let done: Vec<TaskId> = (0..n).map(|i| b.gpu(i, ops.clone(), false, &[ready[i]])).collect();
            ready = if all_sum_bytes > 0 { b.all_sum(&done, all_sum_bytes) } else { done };
        }
    }
    b.finish(1)
}

/// llama.cpp RPC: node 0 is the client and computes the first layers; each further stage is an
/// `rpc-server` driven by blocking calls from the client: SET_TENSOR (activation in),
/// GRAPH_COMPUTE (graph serialized, deserialized and run), GET_TENSOR (activation back).
fn lower_rpc(b: &mut Builder<'_>, tokens: u64) {
    let plan = b.plan;
    let n = plan.n();
    let model = &plan.model;
    let c = plan.comm.clone();
    let act_bytes = tokens * model.hidden * 4; // f32 activations in ggml
    let half_call = us_to_ns(c.rpc_call_us / 2.0);
    let stage_ops = |i: usize| {
        let share = &plan.shares[i];
        let mut ops: Vec<Op> =
            (share.first_layer..share.end_layer).flat_map(|l| model.layer_ops(l)).filter(|o| o.class != OpClass::AllSum).collect();
        if share.head {
            ops.extend(model.head_ops());
        }
        ops
    };
    let mut prev = b.gpu(0, stage_ops(0), false, &[]);
    for i in 1..n {
        let ops = stage_ops(i);
        let graph_nodes: u64 = ops.iter().map(|o| o.kernels as u64).sum();
        // SET_TENSOR: client -> server i, then the server's reply.
        let c1 = b.cpu(0, half_call, "rpc set_tensor", &[prev]);
        let x1 = b.send(0, i, act_bytes, &[c1]);
        let s1 = b.cpu(i, half_call, "rpc set_tensor", &[x1]);
        let r1 = b.send(i, 0, 8, &[s1]);
        // GRAPH_COMPUTE: the whole graph is serialized every call and rebuilt by the server.
        let c2 = b.cpu(0, half_call, "rpc graph_compute", &[r1]);
        let gbytes = (graph_nodes as f64 * c.rpc_graph_node_bytes).round() as u64;
        let x2 = b.send(0, i, gbytes, &[c2]);
        let s2 = b.cpu(i, half_call + us_to_ns(graph_nodes as f64 * c.rpc_graph_node_us), "rpc deserialize", &[x2]);
        let g = b.gpu(i, ops, false, &[s2]);
        let r2 = b.send(i, 0, 8, &[g]);
        // GET_TENSOR: request, activation back.
        let c3 = b.cpu(0, half_call, "rpc get_tensor", &[r2]);
        let x3 = b.send(0, i, 64, &[c3]);
        let s3 = b.cpu(i, half_call, "rpc get_tensor", &[x3]);
        prev = b.send(i, 0, act_bytes, &[s3]);
    }
    b.cpu(0, us_to_ns(plan.runtimes[0].host_per_step_us), "host", &[prev]);
}
