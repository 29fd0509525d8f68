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
    pub(super) slo: Option<Spanned<RawSlo>>,
    pub(super) cost: Option<Spanned<RawCost>>,
    pub(super) faults: Option<Spanned<RawFaults>>,
    /// Sweep axes; read by `supernode sweep`, ignored by `run`.
    pub(super) sweep: Option<toml::Table>,
    /// User catalog entries (`[[catalog.node]]`, ...): read and installed by
    /// [`crate::catalog::user::parse_scenario_catalog`] before the rest resolves.
    #[allow(dead_code)]
    pub(super) catalog: Option<toml::Value>,
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
    pub(super) gpu_memory_limit_gb: Option<Spanned<f64>>,
    pub(super) power_mode_w: Option<Spanned<f64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub(super) name: Option<Spanned<String>>,
    pub(super) hf_config: Option<Spanned<String>>,
    pub(super) quant: Option<Spanned<String>>,
    pub(super) gguf_tensor_types: Option<Spanned<String>>,
    pub(super) size_gb: Option<Spanned<f64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEngine {
    pub(super) name: Spanned<String>,
    pub(super) parallelism: Option<Spanned<String>>,
    pub(super) pipeline_stages: Option<Spanned<i64>>,
    pub(super) tensor_ranks: Option<Spanned<i64>>,
    pub(super) replicas: Option<Spanned<i64>>,
    pub(super) macos: Option<Spanned<String>>,
    pub(super) jaccl_frame_kib: Option<Spanned<i64>>,
    pub(super) allreduce: Option<Spanned<String>>,
    pub(super) fast_sync: Option<Spanned<bool>>,
    pub(super) prefill_chunk: Option<Spanned<i64>>,
    pub(super) mla_prefill: Option<Spanned<String>>,
    pub(super) mla_cache: Option<Spanned<String>>,
    pub(super) backend: Option<Spanned<String>>,
    pub(super) rocm_tiles: Option<Spanned<String>>,
    pub(super) flash_attention: Option<Spanned<bool>>,
    pub(super) enforce_eager: Option<Spanned<bool>>,
    pub(super) kv_cache_dtype: Option<Spanned<String>>,
    pub(super) max_num_batched_tokens: Option<Spanned<i64>>,
    pub(super) max_num_seqs: Option<Spanned<i64>>,
    pub(super) gpu_memory_utilization: Option<Spanned<f64>>,
    pub(super) continuous_batching: Option<Spanned<bool>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) kind: Option<Spanned<String>>,
    pub(super) prompt_tokens: Option<Spanned<RawLength>>,
    pub(super) generate_tokens: Option<Spanned<RawLength>>,
    pub(super) context_tokens: Option<Spanned<i64>>,
    pub(super) hpl_n: Option<Spanned<i64>>,
    pub(super) hpl_nb: Option<Spanned<i64>>,
    pub(super) hpl_p: Option<Spanned<i64>>,
    pub(super) hpl_q: Option<Spanned<i64>>,
    pub(super) arrival: Option<Spanned<String>>,
    pub(super) concurrency: Option<Spanned<i64>>,
    pub(super) think_s: Option<Spanned<f64>>,
    pub(super) think: Option<Spanned<String>>,
    pub(super) rate_per_s: Option<Spanned<f64>>,
    pub(super) trace: Option<Spanned<String>>,
    pub(super) duration_s: Option<Spanned<f64>>,
    pub(super) requests: Option<Spanned<i64>>,
    pub(super) warmup_s: Option<Spanned<f64>>,
    pub(super) max_batch: Option<Spanned<i64>>,
    pub(super) kv_full: Option<Spanned<String>>,
    pub(super) batch: Option<Spanned<i64>>,
    pub(super) same_tokens: Option<Spanned<bool>>,
}

impl RawWorkload {
    /// A workload table with no keys set.
    pub(super) fn empty() -> Self {
        RawWorkload {
            kind: None,
            prompt_tokens: None,
            generate_tokens: None,
            context_tokens: None,
            hpl_n: None,
            arrival: None,
            concurrency: None,
            think_s: None,
            think: None,
            rate_per_s: None,
            trace: None,
            duration_s: None,
            requests: None,
            warmup_s: None,
            max_batch: None,
            batch: None,
            same_tokens: None,
            kv_full: None,
            hpl_nb: None,
            hpl_p: None,
            hpl_q: None,
        }
    }
}

/// A token count as written: a fixed integer, or a distribution table.
#[derive(Clone, Debug)]
pub(super) enum RawLength {
    /// `prompt_tokens = 128`.
    Fixed(i64),
    /// `prompt_tokens = { dist = "lognormal", mean = 1000, sigma = 0.8 }`.
    Dist(RawDist),
}

/// A drawn token count.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDist {
    pub(super) dist: String,
    pub(super) min: Option<i64>,
    pub(super) max: Option<i64>,
    pub(super) mean: Option<f64>,
    pub(super) sigma: Option<f64>,
}

impl<'de> Deserialize<'de> for RawLength {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawLength;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a token count, or a table such as { dist = \"uniform\", min = 64, max = 512 }")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawLength, E> {
                Ok(RawLength::Fixed(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawLength, E> {
                Ok(RawLength::Fixed(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawLength, A::Error> {
                RawDist::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(RawLength::Dist)
            }
        }
        d.deserialize_any(V)
    }
}

/// `[slo]`: latency targets a serving run is judged against.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlo {
    pub(super) ttft_p99_s: Option<Spanned<f64>>,
    pub(super) tpot_p99_ms: Option<Spanned<f64>>,
}

/// An absent `[model]` table: no name, no config (an error unless the workload is HPL).
fn no_model() -> Spanned<RawModel> {
    Spanned::new(0..0, RawModel { name: None, hf_config: None, quant: None, gguf_tensor_types: None, size_gb: None })
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCost {
    pub(super) amortization_years: Option<Spanned<f64>>,
    pub(super) electricity_usd_per_kwh: Option<Spanned<f64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFaults {
    pub(super) horizon_days: Option<Spanned<f64>>,
    pub(super) retry: Option<Spanned<bool>>,
    pub(super) node: Option<Spanned<RawNodeFaults>>,
    pub(super) link: Option<Spanned<RawLinkFaults>>,
    pub(super) straggler: Option<Spanned<RawSlowdown>>,
    pub(super) thermal: Option<Spanned<RawThermal>>,
    pub(super) crash: Option<Vec<Spanned<RawCrash>>>,
    pub(super) runtime: Option<Spanned<RawRuntimeFaults>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuntimeFaults {
    pub(super) load_failure_probability: Option<Spanned<f64>>,
    pub(super) tp_corrupt_above_prompt_tokens: Option<Spanned<i64>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNodeFaults {
    pub(super) mtbf_hours: Option<Spanned<f64>>,
    pub(super) reboot_minutes: Option<Spanned<f64>>,
    pub(super) disk_read_gbs: Option<Spanned<f64>>,
    pub(super) tcp_load_crash: Option<Spanned<bool>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLinkFaults {
    pub(super) mtbf_hours: Option<Spanned<f64>>,
    pub(super) repair_minutes: Option<Spanned<f64>>,
    pub(super) degrade_mtbf_hours: Option<Spanned<f64>>,
    pub(super) degrade_minutes: Option<Spanned<f64>>,
    pub(super) fallback: Option<Spanned<String>>,
    pub(super) rdma_instability: Option<Spanned<bool>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlowdown {
    pub(super) node: Spanned<i64>,
    pub(super) slowdown: Spanned<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawThermal {
    pub(super) after_minutes: Spanned<f64>,
    pub(super) slowdown: Spanned<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCrash {
    pub(super) node: Spanned<i64>,
    pub(super) at_minutes: Spanned<f64>,
}
