//! What one node's kernels and host cost: an operation's bytes and FLOPs on the roofline of its
//! kernel class, launches, GPU<->CPU crossings, host work and a pipeline stage.

use crate::hw::Os;
use crate::llm::{MlaPerHead, Op, OpClass, Placement};
use crate::profile::{ChipParams, CommParams, RuntimeParams};
use crate::sim::Time;

use super::us_to_ns;

/// Token rows of one GEMM tile: a weight tile is dequantised once per this many rows of the
/// activations. llama.cpp's Metal `kernel_mul_mm` tiles 64 weight rows by 32 token rows
/// (`BLOCK_SIZE_M`/`BLOCK_SIZE_N`, ggml-metal.metal) and MLX's steel quantized matmul 32 token
/// rows (`BM = 32`, `quantized.h`). Assumed the same for Vulkan's and CUDA's tiles: only the
/// ratio of a family's fitted instructions to this tile is identified by the rows.
pub const DEQUANT_TOKEN_TILE: u64 = 32;

/// Most token rows a quantized matmul still runs as a matrix-vector kernel (dequantising in
/// registers, hidden under the weight stream) before it switches to the tiled GEMM: llama.cpp's
/// Metal backend runs `mul_mv` up to 8 rows and `mul_mm` above (`ne11_mm_min`). Assumed 8 for
/// every backend but MLX on Metal, whose `qmv` pays every row and gives way to `qmm` where that
/// is cheaper ([`NodeCost::per_row_matvec`]).
pub const GEMV_MAX_ROWS: f64 = 8.0;

/// ALU instruction slots per weight per row, beyond the row's multiply-add, of MLX's quantized
/// matrix-vector kernel (`qmv`), which dequantises every weight again for each row of the step.
/// Derived from FACTS.md's M3 Max figures for a 5120x17408 4-bit matmul (M = 1 / 4 / 8: 0.129 /
/// 0.165 / 0.323 ms): 0.165 / 4 and 0.323 / 8 are both 0.0404 ms per row, M = 1 is the weight
/// stream, so a row costs 0.0404 ms x 13.0 TFLOPS (the catalog's M3 Max) x 0.95 (the M3 Ultra's
/// fitted `compute_eff_dense`) / 89.1 M weights = 5.6 FLOPs per weight: 2 for the multiply-add
/// and 1.8 issue slots (2 FLOPs each) of unpacking, as the kernel's pre-scaled activations
/// leave it (a mask and a convert per weight). Assumed the same for 8-bit and MXFP4 codes.
pub const MLX_QMV_OPS_PER_ROW: f64 = 1.8;

/// How the runtime runs MLA attention (the engine options that change its cost).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MlaOptions {
    /// The cache holds per-head keys and values (llama.cpp without MLA metadata), not the latent.
    pub per_head_cache: bool,
    /// Multi-token steps expand the latent cache instead of absorbing the up-projections (mlx-lm).
    pub prefill_expanded: bool,
}

/// The cost model of one node: its peaks, its chip's and runtime's calibrated parameters, and
/// what it holds. Built by [`crate::engine::Plan::cost`]; all durations are nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct NodeCost<'a> {
    /// Peak memory bandwidth, bytes/s.
    pub mem_bw: f64,
    /// The fraction of `mem_bw` no stream exceeds: the node's measured sustained read over its
    /// spec (`hw::NodeSpec::read_ceiling`; 1 where no source measures it).
    pub read_ceiling: f64,
    /// Peak FP16 compute, FLOP/s.
    pub peak_flops: f64,
    /// The GPU's plain ALU peak, FLOP/s: `peak_flops` without neural accelerators (an M5's
    /// `mlx_gemm_tflops` is for matrix kernels only), under the same power cap.
    pub alu_flops: f64,
    /// The FP8 tensor-core peak an FP8 W8A8 GEMM issues at, FLOP/s (0: no FP8 path on this
    /// node and runtime, so FP8 weights run at `peak_flops` like any other format).
    pub fp8_flops: f64,
    /// Whether and when this runtime's attention gathers a sparse attention's top-k tokens
    /// rather than masking a dense pass.
    pub sparse_gather: SparseGather,
    /// Whether a linear-attention recurrence runs as MLX's `gated_delta` kernel (one
    /// sequential loop over the step's tokens, scalar ALU work: [`recurrence_alu_fraction`])
    /// rather than as llama.cpp's chunked delta-net of matrix multiplications.
    pub sequential_recurrence: bool,
    /// Whether the runtime's quantized matrix-vector kernel dequantises every weight once per
    /// row (MLX's Metal `qmv`, `MLX_QMV_OPS_PER_ROW`; not MLX's CPU or CUDA backends) and its
    /// tiled GEMM computes at least one whole tile of `DEQUANT_TOKEN_TILE` rows (MLX's `qmm`): a
    /// small batch runs whichever is cheaper, as MLX's batch limit chooses. Elsewhere
    /// (llama.cpp's multi-row `mul_mv`, CUDA's MMVQ) a GEMV of up to `GEMV_MAX_ROWS` rows
    /// dequantises once, hidden under the stream.
    pub per_row_matvec: bool,
    /// Operating system (the GPU<->CPU crossing off macOS is the fast one).
    pub os: Os,
    /// The chip's kernel efficiencies.
    pub chip: &'a ChipParams,
    /// The runtime's launch, scale and host costs on this chip.
    pub runtime: &'a RuntimeParams,
    /// Crossing costs.
    pub comm: &'a CommParams,
    /// Fraction of sharded weights (and heads) this node holds.
    pub shard: f64,
    /// Fraction of each MoE expert layer's weights this node holds (`shard`, but 1/N under
    /// data-parallel attention, whose other weights are whole).
    pub expert_shard: f64,
    /// Fraction of a GQA cache's KV heads this node holds: `shard`, or more where tensor
    /// parallelism outnumbers the KV heads and replicates them (`engine::plan::kv_head_share`).
    pub kv_shard: f64,
    /// Model hidden size (elementwise traffic per token).
    pub hidden: u64,
    /// How MLA attention runs.
    pub mla: MlaOptions,
    /// Whether the runtime uses the fast GPU<->CPU crossing (`MLX_METAL_FAST_SYNCH`).
    pub fast_sync: bool,
    /// Whether attention runs as a flash-attention kernel (llama.cpp's GPU backends): one pass
    /// over the KV cache per token per layer at the streaming rate of a weight GEMV, not at the
    /// chip's `bw_eff_attention` (MLX's SDPA).
    pub flash_attention: bool,
    /// A flash-attention kernel's FLOP rate as a fraction of the dense GEMM's
    /// (`[kernels] flash_compute_ratio`): its QK and PV products, in prefill.
    pub flash_compute_ratio: f64,
    /// Whether attention runs as llama.cpp runs it without flash attention (`-fa 0`): KQ and KQV
    /// as broadcast matrix multiplications around a soft-max over a materialised f32 score
    /// matrix ([`NodeCost::materialized_terms`]).
    pub materialized_attention: bool,
    /// Bytes per KV element relative to the model's bf16 cache (fp8 KV cache: 0.5).
    pub kv_byte_scale: f64,
    /// Ranks the MoE experts are spread over whole (expert parallel; 1 otherwise): a rank
    /// computes only the routed experts it holds, and the step waits for the busiest rank.
    pub expert_ranks: usize,
    /// Spread of log expert popularity (`[moe] expert_popularity_sigma`): how many
    /// distinct experts a batch of independently routed tokens reads.
    pub expert_skew: f64,
    /// How the runtime's MoE GEMM lays each expert's rows into tiles.
    pub expert_tile: ExpertRowTile,
    /// How the runtime's kernel launches add to its GPU time.
    pub launch: LaunchCost,
}

/// How a runtime's MoE GEMM (the routed experts' matrix multiply over a step of several rows)
/// lays each expert's rows into column tiles: a partial tile computes as a whole one, so an
/// expert holding few of the step's rows costs a full tile of FLOPs (first principles of a tiled
/// GEMM; the tile sizes are read from the kernels' sources).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExpertRowTile {
    /// The tile widths the kernel has, rows, ascending (empty: the runtime pays only the rows
    /// routed, no tile is modelled). The host picks one for the whole step from the step's row
    /// count, since it does not know each expert's share.
    pub widths: &'static [u64],
    /// Fewest rows in a step for which the tiled kernel runs (below it a matrix-vector kernel
    /// per expert does, with no padding).
    pub min_step_rows: u64,
    /// Whether 16-bit expert weights take the tiled path too (llama.cpp's MMQ covers only
    /// quantized types; f16/bf16 experts go to other kernels).
    pub covers_half: bool,
    /// Fewest token-expert rows (`rows x k`) in a step, and fewest per expert on average
    /// (`rows x k / experts`), for which the tiled kernel runs (0: no such condition).
    pub min_routed_rows: u64,
    /// See [`Self::min_routed_rows`].
    pub min_mean_rows_per_expert: u64,
    /// Token rows per dequantisation of a weight tile on the tiled path: each tile of an
    /// expert's rows dequantises the weights it multiplies again.
    pub dequant_rows: u64,
    /// Whether the host picks the width against the rows an expert holds on average (`rows x
    /// k / experts`) instead of the step's rows (both know only the step's shape).
    pub per_expert_choice: bool,
}

/// llama.cpp CUDA MMQ widths on a GPU with tensor cores (`mul_mat_q_case`: `mmq_x` in steps of
/// 8 up to 128, granularity 8 below 48 and 16 from 48, `mmq_get_granularity_host`).
const CUDA_MMQ_WIDTHS: &[u64] = &[8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128];
/// llama.cpp HIP MMQ widths on RDNA3/RDNA4 with WMMA (granularity 16 below 128, 32 at 128).
const ROCM_MMQ_WIDTHS: &[u64] = &[16, 32, 48, 64, 80, 96, 112, 128];

impl ExpertRowTile {
    /// No tile modelled: FLOPs follow the routed rows (the CUDA engines, MLX off Metal).
    pub const NONE: Self = Self { widths: &[], min_step_rows: u64::MAX, covers_half: false, ..Self::NO_ROUTED_MINIMUM };
    /// The fields the llama.cpp tiles share: no condition on the routed rows, dequantisation per
    /// [`DEQUANT_TOKEN_TILE`] rows.
    const NO_ROUTED_MINIMUM: Self = Self {
        widths: &[],
        min_step_rows: 0,
        covers_half: false,
        min_routed_rows: 0,
        min_mean_rows_per_expert: 0,
        dequant_rows: DEQUANT_TOKEN_TILE,
        per_expert_choice: false,
    };
    /// llama.cpp's CUDA MMQ on an NVIDIA GPU with tensor cores (build 6918, `mmq.cuh`
    /// `mul_mat_q_case`): the tile width `mmq_x` is the first of `CUDA_MMQ_WIDTHS` that takes
    /// the step's rows in the fewest tiles, chosen from the step's row count (`ncols_max =
    /// ne12`); every expert's rows then run in tiles of that width (`expert_bounds`). MoE steps
    /// of 2 or more rows take this path (`ggml_cuda_mul_mat_id`: one row goes to MMVQ);
    /// quantized types only.
    pub const CUDA_MMQ: Self = Self { widths: CUDA_MMQ_WIDTHS, min_step_rows: 2, covers_half: false, ..Self::NO_ROUTED_MINIMUM };
    /// llama.cpp's HIP (ROCm) MMQ on an AMD RDNA3/RDNA4 GPU, as built from December 2025
    /// (xllamacpp 0.2.7 to 0.2.12: `amd_wmma_available`, and `ggml_cuda_should_use_mmq` takes MMQ
    /// for every batch): the CUDA selection over `ROCM_MMQ_WIDTHS`, from 5 rows
    /// (`MMVQ_MMID_MAX_BATCH_SIZE` 4 run as mat-vec); quantized types only. Not modelled: the
    /// builds before (xllamacpp 0.2.5, 2025-11) ran steps of 64+ rows per expert through a
    /// dequantisation to f16 and hipBLAS (`ggml_cuda_mul_mat_id`'s fallback loop); their rows
    /// are read with these tiles.
    pub const ROCM_MMQ: Self = Self { widths: ROCM_MMQ_WIDTHS, min_step_rows: 5, covers_half: false, ..Self::NO_ROUTED_MINIMUM };
    /// [`Self::ROCM_MMQ`] as built from late September 2026 (xllamacpp 2026.9.11063, not yet in
    /// 2026.9.10809 of 2026-09-06: `ggml_cuda_mul_mat_q` in `mmq.cu`): on RDNA3 and RDNA4 the
    /// width is picked against the rows each expert sees on average, `ncols_opt = (ne12 x
    /// n_expert_used + ne02 - 1) / ne02` ("Each expert only sees ne12*n_expert_used/ne02 tokens
    /// on average. On RDNA3 and RDNA4 it is faster to pick the tile size against this value"),
    /// so a prompt spread over many experts runs narrow tiles, not 128-row ones mostly empty.
    /// NVIDIA GPUs keep the step's rows (`ncols_opt = ne12`).
    pub const ROCM_MMQ_PER_EXPERT: Self = Self { per_expert_choice: true, ..Self::ROCM_MMQ };
    /// llama.cpp's Metal `kernel_mul_mm_id` (build 6918, `ggml-metal-ops.cpp`): threadgroups of
    /// 32 rows per expert, used once a step has 32 rows or more (`ne21_mm_id_min`; below, the
    /// matrix-vector `mul_mv_id`); every weight type.
    pub const METAL_MM_ID: Self = Self { widths: &[32], min_step_rows: 32, covers_half: true, ..Self::NO_ROUTED_MINIMUM };
    /// llama.cpp's Vulkan `mul_mm` with `MUL_MAT_ID` on an AMD GPU (xllamacpp 0.2.4 and 0.2.12,
    /// `ggml-vulkan.cpp`): the small pipeline's 32-row tile up to 32 rows in the step, the
    /// medium one's 64 above (`ggml_vk_guess_matmul_id_pipeline`; the large 128-row pipeline is
    /// off on AMD, `mul_mat_id_l = false`); a workgroup per tile of an expert's rows, those past
    /// the expert's count exiting. Steps of up to 8 rows run the mat-vec `mul_mat_vec_id`
    /// (`ggml_vk_use_mul_mat_vec_id`, 2026 builds); every type.
    pub const VULKAN_MM_ID: Self = Self { widths: &[32, 64], min_step_rows: 9, covers_half: true, ..Self::NO_ROUTED_MINIMUM };
    /// MLX's sorted gather of quantized experts on Metal (`gather_qmm_rhs`, mlx-metal 0.32.4:
    /// every affine, MXFP4, NVFP4 and MXFP8 instance in its metallib is `bm_16_bn_32_bk_32`):
    /// each expert's rows in 16-row tiles (`schedule_row_tile`), the last one padded, and the
    /// weight tile dequantised again for each. mlx-lm sorts a step's rows by expert when it
    /// routes 64 or more token-expert rows (`SwitchGLU`: `do_sort = indices.size >= 64`,
    /// mlx-lm 0.32.2); MLX takes the sorted kernel when the experts get 4 or more rows on
    /// average (`GatherQMM::eval_gpu`, `B / E >= 4`: recalled from MLX's quantized.cpp, which
    /// the wheel does not ship; an assumption), else a matrix-vector kernel per row. Quantized
    /// experts only (bf16 experts run the steel `gather_mm`, 32- or 64-row tiles, not modelled).
    pub const MLX_GATHER_QMM: Self = Self {
        widths: &[16],
        min_step_rows: 1,
        covers_half: false,
        min_routed_rows: 64,
        min_mean_rows_per_expert: 4,
        dequant_rows: 16,
        per_expert_choice: false,
    };

    /// [`Self::width`] for a routed op of `experts` (total, chosen per token), under the
    /// kernel's conditions on the token-expert rows.
    pub fn width_routed(self, rows: u64, experts: Option<(u64, u64)>, family: crate::llm::KernelFamily) -> Option<u64> {
        let (e, k) = experts.unwrap_or((1, 1));
        let pairs = rows * k;
        if pairs < self.min_routed_rows || pairs < self.min_mean_rows_per_expert * e {
            return None;
        }
        let width = self.width(rows, family)?;
        // The step takes the tiled path by its own rows; the width follows the mean rows an
        // expert holds where the host picks it so.
        if self.per_expert_choice { self.fewest_tiles(pairs.div_ceil(e).max(1)) } else { Some(width) }
    }

    /// The tile width, rows, a step of `rows` rows runs its experts in (`None`: untiled): the
    /// first width that takes the step in the fewest tiles (llama.cpp's loop keeps a width only
    /// when it needs strictly fewer tiles than the ones before).
    pub fn width(self, rows: u64, family: crate::llm::KernelFamily) -> Option<u64> {
        let half = family == crate::llm::KernelFamily::Half;
        if rows < self.min_step_rows || (half && !self.covers_half) {
            return None;
        }
        self.fewest_tiles(rows)
    }

    /// The first width that takes `rows` in the fewest tiles (`None`: no widths, untiled).
    fn fewest_tiles(self, rows: u64) -> Option<u64> {
        let fewest = rows.div_ceil(*self.widths.last()?);
        self.widths.iter().copied().find(|&w| rows.div_ceil(w) == fewest)
    }
}

/// How a runtime's kernel launches cost, µs per kernel. MLX and llama.cpp pay `serial_us` on the
/// GPU's timeline per kernel (the encoded dispatch and its gap). A CUDA engine pays the GPU's
/// per-kernel gap (`graph_kernel_us`, what a graph replay costs) on the GPU's timeline, and,
/// when it launches from Python (`--enforce-eager`), `dispatch_us` per kernel on the host: CUDA
/// launches are asynchronous, so the host enqueues kernels while the GPU runs earlier ones and a
/// run of kernels takes the longer of the two timelines, not their sum (first principles: the
/// stream is a queue; FACTS-2026: eager costs a 4-Spark TP4 lane 22% of decode, where each GPU's
/// share of the work is small, while one Spark decodes gpt-oss-120b eager at 57.5 tok/s).
/// NCCL collectives are enqueued on the stream too, so on a single-node or tensor-parallel step
/// the host launches on through them and the step takes the longer of the GPU's whole timeline
/// and the host's launches (`Builder::dispatch_ahead`); a pipeline stage's launches join its own
/// GPU time (its inputs reach it through the host, `send_tensor_dict`'s metadata).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchCost {
    /// Per kernel on the GPU's timeline, µs.
    pub serial_us: f64,
    /// Per kernel on the host's timeline, overlapping the GPU's, µs (0: none).
    pub dispatch_us: f64,
    /// Per kernel of the host's build of the next step's graph, µs (0: none): MLX's lazy graph
    /// is built op by op on the host while the GPU runs the step before (`async_eval` keeps one
    /// step ahead, FACTS.md), so a node's step takes the longer of its GPU work and this build
    /// ([`crate::engine::Lowered::retime_rows`] adds what the build exceeds the GPU by).
    pub ahead_us: f64,
}

impl LaunchCost {
    /// A run of kernels whose GPU timeline takes `gpu_ns` and whose host dispatch takes
    /// `dispatch_ns`, ns: the longer of the two.
    pub fn join(gpu_ns: f64, dispatch_ns: f64) -> f64 {
        gpu_ns.max(dispatch_ns)
    }
}

/// The work one operation does on one node: bytes streamed from DRAM and floating-point
/// operations. What the power model charges energy for; the same byte and FLOP counts
/// [`NodeCost::op_ns`] divides by the achieved bandwidth and compute rate.
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

    /// Each field's ratio to `base`'s (1 where the base's is 0): how a nudged profile moves a
    /// step's bytes, FLOPs and issued FLOPs apart.
    pub fn ratio_to(self, base: Work) -> Work {
        let r = |a: f64, b: f64| if b > 0.0 { a / b } else { 1.0 };
        Work { bytes: r(self.bytes, base.bytes), flops: r(self.flops, base.flops), issued_flops: r(self.issued_flops, base.issued_flops) }
    }

    /// This work with each field scaled by its own factor in `k` (a [`Work::ratio_to`]).
    pub fn times(self, k: Work) -> Work {
        Work { bytes: self.bytes * k.bytes, flops: self.flops * k.flops, issued_flops: self.issued_flops * k.issued_flops }
    }
}

impl std::ops::AddAssign for Work {
    fn add_assign(&mut self, o: Work) {
        self.bytes += o.bytes;
        self.flops += o.flops;
        self.issued_flops += o.issued_flops;
    }
}

/// A weight kernel's streaming efficiency: the chip's efficiency for its class times the
/// kernel family's multiplier, never above 1. No kernel reads weights faster than the memory
/// delivers them, whatever a fit of a multiplier says (a GB10 MXFP4 multiplier fitted to 5.3 on
/// a batch-32 row the expert-coverage model cannot reach would otherwise read 4x faster than
/// the memory: a physically impossible prediction).
fn streaming_eff(class_eff: f64, kernel_mult: f64) -> f64 {
    (class_eff * kernel_mult).min(1.0)
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
    /// Dequantisation's ALU work in FLOP units (one instruction issue slot = one fused
    /// multiply-add = 2 FLOPs of the peak), issued beside `flops` on the same ALUs.
    dequant_flops: f64,
    /// The part of `dequant_flops` the power model does not charge: a matrix-vector kernel's
    /// first unpacking of each weight. No runtime's GEMV is charged for it (llama.cpp's and
    /// CUDA's are not modelled at all, and `pj_per_flop` is fitted without it), so runtimes
    /// compare alike at batch 1; MLX's repeat of it for every further row is charged.
    uncharged_flops: f64,
    compute_eff: f64,
    side_bytes: f64,
    side_bw_eff: f64,
}

/// The form an MLA attention takes in a step: the one decision both the launches and the bytes
/// and FLOPs of an op read.
#[derive(Clone, Copy, Debug)]
struct MlaForm {
    /// The per-head cache's shapes, when the cache is per head.
    per_head: Option<MlaPerHead>,
    /// The step expands the latent cache (multi-token, latent cache, expanding runtime).
    expanded: bool,
}

impl MlaForm {
    /// Kernels the form adds to `op`: the expanded form's rope-score matmul and its masking.
    fn extra_kernels(self, op: &Op) -> u32 {
        if self.expanded && op.mla_expanded.is_some() { 2 } else { 0 }
    }
}

impl NodeCost<'_> {
    /// Time for one operation of `tokens` rows after `context` cached tokens, ns (before
    /// jitter): the roofline of its terms plus its launches.
    pub fn op_ns(&self, op: &Op, tokens: u64, context: u64) -> f64 {
        self.op_ns_routed(op, tokens, context, tokens)
    }

    /// [`Self::op_ns`] when only `routed` of the `tokens` rows route on their own: the rows of
    /// identical sequences (`llama-batched-bench` before late September 2025 decoded token 0 in
    /// every sequence, FACTS.md) select the same experts, so a MoE layer reads the experts of
    /// `routed` tokens while its FLOPs still run over every row. Other ops ignore `routed`.
    pub fn op_ns_routed(&self, op: &Op, tokens: u64, context: u64, routed: u64) -> f64 {
        let bw = self.mem_bw * self.runtime.bw_scale;
        // No stream reads faster than the node's measured sustained read, whatever its fitted
        // efficiency and multipliers say (`read_ceiling`).
        let rate = |eff: f64| (bw * eff).min(self.mem_bw * self.read_ceiling);
        let peak = self.peak_flops * self.runtime.compute_scale;
        let c = self.terms(op, tokens, context, routed);
        let launch = self.launches_ns(c.kernels);
        let secs = if c.bw_eff > 0.0 {
            let side = if c.side_bytes > 0.0 { c.side_bytes / rate(c.side_bw_eff) } else { 0.0 };
            (c.bytes / rate(c.bw_eff)).max((c.flops + c.dequant_flops) / (peak * c.compute_eff)) + side
        } else {
            // Elementwise kernels: plain array traffic at the full bandwidth (the ceiling's).
            c.bytes / rate(1.0)
        };
        secs * 1e9 + launch
    }

    /// Kernel-launch part of [`Self::op_ns`], ns: what a batch pays once per kernel rather than
    /// once per sequence.
    pub fn launch_ns(&self, op: &Op, tokens: u64) -> f64 {
        self.launches_ns(self.kernels(op, tokens))
    }

    /// Bytes and FLOPs of one operation (the counts [`Self::op_ns`] times): what the power model
    /// charges energy for.
    pub fn op_work(&self, op: &Op, tokens: u64, context: u64) -> Work {
        self.op_work_routed(op, tokens, context, tokens)
    }

    /// [`Self::op_work`] with `routed` distinct routing rows (as in [`Self::op_ns_routed`]).
    pub fn op_work_routed(&self, op: &Op, tokens: u64, context: u64, routed: u64) -> Work {
        // Expert parallel: every rank is charged the ranks' mean work (1/R of the touched
        // experts, as tensor parallel reads); the busiest rank's sets the time
        // ([`Self::expert_parallel_terms`]) while the others read fewer experts and wait.
        if self.expert_ranks > 1 && op.class == OpClass::Expert {
            let mean = NodeCost { expert_ranks: 1, expert_shard: 1.0 / self.expert_ranks as f64, ..*self };
            return mean.op_work_routed(op, tokens, context, routed);
        }
        let c = self.terms(op, tokens, context, routed);
        let scale = self.runtime.compute_scale;
        let alu = c.flops + c.dequant_flops - c.uncharged_flops;
        let issued_flops = if alu > 0.0 { alu / (c.compute_eff * scale).max(1e-6) } else { 0.0 };
        Work { bytes: c.bytes + c.side_bytes, flops: c.flops, issued_flops }
    }

    /// One GPU<->CPU crossing, ns: the fast fence off macOS or when the runtime enables it, else
    /// MLX's default fence.
    pub fn sync_ns(&self) -> Time {
        let c = self.comm;
        us_to_ns(if self.os != Os::Macos || self.fast_sync { c.gpu_sync_fast_us } else { c.gpu_sync_default_us })
    }

    /// The runtime's host work after a forward in which `sequences` sequences sample, ns:
    /// `host_per_step_us + sequences x host_per_seq_us` (a `generate` step is one sequence).
    pub fn host_ns(&self, sequences: u64) -> Time {
        let rt = self.runtime;
        us_to_ns(rt.host_per_step_us + sequences as f64 * rt.host_per_seq_us)
    }

    /// A pipeline stage's own host and sync cost per forward (graph build, eval, wake-up), ns.
    pub fn stage_ns(&self) -> Time {
        us_to_ns(self.runtime.stage_us)
    }

    /// `kernels` launches on the GPU's timeline, ns.
    fn launches_ns(&self, kernels: u32) -> f64 {
        kernels as f64 * self.launch.serial_us * 1e3
    }

    /// The host's dispatch of one operation's kernels, ns: what overlaps the GPU's timeline
    /// ([`LaunchCost`]); 0 where the runtime pays its launches on the GPU's timeline.
    pub fn dispatch_ns(&self, op: &Op, tokens: u64) -> f64 {
        self.kernels(op, tokens) as f64 * self.launch.dispatch_us * 1e3
    }

    /// The host's build of one operation's kernels for the next step, ns ([`LaunchCost::ahead_us`]).
    pub fn ahead_ns(&self, op: &Op, tokens: u64) -> f64 {
        self.kernels(op, tokens) as f64 * self.launch.ahead_us * 1e3
    }

    /// Kernels one operation launches in a step of `tokens` rows (its own and its MLA form's).
    fn kernels(&self, op: &Op, tokens: u64) -> u32 {
        let materialized = if self.materializes(op) { MATERIALIZED_EXTRA_KERNELS } else { 0 };
        op.kernels + self.mla_form(op, tokens).extra_kernels(op) + materialized
    }

    /// Whether this node runs `op` as a materialised attention (a GQA or MHA layer's attention
    /// under `-fa 0`; MLA forms keep their own kernels).
    fn materializes(&self, op: &Op) -> bool {
        self.materialized_attention
            && op.class == OpClass::Attention
            && op.kv_heads > 0
            && op.kv_bytes_per_ctx > 0
            && op.mla_per_head.is_none()
            && op.mla_expanded.is_none()
    }

    /// How an MLA op runs a step of `tokens` rows (irrelevant, and inert, for other ops).
    fn mla_form(&self, op: &Op, tokens: u64) -> MlaForm {
        let per_head = op.mla_per_head.filter(|_| self.mla.per_head_cache);
        // A per-head cache is already expanded: the latent form's prefill choice does not apply.
        let expanded = tokens > 1 && self.mla.prefill_expanded && per_head.is_none();
        MlaForm { per_head, expanded }
    }

    /// The byte and FLOP counts of one operation and the efficiencies they run at: the one
    /// place [`Self::op_ns`] and [`Self::op_work`] read an operation's cost from.
    fn terms(&self, op: &Op, tokens: u64, context: u64, routed: u64) -> OpTerms {
        let shard = if op.placement == Placement::Sharded { self.shard } else { 1.0 };
        let mla = self.mla_form(op, tokens);
        let base = OpTerms { kernels: self.kernels(op, tokens), ..OpTerms::default() };
        match op.class {
            // The K and V projections follow the KV heads (replicated past them under vLLM).
            OpClass::Dense => self.dense_terms(op, tokens, context, op.weight_share(self.shard, self.kv_shard), mla, base),
            OpClass::Expert => {
                let shard = if op.placement == Placement::Sharded { self.expert_shard } else { 1.0 };
                self.expert_terms(op, tokens, routed.min(tokens), shard, base)
            }
            OpClass::Attention if self.materializes(op) => self.materialized_terms(op, tokens, context, shard, base),
            OpClass::Attention => self.attention_terms(op, tokens, context, shard, mla, base),
            OpClass::Recurrent => self.recurrent_terms(op, tokens, shard, base),
            OpClass::Elementwise => OpTerms { bytes: op.kernels as f64 * tokens as f64 * self.hidden as f64 * 4.0, ..base },
            OpClass::AllSum => base,
        }
    }

    /// A dense GEMV (one row) or GEMM (a chunk): the weights once, 2 FLOPs per weight per row.
    /// The efficiency per byte does not depend on how many bytes the node holds, so a node
    /// holding 1/N of the weights streams them in exactly 1/N of the time: no split can beat
    /// one node per byte (the working-set term that did, issue 20, is gone).
    fn dense_terms(&self, op: &Op, tokens: u64, context: u64, shard: f64, mla: MlaForm, base: OpTerms) -> OpTerms {
        let (chip, rt) = (self.chip, self.runtime);
        // The expanded MLA form runs the latent up-projections over the whole cache.
        let rows = if mla.expanded && op.expands_latent { context + tokens } else { tokens };
        let weights = op.params as f64 * shard;
        let (flops, dequant_flops, uncharged_flops) = self.matmul_alu(op, weights, rows as f64);
        OpTerms {
            bytes: op.weight_bytes(op.params as f64) * shard,
            bw_eff: streaming_eff(chip.bw_eff_dense, rt.kernel_bw_mult(op.format.kernel)),
            flops,
            dequant_flops,
            uncharged_flops,
            compute_eff: chip.compute_eff_dense * self.precision_gain(op),
            ..base
        }
    }

    /// ALU work of one dense matmul of `weights` over `rows` token rows, FLOP units of the
    /// op's peak: (multiply-add FLOPs, dequantisation FLOPs, the part of those the power model
    /// does not charge). A GEMM's, unless the runtime dequantises per row in its matrix-vector
    /// kernel ([`Self::per_row_matvec`]): then a quantized step of fewer rows than a tile runs
    /// as the cheaper of that kernel (every row unpacks every weight again, on the plain ALUs)
    /// and one whole tile of the GEMM. Both grow with the rows or stay flat, so a step never
    /// gets cheaper with more rows.
    fn matmul_alu(&self, op: &Op, weights: f64, rows: f64) -> (f64, f64, f64) {
        let tile = DEQUANT_TOKEN_TILE as f64;
        if self.per_row_matvec && rows < tile && self.alu_flops > 0.0 {
            let ops = self.runtime.dequant_ops(op.format.kernel);
            if ops > 0.0 {
                // The matrix-vector kernel issues on the plain ALUs (not an M5's matrix units).
                let alu_scale = self.peak_flops / self.alu_flops;
                let unpack_per_row = 2.0 * MLX_QMV_OPS_PER_ROW * weights * alu_scale;
                let matvec = (2.0 * weights * rows * alu_scale, unpack_per_row * rows, unpack_per_row);
                let padded = (2.0 * weights * tile, 2.0 * ops * weights, 0.0);
                return if matvec.0 + matvec.1 <= padded.0 + padded.1 { matvec } else { padded };
            }
        }
        (2.0 * weights * rows, self.dequant_flops(op, weights, rows, 1.0), 0.0)
    }

    /// Dequantisation's ALU work in a multi-row GEMM, FLOP units: `matrices` weight matrices of
    /// `weights` each, every weight dequantised once per tile of [`DEQUANT_TOKEN_TILE`] of the
    /// `rows` token rows, at the format family's instructions per weight (2 FLOPs of the peak
    /// per instruction slot). A GEMM's FLOPs grow with the rows while its dequantisation grows
    /// with the tiles, so the cost is a near-constant fraction `ops / tile` of a long prefill.
    /// Matrix-vector steps (decode, batches up to [`GEMV_MAX_ROWS`] rows) pay none: the kernel
    /// dequantises in registers while it waits on the weight stream, which bounds it (FACTS.md:
    /// decode is memory-bound); not modelled is a GEMV whose dequantisation outruns the stream.
    fn dequant_flops(&self, op: &Op, weights: f64, rows: f64, matrices: f64) -> f64 {
        self.dequant_flops_per(op, weights, rows, matrices, DEQUANT_TOKEN_TILE)
    }

    /// [`Self::dequant_flops`] with the weights dequantised once per `tile_rows` token rows.
    fn dequant_flops_per(&self, op: &Op, weights: f64, rows: f64, matrices: f64, tile_rows: u64) -> f64 {
        let ops = self.runtime.dequant_ops(op.format.kernel);
        if rows <= GEMV_MAX_ROWS || ops == 0.0 {
            return 0.0;
        }
        let tiles = (rows / tile_rows as f64).ceil();
        2.0 * ops * weights * matrices * tiles
    }

    /// How much faster than `peak_flops` the op's GEMM issues: the FP8 tensor-core peak over
    /// the 16-bit one for FP8 W8A8 weights where the node and runtime have an FP8 path, else 1.
    /// The chip's GEMM efficiencies apply to both peaks alike (assumption: no row measures a
    /// CUDA engine's FP8 efficiency apart from its 16-bit one).
    fn precision_gain(&self, op: &Op) -> f64 {
        if op.format.kernel == crate::llm::KernelFamily::Fp8 && self.fp8_flops > self.peak_flops && self.peak_flops > 0.0 {
            self.fp8_flops / self.peak_flops
        } else {
            1.0
        }
    }

    /// Routed experts (gather GEMV/GEMM): the experts the step's `routed` distinct tokens touch
    /// (each expert's weights stream once per step, whatever rows it serves), 2 FLOPs per
    /// active weight per token.
    fn expert_terms(&self, op: &Op, tokens: u64, routed: u64, shard: f64, base: OpTerms) -> OpTerms {
        let (chip, rt) = (self.chip, self.runtime);
        let touched = op.experts_touched_skewed(routed, self.expert_skew);
        if self.expert_ranks > 1 {
            return self.expert_parallel_terms(op, tokens, touched, base);
        }
        // Each touched expert's GEMM runs over the rows routed to it: `tokens x k / touched`.
        let active = op.experts.map_or(1, |(_, k)| k) as f64;
        let rows_per_expert = tokens as f64 * active / touched.max(1e-9);
        let routed_flops = 2.0 * op.active_params() as f64 * shard * tokens as f64;
        // A tiled MoE GEMM computes whole tiles: each expert's rows rounded up to the tile.
        // Rows of identical sequences (`routed` < `tokens`) count `tokens / routed` times.
        let width = self.expert_tile.width_routed(tokens, op.experts, op.format.kernel);
        let tiled_flops = width.map_or(0.0, |width| {
            let tile_in_routed = width as f64 * routed as f64 / tokens as f64;
            2.0 * op.params as f64 * shard * width as f64 * op.expert_row_tiles(routed, self.expert_skew, tile_in_routed)
        });
        // The tiled path dequantises each weight tile once per tile of rows (its own count).
        let dequant_rows = if width.is_some() { self.expert_tile.dequant_rows } else { DEQUANT_TOKEN_TILE };
        OpTerms {
            bytes: op.weight_bytes(op.params as f64) * touched * shard,
            bw_eff: streaming_eff(chip.bw_eff_expert, rt.kernel_bw_mult(op.format.kernel)),
            flops: routed_flops.max(tiled_flops),
            dequant_flops: self.dequant_flops_per(op, op.params as f64 * shard, rows_per_expert, touched, dequant_rows),
            compute_eff: chip.compute_eff_expert * self.precision_gain(op),
            ..base
        }
    }

    /// Routed experts under expert parallelism, on the busiest rank (the step waits for it at
    /// the MoE layer's combine): that rank streams the whole experts it holds among those the
    /// step touches, [`busiest_rank_experts`], and computes the rows routed to them (each touched
    /// expert serves `tokens x k / touched` rows, as in [`Self::expert_terms`]).
    fn expert_parallel_terms(&self, op: &Op, tokens: u64, touched: f64, base: OpTerms) -> OpTerms {
        let (chip, rt) = (self.chip, self.runtime);
        let experts = op.experts.map_or(1, |(e, _)| e);
        let busiest = busiest_rank_experts(experts, touched, self.expert_ranks);
        let active = op.experts.map_or(1, |(_, k)| k) as f64;
        let rows_per_expert = tokens as f64 * active / touched.max(1e-9);
        OpTerms {
            bytes: op.weight_bytes(op.params as f64) * busiest,
            bw_eff: streaming_eff(chip.bw_eff_expert, rt.kernel_bw_mult(op.format.kernel)),
            flops: 2.0 * op.params as f64 * rows_per_expert * busiest,
            dequant_flops: self.dequant_flops(op, op.params as f64, rows_per_expert, busiest),
            compute_eff: chip.compute_eff_expert * self.precision_gain(op),
            ..base
        }
    }

    /// A linear-attention recurrence (Gated DeltaNet) for one sequence: its own small weights,
    /// and its fixed state read once and written once per step, whatever the step's tokens (MLX's
    /// `gated_delta` kernel keeps the state in registers across them, FACTS-2026 section C), at
    /// the attention bandwidth efficiency; its FLOPs per token at the attention compute
    /// efficiency. Not modelled: the kernel runs the tokens one after another and uses no
    /// matrix units, so a long prefill step is slower than this roofline.
    fn recurrent_terms(&self, op: &Op, tokens: u64, shard: f64, base: OpTerms) -> OpTerms {
        let chip = self.chip;
        // MLX's kernel: the tokens one after another, each step's FLOPs on the plain ALUs (no
        // matrix units, so not an M5's GEMM peak) at the issue fraction its instruction mix
        // allows; the step's parallelism B x Hv x Dv x 32 threads (131k for one Qwen3-Next
        // sequence) fills the GPU, so the steps run at that rate, O(T) per prefill chunk.
        // llama.cpp's chunked form runs as matrix multiplications: the attention kernels' rate.
        let compute_eff = if self.sequential_recurrence && !op.recurrence_chunked && self.peak_flops > 0.0 {
            recurrence_alu_fraction(op.recurrence_key_dim) * self.alu_flops / self.peak_flops
        } else {
            chip.compute_eff_attention
        };
        OpTerms {
            // The state is a contiguous fp32 array, each thread's Dk/32 entries adjacent: read
            // once and written once per call as a plain stream (FACTS-2026 C), at the rate a
            // weight GEMV streams.
            bytes: (op.weight_bytes(op.params as f64) + 2.0 * op.state_bytes as f64) * shard,
            bw_eff: chip.bw_eff_dense,
            flops: op.recurrence_flops_per_token as f64 * shard * tokens as f64,
            compute_eff,
            ..base
        }
    }

    /// Attention as llama.cpp runs it without flash attention (`-fa 0`; llama.cpp 0.2.76's
    /// `llm_build_kqv`, read in llama-cpp-python's vendored copy of 2024-05-24; unchanged in
    /// xllamacpp 2026.9.11063's `build_attn_mha`): `kq = mul_mat(k, q)` over the whole cache
    /// (masked columns included), `soft_max_ext` into a new f32 tensor, `kqv = mul_mat(v, kq)`,
    /// then the heads' permute and copy. A matrix multiplication broadcasts each KV head over
    /// its group of query heads by indexing (ggml-metal `kernel_mul_mv_f16_f32`, one threadgroup
    /// plane per query head), so each query head streams its KV head's K and V again: the
    /// cache's bytes times the group size, at the dense streaming rate. The score matrix,
    /// query heads x step tokens x cached tokens in f32, is written by KQ, read and written by
    /// the soft-max and read by KQV: four passes, also streamed. The products run at the dense
    /// GEMM's rate (no flash-attention ratio). Measured (not a row, its notes): Llama 3 70B
    /// Q4_K_M on an M2 Ultra with llama-bench of May 2024 (`-fa` default off) generates 512
    /// tokens at 12.48 tok/s and 8,192 at 9.34, where one pass over the cache would lose ~3%.
    fn materialized_terms(&self, op: &Op, tokens: u64, context: u64, shard: f64, base: OpTerms) -> OpTerms {
        let chip = self.chip;
        let t = tokens as f64;
        let kv_tokens = op.effective_context(context + tokens) as f64;
        let mean_ctx = op.effective_context(context + tokens.div_ceil(2)) as f64;
        // K and V of f16 (2 bytes each) per KV head and token: `kv_bytes_per_ctx / kv_heads / 4`
        // elements per head; the FLOPs per context token are 4 x query heads x head size.
        let query_heads = op.attn_flops_per_ctx as f64 * op.kv_heads as f64 / op.kv_bytes_per_ctx as f64;
        let group = (query_heads / op.kv_heads as f64).max(1.0);
        let kv_share = if op.kv_sharded { op.kv_share(shard, self.kv_shard) } else { 1.0 };
        OpTerms {
            bytes: op.kv_bytes_per_ctx as f64 * kv_tokens * kv_share * self.kv_byte_scale * group,
            bw_eff: chip.bw_eff_dense,
            flops: op.attn_flops_per_ctx as f64 * shard * t * mean_ctx,
            compute_eff: chip.compute_eff_dense,
            side_bytes: SCORE_PASSES * 4.0 * query_heads * shard * t * kv_tokens,
            side_bw_eff: chip.bw_eff_dense,
            ..base
        }
    }

    /// Attention at depth: the KV cache up to the step's last token once, FLOPs per query token
    /// over its mean context; the expanded MLA form adds the rope-score mask's traffic.
    fn attention_terms(&self, op: &Op, tokens: u64, context: u64, shard: f64, mla: MlaForm, base: OpTerms) -> OpTerms {
        let chip = self.chip;
        let t = tokens as f64;
        // The cached tokens a query at `ctx` reads: its window or chunk, and of a sparse
        // attention the top k where the runtime's kernel gathers them.
        let attended = |ctx: u64| {
            let ctx = op.effective_context(ctx);
            match op.sparse_top_k {
                Some(k) if self.sparse_gather.gathers(tokens, context + tokens, k) => ctx.min(k),
                _ => ctx,
            }
        };
        // The cache splits by KV head (replicated past tp = kv_heads); a per-head MLA cache by
        // query head. The FLOPs follow the query heads, which always split (`shard`).
        let kv_share = match (mla.per_head.is_some(), op.kv_sharded) {
            (true, _) => shard,
            (false, true) => op.kv_share(shard, self.kv_shard),
            (false, false) => 1.0,
        };
        let kv_tokens = attended(context + tokens) as f64;
        // llama.cpp's GPU backends (CUDA, Vulkan, Metal) decode with flash attention: one pass
        // over the KV cache per token per layer, near memory bandwidth (FACTS.md, Runtimes and
        // kernels), i.e. a plain stream like a weight GEMV's: the chip's dense efficiency. MLX's
        // attention runs at the chip's attention efficiency (FACTS.md: ~25-28% of peak), decode
        // included. Its long-cache decode kernel (`sdpa_vector_2pass_1`, mlx-metal 0.32.4
        // `kernels/sdpa_vector.h`: one threadgroup per KV head and block, the GQA group's
        // query heads sharing each load) suggests a stream like flash attention's, but the one
        // published pair on one machine says otherwise: MiniMax-M2.1 at 30k context on one
        // M3 Ultra decodes at 25 tok/s under LM Studio's MLX and 32 under its llama.cpp with
        // flash attention (mlx-lm issue 763), with ~5.9 GB of weights and ~7.4 GB of KV per
        // token each, so MLX reads the KV slower than the flash-attention stream. Streaming it
        // at the dense rate was tried (2026-12-04): the refit then lowered the M3 Ultra's dense
        // bandwidth to 0.63 (dense 70B decode -18 to -20%) and `--cv row` decode error rose
        // from 12.0% to 12.9%. The true MLX rate lies between; no source measures it.
        let kv_bw_eff = if self.flash_attention { chip.bw_eff_dense } else { chip.bw_eff_attention };
        let mean_ctx = attended(context + tokens.div_ceil(2)) as f64;
        let (flops_per_ctx, score_bytes_per_ctx, kv_per_ctx) = match (mla.per_head, op.mla_expanded) {
            (Some(p), _) => (p.attn_flops_per_ctx, 0, p.kv_bytes_per_ctx),
            (None, Some(x)) if mla.expanded => (x.attn_flops_per_ctx, x.score_bytes_per_ctx, op.kv_bytes_per_ctx),
            _ => (op.attn_flops_per_ctx, 0, op.kv_bytes_per_ctx),
        };
        OpTerms {
            bytes: kv_per_ctx as f64 * kv_tokens * kv_share * self.kv_byte_scale,
            bw_eff: kv_bw_eff,
            flops: flops_per_ctx as f64 * shard * t * mean_ctx,
            // A flash-attention kernel's QK and PV products are tiled matrix multiplies on the
            // same units as the weight GEMMs: the dense compute efficiency, as its decode read
            // takes the dense stream's (2026-12-06: `--cv row` 9.71 -> 9.48%, `--cv model`
            // 14.40 -> 13.71% on common rows; MLX's SDPA keeps the chip's attention efficiency,
            // which only MLX rows then move), times the ratio every chip shares: between each
            // tile's two products the kernel runs its online softmax (row max, exp, rescale of
            // the running output), which a GEMM never waits for. FlashAttention-2 (Dao, 2023,
            // arXiv 2307.08691) reaches 50-73% of the A100's peak where GEMMs reach 80-90%: a
            // ratio near 0.72, the prior. The published depth pairs (llama-bench pp512/pp4096
            // on the M3 Ultra, pp512/pp8192 on the M2 Ultra, pp2048 at d0 and d32768 on the
            // GB10) all slow more with depth than the GEMM's rate gives; one ratio across chips
            // is what carries to a chip or a depth no row measures (2026-12-06).
            compute_eff: if self.flash_attention { chip.compute_eff_dense * self.flash_compute_ratio } else { chip.compute_eff_attention },
            // The rope-score mask streams through memory in its own kernels, before the
            // attention kernel: plain array traffic, at the dense bandwidth efficiency.
            side_bytes: score_bytes_per_ctx as f64 * shard * t * mean_ctx,
            side_bw_eff: chip.bw_eff_dense,
            ..base
        }
    }
}

/// Kernels a materialised attention launches beyond a flash-attention kernel: KQ, the soft-max
/// and KQV in place of the one fused kernel, plus the copy that lays the heads out again.
const MATERIALIZED_EXTRA_KERNELS: u32 = 3;

/// Passes over a materialised attention's f32 score matrix: KQ writes it, the soft-max reads it
/// and writes its own, KQV reads that.
const SCORE_PASSES: f64 = 4.0;

/// When a runtime's attention kernel gathers a sparse attention's top-k tokens (reading and
/// multiplying only those) instead of running dense attention under a top-k mask (same
/// result, the dense cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseGather {
    /// In one-token (decode) steps only: mlx-lm 0.32.2 `deepseek_v32.py` gathers the selected
    /// latent rows when `L == 1` and masks a dense attention for a multi-token chunk.
    Decode,
    /// Once the cache holds at least `max(4096, 2 k)` tokens: llama.cpp's sparse flash-attention
    /// path (`ggml_cuda_flash_attn_ext_mma_f16_shall_use_sparse`, `fattn.cu`, as vendored in
    /// xllamacpp 2026.10.11549), prefill and decode; below, dense under the mask. Assumption:
    /// its Metal and Vulkan sparse kernels (present, not read) switch alike.
    LongCache,
    /// Always (assumption: vLLM's and SGLang's DSA backends run sparse kernels; not read).
    Always,
}

impl SparseGather {
    /// Whether a step of `tokens` query tokens per sequence, ending at `context` cached tokens,
    /// gathers a top-`k` selection.
    pub fn gathers(self, tokens: u64, context: u64, k: u64) -> bool {
        match self {
            SparseGather::Decode => tokens == 1,
            SparseGather::LongCache => context >= 4096.max(2 * k),
            SparseGather::Always => true,
        }
    }
}

/// The fraction of the ALU peak MLX's `gated_delta` kernel turns into counted FLOPs, from its
/// instruction mix per token (FACTS-2026 C: each of the 32 lanes of a value row keeps `n =
/// Dk/32` state entries in registers): per entry the decay (a multiply), the `k . S` product,
/// the delta-rule update and the `q . S` output (three fused multiply-adds): 4 issue slots for
/// the 7 FLOPs [`crate::llm::LinearAttention::flops_per_token`] counts; per token two 32-lane
/// reductions (`simd_sum`: 5 shuffle-and-add stages, 2 slots each) and the delta `(v - kS) b`
/// (2 slots). A slot is 2 FLOPs of the peak: `7n / (2 (4n + 22))`, 0.368 at Dk = 128. Loads
/// go to the memory pipe and are not counted. 0 key dim (not a GDN op): the 7/8 limit.
pub fn recurrence_alu_fraction(key_dim: u64) -> f64 {
    let n = (key_dim as f64 / 32.0).max(1.0);
    if key_dim == 0 {
        return 7.0 / 8.0;
    }
    7.0 * n / (2.0 * (4.0 * n + 22.0))
}

/// The expected number of touched experts on the busiest of `ranks` ranks, when `touched` of
/// `experts` experts are touched and each rank holds ceil(experts / ranks) whole experts (vLLM
/// `determine_expert_map` gives the remainder to the first ranks).
///
/// Assumption (uniform routing, as [`crate::llm::Op::experts_touched`]): each expert is touched
/// with probability q = touched / experts, independently, so a rank's count is Binomial(m, q)
/// and E[max of R] = sum over x < m of (1 - F(x)^R). Independence overstates the spread of a
/// single token's k distinct picks a little (4 experts over 2 ranks of 2: 1.375 against the
/// exact 1.333). One rank: `touched`.
pub fn busiest_rank_experts(experts: u64, touched: f64, ranks: usize) -> f64 {
    if ranks <= 1 {
        return touched;
    }
    let m = experts.div_ceil(ranks as u64);
    let q = (touched / experts as f64).clamp(0.0, 1.0);
    if q <= 0.0 || q >= 1.0 {
        return q * m as f64;
    }
    // Binomial(m, q) pmf by the ratio p(x+1) = p(x) (m - x) / (x + 1) q / (1 - q).
    let mut pmf = (1.0 - q).powf(m as f64);
    let mut cdf = 0.0;
    let mut expected_max = 0.0;
    for x in 0..m {
        cdf += pmf;
        expected_max += 1.0 - cdf.min(1.0).powi(ranks as i32);
        pmf *= (m - x) as f64 / (x + 1) as f64 * q / (1.0 - q);
    }
    expected_max
}

#[cfg(test)]
mod tests {
    //! One hand-checkable node: 1 TB/s, 100 TFLOP/s, round efficiencies, 10 us launches.
    #[test]
    fn no_weight_kernel_streams_faster_than_memory() {
        assert_eq!(super::streaming_eff(0.8, 5.29), 1.0);
        assert_eq!(super::streaming_eff(0.8, 0.5), 0.4);
    }

    use std::collections::BTreeMap;

    use super::*;
    use crate::llm::{MlaExpanded, TensorRole};

    fn chip() -> ChipParams {
        ChipParams {
            bw_eff_dense: 0.5,
            bw_eff_expert: 0.25,
            bw_eff_attention: 0.8,
            compute_eff_dense: 0.5,
            compute_eff_expert: 0.25,
            compute_eff_attention: 0.4,
            pj_per_byte: 0.0,
            pj_per_flop: 0.0,
            cpu_core_w: 0.0,
            runtimes: BTreeMap::new(),
            engines: BTreeMap::new(),
        }
    }

    fn runtime() -> RuntimeParams {
        RuntimeParams {
            kernel_launch_us: 10.0,
            host_per_step_us: 200.0,
            host_per_seq_us: 50.0,
            bw_scale: 1.0,
            compute_scale: 1.0,
            stage_us: 300.0,
            bw_mult_half: 1.0,
            bw_mult_8bit: 1.0,
            bw_mult_mxfp4: 1.0,
            bw_mult_nvfp4: 1.0,
            bw_mult_fp8: 1.0,
            graph_kernel_us: 0.0,
            host_per_kernel_us: 0.0,
            dequant_ops_kquant: 0.0,
            dequant_ops_legacy: 0.0,
            dequant_ops_mxfp4: 0.0,
            dequant_ops_affine: 0.0,
        }
    }

    fn comm() -> CommParams {
        let mut c = crate::profile::Profile::default_profile().comm;
        c.gpu_sync_default_us = 180.0;
        c.gpu_sync_fast_us = 4.0;
        c
    }

    fn node<'a>(chip: &'a ChipParams, runtime: &'a RuntimeParams, comm: &'a CommParams) -> NodeCost<'a> {
        NodeCost {
            mem_bw: 1e12,
            read_ceiling: 1.0,
            peak_flops: 1e14,
            alu_flops: 1e14,
            fp8_flops: 0.0,
            sparse_gather: SparseGather::Always,
            sequential_recurrence: false,
            per_row_matvec: false,
            os: Os::Macos,
            chip,
            runtime,
            comm,
            shard: 1.0,
            expert_shard: 1.0,
            kv_shard: 1.0,
            hidden: 64,
            mla: MlaOptions::default(),
            launch: LaunchCost { serial_us: runtime.kernel_launch_us, dispatch_us: 0.0, ahead_us: 0.0 },
            fast_sync: false,
            flash_attention: false,
            flash_compute_ratio: 1.0,
            materialized_attention: false,
            kv_byte_scale: 1.0,
            expert_ranks: 1,
            expert_skew: 0.0,
            expert_tile: ExpertRowTile::NONE,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// A bf16 dense op of 1e9 weights: 2 GB.
    fn dense(placement: Placement) -> Op {
        Op::dense("w", TensorRole::Mlp, 1_000_000_000, placement)
    }

    #[test]
    fn a_dense_gemv_streams_its_weights_at_the_dense_efficiency_plus_one_launch() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        // 2e9 bytes / (1e12 x 0.5) = 4 ms; 2e9 FLOPs / (1e14 x 0.5) = 40 us: memory-bound.
        assert!(close(n.op_ns(&dense(Placement::Replicated), 1, 0), 4_000_000.0 + 10_000.0));
        assert_eq!(n.launch_ns(&dense(Placement::Replicated), 1), 10_000.0);
        // Half the sharded weights on this node: half the bytes.
        let half = NodeCost { shard: 0.5, ..n };
        assert!(close(half.op_ns(&dense(Placement::Sharded), 1, 0), 2_000_000.0 + 10_000.0));
        assert!(close(half.op_ns(&dense(Placement::Replicated), 1, 0), 4_000_000.0 + 10_000.0));
    }

    #[test]
    fn an_eager_cuda_launch_runs_on_the_host_beside_the_gpu() {
        let (c, r, m) = (chip(), runtime(), comm());
        // A CUDA engine run eagerly: 1 us per kernel on the GPU, 20 us of Python per kernel on
        // the host. One kernel of a 4 ms GEMV: the GPU's timeline is 4.001 ms, the host's
        // 0.02 ms, so the op takes the GPU's; a run of 300 such launches on a 1 ms GPU
        // timeline takes the host's 6 ms.
        let eager = NodeCost { launch: LaunchCost { serial_us: 1.0, dispatch_us: 20.0, ahead_us: 0.0 }, ..node(&c, &r, &m) };
        let op = dense(Placement::Replicated);
        assert!(close(eager.op_ns(&op, 1, 0), 4_000_000.0 + 1_000.0));
        assert_eq!(eager.launch_ns(&op, 1), 1_000.0);
        assert_eq!(eager.dispatch_ns(&op, 1), 20_000.0);
        assert_eq!(LaunchCost::join(eager.op_ns(&op, 1, 0), eager.dispatch_ns(&op, 1)), eager.op_ns(&op, 1, 0));
        assert_eq!(LaunchCost::join(1_000_000.0, 300.0 * eager.dispatch_ns(&op, 1)), 6_000_000.0);
        // MLX and llama.cpp pay their launches on the GPU's timeline and dispatch nothing aside.
        assert_eq!(node(&c, &r, &m).dispatch_ns(&op, 1), 0.0);
    }

    #[test]
    fn a_dense_gemm_over_a_long_chunk_is_compute_bound() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        // 1000 rows: 2e12 FLOPs / (1e14 x 0.5) = 40 ms, over the 4 ms weight stream.
        assert!(close(n.op_ns(&dense(Placement::Replicated), 1000, 0), 40_000_000.0 + 10_000.0));
        // The runtime's compute scale doubles the peak.
        let fast = RuntimeParams { compute_scale: 2.0, ..runtime() };
        assert!(close(node(&c, &fast, &m).op_ns(&dense(Placement::Replicated), 1000, 0), 20_000_000.0 + 10_000.0));
    }

    #[test]
    fn an_fp8_gemm_issues_at_the_fp8_tensor_peak_where_the_node_has_one() {
        let (c, r, m) = (chip(), runtime(), comm());
        let mut op = dense(Placement::Replicated);
        op.format = crate::llm::TensorFormat { bits: 8.0, kernel: crate::llm::KernelFamily::Fp8 };
        // No FP8 path: 2e12 FLOPs / (1e14 x 0.5) = 40 ms, as a 16-bit GEMM.
        assert!(close(node(&c, &r, &m).op_ns(&op, 1000, 0), 40_000_000.0 + 10_000.0));
        // An FP8 peak of 2.5e14: 2e12 / (2.5e14 x 0.5) = 16 ms; the bytes (1 GB at 0.5 TB/s =
        // 2 ms) and a one-row GEMV are unchanged; a bf16 GEMM keeps the 16-bit peak.
        let fp8 = NodeCost { fp8_flops: 2.5e14, ..node(&c, &r, &m) };
        assert!(close(fp8.op_ns(&op, 1000, 0), 16_000_000.0 + 10_000.0));
        assert!(close(fp8.op_ns(&op, 1, 0), 2_000_000.0 + 10_000.0));
        assert!(close(fp8.op_ns(&dense(Placement::Replicated), 1000, 0), 40_000_000.0 + 10_000.0));
        // The power model charges the issued work at the faster rate: 2e12 / (0.5 x 2.5).
        assert!(close(fp8.op_work(&op, 1000, 0).issued_flops, 2e12 / 1.25));
    }

    #[test]
    fn a_quantized_gemm_adds_its_dequantisation_once_per_token_tile_and_a_gemv_none() {
        let (c, m) = (chip(), comm());
        let r = RuntimeParams { dequant_ops_kquant: 4.0, ..runtime() };
        let n = node(&c, &r, &m);
        let mut op = dense(Placement::Replicated);
        op.format = crate::llm::TensorFormat { bits: 4.5, kernel: crate::llm::KernelFamily::KQuant };
        // 1000 rows = 32 tiles of 32: 2e12 FLOPs + 2 x 4 x 1e9 x 32 = 2.256e12 FLOP units over
        // 5e13 FLOP/s = 45.12 ms (the 16-bit weights would take 40 ms: 12.8% slower, 8/64 per
        // full tile).
        assert!(close(n.op_ns(&op, 1000, 0), 45_120_000.0 + 10_000.0));
        // A 16-bit matrix pays none; neither does a one-row GEMV (memory-bound: 0.5625 GB at
        // 0.5 TB/s = 1.125 ms).
        assert!(close(n.op_ns(&dense(Placement::Replicated), 1000, 0), 40_000_000.0 + 10_000.0));
        assert!(close(n.op_ns(&op, 1, 0), 1_125_000.0 + 10_000.0));
        // Eight rows still run the matrix-vector kernel: the stream (1.125 ms) beats 1.6e10 /
        // 5e13 = 0.32 ms of FLOPs, and no dequantisation is added.
        assert!(close(n.op_ns(&op, 8, 0), 1_125_000.0 + 10_000.0));
        // The issued ALU work the power model charges includes it; the FLOPs do not.
        let w = n.op_work(&op, 1000, 0);
        assert_eq!(w.flops, 2e12);
        assert!(close(w.issued_flops, 2.256e12 / 0.5));
    }

    #[test]
    fn an_mlx_quantized_matvec_pays_every_row_on_the_alus_as_facts_m3_max_kernel_does() {
        // FACTS.md: an M3 Max (400 GB/s, 13.0 TFLOPS in the catalog), 5120x17408 4-bit:
        // M = 1 / 4 / 8 rows 0.129 / 0.165 / 0.323 ms. The stream's efficiency is set to the
        // single-row figure; the rows' cost is the model's.
        let m = comm();
        let c = ChipParams { compute_eff_dense: 0.946, bw_eff_dense: 0.97, ..chip() };
        let r = RuntimeParams { dequant_ops_affine: 4.0, kernel_launch_us: 0.0, ..runtime() };
        let n = NodeCost { mem_bw: 400e9, peak_flops: 13.0e12, alu_flops: 13.0e12, per_row_matvec: true, ..node(&c, &r, &m) };
        let mut op = Op::dense("w", TensorRole::Mlp, 5120 * 17408, Placement::Replicated);
        op.format = crate::llm::TensorFormat { bits: 4.5, kernel: crate::llm::KernelFamily::Affine4 };
        let ms = |rows: u64| n.op_ns(&op, rows, 0) / 1e6;
        for (rows, measured) in [(1, 0.129), (4, 0.165), (8, 0.323)] {
            assert!((ms(rows) / measured - 1.0).abs() < 0.05, "{rows} rows: {} ms vs {measured}", ms(rows));
        }
        // The matrix-vector kernel up to 12 rows (12 x 5.6 FLOPs per weight), one whole 32-row
        // tile of the GEMM from 13 (64 + 2 x 4): flat to 32 rows, then the rows' FLOPs.
        assert!(ms(13) < 13.0 / 12.0 * ms(12));
        assert!(close(ms(13), ms(32)));
        assert!(ms(64) > ms(32));
        // A step never gets cheaper with more rows, and within a tile the aggregate rate never
        // falls.
        for rows in 1..256 {
            assert!(ms(rows + 1) >= ms(rows), "{rows} rows");
            if rows < 32 {
                assert!(ms(rows + 1) / (rows + 1) as f64 <= ms(rows) / rows as f64 * (1.0 + 1e-12), "{rows} rows");
            }
        }
        // The power model charges the unpacking repeated for each further row, not the first
        // pass every runtime's GEMV makes (uncharged everywhere): 2 + 3.6 x 7 / 8 per weight-row.
        let w = 5120.0 * 17408.0;
        assert!((n.op_work(&op, 1, 0).issued_flops / (2.0 * w / 0.946) - 1.0).abs() < 1e-9);
        assert!((n.op_work(&op, 8, 0).issued_flops / ((16.0 + 3.6 * 7.0) * w / 0.946) - 1.0).abs() < 1e-9);
        // A runtime whose GEMV dequantises once (llama.cpp, CUDA) stays flat to 8 rows; a
        // 16-bit matrix and a long prefill are the GEMM's either way.
        let once = NodeCost { per_row_matvec: false, ..n };
        assert!(close(once.op_ns(&op, 8, 0), once.op_ns(&op, 1, 0)));
        assert!(close(once.op_ns(&op, 512, 0), n.op_ns(&op, 512, 0)));
        let half = Op::dense("w", TensorRole::Mlp, 5120 * 17408, Placement::Replicated);
        assert!(close(once.op_ns(&half, 8, 0), n.op_ns(&half, 8, 0)));
    }

    #[test]
    fn an_expert_gemm_dequantises_each_touched_expert_once_per_tile_of_its_own_rows() {
        let (c, m) = (chip(), comm());
        let r = RuntimeParams { dequant_ops_mxfp4: 3.0, ..runtime() };
        let n = node(&c, &r, &m);
        let mut op = Op::experts("e", 1_000_000, 3, 64, 4);
        op.format = crate::llm::TensorFormat { bits: 4.25, kernel: crate::llm::KernelFamily::Mxfp4 };
        // 10,000 tokens touch all 64 experts (to 1e-9), 625 rows each = 20 tiles:
        // 2 x 3 x 1e6 x 64 x 20 = 7.68e9 FLOP units beside the 8e10 FLOPs, over 2.5e13 FLOP/s.
        let t = n.op_ns(&op, 10_000, 0);
        assert!((t - ((8e10 + 7.68e9) / 2.5e13 * 1e9 + 30_000.0)).abs() < 1.0, "{t}");
    }

    #[test]
    fn expert_gemv_and_gemm_read_the_experts_the_tokens_touch() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        // 64 experts of 1e6 bf16 weights, 4 active, 3 gather kernels. One token touches 4:
        // 8e6 bytes / (1e12 x 0.25) = 32 us, plus 3 launches.
        let op = Op::experts("e", 1_000_000, 3, 64, 4);
        assert!(close(n.op_ns(&op, 1, 0), 32_000.0 + 30_000.0));
        // 10,000 tokens: 2 x 4e6 x 1e4 FLOPs / (1e14 x 0.25) = 3.2 ms (all 64 experts' 128 MB
        // take 0.512 ms): compute-bound.
        assert!(close(n.op_ns(&op, 10_000, 0), 3_200_000.0 + 30_000.0));
    }

    #[test]
    fn attention_at_depth_reads_the_cache_up_to_the_step_and_caps_at_its_window() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        // 1000 bytes of KV per cached token; one token after 999: 1 MB / (1e12 x 0.8) = 1.25 us.
        let op = Op::attention("sdpa", 1000, true, 1000, None);
        assert!(close(n.op_ns(&op, 1, 999), 1_250.0 + 10_000.0));
        // A 100-token window reads 100 tokens' KV.
        let windowed = Op::attention("sdpa", 1000, true, 1000, Some(100));
        assert!(close(n.op_ns(&windowed, 1, 999), 125.0 + 10_000.0));
        // Nine query rows at the attention efficiency 0.8: 1.008 MB = 1.26 us, over
        // 9 x 1000 x 1004 FLOPs / 4e13 = 0.226 us.
        assert!(close(n.op_ns(&op, 9, 999), 1_260.0 + 10_000.0));
        // A 1000-token prefill: 1000 FLOPs x 1000 queries x 500 mean context / (1e14 x 0.4) =
        // 12.5 us, over the 1.25 us cache read.
        assert!(close(n.op_ns(&op, 1000, 0), 12_500.0 + 10_000.0));
    }

    #[test]
    fn flash_attention_reads_the_cache_once_at_the_dense_streaming_rate_mlx_at_its_attention_rate_and_windows_cap_it() {
        let (c, r, m) = (chip(), runtime(), comm());
        let c = ChipParams { bw_eff_attention: 0.25, ..c };
        let sdpa = node(&c, &r, &m);
        let flash = NodeCost { flash_attention: true, ..sdpa };
        // 1000 bytes of KV per token, one token after 32,767: 32.768 MB. Flash attention
        // streams it at the dense 0.5: 65.536 us (plus a 10 us launch); MLX's SDPA reads it at
        // the attention efficiency, 0.25: 131.072 us.
        let op = Op::attention("sdpa", 1000, true, 1000, None);
        assert!(close(sdpa.op_ns(&op, 1, 32_767), 131_072.0 + 10_000.0));
        assert!(close(flash.op_ns(&op, 1, 32_767), 65_536.0 + 10_000.0));
        // An MLA latent cache likewise: 131.072 us under MLX.
        let mut latent = Op::attention("sdpa (latent)", 1000, false, 1000, None);
        latent.mla_expanded = Some(MlaExpanded { attn_flops_per_ctx: 2000, score_bytes_per_ctx: 8 });
        assert!(close(sdpa.op_ns(&latent, 1, 32_767), 131_072.0 + 10_000.0));
        assert!(close(flash.op_ns(&latent, 1, 32_767), 65_536.0 + 10_000.0));
        // A 128-token sliding window reads 128 tokens whatever the depth: 0.256 us.
        let windowed = Op::attention("swa", 1000, true, 1000, Some(128));
        assert!(close(flash.op_ns(&windowed, 1, 32_767), 256.0 + 10_000.0));
        // Prefill: flash attention's QK and PV run as tiled GEMMs at the dense compute
        // efficiency (0.5): 1000 FLOPs x 1000 queries x 500 mean context / 5e13 = 10 us; SDPA at
        // the attention efficiency (0.4): 12.5 us.
        assert!(close(flash.op_ns(&op, 1000, 0), 10_000.0 + 10_000.0));
        assert!(close(sdpa.op_ns(&op, 1000, 0), 12_500.0 + 10_000.0));
        // Flash attention's products at half the GEMM's rate ([kernels] flash_compute_ratio
        // 0.5): 20 us; its decode read, a stream, is not slowed; MLX's SDPA ignores the ratio.
        let half = NodeCost { flash_compute_ratio: 0.5, ..flash };
        assert!(close(half.op_ns(&op, 1000, 0), 20_000.0 + 10_000.0));
        assert!(close(half.op_ns(&op, 1, 32_767), 65_536.0 + 10_000.0));
        assert!(close(NodeCost { flash_compute_ratio: 0.5, ..sdpa }.op_ns(&op, 1000, 0), 12_500.0 + 10_000.0));
    }

    #[test]
    fn llama_cpp_without_flash_attention_rereads_the_cache_per_query_head_and_streams_its_scores() {
        let (c, r, m) = (chip(), runtime(), comm());
        let flash = NodeCost { flash_attention: true, ..node(&c, &r, &m) };
        let plain = NodeCost { flash_attention: false, materialized_attention: true, ..flash };
        // Two KV heads of 64 (K and V in f16: 512 bytes per token), eight query heads
        // (4 x 8 x 64 = 2,048 FLOPs per context token): groups of four.
        let mut op = Op::attention("attn", 512, true, 2048, None);
        op.kv_heads = 2;
        // Decode after 32,767 tokens: the cache (16.8 MB) read by each of the four query heads
        // of a group, 67.1 MB at 0.5 TB/s = 134,217.728 ns; the f32 scores (8 heads x 32,768)
        // four times, 4.19 MB = 8,388.608 ns; four kernels of 10 us.
        assert!(close(plain.op_ns(&op, 1, 32_767), 134_217.728 + 8_388.608 + 40_000.0));
        // Flash attention: the cache once, one kernel.
        assert!(close(flash.op_ns(&op, 1, 32_767), 33_554.432 + 10_000.0));
        // Prefill of 1,000 tokens from empty: the products at the dense GEMM rate (2,048 x 1,000
        // x 500 / 5e13 = 20,480 ns, over the 4,096 ns of cache reads), then the 1,000 x 1,000 x 8
        // scores four times, 128 MB = 256,000 ns.
        assert!(close(plain.op_ns(&op, 1000, 0), 20_480.0 + 256_000.0 + 40_000.0));
        // The ratio of a flash kernel's products does not apply to separate matrix products.
        let half = NodeCost { flash_compute_ratio: 0.5, ..plain };
        assert!(close(half.op_ns(&op, 1000, 0), 20_480.0 + 256_000.0 + 40_000.0));
        // MLA forms and ops without KV heads keep their own path.
        let mut latent = op.clone();
        latent.mla_expanded = Some(MlaExpanded { attn_flops_per_ctx: 2048, score_bytes_per_ctx: 0 });
        assert!(!plain.materializes(&latent));
        assert!(!plain.materializes(&Op::attention("attn", 512, true, 2048, None)));
    }

    #[test]
    fn tiled_moe_gemms_pay_whole_tiles_for_the_rows_each_expert_holds() {
        use crate::llm::KernelFamily::{Half, KQuant};
        // CUDA MMQ: the first width (multiples of 8 below 48, of 16 from 48, at most 128) that
        // takes the step in the fewest tiles; one row is MMVQ. 100 rows: 112 (96 would need
        // two); 200 rows need two tiles whatever the width, and 112 is the first that does it.
        let cuda = ExpertRowTile::CUDA_MMQ;
        assert_eq!(
            [1, 2, 44, 100, 128, 200, 2048].map(|r| cuda.width(r, KQuant)),
            [None, Some(8), Some(48), Some(112), Some(128), Some(112), Some(128)]
        );
        assert_eq!(cuda.width(2048, Half), None, "16-bit experts do not take MMQ");
        // ROCm MMQ on RDNA3 (WMMA): multiples of 16, at most 128, from 5 rows; quantized only.
        let rocm = ExpertRowTile::ROCM_MMQ;
        assert_eq!([4, 5, 100, 512].map(|r| rocm.width(r, KQuant)), [None, Some(16), Some(112), Some(128)]);
        // From late September 2026 RDNA picks against the mean rows an expert holds: 512
        // tokens over 128 experts, top-4, is 16 an expert; 2048 is 64; 5 tokens still tile.
        let per_expert = ExpertRowTile::ROCM_MMQ_PER_EXPERT;
        let gpt_oss = Some((128, 4));
        assert_eq!(
            [4, 5, 512, 2048, 8192].map(|r| per_expert.width_routed(r, gpt_oss, KQuant)),
            [None, Some(16), Some(16), Some(64), Some(128)]
        );
        assert_eq!([512, 2048].map(|r| rocm.width_routed(r, gpt_oss, KQuant)), [Some(128), Some(128)]);
        assert_eq!(per_expert.width_routed(512, gpt_oss, Half), None);
        assert_eq!(rocm.width(512, Half), None);
        // Vulkan on AMD: 32-row tiles up to 32 rows, 64 above; mat-vec up to 8 rows; every type.
        let vulkan = ExpertRowTile::VULKAN_MM_ID;
        assert_eq!([8, 9, 32, 33, 512].map(|r| vulkan.width(r, Half)), [None, Some(32), Some(32), Some(64), Some(64)]);
        // Metal mul_mm_id: 32-row tiles from 32 rows up, every type.
        let metal = ExpertRowTile::METAL_MM_ID;
        assert_eq!([31, 32, 2048].map(|r| metal.width(r, Half)), [None, Some(32), Some(32)]);
        assert_eq!(ExpertRowTile::NONE.width(2048, KQuant), None);

        let (c, r, m) = (chip(), runtime(), comm());
        let untiled = node(&c, &r, &m);
        let tiled = NodeCost { expert_tile: cuda, ..untiled };
        // 2 experts, both active: each holds all 200 rows, two 112-row tiles: 224 rows computed
        // of 200, 1.12x the FLOPs: 2 x 2 x 1e6 x 224 = 8.96e8 (vs 8e8).
        let mut both = Op::experts("e", 1_000_000, 3, 2, 2);
        both.format.kernel = KQuant;
        assert!(close(untiled.op_work(&both, 200, 0).flops, 8.0e8));
        assert!(close(tiled.op_work(&both, 200, 0).flops, 8.96e8));
        // Below the tiled path (one row) nothing changes.
        assert_eq!(tiled.op_work(&both, 1, 0), untiled.op_work(&both, 1, 0));
        // 128 experts, 4 active, 2048 rows (gpt-oss-120b at llama-bench -ub 2048): ~64 rows an
        // expert, one 128-row tile each, half of it padding: twice the routed FLOPs.
        let mut gpt = Op::experts("e", 1_000_000, 3, 128, 4);
        gpt.format.kernel = KQuant;
        let ratio = tiled.op_work(&gpt, 2048, 0).flops / untiled.op_work(&gpt, 2048, 0).flops;
        assert!((ratio - 2.0).abs() < 1e-6, "{ratio}");
        // At -ub 512 (16 rows an expert): 8x; Vulkan's 64-row tiles on an AMD GPU: 4x.
        let ratio = tiled.op_work(&gpt, 512, 0).flops / untiled.op_work(&gpt, 512, 0).flops;
        assert!((ratio - 8.0).abs() < 1e-3, "{ratio}");
        let on_vulkan = NodeCost { expert_tile: vulkan, ..untiled };
        let ratio = on_vulkan.op_work(&gpt, 512, 0).flops / untiled.op_work(&gpt, 512, 0).flops;
        assert!((ratio - 4.0).abs() < 1e-3, "{ratio}");
    }

    #[test]
    fn mlx_sorts_quantized_experts_into_16_row_tiles_once_they_average_4_rows() {
        use crate::llm::KernelFamily::{Affine4, Half};
        let mlx = ExpertRowTile::MLX_GATHER_QMM;
        // 128 experts, 8 active: mlx-lm sorts from 64 routed rows (8 tokens), MLX's sorted
        // kernel needs 4 rows an expert on average (64 tokens); 16-bit experts run another kernel.
        let experts = Some((128, 8));
        assert_eq!([7, 8, 63, 64, 2048].map(|r| mlx.width_routed(r, experts, Affine4)), [None, None, None, Some(16), Some(16)]);
        assert_eq!(mlx.width_routed(2048, experts, Half), None);
        // A step of 2048 tokens over 128 experts of 8 active: ~128 rows each (the routing
        // spreads them: some experts' last tile padded, ~6% more FLOPs), each expert's weights
        // dequantised per 16 rows, twice as often as a quantized GEMM's 32-row tile:
        // 2 x 4 x 1e6 x 128 x 8 = 8.192e9 FLOP units (4.096e9 untiled) beside the
        // 2 x 8 x 1e6 x 2048 = 3.2768e10 routed FLOPs, over 2.5e13 FLOP/s, plus 3 launches (the
        // 72 MB of weights take 0.29 ms: compute-bound).
        let (c, m) = (chip(), comm());
        let r = RuntimeParams { dequant_ops_affine: 4.0, ..runtime() };
        let untiled = node(&c, &r, &m);
        let tiled = NodeCost { expert_tile: mlx, ..untiled };
        let mut op = Op::experts("e", 1_000_000, 3, 128, 8);
        op.format = crate::llm::TensorFormat { bits: 4.5, kernel: Affine4 };
        let dequant = |n: &NodeCost| (n.op_ns(&op, 2048, 0) - 30_000.0) * 2.5e13 / 1e9 - n.op_work(&op, 2048, 0).flops;
        assert!((dequant(&untiled) - 4.096e9).abs() < 1e4 && (dequant(&tiled) - 8.192e9).abs() < 1e4);
        let padding = tiled.op_work(&op, 2048, 0).flops / untiled.op_work(&op, 2048, 0).flops;
        assert!(close(untiled.op_work(&op, 2048, 0).flops, 3.2768e10) && (1.0..1.1).contains(&padding), "{padding}");
        // 512 experts, 10 active, a 1024-token chunk (Qwen3-Next): ~20 rows an expert, one or
        // two 16-row tiles each: 1.3-1.7x the routed FLOPs.
        let mut next = Op::experts("e", 1_000_000, 3, 512, 10);
        next.format.kernel = Affine4;
        let ratio = tiled.op_work(&next, 1024, 0).flops / untiled.op_work(&next, 1024, 0).flops;
        assert!((1.3..1.7).contains(&ratio), "{ratio}");
    }

    #[test]
    fn sparse_attention_reads_the_top_k_only_where_the_runtime_gathers_them() {
        let (c, r, m) = (chip(), runtime(), comm());
        let flash = NodeCost { flash_attention: true, ..node(&c, &r, &m) };
        // 1000 bytes per cached token, top 2048 of 32,768: a gathering decode reads 2.048 MB at
        // the dense 0.5 of 1 TB/s, 4.096 us; a masked dense pass all 32.768 MB, 65.536 us.
        let mut op = Op::attention("sdpa (latent)", 1000, false, 1000, None);
        op.sparse_top_k = Some(2048);
        let (mlx, llama, cuda) = (
            NodeCost { sparse_gather: SparseGather::Decode, ..flash },
            NodeCost { sparse_gather: SparseGather::LongCache, ..flash },
            NodeCost { sparse_gather: SparseGather::Always, ..flash },
        );
        for n in [mlx, llama, cuda] {
            assert!(close(n.op_ns(&op, 1, 32_767), 4_096.0 + 10_000.0), "{:?}", n.sparse_gather);
        }
        // A 4-token step: MLX masks a dense pass (each query over ~32.77k tokens: 4 x 1000 x
        // 32,769 FLOPs at 4e13 = 3.28 us, under the 65.5 us read); the others still gather.
        assert!(close(mlx.op_ns(&op, 4, 32_764), 65_536.0 + 10_000.0));
        assert!(close(cuda.op_ns(&op, 4, 32_764), 4_096.0 + 10_000.0));
        // llama.cpp's sparse path needs a cache of at least max(4096, 2 k) tokens: at 3,000
        // tokens it reads them all (3 MB, 6 us), at short contexts everyone reads the cache.
        assert!(close(llama.op_ns(&op, 1, 2_999), 6_000.0 + 10_000.0));
        assert!(close(cuda.op_ns(&op, 1, 2_999), 4_096.0 + 10_000.0));
        assert!(close(cuda.op_ns(&op, 1, 999), 2_000.0 + 10_000.0));
    }

    #[test]
    fn tensor_parallel_past_the_kv_heads_reads_the_replicated_cache_but_splits_the_query_flops() {
        let (c, r, m) = (chip(), runtime(), comm());
        let flash = NodeCost { flash_attention: true, ..node(&c, &r, &m) };
        // TP 4 of a 2-KV-head model: a quarter of the query heads, half the KV heads.
        let tp4 = NodeCost { shard: 0.25, kv_shard: 0.5, ..flash };
        let op = Op::attention("sdpa", 1000, true, 1000, None);
        // Decode after 32,767 tokens: half of the 32.768 MB cache at the dense 0.5 of 1 TB/s.
        assert!(close(tp4.op_ns(&op, 1, 32_767), 32_768.0 + 10_000.0));
        // A 1000-token prefill: a quarter of 1000 FLOPs x 1000 queries x 500 mean context over
        // 1e14 x 0.5 (flash attention at the dense efficiency) = 2.5 us, over the 1 us read of
        // half the 1 MB cache.
        assert!(close(tp4.op_ns(&op, 1000, 0), 2_500.0 + 10_000.0));
    }

    #[test]
    fn a_recurrence_reads_and_writes_its_state_once_per_step_whatever_the_context() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        // A 4 MB state, 1e6 FLOPs per token: read + write 8 MB streamed at the dense 0.5 of
        // 1 TB/s = 16 us, one launch.
        let op = Op::recurrent("gated_delta", 0, 4_000_000, 1_000_000, 128, 1);
        assert!(close(n.op_ns(&op, 1, 0), 16_000.0 + 10_000.0));
        assert!(close(n.op_ns(&op, 1, 100_000), 16_000.0 + 10_000.0));
        // A 4000-token chunk of llama.cpp's chunked form: the state still once; 4e9 FLOPs /
        // (1e14 x 0.4) = 100 us win.
        assert!(close(n.op_ns(&op, 4000, 0), 100_000.0 + 10_000.0));
        // Half the heads on this node under tensor parallelism: half the state.
        assert!(close(NodeCost { shard: 0.5, ..n }.op_ns(&op, 1, 0), 8_000.0 + 10_000.0));
    }

    #[test]
    fn mlx_runs_a_recurrence_token_by_token_on_the_plain_alus() {
        let (c, r, m) = (chip(), runtime(), comm());
        // An M5-like node: 2e14 FLOP/s of matrix units for MLX's GEMMs, 1e14 of plain ALUs.
        let n = NodeCost { sequential_recurrence: true, peak_flops: 2e14, ..node(&c, &r, &m) };
        assert!(close(recurrence_alu_fraction(128), 28.0 / 76.0));
        let op = Op::recurrent("gated_delta", 0, 4_000_000, 1_000_000, 128, 1);
        // 1e6 FLOPs a token at 1e14 x 28/76 = 27.14 ns a token: linear in the chunk's tokens,
        // the GEMM peak unused. 4000 tokens: 108.57 us; 8000: 217.14 us (the state's 16 us
        // hides under it).
        let per_token = 1e6 / (1e14 * 28.0 / 76.0) * 1e9;
        assert!(close(n.op_ns(&op, 4000, 0), 4000.0 * per_token + 10_000.0));
        assert!(close(n.op_ns(&op, 8000, 0) - 10_000.0, 2.0 * (n.op_ns(&op, 4000, 0) - 10_000.0)));
        // Decode stays bound by the state stream.
        assert!(close(n.op_ns(&op, 1, 0), 16_000.0 + 10_000.0));
        // A chunked scan (Mamba-2's SSD) runs its multi-token step as matrix multiplications:
        // 4e9 FLOPs at the GEMM peak's attention efficiency, 2e14 x 0.4 = 50 us.
        let mut ssd = op.clone();
        ssd.recurrence_chunked = true;
        assert!(close(n.op_ns(&ssd, 4000, 0), 50_000.0 + 10_000.0));
    }

    #[test]
    fn elementwise_kernels_move_four_bytes_per_hidden_value_at_full_bandwidth() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        // 2 kernels x 10 tokens x 64 x 4 bytes = 5120 bytes / 1e12 = 5.12 ns, plus 2 launches.
        assert!(close(n.op_ns(&Op::elementwise("norm", 2), 10, 0), 5.12 + 20_000.0));
    }

    #[test]
    fn the_expanded_mla_form_adds_two_kernels_and_the_rope_mask_only_on_multi_token_latent_steps() {
        let (c, r, m) = (chip(), runtime(), comm());
        let expanding = NodeCost { mla: MlaOptions { per_head_cache: false, prefill_expanded: true }, ..node(&c, &r, &m) };
        let mut op = Op::attention("sdpa", 1000, false, 1000, None);
        op.mla_expanded = Some(MlaExpanded { attn_flops_per_ctx: 2000, score_bytes_per_ctx: 8 });
        assert_eq!(expanding.launch_ns(&op, 1), 10_000.0);
        assert_eq!(expanding.launch_ns(&op, 2), 30_000.0);
        // Two tokens at context 0: the cache read 2000 bytes / 8e11 = 2.5 ns beats 4000 FLOPs /
        // 4e13; the mask's 8 x 2 x 1 bytes at the dense efficiency add 0.032 ns.
        assert!(close(expanding.op_ns(&op, 2, 0), 2.5 + 0.032 + 30_000.0));
        // A runtime that absorbs, or a per-head cache, runs the plain form.
        let absorbing = node(&c, &r, &m);
        assert_eq!(absorbing.launch_ns(&op, 2), 10_000.0);
        op.mla_per_head = Some(MlaPerHead { kv_bytes_per_ctx: 4000, attn_flops_per_ctx: 1000 });
        let per_head = NodeCost { mla: MlaOptions { per_head_cache: true, prefill_expanded: true }, ..node(&c, &r, &m) };
        assert_eq!(per_head.launch_ns(&op, 2), 10_000.0);
        assert!(close(per_head.op_ns(&op, 2, 0), 10.0 + 10_000.0), "{}", per_head.op_ns(&op, 2, 0));
        // The latent up-projection runs over the whole cache in the expanded form.
        let mut kv_b = Op::dense("kv_b", TensorRole::AttnLatent, 1_000_000, Placement::Replicated);
        kv_b.expands_latent = true;
        assert_eq!(expanding.op_work(&kv_b, 2, 998).flops, 2.0 * 1e6 * 1000.0);
        assert_eq!(absorbing.op_work(&kv_b, 2, 998).flops, 2.0 * 1e6 * 2.0);
    }

    #[test]
    fn work_counts_the_timed_bytes_and_flops_and_the_issued_alu_work() {
        let (c, r, m) = (chip(), runtime(), comm());
        let w = node(&c, &r, &m).op_work(&dense(Placement::Replicated), 1000, 0);
        assert_eq!(w, Work { bytes: 2e9, flops: 2e12, issued_flops: 4e12 });
        assert_eq!(node(&c, &r, &m).op_work(&Op::elementwise("norm", 1), 1, 0).issued_flops, 0.0);
    }

    #[test]
    fn host_sync_and_stage_costs_are_the_profile_microseconds() {
        let (c, r, m) = (chip(), runtime(), comm());
        let n = node(&c, &r, &m);
        assert_eq!(n.host_ns(1), 250_000);
        assert_eq!(n.host_ns(4), 400_000);
        assert_eq!(n.stage_ns(), 300_000);
        assert_eq!(n.sync_ns(), 180_000);
        assert_eq!(NodeCost { fast_sync: true, ..n }.sync_ns(), 4_000);
        assert_eq!(NodeCost { os: Os::Linux, ..n }.sync_ns(), 4_000);
        assert_eq!(super::us_to_ns(-1.0), 0);
    }
}
