//! Lowering one forward step onto the cluster: the entry point (each runtime lowers its own
//! splits, see [`super::runtimes`]), the single-node and tensor-parallel path every runtime
//! shares (segments split at the all_sum points), and the microbenchmark shapes the
//! calibration harness times.

use crate::llm::{Op, OpClass};
use crate::sim::{TaskId, Time};

use super::lowered::Lowered;
use super::network::Builder;
use super::plan::Plan;

/// Lowers one forward step of `tokens` tokens (1 for decode, a chunk for prefill) onto the
/// cluster, as the plan's runtime does ([`super::runtimes::EngineRuntime::lower`]). Durations
/// of GPU tasks are filled by [`Lowered::retime`].
pub fn lower_step(plan: &Plan, tokens: u64) -> Lowered {
    plan.options.kind.behaviour().lower(plan, tokens)
}

/// The single-node and tensor-parallel lowering every runtime shares: segments split at the
/// all_sum points, one GPU task per node per segment (on one node the all_sums are no-ops).
pub(super) fn lower_segments(plan: &Plan, tokens: u64) -> Lowered {
    lower_segments_driven(plan, tokens, 0)
}

/// [`lower_segments`] with a driver's per-step cost `driver_ns` on node 0's CPU between the
/// forward and node 0's host work (Ray dispatching a multi-node vLLM step; none when 0). A
/// runtime that launches kernels from the host (a CUDA engine run eagerly) launches the whole
/// step ahead of its GPU, through the collectives ([`Builder::dispatch_ahead`]).
pub(super) fn lower_segments_driven(plan: &Plan, tokens: u64, driver_ns: Time) -> Lowered {
    if plan.options.parallelism.data_attention() && plan.n() > 1 {
        return lower_data_attention(plan, tokens, driver_ns);
    }
    let mut b = Builder::new(plan);
    let n = plan.n();
    let dispatch: Vec<Option<TaskId>> = (0..n).map(|i| b.dispatch_ahead(i)).collect();
    let act_bytes = tokens * plan.model.hidden * plan.options.activation_bytes;
    let nodes: Vec<usize> = (0..n).collect();
    let mut prev: Vec<Option<TaskId>> = vec![None; n];
    let seg_ops = lower_layer_segments(&mut b, 0..plan.model.layers, &nodes, &mut prev, |b, ready| b.all_sum(ready, act_bytes));
    close_step(b, seg_ops, &mut prev, &dispatch, driver_ns, tokens)
}

/// Every node's last segment (`seg_ops`, the ops after the last collective, and the LM head)
/// after its `prev` task, then the step's close: Ray's dispatch `driver_ns` on node 0 (none
/// when 0), each node's host work once its forward and its launches (`dispatch`) are done.
fn close_step(
    mut b: Builder<'_>,
    mut seg_ops: Vec<Op>,
    prev: &mut [Option<TaskId>],
    dispatch: &[Option<TaskId>],
    driver_ns: Time,
    tokens: u64,
) -> Lowered {
    let logits_all = b.plan.options.prefill_logits_all;
    seg_ops.extend(b.plan.head_ops());
    let shared: std::sync::Arc<[Op]> = seg_ops.into();
    for (i, p) in prev.iter_mut().enumerate() {
        let deps: Vec<TaskId> = p.iter().copied().collect();
        let head = b.gpu(i, shared.clone(), logits_all, &deps);
        let ready = if i == 0 && driver_ns > 0 { b.cpu(0, driver_ns, "ray", &[head]) } else { head };
        let deps: Vec<TaskId> = std::iter::once(ready).chain(dispatch[i]).collect();
        *p = Some(b.host(i, &deps));
    }
    b.finish(tokens)
}

/// Data-parallel attention on an MoE model ([`super::Parallelism::Data`]), one step, as vLLM
/// 0.17 runs `--data-parallel-size N` (SGLang's `--enable-dp-attention` alike): the ranks first
/// agree on the step's token counts (`coordinate_batch_across_dp`, an all-reduce of 4 x D
/// int32 on the GPU group, D data-parallel ranks); each rank runs every layer but the experts whole over its own
/// sequences (which rank runs which is [`Lowered::retime_rows`]'s); before each MoE layer the
/// ranks all-gather every rank's hidden states with their top-k weights and ids (dispatch,
/// `AgRsAll2AllManager.dispatch`, vLLM 0.17's default `all2all_backend`), run their slice of
/// the experts (or their whole experts under expert parallel) over all of them, and
/// reduce-scatter the result back (combine), timed as an all-gather of the same bytes (a
/// ring's steps and bytes per link; the reduction's adds are not charged). A layer without
/// experts communicates nothing. With `tensor_ranks` T > 1 each rank is a group of T
/// consecutive nodes running its layers tensor parallel: an all-reduce within the group at
/// each sum point (after the combine in an MoE layer), the dispatch and combine among the nodes
/// of one tensor index across the ranks. The host's close of the step is as tensor parallel's
/// ([`close_step`]): every node's own, Ray's dispatch on node 0.
fn lower_data_attention(plan: &Plan, tokens: u64, driver_ns: Time) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    // Data-parallel ranks of `tensor` consecutive nodes each (vLLM's rank order); the experts'
    // dispatch and combine run among the nodes of one tensor index across the ranks.
    let tensor = plan.options.parallelism.tensor_ranks(n).max(1);
    let ranks = n / tensor;
    let groups: Vec<Vec<usize>> = (0..ranks).map(|d| (d * tensor..(d + 1) * tensor).collect()).collect();
    let peers: Vec<Vec<usize>> = (0..tensor).map(|k| (0..ranks).map(|d| d * tensor + k).collect()).collect();
    let dispatch: Vec<Option<TaskId>> = (0..n).map(|i| b.dispatch_ahead(i)).collect();
    let start: Vec<TaskId> = (0..n).map(|_| b.g.join(&[])).collect();
    let all: Vec<usize> = (0..n).collect();
    let mut prev: Vec<Option<TaskId>> = b.nccl_all_sum_among(&all, &start, 16 * ranks as u64).into_iter().map(Some).collect();
    let act = plan.model.hidden * plan.options.activation_bytes;
    let top_k = plan.model.moe.as_ref().map_or(0, |m| m.active);
    // Gathered: every rank's hidden states, then top-k weights (f32) and ids (i32) per token.
    let (hidden_bytes, dispatch_bytes) = (tokens * act, tokens * (act + top_k * 8));
    // A rank's own tokens' activations, summed within its tensor group (a balanced share).
    let group_bytes = tokens.div_ceil(ranks as u64) * act;
    let mut seg_ops: Vec<Op> = Vec::new();
    for l in 0..plan.model.layers {
        // The dispatch right before the experts (the router and top-k run on each rank's own
        // tokens), the combine at the layer's first sum point after them; every other sum
        // point is the tensor group's all-reduce (none on a group of one).
        let mut routed = false;
        for op in plan.layer_ops(l) {
            match op.class {
                OpClass::Expert => {
                    let ready = close_segment(&mut b, &mut seg_ops, &prev);
                    set(&mut prev, collective(&mut b, &peers, &ready, dispatch_bytes, true));
                    routed = true;
                    seg_ops.push(op);
                }
                OpClass::AllSum => {
                    if !routed && tensor == 1 {
                        continue;
                    }
                    let mut ready = close_segment(&mut b, &mut seg_ops, &prev);
                    if routed {
                        ready = collective(&mut b, &peers, &ready, hidden_bytes, true);
                        routed = false;
                    }
                    if tensor > 1 {
                        ready = collective(&mut b, &groups, &ready, group_bytes, false);
                    }
                    set(&mut prev, ready);
                }
                _ => seg_ops.push(op),
            }
        }
    }
    close_step(b, seg_ops, &mut prev, &dispatch, driver_ns, tokens)
}

/// Ends every node's current segment (`seg_ops`, shared) after its `prev` task: the GPU tasks.
fn close_segment(b: &mut Builder<'_>, seg_ops: &mut Vec<Op>, prev: &[Option<TaskId>]) -> Vec<TaskId> {
    let logits_all = b.plan.options.prefill_logits_all;
    let shared: std::sync::Arc<[Op]> = std::mem::take(seg_ops).into();
    prev.iter().enumerate().map(|(i, p)| b.gpu(i, shared.clone(), logits_all, &p.iter().copied().collect::<Vec<_>>())).collect()
}

/// An NCCL collective of `bytes` within each set of `sets` (all-gather when `gather`, else
/// all-reduce), each node from its task in `ready`: each node's done task.
fn collective(b: &mut Builder<'_>, sets: &[Vec<usize>], ready: &[TaskId], bytes: u64, gather: bool) -> Vec<TaskId> {
    let mut done = ready.to_vec();
    for set in sets {
        let r: Vec<TaskId> = set.iter().map(|&i| ready[i]).collect();
        let out = if gather { b.nccl_all_gather_among(set, &r, bytes) } else { b.nccl_all_sum_among(set, &r, bytes) };
        for (&i, t) in set.iter().zip(out) {
            done[i] = t;
        }
    }
    done
}

/// Every node's last task: `done`.
fn set(prev: &mut [Option<TaskId>], done: Vec<TaskId>) {
    for (p, t) in prev.iter_mut().zip(done) {
        *p = Some(t);
    }
}

/// The GPU tasks of layers `layers` on the nodes of `group`, as tensor parallel runs them:
/// segments split at the all_sum points, one GPU task per node per segment, each all_sum by
/// `all_sum` over the group's ready tasks (in the group's order). `prev[i]` is node i's last
/// task, updated. Returns the ops after the last all_sum, which run in the same GPU task as
/// whatever the caller adds (the next layers, the head).
pub(super) fn lower_layer_segments<'a>(
    b: &mut Builder<'a>,
    layers: std::ops::Range<u64>,
    group: &[usize],
    prev: &mut [Option<TaskId>],
    mut all_sum: impl FnMut(&mut Builder<'a>, &[TaskId]) -> Vec<TaskId>,
) -> Vec<Op> {
    let plan = b.plan;
    let logits_all = plan.options.prefill_logits_all;
    let mut seg_ops: Vec<Op> = Vec::new();
    for l in layers {
        for op in plan.layer_ops(l) {
            if op.class != OpClass::AllSum {
                seg_ops.push(op);
                continue;
            }
            let shared: std::sync::Arc<[Op]> = std::mem::take(&mut seg_ops).into();
            let ready: Vec<TaskId> = group
                .iter()
                .map(|&i| {
                    let deps: Vec<TaskId> = prev[i].into_iter().collect();
                    b.gpu(i, shared.clone(), logits_all, &deps)
                })
                .collect();
            for (&i, done) in group.iter().zip(all_sum(b, &ready)) {
                prev[i] = Some(done);
            }
        }
    }
    seg_ops
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
    let blocks: Vec<std::sync::Arc<[Op]>> = blocks.iter().map(|ops| ops.as_slice().into()).collect();
    for _ in 0..repeats {
        for ops in &blocks {
            let done: Vec<TaskId> = (0..n).map(|i| b.gpu(i, ops.clone(), false, &[ready[i]])).collect();
            ready = if all_sum_bytes > 0 { b.all_sum(&done, all_sum_bytes) } else { done };
        }
    }
    b.finish(1)
}
