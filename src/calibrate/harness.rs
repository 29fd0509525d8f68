//! Harness measurement files (schema version 1, `calibration/harness/schema.json`): the file
//! types, the kinds of measurement, reading and checking, the measured machine as a node preset
//! and its loopback as a fabric, and what each measurement's value and id are.

use std::fmt;

use nalgebra::{DMatrix, DVector};

use crate::hw::{FabricSpec, NodeSpec, Transport};
use crate::profile::HOST_CHIP;

/// Defines [`HarnessKind`] once: each variant, its id in harness files, and what it is for.
macro_rules! harness_kinds {
    ($($(#[$doc:meta])* $variant:ident = $id:literal => $use_:ident,)*) => {
        /// The kind of a harness measurement: the one Rust definition of the `$defs/kind` enum of
        /// `calibration/harness/schema.json` (a test checks that the two agree).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum HarnessKind {
            $($(#[$doc])* $variant,)*
        }

        impl HarnessKind {
            /// Every kind, in schema order.
            pub const ALL: &'static [HarnessKind] = &[$(HarnessKind::$variant),*];

            /// The id harness files use.
            pub fn id(self) -> &'static str {
                match self {
                    $(HarnessKind::$variant => $id,)*
                }
            }

            /// What a measurement of this kind is for.
            pub fn usage(self) -> HarnessUse {
                match self {
                    $(HarnessKind::$variant => HarnessUse::$use_,)*
                }
            }
        }
    };
}

harness_kinds! {
    /// A quantized matmul at one of the model's shapes.
    Qmm = "qmm" => Fit,
    /// An MoE gather quantized matmul.
    GatherQmm = "gather_qmm" => Fit,
    /// Scaled dot-product attention over a KV cache.
    Sdpa = "sdpa" => Fit,
    /// An all_sum across the ranks.
    AllSum = "all_sum" => Fit,
    /// An all_gather across the ranks (recorded, not modelled).
    AllGather = "all_gather" => Fact,
    /// A point-to-point send/recv (the link line: latency and bandwidth).
    SendRecv = "send_recv" => Fact,
    /// A GPU<->CPU synchronization (recorded, not modelled).
    Sync = "sync" => Fact,
    /// A large reduction: the host's memory bandwidth.
    Membw = "membw" => Fact,
    /// A large matmul: the host's peak compute.
    MatmulPeak = "matmul_peak" => Fact,
    /// A chain of element-wise ops evaluated as one graph.
    OpChain = "op_chain" => Fit,
    /// The e2e model's layer skeleton with or without an all_sum after each block.
    SegmentChain = "segment_chain" => Fit,
    /// A fixed probe of the machine's pace between benchmarks.
    Pace = "pace" => Fact,
    /// End-to-end decode of the harness model.
    E2eDecode = "e2e_decode" => Validate,
    /// End-to-end prefill of the harness model.
    E2ePrefill = "e2e_prefill" => Validate,
    /// End-to-end decode of B sequences in one forward per step (aggregate tokens/s).
    E2eDecodeBatch = "e2e_decode_batch" => Validate,
}

impl fmt::Display for HarnessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl serde::Serialize for HarnessKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> serde::Deserialize<'de> for HarnessKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        HarnessKind::ALL.iter().copied().find(|k| k.id() == s).ok_or_else(|| {
            let ids: Vec<&str> = HarnessKind::ALL.iter().map(|k| k.id()).collect();
            serde::de::Error::custom(format!("unknown measurement kind `{s}` (schema version 1 knows: {})", ids.join(", ")))
        })
    }
}

/// What one harness measurement is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HarnessUse {
    /// A microbenchmark the profile is fitted to.
    Fit,
    /// An end-to-end measurement the fitted twin must predict.
    Validate,
    /// A machine fact (bandwidth, peak compute, link line) or not modelled.
    Fact,
}

/// A harness output file (schema version 1; see calibration/harness/schema.json).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct HarnessFile {
    /// Schema version.
    pub schema_version: u32,
    /// Always `supernode-harness`.
    pub tool: String,
    /// Machine description.
    pub machine: serde_json::Value,
    /// MLX version.
    pub mlx_version: String,
    /// Distributed backend (`ring`, `jaccl`, `none`).
    pub backend: String,
    /// Ranks.
    pub world_size: u32,
    /// `cpu` or `gpu`.
    pub device: String,
    /// Activation dtype.
    #[serde(default)]
    pub dtype: String,
    /// The measurements.
    pub benchmarks: Vec<HarnessBench>,
}

/// One harness measurement.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct HarnessBench {
    /// What was measured.
    pub kind: HarnessKind,
    /// Shape and size parameters.
    pub params: serde_json::Value,
    /// Bytes moved per call.
    #[serde(default)]
    pub bytes: f64,
    /// FLOPs per call.
    #[serde(default)]
    pub flops: f64,
    /// Median seconds per call (rank 0's samples).
    pub median_s: f64,
    /// Every rank's median, when several ranks ran the case at the same time.
    #[serde(default)]
    pub per_rank_median_s: Vec<f64>,
    /// End-to-end tokens per second (a batched decode: every sequence's together).
    #[serde(default)]
    pub tokens_per_s: Option<f64>,
    /// e2e decode: median host time per step spent building the step's graph in Python before
    /// evaluating it (serial with the step in the harness's synchronous loop).
    #[serde(default)]
    pub host_build_s: Option<f64>,
    /// End-to-end model configuration.
    #[serde(default)]
    pub model: Option<serde_json::Value>,
    /// Each round's own statistics when the harness timed the case in several rounds (the
    /// headline fields are the best round's).
    #[serde(default)]
    pub rounds: Vec<serde_json::Value>,
    /// Statistics pooled over every round.
    #[serde(default)]
    pub all_rounds: Option<serde_json::Value>,
}

impl HarnessBench {
    /// What this measurement is for: its kind's use, except that the pipeline-parallel e2e
    /// decode is a fit target (it pins the per-stage cost `runtimes.mlx.stage_us`, which no
    /// microbenchmark times), while the tensor-parallel e2e runs stay validation targets.
    pub fn usage(&self) -> HarnessUse {
        if self.kind == HarnessKind::E2eDecode && self.params.get("parallelism").and_then(serde_json::Value::as_str) == Some("pipeline") {
            HarnessUse::Fit
        } else {
            self.kind.usage()
        }
    }

    /// Tokens per second of every round of an end-to-end record (empty for a single round).
    pub fn round_tokens_per_s(&self) -> Vec<f64> {
        self.rounds.iter().filter_map(|r| r.get("tokens_per_s").and_then(|v| v.as_f64())).collect()
    }

    /// The decode rate over every step of every round (what a user of the box saw on average).
    pub fn mean_tokens_per_s_all_rounds(&self) -> Option<f64> {
        self.all_rounds.as_ref()?.get("tokens_per_s_mean")?.as_f64()
    }
}

/// Errors reading measurement files.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// I/O.
    #[error("cannot read {path}: {message}")]
    Io {
        /// Path.
        path: String,
        /// Message.
        message: String,
    },
    /// Format.
    #[error("{path}: {message}")]
    Format {
        /// Path.
        path: String,
        /// Message.
        message: String,
    },
}

/// Reads and checks a harness file.
pub fn read_harness(path: &std::path::Path) -> Result<HarnessFile, SourceError> {
    let shown = path.display().to_string();
    let format = |message: String| SourceError::Format { path: shown.clone(), message };
    let text = crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES)
        .map_err(|e| SourceError::Io { path: shown.clone(), message: e.to_string() })?;
    // The version first, so that a newer file says so rather than failing on a new field or kind.
    let head: serde_json::Value = serde_json::from_str(&text).map_err(|e| format(format!("not a harness file: {e}")))?;
    let (tool, version) = (head.get("tool").and_then(|v| v.as_str()), head.get("schema_version").and_then(|v| v.as_u64()));
    if tool.is_some() && (tool != Some("supernode-harness") || version != Some(1)) {
        return Err(format(format!("unsupported harness file (tool `{}`, schema {})", tool.unwrap_or("?"), version.unwrap_or(0))));
    }
    let f: HarnessFile =
        serde_json::from_value(head).map_err(|e| format(format!("not a harness file: {}", crate::util::user_words(&e.to_string()))))?;
    for b in &f.benchmarks {
        if !b.median_s.is_finite() || b.median_s <= 0.0 {
            return Err(format(format!("benchmark `{}` {} has median {}", b.kind, b.params, b.median_s)));
        }
    }
    Ok(f)
}

fn host_error(message: String) -> SourceError {
    SourceError::Format { path: "harness".into(), message }
}

/// The measured machine as a node: peak bandwidth and compute are the harness's own
/// measurements (large reduction, large matmul), not catalog figures.
pub fn host_node(h: &HarnessFile) -> Result<NodeSpec, SourceError> {
    let best = |kind: HarnessKind, per_call: fn(&HarnessBench) -> f64| {
        h.benchmarks.iter().filter(|b| b.kind == kind).map(|b| per_call(b) / b.median_s).fold(0.0, f64::max)
    };
    let membw = best(HarnessKind::Membw, |b| b.bytes);
    let flops = best(HarnessKind::MatmulPeak, |b| b.flops);
    if membw <= 0.0 || flops <= 0.0 {
        return Err(host_error("the harness file needs membw and matmul_peak measurements".into()));
    }
    let ram = h.machine.get("ram_bytes").and_then(|v| v.as_f64()).ok_or_else(|| host_error("machine.ram_bytes is missing".into()))?;
    let cores = h.machine.get("cores").and_then(|v| v.as_u64()).ok_or_else(|| host_error("machine.cores is missing".into()))? as u32;
    Ok(NodeSpec {
        id: "harness-host".into(),
        name: format!("harness host {}", h.machine.get("hostname").and_then(|v| v.as_str()).unwrap_or("?")),
        chip: HOST_CHIP.into(),
        os: if h.device == "gpu" { crate::hw::Os::Macos } else { crate::hw::Os::Linux },
        gpu_cores: 0,
        cpu_cores: cores,
        // The OS reports RAM in bytes; the catalog's memory figure is GiB (`memory_bytes`).
        memory_gb: ram / (1u64 << 30) as f64,
        mem_bw_gbs: membw / 1e9,
        fp16_tflops: flops / 1e12,
        price_usd: 0.0,
        idle_w: 0.0,
        max_w: 1e9,
        rdma_ports: 0,
        tb_ports: 0,
        qsfp_ports: 0,
        tb_generation: 0,
        ethernet_gbps: 0.0,
        qsfp_gbps: None,
        wired_fraction: 0.9,
        hpl_cpu_gflops: 0.0,
        hpl_w: 0.0,
        calibrated_as: None,
        gpu_memory_limit_gb: None,
        mlx_gemm_tflops: None,
        fp8_gemm_tflops: None,
        read_ceiling_gbs: None,
        power_modes_w: Vec::new(),
        power_mode_w: None,
        planner: false,
        sources: [("mem_bw_gbs".to_string(), "harness membw".to_string()), ("fp16_tflops".to_string(), "harness matmul_peak".to_string())]
            .into_iter()
            .collect(),
    })
}

/// The link between ranks: latency and bandwidth from a least-squares line through the
/// send/recv measurements (one-way time = latency + bytes / bandwidth).
pub fn host_fabric(h: &HarnessFile) -> Result<FabricSpec, SourceError> {
    let pts: Vec<(f64, f64)> = h
        .benchmarks
        .iter()
        .filter(|b| b.kind == HarnessKind::SendRecv)
        .filter_map(|b| b.params.get("message_bytes").and_then(|v| v.as_f64()).map(|x| (x, b.median_s)))
        .collect();
    if pts.len() < 2 {
        return Err(host_error(format!("need at least 2 send_recv sizes to fit latency and bandwidth, found {}", pts.len())));
    }
    let x = DMatrix::from_fn(pts.len(), 2, |i, j| if j == 0 { 1.0 } else { pts[i].0 });
    let y = DVector::from_iterator(pts.len(), pts.iter().map(|p| p.1));
    let xtx = x.transpose() * &x;
    let inverse = xtx
        .try_inverse()
        .ok_or_else(|| host_error("send_recv sizes are all equal (collinear): cannot separate latency from bandwidth".into()))?;
    let coef = inverse * x.transpose() * y;
    let latency_s = coef[0].max(1e-7);
    let per_byte = coef[1];
    if per_byte <= 0.0 {
        return Err(host_error("send_recv time does not grow with size: cannot fit a bandwidth".into()));
    }
    let jaccl = h.backend == "jaccl";
    Ok(FabricSpec {
        id: "harness-link".into(),
        name: format!("harness {} link", h.backend),
        transport: if jaccl { Transport::Rdma } else { Transport::Tcp },
        backend: if jaccl { crate::hw::Backend::Jaccl } else { crate::hw::Backend::Ring },
        port: crate::hw::PortKind::None,
        min_tb_generation: 0,
        link_gbps: 0.0,
        latency_us: latency_s * 1e6,
        bandwidth_gbs: 1.0 / per_byte / 1e9,
        topologies: vec![crate::hw::Topology::FullMesh],
        cable_usd: 0.0,
        switch_usd: 0.0,
        degrade_to: None,
        tcp_fabric: None,
        lost_to: None,
        planner: false,
        sources: Default::default(),
    })
}

/// The slowest rank's median of a case every rank ran at once (rank 0's when only that is known).
fn slowest_rank_median(b: &HarnessBench) -> f64 {
    b.per_rank_median_s.iter().copied().filter(|v| v.is_finite() && *v > 0.0).fold(b.median_s, f64::max)
}

/// The measured value that [`crate::calibrate::predict_harness`] predicts.
///
/// For a kernel timed on every rank at once this is the slowest rank's median: in a
/// tensor-parallel step every segment of kernels ends in a collective that waits for the last
/// rank, so the slowest rank's pace is the one the step runs at (on a shared box the ranks'
/// cores differ by 10-50%, measured).
pub fn harness_measured(b: &HarnessBench) -> f64 {
    use HarnessKind::*;
    match b.kind {
        E2eDecode | E2ePrefill | E2eDecodeBatch => b.tokens_per_s.unwrap_or(f64::NAN),
        Qmm | GatherQmm | Sdpa | OpChain | SegmentChain => slowest_rank_median(b),
        _ => b.median_s,
    }
}

/// Id of a harness measurement.
pub fn harness_id(b: &HarnessBench, i: usize) -> String {
    use HarnessKind::*;
    let g = |k: &str| b.params.get(k).map(|v| v.to_string()).unwrap_or_default();
    match b.kind {
        Qmm => format!("{i}:qmm M{} {}x{} {}b", g("M"), g("K"), g("N"), g("bits")),
        GatherQmm => format!("{i}:gather_qmm M{} {}x{} {}b", g("M"), g("K"), g("N"), g("bits")),
        E2eDecodeBatch => format!("{i}:e2e_decode_batch B{}", g("batch")),
        Sdpa => format!("{i}:sdpa {} kv{}", g("phase").trim_matches('"'), g("kv_len")),
        AllSum => format!("{i}:all_sum {}B", g("message_bytes")),
        OpChain => format!("{i}:op_chain {} ops", g("ops")),
        SegmentChain => format!("{i}:segment_chain x{} {}", g("repeats"), if g("sync") == "true" { "with all_sums" } else { "no sync" }),
        other => format!("{i}:{other}"),
    }
}

/// Drift of a harness run, per benchmark: the ratio of the machine's pace during the end-to-end
/// decode (the mean of the `pace` probes taken between its steps and right after it) to its pace
/// around the benchmark (the mean of the nearest probes before and after it). 1 everywhere when
/// the file has no probes (older files, `--only` subsets). Not applied to the fit: on this 2-core
/// VM the probe itself is bimodal (1.1 or 1.7 ms) and scaling by it helped one closed-loop run and
/// hurt two; `validate` reports the drift so that a user knows the run's noise floor.
pub fn pace_factors(h: &HarnessFile) -> Vec<f64> {
    let n = h.benchmarks.len();
    // (index, slowest rank's probe time, taken in the decode window)
    let probes: Vec<(usize, f64, bool)> = h
        .benchmarks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.kind == HarnessKind::Pace && b.median_s > 0.0)
        .map(|(i, b)| {
            let at = b.params.get("at").and_then(|v| v.as_str()).unwrap_or("");
            (i, slowest_rank_median(b), at == "e2e decode" || at == "after e2e")
        })
        .collect();
    let at_decode: Vec<f64> = probes.iter().filter(|p| p.2).map(|p| p.1).collect();
    if at_decode.is_empty() {
        return vec![1.0; n];
    }
    let reference = at_decode.iter().sum::<f64>() / at_decode.len() as f64;
    (0..n)
        .map(|i| {
            let before = probes.iter().rev().find(|p| p.0 < i).map(|p| p.1);
            let after = probes.iter().find(|p| p.0 > i).map(|p| p.1);
            let local = match (before, after) {
                (Some(a), Some(b)) => (a + b) / 2.0,
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => reference,
            };
            reference / local
        })
        .collect()
}

/// How much slower (positive) or faster the machine ran during the e2e decode than on average
/// around the microbenchmarks, in percent, from the pace probes; `None` without probes.
pub fn pace_drift_percent(h: &HarnessFile) -> Option<f64> {
    let f = pace_factors(h);
    let fits: Vec<f64> = h.benchmarks.iter().zip(&f).filter(|(b, _)| b.usage() == HarnessUse::Fit).map(|(_, x)| *x).collect();
    if fits.is_empty() || fits.iter().all(|x| *x == 1.0) {
        return None;
    }
    Some((fits.iter().sum::<f64>() / fits.len() as f64 - 1.0) * 100.0)
}
