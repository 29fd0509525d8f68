//! Calibration profiles: the small set of named parameters that physics alone does not give
//! (kernel efficiencies, launch and synchronization costs, collective overheads, power
//! coefficients). The default profile is `calibration/profiles/default.toml`, embedded at build
//! time; `--profile FILE` replaces it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

const DEFAULT_PROFILE: &str = include_str!("../calibration/profiles/default.toml");
const HAND_SET_PROFILE: &str = include_str!("../calibration/profiles/hand-set.toml");

/// Where a profile came from.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProfileMeta {
    /// Profile name.
    pub name: String,
    /// How the values were obtained (hand-set, fitted by `supernode calibrate`, ...).
    pub method: String,
    /// The data it was set or fitted on.
    pub data: String,
    /// Date (ISO 8601).
    pub date: String,
    /// Node counts the profile was calibrated on (predictions beyond are extrapolations).
    /// Absent: none, so every prediction is flagged an extrapolation (the conservative reading
    /// of a profile that does not say what it was fitted on; the same for the three below).
    #[serde(default)]
    pub calibrated_node_counts: Vec<u32>,
    /// Chip families the profile was calibrated on (others use assumed values).
    #[serde(default)]
    pub calibrated_chips: Vec<String>,
    /// Largest context length the profile was calibrated on.
    #[serde(default)]
    pub calibrated_max_context: u64,
    /// The setups (chip, engine, parallelism, fabric, quantization family) the calibration
    /// rows had, each with the largest concurrency measured on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibrated_setups: Vec<CalibratedSetup>,
    /// The model mechanisms (`ModelSpec::mechanisms`) the calibration rows' models exercised,
    /// each with the kernel library that ran it (`routed experts on cuda`, as the envelope
    /// check writes them); an entry without one (profiles of 2026-12-05) covers
    /// every library. Absent (profiles written before 2026-12-05): not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibrated_mechanisms: Vec<String>,
    /// The weight kernels the calibration rows streamed: each kernel family of the bulk weights
    /// (attention, and the dense FFN or the routed experts) with the library and chip that ran
    /// it (`kquant weights on llama-cpp, m3-ultra`). Absent (profiles written before
    /// 2026-12-06): not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibrated_kernels: Vec<String>,
}

/// One setup a profile's calibration rows covered.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct CalibratedSetup {
    /// Chip family.
    pub chip: String,
    /// Engine id (`exo`, `llama-cpp-rpc`, ...).
    pub engine: String,
    /// Parallelism id (`none`, `tensor`, `pipeline`).
    pub parallelism: String,
    /// Fabric id; `-` for one node (no fabric in use).
    pub fabric: String,
    /// Quantization family (`mlx`, `gguf`, `any`).
    pub quant_family: String,
    /// Largest concurrency (sequences decoded together) measured on this setup.
    pub max_concurrency: u64,
}

/// Per-chip parameters.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChipParams {
    /// Fraction of peak memory bandwidth reached by dense quantized matmul kernels.
    pub bw_eff_dense: f64,
    /// Fraction of peak memory bandwidth reached by MoE gather kernels.
    pub bw_eff_expert: f64,
    /// Fraction of peak memory bandwidth reached by attention over the KV cache.
    pub bw_eff_attention: f64,
    /// Fraction of peak FP16 FLOPs reached by dense matmuls in prefill.
    pub compute_eff_dense: f64,
    /// Fraction of peak FP16 FLOPs reached by MoE gather matmuls in prefill.
    pub compute_eff_expert: f64,
    /// Fraction of peak FP16 FLOPs reached by attention in prefill.
    pub compute_eff_attention: f64,
    /// Wall energy per byte the GPU streams from DRAM, pJ (fitted on memory-bound decode).
    pub pj_per_byte: f64,
    /// Wall energy per GPU floating-point operation, pJ (fitted on compute-bound prefill).
    pub pj_per_flop: f64,
    /// Wall power added per busy CPU core, W.
    pub cpu_core_w: f64,
    /// Per-runtime costs on this chip, keyed by runtime (`mlx`, `llama-cpp`).
    pub runtimes: BTreeMap<String, RuntimeParams>,
    /// Host costs of engines that run a runtime's kernels behind a server loop of their own,
    /// keyed by engine ([`HOST_ENGINES`]: `vllm-mlx` runs MLX's): they replace that runtime's
    /// host costs; kernels stay the runtime's. A chip without an entry uses the runtime's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub engines: BTreeMap<String, EngineHostParams>,
}

/// Engines that may have their own host costs in a chip's `engines` table: the host keys of
/// the runtime registry (`engine::runtimes::host_keys`, pinned equal by a test there; listed
/// here because the profile sits below the engine layer and must not import it).
pub const HOST_ENGINES: &[&str] = &["exo", "vllm-mlx", "omlx", "sglang"];

/// Host costs of an engine on a chip (see [`ChipParams::engines`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EngineHostParams {
    /// Host work per forward pass (scheduler, Python), microseconds.
    pub host_per_step_us: f64,
    /// Host work per forward pass per sequence that samples in it (sampling, detokenising,
    /// streaming), microseconds.
    pub host_per_seq_us: f64,
}

/// Per-runtime, per-chip costs.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuntimeParams {
    /// Cost of one kernel launch / dispatch, microseconds.
    pub kernel_launch_us: f64,
    /// Host work per forward pass (sampling, detokenize, Python), microseconds.
    pub host_per_step_us: f64,
    /// Host work per forward pass per sequence that samples in it (mlx-lm: per-sequence
    /// sampling in Python), microseconds: a step of B sequences costs `host_per_step_us + B x
    /// host_per_seq_us` on the host. Required (a profile sets 0, with its source, where no data
    /// speak): a missing value is an error naming the field and the file, not a silent 0.
    pub host_per_seq_us: f64,
    /// Scale applied to the bandwidth efficiencies for this runtime's kernels.
    pub bw_scale: f64,
    /// Scale applied to the compute efficiencies for this runtime's kernels.
    pub compute_scale: f64,
    /// Host and synchronisation cost of one pipeline stage per forward (building the stage's
    /// graph, the GPU->CPU sync before its send, the next rank's wake-up on the receive),
    /// microseconds; fitted from the harness's pipeline-parallel e2e case (0 where none ran).
    /// Required, like every cost: a missing value is an error, not a silent 0.
    pub stage_us: f64,
    /// Bandwidth multiplier of unquantized bf16/f16 matrix-vector kernels, relative to the
    /// runtime's ~4-bit quantized kernels (MLX affine 2-5 bits, GGUF k-quants), whose efficiency
    /// is the chip's `bw_eff_dense`/`bw_eff_expert` times `bw_scale`. Required (prior 1 with its
    /// source where no data speak): a missing value is an error, not a silent 1.
    pub bw_mult_half: f64,
    /// The same for 6-8-bit kernels (MLX affine 6/8-bit, GGUF Q8_0 and other legacy blocks).
    pub bw_mult_8bit: f64,
    /// The same for MXFP4 kernels.
    pub bw_mult_mxfp4: f64,
    /// The same for NVFP4 kernels (CUDA engines; Marlin W4A16 on GB10, FACTS-2026 B1).
    /// Required: 1 (the identity) on runtimes with no NVFP4 kernel.
    pub bw_mult_nvfp4: f64,
    /// The same for FP8 W8A8 kernels (CUDA engines' FP8 checkpoints: a kernel family of its
    /// own, apart from 8-bit integer weights). Optional for profiles written before
    /// 2026-12-05, which read FP8 at `bw_mult_8bit`: left out, it takes that value.
    #[serde(default = "unset")]
    pub bw_mult_fp8: f64,
    /// Cost of one kernel inside a replayed CUDA graph, microseconds: what a CUDA engine pays
    /// per kernel of a step run as a graph (`kernel_launch_us` is the eager launch from Python).
    /// Only the `cuda` runtime reads it; required, 0 on runtimes without CUDA graphs.
    pub graph_kernel_us: f64,
    /// Host time per kernel of building the next step's graph while the GPU runs this one,
    /// microseconds: MLX builds a step's lazy graph in Python and C++ (one op call per kernel)
    /// and `async_eval` keeps one step ahead (FACTS.md, mlx-lm), so a step takes the longer of
    /// its GPU work and this build (a small MoE's hundreds of routing and gather ops can make it
    /// host-bound). Only the `mlx` runtime reads it. Optional: left out it is 0 (no build
    /// bottleneck), what profiles written before 2026-12-05 meant.
    #[serde(default)]
    pub host_per_kernel_us: f64,
    /// ALU instructions per weight each time a multi-token GEMM dequantises a GGUF k-quant or
    /// i-quant block into its tile (unpack the packed 6-bit scale and min, mask and shift the
    /// 4-6-bit value, convert, fused multiply-add). Required: 0 where a runtime multiplies
    /// the codes directly (no dequantisation cost).
    pub dequant_ops_kquant: f64,
    /// The same for GGUF legacy blocks (Q8_0, Q4_0, ...: convert, multiply by the block's scale).
    pub dequant_ops_legacy: f64,
    /// The same for MXFP4 (table look-up of the 4-bit value, times the block's power-of-two scale).
    pub dequant_ops_mxfp4: f64,
    /// The same for MLX affine quantization at any bit width (shift, mask, convert, scale and bias
    /// in one multiply-add).
    pub dequant_ops_affine: f64,
}

impl RuntimeParams {
    /// The bandwidth multiplier of a kernel family on this chip and runtime (1 for the
    /// reference ~4-bit families).
    pub fn kernel_bw_mult(&self, kernel: crate::llm::KernelFamily) -> f64 {
        use crate::llm::KernelFamily as K;
        match kernel {
            K::Half => self.bw_mult_half,
            K::Affine8 | K::Legacy => self.bw_mult_8bit,
            K::Mxfp4 => self.bw_mult_mxfp4,
            K::Fp8 => self.bw_mult_fp8,
            K::Nvfp4 => self.bw_mult_nvfp4,
            K::Affine4 | K::KQuant | K::Int4 => 1.0,
        }
    }

    /// ALU instructions per weight each time a GEMM tile dequantises a weight of `kernel`'s
    /// format (0 for unquantized weights: a 16-bit tile is loaded as is).
    pub fn dequant_ops(&self, kernel: crate::llm::KernelFamily) -> f64 {
        use crate::llm::KernelFamily as K;
        match kernel {
            K::Half => 0.0,
            K::KQuant => self.dequant_ops_kquant,
            K::Legacy => self.dequant_ops_legacy,
            K::Mxfp4 => self.dequant_ops_mxfp4,
            K::Affine4 | K::Affine8 => self.dequant_ops_affine,
            // FP8 W8A8 runs on the FP8 tensor cores: no dequantisation.
            K::Fp8 => 0.0,
            // Block-scaled 4-bit codes (Marlin W4A16, NVFP4): unpack, convert, scale, as a
            // legacy GGUF block.
            K::Nvfp4 | K::Int4 => self.dequant_ops_legacy,
        }
    }
}

/// Communication parameters.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CommParams {
    /// GPU->CPU (or back) crossing with MLX's default fence, microseconds.
    pub gpu_sync_default_us: f64,
    /// The same crossing with `MLX_METAL_FAST_SYNCH=1`, microseconds.
    pub gpu_sync_fast_us: f64,
    /// Extra time per JACCL send/completion round beyond the wire latency, microseconds.
    pub jaccl_round_us: f64,
    /// CPU time to post and poll one peer's transfer, microseconds.
    pub jaccl_peer_us: f64,
    /// CPU reduction bandwidth for all_sum, GB/s.
    pub cpu_reduce_gbs: f64,
    /// Per-message software overhead over TCP (syscalls, copies), microseconds.
    pub tcp_message_us: f64,
    /// llama.cpp RPC: client+server software cost of one blocking call, microseconds.
    pub rpc_call_us: f64,
    /// llama.cpp RPC: server cost per graph node to deserialize and rebuild the graph, microseconds.
    pub rpc_graph_node_us: f64,
    /// llama.cpp RPC: serialized bytes per graph node.
    pub rpc_graph_node_bytes: f64,
    /// Extra cost of a collective issued between kernels, over the same collective timed alone
    /// (thread hand-offs and waits a forward pass pays at each all_sum), microseconds per rank.
    /// Fitted from the harness's segment chains; 0 where no such measurement exists (a profile
    /// must say so: a missing value is an error, not a silent 0).
    pub collective_in_context_us: f64,
    /// NCCL: fixed cost of one collective on the low-latency (LL) protocol (kernel launch, proxy
    /// wake-up, the first handshake), beside the per-step wire latency, microseconds.
    pub nccl_base_us: f64,
    /// NCCL: bus bandwidth of the LL protocol (half of every 8-byte line is a flag; the GPU
    /// polls it), GB/s. Small messages run at this rate, not at the fabric's.
    pub nccl_ll_gbs: f64,
    /// NCCL: extra start-up of the Simple protocol over LL (registration, chunked handshakes),
    /// microseconds. Bulk messages pay it once and then run at the fabric's bandwidth.
    pub nccl_simple_us: f64,
    /// Ray's host cost per forward step of a multi-node vLLM (`--distributed-executor-backend
    /// ray`), microseconds; 0 on one node.
    pub ray_step_us: f64,
}

/// Memory and noise parameters.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MiscParams {
    /// Runtime memory overhead per node (buffers, graph, framework), GB.
    pub runtime_overhead_gb: f64,
    /// Coefficient of variation of compute task durations (seeded jitter).
    pub jitter_cv: f64,
}

/// Mixture-of-experts routing: how concurrent requests share experts.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MoeParams {
    /// Skew of a workload's expert popularity, the standard deviation of the log popularity
    /// (log-normal) of [`crate::llm::expert_coverage`]: 0 = every expert equally likely (uniform
    /// routing), larger = the requests of one workload crowd onto fewer experts. Sets how many
    /// distinct experts a batch of independent sequences reads in a decode step.
    pub expert_popularity_sigma: f64,
}

/// Kernel families whose rate the chips share: what one kind of kernel reaches against another
/// on the same units, wherever it runs.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelParams {
    /// The FLOP rate of a flash-attention kernel's QK and PV products (llama.cpp's GPU backends,
    /// the CUDA engines' FlashAttention/FlashInfer) as a fraction of the chip's dense GEMM rate
    /// (`compute_eff_dense`): the same matrix units, with the online softmax (row max, exp,
    /// rescale of the running output) between the two products of every tile. 1 = the GEMM's.
    pub flash_compute_ratio: f64,
}

impl Default for KernelParams {
    /// The GEMM's rate: what every profile before the section assumed.
    fn default() -> Self {
        Self { flash_compute_ratio: 1.0 }
    }
}

/// Fault models whose rates depend on load (used by a scenario's `[faults]`; see
/// `estimate::faults`). Every value is a hand-set assumption or an observation, never fitted:
/// no published failure log exists to fit them on.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FaultParams {
    /// RDMA (JACCL) link failures per link-hour at full link utilisation with 4 KiB frames. The
    /// rate per link is `rdma_failures_per_link_hour * u^rdma_utilisation_exponent *
    /// (frame / 4 KiB)^rdma_frame_exponent`, u the link's utilisation.
    pub rdma_failures_per_link_hour: f64,
    /// How steeply the RDMA failure rate rises with link utilisation.
    pub rdma_utilisation_exponent: f64,
    /// How steeply the RDMA failure rate rises with the JACCL frame size.
    pub rdma_frame_exponent: f64,
    /// Mean time to a node crash while TCP over Thunderbolt runs at full utilisation, s. The
    /// crash rate per node is `u^tb_tcp_crash_exponent / tb_tcp_crash_mean_s`.
    pub tb_tcp_crash_mean_s: f64,
    /// How steeply the Thunderbolt TCP crash rate rises with link utilisation.
    pub tb_tcp_crash_exponent: f64,
    /// Mean time between losses of one cable, h (the planner's availability; a scenario's
    /// `[faults.link]` gives its own).
    pub cable_mtbf_hours: f64,
    /// Time to notice and repair a lost cable, h (the planner's availability).
    pub cable_repair_hours: f64,
    /// The least share of the fault-free rate at which a cluster still counts as available: a
    /// state serving slower is degraded time, not up time.
    pub useful_rate_fraction: f64,
}

impl Default for FaultParams {
    /// The values of the shipped profiles (their sources are in `calibration/profiles/*.toml`).
    fn default() -> Self {
        FaultParams {
            rdma_failures_per_link_hour: 0.5,
            rdma_utilisation_exponent: 2.0,
            rdma_frame_exponent: 0.5,
            tb_tcp_crash_mean_s: 60.0,
            tb_tcp_crash_exponent: 2.0,
            cable_mtbf_hours: 8760.0,
            cable_repair_hours: 4.0,
            useful_rate_fraction: 0.5,
        }
    }
}

/// A fitted parameter.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FittedParam {
    /// Dotted path in the profile, e.g. `chips.m3-ultra.bw_eff_dense`.
    pub name: String,
    /// Value before the fit.
    pub initial: f64,
    /// Fitted value.
    pub value: f64,
    /// One standard error (NaN-free: absent when the fit has no degrees of freedom).
    pub std_error: Option<f64>,
    /// Ids of the measurements whose prediction moves with this parameter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<String>,
    /// The kernel libraries (`mlx`, `llama-cpp`, `cuda`) those measurements ran, sorted: a
    /// chip's kernel efficiency fitted on one library's rows is a guess for another's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtimes: Vec<String>,
}

/// Residual of one measurement after the fit.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Residual {
    /// Measurement id.
    pub id: String,
    /// (predicted - measured) / measured, percent.
    pub error_percent: f64,
}

/// What a fit produced.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FitReport {
    /// Parameters with uncertainties.
    pub params: Vec<FittedParam>,
    /// Residual of every measurement used.
    pub residuals: Vec<Residual>,
    /// Root mean square of the relative residuals, percent.
    pub rms_percent: f64,
    /// Mean absolute relative residual, percent.
    pub mape_percent: f64,
    /// Measurements minus parameters.
    pub dof: usize,
    /// Residual evaluations the optimiser made.
    pub evaluations: usize,
    /// Why the optimiser stopped.
    pub termination: String,
}

/// A complete calibration profile.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Provenance.
    pub meta: ProfileMeta,
    /// Per chip family.
    pub chips: BTreeMap<String, ChipParams>,
    /// Communication.
    pub comm: CommParams,
    /// Memory and noise.
    pub misc: MiscParams,
    /// Mixture-of-experts routing.
    pub moe: MoeParams,
    /// Kernel families across chips (a profile without the section gets
    /// [`KernelParams::default`]).
    #[serde(default)]
    pub kernels: KernelParams,
    /// Load-dependent fault models (a profile without the section gets [`FaultParams::default`]).
    #[serde(default)]
    pub faults: FaultParams,
    /// Where each parameter's value comes from, keyed by dotted path
    /// (`chips.m3-ultra.bw_eff_dense`); checked against the values on load.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, ParamSource>,
    /// The fit that produced this profile, if it was fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
    /// The fit's own uncertainty, for prediction intervals (written by `calibrate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// What a fit knows about its uncertainty: the covariance of its fitted parameters and the
/// scatter of the measurements around the fit's predictions beyond what the parameters explain
/// (standardised residuals), per kind of measurement. Prediction
/// intervals of `run` combine both.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Uncertainty {
    /// The fitted parameters (dotted paths), in the order of the covariance's rows.
    pub params: Vec<String>,
    /// Covariance of the fitted parameters in the fit's free variables (natural log of the value,
    /// logit for fractions), one row per parameter.
    pub covariance: Vec<Vec<f64>>,
    /// One standard deviation of log(measured / predicted) of a row, the parameters' own
    /// uncertainty taken out (standardised residuals: the covariance adds it back per scenario), per
    /// measurement kind (`decode_tokens_per_s`, `prefill_tokens_per_s`, `node_power_w`, ...)
    /// and over all rows (`all`).
    pub scatter: BTreeMap<String, f64>,
}

impl Uncertainty {
    /// Checks shapes and values: a square, symmetric covariance over named profile parameters,
    /// non-negative variances and finite, non-negative scatters.
    fn check(&self, profile: &Profile) -> Result<(), Issue> {
        let n = self.params.len();
        for p in &self.params {
            if profile.param(p).is_none() {
                return Err(Issue::new(&["uncertainty", "params"], format!("`{p}` is not a parameter of this profile")));
            }
        }
        let square = self.covariance.len() == n && self.covariance.iter().all(|r| r.len() == n);
        if !square {
            return Err(Issue::new(
                &["uncertainty", "covariance"],
                format!("the covariance must be {n} rows of {n} numbers (one per parameter)"),
            ));
        }
        for (i, row) in self.covariance.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                let sym = (v - self.covariance[j][i]).abs() <= 1e-9 * v.abs().max(1e-12);
                if !v.is_finite() || (i == j && *v < 0.0) || !sym {
                    return Err(Issue::new(
                        &["uncertainty", "covariance"],
                        format!("covariance[{i}][{j}] = {v}: a covariance is finite, symmetric, with variances >= 0"),
                    ));
                }
            }
        }
        for (k, v) in &self.scatter {
            if !v.is_finite() || *v < 0.0 {
                return Err(Issue::new(&["uncertainty", "scatter", k], format!("scatter `{k}` = {v} must be a finite number >= 0")));
            }
        }
        Ok(())
    }
}

/// Where one parameter's value comes from.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParamSource {
    /// The source: a fact with its reference, a hand-set rule, or "fitted on `<data>`".
    pub source: String,
    /// The value the source speaks for (checked against the parameter on load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// One standard error, for fitted values with degrees of freedom to spare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std_error: Option<f64>,
    /// The data the value was set or fitted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Ids of measurement rows a hand-set value was read from. Cross-validation does not score
    /// such a row where this value decides its held-out prediction (it would grade itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_rows: Vec<String>,
}

/// The values a parameter may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A fraction of a peak: in (0, 1].
    Fraction,
    /// A rate, bandwidth or scale: > 0.
    Positive,
    /// A cost, latency, power or size: >= 0.
    NonNegative,
    /// A count: an integer >= 1.
    Count,
    /// A coefficient of variation: in [0, 1].
    Cv,
}

impl Bound {
    /// Whether `v` is allowed (always finite).
    pub fn admits(self, v: f64) -> bool {
        v.is_finite()
            && match self {
                Bound::Fraction => v > 0.0 && v <= 1.0,
                Bound::Positive => v > 0.0,
                Bound::NonNegative => v >= 0.0,
                Bound::Count => v >= 1.0,
                Bound::Cv => (0.0..=1.0).contains(&v),
            }
    }

    /// The allowed values, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Bound::Fraction => "in (0, 1]",
            Bound::Positive => "> 0",
            Bound::NonNegative => ">= 0",
            Bound::Count => "an integer >= 1",
            Bound::Cv => "in [0, 1]",
        }
    }
}

/// One numeric parameter of a profile section: its key, unit, allowed values and accessors.
pub struct Field<T> {
    /// Key in the section.
    pub name: &'static str,
    /// Unit (empty for fractions and scales).
    pub unit: &'static str,
    /// Allowed values.
    pub bound: Bound,
    /// Reads the value.
    pub get: fn(&T) -> f64,
    /// Writes the value.
    pub set: fn(&mut T, f64),
}

macro_rules! fields {
    ($t:ty: $($name:ident $unit:literal $bound:ident),* $(,)?) => {
        &[$(Field::<$t> {
            name: stringify!($name),
            unit: $unit,
            bound: Bound::$bound,
            get: |x| x.$name as f64,
            set: |x, v| x.$name = v as _,
        }),*]
    };
}

/// Parameters of a `[chips.<chip>]` section.
pub const CHIP_FIELDS: &[Field<ChipParams>] = fields!(ChipParams:
    bw_eff_dense "" Fraction, bw_eff_expert "" Fraction, bw_eff_attention "" Fraction,
    compute_eff_dense "" Fraction, compute_eff_expert "" Fraction, compute_eff_attention "" Fraction,
    pj_per_byte "pJ" NonNegative, pj_per_flop "pJ" NonNegative, cpu_core_w "W" NonNegative,
);

/// Parameters of a `[chips.<chip>.runtimes.<runtime>]` section.
pub const RUNTIME_FIELDS: &[Field<RuntimeParams>] = fields!(RuntimeParams:
    kernel_launch_us "us" NonNegative, host_per_step_us "us" NonNegative, bw_scale "" Positive, compute_scale "" Positive,
    bw_mult_half "" Positive, bw_mult_8bit "" Positive, bw_mult_mxfp4 "" Positive,
    stage_us "us" NonNegative, host_per_seq_us "us" NonNegative, bw_mult_nvfp4 "" Positive, bw_mult_fp8 "" Positive,
    graph_kernel_us "us" NonNegative, host_per_kernel_us "us" NonNegative,
    dequant_ops_kquant "ops" NonNegative, dequant_ops_legacy "ops" NonNegative,
    dequant_ops_mxfp4 "ops" NonNegative, dequant_ops_affine "ops" NonNegative,
);

/// Parameters of a `[chips.<chip>.engines.<engine>]` section.
pub const ENGINE_FIELDS: &[Field<EngineHostParams>] = fields!(EngineHostParams:
    host_per_step_us "us" NonNegative, host_per_seq_us "us" NonNegative,
);

/// Parameters of the `[comm]` section.
pub const COMM_FIELDS: &[Field<CommParams>] = fields!(CommParams:
    gpu_sync_default_us "us" NonNegative, gpu_sync_fast_us "us" NonNegative, jaccl_round_us "us" NonNegative,
    jaccl_peer_us "us" NonNegative, cpu_reduce_gbs "GB/s" Positive,
    tcp_message_us "us" NonNegative, rpc_call_us "us" NonNegative, rpc_graph_node_us "us" NonNegative,
    rpc_graph_node_bytes "bytes" NonNegative, collective_in_context_us "us" NonNegative,
    nccl_base_us "us" NonNegative, nccl_ll_gbs "GB/s" Positive, nccl_simple_us "us" NonNegative,
    ray_step_us "us" NonNegative,
);

/// Parameters of the `[moe]` section.
pub const MOE_FIELDS: &[Field<MoeParams>] = fields!(MoeParams:
    expert_popularity_sigma "" NonNegative,
);

/// Parameters of the `[kernels]` section.
pub const KERNEL_FIELDS: &[Field<KernelParams>] = fields!(KernelParams:
    flash_compute_ratio "" Fraction,
);

/// Parameters of the `[misc]` section.
pub const MISC_FIELDS: &[Field<MiscParams>] = fields!(MiscParams:
    runtime_overhead_gb "GB" NonNegative, jitter_cv "" Cv,
);

/// Parameters of the `[faults]` section.
pub const FAULT_FIELDS: &[Field<FaultParams>] = fields!(FaultParams:
    rdma_failures_per_link_hour "1/h" NonNegative, rdma_utilisation_exponent "" NonNegative, rdma_frame_exponent "" NonNegative,
    tb_tcp_crash_mean_s "s" Positive, tb_tcp_crash_exponent "" NonNegative,
    cable_mtbf_hours "h" Positive, cable_repair_hours "h" Positive, useful_rate_fraction "" Fraction,
);

/// A numeric parameter of a profile, by dotted path.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    /// Dotted path, e.g. `chips.m3-ultra.runtimes.mlx.kernel_launch_us`.
    pub path: String,
    /// Current value.
    pub value: f64,
    /// Unit (empty for fractions and scales).
    pub unit: &'static str,
    /// Allowed values.
    pub bound: Bound,
}

fn info<T>(prefix: &str, x: &T, fields: &[Field<T>], out: &mut Vec<ParamInfo>) {
    out.extend(fields.iter().map(|f| ParamInfo { path: format!("{prefix}{}", f.name), value: (f.get)(x), unit: f.unit, bound: f.bound }));
}

/// The parameter paths a tied name stands for, one value for all of them in a fit: each
/// `{a,b,...}` group of the name takes each of its alternatives, every combination, in order
/// (`chips.{m3-ultra,m2-ultra}.bw_eff_dense` is the two chips' dense streaming efficiency as
/// one parameter). A name without braces stands for itself; one with an unclosed brace for
/// nothing (no such parameter).
pub fn tied_paths(name: &str) -> Vec<String> {
    let Some(open) = name.find('{') else { return vec![name.to_string()] };
    let Some(close) = name[open..].find('}').map(|c| open + c) else { return Vec::new() };
    let (head, alternatives, tail) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    alternatives.split(',').flat_map(|a| tied_paths(&format!("{head}{a}{tail}"))).collect()
}

fn find<'a, T>(fields: &'a [Field<T>], name: &str) -> Option<&'a Field<T>> {
    fields.iter().find(|f| f.name == name)
}

impl Profile {
    /// Every numeric parameter, in file order (chips, their runtimes, comm, moe, kernels, misc, faults).
    pub fn params(&self) -> Vec<ParamInfo> {
        let mut out = Vec::new();
        for (chip, c) in &self.chips {
            info(&format!("chips.{chip}."), c, CHIP_FIELDS, &mut out);
            for (rt, r) in &c.runtimes {
                info(&format!("chips.{chip}.runtimes.{rt}."), r, RUNTIME_FIELDS, &mut out);
            }
            for (e, h) in &c.engines {
                info(&format!("chips.{chip}.engines.{e}."), h, ENGINE_FIELDS, &mut out);
            }
        }
        info("comm.", &self.comm, COMM_FIELDS, &mut out);
        info("moe.", &self.moe, MOE_FIELDS, &mut out);
        info("kernels.", &self.kernels, KERNEL_FIELDS, &mut out);
        info("misc.", &self.misc, MISC_FIELDS, &mut out);
        info("faults.", &self.faults, FAULT_FIELDS, &mut out);
        out
    }

    /// The parameter at a dotted path, with its bound; `None` if there is no such parameter.
    /// A tied name ([`tied_paths`]) reads its first member, and exists when every member
    /// exists with one bound.
    pub fn param(&self, path: &str) -> Option<(f64, Bound)> {
        if path.contains('{') {
            let members = tied_paths(path);
            let first = self.param(members.first()?)?;
            return members.iter().all(|m| self.param(m).is_some_and(|(_, b)| b == first.1)).then_some(first);
        }
        let parts: Vec<&str> = path.split('.').collect();
        match parts.as_slice() {
            ["chips", chip, name] => find(CHIP_FIELDS, name).and_then(|f| Some(((f.get)(self.chips.get(*chip)?), f.bound))),
            ["chips", chip, "runtimes", rt, name] => {
                find(RUNTIME_FIELDS, name).and_then(|f| Some(((f.get)(self.chips.get(*chip)?.runtimes.get(*rt)?), f.bound)))
            }
            ["chips", chip, "engines", e, name] => {
                find(ENGINE_FIELDS, name).and_then(|f| Some(((f.get)(self.chips.get(*chip)?.engines.get(*e)?), f.bound)))
            }
            ["comm", name] => find(COMM_FIELDS, name).map(|f| ((f.get)(&self.comm), f.bound)),
            ["moe", name] => find(MOE_FIELDS, name).map(|f| ((f.get)(&self.moe), f.bound)),
            ["kernels", name] => find(KERNEL_FIELDS, name).map(|f| ((f.get)(&self.kernels), f.bound)),
            ["misc", name] => find(MISC_FIELDS, name).map(|f| ((f.get)(&self.misc), f.bound)),
            ["faults", name] => find(FAULT_FIELDS, name).map(|f| ((f.get)(&self.faults), f.bound)),
            _ => None,
        }
    }

    /// Sets the parameter at a dotted path (every member of a tied name); `false` if there is
    /// no such parameter.
    pub fn set_param(&mut self, path: &str, v: f64) -> bool {
        if path.contains('{') {
            if self.param(path).is_none() {
                return false;
            }
            return tied_paths(path).iter().all(|m| self.set_param(m, v));
        }
        let parts: Vec<&str> = path.split('.').collect();
        let set = |f: Option<&Field<_>>, x: Option<&mut _>| f.zip(x).map(|(f, x)| (f.set)(x, v)).is_some();
        match parts.as_slice() {
            ["chips", chip, name] => set(find(CHIP_FIELDS, name), self.chips.get_mut(*chip)),
            ["chips", chip, "runtimes", rt, name] => {
                let rt = self.chips.get_mut(*chip).and_then(|c| c.runtimes.get_mut(*rt));
                find(RUNTIME_FIELDS, name).zip(rt).map(|(f, x)| (f.set)(x, v)).is_some()
            }
            ["chips", chip, "engines", e, name] => {
                let h = self.chips.get_mut(*chip).and_then(|c| c.engines.get_mut(*e));
                find(ENGINE_FIELDS, name).zip(h).map(|(f, x)| (f.set)(x, v)).is_some()
            }
            ["comm", name] => find(COMM_FIELDS, name).map(|f| (f.set)(&mut self.comm, v)).is_some(),
            ["moe", name] => find(MOE_FIELDS, name).map(|f| (f.set)(&mut self.moe, v)).is_some(),
            ["kernels", name] => find(KERNEL_FIELDS, name).map(|f| (f.set)(&mut self.kernels, v)).is_some(),
            ["misc", name] => find(MISC_FIELDS, name).map(|f| (f.set)(&mut self.misc, v)).is_some(),
            ["faults", name] => find(FAULT_FIELDS, name).map(|f| (f.set)(&mut self.faults, v)).is_some(),
            _ => false,
        }
    }

    /// Checks every value against its bound, that chips are catalog chips (or the harness host)
    /// with at least one runtime, and that every source names a parameter and its current value.
    pub fn check(&self) -> Result<(), Issue> {
        let known = known_chips();
        for (chip, c) in &self.chips {
            if !known.iter().any(|k| k == chip) {
                let hint = crate::util::did_you_mean(chip, &known.iter().map(String::as_str).collect::<Vec<_>>())
                    .map_or_else(String::new, |s| format!(" (did you mean `{s}`?)"));
                return Err(Issue::new(
                    &["chips", chip],
                    format!("chip `{chip}` is not a chip of any catalog node{hint}; known: {}", known.join(", ")),
                ));
            }
            if c.runtimes.is_empty() {
                return Err(Issue::new(
                    &["chips", chip],
                    format!("chip `{chip}` has no runtimes (add [chips.{chip}.runtimes.mlx] or .llama-cpp)"),
                ));
            }
            if let Some(e) = c.engines.keys().find(|e| !HOST_ENGINES.contains(&e.as_str())) {
                return Err(Issue::new(
                    &["chips", chip, "engines", e],
                    format!("engine `{e}` has no host costs of its own (engines with their own: {})", HOST_ENGINES.join(", ")),
                ));
            }
        }
        for p in self.params() {
            if !p.bound.admits(p.value) {
                let unit = if p.unit.is_empty() { String::new() } else { format!(" ({})", p.unit) };
                let at: Vec<&str> = dotted_segments(&p.path);
                return Err(Issue::new(&at, format!("`{}` = {} must be {}{unit}", p.path, p.value, p.bound.describe())));
            }
        }
        for (path, s) in &self.sources {
            let at = ["sources", path.as_str()];
            match self.param(path) {
                None => return Err(Issue::new(&at, format!("source for `{path}`, which is not a parameter of this profile"))),
                Some((v, _)) if s.value.is_some_and(|x| x != v) => {
                    return Err(Issue::new(
                        &at,
                        format!(
                            "source for `{path}` speaks for {} but the value is {v}; update or remove the source",
                            s.value.unwrap_or(v)
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        match &self.uncertainty {
            Some(u) => u.check(self),
            None => Ok(()),
        }
    }
}

/// Chip keys a profile may have: the chips of the catalog's nodes and the harness host.
fn known_chips() -> Vec<String> {
    let cat = crate::catalog::catalog();
    let mut v: Vec<String> = cat.node_ids().iter().filter_map(|id| cat.node(id)).map(|n| n.chip.clone()).collect();
    v.push(HOST_CHIP.to_string());
    v.sort();
    v.dedup();
    v
}

/// Chip key under which a harness host's parameters live in a profile.
pub const HOST_CHIP: &str = "harness-host";

/// The table keys of a dotted parameter path (`chips.m3-ultra.bw_eff_dense` -> 3 keys).
fn dotted_segments(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

/// A problem found in a profile: the keys of the value it is about, and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct Issue {
    /// Table keys leading to the value (for locating it in the file).
    pub at: Vec<String>,
    /// What is wrong.
    pub message: String,
}

impl Issue {
    fn new(at: &[&str], message: String) -> Issue {
        Issue { at: at.iter().map(|s| s.to_string()).collect(), message }
    }
}

/// Errors loading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file could not be read.
    #[error("cannot read profile {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The TOML is invalid, or a key is missing, unknown or of the wrong type.
    #[error("{path}:{line}: invalid profile: {message}")]
    Parse {
        /// Path.
        path: String,
        /// 1-based line of the problem.
        line: usize,
        /// Parser message (names the key).
        message: String,
    },
    /// A value is out of range, a chip unknown or a source inconsistent.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// Path.
        path: String,
        /// 1-based line of the value.
        line: usize,
        /// What is wrong (names the parameter).
        message: String,
    },
}

impl Profile {
    /// The embedded default profile.
    pub fn default_profile() -> Profile {
        Profile::parse(DEFAULT_PROFILE, "calibration/profiles/default.toml").expect("embedded default profile is valid")
    }

    /// The embedded hand-set profile: the priors `calibrate` starts from, each with its source.
    pub fn hand_set() -> Profile {
        Profile::parse(HAND_SET_PROFILE, "calibration/profiles/hand-set.toml").expect("embedded hand-set profile is valid")
    }

    /// Loads and checks a profile file.
    pub fn load(path: &std::path::Path) -> Result<Profile, ProfileError> {
        let text = crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES)
            .map_err(|source| ProfileError::Io { path: path.display().to_string(), source })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// Parses and checks profile text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Profile, ProfileError> {
        let mut p: Profile = toml::from_str(text).map_err(|e| {
            let msg = crate::util::user_words(e.message().trim());
            ProfileError::Parse {
                path: path.to_string(),
                line: line_of(text, e.span().map_or(0, |s| s.start)),
                message: explain_retired(match crate::util::toml_shape(text, e.span().unwrap_or(0..0), &msg) {
                    Some((msg, help)) => format!("{msg}; {help}"),
                    None => msg,
                }),
            }
        })?;
        p.read_fp8_as_8bit_where_unset();
        p.check().map_err(|issue| ProfileError::Invalid {
            path: path.to_string(),
            line: line_of(text, locate(text, &issue.at)),
            message: explain_retired(issue.message),
        })?;
        Ok(p)
    }

    /// A runtime section written before FP8 had a multiplier of its own reads FP8 at its 8-bit
    /// one, as it did then ([`RuntimeParams::bw_mult_fp8`]).
    fn read_fp8_as_8bit_where_unset(&mut self) {
        for rt in self.chips.values_mut().flat_map(|c| c.runtimes.values_mut()) {
            if rt.bw_mult_fp8.is_nan() {
                rt.bw_mult_fp8 = rt.bw_mult_8bit;
            }
        }
    }

    /// Parameters for a chip, if profiled.
    pub fn chip(&self, chip: &str) -> Option<&ChipParams> {
        self.chips.get(chip)
    }

    /// The host costs engine `engine` (a [`HOST_ENGINES`] key) runs with on chip `chip`, and the
    /// chip they were measured on: the chip's own `[chips.<chip>.engines.<engine>]`, else the
    /// first profiled chip (by name) that has them. An engine's host cost is CPU work (its Python
    /// scheduler, sampling, detokenising and streaming), not GPU work, so a chip whose rows never
    /// measured it borrows another chip's rather than falling back to the bare runtime's zero
    /// (which let vllm-mlx on an M3 Ultra run without its batching loop's ~3 ms a step).
    /// Assumption, no source times it: the same Python loop costs the same on the Apple
    /// P-cores of the M3 and M4 generations (no CPU single-thread figure in FACTS).
    pub fn engine_host(&self, chip: &str, engine: &str) -> Option<(&str, &EngineHostParams)> {
        if let Some((name, c)) = self.chips.get_key_value(chip) {
            if let Some(h) = c.engines.get(engine) {
                return Some((name.as_str(), h));
            }
        }
        self.chips.iter().find_map(|(name, c)| c.engines.get(engine).map(|h| (name.as_str(), h)))
    }

    /// The profiled chip whose parameters `node` runs with: its own chip when profiled; else
    /// the node's `calibrated_as`; else its family's prior, stated here because no source
    /// measures an unprofiled chip: an Apple chip no built-in node has takes the profiled chip of its own generation
    /// (`m4-pro` -> `m4-max`), or the nearest generation (an M5 reads the M4's parameters:
    /// assumption, same Metal kernels and MLX build); other chips have no family rule and keep
    /// their own name (the plan then asks for `calibrated_as`). The envelope reports every
    /// substitution as an extrapolation.
    pub fn params_chip(&self, node: &crate::hw::NodeSpec) -> String {
        if self.chips.contains_key(&node.chip) {
            return node.chip.clone();
        }
        if let Some(c) = &node.calibrated_as {
            return c.clone();
        }
        let generation = |c: &str| -> Option<u32> { c.strip_prefix('m')?.split('-').next()?.parse().ok() };
        // A chip of the built-in catalog that the profile lacks is the profile's gap (the
        // caller's error names it); the nearest generation stands in only for chips no
        // built-in node has (a user's node).
        let built_in = crate::catalog::embedded().nodes.iter().any(|n| n.chip == node.chip);
        if node.os == crate::hw::Os::Macos && !built_in {
            if let Some(g) = generation(&node.chip) {
                let best = self.chips.keys().filter_map(|c| generation(c).map(|cg| (cg.abs_diff(g), std::cmp::Reverse(cg), c))).min();
                if let Some((_, _, c)) = best {
                    return c.clone();
                }
            }
        }
        node.chip.clone()
    }
}

/// The value of a field a profile left out, filled in after parsing (NaN: no profile value is).
fn unset() -> f64 {
    f64::NAN
}

/// Parameters earlier profiles had and the twin no longer reads, with why they went (issue 20):
/// a profile that still sets one is refused with this reason and what to delete.
const RETIRED_PARAMS: &[(&str, &str, &str)] = &[
    (
        "jaccl_window",
        "2026-12-04",
        "RDMA messages are timed as latency + one JACCL round + bytes at the link rate, not a round per window of frames",
    ),
    ("bw_ws_per_tb", "2026-12-04", "the dense working-set term could make a pipeline beat one node; it was removed"),
    (
        "expert_popularity_exponent",
        "2026-12-05",
        "expert popularity is log-normal, not Zipf: `[moe] expert_popularity_sigma` replaces it, 1.8 as the shipped fit",
    ),
];

/// `message`, with the reason and the fix appended when it is about a retired parameter.
fn explain_retired(message: String) -> String {
    match RETIRED_PARAMS.iter().find(|(name, ..)| message.contains(&format!("{name}`"))) {
        Some((name, date, why)) => format!(
            "{message}; `{name}` was removed on {date} ({why}): delete its line, its [sources] entry and its \
             mentions in [fit] and [uncertainty], or refit"
        ),
        None => message,
    }
}

/// Byte offset of the value at `keys` in TOML text (0 when it cannot be found).
fn locate(text: &str, keys: &[String]) -> usize {
    use toml::de::{DeTable, DeValue};
    let Ok(doc) = DeTable::parse(text) else { return 0 };
    let mut table = doc.get_ref();
    let mut at = 0;
    for key in keys {
        let Some((_, v)) = table.iter().find(|(k, _)| k.get_ref() == key) else { break };
        at = v.span().start;
        match v.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    at
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_profile_parses() {
        let p = Profile::default_profile();
        assert!(p.chip("m3-ultra").is_some());
        assert!(p.chip("m3-ultra").unwrap().runtimes.contains_key("mlx"));
    }

    #[test]
    fn a_profile_from_before_the_fp8_multiplier_reads_fp8_at_its_8bit_one() {
        let good = include_str!("../calibration/profiles/hand-set.toml");
        let old = good.replace("bw_mult_fp8 = 1.0\n", "");
        assert!(!old.contains("bw_mult_fp8 = "));
        let mut p = Profile::parse(&old, "old.toml").unwrap();
        let cuda = &p.chips["gb10"].runtimes["cuda"];
        assert_eq!(cuda.bw_mult_fp8, cuda.bw_mult_8bit);
        // Written out again, the value is explicit and reads back the same.
        p.chips.get_mut("gb10").unwrap().runtimes.get_mut("cuda").unwrap().bw_mult_8bit = 0.7;
        p.read_fp8_as_8bit_where_unset();
        assert_eq!(p.chips["gb10"].runtimes["cuda"].bw_mult_fp8, 1.0, "set values are kept");
        let text = toml::to_string(&p).unwrap();
        assert_eq!(Profile::parse(&text, "again.toml").unwrap().chips["gb10"].runtimes["cuda"].bw_mult_fp8, 1.0);
    }

    #[test]
    fn a_profile_from_before_the_kernels_section_runs_flash_attention_at_the_gemm_rate() {
        let good = include_str!("../calibration/profiles/hand-set.toml");
        let start = good.find("[kernels]\n").unwrap();
        let end = start + good[start..].find("[misc]").unwrap();
        let source = good.find("\"kernels.flash_compute_ratio\"").unwrap();
        let source_end = source + good[source..].find('\n').unwrap() + 1;
        let old = format!("{}{}{}", &good[..start], &good[end..source], &good[source_end..]);
        assert!(!old.contains("flash_compute_ratio"));
        let p = Profile::parse(&old, "old.toml").unwrap();
        assert_eq!(p.kernels.flash_compute_ratio, 1.0);
        assert_eq!(p.param("kernels.flash_compute_ratio"), Some((1.0, Bound::Fraction)));
    }

    #[test]
    fn a_profile_with_a_retired_parameter_is_refused_with_the_reason_and_the_fix() {
        let good = include_str!("../calibration/profiles/hand-set.toml");
        for (from, to, name) in [
            ("cpu_reduce_gbs = 20.0", "jaccl_window = 2\ncpu_reduce_gbs = 20.0", "jaccl_window"),
            ("bw_eff_dense = 0.793\n", "bw_eff_dense = 0.793\nbw_ws_per_tb = 1.0\n", "bw_ws_per_tb"),
            ("expert_popularity_sigma = 1.0", "expert_popularity_exponent = 0.5", "expert_popularity_exponent"),
        ] {
            assert!(good.contains(from), "{from}");
            let e = Profile::parse(&good.replacen(from, to, 1), "old.toml").unwrap_err().to_string();
            assert!(e.contains(&format!("`{name}` was removed")) && e.contains("delete its line"), "{e}");
        }
        let e = Profile::parse(&good.replacen("expert_popularity_sigma = 1.0", "expert_popularity_exponent = 0.5", 1), "old.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("on 2026-12-05") && e.contains("`[moe] expert_popularity_sigma` replaces it"), "{e}");
        // A source left behind for a removed parameter says the same.
        let e = explain_retired("source for `comm.jaccl_window`, which is not a parameter of this profile".into());
        assert!(e.contains("`jaccl_window` was removed"), "{e}");
        assert_eq!(explain_retired("other".into()), "other");
    }

    #[test]
    fn paths_get_and_set_every_parameter() {
        let mut p = Profile::default_profile();
        for info in p.clone().params() {
            assert_eq!(p.param(&info.path).map(|x| x.0), Some(info.value), "{}", info.path);
            let v = if info.bound == Bound::Count { info.value + 1.0 } else { info.value * 0.5 + 0.25 };
            assert!(p.set_param(&info.path, v));
            assert_eq!(p.param(&info.path).unwrap().0, v, "{}", info.path);
        }
        assert!(p.param("chips.nope.bw_eff_dense").is_none() && p.param("comm.nope").is_none() && p.param("meta.name").is_none());
        assert!(!p.set_param("chips.m3-ultra.runtimes.nope.bw_scale", 1.0));
    }

    #[test]
    fn a_tied_name_stands_for_every_combination_and_is_one_value() {
        assert_eq!(tied_paths("comm.rpc_call_us"), ["comm.rpc_call_us"]);
        assert_eq!(
            tied_paths("chips.{m3-ultra,m2-ultra}.runtimes.{mlx,llama-cpp}.bw_mult_half"),
            [
                "chips.m3-ultra.runtimes.mlx.bw_mult_half",
                "chips.m3-ultra.runtimes.llama-cpp.bw_mult_half",
                "chips.m2-ultra.runtimes.mlx.bw_mult_half",
                "chips.m2-ultra.runtimes.llama-cpp.bw_mult_half",
            ]
        );
        let mut p = Profile::default_profile();
        p.set_param("chips.m2-ultra.bw_eff_dense", 0.6);
        let tied = "chips.{m3-ultra,m2-ultra}.bw_eff_dense";
        // Read: the first member's value and the shared bound.
        assert_eq!(p.param(tied), Some((p.chips["m3-ultra"].bw_eff_dense, Bound::Fraction)));
        // Written: every member.
        assert!(p.set_param(tied, 0.7));
        assert_eq!((p.chips["m3-ultra"].bw_eff_dense, p.chips["m2-ultra"].bw_eff_dense), (0.7, 0.7));
        // A member that does not exist makes the whole name unknown; members of different
        // bounds are no one parameter.
        assert!(p.param("chips.{m3-ultra,nope}.bw_eff_dense").is_none());
        assert!(!p.set_param("chips.{m3-ultra,nope}.bw_eff_dense", 0.5));
        assert!(p.param("chips.m3-ultra.{bw_eff_dense,pj_per_byte}").is_none());
        // An unclosed brace names nothing (and does not recurse).
        assert!(tied_paths("chips.{m3-ultra.bw_eff_dense").is_empty());
        assert!(p.param("chips.{m3-ultra.bw_eff_dense").is_none());
        assert!(!p.set_param("chips.{m3-ultra.bw_eff_dense", 0.5));
    }

    #[test]
    fn bad_profiles_name_file_line_and_parameter() {
        let good = include_str!("../calibration/profiles/hand-set.toml");
        let cases = [
            ("cpu_reduce_gbs = 20.0", "cpu_reduce_gbs = 0.0", "comm.cpu_reduce_gbs"),
            ("bw_eff_dense = 0.793\n", "bw_eff_dense = 1.5\n", "chips.m3-ultra.bw_eff_dense"),
            ("jitter_cv = 0.02", "jitter_cv = -0.1", "misc.jitter_cv"),
            ("kernel_launch_us = 7.2", "kernel_launch_us = nan", "chips.m3-ultra.runtimes.mlx.kernel_launch_us"),
            ("cpu_reduce_gbs = 20.0\n", "", "cpu_reduce_gbs"),
        ];
        // A misspelt chip, everywhere it appears: the first line that names it.
        let misspelt = good.replace("chips.gb10", "chips.gb1O");
        let e = Profile::parse(&misspelt, "bad.toml").unwrap_err().to_string();
        let line = misspelt[..misspelt.find("[chips.gb1O]").unwrap()].matches('\n').count() + 1;
        assert!(e.starts_with(&format!("bad.toml:{line}:")) && e.contains("gb1O") && e.contains("did you mean `gb10`"), "{e}");
        for (from, to, name) in cases {
            assert!(good.contains(from), "{from}");
            let text = good.replacen(from, to, 1);
            let e = Profile::parse(&text, "bad.toml").unwrap_err().to_string();
            let line = text[..text.find(to).filter(|_| !to.is_empty()).unwrap_or(0)].matches('\n').count() + 1;
            assert!(e.starts_with("bad.toml:") && e.contains(name), "{e}");
            if !to.is_empty() {
                assert!(e.starts_with(&format!("bad.toml:{line}:")), "{e} (expected line {line})");
            }
        }
    }
}
