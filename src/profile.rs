//! Calibration profiles: the small set of named parameters that physics alone does not give
//! (kernel efficiencies, launch and synchronization costs, collective overheads, power
//! coefficients). The default profile is `calibration/profiles/default.toml`, embedded at build
//! time; `--profile FILE` replaces it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

const DEFAULT_PROFILE: &str = include_str!("../calibration/profiles/default.toml");

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
    #[serde(default)]
    pub calibrated_node_counts: Vec<u32>,
    /// Chip families the profile was calibrated on (others use assumed values).
    #[serde(default)]
    pub calibrated_chips: Vec<String>,
    /// Largest context length the profile was calibrated on.
    #[serde(default)]
    pub calibrated_max_context: u64,
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
    /// Wall power added when the GPU is busy, W.
    pub gpu_dynamic_w: f64,
    /// Wall power added per busy CPU core, W.
    pub cpu_core_w: f64,
    /// Per-runtime costs on this chip, keyed by runtime (`mlx`, `llama-cpp`).
    pub runtimes: BTreeMap<String, RuntimeParams>,
}

/// Per-runtime, per-chip costs.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuntimeParams {
    /// Cost of one kernel launch / dispatch, microseconds.
    pub kernel_launch_us: f64,
    /// Host work per forward pass (sampling, detokenize, Python), microseconds.
    pub host_per_step_us: f64,
    /// Scale applied to the bandwidth efficiencies for this runtime's kernels.
    pub bw_scale: f64,
    /// Scale applied to the compute efficiencies for this runtime's kernels.
    pub compute_scale: f64,
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
    /// Messages in flight per peer (JACCL uses 2 buffers).
    pub jaccl_window: u32,
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
    /// Fitted from the harness's segment chains; 0 where no such measurement exists.
    #[serde(default)]
    pub collective_in_context_us: f64,
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
    /// The fit that produced this profile, if it was fitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
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
    /// The TOML is invalid.
    #[error("invalid profile {path}: {message}")]
    Parse {
        /// Path.
        path: String,
        /// Parser message.
        message: String,
    },
}

impl Profile {
    /// The embedded default profile.
    pub fn default_profile() -> Profile {
        toml::from_str(DEFAULT_PROFILE).expect("embedded default profile is valid")
    }

    /// Loads a profile from a file.
    pub fn load(path: &std::path::Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io { path: path.display().to_string(), source })?;
        toml::from_str(&text).map_err(|e| ProfileError::Parse { path: path.display().to_string(), message: e.to_string() })
    }

    /// Parameters for a chip, if profiled.
    pub fn chip(&self, chip: &str) -> Option<&ChipParams> {
        self.chips.get(chip)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_profile_parses() {
        let p = super::Profile::default_profile();
        assert!(p.chip("m3-ultra").is_some());
        assert!(p.chip("m3-ultra").unwrap().runtimes.contains_key("mlx"));
    }
}
