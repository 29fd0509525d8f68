//! The serialised result of one scenario, shared by `run` (JSON), sweep rows and charts.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Latency percentiles, milliseconds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile (serving runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

/// Latency percentiles of a serving run (unit in the key's name).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// What a serving run (`kind = "serve"`) adds to an estimate, after warm-up.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ServeMetrics {
    /// Decode tokens of all requests per second of the measurement window.
    pub aggregate_decode_tokens_per_s: f64,
    /// Mean over requests of each one's decode rate (output tokens / its decode time).
    pub per_request_decode_tokens_per_s: f64,
    /// Tokens after each request's first, per second from the earliest first token to the
    /// latest last token: the generation rate of benchmarks that start their clock at the first
    /// token (llama-benchy's concurrent `t/s (total)`), prefill before it excluded.
    #[serde(default)]
    pub generation_tokens_per_s: f64,
    /// Prompt tokens of all requests per second from the earliest request sent to the latest
    /// first token: the batch prompt rate of benchmarks that send their requests at once
    /// (llama-benchy's concurrent `pp t/s (total)`), queueing for the prefills included.
    #[serde(default)]
    pub batch_prompt_tokens_per_s: f64,
    /// Mean time from a request's arrival to the first text a streaming chat client sees, s:
    /// its first token, or for a model with a chat header (gpt-oss's harmony
    /// `<|channel|>analysis<|message|>`) the token after it (llama-benchy's TTFT).
    #[serde(default)]
    pub mean_ttft_text_s: f64,
    /// Time to first token, queueing included, s. (The top-level `ttft_s` is its mean.)
    pub ttft_percentiles_s: Quantiles,
    /// Arrival to last token, s.
    pub e2e_s: Quantiles,
    /// Gaps between consecutive tokens of a request after its first, over every request's
    /// tokens in the window, ms (the serving benchmarks' ITL percentiles: a decode step that a
    /// prefill chunk joins shows as a long gap). Their mean is `tpot_ms.mean`.
    #[serde(default)]
    pub itl_ms: Quantiles,
    /// Mean over requests of arrival to last token, s (the serving benchmarks' mean E2E
    /// latency).
    #[serde(default)]
    pub mean_e2e_s: f64,
    /// Prompt and output tokens of the completed requests per second of the measurement window
    /// (`vllm bench serve`'s "Total Token throughput", SGLang's total throughput).
    #[serde(default)]
    pub total_tokens_per_s: f64,
    /// Share of completed requests meeting every `[slo]` target (none when no target is set).
    pub slo_attainment: Option<f64>,
    /// Whether the p99 TTFT and p99 TPOT meet the `[slo]` targets (none when no target is set).
    pub slo_met: Option<bool>,
    /// Requests completed after warm-up.
    pub requests_completed: u64,
    /// Requests turned away after warm-up (KV cache could never hold them, or `kv_full = "reject"`).
    pub requests_rejected: u64,
    /// Output tokens per second of requests that met every SLO target.
    pub goodput_tokens_per_s: f64,
    /// Mean sequences in a forward, time-weighted.
    pub mean_batch: f64,
    /// Mean requests waiting, time-weighted.
    pub mean_queue: f64,
    /// Most requests waiting at once.
    pub peak_queue: u64,
    /// Highest KV occupancy of any node, % of what its wired limit leaves for KV.
    pub peak_kv_percent: f64,
    /// The runtime's scheduler as modelled.
    pub scheduler: String,
    /// The measurement window the statistics cover (warm-up to the end of the simulation), s.
    #[serde(default)]
    pub simulated_window_s: f64,
    /// The run hit its cap on simulated forwards before the workload's end: the statistics
    /// cover `simulated_window_s` only, not the whole `duration_s` or `requests`.
    #[serde(default)]
    pub truncated: bool,
}

impl ServeMetrics {
    /// The warnings a serving run prints: a truncated run, and a window in which no request
    /// completed (its per-request rate and latency percentiles then read 0).
    pub fn warnings(&self) -> Vec<String> {
        let empty = self.none_completed().then(|| {
            format!(
                "warning: no request that arrived after the warm-up completed in the {:.1} s window, so it reports no per-request rate or latency (0 in JSON): raise workload.duration_s (or lower the load)",
                self.simulated_window_s
            )
        });
        self.truncation_warning().into_iter().chain(empty).collect()
    }

    /// Whether no request that arrived after the warm-up completed in the window: the
    /// per-request rate and latency percentiles are then not measured (0 in JSON).
    pub fn none_completed(&self) -> bool {
        self.requests_completed == 0
    }

    /// The warning a truncated run prints (none when the whole workload was simulated).
    pub fn truncation_warning(&self) -> Option<String> {
        self.truncated.then(|| {
            format!(
                "warning: the serving run hit its cap on simulated work ({} forwards, {} tasks or {} queued requests): statistics cover the first {:.1} s after warm-up, not the whole workload",
                super::serve::MAX_SERVE_FORWARDS,
                super::serve::MAX_SIMULATED_TASKS,
                super::serve::MAX_QUEUED_REQUESTS,
                self.simulated_window_s
            )
        })
    }
}

/// Whether a prediction is inside the calibrated envelope.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Envelope {
    /// Profile used.
    pub profile: String,
    /// `inside` or `extrapolation`.
    pub status: String,
    /// Why it is an extrapolation (empty when inside).
    pub reasons: Vec<String>,
    /// What the run put in place of what the scenario named, inside the envelope or not (a
    /// TCP-only runtime on an RDMA fabric runs its TCP sibling).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Memory of one node, for reports.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NodeMemory {
    /// Node preset.
    pub node: String,
    /// Layers held (first..end).
    pub layers: [u64; 2],
    /// Weights, GB.
    pub weights_gb: f64,
    /// KV cache, GB.
    pub kv_cache_gb: f64,
    /// Runtime overhead, GB.
    pub overhead_gb: f64,
    /// Total, GB.
    pub total_gb: f64,
    /// Wired limit, GB.
    pub limit_gb: f64,
    /// Where the model fits only with the Mac's wired limit raised above the macOS default: the
    /// command that raises it to the limit this estimate assumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raise_wired_limit: Option<String>,
}

/// One line of a fault run's log: what a user of the cluster sees.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FaultLogEntry {
    /// When, seconds from the start of the horizon.
    pub t_s: f64,
    /// What happened.
    pub event: String,
    /// What the runtime did about it.
    pub effect: String,
}

/// Availability over a long horizon with faults (a scenario's `[faults]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FaultReport {
    /// Simulated horizon, days.
    pub horizon_days: f64,
    /// Share of the horizon the cluster was serving at a useful rate: at least
    /// `useful_rate_fraction` of the fault-free rate (not rebooting, reloading, stalled,
    /// stopped, failing requests for a lost path, nor crawling, e.g. over Wi-Fi).
    pub availability: f64,
    /// The least share of the fault-free rate that counts as available (the profile's
    /// `faults.useful_rate_fraction`).
    #[serde(default)]
    pub useful_rate_fraction: f64,
    /// Wall time spent serving below the fault-free rate, s, by cause (straggler, thermal,
    /// link-degraded, re-placed, fallback); states under `useful_rate_fraction` count here and
    /// not as available.
    #[serde(default)]
    pub degraded_s: std::collections::BTreeMap<String, f64>,
    /// Generated tokens of completed requests per second of horizon (generate workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_tokens_per_s: Option<f64>,
    /// Generated tokens of completed requests per day (generate workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_tokens_per_day: Option<f64>,
    /// The same without faults, back to back requests (generate workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_free_tokens_per_day: Option<f64>,
    /// Useful Gflops over the horizon: completed HPL runs only (HPL workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpl_goodput_gflops: Option<f64>,
    /// Requests (HPL: runs) completed.
    pub requests_completed: u64,
    /// Requests a fault interrupted that failed (not retried).
    pub requests_failed: u64,
    /// Requests a fault interrupted that were run again.
    pub requests_retried: u64,
    /// Time lost per cause, s: outages, slow running (as the time the lost throughput is
    /// worth) and interrupted work.
    pub time_lost_s: std::collections::BTreeMap<String, f64>,
    /// Fault events per kind.
    pub events: std::collections::BTreeMap<String, u64>,
    /// The first events and what the runtime did (what a user sees).
    pub log: Vec<FaultLogEntry>,
}

/// The shape of an HPL run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct HplProblem {
    /// Matrix order N.
    pub n: u64,
    /// Block size NB.
    pub nb: u64,
    /// Process grid rows P.
    pub p: u64,
    /// Process grid columns Q.
    pub q: u64,
}

/// The result of one scenario. Field names are the JSON contract of DESIGN.md.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Estimate {
    /// Scenario name.
    pub name: String,
    /// The contract's `"fits": true`: an estimate exists only for a scenario that fits (the
    /// failures are [`super::EstimateError`]), so this is a constant, not a state.
    pub fits: Fits,
    /// Engine id.
    pub engine: String,
    /// Parallelism id (within one replica).
    pub parallelism: String,
    /// Identical copies of the cluster behind a load balancer (`engine.replicas`); omitted
    /// when 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub replicas: usize,
    /// Model id.
    pub model: String,
    /// Quantization id.
    pub quant: String,
    /// Node presets.
    pub nodes: Vec<String>,
    /// Fabric id.
    pub fabric: String,
    /// Topology id.
    pub topology: String,
    /// Workload kind.
    pub workload: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Tokens already in the KV cache before the prompt (`workload.context_tokens`; omitted when
    /// 0): `prefill_tokens_per_s` is then the rate of the prompt after them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_tokens: u64,
    /// Generated tokens.
    pub generate_tokens: u64,
    /// Seed.
    pub seed: u64,
    /// Decode throughput, tokens/s.
    pub decode_tokens_per_s: f64,
    /// Prefill throughput, tokens/s.
    pub prefill_tokens_per_s: f64,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Time per output token, ms.
    pub tpot_ms: Percentiles,
    /// Cluster wall power during decode (its average), W.
    pub cluster_power_w: f64,
    /// Per-node wall power during decode (its average), W.
    pub node_power_w: Vec<f64>,
    /// Cluster wall power during prefill (its average), W.
    #[serde(default)]
    pub prefill_power_w: f64,
    /// Per-node wall power during prefill, W.
    #[serde(default)]
    pub node_prefill_power_w: Vec<f64>,
    /// The run's peak cluster wall power: the larger of the phases, W.
    #[serde(default)]
    pub peak_power_w: f64,
    /// Per node, the larger of its phase powers (what a wall meter's maximum shows), W.
    #[serde(default)]
    pub node_peak_power_w: Vec<f64>,
    /// Per node, the share of decode time its GPU computes; the rest it waits on GPU<->CPU
    /// crossings, collectives and transfers, %.
    pub decode_gpu_busy_percent: Vec<f64>,
    /// Energy per generated token at the decode average power, J.
    pub energy_j_per_token: f64,
    /// Memory used per node, GB.
    pub memory_per_node_gb: Vec<f64>,
    /// Memory breakdown per node.
    pub memory: Vec<NodeMemory>,
    /// Hardware cost (nodes, cables, switch), USD.
    pub cost_usd: f64,
    /// Cost per million generated tokens at 100% duty (amortized hardware + electricity), USD.
    pub usd_per_mtok: f64,
    /// Hardware USD per decode token/s.
    pub usd_per_token_per_s: f64,
    /// Cables the topology needs.
    pub cables: usize,
    /// HPL result, Gflops (HPL workload only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpl_gflops: Option<f64>,
    /// The HPL run's problem size, block size and process grid (HPL workload only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpl_problem: Option<HplProblem>,
    /// Calibration envelope.
    pub calibration: Envelope,
    /// Events processed by the simulation.
    pub sim_events: u64,
    /// Availability with faults, when the scenario has a `[faults]` table that enables any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultReport>,
    /// Serving metrics (`kind = "serve"` only).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub serve: Option<ServeMetrics>,
}

/// `"fits": true`, the only value an [`Estimate`] can have: (de)serialises as `true` and refuses
/// `false` when read back (a scenario that does not fit has no estimate, only an error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fits;

impl Serialize for Fits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

impl<'de> Deserialize<'de> for Fits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if bool::deserialize(d)? { Ok(Fits) } else { Err(serde::de::Error::custom("an estimate always fits (`fits` is true)")) }
    }
}

impl Estimate {
    /// Generated tokens per joule of cluster energy (0 when no energy was computed, e.g. HPL).
    pub fn tokens_per_joule(&self) -> f64 {
        if self.energy_j_per_token > 0.0 { 1.0 / self.energy_j_per_token } else { 0.0 }
    }

    /// The largest memory used on one node, GB.
    pub fn max_memory_per_node_gb(&self) -> f64 {
        self.memory_per_node_gb.iter().copied().fold(0.0, f64::max)
    }
}

/// Whether a count is 0 (a JSON key left out when it says nothing).
fn one() -> usize {
    1
}

fn is_one(x: &usize) -> bool {
    *x == 1
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}
