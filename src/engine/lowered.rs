//! A lowered forward step: the task graph and the GPU segments it carries, re-timed per step
//! as the context grows.

use crate::llm::Op;
use crate::sim::{TaskGraph, TaskId, Time};

use super::plan::{Plan, Work};

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
    pub(super) seg_parts: Vec<(f64, Vec<Op>)>,
    /// Per segment: the context-independent part of its work. Filled on the first
    /// [`Lowered::work`].
    pub(super) seg_work: Vec<Work>,
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

    /// Bytes and FLOPs each node's GPU does in one step at `context` tokens of history (what
    /// the power model charges energy for), indexed by node.
    pub fn work(&mut self, plan: &Plan, context: u64) -> Vec<Work> {
        let lm_tokens = |s: &Segment, op: &Op| if op.name == "lm_head" && !s.logits_all_tokens { 1 } else { self.tokens };
        if self.seg_work.is_empty() {
            self.seg_work = self
                .segments
                .iter()
                .map(|s| {
                    let mut w = Work::default();
                    for op in s.ops.iter().filter(|op| !op.depends_on_context()) {
                        w += plan.op_work(s.node, op, lm_tokens(s, op), 0);
                    }
                    w
                })
                .collect();
        }
        let mut out = vec![Work::default(); plan.n()];
        for &(_, seg) in &self.gpu_tasks {
            let s = &self.segments[seg];
            out[s.node] += self.seg_work[seg];
            for op in s.ops.iter().filter(|op| op.depends_on_context()) {
                out[s.node] += plan.op_work(s.node, op, self.tokens, context);
            }
        }
        out
    }
}
