//! A lowered forward step: the task graph and the GPU segments it carries, re-timed per step
//! as the context grows.

use crate::llm::Op;
use crate::sim::{TaskGraph, TaskId, Time};

use super::cost::{LaunchCost, NodeCost, Work};
use super::plan::Plan;

/// A run of operations on one node's GPU between two communication points.
#[derive(Clone, Debug)]
pub struct Segment {
    /// The node.
    pub node: usize,
    /// The operations (shared by the ranks that run the same ones: a tensor-parallel step's
    /// segment is one list, not one copy per rank).
    pub ops: std::sync::Arc<[Op]>,
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
    /// `(task, node)` of every per-step host task: the runtime's host work after a forward,
    /// `host_per_step_us + B x host_per_seq_us` for B sampling sequences.
    pub host_tasks: Vec<(TaskId, usize)>,
    /// Per node, the host's launch stream of the whole step where it launches ahead across
    /// the step's collectives (a CUDA engine run eagerly on a tensor-parallel or single-node
    /// step); `None` where a node's launches join each segment's GPU time instead.
    pub dispatch_tasks: Vec<Option<TaskId>>,
    /// Tokens per step this graph was built for (payload sizes depend on it).
    pub tokens: u64,
    /// Bytes the engine put on links (for conservation checks).
    pub bytes_sent: u64,
    /// Cables (unordered node pairs; `(a, n)` is node a's cable to a switch) the step's messages
    /// cross, in order: the cables this runtime needs on this cluster.
    pub cables_crossed: Vec<(usize, usize)>,
    /// Per segment: the context-independent part of its time and of its work, and the ops
    /// whose cost grows with the context. Filled on the first [`Lowered::retime`] or
    /// [`Lowered::work`].
    pub(super) seg_parts: Vec<SegmentParts>,
    /// The distinct `(node, op)` pairs whose time grows with the context (layers repeat the same
    /// ops): each is timed once per re-timing, however many segments carry it.
    pub(super) ctx_ops: Vec<(usize, Op)>,
    /// LM-head rows `seg_parts` was summed for.
    pub(super) head_rows: u64,
    /// Per data-parallel rank, the step's tokens `seg_parts` was summed for (each rank runs its
    /// own sequences; empty under every other split, where every node runs them all).
    pub(super) node_tokens: Vec<u64>,
    /// Rows of the step that route on their own through MoE layers (None: every token);
    /// [`Lowered::set_routed_tokens`].
    pub(super) routed_tokens: Option<u64>,
}

/// A segment's cost split by what depends on the context.
#[derive(Clone, Debug, Default)]
pub(super) struct SegmentParts {
    /// The context-independent ops' GPU time, ns.
    gpu_ns: f64,
    /// The context-independent ops' host dispatch beside the GPU, ns ([`super::cost::LaunchCost`]).
    dispatch_ns: f64,
    /// The context-independent ops' host build for the next step, ns ([`LaunchCost::ahead_us`]).
    ahead_ns: f64,
    /// The context-independent ops' work.
    work: Work,
    /// The ops whose cost grows with the context, as indices into `ctx_ops`.
    by_context: Vec<usize>,
}

impl Lowered {
    /// Sets GPU task durations for a step of `tokens` tokens at `context` tokens of history.
    pub fn retime(&mut self, plan: &Plan, context: u64) {
        self.retime_rows(plan, &[(self.tokens, context)], 1);
    }

    /// Sets GPU task durations for a batched step: `rows` holds, per sequence in the batch, its
    /// tokens in this step and its context before them (their tokens sum to [`Self::tokens`]).
    /// Weight-bound operations run once over all rows (a GEMM of `tokens` rows; MoE layers touch
    /// the experts the whole batch selects); attention and the MLA latent expansion run per
    /// sequence over its own context, paying the kernel launches once; the LM head runs over
    /// `head_rows` rows (one per sequence that samples) unless the runtime computes logits for
    /// every token. Host tasks pay the per-step cost plus the per-sequence cost of `head_rows`
    /// sampling sequences ([`super::NodeCost::host_ns`]).
    pub fn retime_rows(&mut self, plan: &Plan, rows: &[(u64, u64)], head_rows: u64) {
        debug_assert_eq!(rows.iter().map(|r| r.0).sum::<u64>(), self.tokens, "rows must cover the step's tokens");
        let ranks = RankRows::new(plan, rows, head_rows);
        self.split_parts(plan, &ranks);
        // Each distinct context-dependent op once; a segment adds its ops' times in its order,
        // so the sums are the same bits as timing every op of every segment.
        // Each node's cost model built once for the step (it is read per op below).
        let costs = plan.costs();
        let ctx_ns: Vec<(f64, f64, f64)> =
            self.ctx_ops.iter().map(|(node, op)| per_sequence_ns(&costs[*node], op, ranks.rows(*node))).collect();
        // Per node: its GPU tasks' time and its host's build of the next step's graph.
        let mut gpu_by_node = vec![0u64; plan.n()];
        let mut ahead_by_node = vec![0.0f64; plan.n()];
        let mut dispatch_by_node = vec![0.0f64; plan.n()];
        for &(task, seg) in &self.gpu_tasks {
            let p = &self.seg_parts[seg];
            let gpu = p.by_context.iter().fold(p.gpu_ns, |acc, &j| acc + ctx_ns[j].0);
            let dispatch = p.by_context.iter().fold(p.dispatch_ns, |acc, &j| acc + ctx_ns[j].1);
            let node = self.segments[seg].node;
            ahead_by_node[node] += p.by_context.iter().fold(p.ahead_ns, |acc, &j| acc + ctx_ns[j].2);
            // Launched ahead across the step (the node's launch stream is its own task), or
            // joined to this segment's GPU time.
            let ns = if self.dispatch_tasks[node].is_some() {
                dispatch_by_node[node] += dispatch;
                gpu
            } else {
                LaunchCost::join(gpu, dispatch)
            };
            // Clamp to ~11 days so sums of durations can never overflow.
            let ns = ns.round().clamp(0.0, 1e15) as Time;
            gpu_by_node[node] += ns;
            self.graph.set_duration(task, ns);
        }
        // A build longer than the node's GPU work holds the next step back by the difference:
        // paid after this step's forward, on the host (one host task per node and step).
        // Assumed: the build overlaps only the node's own GPU work, not its waits on other
        // nodes (a slight overestimate where a node idles in a collective). A pipeline's stages
        // build and run one after another (exo: recv, layers, eval, send, FACTS.md), so its
        // builds count as one against its stages' GPU work, paid on the last stage's host: a
        // host-bound single stream gains nothing from the split (its step is never shorter than
        // one node's, the batch-1 pipeline law).
        if plan.options.parallelism == super::Parallelism::Pipeline && plan.n() > 1 {
            let (ahead, gpu): (f64, Time) = (ahead_by_node.iter().sum(), gpu_by_node.iter().sum());
            let last = plan.n() - 1;
            ahead_by_node.fill(0.0);
            gpu_by_node.fill(0);
            (ahead_by_node[last], gpu_by_node[last]) = (ahead, gpu);
        }
        for (node, task) in self.dispatch_tasks.iter().enumerate() {
            if let Some(task) = *task {
                self.graph.set_duration(task, dispatch_by_node[node].round().clamp(0.0, 1e15) as Time);
            }
        }
        for &(task, node) in &self.host_tasks {
            let behind = (ahead_by_node[node].round().clamp(0.0, 1e15) as Time).saturating_sub(gpu_by_node[node]);
            self.graph.set_duration(task, costs[node].host_ns(ranks.head_rows(node)) + behind);
        }
    }

    /// Says how many of the step's tokens route through MoE layers on their own: `Some(n)` when
    /// the step's sequences are identical (`llama-batched-bench` before late September 2025 fed
    /// token 0 to every sequence, FACTS.md "How published benchmarks measure"), so every
    /// sequence selects the same experts as the first and a MoE layer reads the experts of `n`
    /// tokens (1 in a decode step) while its FLOPs still run over every row; `None` (the
    /// default): independent requests, whose tokens cover the experts as
    /// [`crate::llm::Op::experts_touched`] of all of them. Later re-timings use it until it is
    /// set again.
    pub fn set_routed_tokens(&mut self, routed: Option<u64>) {
        if self.routed_tokens != routed {
            self.routed_tokens = routed;
            self.seg_parts.clear();
        }
    }

    /// Bytes and FLOPs each node's GPU does in one step at `context` tokens of history (what
    /// the power model charges energy for), indexed by node.
    pub fn work(&mut self, plan: &Plan, context: u64) -> Vec<Work> {
        self.work_rows(plan, &[(self.tokens, context)], 1)
    }

    /// [`Lowered::work`] for a batched step (`rows` and `head_rows` as in
    /// [`Lowered::retime_rows`]).
    pub fn work_rows(&mut self, plan: &Plan, rows: &[(u64, u64)], head_rows: u64) -> Vec<Work> {
        let ranks = RankRows::new(plan, rows, head_rows);
        self.split_parts(plan, &ranks);
        let mut out = vec![Work::default(); plan.n()];
        let costs = plan.costs();
        for &(_, seg) in &self.gpu_tasks {
            let node = self.segments[seg].node;
            let cost = &costs[node];
            let p = &self.seg_parts[seg];
            out[node] += p.work;
            for &j in &p.by_context {
                for &(t, c) in ranks.rows(node) {
                    out[node] += cost.op_work(&self.ctx_ops[j].1, t, c);
                }
            }
        }
        out
    }

    /// Splits each segment into its context-independent cost (time and work, summed once for
    /// each node's tokens and LM-head rows, `ranks`) and the ops that depend on the context.
    fn split_parts(&mut self, plan: &Plan, ranks: &RankRows<'_>) {
        let head_rows = ranks.head_rows;
        if !self.seg_parts.is_empty() && self.head_rows == head_rows && self.node_tokens == ranks.tokens {
            return;
        }
        self.head_rows = head_rows;
        self.node_tokens.clone_from(&ranks.tokens);
        self.ctx_ops.clear();
        let routed = self.routed_tokens.unwrap_or(self.tokens).min(self.tokens);
        // Only some ops depend on the context (Op::depends_on_context): sum the rest once.
        let mut seg_parts = Vec::with_capacity(self.segments.len());
        for s in &self.segments {
            let cost = plan.cost(s.node);
            let mut parts = SegmentParts::default();
            for op in s.ops.iter() {
                if op.depends_on_context() {
                    let j = match self.ctx_ops.iter().position(|(n, o)| *n == s.node && o == op) {
                        Some(j) => j,
                        None => {
                            self.ctx_ops.push((s.node, op.clone()));
                            self.ctx_ops.len() - 1
                        }
                    };
                    parts.by_context.push(j);
                } else {
                    // Under data-parallel attention a rank runs all but the experts over its own
                    // tokens; the experts run over every rank's, gathered.
                    let own = if op.class == crate::llm::OpClass::Expert { self.tokens } else { ranks.tokens_of(s.node, self.tokens) };
                    let head = op.name == "lm_head";
                    // A dummy forward computes hidden states, no logits.
                    if head && ranks.is_dummy(s.node) {
                        continue;
                    }
                    let toks = if head && !s.logits_all_tokens { ranks.head_rows(s.node) } else { own };
                    parts.gpu_ns += cost.op_ns_routed(op, toks, 0, routed.min(toks));
                    parts.dispatch_ns += cost.dispatch_ns(op, toks);
                    parts.ahead_ns += cost.ahead_ns(op, toks);
                    parts.work += cost.op_work_routed(op, toks, 0, routed.min(toks));
                }
            }
            seg_parts.push(parts);
        }
        self.seg_parts = seg_parts;
    }
}

/// The rows of a step each node runs. Every node runs every row, but under data-parallel
/// attention ([`super::Parallelism::Data`]), where the server deals its sequences to the
/// data-parallel ranks in turn (row j to rank j mod D: a balancer that keeps the ranks' counts
/// within one), each rank (one node, or a tensor-parallel group of consecutive nodes, as vLLM
/// numbers them) runs its own; a rank dealt none runs a dummy forward of one token on an empty
/// cache and no LM head, as the ranks step in lockstep (vLLM 0.17
/// `DPEngineCoreProc.execute_dummy_batch`, whose `_dummy_run` returns hidden states without
/// computing logits).
struct RankRows<'a> {
    /// Per data-parallel rank, its rows (`None`: every node runs every row).
    dealt: Option<Vec<Vec<(u64, u64)>>>,
    /// Every row of the step.
    all: &'a [(u64, u64)],
    /// Per data-parallel rank, its tokens when dealt (empty otherwise: every node runs all).
    tokens: Vec<u64>,
    /// Sampling rows of the whole step.
    head_rows: u64,
    /// Data-parallel ranks the rows are dealt to (1: not dealt).
    ranks: usize,
    /// Nodes per data-parallel rank.
    group: usize,
}

impl<'a> RankRows<'a> {
    fn new(plan: &Plan, all: &'a [(u64, u64)], head_rows: u64) -> Self {
        let n = plan.n();
        let ranks = plan.options.parallelism.data_ranks(n);
        if ranks <= 1 {
            return RankRows { dealt: None, all, tokens: Vec::new(), head_rows, ranks: 1, group: n };
        }
        let mut dealt: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ranks];
        for (j, &row) in all.iter().enumerate() {
            dealt[j % ranks].push(row);
        }
        for d in &mut dealt {
            if d.is_empty() {
                d.push((1, 0));
            }
        }
        let tokens = dealt.iter().map(|d| d.iter().map(|r| r.0).sum()).collect();
        RankRows { dealt: Some(dealt), all, tokens, head_rows, ranks, group: n / ranks }
    }

    /// The data-parallel rank `node` belongs to.
    fn rank_of(&self, node: usize) -> usize {
        node / self.group.max(1)
    }

    /// The tokens `node` runs of a step of `total`.
    fn tokens_of(&self, node: usize, total: u64) -> u64 {
        self.tokens.get(self.rank_of(node)).copied().unwrap_or(total)
    }

    /// Whether `node` was dealt no row and runs a dummy forward.
    fn is_dummy(&self, node: usize) -> bool {
        self.dealt.is_some() && self.rank_of(node) >= self.all.len()
    }

    /// The rows `node` runs.
    fn rows(&self, node: usize) -> &[(u64, u64)] {
        self.dealt.as_ref().map_or(self.all, |d| d[self.rank_of(node)].as_slice())
    }

    /// The sampling rows `node` runs: all of them, or its rank's share when dealt.
    fn head_rows(&self, node: usize) -> u64 {
        if self.ranks <= 1 {
            return self.head_rows;
        }
        let (d, rank) = (self.ranks as u64, self.rank_of(node) as u64);
        self.head_rows / d + u64::from(rank < self.head_rows % d)
    }
}

/// A context-dependent op over every sequence of a batch, each over its own context; kernel
/// launches are paid once for the batch. Returns its GPU time, its host dispatch and its host
/// build for the next step, ns.
fn per_sequence_ns(cost: &NodeCost<'_>, op: &Op, rows: &[(u64, u64)]) -> (f64, f64, f64) {
    let mut ns = cost.op_ns(op, rows[0].0, rows[0].1);
    for &(t, c) in &rows[1..] {
        ns += cost.op_ns(op, t, c) - cost.launch_ns(op, t);
    }
    (ns, cost.dispatch_ns(op, rows[0].0), cost.ahead_ns(op, rows[0].0))
}
