//! Parameters of a fit: reading and writing them by dotted path, the free-space transforms the
//! optimiser works in, and which parameters the harness and the published rows constrain.

use super::CalibrateError;
use crate::profile::{Bound, HOST_CHIP, Profile};

/// Reads a parameter by dotted path (`chips.m3-ultra.bw_eff_dense`).
pub fn get_param(profile: &Profile, path: &str) -> Option<f64> {
    profile.param(path).map(|(v, _)| v)
}

/// Returns a copy of `profile` with the parameters at `paths` set to `values`.
pub fn set_params(profile: &Profile, paths: &[String], values: &[f64]) -> Result<Profile, CalibrateError> {
    let mut p = profile.clone();
    for (path, v) in paths.iter().zip(values) {
        match p.param(path) {
            None => return Err(CalibrateError::UnknownParam(path.clone())),
            Some((_, Bound::Count)) => return Err(CalibrateError::Discrete(path.clone())),
            Some(_) => {
                p.set_param(path, *v);
            }
        }
    }
    Ok(p)
}

/// Whether the optimiser keeps a parameter in (0, 1) (an efficiency, a fraction of a peak)
/// through a logistic; every other parameter stays positive through a logarithm.
pub(crate) fn is_fraction(profile: &Profile, path: &str) -> bool {
    matches!(profile.param(path), Some((_, Bound::Fraction)))
}

/// The optimiser's unbounded variable for value `v`.
pub(crate) fn to_free(fraction: bool, v: f64) -> f64 {
    if fraction { (v / (1.0 - v)).ln() } else { v.ln() }
}

/// The value of free variable `x`; clamped so that a trial step of the optimiser can never
/// produce absurd values (efficiencies of 1e-40, microsecond costs of 1e30).
pub(crate) fn from_free(fraction: bool, x: f64) -> f64 {
    if fraction { 1.0 / (1.0 + (-x.clamp(-12.0, 12.0)).exp()) } else { x.clamp(-14.0, 16.0).exp() }
}

/// d(value)/d(free variable), for propagating uncertainties.
pub(crate) fn dvalue(fraction: bool, v: f64) -> f64 {
    if fraction { v * (1.0 - v) } else { v }
}

/// A profile seeded for a harness host: when it has no `harness-host` chip, the host's
/// parameters start from the M3 Ultra's (MLX runtime only, without its host graph-build cost).
/// A profile with neither is returned as is: predicting harness data then fails with an error
/// naming the missing chip.
pub fn with_host_chip(base: &Profile) -> Profile {
    let mut p = base.clone();
    if !p.chips.contains_key(HOST_CHIP) {
        if let Some(seed) = p.chips.get(SEED_CHIP) {
            let mut chip = seed.clone();
            chip.runtimes.retain(|k, _| k == "mlx");
            // Not seeded: the Mac's graph-build cost per kernel is that CPU's, and the harness
            // fits none of its own (its launch cost takes whatever host time its runs show).
            for rt in chip.runtimes.values_mut() {
                rt.host_per_kernel_us = 0.0;
            }
            p.chips.insert(HOST_CHIP.into(), chip);
        }
    }
    p
}

/// The chip whose parameters seed a harness host's.
pub const SEED_CHIP: &str = "m3-ultra";

/// Parameters fitted from harness microbenchmarks by default.
pub fn harness_params() -> Vec<String> {
    [
        "bw_eff_dense",
        "compute_eff_dense",
        "bw_eff_expert",
        "compute_eff_expert",
        "bw_eff_attention",
        "compute_eff_attention",
        "runtimes.mlx.kernel_launch_us",
        // Kernel families: qmm at 8 and 16 bits and gather_qmm at 8 bits pin these apart from
        // the 4-bit kernels (dropped when a harness file has no such case).
        "runtimes.mlx.bw_mult_8bit",
        "runtimes.mlx.bw_mult_half",
        "runtimes.mlx.stage_us",
    ]
    .iter()
    .map(|p| format!("chips.{HOST_CHIP}.{p}"))
    .chain(["comm.tcp_message_us".to_string(), "comm.collective_in_context_us".to_string()])
    .collect()
}

/// A comma-separated list of parameter paths, split at the commas outside a tied name's braces:
/// `a.x,chips.{m3-ultra,m2-ultra}.y` is two parameters. Blank entries are dropped.
pub fn split_param_list(list: &str) -> Vec<String> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(list[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(list[start..].trim().to_string());
    out.retain(|p| !p.is_empty());
    out
}

/// The ~4-bit weight stream's efficiency of every profiled Apple chip, one parameter.
pub const APPLE_DENSE_STREAM: &str = "chips.{m3-ultra,m2-ultra}.bw_eff_dense";

/// The 8- and 16-bit weight kernels' bandwidth multiplier over the ~4-bit ones on every
/// profiled Apple chip and runtime, one parameter.
pub const APPLE_WIDE_STREAM: &str = "chips.{m3-ultra,m2-ultra}.runtimes.{mlx,llama-cpp}.bw_mult_{8bit,half}";

/// Parameters fitted from the published rows by default.
pub fn published_params() -> Vec<String> {
    [
        // Apple GPUs stream ~4-bit weights (MLX affine 4-bit, GGUF k-quants) at one fraction
        // of their spec bandwidth, and 8- and 16-bit weights at one multiple of it, whichever
        // chip and runtime (tied: one value each for every profiled Apple chip). The evidence
        // is on two chips and both runtimes: on the M3 Ultra, MLX 8-bit exo decode
        // (g-qwen3-exo-*) against the 4-bit rows; on the M2 Ultra, Llama 3 70B f16 llama.cpp
        // and bf16 MLX decode against its Q4_K_M decode (n-m2u-*-tg512, m2u-l70b-bf16-mlx).
        // A chip no row measures (an M1 Max, an M3 Max) reads the same two values.
        APPLE_DENSE_STREAM,
        APPLE_WIDE_STREAM,
        "chips.m3-ultra.bw_eff_expert",
        "chips.m3-ultra.compute_eff_dense",
        "chips.m3-ultra.compute_eff_expert",
        "chips.m3-ultra.compute_eff_attention",
        "chips.m3-ultra.pj_per_flop",
        "chips.m3-ultra.runtimes.mlx.kernel_launch_us",
        "chips.m3-ultra.runtimes.llama-cpp.kernel_launch_us",
        "comm.jaccl_round_us",
        "comm.jaccl_peer_us",
        "comm.rpc_call_us",
        "comm.rpc_graph_node_us",
        "chips.gb10.bw_eff_dense",
        "chips.gb10.runtimes.llama-cpp.kernel_launch_us",
        // GB10 MoE prefill: ggml-org's llama-bench pp2048 rows run one 2,048-token micro-batch
        // (`-ub 2048`), compute-bound (n-gb10-gptoss120b-lcpp-pp2048, -pp2048-d32k): the expert
        // GEMM's full-tile rate (half of each 128-row MMQ tile is padding there). The dense rate,
        // which llama.cpp's flash-attention prefill at depth also runs at, stays at its prior:
        // fitted (2026-12-06) the d32k row set it to 0.28, which would read FACTS.md's SGLang
        // Llama 3.1 8B FP8 prefill (7,991 tok/s, cuBLAS GEMMs at the same rate) near half.
        "chips.gb10.compute_eff_expert",
        // GB10 MoE decode: llama.cpp's gpt-oss-120b tg32 rows (n-gb10-gptoss120b-lcpp-tg32,
        // -tg32-d32k, the batched-bench b1) stream the MXFP4 experts at this rate alone; the
        // vLLM rows at it times the CUDA MXFP4 multiplier.
        "chips.gb10.bw_eff_expert",
        // The AI Max+ 395's expert rate and launch cost stay at their FACTS priors (hand-set.toml):
        // the launch cost from a published 8B decode on a Ryzen AI MAX 385, the expert rate as
        // the dense mat-vec's. Fitted, the one 2025-08 MXFP4 row (fw-gptoss120b-1) set both and
        // every small model and small-active MoE on the chip read half as fast held out. The
        // dense rate's prior is the chip's measured read ceiling (212 GB/s, FACTS-2026 A3), which
        // the cost model caps every stream at: its rows would push it above, so `calibrate`
        // finds it unconstrained and keeps the prior (2026-12-06).
        "chips.ryzen-ai-max-395.bw_eff_dense",
        // vllm-mlx's own host costs, per step and per sequence: its concurrency rows at 1 and 8
        // requests (m4max-l32-1b-vllm-c1, -c8) pin them apart.
        "chips.m4-max.engines.vllm-mlx.host_per_step_us",
        "chips.m4-max.engines.vllm-mlx.host_per_seq_us",
        // The CUDA engines on GB10: the eager launch cost (vLLM rows with --enforce-eager,
        // n-spark1-gptoss120b-vllm-c1/-c8/-c32; it overlaps the GPU, so on these GPU-bound
        // rows it moves nothing and `calibrate` drops it), vLLM's host work per sequence (their c8/c32)
        // and SGLang's own (its b32), and the FP8 W8A8 kernel (SGLang's Llama 3.1 8B FP8 rows), a
        // family of its own since 2026-12-05. vLLM's MXFP4 MoE and 8-bit multipliers stay at 1
        // (the chip's expert and dense rates, as llama.cpp's kernels stream): fitted, the three
        // vLLM rows could not tell them apart and put the experts at 255 GB/s, above the GB10's
        // measured 231-234 GB/s read ceiling (FACTS-2026 B2). The graph replay cost stays at its
        // prior: only two rows ran graphs, and the FP8 multiplier already moves with them.
        "chips.gb10.runtimes.cuda.kernel_launch_us",
        "chips.gb10.runtimes.cuda.host_per_seq_us",
        "chips.gb10.runtimes.cuda.bw_mult_fp8",
        "chips.gb10.engines.sglang.host_per_seq_us",
        // MLX's launch cost on the M4 Max is not fitted: the vllm-mlx rows cannot tell it from
        // vllm-mlx's own per-step and per-sequence host costs (fitted, its standard error was
        // +-60%, and reading n-m4max-q3-30b-a3b-vllmmlx-c5 with its benchmark's 256 tokens moved
        // it 1.6 -> 3.5 us), while FACTS.md's mlx-lm simple-mode decode of Llama-3.2-3B (200.1
        // tok/s, GPU-bound, no batching engine) gives it alone: its prior (hand-set.toml).
        // K-quant dequantisation in the Metal GEMM apart from the GEMM's own efficiency: the
        // M2 Ultra's Llama 3 70B Q4_K_M prefill rows (pp512, pp8192) against its f16 pp512 row.
        "chips.m2-ultra.compute_eff_dense",
        "chips.m2-ultra.runtimes.llama-cpp.dequant_ops_kquant",
        // Expert popularity: the batched MoE rows of independent requests, vLLM on GB10 at 8
        // and 32 concurrent requests (n-spark1-gptoss120b-vllm-c8/-c32) against its c1 row.
        "moe.expert_popularity_sigma",
        // Flash attention's FLOP rate against the GEMM's, one for every chip: the depth pairs
        // of llama.cpp prefill (M3 Ultra pp512/pp4096 of Llama 3.2 3B, 3.3 70B and R1, M2 Ultra
        // pp512/pp8192, GB10 pp2048 at d0/d32768) move it together.
        "kernels.flash_compute_ratio",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        let p = Profile::default_profile();
        let v = get_param(&p, "chips.m3-ultra.bw_eff_dense").unwrap();
        let q = set_params(&p, &["chips.m3-ultra.bw_eff_dense".into()], &[v * 2.0]).unwrap();
        assert_eq!(get_param(&q, "chips.m3-ultra.bw_eff_dense").unwrap(), v * 2.0);
        assert!(set_params(&p, &["chips.nope.x".into()], &[1.0]).is_err());
    }

    #[test]
    fn a_parameter_list_splits_outside_tied_names() {
        assert_eq!(
            split_param_list("comm.rpc_call_us, chips.{m3-ultra,m2-ultra}.bw_eff_dense,,kernels.flash_compute_ratio"),
            ["comm.rpc_call_us", "chips.{m3-ultra,m2-ultra}.bw_eff_dense", "kernels.flash_compute_ratio"]
        );
        assert_eq!(split_param_list(APPLE_WIDE_STREAM), [APPLE_WIDE_STREAM]);
    }

    #[test]
    fn a_profile_without_the_seed_chip_is_not_a_panic() {
        let mut p = Profile::default_profile();
        p.chips.remove(SEED_CHIP);
        p.chips.remove(HOST_CHIP);
        assert!(!with_host_chip(&p).chips.contains_key(HOST_CHIP));
    }
}
