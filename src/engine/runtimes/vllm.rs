//! vLLM V1 on CUDA nodes (GB10): PyTorch/FlashInfer kernels (the chip's `cuda` runtime
//! parameters), the V1 scheduler, paged KV, CUDA graphs unless `--enforce-eager`, tensor
//! parallel, expert parallel and pipeline parallel over NCCL, Ray's per-step dispatch on a
//! cluster. Behaviour read from vLLM's V1 engine (FACTS-2026 B2: `_set_default_args_v1`,
//! `engine/arg_utils.py` `get_batch_defaults`, vLLM 0.19 on two Sparks: "TP=2 (+EP for MoE)
//! over the ConnectX-7 link with Ray", FACTS.md) and vLLM v0.11's parallel layers (named beside
//! each rule).

use crate::llm::Op;
use crate::sim::TaskId;

use super::super::lower::{lower_layer_segments, lower_segments_driven};
use super::super::lowered::Lowered;
use super::super::network::Builder;
use super::super::options::{CudaOptions, EngineKind, EngineOptions, Parallelism};
use super::super::plan::Plan;
use super::super::split::{SplitError, TensorSplitRule};
use super::{CudaEngine, ServingLoop, VersionDefaults};

/// vLLM's defaults as shipped on a GB10. FACTS-2026 B2: V1 always chunks prefill and caches
/// prefixes; the API server on a GPU of at least 70 GiB whose name lacks "a100" gets
/// `max_num_batched_tokens` 8192 and `max_num_seqs` 1024, and vLLM sees the GB10 as 121.63 GiB
/// (inferred there); `--gpu-memory-utilization` 0.9 (vLLM's default, the top of NVIDIA's
/// 0.8-0.9 guidance); CUDA graphs on (V1's default; `--enforce-eager` turns them off); KV in the
/// model's dtype (`--kv-cache-dtype auto`); 16-token KV blocks (`--block-size`). The last prompt
/// token runs inside the last chunk (one forward computes the prompt and samples the first
/// token). MLA models: prefill in the expanded (multi-head) form, decode absorbed, as vLLM's
/// MLA backends do (an assumption: FACTS is silent on vLLM's MLA forms).
pub const VLLM_DEFAULTS: VersionDefaults = VersionDefaults {
    prefill_chunk: 8192,
    prefill_last_token_alone: false,
    mla_prefill_expanded: true,
    cuda: CudaOptions {
        cuda_graphs: true,
        kv_cache_fp8: false,
        max_num_batched_tokens: 8192,
        max_num_seqs: 1024,
        gpu_memory_utilization: 0.9,
        kv_block_tokens: 16,
    },
};

/// vLLM V1 on NVIDIA nodes.
pub struct Vllm;

impl CudaEngine for Vllm {
    fn kind(&self) -> EngineKind {
        EngineKind::Vllm
    }

    fn names(&self) -> &'static [&'static str] {
        &["vllm"]
    }

    fn id(&self) -> &'static str {
        "vllm"
    }

    fn label(&self) -> &'static str {
        "vLLM"
    }

    fn measurement_assumption(&self) -> &'static str {
        "vLLM V1 as shipped on GB10 (8192-token budget, 1024 sequences, CUDA graphs unless the row says --enforce-eager)"
    }

    /// vLLM's host costs are the `cuda` runtime's.
    fn host_key(&self) -> Option<&'static str> {
        None
    }

    fn version_defaults(&self) -> VersionDefaults {
        VLLM_DEFAULTS
    }

    /// One node; tensor (`--tensor-parallel-size N`), expert (the same plus
    /// `--enable-expert-parallel`) or pipeline (`--pipeline-parallel-size N`) parallel.
    fn check_split(&self, _engine: &str, _parallelism: Parallelism) -> Result<(), SplitError> {
        Ok(())
    }

    fn tensor_split_rule(&self) -> TensorSplitRule {
        TensorSplitRule::Vllm
    }

    /// Tensor and expert parallel: the shared segment lowering, whose all-sums run as NCCL
    /// all-reduces ([`super::super::options::Runtime::gpu_collectives`]); expert parallel
    /// differs only in which rank computes which expert ([`Parallelism::Expert`], the busiest
    /// rank's experts in the cost model). vLLM v0.11 `FusedMoEParallelConfig`: with one
    /// data-parallel rank the experts are split over the tensor-parallel ranks
    /// (`ep_size = tp_size x dp_size`), `use_all2all_kernels` is `dp_size > 1 and use_ep`,
    /// so no all-to-all runs: every rank holds every token after attention's all-reduce,
    /// computes the experts it owns, and the MoE output is summed by the same tensor-parallel
    /// all-reduce (`reduce_results`) as without expert parallelism. The all-to-all dispatch and
    /// combine belong to data-parallel attention (`--data-parallel-size`), which is not
    /// modelled ([`super::super::cost::NetCost::expert_parallel_layer_ns`] is its cost).
    /// Ray's per-step dispatch sits on node 0 ([`super::super::cost::NetCost::ray_step_ns`]).
    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        let ray = plan.net_cost().ray_step_ns(plan.n());
        match plan.options.parallelism {
            Parallelism::Pipeline => lower_pipeline(plan, tokens, ray),
            Parallelism::TensorPipeline { .. } => lower_tensor_pipeline(plan, tokens, ray),
            Parallelism::None | Parallelism::Tensor | Parallelism::Expert | Parallelism::Data { .. } | Parallelism::DataExpert { .. } => {
                lower_segments_driven(plan, tokens, ray)
            }
        }
    }

    /// V1's scheduler with the engine's budgets; the scenario's `max_batch` caps `max_num_seqs`.
    fn serving_loop(&self, max_batch: Option<u64>, options: &EngineOptions) -> ServingLoop {
        super::vllm_v1_loop(max_batch, options)
    }

    /// On a cluster every split but data-parallel attention with expert parallel,
    /// tensor+pipeline (two stages) on an even count from four (the planner drops the splits a
    /// model cannot take: a tensor size its heads refuse, expert parallel or data-parallel
    /// attention of a dense model).
    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        match nodes {
            1 => &[Parallelism::None],
            n if n < 4 || n % 2 == 1 => &[Parallelism::Tensor, Parallelism::Expert, Parallelism::Data { tensor: 1 }, Parallelism::Pipeline],
            _ => &[
                Parallelism::Tensor,
                Parallelism::Expert,
                Parallelism::Data { tensor: 1 },
                Parallelism::Pipeline,
                Parallelism::TensorPipeline { stages: Parallelism::DEFAULT_STAGES },
            ],
        }
    }
}

/// vLLM pipeline parallel (v0.11 V1, `--pipeline-parallel-size N`), one step: stage r runs its
/// layers (`get_pp_indices` splits them evenly; the plan's memory-proportional ranges are the
/// same on the identical nodes a CUDA cluster has, up to where a remainder layer goes), then
/// hands its `IntermediateTensors` (hidden states and residual: 2 x tokens x hidden x activation
/// bytes, `models/llama.py`) to stage r + 1 with an NCCL send (`send_tensor_dict`); the last
/// stage computes the LM head and samples, and the step closes on node 0 (the engine core: Ray's
/// dispatch, then the host work). The stages run one after another within a step, so one
/// sequence never runs faster than on one node. V1's `max_concurrent_batches = pp_size` batch
/// queue, which overlaps the stages of different batches under load, is the serving loop's
/// (`estimate::serve`, decode steps). Not modelled: `send_tensor_dict`'s metadata message on the
/// CPU (gloo) group.
fn lower_pipeline(plan: &Plan, tokens: u64, ray_ns: crate::sim::Time) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    let logits_all = plan.options.prefill_logits_all;
    let hand_off_bytes = 2 * tokens * plan.model.hidden * plan.options.activation_bytes;
    let mut prev: Option<TaskId> = None;
    for i in 0..n {
        let deps: Vec<TaskId> = prev.into_iter().collect();
        let stage = b.gpu(i, plan.stage_ops(i), logits_all, &deps);
        prev = Some(if i + 1 < n { b.nccl_send(i, i + 1, hand_off_bytes, &[stage]) } else { stage });
    }
    let last = prev.expect("at least one stage");
    let ready = if ray_ns > 0 { b.cpu(0, ray_ns, "ray", &[last]) } else { last };
    b.host(0, &[ready]);
    b.finish(tokens)
}

/// vLLM tensor parallel within pipeline stages (`--tensor-parallel-size T
/// --pipeline-parallel-size P`, T x P nodes), one step. Ranks are numbered as vLLM's
/// (`rank = stage x T + tensor rank`: a stage's ranks are consecutive nodes). Each stage runs
/// its layers as tensor parallel does, its all-sums NCCL all-reduces among its own T ranks;
/// at the stage's end each tensor rank sends 1/T of the `IntermediateTensors` (hidden states
/// and residual) to the same tensor rank of the next stage, whose ranks all-gather them (vLLM
/// v0.11 `GroupCoordinator.send_tensor_dict` / `recv_tensor_dict` with
/// `all_gather_group = get_tp_group()`: the tensor is cut along the TP group and gathered on
/// receipt). A stage's hosts launch its kernels once the stage before has launched (its
/// hand-off's metadata goes ahead of the tensors on the CPU group), so a step run eagerly takes
/// the longer of each stage's GPU timeline and its launches, stage after stage. The last stage
/// computes the LM head; the step closes on node 0 (Ray's dispatch, then the engine core's host
/// work), as [`lower_pipeline`]. The batch queue that overlaps stages under load is the serving
/// loop's, as for a pipeline.
fn lower_tensor_pipeline(plan: &Plan, tokens: u64, ray_ns: crate::sim::Time) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    let ranks = plan.options.parallelism.tensor_ranks(n);
    let stages = plan.options.parallelism.stages(n);
    let logits_all = plan.options.prefill_logits_all;
    let act_bytes = tokens * plan.model.hidden * plan.options.activation_bytes;
    let hand_off_bytes = 2 * act_bytes;
    let mut prev: Vec<Option<TaskId>> = vec![None; n];
    let mut launched: Vec<Option<TaskId>> = vec![None; n];
    for s in 0..stages {
        let group: Vec<usize> = (s * ranks..(s + 1) * ranks).collect();
        let upstream: Vec<TaskId> =
            if s == 0 { Vec::new() } else { launched[(s - 1) * ranks..s * ranks].iter().flatten().copied().collect() };
        for &i in &group {
            launched[i] = b.dispatch_ahead_after(i, &upstream);
        }
        let share = &plan.shares[group[0]];
        let layers = share.first_layer..share.end_layer;
        let mut seg_ops =
            lower_layer_segments(&mut b, layers, &group, &mut prev, |b, ready| b.nccl_all_sum_among(&group, ready, act_bytes));
        if share.head {
            seg_ops.extend(plan.head_ops());
        }
        let shared: std::sync::Arc<[Op]> = seg_ops.into();
        // A stage's output leaves once its GPU is done and its host has launched the whole stage.
        for &i in &group {
            let tail = b.gpu(i, shared.clone(), logits_all, &prev[i].into_iter().collect::<Vec<_>>());
            prev[i] = Some(match launched[i] {
                Some(l) => b.g.join(&[tail, l]),
                None => tail,
            });
        }
        if s + 1 < stages {
            let slice = hand_off_bytes.div_ceil(ranks as u64);
            let next: Vec<usize> = group.iter().map(|&i| i + ranks).collect();
            let arrived: Vec<TaskId> = group.iter().map(|&i| b.nccl_send(i, i + ranks, slice, &[prev[i].expect("stage output")])).collect();
            let gathered = b.nccl_all_gather_among(&next, &arrived, hand_off_bytes);
            for (&j, g) in next.iter().zip(gathered) {
                prev[j] = Some(g);
            }
        }
    }
    let last: Vec<TaskId> = prev[(stages - 1) * ranks..].iter().flatten().copied().collect();
    let last = b.g.join(&last);
    let ready = if ray_ns > 0 { b.cpu(0, ray_ns, "ray", &[last]) } else { last };
    b.host(0, &[ready]);
    b.finish(tokens)
}
