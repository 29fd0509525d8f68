//! The scenario file exactly as written: serde structs with spans, unknown keys refused.

use serde::Deserialize;
use toml::Spanned;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Option<Spanned<String>>,
    /// Free text for the reader; accepted and not used.
    #[allow(dead_code)]
    pub(super) description: Option<String>,
    pub(super) seed: Option<Spanned<i64>>,
    pub(super) cluster: Spanned<RawCluster>,
    /// Absent for `kind = "hpl"` (HPL runs no model).
    #[serde(default = "no_model")]
    pub(super) model: Spanned<RawModel>,
    pub(super) engine: Option<Spanned<RawEngine>>,
    pub(super) workload: Option<Spanned<RawWorkload>>,
    pub(super) cost: Option<Spanned<RawCost>>,
    /// Sweep axes; read by `supernode sweep`, ignored by `run`.
    pub(super) sweep: Option<toml::Table>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCluster {
    pub(super) nodes: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) node: Option<Spanned<String>>,
    pub(super) count: Option<Spanned<i64>>,
    pub(super) fabric: Option<Spanned<String>>,
    pub(super) topology: Option<Spanned<String>>,
    pub(super) wired_limit_fraction: Option<Spanned<f64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub(super) name: Option<Spanned<String>>,
    pub(super) hf_config: Option<Spanned<String>>,
    pub(super) quant: Option<Spanned<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEngine {
    pub(super) name: Spanned<String>,
    pub(super) parallelism: Option<Spanned<String>>,
    pub(super) macos: Option<Spanned<String>>,
    pub(super) jaccl_frame_kib: Option<Spanned<i64>>,
    pub(super) allreduce: Option<Spanned<String>>,
    pub(super) fast_sync: Option<Spanned<bool>>,
    pub(super) prefill_chunk: Option<Spanned<i64>>,
    pub(super) mla_prefill: Option<Spanned<String>>,
    pub(super) mla_cache: Option<Spanned<String>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) kind: Option<Spanned<String>>,
    pub(super) prompt_tokens: Option<Spanned<i64>>,
    pub(super) generate_tokens: Option<Spanned<i64>>,
    pub(super) hpl_n: Option<Spanned<i64>>,
    pub(super) hpl_nb: Option<Spanned<i64>>,
    pub(super) hpl_p: Option<Spanned<i64>>,
    pub(super) hpl_q: Option<Spanned<i64>>,
}

/// An absent `[model]` table: no name, no config (an error unless the workload is HPL).
fn no_model() -> Spanned<RawModel> {
    Spanned::new(0..0, RawModel { name: None, hf_config: None, quant: None })
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCost {
    pub(super) amortization_years: Option<Spanned<f64>>,
    pub(super) electricity_usd_per_kwh: Option<Spanned<f64>>,
}
